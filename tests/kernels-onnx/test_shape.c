/* Shape, ConstantOfShape, Constant and Range: the ops exporters build shapes with. */
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

static void shape_case(kt *t, int64_t start, int64_t end, int64_t count)
{
    kt_begin(t, IR_OP_Shape, 1, 1);
    kt_in_f32(t, 0, DIMS(2, 3, 4), NULL);
    kt_out(t, 0, IR_I64, 1, &count);
    if (start != 0)
        ir_set_attr_int(t->g, t->node, "start", start);
    if (end != INT64_MAX)
        ir_set_attr_int(t->g, t->node, "end", end);
    CHECK(kt_run(t));
}

static void test_shape(void)
{
    kt t;
    shape_case(&t, 0, INT64_MAX, 3);
    EXPECT_INT(&t, 0, 2, 3, 4);
    kt_end(&t);
    shape_case(&t, -2, INT64_MAX, 2);
    EXPECT_INT(&t, 0, 3, 4);
    kt_end(&t);
    shape_case(&t, 1, -1, 1);
    EXPECT_INT(&t, 0, 3);
    kt_end(&t);
    shape_case(&t, 5, INT64_MAX, 0); /* clamped start past the end: empty */
    kt_end(&t);
    shape_case(&t, -10, 10, 3); /* both clamped */
    EXPECT_INT(&t, 0, 2, 3, 4);
    kt_end(&t);
}

static void test_constant_of_shape(void)
{
    kt t;
    kt_begin(&t, IR_OP_ConstantOfShape, 1, 1);
    kt_ints(&t, 0, (int64_t[]){2, 2}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    ir_set_attr_float(t.g, t.node, "value", 3.5);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3.5, 3.5, 3.5, 3.5);
    kt_end(&t);

    /* the default value 0, in the output's dtype (i64 chosen by `dtype` at inference) */
    kt_begin(&t, IR_OP_ConstantOfShape, 1, 1);
    kt_ints(&t, 0, (int64_t[]){3}, 1);
    kt_out(&t, 0, IR_I64, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_ConstantOfShape, 1, 1);
    kt_ints(&t, 0, (int64_t[]){2}, 1);
    kt_out(&t, 0, IR_BOOL, DIMS(2));
    ir_set_attr_float(t.g, t.node, "value", 1);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_ConstantOfShape, 1, 1);
    kt_ints(&t, 0, (int64_t[]){2, 3}, 2);
    kt_out(&t, 0, IR_F32, DIMS(3, 2));
    CHECK(kt_fails_with(&t, "another shape"));
    kt_end(&t);
}

static void test_constant(void)
{
    kt t;
    kt_begin(&t, IR_OP_Constant, 0, 1);
    ir_set_attr_floats(t.g, t.node, "value_floats", (double[]){1.5, -2}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1.5, -2);
    kt_end(&t);

    kt_begin(&t, IR_OP_Constant, 0, 1);
    ir_set_attr_int(t.g, t.node, "value_int", INT64_MAX);
    kt_out(&t, 0, IR_I64, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, INT64_MAX);
    kt_end(&t);

    kt_begin(&t, IR_OP_Constant, 0, 1);
    ir_set_attr_ints(t.g, t.node, "value_ints", (int64_t[]){-1, 768}, 2);
    kt_out(&t, 0, IR_I64, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -1, 768);
    kt_end(&t);

    kt_begin(&t, IR_OP_Constant, 0, 1);
    kt_out(&t, 0, IR_F32, SCALAR);
    CHECK(kt_fails_with(&t, "no value_float"));
    kt_end(&t);
}

static void test_range(void)
{
    kt t;
    /* ceil((2 - 1) / 0.3) = 4 values */
    kt_begin(&t, IR_OP_Range, 3, 1);
    kt_in_f32(&t, 0, SCALAR, (float[]){1});
    kt_in_f32(&t, 1, SCALAR, (float[]){2});
    kt_in_f32(&t, 2, SCALAR, (float[]){0.3f});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1.3, 1.6, 1.9);
    kt_end(&t);

    kt_begin(&t, IR_OP_Range, 3, 1);
    kt_in_i64(&t, 0, SCALAR, (int64_t[]){10});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){4});
    kt_in_i64(&t, 2, SCALAR, (int64_t[]){-3});
    kt_out(&t, 0, IR_I64, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 10, 7);
    kt_end(&t);

    /* an empty range */
    kt_begin(&t, IR_OP_Range, 3, 1);
    kt_in(&t, 0, IR_I32, SCALAR, (int32_t[]){5});
    kt_in(&t, 1, IR_I32, SCALAR, (int32_t[]){5});
    kt_in(&t, 2, IR_I32, SCALAR, (int32_t[]){1});
    kt_out(&t, 0, IR_I32, DIMS(0));
    CHECK(kt_run(&t));
    kt_end(&t);

    kt_begin(&t, IR_OP_Range, 3, 1);
    kt_in_i64(&t, 0, SCALAR, (int64_t[]){0});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){4});
    kt_in_i64(&t, 2, SCALAR, (int64_t[]){0});
    kt_out(&t, 0, IR_I64, DIMS(4));
    CHECK(kt_fails_with(&t, "delta must be non-zero"));
    kt_end(&t);

    /* the computed length disagrees with the allocated output */
    kt_begin(&t, IR_OP_Range, 3, 1);
    kt_in_i64(&t, 0, SCALAR, (int64_t[]){0});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){INT64_MAX});
    kt_in_i64(&t, 2, SCALAR, (int64_t[]){1});
    kt_out(&t, 0, IR_I64, DIMS(4));
    CHECK(kt_fails_with(&t, "allocated with 4"));
    kt_end(&t);
}

int main(void)
{
    RUN(test_shape);
    RUN(test_constant_of_shape);
    RUN(test_constant);
    RUN(test_range);
    return unit_finish();
}
