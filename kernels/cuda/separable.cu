// SeparableConv: out_act(pointwise(act(depthwise(x, w_dw) + b_dw), w_pw) + b_pw + residual),
// 1-D or 2-D; the residual (MobileNetV2's inverted residual) has y's shape.
//
// One kernel: a block owns a tile of output positions of one image. It first computes the
// depthwise conv of every channel at those positions into shared memory (bias and act applied),
// then each output channel's 1x1 product over all of them (bias and out_act applied), so the
// depthwise result never goes to device memory. Arithmetic in fp32 whatever the storage type.
#include "kernels/cuda/kc_common.cuh"

// Bytes of shared memory a block may use without opting in, and the most positions per tile.
constexpr int64_t SHARED_BYTES = 48 * 1024, MAX_TILE = 32;

struct separable_geom {
    int64_t channels, mid, out_channels, multiplier; // C, C*k, M, k
    int64_t in_h, in_w, out_h, out_w, positions;     // positions = out_h * out_w
    int64_t kh, kw, sh, sw, dh, dw, ph, pw;
    int tile;
};

template <typename T>
__global__ void separable_kernel(const T *x, const T *w_dw, const T *w_pw, const T *b_dw,
                                 const T *b_pw, const T *res, T *y, separable_geom g, kc_act act,
                                 kc_act out_act)
{
    extern __shared__ float buf[]; // [mid][tile]
    const int64_t n = blockIdx.y, t0 = (int64_t)blockIdx.x * g.tile;
    const int count = (int)min((int64_t)g.tile, g.positions - t0);
    // depthwise: consecutive threads take consecutive positions of one channel
    for (int64_t i = threadIdx.x; i < g.mid * count; i += blockDim.x) {
        const int64_t c = i / count, o = t0 + i % count;
        const int64_t oh = o / g.out_w, ow = o % g.out_w;
        const T *xc = x + (n * g.channels + c / g.multiplier) * g.in_h * g.in_w;
        const T *wc = w_dw + c * g.kh * g.kw;
        float s = b_dw ? kc_to_f32(b_dw[c]) : 0.0f;
        for (int64_t a = 0; a < g.kh; a++) {
            const int64_t ih = oh * g.sh - g.ph + a * g.dh;
            if (ih < 0 || ih >= g.in_h)
                continue;
            for (int64_t b = 0; b < g.kw; b++) {
                const int64_t iw = ow * g.sw - g.pw + b * g.dw;
                if (iw >= 0 && iw < g.in_w)
                    s += kc_to_f32(wc[a * g.kw + b]) * kc_to_f32(xc[ih * g.in_w + iw]);
            }
        }
        buf[c * g.tile + i % count] = kc_apply_act(act, s);
    }
    __syncthreads();
    // pointwise: output channel j at each position of the tile
    for (int64_t i = threadIdx.x; i < g.out_channels * count; i += blockDim.x) {
        const int64_t j = i / count, t = i % count;
        const T *wj = w_pw + j * g.mid;
        float s = b_pw ? kc_to_f32(b_pw[j]) : 0.0f;
        for (int64_t c = 0; c < g.mid; c++)
            s += kc_to_f32(wj[c]) * buf[c * g.tile + t];
        const int64_t at = (n * g.out_channels + j) * g.positions + t0 + t;
        if (res) // after the bias, as Add(Conv(., W_pw, B_pw), residual) adds it
            s += kc_to_f32(res[at]);
        y[at] = kc_from_f32<T>(kc_apply_act(out_act, s));
    }
}

// The geometry of a 1-D (rank 3, height 1) or 2-D (rank 4) call.
static bool make_geom(kc_context *ctx, const kc_tensor *x, const kc_tensor *w_dw,
                      const kc_tensor *w_pw, const kc_tensor *y, const kc_separable_params *p,
                      separable_geom *g)
{
    if (x->rank != 3 && x->rank != 4)
        return KC_FAIL(ctx, "separable conv: 1-D or 2-D only, not rank %d", x->rank);
    const bool two = x->rank == 4;
    g->channels = x->dims[1];
    g->mid = w_dw->dims[0];
    g->out_channels = w_pw->dims[0];
    if (g->channels < 1 || g->mid % g->channels != 0 || w_pw->dims[1] != g->mid ||
        y->dims[1] != g->out_channels)
        return KC_FAIL(ctx, "separable conv: channels %lld -> %lld -> %lld do not fit",
                       (long long)g->channels, (long long)g->mid, (long long)g->out_channels);
    if (g->mid > KC_SEPARABLE_MAX_CHANNELS)
        return KC_FAIL(ctx, "separable conv: %lld depthwise channels exceed %d", (long long)g->mid,
                       (int)KC_SEPARABLE_MAX_CHANNELS);
    if (x->dims[0] > 65535)
        return KC_FAIL(ctx, "separable conv: batch %lld exceeds the grid", (long long)x->dims[0]);
    g->multiplier = g->mid / g->channels;
    g->in_h = two ? x->dims[2] : 1;
    g->in_w = x->dims[x->rank - 1];
    g->out_h = two ? y->dims[2] : 1;
    g->out_w = y->dims[y->rank - 1];
    g->positions = g->out_h * g->out_w;
    g->kh = p->kernel[0];
    g->kw = p->kernel[1];
    g->sh = p->strides[0];
    g->sw = p->strides[1];
    g->dh = p->dilations[0];
    g->dw = p->dilations[1];
    g->ph = p->pads[0];
    g->pw = p->pads[1];
    const int64_t tile = SHARED_BYTES / ((int64_t)sizeof(float) * g->mid);
    g->tile = (int)(tile < MAX_TILE ? tile : MAX_TILE); // >= 1: mid <= KC_SEPARABLE_MAX_CHANNELS
    return true;
}

bool kc_separable_conv(kc_context *ctx, const kc_tensor *x, const kc_tensor *w_dw,
                       const kc_tensor *w_pw, const kc_tensor *b_dw, const kc_tensor *b_pw,
                       const kc_tensor *residual, kc_tensor *y, const kc_separable_params *p)
{
    separable_geom g;
    if (!make_geom(ctx, x, w_dw, w_pw, y, p, &g))
        return false;
    if (residual && residual->data && residual->numel != y->numel)
        return KC_FAIL(ctx, "separable conv: the residual has %lld elements, y %lld",
                       (long long)residual->numel, (long long)y->numel);
    if (y->numel == 0)
        return true;
    const dim3 grid((unsigned)((g.positions + g.tile - 1) / g.tile), (unsigned)x->dims[0]);
    const size_t shared = (size_t)g.mid * g.tile * sizeof(float);
    return kc_dispatch_float(ctx, y->dtype, [&]<typename T>() {
        const T *bd = b_dw && b_dw->data ? (const T *)b_dw->data : nullptr;
        const T *bp = b_pw && b_pw->data ? (const T *)b_pw->data : nullptr;
        const T *rs = residual && residual->data ? (const T *)residual->data : nullptr;
        separable_kernel<T><<<grid, KC_THREADS, shared, ctx->stream>>>(
            (const T *)x->data, (const T *)w_dw->data, (const T *)w_pw->data, bd, bp, rs,
            (T *)y->data, g, p->act, p->out_act);
        return KC_LAUNCHED(ctx);
    });
}
