/* fuserule import MODEL.onnx -o OUT.graph: an ONNX model in the text form, its weights beside it
 * (or, by OUT's name or --format, as an ONNX model again: import's checks and canonical names). */
#include "cli/cli.h"

#include <string.h>

static const char usage[] =
    "usage: fuserule import MODEL.onnx -o OUT.graph [--format graph|onnx]\n"
    "Converts an ONNX model (- for stdin) to the text form: OUT.graph, and OUT.safetensors\n"
    "holding its weights (when it has any beyond small constants, which the text writes inline).\n"
    "OUT is written in the format its name says (.graph, or .onnx for an ONNX model), or as\n"
    "--format says; - writes the text to stdout.\n";

int cmd_import(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    const char *model = NULL, *out = NULL;
    cli_format format = CLI_FORMAT_AUTO;
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "-o") == 0) {
            if (!(out = cli_value(&args, a)))
                return EXIT_BAD_INPUT;
        } else if (strcmp(a, "--format") == 0) {
            const char *v = cli_value(&args, a);
            if (!v)
                return EXIT_BAD_INPUT;
            if (!cli_parse_format(v, &format))
                return cli_usage_error("import", usage, "unknown format '%s' (graph or onnx)", v);
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
    ir_graph *g = cli_output_overwrites(model, out, dg) ? NULL : cli_load_onnx(model, dg);
    if (g)
        cli_save_graph(g, out, &(cli_save_options){format, CLI_FORMAT_GRAPH, NULL, NULL}, dg);
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
