/* Type inference of QuantizeLinear and DequantizeLinear.
 *
 * The scale (and the zero point, which has the scale's shape) is per tensor (a scalar or a
 * one-element vector), per axis (a vector as long as x's `axis` dim), or blocked (block_size > 0:
 * x's rank, with ceil(x[axis] / block_size) along the axis and x's dims elsewhere). */
#include "ir/infer_util.h"

/* Checks the scale's shape against x (input 0) for the node's axis and block_size. */
static bool check_scale(ir_graph *g, const ir_node *n, dg_context *dg)
{
    const ir_type *x = ir_in(n, 0), *scale = ir_in(n, 1);
    const ir_type *zero = ir_in(n, 2);
    if (zero && scale->rank >= 0 && zero->rank >= 0) {
        bool same = zero->rank == scale->rank;
        for (int i = 0; same && i < scale->rank; i++) {
            int64_t d;
            same = ir_dim_unify(zero->dims[i], scale->dims[i], &d);
        }
        if (!same)
            return ir_node_error(g, n, dg, "the zero point's shape %s differs from the scale's %s",
                                 ir_shape_str(g, zero), ir_shape_str(g, scale));
    }
    int64_t block = ir_get_int(n, "block_size");
    if (block < 0)
        return ir_node_error(g, n, dg, "block_size %lld is negative", (long long)block);
    if (x->rank < 0 || scale->rank < 0)
        return true;
    bool per_tensor = scale->rank == 0 || (scale->rank == 1 && scale->dims[0] == 1 && block == 0);
    if (per_tensor)
        return true;
    int axis;
    if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
        return false;
    if (block == 0) {
        int64_t d;
        if (scale->rank != 1 || !ir_dim_unify(scale->dims[0], x->dims[axis], &d))
            return ir_node_error(g, n, dg,
                                 "a per-axis scale must have one value per element of axis %d "
                                 "(%s), not shape %s",
                                 axis, ir_shape_str(g, x), ir_shape_str(g, scale));
        return true;
    }
    bool ok = scale->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++) {
        int64_t want = x->dims[i], d;
        if (i == axis && ir_dim_is_static(want))
            want = want / block + (want % block != 0);
        else if (i == axis)
            want = IR_DIM_UNKNOWN;
        ok = ir_dim_unify(scale->dims[i], want, &d);
    }
    if (!ok)
        return ir_node_error(g, n, dg, "a blocked scale for %s (axis %d, block_size %lld) "
                                       "cannot have shape %s",
                             ir_shape_str(g, x), axis, (long long)block, ir_shape_str(g, scale));
    return true;
}

/* QuantizeLinear(x, y_scale, y_zero_point?) -> y of x's shape, in output_dtype, else the zero
 * point's dtype, else u8; 8- or 16-bit integers (16 from opset 21). */
/* What QuantizeLinear writes. */
#define Q_OUT (IR_DT(IR_I8) | IR_DT(IR_U8) | IR_DT(IR_I16) | IR_DT(IR_U16))

bool ir_infer_QuantizeLinear(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) ||
        !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT | IR_DT(IR_I32)) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_FLOAT) ||
        !ir_check_dtype(g, n, dg, 2, Q_OUT) || !check_scale(g, n, dg))
        return false;
    ir_dtype dtype = ir_has_input(n, 2) ? ir_in(n, 2)->dtype : IR_U8;
    int64_t code = ir_get_int(n, "output_dtype");
    if (code != 0) {
        ir_dtype wanted;
        if (!ir_dtype_from_onnx(code, &wanted) || !(IR_DT(wanted) & Q_OUT))
            return ir_node_error(g, n, dg,
                                 "output_dtype %lld is not i8 (3), u8 (2), i16 (5) or u16 (4)",
                                 (long long)code);
        if (ir_has_input(n, 2) && dtype != IR_DTYPE_UNKNOWN && dtype != wanted)
            return ir_node_error(g, n, dg, "output_dtype is %s but the zero point is %s",
                                 ir_dtype_name(wanted), ir_dtype_name(dtype));
        dtype = wanted;
    }
    ir_type y = *ir_in(n, 0);
    y.dtype = dtype;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* DequantizeLinear(x, x_scale, x_zero_point?) -> y of x's shape in the scale's dtype. */
bool ir_infer_DequantizeLinear(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_QUANT) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_FLOAT) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !check_scale(g, n, dg))
        return false;
    ir_type y = *ir_in(n, 0);
    y.dtype = ir_in(n, 1)->dtype;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
