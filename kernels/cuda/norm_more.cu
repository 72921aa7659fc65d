// The plain ONNX normalizations and window ops that the fused norm kernels do not cover, with
// the CPU reference's semantics (kernels/cpu/onnx_nn_more.c, onnx_norm.c): statistics in double
// where the CPU sums in double, the same order of summation where one thread walks what the CPU
// walks, one rounding to the storage type at the end.
//
//   - GlobalMaxPool: one thread per (n, c) plane, NaN propagating.
//   - LayerNormalization with Mean / InvStdDev: one block per row, mean and then the variance
//     around it in double, the row normalized in float as the CPU does, the statistics written in
//     their own dtype (stash_type).
//   - GroupNormalization: one block per (n, group), as InstanceNormalization per group.
//   - MeanVarianceNormalization: one thread per group of the kept dims, walking its elements in
//     row-major order (the CPU's order of summation).
//   - LRN: one thread per element, the channel window's squares summed in double.
#include "kernels/cuda/kc_common.cuh"

enum { NM_THREADS = 256 };

// ---- GlobalMaxPool -----------------------------------------------------------------------------

template <typename T>
__global__ void plane_max_kernel(const T *x, int64_t planes, int64_t size, T *y)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < planes;
         p += (int64_t)gridDim.x * blockDim.x) {
        float m = -INFINITY;
        for (int64_t i = 0; i < size && m == m; i++) {
            float v = kc_to_f32(x[p * size + i]);
            m = v > m || v != v ? v : m;
        }
        y[p] = kc_from_f32<T>(m);
    }
}

bool kc_plane_max(kc_context *ctx, kc_dtype dt, const void *x, int64_t planes, int64_t size,
                  void *y)
{
    if (planes == 0)
        return true;
    if (size == 0)
        return KC_FAIL(ctx, "global max pool: empty planes");
    return kc_dispatch_float(ctx, dt, [&]<typename T>() {
        plane_max_kernel<T>
            <<<kc_blocks(planes), KC_THREADS, 0, ctx->stream>>>((const T *)x, planes, size, (T *)y);
        return KC_LAUNCHED(ctx);
    });
}

// ---- LayerNormalization with its statistics -------------------------------------------------

// One block per row of `cols`; scale and bias broadcast over the normalized dims (kc_bcast over
// [axis, rank)). The CPU's arithmetic: mean and variance in double, m = (float)mean,
// is = (float)(1 / sqrt(var + eps)), y = (x - m) * is * scale (+ bias) in float, unfused.
template <typename T, typename S>
__global__ void layer_norm_stats_kernel(const T *x, const T *scale, kc_bcast sb, const T *bias,
                                        kc_bcast bb, int64_t cols, float eps, T *y, S *mean,
                                        S *inv_std)
{
    __shared__ double shared[32];
    int64_t r = blockIdx.x;
    const T *row = x + r * cols;
    double part = 0.0;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
        part += kc_to_f32(row[i]);
    double mu = cols ? kc_block_sum_f64(part, shared) / (double)cols : 0.0;
    part = 0.0;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        double d = kc_to_f32(row[i]) - mu;
        part += d * d;
    }
    double var = cols ? kc_block_sum_f64(part, shared) / (double)cols : 0.0;
    float m = (float)mu, is = (float)(1.0 / sqrt(var + (double)eps));
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = __fmul_rn(__fmul_rn(__fsub_rn(kc_to_f32(row[i]), m), is),
                            kc_to_f32(scale[kc_bcast_offset(sb, i)]));
        if (bias)
            v = __fadd_rn(v, kc_to_f32(bias[kc_bcast_offset(bb, i)]));
        y[r * cols + i] = kc_from_f32<T>(v);
    }
    if (threadIdx.x == 0 && mean)
        mean[r] = kc_from_f32<S>(m);
    if (threadIdx.x == 0 && inv_std)
        inv_std[r] = kc_from_f32<S>(is);
}

bool kc_layer_norm_stats(kc_context *ctx, const kc_tensor *x, const kc_tensor *scale,
                         const kc_tensor *bias, int axis, float epsilon, kc_tensor *y,
                         kc_tensor *mean, kc_tensor *inv_std)
{
    int64_t rows, cols;
    kc_rows_cols(x, axis, &rows, &cols);
    if (rows == 0)
        return true;
    if (rows > 2147483647)
        return KC_FAIL(ctx, "layer norm: %lld rows", (long long)rows);
    kc_bcast sb, bb = {};
    if (!kc_bcast_make(scale, x->dims + axis, x->rank - axis, &sb) ||
        (bias && bias->data && !kc_bcast_make(bias, x->dims + axis, x->rank - axis, &bb)))
        return KC_FAIL(ctx, "layer norm: scale or bias does not broadcast to the normalized dims");
    kc_dtype st = mean && mean->data         ? mean->dtype
                  : inv_std && inv_std->data ? inv_std->dtype
                                             : x->dtype;
    const void *bp = bias ? bias->data : nullptr;
    void *mp = mean ? mean->data : nullptr, *ip = inv_std ? inv_std->data : nullptr;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        return kc_dispatch_float(ctx, st, [&]<typename S>() {
            layer_norm_stats_kernel<T, S><<<(unsigned)rows, NM_THREADS, 0, ctx->stream>>>(
                (const T *)x->data, (const T *)scale->data, sb, (const T *)bp, bb, cols, epsilon,
                (T *)y->data, (S *)mp, (S *)ip);
            return KC_LAUNCHED(ctx);
        });
    });
}

// ---- GroupNormalization ------------------------------------------------------------------------

// One block per (n, group) of `per` = C / groups * plane elements; scale and bias [C].
template <typename T>
__global__ void group_norm_kernel(const T *x, const T *scale, const T *bias, int64_t groups,
                                  int64_t chans_per_group, int64_t plane, double eps, T *y)
{
    __shared__ double shared[32];
    int64_t blk = blockIdx.x, per = chans_per_group * plane;
    const T *xb = x + blk * per;
    double part = 0.0;
    for (int64_t i = threadIdx.x; i < per; i += blockDim.x)
        part += kc_to_f32(xb[i]);
    double mean = kc_block_sum_f64(part, shared) / (double)per;
    part = 0.0;
    for (int64_t i = threadIdx.x; i < per; i += blockDim.x) {
        double d = kc_to_f32(xb[i]) - mean;
        part += d * d;
    }
    double var = kc_block_sum_f64(part, shared) / (double)per;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t i = threadIdx.x; i < per; i += blockDim.x) {
        int64_t ch = (blk % groups) * chans_per_group + i / plane;
        double v = ((double)kc_to_f32(xb[i]) - mean) * inv * (double)kc_to_f32(scale[ch]) +
                   (double)kc_to_f32(bias[ch]);
        y[blk * per + i] = kc_from_f32<T>((float)v);
    }
}

bool kc_group_norm(kc_context *ctx, const kc_tensor *x, const kc_tensor *scale,
                   const kc_tensor *bias, int64_t groups, double eps, kc_tensor *y)
{
    if (x->rank < 2 || groups < 1 || x->dims[1] % groups != 0)
        return KC_FAIL(ctx, "group norm: rank %d, %lld groups", x->rank, (long long)groups);
    int64_t blocks = x->dims[0] * groups;
    if (x->numel == 0)
        return true;
    if (blocks > 2147483647)
        return KC_FAIL(ctx, "group norm: %lld blocks", (long long)blocks);
    int64_t plane = x->numel / (x->dims[0] * x->dims[1]);
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        group_norm_kernel<T><<<(unsigned)blocks, NM_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, (const T *)scale->data, (const T *)bias->data, groups,
            x->dims[1] / groups, plane, eps, (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}

// ---- MeanVarianceNormalization -----------------------------------------------------------------

struct mvn_args {
    int nkept, nred;
    int64_t kept_dims[KC_MAX_RANK], kept_strides[KC_MAX_RANK]; // x's strides of the kept dims
    int64_t red_dims[KC_MAX_RANK], red_strides[KC_MAX_RANK];   // and of the reduced ones
    int64_t groups, per_group;
};

// The element offset of position i (row-major) over dims/strides.
__device__ __forceinline__ int64_t mvn_offset(int n, const int64_t *dims, const int64_t *strides,
                                              int64_t i)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (i % dims[d]) * strides[d];
        i /= dims[d];
    }
    return off;
}

template <typename T> __global__ void mvn_kernel(const T *x, mvn_args p, T *y)
{
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < p.groups;
         g += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = mvn_offset(p.nkept, p.kept_dims, p.kept_strides, g);
        double sum = 0.0, sq = 0.0;
        for (int64_t r = 0; r < p.per_group; r++) {
            double v = kc_to_f32(x[base + mvn_offset(p.nred, p.red_dims, p.red_strides, r)]);
            sum += v;
            sq += v * v;
        }
        double mean = sum / (double)p.per_group, var = sq / (double)p.per_group - mean * mean;
        double den = sqrt(var > 0 ? var : 0) + 1e-9;
        for (int64_t r = 0; r < p.per_group; r++) {
            int64_t at = base + mvn_offset(p.nred, p.red_dims, p.red_strides, r);
            y[at] = kc_from_f32<T>((float)(((double)kc_to_f32(x[at]) - mean) / den));
        }
    }
}

bool kc_mvn(kc_context *ctx, const kc_tensor *x, const bool *reduced, kc_tensor *y)
{
    if (x->numel == 0)
        return true;
    mvn_args p = {};
    p.groups = p.per_group = 1;
    int64_t stride = 1;
    int64_t strides[KC_MAX_RANK];
    for (int d = x->rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= x->dims[d];
    }
    for (int d = 0; d < x->rank; d++) {
        if (reduced[d]) {
            p.red_dims[p.nred] = x->dims[d], p.red_strides[p.nred++] = strides[d];
            p.per_group *= x->dims[d];
        } else {
            p.kept_dims[p.nkept] = x->dims[d], p.kept_strides[p.nkept++] = strides[d];
            p.groups *= x->dims[d];
        }
    }
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        mvn_kernel<T><<<kc_blocks(p.groups), KC_THREADS, 0, ctx->stream>>>((const T *)x->data, p,
                                                                           (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}

// ---- LRN ---------------------------------------------------------------------------------------

template <typename T>
__global__ void lrn_kernel(const T *x, int64_t n, int64_t c, int64_t plane, int64_t lo, int64_t hi,
                           double alpha_over_size, double beta, double bias, T *y)
{
    for (int64_t at = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; at < n;
         at += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = at % plane, ch = (at / plane) % c, b = at / (plane * c);
        double sq = 0.0;
        for (int64_t k = ch - lo; k <= ch + hi; k++)
            if (k >= 0 && k < c) {
                double v = kc_to_f32(x[(b * c + k) * plane + i]);
                sq += v * v;
            }
        double v = kc_to_f32(x[at]);
        y[at] = kc_from_f32<T>((float)(v / pow(bias + alpha_over_size * sq, beta)));
    }
}

bool kc_lrn(kc_context *ctx, const kc_tensor *x, int64_t size, double alpha, double beta,
            double bias, kc_tensor *y)
{
    if (x->rank < 3 || size < 1)
        return KC_FAIL(ctx, "lrn: rank %d, size %lld", x->rank, (long long)size);
    if (x->numel == 0)
        return true;
    int64_t c = x->dims[1], plane = x->numel / (x->dims[0] * c);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        lrn_kernel<T><<<kc_blocks(x->numel), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, x->numel, c, plane, lo, hi, alpha / (double)size, beta, bias,
            (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}
