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
    n->outputs[0]->type = *ir_in(n, 0);
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
    n->outputs[0]->type = *x;
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
    n->outputs[0]->type = y;
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
    n->outputs[0]->type = y;
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
    n->outputs[0]->type = *x;
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
    n->outputs[0]->type = y;
    return ir_infer_done(g, n, dg);
}
