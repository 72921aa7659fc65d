/* Type inference of GlobalMaxPool (GlobalAveragePool's), LRN, MeanVarianceNormalization and Det. */
#include "ir/infer_util.h"

bool ir_infer_GlobalMaxPool(ir_graph *g, ir_node *n, dg_context *dg)
{
    return ir_infer_GlobalAveragePool(g, n, dg);
}

/* LRN(X [N, C, ...]) {alpha, beta, bias, size}: X's type; size at least 1. */
bool ir_infer_LRN(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 3, IR_MAX_RANK))
        return false;
    int64_t size = ir_get_int(n, "size");
    if (size < 1 || size > IR_MAX_NUMEL)
        return ir_node_error(g, n, dg, "size %lld is not a window of at least 1", (long long)size);
    n->outputs[0]->type = *ir_in(n, 0);
    return ir_infer_done(g, n, dg);
}

/* MeanVarianceNormalization(X) {axes}: X's type; the axes in range, without duplicates. */
bool ir_infer_MeanVarianceNormalization(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT))
        return false;
    const ir_type *x = ir_in(n, 0);
    const int64_t *vals;
    uint32_t count = ir_get_ints(n, "axes", &vals);
    int axes[IR_MAX_RANK];
    if (count > IR_MAX_RANK)
        return ir_node_error(g, n, dg, "axes lists %u dims", count);
    if (x->rank >= 0 && !ir_norm_axes(g, n, dg, vals, count, x->rank, axes))
        return false;
    n->outputs[0]->type = *x;
    return ir_infer_done(g, n, dg);
}

/* Det(X [*, M, M]) -> [*]. */
bool ir_infer_Det(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(x->dtype, x->rank < 0 ? -1 : x->rank - 2);
    if (x->rank >= 0) {
        int64_t d;
        if (!ir_dim_unify(x->dims[x->rank - 1], x->dims[x->rank - 2], &d))
            return ir_node_error(g, n, dg, "%s is not a stack of square matrices",
                                 ir_shape_str(g, x));
        for (int i = 0; i < y.rank; i++)
            y.dims[i] = x->dims[i];
    }
    n->outputs[0]->type = y;
    return ir_infer_done(g, n, dg);
}
