/* A graph's value names (ir_graph.by_name): name -> the value that carries it, for the values that
 * live (a dropped value's name is removed and free again).
 *
 * An open-addressing table (linear probing, no tombstones: a removal shifts the entries after it
 * back) of 12-byte slots, each the 32 high bits of the name's hash and the value. The key is the
 * value's own name (v->name), not a copy in the slot: a probe compares the hash bits first and
 * reads the name only when they match. A slot's place is the hash bits scaled to the table's size
 * (not masked), so the table can be any size and grows without rehashing a name. Only graph.c
 * (ir_add_*, ir_compact*) adds and removes; the text parser and the ONNX import reserve and
 * prefetch. A large table lives on huge pages (base/bigmem.h). */
#ifndef FUSERULE_IR_NAMES_H
#define FUSERULE_IR_NAMES_H

#include "base/arena.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ir_value;

typedef struct __attribute__((packed, aligned(4))) {
    uint32_t tag;           /* the name's hash, high 32 bits (never 0); 0: an empty slot */
    struct ir_value *value; /* its name is the slot's key */
} ir_name_slot;

typedef struct {
    ir_name_slot *slots;
    size_t cap, len;
} ir_names;

void ir_names_free(ir_names *m);
/* Room for n names without growing. */
void ir_names_reserve(ir_names *m, size_t n);
/* Starts loading the slot where a probe for name begins, for a lookup of the same name a little
 * later (in a table larger than the caches each probe is a cache miss; a caller that knows its
 * next names early overlaps them). */
void ir_names_prefetch(const ir_names *m, const char *name, size_t len);
/* The value named by the len bytes of name, or NULL. */
struct ir_value *ir_names_get(const ir_names *m, const char *name, size_t len);
/* One probe for a definition: the slot of name. When the name is taken, *taken is true and the
 * slot holds its value; else the slot is claimed (value NULL) and the caller stores a value whose
 * name has those bytes before the next call on m. */
ir_name_slot *ir_names_claim(ir_names *m, const char *name, size_t len, bool *taken);
/* A zeroed value of the arena with its name (len bytes, NUL added) in the same allocation. */
struct ir_value *ir_names_new_value(ar_arena *arena, const char *name, size_t len);
/* Removes v's name when it names v (else nothing changes). */
void ir_names_remove(ir_names *m, const struct ir_value *v);
/* Removes, in one pass over the table, the names of values[id] with !live[id] (id < n): for many
 * removals at once, the slots read in order instead of a probe each. */
void ir_names_remove_dead(ir_names *m, struct ir_value *const *values, size_t n, const bool *live);

#endif
