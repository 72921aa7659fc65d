/* Type inference of the neural-network ops: convolution, transposed convolution, pooling, matrix
 * products and normalizations.
 *
 * Shapes are in ONNX's order whatever the layout tag says (Conv reads channels at dim 1); the tag is
 * carried from the data input to the output of Conv-like and normalization ops. */
#include "ir/infer_util.h"

#include <string.h>

/* ---- convolution and pooling ---- */

/* The rank of a windowed op's data: from X, else from W, else from kernel_shape's length + 2.
 * Returns -1 when none of them says. */
static int window_rank(const ir_node *n, const ir_type *x, const ir_type *w)
{
    if (x->rank >= 0)
        return x->rank;
    if (w && w->rank >= 0)
        return w->rank;
    const int64_t *kernel;
    uint32_t count = ir_get_ints(n, "kernel_shape", &kernel);
    return count > 0 && count + 2 <= IR_MAX_RANK ? (int)count + 2 : -1;
}

/* The dim of x at i, or unknown when x's rank is not known. */
static int64_t dim_at(const ir_type *t, int i)
{
    return t && t->rank > i ? t->dims[i] : IR_DIM_UNKNOWN;
}

/* Reads `group`, which must be at least 1. */
static bool read_group(ir_graph *g, const ir_node *n, dg_context *dg, int64_t *group)
{
    *group = ir_get_int(n, "group");
    if (*group < 1 || *group > IR_MAX_NUMEL)
        return ir_node_error(g, n, dg, "group %lld is out of range", (long long)*group);
    return true;
}

/* Takes the kernel size of each spatial dim from W's dims [*, *, k1, k2, ...], checking it
 * against kernel_shape when both are given. */
static bool kernel_from_weight(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *w,
                               ir_window *win)
{
    if (w->rank < 0)
        return true;
    for (int k = 0; k < win->spatial; k++) {
        int64_t kw = w->dims[k + 2], unified;
        if (!ir_dim_unify(kw, win->kernel[k], &unified))
            return ir_node_error(g, n, dg, "kernel_shape[%d] = %lld but the weight's kernel is %lld",
                                 k, (long long)win->kernel[k], (long long)kw);
        win->kernel[k] = unified;
    }
    return true;
}

/* Common checks of Conv and ConvTranspose: dtypes, ranks, the bias length. */
static bool conv_inputs(ir_graph *g, const ir_node *n, dg_context *dg, int rank)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_rank(g, n, dg, 2, 1, 1))
        return false;
    if (rank < 0)
        return true;
    if (rank < 3)
        return ir_node_error(g, n, dg, "input %s has rank %d; expected N, C and spatial dims",
                             ir_input_name(g, n, 0), rank);
    return ir_check_rank(g, n, dg, 0, rank, rank) && ir_check_rank(g, n, dg, 1, rank, rank);
}

/* The bias (input 2), when present, has one value per output channel. */
static bool check_bias(ir_graph *g, const ir_node *n, dg_context *dg, int64_t channels)
{
    const ir_type *b = ir_in(n, 2);
    int64_t unified;
    if (b && b->rank == 1 && !ir_dim_unify(b->dims[0], channels, &unified))
        return ir_node_error(g, n, dg, "bias has %lld values; expected one per output channel (%lld)",
                             (long long)b->dims[0], (long long)channels);
    return true;
}

bool ir_conv_output(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *x,
                    const ir_type *w, ir_type *y)
{
    int rank = window_rank(n, x, w);
    ir_window win;
    int64_t group;
    *y = ir_type_unknown(x->dtype, rank);
    y->layout = x->layout;
    if (rank < 0)
        return true;
    if (rank < 3)
        return ir_node_error(g, n, dg, "input %s has rank %d; expected N, C and spatial dims",
                             ir_input_name(g, n, 0), rank);
    if (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank)
        return ir_node_error(g, n, dg, "the weight has rank %d; the input has rank %d", w->rank,
                             x->rank);
    if (!read_group(g, n, dg, &group) || !ir_window_read(g, n, dg, rank - 2, false, &win) ||
        !kernel_from_weight(g, n, dg, w, &win))
        return false;
    int64_t c = dim_at(x, 1), cw = dim_at(w, 1), m = dim_at(w, 0);
    if (ir_dim_is_static(c) && ir_dim_is_static(cw) && c != ir_sat_mul(cw, group))
        return ir_node_error(g, n, dg,
                             "input has %lld channels but the weight expects %lld (group %lld)",
                             (long long)c, (long long)ir_sat_mul(cw, group), (long long)group);
    if (ir_dim_is_static(c) && c % group != 0)
        return ir_node_error(g, n, dg, "input channels (%lld) are not divisible by group %lld",
                             (long long)c, (long long)group);
    if (ir_dim_is_static(m) && m % group != 0)
        return ir_node_error(g, n, dg, "output channels (%lld) are not divisible by group %lld",
                             (long long)m, (long long)group);
    y->dims[0] = dim_at(x, 0);
    y->dims[1] = m;
    for (int k = 0; k < win.spatial; k++)
        if (!ir_window_out(g, n, dg, &win, k, dim_at(x, k + 2), &y->dims[k + 2]))
            return false;
    return true;
}

/* Conv(X[N,C,D...], W[M,C/group,k...], B[M]?) -> Y[N,M,D'...] */
bool ir_infer_Conv(ir_graph *g, ir_node *n, dg_context *dg)
{
    ir_type y;
    if (!conv_inputs(g, n, dg, window_rank(n, ir_in(n, 0), ir_in(n, 1))) ||
        !ir_conv_output(g, n, dg, ir_in(n, 0), ir_in(n, 1), &y) ||
        !check_bias(g, n, dg, y.rank >= 2 ? y.dims[1] : IR_DIM_UNKNOWN))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* Reads output_padding (each below its stride or dilation) into pad_out, zero when absent. */
static bool read_output_padding(ir_graph *g, const ir_node *n, dg_context *dg, const ir_window *win,
                                int64_t *pad_out)
{
    const int64_t *vals;
    uint32_t count = ir_get_ints(n, "output_padding", &vals);
    memset(pad_out, 0, sizeof *pad_out * IR_MAX_RANK);
    if (count == 0)
        return true;
    if (count != (uint32_t)win->spatial)
        return ir_node_error(g, n, dg, "output_padding has %u values; expected %d", count,
                             win->spatial);
    for (int k = 0; k < win->spatial; k++) {
        int64_t limit = win->strides[k] > win->dilations[k] ? win->strides[k] : win->dilations[k];
        if (vals[k] < 0 || vals[k] >= limit)
            return ir_node_error(g, n, dg,
                                 "output_padding[%d] = %lld must be at least 0 and below the "
                                 "stride or dilation (%lld)",
                                 k, (long long)vals[k], (long long)limit);
        pad_out[k] = vals[k];
    }
    return true;
}

/* Output size of spatial dim k of a transposed convolution without output_shape. */
static bool conv_transpose_out(ir_graph *g, const ir_node *n, dg_context *dg, const ir_window *win,
                               const int64_t *pad_out, int k, int64_t in, int64_t *out)
{
    int64_t stride = win->strides[k], kernel = win->kernel[k];
    bool same = strncmp(win->auto_pad, "SAME", 4) == 0;
    if (same) {
        *out = ir_dim_mul(g, in, stride);
        return true;
    }
    if (kernel == IR_DIM_UNKNOWN) {
        *out = IR_DIM_UNKNOWN;
        return true;
    }
    if (kernel < 1)
        return ir_node_error(g, n, dg, "kernel dim %d has size %lld; it must be at least 1", k,
                             (long long)kernel);
    int64_t extent = ir_sat_add(ir_sat_mul(kernel - 1, win->dilations[k]), 1);
    int64_t pads = ir_sat_add(win->pads[k], win->pads[k + win->spatial]);
    if (!ir_dim_is_static(in)) {
        bool keeps = stride == 1 && pad_out[k] == 0 && pads == extent - 1;
        *out = keeps ? in : IR_DIM_UNKNOWN;
        return true;
    }
    if (in == 0)
        return ir_node_error(g, n, dg, "spatial dim %d of the input is empty", k);
    int64_t full = ir_sat_add(ir_sat_add(ir_sat_mul(stride, in - 1), pad_out[k]), extent);
    if (full <= pads)
        return ir_node_error(g, n, dg, "spatial dim %d would have size %lld after pads",
                             k, (long long)(full - pads));
    *out = full - pads;
    return true;
}

/* ConvTranspose(X[N,C,D...], W[C,M/group,k...], B[M]?) -> Y[N,M,D'...] */
bool ir_infer_ConvTranspose(ir_graph *g, ir_node *n, dg_context *dg)
{
    int rank = window_rank(n, ir_in(n, 0), ir_in(n, 1));
    ir_window win;
    int64_t group, pad_out[IR_MAX_RANK];
    if (!conv_inputs(g, n, dg, rank))
        return false;
    ir_type y = ir_type_unknown(ir_in(n, 0)->dtype, rank);
    y.layout = ir_in(n, 0)->layout;
    if (rank < 0) {
        ir_value_set_type(g, n->outputs[0], &y);
        return ir_infer_done(g, n, dg);
    }
    if (!read_group(g, n, dg, &group) || !ir_window_read(g, n, dg, rank - 2, false, &win) ||
        !kernel_from_weight(g, n, dg, ir_in(n, 1), &win) || !read_output_padding(g, n, dg, &win, pad_out))
        return false;
    const ir_type *x = ir_in(n, 0), *w = ir_in(n, 1);
    int64_t c = dim_at(x, 1), cw = dim_at(w, 0), unified;
    if (!ir_dim_unify(c, cw, &unified))
        return ir_node_error(g, n, dg, "input has %lld channels but the weight expects %lld",
                             (long long)c, (long long)cw);
    if (ir_dim_is_static(unified) && unified % group != 0)
        return ir_node_error(g, n, dg, "input channels (%lld) are not divisible by group %lld",
                             (long long)unified, (long long)group);
    int64_t m = ir_dim_mul(g, dim_at(w, 1), group);
    if (!check_bias(g, n, dg, m))
        return false;
    y.dims[0] = dim_at(x, 0);
    y.dims[1] = m;
    const int64_t *shape;
    uint32_t nshape = ir_get_ints(n, "output_shape", &shape);
    if (nshape != 0 && nshape != (uint32_t)win.spatial && nshape != (uint32_t)rank)
        return ir_node_error(g, n, dg, "output_shape has %u values; expected %d", nshape,
                             win.spatial);
    for (int k = 0; k < win.spatial; k++) {
        if (nshape) {
            /* output_shape may list N and C too; the spatial sizes are its last ones */
            int64_t d = shape[nshape - (uint32_t)win.spatial + (uint32_t)k];
            if (d < 1 || d > IR_MAX_NUMEL)
                return ir_node_error(g, n, dg, "output_shape value %lld is out of range",
                                     (long long)d);
            y.dims[k + 2] = d;
        } else if (!conv_transpose_out(g, n, dg, &win, pad_out, k, dim_at(x, k + 2),
                                       &y.dims[k + 2])) {
            return false;
        }
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* MaxPool and AveragePool: X[N,C,D...] -> Y[N,C,D'...] with the window from the attributes. */
static bool pool(ir_graph *g, ir_node *n, dg_context *dg, unsigned allowed)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, allowed) ||
        !ir_check_rank(g, n, dg, 0, 3, IR_MAX_RANK))
        return false;
    int rank = window_rank(n, ir_in(n, 0), NULL);
    const ir_type *x = ir_in(n, 0);
    ir_type y = ir_type_unknown(x->dtype, rank);
    y.layout = x->layout;
    if (rank >= 0) {
        ir_window win;
        if (!ir_window_read(g, n, dg, rank - 2, true, &win))
            return false;
        y.dims[0] = dim_at(x, 0);
        y.dims[1] = dim_at(x, 1);
        for (int k = 0; k < win.spatial; k++)
            if (!ir_window_out(g, n, dg, &win, k, dim_at(x, k + 2), &y.dims[k + 2]))
                return false;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return true;
}

/* MaxPool(X) -> Y, Indices? (i64, Y's shape) */
bool ir_infer_MaxPool(ir_graph *g, ir_node *n, dg_context *dg)
{
    int64_t order = ir_get_int(n, "storage_order");
    if (order != 0 && order != 1)
        return ir_node_error(g, n, dg, "storage_order %lld is not 0 or 1", (long long)order);
    if (!pool(g, n, dg, IR_DTS_FLOAT | IR_DT(IR_I8) | IR_DT(IR_U8)))
        return false;
    if (n->noutputs > 1) {
        ir_type indices = *n->outputs[0]->type;
        indices.dtype = IR_I64;
        ir_value_set_type(g, n->outputs[1], &indices);
    }
    return ir_infer_done(g, n, dg);
}

bool ir_infer_AveragePool(ir_graph *g, ir_node *n, dg_context *dg)
{
    return pool(g, n, dg, IR_DTS_FLOAT) && ir_infer_done(g, n, dg);
}

/* GlobalAveragePool(X[N,C,D...]) -> Y[N,C,1...] */
bool ir_infer_GlobalAveragePool(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 3, IR_MAX_RANK))
        return false;
    ir_type y = *ir_in(n, 0);
    for (int i = 2; i < y.rank; i++)
        y.dims[i] = 1;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- matrix products ---- */

/* MatMul(A, B): numpy matmul. A 1-D A is a row [1,K] and a 1-D B a column [K,1], whose added dim
 * is dropped from the result; the batch dims broadcast. */
bool ir_matmul_output(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *a,
                      const ir_type *b, ir_type *y)
{
    *y = ir_type_unknown(a->dtype, -1);
    if (a->rank < 0 || b->rank < 0)
        return true;
    int64_t ka = a->dims[a->rank - 1], kb = b->dims[b->rank >= 2 ? b->rank - 2 : 0], k;
    if (!ir_dim_unify(ka, kb, &k))
        return ir_node_error(g, n, dg, "inner dimensions differ: %s times %s (%lld vs %lld)",
                             ir_shape_str(g, a), ir_shape_str(g, b), (long long)ka, (long long)kb);
    /* the batch dims: everything before the last two */
    ir_type ba = *a, bb = *b;
    ba.rank = (int8_t)(a->rank >= 2 ? a->rank - 2 : 0);
    bb.rank = (int8_t)(b->rank >= 2 ? b->rank - 2 : 0);
    if (!ir_broadcast(g, n, dg, &ba, &bb, y))
        return false;
    y->dtype = a->dtype;
    y->layout = IR_LAYOUT_NONE;
    int rank = y->rank + (a->rank >= 2) + (b->rank >= 2);
    if (!ir_check_out_rank(g, n, dg, rank))
        return false;
    if (a->rank >= 2)
        y->dims[y->rank++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        y->dims[y->rank++] = b->dims[b->rank - 1];
    return true;
}

bool ir_infer_MatMul(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) ||
        !ir_check_rank(g, n, dg, 1, 1, IR_MAX_RANK))
        return false;
    ir_type y;
    if (!ir_matmul_output(g, n, dg, ir_in(n, 0), ir_in(n, 1), &y))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* Gemm(A[M,K], B[K,N], C?) -> Y[M,N], A and B transposed first by transA / transB; C broadcasts
 * one way to [M,N]. */
bool ir_infer_Gemm(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) ||
        !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT | IR_DTS_INDEX) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_rank(g, n, dg, 0, 2, 2) || !ir_check_rank(g, n, dg, 1, 2, 2) ||
        !ir_check_rank(g, n, dg, 2, 0, 2))
        return false;
    const ir_type *a = ir_in(n, 0), *b = ir_in(n, 1);
    bool ta = ir_get_int(n, "transA") != 0, tb = ir_get_int(n, "transB") != 0;
    int64_t m = dim_at(a, ta ? 1 : 0), ka = dim_at(a, ta ? 0 : 1);
    int64_t kb = dim_at(b, tb ? 1 : 0), nn = dim_at(b, tb ? 0 : 1), k;
    if (!ir_dim_unify(ka, kb, &k))
        return ir_node_error(g, n, dg,
                             "inner dimensions differ: A %s (transA %d) times B %s (transB %d)",
                             ir_shape_str(g, a), ta, ir_shape_str(g, b), tb);
    ir_type y = ir_type_unknown(a->dtype, 2);
    y.dims[0] = m;
    y.dims[1] = nn;
    if (ir_has_input(n, 2) && !ir_check_unidirectional(g, n, dg, ir_in(n, 2), &y, "C"))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- normalizations ---- */

/* BatchNormalization(X[N,C,...], scale, B, mean, var) -> Y, running_mean?, running_var?
 * Each parameter is a vector of C; the running statistics exist only in training mode. */
bool ir_infer_BatchNormalization(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK))
        return false;
    if (ir_get_int(n, "spatial") != 1)
        return ir_node_error(g, n, dg, "spatial=0 (per-activation statistics) is not supported");
    int64_t training = ir_get_int(n, "training_mode");
    if (training != 0 && training != 1)
        return ir_node_error(g, n, dg, "training_mode %lld is not 0 or 1", (long long)training);
    if (training == 0 && n->noutputs > 1)
        return ir_node_error(g, n, dg, "running_mean and running_var are outputs only when "
                                       "training_mode=1");
    const ir_type *x = ir_in(n, 0);
    static const char *const names[] = {"scale", "B", "input_mean", "input_var"};
    for (uint32_t i = 1; i <= 4; i++) {
        const ir_type *p = ir_in(n, i);
        int64_t unified;
        if (!ir_check_dtype(g, n, dg, i, IR_DTS_FLOAT) || !ir_check_rank(g, n, dg, i, 1, 1))
            return false;
        if (p->rank == 1 && !ir_dim_unify(p->dims[0], dim_at(x, 1), &unified))
            return ir_node_error(g, n, dg, "%s has %lld values but the input has %lld channels",
                                 names[i - 1], (long long)p->dims[0], (long long)x->dims[1]);
    }
    ir_value_set_type(g, n->outputs[0], x);
    for (uint32_t k = 1; k < n->noutputs; k++) {
        ir_type stat = ir_type_unknown(ir_in(n, 3)->dtype, 1);
        stat.dims[0] = dim_at(x, 1);
        ir_value_set_type(g, n->outputs[k], &stat);
    }
    return ir_infer_done(g, n, dg);
}

/* LayerNormalization(X, scale, B?) -> Y, Mean?, InvStdDev?: normalizes over dims [axis, rank);
 * scale and B broadcast to those dims; Mean and InvStdDev keep X's leading dims and have 1 for the
 * normalized ones, in the stash_type dtype. */
bool ir_infer_LayerNormalization(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_same_dtype(g, n, dg, 0, 2))
        return false;
    ir_dtype stash;
    int64_t code = ir_get_int(n, "stash_type");
    if (!ir_dtype_from_onnx(code, &stash) || !ir_dtype_is_float(stash))
        return ir_node_error(g, n, dg, "stash_type %lld is not a float type", (long long)code);
    const ir_type *x = ir_in(n, 0);
    ir_value_set_type(g, n->outputs[0], x);
    ir_type stat = ir_type_unknown(stash, x->rank);
    if (x->rank >= 0) {
        int axis;
        if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
            return false;
        ir_type normalized = ir_type_unknown(x->dtype, x->rank - axis);
        memcpy(normalized.dims, x->dims + axis, sizeof x->dims[0] * (size_t)(x->rank - axis));
        if (!ir_check_unidirectional(g, n, dg, ir_in(n, 1), &normalized, "scale") ||
            (ir_has_input(n, 2) &&
             !ir_check_unidirectional(g, n, dg, ir_in(n, 2), &normalized, "B")))
            return false;
        for (int i = 0; i < x->rank; i++)
            stat.dims[i] = i < axis ? x->dims[i] : 1;
    }
    for (uint32_t k = 1; k < n->noutputs; k++)
        ir_value_set_type(g, n->outputs[k], &stat);
    return ir_infer_done(g, n, dg);
}

/* Softmax(X) along `axis`: X's type. */
bool ir_infer_Softmax(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT))
        return false;
    const ir_type *x = ir_in(n, 0);
    int axis;
    if (x->rank >= 0 && !ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
        return false;
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}
