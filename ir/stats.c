/* Node, kernel and memory-traffic counts (fuserule stats, the apply report). */
#include "ir/ir.h"

#include <string.h>

bool ir_op_is_kernel(ir_op op)
{
    unsigned flags = ir_op_info_get(op)->flags;
    return !(flags & (IR_OPF_VIEW | IR_OPF_NO_KERNEL));
}

/* The sizes of the types one pass met, by the type's address: a graph's values share a few
 * interned types, and a type does not change during the pass, so its size is computed once (the
 * overflow check's divisions were most of the pass). Direct-mapped; a collision only recomputes. */
enum { SIZE_CACHE = 256 };
typedef struct {
    const ir_type *type[SIZE_CACHE];
    int64_t bytes[SIZE_CACHE]; /* -1: not static */
} size_cache;

/* Adds v's size to *bytes, or counts it as unsized. */
static void add_value_bytes(size_cache *c, const ir_value *v, int64_t *bytes, size_t *unsized)
{
    uintptr_t h = ((uintptr_t)v->type >> 4) * 0x9e3779b97f4a7c15ull;
    size_t slot = (size_t)(h >> 56) % SIZE_CACHE;
    if (c->type[slot] != v->type) {
        int64_t n;
        c->type[slot] = v->type;
        c->bytes[slot] = ir_type_nbytes(v->type, &n) ? n : -1;
    }
    if (c->bytes[slot] >= 0)
        *bytes += c->bytes[slot];
    else
        (*unsized)++;
}

void ir_compute_stats(const ir_graph *g, ir_stats *out)
{
    memset(out, 0, sizeof *out);
    size_cache cache = {{0}, {0}};
    bool kernel[IR_OP_COUNT];
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        kernel[op] = ir_op_is_kernel((ir_op)op);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        out->nodes++;
        out->per_op[n->op]++;
        if (!kernel[n->op])
            continue;
        out->kernels++;
        if (n->op != IR_OP_Shape)
            for (uint32_t k = 0; k < n->ninputs; k++)
                if (n->inputs[k])
                    add_value_bytes(&cache, n->inputs[k], &out->bytes, &out->unsized_values);
        for (uint32_t k = 0; k < n->noutputs; k++)
            add_value_bytes(&cache, n->outputs[k], &out->bytes, &out->unsized_values);
    }
}
