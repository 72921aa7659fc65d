#include "base/strmap.h"

#include "base/bigmem.h"
#include "base/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A slot keeps 32 bits of the hash (tables stay below 2^32 slots) and of the key's length. */
static uint32_t hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static sm_slot *find(const sm_map *map, const char *key, size_t key_len, uint32_t h)
{
    size_t mask = map->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        sm_slot *s = &map->slots[i];
        if (!s->key || (s->hash == h && s->key_len == key_len && memcmp(s->key, key, key_len) == 0))
            return s;
    }
}

void sm_free(sm_map *map)
{
    bm_free(map->slots, map->cap * sizeof(sm_slot));
    map->slots = NULL;
    map->cap = map->len = 0;
}

void *sm_get(const sm_map *map, const char *key, size_t key_len)
{
    if (!map->cap || key_len > UINT32_MAX) /* no key that long is stored */
        return NULL;
    sm_slot *s = find(map, key, key_len, hash(key, key_len));
    return s->key ? s->value : NULL;
}

/* Rehomes the slots in a table of cap slots (a power of two), by their stored hashes. */
static void resize(sm_map *map, size_t cap)
{
    FR_CHECK(cap <= SIZE_MAX / sizeof(sm_slot));
    sm_map bigger = {bm_alloc(cap * sizeof(sm_slot)), cap, 0};
    FR_CHECK(bigger.slots != NULL);
    size_t mask = cap - 1;
    for (size_t i = 0; i < map->cap; i++) {
        const sm_slot *s = &map->slots[i];
        if (!s->key)
            continue;
        size_t j = s->hash & mask;
        while (bigger.slots[j].key) /* keys are distinct: the first free slot */
            j = (j + 1) & mask;
        bigger.slots[j] = *s;
    }
    bigger.len = map->len;
    sm_free(map);
    *map = bigger;
}

static bool full(const sm_map *map, size_t len)
{
    return len * 4 > map->cap * 3;
}

sm_slot *sm_insert(sm_map *map, const char *key, size_t key_len, bool *inserted)
{
    if (full(map, map->len + 1))
        resize(map, map->cap ? map->cap * 2 : 64);
    FR_CHECK(key_len <= UINT32_MAX);
    uint32_t h = hash(key, key_len);
    sm_slot *s = find(map, key, key_len, h);
    *inserted = !s->key;
    if (!s->key) {
        s->key = key;
        s->key_len = (uint32_t)key_len;
        s->value = NULL;
        s->hash = h;
        map->len++;
    }
    return s;
}

void *sm_put(sm_map *map, const char *key, size_t key_len, void *value)
{
    bool inserted;
    sm_slot *s = sm_insert(map, key, key_len, &inserted);
    void *old = inserted ? NULL : s->value;
    s->value = value;
    return old;
}
