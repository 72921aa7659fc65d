/* Node, kernel and memory-traffic counts (fuserule stats, the apply report). */
#include "ir/ir.h"

#include <string.h>

bool ir_op_is_kernel(ir_op op)
{
    unsigned flags = ir_op_info_get(op)->flags;
    return !(flags & (IR_OPF_VIEW | IR_OPF_NO_KERNEL));
}

/* Adds v's size to *bytes, or counts it as unsized. */
static void add_value_bytes(const ir_value *v, int64_t *bytes, size_t *unsized)
{
    int64_t n;
    if (ir_type_nbytes(v->type, &n))
        *bytes += n;
    else
        (*unsized)++;
}

void ir_compute_stats(const ir_graph *g, ir_stats *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        out->nodes++;
        out->per_op[n->op]++;
        if (!ir_op_is_kernel(n->op))
            continue;
        out->kernels++;
        if (n->op != IR_OP_Shape)
            for (uint32_t k = 0; k < n->ninputs; k++)
                if (n->inputs[k])
                    add_value_bytes(n->inputs[k], &out->bytes, &out->unsized_values);
        for (uint32_t k = 0; k < n->noutputs; k++)
            add_value_bytes(n->outputs[k], &out->bytes, &out->unsized_values);
    }
}
