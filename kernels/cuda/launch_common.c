/* What the CUDA column's launches share (kernels/cuda/cuda_launch.h): reporting, the axis, the
 * activation, the pooling window. */
#include "kernels/cuda/cuda_launch.h"

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"
#include "kernels/cuda/cuda_registry.h"

#include <stdarg.h>

#define ACT(NAME, ENUM, ...)                                                                       \
    _Static_assert((int)IR_ACT_##ENUM == (int)KC_ACT_##ENUM, "ir/acts.def: " #NAME);
#include "ir/acts.def"
#undef ACT

bool kn_cuda_fail(const kn_cuda_call *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(call->arena, fmt, ap);
    va_end(ap);
    return call->fail(call->user, call->node, msg);
}

bool kn_cuda_failed(const kn_cuda_call *call)
{
    return kn_cuda_fail(call, "CUDA: %s", kc_last_error(call->kc));
}

bool kn_cuda_axis(const kn_cuda_call *call, int rank, int *out)
{
    const ir_node *n = call->node;
    int64_t a = ir_get_int(n, "axis");
    if (a < 0)
        a += rank;
    if (a < 0 || a >= rank)
        return kn_cuda_fail(call, "axis %lld is out of range for rank %d",
                            (long long)ir_get_int(n, "axis"), rank);
    *out = (int)a;
    return true;
}

kc_act kn_cuda_act(const kn_cuda_call *call, const char *attr, bool *ok)
{
    kn_call cpu = {.graph = call->graph, .node = call->node, .dg = call->dg};
    fused_act a = {0};
    kc_act out = {KC_ACT_IDENTITY, 0, 0};
    *ok = fused_act_read_named(&cpu, attr, &a);
    if (*ok)
        out = (kc_act){(kc_act_kind)a.kind, a.alpha, a.beta}; /* both enums are ir/acts.def's */
    return out;
}

bool kn_cuda_pool_params(const ir_node *n, int rank, const int64_t *dims, kc_pool_params *p,
                         const char **err)
{
    int ns = rank - 2, lead = 3 - ns;
    *p = (kc_pool_params){.planes = ns >= 1 ? dims[0] * dims[1] : 0, .max = n->op == IR_OP_MaxPool};
    if (ns < 1 || ns > 3) {
        *err = "input must be [N, C, spatial...] with 1 to 3 spatial dims";
        return false;
    }
    if (n->op == IR_OP_AveragePool)
        p->count_include_pad = ir_get_int(n, "count_include_pad") != 0;
    for (int i = 0; i < 3; i++)
        p->in[i] = p->out[i] = p->kernel[i] = p->strides[i] = p->dilations[i] = 1;
    const int64_t *ks, *st, *dl, *pads;
    uint32_t nk = ir_get_ints(n, "kernel_shape", &ks), nst = ir_get_ints(n, "strides", &st);
    uint32_t ndl = ir_get_ints(n, "dilations", &dl), np = ir_get_ints(n, "pads", &pads);
    if (nk != (uint32_t)ns || (nst && nst != (uint32_t)ns) || (ndl && ndl != (uint32_t)ns) ||
        (np && np != 2u * (uint32_t)ns)) {
        *err = "kernel_shape, strides, dilations or pads do not match the spatial dims";
        return false;
    }
    bool ceil_mode = ir_get_int(n, "ceil_mode") != 0;
    for (int i = 0; i < ns; i++) {
        int j = lead + i;
        p->in[j] = dims[2 + i];
        p->kernel[j] = ks[i];
        p->strides[j] = nst ? st[i] : 1;
        p->dilations[j] = ndl ? dl[i] : 1;
        p->pad_begin[j] = np ? pads[i] : 0;
        p->pad_end[j] = np ? pads[ns + i] : 0;
        if (!kn_window_axis(ir_get_string(n, "auto_pad"), p->in[j], p->kernel[j], p->strides[j],
                            p->dilations[j], ceil_mode, &p->pad_begin[j], &p->pad_end[j],
                            &p->out[j])) {
            *err = "the window does not fit a spatial dim";
            return false;
        }
    }
    return true;
}
