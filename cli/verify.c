/* fuserule verify -r RULES... GRAPH [--inputs FILE] [--input NAME=FILE.npy]... [--dim NAME=N]...
 *                 [--seed N] [--atol X] [--rtol X] [--no-reference] [--memory-budget B]
 *                 [--target cpu|cuda]
 *
 * Runs GRAPH and its fused form on the same inputs (given, or generated from the seed) and judges
 * every output (docs/matcher.md, "Verifying"). NaN and infinities (with their sign) must sit where
 * the original run has them. Then, by default, both runs are judged against an f64 evaluation of
 * the original graph (rt_run_reference): the fused run passes where each element is within the
 * tolerance of the f64 value plus the original run's own worst distance from it, so rounding that
 * grows with a graph's depth is reported as such and only a fusion worse than the original fails.
 * With --no-reference the fused run is compared with the original directly. Integer outputs must
 * agree exactly. Exit 1 on a mismatch. With --target cuda the fused graph runs on the CUDA
 * executor (docs/cuda.md); the original and the reference on the CPU. */
#include "cli/cli.h"

#include "canon/canon.h"

#include "rewrite/rewrite.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule verify -r RULES... GRAPH [--inputs FILE] [--input NAME=FILE.npy]...\n"
    "                       [--dim NAME=N]... [--seed N] [--atol X] [--rtol X] [--no-reference]\n"
    "                       [--memory-budget B] [--target cpu|cuda]\n"
    "Runs GRAPH and its fused form on the same inputs and judges every output: NaN and infinities\n"
    "where the original has them, then each value against an f64 evaluation of the original: the\n"
    "fused run may be no further from it than the tolerance plus the original f32 run's own worst\n"
    "distance. Tolerances per dtype: f32 1e-5 + 1e-4*|x|, f16 2.5e-3 + 1e-3*|x|, bf16 0.02 +\n"
    "0.01*|x|, f64 1e-7 + 1e-7*|x|, integers exactly. Exit 1 on a mismatch.\n"
    "  --seed N             seed of the generated inputs (default 0)\n"
    "  --atol X, --rtol X   tolerance for float outputs instead of the dtype's\n"
    "  --no-reference       compare the fused run with the original directly\n"
    "  --target T           cpu (default) or cuda: where the fused graph "
    "runs\n" CLI_RUN_INPUTS_USAGE;

typedef struct {
    VEC(const char *) rules;
    const char *graph;
    uint64_t seed;
    kn_backend target;
    cli_run_inputs in;
    double atol, rtol; /* < 0: the dtype's */
    bool no_reference;
} verify_args;

/* A finite non-negative number for --atol / --rtol. */
static bool parse_tolerance(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, verify_args *va)
{
    cli_args args = cli_args_start(argc, argv);
    for (const char *a; (a = cli_next(&args));) {
        const char *v = NULL;
        int taken = cli_run_inputs_option(&args, a, &va->in, "verify", usage);
        if (taken > 1)
            return taken - 1;
        if (taken)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--no-reference") == 0) {
            va->no_reference = true;
        } else if (strcmp(a, "--atol") == 0 || strcmp(a, "--rtol") == 0) {
            if (!(v = cli_value(&args, a)))
                return EXIT_BAD_INPUT;
            if (!parse_tolerance(v, a[2] == 'a' ? &va->atol : &va->rtol))
                return cli_usage_error("verify", usage,
                                       "%s takes a finite non-negative number, not '%s'", a, v);
        } else if (strcmp(a, "-r") == 0 || strcmp(a, "--seed") == 0 || strcmp(a, "--target") == 0) {
            if (!(v = cli_value(&args, a)))
                return EXIT_BAD_INPUT;
            if (a[1] == 'r') {
                vec_push(&va->rules, v);
            } else if (a[2] == 's') {
                char *end;
                errno = 0;
                va->seed = strtoull(v, &end, 10);
                if (errno || end == v || *end || v[0] == '-')
                    return cli_usage_error("verify", usage,
                                           "--seed takes a non-negative integer, not '%s'", v);
            } else if (!kn_backend_parse(v, &va->target)) {
                return cli_usage_error("verify", usage, "unknown target '%s' (cpu or cuda)", v);
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("verify", usage, "unknown option '%s'", a);
        } else if (cli_is_rules_file(a)) {
            vec_push(&va->rules, a);
        } else if (va->graph) {
            return cli_usage_error("verify", usage, "one graph at a time");
        } else {
            va->graph = a;
        }
    }
    if (!va->rules.len)
        return cli_usage_error("verify", usage, "no rule files given (-r RULES)");
    if (!va->graph)
        return cli_usage_error("verify", usage, "missing GRAPH");
    return -1;
}

/* ---- reporting ---- */

/* A number as printed in the report: NaN and infinities spelled the same on every platform. */
static const char *number(double x, char *buf, size_t size)
{
    if (isnan(x))
        return "NaN";
    if (isinf(x))
        return x < 0 ? "-Inf" : "+Inf";
    snprintf(buf, size, "%.9g", x);
    return buf;
}

/* "[0, 12, 7]: original A, fused B[, f64 C]": the element at flat index i of every run. */
static void print_element(const rt_tensor *orig, const rt_tensor *fused, const rt_tensor *ref,
                          size_t i)
{
    char index[160], a[32], b[32], c[32];
    printf("%s: original %s, fused %s", rt_format_index(&orig->type, i, index, sizeof index),
           number(rt_tensor_get(orig, i), a, sizeof a),
           number(rt_tensor_get(fused, i), b, sizeof b));
    if (ref)
        printf(", f64 %s", number(rt_tensor_get(ref, i), c, sizeof c));
}

static rt_tolerance tolerance(const verify_args *va, ir_dtype dt)
{
    rt_tolerance t = rt_tolerance_of(dt);
    if (ir_dtype_is_float(dt)) {
        if (va->atol >= 0)
            t.atol = va->atol;
        if (va->rtol >= 0)
            t.rtol = va->rtol;
    }
    return t;
}

/* Judges one output; ref is NULL without the reference (or for a non-float output). */
static bool report_output(const verify_args *va, const ir_graph *g, const rt_tensor *orig,
                          const rt_tensor *fused, const rt_tensor *ref)
{
    char type[160];
    ir_type_format(g, &orig->type, type, sizeof type);
    if (!ir_type_equal(&fused->type, &orig->type) || fused->nbytes != orig->nbytes) {
        printf("%s: %s: the fused graph gives another type: MISMATCH\n", orig->name, type);
        return false;
    }
    rt_tolerance tol = tolerance(va, orig->type.dtype);
    rt_judgement j = rt_judge(orig, fused, ref, tol);
    rt_comparison c = j.c;
    size_t bad = j.bad;
    printf("%s: %s", orig->name, type);
    if (ref)
        printf(" |original - f64| %.3g, |fused - f64| %.3g", j.original_distance, c.worst_diff);
    else
        printf(" max |diff| %.3g", c.worst_diff);
    if (c.special)
        printf(", %zu NaN/Inf disagreements (first at ", c.special);
    else if (c.worst_ratio > 0)
        printf(" (worst at ");
    if (c.special || c.worst_ratio > 0) {
        print_element(orig, fused, ref, c.at);
        printf(")");
    }
    if (tol.atol > 0 || tol.rtol > 0)
        printf(", tolerance %g + %g*|x|%s", tol.atol, tol.rtol,
               ref ? " + the original's distance" : "");
    else
        printf(", exact");
    if (!bad)
        printf(": ok\n");
    else
        printf(": MISMATCH in %zu of %zu elements\n", bad, rt_tensor_numel(orig));
    return !bad;
}

/* The summary line of a reference run that passed. */
static void print_summary(const rt_result *orig, const rt_result *fused, const rt_result *ref,
                          bool agree)
{
    if (!agree) {
        printf("verify: MISMATCH\n");
        return;
    }
    if (!ref) {
        printf("verify: every output agrees\n");
        return;
    }
    double worst_orig = 0, worst_fused = 0;
    for (size_t i = 0; i < orig->noutputs; i++) {
        if (!ir_dtype_is_float(orig->outputs[i].type.dtype))
            continue;
        rt_tolerance none = {.rtol = 0, .atol = 0};
        double o = rt_compare_with(&orig->outputs[i], &ref->outputs[i], none, 0).worst_diff;
        double f = rt_compare_with(&fused->outputs[i], &ref->outputs[i], none, 0).worst_diff;
        worst_orig = o > worst_orig ? o : worst_orig;
        worst_fused = f > worst_fused ? f : worst_fused;
    }
    printf("verify: every output agrees: the original run is %.2g from f64, the fused one %.2g%s\n",
           worst_orig, worst_fused,
           worst_fused <= worst_orig ? " (no further than the original)" : "");
}

/* ---- the command ---- */

int cmd_verify(int argc, char **argv)
{
    verify_args va = {.target = KN_BACKEND_CPU, .atol = -1, .rtol = -1};
    int status = parse_args(argc, argv, &va);
    if (status >= 0) {
        vec_free(&va.rules);
        cli_run_inputs_free(&va.in);
        return status;
    }
    dg_context *dg = dg_new();
    dsl_ruleset *rs = NULL;
    mt_automaton *a = rw_load_rules(va.rules.items, va.rules.len, &rs, dg);
    ir_graph *original = a ? cli_load_graph(va.graph, dg) : NULL;
    ir_graph *fused = original ? cli_load_graph(va.graph, dg) : NULL;
    rw_options opts = rw_options_default();
    opts.target = va.target;
    rw_report rep = {0};
    cn_options canon = cn_options_default();
    cn_report crep;
    ir_stats loaded;
    if (fused)
        ir_compute_stats(fused, &loaded);
    bool rewrote =
        fused && cn_canonicalize(fused, &canon, &crep, dg) && rw_apply(fused, a, &opts, &rep, dg);
    if (rewrote)
        rep.before = loaded; /* compared with the graph as loaded, not its canonical form */
    rt_options ro = {.seed = va.seed};
    rt_result want = {0}, got = {0}, ref = {0};
    bool reference = !va.no_reference;
    /* the inputs are generated once, by the original run, and given to the others */
    bool ran =
        rewrote && cli_read_inputs(original, &va.in, &ro, dg) &&
        rt_run_cpu(original, va.in.tensors.items, va.in.tensors.len, &ro, &want, dg) &&
        (!reference || rt_run_reference(original, want.inputs, want.ninputs, &ro, &ref, dg)) &&
        (va.target == KN_BACKEND_CUDA ? rt_run_cuda : rt_run_cpu)(fused, want.inputs, want.ninputs,
                                                                  &ro, &got, dg);
    bool agree = true;
    if (ran) {
        printf("fused: nodes %zu -> %zu, kernels %zu -> %zu\n", rep.before.nodes, rep.after.nodes,
               rep.before.kernels, rep.after.kernels);
        for (size_t i = 0; i < want.noutputs; i++) {
            const rt_tensor *r =
                reference && ir_dtype_is_float(want.outputs[i].type.dtype) ? &ref.outputs[i] : NULL;
            agree &= report_output(&va, original, &want.outputs[i], &got.outputs[i], r);
        }
        print_summary(&want, &got, reference ? &ref : NULL, agree);
    }
    status = cli_finish_diagnostics(dg);
    if (ran && status == EXIT_OK && !agree)
        status = EXIT_CHECK_FAILED;
    if (!ran && status == EXIT_OK)
        status = EXIT_BAD_INPUT;
    rt_result_free(&want);
    rt_result_free(&got);
    rt_result_free(&ref);
    if (fused)
        rw_report_free(&rep);
    ir_graph_free(original);
    ir_graph_free(fused);
    mt_free(a);
    dsl_ruleset_free(rs);
    dg_free(dg);
    vec_free(&va.rules);
    cli_run_inputs_free(&va.in);
    return status;
}
