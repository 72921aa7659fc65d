/* The blocks for small objects grow from 64 KiB to 4 MiB as an arena fills: a small graph or rule
 * set keeps a small footprint (malloc'd blocks, each allocation cleared as it is handed out), and
 * a million-node graph gets its objects from blocks of 2 MiB and more that bm_alloc
 * (base/bigmem.h) maps zeroed on huge pages: nothing to clear (nothing in an arena is handed out
 * twice) and a page fault per 2 MiB. */
#include "base/arena.h"

#include "base/bigmem.h"
#include "base/check.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK_SIZE = 64 * 1024, MAX_BLOCK_SIZE = 64 * BLOCK_SIZE, ALIGN = 8 };

typedef struct block {
    struct block *next;
    size_t used, size;
    bool zeroed; /* mapped by bm_alloc: all of it is zero until handed out */
    _Alignas(16) unsigned char data[];
} block;

struct ar_arena {
    block *head;
    size_t bytes_used;
    size_t next_size; /* of the next block for small objects */
};

ar_arena *ar_new(void)
{
    ar_arena *arena = calloc(1, sizeof *arena);
    FR_CHECK(arena != NULL);
    return arena;
}

void ar_free(ar_arena *arena)
{
    if (!arena)
        return;
    for (block *b = arena->head, *next; b; b = next) {
        next = b->next;
        if (b->zeroed)
            bm_free(b, sizeof(block) + b->size);
        else
            free(b);
    }
    free(arena);
}

static block *new_block(size_t size)
{
    if (size > SIZE_MAX - sizeof(block))
        return NULL;
    bool big = sizeof(block) + size >= BM_HUGE;
    block *b = big ? bm_alloc(sizeof(block) + size) : malloc(sizeof(block) + size);
    if (!b)
        return NULL;
    b->next = NULL;
    b->used = 0;
    b->size = size;
    b->zeroed = big;
    return b;
}

void *ar_try_alloc(ar_arena *arena, size_t size)
{
    size_t rounded = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (rounded < size)
        return NULL;
    block *b = arena->head;
    if (!b || b->size - b->used < rounded) {
        if (rounded > BLOCK_SIZE / 4) {
            /* A big payload gets its own block, kept behind the current one so that the
             * current block's free space stays usable. */
            block *big = new_block(rounded);
            if (!big)
                return NULL;
            big->used = rounded;
            if (b) {
                big->next = b->next;
                b->next = big;
            } else {
                arena->head = big;
            }
            if (!big->zeroed)
                memset(big->data, 0, rounded);
            arena->bytes_used += rounded;
            return big->data;
        }
        size_t whole = arena->next_size ? arena->next_size : BLOCK_SIZE;
        b = new_block(whole - sizeof(block)); /* a block and its header fill 2^k bytes */
        if (!b)
            return NULL;
        if (whole < MAX_BLOCK_SIZE)
            arena->next_size = whole * 2;
        b->next = arena->head;
        arena->head = b;
    }
    void *p = b->data + b->used;
    b->used += rounded;
    arena->bytes_used += rounded;
    if (!b->zeroed)
        memset(p, 0, rounded);
    return p;
}

void *ar_alloc(ar_arena *arena, size_t size)
{
    void *p = ar_try_alloc(arena, size);
    if (!p) {
        fprintf(stderr, "fuserule: out of memory (%zu bytes)\n", size);
        abort();
    }
    return p;
}

void *ar_alloc_array(ar_arena *arena, size_t n, size_t size)
{
    FR_CHECK(size == 0 || n <= SIZE_MAX / size);
    return ar_alloc(arena, n * size);
}

char *ar_strndup(ar_arena *arena, const char *s, size_t len)
{
    FR_CHECK(len < SIZE_MAX);
    char *copy = ar_alloc(arena, len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *ar_strdup(ar_arena *arena, const char *s)
{
    return ar_strndup(arena, s, strlen(s));
}

char *ar_vprintf(ar_arena *arena, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    FR_CHECK(n >= 0);
    char *s = ar_alloc(arena, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

char *ar_printf(ar_arena *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = ar_vprintf(arena, fmt, ap);
    va_end(ap);
    return s;
}

size_t ar_bytes_used(const ar_arena *arena)
{
    return arena->bytes_used;
}
