/* The indexing kernels and the kernels with index results (kernels/cpu/onnx_index.c), and the
 * reductions of kernels/cpu/onnx_reduce_more.c, against hand-worked examples: negative and
 * out-of-range indices, batch_dims, scatter reductions, OneHot's out-of-range rows, ties and NaN
 * in ArgMax and TopK, CumSum's exclusive and reverse forms, DepthToSpace's two modes undone by
 * SpaceToDepth, reductions that overflow without care (LogSumExp of 1000), Resize's modes
 * (kernels/cpu/onnx_resize.c), Einsum's equations (kernels/cpu/onnx_einsum.c), and GlobalMaxPool,
 * LRN, MeanVarianceNormalization, Det (kernels/cpu/onnx_nn_more.c), BitShift, EyeLike,
 * ReverseSequence and Compress, the window functions, GroupNormalization, Mish, the bitwise ops,
 * RNN, GRU and LSTM (kernels/cpu/onnx_rnn.c), GridSample (kernels/cpu/onnx_grid_sample.c),
 * MaxUnpool and DFT. */
#include "tests/kernels-onnx/kt.h"

#include <math.h>
#include <stdint.h>

static void iota(kt *t, uint32_t i, int rank, const int64_t *dims)
{
    kt_in_f32(t, i, rank, dims, NULL);
    for (int64_t k = 0; k < t->in[i].numel; k++)
        ((float *)t->in[i].data)[k] = (float)k;
}

static void test_gather_elements(void)
{
    kt t;
    kt_begin(&t, IR_OP_GatherElements, 2, 1);
    iota(&t, 0, DIMS(3, 3)); /* [[0,1,2],[3,4,5],[6,7,8]] */
    kt_in_i64(&t, 1, DIMS(2, 3), (int64_t[]){1, 2, 0, 2, -3, 1});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3, 7, 2, 6, 1, 5); /* axis 0: out[i][j] = x[idx[i][j]][j] */
    ir_set_attr_int(t.g, t.node, "axis", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 0, 5, 3, 4);
    kt_in_i64(&t, 1, DIMS(2, 3), (int64_t[]){0, 0, 0, 0, 0, 3});
    CHECK(kt_fails_with(&t, "index 3 is out of range for a dim of 3"));
    kt_end(&t);
}

static void test_scatter_elements(void)
{
    kt t;
    kt_begin(&t, IR_OP_ScatterElements, 3, 1);
    ir_set_attr_int(t.g, t.node, "axis", 1);
    kt_in_f32(&t, 0, DIMS(1, 5), (float[]){1, 2, 3, 4, 5});
    kt_in_i64(&t, 1, DIMS(1, 3), (int64_t[]){1, -2, 1});
    kt_in_f32(&t, 2, DIMS(1, 3), (float[]){10, 20, 30});
    kt_out(&t, 0, IR_F32, DIMS(1, 5));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 30, 3, 20, 5); /* the later update of index 1 wins */
    ir_set_attr_string(t.g, t.node, "reduction", "add");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 42, 3, 24, 5);
    ir_set_attr_string(t.g, t.node, "reduction", "max");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 30, 3, 20, 5);
    ir_set_attr_string(t.g, t.node, "reduction", "mean");
    CHECK(kt_fails_with(&t, "reduction \"mean\" is not"));
    kt_end(&t);
}

static void test_gather_scatter_nd(void)
{
    kt t;
    kt_begin(&t, IR_OP_GatherND, 2, 1);
    iota(&t, 0, DIMS(2, 2, 2));
    kt_in_i64(&t, 1, DIMS(2, 2), (int64_t[]){0, 1, -1, 0});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2, 3, 4, 5); /* x[0,1,:], x[1,0,:] */
    kt_end(&t);

    /* batch_dims 1: each batch indexes its own slice */
    kt_begin(&t, IR_OP_GatherND, 2, 1);
    ir_set_attr_int(t.g, t.node, "batch_dims", 1);
    iota(&t, 0, DIMS(2, 2, 2));
    kt_in_i64(&t, 1, DIMS(2, 1, 2), (int64_t[]){1, 0, 0, 1});
    kt_out(&t, 0, IR_F32, DIMS(2, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2, 5); /* x[0][1][0], x[1][0][1] */
    kt_in_i64(&t, 1, DIMS(1, 2, 2), (int64_t[]){1, 0, 0, 1});
    kt_out(&t, 0, IR_F32, DIMS(1, 2));
    CHECK(kt_fails_with(&t, "batch dim 0 differs: 2 in data, 1 in indices"));
    kt_end(&t);

    kt_begin(&t, IR_OP_ScatterND, 3, 1);
    kt_in_f32(&t, 0, DIMS(4, 2), (float[]){1, 1, 2, 2, 3, 3, 4, 4});
    kt_in_i64(&t, 1, DIMS(2, 1), (int64_t[]){3, 1});
    kt_in_f32(&t, 2, DIMS(2, 2), (float[]){10, 11, 20, 21});
    kt_out(&t, 0, IR_F32, DIMS(4, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1, 20, 21, 3, 3, 10, 11);
    ir_set_attr_string(t.g, t.node, "reduction", "mul");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1, 40, 42, 3, 3, 40, 44);
    kt_in_i64(&t, 1, DIMS(2, 1), (int64_t[]){3, -5});
    CHECK(kt_fails_with(&t, "index -5 is out of range for a dim of 4"));
    kt_end(&t);
}

static void test_onehot_nonzero(void)
{
    kt t;
    kt_begin(&t, IR_OP_OneHot, 3, 1);
    kt_in_i64(&t, 0, DIMS(4), (int64_t[]){0, -1, 3, 1});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){3});
    kt_in_f32(&t, 2, DIMS(2), (float[]){-1, 5});
    kt_out(&t, 0, IR_F32, DIMS(4, 3));
    CHECK(kt_run(&t));
    /* -1 is the last class; 3 is out of range and leaves its row off */
    EXPECT_F32(&t, 0, 5, -1, -1, -1, -1, 5, -1, -1, -1, -1, 5, -1);
    ir_set_attr_int(t.g, t.node, "axis", 0);
    kt_out(&t, 0, IR_F32, DIMS(3, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, -1, -1, -1, -1, -1, -1, 5, -1, 5, -1, -1);
    kt_in_f32(&t, 1, SCALAR, (float[]){NAN});
    CHECK(kt_fails_with(&t, "depth nan is not in [1, 2^40]"));
    kt_end(&t);

    /* float indices: truncated; NaN and infinities are outside every depth */
    kt_begin(&t, IR_OP_OneHot, 3, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){1.7f, NAN, -INFINITY});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){2});
    kt_in_f32(&t, 2, DIMS(2), (float[]){0, 1});
    kt_out(&t, 0, IR_F32, DIMS(3, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1, 0, 0, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_NonZero, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){0, 1, 0, NAN, 0, -2});
    kt_out(&t, 0, IR_I64, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 1, 1, 0, 2); /* rows, then columns; NaN is not zero */
    kt_out(&t, 0, IR_I64, DIMS(2, 2));
    CHECK(kt_fails_with(&t, "output 0 would have 6 elements but was allocated with 4"));
    kt_end(&t);
}

static void test_arg_topk(void)
{
    kt t;
    kt_begin(&t, IR_OP_ArgMax, 1, 1);
    ir_set_attr_int(t.g, t.node, "axis", 1);
    kt_in_f32(&t, 0, DIMS(3, 3), (float[]){1, 3, 3, NAN, 5, NAN, -1, -1, -2});
    kt_out(&t, 0, IR_I64, DIMS(3, 1));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 0, 0); /* first of ties; NaN wins (numpy) */
    ir_set_attr_int(t.g, t.node, "select_last_index", 1);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 2, 2, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_ArgMin, 1, 1);
    kt_in_i64(&t, 0, DIMS(2, 2), (int64_t[]){INT64_MAX, INT64_MAX - 1, 3, 3});
    kt_out(&t, 0, IR_I64, DIMS(1, 2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_TopK, 2, 2);
    kt_in_f32(&t, 0, DIMS(2, 4), (float[]){1, 4, 4, 2, 0, -1, 7, 7});
    kt_in_i64(&t, 1, DIMS(1), (int64_t[]){3});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    kt_out(&t, 1, IR_I64, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 4, 4, 2, 7, 7, 0);
    EXPECT_INT(&t, 1, 1, 2, 3, 2, 3, 0); /* equal values: the lower index first */
    ir_set_attr_int(t.g, t.node, "largest", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 4, -1, 0, 7);
    EXPECT_INT(&t, 1, 0, 3, 1, 1, 0, 2);
    kt_in_i64(&t, 1, DIMS(1), (int64_t[]){5});
    CHECK(kt_fails_with(&t, "k = 5 is not in [0, 4]"));
    kt_end(&t);
}

static void test_cumsum(void)
{
    kt t;
    kt_begin(&t, IR_OP_CumSum, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){-1});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 3, 6, 4, 9, 15);
    ir_set_attr_int(t.g, t.node, "exclusive", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1, 3, 0, 4, 9);
    ir_set_attr_int(t.g, t.node, "reverse", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 3, 0, 11, 6, 0);
    kt_in(&t, 1, IR_I32, SCALAR, (int32_t[]){0});
    ir_set_attr_int(t.g, t.node, "exclusive", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 7, 9, 4, 5, 6);
    kt_end(&t);

    kt_begin(&t, IR_OP_CumSum, 2, 1);
    kt_in(&t, 0, IR_I8, DIMS(3), (int8_t[]){100, 100, -50});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){0});
    kt_out(&t, 0, IR_I8, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 100, -56, -106); /* wraps like int8 arithmetic */
    kt_end(&t);
}

static void test_depth_space(void)
{
    /* x: [1, 8, 1, 1] holding 0..7, blocksize 2 -> [1, 2, 2, 2] */
    kt t;
    kt_begin(&t, IR_OP_DepthToSpace, 1, 1);
    ir_set_attr_int(t.g, t.node, "blocksize", 2);
    iota(&t, 0, DIMS(1, 8, 1, 1));
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 2, 4, 6, 1, 3, 5, 7); /* DCR: channel (bh*2 + bw)*2 + c */
    ir_set_attr_string(t.g, t.node, "mode", "CRD");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1, 2, 3, 4, 5, 6, 7); /* CRD: channel c*4 + bh*2 + bw */
    kt_end(&t);

    /* SpaceToDepth undoes DepthToSpace (DCR) on a larger tensor */
    kt d2s, s2d;
    kt_begin(&d2s, IR_OP_DepthToSpace, 1, 1);
    ir_set_attr_int(d2s.g, d2s.node, "blocksize", 3);
    iota(&d2s, 0, DIMS(2, 18, 2, 3));
    kt_out(&d2s, 0, IR_F32, DIMS(2, 2, 6, 9));
    CHECK(kt_run(&d2s));
    kt_begin(&s2d, IR_OP_SpaceToDepth, 1, 1);
    ir_set_attr_int(s2d.g, s2d.node, "blocksize", 3);
    kt_in_f32(&s2d, 0, DIMS(2, 2, 6, 9), d2s.out[0].data);
    kt_out(&s2d, 0, IR_F32, DIMS(2, 18, 2, 3));
    CHECK(kt_run(&s2d));
    EXPECT_CLOSE(&s2d, 0, (const float *)d2s.in[0].data, 0);
    kt_end(&s2d);
    kt_end(&d2s);
}

static void test_size_castlike(void)
{
    kt t;
    kt_begin(&t, IR_OP_Size, 1, 1);
    kt_in_f32(&t, 0, DIMS(3, 0, 2), NULL);
    kt_out(&t, 0, IR_I64, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_CastLike, 2, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){-1.7f, 300, NAN});
    kt_in(&t, 1, IR_I32, DIMS(1), (int32_t[]){0});
    kt_out(&t, 0, IR_I32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -1, 300, 0);
    kt_end(&t);
}

static void test_more_reductions(void)
{
    static const struct {
        ir_op op;
        double want[2];
    } cases[] = {
        {IR_OP_ReduceProd, {6, -120}},
        {IR_OP_ReduceL1, {6, 15}},
        {IR_OP_ReduceL2, {3.7416573867739413, 8.774964387392123}},
        {IR_OP_ReduceSumSquare, {14, 77}},
        {IR_OP_ReduceLogSum, {1.791759469228055, 1.6094379124341003}},
        {IR_OP_ReduceLogSumExp, {3.40760596444438, 6.126942721744022}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        kt t;
        kt_begin(&t, cases[k].op, 2, 1);
        kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 4, -5, 6});
        kt_ints(&t, 1, (int64_t[]){1}, 1);
        kt_out(&t, 0, IR_F32, DIMS(2, 1));
        CHECK(kt_run(&t));
        kt_expect_f32(&t, 0, cases[k].want, 2, 1e-6, __FILE__, __LINE__);
        kt_end(&t);
    }

    /* LogSumExp subtracts the maximum: exp(1000) would overflow */
    kt t;
    kt_begin(&t, IR_OP_ReduceLogSumExp, 1, 1);
    kt_in_f32(&t, 0, DIMS(2), (float[]){1000, 1000});
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1000.6931471805599);
    kt_in_f32(&t, 0, DIMS(0), NULL);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -INFINITY); /* an empty reduction */
    kt_end(&t);

    kt_begin(&t, IR_OP_ReduceProd, 1, 1);
    ir_set_attr_int(t.g, t.node, "keepdims", 0);
    kt_in(&t, 0, IR_I32, DIMS(3), (int32_t[]){-4, 5, 6});
    kt_out(&t, 0, IR_I32, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -120);
    kt_end(&t);
}

static void test_resize(void)
{
    /* [1, 1, 2, 2] -> [1, 1, 4, 4], nearest (half_pixel, round_prefer_floor): each pixel twice */
    kt t;
    kt_begin(&t, IR_OP_Resize, 3, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 2, 2), (float[]){1, 2, 3, 4});
    t.in[1] = (kn_tensor){0};
    kt_in_f32(&t, 2, DIMS(4), (float[]){1, 1, 2, 2});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 4, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
    /* linear, half_pixel: x_original = (x + 0.5) / 2 - 0.5, edges clamped */
    ir_set_attr_string(t.g, t.node, "mode", "linear");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75,
               4);
    /* align_corners: the corners stay, the rest in thirds */
    ir_set_attr_string(t.g, t.node, "coordinate_transformation_mode", "align_corners");
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-6, 1, 4.0 / 3, 5.0 / 3, 2, 5.0 / 3, 2, 7.0 / 3, 8.0 / 3, 7.0 / 3,
                   8.0 / 3, 3, 10.0 / 3, 3, 10.0 / 3, 11.0 / 3, 4);
    kt_end(&t);

    /* sizes, 1-D through rank 1; asymmetric nearest with ceil: x_original = x / 1.5 */
    kt_begin(&t, IR_OP_Resize, 4, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){10, 20, 30, 40});
    t.in[1] = (kn_tensor){0};
    t.in[2] = (kn_tensor){0};
    kt_ints(&t, 3, (int64_t[]){6}, 1);
    ir_set_attr_string(t.g, t.node, "coordinate_transformation_mode", "asymmetric");
    ir_set_attr_string(t.g, t.node, "nearest_mode", "ceil");
    kt_out(&t, 0, IR_F32, DIMS(6));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 10, 20, 30, 30, 40, 40); /* ceil of 0, 2/3, 4/3, 2, 8/3, 10/3 (clamped) */
    /* tf_crop_and_resize: outside the input, extrapolation_value */
    kt_in_f32(&t, 1, DIMS(2), (float[]){0.5f, 1.5f});
    ir_set_attr_string(t.g, t.node, "coordinate_transformation_mode", "tf_crop_and_resize");
    ir_set_attr_string(t.g, t.node, "mode", "linear");
    ir_set_attr_float(t.g, t.node, "extrapolation_value", -7);
    kt_ints(&t, 3, (int64_t[]){3}, 1);
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 25, 40, -7); /* x_original 1.5, 3, 4.5 */
    kt_ints(&t, 3, (int64_t[]){3, 3}, 2);
    CHECK(kt_fails_with(&t, "one value per resized axis (1)"));
    kt_end(&t);

    /* cubic with exclude_outside: the weights of taps past the edge go to the others */
    kt_begin(&t, IR_OP_Resize, 3, 1);
    kt_in_f32(&t, 0, DIMS(4), (float[]){0, 0, 0, 8});
    t.in[1] = (kn_tensor){0};
    kt_in_f32(&t, 2, DIMS(1), (float[]){1});
    ir_set_attr_string(t.g, t.node, "mode", "cubic");
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0, 0, 8); /* scale 1 reproduces the input */
    kt_end(&t);
}

/* Einsum(inputs...) with `equation` into an f32 output of the given dims. */
static void einsum_case(const char *eq, int nin, const float *const *vals, const int *ranks,
                        const int64_t (*dims)[4], int out_rank, const int64_t *out_dims,
                        const double *want, size_t nwant, int line)
{
    kt t;
    kt_begin(&t, IR_OP_Einsum, (uint32_t)nin, 1);
    ir_set_attr_string(t.g, t.node, "equation", eq);
    for (int i = 0; i < nin; i++)
        kt_in_f32(&t, (uint32_t)i, ranks[i], dims[i], vals[i]);
    kt_out(&t, 0, IR_F32, out_rank, out_dims);
    CHECK(kt_run(&t));
    kt_expect_f32(&t, 0, want, nwant, 1e-6, __FILE__, line);
    kt_end(&t);
}

static void test_einsum(void)
{
    const float m23[] = {1, 2, 3, 4, 5, 6}, m32[] = {1, 0, 0, 1, 2, 2}, m22[] = {1, 2, 3, 4};
    const float v3[] = {1, 2, 3};
    /* matmul, explicit and implicit */
    einsum_case("ij,jk->ik", 2, (const float *[]){m23, m32}, (int[]){2, 2},
                (const int64_t[][4]){{2, 3}, {3, 2}}, 2, (int64_t[]){2, 2},
                (double[]){7, 8, 16, 17}, 4, __LINE__);
    einsum_case("ij,jk", 2, (const float *[]){m23, m32}, (int[]){2, 2},
                (const int64_t[][4]){{2, 3}, {3, 2}}, 2, (int64_t[]){2, 2},
                (double[]){7, 8, 16, 17}, 4, __LINE__);
    /* transpose, diagonal, trace-like sum, inner product */
    einsum_case("ij->ji", 1, (const float *[]){m23}, (int[]){2}, (const int64_t[][4]){{2, 3}}, 2,
                (int64_t[]){3, 2}, (double[]){1, 4, 2, 5, 3, 6}, 6, __LINE__);
    einsum_case("ii->i", 1, (const float *[]){m22}, (int[]){2}, (const int64_t[][4]){{2, 2}}, 1,
                (int64_t[]){2}, (double[]){1, 4}, 2, __LINE__);
    einsum_case("ii", 1, (const float *[]){m22}, (int[]){2}, (const int64_t[][4]){{2, 2}}, 0,
                (int64_t[]){0}, (double[]){5}, 1, __LINE__);
    einsum_case("ij->", 1, (const float *[]){m23}, (int[]){2}, (const int64_t[][4]){{2, 3}}, 0,
                (int64_t[]){0}, (double[]){21}, 1, __LINE__);
    einsum_case("i,i", 2, (const float *[]){v3, v3}, (int[]){1, 1}, (const int64_t[][4]){{3}, {3}},
                0, (int64_t[]){0}, (double[]){14}, 1, __LINE__);
    /* the ellipsis broadcasts: a batch of 2 against a batch of 1 */
    const float b223[] = {1, 2, 3, 4, 5, 6, 0, 0, 0, 1, 1, 1};
    einsum_case("...ij,...jk->...ik", 2, (const float *[]){b223, m32}, (int[]){3, 3},
                (const int64_t[][4]){{2, 2, 3}, {1, 3, 2}}, 3, (int64_t[]){2, 2, 2},
                (double[]){7, 8, 16, 17, 0, 0, 3, 3}, 8, __LINE__);
    /* ONNX Runtime's bert_3d_attention form: abcd,cde->abe */
    const float x4[] = {1, 2, 3, 4}, w3[] = {1, 10, 2, 20, 3, 30, 4, 40};
    einsum_case("abcd,cde->abe", 2, (const float *[]){x4, w3}, (int[]){4, 3},
                (const int64_t[][4]){{1, 1, 2, 2}, {2, 2, 2}}, 3, (int64_t[]){1, 1, 2},
                (double[]){30, 300}, 2, __LINE__);

    kt t;
    kt_begin(&t, IR_OP_Einsum, 2, 1);
    ir_set_attr_string(t.g, t.node, "equation", "ij,jk->ik");
    kt_in(&t, 0, IR_I32, DIMS(1, 2), (int32_t[]){INT32_MAX, 1});
    kt_in(&t, 1, IR_I32, DIMS(2, 1), (int32_t[]){1, 1});
    kt_out(&t, 0, IR_I32, DIMS(1, 1));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, INT32_MIN); /* wraps like int32 arithmetic */
    ir_set_attr_string(t.g, t.node, "equation", "ij,jk->iz");
    CHECK(kt_fails_with(&t, "equation \"ij,jk->iz\" has an output letter that no input has"));
    kt_end(&t);
}

static void test_more_nn_and_indexing(void)
{
    kt t;
    kt_begin(&t, IR_OP_GlobalMaxPool, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 2, 3), (float[]){1, 5, 2, -1, NAN, 0});
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, NAN);
    kt_end(&t);

    /* LRN over 3 channels of one pixel, size 2: channels c-0 .. c+1 */
    kt_begin(&t, IR_OP_LRN, 1, 1);
    ir_set_attr_int(t.g, t.node, "size", 2);
    ir_set_attr_float(t.g, t.node, "alpha", 2);
    ir_set_attr_float(t.g, t.node, "beta", 1);
    kt_in_f32(&t, 0, DIMS(1, 3, 1), (float[]){1, 2, 3});
    kt_out(&t, 0, IR_F32, DIMS(1, 3, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1.0 / (1 + 5), 2.0 / (1 + 13), 3.0 / (1 + 9));
    kt_end(&t);

    kt_begin(&t, IR_OP_MeanVarianceNormalization, 1, 1);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    kt_in_f32(&t, 0, DIMS(2, 2), (float[]){1, 3, 5, 5});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-6, -1, 1, 0, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Det, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 3),
              (float[]){0, 1, 0, 1, 0, 0, 0, 0, 2, 1, 2, 3, 2, 4, 6, 0, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -2, 0); /* a row swap; two dependent rows */
    kt_end(&t);

    kt_begin(&t, IR_OP_BitShift, 2, 1);
    ir_set_attr_string(t.g, t.node, "direction", "LEFT");
    kt_in(&t, 0, IR_U8, DIMS(3), (uint8_t[]){1, 0x81, 7});
    kt_in(&t, 1, IR_U8, DIMS(3), (uint8_t[]){3, 1, 8});
    kt_out(&t, 0, IR_U8, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 8, 2, 0);
    ir_set_attr_string(t.g, t.node, "direction", "RIGHT");
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0x40, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_EyeLike, 1, 1);
    ir_set_attr_int(t.g, t.node, "k", -1);
    kt_in_i64(&t, 0, DIMS(3, 2), NULL);
    kt_out(&t, 0, IR_I64, DIMS(3, 2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 1, 0, 0, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_ReverseSequence, 2, 1);
    ir_set_attr_int(t.g, t.node, "batch_axis", 0);
    ir_set_attr_int(t.g, t.node, "time_axis", 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){2, 3});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 2, 1, 3, 6, 5, 4);
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){2, 4});
    CHECK(kt_fails_with(&t, "sequence length 4 is not in [0, 3]"));
    kt_end(&t);

    kt_begin(&t, IR_OP_Compress, 2, 1);
    ir_set_attr_int(t.g, t.node, "axis", 0);
    kt_in_f32(&t, 0, DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    kt_in(&t, 1, IR_BOOL, DIMS(2), (uint8_t[]){0, 1}); /* shorter than the axis */
    kt_out(&t, 0, IR_F32, DIMS(1, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 3, 4);
    kt_in(&t, 1, IR_BOOL, DIMS(4), (uint8_t[]){0, 1, 1, 1});
    CHECK(kt_fails_with(&t, "the condition has 4 entries for 3"));
    kt_end(&t);
}

static void test_windows_groupnorm_bitwise(void)
{
    kt t;
    kt_begin(&t, IR_OP_HannWindow, 1, 1);
    kt_in_i64(&t, 0, SCALAR, (int64_t[]){4});
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0.5, 1, 0.5); /* periodic: N = 4 */
    ir_set_attr_int(t.g, t.node, "periodic", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0.75, 0.75, 0); /* symmetric: N = 3 */
    kt_end(&t);

    kt_begin(&t, IR_OP_BlackmanWindow, 1, 1);
    kt_in_i64(&t, 0, SCALAR, (int64_t[]){2});
    kt_out(&t, 0, IR_F32, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-6, 0, 1); /* 0.42 - 0.5 + 0.08; 0.42 + 0.5 + 0.08 */
    kt_end(&t);

    kt_begin(&t, IR_OP_GroupNormalization, 3, 1);
    ir_set_attr_int(t.g, t.node, "num_groups", 2);
    ir_set_attr_float(t.g, t.node, "epsilon", 0);
    kt_in_f32(&t, 0, DIMS(1, 4, 1), (float[]){1, 3, 10, 10});
    kt_in_f32(&t, 1, DIMS(4), (float[]){1, 2, 1, 1});
    kt_in_f32(&t, 2, DIMS(4), (float[]){0, 0, 5, 5});
    kt_out(&t, 0, IR_F32, DIMS(1, 4, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, 2, NAN, NAN); /* group 0: mean 2, std 1; group 1: 0 / 0 */
    kt_end(&t);

    kt_begin(&t, IR_OP_Mish, 1, 1);
    kt_in_f32(&t, 0, DIMS(3), (float[]){0, 1, -100});
    kt_out(&t, 0, IR_F32, DIMS(3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 0.8650983882673103, -0.0);
    kt_end(&t);

    kt_begin(&t, IR_OP_BitwiseXor, 2, 1);
    kt_in(&t, 0, IR_I8, DIMS(2), (int8_t[]){-1, 0x0f});
    kt_in(&t, 1, IR_I8, DIMS(1), (int8_t[]){0x3c});
    kt_out(&t, 0, IR_I8, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, -61, 0x33);
    kt_end(&t);

    kt_begin(&t, IR_OP_BitwiseNot, 1, 1);
    kt_in(&t, 0, IR_U8, DIMS(2), (uint8_t[]){0, 0xf0});
    kt_out(&t, 0, IR_U8, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 255, 0x0f);
    kt_end(&t);
}

static void test_recurrent(void)
{
    /* RNN, one unit: W = 1, R = 0.5, x = [1, 2] (seq 2, batch 1): h1 = tanh(1), h2 = tanh(2 +
     * 0.5 h1) */
    kt t;
    kt_begin(&t, IR_OP_RNN, 3, 2);
    kt_in_f32(&t, 0, DIMS(2, 1, 1), (float[]){1, 2});
    kt_in_f32(&t, 1, DIMS(1, 1, 1), (float[]){1});
    kt_in_f32(&t, 2, DIMS(1, 1, 1), (float[]){0.5f});
    kt_out(&t, 0, IR_F32, DIMS(2, 1, 1, 1));
    kt_out(&t, 1, IR_F32, DIMS(1, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.7615941559557649, 0.9830411011980433);
    EXPECT_F32(&t, 1, 0.9830411011980433);
    ir_set_attr_string(t.g, t.node, "direction", "reverse"); /* from the last step down */
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.901844598209524, 0.9640275800758169);
    EXPECT_F32(&t, 1, 0.901844598209524);
    kt_end(&t);

    /* sequence_lens 1 of 2: the second step leaves Y zero and the state as it was */
    kt_begin(&t, IR_OP_RNN, 5, 2);
    kt_in_f32(&t, 0, DIMS(2, 1, 1), (float[]){1, 2});
    kt_in_f32(&t, 1, DIMS(1, 1, 1), (float[]){1});
    kt_in_f32(&t, 2, DIMS(1, 1, 1), (float[]){0.5f});
    t.in[3] = (kn_tensor){0};
    kt_in(&t, 4, IR_I32, DIMS(1), (int32_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(2, 1, 1, 1));
    kt_out(&t, 1, IR_F32, DIMS(1, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.7615941559557649, 0);
    EXPECT_F32(&t, 1, 0.7615941559557649);
    kt_in(&t, 4, IR_I32, DIMS(1), (int32_t[]){3});
    CHECK(kt_fails_with(&t, "sequence length 3 is not in [0, 2]"));
    kt_end(&t);

    /* LSTM and GRU, one unit, every W gate 1, R 0, x = 1, one step */
    kt_begin(&t, IR_OP_LSTM, 3, 3);
    kt_in_f32(&t, 0, DIMS(1, 1, 1), (float[]){1});
    kt_in_f32(&t, 1, DIMS(1, 4, 1), (float[]){1, 1, 1, 1});
    kt_in_f32(&t, 2, DIMS(1, 4, 1), (float[]){0, 0, 0, 0});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1, 1));
    kt_out(&t, 1, IR_F32, DIMS(1, 1, 1));
    kt_out(&t, 2, IR_F32, DIMS(1, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 1, 0.36960635293570576);
    EXPECT_F32(&t, 2, 0.5567699411459397);
    kt_end(&t);

    kt_begin(&t, IR_OP_GRU, 3, 2);
    kt_in_f32(&t, 0, DIMS(1, 1, 1), (float[]){1});
    kt_in_f32(&t, 1, DIMS(1, 3, 1), (float[]){1, 1, 1});
    kt_in_f32(&t, 2, DIMS(1, 3, 1), (float[]){0, 0, 0});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1, 1));
    kt_out(&t, 1, IR_F32, DIMS(1, 1, 1));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 1, 0.20482421480982513); /* (1 - z) tanh(1) with the state 0 */
    kt_in_f32(&t, 1, DIMS(1, 2, 1), (float[]){1, 1});
    CHECK(kt_fails_with(&t, "do not fit X and hidden_size 1"));
    kt_end(&t);
}

static void test_grid_sample(void)
{
    kt t;
    kt_begin(&t, IR_OP_GridSample, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 2, 2), (float[]){1, 2, 3, 4});
    kt_in_f32(&t, 1, DIMS(1, 1, 3, 2), (float[]){-1, -1, 0, 0, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 1, 3));
    ir_set_attr_int(t.g, t.node, "align_corners", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2.5, 4); /* the corners are the corner pixels' centres */
    ir_set_attr_int(t.g, t.node, "align_corners", 0);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0.25, 2.5, 1); /* the corners are the image's edges: half outside, zeros */
    ir_set_attr_string(t.g, t.node, "padding_mode", "border");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2.5, 4);
    ir_set_attr_string(t.g, t.node, "padding_mode", "reflection");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2.5, 4);
    ir_set_attr_string(t.g, t.node, "mode", "nearest");
    ir_set_attr_int(t.g, t.node, "align_corners", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1, 4); /* 0.5 rounds half to even: pixel 0 */
    kt_in_f32(&t, 1, DIMS(1, 1, 3, 3), NULL);
    CHECK(kt_fails_with(&t, "grid [N, Ho, Wo, 2]"));
    kt_end(&t);
}

static void test_unpool_dft(void)
{
    kt t;
    kt_begin(&t, IR_OP_MaxUnpool, 2, 1);
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2}, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 2), (float[]){7, 9});
    kt_in_i64(&t, 1, DIMS(1, 1, 2), (int64_t[]){1, 2});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 7, 9, 0);
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 6)); /* output_shape larger: the default output first */
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 7, 9, 0, 0, 0);
    kt_in_i64(&t, 1, DIMS(1, 1, 2), (int64_t[]){1, 4});
    CHECK(kt_fails_with(&t, "index 4 is outside the unpooled output's 4 elements"));
    kt_end(&t);

    /* the DFT of [1, 2, 3, 4]: [10, -2+2i, -2, -2-2i]; inverse brings it back */
    kt_begin(&t, IR_OP_DFT, 1, 1);
    ir_set_attr_int(t.g, t.node, "axis", 1);
    kt_in_f32(&t, 0, DIMS(1, 4, 1), (float[]){1, 2, 3, 4});
    kt_out(&t, 0, IR_F32, DIMS(1, 4, 2));
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-6, 10, 0, -2, 2, -2, 0, -2, -2);
    kt_in_f32(&t, 0, DIMS(1, 4, 2), (float[]){10, 0, -2, 2, -2, 0, -2, -2});
    ir_set_attr_int(t.g, t.node, "inverse", 1);
    CHECK(kt_run(&t));
    EXPECT_F32_TOL(&t, 0, 1e-6, 1, 0, 2, 0, 3, 0, 4, 0);
    kt_end(&t);
}

int main(void)
{
    RUN(test_gather_elements);
    RUN(test_scatter_elements);
    RUN(test_gather_scatter_nd);
    RUN(test_onehot_nonzero);
    RUN(test_arg_topk);
    RUN(test_cumsum);
    RUN(test_depth_space);
    RUN(test_size_castlike);
    RUN(test_more_reductions);
    RUN(test_resize);
    RUN(test_einsum);
    RUN(test_more_nn_and_indexing);
    RUN(test_windows_groupnorm_bitwise);
    RUN(test_recurrent);
    RUN(test_grid_sample);
    RUN(test_unpool_dft);
    return unit_finish();
}
