/* The CUDA executor: runs a validated graph with the CUDA kernels of kernels/cuda/.
 *
 * Placement. A node runs on the GPU when a CUDA kernel supports it: kn_supports(..., KN_BACKEND_CUDA,
 * ...) for the fused ops, kn_cuda_onnx_supports for plain ONNX ops (the elementwise table, MatMul,
 * Gemm, Conv, Softmax, LayerNormalization). The answer given on the graph's types, which may be
 * symbolic, is asked again on each run's static shapes after inference; a node no kernel supports
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
 * graph (every node must then be on the GPU) and replay it. */
#include "runtime/runtime.h"

#ifndef FR_HAVE_CUDA

bool rt_cuda_available(char *why, size_t size)
{
    snprintf(why, size, "this build has no CUDA backend (no CUDA compiler was found when it was "
                        "configured)");
    return false;
}

bool rt_run_cuda(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                 rt_result *out, dg_context *dg)
{
    *out = (rt_result){0};
    dg_error_path(dg, g->name, "this build has no CUDA backend (no CUDA compiler was found when "
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
#include "base/half.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_registry.h"
#include "kernels/kernels.h"
#include "runtime/cuda_movement.h"
#include "runtime/inputs.h"
#include "runtime/pool.h"
#include "runtime/exec_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* With rt_options.sentinels, every device buffer has GUARD bytes of SENTINEL before it and right
 * after the size its current value asked for (not after the pool's rounded capacity, where a write
 * a few elements too far would land unseen), checked when it is freed. */
enum { GUARD = 256, SENTINEL = 0xA5 };

/* A device buffer; views share one through refs. */
typedef struct dbuf {
    void *base; /* what cudaMalloc returned: ptr - GUARD with sentinels */
    void *ptr;
    size_t cap;
    size_t size; /* what the current value asked for; the trailing guard starts there */
    unsigned refs;
    const char *owner; /* the value it was last allocated for, for the sentinel report */
} dbuf;

typedef struct dpool {
    VEC(dbuf *) free_list;
    size_t held, peak, allocations, reuses;
} dpool;

typedef struct slot {
    ir_type type; /* static once defined */
    size_t nbytes;
    const void *host; /* storage dtype; valid when not NULL */
    rt_buffer *hbuf;  /* the host pool buffer behind host, NULL for inputs and constants */
    dbuf *dev;        /* the device copy, NULL when none */
    bool persistent;  /* a constant's or input's device copy: kept across runs */
    uint32_t remaining;
} slot;

typedef struct executor {
    ir_graph *g;
    dg_context *dg;
    const rt_options *opts;
    rt_result *res;
    kc_context *kc;
    slot *slots;
    ir_type *saved;
    int64_t *symbols;
    bool *on_gpu;         /* per node */
    const char **cpu_why; /* per node: why it runs on the CPU (NULL on the GPU) */
    bool *ran_on_cpu;     /* per node: a CPU kernel ran it in the last run (not a view) */
    rt_pool hpool;
    dpool dpool;
    VEC(rt_buffer *) scratch;
    VEC(kn_tensor) kin, kout;
    ar_arena *scratch_arena; /* per-node strings (ElementwiseChain sources) */
    const char *oob;         /* the first sentinel violation found, reported after the node */
    bool capturing;          /* a run being captured as a CUDA graph: nothing synchronizes */
    rt_op_time times[IR_OP_COUNT];
} executor;

/* ---- errors ---- */

static bool report(executor *ex, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error located at node n (or at the graph when n is NULL). Always returns false. */
static bool report(executor *ex, const ir_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(ex->res->arena, fmt, ap);
    va_end(ap);
    if (n && ex->g->src && n->src_len)
        dg_error(ex->dg, ex->g->src, n->src_offset, n->src_len, "%s", msg);
    else if (n)
        dg_error_path(ex->dg, ex->g->name, "node %s: %s", n->outputs[0]->name, msg);
    else
        dg_error_path(ex->dg, ex->g->name, "%s", msg);
    return false;
}

static bool cuda_failed(executor *ex, const ir_node *n)
{
    return report(ex, n, "CUDA: %s", kc_last_error(ex->kc));
}

/* ---- the device pool ---- */

static dbuf *dpool_get(executor *ex, size_t size, const char *owner)
{
    dpool *p = &ex->dpool;
    size_t best = p->free_list.len;
    for (size_t i = 0; i < p->free_list.len; i++) {
        dbuf *b = p->free_list.items[i];
        if (b->cap >= size && b->cap / 2 <= size &&
            (best == p->free_list.len || b->cap < p->free_list.items[best]->cap))
            best = i;
    }
    if (best < p->free_list.len) {
        dbuf *b = p->free_list.items[best];
        p->free_list.items[best] = p->free_list.items[--p->free_list.len];
        b->refs = 1;
        b->owner = owner;
        b->size = size;
        p->reuses++;
        if (ex->opts->sentinels &&
            !kc_fill_bytes(ex->kc, (char *)b->ptr + size, SENTINEL, GUARD)) {
            vec_push(&p->free_list, b);
            return NULL;
        }
        return b;
    }
    dbuf *b = calloc(1, sizeof *b);
    FR_CHECK(b);
    size_t cap = (size + 255) / 256 * 256, guard = ex->opts->sentinels ? GUARD : 0;
    if (!kc_alloc(ex->kc, cap + 2 * guard, &b->base) ||
        (guard && !kc_fill_bytes(ex->kc, b->base, SENTINEL, cap + 2 * guard))) {
        kc_free(ex->kc, b->base);
        free(b);
        return NULL;
    }
    b->ptr = (char *)b->base + guard;
    b->cap = cap;
    b->size = size;
    b->refs = 1;
    b->owner = owner;
    p->allocations++;
    p->held += cap;
    if (p->held > p->peak)
        p->peak = p->held;
    return b;
}

/* Checks the guard bytes of b; the first violation is kept in ex->oob. */
static void check_guards(executor *ex, const dbuf *b)
{
    unsigned char seen[2][GUARD];
    if (!kc_download(ex->kc, seen[0], b->base, GUARD) ||
        !kc_download(ex->kc, seen[1], (char *)b->ptr + b->size, GUARD)) {
        ex->oob = ar_printf(ex->res->arena, "CUDA: %s", kc_last_error(ex->kc));
        return;
    }
    for (int side = 0; side < 2 && !ex->oob; side++)
        for (int i = 0; i < GUARD; i++)
            if (seen[side][i] != SENTINEL) {
                ex->oob = ar_printf(ex->res->arena,
                                    "a kernel wrote %s the device buffer of '%s' (guard byte %d)",
                                    side ? "after the end of" : "before the start of", b->owner,
                                    side ? i : GUARD - i);
                break;
            }
}

static void dpool_release(executor *ex, dbuf *b)
{
    FR_CHECK(b->refs > 0);
    if (--b->refs > 0)
        return;
    if (ex->opts->sentinels && !ex->oob && !ex->capturing) /* no download inside a capture */
        check_guards(ex, b);
    vec_push(&ex->dpool.free_list, b);
}

static void dpool_free(executor *ex)
{
    for (size_t i = 0; i < ex->dpool.free_list.len; i++) {
        dbuf *b = ex->dpool.free_list.items[i];
        kc_free(ex->kc, b->base);
        ex->dpool.held -= b->cap;
        free(b);
    }
    vec_free(&ex->dpool.free_list);
}

/* ---- binding inputs ---- */

/* Binds the inputs (runtime/inputs.h) and makes each the host data of its slot. */
static bool bind_inputs(executor *ex, const rt_tensor *given, size_t ngiven)
{
    if (!rt_bind_inputs(ex->g, ex->dg, ex->opts, ex->symbols, ex->res, given, ngiven))
        return false;
    for (size_t k = 0; k < ex->g->inputs.len; k++) {
        const rt_tensor *used = &ex->res->inputs[k];
        slot *s = &ex->slots[ex->g->inputs.items[k]->id];
        s->type = used->type;
        s->host = used->data;
        s->nbytes = used->nbytes;
    }
    return true;
}

/* ---- moving values ---- */

/* The host copy of v (downloaded when only the device has it); NULL after reporting. */
static const void *ensure_host(executor *ex, ir_value *v, const ir_node *n)
{
    slot *s = &ex->slots[v->id];
    if (s->host)
        return s->host;
    if (v->kind == IR_VALUE_CONST) {
        s->host = ir_const_data(ex->g, v, ex->dg);
        int64_t nbytes = 0;
        FR_CHECK(!s->host || ir_type_nbytes(&v->type, &nbytes));
        s->type = v->type;
        s->nbytes = (size_t)nbytes;
        return s->host;
    }
    FR_CHECK(s->dev); /* a defined value is on one side at least */
    s->hbuf = rt_pool_get(&ex->hpool, s->nbytes ? s->nbytes : 1);
    if (!s->hbuf) {
        report(ex, n, "out of memory for '%s' (%zu bytes)", v->name, s->nbytes);
        return NULL;
    }
    if (!kc_download(ex->kc, s->hbuf->data, s->dev->ptr, s->nbytes)) {
        cuda_failed(ex, n);
        return NULL;
    }
    s->host = s->hbuf->data;
    return s->host;
}

/* The device copy of v (uploaded when only the host has it); NULL after reporting. Constants'
 * and inputs' copies are kept for every later run. */
static void *ensure_dev(executor *ex, ir_value *v, const ir_node *n)
{
    slot *s = &ex->slots[v->id];
    if (s->dev)
        return s->dev->ptr;
    const void *host = ensure_host(ex, v, n);
    if (!host)
        return NULL;
    if (!(s->dev = dpool_get(ex, s->nbytes ? s->nbytes : 1, v->name))) {
        cuda_failed(ex, n);
        return NULL;
    }
    s->persistent = v->kind != IR_VALUE_NODE;
    if (!kc_upload(ex->kc, s->dev->ptr, host, s->nbytes)) {
        cuda_failed(ex, n);
        return NULL;
    }
    return s->dev->ptr;
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
    const void *data = ensure_host(ex, v, reader);
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
        return report(ex, n, "%s: the shape of '%s' is not known at run time", ir_op_name(n->op),
                      unknown->name);
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

/* ---- GPU nodes ---- */

static bool kc_dtype_of(ir_dtype dt, kc_dtype *out)
{
    switch (dt) {
    case IR_F32: *out = KC_F32; return true;
    case IR_F16: *out = KC_F16; return true;
    case IR_BF16: *out = KC_BF16; return true;
    case IR_I8: *out = KC_I8; return true;
    case IR_I32: *out = KC_I32; return true;
    default: return false;
    }
}

static bool device_tensor(executor *ex, const ir_node *n, ir_value *v, void *ptr, kc_tensor *t)
{
    *t = (kc_tensor){0};
    if (!v)
        return true;
    const slot *s = &ex->slots[v->id];
    if (!kc_dtype_of(s->type.dtype, &t->dtype))
        return report(ex, n, "'%s' is %s, which no CUDA kernel takes", v->name,
                      ir_dtype_name(s->type.dtype));
    t->rank = s->type.rank;
    memcpy(t->dims, s->type.dims, sizeof t->dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(&s->type, &t->numel));
    t->data = ptr;
    return true;
}

#define ACT(NAME, ENUM, ...)                                                                       \
    _Static_assert((int)IR_ACT_##ENUM == (int)KC_ACT_##ENUM, "ir/acts.def: " #NAME);
#include "ir/acts.def"
#undef ACT

/* The activation named by attribute `attr` ("act"; SeparableConv's "out_act"). */
static kc_act read_act_named(executor *ex, const ir_node *n, const char *attr, bool *ok)
{
    kn_call call = {.graph = ex->g, .node = n, .dg = ex->dg};
    fused_act a = {0};
    kc_act out = {KC_ACT_IDENTITY, 0, 0};
    *ok = fused_act_read_named(&call, attr, &a);
    if (*ok)
        out = (kc_act){(kc_act_kind)a.kind, a.alpha, a.beta}; /* both enums are ir/acts.def's */
    return out;
}

static kc_act read_act(executor *ex, const ir_node *n, bool *ok)
{
    return read_act_named(ex, n, "act", ok);
}

/* The normalized axis of a rank-r tensor; false after reporting when out of range. */
static bool axis_of(executor *ex, const ir_node *n, int rank, int *out)
{
    int64_t a = ir_get_int(n, "axis");
    if (a < 0)
        a += rank;
    if (a < 0 || a >= rank)
        return report(ex, n, "axis %lld is out of range for rank %d",
                      (long long)ir_get_int(n, "axis"), rank);
    *out = (int)a;
    return true;
}

/* FusedConvAct (act from its attribute) and ONNX Conv (Identity): both take X, W, B[, Z]. */
static bool run_conv(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_conv_params p = {.group = ir_get_int(n, "group"),
                        .strides = {1, 1}, .dilations = {1, 1}};
    const int64_t *v;
    bool valid = strcmp(ir_get_string(n, "auto_pad"), "VALID") == 0;
    if (!valid && ir_get_ints(n, "pads", &v) == 4)
        memcpy(p.pads, v, sizeof p.pads);
    if (ir_get_ints(n, "strides", &v) == 2)
        memcpy(p.strides, v, sizeof p.strides);
    if (ir_get_ints(n, "dilations", &v) == 2)
        memcpy(p.dilations, v, sizeof p.dilations);
    bool ok = true;
    p.act = n->op == IR_OP_Conv ? (kc_act){KC_ACT_IDENTITY, 0, 0} : read_act(ex, n, &ok);
    return ok && (kc_conv_act(ex->kc, &in[0], &in[1], &in[2], &in[3], &out[0], &p) ||
                  cuda_failed(ex, n));
}

/* SeparableConv, 1-D as 2-D of height 1 (the supports check refused SAME_* auto_pad). */
static bool run_separable(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_separable_params p = {.kernel = {1, 1}, .strides = {1, 1}, .dilations = {1, 1}};
    int spatial = in[0].rank - 2, first = 2 - spatial; /* 1-D fills the w slot only */
    if (spatial < 1 || spatial > 2)
        return report(ex, n, "the CUDA SeparableConv runs 1-D or 2-D convolutions");
    const int64_t *v;
    bool valid = strcmp(ir_get_string(n, "auto_pad"), "VALID") == 0;
    for (int d = 0; d < spatial; d++)
        p.kernel[first + d] = in[1].dims[2 + d];
    if (!valid && ir_get_ints(n, "pads", &v) == 2u * (uint32_t)spatial)
        for (int d = 0; d < spatial; d++)
            p.pads[first + d] = v[d];
    if (ir_get_ints(n, "strides", &v) == (uint32_t)spatial)
        for (int d = 0; d < spatial; d++)
            p.strides[first + d] = v[d];
    if (ir_get_ints(n, "dilations", &v) == (uint32_t)spatial)
        for (int d = 0; d < spatial; d++)
            p.dilations[first + d] = v[d];
    bool ok, out_ok;
    p.act = read_act(ex, n, &ok);
    p.out_act = read_act_named(ex, n, "out_act", &out_ok);
    return ok && out_ok &&
           (kc_separable_conv(ex->kc, &in[0], &in[1], &in[2], &in[3], &in[4],
                              n->ninputs > 5 ? &in[5] : NULL, &out[0], &p) ||
            cuda_failed(ex, n));
}

static bool run_gemm(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_gemm_params p = {.trans_a = ir_get_int(n, "transA") != 0,
                        .trans_b = ir_get_int(n, "transB") != 0,
                        .alpha = (float)ir_get_float(n, "alpha"),
                        .beta = (float)ir_get_float(n, "beta")};
    bool ok;
    p.act = read_act(ex, n, &ok);
    return ok && (kc_gemm_epilogue(ex->kc, &in[0], &in[1], &in[2], &in[3], &out[0], &p) ||
                  cuda_failed(ex, n));
}

static bool run_ewchain(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    ir_ew_program prog;
    const char *err;
    size_t at;
    if (!ir_ew_parse(ex->scratch_arena, ir_get_string(n, "expr"), n->ninputs, &prog, &err, &at))
        return report(ex, n, "expr: %s (at offset %zu)", err, at);
    const kc_tensor *ptrs[KN_CUDA_EW_MAX_INPUTS];
    if (n->ninputs > KN_CUDA_EW_MAX_INPUTS)
        return report(ex, n, "more than %d inputs", KN_CUDA_EW_MAX_INPUTS);
    for (uint32_t i = 0; i < n->ninputs; i++)
        ptrs[i] = &in[i];
    const char *body = kn_cuda_ewchain_source(ex->scratch_arena, &prog);
    return kc_ewchain(ex->kc, body, ptrs, (int)n->ninputs, &out[0]) || cuda_failed(ex, n);
}

static bool run_pool(executor *ex, const ir_node *n, const kc_tensor *x, kc_tensor *y)
{
    kc_pool_params p;
    const char *err;
    if (!rt_pool_params(n, x->rank, x->dims, &p, &err))
        return report(ex, n, "%s", err);
    return kc_pool(ex->kc, x, y, &p) || cuda_failed(ex, n);
}

/* Plain ONNX MatMul (alpha 1, no bias) and Gemm (alpha * A'B' + beta * C, C broadcast) on the
 * GEMM epilogue kernel; in[3] (and for MatMul in[2]) read as absent. */
static bool run_onnx_gemm(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_gemm_params p = {.alpha = 1.0f, .act = {KC_ACT_IDENTITY, 0, 0}};
    if (n->op == IR_OP_Gemm) {
        p.trans_a = ir_get_int(n, "transA") != 0;
        p.trans_b = ir_get_int(n, "transB") != 0;
        p.alpha = (float)ir_get_float(n, "alpha");
        p.beta = (float)ir_get_float(n, "beta");
    }
    const kc_tensor *c = n->op == IR_OP_Gemm ? &in[2] : &in[3];
    return kc_gemm_epilogue(ex->kc, &in[0], &in[1], &in[3], c, &out[0], &p) || cuda_failed(ex, n);
}

/* Dispatches a GPU node to its kernel; in/out are device tensors (data NULL when omitted). */
static bool run_kernel(executor *ex, const ir_node *n, const kc_tensor *in, kc_tensor *out)
{
    kc_context *kc = ex->kc;
    int axis = 0; /* set by axis_of before any use; gcc -O3 cannot see it */
    switch (n->op) {
    case IR_OP_FusedConvAct:
    case IR_OP_Conv: return run_conv(ex, n, in, out);
    case IR_OP_MatMul:
    case IR_OP_Gemm: return run_onnx_gemm(ex, n, in, out);
    case IR_OP_MaxPool:
    case IR_OP_AveragePool: return run_pool(ex, n, &in[0], &out[0]);
    case IR_OP_Softmax:
        return axis_of(ex, n, in[0].rank, &axis) &&
               (kc_softmax(kc, &in[0], &in[3], &out[0], axis, 1.0f) || cuda_failed(ex, n));
    case IR_OP_LayerNormalization:
        return axis_of(ex, n, in[0].rank, &axis) &&
               (kc_norm(kc, KC_NORM_LAYER, &in[0], NULL, &in[1], &in[2], &out[0], NULL, axis,
                        (float)ir_get_float(n, "epsilon")) ||
                cuda_failed(ex, n));
    case IR_OP_SeparableConv: return run_separable(ex, n, in, out);
    case IR_OP_GemmEpilogue: return run_gemm(ex, n, in, out);
    case IR_OP_FusedQKV: {
        kc_tensor *outs[3] = {&out[0], &out[1], n->noutputs > 2 ? &out[2] : NULL};
        return kc_fused_qkv(kc, &in[0], &in[1], &in[2], outs, (int)n->noutputs) ||
               cuda_failed(ex, n);
    }
    case IR_OP_RMSNorm:
        return axis_of(ex, n, in[0].rank, &axis) &&
               (kc_norm(kc, KC_NORM_RMS, &in[0], NULL, &in[1], NULL, &out[0], NULL, axis,
                        (float)ir_get_float(n, "epsilon")) ||
                cuda_failed(ex, n));
    case IR_OP_AddLayerNorm:
    case IR_OP_AddRMSNorm: {
        bool layer = n->op == IR_OP_AddLayerNorm;
        return axis_of(ex, n, in[0].rank, &axis) &&
               (kc_norm(kc, layer ? KC_NORM_LAYER : KC_NORM_RMS, &in[0], &in[1], &in[2],
                        layer ? &in[3] : NULL, &out[0], n->noutputs > 1 ? &out[1] : NULL, axis,
                        (float)ir_get_float(n, "epsilon")) ||
                cuda_failed(ex, n));
    }
    case IR_OP_FusedSoftmax:
        return axis_of(ex, n, in[0].rank, &axis) &&
               (kc_softmax(kc, &in[0], &in[1], &out[0], axis, (float)ir_get_float(n, "scale")) ||
                cuda_failed(ex, n));
    case IR_OP_ElementwiseChain: return run_ewchain(ex, n, in, out);
    case IR_OP_Attention:
        return kc_attention(kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0],
                            (float)ir_get_float(n, "scale"), ir_get_int(n, "causal") != 0,
                            strcmp(ir_get_string(n, "layout"), "BSHD") == 0,
                            ir_get_int(n, "nan_to_zero") != 0) ||
               cuda_failed(ex, n);
    case IR_OP_RoPE:
        return kc_rope(kc, &in[0], &in[1], &in[2], &out[0], ir_get_int(n, "interleaved") != 0) ||
               cuda_failed(ex, n);
    case IR_OP_SwiGLU: return kc_swiglu(kc, &in[0], &in[1], &out[0]) || cuda_failed(ex, n);
    case IR_OP_QGemm:
        return kc_qgemm(kc, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0]) ||
               cuda_failed(ex, n);
    default: return report(ex, n, "%s has no CUDA kernel", ir_op_name(n->op));
    }
}

enum { MAX_NODE_IO = 64 };

/* Device buffers for n's outputs, as device tensors in out. */
static bool alloc_outputs(executor *ex, ir_node *n, kc_tensor *out)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->dev = dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[k]->name)))
            return cuda_failed(ex, n);
        if (!device_tensor(ex, n, n->outputs[k], s->dev->ptr, &out[k]))
            return false;
    }
    return true;
}

/* A plain elementwise op as its ElementwiseChain expression: only the inputs the expression reads
 * go to the device (not Expand's shape, nor a Clip bound that is absent). */
static bool run_ew_op(executor *ex, ir_node *n)
{
    kn_cuda_ew_expr e;
    char why[KN_WHY_SIZE];
    if (!kn_cuda_ew_expand(ex->scratch_arena, n, &e, why))
        return report(ex, n, "%s", why);
    kc_tensor in[KN_CUDA_EW_MAX_INPUTS], out;
    const kc_tensor *ptrs[KN_CUDA_EW_MAX_INPUTS];
    for (uint32_t i = 0; i < e.ninputs; i++) {
        ir_value *v = n->inputs[e.inputs[i]];
        void *ptr = ensure_dev(ex, v, n);
        if (!ptr || !device_tensor(ex, n, v, ptr, &in[i]))
            return false;
        if (e.per_channel && i > 0) { /* [C] as [C, 1, ...] against [N, C, ...] */
            int64_t c = in[i].numel;
            in[i].rank = in[0].rank - 1;
            for (int d = 0; d < in[i].rank; d++)
                in[i].dims[d] = d == 0 ? c : 1;
        }
        ptrs[i] = &in[i];
    }
    if (n->noutputs != 1 || !alloc_outputs(ex, n, &out))
        return n->noutputs != 1 ? report(ex, n, "one output expected") : false;
    return kc_ewchain(ex->kc, e.body, ptrs, (int)e.ninputs, &out) || cuda_failed(ex, n);
}

static bool is_movement(ir_op op)
{
    return op == IR_OP_Transpose || op == IR_OP_Slice || op == IR_OP_Concat || op == IR_OP_Split ||
           op == IR_OP_DepthToSpace || op == IR_OP_SpaceToDepth;
}

/* Slice's integer input i read on the host as int64 (NULL when absent). */
static bool host_ints(executor *ex, ir_node *n, uint32_t i, const int64_t **out, int *count)
{
    *out = NULL, *count = 0;
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v)
        return true;
    const void *data = ensure_host(ex, v, n);
    if (!data)
        return false;
    const slot *s = &ex->slots[v->id];
    int64_t numel;
    FR_CHECK(ir_type_numel(&s->type, &numel));
    if (numel > 2 * IR_MAX_RANK || (s->type.dtype != IR_I64 && s->type.dtype != IR_I32))
        return report(ex, n, "input %u must hold at most %d i32/i64 values", i, 2 * IR_MAX_RANK);
    int64_t *vals = ar_alloc_array(ex->scratch_arena, (size_t)(numel ? numel : 1), sizeof *vals);
    for (int64_t k = 0; k < numel; k++)
        vals[k] = s->type.dtype == IR_I64 ? ((const int64_t *)data)[k]
                                          : ((const int32_t *)data)[k];
    *out = vals, *count = (int)numel;
    return true;
}

/* Transpose, Slice, Concat, Split: strided copies of raw elements (any dtype). */
static bool run_move_op(executor *ex, ir_node *n)
{
    rt_move_io io = {0};
    if (n->ninputs > RT_MOVE_MAX_INPUTS || n->noutputs > RT_MOVE_MAX_PLANS)
        return report(ex, n, "too many operands for the CUDA copy");
    uint32_t data_inputs = n->op == IR_OP_Concat ? n->ninputs : 1;
    const void *src[RT_MOVE_MAX_INPUTS];
    for (uint32_t i = 0; i < data_inputs; i++) {
        if (!(src[i] = ensure_dev(ex, n->inputs[i], n)))
            return false;
        io.in_type[i] = &ex->slots[n->inputs[i]->id].type;
    }
    for (uint32_t i = 1; n->op == IR_OP_Slice && i < 5; i++)
        if (!host_ints(ex, n, i, &io.ints[i], &io.nints[i]))
            return false;
    void *dst[RT_MOVE_MAX_PLANS];
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->dev = dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[k]->name)))
            return cuda_failed(ex, n);
        dst[k] = s->dev->ptr;
        io.out_type[k] = &s->type;
    }
    kc_copy_plan plans[RT_MOVE_MAX_PLANS];
    int nplans;
    const char *err;
    if (!rt_move_plans(n, &io, plans, &nplans, &err))
        return report(ex, n, "%s", err);
    size_t esize = ir_dtype_size(io.in_type[0]->dtype);
    for (int k = 0; k < nplans; k++) {
        const void *from = src[n->op == IR_OP_Concat ? k : 0];
        void *to = dst[n->op == IR_OP_Split ? k : 0];
        if (!kc_strided_copy(ex->kc, from, to, esize, &plans[k]))
            return cuda_failed(ex, n);
    }
    return true;
}

/* v's device copy as a kc_tensor of shape only (the raw-byte kernels do not read its dtype). */
static bool raw_tensor(executor *ex, const ir_node *n, ir_value *v, kc_tensor *t)
{
    *t = (kc_tensor){0};
    void *ptr = ensure_dev(ex, v, n);
    if (!ptr)
        return false;
    const slot *s = &ex->slots[v->id];
    t->rank = s->type.rank;
    memcpy(t->dims, s->type.dims, sizeof t->dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(&s->type, &t->numel));
    t->data = ptr;
    return true;
}

/* A device buffer for n's only output as a kc_tensor of shape only. */
static bool raw_output(executor *ex, ir_node *n, kc_tensor *t)
{
    slot *s = &ex->slots[n->outputs[0]->id];
    if (!(s->dev = dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[0]->name)))
        return cuda_failed(ex, n);
    *t = (kc_tensor){.rank = s->type.rank, .data = s->dev->ptr};
    memcpy(t->dims, s->type.dims, sizeof t->dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(&s->type, &t->numel));
    return true;
}

/* Gather: the indices are checked on the host (an index outside [-dim, dim) is the CPU kernel's
 * error too), then read by the kernel from their device copy. */
static bool run_gather(executor *ex, ir_node *n)
{
    kc_tensor data, idx, y;
    if (!raw_tensor(ex, n, n->inputs[0], &data) || !raw_tensor(ex, n, n->inputs[1], &idx) ||
        !raw_output(ex, n, &y))
        return false;
    int64_t axis = ir_get_int(n, "axis");
    axis += axis < 0 ? data.rank : 0;
    if (axis < 0 || axis >= data.rank)
        return report(ex, n, "axis %lld is out of range for rank %d",
                      (long long)ir_get_int(n, "axis"), data.rank);
    ir_dtype it = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t dim = data.dims[axis], outer = 1, inner = 1;
    for (int64_t j = 0; j < idx.numel; j++) {
        int64_t i = it == IR_I64 ? ((const int64_t *)host)[j] : ((const int32_t *)host)[j];
        if (i < -dim || i >= dim)
            return report(ex, n, "index %lld is out of range for axis %lld of size %lld",
                          (long long)i, (long long)axis, (long long)dim);
    }
    for (int d = 0; d < data.rank; d++)
        *(d < axis ? &outer : &inner) *= d == axis ? 1 : data.dims[d];
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    return kc_gather(ex->kc, data.data, esize, outer, dim, inner, idx.data, it == IR_I64,
                     idx.numel, y.data) ||
           cuda_failed(ex, n);
}

/* The product of dims [from, to). */
static int64_t dims_prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= dims[d];
    return p;
}

/* ArgMax, ArgMin (axis attribute) and CumSum (axis input, read on the host) over float x viewed
 * as [outer, n, inner]; keepdims changes only the output's shape, not its layout. */
static bool run_axis_op(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    kc_dtype dt;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_output(ex, n, &y))
        return false;
    if (!kc_dtype_of(ex->slots[n->inputs[0]->id].type.dtype, &dt))
        return report(ex, n, "a dtype no CUDA kernel takes");
    int64_t axis = ir_get_int(n, "axis");
    if (n->op == IR_OP_CumSum) {
        const int64_t *a;
        int na;
        if (!host_ints(ex, n, 1, &a, &na))
            return false;
        if (na != 1)
            return report(ex, n, "axis must hold one value");
        axis = a[0];
    }
    if (axis < -x.rank || axis >= x.rank)
        return report(ex, n, "axis %lld is out of range for rank %d", (long long)axis, x.rank);
    int ax = (int)(axis < 0 ? axis + x.rank : axis);
    int64_t outer = dims_prod(x.dims, 0, ax), len = x.dims[ax];
    int64_t inner = dims_prod(x.dims, ax + 1, x.rank);
    if (n->op == IR_OP_CumSum)
        return kc_cumsum(ex->kc, dt, x.data, outer, len, inner, ir_get_int(n, "exclusive") != 0,
                         ir_get_int(n, "reverse") != 0, y.data) ||
               cuda_failed(ex, n);
    bool max = n->op == IR_OP_ArgMax;
    if (len == 0 && outer * inner > 0) /* the CPU kernel's error */
        return report(ex, n, "the axis is empty: there is no %s", max ? "maximum" : "minimum");
    return kc_arg_reduce(ex->kc, dt, x.data, outer, len, inner, max,
                         ir_get_int(n, "select_last_index") != 0, y.data) ||
           cuda_failed(ex, n);
}

/* GatherElements: the indices are checked on the host as the CPU kernel checks them (same rank
 * as data, dims off the axis at most data's, values in [-dim, dim)). */
static bool run_gather_elements(executor *ex, ir_node *n)
{
    kc_tensor data, idx, y;
    if (!raw_tensor(ex, n, n->inputs[0], &data) || !raw_tensor(ex, n, n->inputs[1], &idx) ||
        !raw_output(ex, n, &y))
        return false;
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -data.rank || axis >= data.rank || idx.rank != data.rank)
        return report(ex, n, "axis %lld or indices of rank %d do not fit data of rank %d",
                      (long long)axis, idx.rank, data.rank);
    int ax = (int)(axis < 0 ? axis + data.rank : axis);
    for (int d = 0; d < data.rank; d++)
        if (d != ax && idx.dims[d] > data.dims[d])
            return report(ex, n, "indices' dim %d (%lld) is above data's (%lld)", d,
                          (long long)idx.dims[d], (long long)data.dims[d]);
    ir_dtype it = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t dim = data.dims[ax];
    for (int64_t j = 0; j < idx.numel; j++) {
        int64_t i = it == IR_I64 ? ((const int64_t *)host)[j] : ((const int32_t *)host)[j];
        if (i < -dim || i >= dim)
            return report(ex, n, "index %lld is out of range for a dim of %lld", (long long)i,
                          (long long)dim);
    }
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    return kc_gather_elements(ex->kc, data.data, esize, data.rank, data.dims, idx.dims, ax,
                              idx.data, it == IR_I64, y.data) ||
           cuda_failed(ex, n);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, z = *(const int64_t *)b;
    return x < z ? -1 : x > z;
}

/* GatherND and ScatterND (reduction none): the shapes and every index checked on the host as the
 * CPU kernel checks them (its errors), then the kernel reads the indices' device copy. ScatterND
 * copies data into Y first; its tuples run at once when the host finds no two alike. */
static bool run_nd(executor *ex, ir_node *n)
{
    bool scatter = n->op == IR_OP_ScatterND;
    kc_tensor x, idx, upd = {0}, y;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_tensor(ex, n, n->inputs[1], &idx) ||
        (scatter && !raw_tensor(ex, n, n->inputs[2], &upd)) || !raw_output(ex, n, &y))
        return false;
    int64_t b = scatter ? 0 : ir_get_int(n, "batch_dims");
    if (idx.rank < 1 || b < 0 || b >= x.rank || b >= idx.rank)
        return report(ex, n, "batch_dims %lld does not fit ranks %d and %d", (long long)b, x.rank,
                      idx.rank);
    int64_t depth = idx.dims[idx.rank - 1];
    if (depth < 1 || depth > x.rank - b)
        return report(ex, n, "indices' last dim %lld does not fit data of rank %d",
                      (long long)depth, x.rank);
    for (int d = 0; d < b; d++)
        if (idx.dims[d] != x.dims[d])
            return report(ex, n, "batch dim %d differs: %lld in data, %lld in indices", d,
                          (long long)x.dims[d], (long long)idx.dims[d]);
    kc_nd_args p = {.depth = (int)depth};
    p.batches = dims_prod(x.dims, 0, (int)b);
    p.per_batch = dims_prod(x.dims, (int)b, x.rank);
    p.tuples = dims_prod(idx.dims, (int)b, idx.rank - 1);
    p.slice = dims_prod(x.dims, (int)(b + depth), x.rank);
    for (int k = 0; k < depth; k++) {
        p.dims[k] = x.dims[b + k];
        p.strides[k] = dims_prod(x.dims, (int)b + k + 1, x.rank);
    }
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype;
    if (scatter && (upd.numel != p.tuples * p.slice ||
                    ex->slots[n->inputs[2]->id].type.dtype != dt))
        return report(ex, n, "updates must be indices[:-1] + data[%lld:] of data's dtype",
                      (long long)depth);
    ir_dtype it = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t ntuples = p.batches * p.tuples;
    int64_t *offs = scatter ? ar_alloc_array(ex->scratch_arena, (size_t)(ntuples ? ntuples : 1),
                                             sizeof *offs)
                            : NULL;
    for (int64_t t = 0; t < ntuples; t++) {
        int64_t off = 0;
        for (int64_t k = 0; k < depth; k++) {
            int64_t at = t * depth + k;
            int64_t v = it == IR_I64 ? ((const int64_t *)host)[at] : ((const int32_t *)host)[at];
            if (v < -p.dims[k] || v >= p.dims[k])
                return report(ex, n, "index %lld is out of range for a dim of %lld",
                              (long long)v, (long long)p.dims[k]);
            off += (v < 0 ? v + p.dims[k] : v) * p.strides[k];
        }
        if (offs)
            offs[t] = off;
    }
    size_t esize = ir_dtype_size(dt);
    if (!scatter)
        return kc_gather_nd(ex->kc, x.data, esize, idx.data, it == IR_I64, &p, y.data) ||
               cuda_failed(ex, n);
    bool unique = true;
    qsort(offs, (size_t)ntuples, sizeof *offs, cmp_i64);
    for (int64_t t = 1; t < ntuples && unique; t++)
        unique = offs[t] != offs[t - 1];
    return (kc_copy(ex->kc, y.data, x.data, (size_t)x.numel * esize) &&
            kc_scatter_nd(ex->kc, upd.data, esize, idx.data, it == IR_I64, &p, unique, y.data)) ||
           cuda_failed(ex, n);
}

/* InstanceNormalization: scale and B must hold one value per channel, as the CPU kernel checks. */
static bool run_instance_norm(executor *ex, ir_node *n)
{
    kc_tensor t[3], y;
    for (uint32_t i = 0; i < 3; i++) {
        void *ptr = ensure_dev(ex, n->inputs[i], n);
        if (!ptr || !device_tensor(ex, n, n->inputs[i], ptr, &t[i]))
            return false;
    }
    if (t[0].rank < 2 || t[1].numel != t[0].dims[1] || t[2].numel != t[0].dims[1])
        return report(ex, n, "scale and B must hold one value per channel of [N, C, ...]");
    if (!alloc_outputs(ex, n, &y))
        return false;
    return kc_instance_norm(ex->kc, &t[0], &t[1], &t[2], ir_get_float(n, "epsilon"), &y) ||
           cuda_failed(ex, n);
}

static bool run_where(executor *ex, ir_node *n)
{
    kc_tensor c, x, z, y;
    if (!raw_tensor(ex, n, n->inputs[0], &c) || !raw_tensor(ex, n, n->inputs[1], &x) ||
        !raw_tensor(ex, n, n->inputs[2], &z) || !raw_output(ex, n, &y))
        return false;
    size_t esize = ir_dtype_size(ex->slots[n->inputs[1]->id].type.dtype);
    return kc_where(ex->kc, &c, &x, &z, esize, &y) || cuda_failed(ex, n);
}

/* The typed kernels' element type of a storage dtype (false: none takes it). */
static bool elem_of(ir_dtype dt, kc_elem *out)
{
    switch (dt) {
    case IR_F32: *out = KC_E_F32; return true;
    case IR_F16: *out = KC_E_F16; return true;
    case IR_BF16: *out = KC_E_BF16; return true;
    case IR_I8: *out = KC_E_I8; return true;
    case IR_U8: *out = KC_E_U8; return true;
    case IR_I32: *out = KC_E_I32; return true;
    case IR_I64: *out = KC_E_I64; return true;
    case IR_BOOL: *out = KC_E_BOOL; return true;
    default: return false;
    }
}

/* The typed kernel's operation for a comparison or logical op. */
static bool compare_op_of(ir_op op, kc_compare_op *out)
{
    switch (op) {
    case IR_OP_Equal: *out = KC_CMP_EQUAL; return true;
    case IR_OP_Less: *out = KC_CMP_LESS; return true;
    case IR_OP_Greater: *out = KC_CMP_GREATER; return true;
    case IR_OP_LessOrEqual: *out = KC_CMP_LESS_EQUAL; return true;
    case IR_OP_GreaterOrEqual: *out = KC_CMP_GREATER_EQUAL; return true;
    case IR_OP_And: *out = KC_CMP_AND; return true;
    case IR_OP_Or: *out = KC_CMP_OR; return true;
    case IR_OP_Xor: *out = KC_CMP_XOR; return true;
    case IR_OP_Not: *out = KC_CMP_NOT; return true;
    case IR_OP_IsNaN: *out = KC_CMP_ISNAN; return true;
    case IR_OP_IsInf: *out = KC_CMP_ISINF; return true; /* the sign from the attributes */
    default: return false;
    }
}

/* Cast, the comparisons and the logical ops on the typed kernels. */
static bool run_typed(executor *ex, ir_node *n)
{
    kc_tensor a, b = {0}, y;
    kc_elem at, yt;
    bool binary =
        n->op != IR_OP_Cast && n->op != IR_OP_Not && n->op != IR_OP_IsNaN && n->op != IR_OP_IsInf;
    if (!raw_tensor(ex, n, n->inputs[0], &a) || (binary && !raw_tensor(ex, n, n->inputs[1], &b)) ||
        !raw_output(ex, n, &y))
        return false;
    if (!elem_of(ex->slots[n->inputs[0]->id].type.dtype, &at) ||
        !elem_of(ex->slots[n->outputs[0]->id].type.dtype, &yt))
        return report(ex, n, "a dtype no CUDA kernel takes");
    if (n->op == IR_OP_Cast)
        return kc_cast(ex->kc, a.data, at, y.data, yt, y.numel) || cuda_failed(ex, n);
    kc_compare_op op;
    if (!compare_op_of(n->op, &op))
        return report(ex, n, "no typed CUDA kernel runs %s", ir_op_name(n->op));
    if (n->op == IR_OP_IsInf) {
        bool neg = ir_get_int(n, "detect_negative") != 0;
        bool pos = ir_get_int(n, "detect_positive") != 0;
        if (!neg && !pos)
            return report(ex, n, "IsInf detecting neither infinity has no CUDA kernel");
        op = neg && pos ? KC_CMP_ISINF : pos ? KC_CMP_ISINF_POS : KC_CMP_ISINF_NEG;
    }
    return kc_compare(ex->kc, op, &a, &b, at, &y) || cuda_failed(ex, n);
}

/* Pad: amounts and mode as the CPU reads them; the constant (input 2, default 0) converted to the
 * element type as the CPU kernel converts it (floats through f32, then the 16-bit storage). */
static bool run_pad(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    const int64_t *pads, *axes;
    int npads, naxes;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_output(ex, n, &y) ||
        !host_ints(ex, n, 1, &pads, &npads) || !host_ints(ex, n, 3, &axes, &naxes))
        return false;
    int64_t before[IR_MAX_RANK];
    kc_pad_mode mode;
    const char *err;
    if (!pads || !rt_pad_plan(n, x.rank, pads, npads, axes, naxes, before, &mode, &err))
        return report(ex, n, "%s", pads ? err : "the pads input is missing");
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype;
    double v = 0;
    ir_value *cv = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (cv && (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16)) {
        const void *h = ensure_host(ex, cv, n);
        if (!h)
            return false;
        v = dt == IR_F32 ? ((const float *)h)[0]
            : dt == IR_F16 ? f16_to_f32(((const uint16_t *)h)[0])
                           : bf16_to_f32(((const uint16_t *)h)[0]);
    } else if (cv) {
        const void *h = ensure_host(ex, cv, n);
        if (!h)
            return false;
        switch (dt) {
        case IR_I8: v = ((const int8_t *)h)[0]; break;
        case IR_U8:
        case IR_BOOL: v = ((const uint8_t *)h)[0]; break;
        case IR_I32: v = ((const int32_t *)h)[0]; break;
        case IR_I64: v = (double)((const int64_t *)h)[0]; break;
        default: return report(ex, n, "%s: no CUDA Pad takes it", ir_dtype_name(dt));
        }
    }
    uint64_t fill = 0;
    if (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16) {
        float f = (float)v;
        uint16_t h = dt == IR_F16 ? f32_to_f16(f) : f32_to_bf16(f);
        if (dt == IR_F32)
            memcpy(&fill, &f, sizeof f);
        else
            memcpy(&fill, &h, sizeof h);
    } else {
        kn_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = &fill};
        kn_set_f64(&t, 0, v);
    }
    size_t esize = ir_dtype_size(dt);
    return kc_pad(ex->kc, x.data, esize, x.rank, x.dims, y.dims, before, mode, fill, y.data) ||
           cuda_failed(ex, n);
}

/* Tile (the repeats are the inferred output shape) and Trilu (k read on the host). */
static bool run_tile_trilu(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_output(ex, n, &y))
        return false;
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    if (n->op == IR_OP_Tile)
        return kc_tile(ex->kc, x.data, esize, x.rank, x.dims, y.dims, y.data) ||
               cuda_failed(ex, n);
    const int64_t *k = NULL;
    int nk = 0;
    if (!host_ints(ex, n, 1, &k, &nk))
        return false;
    if (k && nk != 1)
        return report(ex, n, "k must be a scalar");
    return kc_trilu(ex->kc, x.data, esize, x.rank, x.dims, ir_get_int(n, "upper") != 0,
                    k ? k[0] : 0, y.data) ||
           cuda_failed(ex, n);
}

static bool reduce_kind_of(ir_op op, kc_reduce_kind *out)
{
    switch (op) {
    case IR_OP_ReduceSum: *out = KC_REDUCE_SUM; return true;
    case IR_OP_ReduceMean: *out = KC_REDUCE_MEAN; return true;
    case IR_OP_ReduceMax: *out = KC_REDUCE_MAX; return true;
    case IR_OP_ReduceMin: *out = KC_REDUCE_MIN; return true;
    case IR_OP_ReduceProd: *out = KC_REDUCE_PROD; return true;
    case IR_OP_ReduceL1: *out = KC_REDUCE_L1; return true;
    case IR_OP_ReduceL2: *out = KC_REDUCE_L2; return true;
    case IR_OP_ReduceSumSquare: *out = KC_REDUCE_SUMSQ; return true;
    case IR_OP_ReduceLogSum: *out = KC_REDUCE_LOGSUM; return true;
    case IR_OP_ReduceLogSumExp: *out = KC_REDUCE_LOGSUMEXP; return true;
    case IR_OP_GlobalAveragePool: *out = KC_REDUCE_MEAN; return true;
    default: return false;
    }
}

/* Every Reduce* op: the axes from input 1 (read on the host) or the attribute, as the CPU
 * kernel reads them; empty axes reduce everything unless noop_with_empty_axes (then no axis). */
static bool run_reduce_op(executor *ex, ir_node *n, kc_reduce_kind kind)
{
    const int64_t *axes = NULL;
    int naxes = 0;
    static const int64_t spatial[] = {2, 3, 4, 5, 6, 7};
    if (n->op == IR_OP_GlobalAveragePool) { /* the mean over every dim after N and C */
        axes = spatial;
        naxes = ex->slots[n->inputs[0]->id].type.rank - 2;
        if (naxes < 1)
            return report(ex, n, "GlobalAveragePool needs [N, C, spatial...]");
    } else if (n->ninputs > 1 && n->inputs[1]) {
        if (!host_ints(ex, n, 1, &axes, &naxes))
            return false;
    } else {
        naxes = (int)ir_get_ints(n, "axes", &axes);
    }
    kc_tensor x, y;
    void *ptr = ensure_dev(ex, n->inputs[0], n);
    if (!ptr || !device_tensor(ex, n, n->inputs[0], ptr, &x) || !alloc_outputs(ex, n, &y))
        return false;
    bool mask[IR_MAX_RANK];
    bool noop = naxes == 0 && ir_get_int(n, "noop_with_empty_axes") != 0;
    for (int d = 0; d < x.rank; d++)
        mask[d] = naxes == 0 && !noop;
    for (int i = 0; i < naxes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x.rank : axes[i];
        if (a < 0 || a >= x.rank)
            return report(ex, n, "axis %lld is out of range for rank %d", (long long)axes[i],
                          x.rank);
        mask[a] = true;
    }
    return kc_reduce(ex->kc, kind, &x, mask, &y) || cuda_failed(ex, n);
}

/* ---- cuda-c: quantized and integer linear algebra, ConvTranspose, Det, DFT, Einsum (quant.cu,
 * linalg.cu), RNN, GRU, LSTM (rnn.cu). Shapes and parameters are checked on the host by the CPU
 * kernels' own geometry code (kn_qmap_init, kn_conv_geom_init, kn_tconv_geom_init) or a copy of
 * their checks, reporting the CPU kernel's errors, before anything is launched. ---- */

static kn_tensor host_view(const ir_type *t, void *data);

/* The node's operands as the CPU kernel's kn_call would see them, shapes only: float dtypes read
 * as f32, `data` marks presence (never read). */
typedef struct shape_call {
    kn_tensor in[9], out[3];
    kn_call call;
} shape_call;

static void shape_call_init(executor *ex, const ir_node *n, shape_call *sc)
{
    memset(sc, 0, sizeof *sc);
    for (uint32_t i = 0; i < n->ninputs && i < 9; i++)
        if (n->inputs[i])
            sc->in[i] = host_view(&ex->slots[n->inputs[i]->id].type, n->inputs[i]);
    for (uint32_t k = 0; k < n->noutputs && k < 3; k++)
        sc->out[k] = host_view(&ex->slots[n->outputs[k]->id].type, n->outputs[k]);
    sc->call = (kn_call){.graph = ex->g,
                         .node = n,
                         .inputs = sc->in,
                         .ninputs = n->ninputs < 9 ? n->ninputs : 9,
                         .outputs = sc->out,
                         .noutputs = n->noutputs < 3 ? n->noutputs : 3,
                         .dg = ex->dg};
}

/* Device copies of the present inputs (t[i].data NULL for an absent one) and of every output,
 * shapes only (the dtype-free kernels' way). */
static bool raw_operands(executor *ex, ir_node *n, kc_tensor *in, kc_tensor *out)
{
    for (uint32_t i = 0; i < n->ninputs; i++) {
        in[i] = (kc_tensor){0};
        if (n->inputs[i] && !raw_tensor(ex, n, n->inputs[i], &in[i]))
            return false;
    }
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->dev = dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[k]->name)))
            return cuda_failed(ex, n);
        out[k] = (kc_tensor){.rank = s->type.rank, .data = s->dev->ptr};
        memcpy(out[k].dims, s->type.dims,
               sizeof out[k].dims[0] * (size_t)(s->type.rank > 0 ? s->type.rank : 0));
        FR_CHECK(ir_type_numel(&s->type, &out[k].numel));
    }
    return true;
}

static kc_elem elem_of_value(executor *ex, const ir_value *v)
{
    kc_elem e = KC_E_I8;
    FR_CHECK(!v || elem_of(ex->slots[v->id].type.dtype, &e)); /* the supports check saw to it */
    return e;
}

/* QuantizeLinear and DequantizeLinear. */
static bool run_qdq(executor *ex, ir_node *n)
{
    kc_tensor in[3], y;
    shape_call sc;
    kn_qmap m;
    if (!raw_operands(ex, n, in, &y))
        return false;
    shape_call_init(ex, n, &sc);
    ir_value *zp = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (!kn_qmap_init(&sc.call, &sc.in[0], &sc.in[1], zp ? &sc.in[2] : NULL, &m))
        return false;
    kc_qmap km = {m.kind, m.axis_dim, m.inner, m.block, m.scale_axis_dim};
    if (n->op == IR_OP_QuantizeLinear)
        return kc_quantize_linear(ex->kc, in[0].data, in[1].data, zp ? in[2].data : NULL,
                                  elem_of_value(ex, n->outputs[0]), &km, in[0].numel, y.data) ||
               cuda_failed(ex, n);
    return kc_dequantize_linear(ex->kc, in[0].data, elem_of_value(ex, n->inputs[0]), in[1].data,
                                zp ? in[2].data : NULL, &km, in[0].numel, y.data) ||
           cuda_failed(ex, n);
}

/* DynamicQuantizeLinear: the range comes back to the host (outside a capture) so that an
 * infinity is the CPU kernel's error. */
static bool run_dynamic_quantize(executor *ex, ir_node *n)
{
    kc_tensor x, out[3];
    shape_call sc;
    float range[2] = {0, 0};
    if (!raw_operands(ex, n, &x, out))
        return false;
    shape_call_init(ex, n, &sc);
    if (!kc_dynamic_quantize(ex->kc, x.data, x.numel, out[0].data, out[1].data, out[2].data,
                             ex->capturing ? NULL : range))
        return cuda_failed(ex, n);
    if (isinf(range[0]) || isinf(range[1]))
        return kn_fail(&sc.call, "the input holds an infinity: no scale covers it");
    return true;
}

/* A zero point or scale of 1 or `len` values, as the CPU's check_param. */
static bool param_len(const kn_call *call, const kc_tensor *t, int64_t len, const char *what)
{
    if (!t->data || t->numel == 1 || t->numel == len)
        return true;
    return kn_fail(call, "%s has %lld values; expected 1 or %lld", what, (long long)t->numel,
                   (long long)len);
}

static kc_qoperand qoperand(executor *ex, const ir_node *n, const kc_tensor *in, uint32_t data,
                            uint32_t zp)
{
    return (kc_qoperand){in[data].data, elem_of_value(ex, n->inputs[data]), in[zp].data,
                         in[zp].numel};
}

/* MatMulInteger and QLinearMatMul, shapes as the CPU's int_matmul (numpy batch broadcasting). */
static bool run_int_matmul(executor *ex, ir_node *n)
{
    bool ql = n->op == IR_OP_QLinearMatMul;
    uint32_t ia = 0, ib = ql ? 3 : 1, iaz = 2, ibz = ql ? 5 : 3;
    kc_tensor in[8] = {0}, y;
    shape_call sc;
    if (!raw_operands(ex, n, in, &y))
        return false;
    shape_call_init(ex, n, &sc);
    const kc_tensor *a = &in[ia], *b = &in[ib];
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (ql &&
        (!param_len(&sc.call, &in[1], m, "a_scale") || !param_len(&sc.call, &in[4], nn, "b_scale")))
        return false;
    if (k != kb)
        return kn_fail(&sc.call, "inner dimensions differ (%lld vs %lld)", (long long)k,
                       (long long)kb);
    if (!param_len(&sc.call, &in[iaz], m, "a_zero_point") ||
        !param_len(&sc.call, &in[ibz], nn, "b_zero_point"))
        return false;
    kc_int_matmul p = {.m = m, .n = nn, .k = k, .batches = 1};
    p.batch_rank = y.rank - (a->rank >= 2) - (b->rank >= 2);
    int64_t astr = m * k, bstr = k * nn;
    for (int d = p.batch_rank - 1, da = a->rank - 3, db = b->rank - 3; d >= 0; d--, da--, db--) {
        p.a_strides[d] = da >= 0 && a->dims[da] != 1 ? astr : 0;
        p.b_strides[d] = db >= 0 && b->dims[db] != 1 ? bstr : 0;
        astr *= da >= 0 ? a->dims[da] : 1;
        bstr *= db >= 0 ? b->dims[db] : 1;
    }
    for (int d = 0; d < p.batch_rank; d++)
        p.batch_dims[d] = y.dims[d], p.batches *= y.dims[d];
    if (p.batches * m * nn != y.numel)
        return kn_fail(&sc.call, "the output was allocated with another shape than the product's");
    kc_qoperand qa = qoperand(ex, n, in, ia, iaz), qb = qoperand(ex, n, in, ib, ibz);
    if (!ql)
        return kc_int_matmul_run(ex->kc, &qa, &qb, &p, NULL, y.data) || cuda_failed(ex, n);
    kc_requant rq = {.a_scale = in[1].data,
                     .b_scale = in[4].data,
                     .y_scale = in[6].data,
                     .a_scale_n = in[1].numel,
                     .b_scale_n = in[4].numel,
                     .y_zp = in[7].data,
                     .yt = elem_of_value(ex, n->outputs[0]),
                     .row_div = nn,
                     .rows = m,
                     .col_div = 1,
                     .cols = nn};
    return kc_int_matmul_run(ex->kc, &qa, &qb, &p, &rq, y.data) || cuda_failed(ex, n);
}

/* ConvInteger and QLinearConv, geometry from the CPU's kn_conv_geom_init. */
static bool run_int_conv(executor *ex, ir_node *n)
{
    bool ql = n->op == IR_OP_QLinearConv;
    uint32_t ix = 0, iw = ql ? 3 : 1, ixz = 2, iwz = ql ? 5 : 3;
    kc_tensor in[9] = {0}, y;
    shape_call sc;
    kn_conv_geom g;
    if (!raw_operands(ex, n, in, &y))
        return false;
    shape_call_init(ex, n, &sc);
    int64_t m = in[iw].rank >= 1 ? in[iw].dims[0] : 1;
    if (ql &&
        (!param_len(&sc.call, &in[4], m, "w_scale") || !param_len(&sc.call, &in[8], m, "the bias")))
        return false;
    if (!kn_conv_geom_init(&sc.call, &sc.in[ix], &sc.in[iw], &sc.out[0], &g) ||
        !param_len(&sc.call, &in[ixz], 1, "x_zero_point") ||
        !param_len(&sc.call, &in[iwz], g.out_channels, "w_zero_point"))
        return false;
    kc_conv3d c = {.batch = g.batch,
                   .in_channels = g.in_channels,
                   .out_channels = g.out_channels,
                   .group = g.group};
    for (int i = 0, o = 3 - g.nspatial; i < 3; i++) {
        bool real = i >= o;
        c.in[i] = real ? g.in[i - o] : 1, c.out[i] = real ? g.out[i - o] : 1;
        c.kernel[i] = real ? g.kernel[i - o] : 1, c.strides[i] = real ? g.strides[i - o] : 1;
        c.dilations[i] = real ? g.dilations[i - o] : 1;
        c.pad_begin[i] = real ? g.pad_begin[i - o] : 0;
    }
    kc_qoperand qx = qoperand(ex, n, in, ix, ixz), qw = qoperand(ex, n, in, iw, iwz);
    if (!ql)
        return kc_int_conv_run(ex->kc, &qx, &qw, &c, NULL, y.data) || cuda_failed(ex, n);
    int64_t spatial = c.out[0] * c.out[1] * c.out[2];
    kc_requant rq = {.a_scale = in[1].data,
                     .b_scale = in[4].data,
                     .y_scale = in[6].data,
                     .a_scale_n = in[1].numel,
                     .b_scale_n = in[4].numel,
                     .y_zp = in[7].data,
                     .yt = elem_of_value(ex, n->outputs[0]),
                     .bias = in[8].data,
                     .row_div = 1,
                     .rows = 1,
                     .col_div = spatial,
                     .cols = m};
    return kc_int_conv_run(ex->kc, &qx, &qw, &c, &rq, y.data) || cuda_failed(ex, n);
}

/* ConvTranspose, geometry from the CPU's kn_tconv_geom_init. */
static bool run_conv_transpose(executor *ex, ir_node *n)
{
    kc_tensor in[3] = {0}, y;
    shape_call sc;
    kn_tconv_geom t;
    for (uint32_t i = 0; i < n->ninputs && i < 3; i++) {
        void *ptr = n->inputs[i] ? ensure_dev(ex, n->inputs[i], n) : NULL;
        if ((n->inputs[i] && !ptr) || !device_tensor(ex, n, n->inputs[i], ptr, &in[i]))
            return false;
    }
    if (!alloc_outputs(ex, n, &y))
        return false;
    shape_call_init(ex, n, &sc);
    if (!kn_tconv_geom_init(&sc.call, &sc.in[0], &sc.in[1], &t))
        return false;
    if (in[2].data && in[2].numel != t.out_channels)
        return kn_fail(&sc.call, "bias has %lld values for %lld output channels",
                       (long long)in[2].numel, (long long)t.out_channels);
    kc_conv3d c = {.batch = t.batch,
                   .in_channels = t.in_channels,
                   .out_channels = t.out_channels,
                   .group = t.group};
    for (int i = 0; i < 3; i++) {
        c.in[i] = t.in[i], c.out[i] = t.out[i], c.kernel[i] = t.k[i], c.strides[i] = t.s[i];
        c.dilations[i] = t.d[i], c.pad_begin[i] = t.pad[i];
    }
    return kc_conv_transpose(ex->kc, &in[0], &in[1], &in[2], &c, &y) || cuda_failed(ex, n);
}

/* Det and DFT, with the CPU kernels' checks. */
static bool run_det_dft(executor *ex, ir_node *n)
{
    kc_tensor in[2] = {0}, y;
    shape_call sc;
    if (!raw_operands(ex, n, in, &y))
        return false;
    shape_call_init(ex, n, &sc);
    const kc_tensor *x = &in[0];
    if (n->op == IR_OP_Det) {
        if (x->rank < 2)
            return kn_fail(&sc.call, "the input must be a float tensor of rank 2 or more");
        int64_t m = x->dims[x->rank - 1];
        if (x->dims[x->rank - 2] != m)
            return kn_fail(&sc.call, "the matrices are not square");
        int64_t count = m ? x->numel / (m * m) : 1;
        return kn_check_numel(&sc.call, 0, count) &&
               (kc_det(ex->kc, x->data, count, m, y.data) || cuda_failed(ex, n));
    }
    int axis;
    if (x->rank < 2 || y.rank != x->rank)
        return kn_fail(&sc.call, "the input must be a float tensor [..., 1 or 2]");
    if (!kn_axis(&sc.call, ir_get_int(n, "axis"), x->rank - 1, "axis", &axis))
        return false;
    int64_t comp = x->dims[x->rank - 1], len = x->dims[axis], dft_len = len;
    const int64_t *given;
    int ngiven;
    if (!host_ints(ex, n, 1, &given, &ngiven))
        return false;
    if (given && ngiven >= 1)
        dft_len = given[0];
    int64_t outlen = y.dims[axis];
    if ((comp != 1 && comp != 2) || dft_len < 1 || y.dims[y.rank - 1] != 2)
        return kn_fail(&sc.call, "the last dim must be 1 or 2, and dft_length at least 1");
    int64_t outer = dims_prod(x->dims, 0, axis), inner = dims_prod(x->dims, axis + 1, x->rank - 1);
    return kn_check_numel(&sc.call, 0, outer * outlen * inner * 2) &&
           (kc_dft(ex->kc, x->data, outer, len, inner, comp, dft_len, outlen,
                   ir_get_int(n, "inverse") != 0, y.data) ||
            cuda_failed(ex, n));
}

/* Einsum: the equation resolved and the shapes checked as the CPU kernel does (its errors). */
static bool run_einsum(executor *ex, ir_node *n)
{
    kc_tensor in[KC_EINSUM_MAX_INPUTS], y;
    shape_call sc;
    if (n->ninputs > KC_EINSUM_MAX_INPUTS)
        return report(ex, n, "the CUDA Einsum takes at most %d inputs", KC_EINSUM_MAX_INPUTS);
    if (!raw_operands(ex, n, in, &y))
        return false;
    shape_call_init(ex, n, &sc);
    int ranks[IR_EINSUM_MAX_INPUTS];
    for (uint32_t i = 0; i < n->ninputs; i++)
        ranks[i] = in[i].rank;
    const char *eq = ir_get_string(n, "equation"), *err;
    ir_einsum e;
    if (!ir_einsum_parse(eq, ranks, (int)n->ninputs, &e, &err))
        return kn_fail(&sc.call, "equation \"%s\" has %s", eq, err);
    int64_t size[IR_EINSUM_LABELS], stride[KC_EINSUM_MAX_INPUTS][IR_EINSUM_LABELS];
    bool used[IR_EINSUM_LABELS] = {false}, in_out[IR_EINSUM_LABELS] = {false};
    memset(stride, 0, sizeof stride);
    for (int l = 0; l < IR_EINSUM_LABELS; l++)
        size[l] = 1;
    for (int i = 0; i < e.ninputs; i++) {
        int64_t s = 1;
        for (int k = e.rank[i] - 1; k >= 0; k--) {
            int l = e.labels[i][k];
            int64_t d = in[i].dims[k];
            if (used[l] && size[l] != d && d != 1 && size[l] != 1)
                return kn_fail(&sc.call,
                               "equation \"%s\": a dim is %lld in one place and %lld in another",
                               eq, (long long)size[l], (long long)d);
            if (!used[l] || size[l] == 1)
                size[l] = d;
            used[l] = true;
            if (d != 1)
                stride[i][l] += s; /* a repeated label walks the diagonal */
            s *= d;
        }
    }
    kc_einsum p = {.ninputs = e.ninputs, .out_rank = e.out_rank};
    int64_t out_numel = 1;
    for (int k = 0; k < e.out_rank; k++) {
        int l = e.out[k];
        in_out[l] = true;
        out_numel *= size[l];
        if (y.rank != e.out_rank || y.dims[k] != size[l])
            return kn_fail(&sc.call, "the output was allocated with another shape than the "
                                     "equation's");
        p.out_dims[k] = size[l];
        for (int i = 0; i < e.ninputs; i++)
            p.out_strides[i][k] = stride[i][l];
    }
    if (!kn_check_numel(&sc.call, 0, out_numel))
        return false;
    for (int l = 0; l < IR_EINSUM_LABELS; l++) {
        if (!used[l] || in_out[l])
            continue;
        if (p.nsum == KC_EINSUM_MAX_SUM)
            return report(ex, n, "the CUDA Einsum sums over at most %d labels", KC_EINSUM_MAX_SUM);
        p.sum_dims[p.nsum] = size[l];
        for (int i = 0; i < e.ninputs; i++)
            p.sum_strides[i][p.nsum] = stride[i][l];
        p.nsum++;
    }
    const void *ptrs[KC_EINSUM_MAX_INPUTS];
    for (int i = 0; i < e.ninputs; i++)
        ptrs[i] = in[i].data;
    kc_dtype dt;
    if (!kc_dtype_of(ex->slots[n->outputs[0]->id].type.dtype, &dt))
        return report(ex, n, "a dtype no CUDA kernel takes");
    return kc_einsum_run(ex->kc, dt, ptrs, &p, out_numel, y.data) || cuda_failed(ex, n);
}

/* RNN, GRU and LSTM: shapes checked as the CPU kernel's setup, sequence lengths read on the host
 * and checked against [0, seq] as the CPU does. */
static bool run_rnn_op(executor *ex, ir_node *n)
{
    kc_tensor in[8] = {0}, out[3] = {0};
    shape_call sc;
    if (!raw_operands(ex, n, in, out))
        return false;
    shape_call_init(ex, n, &sc);
    int kind = n->op == IR_OP_RNN ? 1 : n->op == IR_OP_GRU ? 3 : 4;
    bool lstm = kind == 4;
    const char *dir = ir_get_string(n, "direction");
    kc_rnn_params m = {.kind = kind,
                       .batch_first = ir_get_int(n, "layout") == 1,
                       .lbr = kind == 3 && ir_get_int(n, "linear_before_reset") != 0,
                       .input_forget = lstm && ir_get_int(n, "input_forget") != 0,
                       .reverse_only = strcmp(dir, "reverse") == 0,
                       .clip = ir_get_float(n, "clip"),
                       .dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1};
    const kc_tensor *x = &in[0], *w = &in[1], *r = &in[2], *b = &in[3], *lens = &in[4];
    const kc_tensor *h0 = &in[5], *c0 = lstm ? &in[6] : NULL, *pp = lstm ? &in[7] : NULL;
    if (x->rank != 3 || w->rank != 3 || r->rank != 3)
        return kn_fail(&sc.call, "X, W and R must be float tensors of rank 3");
    m.seq = x->dims[m.batch_first ? 1 : 0];
    m.batch = x->dims[m.batch_first ? 0 : 1];
    m.input = x->dims[2];
    m.hidden = r->dims[2];
    int64_t gh = kind * m.hidden, state = m.dirs * m.batch * m.hidden;
    if (w->dims[0] != m.dirs || w->dims[1] != gh || w->dims[2] != m.input || r->dims[0] != m.dirs ||
        r->dims[1] != gh || (b->data && b->numel != m.dirs * 2 * gh) ||
        (lens->data && lens->numel != m.batch) || (h0->data && h0->numel != state) ||
        (c0 && c0->data && c0->numel != state) ||
        (pp && pp->data && pp->numel != m.dirs * 3 * m.hidden))
        return kn_fail(&sc.call, "the weights, biases or states do not fit X and hidden_size %lld",
                       (long long)m.hidden);
    if ((n->noutputs > 0 && !kn_check_numel(&sc.call, 0, m.seq * state)) ||
        (n->noutputs > 1 && !kn_check_numel(&sc.call, 1, state)) ||
        (n->noutputs > 2 && !kn_check_numel(&sc.call, 2, state)))
        return false;
    bool lens64 = false;
    if (lens->data) { /* one per batch entry: read here, as many as there are */
        lens64 = ex->slots[n->inputs[4]->id].type.dtype == IR_I64;
        const void *host = ensure_host(ex, n->inputs[4], n);
        if (!host)
            return false;
        for (int64_t i = 0; i < lens->numel; i++) {
            int64_t v = lens64 ? ((const int64_t *)host)[i] : ((const int32_t *)host)[i];
            if (v < 0 || v > m.seq)
                return kn_fail(&sc.call, "sequence length %lld is not in [0, %lld]", (long long)v,
                               (long long)m.seq);
        }
    }
    kc_rnn_operands o = {.x = x->data,
                         .w = w->data,
                         .r = r->data,
                         .b = b->data,
                         .lens = lens->data,
                         .h0 = h0->data,
                         .c0 = c0 ? c0->data : NULL,
                         .p = pp ? pp->data : NULL,
                         .lens64 = lens64,
                         .y = n->noutputs > 0 ? out[0].data : NULL,
                         .yh = n->noutputs > 1 ? out[1].data : NULL,
                         .yc = n->noutputs > 2 ? out[2].data : NULL};
    return kc_rnn(ex->kc, &m, &o) || cuda_failed(ex, n);
}

/* The cuda-c ops' launches; false in *handled for another op. */
static bool run_linalg_node(executor *ex, ir_node *n, bool *handled)
{
    *handled = true;
    switch (n->op) {
    case IR_OP_QuantizeLinear:
    case IR_OP_DequantizeLinear: return run_qdq(ex, n);
    case IR_OP_DynamicQuantizeLinear: return run_dynamic_quantize(ex, n);
    case IR_OP_MatMulInteger:
    case IR_OP_QLinearMatMul: return run_int_matmul(ex, n);
    case IR_OP_ConvInteger:
    case IR_OP_QLinearConv: return run_int_conv(ex, n);
    case IR_OP_ConvTranspose: return run_conv_transpose(ex, n);
    case IR_OP_Det:
    case IR_OP_DFT: return run_det_dft(ex, n);
    case IR_OP_Einsum: return run_einsum(ex, n);
    case IR_OP_RNN:
    case IR_OP_GRU:
    case IR_OP_LSTM: return run_rnn_op(ex, n);
    default: *handled = false; return false;
    }
}

/* ---- cuda-a: the integer kernel (integer.cu) and the generators (generate.cu) ---- */

/* Element k of input i read on the host as its CPU kernel reads it (kn_get_f64 and kn_get_int on
 * the view the CPU executor gives it: f16/bf16 widened to f32); false after reporting. */
static bool host_elem(executor *ex, ir_node *n, uint32_t i, int64_t k, double *f, int64_t *iv)
{
    ir_value *v = n->inputs[i];
    const void *data = ensure_host(ex, v, n);
    if (!data)
        return false;
    ir_dtype dt = ex->slots[v->id].type.dtype;
    float w;
    kn_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = (void *)data};
    if (dt == IR_F16 || dt == IR_BF16) {
        uint16_t h = ((const uint16_t *)data)[k];
        w = dt == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h);
        t = (kn_tensor){.dtype = IR_F32, .rank = 0, .numel = 1, .data = &w};
        k = 0;
    }
    if (f)
        *f = kn_get_f64(&t, k);
    if (iv)
        *iv = kn_get_int(&t, k);
    return true;
}

static int64_t slot_numel(const executor *ex, const ir_value *v)
{
    int64_t numel = 0;
    FR_CHECK(ir_type_numel(&ex->slots[v->id].type, &numel));
    return numel;
}

/* v stored in dt as the CPU kernels store a double (kn_set_f64): floats through f32 and then the
 * 16-bit storage, integers truncated and saturated; the element's bytes in the low bytes. */
static uint64_t elem_bits(ir_dtype dt, double v)
{
    uint64_t bits = 0;
    if (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16) {
        float f = (float)v;
        uint16_t h = dt == IR_F16 ? f32_to_f16(f) : f32_to_bf16(f);
        if (dt == IR_F32)
            memcpy(&bits, &f, sizeof f);
        else
            memcpy(&bits, &h, sizeof h);
    } else {
        kn_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = &bits};
        kn_set_f64(&t, 0, v);
    }
    return bits;
}

static kc_int_op int_op_of(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_Add: return KC_INT_ADD;
    case IR_OP_Sub: return KC_INT_SUB;
    case IR_OP_Mul: return KC_INT_MUL;
    case IR_OP_Div: return KC_INT_DIV;
    case IR_OP_Mod: return ir_get_int(n, "fmod") != 0 ? KC_INT_FMOD : KC_INT_MOD;
    case IR_OP_Max: return KC_INT_MAX;
    case IR_OP_Min: return KC_INT_MIN;
    case IR_OP_BitwiseAnd: return KC_INT_AND;
    case IR_OP_BitwiseOr: return KC_INT_OR;
    case IR_OP_BitwiseXor: return KC_INT_XOR;
    case IR_OP_BitShift:
        return strcmp(ir_get_string(n, "direction"), "LEFT") == 0 ? KC_INT_SHL : KC_INT_SHR;
    case IR_OP_Neg: return KC_INT_NEG;
    case IR_OP_Abs: return KC_INT_ABS;
    case IR_OP_BitwiseNot: return KC_INT_NOT;
    case IR_OP_Sign: return KC_INT_SIGN;
    case IR_OP_Relu: return KC_INT_RELU;
    case IR_OP_Clip: return KC_INT_CLIP;
    case IR_OP_Shrink: return KC_INT_SHRINK;
    default: FR_UNREACHABLE(); return KC_INT_ADD;
    }
}

/* Clip's integer bound (input `i`, else attribute `attr`, else `none`), as the CPU reads it. */
static bool int_clip_bound(executor *ex, ir_node *n, uint32_t i, const char *attr, int64_t none,
                           int64_t *out)
{
    *out = none;
    if (i < n->ninputs && n->inputs[i]) {
        int64_t count = slot_numel(ex, n->inputs[i]);
        if (count != 1)
            return report(ex, n, "%s must be a scalar, not %lld values", attr, (long long)count);
        return host_elem(ex, n, i, 0, NULL, out);
    }
    if (ir_node_attr(n, attr))
        *out = kn_float_to_int(ir_get_float(n, attr), IR_I64);
    return true;
}

/* Integer arithmetic, Mod, BitShift and the Bitwise* ops; zero divisors are the CPU's errors,
 * found on the host before the launch. Max and Min fold their inputs in order into Y. */
static bool run_int_op(executor *ex, ir_node *n)
{
    kc_elem t;
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype;
    if (!elem_of(dt, &t))
        return report(ex, n, "%s: no CUDA integer kernel takes it", ir_dtype_name(dt));
    kc_int_op op = int_op_of(n);
    kc_int_args args = {INT64_MIN, INT64_MAX, 0, 0};
    kc_tensor y, in[2] = {{0}, {0}};
    if (!raw_output(ex, n, &y))
        return false;
    bool divides = op == KC_INT_DIV || op == KC_INT_MOD || op == KC_INT_FMOD;
    if (divides && !ir_dtype_is_float(dt) && y.numel > 0) {
        int64_t count = slot_numel(ex, n->inputs[1]);
        for (int64_t k = 0; k < count; k++) {
            int64_t v;
            if (!host_elem(ex, n, 1, k, NULL, &v))
                return false;
            if (v == 0)
                return report(ex, n, "integer %s by zero (divisor element %lld)",
                              op == KC_INT_DIV ? "division" : "modulo", (long long)k);
        }
    }
    if (op == KC_INT_CLIP && (!int_clip_bound(ex, n, 1, "min", INT64_MIN, &args.lo) ||
                              !int_clip_bound(ex, n, 2, "max", INT64_MAX, &args.hi)))
        return false;
    if (op == KC_INT_SHRINK) {
        args.bias = ir_get_float(n, "bias");
        args.lambd = ir_get_float(n, "lambd");
    }
    bool unary = op >= KC_INT_NEG;
    uint32_t operands = unary ? 1 : n->ninputs;
    if (!raw_tensor(ex, n, n->inputs[0], &in[0]))
        return false;
    if (operands == 1) /* a unary op, or Max/Min of one input: max(x, x) broadcast is x */
        return kc_int_ew(ex->kc, op, &in[0], &in[0], t, &args, &y) || cuda_failed(ex, n);
    for (uint32_t k = 1; k < operands; k++) {
        if (!raw_tensor(ex, n, n->inputs[k], &in[1]))
            return false;
        if (!kc_int_ew(ex->kc, op, k == 1 ? &in[0] : &y, &in[1], t, &args, &y))
            return cuda_failed(ex, n);
    }
    return true;
}

/* Range: start, limit and delta read on the host and checked as the CPU kernel checks them; the
 * element count must be the one inference gave the output. */
static bool run_range(executor *ex, ir_node *n, kc_tensor *y, kc_elem t, ir_dtype dt)
{
    double f[3];
    int64_t iv[3];
    for (uint32_t i = 0; i < 3; i++)
        if (slot_numel(ex, n->inputs[i]) != 1)
            return report(ex, n, "start, limit and delta must be scalars");
    for (uint32_t i = 0; i < 3; i++)
        if (!host_elem(ex, n, i, 0, &f[i], &iv[i]))
            return false;
    int64_t count;
    if (ir_dtype_is_float(dt)) {
        float start = (float)f[0], limit = (float)f[1], delta = (float)f[2];
        if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
            return report(ex, n, "delta must be non-zero and start, limit, delta finite");
        double c = ceil(((double)limit - start) / delta);
        count = c > 0 ? (int64_t)c : 0;
        if (count != y->numel)
            return report(ex, n, "Range gives %lld values; the output holds %lld", (long long)count,
                          (long long)y->numel);
        return kc_range(ex->kc, t, start, delta, 0, 0, y->data, count) || cuda_failed(ex, n);
    }
    if (iv[2] == 0)
        return report(ex, n, "delta must be non-zero");
    __int128 span = (__int128)iv[1] - iv[0], d = iv[2];
    __int128 c = span / d + ((span % d != 0) && ((span > 0) == (d > 0)));
    count = c > 0 ? (int64_t)(c > IR_MAX_NUMEL ? IR_MAX_NUMEL + 1 : c) : 0;
    if (count != y->numel)
        return report(ex, n, "Range gives %lld values; the output holds %lld", (long long)count,
                      (long long)y->numel);
    return kc_range(ex->kc, t, 0, 0, iv[0], iv[2], y->data, count) || cuda_failed(ex, n);
}

/* OneHot: depth and [off, on] read on the host, checked as the CPU kernel checks them. */
static bool run_one_hot(executor *ex, ir_node *n, kc_tensor *y, ir_dtype dt)
{
    kc_tensor idx;
    kc_elem it;
    if (!raw_tensor(ex, n, n->inputs[0], &idx))
        return false;
    if (!elem_of(ex->slots[n->inputs[0]->id].type.dtype, &it))
        return report(ex, n, "a dtype no CUDA kernel takes");
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -(idx.rank + 1) || axis > idx.rank)
        return report(ex, n, "axis %lld is out of range for rank %d", (long long)axis,
                      idx.rank + 1);
    int ax = (int)(axis < 0 ? axis + idx.rank + 1 : axis);
    ir_value *values = n->inputs[2];
    const void *vals = ensure_host(ex, values, n);
    if (!vals)
        return false;
    if (slot_numel(ex, values) != 2 || ex->slots[values->id].type.dtype != dt)
        return report(ex, n, "values must hold [off, on] in the output's dtype");
    double depth_value;
    if (!host_elem(ex, n, 1, 0, &depth_value, NULL))
        return false;
    if (!(depth_value >= 1 && depth_value <= (double)IR_MAX_NUMEL))
        return report(ex, n, "depth %g is not in [1, 2^40]", depth_value);
    int64_t depth = (int64_t)depth_value;
    int64_t outer = dims_prod(idx.dims, 0, ax), inner = dims_prod(idx.dims, ax, idx.rank);
    if (outer * depth * inner != y->numel)
        return report(ex, n, "the output holds %lld values, not %lld", (long long)y->numel,
                      (long long)(outer * depth * inner));
    size_t es = ir_dtype_size(dt);
    uint64_t off = 0, on = 0;
    memcpy(&off, vals, es);
    memcpy(&on, (const char *)vals + es, es);
    return kc_one_hot(ex->kc, idx.data, it, outer, depth, inner, es, off, on, y->data) ||
           cuda_failed(ex, n);
}

/* ReverseSequence: every sequence length checked on the host as the CPU kernel checks it. */
static bool run_reverse_sequence(executor *ex, ir_node *n, kc_tensor *y, ir_dtype dt)
{
    kc_tensor x, lens;
    kc_elem lt;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_tensor(ex, n, n->inputs[1], &lens))
        return false;
    int64_t b_axis = ir_get_int(n, "batch_axis"), t_axis = ir_get_int(n, "time_axis");
    if (x.rank < 2 || !((b_axis == 0 && t_axis == 1) || (b_axis == 1 && t_axis == 0)))
        return report(ex, n, "batch_axis and time_axis must be 0 and 1 of a rank-2+ input");
    if (!elem_of(ex->slots[n->inputs[1]->id].type.dtype, &lt))
        return report(ex, n, "a dtype no CUDA kernel takes");
    int64_t batch = x.dims[b_axis], steps = x.dims[t_axis];
    if (lens.numel != batch)
        return report(ex, n, "sequence_lens has %lld values for a batch of %lld",
                      (long long)lens.numel, (long long)batch);
    for (int64_t b = 0; b < batch; b++) {
        int64_t len;
        if (!host_elem(ex, n, 1, b, NULL, &len))
            return false;
        if (len < 0 || len > steps)
            return report(ex, n, "sequence length %lld is not in [0, %lld]", (long long)len,
                          (long long)steps);
    }
    return kc_reverse_sequence(ex->kc, x.data, ir_dtype_size(dt), lens.data, lt, b_axis == 0, batch,
                               steps, dims_prod(x.dims, 2, x.rank), y->data) ||
           cuda_failed(ex, n);
}

/* The window functions' size, read and checked on the host as the CPU kernel reads it. */
static bool run_window(executor *ex, ir_node *n, kc_tensor *y, kc_elem t)
{
    int64_t size;
    if (!host_elem(ex, n, 0, 0, NULL, &size))
        return false;
    if (size < 0)
        return report(ex, n, "size %lld is negative", (long long)size);
    if (size != y->numel)
        return report(ex, n, "the output holds %lld values, not %lld", (long long)y->numel,
                      (long long)size);
    bool periodic = ir_get_int(n, "periodic") != 0;
    double a0 = n->op == IR_OP_HannWindow ? 0.5 : n->op == IR_OP_HammingWindow ? 25.0 / 46 : 0.42;
    double a1 = n->op == IR_OP_HannWindow ? 0.5 : n->op == IR_OP_HammingWindow ? 21.0 / 46 : 0.5;
    double a2 = n->op == IR_OP_BlackmanWindow ? 0.08 : 0;
    return kc_window(ex->kc, t, a0, a1, a2, size, periodic, y->data) || cuda_failed(ex, n);
}

/* Shape, Size, ConstantOfShape, CastLike, Range, EyeLike, the windows, OneHot, ReverseSequence,
 * RandomUniform(Like). Shape and Size read only their input's type, never its data. */
static bool run_gen_op(executor *ex, ir_node *n)
{
    kc_tensor y;
    kc_elem t;
    ir_dtype dt = ex->slots[n->outputs[0]->id].type.dtype;
    if (!elem_of(dt, &t))
        return report(ex, n, "%s: no CUDA kernel takes it", ir_dtype_name(dt));
    if (!raw_output(ex, n, &y))
        return false;
    const ir_type *x = n->ninputs > 0 && n->inputs[0] ? &ex->slots[n->inputs[0]->id].type : NULL;
    switch (n->op) {
    case IR_OP_Shape: {
        int64_t start = ir_get_int(n, "start"), end = ir_get_int(n, "end"), r = x->rank;
        start = start < 0 ? (start + r < 0 ? 0 : start + r) : (start > r ? r : start);
        end = end < 0 ? (end + r < 0 ? 0 : end + r) : (end > r ? r : end);
        int64_t count = end > start ? end - start : 0;
        if (count != y.numel)
            return report(ex, n, "the output holds %lld values, not %lld", (long long)y.numel,
                          (long long)count);
        return kc_set_i64(ex->kc, x->dims + start, (int)count, y.data) || cuda_failed(ex, n);
    }
    case IR_OP_Size: {
        int64_t numel = slot_numel(ex, n->inputs[0]);
        return kc_set_i64(ex->kc, &numel, 1, y.data) || cuda_failed(ex, n);
    }
    case IR_OP_ConstantOfShape:
        return kc_fill(ex->kc, y.data, ir_dtype_size(dt), elem_bits(dt, ir_get_float(n, "value")),
                       y.numel) ||
               cuda_failed(ex, n);
    case IR_OP_CastLike: {
        kc_tensor a;
        kc_elem at;
        if (!raw_tensor(ex, n, n->inputs[0], &a))
            return false;
        if (!elem_of(x->dtype, &at))
            return report(ex, n, "%s: no CUDA kernel takes it", ir_dtype_name(x->dtype));
        return kc_cast(ex->kc, a.data, at, y.data, t, y.numel) || cuda_failed(ex, n);
    }
    case IR_OP_Range: return run_range(ex, n, &y, t, dt);
    case IR_OP_EyeLike:
        if (y.rank != 2)
            return report(ex, n, "the input must be a matrix");
        return kc_eye(ex->kc, y.data, ir_dtype_size(dt), elem_bits(dt, 1), y.dims[0], y.dims[1],
                      ir_get_int(n, "k")) ||
               cuda_failed(ex, n);
    case IR_OP_HannWindow:
    case IR_OP_HammingWindow:
    case IR_OP_BlackmanWindow: return run_window(ex, n, &y, t);
    case IR_OP_OneHot: return run_one_hot(ex, n, &y, dt);
    case IR_OP_ReverseSequence: return run_reverse_sequence(ex, n, &y, dt);
    case IR_OP_RandomUniform:
    case IR_OP_RandomUniformLike: {
        double seed = ir_get_float(n, "seed");
        uint64_t s = fabs(seed) < 9e18 ? (uint64_t)(int64_t)llround(seed) : 0; /* NaN: absent */
        if (!ir_dtype_is_float(dt))
            return report(ex, n, "the output must be a float tensor");
        return kc_random_uniform(ex->kc, t, s, ir_get_float(n, "low"), ir_get_float(n, "high"),
                                 y.data, y.numel) ||
               cuda_failed(ex, n);
    }
    default: return report(ex, n, "%s has no CUDA generator", ir_op_name(n->op));
    }
}

static bool is_gen_op(ir_op op)
{
    switch (op) {
    case IR_OP_Shape:
    case IR_OP_Size:
    case IR_OP_ConstantOfShape:
    case IR_OP_CastLike:
    case IR_OP_Range:
    case IR_OP_EyeLike:
    case IR_OP_HannWindow:
    case IR_OP_HammingWindow:
    case IR_OP_BlackmanWindow:
    case IR_OP_OneHot:
    case IR_OP_ReverseSequence:
    case IR_OP_RandomUniform:
    case IR_OP_RandomUniformLike: return true;
    default: return false;
    }
}

/* ---- cuda-b: normalizations, windows, losses, TopK and scatter reductions ----
 * Each checks what the CPU kernel checks, with its message, before launching. */

/* Device buffers for every output of n as kc_tensors of shape only (out holds noutputs). */
static bool raw_outputs(executor *ex, ir_node *n, kc_tensor *out)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->dev = dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[k]->name)))
            return cuda_failed(ex, n);
        out[k] = (kc_tensor){.rank = s->type.rank, .data = s->dev->ptr};
        memcpy(out[k].dims, s->type.dims,
               sizeof out[k].dims[0] * (size_t)(out[k].rank > 0 ? out[k].rank : 0));
        FR_CHECK(ir_type_numel(&s->type, &out[k].numel));
    }
    return true;
}

/* The device tensors of n's first `count` inputs (data NULL for an absent one). */
static bool device_inputs(executor *ex, ir_node *n, uint32_t count, kc_tensor *in)
{
    for (uint32_t i = 0; i < count; i++) {
        ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
        void *ptr = v ? ensure_dev(ex, v, n) : NULL;
        if ((v && !ptr) || !device_tensor(ex, n, v, ptr, &in[i]))
            return false;
    }
    return true;
}

/* Index element j of a host i32/i64 tensor. */
static int64_t host_index(const void *data, ir_dtype dt, int64_t j)
{
    return dt == IR_I64 ? ((const int64_t *)data)[j] : ((const int32_t *)data)[j];
}

/* LogSoftmax and Hardmax along their axis. */
static bool run_log_softmax(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    int axis = 0; /* set by axis_of before any use */
    if (!device_inputs(ex, n, 1, &x) || !axis_of(ex, n, x.rank, &axis) || !alloc_outputs(ex, n, &y))
        return false;
    return kc_log_softmax(ex->kc, x.dtype, x.data, dims_prod(x.dims, 0, axis), x.dims[axis],
                          dims_prod(x.dims, axis + 1, x.rank), n->op == IR_OP_Hardmax, y.data) ||
           cuda_failed(ex, n);
}

static bool run_global_max_pool(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    if (!device_inputs(ex, n, 1, &x))
        return false;
    if (x.rank < 3)
        return report(ex, n, "the input must be a float tensor of rank 3 or more");
    int64_t planes = x.dims[0] * x.dims[1], size = planes ? x.numel / planes : 0;
    if (size == 0 && planes > 0)
        return report(ex, n, "the spatial dims are empty: there is no maximum");
    return alloc_outputs(ex, n, &y) &&
           (kc_plane_max(ex->kc, x.dtype, x.data, planes, size, y.data) || cuda_failed(ex, n));
}

/* LayerNormalization with its Mean and InvStdDev outputs. */
static bool run_layer_norm_stats(executor *ex, ir_node *n)
{
    kc_tensor in[3], out[3] = {{0}};
    int axis = 0; /* set by axis_of before any use */
    if (!device_inputs(ex, n, 3, in) || !axis_of(ex, n, in[0].rank, &axis) ||
        !alloc_outputs(ex, n, out))
        return false;
    return kc_layer_norm_stats(
               ex->kc, &in[0], &in[1], &in[2], axis, (float)ir_get_float(n, "epsilon"), &out[0],
               n->noutputs > 1 ? &out[1] : NULL, n->noutputs > 2 ? &out[2] : NULL) ||
           cuda_failed(ex, n);
}

static bool run_group_norm(executor *ex, ir_node *n)
{
    kc_tensor in[3], y;
    if (!device_inputs(ex, n, 3, in))
        return false;
    if (in[0].rank < 2)
        return report(ex, n, "the input must be a float tensor of rank 2 or more");
    int64_t groups = ir_get_int(n, "num_groups"), c = in[0].dims[1];
    if (groups < 1 || c % groups != 0 || in[1].numel != c || in[2].numel != c)
        return report(ex, n,
                      "%lld channels, %lld groups: scale and bias need one value per "
                      "channel",
                      (long long)c, (long long)groups);
    return alloc_outputs(ex, n, &y) &&
           (kc_group_norm(ex->kc, &in[0], &in[1], &in[2], groups, ir_get_float(n, "epsilon"), &y) ||
            cuda_failed(ex, n));
}

static bool run_mvn(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    if (!device_inputs(ex, n, 1, &x))
        return false;
    const int64_t *vals;
    uint32_t count = ir_get_ints(n, "axes", &vals);
    bool reduced[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < count; k++) {
        if (vals[k] < -x.rank || vals[k] >= x.rank)
            return report(ex, n, "axis %lld is out of range for rank %d", (long long)vals[k],
                          x.rank);
        reduced[vals[k] < 0 ? vals[k] + x.rank : vals[k]] = true;
    }
    return alloc_outputs(ex, n, &y) && (kc_mvn(ex->kc, &x, reduced, &y) || cuda_failed(ex, n));
}

static bool run_lrn(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    int64_t size = ir_get_int(n, "size");
    if (!device_inputs(ex, n, 1, &x))
        return false;
    if (x.rank < 3)
        return report(ex, n, "the input must be a float tensor of rank 3 or more");
    if (size < 1)
        return report(ex, n, "size %lld is below 1", (long long)size);
    return alloc_outputs(ex, n, &y) &&
           (kc_lrn(ex->kc, &x, size, ir_get_float(n, "alpha"), ir_get_float(n, "beta"),
                   ir_get_float(n, "bias"), &y) ||
            cuda_failed(ex, n));
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the targets checked on the host. */
static bool run_loss(executor *ex, ir_node *n)
{
    kc_tensor x, w = {0}, t, out[2] = {{0}};
    bool has_w = n->ninputs > 2 && n->inputs[2];
    if (!device_inputs(ex, n, 1, &x) || !raw_tensor(ex, n, n->inputs[1], &t))
        return false;
    if (has_w) {
        void *ptr = ensure_dev(ex, n->inputs[2], n);
        if (!ptr || !device_tensor(ex, n, n->inputs[2], ptr, &w))
            return false;
    }
    const char *red = ir_get_string(n, "reduction");
    int reduction = strcmp(red, "none") == 0   ? 0
                    : strcmp(red, "sum") == 0  ? 1
                    : strcmp(red, "mean") == 0 ? 2
                                               : -1;
    if (reduction < 0)
        return report(ex, n, "reduction \"%s\" is not none, sum or mean", red);
    if (x.rank < 2)
        return report(ex, n, "the input must be a float tensor [N, C, ...]");
    int64_t nb = x.dims[0], c = x.dims[1], inner = nb && c ? x.numel / (nb * c) : 0;
    if (t.numel != nb * inner || (has_w && w.numel != c))
        return report(ex, n, "target must be [N, d...] and weight [C] for input [N, C, d...]");
    ir_dtype tt = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t ignore = ir_get_int(n, "ignore_index");
    for (int64_t j = 0; j < t.numel; j++) {
        int64_t v = host_index(host, tt, j);
        if (v != ignore && (v < 0 || v >= c))
            return report(ex, n, "target %lld is not a class in [0, %lld)", (long long)v,
                          (long long)c);
    }
    return alloc_outputs(ex, n, out) &&
           (kc_nll_loss(ex->kc, &x, n->op == IR_OP_SoftmaxCrossEntropyLoss, t.data, tt == IR_I64,
                        has_w ? &w : NULL, reduction, ignore, &out[0],
                        n->noutputs > 1 ? &out[1] : NULL) ||
            cuda_failed(ex, n));
}

/* TopK: k read on the host and checked as the CPU kernel checks it. */
static bool run_topk(executor *ex, ir_node *n)
{
    kc_tensor x, out[2];
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    const int64_t *k = NULL;
    int nk = 0;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !host_ints(ex, n, 1, &k, &nk))
        return false;
    if (!elem_of(ex->slots[n->inputs[0]->id].type.dtype, &et) || et == KC_E_BOOL)
        return report(ex, n, "input dtype %s is not supported",
                      ir_dtype_name(ex->slots[n->inputs[0]->id].type.dtype));
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -x.rank || axis >= x.rank)
        return report(ex, n, "axis %lld is out of range for rank %d", (long long)axis, x.rank);
    int ax = (int)(axis < 0 ? axis + x.rank : axis);
    int64_t len = x.dims[ax];
    if (nk < 1 || k[0] < 0 || k[0] > len)
        return report(ex, n, "k = %lld is not in [0, %lld]", nk ? (long long)k[0] : -1LL,
                      (long long)len);
    return raw_outputs(ex, n, out) &&
           (kc_topk(ex->kc, et, x.data, dims_prod(x.dims, 0, ax), len,
                    dims_prod(x.dims, ax + 1, x.rank), k[0], ir_get_int(n, "largest") != 0,
                    out[0].data, out[1].data) ||
            cuda_failed(ex, n));
}

/* One update row aimed at an element offset of Y. */
typedef struct scatter_hit {
    int64_t target, member;
} scatter_hit;

static int by_target_then_member(const void *a, const void *b)
{
    const scatter_hit *x = a, *y = b;
    if (x->target != y->target)
        return x->target < y->target ? -1 : 1;
    return (x->member > y->member) - (x->member < y->member);
}

/* The hits of ScatterElements (one per index element) or ScatterND (one per tuple, `slice`
 * elements each), every index checked with the CPU kernel's message; NULL after reporting. */
static scatter_hit *scatter_hits(executor *ex, ir_node *n, const kc_tensor *x, const kc_tensor *idx,
                                 const void *host, ir_dtype it, int64_t *count, int64_t *slice)
{
    int64_t xs[IR_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->dims[d];
    }
    bool nd = n->op == IR_OP_ScatterND;
    int64_t depth = !nd ? 1 : idx->rank >= 1 ? idx->dims[idx->rank - 1] : 0;
    int ax = 0;
    if (nd) {
        if (depth < 1 || depth > x->rank) {
            report(ex, n, "indices' last dim %lld does not fit data of rank %d", (long long)depth,
                   x->rank);
            return NULL;
        }
        *count = dims_prod(idx->dims, 0, idx->rank - 1);
        *slice = dims_prod(x->dims, (int)depth, x->rank);
    } else {
        int64_t axis = ir_get_int(n, "axis");
        if (axis < -x->rank || axis >= x->rank) {
            report(ex, n, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
            return NULL;
        }
        ax = (int)(axis < 0 ? axis + x->rank : axis);
        if (idx->rank != x->rank) {
            report(ex, n, "indices have rank %d; data has rank %d", idx->rank, x->rank);
            return NULL;
        }
        for (int d = 0; d < x->rank; d++)
            if (d != ax && idx->dims[d] > x->dims[d]) {
                report(ex, n, "indices' dim %d (%lld) is above data's (%lld)", d,
                       (long long)idx->dims[d], (long long)x->dims[d]);
                return NULL;
            }
        *count = idx->numel;
        *slice = 1;
    }
    scatter_hit *hits = malloc((size_t)(*count ? *count : 1) * sizeof *hits);
    FR_CHECK(hits);
    int64_t pos[IR_MAX_RANK] = {0};
    for (int64_t t = 0; t < *count; t++) {
        int64_t off = 0;
        for (int64_t k = 0; k < depth; k++) {
            int d = nd ? (int)k : ax;
            int64_t v = host_index(host, it, nd ? t * depth + k : t), dim = x->dims[d];
            if (v < -dim || v >= dim) {
                free(hits);
                report(ex, n, "index %lld is out of range for a dim of %lld", (long long)v,
                       (long long)dim);
                return NULL;
            }
            off += (v < 0 ? v + dim : v) * xs[d];
        }
        if (!nd) { /* the other coordinates are the index element's own */
            for (int d = 0; d < x->rank; d++)
                off += d == ax ? 0 : pos[d] * xs[d];
            for (int d = x->rank - 1; d >= 0 && ++pos[d] == idx->dims[d]; d--)
                pos[d] = 0;
        }
        hits[t] = (scatter_hit){off, t};
    }
    return hits;
}

/* ScatterElements (every reduction) and ScatterND with a reduction: Y = data, then the updates
 * grouped by target in the CPU's order (kc_scatter_plan). */
static bool run_scatter_plan(executor *ex, ir_node *n)
{
    kc_tensor x, idx, upd, y;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_tensor(ex, n, n->inputs[1], &idx) ||
        !raw_tensor(ex, n, n->inputs[2], &upd) || !raw_output(ex, n, &y))
        return false;
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *red = ir_get_string(n, "reduction");
    int r = 0;
    while (r < 5 && strcmp(red, names[r]) != 0)
        r++;
    if (r == 5)
        return report(ex, n, "reduction \"%s\" is not none, add, mul, max or min", red);
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype,
             it = ex->slots[n->inputs[1]->id].type.dtype;
    if (!elem_of(dt, &et))
        return report(ex, n, "%s: no CUDA scatter takes it", ir_dtype_name(dt));
    const void *host = ensure_host(ex, n->inputs[1], n);
    int64_t count = 0, slice = 1;
    scatter_hit *hits = host ? scatter_hits(ex, n, &x, &idx, host, it, &count, &slice) : NULL;
    if (!hits)
        return false;
    if (upd.numel != count * slice || ex->slots[n->inputs[2]->id].type.dtype != dt) {
        free(hits);
        return n->op == IR_OP_ScatterND
                   ? report(ex, n, "updates must be indices[:-1] + data[%lld:] of data's dtype",
                            (long long)idx.dims[idx.rank - 1])
                   : report(ex, n, "updates must have indices' shape and data's dtype");
    }
    qsort(hits, (size_t)count, sizeof *hits, by_target_then_member);
    int64_t groups = 0;
    for (int64_t t = 0; t < count; t++)
        groups += t == 0 || hits[t].target != hits[t - 1].target;
    int64_t *plan = malloc((size_t)(2 * groups + 1 + count) * sizeof *plan);
    FR_CHECK(plan);
    int64_t *targets = plan, *starts = plan + groups, *members = plan + 2 * groups + 1, g = 0;
    for (int64_t t = 0; t < count; t++) {
        if (t == 0 || hits[t].target != hits[t - 1].target) {
            targets[g] = hits[t].target;
            starts[g++] = t;
        }
        members[t] = hits[t].member;
    }
    starts[groups] = count;
    free(hits);
    size_t esize = ir_dtype_size(dt);
    bool ok = kc_copy(ex->kc, y.data, x.data, (size_t)x.numel * esize) &&
              kc_scatter_plan(ex->kc, et, (kc_scatter_red)r, upd.data, slice, plan, groups, count,
                              y.data);
    free(plan);
    return ok || cuda_failed(ex, n);
}

/* NonZero and Compress on the GPU: the output's size is a count of non-zero elements (input 0's,
 * or the condition's) made on the device, of which only the count is read back; the output's type
 * is then set as their inference sets it (ir/infer_index.c), without copying the input to the
 * host. */
static bool counted_on_gpu(const executor *ex, const ir_node *n)
{
    return ex->on_gpu[n->id] && (n->op == IR_OP_NonZero || n->op == IR_OP_Compress);
}

static bool infer_counted(executor *ex, ir_node *n)
{
    bool compress = n->op == IR_OP_Compress;
    kc_tensor x, src;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (ex->capturing)
        return report(ex, n,
                      "%s's output size is read back from the device, which a CUDA graph "
                      "capture cannot do",
                      ir_op_name(n->op));
    ir_value *sv = n->inputs[compress ? 1 : 0];
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_tensor(ex, n, sv, &src))
        return false;
    const ir_type *xt = &ex->slots[n->inputs[0]->id].type;
    if (!elem_of(ex->slots[sv->id].type.dtype, &et))
        return report(ex, n, "%s: no CUDA kernel takes it",
                      ir_dtype_name(ex->slots[sv->id].type.dtype));
    int64_t count = 0;
    if (!kc_count_nonzero(ex->kc, et, src.data, src.numel, &count))
        return cuda_failed(ex, n);
    ir_type y = {.dtype = compress ? xt->dtype : IR_I64, .rank = compress ? xt->rank : 2};
    if (!compress) {
        y.dims[0] = xt->rank;
        y.dims[1] = count;
    } else {
        memcpy(y.dims, xt->dims, sizeof y.dims);
        int64_t attr = ir_get_int(n, "axis");
        bool flat = attr == INT64_MIN;
        if (!flat && (attr < -xt->rank || attr >= xt->rank))
            return report(ex, n, "axis %lld is out of range for rank %d", (long long)attr,
                          xt->rank);
        int axis = flat ? 0 : (int)(attr < 0 ? attr + xt->rank : attr);
        int64_t along = flat ? x.numel : xt->dims[axis];
        if (src.numel > along)
            return report(ex, n, "the condition has %lld entries for %lld", (long long)src.numel,
                          (long long)along);
        if (flat)
            y.rank = 1;
        y.dims[axis] = count;
    }
    int64_t nbytes = 0;
    FR_CHECK(ir_type_nbytes(&y, &nbytes));
    n->outputs[0]->type = y;
    ex->slots[n->outputs[0]->id].type = y;
    ex->slots[n->outputs[0]->id].nbytes = (size_t)nbytes;
    return true;
}

static bool run_nonzero(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_output(ex, n, &y))
        return false;
    if (!elem_of(ex->slots[n->inputs[0]->id].type.dtype, &et))
        return report(ex, n, "a dtype no CUDA kernel takes");
    int64_t count = y.dims[1], rows = x.rank > 0 ? x.rank : 1;
    if (y.numel != rows * count) /* a rank-0 input: the CPU kernel's error */
        return report(ex, n, "output 0 would have %lld elements but was allocated with %lld",
                      (long long)(rows * count), (long long)y.numel);
    return kc_nonzero(ex->kc, et, x.data, x.rank, x.dims, count, y.data) || cuda_failed(ex, n);
}

/* Compress: the condition's kept positions (NonZero of it) into a scratch buffer, then a Gather
 * of the slices along the axis (of the flattened input without one). */
static bool run_compress(executor *ex, ir_node *n)
{
    kc_tensor x, c, y;
    if (!raw_tensor(ex, n, n->inputs[0], &x) || !raw_tensor(ex, n, n->inputs[1], &c) ||
        !raw_output(ex, n, &y))
        return false;
    int64_t attr = ir_get_int(n, "axis"), outer = 1, along = x.numel, inner = 1;
    int axis = 0;
    if (attr != INT64_MIN) {
        axis = (int)(attr < 0 ? attr + x.rank : attr);
        outer = dims_prod(x.dims, 0, axis);
        along = x.dims[axis];
        inner = dims_prod(x.dims, axis + 1, x.rank);
    }
    int64_t kept = y.dims[axis];
    dbuf *pos = dpool_get(ex, (size_t)(kept ? kept : 1) * sizeof(int64_t), "Compress positions");
    if (!pos)
        return cuda_failed(ex, n);
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    bool ok = kc_nonzero(ex->kc, KC_E_BOOL, c.data, 1, &c.numel, kept, pos->ptr) &&
              (outer * kept * inner == 0 ||
               kc_gather(ex->kc, x.data, esize, outer, along, inner, pos->ptr, true, kept, y.data));
    dpool_release(ex, pos);
    return ok || cuda_failed(ex, n);
}

/* Float input i of n read on the host into out (at most max values); *count -1 when absent. */
static bool host_doubles(executor *ex, ir_node *n, uint32_t i, double *out, int max, int *count)
{
    *count = -1;
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v)
        return true;
    const void *data = ensure_host(ex, v, n);
    if (!data)
        return false;
    const slot *s = &ex->slots[v->id];
    int64_t numel;
    FR_CHECK(ir_type_numel(&s->type, &numel));
    if (numel > max)
        return report(ex, n, "input %u holds %lld values; at most %d are possible", i,
                      (long long)numel, max);
    ir_dtype dt = s->type.dtype;
    if (dt != IR_F32 && dt != IR_F16 && dt != IR_BF16)
        return report(ex, n, "input %u is %s; f32, f16 or bf16 expected", i, ir_dtype_name(dt));
    for (int64_t k = 0; k < numel; k++)
        out[k] = dt == IR_F32   ? ((const float *)data)[k]
                 : dt == IR_F16 ? f16_to_f32(((const uint16_t *)data)[k])
                                : bf16_to_f32(((const uint16_t *)data)[k]);
    *count = (int)numel;
    return true;
}

/* Index of `s` in names (n entries), or `dflt` when it is none of them (the CPU kernel's
 * fallback). */
static int pick(const char *s, const char *const *names, int n, int dflt)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return dflt;
}

/* Resize: scales, sizes and roi read on the host and resolved as the CPU kernel's read_params
 * resolves them, with its errors. */
static bool run_resize(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    if (!device_inputs(ex, n, 1, &x) || !alloc_outputs(ex, n, &y))
        return false;
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {
        "half_pixel",           "align_corners",      "asymmetric",          "pytorch_half_pixel",
        "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    kc_resize_params p = {
        .mode = (kc_resize_mode)pick(ir_get_string(n, "mode"), modes, 3, KC_RESIZE_CUBIC),
        .coord = (kc_coord_mode)pick(ir_get_string(n, "coordinate_transformation_mode"), coords, 7,
                                     KC_COORD_HALF_PIXEL),
        .nearest = (kc_nearest_mode)pick(ir_get_string(n, "nearest_mode"), nearest, 4,
                                         KC_NEAREST_ROUND_PREFER_FLOOR),
        .cubic_a = ir_get_float(n, "cubic_coeff_a"),
        .extrapolation = ir_get_float(n, "extrapolation_value"),
        .exclude_outside = ir_get_int(n, "exclude_outside") != 0};
    double roi[2 * IR_MAX_RANK], sc[IR_MAX_RANK];
    int nroi = -1, nsc = -1, nsz = 0;
    const int64_t *sz = NULL;
    if (!host_doubles(ex, n, 1, roi, 2 * IR_MAX_RANK, &nroi) ||
        !host_doubles(ex, n, 2, sc, IR_MAX_RANK, &nsc) || !host_ints(ex, n, 3, &sz, &nsz))
        return false;
    bool has_sc = nsc > 0, has_sz = n->ninputs > 3 && n->inputs[3];
    const int64_t *attr;
    uint32_t naxes = ir_get_ints(n, "axes", &attr);
    int axes[IR_MAX_RANK];
    if (naxes > (uint32_t)x.rank)
        return report(ex, n, "axes lists %u dims for rank %d", naxes, x.rank);
    for (uint32_t k = 0; k < naxes; k++) {
        if (attr[k] < -x.rank || attr[k] >= x.rank)
            return report(ex, n, "axis %lld is out of range for rank %d", (long long)attr[k],
                          x.rank);
        axes[k] = (int)(attr[k] < 0 ? attr[k] + x.rank : attr[k]);
    }
    if (naxes == 0)
        for (int d = 0; d < x.rank; d++)
            axes[naxes++] = d;
    int given = has_sc ? nsc : has_sz ? nsz : -1;
    if (given != (int)naxes)
        return report(ex, n, "scales or sizes must hold one value per resized axis (%u)", naxes);
    if (nroi > 0 && nroi != 2 * (int)naxes)
        return report(ex, n, "roi must hold %u starts and %u ends", naxes, naxes);
    const char *policy = ir_get_string(n, "keep_aspect_ratio_policy");
    bool not_larger = strcmp(policy, "not_larger") == 0;
    double common = not_larger ? INFINITY : 0;
    for (uint32_t k = 0; k < naxes && !has_sc; k++) {
        double s = (double)sz[k] / (double)x.dims[axes[k]];
        common = not_larger ? fmin(common, s) : fmax(common, s);
    }
    for (int d = 0; d < x.rank; d++) {
        p.scale[d] = 1;
        p.roi_start[d] = 0;
        p.roi_end[d] = 1;
    }
    for (uint32_t k = 0; k < naxes; k++) {
        int d = axes[k];
        p.scale[d] = has_sc                           ? sc[k]
                     : strcmp(policy, "stretch") == 0 ? (double)y.dims[d] / (double)x.dims[d]
                                                      : common;
        if (nroi > 0) {
            p.roi_start[d] = roi[k];
            p.roi_end[d] = roi[naxes + k];
        }
        if (!(p.scale[d] > 0))
            return report(ex, n, "scale %g for axis %d is not positive", p.scale[d], d);
    }
    for (int d = 0; d < x.rank && y.numel > 0; d++)
        if (x.dims[d] == 0)
            return report(ex, n, "cannot resize an empty axis %d to %lld", d, (long long)y.dims[d]);
    return kc_resize(ex->kc, &x, &y, &p) || cuda_failed(ex, n);
}

/* MaxPool with its Indices output: the geometry as for the plain pool (rt_pool_params). */
static bool run_maxpool_indices(executor *ex, ir_node *n)
{
    kc_tensor x, out[2];
    kc_pool_params p = {0};
    const char *err = "";
    if (!device_inputs(ex, n, 1, &x) || !raw_outputs(ex, n, out))
        return false;
    if (!rt_pool_params(n, x.rank, x.dims, &p, &err))
        return report(ex, n, "%s", err);
    return kc_maxpool_indices(ex->kc, &x, &out[0], out[1].data, &p,
                              ir_get_int(n, "storage_order") != 0) ||
           cuda_failed(ex, n);
}

/* MaxUnpool: the default output's dims and every index checked on the host, as the CPU kernel
 * checks them. */
static bool run_maxunpool(executor *ex, ir_node *n)
{
    kc_tensor x, idx, y;
    if (!device_inputs(ex, n, 1, &x) || !raw_tensor(ex, n, n->inputs[1], &idx) ||
        !alloc_outputs(ex, n, &y))
        return false;
    if (idx.numel != x.numel || x.rank < 3 || y.rank != x.rank)
        return report(ex, n, "X must be float [N, C, ...] and I hold one index per element of X");
    const int64_t *kernel, *strides, *pads;
    int spatial = x.rank - 2;
    uint32_t nk = ir_get_ints(n, "kernel_shape", &kernel);
    uint32_t ns = ir_get_ints(n, "strides", &strides);
    uint32_t np = ir_get_ints(n, "pads", &pads);
    if (nk != (uint32_t)spatial)
        return report(ex, n, "kernel_shape must have %d values", spatial);
    int64_t def[IR_MAX_RANK] = {x.dims[0], x.dims[1]}, def_numel = x.dims[0] * x.dims[1];
    for (int k = 0; k < spatial; k++) {
        def[k + 2] = (x.dims[k + 2] - 1) * (ns ? strides[k] : 1) + kernel[k] -
                     (np ? pads[k] + pads[spatial + k] : 0);
        if (def[k + 2] > y.dims[k + 2] || def[k + 2] < 0)
            return report(ex, n, "the output is smaller than the unpooled input");
        def_numel *= def[k + 2];
    }
    if (y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
        return report(ex, n, "output_shape must keep N and C");
    const int64_t *host = ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    for (int64_t i = 0; i < idx.numel; i++)
        if (host[i] < 0 || host[i] >= def_numel)
            return report(ex, n, "index %lld is outside the unpooled output's %lld elements",
                          (long long)host[i], (long long)def_numel);
    return kc_maxunpool(ex->kc, &x, idx.data, def, &y) || cuda_failed(ex, n);
}

static bool run_grid_sample(executor *ex, ir_node *n)
{
    kc_tensor in[2], y;
    if (!device_inputs(ex, n, 2, in) || !alloc_outputs(ex, n, &y))
        return false;
    if (in[0].rank != 4 || in[1].rank != 4 || in[1].dims[3] != 2 || in[1].dims[0] != in[0].dims[0])
        return report(ex, n, "X must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
    const char *mode = ir_get_string(n, "mode"), *pad = ir_get_string(n, "padding_mode");
    kc_grid_mode m = strcmp(mode, "nearest") == 0 ? KC_GRID_NEAREST
                     : strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0
                         ? KC_GRID_BILINEAR
                         : KC_GRID_BICUBIC;
    kc_grid_pad p = strcmp(pad, "border") == 0       ? KC_GRID_BORDER
                    : strcmp(pad, "reflection") == 0 ? KC_GRID_REFLECTION
                                                     : KC_GRID_ZEROS;
    return kc_grid_sample(ex->kc, &in[0], &in[1], m, p, ir_get_int(n, "align_corners") != 0, &y) ||
           cuda_failed(ex, n);
}

/* The cuda-b ops' runners; false in *handled when n is none of them. */
static bool run_cuda_b_op(executor *ex, ir_node *n, bool *handled)
{
    *handled = true;
    switch (n->op) {
    case IR_OP_LogSoftmax:
    case IR_OP_Hardmax: return run_log_softmax(ex, n);
    case IR_OP_GlobalMaxPool: return run_global_max_pool(ex, n);
    case IR_OP_GroupNormalization: return run_group_norm(ex, n);
    case IR_OP_MeanVarianceNormalization: return run_mvn(ex, n);
    case IR_OP_LRN: return run_lrn(ex, n);
    case IR_OP_NegativeLogLikelihoodLoss:
    case IR_OP_SoftmaxCrossEntropyLoss: return run_loss(ex, n);
    case IR_OP_TopK: return run_topk(ex, n);
    case IR_OP_MaxUnpool: return run_maxunpool(ex, n);
    case IR_OP_GridSample: return run_grid_sample(ex, n);
    case IR_OP_MaxPool:
        if (n->noutputs > 1)
            return run_maxpool_indices(ex, n);
        break;
    case IR_OP_Resize: return run_resize(ex, n);
    case IR_OP_NonZero: return run_nonzero(ex, n);
    case IR_OP_Compress: return run_compress(ex, n);
    case IR_OP_ScatterElements: return run_scatter_plan(ex, n);
    case IR_OP_ScatterND:
        if (strcmp(ir_get_string(n, "reduction"), "none") != 0)
            return run_scatter_plan(ex, n);
        break;
    case IR_OP_LayerNormalization:
        if (n->noutputs > 1)
            return run_layer_norm_stats(ex, n);
        break;
    default: break;
    }
    *handled = false;
    return false;
}

static bool run_gpu_node(executor *ex, ir_node *n)
{
    kc_reduce_kind reduce;
    if (kn_cuda_int_kernel(n)) /* cuda-a: before the table, which has the float forms */
        return run_int_op(ex, n);
    if (is_gen_op(n->op)) /* cuda-a */
        return run_gen_op(ex, n);
    bool handled_b; /* cuda-b's ops first: they take ScatterND's reductions, LN's statistics */
    bool ok_b = run_cuda_b_op(ex, n, &handled_b);
    if (handled_b)
        return ok_b;
    if (kn_cuda_ew_op_listed(n->op))
        return run_ew_op(ex, n);
    if (reduce_kind_of(n->op, &reduce))
        return run_reduce_op(ex, n, reduce);
    if (is_movement(n->op))
        return run_move_op(ex, n);
    if (n->op == IR_OP_Gather)
        return run_gather(ex, n);
    if (n->op == IR_OP_Where)
        return run_where(ex, n);
    if (n->op == IR_OP_ArgMax || n->op == IR_OP_ArgMin || n->op == IR_OP_CumSum)
        return run_axis_op(ex, n);
    if (n->op == IR_OP_GatherElements)
        return run_gather_elements(ex, n);
    if (n->op == IR_OP_GatherND || n->op == IR_OP_ScatterND)
        return run_nd(ex, n);
    if (n->op == IR_OP_InstanceNormalization)
        return run_instance_norm(ex, n);
    if (n->op == IR_OP_Tile || n->op == IR_OP_Trilu)
        return run_tile_trilu(ex, n);
    if (n->op == IR_OP_Pad)
        return run_pad(ex, n);
    kc_compare_op cmp;
    if (n->op == IR_OP_Cast || compare_op_of(n->op, &cmp))
        return run_typed(ex, n);
    /* cuda-c: quantized and integer linear algebra, ConvTranspose, Det, DFT, Einsum, RNNs */
    bool handled;
    bool linalg_ok = run_linalg_node(ex, n, &handled);
    if (handled)
        return linalg_ok;
    kc_tensor in[MAX_NODE_IO], out[3];
    if (n->ninputs > MAX_NODE_IO || n->noutputs > 3)
        return report(ex, n, "too many operands for the CUDA executor");
    /* Optional operands the kernels index (up to 6 inputs) read as absent. */
    for (uint32_t i = 0; i < MAX_NODE_IO; i++)
        in[i] = (kc_tensor){0};
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        void *ptr = v ? ensure_dev(ex, v, n) : NULL;
        if ((v && !ptr) || !device_tensor(ex, n, v, ptr, &in[i]))
            return false;
    }
    return alloc_outputs(ex, n, out) && run_kernel(ex, n, in, out);
}

/* ---- CPU nodes ---- */

static bool is_half(ir_dtype dt) { return dt == IR_F16 || dt == IR_BF16; }

static kn_tensor host_view(const ir_type *t, void *data)
{
    kn_tensor k = {.dtype = ir_dtype_is_float(t->dtype) ? IR_F32 : t->dtype, .rank = t->rank,
                   .data = data};
    memcpy(k.dims, t->dims, sizeof k.dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(t, &k.numel));
    return k;
}

static float *scratch_f32(executor *ex, const ir_node *n, int64_t numel)
{
    rt_buffer *b = rt_pool_get(&ex->hpool, (size_t)(numel ? numel : 1) * sizeof(float));
    if (!b) {
        report(ex, n, "out of memory for %lld f32 values", (long long)numel);
        return NULL;
    }
    vec_push(&ex->scratch, b);
    return b->data;
}

static bool run_cpu_node(executor *ex, ir_node *n)
{
    ex->kin.len = ex->kout.len = 0;
    vec_reserve(&ex->kin, n->ninputs);
    vec_reserve(&ex->kout, n->noutputs);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        kn_tensor t = {.dtype = IR_DTYPE_UNKNOWN};
        if (v) {
            const void *data = ensure_host(ex, v, n);
            if (!data)
                return false;
            const slot *s = &ex->slots[v->id];
            t = host_view(&s->type, (void *)data);
            if (is_half(s->type.dtype)) {
                float *w = scratch_f32(ex, n, t.numel);
                if (!w)
                    return false;
                for (int64_t e = 0; e < t.numel; e++) {
                    uint16_t h = ((const uint16_t *)data)[e];
                    w[e] = s->type.dtype == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h);
                }
                t.data = w;
            }
        }
        ex->kin.items[ex->kin.len++] = t;
    }
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->hbuf = rt_pool_get(&ex->hpool, s->nbytes ? s->nbytes : 1)))
            return report(ex, n, "out of memory for '%s'", n->outputs[k]->name);
        s->host = s->hbuf->data;
        kn_tensor t = host_view(&s->type, s->hbuf->data);
        if (is_half(s->type.dtype) && !(t.data = scratch_f32(ex, n, t.numel)))
            return false;
        ex->kout.items[ex->kout.len++] = t;
    }
    kn_call call = {.graph = ex->g, .node = n, .inputs = ex->kin.items, .ninputs = n->ninputs,
                    .outputs = ex->kout.items, .noutputs = n->noutputs, .dg = ex->dg};
    if (!kn_cpu_get(n->op)(&call))
        return false;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!is_half(s->type.dtype))
            continue;
        const float *src = ex->kout.items[k].data;
        uint16_t *dst = s->hbuf->data;
        for (int64_t e = 0; e < ex->kout.items[k].numel; e++)
            dst[e] = s->type.dtype == IR_F16 ? f32_to_f16(src[e]) : f32_to_bf16(src[e]);
    }
    return true;
}

/* ---- running ---- */

/* A view's output shares its input's buffers. */
static bool try_view(executor *ex, ir_node *n)
{
    if (!(ir_op_info_get(n->op)->flags & IR_OPF_VIEW) || n->noutputs != 1 || !n->inputs[0])
        return false;
    ir_value *in = n->inputs[0];
    slot *si = &ex->slots[in->id], *so = &ex->slots[n->outputs[0]->id];
    if (!si->host && !si->dev && in->kind == IR_VALUE_CONST && !ensure_host(ex, in, n))
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
        dpool_release(ex, s->dev);
        s->dev = NULL;
    }
    if (v->kind == IR_VALUE_NODE)
        s->host = NULL;
}

static void release_after(executor *ex, ir_node *n)
{
    for (size_t i = 0; i < ex->scratch.len; i++)
        rt_pool_release(&ex->hpool, ex->scratch.items[i]);
    ex->scratch.len = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        if (v && rt_first_read(n, i) && v->kind == IR_VALUE_NODE && --ex->slots[v->id].remaining == 0)
            release_value(ex, v, false);
    }
    for (uint32_t k = 0; k < n->noutputs; k++)
        if (n->outputs[k]->nuses == 0)
            release_value(ex, n->outputs[k], false);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether a CUDA kernel runs n as its types now are; why not in why (KN_WHY_SIZE). */
static bool gpu_can_run(const executor *ex, const ir_node *n, char *why)
{
    if (kn_fused_entry_get(n->op))
        return kn_supports(ex->g, n, KN_BACKEND_CUDA, why);
    return kn_cuda_onnx_supports(ex->g, n, why);
}

/* Placement on the run's static shapes: a node placed on the GPU for the graph's (possibly
 * symbolic) types whose kernel refuses the real ones (an int8 K not a multiple of 4, a head dim
 * above 128, ...) runs on the CPU instead of failing in the kernel. */
static void recheck_placement(executor *ex, const ir_node *n)
{
    char why[KN_WHY_SIZE];
    if (ex->on_gpu[n->id] && !gpu_can_run(ex, n, why)) {
        ex->on_gpu[n->id] = false;
        ex->cpu_why[n->id] = ar_printf(ex->res->arena, "on the run's shapes: %s", why);
    }
}

static bool run_node(executor *ex, ir_node *n)
{
    if (!(counted_on_gpu(ex, n) ? infer_counted(ex, n) : infer_node(ex, n)))
        return false;
    recheck_placement(ex, n);
    double start = ex->opts->time ? now() : 0;
    ex->ran_on_cpu[n->id] = false;
    if (!try_view(ex, n)) {
        for (uint32_t k = 0; k < n->noutputs; k++)
            ex->res->memory.intermediate_bytes += ex->slots[n->outputs[k]->id].nbytes;
        ex->ran_on_cpu[n->id] = !ex->on_gpu[n->id];
        if (!(ex->on_gpu[n->id] ? run_gpu_node(ex, n) : run_cpu_node(ex, n)))
            return false;
    }
    if (ex->opts->time) {
        if (!kc_sync(ex->kc))
            return cuda_failed(ex, n);
        rt_op_time *t = &ex->times[n->op];
        t->op = n->op;
        t->calls++;
        t->seconds += now() - start;
    }
    release_after(ex, n);
    if (ex->oob)
        return report(ex, n, "%s", ex->oob);
    return true;
}

/* Resets the per-run state (not the persistent device copies), then runs every node. */
static bool run_nodes(executor *ex)
{
    ir_graph *g = ex->g;
    for (size_t i = 0; i < g->values.len; i++)
        ex->slots[i].remaining = g->values.items[i]->nuses;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead && !run_node(ex, g->nodes.items[i]))
            return false;
    return true;
}

/* The outputs, downloaded to the host. */
static bool collect_outputs(executor *ex)
{
    rt_value_source src = {defined_type, host_data, ex};
    const ir_value *oom = NULL;
    if (rt_collect_outputs(ex->g, ex->res, &src, &oom))
        return true;
    return oom ? report(ex, NULL, "out of memory for output '%s'", oom->name) : false;
}

static void end_run(executor *ex)
{
    for (size_t i = 0; i < ex->g->values.len; i++) {
        ir_value *v = ex->g->values.items[i];
        if (v->kind == IR_VALUE_NODE)
            release_value(ex, v, true);
    }
    for (size_t i = 0; i < ex->scratch.len; i++)
        rt_pool_release(&ex->hpool, ex->scratch.items[i]);
    ex->scratch.len = 0;
}

/* Decides where each node runs on the graph's types (run_node asks again on static shapes). */
static void place_nodes(executor *ex)
{
    for (size_t i = 0; i < ex->g->nodes.len; i++) {
        ir_node *n = ex->g->nodes.items[i];
        char why[KN_WHY_SIZE] = "";
        ex->on_gpu[n->id] = !n->dead && gpu_can_run(ex, n, why);
        ex->cpu_why[n->id] = ex->on_gpu[n->id] ? NULL : ar_printf(ex->res->arena, "%s", why);
    }
}

/* The nodes a CPU kernel ran in this run, in graph order, with the reason. */
static void collect_fallbacks(executor *ex)
{
    size_t count = 0;
    for (size_t i = 0; i < ex->g->nodes.len; i++)
        count += ex->ran_on_cpu[ex->g->nodes.items[i]->id];
    ex->res->fallbacks = ar_alloc_array(ex->res->arena, count ? count : 1,
                                        sizeof *ex->res->fallbacks);
    ex->res->nfallbacks = 0;
    for (size_t i = 0; i < ex->g->nodes.len; i++) {
        const ir_node *n = ex->g->nodes.items[i];
        if (ex->ran_on_cpu[n->id])
            ex->res->fallbacks[ex->res->nfallbacks++] =
                (rt_fallback){n->outputs[0]->name, n->op, ex->cpu_why[n->id]};
    }
}

static bool setup(executor *ex, ir_graph *g, const rt_tensor *inputs, size_t ninputs,
                  const rt_options *opts, rt_result *out, dg_context *dg)
{
    static const rt_options defaults = {0};
    *out = (rt_result){.arena = ar_new()};
    *ex = (executor){.g = g, .dg = dg, .opts = opts ? opts : &defaults, .res = out,
                     .scratch_arena = ar_new()};
    size_t nvalues = g->values.len;
    ex->slots = calloc(nvalues ? nvalues : 1, sizeof *ex->slots);
    ex->saved = malloc((nvalues ? nvalues : 1) * sizeof *ex->saved);
    ex->symbols = malloc((g->symbols.len ? g->symbols.len : 1) * sizeof *ex->symbols);
    ex->on_gpu = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *ex->on_gpu);
    ex->cpu_why = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *ex->cpu_why);
    ex->ran_on_cpu = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *ex->ran_on_cpu);
    FR_CHECK(ex->slots && ex->saved && ex->symbols && ex->on_gpu && ex->cpu_why && ex->ran_on_cpu);
    for (size_t i = 0; i < g->symbols.len; i++)
        ex->symbols[i] = -1;
    ir_compute_uses(g);
    for (size_t i = 0; i < nvalues; i++) {
        FR_CHECK(g->values.items[i]->id == i);
        ex->saved[i] = g->values.items[i]->type;
    }
    char err[KC_ERROR_SIZE];
    int count;
    if (!kc_device_count(&count, err, sizeof err))
        return report(ex, NULL, "%s", err);
    if (!(ex->kc = kc_create(err)))
        return report(ex, NULL, "cannot start CUDA: %s", err);
    place_nodes(ex);
    return bind_inputs(ex, inputs, ninputs);
}

static void teardown(executor *ex)
{
    ir_graph *g = ex->g;
    if (ex->kc) {
        end_run(ex);
        for (size_t i = 0; i < g->values.len; i++) {
            slot *s = &ex->slots[i];
            if (s->dev && s->persistent)
                dpool_release(ex, s->dev);
            s->dev = NULL;
        }
        kc_sync(ex->kc);
        ex->res->memory.peak_bytes = ex->dpool.peak;
        ex->res->memory.allocations = ex->dpool.allocations;
        ex->res->memory.reuses = ex->dpool.reuses;
        dpool_free(ex);
        FR_CHECK(ex->dpool.held == 0); /* every device buffer came back */
        kc_destroy(ex->kc);
    }
    rt_pool_free(&ex->hpool);
    for (size_t i = 0; i < g->values.len; i++)
        g->values.items[i]->type = ex->saved[i];
    free(ex->slots);
    free(ex->saved);
    free(ex->symbols);
    free(ex->on_gpu);
    free(ex->cpu_why);
    free(ex->ran_on_cpu);
    vec_free(&ex->kin);
    vec_free(&ex->kout);
    vec_free(&ex->scratch);
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
    for (size_t i = 0; i < ex->g->nodes.len; i++) {
        ir_node *n = ex->g->nodes.items[i];
        if (!n->dead && !ex->on_gpu[n->id] && !(ir_op_info_get(n->op)->flags & IR_OPF_VIEW))
            return report(ex, n, "%s needs every node on the GPU; %s runs on the CPU: %s", what,
                          ir_op_name(n->op), ex->cpu_why[n->id]);
    }
    return true;
}

/* Captures the next run of the nodes as a CUDA graph (run_nodes' work is recorded, not done). */
static bool capture_run(executor *ex)
{
    if (!all_on_gpu(ex, "CUDA graph capture"))
        return false;
    ex->capturing = true;
    bool ok = (kc_capture_begin(ex->kc) || cuda_failed(ex, NULL)) && run_nodes(ex);
    ok = (kc_capture_end(ex->kc) || cuda_failed(ex, NULL)) && ok;
    ex->capturing = false;
    return ok;
}

/* The runs after the first (rt_options.repeat): again node by node, or, with cuda_graph, one run
 * captured and then replayed; the outputs of the last run stay for collect_outputs. */
static bool repeat_runs(executor *ex)
{
    int more = ex->opts->repeat > 1 ? ex->opts->repeat - 1 : 0;
    if (more == 0)
        return true;
    end_run(ex);
    if (!ex->opts->cuda_graph) {
        bool ok = run_nodes(ex);
        for (int i = 1; ok && i < more; i++) {
            end_run(ex);
            ok = run_nodes(ex);
        }
        return ok;
    }
    bool ok = capture_run(ex);
    for (int i = 0; ok && i < more; i++)
        ok = kc_graph_replay(ex->kc) || cuda_failed(ex, NULL);
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
    bool ok = setup(&ex, g, inputs, ninputs, opts, out, dg) && run_nodes(&ex) &&
              repeat_runs(&ex) && collect_outputs(&ex) &&
              (kc_sync(ex.kc) || cuda_failed(&ex, NULL));
    if (ok && ex.opts->time)
        rt_collect_times(ex.res, ex.times);
    if (ok)
        collect_fallbacks(&ex);
    teardown(&ex);
    if (ok && ex.oob) /* found when the outputs' and weights' buffers were freed */
        ok = report(&ex, NULL, "%s", ex.oob);
    if (!ok)
        rt_result_free(out);
    return ok;
}

/* One timed repetition: the graph's nodes (inputs and weights already on the device). */
static bool timed_run(executor *ex, bool replay)
{
    bool ok = replay ? kc_graph_replay(ex->kc) || cuda_failed(ex, NULL) : run_nodes(ex);
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
    ok = ok && (kc_timer_start(ex.kc) || cuda_failed(&ex, NULL));
    for (int i = 0; ok && i < iters; i++)
        ok = timed_run(&ex, cuda_graph);
    ok = ok && (kc_timer_stop(ex.kc, &elapsed) || cuda_failed(&ex, NULL));
    if (ok)
        *ms = iters > 0 ? elapsed / iters : 0;
    teardown(&ex);
    rt_result_free(&res);
    return ok;
}

#endif
