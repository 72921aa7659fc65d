/* Type inference of the integer and quantized linear-algebra ops: DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, and of InstanceNormalization.
 *
 * Shapes are MatMul's and Conv's (ir_matmul_output, ir_conv_output); these add the dtypes (8-bit
 * data, i32 or 8-bit results) and the shapes of scales and zero points: a scalar or one value per
 * tensor, or one per row of A / column of B / output channel where ONNX allows it. */
#include "ir/infer_util.h"

#define IR_DTS_8BIT (IR_DT(IR_I8) | IR_DT(IR_U8))

/* Input i (when present) is a scalar or a vector of `len` values (len unknown: any vector). */
static bool scalar_or_vector(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int64_t len,
                             const char *what)
{
    const ir_type *t = ir_in(n, i);
    if (!t || t->rank < 0 || t->rank == 0)
        return true;
    int64_t d;
    if (t->rank == 1 && (t->dims[0] == 1 || ir_dim_unify(t->dims[0], len, &d)))
        return true;
    return ir_node_error(g, n, dg, "%s %s has shape %s; expected a scalar or %lld values", what,
                         ir_input_name(g, n, i), ir_shape_str(g, t), (long long)len);
}

static int64_t dim_from_end(const ir_type *t, int k)
{
    return t->rank >= k ? t->dims[t->rank - k] : IR_DIM_UNKNOWN;
}

/* DynamicQuantizeLinear(x f32) -> y u8 of x's shape, y_scale f32 scalar, y_zero_point u8 scalar. */
bool ir_infer_DynamicQuantizeLinear(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DT(IR_F32)))
        return false;
    ir_type y = *ir_in(n, 0);
    y.dtype = IR_U8;
    ir_value_set_type(g, n->outputs[0], &y);
    ir_set_unknown(g, n->outputs[1], IR_F32, 0);
    ir_set_unknown(g, n->outputs[2], IR_U8, 0);
    return ir_infer_done(g, n, dg);
}

/* MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> i32: A and B 8-bit (either signedness);
 * a_zero_point per tensor or per row of A, b_zero_point per tensor or per column of B. */
bool ir_infer_MatMulInteger(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_8BIT) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_8BIT) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_same_dtype(g, n, dg, 1, 3) || !ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) ||
        !ir_check_rank(g, n, dg, 1, 1, IR_MAX_RANK))
        return false;
    const ir_type *a = ir_in(n, 0), *b = ir_in(n, 1);
    ir_type y;
    if (!scalar_or_vector(g, n, dg, 2, dim_from_end(a, 2), "a_zero_point") ||
        !scalar_or_vector(g, n, dg, 3, b->rank >= 2 ? dim_from_end(b, 1) : 1, "b_zero_point") ||
        !ir_matmul_output(g, n, dg, a, b, &y))
        return false;
    y.dtype = IR_I32;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ConvInteger(x, w, x_zero_point?, w_zero_point?) -> i32 of Conv's shape; x_zero_point per tensor,
 * w_zero_point per tensor or per output channel. */
bool ir_infer_ConvInteger(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_8BIT) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_8BIT) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_same_dtype(g, n, dg, 1, 3) || !ir_check_scalar(g, n, dg, 2))
        return false;
    ir_type y;
    if (!ir_conv_output(g, n, dg, ir_in(n, 0), ir_in(n, 1), &y) ||
        !scalar_or_vector(g, n, dg, 3, y.rank >= 2 ? y.dims[1] : IR_DIM_UNKNOWN, "w_zero_point"))
        return false;
    y.dtype = IR_I32;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* The scales (float) and zero points (8-bit, of their data's dtype) of a QLinear op: data at
 * `data`, its scale and zero point after it. */
static bool qparams(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t data, uint32_t scale,
                    uint32_t zero)
{
    return ir_check_dtype(g, n, dg, scale, IR_DT(IR_F32)) &&
           ir_check_dtype(g, n, dg, zero, IR_DTS_8BIT) &&
           (data == zero || ir_check_same_dtype(g, n, dg, data, zero));
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y in y_zp's dtype; a's
 * parameters per tensor or per row, b's per tensor or per column, y's per tensor. */
bool ir_infer_QLinearMatMul(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_8BIT) ||
        !ir_check_dtype(g, n, dg, 3, IR_DTS_8BIT) || !qparams(g, n, dg, 0, 1, 2) ||
        !qparams(g, n, dg, 3, 4, 5) || !qparams(g, n, dg, 7, 6, 7) ||
        !ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 3, 1, IR_MAX_RANK))
        return false;
    const ir_type *a = ir_in(n, 0), *b = ir_in(n, 3);
    int64_t rows = dim_from_end(a, 2), cols = b->rank >= 2 ? dim_from_end(b, 1) : 1;
    ir_type y;
    if (!scalar_or_vector(g, n, dg, 1, rows, "a_scale") ||
        !scalar_or_vector(g, n, dg, 2, rows, "a_zero_point") ||
        !scalar_or_vector(g, n, dg, 4, cols, "b_scale") ||
        !scalar_or_vector(g, n, dg, 5, cols, "b_zero_point") || !ir_check_scalar(g, n, dg, 6) ||
        !ir_check_scalar(g, n, dg, 7) || !ir_matmul_output(g, n, dg, a, b, &y))
        return false;
    y.dtype = ir_in(n, 7)->dtype;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B? i32) -> y of Conv's shape in
 * y_zp's dtype; w's parameters per tensor or per output channel, the others per tensor. */
bool ir_infer_QLinearConv(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_8BIT) ||
        !ir_check_dtype(g, n, dg, 3, IR_DTS_8BIT) || !qparams(g, n, dg, 0, 1, 2) ||
        !qparams(g, n, dg, 3, 4, 5) || !qparams(g, n, dg, 7, 6, 7) ||
        !ir_check_dtype(g, n, dg, 8, IR_DT(IR_I32)) || !ir_check_scalar(g, n, dg, 1) ||
        !ir_check_scalar(g, n, dg, 2) || !ir_check_scalar(g, n, dg, 6) ||
        !ir_check_scalar(g, n, dg, 7) || !ir_check_rank(g, n, dg, 8, 1, 1))
        return false;
    ir_type y;
    if (!ir_conv_output(g, n, dg, ir_in(n, 0), ir_in(n, 3), &y))
        return false;
    int64_t m = y.rank >= 2 ? y.dims[1] : IR_DIM_UNKNOWN;
    if (!scalar_or_vector(g, n, dg, 4, m, "w_scale") ||
        !scalar_or_vector(g, n, dg, 5, m, "w_zero_point") ||
        !scalar_or_vector(g, n, dg, 8, m, "the bias"))
        return false;
    y.dtype = ir_in(n, 7)->dtype;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* InstanceNormalization(input [N, C, D...], scale [C], B [C]) -> input's type. */
bool ir_infer_InstanceNormalization(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_rank(g, n, dg, 0, 3, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 1, 1) ||
        !ir_check_rank(g, n, dg, 2, 1, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t c = x->rank >= 2 ? x->dims[1] : IR_DIM_UNKNOWN;
    for (uint32_t i = 1; i <= 2; i++) {
        int64_t d, len = ir_in(n, i)->rank == 1 ? ir_in(n, i)->dims[0] : IR_DIM_UNKNOWN;
        if (!ir_dim_unify(len, c, &d))
            return ir_node_error(g, n, dg, "%s has %lld values; the input has %lld channels",
                                 i == 1 ? "scale" : "B", (long long)len, (long long)c);
    }
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}
