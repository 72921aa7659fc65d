/* Nodes a round leaves unread (docs/matcher.md, "Unread nodes"): a fused node may drop an input
 * that only the matched nodes read (a guard operand such as a causal mask, or an input an action
 * replaced), and a forward may leave the chain it skipped unread. Once a round has committed, the
 * producers of the values the round's removed nodes read are removed too when no live node reads
 * any of their outputs and none is a graph output, transitively. Nodes that were unread before the
 * round are left alone (the fusions did not make them so), and so is a shared node still kept for
 * a reader. Constants nothing reads any more go with ir_compact, as they always did.
 *
 * Memory: this runs at the round's fullest (the old graph, the new nodes and every node's state),
 * so it allocates only the round's marks. The readers the use lists do not list are counted per
 * producer, in its state's `mark` (the plans' and walks' stamps are not read after the commit,
 * and the next round's states are made anew; a new node's state may be the slot of a member its
 * commit removed, rw_state_share, which is never counted: no live node reads a removed one), which
 * then also tells a node of the round's start this pass removed (SWEPT) from one the commit did;
 * and each removed node's producers are swept as soon as it is visited, so the work list holds one
 * chain at a time, not every removed node's inputs. */
#include "rewrite/internal.h"

#include "base/check.h"

#include <stdint.h>
#include <stdlib.h>

/* A state's `mark` once sweep removed its node, of the round's start (so with a slot of its own;
 * its count was 0, and no reader is left to give a read back). */
static const uint32_t SWEPT = UINT32_MAX;

/* Whether a live node the use lists name reads one of n's outputs. */
static bool read_by_listed(const ir_node *n)
{
    for (uint32_t k = 0; k < n->noutputs; k++)
        for (uint32_t u = 0; u < n->outputs[k]->nuses; u++)
            if (!n->outputs[k]->uses[u]->dead)
                return true;
    return false;
}

/* Whether n can go: it computes something, and nobody reads it (its count of the readers the use
 * lists do not list, and the lists where `uses`). */
static bool unread(rw_ctx *ctx, const ir_node *n, bool uses)
{
    if (n->dead || !n->noutputs)
        return false;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        FR_CHECK(n->outputs[k]->producer == n); /* the count is by producer */
        if (n->outputs[k]->is_output)
            return false;
    }
    return !rw_state(ctx, n)->mark && !(uses && read_by_listed(n));
}

/* Adds `delta` to the reader counts of the live nodes whose outputs n reads (a removed one's
 * slot may be a new node's). */
static void count_reads(rw_ctx *ctx, const ir_node *n, int delta)
{
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const ir_value *v = n->inputs[k];
        if (v && v->kind == IR_VALUE_NODE && !v->producer->dead) {
            rw_node_state *s = rw_state(ctx, v->producer);
            FR_CHECK(delta > 0 || (s->mark > 0 && s->mark != SWEPT));
            s->mark += (uint32_t)delta;
        }
    }
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

/* Removes the unread nodes the work list leads to. The states' counts are of the live readers the
 * use lists do not list (all of them when the use lists are not read: `uses` false); a removed node
 * counted there (new_from: its id from there on; every node when the use lists are not read) gives
 * its reads back. A node pushed twice, or already removed, is not unread the second time. */
static size_t sweep(rw_ctx *ctx, node_list *work, bool uses, size_t new_from)
{
    size_t removed = 0;
    while (work->len) {
        ir_node *n = work->items[--work->len];
        if (!unread(ctx, n, uses))
            continue;
        n->dead = true;
        if (n->id < new_from && ctx->g->nodes.items[n->id] == n) /* of the round's start */
            ctx->marks.removed++;
        mark_removed(ctx->g, n, &ctx->marks);
        rw_node_state *s = rw_state(ctx, n);
        if (s->pos < ctx->order.len && rw_order_at(ctx, s->pos) == n)
            rw_order_set(ctx, s->pos, NULL);
        removed++;
        if (!uses || n->id >= new_from)
            count_reads(ctx, n, -1);
        if (n->id < new_from)
            rw_state(ctx, n)->mark = SWEPT; /* not s: counting may have moved the states */
        push_producers(work, n);
    }
    return removed;
}

/* Counts in the states the readers sweep needs (see there). */
static void count_readers(rw_ctx *ctx, bool uses, size_t nodes0)
{
    ir_graph *g = ctx->g;
    for (size_t i = 0; i < ctx->st.len; i++)
        ctx->st.items[i].mark = 0;
    for (size_t i = uses ? nodes0 : 0; i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead)
            count_reads(ctx, g->nodes.items[i], 1);
}

size_t rw_remove_unread(rw_ctx *ctx, size_t nodes0)
{
    ir_graph *g = ctx->g;
    /* The use lists are the round's start's. Unless a forward gave old nodes other operands this
     * round (or validate_each renumbered the nodes), an old live node still reads what they say:
     * only the round's new nodes (from nodes0 on) are counted. Else every live reader is. */
    bool uses = !ctx->round_forwarded && !ctx->opts.validate_each;
    rw_round_marks *marks = &ctx->marks;
    FR_CHECK(!marks->node && !marks->value);
    marks->node = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *marks->node);
    marks->value = calloc(g->values.len ? g->values.len : 1, sizeof *marks->value);
    FR_CHECK(marks->node && marks->value);
    marks->removed = 0;
    count_readers(ctx, uses, nodes0);
    /* Which nodes go does not depend on the order they are visited in: a node stays unread once
     * it is, and the last of its readers to go pushes it. Nor do the marks validate_round reads,
     * the values' and the live nodes' (a reader is marked only while it lives, and renumber_live
     * carries only the live nodes' marks). */
    node_list work = {0};
    size_t removed = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        /* one of the round's start swept already was counted and marked then (a new one swept
         * already only pushes its producers again) */
        if (!n->dead || (i < nodes0 && rw_state(ctx, n)->mark == SWEPT))
            continue;
        if (i < nodes0) {
            marks->removed++;
            mark_removed(g, n, marks);
        }
        push_producers(&work, n);
        removed += sweep(ctx, &work, uses, nodes0);
    }
    vec_free(&work);
    return removed;
}
