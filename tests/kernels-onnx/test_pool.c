/* MaxPool (with indices), AveragePool (count_include_pad, ceil_mode, dilations) and
 * GlobalAveragePool, against windows summed by hand (each case says which windows). */
#include "tests/kernels-onnx/kt.h"

static float *iota(float *v, int n, float first, float step)
{
    for (int i = 0; i < n; i++)
        v[i] = first + step * (float)i;
    return v;
}

static void test_maxpool_2d(void)
{
    kt t;
    float v[25];
    /* x = 1..16 in 4x4, 2x2 windows, stride 2 */
    kt_begin(&t, IR_OP_MaxPool, 1, 2);
    kt_in_f32(&t, 0, DIMS(1, 1, 4, 4), iota(v, 16, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 2, 2));
    kt_out(&t, 1, IR_I64, DIMS(1, 1, 2, 2));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2, 2}, 2);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 2}, 2);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 6, 8, 14, 16);
    EXPECT_INT(&t, 1, 5, 7, 13, 15);
    kt_end(&t);

    /* x = -1..-16, 3x3 windows, stride 2, pads 1: the padding is not a 0 that wins */
    kt_begin(&t, IR_OP_MaxPool, 1, 2);
    kt_in_f32(&t, 0, DIMS(1, 1, 4, 4), iota(v, 16, -1, -1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 2, 2));
    kt_out(&t, 1, IR_I64, DIMS(1, 1, 2, 2));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){3, 3}, 2);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 2}, 2);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, -2, -5, -6);
    EXPECT_INT(&t, 1, 0, 1, 4, 5);
    kt_end(&t);

    /* ceil_mode: 5x5, 2x2 stride 2 -> 3x3, the last row/column of windows is 1 wide */
    kt_begin(&t, IR_OP_MaxPool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 5, 5), iota(v, 25, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 3, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2, 2}, 2);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 2}, 2);
    ir_set_attr_int(t.g, t.node, "ceil_mode", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 7, 9, 10, 17, 19, 20, 22, 24, 25);
    kt_end(&t);

    /* storage_order 1: indices count the spatial dims column-major (w * H + h) */
    kt_begin(&t, IR_OP_MaxPool, 1, 2);
    kt_in_f32(&t, 0, DIMS(1, 1, 2, 3), iota(v, 6, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1, 2));
    kt_out(&t, 1, IR_I64, DIMS(1, 1, 1, 2));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2, 2}, 2);
    ir_set_attr_int(t.g, t.node, "storage_order", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 6);
    EXPECT_INT(&t, 1, 3, 5);
    kt_end(&t);
}

static void test_maxpool_1d_3d_int(void)
{
    kt t;
    float v[8];
    /* 1-D, dilation 2: windows {0,2}, {1,3}, {2,4} of [3, 1, 4, 1, 5]; indices add the channel's
     * offset (channel 1 starts at 5) */
    kt_begin(&t, IR_OP_MaxPool, 1, 2);
    kt_in_f32(&t, 0, DIMS(1, 2, 5), (float[]){3, 1, 4, 1, 5, 0, 0, 0, 0, 9});
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 3));
    kt_out(&t, 1, IR_I64, DIMS(1, 2, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "dilations", (int64_t[]){2}, 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 4, 1, 5, 0, 0, 9);
    EXPECT_INT(&t, 1, 2, 1, 4, 5, 6, 9);
    kt_end(&t);

    kt_begin(&t, IR_OP_MaxPool, 1, 2);
    kt_in_f32(&t, 0, DIMS(1, 1, 2, 2, 2), iota(v, 8, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1, 1, 1));
    kt_out(&t, 1, IR_I64, DIMS(1, 1, 1, 1, 1));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2, 2, 2}, 3);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 8);
    EXPECT_INT(&t, 1, 7);
    kt_end(&t);

    kt_begin(&t, IR_OP_MaxPool, 1, 1);
    kt_in(&t, 0, IR_U8, DIMS(1, 1, 4), (uint8_t[]){200, 3, 255, 0});
    kt_out(&t, 0, IR_U8, DIMS(1, 1, 2));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2}, 1);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 200, 255);
    kt_end(&t);
}

static void test_averagepool(void)
{
    kt t;
    float v[9];
    /* 3x3 = 1..9, 3x3 windows, stride 1, pads 1: sums 12 21 16 / 27 45 33 / 24 39 28 over 4, 6
     * or 9 elements inside the input */
    kt_begin(&t, IR_OP_AveragePool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 3, 3), iota(v, 9, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 3, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){3, 3}, 2);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7);
    kt_end(&t);

    /* the same with count_include_pad: every window counts 9 */
    kt_begin(&t, IR_OP_AveragePool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 3, 3), iota(v, 9, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 3, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){3, 3}, 2);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    ir_set_attr_int(t.g, t.node, "count_include_pad", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 12 / 9.0, 21 / 9.0, 16 / 9.0, 27 / 9.0, 5, 33 / 9.0, 24 / 9.0, 39 / 9.0,
               28 / 9.0);
    kt_end(&t);

    /* 1-D [1..5], k 3, s 2, pads [1, 0], ceil_mode, count_include_pad: windows {-1,0,1}
     * {1,2,3} {3,4,5}; -1 is padding (counted), 5 lies beyond the end padding (not counted) */
    kt_begin(&t, IR_OP_AveragePool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 5), iota(v, 5, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){3}, 1);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 0}, 2);
    ir_set_attr_int(t.g, t.node, "ceil_mode", 1);
    ir_set_attr_int(t.g, t.node, "count_include_pad", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 3, 4.5);
    kt_end(&t);

    /* dilations (opset 19): windows {0,2} {1,3} {2,4} */
    kt_begin(&t, IR_OP_AveragePool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 5), iota(v, 5, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "dilations", (int64_t[]){2}, 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2, 3, 4);
    kt_end(&t);

    /* SAME_UPPER: out = ceil(5 / 2) = 3, total pad (3-1)*2 + 2 - 5 = 1 at the end */
    kt_begin(&t, IR_OP_AveragePool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 5), iota(v, 5, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 3));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2}, 1);
    ir_set_attr_string(t.g, t.node, "auto_pad", "SAME_UPPER");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1.5, 3.5, 5);
    kt_end(&t);
}

static void test_global_average_pool(void)
{
    kt t;
    float v[8];
    kt_begin(&t, IR_OP_GlobalAveragePool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 2, 2, 2), iota(v, 8, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2.5, 6.5);
    kt_end(&t);
}

static void test_pool_errors(void)
{
    kt t;
    kt_begin(&t, IR_OP_MaxPool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 2, 2), (float[]){1, 2, 3, 4});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1, 1));
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){3, 3}, 2);
    CHECK(kt_fails_with(&t, "the window does not fit spatial dim 0 of size 2"));
    kt_end(&t);
}

int main(void)
{
    RUN(test_maxpool_2d);
    RUN(test_maxpool_1d_3d_int);
    RUN(test_averagepool);
    RUN(test_global_average_pool);
    RUN(test_pool_errors);
    return unit_finish();
}
