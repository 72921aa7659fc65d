/* The CUDA column's DynamicQuantizeMatMul (kernels/cuda/dynq.cu): its supports check and launch. */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

/* The type of input i, NULL when absent. */
static const ir_type *input_type(const ir_node *n, uint32_t i)
{
    return i < n->ninputs && n->inputs[i] ? n->inputs[i]->type : NULL;
}

/* A f32, B i8 (the CUDA executor hands fused kernels no u8 tensor), the scales and bias f32; B a
 * matrix. */
bool kn_cuda_supports_DynamicQuantizeMatMul(const ir_graph *g, const ir_node *n, char *why_not)
{
    (void)g;
    static const ir_dtype want[] = {IR_F32, IR_I8, IR_F32, IR_I8, IR_F32};
    static const char *const names[] = {"A", "B", "b_scale", "b_zero_point", "bias"};
    for (uint32_t i = 0; i < 5; i++) {
        const ir_type *t = input_type(n, i);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != want[i])
            return kn_why(why_not,
                          "%s is %s; the CUDA DynamicQuantizeMatMul takes %s (no u8 tensor reaches "
                          "a fused CUDA kernel)",
                          names[i], ir_dtype_name(t->dtype), ir_dtype_name(want[i]));
    }
    const ir_type *a = input_type(n, 0), *b = input_type(n, 1);
    if (a && a->rank >= 0 && a->rank < 2)
        return kn_why(why_not, "A has rank %d; the CUDA kernel takes rank 2 or more", a->rank);
    if (b && b->rank >= 0 && b->rank != 2)
        return kn_why(why_not, "B has rank %d; the CUDA kernel takes a matrix", b->rank);
    return true;
}

bool kn_cuda_run_DynamicQuantizeMatMul(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    return kc_dynq_matmul(call->kc, &in[0], &in[1], &in[2], &in[3], &in[4], &call->outputs[0]) ||
           kn_cuda_failed(call);
}
