// QLinearAdd: QuantizeLinear(DequantizeLinear(A) + DequantizeLinear(B)) in one pass, as the CPU
// kernel (kernels/cpu/fused_qlinear_add.c) computes the unfused ops: each side dequantized in f32,
// added, divided by C_scale, rounded half to even (rint in double, as kn_quantize), plus C's zero
// point, saturated. The f32 operations are the _rn intrinsics (never an FMA), in the CPU's order.
// i8 only (the CUDA executor has no u8 tensors); the scales and zero points are read on the
// device, so that a graph capture keeps them live.
#include "kernels/cuda/kc_common.cuh"

__global__ void qlinear_add_kernel(const int8_t *a, kc_bcast ab, const float *sa, const int8_t *za,
                                   const int8_t *b, kc_bcast bb, const float *sb, const int8_t *zb,
                                   const float *sc, const int8_t *zc, int8_t *c, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float x = __fmul_rn((float)((int)a[kc_bcast_offset(ab, i)] - (int)*za), *sa);
        float y = __fmul_rn((float)((int)b[kc_bcast_offset(bb, i)] - (int)*zb), *sb);
        float v = __fdiv_rn(__fadd_rn(x, y), *sc);
        double q = v != v ? (double)*zc : rint((double)v) + (double)*zc;
        c[i] = (int8_t)(q < -128.0 ? -128 : q > 127.0 ? 127 : (int)q);
    }
}

bool kc_qlinear_add(kc_context *ctx, const kc_tensor *a, const kc_tensor *a_scale,
                    const kc_tensor *a_zp, const kc_tensor *b, const kc_tensor *b_scale,
                    const kc_tensor *b_zp, const kc_tensor *c_scale, const kc_tensor *c_zp,
                    kc_tensor *c)
{
    if (a->dtype != KC_I8 || b->dtype != KC_I8 || c->dtype != KC_I8 || a_zp->dtype != KC_I8 ||
        b_zp->dtype != KC_I8 || c_zp->dtype != KC_I8)
        return KC_FAIL(ctx, "QLinearAdd: A, B, C and the zero points must be i8");
    if (a_scale->dtype != KC_F32 || b_scale->dtype != KC_F32 || c_scale->dtype != KC_F32 ||
        a_scale->numel != 1 || b_scale->numel != 1 || c_scale->numel != 1 || a_zp->numel != 1 ||
        b_zp->numel != 1 || c_zp->numel != 1)
        return KC_FAIL(ctx, "QLinearAdd: the scales (f32) and zero points are one value each");
    if (c->numel == 0)
        return true;
    kc_bcast ab, bb;
    if (!kc_bcast_make(a, c->dims, c->rank, &ab) || !kc_bcast_make(b, c->dims, c->rank, &bb))
        return KC_FAIL(ctx, "QLinearAdd: A and B do not broadcast to C");
    qlinear_add_kernel<<<kc_blocks(c->numel), KC_THREADS, 0, ctx->stream>>>(
        (const int8_t *)a->data, ab, (const float *)a_scale->data, (const int8_t *)a_zp->data,
        (const int8_t *)b->data, bb, (const float *)b_scale->data, (const int8_t *)b_zp->data,
        (const float *)c_scale->data, (const int8_t *)c_zp->data, (int8_t *)c->data, c->numel);
    return KC_LAUNCHED(ctx);
}
