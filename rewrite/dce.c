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

/* Whether a live node the use lists name reads one of n's outputs. */
static bool read_by_listed(const ir_node *n)
{
    for (uint32_t k = 0; k < n->noutputs; k++)
        for (uint32_t u = 0; u < n->outputs[k]->nuses; u++)
            if (!n->outputs[k]->uses[u]->dead)
                return true;
    return false;
}

typedef VEC(ir_node *) node_list;

/* Marks (by the round's start's ids) what removing n changed: its outputs still in the graph and
 * their live readers of the round's start (validate_round checks them: a forward gave them another
 * operand). Readers removed later and values ir_compact drops lose their marks there. */
static void mark_removed(const ir_graph *g, const ir_node *n, rw_round_marks *marks)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        const ir_value *v = n->outputs[k];
        if (v->id < g->values.len && g->values.items[v->id] == v)
            marks->value[v->id] = true;
        for (uint32_t u = 0; u < v->nuses; u++) {
            const ir_node *r = v->uses[u];
            if (!r->dead && r->id < g->nodes.len && g->nodes.items[r->id] == r)
                marks->node[r->id] = true;
        }
    }
}

static void push_producers(node_list *work, const ir_node *n)
{
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const ir_value *v = n->inputs[k];
        if (v && v->kind == IR_VALUE_NODE && !v->producer->dead)
            vec_push(work, v->producer);
    }
}

/* Removes the unread nodes the work list leads to; readers[v->id] counts the live readers the use
 * lists do not list (all of them when the use lists are not read: `uses` false). A removed node
 * counted among readers (new_from: its id from there on; all nodes when the use lists are not read)
 * gives its reads back. */
static size_t sweep(rw_ctx *ctx, node_list *work, uint32_t *readers, bool uses, size_t new_from)
{
    size_t removed = 0;
    while (work->len) {
        ir_node *n = work->items[--work->len];
        if (!unread(n, readers) || (uses && read_by_listed(n)))
            continue;
        n->dead = true;
        if (n->id < new_from && ctx->g->nodes.items[n->id] == n) /* of the round's start */
            ctx->marks.removed++;
        mark_removed(ctx->g, n, &ctx->marks);
        rw_node_state *s = rw_state(ctx, n);
        if (s->pos < ctx->order.len && ctx->order.items[s->pos] == n)
            ctx->order.items[s->pos] = NULL;
        removed++;
        for (uint32_t k = 0; (!uses || n->id >= new_from) && k < n->ninputs; k++)
            if (n->inputs[k])
                readers[n->inputs[k]->id]--;
        push_producers(work, n);
    }
    return removed;
}

size_t rw_remove_unread(rw_ctx *ctx, size_t nodes0)
{
    ir_graph *g = ctx->g;
    /* The use lists are the round's start's. Unless a forward gave old nodes other operands this
     * round (or validate_each renumbered the nodes), an old live node still reads what they say:
     * only the round's new nodes (from nodes0 on) are counted. Else every live reader is. */
    bool uses = !ctx->round_forwarded && !ctx->opts.validate_each;
    uint32_t *readers = calloc(g->values.len ? g->values.len : 1, sizeof *readers);
    FR_CHECK(readers != NULL);
    rw_round_marks *marks = &ctx->marks;
    FR_CHECK(!marks->node && !marks->value);
    marks->node = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *marks->node);
    marks->value = calloc(g->values.len ? g->values.len : 1, sizeof *marks->value);
    FR_CHECK(marks->node && marks->value);
    marks->removed = 0;
    node_list work = {0};
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        if (n->dead) {
            if (i < nodes0) {
                marks->removed++;
                mark_removed(g, n, marks);
            }
            push_producers(&work, n);
            continue;
        }
        for (uint32_t k = 0; (!uses || i >= nodes0) && k < n->ninputs; k++)
            if (n->inputs[k])
                readers[n->inputs[k]->id]++;
    }
    size_t removed = sweep(ctx, &work, readers, uses, nodes0);
    vec_free(&work);
    free(readers);
    return removed;
}
