/* Nodes a round leaves unread (docs/matcher.md, "Unread nodes"): a fused node may drop an input
 * that only the matched nodes read (a guard operand such as a causal mask, or an input an action
 * replaced), and a forward may leave the chain it skipped unread. Once a round has committed, the
 * producers of the values the round's removed nodes read are removed too when no live node reads
 * any of their outputs and none is a graph output, transitively. Nodes that were unread before the
 * round are left alone (the fusions did not make them so), and so is a shared node still kept for
 * a reader. Constants nothing reads any more go with ir_compact, as they always did. */
#include "rewrite/internal.h"

#include "base/check.h"

#include <stdlib.h>

/* Whether n can go: it computes something, and nobody reads it. */
static bool unread(const ir_node *n, const uint32_t *readers)
{
    if (n->dead || !n->noutputs)
        return false;
    for (uint32_t k = 0; k < n->noutputs; k++)
        if (n->outputs[k]->is_output || readers[n->outputs[k]->id])
            return false;
    return true;
}

typedef VEC(ir_node *) node_list;

static void push_producers(node_list *work, const ir_node *n)
{
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const ir_value *v = n->inputs[k];
        if (v && v->kind == IR_VALUE_NODE && !v->producer->dead)
            vec_push(work, v->producer);
    }
}

size_t rw_remove_unread(rw_ctx *ctx)
{
    ir_graph *g = ctx->g;
    /* the use lists are the round's start's: count the live readers again (new nodes included) */
    uint32_t *readers = calloc(g->values.len ? g->values.len : 1, sizeof *readers);
    FR_CHECK(readers != NULL);
    node_list work = {0};
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        if (n->dead) {
            push_producers(&work, n);
            continue;
        }
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k])
                readers[n->inputs[k]->id]++;
    }
    size_t removed = 0;
    while (work.len) {
        ir_node *n = work.items[--work.len];
        if (!unread(n, readers))
            continue;
        n->dead = true;
        rw_node_state *s = rw_state(ctx, n);
        if (s->pos < ctx->order.len && ctx->order.items[s->pos] == n)
            ctx->order.items[s->pos] = NULL;
        removed++;
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k])
                readers[n->inputs[k]->id]--;
        push_producers(&work, n);
    }
    vec_free(&work);
    free(readers);
    return removed;
}
