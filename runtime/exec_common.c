/* What the CPU and CUDA executors share (runtime/exec_common.h): shapes at run time, outputs,
 * timing, storage conversions, scratch and releasing values. */
#include "runtime/exec_common.h"

#include "base/check.h"
#include "base/half.h"
#include "runtime/inputs.h"

#include <stdlib.h>
#include <string.h>

bool rt_is_shape_tensor(const ir_value *v, const ir_type *t)
{
    int64_t numel;
    if (v->kind == IR_VALUE_CONST || !t || !ir_type_numel(t, &numel))
        return false;
    bool integer = v->type->dtype == IR_I64 || v->type->dtype == IR_I32;
    return numel == 1 || (integer && numel <= RT_SHAPE_TENSOR_MAX);
}

/* Presents n's run-time shape tensors as constants backed by temp[i]; false
 * after a failed fetch (the ones presented so far stay presented:
 * restore_inputs undoes them). */
static bool present_inputs(ir_node *n, const rt_value_source *src, ir_const *temp,
                           ir_value_kind *kinds, const ir_shape_value **svs)
{
    bool value_shape = ir_op_info_get(n->op)->flags & IR_OPF_VALUE_SHAPE;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        const ir_type *t = v ? src->defined(src->user, v) : NULL;
        if (!v || !(rt_is_shape_tensor(v, t) || (value_shape && t && v->kind != IR_VALUE_CONST)))
            continue;
        size_t nbytes = 0;
        const void *data = src->host(src->user, v, n, &nbytes);
        if (!data)
            return false;
        temp[i] = (ir_const){.kind = IR_CONST_DATA, .data = (void *)data, .nbytes = nbytes};
        kinds[i] = v->kind;
        svs[i] = v->sv; /* (konst takes its place) */
        v->kind = IR_VALUE_CONST;
        v->konst = &temp[i];
    }
    return true;
}

static void restore_inputs(ir_node *n, const ir_const *temp, const ir_value_kind *kinds,
                           const ir_shape_value *const *svs)
{
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        if (v && v->kind == IR_VALUE_CONST && v->konst == &temp[i]) {
            v->kind = kinds[i];
            v->sv = svs[i];
        }
    }
}

rt_infer_status rt_infer_node(ir_graph *g, ir_node *n, dg_context *dg, const rt_value_source *src,
                              ir_value **unknown)
{
    size_t count = n->ninputs ? n->ninputs : 1;
    ir_const *temp = calloc(count, sizeof *temp);
    ir_value_kind *kinds = calloc(count, sizeof *kinds);
    const ir_shape_value **svs = calloc(count, sizeof *svs);
    FR_CHECK(temp && kinds && svs);
    bool ok = present_inputs(n, src, temp, kinds, svs) && ir_op_info_get(n->op)->infer(g, n, dg);
    restore_inputs(n, temp, kinds, svs);
    free(temp);
    free(kinds);
    free(svs);
    if (!ok)
        return RT_INFER_FAILED;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        int64_t nbytes;
        if (!ir_type_nbytes(n->outputs[k]->type, &nbytes)) {
            *unknown = n->outputs[k];
            return RT_INFER_UNKNOWN;
        }
    }
    return RT_INFER_OK;
}

bool rt_collect_outputs(ir_graph *g, rt_result *res, const rt_value_source *src,
                        bool (*out_of_memory)(void *user, const ir_value *v))
{
    res->noutputs = g->outputs.len;
    res->outputs = ar_alloc_array(res->arena, g->outputs.len, sizeof *res->outputs);
    for (size_t k = 0; k < g->outputs.len; k++) {
        ir_value *v = g->outputs.items[k];
        size_t nbytes = 0;
        const void *data = src->host(src->user, v, NULL, &nbytes);
        if (!data)
            return false;
        rt_tensor *t = &res->outputs[k];
        *t = (rt_tensor){v->name, *src->defined(src->user, v),
                         ar_try_alloc(res->arena, nbytes ? nbytes : 1), nbytes};
        if (!t->data)
            return out_of_memory(src->user, v);
        memcpy(t->data, data, nbytes);
    }
    return true;
}

bool rt_check_storage(const ir_graph *g, const char *backend, dg_context *dg)
{
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        ir_dtype dt = v->type->dtype;
        if (dt == IR_F64 || dt == IR_I16 || dt == IR_U16 || dt == IR_U32 || dt == IR_U64) {
            dg_error_path(dg, g->src ? g->src->path : g->name,
                          "value '%s' is %s: the %s executor holds f32, f16, bf16, i8, u8, i32, "
                          "i64 and bool (run it with --target cpu)",
                          v->name, ir_dtype_name(dt), backend);
            return false;
        }
    }
    return true;
}

static int by_time_desc(const void *a, const void *b)
{
    const rt_op_time *x = a, *y = b;
    return (x->seconds < y->seconds) - (x->seconds > y->seconds);
}

void rt_collect_times(rt_result *res, const rt_op_time times[IR_OP_COUNT])
{
    size_t n = 0;
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        n += times[op].calls > 0;
    res->times = ar_alloc_array(res->arena, n, sizeof *res->times);
    res->ntimes = 0;
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        if (times[op].calls > 0)
            res->times[res->ntimes++] = times[op];
    qsort(res->times, res->ntimes, sizeof *res->times, by_time_desc);
}

bool rt_first_read(const ir_node *n, uint32_t i)
{
    for (uint32_t j = 0; j < i; j++)
        if (n->inputs[j] == n->inputs[i])
            return false;
    return true;
}

/* ---- host data as the CPU kernels see it ---- */

kn_tensor rt_tensor_view(const ir_type *t, void *data, ir_dtype label)
{
    kn_tensor k = {.dtype = label, .rank = t->rank, .data = data};
    memcpy(k.dims, t->dims, sizeof k.dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(t, &k.numel));
    return k;
}

/* Element i of integer data of dtype dt (i16, u16, u32, u64 or i64) as int64: u64 by its bit
 * pattern, so that values from 2^63 compute as negative i64 (docs/graph-format.md). */
static int64_t int_at(ir_dtype dt, const void *src, size_t i)
{
    switch (dt) {
    case IR_I16: return ((const int16_t *)src)[i];
    case IR_U16: return ((const uint16_t *)src)[i];
    case IR_U32: return ((const uint32_t *)src)[i];
    case IR_U64: return (int64_t)((const uint64_t *)src)[i];
    case IR_I64: return ((const int64_t *)src)[i];
    default: FR_UNREACHABLE(); return 0;
    }
}

/* Stores v into element i of integer data of dtype dt, wrapping like a C conversion. */
static void int_put(ir_dtype dt, void *dst, size_t i, int64_t v)
{
    switch (dt) {
    case IR_I16: ((int16_t *)dst)[i] = (int16_t)(uint16_t)v; break;
    case IR_U16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
    case IR_U32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
    case IR_U64: ((uint64_t *)dst)[i] = (uint64_t)v; break;
    case IR_I64: ((int64_t *)dst)[i] = v; break;
    default: FR_UNREACHABLE();
    }
}

/* Element i of float data of dtype dt. */
static double float_at(ir_dtype dt, const void *src, size_t i)
{
    switch (dt) {
    case IR_F64: return ((const double *)src)[i];
    case IR_F32: return ((const float *)src)[i];
    case IR_F16: return f16_to_f32(((const uint16_t *)src)[i]);
    case IR_BF16: return bf16_to_f32(((const uint16_t *)src)[i]);
    default: FR_UNREACHABLE(); return 0;
    }
}

void rt_convert(ir_dtype from, const void *src, ir_dtype to, void *dst, size_t n)
{
    if (!ir_dtype_is_float(from)) { /* the wide integers, to and from i64 */
        for (size_t i = 0; i < n; i++)
            int_put(to, dst, i, int_at(from, src, i));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double x = float_at(from, src, i);
        switch (to) {
        case IR_F64: ((double *)dst)[i] = x; break;
        case IR_F32: ((float *)dst)[i] = (float)x; break;
        case IR_F16: ((uint16_t *)dst)[i] = f32_to_f16((float)x); break;
        case IR_BF16: ((uint16_t *)dst)[i] = f32_to_bf16((float)x); break;
        default: FR_UNREACHABLE();
        }
    }
}

/* ---- scratch buffers ---- */

void *rt_scratch_get(rt_buffers *scratch, rt_pool *pool, size_t nbytes)
{
    rt_buffer *b = rt_pool_get(pool, nbytes);
    if (!b)
        return NULL;
    vec_push(scratch, b);
    return b->data;
}

void rt_scratch_release(rt_buffers *scratch, rt_pool *pool)
{
    for (size_t i = 0; i < scratch->len; i++)
        rt_pool_release(pool, scratch->items[i]);
    scratch->len = 0;
}

/* ---- views and releasing values ---- */

bool rt_view_candidate(const ir_node *n)
{
    return (ir_op_info_get(n->op)->flags & IR_OPF_VIEW) && n->noutputs == 1 && n->inputs[0];
}

void rt_release_after(const ir_node *n, rt_buffers *scratch, rt_pool *pool, const rt_releaser *r)
{
    rt_scratch_release(scratch, pool);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        uint32_t *remaining = v && rt_first_read(n, i) ? r->remaining(r->user, v) : NULL;
        if (remaining && --*remaining == 0)
            r->release(r->user, v);
    }
    for (uint32_t k = 0; k < n->noutputs; k++)
        if (n->outputs[k]->nuses == 0)
            r->release(r->user, n->outputs[k]);
}

double rt_now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void rt_exec_begin(rt_exec *x, ir_graph *g, const rt_options *opts, rt_result *out, dg_context *dg)
{
    static const rt_options defaults = {0};
    *out = (rt_result){.arena = ar_new()};
    *x = (rt_exec){.g = g, .dg = dg, .opts = opts ? opts : &defaults, .res = out};
    size_t nvalues = g->values.len;
    x->saved = malloc((nvalues ? nvalues : 1) * sizeof *x->saved);
    x->symbols = malloc((g->symbols.len ? g->symbols.len : 1) * sizeof *x->symbols);
    FR_CHECK(x->saved && x->symbols);
    for (size_t i = 0; i < g->symbols.len; i++)
        x->symbols[i] = -1;
    ir_compute_uses(g);
    for (size_t i = 0; i < nvalues; i++) {
        FR_CHECK(g->values.items[i]->id == i);
        x->saved[i] = *g->values.items[i]->type;
    }
}

void rt_exec_end(rt_exec *x)
{
    for (size_t i = 0; i < x->g->values.len; i++)
        ir_value_set_type(x->g, x->g->values.items[i], &x->saved[i]);
    free(x->saved);
    free(x->symbols);
    vec_free(&x->kin);
    vec_free(&x->kout);
    vec_free(&x->scratch);
}

kn_call rt_exec_kernel_call(const rt_exec *x, const ir_node *n)
{
    return (kn_call){.graph = x->g,
                     .node = n,
                     .inputs = x->kin.items,
                     .ninputs = n->ninputs,
                     .outputs = x->kout.items,
                     .noutputs = n->noutputs,
                     .dg = x->dg};
}

bool rt_exec_bind_inputs(rt_exec *x, const rt_tensor *given, size_t ngiven,
                         bool (*bind)(void *user, ir_value *v, const rt_tensor *used), void *user)
{
    if (!rt_bind_inputs(x->g, x->dg, x->opts, x->symbols, x->res, given, ngiven))
        return false;
    for (size_t k = 0; k < x->g->inputs.len; k++)
        if (!bind(user, x->g->inputs.items[k], &x->res->inputs[k]))
            return false;
    return true;
}
