/* What import and export share (cli.h): one input, `-o OUT` and `--format`, then load and save. */
#include "cli/cli.h"

#include <string.h>

int cli_convert_option(cli_args *args, const char *a, cli_convert *c)
{
    if (strcmp(a, "-o") == 0)
        return (c->out = cli_value(args, a)) ? 1 : EXIT_BAD_INPUT + 1;
    if (strcmp(a, "--format") == 0) {
        const char *v = cli_value(args, a);
        if (!v)
            return EXIT_BAD_INPUT + 1;
        if (!cli_parse_format(v, &c->format))
            return cli_usage_error(c->cmd, c->usage, "unknown format '%s' (graph or onnx)", v) + 1;
        return 1;
    }
    if (a[0] == '-' && a[1])
        return 0;
    if (c->in)
        return cli_usage_error(c->cmd, c->usage, "one %s at a time", c->noun) + 1;
    c->in = a;
    return 1;
}

int cli_convert_run(const cli_convert *c, ir_graph *(*load)(const char *, dg_context *),
                    cli_format stream_default, const struct ox_export_options *onnx)
{
    if (!c->in)
        return cli_usage_error(c->cmd, c->usage, "missing %s", c->in_name);
    if (!c->out)
        return cli_usage_error(c->cmd, c->usage, "missing -o %s", c->out_name);
    dg_context *dg = dg_new();
    ir_graph *g = cli_output_overwrites(c->in, c->out, dg) ? NULL : load(c->in, dg);
    if (g)
        cli_save_graph(g, c->out, &(cli_save_options){c->format, stream_default, onnx, NULL}, dg);
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
