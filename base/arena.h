/* Arena allocation: every graph and every rule set owns one arena, freed in one call.
 *
 * Small objects (nodes, values, strings) are carved from large blocks; big payloads (weights) get a
 * block of their own. Allocation failure of a small object is a bug-level condition and aborts;
 * callers that size a buffer from untrusted input check the size against a budget first and use
 * ar_try_alloc, which returns NULL instead. */
#ifndef FUSERULE_BASE_ARENA_H
#define FUSERULE_BASE_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ar_arena ar_arena;

ar_arena *ar_new(void);
void ar_free(ar_arena *arena);

/* Zeroed memory aligned to 8 bytes (enough for every type the IR and the kernels keep there: a
 * graph's values, nodes and names pack without rounding to 16), that lives until ar_free. Aborts
 * on exhaustion. */
void *ar_alloc(ar_arena *arena, size_t size);
/* n * size bytes, overflow-checked; aborts on exhaustion or overflow. */
void *ar_alloc_array(ar_arena *arena, size_t n, size_t size);
/* Like ar_alloc, but returns NULL when the memory cannot be had (for sizes taken from input). */
void *ar_try_alloc(ar_arena *arena, size_t size);

char *ar_strndup(ar_arena *arena, const char *s, size_t len);
char *ar_strdup(ar_arena *arena, const char *s);
char *ar_printf(ar_arena *arena, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *ar_vprintf(ar_arena *arena, const char *fmt, va_list ap);

/* Bytes handed out so far (for memory benchmarks). */
size_t ar_bytes_used(const ar_arena *arena);

#endif
