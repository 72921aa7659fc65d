/* QuantizeLinear / DequantizeLinear: per tensor, per axis, per block; round half to even;
 * saturation; u8 and i8. Expected values from numpy: clip(rint(x / scale) + zp, lo, hi) in
 * float32, and (x - zp) * scale. */
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

static void test_quantize_per_tensor(void)
{
    kt t;
    /* u8, scale 1, no zero point: halves go to even, out of range saturates */
    kt_begin(&t, IR_OP_QuantizeLinear, 2, 1);
    kt_in_f32(&t, 0, DIMS(8), (float[]){0, 1, 2.5f, -1, 300, 1.5f, 0.5f, 3.5f});
    kt_in_f32(&t, 1, SCALAR, (float[]){1});
    kt_out(&t, 0, IR_U8, DIMS(8));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 2, 0, 255, 2, 0, 4);
    kt_end(&t);

    /* i8, scale 2, zero point 1: rint(-1.5) = -2, rint(2.5) = 2 */
    kt_begin(&t, IR_OP_QuantizeLinear, 3, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){-3, 5, 1000});
    kt_in_f32(&t, 1, SCALAR, (float[]){2});
    kt_in(&t, 2, IR_I8, SCALAR, (int8_t[]){1});
    kt_out(&t, 0, IR_I8, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -1, 3, 127);
    kt_end(&t);

    /* x / scale in float: 0.35f / 0.1f is exactly 3.5f (rounds to 4), where the double quotient
     * 3.4999999... would round to 3 */
    kt_begin(&t, IR_OP_QuantizeLinear, 2, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){0.35f, 0.75f});
    kt_in_f32(&t, 1, SCALAR, (float[]){0.1f});
    kt_out(&t, 0, IR_U8, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 4, 8);
    kt_end(&t);
}

static void test_quantize_per_axis_and_block(void)
{
    kt t;
    /* axis 1 of [2,3]: scales [1,2,4], zero points [0,10,20] */
    kt_begin(&t, IR_OP_QuantizeLinear, 3, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){4, 4, 4, -2, 6, 10});
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 2, 4});
    kt_in(&t, 2, IR_U8, DIMS(3), (uint8_t[]){0, 10, 20});
    kt_out(&t, 0, IR_U8, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 4, 12, 21, 0, 13, 22);
    kt_end(&t);

    /* axis 0 */
    kt_begin(&t, IR_OP_QuantizeLinear, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 2), (float[]){10, 20, 10, 20});
    kt_in_f32(&t, 1, DIMS(2), (float[]){10, 5});
    kt_out(&t, 0, IR_U8, DIMS(2, 2));
    ir_set_attr_int(t.g, t.node, "axis", 0);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 2, 2, 4);
    kt_end(&t);

    /* blocks of 2 along axis 1 of [2,4]: scale [2,2] */
    kt_begin(&t, IR_OP_QuantizeLinear, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 4), (float[]){2, 4, 6, 8, 2, 4, 6, 8});
    kt_in_f32(&t, 1, DIMS(2, 2), (float[]){1, 2, 2, 1});
    kt_out(&t, 0, IR_U8, DIMS(2, 4));
    ir_set_attr_int(t.g, t.node, "block_size", 2);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 2, 4, 3, 4, 1, 2, 6, 8);
    kt_end(&t);

    kt_begin(&t, IR_OP_QuantizeLinear, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    kt_in_f32(&t, 1, DIMS(2), (float[]){1, 2});
    kt_out(&t, 0, IR_U8, DIMS(2, 3));
    CHECK(kt_fails_with(&t, "a per-axis scale needs 3 values (axis 1), not 2"));
    kt_end(&t);
}

static void test_dequantize(void)
{
    kt t;
    kt_begin(&t, IR_OP_DequantizeLinear, 3, 1);
    kt_in(&t, 0, IR_U8, DIMS(3), (uint8_t[]){0, 128, 255});
    kt_in_f32(&t, 1, SCALAR, (float[]){0.5f});
    kt_in(&t, 2, IR_U8, SCALAR, (uint8_t[]){128});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -64, 0, 63.5);
    kt_end(&t);

    /* per axis on i8, axis 0 of [2,2] */
    kt_begin(&t, IR_OP_DequantizeLinear, 3, 1);
    kt_in(&t, 0, IR_I8, DIMS(2, 2), (int8_t[]){-128, 127, 10, 20});
    kt_in_f32(&t, 1, DIMS(2), (float[]){1, 0.1f});
    kt_in(&t, 2, IR_I8, DIMS(2), (int8_t[]){0, 10});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    ir_set_attr_int(t.g, t.node, "axis", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -128, 127, 0, 1);
    kt_end(&t);

    /* i32 (a bias), no zero point */
    kt_begin(&t, IR_OP_DequantizeLinear, 2, 1);
    kt_in(&t, 0, IR_I32, DIMS(2), (int32_t[]){-1000, 3});
    kt_in_f32(&t, 1, SCALAR, (float[]){0.25f});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -250, 0.75);
    kt_end(&t);

    kt_begin(&t, IR_OP_DequantizeLinear, 3, 1);
    kt_in(&t, 0, IR_U8, DIMS(1), (uint8_t[]){1});
    kt_in_f32(&t, 1, SCALAR, (float[]){1});
    kt_in(&t, 2, IR_I8, SCALAR, (int8_t[]){0});
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_fails_with(&t, "the zero point's dtype differs"));
    kt_end(&t);
}

int main(void)
{
    RUN(test_quantize_per_tensor);
    RUN(test_quantize_per_axis_and_block);
    RUN(test_dequantize);
    return unit_finish();
}
