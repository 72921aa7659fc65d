/* MatMul, Gemm, BatchNormalization, LayerNormalization and Softmax. Expected values were computed
 * with numpy in float64 (np.matmul, x.mean/x.var, exp(x - max) / sum) on the inputs shown. */
#include "tests/kernels-onnx/kt.h"

static void arange(kn_tensor *x, double first, double step)
{
    for (int64_t i = 0; i < x->numel; i++)
        ((float *)x->data)[i] = (float)(first + step * (double)i);
}

static void test_matmul(void)
{
    kt t;
    /* a = arange(6).reshape(2,3), b = arange(12).reshape(3,4) - 5 */
    kt_begin(&t, IR_OP_MatMul, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    kt_in_f32(&t, 1, DIMS(3, 4), NULL);
    arange(&t.in[0], 0, 1);
    arange(&t.in[1], -5, 1);
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 8, 11, 14, -4, 8, 20, 32);
    kt_end(&t);

    /* 1-D on the left: [3] @ [3,4] -> [4] */
    kt_begin(&t, IR_OP_MatMul, 2, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, 2, 3});
    kt_in_f32(&t, 1, DIMS(3, 4), NULL);
    arange(&t.in[1], -5, 1);
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2, 8, 14, 20);
    kt_end(&t);

    /* 1-D on the right: [2,3] @ [3] -> [2]; and 1-D @ 1-D -> scalar */
    kt_begin(&t, IR_OP_MatMul, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    arange(&t.in[0], 0, 1);
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 8, 26);
    kt_end(&t);

    kt_begin(&t, IR_OP_MatMul, 2, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1, 2, 3});
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_F32, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 14);
    kt_end(&t);

    /* batch broadcast both ways: [2,1,2,3] @ [3,3,2] -> [2,3,2,2];
     * A = arange(12).reshape(2,1,2,3) * 0.5, B = arange(18).reshape(3,3,2) - 4 */
    kt_begin(&t, IR_OP_MatMul, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 1, 2, 3), NULL);
    kt_in_f32(&t, 1, DIMS(3, 3, 2), NULL);
    arange(&t.in[0], 0, 0.5);
    arange(&t.in[1], -4, 1);
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, 0.5, -10, -4, 8, 9.5, 26, 32, 17, 18.5, 62, 68, -19, -8.5, -28, -13, 44,
               54.5, 62, 77, 107, 117.5, 152, 167);
    kt_end(&t);

    kt_begin(&t, IR_OP_MatMul, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    kt_in_f32(&t, 1, DIMS(4, 2), NULL);
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_fails_with(&t, "inner dims differ: 3 and 4"));
    kt_end(&t);
}

static void test_gemm(void)
{
    kt t;
    /* A [3,2], B [2,3], C a column [3,1]: A @ B + C */
    kt_begin(&t, IR_OP_Gemm, 3, 1);
    kt_in_f32(&t, 0, DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    kt_in_f32(&t, 1, DIMS(2, 3), (float[]){1, 0, -1, 2, 1, 0});
    kt_in_f32(&t, 2, DIMS(3, 1), (float[]){10, 20, 30});
    kt_out(&t, 0, IR_F32, DIMS(3, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 15, 12, 9, 31, 24, 17, 47, 36, 25);
    kt_end(&t);

    /* transA, transB, alpha 0.5, beta 2, C [2,1]: 0.5 A^T B^T + 2 C */
    kt_begin(&t, IR_OP_Gemm, 3, 1);
    kt_in_f32(&t, 0, DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    kt_in_f32(&t, 1, DIMS(2, 3), (float[]){1, 0, -1, 2, 1, 0});
    kt_in_f32(&t, 2, DIMS(2, 1), (float[]){1, 2});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    ir_set_attr_int(t.g, t.node, "transA", 1);
    ir_set_attr_int(t.g, t.node, "transB", 1);
    ir_set_attr_float(t.g, t.node, "alpha", 0.5);
    ir_set_attr_float(t.g, t.node, "beta", 2);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 4.5, 2, 8);
    kt_end(&t);

    /* no C; a bias row [3] broadcast over rows */
    kt_begin(&t, IR_OP_Gemm, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 2), (float[]){1, 2});
    kt_in_f32(&t, 1, DIMS(2, 3), (float[]){1, 0, -1, 2, 1, 0});
    kt_out(&t, 0, IR_F32, DIMS(1, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 2, -1);
    kt_end(&t);

    kt_begin(&t, IR_OP_Gemm, 3, 1);
    kt_in_f32(&t, 0, DIMS(2, 2), (float[]){1, 0, 0, 1});
    kt_in_f32(&t, 1, DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    kt_in_f32(&t, 2, DIMS(3), (float[]){100, 200, 300});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 101, 202, 303, 104, 205, 306);
    kt_end(&t);
}

static void test_batchnorm(void)
{
    kt t;
    /* x [N=2, C=2, L=2] = [[[1,2],[3,4]],[[5,6],[7,8]]], scale [1,2], bias [0.5,-0.5],
     * mean [2,5], var [4,0.25], epsilon 1e-5 */
    kt_begin(&t, IR_OP_BatchNormalization, 5, 1);
    kt_in_f32(&t, 0, DIMS(2, 2, 2), (float[]){1, 2, 3, 4, 5, 6, 7, 8});
    kt_in_f32(&t, 1, DIMS(2), (float[]){1, 2});
    kt_in_f32(&t, 2, DIMS(2), (float[]){0.5f, -0.5f});
    kt_in_f32(&t, 3, DIMS(2), (float[]){2, 5});
    kt_in_f32(&t, 4, DIMS(2), (float[]){4, 0.25f});
    kt_out(&t, 0, IR_F32, DIMS(2, 2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 6.249988281359364e-07, 0.5, -8.49984000479984, -4.49992000239992,
               1.9999981250035155, 2.4999975000046875, 7.4998400047998395, 11.49976000719976);
    kt_end(&t);

    kt_begin(&t, IR_OP_BatchNormalization, 5, 1);
    kt_in_f32(&t, 0, DIMS(1, 2, 2), (float[]){1, 2, 3, 4});
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 1, 1});
    kt_in_f32(&t, 2, DIMS(2), (float[]){0, 0});
    kt_in_f32(&t, 3, DIMS(2), (float[]){0, 0});
    kt_in_f32(&t, 4, DIMS(2), (float[]){1, 1});
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 2));
    CHECK(kt_fails_with(&t, "input 1 must hold 2 float values"));
    kt_end(&t);
}

static void test_layernorm(void)
{
    kt t;
    /* x [[1,2,3,4],[2,4,6,10]] over the last axis, scale [1,2,0.5,-1], bias [0,1,0,1] */
    kt_begin(&t, IR_OP_LayerNormalization, 3, 3);
    kt_in_f32(&t, 0, DIMS(2, 4), (float[]){1, 2, 3, 4, 2, 4, 6, 10});
    kt_in_f32(&t, 1, DIMS(4), (float[]){1, 2, 0.5f, -1});
    kt_in_f32(&t, 2, DIMS(4), (float[]){0, 1, 0, 1});
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    kt_out(&t, 1, IR_F32, DIMS(2, 1));
    kt_out(&t, 2, IR_F32, DIMS(2, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1.3416354199689269, 0.105576386687382, 0.2236059033281545,
               -0.3416354199689269, -1.183215280497099, -0.014184526140370579,
               0.08451537717836421, -0.5212767892105559);
    EXPECT_F32(&t, 1, 2.5, 5.5);
    EXPECT_F32(&t, 2, 0.894423613312618, 0.33806150871345686);
    kt_end(&t);

    /* axis 1 of [2,3,2] (normalizing 6 values per row), epsilon 1e-3, a scalar-like scale [1]
     * of 2 broadcast to [3,2], no bias; x = arange(12).reshape(2,3,2)**1.5 * 0.1 */
    kt_begin(&t, IR_OP_LayerNormalization, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 2), NULL);
    for (int i = 0; i < 12; i++)
        ((float *)t.in[0].data)[i] = (float)(pow(i, 1.5) * 0.1);
    kt_in_f32(&t, 1, DIMS(1), (float[]){2});
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 2));
    ir_set_attr_int(t.g, t.node, "axis", 1);
    ir_set_attr_float(t.g, t.node, "epsilon", 1e-3);
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-5, -2.387842344020948, -1.879879394608248, -0.95110615953599,
                   0.25161056621506045, 1.6758612512806537, 3.2913560806694733,
                   -2.8045631580466694, -1.7795851819177397, -0.678514511161444,
                   0.4937128804747446, 1.7330136222541987, 3.0359363483969135);
    kt_end(&t);

    kt_begin(&t, IR_OP_LayerNormalization, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 4), NULL);
    kt_in_f32(&t, 1, DIMS(3), (float[]){1, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    CHECK(kt_fails_with(&t, "does not broadcast"));
    kt_end(&t);
}

static void test_softmax(void)
{
    kt t;
    kt_begin(&t, IR_OP_Softmax, 1, 1); /* axis -1 (opset 13 default) */
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 1, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.09003057317038043, 0.24472847105479767, 0.6652409557748218,
               1 / 3.0, 1 / 3.0, 1 / 3.0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Softmax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 1, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    ir_set_attr_int(t.g, t.node, "axis", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.5, 0.7310585786300049, 0.8807970779778825, 0.5, 0.26894142136999516,
               0.11920292202211755);
    kt_end(&t);

    /* a middle axis of [2,3,2]: x = arange(12) * 0.3 */
    kt_begin(&t, IR_OP_Softmax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 2), NULL);
    arange(&t.in[0], 0, 0.3);
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 2));
    ir_set_attr_int(t.g, t.node, "axis", -2);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.16280716746749874, 0.16280716746749876, 0.29665400068085557,
               0.2966540006808555, 0.5405388318516456, 0.5405388318516458, 0.1628071674674987,
               0.1628071674674988, 0.2966540006808555, 0.29665400068085546, 0.5405388318516458,
               0.5405388318516456);
    kt_end(&t);

    /* large inputs do not overflow */
    kt_begin(&t, IR_OP_Softmax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1000, 1000});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.5, 0.5);
    kt_end(&t);

    kt_begin(&t, IR_OP_Softmax, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1, 2});
    kt_out(&t, 0, IR_F32, DIMS(2));
    ir_set_attr_int(t.g, t.node, "axis", 1);
    CHECK(kt_fails_with(&t, "axis 1 is out of range for rank 1"));
    kt_end(&t);
}

int main(void)
{
    RUN(test_matmul);
    RUN(test_gemm);
    RUN(test_batchnorm);
    RUN(test_layernorm);
    RUN(test_softmax);
    return unit_finish();
}
