/* The CUDA column's BiasDropout (kernels/cuda/dropout.cu): its supports check and launch. */
#include "kernels/cuda/cuda_launch.h"
#include "kernels/cuda/cuda_registry.h"

#include "kernels/dropout_mask.h"

/* The type of input i, NULL when absent. */
static const ir_type *input_type(const ir_node *n, uint32_t i)
{
    return i < n->ninputs && n->inputs[i] ? n->inputs[i]->type : NULL;
}

/* X, bias and residual one float dtype, the ratio a float scalar, training_mode bool. */
bool kn_cuda_supports_BiasDropout(const ir_graph *g, const ir_node *n, char *why_not)
{
    (void)g;
    ir_dtype seen = IR_DTYPE_UNKNOWN;
    for (uint32_t i = 0; i < 4; i++) {
        const ir_type *t = input_type(n, i);
        if (!t || t->dtype == IR_DTYPE_UNKNOWN)
            continue;
        if (t->dtype != IR_F32 && t->dtype != IR_F16 && t->dtype != IR_BF16)
            return kn_why(why_not, "input %u is %s; the CUDA kernel takes f32, f16 or bf16", i,
                          ir_dtype_name(t->dtype));
        if (i < 3 && seen != IR_DTYPE_UNKNOWN && t->dtype != seen)
            return kn_why(why_not, "inputs mix %s and %s; the CUDA kernel takes one dtype",
                          ir_dtype_name(seen), ir_dtype_name(t->dtype));
        if (i < 3)
            seen = t->dtype;
    }
    const ir_type *tm = input_type(n, 4);
    if (tm && tm->dtype != IR_DTYPE_UNKNOWN && tm->dtype != IR_BOOL)
        return kn_why(why_not, "training_mode is %s; the CUDA kernel takes bool",
                      ir_dtype_name(tm->dtype));
    return true;
}

bool kn_cuda_run_BiasDropout(const kn_cuda_call *call)
{
    const kc_tensor *in = call->inputs;
    static const kc_tensor none = {0};
    kc_tensor *mask = call->noutputs > 1 ? &call->outputs[1] : NULL;
    kc_tensor no_mask = {0};
    uint64_t seed = kn_dropout_seed(ir_get_int(call->node, "seed"));
    return kc_bias_dropout(call->kc, &in[0], &in[1], call->ninputs > 2 ? &in[2] : &none,
                           call->ninputs > 3 ? &in[3] : &none, call->ninputs > 4 ? &in[4] : &none,
                           seed, &call->outputs[0], mask ? mask : &no_mask) ||
           kn_cuda_failed(call);
}
