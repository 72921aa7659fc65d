/* The com.microsoft contrib ops of ONNX Runtime that have a fused op's exact semantics: export
 * writes them, import reads them back (and reads them from models ONNX Runtime's optimizer wrote).
 *
 *   fused op                           contrib op                          when
 *   FusedConvAct(X, W, B?, Z?)         FusedConv(X, W, B, Z)               act is Identity, Relu,
 *                                        activation, activation_params      Tanh, Sigmoid, LeakyRelu,
 *                                                                           Clip or HardSigmoid
 *   GemmEpilogue(A, B, bias?)          FusedGemm(A, B, C)                  A 2-D, no residual, act
 *                                        activation, activation_alpha/beta  Relu, LeakyRelu, Sigmoid,
 *                                                                           Tanh or HardSigmoid
 *   GemmEpilogue(A, B, bias)           Gemm(A, B, C) (standard ONNX)       A 2-D, no residual or act
 *   GemmEpilogue(A, B)                 FusedMatMul(A, B) alpha, trans*,    no bias, residual or act
 *                                        transBatch*
 *   AddLayerNorm(A, B, s, b?, sb?)     SkipLayerNormalization(A, B, s, b,  normalized over the last
 *     -> Y, S                            sb) -> Y,_,_,S                    axis, A 2-D or 3-D, B of
 *   AddRMSNorm(A, B, s) -> Y, S        SkipSimplifiedLayerNormalization    A's shape, s, b, sb 1-D
 *   ElementwiseChain "gelu(add(x0, x1))"  BiasGelu(A, B)                   x1 1-D, A's last dim
 *   ElementwiseChain "gelu_tanh(add(x0, x1))"  FastGelu(A, B)              as above
 *   Gelu (before opset 20)             Gelu, or FastGelu for "tanh"
 *   DynamicQuantizeMatMul              DynamicQuantizeMatMul (import only: export writes it
 *                                        for `--for onnxruntime` in export_ort.c, lossless export
 *                                        keeps the fuserule op)
 *
 * Export maps f32 nodes only: ONNX Runtime's CPU kernels of these ops are float32 (for f16 the
 * fused op goes to the "fuserule" domain, and Gelu to opset 20). */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the table ------------------------------------------------------------------------------ */

/* NO: an ONNX slot the fused op has no place for: it must be empty. BIAS: skip normalization's
 * bias, added to the sum: input + skip + bias is AddRMSNorm(Add(input, skip), bias), summed in
 * ONNX Runtime's order (AddLayerNorm takes it as its skip_bias, input 4). */
enum { NO = -1, BIAS = -2 };

typedef struct {
    const char *op_type;
    ir_op op;
    int8_t in[5];  /* IR input index of each ONNX input slot */
    int8_t out[4]; /* IR output index of each ONNX output slot */
    uint8_t nin, nout; /* ONNX slots described */
    uint8_t ir_inputs; /* inputs of the IR node */
} contrib_form;

static const contrib_form forms[] = {
    {"FusedConv", IR_OP_FusedConvAct, {0, 1, 2, 3}, {0}, 4, 1, 4},
    {"FusedGemm", IR_OP_GemmEpilogue, {0, 1, 2}, {0}, 3, 1, 4},
    {"FusedMatMul", IR_OP_GemmEpilogue, {0, 1}, {0}, 2, 1, 2},
    {"SkipLayerNormalization", IR_OP_AddLayerNorm, {0, 1, 2, 3, 4}, {0, NO, NO, 1}, 5, 4, 5},
    {"SkipSimplifiedLayerNormalization", IR_OP_AddRMSNorm, {0, 1, 2, BIAS}, {0, NO, NO, 1}, 4, 4,
     3},
    {"BiasGelu", IR_OP_ElementwiseChain, {0, 1}, {0}, 2, 1, 2},
    {"Gelu", IR_OP_Gelu, {0}, {0}, 1, 1, 1},
    {"FastGelu", IR_OP_Gelu, {0, NO}, {0}, 2, 1, 1},
    {"QuickGelu", IR_OP_ElementwiseChain, {0}, {0}, 1, 1, 1},
    {"GemmFastGelu", IR_OP_GemmEpilogue, {0, 1, 2}, {0}, 3, 1, 4},
    {"DynamicQuantizeMatMul", IR_OP_DynamicQuantizeMatMul, {0, 1, 2, 3, 4}, {0}, 5, 1, 5},
};

/* com.microsoft ops that are standard ops under another domain: ONNX Runtime's QuantizeLinear and
 * DequantizeLinear take the inputs and `axis` of the standard ones at opset 13 (and wider element
 * types, which the IR refuses by name). */
static const struct {
    const char *op_type;
    ir_op op;
    int64_t opset;
} standard_twins[] = {
    {"QuantizeLinear", IR_OP_QuantizeLinear, 13},
    {"DequantizeLinear", IR_OP_DequantizeLinear, 13},
};

bool ox_contrib_standard(const char *op_type, ir_op *out, int64_t *opset)
{
    for (size_t i = 0; i < FR_COUNT_OF(standard_twins); i++) {
        if (strcmp(standard_twins[i].op_type, op_type) == 0) {
            *out = standard_twins[i].op;
            *opset = standard_twins[i].opset;
            return true;
        }
    }
    return false;
}

static const char bias_gelu_expr[] = "gelu(add(x0, x1))";
/* QuickGelu: x * sigmoid(alpha * x), alpha 1.702 unless given */
static const char quick_gelu_format[] = "mul(x0, sigmoid(mul(x0, %.9g)))";
static const double quick_gelu_alpha = 1.702;

/* ONNX Runtime's epsilon when SkipLayerNormalization does not say (its schema's default). */
static const double ort_skip_ln_epsilon = 1e-12;

static const contrib_form *find_form(const char *op_type)
{
    for (size_t i = 0; i < FR_COUNT_OF(forms); i++)
        if (strcmp(forms[i].op_type, op_type) == 0)
            return &forms[i];
    return NULL;
}

/* FastGelu with its bias input: gelu_tanh(X + bias), an ElementwiseChain like BiasGelu's. */
static const contrib_form fast_gelu_bias = {
    "FastGelu", IR_OP_ElementwiseChain, {0, 1}, {0}, 2, 1, 2};
static const char fast_gelu_bias_expr[] = "gelu_tanh(add(x0, x1))";

/* The form of a node: by its op_type, and for FastGelu by whether it has a bias. */
static const contrib_form *form_of(const Onnx__NodeProto *np)
{
    if (strcmp(np->op_type, "FastGelu") == 0 && np->n_input > 1 && np->input[1][0])
        return &fast_gelu_bias;
    return find_form(np->op_type);
}

/* com.microsoft ops with no fused op of their semantics: each becomes a subgraph of catalog ops
 * (its own file). define makes an Identity for each named output, which import turns into the op
 * that computes it. */
static const struct {
    const char *op_type;
    uint8_t max_outputs;
    /* NULL: an Identity placeholder per named output */
    ir_node *(*define)(ox_importer *im, const Onnx__NodeProto *np, const char *label);
    bool (*import)(ox_importer *im, ox_pending *p);
} subgraph_ops[] = {
    {"BiasDropout", 2, ox_contrib_dropout_define, ox_contrib_dropout_import},
    {"BitmaskDropout", 2, ox_contrib_dropout_define, ox_contrib_dropout_import},
    {"DropoutGrad", 1, NULL, ox_contrib_dropout_import},
    {"BitmaskDropoutGrad", 1, NULL, ox_contrib_dropout_import},
    {"EmbedLayerNormalization", 3, NULL, ox_contrib_embed_import},
};

static int find_subgraph_op(const char *op_type)
{
    for (size_t i = 0; i < FR_COUNT_OF(subgraph_ops); i++)
        if (strcmp(subgraph_ops[i].op_type, op_type) == 0)
            return (int)i;
    return -1;
}

static ir_node *define_subgraph_op(ox_importer *im, const Onnx__NodeProto *np, int which,
                                   const char *label)
{
    bool named = false;
    for (size_t k = 0; k < np->n_output; k++) {
        if (!np->output[k][0])
            continue;
        if (k >= subgraph_ops[which].max_outputs) {
            ox_unsupported(ox_importer_report(im), "%s: output %zu of %s is outside the catalog",
                           label, k, np->op_type);
            return NULL;
        }
        named = true;
    }
    if (!named) {
        ox_invalid(ox_importer_report(im), "%s has no named output", label);
        return NULL;
    }
    if (subgraph_ops[which].define)
        return subgraph_ops[which].define(im, np, label);
    ir_node *first = NULL;
    for (size_t k = 0; k < np->n_output; k++) {
        if (!np->output[k][0])
            continue;
        const char *name = np->output[k];
        ir_node *n = ox_importer_add_node(im, IR_OP_Identity, 1, &name, 1, label);
        if (!n)
            return NULL;
        first = first ? first : n;
    }
    return first;
}

bool ox_contrib_lookup(const char *op_type, ir_op *out)
{
    if (find_subgraph_op(op_type) >= 0) {
        *out = IR_OP_Identity; /* until import builds the subgraph */
        return true;
    }
    const contrib_form *f = find_form(op_type);
    if (f)
        *out = f->op;
    else if (ox_contrib_is_attention(op_type)) /* several nodes: contrib_attention.c */
        *out = IR_OP_Attention;
    return f != NULL || ox_contrib_is_attention(op_type);
}

/* ---- activations ---------------------------------------------------------------------------- */

/* The activations of FusedConv and FusedGemm with the catalog's act names and their parameter
 * defaults (the act's ONNX defaults, which the catalog assumes when act_alpha/act_beta are absent):
 * the rows of ir/acts.def that FusedConv takes. */
static const struct {
    const char *name;
    unsigned nparams;
    double alpha, beta;
    bool in_gemm; /* FusedGemm takes it too */
} acts[] = {
#define ORT_ACT_0(NAME, NP, D0, D1, GEMM)
#define ORT_ACT_1(NAME, NP, D0, D1, GEMM) {#NAME, NP, D0, D1, GEMM},
#define ACT(NAME, ENUM, OP, APPROX, FROM, NP, P0, D0, P1, D1, CONV, GEMM)                          \
    ORT_ACT_##CONV(NAME, NP, D0, D1, GEMM)
#include "ir/acts.def"
#undef ACT
#undef ORT_ACT_0
#undef ORT_ACT_1
};

static int find_act(const char *name)
{
    for (size_t i = 0; i < FR_COUNT_OF(acts); i++)
        if (strcmp(acts[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* ---- import --------------------------------------------------------------------------------- */

ir_node *ox_contrib_define(ox_importer *im, const Onnx__NodeProto *np, ir_op op,
                           const char *label)
{
    if (ox_contrib_is_attention(np->op_type))
        return ox_contrib_attention_define(im, np, label);
    int which = find_subgraph_op(np->op_type);
    if (which >= 0)
        return define_subgraph_op(im, np, which, label);
    const contrib_form *f = form_of(np);
    ox_report *r = ox_importer_report(im);
    FR_CHECK(f && (f->op == op || f == &fast_gelu_bias));
    op = f->op;
    const char *names[4] = {0};
    uint32_t nout = 0;
    for (size_t k = 0; k < np->n_output; k++) {
        if (!np->output[k][0])
            continue;
        if (k >= f->nout || f->out[k] == NO) {
            ox_unsupported(r, "%s: output %zu of %s is outside the catalog", label, k,
                           np->op_type);
            return NULL;
        }
        names[f->out[k]] = np->output[k];
        if ((uint32_t)f->out[k] + 1 > nout)
            nout = (uint32_t)f->out[k] + 1;
    }
    if (nout == 0) {
        ox_invalid(r, "%s has no named output", label);
        return NULL;
    }
    for (uint32_t i = 0; i < nout; i++)
        if (!names[i])
            names[i] = ox_importer_fresh(im, np, i);
    return ox_importer_add_node(im, op, f->ir_inputs, names, nout, label);
}

static bool set_inputs(ox_importer *im, ox_pending *p, const contrib_form *f)
{
    bool ok = true;
    ir_value *bias = NULL;
    for (size_t k = 0; k < p->proto->n_input; k++) {
        if (!p->proto->input[k][0])
            continue;
        if (k >= f->nin || f->in[k] == NO) {
            ox_unsupported(ox_importer_report(im), "%s: input %zu of %s is outside the catalog",
                           p->label, k, f->op_type);
            return false;
        }
        ir_value *v;
        if (!ox_importer_input(im, p, k, &v))
            ok = false;
        else if (f->in[k] == BIAS)
            bias = v;
        else
            ir_set_input(p->node, (uint32_t)f->in[k], v);
    }
    if (ok && bias && p->node->inputs[0] && p->node->inputs[1]) {
        ir_graph *g = ox_importer_graph(im);
        const char *name = ir_fresh_name(
            g, ar_printf(g->arena, "%s_input_skip", p->node->outputs[0]->name));
        ir_node *sum = ir_add_node(g, IR_OP_Add, 2, &name, 1);
        FR_CHECK(sum != NULL); /* the name is fresh */
        ir_set_input(sum, 0, p->node->inputs[0]);
        ir_set_input(sum, 1, p->node->inputs[1]);
        ir_set_input(p->node, 0, sum->outputs[0]);
        ir_set_input(p->node, 1, bias);
    }
    return ok;
}

static bool is_attr(const Onnx__AttributeProto *a, const char *name,
                    Onnx__AttributeProto__AttributeType type)
{
    return a->name && strcmp(a->name, name) == 0 && a->has_type && a->type == type;
}

#define ATTR_INT ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
#define ATTR_FLOAT ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
#define ATTR_STRING ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING
#define ATTR_INTS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
#define ATTR_FLOATS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS

/* `activation` (a string) names one of acts[]; *act becomes its index. */
static bool read_activation(ox_importer *im, ox_pending *p, const Onnx__AttributeProto *a,
                            int *act, bool gemm)
{
    char name[32] = {0};
    if (a->s.len < sizeof name)
        memcpy(name, a->s.data, a->s.len);
    *act = find_act(name);
    if (*act < 0 || (gemm && !acts[*act].in_gemm)) {
        ox_unsupported(ox_importer_report(im), "%s: activation '%s' is outside the catalog",
                       p->label, name);
        return false;
    }
    ir_set_attr_string(ox_importer_graph(im), p->node, "act", name);
    return true;
}

/* A parameter of the activation: act_alpha or act_beta, unless it is the act's default. */
static void set_act_param(ox_importer *im, ox_pending *p, int act, unsigned index, float value)
{
    double v = ox_float_to_double(value);
    double dflt = index == 0 ? acts[act].alpha : acts[act].beta;
    if (v != dflt)
        ir_set_attr_float(ox_importer_graph(im), p->node, index == 0 ? "act_alpha" : "act_beta", v);
}

static bool copy_same_name(ox_importer *im, ox_pending *p, const Onnx__AttributeProto *a)
{
    ir_graph *g = ox_importer_graph(im);
    const ir_attr_schema *s = ir_op_attr_schema(p->node->op, a->name);
    if (!s || !a->has_type)
        return false;
    switch (a->type) {
    case ATTR_INT:
        ir_set_attr_int(g, p->node, a->name, a->i);
        return s->kind == IR_ATTR_INT;
    case ATTR_FLOAT:
        ir_set_attr_float(g, p->node, a->name, ox_float_to_double(a->f));
        return s->kind == IR_ATTR_FLOAT;
    case ATTR_STRING:
        if (memchr(a->s.data, '\0', a->s.len))
            return false;
        ir_set_attr_string(g, p->node, a->name, ar_strndup(g->arena, (const char *)a->s.data,
                                                           a->s.len));
        return s->kind == IR_ATTR_STRING;
    case ATTR_INTS:
        ir_set_attr_ints(g, p->node, a->name, a->ints, (uint32_t)a->n_ints);
        return s->kind == IR_ATTR_INTS;
    default:
        return false;
    }
}

static bool fused_conv_attrs(ox_importer *im, ox_pending *p, int *act)
{
    const Onnx__AttributeProto *params = NULL;
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        bool ok;
        if (is_attr(a, "activation", ATTR_STRING))
            ok = read_activation(im, p, a, act, false);
        else if (is_attr(a, "activation_params", ATTR_FLOATS))
            ok = (params = a) != NULL;
        else
            ok = strncmp(a->name ? a->name : "", "act", 3) != 0 && copy_same_name(im, p, a);
        if (!ok)
            return false;
    }
    if (params) {
        if (*act < 0 || params->n_floats != acts[*act].nparams)
            return false;
        for (unsigned k = 0; k < params->n_floats; k++)
            set_act_param(im, p, *act, k, params->floats[k]);
    }
    return true;
}

static bool fused_gemm_attrs(ox_importer *im, ox_pending *p, int *act, double *beta)
{
    float params[2] = {NAN, NAN};
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        bool ok = true;
        if (is_attr(a, "activation", ATTR_STRING))
            ok = read_activation(im, p, a, act, true);
        else if (is_attr(a, "activation_alpha", ATTR_FLOAT))
            params[0] = a->f;
        else if (is_attr(a, "activation_beta", ATTR_FLOAT))
            params[1] = a->f;
        else if (is_attr(a, "activation_gamma", ATTR_FLOAT))
            ok = true; /* used by none of the activations the catalog has */
        else if (is_attr(a, "beta", ATTR_FLOAT))
            *beta = ox_float_to_double(a->f);
        else
            ok = copy_same_name(im, p, a);
        if (!ok)
            return false;
    }
    for (unsigned k = 0; k < 2; k++)
        if (*act >= 0 && k < acts[*act].nparams && !isnan(params[k]))
            set_act_param(im, p, *act, k, params[k]);
    return true;
}

/* FusedGemm's C: a bias when it is an unscaled vector, otherwise GemmEpilogue's residual with
 * beta. Only a constant or input has a known rank before validation; anything else is taken as
 * a residual, which computes the same. */
static void place_gemm_c(ox_importer *im, ox_pending *p, double beta)
{
    ir_node *n = p->node;
    ir_value *c = n->inputs[2];
    if (!c)
        return;
    bool bias = beta == 1.0 && c->kind != IR_VALUE_NODE && c->type->rank == 1;
    if (bias)
        return;
    n->inputs[2] = NULL;
    n->inputs[3] = c;
    if (beta != 1.0)
        ir_set_attr_float(ox_importer_graph(im), n, "beta", beta);
}

static bool no_attrs(const ox_pending *p)
{
    return p->proto->n_attribute == 0;
}

/* FusedMatMul's attributes are GemmEpilogue's (contrib_matmul.c decomposes the forms it cannot
 * hold before this). */
static bool fused_matmul_attrs(ox_importer *im, ox_pending *p)
{
    static const char *const matmul[] = {"alpha",       "transA",      "transB",
                                         "transBatchA", "transBatchB", NULL};
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        if ((is_attr(a, "transBatchA", ATTR_INT) || is_attr(a, "transBatchB", ATTR_INT)) &&
            a->i == 0)
            continue; /* the default, left unwritten */
        bool known = false;
        for (const char *const *name = matmul; *name && !known; name++)
            known = a->name && strcmp(a->name, *name) == 0;
        if (!known || !copy_same_name(im, p, a))
            return false;
    }
    return true;
}

static bool skip_ln_attrs(ox_importer *im, ox_pending *p)
{
    double epsilon = ort_skip_ln_epsilon;
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        if (!is_attr(a, "epsilon", ATTR_FLOAT))
            return false;
        epsilon = ox_float_to_double(a->f);
    }
    if (epsilon != ir_op_attr_schema(p->node->op, "epsilon")->f)
        ir_set_attr_float(ox_importer_graph(im), p->node, "epsilon", epsilon);
    return true;
}

static bool quick_gelu_attrs(ox_importer *im, ox_pending *p)
{
    ir_graph *g = ox_importer_graph(im);
    double alpha = quick_gelu_alpha;
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        if (!is_attr(a, "alpha", ATTR_FLOAT) || !isfinite(a->f))
            return false;
        alpha = ox_float_to_double(a->f);
    }
    ir_set_attr_string(g, p->node, "expr", ar_printf(g->arena, quick_gelu_format, alpha));
    return true;
}

static bool import_attrs(ox_importer *im, ox_pending *p, const contrib_form *f)
{
    ir_graph *g = ox_importer_graph(im);
    int act = -1;
    double beta = 1.0;
    switch (f->op) {
    case IR_OP_FusedConvAct:
        return fused_conv_attrs(im, p, &act);
    case IR_OP_GemmEpilogue:
        if (strcmp(f->op_type, "FusedMatMul") == 0)
            return fused_matmul_attrs(im, p);
        if (strcmp(f->op_type, "GemmFastGelu") == 0) { /* FastGelu(X @ W + bias) */
            ir_set_attr_string(g, p->node, "act", "GeluTanh");
            return no_attrs(p);
        }
        if (!fused_gemm_attrs(im, p, &act, &beta))
            return false;
        place_gemm_c(im, p, beta);
        return true;
    case IR_OP_AddLayerNorm:
    case IR_OP_AddRMSNorm:
        return skip_ln_attrs(im, p);
    case IR_OP_ElementwiseChain:
        if (strcmp(f->op_type, "QuickGelu") == 0)
            return quick_gelu_attrs(im, p);
        ir_set_attr_string(g, p->node, "expr",
                           f == &fast_gelu_bias ? fast_gelu_bias_expr : bias_gelu_expr);
        return no_attrs(p);
    case IR_OP_Gelu:
        if (strcmp(f->op_type, "FastGelu") == 0)
            ir_set_attr_string(g, p->node, "approximate", "tanh");
        return no_attrs(p);
    case IR_OP_DynamicQuantizeMatMul:
        return no_attrs(p);
    default:
        FR_UNREACHABLE();
        return false;
    }
}

bool ox_contrib_import(ox_importer *im, ox_pending *p)
{
    if (ox_contrib_is_attention(p->proto->op_type))
        return ox_contrib_attention_import(im, p);
    int which = find_subgraph_op(p->proto->op_type);
    if (which >= 0)
        return subgraph_ops[which].import(im, p);
    const contrib_form *f = form_of(p->proto);
    FR_CHECK(f != NULL);
    bool decomposed = false;
    if (strcmp(f->op_type, "FusedMatMul") == 0 && !ox_contrib_fused_matmul(im, p, &decomposed))
        return false;
    if (decomposed)
        return true;
    if (!set_inputs(im, p, f))
        return false;
    if (!import_attrs(im, p, f)) {
        ox_unsupported(ox_importer_report(im),
                       "%s: attributes outside what the catalog's %s expresses", p->label,
                       ir_op_name(f->op));
        return false;
    }
    return true;
}

/* ---- export --------------------------------------------------------------------------------- */

static bool is_f32(const ir_value *v)
{
    return !v || v->type->dtype == IR_F32;
}

static bool all_f32(const ir_node *n)
{
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (!is_f32(n->inputs[i]))
            return false;
    return true;
}

/* The node's act as an index of acts[] (-2: Identity, -1: not in acts[]). */
static int node_act(const ir_node *n)
{
    const char *act = ir_get_string(n, "act");
    return strcmp(act, "Identity") == 0 ? -2 : find_act(act);
}

static double act_param(const ir_node *n, int act, unsigned index)
{
    const char *name = index == 0 ? "act_alpha" : "act_beta";
    if (ir_node_attr(n, name))
        return ir_get_float(n, name);
    return index == 0 ? acts[act].alpha : acts[act].beta;
}

static bool export_fused_conv(ox_exporter *ex, const ir_node *n)
{
    int act = node_act(n);
    if (act == -1)
        return false;
    static const char *const conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                             "pads",     "strides",   NULL};
    Onnx__NodeProto *np = ox_emit_node(ex, "com.microsoft", "FusedConv", n);
    ox_emit_copy_attrs(ex, np, n, conv_attrs);
    if (act >= 0) {
        ox_emit_attr_string(ex, np, "activation", acts[act].name);
        double params[2];
        for (unsigned k = 0; k < acts[act].nparams; k++)
            params[k] = act_param(n, act, k);
        if (acts[act].nparams)
            ox_emit_attr_floats(ex, np, "activation_params", params, acts[act].nparams);
    }
    return true;
}

static bool export_gemm(ox_exporter *ex, const ir_node *n)
{
    static const char *const matmul_attrs[] = {"alpha", "transA", "transB", NULL};
    static const char *const batch_attrs[] = {"alpha",       "transA",      "transB",
                                              "transBatchA", "transBatchB", NULL};
    bool bias = n->ninputs > 2 && n->inputs[2];
    bool residual = n->ninputs > 3 && n->inputs[3];
    int act = node_act(n);
    if (!bias && !residual && act == -2) {
        Onnx__NodeProto *np = ox_emit_node(ex, "com.microsoft", "FusedMatMul", n);
        ox_emit_copy_attrs(ex, np, n, batch_attrs);
        return true;
    }
    if (ir_get_int(n, "transBatchA") || ir_get_int(n, "transBatchB"))
        return false; /* only FusedMatMul moves batch dims */
    if (residual || act == -1 || (act >= 0 && !acts[act].in_gemm) ||
        n->inputs[0]->type->rank != 2 || n->inputs[1]->type->rank != 2)
        return false;
    if (act == -2) { /* FusedGemm wants an activation: alpha * A @ B + bias is ONNX's Gemm */
        Onnx__NodeProto *np = ox_emit_node(ex, "", "Gemm", n);
        ox_emit_copy_attrs(ex, np, n, matmul_attrs);
        return true;
    }
    Onnx__NodeProto *np = ox_emit_node(ex, "com.microsoft", "FusedGemm", n);
    ox_emit_copy_attrs(ex, np, n, matmul_attrs);
    if (act >= 0) {
        ox_emit_attr_string(ex, np, "activation", acts[act].name);
        for (unsigned k = 0; k < acts[act].nparams; k++)
            ox_emit_attr_float(ex, np, k == 0 ? "activation_alpha" : "activation_beta",
                               act_param(n, act, k));
    }
    return true;
}

static bool same_shape(const ir_type *a, const ir_type *b)
{
    if (a->rank != b->rank || a->rank < 0)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static bool export_skip_norm(ox_exporter *ex, const ir_node *n, const char *op_type)
{
    const ir_type *a = n->inputs[0]->type;
    int64_t axis = ir_get_int(n, "axis");
    bool last = axis == -1 || axis == a->rank - 1;
    /* scale, bias and skip_bias: vectors of the hidden size, as ONNX Runtime's kernel reads them */
    int64_t hidden = a->rank >= 1 ? a->dims[a->rank - 1] : -1;
    bool vectors = ir_dim_is_static(hidden) || ir_dim_is_symbol(hidden);
    for (uint32_t i = 2; vectors && i < n->ninputs; i++) {
        const ir_type *t = n->inputs[i] ? n->inputs[i]->type : NULL;
        vectors = !t || (t->rank == 1 && t->dims[0] == hidden);
    }
    if (!last || (a->rank != 2 && a->rank != 3) || !same_shape(a, n->inputs[1]->type) || !vectors)
        return false;
    static const int slots[] = {0, 3};
    Onnx__NodeProto *np = ox_emit_node(ex, "com.microsoft", op_type, n);
    ox_emit_outputs(ex, np, n, slots, 2);
    ox_emit_attr_float(ex, np, "epsilon", ir_get_float(n, "epsilon"));
    return true;
}

/* ElementwiseChain "mul(x0, sigmoid(mul(x0, A)))" is QuickGelu with alpha A, when A is a float. */
static bool export_quick_gelu(ox_exporter *ex, const ir_node *n)
{
    const char *expr = ir_get_string(n, "expr");
    double alpha;
    int end = 0;
    if (n->ninputs != 1 ||
        sscanf(expr, "mul(x0, sigmoid(mul(x0, %lf)))%n", &alpha, &end) != 1 ||
        expr[end] != '\0' || !isfinite(alpha) || fabs(alpha) > FLT_MAX ||
        ox_float_to_double((float)alpha) != alpha) /* import wrote a float's shortest text */
        return false;
    Onnx__NodeProto *np = ox_emit_node(ex, "com.microsoft", "QuickGelu", n);
    ox_emit_attr_float(ex, np, "alpha", alpha);
    return true;
}

static bool export_bias_gelu(ox_exporter *ex, const ir_node *n)
{
    if (n->ninputs == 1)
        return export_quick_gelu(ex, n);
    const char *expr = ir_get_string(n, "expr");
    bool fast = strcmp(expr, fast_gelu_bias_expr) == 0;
    if (n->ninputs != 2 || (!fast && strcmp(expr, bias_gelu_expr) != 0))
        return false;
    const ir_type *a = n->inputs[0]->type, *b = n->inputs[1]->type;
    if (a->rank < 1 || b->rank != 1 || b->dims[0] != a->dims[a->rank - 1] ||
        !ir_dim_is_static(b->dims[0]))
        return false;
    ox_emit_node(ex, "com.microsoft", fast ? "FastGelu" : "BiasGelu", n);
    return true;
}

bool ox_contrib_export(ox_exporter *ex, const ir_node *n)
{
    if (!all_f32(n))
        return false;
    switch (n->op) {
    case IR_OP_FusedConvAct:
        return export_fused_conv(ex, n);
    case IR_OP_GemmEpilogue:
        return export_gemm(ex, n);
    case IR_OP_AddLayerNorm:
        return export_skip_norm(ex, n, "SkipLayerNormalization");
    case IR_OP_AddRMSNorm:
        return export_skip_norm(ex, n, "SkipSimplifiedLayerNormalization");
    case IR_OP_ElementwiseChain:
        return export_bias_gelu(ex, n);
    case IR_OP_Gelu: {
        bool tanh = strcmp(ir_get_string(n, "approximate"), "tanh") == 0;
        ox_emit_node(ex, "com.microsoft", tanh ? "FastGelu" : "Gelu", n);
        return true;
    }
    default:
        return false;
    }
}
