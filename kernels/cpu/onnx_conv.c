/* Conv and ConvTranspose, 1-D to 3-D, with pads, strides, dilations, groups and auto_pad.
 *
 * Conv is im2col + one cblas_sgemm per image and group (kn_conv_f32 in cpu_util.c).
 * ConvTranspose is its adjoint: one GEMM W^T @ X per image and group gives, for every input
 * position, the contribution to each (output channel, kernel offset); col2im then adds those into
 * the output at position i*stride - pad + k*dilation. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

bool kn_cpu_Conv(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *w = &call->inputs[1];
    const kn_tensor *b = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    kn_conv_geom g;
    if (x->dtype != IR_F32 || w->dtype != IR_F32)
        return kn_fail(call, "float inputs only");
    if (!kn_conv_geom_init(call, x, w, &call->outputs[0], &g))
        return false;
    if (b && b->numel != g.out_channels)
        return kn_fail(call, "bias has %lld values for %lld output channels", (long long)b->numel,
                       (long long)g.out_channels);
    return kn_conv_f32(call, &g, x->data, w->data, b ? b->data : NULL, call->outputs[0].data);
}

/* ---- ConvTranspose ------------------------------------------------------------------------- */

typedef kn_tconv_geom tgeom;

/* One spatial axis: out = s*(in-1) + output_padding + extent - pads; or, when an output size is
 * requested (output_shape, or in*s for SAME_*), the pads that give it. ONNX splits an odd total
 * with the extra pad at the end for SAME_UPPER and at the beginning otherwise. A requested size
 * beyond the natural one leaves extra positions at the end (pads clamped at 0, as ONNX Runtime). */
static bool taxis(const char *auto_pad, int64_t in, int64_t k, int64_t s, int64_t d, int64_t opad,
                  int64_t requested, int64_t *pb, int64_t *pe, int64_t *out)
{
    int64_t natural = s * (in - 1) + opad + (k - 1) * d + 1;
    if (requested < 0 && strncmp(auto_pad, "SAME_", 5) == 0)
        requested = in * s;
    if (requested >= 0) {
        int64_t total = natural > requested ? natural - requested : 0;
        *pb = strcmp(auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
        *pe = total - *pb;
        *out = requested;
    } else {
        if (strcmp(auto_pad, "VALID") == 0)
            *pb = *pe = 0;
        *out = natural - *pb - *pe;
    }
    return *out >= 1;
}

/* Reads the INTS attribute `name` into out[0..ns) when present, `dflt` everywhere when absent. */
static bool spatial_attr(const kn_call *call, const char *name, int ns, int64_t dflt, int64_t *out)
{
    const int64_t *v;
    uint32_t n = ir_get_ints(call->node, name, &v);
    if (n && n != (uint32_t)ns)
        return kn_fail(call, "%s has %u values for %d spatial dims", name, n, ns);
    for (int i = 0; i < ns; i++)
        out[i] = n ? v[i] : dflt;
    return true;
}

static bool tgeom_channels(const kn_call *call, const kn_tensor *x, const kn_tensor *w, tgeom *t)
{
    t->batch = x->dims[0];
    t->in_channels = x->dims[1];
    t->group = ir_get_int(call->node, "group");
    if (t->group < 1 || w->dims[0] != t->in_channels || t->in_channels % t->group)
        return kn_fail(call, "input has %lld channels, weight [%lld, %lld, ...], group %lld",
                       (long long)t->in_channels, (long long)w->dims[0], (long long)w->dims[1],
                       (long long)t->group);
    t->out_channels = w->dims[1] * t->group;
    return true;
}

static bool tgeom_init(const kn_call *call, const kn_tensor *x, const kn_tensor *w, tgeom *t)
{
    int ns = x->rank - 2;
    if (ns < 1 || ns > 3 || w->rank != x->rank)
        return kn_fail(call, "input rank %d and weight rank %d: 1-D to 3-D only", x->rank,
                       w->rank);
    memset(t, 0, sizeof *t);
    int64_t ks[3], st[3], dl[3], op[3], pb[3], pe[3], os[3];
    const int64_t *pads, *oshape;
    uint32_t np = ir_get_ints(call->node, "pads", &pads);
    uint32_t nos = ir_get_ints(call->node, "output_shape", &oshape);
    if (!tgeom_channels(call, x, w, t) || !spatial_attr(call, "kernel_shape", ns, -1, ks) ||
        !spatial_attr(call, "strides", ns, 1, st) || !spatial_attr(call, "dilations", ns, 1, dl) ||
        !spatial_attr(call, "output_padding", ns, 0, op))
        return false;
    if ((np && np != 2u * (uint32_t)ns) || (nos && nos != (uint32_t)ns && nos != (uint32_t)ns + 2))
        return kn_fail(call, "pads or output_shape do not fit %d spatial dims", ns);
    int lead = 3 - ns;
    for (int i = 0; i < 3; i++) { /* unused leading dims: size 1, kernel 1 */
        t->in[i] = t->out[i] = t->k[i] = t->s[i] = t->d[i] = 1;
        t->pad[i] = 0;
    }
    const char *auto_pad = ir_get_string(call->node, "auto_pad");
    for (int i = 0; i < ns; i++) {
        int64_t k = w->dims[2 + i], out;
        if (ks[i] != -1 && ks[i] != k)
            return kn_fail(call, "kernel_shape %lld differs from the weight's %lld",
                           (long long)ks[i], (long long)k);
        pb[i] = np ? pads[i] : 0;
        pe[i] = np ? pads[ns + i] : 0;
        if (st[i] < 1 || dl[i] < 1 || op[i] < 0 || pb[i] < 0 || pe[i] < 0)
            return kn_fail(call, "strides and dilations must be >= 1, pads and output_padding >= 0");
        os[i] = nos ? oshape[nos - (uint32_t)ns + (uint32_t)i] : -1;
        if (!taxis(auto_pad, x->dims[2 + i], k, st[i], dl[i], op[i], os[i], &pb[i], &pe[i], &out))
            return kn_fail(call, "spatial dim %d would have no output", i);
        t->in[lead + i] = x->dims[2 + i];
        t->out[lead + i] = out;
        t->k[lead + i] = k;
        t->s[lead + i] = st[i];
        t->d[lead + i] = dl[i];
        t->pad[lead + i] = pb[i];
    }
    const kn_tensor *y = &call->outputs[0];
    bool fits = y->rank == x->rank && y->dims[0] == t->batch && y->dims[1] == t->out_channels;
    for (int i = 0; i < ns && fits; i++)
        fits = y->dims[2 + i] == t->out[lead + i];
    if (!fits)
        return kn_fail(call, "the output was allocated with another shape than the result's");
    return true;
}

bool kn_tconv_geom_init(const kn_call *call, const kn_tensor *x, const kn_tensor *w,
                        kn_tconv_geom *t)
{
    return tgeom_init(call, x, w, t);
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* dst[i*s + off] += src[i] for the i in [0, n) that land inside [0, out). */
static void col2im_line(const float *src, int64_t n, int64_t off, int64_t s, float *dst,
                        int64_t out)
{
    int64_t lo = off >= 0 ? 0 : ceil_div(-off, s);
    int64_t hi = out - off <= 0 ? 0 : ceil_div(out - off, s);
    if (hi > n)
        hi = n;
    for (int64_t i = lo; i < hi; i++)
        dst[i * s + off] += src[i];
}

/* Adds col[(m, kd, kh, kw), (id, ih, iw)] into y[m, id*s - p + kd*d, ...]. */
static void col2im(const float *col, int64_t channels, const tgeom *t, float *y)
{
    int64_t in_sp = t->in[0] * t->in[1] * t->in[2];
    for (int64_t m = 0; m < channels; m++)
        for (int64_t kd = 0; kd < t->k[0]; kd++)
            for (int64_t kh = 0; kh < t->k[1]; kh++)
                for (int64_t kw = 0; kw < t->k[2]; kw++) {
                    const float *row =
                        col + (((m * t->k[0] + kd) * t->k[1] + kh) * t->k[2] + kw) * in_sp;
                    for (int64_t id = 0; id < t->in[0]; id++) {
                        int64_t od = id * t->s[0] - t->pad[0] + kd * t->d[0];
                        if (od < 0 || od >= t->out[0])
                            continue;
                        for (int64_t ih = 0; ih < t->in[1]; ih++) {
                            int64_t oh = ih * t->s[1] - t->pad[1] + kh * t->d[1];
                            if (oh < 0 || oh >= t->out[1])
                                continue;
                            float *dst = y + ((m * t->out[0] + od) * t->out[1] + oh) * t->out[2];
                            col2im_line(row + (id * t->in[1] + ih) * t->in[2], t->in[2],
                                        kw * t->d[2] - t->pad[2], t->s[2], dst, t->out[2]);
                        }
                    }
                }
}

bool kn_cpu_ConvTranspose(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *w = &call->inputs[1];
    const kn_tensor *b = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    float *y = call->outputs[0].data;
    tgeom t;
    if (x->dtype != IR_F32 || w->dtype != IR_F32)
        return kn_fail(call, "float inputs only");
    if (!tgeom_init(call, x, w, &t))
        return false;
    if (b && b->numel != t.out_channels)
        return kn_fail(call, "bias has %lld values for %lld output channels", (long long)b->numel,
                       (long long)t.out_channels);
    int64_t in_sp = t.in[0] * t.in[1] * t.in[2], out_sp = t.out[0] * t.out[1] * t.out[2];
    int64_t cg = t.in_channels / t.group, mg = t.out_channels / t.group;
    int64_t rows = mg * t.k[0] * t.k[1] * t.k[2]; /* (output channel, kernel offset) pairs */
    size_t bytes;
    float *col = NULL;
    if (rows * in_sp > 0 &&
        (__builtin_mul_overflow((size_t)rows, (size_t)in_sp * sizeof(float), &bytes) ||
         !(col = malloc(bytes))))
        return kn_fail(call, "cannot allocate the %lld x %lld column buffer", (long long)rows,
                       (long long)in_sp);
    const float *wd = w->data, *bias = b ? b->data : NULL;
    for (int64_t n = 0; n < t.batch; n++) {
        float *yn = y + n * t.out_channels * out_sp;
        for (int64_t m = 0; m < t.out_channels; m++)
            for (int64_t i = 0; i < out_sp; i++)
                yn[m * out_sp + i] = bias ? bias[m] : 0.0f;
        for (int64_t g = 0; g < t.group && col; g++) {
            const float *xg = (const float *)x->data + (n * t.in_channels + g * cg) * in_sp;
            /* col = W_g^T @ X_g, W_g being [C/group, (M/group) * kernel] */
            kn_gemm_f32(true, false, rows, in_sp, cg, 1.0f, wd + g * cg * rows, rows, xg, in_sp,
                        0.0f, col, in_sp);
            col2im(col, mg, &t, yn + g * mg * out_sp);
        }
    }
    free(col);
    return true;
}
