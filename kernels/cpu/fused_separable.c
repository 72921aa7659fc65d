/* SeparableConv: y = out_act(pointwise(act(depthwise(X, W_dw) + B_dw), W_pw) + B_pw), the
 * depthwise-separable convolution of MobileNet and of the Conformer's conv module.
 *
 * One fused loop: per image and per tile of TILE output positions, the depthwise conv computes
 * every channel at those positions into a buffer of C' x TILE values (C' = the depthwise
 * conv's channels), the activation runs on it, and one GEMM of the pointwise weight [M, C'] by
 * that buffer writes the tile's M x TILE outputs. The depthwise result never exists whole: the
 * buffer stays in cache, where two separate convs would write and re-read all N x C' x D' values.
 * The input offsets of each kernel tap are computed once per tile and shared by all channels. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <stdlib.h>

/* Output positions per tile: the buffer holds C' x TILE floats (512 channels: 128 KiB). */
enum { TILE = 64 };

typedef struct {
    kn_conv_geom geom;  /* the depthwise conv's */
    int64_t taps;       /* kernel elements */
    int64_t in_size;    /* input positions per channel */
    int64_t out_size;   /* output positions per channel */
    int64_t multiplier; /* depthwise output channels per input channel */
} separable_geom;

/* The offset in one input channel of each tap at each position t0 .. t0 + count of the tile, -1
 * where the tap falls in the padding. */
static void tap_offsets(const separable_geom *s, int64_t t0, int64_t count, int64_t *offs)
{
    const kn_conv_geom *g = &s->geom;
    int ns = g->nspatial;
    for (int64_t t = 0; t < count; t++) {
        int64_t o = t0 + t, base[KN_CONV_MAX_SPATIAL];
        for (int d = ns - 1; d >= 0; d--) { /* the position's coordinates, then its window start */
            base[d] = (o % g->out[d]) * g->strides[d] - g->pad_begin[d];
            o /= g->out[d];
        }
        for (int64_t k = 0; k < s->taps; k++) {
            int64_t rest = k, off = 0, scale = 1;
            bool inside = true;
            for (int d = ns - 1; d >= 0; d--) {
                int64_t i = base[d] + (rest % g->kernel[d]) * g->dilations[d];
                rest /= g->kernel[d];
                inside = inside && i >= 0 && i < g->in[d];
                off += i * scale;
                scale *= g->in[d];
            }
            offs[t * s->taps + k] = inside ? off : -1;
        }
    }
}

/* buf[c][t] = act(depthwise channel c at tile position t + B_dw[c]). */
static void depthwise_tile(const separable_geom *s, const float *x, const float *w,
                           const float *bias, const int64_t *offs, int64_t count, float *buf)
{
    int64_t channels = s->geom.out_channels;
    for (int64_t c = 0; c < channels; c++) {
        const float *xc = x + (c / s->multiplier) * s->in_size, *wc = w + c * s->taps;
        float *row = buf + c * count;
        for (int64_t t = 0; t < count; t++) {
            const int64_t *o = offs + t * s->taps;
            float sum = bias ? bias[c] : 0.0f;
            for (int64_t k = 0; k < s->taps; k++)
                if (o[k] >= 0)
                    sum += wc[k] * xc[o[k]];
            row[t] = sum;
        }
    }
}

static bool read_geom(const kn_call *call, separable_geom *s)
{
    const kn_tensor *x = &call->inputs[0], *wd = &call->inputs[1], *y = &call->outputs[0];
    /* the depthwise conv's output: its channels, the fused output's spatial dims */
    kn_tensor mid = *y;
    mid.dims[1] = wd->dims[0];
    if (!kn_conv_geom_init(call, x, wd, &mid, &s->geom))
        return false;
    const kn_conv_geom *g = &s->geom;
    if (g->group != g->in_channels)
        return kn_fail(call, "group %lld is not the input's %lld channels", (long long)g->group,
                       (long long)g->in_channels);
    s->multiplier = g->out_channels / g->in_channels;
    s->taps = fused_prod(g->kernel, 0, g->nspatial);
    s->in_size = fused_prod(g->in, 0, g->nspatial);
    s->out_size = fused_prod(g->out, 0, g->nspatial);
    return true;
}

bool kn_cpu_SeparableConv(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *wd = &call->inputs[1], *wp = &call->inputs[2];
    const float *bd = call->ninputs > 3 ? call->inputs[3].data : NULL;
    const float *bp = call->ninputs > 4 ? call->inputs[4].data : NULL;
    kn_tensor *y = &call->outputs[0];
    separable_geom s;
    fused_act act, out_act;
    if (!fused_act_read(call, &act) || !fused_act_read_named(call, "out_act", &out_act) ||
        !read_geom(call, &s))
        return false;
    int64_t mid = s.geom.out_channels, m = wp->dims[0], positions = s.out_size;
    if (wp->dims[1] != mid || y->dims[1] != m)
        return kn_fail(
            call, "the pointwise weight [%lld, %lld] does not take %lld channels to %lld",
            (long long)wp->dims[0], (long long)wp->dims[1], (long long)mid, (long long)y->dims[1]);
    if (y->numel == 0)
        return true;
    float *buf = malloc((size_t)(mid * TILE) * sizeof *buf);
    int64_t *offs = malloc((size_t)(s.taps * TILE) * sizeof *offs);
    if (!buf || !offs) {
        free(buf);
        free(offs);
        return kn_fail(call, "no memory for a tile of %lld channels", (long long)mid);
    }
    for (int64_t n = 0; n < s.geom.batch; n++) {
        const float *xn = (const float *)x->data + n * s.geom.in_channels * s.in_size;
        float *yn = (float *)y->data + n * m * positions;
        for (int64_t t0 = 0; t0 < positions; t0 += TILE) {
            int64_t count = positions - t0 < TILE ? positions - t0 : TILE;
            tap_offsets(&s, t0, count, offs);
            depthwise_tile(&s, xn, wd->data, bd, offs, count, buf);
            fused_act_apply(&act, buf, mid * count);
            /* Y[:, t0 .. t0 + count] = W_pw [M, C'] @ buf [C', count] */
            kn_gemm_f32(false, false, m, count, mid, 1.0f, wp->data, mid, buf, count, 0.0f, yn + t0,
                        positions);
            for (int64_t j = 0; j < m; j++) {
                float *row = yn + j * positions + t0;
                for (int64_t t = 0; bp && t < count; t++)
                    row[t] += bp[j];
                fused_act_apply(&out_act, row, count);
            }
        }
    }
    free(buf);
    free(offs);
    return true;
}
