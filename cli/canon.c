/* fuserule canon GRAPH [-o OUT.graph] [--fold-budget BYTES]
 *
 * The canonical form of a graph (docs/canon.md): what every rule is matched against. Written
 * atomically with its folded constants (-o), or printed; a one-line summary on stderr. */
#include "cli/cli.h"

#include "canon/canon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule canon GRAPH [-o OUT.graph] [--fold-budget BYTES]\n"
    "Puts GRAPH (.graph or .onnx) in the canonical form rules are matched against: constants\n"
    "folded, no-ops removed, common subexpressions merged, one spelling per op.\n"
    "  -o OUT.graph         write it there, its folded constants to OUT.safetensors\n"
    "                       (without -o the graph is printed to stdout)\n"
    "  --fold-budget BYTES  the most bytes of output a folded node may have (default 16777216;\n"
    "                       0: fold nothing)\n";

/* A byte count: 0 to 2^40. */
int cli_parse_budget(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > ((long long)1 << 40))
        return -1;
    *out = v;
    return 0;
}

int cmd_canon(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    const char *path = NULL, *out = NULL;
    cn_options opts = cn_options_default();
    for (const char *a; (a = cli_next(&args));) {
        const char *v = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        bool takes_value = strcmp(a, "-o") == 0 || strcmp(a, "--fold-budget") == 0;
        if (takes_value && !(v = cli_value(&args, a)))
            return EXIT_BAD_INPUT;
        if (strcmp(a, "-o") == 0) {
            out = v;
        } else if (strcmp(a, "--fold-budget") == 0) {
            if (cli_parse_budget(v, &opts.fold_budget) < 0)
                return cli_usage_error("canon", usage,
                                       "--fold-budget takes 0 to 2^40 bytes, not '%s'", v);
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("canon", usage, "unknown option '%s'", a);
        } else if (path) {
            return cli_usage_error("canon", usage, "one graph at a time ('%s' and '%s')", path, a);
        } else {
            path = a;
        }
    }
    if (!path)
        return cli_usage_error("canon", usage, "missing GRAPH");

    dg_context *dg = dg_new();
    ir_graph *g = out && cli_output_overwrites(path, out, dg) ? NULL : cli_load_graph(path, dg);
    cn_report rep;
    bool ok = g && cn_canonicalize(g, &opts, &rep, dg);
    if (ok) {
        cli_debug_dump("canon", g);
        if (out) /* as apply's -o: a device or a FIFO is written in place, never renamed over */
            ok = cli_save_graph(g, out,
                                &(cli_save_options){CLI_FORMAT_GRAPH, CLI_FORMAT_GRAPH, NULL, NULL},
                                dg);
        else
            ir_print(g, stdout);
    }
    if (ok)
        fprintf(stderr,
                "canon: %u folded, %u no-ops removed, %u merged, %u respelled, %u dead, "
                "%u rounds\n",
                rep.folded, rep.removed, rep.merged, rep.respelled, rep.dead, rep.rounds);
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return ok ? status : EXIT_BAD_INPUT;
}
