/* The logic, comparison, predicate and arithmetic kernels added for the exporters
 * (kernels/cpu/onnx_logic.c, kernels/cpu/onnx_math.c): broadcasting, NaN and infinities, integer
 * precision near 2^63, Mod's two sign conventions and its zero divisor, Sum and Mean over
 * broadcast inputs, the unary math functions at hand-checked points, the seeded random
 * generators (kernels/cpu/onnx_random.c), LogSoftmax, Hardmax and the two classification losses
 * (kernels/cpu/onnx_loss.c). */
#include "tests/kernels-onnx/kt.h"

#include <math.h>
#include <stdint.h>

static void test_logic(void)
{
    kt t;
    static const ir_op ops[] = {IR_OP_And, IR_OP_Or, IR_OP_Xor};
    static const int64_t want[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
    for (int k = 0; k < 3; k++) {
        kt_begin(&t, ops[k], 2, 1);
        kt_in(&t, 0, IR_BOOL, DIMS(2, 2), (uint8_t[]){0, 0, 1, 1});
        kt_in(&t, 1, IR_BOOL, DIMS(2, 2), (uint8_t[]){0, 1, 0, 1});
        kt_out(&t, 0, IR_BOOL, DIMS(2, 2));
        CHECK(kt_run(&t));
        kt_expect_int(&t, 0, want[k], 4, __FILE__, __LINE__);
        kt_end(&t);
    }
    /* broadcast: a column against a row */
    kt_begin(&t, IR_OP_And, 2, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(2, 1), (uint8_t[]){1, 0});
    kt_in(&t, 1, IR_BOOL, DIMS(3), (uint8_t[]){1, 0, 1});
    kt_out(&t, 0, IR_BOOL, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 0, 1, 0, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Or, 2, 1);
    kt_in_f32(&t, 0, DIMS(1), (float[]){1});
    kt_in_f32(&t, 1, DIMS(1), (float[]){1});
    kt_out(&t, 0, IR_BOOL, DIMS(1));
    CHECK(kt_fails_with(&t, "dtype f32 is not supported"));
    kt_end(&t);
}

static void test_comparisons(void)
{
    kt t;
    kt_begin(&t, IR_OP_GreaterOrEqual, 2, 1);
    kt_in_f32(&t, 0, DIMS(5), (float[]){1, 2, 3, NAN, INFINITY});
    kt_in_f32(&t, 1, DIMS(1), (float[]){2});
    kt_out(&t, 0, IR_BOOL, DIMS(5));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 1, 0, 1); /* NaN compares false */
    kt_end(&t);

    kt_begin(&t, IR_OP_LessOrEqual, 2, 1);
    kt_in_f32(&t, 0, DIMS(5), (float[]){1, 2, 3, NAN, -INFINITY});
    kt_in_f32(&t, 1, DIMS(1), (float[]){2});
    kt_out(&t, 0, IR_BOOL, DIMS(5));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 1, 0, 0, 1);
    kt_end(&t);

    /* 2^63 - 1 and 2^63 - 2 are one double apart from nothing: compared as integers */
    kt_begin(&t, IR_OP_GreaterOrEqual, 2, 1);
    kt_in_i64(&t, 0, DIMS(2), (int64_t[]){INT64_MAX - 1, INT64_MAX});
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){INT64_MAX, INT64_MAX - 1});
    kt_out(&t, 0, IR_BOOL, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_LessOrEqual, 2, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1, 2});
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_BOOL, DIMS(3));
    CHECK(kt_fails_with(&t, "do not broadcast"));
    kt_end(&t);
}

static void test_predicates(void)
{
    kt t;
    float x[] = {1, NAN, INFINITY, -INFINITY, -0.0f};
    kt_begin(&t, IR_OP_IsNaN, 1, 1);
    kt_in_f32(&t, 0, DIMS(5), x);
    kt_out(&t, 0, IR_BOOL, DIMS(5));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 0, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_IsInf, 1, 1);
    kt_in_f32(&t, 0, DIMS(5), x);
    kt_out(&t, 0, IR_BOOL, DIMS(5));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 1, 1, 0);
    ir_set_attr_int(t.g, t.node, "detect_negative", 0);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 1, 0, 0);
    ir_set_attr_int(t.g, t.node, "detect_negative", 1);
    ir_set_attr_int(t.g, t.node, "detect_positive", 0);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 0, 1, 0);
    kt_end(&t);
}

static void test_mod(void)
{
    kt t;
    /* fmod 0: the divisor's sign (Python's %); fmod 1: the dividend's (C's %) */
    kt_begin(&t, IR_OP_Mod, 2, 1);
    kt_in(&t, 0, IR_I32, DIMS(6), (int32_t[]){-4, 7, 5, 4, -7, INT32_MIN});
    kt_in(&t, 1, IR_I32, DIMS(6), (int32_t[]){3, -3, 8, -2, 2, -1});
    kt_out(&t, 0, IR_I32, DIMS(6));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 2, -2, 5, 0, 1, 0);
    ir_set_attr_int(t.g, t.node, "fmod", 1);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -1, 1, 5, 0, -1, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Mod, 2, 1);
    ir_set_attr_int(t.g, t.node, "fmod", 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){-4.5f, 7.5f, 1, INFINITY});
    kt_in_f32(&t, 1, DIMS(4), (float[]){2, -2, 0, 1});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -0.5, 1.5, NAN, NAN);
    ir_set_attr_int(t.g, t.node, "fmod", 0);
    CHECK(kt_fails_with(&t, "fmod = 0 is defined on integers only"));
    kt_end(&t);

    kt_begin(&t, IR_OP_Mod, 2, 1);
    kt_in_i64(&t, 0, DIMS(2), (int64_t[]){1, 2});
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){1, 0});
    kt_out(&t, 0, IR_I64, DIMS(2));
    CHECK(kt_fails_with(&t, "integer modulo by zero (divisor element 1)"));
    kt_end(&t);
}

static void test_sum_mean(void)
{
    kt t;
    kt_begin(&t, IR_OP_Sum, 3, 1);
    kt_in_f32(&t, 0, DIMS(2, 1), (float[]){1, 2});
    kt_in_f32(&t, 1, DIMS(3), (float[]){10, 20, 30});
    kt_in_f32(&t, 2, SCALAR, (float[]){100});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 111, 121, 131, 112, 122, 132);
    kt_end(&t);

    kt_begin(&t, IR_OP_Mean, 2, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1, NAN});
    kt_in_f32(&t, 1, DIMS(2), (float[]){4, 1});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2.5, NAN);
    kt_end(&t);

    kt_begin(&t, IR_OP_Sum, 1, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 3);
    kt_end(&t);
}

/* One float input through op, compared with values worked out in double. */
static void unary_case(ir_op op, const float *x, int n, const double *want, int line)
{
    kt t;
    kt_begin(&t, op, 1, 1);
    kt_in_f32(&t, 0, 1, (int64_t[]){n}, x);
    kt_out(&t, 0, IR_F32, 1, (int64_t[]){n});
    CHECK(kt_run(&t));
    kt_expect_f32(&t, 0, want, (size_t)n, 1e-6, __FILE__, line);
    kt_end(&t);
}

static void test_unary_math(void)
{
    unary_case(IR_OP_Softsign, (float[]){-3, 0, 1, INFINITY}, 4, (double[]){-0.75, 0, 0.5, NAN},
               __LINE__);
    /* half to even */
    unary_case(IR_OP_Round, (float[]){0.5f, 1.5f, 2.5f, -2.5f, -0.4f}, 5,
               (double[]){0, 2, 2, -2, -0.0}, __LINE__);
    unary_case(IR_OP_Tan, (float[]){0, 1}, 2, (double[]){0, tan(1.0)}, __LINE__);
    unary_case(IR_OP_Asin, (float[]){0.5f, 2}, 2, (double[]){asin(0.5), NAN}, __LINE__);
    unary_case(IR_OP_Acos, (float[]){0.5f}, 1, (double[]){acos(0.5)}, __LINE__);
    unary_case(IR_OP_Atan, (float[]){INFINITY}, 1, (double[]){1.5707963267948966}, __LINE__);
    unary_case(IR_OP_Sinh, (float[]){1}, 1, (double[]){sinh(1.0)}, __LINE__);
    unary_case(IR_OP_Cosh, (float[]){-1}, 1, (double[]){cosh(1.0)}, __LINE__);
    unary_case(IR_OP_Asinh, (float[]){2}, 1, (double[]){asinh(2.0)}, __LINE__);
    unary_case(IR_OP_Acosh, (float[]){2, 0.5f}, 2, (double[]){acosh(2.0), NAN}, __LINE__);
    unary_case(IR_OP_Atanh, (float[]){0.5f, 1}, 2, (double[]){atanh(0.5), INFINITY}, __LINE__);
    /* Selu's defaults: gamma * x, gamma * alpha * (e^x - 1) */
    unary_case(
        IR_OP_Selu, (float[]){2, -1}, 2,
        (double[]){1.0507009873554805 * 2, 1.0507009873554805 * 1.6732632423543772 * expm1(-1)},
        __LINE__);
    unary_case(IR_OP_Celu, (float[]){2, -1}, 2, (double[]){2, expm1(-1)}, __LINE__);
    unary_case(IR_OP_ThresholdedRelu, (float[]){0.5f, 1, 1.5f}, 3, (double[]){0, 0, 1.5}, __LINE__);
    unary_case(IR_OP_Shrink, (float[]){-1, -0.25f, 0.25f, 2}, 4, (double[]){-1, 0, 0, 2}, __LINE__);

    kt t;
    kt_begin(&t, IR_OP_Shrink, 1, 1);
    ir_set_attr_float(t.g, t.node, "bias", 1.5);
    ir_set_attr_float(t.g, t.node, "lambd", 1.5);
    kt_in(&t, 0, IR_I8, DIMS(4), (int8_t[]){-3, -1, 1, 4});
    kt_out(&t, 0, IR_I8, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -1, 0, 0, 2); /* -3 + 1.5 = -1.5 truncates to -1 */
    kt_end(&t);

    kt_begin(&t, IR_OP_Sign, 1, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){-7, 0, INT64_MAX});
    kt_out(&t, 0, IR_I64, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -1, 0, 1);
    kt_end(&t);
    unary_case(IR_OP_Sign, (float[]){-2, 0, 3, NAN}, 4, (double[]){-1, 0, 1, NAN}, __LINE__);
}

static void test_random(void)
{
    kt t;
    kt_begin(&t, IR_OP_RandomUniform, 0, 1);
    ir_set_attr_float(t.g, t.node, "low", -2);
    ir_set_attr_float(t.g, t.node, "high", 3);
    ir_set_attr_float(t.g, t.node, "seed", 7);
    kt_out(&t, 0, IR_F32, DIMS(1000));
    CHECK(kt_run(&t));
    float first[1000];
    memcpy(first, t.out[0].data, sizeof first);
    bool in_range = true, varied = false;
    for (int i = 0; i < 1000; i++) {
        in_range = in_range && first[i] >= -2 && first[i] < 3;
        varied = varied || first[i] != first[0];
    }
    CHECK(in_range && varied);
    CHECK(kt_run(&t)); /* the same seed: the same numbers */
    CHECK(memcmp(first, t.out[0].data, sizeof first) == 0);
    ir_set_attr_float(t.g, t.node, "seed", 8);
    CHECK(kt_run(&t));
    CHECK(memcmp(first, t.out[0].data, sizeof first) != 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_RandomUniformLike, 1, 1);
    kt_in_f32(&t, 0, DIMS(4), NULL);
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t)); /* no seed: seed 0, in [0, 1) */
    float want[4];
    ir_random_fill(0, 0, 1, IR_F32, want, 4);
    EXPECT_CLOSE(&t, 0, want, 0);
    kt_end(&t);
}

static void test_logsoftmax_hardmax_losses(void)
{
    kt t;
    kt_begin(&t, IR_OP_LogSoftmax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 2), (float[]){0, 0, 1000, 0});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_run(&t));
    /* log(1/2) twice; the max is subtracted, so 1000 does not overflow */
    EXPECT_F32(&t, 0, -0.6931471805599453, -0.6931471805599453, 0, -1000);
    ir_set_attr_int(t.g, t.node, "axis", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1000, -0.6931471805599453, 0, -0.6931471805599453);
    kt_end(&t);

    kt_begin(&t, IR_OP_Hardmax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 3, 3, -1, -2, -3});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1, 0, 1, 0, 0); /* the first of equal maxima */
    kt_end(&t);

    /* log-probabilities [N=2, C=3]; targets 2 and 0 (ignored with ignore_index 0) */
    kt_begin(&t, IR_OP_NegativeLogLikelihoodLoss, 3, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){-1, -2, -3, -4, -5, -6});
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){2, 0});
    kt_in_f32(&t, 2, DIMS(3), (float[]){1, 1, 0.5f});
    kt_out(&t, 0, IR_F32, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, (3 * 0.5 + 4) / 1.5); /* mean: over the weights taken */
    ir_set_attr_int(t.g, t.node, "ignore_index", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3);
    ir_set_attr_string(t.g, t.node, "reduction", "none");
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1.5, 0);
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){3, 0});
    CHECK(kt_fails_with(&t, "target 3 is not a class in [0, 3)"));
    kt_end(&t);

    kt_begin(&t, IR_OP_SoftmaxCrossEntropyLoss, 2, 2);
    kt_in_f32(&t, 0, DIMS(1, 2), (float[]){0, 0});
    kt_in_i64(&t, 1, DIMS(1), (int64_t[]){1});
    kt_out(&t, 0, IR_F32, SCALAR);
    kt_out(&t, 1, IR_F32, DIMS(1, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.6931471805599453);
    EXPECT_F32(&t, 1, -0.6931471805599453, -0.6931471805599453);
    kt_end(&t);
}

int main(void)
{
    RUN(test_logic);
    RUN(test_comparisons);
    RUN(test_predicates);
    RUN(test_mod);
    RUN(test_sum_mean);
    RUN(test_unary_math);
    RUN(test_random);
    RUN(test_logsoftmax_hardmax_losses);
    return unit_finish();
}
