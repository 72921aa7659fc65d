/* Export for ONNX Runtime (`--for onnxruntime`): fused ops that no com.microsoft contrib op
 * expresses exactly (contrib.c handles those that one does) become the smallest subgraph of ops
 * that ONNX Runtime's CPU and CUDA providers run, computing what the fused op computes, in its
 * order of operations:
 *
 *   FusedQKV(X, W, bias?)            Split(Add(MatMul(X, W), bias), sizes, axis -1)
 *   RMSNorm(X, s)                    SimplifiedLayerNormalization(X, s) (ONNX Runtime's, default
 *                                    domain)
 *   AddRMSNorm(A, B, s) -> Y, Sum    Sum = Add(A, B); Y = SimplifiedLayerNormalization(Sum, s)
 *   AddLayerNorm(A, B, s, b?, sb?)   Sum = Add(A, B) (+ sb); Y = LayerNormalization(Sum, s, b)
 *   FusedSoftmax(X, mask?)           Softmax(Add(Mul(X, scale), mask)) (bf16: in f32 between Casts)
 *   SwiGLU(g, u)                     Mul(Mul(g, Sigmoid(g)), u)
 *   GemmEpilogue(A, B, bias?, res?)  act(Add(Add(Mul(MatMul(A', B'), alpha), bias),
 *                                    Mul(res, beta))), A' and B' transposed per transA/B and
 *                                    transBatchA/B
 *   FusedConvAct(X, W, B?, res?)     act(Add(Conv(X, W, B), res))
 *   ElementwiseChain {expr}          one ONNX op per function of the expression
 *   RoPE(X, cos, sin)                rotate-half: X * c + Concat(-x2, x1) * s (tables of D/2
 *                                    concatenated twice); interleaved: the pairs split apart
 *   Attention(Q, K, V, mask?, .., key_mask?, bias?)  Softmax(MatMul(Q, K^T) * scale
 *                                    [+ key_mask's scores] + mask [+ bias] [+ causal]) @ V over
 *                                    BHSD (BSHD transposed in and out; Q and K rotated as
 *                                    RoPE below when the tables are given; K/V heads repeated
 *                                    for GQA)
 *   Attention packed (qkv_sizes, num_heads): com.microsoft Attention(X, W, bias, key_mask,
 *                                    _, mask or bias) reshaped to the heads where it computes
 *                                    the same; else Split(Add(MatMul(X, W), bias)) reshaped to
 *                                    the heads, then the subgraph above
 *
 * Activations (act) are the ONNX ops of the same name; Silu is x * Sigmoid(x), Gelu and GeluTanh
 * are com.microsoft Gelu and FastGelu (float32) or ONNX Gelu at opset 20.
 *
 *   SeparableConv                    out_act(Conv(act(Conv(X, W_dw, B_dw)), W_pw, B_pw) [+ res])
 *   DynamicQuantizeMatMul            com.microsoft DynamicQuantizeMatMul (the same inputs)
 *   QLinearAdd                       com.microsoft QLinearAdd (the same inputs)
 *   BiasDropout                      com.microsoft BiasDropout (the same inputs, outputs and seed;
 *                                    ONNX Runtime draws its own mask, and runs it on CUDA only)
 *   QGemm                            QuantizeLinear(DequantizeLinear(A) @ DequantizeLinear(B) +
 *                                    bias) (the last only with y_scale)
 *   SqueezeExcite                    Mul(X, gate(Conv(act(Conv(GlobalAveragePool(X), W1, B1)),
 *                                    W2, B2)))
 *
 * What cannot be written (RoPE of a dynamic head size, GQA of dynamic head counts) is an error
 * naming the node and why. */
#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "ir/acts.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    ox_exporter *ex;
    const ir_node *n;
    ir_dtype dt; /* the node's data type (its first input's) */
    bool failed;
} sub;

static const char *tmp(sub *s, const char *what)
{
    const char *base = s->n->outputs[0]->name;
    FR_CHECK(base && what); /* every value is named; every op name here is a literal */
    char stem[512];
    snprintf(stem, sizeof stem, "%s/%s", base, what);
    return ox_emit_temp(s->ex, stem);
}

static const char *name_of(const ir_value *v)
{
    return v ? v->name : "";
}

/* One node of one output: dst, or a fresh name when dst is NULL. */
static const char *emit(sub *s, const char *domain, const char *op, const char *const *in,
                        uint32_t nin, const char *dst, Onnx__NodeProto **np)
{
    const char *out = dst ? dst : tmp(s, op);
    Onnx__NodeProto *node = ox_emit_raw(s->ex, domain, op, in, nin, &out, 1);
    if (np)
        *np = node;
    return out;
}

static const char *op1(sub *s, const char *op, const char *a, const char *dst)
{
    return emit(s, "", op, &a, 1, dst, NULL);
}

static const char *op2(sub *s, const char *op, const char *a, const char *b, const char *dst)
{
    const char *in[] = {a, b};
    return emit(s, "", op, in, 2, dst, NULL);
}

static const char *scalar(sub *s, const char *what, double v)
{
    char stem[512];
    snprintf(stem, sizeof stem, "%s/%s", s->n->outputs[0]->name, what);
    return ox_emit_const_float(s->ex, stem, s->dt, v);
}

static const char *ints(sub *s, const char *what, const int64_t *v, uint32_t n)
{
    char stem[512];
    snprintf(stem, sizeof stem, "%s/%s", s->n->outputs[0]->name, what);
    return ox_emit_const_i64(s->ex, stem, v, n, false);
}

static void fail(sub *s, const char *why)
{
    if (!s->failed)
        ox_emit_error(s->ex, s->n, "cannot be written for ONNX Runtime: %s", why);
    s->failed = true;
}

/* ---- activations ---------------------------------------------------------------------------- */

/* The Gelu activations: com.microsoft's Gelu and FastGelu for float32, ONNX's Gelu from opset 20. */
static const char *gelu(sub *s, const char *x, const ir_act_info *ai, const char *dst)
{
    bool tanh_form = ai->approximate && strcmp(ai->approximate, "tanh") == 0;
    if (s->dt == IR_F32)
        return emit(s, "com.microsoft", tanh_form ? "FastGelu" : "Gelu", &x, 1, dst, NULL);
    if (ox_emit_opset(s->ex) >= 20) {
        Onnx__NodeProto *np;
        const char *out = emit(s, "", "Gelu", &x, 1, dst, &np);
        if (tanh_form)
            ox_emit_attr_string(s->ex, np, "approximate", "tanh");
        return out;
    }
    fail(s, "Gelu of a non-float32 type needs opset 20 (--opset 20)");
    return x;
}

/* act(x) into dst; act_alpha/act_beta (prefix "act" or "out_act") as the kernels read them. The
 * ONNX op and where it keeps the parameters come from ir/acts.def; Identity, Silu (no ONNX op) and
 * Gelu (contrib ops for float32) are spelled here. */
static const char *activation(sub *s, const char *x, const char *prefix, const char *dst)
{
    const ir_node *n = s->n;
    char key[32], kp[2][40];
    snprintf(key, sizeof key, "%s", prefix);
    snprintf(kp[0], sizeof kp[0], "%s_alpha", prefix);
    snprintf(kp[1], sizeof kp[1], "%s_beta", prefix);
    const char *name = ir_get_string(n, key);
    ir_act act;
    bool spelled = ir_act_lookup(name, &act) && (ir_act_get(act)->op != IR_OP_COUNT ||
                                                 act == IR_ACT_IDENTITY || act == IR_ACT_SILU);
    if (!spelled) {
        char why[96];
        snprintf(why, sizeof why, "activation %s has no ONNX op here", name);
        fail(s, why);
        return x;
    }
    const ir_act_info *ai = ir_act_get(act);
    bool has[2] = {ir_node_attr(n, kp[0]) != NULL, ir_node_attr(n, kp[1]) != NULL};
    switch (act) {
    case IR_ACT_IDENTITY: return dst ? op1(s, "Identity", x, dst) : x;
    case IR_ACT_SILU: return op2(s, "Mul", x, op1(s, "Sigmoid", x, NULL), dst);
    case IR_ACT_GELU:
    case IR_ACT_GELU_TANH: return gelu(s, x, ai, dst);
    default: break;
    }
    const char *op = ir_op_name(ai->op);
    switch (ai->from) {
    case IR_ACT_FROM_NONE: return op1(s, op, x, dst);
    case IR_ACT_FROM_ATTRS: {
        Onnx__NodeProto *np;
        const char *out = emit(s, "", op, &x, 1, dst, &np);
        for (unsigned i = 0; i < ai->nparams; i++)
            if (has[i])
                ox_emit_attr_float(s->ex, np, ai->param[i], ir_get_float(n, kp[i]));
        return out;
    }
    case IR_ACT_FROM_INPUTS: {
        /* optional inputs after x; an absent one before a present one is written empty */
        const char *in[3] = {x, "", ""};
        uint32_t nin = 1;
        for (unsigned i = 0; i < ai->nparams; i++) {
            if (!has[i])
                continue;
            char stem[64], *c;
            snprintf(stem, sizeof stem, "%s_%s", op, ai->param[i]);
            for (c = stem; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            in[i + 1] = scalar(s, stem, ir_get_float(n, kp[i]));
            nin = i + 2;
        }
        return emit(s, "", op, in, nin, dst, NULL);
    }
    }
    FR_UNREACHABLE();
    return x;
}

/* ---- the ops -------------------------------------------------------------------------------- */

static void fused_qkv(sub *s)
{
    const ir_node *n = s->n;
    const char *y = op2(s, "MatMul", name_of(n->inputs[0]), name_of(n->inputs[1]), NULL);
    if (n->ninputs > 2 && n->inputs[2])
        y = op2(s, "Add", y, name_of(n->inputs[2]), NULL);
    const int64_t *sizes;
    uint32_t count = ir_get_ints(n, "sizes", &sizes);
    const char *in[] = {y, ints(s, "sizes", sizes, count)};
    const char *out[3];
    for (uint32_t i = 0; i < n->noutputs; i++)
        out[i] = n->outputs[i]->name;
    Onnx__NodeProto *np = ox_emit_raw(s->ex, "", "Split", in, 2, out, n->noutputs);
    ox_emit_attr_int(s->ex, np, "axis", -1);
}

/* op(x, scale, bias?) {axis, epsilon} into the node's first output. */
static void norm(sub *s, const char *op, const char *x, const ir_value *scale, const ir_value *bias)
{
    const ir_node *n = s->n;
    const char *in[] = {x, name_of(scale), name_of(bias)};
    Onnx__NodeProto *np;
    emit(s, "", op, in, bias ? 3 : 2, n->outputs[0]->name, &np);
    ox_emit_attr_int(s->ex, np, "axis", ir_get_int(n, "axis"));
    ox_emit_attr_float(s->ex, np, "epsilon", ir_get_float(n, "epsilon"));
}

/* AddLayerNorm / AddRMSNorm: the sum (the second output when the node has it), normalized.
 * AddLayerNorm's skip_bias is added to A + B, last. */
static void add_norm(sub *s, const char *op)
{
    const ir_node *n = s->n;
    const ir_value *skip_bias = n->ninputs > 4 ? n->inputs[4] : NULL;
    const char *sum_name = n->noutputs > 1 ? n->outputs[1]->name : NULL;
    const char *sum =
        op2(s, "Add", name_of(n->inputs[0]), name_of(n->inputs[1]), skip_bias ? NULL : sum_name);
    if (skip_bias)
        sum = op2(s, "Add", sum, name_of(skip_bias), sum_name);
    norm(s, op, sum, n->inputs[2], n->ninputs > 3 ? n->inputs[3] : NULL);
}

/* Cast(x) {to}: an ONNX TensorProto element type code. */
static const char *cast(sub *s, const char *x, int64_t to, const char *dst)
{
    Onnx__NodeProto *np;
    const char *y = emit(s, "", "Cast", &x, 1, dst, &np);
    ox_emit_attr_int(s->ex, np, "to", to);
    return y;
}

enum { ONNX_FLOAT = 1, ONNX_BFLOAT16 = 16 };

/* bf16 is computed in f32 between Casts, as the fused kernel computes it (f32 arithmetic, one
 * rounding at the end): ONNX Runtime's CPU provider has no bf16 Mul, Add or Softmax. */
static void fused_softmax(sub *s)
{
    const ir_node *n = s->n;
    bool bf16 = s->dt == IR_BF16;
    const char *x = name_of(n->inputs[0]);
    if (bf16) {
        x = cast(s, x, ONNX_FLOAT, NULL);
        s->dt = IR_F32; /* the scale constant below */
    }
    double scale = ir_get_float(n, "scale");
    if (scale != 1.0)
        x = op2(s, "Mul", x, scalar(s, "scale", scale), NULL);
    if (n->ninputs > 1 && n->inputs[1]) {
        const char *mask = name_of(n->inputs[1]);
        if (bf16)
            mask = cast(s, mask, ONNX_FLOAT, NULL);
        x = op2(s, "Add", x, mask, NULL);
    }
    Onnx__NodeProto *np;
    const char *y = emit(s, "", "Softmax", &x, 1, bf16 ? NULL : n->outputs[0]->name, &np);
    ox_emit_attr_int(s->ex, np, "axis", ir_get_int(n, "axis"));
    if (bf16)
        cast(s, y, ONNX_BFLOAT16, n->outputs[0]->name);
}

static void swiglu(sub *s)
{
    const char *g = name_of(s->n->inputs[0]);
    op2(s, "Mul", op2(s, "Mul", g, op1(s, "Sigmoid", g, NULL), NULL), name_of(s->n->inputs[1]),
        s->n->outputs[0]->name);
}

static const char *transpose(sub *s, const char *x, const int64_t *perm, int rank)
{
    Onnx__NodeProto *np;
    const char *out = emit(s, "", "Transpose", &x, 1, NULL, &np);
    ox_emit_attr_ints(s->ex, np, "perm", perm, (uint32_t)rank);
    return out;
}

/* perm of a rank-r tensor swapping its last two dims */
static const char *swap_last(sub *s, const char *x, int rank)
{
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < rank; i++)
        perm[i] = i;
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
    return transpose(s, x, perm, rank);
}

/* A GEMM operand as op() reads it: with trans_batch its first dim moved behind the batch dims
 * ([d0, b..., d] -> [b..., d0, d]), with trans its last two dims swapped; one Transpose for both. */
static const char *gemm_operand(sub *s, const char *x, int rank, bool trans_batch, bool trans)
{
    if (!trans_batch)
        return trans ? swap_last(s, x, rank) : x;
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < rank - 2; i++)
        perm[i] = i + 1;
    perm[rank - 2] = trans ? rank - 1 : 0;
    perm[rank - 1] = trans ? 0 : rank - 1;
    return transpose(s, x, perm, rank);
}

static void gemm_epilogue(sub *s)
{
    const ir_node *n = s->n;
    const char *a = gemm_operand(s, name_of(n->inputs[0]), n->inputs[0]->type->rank,
                                 ir_get_int(n, "transBatchA"), ir_get_int(n, "transA"));
    const char *b = gemm_operand(s, name_of(n->inputs[1]), n->inputs[1]->type->rank,
                                 ir_get_int(n, "transBatchB"), ir_get_int(n, "transB"));
    const char *y = op2(s, "MatMul", a, b, NULL);
    double alpha = ir_get_float(n, "alpha"), beta = ir_get_float(n, "beta");
    if (alpha != 1.0)
        y = op2(s, "Mul", y, scalar(s, "alpha", alpha), NULL);
    if (n->ninputs > 2 && n->inputs[2])
        y = op2(s, "Add", y, name_of(n->inputs[2]), NULL);
    if (n->ninputs > 3 && n->inputs[3]) {
        const char *r = name_of(n->inputs[3]);
        if (beta != 1.0)
            r = op2(s, "Mul", r, scalar(s, "beta", beta), NULL);
        y = op2(s, "Add", y, r, NULL);
    }
    activation(s, y, "act", n->outputs[0]->name);
}

static void fused_conv(sub *s)
{
    static const char *const conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                             "pads",     "strides",   NULL};
    const ir_node *n = s->n;
    const char *in[] = {name_of(n->inputs[0]), name_of(n->inputs[1]),
                        n->ninputs > 2 ? name_of(n->inputs[2]) : ""};
    Onnx__NodeProto *np;
    const char *y = emit(s, "", "Conv", in, in[2][0] ? 3 : 2, NULL, &np);
    ox_emit_copy_attrs(s->ex, np, n, conv_attrs);
    if (n->ninputs > 3 && n->inputs[3])
        y = op2(s, "Add", y, name_of(n->inputs[3]), NULL);
    activation(s, y, "act", n->outputs[0]->name);
}

/* out_act(Conv(act(Conv(X, W_dw, B_dw) {the node's window, group}), W_pw, B_pw) + residual) */
static void separable_conv(sub *s)
{
    static const char *const conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                             "pads",     "strides",   NULL};
    const ir_node *n = s->n;
    const char *dw_in[] = {name_of(n->inputs[0]), name_of(n->inputs[1]),
                           n->ninputs > 3 ? name_of(n->inputs[3]) : ""};
    Onnx__NodeProto *np;
    const char *y = emit(s, "", "Conv", dw_in, dw_in[2][0] ? 3 : 2, NULL, &np);
    ox_emit_copy_attrs(s->ex, np, n, conv_attrs);
    y = activation(s, y, "act", NULL);
    const char *pw_in[] = {y, name_of(n->inputs[2]), n->ninputs > 4 ? name_of(n->inputs[4]) : ""};
    y = emit(s, "", "Conv", pw_in, pw_in[2][0] ? 3 : 2, NULL, NULL);
    if (n->ninputs > 5 && n->inputs[5])
        y = op2(s, "Add", y, name_of(n->inputs[5]), NULL);
    activation(s, y, "out_act", n->outputs[0]->name);
}

/* Mul(X, gate(Conv(act(Conv(GlobalAveragePool(X), W1, B1)), W2, B2))): the block as torchvision
 * writes it, the 1x1 convs of the pooled [N, C, 1...] vector. */
static void squeeze_excite(sub *s)
{
    const ir_node *n = s->n;
    const char *x = name_of(n->inputs[0]);
    const char *pool_in[] = {x};
    const char *y = emit(s, "", "GlobalAveragePool", pool_in, 1, NULL, NULL);
    const char *c1_in[] = {y, name_of(n->inputs[1]), name_of(n->inputs[2])};
    y = activation(s, emit(s, "", "Conv", c1_in, 3, NULL, NULL), "act", NULL);
    const char *c2_in[] = {y, name_of(n->inputs[3]), name_of(n->inputs[4])};
    y = activation(s, emit(s, "", "Conv", c2_in, 3, NULL, NULL), "gate", NULL);
    op2(s, "Mul", x, y, n->outputs[0]->name);
}

/* com.microsoft DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): ONNX Runtime's contrib
 * op of these semantics (its quantization of A is ONNX's DynamicQuantizeLinear); trailing absent
 * inputs left out. */
static void dynq_matmul(sub *s)
{
    const ir_node *n = s->n;
    const char *in[5];
    uint32_t nin = 0;
    for (uint32_t i = 0; i < n->ninputs && i < 5; i++)
        if ((in[i] = name_of(n->inputs[i]))[0])
            nin = i + 1;
    emit(s, "com.microsoft", "DynamicQuantizeMatMul", in, nin, n->outputs[0]->name, NULL);
}

/* com.microsoft BiasDropout(data, bias, residual?, ratio?, training_mode?) -> output, mask?:
 * ONNX Runtime's training op of these semantics, with the seed; trailing absent inputs left out.
 * Its mask is ONNX Runtime's generator's, not kernels/dropout_mask.h's. */
static void bias_dropout(sub *s)
{
    const ir_node *n = s->n;
    const char *in[5], *out[2] = {n->outputs[0]->name, NULL};
    uint32_t nin = 0, nout = n->noutputs > 1 ? 2 : 1;
    for (uint32_t i = 0; i < n->ninputs && i < 5; i++)
        if ((in[i] = name_of(n->inputs[i]))[0])
            nin = i + 1;
    if (nout > 1)
        out[1] = n->outputs[1]->name;
    Onnx__NodeProto *np = ox_emit_raw(s->ex, "com.microsoft", "BiasDropout", in, nin, out, nout);
    if (ir_node_attr(n, "seed"))
        ox_emit_attr_int(s->ex, np, "seed", ir_get_int(n, "seed"));
}

/* com.microsoft QLinearAdd(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
 * C_zero_point): ONNX Runtime's contrib op of these semantics (docs/kernels.md). */
static void qlinear_add(sub *s)
{
    const ir_node *n = s->n;
    const char *in[8];
    for (uint32_t i = 0; i < 8; i++)
        in[i] = name_of(n->inputs[i]);
    emit(s, "com.microsoft", "QLinearAdd", in, 8, n->outputs[0]->name, NULL);
}

/* DequantizeLinear(A, a_scale) @ DequantizeLinear(B, b_scale, axis 1) + bias, requantized to
 * int8 by QuantizeLinear(., y_scale, 0) when y_scale is given (docs/kernels.md: the same up to
 * float rounding). */
static void qgemm(sub *s)
{
    const ir_node *n = s->n;
    const char *a = op2(s, "DequantizeLinear", name_of(n->inputs[0]), name_of(n->inputs[1]), NULL);
    Onnx__NodeProto *np;
    const char *b_in[] = {name_of(n->inputs[2]), name_of(n->inputs[3])};
    const char *b = emit(s, "", "DequantizeLinear", b_in, 2, NULL, &np);
    if (n->inputs[3]->type->rank == 1)
        ox_emit_attr_int(s->ex, np, "axis", 1);
    bool requant = n->ninputs > 5 && n->inputs[5];
    bool bias = n->ninputs > 4 && n->inputs[4];
    const char *y = op2(s, "MatMul", a, b, bias || requant ? NULL : n->outputs[0]->name);
    if (bias)
        y = op2(s, "Add", y, name_of(n->inputs[4]), requant ? NULL : n->outputs[0]->name);
    if (requant) {
        int8_t zero = 0;
        ir_type zt = {.dtype = IR_I8, .rank = 0};
        char stem[512];
        snprintf(stem, sizeof stem, "%s/zero_point", n->outputs[0]->name);
        const char *q_in[] = {y, name_of(n->inputs[5]),
                              ox_emit_const_data(s->ex, stem, &zt, &zero, 1)};
        emit(s, "", "QuantizeLinear", q_in, 3, n->outputs[0]->name, NULL);
    }
}

/* ---- ElementwiseChain ----------------------------------------------------------------------- */

typedef struct {
    const char *name;
    bool is_const;
    double value;
} ew_slot;

static const char *ew_operand(sub *s, ew_slot *v)
{
    if (v->is_const && !v->name)
        v->name = scalar(s, "c", v->value);
    return v->name;
}

static const char *ew_simple(ir_ew_opcode op)
{
    static const struct {
        ir_ew_opcode op;
        const char *onnx;
    } table[] = {
        {IR_EW_add, "Add"},          {IR_EW_sub, "Sub"},           {IR_EW_mul, "Mul"},
        {IR_EW_div, "Div"},          {IR_EW_pow, "Pow"},           {IR_EW_max, "Max"},
        {IR_EW_min, "Min"},          {IR_EW_neg, "Neg"},           {IR_EW_abs, "Abs"},
        {IR_EW_exp, "Exp"},          {IR_EW_log, "Log"},           {IR_EW_sqrt, "Sqrt"},
        {IR_EW_recip, "Reciprocal"}, {IR_EW_sigmoid, "Sigmoid"},   {IR_EW_tanh, "Tanh"},
        {IR_EW_relu, "Relu"},        {IR_EW_erf, "Erf"},           {IR_EW_hardswish, "HardSwish"},
        {IR_EW_sin, "Sin"},          {IR_EW_cos, "Cos"},           {IR_EW_floor, "Floor"},
        {IR_EW_ceil, "Ceil"},        {IR_EW_softplus, "Softplus"}, {IR_EW_sign, "Sign"},
        {IR_EW_round, "Round"},      {IR_EW_tan, "Tan"},           {IR_EW_asin, "Asin"},
        {IR_EW_acos, "Acos"},        {IR_EW_atan, "Atan"},         {IR_EW_sinh, "Sinh"},
        {IR_EW_cosh, "Cosh"},        {IR_EW_asinh, "Asinh"},       {IR_EW_acosh, "Acosh"},
        {IR_EW_atanh, "Atanh"},
    };
    for (size_t i = 0; i < FR_COUNT_OF(table); i++)
        if (table[i].op == op)
            return table[i].onnx;
    return NULL;
}

static void ew_chain(sub *s, ar_arena *arena)
{
    const ir_node *n = s->n;
    ir_ew_program prog;
    const char *err;
    size_t at;
    if (!ir_ew_parse(arena, ir_get_string(n, "expr"), n->ninputs, &prog, &err, &at)) {
        fail(s, err);
        return;
    }
    ew_slot *stack = ar_alloc_array(arena, prog.depth, sizeof *stack);
    uint32_t sp = 0;
    for (uint32_t i = 0; i < prog.len && !s->failed; i++) {
        const ir_ew_instr *in = &prog.code[i];
        const char *dst = i + 1 == prog.len ? n->outputs[0]->name : NULL;
        if (in->op == IR_EW_INPUT) {
            stack[sp++] = (ew_slot){name_of(n->inputs[in->index]), false, 0};
            continue;
        }
        if (in->op == IR_EW_CONST) {
            stack[sp++] = (ew_slot){NULL, true, in->value};
            continue;
        }
        const char *onnx = ew_simple(in->op);
        const char *y = NULL;
        Onnx__NodeProto *np;
        if (onnx && in->op >= IR_EW_add && in->op <= IR_EW_min) { /* add .. min: binary */
            ew_slot *a = &stack[sp - 2], *b = &stack[sp - 1];
            y = op2(s, onnx, ew_operand(s, a), ew_operand(s, b), dst);
            sp -= 2;
        } else if (onnx) {
            y = op1(s, onnx, ew_operand(s, &stack[sp - 1]), dst);
            sp -= 1;
        } else if (in->op == IR_EW_rsqrt) {
            y = op1(s, "Reciprocal", op1(s, "Sqrt", ew_operand(s, &stack[sp - 1]), NULL), dst);
            sp -= 1;
        } else if (in->op == IR_EW_silu) {
            const char *x = ew_operand(s, &stack[sp - 1]);
            y = op2(s, "Mul", x, op1(s, "Sigmoid", x, NULL), dst);
            sp -= 1;
        } else if (in->op == IR_EW_gelu || in->op == IR_EW_gelu_tanh) {
            const char *x = ew_operand(s, &stack[sp - 1]);
            bool tanh_form = in->op == IR_EW_gelu_tanh;
            if (s->dt == IR_F32) {
                y = emit(s, "com.microsoft", tanh_form ? "FastGelu" : "Gelu", &x, 1, dst, NULL);
            } else if (ox_emit_opset(s->ex) >= 20) {
                y = emit(s, "", "Gelu", &x, 1, dst, &np);
                if (tanh_form)
                    ox_emit_attr_string(s->ex, np, "approximate", "tanh");
            } else {
                fail(s, "gelu of a non-float32 type needs opset 20 (--opset 20)");
            }
            sp -= 1;
        } else if (in->op == IR_EW_leakyrelu || in->op == IR_EW_elu) {
            ew_slot *x = &stack[sp - 2], *alpha = &stack[sp - 1];
            if (alpha->is_const) {
                y = emit(s, "", in->op == IR_EW_elu ? "Elu" : "LeakyRelu",
                         (const char *[]){ew_operand(s, x)}, 1, dst, &np);
                ox_emit_attr_float(s->ex, np, "alpha", alpha->value);
            } else if (in->op == IR_EW_leakyrelu) { /* a slope tensor: PRelu */
                y = op2(s, "PRelu", ew_operand(s, x), ew_operand(s, alpha), dst);
            } else {
                fail(s, "elu with a tensor alpha has no ONNX op");
            }
            sp -= 2;
        } else if (in->op == IR_EW_clip) { /* min(max(x, lo), hi), as the kernel computes */
            const char *lo =
                op2(s, "Max", ew_operand(s, &stack[sp - 3]), ew_operand(s, &stack[sp - 2]), NULL);
            y = op2(s, "Min", lo, ew_operand(s, &stack[sp - 1]), dst);
            sp -= 3;
        } else if (in->op == IR_EW_hardsigmoid) {
            ew_slot *a = &stack[sp - 2], *b = &stack[sp - 1];
            if (!a->is_const || !b->is_const) {
                fail(s, "hardsigmoid with tensor parameters has no ONNX op");
            } else {
                y = emit(s, "", "HardSigmoid", (const char *[]){ew_operand(s, &stack[sp - 3])}, 1,
                         dst, &np);
                ox_emit_attr_float(s->ex, np, "alpha", a->value);
                ox_emit_attr_float(s->ex, np, "beta", b->value);
            }
            sp -= 3;
        } else {
            fail(s, ir_ew_name(in->op));
        }
        stack[sp++] = (ew_slot){y, false, 0};
    }
    /* an expression that is one input or constant still needs its output */
    if (!s->failed && prog.len == 1)
        op1(s, "Identity", ew_operand(s, &stack[0]), n->outputs[0]->name);
}

/* ---- RoPE ----------------------------------------------------------------------------------- */

/* RoPE over x [..., S, D] (rank `rank`, D static) with tables cos/sin [..., W]; into dst. */
static const char *rope(sub *s, const char *x, int rank, int64_t d, const ir_value *cosv,
                        const ir_value *sinv, bool interleaved, const char *dst)
{
    int64_t w = cosv->type->dims[cosv->type->rank - 1];
    if (!ir_dim_is_static(d) || !ir_dim_is_static(w) || (w != d && 2 * w != d)) {
        fail(s, "RoPE needs a static head size and table width");
        return x;
    }
    const char *c = cosv->name, *sn = sinv->name;
    int64_t half[] = {d / 2, d / 2};
    if (!interleaved) {
        if (2 * w == d) { /* one angle per pair: the table twice */
            const char *cc[] = {c, c}, *ss[] = {sn, sn};
            Onnx__NodeProto *np;
            c = emit(s, "", "Concat", cc, 2, NULL, &np);
            ox_emit_attr_int(s->ex, np, "axis", -1);
            sn = emit(s, "", "Concat", ss, 2, NULL, &np);
            ox_emit_attr_int(s->ex, np, "axis", -1);
        }
        const char *in[] = {x, ints(s, "halves", half, 2)};
        const char *parts[] = {tmp(s, "x1"), tmp(s, "x2")};
        Onnx__NodeProto *np = ox_emit_raw(s->ex, "", "Split", in, 2, parts, 2);
        ox_emit_attr_int(s->ex, np, "axis", -1);
        const char *rot_in[] = {op1(s, "Neg", parts[1], NULL), parts[0]};
        const char *rot = emit(s, "", "Concat", rot_in, 2, NULL, &np);
        ox_emit_attr_int(s->ex, np, "axis", -1);
        return op2(s, "Add", op2(s, "Mul", x, c, NULL), op2(s, "Mul", rot, sn, NULL), dst);
    }
    /* interleaved: pairs (2i, 2i+1) as [..., D/2, 2], split apart */
    int64_t shape[IR_MAX_RANK + 1] = {0};
    shape[rank - 1] = d / 2;
    shape[rank] = 2;
    const char *xr = op2(s, "Reshape", x, ints(s, "pairs", shape, (uint32_t)rank + 1), NULL);
    int64_t ones[] = {1, 1};
    const char *split = ints(s, "ones", ones, 2);
    const char *xs[] = {tmp(s, "x_even"), tmp(s, "x_odd")};
    Onnx__NodeProto *np = ox_emit_raw(s->ex, "", "Split", (const char *[]){xr, split}, 2, xs, 2);
    ox_emit_attr_int(s->ex, np, "axis", -1);
    const char *tc[2], *ts[2];
    if (2 * w == d) { /* one angle per pair, for both elements */
        int64_t last[] = {-1};
        const char *axes = ints(s, "last", last, 1);
        tc[0] = tc[1] = op2(s, "Unsqueeze", c, axes, NULL);
        ts[0] = ts[1] = op2(s, "Unsqueeze", sn, axes, NULL);
    } else { /* each element its own entry: the tables in pairs too */
        int crank = cosv->type->rank;
        int64_t cshape[IR_MAX_RANK + 1] = {0};
        cshape[crank - 1] = d / 2;
        cshape[crank] = 2;
        const char *cs = ints(s, "table_pairs", cshape, (uint32_t)crank + 1);
        const char *cr = op2(s, "Reshape", c, cs, NULL), *sr = op2(s, "Reshape", sn, cs, NULL);
        tc[0] = tmp(s, "cos_even"), tc[1] = tmp(s, "cos_odd");
        ts[0] = tmp(s, "sin_even"), ts[1] = tmp(s, "sin_odd");
        np = ox_emit_raw(s->ex, "", "Split", (const char *[]){cr, split}, 2, tc, 2);
        ox_emit_attr_int(s->ex, np, "axis", -1);
        np = ox_emit_raw(s->ex, "", "Split", (const char *[]){sr, split}, 2, ts, 2);
        ox_emit_attr_int(s->ex, np, "axis", -1);
    }
    const char *y0 =
        op2(s, "Sub", op2(s, "Mul", xs[0], tc[0], NULL), op2(s, "Mul", xs[1], ts[0], NULL), NULL);
    const char *y1 =
        op2(s, "Add", op2(s, "Mul", xs[1], tc[1], NULL), op2(s, "Mul", xs[0], ts[1], NULL), NULL);
    const char *ys[] = {y0, y1};
    const char *joined = emit(s, "", "Concat", ys, 2, NULL, &np);
    ox_emit_attr_int(s->ex, np, "axis", -1);
    int64_t back[IR_MAX_RANK] = {0};
    back[rank - 1] = d;
    return op2(s, "Reshape", joined, ints(s, "unpairs", back, (uint32_t)rank), dst);
}

static void rope_node(sub *s)
{
    const ir_node *n = s->n;
    const ir_type *t = n->inputs[0]->type;
    if (t->rank < 1) {
        fail(s, "RoPE needs its input's rank");
        return;
    }
    rope(s, name_of(n->inputs[0]), t->rank, t->dims[t->rank - 1], n->inputs[1], n->inputs[2],
         ir_get_int(n, "interleaved") != 0, n->outputs[0]->name);
}

/* ---- Attention ------------------------------------------------------------------------------ */

static const char *int_scalar(sub *s, const char *what, int64_t v)
{
    char stem[512];
    snprintf(stem, sizeof stem, "%s/%s", s->n->outputs[0]->name, what);
    return ox_emit_const_i64(s->ex, stem, &v, 1, true);
}

/* Whether key j is hidden from query i [S, T] for BHSD operands q and k, of any lengths: j > i + T
 * - S (the causal mask aligned to the bottom right). */
static const char *causal_hidden(sub *s, const char *q, const char *k)
{
    static const int64_t last[] = {1};
    const char *axis = int_scalar(s, "seq_axis", 2);
    const char *sq = op2(s, "Gather", op1(s, "Shape", q, NULL), axis, NULL);
    const char *tk = op2(s, "Gather", op1(s, "Shape", k, NULL), axis, NULL);
    const char *zero = int_scalar(s, "zero", 0), *one = int_scalar(s, "one", 1);
    const char *rows = emit(s, "", "Range", (const char *[]){zero, sq, one}, 3, NULL, NULL);
    const char *cols = emit(s, "", "Range", (const char *[]){zero, tk, one}, 3, NULL, NULL);
    const char *limit = op2(s, "Add", rows, op2(s, "Sub", tk, sq, NULL), NULL);
    limit = op2(s, "Unsqueeze", limit, ints(s, "column", last, 1), NULL);
    return op2(s, "Greater", cols, limit, NULL);
}

/* The causal mask [S, T] as scores: -inf where causal_hidden, else 0. */
static const char *causal_mask(sub *s, const char *q, const char *k)
{
    const char *in[] = {causal_hidden(s, q, k), scalar(s, "ninf", -INFINITY), scalar(s, "open", 0)};
    return emit(s, "", "Where", in, 3, NULL, NULL);
}

/* The key-padding mask km [B, T] as scores [B, 1, 1, T]: 0 where km > 0, else filter. */
static const char *key_mask_scores(sub *s, const ir_value *km, double filter)
{
    enum { ONNX_INT64 = 7 };
    static const int64_t axes[] = {1, 2};
    const char *keep =
        op2(s, "Greater", cast(s, name_of(km), ONNX_INT64, NULL), int_scalar(s, "zero", 0), NULL);
    const char *in[] = {keep, scalar(s, "open", 0), scalar(s, "filter", filter)};
    const char *scores = emit(s, "", "Where", in, 3, NULL, NULL);
    return op2(s, "Unsqueeze", scores, ints(s, "key_axes", axes, 2), NULL);
}

/* Whether a and b are the same known dim. */
static bool dim_same(int64_t a, int64_t b)
{
    return a == b && a != IR_DIM_UNKNOWN;
}

/* Packed (qkv_sizes, num_heads) as ONNX Runtime's own com.microsoft Attention(input, weights,
 * bias, mask_index, past, attention_bias) {num_heads, qkv_hidden_sizes, scale,
 * mask_filter_value}, its [B, S, Nv] output reshaped to the node's heads, where that op computes
 * the same: f32, no rotary tables, causal or NaN rule, a key_mask of i32 [B, S] (ONNX Runtime's
 * raw mask: a key whose entry is not > 0 is masked, as contrib_attention.c imports it), at most one
 * additive term, [B or 1, H or 1, S, S] (its attention_bias, which broadcasts over no other
 * dim). False: not written, the caller decomposes. */
static bool packed_contrib(sub *s)
{
    const ir_node *n = s->n;
    const ir_type *x = n->inputs[0]->type;
    const ir_value *mask = n->ninputs > 3 ? n->inputs[3] : NULL;
    const ir_value *km = n->ninputs > 6 ? n->inputs[6] : NULL;
    const ir_value *bias = n->ninputs > 7 ? n->inputs[7] : NULL;
    const ir_value *add = mask ? mask : bias;
    if (s->dt != IR_F32 || (n->ninputs > 4 && (n->inputs[4] || n->inputs[5])) ||
        ir_get_int(n, "causal") || ir_get_int(n, "nan_to_zero") || (mask && bias) ||
        (add &&
         (add->type->dtype != IR_F32 || add->type->rank != 4 ||
          !dim_same(add->type->dims[2], x->dims[1]) || !dim_same(add->type->dims[3], x->dims[1]) ||
          (add->type->dims[0] != 1 && !dim_same(add->type->dims[0], x->dims[0])) ||
          (add->type->dims[1] != 1 && add->type->dims[1] != ir_get_int(n, "num_heads")))) ||
        (km &&
         (km->type->dtype != IR_I32 || km->type->rank != 2 ||
          !dim_same(km->type->dims[0], x->dims[0]) || !dim_same(km->type->dims[1], x->dims[1]))))
        return false;
    const char *in[] = {name_of(n->inputs[0]), name_of(n->inputs[1]), name_of(n->inputs[2]),
                        name_of(km), "", name_of(add)};
    uint32_t nin = add ? 6 : km ? 4 : 3;
    const char *flat = tmp(s, "Attention");
    Onnx__NodeProto *np = ox_emit_raw(s->ex, "com.microsoft", "Attention", in, nin, &flat, 1);
    const int64_t *sizes;
    uint32_t count = ir_get_ints(n, "qkv_sizes", &sizes);
    ox_emit_attr_int(s->ex, np, "num_heads", ir_get_int(n, "num_heads"));
    ox_emit_attr_ints(s->ex, np, "qkv_hidden_sizes", sizes, count);
    if (ir_get_float(n, "scale") != 0)
        ox_emit_attr_float(s->ex, np, "scale", ir_get_float(n, "scale"));
    ox_emit_attr_float(s->ex, np, "mask_filter_value", ir_get_float(n, "mask_filter_value"));
    int64_t heads[] = {0, 0, ir_get_int(n, "num_heads"), -1};
    op2(s, "Reshape", flat, ints(s, "heads", heads, 4), n->outputs[0]->name);
    return true;
}

static void attention(sub *s)
{
    static const int64_t bshd_perm[] = {0, 2, 1, 3}, kt_perm[] = {0, 1, 3, 2};
    const ir_node *n = s->n;
    bool bshd = strcmp(ir_get_string(n, "layout"), "BSHD") == 0;
    const ir_type *qt = n->inputs[0]->type, *kt = n->inputs[1]->type;
    const char *q = name_of(n->inputs[0]), *k = name_of(n->inputs[1]), *v = name_of(n->inputs[2]);
    ir_type packed[3];
    if (ir_get_int(n, "num_heads") > 0) { /* packed: X @ W + bias split into head views */
        if (packed_contrib(s))
            return;
        const int64_t *sizes;
        ir_get_ints(n, "qkv_sizes", &sizes);
        int64_t hn = ir_get_int(n, "num_heads");
        const char *y = op2(s, "MatMul", q, k, NULL);
        y = op2(s, "Add", y, v, NULL);
        const char *in[] = {y, ints(s, "qkv_sizes", sizes, 3)};
        const char *out[] = {tmp(s, "q"), tmp(s, "k"), tmp(s, "v")};
        Onnx__NodeProto *np = ox_emit_raw(s->ex, "", "Split", in, 2, out, 3);
        ox_emit_attr_int(s->ex, np, "axis", -1);
        const char *views[3];
        for (int i = 0; i < 3; i++) {
            int64_t shape[] = {0, 0, hn, sizes[i] / hn};
            views[i] = op2(s, "Reshape", out[i], ints(s, "heads", shape, 4), NULL);
            packed[i] = *qt;
            packed[i].rank = 4;
            packed[i].dims[2] = hn, packed[i].dims[3] = sizes[i] / hn;
        }
        q = views[0], k = views[1], v = views[2];
        qt = &packed[0], kt = &packed[1];
    }
    if (qt->rank != 4 || kt->rank != 4) {
        fail(s, "Attention needs Q, K and V of rank 4");
        return;
    }
    int h = bshd ? 2 : 1;
    int64_t hq = qt->dims[h], hkv = kt->dims[h], d = qt->dims[3];
    if (bshd) {
        q = transpose(s, q, bshd_perm, 4);
        k = transpose(s, k, bshd_perm, 4);
        v = transpose(s, v, bshd_perm, 4);
    }
    if (n->ninputs > 4 && n->inputs[4]) { /* rotate-half RoPE of Q and K, tables broadcast to
                                             * each one's [B, H, S, W] */
        q = rope(s, q, 4, d, n->inputs[4], n->inputs[5], false, NULL);
        k = rope(s, k, 4, d, n->inputs[4], n->inputs[5], false, NULL);
    }
    if (hq != hkv) { /* GQA: each K/V head repeated hq / hkv times in a row (repeat_kv) */
        const int64_t dv = n->inputs[2]->type->dims[3];
        if (!ir_dim_is_static(hq) || !ir_dim_is_static(hkv) || !ir_dim_is_static(d) ||
            !ir_dim_is_static(dv)) {
            fail(s, "grouped-query Attention needs static head counts and sizes");
            return;
        }
        int64_t two[] = {2}, rep[] = {1, 1, hq / hkv, 1, 1};
        const char *axes = ints(s, "head_axis", two, 1), *reps = ints(s, "repeats", rep, 5);
        int64_t kshape[] = {0, hq, -1, d}, vshape[] = {0, hq, -1, dv};
        k = op2(s, "Reshape", op2(s, "Expand", op2(s, "Unsqueeze", k, axes, NULL), reps, NULL),
                ints(s, "k_heads", kshape, 4), NULL);
        v = op2(s, "Reshape", op2(s, "Expand", op2(s, "Unsqueeze", v, axes, NULL), reps, NULL),
                ints(s, "v_heads", vshape, 4), NULL);
    }
    double scale = ir_get_float(n, "scale");
    if (scale == 0) {
        if (!ir_dim_is_static(d)) {
            fail(s, "the default scale 1/sqrt(D) needs a static head size");
            return;
        }
        scale = 1.0 / sqrt((double)d);
    }
    const char *scores = op2(s, "MatMul", q, transpose(s, k, kt_perm, 4), NULL);
    scores = op2(s, "Mul", scores, scalar(s, "scale", scale), NULL);
    if (ir_get_int(n, "causal") == 2) { /* hidden scores become causal_fill before the masks */
        const char *in[] = {causal_hidden(s, q, k),
                            scalar(s, "causal_fill", ir_get_float(n, "causal_fill")), scores};
        scores = emit(s, "", "Where", in, 3, NULL, NULL);
    }
    if (n->ninputs > 6 && n->inputs[6]) /* the key-padding mask first, as the kernels add it */
        scores = op2(s, "Add", scores,
                     key_mask_scores(s, n->inputs[6], ir_get_float(n, "mask_filter_value")), NULL);
    if (n->ninputs > 3 && n->inputs[3])
        scores = op2(s, "Add", scores, name_of(n->inputs[3]), NULL);
    if (n->ninputs > 7 && n->inputs[7]) /* the bias after the mask, as the kernels add it */
        scores = op2(s, "Add", scores, name_of(n->inputs[7]), NULL);
    if (ir_get_int(n, "causal") == 1) /* key j masked for query i when j > i + T - S */
        scores = op2(s, "Add", scores, causal_mask(s, q, k), NULL);
    Onnx__NodeProto *np;
    const char *p = emit(s, "", "Softmax", &scores, 1, NULL, &np);
    ox_emit_attr_int(s->ex, np, "axis", -1);
    if (ir_get_int(n, "nan_to_zero")) { /* NaN probabilities (fully masked rows) become 0 */
        const char *in[] = {op1(s, "IsNaN", p, NULL), scalar(s, "zero", 0.0), p};
        p = emit(s, "", "Where", in, 3, NULL, NULL);
    }
    if (!bshd) {
        op2(s, "MatMul", p, v, n->outputs[0]->name);
        return;
    }
    const char *y = op2(s, "MatMul", p, v, NULL);
    const char *out = n->outputs[0]->name;
    emit(s, "", "Transpose", &y, 1, out, &np);
    ox_emit_attr_ints(s->ex, np, "perm", bshd_perm, 4);
}

int64_t ox_ort_needs_opset(const ir_node *n)
{
    if (ir_op_info_get(n->op)->cls != IR_CLASS_FUSED || !n->inputs[0] ||
        n->inputs[0]->type->dtype == IR_F32)
        return 0;
    static const char *const act_attrs[] = {"act", "out_act"};
    for (size_t i = 0; i < FR_COUNT_OF(act_attrs); i++) {
        const ir_attr *a = ir_node_attr(n, act_attrs[i]);
        if (a && a->kind == IR_ATTR_STRING && strncmp(a->v.s, "Gelu", 4) == 0)
            return 20;
    }
    const ir_attr *e = ir_node_attr(n, "expr");
    return e && e->kind == IR_ATTR_STRING && strstr(e->v.s, "gelu") ? 20 : 0;
}

void ox_ort_export(ox_exporter *ex, const ir_node *n)
{
    sub s = {.ex = ex, .n = n, .dt = n->inputs[0] ? n->inputs[0]->type->dtype : IR_F32};
    ar_arena *arena = ar_new();
    switch (n->op) {
    case IR_OP_FusedQKV: fused_qkv(&s); break;
    case IR_OP_RMSNorm:
        norm(&s, "SimplifiedLayerNormalization", name_of(n->inputs[0]), n->inputs[1], NULL);
        break;
    case IR_OP_AddRMSNorm: add_norm(&s, "SimplifiedLayerNormalization"); break;
    case IR_OP_AddLayerNorm: add_norm(&s, "LayerNormalization"); break;
    case IR_OP_FusedSoftmax: fused_softmax(&s); break;
    case IR_OP_SwiGLU: swiglu(&s); break;
    case IR_OP_GemmEpilogue: gemm_epilogue(&s); break;
    case IR_OP_FusedConvAct: fused_conv(&s); break;
    case IR_OP_ElementwiseChain: ew_chain(&s, arena); break;
    case IR_OP_RoPE: rope_node(&s); break;
    case IR_OP_Attention: attention(&s); break;
    case IR_OP_SeparableConv: separable_conv(&s); break;
    case IR_OP_QGemm: qgemm(&s); break;
    case IR_OP_SqueezeExcite: squeeze_excite(&s); break;
    case IR_OP_DynamicQuantizeMatMul: dynq_matmul(&s); break;
    case IR_OP_BiasDropout: bias_dropout(&s); break;
    case IR_OP_QLinearAdd: qlinear_add(&s); break;
    default: fail(&s, "no ONNX Runtime op or standard subgraph for it yet"); break;
    }
    ar_free(arena);
}
