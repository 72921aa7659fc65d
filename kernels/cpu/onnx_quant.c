/* QuantizeLinear and DequantizeLinear: per tensor, per axis and (opset 21) per block.
 *
 *   Quantize:   y = saturate(round(x / scale) + zero_point), round half to even, into i8 or u8
 *   Dequantize: y = (x - zero_point) * scale
 *
 * x / scale is computed in float, as ONNX's reference (numpy float32) and ONNX Runtime do: the
 * rounding of an exact half depends on it. The scale (and zero point) is a scalar (per tensor),
 * a 1-D tensor of x.dims[axis] values (per axis), or with block_size > 0 a tensor of x's shape
 * except dims[axis] = ceil(x.dims[axis] / block_size) (per block). */
#include "kernels/cpu/cpu_util.h"

typedef kn_qmap qmap;

static int64_t qindex(const qmap *m, int64_t i)
{
    if (m->kind == 0)
        return 0;
    int64_t c = (i / m->inner) % m->axis_dim;
    if (m->kind == 1)
        return c;
    int64_t outer = i / (m->inner * m->axis_dim), in = i % m->inner;
    return (outer * m->scale_axis_dim + c / m->block) * m->inner + in;
}

static bool qmap_init(const kn_call *call, const kn_tensor *x, const kn_tensor *scale,
                      const kn_tensor *zp, qmap *m)
{
    int64_t block = ir_get_int(call->node, "block_size");
    m->block = block;
    m->kind = scale->numel == 1 && block == 0 ? 0 : block == 0 ? 1 : 2;
    m->axis_dim = m->inner = m->scale_axis_dim = 1;
    if (zp && (zp->numel != scale->numel))
        return kn_fail(call, "the zero point has %lld values, the scale %lld",
                       (long long)zp->numel, (long long)scale->numel);
    if (m->kind == 0)
        return true;
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis))
        return false;
    m->axis_dim = x->dims[axis];
    m->inner = 1;
    for (int d = axis + 1; d < x->rank; d++)
        m->inner *= x->dims[d];
    if (m->kind == 1) {
        if (scale->rank != 1 || scale->numel != m->axis_dim)
            return kn_fail(call, "a per-axis scale needs %lld values (axis %d), not %lld",
                           (long long)m->axis_dim, axis, (long long)scale->numel);
        return true;
    }
    if (block < 0 || scale->rank != x->rank)
        return kn_fail(call, "a blocked scale needs the input's rank and block_size > 0");
    m->scale_axis_dim = scale->dims[axis];
    for (int d = 0; d < x->rank; d++) {
        int64_t want = d == axis ? (x->dims[d] + block - 1) / block : x->dims[d];
        if (scale->dims[d] != want)
            return kn_fail(call, "the blocked scale's dim %d is %lld, not %lld", d,
                           (long long)scale->dims[d], (long long)want);
    }
    return true;
}

bool kn_qmap_init(const kn_call *call, const kn_tensor *x, const kn_tensor *scale,
                  const kn_tensor *zp, kn_qmap *m)
{
    return qmap_init(call, x, scale, zp, m);
}

static const kn_tensor *optional_input(const kn_call *call, uint32_t i)
{
    return i < call->ninputs && call->inputs[i].data ? &call->inputs[i] : NULL;
}

bool kn_cpu_QuantizeLinear(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *scale = &call->inputs[1];
    const kn_tensor *zp = optional_input(call, 2);
    kn_tensor *y = &call->outputs[0];
    qmap m;
    if (x->dtype != IR_F32 || scale->dtype != IR_F32)
        return kn_fail(call, "x and the scale must be float");
    /* i16 and u16 arrive widened to i64 (the executor stores them back): the range is that of
     * the node's own output dtype. */
    ir_dtype stored = y->dtype == IR_I64 ? call->node->outputs[0]->type->dtype : y->dtype;
    int64_t lo, hi;
    switch (stored) {
    case IR_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case IR_U8: lo = 0, hi = UINT8_MAX; break;
    case IR_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case IR_U16: lo = 0, hi = UINT16_MAX; break;
    default: return kn_fail(call, "quantizes to i8, u8, i16 or u16, not %s", ir_dtype_name(stored));
    }
    if (zp && zp->dtype != y->dtype)
        return kn_fail(call, "the zero point's dtype differs from the output's");
    if (!qmap_init(call, x, scale, zp, &m) || !kn_check_numel(call, 0, x->numel))
        return false;
    const float *xd = x->data, *sd = scale->data;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = qindex(&m, i);
        float v = xd[i] / sd[q];
        int64_t r = kn_quantize(v, zp ? kn_get_int(zp, q) : 0, lo, hi);
        kn_set_int(y, i, r);
    }
    return true;
}

bool kn_cpu_DequantizeLinear(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *scale = &call->inputs[1];
    const kn_tensor *zp = optional_input(call, 2);
    kn_tensor *y = &call->outputs[0];
    qmap m;
    /* i16 and u16 arrive widened to i64. */
    if (x->dtype != IR_I8 && x->dtype != IR_U8 && x->dtype != IR_I32 && x->dtype != IR_I64)
        return kn_fail(call, "dequantizes i8, u8, i16, u16 or i32, not %s",
                       ir_dtype_name(x->dtype));
    if (scale->dtype != IR_F32 || y->dtype != IR_F32)
        return kn_fail(call, "the scale and the output must be float");
    if (zp && zp->dtype != x->dtype)
        return kn_fail(call, "the zero point's dtype differs from the input's");
    if (!qmap_init(call, x, scale, zp, &m) || !kn_check_numel(call, 0, x->numel))
        return false;
    const float *sd = scale->data;
    float *yd = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = qindex(&m, i);
        int64_t v = kn_get_int(x, i) - (zp ? kn_get_int(zp, q) : 0);
        yd[i] = (float)v * sd[q];
    }
    return true;
}
