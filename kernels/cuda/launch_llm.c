/* The CUDA column's launches of the transformer and elementwise kernels (llm.cu, ewchain.cu):
 * Attention, RoPE, SwiGLU, ElementwiseChain (its expression compiled by NVRTC). */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

#include <string.h>

bool kn_cuda_run_Attention(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    return kc_attention(call->kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &call->outputs[0],
                        (float)ir_get_float(n, "scale"), (int)ir_get_int(n, "causal"),
                        strcmp(ir_get_string(n, "layout"), "BSHD") == 0,
                        ir_get_int(n, "nan_to_zero") != 0, &in[6],
                        (float)ir_get_float(n, "mask_filter_value"), &in[7],
                        (float)ir_get_float(n, "causal_fill")) ||
           kn_cuda_failed(call);
}

bool kn_cuda_run_RoPE(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    return kc_rope(call->kc, &in[0], &in[1], &in[2], &call->outputs[0],
                   ir_get_int(call->node, "interleaved") != 0) ||
           kn_cuda_failed(call);
}

bool kn_cuda_run_SwiGLU(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    return kc_swiglu(call->kc, &in[0], &in[1], &call->outputs[0]) || kn_cuda_failed(call);
}

bool kn_cuda_run_ElementwiseChain(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    ir_ew_program prog;
    const char *err;
    size_t at;
    if (!ir_ew_parse(call->arena, ir_get_string(n, "expr"), n->ninputs, &prog, &err, &at))
        return kn_cuda_fail(call, "expr: %s (at offset %zu)", err, at);
    const kc_tensor *ptrs[KN_CUDA_EW_MAX_INPUTS];
    if (n->ninputs > KN_CUDA_EW_MAX_INPUTS)
        return kn_cuda_fail(call, "more than %d inputs", KN_CUDA_EW_MAX_INPUTS);
    for (uint32_t i = 0; i < n->ninputs; i++)
        ptrs[i] = &in[i];
    const char *body = kn_cuda_ewchain_source(call->arena, &prog);
    return kc_ewchain(call->kc, body, ptrs, (int)n->ninputs, &out[0]) || kn_cuda_failed(call);
}
