/* The CUDA column's convolution launches (conv.cu, separable.cu, squeeze_excite.cu, pool.cu):
 * FusedConvAct and plain Conv, SeparableConv, SqueezeExcite, and the plain MaxPool and AveragePool
 * on the pooling kernel. */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

#include <string.h>

/* FusedConvAct (act from its attribute) and ONNX Conv (Identity): both take X, W, B[, Z]. */
bool kn_cuda_run_Conv(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    kc_conv_params p = {.group = ir_get_int(n, "group"), .strides = {1, 1}, .dilations = {1, 1}};
    const int64_t *v;
    bool valid = strcmp(ir_get_string(n, "auto_pad"), "VALID") == 0;
    if (!valid && ir_get_ints(n, "pads", &v) == 4)
        memcpy(p.pads, v, sizeof p.pads);
    if (ir_get_ints(n, "strides", &v) == 2)
        memcpy(p.strides, v, sizeof p.strides);
    if (ir_get_ints(n, "dilations", &v) == 2)
        memcpy(p.dilations, v, sizeof p.dilations);
    bool ok = true;
    p.act = n->op == IR_OP_Conv ? (kc_act){KC_ACT_IDENTITY, 0, 0} : kn_cuda_act(call, "act", &ok);
    return ok && (kc_conv_act(call->kc, &in[0], &in[1], &in[2], &in[3], &out[0], &p) ||
                  kn_cuda_failed(call));
}

bool kn_cuda_run_FusedConvAct(const kn_cuda_call *call)
{
    return kn_cuda_run_Conv(call);
}

/* SeparableConv, 1-D as 2-D of height 1 (the supports check refused SAME_* auto_pad). */
bool kn_cuda_run_SeparableConv(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    kc_separable_params p = {.kernel = {1, 1}, .strides = {1, 1}, .dilations = {1, 1}};
    int spatial = in[0].rank - 2, first = 2 - spatial; /* 1-D fills the w slot only */
    if (spatial < 1 || spatial > 2)
        return kn_cuda_fail(call, "the CUDA SeparableConv runs 1-D or 2-D convolutions");
    const int64_t *v;
    bool valid = strcmp(ir_get_string(n, "auto_pad"), "VALID") == 0;
    for (int d = 0; d < spatial; d++)
        p.kernel[first + d] = in[1].dims[2 + d];
    if (!valid && ir_get_ints(n, "pads", &v) == 2u * (uint32_t)spatial)
        for (int d = 0; d < spatial; d++)
            p.pads[first + d] = v[d];
    if (ir_get_ints(n, "strides", &v) == (uint32_t)spatial)
        for (int d = 0; d < spatial; d++)
            p.strides[first + d] = v[d];
    if (ir_get_ints(n, "dilations", &v) == (uint32_t)spatial)
        for (int d = 0; d < spatial; d++)
            p.dilations[first + d] = v[d];
    bool ok, out_ok;
    p.act = kn_cuda_act(call, "act", &ok);
    p.out_act = kn_cuda_act(call, "out_act", &out_ok);
    return ok && out_ok &&
           (kc_separable_conv(call->kc, &in[0], &in[1], &in[2], &in[3], &in[4],
                              n->ninputs > 5 ? &in[5] : NULL, &out[0], &p) ||
            kn_cuda_failed(call));
}

/* MaxPool and AveragePool (without MaxPool's Indices output, which the executor launches). */
bool kn_cuda_run_pool(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *x = &call->inputs[0];
    kc_tensor *y = &call->outputs[0];
    kc_pool_params p;
    const char *err;
    if (!kn_cuda_pool_params(n, x->rank, x->dims, &p, &err))
        return kn_cuda_fail(call, "%s", err);
    return kc_pool(call->kc, x, y, &p) || kn_cuda_failed(call);
}

/* SqueezeExcite (squeeze_excite.cu): X, W1, B1, W2, B2 -> Y, its act and gate from the node's
 * attributes. */
bool kn_cuda_run_SqueezeExcite(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    bool act_ok, gate_ok;
    kc_squeeze_excite_params p = {.act = kn_cuda_act(call, "act", &act_ok),
                                  .gate = kn_cuda_act(call, "gate", &gate_ok)};
    return act_ok && gate_ok &&
           (kc_squeeze_excite(call->kc, &in[0], &in[1], &in[2], &in[3], &in[4],
                              &call->outputs[0], &p) ||
            kn_cuda_failed(call));
}
