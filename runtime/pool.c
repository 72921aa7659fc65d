/* The buffer pool: best fit over released buffers, 64-byte aligned allocations. */
#include "runtime/pool.h"

#include "base/check.h"

#include <stdlib.h>

enum { ALIGN = 64 };

rt_buffer *rt_pool_get(rt_pool *pool, size_t size)
{
    size_t best = pool->free_list.len;
    for (size_t i = 0; i < pool->free_list.len; i++) {
        size_t cap = pool->free_list.items[i]->cap;
        /* a buffer more than twice the request would keep a large block from a large value */
        if (cap >= size && cap / 2 <= size &&
            (best == pool->free_list.len || cap < pool->free_list.items[best]->cap))
            best = i;
    }
    if (best < pool->free_list.len) {
        rt_buffer *b = pool->free_list.items[best];
        pool->free_list.items[best] = pool->free_list.items[--pool->free_list.len];
        b->refs = 1;
        pool->reuses++;
        return b;
    }
    size_t cap = size ? (size + ALIGN - 1) / ALIGN * ALIGN : ALIGN;
    if (cap < size)
        return NULL; /* the rounding overflowed */
    rt_buffer *b = malloc(sizeof *b);
    void *data = NULL;
    if (!b || posix_memalign(&data, ALIGN, cap) != 0) {
        free(b);
        return NULL;
    }
    *b = (rt_buffer){data, cap, 1};
    pool->held += cap;
    if (pool->held > pool->peak)
        pool->peak = pool->held;
    pool->allocations++;
    return b;
}

void rt_pool_release(rt_pool *pool, rt_buffer *b)
{
    FR_CHECK(b->refs > 0);
    if (--b->refs == 0)
        vec_push(&pool->free_list, b);
}

void rt_pool_free(rt_pool *pool)
{
    for (size_t i = 0; i < pool->free_list.len; i++) {
        rt_buffer *b = pool->free_list.items[i];
        pool->held -= b->cap;
        free(b->data);
        free(b);
    }
    vec_free(&pool->free_list);
}
