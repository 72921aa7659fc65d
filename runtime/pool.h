/* Internal to runtime/: the buffer pool behind memory planning. A buffer released by the executor
 * (its value's last consumer has run) goes back to the pool and serves a later request of a
 * similar size, so a long chain of same-sized values runs in a few buffers. */
#ifndef FUSERULE_RUNTIME_POOL_H
#define FUSERULE_RUNTIME_POOL_H

#include "base/vec.h"

#include <stddef.h>

typedef struct rt_buffer {
    void *data;     /* 64-byte aligned */
    size_t cap;     /* bytes */
    unsigned refs;  /* values (a view shares its input's buffer) and scratch uses holding it */
} rt_buffer;

typedef struct rt_pool {
    VEC(rt_buffer *) free_list;
    size_t held;        /* bytes of every buffer allocated and not yet freed */
    size_t peak;        /* the most `held` ever was */
    size_t allocations;
    size_t reuses;
} rt_pool;

/* A buffer of at least `size` bytes with one reference: the smallest free buffer that fits and
 * wastes at most half of itself, else a new one. NULL when memory runs out. */
rt_buffer *rt_pool_get(rt_pool *pool, size_t size);
/* Drops a reference; the last one returns the buffer to the free list. */
void rt_pool_release(rt_pool *pool, rt_buffer *b);
/* Frees every free buffer and the pool's list (buffers still referenced are the caller's bug). */
void rt_pool_free(rt_pool *pool);

#endif
