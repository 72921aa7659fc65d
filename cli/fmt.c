/* fuserule fmt GRAPH: the graph in canonical text form on stdout. */
#include "cli/cli.h"

#include <string.h>

static const char usage[] =
    "usage: fuserule fmt GRAPH\n"
    "Prints GRAPH (a .graph file or an ONNX model; - for stdin) in canonical text\n"
    "form on stdout.\n";

int cmd_fmt(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    const char *path = NULL;
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (a[0] == '-' && a[1])
            return cli_usage_error("fmt", usage, "unknown option '%s'", a);
        if (path)
            return cli_usage_error("fmt", usage, "one graph at a time");
        path = a;
    }
    if (!path)
        return cli_usage_error("fmt", usage, "missing GRAPH");

    dg_context *dg = dg_new();
    ir_graph *g = cli_load_graph(path, dg);
    if (g)
        ir_print(g, stdout);
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
