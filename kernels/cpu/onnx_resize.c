/* Resize: nearest, linear and cubic interpolation, separably one axis at a time.
 *
 * Each output coordinate x maps to an input coordinate x_original by the
 * coordinate_transformation_mode (ONNX's formulas, with the axis' scale: the given one, or
 * out / in from sizes, or the common scale of keep_aspect_ratio_policy). Interpolation then takes
 * 1 (nearest), 2 (linear) or 4 (cubic, with cubic_coeff_a) input taps whose weights sum to 1;
 * taps past the edges read the edge element (ONNX's reference pads by edge values), or with
 * exclude_outside get weight 0 and the rest are renormalized. With tf_crop_and_resize a
 * coordinate outside the input gives extrapolation_value. Because every pass' weights sum to 1,
 * resizing axis by axis gives exactly the N-dimensional interpolation, extrapolated points
 * included. Values are carried in double between passes and rounded to the output dtype once. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_TAPS = 4 };

typedef struct {
    const char *mode, *coord, *nearest;
    double cubic_a, extrapolation;
    bool exclude_outside;
} resize_attrs;

/* The taps of one output coordinate along one axis. */
typedef struct {
    int ntaps;
    int64_t index[MAX_TAPS];
    double weight[MAX_TAPS];
    bool outside; /* tf_crop_and_resize past the input: extrapolation_value */
} taps;

static double input_coord(const resize_attrs *a, int64_t x, double scale, int64_t in, int64_t out,
                          double roi_start, double roi_end)
{
    const char *c = a->coord;
    /* ONNX's length_resized: in * scale, not rounded (for sizes, the same as out) */
    double resized = (double)in * scale;
    if (strcmp(c, "align_corners") == 0)
        return resized == 1 ? 0 : (double)x * (double)(in - 1) / (resized - 1);
    if (strcmp(c, "asymmetric") == 0)
        return (double)x / scale;
    if (strcmp(c, "pytorch_half_pixel") == 0)
        return resized > 1 ? ((double)x + 0.5) / scale - 0.5 : 0;
    if (strcmp(c, "tf_half_pixel_for_nn") == 0)
        return ((double)x + 0.5) / scale;
    if (strcmp(c, "tf_crop_and_resize") == 0)
        return out > 1 ? roi_start * (double)(in - 1) + (double)x * (roi_end - roi_start) *
                                                            (double)(in - 1) / (double)(out - 1)
                       : 0.5 * (roi_start + roi_end) * (double)(in - 1);
    if (strcmp(c, "half_pixel_symmetric") == 0) {
        double adjustment = (double)out / (scale * (double)in);
        double center = (double)in / 2, offset = center * (1 - adjustment);
        return offset + ((double)x + 0.5) / scale - 0.5;
    }
    return ((double)x + 0.5) / scale - 0.5; /* half_pixel */
}

static int64_t nearest_index(const char *mode, double v)
{
    if (strcmp(mode, "floor") == 0)
        return (int64_t)floor(v);
    if (strcmp(mode, "ceil") == 0)
        return (int64_t)ceil(v);
    double f = floor(v);
    if (v - f == 0.5) /* a tie */
        return strcmp(mode, "round_prefer_ceil") == 0 ? (int64_t)f + 1 : (int64_t)f;
    return (int64_t)floor(v + 0.5);
}

static double cubic_weight(double a, double d) /* d = |distance| in [0, 2] */
{
    if (d <= 1)
        return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2)
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

static int64_t clamp(int64_t i, int64_t in)
{
    return i < 0 ? 0 : i >= in ? in - 1 : i;
}

static taps taps_for(const resize_attrs *a, double v, int64_t in)
{
    taps t = {0};
    if (strcmp(a->coord, "tf_crop_and_resize") == 0 && (v < 0 || v > (double)(in - 1))) {
        t.outside = true;
        return t;
    }
    /* far outside, every tap reads an edge (or nothing): bounded so that the integer conversions
     * below stay defined, NaN included */
    v = fmin(fmax(v, -3.0), (double)in + 2);
    if (strcmp(a->mode, "nearest") == 0) {
        t.ntaps = 1;
        t.index[0] = clamp(nearest_index(a->nearest, v), in);
        t.weight[0] = 1;
        return t;
    }
    double f = floor(v), r = v - f;
    int64_t base = (int64_t)f;
    if (strcmp(a->mode, "linear") == 0) {
        t.ntaps = 2;
        t.index[0] = base;
        t.index[1] = base + 1;
        t.weight[0] = 1 - r;
        t.weight[1] = r;
    } else {
        t.ntaps = 4;
        for (int k = 0; k < 4; k++) {
            t.index[k] = base - 1 + k;
            t.weight[k] = cubic_weight(a->cubic_a, fabs(r - (k - 1)));
        }
    }
    double kept = 0;
    for (int k = 0; k < t.ntaps; k++) {
        bool out_of_range = t.index[k] < 0 || t.index[k] >= in;
        if (out_of_range && a->exclude_outside)
            t.weight[k] = 0;
        kept += t.weight[k];
        t.index[k] = clamp(t.index[k], in);
    }
    if (a->exclude_outside && kept != 0)
        for (int k = 0; k < t.ntaps; k++)
            t.weight[k] /= kept;
    return t;
}

/* Resamples `src` (dims) along axis d to `out` elements into dst. */
static void resample_axis(const resize_attrs *a, const double *src, const int64_t *dims, int rank,
                          int d, int64_t out, double scale, double roi_start, double roi_end,
                          double *dst, taps *tab)
{
    int64_t outer = 1, inner = 1, in = dims[d];
    for (int i = 0; i < d; i++)
        outer *= dims[i];
    for (int i = d + 1; i < rank; i++)
        inner *= dims[i];
    for (int64_t x = 0; x < out; x++)
        tab[x] = taps_for(a, input_coord(a, x, scale, in, out, roi_start, roi_end), in);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t x = 0; x < out; x++) {
            double *row = dst + (o * out + x) * inner;
            const taps *t = &tab[x];
            for (int64_t i = 0; i < inner; i++) {
                double v = t->outside ? a->extrapolation : 0;
                for (int k = 0; k < t->ntaps; k++)
                    v += t->weight[k] * src[(o * in + t->index[k]) * inner + i];
                row[i] = v;
            }
        }
}

/* The per-axis scales and roi from the inputs and attributes; false after reporting. */
static bool read_params(const kn_call *call, const kn_tensor *x, const kn_tensor *y, double *scale,
                        double *roi_start, double *roi_end)
{
    const kn_tensor *roi = call->ninputs > 1 && call->inputs[1].data ? &call->inputs[1] : NULL;
    const kn_tensor *sc = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    const kn_tensor *sz = call->ninputs > 3 && call->inputs[3].data ? &call->inputs[3] : NULL;
    if (sc && sc->numel == 0)
        sc = NULL;
    if (roi && roi->numel == 0)
        roi = NULL;
    const int64_t *attr;
    uint32_t naxes = ir_get_ints(call->node, "axes", &attr);
    int axes[IR_MAX_RANK];
    if (naxes > (uint32_t)x->rank)
        return kn_fail(call, "axes lists %u dims for rank %d", naxes, x->rank);
    for (uint32_t k = 0; k < naxes; k++)
        if (!kn_axis(call, attr[k], x->rank, "axis", &axes[k]))
            return false;
    if (naxes == 0)
        for (int d = 0; d < x->rank; d++)
            axes[naxes++] = d;
    const kn_tensor *given = sc ? sc : sz;
    if (!given || given->numel != (int64_t)naxes)
        return kn_fail(call, "scales or sizes must hold one value per resized axis (%u)", naxes);
    if (roi && roi->numel != 2 * (int64_t)naxes)
        return kn_fail(call, "roi must hold %u starts and %u ends", naxes, naxes);
    const char *policy = ir_get_string(call->node, "keep_aspect_ratio_policy");
    double common = strcmp(policy, "not_larger") == 0 ? INFINITY : 0;
    for (uint32_t k = 0; k < naxes && !sc; k++) {
        double s = (double)kn_get_int(sz, k) / (double)x->dims[axes[k]];
        common = strcmp(policy, "not_larger") == 0 ? fmin(common, s) : fmax(common, s);
    }
    for (int d = 0; d < x->rank; d++) {
        scale[d] = 1;
        roi_start[d] = 0;
        roi_end[d] = 1;
    }
    for (uint32_t k = 0; k < naxes; k++) {
        int d = axes[k];
        if (sc)
            scale[d] = kn_get_f64(sc, k);
        else if (strcmp(policy, "stretch") == 0)
            scale[d] = (double)y->dims[d] / (double)x->dims[d];
        else
            scale[d] = common;
        if (roi) {
            roi_start[d] = kn_get_f64(roi, k);
            roi_end[d] = kn_get_f64(roi, naxes + k);
        }
        if (!(scale[d] > 0))
            return kn_fail(call, "scale %g for axis %d is not positive", scale[d], d);
    }
    return true;
}

bool kn_cpu_Resize(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    resize_attrs a = {ir_get_string(call->node, "mode"),
                      ir_get_string(call->node, "coordinate_transformation_mode"),
                      ir_get_string(call->node, "nearest_mode"),
                      ir_get_float(call->node, "cubic_coeff_a"),
                      ir_get_float(call->node, "extrapolation_value"),
                      ir_get_int(call->node, "exclude_outside") != 0};
    double scale[IR_MAX_RANK], roi_start[IR_MAX_RANK], roi_end[IR_MAX_RANK];
    if (x->dtype == IR_BOOL || y->dtype != x->dtype || y->rank != x->rank)
        return kn_fail(call, "the output must have the input's dtype and rank");
    if (!read_params(call, x, y, scale, roi_start, roi_end))
        return false;
    if (y->numel == 0)
        return true;
    /* the largest intermediate: every axis at the larger of its two sizes */
    int64_t cap = 1, longest = 1;
    for (int d = 0; d < x->rank; d++) {
        int64_t m = x->dims[d] > y->dims[d] ? x->dims[d] : y->dims[d];
        if (x->dims[d] == 0)
            return kn_fail(call, "cannot resize an empty axis %d to %lld", d,
                           (long long)y->dims[d]);
        cap *= m;
        longest = y->dims[d] > longest ? y->dims[d] : longest;
    }
    double *buf[2] = {malloc((size_t)cap * sizeof(double)), malloc((size_t)cap * sizeof(double))};
    taps *tab = malloc((size_t)longest * sizeof *tab);
    if (!buf[0] || !buf[1] || !tab) {
        free(buf[0]), free(buf[1]), free(tab);
        return kn_fail(call, "cannot allocate %lld intermediate values", (long long)cap);
    }
    for (int64_t i = 0; i < x->numel; i++)
        buf[0][i] = kn_get_f64(x, i);
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    int cur = 0;
    for (int d = 0; d < x->rank; d++) {
        resample_axis(&a, buf[cur], dims, x->rank, d, y->dims[d], scale[d], roi_start[d],
                      roi_end[d], buf[1 - cur], tab);
        dims[d] = y->dims[d];
        cur = 1 - cur;
    }
    for (int64_t i = 0; i < y->numel; i++)
        kn_set_f64(y, i, buf[cur][i]);
    free(buf[0]), free(buf[1]), free(tab);
    return true;
}
