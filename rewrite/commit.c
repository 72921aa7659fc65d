/* Committing a checked plan: new constants and helper nodes enter the graph, the fused node takes
 * the members' place in the order, values keep their names, their consumers and their place among
 * the graph's outputs, and the members are marked removed. */
#include "rewrite/internal.h"

#include "base/check.h"
#include "ir/acts.h"

#include <string.h>

/* Whether list is the list of an attribute of a member of the plan (a node of the graph: its
 * arrays live in the graph's arena, which frees nothing before the graph, and no one writes into an
 * attribute's list in place). */
static bool members_list(const rw_plan *p, const void *list)
{
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *n = p->members.items[i];
        for (uint32_t k = 0; k < n->nattrs; k++)
            if ((n->attrs[k].kind == IR_ATTR_INTS && (const void *)n->attrs[k].v.ints == list) ||
                (n->attrs[k].kind == IR_ATTR_FLOATS && (const void *)n->attrs[k].v.floats == list))
                return true;
    }
    return false;
}

/* A copy of a plan attribute of an `op` node in the graph's arena (names and lists may live in the
 * rule set or the plan's scratch). A name the op's schema declares points at the catalog's string,
 * as the parser's do: validation and inference then find its schema by address. Shared, not
 * copied: a list a member's attribute holds (carried over: a FusedConvAct's kernel_shape), and a
 * string that names an activation (the table's string: `act`). */
static ir_attr copy_attr(const rw_plan *p, ir_op op, const ir_attr *a)
{
    ir_graph *g = p->g;
    ir_attr c = *a;
    const ir_attr_schema *s = ir_op_attr_schema(op, a->name);
    c.name = s ? s->name : ar_strdup(g->arena, a->name);
    c.src_offset = 0;
    if (a->kind == IR_ATTR_STRING) {
        ir_act act;
        c.v.s = ir_act_lookup(a->v.s, &act) ? ir_act_get(act)->name : ar_strdup(g->arena, a->v.s);
    } else if ((a->kind == IR_ATTR_INTS || a->kind == IR_ATTR_FLOATS) && a->count &&
               members_list(p, a->kind == IR_ATTR_INTS ? (const void *)a->v.ints
                                                       : (const void *)a->v.floats)) {
        /* c holds the member's list */
    } else if (a->kind == IR_ATTR_INTS || a->kind == IR_ATTR_FLOATS) {
        size_t size = a->kind == IR_ATTR_INTS ? sizeof *a->v.ints : sizeof *a->v.floats;
        void *items = ar_alloc_array(g->arena, a->count, size);
        if (a->count)
            memcpy(items, a->kind == IR_ATTR_INTS ? (const void *)a->v.ints : (const void *)a->v.floats,
                   a->count * size);
        if (a->kind == IR_ATTR_INTS)
            c.v.ints = items;
        else
            c.v.floats = items;
    }
    return c;
}

/* Whether the plan attribute a gives what c (a fused node's) holds: the same name, kind and value
 * (a list's elements, a string's text). */
static bool same_attr(const ir_attr *a, const ir_attr *c)
{
    if (a->kind != c->kind || a->count != c->count || strcmp(a->name, c->name) != 0)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT: return a->v.i == c->v.i;
    case IR_ATTR_FLOAT: return memcmp(&a->v.f, &c->v.f, sizeof a->v.f) == 0;
    case IR_ATTR_STRING: return strcmp(a->v.s, c->v.s) == 0;
    case IR_ATTR_INTS:
        return !a->count || memcmp(a->v.ints, c->v.ints, a->count * sizeof *a->v.ints) == 0;
    case IR_ATTR_FLOATS:
        return !a->count || memcmp(a->v.floats, c->v.floats, a->count * sizeof *a->v.floats) == 0;
    }
    return false;
}

/* The fused node's attributes: the last fused node's array when it is of the same op and every
 * attribute is the same (the bench's 83k FusedConvAct {kernel_shape=[1,1], act="Relu"}: 64 bytes
 * each), else copies in the graph's arena (copy_attr). Shared arrays are never written: no one sets
 * an attribute of a node once rewriting began (ir_set_attr runs at import and canon only). */
static void fused_attrs(rw_plan *p, ir_node *n, ir_op op)
{
    rw_ctx *ctx = p->ctx;
    n->nattrs = (uint32_t)p->attrs.len;
    bool same = ctx->last_attrs && ctx->last_op == op && ctx->last_nattrs == n->nattrs;
    for (uint32_t i = 0; same && i < n->nattrs; i++)
        same = same_attr(&p->attrs.items[i], &ctx->last_attrs[i]);
    if (same) {
        n->attrs = (ir_attr *)ctx->last_attrs;
        return;
    }
    n->attrs = ar_alloc_array(p->g->arena, n->nattrs, sizeof *n->attrs);
    for (uint32_t i = 0; i < n->nattrs; i++)
        n->attrs[i] = copy_attr(p, op, &p->attrs.items[i]);
    ctx->last_op = op;
    ctx->last_attrs = n->attrs;
    ctx->last_nattrs = n->nattrs;
}

char *rw_underscored(ar_arena *arena, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = ar_alloc(arena, la + lb + 2);
    memcpy(s, a, la);
    s[la] = '_';
    memcpy(s + la + 1, b, lb + 1);
    return s;
}

/* A name for a new constant: its stem ("w1_folded"), else the stem and the root's name
 * ("w_folded_r12": unique when one weight is folded in many places, found without probing). The
 * graph copies the name it is given: this one lives in the stem's place or the plan's scratch. */
static const char *const_name(rw_plan *p, const char *stem)
{
    if (!ir_find_value(p->g, stem))
        return stem;
    const char *root = p->outputs.items[0]->name;
    char *name = rw_underscored(p->ctx->scratch, stem, root);
    return ir_find_value(p->g, name) ? ir_fresh_name(p->g, name) : name;
}

/* A folded constant this small is copied into the graph's arena (a folded bias: a million-node
 * graph's 83k folds held 2.7 MB of 16-byte mallocs and a list of them) rather than adopted. */
enum { SMALL_CONST_BYTES = 256 };

static void copy_small(ir_graph *g, ir_value *v, rw_newconst *c)
{
    ir_const_set_data(g, v, c->data, c->nbytes);
    free(c->data);
}

/* The new constants join the graph (named after what they replace) and take their tentative
 * values' places among the inputs. */
static void add_consts(rw_plan *p)
{
    for (size_t i = 0; i < p->consts.len; i++) {
        rw_newconst *c = p->consts.items[i];
        const char *name = const_name(p, c->value->name);
        ir_value *v = ir_add_const(p->g, name, c->value->type, ir_const_new(p->g, IR_CONST_DATA));
        FR_CHECK(v != NULL);
        if (c->parts) /* assembled only when read, or copied to the output from the parts */
            ir_const_set_rows(p->g, v, c->rows, c->parts, c->nparts);
        else if (c->scaled.src) /* computed only when read, or as it is written */
            ir_const_set_scaled(p->g, v, c->scaled.src, c->scaled.factors, c->scaled.nfactors,
                                c->scaled.inner);
        else if (c->nbytes > SMALL_CONST_BYTES)
            ir_const_take_data(p->g, v, c->data, c->nbytes); /* not copied: the graph owns it */
        else
            copy_small(p->g, v, c);
        c->data = NULL;
        for (size_t k = 0; k < p->inputs.len; k++)
            if (p->inputs.items[k].v == c->value)
                p->inputs.items[k].v = v;
    }
    p->ctx->budget_left -= p->new_bytes;
}

/* Marks the members removed; their places in the order empty, unless the order was rebuilt. */
void rw_kill_members(rw_plan *p, ir_node *by, bool clear_order)
{
    int32_t rule = (int32_t)p->m->rule_index;
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *n = p->members.items[i];
        rw_node_state *s = rw_state(p->ctx, n);
        n->dead = true;
        s->claimed_by = rule;
        rw_set_replaced_by(p->ctx, n, by);
        if (clear_order)
            rw_order_set(p->ctx, s->pos, NULL);
    }
}

/* A topological place for a node replacing members that are not all ancestors of one root (several
 * roots, or exports): within the members' span, the nodes that depend on the members move after
 * it, the others before it. */
static void reorder_span(rw_plan *p, ir_node *fused)
{
    rw_ctx *ctx = p->ctx;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < p->members.len; i++) {
        uint32_t pos = rw_state(ctx, p->members.items[i])->pos;
        lo = pos < lo ? pos : lo;
        hi = pos > hi ? pos : hi;
    }
    uint32_t below = rw_new_stamp(ctx);
    VEC(ir_node *) before = {0}, after = {0};
    for (uint32_t i = lo; i <= hi; i++) {
        ir_node *x = rw_order_at(ctx, i);
        if (!x || rw_is_member(p, x))
            continue;
        bool depends = false;
        for (uint32_t k = 0; k < x->ninputs && !depends; k++) {
            const ir_value *v = x->inputs[k];
            /* the members' outputs are the fused node's by now */
            depends = v && v->kind == IR_VALUE_NODE &&
                      (v->producer == fused || rw_is_member(p, v->producer) ||
                       rw_state(ctx, v->producer)->mark == below);
        }
        if (depends) {
            rw_state(ctx, x)->mark = below;
            vec_push(&after, x);
        } else {
            vec_push(&before, x);
        }
    }
    uint32_t at = lo;
    for (size_t i = 0; i < before.len; i++, at++) {
        rw_order_set(ctx, at, before.items[i]);
        rw_state(ctx, before.items[i])->pos = at;
    }
    rw_order_set(ctx, at, fused);
    rw_state(ctx, fused)->pos = at++;
    for (size_t i = 0; i < after.len; i++, at++) {
        rw_order_set(ctx, at, after.items[i]);
        rw_state(ctx, after.items[i])->pos = at;
    }
    for (; at <= hi; at++)
        rw_order_set(ctx, at, NULL);
    vec_free(&before);
    vec_free(&after);
}

/* Helper nodes join the graph before the fused node, each in the place of the member it replaces
 * (which the fused node's single root follows). */
static void add_helpers(rw_plan *p)
{
    for (size_t i = 0; i < p->helpers.len; i++) {
        const ir_node *t = p->helpers.items[i].node;
        const char *name = const_name(p, t->outputs[0]->name);
        ir_node *n = ir_add_node(p->g, t->op, 1, &name, 1);
        FR_CHECK(n != NULL);
        ir_set_input(n, 0, t->inputs[0]);
        n->nattrs = t->nattrs;
        n->attrs = ar_alloc_array(p->g->arena, n->nattrs, sizeof *n->attrs);
        for (uint32_t k = 0; k < n->nattrs; k++)
            n->attrs[k] = copy_attr(p, t->op, &t->attrs[k]);
        ir_value_set_type(p->g, n->outputs[0], t->outputs[0]->type);
        n->src_offset = t->src_offset;
        n->src_len = t->src_len;
        for (size_t k = 0; k < p->inputs.len; k++)
            if (p->inputs.items[k].v == t->outputs[0])
                p->inputs.items[k].v = n->outputs[0];
        p->helpers.items[i].node = n; /* now the graph's */
        /* the fused node (of one output: the only kind whose helpers the order takes) shares
         * the root's slot */
        FR_CHECK(!p->ctx->st_shared ||
                 (p->outputs.len == 1 && p->helpers.items[i].replaces != p->roots.items[0]));
        rw_state_share(p, n, p->helpers.items[i].replaces);
        rw_state(p->ctx, n)->claimed_by = (int32_t)p->m->rule_index;
    }
}

/* Whether the tentative value t was one of the plan's new constants and v the constant that took
 * its place, of the same (interned) type. An inference that read t's data would have stopped at
 * its missing contents (ir_const_data's check), so one that gave a type read only t's type, which
 * v has: inferred on v, the op gives that type again. A constant has no shape value. */
static bool stood_for(const rw_plan *p, const ir_value *t, const ir_value *v)
{
    if (!t || !v || t->kind != IR_VALUE_CONST || t->konst || v->kind != IR_VALUE_CONST ||
        t->type != v->type)
        return false;
    for (size_t i = 0; i < p->consts.len; i++)
        if (p->consts.items[i]->value == t)
            return true;
    return false;
}

/* Keeps the type the plan inferred for the fused node n (ctx->planned), by its place among the
 * round's new nodes. */
static void keep_planned(rw_ctx *ctx, const ir_node *n, const ir_type *t)
{
    FR_CHECK(n->id >= ctx->nodes0 && n->id != RW_TENTATIVE_ID);
    size_t k = n->id - ctx->nodes0;
    while (ctx->planned.len <= k)
        vec_push(&ctx->planned, NULL);
    ctx->planned.items[k] = t;
}

ir_node *rw_commit(rw_plan *p)
{
    ir_graph *g = p->g;
    rw_release_kept(p);
    add_consts(p);
    add_helpers(p);
    ir_op op = p->rule->repl.op;
    ir_node *n = ir_add_node(g, op, (uint32_t)p->inputs.len, NULL, 0);
    for (uint32_t i = 0; i < n->ninputs; i++)
        ir_set_input(n, i, p->inputs.items[i].v);
    fused_attrs(p, n, op);
    n->noutputs = (uint16_t)p->outputs.len; /* a rule names at most the op's outputs (< 256) */
    n->outputs = ar_alloc_array(g->arena, n->noutputs, sizeof *n->outputs);
    for (uint32_t i = 0; i < n->noutputs; i++) {
        ir_value *v = p->outputs.items[i];
        v->producer = n;
        v->out_index = i;
        n->outputs[i] = v;
    }
    if (kn_fused_entry_get(op)) /* never full: a text leaves room (IR_MAX_TEXT_KERNELS) */
        FR_CHECK(ir_node_set_kernel(g, n, kn_kernel_name(op, p->ctx->opts.target)));
    n->src_offset = p->roots.items[0]->src_offset;
    n->src_len = p->roots.items[0]->src_len;

    /* the plan inferred the fused node on these very operands, or on a new constant's tentative
     * value of the same type (not on a helper output, which only stood for what was added since) */
    bool same_operands = n->noutputs == 1 && n->ninputs == p->tentative->ninputs;
    for (uint32_t i = 0; same_operands && i < n->ninputs; i++)
        same_operands = n->inputs[i] == p->tentative->inputs[i] ||
                        stood_for(p, p->tentative->inputs[i], n->inputs[i]);
    if (same_operands)
        keep_planned(p->ctx, n, p->tentative->outputs[0]->type);

    /* the root's slot: the fused node takes its place in the order (or, of several outputs, a
     * member's, each removed) */
    rw_state_share(p, n, p->outputs.len == 1 ? p->roots.items[0] : p->members.items[0]);
    rw_node_state *s = rw_state(p->ctx, n);
    s->claimed_by = (int32_t)p->m->rule_index;
    if (p->outputs.len == 1) {
        /* every member is an ancestor of the root: the root's place is a topological one */
        uint32_t pos = rw_state(p->ctx, p->roots.items[0])->pos;
        rw_kill_members(p, n, true);
        for (size_t i = 0; i < p->helpers.len; i++) {
            /* the helper reads what the member it replaces read */
            rw_node_state *replaced = rw_state(p->ctx, p->helpers.items[i].replaces);
            rw_set_replaced_by(p->ctx, p->helpers.items[i].replaces, p->helpers.items[i].node);
            rw_state(p->ctx, p->helpers.items[i].node)->pos = replaced->pos;
            rw_order_set(p->ctx, replaced->pos, p->helpers.items[i].node);
        }
        s = rw_state(p->ctx, n);
        s->pos = pos;
        rw_order_set(p->ctx, pos, n);
    } else {
        reorder_span(p, n); /* leaves the members out */
        rw_kill_members(p, n, false);
    }
    return n;
}
