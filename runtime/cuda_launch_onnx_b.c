/* cuda-b (runtime/cuda_internal.h): normalizations, windows, losses, TopK and scatter reductions,
 * NonZero, Compress, Resize, MaxUnpool, GridSample. Each checks what the CPU kernel checks, with its
 * message, before launching. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/cuda/cuda_launch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Device buffers for every output of n as kc_tensors of shape only (out holds noutputs). */
static bool raw_outputs(executor *ex, ir_node *n, kc_tensor *out)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->dev = rt_cu_dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[k]->name)))
            return rt_cu_failed(ex, n);
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
        void *ptr = v ? rt_cu_ensure_dev(ex, v, n) : NULL;
        if ((v && !ptr) || !rt_cu_device_tensor(ex, n, v, ptr, &in[i]))
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
    if (!device_inputs(ex, n, 1, &x) || !rt_cu_axis_of(ex, n, x.rank, &axis) ||
        !rt_cu_alloc_outputs(ex, n, &y))
        return false;
    return kc_log_softmax(ex->kc, x.dtype, x.data, rt_cu_dims_prod(x.dims, 0, axis), x.dims[axis],
                          rt_cu_dims_prod(x.dims, axis + 1, x.rank), n->op == IR_OP_Hardmax,
                          y.data) ||
           rt_cu_failed(ex, n);
}

static bool run_global_max_pool(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    if (!device_inputs(ex, n, 1, &x))
        return false;
    if (x.rank < 3)
        return rt_cu_report(ex, n, "the input must be a float tensor of rank 3 or more");
    int64_t planes = x.dims[0] * x.dims[1], size = planes ? x.numel / planes : 0;
    if (size == 0 && planes > 0)
        return rt_cu_report(ex, n, "the spatial dims are empty: there is no maximum");
    return rt_cu_alloc_outputs(ex, n, &y) &&
           (kc_plane_max(ex->kc, x.dtype, x.data, planes, size, y.data) || rt_cu_failed(ex, n));
}

/* LayerNormalization with its Mean and InvStdDev outputs. */
static bool run_layer_norm_stats(executor *ex, ir_node *n)
{
    kc_tensor in[3], out[3] = {{0}};
    int axis = 0; /* set by axis_of before any use */
    if (!device_inputs(ex, n, 3, in) || !rt_cu_axis_of(ex, n, in[0].rank, &axis) ||
        !rt_cu_alloc_outputs(ex, n, out))
        return false;
    return kc_layer_norm_stats(
               ex->kc, &in[0], &in[1], &in[2], axis, (float)ir_get_float(n, "epsilon"), &out[0],
               n->noutputs > 1 ? &out[1] : NULL, n->noutputs > 2 ? &out[2] : NULL) ||
           rt_cu_failed(ex, n);
}

static bool run_group_norm(executor *ex, ir_node *n)
{
    kc_tensor in[3], y;
    if (!device_inputs(ex, n, 3, in))
        return false;
    if (in[0].rank < 2)
        return rt_cu_report(ex, n, "the input must be a float tensor of rank 2 or more");
    int64_t groups = ir_get_int(n, "num_groups"), c = in[0].dims[1];
    if (groups < 1 || c % groups != 0 || in[1].numel != c || in[2].numel != c)
        return rt_cu_report(ex, n,
                            "%lld channels, %lld groups: scale and bias need one value per "
                            "channel",
                            (long long)c, (long long)groups);
    return rt_cu_alloc_outputs(ex, n, &y) &&
           (kc_group_norm(ex->kc, &in[0], &in[1], &in[2], groups, ir_get_float(n, "epsilon"), &y) ||
            rt_cu_failed(ex, n));
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
            return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)vals[k],
                                x.rank);
        reduced[vals[k] < 0 ? vals[k] + x.rank : vals[k]] = true;
    }
    return rt_cu_alloc_outputs(ex, n, &y) &&
           (kc_mvn(ex->kc, &x, reduced, &y) || rt_cu_failed(ex, n));
}

static bool run_lrn(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    int64_t size = ir_get_int(n, "size");
    if (!device_inputs(ex, n, 1, &x))
        return false;
    if (x.rank < 3)
        return rt_cu_report(ex, n, "the input must be a float tensor of rank 3 or more");
    if (size < 1)
        return rt_cu_report(ex, n, "size %lld is below 1", (long long)size);
    return rt_cu_alloc_outputs(ex, n, &y) &&
           (kc_lrn(ex->kc, &x, size, ir_get_float(n, "alpha"), ir_get_float(n, "beta"),
                   ir_get_float(n, "bias"), &y) ||
            rt_cu_failed(ex, n));
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the targets checked on the host. */
static bool run_loss(executor *ex, ir_node *n)
{
    kc_tensor x, w = {0}, t, out[2] = {{0}};
    bool has_w = n->ninputs > 2 && n->inputs[2];
    if (!device_inputs(ex, n, 1, &x) || !rt_cu_raw_tensor(ex, n, n->inputs[1], &t))
        return false;
    if (has_w) {
        void *ptr = rt_cu_ensure_dev(ex, n->inputs[2], n);
        if (!ptr || !rt_cu_device_tensor(ex, n, n->inputs[2], ptr, &w))
            return false;
    }
    const char *red = ir_get_string(n, "reduction");
    int reduction = strcmp(red, "none") == 0   ? 0
                    : strcmp(red, "sum") == 0  ? 1
                    : strcmp(red, "mean") == 0 ? 2
                                               : -1;
    if (reduction < 0)
        return rt_cu_report(ex, n, "reduction \"%s\" is not none, sum or mean", red);
    if (x.rank < 2)
        return rt_cu_report(ex, n, "the input must be a float tensor [N, C, ...]");
    int64_t nb = x.dims[0], c = x.dims[1], inner = nb && c ? x.numel / (nb * c) : 0;
    if (t.numel != nb * inner || (has_w && w.numel != c))
        return rt_cu_report(ex, n,
                            "target must be [N, d...] and weight [C] for input [N, C, d...]");
    ir_dtype tt = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = rt_cu_ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t ignore = ir_get_int(n, "ignore_index");
    for (int64_t j = 0; j < t.numel; j++) {
        int64_t v = host_index(host, tt, j);
        if (v != ignore && (v < 0 || v >= c))
            return rt_cu_report(ex, n, "target %lld is not a class in [0, %lld)", (long long)v,
                                (long long)c);
    }
    return rt_cu_alloc_outputs(ex, n, out) &&
           (kc_nll_loss(ex->kc, &x, n->op == IR_OP_SoftmaxCrossEntropyLoss, t.data, tt == IR_I64,
                        has_w ? &w : NULL, reduction, ignore, &out[0],
                        n->noutputs > 1 ? &out[1] : NULL) ||
            rt_cu_failed(ex, n));
}

/* TopK: k read on the host and checked as the CPU kernel checks it. */
static bool run_topk(executor *ex, ir_node *n)
{
    kc_tensor x, out[2];
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    const int64_t *k = NULL;
    int nk = 0;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_host_ints(ex, n, 1, &k, &nk))
        return false;
    if (!rt_cu_elem_of(ex->slots[n->inputs[0]->id].type.dtype, &et) || et == KC_E_BOOL)
        return rt_cu_report(ex, n, "input dtype %s is not supported",
                            ir_dtype_name(ex->slots[n->inputs[0]->id].type.dtype));
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -x.rank || axis >= x.rank)
        return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)axis,
                            x.rank);
    int ax = (int)(axis < 0 ? axis + x.rank : axis);
    int64_t len = x.dims[ax];
    if (nk < 1 || k[0] < 0 || k[0] > len)
        return rt_cu_report(ex, n, "k = %lld is not in [0, %lld]", nk ? (long long)k[0] : -1LL,
                            (long long)len);
    return raw_outputs(ex, n, out) &&
           (kc_topk(ex->kc, et, x.data, rt_cu_dims_prod(x.dims, 0, ax), len,
                    rt_cu_dims_prod(x.dims, ax + 1, x.rank), k[0], ir_get_int(n, "largest") != 0,
                    out[0].data, out[1].data) ||
            rt_cu_failed(ex, n));
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
            rt_cu_report(ex, n, "indices' last dim %lld does not fit data of rank %d",
                         (long long)depth, x->rank);
            return NULL;
        }
        *count = rt_cu_dims_prod(idx->dims, 0, idx->rank - 1);
        *slice = rt_cu_dims_prod(x->dims, (int)depth, x->rank);
    } else {
        int64_t axis = ir_get_int(n, "axis");
        if (axis < -x->rank || axis >= x->rank) {
            rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
            return NULL;
        }
        ax = (int)(axis < 0 ? axis + x->rank : axis);
        if (idx->rank != x->rank) {
            rt_cu_report(ex, n, "indices have rank %d; data has rank %d", idx->rank, x->rank);
            return NULL;
        }
        for (int d = 0; d < x->rank; d++)
            if (d != ax && idx->dims[d] > x->dims[d]) {
                rt_cu_report(ex, n, "indices' dim %d (%lld) is above data's (%lld)", d,
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
                rt_cu_report(ex, n, "index %lld is out of range for a dim of %lld", (long long)v,
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
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) ||
        !rt_cu_raw_tensor(ex, n, n->inputs[1], &idx) ||
        !rt_cu_raw_tensor(ex, n, n->inputs[2], &upd) || !rt_cu_raw_output(ex, n, &y))
        return false;
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *red = ir_get_string(n, "reduction");
    int r = 0;
    while (r < 5 && strcmp(red, names[r]) != 0)
        r++;
    if (r == 5)
        return rt_cu_report(ex, n, "reduction \"%s\" is not none, add, mul, max or min", red);
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype,
             it = ex->slots[n->inputs[1]->id].type.dtype;
    if (!rt_cu_elem_of(dt, &et))
        return rt_cu_report(ex, n, "%s: no CUDA scatter takes it", ir_dtype_name(dt));
    const void *host = rt_cu_ensure_host(ex, n->inputs[1], n);
    int64_t count = 0, slice = 1;
    scatter_hit *hits = host ? scatter_hits(ex, n, &x, &idx, host, it, &count, &slice) : NULL;
    if (!hits)
        return false;
    if (upd.numel != count * slice || ex->slots[n->inputs[2]->id].type.dtype != dt) {
        free(hits);
        return n->op == IR_OP_ScatterND
                   ? rt_cu_report(ex, n,
                                  "updates must be indices[:-1] + data[%lld:] of data's dtype",
                                  (long long)idx.dims[idx.rank - 1])
                   : rt_cu_report(ex, n, "updates must have indices' shape and data's dtype");
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
    return ok || rt_cu_failed(ex, n);
}

/* NonZero and Compress on the GPU: the output's size is a count of non-zero elements (input 0's,
 * or the condition's) made on the device, of which only the count is read back; the output's type
 * is then set as their inference sets it (ir/infer_index.c), without copying the input to the
 * host. */
bool rt_cu_counted_on_gpu(const executor *ex, const ir_node *n)
{
    return ex->on_gpu[n->id] && (n->op == IR_OP_NonZero || n->op == IR_OP_Compress);
}

bool rt_cu_infer_counted(executor *ex, ir_node *n)
{
    bool compress = n->op == IR_OP_Compress;
    kc_tensor x, src;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (ex->capturing)
        return rt_cu_report(ex, n,
                            "%s's output size is read back from the device, which a CUDA graph "
                            "capture cannot do",
                            ir_op_name(n->op));
    ir_value *sv = n->inputs[compress ? 1 : 0];
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_tensor(ex, n, sv, &src))
        return false;
    const ir_type *xt = &ex->slots[n->inputs[0]->id].type;
    if (!rt_cu_elem_of(ex->slots[sv->id].type.dtype, &et))
        return rt_cu_report(ex, n, "%s: no CUDA kernel takes it",
                            ir_dtype_name(ex->slots[sv->id].type.dtype));
    int64_t count = 0;
    if (!kc_count_nonzero(ex->kc, et, src.data, src.numel, &count))
        return rt_cu_failed(ex, n);
    ir_type y = {.dtype = compress ? xt->dtype : IR_I64, .rank = compress ? xt->rank : 2};
    if (!compress) {
        y.dims[0] = xt->rank;
        y.dims[1] = count;
    } else {
        memcpy(y.dims, xt->dims, sizeof y.dims);
        int64_t attr = ir_get_int(n, "axis");
        bool flat = attr == INT64_MIN;
        if (!flat && (attr < -xt->rank || attr >= xt->rank))
            return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)attr,
                                xt->rank);
        int axis = flat ? 0 : (int)(attr < 0 ? attr + xt->rank : attr);
        int64_t along = flat ? x.numel : xt->dims[axis];
        if (src.numel > along)
            return rt_cu_report(ex, n, "the condition has %lld entries for %lld",
                                (long long)src.numel, (long long)along);
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
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_output(ex, n, &y))
        return false;
    if (!rt_cu_elem_of(ex->slots[n->inputs[0]->id].type.dtype, &et))
        return rt_cu_report(ex, n, "a dtype no CUDA kernel takes");
    int64_t count = y.dims[1], rows = x.rank > 0 ? x.rank : 1;
    if (y.numel != rows * count) /* a rank-0 input: the CPU kernel's error */
        return rt_cu_report(ex, n, "output 0 would have %lld elements but was allocated with %lld",
                            (long long)(rows * count), (long long)y.numel);
    return kc_nonzero(ex->kc, et, x.data, x.rank, x.dims, count, y.data) || rt_cu_failed(ex, n);
}

/* Compress: the condition's kept positions (NonZero of it) into a scratch buffer, then a Gather
 * of the slices along the axis (of the flattened input without one). */
static bool run_compress(executor *ex, ir_node *n)
{
    kc_tensor x, c, y;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_tensor(ex, n, n->inputs[1], &c) ||
        !rt_cu_raw_output(ex, n, &y))
        return false;
    int64_t attr = ir_get_int(n, "axis"), outer = 1, along = x.numel, inner = 1;
    int axis = 0;
    if (attr != INT64_MIN) {
        axis = (int)(attr < 0 ? attr + x.rank : attr);
        outer = rt_cu_dims_prod(x.dims, 0, axis);
        along = x.dims[axis];
        inner = rt_cu_dims_prod(x.dims, axis + 1, x.rank);
    }
    int64_t kept = y.dims[axis];
    dbuf *pos =
        rt_cu_dpool_get(ex, (size_t)(kept ? kept : 1) * sizeof(int64_t), "Compress positions");
    if (!pos)
        return rt_cu_failed(ex, n);
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    bool ok = kc_nonzero(ex->kc, KC_E_BOOL, c.data, 1, &c.numel, kept, pos->ptr) &&
              (outer * kept * inner == 0 ||
               kc_gather(ex->kc, x.data, esize, outer, along, inner, pos->ptr, true, kept, y.data));
    rt_cu_dpool_release(ex, pos);
    return ok || rt_cu_failed(ex, n);
}

/* Float input i of n read on the host into out (at most max values); *count -1 when absent. */
static bool host_doubles(executor *ex, ir_node *n, uint32_t i, double *out, int max, int *count)
{
    *count = -1;
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v)
        return true;
    const void *data = rt_cu_ensure_host(ex, v, n);
    if (!data)
        return false;
    const slot *s = &ex->slots[v->id];
    int64_t numel;
    FR_CHECK(ir_type_numel(&s->type, &numel));
    if (numel > max)
        return rt_cu_report(ex, n, "input %u holds %lld values; at most %d are possible", i,
                            (long long)numel, max);
    ir_dtype dt = s->type.dtype;
    if (dt != IR_F32 && dt != IR_F16 && dt != IR_BF16)
        return rt_cu_report(ex, n, "input %u is %s; f32, f16 or bf16 expected", i,
                            ir_dtype_name(dt));
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
    if (!device_inputs(ex, n, 1, &x) || !rt_cu_alloc_outputs(ex, n, &y))
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
        !host_doubles(ex, n, 2, sc, IR_MAX_RANK, &nsc) || !rt_cu_host_ints(ex, n, 3, &sz, &nsz))
        return false;
    bool has_sc = nsc > 0, has_sz = n->ninputs > 3 && n->inputs[3];
    const int64_t *attr;
    uint32_t naxes = ir_get_ints(n, "axes", &attr);
    int axes[IR_MAX_RANK];
    if (naxes > (uint32_t)x.rank)
        return rt_cu_report(ex, n, "axes lists %u dims for rank %d", naxes, x.rank);
    for (uint32_t k = 0; k < naxes; k++) {
        if (attr[k] < -x.rank || attr[k] >= x.rank)
            return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)attr[k],
                                x.rank);
        axes[k] = (int)(attr[k] < 0 ? attr[k] + x.rank : attr[k]);
    }
    if (naxes == 0)
        for (int d = 0; d < x.rank; d++)
            axes[naxes++] = d;
    int given = has_sc ? nsc : has_sz ? nsz : -1;
    if (given != (int)naxes)
        return rt_cu_report(ex, n, "scales or sizes must hold one value per resized axis (%u)",
                            naxes);
    if (nroi > 0 && nroi != 2 * (int)naxes)
        return rt_cu_report(ex, n, "roi must hold %u starts and %u ends", naxes, naxes);
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
            return rt_cu_report(ex, n, "scale %g for axis %d is not positive", p.scale[d], d);
    }
    for (int d = 0; d < x.rank && y.numel > 0; d++)
        if (x.dims[d] == 0)
            return rt_cu_report(ex, n, "cannot resize an empty axis %d to %lld", d,
                                (long long)y.dims[d]);
    return kc_resize(ex->kc, &x, &y, &p) || rt_cu_failed(ex, n);
}

/* MaxPool with its Indices output: the geometry as for the plain pool (kn_cuda_pool_params). */
static bool run_maxpool_indices(executor *ex, ir_node *n)
{
    kc_tensor x, out[2];
    kc_pool_params p = {0};
    const char *err = "";
    if (!device_inputs(ex, n, 1, &x) || !raw_outputs(ex, n, out))
        return false;
    if (!kn_cuda_pool_params(n, x.rank, x.dims, &p, &err))
        return rt_cu_report(ex, n, "%s", err);
    return kc_maxpool_indices(ex->kc, &x, &out[0], out[1].data, &p,
                              ir_get_int(n, "storage_order") != 0) ||
           rt_cu_failed(ex, n);
}

/* MaxUnpool: the default output's dims and every index checked on the host, as the CPU kernel
 * checks them. */
static bool run_maxunpool(executor *ex, ir_node *n)
{
    kc_tensor x, idx, y;
    if (!device_inputs(ex, n, 1, &x) || !rt_cu_raw_tensor(ex, n, n->inputs[1], &idx) ||
        !rt_cu_alloc_outputs(ex, n, &y))
        return false;
    if (idx.numel != x.numel || x.rank < 3 || y.rank != x.rank)
        return rt_cu_report(ex, n,
                            "X must be float [N, C, ...] and I hold one index per element of X");
    const int64_t *kernel, *strides, *pads;
    int spatial = x.rank - 2;
    uint32_t nk = ir_get_ints(n, "kernel_shape", &kernel);
    uint32_t ns = ir_get_ints(n, "strides", &strides);
    uint32_t np = ir_get_ints(n, "pads", &pads);
    if (nk != (uint32_t)spatial)
        return rt_cu_report(ex, n, "kernel_shape must have %d values", spatial);
    int64_t def[IR_MAX_RANK] = {x.dims[0], x.dims[1]}, def_numel = x.dims[0] * x.dims[1];
    for (int k = 0; k < spatial; k++) {
        def[k + 2] = (x.dims[k + 2] - 1) * (ns ? strides[k] : 1) + kernel[k] -
                     (np ? pads[k] + pads[spatial + k] : 0);
        if (def[k + 2] > y.dims[k + 2] || def[k + 2] < 0)
            return rt_cu_report(ex, n, "the output is smaller than the unpooled input");
        def_numel *= def[k + 2];
    }
    if (y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
        return rt_cu_report(ex, n, "output_shape must keep N and C");
    const int64_t *host = rt_cu_ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    for (int64_t i = 0; i < idx.numel; i++)
        if (host[i] < 0 || host[i] >= def_numel)
            return rt_cu_report(ex, n, "index %lld is outside the unpooled output's %lld elements",
                                (long long)host[i], (long long)def_numel);
    return kc_maxunpool(ex->kc, &x, idx.data, def, &y) || rt_cu_failed(ex, n);
}

static bool run_grid_sample(executor *ex, ir_node *n)
{
    kc_tensor in[2], y;
    if (!device_inputs(ex, n, 2, in) || !rt_cu_alloc_outputs(ex, n, &y))
        return false;
    if (in[0].rank != 4 || in[1].rank != 4 || in[1].dims[3] != 2 || in[1].dims[0] != in[0].dims[0])
        return rt_cu_report(ex, n, "X must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
    const char *mode = ir_get_string(n, "mode"), *pad = ir_get_string(n, "padding_mode");
    kc_grid_mode m = strcmp(mode, "nearest") == 0 ? KC_GRID_NEAREST
                     : strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0
                         ? KC_GRID_BILINEAR
                         : KC_GRID_BICUBIC;
    kc_grid_pad p = strcmp(pad, "border") == 0       ? KC_GRID_BORDER
                    : strcmp(pad, "reflection") == 0 ? KC_GRID_REFLECTION
                                                     : KC_GRID_ZEROS;
    return kc_grid_sample(ex->kc, &in[0], &in[1], m, p, ir_get_int(n, "align_corners") != 0, &y) ||
           rt_cu_failed(ex, n);
}

/* The cuda-b ops' runners; false in *handled when n is none of them. */
bool rt_cu_run_cuda_b(executor *ex, ir_node *n, bool *handled)
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

#endif /* FR_HAVE_CUDA */
