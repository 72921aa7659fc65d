/* Forwarding replacements (`=> @x`): the root's readers read the capture instead, checked (same
 * type, not computed inside the match, not a graph output) and committed. */
#include "rewrite/internal.h"

ir_value *rw_forwarded(rw_ctx *ctx, ir_value *v)
{
    while (v && v->kind == IR_VALUE_NODE && v->producer->dead &&
           rw_is_forwarded(rw_state(ctx, v->producer)))
        v = rw_forwarded_to(ctx, v->producer);
    return v;
}

/* The value the root's readers will read: the forwarded capture, or, when a forward earlier in the
 * round removed its node (Identity(Identity(x)) with the inner one first), where that one went. */
static ir_value *forward_target(const rw_plan *p)
{
    return rw_forwarded(p->ctx, rw_capture_value(p, p->rule->repl.forward));
}

bool rw_plan_forward(rw_plan *p, char *why)
{
    ir_value *root = p->outputs.items[0], *x = forward_target(p);
    if (!x)
        return rw_why(why, "replacement: the forwarded capture is not bound in this match");
    if (x->kind == IR_VALUE_NODE && rw_is_member(p, x->producer))
        return rw_why(why, "replacement: '%s' is computed inside the match and would be removed",
                      x->name);
    if (root->is_output)
        return rw_why(why,
                      "graph output: '%s' is an output of the graph; removing its node would "
                      "rename it",
                      root->name);
    if (!rw_same_type(root->type, x->type)) {
        char a[160], b[160];
        return rw_why(why, "shape: '%s' is %s but '%s' is %s", x->name,
                      ir_type_format(p->g, x->type, a, sizeof a), root->name,
                      ir_type_format(p->g, root->type, b, sizeof b));
    }
    return true;
}

/* Makes every live reader of `from` among the consumers of `via` read `to`. Use lists are those of
 * the start of the round: a consumer fused earlier in the round reads through the node that
 * replaced it; a consumer forwarded away earlier in the round (a chain of no-ops: Identity of
 * Identity, handled outermost first) handed `from` on to its own consumers, so they are visited in
 * its place. The graph is acyclic, so the walk ends. */
static void redirect_readers(rw_ctx *ctx, const ir_value *via, ir_value *from, ir_value *to)
{
    for (uint32_t u = 0; u < via->nuses; u++) {
        ir_node *c = via->uses[u];
        while (c->dead && rw_is_replaced(rw_state(ctx, c)))
            c = rw_replaced_by(ctx, c);
        if (c->dead) {
            for (uint32_t k = 0; k < c->noutputs; k++)
                redirect_readers(ctx, c->outputs[k], from, to);
            continue;
        }
        for (uint32_t k = 0; k < c->ninputs; k++)
            if (c->inputs[k] == from)
                c->inputs[k] = to;
    }
}

void rw_commit_forward(rw_plan *p)
{
    ir_value *root = p->outputs.items[0], *x = forward_target(p);
    redirect_readers(p->ctx, root, root, x);
    p->ctx->round_forwarded = true;
    rw_kill_members(p, NULL, true);
    rw_set_forwarded_to(p->ctx, root->producer, x);
}
