// MaxPool and AveragePool, 1-D to 3-D (padded to 3 spatial dims by leading dims of 1), with the
// CPU reference's semantics (kernels/cpu/onnx_pool.c): window position o*stride - pad_begin +
// k*dilation; positions outside the input are skipped; MaxPool keeps the first of equal maxima
// and gives -inf for a window entirely in the padding; AveragePool sums in double and, with
// count_include_pad, also counts positions inside the explicit padding; an empty count gives NaN.
// One thread per output element.
#include "kernels/cuda/kc_common.cuh"

struct pool_args {
    int64_t planes, n;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    bool max, include_pad;
};

__device__ __forceinline__ bool pool_inside(int64_t i, int64_t n)
{
    return i >= 0 && i < n;
}

template <typename T> __global__ void pool_kernel(const T *x, T *y, pool_args g)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < g.n;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = o % g.out[2], r = o / g.out[2];
        int64_t oh = r % g.out[1];
        r /= g.out[1];
        int64_t od = r % g.out[0], p = r / g.out[0];
        const T *xp = x + p * g.in[0] * g.in[1] * g.in[2];
        float best = -INFINITY;
        bool found = false;
        double sum = 0.0;
        int64_t count = 0;
        for (int64_t kd = 0; kd < g.k[0]; kd++) {
            int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            for (int64_t kh = 0; kh < g.k[1]; kh++) {
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (pool_inside(id, g.in[0]) && pool_inside(ih, g.in[1]) &&
                        pool_inside(iw, g.in[2])) {
                        float v = kc_to_f32(xp[(id * g.in[1] + ih) * g.in[2] + iw]);
                        if (!found || v > best)
                            best = v;
                        found = true;
                        sum += v;
                        count++;
                    } else if (g.include_pad && id >= -g.pb[0] && id < g.in[0] + g.pe[0] &&
                               ih >= -g.pb[1] && ih < g.in[1] + g.pe[1] && iw >= -g.pb[2] &&
                               iw < g.in[2] + g.pe[2]) {
                        count++;
                    }
                }
            }
        }
        float v = g.max ? best : count ? (float)(sum / (double)count) : NAN;
        y[o] = kc_from_f32<T>(v);
    }
}

bool kc_pool(kc_context *ctx, const kc_tensor *x, kc_tensor *y, const kc_pool_params *p)
{
    pool_args g = {};
    g.planes = p->planes, g.max = p->max, g.include_pad = p->count_include_pad;
    for (int i = 0; i < 3; i++) {
        g.in[i] = p->in[i], g.out[i] = p->out[i], g.k[i] = p->kernel[i], g.s[i] = p->strides[i];
        g.d[i] = p->dilations[i], g.pb[i] = p->pad_begin[i], g.pe[i] = p->pad_end[i];
    }
    g.n = g.planes * g.out[0] * g.out[1] * g.out[2];
    if (g.n != y->numel)
        return KC_FAIL(ctx, "pool: %lld outputs for a %lld-element Y", (long long)g.n,
                       (long long)y->numel);
    if (g.n == 0)
        return true;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        pool_kernel<T>
            <<<kc_blocks(g.n), KC_THREADS, 0, ctx->stream>>>((const T *)x->data, (T *)y->data, g);
        return KC_LAUNCHED(ctx);
    });
}
