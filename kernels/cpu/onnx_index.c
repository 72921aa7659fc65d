/* Indexing ONNX ops and ops with index results: GatherElements, GatherND, ScatterElements,
 * ScatterND, OneHot, NonZero, ArgMax, ArgMin, TopK, CumSum, DepthToSpace, SpaceToDepth, Size and
 * CastLike.
 *
 * Gathered and scattered elements move as bytes, so every dtype works and nothing rounds. Indices
 * may be negative (counted from the end of their axis); one out of range is a run-time error that
 * names it, never a read outside the tensor. Scatter reductions (add, mul, max, min) combine in
 * the element's dtype: f32 in float, integers in int64 wrapped to their width. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

static size_t esize(const kn_tensor *t)
{
    return ir_dtype_size(t->dtype);
}

static int64_t prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

/* Index element i of t normalized against `size`; false after reporting one out of range. */
static bool index_at(const kn_call *call, const kn_tensor *t, int64_t i, int64_t size, int64_t *out)
{
    int64_t v = kn_get_int(t, i);
    if (v < -size || v >= size)
        return kn_fail(call, "index %lld is out of range for a dim of %lld", (long long)v,
                       (long long)size);
    *out = v < 0 ? v + size : v;
    return true;
}

/* ---- scatter reductions -------------------------------------------------------------------- */

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction;

static bool read_reduction(const kn_call *call, reduction *r)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *s = ir_get_string(call->node, "reduction");
    *r = RED_NONE; /* also on failure: the callers' optimizer cannot see that kn_fail is false */
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *r = (reduction)i;
            return true;
        }
    return kn_fail(call, "reduction \"%s\" is not none, add, mul, max or min", s);
}

/* y[o] = y[o] (r) u[j]. */
static void combine(kn_tensor *y, int64_t o, const kn_tensor *u, int64_t j, reduction r)
{
    size_t es = esize(y);
    if (r == RED_NONE) {
        memcpy((char *)y->data + o * es, (const char *)u->data + j * es, es);
        return;
    }
    if (y->dtype == IR_F32) {
        float a = ((float *)y->data)[o], b = ((const float *)u->data)[j];
        ((float *)y->data)[o] = r == RED_ADD   ? a + b
                                : r == RED_MUL ? a * b
                                : r == RED_MAX ? (b > a || isnan(b) ? b : a)
                                               : (b < a || isnan(b) ? b : a);
        return;
    }
    int64_t a = kn_get_int(y, o), b = kn_get_int(u, j);
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t v = r == RED_ADD   ? (int64_t)(ua + ub)
                : r == RED_MUL ? (int64_t)(ua * ub)
                : r == RED_MAX ? (b > a ? b : a)
                               : (b < a ? b : a);
    kn_set_int(y, o, v);
}

static void copy_all(kn_tensor *y, const kn_tensor *x)
{
    if (x->numel)
        memcpy(y->data, x->data, (size_t)x->numel * esize(x));
}

/* ---- GatherElements, ScatterElements ------------------------------------------------------- */

/* Calls back for every position of `idx` (same rank as x) with the offset of that position in idx
 * and the offset in x of the same position with the axis coordinate replaced by the index. */
typedef bool (*element_fn)(const kn_call *call, int64_t at_idx, int64_t at_x, void *ctx);

static bool each_element(const kn_call *call, const kn_tensor *x, const kn_tensor *idx, int axis,
                         element_fn fn, void *ctx)
{
    if (idx->rank != x->rank)
        return kn_fail(call, "indices have rank %d; data has rank %d", idx->rank, x->rank);
    int64_t xs[IR_MAX_RANK], pos[IR_MAX_RANK] = {0};
    kn_strides(x->rank, x->dims, xs);
    for (int d = 0; d < x->rank; d++)
        if (d != axis && idx->dims[d] > x->dims[d])
            return kn_fail(call, "indices' dim %d (%lld) is above data's (%lld)", d,
                           (long long)idx->dims[d], (long long)x->dims[d]);
    for (int64_t k = 0; k < idx->numel; k++) {
        int64_t v = 0, off = 0;
        if (!index_at(call, idx, k, x->dims[axis], &v))
            return false;
        for (int d = 0; d < x->rank; d++)
            off += (d == axis ? v : pos[d]) * xs[d];
        if (!fn(call, k, off, ctx))
            return false;
        for (int d = x->rank - 1; d >= 0 && ++pos[d] == idx->dims[d]; d--)
            pos[d] = 0;
    }
    return true;
}

static bool gather_one(const kn_call *call, int64_t at_idx, int64_t at_x, void *ctx)
{
    size_t es = esize(&call->inputs[0]);
    memcpy((char *)call->outputs[0].data + at_idx * es,
           (const char *)call->inputs[0].data + at_x * es, es);
    return true;
}

bool kn_cpu_GatherElements(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *idx = &call->inputs[1];
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis) ||
        !kn_check_numel(call, 0, idx->numel))
        return false;
    return each_element(call, x, idx, axis, gather_one, NULL);
}

static bool scatter_one(const kn_call *call, int64_t at_idx, int64_t at_x, void *ctx)
{
    combine(&call->outputs[0], at_x, &call->inputs[2], at_idx, *(const reduction *)ctx);
    return true;
}

bool kn_cpu_ScatterElements(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *idx = &call->inputs[1], *upd = &call->inputs[2];
    int axis;
    reduction r;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis) ||
        !read_reduction(call, &r) || !kn_check_numel(call, 0, x->numel))
        return false;
    if (upd->numel != idx->numel || upd->dtype != x->dtype)
        return kn_fail(call, "updates must have indices' shape and data's dtype");
    copy_all(&call->outputs[0], x);
    return each_element(call, x, idx, axis, scatter_one, &r);
}

/* ---- GatherND, ScatterND ------------------------------------------------------------------- */

/* The offset in x (from dim `first` on, strides xs) of the index tuple at position t of idx. */
static bool nd_offset(const kn_call *call, const kn_tensor *x, const int64_t *xs, int first,
                      const kn_tensor *idx, int64_t t, int64_t depth, int64_t *off)
{
    *off = 0;
    for (int64_t k = 0; k < depth; k++) {
        int64_t v = 0;
        if (!index_at(call, idx, t * depth + k, x->dims[first + k], &v))
            return false;
        *off += v * xs[first + k];
    }
    return true;
}

bool kn_cpu_GatherND(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *idx = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    int64_t b = ir_get_int(call->node, "batch_dims");
    if (idx->rank < 1 || b < 0 || b >= x->rank || b >= idx->rank)
        return kn_fail(call, "batch_dims %lld does not fit ranks %d and %d", (long long)b, x->rank,
                       idx->rank);
    int64_t depth = idx->dims[idx->rank - 1];
    if (depth < 1 || depth > x->rank - b)
        return kn_fail(call, "indices' last dim %lld does not fit data of rank %d",
                       (long long)depth, x->rank);
    int64_t xs[IR_MAX_RANK];
    kn_strides(x->rank, x->dims, xs);
    for (int d = 0; d < b; d++)
        if (idx->dims[d] != x->dims[d])
            return kn_fail(call, "batch dim %d differs: %lld in data, %lld in indices", d,
                           (long long)x->dims[d], (long long)idx->dims[d]);
    int64_t batches = prod(x->dims, 0, (int)b), per_batch = prod(x->dims, (int)b, x->rank);
    int64_t tuples = prod(idx->dims, (int)b, idx->rank - 1);
    int64_t slice = prod(x->dims, (int)(b + depth), x->rank);
    if (!kn_check_numel(call, 0, batches * tuples * slice))
        return false;
    size_t es = esize(x);
    for (int64_t bi = 0; bi < batches; bi++)
        for (int64_t t = 0; t < tuples; t++) {
            int64_t off;
            if (!nd_offset(call, x, xs, (int)b, idx, bi * tuples + t, depth, &off))
                return false;
            memcpy((char *)y->data + (bi * tuples + t) * slice * (int64_t)es,
                   (const char *)x->data + (bi * per_batch + off) * (int64_t)es,
                   (size_t)slice * es);
        }
    return true;
}

bool kn_cpu_ScatterND(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *idx = &call->inputs[1], *upd = &call->inputs[2];
    kn_tensor *y = &call->outputs[0];
    reduction r;
    if (!read_reduction(call, &r) || !kn_check_numel(call, 0, x->numel))
        return false;
    int64_t depth = idx->rank >= 1 ? idx->dims[idx->rank - 1] : 0;
    if (depth < 1 || depth > x->rank)
        return kn_fail(call, "indices' last dim %lld does not fit data of rank %d",
                       (long long)depth, x->rank);
    int64_t tuples = prod(idx->dims, 0, idx->rank - 1), slice = prod(x->dims, (int)depth, x->rank);
    if (upd->numel != tuples * slice || upd->dtype != x->dtype)
        return kn_fail(call, "updates must be indices[:-1] + data[%lld:] of data's dtype",
                       (long long)depth);
    int64_t xs[IR_MAX_RANK];
    kn_strides(x->rank, x->dims, xs);
    copy_all(y, x);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        if (!nd_offset(call, x, xs, 0, idx, t, depth, &off))
            return false;
        for (int64_t e = 0; e < slice; e++)
            combine(y, off + e, upd, t * slice + e, r);
    }
    return true;
}

/* ---- OneHot -------------------------------------------------------------------------------- */

/* Every output element is values[0] (off), except out[..., idx, ...] = values[1] (on) for each
 * index in [-depth, depth); indices outside it leave their row off, as ONNX says. */
bool kn_cpu_OneHot(const kn_call *call)
{
    const kn_tensor *idx = &call->inputs[0], *depth_t = &call->inputs[1];
    const kn_tensor *values = &call->inputs[2];
    kn_tensor *y = &call->outputs[0];
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), idx->rank + 1, "axis", &axis))
        return false;
    if (values->numel != 2 || values->dtype != y->dtype)
        return kn_fail(call, "values must hold [off, on] in the output's dtype");
    double depth_value = kn_get_f64(depth_t, 0);
    if (!(depth_value >= 1 && depth_value <= (double)IR_MAX_NUMEL))
        return kn_fail(call, "depth %g is not in [1, 2^40]", depth_value);
    int64_t depth = (int64_t)depth_value;
    int64_t outer = prod(idx->dims, 0, axis), inner = prod(idx->dims, axis, idx->rank);
    if (!kn_check_numel(call, 0, outer * depth * inner))
        return false;
    size_t es = esize(y);
    for (int64_t i = 0; i < y->numel; i++)
        memcpy((char *)y->data + i * (int64_t)es, values->data, es);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double dv = kn_get_f64(idx, o * inner + i);
            if (!(fabs(dv) < (double)depth + 1))
                continue;            /* outside [-depth, depth), NaN included */
            int64_t v = (int64_t)dv; /* ONNX casts float indices to integers */
            if (v < 0)
                v += depth;
            if (v < 0 || v >= depth)
                continue;
            memcpy((char *)y->data + ((o * depth + v) * inner + i) * (int64_t)es,
                   (const char *)values->data + es, es);
        }
    return true;
}

/* ---- NonZero ------------------------------------------------------------------------------- */

/* y[d][k]: coordinate d of the k-th non-zero element in row-major order. */
bool kn_cpu_NonZero(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    int64_t count = 0;
    for (int64_t i = 0; i < x->numel; i++)
        count += kn_get_f64(x, i) != 0;
    int rank = x->rank > 0 ? x->rank : 1; /* a scalar reads as one element of rank 1 */
    if (!kn_check_numel(call, 0, rank * count))
        return false;
    int64_t pos[IR_MAX_RANK] = {0}, k = 0, *out = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        if (kn_get_f64(x, i) != 0) {
            for (int d = 0; d < rank; d++)
                out[d * count + k] = x->rank > 0 ? pos[d] : 0;
            k++;
        }
        for (int d = x->rank - 1; d >= 0 && ++pos[d] == x->dims[d]; d--)
            pos[d] = 0;
    }
    return true;
}

/* ---- ArgMax, ArgMin, TopK ------------------------------------------------------------------ */

/* One element for ordering: floats by f (NaN above everything, as numpy), integers by i. */
typedef struct {
    double f;
    int64_t v;
    int64_t index;
    bool nan;
} keyed;

static keyed key_of(const kn_tensor *t, int64_t at, int64_t index)
{
    keyed k = {0, 0, index, false};
    if (t->dtype == IR_F32) {
        k.f = ((const float *)t->data)[at];
        k.nan = isnan(k.f);
    } else {
        k.v = kn_get_int(t, at);
    }
    return k;
}

/* -1, 0, 1 as a orders below, equal to or above b by value alone. */
static int value_cmp(const keyed *a, const keyed *b)
{
    if (a->nan || b->nan)
        return a->nan - b->nan;
    if (a->f != b->f)
        return a->f < b->f ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

static int by_index(const keyed *a, const keyed *b)
{
    return a->index < b->index ? -1 : a->index > b->index;
}

/* TopK's orders: the first k of the sorted list; equal values keep the lower index first. */
static int largest_first(const void *pa, const void *pb)
{
    int c = value_cmp(pb, pa);
    return c ? c : by_index(pa, pb);
}

static int smallest_first(const void *pa, const void *pb)
{
    int c = value_cmp(pa, pb);
    return c ? c : by_index(pa, pb);
}

/* x viewed as [outer, n, inner] around `axis`. */
static void split_at(const kn_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = prod(x->dims, 0, axis);
    *n = x->dims[axis];
    *inner = prod(x->dims, axis + 1, x->rank);
}

static bool arg_reduce(const kn_call *call, bool max)
{
    const kn_tensor *x = &call->inputs[0];
    int64_t *y = call->outputs[0].data;
    bool last = ir_get_int(call->node, "select_last_index") != 0;
    int axis;
    if (x->dtype == IR_BOOL)
        return kn_fail(call, "input dtype bool is not supported");
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis))
        return false;
    int64_t outer, n, inner;
    split_at(x, axis, &outer, &n, &inner);
    if (n == 0)
        return kn_fail(call, "the axis is empty: there is no %s", max ? "maximum" : "minimum");
    if (!kn_check_numel(call, 0, outer * inner))
        return false;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            keyed best = key_of(x, o * n * inner + i, 0);
            for (int64_t j = 1; j < n; j++) {
                keyed k = key_of(x, (o * n + j) * inner + i, j);
                int c = k.nan != best.nan ? (k.nan ? 1 : -1) /* NaN wins both (numpy) */
                        : max             ? value_cmp(&k, &best)
                                          : value_cmp(&best, &k);
                if (c > 0 || (c == 0 && last))
                    best = k;
            }
            y[o * inner + i] = best.index;
        }
    return true;
}

bool kn_cpu_ArgMax(const kn_call *call)
{
    return arg_reduce(call, true);
}
bool kn_cpu_ArgMin(const kn_call *call)
{
    return arg_reduce(call, false);
}

bool kn_cpu_TopK(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *values = &call->outputs[0], *indices = &call->outputs[1];
    bool largest = ir_get_int(call->node, "largest") != 0;
    int axis;
    if (x->dtype == IR_BOOL)
        return kn_fail(call, "input dtype bool is not supported");
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis))
        return false;
    int64_t outer, n, inner, k = kn_get_int(&call->inputs[1], 0);
    split_at(x, axis, &outer, &n, &inner);
    if (k < 0 || k > n)
        return kn_fail(call, "k = %lld is not in [0, %lld]", (long long)k, (long long)n);
    if (!kn_check_numel(call, 0, outer * k * inner) || !kn_check_numel(call, 1, outer * k * inner))
        return false;
    keyed *row = malloc((size_t)(n ? n : 1) * sizeof *row);
    if (!row)
        return kn_fail(call, "cannot allocate %lld sort keys", (long long)n);
    size_t es = esize(x);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t j = 0; j < n; j++)
                row[j] = key_of(x, (o * n + j) * inner + i, j);
            qsort(row, (size_t)n, sizeof *row, largest ? largest_first : smallest_first);
            for (int64_t j = 0; j < k; j++) {
                int64_t at = (o * k + j) * inner + i;
                memcpy((char *)values->data + at * (int64_t)es,
                       (const char *)x->data + ((o * n + row[j].index) * inner + i) * (int64_t)es,
                       es);
                ((int64_t *)indices->data)[at] = row[j].index;
            }
        }
    free(row);
    return true;
}

/* ---- CumSum -------------------------------------------------------------------------------- */

/* Running sums along the axis: floats in double, integers in int64 wrapped to their width;
 * `exclusive` leaves out the element itself, `reverse` runs from the end. */
bool kn_cpu_CumSum(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    bool exclusive = ir_get_int(call->node, "exclusive") != 0;
    bool reverse = ir_get_int(call->node, "reverse") != 0;
    int axis;
    if (x->dtype == IR_BOOL)
        return kn_fail(call, "input dtype bool is not supported");
    if (!kn_axis(call, kn_get_int(&call->inputs[1], 0), x->rank, "axis", &axis) ||
        !kn_check_numel(call, 0, x->numel))
        return false;
    int64_t outer, n, inner;
    split_at(x, axis, &outer, &n, &inner);
    bool is_float = x->dtype == IR_F32;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double fs = 0;
            uint64_t is = 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t j = reverse ? n - 1 - s : s, at = (o * n + j) * inner + i;
                double fv = is_float ? kn_get_f64(x, at) : 0;
                uint64_t iv = is_float ? 0 : (uint64_t)kn_get_int(x, at);
                if (!exclusive) {
                    fs += fv;
                    is += iv;
                }
                if (is_float)
                    ((float *)y->data)[at] = (float)fs;
                else
                    kn_set_int(y, at, (int64_t)is);
                if (exclusive) {
                    fs += fv;
                    is += iv;
                }
            }
        }
    return true;
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------ */

/* Moves elements between the channel dim and b x b spatial blocks of [N, C, H, W] tensors. For
 * output (n, c, h, w) of DepthToSpace the source channel is (bh*b + bw)*C' + c in DCR mode and
 * c*b*b + bh*b + bw in CRD mode, where bh, bw are h and w modulo b; SpaceToDepth is DCR's inverse. */
static bool depth_space(const kn_call *call, bool to_space)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    int64_t b = ir_get_int(call->node, "blocksize");
    bool crd = to_space && strcmp(ir_get_string(call->node, "mode"), "CRD") == 0;
    if (x->rank != 4 || y->rank != 4 || b < 1 || !kn_check_numel(call, 0, x->numel))
        return kn_fail(call, "needs rank-4 tensors and a blocksize of at least 1");
    /* walk the space side (the output of DepthToSpace, the input of SpaceToDepth) */
    const kn_tensor *space = to_space ? y : x;
    int64_t C = space->dims[1], H = space->dims[2], W = space->dims[3];
    int64_t depth_c = C * b * b, depth_h = H / b, depth_w = W / b;
    size_t es = esize(x);
    int64_t at = 0;
    for (int64_t n = 0; n < space->dims[0]; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++, at++) {
                    int64_t bh = h % b, bw = w % b;
                    int64_t dc = crd ? (c * b + bh) * b + bw : (bh * b + bw) * C + c;
                    int64_t d = ((n * depth_c + dc) * depth_h + h / b) * depth_w + w / b;
                    char *dst = (char *)y->data + (to_space ? at : d) * (int64_t)es;
                    const char *src = (const char *)x->data + (to_space ? d : at) * (int64_t)es;
                    memcpy(dst, src, es);
                }
    return true;
}

bool kn_cpu_DepthToSpace(const kn_call *call)
{
    return depth_space(call, true);
}
bool kn_cpu_SpaceToDepth(const kn_call *call)
{
    return depth_space(call, false);
}

/* ---- Size, CastLike ------------------------------------------------------------------------ */

bool kn_cpu_Size(const kn_call *call)
{
    if (!kn_check_numel(call, 0, 1))
        return false;
    *(int64_t *)call->outputs[0].data = call->inputs[0].numel;
    return true;
}

/* Cast to the output's dtype, which inference took from target_type: Cast's kernel reads only
 * its input and the output. */
bool kn_cpu_CastLike(const kn_call *call)
{
    kn_call cast = *call;
    cast.ninputs = 1;
    return kn_cpu_Cast(&cast);
}

/* ---- EyeLike, ReverseSequence, Compress ---------------------------------------------------- */

/* Ones on diagonal k (above the main one for k > 0), zeros elsewhere. */
bool kn_cpu_EyeLike(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    int64_t k = ir_get_int(call->node, "k");
    if (y->rank != 2 || !kn_check_numel(call, 0, call->inputs[0].numel))
        return kn_fail(call, "the input must be a matrix");
    for (int64_t r = 0; r < y->dims[0]; r++)
        for (int64_t c = 0; c < y->dims[1]; c++)
            kn_set_f64(y, r * y->dims[1] + c, c - r == k ? 1 : 0);
    return true;
}

/* For each batch entry b, its first sequence_lens[b] steps along the time axis reversed; the rest
 * copied. */
bool kn_cpu_ReverseSequence(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *lens = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    int b_axis = (int)ir_get_int(call->node, "batch_axis");
    int t_axis = (int)ir_get_int(call->node, "time_axis");
    if (x->rank < 2 || b_axis + t_axis != 1 || !kn_check_numel(call, 0, x->numel))
        return kn_fail(call, "batch_axis and time_axis must be 0 and 1 of a rank-2+ input");
    int64_t batch = x->dims[b_axis], steps = x->dims[t_axis], inner = prod(x->dims, 2, x->rank);
    if (lens->numel != batch)
        return kn_fail(call, "sequence_lens has %lld values for a batch of %lld",
                       (long long)lens->numel, (long long)batch);
    size_t es = esize(x);
    for (int64_t b = 0; b < batch; b++) {
        int64_t len = kn_get_int(lens, b);
        if (len < 0 || len > steps)
            return kn_fail(call, "sequence length %lld is not in [0, %lld]", (long long)len,
                           (long long)steps);
        for (int64_t t = 0; t < steps; t++) {
            int64_t src_t = t < len ? len - 1 - t : t;
            int64_t dst = b_axis == 0 ? b * steps + t : t * batch + b;
            int64_t src = b_axis == 0 ? b * steps + src_t : src_t * batch + b;
            memcpy((char *)y->data + dst * inner * (int64_t)es,
                   (const char *)x->data + src * inner * (int64_t)es, (size_t)inner * es);
        }
    }
    return true;
}

/* The slices along the axis (or the elements of the flattened input) whose condition is true;
 * the condition may be shorter than the axis, not longer. */
bool kn_cpu_Compress(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *cond = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    int64_t attr = ir_get_int(call->node, "axis");
    int64_t outer = 1, n = x->numel, inner = 1;
    if (attr != INT64_MIN) {
        int axis;
        if (!kn_axis(call, attr, x->rank, "axis", &axis))
            return false;
        outer = prod(x->dims, 0, axis);
        n = x->dims[axis];
        inner = prod(x->dims, axis + 1, x->rank);
    }
    if (cond->numel > n)
        return kn_fail(call, "the condition has %lld entries for %lld", (long long)cond->numel,
                       (long long)n);
    int64_t kept = 0;
    for (int64_t i = 0; i < cond->numel; i++)
        kept += ((const uint8_t *)cond->data)[i] != 0;
    if (!kn_check_numel(call, 0, outer * kept * inner))
        return false;
    size_t es = esize(x), slice = (size_t)inner * es;
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < cond->numel; i++)
            if (((const uint8_t *)cond->data)[i]) {
                memcpy(dst, (const char *)x->data + (o * n + i) * (int64_t)slice, slice);
                dst += slice;
            }
    return true;
}
