/* Which launcher runs a GPU node (runtime/cuda_internal.h): the groups of plain ops in the order
 * their claims need, then the registry's CUDA column (kn_cuda_get: the fused ops and the plain ops
 * on their kernels, launched by kernels/cuda/launch_*.c). */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "kernels/cuda/cuda_launch.h"

/* How a launch of kernels/cuda/ reports: at the node, as the executor's own errors. */
static bool fail_at(void *user, const ir_node *n, const char *msg)
{
    return rt_cu_report(user, n, "%s", msg);
}

/* A launch's view of node n with device operands in/out (NULL where it reads none). */
static kn_cuda_call launch_call(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    return (kn_cuda_call){.graph = ex->g,
                          .node = n,
                          .kc = ex->kc,
                          .inputs = in,
                          .ninputs = n->ninputs,
                          .outputs = out,
                          .noutputs = n->noutputs,
                          .arena = ex->scratch_arena,
                          .dg = ex->dg,
                          .fail = fail_at,
                          .user = ex};
}

bool rt_cu_axis_of(executor *ex, const ir_node *n, int rank, int *out)
{
    kn_cuda_call call = launch_call(ex, n, NULL, NULL);
    return kn_cuda_axis(&call, rank, out);
}

/* The groups in the order the executor has always asked them: cuda-a (the integer kernel before
 * the table, which has the float forms; the generators), cuda-b (it takes ScatterND's reductions
 * and LayerNormalization's statistics), the shared plain ops, cuda-c, then the CUDA column. */
bool rt_cu_run_gpu_node(executor *ex, ir_node *n)
{
    bool (*const groups[])(executor *, ir_node *, bool *) = {rt_cu_run_cuda_a, rt_cu_run_cuda_b,
                                                             rt_cu_run_common, rt_cu_run_cuda_c};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        bool handled;
        bool ok = groups[g](ex, n, &handled);
        if (handled)
            return ok;
    }
    kc_tensor in[MAX_NODE_IO], out[3];
    if (n->ninputs > MAX_NODE_IO || n->noutputs > 3)
        return rt_cu_report(ex, n, "too many operands for the CUDA executor");
    /* Optional operands the kernels index (up to 6 inputs) read as absent. */
    for (uint32_t i = 0; i < MAX_NODE_IO; i++)
        in[i] = (kc_tensor){0};
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        void *ptr = v ? rt_cu_ensure_dev(ex, v, n) : NULL;
        if ((v && !ptr) || !rt_cu_device_tensor(ex, n, v, ptr, &in[i]))
            return false;
    }
    if (!rt_cu_alloc_outputs(ex, n, out))
        return false;
    kn_cuda_fn run = kn_cuda_get(n->op);
    if (!run)
        return rt_cu_report(ex, n, "%s has no CUDA kernel", ir_op_name(n->op));
    kn_cuda_call call = launch_call(ex, n, in, out);
    return run(&call);
}

#endif /* FR_HAVE_CUDA */
