/* ReduceSum, ReduceMean, ReduceMax, ReduceMin: axes as attribute and as input, negative axes,
 * keepdims, noop_with_empty_axes, integers, NaN, empty reductions and accumulation precision.
 * x24 = arange(24).reshape(2,3,4); sums worked out by hand (e.g. axis 1: 0+4+8 = 12). */
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

static void x24(kt *t)
{
    kt_in_f32(t, 0, DIMS(2, 3, 4), NULL);
    for (int i = 0; i < 24; i++)
        ((float *)t->in[0].data)[i] = (float)i;
}

static void test_axes_attribute_and_input(void)
{
    kt t;
    kt_begin(&t, IR_OP_ReduceSum, 1, 1);
    x24(&t);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    kt_out(&t, 0, IR_F32, DIMS(2, 1, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 12, 15, 18, 21, 48, 51, 54, 57);
    kt_end(&t);

    /* axes as an input (opset 13+), negative, keepdims 0 */
    kt_begin(&t, IR_OP_ReduceSum, 2, 1);
    x24(&t);
    kt_ints(&t, 1, (int64_t[]){-1}, 1);
    ir_set_attr_int(t.g, t.node, "keepdims", 0);
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 6, 22, 38, 54, 70, 86);
    kt_end(&t);

    /* two separated axes */
    kt_begin(&t, IR_OP_ReduceMean, 1, 1);
    x24(&t);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){0, 2}, 2);
    ir_set_attr_int(t.g, t.node, "keepdims", 0);
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 7.5, 11.5, 15.5);
    kt_end(&t);

    /* no axes: everything */
    kt_begin(&t, IR_OP_ReduceMax, 1, 1);
    x24(&t);
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 23);
    kt_end(&t);

    /* empty axes input with noop_with_empty_axes: the identity */
    kt_begin(&t, IR_OP_ReduceMin, 2, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){3, 1, 2});
    kt_ints(&t, 1, (int64_t[]){0}, 0);
    ir_set_attr_int(t.g, t.node, "noop_with_empty_axes", 1);
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3, 1, 2);
    kt_end(&t);

    kt_begin(&t, IR_OP_ReduceSum, 2, 1);
    x24(&t);
    kt_ints(&t, 1, (int64_t[]){3}, 1);
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 4));
    CHECK(kt_fails_with(&t, "axis 3 is out of range for rank 3"));
    kt_end(&t);
}

static void test_integers_and_specials(void)
{
    kt t;
    kt_begin(&t, IR_OP_ReduceMin, 1, 1);
    kt_in_i64(&t, 0, DIMS(2, 2), (int64_t[]){5, -3, 2, 7});
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    ir_set_attr_int(t.g, t.node, "keepdims", 0);
    kt_out(&t, 0, IR_I64, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -3, 2);
    kt_end(&t);

    /* int64 sums stay exact beyond 2^53 */
    kt_begin(&t, IR_OP_ReduceSum, 1, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){(int64_t)1 << 62, 3, -((int64_t)1 << 61)});
    kt_out(&t, 0, IR_I64, DIMS(1));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, ((int64_t)1 << 61) + 3);
    kt_end(&t);

    /* an integer mean truncates */
    kt_begin(&t, IR_OP_ReduceMean, 1, 1);
    kt_in(&t, 0, IR_I32, DIMS(2), (int32_t[]){-4, -3});
    kt_out(&t, 0, IR_I32, DIMS(1));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -3);
    kt_end(&t);

    /* double accumulation keeps the 1 that float would lose */
    kt_begin(&t, IR_OP_ReduceSum, 1, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1e8f, 1, -1e8f});
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_ReduceMax, 1, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, NAN, 3});
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, NAN);
    kt_end(&t);

    /* reducing an empty dim: Sum 0, Max -inf */
    kt_begin(&t, IR_OP_ReduceSum, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 0), NULL);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    ir_set_attr_int(t.g, t.node, "keepdims", 0);
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_ReduceMax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 0), NULL);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    kt_out(&t, 0, IR_F32, DIMS(2, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -INFINITY, -INFINITY);
    kt_end(&t);
}

/* A larger case against a direct loop: reduce axes {0, 2} of [3, 4, 5, 6]. */
static void test_against_direct(void)
{
    kt t;
    kt_begin(&t, IR_OP_ReduceMean, 1, 1);
    kt_in_f32(&t, 0, DIMS(3, 4, 5, 6), NULL);
    kt_fill_random(&t.in[0], 5);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){0, -2}, 2);
    kt_out(&t, 0, IR_F32, DIMS(1, 4, 1, 6));
    CHECK(kt_run(&t));
    float want[24];
    const float *x = t.in[0].data;
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 6; d++) {
            double s = 0;
            for (int a = 0; a < 3; a++)
                for (int c = 0; c < 5; c++)
                    s += x[((a * 4 + b) * 5 + c) * 6 + d];
            want[b * 6 + d] = (float)(s / 15);
        }
    EXPECT_CLOSE(&t, 0, want, 1e-6);
    kt_end(&t);
}

int main(void)
{
    RUN(test_axes_attribute_and_input);
    RUN(test_integers_and_specials);
    RUN(test_against_direct);
    return unit_finish();
}
