/* fuserule verify -r RULES... GRAPH [--seed N] [--target cpu|cuda]
 *
 * Runs GRAPH and its fused form on the CPU reference executor with the same seeded inputs and
 * compares every output: NaN and infinities (with their sign) must sit at the same places, then
 * each element must satisfy |fused - original| <= atol + rtol * |original| with the tolerances of
 * its dtype (docs/matcher.md, "Verifying"). Prints the worst error per output; exit 1 on a
 * mismatch. With --target cuda the rewrite binds CUDA kernels and the fused graph runs on the CUDA
 * executor (docs/cuda.md), against the original on the CPU reference. */
#include "cli/cli.h"

#include "canon/canon.h"

#include "rewrite/rewrite.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule verify -r RULES... GRAPH [--seed N] [--target cpu|cuda]\n"
    "Runs GRAPH and its fused form on the CPU with the same seeded inputs and compares every\n"
    "output with dtype tolerances (f32: 1e-5 + 1e-4*|x|, f16: 2.5e-3 + 1e-3*|x|,\n"
    "bf16: 0.02 + 0.01*|x|, integers exactly), NaN and infinities first. Exit 1 on a mismatch.\n";

typedef struct {
    VEC(const char *) rules;
    const char *graph;
    uint64_t seed;
    kn_backend target;
} verify_args;

static int parse_args(int argc, char **argv, verify_args *va)
{
    cli_args args = cli_args_start(argc, argv);
    for (const char *a; (a = cli_next(&args));) {
        const char *v = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "-r") == 0 || strcmp(a, "--seed") == 0 || strcmp(a, "--target") == 0) {
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

static bool report_output(const ir_graph *g, const rt_tensor *fused, const rt_tensor *ref)
{
    char a[32], b[32];
    char type[160];
    ir_type_format(g, &ref->type, type, sizeof type);
    if (!ir_type_equal(&fused->type, &ref->type) || fused->nbytes != ref->nbytes) {
        printf("%s: %s: the fused graph gives another type: MISMATCH\n", ref->name, type);
        return false;
    }
    rt_comparison c = rt_compare(fused, ref);
    rt_tolerance tol = rt_tolerance_of(ref->type.dtype);
    printf("%s: %s max |diff| %.3g", ref->name, type, c.worst_diff);
    if (c.special)
        printf(", %zu NaN/Inf disagreements (first at %zu: %s vs %s)", c.special, c.at,
               number(rt_tensor_get(fused, c.at), a, sizeof a),
               number(rt_tensor_get(ref, c.at), b, sizeof b));
    else if (c.worst_ratio > 0)
        printf(" (worst at %zu: %s vs %s)", c.at, number(rt_tensor_get(fused, c.at), a, sizeof a),
               number(rt_tensor_get(ref, c.at), b, sizeof b));
    if (tol.atol > 0)
        printf(", tolerance %g + %g*|x|", tol.atol, tol.rtol);
    else
        printf(", exact");
    bool ok = !c.bad && !c.special;
    if (ok)
        printf(": ok\n");
    else
        printf(": MISMATCH in %zu of %zu elements\n", c.bad + c.special, rt_tensor_numel(ref));
    return ok;
}

/* ---- the command ---- */

int cmd_verify(int argc, char **argv)
{
    verify_args va = {.target = KN_BACKEND_CPU};
    int status = parse_args(argc, argv, &va);
    if (status >= 0) {
        vec_free(&va.rules);
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
    rt_result want = {0}, got = {0};
    bool ran =
        rewrote && rt_run_cpu(original, NULL, 0, &ro, &want, dg) &&
        (va.target == KN_BACKEND_CUDA ? rt_run_cuda : rt_run_cpu)(fused, NULL, 0, &ro, &got, dg);
    bool agree = true;
    if (ran) {
        printf("fused: nodes %zu -> %zu, kernels %zu -> %zu\n", rep.before.nodes, rep.after.nodes,
               rep.before.kernels, rep.after.kernels);
        for (size_t i = 0; i < want.noutputs; i++)
            agree &= report_output(original, &got.outputs[i], &want.outputs[i]);
        printf("%s\n", agree ? "verify: every output agrees" : "verify: MISMATCH");
    }
    status = cli_finish_diagnostics(dg);
    if (ran && status == EXIT_OK && !agree)
        status = EXIT_CHECK_FAILED;
    if (!ran && status == EXIT_OK)
        status = EXIT_BAD_INPUT;
    rt_result_free(&want);
    rt_result_free(&got);
    if (fused)
        rw_report_free(&rep);
    ir_graph_free(original);
    ir_graph_free(fused);
    mt_free(a);
    dsl_ruleset_free(rs);
    dg_free(dg);
    vec_free(&va.rules);
    return status;
}
