/* fuserule apply -r RULES... GRAPH [-o OUT] [--format graph|onnx] [--for lossless|onnxruntime]
 *                [--target cpu|cuda] [--report text|json] [--explain] [--max-rounds N] [--time]
 *                [--no-canon] [--fold-budget B]
 *
 * The main job: rules -> automaton; graph -> canonical form (docs/canon.md) -> match, select,
 * rewrite (to a fixed point) -> the fused graph, written atomically with its new constants (-o),
 * and a report of what fired and what was refused. */
#include "cli/cli.h"

#include "canon/canon.h"
#include "onnx/onnx_io.h"
#include "rewrite/rewrite.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char usage[] =
    "usage: fuserule apply -r RULES... GRAPH [-o OUT] [--format graph|onnx] [--target cpu|cuda]\n"
    "                      [--for lossless|onnxruntime] [--link-weights] [--report text|json]\n"
    "                      [--explain]\n"
    "                      [--max-rounds N] [--time]\n"
    "Fuses GRAPH (a .graph file or an ONNX model; - for stdin) with the rules of the RULES\n"
    "files.\n"
    "  -r RULES        a rule file (repeat -r, or list more files ending in .rules)\n"
    "  -o OUT          write the fused graph there: OUT.graph the text form, its new constants\n"
    "                  in OUT.safetensors beside it; OUT.onnx an ONNX model; - stdout (text)\n"
    "                  (without -o the graph is printed to stdout, unless --report json)\n"
    "  --format F      write OUT as F (graph or onnx) whatever its name\n"
    "  --for F         an ONNX OUT for F, as export's --for: lossless (the default) or\n"
    "                  onnxruntime (only ops ONNX Runtime runs); an error with a graph OUT\n"
    "  --target T      bind kernels of backend T (cpu, the default, or cuda)\n"
    "  --link-weights  an ONNX OUT names the weights that lie unchanged in an .onnx GRAPH as\n"
    "                  external data in that file instead of holding copies (OUT in GRAPH's\n"
    "                  folder or above it; OUT then needs GRAPH beside it)\n"
    "  --report F      text (to stderr, the default) or json (to stdout)\n"
    "  --explain       also list near misses: where a rule's root op matched but the rule did\n"
    "                  not, with the first check that failed, and every overlap one by one\n"
    "  --max-rounds N  the most rounds of rewriting (default 16)\n"
    "  --fold-budget B the most bytes of output canonicalization folds per node (default\n"
    "                  16777216; 0: fold nothing)\n"
    "  --no-canon      match the graph as loaded, not its canonical form (fuserule canon)\n"
    "  --time          print the CPU time of each phase to stderr\n";

typedef struct {
    VEC(const char *) rules;
    const char *graph, *out;
    rw_options opts;
    cli_format format;
    ox_export_options onnx; /* --for: how an ONNX OUT writes fused ops */
    bool for_given;         /* --for said: an error unless OUT is ONNX */
    cn_options canon;
    bool json, time, no_canon;
} apply_args;

static int parse_rounds(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v == 0 || v > 1000)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Returns -1 when the arguments are fine, else the exit status. */
static int parse_args(int argc, char **argv, apply_args *aa)
{
    cli_args args = cli_args_start(argc, argv);
    for (const char *a; (a = cli_next(&args));) {
        const char *v = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        bool takes_value = strcmp(a, "-r") == 0 || strcmp(a, "-o") == 0 ||
                           strcmp(a, "--target") == 0 || strcmp(a, "--report") == 0 ||
                           strcmp(a, "--max-rounds") == 0 || strcmp(a, "--format") == 0 ||
                           strcmp(a, "--fold-budget") == 0 || strcmp(a, "--for") == 0;
        if (takes_value && !(v = cli_value(&args, a)))
            return EXIT_BAD_INPUT;
        if (strcmp(a, "-r") == 0) {
            vec_push(&aa->rules, v);
        } else if (strcmp(a, "-o") == 0) {
            aa->out = v;
        } else if (strcmp(a, "--target") == 0) {
            if (!kn_backend_parse(v, &aa->opts.target))
                return cli_usage_error("apply", usage, "unknown target '%s' (cpu or cuda)", v);
        } else if (strcmp(a, "--format") == 0) {
            if (!cli_parse_format(v, &aa->format))
                return cli_usage_error("apply", usage, "unknown format '%s' (graph or onnx)", v);
        } else if (strcmp(a, "--for") == 0) {
            if (!ox_flavour_parse(v, &aa->onnx.flavour))
                return cli_usage_error("apply", usage,
                                       "--for takes lossless or onnxruntime, not '%s'", v);
            aa->for_given = true;
        } else if (strcmp(a, "--report") == 0) {
            if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0)
                return cli_usage_error("apply", usage, "unknown report format '%s' (text or json)", v);
            aa->json = strcmp(v, "json") == 0;
        } else if (strcmp(a, "--max-rounds") == 0) {
            if (parse_rounds(v, &aa->opts.max_rounds) < 0)
                return cli_usage_error("apply", usage, "--max-rounds takes 1 to 1000, not '%s'", v);
        } else if (strcmp(a, "--fold-budget") == 0) {
            if (cli_parse_budget(v, &aa->canon.fold_budget) < 0)
                return cli_usage_error("apply", usage,
                                       "--fold-budget takes 0 to 2^40 bytes, not '%s'", v);
        } else if (strcmp(a, "--link-weights") == 0) {
            aa->onnx.link_weights = true;
        } else if (strcmp(a, "--no-canon") == 0) {
            aa->no_canon = true;
        } else if (strcmp(a, "--explain") == 0) {
            aa->opts.explain = true;
        } else if (strcmp(a, "--time") == 0) {
            aa->time = true;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("apply", usage, "unknown option '%s'", a);
        } else if (cli_is_rules_file(a)) {
            vec_push(&aa->rules, a); /* -r a.rules b.rules GRAPH */
        } else if (aa->graph) {
            return cli_usage_error("apply", usage, "one graph at a time ('%s' and '%s')",
                                   aa->graph, a);
        } else {
            aa->graph = a;
        }
    }
    if (!aa->rules.len)
        return cli_usage_error("apply", usage, "no rule files given (-r RULES)");
    if (!aa->graph)
        return cli_usage_error("apply", usage, "missing GRAPH");
    if (aa->for_given && !aa->out)
        return cli_usage_error("apply", usage, "--for describes an ONNX output; give -o OUT.onnx");
    if (aa->onnx.link_weights && !aa->out)
        return cli_usage_error("apply", usage,
                               "--link-weights describes an ONNX output; give -o OUT.onnx");
    if (aa->json && aa->out && strcmp(aa->out, "-") == 0)
        return cli_usage_error("apply", usage,
                               "-o - and --report json would both write to stdout; give -o a file");
    /* the text report prints the overlaps' counts only: each is listed by --explain and JSON */
    aa->opts.count_overlaps = !aa->opts.explain && !aa->json;
    return -1;
}

int cmd_apply(int argc, char **argv)
{
    apply_args aa = {.opts = rw_options_default(), .canon = cn_options_default()};
    int status = parse_args(argc, argv, &aa);
    if (status >= 0) {
        vec_free(&aa.rules);
        return status;
    }
    dg_context *dg = dg_new();
    dsl_ruleset *rs = NULL;
    double t0 = cpu_seconds();
    mt_automaton *a = rw_load_rules(aa.rules.items, aa.rules.len, &rs, dg);
    double t1 = cpu_seconds();
    ir_graph *g = a ? cli_load_graph(aa.graph, dg) : NULL;
    cn_report crep = {0};
    ir_stats loaded;
    if (g && aa.no_canon)
        ir_compute_stats(g, &loaded);
    aa.canon.stats_before = &loaded; /* else counted in canon's first pass over the nodes */
    if (g && !aa.no_canon && !cn_canonicalize(g, &aa.canon, &crep, dg)) {
        ir_graph_free(g);
        g = NULL;
    }
    double t2 = cpu_seconds();
    rw_report rep = {0};
    bool ok = g && rw_apply(g, a, &aa.opts, &rep, dg);
    if (ok)
        rep.before = loaded; /* the graph as loaded, not its canonical form */
    double t3 = cpu_seconds();
    if (ok) {
        cli_debug_dump("apply", g);
        if (aa.out)
            ok = cli_save_graph(g, aa.out,
                                &(cli_save_options){aa.format, CLI_FORMAT_GRAPH, &aa.onnx,
                                                    aa.for_given           ? "--for"
                                                    : aa.onnx.link_weights ? "--link-weights"
                                                                           : NULL},
                                dg);
        else if (!aa.json)
            ir_print(g, stdout);
    }
    double t4 = cpu_seconds();
    if (ok && aa.time)
        fprintf(stderr,
                "time (cpu s): rules %.3f, load %.3f (canon %.3f), rewrite %.3f (match %.3f, "
                "select and "
                "rewrite %.3f, validate %.3f), output %.3f, total %.3f\n",
                t1 - t0, t2 - t1, crep.seconds, t3 - t2, rep.match_seconds, rep.commit_seconds,
                rep.validate_seconds, t4 - t3, t4 - t0);
    status = cli_finish_diagnostics(dg); /* warnings of the rules first, then the report */
    if (ok)
        rw_report_print(&rep, aa.json ? stdout : stderr, aa.json ? RW_REPORT_JSON : RW_REPORT_TEXT,
                        aa.opts.explain);
    if (g)
        rw_report_free(&rep);
    ir_graph_free(g);
    mt_free(a);
    dsl_ruleset_free(rs);
    dg_free(dg);
    vec_free(&aa.rules);
    return ok ? status : EXIT_BAD_INPUT;
}
