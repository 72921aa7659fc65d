/* Every fused op against its unfused form, both run by the same CPU executor.
 *
 * Each case builds two graphs with the same inputs (names, order, types) and the same seeded
 * constants: one with the fused node, one with the plain ONNX ops that define it. Both run on the
 * same generated inputs and every output is compared, NaN/Inf first. Tolerances, and why:
 *   f32   rtol 1e-5, atol 1e-5: the two forms sum in different orders (blocked GEMM, one pass
 *         vs several), a few ulps apart; the arithmetic is the same;
 *   f16   rtol 4e-3, atol 2e-3: the unfused form rounds every intermediate to f16 storage (each
 *         rounding up to 2^-11 relative), the fused form only its outputs;
 *   bf16  rtol 3e-2, atol 1e-2: likewise with 8 bits of mantissa;
 *   i8    atol 1: QGemm's two forms may fall on either side of a rounding tie.
 * A second set of cases checks small inputs against values computed by hand. */
#include "base/check.h"
#include "ir/ir.h"
#include "kernels/kernels.h"
#include "runtime/runtime.h"
#include "tests/kernels-fused/acts.h"
#include "tests/runtime/rtt.h"
#include "tests/unit.h"

#include <math.h>
#include <string.h>

static rt_tolerance tol_for(ir_dtype dt)
{
    switch (dt) {
    case IR_F16: return (rt_tolerance){.rtol = 4e-3, .atol = 2e-3};
    case IR_BF16: return (rt_tolerance){.rtol = 3e-2, .atol = 1e-2};
    case IR_I8: return (rt_tolerance){.rtol = 0, .atol = 1};
    default: return (rt_tolerance){.rtol = 1e-5, .atol = 1e-5};
    }
}

/* Runs both graphs with the same seed, compares them, frees them. */
static void check_pair(ir_graph *fused, ir_graph *ref, rt_tolerance tol, const char *what)
{
    rt_result got, want;
    bool ran_fused = rtt_run(fused, 11, &got), ran_ref = rtt_run(ref, 11, &want);
    CHECK(ran_fused);
    CHECK(ran_ref);
    if (ran_fused && ran_ref) {
        bool same = rtt_compare(&got, &want, tol, what);
        if (!same)
            fprintf(stderr, "  in case: %s\n", what);
        CHECK(same);
    }
    if (ran_fused)
        rt_result_free(&got);
    if (ran_ref)
        rt_result_free(&want);
    ir_graph_free(fused);
    ir_graph_free(ref);
}

/* ---- activations ---------------------------------------------------------------------------- */

static const act_case acts[] = {
    {"Identity", false, 0, 0},   {"Relu", false, 0, 0},      {"LeakyRelu", false, 0, 0},
    {"LeakyRelu", true, 0.3, 0}, {"Sigmoid", false, 0, 0},   {"Tanh", false, 0, 0},
    {"Clip", true, -0.4, 0.7},   {"Gelu", false, 0, 0},      {"GeluTanh", false, 0, 0},
    {"Silu", false, 0, 0},       {"HardSwish", false, 0, 0}, {"HardSigmoid", false, 0, 0},
    {"HardSigmoid", true, 0.3, 0.4},
};

/* ---- FusedConvAct --------------------------------------------------------------------------- */

typedef struct {
    int64_t c, m, hw, k, group, stride, dilation, pad;
    const char *auto_pad; /* NULL: explicit pads */
    bool bias, residual;
} conv_case;

static void conv_attrs(ir_graph *g, ir_node *n, const conv_case *c)
{
    ir_set_attr_int(g, n, "group", c->group);
    ir_set_attr_ints(g, n, "strides", (int64_t[]){c->stride, c->stride}, 2);
    ir_set_attr_ints(g, n, "dilations", (int64_t[]){c->dilation, c->dilation}, 2);
    if (c->auto_pad)
        ir_set_attr_string(g, n, "auto_pad", c->auto_pad);
    else
        ir_set_attr_ints(g, n, "pads", (int64_t[]){c->pad, c->pad, c->pad + 1, c->pad}, 4);
}

/* The output spatial size of the case (explicit pads are pad before, pad + 1 after on H). */
static void conv_out(const conv_case *c, int64_t *oh, int64_t *ow)
{
    int64_t extent = c->dilation * (c->k - 1) + 1;
    if (c->auto_pad) {
        *oh = *ow = (c->hw + c->stride - 1) / c->stride;
        return;
    }
    *oh = (c->hw + 2 * c->pad + 1 - extent) / c->stride + 1;
    *ow = (c->hw + 2 * c->pad - extent) / c->stride + 1;
}

static void conv_graph(ir_graph *g, const conv_case *c, const act_case *a, ir_dtype dt, bool fused)
{
    int64_t oh, ow;
    conv_out(c, &oh, &ow);
    ir_value *x = rtt_input(g, "x", dt, DIMS(2, c->c, c->hw, c->hw));
    ir_value *z = c->residual ? rtt_input(g, "z", dt, DIMS(2, c->m, oh, ow)) : NULL;
    ir_value *w = rtt_random(g, "w", dt, 3, DIMS(c->m, c->c / c->group, c->k, c->k));
    ir_value *b = c->bias ? rtt_random(g, "b", dt, 4, DIMS(c->m)) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_FusedConvAct, "y", IN(x, w, b, z));
        conv_attrs(g, y->producer, c);
        set_act(g, y->producer, a);
    } else {
        ir_value *conv = c->bias ? rtt_op(g, IR_OP_Conv, "conv", IN(x, w, b))
                                 : rtt_op(g, IR_OP_Conv, "conv", IN(x, w));
        conv_attrs(g, conv->producer, c);
        if (z)
            conv = rtt_op(g, IR_OP_Add, "sum", IN(conv, z));
        y = ref_act(g, a, conv, dt, "y");
    }
    ir_add_output(g, y);
}

static void check_conv(const conv_case *c, const act_case *a, ir_dtype dt)
{
    char what[160];
    snprintf(what, sizeof what, "FusedConvAct %s %s group %lld stride %lld%s%s", a->act,
             ir_dtype_name(dt), (long long)c->group, (long long)c->stride,
             c->residual ? " residual" : "", c->bias ? " bias" : "");
    ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
    conv_graph(f, c, a, dt, true);
    conv_graph(r, c, a, dt, false);
    check_pair(f, r, tol_for(dt), what);
}

static void test_conv_every_activation(void)
{
    conv_case c = {.c = 4, .m = 6, .hw = 9, .k = 3, .group = 1, .stride = 1, .dilation = 1,
                   .pad = 1, .bias = true, .residual = true};
    for (size_t i = 0; i < FR_COUNT_OF(acts); i++)
        check_conv(&c, &acts[i], IR_F32);
}

static void test_conv_geometry(void)
{
    static const act_case relu = {"Relu", false, 0, 0};
    const conv_case cases[] = {
        {.c = 4, .m = 6, .hw = 10, .k = 3, .group = 2, .stride = 2, .dilation = 1, .pad = 1,
         .bias = true, .residual = true},
        {.c = 6, .m = 6, .hw = 11, .k = 3, .group = 6, .stride = 1, .dilation = 2, .pad = 2,
         .bias = false, .residual = true}, /* depthwise, dilated */
        {.c = 3, .m = 5, .hw = 8, .k = 1, .group = 1, .stride = 1, .dilation = 1, .pad = 0,
         .bias = true, .residual = false}, /* pointwise */
        {.c = 4, .m = 8, .hw = 9, .k = 3, .group = 1, .stride = 2, .dilation = 1,
         .auto_pad = "SAME_UPPER", .bias = true, .residual = true},
        {.c = 4, .m = 8, .hw = 9, .k = 2, .group = 1, .stride = 1, .dilation = 1,
         .auto_pad = "SAME_LOWER", .bias = false, .residual = false},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++)
        check_conv(&cases[i], &relu, IR_F32);
}

static void test_conv_half_storage(void)
{
    const conv_case c = {.c = 4, .m = 6, .hw = 7, .k = 3, .group = 1, .stride = 1, .dilation = 1,
                         .pad = 1, .bias = true, .residual = true};
    check_conv(&c, &acts[9], IR_F16);  /* Silu */
    check_conv(&c, &acts[1], IR_BF16); /* Relu */
}

/* ---- SeparableConv -------------------------------------------------------------------------- */

typedef struct {
    int spatial; /* 1 (Conformer) or 2 (MobileNet) */
    int64_t c, mult, m, size, k, stride, dilation, pad;
    bool bias_dw, bias_pw;
} sep_case;

/* The depthwise conv's window: pads `pad` before and `pad + 1` after on the first axis. */
static void sep_window(ir_graph *g, ir_node *n, const sep_case *c)
{
    int64_t one[2] = {c->stride, c->stride}, dil[2] = {c->dilation, c->dilation};
    int64_t pads[4] = {c->pad, c->pad, c->pad + 1, c->pad};
    if (c->spatial == 1)
        pads[1] = c->pad + 1;
    ir_set_attr_int(g, n, "group", c->c);
    ir_set_attr_ints(g, n, "strides", one, (uint32_t)c->spatial);
    ir_set_attr_ints(g, n, "dilations", dil, (uint32_t)c->spatial);
    ir_set_attr_ints(g, n, "pads", pads, 2u * (uint32_t)c->spatial);
}

static void set_out_act(ir_graph *g, ir_node *n, const act_case *a)
{
    ir_set_attr_string(g, n, "out_act", a->act);
    if (a->has_params) {
        ir_set_attr_float(g, n, "out_act_alpha", a->alpha);
        ir_set_attr_float(g, n, "out_act_beta", a->beta);
    }
}

static void sep_graph(ir_graph *g, const sep_case *c, const act_case *act, const act_case *out_act,
                      ir_dtype dt, bool fused)
{
    int64_t mid = c->c * c->mult;
    ir_value *x = c->spatial == 1 ? rtt_input(g, "x", dt, DIMS(2, c->c, c->size))
                                  : rtt_input(g, "x", dt, DIMS(2, c->c, c->size, c->size + 1));
    ir_value *wd = c->spatial == 1 ? rtt_random(g, "wd", dt, 3, DIMS(mid, 1, c->k))
                                   : rtt_random(g, "wd", dt, 3, DIMS(mid, 1, c->k, c->k));
    ir_value *wp = c->spatial == 1 ? rtt_random(g, "wp", dt, 5, DIMS(c->m, mid, 1))
                                   : rtt_random(g, "wp", dt, 5, DIMS(c->m, mid, 1, 1));
    ir_value *bd = c->bias_dw ? rtt_random(g, "bd", dt, 4, DIMS(mid)) : NULL;
    ir_value *bp = c->bias_pw ? rtt_random(g, "bp", dt, 6, DIMS(c->m)) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_SeparableConv, "y", IN(x, wd, wp, bd, bp));
        sep_window(g, y->producer, c);
        set_act(g, y->producer, act);
        set_out_act(g, y->producer, out_act);
    } else {
        ir_value *dw = bd ? rtt_op(g, IR_OP_Conv, "dw", IN(x, wd, bd))
                          : rtt_op(g, IR_OP_Conv, "dw", IN(x, wd));
        sep_window(g, dw->producer, c);
        ir_value *a = ref_act(g, act, dw, dt, "dw_act");
        ir_value *pw = bp ? rtt_op(g, IR_OP_Conv, "pw", IN(a, wp, bp))
                          : rtt_op(g, IR_OP_Conv, "pw", IN(a, wp));
        y = ref_act(g, out_act, pw, dt, "y");
    }
    ir_add_output(g, y);
}

static void check_sep(const sep_case *c, const act_case *act, const act_case *out_act, ir_dtype dt)
{
    char what[200];
    snprintf(what, sizeof what,
             "SeparableConv %d-D %s, %s / %s, C %lld x %lld -> %lld, k %lld stride %lld dilation "
             "%lld%s%s",
             c->spatial, ir_dtype_name(dt), act->act, out_act->act, (long long)c->c,
             (long long)c->mult, (long long)c->m, (long long)c->k, (long long)c->stride,
             (long long)c->dilation, c->bias_dw ? " B_dw" : "", c->bias_pw ? " B_pw" : "");
    ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
    sep_graph(f, c, act, out_act, dt, true);
    sep_graph(r, c, act, out_act, dt, false);
    check_pair(f, r, tol_for(dt), what);
}

/* 2-D (MobileNet: 3x3, stride 2; tiles of several rows, or of row segments when a row is longer
 * than a tile) and 1-D (Conformer: k 31 over 100 frames, more positions than a tile) with and without biases and activations, a depth multiplier, dilation, and the
 * activation pairs (one Clip or Silu each: their reference ops are named once per graph). */
static void test_separable(void)
{
    static const sep_case cases[] = {
        {2, 8, 1, 12, 9, 3, 2, 1, 1, true, true},      /* MobileNet block, stride 2 */
        {2, 4, 2, 6, 7, 3, 1, 2, 2, false, true},      /* depth multiplier 2, dilated */
        {2, 3, 1, 5, 6, 1, 1, 1, 0, false, false},     /* 1x1 depthwise, no biases */
        {1, 16, 1, 16, 100, 31, 1, 1, 15, true, true}, /* Conformer conv module */
        {1, 6, 3, 4, 20, 5, 3, 2, 3, true, false},     /* 1-D, strided, dilated, multiplier 3 */
        {2, 3, 1, 4, 70, 3, 1, 1, 1, true, true},      /* rows longer than a tile: segments */
    };
    const act_case *pairs[][2] = {
        {&acts[0], &acts[0]}, {&acts[1], &acts[6]},  {&acts[9], &acts[0]},
        {&acts[6], &acts[1]}, {&acts[10], &acts[3]}, {&acts[7], &acts[4]},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++)
        for (size_t j = 0; j < FR_COUNT_OF(pairs); j++)
            check_sep(&cases[i], pairs[j][0], pairs[j][1], IR_F32);
    check_sep(&cases[0], &acts[6], &acts[1], IR_F16); /* Clip (ReLU6-like) / Relu */
    check_sep(&cases[3], &acts[9], &acts[0], IR_F16); /* Silu / Identity */
    check_sep(&cases[1], &acts[1], &acts[0], IR_BF16);
}

/* ---- SqueezeExcite -------------------------------------------------------------------------- */

typedef struct {
    int spatial; /* 1 or 2 */
    int64_t batch, c, r, size;
} se_case;

static void set_gate(ir_graph *g, ir_node *n, const act_case *a)
{
    ir_set_attr_string(g, n, "gate", a->act);
    if (a->has_params) {
        ir_set_attr_float(g, n, "gate_alpha", a->alpha);
        ir_set_attr_float(g, n, "gate_beta", a->beta);
    }
}

/* x * gate(Conv(act(Conv(GlobalAveragePool(x), W1, B1)), W2, B2)), fused or as the plain ops. */
static void se_graph(ir_graph *g, const se_case *c, const act_case *act, const act_case *gate,
                     ir_dtype dt, bool fused)
{
    bool one = c->spatial == 1;
    ir_value *x = one ? rtt_input(g, "x", dt, DIMS(c->batch, c->c, c->size))
                      : rtt_input(g, "x", dt, DIMS(c->batch, c->c, c->size, c->size + 2));
    ir_value *w1 = one ? rtt_random(g, "w1", dt, 3, DIMS(c->r, c->c, 1))
                       : rtt_random(g, "w1", dt, 3, DIMS(c->r, c->c, 1, 1));
    ir_value *w2 = one ? rtt_random(g, "w2", dt, 5, DIMS(c->c, c->r, 1))
                       : rtt_random(g, "w2", dt, 5, DIMS(c->c, c->r, 1, 1));
    ir_value *b1 = rtt_random(g, "b1", dt, 4, DIMS(c->r));
    ir_value *b2 = rtt_random(g, "b2", dt, 6, DIMS(c->c));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_SqueezeExcite, "y", IN(x, w1, b1, w2, b2));
        set_act(g, y->producer, act);
        set_gate(g, y->producer, gate);
    } else {
        ir_value *p = rtt_op(g, IR_OP_GlobalAveragePool, "pool", IN(x));
        ir_value *h = ref_act(g, act, rtt_op(g, IR_OP_Conv, "c1", IN(p, w1, b1)), dt, "hidden");
        ir_value *s = ref_act(g, gate, rtt_op(g, IR_OP_Conv, "c2", IN(h, w2, b2)), dt, "scale");
        y = rtt_op(g, IR_OP_Mul, "y", IN(x, s));
    }
    ir_add_output(g, y);
}

/* EfficientNet (Silu, Sigmoid) and MobileNetV3 (Relu, HardSigmoid with torch's 1/6) shapes, 1-D
 * and 2-D, a batch of images, a reduction that widens (r > c), every dtype; the pairs name each
 * reference op once (one Silu or Clip per graph). */
static void test_squeeze_excite(void)
{
    static const se_case cases[] = {
        {2, 1, 16, 4, 7}, {2, 3, 8, 2, 5}, {1, 2, 12, 3, 30}, {2, 1, 3, 6, 1},
    };
    static const act_case torch_hardsigmoid = {"HardSigmoid", true, 1.0 / 6.0, 0.5};
    const act_case *pairs[][2] = {
        {&acts[9], &acts[4]},  {&acts[1], &torch_hardsigmoid}, {&acts[0], &acts[0]},
        {&acts[10], &acts[11]}, {&acts[6], &acts[12]},          {&acts[3], &acts[5]},
    };
    static const ir_dtype dts[] = {IR_F32, IR_F16, IR_BF16};
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++)
        for (size_t j = 0; j < FR_COUNT_OF(pairs); j++)
            for (size_t d = 0; d < FR_COUNT_OF(dts); d++) {
                const se_case *c = &cases[i];
                char what[160];
                snprintf(what, sizeof what,
                         "SqueezeExcite %d-D %s, %s / %s, N %lld C %lld R %lld size %lld",
                         c->spatial, ir_dtype_name(dts[d]), pairs[j][0]->act, pairs[j][1]->act,
                         (long long)c->batch, (long long)c->c, (long long)c->r,
                         (long long)c->size);
                ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
                se_graph(f, c, pairs[j][0], pairs[j][1], dts[d], true);
                se_graph(r, c, pairs[j][0], pairs[j][1], dts[d], false);
                check_pair(f, r, tol_for(dts[d]), what);
            }
}

/* ---- GemmEpilogue --------------------------------------------------------------------------- */

typedef struct {
    bool trans_a, trans_b, bias, residual;
    double alpha, beta;
    int b_batch; /* B: 0 a constant matrix; 1 an input [batch, k, n]; 2 an input [2, 1, k, n] */
} gemm_case;

/* B of the case: a matrix, or batched (broadcasting with A's batch as MatMul's does). */
static ir_value *gemm_b(ir_graph *g, const gemm_case *c, ir_dtype dt, int64_t batch, int64_t k,
                        int64_t n)
{
    int64_t r = c->trans_b ? n : k, q = c->trans_b ? k : n;
    if (c->b_batch == 1)
        return rtt_input(g, "w", dt, DIMS(batch, r, q));
    if (c->b_batch == 2)
        return rtt_input(g, "w", dt, DIMS(2, 1, r, q));
    return rtt_random(g, "w", dt, 5, DIMS(r, q));
}

static void gemm_graph(ir_graph *g, const gemm_case *c, const act_case *a, ir_dtype dt, bool fused)
{
    const int64_t batch = 3, m = 5, k = 16, n = 12;
    ir_value *x = c->trans_a ? rtt_input(g, "a", dt, DIMS(batch, k, m))
                             : rtt_input(g, "a", dt, DIMS(batch, m, k));
    ir_value *res = c->residual ? rtt_input(g, "res", dt, DIMS(m, n)) : NULL; /* broadcast */
    ir_value *w = gemm_b(g, c, dt, batch, k, n);
    ir_value *bias = c->bias ? rtt_random(g, "bias", dt, 6, DIMS(n)) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(x, w, bias, res));
        ir_node *node = y->producer;
        ir_set_attr_int(g, node, "transA", c->trans_a);
        ir_set_attr_int(g, node, "transB", c->trans_b);
        ir_set_attr_float(g, node, "alpha", c->alpha);
        ir_set_attr_float(g, node, "beta", c->beta);
        set_act(g, node, a);
    } else {
        if (c->trans_a) {
            x = rtt_op(g, IR_OP_Transpose, "at", IN(x));
            ir_set_attr_ints(g, x->producer, "perm", (int64_t[]){0, 2, 1}, 3);
        }
        if (c->trans_b) {
            int rank = c->b_batch == 0 ? 2 : c->b_batch == 1 ? 3 : 4;
            int64_t perm[4] = {0, 1, 2, 3};
            perm[rank - 2] = rank - 1;
            perm[rank - 1] = rank - 2;
            w = rtt_op(g, IR_OP_Transpose, "wt", IN(w));
            ir_set_attr_ints(g, w->producer, "perm", perm, (uint32_t)rank);
        }
        ir_value *acc = rtt_op(g, IR_OP_MatMul, "mm", IN(x, w));
        acc = rtt_op(g, IR_OP_Mul, "scaled", IN(acc, scalar(g, "alpha", dt, c->alpha)));
        if (bias)
            acc = rtt_op(g, IR_OP_Add, "biased", IN(acc, bias));
        if (res) {
            ir_value *beta = scalar(g, "beta", dt, c->beta);
            ir_value *r = rtt_op(g, IR_OP_Mul, "res_scaled", IN(res, beta));
            acc = rtt_op(g, IR_OP_Add, "summed", IN(acc, r));
        }
        y = ref_act(g, a, acc, dt, "y");
    }
    ir_add_output(g, y);
}

static void check_gemm(const gemm_case *c, const act_case *a, ir_dtype dt)
{
    char what[160];
    snprintf(what, sizeof what, "GemmEpilogue %s %s transA %d transB %d B batch %d", a->act,
             ir_dtype_name(dt), c->trans_a, c->trans_b, c->b_batch);
    ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
    gemm_graph(f, c, a, dt, true);
    gemm_graph(r, c, a, dt, false);
    check_pair(f, r, tol_for(dt), what);
}

static void test_gemm_every_activation(void)
{
    gemm_case c = {.bias = true, .residual = true, .alpha = 1, .beta = 1};
    for (size_t i = 0; i < FR_COUNT_OF(acts); i++)
        check_gemm(&c, &acts[i], IR_F32);
}

static void test_gemm_variants(void)
{
    static const act_case gelu = {"Gelu", false, 0, 0};
    const gemm_case cases[] = {
        {.trans_a = true, .bias = true, .residual = true, .alpha = 0.5, .beta = 2},
        {.trans_b = true, .bias = true, .residual = false, .alpha = 1, .beta = 1},
        {.trans_a = true, .trans_b = true, .bias = false, .residual = true, .alpha = 1.5,
         .beta = -1},
        {.bias = false, .residual = false, .alpha = 1, .beta = 1},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++)
        check_gemm(&cases[i], &gelu, IR_F32);
    check_gemm(&cases[0], &gelu, IR_F16);
    check_gemm(&cases[1], &acts[1], IR_BF16);
}

/* A batched B (ONNX Runtime's FusedMatMul: both operands computed): every batch of A with its own
 * B, and B's batch dims broadcasting with A's ([2, 1] against [3]: Y [2, 3, m, n]), with every
 * transpose and a bias, residual and activation on top. */
static void test_gemm_batched_b(void)
{
    static const act_case none = {"Identity", false, 0, 0};
    static const act_case gelu = {"Gelu", false, 0, 0};
    const gemm_case cases[] = {
        {.alpha = 3, .beta = 1, .b_batch = 1},
        {.trans_a = true, .alpha = 0.5, .beta = 1, .b_batch = 1},
        {.trans_b = true, .alpha = 1, .beta = 1, .b_batch = 1},
        {.trans_a = true, .trans_b = true, .alpha = -2, .beta = 1, .b_batch = 2},
        {.trans_b = true, .bias = true, .residual = true, .alpha = 1.5, .beta = 0.5, .b_batch = 2},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++)
        check_gemm(&cases[i], i == 4 ? &gelu : &none, IR_F32);
    check_gemm(&cases[3], &none, IR_F16);
    check_gemm(&cases[2], &none, IR_BF16);
}

/* transBatchA / transBatchB (ONNX Runtime's FusedMatMul): an operand stored [d0, b..., d] is read
 * as [b..., d0, d] (then transposed when trans), in place. Against Transpose (one perm doing both
 * moves) and MatMul, every combination of the four flags, A's batch [2, 3] against B's [2, 3] or
 * [1, 3] (broadcast), with a bias, residual and activation on some. */
typedef struct {
    bool trans[2], batch[2], broadcast_b, epilogue;
} trans_batch_case;

static void expect_invalid(ir_graph *g, const char *message);

/* An operand whose op() is [bd..., rows, cols] as the case stores it, and its reference. */
static ir_value *trans_batch_operand(ir_graph *g, const char *name, ir_dtype dt, const int64_t *bd,
                                     int64_t rows, int64_t cols, bool trans, bool batch, bool fused)
{
    /* the matrix before trans, then before the batch move */
    int64_t d[4] = {bd[0], bd[1], trans ? cols : rows, trans ? rows : cols};
    int64_t stored[4] = {d[0], d[1], d[2], d[3]};
    if (batch) {
        stored[0] = d[2];
        stored[1] = d[0];
        stored[2] = d[1];
    }
    ir_value *x = rtt_input(g, name, dt, DIMS(stored[0], stored[1], stored[2], stored[3]));
    if (fused || (!trans && !batch))
        return x;
    int64_t perm[4] = {0, 1, 2, 3};
    if (batch) {
        perm[0] = 1;
        perm[1] = 2;
        perm[2] = 0;
    }
    if (trans) {
        int64_t t = perm[3];
        perm[3] = perm[2];
        perm[2] = t;
    }
    x = rtt_op(g, IR_OP_Transpose, ar_printf(g->arena, "%s_t", name), IN(x));
    ir_set_attr_ints(g, x->producer, "perm", perm, 4);
    return x;
}

static void trans_batch_graph(ir_graph *g, const trans_batch_case *c, ir_dtype dt, bool fused)
{
    static const act_case relu = {"Relu", false, 0, 0};
    static const act_case none = {"Identity", false, 0, 0};
    const int64_t m = 5, k = 16, n = 12;
    const int64_t ab[2] = {2, 3}, bb[2] = {c->broadcast_b ? 1 : 2, 3};
    ir_value *a = trans_batch_operand(g, "a", dt, ab, m, k, c->trans[0], c->batch[0], fused);
    ir_value *b = trans_batch_operand(g, "b", dt, bb, k, n, c->trans[1], c->batch[1], fused);
    ir_value *bias = c->epilogue ? rtt_random(g, "bias", dt, 6, DIMS(n)) : NULL;
    ir_value *res = c->epilogue ? rtt_input(g, "res", dt, DIMS(m, n)) : NULL;
    const act_case *act = c->epilogue ? &relu : &none;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, b, bias, res));
        ir_node *node = y->producer;
        static const char *const names[2][2] = {{"transA", "transB"},
                                                {"transBatchA", "transBatchB"}};
        for (int i = 0; i < 2; i++) {
            ir_set_attr_int(g, node, names[0][i], c->trans[i]);
            ir_set_attr_int(g, node, names[1][i], c->batch[i]);
        }
        ir_set_attr_float(g, node, "alpha", 0.5);
        set_act(g, node, act);
    } else {
        ir_value *acc = rtt_op(g, IR_OP_MatMul, "mm", IN(a, b));
        acc = rtt_op(g, IR_OP_Mul, "scaled", IN(acc, scalar(g, "alpha", dt, 0.5)));
        if (bias)
            acc = rtt_op(g, IR_OP_Add, "biased", IN(acc, bias));
        if (res)
            acc = rtt_op(g, IR_OP_Add, "summed", IN(acc, res));
        y = ref_act(g, act, acc, dt, "y");
    }
    ir_add_output(g, y);
}

static void check_trans_batch(const trans_batch_case *c, ir_dtype dt)
{
    char what[160];
    snprintf(what, sizeof what,
             "GemmEpilogue %s transA %d transB %d transBatchA %d transBatchB %d%s%s",
             ir_dtype_name(dt), c->trans[0], c->trans[1], c->batch[0], c->batch[1],
             c->broadcast_b ? ", B's batch broadcast" : "", c->epilogue ? ", epilogue" : "");
    ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
    trans_batch_graph(f, c, dt, true);
    trans_batch_graph(r, c, dt, false);
    check_pair(f, r, tol_for(dt), what);
}

static void test_gemm_trans_batch(void)
{
    for (int bits = 0; bits < 16; bits++) {
        trans_batch_case c = {.trans = {bits & 1, bits & 2},
                              .batch = {bits & 4, bits & 8},
                              .broadcast_b = bits == 9 || bits == 12,
                              .epilogue = bits % 3 == 0};
        check_trans_batch(&c, IR_F32);
    }
    check_trans_batch(&(trans_batch_case){.trans = {true, false}, .batch = {true, true}}, IR_F16);
    check_trans_batch(
        &(trans_batch_case){.trans = {false, true}, .batch = {false, true}, .epilogue = true},
        IR_BF16);

    /* refused: transBatch over operands of different ranks, or of rank 2 */
    ir_graph *g = ir_graph_new("bad");
    ir_value *a = rtt_input(g, "a", IR_F32, DIMS(5, 3, 4));
    ir_value *y =
        rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, rtt_input(g, "b", IR_F32, DIMS(2, 3, 4, 6))));
    ir_set_attr_int(g, y->producer, "transBatchA", 1);
    ir_add_output(g, y);
    expect_invalid(g, "GemmEpilogue: transBatchA/transBatchB need A and B of one rank of at least "
                      "3, not A [5,3,4] and B [2,3,4,6]");
    g = ir_graph_new("bad");
    a = rtt_input(g, "a", IR_F32, DIMS(5, 4));
    y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, rtt_input(g, "b", IR_F32, DIMS(4, 6))));
    ir_set_attr_int(g, y->producer, "transBatchB", 1);
    ir_add_output(g, y);
    expect_invalid(g, "GemmEpilogue: transBatchA/transBatchB need A and B of one rank of at least "
                      "3, not A [5,4] and B [4,6]");
}

/* A 1-D A [K] (MatMul's vector: Y [N]) against MatMul, Add and the activation, with transB, a
 * bias, a residual of [N] or [1] and alpha / beta; refused with a batched B or transA. */
static void vector_gemm_graph(ir_graph *g, bool trans_b, bool bias, int64_t res_len, ir_dtype dt,
                              bool fused)
{
    static const act_case tanh_act = {"Tanh", false, 0, 0};
    const int64_t k = 16, n = 12;
    ir_value *a = rtt_input(g, "a", dt, DIMS(k));
    ir_value *w = trans_b ? rtt_input(g, "w", dt, DIMS(n, k)) : rtt_input(g, "w", dt, DIMS(k, n));
    ir_value *b = bias ? rtt_random(g, "bias", dt, 6, DIMS(n)) : NULL;
    ir_value *res = res_len ? rtt_input(g, "res", dt, DIMS(res_len)) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, w, b, res));
        ir_set_attr_int(g, y->producer, "transB", trans_b);
        ir_set_attr_float(g, y->producer, "alpha", 0.5);
        ir_set_attr_float(g, y->producer, "beta", 2.0);
        set_act(g, y->producer, &tanh_act);
    } else {
        if (trans_b) {
            w = rtt_op(g, IR_OP_Transpose, "wt", IN(w));
            ir_set_attr_ints(g, w->producer, "perm", (int64_t[]){1, 0}, 2);
        }
        ir_value *acc = rtt_op(g, IR_OP_MatMul, "mm", IN(a, w));
        acc = rtt_op(g, IR_OP_Mul, "scaled", IN(acc, scalar(g, "alpha", dt, 0.5)));
        if (b)
            acc = rtt_op(g, IR_OP_Add, "biased", IN(acc, b));
        if (res) {
            ir_value *r = rtt_op(g, IR_OP_Mul, "res_scaled", IN(res, scalar(g, "beta", dt, 2.0)));
            acc = rtt_op(g, IR_OP_Add, "summed", IN(acc, r));
        }
        y = ref_act(g, &tanh_act, acc, dt, "y");
    }
    ir_add_output(g, y);
}

static void test_gemm_vector_a(void)
{
    for (int bits = 0; bits < 8; bits++) {
        bool trans_b = bits & 1, bias = bits & 2;
        int64_t res_len = bits & 4 ? 12 : bits == 3 ? 1 : 0;
        ir_dtype dt = bits == 6 ? IR_F16 : bits == 7 ? IR_BF16 : IR_F32;
        char what[128];
        snprintf(what, sizeof what, "GemmEpilogue 1-D A %s transB %d bias %d residual [%lld]",
                 ir_dtype_name(dt), trans_b, bias, (long long)res_len);
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        vector_gemm_graph(f, trans_b, bias, res_len, dt, true);
        vector_gemm_graph(r, trans_b, bias, res_len, dt, false);
        check_pair(f, r, tol_for(dt), what);
    }
    ir_graph *g = ir_graph_new("bad");
    ir_value *a = rtt_input(g, "a", IR_F32, DIMS(4));
    ir_value *y =
        rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, rtt_input(g, "b", IR_F32, DIMS(2, 4, 6))));
    ir_add_output(g, y);
    expect_invalid(g, "GemmEpilogue: a 1-D A [4] needs a matrix B (not [2,4,6]) and no transA or "
                      "transBatch");
    g = ir_graph_new("bad");
    a = rtt_input(g, "a", IR_F32, DIMS(4));
    y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, rtt_input(g, "b", IR_F32, DIMS(4, 6))));
    ir_set_attr_int(g, y->producer, "transA", 1);
    ir_add_output(g, y);
    expect_invalid(g, "GemmEpilogue: a 1-D A [4] needs a matrix B (not [4,6]) and no transA or "
                      "transBatch");
}

/* ---- FusedQKV ------------------------------------------------------------------------------- */

static void qkv_graph(ir_graph *g, const int64_t *sizes, uint32_t nsizes, bool bias, ir_dtype dt,
                      bool fused)
{
    static const char *const names[] = {"q", "k", "v"};
    int64_t total = 0;
    for (uint32_t i = 0; i < nsizes; i++)
        total += sizes[i];
    ir_value *x = rtt_input(g, "x", dt, DIMS(2, 7, 32));
    ir_value *w = rtt_random(g, "w", dt, 8, DIMS(32, total));
    ir_value *b = bias ? rtt_random(g, "b", dt, 9, DIMS(total)) : NULL;
    ir_node *n;
    if (fused) {
        n = rtt_node(g, IR_OP_FusedQKV, names, nsizes, IN(x, w, b));
        ir_set_attr_ints(g, n, "sizes", sizes, nsizes);
    } else {
        ir_value *y = rtt_op(g, IR_OP_MatMul, "mm", IN(x, w));
        if (b)
            y = rtt_op(g, IR_OP_Add, "biased", IN(y, b));
        double split[3];
        for (uint32_t i = 0; i < nsizes; i++)
            split[i] = (double)sizes[i];
        n = rtt_node(g, IR_OP_Split, names, nsizes, IN(y, rtt_ints(g, "split", split, nsizes)));
        ir_set_attr_int(g, n, "axis", -1);
    }
    for (uint32_t i = 0; i < nsizes; i++)
        ir_add_output(g, n->outputs[i]);
}

static void check_qkv(const int64_t *sizes, uint32_t nsizes, bool bias, ir_dtype dt)
{
    ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
    qkv_graph(f, sizes, nsizes, bias, dt, true);
    qkv_graph(r, sizes, nsizes, bias, dt, false);
    check_pair(f, r, tol_for(dt), "FusedQKV");
}

static void test_qkv(void)
{
    check_qkv((int64_t[]){16, 16, 16}, 3, true, IR_F32); /* MHA */
    check_qkv((int64_t[]){32, 8, 8}, 3, true, IR_F32);   /* GQA: K and V narrower than Q */
    check_qkv((int64_t[]){24, 24}, 2, false, IR_F32);    /* gate/up */
    check_qkv((int64_t[]){32, 8, 8}, 3, true, IR_F16);
}

/* ---- normalizations ------------------------------------------------------------------------- */

/* The unfused RMSNorm of x over its last `naxes` dims: x / sqrt(mean(x^2) + eps) * scale. */
static ir_value *ref_rms(ir_graph *g, ir_value *x, ir_value *scale, int naxes, double eps,
                         ir_dtype dt, const char *out)
{
    double axes[IR_MAX_RANK];
    for (int i = 0; i < naxes; i++)
        axes[i] = -1 - i;
    ir_value *sq = rtt_op(g, IR_OP_Mul, "sq", IN(x, x));
    ir_value *axes_v = rtt_ints(g, "axes", axes, (size_t)naxes);
    ir_value *mean = rtt_op(g, IR_OP_ReduceMean, "ms", IN(sq, axes_v));
    ir_value *den = rtt_op(g, IR_OP_Sqrt, "rms",
                           IN(rtt_op(g, IR_OP_Add, "ms_eps", IN(mean, scalar(g, "eps", dt, eps)))));
    ir_value *norm = rtt_op(g, IR_OP_Div, "normed", IN(x, den));
    return rtt_op(g, IR_OP_Mul, out, IN(norm, scale));
}

static void rms_graph(ir_graph *g, int64_t axis, ir_dtype dt, bool fused)
{
    ir_value *x = rtt_input(g, "x", dt, DIMS(4, 6, 32));
    ir_value *scale = axis == -1 ? rtt_random(g, "scale", dt, 12, DIMS(32))
                                 : rtt_random(g, "scale", dt, 12, DIMS(6, 32));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_RMSNorm, "y", IN(x, scale));
        ir_set_attr_int(g, y->producer, "axis", axis);
        ir_set_attr_float(g, y->producer, "epsilon", 1e-3);
    } else {
        y = ref_rms(g, x, scale, axis == -1 ? 1 : 2, 1e-3, dt, "y");
    }
    ir_add_output(g, y);
}

static void test_rmsnorm(void)
{
    const int64_t axes[] = {-1, -2};
    for (size_t i = 0; i < FR_COUNT_OF(axes); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        rms_graph(f, axes[i], IR_F32, true);
        rms_graph(r, axes[i], IR_F32, false);
        check_pair(f, r, tol_for(IR_F32), "RMSNorm");
    }
    ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
    rms_graph(f, -1, IR_F16, true);
    rms_graph(r, -1, IR_F16, false);
    check_pair(f, r, tol_for(IR_F16), "RMSNorm f16");
}

/* AddLayerNorm / AddRMSNorm, B broadcast over A's batch, both outputs exported. */
static void add_norm_graph(ir_graph *g, bool layer, bool bias, bool export_sum, ir_dtype dt,
                           bool fused)
{
    static const char *const names[] = {"y", "sum"};
    ir_value *a = rtt_input(g, "a", dt, DIMS(3, 5, 48));
    ir_value *b = rtt_input(g, "b", dt, DIMS(5, 48));
    ir_value *scale = rtt_random(g, "scale", dt, 13, DIMS(48));
    ir_value *beta = bias ? rtt_random(g, "beta", dt, 14, DIMS(48)) : NULL;
    uint32_t nout = export_sum ? 2 : 1;
    if (fused) {
        ir_node *n = layer ? rtt_node(g, IR_OP_AddLayerNorm, names, nout, IN(a, b, scale, beta))
                           : rtt_node(g, IR_OP_AddRMSNorm, names, nout, IN(a, b, scale));
        ir_set_attr_float(g, n, "epsilon", 1e-4);
        for (uint32_t i = 0; i < nout; i++)
            ir_add_output(g, n->outputs[i]);
        return;
    }
    ir_value *sum = rtt_op(g, IR_OP_Add, "sum", IN(a, b));
    ir_value *y;
    if (layer) {
        y = beta ? rtt_op(g, IR_OP_LayerNormalization, "y", IN(sum, scale, beta))
                 : rtt_op(g, IR_OP_LayerNormalization, "y", IN(sum, scale));
        ir_set_attr_float(g, y->producer, "epsilon", 1e-4);
    } else {
        y = ref_rms(g, sum, scale, 1, 1e-4, dt, "y");
    }
    ir_add_output(g, y);
    if (export_sum)
        ir_add_output(g, sum);
}

static void test_add_norms(void)
{
    const struct {
        bool layer, bias, export_sum;
        ir_dtype dt;
    } cases[] = {
        {true, true, true, IR_F32},   {true, false, false, IR_F32}, {false, false, true, IR_F32},
        {false, false, false, IR_F32}, {true, true, true, IR_F16},  {false, false, true, IR_BF16},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        add_norm_graph(f, cases[i].layer, cases[i].bias, cases[i].export_sum, cases[i].dt, true);
        add_norm_graph(r, cases[i].layer, cases[i].bias, cases[i].export_sum, cases[i].dt, false);
        check_pair(f, r, tol_for(cases[i].dt), cases[i].layer ? "AddLayerNorm" : "AddRMSNorm");
    }
}

/* AddLayerNorm with a skip_bias (ONNX Runtime's SkipLayerNormalization bias): against
 * LayerNormalization((A + B) + skip_bias), with and without beta (an empty port before it), the
 * whole sum exported. */
static void skip_bias_graph(ir_graph *g, bool beta_in, ir_dtype dt, bool fused)
{
    static const char *const names[] = {"y", "sum"};
    ir_value *a = rtt_input(g, "a", dt, DIMS(3, 5, 48));
    ir_value *b = rtt_input(g, "b", dt, DIMS(3, 5, 48));
    ir_value *scale = rtt_random(g, "scale", dt, 13, DIMS(48));
    ir_value *beta = beta_in ? rtt_random(g, "beta", dt, 14, DIMS(48)) : NULL;
    ir_value *sb = rtt_random(g, "skip_bias", dt, 15, DIMS(48));
    if (fused) {
        ir_node *n = rtt_node(g, IR_OP_AddLayerNorm, names, 2, IN(a, b, scale, beta, sb));
        ir_set_attr_float(g, n, "epsilon", 1e-4);
        ir_add_output(g, n->outputs[0]);
        ir_add_output(g, n->outputs[1]);
        return;
    }
    ir_value *ab = rtt_op(g, IR_OP_Add, "ab", IN(a, b));
    ir_value *sum = rtt_op(g, IR_OP_Add, "sum", IN(ab, sb));
    ir_value *y = beta ? rtt_op(g, IR_OP_LayerNormalization, "y", IN(sum, scale, beta))
                       : rtt_op(g, IR_OP_LayerNormalization, "y", IN(sum, scale));
    ir_set_attr_float(g, y->producer, "epsilon", 1e-4);
    ir_add_output(g, y);
    ir_add_output(g, sum);
}

static void test_add_layernorm_skip_bias(void)
{
    const struct {
        bool beta;
        ir_dtype dt;
    } cases[] = {{true, IR_F32}, {false, IR_F32}, {true, IR_F16}, {false, IR_BF16}};
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        skip_bias_graph(f, cases[i].beta, cases[i].dt, true);
        skip_bias_graph(r, cases[i].beta, cases[i].dt, false);
        check_pair(f, r, tol_for(cases[i].dt), "AddLayerNorm skip_bias");
    }
}

/* ---- FusedSoftmax --------------------------------------------------------------------------- */

static void softmax_graph(ir_graph *g, int64_t axis, bool mask, double scale, ir_dtype dt,
                          bool fused)
{
    ir_value *x = rtt_input(g, "x", dt, DIMS(2, 3, 5, 7));
    ir_value *m = mask ? rtt_random_range(g, "mask", dt, 15, -4, 0, DIMS(1, 1, 5, 7)) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_FusedSoftmax, "y", IN(x, m));
        ir_set_attr_int(g, y->producer, "axis", axis);
        ir_set_attr_float(g, y->producer, "scale", scale);
    } else {
        ir_value *s = rtt_op(g, IR_OP_Mul, "scaled", IN(x, scalar(g, "scale", dt, scale)));
        if (m)
            s = rtt_op(g, IR_OP_Add, "masked", IN(s, m));
        y = rtt_op(g, IR_OP_Softmax, "y", IN(s));
        ir_set_attr_int(g, y->producer, "axis", axis);
    }
    ir_add_output(g, y);
}

static void test_softmax(void)
{
    const struct {
        int64_t axis;
        bool mask;
        double scale;
        ir_dtype dt;
    } cases[] = {
        {-1, true, 0.25, IR_F32}, {-1, false, 1, IR_F32}, {1, true, 2, IR_F32},
        {2, true, 1, IR_F32},     {-1, true, 0.5, IR_F16},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        softmax_graph(f, cases[i].axis, cases[i].mask, cases[i].scale, cases[i].dt, true);
        softmax_graph(r, cases[i].axis, cases[i].mask, cases[i].scale, cases[i].dt, false);
        check_pair(f, r, tol_for(cases[i].dt), "FusedSoftmax");
    }
}

/* ---- RoPE ----------------------------------------------------------------------------------- */

static ir_value *slice_last(ir_graph *g, ir_value *x, const char *name, int64_t from, int64_t to)
{
    char buf[3][64];
    snprintf(buf[0], sizeof buf[0], "%s_from", name);
    snprintf(buf[1], sizeof buf[1], "%s_to", name);
    snprintf(buf[2], sizeof buf[2], "%s_axes", name);
    return rtt_op(g, IR_OP_Slice, name,
                  IN(x, rtt_ints(g, buf[0], (double[]){(double)from}, 1),
                     rtt_ints(g, buf[1], (double[]){(double)to}, 1),
                     rtt_ints(g, buf[2], (double[]){-1}, 1)));
}

static ir_value *concat_last(ir_graph *g, const char *name, ir_value *a, ir_value *b)
{
    ir_value *y = rtt_op(g, IR_OP_Concat, name, IN(a, b));
    ir_set_attr_int(g, y->producer, "axis", -1);
    return y;
}

/* Rotate-half reference: y = x * cos + cat(-x2, x1) * sin, tables widened to D if given as D/2.
 * Its values are named after `prefix` (several in one graph). */
static ir_value *ref_rope_half(ir_graph *g, const char *prefix, ir_value *x, ir_value *c,
                               ir_value *s, int64_t d, bool half_table)
{
    char n[8][64];
    static const char *const names[8] = {"cos_full", "sin_full", "x1", "x2", "neg_x2", "rot",
                                         "xc", "rs"};
    for (int i = 0; i < 8; i++)
        snprintf(n[i], sizeof n[i], "%s%s", prefix, names[i]);
    if (half_table) {
        c = concat_last(g, n[0], c, c);
        s = concat_last(g, n[1], s, s);
    }
    ir_value *x1 = slice_last(g, x, n[2], 0, d / 2), *x2 = slice_last(g, x, n[3], d / 2, d);
    ir_value *rot = concat_last(g, n[5], rtt_op(g, IR_OP_Neg, n[4], IN(x2)), x1);
    char y[64];
    snprintf(y, sizeof y, "%sy", prefix);
    return rtt_op(g, IR_OP_Add, y,
                  IN(rtt_op(g, IR_OP_Mul, n[6], IN(x, c)), rtt_op(g, IR_OP_Mul, n[7], IN(rot, s))));
}

/* Interleaved reference with a D/2 table: pairs (2i, 2i+1) as a trailing dim of 2. */
static ir_value *ref_rope_interleaved(ir_graph *g, ir_value *x, ir_value *c, ir_value *s,
                                      const int64_t *xdims, int rank)
{
    double pairs[IR_MAX_RANK + 1], flat[IR_MAX_RANK];
    for (int i = 0; i < rank; i++)
        pairs[i] = flat[i] = (double)xdims[i];
    pairs[rank - 1] = (double)(xdims[rank - 1] / 2);
    pairs[rank] = 2;
    ir_value *pairs_v = rtt_ints(g, "pairs", pairs, (size_t)rank + 1);
    ir_value *xp = rtt_op(g, IR_OP_Reshape, "xp", IN(x, pairs_v));
    ir_value *xe = slice_last(g, xp, "xe", 0, 1), *xo = slice_last(g, xp, "xo", 1, 2);
    ir_value *axes = rtt_ints(g, "last", (double[]){-1}, 1);
    ir_value *c1 = rtt_op(g, IR_OP_Unsqueeze, "c1", IN(c, axes));
    ir_value *s1 = rtt_op(g, IR_OP_Unsqueeze, "s1", IN(s, axes));
    ir_value *xec = rtt_op(g, IR_OP_Mul, "xec", IN(xe, c1));
    ir_value *xos = rtt_op(g, IR_OP_Mul, "xos", IN(xo, s1));
    ir_value *xoc = rtt_op(g, IR_OP_Mul, "xoc", IN(xo, c1));
    ir_value *xes = rtt_op(g, IR_OP_Mul, "xes", IN(xe, s1));
    ir_value *ye = rtt_op(g, IR_OP_Sub, "ye", IN(xec, xos));
    ir_value *yo = rtt_op(g, IR_OP_Add, "yo", IN(xoc, xes));
    ir_value *yp = concat_last(g, "yp", ye, yo);
    return rtt_op(g, IR_OP_Reshape, "y", IN(yp, rtt_ints(g, "flat", flat, (size_t)rank)));
}

/* ---- Attention ------------------------------------------------------------------------------ */

typedef struct {
    int64_t b, hq, hkv, s, t, d, dv;
    int mask_rank; /* 0: none, else the mask is [B,1,1,T] (4) or [S,T] (2) */
    int causal;         /* 0: none, 1: -inf after the masks, 2: causal_fill before them */
    double causal_fill; /* with causal = 2 */
    double scale; /* 0: 1/sqrt(d) */
    ir_dtype dt;
    bool bshd;  /* Q, K, V and Y as [B, S, H, D] (the reference transposes them) */
    int rotary; /* 0: none, else rotate-half tables [S, W] (1, W = D) or [B, 1, S, W/2] (2) */
    int key_mask; /* 0: none, else a key-padding mask i32 [B, T] (1), i64 [1, T] (2) or i32
                   * [B, 1] (3) */
    double filter; /* its mask_filter_value; 0: the default, -10000 */
    int bias;      /* 0: none, else a second additive term [1, Hq, S, T] (1) or [B, 1, 1, T] (2) */
} attn_case;

/* The key-padding mask: every third key (from the batch's own offset) masked, and entries -1, 0
 * and 2 beside 1 (only > 0 keeps). */
static ir_value *key_mask_of(ir_graph *g, const attn_case *c)
{
    int64_t rows = c->key_mask == 2 ? 1 : c->b, cols = c->key_mask == 3 ? 1 : c->t;
    double *km = calloc((size_t)(rows * cols), sizeof *km);
    for (int64_t b = 0; b < rows; b++)
        for (int64_t j = 0; j < cols; j++)
            km[b * cols + j] = (j + b) % 3 == 0 ? (double)((j + b) % 2 - 1) : j % 4 == 1 ? 2 : 1;
    ir_value *v = rtt_literal(g, "key_mask", c->key_mask == 2 ? IR_I64 : IR_I32, km,
                              (size_t)(rows * cols), DIMS(rows, cols));
    free(km);
    return v;
}

/* What the key mask adds, as ONNX Runtime's importer spelt it: Where(Greater(km, 0), 0, filter)
 * unsqueezed to [B, 1, 1, T]. */
static ir_value *ref_key_mask(ir_graph *g, const attn_case *c, ir_value *km)
{
    double filter = c->filter ? c->filter : -10000.0;
    ir_value *zero = scalar(g, "km_zero", km->type->dtype, 0);
    ir_value *keep = rtt_op(g, IR_OP_Greater, "km_keep", IN(km, zero));
    ir_value *open = scalar(g, "km_open", c->dt, 0), *fill = scalar(g, "km_filter", c->dt, filter);
    ir_value *add = rtt_op(g, IR_OP_Where, "km_scores", IN(keep, open, fill));
    ir_value *axes = rtt_ints(g, "km_axes", (double[]){1, 2}, 2);
    return rtt_op(g, IR_OP_Unsqueeze, "km_4d", IN(add, axes));
}

/* The unfused reference: heads of K and V repeated for GQA, Q @ K^T * scale + mask (+ causal),
 * softmax, @ V. */
static ir_value *ref_attention(ir_graph *g, const attn_case *c, ir_value *q, ir_value *k,
                               ir_value *v, ir_value *mask, ir_value *bias)
{
    ir_dtype dt = c->dt;
    if (c->hq != c->hkv) {
        int64_t group = c->hq / c->hkv;
        ir_value *axes = rtt_ints(g, "kv_axes", (double[]){2}, 1);
        double b = (double)c->b, hkv = (double)c->hkv, hq = (double)c->hq, t = (double)c->t;
        ir_value *shape_k =
            rtt_ints(g, "k_expand", (double[]){b, hkv, (double)group, t, (double)c->d}, 5);
        ir_value *shape_v =
            rtt_ints(g, "v_expand", (double[]){b, hkv, (double)group, t, (double)c->dv}, 5);
        ir_value *flat_k = rtt_ints(g, "k_heads", (double[]){b, hq, t, (double)c->d}, 4);
        ir_value *flat_v = rtt_ints(g, "v_heads", (double[]){b, hq, t, (double)c->dv}, 4);
        k = rtt_op(g, IR_OP_Unsqueeze, "k5", IN(k, axes));
        k = rtt_op(g, IR_OP_Expand, "k5x", IN(k, shape_k));
        k = rtt_op(g, IR_OP_Reshape, "kx", IN(k, flat_k));
        v = rtt_op(g, IR_OP_Unsqueeze, "v5", IN(v, axes));
        v = rtt_op(g, IR_OP_Expand, "v5x", IN(v, shape_v));
        v = rtt_op(g, IR_OP_Reshape, "vx", IN(v, flat_v));
    }
    ir_value *kt = rtt_op(g, IR_OP_Transpose, "kt", IN(k));
    ir_set_attr_ints(g, kt->producer, "perm", (int64_t[]){0, 1, 3, 2}, 4);
    double scale = c->scale ? c->scale : 1.0 / sqrt((double)c->d);
    ir_value *s = rtt_op(g, IR_OP_MatMul, "scores", IN(q, kt));
    s = rtt_op(g, IR_OP_Mul, "scaled", IN(s, scalar(g, "scale", dt, scale)));
    if (c->causal == 2) { /* GPT-2's Where(tril, scores, fill), before the masks */
        double *tril = calloc((size_t)(c->s * c->t), sizeof *tril);
        for (int64_t i = 0; i < c->s; i++)
            for (int64_t j = 0; j < c->t; j++)
                tril[i * c->t + j] = j <= i + c->t - c->s;
        ir_value *seen = rtt_literal(g, "seen", IR_BOOL, tril, (size_t)(c->s * c->t),
                                     DIMS(c->s, c->t));
        free(tril);
        s = rtt_op(g, IR_OP_Where, "filled", IN(seen, s, scalar(g, "fill", dt, c->causal_fill)));
    }
    if (c->key_mask) /* before the mask, as the kernels add it */
        s = rtt_op(g, IR_OP_Add, "key_masked", IN(s, ref_key_mask(g, c, key_mask_of(g, c))));
    if (mask)
        s = rtt_op(g, IR_OP_Add, "masked", IN(s, mask));
    if (bias) /* after the mask, as the kernels add it */
        s = rtt_op(g, IR_OP_Add, "biased", IN(s, bias));
    if (c->causal == 1) {
        /* bottom-right aligned: query i sees keys j <= i + T - S; the masked scores get a large
         * negative number the dtype can hold, which exp takes to 0 as it does -inf */
        double masked = dt == IR_F32 ? -1e30 : -6e4;
        double *cm = calloc((size_t)(c->s * c->t), sizeof *cm);
        for (int64_t i = 0; i < c->s; i++)
            for (int64_t j = 0; j < c->t; j++)
                cm[i * c->t + j] = j <= i + c->t - c->s ? 0.0 : masked;
        ir_value *causal = rtt_literal(g, "causal", dt, cm, (size_t)(c->s * c->t),
                                       DIMS(c->s, c->t));
        free(cm);
        s = rtt_op(g, IR_OP_Add, "causal_masked", IN(s, causal));
    }
    ir_value *p = rtt_op(g, IR_OP_Softmax, "p", IN(s));
    return rtt_op(g, IR_OP_MatMul, "y", IN(p, v));
}

/* Transpose{perm=[0,2,1,3]}: [B, S, H, D] <-> [B, H, S, D]. */
static ir_value *swap_heads(ir_graph *g, const char *name, ir_value *x)
{
    ir_value *y = rtt_op(g, IR_OP_Transpose, name, IN(x));
    ir_set_attr_ints(g, y->producer, "perm", (int64_t[]){0, 2, 1, 3}, 4);
    return y;
}

static ir_value *heads_input(ir_graph *g, const char *name, const attn_case *c, int64_t h,
                             int64_t len, int64_t d)
{
    if (c->bshd)
        return rtt_input(g, name, c->dt, DIMS(c->b, len, h, d));
    return rtt_input(g, name, c->dt, DIMS(c->b, h, len, d));
}

/* The fused Attention, or its unfused form: the operands transposed to [B, H, S, D] when given
 * as [B, S, H, D], RoPE (from primitives) on Q and K, the reference attention, the output
 * transposed back. */
static void attn_graph(ir_graph *g, const attn_case *c, bool fused)
{
    ir_dtype dt = c->dt;
    ir_value *q = heads_input(g, "q", c, c->hq, c->s, c->d);
    ir_value *k = heads_input(g, "k", c, c->hkv, c->t, c->d);
    ir_value *v = heads_input(g, "v", c, c->hkv, c->t, c->dv);
    ir_value *mask = NULL, *cs = NULL, *sn = NULL, *bias = NULL;
    if (c->bias == 1)
        bias = rtt_random(g, "bias", dt, 19, DIMS(1, c->hq, c->s, c->t));
    else if (c->bias == 2)
        bias = rtt_random_range(g, "bias", dt, 19, -3, 0, DIMS(c->b, 1, 1, c->t));
    if (c->mask_rank == 4)
        mask = rtt_random_range(g, "mask", dt, 16, -3, 0, DIMS(c->b, 1, 1, c->t));
    else if (c->mask_rank == 2)
        mask = rtt_random_range(g, "mask", dt, 16, -3, 0, DIMS(c->s, c->t));
    int64_t w = c->rotary == 2 ? c->d / 2 : c->d;
    if (c->rotary == 1) {
        cs = rtt_random(g, "cos", dt, 17, DIMS(c->s, w));
        sn = rtt_random(g, "sin", dt, 18, DIMS(c->s, w));
    } else if (c->rotary == 2) {
        cs = rtt_random(g, "cos", dt, 17, DIMS(c->b, 1, c->s, w));
        sn = rtt_random(g, "sin", dt, 18, DIMS(c->b, 1, c->s, w));
    }
    ir_value *y;
    if (fused) {
        ir_value *km = c->key_mask ? key_mask_of(g, c) : NULL;
        y = rtt_op(g, IR_OP_Attention, "y", IN(q, k, v, mask, cs, sn, km, bias));
        if (c->filter)
            ir_set_attr_float(g, y->producer, "mask_filter_value", c->filter);
        ir_set_attr_float(g, y->producer, "scale", c->scale);
        ir_set_attr_int(g, y->producer, "causal", c->causal);
        if (c->causal == 2)
            ir_set_attr_float(g, y->producer, "causal_fill", c->causal_fill);
        if (c->bshd)
            ir_set_attr_string(g, y->producer, "layout", "BSHD");
    } else {
        if (c->bshd) {
            q = swap_heads(g, "q_bhsd", q);
            k = swap_heads(g, "k_bhsd", k);
            v = swap_heads(g, "v_bhsd", v);
        }
        if (c->rotary) {
            q = ref_rope_half(g, "q_", q, cs, sn, c->d, c->rotary == 2);
            k = ref_rope_half(g, "k_", k, cs, sn, c->d, c->rotary == 2);
        }
        y = ref_attention(g, c, q, k, v, mask, bias);
        if (c->bshd)
            y = swap_heads(g, "y_seq", y);
    }
    ir_add_output(g, y);
}

static void test_attention(void)
{
    const attn_case cases[] = {
        {.b = 2, .hq = 4, .hkv = 4, .s = 5, .t = 5, .d = 8, .dv = 8, .dt = IR_F32},  /* MHA */
        {.b = 2, .hq = 4, .hkv = 2, .s = 5, .t = 7, .d = 8, .dv = 8, .mask_rank = 4,
         .dt = IR_F32},                                                               /* GQA */
        {.b = 1, .hq = 6, .hkv = 1, .s = 6, .t = 6, .d = 16, .dv = 4, .causal = true,
         .dt = IR_F32},                                                               /* MQA */
        {.b = 2, .hq = 4, .hkv = 2, .s = 3, .t = 9, .d = 8, .dv = 8, .mask_rank = 2,
         .causal = true, .scale = 0.2, .dt = IR_F32},                                 /* cache */
        {.b = 1, .hq = 4, .hkv = 2, .s = 1, .t = 9, .d = 8, .dv = 8, .causal = true,
         .dt = IR_F32},                                                               /* decode */
        {.b = 2, .hq = 4, .hkv = 2, .s = 5, .t = 5, .d = 8, .dv = 8, .mask_rank = 4,
         .causal = true, .dt = IR_F16},
        {.b = 2, .hq = 4, .hkv = 4, .s = 5, .t = 7, .d = 8, .dv = 6, .mask_rank = 4,
         .dt = IR_F32, .bshd = true},                                                 /* BSHD */
        {.b = 2, .hq = 6, .hkv = 2, .s = 3, .t = 9, .d = 8, .dv = 8, .mask_rank = 2,
         .causal = true, .dt = IR_F32, .bshd = true},                                 /* + GQA */
        {.b = 1, .hq = 4, .hkv = 2, .s = 6, .t = 6, .d = 8, .dv = 8, .causal = true,
         .dt = IR_F32, .rotary = 1},                                                  /* RoPE */
        {.b = 2, .hq = 4, .hkv = 1, .s = 5, .t = 5, .d = 8, .dv = 4, .mask_rank = 4,
         .dt = IR_F32, .rotary = 2},                                  /* half, batched tables */
        {.b = 2, .hq = 6, .hkv = 2, .s = 5, .t = 5, .d = 16, .dv = 8, .mask_rank = 2,
         .dt = IR_F32, .bshd = true, .rotary = 1},                       /* Qwen2's: all at once */
        {.b = 1, .hq = 4, .hkv = 2, .s = 5, .t = 5, .d = 8, .dv = 8, .causal = true,
         .dt = IR_F16, .bshd = true, .rotary = 2},
        {.b = 2, .hq = 4, .hkv = 4, .s = 5, .t = 7, .d = 8, .dv = 8, .dt = IR_F32, .bshd = true,
         .key_mask = 1},                                      /* ONNX Runtime's packed form */
        {.b = 2, .hq = 4, .hkv = 2, .s = 3, .t = 9, .d = 8, .dv = 8, .mask_rank = 4,
         .dt = IR_F32, .key_mask = 2, .filter = -1e30},                  /* + mask, i64, [1, T] */
        {.b = 2, .hq = 4, .hkv = 4, .s = 5, .t = 5, .d = 8, .dv = 8, .causal = true,
         .dt = IR_F16, .bshd = true, .key_mask = 1},
        {.b = 2, .hq = 2, .hkv = 2, .s = 4, .t = 4, .d = 8, .dv = 8, .dt = IR_BF16,
         .key_mask = 1, .filter = -3},
        {.b = 2, .hq = 2, .hkv = 2, .s = 1, .t = 3, .d = 8, .dv = 8, .dt = IR_F32,
         .key_mask = 3, .filter = -2},    /* GPT-2's [B, 1]: one entry per batch (a row of all
                                           * masked keys: -10000 would leave scores of 1e-3 ulp) */
        {.b = 2, .hq = 4, .hkv = 4, .s = 5, .t = 5, .d = 8, .dv = 8, .mask_rank = 4,
         .dt = IR_F32, .bias = 1},      /* Wav2Vec2-Conformer's position scores, padding mask */
        {.b = 2, .hq = 4, .hkv = 2, .s = 3, .t = 7, .d = 8, .dv = 8, .causal = true,
         .dt = IR_F16, .bshd = true, .key_mask = 1, .bias = 2},    /* every term, no mask */
        {.b = 1, .hq = 4, .hkv = 4, .s = 6, .t = 6, .d = 8, .dv = 8, .mask_rank = 2,
         .dt = IR_BF16, .bias = 1},
        {.b = 2, .hq = 4, .hkv = 4, .s = 5, .t = 5, .d = 8, .dv = 8, .mask_rank = 4,
         .causal = 2, .causal_fill = -10000, .dt = IR_F32},   /* GPT-2: Where(tril, s, -10000) */
        {.b = 2, .hq = 4, .hkv = 4, .s = 3, .t = 7, .d = 8, .dv = 8, .mask_rank = 4,
         .causal = 2, .causal_fill = -10000, .dt = IR_F16, .bshd = true},   /* with its past */
        {.b = 2, .hq = 4, .hkv = 2, .s = 4, .t = 6, .d = 8, .dv = 8, .mask_rank = 2,
         .causal = 2, .causal_fill = -0.5, .dt = IR_F32, .key_mask = 1,
         .bias = 2}, /* a fill that is no -inf and takes the masks: replaced, not added */
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        attn_graph(f, &cases[i], true);
        attn_graph(r, &cases[i], false);
        char what[64];
        snprintf(what, sizeof what, "Attention case %zu", i);
        check_pair(f, r, tol_for(cases[i].dt), what);
    }
}

static void rope_graph(ir_graph *g, bool half_table, bool interleaved, bool batched_table,
                       ir_dtype dt, bool fused)
{
    const int64_t d = 8;
    ir_value *x = rtt_input(g, "x", dt, DIMS(2, 3, 5, d));
    int64_t w = half_table ? d / 2 : d;
    ir_value *c = batched_table ? rtt_random(g, "cos", dt, 17, DIMS(2, 1, 5, w))
                                : rtt_random(g, "cos", dt, 17, DIMS(5, w));
    ir_value *s = batched_table ? rtt_random(g, "sin", dt, 18, DIMS(2, 1, 5, w))
                                : rtt_random(g, "sin", dt, 18, DIMS(5, w));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_RoPE, "y", IN(x, c, s));
        ir_set_attr_int(g, y->producer, "interleaved", interleaved);
    } else if (interleaved) {
        y = ref_rope_interleaved(g, x, c, s, x->type->dims, x->type->rank);
    } else {
        y = ref_rope_half(g, "", x, c, s, d, half_table);
    }
    ir_add_output(g, y);
}

static void test_rope(void)
{
    const struct {
        bool half, interleaved, batched;
        ir_dtype dt;
    } cases[] = {
        {true, false, false, IR_F32}, {false, false, false, IR_F32}, {true, false, true, IR_F32},
        {true, true, false, IR_F32},  {true, false, false, IR_F16},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        rope_graph(f, cases[i].half, cases[i].interleaved, cases[i].batched, cases[i].dt, true);
        rope_graph(r, cases[i].half, cases[i].interleaved, cases[i].batched, cases[i].dt, false);
        check_pair(f, r, tol_for(cases[i].dt), "RoPE");
    }
}

/* ---- SwiGLU --------------------------------------------------------------------------------- */

static void swiglu_graph(ir_graph *g, bool broadcast, ir_dtype dt, bool fused)
{
    ir_value *gate = rtt_input(g, "gate", dt, DIMS(3, 8, 16));
    ir_value *up = broadcast ? rtt_input(g, "up", dt, DIMS(8, 16))
                             : rtt_input(g, "up", dt, DIMS(3, 8, 16));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_SwiGLU, "y", IN(gate, up));
    } else {
        ir_value *sig = rtt_op(g, IR_OP_Sigmoid, "sig", IN(gate));
        ir_value *silu = rtt_op(g, IR_OP_Mul, "silu", IN(gate, sig));
        y = rtt_op(g, IR_OP_Mul, "y", IN(silu, up));
    }
    ir_add_output(g, y);
}

static void test_swiglu(void)
{
    for (int i = 0; i < 3; i++) {
        ir_dtype dt = i == 2 ? IR_BF16 : IR_F32;
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        swiglu_graph(f, i == 1, dt, true);
        swiglu_graph(r, i == 1, dt, false);
        check_pair(f, r, tol_for(dt), "SwiGLU");
    }
}

/* ---- ElementwiseChain ----------------------------------------------------------------------- */

/* One function of the expression language and its ONNX op (the last two are compositions). */
typedef struct {
    const char *expr;
    ir_op op;
    int arity;
    bool positive; /* the input must be positive (log, sqrt, pow) */
} ew_case;

static const ew_case ew_unary[] = {
    {"neg(x0)", IR_OP_Neg, 1, false},          {"abs(x0)", IR_OP_Abs, 1, false},
    {"exp(x0)", IR_OP_Exp, 1, false},          {"log(x0)", IR_OP_Log, 1, true},
    {"sqrt(x0)", IR_OP_Sqrt, 1, true},         {"recip(x0)", IR_OP_Reciprocal, 1, true},
    {"sigmoid(x0)", IR_OP_Sigmoid, 1, false},  {"tanh(x0)", IR_OP_Tanh, 1, false},
    {"relu(x0)", IR_OP_Relu, 1, false},        {"erf(x0)", IR_OP_Erf, 1, false},
    {"gelu(x0)", IR_OP_Gelu, 1, false},        {"hardswish(x0)", IR_OP_HardSwish, 1, false},
    {"sin(x0)", IR_OP_Sin, 1, false},          {"cos(x0)", IR_OP_Cos, 1, false},
    {"floor(x0)", IR_OP_Floor, 1, false},      {"ceil(x0)", IR_OP_Ceil, 1, false},
    {"add(x0, x1)", IR_OP_Add, 2, false},      {"sub(x0, x1)", IR_OP_Sub, 2, false},
    {"mul(x0, x1)", IR_OP_Mul, 2, false},      {"div(x0, x1)", IR_OP_Div, 2, true},
    {"pow(x0, x1)", IR_OP_Pow, 2, true},       {"max(x0, x1)", IR_OP_Max, 2, false},
    {"min(x0, x1)", IR_OP_Min, 2, false},
    {"sign(x0)", IR_OP_Sign, 1, false},        {"round(x0)", IR_OP_Round, 1, false},
    {"tan(x0)", IR_OP_Tan, 1, false},          {"asin(x0)", IR_OP_Asin, 1, false},
    {"acos(x0)", IR_OP_Acos, 1, false},        {"atan(x0)", IR_OP_Atan, 1, false},
    {"sinh(x0)", IR_OP_Sinh, 1, false},        {"cosh(x0)", IR_OP_Cosh, 1, false},
    {"asinh(x0)", IR_OP_Asinh, 1, false},      {"acosh(x0)", IR_OP_Acosh, 1, true},
    {"atanh(x0)", IR_OP_Atanh, 1, false},
};

static void ew_graph(ir_graph *g, const ew_case *c, ir_dtype dt, bool fused)
{
    /* inputs as constants, so that log/sqrt/pow get positive values: x0 [4, 3, 40], x1 [3, 1]
     * broadcast along rows and columns */
    double lo = c->positive ? 0.1 : -3, hi = 3;
    ir_value *x0 = rtt_random_range(g, "x0", dt, 21, lo, hi, DIMS(4, 3, 40));
    ir_value *x1 = rtt_random_range(g, "x1", dt, 22, c->positive ? 0.5 : -2, 2, DIMS(3, 1));
    ir_value *y;
    if (fused) {
        y = c->arity == 1 ? rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0))
                          : rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1));
        ir_set_attr_string(g, y->producer, "expr", c->expr);
    } else {
        y = c->arity == 1 ? rtt_op(g, c->op, "y", IN(x0)) : rtt_op(g, c->op, "y", IN(x0, x1));
    }
    ir_add_output(g, y);
}

/* The functions whose ONNX ops take attributes (the attributes are trailing arguments), and those
 * that are compositions of ONNX ops. */
static const char *const composite_exprs[] = {
    "leakyrelu(x0, 0.2)", "elu(x0, 0.5)",   "hardsigmoid(x0, 0.3, 0.4)", "softplus(x0)",
    "leakyrelu(x0, x1)",  "rsqrt(abs(x0))", "silu(x0)",                  "gelu_tanh(x0)",
    "thresholdedrelu(x0, 0.5)", "shrink(x0, 0.25, 1.5)",
};

static void param_graph(ir_graph *g, int which, bool fused)
{
    const char *const *exprs = composite_exprs;
    ir_value *x0 = rtt_random_range(g, "x0", IR_F32, 21, -3, 3, DIMS(4, 3, 40));
    ir_value *x1 = rtt_random_range(g, "x1", IR_F32, 22, 0, 1, DIMS(3, 1));
    ir_value *y;
    if (fused) {
        y = which == 4 ? rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1))
                       : rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0));
        ir_set_attr_string(g, y->producer, "expr", exprs[which]);
    } else if (which == 0) {
        y = rtt_op(g, IR_OP_LeakyRelu, "y", IN(x0));
        ir_set_attr_float(g, y->producer, "alpha", 0.2);
    } else if (which == 1) {
        y = rtt_op(g, IR_OP_Elu, "y", IN(x0));
        ir_set_attr_float(g, y->producer, "alpha", 0.5);
    } else if (which == 2) {
        y = rtt_op(g, IR_OP_HardSigmoid, "y", IN(x0));
        ir_set_attr_float(g, y->producer, "alpha", 0.3);
        ir_set_attr_float(g, y->producer, "beta", 0.4);
    } else if (which == 3) {
        y = rtt_op(g, IR_OP_Softplus, "y", IN(x0));
    } else if (which == 4) {
        y = rtt_op(g, IR_OP_PRelu, "y", IN(x0, x1));
    } else if (which == 5) {
        ir_value *root = rtt_op(g, IR_OP_Sqrt, "root", IN(rtt_op(g, IR_OP_Abs, "abs", IN(x0))));
        y = rtt_op(g, IR_OP_Reciprocal, "y", IN(root));
    } else if (which == 6) {
        y = rtt_op(g, IR_OP_Mul, "y", IN(x0, rtt_op(g, IR_OP_Sigmoid, "sig", IN(x0))));
    } else if (which == 7) {
        y = rtt_op(g, IR_OP_Gelu, "y", IN(x0));
        ir_set_attr_string(g, y->producer, "approximate", "tanh");
    } else if (which == 8) {
        y = rtt_op(g, IR_OP_ThresholdedRelu, "y", IN(x0));
        ir_set_attr_float(g, y->producer, "alpha", 0.5);
    } else {
        y = rtt_op(g, IR_OP_Shrink, "y", IN(x0));
        ir_set_attr_float(g, y->producer, "bias", 0.25);
        ir_set_attr_float(g, y->producer, "lambd", 1.5);
    }
    ir_add_output(g, y);
}

static void test_ewchain_each_function(void)
{
    for (size_t i = 0; i < FR_COUNT_OF(ew_unary); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        ew_graph(f, &ew_unary[i], IR_F32, true);
        ew_graph(r, &ew_unary[i], IR_F32, false);
        check_pair(f, r, tol_for(IR_F32), ew_unary[i].expr);
    }
    for (int i = 0; i < (int)FR_COUNT_OF(composite_exprs); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        param_graph(f, i, true);
        param_graph(r, i, false);
        check_pair(f, r, tol_for(IR_F32), composite_exprs[i]);
    }
}

/* A 4-op chain with broadcasting, and a tree reading one input twice, with clip and constants:
 *   y = mul(sigmoid(add(x0, x1)), sub(x2, 1.5))          x0 [2,16,33], x1 [16,1], x2 [33]
 *   z = clip(add(mul(x0, x0), x3), -0.5, 2.25)           x3 [2,1,1], the node's second input */
static void chain_graph(ir_graph *g, ir_dtype dt, bool fused)
{
    ir_value *x0 = rtt_input(g, "x0", dt, DIMS(2, 16, 33));
    ir_value *x1 = rtt_input(g, "x1", dt, DIMS(16, 1));
    ir_value *x2 = rtt_input(g, "x2", dt, DIMS(33));
    ir_value *x3 = rtt_input(g, "x3", dt, DIMS(2, 1, 1));
    ir_value *y, *z;
    if (fused) {
        y = rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1, x2));
        ir_set_attr_string(g, y->producer, "expr", "mul(sigmoid(add(x0, x1)), sub(x2, 1.5))");
        z = rtt_op(g, IR_OP_ElementwiseChain, "z", IN(x0, x3));
        ir_set_attr_string(g, z->producer, "expr",
                           " clip( add(mul(x0,x0), x1 ), -0.5, 2.25e0 ) ");
    } else {
        ir_value *s = rtt_op(g, IR_OP_Sigmoid, "s", IN(rtt_op(g, IR_OP_Add, "a", IN(x0, x1))));
        ir_value *d = rtt_op(g, IR_OP_Sub, "d", IN(x2, scalar(g, "c15", dt, 1.5)));
        y = rtt_op(g, IR_OP_Mul, "y", IN(s, d));
        ir_value *sq = rtt_op(g, IR_OP_Mul, "sq", IN(x0, x0));
        ir_value *t = rtt_op(g, IR_OP_Add, "t", IN(sq, x3));
        z = rtt_op(g, IR_OP_Clip, "z",
                   IN(t, scalar(g, "lo", dt, -0.5), scalar(g, "hi", dt, 2.25)));
    }
    ir_add_output(g, y);
    ir_add_output(g, z);
}

static void test_ewchain_trees(void)
{
    const ir_dtype dts[] = {IR_F32, IR_F16};
    for (size_t i = 0; i < FR_COUNT_OF(dts); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        chain_graph(f, dts[i], true);
        chain_graph(r, dts[i], false);
        check_pair(f, r, tol_for(dts[i]), "ElementwiseChain trees");
    }
}

/* Expressions that inference must refuse, with their messages. */
static void test_ewchain_errors(void)
{
    const struct {
        const char *expr, *message;
    } cases[] = {
        {"mul(x0, x2)", "column 9: input index out of range"},
        {"frob(x0)", "column 1: unknown function"},
        {"add(x0)", "column 1: this function takes 2 arguments"},
        {"sigmoid(x0, x1)", "column 1: this function takes 1 argument"},
        {"add(x0, x1) x0", "column 13: unexpected text after the expression"},
        {"add(x0, ", "column 9: expected an input, a number or a function"},
        {"y0", "column 1: unknown name"},
        {"add(x0, 1e999)", "column 9: expected a number"},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *g = ir_graph_new("bad");
        ir_value *x0 = rtt_input(g, "x0", IR_F32, DIMS(4));
        ir_value *x1 = rtt_input(g, "x1", IR_F32, DIMS(4));
        ir_value *y = rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1));
        ir_set_attr_string(g, y->producer, "expr", cases[i].expr);
        ir_add_output(g, y);
        char buf[512] = "";
        CHECK(rtt_run_fails(g, buf, sizeof buf));
        if (!strstr(buf, cases[i].message))
            fprintf(stderr, "expr \"%s\": got %s", cases[i].expr, buf);
        CHECK(strstr(buf, cases[i].message) != NULL);
        ir_graph_free(g);
    }
}

/* ---- QGemm ---------------------------------------------------------------------------------- */

static void qgemm_graph(ir_graph *g, bool per_column, bool requantize, bool bias, bool fused)
{
    const int64_t k = 24, n = 10;
    ir_value *a = rtt_input(g, "a", IR_I8, DIMS(2, 3, k));
    ir_value *as = scalar(g, "a_scale", IR_F32, 0.02);
    ir_value *b = rtt_random_range(g, "b", IR_I8, 23, -128, 128, DIMS(k, n));
    ir_value *bs = per_column ? rtt_random_range(g, "b_scale", IR_F32, 24, 0.001, 0.01, DIMS(n))
                              : scalar(g, "b_scale", IR_F32, 0.004);
    ir_value *bb = bias ? rtt_random(g, "bias", IR_F32, 25, DIMS(n)) : NULL;
    ir_value *ys = requantize ? scalar(g, "y_scale", IR_F32, 0.05) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_QGemm, "y", IN(a, as, b, bs, bb, ys));
    } else {
        ir_value *da = rtt_op(g, IR_OP_DequantizeLinear, "da", IN(a, as));
        ir_value *db = rtt_op(g, IR_OP_DequantizeLinear, "db", IN(b, bs));
        ir_set_attr_int(g, db->producer, "axis", 1);
        ir_value *acc = rtt_op(g, IR_OP_MatMul, requantize || bias ? "mm" : "y", IN(da, db));
        if (bb)
            acc = rtt_op(g, IR_OP_Add, requantize ? "biased" : "y", IN(acc, bb));
        y = acc;
        if (ys)
            y = rtt_op(g, IR_OP_QuantizeLinear, "y", IN(acc, ys, scalar(g, "y_zero", IR_I8, 0)));
    }
    ir_add_output(g, y);
}

static void test_qgemm(void)
{
    const struct {
        bool per_column, requantize, bias;
    } cases[] = {
        {false, false, false}, {true, false, true}, {true, true, true}, {false, true, false},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        qgemm_graph(f, cases[i].per_column, cases[i].requantize, cases[i].bias, true);
        qgemm_graph(r, cases[i].per_column, cases[i].requantize, cases[i].bias, false);
        check_pair(f, r, tol_for(cases[i].requantize ? IR_I8 : IR_F32), "QGemm");
    }
}

/* ---- DynamicQuantizeMatMul ------------------------------------------------------------------ */

/* The fused op against DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(a_scale * b_scale)
 * (-> Add): B u8 or i8, a weight zero point per tensor, per column or none, one scale or one per
 * column, a bias or not, A of rank 2 or 3. */
typedef struct {
    ir_dtype bt;
    int zp; /* 0 none, 1 per tensor, 2 per column */
    bool per_column, bias;
    int rank;
} dynq_case;

static void dynq_graph(ir_graph *g, const dynq_case *c, bool fused)
{
    const int64_t k = 20, n = 6;
    ir_value *a = c->rank == 3 ? rtt_random_range(g, "a", IR_F32, 31, -3, 2, DIMS(2, 3, k))
                               : rtt_random_range(g, "a", IR_F32, 31, -3, 2, DIMS(4, k));
    bool u8 = c->bt == IR_U8;
    ir_value *b = rtt_random_range(g, "b", c->bt, 32, u8 ? 0 : -128, u8 ? 256 : 128, DIMS(k, n));
    ir_value *bz = c->zp == 0   ? NULL
                   : c->zp == 1 ? scalar(g, "b_zp", c->bt, u8 ? 131 : -3)
                                : rtt_random_range(g, "b_zp", c->bt, 33, u8 ? 100 : -5,
                                                   u8 ? 150 : 5, DIMS(n));
    ir_value *bs = c->per_column ? rtt_random_range(g, "b_scale", IR_F32, 34, 0.001, 0.02, DIMS(n))
                                 : rtt_random_range(g, "b_scale", IR_F32, 34, 0.001, 0.02, DIMS(1));
    ir_value *bb = c->bias ? rtt_random(g, "bias", IR_F32, 35, DIMS(n)) : NULL;
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_DynamicQuantizeMatMul, "y", IN(a, b, bs, bz, bb));
    } else {
        const char *outs[] = {"aq", "as", "az"};
        ir_value *in[] = {a};
        ir_node *dq = rtt_node(g, IR_OP_DynamicQuantizeLinear, outs, 3, 1, in);
        ir_value *acc = bz ? rtt_op(g, IR_OP_MatMulInteger, "acc",
                                    IN(dq->outputs[0], b, dq->outputs[2], bz))
                           : rtt_op(g, IR_OP_MatMulInteger, "acc",
                                    IN(dq->outputs[0], b, dq->outputs[2]));
        ir_value *f = rtt_op(g, IR_OP_Cast, "accf", IN(acc));
        ir_set_attr_int(g, f->producer, "to", 1);
        ir_value *m = rtt_op(g, IR_OP_Mul, "scale", IN(dq->outputs[1], bs));
        y = rtt_op(g, IR_OP_Mul, bb ? "p" : "y", IN(f, m));
        if (bb)
            y = rtt_op(g, IR_OP_Add, "y", IN(y, bb));
    }
    ir_add_output(g, y);
}

static void test_dynq_matmul(void)
{
    static const dynq_case cases[] = {
        {IR_U8, 1, false, false, 2}, {IR_U8, 0, true, true, 3}, {IR_I8, 2, true, true, 2},
        {IR_I8, 0, false, false, 3}, {IR_U8, 2, false, true, 3},
    };
    /* the same operations in the same order: exact */
    const rt_tolerance exact = {.rtol = 0, .atol = 0};
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        dynq_graph(f, &cases[i], true);
        dynq_graph(r, &cases[i], false);
        check_pair(f, r, exact, "DynamicQuantizeMatMul");
    }
}

/* ---- BiasDropout ----------------------------------------------------------------------------- */

typedef struct {
    ir_dtype dt;
    bool same_shape_bias, residual, mask, training;
    int64_t seed;
} bias_dropout_case;

/* Dropout(x + bias, 0.3, mode) [+ residual] of x [3, 8, 16], unfused or as one BiasDropout; the
 * mask an output when asked for. */
static void bias_dropout_graph(ir_graph *g, const bias_dropout_case *c, bool fused)
{
    ir_value *x = rtt_input(g, "x", c->dt, DIMS(3, 8, 16));
    ir_value *b = c->same_shape_bias ? rtt_input(g, "b", c->dt, DIMS(3, 8, 16))
                                     : rtt_random(g, "b", c->dt, 41, DIMS(16));
    ir_value *res = c->residual ? rtt_input(g, "res", c->dt, DIMS(3, 8, 16)) : NULL;
    ir_value *ratio = rtt_literal(g, "ratio", IR_F32, (double[]){0.3}, 1, SCALAR);
    ir_value *mode = rtt_literal(g, "mode", IR_BOOL, (double[]){c->training}, 1, SCALAR);
    const char *outs[] = {c->residual && !fused ? "d" : "y", "mask"};
    ir_node *n;
    if (fused) {
        n = rtt_node(g, IR_OP_BiasDropout, outs, c->mask ? 2 : 1, IN(x, b, res, ratio, mode));
    } else {
        ir_value *sum = rtt_op(g, IR_OP_Add, "sum", IN(b, x));
        n = rtt_node(g, IR_OP_Dropout, outs, c->mask ? 2 : 1, IN(sum, ratio, mode));
    }
    if (c->seed)
        ir_set_attr_int(g, n, "seed", c->seed);
    ir_value *y = n->outputs[0];
    if (!fused && res)
        y = rtt_op(g, IR_OP_Add, "y", IN(res, y));
    ir_add_output(g, y);
    if (c->mask)
        ir_add_output(g, n->outputs[1]);
}

static void expect_invalid(ir_graph *g, const char *message);

static void test_bias_dropout(void)
{
    static const bias_dropout_case cases[] = {
        {IR_F32, false, false, true, true, 0},  {IR_F32, true, true, false, true, 7},
        {IR_F32, false, true, true, true, -5},  {IR_F32, false, true, true, false, 0},
        {IR_F16, false, true, true, true, 3},   {IR_BF16, true, false, false, true, 0},
    };
    /* f32: the same operations in the same order, the same mask: exact; f16 and bf16: the unfused
     * Add rounds to the storage dtype before the scaling (tol_for) */
    const rt_tolerance exact = {.rtol = 0, .atol = 0};
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        bias_dropout_graph(f, &cases[i], true);
        bias_dropout_graph(r, &cases[i], false);
        check_pair(f, r, cases[i].dt == IR_F32 ? exact : tol_for(cases[i].dt), "BiasDropout");
    }
    /* the mask drops some and keeps some, differently for another seed */
    bias_dropout_case c = {IR_F32, false, false, true, true, 0};
    ir_graph *g = ir_graph_new("seed0");
    bias_dropout_graph(g, &c, true);
    rt_result a = {0}, b = {0};
    CHECK(rtt_run(g, 11, &a));
    c.seed = 1;
    ir_graph *h = ir_graph_new("seed1");
    bias_dropout_graph(h, &c, true);
    CHECK(rtt_run(h, 11, &b));
    size_t kept = 0, differ = 0, n = rt_tensor_numel(&a.outputs[1]);
    for (size_t i = 0; i < n; i++) {
        kept += rt_tensor_get(&a.outputs[1], i) != 0;
        differ += rt_tensor_get(&a.outputs[1], i) != rt_tensor_get(&b.outputs[1], i);
    }
    CHECK(kept > n / 2 && kept < n); /* ratio 0.3: about 70% kept */
    CHECK(differ > 0);
    rt_result_free(&a);
    rt_result_free(&b);
    ir_graph_free(g);
    ir_graph_free(h);

    /* refusals: a residual that does not broadcast to X + bias (inference), a ratio of 1 in
     * training mode (the kernel) */
    g = ir_graph_new("bad_residual");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(3, 16));
    ir_value *y = rtt_op(g, IR_OP_BiasDropout, "y",
                         IN(x, rtt_random(g, "b", IR_F32, 1, DIMS(16)),
                            rtt_input(g, "res", IR_F32, DIMS(5))));
    ir_add_output(g, y);
    expect_invalid(g, "residual");
    g = ir_graph_new("bad_ratio");
    x = rtt_input(g, "x", IR_F32, DIMS(3, 16));
    y = rtt_op(g, IR_OP_BiasDropout, "y",
               IN(x, rtt_random(g, "b", IR_F32, 1, DIMS(16)), NULL,
                  rtt_literal(g, "ratio", IR_F32, (double[]){1}, 1, SCALAR),
                  rtt_literal(g, "mode", IR_BOOL, (double[]){1}, 1, SCALAR)));
    ir_add_output(g, y);
    expect_invalid(g, "ratio 1 is not in [0, 1)");
}

/* ---- QLinearAdd ----------------------------------------------------------------------------- */

/* The fused op against DequantizeLinear(A), DequantizeLinear(B) -> Add -> QuantizeLinear: u8 and
 * i8, same shapes and B broadcast ([n] and [2, 1, n]), scales that are not powers of two, and an
 * output scale small enough to saturate most elements both ways. */
typedef struct {
    ir_dtype dt;
    int b_shape; /* 0 A's shape, 1 [n], 2 [2, 1, n] */
    double as, bs, cs;
    int az, bz, cz;
} qadd_case;

static void qadd_graph(ir_graph *g, const qadd_case *c, bool fused)
{
    const int64_t n = 7;
    bool u8 = c->dt == IR_U8;
    double lo = u8 ? 0 : -128, hi = u8 ? 256 : 128;
    ir_value *a = rtt_random_range(g, "a", c->dt, 41, lo, hi, DIMS(2, 3, n));
    ir_value *b = c->b_shape == 0   ? rtt_random_range(g, "b", c->dt, 42, lo, hi, DIMS(2, 3, n))
                  : c->b_shape == 1 ? rtt_random_range(g, "b", c->dt, 42, lo, hi, DIMS(n))
                                    : rtt_random_range(g, "b", c->dt, 42, lo, hi, DIMS(2, 1, n));
    ir_value *as = scalar(g, "as", IR_F32, c->as), *bs = scalar(g, "bs", IR_F32, c->bs);
    ir_value *cs = scalar(g, "cs", IR_F32, c->cs);
    ir_value *az = scalar(g, "az", c->dt, c->az), *bz = scalar(g, "bz", c->dt, c->bz);
    ir_value *cz = scalar(g, "cz", c->dt, c->cz);
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_QLinearAdd, "y", IN(a, as, az, b, bs, bz, cs, cz));
    } else {
        ir_value *da = rtt_op(g, IR_OP_DequantizeLinear, "da", IN(a, as, az));
        ir_value *db = rtt_op(g, IR_OP_DequantizeLinear, "db", IN(b, bs, bz));
        ir_value *sum = rtt_op(g, IR_OP_Add, "sum", IN(da, db));
        y = rtt_op(g, IR_OP_QuantizeLinear, "y", IN(sum, cs, cz));
    }
    ir_add_output(g, y);
}

static void test_qlinear_add(void)
{
    static const qadd_case cases[] = {
        {IR_U8, 0, 0.0186, 0.0241, 0.0317, 131, 120, 128},
        {IR_I8, 1, 0.05, 0.02, 0.07, -3, 4, 1},
        {IR_U8, 2, 0.37732705, 0.2099439, 0.38668025, 120, 153, 120},
        {IR_I8, 0, 0.1, 0.3, 0.001, 0, -7, 5},
    };
    /* the same f32 operations in the same order: exact */
    const rt_tolerance exact = {.rtol = 0, .atol = 0};
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        qadd_graph(f, &cases[i], true);
        qadd_graph(r, &cases[i], false);
        check_pair(f, r, exact, "QLinearAdd");
    }
    /* refusals (inference): A and B of two dtypes; a per-channel scale */
    ir_graph *g = ir_graph_new("mixed");
    ir_value *y = rtt_op(g, IR_OP_QLinearAdd, "y",
                         IN(rtt_input(g, "a", IR_U8, DIMS(2, 4)), scalar(g, "as", IR_F32, 0.1),
                            scalar(g, "az", IR_U8, 0), rtt_input(g, "b", IR_I8, DIMS(2, 4)),
                            scalar(g, "bs", IR_F32, 0.1), scalar(g, "bz", IR_I8, 0),
                            scalar(g, "cs", IR_F32, 0.1), scalar(g, "cz", IR_U8, 0)));
    ir_add_output(g, y);
    expect_invalid(g, "must have the same dtype");
    g = ir_graph_new("per_channel");
    y = rtt_op(g, IR_OP_QLinearAdd, "y",
               IN(rtt_input(g, "a", IR_U8, DIMS(2, 4)), rtt_random(g, "as", IR_F32, 1, DIMS(4)),
                  scalar(g, "az", IR_U8, 0), rtt_input(g, "b", IR_U8, DIMS(2, 4)),
                  scalar(g, "bs", IR_F32, 0.1), scalar(g, "bz", IR_U8, 0),
                  scalar(g, "cs", IR_F32, 0.1), scalar(g, "cz", IR_U8, 0)));
    ir_add_output(g, y);
    expect_invalid(g, "must be a scalar");
}

/* ---- hand-computed values ------------------------------------------------------------------- */

/* Runs a graph whose inputs are all constants and checks output `index` against `want`. */
static void expect_values(ir_graph *g, size_t index, const double *want, size_t n, double tol)
{
    rt_result r;
    bool ran = rtt_run(g, 0, &r);
    CHECK(ran);
    if (ran) {
        CHECK_INT(rt_tensor_numel(&r.outputs[index]), n);
        for (size_t i = 0; i < n && i < rt_tensor_numel(&r.outputs[index]); i++)
            CHECK_NEAR(rt_tensor_get(&r.outputs[index], i), want[i], tol, tol);
        rt_result_free(&r);
    }
    ir_graph_free(g);
}

static ir_value *lit(ir_graph *g, const char *name, const double *v, size_t n, int rank,
                     const int64_t *dims)
{
    return rtt_literal(g, name, IR_F32, v, n, rank, dims);
}

/* AddLayerNorm's skip_bias, exactly: ([0,1,2,3] + [1,1,1,1]) + [0,0,0,1] = [1,2,3,5]: mean 2.75,
 * var 2.1875; no beta (an empty port before skip_bias); both outputs. */
static void test_values_skip_bias(void)
{
    ir_graph *g = ir_graph_new("v");
    ir_value *a = lit(g, "a", (double[]){0, 1, 2, 3}, 4, DIMS(4));
    ir_value *b = lit(g, "b", (double[]){1, 1, 1, 1}, 4, DIMS(4));
    ir_value *one = lit(g, "one", (double[]){1, 1, 1, 1}, 4, DIMS(4));
    ir_value *sb = lit(g, "sb", (double[]){0, 0, 0, 1}, 4, DIMS(4));
    static const char *const names[] = {"y", "sum"};
    ir_node *n = rtt_node(g, IR_OP_AddLayerNorm, names, 2, IN(a, b, one, NULL, sb));
    ir_set_attr_float(g, n, "epsilon", 0);
    ir_add_output(g, n->outputs[1]);
    ir_add_output(g, n->outputs[0]);
    double sd = sqrt(2.1875);
    rt_result res;
    bool ran = rtt_run(g, 0, &res);
    CHECK(ran);
    if (ran) {
        const double want_sum[4] = {1, 2, 3, 5};
        for (int i = 0; i < 4; i++) {
            CHECK_NEAR(rt_tensor_get(&res.outputs[0], (size_t)i), want_sum[i], 1e-6, 1e-6);
            CHECK_NEAR(rt_tensor_get(&res.outputs[1], (size_t)i), (want_sum[i] - 2.75) / sd, 1e-5,
                       1e-5);
        }
        rt_result_free(&res);
    }
    ir_graph_free(g);
}

static void test_values_conv_gemm(void)
{
    /* 1x1x3x3 input, 2x2 kernel of ones, bias -10, residual 1, Relu:
     * window sums 12 16 24 28 -> 2+1 6+1 14+1 18+1 */
    ir_graph *g = ir_graph_new("v");
    ir_value *x = lit(g, "x", (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, 9, DIMS(1, 1, 3, 3));
    ir_value *w = lit(g, "w", (double[]){1}, 1, DIMS(1, 1, 2, 2));
    ir_value *b = lit(g, "b", (double[]){-10}, 1, DIMS(1));
    ir_value *z = lit(g, "z", (double[]){1}, 1, DIMS(1, 1, 2, 2));
    ir_value *y = rtt_op(g, IR_OP_FusedConvAct, "y", IN(x, w, b, z));
    ir_set_attr_string(g, y->producer, "act", "Relu");
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){3, 7, 15, 19}, 4, 1e-6);

    /* [[1,2],[3,4]] @ [[1,0,-1],[0,1,1]] * 2 + [1,1,1] + 0.5 * [[1,2,3]]:
     * [[1,2,1],[3,4,1]] * 2 = [[2,4,2],[6,8,2]]; + 1 + [0.5,1,1.5] = [[3.5,6,4.5],[7.5,10,4.5]] */
    g = ir_graph_new("v");
    ir_value *a = lit(g, "a", (double[]){1, 2, 3, 4}, 4, DIMS(2, 2));
    ir_value *bm = lit(g, "bm", (double[]){1, 0, -1, 0, 1, 1}, 6, DIMS(2, 3));
    ir_value *bias = lit(g, "bias", (double[]){1}, 1, DIMS(3));
    ir_value *res = lit(g, "res", (double[]){1, 2, 3}, 3, DIMS(1, 3));
    y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(a, bm, bias, res));
    ir_set_attr_float(g, y->producer, "alpha", 2);
    ir_set_attr_float(g, y->producer, "beta", 0.5);
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){3.5, 6, 4.5, 7.5, 10, 4.5}, 6, 1e-6);

    /* QGemm: [1, -2] @ [[3], [4]] = -5, * 0.5 * 0.25 = -0.625, + 1 = 0.375; requantized by 0.1:
     * round(3.75) = 4 */
    g = ir_graph_new("v");
    ir_value *qa = rtt_literal(g, "qa", IR_I8, (double[]){1, -2}, 2, DIMS(1, 2));
    ir_value *qb = rtt_literal(g, "qb", IR_I8, (double[]){3, 4}, 2, DIMS(2, 1));
    ir_value *q = rtt_op(g, IR_OP_QGemm, "y",
                         IN(qa, scalar(g, "as", IR_F32, 0.5), qb, scalar(g, "bs", IR_F32, 0.25),
                            lit(g, "qbias", (double[]){1}, 1, DIMS(1)),
                            scalar(g, "ys", IR_F32, 0.1)));
    ir_add_output(g, q);
    expect_values(g, 0, (double[]){4}, 1, 0);
}

static void test_values_norms(void)
{
    /* RMSNorm([1,2,3,4]), eps 0: mean of squares 7.5 */
    ir_graph *g = ir_graph_new("v");
    ir_value *x = lit(g, "x", (double[]){1, 2, 3, 4}, 4, DIMS(1, 4));
    ir_value *s = lit(g, "s", (double[]){1, 1, 2, 2}, 4, DIMS(4));
    ir_value *y = rtt_op(g, IR_OP_RMSNorm, "y", IN(x, s));
    ir_set_attr_float(g, y->producer, "epsilon", 0);
    ir_add_output(g, y);
    double r = sqrt(7.5);
    expect_values(g, 0, (double[]){1 / r, 2 / r, 6 / r, 8 / r}, 4, 1e-6);

    /* AddLayerNorm([0,1,2,3] + [1,1,1,1]) = LN([1,2,3,4]): mean 2.5, var 1.25 */
    g = ir_graph_new("v");
    ir_value *a = lit(g, "a", (double[]){0, 1, 2, 3}, 4, DIMS(4));
    ir_value *b = lit(g, "b", (double[]){1}, 1, DIMS(1));
    ir_value *one = lit(g, "one", (double[]){1}, 1, DIMS(4));
    ir_value *bias = lit(g, "bias", (double[]){0.5}, 1, DIMS(4));
    static const char *const names[] = {"y", "sum"};
    ir_node *n = rtt_node(g, IR_OP_AddLayerNorm, names, 2, IN(a, b, one, bias));
    ir_set_attr_float(g, n, "epsilon", 0);
    ir_add_output(g, n->outputs[1]);
    ir_add_output(g, n->outputs[0]);
    double sd = sqrt(1.25);
    rt_result res;
    bool ran = rtt_run(g, 0, &res);
    CHECK(ran);
    if (ran) {
        for (int i = 0; i < 4; i++) {
            CHECK_NEAR(rt_tensor_get(&res.outputs[0], (size_t)i), i + 1, 0, 0);
            CHECK_NEAR(rt_tensor_get(&res.outputs[1], (size_t)i), (i + 1 - 2.5) / sd + 0.5, 1e-6,
                       1e-6);
        }
        rt_result_free(&res);
    }
    ir_graph_free(g);
}

static void test_values_softmax_attention(void)
{
    /* softmax([0, ln 2] + [0, -1e30]) = [1, 0]; softmax([0, ln 2] + [0, 0]) = [1/3, 2/3] */
    ir_graph *g = ir_graph_new("v");
    ir_value *x = lit(g, "x", (double[]){0, log(2.0), 0, log(2.0)}, 4, DIMS(2, 2));
    ir_value *m = lit(g, "m", (double[]){0, -1e30, 0, 0}, 4, DIMS(2, 2));
    ir_value *y = rtt_op(g, IR_OP_FusedSoftmax, "y", IN(x, m));
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){1, 0, 1.0 / 3, 2.0 / 3}, 4, 1e-6);

    /* one head, S = 2, T = 2, D = 1, causal: query 0 sees key 0 only; query 1 sees both with
     * scores q*k = [1*1, 1*ln3] -> weights [1/4, 3/4] */
    g = ir_graph_new("v");
    ir_value *q = lit(g, "q", (double[]){5, 1}, 2, DIMS(1, 1, 2, 1));
    ir_value *k = lit(g, "k", (double[]){1, log(3.0)}, 2, DIMS(1, 1, 2, 1));
    ir_value *v = lit(g, "v", (double[]){4, 8}, 2, DIMS(1, 1, 2, 1));
    y = rtt_op(g, IR_OP_Attention, "y", IN(q, k, v));
    ir_set_attr_int(g, y->producer, "causal", 1);
    ir_set_attr_float(g, y->producer, "scale", 1);
    ir_add_output(g, y);
    /* query 1: exp(1) vs exp(ln 3) = e vs 3 */
    double e = exp(1.0);
    expect_values(g, 0, (double[]){4, (4 * e + 8 * 3) / (e + 3)}, 2, 1e-6);

    /* the same packed (qkv_sizes, num_heads): X [1, 2, 2] @ W [2, 3] + bias gives the columns
     * q = [2, 1], k = [1, ln 3], v = [4, 8]; query 0 sees key 0 (4), query 1 scores
     * [1 * 1, 1 * ln 3] -> weights [e, 3] / (e + 3) */
    g = ir_graph_new("v");
    ir_value *xp = lit(g, "x", (double[]){1, 0, 0, 1}, 4, DIMS(1, 2, 2));
    ir_value *wp = lit(g, "w", (double[]){1, 1, 4, 0, log(3.0), 8}, 6, DIMS(2, 3));
    ir_value *bp = lit(g, "b", (double[]){1, 0, 0}, 3, DIMS(3));
    y = rtt_op(g, IR_OP_Attention, "y", IN(xp, wp, bp));
    ir_set_attr_int(g, y->producer, "causal", 1);
    ir_set_attr_float(g, y->producer, "scale", 1);
    ir_set_attr_string(g, y->producer, "layout", "BSHD");
    ir_set_attr_int(g, y->producer, "num_heads", 1);
    ir_set_attr(g, y->producer,
                &(ir_attr){.name = "qkv_sizes", .kind = IR_ATTR_INTS, .count = 3,
                           .v.ints = (int64_t[]){1, 1, 1}});
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){4, (4 * e + 8 * 3) / (e + 3)}, 2, 1e-6);
}

static void test_values_rope_swiglu_chain(void)
{
    /* RoPE, D = 4, half table: pairs (0,2) and (1,3); cos = [0, 1], sin = [1, 0]:
     * pair 0 rotates by 90 degrees: y0 = -x2, y2 = x0; pair 1 stays */
    ir_graph *g = ir_graph_new("v");
    ir_value *x = lit(g, "x", (double[]){1, 2, 3, 4}, 4, DIMS(1, 4));
    ir_value *c = lit(g, "c", (double[]){0, 1}, 2, DIMS(1, 2));
    ir_value *s = lit(g, "s", (double[]){1, 0}, 2, DIMS(1, 2));
    ir_value *y = rtt_op(g, IR_OP_RoPE, "y", IN(x, c, s));
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){-3, 2, 1, 4}, 4, 1e-6);

    /* interleaved: pairs (0,1) and (2,3); pair 0 rotates: y0 = -x1, y1 = x0 */
    g = ir_graph_new("v");
    x = lit(g, "x", (double[]){1, 2, 3, 4}, 4, DIMS(1, 4));
    c = lit(g, "c", (double[]){0, 1}, 2, DIMS(1, 2));
    s = lit(g, "s", (double[]){1, 0}, 2, DIMS(1, 2));
    y = rtt_op(g, IR_OP_RoPE, "y", IN(x, c, s));
    ir_set_attr_int(g, y->producer, "interleaved", 1);
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){-2, 1, 3, 4}, 4, 1e-6);

    /* SwiGLU(0, 3) = 0; SwiGLU(2, 3) = 2 * sigmoid(2) * 3 */
    g = ir_graph_new("v");
    ir_value *gate = lit(g, "g", (double[]){0, 2}, 2, DIMS(2));
    ir_value *up = lit(g, "u", (double[]){3}, 1, DIMS(1));
    y = rtt_op(g, IR_OP_SwiGLU, "y", IN(gate, up));
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){0, 6 / (1 + exp(-2.0))}, 2, 1e-6);

    /* ElementwiseChain: max(x0, 1.5) * x1 - 0.5 with x1 broadcast */
    g = ir_graph_new("v");
    ir_value *x0 = lit(g, "x0", (double[]){1, 2, 3, 4}, 4, DIMS(2, 2));
    ir_value *x1 = lit(g, "x1", (double[]){10, 100}, 2, DIMS(2, 1));
    y = rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1));
    ir_set_attr_string(g, y->producer, "expr", "sub(mul(max(x0, 1.5), x1), .5)");
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){14.5, 19.5, 299.5, 399.5}, 4, 1e-6);

    /* ElementwiseChain over scalars: a rank-0 input broadcasts, and two give a rank-0 output */
    g = ir_graph_new("v");
    x0 = lit(g, "x0", (double[]){2}, 1, SCALAR);
    x1 = lit(g, "x1", (double[]){1, 2, 3}, 3, DIMS(3));
    y = rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1));
    ir_set_attr_string(g, y->producer, "expr", "mul(x0, x1)");
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){2, 4, 6}, 3, 0);
    g = ir_graph_new("v");
    x0 = lit(g, "x0", (double[]){2}, 1, SCALAR);
    y = rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x0, x0));
    ir_set_attr_string(g, y->producer, "expr", "pow(x0, add(x1, 1))");
    ir_add_output(g, y);
    expect_values(g, 0, (double[]){8}, 1, 0);

    /* FusedQKV: x [1, 2] @ W [2, 3] split [2, 1] */
    g = ir_graph_new("v");
    x = lit(g, "x", (double[]){1, 2}, 2, DIMS(1, 2));
    ir_value *w = lit(g, "w", (double[]){1, 2, 3, 4, 5, 6}, 6, DIMS(2, 3));
    static const char *const names[] = {"q", "k"};
    ir_node *n = rtt_node(g, IR_OP_FusedQKV, names, 2, IN(x, w));
    ir_set_attr_ints(g, n, "sizes", (int64_t[]){2, 1}, 2);
    ir_add_output(g, n->outputs[1]);
    expect_values(g, 0, (double[]){15}, 1, 1e-6);
}

/* Every fused op with a dim of size 0 runs and produces an empty output. */
static void test_empty_tensors(void)
{
    ir_graph *g = ir_graph_new("empty");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(2, 0, 8));
    ir_value *w = rtt_random(g, "w", IR_F32, 1, DIMS(8, 12));
    ir_value *s8 = rtt_random(g, "s8", IR_F32, 2, DIMS(8));
    ir_value *outs[12];
    int n = 0;
    outs[n++] = rtt_op(g, IR_OP_GemmEpilogue, "gemm", IN(x, w));
    static const char *const qkv[] = {"q", "k", "v"};
    ir_node *split = rtt_node(g, IR_OP_FusedQKV, qkv, 3, IN(x, w));
    ir_set_attr_ints(g, split, "sizes", (int64_t[]){4, 4, 4}, 3);
    outs[n++] = split->outputs[0];
    outs[n++] = rtt_op(g, IR_OP_RMSNorm, "rms", IN(x, s8));
    outs[n++] = rtt_op(g, IR_OP_AddLayerNorm, "ln", IN(x, x, s8));
    outs[n++] = rtt_op(g, IR_OP_AddRMSNorm, "arms", IN(x, x, s8));
    outs[n++] = rtt_op(g, IR_OP_FusedSoftmax, "sm", IN(x));
    outs[n++] = rtt_op(g, IR_OP_SwiGLU, "glu", IN(x, x));
    ir_value *chain = rtt_op(g, IR_OP_ElementwiseChain, "chain", IN(x, s8));
    ir_set_attr_string(g, chain->producer, "expr", "add(x0, exp(x1))");
    outs[n++] = chain;
    ir_value *cs = rtt_random(g, "cs", IR_F32, 3, DIMS(0, 4));
    outs[n++] = rtt_op(g, IR_OP_RoPE, "rope", IN(x, cs, cs));
    ir_value *q = rtt_input(g, "aq", IR_F32, DIMS(1, 2, 0, 8));
    ir_value *kv = rtt_input(g, "akv", IR_F32, DIMS(1, 1, 0, 8));
    outs[n++] = rtt_op(g, IR_OP_Attention, "attn", IN(q, kv, kv));
    ir_value *img = rtt_input(g, "img", IR_F32, DIMS(0, 3, 5, 5));
    ir_value *filt = rtt_random(g, "filt", IR_F32, 4, DIMS(2, 3, 3, 3));
    outs[n++] = rtt_op(g, IR_OP_FusedConvAct, "conv", IN(img, filt));
    ir_value *qa = rtt_input(g, "qa", IR_I8, DIMS(0, 8));
    ir_value *qb = rtt_random_range(g, "qb", IR_I8, 5, -128, 128, DIMS(8, 3));
    ir_value *one = scalar(g, "one", IR_F32, 1);
    outs[n++] = rtt_op(g, IR_OP_QGemm, "qgemm", IN(qa, one, qb, one));
    for (int i = 0; i < n; i++)
        ir_add_output(g, outs[i]);
    rt_result r;
    bool ran = rtt_run(g, 1, &r);
    CHECK(ran);
    if (ran) {
        for (size_t i = 0; i < r.noutputs; i++)
            CHECK_INT(rt_tensor_numel(&r.outputs[i]), 0);
        rt_result_free(&r);
    }
    ir_graph_free(g);
}

/* ---- inference errors ----------------------------------------------------------------------- */

static void expect_invalid(ir_graph *g, const char *message)
{
    char buf[512] = "";
    CHECK(rtt_run_fails(g, buf, sizeof buf));
    if (!strstr(buf, message))
        fprintf(stderr, "expected \"%s\" in: %s", message, buf);
    CHECK(strstr(buf, message) != NULL);
    ir_graph_free(g);
}

/* A SeparableConv of x [1,4,6,6] that inference must refuse with `message`: the depthwise and
 * pointwise weights' dims, the group, a pointwise bias of 4 values when `bias`, and out_act when
 * not NULL. */
typedef struct {
    int64_t wd[4], wp[4], group;
    bool bias;
    const char *out_act, *message;
} bad_separable;

static void expect_separable_invalid(const bad_separable *c)
{
    ir_graph *g = ir_graph_new("bad");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(1, 4, 6, 6));
    ir_value *wd = rtt_random(g, "wd", IR_F32, 1, 4, c->wd);
    ir_value *wp = rtt_random(g, "wp", IR_F32, 2, 4, c->wp);
    ir_value *y = c->bias ? rtt_op(g, IR_OP_SeparableConv, "y",
                                   IN(x, wd, wp, NULL, rtt_random(g, "bp", IR_F32, 3, DIMS(4))))
                          : rtt_op(g, IR_OP_SeparableConv, "y", IN(x, wd, wp));
    ir_set_attr_int(g, y->producer, "group", c->group);
    if (c->out_act)
        ir_set_attr_string(g, y->producer, "out_act", c->out_act);
    ir_add_output(g, y);
    expect_invalid(g, c->message);
}

/* A packed Attention(x [2, 3, 16], w [16, wcols], b [wcols]) with these attributes must be
 * refused with this message. */
static void expect_packed_invalid(int64_t wcols, const int64_t *sizes, uint32_t nsizes,
                                  int64_t heads, const char *layout, const char *message)
{
    ir_graph *g = ir_graph_new("bad");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(2, 3, 16));
    ir_value *w = rtt_random(g, "w", IR_F32, 1, DIMS(16, wcols));
    ir_value *b = rtt_random(g, "b", IR_F32, 2, DIMS(wcols));
    ir_value *y = rtt_op(g, IR_OP_Attention, "y", IN(x, w, b));
    ir_set_attr_string(g, y->producer, "layout", layout);
    ir_set_attr_int(g, y->producer, "num_heads", heads);
    ir_set_attr(g, y->producer,
                &(ir_attr){.name = "qkv_sizes", .kind = IR_ATTR_INTS, .count = nsizes,
                           .v.ints = (int64_t *)sizes});
    ir_add_output(g, y);
    expect_invalid(g, message);
}

static void test_inference_errors(void)
{
    static const int64_t even[] = {16, 16, 16}, odd[] = {16, 16, 15};
    expect_packed_invalid(48, even, 2, 2, "BSHD",
                          "Attention: qkv_sizes has 2 entries, not 3 (Q, K, V)");
    expect_packed_invalid(48, even, 3, 2, "BHSD",
                          "Attention: packed: the layout must be \"BSHD\"");
    expect_packed_invalid(47, odd, 3, 2, "BSHD",
                          "Attention: qkv_sizes[2] = 15 must be a positive multiple of num_heads 2");
    expect_packed_invalid(40, even, 3, 2, "BSHD",
                          "Attention: packed: X [2,3,16] and W [16,40] do not make [.., 48] from "
                          "X's last dim");
    expect_packed_invalid(48, even, 3, 0, "BSHD",
                          "Attention: packed: num_heads 0 must be positive");

    ir_graph *g = ir_graph_new("bad");
    ir_value *q = rtt_input(g, "q", IR_F32, DIMS(1, 6, 4, 8));
    ir_value *k = rtt_input(g, "k", IR_F32, DIMS(1, 4, 4, 8));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, k, k)));
    expect_invalid(g, "Attention: Q's 6 heads are not a multiple of K's 4 heads");

    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    ir_value *y = rtt_op(g, IR_OP_Attention, "y", IN(q, q, q));
    ir_set_attr_string(g, y->producer, "layout", "BHDS");
    ir_add_output(g, y);
    expect_invalid(g, "Attention: layout \"BHDS\" is not \"BHSD\" or \"BSHD\"");

    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    y = rtt_op(g, IR_OP_Attention, "y", IN(q, q, q));
    ir_set_attr_int(g, y->producer, "causal", 3);
    ir_add_output(g, y);
    expect_invalid(g, "Attention: causal = 3 is not 0 (none), 1 (-inf) or 2 (causal_fill first)");

    /* BSHD: Q [1,4,6,8] is 6 heads of 4 positions, K [1,5,3,8] 3 heads of 5: fine; V's 2 heads
     * are not K's 3 */
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    k = rtt_input(g, "k", IR_F32, DIMS(1, 5, 3, 8));
    ir_value *v = rtt_input(g, "v", IR_F32, DIMS(1, 5, 2, 8));
    y = rtt_op(g, IR_OP_Attention, "y", IN(q, k, v));
    ir_set_attr_string(g, y->producer, "layout", "BSHD");
    ir_add_output(g, y);
    expect_invalid(g, "Attention: Q [1,4,6,8], K [1,5,3,8] and V [1,5,2,8] (BSHD) must agree");

    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    ir_value *cs = rtt_random(g, "cos", IR_F32, 1, DIMS(6, 8));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, cs)));
    expect_invalid(g, "Attention: the rotary tables cos and sin go together; sin is missing");

    /* rotary with S != T: K's 9 positions are not covered by tables of Q's 6 */
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    k = rtt_input(g, "k", IR_F32, DIMS(1, 4, 9, 8));
    cs = rtt_random(g, "cos", IR_F32, 1, DIMS(6, 4));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, k, k, NULL, cs, cs)));
    expect_invalid(g, "Attention: cos (for K)");

    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    cs = rtt_random(g, "cos", IR_F32, 1, DIMS(6, 3));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, cs, cs)));
    expect_invalid(g, "Attention: cos/sin's last dim must be D = 8 or D/2, not 3");

    /* key_mask: integer [B or 1, T] only */
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(2, 4, 6, 8));
    ir_value *km = rtt_input(g, "km", IR_F32, DIMS(2, 6));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, NULL, NULL, km)));
    expect_invalid(g, "Attention: input 'km' is f32; expected i32 or i64");
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(2, 4, 6, 8));
    km = rtt_input(g, "km", IR_I32, DIMS(2, 4));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, NULL, NULL, km)));
    expect_invalid(g, "Attention: key_mask [2,4] must broadcast to [batch, keys] of Q [2,4,6,8] "
                      "and K [2,4,6,8]");
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(2, 4, 6, 8));
    km = rtt_input(g, "km", IR_I64, DIMS(3, 6));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, NULL, NULL, km)));
    expect_invalid(g, "Attention: key_mask [3,6] must broadcast");

    /* bias: Q's float dtype, broadcasting to the scores [B, Hq, S, T] without enlarging them */
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    ir_value *ab = rtt_input(g, "ab", IR_F32, DIMS(2, 1, 1, 6));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, NULL, NULL, NULL, ab)));
    expect_invalid(g, "Attention: the bias of shape [2,1,1,6] does not broadcast to");
    g = ir_graph_new("bad");
    q = rtt_input(g, "q", IR_F32, DIMS(1, 4, 6, 8));
    ab = rtt_input(g, "ab", IR_F16, DIMS(1, 1, 1, 6));
    ir_add_output(g, rtt_op(g, IR_OP_Attention, "y", IN(q, q, q, NULL, NULL, NULL, NULL, ab)));
    expect_invalid(g, "Attention: inputs 'q' (f32) and 'ab' (f16) must have the same dtype");

    g = ir_graph_new("bad");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(1, 2, 5, 5));
    ir_value *w = rtt_random(g, "w", IR_F32, 1, DIMS(4, 2, 3, 3));
    ir_value *z = rtt_input(g, "z", IR_F32, DIMS(1, 4, 5, 5));
    y = rtt_op(g, IR_OP_FusedConvAct, "y", IN(x, w, NULL, z));
    ir_set_attr_ints(g, y->producer, "strides", (int64_t[]){2, 2}, 2);
    ir_add_output(g, y);
    expect_invalid(g, "FusedConvAct: the residual Z has shape [1,4,5,5]; the output has [1,4,2,2]");

    g = ir_graph_new("bad");
    x = rtt_input(g, "x", IR_F32, DIMS(3, 8));
    w = rtt_random(g, "w", IR_F32, 1, DIMS(8, 12));
    static const char *const names[] = {"q", "k", "v"};
    ir_node *n = rtt_node(g, IR_OP_FusedQKV, names, 3, IN(x, w));
    ir_set_attr_ints(g, n, "sizes", (int64_t[]){8, 2, 4}, 3);
    ir_add_output(g, n->outputs[0]);
    expect_invalid(g, "FusedQKV: W [8,12] has 12 columns but sizes add up to 14");

    g = ir_graph_new("bad");
    x = rtt_input(g, "x", IR_F32, DIMS(3, 8));
    y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(x, rtt_random(g, "w", IR_F32, 1, DIMS(8, 4))));
    ir_set_attr_string(g, y->producer, "act", "Swish");
    ir_add_output(g, y);
    expect_invalid(g, "GemmEpilogue: unknown activation \"Swish\"");

    g = ir_graph_new("bad");
    x = rtt_input(g, "x", IR_F32, DIMS(2, 5, 6));
    ir_value *c = rtt_random(g, "c", IR_F32, 1, DIMS(5, 2));
    ir_add_output(g, rtt_op(g, IR_OP_RoPE, "y", IN(x, c, c)));
    expect_invalid(g, "RoPE: cos/sin's last dim must be D = 6 or D/2, not 2");

    /* SeparableConv: the first conv must be depthwise, the second 1x1 over its channels */
    static const bad_separable separable[] = {
        {{4, 1, 3, 3}, {8, 4, 1, 1}, 2, false, NULL,
         "SeparableConv: group 2 is not the input's 4 channels; the first conv must be depthwise"},
        {{4, 2, 3, 3}, {8, 4, 1, 1}, 4, false, NULL,
         "SeparableConv: the depthwise weight [4,2,3,3] must be [k * 4, 1, kernel...]"},
        {{8, 1, 3, 3}, {8, 4, 1, 1}, 4, false, NULL,
         "SeparableConv: the pointwise weight [8,4,1,1] reads 4 channels; the depthwise conv "
         "gives 8"},
        {{4, 1, 3, 3}, {8, 4, 3, 3}, 4, false, NULL,
         "SeparableConv: the pointwise weight [8,4,3,3] is not 1x1"},
        {{4, 1, 3, 3}, {8, 4, 1, 1}, 4, true, "Swish", "SeparableConv: unknown activation \"Swish\""},
        {{4, 1, 3, 3}, {8, 4, 1, 1}, 4, true, NULL,
         "SeparableConv: the pointwise bias has shape [4]; expected [8]"},
    };
    for (size_t i = 0; i < sizeof separable / sizeof separable[0]; i++)
        expect_separable_invalid(&separable[i]);

    /* SqueezeExcite: W1 [R, C, 1...], W2 [C, R, 1...], biases [R] and [C], a known gate */
    static const struct {
        int64_t w1[4], w2[4], b1;
        const char *gate, *message;
    } se[] = {
        {{2, 6, 1, 1}, {4, 2, 1, 1}, 2, NULL,
         "SqueezeExcite: the first weight [2,6,1,1] reads 6 channels; X has 4"},
        {{2, 4, 1, 1}, {4, 3, 1, 1}, 2, NULL,
         "SqueezeExcite: the second weight [4,3,1,1] must take the 2 reduced channels back to "
         "X's 4"},
        {{2, 4, 3, 3}, {4, 2, 1, 1}, 2, NULL,
         "SqueezeExcite: the weights [2,4,3,3] and [4,2,1,1] must be 1x1"},
        {{2, 4, 1, 1}, {4, 2, 1, 1}, 3, NULL,
         "SqueezeExcite: the first bias has shape [3]; expected [2]"},
        {{2, 4, 1, 1}, {4, 2, 1, 1}, 2, "Swish", "SqueezeExcite: unknown activation \"Swish\""},
    };
    for (size_t i = 0; i < sizeof se / sizeof se[0]; i++) {
        g = ir_graph_new("bad");
        x = rtt_input(g, "x", IR_F32, DIMS(1, 4, 5, 5));
        y = rtt_op(g, IR_OP_SqueezeExcite, "y",
                   IN(x, rtt_random(g, "w1", IR_F32, 1, 4, se[i].w1),
                      rtt_random(g, "b1", IR_F32, 2, 1, (int64_t[]){se[i].b1}),
                      rtt_random(g, "w2", IR_F32, 3, 4, se[i].w2),
                      rtt_random(g, "b2", IR_F32, 4, DIMS(4))));
        if (se[i].gate)
            ir_set_attr_string(g, y->producer, "gate", se[i].gate);
        ir_add_output(g, y);
        expect_invalid(g, se[i].message);
    }
}

int main(void)
{
    RUN(test_conv_every_activation);
    RUN(test_conv_geometry);
    RUN(test_conv_half_storage);
    RUN(test_separable);
    RUN(test_squeeze_excite);
    RUN(test_gemm_every_activation);
    RUN(test_gemm_variants);
    RUN(test_gemm_batched_b);
    RUN(test_gemm_trans_batch);
    RUN(test_gemm_vector_a);
    RUN(test_qkv);
    RUN(test_rmsnorm);
    RUN(test_add_norms);
    RUN(test_add_layernorm_skip_bias);
    RUN(test_values_skip_bias);
    RUN(test_softmax);
    RUN(test_attention);
    RUN(test_rope);
    RUN(test_swiglu);
    RUN(test_ewchain_each_function);
    RUN(test_ewchain_trees);
    RUN(test_ewchain_errors);
    RUN(test_qgemm);
    RUN(test_dynq_matmul);
    RUN(test_bias_dropout);
    RUN(test_qlinear_add);
    RUN(test_values_conv_gemm);
    RUN(test_values_norms);
    RUN(test_values_softmax_attention);
    RUN(test_values_rope_swiglu_chain);
    RUN(test_empty_tensors);
    RUN(test_inference_errors);
    return unit_finish();
}
