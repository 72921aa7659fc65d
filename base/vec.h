/* Growable arrays with checked sizes: `VEC(int) v = {0}; vec_push(&v, 3); vec_free(&v);`
 * Memory comes from malloc (vectors grow and shrink; arenas only grow). */
#ifndef FUSERULE_BASE_VEC_H
#define FUSERULE_BASE_VEC_H

#include <stddef.h>
#include <stdlib.h>

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        T *items;                                                                                  \
        size_t len, cap;                                                                           \
    }

/* Makes room for `need` elements of `elem` bytes; aborts on overflow or exhaustion. */
void vec_reserve_(void **items, size_t *cap, size_t need, size_t elem);

/* Gives back the room past `len` elements (realloc: a large block shrinks in place and its pages go
 * back to the system); keeps the block when realloc fails. */
void vec_shrink_(void **items, size_t *cap, size_t len, size_t elem);

#define vec_reserve(v, n) vec_reserve_((void **)&(v)->items, &(v)->cap, (n), sizeof *(v)->items)
#define vec_push(v, x) (vec_reserve((v), (v)->len + 1), (v)->items[(v)->len++] = (x))
#define vec_shrink(v) vec_shrink_((void **)&(v)->items, &(v)->cap, (v)->len, sizeof *(v)->items)
#define vec_free(v) (free((v)->items), (v)->items = NULL, (v)->len = (v)->cap = 0)

#endif
