/* fuserule check RULES...: parses and checks rule files. Per file, one summary line on stdout
 * ("FILE: N rules, M ops, W warnings"); errors and warnings on stderr. Exit 0 when every file is
 * clean (warnings allowed), 2 when any has errors. --dump-rules prints each checked rule in its
 * desugared form (docs/rules.md, "Checking rules"); --dump-automaton, the rules of all the files
 * compiled into the matcher's table (docs/matcher.md). --prove then tests every rule on generated
 * instances of its pattern (docs/prove.md): one verdict line per rule and a total; exit 1 when a
 * rule failed or could not be instantiated. */
#include "cli/cli.h"
#include "dsl/dsl.h"
#include "prove/prove.h"
#include "rewrite/rewrite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule check [--dump-rules] [--dump-automaton] [--prove [--seed N] [--instances N]]\n"
    "                      RULES...\n"
    "--prove tests every rule on small generated instances of its pattern: the pattern and its\n"
    "replacement run on the CPU and must agree within verify's tolerances (exit 1 if not).\n";

/* The next rule file among the arguments (skipping options and the values of --seed and
 * --instances), or NULL at the end. */
static const char *next_file(cli_args *a)
{
    for (const char *arg; (arg = cli_next(a));) {
        if (strcmp(arg, "--seed") == 0 || strcmp(arg, "--instances") == 0)
            cli_value(a, arg);
        else if (arg[0] != '-' || !arg[1])
            return arg;
    }
    return NULL;
}

static const char *plural(size_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Checks one file on its own (with its includes); prints its diagnostics and summary. */
static bool check_file(const char *path, bool dump)
{
    dsl_options opts = rw_dsl_options();
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

/* With several files: their rules loaded together, as `apply -r FILES...` would, and a rule of
 * one file that would take part of every match of another file's larger rule reported. */
static void check_across_files(int argc, char **argv)
{
    dsl_options opts = rw_dsl_options();
    dsl_ruleset *rs = dsl_ruleset_new(&opts);
    dg_context *scratch = dg_new(), *dg = dg_new(); /* each file's own findings are printed */
    cli_args a = cli_args_start(argc, argv);
    for (const char *arg; (arg = next_file(&a));)
        dsl_load_file(rs, arg, scratch);
    if (dsl_check(rs, scratch))
        dsl_warn_preempted(rs, dg);
    dg_print(dg, stderr);
    dg_free(scratch);
    dg_free(dg);
    dsl_ruleset_free(rs);
}

/* --dump-automaton: every file's rules compiled together, as `apply -r FILES...` would, and the
 * table printed (docs/matcher.md, "The table"). */
static bool dump_automaton(int argc, char **argv)
{
    const char **paths = calloc((size_t)argc, sizeof *paths);
    size_t n = 0;
    cli_args a = cli_args_start(argc, argv);
    for (const char *arg; (arg = next_file(&a));)
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

typedef struct {
    unsigned proved, failed, unproven;
} prove_counts;

/* --prove: every rule of the file (with its includes) tested on generated instances. */
static bool prove_file(const char *path, const pv_options *opts, prove_counts *counts)
{
    dsl_options dopts = rw_dsl_options();
    dsl_ruleset *rs = dsl_ruleset_new(&dopts);
    dg_context *dg = dg_new();
    dsl_load_file(rs, path, dg);
    /* a rule the automaton cannot express is an error, as `apply` reports it */
    mt_automaton *m = rw_compile_rules(rs, dg);
    bool ok = m != NULL;
    mt_free(m);
    for (uint32_t i = 0; ok && i < rs->nrules; i++) {
        pv_result res;
        pv_prove(rs->rules[i], opts, &res);
        pv_result_print(rs->rules[i], &res, stdout);
        counts->proved += res.verdict == PV_PROVED;
        counts->failed += res.verdict == PV_FAILED;
        counts->unproven += res.verdict == PV_UNPROVEN;
        pv_result_free(&res);
    }
    if (!ok)
        dg_print(dg, stderr);
    dg_free(dg);
    dsl_ruleset_free(rs);
    return ok;
}

static int prove_files(int argc, char **argv, const pv_options *opts)
{
    prove_counts counts = {0};
    cli_args a = cli_args_start(argc, argv);
    bool ok = true;
    for (const char *arg; ok && (arg = next_file(&a));)
        ok = prove_file(arg, opts, &counts);
    if (!ok)
        return EXIT_BAD_INPUT;
    printf("%u proved, %u failed, %u unproven\n", counts.proved, counts.failed, counts.unproven);
    return counts.failed || counts.unproven ? EXIT_CHECK_FAILED : EXIT_OK;
}

/* The value of --seed or --instances: a non-negative integer (instances: at least 1). */
static bool parse_count(cli_args *a, const char *opt, uint64_t *out)
{
    const char *v = cli_value(a, opt);
    if (!v)
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    bool instances = strcmp(opt, "--instances") == 0;
    if (errno || end == v || *end || v[0] == '-' || (instances && (n == 0 || n > 100000))) {
        cli_usage_error("check", usage, "%s takes %s, not '%s'", opt,
                        instances ? "a count from 1 to 100000" : "a non-negative integer", v);
        return false;
    }
    *out = n;
    return true;
}

int cmd_check(int argc, char **argv)
{
    cli_args a = cli_args_start(argc, argv);
    bool dump = false, dump_table = false, prove = false;
    uint64_t seed = 0, instances = 0;
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
        else if (strcmp(arg, "--prove") == 0)
            prove = true;
        else if (strcmp(arg, "--seed") == 0 || strcmp(arg, "--instances") == 0) {
            if (!parse_count(&a, arg, arg[2] == 's' ? &seed : &instances))
                return EXIT_BAD_INPUT;
        } else if (arg[0] == '-' && arg[1])
            return cli_usage_error("check", usage, "unknown option '%s'", arg);
        else
            nfiles++;
    }
    if (!nfiles)
        return cli_usage_error("check", usage, "no rule files given");
    bool clean = true;
    a = cli_args_start(argc, argv);
    while ((arg = next_file(&a)))
        clean &= check_file(arg, dump);
    if (clean && nfiles > 1)
        check_across_files(argc, argv);
    if (clean && dump_table)
        clean = dump_automaton(argc, argv);
    if (!clean)
        return EXIT_BAD_INPUT;
    if (prove) {
        pv_options opts = {.seed = seed, .instances = (uint32_t)instances};
        return prove_files(argc, argv, &opts);
    }
    return EXIT_OK;
}
