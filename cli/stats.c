/* fuserule stats GRAPH [--json]: nodes per op, kernels, estimated bytes moved. */
#include "cli/cli.h"

#include <inttypes.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule stats GRAPH [--json]\n"
    "Counts nodes per op, kernels (Constant and views count none) and the estimated memory\n"
    "traffic (each kernel reads its inputs and writes its outputs once).\n";

static void print_text(const ir_graph *g, const ir_stats *s)
{
    printf("graph %s\n", g->name);
    printf("  nodes    %zu\n", s->nodes);
    printf("  kernels  %zu\n", s->kernels);
    printf("  bytes    %" PRId64 "%s\n", s->bytes,
           s->unsized_values ? " (values of unknown size not counted)" : "");
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        if (s->per_op[op])
            printf("  %-20s %" PRIu32 "\n", ir_op_name((ir_op)op), s->per_op[op]);
}

static void print_json(const ir_stats *s)
{
    printf("{\"nodes\": %zu, \"kernels\": %zu, \"bytes\": %" PRId64 ", \"unsized_values\": %zu, "
           "\"ops\": {",
           s->nodes, s->kernels, s->bytes, s->unsized_values);
    const char *sep = "";
    for (unsigned op = 0; op < IR_OP_COUNT; op++) {
        if (s->per_op[op]) {
            printf("%s\"%s\": %" PRIu32, sep, ir_op_name((ir_op)op), s->per_op[op]);
            sep = ", ";
        }
    }
    printf("}}\n");
}

int cmd_stats(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    const char *path = NULL;
    bool json = false;
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("stats", usage, "unknown option '%s'", a);
        } else if (path) {
            return cli_usage_error("stats", usage, "one graph at a time");
        } else {
            path = a;
        }
    }
    if (!path)
        return cli_usage_error("stats", usage, "missing GRAPH");

    dg_context *dg = dg_new();
    ir_graph *g = cli_load_graph(path, dg);
    if (g) {
        ir_stats s;
        ir_compute_stats(g, &s);
        if (json)
            print_json(&s);
        else
            print_text(g, &s);
    }
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
