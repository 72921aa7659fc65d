/* QLinearAdd: the QDQ group QuantizeLinear(DequantizeLinear(A) + DequantizeLinear(B)) in one
 * kernel (ONNX Runtime's com.microsoft QLinearAdd), computing what those ops compute, in their
 * order, so that the fused node agrees with the graph bit for bit:
 *
 *     a = f32(A - A_zero_point) * A_scale          (DequantizeLinear)
 *     b = f32(B - B_zero_point) * B_scale          (DequantizeLinear)
 *     C = saturate(round_half_even((a + b) / C_scale) + C_zero_point)   (Add, QuantizeLinear)
 *
 * A and B broadcast (numpy); every scale and zero point is one value (per tensor). */
#include "kernels/cpu/cpu_util.h"

bool kn_cpu_QLinearAdd(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[3];
    kn_tensor *c = &call->outputs[0];
    if ((a->dtype != IR_U8 && a->dtype != IR_I8) || b->dtype != a->dtype || c->dtype != a->dtype)
        return kn_fail(call, "A, B and C must share one dtype, u8 or i8 (not %s, %s and %s)",
                       ir_dtype_name(a->dtype), ir_dtype_name(b->dtype), ir_dtype_name(c->dtype));
    for (uint32_t i = 1; i < 8; i++)
        if (i != 3 && call->inputs[i].numel != 1)
            return kn_fail(call,
                           "input %u has %lld values; the scales and zero points are per tensor", i,
                           (long long)call->inputs[i].numel);
    float sa = *(const float *)call->inputs[1].data, sb = *(const float *)call->inputs[4].data;
    float sc = *(const float *)call->inputs[6].data;
    int64_t za = kn_get_int(&call->inputs[2], 0), zb = kn_get_int(&call->inputs[5], 0);
    int64_t zc = kn_get_int(&call->inputs[7], 0);
    int64_t lo = c->dtype == IR_I8 ? -128 : 0, hi = c->dtype == IR_I8 ? 127 : 255;
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, c, ins, 2))
        return kn_fail(call, "A and B do not broadcast to C's shape");
    for (int64_t o = 0; o < c->numel; o += it.run, kn_bcast_next(&it))
        for (int64_t i = 0; i < it.run; i++) {
            float x = (float)(kn_get_int(a, it.off[0] + i * it.step[0]) - za) * sa;
            float y = (float)(kn_get_int(b, it.off[1] + i * it.step[1]) - zb) * sb;
            float v = (x + y) / sc;
            kn_set_int(c, o + i, kn_quantize(v, zc, lo, hi));
        }
    return true;
}
