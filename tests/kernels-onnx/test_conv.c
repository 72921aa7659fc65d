/* Conv and ConvTranspose: small hand-computed cases, and random cases (1-D, 2-D, 3-D; pads,
 * strides, dilations, groups, auto_pad) against a direct evaluation of ONNX's formula written
 * here independently of the im2col/col2im code. */
#include "tests/kernels-onnx/kt.h"

/* Geometry of a reference convolution, spatial dims padded to 3 with size-1 leading dims. */
typedef struct {
    int n, c, m, group;
    int in[3], k[3], s[3], d[3], pb[3], out[3];
} ref_geom;

/* y[n, m, o] = b[m] + sum over c in m's group and kernel k of x[n, c, o*s - pb + k*d] w[m, c', k]. */
static void conv_reference(const ref_geom *g, const float *x, const float *w, const float *b,
                           float *y)
{
    int cg = g->c / g->group, mg = g->m / g->group;
    for (int n = 0; n < g->n; n++)
        for (int m = 0; m < g->m; m++)
            for (int o0 = 0; o0 < g->out[0]; o0++)
                for (int o1 = 0; o1 < g->out[1]; o1++)
                    for (int o2 = 0; o2 < g->out[2]; o2++) {
                        double acc = b ? b[m] : 0;
                        for (int cl = 0; cl < cg; cl++) {
                            int c = (m / mg) * cg + cl;
                            for (int k0 = 0; k0 < g->k[0]; k0++)
                                for (int k1 = 0; k1 < g->k[1]; k1++)
                                    for (int k2 = 0; k2 < g->k[2]; k2++) {
                                        int i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0];
                                        int i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];
                                        int i2 = o2 * g->s[2] - g->pb[2] + k2 * g->d[2];
                                        if (i0 < 0 || i0 >= g->in[0] || i1 < 0 ||
                                            i1 >= g->in[1] || i2 < 0 || i2 >= g->in[2])
                                            continue;
                                        acc += (double)x[(((n * g->c + c) * g->in[0] + i0) *
                                                              g->in[1] + i1) * g->in[2] + i2] *
                                               w[(((m * cg + cl) * g->k[0] + k0) * g->k[1] + k1) *
                                                     g->k[2] + k2];
                                    }
                        }
                        y[(((n * g->m + m) * g->out[0] + o0) * g->out[1] + o1) * g->out[2] + o2] =
                            (float)acc;
                    }
}

/* Runs kn_cpu_Conv on random data with spatial rank ns and the attributes already on t's node,
 * and compares with conv_reference. g's leading (3 - ns) spatial dims must be 1. */
static void conv_case(kt *t, int ns, const ref_geom *g, bool bias)
{
    int64_t xd[5] = {g->n, g->c}, wd[5] = {g->m, g->c / g->group}, yd[5] = {g->n, g->m};
    for (int i = 0; i < ns; i++) {
        xd[2 + i] = g->in[3 - ns + i];
        wd[2 + i] = g->k[3 - ns + i];
        yd[2 + i] = g->out[3 - ns + i];
    }
    kt_in_f32(t, 0, ns + 2, xd, NULL);
    kt_in_f32(t, 1, ns + 2, wd, NULL);
    kt_fill_random(&t->in[0], 11);
    kt_fill_random(&t->in[1], 12);
    if (bias) {
        int64_t bd[1] = {g->m};
        kt_in_f32(t, 2, 1, bd, NULL);
        kt_fill_random(&t->in[2], 13);
    }
    kt_out(t, 0, IR_F32, ns + 2, yd);
    CHECK(kt_run(t));
    float *want = malloc((size_t)t->out[0].numel * sizeof *want);
    conv_reference(g, t->in[0].data, t->in[1].data, bias ? t->in[2].data : NULL, want);
    EXPECT_CLOSE(t, 0, want, 1e-5);
    free(want);
}

static void test_conv_by_hand(void)
{
    kt t;
    /* 3x3 input 0..8, 2x2 kernel of ones: each output sums a 2x2 block; bias 1 */
    kt_begin(&t, IR_OP_Conv, 3, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 3, 3), (float[]){0, 1, 2, 3, 4, 5, 6, 7, 8});
    kt_in_f32(&t, 1, DIMS(1, 1, 2, 2), (float[]){1, 1, 1, 1});
    kt_in_f32(&t, 2, DIMS(1), (float[]){1});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 2, 2));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 9, 13, 21, 25);
    kt_end(&t);

    /* pads 1 and stride 2 on the same input with a 3x3 kernel of ones: corners see 2x2 blocks */
    kt_begin(&t, IR_OP_Conv, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 3, 3), (float[]){0, 1, 2, 3, 4, 5, 6, 7, 8});
    kt_in_f32(&t, 1, DIMS(1, 1, 3, 3), (float[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 2, 2));
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 2}, 2);
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 8, 12, 20, 24);
    kt_end(&t);
}

static void test_conv_2d_random(void)
{
    kt t;
    /* groups 2, non-square kernel, strides 2x1, dilations 1x2, asymmetric pads */
    ref_geom g = {.n = 2, .c = 4, .m = 6, .group = 2, .in = {1, 7, 6}, .k = {1, 3, 2},
                  .s = {1, 2, 1}, .d = {1, 1, 2}, .pb = {0, 1, 0}};
    g.out[0] = 1;
    g.out[1] = (7 + 1 + 2 - 3) / 2 + 1; /* pads 1 (top) 2 (bottom) */
    g.out[2] = (6 + 0 + 1 - 3) / 1 + 1; /* pads 0 (left) 1 (right); dilated extent 3 */
    kt_begin(&t, IR_OP_Conv, 3, 1);
    ir_set_attr_int(t.g, t.node, "group", 2);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 1}, 2);
    ir_set_attr_ints(t.g, t.node, "dilations", (int64_t[]){1, 2}, 2);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 0, 2, 1}, 4);
    ir_set_attr_ints(t.g, t.node, "kernel_shape", (int64_t[]){3, 2}, 2);
    conv_case(&t, 2, &g, true);
    kt_end(&t);

    /* depthwise: group = C = M */
    ref_geom dw = {.n = 1, .c = 3, .m = 3, .group = 3, .in = {1, 5, 5}, .k = {1, 3, 3},
                   .s = {1, 1, 1}, .d = {1, 1, 1}, .pb = {0, 1, 1}, .out = {1, 5, 5}};
    kt_begin(&t, IR_OP_Conv, 2, 1);
    ir_set_attr_int(t.g, t.node, "group", 3);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    conv_case(&t, 2, &dw, false);
    kt_end(&t);

    /* 1x1 stride 1: the path without im2col */
    ref_geom pw = {.n = 2, .c = 5, .m = 3, .group = 1, .in = {1, 4, 3}, .k = {1, 1, 1},
                   .s = {1, 1, 1}, .d = {1, 1, 1}, .out = {1, 4, 3}};
    kt_begin(&t, IR_OP_Conv, 3, 1);
    conv_case(&t, 2, &pw, true);
    kt_end(&t);
}

static void test_conv_1d_3d_random(void)
{
    kt t;
    ref_geom g1 = {.n = 1, .c = 3, .m = 2, .group = 1, .in = {1, 1, 10}, .k = {1, 1, 3},
                   .s = {1, 1, 2}, .d = {1, 1, 2}, .pb = {0, 0, 1}};
    g1.out[0] = g1.out[1] = 1;
    g1.out[2] = (10 + 2 - 5) / 2 + 1;
    kt_begin(&t, IR_OP_Conv, 3, 1);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "dilations", (int64_t[]){2}, 1);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1}, 2);
    conv_case(&t, 1, &g1, true);
    kt_end(&t);

    ref_geom g3 = {.n = 1, .c = 2, .m = 2, .group = 1, .in = {4, 5, 3}, .k = {2, 3, 2},
                   .s = {1, 2, 1}, .d = {1, 1, 1}, .pb = {1, 1, 1}};
    for (int i = 0; i < 3; i++)
        g3.out[i] = (g3.in[i] + 2 - g3.k[i]) / g3.s[i] + 1;
    kt_begin(&t, IR_OP_Conv, 2, 1);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){1, 2, 1}, 3);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 1, 1, 1, 1, 1}, 6);
    conv_case(&t, 3, &g3, false);
    kt_end(&t);
}

/* SAME_UPPER / SAME_LOWER: out = ceil(in / stride); an odd total pad goes to the end (UPPER) or
 * the beginning (LOWER). in 6, k 3, s 2: out 3, total (3-1)*2 + 3 - 6 = 1. */
static void test_conv_auto_pad(void)
{
    kt t;
    ref_geom up = {.n = 1, .c = 1, .m = 1, .group = 1, .in = {1, 6, 6}, .k = {1, 3, 3},
                   .s = {1, 2, 2}, .d = {1, 1, 1}, .pb = {0, 0, 0}, .out = {1, 3, 3}};
    kt_begin(&t, IR_OP_Conv, 2, 1);
    ir_set_attr_string(t.g, t.node, "auto_pad", "SAME_UPPER");
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 2}, 2);
    conv_case(&t, 2, &up, false);
    kt_end(&t);

    ref_geom low = up;
    low.pb[1] = low.pb[2] = 1;
    kt_begin(&t, IR_OP_Conv, 2, 1);
    ir_set_attr_string(t.g, t.node, "auto_pad", "SAME_LOWER");
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 2}, 2);
    conv_case(&t, 2, &low, false);
    kt_end(&t);

    /* VALID ignores pads: 6 - 3 + 1 = 4 */
    ref_geom valid = {.n = 1, .c = 2, .m = 1, .group = 1, .in = {1, 6, 6}, .k = {1, 3, 3},
                      .s = {1, 1, 1}, .d = {1, 1, 1}, .out = {1, 4, 4}};
    kt_begin(&t, IR_OP_Conv, 2, 1);
    ir_set_attr_string(t.g, t.node, "auto_pad", "VALID");
    conv_case(&t, 2, &valid, false);
    kt_end(&t);
}

static void test_conv_errors(void)
{
    kt t;
    kt_begin(&t, IR_OP_Conv, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 3, 4, 4), NULL);
    kt_in_f32(&t, 1, DIMS(2, 2, 3, 3), NULL);
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 2, 2));
    CHECK(kt_fails_with(&t, "input has 3 channels, weight [2, 2, ...], group 1"));
    kt_end(&t);

    kt_begin(&t, IR_OP_Conv, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 4, 4), NULL);
    kt_in_f32(&t, 1, DIMS(1, 1, 3, 3), NULL);
    kt_out(&t, 0, IR_F32, DIMS(1, 1, 4, 4));
    CHECK(kt_fails_with(&t, "another shape"));
    kt_end(&t);
}

/* ---- ConvTranspose ------------------------------------------------------------------------- */

/* y[n, m, i*s - pb + k*d] += x[n, c, i] w[c, m', k] for m in c's group. */
static void convt_reference(const ref_geom *g, const float *x, const float *w, const float *b,
                            float *y)
{
    int cg = g->c / g->group, mg = g->m / g->group;
    int out_sp = g->out[0] * g->out[1] * g->out[2], in_sp = g->in[0] * g->in[1] * g->in[2];
    for (int n = 0; n < g->n; n++)
        for (int m = 0; m < g->m; m++)
            for (int i = 0; i < out_sp; i++)
                y[(n * g->m + m) * out_sp + i] = b ? b[m] : 0;
    for (int n = 0; n < g->n; n++)
        for (int c = 0; c < g->c; c++)
            for (int ml = 0; ml < mg; ml++)
                for (int i = 0; i < in_sp; i++)
                    for (int k0 = 0; k0 < g->k[0]; k0++)
                        for (int k1 = 0; k1 < g->k[1]; k1++)
                            for (int k2 = 0; k2 < g->k[2]; k2++) {
                                int i0 = i / (g->in[1] * g->in[2]), i1 = i / g->in[2] % g->in[1];
                                int i2 = i % g->in[2];
                                int o0 = i0 * g->s[0] - g->pb[0] + k0 * g->d[0];
                                int o1 = i1 * g->s[1] - g->pb[1] + k1 * g->d[1];
                                int o2 = i2 * g->s[2] - g->pb[2] + k2 * g->d[2];
                                if (o0 < 0 || o0 >= g->out[0] || o1 < 0 || o1 >= g->out[1] ||
                                    o2 < 0 || o2 >= g->out[2])
                                    continue;
                                int m = (c / cg) * mg + ml;
                                y[(n * g->m + m) * out_sp + (o0 * g->out[1] + o1) * g->out[2] + o2] +=
                                    x[(n * g->c + c) * in_sp + i] *
                                    w[(((c * mg + ml) * g->k[0] + k0) * g->k[1] + k1) * g->k[2] + k2];
                            }
}

static void convt_case(kt *t, int ns, const ref_geom *g, bool bias)
{
    int64_t xd[5] = {g->n, g->c}, wd[5] = {g->c, g->m / g->group}, yd[5] = {g->n, g->m};
    for (int i = 0; i < ns; i++) {
        xd[2 + i] = g->in[3 - ns + i];
        wd[2 + i] = g->k[3 - ns + i];
        yd[2 + i] = g->out[3 - ns + i];
    }
    kt_in_f32(t, 0, ns + 2, xd, NULL);
    kt_in_f32(t, 1, ns + 2, wd, NULL);
    kt_fill_random(&t->in[0], 21);
    kt_fill_random(&t->in[1], 22);
    if (bias) {
        int64_t bd[1] = {g->m};
        kt_in_f32(t, 2, 1, bd, NULL);
        kt_fill_random(&t->in[2], 23);
    }
    kt_out(t, 0, IR_F32, ns + 2, yd);
    CHECK(kt_run(t));
    float *want = malloc((size_t)t->out[0].numel * sizeof *want);
    convt_reference(g, t->in[0].data, t->in[1].data, bias ? t->in[2].data : NULL, want);
    EXPECT_CLOSE(t, 0, want, 1e-5);
    free(want);
}

static void test_conv_transpose(void)
{
    kt t;
    /* ONNX's 1-D example: x = [0, 1, 2], two output channels of ones(3) */
    kt_begin(&t, IR_OP_ConvTranspose, 2, 1);
    kt_in_f32(&t, 0, DIMS(1, 1, 3), (float[]){0, 1, 2});
    kt_in_f32(&t, 1, DIMS(1, 2, 3), (float[]){1, 1, 1, 1, 1, 1});
    kt_out(&t, 0, IR_F32, DIMS(1, 2, 5));
    CHECK(kt_run(&t));
    EXPECT_F32(&t, 0, 0, 1, 3, 3, 2, 0, 1, 3, 3, 2);
    kt_end(&t);

    /* 2-D, groups 2, stride 2x3, dilation 2x1, pads, output_padding 1x0:
     * out = s*(in-1) + output_padding + (k-1)*d + 1 - pads */
    ref_geom g = {.n = 2, .c = 4, .m = 6, .group = 2, .in = {1, 3, 4}, .k = {1, 3, 2},
                  .s = {1, 2, 3}, .d = {1, 2, 1}, .pb = {0, 1, 0}};
    g.out[0] = 1;
    g.out[1] = 2 * 2 + 1 + 2 * 2 + 1 - 1 - 2; /* pads 1 (top), 2 (bottom) */
    g.out[2] = 3 * 3 + 0 + 1 + 1 - 0 - 1;     /* pads 0, 1 */
    kt_begin(&t, IR_OP_ConvTranspose, 3, 1);
    ir_set_attr_int(t.g, t.node, "group", 2);
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2, 3}, 2);
    ir_set_attr_ints(t.g, t.node, "dilations", (int64_t[]){2, 1}, 2);
    ir_set_attr_ints(t.g, t.node, "pads", (int64_t[]){1, 0, 2, 1}, 4);
    ir_set_attr_ints(t.g, t.node, "output_padding", (int64_t[]){1, 0}, 2);
    convt_case(&t, 2, &g, true);
    kt_end(&t);

    /* SAME_LOWER: out = in * stride = 6; total = 2*2 + 3 - 6 = 1, at the beginning */
    ref_geom low = {.n = 1, .c = 1, .m = 2, .group = 1, .in = {1, 1, 3}, .k = {1, 1, 3},
                    .s = {1, 1, 2}, .d = {1, 1, 1}, .pb = {0, 0, 1}, .out = {1, 1, 6}};
    kt_begin(&t, IR_OP_ConvTranspose, 2, 1);
    ir_set_attr_string(t.g, t.node, "auto_pad", "SAME_LOWER");
    ir_set_attr_ints(t.g, t.node, "strides", (int64_t[]){2}, 1);
    convt_case(&t, 1, &low, false);
    kt_end(&t);

    /* output_shape beyond the natural size: the extra positions at the end hold the bias */
    ref_geom big = {.n = 1, .c = 2, .m = 1, .group = 1, .in = {2, 2, 2}, .k = {2, 2, 2},
                    .s = {1, 1, 1}, .d = {1, 1, 1}, .out = {3, 4, 3}};
    kt_begin(&t, IR_OP_ConvTranspose, 3, 1);
    ir_set_attr_ints(t.g, t.node, "output_shape", (int64_t[]){3, 4, 3}, 3);
    convt_case(&t, 3, &big, true);
    kt_end(&t);
}

int main(void)
{
    RUN(test_conv_by_hand);
    RUN(test_conv_2d_random);
    RUN(test_conv_1d_3d_random);
    RUN(test_conv_auto_pad);
    RUN(test_conv_errors);
    RUN(test_conv_transpose);
    return unit_finish();
}
