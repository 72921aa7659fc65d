/* The graph's shared types (ir/types.c): ir_type_intern gives one copy per distinct type, and
 * ir_value_set_type points a value at it. */
#include "ir/ir.h"

#include "base/check.h"
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
        CHECK(ir_type_intern(g, &a) == pa); /* the last copy given: one part tells other[i] apart */
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

/* ir_type_numel as the division form computed it: n > IR_MAX_NUMEL / d fails, per dim. */
static bool numel_by_division(const ir_type *t, int64_t *numel)
{
    if (!ir_type_is_static(t))
        return false;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] != 0 && n > IR_MAX_NUMEL / t->dims[i])
            return false;
        n *= t->dims[i];
    }
    *numel = n;
    return true;
}

/* Element counts: the limit IR_MAX_NUMEL itself counts, one more does not; a product that would
 * overflow int64 fails however it overflows; a zero dim anywhere gives 0; unknown ranks and dims
 * are not static. Random shapes near the limit agree with the division form. */
static void test_numel(void)
{
    const int64_t max = IR_MAX_NUMEL;
    struct {
        int rank;
        int64_t dims[4];
        bool ok;
        int64_t n;
    } cases[] = {
        {0, {0}, true, 1},
        {1, {max}, true, max},
        {1, {max + 1}, false, 0},
        {2, {1 << 20, 1 << 20}, true, max},
        {2, {(1 << 20) + 1, 1 << 20}, false, 0},
        {2, {INT64_MAX, 2}, false, 0},
        {2, {2, INT64_MAX}, false, 0},
        {3, {INT64_MAX, INT64_MAX, 0}, false, 0}, /* fails before the zero, as it did */
        {3, {0, INT64_MAX, INT64_MAX}, true, 0},
        {4, {1, 4, 2, 2}, true, 16},
        {2, {3, IR_DIM_UNKNOWN}, false, 0},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_type t = type_of(IR_F32, cases[i].rank, cases[i].dims, IR_LAYOUT_NONE);
        int64_t n = -1, m = -1;
        CHECK(ir_type_numel(&t, &n) == cases[i].ok);
        CHECK(numel_by_division(&t, &m) == cases[i].ok);
        if (cases[i].ok)
            CHECK_INT(n, cases[i].n);
    }
    ir_type unknown = {.rank = -1};
    int64_t n;
    CHECK(!ir_type_numel(&unknown, &n));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 20000; i++) {
        ir_type t = {.dtype = IR_F32, .rank = (int8_t)(1 + i % IR_MAX_RANK)};
        for (int d = 0; d < t.rank; d++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int bits = (int)(x % 63); /* up to 2^62: products near and past the limit */
            t.dims[d] = (int64_t)((x >> 8) & (((uint64_t)1 << bits) - 1));
        }
        int64_t a = -1, b = -1;
        bool oka = ir_type_numel(&t, &a), okb = numel_by_division(&t, &b);
        CHECK(oka == okb);
        if (oka)
            CHECK_INT(a, b);
    }
}

int main(void)
{
    RUN(test_one_copy);
    RUN(test_growth);
    RUN(test_values_share);
    RUN(test_numel);
    return unit_finish();
}
