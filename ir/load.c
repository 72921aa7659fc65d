/* Loading a .graph file: read, parse, validate.
 *
 * The text (a mapping of the file where it is a regular one: its only copy) is handed to the
 * diagnostics context, because the diagnostics of a failed load point into it after the graph is
 * gone. A graph that loads holds the same text (dg_source_hold), so that g->src lives as long as
 * the graph, and gives its pages back until a diagnostic reads it again (dg_source_rest): what a
 * loaded graph needs of its text is only where things were written. */
#include "ir/parse_internal.h"

ir_graph *ir_load_text(const char *path, dg_context *dg)
{
    const dg_source *src = dg_source_open(dg, path);
    if (!src)
        return NULL;
    ir_graph *g = gp_parse_terminated(src, dg); /* the text ends with a NUL */
    if (!g)
        return NULL;
    if (!ir_validate(g, dg)) {
        ir_graph_free(g);
        return NULL;
    }
    g->src = g->src_hold = dg_source_hold(src);
    dg_source_rest(src);
    return g;
}
