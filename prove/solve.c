/* Choosing constants and shapes the guard can accept. A guard like
 *
 *     value(@h1) * 2 == dim(@x, -1) && value(@e2) >= dim(@x, -1) && value(@r) > 0.7071067 && ...
 *
 * is read as constraints on each constant: every comparison with one side linear in value(@c)
 * (a * value(@c) + b) and the other side computable from what the candidate has built so far gives
 * an equality, an exclusion, a lower or an upper bound. A value is then drawn across the whole
 * range they leave (an equality's value; else uniform between two bounds, near or far from one
 * bound, or of either sign and magnitude 0.1..10 when only `!=` constrains it). Likewise `shape(@n) == shape(@y)` or `shape(@n) == [...]`
 * gives a shape. The matcher evaluates the guard for real afterwards: this only makes instances
 * likely, so it may over-approximate (`||` branches all count). */
#include "prove/internal.h"

#include <math.h>

/* The value a pattern node stands for in the candidate, or NULL when not built yet. */
static const ir_value *bound(const pv_gen *gen, const dsl_expr *e)
{
    if (!e || e->kind != DSL_EXPR_CAPTURE)
        return NULL;
    return gen->values[e->v.capture->node->id];
}

/* One element of a one-element literal constant. */
static bool const_scalar(const ir_value *v, double *out)
{
    if (!v || v->kind != IR_VALUE_CONST || v->konst->kind != IR_CONST_LITERAL ||
        v->konst->literal_count != 1)
        return false;
    *out = v->konst->literal[0];
    return true;
}

/* Evaluates a numeric expression over the built values; false when it reads something unbuilt or
 * unknown. */
static bool eval(const pv_gen *gen, const dsl_expr *e, double *out)
{
    double a, b;
    const ir_value *v;
    switch (e->kind) {
    case DSL_EXPR_INT: *out = (double)e->v.i; return true;
    case DSL_EXPR_FLOAT: *out = e->v.f; return true;
    case DSL_EXPR_CALL:
        if (!(v = bound(gen, e->args[0])))
            return false;
        if (e->fn == DSL_FN_VALUE)
            return const_scalar(v, out);
        if (v->type->rank < 0)
            return false;
        if (e->fn == DSL_FN_RANK) {
            *out = v->type->rank;
            return true;
        }
        if (e->fn == DSL_FN_NUMEL) {
            int64_t n;
            return ir_type_numel(v->type, &n) && (*out = (double)n, true);
        }
        if (e->fn == DSL_FN_DIM && eval(gen, e->args[1], &a)) {
            int64_t i = (int64_t)a, rank = v->type->rank;
            if (i < 0)
                i += rank;
            if (i < 0 || i >= rank || !ir_dim_is_static(v->type->dims[i]))
                return false;
            *out = (double)v->type->dims[i];
            return true;
        }
        return false;
    case DSL_EXPR_UNARY:
        if (e->op != DSL_OP_NEG || !eval(gen, e->args[0], &a))
            return false;
        *out = -a;
        return true;
    case DSL_EXPR_BINARY:
        if (!eval(gen, e->args[0], &a) || !eval(gen, e->args[1], &b))
            return false;
        switch (e->op) {
        case DSL_OP_ADD: *out = a + b; return true;
        case DSL_OP_SUB: *out = a - b; return true;
        case DSL_OP_MUL: *out = a * b; return true;
        case DSL_OP_DIV: return b != 0 && (*out = a / b, true);
        default: return false;
        }
    default: return false;
    }
}

/* Whether e is a * value(@node) + b with a != 0 (a and b computable now). */
static bool linear(const pv_gen *gen, const dsl_expr *e, const dsl_pattern *node, double *a,
                   double *b)
{
    double k, a0, b0;
    if (e->kind == DSL_EXPR_CALL && e->fn == DSL_FN_VALUE && e->args[0]->kind == DSL_EXPR_CAPTURE &&
        e->args[0]->v.capture->node == node) {
        *a = 1, *b = 0;
        return true;
    }
    if (e->kind == DSL_EXPR_UNARY && e->op == DSL_OP_NEG && linear(gen, e->args[0], node, a, b)) {
        *a = -*a, *b = -*b;
        return true;
    }
    if (e->kind != DSL_EXPR_BINARY)
        return false;
    for (int side = 0; side < 2; side++) {
        const dsl_expr *x = e->args[side], *y = e->args[1 - side];
        if (!linear(gen, x, node, &a0, &b0) || !eval(gen, y, &k))
            continue;
        switch (e->op) {
        case DSL_OP_ADD: *a = a0, *b = b0 + k; return true;
        case DSL_OP_SUB: *a = side ? -a0 : a0, *b = side ? k - b0 : b0 - k; return true;
        case DSL_OP_MUL: *a = a0 * k, *b = b0 * k; return k != 0;
        case DSL_OP_DIV: *a = a0 / k, *b = b0 / k; return side == 0 && k != 0;
        default: return false;
        }
    }
    return false;
}

enum { MAX_EQ = 8 };

typedef struct {
    double eq[MAX_EQ];
    uint32_t neq;
    double ne[MAX_EQ]; /* values `!=` excludes */
    uint32_t nne;
    double lo, hi; /* -inf / +inf when unbounded */
    bool lo_strict, hi_strict;
} constraints;

static dsl_operator mirror(dsl_operator op)
{
    switch (op) {
    case DSL_OP_LT: return DSL_OP_GT;
    case DSL_OP_LE: return DSL_OP_GE;
    case DSL_OP_GT: return DSL_OP_LT;
    case DSL_OP_GE: return DSL_OP_LE;
    default: return op;
    }
}

/* `lhs op rhs` with lhs = a * v + b: the constraint it puts on v. */
static void add_constraint(constraints *c, dsl_operator op, double a, double b, double rhs)
{
    double v = (rhs - b) / a;
    if (a < 0)
        op = mirror(op);
    switch (op) {
    case DSL_OP_EQ:
        if (c->neq < MAX_EQ)
            c->eq[c->neq++] = v;
        break;
    case DSL_OP_NE:
        if (c->nne < MAX_EQ)
            c->ne[c->nne++] = v;
        break;
    case DSL_OP_GT:
    case DSL_OP_GE:
        if (v > c->lo)
            c->lo = v, c->lo_strict = op == DSL_OP_GT;
        break;
    case DSL_OP_LT:
    case DSL_OP_LE:
        if (v < c->hi)
            c->hi = v, c->hi_strict = op == DSL_OP_LT;
        break;
    default: break;
    }
}

static bool is_comparison(dsl_operator op)
{
    return op == DSL_OP_EQ || op == DSL_OP_NE || op == DSL_OP_LT || op == DSL_OP_LE ||
           op == DSL_OP_GT || op == DSL_OP_GE;
}

static void collect(const pv_gen *gen, const dsl_expr *e, const dsl_pattern *node, constraints *c)
{
    if (!e)
        return;
    double a, b, k;
    if (e->kind == DSL_EXPR_BINARY && is_comparison(e->op)) {
        if (linear(gen, e->args[0], node, &a, &b) && eval(gen, e->args[1], &k))
            add_constraint(c, e->op, a, b, k);
        else if (linear(gen, e->args[1], node, &a, &b) && eval(gen, e->args[0], &k))
            add_constraint(c, mirror(e->op), a, b, k);
        return;
    }
    if (e->kind == DSL_EXPR_BINARY || e->kind == DSL_EXPR_UNARY)
        for (uint32_t i = 0; i < e->nargs; i++)
            collect(gen, e->args[i], node, c);
}

static bool excluded(const constraints *c, double v)
{
    for (uint32_t i = 0; i < c->nne; i++)
        if (v == c->ne[i])
            return true;
    return false;
}

static double round_to(double v, bool integral)
{
    return integral ? round(v) : round(v * 1000) / 1000;
}

/* A distance from a one-sided bound: near it (a tenth of its size) or far (0.5 to 10 times its
 * size, 0.5 to 10 away from a bound at 0), so that a guard `value(@a) > 0` gets a above 1 more
 * often than below. */
static double away(pv_rng *rng, double bound)
{
    if (pv_rng_chance(rng, 0.2))
        return 0.1 * (fabs(bound) + 0.1);
    return (fabs(bound) + 1) * pow(10, pv_rng_uniform(rng, -0.3, 1));
}

bool pv_solve_value(const pv_gen *gen, const dsl_pattern *node, ir_dtype dtype, double *out)
{
    constraints c = {.lo = -INFINITY, .hi = INFINITY};
    collect(gen, gen->facts->rule->guard, node, &c);
    bool integral = !ir_dtype_is_float(dtype);
    pv_rng *rng = gen->rng;
    double v;
    if (c.neq) {
        *out = integral ? round(c.eq[pv_rng_below(rng, c.neq)]) : c.eq[pv_rng_below(rng, c.neq)];
        return true;
    }
    if (!isfinite(c.lo) && !isfinite(c.hi) && !c.nne)
        return false;
    /* Across the whole allowed range, not only at one point: a rule wrong for part of the range
     * its guard admits (a negative scale behind `!= 0`, a slope above 1 behind `> 0`) must meet
     * that part. Drawn again a few times when it lands on an excluded or a boundary value. */
    for (int tries = 0; tries < 8; tries++) {
        if (isfinite(c.lo) && isfinite(c.hi)) {
            v = pv_rng_chance(rng, 0.3) ? (c.lo + c.hi) / 2 : pv_rng_uniform(rng, c.lo, c.hi);
            if (!integral && c.hi - c.lo < 0.01)
                v = round(v * 1e9) / 1e9; /* a tight range: keep its precision */
            else
                v = round_to(v, integral);
        } else if (isfinite(c.lo)) {
            bool at = !c.lo_strict && pv_rng_chance(rng, 0.3);
            v = at ? c.lo : round_to(c.lo + away(rng, c.lo), integral);
            if (integral && c.lo_strict && v <= c.lo)
                v = c.lo + 1;
        } else if (isfinite(c.hi)) {
            bool at = !c.hi_strict && pv_rng_chance(rng, 0.3);
            v = at ? c.hi : round_to(c.hi - away(rng, c.hi), integral);
            if (integral && c.hi_strict && v >= c.hi)
                v = c.hi - 1;
        } else {
            /* only exclusions: both signs, small and large */
            v = round_to((pv_rng_chance(rng, 0.5) ? -1 : 1) * pow(10, pv_rng_uniform(rng, -1, 1)),
                         integral);
        }
        bool inside =
            (v > c.lo || (!c.lo_strict && v == c.lo)) && (v < c.hi || (!c.hi_strict && v == c.hi));
        if (inside && !excluded(&c, v)) {
            *out = v;
            return true;
        }
    }
    /* the old choice: the bound, stepped inside when strict */
    if (isfinite(c.lo) && isfinite(c.hi))
        *out = (c.lo + c.hi) / 2;
    else if (isfinite(c.lo))
        *out = c.lo + (c.lo_strict ? (integral ? 1 : fabs(c.lo) * 0.1 + 0.1) : 0);
    else if (isfinite(c.hi))
        *out = c.hi - (c.hi_strict ? (integral ? 1 : fabs(c.hi) * 0.1 + 0.1) : 0);
    else
        *out = c.ne[0] + 1;
    if (integral)
        *out = round(*out);
    return true;
}

/* ---- shapes ---- */

/* Whether e is shape(@node). */
static bool is_shape_of(const dsl_expr *e, const dsl_pattern *node)
{
    return e->kind == DSL_EXPR_CALL && e->fn == DSL_FN_SHAPE &&
           e->args[0]->kind == DSL_EXPR_CAPTURE && e->args[0]->v.capture->node == node;
}

/* The shape `other` denotes, if it is computable now: shape(@y) of a built value, or a list of
 * computable non-negative integers. */
static bool shape_of(const pv_gen *gen, const dsl_expr *other, ir_type *out)
{
    if (other->kind == DSL_EXPR_CALL && other->fn == DSL_FN_SHAPE) {
        const ir_value *v = bound(gen, other->args[0]);
        if (!v || !ir_type_is_static(v->type))
            return false;
        *out = *v->type;
        return true;
    }
    if (other->kind != DSL_EXPR_LIST || other->nargs > IR_MAX_RANK)
        return false;
    *out = (ir_type){.dtype = IR_F32, .rank = (int8_t)other->nargs};
    for (uint32_t i = 0; i < other->nargs; i++) {
        double d;
        if (!eval(gen, other->args[i], &d) || d < 0 || d != floor(d))
            return false;
        out->dims[i] = (int64_t)d;
    }
    return true;
}

static void collect_shapes(const pv_gen *gen, const dsl_expr *e, const dsl_pattern *node,
                           ir_type *found, uint32_t *n, uint32_t cap)
{
    if (!e)
        return;
    if (e->kind == DSL_EXPR_BINARY && e->op == DSL_OP_EQ) {
        for (int side = 0; side < 2 && *n < cap; side++)
            if (is_shape_of(e->args[side], node) && shape_of(gen, e->args[1 - side], &found[*n]))
                (*n)++;
        return;
    }
    if (e->kind == DSL_EXPR_BINARY || e->kind == DSL_EXPR_UNARY)
        for (uint32_t i = 0; i < e->nargs; i++)
            collect_shapes(gen, e->args[i], node, found, n, cap);
}

bool pv_solve_shape(const pv_gen *gen, const dsl_pattern *node, ir_type *out)
{
    ir_type found[MAX_EQ];
    uint32_t n = 0;
    collect_shapes(gen, gen->facts->rule->guard, node, found, &n, MAX_EQ);
    if (!n)
        return false;
    *out = found[pv_rng_below(gen->rng, n)];
    return true;
}

/* ---- dims ---- */

/* `dim(@node, k) == e` with k and e computable: dim k of t becomes e (t's rank must
 * hold k). Comparisons inside `||` count too: an over-approximation, like the rest. */
static void collect_dims(const pv_gen *gen, const dsl_expr *e, const dsl_pattern *node, ir_type *t)
{
    if (!e)
        return;
    if (e->kind == DSL_EXPR_BINARY && e->op == DSL_OP_EQ) {
        for (int side = 0; side < 2; side++) {
            const dsl_expr *call = e->args[side];
            double k, v;
            if (call->kind != DSL_EXPR_CALL || call->fn != DSL_FN_DIM ||
                call->args[0]->kind != DSL_EXPR_CAPTURE || call->args[0]->v.capture->node != node ||
                !eval(gen, call->args[1], &k) || !eval(gen, e->args[1 - side], &v) || v < 1 ||
                v != floor(v))
                continue;
            int64_t axis = k < 0 ? (int64_t)k + t->rank : (int64_t)k;
            if (axis >= 0 && axis < t->rank)
                t->dims[axis] = (int64_t)v;
        }
        return;
    }
    if (e->kind == DSL_EXPR_BINARY || e->kind == DSL_EXPR_UNARY)
        for (uint32_t i = 0; i < e->nargs; i++)
            collect_dims(gen, e->args[i], node, t);
}

void pv_solve_dims(const pv_gen *gen, const dsl_pattern *node, ir_type *t)
{
    collect_dims(gen, gen->facts->rule->guard, node, t);
}
