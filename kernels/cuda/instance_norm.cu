// InstanceNormalization with the CPU reference's semantics (kernels/cpu/onnx_instance_norm.c):
// each (n, c) plane of [N, C, D...] normalized by its own mean and biased variance, both summed in
// double (the variance around the mean, in a second pass, as the CPU does), then scaled and
// shifted by the channel's scale and B. One block of KC_THREADS threads per plane.
#include "kernels/cuda/kc_common.cuh"

template <typename T>
__global__ void instance_norm_kernel(const T *x, const T *scale, const T *bias, int64_t channels,
                                     int64_t size, double eps, T *y)
{
    __shared__ double shared[32];
    int64_t p = blockIdx.x;
    const T *row = x + p * size;
    double part = 0.0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
        part += kc_to_f32(row[i]);
    double mean = kc_block_sum_f64(part, shared) / (double)size;
    part = 0.0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
        double d = kc_to_f32(row[i]) - mean;
        part += d * d;
    }
    double var = kc_block_sum_f64(part, shared) / (double)size;
    double k = kc_to_f32(scale[p % channels]) / sqrt(var + eps);
    double b = kc_to_f32(bias[p % channels]);
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
        y[p * size + i] = kc_from_f32<T>((float)((kc_to_f32(row[i]) - mean) * k + b));
}

bool kc_instance_norm(kc_context *ctx, const kc_tensor *x, const kc_tensor *scale,
                      const kc_tensor *bias, double eps, kc_tensor *y)
{
    if (x->rank < 2)
        return KC_FAIL(ctx, "instance norm: rank %d", x->rank);
    int64_t channels = x->dims[1], planes = x->dims[0] * channels;
    if (planes == 0 || x->numel == 0)
        return true;
    if (planes > 2147483647)
        return KC_FAIL(ctx, "instance norm: %lld planes", (long long)planes);
    int64_t size = x->numel / planes;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        instance_norm_kernel<T><<<(unsigned)planes, KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, (const T *)scale->data, (const T *)bias->data, channels, size, eps,
            (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}
