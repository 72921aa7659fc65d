/* ir/ir.h's compact layouts: a constant holds only the fields of its kind (a union), a value's
 * constant and shape value share one place, a node's op and op span are narrow. What reads them
 * must check the kind first; these cases change kinds and read back through the accessors. */
#include "ir/ir.h"

#include "tests/unit.h"

#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(ir_const) == 56, "a constant: 24 bytes every kind has, 32 of the union");
_Static_assert(sizeof(ir_value) == 56 && sizeof(ir_node) == 48, "a value, a node");

static const ir_type f32_4 = {.dtype = IR_F32, .rank = 1, .dims = {4}};

static ir_value *literal(ir_graph *g, const char *name, const double *x, size_t n)
{
    ir_const *c = ir_const_new(g, IR_CONST_LITERAL);
    c->literal = ar_alloc_array(g->arena, n, sizeof *c->literal);
    memcpy(c->literal, x, n * sizeof *x);
    c->literal_count = n;
    return ir_add_const(g, name, &f32_4, c);
}

/* A random constant starts with the default range; the other kinds leave the union alone. */
static void test_new_const(void)
{
    ir_graph *g = ir_graph_new("t");
    ir_const *r = ir_const_new(g, IR_CONST_RANDOM);
    CHECK(r->lo == -1.0 && r->hi == 1.0 && r->seed == 0 && r->data == NULL);
    ir_const *l = ir_const_new(g, IR_CONST_LITERAL);
    CHECK(l->literal == NULL && l->literal_count == 0);
    ir_const *d = ir_const_new(g, IR_CONST_DATA);
    CHECK(d->mapped == NULL && d->parts == NULL && d->scaled == NULL && d->rows == 0);
    ir_graph_free(g);
}

/* A literal that becomes data forgets its literal fields (they share the union with data's
 * sources): it is neither deferred nor assembled from rows, and holds the bytes given. */
static void test_literal_becomes_data(void)
{
    ir_graph *g = ir_graph_new("t");
    ir_value *v = literal(g, "c", (double[]){1, 2, 3, 4}, 4);
    const float x[4] = {5, 6, 7, 8};
    ir_const_set_data(g, v, x, sizeof x);
    CHECK(v->konst->kind == IR_CONST_DATA);
    CHECK(!ir_const_is_deferred(v) && ir_const_scaled_get(v) == NULL);
    size_t rows;
    uint32_t nparts;
    CHECK(ir_const_rows(v, &rows, &nparts) == NULL);
    const void *data = ir_const_data_or_null(g, v);
    CHECK(data && memcmp(data, x, sizeof x) == 0);
    ir_graph_free(g);
}

/* A literal assembled from rows: the parts are read back as such, and put together when read. */
static void test_literal_becomes_rows(void)
{
    ir_graph *g = ir_graph_new("t");
    ir_value *v = literal(g, "c", (double[]){0}, 1);
    static const float a[2] = {1, 2}, b[2] = {3, 4};
    ir_const_part parts[2] = {{a, sizeof a}, {b, sizeof b}};
    ir_const_set_rows(g, v, 1, parts, 2);
    size_t rows = 0;
    uint32_t nparts = 0;
    const ir_const_part *p = ir_const_rows(v, &rows, &nparts);
    CHECK(p && rows == 1 && nparts == 2 && p[0].src == a && p[1].src == b);
    CHECK(ir_const_is_deferred(v));
    const float *data = ir_const_data_or_null(g, v);
    CHECK(data && data[0] == 1 && data[1] == 2 && data[2] == 3 && data[3] == 4);
    CHECK(ir_const_rows(v, &rows, &nparts) == NULL); /* assembled now */
    ir_graph_free(g);
}

/* A Shape's output has a shape value; a constant's place holds its constant instead, and reads
 * as no shape value. */
static void test_shape_value_and_const(void)
{
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 2, .dims = {2, 3}};
    ir_value *x = ir_add_input(g, "x", &t);
    const char *names[1] = {"s"};
    ir_node *n = ir_add_node(g, IR_OP_Shape, 1, names, 1);
    ir_set_input(n, 0, x);
    ir_add_output(g, n->outputs[0]);
    ir_value *c = literal(g, "c", (double[]){1, 2, 3, 4}, 4);
    ir_add_output(g, c);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    CHECK(!dg_has_errors(dg));
    const ir_shape_value *sv = ir_value_sv(n->outputs[0]);
    CHECK(sv && sv->len == 2 && sv->el[0].v == 2 && sv->el[1].v == 3);
    CHECK(ir_sv_is_constant(n->outputs[0]));
    CHECK(c->konst != NULL && ir_value_sv(c) == NULL && !ir_sv_is_constant(c));
    dg_free(dg);
    ir_graph_free(g);
}

/* Validation sees a literal constant's values change (the fingerprint reads the fields of its
 * kind), and a data constant's bytes. */
static void test_fingerprint_by_kind(void)
{
    ir_graph *g = ir_graph_new("t");
    ir_value *c = literal(g, "c", (double[]){1, 2, 3, 4}, 4);
    ir_value *d = literal(g, "d", (double[]){1}, 1);
    const float x[4] = {1, 2, 3, 4};
    ir_const_set_data(g, d, x, sizeof x);
    ir_add_output(g, c);
    ir_add_output(g, d);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    ir_validated *s = ir_validated_take(g);
    bool node_changed[1], value_changed[2];
    ir_validated_changed(s, g, node_changed, value_changed);
    CHECK(!value_changed[0] && !value_changed[1]);
    c->konst->literal = ar_alloc_array(g->arena, 1, sizeof(double));
    c->konst->literal[0] = 7;
    c->konst->literal_count = 1;
    ir_const_set_data(g, d, (float[4]){4, 3, 2, 1}, sizeof x);
    ir_validated_changed(s, g, node_changed, value_changed);
    CHECK(value_changed[0] && value_changed[1]);
    ir_validated_free(s);
    dg_free(dg);
    ir_graph_free(g);
}

/* A node remembers its op's span in a byte: short spans as they are, a longer one saturated. */
static void test_node_src_len(void)
{
    CHECK_INT(ir_node_src_len(4), 4);
    CHECK_INT(ir_node_src_len(254), 254);
    CHECK_INT(ir_node_src_len(255), 255);
    CHECK_INT(ir_node_src_len(100000), 255);
    ir_graph *g = ir_graph_new("t");
    const char *names[1] = {"y"};
    ir_node *n = ir_add_node(g, IR_OP_DynamicQuantizeMatMul, 2, names, 1);
    CHECK(n->op == IR_OP_DynamicQuantizeMatMul && n->src_len == 0 && !n->dead);
    ir_graph_free(g);
}

/* A node's kernel is an index into its graph's table of names: equal names share one entry and
 * one string, NULL unbinds, and a name past IR_MAX_KERNELS is refused, leaving the node as it
 * was, while the names already in the table still bind. */
static void test_kernel_table(void)
{
    ir_graph *g = ir_graph_new("t");
    const char *names[1] = {"a"}, *more[1] = {"b"};
    ir_node *a = ir_add_node(g, IR_OP_Relu, 1, names, 1);
    ir_node *b = ir_add_node(g, IR_OP_Relu, 1, more, 1);
    CHECK(a->kernel == 0 && ir_node_kernel(g, a) == NULL);
    char name[] = "cpu.FusedConvAct";
    CHECK(ir_node_set_kernel(g, a, name));
    CHECK(ir_node_set_kernel_n(g, b, "cpu.FusedConvAct plus", 16));
    name[0] = 'x'; /* the table holds a copy */
    CHECK(a->kernel == b->kernel && ir_node_kernel(g, a) == ir_node_kernel(g, b));
    CHECK_STR(ir_node_kernel(g, a), "cpu.FusedConvAct");
    CHECK(ir_node_set_kernel(g, b, "cuda.FusedConvAct") && a->kernel != b->kernel);
    CHECK_STR(ir_node_kernel(g, b), "cuda.FusedConvAct");
    CHECK(ir_node_set_kernel(g, b, NULL) && b->kernel == 0 && ir_node_kernel(g, b) == NULL);
    bool all_bound = true;
    for (unsigned i = (unsigned)g->kernels.len; i < IR_MAX_KERNELS; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%u", i);
        all_bound &= ir_node_set_kernel(g, b, k);
    }
    CHECK(all_bound);
    CHECK_INT(b->kernel, IR_MAX_KERNELS);
    CHECK(!ir_node_set_kernel(g, a, "one too many"));
    CHECK_STR(ir_node_kernel(g, a), "cpu.FusedConvAct");
    CHECK(ir_node_set_kernel(g, a, "k7") && ir_node_set_kernel(g, b, "cpu.FusedConvAct"));
    CHECK_STR(ir_node_kernel(g, a), "k7");
    CHECK_INT(b->kernel, 1);
    ir_graph_free(g);
}

int main(void)
{
    RUN(test_new_const);
    RUN(test_literal_becomes_data);
    RUN(test_literal_becomes_rows);
    RUN(test_shape_value_and_const);
    RUN(test_fingerprint_by_kind);
    RUN(test_node_src_len);
    RUN(test_kernel_table);
    return unit_finish();
}
