/* fuserule export GRAPH -o OUT.onnx: a graph as an ONNX model (docs/onnx.md has the mapping); the
 * format follows OUT's name (cli/output.c), so `-o x.graph` writes the text form. */
#include "cli/cli.h"

#include "onnx/onnx_io.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule export GRAPH -o OUT.onnx [--opset N] [--for lossless|onnxruntime]\n"
    "                       [--format graph|onnx]\n"
    "Converts GRAPH (a .graph file or an ONNX model; - for stdin) to an ONNX model. Catalog ops\n"
    "become standard ONNX at opset N (default: the lowest from 17 up that expresses every\n"
    "node), fused ops the com.microsoft contrib ops of ONNX Runtime where one has the same\n"
    "semantics, else ops of the \"fuserule\" domain (--for lossless, the default: import reads\n"
    "it back unchanged). --for onnxruntime writes only ops ONNX Runtime runs: a fused op without\n"
    "a contrib op of its semantics becomes the standard subgraph that computes it. OUT is\n"
    "written in the format its name says (.onnx, or .graph for the text form), or as --format\n"
    "says; - writes the model to stdout.\n";

static bool parse_opset(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 1)
        return false;
    *out = v;
    return true;
}

int cmd_export(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    cli_convert c = {.cmd = "export",
                     .usage = usage,
                     .noun = "graph",
                     .in_name = "GRAPH",
                     .out_name = "OUT.onnx",
                     .format = CLI_FORMAT_AUTO};
    ox_export_options opts = {0};
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        int took = cli_convert_option(&args, a, &c);
        if (took > 1)
            return took - 1;
        if (took)
            continue;
        if (strcmp(a, "--opset") == 0) {
            const char *v = cli_value(&args, a);
            if (!v)
                return EXIT_BAD_INPUT;
            if (!parse_opset(v, &opts.opset))
                return cli_usage_error("export", usage, "--opset takes a positive integer, not '%s'",
                                       v);
        } else if (strcmp(a, "--for") == 0) {
            const char *v = cli_value(&args, a);
            if (!v)
                return EXIT_BAD_INPUT;
            if (!ox_flavour_parse(v, &opts.flavour))
                return cli_usage_error("export", usage,
                                       "--for takes lossless or onnxruntime, not '%s'", v);
        } else {
            return cli_usage_error("export", usage, "unknown option '%s'", a);
        }
    }
    return cli_convert_run(&c, cli_load_graph, CLI_FORMAT_ONNX, &opts);
}
