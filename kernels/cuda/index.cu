// Ops along one axis of x viewed as [outer, n, inner], one thread per (outer, inner) line, with the
// CPU reference's semantics (kernels/cpu/onnx_index.c): ArgMax / ArgMin (NaN above everything and
// so chosen by both, as numpy; ties to the first index unless select_last_index) and CumSum
// (summed in double, exclusive and reverse); and GatherElements, one thread per output element,
// its indices checked on the host before the launch.
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
