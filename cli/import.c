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
    cli_convert c = {.cmd = "import",
                     .usage = usage,
                     .noun = "model",
                     .in_name = "MODEL.onnx",
                     .out_name = "OUT.graph",
                     .format = CLI_FORMAT_AUTO};
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        int took = cli_convert_option(&args, a, &c);
        if (took > 1)
            return took - 1;
        if (!took)
            return cli_usage_error("import", usage, "unknown option '%s'", a);
    }
    return cli_convert_run(&c, cli_load_onnx, CLI_FORMAT_GRAPH, NULL);
}
