/* The CUDA executor's values on both sides (runtime/cuda_internal.h): binding the inputs, moving a
 * value to the host or the device when the other side needs it. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "base/check.h"

/* ---- binding inputs ---- */

bool rt_cu_bind_input(void *user, ir_value *v, const rt_tensor *used)
{
    slot *s = &((executor *)user)->slots[v->id];
    s->type = used->type;
    s->host = used->data;
    s->nbytes = used->nbytes;
    return true;
}

/* ---- moving values ---- */

/* The host copy of v (downloaded when only the device has it); NULL after reporting. */
const void *rt_cu_ensure_host(executor *ex, ir_value *v, const ir_node *n)
{
    slot *s = &ex->slots[v->id];
    if (s->host)
        return s->host;
    if (v->kind == IR_VALUE_CONST) {
        s->host = ir_const_data(ex->run.g, v, ex->run.dg);
        int64_t nbytes = 0;
        FR_CHECK(!s->host || ir_type_nbytes(v->type, &nbytes));
        s->type = *v->type;
        s->nbytes = (size_t)nbytes;
        return s->host;
    }
    FR_CHECK(s->dev); /* a defined value is on one side at least */
    s->hbuf = rt_pool_get(&ex->hpool, s->nbytes ? s->nbytes : 1);
    if (!s->hbuf) {
        rt_cu_report(ex, n, "out of memory for '%s' (%zu bytes)", v->name, s->nbytes);
        return NULL;
    }
    if (!kc_download(ex->kc, s->hbuf->data, s->dev->ptr, s->nbytes)) {
        rt_cu_failed(ex, n);
        return NULL;
    }
    s->host = s->hbuf->data;
    return s->host;
}

/* The device copy of v (uploaded when only the host has it); NULL after reporting. Constants'
 * and inputs' copies are kept for every later run. */
void *rt_cu_ensure_dev(executor *ex, ir_value *v, const ir_node *n)
{
    slot *s = &ex->slots[v->id];
    if (s->dev)
        return s->dev->ptr;
    const void *host = rt_cu_ensure_host(ex, v, n);
    if (!host)
        return NULL;
    if (!(s->dev = rt_cu_dpool_get(ex, s->nbytes ? s->nbytes : 1, v->name))) {
        rt_cu_failed(ex, n);
        return NULL;
    }
    s->persistent = v->kind != IR_VALUE_NODE;
    if (!kc_upload(ex->kc, s->dev->ptr, host, s->nbytes)) {
        rt_cu_failed(ex, n);
        return NULL;
    }
    return s->dev->ptr;
}

#endif /* FR_HAVE_CUDA */
