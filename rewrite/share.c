/* Shared nodes (`shares @t`, docs/matcher.md "Shared nodes"): a matched interior node that other
 * nodes also read may still be absorbed by the fused node when the rule declares it shared (an op
 * cheap to keep: a Transpose, a scale Mul, a Cast, a DynamicQuantizeLinear). It is then kept for
 * those readers, untouched, and dies with the match that absorbs its last reader. The legality of
 * keeping one is decided here: which members stay (rw_keep_shared, from the interior check), that
 * what they read stays too, and that the kernel count does not rise (rw_check_kept). */
#include "rewrite/internal.h"

static const char *node_name(const ir_node *n)
{
    return n->noutputs ? n->outputs[0]->name : "?";
}

bool rw_is_shared(const rw_plan *p, const ir_node *n)
{
    const dsl_replacement *r = &p->rule->repl;
    for (uint32_t i = 0; r->kind == DSL_REPL_OP && i < r->nshares; i++)
        if (rw_capture_node(p, r->shares[i]) == n)
            return true;
    return false;
}

bool rw_is_kept(const rw_plan *p, const ir_node *n)
{
    for (size_t i = 0; i < p->kept.len; i++)
        if (p->kept.items[i] == n)
            return true;
    return false;
}

/* Whether a node outside the match will still read v. A reader fused earlier in the round counts
 * only when the node that replaced it reads v (a GEMM that absorbed the same Transpose reads its
 * source instead); a reader forwarded away handed v on to readers this use list does not name, so
 * it counts. */
static bool read_outside(rw_plan *p, const ir_value *v)
{
    if (v->is_output)
        return true;
    for (uint32_t u = 0; u < v->nuses; u++) {
        const ir_node *c = v->uses[u];
        if (rw_is_member(p, c))
            continue;
        if (!c->dead)
            return true;
        const rw_node_state *s = rw_state(p->ctx, c);
        if (!rw_is_replaced(s))
            return true;
        const ir_node *by = rw_replaced_by(p->ctx, c);
        for (uint32_t k = 0; k < by->ninputs; k++)
            if (by->inputs[k] == v)
                return true;
    }
    return false;
}

bool rw_keep_shared(rw_plan *p, ir_node *n)
{
    if (!rw_is_shared(p, n))
        return false;
    bool outside = false;
    for (uint32_t k = 0; k < n->noutputs && !outside; k++)
        outside = read_outside(p, n->outputs[k]);
    if (outside && !rw_is_kept(p, n))
        vec_push(&p->kept, n);
    return true;
}

/* A kept node must still compute what it computed: every value it reads comes from outside the
 * match or from another kept node. A shared member it reads is kept with it (even when nothing
 * else reads that one); any other member refuses (conservatively even one whose value the fused
 * node exports). */
bool rw_close_kept(rw_plan *p, char *why)
{
    for (size_t i = 0; i < p->kept.len; i++) {
        const ir_node *k = p->kept.items[i];
        for (uint32_t j = 0; j < k->ninputs; j++) {
            const ir_value *v = k->inputs[j];
            if (!v || v->kind != IR_VALUE_NODE || !rw_is_member(p, v->producer) ||
                rw_is_kept(p, v->producer))
                continue;
            if (!rw_is_shared(p, v->producer))
                return rw_why(why,
                              "fan-out: '%s' (%s) is kept for its readers outside the match, but "
                              "reads '%s', computed by a node of the match that is not shared",
                              node_name(k), ir_op_name(k->op), v->name);
            vec_push(&p->kept, v->producer);
        }
    }
    return true;
}

/* Kernels launched by the nodes of a list (views and Constant launch none). */
static size_t kernels_of(ir_node *const *nodes, size_t n, const rw_plan *p, bool skip_kept)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (ir_op_is_kernel(nodes[i]->op) && !(skip_kept && rw_is_kept(p, nodes[i])))
            count++;
    return count;
}

/* Keeping shared nodes must not make the graph launch more kernels: the fused node and its helpers
 * launch no more than the members that go (a GEMM absorbing a kept Transpose replaces one GEMM:
 * even; the last reader's fusion removes the Transpose). A helper cannot take the place of a kept
 * node, which keeps its own. */
bool rw_check_kept(rw_plan *p, char *why)
{
    if (!p->kept.len)
        return true;
    for (size_t i = 0; i < p->helpers.len; i++)
        if (rw_is_kept(p, p->helpers.items[i].replaces))
            return rw_why(why,
                          "fan-out: '%s' (%s) is kept for its readers outside the match; a helper "
                          "node cannot take its place",
                          node_name(p->helpers.items[i].replaces),
                          ir_op_name(p->helpers.items[i].replaces->op));
    size_t removed = kernels_of(p->members.items, p->members.len, p, true);
    size_t added = ir_op_is_kernel(p->rule->repl.op) ? 1 : 0;
    for (size_t i = 0; i < p->helpers.len; i++)
        added += ir_op_is_kernel(p->helpers.items[i].node->op);
    if (added > removed)
        return rw_why(why,
                      "fan-out: '%s' (%s) is kept for its readers outside the match, and the fused "
                      "node would launch %zu kernel%s where the nodes it removes launch %zu",
                      node_name(p->kept.items[0]), ir_op_name(p->kept.items[0]->op), added,
                      added == 1 ? "" : "s", removed);
    return true;
}

void rw_release_kept(rw_plan *p)
{
    if (!p->kept.len)
        return;
    size_t k = 0;
    for (size_t i = 0; i < p->members.len; i++)
        if (!rw_is_kept(p, p->members.items[i]))
            p->members.items[k++] = p->members.items[i];
    p->members.len = k;
    for (size_t i = 0; i < p->kept.len; i++)
        rw_state(p->ctx, p->kept.items[i])->mark = 0; /* stamps start at 1: no plan's */
}
