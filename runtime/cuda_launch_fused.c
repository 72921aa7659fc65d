/* Launches of the CUDA kernel table (runtime/cuda_internal.h): the fused ops and the plain ops that
 * share their kernels (Conv, MatMul, Gemm, MaxPool, AveragePool, Softmax, LayerNormalization), each
 * node's operands already device tensors. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "kernels/cpu/fused_util.h"
#include "runtime/cuda_movement.h"

#include <string.h>

#define ACT(NAME, ENUM, ...)                                                                       \
    _Static_assert((int)IR_ACT_##ENUM == (int)KC_ACT_##ENUM, "ir/acts.def: " #NAME);
#include "ir/acts.def"
#undef ACT

/* The activation named by attribute `attr` ("act"; SeparableConv's "out_act"). */
static kc_act read_act_named(executor *ex, const ir_node *n, const char *attr, bool *ok)
{
    kn_call call = {.graph = ex->g, .node = n, .dg = ex->dg};
    fused_act a = {0};
    kc_act out = {KC_ACT_IDENTITY, 0, 0};
    *ok = fused_act_read_named(&call, attr, &a);
    if (*ok)
        out = (kc_act){(kc_act_kind)a.kind, a.alpha, a.beta}; /* both enums are ir/acts.def's */
    return out;
}

static kc_act read_act(executor *ex, const ir_node *n, bool *ok)
{
    return read_act_named(ex, n, "act", ok);
}

/* The normalized axis of a rank-r tensor; false after reporting when out of range. */
bool rt_cu_axis_of(executor *ex, const ir_node *n, int rank, int *out)
{
    int64_t a = ir_get_int(n, "axis");
    if (a < 0)
        a += rank;
    if (a < 0 || a >= rank)
        return rt_cu_report(ex, n, "axis %lld is out of range for rank %d",
                            (long long)ir_get_int(n, "axis"), rank);
    *out = (int)a;
    return true;
}

/* FusedConvAct (act from its attribute) and ONNX Conv (Identity): both take X, W, B[, Z]. */
static bool run_conv(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
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
    p.act = n->op == IR_OP_Conv ? (kc_act){KC_ACT_IDENTITY, 0, 0} : read_act(ex, n, &ok);
    return ok && (kc_conv_act(ex->kc, &in[0], &in[1], &in[2], &in[3], &out[0], &p) ||
                  rt_cu_failed(ex, n));
}

/* SeparableConv, 1-D as 2-D of height 1 (the supports check refused SAME_* auto_pad). */
static bool run_separable(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_separable_params p = {.kernel = {1, 1}, .strides = {1, 1}, .dilations = {1, 1}};
    int spatial = in[0].rank - 2, first = 2 - spatial; /* 1-D fills the w slot only */
    if (spatial < 1 || spatial > 2)
        return rt_cu_report(ex, n, "the CUDA SeparableConv runs 1-D or 2-D convolutions");
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
    p.act = read_act(ex, n, &ok);
    p.out_act = read_act_named(ex, n, "out_act", &out_ok);
    return ok && out_ok &&
           (kc_separable_conv(ex->kc, &in[0], &in[1], &in[2], &in[3], &in[4],
                              n->ninputs > 5 ? &in[5] : NULL, &out[0], &p) ||
            rt_cu_failed(ex, n));
}

static bool run_gemm(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_gemm_params p = {.trans_a = ir_get_int(n, "transA") != 0,
                        .trans_b = ir_get_int(n, "transB") != 0,
                        .alpha = (float)ir_get_float(n, "alpha"),
                        .beta = (float)ir_get_float(n, "beta")};
    bool ok;
    p.act = read_act(ex, n, &ok);
    return ok && (kc_gemm_epilogue(ex->kc, &in[0], &in[1], &in[2], &in[3], &out[0], &p) ||
                  rt_cu_failed(ex, n));
}

static bool run_ewchain(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    ir_ew_program prog;
    const char *err;
    size_t at;
    if (!ir_ew_parse(ex->scratch_arena, ir_get_string(n, "expr"), n->ninputs, &prog, &err, &at))
        return rt_cu_report(ex, n, "expr: %s (at offset %zu)", err, at);
    const kc_tensor *ptrs[KN_CUDA_EW_MAX_INPUTS];
    if (n->ninputs > KN_CUDA_EW_MAX_INPUTS)
        return rt_cu_report(ex, n, "more than %d inputs", KN_CUDA_EW_MAX_INPUTS);
    for (uint32_t i = 0; i < n->ninputs; i++)
        ptrs[i] = &in[i];
    const char *body = kn_cuda_ewchain_source(ex->scratch_arena, &prog);
    return kc_ewchain(ex->kc, body, ptrs, (int)n->ninputs, &out[0]) || rt_cu_failed(ex, n);
}

static bool run_pool(executor *ex, const ir_node *n, const kc_tensor *x, kc_tensor *y)
{
    kc_pool_params p;
    const char *err;
    if (!rt_pool_params(n, x->rank, x->dims, &p, &err))
        return rt_cu_report(ex, n, "%s", err);
    return kc_pool(ex->kc, x, y, &p) || rt_cu_failed(ex, n);
}

/* Plain ONNX MatMul (alpha 1, no bias) and Gemm (alpha * A'B' + beta * C, C broadcast) on the
 * GEMM epilogue kernel; in[3] (and for MatMul in[2]) read as absent. */
static bool run_onnx_gemm(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_gemm_params p = {.alpha = 1.0f, .act = {KC_ACT_IDENTITY, 0, 0}};
    if (n->op == IR_OP_Gemm) {
        p.trans_a = ir_get_int(n, "transA") != 0;
        p.trans_b = ir_get_int(n, "transB") != 0;
        p.alpha = (float)ir_get_float(n, "alpha");
        p.beta = (float)ir_get_float(n, "beta");
    }
    const kc_tensor *c = n->op == IR_OP_Gemm ? &in[2] : &in[3];
    return kc_gemm_epilogue(ex->kc, &in[0], &in[1], &in[3], c, &out[0], &p) || rt_cu_failed(ex, n);
}

/* Dispatches a GPU node to its kernel; in/out are device tensors (data NULL when omitted). */
bool rt_cu_run_kernel(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_context *kc = ex->kc;
    int axis = 0; /* set by axis_of before any use; gcc -O3 cannot see it */
    switch (n->op) {
    case IR_OP_FusedConvAct:
    case IR_OP_Conv: return run_conv(ex, n, in, out);
    case IR_OP_MatMul:
    case IR_OP_Gemm: return run_onnx_gemm(ex, n, in, out);
    case IR_OP_MaxPool:
    case IR_OP_AveragePool: return run_pool(ex, n, &in[0], &out[0]);
    case IR_OP_Softmax:
        return rt_cu_axis_of(ex, n, in[0].rank, &axis) &&
               (kc_softmax(kc, &in[0], &in[3], &out[0], axis, 1.0f) || rt_cu_failed(ex, n));
    case IR_OP_LayerNormalization:
        return rt_cu_axis_of(ex, n, in[0].rank, &axis) &&
               (kc_norm(kc, KC_NORM_LAYER, &in[0], NULL, &in[1], &in[2], &out[0], NULL, axis,
                        (float)ir_get_float(n, "epsilon")) ||
                rt_cu_failed(ex, n));
    case IR_OP_SeparableConv: return run_separable(ex, n, in, out);
    case IR_OP_SqueezeExcite: return rt_cu_run_squeeze_excite(ex, n, in, out);
    case IR_OP_GemmEpilogue: return run_gemm(ex, n, in, out);
    case IR_OP_FusedQKV: {
        kc_tensor *outs[3] = {&out[0], &out[1], n->noutputs > 2 ? &out[2] : NULL};
        return kc_fused_qkv(kc, &in[0], &in[1], &in[2], outs, (int)n->noutputs) ||
               rt_cu_failed(ex, n);
    }
    case IR_OP_RMSNorm:
        return rt_cu_axis_of(ex, n, in[0].rank, &axis) &&
               (kc_norm(kc, KC_NORM_RMS, &in[0], NULL, &in[1], NULL, &out[0], NULL, axis,
                        (float)ir_get_float(n, "epsilon")) ||
                rt_cu_failed(ex, n));
    case IR_OP_AddLayerNorm:
    case IR_OP_AddRMSNorm: {
        bool layer = n->op == IR_OP_AddLayerNorm;
        return rt_cu_axis_of(ex, n, in[0].rank, &axis) &&
               (kc_norm(kc, layer ? KC_NORM_LAYER : KC_NORM_RMS, &in[0], &in[1], &in[2],
                        layer ? &in[3] : NULL, &out[0], n->noutputs > 1 ? &out[1] : NULL, axis,
                        (float)ir_get_float(n, "epsilon")) ||
                rt_cu_failed(ex, n));
    }
    case IR_OP_FusedSoftmax:
        return rt_cu_axis_of(ex, n, in[0].rank, &axis) &&
               (kc_softmax(kc, &in[0], &in[1], &out[0], axis, (float)ir_get_float(n, "scale")) ||
                rt_cu_failed(ex, n));
    case IR_OP_ElementwiseChain: return run_ewchain(ex, n, in, out);
    case IR_OP_Attention:
        return kc_attention(kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0],
                            (float)ir_get_float(n, "scale"), ir_get_int(n, "causal") != 0,
                            strcmp(ir_get_string(n, "layout"), "BSHD") == 0,
                            ir_get_int(n, "nan_to_zero") != 0) ||
               rt_cu_failed(ex, n);
    case IR_OP_RoPE:
        return kc_rope(kc, &in[0], &in[1], &in[2], &out[0], ir_get_int(n, "interleaved") != 0) ||
               rt_cu_failed(ex, n);
    case IR_OP_SwiGLU: return kc_swiglu(kc, &in[0], &in[1], &out[0]) || rt_cu_failed(ex, n);
    case IR_OP_QGemm:
        return kc_qgemm(kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0]) ||
               rt_cu_failed(ex, n);
    default: return rt_cu_report(ex, n, "%s has no CUDA kernel", ir_op_name(n->op));
    }
}

#endif /* FR_HAVE_CUDA */
