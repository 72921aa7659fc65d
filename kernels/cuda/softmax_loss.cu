// LogSoftmax, Hardmax and the classification losses built on the log-probabilities
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), with the CPU reference's semantics
// (kernels/cpu/onnx_loss.c):
//
//   - LogSoftmax and Hardmax: one thread per line along the axis (the CPU's loop, so its double
//     sums in its order): max (NaN wins), then log of the sum of exp(x - max) in double; Hardmax
//     marks the first maximum (a NaN is never above anything). LogSoftmax of long contiguous rows
//     (a classifier's or language model's last axis) takes one block per row instead.
//   - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the log-probabilities in f32 (the
//     CPU's), then one thread per target; "sum" and "mean" fold the per-target losses in double in
//     one block.
#include "kernels/cuda/kc_common.cuh"

enum { LS_THREADS = 256 };

// ---- LogSoftmax, Hardmax -----------------------------------------------------------------------

// y[line] = x - (max + log(sum exp(x - max))) over one line of [outer, n, inner]; the result in
// float first (the CPU's), then the storage type O.
template <typename T, typename O>
__global__ void log_softmax_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, O *y)
{
    for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < outer * inner;
         l += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = (l / inner) * n * inner + l % inner;
        double max = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < n; j++) {
            double v = kc_to_f32(x[base + j * inner]);
            max = v > max || v != v ? v : max;
        }
        for (int64_t j = 0; j < n; j++)
            sum += exp((double)kc_to_f32(x[base + j * inner]) - max);
        double lse = max + log(sum);
        for (int64_t j = 0; j < n; j++)
            y[base + j * inner] =
                kc_from_f32<O>((float)((double)kc_to_f32(x[base + j * inner]) - lse));
    }
}

// The maximum of v over the block (LS_THREADS threads), NaN winning; every thread gets it.
__device__ double ls_block_max_nan(double v, double *shared)
{
    for (int o = 16; o > 0; o >>= 1) {
        double w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v || w != w ? w : v;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    double r = lane < nwarps ? shared[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) {
        double w = __shfl_xor_sync(0xffffffffu, r, o);
        r = w > r || w != w ? w : r;
    }
    return r;
}

// LogSoftmax of contiguous rows (inner = 1) of at least LS_THREADS elements, one block per row:
// the same maximum (order does not change it) and the sum of exp in double in another order
// (a last-bit difference in double, below f32's rounding).
template <typename T> __global__ void log_softmax_row_kernel(const T *x, int64_t n, T *y)
{
    __shared__ double shared[32];
    const T *row = x + blockIdx.x * n;
    double max = -INFINITY, sum = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        double v = kc_to_f32(row[j]);
        max = v > max || v != v ? v : max;
    }
    max = ls_block_max_nan(max, shared);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        sum += exp((double)kc_to_f32(row[j]) - max);
    double lse = max + log(kc_block_sum_f64(sum, shared));
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        y[blockIdx.x * n + j] = kc_from_f32<T>((float)((double)kc_to_f32(row[j]) - lse));
}

template <typename T>
__global__ void hardmax_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, T *y)
{
    for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < outer * inner;
         l += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = (l / inner) * n * inner + l % inner, best = 0;
        float bv = kc_to_f32(x[base]);
        for (int64_t j = 1; j < n; j++) {
            float v = kc_to_f32(x[base + j * inner]);
            if (v > bv) {
                bv = v;
                best = j;
            }
        }
        for (int64_t j = 0; j < n; j++)
            y[base + j * inner] = kc_from_f32<T>(j == best ? 1.0f : 0.0f);
    }
}

bool kc_log_softmax(kc_context *ctx, kc_dtype dt, const void *x, int64_t outer, int64_t n,
                    int64_t inner, bool hardmax, void *y)
{
    if (outer * n * inner == 0)
        return true;
    return kc_dispatch_float(ctx, dt, [&]<typename T>() {
        if (hardmax)
            hardmax_kernel<T><<<kc_blocks(outer * inner), KC_THREADS, 0, ctx->stream>>>(
                (const T *)x, outer, n, inner, (T *)y);
        else if (inner == 1 && n >= LS_THREADS && outer <= 2147483647)
            log_softmax_row_kernel<T>
                <<<(unsigned)outer, LS_THREADS, 0, ctx->stream>>>((const T *)x, n, (T *)y);
        else
            log_softmax_kernel<T, T><<<kc_blocks(outer * inner), KC_THREADS, 0, ctx->stream>>>(
                (const T *)x, outer, n, inner, (T *)y);
        return KC_LAUNCHED(ctx);
    });
}

// ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------------------------------------

// The loss and weight of target position (b, i): 0 where ignored; the target already checked.
template <typename T>
__device__ __forceinline__ void nll_term(const float *lp, const void *target, bool t64,
                                         const T *weight, int64_t c, int64_t inner, int64_t ignore,
                                         int64_t at, double *l, double *w)
{
    int64_t b = at / inner, i = at % inner;
    int64_t t = t64 ? ((const int64_t *)target)[at] : ((const int32_t *)target)[at];
    *l = 0.0, *w = 0.0;
    if (t == ignore)
        return;
    *w = weight ? (double)kc_to_f32(weight[t]) : 1.0;
    *l = -(double)lp[(b * c + t) * inner + i] * *w;
}

template <typename T>
__global__ void nll_none_kernel(const float *lp, const void *target, bool t64, const T *weight,
                                int64_t count, int64_t c, int64_t inner, int64_t ignore, T *y)
{
    for (int64_t at = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; at < count;
         at += (int64_t)gridDim.x * blockDim.x) {
        double l, w;
        nll_term(lp, target, t64, weight, c, inner, ignore, at, &l, &w);
        y[at] = kc_from_f32<T>((float)l);
    }
}

// One block: each thread folds a contiguous run of targets in double, then thread 0 folds the
// runs in order (the CPU's order up to the split into runs).
template <typename T>
__global__ void nll_reduce_kernel(const float *lp, const void *target, bool t64, const T *weight,
                                  int64_t count, int64_t c, int64_t inner, int64_t ignore,
                                  bool mean, T *y)
{
    __shared__ double sums[LS_THREADS], wsums[LS_THREADS];
    int64_t per = (count + blockDim.x - 1) / blockDim.x;
    int64_t from = threadIdx.x * per, to = from + per < count ? from + per : count;
    double s = 0.0, ws = 0.0;
    for (int64_t at = from; at < to; at++) {
        double l, w;
        nll_term(lp, target, t64, weight, c, inner, ignore, at, &l, &w);
        s += l;
        ws += w;
    }
    sums[threadIdx.x] = s;
    wsums[threadIdx.x] = ws;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0, wtotal = 0.0;
        for (unsigned k = 0; k < blockDim.x; k++) {
            total += sums[k];
            wtotal += wsums[k];
        }
        y[0] = kc_from_f32<T>((float)(mean ? total / wtotal : total));
    }
}

// Storage conversions between the f32 log-probabilities and x's dtype.
template <typename T, typename O> __global__ void convert_kernel(const T *src, int64_t n, O *dst)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = kc_from_f32<O>(kc_to_f32(src[i]));
}

// reduction: 0 none, 1 sum, 2 mean. The targets were checked on the host (in [0, C) unless
// ignored), as the CPU kernel checks them.
bool kc_nll_loss(kc_context *ctx, const kc_tensor *x, bool softmax, const void *target,
                 bool target64, const kc_tensor *weight, int reduction, int64_t ignore_index,
                 kc_tensor *y, kc_tensor *log_prob)
{
    if (x->rank < 2)
        return KC_FAIL(ctx, "nll loss: rank %d", x->rank);
    int64_t n = x->dims[0], c = x->dims[1];
    int64_t inner = n && c ? x->numel / (n * c) : 0, count = n * inner;
    const float *lp = (const float *)x->data;
    if ((x->dtype != KC_F32 || softmax) && x->numel) { // the CPU's log-probabilities are f32
        float *buf = (float *)kc_workspace(ctx, (size_t)x->numel * sizeof(float));
        if (!buf)
            return false;
        bool ok = kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
            if (softmax)
                log_softmax_kernel<T, float><<<kc_blocks(n * inner), KC_THREADS, 0, ctx->stream>>>(
                    (const T *)x->data, n, c, inner, buf);
            else
                convert_kernel<T, float><<<kc_blocks(x->numel), KC_THREADS, 0, ctx->stream>>>(
                    (const T *)x->data, x->numel, buf);
            if (!KC_LAUNCHED(ctx))
                return false;
            if (softmax && log_prob && log_prob->data)
                convert_kernel<float, T><<<kc_blocks(x->numel), KC_THREADS, 0, ctx->stream>>>(
                    buf, x->numel, (T *)log_prob->data);
            return KC_LAUNCHED(ctx);
        });
        if (!ok)
            return false;
        lp = buf;
    }
    const void *w = weight && weight->data ? weight->data : nullptr;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        if (reduction == 0) {
            if (count)
                nll_none_kernel<T><<<kc_blocks(count), KC_THREADS, 0, ctx->stream>>>(
                    lp, target, target64, (const T *)w, count, c, inner, ignore_index,
                    (T *)y->data);
        } else {
            nll_reduce_kernel<T><<<1, LS_THREADS, 0, ctx->stream>>>(
                lp, target, target64, (const T *)w, count, c, inner, ignore_index, reduction == 2,
                (T *)y->data);
        }
        return KC_LAUNCHED(ctx);
    });
}
