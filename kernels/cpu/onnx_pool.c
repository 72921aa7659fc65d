/* MaxPool (with the optional Indices output), AveragePool and GlobalAveragePool, 1-D to 3-D.
 *
 * A window position is o*stride - pad_begin + k*dilation. MaxPool and AveragePool skip positions
 * outside the input; AveragePool with count_include_pad=1 still counts those inside the explicit
 * padding (not those beyond it that ceil_mode adds), as ONNX Runtime does. */
#include "kernels/cpu/cpu_util.h"

#include <float.h>
#include <string.h>

/* Pooling geometry padded to 3 spatial dims by leading dims of size 1. */
typedef struct {
    int64_t planes;   /* N * C */
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
} pgeom;

static bool read_spatial(const kn_call *call, const char *name, int ns, int64_t dflt, int64_t *out)
{
    const int64_t *v;
    uint32_t n = ir_get_ints(call->node, name, &v);
    if (n && n != (uint32_t)ns)
        return kn_fail(call, "%s has %u values for %d spatial dims", name, n, ns);
    for (int i = 0; i < ns; i++)
        out[i] = n ? v[i] : dflt;
    return true;
}

static bool pgeom_init(const kn_call *call, bool has_dilations, pgeom *g)
{
    const kn_tensor *x = &call->inputs[0], *y = &call->outputs[0];
    int ns = x->rank - 2;
    if (ns < 1 || ns > 3)
        return kn_fail(call, "input must be [N, C, spatial...] with 1 to 3 spatial dims");
    int64_t ks[3], st[3], dl[3] = {1, 1, 1};
    const int64_t *pads;
    uint32_t np = ir_get_ints(call->node, "pads", &pads);
    if (!read_spatial(call, "kernel_shape", ns, -1, ks) || !read_spatial(call, "strides", ns, 1, st) ||
        (has_dilations && !read_spatial(call, "dilations", ns, 1, dl)))
        return false;
    if (np && np != 2u * (uint32_t)ns)
        return kn_fail(call, "pads has %u values for %d spatial dims", np, ns);
    const char *auto_pad = ir_get_string(call->node, "auto_pad");
    bool ceil_mode = ir_get_int(call->node, "ceil_mode") != 0;
    int lead = 3 - ns;
    g->planes = x->dims[0] * x->dims[1];
    for (int i = 0; i < 3; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
        g->pb[i] = g->pe[i] = 0;
    }
    for (int i = 0; i < ns; i++) {
        int j = lead + i;
        g->in[j] = x->dims[2 + i];
        g->k[j] = ks[i];
        g->s[j] = st[i];
        g->d[j] = dl[i];
        g->pb[j] = np ? pads[i] : 0;
        g->pe[j] = np ? pads[ns + i] : 0;
        if (ks[i] < 1 || st[i] < 1 || dl[i] < 1 || g->pb[j] < 0 || g->pe[j] < 0)
            return kn_fail(call, "kernel_shape, strides and dilations must be >= 1, pads >= 0");
        if (!kn_window_axis(auto_pad, g->in[j], ks[i], st[i], dl[i], ceil_mode, &g->pb[j],
                            &g->pe[j], &g->out[j]))
            return kn_fail(call, "the window does not fit spatial dim %d of size %lld", i,
                           (long long)g->in[j]);
    }
    bool fits = y->rank == x->rank && y->dims[0] == x->dims[0] && y->dims[1] == x->dims[1];
    for (int i = 0; i < ns && fits; i++)
        fits = y->dims[2 + i] == g->out[lead + i];
    return fits || kn_fail(call, "the output was allocated with another shape than the result's");
}

/* Runs BODY for every window position of output position (od, oh, ow), with id, ih, iw bound to
 * its input coordinates (which may lie outside the input). */
#define FOR_WINDOW(g, od, oh, ow, BODY)                                                            \
    for (int64_t kd = 0; kd < (g)->k[0]; kd++) {                                                   \
        int64_t id = (od) * (g)->s[0] - (g)->pb[0] + kd * (g)->d[0];                               \
        for (int64_t kh = 0; kh < (g)->k[1]; kh++) {                                               \
            int64_t ih = (oh) * (g)->s[1] - (g)->pb[1] + kh * (g)->d[1];                           \
            for (int64_t kw = 0; kw < (g)->k[2]; kw++) {                                           \
                int64_t iw = (ow) * (g)->s[2] - (g)->pb[2] + kw * (g)->d[2];                       \
                BODY                                                                               \
            }                                                                                      \
        }                                                                                          \
    }

static bool inside(int64_t i, int64_t n) { return i >= 0 && i < n; }

/* Whether position i is inside the input or its explicit padding on an axis. */
static bool inside_padded(int64_t i, int64_t n, int64_t pb, int64_t pe) { return i >= -pb && i < n + pe; }

/* ---- MaxPool ------------------------------------------------------------------------------- */

/* The flat index ONNX reports for the max of plane p at (id, ih, iw): row-major over the whole
 * input, or with the spatial dims in column-major order for storage_order=1 (2-D). */
static int64_t flat_index(const pgeom *g, int64_t p, int64_t id, int64_t ih, int64_t iw,
                          bool column_major)
{
    int64_t plane = g->in[0] * g->in[1] * g->in[2];
    if (column_major)
        return p * plane + (iw * g->in[1] + ih) * g->in[0] + id;
    return p * plane + (id * g->in[1] + ih) * g->in[2] + iw;
}

/* The max of each window and (optionally) its flat index; the first of equal maxima wins. A
 * window entirely in the padding gives the lowest value and index -1. */
#define MAXPOOL_LOOP(T, lowest)                                                                    \
    do {                                                                                           \
        const T *x = call->inputs[0].data;                                                         \
        T *y = call->outputs[0].data;                                                              \
        int64_t o = 0;                                                                             \
        for (int64_t p = 0; p < g.planes; p++) {                                                   \
            const T *xp = x + p * plane;                                                           \
            for (int64_t od = 0; od < g.out[0]; od++)                                              \
                for (int64_t oh = 0; oh < g.out[1]; oh++)                                          \
                    for (int64_t ow = 0; ow < g.out[2]; ow++, o++) {                               \
                        T best = (lowest);                                                         \
                        int64_t at = -1;                                                           \
                        FOR_WINDOW(&g, od, oh, ow, {                                               \
                            if (inside(id, g.in[0]) && inside(ih, g.in[1]) &&                      \
                                inside(iw, g.in[2])) {                                             \
                                T v = xp[(id * g.in[1] + ih) * g.in[2] + iw];                      \
                                if (at < 0 || v > best) {                                          \
                                    best = v;                                                      \
                                    at = flat_index(&g, p, id, ih, iw, column_major);              \
                                }                                                                  \
                            }                                                                      \
                        })                                                                         \
                        y[o] = best;                                                               \
                        if (indices)                                                               \
                            indices[o] = at;                                                       \
                    }                                                                              \
        }                                                                                          \
    } while (0)

/* On f32 and (opset 12) i8 / u8. */
bool kn_cpu_MaxPool(const kn_call *call)
{
    pgeom g;
    if (!pgeom_init(call, true, &g))
        return false;
    bool column_major = ir_get_int(call->node, "storage_order") != 0;
    int64_t *indices = call->noutputs > 1 ? call->outputs[1].data : NULL;
    if (indices && !kn_check_numel(call, 1, call->outputs[0].numel))
        return false;
    int64_t plane = g.in[0] * g.in[1] * g.in[2];
    switch (call->inputs[0].dtype) {
    case IR_F32: MAXPOOL_LOOP(float, -INFINITY); break;
    case IR_I8: MAXPOOL_LOOP(int8_t, INT8_MIN); break;
    case IR_U8: MAXPOOL_LOOP(uint8_t, 0); break;
    default:
        return kn_fail(call, "dtype %s is not supported", ir_dtype_name(call->inputs[0].dtype));
    }
    return true;
}

/* ---- AveragePool --------------------------------------------------------------------------- */

bool kn_cpu_AveragePool(const kn_call *call)
{
    pgeom g;
    if (call->inputs[0].dtype != IR_F32)
        return kn_fail(call, "float input only");
    if (!pgeom_init(call, true, &g))
        return false;
    bool include_pad = ir_get_int(call->node, "count_include_pad") != 0;
    const float *x = call->inputs[0].data;
    float *y = call->outputs[0].data;
    int64_t plane = g.in[0] * g.in[1] * g.in[2], o = 0;
    for (int64_t p = 0; p < g.planes; p++) {
        const float *xp = x + p * plane;
        for (int64_t od = 0; od < g.out[0]; od++)
            for (int64_t oh = 0; oh < g.out[1]; oh++)
                for (int64_t ow = 0; ow < g.out[2]; ow++, o++) {
                    double sum = 0;
                    int64_t count = 0;
                    FOR_WINDOW(&g, od, oh, ow, {
                        if (inside(id, g.in[0]) && inside(ih, g.in[1]) && inside(iw, g.in[2])) {
                            sum += xp[(id * g.in[1] + ih) * g.in[2] + iw];
                            count++;
                        } else if (include_pad && inside_padded(id, g.in[0], g.pb[0], g.pe[0]) &&
                                   inside_padded(ih, g.in[1], g.pb[1], g.pe[1]) &&
                                   inside_padded(iw, g.in[2], g.pb[2], g.pe[2])) {
                            count++;
                        }
                    })
                    y[o] = count ? (float)(sum / (double)count) : NAN;
                }
    }
    return true;
}

/* ---- GlobalAveragePool --------------------------------------------------------------------- */

bool kn_cpu_GlobalAveragePool(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (x->dtype != IR_F32 || x->rank < 2)
        return kn_fail(call, "input must be float [N, C, ...]");
    int64_t planes = x->dims[0] * x->dims[1];
    int64_t sp = planes ? x->numel / planes : 0;
    if (!kn_check_numel(call, 0, planes))
        return false;
    const float *xd = x->data;
    float *y = call->outputs[0].data;
    for (int64_t p = 0; p < planes; p++) {
        double sum = 0;
        for (int64_t i = 0; i < sp; i++)
            sum += xd[p * sp + i];
        y[p] = sp ? (float)(sum / (double)sp) : NAN;
    }
    return true;
}
