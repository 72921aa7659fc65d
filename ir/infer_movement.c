/* Type inference of the data-movement ops whose output shape follows from input shapes and
 * attributes: Transpose, Flatten, Squeeze, Unsqueeze, Identity, Concat, Split, Gather, Trilu.
 * (Squeeze, Unsqueeze and Split read their axes or sizes from a constant input when one is given.) */
#include "ir/infer_util.h"

#include <string.h>

/* ---- Transpose ---- */

/* Channels-first and channels-last layouts of the same rank: a transpose that moves the channel
 * dim last (perm [0,2,...,r-1,1]) or back first relabels the one as the other. */
static const struct {
    ir_layout first, last;
    int rank;
} layout_pairs[] = {
    {IR_LAYOUT_NCW, IR_LAYOUT_NWC, 3},
    {IR_LAYOUT_NCHW, IR_LAYOUT_NHWC, 4},
    {IR_LAYOUT_NCDHW, IR_LAYOUT_NDHWC, 5},
};

static bool perm_is(const int *perm, int rank, bool to_last)
{
    for (int i = 0; i < rank; i++) {
        int want = to_last ? (i == 0 ? 0 : i == rank - 1 ? 1 : i + 1)
                           : (i == 0 ? 0 : i == 1 ? rank - 1 : i - 1);
        if (perm[i] != want)
            return false;
    }
    return true;
}

static ir_layout transposed_layout(ir_layout in, const int *perm, int rank)
{
    bool identity = true;
    for (int i = 0; i < rank; i++)
        identity = identity && perm[i] == i;
    if (identity)
        return in;
    for (size_t k = 0; k < sizeof layout_pairs / sizeof layout_pairs[0]; k++) {
        if (layout_pairs[k].rank != rank)
            continue;
        if (in == layout_pairs[k].first && perm_is(perm, rank, true))
            return layout_pairs[k].last;
        if (in == layout_pairs[k].last && perm_is(perm, rank, false))
            return layout_pairs[k].first;
    }
    return IR_LAYOUT_NONE;
}

/* Transpose(X) {perm}: output dim i is input dim perm[i]; no perm reverses the dims. */
bool ir_infer_Transpose(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    const int64_t *vals;
    uint32_t count = ir_get_ints(n, "perm", &vals);
    int rank = x->rank >= 0 ? x->rank : count > 0 && count <= IR_MAX_RANK ? (int)count : -1;
    if (rank < 0) {
        ir_set_unknown(g, n->outputs[0], x->dtype, -1);
        return ir_infer_done(g, n, dg);
    }
    if (count != 0 && count != (uint32_t)rank)
        return ir_node_error(g, n, dg, "perm has %u values but the input has rank %d", count, rank);
    int perm[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
        int64_t p = count ? vals[i] : rank - 1 - i;
        if (p < 0 || p >= rank || seen[p])
            return ir_node_error(g, n, dg, "perm is not a permutation of 0..%d", rank - 1);
        seen[p] = true;
        perm[i] = (int)p;
    }
    ir_type y = ir_type_unknown(x->dtype, rank);
    for (int i = 0; i < rank; i++)
        y.dims[i] = x->rank >= 0 ? x->dims[perm[i]] : IR_DIM_UNKNOWN;
    y.layout = (uint8_t)transposed_layout((ir_layout)x->layout, perm, rank);
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- Flatten, Identity, Trilu ---- */

/* Flatten(X) {axis}: [d0 * ... * d(axis-1), d(axis) * ... * d(r-1)] */
bool ir_infer_Flatten(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(x->dtype, 2);
    if (x->rank >= 0) {
        int64_t axis = ir_get_int(n, "axis");
        if (axis < -(int64_t)x->rank || axis > x->rank)
            return ir_node_error(g, n, dg, "axis %lld is out of range for rank %d",
                                 (long long)axis, x->rank);
        int split = (int)(axis < 0 ? axis + x->rank : axis);
        y.dims[0] = y.dims[1] = 1;
        for (int i = 0; i < x->rank; i++)
            y.dims[i >= split] = ir_dim_mul(g, y.dims[i >= split], x->dims[i]);
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_Identity(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    ir_value_set_type(g, n->outputs[0], ir_in(n, 0));
    return ir_infer_done(g, n, dg);
}

/* Trilu(X[..., M, N], k?): X's type; k is an integer scalar. */
bool ir_infer_Trilu(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) ||
        !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) || !ir_check_scalar(g, n, dg, 1))
        return false;
    ir_value_set_type(g, n->outputs[0], ir_in(n, 0));
    return ir_infer_done(g, n, dg);
}

/* ---- Squeeze, Unsqueeze ---- */

/* Squeeze(X, axes?) {axes}: removes the listed dims, which must be 1; without axes, every dim that
 * is statically 1 (the rank is then unknown when some dim is not static). */
bool ir_infer_Squeeze(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t vals[IR_MAX_RANK];
    int axes[IR_MAX_RANK];
    uint32_t count;
    bool known;
    if (!ir_read_axes_raw(g, n, dg, 1, "axes", vals, &count, &known))
        return false;
    ir_type y = ir_type_unknown(x->dtype, -1);
    int64_t listed = ir_input_length(n, 1);
    if (x->rank >= 0 && !known && listed >= 0 && listed <= x->rank)
        y.rank = (int8_t)(x->rank - listed);
    if (x->rank < 0 || !known) {
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    if (!ir_norm_axes(g, n, dg, vals, count, x->rank, axes))
        return false;
    bool squeezed[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < count; k++) {
        int64_t d = x->dims[axes[k]];
        if (ir_dim_is_static(d) && d != 1)
            return ir_node_error(g, n, dg, "dim %d has size %lld, not 1", axes[k], (long long)d);
        squeezed[axes[k]] = true;
    }
    for (int i = 0; i < x->rank && count == 0; i++) {
        if (!ir_dim_is_static(x->dims[i])) {
            /* it may or may not be 1: the rank is unknown */
            ir_value_set_type(g, n->outputs[0], &y);
            return ir_infer_done(g, n, dg);
        }
        squeezed[i] = x->dims[i] == 1;
    }
    y.rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!squeezed[i])
            y.dims[y.rank++] = x->dims[i];
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* Unsqueeze(X, axes?) {axes}: inserts a 1 at each listed position of the output (axes are
 * normalized against the output's rank). */
bool ir_infer_Unsqueeze(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t vals[IR_MAX_RANK];
    int axes[IR_MAX_RANK];
    uint32_t count;
    bool known;
    if (!ir_read_axes_raw(g, n, dg, 1, "axes", vals, &count, &known))
        return false;
    if (!known)
        count = ir_input_length(n, 1) >= 0 ? (uint32_t)ir_input_length(n, 1) : 0;
    if (x->rank < 0 || (!known && ir_input_length(n, 1) < 0)) {
        ir_set_unknown(g, n->outputs[0], x->dtype, -1);
        return ir_infer_done(g, n, dg);
    }
    if (known && count == 0)
        return ir_node_error(g, n, dg, "axes are required");
    int rank = x->rank + (int)count;
    if (!ir_check_out_rank(g, n, dg, rank))
        return false;
    ir_type y = ir_type_unknown(x->dtype, rank);
    if (known) {
        if (!ir_norm_axes(g, n, dg, vals, count, rank, axes))
            return false;
        bool inserted[IR_MAX_RANK] = {false};
        for (uint32_t k = 0; k < count; k++)
            inserted[axes[k]] = true;
        for (int i = 0, j = 0; i < rank; i++)
            y.dims[i] = inserted[i] ? 1 : x->dims[j++];
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- Concat, Split ---- */

/* Concat(X1, X2, ...) {axis}: equal shapes except along axis, where the sizes add up. */
bool ir_infer_Concat(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *shaped = NULL; /* the first input of known rank */
    for (uint32_t i = 0; i < n->ninputs; i++) {
        if (!ir_check_same_dtype(g, n, dg, 0, i))
            return false;
        const ir_type *t = ir_in(n, i);
        if (t && t->rank >= 0 && !shaped)
            shaped = t;
        if (t && shaped && t->rank >= 0 && t->rank != shaped->rank)
            return ir_node_error(g, n, dg, "inputs have ranks %d and %d; they must be equal",
                                 shaped->rank, t->rank);
    }
    ir_dtype dtype = ir_common_dtype(n, 0, n->ninputs - 1);
    if (!shaped) {
        ir_set_unknown(g, n->outputs[0], dtype, -1);
        return ir_infer_done(g, n, dg);
    }
    int axis;
    if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), shaped->rank, "axis", &axis))
        return false;
    ir_type y = *shaped;
    y.dtype = dtype;
    y.layout = ir_in(n, 0)->layout;
    y.dims[axis] = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_type *t = ir_in(n, i);
        if (!t)
            return ir_node_error(g, n, dg, "input #%u is omitted", i);
        if (t->rank < 0) {
            y.dims[axis] = IR_DIM_UNKNOWN;
            continue;
        }
        for (int d = 0; d < y.rank; d++) {
            if (d == axis)
                y.dims[d] = y.dims[d] == 0 ? t->dims[d] : ir_dim_add(g, y.dims[d], t->dims[d]);
            else if (!ir_dim_unify(y.dims[d], t->dims[d], &y.dims[d]))
                return ir_node_error(g, n, dg, "input %s has shape %s; dim %d differs from %s",
                                     ir_input_name(g, n, i), ir_shape_str(g, t), d,
                                     ir_shape_str(g, shaped));
        }
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* The sizes of Split's outputs along the axis of size `dim`: from input 1, the `split` attribute,
 * or an even split (the last part smaller when it does not divide). Unknown sizes are
 * IR_DIM_UNKNOWN. */
static bool split_sizes(ir_graph *g, const ir_node *n, dg_context *dg, int64_t dim, int64_t *sizes)
{
    uint32_t parts = n->noutputs, count = 0;
    int64_t num = ir_get_int(n, "num_outputs");
    if (num != 0 && num != (int64_t)parts)
        return ir_node_error(g, n, dg, "num_outputs is %lld but the node has %u outputs",
                             (long long)num, parts);
    const int64_t *attr;
    uint32_t nattr = ir_get_ints(n, "split", &attr);
    ir_read_status st = IR_READ_UNKNOWN;
    if (ir_has_input(n, 1)) {
        if (nattr)
            return ir_node_error(g, n, dg, "split given both as an input and as an attribute");
        st = ir_read_ints(g, n, dg, 1, sizes, parts, &count);
        if (st == IR_READ_ERROR)
            return false;
    } else if (nattr) {
        if (nattr != parts)
            return ir_node_error(g, n, dg, "split lists %u sizes for %u outputs", nattr, parts);
        memcpy(sizes, attr, nattr * sizeof *sizes);
        count = nattr;
        st = IR_READ_KNOWN;
    }
    if (st == IR_READ_KNOWN) {
        if (count != parts)
            return ir_node_error(g, n, dg, "split lists %u sizes for %u outputs", count, parts);
        int64_t total = 0;
        for (uint32_t k = 0; k < parts; k++) {
            if (sizes[k] < 0 || sizes[k] > IR_MAX_NUMEL)
                return ir_node_error(g, n, dg, "split size %lld is out of range",
                                     (long long)sizes[k]);
            total += sizes[k];
        }
        if (ir_dim_is_static(dim) && total != dim)
            return ir_node_error(g, n, dg, "split sizes add up to %lld but the dim is %lld",
                                 (long long)total, (long long)dim);
        return true;
    }
    for (uint32_t k = 0; k < parts; k++)
        sizes[k] = IR_DIM_UNKNOWN;
    if (ir_has_input(n, 1) || !ir_dim_is_static(dim))
        return true;
    int64_t chunk = dim / parts + (dim % parts != 0);
    if (chunk * (parts - 1) > dim)
        return ir_node_error(g, n, dg, "a dim of %lld cannot be split into %u parts",
                             (long long)dim, parts);
    for (uint32_t k = 0; k < parts; k++)
        sizes[k] = k + 1 < parts ? chunk : dim - chunk * (parts - 1);
    return true;
}

/* Split(X, split?) {axis, split, num_outputs} -> Y1, Y2, ...: X's shape with the axis dim cut. */
bool ir_infer_Split(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    int axis = 0;
    if (x->rank >= 0 && !ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
        return false;
    int64_t *sizes = ar_alloc_array(g->arena, n->noutputs, sizeof *sizes);
    if (!split_sizes(g, n, dg, x->rank > 0 ? x->dims[axis] : IR_DIM_UNKNOWN, sizes))
        return false;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        ir_type y = *x;
        if (y.rank > 0)
            y.dims[axis] = sizes[k];
        ir_value_set_type(g, n->outputs[k], &y);
    }
    return ir_infer_done(g, n, dg);
}

/* ---- Gather ---- */

/* Indices read to check their range: a bound on the work, since they may be a large weight. */
#define MAX_CHECKED_INDICES 65536

/* Constant indices must lie in [-dim, dim). */
static bool check_indices(ir_graph *g, const ir_node *n, dg_context *dg, int64_t dim)
{
    int64_t count;
    const ir_type *t = ir_in(n, 1);
    if (n->inputs[1]->kind != IR_VALUE_CONST || !ir_dim_is_static(dim) ||
        !ir_type_numel(t, &count) || count > MAX_CHECKED_INDICES)
        return true;
    const void *data;
    ir_read_status st = ir_read_const(g, n, dg, 1, &data, &count);
    if (st != IR_READ_KNOWN)
        return st != IR_READ_ERROR;
    ir_dtype dt = ir_in(n, 1)->dtype;
    for (int64_t k = 0; k < count; k++) {
        double v = ir_const_element(data, dt, k);
        if (v < (double)-dim || v >= (double)dim)
            return ir_node_error(g, n, dg, "index %.0f is out of range for a dim of %lld", v,
                                 (long long)dim);
    }
    return true;
}

/* Gather(data, indices) {axis}: data's dims with the axis dim replaced by indices' dims. */
bool ir_infer_Gather(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_INDEX))
        return false;
    const ir_type *x = ir_in(n, 0), *idx = ir_in(n, 1);
    if (x->rank < 0 || idx->rank < 0) {
        ir_set_unknown(g, n->outputs[0], x->dtype, -1);
        return ir_infer_done(g, n, dg);
    }
    int axis;
    if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis) ||
        !ir_check_out_rank(g, n, dg, x->rank - 1 + idx->rank) ||
        !check_indices(g, n, dg, x->dims[axis]))
        return false;
    ir_type y = ir_type_unknown(x->dtype, 0);
    for (int i = 0; i < axis; i++)
        y.dims[y.rank++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        y.dims[y.rank++] = idx->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        y.dims[y.rank++] = x->dims[i];
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
