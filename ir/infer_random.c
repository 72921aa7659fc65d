/* Type inference of the random generators RandomUniform (shape from its `shape` attribute) and
 * RandomUniformLike (its input's shape); the dtype is `dtype`, a TensorProto code (f32, f16 or
 * bf16: ONNX defines them on floats). */
#include "ir/infer_util.h"

#include <math.h>

static bool random_dtype(ir_graph *g, const ir_node *n, dg_context *dg, ir_dtype fallback,
                         ir_dtype *out)
{
    int64_t code = ir_get_int(n, "dtype");
    if (code == 0 && fallback != IR_DTYPE_UNKNOWN) {
        *out = fallback;
    } else if (!ir_dtype_from_onnx(code, out) || !ir_dtype_is_float(*out)) {
        return ir_node_error(g, n, dg, "dtype %lld is not f32 (1), f16 (10) or bf16 (16)",
                             (long long)code);
    }
    double low = ir_get_float(n, "low"), high = ir_get_float(n, "high");
    if (!(low <= high) || !isfinite(low) || !isfinite(high))
        return ir_node_error(g, n, dg, "low %g and high %g are not a finite range", low, high);
    return true;
}

bool ir_infer_RandomUniform(ir_graph *g, ir_node *n, dg_context *dg)
{
    ir_dtype dt;
    if (!ir_check_arity(g, n, dg) || !random_dtype(g, n, dg, IR_DTYPE_UNKNOWN, &dt))
        return false;
    const int64_t *shape;
    uint32_t rank = ir_get_ints(n, "shape", &shape);
    if (!ir_check_out_rank(g, n, dg, rank))
        return false;
    ir_type y = ir_type_unknown(dt, (int)rank);
    for (uint32_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return ir_node_error(g, n, dg, "shape[%u] = %lld is negative", i, (long long)shape[i]);
        y.dims[i] = shape[i];
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_RandomUniformLike(ir_graph *g, ir_node *n, dg_context *dg)
{
    ir_dtype dt;
    if (!ir_check_arity(g, n, dg) || !random_dtype(g, n, dg, ir_in(n, 0)->dtype, &dt))
        return false;
    ir_type y = *ir_in(n, 0);
    y.dtype = dt;
    y.layout = IR_LAYOUT_NONE;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
