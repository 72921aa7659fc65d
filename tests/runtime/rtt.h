/* Helpers for tests that build graphs and run them on the CPU executor: terse builders over the
 * ir.h API, a run wrapper, and the comparison of two runs with a tolerance per dtype (NaN and Inf
 * compared first, by class and sign).
 *
 *     ir_graph *g = ir_graph_new("t");
 *     ir_value *x = rtt_input(g, "x", IR_F32, DIMS(2, 8));
 *     ir_value *w = rtt_random(g, "w", IR_F32, 7, DIMS(8, 4));
 *     ir_value *y = rtt_op(g, IR_OP_MatMul, "y", IN(x, w));
 *     ir_add_output(g, y);
 *     rt_result r;
 *     CHECK(rtt_run(g, 1, &r));
 *
 * Header only, because tests/unit.h keeps its counters per translation unit. */
#ifndef FUSERULE_TESTS_RUNTIME_RTT_H
#define FUSERULE_TESTS_RUNTIME_RTT_H

#include "ir/ir.h"
#include "runtime/runtime.h"
#include "tests/unit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* `rank, dims` from a list of dims: DIMS(2, 3); SCALAR is rank 0. */
#define DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define SCALAR 0, (int64_t[]){0}
/* `ninputs, inputs` from a list of values (NULL: an omitted optional input). */
#define IN(...)                                                                                    \
    (uint32_t)(sizeof((ir_value *[]){__VA_ARGS__}) / sizeof(ir_value *)), (ir_value *[]){__VA_ARGS__}

static inline ir_type rtt_type(ir_dtype dt, int rank, const int64_t *dims)
{
    ir_type t = {.dtype = dt, .rank = (int8_t)rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

static inline ir_value *rtt_input(ir_graph *g, const char *name, ir_dtype dt, int rank,
                                  const int64_t *dims)
{
    ir_type t = rtt_type(dt, rank, dims);
    return ir_add_input(g, name, &t);
}

/* A constant of seeded random values in [lo, hi). */
static inline ir_value *rtt_random_range(ir_graph *g, const char *name, ir_dtype dt, uint64_t seed,
                                         double lo, double hi, int rank, const int64_t *dims)
{
    ir_type t = rtt_type(dt, rank, dims);
    ir_const *c = ir_const_new(g, IR_CONST_RANDOM);
    c->seed = seed;
    c->lo = lo;
    c->hi = hi;
    return ir_add_const(g, name, &t, c);
}

static inline ir_value *rtt_random(ir_graph *g, const char *name, ir_dtype dt, uint64_t seed,
                                   int rank, const int64_t *dims)
{
    return rtt_random_range(g, name, dt, seed, -1.0, 1.0, rank, dims);
}

/* A constant of listed values (one value fills the whole tensor). */
static inline ir_value *rtt_literal(ir_graph *g, const char *name, ir_dtype dt, const double *vals,
                                    size_t nvals, int rank, const int64_t *dims)
{
    ir_type t = rtt_type(dt, rank, dims);
    ir_const *c = ir_const_new(g, IR_CONST_LITERAL);
    c->literal = ar_alloc_array(g->arena, nvals, sizeof *c->literal);
    memcpy(c->literal, vals, nvals * sizeof *vals);
    c->literal_count = nvals;
    return ir_add_const(g, name, &t, c);
}

/* An i64 vector constant (shapes, axes, sizes). */
static inline ir_value *rtt_ints(ir_graph *g, const char *name, const double *vals, size_t n)
{
    return rtt_literal(g, name, IR_I64, vals, n, 1, (int64_t[]){(int64_t)n});
}

static inline ir_node *rtt_node(ir_graph *g, ir_op op, const char *const *outs, uint32_t nouts,
                                uint32_t nin, ir_value *const *ins)
{
    ir_node *n = ir_add_node(g, op, nin, outs, nouts);
    for (uint32_t i = 0; i < nin; i++)
        ir_set_input(n, i, ins[i]);
    return n;
}

/* A one-output node; returns its output. */
static inline ir_value *rtt_op(ir_graph *g, ir_op op, const char *out, uint32_t nin,
                               ir_value *const *ins)
{
    return rtt_node(g, op, &out, 1, nin, ins)->outputs[0];
}

/* The producer of a node output, to set attributes on. */
static inline ir_node *rtt_producer(ir_value *v) { return v->producer; }

/* Validates g and runs it with the seed; prints the diagnostics when either fails. */
static inline bool rtt_run_with(ir_graph *g, uint64_t seed, const rt_tensor *inputs, size_t n,
                                rt_result *r)
{
    dg_context *dg = dg_new();
    rt_options opts = {.seed = seed};
    bool ok = ir_validate(g, dg) && rt_run_cpu(g, inputs, n, &opts, r, dg);
    if (!ok) {
        *r = (rt_result){0};
        dg_print(dg, stderr);
    }
    dg_free(dg);
    return ok;
}

static inline bool rtt_run(ir_graph *g, uint64_t seed, rt_result *r)
{
    return rtt_run_with(g, seed, NULL, 0, r);
}

/* The errors of validating and running g, printed into buf (for negative tests). */
static inline bool rtt_run_fails(ir_graph *g, char *buf, size_t size)
{
    dg_context *dg = dg_new();
    rt_result r;
    bool ok = ir_validate(g, dg) && rt_run_cpu(g, NULL, 0, NULL, &r, dg);
    if (ok)
        rt_result_free(&r);
    FILE *f = fmemopen(buf, size, "w");
    dg_print(dg, f);
    fclose(f);
    dg_free(dg);
    return !ok;
}

/* Whether a and b agree: NaN with NaN, infinities by sign, numbers within atol + rtol * |b|. */
static inline bool rtt_close(double a, double b, rt_tolerance tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= tol.atol + tol.rtol * fabs(b);
}

/* Compares output `index` of two runs element by element; reports the first few mismatches
 * and the largest error. Returns whether all agree. */
static inline bool rtt_compare_output(const rt_result *got, const rt_result *want, size_t index,
                                      rt_tolerance tol, const char *what)
{
    const rt_tensor *a = &got->outputs[index], *b = &want->outputs[index];
    if (!ir_type_equal(&a->type, &b->type) && !(a->type.dtype == b->type.dtype &&
                                                  a->nbytes == b->nbytes)) {
        fprintf(stderr, "%s: output %zu: types differ\n", what, index);
        return false;
    }
    size_t n = rt_tensor_numel(a), bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double x = rt_tensor_get(a, i), y = rt_tensor_get(b, i);
        if (!rtt_close(x, y, tol)) {
            if (bad++ < 3)
                fprintf(stderr, "%s: output %zu element %zu: %.9g, reference %.9g\n", what, index,
                        i, x, y);
        } else if (isfinite(x) && fabs(x - y) > worst) {
            worst = fabs(x - y);
        }
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu elements differ\n", what, bad, n);
    return bad == 0;
}

/* Compares every output of two runs of graphs with the same outputs. */
static inline bool rtt_compare(const rt_result *got, const rt_result *want, rt_tolerance tol,
                               const char *what)
{
    if (got->noutputs != want->noutputs) {
        fprintf(stderr, "%s: %zu outputs, reference %zu\n", what, got->noutputs, want->noutputs);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < got->noutputs; i++)
        ok = rtt_compare_output(got, want, i, tol, what) && ok;
    return ok;
}

#endif
