/* DynamicQuantizeMatMul: the graph DynamicQuantizeLinear(A) -> MatMulInteger(a_q, B, a_zp, b_zp)
 * -> Cast(f32) -> Mul(a_scale * b_scale) (-> Add(bias)) in one kernel, computing what those ops
 * compute, in their order, so that the fused node agrees with the graph bit for bit: A quantized
 * as kn_cpu_DynamicQuantizeLinear does (kernels/cpu/onnx_qlinear.c), the products of the 8-bit
 * differences summed in int64 and wrapped to int32 as kn_cpu_MatMulInteger does, the scales
 * multiplied in f32 first (the graph's Mul(a_scale, b_scale)), then acc * scale, then + bias. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <stdlib.h>

/* One value of a scalar, [1] or [N] parameter at column j (absent: 0). */
static int64_t zero_at(const kn_tensor *t, int64_t j)
{
    if (!t || !t->data)
        return 0;
    return kn_get_int(t, t->numel == 1 ? 0 : j);
}

bool kn_cpu_DynamicQuantizeMatMul(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1], *bs = &call->inputs[2];
    const kn_tensor *bz = call->ninputs > 3 && call->inputs[3].data ? &call->inputs[3] : NULL;
    const float *bias = call->ninputs > 4 ? call->inputs[4].data : NULL;
    kn_tensor *y = &call->outputs[0];
    if (a->dtype != IR_F32 || (b->dtype != IR_U8 && b->dtype != IR_I8))
        return kn_fail(call, "A must be f32 and B u8 or i8, not %s and %s", ir_dtype_name(a->dtype),
                       ir_dtype_name(b->dtype));
    int64_t k = b->dims[0], n = b->dims[1];
    int64_t rows = fused_prod(a->dims, 0, a->rank - 1);
    if (a->dims[a->rank - 1] != k || !kn_check_numel(call, 0, rows * n))
        return kn_fail(call, "A's last dim %lld is not B's first %lld, or Y is not [..., N]",
                       (long long)a->dims[a->rank - 1], (long long)k);
    if ((bs->numel != 1 && bs->numel != n) || (bz && bz->numel != 1 && bz->numel != n))
        return kn_fail(call, "b_scale and b_zero_point need 1 or %lld values", (long long)n);

    /* DynamicQuantizeLinear(A), as the unfused node computes it */
    uint8_t *aq = malloc((size_t)(a->numel > 0 ? a->numel : 1));
    if (!aq)
        return kn_fail(call, "out of memory for the quantized A (%lld bytes)", (long long)a->numel);
    float a_scale;
    uint8_t a_zero_u8;
    if (!kn_dynamic_quantize(a->data, a->numel, aq, &a_scale, &a_zero_u8)) {
        free(aq);
        return kn_fail(call, "the input holds an infinity: no scale covers it");
    }
    int64_t a_zero = a_zero_u8;

    /* MatMulInteger, Cast, Mul(Cast, a_scale * b_scale), Add(bias) */
    const float *b_scale = bs->data;
    float *out = y->data;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            int64_t s = 0, zb = zero_at(bz, j);
            for (int64_t p = 0; p < k; p++)
                s += ((int64_t)aq[r * k + p] - a_zero) * (kn_get_int(b, p * n + j) - zb);
            int32_t acc = (int32_t)(uint32_t)(uint64_t)s;
            float scale = a_scale * b_scale[bs->numel == 1 ? 0 : j];
            float v = (float)acc * scale;
            out[r * n + j] = bias ? v + bias[j] : v;
        }
    free(aq);
    return true;
}
