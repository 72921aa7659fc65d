/* The op catalog table, assembled from ops.def and fused_ops.def. */
#include "ir/catalog.h"

#include "base/check.h"

#include <string.h>

static const ir_op_info catalog[] = {
#define IR_OP(name, min_in, max_in, min_out, max_out, cls, flags)                                  \
    {#name, min_in, max_in, min_out, max_out, cls, flags, ir_attrs_##name, 0, ir_infer_##name},
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP
};

_Static_assert(FR_COUNT_OF(catalog) == IR_OP_COUNT, "one catalog row per op");

/* The attribute counts are link-time constants in other files, so they are read on access. */
static const uint32_t *const attr_counts[] = {
#define IR_OP(name, ...) &ir_nattrs_##name,
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP
};

const ir_op_info *ir_op_info_get(ir_op op)
{
    FR_CHECK((unsigned)op < IR_OP_COUNT);
    static ir_op_info table[IR_OP_COUNT];
    static bool ready;
    if (!ready) {
        for (unsigned i = 0; i < IR_OP_COUNT; i++) {
            table[i] = catalog[i];
            table[i].nattrs = *attr_counts[i];
        }
        ready = true;
    }
    return &table[op];
}

/* ir_op_lookup's table, built once: open addressing over the name's hash, at most a quarter
 * full, each slot the op plus one (0: empty). The graph parser looks up every node's op, and the
 * scan over every name it replaced (a strlen and a compare per op) was a linear cost per node. */
enum { LOOKUP_SLOTS = 1024 };
_Static_assert(IR_OP_COUNT * 4 <= LOOKUP_SLOTS, "the op table stays at most a quarter full");
_Static_assert(IR_OP_COUNT < UINT16_MAX, "an op fits a slot");

static uint32_t name_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ^ (h >> 16);
}

bool ir_op_lookup(const char *name, size_t len, ir_op *out)
{
    static uint16_t slots[LOOKUP_SLOTS];
    static uint8_t lengths[IR_OP_COUNT];
    static bool ready;
    if (!ready) {
        for (unsigned i = 0; i < IR_OP_COUNT; i++) {
            size_t n = strlen(catalog[i].name);
            FR_CHECK(n <= UINT8_MAX);
            lengths[i] = (uint8_t)n;
            uint32_t at = name_hash(catalog[i].name, n) & (LOOKUP_SLOTS - 1);
            while (slots[at])
                at = (at + 1) & (LOOKUP_SLOTS - 1);
            slots[at] = (uint16_t)(i + 1);
        }
        ready = true;
    }
    for (uint32_t at = name_hash(name, len) & (LOOKUP_SLOTS - 1); slots[at];
         at = (at + 1) & (LOOKUP_SLOTS - 1)) {
        unsigned i = slots[at] - 1u;
        if (lengths[i] == len && memcmp(catalog[i].name, name, len) == 0) {
            *out = (ir_op)i;
            return true;
        }
    }
    return false;
}

/* By the name's address (a name the parser or a rewrite pointed at the catalog's own string) or its
 * text, comparing the first byte before calling strcmp: inference and the rewriter look attributes
 * up millions of times, and most names of an op differ in their first byte. */
const ir_attr_schema *ir_op_attr_schema(ir_op op, const char *attr_name)
{
    const ir_op_info *info = ir_op_info_get(op);
    for (uint32_t i = 0; i < info->nattrs; i++) {
        const char *name = info->attrs[i].name;
        if (name == attr_name || (name[0] == attr_name[0] && strcmp(name, attr_name) == 0))
            return &info->attrs[i];
    }
    return NULL;
}
