/* Type inference of GlobalMaxPool (GlobalAveragePool's), LRN, MeanVarianceNormalization, Det, the
 * window functions and GroupNormalization. */
#include "ir/infer_util.h"

#include <string.h>

bool ir_infer_GlobalMaxPool(ir_graph *g, ir_node *n, dg_context *dg)
{
    return ir_infer_GlobalAveragePool(g, n, dg);
}

/* LRN(X [N, C, ...]) {alpha, beta, bias, size}: X's type; size at least 1. */
bool ir_infer_LRN(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 3, IR_MAX_RANK))
        return false;
    int64_t size = ir_get_int(n, "size");
    if (size < 1 || size > IR_MAX_NUMEL)
        return ir_node_error(g, n, dg, "size %lld is not a window of at least 1", (long long)size);
    ir_value_set_type(g, n->outputs[0], ir_in(n, 0));
    return ir_infer_done(g, n, dg);
}

/* MeanVarianceNormalization(X) {axes}: X's type; the axes in range, without duplicates. */
bool ir_infer_MeanVarianceNormalization(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT))
        return false;
    const ir_type *x = ir_in(n, 0);
    const int64_t *vals;
    uint32_t count = ir_get_ints(n, "axes", &vals);
    int axes[IR_MAX_RANK];
    if (count > IR_MAX_RANK)
        return ir_node_error(g, n, dg, "axes lists %u dims", count);
    if (x->rank >= 0 && !ir_norm_axes(g, n, dg, vals, count, x->rank, axes))
        return false;
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}

/* Det(X [*, M, M]) -> [*]. */
bool ir_infer_Det(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(x->dtype, x->rank < 0 ? -1 : x->rank - 2);
    if (x->rank >= 0) {
        int64_t d;
        if (!ir_dim_unify(x->dims[x->rank - 1], x->dims[x->rank - 2], &d))
            return ir_node_error(g, n, dg, "%s is not a stack of square matrices",
                                 ir_shape_str(g, x));
        for (int i = 0; i < y.rank; i++)
            y.dims[i] = x->dims[i];
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* HannWindow, HammingWindow, BlackmanWindow(size: an integer scalar) -> [size] of
 * output_datatype; the length is known when size is a constant. */
static bool window(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_INDEX) ||
        !ir_check_scalar(g, n, dg, 0))
        return false;
    int64_t code = ir_get_int(n, "output_datatype");
    ir_type y = ir_type_unknown(IR_F32, 1);
    if (!ir_dtype_from_onnx(code, &y.dtype) || y.dtype == IR_BOOL)
        return ir_node_error(g, n, dg, "output_datatype = %lld is not a numeric type the IR holds",
                             (long long)code);
    double size;
    switch (ir_read_scalar(g, n, dg, 0, &size)) {
    case IR_READ_ERROR: return false;
    case IR_READ_UNKNOWN: break;
    case IR_READ_KNOWN:
        if (!(size >= 0 && size <= (double)IR_MAX_NUMEL))
            return ir_node_error(g, n, dg, "size %g is not in [0, 2^40]", size);
        y.dims[0] = (int64_t)size;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_HannWindow(ir_graph *g, ir_node *n, dg_context *dg)
{
    return window(g, n, dg);
}
bool ir_infer_HammingWindow(ir_graph *g, ir_node *n, dg_context *dg)
{
    return window(g, n, dg);
}
bool ir_infer_BlackmanWindow(ir_graph *g, ir_node *n, dg_context *dg)
{
    return window(g, n, dg);
}

/* GroupNormalization(X [N, C, ...], scale [C], bias [C]) {num_groups}: X's type; C divisible by
 * num_groups. (Opset 18's per-group scale and bias are import's to expand.) */
bool ir_infer_GroupNormalization(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 1, 1) ||
        !ir_check_rank(g, n, dg, 2, 1, 1))
        return false;
    int64_t groups = ir_get_int(n, "num_groups");
    const ir_type *x = ir_in(n, 0);
    int64_t c = x->rank >= 2 ? x->dims[1] : IR_DIM_UNKNOWN;
    if (groups < 1)
        return ir_node_error(g, n, dg, "num_groups %lld is below 1", (long long)groups);
    if (ir_dim_is_static(c) && c % groups != 0)
        return ir_node_error(g, n, dg, "%lld channels do not divide into %lld groups", (long long)c,
                             (long long)groups);
    for (uint32_t i = 1; i <= 2; i++) {
        int64_t d, len = ir_in(n, i)->rank == 1 ? ir_in(n, i)->dims[0] : IR_DIM_UNKNOWN;
        if (!ir_dim_unify(len, c, &d))
            return ir_node_error(g, n, dg, "%s has %lld values; the input has %lld channels",
                                 i == 1 ? "scale" : "bias", (long long)len, (long long)c);
    }
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}

/* GridSample(X [N, C, H, W], grid [N, Ho, Wo, 2]) -> [N, C, Ho, Wo] (the 2-D form). */
bool ir_infer_GridSample(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_rank(g, n, dg, 0, 4, 4) ||
        !ir_check_rank(g, n, dg, 1, 4, 4))
        return false;
    static const char *const modes[] = {"bilinear", "linear", "nearest", "bicubic", "cubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    const char *mode = ir_get_string(n, "mode"), *pad = ir_get_string(n, "padding_mode");
    bool mode_ok = false, pad_ok = false;
    for (size_t i = 0; i < 5; i++)
        mode_ok = mode_ok || strcmp(mode, modes[i]) == 0;
    for (size_t i = 0; i < 3; i++)
        pad_ok = pad_ok || strcmp(pad, pads[i]) == 0;
    if (!mode_ok)
        return ir_node_error(g, n, dg, "mode \"%s\" is not bilinear, nearest or bicubic", mode);
    if (!pad_ok)
        return ir_node_error(g, n, dg, "padding_mode \"%s\" is not zeros, border or reflection",
                             pad);
    const ir_type *x = ir_in(n, 0), *grid = ir_in(n, 1);
    ir_type y = ir_type_unknown(x->dtype, 4);
    y.layout = x->layout;
    int64_t d;
    if (x->rank == 4 && grid->rank == 4) {
        if (!ir_dim_unify(x->dims[0], grid->dims[0], &y.dims[0]) ||
            !ir_dim_unify(grid->dims[3], 2, &d))
            return ir_node_error(g, n, dg, "grid %s does not fit X %s: it is [N, Ho, Wo, 2]",
                                 ir_shape_str(g, grid), ir_shape_str(g, x));
        y.dims[1] = x->dims[1];
        y.dims[2] = grid->dims[1];
        y.dims[3] = grid->dims[2];
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* MaxUnpool(X [N, C, D...], I (i64, X's shape), output_shape?) -> output_shape's values, else per
 * spatial dim (D - 1) * stride + kernel - pad_begin - pad_end. */
bool ir_infer_MaxUnpool(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) || !ir_check_rank(g, n, dg, 0, 3, IR_MAX_RANK))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(x->dtype, x->rank);
    y.layout = x->layout;
    int64_t shape[IR_MAX_RANK];
    uint32_t count = 0;
    ir_read_status st = ir_read_ints(g, n, dg, 2, shape, IR_MAX_RANK, &count);
    if (st == IR_READ_ERROR)
        return false;
    if (x->rank < 0 || (ir_has_input(n, 2) && st == IR_READ_UNKNOWN)) {
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    if (st == IR_READ_KNOWN) {
        if (count != (uint32_t)x->rank)
            return ir_node_error(g, n, dg, "output_shape has %u values for rank %d", count,
                                 x->rank);
        for (int i = 0; i < x->rank; i++) {
            if (shape[i] < 0)
                return ir_node_error(g, n, dg, "output_shape[%d] = %lld is negative", i,
                                     (long long)shape[i]);
            y.dims[i] = shape[i];
        }
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    int spatial = x->rank - 2;
    const int64_t *kernel, *strides, *pads;
    uint32_t nk = ir_get_ints(n, "kernel_shape", &kernel), ns = ir_get_ints(n, "strides", &strides);
    uint32_t np = ir_get_ints(n, "pads", &pads);
    if (nk != (uint32_t)spatial || (ns && ns != (uint32_t)spatial) ||
        (np && np != 2u * (uint32_t)spatial))
        return ir_node_error(g, n, dg, "kernel_shape, strides or pads do not fit %d spatial dims",
                             spatial);
    y.dims[0] = x->dims[0];
    y.dims[1] = x->dims[1];
    for (int k = 0; k < spatial; k++) {
        int64_t d = x->dims[k + 2], s = ns ? strides[k] : 1;
        int64_t pb = np ? pads[k] : 0, pe = np ? pads[spatial + k] : 0;
        if (kernel[k] < 1 || kernel[k] > IR_MAX_NUMEL || s < 1 || s > IR_MAX_NUMEL || pb < 0 ||
            pe < 0)
            return ir_node_error(g, n, dg,
                                 "kernels and strides must be at least 1, pads at least 0");
        if (!ir_dim_is_static(d)) {
            y.dims[k + 2] = IR_DIM_UNKNOWN;
            continue;
        }
        int64_t out = ir_sat_add(ir_sat_mul(d > 0 ? d - 1 : 0, s), kernel[k]) - pb - pe;
        if (out < 0)
            return ir_node_error(g, n, dg, "the pads leave spatial dim %d negative", k);
        y.dims[k + 2] = out;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* DFT(input [..., 1 or 2], dft_length?) {axis, inverse, onesided} -> [..., 2]: the axis' length
 * is dft_length (a constant, else `?`) or the input's, floor(n / 2) + 1 with onesided. */
bool ir_infer_DFT(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) || !ir_check_dtype(g, n, dg, 1, IR_DTS_INDEX) ||
        !ir_check_scalar(g, n, dg, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    bool onesided = ir_get_int(n, "onesided") != 0, inverse = ir_get_int(n, "inverse") != 0;
    if (onesided && inverse)
        return ir_node_error(g, n, dg, "onesided is defined for the forward transform only");
    ir_type y = *x;
    y.layout = IR_LAYOUT_NONE;
    if (x->rank >= 0) {
        int64_t last = x->dims[x->rank - 1];
        if (ir_dim_is_static(last) && last != 1 && last != 2)
            return ir_node_error(g, n, dg, "the last dim is %lld; it is 1 (real) or 2 (complex)",
                                 (long long)last);
        int axis;
        if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank - 1, "axis", &axis))
            return false;
        int64_t len = x->dims[axis];
        uint32_t count;
        switch (ir_read_ints(g, n, dg, 1, &len, 1, &count)) {
        case IR_READ_ERROR: return false;
        case IR_READ_UNKNOWN:
            if (ir_has_input(n, 1))
                len = IR_DIM_UNKNOWN;
            break;
        case IR_READ_KNOWN:
            if (len < 1)
                return ir_node_error(g, n, dg, "dft_length %lld is below 1", (long long)len);
        }
        y.dims[axis] = onesided && ir_dim_is_static(len) ? len / 2 + 1
                       : onesided                        ? IR_DIM_UNKNOWN
                                                         : len;
        y.dims[x->rank - 1] = 2;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
