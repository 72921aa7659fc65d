/* The CUDA column's supports check for SqueezeExcite (kernels/cuda/squeeze_excite.cu). */
#include "kernels/cuda/cuda_registry.h"
#include "kernels/kernels.h"

/* SqueezeExcite: one block per image keeps the pooled channels, the reduced channels and the
 * gates in shared memory; every input one float dtype. */
bool kn_cuda_supports_SqueezeExcite(const ir_graph *g, const ir_node *n, char *why_not)
{
    ir_dtype seen = IR_DTYPE_UNKNOWN;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_type *t = n->inputs[i] ? &n->inputs[i]->type : NULL;
        if (!t || t->dtype == IR_DTYPE_UNKNOWN)
            continue;
        if (!ir_dtype_is_float(t->dtype))
            return kn_why(why_not, "input %u is %s; the CUDA kernel takes f32, f16 or bf16", i,
                          ir_dtype_name(t->dtype));
        if (seen != IR_DTYPE_UNKNOWN && t->dtype != seen)
            return kn_why(why_not, "inputs mix %s and %s; the CUDA kernel takes one dtype",
                          ir_dtype_name(seen), ir_dtype_name(t->dtype));
        seen = t->dtype;
    }
    const ir_type *x = n->ninputs > 0 && n->inputs[0] ? &n->inputs[0]->type : NULL;
    const ir_type *w1 = n->ninputs > 1 && n->inputs[1] ? &n->inputs[1]->type : NULL;
    int64_t c = x && x->rank >= 2 && ir_dim_is_static(x->dims[1]) ? x->dims[1] : -1;
    int64_t r = w1 && w1->rank >= 1 && ir_dim_is_static(w1->dims[0]) ? w1->dims[0] : -1;
    if (c > KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS || r > KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS)
        return kn_why(why_not,
                      "%lld channels (%lld reduced); the CUDA kernel keeps at most %d of each in "
                      "shared memory",
                      (long long)c, (long long)r, (int)KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS);
    return true;
}
