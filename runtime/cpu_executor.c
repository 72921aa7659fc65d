/* The CPU executor: runs a validated graph node by node in topological order.
 *
 * Shapes. Symbolic input dims are bound from the given tensors; every node's inference then runs
 * again on the bound, static types (small integer tensors and scalars computed at run time are
 * shown to it as constants, so Reshape or Expand fed by a Shape computation resolve too). The
 * graph's own types are restored afterwards: a run leaves the graph as it found it.
 *
 * Storage. Values live in their storage dtype. A node computes in f32, or in f64 when one of its
 * float operands is f64 (the f64 build of the kernels, kernels/cpu/f64_build.h); float operands of
 * another storage dtype are converted into scratch buffers before the kernel and its outputs
 * rounded back after it, exactly as a device with 16-bit storage and fp32 arithmetic would.
 *
 * Reference runs (rt_run_reference) hold every float value in f64 and run every node on the f64
 * kernels; only a Cast rounds, to the precision of its target dtype, since rounding is what it
 * computes.
 *
 * Memory. Node outputs come from a buffer pool; a value's buffer goes back to the pool once its
 * last consumer has run (graph outputs are kept), and views (Reshape, Squeeze, Identity, ...)
 * share their input's buffer instead of copying it. */
#include "runtime/runtime.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/kernels.h"
#include "runtime/exec_common.h"
#include "runtime/pool.h"

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
    rt_exec run;       /* the graph, options, result, saved types, symbols (exec_common.h) */
    slot *slots;       /* by value id */
    rt_pool pool;      /* node outputs and run.scratch's compute-type copies */
    bool reference;    /* every float value held and computed in f64 */
    bool node_f64;     /* the node being run computes in f64 */
} executor;

/* Reports a run-time error at [offset, offset + len) of the graph's source when it has one, else
 * naming the graph and `what` (a node or value name, or NULL). Always returns false. */
static bool report(executor *ex, size_t offset, size_t len, const char *what, const char *fmt,
                   va_list ap)
{
    const char *msg = ar_vprintf(ex->run.res->arena, fmt, ap);
    if (ex->run.g->src && len)
        dg_error(ex->run.dg, ex->run.g->src, offset, len, "%s", msg);
    else if (what)
        dg_error_path(ex->run.dg, ex->run.g->name, "node %s: %s", what, msg);
    else
        dg_error_path(ex->run.dg, ex->run.g->name, "%s", msg);
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
    report(ex, v->src_offset, ir_value_src_len(ex->run.g->src, v), NULL, fmt, ap);
    va_end(ap);
    return false;
}

static const char *type_str(executor *ex, const ir_type *t)
{
    char *buf = ar_alloc(ex->run.res->arena, 160);
    return ir_type_format(ex->run.g, t, buf, 160);
}

/* ---- storage conversion ---- */

/* Integer storage dtypes the kernels do not take: they compute as i64. */
static bool is_wide_int(ir_dtype dt)
{
    return dt == IR_I16 || dt == IR_U16 || dt == IR_U32 || dt == IR_U64;
}

/* The dtype a node's kernel sees an operand stored as dt in: floats in the node's compute dtype
 * (f32, or f64), i16/u16/u32/u64 as i64, the others as they are. */
static ir_dtype kernel_dtype(const executor *ex, ir_dtype dt)
{
    if (ir_dtype_is_float(dt))
        return ex->node_f64 ? IR_F64 : IR_F32;
    return is_wide_int(dt) ? IR_I64 : dt;
}

/* Whether a value stored as dt must be converted for the node's kernel. */
static bool converts(const executor *ex, ir_dtype dt) { return kernel_dtype(ex, dt) != dt; }

/* x rounded to the nearest value of float dtype dt. */
static double round_to(ir_dtype dt, double x)
{
    switch (dt) {
    case IR_F32: return (float)x;
    case IR_F16: return f16_to_f32(f32_to_f16((float)x));
    case IR_BF16: return bf16_to_f32(f32_to_bf16((float)x));
    default: return x;
    }
}

/* The dtype a value of dtype dt is held in during this run. */
static ir_dtype held_dtype(const executor *ex, ir_dtype dt)
{
    return ex->reference && ir_dtype_is_float(dt) ? IR_F64 : dt;
}

/* ---- binding inputs ---- */

/* In a reference run, replaces a float slot's data by an f64 copy (in the result's arena, freed
 * with it). False after reporting when the copy cannot be allocated. */
static bool hold(executor *ex, ir_value *v, slot *s)
{
    ir_dtype dt = held_dtype(ex, s->type.dtype);
    if (dt == s->type.dtype)
        return true;
    size_t n = s->nbytes / ir_dtype_size(s->type.dtype);
    void *copy = n ? ar_try_alloc(ex->run.res->arena, n * sizeof(double)) : NULL;
    if (n && !copy)
        return error_value(ex, v, "out of memory for the f64 copy of '%s' (%zu values)", v->name,
                           n);
    rt_convert(s->type.dtype, s->data, IR_F64, copy, n);
    s->type.dtype = dt;
    s->data = copy ? copy : s->data;
    s->nbytes = n * sizeof(double);
    return true;
}

/* Makes graph input v's bound tensor the data of its slot (rt_exec_bind_inputs). */
static bool bind_input(void *user, ir_value *v, const rt_tensor *used)
{
    executor *ex = user;
    slot *s = &ex->slots[v->id];
    s->type = used->type;
    s->data = used->data;
    s->nbytes = used->nbytes;
    return hold(ex, v, s);
}

/* ---- values' bytes ---- */

/* v's data in its storage dtype, a constant's read on first use; NULL when v is not defined
 * yet, or after reporting a constant that could not be read. */
static const void *value_data(executor *ex, ir_value *v)
{
    slot *s = &ex->slots[v->id];
    if (!s->data && v->kind == IR_VALUE_CONST) {
        s->data = ir_const_data(ex->run.g, v, ex->run.dg);
        s->type = *v->type;
        int64_t nbytes = 0;
        FR_CHECK(!s->data || ir_type_nbytes(v->type, &nbytes));
        s->nbytes = (size_t)nbytes;
        if (s->data && !hold(ex, v, s))
            s->data = NULL;
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
    executor *ex = user;
    const void *data = value_data(ex, v);
    const slot *s = &ex->slots[v->id];
    *nbytes = s->nbytes;
    if (!data || !reader || s->type.dtype == v->type->dtype)
        return data;
    /* a reference run shows inference a float scalar in its graph dtype, as it would see it */
    size_t n = s->nbytes / sizeof(double);
    void *copy = ar_alloc(ex->run.res->arena, n * ir_dtype_size(v->type->dtype) + 1);
    rt_convert(IR_F64, data, v->type->dtype, copy, n);
    *nbytes = n * ir_dtype_size(v->type->dtype);
    return copy;
}

/* Runs n's inference on the run-time types of its inputs and sizes its outputs' slots. */
static bool infer_node(executor *ex, ir_node *n)
{
    rt_value_source src = {defined_type, host_data, ex};
    ir_value *unknown = NULL;
    switch (rt_infer_node(ex->run.g, n, ex->run.dg, &src, &unknown)) {
    case RT_INFER_FAILED: return false;
    case RT_INFER_UNKNOWN:
        return error_at(ex, n, "%s: the shape of '%s' is not known at run time (%s)",
                        ir_op_name(n->op), unknown->name, type_str(ex, unknown->type));
    case RT_INFER_OK: break;
    }
    for (uint32_t k = 0; k < n->noutputs; k++) {
        ir_value *v = n->outputs[k];
        slot *s = &ex->slots[v->id];
        s->type = *v->type;
        s->type.dtype = held_dtype(ex, v->type->dtype);
        int64_t nbytes = 0;
        FR_CHECK(ir_type_nbytes(&s->type, &nbytes));
        s->nbytes = (size_t)nbytes;
    }
    return true;
}

/* ---- running a node ---- */

static kn_tensor kernel_view(const ir_type *t, void *data)
{
    return rt_tensor_view(t, data,
                          ir_dtype_is_float(t->dtype) ? IR_F32
                          : is_wide_int(t->dtype)     ? IR_I64
                                                      : t->dtype);
}

/* A scratch buffer of `numel` values of dtype dt, released after the node. */
static void *scratch(executor *ex, const ir_node *n, ir_dtype dt, int64_t numel)
{
    void *data = rt_scratch_get(&ex->run.scratch, &ex->pool, (size_t)numel * ir_dtype_size(dt));
    if (!data)
        error_at(ex, n, "out of memory for %lld %s values", (long long)numel, ir_dtype_name(dt));
    return data;
}

static bool prepare_inputs(executor *ex, ir_node *n)
{
    ex->run.kin.len = 0;
    vec_reserve(&ex->run.kin, n->ninputs);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        kn_tensor t = {.dtype = IR_DTYPE_UNKNOWN};
        if (v) {
            const void *data = value_data(ex, v);
            if (!data)
                return false;
            const slot *s = &ex->slots[v->id];
            t = kernel_view(&s->type, (void *)data);
            if (converts(ex, s->type.dtype)) {
                ir_dtype kdt = kernel_dtype(ex, s->type.dtype);
                if (!(t.data = scratch(ex, n, kdt, t.numel)))
                    return false;
                rt_convert(s->type.dtype, data, kdt, t.data, (size_t)t.numel);
            }
        }
        ex->run.kin.items[ex->run.kin.len++] = t;
    }
    return true;
}

static bool prepare_outputs(executor *ex, ir_node *n)
{
    ex->run.kout.len = 0;
    vec_reserve(&ex->run.kout, n->noutputs);
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        s->buf = rt_pool_get(&ex->pool, s->nbytes);
        if (!s->buf)
            return error_at(ex, n, "out of memory for '%s' (%zu bytes)", n->outputs[k]->name,
                            s->nbytes);
        s->data = s->buf->data;
        kn_tensor t = kernel_view(&s->type, s->buf->data);
        if (converts(ex, s->type.dtype) &&
            !(t.data = scratch(ex, n, kernel_dtype(ex, s->type.dtype), t.numel)))
            return false;
        ex->run.kout.items[ex->run.kout.len++] = t;
    }
    return true;
}

/* Rounds outputs from the kernel's compute dtype into their storage; in a reference run, a Cast's
 * float output is rounded to its target dtype and held in f64 again. */
static void store_outputs(executor *ex, ir_node *n)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        size_t count = (size_t)ex->run.kout.items[k].numel;
        if (converts(ex, s->type.dtype))
            rt_convert(kernel_dtype(ex, s->type.dtype), ex->run.kout.items[k].data, s->type.dtype,
                       s->buf->data, count);
        ir_dtype target = n->outputs[k]->type->dtype;
        if (ex->reference && n->op == IR_OP_Cast && ir_dtype_is_float(target) &&
            target != IR_F64)
            for (size_t i = 0; i < count; i++) {
                double *y = s->buf->data;
                y[i] = round_to(target, y[i]);
            }
    }
}

/* A view op's output shares its input's bytes (same dtype, same size, contiguous). */
static bool try_view(executor *ex, ir_node *n)
{
    if (!rt_view_candidate(n))
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

static void release_value(void *user, ir_value *v)
{
    executor *ex = user;
    slot *s = &ex->slots[v->id];
    if (s->buf && !v->is_output) {
        rt_pool_release(&ex->pool, s->buf);
        s->buf = NULL;
        s->data = NULL;
    }
}

/* Every value is counted down (inputs and constants hold no pool buffer to give back). */
static uint32_t *remaining_readers(void *user, const ir_value *v)
{
    return &((executor *)user)->slots[v->id].remaining;
}

/* After n has run: scratch goes back, and so do inputs whose last consumer n was and outputs that
 * nothing reads. */
static void release_after(executor *ex, ir_node *n)
{
    rt_releaser r = {remaining_readers, release_value, ex};
    rt_release_after(n, &ex->run.scratch, &ex->pool, &r);
}

/* Whether n computes in f64: in a reference run, or when a float operand is stored as f64. */
static bool computes_f64(executor *ex, const ir_node *n)
{
    if (ex->reference)
        return true;
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (n->inputs[i] && n->inputs[i]->type->dtype == IR_F64)
            return true;
    for (uint32_t k = 0; k < n->noutputs; k++)
        if (n->outputs[k]->type->dtype == IR_F64)
            return true;
    return false;
}

static bool run_node(executor *ex, ir_node *n)
{
    if (!infer_node(ex, n))
        return false;
    ex->node_f64 = computes_f64(ex, n);
    bool timed = ex->run.opts->time;
    double start = timed ? rt_now(CLOCK_MONOTONIC) : 0;
    double cpu_start = timed ? rt_now(CLOCK_PROCESS_CPUTIME_ID) : 0;
    if (!try_view(ex, n)) {
        for (uint32_t k = 0; k < n->noutputs; k++)
            ex->run.res->memory.intermediate_bytes += ex->slots[n->outputs[k]->id].nbytes;
        if (!prepare_inputs(ex, n) || !prepare_outputs(ex, n))
            return false;
        kn_call call = rt_exec_kernel_call(&ex->run, n);
        if (!(ex->node_f64 ? kn_cpu_get_f64 : kn_cpu_get)(n->op)(&call))
            return false;
        store_outputs(ex, n);
    }
    if (timed) {
        rt_op_time *t = &ex->run.times[n->op];
        t->op = n->op;
        t->calls++;
        t->seconds += rt_now(CLOCK_MONOTONIC) - start;
        t->cpu_seconds += rt_now(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    }
    release_after(ex, n);
    return true;
}

/* ---- results ---- */

static bool output_oom(void *user, const ir_value *v)
{
    return error_value(user, v, "out of memory for output '%s'", v->name);
}

static bool collect_outputs(executor *ex)
{
    rt_value_source src = {defined_type, host_data, ex};
    return rt_collect_outputs(ex->run.g, ex->run.res, &src, output_oom);
}

/* Every buffer still held (graph outputs) goes back, and the pool is emptied. */
static void teardown(executor *ex)
{
    ir_graph *g = ex->run.g;
    for (size_t i = 0; i < g->values.len; i++) {
        slot *s = &ex->slots[i];
        if (s->buf)
            rt_pool_release(&ex->pool, s->buf);
        s->buf = NULL;
    }
    rt_scratch_release(&ex->run.scratch, &ex->pool);
    ex->run.res->memory.peak_bytes = ex->pool.peak;
    ex->run.res->memory.allocations = ex->pool.allocations;
    ex->run.res->memory.reuses = ex->pool.reuses;
    rt_pool_free(&ex->pool);
    FR_CHECK(ex->pool.held == 0); /* every buffer came back: the reference counts balance */
    free(ex->slots);
    rt_exec_end(&ex->run);
}

/* Reads every constant a live node uses, so that a constant that cannot be read is reported before
 * any input is generated (an 8 GiB input is not filled to learn that a weight file is missing). */
static bool read_constants(executor *ex)
{
    bool ok = true;
    for (size_t i = 0; i < ex->run.g->nodes.len; i++) {
        ir_node *n = ex->run.g->nodes.items[i];
        for (uint32_t k = 0; !n->dead && k < n->ninputs; k++) {
            ir_value *v = n->inputs[k];
            if (v && v->kind == IR_VALUE_CONST && !ex->slots[v->id].data)
                ok &= ir_const_data(ex->run.g, v, ex->run.dg) != NULL;
        }
    }
    return ok;
}

static bool run(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                bool reference, rt_result *out, dg_context *dg)
{
    executor ex = {.reference = reference};
    rt_exec_begin(&ex.run, g, opts, out, dg);
    size_t nvalues = g->values.len;
    ex.slots = calloc(nvalues ? nvalues : 1, sizeof *ex.slots);
    FR_CHECK(ex.slots);
    for (size_t i = 0; i < nvalues; i++)
        ex.slots[i].remaining = g->values.items[i]->nuses;
    bool ok = read_constants(&ex) &&
              rt_check_budget(g, inputs, ninputs, ex.run.opts, reference, dg) &&
              rt_exec_bind_inputs(&ex.run, inputs, ninputs, bind_input, &ex);
    for (size_t i = 0; ok && i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead)
            ok = run_node(&ex, g->nodes.items[i]);
    ok = ok && collect_outputs(&ex);
    if (ok && ex.run.opts->time)
        rt_collect_times(out, ex.run.times);
    teardown(&ex);
    if (!ok)
        rt_result_free(out);
    return ok;
}

bool rt_run_cpu(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                rt_result *out, dg_context *dg)
{
    return run(g, inputs, ninputs, opts, false, out, dg);
}

bool rt_run_reference(ir_graph *g, const rt_tensor *inputs, size_t ninputs,
                      const rt_options *opts, rt_result *out, dg_context *dg)
{
    return run(g, inputs, ninputs, opts, true, out, dg);
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
    case IR_F64: {
        double d;
        memcpy(&d, p, sizeof d);
        return d;
    }
    case IR_I8: return *(const int8_t *)p;
    case IR_U8: return *p;
    case IR_BOOL: return *p != 0;
    case IR_I16: {
        int16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case IR_U16: {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case IR_U32: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case IR_U64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return (double)v;
    }
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
