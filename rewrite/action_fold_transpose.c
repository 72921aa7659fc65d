/* fold_transpose: a Transpose of the match that feeds operand A or B of the matched MatMul, Gemm or
 * GemmEpilogue leaves the graph, and the fused GEMM's transA / transB flips instead. Only a
 * permutation that swaps the last two dims is a transpose of a matrix; an identity permutation
 * moves nothing and flips nothing; any other permutation is refused. A Cast of the match between
 * the Transpose and the GEMM (Transpose > Cast > MatMul) moves before it: the fused node reads a
 * helper Cast of the Transpose's source. */
#include "rewrite/internal.h"

/* 0: identity, 1: swaps the last two dims, -1: something else. */
static int classify(const ir_node *t)
{
    const ir_type *in = &t->inputs[0]->type;
    if (in->rank < 2)
        return in->rank >= 0 ? 0 : -1;
    const int64_t *perm;
    uint32_t n = ir_get_ints(t, "perm", &perm);
    int r = in->rank;
    bool identity = true, swap = true;
    for (int i = 0; i < r; i++) {
        /* no perm: ONNX reverses the dims */
        int64_t p = n ? (i < (int)n ? perm[i] : -1) : r - 1 - i;
        identity &= p == i;
        swap &= p == (i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2);
    }
    if (n && n != (uint32_t)r)
        return -1;
    return identity ? 0 : swap ? 1 : -1;
}

/* Transpose > Cast > GEMM: the Cast moves before the Transpose (a helper Cast of the source, in
 * the Cast's place), so that the GEMM reads the cast source with its flag flipped. */
static bool cast_first(rw_plan *p, ir_node *cast, ir_value *source, char *why)
{
    size_t uses = 0;
    for (size_t i = 0; i < p->inputs.len; i++)
        uses += p->inputs.items[i].v == source;
    if (uses != 1)
        return rw_why(why,
                      "fold_transpose: '%s' is not read once by the fused node, as the "
                      "source of the Cast",
                      source->name);
    const ir_attr *to = ir_node_attr(cast, "to");
    ir_value *h = rw_plan_helper(p, IR_OP_Cast, source, to, cast, why);
    return h && rw_plan_replace_input(p, source, h);
}

bool rw_action_fold_transpose(rw_plan *p, char *why)
{
    ir_op target = p->rule->repl.op;
    bool has_trans = ir_op_attr_schema(target, "transB") != NULL;
    bool folded = false;
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *g = p->members.items[i];
        if (!rw_is_gemm(g->op))
            continue;
        static const char *const names[2] = {"transA", "transB"};
        for (uint32_t slot = 0; slot < 2; slot++) {
            const ir_value *v = g->inputs[slot];
            ir_node *cast = NULL;
            if (v && v->kind == IR_VALUE_NODE && v->producer->op == IR_OP_Cast &&
                rw_is_member(p, v->producer)) {
                cast = v->producer;
                v = cast->inputs[0];
            }
            if (!v || v->kind != IR_VALUE_NODE || v->producer->op != IR_OP_Transpose ||
                !rw_is_member(p, v->producer))
                continue;
            int kind = classify(v->producer);
            if (kind < 0)
                return rw_why(why, "fold_transpose: '%s' permutes more than the last two dims",
                              v->name);
            folded = true;
            if (cast && !cast_first(p, cast, v->producer->inputs[0], why))
                return false;
            if (kind == 0)
                continue; /* an identity permutation is no transpose */
            if (!has_trans)
                return rw_why(why, "fold_transpose: %s has no %s; fuse into Gemm or GemmEpilogue",
                              ir_op_name(target), names[slot]);
            const ir_attr *now = rw_plan_attr(p, names[slot]);
            int64_t flipped = !(now && now->kind == IR_ATTR_INT && now->v.i);
            rw_plan_set_attr(p, &(ir_attr){.name = names[slot], .kind = IR_ATTR_INT, .v.i = flipped});
        }
    }
    return folded || rw_why(why, "fold_transpose: no Transpose of the match feeds a matched GEMM");
}
