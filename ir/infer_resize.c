/* Type inference of Resize(X, roi?, scales?, sizes?): X's rank and dtype, each dim from sizes or
 * from floor(dim * scale) (times the roi's extent for tf_crop_and_resize), for the listed axes or
 * all. A scales or roi input with no elements counts as omitted (opset 11's way of leaving it
 * out). Scales and sizes that are not constants leave the dims `?`; the executors show them to
 * inference at run time (the row carries IR_OPF_VALUE_SHAPE). */
#include "ir/infer_util.h"

#include <math.h>
#include <string.h>

static bool one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

/* The attributes' strings and the modes this executor computes. */
static bool check_modes(ir_graph *g, const ir_node *n, dg_context *dg)
{
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const coords[] = {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize", NULL};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil", NULL};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
    const char *mode = ir_get_string(n, "mode");
    const char *coord = ir_get_string(n, "coordinate_transformation_mode");
    const char *near = ir_get_string(n, "nearest_mode");
    const char *policy = ir_get_string(n, "keep_aspect_ratio_policy");
    if (!one_of(mode, modes))
        return ir_node_error(g, n, dg, "mode \"%s\" is not nearest, linear or cubic", mode);
    if (!one_of(coord, coords))
        return ir_node_error(g, n, dg,
                             "coordinate_transformation_mode \"%s\" is not one ONNX "
                             "defines",
                             coord);
    if (!one_of(near, nearest))
        return ir_node_error(g, n, dg, "nearest_mode \"%s\" is not one ONNX defines", near);
    if (!one_of(policy, policies))
        return ir_node_error(g, n, dg,
                             "keep_aspect_ratio_policy \"%s\" is not stretch, "
                             "not_larger or not_smaller",
                             policy);
    if (ir_get_int(n, "antialias") != 0 && strcmp(mode, "nearest") != 0)
        return ir_node_error(g, n, dg,
                             "antialias = 1 (a widened filter when downsampling) is "
                             "not supported");
    return true;
}

/* Whether input i is present with at least one element (a known-empty one counts as omitted). */
static bool given(const ir_node *n, uint32_t i)
{
    const ir_type *t = ir_in(n, i);
    return t && !(t->rank == 1 && t->dims[0] == 0);
}

/* Reads a constant float vector input into out (at most max values). */
static ir_read_status read_floats(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                                  double *out, uint32_t max, uint32_t *count)
{
    const void *data;
    int64_t numel;
    ir_read_status st = ir_read_const(g, n, dg, i, &data, &numel);
    if (st != IR_READ_KNOWN)
        return st;
    if (numel > max) {
        ir_node_error(g, n, dg, "input %s holds %lld values; at most %u are expected",
                      ir_input_name(g, n, i), (long long)numel, max);
        return IR_READ_ERROR;
    }
    for (int64_t k = 0; k < numel; k++)
        out[k] = ir_const_element(data, ir_in(n, i)->dtype, k);
    *count = (uint32_t)numel;
    return IR_READ_KNOWN;
}

static bool finish(ir_graph *g, ir_node *n, dg_context *dg, const ir_type *y)
{
    ir_value_set_type(g, n->outputs[0], y);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_Resize(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_FLOAT) || !ir_check_dtype(g, n, dg, 2, IR_DT(IR_F32)) ||
        !ir_check_dtype(g, n, dg, 3, IR_DT(IR_I64)) || !check_modes(g, n, dg))
        return false;
    for (uint32_t i = 1; i <= 3; i++)
        if (!ir_check_rank(g, n, dg, i, 1, 1))
            return false;
    const ir_type *x = ir_in(n, 0);
    bool has_scales = given(n, 2), has_sizes = given(n, 3);
    if (has_scales == has_sizes)
        return ir_node_error(g, n, dg, "exactly one of scales and sizes must be given");
    ir_type y = ir_type_unknown(x->dtype, x->rank);
    y.layout = x->layout;
    if (x->rank < 0)
        return finish(g, n, dg, &y);
    /* the axes: the attribute (opset 18) or all */
    const int64_t *attr_axes;
    uint32_t naxes = ir_get_ints(n, "axes", &attr_axes);
    int axes[IR_MAX_RANK];
    if (naxes > IR_MAX_RANK)
        return ir_node_error(g, n, dg, "axes lists %u dims; the rank is %d", naxes, x->rank);
    if (!ir_norm_axes(g, n, dg, attr_axes, naxes, x->rank, axes))
        return false;
    if (naxes == 0)
        for (int d = 0; d < x->rank; d++)
            axes[naxes++] = d;
    memcpy(y.dims, x->dims, sizeof y.dims);
    double vals[IR_MAX_RANK];
    int64_t ivals[IR_MAX_RANK];
    uint32_t count = 0;
    ir_read_status st = has_scales ? read_floats(g, n, dg, 2, vals, IR_MAX_RANK, &count)
                                   : ir_read_ints(g, n, dg, 3, ivals, IR_MAX_RANK, &count);
    if (st == IR_READ_ERROR)
        return false;
    if (st == IR_READ_KNOWN && count != naxes)
        return ir_node_error(g, n, dg, "%s holds %u values for %u axes",
                             has_scales ? "scales" : "sizes", count, naxes);
    if (st == IR_READ_UNKNOWN) {
        for (uint32_t k = 0; k < naxes; k++)
            y.dims[axes[k]] = IR_DIM_UNKNOWN;
        return finish(g, n, dg, &y);
    }
    /* tf_crop_and_resize scales the roi's extent */
    double roi[2 * IR_MAX_RANK];
    uint32_t nroi = 0;
    bool crop =
        strcmp(ir_get_string(n, "coordinate_transformation_mode"), "tf_crop_and_resize") == 0;
    if (crop && has_scales && given(n, 1)) {
        st = read_floats(g, n, dg, 1, roi, 2 * IR_MAX_RANK, &nroi);
        if (st == IR_READ_ERROR)
            return false;
        if (st == IR_READ_KNOWN && nroi != 2 * naxes)
            return ir_node_error(g, n, dg, "roi holds %u values for %u axes", nroi, naxes);
    }
    const char *policy = ir_get_string(n, "keep_aspect_ratio_policy");
    bool stretch = strcmp(policy, "stretch") == 0;
    double common = strcmp(policy, "not_larger") == 0 ? INFINITY : 0;
    for (uint32_t k = 0; k < naxes && has_sizes && !stretch; k++) {
        int64_t in = x->dims[axes[k]];
        if (!ir_dim_is_static(in))
            return finish(g, n, dg, &y);
        double s = in ? (double)ivals[k] / (double)in : 0;
        common = strcmp(policy, "not_larger") == 0 ? fmin(common, s) : fmax(common, s);
    }
    for (uint32_t k = 0; k < naxes; k++) {
        int64_t in = x->dims[axes[k]], out;
        if (has_sizes && stretch) {
            out = ivals[k];
            if (out < 0)
                return ir_node_error(g, n, dg, "size %lld for axis %d is negative", (long long)out,
                                     axes[k]);
        } else if (!ir_dim_is_static(in)) {
            bool same = !has_sizes && vals[k] == 1 && (!nroi || roi[naxes + k] - roi[k] == 1);
            out = same ? in : IR_DIM_UNKNOWN; /* a symbol survives a scale of 1 */
        } else {
            double s = has_sizes ? common : vals[k];
            double extent = nroi ? roi[naxes + k] - roi[k] : 1.0;
            if (!(s > 0) || !(extent >= 0))
                return ir_node_error(g, n, dg, "scale %g for axis %d is not positive", s, axes[k]);
            double v = has_sizes ? floor((double)in * s + 0.5) : floor((double)in * s * extent);
            out = v > (double)IR_DIM_HUGE ? IR_DIM_HUGE : (int64_t)v;
        }
        if (ir_dim_is_static(in) && out < 0)
            return ir_node_error(g, n, dg, "size %lld for axis %d is negative", (long long)out,
                                 axes[k]);
        y.dims[axes[k]] = out;
    }
    return finish(g, n, dg, &y);
}
