/* ir_compact drops the removed nodes and the values nothing keeps, and gives their names back: a
 * dropped name is free for a new value. Both ways it does so are covered: a name at a time when
 * a few values go, one pass over the name map when many go (a rewrite round at scale).
 * ir_compact_uses leaves what ir_compact and ir_compute_uses leave, and moves flags along. */
#include "base/check.h"
#include "ir/ir.h"

#include "tests/unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x -> a = Relu(x) (the output), and `unread` nodes b<i> = Neg(x) that no one reads, plus `kept`
 * more Relus of x that are outputs: the b<i> are marked removed, compacted away, and their names
 * must be free again while the others stay. */
static void compact_case(int unread, int kept)
{
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 1, .dims = {4}};
    ir_value *x = ir_add_input(g, "x", &t);
    char name[32];
    const char *names[1] = {name};
    for (int i = 0; i < kept; i++) {
        snprintf(name, sizeof name, "a%d", i);
        ir_node *n = ir_add_node(g, IR_OP_Relu, 1, names, 1);
        ir_set_input(n, 0, x);
        ir_add_output(g, n->outputs[0]);
    }
    for (int i = 0; i < unread; i++) {
        snprintf(name, sizeof name, "b%d", i);
        ir_node *n = ir_add_node(g, IR_OP_Neg, 1, names, 1);
        ir_set_input(n, 0, x);
        n->dead = true;
    }
    ir_compact(g);
    CHECK_INT(g->nodes.len, kept);
    CHECK_INT(g->values.len, 1 + kept);
    for (int i = 0; i < unread; i++) {
        snprintf(name, sizeof name, "b%d", i);
        CHECK(ir_find_value(g, name) == NULL);
    }
    for (int i = 0; i < kept; i++) {
        snprintf(name, sizeof name, "a%d", i);
        ir_value *v = ir_find_value(g, name);
        CHECK(v != NULL && v->id == (uint32_t)(1 + i) && g->values.items[v->id] == v);
    }
    CHECK(ir_find_value(g, "x") == x);
    /* a dropped name is free: a new value may take it */
    snprintf(name, sizeof name, "b0");
    ir_node *again = ir_add_node(g, IR_OP_Neg, 1, names, 1);
    CHECK(again != NULL);
    ir_set_input(again, 0, x);
    CHECK(ir_find_value(g, "b0") == again->outputs[0]);
    ir_graph_free(g);
}

static void test_few_dropped(void)
{
    compact_case(1, 200); /* one name among many: given back by name */
}

static void test_many_dropped(void)
{
    compact_case(5000, 3); /* most of the graph: one pass over the map */
}

/* A graph of `n` Adds of earlier values (some of one value twice, some of an input or the one
 * constant), every seventh an output; the use lists computed, then the nodes `drop` picks marked
 * removed. The same seed builds the same graph. */
static ir_graph *adds(int n, unsigned seed, int drop)
{
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 1, .dims = {4}};
    ir_add_input(g, "x", &t);
    ir_add_input(g, "y", &t);
    ir_const *k = ir_const_new(g, IR_CONST_LITERAL);
    ir_add_const(g, "k", &t, k);
    char name[32];
    const char *names[1] = {name};
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "a%d", i);
        ir_node *node = ir_add_node(g, IR_OP_Add, 2, names, 1);
        seed = seed * 1103515245u + 12345u;
        uint32_t a = (seed >> 8) % g->values.len;
        seed = seed * 1103515245u + 12345u;
        uint32_t b = (seed >> 8) % 5 == 0 ? a : (seed >> 12) % (g->values.len - 1);
        ir_set_input(node, 0, g->values.items[a]);
        ir_set_input(node, 1, g->values.items[b]);
        if (i % 7 == 6)
            ir_add_output(g, node->outputs[0]);
    }
    ir_compute_uses(g);
    for (size_t i = 0; i < g->nodes.len; i++)
        g->nodes.items[i]->dead =
            drop && i % (size_t)drop == 1 && !g->nodes.items[i]->outputs[0]->is_output;
    return g;
}

static void same_uses(const ir_graph *a, const ir_graph *b)
{
    CHECK_INT(a->values.len, b->values.len);
    CHECK_INT(a->nodes.len, b->nodes.len);
    for (size_t i = 0; i < a->values.len && i < b->values.len; i++) {
        const ir_value *u = a->values.items[i], *v = b->values.items[i];
        CHECK_STR(u->name, v->name);
        CHECK_INT(u->id, v->id);
        CHECK_INT(u->is_output, v->is_output);
        CHECK_INT(u->nuses, v->nuses);
        for (uint32_t r = 0; r < u->nuses && r < v->nuses; r++)
            CHECK_STR(u->uses[r]->outputs[0]->name, v->uses[r]->outputs[0]->name);
    }
}

static void test_compact_uses(void)
{
    static const int drops[] = {0, 2, 3, 50};
    for (size_t d = 0; d < sizeof drops / sizeof *drops; d++) {
        ir_graph *plain = adds(3000, 7u + (unsigned)d, drops[d]);
        ir_graph *g = adds(3000, 7u + (unsigned)d, drops[d]);
        ir_compact(plain);
        ir_compute_uses(plain);
        /* a flag on every third value before: on the same values after */
        size_t nv = g->values.len;
        bool *flag = calloc(nv, sizeof *flag);
        FR_CHECK(flag != NULL);
        for (size_t i = 0; i < nv; i += 3)
            flag[i] = true;
        char **had = calloc(nv, sizeof *had);
        FR_CHECK(had != NULL);
        for (size_t i = 0; i < nv; i++)
            had[i] = flag[i] ? strdup(g->values.items[i]->name) : NULL;
        CHECK(ir_compact_uses(g, flag));
        same_uses(plain, g);
        size_t flagged = 0;
        for (size_t i = 0; i < g->values.len; i++)
            flagged += flag[i];
        size_t kept = 0;
        for (size_t i = 0; i < nv; i++) {
            ir_value *v = had[i] ? ir_find_value(g, had[i]) : NULL;
            if (v) {
                CHECK(flag[v->id]);
                kept++;
            }
            free(had[i]);
        }
        CHECK_INT(flagged, kept);
        free(had);
        free(flag);
        ir_graph_free(plain);
        ir_graph_free(g);
    }
}

/* A live node reading a value that is not the graph's: no lists (validation reports it), the
 * graph compacted all the same. */
static void test_compact_uses_stray(void)
{
    ir_graph *g = adds(50, 3u, 4);
    ir_value *a0 = ir_find_value(g, "a0");
    uint32_t before = a0->nuses;
    ir_node **listed = a0->uses;
    ir_value stray = *ir_find_value(g, "a1");
    stray.name = "stray";
    ir_node *reader = g->nodes.items[g->nodes.len - 1];
    if (reader->dead)
        reader = g->nodes.items[g->nodes.len - 2];
    CHECK(!reader->dead);
    reader->inputs[1] = &stray;
    size_t live = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        live += !g->nodes.items[i]->dead;
    CHECK(!ir_compact_uses(g, NULL));
    CHECK(a0->nuses == before && a0->uses == listed);
    CHECK_INT(g->nodes.len, live);
    for (size_t i = 0; i < g->nodes.len; i++)
        CHECK(!g->nodes.items[i]->dead);
    ir_graph_free(g);
}

int main(void)
{
    RUN(test_few_dropped);
    RUN(test_many_dropped);
    RUN(test_compact_uses);
    RUN(test_compact_uses_stray);
    return unit_finish();
}
