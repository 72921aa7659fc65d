/* What a rule asks of its pattern nodes beyond their shape in the pattern: read once from the
 * leaves' predicates, the guard and the replacement, so that candidates are built to satisfy it
 * (a constant the guard reads with value() has one element; `rank(@b) == 1` makes @b a vector). */
#include "prove/internal.h"

#include <string.h>

static pv_node_facts *facts_of(pv_facts *f, const dsl_capture *cap)
{
    return &f->nodes[cap->node->id];
}

/* The capture an expression names (`@c`, or a let binding), or NULL. */
static const dsl_capture *capture_of(const dsl_expr *e)
{
    return e && e->kind == DSL_EXPR_CAPTURE ? e->v.capture : NULL;
}

static bool is_call(const dsl_expr *e, dsl_function fn)
{
    return e->kind == DSL_EXPR_CALL && e->fn == fn && e->nargs >= 1 && capture_of(e->args[0]);
}

static bool int_literal(const dsl_expr *e, int64_t *out)
{
    if (e->kind != DSL_EXPR_INT)
        return false;
    *out = e->v.i;
    return true;
}

/* Grows a list of `size`-byte items in the arena to hold one more (`cap` is its capacity). */
static void *grow(ar_arena *arena, void *items, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap)
        return items;
    *cap = *cap ? 2 * *cap : 4;
    void *grown = ar_alloc(arena, *cap * size);
    if (n)
        memcpy(grown, items, n * size);
    return grown;
}

/* `rank(@c) == N` and `numel(@c) == 1`, either way round. */
static void shape_equalities(pv_facts *f, const dsl_expr *a, const dsl_expr *b)
{
    int64_t k;
    if (!int_literal(b, &k))
        return;
    if (is_call(a, DSL_FN_RANK) && k >= 0 && k <= IR_MAX_RANK)
        facts_of(f, capture_of(a->args[0]))->rank = (int8_t)k;
    if (is_call(a, DSL_FN_NUMEL) && k == 1)
        facts_of(f, capture_of(a->args[0]))->one_element = true;
}

/* The literal of an attr() comparison as an attribute value; false for other expressions. */
static bool attr_literal(const dsl_expr *e, const char *name, ar_arena *arena, ir_attr *out)
{
    *out = (ir_attr){.name = name};
    switch (e->kind) {
    case DSL_EXPR_INT: out->kind = IR_ATTR_INT, out->v.i = e->v.i; return true;
    case DSL_EXPR_FLOAT: out->kind = IR_ATTR_FLOAT, out->v.f = e->v.f; return true;
    case DSL_EXPR_STRING: out->kind = IR_ATTR_STRING, out->v.s = e->v.s; return true;
    case DSL_EXPR_LIST:
        out->kind = IR_ATTR_INTS;
        out->count = e->nargs;
        out->v.ints = ar_alloc(arena, (e->nargs + 1) * sizeof(int64_t));
        for (uint32_t i = 0; i < e->nargs; i++)
            if (!int_literal(e->args[i], &out->v.ints[i]))
                return false;
        return true;
    default: return false;
    }
}

/* `attr(@n, name) == LITERAL`: a value worth trying for that attribute. */
static void attr_equality(pv_facts *f, ar_arena *arena, const dsl_expr *a, const dsl_expr *b,
                          uint32_t *cap)
{
    if (!is_call(a, DSL_FN_ATTR) || !a->attr_name)
        return;
    ir_attr value;
    if (!attr_literal(b, a->attr_name, arena, &value))
        return;
    f->attrs = grow(arena, f->attrs, f->nattrs, cap, sizeof *f->attrs);
    f->attrs[f->nattrs++] = (pv_attr_hint){capture_of(a->args[0])->node, value};
}

static void walk_guard(pv_facts *f, ar_arena *arena, const dsl_expr *e, uint32_t *cap)
{
    if (!e)
        return;
    if (is_call(e, DSL_FN_VALUE)) {
        pv_node_facts *nf = facts_of(f, capture_of(e->args[0]));
        nf->is_const = nf->one_element = true;
    }
    int64_t index;
    if (is_call(e, DSL_FN_IS_OUTPUT) && capture_of(e->args[1]) &&
        int_literal(e->args[2], &index) && index >= 0 && index < 64) {
        pv_node_facts *nf = facts_of(f, capture_of(e->args[0]));
        nf->output_of = capture_of(e->args[1])->node;
        nf->output_index = (uint32_t)index;
    }
    if (e->kind == DSL_EXPR_CALL && e->fn == DSL_FN_CAUSAL_MASK && capture_of(e->args[0]) &&
        capture_of(e->args[1])) {
        pv_node_facts *nf = facts_of(f, capture_of(e->args[0]));
        nf->is_const = true;
        nf->causal_of = capture_of(e->args[1])->node;
    }
    if (e->kind == DSL_EXPR_CALL && (e->fn == DSL_FN_ALL || e->fn == DSL_FN_ANY))
        return; /* its comparison is per element: no value for the whole attribute */
    if (e->kind == DSL_EXPR_BINARY && e->op == DSL_OP_EQ) {
        shape_equalities(f, e->args[0], e->args[1]);
        shape_equalities(f, e->args[1], e->args[0]);
        attr_equality(f, arena, e->args[0], e->args[1], cap);
        attr_equality(f, arena, e->args[1], e->args[0], cap);
    }
    if (e->kind == DSL_EXPR_CALL || e->kind == DSL_EXPR_UNARY || e->kind == DSL_EXPR_BINARY ||
        e->kind == DSL_EXPR_LIST)
        for (uint32_t i = 0; i < e->nargs; i++)
            walk_guard(f, arena, e->args[i], cap);
}

void pv_facts_compute(const dsl_rule *r, ar_arena *arena, pv_facts *f)
{
    *f = (pv_facts){.rule = r};
    f->nodes = ar_alloc(arena, (r->nnodes + 1) * sizeof *f->nodes);
    for (uint32_t i = 0; i < r->nnodes; i++) {
        const dsl_pattern *p = r->nodes[i];
        f->nodes[i] = (pv_node_facts){.is_const = p->preds.is_const,
                                      .rank = p->preds.rank,
                                      .dtype = p->preds.dtype,
                                      .output_of = p->output_of, /* `@f.k` */
                                      .output_index = p->output_index};
    }
    /* an epsilon added under a square root or a power: Sqrt(Add(ms, @eps)), Pow(Add(ms, @eps), p) */
    for (uint32_t i = 0; i < r->nnodes; i++) {
        const dsl_pattern *p = r->nodes[i];
        if (p->kind != DSL_PAT_OP || p->nops != 1 ||
            (p->ops[0] != IR_OP_Sqrt && p->ops[0] != IR_OP_Pow) || !p->noperands)
            continue;
        const dsl_pattern *sum = p->operands[0];
        if (sum->kind != DSL_PAT_OP || sum->nops != 1 || sum->ops[0] != IR_OP_Add)
            continue;
        for (uint32_t k = 0; k < sum->noperands; k++)
            if (sum->operands[k]->kind == DSL_PAT_ANY && sum->operands[k]->preds.is_const)
                f->nodes[sum->operands[k]->id].positive = true;
    }
    uint32_t cap = 0;
    walk_guard(f, arena, r->guard, &cap);
    for (uint32_t i = 0; i < r->repl.nattrs; i++) {
        const dsl_rattr *a = &r->repl.attrs[i];
        if (a->kind != DSL_RATTR_CONST)
            continue;
        pv_node_facts *nf = facts_of(f, a->capture);
        nf->is_const = true;
        nf->one_element |= a->value.kind == IR_ATTR_INT || a->value.kind == IR_ATTR_FLOAT;
        nf->positive |= strcmp(a->value.name, "epsilon") == 0;
    }
    for (uint32_t i = 0; i < r->repl.nexports; i++) {
        pv_node_facts *nf = facts_of(f, r->repl.exports[i]);
        uint32_t k = r->repl.export_outputs[i];
        if (k == 0)
            nf->exported = true;
        else if (k < 64)
            nf->export_mask |= (uint64_t)1 << k;
    }
    for (uint32_t i = 0; i < r->repl.nshares; i++)
        facts_of(f, r->repl.shares[i])->shared = true;
}
