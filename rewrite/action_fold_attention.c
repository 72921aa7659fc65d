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
 *   1 / d); with no such node, scale = 1 (Attention's default, 0, would mean 1/sqrt(D)).
 * Refused when no matched Transpose feeds a matched MatMul's second operand, or its permutation
 * does not end by swapping two dims. */
#include "rewrite/internal.h"

#include <stdlib.h>
#include <string.h>

/* The score MatMul: a member whose second operand a member Transpose computes. */
static ir_node *score_matmul(rw_plan *p, ir_node **transpose)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *mm = p->members.items[i];
        const ir_value *b = mm->op == IR_OP_MatMul ? mm->inputs[1] : NULL;
        if (b && b->kind == IR_VALUE_NODE && b->producer->op == IR_OP_Transpose &&
            rw_is_member(p, b->producer)) {
            *transpose = b->producer;
            return mm;
        }
    }
    return NULL;
}

/* The scalar constant the scores are scaled by: scale = s for a Mul, 1 / d for a Div. */
static bool find_scale(rw_plan *p, const ir_node *scores, double *scale, char *why)
{
    *scale = 1.0;
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
            *scale = n->op == IR_OP_Mul ? s : 1.0 / s;
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
    int rank = t->inputs[0]->type.rank;
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
