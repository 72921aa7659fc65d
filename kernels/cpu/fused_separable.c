/* SeparableConv: y = out_act(pointwise(act(depthwise(X, W_dw) + B_dw), W_pw) + B_pw + residual),
 * the depthwise-separable convolution of MobileNet (with MobileNetV2's residual) and of the
 * Conformer's conv module.
 *
 * One fused loop: per image and per tile of about TILE output positions, the depthwise conv
 * computes every channel at those positions into a buffer of C' x tile values (C' = the
 * depthwise conv's channels), the activation runs on it, and one GEMM of the pointwise weight
 * [M, C'] by that buffer writes the tile's M x tile outputs. The depthwise result never exists
 * whole: the buffer stays in cache, where two separate convs would write and re-read all
 * N x C' x D' values.
 *
 * A tile is whole output rows (the last spatial dim), or a segment of one row when a row is
 * longer than TILE, so that its positions are contiguous in Y. Along a row, a tap reads the input
 * at a fixed stride, and the part of the row inside the input is one range: the depthwise conv is
 * a strided multiply-add over that range per (channel, tap, row), with no per-element bounds
 * check. The input row each (leading tap, row) reads is computed once per tile. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <stdlib.h>

/* Output positions per tile, about: the buffer holds C' x TILE floats (512 channels: 128 KiB). */
enum { TILE = 64 };

typedef struct {
    kn_conv_geom geom;   /* the depthwise conv's */
    int last;            /* the last spatial dim */
    int64_t kernel_w;    /* taps along it */
    int64_t lead_taps;   /* taps over the other spatial dims */
    int64_t in_size;     /* input positions per channel */
    int64_t in_w, out_w; /* the last dim's input and output sizes */
    int64_t rows;        /* output rows: positions / out_w */
    int64_t multiplier;  /* depthwise output channels per input channel */
} separable_geom;

/* A tile: output rows [r0, r0 + nrows), columns [w0, w0 + width) of each. */
typedef struct {
    int64_t r0, nrows, w0, width;
} tile;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* The offset in one input channel of the input row that output row r reads with leading tap
 * kl (an index over the kernel's dims before the last), or -1 when that row is padding. */
static int64_t input_row(const separable_geom *s, int64_t r, int64_t kl)
{
    const kn_conv_geom *g = &s->geom;
    int64_t off = 0, scale = s->in_w;
    for (int d = s->last - 1; d >= 0; d--) {
        int64_t o = r % g->out[d], k = kl % g->kernel[d];
        r /= g->out[d];
        kl /= g->kernel[d];
        int64_t i = o * g->strides[d] - g->pad_begin[d] + k * g->dilations[d];
        if (i < 0 || i >= g->in[d])
            return -1;
        off += i * scale;
        scale *= g->in[d];
    }
    return off;
}

/* buf[c][p] = depthwise channel c at tile position p + B_dw[c] (before the activation). */
static void depthwise_tile(const separable_geom *s, const tile *t, const float *x, const float *w,
                           const float *bias, const int64_t *rows_in, float *buf)
{
    const kn_conv_geom *g = &s->geom;
    const int64_t count = t->nrows * t->width, sw = g->strides[s->last];
    for (int64_t c = 0; c < g->out_channels; c++) {
        const float *xc = x + (c / s->multiplier) * s->in_size;
        float *out = buf + c * count;
        for (int64_t p = 0; p < count; p++)
            out[p] = bias ? bias[c] : 0.0f;
        for (int64_t kl = 0; kl < s->lead_taps; kl++)
            for (int64_t r = 0; r < t->nrows; r++) {
                int64_t base = rows_in[kl * t->nrows + r];
                if (base < 0)
                    continue;
                float *yr = out + r * t->width;
                for (int64_t kw = 0; kw < s->kernel_w; kw++) {
                    /* column ow reads input column ow * sw + shift, inside for ow in [lo, hi) */
                    int64_t shift = kw * g->dilations[s->last] - g->pad_begin[s->last];
                    int64_t lo = shift >= 0 ? 0 : ceil_div(-shift, sw);
                    int64_t hi = s->in_w - 1 - shift >= 0 ? (s->in_w - 1 - shift) / sw + 1 : 0;
                    lo = lo > t->w0 ? lo : t->w0;
                    hi = hi < t->w0 + t->width ? hi : t->w0 + t->width;
                    const float wk = w[c * s->lead_taps * s->kernel_w + kl * s->kernel_w + kw];
                    for (int64_t ow = lo; ow < hi; ow++)
                        yr[ow - t->w0] += wk * xc[base + ow * sw + shift];
                }
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
    s->last = g->nspatial - 1;
    s->multiplier = g->out_channels / g->in_channels;
    s->kernel_w = g->kernel[s->last];
    s->lead_taps = fused_prod(g->kernel, 0, s->last);
    s->in_size = fused_prod(g->in, 0, g->nspatial);
    s->in_w = g->in[s->last];
    s->out_w = g->out[s->last];
    s->rows = fused_prod(g->out, 0, s->last);
    return true;
}

/* The tiles of one image in order: whole rows while a row fits in TILE, else row segments. */
static bool next_tile(const separable_geom *s, tile *t)
{
    if (s->out_w >= TILE) {
        t->nrows = 1;
        t->w0 += t->width;
        if (t->w0 >= s->out_w) {
            t->w0 = 0;
            t->r0++;
        }
        t->width = s->out_w - t->w0 < TILE ? s->out_w - t->w0 : TILE;
    } else {
        t->r0 += t->nrows;
        t->w0 = 0;
        t->width = s->out_w;
        t->nrows = s->rows - t->r0 < TILE / s->out_w ? s->rows - t->r0 : TILE / s->out_w;
    }
    return t->r0 < s->rows;
}

bool kn_cpu_SeparableConv(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *wd = &call->inputs[1], *wp = &call->inputs[2];
    const float *bd = call->ninputs > 3 ? call->inputs[3].data : NULL;
    const float *bp = call->ninputs > 4 ? call->inputs[4].data : NULL;
    const float *res = call->ninputs > 5 ? call->inputs[5].data : NULL; /* Y's shape */
    kn_tensor *y = &call->outputs[0];
    separable_geom s;
    fused_act act, out_act;
    if (!fused_act_read(call, &act) || !fused_act_read_named(call, "out_act", &out_act) ||
        !read_geom(call, &s))
        return false;
    int64_t mid = s.geom.out_channels, m = wp->dims[0], positions = s.rows * s.out_w;
    if (wp->dims[1] != mid || y->dims[1] != m)
        return kn_fail(
            call, "the pointwise weight [%lld, %lld] does not take %lld channels to %lld",
            (long long)wp->dims[0], (long long)wp->dims[1], (long long)mid, (long long)y->dims[1]);
    if (y->numel == 0)
        return true;
    /* a tile holds at most TILE positions and TILE rows */
    float *buf = malloc((size_t)(mid * TILE) * sizeof *buf);
    int64_t *rows_in = malloc((size_t)(s.lead_taps * TILE) * sizeof *rows_in);
    if (!buf || !rows_in) {
        free(buf);
        free(rows_in);
        return kn_fail(call, "no memory for a tile of %lld channels", (long long)mid);
    }
    for (int64_t n = 0; n < s.geom.batch; n++) {
        const float *xn = (const float *)x->data + n * s.geom.in_channels * s.in_size;
        float *yn = (float *)y->data + n * m * positions;
        const float *rn = res ? res + n * m * positions : NULL;
        tile t = {.r0 = 0, .nrows = 0, .w0 = 0, .width = 0};
        while (next_tile(&s, &t)) {
            int64_t count = t.nrows * t.width, p0 = t.r0 * s.out_w + t.w0;
            for (int64_t kl = 0; kl < s.lead_taps; kl++)
                for (int64_t r = 0; r < t.nrows; r++)
                    rows_in[kl * t.nrows + r] = input_row(&s, t.r0 + r, kl);
            depthwise_tile(&s, &t, xn, wd->data, bd, rows_in, buf);
            fused_act_apply(&act, buf, mid * count);
            /* Y[:, p0 .. p0 + count] = W_pw [M, C'] @ buf [C', count] */
            kn_gemm_f32(false, false, m, count, mid, 1.0f, wp->data, mid, buf, count, 0.0f, yn + p0,
                        positions);
            for (int64_t j = 0; j < m; j++) {
                float *row = yn + j * positions + p0;
                for (int64_t p = 0; bp && p < count; p++)
                    row[p] += bp[j];
                /* after the bias, as Add(Conv(., W_pw, B_pw), residual) adds it */
                for (int64_t p = 0; rn && p < count; p++)
                    row[p] += rn[j * positions + p0 + p];
                fused_act_apply(&out_act, row, count);
            }
        }
    }
    free(buf);
    free(rows_in);
    return true;
}
