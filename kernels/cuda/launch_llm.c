/* The CUDA column's launches of the transformer and elementwise kernels (llm.cu, ewchain.cu):
 * Attention, RoPE, SwiGLU, ElementwiseChain (its expression compiled by NVRTC). */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

#include <string.h>

/* Packed (qkv_sizes, num_heads): FusedQKV's GEMM and split into three scratch tensors [B, S, N_i],
 * then the attention on them seen as [B, S, H, N_i / H]. */
static bool attention_packed(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    const int64_t *sizes;
    if (ir_get_ints(n, "qkv_sizes", &sizes) != 3)
        return kn_cuda_fail(call, "qkv_sizes must have 3 entries");
    int64_t h = ir_get_int(n, "num_heads"), b = in[0].dims[0], s = in[0].dims[1];
    size_t elem = in[0].dtype == KC_F32 ? 4 : 2;
    kc_tensor flat[3], heads[3];
    kc_tensor *outs[3] = {&flat[0], &flat[1], &flat[2]};
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        flat[i] = (kc_tensor){.dtype = in[0].dtype, .rank = 3, .dims = {b, s, sizes[i]},
                              .numel = b * s * sizes[i]};
        ok = ok && kc_alloc(call->kc, (size_t)flat[i].numel * elem, &flat[i].data);
        heads[i] = (kc_tensor){.dtype = in[0].dtype, .rank = 4, .dims = {b, s, h, sizes[i] / h},
                               .numel = flat[i].numel, .data = flat[i].data};
    }
    ok = ok && kc_fused_qkv(call->kc, &in[0], &in[1], &in[2], outs, 3) &&
         kc_attention(call->kc, &heads[0], &heads[1], &heads[2], &in[3], &in[4], &in[5],
                      &call->outputs[0], (float)ir_get_float(n, "scale"),
                      (int)ir_get_int(n, "causal"), true, ir_get_int(n, "nan_to_zero") != 0,
                      &in[6], (float)ir_get_float(n, "mask_filter_value"), &in[7],
                      (float)ir_get_float(n, "causal_fill"));
    for (int i = 0; i < 3; i++)
        kc_free(call->kc, flat[i].data);
    return ok || kn_cuda_failed(call);
}

bool kn_cuda_run_Attention(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    if (ir_get_int(n, "num_heads") > 0)
        return attention_packed(call);
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
