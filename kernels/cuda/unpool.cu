// MaxPool's Indices output and MaxUnpool, with the CPU reference's semantics
// (kernels/cpu/onnx_pool.c, onnx_nn_more.c).
//
//   - MaxPool with Indices: pool.cu's window walk (the first in-bounds element, then any greater
//     one: the first of equal maxima, a NaN never replaced), and the flat index of the maximum,
//     row-major over the whole input or, with storage_order=1, its spatial dims column-major; a
//     window entirely in the padding gives -inf and index -1. One thread per output element.
//   - MaxUnpool: zeros, with each X value at the flat position its index names (already checked
//     on the host), mapped from the default output's dims into Y's. Several X values aimed at one
//     position leave the last one (the CPU's loop order): each position first records the largest
//     X index aimed at it (atomicMax), then one thread per Y element reads its winner.
#include "kernels/cuda/kc_common.cuh"

struct mpi_args {
    int64_t n;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
    bool column_major;
};

template <typename T>
__global__ void maxpool_indices_kernel(const T *x, T *y, int64_t *indices, mpi_args g)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < g.n;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = o % g.out[2], r = o / g.out[2];
        int64_t oh = r % g.out[1];
        r /= g.out[1];
        int64_t od = r % g.out[0], p = r / g.out[0];
        int64_t plane = g.in[0] * g.in[1] * g.in[2];
        const T *xp = x + p * plane;
        float best = -INFINITY;
        int64_t at = -1;
        for (int64_t kd = 0; kd < g.k[0]; kd++) {
            int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            for (int64_t kh = 0; kh < g.k[1]; kh++) {
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 ||
                        iw >= g.in[2])
                        continue;
                    float v = kc_to_f32(xp[(id * g.in[1] + ih) * g.in[2] + iw]);
                    if (at < 0 || v > best) {
                        best = v;
                        at = p * plane + (g.column_major ? (iw * g.in[1] + ih) * g.in[0] + id
                                                         : (id * g.in[1] + ih) * g.in[2] + iw);
                    }
                }
            }
        }
        y[o] = kc_from_f32<T>(best);
        indices[o] = at;
    }
}

bool kc_maxpool_indices(kc_context *ctx, const kc_tensor *x, kc_tensor *y, int64_t *indices,
                        const kc_pool_params *p, bool column_major)
{
    mpi_args g = {};
    g.column_major = column_major;
    for (int i = 0; i < 3; i++) {
        g.in[i] = p->in[i], g.out[i] = p->out[i], g.k[i] = p->kernel[i], g.s[i] = p->strides[i];
        g.d[i] = p->dilations[i], g.pb[i] = p->pad_begin[i];
    }
    g.n = p->planes * g.out[0] * g.out[1] * g.out[2];
    if (g.n != y->numel)
        return KC_FAIL(ctx, "maxpool: %lld outputs for a %lld-element Y", (long long)g.n,
                       (long long)y->numel);
    if (g.n == 0)
        return true;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        maxpool_indices_kernel<T><<<kc_blocks(g.n), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, (T *)y->data, indices, g);
        return KC_LAUNCHED(ctx);
    });
}

struct unpool_args {
    int rank;
    int64_t def[KC_MAX_RANK], out[KC_MAX_RANK];
    int64_t n; // X's elements
};

// winner[pos] = the largest X index aimed at pos (winner starts at -1 everywhere).
__global__ void unpool_claim_kernel(const int64_t *idx, unpool_args a, long long *winner)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = idx[i], pos = 0, scale = 1;
        for (int d = a.rank - 1; d >= 0; d--) { // the same coordinates in Y
            pos += rest % a.def[d] * scale;
            rest /= a.def[d];
            scale *= a.out[d];
        }
        atomicMax(winner + pos, (long long)i);
    }
}

template <typename T>
__global__ void unpool_write_kernel(const T *x, const long long *winner, int64_t n, T *y)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
         o += (int64_t)gridDim.x * blockDim.x)
        y[o] = winner[o] >= 0 ? x[winner[o]] : kc_from_f32<T>(0.0f);
}

bool kc_maxunpool(kc_context *ctx, const kc_tensor *x, const int64_t *indices,
                  const int64_t *def_dims, kc_tensor *y)
{
    if (x->rank != y->rank || x->rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "maxunpool: ranks %d and %d", x->rank, y->rank);
    if (y->numel == 0)
        return true;
    unpool_args a = {};
    a.rank = x->rank;
    a.n = x->numel;
    for (int d = 0; d < x->rank; d++)
        a.def[d] = def_dims[d], a.out[d] = y->dims[d];
    long long *winner = (long long *)kc_workspace(ctx, (size_t)y->numel * sizeof(long long));
    if (!winner || !kc_fill_bytes(ctx, winner, 0xFF, (size_t)y->numel * sizeof(long long)))
        return false;
    if (a.n > 0) {
        unpool_claim_kernel<<<kc_blocks(a.n), KC_THREADS, 0, ctx->stream>>>(indices, a, winner);
        if (!KC_LAUNCHED(ctx))
            return false;
    }
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        unpool_write_kernel<T><<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, winner, y->numel, (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}
