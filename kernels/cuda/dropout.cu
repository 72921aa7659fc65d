// BiasDropout: Dropout(X + bias, ratio, training_mode) [+ residual], the mask drawn per element of
// Y by kernels/dropout_mask.h, the generator the CPU kernels use (kernels/cpu/fused_dropout.c), so
// both backends drop the same elements. The f32 operations are the _rn intrinsics (never an FMA),
// in the CPU kernel's order: X + bias, times the scale, + residual.
#include "kernels/cuda/kc_common.cuh"
#include "kernels/dropout_mask.h"

// The ratio scalar (any float dtype), read on the device so that a graph capture keeps it live.
__device__ __forceinline__ float ratio_of(const void *p, kc_dtype dt)
{
    if (!p)
        return 0.5f;
    switch (dt) {
    case KC_F16: return __half2float(*(const __half *)p);
    case KC_BF16: return __bfloat162float(*(const __nv_bfloat16 *)p);
    default: return *(const float *)p;
    }
}

template <typename T>
__global__ void bias_dropout_kernel(const T *x, kc_bcast xb, const T *bias, kc_bcast bb,
                                    const T *res, kc_bcast rb, const void *ratio_p,
                                    kc_dtype ratio_dt, const uint8_t *training_p, uint64_t seed,
                                    T *y, uint8_t *mask, int64_t n)
{
    bool training = training_p && *training_p;
    float ratio = training ? ratio_of(ratio_p, ratio_dt) : 0.0f;
    uint32_t threshold = kn_dropout_threshold(ratio);
    float scale = __fdiv_rn(1.0f, __fsub_rn(1.0f, ratio));
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        bool keep = kn_dropout_keep(seed, threshold, (uint64_t)i);
        float v = __fadd_rn(kc_to_f32(x[kc_bcast_offset(xb, i)]),
                            kc_to_f32(bias[kc_bcast_offset(bb, i)]));
        float d = ratio == 0.0f ? v : keep ? __fmul_rn(v, scale) : 0.0f;
        if (res)
            d = __fadd_rn(d, kc_to_f32(res[kc_bcast_offset(rb, i)]));
        y[i] = kc_from_f32<T>(d);
        if (mask)
            mask[i] = keep;
    }
}

bool kc_bias_dropout(kc_context *ctx, const kc_tensor *x, const kc_tensor *bias,
                     const kc_tensor *res, const kc_tensor *ratio, const kc_tensor *training,
                     uint64_t seed, kc_tensor *y, kc_tensor *mask)
{
    if (ratio->data && ratio->dtype != KC_F32 && ratio->dtype != KC_F16 && ratio->dtype != KC_BF16)
        return KC_FAIL(ctx, "BiasDropout: the ratio must be a float scalar");
    if ((training->data && training->dtype != KC_BOOL) || (mask->data && mask->dtype != KC_BOOL))
        return KC_FAIL(ctx, "BiasDropout: training_mode and the mask must be bool");
    if (y->numel == 0)
        return true;
    kc_bcast xb, bb, rb = {};
    if (!kc_bcast_make(x, y->dims, y->rank, &xb) || !kc_bcast_make(bias, y->dims, y->rank, &bb) ||
        (res->data && !kc_bcast_make(res, y->dims, y->rank, &rb)))
        return KC_FAIL(ctx, "BiasDropout: X, bias and residual do not broadcast to Y");
    return kc_dispatch_float(ctx, y->dtype, [&]<typename T>() {
        bias_dropout_kernel<T><<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, xb, (const T *)bias->data, bb, (const T *)res->data, rb,
            ratio->data, ratio->dtype, (const uint8_t *)training->data, seed, (T *)y->data,
            (uint8_t *)mask->data, y->numel);
        return KC_LAUNCHED(ctx);
    });
}
