/* The CUDA column's QLinearAdd (kernels/cuda/qlinear_add.cu): its supports check and launch. */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

/* The type of input i, NULL when absent. */
static const ir_type *input_type(const ir_node *n, uint32_t i)
{
    return i < n->ninputs && n->inputs[i] ? n->inputs[i]->type : NULL;
}

/* A, B and the zero points i8 (the CUDA executor hands fused kernels no u8 tensor), the scales
 * f32; inference checked that the parameters are one value each. */
bool kn_cuda_supports_QLinearAdd(const ir_graph *g, const ir_node *n, char *why_not)
{
    (void)g;
    for (uint32_t i = 0; i < 8; i++) {
        const ir_type *t = input_type(n, i);
        ir_dtype want = i == 1 || i == 4 || i == 6 ? IR_F32 : IR_I8;
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != want)
            return kn_why(why_not,
                          "input %u is %s; the CUDA QLinearAdd takes %s (no u8 tensor reaches a "
                          "fused CUDA kernel)",
                          i, ir_dtype_name(t->dtype), ir_dtype_name(want));
    }
    return true;
}

bool kn_cuda_run_QLinearAdd(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    return kc_qlinear_add(call->kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], &in[7],
                          &call->outputs[0]) ||
           kn_cuda_failed(call);
}
