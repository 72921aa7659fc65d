/* Data movement kernels: Transpose, Reshape and the views, Concat, Split, Slice, Expand, Tile,
 * Gather, Pad and Trilu, on several dtypes (they move bytes). Expected values by hand; the Pad
 * modes match numpy.pad's "constant", "reflect", "edge" and "wrap". */
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

static void iota_f32(kn_tensor *x)
{
    for (int64_t i = 0; i < x->numel; i++)
        ((float *)x->data)[i] = (float)i;
}

static void test_transpose(void)
{
    kt t;
    kt_begin(&t, IR_OP_Transpose, 1, 1); /* no perm: reverse */
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    kt_out(&t, 0, IR_F32, DIMS(3, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 4, 2, 5, 3, 6);
    kt_end(&t);

    /* perm [1, 0, 2] of [2,3,2] = arange(12), in i64 */
    kt_begin(&t, IR_OP_Transpose, 1, 1);
    kt_in_i64(&t, 0, DIMS(2, 3, 2), (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    kt_out(&t, 0, IR_I64, DIMS(3, 2, 2));
    ir_set_attr_ints(t.g, t.node, "perm", (int64_t[]){1, 0, 2}, 3);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11);
    kt_end(&t);

    /* [2,3,4] with perm [2,0,1]: y[k,i,j] = x[i,j,k] */
    kt_begin(&t, IR_OP_Transpose, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 4), NULL);
    iota_f32(&t.in[0]);
    kt_out(&t, 0, IR_F32, DIMS(4, 2, 3));
    ir_set_attr_ints(t.g, t.node, "perm", (int64_t[]){2, 0, 1}, 3);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15,
               19, 23);
    kt_end(&t);

    kt_begin(&t, IR_OP_Transpose, 1, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    kt_out(&t, 0, IR_F32, DIMS(3, 2));
    ir_set_attr_ints(t.g, t.node, "perm", (int64_t[]){0, 0}, 2);
    CHECK(kt_fails_with(&t, "perm is not a permutation"));
    kt_end(&t);
}

static void test_reshape_and_views(void)
{
    kt t;
    /* 0 copies the input's dim, -1 takes the rest */
    kt_begin(&t, IR_OP_Reshape, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 4), NULL);
    iota_f32(&t.in[0]);
    kt_ints(&t, 1, (int64_t[]){0, -1}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2, 12));
    CHECK(kt_run(&t));
    CHECK(((float *)t.out[0].data)[23] == 23);
    kt_end(&t);

    kt_begin(&t, IR_OP_Reshape, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3, 4), NULL);
    kt_ints(&t, 1, (int64_t[]){5, -1}, 2);
    kt_out(&t, 0, IR_F32, DIMS(5, 5));
    CHECK(kt_fails_with(&t, "cannot reshape 24 elements with -1 and a known product 5"));
    kt_end(&t);

    /* the shape's values disagree with the allocated output */
    kt_begin(&t, IR_OP_Reshape, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), NULL);
    kt_ints(&t, 1, (int64_t[]){3, 2}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    CHECK(kt_fails_with(&t, "another shape"));
    kt_end(&t);

    /* allowzero: a 0 is a real 0 */
    kt_begin(&t, IR_OP_Reshape, 2, 1);
    kt_in_f32(&t, 0, DIMS(0, 3), NULL);
    kt_ints(&t, 1, (int64_t[]){3, 0}, 2);
    kt_out(&t, 0, IR_F32, DIMS(3, 0));
    ir_set_attr_int(t.g, t.node, "allowzero", 1);
    CHECK(kt_run(&t));
    kt_end(&t);

    kt_begin(&t, IR_OP_Squeeze, 2, 1);
    kt_in(&t, 0, IR_BOOL, DIMS(1, 2, 1), (uint8_t[]){1, 0});
    kt_ints(&t, 1, (int64_t[]){0, -1}, 2);
    kt_out(&t, 0, IR_BOOL, DIMS(2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Squeeze, 1, 1);
    kt_in_f32(&t, 0, DIMS(1, 2), NULL);
    ir_set_attr_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_fails_with(&t, "cannot squeeze dim 1 of size 2"));
    kt_end(&t);

    kt_begin(&t, IR_OP_Flatten, 1, 1);
    kt_in(&t, 0, IR_I32, DIMS(2, 1, 2), (int32_t[]){1, 2, 3, 4});
    kt_out(&t, 0, IR_I32, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 2, 3, 4);
    kt_end(&t);
}

static void test_concat_split(void)
{
    kt t;
    kt_begin(&t, IR_OP_Concat, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 1), (float[]){1, 2});
    kt_in_f32(&t, 1, DIMS(2, 2), (float[]){3, 4, 5, 6});
    kt_out(&t, 0, IR_F32, DIMS(2, 3));
    ir_set_attr_int(t.g, t.node, "axis", -1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 3, 4, 2, 5, 6);
    kt_end(&t);

    /* shape arithmetic: Concat of i64 vectors, with an empty one */
    kt_begin(&t, IR_OP_Concat, 3, 1);
    kt_ints(&t, 0, (int64_t[]){2}, 1);
    kt_ints(&t, 1, (int64_t[]){0}, 0);
    kt_ints(&t, 2, (int64_t[]){-1, 64}, 2);
    kt_out(&t, 0, IR_I64, DIMS(3));
    ir_set_attr_int(t.g, t.node, "axis", 0);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 2, -1, 64);
    kt_end(&t);

    /* Split along axis 1 into sizes 1 and 3 (the outputs' shapes carry the sizes) */
    kt_begin(&t, IR_OP_Split, 2, 2);
    kt_in_f32(&t, 0, DIMS(2, 4), (float[]){0, 1, 2, 3, 4, 5, 6, 7});
    kt_ints(&t, 1, (int64_t[]){1, 3}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2, 1));
    kt_out(&t, 1, IR_F32, DIMS(2, 3));
    ir_set_attr_int(t.g, t.node, "axis", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 4);
    EXPECT_F32(&t, 1, 1, 2, 3, 5, 6, 7);
    kt_end(&t);

    /* num_outputs (opset 18) / equal split: three outputs of 2 */
    kt_begin(&t, IR_OP_Split, 1, 3);
    kt_in_i64(&t, 0, DIMS(6), (int64_t[]){1, 2, 3, 4, 5, 6});
    kt_out(&t, 0, IR_I64, DIMS(2));
    kt_out(&t, 1, IR_I64, DIMS(2));
    kt_out(&t, 2, IR_I64, DIMS(2));
    ir_set_attr_int(t.g, t.node, "num_outputs", 3);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 2);
    EXPECT_INT(&t, 1, 3, 4);
    EXPECT_INT(&t, 2, 5, 6);
    kt_end(&t);

    kt_begin(&t, IR_OP_Split, 2, 2);
    kt_in_f32(&t, 0, DIMS(4), NULL);
    kt_ints(&t, 1, (int64_t[]){3, 1}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2));
    kt_out(&t, 1, IR_F32, DIMS(2));
    CHECK(kt_fails_with(&t, "the split sizes do not match the outputs"));
    kt_end(&t);
}

/* Slice of arange(10) with the given starts/ends/steps on axis 0. */
static void slice10(kt *t, int64_t start, int64_t end, int64_t step, int64_t count)
{
    kt_begin(t, IR_OP_Slice, 5, 1);
    kt_in_f32(t, 0, DIMS(10), NULL);
    iota_f32(&t->in[0]);
    kt_ints(t, 1, (int64_t[]){start}, 1);
    kt_ints(t, 2, (int64_t[]){end}, 1);
    kt_ints(t, 3, (int64_t[]){0}, 1);
    kt_ints(t, 4, (int64_t[]){step}, 1);
    kt_out(t, 0, IR_F32, 1, &count);
    CHECK(kt_run(t));
}

static void test_slice(void)
{
    kt t;
    slice10(&t, -3, INT64_MAX, 1, 3); /* negative start, end clamped */
    EXPECT_F32(&t, 0, 7, 8, 9);
    kt_end(&t);

    slice10(&t, -1, INT64_MIN, -1, 10); /* the whole axis reversed */
    EXPECT_F32(&t, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    kt_end(&t);

    slice10(&t, 8, 1, -3, 3); /* 8, 5, 2 */
    EXPECT_F32(&t, 0, 8, 5, 2);
    kt_end(&t);

    slice10(&t, 100, -100, -4, 3); /* start clamps to 9 for a negative step */
    EXPECT_F32(&t, 0, 9, 5, 1);
    kt_end(&t);

    slice10(&t, 5, 2, 1, 0); /* empty */
    kt_end(&t);

    /* 2-D, axes [-1] only, default steps: columns 1..2 of [2,4] (i32) */
    kt_begin(&t, IR_OP_Slice, 4, 1);
    kt_in(&t, 0, IR_I32, DIMS(2, 4), (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7});
    kt_ints(&t, 1, (int64_t[]){1}, 1);
    kt_ints(&t, 2, (int64_t[]){3}, 1);
    kt_ints(&t, 3, (int64_t[]){-1}, 1);
    kt_out(&t, 0, IR_I32, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 2, 5, 6);
    kt_end(&t);

    /* both axes, negative step on the first */
    kt_begin(&t, IR_OP_Slice, 5, 1);
    kt_in_f32(&t, 0, DIMS(3, 4), NULL);
    iota_f32(&t.in[0]);
    kt_ints(&t, 1, (int64_t[]){2, 0}, 2);
    kt_ints(&t, 2, (int64_t[]){-4, 4}, 2);
    kt_ints(&t, 3, (int64_t[]){0, 1}, 2);
    kt_ints(&t, 4, (int64_t[]){-2, 2}, 2);
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 8, 10, 0, 2);
    kt_end(&t);

    kt_begin(&t, IR_OP_Slice, 5, 1);
    kt_in_f32(&t, 0, DIMS(4), NULL);
    kt_ints(&t, 1, (int64_t[]){0}, 1);
    kt_ints(&t, 2, (int64_t[]){4}, 1);
    kt_ints(&t, 3, (int64_t[]){0}, 1);
    kt_ints(&t, 4, (int64_t[]){0}, 1);
    kt_out(&t, 0, IR_F32, DIMS(4));
    CHECK(kt_fails_with(&t, "step 0"));
    kt_end(&t);
}

static void test_expand_tile(void)
{
    kt t;
    kt_begin(&t, IR_OP_Expand, 2, 1);
    kt_in_f32(&t, 0, DIMS(3, 1), (float[]){1, 2, 3});
    kt_ints(&t, 1, (int64_t[]){2, 1, 2}, 3);
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3);
    kt_end(&t);

    kt_begin(&t, IR_OP_Tile, 2, 1);
    kt_in_i64(&t, 0, DIMS(2, 2), (int64_t[]){1, 2, 3, 4});
    kt_ints(&t, 1, (int64_t[]){2, 2}, 2);
    kt_out(&t, 0, IR_I64, DIMS(4, 4));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4);
    kt_end(&t);

    kt_begin(&t, IR_OP_Tile, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 1, 2), (float[]){1, 2, 3, 4});
    kt_ints(&t, 1, (int64_t[]){1, 3, 1}, 3);
    kt_out(&t, 0, IR_F32, DIMS(2, 3, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4);
    kt_end(&t);
}

static void test_gather(void)
{
    kt t;
    kt_begin(&t, IR_OP_Gather, 2, 1);
    kt_in_f32(&t, 0, DIMS(3, 2), (float[]){1, 2, 3, 4, 5, 6});
    kt_in_i64(&t, 1, DIMS(3), (int64_t[]){2, -1, 0});
    kt_out(&t, 0, IR_F32, DIMS(3, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 5, 6, 5, 6, 1, 2);
    kt_end(&t);

    /* axis 1 with 2-D i32 indices: [2,3] -> [2,2,2] */
    kt_begin(&t, IR_OP_Gather, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
    kt_in(&t, 1, IR_I32, DIMS(2, 2), (int32_t[]){0, 2, 1, 0});
    kt_out(&t, 0, IR_F32, DIMS(2, 2, 2));
    ir_set_attr_int(t.g, t.node, "axis", 1);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 3, 2, 1, 4, 6, 5, 4);
    kt_end(&t);

    /* a scalar index drops the axis: Shape -> Gather(0) in exported graphs */
    kt_begin(&t, IR_OP_Gather, 2, 1);
    kt_in_i64(&t, 0, DIMS(3), (int64_t[]){8, 128, 768});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){1});
    kt_out(&t, 0, IR_I64, SCALAR);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 128);
    kt_end(&t);

    kt_begin(&t, IR_OP_Gather, 2, 1);
    kt_in_f32(&t, 0, DIMS(3, 2), NULL);
    kt_in_i64(&t, 1, DIMS(2), (int64_t[]){0, 3});
    kt_out(&t, 0, IR_F32, DIMS(2, 2));
    CHECK(kt_fails_with(&t, "Gather 'y0': index 3 is out of range for axis 0 of size 3"));
    kt_end(&t);

    kt_begin(&t, IR_OP_Gather, 2, 1);
    kt_in_f32(&t, 0, DIMS(3, 2), NULL);
    kt_in_i64(&t, 1, DIMS(1), (int64_t[]){-4});
    kt_out(&t, 0, IR_F32, DIMS(1, 2));
    CHECK(kt_fails_with(&t, "index -4 is out of range"));
    kt_end(&t);

    /* a graph read from text: the error points at the node's line and column */
    static const char text[] = "graph g {\n  y0 = Gather(d, i)\n}\n";
    dg_source src = {.path = "g.graph", .text = text, .len = sizeof text - 1};
    kt_begin(&t, IR_OP_Gather, 2, 1);
    t.g->src = &src;
    t.node->src_offset = 12;
    t.node->src_len = 17;
    kt_in_f32(&t, 0, DIMS(2), NULL);
    kt_in_i64(&t, 1, DIMS(1), (int64_t[]){2});
    kt_out(&t, 0, IR_F32, DIMS(1));
    CHECK(kt_fails_with(&t, "g.graph:2:3: error: Gather 'y0': index 2 is out of range for axis 0 "
                            "of size 2\n    y0 = Gather(d, i)\n    ^~~~~~~~~~~~~~~~~\n"));
    kt_end(&t);
}

/* Pad of [1, 2, 3] with pads [before, after] in the given mode. */
static void pad3(kt *t, const char *mode, int64_t before, int64_t after)
{
    int64_t n = 3 + before + after;
    kt_begin(t, IR_OP_Pad, 2, 1);
    kt_in_f32(t, 0, DIMS(3), (float[]){1, 2, 3});
    kt_ints(t, 1, (int64_t[]){before, after}, 2);
    kt_out(t, 0, IR_F32, 1, &n);
    ir_set_attr_string(t->g, t->node, "mode", mode);
    CHECK(kt_run(t));
}

static void test_pad(void)
{
    kt t;
    pad3(&t, "reflect", 2, 2);
    EXPECT_F32(&t, 0, 3, 2, 1, 2, 3, 2, 1);
    kt_end(&t);
    pad3(&t, "edge", 2, 1);
    EXPECT_F32(&t, 0, 1, 1, 1, 2, 3, 3);
    kt_end(&t);
    pad3(&t, "wrap", 1, 2);
    EXPECT_F32(&t, 0, 3, 1, 2, 3, 1, 2);
    kt_end(&t);
    pad3(&t, "constant", -1, 1); /* a negative pad crops */
    EXPECT_F32(&t, 0, 2, 3, 0);
    kt_end(&t);

    /* constant 9 on [2,2] with pads [1, 0, 0, 1] (begin of each axis, then end) */
    kt_begin(&t, IR_OP_Pad, 3, 1);
    kt_in_i64(&t, 0, DIMS(2, 2), (int64_t[]){1, 2, 3, 4});
    kt_ints(&t, 1, (int64_t[]){1, 0, 0, 1}, 4);
    kt_in_i64(&t, 2, SCALAR, (int64_t[]){9});
    kt_out(&t, 0, IR_I64, DIMS(3, 3));
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 9, 9, 9, 1, 2, 9, 3, 4, 9);
    kt_end(&t);

    /* axes input (opset 18): pad only the last axis */
    kt_begin(&t, IR_OP_Pad, 4, 1);
    kt_in_f32(&t, 0, DIMS(2, 2), (float[]){1, 2, 3, 4});
    kt_ints(&t, 1, (int64_t[]){1, 1}, 2);
    kt_in_f32(&t, 2, SCALAR, (float[]){-1});
    kt_ints(&t, 3, (int64_t[]){-1}, 1);
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, -1, 1, 2, -1, -1, 3, 4, -1);
    kt_end(&t);

    /* reflect on 2-D, both axes: numpy.pad(arange(6).reshape(2,3), 1, "reflect") */
    kt_begin(&t, IR_OP_Pad, 2, 1);
    kt_in_f32(&t, 0, DIMS(2, 3), (float[]){0, 1, 2, 3, 4, 5});
    kt_ints(&t, 1, (int64_t[]){1, 1, 1, 1}, 4);
    kt_out(&t, 0, IR_F32, DIMS(4, 5));
    ir_set_attr_string(t.g, t.node, "mode", "reflect");
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4, 1, 0, 1, 2, 1);
    kt_end(&t);

    kt_begin(&t, IR_OP_Pad, 2, 1);
    kt_in_f32(&t, 0, DIMS(2), NULL);
    kt_ints(&t, 1, (int64_t[]){1, 1}, 2);
    kt_out(&t, 0, IR_F32, DIMS(4));
    ir_set_attr_string(t.g, t.node, "mode", "mirror");
    CHECK(kt_fails_with(&t, "mode \"mirror\" is not"));
    kt_end(&t);
}

static void test_trilu(void)
{
    kt t;
    kt_begin(&t, IR_OP_Trilu, 1, 1); /* upper, k = 0 */
    kt_in_f32(&t, 0, DIMS(3, 3), (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    kt_out(&t, 0, IR_F32, DIMS(3, 3));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 1, 2, 3, 0, 5, 6, 0, 0, 9);
    kt_end(&t);

    kt_begin(&t, IR_OP_Trilu, 2, 1); /* lower, k = -1, batched [2,2,2] */
    kt_in_i64(&t, 0, DIMS(2, 2, 2), (int64_t[]){1, 2, 3, 4, 5, 6, 7, 8});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){-1});
    kt_out(&t, 0, IR_I64, DIMS(2, 2, 2));
    ir_set_attr_int(t.g, t.node, "upper", 0);
    CHECK(kt_run(&t));
    EXPECT_INT(&t, 0, 0, 0, 3, 0, 0, 0, 7, 0);
    kt_end(&t);

    kt_begin(&t, IR_OP_Trilu, 2, 1); /* upper, k = 1, non-square [2,4] */
    kt_in_f32(&t, 0, DIMS(2, 4), (float[]){1, 2, 3, 4, 5, 6, 7, 8});
    kt_in_i64(&t, 1, SCALAR, (int64_t[]){1});
    kt_out(&t, 0, IR_F32, DIMS(2, 4));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 2, 3, 4, 0, 0, 7, 8);
    kt_end(&t);
}

int main(void)
{
    RUN(test_transpose);
    RUN(test_reshape_and_views);
    RUN(test_concat_split);
    RUN(test_slice);
    RUN(test_expand_tile);
    RUN(test_gather);
    RUN(test_pad);
    RUN(test_trilu);
    return unit_finish();
}
