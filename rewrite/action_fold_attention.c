/* fold_attention: scaled dot-product attention written as primitives
 *
 *     MatMul(Softmax(Add(Mul(MatMul(Q, Transpose(K')), s), mask)), V)
 *
 * becomes Attention(Q, K, V, mask) {scale}: the score computation folds into the fused op's inputs
 * and attribute.
 *
 * - K: exporters hand the score MatMul K^T, a Transpose of the projection ([0,2,3,1] of [B,S,H,D],
 *   or [0,1,3,2] of [B,H,S,D]). Attention takes K as [B,H,T,D]: the matched Transpose is
 *   re-emitted with its last two output dims swapped back, as a helper node in front of the fused
 *   node ([0,2,3,1] becomes [0,2,1,3]); when that is the identity, K is the Transpose's input.
 * - scale: the scores multiplied by a scalar constant s (or divided by one, d) give scale = s (or
 *   1 / d); with no such node, scale = 1 (Attention's default, 0, would mean 1/sqrt(D)). torch's
 *   exported SDPA splits the scale across both operands, Mul(Q, a) and Mul(K^T, b) (each
 *   sqrt(scale), for the f16 range): such Muls, members of the match, multiply into it (a * b).
 * Refused when no matched Transpose feeds a matched MatMul's second operand, or its permutation
 * does not end by swapping two dims. */
#include "rewrite/internal.h"

#include <stdlib.h>
#include <string.h>

static bool is_plan_input(const rw_plan *p, const ir_value *v)
{
    for (size_t i = 0; i < p->inputs.len; i++)
        if (p->inputs.items[i].v == v)
            return true;
    return false;
}

/* The member node computing v, or NULL. */
static ir_node *member_producer(rw_plan *p, const ir_value *v)
{
    return v && v->kind == IR_VALUE_NODE && rw_is_member(p, v->producer) ? v->producer : NULL;
}

/* When a member Mul computes v as w * c, c a constant that is not an input of the fused node:
 * the operand index of c (w is the other), else -1. A Mul of a value by itself is no scaling. */
static int operand_scale(rw_plan *p, const ir_value *v)
{
    const ir_node *m = member_producer(p, v);
    if (!m || m->op != IR_OP_Mul || m->ninputs != 2 || m->inputs[0] == m->inputs[1])
        return -1;
    for (int k = 1; k >= 0; k--) {
        const ir_value *c = m->inputs[k];
        if (c && c->kind == IR_VALUE_CONST && !is_plan_input(p, c))
            return k;
    }
    return -1;
}

/* The score MatMul: a member whose second operand a member Transpose computes, directly or
 * through a member Mul by a constant (the split scale). */
static ir_node *score_matmul(rw_plan *p, ir_node **transpose)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *mm = p->members.items[i];
        if (mm->op != IR_OP_MatMul)
            continue;
        const ir_value *b = mm->inputs[1];
        int k = operand_scale(p, b);
        if (k >= 0)
            b = b->producer->inputs[1 - k];
        ir_node *t = member_producer(p, b);
        if (t && t->op == IR_OP_Transpose) {
            *transpose = t;
            return mm;
        }
    }
    return NULL;
}

/* Multiplies *scale by the constant of a split-scale Mul computing v (operand of the scores). */
static bool operand_scale_fold(rw_plan *p, const ir_value *v, double *scale, char *why)
{
    int k = operand_scale(p, v);
    if (k < 0)
        return true;
    ir_value *c = v->producer->inputs[k];
    int64_t count;
    double *x = rw_const_read(p, c, &count, why);
    if (!x)
        return false;
    double s = count == 1 ? x[0] : 0;
    free(x);
    if (!(s > 0))
        return rw_why(why,
                      "fold_attention: an operand of the scores is scaled by '%s', which is "
                      "not one positive value",
                      c->name);
    *scale *= s;
    return true;
}

/* The scalar constant the scores are scaled by: scale = s for a Mul, 1 / d for a Div. */
static bool find_scale(rw_plan *p, const ir_node *scores, double *scale, char *why)
{
    *scale = 1.0;
    if (!operand_scale_fold(p, scores->inputs[0], scale, why) ||
        !operand_scale_fold(p, scores->inputs[1], scale, why))
        return false;
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *n = p->members.items[i];
        if ((n->op != IR_OP_Mul && n->op != IR_OP_Div) || n->ninputs != 2)
            continue;
        for (uint32_t k = 0; k < 2; k++) {
            ir_value *c = n->inputs[1 - k];
            if (n->inputs[k] != scores->outputs[0] || (n->op == IR_OP_Div && k != 0))
                continue;
            int64_t count;
            double *x = rw_const_read(p, c, &count, why);
            if (!x)
                return false;
            double s = count == 1 ? x[0] : 0;
            free(x);
            if (!(s > 0))
                return rw_why(why, "fold_attention: the scores are scaled by '%s', which is not "
                                   "one positive value",
                              c->name);
            *scale *= n->op == IR_OP_Mul ? s : 1.0 / s;
            rw_plan_remove_input(p, c);
            return true;
        }
    }
    return true;
}

bool rw_action_fold_attention(rw_plan *p, char *why)
{
    ir_node *t = NULL, *scores = score_matmul(p, &t);
    if (!scores)
        return rw_why(why, "fold_attention: no Transpose of the match gives a MatMul its K^T");
    const int64_t *perm;
    uint32_t n = ir_get_ints(t, "perm", &perm);
    int rank = t->inputs[0]->type->rank;
    if (n < 2 || (int)n != rank)
        return rw_why(why, "fold_attention: '%s' has no permutation of its %d dims",
                      t->outputs[0]->name, rank);
    /* K's permutation: the same with its last two entries swapped back */
    int64_t *kperm = ar_alloc_array(p->ctx->scratch, n, sizeof *kperm);
    memcpy(kperm, perm, n * sizeof *kperm);
    kperm[n - 2] = perm[n - 1];
    kperm[n - 1] = perm[n - 2];
    bool identity = true;
    for (uint32_t i = 0; i < n; i++)
        identity &= kperm[i] == (int64_t)i;
    ir_value *source = t->inputs[0], *k = source;
    if (!identity) {
        ir_attr a = {.name = "perm", .kind = IR_ATTR_INTS, .count = n, .v.ints = kperm};
        if (!(k = rw_plan_helper(p, IR_OP_Transpose, source, &a, t, why)))
            return false;
    }
    if (!rw_plan_replace_input(p, source, k))
        return rw_why(why, "fold_attention: '%s' (K) is not an input of the fused node", source->name);
    double scale;
    if (!find_scale(p, scores, &scale, why))
        return false;
    rw_plan_set_attr(p, &(ir_attr){.name = "scale", .kind = IR_ATTR_FLOAT, .v.f = scale});
    return true;
}
