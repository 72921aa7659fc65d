/* Type checking of `where` guards. Every expression gets a type; a mismatch is reported once, and
 * the expressions around it get DSL_TYPE_ERROR so that one mistake gives one message. Names are
 * resolved by what they spell: true/false, a dtype (f16), a layout (NHWC), an op (Relu), or a let
 * binding; the second argument of attr() is an attribute name. */
#include "dsl/sema.h"

#include "base/check.h"
#include "dsl/names.h"

#include <stdarg.h>
#include <string.h>

static const struct {
    const char *name;
    uint32_t nargs;
    const char *summary;
} functions[] = {
#define DSL_FN_ROW(id, name, nargs, summary) {name, nargs, summary},
    DSL_FUNCTIONS(DSL_FN_ROW)
#undef DSL_FN_ROW
};

_Static_assert(sizeof functions / sizeof functions[0] == DSL_FN_COUNT, "one row per function");

const char *dsl_type_name(dsl_type t)
{
    static const char *const names[] = {"an erroneous expression", "a bool", "an int", "a float",
                                        "a string", "a dtype", "a layout", "a shape",
                                        "a list of ints", "a list of floats", "an op",
                                        "a capture"};
    _Static_assert(sizeof names / sizeof names[0] == DSL_TYPE_VALUE + 1, "one name per type");
    return names[t];
}

static const char *operator_text(dsl_operator op)
{
    static const char *const text[] = {"!", "-", "||", "&&", "==", "!=", "<", "<=", ">", ">=",
                                       "+", "-", "*", "/", "%"};
    _Static_assert(sizeof text / sizeof text[0] == DSL_OP_MOD + 1, "one spelling per operator");
    return text[op];
}

static dsl_type check(dsl_rule_check *rc, dsl_expr *e);
static bool numeric(dsl_type t);

static dsl_type fail(dsl_rule_check *rc, const dsl_expr *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void dsl_expr_error(dsl_rule_check *rc, const dsl_expr *e, uint32_t offset, uint32_t len,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(rc->rs->arena, fmt, ap);
    va_end(ap);
    if (!e->src) {
        dsl_rule_error(rc, offset, len, "%s", msg);
    } else {
        dg_error(rc->dg, e->src, offset, len, "%s", msg);
        rc->ok = false;
    }
    for (const dsl_expr *c = e->call; c; c = c->call)
        dg_note(rc->dg, c->src ? c->src : rc->src, c->src_offset, c->src_len,
                "in predicate '%s', called here", c->pred->name);
}

static dsl_type fail(dsl_rule_check *rc, const dsl_expr *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(rc->rs->arena, fmt, ap);
    va_end(ap);
    dsl_expr_error(rc, e, e->src_offset, e->src_len, "%s", msg);
    return DSL_TYPE_ERROR;
}

/* ---- names and captures ---- */

static dsl_type check_name(dsl_rule_check *rc, dsl_expr *e)
{
    const char *s = e->v.s;
    size_t len = strlen(s);
    ir_dtype dt;
    ir_layout layout;
    ir_op op;
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        e->kind = DSL_EXPR_BOOL;
        e->v.b = s[0] == 't';
        return DSL_TYPE_BOOL;
    }
    if (ir_dtype_parse(s, len, &dt)) {
        e->kind = DSL_EXPR_DTYPE;
        e->v.dtype = dt;
        return DSL_TYPE_DTYPE;
    }
    if (ir_layout_parse(s, len, &layout)) {
        e->kind = DSL_EXPR_LAYOUT;
        e->v.layout = layout;
        return DSL_TYPE_LAYOUT;
    }
    if (dsl_lookup_op(s, len, &op)) {
        e->kind = DSL_EXPR_OP;
        e->v.op = op;
        return DSL_TYPE_OP;
    }
    for (size_t i = 0; i < rc->captures.len; i++) {
        dsl_capture *cap = rc->captures.items[i];
        if (cap->is_let && strcmp(cap->name, s) == 0) {
            cap->refs++;
            e->kind = DSL_EXPR_CAPTURE;
            e->v.capture = cap;
            return DSL_TYPE_VALUE;
        }
    }
    for (size_t i = 0; i < rc->captures.len; i++)
        if (strcmp(rc->captures.items[i]->name, s) == 0)
            return fail(rc, e, "unknown name '%s' in a guard; did you mean '@%s'?", s, s);
    dsl_suggest sg;
    dsl_suggest_init(&sg, s, len);
    dsl_suggest_add(&sg, "true");
    dsl_suggest_add(&sg, "false");
    for (int d = IR_DTYPE_UNKNOWN + 1; d < IR_DTYPE_COUNT; d++)
        dsl_suggest_add(&sg, ir_dtype_name((ir_dtype)d));
    for (int l = IR_LAYOUT_NONE + 1; l < IR_LAYOUT_COUNT; l++)
        dsl_suggest_add(&sg, ir_layout_name((ir_layout)l));
    char hint[128];
    return fail(rc, e, "unknown name '%s' in a guard%s", s, dsl_suggest_hint(&sg, hint, sizeof hint));
}

static dsl_type check_capture(dsl_rule_check *rc, dsl_expr *e)
{
    const char *name = e->v.s;
    dsl_capture *cap = dsl_rule_ref_name(rc, name, e->src_offset, e->src_len,
                                         dsl_at_name(rc->rs->arena, name));
    if (!cap)
        return DSL_TYPE_ERROR;
    e->v.capture = cap;
    return DSL_TYPE_VALUE;
}

/* ---- function calls ---- */

/* An argument that must be a capture; when `op` is set, a capture of an op. */
static bool need_capture(dsl_rule_check *rc, const dsl_expr *call, dsl_expr *arg, bool op)
{
    dsl_type t = check(rc, arg);
    if (t == DSL_TYPE_ERROR)
        return false;
    const char *fn = functions[call->fn].name;
    if (t != DSL_TYPE_VALUE) {
        fail(rc, arg, "%s() takes a capture like @x, not %s", fn, dsl_type_name(t));
        return false;
    }
    if (op && arg->v.capture->node->kind != DSL_PAT_OP) {
        fail(rc, arg, "%s() needs a capture of an op, but '@%s' names a value", fn,
             arg->v.capture->name);
        return false;
    }
    return true;
}

static dsl_type attr_type(ir_attr_kind kind)
{
    switch (kind) {
    case IR_ATTR_INT:
        return DSL_TYPE_INT;
    case IR_ATTR_FLOAT:
        return DSL_TYPE_FLOAT;
    case IR_ATTR_STRING:
        return DSL_TYPE_STRING;
    case IR_ATTR_INTS:
        return DSL_TYPE_INTS;
    case IR_ATTR_FLOATS:
        return DSL_TYPE_FLOATS;
    }
    FR_UNREACHABLE();
    return DSL_TYPE_ERROR;
}

/* attr(@n, name): the attribute must exist, with one kind, in every op @n may match. */
static dsl_type check_attr_call(dsl_rule_check *rc, dsl_expr *e)
{
    dsl_expr *node = e->args[0], *name = e->args[1];
    bool node_ok = need_capture(rc, e, node, true);
    if (name->kind != DSL_EXPR_NAME)
        return fail(rc, name, "attr() takes an attribute name, as in attr(@c, group)");
    if (!node_ok)
        return DSL_TYPE_ERROR;
    e->attr_name = name->v.s;
    const dsl_pattern *p = node->v.capture->node;
    const ir_attr_schema *first = NULL;
    for (uint32_t i = 0; i < p->nops; i++) {
        const ir_attr_schema *schema = ir_op_attr_schema(p->ops[i], name->v.s);
        if (!schema) {
            dsl_suggest sg;
            dsl_suggest_init(&sg, name->v.s, strlen(name->v.s));
            const ir_op_info *info = ir_op_info_get(p->ops[i]);
            for (uint32_t k = 0; k < info->nattrs; k++)
                dsl_suggest_add(&sg, info->attrs[k].name);
            char hint[128];
            dsl_expr_error(rc, name, name->src_offset, name->src_len, "%s has no attribute '%s'%s",
                           info->name, name->v.s, dsl_suggest_hint(&sg, hint, sizeof hint));
            return DSL_TYPE_ERROR;
        }
        if (first && first->kind != schema->kind)
            return fail(rc, name, "attribute '%s' has different kinds in the ops '@%s' may match",
                        name->v.s, node->v.capture->name);
        first = schema;
    }
    return first ? attr_type(first->kind) : DSL_TYPE_ERROR;
}

static bool is_list(dsl_type t)
{
    return t == DSL_TYPE_SHAPE || t == DSL_TYPE_INTS || t == DSL_TYPE_FLOATS;
}

static bool is_comparison(dsl_operator op)
{
    return op >= DSL_OP_EQ && op <= DSL_OP_GE;
}

/* all(L == x), any(L < x): the comparison is made with each element of the list, which may stand
 * on either side; the other side is a number. */
static dsl_type check_each(dsl_rule_check *rc, dsl_expr *e)
{
    const char *fn = functions[e->fn].name;
    dsl_expr *cmp = e->args[0];
    if (cmp->kind != DSL_EXPR_BINARY || !is_comparison(cmp->op)) {
        if (cmp->kind == DSL_EXPR_CAPTURE)
            check(rc, cmp); /* it is used: no "never used" after this */
        return fail(rc, cmp, "%s() takes a comparison of a list with a number, as in "
                    "%s(attr(@c, strides) == 1)", fn, fn);
    }
    dsl_type a = check(rc, cmp->args[0]), b = check(rc, cmp->args[1]);
    if (a == DSL_TYPE_ERROR || b == DSL_TYPE_ERROR)
        return DSL_TYPE_ERROR;
    if (!(is_list(a) && numeric(b)) && !(numeric(a) && is_list(b)))
        return fail(rc, cmp, "%s() compares each element of a list with a number, not %s with %s",
                    fn, dsl_type_name(a), dsl_type_name(b));
    cmp->type = DSL_TYPE_BOOL; /* per element */
    return DSL_TYPE_BOOL;
}

static dsl_type check_call(dsl_rule_check *rc, dsl_expr *e)
{
    const char *name = e->v.s;
    int fn = -1;
    for (int i = 0; i < DSL_FN_COUNT; i++)
        if (strcmp(functions[i].name, name) == 0)
            fn = i;
    dsl_type expanded;
    if (fn < 0 && dsl_expand_pred(rc, e, &expanded))
        return expanded;
    if (fn < 0) {
        dsl_suggest sg;
        dsl_suggest_init(&sg, name, strlen(name));
        for (int i = 0; i < DSL_FN_COUNT; i++)
            dsl_suggest_add(&sg, functions[i].name);
        dsl_suggest_preds(rc, &sg);
        char hint[128];
        dsl_expr_error(rc, e, e->src_offset, (uint32_t)strlen(name), "unknown function '%s'%s",
                       name, dsl_suggest_hint(&sg, hint, sizeof hint));
        return DSL_TYPE_ERROR;
    }
    e->fn = (dsl_function)fn;
    if (e->nargs != functions[fn].nargs) {
        dsl_expr_error(rc, e, e->src_offset, e->src_len,
                       "%s() takes %u argument%s, but %u %s given", name, functions[fn].nargs,
                       functions[fn].nargs == 1 ? "" : "s", e->nargs, e->nargs == 1 ? "is" : "are");
        for (uint32_t i = 0; i < e->nargs; i++) /* they are used: no "never used" after this */
            if (e->args[i]->kind == DSL_EXPR_CAPTURE)
                check(rc, e->args[i]);
        return DSL_TYPE_ERROR;
    }
    switch (e->fn) {
    case DSL_FN_ATTR:
        return check_attr_call(rc, e);
    case DSL_FN_ALL:
    case DSL_FN_ANY:
        return check_each(rc, e);
    case DSL_FN_OP:
        return need_capture(rc, e, e->args[0], true) ? DSL_TYPE_OP : DSL_TYPE_ERROR;
    case DSL_FN_IS_OUTPUT: {
        bool ok = need_capture(rc, e, e->args[0], false);
        ok = need_capture(rc, e, e->args[1], true) && ok;
        dsl_type t = check(rc, e->args[2]);
        if (t != DSL_TYPE_ERROR && t != DSL_TYPE_INT)
            return fail(rc, e->args[2], "is_output() takes an int output index, not %s",
                        dsl_type_name(t));
        return ok && t == DSL_TYPE_INT ? DSL_TYPE_BOOL : DSL_TYPE_ERROR;
    }
    case DSL_FN_CAUSAL_MASK: {
        bool ok = need_capture(rc, e, e->args[0], false);
        ok = need_capture(rc, e, e->args[1], false) && ok;
        return ok ? DSL_TYPE_BOOL : DSL_TYPE_ERROR;
    }
    case DSL_FN_DIM: {
        bool ok = need_capture(rc, e, e->args[0], false);
        dsl_type t = check(rc, e->args[1]);
        if (t != DSL_TYPE_ERROR && t != DSL_TYPE_INT)
            return fail(rc, e->args[1], "dim() takes an int axis, not %s", dsl_type_name(t));
        return ok && t == DSL_TYPE_INT ? DSL_TYPE_INT : DSL_TYPE_ERROR;
    }
    default:
        break;
    }
    if (!need_capture(rc, e, e->args[0], false))
        return DSL_TYPE_ERROR;
    static const dsl_type results[] = {
        [DSL_FN_SHAPE] = DSL_TYPE_SHAPE, [DSL_FN_RANK] = DSL_TYPE_INT,
        [DSL_FN_NUMEL] = DSL_TYPE_INT,   [DSL_FN_DTYPE] = DSL_TYPE_DTYPE,
        [DSL_FN_LAYOUT] = DSL_TYPE_LAYOUT, [DSL_FN_IS_CONST] = DSL_TYPE_BOOL,
        [DSL_FN_VALUE] = DSL_TYPE_FLOAT,
    };
    return results[e->fn];
}

/* ---- operators ---- */

static bool numeric(dsl_type t)
{
    return t == DSL_TYPE_INT || t == DSL_TYPE_FLOAT;
}

static bool comparable(dsl_type a, dsl_type b)
{
    if (a == b)
        return a != DSL_TYPE_VALUE;
    if (numeric(a) && numeric(b))
        return true;
    return (a == DSL_TYPE_SHAPE && b == DSL_TYPE_INTS) || (a == DSL_TYPE_INTS && b == DSL_TYPE_SHAPE);
}

static dsl_type check_list(dsl_rule_check *rc, dsl_expr *e)
{
    dsl_type result = DSL_TYPE_INTS;
    for (uint32_t i = 0; i < e->nargs; i++) {
        dsl_type t = check(rc, e->args[i]);
        if (t == DSL_TYPE_ERROR)
            return DSL_TYPE_ERROR;
        if (!numeric(t))
            return fail(rc, e->args[i], "a list holds numbers, not %s", dsl_type_name(t));
        if (t == DSL_TYPE_FLOAT)
            result = DSL_TYPE_FLOATS;
    }
    return result;
}

static dsl_type check_unary(dsl_rule_check *rc, dsl_expr *e)
{
    dsl_type t = check(rc, e->args[0]);
    if (t == DSL_TYPE_ERROR)
        return t;
    if (e->op == DSL_OP_NOT)
        return t == DSL_TYPE_BOOL ? t : fail(rc, e, "'!' needs a bool, not %s", dsl_type_name(t));
    return numeric(t) ? t : fail(rc, e, "'-' needs a number, not %s", dsl_type_name(t));
}

static dsl_type check_binary(dsl_rule_check *rc, dsl_expr *e)
{
    dsl_type a = check(rc, e->args[0]), b = check(rc, e->args[1]);
    if (a == DSL_TYPE_ERROR || b == DSL_TYPE_ERROR)
        return DSL_TYPE_ERROR;
    const char *op = operator_text(e->op);
    switch (e->op) {
    case DSL_OP_OR:
    case DSL_OP_AND:
        if (a != DSL_TYPE_BOOL || b != DSL_TYPE_BOOL)
            return fail(rc, e, "'%s' needs bools, not %s",
                        op, dsl_type_name(a != DSL_TYPE_BOOL ? a : b));
        return DSL_TYPE_BOOL;
    case DSL_OP_EQ:
    case DSL_OP_NE:
        if (!comparable(a, b))
            return fail(rc, e, "'%s' cannot compare %s with %s", op, dsl_type_name(a),
                        dsl_type_name(b));
        return DSL_TYPE_BOOL;
    case DSL_OP_LT:
    case DSL_OP_LE:
    case DSL_OP_GT:
    case DSL_OP_GE:
        if (!numeric(a) || !numeric(b))
            return fail(rc, e, "'%s' needs numbers, not %s", op, dsl_type_name(numeric(a) ? b : a));
        return DSL_TYPE_BOOL;
    case DSL_OP_MOD:
        if (a != DSL_TYPE_INT || b != DSL_TYPE_INT)
            return fail(rc, e, "'%s' needs ints, not %s", op, dsl_type_name(a != DSL_TYPE_INT ? a : b));
        break;
    default:
        if (!numeric(a) || !numeric(b))
            return fail(rc, e, "'%s' needs numbers, not %s", op, dsl_type_name(numeric(a) ? b : a));
        break;
    }
    const dsl_expr *divisor = e->args[1];
    if ((e->op == DSL_OP_DIV || e->op == DSL_OP_MOD) && divisor->kind == DSL_EXPR_INT &&
        divisor->v.i == 0)
        return fail(rc, divisor, "division by zero");
    return a == DSL_TYPE_FLOAT || b == DSL_TYPE_FLOAT ? DSL_TYPE_FLOAT : DSL_TYPE_INT;
}

static dsl_type check(dsl_rule_check *rc, dsl_expr *e)
{
    dsl_type t = DSL_TYPE_ERROR;
    switch (e->kind) {
    case DSL_EXPR_INT:
        t = DSL_TYPE_INT;
        break;
    case DSL_EXPR_FLOAT:
        t = DSL_TYPE_FLOAT;
        break;
    case DSL_EXPR_STRING:
        t = DSL_TYPE_STRING;
        break;
    case DSL_EXPR_NAME:
        t = check_name(rc, e);
        break;
    case DSL_EXPR_CAPTURE:
        t = check_capture(rc, e);
        break;
    case DSL_EXPR_CALL:
        t = check_call(rc, e);
        break;
    case DSL_EXPR_LIST:
        t = check_list(rc, e);
        break;
    case DSL_EXPR_UNARY:
        t = check_unary(rc, e);
        break;
    case DSL_EXPR_BINARY:
        t = check_binary(rc, e);
        break;
    case DSL_EXPR_BOOL:
    case DSL_EXPR_DTYPE:
    case DSL_EXPR_LAYOUT:
    case DSL_EXPR_OP:
        FR_UNREACHABLE(); /* only the checks create these */
    }
    e->type = t;
    return t;
}

dsl_type dsl_check_expr(dsl_rule_check *rc, dsl_expr *e)
{
    return check(rc, e);
}

void dsl_check_guard(dsl_rule_check *rc)
{
    dsl_expr *guard = rc->rule->guard;
    dsl_type t = check(rc, guard);
    if (t != DSL_TYPE_ERROR && t != DSL_TYPE_BOOL)
        fail(rc, guard, "a where guard must be a bool, not %s", dsl_type_name(t));
}
