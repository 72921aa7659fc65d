/* fuserule dot GRAPH -o OUT.dot: a Graphviz drawing. Fused nodes are filled and name their kernel. */
#include "cli/cli.h"

#include <string.h>

static const char usage[] = "usage: fuserule dot GRAPH -o OUT.dot\n"
                            "Writes a Graphviz drawing of GRAPH: inputs and outputs as ellipses,\n"
                            "constants as notes, ops as boxes, fused ops filled and bold.\n"
                            "-o - writes it to stdout: fuserule dot g.graph -o - | dot -Tsvg\n";

/* A DOT double-quoted string body: quotes and backslashes escaped, control bytes dropped. */
static void put_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, out);
    }
}

/* The DOT id of whatever defines v: its producing node, or the value itself. */
static void put_source_id(FILE *out, const ir_value *v)
{
    if (v->kind == IR_VALUE_NODE)
        fprintf(out, "n%u", v->producer->id);
    else
        fprintf(out, "v%u", v->id);
}

static void put_leaves(FILE *out, const ir_graph *g)
{
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        if (v->kind == IR_VALUE_NODE)
            continue;
        fprintf(out, "  v%u [label=\"", v->id);
        put_escaped(out, v->name);
        fputs(v->kind == IR_VALUE_INPUT ? "\", shape=ellipse];\n"
                                        : "\", shape=note, fontsize=9, color=gray50];\n",
              out);
    }
}

static void put_node(FILE *out, const ir_graph *g, const ir_node *n)
{
    bool fused = ir_op_info_get(n->op)->cls == IR_CLASS_FUSED;
    fprintf(out, "  n%u [label=\"%s\\n", n->id, ir_op_name(n->op));
    put_escaped(out, n->outputs[0]->name);
    if (n->kernel) {
        fputs("\\n@", out);
        put_escaped(out, ir_node_kernel(g, n));
    }
    fprintf(out, "\", shape=box%s];\n",
            fused ? ", style=\"filled,bold\", fillcolor=\"#ffd966\", penwidth=2" : "");
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const ir_value *v = n->inputs[k];
        if (!v)
            continue;
        char type[160];
        fputs("  ", out);
        put_source_id(out, v);
        fprintf(out, " -> n%u [label=\"", n->id);
        put_escaped(out, ir_type_format(g, v->type, type, sizeof type));
        fputs("\", fontsize=8];\n", out);
    }
}

static bool write_dot(FILE *out, void *ctx)
{
    const ir_graph *g = ctx;
    fputs("digraph \"", out);
    put_escaped(out, g->name);
    fputs("\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n", out);
    put_leaves(out, g);
    for (size_t i = 0; i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead)
            put_node(out, g, g->nodes.items[i]);
    for (size_t i = 0; i < g->outputs.len; i++) {
        const ir_value *v = g->outputs.items[i];
        fprintf(out, "  out%zu [label=\"", i);
        put_escaped(out, v->name);
        fputs("\", shape=ellipse, peripheries=2];\n  ", out);
        put_source_id(out, v);
        fprintf(out, " -> out%zu;\n", i);
    }
    fputs("}\n", out);
    return !ferror(out);
}

int cmd_dot(int argc, char **argv)
{
    cli_args args = cli_args_start(argc, argv);
    const char *path = NULL, *out_path = NULL;
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        } else if (strcmp(a, "-o") == 0) {
            if (!(out_path = cli_value(&args, a)))
                return EXIT_BAD_INPUT;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("dot", usage, "unknown option '%s'", a);
        } else if (path) {
            return cli_usage_error("dot", usage, "one graph at a time");
        } else {
            path = a;
        }
    }
    if (!path || !out_path)
        return cli_usage_error("dot", usage, "need GRAPH and -o OUT.dot");

    dg_context *dg = dg_new();
    ir_graph *g = cli_load_graph(path, dg);
    if (g)
        cli_write_atomic(out_path, write_dot, g, dg);
    int status = cli_finish_diagnostics(dg);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
