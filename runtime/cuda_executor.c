/* The CUDA executor: runs a validated graph with the CUDA kernels of kernels/cuda/.
 *
 * Placement. A node runs on the GPU when a CUDA kernel supports it: kn_supports(..., KN_BACKEND_CUDA,
 * ...) for the fused ops, kn_cuda_onnx_supports for plain ONNX ops (docs/cuda.md, "Plain ONNX
 * ops"). The answer given on the graph's types, which may be symbolic, is asked again on each
 * run's static shapes after inference; a node no kernel supports
 * runs on its CPU reference kernel, its operands downloaded and its results uploaded again only
 * when a GPU node reads them, and the result lists it with the reason (rt_result.fallbacks). Each
 * value has a host copy, a device copy or both, and is moved only when the other side needs it.
 *
 * Memory. Device buffers come from a pool: a value's buffer returns to it once its last consumer
 * has run, and serves a later request of a similar size (best fit, at most twice the request).
 * Constants (weights) and graph inputs are uploaded once, at first use, and stay on the device for
 * every run of the executor (rt_cuda_time runs it many times). Views share their input's buffer.
 *
 * One stream; every CUDA, cuDNN, cuBLASLt and NVRTC call is checked by the kernels (KC_CHECK) and
 * a failure is reported here, located at the node. rt_cuda_time can capture a whole run as a CUDA
 * graph (every node must then be on the GPU) and replay it.
 *
 * Files (runtime/cuda_internal.h declares what they share): this one holds the driver (setup,
 * placement, the run loop, release, timing) and the errors; cuda_pool.c the device pool;
 * cuda_transfer.c the values' host and device copies; cuda_launch.c launches a GPU node through
 * the registry's CUDA column (kn_cuda_get: every op's launch is in kernels/cuda/launch_*.c),
 * giving it hooks to the values; cuda_fallback.c runs a node on its CPU kernel. */
#include "runtime/runtime.h"

#ifndef FR_HAVE_CUDA

bool rt_cuda_available(char *why, size_t size)
{
    snprintf(why, size,
             "this build has no CUDA backend (no CUDA compiler was found when it was "
             "configured)");
    return false;
}

bool rt_run_cuda(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                 rt_result *out, dg_context *dg)
{
    *out = (rt_result){0};
    dg_error_path(dg, g->name,
                  "this build has no CUDA backend (no CUDA compiler was found when "
                  "it was configured)");
    return false;
}

bool rt_cuda_time(ir_graph *g, const rt_options *opts, int iters, bool cuda_graph, double *ms,
                  dg_context *dg)
{
    dg_error_path(dg, g->name, "this build has no CUDA backend");
    return false;
}

#else

#include "base/check.h"
#include "runtime/cuda_internal.h"
#include "runtime/exec_common.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

/* ---- errors ---- */

/* An error located at node n (or at the graph when n is NULL). Always returns false. */
bool rt_cu_report(executor *ex, const ir_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(ex->run.res->arena, fmt, ap);
    va_end(ap);
    if (n && ex->run.g->src && n->src_len)
        dg_error(ex->run.dg, ex->run.g->src, n->src_offset, n->src_len, "%s", msg);
    else if (n)
        dg_error_path(ex->run.dg, ex->run.g->name, "node %s: %s", n->outputs[0]->name, msg);
    else
        dg_error_path(ex->run.dg, ex->run.g->name, "%s", msg);
    return false;
}

bool rt_cu_failed(executor *ex, const ir_node *n)
{
    return rt_cu_report(ex, n, "CUDA: %s", kc_last_error(ex->kc));
}

/* ---- shapes at run time (runtime/exec_common.h) ---- */

static const ir_type *defined_type(void *user, const ir_value *v)
{
    const slot *s = &((executor *)user)->slots[v->id];
    return s->host || s->dev ? &s->type : NULL;
}

static const void *host_data(void *user, ir_value *v, const ir_node *reader, size_t *nbytes)
{
    executor *ex = user;
    const void *data = rt_cu_ensure_host(ex, v, reader);
    *nbytes = ex->slots[v->id].nbytes;
    return data;
}

/* Runs n's inference on the run-time types of its inputs and sizes its outputs' slots. */
bool rt_cu_infer_node(executor *ex, ir_node *n)
{
    rt_value_source src = {defined_type, host_data, ex};
    ir_value *unknown = NULL;
    switch (rt_infer_node(ex->run.g, n, ex->run.dg, &src, &unknown)) {
    case RT_INFER_FAILED: return false;
    case RT_INFER_UNKNOWN:
        return rt_cu_report(ex, n, "%s: the shape of '%s' is not known at run time",
                            ir_op_name(n->op), unknown->name);
    case RT_INFER_OK: break;
    }
    for (uint32_t k = 0; k < n->noutputs; k++) {
        ir_value *v = n->outputs[k];
        int64_t nbytes = 0;
        FR_CHECK(ir_type_nbytes(v->type, &nbytes));
        ex->slots[v->id].type = *v->type;
        ex->slots[v->id].nbytes = (size_t)nbytes;
    }
    return true;
}

/* ---- running ---- */

/* A view's output shares its input's buffers. */
static bool try_view(executor *ex, ir_node *n)
{
    if (!rt_view_candidate(n))
        return false;
    ir_value *in = n->inputs[0];
    slot *si = &ex->slots[in->id], *so = &ex->slots[n->outputs[0]->id];
    if (!si->host && !si->dev && in->kind == IR_VALUE_CONST && !rt_cu_ensure_host(ex, in, n))
        return false;
    if (si->type.dtype != so->type.dtype || si->nbytes != so->nbytes)
        return false;
    so->host = si->host;
    so->hbuf = si->hbuf;
    if (so->hbuf)
        so->hbuf->refs++;
    so->dev = si->dev;
    if (so->dev)
        so->dev->refs++;
    so->persistent = false; /* a reference to the input's buffer, dropped when released */
    return true;
}

static void release_value(executor *ex, ir_value *v, bool end_of_run)
{
    slot *s = &ex->slots[v->id];
    if (v->is_output && !end_of_run)
        return;
    if (s->hbuf) {
        rt_pool_release(&ex->hpool, s->hbuf);
        s->hbuf = NULL;
        s->host = NULL;
    }
    if (s->dev && !s->persistent) {
        rt_cu_dpool_release(ex, s->dev);
        s->dev = NULL;
    }
    if (v->kind == IR_VALUE_NODE)
        s->host = NULL;
}

/* Node outputs are counted down; inputs and constants keep their copies for the next run. */
static uint32_t *remaining_readers(void *user, const ir_value *v)
{
    return v->kind == IR_VALUE_NODE ? &((executor *)user)->slots[v->id].remaining : NULL;
}

static void release_read(void *user, ir_value *v)
{
    release_value(user, v, false);
}

static void release_after(executor *ex, ir_node *n)
{
    rt_releaser r = {remaining_readers, release_read, ex};
    rt_release_after(n, &ex->run.scratch, &ex->hpool, &r);
}

/* Whether a CUDA kernel runs n as its types now are; why not in why (KN_WHY_SIZE). */
static bool gpu_can_run(const executor *ex, const ir_node *n, char *why)
{
    if (kn_fused_entry_get(n->op))
        return kn_supports(ex->run.g, n, KN_BACKEND_CUDA, why);
    return kn_cuda_onnx_supports(ex->run.g, n, why);
}

/* Placement on the run's static shapes: a node placed on the GPU for the graph's (possibly
 * symbolic) types whose kernel refuses the real ones (an int8 K not a multiple of 4, a head dim
 * above 128, ...) runs on the CPU instead of failing in the kernel. */
static void recheck_placement(executor *ex, const ir_node *n)
{
    char why[KN_WHY_SIZE];
    if (ex->on_gpu[n->id] && !gpu_can_run(ex, n, why)) {
        ex->on_gpu[n->id] = false;
        ex->cpu_why[n->id] = ar_printf(ex->run.res->arena, "on the run's shapes: %s", why);
    }
}

static bool run_node(executor *ex, ir_node *n)
{
    if (!(rt_cu_counted_on_gpu(ex, n) ? rt_cu_infer_counted(ex, n) : rt_cu_infer_node(ex, n)))
        return false;
    recheck_placement(ex, n);
    double start = ex->run.opts->time ? rt_now(CLOCK_MONOTONIC) : 0;
    ex->ran_on_cpu[n->id] = false;
    if (!try_view(ex, n)) {
        for (uint32_t k = 0; k < n->noutputs; k++)
            ex->run.res->memory.intermediate_bytes += ex->slots[n->outputs[k]->id].nbytes;
        ex->ran_on_cpu[n->id] = !ex->on_gpu[n->id];
        if (!(ex->on_gpu[n->id] ? rt_cu_run_gpu_node(ex, n) : rt_cu_run_cpu_node(ex, n)))
            return false;
    }
    if (ex->run.opts->time) {
        if (!kc_sync(ex->kc))
            return rt_cu_failed(ex, n);
        rt_op_time *t = &ex->run.times[n->op];
        t->op = n->op;
        t->calls++;
        t->seconds += rt_now(CLOCK_MONOTONIC) - start;
    }
    release_after(ex, n);
    if (ex->oob)
        return rt_cu_report(ex, n, "%s", ex->oob);
    return true;
}

/* Resets the per-run state (not the persistent device copies), then runs every node. */
static bool run_nodes(executor *ex)
{
    ir_graph *g = ex->run.g;
    for (size_t i = 0; i < g->values.len; i++)
        ex->slots[i].remaining = g->values.items[i]->nuses;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead && !run_node(ex, g->nodes.items[i]))
            return false;
    return true;
}

/* The outputs, downloaded to the host. */
static bool output_oom(void *user, const ir_value *v)
{
    return rt_cu_report(user, NULL, "out of memory for output '%s'", v->name);
}

static bool collect_outputs(executor *ex)
{
    rt_value_source src = {defined_type, host_data, ex};
    return rt_collect_outputs(ex->run.g, ex->run.res, &src, output_oom);
}

static void end_run(executor *ex)
{
    for (size_t i = 0; i < ex->run.g->values.len; i++) {
        ir_value *v = ex->run.g->values.items[i];
        if (v->kind == IR_VALUE_NODE)
            release_value(ex, v, true);
    }
    rt_scratch_release(&ex->run.scratch, &ex->hpool);
}

/* Decides where each node runs on the graph's types (run_node asks again on static shapes). */
static void place_nodes(executor *ex)
{
    for (size_t i = 0; i < ex->run.g->nodes.len; i++) {
        ir_node *n = ex->run.g->nodes.items[i];
        char why[KN_WHY_SIZE] = "";
        ex->on_gpu[n->id] = !n->dead && gpu_can_run(ex, n, why);
        ex->cpu_why[n->id] = ex->on_gpu[n->id] ? NULL : ar_printf(ex->run.res->arena, "%s", why);
    }
}

/* The nodes a CPU kernel ran in this run, in graph order, with the reason. */
static void collect_fallbacks(executor *ex)
{
    size_t count = 0;
    for (size_t i = 0; i < ex->run.g->nodes.len; i++)
        count += ex->ran_on_cpu[ex->run.g->nodes.items[i]->id];
    ex->run.res->fallbacks =
        ar_alloc_array(ex->run.res->arena, count, sizeof *ex->run.res->fallbacks);
    ex->run.res->nfallbacks = 0;
    for (size_t i = 0; i < ex->run.g->nodes.len; i++) {
        const ir_node *n = ex->run.g->nodes.items[i];
        if (ex->ran_on_cpu[n->id])
            ex->run.res->fallbacks[ex->run.res->nfallbacks++] =
                (rt_fallback){n->outputs[0]->name, n->op, ex->cpu_why[n->id]};
    }
}

static bool setup(executor *ex, ir_graph *g, const rt_tensor *inputs, size_t ninputs,
                  const rt_options *opts, rt_result *out, dg_context *dg)
{
    *ex = (executor){.scratch_arena = ar_new()};
    rt_exec_begin(&ex->run, g, opts, out, dg);
    size_t nvalues = g->values.len;
    ex->slots = calloc(nvalues ? nvalues : 1, sizeof *ex->slots);
    ex->on_gpu = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *ex->on_gpu);
    ex->cpu_why = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *ex->cpu_why);
    ex->ran_on_cpu = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *ex->ran_on_cpu);
    FR_CHECK(ex->slots && ex->on_gpu && ex->cpu_why && ex->ran_on_cpu);
    char err[KC_ERROR_SIZE];
    int count;
    if (!kc_device_count(&count, err, sizeof err))
        return rt_cu_report(ex, NULL, "%s", err);
    if (!(ex->kc = kc_create(err)))
        return rt_cu_report(ex, NULL, "cannot start CUDA: %s", err);
    place_nodes(ex);
    return rt_exec_bind_inputs(&ex->run, inputs, ninputs, rt_cu_bind_input, ex);
}

static void teardown(executor *ex)
{
    ir_graph *g = ex->run.g;
    if (ex->kc) {
        end_run(ex);
        for (size_t i = 0; i < g->values.len; i++) {
            slot *s = &ex->slots[i];
            if (s->dev && s->persistent)
                rt_cu_dpool_release(ex, s->dev);
            s->dev = NULL;
        }
        kc_sync(ex->kc);
        ex->run.res->memory.peak_bytes = ex->dpool.peak;
        ex->run.res->memory.allocations = ex->dpool.allocations;
        ex->run.res->memory.reuses = ex->dpool.reuses;
        rt_cu_dpool_free(ex);
        FR_CHECK(ex->dpool.held == 0); /* every device buffer came back */
        kc_destroy(ex->kc);
    }
    rt_pool_free(&ex->hpool);
    free(ex->slots);
    free(ex->on_gpu);
    free(ex->cpu_why);
    free(ex->ran_on_cpu);
    vec_free(&ex->launch_scratch);
    rt_exec_end(&ex->run);
    ar_free(ex->scratch_arena);
}

bool rt_cuda_available(char *why, size_t size)
{
    int count;
    return kc_device_count(&count, why, size);
}

/* Fails (reported) unless every node that launches work is on the GPU: a CUDA graph cannot hold
 * a CPU kernel or a copy to the host. */
static bool all_on_gpu(executor *ex, const char *what)
{
    for (size_t i = 0; i < ex->run.g->nodes.len; i++) {
        ir_node *n = ex->run.g->nodes.items[i];
        if (!n->dead && !ex->on_gpu[n->id] && !(ir_op_info_get(n->op)->flags & IR_OPF_VIEW))
            return rt_cu_report(ex, n, "%s needs every node on the GPU; %s runs on the CPU: %s",
                                what, ir_op_name(n->op), ex->cpu_why[n->id]);
    }
    return true;
}

/* Captures the next run of the nodes as a CUDA graph (run_nodes' work is recorded, not done). */
static bool capture_run(executor *ex)
{
    if (!all_on_gpu(ex, "CUDA graph capture"))
        return false;
    ex->capturing = true;
    bool ok = (kc_capture_begin(ex->kc) || rt_cu_failed(ex, NULL)) && run_nodes(ex);
    ok = (kc_capture_end(ex->kc) || rt_cu_failed(ex, NULL)) && ok;
    ex->capturing = false;
    return ok;
}

/* The runs after the first (rt_options.repeat): again node by node, or, with cuda_graph, one run
 * captured and then replayed; the outputs of the last run stay for collect_outputs. */
static bool repeat_runs(executor *ex)
{
    int more = ex->run.opts->repeat > 1 ? ex->run.opts->repeat - 1 : 0;
    if (more == 0)
        return true;
    end_run(ex);
    if (!ex->run.opts->cuda_graph) {
        bool ok = run_nodes(ex);
        for (int i = 1; ok && i < more; i++) {
            end_run(ex);
            ok = run_nodes(ex);
        }
        return ok;
    }
    bool ok = capture_run(ex);
    for (int i = 0; ok && i < more; i++)
        ok = kc_graph_replay(ex->kc) || rt_cu_failed(ex, NULL);
    return ok;
}

bool rt_run_cuda(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                 rt_result *out, dg_context *dg)
{
    executor ex;
    if (!rt_check_storage(g, "CUDA", dg)) { /* its conversions are f16/bf16 <-> f32 only */
        *out = (rt_result){0};
        return false;
    }
    bool ok = setup(&ex, g, inputs, ninputs, opts, out, dg) && run_nodes(&ex) && repeat_runs(&ex) &&
              collect_outputs(&ex) && (kc_sync(ex.kc) || rt_cu_failed(&ex, NULL));
    if (ok && ex.run.opts->time)
        rt_collect_times(ex.run.res, ex.run.times);
    if (ok)
        collect_fallbacks(&ex);
    teardown(&ex);
    if (ok && ex.oob) /* found when the outputs' and weights' buffers were freed */
        ok = rt_cu_report(&ex, NULL, "%s", ex.oob);
    if (!ok)
        rt_result_free(out);
    return ok;
}

/* One timed repetition: the graph's nodes (inputs and weights already on the device). */
static bool timed_run(executor *ex, bool replay)
{
    bool ok = replay ? kc_graph_replay(ex->kc) || rt_cu_failed(ex, NULL) : run_nodes(ex);
    if (!replay)
        end_run(ex);
    return ok;
}

bool rt_cuda_time(ir_graph *g, const rt_options *opts, int iters, bool cuda_graph, double *ms,
                  dg_context *dg)
{
    executor ex;
    rt_result res;
    bool ok = setup(&ex, g, NULL, 0, opts, &res, dg) && run_nodes(&ex);
    if (ok)
        end_run(&ex); /* warm: kernels compiled, algorithms chosen, weights uploaded */
    if (ok && cuda_graph) {
        ok = capture_run(&ex);
        end_run(&ex);
    }
    float elapsed = 0;
    ok = ok && (kc_timer_start(ex.kc) || rt_cu_failed(&ex, NULL));
    for (int i = 0; ok && i < iters; i++)
        ok = timed_run(&ex, cuda_graph);
    ok = ok && (kc_timer_stop(ex.kc, &elapsed) || rt_cu_failed(&ex, NULL));
    if (ok)
        *ms = iters > 0 ? elapsed / iters : 0;
    teardown(&ex);
    rt_result_free(&res);
    return ok;
}

#endif
