// Row reductions: LayerNorm / RMSNorm with an optional residual add (RMSNorm, AddLayerNorm,
// AddRMSNorm) and the fused softmax.
//
// One block per row. The row's values (after the residual add, or after scale and mask) are kept
// in shared memory when they fit, so each element is read once and written once; statistics are
// reduced in fp32 with warp shuffles and a block reduction, the variance in a second pass over the
// cached row (mean first, then squared deviations: no cancellation). Rows longer than the cache
// read their input again instead.
#include "kernels/cuda/kc_common.cuh"

// Rows up to this many elements are cached in shared memory: 64 KiB of dynamic shared memory
// beside the kernels' static 128-byte reduction buffer. Past the default 48 KiB per block a kernel
// must opt in (cudaFuncAttributeMaxDynamicSharedMemorySize, set by allow_shared); sm_90 allows
// 227 KiB. tests/gpu/resources.sh checks these numbers against the built module.
constexpr int64_t ROW_CACHE_FLOATS = 16 * 1024;
constexpr size_t RED_BYTES = 32 * sizeof(float), DEFAULT_SHARED = 48 * 1024;
// The most threads a row kernel is launched with; __launch_bounds__ makes ptxas fit its registers
// (at most 64 per thread) so that a block of this size can launch.
constexpr int ROW_MAX_THREADS = 1024;

// Lets `kernel` take `dynamic` bytes of shared memory when that, with the static RED_BYTES,
// passes the default limit. A host-side attribute, not a stream operation: allowed during capture.
template <typename K> static bool allow_shared(kc_context *ctx, K kernel, size_t dynamic)
{
    if (dynamic + RED_BYTES <= DEFAULT_SHARED)
        return true;
    return KC_CHECK(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)dynamic));
}

// Loads N consecutive elements at p into out as f32: one 16-byte access when N > 1.
template <typename T, int N> __device__ __forceinline__ void load_n(const T *p, float *out)
{
    if constexpr (N == 1)
        out[0] = kc_to_f32(*p);
    else
        kc_load16(p, out);
}

template <typename T, int N> __device__ __forceinline__ void store_n(T *p, const float *in)
{
    if constexpr (N == 1)
        *p = kc_from_f32<T>(in[0]);
    else
        kc_store16(p, in);
}

// ---- normalization ------------------------------------------------------------------------------

template <typename T> struct norm_args {
    const T *a, *b; // b (residual) broadcasts to a through bb; NULL when absent
    kc_bcast bb;
    const T *scale, *bias; // `cols` contiguous values each; bias may be NULL
    const T *skip_bias;    // `cols` contiguous values added to the sum (after b); may be NULL
    T *y, *sum;            // sum may be NULL
    int64_t rows, cols;
    float epsilon;
    bool rms;
};

// The value at column c..c+N-1 of row r: a + b + skip_bias, written to sum when the node exports
// it.
template <typename T, int N>
__device__ __forceinline__ void row_values(const norm_args<T> &p, int64_t base, int64_t c,
                                           float *v, bool write_sum)
{
    load_n<T, N>(p.a + base + c, v);
    if (p.b) {
        if (p.bb.same) {
            float w[N];
            load_n<T, N>(p.b + base + c, w);
#pragma unroll
            for (int k = 0; k < N; k++)
                v[k] += w[k];
        } else {
#pragma unroll
            for (int k = 0; k < N; k++)
                v[k] += kc_to_f32(p.b[kc_bcast_offset(p.bb, base + c + k)]);
        }
    }
    if (p.skip_bias) {
        float w[N];
        load_n<T, N>(p.skip_bias + c, w);
#pragma unroll
        for (int k = 0; k < N; k++)
            v[k] += w[k];
    }
    if (write_sum && p.sum)
        store_n<T, N>(p.sum + base + c, v);
}

template <typename T, int N, bool cached>
__global__ void __launch_bounds__(ROW_MAX_THREADS) norm_kernel(norm_args<T> p)
{
    extern __shared__ float row[]; // cols floats when cached
    __shared__ float red[32];
    const int64_t chunks = p.cols / N;
    for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
        const int64_t base = r * p.cols;
        // Pass 1: the values (the sum is exported here) and their total.
        float s = 0.0f;
        for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
            float v[N];
            row_values<T, N>(p, base, c * N, v, true);
#pragma unroll
            for (int k = 0; k < N; k++) {
                s += p.rms ? v[k] * v[k] : v[k];
                if (cached)
                    row[c * N + k] = v[k];
            }
        }
        s = kc_block_reduce<false>(s, red);
        float mean = 0.0f, rstd;
        if (p.rms) {
            rstd = rsqrtf(s / (float)p.cols + p.epsilon);
        } else {
            mean = s / (float)p.cols;
            // Pass 2: squared deviations from the mean.
            float q = 0.0f;
            for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
                float v[N];
                if (cached) {
#pragma unroll
                    for (int k = 0; k < N; k++)
                        v[k] = row[c * N + k];
                } else {
                    row_values<T, N>(p, base, c * N, v, false);
                }
#pragma unroll
                for (int k = 0; k < N; k++)
                    q += (v[k] - mean) * (v[k] - mean);
            }
            q = kc_block_reduce<false>(q, red);
            rstd = rsqrtf(q / (float)p.cols + p.epsilon);
        }
        // Last pass: normalize, scale, shift, store.
        for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
            float v[N], g[N], h[N];
            if (cached) {
#pragma unroll
                for (int k = 0; k < N; k++)
                    v[k] = row[c * N + k];
            } else {
                row_values<T, N>(p, base, c * N, v, false);
            }
            load_n<T, N>(p.scale + c * N, g);
            if (p.bias)
                load_n<T, N>(p.bias + c * N, h);
#pragma unroll
            for (int k = 0; k < N; k++)
                v[k] = (v[k] - mean) * rstd * g[k] + (p.bias ? h[k] : 0.0f);
            store_n<T, N>(p.y + base + c * N, v);
        }
        __syncthreads(); // the row cache is reused by the next row
    }
}

// Threads per row: one per chunk up to ROW_MAX_THREADS, a multiple of the warp size.
static int row_threads(int64_t chunks)
{
    int64_t t = (chunks + 31) / 32 * 32;
    return (int)(t < 32 ? 32 : t > ROW_MAX_THREADS ? ROW_MAX_THREADS : t);
}

template <typename T, int N>
static bool launch_norm(kc_context *ctx, const norm_args<T> &p)
{
    unsigned blocks = (unsigned)(p.rows < 65535 * 16 ? p.rows : 65535 * 16);
    int threads = row_threads(p.cols / N);
    if (p.cols <= ROW_CACHE_FLOATS) {
        const size_t bytes = (size_t)p.cols * sizeof(float);
        if (!allow_shared(ctx, norm_kernel<T, N, true>, bytes))
            return false;
        norm_kernel<T, N, true><<<blocks, threads, bytes, ctx->stream>>>(p);
    } else
        norm_kernel<T, N, false><<<blocks, threads, 0, ctx->stream>>>(p);
    return KC_LAUNCHED(ctx);
}

// A parameter as `cols` contiguous values: its own data when it has them, else a broadcast copy
// into the workspace at *ws_off.
static bool per_column(kc_context *ctx, const kc_tensor *a, int axis, int64_t cols,
                       const kc_tensor *param, size_t esize, char *ws, size_t *ws_off,
                       const void **out)
{
    *out = nullptr;
    if (!param || !param->data)
        return true;
    if (param->numel == cols) {
        *out = param->data;
        return true;
    }
    void *dst = ws + *ws_off;
    *ws_off += ((size_t)cols * esize + 255) / 256 * 256;
    if (!kc_broadcast_copy(ctx, param, a->dims + axis, a->rank - axis, dst))
        return false;
    *out = dst;
    return true;
}

bool kc_norm(kc_context *ctx, kc_norm_kind kind, const kc_tensor *a, const kc_tensor *b,
             const kc_tensor *skip_bias, const kc_tensor *scale, const kc_tensor *bias,
             kc_tensor *y, kc_tensor *sum, int axis, float epsilon)
{
    if (axis < 0 || axis > a->rank)
        return KC_FAIL(ctx, "norm: axis %d of a rank-%d tensor", axis, a->rank);
    int64_t rows, cols;
    kc_rows_cols(a, axis, &rows, &cols);
    if (rows == 0)
        return true;
    if (cols == 0)
        return KC_FAIL(ctx, "norm: the normalized dims are empty");
    return kc_dispatch_float(ctx, a->dtype, [&]<typename T>() {
        norm_args<T> p = {};
        p.a = (const T *)a->data;
        if (b && b->data) {
            if (!kc_bcast_make(b, a->dims, a->rank, &p.bb))
                return KC_FAIL(ctx, "norm: B does not broadcast to A");
            p.b = (const T *)b->data;
        }
        char *ws = (char *)kc_workspace(ctx, 3 * (((size_t)cols * sizeof(T) + 255) / 256 * 256));
        size_t off = 0;
        const void *sc, *bi, *sb;
        if (!ws || !per_column(ctx, a, axis, cols, scale, sizeof(T), ws, &off, &sc) ||
            !per_column(ctx, a, axis, cols, bias, sizeof(T), ws, &off, &bi) ||
            !per_column(ctx, a, axis, cols, skip_bias, sizeof(T), ws, &off, &sb))
            return false;
        if (!sc)
            return KC_FAIL(ctx, "norm: the scale is missing");
        p.scale = (const T *)sc;
        p.bias = (const T *)bi;
        p.skip_bias = (const T *)sb;
        p.y = (T *)y->data;
        p.sum = sum && sum->data ? (T *)sum->data : nullptr;
        p.rows = rows;
        p.cols = cols;
        p.epsilon = epsilon;
        p.rms = kind == KC_NORM_RMS;
        constexpr int V = kc_vec<T>::n;
        bool vec = cols % V == 0 && kc_aligned16(p.a) && kc_aligned16(p.y) &&
                   kc_aligned16(p.scale) && (!p.bias || kc_aligned16(p.bias)) &&
                   (!p.skip_bias || kc_aligned16(p.skip_bias)) && (!p.sum || kc_aligned16(p.sum)) &&
                   (!p.b || !p.bb.same || kc_aligned16(p.b));
        return vec ? launch_norm<T, V>(ctx, p) : launch_norm<T, 1>(ctx, p);
    });
}

// ---- softmax ------------------------------------------------------------------------------------

template <typename T> struct softmax_args {
    const T *x, *mask;
    kc_bcast mb;
    T *y;
    int64_t outer, n, inner; // x viewed as [outer, n, inner], softmax over n
    float scale;
};

template <typename T>
__device__ __forceinline__ float scaled(const softmax_args<T> &p, int64_t at)
{
    float v = p.scale * kc_to_f32(p.x[at]);
    if (p.mask)
        v += kc_to_f32(p.mask[kc_bcast_offset(p.mb, at)]);
    return v;
}

// One block per (outer, inner) row; elements `inner` apart. Rows entirely at -inf give NaN, as
// the unfused Softmax does.
template <typename T, bool cached>
__global__ void __launch_bounds__(ROW_MAX_THREADS) softmax_kernel(softmax_args<T> p)
{
    extern __shared__ float row[];
    __shared__ float red[32];
    for (int64_t r = blockIdx.x; r < p.outer * p.inner; r += gridDim.x) {
        const int64_t base = (r / p.inner) * p.n * p.inner + r % p.inner;
        float m = -INFINITY;
        for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
            float v = scaled(p, base + i * p.inner);
            if (cached)
                row[i] = v;
            m = fmaxf(m, v);
        }
        m = kc_block_reduce<true>(m, red);
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
            float e = expf((cached ? row[i] : scaled(p, base + i * p.inner)) - m);
            if (cached)
                row[i] = e;
            s += e;
        }
        s = kc_block_reduce<false>(s, red);
        float inv = 1.0f / s;
        for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
            float e = cached ? row[i] : expf(scaled(p, base + i * p.inner) - m);
            p.y[base + i * p.inner] = kc_from_f32<T>(e * inv);
        }
        __syncthreads();
    }
}

bool kc_softmax(kc_context *ctx, const kc_tensor *x, const kc_tensor *mask, kc_tensor *y,
                int axis, float scale)
{
    if (axis < 0 || axis >= x->rank)
        return KC_FAIL(ctx, "softmax: axis %d of a rank-%d tensor", axis, x->rank);
    softmax_args<char> geom = {};
    geom.outer = 1, geom.inner = 1, geom.n = x->dims[axis];
    for (int d = 0; d < x->rank; d++)
        if (d != axis)
            *(d < axis ? &geom.outer : &geom.inner) *= x->dims[d];
    if (x->numel == 0)
        return true;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        softmax_args<T> p = {};
        p.x = (const T *)x->data;
        p.y = (T *)y->data;
        p.outer = geom.outer, p.n = geom.n, p.inner = geom.inner;
        p.scale = scale;
        if (mask && mask->data) {
            if (!kc_bcast_make(mask, x->dims, x->rank, &p.mb))
                return KC_FAIL(ctx, "softmax: the mask does not broadcast to X");
            p.mask = (const T *)mask->data;
        }
        int64_t rows = p.outer * p.inner;
        unsigned blocks = (unsigned)(rows < 65535 * 16 ? rows : 65535 * 16);
        int threads = row_threads(p.n);
        if (p.n <= ROW_CACHE_FLOATS) {
            const size_t bytes = (size_t)p.n * sizeof(float);
            if (!allow_shared(ctx, softmax_kernel<T, true>, bytes))
                return false;
            softmax_kernel<T, true><<<blocks, threads, bytes, ctx->stream>>>(p);
        } else
            softmax_kernel<T, false><<<blocks, threads, 0, ctx->stream>>>(p);
        return KC_LAUNCHED(ctx);
    });
}
