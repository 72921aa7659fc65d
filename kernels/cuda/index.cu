// Ops along one axis of x viewed as [outer, n, inner], one thread per (outer, inner) line, with the
// CPU reference's semantics (kernels/cpu/onnx_index.c): ArgMax / ArgMin (NaN above everything and
// so chosen by both, as numpy; ties to the first index unless select_last_index) and CumSum
// (summed in double, exclusive and reverse); and GatherElements, GatherND and ScatterND (reduction
// none), their indices checked on the host before the launch: one thread per output element, or
// for ScatterND per (tuple, element) when the host found no two tuples alike, else per element of
// a slice walking the tuples in order, so that a repeated tuple's last update wins as on the CPU.
#include "kernels/cuda/kc_common.cuh"

template <typename T>
__global__ void arg_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, bool max, bool last,
                           int64_t *y)
{
    for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < outer * inner;
         l += (int64_t)gridDim.x * blockDim.x) {
        const T *line = x + (l / inner) * n * inner + l % inner;
        float best = kc_to_f32(line[0]);
        int64_t at = 0;
        for (int64_t j = 1; j < n; j++) {
            float v = kc_to_f32(line[j * inner]);
            bool vn = v != v, bn = best != best;
            int c = vn != bn ? (vn ? 1 : -1) // NaN wins both
                    : vn     ? 0
                    : max    ? (v > best) - (v < best)
                             : (v < best) - (v > best);
            if (c > 0 || (c == 0 && last)) {
                best = v;
                at = j;
            }
        }
        y[l] = at;
    }
}

template <typename T>
__global__ void cumsum_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                              bool reverse, T *y)
{
    for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < outer * inner;
         l += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = (l / inner) * n * inner + l % inner;
        double sum = 0.0;
        for (int64_t s = 0; s < n; s++) {
            int64_t at = base + (reverse ? n - 1 - s : s) * inner;
            double v = kc_to_f32(x[at]);
            if (!exclusive)
                sum += v;
            y[at] = kc_from_f32<T>((float)sum);
            if (exclusive)
                sum += v;
        }
    }
}

struct gather_el_args {
    int rank, axis;
    int64_t dims[KC_MAX_RANK];   // the indices' (and y's) dims
    int64_t stride[KC_MAX_RANK]; // data's strides
    int64_t axis_dim, numel;
};

template <typename T>
__global__ void gather_elements_kernel(const T *data, const void *indices, bool idx64,
                                       gather_el_args p, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.numel;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t v = idx64 ? ((const int64_t *)indices)[i] : ((const int32_t *)indices)[i];
        v += v < 0 ? p.axis_dim : 0;
        int64_t off = 0, rest = i;
        for (int d = p.rank - 1; d >= 0; d--) {
            int64_t c = rest % p.dims[d];
            rest /= p.dims[d];
            off += (d == p.axis ? v : c) * p.stride[d];
        }
        y[i] = data[off];
    }
}

bool kc_arg_reduce(kc_context *ctx, kc_dtype dt, const void *x, int64_t outer, int64_t n,
                   int64_t inner, bool max, bool last, int64_t *y)
{
    if (outer * inner == 0)
        return true;
    if (n == 0)
        return KC_FAIL(ctx, "arg reduce: an empty axis");
    return kc_dispatch_float(ctx, dt, [&]<typename T>() {
        arg_kernel<T><<<kc_blocks(outer * inner), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x, outer, n, inner, max, last, y);
        return KC_LAUNCHED(ctx);
    });
}

bool kc_cumsum(kc_context *ctx, kc_dtype dt, const void *x, int64_t outer, int64_t n, int64_t inner,
               bool exclusive, bool reverse, void *y)
{
    if (outer * n * inner == 0)
        return true;
    return kc_dispatch_float(ctx, dt, [&]<typename T>() {
        cumsum_kernel<T><<<kc_blocks(outer * inner), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x, outer, n, inner, exclusive, reverse, (T *)y);
        return KC_LAUNCHED(ctx);
    });
}

template <typename T>
static bool launch_gather_elements(kc_context *ctx, const void *data, const void *indices,
                                   bool idx64, const gather_el_args &p, void *y)
{
    gather_elements_kernel<T><<<kc_blocks(p.numel), KC_THREADS, 0, ctx->stream>>>(
        (const T *)data, indices, idx64, p, (T *)y);
    return KC_LAUNCHED(ctx);
}

bool kc_gather_elements(kc_context *ctx, const void *data, size_t esize, int rank,
                        const int64_t *data_dims, const int64_t *idx_dims, int axis,
                        const void *indices, bool idx64, void *y)
{
    if (rank < 1 || rank > KC_MAX_RANK || axis < 0 || axis >= rank)
        return KC_FAIL(ctx, "gather elements: rank %d, axis %d", rank, axis);
    gather_el_args p = {};
    p.rank = rank;
    p.axis = axis;
    p.axis_dim = data_dims[axis];
    p.numel = 1;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        p.dims[d] = idx_dims[d];
        p.stride[d] = s;
        s *= data_dims[d];
        p.numel *= idx_dims[d];
    }
    if (p.numel == 0)
        return true;
    switch (esize) {
    case 1: return launch_gather_elements<uint8_t>(ctx, data, indices, idx64, p, y);
    case 2: return launch_gather_elements<uint16_t>(ctx, data, indices, idx64, p, y);
    case 4: return launch_gather_elements<uint32_t>(ctx, data, indices, idx64, p, y);
    case 8: return launch_gather_elements<uint64_t>(ctx, data, indices, idx64, p, y);
    default: return KC_FAIL(ctx, "gather elements: elements of %zu bytes", esize);
    }
}

// The element offset of index tuple t (kc_nd_args.depth values from indices) in the indexed dims.
__device__ __forceinline__ int64_t nd_offset(const kc_nd_args &p, const void *indices, bool idx64,
                                             int64_t t)
{
    int64_t off = 0;
    for (int k = 0; k < p.depth; k++) {
        int64_t at = t * p.depth + k;
        int64_t v = idx64 ? ((const int64_t *)indices)[at] : ((const int32_t *)indices)[at];
        off += (v < 0 ? v + p.dims[k] : v) * p.strides[k];
    }
    return off;
}

template <typename T>
__global__ void gather_nd_kernel(const T *x, const void *indices, bool idx64, kc_nd_args p, T *y)
{
    int64_t n = p.batches * p.tuples * p.slice;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / p.slice, b = t / p.tuples;
        y[i] = x[b * p.per_batch + nd_offset(p, indices, idx64, t) + i % p.slice];
    }
}

// unique: one thread per (tuple, element); else one per element of a slice, tuples in order.
template <typename T>
__global__ void scatter_nd_kernel(const T *upd, const void *indices, bool idx64, kc_nd_args p,
                                  bool unique, T *y)
{
    int64_t n = unique ? p.tuples * p.slice : p.slice;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t e = i % p.slice;
        for (int64_t t = unique ? i / p.slice : 0; t < (unique ? i / p.slice + 1 : p.tuples); t++)
            y[nd_offset(p, indices, idx64, t) + e] = upd[t * p.slice + e];
    }
}

template <typename T>
static bool launch_nd(kc_context *ctx, bool scatter, const void *src, const void *indices,
                      bool idx64, const kc_nd_args &p, bool unique, void *y)
{
    if (scatter) {
        int64_t n = unique ? p.tuples * p.slice : p.slice;
        scatter_nd_kernel<T><<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(
            (const T *)src, indices, idx64, p, unique, (T *)y);
    } else {
        gather_nd_kernel<T>
            <<<kc_blocks(p.batches * p.tuples * p.slice), KC_THREADS, 0, ctx->stream>>>(
                (const T *)src, indices, idx64, p, (T *)y);
    }
    return KC_LAUNCHED(ctx);
}

static bool dispatch_nd(kc_context *ctx, bool scatter, const void *src, size_t esize,
                        const void *indices, bool idx64, const kc_nd_args *p, bool unique, void *y)
{
    if (p->depth < 1 || p->depth > KC_MAX_RANK)
        return KC_FAIL(ctx, "nd: %d index dims", p->depth);
    if (p->batches * p->tuples * p->slice == 0)
        return true;
    switch (esize) {
    case 1: return launch_nd<uint8_t>(ctx, scatter, src, indices, idx64, *p, unique, y);
    case 2: return launch_nd<uint16_t>(ctx, scatter, src, indices, idx64, *p, unique, y);
    case 4: return launch_nd<uint32_t>(ctx, scatter, src, indices, idx64, *p, unique, y);
    case 8: return launch_nd<uint64_t>(ctx, scatter, src, indices, idx64, *p, unique, y);
    default: return KC_FAIL(ctx, "nd: elements of %zu bytes", esize);
    }
}

bool kc_gather_nd(kc_context *ctx, const void *x, size_t esize, const void *indices, bool idx64,
                  const kc_nd_args *p, void *y)
{
    return dispatch_nd(ctx, false, x, esize, indices, idx64, p, false, y);
}

bool kc_scatter_nd(kc_context *ctx, const void *updates, size_t esize, const void *indices,
                   bool idx64, const kc_nd_args *p, bool unique, void *y)
{
    return dispatch_nd(ctx, true, updates, esize, indices, idx64, p, unique, y);
}
