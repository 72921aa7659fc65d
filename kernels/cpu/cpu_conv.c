/* Sliding windows and convolution for the CPU kernels (kernels/cpu/cpu_util.h): window geometry,
 * im2col and GEMM. */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sliding windows and convolution ------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

bool kn_window_axis(const char *auto_pad, int64_t in, int64_t kernel, int64_t stride,
                    int64_t dilation, bool ceil_mode, int64_t *pad_begin, int64_t *pad_end,
                    int64_t *out)
{
    int64_t extent = (kernel - 1) * dilation + 1; /* the dilated kernel's span */
    if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
        *out = ceil_div(in, stride);
        int64_t total = (*out - 1) * stride + extent - in;
        if (total < 0)
            total = 0;
        /* an odd total puts the extra pad at the end (UPPER) or the beginning (LOWER) */
        bool upper = auto_pad[5] == 'U';
        *pad_begin = upper ? total / 2 : total - total / 2;
        *pad_end = total - *pad_begin;
        return *out >= 1;
    }
    if (strcmp(auto_pad, "VALID") == 0)
        *pad_begin = *pad_end = 0;
    int64_t span = in + *pad_begin + *pad_end - extent;
    if (span < 0)
        return false;
    *out = (ceil_mode ? ceil_div(span, stride) : span / stride) + 1;
    /* with ceil_mode, a last window that would start inside the end padding is dropped */
    if (ceil_mode && (*out - 1) * stride >= in + *pad_begin)
        (*out)--;
    return *out >= 1;
}

bool kn_conv_geom_init(const kn_call *call, const kn_tensor *x, const kn_tensor *w,
                       const kn_tensor *y, kn_conv_geom *g)
{
    const ir_node *n = call->node;
    int ns = x->rank - 2;
    if (ns < 1 || ns > KN_CONV_MAX_SPATIAL)
        return kn_fail(call, "input rank %d: 1-D, 2-D or 3-D convolutions only", x->rank);
    if (w->rank != x->rank)
        return kn_fail(call, "weight rank %d differs from input rank %d", w->rank, x->rank);
    memset(g, 0, sizeof *g);
    g->nspatial = ns;
    g->batch = x->dims[0];
    g->in_channels = x->dims[1];
    g->out_channels = w->dims[0];
    g->group = ir_get_int(n, "group");
    if (g->group < 1 || g->in_channels != w->dims[1] * g->group || g->out_channels % g->group)
        return kn_fail(call, "input has %lld channels, weight [%lld, %lld, ...], group %lld",
                       (long long)g->in_channels, (long long)w->dims[0], (long long)w->dims[1],
                       (long long)g->group);

    const int64_t *ks, *st, *dl, *pd;
    uint32_t nks = ir_get_ints(n, "kernel_shape", &ks), nst = ir_get_ints(n, "strides", &st);
    uint32_t ndl = ir_get_ints(n, "dilations", &dl), npd = ir_get_ints(n, "pads", &pd);
    if ((nks && nks != (uint32_t)ns) || (nst && nst != (uint32_t)ns) ||
        (ndl && ndl != (uint32_t)ns) || (npd && npd != 2u * (uint32_t)ns))
        return kn_fail(call, "kernel_shape, strides, dilations or pads do not fit %d spatial dims",
                       ns);
    const char *auto_pad = ir_get_string(n, "auto_pad");
    for (int i = 0; i < ns; i++) {
        g->in[i] = x->dims[2 + i];
        g->kernel[i] = w->dims[2 + i];
        if (nks && ks[i] != g->kernel[i])
            return kn_fail(call, "kernel_shape %lld differs from the weight's %lld",
                           (long long)ks[i], (long long)g->kernel[i]);
        g->strides[i] = nst ? st[i] : 1;
        g->dilations[i] = ndl ? dl[i] : 1;
        g->pad_begin[i] = npd ? pd[i] : 0;
        g->pad_end[i] = npd ? pd[ns + i] : 0;
        if (g->strides[i] < 1 || g->dilations[i] < 1 || g->pad_begin[i] < 0 || g->pad_end[i] < 0)
            return kn_fail(call, "strides and dilations must be >= 1 and pads >= 0");
        if (!kn_window_axis(auto_pad, g->in[i], g->kernel[i], g->strides[i], g->dilations[i],
                            false, &g->pad_begin[i], &g->pad_end[i], &g->out[i]))
            return kn_fail(call, "the kernel does not fit spatial dim %d of size %lld", i,
                           (long long)g->in[i]);
    }
    bool fits = y->rank == x->rank && y->dims[0] == g->batch && y->dims[1] == g->out_channels;
    for (int i = 0; i < ns && fits; i++)
        fits = y->dims[2 + i] == g->out[i];
    if (!fits)
        return kn_fail(call, "the output was allocated with another shape than the convolution's");
    return true;
}

/* A convolution's geometry padded to 3 spatial dims by leading dims of size 1. */
typedef struct {
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
} geom3;

static geom3 to_geom3(const kn_conv_geom *g)
{
    geom3 t;
    int lead = 3 - g->nspatial;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        t.in[i] = j >= 0 ? g->in[j] : 1;
        t.out[i] = j >= 0 ? g->out[j] : 1;
        t.k[i] = j >= 0 ? g->kernel[j] : 1;
        t.s[i] = j >= 0 ? g->strides[j] : 1;
        t.d[i] = j >= 0 ? g->dilations[j] : 1;
        t.p[i] = j >= 0 ? g->pad_begin[j] : 0;
    }
    return t;
}

/* One row of the column matrix along the innermost axis: dst[o] = src[o*s + off] where that is
 * inside [0, n), else 0. */
static void im2col_line(const float *src, int64_t n, int64_t off, int64_t s, float *dst,
                        int64_t out)
{
    int64_t lo = off >= 0 ? 0 : ceil_div(-off, s);
    int64_t hi = n - off <= 0 ? 0 : ceil_div(n - off, s);
    if (lo > out)
        lo = out;
    if (hi > out)
        hi = out;
    if (hi < lo)
        hi = lo;
    for (int64_t o = 0; o < lo; o++)
        dst[o] = 0;
    if (s == 1)
        memcpy(dst + lo, src + lo + off, (size_t)(hi - lo) * sizeof *dst);
    else
        for (int64_t o = lo; o < hi; o++)
            dst[o] = src[o * s + off];
    for (int64_t o = hi; o < out; o++)
        dst[o] = 0;
}

/* col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...] or 0 in the padding. */
static void im2col(const float *x, int64_t channels, const geom3 *t, float *col)
{
    int64_t out_sp = t->out[0] * t->out[1] * t->out[2];
    for (int64_t c = 0; c < channels; c++)
        for (int64_t kd = 0; kd < t->k[0]; kd++)
            for (int64_t kh = 0; kh < t->k[1]; kh++)
                for (int64_t kw = 0; kw < t->k[2]; kw++) {
                    float *row = col + (((c * t->k[0] + kd) * t->k[1] + kh) * t->k[2] + kw) * out_sp;
                    for (int64_t od = 0; od < t->out[0]; od++) {
                        int64_t id = od * t->s[0] - t->p[0] + kd * t->d[0];
                        for (int64_t oh = 0; oh < t->out[1]; oh++) {
                            int64_t ih = oh * t->s[1] - t->p[1] + kh * t->d[1];
                            float *dst = row + (od * t->out[1] + oh) * t->out[2];
                            if (id < 0 || id >= t->in[0] || ih < 0 || ih >= t->in[1]) {
                                memset(dst, 0, (size_t)t->out[2] * sizeof *dst);
                                continue;
                            }
                            const float *src = x + ((c * t->in[0] + id) * t->in[1] + ih) * t->in[2];
                            im2col_line(src, t->in[2], kw * t->d[2] - t->p[2], t->s[2], dst,
                                        t->out[2]);
                        }
                    }
                }
}

/* A 1x1 kernel with stride 1 and no padding reads the input as it is stored. */
static bool is_pointwise(const kn_conv_geom *g)
{
    for (int i = 0; i < g->nspatial; i++)
        if (g->kernel[i] != 1 || g->strides[i] != 1 || g->pad_begin[i] || g->pad_end[i])
            return false;
    return true;
}

bool kn_conv_f32(const kn_call *call, const kn_conv_geom *g, const float *x, const float *w,
                 const float *bias, float *y)
{
    geom3 t = to_geom3(g);
    int64_t in_sp = t.in[0] * t.in[1] * t.in[2], out_sp = t.out[0] * t.out[1] * t.out[2];
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    int64_t rows = cg * t.k[0] * t.k[1] * t.k[2]; /* one weight row: C/group x kernel */
    bool pointwise = is_pointwise(g);
    float *col = NULL;
    if (!pointwise && rows * out_sp > 0) {
        size_t bytes;
        if (__builtin_mul_overflow((size_t)rows, (size_t)out_sp * sizeof(float), &bytes) ||
            !(col = malloc(bytes)))
            return kn_fail(call, "cannot allocate the %lld x %lld column buffer", (long long)rows,
                           (long long)out_sp);
    }
    for (int64_t nb = 0; nb < g->batch; nb++) {
        for (int64_t gr = 0; gr < g->group; gr++) {
            const float *xg = x + (nb * g->in_channels + gr * cg) * in_sp;
            float *yg = y + (nb * g->out_channels + gr * mg) * out_sp;
            const float *b = xg;
            if (!pointwise) {
                im2col(xg, cg, &t, col);
                b = col;
            }
            kn_gemm_f32(false, false, mg, out_sp, rows, 1.0f, w + gr * mg * rows, rows, b, out_sp,
                        0.0f, yg, out_sp);
        }
        if (bias)
            for (int64_t m = 0; m < g->out_channels; m++) {
                float *ym = y + (nb * g->out_channels + m) * out_sp;
                for (int64_t i = 0; i < out_sp; i++)
                    ym[i] += bias[m];
            }
    }
    free(col);
    return true;
}
