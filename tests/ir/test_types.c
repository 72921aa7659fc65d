/* The graph's shared types (ir/types.c): ir_type_intern gives one copy per distinct type, and
 * ir_value_set_type points a value at it. */
#include "ir/ir.h"

#include "tests/unit.h"

#include <stdint.h>

static ir_type type_of(ir_dtype dt, int rank, const int64_t *dims, ir_layout layout)
{
    ir_type t = {.dtype = dt, .rank = (int8_t)rank, .layout = (uint8_t)layout};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

/* Equal types are one copy; each part of a type tells two apart; dims past the rank do not. */
static void test_one_copy(void)
{
    ir_graph *g = ir_graph_new("t");
    const int64_t d[] = {1, 64, 56, 56}, e[] = {1, 64, 56, 57};
    ir_type a = type_of(IR_F32, 4, d, IR_LAYOUT_NCHW), b = a;
    b.dims[5] = 7; /* past the rank: no part of the type */
    const ir_type *pa = ir_type_intern(g, &a);
    CHECK(pa != &a);
    CHECK(ir_type_equal(pa, &a));
    CHECK(ir_type_intern(g, &b) == pa);
    CHECK_INT(pa->dims[5], 0);
    ir_type other[] = {type_of(IR_F16, 4, d, IR_LAYOUT_NCHW), type_of(IR_F32, 4, e, IR_LAYOUT_NCHW),
                       type_of(IR_F32, 4, d, IR_LAYOUT_NONE), type_of(IR_F32, 3, d, IR_LAYOUT_NCHW),
                       type_of(IR_F32, -1, d, IR_LAYOUT_NCHW)};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        const ir_type *p = ir_type_intern(g, &other[i]);
        CHECK(p != pa);
        CHECK(ir_type_equal(p, &other[i]));
        CHECK(ir_type_intern(g, &other[i]) == p);
    }
    ir_graph_free(g);
}

/* Copies stay where they are while the table grows: 10,000 types, each found again. */
static void test_growth(void)
{
    ir_graph *g = ir_graph_new("t");
    enum { N = 10000 };
    static const ir_type *seen[N];
    for (int i = 0; i < N; i++) {
        const int64_t dims[] = {i, ir_dim_from_symbol((uint32_t)i % 3)};
        ir_type t = type_of(IR_F32, 2, dims, IR_LAYOUT_NONE);
        seen[i] = ir_type_intern(g, &t);
    }
    for (int i = 0; i < N; i++) {
        const int64_t dims[] = {i, ir_dim_from_symbol((uint32_t)i % 3)};
        ir_type t = type_of(IR_F32, 2, dims, IR_LAYOUT_NONE);
        CHECK(ir_type_intern(g, &t) == seen[i]);
        CHECK_INT(seen[i]->dims[0], i);
    }
    ir_graph_free(g);
}

/* Values share their types; setting one value's type leaves the others' as they were. */
static void test_values_share(void)
{
    ir_graph *g = ir_graph_new("t");
    const int64_t d[] = {2, 3};
    ir_type t = type_of(IR_F32, 2, d, IR_LAYOUT_NONE);
    ir_value *x = ir_add_input(g, "x", &t), *y = ir_add_input(g, "y", &t);
    CHECK(x->type == y->type);
    ir_node *n = ir_add_node(g, IR_OP_Relu, 1, (const char *const[]){"r"}, 1);
    CHECK_INT(n->outputs[0]->type->rank, -1); /* a new output's type is unknown */
    ir_type u = t;
    u.dtype = IR_F16;
    ir_value_set_type(g, y, &u);
    CHECK(x->type != y->type);
    CHECK_INT(x->type->dtype, IR_F32);
    CHECK_INT(y->type->dtype, IR_F16);
    ir_value_set_type(g, n->outputs[0], x->type);
    CHECK(n->outputs[0]->type == x->type);
    ir_graph_free(g);
}

int main(void)
{
    RUN(test_one_copy);
    RUN(test_growth);
    RUN(test_values_share);
    return unit_finish();
}
