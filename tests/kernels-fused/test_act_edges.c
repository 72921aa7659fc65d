/* Fused activations on degenerate inputs: exactly what the unfused ONNX op computes.
 *
 * One table of inputs (NaN, both infinities, both zeros, huge, tiny, on and off the activation's
 * knees) and one table of activations, degenerate attributes included (Clip with min > max, where
 * ONNX's min(max(x, lo), hi) lets hi win; min == max; LeakyRelu with a negative slope; a flat
 * HardSigmoid). Every fused CPU kernel that takes an activation (FusedConvAct, GemmEpilogue,
 * SeparableConv's two, ElementwiseChain's clip and relu) runs each pair against the plain op,
 * with no tolerance: NaN must meet NaN, an infinity the same infinity, a number the same number.
 * The fused kernels see the inputs unchanged because their linear part multiplies by one. */
#include "base/check.h"
#include "ir/ir.h"
#include "kernels/kernels.h"
#include "runtime/runtime.h"
#include "tests/kernels-fused/acts.h"
#include "tests/runtime/rtt.h"
#include "tests/unit.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

static const double edges[] = {
    NAN, INFINITY, -INFINITY, 0.0,  -0.0, 1e-30, -1e-30, 0.25, -0.25, 2.0,     -2.0,
    2.5, -2.5,     3.0,       -3.0, 6.0,  7.5,   -7.5,   1e30, -1e30, FLT_MAX, -FLT_MAX,
};
enum { N = sizeof edges / sizeof edges[0] };

static const act_case cases[] = {
    {"Identity", false, 0, 0},
    {"Relu", false, 0, 0},
    {"LeakyRelu", true, 0.1, 0},
    {"LeakyRelu", true, -2, 0}, /* a negative slope */
    {"Sigmoid", false, 0, 0},
    {"Tanh", false, 0, 0},
    {"Clip", true, 0, 6},     /* ReLU6 */
    {"Clip", true, 6, 0},     /* min > max: every x gives max (0) */
    {"Clip", true, 2, -2},    /* min > max around zero: every x gives -2 */
    {"Clip", true, 2.5, 2.5}, /* min == max */
    {"Clip", true, -INFINITY, INFINITY},
    {"Gelu", false, 0, 0},
    {"GeluTanh", false, 0, 0},
    {"Silu", false, 0, 0},
    {"HardSwish", false, 0, 0},
    {"HardSigmoid", true, 0.2, 0.5},
    {"HardSigmoid", true, 0, 0.5}, /* flat: 0.5 for every number */
};

static const act_case identity = {"Identity", false, 0, 0};

static ir_value *edge_input(ir_graph *g, int rank, const int64_t *dims)
{
    return rtt_literal(g, "x", IR_F32, edges, N, rank, dims);
}

static ir_value *one(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    double v = 1.0;
    return rtt_literal(g, name, IR_F32, &v, 1, rank, dims);
}

/* Runs both graphs and compares every element exactly; frees them. */
static void check_exact(ir_graph *fused, ir_graph *ref, const char *what)
{
    rt_result got, want;
    bool ran_fused = rtt_run(fused, 1, &got), ran_ref = rtt_run(ref, 1, &want);
    CHECK(ran_fused);
    CHECK(ran_ref);
    if (ran_fused && ran_ref) {
        bool same = rtt_compare(&got, &want, (rt_tolerance){.rtol = 0, .atol = 0}, what);
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

static void unit_window(ir_graph *g, ir_node *n)
{
    ir_set_attr_int(g, n, "group", 1);
    ir_set_attr_ints(g, n, "strides", (int64_t[]){1, 1}, 2);
    ir_set_attr_ints(g, n, "pads", (int64_t[]){0, 0, 0, 0}, 4);
}

static void conv_graph(ir_graph *g, const act_case *a, bool fused)
{
    ir_value *x = edge_input(g, DIMS(1, 1, 1, N));
    ir_value *w = one(g, "w", DIMS(1, 1, 1, 1));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_FusedConvAct, "y", IN(x, w));
        unit_window(g, y->producer);
        set_act(g, y->producer, a);
    } else {
        ir_value *conv = rtt_op(g, IR_OP_Conv, "conv", IN(x, w));
        unit_window(g, conv->producer);
        y = ref_act(g, a, conv, IR_F32, "y");
    }
    ir_add_output(g, y);
}

static void gemm_graph(ir_graph *g, const act_case *a, bool fused)
{
    ir_value *x = edge_input(g, DIMS(N, 1));
    ir_value *w = one(g, "w", DIMS(1, 1));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_GemmEpilogue, "y", IN(x, w));
        set_act(g, y->producer, a);
    } else {
        y = ref_act(g, a, rtt_op(g, IR_OP_MatMul, "mm", IN(x, w)), IR_F32, "y");
    }
    ir_add_output(g, y);
}

/* SeparableConv with `a` on its depthwise output (dw) or on its pointwise output. */
static void sep_graph(ir_graph *g, const act_case *a, bool on_dw, bool fused)
{
    const act_case *dw_act = on_dw ? a : &identity, *pw_act = on_dw ? &identity : a;
    ir_value *x = edge_input(g, DIMS(1, 1, 1, N));
    ir_value *wd = one(g, "wd", DIMS(1, 1, 1, 1)), *wp = one(g, "wp", DIMS(1, 1, 1, 1));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_SeparableConv, "y", IN(x, wd, wp));
        unit_window(g, y->producer);
        set_act(g, y->producer, dw_act);
        ir_set_attr_string(g, y->producer, "out_act", pw_act->act);
        if (pw_act->has_params) {
            ir_set_attr_float(g, y->producer, "out_act_alpha", pw_act->alpha);
            ir_set_attr_float(g, y->producer, "out_act_beta", pw_act->beta);
        }
    } else {
        ir_value *dw = rtt_op(g, IR_OP_Conv, "dw", IN(x, wd));
        unit_window(g, dw->producer);
        ir_value *h = ref_act(g, dw_act, dw, IR_F32, "dw_act");
        ir_value *pw = rtt_op(g, IR_OP_Conv, "pw", IN(h, wp));
        unit_window(g, pw->producer);
        y = ref_act(g, pw_act, pw, IR_F32, "y");
    }
    ir_add_output(g, y);
}

static void test_fused_activations(void)
{
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        const act_case *a = &cases[i];
        char what[120];
        snprintf(what, sizeof what, "%s(%g, %g)", a->act, a->alpha, a->beta);
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        conv_graph(f, a, true);
        conv_graph(r, a, false);
        check_exact(f, r, what);
        f = ir_graph_new("fused"), r = ir_graph_new("ref");
        gemm_graph(f, a, true);
        gemm_graph(r, a, false);
        check_exact(f, r, what);
        for (int on_dw = 0; on_dw < 2; on_dw++) {
            f = ir_graph_new("fused"), r = ir_graph_new("ref");
            sep_graph(f, a, on_dw, true);
            sep_graph(r, a, on_dw, false);
            check_exact(f, r, what);
        }
    }
}

/* ElementwiseChain's clip against Clip with the same bounds, and its relu against Relu. */
static void ew_graph(ir_graph *g, const char *expr, double lo, double hi, bool fused)
{
    ir_value *x = edge_input(g, DIMS(N));
    ir_value *y;
    if (fused) {
        y = rtt_op(g, IR_OP_ElementwiseChain, "y", IN(x));
        ir_set_attr_string(g, y->producer, "expr", expr);
    } else if (expr[0] == 'r') {
        y = rtt_op(g, IR_OP_Relu, "y", IN(x));
    } else {
        y = rtt_op(g, IR_OP_Clip, "y",
                   IN(x, scalar(g, "lo", IR_F32, lo), scalar(g, "hi", IR_F32, hi)));
    }
    ir_add_output(g, y);
}

static void test_ewchain(void)
{
    static const struct {
        const char *expr;
        double lo, hi;
    } exprs[] = {
        {"clip(x0, 0, 6)", 0, 6},         {"clip(x0, 6, 0)", 6, 0}, {"clip(x0, 2, -2)", 2, -2},
        {"clip(x0, 2.5, 2.5)", 2.5, 2.5}, {"relu(x0)", 0, 0},
    };
    for (size_t i = 0; i < FR_COUNT_OF(exprs); i++) {
        ir_graph *f = ir_graph_new("fused"), *r = ir_graph_new("ref");
        ew_graph(f, exprs[i].expr, exprs[i].lo, exprs[i].hi, true);
        ew_graph(r, exprs[i].expr, exprs[i].lo, exprs[i].hi, false);
        check_exact(f, r, exprs[i].expr);
    }
}

/* The reference itself: Clip with min > max gives max everywhere, NaN stays NaN. */
static void test_clip_reference(void)
{
    ir_graph *g = ir_graph_new("clip");
    ew_graph(g, "clip", 6, 0, false);
    rt_result r;
    CHECK(rtt_run(g, 1, &r));
    for (size_t i = 0; i < N; i++) {
        double v = rt_tensor_get(&r.outputs[0], i);
        if (isnan(edges[i]))
            CHECK(isnan(v));
        else
            CHECK(v == 0.0);
    }
    rt_result_free(&r);
    ir_graph_free(g);
}

int main(void)
{
    RUN(test_clip_reference);
    RUN(test_fused_activations);
    RUN(test_ewchain);
    return unit_finish();
}
