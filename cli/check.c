/* fuserule check RULES...: parses and checks rule files. Per file, one summary line on stdout
 * ("FILE: N rules, M ops, W warnings"); errors and warnings on stderr. Exit 0 when every file is
 * clean (warnings allowed), 2 when any has errors. --dump-rules prints each checked rule in its
 * desugared form (docs/rules.md, "Checking rules"); --dump-automaton, the rules of all the files
 * compiled into the matcher's table (docs/matcher.md). */
#include "cli/cli.h"
#include "dsl/dsl.h"
#if HAVE_FR_KERNELS
#include "kernels/kernels.h"
#endif
#if HAVE_FR_REWRITE
#include "rewrite/rewrite.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: fuserule check [--dump-rules] [--dump-automaton] RULES...\n";

#if HAVE_FR_KERNELS
/* A target needs a kernel: plain ONNX ops all have a CPU reference; a fused op needs a backend. */
static bool has_kernel(ir_op op, void *user)
{
    (void)user;
    if (!kn_fused_entry_get(op))
        return true;
    for (int b = 0; b < KN_BACKEND_COUNT; b++)
        if (kn_kernel_name(op, (kn_backend)b))
            return true;
    return false;
}

/* `{residual = @res}` in a replacement feeds the fused op's input port named so in the registry. */
static int input_port(ir_op op, const char *name, void *user)
{
    (void)user;
    const kn_fused_entry *e = kn_fused_entry_get(op);
    if (!e || e->variadic_inputs)
        return -2;
    for (int i = 0; i < KN_MAX_PORTS && e->inputs[i].name; i++)
        if (strcmp(e->inputs[i].name, name) == 0)
            return i;
    return -1;
}
#endif

static dsl_options options(void)
{
    dsl_options opts = {0};
#if HAVE_FR_KERNELS
    opts.has_kernel = has_kernel;
    opts.input_port = input_port;
#endif
    return opts;
}

static const char *plural(size_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Checks one file on its own (with its includes); prints its diagnostics and summary. */
static bool check_file(const char *path, bool dump)
{
    dsl_options opts = options();
    dsl_ruleset *rs = dsl_ruleset_new(&opts);
    dg_context *dg = dg_new();
    dsl_load_file(rs, path, dg);
    dsl_check(rs, dg);
    dg_print(dg, stderr);
    size_t errors = dg_error_count(dg), warnings = dg_warning_count(dg);
    if (dump)
        for (uint32_t i = 0; i < rs->nrules; i++)
            dsl_rule_print(rs->rules[i], stdout);
    printf("%s: %u %s, %u %s, %zu %s", path, rs->nrules, plural(rs->nrules, "rule", "rules"),
           rs->nops_used, plural(rs->nops_used, "op", "ops"), warnings,
           plural(warnings, "warning", "warnings"));
    if (errors)
        printf(", %zu %s", errors, plural(errors, "error", "errors"));
    printf("\n");
    dg_free(dg);
    dsl_ruleset_free(rs);
    return errors == 0;
}

#if HAVE_FR_REWRITE
/* --dump-automaton: every file's rules compiled together, as `apply -r FILES...` would, and the
 * table printed (docs/matcher.md, "The table"). */
static bool dump_automaton(int argc, char **argv)
{
    const char **paths = calloc((size_t)argc, sizeof *paths);
    size_t n = 0;
    cli_args a = cli_args_start(argc, argv);
    for (const char *arg; (arg = cli_next(&a));)
        if (arg[0] != '-' || !arg[1])
            paths[n++] = arg;
    dg_context *dg = dg_new();
    dsl_ruleset *rs = NULL;
    mt_automaton *m = rw_load_rules(paths, n, &rs, dg);
    if (m)
        mt_dump(m, stdout);
    dg_print(dg, stderr);
    bool ok = m != NULL;
    mt_free(m);
    dsl_ruleset_free(rs);
    dg_free(dg);
    free(paths);
    return ok;
}
#endif

int cmd_check(int argc, char **argv)
{
    cli_args a = cli_args_start(argc, argv);
    bool dump = false, dump_table = false;
    int nfiles = 0;
    const char *arg;
    while ((arg = cli_next(&a))) {
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (strcmp(arg, "--dump-rules") == 0)
            dump = true;
        else if (strcmp(arg, "--dump-automaton") == 0)
            dump_table = true;
        else if (arg[0] == '-' && arg[1])
            return cli_usage_error("check", usage, "unknown option '%s'", arg);
        else
            nfiles++;
    }
    if (!nfiles)
        return cli_usage_error("check", usage, "no rule files given");
    bool clean = true;
    a = cli_args_start(argc, argv);
    while ((arg = cli_next(&a)))
        if (arg[0] != '-' || !arg[1])
            clean &= check_file(arg, dump);
#if HAVE_FR_REWRITE
    if (clean && dump_table)
        clean = dump_automaton(argc, argv);
#else
    if (dump_table)
        return cli_usage_error("check", usage, "--dump-automaton needs the matcher in this build");
#endif
    return clean ? EXIT_OK : EXIT_BAD_INPUT;
}
