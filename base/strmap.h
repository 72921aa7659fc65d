/* A string-keyed hash map (open addressing) from names to pointers: op lookup by name in rule sets,
 * a graph's symbols, safetensors headers (a graph's value names have their own map: ir/names.h).
 * Keys are not copied: they must outlive the map. A large table lives on huge pages
 * (base/bigmem.h). */
#ifndef FUSERULE_BASE_STRMAP_H
#define FUSERULE_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key;
    void *value;
    uint32_t key_len;
    uint32_t hash; /* of the key: probes compare it first, growing never rehashes */
} sm_slot;

typedef struct {
    sm_slot *slots;
    size_t cap, len;
} sm_map;

void sm_free(sm_map *map);
/* NULL when absent. */
void *sm_get(const sm_map *map, const char *key, size_t key_len);
/* Inserts or replaces; returns the previous value or NULL. */
void *sm_put(sm_map *map, const char *key, size_t key_len, void *value);
/* One probe for a definition: the slot of key, inserted (with a NULL value) when absent, in which
 * case *inserted is true and the caller sets its value (and may point its key at a copy with the
 * same bytes). The slot stays valid until the next insertion. */
sm_slot *sm_insert(sm_map *map, const char *key, size_t key_len, bool *inserted);

#endif
