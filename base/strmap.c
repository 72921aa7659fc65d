#include "base/strmap.h"

#include "base/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static sm_slot *find(const sm_map *map, const char *key, size_t key_len)
{
    size_t mask = map->cap - 1;
    for (size_t i = hash(key, key_len) & mask;; i = (i + 1) & mask) {
        sm_slot *s = &map->slots[i];
        if (!s->key || (s->key_len == key_len && memcmp(s->key, key, key_len) == 0))
            return s;
    }
}

void sm_free(sm_map *map)
{
    free(map->slots);
    map->slots = NULL;
    map->cap = map->len = 0;
}

void *sm_get(const sm_map *map, const char *key, size_t key_len)
{
    if (!map->cap)
        return NULL;
    sm_slot *s = find(map, key, key_len);
    return s->key ? s->value : NULL;
}

static void grow(sm_map *map)
{
    size_t cap = map->cap ? map->cap * 2 : 64;
    FR_CHECK(cap <= SIZE_MAX / sizeof(sm_slot));
    sm_map bigger = {calloc(cap, sizeof(sm_slot)), cap, 0};
    FR_CHECK(bigger.slots != NULL);
    for (size_t i = 0; i < map->cap; i++)
        if (map->slots[i].key)
            *find(&bigger, map->slots[i].key, map->slots[i].key_len) = map->slots[i];
    bigger.len = map->len;
    free(map->slots);
    *map = bigger;
}

void *sm_put(sm_map *map, const char *key, size_t key_len, void *value)
{
    if ((map->len + 1) * 4 > map->cap * 3)
        grow(map);
    sm_slot *s = find(map, key, key_len);
    void *old = s->key ? s->value : NULL;
    if (!s->key) {
        s->key = key;
        s->key_len = key_len;
        map->len++;
    }
    s->value = value;
    return old;
}
