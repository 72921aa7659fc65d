/* Loading a .graph file: read, parse, validate.
 *
 * The text is handed to the diagnostics context, because the diagnostics of a failed load point
 * into it after the graph is gone. A graph that loads keeps its own copy of the text in its arena,
 * so that g->src lives exactly as long as the graph. */
#include "ir/ir.h"

#include <string.h>

static const dg_source *copy_source(ir_graph *g, const dg_source *src)
{
    dg_source *copy = ar_alloc(g->arena, sizeof *copy);
    char *text = ar_alloc(g->arena, src->len + 1);
    memcpy(text, src->text, src->len);
    copy->path = ar_strdup(g->arena, src->path);
    copy->text = text;
    copy->len = src->len;
    return copy;
}

ir_graph *ir_load_text(const char *path, dg_context *dg)
{
    dg_source read;
    if (!dg_source_read(dg, path, &read))
        return NULL;
    const dg_source *src = dg_source_adopt(dg, &read);
    ir_graph *g = ir_parse(src, dg);
    if (!g)
        return NULL;
    if (!ir_validate(g, dg)) {
        ir_graph_free(g);
        return NULL;
    }
    g->src = copy_source(g, src);
    return g;
}
