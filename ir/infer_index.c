/* Type inference of the indexing ops (GatherElements, GatherND, ScatterElements, ScatterND,
 * OneHot, NonZero), the ops with index results (ArgMax, ArgMin, TopK), CumSum, DepthToSpace,
 * SpaceToDepth, Size and CastLike.
 *
 * Output sizes that depend on values (OneHot's depth, TopK's k, NonZero's count) are read from a
 * constant input; otherwise that dim is `?` and the executor reads the value at run time where it
 * can (docs/ops.md). */
#include "ir/infer_util.h"

#include <string.h>

/* The output takes the given type with input 0's dtype unless `dtype` is known. */
static bool set_out(ir_graph *g, ir_node *n, dg_context *dg, uint32_t k, ir_type t)
{
    ir_value_set_type(g, n->outputs[k], &t);
    return k + 1 < n->noutputs || ir_infer_done(g, n, dg);
}

static bool check_reduction(ir_graph *g, const ir_node *n, dg_context *dg)
{
    static const char *const kinds[] = {"none", "add", "mul", "max", "min"};
    const char *r = ir_get_string(n, "reduction");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(r, kinds[i]) == 0)
            return true;
    return ir_node_error(g, n, dg, "reduction \"%s\" is not none, add, mul, max or min", r);
}

/* ---- GatherElements, ScatterElements ---- */

/* data and indices (i32 or i64) of one rank; the axis in range. */
static bool elements_common(ir_graph *g, ir_node *n, dg_context *dg, int *axis)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_INDEX))
        return false;
    const ir_type *x = ir_in(n, 0), *idx = ir_in(n, 1);
    *axis = -1;
    if (x->rank >= 0 && idx->rank >= 0 && x->rank != idx->rank)
        return ir_node_error(g, n, dg, "indices have rank %d; data has rank %d", idx->rank,
                             x->rank);
    if (x->rank >= 0 && !ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", axis))
        return false;
    return true;
}

/* GatherElements(data, indices) {axis}: indices' shape, data's dtype. */
bool ir_infer_GatherElements(ir_graph *g, ir_node *n, dg_context *dg)
{
    int axis;
    if (!elements_common(g, n, dg, &axis))
        return false;
    ir_type y = *ir_in(n, 1);
    y.dtype = ir_in(n, 0)->dtype;
    y.layout = IR_LAYOUT_NONE;
    return set_out(g, n, dg, 0, y);
}

/* ScatterElements(data, indices, updates) {axis, reduction}: updates have indices' shape and data's
 * dtype; the result is data's type. */
bool ir_infer_ScatterElements(ir_graph *g, ir_node *n, dg_context *dg)
{
    int axis;
    if (!elements_common(g, n, dg, &axis) || !check_reduction(g, n, dg) ||
        !ir_check_same_dtype(g, n, dg, 0, 2))
        return false;
    const ir_type *idx = ir_in(n, 1), *upd = ir_in(n, 2);
    if (idx->rank >= 0 && upd->rank >= 0) {
        if (idx->rank != upd->rank)
            return ir_node_error(g, n, dg, "updates %s and indices %s differ in shape",
                                 ir_shape_str(g, upd), ir_shape_str(g, idx));
        for (int i = 0; i < idx->rank; i++) {
            int64_t d;
            if (!ir_dim_unify(idx->dims[i], upd->dims[i], &d))
                return ir_node_error(g, n, dg, "updates %s and indices %s differ in shape",
                                     ir_shape_str(g, upd), ir_shape_str(g, idx));
        }
    }
    return set_out(g, n, dg, 0, *ir_in(n, 0));
}

/* ---- GatherND, ScatterND ---- */

/* The index depth: indices' last dim, which must be static, in [1, rank - batch_dims]. Returns
 * false after an error; *depth is -1 when it cannot be known (unknown ranks or dim). */
static bool nd_depth(ir_graph *g, const ir_node *n, dg_context *dg, int64_t batch, int64_t *depth)
{
    const ir_type *x = ir_in(n, 0), *idx = ir_in(n, 1);
    *depth = -1;
    if (!ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) ||
        !ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 1, IR_MAX_RANK))
        return false;
    if (x->rank < 0 || idx->rank < 0)
        return true;
    if (batch < 0 || batch >= x->rank || batch >= idx->rank)
        return ir_node_error(g, n, dg, "batch_dims = %lld must be below both ranks (%d and %d)",
                             (long long)batch, x->rank, idx->rank);
    for (int64_t i = 0; i < batch; i++) {
        int64_t d;
        if (!ir_dim_unify(x->dims[i], idx->dims[i], &d))
            return ir_node_error(g, n, dg, "batch dim %lld differs: data %s, indices %s",
                                 (long long)i, ir_shape_str(g, x), ir_shape_str(g, idx));
    }
    int64_t last = idx->dims[idx->rank - 1];
    if (!ir_dim_is_static(last))
        return true;
    if (last < 1 || last > x->rank - batch)
        return ir_node_error(g, n, dg,
                             "indices' last dim is %lld; it must be in [1, %lld] for data %s",
                             (long long)last, (long long)(x->rank - batch), ir_shape_str(g, x));
    *depth = last;
    return true;
}

/* GatherND(data, indices) {batch_dims}: data[:b] + indices[b:-1] + data[b + depth:]. */
bool ir_infer_GatherND(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    int64_t batch = ir_get_int(n, "batch_dims"), depth;
    if (!nd_depth(g, n, dg, batch, &depth))
        return false;
    const ir_type *x = ir_in(n, 0), *idx = ir_in(n, 1);
    if (depth < 0)
        return set_out(g, n, dg, 0, ir_type_unknown(x->dtype, -1));
    ir_type y = ir_type_unknown(x->dtype, 0);
    int rank = idx->rank - 1 + x->rank - (int)depth - (int)batch;
    if (!ir_check_out_rank(g, n, dg, rank))
        return false;
    for (int i = 0; i < idx->rank - 1; i++)
        y.dims[y.rank++] = i < batch ? x->dims[i] : idx->dims[i];
    for (int i = (int)(batch + depth); i < x->rank; i++)
        y.dims[y.rank++] = x->dims[i];
    return set_out(g, n, dg, 0, y);
}

/* ScatterND(data, indices, updates) {reduction}: updates are indices[:-1] + data[depth:]; the
 * result is data's type. */
bool ir_infer_ScatterND(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !check_reduction(g, n, dg) ||
        !ir_check_same_dtype(g, n, dg, 0, 2))
        return false;
    int64_t depth;
    if (!nd_depth(g, n, dg, 0, &depth))
        return false;
    const ir_type *x = ir_in(n, 0), *idx = ir_in(n, 1), *upd = ir_in(n, 2);
    if (depth >= 0 && upd->rank >= 0) {
        int want = idx->rank - 1 + x->rank - (int)depth;
        bool ok = upd->rank == want;
        for (int i = 0; ok && i < want; i++) {
            int64_t d, e = i < idx->rank - 1 ? idx->dims[i] : x->dims[depth + i - (idx->rank - 1)];
            ok = ir_dim_unify(upd->dims[i], e, &d);
        }
        if (!ok)
            return ir_node_error(g, n, dg,
                                 "updates are %s; data %s and indices %s need indices[:-1] + "
                                 "data[%lld:]",
                                 ir_shape_str(g, upd), ir_shape_str(g, x), ir_shape_str(g, idx),
                                 (long long)depth);
    }
    return set_out(g, n, dg, 0, *x);
}

/* ---- OneHot ---- */

/* OneHot(indices, depth, values) {axis}: indices' dims with `depth` inserted at axis (counted in
 * the output's rank), in values' dtype. depth is a numeric scalar; values holds [off, on]. */
bool ir_infer_OneHot(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_NUMERIC) || !ir_check_scalar(g, n, dg, 1) ||
        !ir_check_rank(g, n, dg, 2, 1, 1))
        return false;
    const ir_type *idx = ir_in(n, 0), *values = ir_in(n, 2);
    if (values->rank == 1 && ir_dim_is_static(values->dims[0]) && values->dims[0] != 2)
        return ir_node_error(g, n, dg, "values has %lld elements; it holds [off, on]",
                             (long long)values->dims[0]);
    if (idx->rank < 0)
        return set_out(g, n, dg, 0, ir_type_unknown(values->dtype, -1));
    int axis;
    if (!ir_check_out_rank(g, n, dg, idx->rank + 1) ||
        !ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), idx->rank + 1, "axis", &axis))
        return false;
    double depth_value;
    int64_t depth = IR_DIM_UNKNOWN;
    switch (ir_read_scalar(g, n, dg, 1, &depth_value)) {
    case IR_READ_ERROR: return false;
    case IR_READ_UNKNOWN: break;
    case IR_READ_KNOWN:
        if (!(depth_value >= 1 && depth_value <= (double)IR_MAX_NUMEL))
            return ir_node_error(g, n, dg, "depth %g is not in [1, 2^40]", depth_value);
        depth = (int64_t)depth_value;
    }
    ir_type y = ir_type_unknown(values->dtype, idx->rank + 1);
    for (int i = 0, k = 0; i < y.rank; i++)
        y.dims[i] = i == axis ? depth : idx->dims[k++];
    return set_out(g, n, dg, 0, y);
}

/* ---- NonZero ---- */

/* NonZero(X): i64 [rank, count], the count known when X is a constant. */
bool ir_infer_NonZero(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(IR_I64, 2);
    y.dims[0] = x->rank >= 0 ? x->rank : IR_DIM_UNKNOWN;
    const void *data;
    int64_t numel;
    switch (ir_read_const(g, n, dg, 0, &data, &numel)) {
    case IR_READ_ERROR: return false;
    case IR_READ_UNKNOWN: break;
    case IR_READ_KNOWN: {
        int64_t count = 0;
        for (int64_t i = 0; i < numel; i++)
            count += ir_const_element(data, x->dtype, i) != 0;
        y.dims[1] = count;
        break;
    }
    }
    return set_out(g, n, dg, 0, y);
}

/* ---- ArgMax, ArgMin ---- */

static bool arg_reduce(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC))
        return false;
    const ir_type *x = ir_in(n, 0);
    bool keepdims = ir_get_int(n, "keepdims") != 0;
    if (x->rank < 0)
        return set_out(g, n, dg, 0, ir_type_unknown(IR_I64, -1));
    int axis;
    if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
        return false;
    ir_type y = ir_type_unknown(IR_I64, 0);
    for (int i = 0; i < x->rank; i++) {
        if (i != axis)
            y.dims[y.rank++] = x->dims[i];
        else if (keepdims)
            y.dims[y.rank++] = 1;
    }
    if (keepdims)
        y.layout = x->layout;
    return set_out(g, n, dg, 0, y);
}

bool ir_infer_ArgMax(ir_graph *g, ir_node *n, dg_context *dg)
{
    return arg_reduce(g, n, dg);
}
bool ir_infer_ArgMin(ir_graph *g, ir_node *n, dg_context *dg)
{
    return arg_reduce(g, n, dg);
}

/* ---- TopK ---- */

/* TopK(X, K) {axis, largest, sorted} -> Values, Indices: X's dims with K at axis; K is a one-value
 * i64 tensor, at most the axis' size. */
bool ir_infer_TopK(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC) ||
        !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) || !ir_check_scalar(g, n, dg, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t k = IR_DIM_UNKNOWN;
    uint32_t count;
    switch (ir_read_ints(g, n, dg, 1, &k, 1, &count)) {
    case IR_READ_ERROR: return false;
    case IR_READ_UNKNOWN: k = IR_DIM_UNKNOWN; break;
    case IR_READ_KNOWN:
        if (k < 0)
            return ir_node_error(g, n, dg, "k = %lld is negative", (long long)k);
    }
    ir_type y = ir_type_unknown(x->dtype, x->rank);
    if (x->rank >= 0) {
        int axis;
        if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
            return false;
        memcpy(y.dims, x->dims, sizeof y.dims);
        if (k >= 0 && ir_dim_is_static(x->dims[axis]) && k > x->dims[axis])
            return ir_node_error(g, n, dg, "k = %lld is above the axis' size %lld", (long long)k,
                                 (long long)x->dims[axis]);
        y.dims[axis] = k;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    y.dtype = IR_I64;
    return set_out(g, n, dg, 1, y);
}

/* ---- CumSum ---- */

/* CumSum(x, axis): x's type; axis an i32 or i64 scalar, in range when constant. */
bool ir_infer_CumSum(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_INDEX) || !ir_check_scalar(g, n, dg, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t axis;
    uint32_t count;
    ir_read_status st = ir_read_ints(g, n, dg, 1, &axis, 1, &count);
    if (st == IR_READ_ERROR)
        return false;
    int norm;
    if (st == IR_READ_KNOWN && x->rank >= 0 &&
        !ir_norm_axis(g, n, dg, axis, x->rank, "axis", &norm))
        return false;
    return set_out(g, n, dg, 0, *x);
}

/* ---- DepthToSpace, SpaceToDepth ---- */

/* [N, C, H, W] with blocksize b: DepthToSpace gives [N, C/b², H·b, W·b], SpaceToDepth
 * [N, C·b², H/b, W/b]; the divided dims must divide when static. */
static bool depth_space(ir_graph *g, ir_node *n, dg_context *dg, bool to_space)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_rank(g, n, dg, 0, 4, 4))
        return false;
    int64_t b = ir_get_int(n, "blocksize");
    if (b < 1 || b > 65536)
        return ir_node_error(g, n, dg, "blocksize %lld is not in [1, 65536]", (long long)b);
    if (to_space) {
        const char *mode = ir_get_string(n, "mode");
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
            return ir_node_error(g, n, dg, "mode \"%s\" is not \"DCR\" or \"CRD\"", mode);
    }
    const ir_type *x = ir_in(n, 0);
    if (x->rank < 0)
        return set_out(g, n, dg, 0, ir_type_unknown(x->dtype, 4));
    ir_type y = ir_type_unknown(x->dtype, 4);
    y.dims[0] = x->dims[0];
    int64_t div[3] = {x->dims[1], x->dims[2], x->dims[3]};
    int64_t by[3] = {to_space ? b * b : 1, to_space ? 1 : b, to_space ? 1 : b};
    for (int i = 0; i < 3; i++) {
        if (by[i] == 1) {
            y.dims[i + 1] = ir_dim_mul(g, div[i], to_space ? b : b * b);
            continue;
        }
        if (!ir_dim_is_static(div[i])) {
            y.dims[i + 1] = IR_DIM_UNKNOWN;
            continue;
        }
        if (div[i] % by[i] != 0)
            return ir_node_error(g, n, dg, "dim %d of %s is not divisible by %lld", i + 1,
                                 ir_shape_str(g, x), (long long)by[i]);
        y.dims[i + 1] = div[i] / by[i];
    }
    return set_out(g, n, dg, 0, y);
}

bool ir_infer_DepthToSpace(ir_graph *g, ir_node *n, dg_context *dg)
{
    return depth_space(g, n, dg, true);
}

bool ir_infer_SpaceToDepth(ir_graph *g, ir_node *n, dg_context *dg)
{
    return depth_space(g, n, dg, false);
}

/* ---- Size, CastLike ---- */

/* Size(data): an i64 scalar. */
bool ir_infer_Size(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    return set_out(g, n, dg, 0, ir_type_unknown(IR_I64, 0));
}

/* CastLike(input, target_type): input's shape in target_type's dtype. */
bool ir_infer_CastLike(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    ir_type y = *ir_in(n, 0);
    y.dtype = ir_in(n, 1)->dtype;
    return set_out(g, n, dg, 0, y);
}

/* ---- EyeLike, ReverseSequence, Compress ---- */

/* EyeLike(input [R, C]) {dtype, k}: the input's shape in `dtype` (0: the input's). */
bool ir_infer_EyeLike(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_rank(g, n, dg, 0, 2, 2))
        return false;
    ir_type y = *ir_in(n, 0);
    int64_t code = ir_get_int(n, "dtype");
    if (code != 0 && !ir_dtype_from_onnx(code, &y.dtype))
        return ir_node_error(g, n, dg, "dtype = %lld is not a type the IR holds", (long long)code);
    y.layout = IR_LAYOUT_NONE;
    return set_out(g, n, dg, 0, y);
}

/* ReverseSequence(input, sequence_lens [batch]) {batch_axis, time_axis}: input's type; the two
 * axes are 0 and 1, different. */
bool ir_infer_ReverseSequence(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) ||
        !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I64)) || !ir_check_rank(g, n, dg, 1, 1, 1))
        return false;
    int64_t b = ir_get_int(n, "batch_axis"), t = ir_get_int(n, "time_axis");
    if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
        return ir_node_error(g, n, dg, "batch_axis %lld and time_axis %lld must be 0 and 1",
                             (long long)b, (long long)t);
    const ir_type *x = ir_in(n, 0), *lens = ir_in(n, 1);
    int64_t d;
    if (x->rank >= 0 && lens->rank == 1 && !ir_dim_unify(lens->dims[0], x->dims[b], &d))
        return ir_node_error(g, n, dg, "sequence_lens has %lld values for a batch of %lld",
                             (long long)lens->dims[0], (long long)x->dims[b]);
    return set_out(g, n, dg, 0, *x);
}

/* Compress(input, condition (bool vector)) {axis}: along the axis (or the input flattened) the
 * entries whose condition is true; their count is known when the condition is a constant. */
bool ir_infer_Compress(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 1, IR_DTS_BOOL) ||
        !ir_check_rank(g, n, dg, 1, 1, 1))
        return false;
    const ir_type *x = ir_in(n, 0);
    int64_t attr = ir_get_int(n, "axis");
    bool flat = attr == INT64_MIN;
    int axis = 0;
    if (!flat && x->rank >= 0 && !ir_norm_axis(g, n, dg, attr, x->rank, "axis", &axis))
        return false;
    ir_type y = flat ? ir_type_unknown(x->dtype, 1) : ir_type_unknown(x->dtype, x->rank);
    if (!flat && x->rank >= 0)
        memcpy(y.dims, x->dims, sizeof y.dims);
    const void *data;
    int64_t numel, count = 0;
    switch (ir_read_const(g, n, dg, 1, &data, &numel)) {
    case IR_READ_ERROR: return false;
    case IR_READ_UNKNOWN: count = IR_DIM_UNKNOWN; break;
    case IR_READ_KNOWN:
        for (int64_t i = 0; i < numel; i++)
            count += ir_const_element(data, IR_BOOL, i) != 0;
    }
    if (y.rank >= 0)
        y.dims[flat ? 0 : axis] = count;
    return set_out(g, n, dg, 0, y);
}
