/* Node, kernel and memory-traffic counts (fuserule stats, the apply report). */
#include "ir/ir.h"

#include <string.h>

bool ir_op_is_kernel(ir_op op)
{
    unsigned flags = ir_op_info_get(op)->flags;
    return !(flags & (IR_OPF_VIEW | IR_OPF_NO_KERNEL));
}

/* Adds v's size to the count, or counts it as unsized. The sizes are cached by the type's address:
 * a graph's values share a few interned types, and a type does not change during the pass, so its
 * size is computed once (the overflow check's divisions were most of the pass). Direct-mapped; a
 * collision only recomputes. */
static void add_value_bytes(ir_stats_counter *c, const ir_value *v)
{
    uintptr_t h = ((uintptr_t)v->type >> 4) * 0x9e3779b97f4a7c15ull;
    size_t slot = (size_t)(h >> 56) % IR_STATS_SIZES;
    if (c->type[slot] != v->type) {
        int64_t n;
        c->type[slot] = v->type;
        c->bytes[slot] = ir_type_nbytes(v->type, &n) ? n : -1;
    }
    if (c->bytes[slot] >= 0)
        c->out->bytes += c->bytes[slot];
    else
        c->out->unsized_values++;
}

void ir_stats_begin(ir_stats_counter *c, ir_stats *out)
{
    memset(out, 0, sizeof *out);
    c->out = out;
    for (size_t i = 0; i < IR_STATS_SIZES; i++)
        c->type[i] = NULL;
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        c->kernel[op] = ir_op_is_kernel((ir_op)op);
}

void ir_stats_add(ir_stats_counter *c, const ir_node *n)
{
    if (n->dead)
        return;
    ir_stats *out = c->out;
    out->nodes++;
    out->per_op[n->op]++;
    if (!c->kernel[n->op])
        return;
    out->kernels++;
    if (n->op != IR_OP_Shape)
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k])
                add_value_bytes(c, n->inputs[k]);
    for (uint32_t k = 0; k < n->noutputs; k++)
        add_value_bytes(c, n->outputs[k]);
}

void ir_compute_stats(const ir_graph *g, ir_stats *out)
{
    ir_stats_counter c;
    ir_stats_begin(&c, out);
    for (size_t i = 0; i < g->nodes.len; i++)
        ir_stats_add(&c, g->nodes.items[i]);
}
