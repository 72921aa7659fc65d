/* Plain ONNX elementwise ops on the GPU: each is one ElementwiseChain expression, compiled by
 * NVRTC like a fused chain (kernels/cuda/ewchain.cu), so that the GPU form of an op is one row of
 * the table below. A template is the expression language of docs/kernels.md with:
 *   $k             the op's input k (renumbered x0, x1, ... in order of first use);
 *   {name}         the float attribute `name` (its schema default when absent);
 *   {a|b|...}      the first alternative that applies: `$k` when input k is present, an attribute
 *                  when the node sets it, else a number (1e39 is +inf once rounded to float).
 * A variadic op (Max, Min, Sum) names a binary function, folded over its inputs:
 * max(max(x0, x1), x2); Mean divides the fold by the input count, as the CPU kernel does. */
#include "kernels/cuda/cuda_registry.h"

#include "base/check.h"
#include "kernels/kernels.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ew_row {
    ir_op op;
    const char *when_attr, *when_value; /* a string attribute selecting the row; NULL: always */
    const char *expr;
    unsigned flags; /* EW_VARIADIC, EW_PER_CHANNEL */
} ew_row;

enum {
    EW_VARIADIC = 1,    /* expr names a binary function, folded over every input */
    EW_PER_CHANNEL = 2, /* inputs after the first are [C] vectors along dim 1 (NCHW), not numpy */
    EW_MEAN = 4,        /* with EW_VARIADIC: the fold divided by the number of inputs */
};

/* A row selected by the op alone; `flags` 0. */
#define EW(op, expr) {IR_OP_##op, NULL, NULL, expr, 0}

/* Adding an elementwise op to the GPU: one row here (the op's CPU kernel is the reference that
 * tests/gpu/test_gpu_kernels.c compares it with). */
static const ew_row rows[] = {
    EW(Relu, "relu($0)"),
    EW(LeakyRelu, "leakyrelu($0, {alpha})"),
    EW(Sigmoid, "sigmoid($0)"),
    EW(Tanh, "tanh($0)"),
    EW(Clip, "clip($0, {$1|min|-1e39}, {$2|max|1e39})"),
    EW(HardSigmoid, "hardsigmoid($0, {alpha}, {beta})"),
    EW(HardSwish, "hardswish($0)"),
    {IR_OP_Gelu, "approximate", "none", "gelu($0)", 0},
    {IR_OP_Gelu, "approximate", "tanh", "gelu_tanh($0)", 0},
    EW(Elu, "elu($0, {alpha})"),
    EW(Softplus, "softplus($0)"),
    EW(Erf, "erf($0)"),
    EW(Exp, "exp($0)"),
    EW(Log, "log($0)"),
    EW(Neg, "neg($0)"),
    EW(Abs, "abs($0)"),
    EW(Sqrt, "sqrt($0)"),
    EW(Reciprocal, "recip($0)"),
    EW(Floor, "floor($0)"),
    EW(Ceil, "ceil($0)"),
    EW(Sin, "sin($0)"),
    EW(Cos, "cos($0)"),
    EW(Identity, "$0"),
    EW(Dropout, "$0"), /* inference: the identity (one output only) */
    EW(Expand, "$0"),  /* broadcast to the inferred shape */
    EW(Add, "add($0, $1)"),
    EW(Sub, "sub($0, $1)"),
    EW(Mul, "mul($0, $1)"),
    EW(Div, "div($0, $1)"),
    EW(Pow, "pow($0, $1)"),
    EW(PRelu, "leakyrelu($0, $1)"),
    {IR_OP_Max, NULL, NULL, "max", EW_VARIADIC},
    {IR_OP_Min, NULL, NULL, "min", EW_VARIADIC},
    /* Sum and Mean add in f32 in input order, as the CPU kernel (and ONNX Runtime) does */
    {IR_OP_Sum, NULL, NULL, "add", EW_VARIADIC},
    {IR_OP_Mean, NULL, NULL, "add", EW_VARIADIC | EW_MEAN},
    EW(Softsign, "div($0, add(abs($0), 1))"),
    EW(Mish, "mul($0, tanh(softplus($0)))"),
    /* Selu: gamma * x for x > 0, else gamma * alpha * expm1(x); elu is x or alpha * expm1(x) */
    EW(Selu, "mul(elu($0, {alpha}), {gamma})"),
    /* Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), the ONNX definition, right for
     * either sign of alpha (the CPU kernel's x > 0 ? x : alpha * expm1(x / alpha) is the same
     * function; x near 0- differs by exp(.) - 1's rounding, below 1e-7 * |alpha|) */
    EW(Celu, "add(relu($0), min(0, mul({alpha}, sub(exp(div($0, {alpha})), 1))))"),
    /* the functions added for them (sign .. shrink); Round is half to even on both sides */
    EW(Sign, "sign($0)"),
    EW(Round, "round($0)"),
    EW(Tan, "tan($0)"),
    EW(Asin, "asin($0)"),
    EW(Acos, "acos($0)"),
    EW(Atan, "atan($0)"),
    EW(Sinh, "sinh($0)"),
    EW(Cosh, "cosh($0)"),
    EW(Asinh, "asinh($0)"),
    EW(Acosh, "acosh($0)"),
    EW(Atanh, "atanh($0)"),
    EW(ThresholdedRelu, "thresholdedrelu($0, {alpha})"),
    EW(Shrink, "shrink($0, {bias}, {lambd})"),
    /* inference BatchNormalization: (x - mean) * scale / sqrt(var + epsilon) + B per channel */
    {IR_OP_BatchNormalization, NULL, NULL,
     "add(mul(sub($0, $3), div($1, sqrt(add($4, {epsilon})))), $2)", EW_PER_CHANNEL},
};

static const ew_row *row_of(const ir_node *n)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].op == n->op &&
            (!rows[i].when_attr ||
             strcmp(ir_get_string(n, rows[i].when_attr), rows[i].when_value) == 0))
            return &rows[i];
    return NULL;
}

bool kn_cuda_ew_op_listed(ir_op op)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].op == op)
            return true;
    return false;
}

static bool present(const ir_node *n, uint32_t k) { return k < n->ninputs && n->inputs[k]; }

/* A float for the expression language: %.9g round-trips it; infinities as +-1e39. */
static const char *number(ar_arena *arena, double v, const char **err)
{
    float f = (float)v;
    if (isnan(f)) {
        *err = "an attribute is NaN";
        return NULL;
    }
    if (isinf(f))
        return f > 0 ? "1e39" : "-1e39";
    return ar_printf(arena, "%.9g", (double)f);
}

typedef struct expander {
    ar_arena *arena;
    const ir_node *n;
    kn_cuda_ew_expr *out;
    const char *err;
} expander;

/* x<i> for input k, numbering the inputs in order of first use. */
static const char *input_ref(expander *e, uint32_t k)
{
    for (uint32_t i = 0; i < e->out->ninputs; i++)
        if (e->out->inputs[i] == k)
            return ar_printf(e->arena, "x%u", i);
    FR_CHECK(e->out->ninputs < KN_CUDA_EW_MAX_INPUTS);
    e->out->inputs[e->out->ninputs] = k;
    return ar_printf(e->arena, "x%u", e->out->ninputs++);
}

/* One alternative of a {...}: its text, or NULL when it does not apply. */
static const char *alternative(expander *e, const char *alt, size_t len, bool last)
{
    char word[64];
    FR_CHECK(len < sizeof word);
    memcpy(word, alt, len);
    word[len] = 0;
    if (word[0] == '$') {
        uint32_t k = (uint32_t)strtoul(word + 1, NULL, 10);
        return present(e->n, k) ? input_ref(e, k) : NULL;
    }
    if (isalpha((unsigned char)word[0])) {
        if (!last && !ir_node_attr(e->n, word))
            return NULL;
        return number(e->arena, ir_get_float(e->n, word), &e->err);
    }
    return ar_printf(e->arena, "%s", word);
}

/* Expands a template for node n. */
static const char *expand(expander *e, const char *tpl)
{
    const char *s = "";
    for (const char *p = tpl; *p && !e->err;) {
        if (*p == '$') {
            char *after;
            uint32_t k = (uint32_t)strtoul(p + 1, &after, 10);
            p = after;
            if (!present(e->n, k)) {
                e->err = "a required input is missing";
                return NULL;
            }
            s = ar_printf(e->arena, "%s%s", s, input_ref(e, k));
        } else if (*p == '{') {
            const char *end = strchr(p, '}'), *chosen = NULL;
            FR_CHECK(end);
            for (const char *a = p + 1; a < end && !chosen && !e->err;) {
                const char *bar = memchr(a, '|', (size_t)(end - a));
                const char *stop = bar ? bar : end;
                chosen = alternative(e, a, (size_t)(stop - a), stop == end);
                a = stop + 1;
            }
            if (!chosen && !e->err)
                e->err = "no alternative of the template applies";
            if (e->err)
                return NULL;
            s = ar_printf(e->arena, "%s%s", s, chosen);
            p = end + 1;
        } else {
            s = ar_printf(e->arena, "%s%c", s, *p++);
        }
    }
    return e->err ? NULL : s;
}

bool kn_cuda_ew_expand(ar_arena *arena, const ir_node *n, kn_cuda_ew_expr *out, char *why_not)
{
    *out = (kn_cuda_ew_expr){0};
    const ew_row *row = row_of(n);
    if (!row) {
        snprintf(why_not, KN_WHY_SIZE, "%s has no CUDA elementwise form", ir_op_name(n->op));
        return false;
    }
    expander e = {arena, n, out, NULL};
    const char *text;
    if (row->flags & EW_VARIADIC) {
        if (n->ninputs > KN_CUDA_EW_MAX_INPUTS) {
            snprintf(why_not, KN_WHY_SIZE, "%u inputs; the CUDA kernel takes at most %d",
                     n->ninputs, KN_CUDA_EW_MAX_INPUTS);
            return false;
        }
        text = present(n, 0) ? input_ref(&e, 0) : NULL;
        for (uint32_t k = 1; text && k < n->ninputs; k++)
            text = present(n, k) ? ar_printf(arena, "%s(%s, %s)", row->expr, text,
                                             input_ref(&e, k))
                                 : NULL;
        if (text && (row->flags & EW_MEAN))
            text = ar_printf(arena, "div(%s, %u)", text, n->ninputs);
    } else {
        text = expand(&e, row->expr);
    }
    if (!text) {
        snprintf(why_not, KN_WHY_SIZE, "%s", e.err ? e.err : "a required input is missing");
        return false;
    }
    const char *err;
    size_t at;
    ir_ew_program prog;
    if (!ir_ew_parse(arena, text, out->ninputs, &prog, &err, &at)) {
        snprintf(why_not, KN_WHY_SIZE, "the expression `%s`: %s", text, err);
        return false;
    }
    out->expr = text;
    out->body = kn_cuda_ewchain_source(arena, &prog);
    out->per_channel = row->flags & EW_PER_CHANNEL;
    return true;
}
