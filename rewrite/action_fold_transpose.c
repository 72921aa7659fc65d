/* fold_transpose: a Transpose of the match that feeds operand A or B of the matched MatMul, Gemm or
 * GemmEpilogue leaves the graph, and the fused GEMM's flags say what it did instead. The
 * permutations a GEMM reads in place are ONNX Runtime's (MatmulTransposeFusion): one that swaps the
 * last two dims flips transA / transB; one that moves the first dim behind the batch dims ([d0,
 * b..., d] -> [b..., d0, d], rank 3 or more) sets transBatchA / transBatchB, which needs a target
 * with those flags (GemmEpilogue), A and B of one rank, and a GEMM that does not already move that
 * operand's batch dims; the two together do both. An identity permutation moves nothing and flips
 * nothing; any other permutation is refused. A Cast of the match between the Transpose and the
 * GEMM (Transpose > Cast > MatMul) moves before it: the fused node reads a helper Cast of the
 * Transpose's source. */
#include "rewrite/internal.h"

enum { SWAP = 1, BATCH = 2 }; /* what a Transpose does, as GEMM flags */

/* The permutation of rank r that BATCH and SWAP in `kind` spell. */
static void spelled(int kind, int r, int64_t *perm)
{
    for (int i = 0; i < r; i++)
        perm[i] = i;
    if (kind & BATCH) { /* [d0, b..., d] -> [b..., d0, d] */
        for (int i = 0; i < r - 2; i++)
            perm[i] = i + 1;
        perm[r - 2] = 0;
    }
    if (kind & SWAP) {
        int64_t t = perm[r - 1];
        perm[r - 1] = perm[r - 2];
        perm[r - 2] = t;
    }
}

/* 0: identity, else SWAP and / or BATCH; -1: something else. */
static int classify(const ir_node *t)
{
    const ir_type *in = t->inputs[0]->type;
    if (in->rank < 2)
        return in->rank >= 0 ? 0 : -1;
    const int64_t *perm;
    uint32_t n = ir_get_ints(t, "perm", &perm);
    int r = in->rank;
    if (n && n != (uint32_t)r)
        return -1;
    for (int kind = 0; kind < (r >= 3 ? 4 : 2); kind++) {
        int64_t want[IR_MAX_RANK];
        spelled(kind, r, want);
        bool same = true;
        for (int i = 0; i < r; i++) /* no perm: ONNX reverses the dims */
            same &= (n ? perm[i] : r - 1 - i) == want[i];
        if (same)
            return kind;
    }
    return -1;
}

static bool attr_set(const rw_plan *p, const char *name)
{
    const ir_attr *a = rw_plan_attr(p, name);
    return a && a->kind == IR_ATTR_INT && a->v.i;
}

/* The transBatch flag of `slot` set on the fused node, where the target and the GEMM allow it. */
static bool set_trans_batch(rw_plan *p, const ir_node *g, const char *name, char *why)
{
    ir_op target = p->rule->repl.op;
    if (!ir_op_attr_schema(target, name))
        return rw_why(why, "fold_transpose: %s has no %s; fuse into GemmEpilogue",
                      ir_op_name(target), name);
    const ir_type *ta = g->inputs[0]->type, *tb = g->inputs[1]->type;
    if (ta->rank != tb->rank)
        return rw_why(why,
                      "fold_transpose: %s needs A and B of one rank (ONNX Runtime's "
                      "FusedMatMul), not %d and %d",
                      name, ta->rank, tb->rank);
    rw_plan_set_attr(p, &(ir_attr){.name = name, .kind = IR_ATTR_INT, .v.i = 1});
    return true;
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
        static const char *const batch_names[2] = {"transBatchA", "transBatchB"};
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
                return rw_why(why,
                              "fold_transpose: '%s' permutes more than the last two dims and "
                              "the first behind the batch dims",
                              v->name);
            folded = true;
            if (cast && !cast_first(p, cast, v->producer->inputs[0], why))
                return false;
            if (kind == 0)
                continue; /* an identity permutation is no transpose */
            if (attr_set(p, batch_names[slot])) /* the Transpose would come before the move */
                return rw_why(why,
                              "fold_transpose: the GEMM already moves operand %s's batch dims; "
                              "'%s' before that is no flag of it",
                              slot ? "B" : "A", v->name);
            if ((kind & BATCH) && !set_trans_batch(p, g, batch_names[slot], why))
                return false;
            if (!(kind & SWAP))
                continue;
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
