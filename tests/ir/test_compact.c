/* ir_compact drops the removed nodes and the values nothing keeps, and gives their names back: a
 * dropped name is free for a new value. Both ways it does so are covered: a name at a time when
 * a few values go, one pass over the name map when many go (a rewrite round at scale). */
#include "ir/ir.h"

#include "tests/unit.h"

#include <stdio.h>

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

int main(void)
{
    RUN(test_few_dropped);
    RUN(test_many_dropped);
    return unit_finish();
}
