/* fuserule import MODEL.onnx -o OUT.graph: an ONNX model in the text form, its weights beside it. */
#include "cli/cli.h"

#include "onnx/onnx_io.h"

#include <string.h>

static const char usage[] =
    "usage: fuserule import MODEL.onnx -o OUT.graph\n"
    "Converts an ONNX model to the text form: OUT.graph, and OUT.safetensors holding its\n"
    "weights (when it has any beyond small constants, which the text writes inline).\n";

int cmd_import(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    const char *model = NULL, *out = NULL;
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "-o") == 0) {
            if (!(out = cli_value(&args, a)))
                return EXIT_BAD_INPUT;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("import", usage, "unknown option '%s'", a);
        } else if (model) {
            return cli_usage_error("import", usage, "one model at a time");
        } else {
            model = a;
        }
    }
    if (!model)
        return cli_usage_error("import", usage, "missing MODEL.onnx");
    if (!out)
        return cli_usage_error("import", usage, "missing -o OUT.graph");

    dg_context *dg = dg_new();
    ir_graph *g = cli_output_overwrites(model, out, dg) ? NULL : ox_import(model, NULL, dg);
    if (g) {
        cli_debug_dump("import", g);
        ir_save(g, out, dg);
    }
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
