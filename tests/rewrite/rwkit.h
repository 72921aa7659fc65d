/* Helpers of the rewriter's tests: rules from text, graphs from text, applying, running a graph
 * and its fused form on the CPU and comparing their outputs. */
#ifndef FUSERULE_TESTS_REWRITE_RWKIT_H
#define FUSERULE_TESTS_REWRITE_RWKIT_H

#include "rewrite/rewrite.h"
#include "runtime/runtime.h"
#include "tests/matcher/graphkit.h"

#include <math.h>

typedef struct {
    dsl_ruleset *rs;
    mt_automaton *a;
    dg_context *dg;
} rk_rules;

/* The report as `fuserule apply` prints it to stderr (text, without --explain: the overlaps by
 * their counts); malloc'd. */
static inline char *plain_report(const rw_report *rep)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rw_report_print(rep, f, RW_REPORT_TEXT, false);
    fclose(f);
    return text;
}

/* Checked and compiled rules (aborting with the diagnostics when they have errors). */
static inline rk_rules rules_from(const char *text)
{
    rk_rules r = {.dg = dg_new()};
    dsl_options opts = rw_dsl_options();
    r.rs = dsl_ruleset_new(&opts);
    dsl_load_text(r.rs, "test.rules", text, strlen(text), r.dg);
    if (!dsl_check(r.rs, r.dg) || !(r.a = mt_compile(r.rs, r.dg)) || dg_has_errors(r.dg)) {
        dg_print(r.dg, stderr);
        abort();
    }
    return r;
}

static inline void rules_free(rk_rules *r)
{
    mt_free(r->a);
    dsl_ruleset_free(r->rs);
    dg_free(r->dg);
}

/* Applies the rules; the graph must stay valid. */
static inline rw_report apply_with(gk_graph *t, const rk_rules *r, rw_options opts)
{
    rw_report rep;
    dg_context *dg = dg_new();
    if (!rw_apply(t->g, r->a, &opts, &rep, dg)) {
        dg_print(dg, stderr);
        abort();
    }
    dg_free(dg);
    return rep;
}

static inline rw_report apply(gk_graph *t, const rk_rules *r)
{
    rw_options opts = rw_options_default();
    opts.validate_each = true; /* every rewrite must leave a valid graph */
    return apply_with(t, r, opts);
}

static inline uint32_t fired(const rw_report *rep, const char *rule)
{
    for (uint32_t i = 0; i < rep->nrules; i++)
        if (strcmp(rep->rule_names[i], rule) == 0)
            return rep->fired[i];
    return 0;
}

/* The reason a rule was refused at a node, or NULL (valid until the next call). */
static inline const char *refusal(const rw_report *rep, const char *rule, const char *node)
{
    static char buf[RW_REASON_SIZE];
    for (size_t i = 0; i < rep->refused.len; i++) {
        rw_refusal f = rw_report_refusal(rep, i, buf);
        if (strcmp(f.rule, rule) == 0 && (!node || strcmp(f.node, node) == 0))
            return f.reason;
    }
    return NULL;
}

/* How many live nodes of op `op` the graph has. */
static inline size_t count_op(const ir_graph *g, ir_op op)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        n += !g->nodes.items[i]->dead && g->nodes.items[i]->op == op;
    return n;
}

/* The largest |fused - original| / (1e-5 + |original|) over every output, both graphs run on the
 * CPU with seed 0 (outputs in the same order). */
static inline double worst_error(gk_graph *original, gk_graph *fused)
{
    rt_result a, b;
    rt_options ro = {.seed = 0};
    dg_context *dg = dg_new();
    if (!rt_run_cpu(original->g, NULL, 0, &ro, &a, dg) || !rt_run_cpu(fused->g, NULL, 0, &ro, &b, dg)) {
        dg_print(dg, stderr);
        abort();
    }
    dg_free(dg);
    double worst = 0;
    for (size_t i = 0; i < a.noutputs; i++) {
        size_t n = rt_tensor_numel(&a.outputs[i]);
        FR_CHECK(n == rt_tensor_numel(&b.outputs[i]));
        for (size_t k = 0; k < n; k++) {
            double x = rt_tensor_get(&a.outputs[i], k), y = rt_tensor_get(&b.outputs[i], k);
            double e = fabs(x - y) / (1e-5 + fabs(x));
            if (!(e <= worst))
                worst = isnan(e) ? INFINITY : e;
        }
    }
    rt_result_free(&a);
    rt_result_free(&b);
    return worst;
}

#endif
