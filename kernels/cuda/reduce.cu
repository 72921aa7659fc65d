// ReduceSum, ReduceMean, ReduceMax, ReduceMin over any set of axes, with the CPU reference's
// semantics (kernels/cpu/onnx_reduce.c): sums in double, Max/Min propagating NaN, an empty
// reduction giving 0 (Sum), NaN (Mean), -inf (Max) or +inf (Min). ReduceProd, L1, L2, SumSquare,
// LogSum and LogSumExp fold in double as kernels/cpu/onnx_reduce_more.c does: LogSumExp
// subtracts each output's maximum first (a NaN maximum stays NaN; an infinite one is the result),
// and an empty reduction gives each fold's identity (1, 0, 0, 0, then log 0 = -inf twice).
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

// The offset of the j-th element reduced into the output whose kept dims start at base.
__device__ __forceinline__ int64_t element_offset(const red_args &p, int64_t base, int64_t j)
{
    for (int d = p.rank - 1; d >= 0; d--)
        if (p.reduced[d]) {
            base += (j % p.dims[d]) * p.stride[d];
            j /= p.dims[d];
        }
    return base;
}

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
        double sum = p.kind == KC_REDUCE_PROD ? 1.0 : 0.0, top = -INFINITY;
        float best = p.kind == KC_REDUCE_MAX ? -INFINITY : INFINITY;
        if (p.kind == KC_REDUCE_LOGSUMEXP) // the maximum first, NaN sticking as on the CPU
            for (int64_t j = 0; j < p.count; j++) {
                double v = kc_to_f32(x[element_offset(p, base, j)]);
                if (v > top || v != v)
                    top = v;
            }
        for (int64_t j = 0; j < p.count; j++) {
            float v = kc_to_f32(x[element_offset(p, base, j)]);
            switch (p.kind) {
            case KC_REDUCE_SUM:
            case KC_REDUCE_MEAN:
            case KC_REDUCE_LOGSUM: sum += v; break;
            case KC_REDUCE_MAX:
            case KC_REDUCE_MIN:
                if (p.kind == KC_REDUCE_MAX ? (v > best || v != v) : (v < best || v != v))
                    best = v; // once NaN, only another NaN gets here: NaN stays
                break;
            case KC_REDUCE_PROD: sum *= v; break;
            case KC_REDUCE_L1: sum += fabs((double)v); break;
            case KC_REDUCE_L2:
            case KC_REDUCE_SUMSQ: sum += (double)v * v; break;
            case KC_REDUCE_LOGSUMEXP: sum += exp(v - top); break;
            }
        }
        float out;
        switch (p.kind) {
        case KC_REDUCE_MEAN: out = (float)(sum / (double)p.count); break;
        case KC_REDUCE_MAX:
        case KC_REDUCE_MIN: out = best; break;
        case KC_REDUCE_L2: out = (float)sqrt(sum); break;
        case KC_REDUCE_LOGSUM: out = (float)log(sum); break;
        case KC_REDUCE_LOGSUMEXP: out = (float)(isinf(top) ? top : top + log(sum)); break;
        default: out = (float)sum; break;
        }
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
