/* The fused node's attributes: carried over from the matched ops (the node nearest the root that
 * sets one of the target's attributes, or whose op's default for it differs from the target's),
 * then the activation epilogue (the root when it is one, or `act = @a`), then the rule's literals;
 * and the check against the target op's schema. */
#include "rewrite/internal.h"

#include "base/check.h"
#include "ir/acts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void drop_attr(rw_plan *p, const char *name)
{
    for (size_t i = 0; i < p->attrs.len; i++)
        if (strcmp(p->attrs.items[i].name, name) == 0) {
            memmove(&p->attrs.items[i], &p->attrs.items[i + 1],
                    (p->attrs.len - i - 1) * sizeof p->attrs.items[0]);
            p->attrs.len--;
            return;
        }
}

/* out = attr followed by suffix, cut to size as snprintf would (without its cost per match). */
static void suffixed(char *out, size_t size, const char *attr, const char *suffix)
{
    size_t n = 0;
    for (const char *s = attr; *s && n + 1 < size; s++)
        out[n++] = *s;
    for (const char *s = suffix; *s && n + 1 < size; s++)
        out[n++] = *s;
    out[n] = '\0';
}

static bool is_act_attr(const char *name)
{
    return strcmp(name, "act") == 0 || strcmp(name, "act_alpha") == 0 || strcmp(name, "act_beta") == 0;
}

static bool schema_default_equal(const ir_attr_schema *a, const ir_attr_schema *b)
{
    switch (a->kind) {
    case IR_ATTR_INT: return a->i == b->i;
    case IR_ATTR_FLOAT: return a->f == b->f || (isnan(a->f) && isnan(b->f));
    case IR_ATTR_STRING: return (!a->s && !b->s) || (a->s && b->s && strcmp(a->s, b->s) == 0);
    case IR_ATTR_INTS:
        return a->nints == b->nints &&
               (!a->nints || memcmp(a->ints, b->ints, a->nints * sizeof *a->ints) == 0);
    case IR_ATTR_FLOATS: return true;
    }
    return false;
}

static ir_attr from_schema(const ir_attr_schema *s)
{
    ir_attr a = {.name = s->name, .kind = s->kind};
    switch (s->kind) {
    case IR_ATTR_INT: a.v.i = s->i; break;
    case IR_ATTR_FLOAT: a.v.f = s->f; break;
    case IR_ATTR_STRING: a.v.s = s->s ? s->s : ""; break;
    case IR_ATTR_INTS:
        a.v.ints = (int64_t *)s->ints;
        a.count = s->nints;
        break;
    case IR_ATTR_FLOATS: break;
    }
    return a;
}

/* Marks an entry of rw_ctx.carry_schemas not looked up yet. */
static const ir_attr_schema not_looked_up;

enum { SCHEMA_ROW = IR_OP_COUNT + 1 };

/* rw_ctx.carry_schemas[target], made when first used. */
static const ir_attr_schema **schema_table(rw_ctx *ctx, ir_op target)
{
    const ir_attr_schema **table = ctx->carry_schemas[target];
    if (!table) {
        size_t n = (size_t)ir_op_info_get(target)->nattrs * SCHEMA_ROW;
        table = ctx->carry_schemas[target] = malloc((n ? n : 1) * sizeof *table);
        FR_CHECK(table != NULL);
        for (size_t i = 0; i < n; i++)
            table[i] = &not_looked_up;
    }
    return table;
}

/* ir_op_attr_schema(op, the target's attribute s), looked up once per apply in the target's table;
 * op IR_OP_COUNT asks whether that attribute is the activation's (is_act_attr: non-NULL when it
 * is). */
static inline const ir_attr_schema *their_schema(const ir_attr_schema **table,
                                                 const ir_op_info *target, uint32_t s, ir_op op)
{
    const ir_attr_schema **slot = &table[(size_t)s * SCHEMA_ROW + op];
    if (*slot == &not_looked_up) {
        const ir_attr_schema *want = &target->attrs[s];
        *slot = op == IR_OP_COUNT ? (is_act_attr(want->name) ? want : NULL)
                                  : ir_op_attr_schema(op, want->name);
    }
    return *slot;
}

/* carry_attrs' pairs for one rule: for the ops its last match's pattern nodes had (IR_OP_COUNT
 * where a node was not matched), each attribute s of the target that it carries with the pattern
 * nodes k whose op declares it (theirs), nearest the root first: what carry_attrs' loops would
 * look up, the same for every match of the same ops. */
typedef struct rw_carry_list {
    bool with_act;
    uint32_t nops, n;
    ir_op *ops;
    struct carry_pair {
        uint32_t s, k;
        const ir_attr_schema *theirs;
    } * pairs;
} rw_carry_list;

void rw_carry_lists_free(rw_ctx *ctx)
{
    if (!ctx->carry_lists)
        return;
    for (uint32_t i = 0; i < ctx->rep->nrules; i++)
        if (ctx->carry_lists[i]) {
            free(ctx->carry_lists[i]->ops);
            free(ctx->carry_lists[i]->pairs);
            free(ctx->carry_lists[i]);
        }
    free(ctx->carry_lists);
    ctx->carry_lists = NULL;
}

static ir_op op_of(const ir_node *n)
{
    return n ? n->op : IR_OP_COUNT;
}

/* The rule's pairs for this match's ops, made again when they differ from the last match's. */
static const rw_carry_list *carry_list(rw_plan *p, bool with_act)
{
    rw_ctx *ctx = p->ctx;
    uint32_t rule = p->m->rule_index, nn = p->rule->nnodes;
    FR_CHECK(rule < ctx->rep->nrules);
    if (!ctx->carry_lists) {
        ctx->carry_lists = calloc(ctx->rep->nrules, sizeof *ctx->carry_lists);
        FR_CHECK(ctx->carry_lists != NULL);
    }
    rw_carry_list *l = ctx->carry_lists[rule];
    bool same = l && l->with_act == with_act && l->nops == nn;
    for (uint32_t k = 0; same && k < nn; k++)
        same = l->ops[k] == op_of(p->m->nodes[k]);
    if (same)
        return l;
    if (!l) {
        l = ctx->carry_lists[rule] = calloc(1, sizeof *l);
        FR_CHECK(l != NULL);
    }
    ir_op op = p->rule->repl.op;
    const ir_op_info *target = ir_op_info_get(op);
    const ir_attr_schema **table = schema_table(ctx, op);
    size_t most = (size_t)target->nattrs * nn;
    free(l->ops);
    free(l->pairs);
    l->ops = malloc((nn ? nn : 1) * sizeof *l->ops);
    l->pairs = malloc((most ? most : 1) * sizeof *l->pairs);
    FR_CHECK(l->ops != NULL && l->pairs != NULL);
    l->with_act = with_act;
    l->nops = nn;
    l->n = 0;
    for (uint32_t k = 0; k < nn; k++)
        l->ops[k] = op_of(p->m->nodes[k]);
    for (uint32_t s = 0; s < target->nattrs; s++) {
        const ir_attr_schema *want = &target->attrs[s];
        if (!want->name[0] || (!with_act && their_schema(table, target, s, IR_OP_COUNT)))
            continue;
        for (uint32_t k = nn; k-- > 0;) {
            ir_op theirs_op = l->ops[k];
            const ir_attr_schema *theirs =
                theirs_op != IR_OP_COUNT ? their_schema(table, target, s, theirs_op) : NULL;
            if (theirs)
                l->pairs[l->n++] = (struct carry_pair){s, k, theirs};
        }
    }
    return l;
}

/* Attributes of the target that a matched op sets (or defaults differently): the node nearest the
 * root wins (rule->nodes lists operands before users). A node whose op does not declare the
 * attribute sets none (the graph was validated) and is passed over without reading its list. */
static void carry_attrs(rw_plan *p, bool with_act)
{
    const ir_op_info *target = ir_op_info_get(p->rule->repl.op);
    const rw_carry_list *l = carry_list(p, with_act);
    for (uint32_t i = 0; i < l->n;) {
        uint32_t s = l->pairs[i].s;
        const ir_attr_schema *want = &target->attrs[s];
        bool done = false;
        for (; i < l->n && l->pairs[i].s == s; i++) {
            if (done)
                continue;
            const ir_node *n = p->m->nodes[l->pairs[i].k];
            const ir_attr_schema *theirs = l->pairs[i].theirs;
            const ir_attr *set = ir_node_attr(n, theirs->name);
            if (set && (set->kind == want->kind ||
                        (set->kind == IR_ATTR_INT && want->kind == IR_ATTR_FLOAT))) {
                ir_attr a = *set;
                if (a.kind == IR_ATTR_INT && want->kind == IR_ATTR_FLOAT) {
                    a.kind = IR_ATTR_FLOAT;
                    a.v.f = (double)set->v.i;
                }
                rw_plan_set_attr(p, &a);
                done = true;
            } else if (theirs->kind == want->kind && !theirs->required) {
                /* the op's default applies to it; carry it when the target's differs */
                if (!schema_default_equal(theirs, want)) {
                    ir_attr a = from_schema(theirs);
                    rw_plan_set_attr(p, &a);
                }
                done = true;
            }
        }
    }
}

static bool scalar_const(rw_plan *p, ir_value *v, double *out, char *why)
{
    int64_t n;
    double *x = rw_const_read(p, v, &n, why);
    if (!x)
        return false;
    bool ok = n == 1;
    if (ok)
        *out = x[0];
    free(x);
    return ok || rw_why(why, "act: '%s' must be one value", v->name);
}

/* Sets the plan's attribute `attr` (and attr_alpha, attr_beta) to n's activation epilogue when n
 * is a fused op that has one (a FusedConvAct's act, act_alpha, act_beta); false when it has none. */
static bool act_from_fused(rw_plan *p, const ir_node *n, const char *attr)
{
    if (ir_op_info_get(n->op)->cls != IR_CLASS_FUSED || !ir_op_attr_schema(n->op, "act"))
        return false;
    char alpha[96], beta[96];
    suffixed(alpha, sizeof alpha, attr, "_alpha");
    suffixed(beta, sizeof beta, attr, "_beta");
    rw_plan_set_attr(p, &(ir_attr){.name = attr, .kind = IR_ATTR_STRING,
                                   .v.s = ir_get_string(n, "act")});
    drop_attr(p, alpha);
    drop_attr(p, beta);
    const ir_attr *a = ir_node_attr(n, "act_alpha"), *b = ir_node_attr(n, "act_beta");
    if (a)
        rw_plan_set_attr(p, &(ir_attr){.name = ar_strdup(p->ctx->scratch, alpha),
                                       .kind = IR_ATTR_FLOAT, .v.f = a->v.f});
    if (b)
        rw_plan_set_attr(p, &(ir_attr){.name = ar_strdup(p->ctx->scratch, beta),
                                       .kind = IR_ATTR_FLOAT, .v.f = b->v.f});
    return true;
}

/* The activation a matched node computes (its row of ir/acts.def) as the plan's attribute `attr`
 * ("act"; SeparableConv's "out_act", SqueezeExcite's "gate") with attr_alpha and attr_beta; a
 * fused node's is its own epilogue (act_from_fused). Parameters kept as inputs (Clip's bounds)
 * leave the fused node's inputs (they become attributes). */
static bool act_from_node(rw_plan *p, ir_node *n, const char *attr, char *why)
{
    if (act_from_fused(p, n, attr))
        return true;
    char alpha[96], beta[96];
    suffixed(alpha, sizeof alpha, attr, "_alpha");
    suffixed(beta, sizeof beta, attr, "_beta");
    ir_act act;
    /* erf and tanh GELU are different functions: the kernel gets the one the graph computes */
    if (!ir_act_of_node(n, &act))
        return rw_why(why, "act: %s is not an activation the fused kernels apply",
                      ir_op_name(n->op));
    const ir_act_info *info = ir_act_get(act);
    bool set[2] = {false, false};
    double v[2] = {0, 0};
    for (unsigned k = 0; k < info->nparams; k++) {
        if (info->from == IR_ACT_FROM_ATTRS) {
            set[k] = true;
            v[k] = ir_get_float(n, info->param[k]);
        } else if (n->ninputs > k + 1 && n->inputs[k + 1]) {
            set[k] = true;
            if (!scalar_const(p, n->inputs[k + 1], &v[k], why))
                return false;
        }
    }
    if (info->from == IR_ACT_FROM_INPUTS)
        for (uint32_t k = 1; k < n->ninputs; k++)
            rw_plan_remove_input(p, n->inputs[k]);
    rw_plan_set_attr(p, &(ir_attr){.name = attr, .kind = IR_ATTR_STRING, .v.s = info->name});
    drop_attr(p, alpha);
    drop_attr(p, beta);
    if (set[0])
        rw_plan_set_attr(p, &(ir_attr){.name = ar_strdup(p->ctx->scratch, alpha),
                                       .kind = IR_ATTR_FLOAT, .v.f = v[0]});
    if (set[1])
        rw_plan_set_attr(p, &(ir_attr){.name = ar_strdup(p->ctx->scratch, beta),
                                       .kind = IR_ATTR_FLOAT, .v.f = v[1]});
    return true;
}

static const dsl_rattr *rule_attr(const rw_plan *p, const char *name)
{
    const dsl_replacement *repl = &p->rule->repl;
    for (uint32_t i = 0; i < repl->nattrs; i++)
        if (repl->attrs[i].kind != DSL_RATTR_INPUT && strcmp(repl->attrs[i].value.name, name) == 0)
            return &repl->attrs[i];
    return NULL;
}

/* The shortest decimal that reads back as the same float32 as v: a float attribute taken from an
 * f32 constant holding 1e-12 prints as 1e-12, not 9.999999960041972e-13 (as ONNX import reads float
 * attributes). v itself when it is no float32 value. */
static double shortest_float32(double v)
{
    float f = (float)v;
    if ((double)f != v || !isfinite(f) || f == 0.0f)
        return v;
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        double d = strtod(buf, NULL);
        if ((float)d == f)
            return d;
    }
    return v;
}

/* `epsilon = @eps`: the attribute takes the value of the captured constant (one element for an INT
 * or FLOAT attribute, every element for a list). */
static bool attr_from_const(rw_plan *p, const dsl_rattr *a, char *why)
{
    ir_value *v = rw_capture_value(p, a->capture);
    int64_t n;
    double *x = v ? rw_const_read(p, v, &n, why) : NULL;
    if (!x)
        return v ? false : rw_why(why, "replacement: '@%s' is not bound", a->capture->name);
    ir_attr out = {.name = a->value.name, .kind = a->value.kind};
    bool list = out.kind == IR_ATTR_INTS || out.kind == IR_ATTR_FLOATS;
    bool ok = list || n == 1;
    if (ok && (out.kind == IR_ATTR_INT || out.kind == IR_ATTR_INTS)) {
        for (int64_t i = 0; i < n; i++)
            ok &= x[i] == (double)(int64_t)x[i];
    }
    if (ok && (v->type->dtype == IR_F32 || v->type->dtype == IR_F16 || v->type->dtype == IR_BF16))
        for (int64_t i = 0; i < n; i++) /* exact in float32: the shortest decimal of that float */
            x[i] = shortest_float32(x[i]);
    if (ok) {
        switch (out.kind) {
        case IR_ATTR_INT: out.v.i = (int64_t)x[0]; break;
        case IR_ATTR_FLOAT: out.v.f = x[0]; break;
        case IR_ATTR_INTS:
            out.v.ints = ar_alloc_array(p->ctx->scratch, (size_t)n, sizeof *out.v.ints);
            for (int64_t i = 0; i < n; i++)
                out.v.ints[i] = (int64_t)x[i];
            out.count = (uint32_t)n;
            break;
        case IR_ATTR_FLOATS:
            out.v.floats = ar_alloc_array(p->ctx->scratch, (size_t)n, sizeof *out.v.floats);
            memcpy(out.v.floats, x, (size_t)n * sizeof *x);
            out.count = (uint32_t)n;
            break;
        case IR_ATTR_STRING: ok = false; break;
        }
    }
    free(x);
    if (!ok)
        return rw_why(why, "replacement: '%s' cannot give %s its attribute '%s' (one %s value)",
                      v->name, ir_op_name(p->rule->repl.op), a->value.name,
                      out.kind == IR_ATTR_INT ? "integer" : "number");
    rw_plan_set_attr(p, &out);
    return true;
}

bool rw_build_attrs(rw_plan *p, char *why)
{
    const dsl_replacement *repl = &p->rule->repl;
    bool has_act = ir_op_attr_schema(repl->op, "act") != NULL;
    const dsl_rattr *act = rule_attr(p, "act");
    ir_node *root = p->roots.items[0];
    bool root_act = has_act && !act && p->rule->nroots == 1 && ir_act_is_op(root->op);
    carry_attrs(p, has_act && !act && !root_act);
    if (root_act && !act_from_node(p, root, "act", why))
        return false;
    for (uint32_t i = 0; i < repl->nattrs; i++) {
        const dsl_rattr *a = &repl->attrs[i];
        ir_node *n = rw_capture_node(p, a->capture);
        switch (a->kind) {
        case DSL_RATTR_LITERAL: rw_plan_set_attr(p, &a->value); break;
        case DSL_RATTR_CONST:
            if (!attr_from_const(p, a, why))
                return false;
            break;
        case DSL_RATTR_ACT:
            if (n && !act_from_node(p, n, a->value.name, why))
                return false;
            break;
        case DSL_RATTR_OP_NAME:
            if (n)
                rw_plan_set_attr(p, &(ir_attr){.name = a->value.name, .kind = IR_ATTR_STRING,
                                               .v.s = ir_op_name(n->op)});
            break;
        case DSL_RATTR_INPUT: break; /* a port: the inputs took it */
        }
    }
    return true;
}

/* Attributes the target's schema does not declare, or of another kind, are refused (INT widens
 * to FLOAT). */
bool rw_check_attrs(rw_plan *p, char *why)
{
    for (size_t i = 0; i < p->attrs.len; i++) {
        ir_attr *a = &p->attrs.items[i];
        const ir_attr_schema *s = ir_op_attr_schema(p->rule->repl.op, a->name);
        if (!s)
            return rw_why(why, "replacement: %s has no attribute '%s'", ir_op_name(p->rule->repl.op),
                          a->name);
        if (a->kind == IR_ATTR_INT && s->kind == IR_ATTR_FLOAT) {
            a->kind = IR_ATTR_FLOAT;
            a->v.f = (double)a->v.i;
        }
        if (a->kind != s->kind)
            return rw_why(why, "replacement: attribute '%s' of %s has the wrong kind", a->name,
                          ir_op_name(p->rule->repl.op));
        a->name = s->name; /* the same text: the catalog's string, found by address from now on */
    }
    return true;
}
