/* Ops that make tensors from shapes, attributes or scalars: Shape, ConstantOfShape, Constant and
 * Range. Exporters compute shapes with these (and integer arithmetic on their i64 results). */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <string.h>

/* ONNX Shape's start/end: negative counts from the end, then clamped to [0, rank]. */
static int64_t clamp_dim_index(int64_t v, int rank)
{
    if (v < 0)
        v += rank;
    return v < 0 ? 0 : v > rank ? rank : v;
}

bool kn_cpu_Shape(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    int64_t start = clamp_dim_index(ir_get_int(call->node, "start"), x->rank);
    int64_t end = clamp_dim_index(ir_get_int(call->node, "end"), x->rank);
    int64_t n = end > start ? end - start : 0;
    if (y->dtype != IR_I64)
        return kn_fail(call, "the output must be i64");
    if (!kn_check_numel(call, 0, n))
        return false;
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)y->data)[i] = x->dims[start + i];
    return true;
}

/* Fills y with copies of the element in `one` (ir_dtype_size(y->dtype) bytes). */
static void fill(kn_tensor *y, const void *one)
{
    size_t size = ir_dtype_size(y->dtype);
    for (int64_t i = 0; i < y->numel; i++)
        memcpy((char *)y->data + (size_t)i * size, one, size);
}

/* The output's dims are the values of the shape input; every element is `value` in the output's
 * dtype (the `dtype` attribute chose it at inference). */
bool kn_cpu_ConstantOfShape(const kn_call *call)
{
    const kn_tensor *shape = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    int64_t dims[IR_MAX_RANK];
    int rank = kn_read_ints(call, shape, dims, IR_MAX_RANK, "shape");
    if (rank < 0)
        return false;
    bool same = rank == y->rank;
    for (int d = 0; d < rank && same; d++)
        same = dims[d] == y->dims[d];
    if (!same)
        return kn_fail(call, "the output was allocated with another shape than the input's values");
    uint64_t one = 0;
    kn_tensor v = {.dtype = y->dtype, .rank = 0, .numel = 1, .data = &one};
    kn_set_f64(&v, 0, ir_get_float(call->node, "value"));
    fill(y, &one);
    return true;
}

/* The value of whichever value_* attribute the node has: value_float (f32 scalar), value_floats
 * (f32 list), value_int (i64 scalar) or value_ints (i64 list). */
bool kn_cpu_Constant(const kn_call *call)
{
    const ir_node *n = call->node;
    kn_tensor *y = &call->outputs[0];
    const ir_attr *a;
    if ((a = ir_node_attr(n, "value_float")) || (a = ir_node_attr(n, "value_int"))) {
        if (!kn_check_numel(call, 0, 1))
            return false;
        if (a->kind == IR_ATTR_INT && y->dtype == IR_I64)
            ((int64_t *)y->data)[0] = a->v.i;
        else
            kn_set_f64(y, 0, a->kind == IR_ATTR_INT ? (double)a->v.i : a->v.f);
        return true;
    }
    if ((a = ir_node_attr(n, "value_floats")) || (a = ir_node_attr(n, "value_ints"))) {
        if (!kn_check_numel(call, 0, a->count))
            return false;
        for (uint32_t i = 0; i < a->count; i++) {
            if (a->kind == IR_ATTR_INTS && y->dtype == IR_I64)
                ((int64_t *)y->data)[i] = a->v.ints[i];
            else
                kn_set_f64(y, i, a->kind == IR_ATTR_INTS ? (double)a->v.ints[i] : a->v.floats[i]);
        }
        return true;
    }
    return kn_fail(call, "no value_float, value_floats, value_int or value_ints attribute");
}

/* y[i] = start + i * delta for i < max(ceil((limit - start) / delta), 0); integers exactly,
 * floats in float arithmetic as numpy's arange does. */
bool kn_cpu_Range(const kn_call *call)
{
    const kn_tensor *ts = &call->inputs[0], *tl = &call->inputs[1], *td = &call->inputs[2];
    kn_tensor *y = &call->outputs[0];
    if (ts->numel != 1 || tl->numel != 1 || td->numel != 1)
        return kn_fail(call, "start, limit and delta must be scalars");
    if (ts->dtype != y->dtype || tl->dtype != y->dtype || td->dtype != y->dtype)
        return kn_fail(call, "start, limit and delta must have the output's dtype");
    if (y->dtype == IR_F32) {
        float start = ((const float *)ts->data)[0], limit = ((const float *)tl->data)[0];
        float delta = ((const float *)td->data)[0];
        if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
            return kn_fail(call, "delta must be non-zero and start, limit, delta finite");
        double count = ceil(((double)limit - start) / delta);
        int64_t n = count > 0 ? (int64_t)count : 0;
        if (!kn_check_numel(call, 0, n))
            return false;
        for (int64_t i = 0; i < n; i++)
            ((float *)y->data)[i] = start + (float)i * delta;
        return true;
    }
    if (y->dtype == IR_BOOL)
        return kn_fail(call, "Range is not defined on bool");
    int64_t start = kn_get_int(ts, 0), limit = kn_get_int(tl, 0), delta = kn_get_int(td, 0);
    if (delta == 0)
        return kn_fail(call, "delta must be non-zero");
    /* ceil((limit - start) / delta) in exact integer arithmetic (i8..i64 bounds fit in __int128) */
    __int128 span = (__int128)limit - start, d = delta;
    __int128 count = span / d + ((span % d != 0) && ((span > 0) == (d > 0)));
    int64_t n = count > 0 ? (int64_t)(count > IR_MAX_NUMEL ? IR_MAX_NUMEL + 1 : count) : 0;
    if (!kn_check_numel(call, 0, n))
        return false;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)((__int128)start + (__int128)i * delta);
        switch (y->dtype) {
        case IR_I8: ((int8_t *)y->data)[i] = (int8_t)v; break;
        case IR_U8: ((uint8_t *)y->data)[i] = (uint8_t)v; break;
        case IR_I32: ((int32_t *)y->data)[i] = (int32_t)v; break;
        case IR_I64: ((int64_t *)y->data)[i] = v; break;
        default: FR_UNREACHABLE();
        }
    }
    return true;
}
