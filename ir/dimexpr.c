/* Dims computed from symbols (docs/graph-format.md, "Symbolic dims"): `batch * 12`, `S + 1`.
 *
 * An expression is a polynomial with integer coefficients over the graph's named symbols, kept in
 * one canonical form (like terms merged, zero terms dropped, each term's symbols sorted by name,
 * terms sorted by degree then names), so that two computations of the same size give the same
 * polynomial. It is interned in the graph's symbol table beside the named symbols: a dim stays one
 * int64 (IR_DIM_SYM_BASE - index), and equal dims are equal numbers. A polynomial that is a
 * constant is the static dim itself, one that is a single named symbol is that symbol.
 *
 * Only exact arithmetic is kept: a sum, difference or product, and a quotient when the division
 * leaves no remainder for every value of the symbols (`(batch * 12) / 12`, `(2 * S + 2) / 2`).
 * Anything else (a floor division, a result too large for the fixed-size form, a polynomial with
 * no positive term, which is no size) is an unknown dim. */
#include "ir/ir.h"

#include "base/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- building polynomials ---- */

/* Symbols in the order of their names, ignoring case first (`batch * S`, as one reads it). */
static int var_cmp(const ir_graph *g, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    int c = strcasecmp(g->symbols.items[a], g->symbols.items[b]);
    return c ? c : strcmp(g->symbols.items[a], g->symbols.items[b]);
}

/* Orders terms: higher degree first, then by their symbols' names; the constant last. */
static int term_cmp(const ir_graph *g, const ir_dimx_term *a, const ir_dimx_term *b)
{
    if (a->nvars != b->nvars)
        return a->nvars > b->nvars ? -1 : 1;
    for (int i = 0; i < a->nvars; i++) {
        int c = var_cmp(g, a->vars[i], b->vars[i]);
        if (c)
            return c;
    }
    return 0;
}

/* Adds c * (the monomial of vars) to p; false when p would need more terms than it holds. */
static bool add_term(const ir_graph *g, ir_dimx *p, int64_t c, const uint32_t *vars, int nvars)
{
    ir_dimx_term t = {.coef = c, .nvars = (uint8_t)nvars};
    if (nvars) /* a constant term has no symbols (vars may be NULL) */
        memcpy(t.vars, vars, sizeof vars[0] * (size_t)nvars);
    /* insertion sort of the symbols by name */
    for (int i = 1; i < nvars; i++)
        for (int j = i; j > 0 && var_cmp(g, t.vars[j - 1], t.vars[j]) > 0; j--) {
            uint32_t s = t.vars[j];
            t.vars[j] = t.vars[j - 1];
            t.vars[j - 1] = s;
        }
    int at = 0;
    while (at < p->nterms && term_cmp(g, &p->terms[at], &t) < 0)
        at++;
    if (at < p->nterms && term_cmp(g, &p->terms[at], &t) == 0) {
        if (__builtin_add_overflow(p->terms[at].coef, c, &p->terms[at].coef))
            return false;
        if (p->terms[at].coef == 0) {
            memmove(&p->terms[at], &p->terms[at + 1], sizeof t * (size_t)(p->nterms - at - 1));
            p->nterms--;
        }
        return true;
    }
    if (c == 0)
        return true;
    if (p->nterms == IR_DIMX_MAX_TERMS)
        return false;
    memmove(&p->terms[at + 1], &p->terms[at], sizeof t * (size_t)(p->nterms - at));
    p->terms[at] = t;
    p->nterms++;
    return true;
}

/* The polynomial of a dim; false for an unknown dim. */
static bool to_poly(const ir_graph *g, int64_t d, ir_dimx *p)
{
    memset(p, 0, sizeof *p);
    if (ir_dim_is_static(d))
        return add_term(g, p, d, NULL, 0);
    if (!ir_dim_is_symbol(d))
        return false;
    uint32_t s = ir_dim_symbol(d);
    FR_CHECK(s < g->symbols.len);
    const ir_dimx *e = g->symexprs.items[s];
    if (e)
        *p = *e;
    else
        add_term(g, p, 1, &s, 1);
    return true;
}

/* ---- text ---- */

/* "batch * S * 12 + 1", "T - S": the display text of a canonical polynomial (names as they are; the
 * printer quotes the ones that need it). */
static char *poly_text(ir_graph *g, const ir_dimx *p)
{
    char buf[512];
    size_t used = 0;
    bool first = true;
    buf[0] = '\0';
    for (int pass = 0; pass < 2; pass++) /* positive terms first, as the printer writes them */
        for (int i = 0; i < p->nterms; i++) {
            const ir_dimx_term *t = &p->terms[i];
            if ((t->coef < 0) != (pass == 1))
                continue;
            uint64_t mag = t->coef < 0 ? (uint64_t)0 - (uint64_t)t->coef : (uint64_t)t->coef;
            int n = snprintf(buf + used, sizeof buf - used, "%s",
                             first         ? ""
                             : t->coef < 0 ? " - "
                                           : " + ");
            first = false;
            used += n > 0 ? (size_t)n : 0;
            for (int k = 0; k < t->nvars && used < sizeof buf; k++) {
                n = snprintf(buf + used, sizeof buf - used, "%s%s", k ? " * " : "",
                             g->symbols.items[t->vars[k]]);
                used += n > 0 ? (size_t)n : 0;
            }
            if (used < sizeof buf && (t->nvars == 0 || mag != 1)) {
                n = snprintf(buf + used, sizeof buf - used, "%s%llu", t->nvars ? " * " : "",
                             (unsigned long long)mag);
                used += n > 0 ? (size_t)n : 0;
            }
            if (used >= sizeof buf)
                used = sizeof buf - 1;
        }
    return ar_strdup(g->arena, buf);
}

/* ---- interning ---- */

int64_t ir_dim_intern(ir_graph *g, const ir_dimx *p)
{
    if (p->nterms == 0)
        return 0;
    if (p->nterms == 1 && p->terms[0].nvars == 0) {
        int64_t c = p->terms[0].coef;
        return c >= 0 && c <= IR_MAX_NUMEL ? c : IR_DIM_UNKNOWN;
    }
    if (p->nterms == 1 && p->terms[0].nvars == 1 && p->terms[0].coef == 1)
        return ir_dim_from_symbol(p->terms[0].vars[0]);
    bool positive = false;
    for (int i = 0; i < p->nterms; i++)
        positive |= p->terms[i].coef > 0;
    if (!positive)
        return IR_DIM_UNKNOWN; /* never a size for sizes >= 0 */
    /* the key: the terms as numbers (symbol indices are fixed within a graph) */
    int64_t key[1 + IR_DIMX_MAX_TERMS * (2 + IR_DIMX_MAX_VARS)];
    size_t len = 0;
    key[len++] = p->nterms;
    for (int i = 0; i < p->nterms; i++) {
        key[len++] = p->terms[i].coef;
        key[len++] = p->terms[i].nvars;
        for (int k = 0; k < p->terms[i].nvars; k++)
            key[len++] = p->terms[i].vars[k];
    }
    uintptr_t known = (uintptr_t)sm_get(&g->expr_index, (const char *)key, len * sizeof key[0]);
    if (known)
        return ir_dim_from_symbol((uint32_t)(known - 1));
    FR_CHECK(g->symbols.len < INT32_MAX);
    ir_dimx *copy = ar_alloc(g->arena, sizeof *copy);
    *copy = *p;
    char *stored = ar_alloc(g->arena, len * sizeof key[0]);
    memcpy(stored, key, len * sizeof key[0]);
    vec_push(&g->symbols, poly_text(g, p));
    vec_push(&g->symexprs, copy);
    sm_put(&g->expr_index, stored, len * sizeof key[0], (void *)(uintptr_t)g->symbols.len);
    return ir_dim_from_symbol((uint32_t)(g->symbols.len - 1));
}

const ir_dimx *ir_dim_expr(const ir_graph *g, int64_t d)
{
    if (!ir_dim_is_symbol(d) || ir_dim_symbol(d) >= g->symexprs.len)
        return NULL;
    return g->symexprs.items[ir_dim_symbol(d)];
}

/* ---- arithmetic ---- */

static int64_t combine(ir_graph *g, int64_t a, int64_t b, int64_t sign)
{
    ir_dimx p, q;
    if (!to_poly(g, a, &p) || !to_poly(g, b, &q))
        return IR_DIM_UNKNOWN;
    for (int i = 0; i < q.nterms; i++) {
        int64_t c;
        if (__builtin_mul_overflow(q.terms[i].coef, sign, &c) ||
            !add_term(g, &p, c, q.terms[i].vars, q.terms[i].nvars))
            return IR_DIM_UNKNOWN;
    }
    return ir_dim_intern(g, &p);
}

int64_t ir_dim_sum(ir_graph *g, int64_t a, int64_t b)
{
    if (ir_dim_is_static(a) && ir_dim_is_static(b))
        return a > IR_MAX_NUMEL + 1 - b ? IR_MAX_NUMEL + 1 : a + b; /* saturating, as inference */
    return combine(g, a, b, 1);
}

int64_t ir_dim_difference(ir_graph *g, int64_t a, int64_t b)
{
    if (ir_dim_is_static(a) && ir_dim_is_static(b))
        return a >= b ? a - b : IR_DIM_UNKNOWN;
    return combine(g, a, b, -1);
}

int64_t ir_dim_product(ir_graph *g, int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a == 1 || b == 1)
        return a == 1 ? b : a;
    if (ir_dim_is_static(a) && ir_dim_is_static(b))
        return a > (IR_MAX_NUMEL + 1) / b ? IR_MAX_NUMEL + 1 : a * b;
    ir_dimx p, q, r;
    if (!to_poly(g, a, &p) || !to_poly(g, b, &q))
        return IR_DIM_UNKNOWN;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < p.nterms; i++)
        for (int j = 0; j < q.nterms; j++) {
            const ir_dimx_term *s = &p.terms[i], *t = &q.terms[j];
            int64_t c;
            uint32_t vars[2 * IR_DIMX_MAX_VARS];
            if (s->nvars + t->nvars > IR_DIMX_MAX_VARS ||
                __builtin_mul_overflow(s->coef, t->coef, &c))
                return IR_DIM_UNKNOWN;
            memcpy(vars, s->vars, sizeof vars[0] * s->nvars);
            memcpy(vars + s->nvars, t->vars, sizeof vars[0] * t->nvars);
            if (!add_term(g, &r, c, vars, s->nvars + t->nvars))
                return IR_DIM_UNKNOWN;
        }
    return ir_dim_intern(g, &r);
}

/* Divides monomial t by monomial d when it divides exactly (coefficient and symbols). */
static bool term_div(const ir_dimx_term *t, const ir_dimx_term *d, ir_dimx_term *out)
{
    if (d->coef == 0 || t->coef % d->coef != 0)
        return false;
    *out = (ir_dimx_term){.coef = t->coef / d->coef};
    bool used[IR_DIMX_MAX_VARS] = {false};
    for (int k = 0; k < d->nvars; k++) {
        int j = 0;
        while (j < t->nvars && (used[j] || t->vars[j] != d->vars[k]))
            j++;
        if (j == t->nvars)
            return false;
        used[j] = true;
    }
    for (int j = 0; j < t->nvars; j++)
        if (!used[j])
            out->vars[out->nvars++] = t->vars[j];
    return true;
}

int64_t ir_dim_quotient(ir_graph *g, int64_t a, int64_t b)
{
    if (b == 1)
        return a;
    if (ir_dim_is_static(a) && ir_dim_is_static(b))
        return b > 0 && a % b == 0 ? a / b : IR_DIM_UNKNOWN;
    if (a == b && ir_dim_is_symbol(a))
        return 1;
    ir_dimx p, q, r;
    if (!to_poly(g, a, &p) || !to_poly(g, b, &q) || q.nterms == 0)
        return IR_DIM_UNKNOWN;
    memset(&r, 0, sizeof r);
    if (q.nterms == 1) {
        /* by a monomial: every term must divide */
        for (int i = 0; i < p.nterms; i++) {
            ir_dimx_term t;
            if (!term_div(&p.terms[i], &q.terms[0], &t) ||
                !add_term(g, &r, t.coef, t.vars, t.nvars))
                return IR_DIM_UNKNOWN;
        }
        return ir_dim_intern(g, &r);
    }
    /* by a polynomial: only a constant multiple of it, (2 * S + 2) / (S + 1) */
    if (p.nterms != q.nterms)
        return IR_DIM_UNKNOWN;
    int64_t k = 0;
    for (int i = 0; i < p.nterms; i++) {
        if (term_cmp(g, &p.terms[i], &q.terms[i]) != 0 || p.terms[i].coef % q.terms[i].coef != 0)
            return IR_DIM_UNKNOWN;
        int64_t ki = p.terms[i].coef / q.terms[i].coef;
        if (i && ki != k)
            return IR_DIM_UNKNOWN;
        k = ki;
    }
    return k >= 0 ? k : IR_DIM_UNKNOWN;
}

/* ---- evaluation ---- */

bool ir_dim_eval(const ir_graph *g, int64_t d, const int64_t *bound, int64_t *out)
{
    if (ir_dim_is_static(d)) {
        *out = d;
        return true;
    }
    if (!ir_dim_is_symbol(d) || ir_dim_symbol(d) >= g->symbols.len)
        return false;
    uint32_t s = ir_dim_symbol(d);
    const ir_dimx *p = g->symexprs.items[s];
    if (!p) {
        *out = bound[s];
        return bound[s] >= 0;
    }
    int64_t sum = 0;
    for (int i = 0; i < p->nterms; i++) {
        int64_t t = p->terms[i].coef;
        for (int k = 0; k < p->terms[i].nvars; k++) {
            int64_t v = bound[p->terms[i].vars[k]];
            if (v < 0 || __builtin_mul_overflow(t, v, &t))
                return false;
        }
        if (__builtin_add_overflow(sum, t, &sum))
            return false;
    }
    *out = sum;
    return true;
}

bool ir_dim_solve(const ir_graph *g, int64_t d, int64_t value, int64_t *bound, uint32_t *solved)
{
    const ir_dimx *p = ir_dim_expr(g, d);
    if (!p)
        return false;
    /* value = c * s + rest, with s the one unbound symbol, once in one term (c is that term's
     * coefficient times its bound symbols) */
    int at = -1;
    int64_t rest = 0, c = 0;
    for (int i = 0; i < p->nterms; i++) {
        const ir_dimx_term *t = &p->terms[i];
        int unbound = 0, which = -1;
        int64_t v = t->coef;
        for (int k = 0; k < t->nvars; k++) {
            if (bound[t->vars[k]] < 0) {
                unbound++, which = k;
                continue;
            }
            if (__builtin_mul_overflow(v, bound[t->vars[k]], &v))
                return false;
        }
        if (unbound == 0) {
            if (__builtin_add_overflow(rest, v, &rest))
                return false;
        } else if (unbound == 1 && at < 0) {
            at = i, c = v;
            *solved = t->vars[which];
        } else {
            return false;
        }
    }
    if (at < 0 || c == 0)
        return false;
    int64_t left;
    if (__builtin_sub_overflow(value, rest, &left) || left % c != 0 || left / c < 0)
        return false;
    bound[*solved] = left / c;
    return true;
}
