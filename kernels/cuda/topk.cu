// TopK with the CPU reference's order (kernels/cpu/onnx_index.c): largest or smallest first, NaN
// above every number (first when largest, last when smallest), equal values (0 and -0 too) by the
// lower index; floats compared as f32 (the CPU's view of f16 and bf16), integers as int64.
//
// One thread per element of a line: its rank is the count of the line's elements ordered before
// it (a strict total order, so the ranks are a permutation), and an element of rank below k is
// written at that rank. An element stops counting once k elements rank before it, so a line
// costs about n k log(n / k) comparisons for a small k (detection scores, a vocabulary), n^2 when
// k is close to n: simple and exact, not a sort for very long lines.
#include "kernels/cuda/kc_common.cuh"

// The key of one element: f for floats (nan flagged), v for integers.
struct topk_key {
    float f;
    int64_t v;
    bool nan;
};

template <typename T> __device__ __forceinline__ topk_key topk_load(const T *p)
{
    float f = kc_to_f32(*p);
    return {f, 0, f != f};
}
template <> __device__ __forceinline__ topk_key topk_load<int8_t>(const int8_t *p)
{
    return {0.0f, *p, false};
}
template <> __device__ __forceinline__ topk_key topk_load<uint8_t>(const uint8_t *p)
{
    return {0.0f, *p, false};
}
template <> __device__ __forceinline__ topk_key topk_load<int32_t>(const int32_t *p)
{
    return {0.0f, *p, false};
}
template <> __device__ __forceinline__ topk_key topk_load<int64_t>(const int64_t *p)
{
    return {0.0f, *p, false};
}

// -1, 0, 1 as a orders below, equal to or above b by value (NaN above everything).
__device__ __forceinline__ int topk_cmp(const topk_key &a, const topk_key &b)
{
    if (a.nan || b.nan)
        return (int)a.nan - (int)b.nan;
    if (a.f != b.f)
        return a.f < b.f ? -1 : 1;
    return a.v < b.v ? -1 : a.v > b.v;
}

template <typename T>
__global__ void topk_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, int64_t k,
                            bool largest, T *values, int64_t *indices)
{
    int64_t total = outer * inner * n;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = e % n, l = e / n, o = l / inner, i = l % inner;
        const T *line = x + o * n * inner + i;
        topk_key me = topk_load(line + j * inner);
        int64_t rank = 0;
        for (int64_t m = 0; m < n && rank < k; m++) {
            if (m == j)
                continue;
            topk_key other = topk_load(line + m * inner);
            int c = largest ? topk_cmp(me, other) : topk_cmp(other, me);
            rank += c < 0 || (c == 0 && m < j); // `other` comes first
        }
        if (rank < k) {
            int64_t at = (o * k + rank) * inner + i;
            values[at] = line[j * inner];
            indices[at] = j;
        }
    }
}

template <typename T>
static bool launch_topk(kc_context *ctx, const void *x, int64_t outer, int64_t n, int64_t inner,
                        int64_t k, bool largest, void *values, int64_t *indices)
{
    topk_kernel<T><<<kc_blocks(outer * inner * n), KC_THREADS, 0, ctx->stream>>>(
        (const T *)x, outer, n, inner, k, largest, (T *)values, indices);
    return KC_LAUNCHED(ctx);
}

bool kc_topk(kc_context *ctx, kc_elem t, const void *x, int64_t outer, int64_t n, int64_t inner,
             int64_t k, bool largest, void *values, int64_t *indices)
{
    if (k < 0 || k > n)
        return KC_FAIL(ctx, "topk: k = %lld for a line of %lld", (long long)k, (long long)n);
    if (outer * inner * k == 0)
        return true;
    switch (t) {
    case KC_E_F32: return launch_topk<float>(ctx, x, outer, n, inner, k, largest, values, indices);
    case KC_E_F16: return launch_topk<__half>(ctx, x, outer, n, inner, k, largest, values, indices);
    case KC_E_BF16:
        return launch_topk<__nv_bfloat16>(ctx, x, outer, n, inner, k, largest, values, indices);
    case KC_E_I8: return launch_topk<int8_t>(ctx, x, outer, n, inner, k, largest, values, indices);
    case KC_E_U8: return launch_topk<uint8_t>(ctx, x, outer, n, inner, k, largest, values, indices);
    case KC_E_I32:
        return launch_topk<int32_t>(ctx, x, outer, n, inner, k, largest, values, indices);
    case KC_E_I64:
        return launch_topk<int64_t>(ctx, x, outer, n, inner, k, largest, values, indices);
    default: return KC_FAIL(ctx, "topk: element type %d", (int)t);
    }
}
