/* Large zeroed blocks straight from the kernel, for tables that are touched at random (the name
 * map of a million-value graph) and for arena blocks.
 *
 * Fresh anonymous pages are zero, so nothing is cleared twice; a block of BM_HUGE bytes or more is
 * aligned to 2 MiB and asks for transparent huge pages (where the system grants them on request),
 * so that a probe into a 64 MiB table costs no page-table walk and its first touch one fault per
 * 2 MiB rather than per 4 KiB. Smaller blocks come from calloc. */
#ifndef FUSERULE_BASE_BIGMEM_H
#define FUSERULE_BASE_BIGMEM_H

#include <stddef.h>

enum { BM_HUGE = 2 * 1024 * 1024 };

/* size zeroed bytes (size > 0), or NULL when the memory cannot be had. */
void *bm_alloc(size_t size);
/* Frees what bm_alloc(size) returned (the same size); NULL is ignored. */
void bm_free(void *p, size_t size);

#endif
