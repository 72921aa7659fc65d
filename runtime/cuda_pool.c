/* The CUDA executor's device pool (runtime/cuda_internal.h): buffers returned once their value's
 * last consumer has run serve a later request of a similar size (best fit, at most twice the
 * request); with rt_options.sentinels each buffer is fenced by guard bytes checked when freed. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "base/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dbuf *rt_cu_dpool_get(executor *ex, size_t size, const char *owner)
{
    dpool *p = &ex->dpool;
    size_t best = p->free_list.len;
    for (size_t i = 0; i < p->free_list.len; i++) {
        dbuf *b = p->free_list.items[i];
        if (b->cap >= size && b->cap / 2 <= size &&
            (best == p->free_list.len || b->cap < p->free_list.items[best]->cap))
            best = i;
    }
    if (best < p->free_list.len) {
        dbuf *b = p->free_list.items[best];
        p->free_list.items[best] = p->free_list.items[--p->free_list.len];
        b->refs = 1;
        b->owner = owner;
        b->size = size;
        p->reuses++;
        if (ex->run.opts->sentinels &&
            !kc_fill_bytes(ex->kc, (char *)b->ptr + size, SENTINEL, GUARD)) {
            vec_push(&p->free_list, b);
            return NULL;
        }
        return b;
    }
    dbuf *b = calloc(1, sizeof *b);
    FR_CHECK(b);
    size_t cap = (size + 255) / 256 * 256, guard = ex->run.opts->sentinels ? GUARD : 0;
    if (!kc_alloc(ex->kc, cap + 2 * guard, &b->base) ||
        (guard && !kc_fill_bytes(ex->kc, b->base, SENTINEL, cap + 2 * guard))) {
        kc_free(ex->kc, b->base);
        free(b);
        return NULL;
    }
    b->ptr = (char *)b->base + guard;
    b->cap = cap;
    b->size = size;
    b->refs = 1;
    b->owner = owner;
    p->allocations++;
    p->held += cap;
    if (p->held > p->peak)
        p->peak = p->held;
    return b;
}

/* Checks the guard bytes of b; the first violation is kept in ex->oob. */
static void check_guards(executor *ex, const dbuf *b)
{
    unsigned char seen[2][GUARD];
    if (!kc_download(ex->kc, seen[0], b->base, GUARD) ||
        !kc_download(ex->kc, seen[1], (char *)b->ptr + b->size, GUARD)) {
        ex->oob = ar_printf(ex->run.res->arena, "CUDA: %s", kc_last_error(ex->kc));
        return;
    }
    for (int side = 0; side < 2 && !ex->oob; side++)
        for (int i = 0; i < GUARD; i++)
            if (seen[side][i] != SENTINEL) {
                ex->oob = ar_printf(ex->run.res->arena,
                                    "a kernel wrote %s the device buffer of '%s' (guard byte %d)",
                                    side ? "after the end of" : "before the start of", b->owner,
                                    side ? i : GUARD - i);
                break;
            }
}

void rt_cu_dpool_release(executor *ex, dbuf *b)
{
    FR_CHECK(b->refs > 0);
    if (--b->refs > 0)
        return;
    if (ex->run.opts->sentinels && !ex->oob && !ex->capturing) /* no download inside a capture */
        check_guards(ex, b);
    vec_push(&ex->dpool.free_list, b);
}

void rt_cu_dpool_free(executor *ex)
{
    for (size_t i = 0; i < ex->dpool.free_list.len; i++) {
        dbuf *b = ex->dpool.free_list.items[i];
        kc_free(ex->kc, b->base);
        ex->dpool.held -= b->cap;
        free(b);
    }
    vec_free(&ex->dpool.free_list);
}

#endif /* FR_HAVE_CUDA */
