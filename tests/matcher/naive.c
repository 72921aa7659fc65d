/* The reference matcher (see naive.h). Obligations "pattern node P stands for value v" are kept on
 * a stack and discharged depth first, operand 0 first, so choices are made in pattern pre-order;
 * every alternative is tried and every complete binding kept. A further root of a horizontal
 * pattern may be any node of the graph; the join's consumer limit is checked on the result. */
#include "tests/matcher/naive.h"

#include "base/check.h"
#include "matcher/matcher.h"

#include <stdlib.h>
#include <string.h>

enum { NV_MAX_KEY = 512 };

typedef struct {
    const dsl_pattern *p;
    ir_value *v;
} obligation;

typedef struct {
    uint32_t *key;
    uint32_t nkey;
    ir_value **values;
    uint8_t *present;
} found;

typedef struct {
    ir_graph *g;
    const dsl_rule *r;
    ar_arena *arena;
    ir_value **val;
    uint8_t *bound, *present, *swapped;
    uint32_t *bound_root;  /* the root whose walk bound the node */
    ir_node **root_node;
    uint32_t cur_root;
    uint32_t key[NV_MAX_KEY];
    uint32_t nkey;
    VEC(obligation) todo;  /* the top is discharged next */
    VEC(found) results;
} naive;

static void step(naive *s);

static void push_key(naive *s, uint32_t digit)
{
    FR_CHECK(s->nkey < NV_MAX_KEY);
    s->key[s->nkey++] = digit;
}

static bool preds_hold(const dsl_pattern *p, const ir_value *v)
{
    const dsl_value_preds *pr = &p->preds;
    return (!pr->is_const || v->kind == IR_VALUE_CONST) &&
           (pr->dtype == IR_DTYPE_UNKNOWN || v->type->dtype == pr->dtype) &&
           (pr->layout == IR_LAYOUT_NONE || v->type->layout == pr->layout) &&
           (pr->rank < 0 || v->type->rank == pr->rank);
}

static void bind(naive *s, const dsl_pattern *p, ir_value *v, bool present, bool swapped)
{
    s->bound[p->id] = 1;
    s->val[p->id] = v;
    s->present[p->id] = present;
    s->swapped[p->id] = swapped;
    s->bound_root[p->id] = s->cur_root;
}

static void unbind(naive *s, const dsl_pattern *p)
{
    s->bound[p->id] = s->present[p->id] = s->swapped[p->id] = 0;
    s->val[p->id] = NULL;
}

/* P present on v with the given operand order. */
static void try_present(naive *s, const dsl_pattern *p, ir_value *v, bool swapped)
{
    ir_node *node = v->producer;
    uint32_t need = 0;
    for (uint32_t i = 0; i < p->noperands; i++) {
        uint32_t slot = swapped && i < 2 ? 1 - i : i;
        if (slot + 1 > need)
            need = slot + 1;
    }
    bool arity = p->open ? node->ninputs >= need : node->ninputs == p->noperands && need <= p->noperands;
    if (!arity || !preds_hold(p, v))
        return;
    for (uint32_t a = 0; a < p->nattrs; a++)
        if (!mt_attr_equal(node, &p->attrs[a]))
            return;
    bind(s, p, v, true, swapped);
    size_t depth = s->todo.len;
    for (uint32_t i = p->noperands; i-- > 0;) {
        uint32_t slot = swapped && i < 2 ? 1 - i : i;
        vec_push(&s->todo, ((obligation){p->operands[i], node->inputs[slot]}));
    }
    step(s);
    s->todo.len = depth;
    unbind(s, p);
}

static void try_absent(naive *s, const dsl_pattern *p, ir_value *v)
{
    if (!preds_hold(p, v))
        return;
    bind(s, p, v, false, false);
    size_t depth = s->todo.len;
    if (p->noperands)
        vec_push(&s->todo, ((obligation){p->operands[0], v}));
    step(s);
    s->todo.len = depth;
    unbind(s, p);
}

static bool op_in(const dsl_pattern *p, ir_op op)
{
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i] == op)
            return true;
    return false;
}

static void discharge(naive *s, const dsl_pattern *p, ir_value *v)
{
    if (!v)
        return; /* an operand written where the input is omitted */
    if (s->bound[p->id]) {
        if (s->val[p->id] == v)
            step(s);
        return;
    }
    if (p->kind == DSL_PAT_ANY) {
        if (!preds_hold(p, v))
            return;
        bind(s, p, v, false, false);
        step(s);
        unbind(s, p);
        return;
    }
    for (unsigned absent = 0; absent <= (p->optional ? 1u : 0u); absent++) {
        if (p->optional)
            push_key(s, absent);
        if (absent) {
            try_absent(s, p, v);
        } else if (v->kind == IR_VALUE_NODE && v->out_index == 0 && op_in(p, v->producer->op)) {
            bool choice = p->commutative && p->noperands >= 1;
            for (unsigned swapped = 0; swapped <= (choice ? 1u : 0u); swapped++) {
                if (choice)
                    push_key(s, swapped);
                try_present(s, p, v, swapped);
                if (choice)
                    s->nkey--;
            }
        }
        if (p->optional)
            s->nkey--;
    }
}

/* ---- the join's consumer limit ---- */

static const dsl_pattern *effective(const naive *s, const dsl_pattern *p)
{
    while (p && p->kind == DSL_PAT_OP && s->bound[p->id] && !s->present[p->id])
        p = p->noperands ? p->operands[0] : NULL;
    return p;
}

static bool bound_before(const naive *s, const dsl_pattern *p, uint32_t k)
{
    return p && s->bound[p->id] && s->bound_root[p->id] < k;
}

/* The pre-order search for the first node earlier roots bound; path gets the op nodes on the way. */
static const dsl_pattern *shared_below(const naive *s, const dsl_pattern *p, uint32_t k,
                                       const dsl_pattern **path, uint32_t *len)
{
    path[(*len)++] = p;
    for (uint32_t i = 0; i < p->noperands; i++) {
        const dsl_pattern *q = p->operands[i], *e = effective(s, q);
        if (bound_before(s, q, k) || bound_before(s, e, k))
            return e ? e : q;
        if (e && e->kind == DSL_PAT_OP && *len <= DSL_MAX_DEPTH) {
            const dsl_pattern *found_node = shared_below(s, e, k, path, len);
            if (found_node)
                return found_node;
        }
    }
    (*len)--;
    return NULL;
}

static uint32_t use_index(const ir_value *v, const ir_node *n)
{
    for (uint32_t i = 0; i < v->nuses; i++)
        if (v->uses[i] == n)
            return i;
    return UINT32_MAX;
}

/* Each consumer on the way from the shared value up to root k is among the first MT_JOIN_LIMIT. */
static bool joins_within_limit(const naive *s)
{
    for (uint32_t k = 1; k < s->r->nroots; k++) {
        const dsl_pattern *path[DSL_MAX_DEPTH + 1];
        uint32_t len = 0;
        const dsl_pattern *shared = shared_below(s, effective(s, s->r->roots[k]), k, path, &len);
        if (!shared)
            return false; /* nothing joins this root: the rule cannot match this way */
        const ir_value *below = s->val[shared->id];
        for (uint32_t t = len; t-- > 0;) {
            const ir_node *consumer = s->val[path[t]->id]->producer;
            if (use_index(below, consumer) >= MT_JOIN_LIMIT)
                return false;
            below = s->val[path[t]->id];
        }
    }
    return true;
}

/* ---- roots and results ---- */

/* Every root stands for an op node of its own (an optional root absent in favour of a leaf, or
 * a root an earlier root already bound, can never match). */
static bool roots_are_ops(const naive *s)
{
    for (uint32_t k = 0; k < s->r->nroots; k++) {
        const dsl_pattern *e = effective(s, s->r->roots[k]);
        if (!e || e->kind != DSL_PAT_OP || (k > 0 && s->bound_root[s->r->roots[k]->id] < k))
            return false;
    }
    return true;
}

static void complete(naive *s)
{
    const dsl_rule *r = s->r;
    if (!roots_are_ops(s) || !joins_within_limit(s))
        return;
    ir_node **nodes = calloc(r->nnodes ? r->nnodes : 1, sizeof *nodes);
    FR_CHECK(nodes != NULL);
    for (uint32_t i = 0; i < r->nnodes; i++)
        nodes[i] = s->present[i] ? s->val[i]->producer : NULL;
    bool holds = mt_guard_holds(r, s->g, s->val, nodes);
    free(nodes);
    if (!holds)
        return;
    found f = {.nkey = s->nkey};
    f.key = ar_alloc_array(s->arena, s->nkey, sizeof *f.key);
    if (s->nkey)
        memcpy(f.key, s->key, s->nkey * sizeof *f.key);
    f.values = ar_alloc_array(s->arena, r->nnodes, sizeof *f.values);
    f.present = ar_alloc_array(s->arena, r->nnodes, 1);
    memcpy(f.values, s->val, r->nnodes * sizeof *f.values);
    memcpy(f.present, s->present, r->nnodes);
    vec_push(&s->results, f);
}

static void next_root(naive *s)
{
    uint32_t k = s->cur_root + 1;
    if (k == s->r->nroots) {
        complete(s);
        return;
    }
    s->cur_root = k;
    for (size_t i = 0; i < s->g->nodes.len; i++) {
        ir_node *m = s->g->nodes.items[i];
        bool taken = m->dead || m->noutputs == 0;
        for (uint32_t j = 0; j < k && !taken; j++)
            taken = s->root_node[j] == m;
        if (taken)
            continue;
        s->root_node[k] = m;
        push_key(s, m->id);
        size_t depth = s->todo.len;
        vec_push(&s->todo, ((obligation){s->r->roots[k], m->outputs[0]}));
        step(s);
        s->todo.len = depth;
        s->nkey--;
    }
    s->cur_root = k - 1;
}

static void step(naive *s)
{
    if (s->todo.len == 0) {
        next_root(s);
        return;
    }
    obligation o = s->todo.items[--s->todo.len];
    discharge(s, o.p, o.v);
    vec_push(&s->todo, o);
}

static int by_key(const void *a, const void *b)
{
    const found *x = a, *y = b;
    for (uint32_t i = 0; i < x->nkey && i < y->nkey; i++)
        if (x->key[i] != y->key[i])
            return x->key[i] < y->key[i] ? -1 : 1;
    return (x->nkey > y->nkey) - (x->nkey < y->nkey);
}

static bool same(const found *a, const found *b, uint32_t n)
{
    return memcmp(a->values, b->values, n * sizeof *a->values) == 0 &&
           memcmp(a->present, b->present, n) == 0;
}

void nv_match_rule(ar_arena *arena, ir_graph *g, const dsl_rule *r, uint32_t rule_index,
                   ir_node *n, nv_matches *out)
{
    if (n->dead || n->noutputs == 0)
        return;
    size_t nn = r->nnodes ? r->nnodes : 1;
    naive s = {.g = g, .r = r, .arena = arena};
    s.val = calloc(nn, sizeof *s.val);
    s.bound = calloc(nn, 1);
    s.present = calloc(nn, 1);
    s.swapped = calloc(nn, 1);
    s.bound_root = calloc(nn, sizeof *s.bound_root);
    s.root_node = calloc(r->nroots, sizeof *s.root_node);
    FR_CHECK(s.val && s.bound && s.present && s.swapped && s.bound_root && s.root_node);
    s.root_node[0] = n;
    vec_push(&s.todo, ((obligation){r->roots[0], n->outputs[0]}));
    /* root 0 is an op matched by its own node: a value that is not output 0 cannot be a root */
    step(&s);

    if (s.results.len)
        qsort(s.results.items, s.results.len, sizeof *s.results.items, by_key);
    size_t kept = 0;
    for (size_t i = 0; i < s.results.len && kept < MT_MAX_SOLUTIONS; i++) {
        const found *f = &s.results.items[i];
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            dup = same(&s.results.items[j], f, r->nnodes);
        if (dup)
            continue;
        kept++;
        nv_match m = {.rule_index = rule_index, .root = n, .key = f->key, .nkey = f->nkey,
                      .values = f->values};
        m.nodes = ar_alloc_array(arena, nn, sizeof *m.nodes);
        for (uint32_t i2 = 0; i2 < r->nnodes; i2++)
            m.nodes[i2] = f->present[i2] ? f->values[i2]->producer : NULL;
        vec_push(out, m);
    }
    vec_free(&s.todo);
    vec_free(&s.results);
    free(s.val);
    free(s.bound);
    free(s.present);
    free(s.swapped);
    free(s.bound_root);
    free(s.root_node);
}
