// Data movement: one strided copy, the kernel behind Transpose, Slice, Concat and Split; Gather;
// Where. Elements are moved as raw bytes of their size, so every dtype goes through.
//
// dst[dbase + sum(i_d * dstride_d)] = src[sbase + sum(i_d * sstride_d)] over every index i of
// `dims`; source strides may be 0 (broadcast) or negative (a reversed slice). One thread per
// element, grid-stride, the element moved as raw bytes of its size.
#include "kernels/cuda/kc_common.cuh"

struct copy_plan {
    int rank;
    int64_t dims[KC_MAX_RANK], sstride[KC_MAX_RANK], dstride[KC_MAX_RANK];
    int64_t sbase, dbase, n;
};

template <typename T> __global__ void strided_copy_kernel(const T *src, T *dst, copy_plan p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i, s = p.sbase, d = p.dbase;
        for (int k = p.rank - 1; k >= 0; k--) {
            int64_t q = rest / p.dims[k], at = rest - q * p.dims[k];
            s += at * p.sstride[k];
            d += at * p.dstride[k];
            rest = q;
        }
        dst[d] = src[s];
    }
}

bool kc_strided_copy(kc_context *ctx, const void *src, void *dst, size_t esize,
                     const kc_copy_plan *plan)
{
    if (plan->rank < 0 || plan->rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "strided copy: rank %d", plan->rank);
    copy_plan p = {};
    p.rank = plan->rank;
    p.n = 1;
    for (int k = 0; k < plan->rank; k++) {
        p.dims[k] = plan->dims[k];
        p.sstride[k] = plan->src_strides[k];
        p.dstride[k] = plan->dst_strides[k];
        p.n *= plan->dims[k];
    }
    p.sbase = plan->src_base, p.dbase = plan->dst_base;
    if (p.n == 0)
        return true;
    switch (esize) {
    case 1:
        strided_copy_kernel<uint8_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint8_t *)src, (uint8_t *)dst, p);
        break;
    case 2:
        strided_copy_kernel<uint16_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint16_t *)src, (uint16_t *)dst, p);
        break;
    case 4:
        strided_copy_kernel<uint32_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint32_t *)src, (uint32_t *)dst, p);
        break;
    case 8:
        strided_copy_kernel<uint64_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint64_t *)src, (uint64_t *)dst, p);
        break;
    default: return KC_FAIL(ctx, "strided copy: elements of %zu bytes", esize);
    }
    return KC_LAUNCHED(ctx);
}

// ---- Gather and Where ----------------------------------------------------------------------------

// y[o, j, k] = data[o, idx[j] (+ dim when negative), k] over [outer, nidx, inner]; the indices
// were checked against [-dim, dim) on the host.
template <typename T, typename I>
__global__ void gather_kernel(const T *data, const I *idx, T *y, int64_t outer, int64_t dim,
                              int64_t inner, int64_t nidx)
{
    const int64_t n = outer * nidx * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = i % inner, r = i / inner, j = r % nidx, o = r / nidx;
        int64_t at = (int64_t)idx[j];
        at += at < 0 ? dim : 0;
        y[i] = data[(o * dim + at) * inner + k];
    }
}

template <typename T>
static bool launch_gather(kc_context *ctx, const void *data, const void *idx, bool idx64, void *y,
                          int64_t outer, int64_t dim, int64_t inner, int64_t nidx)
{
    const unsigned blocks = kc_blocks(outer * nidx * inner);
    if (idx64)
        gather_kernel<T, int64_t><<<blocks, KC_THREADS, 0, ctx->stream>>>(
            (const T *)data, (const int64_t *)idx, (T *)y, outer, dim, inner, nidx);
    else
        gather_kernel<T, int32_t><<<blocks, KC_THREADS, 0, ctx->stream>>>(
            (const T *)data, (const int32_t *)idx, (T *)y, outer, dim, inner, nidx);
    return KC_LAUNCHED(ctx);
}

bool kc_gather(kc_context *ctx, const void *data, size_t esize, int64_t outer, int64_t dim,
               int64_t inner, const void *indices, bool idx64, int64_t nidx, void *y)
{
    if (outer * nidx * inner == 0)
        return true;
    switch (esize) {
    case 1: return launch_gather<uint8_t>(ctx, data, indices, idx64, y, outer, dim, inner, nidx);
    case 2: return launch_gather<uint16_t>(ctx, data, indices, idx64, y, outer, dim, inner, nidx);
    case 4: return launch_gather<uint32_t>(ctx, data, indices, idx64, y, outer, dim, inner, nidx);
    case 8: return launch_gather<uint64_t>(ctx, data, indices, idx64, y, outer, dim, inner, nidx);
    default: return KC_FAIL(ctx, "gather: elements of %zu bytes", esize);
    }
}

// y[i] = cond[i] ? x[i] : z[i], the three broadcast to y.
template <typename T>
__global__ void where_kernel(const uint8_t *c, kc_bcast cb, const T *x, kc_bcast xb, const T *z,
                             kc_bcast zb, T *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = c[kc_bcast_offset(cb, i)] ? x[kc_bcast_offset(xb, i)] : z[kc_bcast_offset(zb, i)];
}

template <typename T>
static bool launch_where(kc_context *ctx, const kc_tensor *c, const kc_tensor *x,
                         const kc_tensor *z, kc_tensor *y)
{
    kc_bcast cb, xb, zb;
    if (!kc_bcast_make(c, y->dims, y->rank, &cb) || !kc_bcast_make(x, y->dims, y->rank, &xb) ||
        !kc_bcast_make(z, y->dims, y->rank, &zb))
        return KC_FAIL(ctx, "where: an operand does not broadcast to Y");
    where_kernel<T><<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
        (const uint8_t *)c->data, cb, (const T *)x->data, xb, (const T *)z->data, zb, (T *)y->data,
        y->numel);
    return KC_LAUNCHED(ctx);
}

bool kc_where(kc_context *ctx, const kc_tensor *cond, const kc_tensor *x, const kc_tensor *z,
              size_t esize, kc_tensor *y)
{
    if (y->numel == 0)
        return true;
    switch (esize) {
    case 1: return launch_where<uint8_t>(ctx, cond, x, z, y);
    case 2: return launch_where<uint16_t>(ctx, cond, x, z, y);
    case 4: return launch_where<uint32_t>(ctx, cond, x, z, y);
    case 8: return launch_where<uint64_t>(ctx, cond, x, z, y);
    default: return KC_FAIL(ctx, "where: elements of %zu bytes", esize);
    }
}

// ---- Tile and Trilu ------------------------------------------------------------------------------

struct map_plan {
    int rank;
    int64_t out[KC_MAX_RANK], in[KC_MAX_RANK];
    bool trilu, upper, pad;
    int64_t k, n;
    int64_t before[KC_MAX_RANK]; // Pad: the begin pads (negative: cropped)
    kc_pad_mode mode;
    uint64_t fill; // Pad's constant, its element's bytes
};

// Pad's source index on an axis of size n for output position i, or -1 for the constant; reflect
// mirrors without repeating the edge (numpy "reflect"), as the CPU kernel does.
__device__ __forceinline__ int64_t pad_source(int64_t i, int64_t n, int64_t before, kc_pad_mode m)
{
    int64_t s = i - before;
    if (s >= 0 && s < n)
        return s;
    switch (m) {
    case KC_PAD_CONSTANT: return -1;
    case KC_PAD_EDGE: return s < 0 ? 0 : n - 1;
    case KC_PAD_WRAP: return ((s % n) + n) % n;
    case KC_PAD_REFLECT: {
        if (n == 1)
            return 0;
        int64_t period = 2 * (n - 1);
        s = ((s % period) + period) % period;
        return s < n ? s : period - s;
    }
    }
    return -1;
}

// Tile: y[o] = x[o mod in per axis]. Pad: each axis maps through pad_source, the constant where
// any axis gives -1. Trilu (out = in): y = x where the last two digits (i, j) keep
// the upper (j - i >= k) or lower (j - i <= k) triangle, else 0.
template <typename T> __global__ void map_kernel(const T *x, T *y, map_plan p)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < p.n;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = o, src = 0, stride = 1, i = 0, j = 0;
        bool fill = false;
        for (int d = p.rank - 1; d >= 0; d--) {
            int64_t digit = rest % p.out[d];
            rest /= p.out[d];
            int64_t at = p.pad ? pad_source(digit, p.in[d], p.before[d], p.mode) : digit % p.in[d];
            fill = fill || at < 0;
            src += at * stride;
            stride *= p.in[d];
            if (d == p.rank - 1)
                j = digit;
            if (d == p.rank - 2)
                i = digit;
        }
        bool keep = !p.trilu || (p.upper ? j - i >= p.k : j - i <= p.k);
        T constant;
        memcpy(&constant, &p.fill, sizeof constant);
        y[o] = fill ? constant : keep ? x[src] : T(0);
    }
}

static bool launch_map(kc_context *ctx, const void *x, size_t esize, void *y, const map_plan &p)
{
    if (p.n == 0)
        return true;
    switch (esize) {
    case 1:
        map_kernel<uint8_t>
            <<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>((const uint8_t *)x, (uint8_t *)y, p);
        break;
    case 2:
        map_kernel<uint16_t>
            <<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>((const uint16_t *)x, (uint16_t *)y, p);
        break;
    case 4:
        map_kernel<uint32_t>
            <<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>((const uint32_t *)x, (uint32_t *)y, p);
        break;
    case 8:
        map_kernel<uint64_t>
            <<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>((const uint64_t *)x, (uint64_t *)y, p);
        break;
    default: return KC_FAIL(ctx, "tile/trilu: elements of %zu bytes", esize);
    }
    return KC_LAUNCHED(ctx);
}

bool kc_tile(kc_context *ctx, const void *x, size_t esize, int rank, const int64_t *in_dims,
             const int64_t *out_dims, void *y)
{
    if (rank < 0 || rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "tile: rank %d", rank);
    map_plan p = {};
    p.rank = rank, p.n = 1;
    for (int d = 0; d < rank; d++) {
        p.in[d] = in_dims[d], p.out[d] = out_dims[d];
        p.n *= out_dims[d];
        if (in_dims[d] == 0 && out_dims[d] != 0)
            return KC_FAIL(ctx, "tile: an empty axis cannot be repeated into %lld",
                           (long long)out_dims[d]);
    }
    return launch_map(ctx, x, esize, y, p);
}

bool kc_trilu(kc_context *ctx, const void *x, size_t esize, int rank, const int64_t *dims,
              bool upper, int64_t k, void *y)
{
    if (rank < 2 || rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "trilu: rank %d", rank);
    map_plan p = {};
    p.rank = rank, p.n = 1, p.trilu = true, p.upper = upper, p.k = k;
    for (int d = 0; d < rank; d++) {
        p.in[d] = p.out[d] = dims[d];
        p.n *= dims[d];
    }
    return launch_map(ctx, x, esize, y, p);
}

bool kc_pad(kc_context *ctx, const void *x, size_t esize, int rank, const int64_t *in_dims,
            const int64_t *out_dims, const int64_t *before, kc_pad_mode mode, uint64_t fill,
            void *y)
{
    if (rank < 1 || rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "pad: rank %d", rank);
    map_plan p = {};
    p.rank = rank, p.n = 1, p.pad = true, p.mode = mode, p.fill = fill;
    for (int d = 0; d < rank; d++) {
        p.in[d] = in_dims[d], p.out[d] = out_dims[d], p.before[d] = before[d];
        p.n *= out_dims[d];
        if (mode != KC_PAD_CONSTANT && in_dims[d] == 0 && out_dims[d] > 0)
            return KC_FAIL(ctx, "pad: the empty axis %d cannot be padded but with a constant", d);
    }
    return launch_map(ctx, x, esize, y, p);
}
