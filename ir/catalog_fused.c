/* The fused ops of the catalog (ir/fused_ops.def): attribute schemas and type inference.
 *
 * docs/kernels.md is the specification each inference here follows; kernels/cpu/fused_*.c compute
 * exactly what is inferred. Inference checks everything a kernel relies on (ranks, dtypes,
 * broadcastability, attribute values), so a validated graph never hands a kernel a shape it cannot
 * run. Dims that are symbolic or unknown are accepted wherever a static dim would be, and checked
 * again when the executor binds them. */
#include "ir/acts.h"
#include "ir/infer_util.h"

#include "base/check.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- attribute schemas ----------------------------------------------------------------------- */

/* The activation epilogue shared by FusedConvAct and GemmEpilogue. act_alpha and act_beta default
 * to the activation's own ONNX defaults (ir/acts.def) when absent; the schema default (NaN) means
 * exactly that "absent". */
#define ACT_ATTRS                                                                                  \
    {"act", IR_ATTR_STRING, false, 0, 0, "Identity", NULL, 0},                                     \
        {"act_alpha", IR_ATTR_FLOAT, false, 0, NAN, NULL, NULL, 0},                                \
        {"act_beta", IR_ATTR_FLOAT, false, 0, NAN, NULL, NULL, 0}

const ir_attr_schema ir_attrs_FusedConvAct[] = {
    {"auto_pad", IR_ATTR_STRING, false, 0, 0, "NOTSET", NULL, 0},
    {"dilations", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"group", IR_ATTR_INT, false, 1, 0, NULL, NULL, 0},
    {"kernel_shape", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"pads", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"strides", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    ACT_ATTRS,
};
const uint32_t ir_nattrs_FusedConvAct = FR_COUNT_OF(ir_attrs_FusedConvAct);

const ir_attr_schema ir_attrs_GemmEpilogue[] = {
    {"transA", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
    {"transB", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
    {"alpha", IR_ATTR_FLOAT, false, 0, 1.0, NULL, NULL, 0},
    {"beta", IR_ATTR_FLOAT, false, 0, 1.0, NULL, NULL, 0},
    ACT_ATTRS,
    {"transBatchA", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
    {"transBatchB", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_GemmEpilogue = FR_COUNT_OF(ir_attrs_GemmEpilogue);

const ir_attr_schema ir_attrs_FusedQKV[] = {
    {"sizes", IR_ATTR_INTS, true, 0, 0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_FusedQKV = FR_COUNT_OF(ir_attrs_FusedQKV);

#define NORM_ATTRS                                                                                 \
    {"axis", IR_ATTR_INT, false, -1, 0, NULL, NULL, 0},                                            \
        {"epsilon", IR_ATTR_FLOAT, false, 0, 1e-5, NULL, NULL, 0}

const ir_attr_schema ir_attrs_RMSNorm[] = {NORM_ATTRS};
const uint32_t ir_nattrs_RMSNorm = FR_COUNT_OF(ir_attrs_RMSNorm);
const ir_attr_schema ir_attrs_AddLayerNorm[] = {NORM_ATTRS};
const uint32_t ir_nattrs_AddLayerNorm = FR_COUNT_OF(ir_attrs_AddLayerNorm);
const ir_attr_schema ir_attrs_AddRMSNorm[] = {NORM_ATTRS};
const uint32_t ir_nattrs_AddRMSNorm = FR_COUNT_OF(ir_attrs_AddRMSNorm);

const ir_attr_schema ir_attrs_FusedSoftmax[] = {
    {"axis", IR_ATTR_INT, false, -1, 0, NULL, NULL, 0},
    {"scale", IR_ATTR_FLOAT, false, 0, 1.0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_FusedSoftmax = FR_COUNT_OF(ir_attrs_FusedSoftmax);

const ir_attr_schema ir_attrs_ElementwiseChain[] = {
    {"expr", IR_ATTR_STRING, true, 0, 0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_ElementwiseChain = FR_COUNT_OF(ir_attrs_ElementwiseChain);

const ir_attr_schema ir_attrs_Attention[] = {
    {"scale", IR_ATTR_FLOAT, false, 0, 0.0, NULL, NULL, 0},
    {"causal", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
    {"layout", IR_ATTR_STRING, false, 0, 0, "BHSD", NULL, 0},
    /* 1: probabilities that are NaN become 0 (SDPA's Where(IsNaN(p), 0, p): fully masked rows) */
    {"nan_to_zero", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
    /* what a key whose key_mask entry is not > 0 adds to its scores (ONNX Runtime's default) */
    {"mask_filter_value", IR_ATTR_FLOAT, false, 0, -10000.0, NULL, NULL, 0},
    /* packed: when set ([Nq, Nk, Nv]), inputs 0..2 are X [B, S, C], W [C, Nq + Nk + Nv] and its
     * bias, and Q, K, V are the column blocks of X @ W + bias in num_heads heads (BSHD only) */
    {"qkv_sizes", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"num_heads", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
    /* with causal = 2: what a masked score becomes, before the masks are added (GPT-2's
     * Where(tril, scores, -10000)) */
    {"causal_fill", IR_ATTR_FLOAT, false, 0, -10000.0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_Attention = FR_COUNT_OF(ir_attrs_Attention);

const ir_attr_schema ir_attrs_RoPE[] = {
    {"interleaved", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_RoPE = FR_COUNT_OF(ir_attrs_RoPE);

const ir_attr_schema ir_attrs_SwiGLU[] = {{"", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0}};
const uint32_t ir_nattrs_SwiGLU = 0;

const ir_attr_schema ir_attrs_QGemm[] = {{"", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0}};
const uint32_t ir_nattrs_QGemm = 0;

const ir_attr_schema ir_attrs_DynamicQuantizeMatMul[] = {
    {"", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0}};
const uint32_t ir_nattrs_DynamicQuantizeMatMul = 0;

/* The depthwise conv's window (group is its channel count), the activation between the two convs
 * (act), and the one after the pointwise conv (out_act), each with FusedConvAct's parameters. */
const ir_attr_schema ir_attrs_SeparableConv[] = {
    {"auto_pad", IR_ATTR_STRING, false, 0, 0, "NOTSET", NULL, 0},
    {"dilations", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"group", IR_ATTR_INT, false, 1, 0, NULL, NULL, 0},
    {"kernel_shape", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"pads", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    {"strides", IR_ATTR_INTS, false, 0, 0, NULL, NULL, 0},
    ACT_ATTRS,
    {"out_act", IR_ATTR_STRING, false, 0, 0, "Identity", NULL, 0},
    {"out_act_alpha", IR_ATTR_FLOAT, false, 0, NAN, NULL, NULL, 0},
    {"out_act_beta", IR_ATTR_FLOAT, false, 0, NAN, NULL, NULL, 0},
};
const uint32_t ir_nattrs_SeparableConv = FR_COUNT_OF(ir_attrs_SeparableConv);

/* The activation between the two 1x1 convs (act) and the gate on the second (gate), each with
 * FusedConvAct's parameters. */
const ir_attr_schema ir_attrs_SqueezeExcite[] = {
    ACT_ATTRS,
    {"gate", IR_ATTR_STRING, false, 0, 0, "Sigmoid", NULL, 0},
    {"gate_alpha", IR_ATTR_FLOAT, false, 0, NAN, NULL, NULL, 0},
    {"gate_beta", IR_ATTR_FLOAT, false, 0, NAN, NULL, NULL, 0},
};
const uint32_t ir_nattrs_SqueezeExcite = FR_COUNT_OF(ir_attrs_SqueezeExcite);

/* The seed of the dropout mask (kernels/dropout_mask.h): the matched Dropout's, 0 when absent. */
const ir_attr_schema ir_attrs_BiasDropout[] = {
    {"seed", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0},
};
const uint32_t ir_nattrs_BiasDropout = FR_COUNT_OF(ir_attrs_BiasDropout);

const ir_attr_schema ir_attrs_QLinearAdd[] = {{"", IR_ATTR_INT, false, 0, 0, NULL, NULL, 0}};
const uint32_t ir_nattrs_QLinearAdd = 0;

/* ---- helpers --------------------------------------------------------------------------------- */

/* Arity, and every present input a float of input 0's dtype. */
static bool float_inputs(ir_graph *g, const ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (!ir_check_dtype(g, n, dg, i, IR_DTS_FLOAT) || !ir_check_same_dtype(g, n, dg, 0, i))
            return false;
    return true;
}

/* Some input with unknown rank: the shape checks are left to the executor, which binds them. */
static bool any_rank_unknown(const ir_node *n)
{
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (ir_in(n, i) && ir_in(n, i)->rank < 0)
            return true;
    return false;
}

/* Every output gets dtype dt and unknown rank. */
static bool all_unknown(ir_graph *g, ir_node *n, dg_context *dg, ir_dtype dt)
{
    for (uint32_t i = 0; i < n->noutputs; i++)
        ir_set_unknown(g, n->outputs[i], dt, -1);
    return ir_infer_done(g, n, dg);
}

/* Dims a and b must be equal (a static dim against a symbol or unknown is not refused). */
static bool dims_agree(int64_t a, int64_t b)
{
    int64_t unified;
    return ir_dim_unify(a, b, &unified);
}

/* A vector input (when present) of `len` values. */
static bool check_vector(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int64_t len,
                         const char *what)
{
    const ir_type *t = ir_in(n, i);
    if (t && t->rank >= 0 && (t->rank != 1 || !dims_agree(t->dims[0], len))) {
        ir_type expected = ir_type_unknown(t->dtype, 1);
        expected.dims[0] = len;
        return ir_node_error(g, n, dg, "%s has shape %s; expected %s", what, ir_shape_str(g, t),
                             ir_shape_str(g, &expected));
    }
    return true;
}

/* The activation named by attribute `attr` ("act", or SeparableConv's "out_act"): a row of
 * ir/acts.def. */
static bool check_act_named(ir_graph *g, const ir_node *n, dg_context *dg, const char *attr)
{
    const char *act = ir_get_string(n, attr);
    ir_act known;
    if (ir_act_lookup(act, &known))
        return true;
    char names[IR_ACT_NAMES_SIZE];
    ir_act_names(names, sizeof names);
    return ir_node_error(g, n, dg, "unknown activation \"%s\" (expected %s)", act, names);
}

static bool check_act(ir_graph *g, const ir_node *n, dg_context *dg)
{
    return check_act_named(g, n, dg, "act");
}

/* ---- FusedConvAct ---------------------------------------------------------------------------- */

/* FusedConvAct(X[N,C,D...], W[M,C/group,k...], B[M]?, residual?) -> Y[N,M,D'...]; the residual has
 * Y's shape. */
bool ir_infer_FusedConvAct(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg) || !check_act(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0), *w = ir_in(n, 1), *z = ir_in(n, 3);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, x->dtype);
    if (x->rank < 3)
        return ir_node_error(g, n, dg, "input %s has rank %d; expected N, C and spatial dims",
                             ir_input_name(g, n, 0), x->rank);
    if (!ir_check_rank(g, n, dg, 1, x->rank, x->rank))
        return false;
    ir_window win;
    if (!ir_window_read(g, n, dg, x->rank - 2, false, &win))
        return false;
    for (int k = 0; k < win.spatial; k++) {
        int64_t unified;
        if (!ir_dim_unify(w->dims[k + 2], win.kernel[k], &unified))
            return ir_node_error(g, n, dg,
                                 "kernel_shape[%d] = %lld but the weight's kernel is %lld", k,
                                 (long long)win.kernel[k], (long long)w->dims[k + 2]);
        win.kernel[k] = unified;
    }
    int64_t group = ir_get_int(n, "group");
    if (group < 1 || group > IR_MAX_NUMEL)
        return ir_node_error(g, n, dg, "group %lld is out of range", (long long)group);
    int64_t c = x->dims[1], cw = w->dims[1], m = w->dims[0];
    if (ir_dim_is_static(c) && ir_dim_is_static(cw) && c != ir_sat_mul(cw, group))
        return ir_node_error(g, n, dg,
                             "input has %lld channels but the weight expects %lld (group %lld)",
                             (long long)c, (long long)ir_sat_mul(cw, group), (long long)group);
    if (ir_dim_is_static(m) && m % group != 0)
        return ir_node_error(g, n, dg, "output channels (%lld) are not divisible by group %lld",
                             (long long)m, (long long)group);
    if (!check_vector(g, n, dg, 2, m, "bias"))
        return false;
    ir_type y = *x;
    y.dims[1] = m;
    for (int k = 0; k < win.spatial; k++)
        if (!ir_window_out(g, n, dg, &win, k, x->dims[k + 2], &y.dims[k + 2]))
            return false;
    if (z) {
        bool same = z->rank == y.rank;
        for (int i = 0; same && i < y.rank; i++)
            same = dims_agree(z->dims[i], y.dims[i]);
        if (!same)
            return ir_node_error(g, n, dg, "the residual Z has shape %s; the output has %s",
                                 ir_shape_str(g, z), ir_shape_str(g, &y));
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- SeparableConv --------------------------------------------------------------------------- */

/* X (input 0) has N, C and spatial dims, and the weights at inputs wa and wb have X's rank (the
 * conv weights of SeparableConv and SqueezeExcite). */
static bool channels_first_weights(ir_graph *g, ir_node *n, dg_context *dg, uint32_t wa,
                                   uint32_t wb)
{
    int rank = ir_in(n, 0)->rank;
    if (rank < 3)
        return ir_node_error(g, n, dg, "input %s has rank %d; expected N, C and spatial dims",
                             ir_input_name(g, n, 0), rank);
    return ir_check_rank(g, n, dg, wa, rank, rank) && ir_check_rank(g, n, dg, wb, rank, rank);
}

/* SeparableConv(X[N,C,D...], W_dw[C*k,1,kernel...], W_pw[M,C*k,1...], B_dw[C*k]?, B_pw[M]?,
 * residual?) -> Y[N,M,D'...]: a depthwise conv (group = C, k output channels per input channel)
 * with the window attributes, act, then a 1x1 conv over all its channels, plus the residual (of
 * Y's shape), out_act. D' is the depthwise conv's output size (the pointwise conv keeps it). */
bool ir_infer_SeparableConv(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg) || !check_act(g, n, dg) || !check_act_named(g, n, dg, "out_act"))
        return false;
    const ir_type *x = ir_in(n, 0), *wd = ir_in(n, 1), *wp = ir_in(n, 2);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, x->dtype);
    if (!channels_first_weights(g, n, dg, 1, 2))
        return false;
    ir_window win;
    if (!ir_window_read(g, n, dg, x->rank - 2, false, &win))
        return false;
    for (int k = 0; k < win.spatial; k++) {
        int64_t unified;
        if (!ir_dim_unify(wd->dims[k + 2], win.kernel[k], &unified))
            return ir_node_error(g, n, dg,
                                 "kernel_shape[%d] = %lld but the depthwise weight's kernel is "
                                 "%lld",
                                 k, (long long)win.kernel[k], (long long)wd->dims[k + 2]);
        if (ir_dim_is_static(wp->dims[k + 2]) && wp->dims[k + 2] != 1)
            return ir_node_error(g, n, dg, "the pointwise weight %s is not 1x1",
                                 ir_shape_str(g, wp));
        win.kernel[k] = unified;
    }
    int64_t group = ir_get_int(n, "group"), c = x->dims[1], cd = wd->dims[0];
    if (ir_dim_is_static(c) && group != c)
        return ir_node_error(g, n, dg,
                             "group %lld is not the input's %lld channels; the first conv must be "
                             "depthwise",
                             (long long)group, (long long)c);
    if ((ir_dim_is_static(wd->dims[1]) && wd->dims[1] != 1) ||
        (ir_dim_is_static(cd) && ir_dim_is_static(c) && cd % c != 0))
        return ir_node_error(g, n, dg,
                             "the depthwise weight %s must be [k * %lld, 1, kernel...]: one input "
                             "channel per group",
                             ir_shape_str(g, wd), (long long)c);
    if (!dims_agree(wp->dims[1], cd))
        return ir_node_error(g, n, dg,
                             "the pointwise weight %s reads %lld channels; the depthwise conv "
                             "gives %lld",
                             ir_shape_str(g, wp), (long long)wp->dims[1], (long long)cd);
    if (!check_vector(g, n, dg, 3, cd, "the depthwise bias") ||
        !check_vector(g, n, dg, 4, wp->dims[0], "the pointwise bias"))
        return false;
    ir_type y = *x;
    y.dims[1] = wp->dims[0];
    for (int k = 0; k < win.spatial; k++)
        if (!ir_window_out(g, n, dg, &win, k, x->dims[k + 2], &y.dims[k + 2]))
            return false;
    const ir_type *z = ir_in(n, 5);
    if (z) {
        bool same = z->rank == y.rank;
        for (int i = 0; same && i < y.rank; i++)
            same = dims_agree(z->dims[i], y.dims[i]);
        if (!same)
            return ir_node_error(g, n, dg, "the residual has shape %s; the output has %s",
                                 ir_shape_str(g, z), ir_shape_str(g, &y));
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- GemmEpilogue ---------------------------------------------------------------------------- */

/* t with its first dim moved behind the batch dims ([d0, b..., d] -> [b..., d0, d]): what
 * transBatchA / transBatchB make of an operand before transA / transB. */
static ir_type trans_batch_view(const ir_type *t)
{
    ir_type v = *t;
    int r = t->rank;
    for (int i = 0; i < r - 2; i++)
        v.dims[i] = t->dims[i + 1];
    v.dims[r - 2] = t->dims[0];
    v.layout = IR_LAYOUT_NONE;
    return v;
}

/* GemmEpilogue(A[...,M,K], B[...,K,N], bias[N]?, residual?) -> Y[...,M,N] (a 1-D A [K] with a
 * matrix B gives Y [N], as MatMul's vector does; transBatchA/transBatchB
 * first move the first dim of A / B behind its batch dims, as ONNX Runtime's FusedMatMul does, and
 * need A and B of one rank of at least 3; transA/transB then swap the last two dims of A / B); a
 * batched B's batch dims broadcast with A's as MatMul's do; the residual broadcasts to Y. */
bool ir_infer_GemmEpilogue(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg) || !check_act(g, n, dg))
        return false;
    const ir_type *a = ir_in(n, 0), *b = ir_in(n, 1);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, a->dtype);
    if (!ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 2, IR_MAX_RANK))
        return false;
    bool tba = ir_get_int(n, "transBatchA") != 0, tbb = ir_get_int(n, "transBatchB") != 0;
    if (a->rank == 1) { /* a vector times a matrix, as MatMul's 1-D A: Y [N] */
        if (b->rank != 2 || ir_get_int(n, "transA") || tba || tbb)
            return ir_node_error(g, n, dg,
                                 "a 1-D A %s needs a matrix B (not %s) and no transA or transBatch",
                                 ir_shape_str(g, a), ir_shape_str(g, b));
        bool tb1 = ir_get_int(n, "transB") != 0;
        if (!dims_agree(a->dims[0], b->dims[tb1 ? 1 : 0]))
            return ir_node_error(g, n, dg, "A %s and B %s disagree on K", ir_shape_str(g, a),
                                 ir_shape_str(g, b));
        ir_type y1 = *a;
        y1.layout = IR_LAYOUT_NONE;
        y1.dims[0] = b->dims[tb1 ? 0 : 1];
        if (!check_vector(g, n, dg, 2, y1.dims[0], "bias") ||
            (ir_in(n, 3) && !ir_check_unidirectional(g, n, dg, ir_in(n, 3), &y1, "the residual")))
            return false;
        ir_value_set_type(g, n->outputs[0], &y1);
        return ir_infer_done(g, n, dg);
    }
    ir_type va, vb;
    if (tba || tbb) {
        if (a->rank != b->rank || a->rank < 3)
            return ir_node_error(g, n, dg,
                                 "transBatchA/transBatchB need A and B of one rank of at least 3, "
                                 "not A %s and B %s",
                                 ir_shape_str(g, a), ir_shape_str(g, b));
        va = tba ? trans_batch_view(a) : *a;
        vb = tbb ? trans_batch_view(b) : *b;
        a = &va;
        b = &vb;
    }
    bool ta = ir_get_int(n, "transA") != 0, tb = ir_get_int(n, "transB") != 0;
    int r = a->rank, rb = b->rank;
    int64_t m = ta ? a->dims[r - 1] : a->dims[r - 2], k = ta ? a->dims[r - 2] : a->dims[r - 1];
    int64_t kb = tb ? b->dims[rb - 1] : b->dims[rb - 2],
            nn = tb ? b->dims[rb - 2] : b->dims[rb - 1];
    if (!dims_agree(k, kb))
        return ir_node_error(g, n, dg, "A %s and B %s disagree on K", ir_shape_str(g, ir_in(n, 0)),
                             ir_shape_str(g, ir_in(n, 1)));
    ir_type y = *a;
    if (rb > 2) { /* the batch dims broadcast */
        ir_type ba = *a, bb = *b;
        ba.rank = (int8_t)(r - 2);
        bb.rank = (int8_t)(rb - 2);
        if (!ir_broadcast(g, n, dg, &ba, &bb, &y) || !ir_check_out_rank(g, n, dg, y.rank + 2))
            return false;
        y.dtype = a->dtype;
        y.layout = IR_LAYOUT_NONE;
        y.rank = (int8_t)(y.rank + 2);
        r = y.rank;
    }
    y.dims[r - 2] = m;
    y.dims[r - 1] = nn;
    if (!check_vector(g, n, dg, 2, nn, "bias") ||
        (ir_in(n, 3) && !ir_check_unidirectional(g, n, dg, ir_in(n, 3), &y, "the residual")))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- FusedQKV -------------------------------------------------------------------------------- */

/* FusedQKV(X[...,K], W[K,sum(sizes)], bias[sum(sizes)]?) -> one output per entry of `sizes`,
 * output i of shape [..., sizes[i]]. */
bool ir_infer_FusedQKV(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg))
        return false;
    const int64_t *sizes;
    uint32_t nsizes = ir_get_ints(n, "sizes", &sizes);
    if (nsizes != n->noutputs)
        return ir_node_error(g, n, dg, "sizes has %u entries for %u outputs", nsizes, n->noutputs);
    int64_t total = 0;
    for (uint32_t i = 0; i < nsizes; i++) {
        if (sizes[i] < 1 || sizes[i] > IR_MAX_NUMEL)
            return ir_node_error(g, n, dg, "sizes[%u] = %lld must be positive", i,
                                 (long long)sizes[i]);
        total = ir_sat_add(total, sizes[i]);
    }
    const ir_type *x = ir_in(n, 0), *w = ir_in(n, 1);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, x->dtype);
    if (!ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 2, 2))
        return false;
    if (!dims_agree(x->dims[x->rank - 1], w->dims[0]))
        return ir_node_error(g, n, dg, "X %s and W %s disagree on K", ir_shape_str(g, x),
                             ir_shape_str(g, w));
    if (!dims_agree(w->dims[1], total))
        return ir_node_error(g, n, dg, "W %s has %lld columns but sizes add up to %lld",
                             ir_shape_str(g, w), (long long)w->dims[1], (long long)total);
    if (!check_vector(g, n, dg, 2, total, "bias"))
        return false;
    for (uint32_t i = 0; i < nsizes; i++) {
        ir_type y = *x;
        y.dims[y.rank - 1] = sizes[i];
        ir_value_set_type(g, n->outputs[i], &y);
    }
    return ir_infer_done(g, n, dg);
}

/* ---- normalizations ------------------------------------------------------------------------- */

/* Outputs of a normalization of x over dims [axis, rank): x's type, scale (input `first`) and
 * bias (input first + 1, when the op has it) broadcasting to the normalized dims. */
static bool infer_norm(ir_graph *g, ir_node *n, dg_context *dg, const ir_type *x, uint32_t first)
{
    int axis;
    if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
        return false;
    double eps = ir_get_float(n, "epsilon");
    if (!(eps >= 0))
        return ir_node_error(g, n, dg, "epsilon %g must not be negative", eps);
    ir_type normalized = ir_type_unknown(x->dtype, x->rank - axis);
    memcpy(normalized.dims, x->dims + axis, sizeof x->dims[0] * (size_t)(x->rank - axis));
    if (!ir_check_unidirectional(g, n, dg, ir_in(n, first), &normalized, "scale") ||
        (ir_in(n, first + 1) &&
         !ir_check_unidirectional(g, n, dg, ir_in(n, first + 1), &normalized, "bias")))
        return false;
    for (uint32_t i = 0; i < n->noutputs; i++)
        ir_value_set_type(g, n->outputs[i], x);
    return ir_infer_done(g, n, dg);
}

/* RMSNorm(X, scale) -> X's type. */
bool ir_infer_RMSNorm(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg))
        return false;
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, ir_in(n, 0)->dtype);
    if (!ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK))
        return false;
    return infer_norm(g, n, dg, ir_in(n, 0), 1);
}

/* AddLayerNorm(A, B, scale, bias?, skip_bias?) and AddRMSNorm(A, B, scale) -> (Y, Sum), both of
 * A's type; B broadcasts to A, skip_bias (added to the sum) to the normalized dims, as scale. */
static bool infer_add_norm(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg))
        return false;
    const ir_type *a = ir_in(n, 0);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, a->dtype);
    if (!ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) ||
        !ir_check_unidirectional(g, n, dg, ir_in(n, 1), a, "B"))
        return false;
    if (ir_in(n, 4)) {
        int axis;
        if (!ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), a->rank, "axis", &axis))
            return false;
        ir_type normalized = ir_type_unknown(a->dtype, a->rank - axis);
        memcpy(normalized.dims, a->dims + axis, sizeof a->dims[0] * (size_t)(a->rank - axis));
        if (!ir_check_unidirectional(g, n, dg, ir_in(n, 4), &normalized, "skip_bias"))
            return false;
    }
    return infer_norm(g, n, dg, a, 2);
}

bool ir_infer_AddLayerNorm(ir_graph *g, ir_node *n, dg_context *dg)
{
    return infer_add_norm(g, n, dg);
}

bool ir_infer_AddRMSNorm(ir_graph *g, ir_node *n, dg_context *dg)
{
    return infer_add_norm(g, n, dg);
}

/* ---- FusedSoftmax ---------------------------------------------------------------------------- */

/* FusedSoftmax(X, mask?) -> X's type; the mask broadcasts to X. */
bool ir_infer_FusedSoftmax(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, x->dtype);
    int axis;
    if (!ir_check_rank(g, n, dg, 0, 1, IR_MAX_RANK) ||
        !ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis) ||
        (ir_in(n, 1) && !ir_check_unidirectional(g, n, dg, ir_in(n, 1), x, "the mask")))
        return false;
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}

/* ---- ElementwiseChain (the expression language: ir/ewchain.c) ----------------------------- */

/* Reports an error at byte `at` of the expression: under the offending character when the
 * expression is written in the graph's text as a plain string, else naming the column. */
static bool expr_error(ir_graph *g, const ir_node *n, dg_context *dg, const char *expr, size_t at,
                       const char *err)
{
    const ir_attr *a = ir_node_attr(n, "expr");
    if (g->src && a && a->src_offset) {
        /* the value starts after the first quote following the attribute's name */
        const char *text = g->src->text;
        size_t q = a->src_offset, len = strlen(expr);
        while (q < g->src->len && text[q] != '"' && text[q] != '\n')
            q++;
        if (q + 1 + len < g->src->len && memcmp(text + q + 1, expr, len) == 0) {
            dg_error(dg, g->src, q + 1 + at, 1, "ElementwiseChain: %s in expr", err);
            return false;
        }
    }
    return ir_node_error(g, n, dg, "expr \"%s\", column %zu: %s", expr, at + 1, err);
}

/* ElementwiseChain(x0, x1, ...) {expr} -> the broadcast of all inputs, x0's dtype. */
bool ir_infer_ElementwiseChain(ir_graph *g, ir_node *n, dg_context *dg)
{
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (!n->inputs[i])
            return ir_node_error(g, n, dg, "input %u may not be omitted", i);
    if (!float_inputs(g, n, dg))
        return false;
    const char *expr = ir_get_string(n, "expr");
    ir_ew_program prog;
    const char *err;
    size_t at;
    if (!ir_ew_parse(g->arena, expr, n->ninputs, &prog, &err, &at))
        return expr_error(g, n, dg, expr, at, err);
    ir_type y;
    if (!ir_broadcast_inputs(g, n, dg, 0, n->ninputs - 1, &y))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- Attention ------------------------------------------------------------------------------- */

/* Attention(Q, K, V, mask?, cos?, sin?, key_mask?, bias?) {layout}: Q, K, V and Y are
 * [B, H, S, D] (layout "BHSD") or [B, S, H, D] ("BSHD"); the checks below work on the logical
 * [B, H, S, D] view of each. Hq is a multiple of Hkv; the mask and the bias (a second additive
 * term, added after the mask) broadcast to [B, Hq, S, T]; cos and sin
 * (together) are RoPE's tables, of one shape [..., W] (W = D or D/2, D even) broadcasting to both
 * Q's [B, Hq, S, W] and K's [B, Hkv, T, W], since each is rotated by its own positions in the
 * tables; key_mask is an integer key-padding mask broadcasting to [B, T]. */

/* The logical [B, H, S, D] dims of a [B, H, S, D] or [B, S, H, D] operand. */
static void heads_view(const ir_type *t, bool bshd, int64_t out[4])
{
    out[0] = t->dims[0];
    out[1] = t->dims[bshd ? 2 : 1];
    out[2] = t->dims[bshd ? 1 : 2];
    out[3] = t->dims[3];
}

/* A rank-4 type of dims [b, h, s, w]: what a table or a mask must broadcast to. */
static ir_type type4(const ir_type *like, int64_t b, int64_t h, int64_t s, int64_t w)
{
    ir_type t = *like;
    t.rank = 4;
    t.dims[0] = b, t.dims[1] = h, t.dims[2] = s, t.dims[3] = w;
    return t;
}

/* The rotary tables cos (input 4) and sin (input 5), when given. */
static bool check_rotary(ir_graph *g, const ir_node *n, dg_context *dg, const int64_t q[4],
                         const int64_t k[4])
{
    const ir_type *cs = ir_in(n, 4), *sn = ir_in(n, 5);
    if (!cs && !sn)
        return true;
    if (!cs || !sn)
        return ir_node_error(g, n, dg, "the rotary tables cos and sin go together; %s is missing",
                             cs ? "sin" : "cos");
    if (!ir_check_rank(g, n, dg, 4, 1, 4))
        return false;
    bool same = cs->rank == sn->rank;
    for (int i = 0; same && i < cs->rank; i++)
        same = dims_agree(cs->dims[i], sn->dims[i]);
    if (!same)
        return ir_node_error(g, n, dg, "cos %s and sin %s must have the same shape",
                             ir_shape_str(g, cs), ir_shape_str(g, sn));
    int64_t d = q[3], w = cs->dims[cs->rank - 1];
    if (ir_dim_is_static(d) && d % 2 != 0)
        return ir_node_error(g, n, dg, "rotary: the head size %lld must be even", (long long)d);
    if (ir_dim_is_static(d) && ir_dim_is_static(w) && w != d && 2 * w != d)
        return ir_node_error(g, n, dg, "cos/sin's last dim must be D = %lld or D/2, not %lld",
                             (long long)d, (long long)w);
    ir_type qt = type4(ir_in(n, 0), q[0], q[1], q[2], w),
            kt = type4(ir_in(n, 1), k[0], k[1], k[2], w);
    return ir_check_unidirectional(g, n, dg, cs, &qt, "cos (for Q)") &&
           ir_check_unidirectional(g, n, dg, cs, &kt, "cos (for K)");
}

/* The key-padding mask key_mask (input 6), when given: i32 or i64 [B, T], either dim may be 1. */
static bool check_key_mask(ir_graph *g, const ir_node *n, dg_context *dg, const int64_t q[4],
                           const int64_t k[4])
{
    const ir_type *km = ir_in(n, 6);
    if (!km)
        return true;
    if (!ir_check_rank(g, n, dg, 6, 2, 2))
        return false;
    bool one0 = ir_dim_is_static(km->dims[0]) && km->dims[0] == 1,
         one1 = ir_dim_is_static(km->dims[1]) && km->dims[1] == 1;
    if ((!dims_agree(km->dims[0], q[0]) && !one0) || (!dims_agree(km->dims[1], k[2]) && !one1))
        return ir_node_error(
            g, n, dg, "key_mask %s must broadcast to [batch, keys] of Q %s and K %s",
            ir_shape_str(g, km), ir_shape_str(g, ir_in(n, 0)), ir_shape_str(g, ir_in(n, 1)));
    return true;
}

/* Packed Attention (qkv_sizes set): the [B, S, H, D] types of Q, K and V that X @ W + bias gives,
 * in q[3]; false after reporting. */
static bool packed_heads(ir_graph *g, const ir_node *n, dg_context *dg, ir_type q[3])
{
    const int64_t *sizes;
    uint32_t nsizes = ir_get_ints(n, "qkv_sizes", &sizes);
    int64_t h = ir_get_int(n, "num_heads");
    if (nsizes != 3)
        return ir_node_error(g, n, dg, "qkv_sizes has %u entries, not 3 (Q, K, V)", nsizes);
    if (h < 1)
        return ir_node_error(g, n, dg, "packed: num_heads %lld must be positive", (long long)h);
    if (strcmp(ir_get_string(n, "layout"), "BSHD") != 0)
        return ir_node_error(g, n, dg, "packed: the layout must be \"BSHD\"");
    if (ir_in(n, 4) || ir_in(n, 5))
        return ir_node_error(g, n, dg, "packed: no rotary tables (cos, sin)");
    int64_t total = 0;
    for (uint32_t i = 0; i < 3; i++) {
        if (sizes[i] < 1 || sizes[i] > IR_MAX_NUMEL || sizes[i] % h != 0)
            return ir_node_error(g, n, dg, "qkv_sizes[%u] = %lld must be a positive multiple of "
                                 "num_heads %lld", i, (long long)sizes[i], (long long)h);
        total = ir_sat_add(total, sizes[i]);
    }
    if (!ir_in(n, 2))
        return ir_node_error(g, n, dg, "packed: the bias (input 2) is missing");
    if (!ir_check_rank(g, n, dg, 0, 3, 3) || !ir_check_rank(g, n, dg, 1, 2, 2))
        return false;
    const ir_type *x = ir_in(n, 0), *w = ir_in(n, 1);
    if (!dims_agree(x->dims[2], w->dims[0]) || !dims_agree(w->dims[1], total))
        return ir_node_error(g, n, dg, "packed: X %s and W %s do not make [.., %lld] from X's "
                             "last dim", ir_shape_str(g, x), ir_shape_str(g, w), (long long)total);
    if (!check_vector(g, n, dg, 2, total, "bias"))
        return false;
    for (uint32_t i = 0; i < 3; i++)
        q[i] = type4(x, x->dims[0], x->dims[1], h, sizes[i] / h);
    return true;
}

bool ir_infer_Attention(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    for (uint32_t i = 0; i < n->ninputs && i < 6; i++)
        if (!ir_check_dtype(g, n, dg, i, IR_DTS_FLOAT) || !ir_check_same_dtype(g, n, dg, 0, i))
            return false;
    if (!ir_check_dtype(g, n, dg, 6, IR_DTS_INDEX))
        return false;
    if (!ir_check_dtype(g, n, dg, 7, IR_DTS_FLOAT) || !ir_check_same_dtype(g, n, dg, 0, 7))
        return false;
    const char *layout = ir_get_string(n, "layout");
    bool bshd = strcmp(layout, "BSHD") == 0;
    if (!bshd && strcmp(layout, "BHSD") != 0)
        return ir_node_error(g, n, dg, "layout \"%s\" is not \"BHSD\" or \"BSHD\"", layout);
    int64_t causal = ir_get_int(n, "causal");
    if (causal < 0 || causal > 2)
        return ir_node_error(g, n, dg,
                             "causal = %lld is not 0 (none), 1 (-inf) or 2 (causal_fill first)",
                             (long long)causal);
    const ir_type *qt = ir_in(n, 0), *kt = ir_in(n, 1), *vt = ir_in(n, 2);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, qt->dtype);
    ir_type packed[3];
    const int64_t *sizes;
    if (ir_get_ints(n, "qkv_sizes", &sizes) || ir_get_int(n, "num_heads")) {
        if (!packed_heads(g, n, dg, packed))
            return false;
        qt = &packed[0], kt = &packed[1], vt = &packed[2];
    }
    for (uint32_t i = 0; i < 3 && qt == ir_in(n, 0); i++)
        if (!ir_check_rank(g, n, dg, i, 4, 4))
            return false;
    int64_t q[4], k[4], v[4];
    heads_view(qt, bshd, q);
    heads_view(kt, bshd, k);
    heads_view(vt, bshd, v);
    if (!dims_agree(q[0], k[0]) || !dims_agree(k[0], v[0]) || !dims_agree(k[1], v[1]) ||
        !dims_agree(k[2], v[2]) || !dims_agree(q[3], k[3]))
        return ir_node_error(g, n, dg,
                             "Q %s, K %s and V %s (%s) must agree on the batch, K and V on heads "
                             "and length, Q and K on the head size",
                             ir_shape_str(g, qt), ir_shape_str(g, kt), ir_shape_str(g, vt), layout);
    if (ir_dim_is_static(q[1]) && ir_dim_is_static(k[1]) && (k[1] == 0 || q[1] % k[1] != 0))
        return ir_node_error(g, n, dg, "Q's %lld heads are not a multiple of K's %lld heads",
                             (long long)q[1], (long long)k[1]);
    ir_type scores = type4(qt, q[0], q[1], q[2], k[2]);
    if (ir_in(n, 3) && !ir_check_unidirectional(g, n, dg, ir_in(n, 3), &scores, "the mask"))
        return false;
    if (ir_in(n, 7) && !ir_check_unidirectional(g, n, dg, ir_in(n, 7), &scores, "the bias"))
        return false;
    if (!check_rotary(g, n, dg, q, k) || !check_key_mask(g, n, dg, q, k))
        return false;
    double scale = ir_get_float(n, "scale");
    if (!(scale >= 0))
        return ir_node_error(g, n, dg, "scale %g must not be negative", scale);
    ir_type y = *qt;
    y.dims[3] = v[3];
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- RoPE ------------------------------------------------------------------------------------ */

/* RoPE(X[...,S,D], cos[...,W], sin[...,W]) -> X's type; D even, W = D or D/2, cos and sin of the
 * same shape broadcasting to X's [..., S, W]. */
bool ir_infer_RoPE(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg))
        return false;
    const ir_type *x = ir_in(n, 0), *cs = ir_in(n, 1), *sn = ir_in(n, 2);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, x->dtype);
    if (!ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 1, IR_MAX_RANK))
        return false;
    bool same = cs->rank == sn->rank;
    for (int i = 0; same && i < cs->rank; i++)
        same = dims_agree(cs->dims[i], sn->dims[i]);
    if (!same)
        return ir_node_error(g, n, dg, "cos %s and sin %s must have the same shape",
                             ir_shape_str(g, cs), ir_shape_str(g, sn));
    int64_t d = x->dims[x->rank - 1], w = cs->dims[cs->rank - 1];
    if (ir_dim_is_static(d) && d % 2 != 0)
        return ir_node_error(g, n, dg, "the rotated dim %lld must be even", (long long)d);
    if (ir_dim_is_static(d) && ir_dim_is_static(w) && w != d && 2 * w != d)
        return ir_node_error(g, n, dg, "cos/sin's last dim must be D = %lld or D/2, not %lld",
                             (long long)d, (long long)w);
    ir_type table = *x;
    table.dims[x->rank - 1] = w;
    if (!ir_check_unidirectional(g, n, dg, cs, &table, "cos"))
        return false;
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}

/* ---- SwiGLU ---------------------------------------------------------------------------------- */

/* SwiGLU(gate, up) -> their broadcast. */
bool ir_infer_SwiGLU(ir_graph *g, ir_node *n, dg_context *dg)
{
    ir_type y;
    if (!float_inputs(g, n, dg) || !ir_broadcast_inputs(g, n, dg, 0, 1, &y))
        return false;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- QGemm ----------------------------------------------------------------------------------- */

/* QGemm(A i8[...,M,K], a_scale f32 scalar, B i8[K,N], b_scale f32 scalar or [N], bias f32[N]?,
 * y_scale f32 scalar?) -> f32[...,M,N], or i8 when y_scale is given. */
bool ir_infer_QGemm(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DT(IR_I8)) ||
        !ir_check_dtype(g, n, dg, 2, IR_DT(IR_I8)))
        return false;
    static const uint32_t float_operands[] = {1, 3, 4, 5}; /* the scales and the bias */
    for (size_t i = 0; i < FR_COUNT_OF(float_operands); i++)
        if (!ir_check_dtype(g, n, dg, float_operands[i], IR_DT(IR_F32)))
            return false;
    if (!ir_check_scalar(g, n, dg, 1) || !ir_check_scalar(g, n, dg, 5))
        return false;
    const ir_type *a = ir_in(n, 0), *b = ir_in(n, 2), *bs = ir_in(n, 3);
    ir_dtype out = ir_has_input(n, 5) ? IR_I8 : IR_F32;
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, out);
    if (!ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 2, 2, 2))
        return false;
    int64_t nn = b->dims[1];
    if (!dims_agree(a->dims[a->rank - 1], b->dims[0]))
        return ir_node_error(g, n, dg, "A %s and B %s disagree on K", ir_shape_str(g, a),
                             ir_shape_str(g, b));
    bool scalar = bs->rank == 0 || (bs->rank == 1 && bs->dims[0] == 1);
    if (!scalar && !check_vector(g, n, dg, 3, nn, "b_scale"))
        return false;
    if (!check_vector(g, n, dg, 4, nn, "bias"))
        return false;
    ir_type y = *a;
    y.dtype = out;
    y.dims[y.rank - 1] = nn;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- SqueezeExcite --------------------------------------------------------------------------- */

/* SqueezeExcite(X[N,C,D...], W1[R,C,1...], B1[R], W2[C,R,1...], B2[C]) -> Y[N,C,D...]: the
 * squeeze-and-excitation block, Y = X * gate(W2 act(W1 mean(X) + B1) + B2), the mean over the
 * spatial dims and the two 1x1 convs per image, the gate broadcast over the positions. */
bool ir_infer_SqueezeExcite(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!float_inputs(g, n, dg) || !check_act(g, n, dg) || !check_act_named(g, n, dg, "gate"))
        return false;
    const ir_type *x = ir_in(n, 0), *w1 = ir_in(n, 1), *w2 = ir_in(n, 3);
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, x->dtype);
    if (!channels_first_weights(g, n, dg, 1, 3))
        return false;
    for (int d = 2; d < x->rank; d++)
        if ((ir_dim_is_static(w1->dims[d]) && w1->dims[d] != 1) ||
            (ir_dim_is_static(w2->dims[d]) && w2->dims[d] != 1))
            return ir_node_error(g, n, dg, "the weights %s and %s must be 1x1",
                                 ir_shape_str(g, w1), ir_shape_str(g, w2));
    int64_t c = x->dims[1], r = w1->dims[0];
    if (!dims_agree(w1->dims[1], c))
        return ir_node_error(g, n, dg, "the first weight %s reads %lld channels; X has %lld",
                             ir_shape_str(g, w1), (long long)w1->dims[1], (long long)c);
    if (!dims_agree(w2->dims[0], c) || !dims_agree(w2->dims[1], r))
        return ir_node_error(g, n, dg,
                             "the second weight %s must take the %lld reduced channels back to "
                             "X's %lld",
                             ir_shape_str(g, w2), (long long)r, (long long)c);
    if (!check_vector(g, n, dg, 2, r, "the first bias") ||
        !check_vector(g, n, dg, 4, c, "the second bias"))
        return false;
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}

/* ---- DynamicQuantizeMatMul ------------------------------------------------------------------- */

/* DynamicQuantizeMatMul(A f32[...,M,K], B u8 or i8 [K,N], b_scale f32 scalar or [1] or [N],
 * b_zero_point? B's dtype, scalar or [1] or [N], bias f32[N]?) -> f32[...,M,N]: A quantized by
 * DynamicQuantizeLinear, the integer product of MatMulInteger, dequantized by a_scale * b_scale. */
bool ir_infer_DynamicQuantizeMatMul(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DT(IR_F32)) ||
        !ir_check_dtype(g, n, dg, 1, IR_DT(IR_I8) | IR_DT(IR_U8)) ||
        !ir_check_dtype(g, n, dg, 2, IR_DT(IR_F32)) || !ir_check_same_dtype(g, n, dg, 1, 3) ||
        !ir_check_dtype(g, n, dg, 4, IR_DT(IR_F32)))
        return false;
    if (any_rank_unknown(n))
        return all_unknown(g, n, dg, IR_F32);
    if (!ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 1, 2, 2))
        return false;
    const ir_type *a = ir_in(n, 0), *b = ir_in(n, 1);
    int64_t nn = b->dims[1];
    if (!dims_agree(a->dims[a->rank - 1], b->dims[0]))
        return ir_node_error(g, n, dg, "A %s and B %s disagree on K", ir_shape_str(g, a),
                             ir_shape_str(g, b));
    static const char *const names[] = {NULL, NULL, "b_scale", "b_zero_point"};
    for (uint32_t i = 2; i < 4; i++) {
        const ir_type *t = ir_in(n, i);
        bool one = t && (t->rank == 0 || (t->rank == 1 && t->dims[0] == 1));
        if (t && !one && !check_vector(g, n, dg, i, nn, names[i]))
            return false;
    }
    if (!check_vector(g, n, dg, 4, nn, "bias"))
        return false;
    ir_type y = *a;
    y.dims[y.rank - 1] = nn;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* ---- BiasDropout ----------------------------------------------------------------------------- */

/* BiasDropout(X, bias, residual?, ratio?, training_mode?) -> Y, mask?: Y = Dropout(X + bias, ratio,
 * training_mode) [+ residual]. X and bias broadcast (numpy), the residual one way to their
 * broadcast; all three one float dtype; ratio a float scalar, training_mode a bool scalar; the
 * mask is bool of Y's shape. */
bool ir_infer_BiasDropout(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_dtype(g, n, dg, 3, IR_DTS_FLOAT) || !ir_check_scalar(g, n, dg, 3) ||
        !ir_check_dtype(g, n, dg, 4, IR_DTS_BOOL) || !ir_check_scalar(g, n, dg, 4))
        return false;
    ir_type y;
    if (any_rank_unknown(n)) {
        y = ir_type_unknown(ir_in(n, 0)->dtype, -1);
    } else {
        if (!ir_broadcast_inputs(g, n, dg, 0, 1, &y))
            return false;
        if (ir_in(n, 2) && !ir_check_unidirectional(g, n, dg, ir_in(n, 2), &y, "residual"))
            return false;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    if (n->noutputs > 1) {
        ir_type mask = y;
        mask.dtype = IR_BOOL;
        mask.layout = IR_LAYOUT_NONE;
        ir_value_set_type(g, n->outputs[1], &mask);
    }
    return ir_infer_done(g, n, dg);
}

/* ---- QLinearAdd ------------------------------------------------------------------------------ */

/* QLinearAdd(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point) -> C:
 * A and B of one 8-bit dtype (u8 or i8), numpy broadcasting; the scales f32 and the zero points of
 * that dtype, one value each (per tensor); C of A's dtype and the broadcast shape. */
bool ir_infer_QLinearAdd(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DT(IR_I8) | IR_DT(IR_U8)))
        return false;
    for (uint32_t i = 1; i < 8; i++) {
        bool scale = i == 1 || i == 4 || i == 6;
        if (!(scale ? ir_check_dtype(g, n, dg, i, IR_DT(IR_F32))
                    : ir_check_same_dtype(g, n, dg, 0, i)) ||
            (i != 3 && !ir_check_scalar(g, n, dg, i)))
            return false;
    }
    ir_type y;
    if (any_rank_unknown(n)) {
        y = ir_type_unknown(ir_in(n, 0)->dtype, -1);
    } else {
        /* A and B broadcast (A_scale and A_zero_point, one value each, take part harmlessly);
         * the dtype is A's, the layout that of the first of A, B of the result's rank */
        if (!ir_broadcast_inputs(g, n, dg, 0, 3, &y))
            return false;
    }
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
