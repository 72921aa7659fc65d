/* The activations of the fused kernels (FusedConvAct, GemmEpilogue, SeparableConv) and the plain
 * ONNX ops that define each, shared by the tests that run a fused kernel against its unfused form
 * (test_fused.c on random data, test_act_edges.c on the degenerate inputs). */
#ifndef FUSERULE_TESTS_KERNELS_FUSED_ACTS_H
#define FUSERULE_TESTS_KERNELS_FUSED_ACTS_H

#include "base/check.h"
#include "ir/ir.h"
#include "tests/runtime/rtt.h"

#include <string.h>

static inline ir_value *scalar(ir_graph *g, const char *name, ir_dtype dt, double v)
{
    return rtt_literal(g, name, dt, &v, 1, SCALAR);
}

typedef struct {
    const char *act;
    bool has_params;
    double alpha, beta;
} act_case;

static inline void set_act(ir_graph *g, ir_node *n, const act_case *a)
{
    ir_set_attr_string(g, n, "act", a->act);
    if (a->has_params) {
        ir_set_attr_float(g, n, "act_alpha", a->alpha);
        ir_set_attr_float(g, n, "act_beta", a->beta);
    }
}

/* The plain ops of an activation, applied to x; the last one is named `out`. */
static inline ir_value *ref_act(ir_graph *g, const act_case *a, ir_value *x, ir_dtype dt,
                                const char *out)
{
    const char *act = a->act;
    if (strcmp(act, "Identity") == 0)
        return rtt_op(g, IR_OP_Identity, out, IN(x));
    if (strcmp(act, "Relu") == 0)
        return rtt_op(g, IR_OP_Relu, out, IN(x));
    if (strcmp(act, "Sigmoid") == 0)
        return rtt_op(g, IR_OP_Sigmoid, out, IN(x));
    if (strcmp(act, "Tanh") == 0)
        return rtt_op(g, IR_OP_Tanh, out, IN(x));
    if (strcmp(act, "HardSwish") == 0)
        return rtt_op(g, IR_OP_HardSwish, out, IN(x));
    if (strcmp(act, "Gelu") == 0)
        return rtt_op(g, IR_OP_Gelu, out, IN(x));
    if (strcmp(act, "GeluTanh") == 0) {
        ir_value *y = rtt_op(g, IR_OP_Gelu, out, IN(x));
        ir_set_attr_string(g, y->producer, "approximate", "tanh");
        return y;
    }
    if (strcmp(act, "Silu") == 0)
        return rtt_op(g, IR_OP_Mul, out, IN(x, rtt_op(g, IR_OP_Sigmoid, "act_sig", IN(x))));
    if (strcmp(act, "LeakyRelu") == 0) {
        ir_value *y = rtt_op(g, IR_OP_LeakyRelu, out, IN(x));
        if (a->has_params)
            ir_set_attr_float(g, y->producer, "alpha", a->alpha);
        return y;
    }
    if (strcmp(act, "HardSigmoid") == 0) {
        ir_value *y = rtt_op(g, IR_OP_HardSigmoid, out, IN(x));
        if (a->has_params) {
            ir_set_attr_float(g, y->producer, "alpha", a->alpha);
            ir_set_attr_float(g, y->producer, "beta", a->beta);
        }
        return y;
    }
    FR_CHECK(strcmp(act, "Clip") == 0);
    return rtt_op(g, IR_OP_Clip, out,
                  IN(x, scalar(g, "clip_lo", dt, a->alpha), scalar(g, "clip_hi", dt, a->beta)));
}

#endif
