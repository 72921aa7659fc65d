/* The CUDA executor's CPU fallback (runtime/cuda_internal.h): a node no CUDA kernel supports runs
 * its CPU reference kernel on host copies of its operands, f16/bf16 widened to f32 and back. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

static bool is_half(ir_dtype dt)
{
    return dt == IR_F16 || dt == IR_BF16;
}

/* A host tensor of type t at data as a CPU kernel sees it (float dtypes as f32). */
static kn_tensor host_view(const ir_type *t, void *data)
{
    return rt_tensor_view(t, data, ir_dtype_is_float(t->dtype) ? IR_F32 : t->dtype);
}

static float *scratch_f32(executor *ex, const ir_node *n, int64_t numel)
{
    float *data =
        rt_scratch_get(&ex->run.scratch, &ex->hpool, (size_t)(numel ? numel : 1) * sizeof(float));
    if (!data)
        rt_cu_report(ex, n, "out of memory for %lld f32 values", (long long)numel);
    return data;
}

bool rt_cu_run_cpu_node(executor *ex, ir_node *n)
{
    ex->run.kin.len = ex->run.kout.len = 0;
    vec_reserve(&ex->run.kin, n->ninputs);
    vec_reserve(&ex->run.kout, n->noutputs);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        kn_tensor t = {.dtype = IR_DTYPE_UNKNOWN};
        if (v) {
            const void *data = rt_cu_ensure_host(ex, v, n);
            if (!data)
                return false;
            const slot *s = &ex->slots[v->id];
            t = host_view(&s->type, (void *)data);
            if (is_half(s->type.dtype)) {
                float *w = scratch_f32(ex, n, t.numel);
                if (!w)
                    return false;
                rt_convert(s->type.dtype, data, IR_F32, w, (size_t)t.numel);
                t.data = w;
            }
        }
        ex->run.kin.items[ex->run.kin.len++] = t;
    }
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->hbuf = rt_pool_get(&ex->hpool, s->nbytes ? s->nbytes : 1)))
            return rt_cu_report(ex, n, "out of memory for '%s'", n->outputs[k]->name);
        s->host = s->hbuf->data;
        kn_tensor t = host_view(&s->type, s->hbuf->data);
        if (is_half(s->type.dtype) && !(t.data = scratch_f32(ex, n, t.numel)))
            return false;
        ex->run.kout.items[ex->run.kout.len++] = t;
    }
    kn_call call = rt_exec_kernel_call(&ex->run, n);
    if (!kn_cpu_get(n->op)(&call))
        return false;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!is_half(s->type.dtype))
            continue;
        rt_convert(IR_F32, ex->run.kout.items[k].data, s->type.dtype, s->hbuf->data,
                   (size_t)ex->run.kout.items[k].numel);
    }
    return true;
}

#endif /* FR_HAVE_CUDA */
