/* The CPU executor: runs a validated graph node by node in topological order.
 *
 * Shapes. Symbolic input dims are bound from the given tensors; every node's inference then runs
 * again on the bound, static types (small integer tensors and scalars computed at run time are
 * shown to it as constants, so Reshape or Expand fed by a Shape computation resolve too). The
 * graph's own types are restored afterwards: a run leaves the graph as it found it.
 *
 * Storage. Values live in their storage dtype; kernels compute in f32, so f16/bf16 inputs are
 * widened into scratch buffers before a kernel and its outputs rounded back after it, exactly as
 * a device with 16-bit storage and fp32 arithmetic would.
 *
 * Memory. Node outputs come from a buffer pool; a value's buffer goes back to the pool once its
 * last consumer has run (graph outputs are kept), and views (Reshape, Squeeze, Identity, ...)
 * share their input's buffer instead of copying it. */
#include "runtime/runtime.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/kernels.h"
#include "runtime/inputs.h"
#include "runtime/pool.h"
#include "runtime/exec_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where a value's bytes are during a run. */
typedef struct slot {
    ir_type type;       /* static once defined */
    const void *data;   /* in the storage dtype; NULL until defined or after release */
    size_t nbytes;
    rt_buffer *buf;     /* the pool buffer holding data; NULL for inputs and constants */
    uint32_t remaining; /* consumers that have not run yet */
} slot;

typedef struct executor {
    ir_graph *g;
    dg_context *dg;
    const rt_options *opts;
    rt_result *res;
    slot *slots;       /* by value id */
    ir_type *saved;    /* every value's type before the run */
    int64_t *symbols;  /* per graph symbol: its bound size, or -1 */
    rt_pool pool;
    VEC(kn_tensor) kin, kout;
    VEC(rt_buffer *) scratch; /* f32 copies of one node's 16-bit operands */
    rt_op_time times[IR_OP_COUNT];
} executor;

/* Reports a run-time error at [offset, offset + len) of the graph's source when it has one, else
 * naming the graph and `what` (a node or value name, or NULL). Always returns false. */
static bool report(executor *ex, size_t offset, size_t len, const char *what, const char *fmt,
                   va_list ap)
{
    const char *msg = ar_vprintf(ex->res->arena, fmt, ap);
    if (ex->g->src && len)
        dg_error(ex->dg, ex->g->src, offset, len, "%s", msg);
    else if (what)
        dg_error_path(ex->dg, ex->g->name, "node %s: %s", what, msg);
    else
        dg_error_path(ex->dg, ex->g->name, "%s", msg);
    return false;
}

static bool error_at(executor *ex, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool error_value(executor *ex, const ir_value *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error located at node n. */
static bool error_at(executor *ex, const ir_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(ex, n->src_offset, n->src_len, n->outputs[0]->name, fmt, ap);
    va_end(ap);
    return false;
}

/* An error about graph input v, located at its declaration. */
static bool error_value(executor *ex, const ir_value *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(ex, v->src_offset, v->src_len, NULL, fmt, ap);
    va_end(ap);
    return false;
}

static const char *type_str(executor *ex, const ir_type *t)
{
    char *buf = ar_alloc(ex->res->arena, 160);
    return ir_type_format(ex->g, t, buf, 160);
}

/* ---- storage conversion ---- */

static bool is_half(ir_dtype dt) { return dt == IR_F16 || dt == IR_BF16; }

static void widen(ir_dtype dt, const void *src, float *dst, size_t n)
{
    const uint16_t *s = src;
    if (dt == IR_F16)
        for (size_t i = 0; i < n; i++)
            dst[i] = f16_to_f32(s[i]);
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = bf16_to_f32(s[i]);
}

static void narrow(ir_dtype dt, const float *src, void *dst, size_t n)
{
    uint16_t *d = dst;
    if (dt == IR_F16)
        for (size_t i = 0; i < n; i++)
            d[i] = f32_to_f16(src[i]);
    else
        for (size_t i = 0; i < n; i++)
            d[i] = f32_to_bf16(src[i]);
}

/* ---- binding inputs ---- */

/* Binds the inputs (runtime/inputs.h) and makes each the data of its slot. */
static bool bind_inputs(executor *ex, const rt_tensor *given, size_t ngiven)
{
    if (!rt_bind_inputs(ex->g, ex->dg, ex->opts, ex->symbols, ex->res, given, ngiven))
        return false;
    for (size_t k = 0; k < ex->g->inputs.len; k++) {
        const rt_tensor *used = &ex->res->inputs[k];
        slot *s = &ex->slots[ex->g->inputs.items[k]->id];
        s->type = used->type;
        s->data = used->data;
        s->nbytes = used->nbytes;
    }
    return true;
}

/* ---- values' bytes ---- */

/* v's data in its storage dtype, a constant's read on first use; NULL when v is not defined
 * yet, or after reporting a constant that could not be read. */
static const void *value_data(executor *ex, ir_value *v)
{
    slot *s = &ex->slots[v->id];
    if (!s->data && v->kind == IR_VALUE_CONST) {
        s->data = ir_const_data(ex->g, v, ex->dg);
        s->type = v->type;
        int64_t nbytes = 0;
        FR_CHECK(!s->data || ir_type_nbytes(&v->type, &nbytes));
        s->nbytes = (size_t)nbytes;
    }
    return s->data;
}

/* ---- shapes at run time (runtime/exec_common.h) ---- */

static const ir_type *defined_type(void *user, const ir_value *v)
{
    const slot *s = &((executor *)user)->slots[v->id];
    return s->data ? &s->type : NULL;
}

static const void *host_data(void *user, ir_value *v, const ir_node *reader, size_t *nbytes)
{
    (void)reader;
    executor *ex = user;
    const void *data = value_data(ex, v);
    *nbytes = ex->slots[v->id].nbytes;
    return data;
}

/* Runs n's inference on the run-time types of its inputs and sizes its outputs' slots. */
static bool infer_node(executor *ex, ir_node *n)
{
    rt_value_source src = {defined_type, host_data, ex};
    ir_value *unknown = NULL;
    switch (rt_infer_node(ex->g, n, ex->dg, &src, &unknown)) {
    case RT_INFER_FAILED: return false;
    case RT_INFER_UNKNOWN:
        return error_at(ex, n, "%s: the shape of '%s' is not known at run time (%s)",
                        ir_op_name(n->op), unknown->name, type_str(ex, &unknown->type));
    case RT_INFER_OK: break;
    }
    for (uint32_t k = 0; k < n->noutputs; k++) {
        ir_value *v = n->outputs[k];
        int64_t nbytes = 0;
        FR_CHECK(ir_type_nbytes(&v->type, &nbytes));
        ex->slots[v->id].type = v->type;
        ex->slots[v->id].nbytes = (size_t)nbytes;
    }
    return true;
}

/* ---- running a node ---- */

static kn_tensor kernel_view(const ir_type *t, void *data)
{
    kn_tensor k = {.dtype = ir_dtype_is_float(t->dtype) ? IR_F32 : t->dtype, .rank = t->rank,
                   .data = data};
    memcpy(k.dims, t->dims, sizeof k.dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(t, &k.numel));
    return k;
}

/* An f32 scratch buffer of `numel` elements, released after the node. */
static float *scratch_f32(executor *ex, const ir_node *n, int64_t numel)
{
    rt_buffer *b = rt_pool_get(&ex->pool, (size_t)numel * sizeof(float));
    if (!b) {
        error_at(ex, n, "out of memory for %lld f32 values", (long long)numel);
        return NULL;
    }
    vec_push(&ex->scratch, b);
    return b->data;
}

static bool prepare_inputs(executor *ex, ir_node *n)
{
    ex->kin.len = 0;
    vec_reserve(&ex->kin, n->ninputs);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        kn_tensor t = {.dtype = IR_DTYPE_UNKNOWN};
        if (v) {
            const void *data = value_data(ex, v);
            if (!data)
                return false;
            const slot *s = &ex->slots[v->id];
            t = kernel_view(&s->type, (void *)data);
            if (is_half(s->type.dtype)) {
                if (!(t.data = scratch_f32(ex, n, t.numel)))
                    return false;
                widen(s->type.dtype, data, t.data, (size_t)t.numel);
            }
        }
        ex->kin.items[ex->kin.len++] = t;
    }
    return true;
}

static bool prepare_outputs(executor *ex, ir_node *n)
{
    ex->kout.len = 0;
    vec_reserve(&ex->kout, n->noutputs);
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        s->buf = rt_pool_get(&ex->pool, s->nbytes);
        if (!s->buf)
            return error_at(ex, n, "out of memory for '%s' (%zu bytes)", n->outputs[k]->name,
                            s->nbytes);
        s->data = s->buf->data;
        kn_tensor t = kernel_view(&s->type, s->buf->data);
        if (is_half(s->type.dtype) && !(t.data = scratch_f32(ex, n, t.numel)))
            return false;
        ex->kout.items[ex->kout.len++] = t;
    }
    return true;
}

/* Rounds 16-bit outputs from the kernel's f32 into their storage. */
static void store_outputs(executor *ex, ir_node *n)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (is_half(s->type.dtype))
            narrow(s->type.dtype, ex->kout.items[k].data, s->buf->data,
                   (size_t)ex->kout.items[k].numel);
    }
}

/* A view op's output shares its input's bytes (same dtype, same size, contiguous). */
static bool try_view(executor *ex, ir_node *n)
{
    if (!(ir_op_info_get(n->op)->flags & IR_OPF_VIEW) || n->noutputs != 1 || !n->inputs[0])
        return false;
    ir_value *in = n->inputs[0];
    slot *si = &ex->slots[in->id], *so = &ex->slots[n->outputs[0]->id];
    if (!value_data(ex, in) || si->type.dtype != so->type.dtype || si->nbytes != so->nbytes)
        return false;
    so->data = si->data;
    so->buf = si->buf;
    if (so->buf)
        so->buf->refs++;
    return true;
}

static void release_value(executor *ex, ir_value *v)
{
    slot *s = &ex->slots[v->id];
    if (s->buf && !v->is_output) {
        rt_pool_release(&ex->pool, s->buf);
        s->buf = NULL;
        s->data = NULL;
    }
}

/* After n has run: scratch goes back, and so do inputs whose last consumer n was and outputs that
 * nothing reads. */
static void release_after(executor *ex, ir_node *n)
{
    for (size_t i = 0; i < ex->scratch.len; i++)
        rt_pool_release(&ex->pool, ex->scratch.items[i]);
    ex->scratch.len = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        if (v && rt_first_read(n, i) && --ex->slots[v->id].remaining == 0)
            release_value(ex, v);
    }
    for (uint32_t k = 0; k < n->noutputs; k++)
        if (n->outputs[k]->nuses == 0)
            release_value(ex, n->outputs[k]);
}

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool run_node(executor *ex, ir_node *n)
{
    if (!infer_node(ex, n))
        return false;
    bool timed = ex->opts->time;
    double start = timed ? now(CLOCK_MONOTONIC) : 0;
    double cpu_start = timed ? now(CLOCK_PROCESS_CPUTIME_ID) : 0;
    if (!try_view(ex, n)) {
        for (uint32_t k = 0; k < n->noutputs; k++)
            ex->res->memory.intermediate_bytes += ex->slots[n->outputs[k]->id].nbytes;
        if (!prepare_inputs(ex, n) || !prepare_outputs(ex, n))
            return false;
        kn_call call = {.graph = ex->g, .node = n, .inputs = ex->kin.items,
                        .ninputs = n->ninputs, .outputs = ex->kout.items,
                        .noutputs = n->noutputs, .dg = ex->dg};
        if (!kn_cpu_get(n->op)(&call))
            return false;
        store_outputs(ex, n);
    }
    if (timed) {
        rt_op_time *t = &ex->times[n->op];
        t->op = n->op;
        t->calls++;
        t->seconds += now(CLOCK_MONOTONIC) - start;
        t->cpu_seconds += now(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    }
    release_after(ex, n);
    return true;
}

/* ---- results ---- */

static bool collect_outputs(executor *ex)
{
    rt_value_source src = {defined_type, host_data, ex};
    const ir_value *oom = NULL;
    if (rt_collect_outputs(ex->g, ex->res, &src, &oom))
        return true;
    return oom ? error_value(ex, oom, "out of memory for output '%s'", oom->name) : false;
}

/* Every buffer still held (graph outputs) goes back, and the pool is emptied. */
static void teardown(executor *ex)
{
    ir_graph *g = ex->g;
    for (size_t i = 0; i < g->values.len; i++) {
        slot *s = &ex->slots[i];
        if (s->buf)
            rt_pool_release(&ex->pool, s->buf);
        s->buf = NULL;
    }
    for (size_t i = 0; i < ex->scratch.len; i++)
        rt_pool_release(&ex->pool, ex->scratch.items[i]);
    ex->res->memory.peak_bytes = ex->pool.peak;
    ex->res->memory.allocations = ex->pool.allocations;
    ex->res->memory.reuses = ex->pool.reuses;
    rt_pool_free(&ex->pool);
    FR_CHECK(ex->pool.held == 0); /* every buffer came back: the reference counts balance */
    for (size_t i = 0; i < g->values.len; i++)
        g->values.items[i]->type = ex->saved[i];
    free(ex->slots);
    free(ex->saved);
    free(ex->symbols);
    vec_free(&ex->kin);
    vec_free(&ex->kout);
    vec_free(&ex->scratch);
}

bool rt_run_cpu(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                rt_result *out, dg_context *dg)
{
    static const rt_options defaults = {0};
    *out = (rt_result){.arena = ar_new()};
    executor ex = {.g = g, .dg = dg, .opts = opts ? opts : &defaults, .res = out};
    size_t nvalues = g->values.len;
    ex.slots = calloc(nvalues ? nvalues : 1, sizeof *ex.slots);
    ex.saved = malloc((nvalues ? nvalues : 1) * sizeof *ex.saved);
    ex.symbols = malloc((g->symbols.len ? g->symbols.len : 1) * sizeof *ex.symbols);
    FR_CHECK(ex.slots && ex.saved && ex.symbols);
    for (size_t i = 0; i < g->symbols.len; i++)
        ex.symbols[i] = -1;
    ir_compute_uses(g);
    for (size_t i = 0; i < nvalues; i++) {
        FR_CHECK(g->values.items[i]->id == i);
        ex.saved[i] = g->values.items[i]->type;
        ex.slots[i].remaining = g->values.items[i]->nuses;
    }
    bool ok = bind_inputs(&ex, inputs, ninputs);
    for (size_t i = 0; ok && i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead)
            ok = run_node(&ex, g->nodes.items[i]);
    ok = ok && collect_outputs(&ex);
    if (ok && ex.opts->time)
        rt_collect_times(out, ex.times);
    teardown(&ex);
    if (!ok)
        rt_result_free(out);
    return ok;
}

void rt_result_free(rt_result *r)
{
    if (r->arena)
        ar_free(r->arena);
    *r = (rt_result){0};
}

const rt_tensor *rt_result_find(const rt_result *r, const char *name)
{
    for (size_t i = 0; i < r->noutputs; i++)
        if (strcmp(r->outputs[i].name, name) == 0)
            return &r->outputs[i];
    for (size_t i = 0; i < r->ninputs; i++)
        if (strcmp(r->inputs[i].name, name) == 0)
            return &r->inputs[i];
    return NULL;
}

size_t rt_tensor_numel(const rt_tensor *t)
{
    size_t size = ir_dtype_size(t->type.dtype);
    return size ? t->nbytes / size : 0;
}

double rt_tensor_get(const rt_tensor *t, size_t i)
{
    const unsigned char *p = (const unsigned char *)t->data + i * ir_dtype_size(t->type.dtype);
    switch (t->type.dtype) {
    case IR_F32: {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    case IR_F16:
    case IR_BF16: {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return t->type.dtype == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    case IR_I8: return *(const int8_t *)p;
    case IR_U8: return *p;
    case IR_BOOL: return *p != 0;
    case IR_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case IR_I64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (double)v;
    }
    default: FR_UNREACHABLE();
    }
    return 0;
}
