/* Broadcasting binary and n-ary kernels: Add, Sub, Mul, Div, Pow, PRelu, Max, Min, Equal, Less,
 * Greater, Where; integer arithmetic as exporters use it for shapes. Broadcast results were
 * checked with numpy (e.g. np.arange(24).reshape(2,3,4) * [[1],[2],[3]]). */
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

static void test_same_shape_and_scalar(void)
{
    kt t;
    kt_begin(&t, IR_OP_Add, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 2), (float[]){1, 2, 3, 4});
    kt_in_f32(&t, 1, DIMS(2, 2), (float[]){10, 20, 30, 40});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 11, 22, 33, 44);
    kt_end(&t);

    /* scalar on the left and on the right */
    kt_begin(&t, IR_OP_Sub, 2, 1);
    kt_in_f32(&t, 0, SCALAR, (float[]){10});
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 9, 8, 7);
    kt_end(&t);

    kt_begin(&t, IR_OP_Div, 2, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, 2, 3});
    kt_in_f32(&t, 1, DIMS(1), (float[]){4});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.25, 0.5, 0.75);
    kt_end(&t);
}

static void test_broadcast_both_ways(void)
{
    kt t;
    /* [2,3] - [2,1]: the right operand is broadcast along the last dim */
    kt_begin(&t, IR_OP_Sub, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){0, 1, 2, 3, 4, 5});
    kt_in_f32(&t, 1, DIMS(2, 1), (float[]){10, 20});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -10, -9, -8, -17, -16, -15);
    kt_end(&t);

    /* [3,1] x [1,4] -> [3,4]: each operand broadcast along a different dim */
    kt_begin(&t, IR_OP_Mul, 2, 1);
    kt_in_f32(&t, 0, DIMS(3, 1), (float[]){1, 2, 3});
    kt_in_f32(&t, 1, DIMS(1, 4), (float[]){1, 10, 100, 1000});
    kt_out(&t, 0, IR_F32, DIMS(3, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 10, 100, 1000, 2, 20, 200, 2000, 3, 30, 300, 3000);
    kt_end(&t);

    /* [2,3,4] * [3,1]: a per-row scale in the middle dims (non-square, so the axis matters) */
    kt_begin(&t, IR_OP_Mul, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 4), NULL);
    for (int i = 0; i < 24; i++)
        ((float *)t.in[0].data)[i] = (float)i;
    kt_in_f32(&t, 1, DIMS(3, 1), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1, 2, 3, 8, 10, 12, 14, 24, 27, 30, 33, 12, 13, 14, 15, 32, 34, 36, 38,
               60, 63, 66, 69);
    kt_end(&t);

    /* the left operand smaller: [4] + [2,4] */
    kt_begin(&t, IR_OP_Add, 2, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){1, 2, 3, 4});
    kt_in_f32(&t, 1, DIMS(2, 4), (float[]){0, 0, 0, 0, 10, 10, 10, 10});
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 3, 4, 11, 12, 13, 14);
    kt_end(&t);

    kt_begin(&t, IR_OP_Add, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    kt_in_f32(&t, 1, DIMS(2), (float[]){1, 2});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_fails_with(&t, "do not broadcast"));
    kt_end(&t);
}

/* Exporters compute shapes in i64: Shape -> Gather -> Mul/Div/Add -> Concat -> Reshape. */
static void test_integer_arithmetic(void)
{
    kt t;
    kt_begin(&t, IR_OP_Mul, 2, 1);
    kt_in_i64(&t, 0, DIMS(2), (int64_t[]){12, 64});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){3});
    kt_out(&t, 0, IR_I64, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 36, 192);
    kt_end(&t);

    /* ONNX integer Div truncates toward zero: -7 / 2 = -3, 7 / -2 = -3 */
    kt_begin(&t, IR_OP_Div, 2, 1);
    kt_in_i64(&t, 0, DIMS(4), (int64_t[]){7, -7, 7, INT64_MIN});
    kt_in_i64(&t, 1, DIMS(4), (int64_t[]){2, 2, -2, -1});
    kt_out(&t, 0, IR_I64, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 3, -3, -3, INT64_MIN);
    kt_end(&t);

    kt_begin(&t, IR_OP_Div, 2, 1);
    kt_in(&t, 0, IR_I32, DIMS(2), (int32_t[]){7, 8});
    kt_in(&t, 1, IR_I32, DIMS(2), (int32_t[]){1, 0});
    kt_out(&t, 0, IR_I32, DIMS(2));
    CHECK(kt_fails_with(&t, "integer division by zero"));
    kt_end(&t);

    /* overflow wraps instead of being undefined */
    kt_begin(&t, IR_OP_Add, 2, 1);
    kt_in(&t, 0, IR_I32, DIMS(2), (int32_t[]){INT32_MAX, -5});
    kt_in(&t, 1, IR_I32, DIMS(2), (int32_t[]){1, 3});
    kt_out(&t, 0, IR_I32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, INT32_MIN, -2);
    kt_end(&t);

    kt_begin(&t, IR_OP_Sub, 2, 1);
    kt_in(&t, 0, IR_U8, DIMS(2), (uint8_t[]){3, 200});
    kt_in(&t, 1, IR_U8, DIMS(2), (uint8_t[]){5, 100});
    kt_out(&t, 0, IR_U8, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 254, 100);
    kt_end(&t);

    kt_begin(&t, IR_OP_Add, 2, 1);
    kt_in_i64(&t, 0, DIMS(1), (int64_t[]){1});
    kt_in_f32(&t, 1, DIMS(1), (float[]){1});
    kt_out(&t, 0, IR_I64, DIMS(1));
    CHECK(kt_fails_with(&t, "operand dtypes differ: i64 and f32"));
    kt_end(&t);
}

static void test_pow_prelu(void)
{
    kt t;
    kt_begin(&t, IR_OP_Pow, 2, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){2, -2, 4});
    kt_in_f32(&t, 1, DIMS(3), (float[]){3, 2, 0.5f});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 8, 4, 2);
    kt_end(&t);

    /* float base, integer exponent (Pow's T1 differs from T) */
    kt_begin(&t, IR_OP_Pow, 2, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){3, 0.5f});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){2});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 9, 0.25);
    kt_end(&t);

    kt_begin(&t, IR_OP_Pow, 2, 1);
    kt_in_i64(&t, 0, DIMS(2), (int64_t[]){3, -2});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){3});
    kt_out(&t, 0, IR_I64, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 27, -8);
    kt_end(&t);

    /* PRelu with a per-channel slope [C,1,1] on [1,2,1,2] */
    kt_begin(&t, IR_OP_PRelu, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 2, 1, 2), (float[]){-1, 2, -3, 4});
    kt_in_f32(&t, 1, DIMS(2, 1, 1), (float[]){0.1f, 0.5f});
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 1, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.1, 2, -1.5, 4);
    kt_end(&t);
}

static void test_max_min_variadic(void)
{
    kt t;
    kt_begin(&t, IR_OP_Max, 3, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, 5, NAN});
    kt_in_f32(&t, 1, DIMS(2, 1), (float[]){2, 4});
    kt_in_f32(&t, 2, SCALAR, (float[]){3});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3, 5, NAN, 4, 5, NAN);
    kt_end(&t);

    kt_begin(&t, IR_OP_Min, 2, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){1, 5, -3});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){2});
    kt_out(&t, 0, IR_I64, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 2, -3);
    kt_end(&t);

    /* one input: a copy */
    kt_begin(&t, IR_OP_Max, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){-1, 1});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, 1);
    kt_end(&t);
}

static void test_comparisons(void)
{
    kt t;
    kt_begin(&t, IR_OP_Equal, 2, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){1, 2, 3});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){2});
    kt_out(&t, 0, IR_BOOL, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Equal, 2, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(2), (uint8_t[]){0, 1});
    kt_in(&t, 1, IR_BOOL, DIMS(2, 1), (uint8_t[]){1, 0});
    kt_out(&t, 0, IR_BOOL, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 1, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Less, 2, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){1, 2, 3, NAN});
    kt_in_f32(&t, 1, DIMS(1), (float[]){2});
    kt_out(&t, 0, IR_BOOL, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 0, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Greater, 2, 1);
    kt_in(&t, 0, IR_I32, DIMS(2, 1), (int32_t[]){1, 5});
    kt_in(&t, 1, IR_I32, DIMS(3), (int32_t[]){0, 1, 6});
    kt_out(&t, 0, IR_BOOL, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 0, 0, 1, 1, 0);
    kt_end(&t);
}

static void test_where(void)
{
    kt t;
    kt_begin(&t, IR_OP_Where, 3, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(2, 1), (uint8_t[]){1, 0});
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 2, 3});
    kt_in_f32(&t, 2, SCALAR, (float[]){-1});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 3, -1, -1, -1);
    kt_end(&t);

    /* any dtype: i64 */
    kt_begin(&t, IR_OP_Where, 3, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(3), (uint8_t[]){0, 1, 0});
    kt_in_i64(&t, 1, DIMS(3), (int64_t[]){1, 2, 3});
    kt_in_i64(&t, 2, DIMS(3), (int64_t[]){INT64_MAX, -5, 7});
    kt_out(&t, 0, IR_I64, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, INT64_MAX, 2, 7);
    kt_end(&t);

    kt_begin(&t, IR_OP_Where, 3, 1);
    kt_in_f32(&t, 0, DIMS(1), (float[]){1});
    kt_in_f32(&t, 1, DIMS(1), (float[]){1});
    kt_in_f32(&t, 2, DIMS(1), (float[]){1});
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_fails_with(&t, "the condition must be bool"));
    kt_end(&t);
}

/* A larger broadcast against a direct index computation, covering the run merging. */
static void test_broadcast_against_direct(void)
{
    kt t;
    kt_begin(&t, IR_OP_Add, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 1, 4, 5), NULL);
    kt_in_f32(&t, 1, DIMS(3, 1, 5), NULL);
    kt_fill_random(&t.in[0], 1);
    kt_fill_random(&t.in[1], 2);
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 4, 5));
    CHECK(kt_run(&t));
    float want[120];
    const float *a = t.in[0].data, *b = t.in[1].data;
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 4; h++)
                for (int w = 0; w < 5; w++)
                    want[((n * 3 + c) * 4 + h) * 5 + w] = a[(n * 4 + h) * 5 + w] + b[c * 5 + w];
    EXPECT_CLOSE(&t, 0, want, 0);
    kt_end(&t);
}

int main(void)
{
    RUN(test_same_shape_and_scalar);
    RUN(test_broadcast_both_ways);
    RUN(test_integer_arithmetic);
    RUN(test_pow_prelu);
    RUN(test_max_min_variadic);
    RUN(test_comparisons);
    RUN(test_where);
    RUN(test_broadcast_against_direct);
    return unit_finish();
}
