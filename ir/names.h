/* A graph's value names (ir_graph.by_name): name -> the value that carries it, for the values that
 * live (a dropped value's name is removed and free again).
 *
 * An open-addressing table (linear probing, no tombstones: a removal shifts the entries after it
 * back) of 10-byte slots, each the 32 high bits of the name's hash and the value's address. The
 * key is the value's own name (v->name), not a copy in the slot: a probe compares the hash bits
 * first and reads the name only when they match. A slot's place is the hash bits scaled to the
 * table's size (not masked), so the table can be any size and grows without rehashing a name. Only
 * graph.c (ir_add_*, ir_compact*) adds and removes; the text parser and the ONNX import reserve
 * and prefetch. A large table lives on huge pages (base/bigmem.h). */
#ifndef FUSERULE_IR_NAMES_H
#define FUSERULE_IR_NAMES_H

#include "base/arena.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ir_value;

/* A slot is 10 bytes: the name's hash, high 32 bits (never 0; 0: an empty slot), and the value's
 * address (its low 48 bits: an address of user space has no more), whose name is the key. */
enum { IR_NAME_SLOT = 10 };

typedef struct {
    unsigned char *slots; /* cap slots of IR_NAME_SLOT bytes */
    size_t cap, len;
    /* What a pass over the map found, for validation's check that the map holds each value (so it
     * need not read the map again): seen[i], that the map holds the value at seen_of[i] (a value
     * list of nseen entries, by its address), for each i; NULL when none. Any change of the map
     * drops it (ir_names_take_seen hands it over). */
    bool *seen;
    const void *seen_of;
    size_t nseen;
} ir_names;

/* The value in slot i (i < cap), or NULL when the slot is empty. */
static inline struct ir_value *ir_names_value_at(const ir_names *m, size_t i)
{
    uint32_t lo;
    uint16_t hi;
    __builtin_memcpy(&lo, m->slots + i * IR_NAME_SLOT + 4, 4);
    __builtin_memcpy(&hi, m->slots + i * IR_NAME_SLOT + 8, 2);
    return (struct ir_value *)(uintptr_t)((uint64_t)hi << 32 | lo);
}

void ir_names_free(ir_names *m);
/* Room for n names without growing. */
void ir_names_reserve(ir_names *m, size_t n);
/* Starts loading the slot where a probe for name begins, for a lookup of the same name a little
 * later (in a table larger than the caches each probe is a cache miss; a caller that knows its
 * next names early overlaps them). */
void ir_names_prefetch(const ir_names *m, const char *name, size_t len);
/* The value named by the len bytes of name, or NULL. */
struct ir_value *ir_names_get(const ir_names *m, const char *name, size_t len);
/* One probe for a definition: false when the name is taken; else its slot is claimed (*at) and the
 * caller stores a value whose name has those bytes there (ir_names_set) before the next call on
 * m. */
bool ir_names_claim(ir_names *m, const char *name, size_t len, size_t *at);
void ir_names_set(ir_names *m, size_t at, struct ir_value *v);
/* A zeroed value of the arena with its name (len bytes, NUL added) in the same allocation. */
struct ir_value *ir_names_new_value(ar_arena *arena, const char *name, size_t len);
/* Removes v's name when it names v (else nothing changes). */
void ir_names_remove(ir_names *m, const struct ir_value *v);
/* Removes, in one pass over the table, the names of values[id] with !live[id] (id < n): for many
 * removals at once, the slots read in order instead of a probe each. seen (may be NULL; n entries,
 * false on entry): set for each live values[id] the map holds. */
void ir_names_remove_dead(ir_names *m, struct ir_value *const *values, size_t n, const bool *live,
                          bool *seen);
/* Keeps seen (n entries, malloc'd; the map takes it) as what a pass found for the value list
 * `values`: seen[i], that the map holds values[i] (ir_names_remove_dead's marks, moved along with
 * the values their list kept). The list must not change order until ir_names_take_seen, unless the
 * map changes too (which drops it). */
void ir_names_keep_seen(ir_names *m, bool *seen, struct ir_value *const *values, size_t n);
/* What was kept for the list values of n entries (the caller frees it), or NULL (and what was kept
 * for another list is dropped). */
bool *ir_names_take_seen(ir_names *m, struct ir_value *const *values, size_t n);

#endif
