/* Type inference of the ops that make a tensor from a shape or from values rather than transform
 * their data: Shape, ConstantOfShape, Range, Constant. */
#include "ir/infer_util.h"

#include <math.h>

/* Shape(data) {start, end}: an i64 vector of data's dims [start, end), both clamped to the rank. */
bool ir_infer_Shape(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(IR_I64, 1);
    if (x->rank >= 0) {
        int64_t rank = x->rank, start = ir_get_int(n, "start"), end = ir_get_int(n, "end");
        start = start < 0 ? (start < -rank ? 0 : start + rank) : (start > rank ? rank : start);
        end = end < 0 ? (end < -rank ? 0 : end + rank) : (end > rank ? rank : end);
        y.dims[0] = end > start ? end - start : 0;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ConstantOfShape(shape) {value, dtype}: a tensor of the given shape, dtype a TensorProto code. */
bool ir_infer_ConstantOfShape(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DT(IR_I64)) ||
        !ir_check_rank(g, n, dg, 0, 1, 1))
        return false;
    ir_dtype dtype;
    int64_t code = ir_get_int(n, "dtype");
    if (!ir_dtype_from_onnx(code, &dtype))
        return ir_node_error(g, n, dg, "dtype %lld is not a supported type", (long long)code);
    ir_sv_elem dims[IR_MAX_RANK];
    uint32_t count;
    ir_read_status st = ir_read_dims(g, n, dg, 0, dims, IR_MAX_RANK, &count);
    if (st == IR_READ_ERROR)
        return false;
    if (st == IR_READ_UNKNOWN) {
        int64_t len = ir_input_length(n, 0);
        if (!ir_check_out_rank(g, n, dg, len))
            return false;
        ir_set_unknown(g, n->outputs[0], dtype, (int)len);
        return ir_infer_done(g, n, dg);
    }
    ir_type y = ir_type_unknown(dtype, (int)count);
    for (uint32_t k = 0; k < count; k++) {
        if (dims[k].kind != IR_SV_INT) {
            y.dims[k] = dims[k].kind == IR_SV_DIM ? dims[k].v : IR_DIM_UNKNOWN;
            continue;
        }
        if (dims[k].v < 0 || dims[k].v > IR_MAX_NUMEL)
            return ir_node_error(g, n, dg, "shape[%u] = %lld is out of range", k,
                                 (long long)dims[k].v);
        y.dims[k] = dims[k].v;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* The length of Range(start, limit, 1) whose limit is a dim that only inference knows (the classic
 * torch exporter's `arange(x.size(1))`: Range(0, Gather(Shape(x), 1), 1)) and whose start is a
 * number <= 0: limit - start, never negative. IR_DIM_UNKNOWN otherwise. */
static int64_t symbolic_range_length(ir_graph *g, const ir_node *n, dg_context *dg)
{
    if (!(IR_DT(ir_in(n, 0)->dtype) & IR_DTS_INDEX))
        return IR_DIM_UNKNOWN;
    ir_sv_elem e[3];
    for (uint32_t i = 0; i < 3; i++) {
        uint32_t count = 0;
        if (ir_read_dims(g, n, dg, i, &e[i], 1, &count) != IR_READ_KNOWN || count != 1)
            return IR_DIM_UNKNOWN;
    }
    if (e[0].kind != IR_SV_INT || e[0].v > 0 || e[2].kind != IR_SV_INT || e[2].v != 1 ||
        e[1].kind != IR_SV_DIM)
        return IR_DIM_UNKNOWN;
    return ir_dim_sum(g, e[1].v, -e[0].v);
}

/* Range(start, limit, delta): a vector of max(ceil((limit - start) / delta), 0) values, known when
 * the three scalars are constants, or symbolic (symbolic_range_length). */
bool ir_infer_Range(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT | IR_DTS_INDEX))
        return false;
    double v[3];
    bool known = true;
    for (uint32_t i = 0; i < 3; i++) {
        if (!ir_check_same_dtype(g, n, dg, 0, i))
            return false;
        ir_read_status st = ir_read_scalar(g, n, dg, i, &v[i]);
        if (st == IR_READ_ERROR)
            return false;
        known = known && st == IR_READ_KNOWN;
    }
    ir_type y = ir_type_unknown(ir_in(n, 0)->dtype, 1);
    if (known) {
        if (v[2] == 0)
            return ir_node_error(g, n, dg, "delta is 0");
        double count = ceil((v[1] - v[0]) / v[2]);
        if (isnan(count))
            return ir_node_error(g, n, dg, "start, limit and delta give no length");
        if (count > (double)IR_MAX_NUMEL)
            return ir_node_error(g, n, dg, "the range would have more than 2^40 values");
        y.dims[0] = count > 0 ? (int64_t)count : 0;
    } else {
        y.dims[0] = symbolic_range_length(g, n, dg);
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* Constant {value_float | value_floats | value_int | value_ints}: exactly one is set; floats are
 * f32, ints i64; a list is a vector, a single value a scalar. */
bool ir_infer_Constant(ir_graph *g, ir_node *n, dg_context *dg)
{
    static const struct {
        const char *name;
        ir_dtype dtype;
        bool list;
    } forms[] = {
        {"value_float", IR_F32, false},
        {"value_floats", IR_F32, true},
        {"value_int", IR_I64, false},
        {"value_ints", IR_I64, true},
    };
    if (!ir_check_arity(g, n, dg))
        return false;
    int chosen = -1;
    for (int k = 0; k < (int)(sizeof forms / sizeof forms[0]); k++) {
        if (!ir_node_attr(n, forms[k].name))
            continue;
        if (chosen >= 0)
            return ir_node_error(g, n, dg, "both %s and %s are set; exactly one value is expected",
                                 forms[chosen].name, forms[k].name);
        chosen = k;
    }
    if (chosen < 0)
        return ir_node_error(g, n, dg,
                             "no value: set one of value_float, value_floats, value_int, "
                             "value_ints");
    ir_type y = ir_type_unknown(forms[chosen].dtype, forms[chosen].list ? 1 : 0);
    if (forms[chosen].list)
        y.dims[0] = ir_node_attr(n, forms[chosen].name)->count;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
