/* How the CUDA executor launches a GPU node (runtime/cuda_internal.h): through the registry's CUDA
 * column (kn_cuda_get), a fused op given its operands, a plain ONNX op fetching the ones it reads
 * through the hooks below (kernels/cuda/launch_*.c). */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "base/check.h"

/* ---- the call's hooks (kernels/kernels.h, kn_cuda_call) ---- */

/* How a launch reports: at the node, as the executor's own errors. */
static bool fail_at(void *user, const ir_node *n, const char *msg)
{
    return rt_cu_report(user, n, "%s", msg);
}

static const ir_type *value_type(void *user, const ir_value *v)
{
    return &((executor *)user)->slots[v->id].type;
}

static void *device_copy(void *user, ir_value *v, const ir_node *n)
{
    return rt_cu_ensure_dev(user, v, n);
}

static const void *host_copy(void *user, ir_value *v, const ir_node *n)
{
    return rt_cu_ensure_host(user, v, n);
}

/* A device buffer for output v of the node being launched (its slot's size). */
static void *output_buffer(void *user, ir_value *v, const ir_node *n)
{
    executor *ex = user;
    slot *s = &ex->slots[v->id];
    if (!(s->dev = rt_cu_dpool_get(ex, s->nbytes ? s->nbytes : 1, v->name))) {
        rt_cu_failed(ex, n);
        return NULL;
    }
    return s->dev->ptr;
}

/* A device buffer held until the launch returns (launch_scratch). */
static void *scratch_buffer(void *user, size_t nbytes, const char *what, const ir_node *n)
{
    executor *ex = user;
    dbuf *b = rt_cu_dpool_get(ex, nbytes, what);
    if (!b) {
        rt_cu_failed(ex, n);
        return NULL;
    }
    vec_push(&ex->launch_scratch, b);
    return b->ptr;
}

/* A launch's view of node n: its operands come through the hooks (or kn_cuda_run_given). */
static kn_cuda_call launch_call(executor *ex, const ir_node *n)
{
    return (kn_cuda_call){.graph = ex->run.g,
                          .node = n,
                          .kc = ex->kc,
                          .arena = ex->scratch_arena,
                          .dg = ex->run.dg,
                          .fail = fail_at,
                          .user = ex,
                          .type = value_type,
                          .device = device_copy,
                          .host = host_copy,
                          .output = output_buffer,
                          .scratch = scratch_buffer,
                          .capturing = ex->capturing};
}

/* ---- launching ---- */

bool rt_cu_run_gpu_node(executor *ex, ir_node *n)
{
    kn_cuda_fn run = kn_cuda_get(n->op);
    if (!run)
        return rt_cu_report(ex, n, "%s has no CUDA kernel", ir_op_name(n->op));
    kn_cuda_call call = launch_call(ex, n);
    bool ok = kn_fused_entry_get(n->op) ? kn_cuda_run_given(&call, run) : run(&call);
    for (size_t i = 0; i < ex->launch_scratch.len; i++)
        rt_cu_dpool_release(ex, ex->launch_scratch.items[i]);
    ex->launch_scratch.len = 0;
    return ok;
}

bool rt_cu_counted_on_gpu(const executor *ex, const ir_node *n)
{
    return ex->on_gpu[n->id] && kn_cuda_counts_output(n->op);
}

bool rt_cu_infer_counted(executor *ex, ir_node *n)
{
    kn_cuda_call call = launch_call(ex, n);
    ir_type y;
    if (!kn_cuda_count_output(&call, &y))
        return false;
    int64_t nbytes = 0;
    FR_CHECK(ir_type_nbytes(&y, &nbytes));
    ir_value_set_type(ex->run.g, n->outputs[0], &y);
    ex->slots[n->outputs[0]->id].type = y;
    ex->slots[n->outputs[0]->id].nbytes = (size_t)nbytes;
    return true;
}

#endif /* FR_HAVE_CUDA */
