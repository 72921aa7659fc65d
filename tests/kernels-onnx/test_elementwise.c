/* Unary ONNX kernels: activations, math functions, Clip, Not, Cast, Dropout (inference and training). Expected values of
 * the transcendental functions were computed in double with Python's math module on the inputs
 * X5 = [-1.5, -0.5, 0, 0.5, 2] (the formulas are ONNX's). */
#include "tests/kernels-onnx/kt.h"

#include <float.h>
#include <stdint.h>

#define X5 (float[]){-1.5f, -0.5f, 0.0f, 0.5f, 2.0f}

/* Runs a unary float op on X5. */
static void unary5(kt *t, ir_op op)
{
    kt_begin(t, op, 1, 1);
    kt_in_f32(t, 0, DIMS(5), X5);
    kt_out(t, 0, IR_F32, DIMS(5));
}

static void test_math_functions(void)
{
    kt t;
    unary5(&t, IR_OP_Sigmoid);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.18242552380635635, 0.3775406687981454, 0.5, 0.6224593312018546,
               0.8807970779778823);
    kt_end(&t);

    unary5(&t, IR_OP_Tanh);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.9051482536448664, -0.46211715726000974, 0, 0.46211715726000974,
               0.9640275800758169);
    kt_end(&t);

    unary5(&t, IR_OP_Erf);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.9661051464753108, -0.5204998778130465, 0, 0.5204998778130465,
               0.9953222650189527);
    kt_end(&t);

    unary5(&t, IR_OP_Exp);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.22313016014842982, 0.6065306597126334, 1, 1.6487212707001282,
               7.38905609893065);
    kt_end(&t);

    unary5(&t, IR_OP_Softplus);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.2014132779827524, 0.4740769841801067, 0.6931471805599453,
               0.9740769841801067, 2.1269280110429727);
    kt_end(&t);

    unary5(&t, IR_OP_Floor);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -2, -1, 0, 0, 2);
    kt_end(&t);

    unary5(&t, IR_OP_Ceil);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, -0.0, 0, 1, 2);
    kt_end(&t);

    unary5(&t, IR_OP_Reciprocal);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1 / 1.5, -2, INFINITY, 2, 0.5);
    kt_end(&t);

    unary5(&t, IR_OP_Sqrt);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, NAN, NAN, 0, 0.70710678118654752, 1.4142135623730951);
    kt_end(&t);

    unary5(&t, IR_OP_Log);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, NAN, NAN, -INFINITY, -0.6931471805599453, 0.6931471805599453);
    kt_end(&t);
}

/* Softplus and Sigmoid must not overflow for large |x|. */
static void test_extremes(void)
{
    kt t;
    kt_begin(&t, IR_OP_Softplus, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){100.0f, -100.0f});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 100, 3.720075976020836e-44);
    kt_end(&t);

    kt_begin(&t, IR_OP_Sigmoid, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){-1000.0f, 1000.0f});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1);
    kt_end(&t);
}

static void test_gelu(void)
{
    kt t;
    unary5(&t, IR_OP_Gelu); /* approximate = "none": the erf form */
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.10021080190328713, -0.15426876936299344, 0, 0.34573123063700656,
               1.9544997361036416);
    kt_end(&t);

    unary5(&t, IR_OP_Gelu);
    ir_set_attr_string(t.g, t.node, "approximate", "tanh");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.10042842301976707, -0.15428599017485606, 0, 0.34571400982514394,
               1.954597694087775);
    kt_end(&t);

    unary5(&t, IR_OP_Gelu);
    ir_set_attr_string(t.g, t.node, "approximate", "fast");
    CHECK(kt_fails_with(&t, "approximate must be"));
    kt_end(&t);
}

static void test_parametric_activations(void)
{
    kt t;
    unary5(&t, IR_OP_LeakyRelu); /* default alpha 0.01 */
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.015, -0.005, 0, 0.5, 2);
    kt_end(&t);

    unary5(&t, IR_OP_LeakyRelu);
    ir_set_attr_float(t.g, t.node, "alpha", 0.5);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.75, -0.25, 0, 0.5, 2);
    kt_end(&t);

    unary5(&t, IR_OP_Elu); /* alpha 1: expm1(x) below 0 */
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.7768698398515702, -0.3934693402873666, 0, 0.5, 2);
    kt_end(&t);

    unary5(&t, IR_OP_HardSigmoid); /* max(0, min(1, 0.2x + 0.5)) */
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.2, 0.4, 0.5, 0.6, 0.9);
    kt_end(&t);

    kt_begin(&t, IR_OP_HardSigmoid, 1, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){-10, 1, 10});
    kt_out(&t, 0, IR_F32, DIMS(3));
    ir_set_attr_float(t.g, t.node, "alpha", 0.5);
    ir_set_attr_float(t.g, t.node, "beta", 0.25);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0.75, 1);
    kt_end(&t);

    /* HardSwish = x * max(0, min(1, x/6 + 0.5)) */
    kt_begin(&t, IR_OP_HardSwish, 1, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){-4, -1, 1, 4});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, -1.0 / 3.0, 2.0 / 3.0, 4);
    kt_end(&t);
}

static void test_relu_neg_abs_on_integers(void)
{
    kt t;
    kt_begin(&t, IR_OP_Relu, 1, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){-1, 0, 2.5f, NAN});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0, 2.5, NAN);
    kt_end(&t);

    kt_begin(&t, IR_OP_Relu, 1, 1);
    kt_in(&t, 0, IR_I32, DIMS(3), (int32_t[]){-3, 0, 4});
    kt_out(&t, 0, IR_I32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 4);
    kt_end(&t);

    /* the most negative value negates to itself (two's complement), without UB */
    kt_begin(&t, IR_OP_Neg, 1, 1);
    kt_in(&t, 0, IR_I32, DIMS(3), (int32_t[]){5, -7, INT32_MIN});
    kt_out(&t, 0, IR_I32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -5, 7, INT32_MIN);
    kt_end(&t);

    kt_begin(&t, IR_OP_Abs, 1, 1);
    kt_in(&t, 0, IR_I8, DIMS(3), (int8_t[]){-5, 7, INT8_MIN});
    kt_out(&t, 0, IR_I8, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 5, 7, INT8_MIN);
    kt_end(&t);

    kt_begin(&t, IR_OP_Abs, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){-0.0f, -3.5f});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 3.5);
    kt_end(&t);

    /* Sin on an integer tensor is not an ONNX op: an error, not garbage */
    kt_begin(&t, IR_OP_Sin, 1, 1);
    kt_in(&t, 0, IR_I64, DIMS(1), (int64_t[]){1});
    kt_out(&t, 0, IR_I64, DIMS(1));
    CHECK(kt_fails_with(&t, "dtype i64 is not supported"));
    kt_end(&t);
}

static void test_clip(void)
{
    kt t;
    /* bounds as inputs (opset 11+) */
    kt_begin(&t, IR_OP_Clip, 3, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){-2, 0.5f, 3, NAN});
    kt_in_f32(&t, 1, SCALAR, (float[]){-1});
    kt_in_f32(&t, 2, SCALAR, (float[]){1});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, 0.5, 1, NAN);
    kt_end(&t);

    /* only max given (min omitted: data NULL) */
    kt_begin(&t, IR_OP_Clip, 3, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){-2, 0.5f, 3});
    kt_in_f32(&t, 2, SCALAR, (float[]){1});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -2, 0.5, 1);
    kt_end(&t);

    /* min > max: ONNX's min(max(x, lo), hi) gives hi everywhere */
    kt_begin(&t, IR_OP_Clip, 3, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){-2, 0.5f, 3});
    kt_in_f32(&t, 1, SCALAR, (float[]){2});
    kt_in_f32(&t, 2, SCALAR, (float[]){1});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1, 1);
    kt_end(&t);

    /* bounds as attributes (opset < 11): a Relu6 */
    kt_begin(&t, IR_OP_Clip, 1, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){-2, 5, 7});
    kt_out(&t, 0, IR_F32, DIMS(3));
    ir_set_attr_float(t.g, t.node, "min", 0);
    ir_set_attr_float(t.g, t.node, "max", 6);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 5, 6);
    kt_end(&t);

    /* integers keep exact bounds */
    kt_begin(&t, IR_OP_Clip, 3, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){INT64_MIN, 5, INT64_MAX});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){-9007199254740993}); /* -(2^53 + 1) */
    kt_out(&t, 0, IR_I64, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -9007199254740993, 5, INT64_MAX);
    kt_end(&t);
}

static void test_not(void)
{
    kt t;
    kt_begin(&t, IR_OP_Not, 1, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(3), (uint8_t[]){0, 1, 1});
    kt_out(&t, 0, IR_BOOL, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 0, 0);
    kt_end(&t);
}

static void test_cast(void)
{
    kt t;
    /* float -> int: truncation toward zero, saturation, NaN -> 0 */
    kt_begin(&t, IR_OP_Cast, 1, 1);
    kt_in_f32(&t, 0, DIMS(5), (float[]){1.9f, -1.9f, 3e9f, -3e9f, NAN});
    kt_out(&t, 0, IR_I32, DIMS(5));
    ir_set_attr_int(t.g, t.node, "to", 6);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, -1, INT32_MAX, INT32_MIN, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Cast, 1, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){300.7f, -5, 1e20f, 254.5f});
    kt_out(&t, 0, IR_U8, DIMS(4));
    ir_set_attr_int(t.g, t.node, "to", 2);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 255, 0, 255, 254);
    kt_end(&t);

    /* to bool: != 0, NaN is true, -0 is false */
    kt_begin(&t, IR_OP_Cast, 1, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){0.0f, -0.0f, 0.5f, NAN});
    kt_out(&t, 0, IR_BOOL, DIMS(4));
    ir_set_attr_int(t.g, t.node, "to", 9);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 1, 1);
    kt_end(&t);

    /* integer narrowing wraps like C and numpy's astype */
    kt_begin(&t, IR_OP_Cast, 1, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){300, -129, 127});
    kt_out(&t, 0, IR_I8, DIMS(3));
    ir_set_attr_int(t.g, t.node, "to", 3);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 44, 127, 127);
    kt_end(&t);

    kt_begin(&t, IR_OP_Cast, 1, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(2), (uint8_t[]){1, 0});
    kt_out(&t, 0, IR_F32, DIMS(2));
    ir_set_attr_int(t.g, t.node, "to", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Cast, 1, 1);
    kt_in(&t, 0, IR_I32, DIMS(2), (int32_t[]){-7, 16777217});
    kt_out(&t, 0, IR_I64, DIMS(2));
    ir_set_attr_int(t.g, t.node, "to", 7);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -7, 16777217);
    kt_end(&t);
}

static void test_dropout(void)
{
    kt t;
    kt_begin(&t, IR_OP_Dropout, 1, 2);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, -2, 3});
    kt_out(&t, 0, IR_F32, DIMS(3));
    kt_out(&t, 1, IR_BOOL, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, -2, 3);
    EXPECT_INT(&t, 1, 1, 1, 1);
    kt_end(&t);

    /* training mode with ratio 0 is still the identity */
    kt_begin(&t, IR_OP_Dropout, 3, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1, 2});
    kt_in_f32(&t, 1, SCALAR, (float[]){0});
    kt_in(&t, 2, IR_BOOL, SCALAR, (uint8_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2);
    kt_end(&t);

    /* training mode: the mask of kernels/dropout_mask.h, element i kept when the top 24 bits of
     * SplitMix64's (i + 1)-th number from the seed are >= ceil(ratio * 2^24) (computed in Python:
     * seed 0, ratio 0.5 keeps 0, 3, 7; seed 7 keeps 2, 3), kept elements scaled by 1 / (1 - ratio) */
    static const float x8[] = {1, 2, 3, 4, 5, 6, 7, 8};
    kt_begin(&t, IR_OP_Dropout, 3, 2);
    kt_in_f32(&t, 0, DIMS(2, 4), x8);
    kt_in_f32(&t, 1, SCALAR, (float[]){0.5f});
    kt_in(&t, 2, IR_BOOL, SCALAR, (uint8_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    kt_out(&t, 1, IR_BOOL, DIMS(2, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2, 0, 0, 8, 0, 0, 0, 16);
    EXPECT_INT(&t, 1, 1, 0, 0, 1, 0, 0, 0, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_Dropout, 3, 1);
    ir_set_attr_int(t.g, t.node, "seed", 7);
    kt_in_f32(&t, 0, DIMS(8), x8);
    kt_in_f32(&t, 1, SCALAR, (float[]){0.5f});
    kt_in(&t, 2, IR_BOOL, SCALAR, (uint8_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(8));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0, 6, 8, 0, 0, 0, 0);
    kt_end(&t);

    /* ratio 0.8 (scale 1 / 0.2 in f32, 5 within 1e-6) keeps 0, 3 of seed 0 */
    kt_begin(&t, IR_OP_Dropout, 3, 1);
    kt_in_f32(&t, 0, DIMS(4), x8);
    kt_in_f32(&t, 1, SCALAR, (float[]){0.8f});
    kt_in(&t, 2, IR_BOOL, SCALAR, (uint8_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 0, 0, 20);
    kt_end(&t);

    /* a ratio outside [0, 1) in training mode is an error */
    kt_begin(&t, IR_OP_Dropout, 3, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1, 2});
    kt_in_f32(&t, 1, SCALAR, (float[]){1.0f});
    kt_in(&t, 2, IR_BOOL, SCALAR, (uint8_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_fails_with(&t, "ratio 1 is not in [0, 1)"));
    kt_end(&t);
}

/* A wrongly sized output is reported, not overrun. */
static void test_output_size_mismatch(void)
{
    kt t;
    kt_begin(&t, IR_OP_Exp, 1, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){1, 2, 3, 4});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_fails_with(&t, "Exp 'y0': output 0 would have 4 elements but was allocated with 2"));
    kt_end(&t);
}

int main(void)
{
    RUN(test_math_functions);
    RUN(test_extremes);
    RUN(test_gelu);
    RUN(test_parametric_activations);
    RUN(test_relu_neg_abs_on_integers);
    RUN(test_clip);
    RUN(test_not);
    RUN(test_cast);
    RUN(test_dropout);
    RUN(test_output_size_mismatch);
    return unit_finish();
}
