// ReduceSum, ReduceMean, ReduceMax, ReduceMin over any set of axes, with the CPU reference's
// semantics (kernels/cpu/onnx_reduce.c): sums in double, Max/Min propagating NaN, an empty
// reduction giving 0 (Sum), NaN (Mean), -inf (Max) or +inf (Min).
//
// One thread per output element walks the elements reduced into it. Neighbouring dims of the
// same kind (reduced or kept) are merged first, so a reduction of the last axis is rows of
// contiguous elements and a reduction of the middle axes one strided loop.
#include "kernels/cuda/kc_common.cuh"

struct red_args {
    int rank; // merged dims, outermost first
    int64_t dims[KC_MAX_RANK], stride[KC_MAX_RANK];
    bool reduced[KC_MAX_RANK];
    int64_t count, nout;
    kc_reduce_kind kind;
};

template <typename T> __global__ void reduce_kernel(const T *x, T *y, red_args p)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < p.nout;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = 0, rest = o; // the kept dims' digits of o give the base offset
        for (int d = p.rank - 1; d >= 0; d--)
            if (!p.reduced[d]) {
                base += (rest % p.dims[d]) * p.stride[d];
                rest /= p.dims[d];
            }
        double sum = 0.0;
        float best = p.kind == KC_REDUCE_MAX ? -INFINITY : INFINITY;
        for (int64_t j = 0; j < p.count; j++) {
            int64_t off = base, r = j;
            for (int d = p.rank - 1; d >= 0; d--)
                if (p.reduced[d]) {
                    off += (r % p.dims[d]) * p.stride[d];
                    r /= p.dims[d];
                }
            float v = kc_to_f32(x[off]);
            if (p.kind == KC_REDUCE_SUM || p.kind == KC_REDUCE_MEAN)
                sum += v;
            else if (p.kind == KC_REDUCE_MAX ? (v > best || v != v) : (v < best || v != v))
                best = v; // once NaN, only another NaN gets here: NaN stays
        }
        float out = p.kind == KC_REDUCE_SUM    ? (float)sum
                    : p.kind == KC_REDUCE_MEAN ? (float)(sum / (double)p.count)
                                               : best;
        y[o] = kc_from_f32<T>(out);
    }
}

bool kc_reduce(kc_context *ctx, kc_reduce_kind kind, const kc_tensor *x, const bool *axes,
               kc_tensor *y)
{
    if (x->rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "reduce: rank %d", x->rank);
    red_args p = {};
    p.kind = kind;
    p.count = 1;
    for (int d = 0; d < x->rank; d++) {
        if (axes[d])
            p.count *= x->dims[d];
        if (x->dims[d] == 1)
            continue; // a dim of 1 is the same reduced or kept
        if (p.rank > 0 && p.reduced[p.rank - 1] == axes[d]) {
            p.dims[p.rank - 1] *= x->dims[d];
            continue;
        }
        p.dims[p.rank] = x->dims[d];
        p.reduced[p.rank++] = axes[d];
    }
    int64_t s = 1;
    for (int d = p.rank - 1; d >= 0; d--) {
        p.stride[d] = s;
        s *= p.dims[d];
    }
    p.nout = y->numel;
    if (p.nout == 0)
        return true;
    if (p.count > 0 && x->numel / p.count != p.nout)
        return KC_FAIL(ctx, "reduce: %lld outputs for %lld inputs reduced by %lld",
                       (long long)p.nout, (long long)x->numel, (long long)p.count);
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        reduce_kernel<T><<<kc_blocks(p.nout), KC_THREADS, 0, ctx->stream>>>((const T *)x->data,
                                                                            (T *)y->data, p);
        return KC_LAUNCHED(ctx);
    });
}
