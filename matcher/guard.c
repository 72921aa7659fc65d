/* Inline attribute equality and `where` guards, evaluated on a match's bindings.
 *
 * Guards are three-valued: what cannot be known from the graph (a symbolic or unknown dim, an
 * unknown rank, an attribute of a node the match did not bind) is `unknown`, comparisons with it
 * are unknown, `!`, `&&` and `||` follow Kleene's logic, and a guard holds only when it is true.
 * So a guard never lets a fusion through on a shape it could not check. */
#include "matcher/internal.h"

#include "base/half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- attributes ---------------------------------------------------------------------------------- */

/* Floats compare within a relative 1e-6: an attribute that came from ONNX went through float32. */
static bool float_near(double x, double y)
{
    if (x == y)
        return true;
    double scale = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    return fabs(x - y) <= 1e-6 * scale;
}

static double attr_number(const ir_attr *a, uint32_t i)
{
    switch (a->kind) {
    case IR_ATTR_INT: return (double)a->v.i;
    case IR_ATTR_FLOAT: return a->v.f;
    case IR_ATTR_INTS: return (double)a->v.ints[i];
    case IR_ATTR_FLOATS: return a->v.floats[i];
    case IR_ATTR_STRING: break;
    }
    return NAN;
}

static bool attr_is_list(const ir_attr *a)
{
    return a->kind == IR_ATTR_INTS || a->kind == IR_ATTR_FLOATS;
}

/* The node's attribute, or the catalog default as an attribute in *tmp; NULL when neither. */
static const ir_attr *attr_or_default(const ir_node *n, const char *name, ir_attr *tmp)
{
    const ir_attr *have = ir_node_attr(n, name);
    if (have)
        return have;
    const ir_attr_schema *s = ir_op_attr_schema(n->op, name);
    if (!s || s->required)
        return NULL;
    *tmp = (ir_attr){.name = s->name, .kind = s->kind};
    switch (s->kind) {
    case IR_ATTR_INT: tmp->v.i = s->i; break;
    case IR_ATTR_FLOAT: tmp->v.f = s->f; break;
    case IR_ATTR_STRING: tmp->v.s = s->s ? s->s : ""; break;
    case IR_ATTR_INTS:
        tmp->v.ints = (int64_t *)s->ints;
        tmp->count = s->nints;
        break;
    case IR_ATTR_FLOATS: tmp->count = 0; break;
    }
    return tmp;
}

bool mt_attr_equal(const ir_node *n, const ir_attr *want)
{
    ir_attr tmp;
    const ir_attr *have = attr_or_default(n, want->name, &tmp);
    if (!have)
        return false;
    if (have->kind == IR_ATTR_STRING || want->kind == IR_ATTR_STRING)
        return have->kind == want->kind && strcmp(have->v.s, want->v.s) == 0;
    if (attr_is_list(have) != attr_is_list(want))
        return false;
    uint32_t count = attr_is_list(have) ? have->count : 1;
    if (attr_is_list(want) && want->count != count)
        return false;
    bool exact = have->kind != IR_ATTR_FLOAT && have->kind != IR_ATTR_FLOATS &&
                 want->kind != IR_ATTR_FLOAT && want->kind != IR_ATTR_FLOATS;
    for (uint32_t i = 0; i < count; i++) {
        if (exact ? (have->kind == IR_ATTR_INTS ? have->v.ints[i] : have->v.i) !=
                        (want->kind == IR_ATTR_INTS ? want->v.ints[i] : want->v.i)
                  : !float_near(attr_number(have, i), attr_number(want, i)))
            return false;
    }
    return true;
}

/* ---- guard values -------------------------------------------------------------------------------- */

enum { GV_MAX_LIST = 32 };

typedef enum {
    GV_UNKNOWN, /* cannot be known from the graph */
    GV_BOOL,
    GV_INT,
    GV_SYMBOL,  /* a symbolic dim: equal to itself, otherwise unknown */
    GV_FLOAT,
    GV_STRING,
    GV_DTYPE,
    GV_LAYOUT,
    GV_OP,
    GV_LIST,    /* a shape, an INTS or FLOATS attribute, a list literal: items as dims or floats */
    GV_VALUE,   /* a capture, as a function argument */
} gv_kind;

typedef struct {
    gv_kind kind;
    bool b;
    int64_t i;           /* INT; SYMBOL: the dim encoding; DTYPE, LAYOUT, OP: the enum */
    double f;
    const char *s;
    bool floats;         /* LIST: items are in fl[] rather than dims[] */
    uint32_t count;
    int64_t dims[GV_MAX_LIST]; /* LIST of ints: dim encodings (static, symbol or unknown) */
    double fl[GV_MAX_LIST];
    const ir_value *value; /* VALUE */
    const ir_node *node;
} gval;

typedef struct {
    const dsl_rule *rule;
    ir_graph *g;
    ir_value *const *values;
    ir_node *const *nodes;
} guard_env;

static gval unknown(void)
{
    return (gval){.kind = GV_UNKNOWN};
}

static gval boolean(bool b)
{
    return (gval){.kind = GV_BOOL, .b = b};
}

static gval integer(int64_t i)
{
    return (gval){.kind = GV_INT, .i = i};
}

/* A dim as a guard value. */
static gval dim_value(int64_t d)
{
    if (ir_dim_is_static(d))
        return integer(d);
    if (ir_dim_is_symbol(d))
        return (gval){.kind = GV_SYMBOL, .i = d};
    return unknown();
}

static bool is_number(const gval *v)
{
    return v->kind == GV_INT || v->kind == GV_FLOAT;
}

static double number(const gval *v)
{
    return v->kind == GV_INT ? (double)v->i : v->f;
}

static gval eval(const guard_env *env, const dsl_expr *e);

/* ---- functions ---- */

static gval shape_of(const ir_value *v)
{
    if (v->type->rank < 0 || v->type->rank > GV_MAX_LIST)
        return unknown();
    gval r = {.kind = GV_LIST, .count = (uint32_t)v->type->rank};
    memcpy(r.dims, v->type->dims, (size_t)v->type->rank * sizeof r.dims[0]);
    return r;
}

static gval attr_value(const ir_node *n, const char *name)
{
    ir_attr tmp;
    const ir_attr *a = attr_or_default(n, name, &tmp);
    if (!a)
        return unknown();
    gval r = {.kind = GV_LIST};
    switch (a->kind) {
    case IR_ATTR_INT: return integer(a->v.i);
    case IR_ATTR_FLOAT: return (gval){.kind = GV_FLOAT, .f = a->v.f};
    case IR_ATTR_STRING: return (gval){.kind = GV_STRING, .s = a->v.s};
    case IR_ATTR_INTS:
        if (a->count > GV_MAX_LIST)
            return unknown();
        r.count = a->count;
        for (uint32_t i = 0; i < a->count; i++)
            r.dims[i] = a->v.ints[i];
        return r;
    case IR_ATTR_FLOATS:
        if (a->count > GV_MAX_LIST)
            return unknown();
        r.floats = true;
        r.count = a->count;
        memcpy(r.fl, a->v.floats, a->count * sizeof r.fl[0]);
        return r;
    }
    return unknown();
}

/* value(@c): the element of a one-element constant; unknown for anything else (or data that
 * cannot be read). */
static gval const_value(const guard_env *env, ir_value *v)
{
    int64_t n;
    if (v->kind != IR_VALUE_CONST || !ir_type_numel(v->type, &n) || n != 1)
        return unknown();
    const void *data = ir_const_data_or_null(env->g, v);
    if (!data)
        return unknown();
    double x;
    switch (v->type->dtype) {
    case IR_F32: x = *(const float *)data; break;
    case IR_F16: x = f16_to_f32(*(const uint16_t *)data); break;
    case IR_BF16: x = bf16_to_f32(*(const uint16_t *)data); break;
    case IR_F64: x = *(const double *)data; break;
    case IR_I16: x = *(const int16_t *)data; break;
    case IR_U16: x = *(const uint16_t *)data; break;
    case IR_U32: x = *(const uint32_t *)data; break;
    case IR_U64: x = (double)*(const uint64_t *)data; break;
    case IR_I8: x = *(const int8_t *)data; break;
    case IR_U8:
    case IR_BOOL: x = *(const uint8_t *)data; break;
    case IR_I32: x = *(const int32_t *)data; break;
    case IR_I64: x = (double)*(const int64_t *)data; break;
    default: return unknown();
    }
    return isfinite(x) ? (gval){.kind = GV_FLOAT, .f = x} : unknown();
}

static gval compare(dsl_operator op, const gval *a, const gval *b);

/* all(L op x) and any(L op x): the comparison with each element of the list (on either side),
 * in Kleene's logic; all() of an empty list is true, any() false. */
static gval each(const guard_env *env, const dsl_expr *e)
{
    const dsl_expr *cmp = e->args[0];
    gval a = eval(env, cmp->args[0]), b = eval(env, cmp->args[1]);
    bool list_left = a.kind == GV_LIST;
    const gval *list = list_left ? &a : &b, *other = list_left ? &b : &a;
    if (list->kind != GV_LIST || !is_number(other))
        return unknown();
    bool want = e->fn == DSL_FN_ANY, unsure = false;
    for (uint32_t i = 0; i < list->count; i++) {
        gval item = list->floats ? (gval){.kind = GV_FLOAT, .f = list->fl[i]}
                                 : dim_value(list->dims[i]);
        gval r = list_left ? compare(cmp->op, &item, other) : compare(cmp->op, other, &item);
        if (r.kind != GV_BOOL)
            unsure = true;
        else if (r.b == want)
            return boolean(want); /* any: one true; all: one false */
    }
    return unsure ? unknown() : boolean(!want);
}

static gval call(const guard_env *env, const dsl_expr *e)
{
    if (e->fn == DSL_FN_ALL || e->fn == DSL_FN_ANY)
        return each(env, e);
    gval arg = e->nargs > 0 ? eval(env, e->args[0]) : unknown();
    if (arg.kind != GV_VALUE)
        return unknown();
    const ir_value *v = arg.value;
    const ir_type *t = v->type;
    switch (e->fn) {
    case DSL_FN_SHAPE: return shape_of(v);
    case DSL_FN_RANK: return t->rank >= 0 ? integer(t->rank) : unknown();
    case DSL_FN_DIM: {
        gval i = e->nargs > 1 ? eval(env, e->args[1]) : unknown();
        if (i.kind != GV_INT || t->rank < 0)
            return unknown();
        int64_t k = i.i < 0 ? i.i + t->rank : i.i;
        return k >= 0 && k < t->rank ? dim_value(t->dims[k]) : unknown();
    }
    case DSL_FN_NUMEL: {
        int64_t n;
        return ir_type_numel(t, &n) ? integer(n) : unknown();
    }
    case DSL_FN_DTYPE:
        return t->dtype != IR_DTYPE_UNKNOWN ? (gval){.kind = GV_DTYPE, .i = t->dtype} : unknown();
    case DSL_FN_LAYOUT: return (gval){.kind = GV_LAYOUT, .i = t->layout};
    case DSL_FN_IS_CONST: return boolean(v->kind == IR_VALUE_CONST);
    case DSL_FN_ATTR: return arg.node && e->attr_name ? attr_value(arg.node, e->attr_name) : unknown();
    case DSL_FN_OP: return arg.node ? (gval){.kind = GV_OP, .i = arg.node->op} : unknown();
    case DSL_FN_VALUE: return const_value(env, (ir_value *)v);
    case DSL_FN_IS_OUTPUT: {
        gval n = eval(env, e->args[1]), i = eval(env, e->args[2]);
        if (n.kind != GV_VALUE || !n.node || i.kind != GV_INT)
            return unknown();
        return boolean(i.i >= 0 && i.i < (int64_t)n.node->noutputs &&
                       n.node->outputs[i.i] == v);
    }
    case DSL_FN_CAUSAL_MASK: {
        gval s = eval(env, e->args[1]);
        if (s.kind != GV_VALUE)
            return unknown();
        return boolean(mt_causal_mask(env->g, (ir_value *)v, s.value));
    }
    case DSL_FN_ALL:
    case DSL_FN_ANY:
    case DSL_FN_COUNT: break;
    }
    return unknown();
}

/* ---- comparisons ---- */

/* Equality of two list items (dims or floats): 1 equal, 0 different, -1 unknown. */
static int item_equal(const gval *a, const gval *b, uint32_t i)
{
    if (a->floats || b->floats) {
        double x = a->floats ? a->fl[i] : (double)a->dims[i];
        double y = b->floats ? b->fl[i] : (double)b->dims[i];
        if ((!a->floats && !ir_dim_is_static(a->dims[i])) ||
            (!b->floats && !ir_dim_is_static(b->dims[i])))
            return -1;
        return x == y;
    }
    int64_t x = a->dims[i], y = b->dims[i];
    if (ir_dim_is_static(x) && ir_dim_is_static(y))
        return x == y;
    if (ir_dim_is_symbol(x) && x == y)
        return 1;
    return -1;
}

/* 1 equal, 0 different, -1 unknown. */
static int equal(const gval *a, const gval *b)
{
    if (a->kind == GV_UNKNOWN || b->kind == GV_UNKNOWN)
        return -1;
    if (is_number(a) && is_number(b))
        return number(a) == number(b);
    if (a->kind == GV_SYMBOL || b->kind == GV_SYMBOL)
        return a->kind == b->kind && a->i == b->i ? 1 : -1;
    if (a->kind != b->kind)
        return -1;
    switch (a->kind) {
    case GV_BOOL: return a->b == b->b;
    case GV_STRING: return strcmp(a->s, b->s) == 0;
    case GV_DTYPE:
    case GV_LAYOUT:
    case GV_OP: return a->i == b->i;
    case GV_LIST: {
        if (a->count != b->count)
            return 0;
        int result = 1;
        for (uint32_t i = 0; i < a->count; i++) {
            int eq = item_equal(a, b, i);
            if (eq == 0)
                return 0;
            if (eq < 0)
                result = -1;
        }
        return result;
    }
    default: return -1;
    }
}

static gval from_tristate(int t)
{
    return t < 0 ? unknown() : boolean(t == 1);
}

static gval compare(dsl_operator op, const gval *a, const gval *b)
{
    if (op == DSL_OP_EQ || op == DSL_OP_NE) {
        int eq = equal(a, b);
        return from_tristate(eq < 0 ? -1 : op == DSL_OP_EQ ? eq : !eq);
    }
    if (!is_number(a) || !is_number(b))
        return unknown();
    double x = number(a), y = number(b);
    switch (op) {
    case DSL_OP_LT: return boolean(x < y);
    case DSL_OP_LE: return boolean(x <= y);
    case DSL_OP_GT: return boolean(x > y);
    case DSL_OP_GE: return boolean(x >= y);
    default: return unknown();
    }
}

static gval arithmetic(dsl_operator op, const gval *a, const gval *b)
{
    if (!is_number(a) || !is_number(b))
        return unknown();
    if (a->kind == GV_INT && b->kind == GV_INT) {
        int64_t x = a->i, y = b->i, r;
        switch (op) {
        case DSL_OP_ADD: return __builtin_add_overflow(x, y, &r) ? unknown() : integer(r);
        case DSL_OP_SUB: return __builtin_sub_overflow(x, y, &r) ? unknown() : integer(r);
        case DSL_OP_MUL: return __builtin_mul_overflow(x, y, &r) ? unknown() : integer(r);
        case DSL_OP_DIV: return y == 0 || (x == INT64_MIN && y == -1) ? unknown() : integer(x / y);
        case DSL_OP_MOD: return y == 0 || (x == INT64_MIN && y == -1) ? unknown() : integer(x % y);
        default: return unknown();
        }
    }
    double x = number(a), y = number(b), r;
    switch (op) {
    case DSL_OP_ADD: r = x + y; break;
    case DSL_OP_SUB: r = x - y; break;
    case DSL_OP_MUL: r = x * y; break;
    case DSL_OP_DIV: r = x / y; break;
    case DSL_OP_MOD: r = fmod(x, y); break;
    default: return unknown();
    }
    return isfinite(r) ? (gval){.kind = GV_FLOAT, .f = r} : unknown();
}

/* Kleene's and/or, short-circuiting on a definite answer. */
static gval logic(const guard_env *env, const dsl_expr *e)
{
    bool is_and = e->op == DSL_OP_AND;
    gval a = eval(env, e->args[0]);
    if (a.kind == GV_BOOL && a.b != is_and)
        return a; /* false && ..., true || ... */
    gval b = eval(env, e->args[1]);
    if (b.kind == GV_BOOL && b.b != is_and)
        return b;
    if (a.kind == GV_BOOL && b.kind == GV_BOOL)
        return boolean(is_and);
    return unknown();
}

static gval list(const guard_env *env, const dsl_expr *e)
{
    if (e->nargs > GV_MAX_LIST)
        return unknown();
    gval r = {.kind = GV_LIST, .count = e->nargs};
    for (uint32_t i = 0; i < e->nargs; i++) {
        gval item = eval(env, e->args[i]);
        if (item.kind == GV_FLOAT)
            r.floats = true;
        else if (item.kind != GV_INT)
            return unknown();
        r.dims[i] = item.kind == GV_INT ? item.i : 0;
        r.fl[i] = number(&item);
    }
    if (r.floats)
        for (uint32_t i = 0; i < r.count; i++)
            r.dims[i] = 0;
    return r;
}

static gval eval(const guard_env *env, const dsl_expr *e)
{
    switch (e->kind) {
    case DSL_EXPR_INT: return integer(e->v.i);
    case DSL_EXPR_FLOAT: return (gval){.kind = GV_FLOAT, .f = e->v.f};
    case DSL_EXPR_STRING: return (gval){.kind = GV_STRING, .s = e->v.s};
    case DSL_EXPR_BOOL: return boolean(e->v.b);
    case DSL_EXPR_DTYPE: return (gval){.kind = GV_DTYPE, .i = e->v.dtype};
    case DSL_EXPR_LAYOUT: return (gval){.kind = GV_LAYOUT, .i = e->v.layout};
    case DSL_EXPR_OP: return (gval){.kind = GV_OP, .i = e->v.op};
    case DSL_EXPR_LIST: return list(env, e);
    case DSL_EXPR_CAPTURE: {
        uint32_t id = e->v.capture->node->id;
        if (!env->values[id])
            return unknown();
        return (gval){.kind = GV_VALUE, .value = env->values[id], .node = env->nodes[id]};
    }
    case DSL_EXPR_CALL: return call(env, e);
    case DSL_EXPR_UNARY: {
        gval a = eval(env, e->args[0]);
        if (e->op == DSL_OP_NOT)
            return a.kind == GV_BOOL ? boolean(!a.b) : unknown();
        if (a.kind == GV_INT && a.i != INT64_MIN)
            return integer(-a.i);
        return a.kind == GV_FLOAT ? (gval){.kind = GV_FLOAT, .f = -a.f} : unknown();
    }
    case DSL_EXPR_BINARY: {
        if (e->op == DSL_OP_AND || e->op == DSL_OP_OR)
            return logic(env, e);
        gval a = eval(env, e->args[0]), b = eval(env, e->args[1]);
        if (e->op >= DSL_OP_EQ && e->op <= DSL_OP_GE)
            return compare(e->op, &a, &b);
        return arithmetic(e->op, &a, &b);
    }
    case DSL_EXPR_NAME: break;
    }
    return unknown();
}

bool mt_guard_holds(const dsl_rule *r, ir_graph *g, ir_value *const *values,
                    ir_node *const *nodes)
{
    if (!r->guard)
        return true;
    guard_env env = {r, g, values, nodes};
    gval v = eval(&env, r->guard);
    return v.kind == GV_BOOL && v.b;
}

const dsl_expr *mt_guard_failing(const dsl_rule *r, ir_graph *g, ir_value *const *values,
                                 ir_node *const *nodes)
{
    guard_env env = {r, g, values, nodes};
    const dsl_expr *e = r->guard;
    while (e && e->kind == DSL_EXPR_BINARY && e->op == DSL_OP_AND) {
        gval left = eval(&env, e->args[0]);
        e = left.kind == GV_BOOL && left.b ? e->args[1] : e->args[0];
    }
    return e;
}
