/* Building checked rules by hand (see rulekit.h). */
#include "tests/matcher/rulekit.h"

#include "base/check.h"
#include "base/vec.h"

#include <stdarg.h>
#include <string.h>

typedef struct {
    const char *name;
    dsl_capture *cap;
} named;

struct rk_kit {
    ar_arena *arena;
    VEC(named) names; /* captures of the rule being built */
};

rk_kit *rk_new(void)
{
    ar_arena *arena = ar_new();
    rk_kit *k = ar_alloc(arena, sizeof *k);
    k->arena = arena;
    return k;
}

void rk_free(rk_kit *k)
{
    vec_free(&k->names);
    ar_free(k->arena);
}

ar_arena *rk_arena(rk_kit *k)
{
    return k->arena;
}

static dsl_capture *find_name(rk_kit *k, const char *name)
{
    for (size_t i = 0; i < k->names.len; i++)
        if (strcmp(k->names.items[i].name, name) == 0)
            return k->names.items[i].cap;
    return NULL;
}

static dsl_capture *add_name(rk_kit *k, const char *name, dsl_pattern *p)
{
    dsl_capture *c = ar_alloc(k->arena, sizeof *c);
    c->name = ar_strdup(k->arena, name);
    c->node = p;
    c->refs = 1;
    vec_push(&k->names, ((named){c->name, c}));
    p->capture = c;
    return c;
}

static dsl_pattern *new_pattern(rk_kit *k, dsl_pattern_kind kind, const char *text)
{
    dsl_pattern *p = ar_alloc(k->arena, sizeof *p);
    p->kind = kind;
    p->text = ar_strdup(k->arena, text);
    p->preds.rank = -1;
    return p;
}

dsl_pattern *rk_leaf(rk_kit *k, const char *text)
{
    if (text[0] == '@') {
        dsl_capture *c = find_name(k, text + 1);
        if (c)
            return c->node;
        dsl_pattern *p = new_pattern(k, DSL_PAT_ANY, text);
        add_name(k, text + 1, p);
        return p;
    }
    return new_pattern(k, DSL_PAT_ANY, text);
}

static int cmp_op(const void *a, const void *b)
{
    return (int)*(const ir_op *)a - (int)*(const ir_op *)b;
}

static dsl_pattern *make_op(rk_kit *k, const ir_op *ops, uint32_t nops, int open, uint32_t n,
                            va_list ap)
{
    char text[256] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < nops; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", i ? "|" : "",
                                 ir_op_name(ops[i]));
    dsl_pattern *p = new_pattern(k, DSL_PAT_OP, text);
    ir_op *sorted = ar_alloc_array(k->arena, nops, sizeof *sorted);
    memcpy(sorted, ops, nops * sizeof *sorted);
    qsort(sorted, nops, sizeof *sorted, cmp_op);
    uint32_t unique = 0;
    for (uint32_t i = 0; i < nops; i++)
        if (unique == 0 || sorted[unique - 1] != sorted[i])
            sorted[unique++] = sorted[i];
    p->ops = sorted;
    p->nops = unique;
    p->open = open == RK_OPEN;
    p->commutative = true;
    for (uint32_t i = 0; i < unique; i++)
        p->commutative &= (ir_op_info_get(sorted[i])->flags & IR_OPF_COMMUTATIVE) != 0;
    p->noperands = n;
    p->operands = ar_alloc_array(k->arena, n, sizeof *p->operands);
    for (uint32_t i = 0; i < n; i++)
        p->operands[i] = va_arg(ap, dsl_pattern *);
    return p;
}

dsl_pattern *rk_op(rk_kit *k, ir_op op, int open, uint32_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    dsl_pattern *p = make_op(k, &op, 1, open, n, ap);
    va_end(ap);
    return p;
}

dsl_pattern *rk_opset(rk_kit *k, const ir_op *ops, uint32_t nops, int open, uint32_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    dsl_pattern *p = make_op(k, ops, nops, open, n, ap);
    va_end(ap);
    return p;
}

dsl_pattern *rk_name(rk_kit *k, dsl_pattern *p, const char *name)
{
    add_name(k, name, p);
    return p;
}

dsl_pattern *rk_optional(dsl_pattern *p)
{
    p->optional = true;
    return p;
}

static dsl_pattern *add_attr(rk_kit *k, dsl_pattern *p, const ir_attr *a)
{
    ir_attr *grown = ar_alloc_array(k->arena, p->nattrs + 1, sizeof *grown);
    if (p->nattrs)
        memcpy(grown, p->attrs, p->nattrs * sizeof *grown);
    grown[p->nattrs++] = *a;
    p->attrs = grown;
    return p;
}

dsl_pattern *rk_attr_int(rk_kit *k, dsl_pattern *p, const char *name, int64_t v)
{
    return add_attr(k, p, &(ir_attr){.name = ar_strdup(k->arena, name), .kind = IR_ATTR_INT, .v.i = v});
}

dsl_pattern *rk_attr_float(rk_kit *k, dsl_pattern *p, const char *name, double v)
{
    return add_attr(k, p,
                    &(ir_attr){.name = ar_strdup(k->arena, name), .kind = IR_ATTR_FLOAT, .v.f = v});
}

dsl_pattern *rk_attr_string(rk_kit *k, dsl_pattern *p, const char *name, const char *v)
{
    return add_attr(k, p, &(ir_attr){.name = ar_strdup(k->arena, name), .kind = IR_ATTR_STRING,
                                     .v.s = ar_strdup(k->arena, v)});
}

dsl_pattern *rk_attr_ints(rk_kit *k, dsl_pattern *p, const char *name, const int64_t *v,
                          uint32_t n)
{
    int64_t *copy = ar_alloc_array(k->arena, n, sizeof *copy);
    memcpy(copy, v, n * sizeof *copy);
    return add_attr(k, p, &(ir_attr){.name = ar_strdup(k->arena, name), .kind = IR_ATTR_INTS,
                                     .count = n, .v.ints = copy});
}

/* ---- rules ---- */

typedef VEC(dsl_pattern *) pattern_vec;

enum { RK_MAX_NODES = 1024 };

/* Post-order: operands before users, each node once. */
static void gather(dsl_pattern *p, pattern_vec *out, dsl_pattern **seen, size_t *nseen)
{
    for (size_t i = 0; i < *nseen; i++)
        if (seen[i] == p)
            return;
    FR_CHECK(*nseen < RK_MAX_NODES);
    seen[(*nseen)++] = p;
    for (uint32_t i = 0; i < p->noperands; i++)
        gather(p->operands[i], out, seen, nseen);
    vec_push(out, p);
}

dsl_rule *rk_rule(rk_kit *k, const char *name, uint32_t nroots, ...)
{
    dsl_rule *r = ar_alloc(k->arena, sizeof *r);
    r->name = ar_strdup(k->arena, name);
    r->checked = true;
    r->nroots = nroots;
    r->roots = ar_alloc_array(k->arena, nroots, sizeof *r->roots);
    va_list ap;
    va_start(ap, nroots);
    for (uint32_t i = 0; i < nroots; i++)
        r->roots[i] = va_arg(ap, dsl_pattern *);
    va_end(ap);
    pattern_vec nodes = {0};
    dsl_pattern *seen[RK_MAX_NODES];
    size_t nseen = 0;
    for (uint32_t i = 0; i < nroots; i++)
        gather(r->roots[i], &nodes, seen, &nseen);
    r->nnodes = (uint32_t)nodes.len;
    r->nodes = ar_alloc_array(k->arena, nodes.len, sizeof *r->nodes);
    for (size_t i = 0; i < nodes.len; i++) {
        r->nodes[i] = nodes.items[i];
        r->nodes[i]->id = (uint32_t)i;
        r->nops += nodes.items[i]->kind == DSL_PAT_OP;
    }
    vec_free(&nodes);
    r->priority = r->nops;
    r->ncaptures = (uint32_t)k->names.len;
    r->captures = ar_alloc_array(k->arena, k->names.len, sizeof *r->captures);
    for (size_t i = 0; i < k->names.len; i++)
        r->captures[i] = k->names.items[i].cap;
    k->names.len = 0; /* the next rule has names of its own */
    r->repl.kind = DSL_REPL_OP;
    r->repl.op = IR_OP_Identity;
    return r;
}

dsl_capture *rk_capture(const dsl_rule *r, const char *name)
{
    for (uint32_t i = 0; i < r->ncaptures; i++)
        if (strcmp(r->captures[i]->name, name) == 0)
            return r->captures[i];
    return NULL;
}

/* ---- guards ---- */

static dsl_expr *expr(rk_kit *k, dsl_expr_kind kind, dsl_type type)
{
    dsl_expr *e = ar_alloc(k->arena, sizeof *e);
    e->kind = kind;
    e->type = type;
    return e;
}

dsl_expr *rk_int(rk_kit *k, int64_t v)
{
    dsl_expr *e = expr(k, DSL_EXPR_INT, DSL_TYPE_INT);
    e->v.i = v;
    return e;
}

dsl_expr *rk_float(rk_kit *k, double v)
{
    dsl_expr *e = expr(k, DSL_EXPR_FLOAT, DSL_TYPE_FLOAT);
    e->v.f = v;
    return e;
}

dsl_expr *rk_dtype(rk_kit *k, ir_dtype dt)
{
    dsl_expr *e = expr(k, DSL_EXPR_DTYPE, DSL_TYPE_DTYPE);
    e->v.dtype = dt;
    return e;
}

dsl_expr *rk_opname(rk_kit *k, ir_op op)
{
    dsl_expr *e = expr(k, DSL_EXPR_OP, DSL_TYPE_OP);
    e->v.op = op;
    return e;
}

dsl_expr *rk_ref(rk_kit *k, dsl_capture *c)
{
    FR_CHECK(c != NULL);
    dsl_expr *e = expr(k, DSL_EXPR_CAPTURE, DSL_TYPE_VALUE);
    e->v.capture = c;
    return e;
}

static dsl_expr **args(rk_kit *k, uint32_t n)
{
    return ar_alloc_array(k->arena, n, sizeof(dsl_expr *));
}

dsl_expr *rk_call(rk_kit *k, dsl_function fn, dsl_expr *a, dsl_expr *b)
{
    dsl_expr *e = expr(k, DSL_EXPR_CALL, DSL_TYPE_INT);
    e->fn = fn;
    e->nargs = b ? 2 : 1;
    e->args = args(k, e->nargs);
    e->args[0] = a;
    if (b)
        e->args[1] = b;
    return e;
}

dsl_expr *rk_attr_of(rk_kit *k, dsl_capture *c, const char *attr)
{
    dsl_expr *e = rk_call(k, DSL_FN_ATTR, rk_ref(k, c), NULL);
    e->attr_name = ar_strdup(k->arena, attr);
    return e;
}

dsl_expr *rk_bin(rk_kit *k, dsl_operator op, dsl_expr *a, dsl_expr *b)
{
    dsl_expr *e = expr(k, DSL_EXPR_BINARY, op >= DSL_OP_OR && op <= DSL_OP_GE ? DSL_TYPE_BOOL
                                                                               : DSL_TYPE_INT);
    e->op = op;
    e->nargs = 2;
    e->args = args(k, 2);
    e->args[0] = a;
    e->args[1] = b;
    return e;
}

dsl_expr *rk_not(rk_kit *k, dsl_expr *a)
{
    dsl_expr *e = expr(k, DSL_EXPR_UNARY, DSL_TYPE_BOOL);
    e->op = DSL_OP_NOT;
    e->nargs = 1;
    e->args = args(k, 1);
    e->args[0] = a;
    return e;
}

dsl_expr *rk_list(rk_kit *k, uint32_t n, const int64_t *items)
{
    dsl_expr *e = expr(k, DSL_EXPR_LIST, DSL_TYPE_INTS);
    e->nargs = n;
    e->args = args(k, n);
    for (uint32_t i = 0; i < n; i++)
        e->args[i] = rk_int(k, items[i]);
    return e;
}

/* ---- replacements ---- */

void rk_target(rk_kit *k, dsl_rule *r, ir_op op)
{
    (void)k;
    r->repl.kind = DSL_REPL_OP;
    r->repl.op = op;
    r->repl.text = ir_op_name(op);
}

void rk_forward(dsl_rule *r, const char *capture)
{
    r->repl.kind = DSL_REPL_FORWARD;
    r->repl.forward = rk_capture(r, capture);
    FR_CHECK(r->repl.forward != NULL);
}

void rk_action(rk_kit *k, dsl_rule *r, const char *action_name)
{
    int found = -1;
#define RK_ACTION(id, aname, summary)                                                              \
    if (strcmp(action_name, aname) == 0)                                                           \
        found = DSL_ACTION_##id;
    DSL_ACTIONS(RK_ACTION)
#undef RK_ACTION
    FR_CHECK(found >= 0);
    dsl_action *grown = ar_alloc_array(k->arena, r->repl.nactions + 1, sizeof *grown);
    if (r->repl.nactions)
        memcpy(grown, r->repl.actions, r->repl.nactions * sizeof *grown);
    grown[r->repl.nactions++] = (dsl_action)found;
    r->repl.actions = grown;
}

static dsl_rattr *add_rattr(rk_kit *k, dsl_rule *r)
{
    dsl_rattr *grown = ar_alloc_array(k->arena, r->repl.nattrs + 1, sizeof *grown);
    if (r->repl.nattrs)
        memcpy(grown, r->repl.attrs, r->repl.nattrs * sizeof *grown);
    r->repl.attrs = grown;
    dsl_rattr *a = &grown[r->repl.nattrs++];
    memset(a, 0, sizeof *a);
    return a;
}

void rk_set_attr(rk_kit *k, dsl_rule *r, const ir_attr *value)
{
    dsl_rattr *a = add_rattr(k, r);
    a->kind = DSL_RATTR_LITERAL;
    a->value = *value;
}

void rk_set_act_from(rk_kit *k, dsl_rule *r, const char *capture)
{
    dsl_rattr *a = add_rattr(k, r);
    a->kind = DSL_RATTR_OP_NAME;
    a->value.name = "act";
    a->value.kind = IR_ATTR_STRING;
    a->capture = rk_capture(r, capture);
    FR_CHECK(a->capture != NULL);
}

void rk_set_port(rk_kit *k, dsl_rule *r, const char *port, int index, const char *capture)
{
    dsl_rattr *a = add_rattr(k, r);
    a->kind = DSL_RATTR_INPUT;
    a->value.name = ar_strdup(k->arena, port);
    a->port = index;
    a->capture = rk_capture(r, capture);
    FR_CHECK(a->capture != NULL);
}

void rk_operands(rk_kit *k, dsl_rule *r, uint32_t n, ...)
{
    r->repl.operands_explicit = true;
    r->repl.noperands = n;
    r->repl.operands = ar_alloc_array(k->arena, n, sizeof *r->repl.operands);
    va_list ap;
    va_start(ap, n);
    for (uint32_t i = 0; i < n; i++) {
        r->repl.operands[i] = rk_capture(r, va_arg(ap, const char *));
        FR_CHECK(r->repl.operands[i] != NULL);
    }
    va_end(ap);
}

void rk_export(rk_kit *k, dsl_rule *r, const char *capture)
{
    dsl_capture **grown = ar_alloc_array(k->arena, r->repl.nexports + 1, sizeof *grown);
    if (r->repl.nexports)
        memcpy(grown, r->repl.exports, r->repl.nexports * sizeof *grown);
    grown[r->repl.nexports++] = rk_capture(r, capture);
    FR_CHECK(grown[r->repl.nexports - 1] != NULL);
    r->repl.exports = grown;
}
