/* Graphs for tests, from .graph text held in a string. */
#ifndef FUSERULE_TESTS_MATCHER_GRAPHKIT_H
#define FUSERULE_TESTS_MATCHER_GRAPHKIT_H

#include "base/check.h"
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    dg_source src;
    dg_context *dg;
    ir_graph *g;
} gk_graph;

/* Parses and validates text (aborting with the diagnostics when it is not a valid graph). */
static inline gk_graph *gk_parse(const char *text)
{
    gk_graph *t = calloc(1, sizeof *t);
    FR_CHECK(t != NULL);
    t->src.path = "test.graph";
    t->src.len = strlen(text);
    t->src.text = text;
    t->dg = dg_new();
    t->g = ir_parse(&t->src, t->dg);
    if (!t->g || !ir_validate(t->g, t->dg)) {
        dg_print(t->dg, stderr);
        abort();
    }
    return t;
}

static inline void gk_free(gk_graph *t)
{
    ir_graph_free(t->g);
    dg_free(t->dg);
    free(t);
}

/* The node producing the value named `name`. */
static inline ir_node *gk_node(const gk_graph *t, const char *name)
{
    ir_value *v = ir_find_value(t->g, name);
    FR_CHECK(v != NULL && v->producer != NULL);
    return v->producer;
}

/* The printed text of a graph. */
static inline char *gk_graph_text(const ir_graph *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_print(g, f);
    fclose(f);
    return text;
}

/* The text of g and every value's type, shape value and readers, and every node's kernel, in
 * order: what a pass leaves, down to what the printed text does not show. Tests compare a pass's
 * shortcut against its plain way with it. */
static inline char *gk_state_text(const ir_graph *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_print(g, f);
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        char type[256];
        fprintf(f, "%s %u %s kind=%d declared=%d out=%d uses=%u", v->name, v->id,
                ir_type_format(g, v->type, type, sizeof type), (int)v->kind, v->type_declared,
                v->is_output, v->nuses);
        for (uint32_t u = 0; u < v->nuses; u++)
            fprintf(f, " %u", v->uses[u]->id);
        const ir_shape_value *sv = ir_value_sv(v);
        if (sv) {
            fprintf(f, " sv");
            for (uint32_t k = 0; k < sv->len; k++)
                fprintf(f, " %d:%lld", sv->el[k].kind, (long long)sv->el[k].v);
        }
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        fprintf(f, "node %zu %u %s %s\n", i, n->id, n->outputs[0]->name,
                n->kernel ? ir_node_kernel(g, n) : "-");
    }
    fclose(f);
    return text;
}

#endif
