/* The plain ONNX ops' CUDA launches on topk.cu, scatter.cu and nonzero.cu: TopK, ScatterElements
 * and ScatterND with a reduction, NonZero and Compress (whose output is sized by a count made on
 * the device); rows of kn_cuda_onnx_run (launch_onnx.c). Each checks what the CPU kernel checks,
 * with its message, before launching. */
#include "kernels/cuda/cuda_launch.h"

#include "base/check.h"
#include "kernels/cuda/cuda_registry.h"

#include <stdlib.h>
#include <string.h>

/* TopK: k read on the host and checked as the CPU kernel checks it. */
bool kn_cuda_run_topk(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, out[2];
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    const int64_t *k = NULL;
    int nk = 0;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) || !kn_cuda_host_ints(call, 1, &k, &nk))
        return false;
    if (!kn_cuda_elem_of(kn_cuda_type(call, n->inputs[0])->dtype, &et) || et == KC_E_BOOL)
        return kn_cuda_fail(call, "input dtype %s is not supported",
                            ir_dtype_name(kn_cuda_type(call, n->inputs[0])->dtype));
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -x.rank || axis >= x.rank)
        return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)axis, x.rank);
    int ax = (int)(axis < 0 ? axis + x.rank : axis);
    int64_t len = x.dims[ax];
    if (nk < 1 || k[0] < 0 || k[0] > len)
        return kn_cuda_fail(call, "k = %lld is not in [0, %lld]", nk ? (long long)k[0] : -1LL,
                            (long long)len);
    return kn_cuda_raw_outputs(call, out) &&
           (kc_topk(call->kc, et, x.data, kn_cuda_dims_prod(x.dims, 0, ax), len,
                    kn_cuda_dims_prod(x.dims, ax + 1, x.rank), k[0], ir_get_int(n, "largest") != 0,
                    out[0].data, out[1].data) ||
            kn_cuda_failed(call));
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
static scatter_hit *scatter_hits(const kn_cuda_call *call, const kc_tensor *x, const kc_tensor *idx,
                                 const void *host, ir_dtype it, int64_t *count, int64_t *slice)
{
    const ir_node *n = call->node;
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
            kn_cuda_fail(call, "indices' last dim %lld does not fit data of rank %d",
                         (long long)depth, x->rank);
            return NULL;
        }
        *count = kn_cuda_dims_prod(idx->dims, 0, idx->rank - 1);
        *slice = kn_cuda_dims_prod(x->dims, (int)depth, x->rank);
    } else {
        int64_t axis = ir_get_int(n, "axis");
        if (axis < -x->rank || axis >= x->rank) {
            kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
            return NULL;
        }
        ax = (int)(axis < 0 ? axis + x->rank : axis);
        if (idx->rank != x->rank) {
            kn_cuda_fail(call, "indices have rank %d; data has rank %d", idx->rank, x->rank);
            return NULL;
        }
        for (int d = 0; d < x->rank; d++)
            if (d != ax && idx->dims[d] > x->dims[d]) {
                kn_cuda_fail(call, "indices' dim %d (%lld) is above data's (%lld)", d,
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
            int64_t v = kn_cuda_index_at(host, it, nd ? t * depth + k : t), dim = x->dims[d];
            if (v < -dim || v >= dim) {
                free(hits);
                kn_cuda_fail(call, "index %lld is out of range for a dim of %lld", (long long)v,
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
bool kn_cuda_run_scatter_plan(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, idx, upd, y;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &idx) ||
        !kn_cuda_raw_tensor(call, n->inputs[2], &upd) || !kn_cuda_raw_output(call, &y))
        return false;
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *red = ir_get_string(n, "reduction");
    int r = 0;
    while (r < 5 && strcmp(red, names[r]) != 0)
        r++;
    if (r == 5)
        return kn_cuda_fail(call, "reduction \"%s\" is not none, add, mul, max or min", red);
    ir_dtype dt = kn_cuda_type(call, n->inputs[0])->dtype,
             it = kn_cuda_type(call, n->inputs[1])->dtype;
    if (!kn_cuda_elem_of(dt, &et))
        return kn_cuda_fail(call, "%s: no CUDA scatter takes it", ir_dtype_name(dt));
    const void *host = kn_cuda_host(call, n->inputs[1]);
    int64_t count = 0, slice = 1;
    scatter_hit *hits = host ? scatter_hits(call, &x, &idx, host, it, &count, &slice) : NULL;
    if (!hits)
        return false;
    if (upd.numel != count * slice || kn_cuda_type(call, n->inputs[2])->dtype != dt) {
        free(hits);
        return n->op == IR_OP_ScatterND
                   ? kn_cuda_fail(call,
                                  "updates must be indices[:-1] + data[%lld:] of data's dtype",
                                  (long long)idx.dims[idx.rank - 1])
                   : kn_cuda_fail(call, "updates must have indices' shape and data's dtype");
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
    bool ok = kc_copy(call->kc, y.data, x.data, (size_t)x.numel * esize) &&
              kc_scatter_plan(call->kc, et, (kc_scatter_red)r, upd.data, slice, plan, groups, count,
                              y.data);
    free(plan);
    return ok || kn_cuda_failed(call);
}

/* NonZero and Compress on the GPU: the output's size is a count of non-zero elements (input 0's,
 * or the condition's) made on the device, of which only the count is read back; the output's type
 * is then set as their inference sets it (ir/infer_index.c), without copying the input to the
 * host. */
bool kn_cuda_counts_output(ir_op op)
{
    return op == IR_OP_NonZero || op == IR_OP_Compress;
}

bool kn_cuda_count_output(const kn_cuda_call *call, ir_type *out)
{
    const ir_node *n = call->node;
    bool compress = n->op == IR_OP_Compress;
    kc_tensor x, src;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (call->capturing)
        return kn_cuda_fail(call,
                            "%s's output size is read back from the device, which a CUDA graph "
                            "capture cannot do",
                            ir_op_name(n->op));
    ir_value *sv = n->inputs[compress ? 1 : 0];
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) || !kn_cuda_raw_tensor(call, sv, &src))
        return false;
    const ir_type *xt = kn_cuda_type(call, n->inputs[0]);
    if (!kn_cuda_elem_of(kn_cuda_type(call, sv)->dtype, &et))
        return kn_cuda_fail(call, "%s: no CUDA kernel takes it",
                            ir_dtype_name(kn_cuda_type(call, sv)->dtype));
    int64_t count = 0;
    if (!kc_count_nonzero(call->kc, et, src.data, src.numel, &count))
        return kn_cuda_failed(call);
    ir_type y = {.dtype = compress ? xt->dtype : IR_I64, .rank = compress ? xt->rank : 2};
    if (!compress) {
        y.dims[0] = xt->rank;
        y.dims[1] = count;
    } else {
        memcpy(y.dims, xt->dims, sizeof y.dims);
        int64_t attr = ir_get_int(n, "axis");
        bool flat = attr == INT64_MIN;
        if (!flat && (attr < -xt->rank || attr >= xt->rank))
            return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)attr,
                                xt->rank);
        int axis = flat ? 0 : (int)(attr < 0 ? attr + xt->rank : attr);
        int64_t along = flat ? x.numel : xt->dims[axis];
        if (src.numel > along)
            return kn_cuda_fail(call, "the condition has %lld entries for %lld",
                                (long long)src.numel, (long long)along);
        if (flat)
            y.rank = 1;
        y.dims[axis] = count;
    }
    *out = y;
    return true;
}

bool kn_cuda_run_nonzero(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    kc_elem et = KC_E_F32; /* set by elem_of before any use */
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) || !kn_cuda_raw_output(call, &y))
        return false;
    if (!kn_cuda_elem_of(kn_cuda_type(call, n->inputs[0])->dtype, &et))
        return kn_cuda_fail(call, "a dtype no CUDA kernel takes");
    int64_t count = y.dims[1], rows = x.rank > 0 ? x.rank : 1;
    if (y.numel != rows * count) /* a rank-0 input: the CPU kernel's error */
        return kn_cuda_fail(call, "output 0 would have %lld elements but was allocated with %lld",
                            (long long)(rows * count), (long long)y.numel);
    return kc_nonzero(call->kc, et, x.data, x.rank, x.dims, count, y.data) || kn_cuda_failed(call);
}

/* Compress: the condition's kept positions (NonZero of it) into a scratch buffer, then a Gather
 * of the slices along the axis (of the flattened input without one). */
bool kn_cuda_run_compress(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, c, y;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &c) || !kn_cuda_raw_output(call, &y))
        return false;
    int64_t attr = ir_get_int(n, "axis"), outer = 1, along = x.numel, inner = 1;
    int axis = 0;
    if (attr != INT64_MIN) {
        axis = (int)(attr < 0 ? attr + x.rank : attr);
        outer = kn_cuda_dims_prod(x.dims, 0, axis);
        along = x.dims[axis];
        inner = kn_cuda_dims_prod(x.dims, axis + 1, x.rank);
    }
    int64_t kept = y.dims[axis];
    void *pos = /* freed by the executor when the launch returns */
        kn_cuda_scratch(call, (size_t)(kept ? kept : 1) * sizeof(int64_t), "Compress positions");
    if (!pos)
        return false;
    size_t esize = ir_dtype_size(kn_cuda_type(call, n->inputs[0])->dtype);
    return (kc_nonzero(call->kc, KC_E_BOOL, c.data, 1, &c.numel, kept, pos) &&
            (outer * kept * inner == 0 ||
             kc_gather(call->kc, x.data, esize, outer, along, inner, pos, true, kept, y.data))) ||
           kn_cuda_failed(call);
}
