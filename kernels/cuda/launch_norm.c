/* The CUDA column's normalization launches (norm.cu): RMSNorm, AddLayerNorm, AddRMSNorm and plain
 * LayerNormalization on the norm kernel, FusedSoftmax and plain Softmax on the softmax kernel. */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

/* Plain Softmax: scale 1, no mask (in[3] reads as absent). */
bool kn_cuda_run_Softmax(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    int axis = 0; /* set by kn_cuda_axis before any use; gcc -O3 cannot see it */
    return kn_cuda_axis(call, in[0].rank, &axis) &&
           (kc_softmax(call->kc, &in[0], &in[3], &call->outputs[0], axis, 1.0f) ||
            kn_cuda_failed(call));
}

bool kn_cuda_run_LayerNormalization(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    int axis = 0;
    return kn_cuda_axis(call, in[0].rank, &axis) &&
           (kc_norm(call->kc, KC_NORM_LAYER, &in[0], NULL, NULL, &in[1], &in[2], &call->outputs[0],
                    NULL, axis, (float)ir_get_float(n, "epsilon")) ||
            kn_cuda_failed(call));
}

bool kn_cuda_run_RMSNorm(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    int axis = 0;
    return kn_cuda_axis(call, in[0].rank, &axis) &&
           (kc_norm(call->kc, KC_NORM_RMS, &in[0], NULL, NULL, &in[1], NULL, &call->outputs[0],
                    NULL, axis, (float)ir_get_float(n, "epsilon")) ||
            kn_cuda_failed(call));
}

/* AddLayerNorm and AddRMSNorm: the sum is output 1 when the node has it; AddLayerNorm's
 * skip_bias (input 4) joins the residual add. */
static bool run_add_norm(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    const kc_tensor *in = call->inputs;
    kc_tensor *out = call->outputs;
    int axis = 0;
    bool layer = n->op == IR_OP_AddLayerNorm;
    return kn_cuda_axis(call, in[0].rank, &axis) &&
           (kc_norm(call->kc, layer ? KC_NORM_LAYER : KC_NORM_RMS, &in[0], &in[1],
                    layer ? &in[4] : NULL, &in[2], layer ? &in[3] : NULL, &out[0],
                    n->noutputs > 1 ? &out[1] : NULL, axis, (float)ir_get_float(n, "epsilon")) ||
            kn_cuda_failed(call));
}

bool kn_cuda_run_AddLayerNorm(const kn_cuda_call *call)
{
    return run_add_norm(call);
}

bool kn_cuda_run_AddRMSNorm(const kn_cuda_call *call)
{
    return run_add_norm(call);
}

bool kn_cuda_run_FusedSoftmax(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    int axis = 0;
    return kn_cuda_axis(call, in[0].rank, &axis) &&
           (kc_softmax(call->kc, &in[0], &in[1], &call->outputs[0], axis,
                       (float)ir_get_float(call->node, "scale")) ||
            kn_cuda_failed(call));
}
