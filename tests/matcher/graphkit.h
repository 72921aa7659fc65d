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

#endif
