/* A string-keyed hash map (open addressing) from names to pointers: value lookup by name in graphs,
 * op lookup by name in rule sets. Keys are not copied: they must outlive the map. */
#ifndef FUSERULE_BASE_STRMAP_H
#define FUSERULE_BASE_STRMAP_H

#include <stddef.h>

typedef struct {
    const char *key;
    size_t key_len;
    void *value;
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

#endif
