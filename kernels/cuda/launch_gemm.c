/* The CUDA column's GEMM launches (gemm.cu, quant.cu): GemmEpilogue and plain MatMul and Gemm on
 * the GEMM epilogue kernel, FusedQKV, QGemm. */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

bool kn_cuda_run_GemmEpilogue(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    kc_gemm_params p = {.trans_a = ir_get_int(n, "transA") != 0,
                        .trans_b = ir_get_int(n, "transB") != 0,
                        .alpha = (float)ir_get_float(n, "alpha"),
                        .beta = (float)ir_get_float(n, "beta")};
    bool ok;
    p.act = kn_cuda_act(call, "act", &ok);
    return ok && (kc_gemm_epilogue(call->kc, &in[0], &in[1], &in[2], &in[3], &out[0], &p) ||
                  kn_cuda_failed(call));
}

/* Plain ONNX MatMul (alpha 1, no bias) and Gemm (alpha * A'B' + beta * C, C broadcast) on the
 * GEMM epilogue kernel; in[3] (and for MatMul in[2]) read as absent. */
bool kn_cuda_run_onnx_gemm(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    kc_gemm_params p = {.alpha = 1.0f, .act = {KC_ACT_IDENTITY, 0, 0}};
    if (n->op == IR_OP_Gemm) {
        p.trans_a = ir_get_int(n, "transA") != 0;
        p.trans_b = ir_get_int(n, "transB") != 0;
        p.alpha = (float)ir_get_float(n, "alpha");
        p.beta = (float)ir_get_float(n, "beta");
    }
    const kc_tensor *c = n->op == IR_OP_Gemm ? &in[2] : &in[3];
    return kc_gemm_epilogue(call->kc, &in[0], &in[1], &in[3], c, &out[0], &p) ||
           kn_cuda_failed(call);
}

bool kn_cuda_run_FusedQKV(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    kc_tensor *outs[3] = {&out[0], &out[1], n->noutputs > 2 ? &out[2] : NULL};
    return kc_fused_qkv(call->kc, &in[0], &in[1], &in[2], outs, (int)n->noutputs) ||
           kn_cuda_failed(call);
}

bool kn_cuda_run_QGemm(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    return kc_qgemm(call->kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &call->outputs[0]) ||
           kn_cuda_failed(call);
}
