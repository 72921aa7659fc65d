/* Type inference of the reductions ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp.
 *
 * The axes come from input 1 (opset 13 for ReduceSum, 18 for the others) or from the `axes`
 * attribute (older opsets). No axes reduce every dim, unless noop_with_empty_axes=1 makes the op an
 * identity. keepdims=1 leaves a 1 in place of each reduced dim; keepdims=0 drops it. */
#include "ir/infer_util.h"

/* The result when the axes are in a non-constant input: with keepdims the rank stays; without, the
 * rank drops by the axes' count when that count is static and not 0. */
static ir_type unknown_axes(const ir_node *n, const ir_type *x, bool keepdims)
{
    if (keepdims) {
        ir_type t = ir_type_unknown(x->dtype, x->rank);
        t.layout = x->layout;
        return t;
    }
    int64_t count = ir_input_length(n, 1);
    if (count > 0 && count <= x->rank)
        return ir_type_unknown(x->dtype, x->rank - (int)count);
    return ir_type_unknown(x->dtype, -1);
}

static bool reduce(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC))
        return false;
    const ir_type *x = ir_in(n, 0);
    bool keepdims = ir_get_int(n, "keepdims") != 0;
    bool noop = ir_get_int(n, "noop_with_empty_axes") != 0;
    int64_t vals[IR_MAX_RANK];
    int axes[IR_MAX_RANK];
    uint32_t count;
    bool known;
    if (!ir_read_axes_raw(g, n, dg, 1, "axes", vals, &count, &known))
        return false;
    if (x->rank < 0) {
        ir_set_unknown(g, n->outputs[0], x->dtype, -1);
        return ir_infer_done(g, n, dg);
    }
    if (!known) {
        ir_type y = unknown_axes(n, x, keepdims);
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    if (!ir_norm_axes(g, n, dg, vals, count, x->rank, axes))
        return false;
    if (count == 0 && noop) {
        ir_value_set_type(g, n->outputs[0], x);
        return ir_infer_done(g, n, dg);
    }
    bool reduced[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < count; k++)
        reduced[axes[k]] = true;
    ir_type y = ir_type_unknown(x->dtype, 0);
    for (int i = 0; i < x->rank; i++) {
        if (!reduced[i] && count > 0)
            y.dims[y.rank++] = x->dims[i];
        else if (keepdims)
            y.dims[y.rank++] = 1;
    }
    if (keepdims)
        y.layout = x->layout;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_ReduceMean(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceSum(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceMax(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceMin(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceProd(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceL1(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceL2(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceSumSquare(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceLogSum(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
bool ir_infer_ReduceLogSumExp(ir_graph *g, ir_node *n, dg_context *dg) { return reduce(g, n, dg); }
