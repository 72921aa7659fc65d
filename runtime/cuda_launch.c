/* Which launcher runs a GPU node (runtime/cuda_internal.h): the groups of plain ops in the order
 * their claims need, then the kernel table. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

/* The groups in the order the executor has always asked them: cuda-a (the integer kernel before
 * the table, which has the float forms; the generators), cuda-b (it takes ScatterND's reductions
 * and LayerNormalization's statistics), the shared plain ops, cuda-c, then the kernel table. */
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
    return rt_cu_alloc_outputs(ex, n, out) && rt_cu_run_kernel(ex, n, in, out);
}

#endif /* FR_HAVE_CUDA */
