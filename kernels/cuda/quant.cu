// Quantization and integer linear algebra with the CPU reference's semantics
// (kernels/cpu/onnx_quant.c, kernels/cpu/onnx_qlinear.c): QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
//
// Every float operation the CPU does in f32 is done here with the _rn intrinsics, which the
// compiler never contracts into an FMA, so each rounding is the CPU's and the rounding half to
// even that follows (rint, in double as kn_quantize) sees the same value. The integer products are
// summed in int64, exactly, and wrapped to int32 as the CPU does: one thread per output element (a
// plain kernel: cuBLASLt's int8 path wants 4-aligned K and N and has no zero points or u8 x i8).
#include "kernels/cuda/kc_common.cuh"

static __device__ __forceinline__ int64_t load_int(const void *p, kc_elem t, int64_t i)
{
    switch (t) {
    case KC_E_I8: return ((const int8_t *)p)[i];
    case KC_E_U8: return ((const uint8_t *)p)[i];
    case KC_E_I32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

static __device__ __forceinline__ void store_small(void *p, kc_elem t, int64_t i, int64_t v)
{
    if (t == KC_E_I8)
        ((int8_t *)p)[i] = (int8_t)v;
    else
        ((uint8_t *)p)[i] = (uint8_t)v;
}

// kn_quantize: rint half to even (the default rounding mode), plus the zero point, saturated;
// NaN is the zero point.
static __device__ __forceinline__ int64_t q_round(double v, int64_t zp, int64_t lo, int64_t hi)
{
    if (v != v)
        return zp;
    double q = rint(v) + (double)zp;
    if (q < (double)lo)
        return lo;
    return q > (double)hi ? hi : (int64_t)q;
}

static __device__ __forceinline__ int64_t qindex(const kc_qmap &m, int64_t i)
{
    if (m.kind == 0)
        return 0;
    int64_t c = (i / m.inner) % m.axis_dim;
    if (m.kind == 1)
        return c;
    int64_t outer = i / (m.inner * m.axis_dim), in = i % m.inner;
    return (outer * m.scale_axis_dim + c / m.block) * m.inner + in;
}

__global__ void quantize_kernel(const float *x, const float *scale, const void *zp, kc_elem yt,
                                kc_qmap m, int64_t n, void *y)
{
    int64_t lo = yt == KC_E_I8 ? -128 : 0, hi = yt == KC_E_I8 ? 127 : 255;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t q = qindex(m, i);
        float v = __fdiv_rn(x[i], scale[q]);
        store_small(y, yt, i, q_round((double)v, zp ? load_int(zp, yt, q) : 0, lo, hi));
    }
}

__global__ void dequantize_kernel(const void *x, kc_elem xt, const float *scale, const void *zp,
                                  kc_qmap m, int64_t n, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t q = qindex(m, i);
        int64_t v = load_int(x, xt, i) - (zp ? load_int(zp, xt, q) : 0);
        y[i] = __fmul_rn(__ll2float_rn(v), scale[q]);
    }
}

// The range [min(0, min x), max(0, max x)] into range[0..1] (both 0.0f before the launch), NaN
// skipped as the CPU's comparisons skip it. Non-positive floats order as their bits do as
// unsigned, reversed; positive ones as int.
__global__ void range_kernel(const float *x, int64_t n, float *range)
{
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = x[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (lo < 0.0f)
        atomicMax((unsigned *)&range[0], __float_as_uint(lo));
    if (hi > 0.0f)
        atomicMax((int *)&range[1], __float_as_int(hi));
}

// DynamicQuantizeLinear from the range: scale = (hi - lo) / 255, zero point rint(-lo / scale)
// saturated to [0, 255]; scale 0 (an all-zero input) makes the zero point and every y 0.
__global__ void dynamic_quantize_kernel(const float *x, int64_t n, const float *range, uint8_t *y,
                                        float *scale_out, uint8_t *zp_out)
{
    float lo = range[0], hi = range[1];
    float scale = __fdiv_rn(__fsub_rn(hi, lo), 255.0f);
    int64_t zero =
        scale == 0.0f ? 0 : q_round((double)__fsub_rn(0.0f, __fdiv_rn(lo, scale)), 0, 0, 255);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *scale_out = scale;
        *zp_out = (uint8_t)zero;
    }
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = (uint8_t)(scale == 0.0f ? 0 : q_round((double)__fdiv_rn(x[i], scale), zero, 0, 255));
}

// The zero point of a kc_qoperand at index i (per tensor when it has one value).
static __device__ __forceinline__ int64_t zp_at(const kc_qoperand &o, int64_t i)
{
    return o.zp ? load_int(o.zp, o.type, o.zp_n == 1 ? 0 : i) : 0;
}

// Stores accumulator acc of output i: wrapped to int32, or requantized as the CPU's requantize.
static __device__ __forceinline__ void store_acc(const kc_requant *rq, int64_t i, int64_t acc,
                                                 void *y)
{
    int32_t a = (int32_t)(uint32_t)(uint64_t)acc;
    if (!rq) {
        ((int32_t *)y)[i] = a;
        return;
    }
    if (rq->bias)
        a = (int32_t)((uint32_t)a + (uint32_t)rq->bias[i / rq->col_div % rq->cols]);
    int64_t row = i / rq->row_div % rq->rows, col = i / rq->col_div % rq->cols;
    float sa = rq->a_scale[rq->a_scale_n == 1 ? 0 : row];
    float sb = rq->b_scale[rq->b_scale_n == 1 ? 0 : col];
    float scale = __fdiv_rn(__fmul_rn(sa, sb), rq->y_scale[0]);
    int64_t lo = rq->yt == KC_E_I8 ? -128 : 0, hi = rq->yt == KC_E_I8 ? 127 : 255;
    int64_t yz = load_int(rq->y_zp, rq->yt, 0);
    store_small(y, rq->yt, i, q_round((double)__fmul_rn((float)a, scale), yz, lo, hi));
}

template <typename TA, typename TB>
__global__ void int_matmul_kernel(kc_qoperand a, kc_qoperand b, kc_int_matmul p, kc_requant rq,
                                  bool requant, void *y)
{
    int64_t total = p.batches * p.m * p.n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t col = i % p.n, row = (i / p.n) % p.m, t = i / (p.n * p.m);
        int64_t ao = 0, bo = 0, rest = t;
        for (int d = p.batch_rank - 1; d >= 0; d--) {
            int64_t pos = rest % p.batch_dims[d];
            rest /= p.batch_dims[d];
            ao += pos * p.a_strides[d];
            bo += pos * p.b_strides[d];
        }
        const TA *ar = (const TA *)a.data + ao + row * p.k;
        const TB *bc = (const TB *)b.data + bo + col;
        int64_t za = zp_at(a, row), zb = zp_at(b, col), s = 0;
        for (int64_t q = 0; q < p.k; q++)
            s += ((int64_t)ar[q] - za) * ((int64_t)bc[q * p.n] - zb);
        store_acc(requant ? &rq : nullptr, i, s, y);
    }
}

template <typename TX, typename TW>
__global__ void int_conv_kernel(kc_qoperand x, kc_qoperand w, kc_conv3d g, kc_requant rq,
                                bool requant, void *y)
{
    int64_t spatial = g.out[0] * g.out[1] * g.out[2];
    int64_t total = g.batch * g.out_channels * spatial;
    int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
    int64_t in_size = g.in[0] * g.in[1] * g.in[2];
    int64_t ksize = g.kernel[0] * g.kernel[1] * g.kernel[2];
    int64_t zx = zp_at(x, 0);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o2 = i % g.out[2], o1 = (i / g.out[2]) % g.out[1];
        int64_t o0 = (i / (g.out[2] * g.out[1])) % g.out[0];
        int64_t mo = (i / spatial) % g.out_channels, b = i / (spatial * g.out_channels);
        int64_t grp = mo / mg, zw = zp_at(w, mo), s = 0;
        for (int64_t c = 0; c < cg; c++) {
            const TX *xc = (const TX *)x.data + (b * g.in_channels + grp * cg + c) * in_size;
            const TW *wc = (const TW *)w.data + (mo * cg + c) * ksize;
            for (int64_t k0 = 0; k0 < g.kernel[0]; k0++) {
                int64_t i0 = o0 * g.strides[0] + k0 * g.dilations[0] - g.pad_begin[0];
                if (i0 < 0 || i0 >= g.in[0])
                    continue; // padding: x - x_zp is 0 there
                for (int64_t k1 = 0; k1 < g.kernel[1]; k1++) {
                    int64_t i1 = o1 * g.strides[1] + k1 * g.dilations[1] - g.pad_begin[1];
                    if (i1 < 0 || i1 >= g.in[1])
                        continue;
                    for (int64_t k2 = 0; k2 < g.kernel[2]; k2++) {
                        int64_t i2 = o2 * g.strides[2] + k2 * g.dilations[2] - g.pad_begin[2];
                        if (i2 < 0 || i2 >= g.in[2])
                            continue;
                        int64_t xv = xc[(i0 * g.in[1] + i1) * g.in[2] + i2];
                        int64_t wv = wc[(k0 * g.kernel[1] + k1) * g.kernel[2] + k2];
                        s += (xv - zx) * (wv - zw);
                    }
                }
            }
        }
        store_acc(requant ? &rq : nullptr, i, s, y);
    }
}

static bool small_int(kc_elem t)
{
    return t == KC_E_I8 || t == KC_E_U8;
}

// Calls f.template operator()<TA, TB>() with the storage types of two i8/u8 operands.
template <typename F> static bool dispatch_pair(kc_context *ctx, kc_elem a, kc_elem b, F &&f)
{
    if (!small_int(a) || !small_int(b))
        return KC_FAIL(ctx, "integer products take i8 or u8 operands");
    if (a == KC_E_I8)
        return b == KC_E_I8 ? f.template operator()<int8_t, int8_t>()
                            : f.template operator()<int8_t, uint8_t>();
    return b == KC_E_I8 ? f.template operator()<uint8_t, int8_t>()
                        : f.template operator()<uint8_t, uint8_t>();
}

bool kc_quantize_linear(kc_context *ctx, const float *x, const float *scale, const void *zp,
                        kc_elem yt, const kc_qmap *m, int64_t n, void *y)
{
    if (!small_int(yt))
        return KC_FAIL(ctx, "quantize: the output must be i8 or u8");
    if (n == 0)
        return true;
    quantize_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(x, scale, zp, yt, *m, n, y);
    return KC_LAUNCHED(ctx);
}

bool kc_dequantize_linear(kc_context *ctx, const void *x, kc_elem xt, const float *scale,
                          const void *zp, const kc_qmap *m, int64_t n, float *y)
{
    if (!small_int(xt) && xt != KC_E_I32)
        return KC_FAIL(ctx, "dequantize: the input must be i8, u8 or i32");
    if (n == 0)
        return true;
    dequantize_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(x, xt, scale, zp, *m, n, y);
    return KC_LAUNCHED(ctx);
}

bool kc_dynamic_quantize(kc_context *ctx, const float *x, int64_t n, void *y, float *scale,
                         void *zero_point, float *range)
{
    float *r = (float *)kc_workspace(ctx, 2 * sizeof(float));
    if (!r || !KC_CHECK(ctx, cudaMemsetAsync(r, 0, 2 * sizeof(float), ctx->stream)))
        return false;
    if (n > 0) {
        range_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(x, n, r);
        if (!KC_LAUNCHED(ctx))
            return false;
    }
    if (range && !(KC_CHECK(ctx, cudaMemcpyAsync(range, r, 2 * sizeof(float),
                                                 cudaMemcpyDeviceToHost, ctx->stream)) &&
                   KC_CHECK(ctx, cudaStreamSynchronize(ctx->stream))))
        return false;
    dynamic_quantize_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(
        x, n, r, (uint8_t *)y, scale, (uint8_t *)zero_point);
    return KC_LAUNCHED(ctx);
}

bool kc_int_matmul_run(kc_context *ctx, const kc_qoperand *a, const kc_qoperand *b,
                       const kc_int_matmul *p, const kc_requant *rq, void *y)
{
    int64_t total = p->batches * p->m * p->n;
    if (total == 0)
        return true;
    kc_requant none = {};
    return dispatch_pair(ctx, a->type, b->type, [&]<typename TA, typename TB>() {
        int_matmul_kernel<TA, TB><<<kc_blocks(total), KC_THREADS, 0, ctx->stream>>>(
            *a, *b, *p, rq ? *rq : none, rq != nullptr, y);
        return KC_LAUNCHED(ctx);
    });
}

bool kc_int_conv_run(kc_context *ctx, const kc_qoperand *x, const kc_qoperand *w,
                     const kc_conv3d *g, const kc_requant *rq, void *y)
{
    int64_t total = g->batch * g->out_channels * g->out[0] * g->out[1] * g->out[2];
    if (total == 0)
        return true;
    if (g->group < 1 || g->in_channels % g->group || g->out_channels % g->group)
        return KC_FAIL(ctx, "int conv: %lld channels in, %lld out, group %lld",
                       (long long)g->in_channels, (long long)g->out_channels, (long long)g->group);
    kc_requant none = {};
    return dispatch_pair(ctx, x->type, w->type, [&]<typename TX, typename TW>() {
        int_conv_kernel<TX, TW><<<kc_blocks(total), KC_THREADS, 0, ctx->stream>>>(
            *x, *w, *g, rq ? *rq : none, rq != nullptr, y);
        return KC_LAUNCHED(ctx);
    });
}
