// NonZero (and the kept positions of Compress's condition), whose output size depends on the
// input's values: the executor counts on the device and reads back only the count (8 bytes) to
// size the output, then the positions are written in row-major order, as the CPU writes them
// (kernels/cpu/onnx_index.c): an element is non-zero when its value != 0 (NaN counts; -0 does
// not).
//
// Chunks of NZ_CHUNK elements: one thread counts each chunk, one thread turns the counts into
// each chunk's first output position (an exclusive scan; the total after the last), and one
// thread per chunk writes its positions from there: the order is the input's.
#include "kernels/cuda/kc_common.cuh"

enum { NZ_CHUNK = 1024 };

template <typename T> __device__ __forceinline__ bool nz_test(T v)
{
    return v != 0;
}
template <> __device__ __forceinline__ bool nz_test<__half>(__half v)
{
    return kc_to_f32(v) != 0.0f;
}
template <> __device__ __forceinline__ bool nz_test<__nv_bfloat16>(__nv_bfloat16 v)
{
    return kc_to_f32(v) != 0.0f;
}

template <typename T>
__global__ void nz_count_kernel(const T *x, int64_t n, int64_t nchunks, int64_t *counts)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (int64_t)gridDim.x * blockDim.x) {
        int64_t end = (c + 1) * NZ_CHUNK < n ? (c + 1) * NZ_CHUNK : n, k = 0;
        for (int64_t i = c * NZ_CHUNK; i < end; i++)
            k += nz_test(x[i]);
        counts[c] = k;
    }
}

// counts[c] becomes the first position of chunk c; counts[nchunks] the total. One thread.
__global__ void nz_scan_kernel(int64_t *counts, int64_t nchunks)
{
    int64_t at = 0;
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t k = counts[c];
        counts[c] = at;
        at += k;
    }
    counts[nchunks] = at;
}

struct nz_dims {
    int rank;
    int64_t dims[KC_MAX_RANK];
};

// y[d * count + k] = coordinate d of the k-th non-zero element (0 for a rank-0 input).
template <typename T>
__global__ void nz_write_kernel(const T *x, int64_t n, int64_t nchunks, const int64_t *starts,
                                nz_dims shape, int64_t count, int64_t *y)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (int64_t)gridDim.x * blockDim.x) {
        int64_t end = (c + 1) * NZ_CHUNK < n ? (c + 1) * NZ_CHUNK : n, k = starts[c];
        for (int64_t i = c * NZ_CHUNK; i < end; i++) {
            if (!nz_test(x[i]))
                continue;
            int64_t rest = i;
            for (int d = shape.rank - 1; d >= 0; d--) {
                y[d * count + k] = rest % shape.dims[d];
                rest /= shape.dims[d];
            }
            if (shape.rank == 0)
                y[k] = 0;
            k++;
        }
    }
}

// Calls f.template operator()<T>() with T the storage type of t.
template <typename F> static bool nz_dispatch(kc_context *ctx, kc_elem t, F &&f)
{
    switch (t) {
    case KC_E_F32: return f.template operator()<float>();
    case KC_E_F16: return f.template operator()<__half>();
    case KC_E_BF16: return f.template operator()<__nv_bfloat16>();
    case KC_E_I8: return f.template operator()<int8_t>();
    case KC_E_U8:
    case KC_E_BOOL: return f.template operator()<uint8_t>();
    case KC_E_I32: return f.template operator()<int32_t>();
    case KC_E_I64: return f.template operator()<int64_t>();
    }
    return KC_FAIL(ctx, "nonzero: element type %d", (int)t);
}

// The chunks' first positions in the workspace (and the total after them); NULL after failing.
static int64_t *nz_starts(kc_context *ctx, kc_elem t, const void *x, int64_t n, int64_t nchunks)
{
    int64_t *counts = (int64_t *)kc_workspace(ctx, (size_t)(nchunks + 1) * sizeof(int64_t));
    if (!counts)
        return nullptr;
    bool ok = nz_dispatch(ctx, t, [&]<typename T>() {
        if (nchunks)
            nz_count_kernel<T><<<kc_blocks(nchunks), KC_THREADS, 0, ctx->stream>>>((const T *)x, n,
                                                                                   nchunks, counts);
        nz_scan_kernel<<<1, 1, 0, ctx->stream>>>(counts, nchunks);
        return KC_LAUNCHED(ctx);
    });
    return ok ? counts : nullptr;
}

bool kc_count_nonzero(kc_context *ctx, kc_elem t, const void *x, int64_t n, int64_t *count)
{
    int64_t nchunks = (n + NZ_CHUNK - 1) / NZ_CHUNK;
    int64_t *starts = nz_starts(ctx, t, x, n, nchunks);
    return starts && kc_download(ctx, count, starts + nchunks, sizeof *count);
}

bool kc_nonzero(kc_context *ctx, kc_elem t, const void *x, int rank, const int64_t *dims,
                int64_t count, int64_t *y)
{
    if (rank < 0 || rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "nonzero: rank %d", rank);
    nz_dims shape = {};
    shape.rank = rank;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        shape.dims[d] = dims[d];
        n *= dims[d];
    }
    int64_t nchunks = (n + NZ_CHUNK - 1) / NZ_CHUNK;
    if (count == 0 || nchunks == 0)
        return true;
    int64_t *starts = nz_starts(ctx, t, x, n, nchunks);
    if (!starts)
        return false;
    return nz_dispatch(ctx, t, [&]<typename T>() {
        nz_write_kernel<T><<<kc_blocks(nchunks), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x, n, nchunks, starts, shape, count, y);
        return KC_LAUNCHED(ctx);
    });
}
