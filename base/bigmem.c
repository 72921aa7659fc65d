#define _DEFAULT_SOURCE /* MADV_HUGEPAGE, MAP_ANONYMOUS */

#include "base/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

static size_t round_up(size_t size)
{
    return (size + (size_t)BM_HUGE - 1) & ~((size_t)BM_HUGE - 1);
}

void *bm_alloc(size_t size)
{
    if (size < BM_HUGE)
        return calloc(1, size ? size : 1);
    size_t len = round_up(size);
    if (len < size || len > SIZE_MAX - BM_HUGE)
        return NULL;
    /* map one huge page more than asked and trim both ends to a 2 MiB boundary */
    unsigned char *raw = mmap(NULL, len + BM_HUGE, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t at = ((uintptr_t)raw + BM_HUGE - 1) & ~(uintptr_t)(BM_HUGE - 1);
    unsigned char *p = (unsigned char *)at;
    size_t head = (size_t)(p - raw), tail = BM_HUGE - head;
    if (head)
        munmap(raw, head);
    if (tail)
        munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* a hint: without it the pages are ordinary ones */
#endif
    return p;
}

void bm_free(void *p, size_t size)
{
    if (!p)
        return;
    if (size < BM_HUGE)
        free(p);
    else
        munmap(p, round_up(size));
}
