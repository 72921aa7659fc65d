/* The integer and quantized kernels (kernels/cpu/onnx_qlinear.c) and InstanceNormalization
 * (kernels/cpu/onnx_instance_norm.c), against results worked out by hand: zero points per tensor,
 * per row, per column and per channel, broadcast batches, padding that contributes the zero point
 * (x - x_zp = 0), requantization rounding half to even and saturating. */
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

static void test_dynamic_quantize(void)
{
    kt t;
    kt_begin(&t, IR_OP_DynamicQuantizeLinear, 1, 3);
    /* range [-1, 2]: scale 3/255, zero point round(1 / (3/255)) = round(85) = 85 */
    kt_in_f32(&t, 0, DIMS(4), (float[]){-1, 0, 2, 1});
    kt_out(&t, 0, IR_U8, DIMS(4));
    kt_out(&t, 1, IR_F32, SCALAR);
    kt_out(&t, 2, IR_U8, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 85, 255, 170); /* 1 / (3/255) = 85, + 85 */
    EXPECT_F32(&t, 1, 3.0 / 255);
    EXPECT_INT(&t, 2, 85);
    /* only positive values: the range still includes 0 */
    kt_in_f32(&t, 0, DIMS(4), (float[]){1, 2, 3, 5.1f});
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 50, 100, 150, 255);
    EXPECT_INT(&t, 2, 0);
    kt_in_f32(&t, 0, DIMS(4), (float[]){0, 0, 0, 0});
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 0, 0);
    EXPECT_F32(&t, 1, 0);
    kt_in_f32(&t, 0, DIMS(4), (float[]){0, 0, 0, INFINITY});
    CHECK(kt_fails_with(&t, "infinity"));
    kt_end(&t);
}

static void test_matmul_integer(void)
{
    kt t;
    kt_begin(&t, IR_OP_MatMulInteger, 4, 1);
    kt_in(&t, 0, IR_U8, DIMS(2, 3), (uint8_t[]){11, 12, 13, 14, 15, 16});
    kt_in(&t, 1, IR_I8, DIMS(3, 2), (int8_t[]){1, -1, 2, 0, 0, 3});
    kt_in(&t, 2, IR_U8, DIMS(2), (uint8_t[]){10, 13}); /* per row */
    kt_in(&t, 3, IR_I8, SCALAR, (int8_t[]){1});
    kt_out(&t, 0, IR_I32, DIMS(2, 2));
    CHECK(kt_run(&t));
    /* A - zp = [[1,2,3],[1,2,3]], B - 1 = [[0,-2],[1,-1],[-1,2]] */
    EXPECT_INT(&t, 0, -1, 2, -1, 2);
    kt_end(&t);

    /* a batch of 2 against one B; no zero points */
    kt_begin(&t, IR_OP_MatMulInteger, 2, 1);
    kt_in(&t, 0, IR_I8, DIMS(2, 1, 2), (int8_t[]){-128, 1, 2, 3});
    kt_in(&t, 1, IR_I8, DIMS(2, 1), (int8_t[]){-128, 5});
    kt_out(&t, 0, IR_I32, DIMS(2, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 16389, -241);
    kt_end(&t);
}

static void test_conv_integer(void)
{
    kt t;
    kt_begin(&t, IR_OP_ConvInteger, 3, 1);
    int64_t pads[4] = {1, 1, 1, 1};
    ir_set_attr_ints(t.g, t.node, "pads", pads, 4);
    kt_in(&t, 0, IR_U8, DIMS(1, 1, 2, 2), (uint8_t[]){2, 3, 4, 5});
    kt_in(&t, 1, IR_U8, DIMS(1, 1, 2, 2), (uint8_t[]){1, 1, 1, 1});
    kt_in(&t, 2, IR_U8, SCALAR, (uint8_t[]){1});
    kt_out(&t, 0, IR_I32, DIMS(1, 1, 3, 3));
    CHECK(kt_run(&t));
    /* x - 1 = [[1,2],[3,4]] padded with zeros (the padding holds x_zp), summed over 2x2 windows */
    EXPECT_INT(&t, 0, 1, 3, 2, 4, 10, 6, 3, 7, 4);
    kt_end(&t);
}

static void test_qlinear(void)
{
    kt t;
    kt_begin(&t, IR_OP_QLinearMatMul, 8, 1);
    kt_in(&t, 0, IR_U8, DIMS(1, 2), (uint8_t[]){12, 14});
    kt_in_f32(&t, 1, SCALAR, (float[]){0.5f});
    kt_in(&t, 2, IR_U8, SCALAR, (uint8_t[]){10});
    kt_in(&t, 3, IR_U8, DIMS(2, 2), (uint8_t[]){4, 0, 2, 8});
    kt_in_f32(&t, 4, DIMS(2), (float[]){1, 0.25f}); /* per column */
    kt_in(&t, 5, IR_U8, SCALAR, (uint8_t[]){0});
    kt_in_f32(&t, 6, SCALAR, (float[]){2});
    kt_in(&t, 7, IR_I8, SCALAR, (int8_t[]){-3});
    kt_out(&t, 0, IR_I8, DIMS(1, 2));
    CHECK(kt_run(&t));
    /* acc = [2*4 + 4*2, 4*8] = [16, 32]; real = [16*0.5*1, 32*0.5*0.25] = [8, 4]; /2 = [4, 2] */
    EXPECT_INT(&t, 0, 1, -1);
    kt_in_f32(&t, 6, SCALAR, (float[]){0.01f});
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 127, 127); /* saturated */
    kt_end(&t);

    kt_begin(&t, IR_OP_QLinearConv, 9, 1);
    kt_in(&t, 0, IR_U8, DIMS(1, 1, 1, 3), (uint8_t[]){1, 2, 3});
    kt_in_f32(&t, 1, SCALAR, (float[]){1});
    kt_in(&t, 2, IR_U8, SCALAR, (uint8_t[]){0});
    kt_in(&t, 3, IR_I8, DIMS(2, 1, 1, 1), (int8_t[]){1, -1});
    kt_in_f32(&t, 4, DIMS(2), (float[]){0.5f, 1}); /* per output channel */
    kt_in(&t, 5, IR_I8, SCALAR, (int8_t[]){0});
    kt_in_f32(&t, 6, SCALAR, (float[]){1});
    kt_in(&t, 7, IR_U8, SCALAR, (uint8_t[]){10});
    kt_in(&t, 8, IR_I32, DIMS(2), (int32_t[]){1, 0});
    kt_out(&t, 0, IR_U8, DIMS(1, 2, 1, 3));
    CHECK(kt_run(&t));
    /* channel 0: (x + 1) * 0.5 = 1, 1.5, 2 -> 1, 2, 2 (half to even) + 10; channel 1: -x + 10 */
    EXPECT_INT(&t, 0, 11, 12, 12, 9, 8, 7);
    kt_end(&t);
}

static void test_instance_norm(void)
{
    kt t;
    kt_begin(&t, IR_OP_InstanceNormalization, 3, 1);
    kt_in_f32(&t, 0, DIMS(1, 2, 2), (float[]){1, 3, 10, 10});
    kt_in_f32(&t, 1, DIMS(2), (float[]){2, 1});
    kt_in_f32(&t, 2, DIMS(2), (float[]){0.5f, -1});
    ir_set_attr_float(t.g, t.node, "epsilon", 0);
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 2));
    CHECK(kt_run(&t));
    /* plane 0: mean 2, var 1 -> [-1, 1] * 2 + 0.5; plane 1: var 0, epsilon 0 -> 0/0 */
    EXPECT_F32(&t, 0, -1.5, 2.5, NAN, NAN);
    ir_set_attr_float(t.g, t.node, "epsilon", 1e-5);
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-4, -1.49999, 2.49999, -1, -1); /* 2 / sqrt(1 + 1e-5) */
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 1, 1});
    CHECK(kt_fails_with(&t, "one value per channel (2)"));
    kt_end(&t);
}

int main(void)
{
    RUN(test_dynamic_quantize);
    RUN(test_matmul_integer);
    RUN(test_conv_integer);
    RUN(test_qlinear);
    RUN(test_instance_norm);
    return unit_finish();
}
