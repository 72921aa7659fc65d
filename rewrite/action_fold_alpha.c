/* fold_alpha: a Mul or Div of the match by a constant scalar s, feeding input A or B of the
 * matched MatMul, Gemm or GemmEpilogue or reading its output, leaves the graph, and the fused
 * GEMM's alpha becomes alpha * s (alpha / s for a Div by s):
 *
 *     (x s) @ w = x @ (w s) = (x @ w) s = s (x @ w)     (ONNX Runtime's MatMulScaleFusion)
 *
 * s must be a float constant of one element whose broadcast keeps the scaled value's shape (a
 * [1, 1, 1] scale of a matrix makes it 3-D: not a scale), and only the divisor of a Div is a
 * scale (s / x is no scale of x). A scale of the output needs a GEMM whose result is alpha * A @ B
 * alone: no bias, residual or activation (act(z) s is not act(z s)). Integer products are not
 * scaled by a float alpha: the target's inference refuses them. */
#include "rewrite/internal.h"

#include "ir/infer_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The member GEMM that reads v as input A or B, or NULL. */
static const ir_node *gemm_reading(const rw_plan *p, const ir_value *v)
{
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *g = p->members.items[i];
        if (rw_is_gemm(g->op) && (g->inputs[0] == v || (g->ninputs > 1 && g->inputs[1] == v)))
            return g;
    }
    return NULL;
}

static bool has_input(const rw_plan *p, const ir_value *v)
{
    for (size_t i = 0; i < p->inputs.len; i++)
        if (p->inputs.items[i].v == v)
            return true;
    return false;
}

/* A GEMM whose output is alpha * A @ B and nothing more. */
static bool plain_product(const ir_node *g)
{
    if (g->op == IR_OP_MatMul)
        return true;
    for (uint32_t i = 2; i < g->ninputs; i++)
        if (g->inputs[i])
            return false;
    return g->op == IR_OP_Gemm || strcmp(ir_get_string(g, "act"), "Identity") == 0;
}

/* Whether v can be the scale: a float constant of one element. */
static bool scalar_const(const ir_value *v)
{
    int64_t n;
    return v && v->kind == IR_VALUE_CONST && ir_type_numel(v->type, &n) && n == 1 &&
           ir_dtype_is_float(v->type->dtype);
}

/* The factor of one Mul or Div member s_node into alpha; false with why when it is not a scale
 * of a GEMM of the match (*applies false when it is no scale next to a GEMM at all). */
static bool factor_of(rw_plan *p, const ir_node *s_node, double *factor, bool *applies, char *why)
{
    *applies = false;
    const ir_value *out = s_node->outputs[0];
    bool feeds = gemm_reading(p, out) != NULL;
    const ir_node *below = NULL; /* a member GEMM whose output s_node scales */
    for (uint32_t k = 0; k < 2; k++) {
        const ir_value *v = s_node->inputs[k];
        if (v->kind == IR_VALUE_NODE && rw_is_member(p, v->producer) && rw_is_gemm(v->producer->op))
            below = v->producer;
    }
    if (!feeds && !below)
        return true;
    *applies = true;
    /* the scale: a Div's divisor; of a Mul, the operand that is not the scaled value */
    int si = -1;
    if (s_node->op == IR_OP_Div) {
        si = 1;
    } else if (below) {
        si = s_node->inputs[0]->kind == IR_VALUE_NODE && s_node->inputs[0]->producer == below;
    } else {
        bool c0 = scalar_const(s_node->inputs[0]) && !has_input(p, s_node->inputs[0]);
        bool c1 = scalar_const(s_node->inputs[1]) && !has_input(p, s_node->inputs[1]);
        si = c1 ? 1 : c0 ? 0 : 1;
    }
    ir_value *s = s_node->inputs[si];
    const ir_value *x = s_node->inputs[1 - si];
    if (!scalar_const(s))
        return rw_why(why, "fold_alpha: '%s' is not a float constant of one element", s->name);
    if (!rw_same_type(out->type, x->type))
        return rw_why(why, "fold_alpha: '%s' broadcasts '%s' to another shape (%s)", s->name,
                      x->name, ir_shape_str(p->g, out->type));
    if (below && !plain_product(below))
        return rw_why(why,
                      "fold_alpha: '%s' has a bias, residual or activation, which a scale of "
                      "its output does not distribute over",
                      below->outputs[0]->name);
    int64_t n;
    double *v = rw_const_read(p, s, &n, why);
    if (!v)
        return false;
    double f = v[0];
    free(v);
    if (s_node->op == IR_OP_Div && f == 0)
        return rw_why(why, "fold_alpha: '%s' divides by zero", s->name);
    *factor = s_node->op == IR_OP_Div ? 1.0 / f : f;
    if (!isfinite(*factor))
        return rw_why(why, "fold_alpha: the factor of '%s' is not finite", s->name);
    rw_plan_remove_input(p, s);
    return true;
}

bool rw_action_fold_alpha(rw_plan *p, char *why)
{
    const ir_attr *now = rw_plan_attr(p, "alpha");
    double alpha = now && now->kind == IR_ATTR_FLOAT ? now->v.f : 1.0;
    bool folded = false;
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *m = p->members.items[i];
        if (m->op != IR_OP_Mul && m->op != IR_OP_Div)
            continue;
        double f = 1.0;
        bool applies;
        if (!factor_of(p, m, &f, &applies, why))
            return false;
        folded |= applies;
        alpha *= f;
    }
    if (!folded)
        return rw_why(why, "fold_alpha: no Mul or Div of the match scales a matched GEMM");
    rw_plan_set_attr(p, &(ir_attr){.name = "alpha", .kind = IR_ATTR_FLOAT, .v.f = alpha});
    return true;
}
