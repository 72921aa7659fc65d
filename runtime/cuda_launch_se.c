/* The CUDA launch of SqueezeExcite (kernels/cuda/squeeze_excite.cu), the node's operands already
 * device tensors: X, W1, B1, W2, B2 -> Y, its act and gate from the node's attributes. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "kernels/cpu/fused_util.h"

/* The activation named by attribute `attr` ("act" or "gate") as the CUDA kernels take it. */
static kc_act act_named(executor *ex, const ir_node *n, const char *attr, bool *ok)
{
    kn_call call = {.graph = ex->g, .node = n, .dg = ex->dg};
    fused_act a = {0};
    *ok = fused_act_read_named(&call, attr, &a);
    /* both enums are ir/acts.def's (cuda_launch_fused.c asserts it) */
    return *ok ? (kc_act){(kc_act_kind)a.kind, a.alpha, a.beta}
               : (kc_act){KC_ACT_IDENTITY, 0, 0};
}

bool rt_cu_run_squeeze_excite(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    bool act_ok, gate_ok;
    kc_squeeze_excite_params p = {.act = act_named(ex, n, "act", &act_ok),
                                  .gate = act_named(ex, n, "gate", &gate_ok)};
    return act_ok && gate_ok &&
           (kc_squeeze_excite(ex->kc, &in[0], &in[1], &in[2], &in[3], &in[4], &out[0], &p) ||
            rt_cu_failed(ex, n));
}

#endif
