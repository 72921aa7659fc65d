#include "base/vec.h"

#include "base/check.h"

#include <stdint.h>

void vec_reserve_(void **items, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return;
    size_t grown = *cap ? *cap : 8;
    while (grown < need) {
        FR_CHECK(grown <= SIZE_MAX / 2);
        grown *= 2;
    }
    FR_CHECK(grown <= SIZE_MAX / elem);
    void *p = realloc(*items, grown * elem);
    if (!p) {
        fprintf(stderr, "fuserule: out of memory\n");
        abort();
    }
    *items = p;
    *cap = grown;
}

void vec_shrink_(void **items, size_t *cap, size_t len, size_t elem)
{
    if (len >= *cap)
        return;
    if (!len) {
        free(*items);
        *items = NULL;
        *cap = 0;
        return;
    }
    void *p = realloc(*items, len * elem); /* len < cap: no overflow */
    if (p) {
        *items = p;
        *cap = len;
    }
}
