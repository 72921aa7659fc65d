/* Type inference of the data-movement ops whose output shape depends on an input's VALUE:
 * Reshape (shape), Slice (starts, ends, axes, steps), Expand (shape), Tile (repeats), Pad (pads,
 * axes). When that input is a constant its values are read; otherwise the rank is kept where it is
 * known and the dims that depend on the values are unknown. */
#include "ir/infer_util.h"

#include <string.h>

/* ---- Reshape ---- */

/* The element count of the dims of t other than `skip`, as a dim (an expression when symbolic). */
static int64_t count_of(ir_graph *g, const ir_type *t, int skip)
{
    int64_t c = 1;
    for (int i = 0; i < t->rank; i++)
        if (i != skip)
            c = ir_dim_mul(g, c, t->dims[i]);
    return c;
}

/* The size the -1 entry stands for (IR_DIM_UNKNOWN when not determined), or an error when the
 * element counts cannot match. y holds the result's other dims. Symbolic counts divide exactly
 * or leave the size unknown: [batch, S, 768] into [-1, 12, 64] gives batch * S. */
static bool infer_minus_one(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *x,
                            const ir_type *y, int hole, int64_t *size)
{
    *size = IR_DIM_UNKNOWN;
    if (x->rank < 0)
        return true;
    int64_t in = count_of(g, x, -1), out = count_of(g, y, hole);
    if (in == IR_DIM_UNKNOWN || out == IR_DIM_UNKNOWN || out == 0 || in > IR_MAX_NUMEL ||
        out > IR_MAX_NUMEL)
        return true;
    if (ir_dim_is_static(in) && ir_dim_is_static(out) && in % out != 0)
        return ir_node_error(g, n, dg, "cannot reshape %s into %s: %lld is not a multiple of %lld",
                             ir_shape_str(g, x), ir_shape_str(g, y), (long long)in, (long long)out);
    *size = ir_dim_quotient(g, in, out);
    return true;
}

/* Without a -1, a static input and a static result must hold as many elements. */
static bool check_counts(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *x,
                         const ir_type *y)
{
    int64_t a, b;
    if (ir_type_numel(x, &a) && ir_type_numel(y, &b) && a != b)
        return ir_node_error(g, n, dg, "cannot reshape %s (%lld elements) into %s (%lld elements)",
                             ir_shape_str(g, x), (long long)a, ir_shape_str(g, y), (long long)b);
    return true;
}

/* Reshape(data, shape) {allowzero}: 0 copies the input's dim (unless allowzero=1, where it is a
 * size 0), one -1 takes what is left. */
bool ir_infer_Reshape(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) ||
        !ir_check_rank(g, n, dg, 1, 1, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_sv_elem vals[IR_MAX_RANK];
    uint32_t count;
    ir_read_status st = ir_read_dims(g, n, dg, 1, vals, IR_MAX_RANK, &count);
    if (st == IR_READ_ERROR)
        return false;
    if (st == IR_READ_UNKNOWN) {
        int64_t len = ir_input_length(n, 1);
        if (!ir_check_out_rank(g, n, dg, len))
            return false;
        ir_set_unknown(g, n->outputs[0], x->dtype, (int)len);
        return ir_infer_done(g, n, dg);
    }
    bool allowzero = ir_get_int(n, "allowzero") != 0;
    ir_type y = ir_type_unknown(x->dtype, (int)count);
    int hole = -1;
    bool zero = false, unknown = false;
    for (int i = 0; i < (int)count; i++) {
        if (vals[i].kind != IR_SV_INT) {
            /* a dim computed from a shape (never -1; taken as it is, 0 included) or unknown */
            unknown |= vals[i].kind == IR_SV_UNKNOWN;
            y.dims[i] = vals[i].kind == IR_SV_DIM ? vals[i].v : IR_DIM_UNKNOWN;
            continue;
        }
        int64_t v = vals[i].v;
        if (v < -1 || v > IR_MAX_NUMEL)
            return ir_node_error(g, n, dg, "shape[%d] = %lld is out of range", i, (long long)v);
        if (v == -1 && hole >= 0)
            return ir_node_error(g, n, dg, "shape has more than one -1");
        if (v == -1)
            hole = i;
        zero = zero || v == 0;
        if (v == 0 && !allowzero) {
            if (x->rank >= 0 && i >= x->rank)
                return ir_node_error(g, n, dg, "shape[%d] = 0 copies dim %d, but the input %s "
                                               "has rank %d",
                                     i, i, ir_shape_str(g, x), x->rank);
            y.dims[i] = x->rank >= 0 ? x->dims[i] : IR_DIM_UNKNOWN;
        } else if (v >= 0) {
            y.dims[i] = v;
        }
    }
    if (unknown && hole >= 0) {
        /* an unknown entry may be the -1 or a 0: the other known sizes stand */
        y.dims[hole] = IR_DIM_UNKNOWN;
        hole = -1;
    }
    if (allowzero && zero && hole >= 0)
        return ir_node_error(g, n, dg, "shape has both 0 and -1 with allowzero=1");
    if (hole >= 0 && !infer_minus_one(g, n, dg, x, &y, hole, &y.dims[hole]))
        return false;
    if (!check_counts(g, n, dg, x, &y))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- Slice ---- */

/* Bounds far beyond any dim (ONNX writes INT64_MAX for "to the end") are clamped to this first, so
 * that adding a dim cannot overflow. */
#define FAR ((int64_t)1 << 62)

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Length of a slice of a dim by ONNX's rules (negative starts and ends count from the end, then
 * both are clamped; a negative step walks backwards). */
static int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step)
{
    start = clamp(start, -FAR, FAR);
    end = clamp(end, -FAR, FAR);
    step = clamp(step, -FAR, FAR);
    if (!ir_dim_is_static(dim)) {
        /* the whole dim, forwards or backwards, whatever its size */
        bool whole = (step == 1 && start == 0 && end >= IR_MAX_NUMEL) ||
                     (step == -1 && start == -1 && end <= -IR_MAX_NUMEL);
        return whole ? dim : IR_DIM_UNKNOWN;
    }
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    if (step > 0) {
        start = clamp(start, 0, dim);
        end = clamp(end, 0, dim);
        return end > start ? (end - start + step - 1) / step : 0;
    }
    start = clamp(start, 0, dim - 1);
    end = clamp(end, -1, dim - 1);
    return start > end ? (start - end - step - 1) / -step : 0;
}

/* Slice(data, starts, ends, axes?, steps?): the listed axes are cut, the others kept. */
bool ir_infer_Slice(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t v[4][IR_MAX_RANK]; /* starts, ends, axes, steps */
    uint32_t count[4] = {0, 0, 0, 0};
    ir_read_status st[4];
    for (uint32_t k = 0; k < 4; k++) {
        st[k] = ir_read_ints(g, n, dg, k + 1, v[k], IR_MAX_RANK, &count[k]);
        if (st[k] == IR_READ_ERROR)
            return false;
    }
    if (x->rank < 0) {
        ir_set_unknown(g, n->outputs[0], x->dtype, -1);
        return ir_infer_done(g, n, dg);
    }
    ir_type y = *x;
    bool axes_given = ir_has_input(n, 3), steps_given = ir_has_input(n, 4);
    bool all_known = st[0] == IR_READ_KNOWN && st[1] == IR_READ_KNOWN &&
                     (!axes_given || st[2] == IR_READ_KNOWN) &&
                     (!steps_given || st[3] == IR_READ_KNOWN);
    if (!all_known) {
        /* without the values, any dim may be cut (the listed ones, when the axes are known) */
        for (int i = 0; i < y.rank; i++)
            y.dims[i] = IR_DIM_UNKNOWN;
        if (axes_given && st[2] == IR_READ_KNOWN) {
            y = *x;
            int axes[IR_MAX_RANK];
            if (!ir_norm_axes(g, n, dg, v[2], count[2], x->rank, axes))
                return false;
            for (uint32_t k = 0; k < count[2]; k++)
                y.dims[axes[k]] = IR_DIM_UNKNOWN;
        }
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    uint32_t len = count[0];
    if (count[1] != len || (axes_given && count[2] != len) || (steps_given && count[3] != len))
        return ir_node_error(g, n, dg, "starts, ends, axes and steps must have the same length");
    if (len > (uint32_t)x->rank)
        return ir_node_error(g, n, dg, "%u axes are sliced but the input has rank %d", len,
                             x->rank);
    int axes[IR_MAX_RANK];
    if (!axes_given) {
        for (uint32_t k = 0; k < len; k++)
            v[2][k] = k;
    }
    if (!ir_norm_axes(g, n, dg, v[2], len, x->rank, axes))
        return false;
    for (uint32_t k = 0; k < len; k++) {
        int64_t step = steps_given ? v[3][k] : 1;
        if (step == 0)
            return ir_node_error(g, n, dg, "steps[%u] is 0", k);
        y.dims[axes[k]] = slice_len(x->dims[axes[k]], v[0][k], v[1][k], step);
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- Expand, Tile ---- */

/* Expand(input, shape): input and the shape broadcast both ways. */
bool ir_infer_Expand(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) ||
        !ir_check_rank(g, n, dg, 1, 1, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_sv_elem vals[IR_MAX_RANK];
    uint32_t count;
    ir_read_status st = ir_read_dims(g, n, dg, 1, vals, IR_MAX_RANK, &count);
    if (st == IR_READ_ERROR)
        return false;
    ir_type y = ir_type_unknown(x->dtype, -1);
    if (st == IR_READ_UNKNOWN) {
        int64_t len = ir_input_length(n, 1);
        if (x->rank >= 0 && len >= 0)
            y.rank = (int8_t)(len > x->rank ? len : x->rank);
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    ir_type shape = ir_type_unknown(x->dtype, (int)count);
    for (uint32_t k = 0; k < count; k++) {
        if (vals[k].kind != IR_SV_INT) {
            shape.dims[k] = vals[k].kind == IR_SV_DIM ? vals[k].v : IR_DIM_UNKNOWN;
            continue;
        }
        if (vals[k].v < 0 || vals[k].v > IR_MAX_NUMEL)
            return ir_node_error(g, n, dg, "shape[%u] = %lld is out of range", k,
                                 (long long)vals[k].v);
        shape.dims[k] = vals[k].v;
    }
    if (!ir_broadcast(g, n, dg, x, &shape, &y))
        return false;
    if (y.rank == x->rank)
        y.layout = x->layout;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* Tile(input, repeats): dim i is multiplied by repeats[i]. */
bool ir_infer_Tile(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) ||
        !ir_check_rank(g, n, dg, 1, 1, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_sv_elem reps[IR_MAX_RANK];
    uint32_t count;
    ir_read_status st = ir_read_dims(g, n, dg, 1, reps, IR_MAX_RANK, &count);
    if (st == IR_READ_ERROR)
        return false;
    ir_type y = ir_type_unknown(x->dtype, x->rank);
    y.layout = x->layout;
    if (st == IR_READ_KNOWN && x->rank >= 0) {
        if (count != (uint32_t)x->rank)
            return ir_node_error(g, n, dg, "repeats has %u values but the input has rank %d",
                                 count, x->rank);
        for (int i = 0; i < x->rank; i++) {
            if (reps[i].kind == IR_SV_INT && (reps[i].v < 0 || reps[i].v > IR_MAX_NUMEL))
                return ir_node_error(g, n, dg, "repeats[%d] = %lld is out of range", i,
                                     (long long)reps[i].v);
            y.dims[i] = reps[i].kind == IR_SV_UNKNOWN ? IR_DIM_UNKNOWN
                                                      : ir_dim_mul(g, x->dims[i], reps[i].v);
        }
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- Pad ---- */

static bool pad_mode_known(const char *mode)
{
    return strcmp(mode, "constant") == 0 || strcmp(mode, "reflect") == 0 ||
           strcmp(mode, "edge") == 0 || strcmp(mode, "wrap") == 0;
}

/* One padded dim: d + begin + end, which must not be negative (negative pads crop). reflect needs
 * pads below the dim; edge and wrap need a non-empty dim to copy from. */
static bool padded_dim(ir_graph *g, const ir_node *n, dg_context *dg, const char *mode, int axis,
                       int64_t d, int64_t begin, int64_t end, int64_t *out)
{
    if (begin < -IR_MAX_NUMEL || begin > IR_MAX_NUMEL || end < -IR_MAX_NUMEL || end > IR_MAX_NUMEL)
        return ir_node_error(g, n, dg, "pads of axis %d are out of range", axis);
    if (!ir_dim_is_static(d)) {
        /* d + begin + end as an expression (negative pads crop: assumed to fit, as they must) */
        int64_t both = begin + end;
        *out = both >= 0 ? ir_dim_add(g, d, both) : ir_dim_difference(g, d, -both);
        return true;
    }
    int64_t size = d + begin + end;
    if (size < 0)
        return ir_node_error(g, n, dg, "axis %d of size %lld would have size %lld after pads",
                             axis, (long long)d, (long long)size);
    if (strcmp(mode, "reflect") == 0 && (begin >= d || end >= d) && (begin > 0 || end > 0))
        return ir_node_error(g, n, dg, "reflect pads of axis %d must be below its size %lld",
                             axis, (long long)d);
    if (strcmp(mode, "constant") != 0 && d == 0 && (begin > 0 || end > 0))
        return ir_node_error(g, n, dg, "%s padding of the empty axis %d", mode, axis);
    *out = size;
    return true;
}

/* Pad(data, pads, constant_value?, axes?) {mode}: pads lists the begins then the ends of each
 * padded axis (every axis when axes is omitted). */
bool ir_infer_Pad(ir_graph *g, ir_node *n, dg_context *dg)
{
    const char *mode = ir_get_string(n, "mode");
    if (!pad_mode_known(mode))
        return ir_node_error(g, n, dg, "mode \"%s\" is not constant, reflect, edge or wrap", mode);
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) ||
        !ir_check_same_dtype(g, n, dg, 0, 2) || !ir_check_scalar(g, n, dg, 2))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t pads[2 * IR_MAX_RANK], axes_vals[IR_MAX_RANK];
    uint32_t npads, naxes;
    ir_read_status st = ir_read_ints(g, n, dg, 1, pads, 2 * IR_MAX_RANK, &npads);
    ir_read_status sta = ir_read_ints(g, n, dg, 3, axes_vals, IR_MAX_RANK, &naxes);
    if (st == IR_READ_ERROR || sta == IR_READ_ERROR)
        return false;
    ir_type y = ir_type_unknown(x->dtype, x->rank);
    y.layout = x->layout;
    bool axes_given = ir_has_input(n, 3);
    if (st != IR_READ_KNOWN || (axes_given && sta != IR_READ_KNOWN) || x->rank < 0) {
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    int axes[IR_MAX_RANK];
    if (!axes_given) {
        naxes = (uint32_t)x->rank;
        for (uint32_t k = 0; k < naxes; k++)
            axes_vals[k] = k;
    }
    if (!ir_norm_axes(g, n, dg, axes_vals, naxes, x->rank, axes))
        return false;
    if (npads != 2 * naxes)
        return ir_node_error(g, n, dg, "pads has %u values; expected %u (begin and end of %u axes)",
                             npads, 2 * naxes, naxes);
    y = *x;
    for (uint32_t k = 0; k < naxes; k++) {
        int a = axes[k];
        if (!padded_dim(g, n, dg, mode, a, x->dims[a], pads[k], pads[k + naxes], &y.dims[a]))
            return false;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
