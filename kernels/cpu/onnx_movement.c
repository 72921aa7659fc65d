/* Data movement: Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Concat, Split, Slice,
 * Expand, Tile, Gather, Pad and Trilu.
 *
 * These move elements without looking at them, so they work on any dtype: a tensor is an array of
 * elements of ir_dtype_size(dtype) bytes, copied by an integer type of that size. Output shapes
 * were inferred before the call; values that decide a shape at run time (Reshape's shape, Slice's
 * starts, Pad's pads, ...) are checked against the allocated output, so a graph whose inference
 * could not see them gets an error instead of an overrun. */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

/* memcpy that accepts empty (possibly NULL) buffers. */
static void copy_bytes(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

static size_t elem_size(const kn_tensor *t) { return ir_dtype_size(t->dtype); }

static bool same_dtype(const kn_call *call, const kn_tensor *a, const kn_tensor *b)
{
    if (a->dtype == b->dtype)
        return true;
    return kn_fail(call, "dtypes differ: %s and %s", ir_dtype_name(a->dtype),
                   ir_dtype_name(b->dtype));
}

/* Whether output `index` has exactly these dims. */
static bool output_is(const kn_call *call, uint32_t index, int rank, const int64_t *dims)
{
    const kn_tensor *y = &call->outputs[index];
    bool same = y->rank == rank;
    for (int d = 0; d < rank && same; d++)
        same = y->dims[d] == dims[d];
    return same || kn_fail(call, "output %u was allocated with another shape than the result's",
                           index);
}

/* Copies input 0 to output 0 unchanged: the ops that only relabel the shape. */
static bool copy_view(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (!same_dtype(call, x, &call->outputs[0]) || !kn_check_numel(call, 0, x->numel))
        return false;
    copy_bytes(call->outputs[0].data, x->data, (size_t)x->numel * elem_size(x));
    return true;
}

/* ---- strided copies ------------------------------------------------------------------------ */

/* y (contiguous, dims) = x read at offset base + sum(idx[d] * stride[d]); strides may be 0 or
 * negative. The workhorse of Transpose and Slice. */
typedef struct {
    int rank;
    int64_t dims[IR_MAX_RANK];
    int64_t stride[IR_MAX_RANK];
    int64_t base;
} gather_plan;

#define STRIDED_COPY(T)                                                                            \
    do {                                                                                           \
        const T *src = x;                                                                          \
        T *dst = y;                                                                                \
        int64_t idx[IR_MAX_RANK] = {0}, off = p->base;                                             \
        int64_t run = p->dims[p->rank - 1], step = p->stride[p->rank - 1];                         \
        for (int64_t o = 0; o < numel; o += run) {                                                 \
            for (int64_t i = 0; i < run; i++)                                                      \
                dst[o + i] = src[off + i * step];                                                  \
            for (int d = p->rank - 2; d >= 0; d--) {                                               \
                off += p->stride[d];                                                               \
                if (++idx[d] < p->dims[d])                                                         \
                    break;                                                                         \
                off -= p->stride[d] * p->dims[d];                                                  \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void strided_copy(const gather_plan *p, const void *x, void *y, int64_t numel, size_t size)
{
    switch (size) {
    case 1: STRIDED_COPY(uint8_t); break;
    case 2: STRIDED_COPY(uint16_t); break;
    case 4: STRIDED_COPY(uint32_t); break;
    case 8: STRIDED_COPY(uint64_t); break;
    default: FR_UNREACHABLE();
    }
}

/* ---- Transpose ----------------------------------------------------------------------------- */

bool kn_cpu_Transpose(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    const int64_t *perm_attr;
    uint32_t n = ir_get_ints(call->node, "perm", &perm_attr);
    int64_t perm[IR_MAX_RANK], xs[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {false};
    if (n && n != (uint32_t)x->rank)
        return kn_fail(call, "perm has %u values for rank %d", n, x->rank);
    for (int d = 0; d < x->rank; d++) {
        perm[d] = n ? perm_attr[d] : x->rank - 1 - d; /* default: reverse the dims */
        if (perm[d] < 0 || perm[d] >= x->rank || seen[perm[d]])
            return kn_fail(call, "perm is not a permutation of 0..%d", x->rank - 1);
        seen[perm[d]] = true;
    }
    kn_strides(x->rank, x->dims, xs);
    gather_plan p = {.rank = x->rank > 0 ? x->rank : 1, .dims = {1}, .stride = {0}, .base = 0};
    for (int d = 0; d < x->rank; d++) {
        p.dims[d] = x->dims[perm[d]];
        p.stride[d] = xs[perm[d]];
    }
    if (!same_dtype(call, x, &call->outputs[0]) || !output_is(call, 0, x->rank, p.dims))
        return false;
    strided_copy(&p, x->data, call->outputs[0].data, x->numel, elem_size(x));
    return true;
}

/* ---- Reshape and the other views ----------------------------------------------------------- */

/* The shape Reshape produces: 0 copies x's dim (unless allowzero), one -1 is inferred. */
static bool reshape_dims(const kn_call *call, const kn_tensor *x, int64_t *dims, int *rank)
{
    const kn_tensor *shape = &call->inputs[1];
    bool allowzero = ir_get_int(call->node, "allowzero") != 0;
    *rank = kn_read_ints(call, shape, dims, IR_MAX_RANK, "shape");
    if (*rank < 0)
        return false;
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < *rank; d++) {
        if (dims[d] == 0 && !allowzero) {
            if (d >= x->rank)
                return kn_fail(call, "shape[%d] = 0 copies a dim the input (rank %d) lacks", d,
                               x->rank);
            dims[d] = x->dims[d];
        }
        if (dims[d] == -1 && infer < 0) {
            infer = d;
            continue;
        }
        if (dims[d] < 0)
            return kn_fail(call, "shape[%d] = %lld is invalid", d, (long long)dims[d]);
        if (__builtin_mul_overflow(known, dims[d], &known) || known > IR_MAX_NUMEL)
            return kn_fail(call, "the shape has too many elements");
    }
    if (infer >= 0) {
        if (known == 0 || x->numel % known)
            return kn_fail(call, "cannot reshape %lld elements with -1 and a known product %lld",
                           (long long)x->numel, (long long)known);
        dims[infer] = x->numel / known;
        known = x->numel;
    }
    if (known != x->numel)
        return kn_fail(call, "cannot reshape %lld elements into %lld", (long long)x->numel,
                       (long long)known);
    return true;
}

bool kn_cpu_Reshape(const kn_call *call)
{
    int64_t dims[IR_MAX_RANK];
    int rank;
    return reshape_dims(call, &call->inputs[0], dims, &rank) && output_is(call, 0, rank, dims) &&
           copy_view(call);
}

bool kn_cpu_Flatten(const kn_call *call) { return copy_view(call); }
bool kn_cpu_Unsqueeze(const kn_call *call) { return copy_view(call); }
bool kn_cpu_Identity(const kn_call *call) { return copy_view(call); }

/* Squeeze may only drop dims of size 1: the listed axes (input or attribute) are checked. */
bool kn_cpu_Squeeze(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    int64_t axes[IR_MAX_RANK];
    int naxes = 0;
    if (call->ninputs > 1 && call->inputs[1].data) {
        if ((naxes = kn_read_ints(call, &call->inputs[1], axes, IR_MAX_RANK, "axes")) < 0)
            return false;
    } else {
        const int64_t *attr;
        uint32_t n = ir_get_ints(call->node, "axes", &attr);
        if (n > IR_MAX_RANK)
            return kn_fail(call, "axes has %u values", n);
        if (n)
            memcpy(axes, attr, n * sizeof *attr);
        naxes = (int)n;
    }
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!kn_axis(call, axes[i], x->rank, "axis", &a))
            return false;
        if (x->dims[a] != 1)
            return kn_fail(call, "cannot squeeze dim %d of size %lld", a, (long long)x->dims[a]);
    }
    return copy_view(call);
}

/* ---- Concat and Split ---------------------------------------------------------------------- */

/* Product of dims [from, to). */
static int64_t dims_product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= dims[d];
    return p;
}

bool kn_cpu_Concat(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), y->rank, "axis", &axis))
        return false;
    int64_t total = 0;
    for (uint32_t k = 0; k < call->ninputs; k++) {
        const kn_tensor *t = &call->inputs[k];
        if (!same_dtype(call, t, y))
            return false;
        bool fits = t->rank == y->rank;
        for (int d = 0; d < y->rank && fits; d++)
            fits = d == axis || t->dims[d] == y->dims[d];
        if (!fits)
            return kn_fail(call, "input %u does not match the others outside axis %d", k, axis);
        total += t->dims[axis];
    }
    if (total != y->dims[axis])
        return kn_fail(call, "the inputs sum to %lld along axis %d, the output has %lld",
                       (long long)total, axis, (long long)y->dims[axis]);
    size_t size = elem_size(y);
    int64_t outer = dims_product(y->dims, 0, axis), inner = dims_product(y->dims, axis + 1, y->rank);
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (uint32_t k = 0; k < call->ninputs; k++) {
            const kn_tensor *t = &call->inputs[k];
            size_t chunk = (size_t)(t->dims[axis] * inner) * size;
            copy_bytes(dst, (const char *)t->data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    return true;
}

/* The outputs' sizes along the axis are those inferred (from the split input, the attribute,
 * num_outputs or an equal split); they must add up to the input's. */
bool kn_cpu_Split(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis))
        return false;
    int64_t total = 0;
    for (uint32_t k = 0; k < call->noutputs; k++) {
        const kn_tensor *t = &call->outputs[k];
        bool fits = t->rank == x->rank && t->dtype == x->dtype;
        for (int d = 0; d < x->rank && fits; d++)
            fits = d == axis || t->dims[d] == x->dims[d];
        if (!fits)
            return kn_fail(call, "output %u does not match the input outside axis %d", k, axis);
        total += t->dims[axis];
    }
    if (call->ninputs > 1 && call->inputs[1].data) { /* explicit sizes must agree */
        const kn_tensor *sizes = &call->inputs[1];
        bool agree = sizes->numel == call->noutputs;
        for (uint32_t k = 0; k < call->noutputs && agree; k++)
            agree = kn_get_int(sizes, k) == call->outputs[k].dims[axis];
        if (!agree)
            return kn_fail(call, "the split sizes do not match the outputs");
    }
    if (total != x->dims[axis])
        return kn_fail(call, "the outputs add up to %lld along axis %d, the input has %lld",
                       (long long)total, axis, (long long)x->dims[axis]);
    size_t size = elem_size(x);
    int64_t outer = dims_product(x->dims, 0, axis), inner = dims_product(x->dims, axis + 1, x->rank);
    const char *src = x->data;
    for (int64_t o = 0; o < outer; o++)
        for (uint32_t k = 0; k < call->noutputs; k++) {
            kn_tensor *t = &call->outputs[k];
            size_t chunk = (size_t)(t->dims[axis] * inner) * size;
            copy_bytes((char *)t->data + (size_t)o * chunk, src, chunk);
            src += chunk;
        }
    return true;
}

/* ---- Slice --------------------------------------------------------------------------------- */

int64_t kn_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first)
{
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    start = start < 0 ? 0 : start > hi ? hi : start;
    end = end < lo ? lo : end > hi ? hi : end;
    *first = start;
    int64_t span = step > 0 ? end - start : start - end;
    int64_t astep = step > 0 ? step : -step;
    return span <= 0 ? 0 : (span + astep - 1) / astep;
}

/* Reads a 1-D integer input that must have n values. */
static bool read_n(const kn_call *call, uint32_t input, int64_t *out, int n, const char *what)
{
    int got = kn_read_ints(call, &call->inputs[input], out, IR_MAX_RANK, what);
    if (got >= 0 && got != n)
        return kn_fail(call, "%s has %d values; starts has %d", what, got, n);
    return got == n;
}

/* Reads Slice's starts, ends and optional axes and steps inputs. */
static bool slice_inputs(const kn_call *call, int64_t *starts, int64_t *ends, int64_t *axes,
                         int64_t *steps, int *count)
{
    int n = kn_read_ints(call, &call->inputs[1], starts, IR_MAX_RANK, "starts");
    if (n < 0 || !read_n(call, 2, ends, n, "ends"))
        return false;
    for (int i = 0; i < n; i++) {
        axes[i] = i;
        steps[i] = 1;
    }
    if (call->ninputs > 3 && call->inputs[3].data && !read_n(call, 3, axes, n, "axes"))
        return false;
    if (call->ninputs > 4 && call->inputs[4].data && !read_n(call, 4, steps, n, "steps"))
        return false;
    *count = n;
    return true;
}

bool kn_cpu_Slice(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    int64_t starts[IR_MAX_RANK], ends[IR_MAX_RANK], axes[IR_MAX_RANK], steps[IR_MAX_RANK];
    int n;
    if (!slice_inputs(call, starts, ends, axes, steps, &n))
        return false;
    gather_plan p = {.rank = x->rank > 0 ? x->rank : 1, .dims = {1}, .stride = {0}, .base = 0};
    int64_t xs[IR_MAX_RANK], first[IR_MAX_RANK] = {0}, step[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {false};
    kn_strides(x->rank, x->dims, xs);
    for (int d = 0; d < x->rank; d++) {
        p.dims[d] = x->dims[d];
        step[d] = 1;
    }
    for (int i = 0; i < n; i++) {
        int a;
        if (!kn_axis(call, axes[i], x->rank, "axis", &a))
            return false;
        if (seen[a] || steps[i] == 0)
            return kn_fail(call, "axis %d repeated or with step 0", a);
        seen[a] = true;
        step[a] = steps[i];
        p.dims[a] = kn_slice_axis(x->dims[a], starts[i], ends[i], steps[i], &first[a]);
    }
    for (int d = 0; d < x->rank; d++) {
        p.base += first[d] * xs[d];
        p.stride[d] = step[d] * xs[d];
    }
    if (!same_dtype(call, x, &call->outputs[0]) || !output_is(call, 0, x->rank, p.dims))
        return false;
    strided_copy(&p, x->data, call->outputs[0].data, call->outputs[0].numel, elem_size(x));
    return true;
}

/* ---- Expand and Tile ----------------------------------------------------------------------- */

bool kn_cpu_Expand(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    if (!same_dtype(call, x, y))
        return false;
    if (!kn_broadcast_copy(x, y, elem_size(x)))
        return kn_fail(call, "the input does not broadcast to the output shape");
    return true;
}

/* y[i] = x[i mod dims] per axis. Each output row along the last axis is the matching input row
 * repeated. */
bool kn_cpu_Tile(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    int64_t reps[IR_MAX_RANK], dims[IR_MAX_RANK];
    int n = kn_read_ints(call, &call->inputs[1], reps, IR_MAX_RANK, "repeats");
    if (n < 0)
        return false;
    if (n != x->rank)
        return kn_fail(call, "repeats has %d values for rank %d", n, x->rank);
    for (int d = 0; d < x->rank; d++) {
        if (reps[d] < 0)
            return kn_fail(call, "repeats[%d] = %lld is negative", d, (long long)reps[d]);
        dims[d] = x->dims[d] * reps[d];
    }
    if (!same_dtype(call, x, y) || !output_is(call, 0, x->rank, dims))
        return false;
    if (y->numel == 0)
        return true;
    if (x->rank == 0) {
        copy_bytes(y->data, x->data, elem_size(x));
        return true;
    }
    size_t size = elem_size(x);
    int r = x->rank;
    int64_t xs[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
    kn_strides(r, x->dims, xs);
    int64_t in_row = x->dims[r - 1], out_row = dims[r - 1];
    char *dst = y->data;
    for (int64_t o = 0; o < y->numel; o += out_row) {
        int64_t src = 0; /* the input row: output index mod input dims on each outer axis */
        for (int d = 0; d < r - 1; d++)
            src += (idx[d] % x->dims[d]) * xs[d];
        for (int64_t j = 0; j < out_row; j += in_row)
            copy_bytes(dst + (size_t)(o + j) * size, (const char *)x->data + (size_t)src * size,
                       (size_t)in_row * size);
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < dims[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* ---- Gather -------------------------------------------------------------------------------- */

/* y[outer, j..., inner] = data[outer, indices[j...], inner]; negative indices count from the end
 * and an index outside [-dim, dim) is a run-time error. */
bool kn_cpu_Gather(const kn_call *call)
{
    const kn_tensor *data = &call->inputs[0], *ind = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), data->rank, "axis", &axis))
        return false;
    if (ind->dtype != IR_I32 && ind->dtype != IR_I64)
        return kn_fail(call, "indices must be i32 or i64, not %s", ir_dtype_name(ind->dtype));
    int64_t dims[IR_MAX_RANK];
    int rank = data->rank - 1 + ind->rank;
    if (rank > IR_MAX_RANK)
        return kn_fail(call, "the result would have rank %d", rank);
    memcpy(dims, data->dims, (size_t)axis * sizeof *dims);
    memcpy(dims + axis, ind->dims, (size_t)ind->rank * sizeof *dims);
    memcpy(dims + axis + ind->rank, data->dims + axis + 1,
           (size_t)(data->rank - axis - 1) * sizeof *dims);
    if (!same_dtype(call, data, y) || !output_is(call, 0, rank, dims))
        return false;
    int64_t dim = data->dims[axis];
    for (int64_t j = 0; j < ind->numel; j++) {
        int64_t i = kn_get_int(ind, j);
        if (i < -dim || i >= dim)
            return kn_fail(call, "index %lld is out of range for axis %d of size %lld",
                           (long long)i, axis, (long long)dim);
    }
    size_t size = elem_size(data);
    int64_t outer = dims_product(data->dims, 0, axis);
    size_t chunk = (size_t)dims_product(data->dims, axis + 1, data->rank) * size;
    const char *src = data->data;
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ind->numel; j++) {
            int64_t i = kn_get_int(ind, j);
            i += i < 0 ? dim : 0;
            copy_bytes(dst, src + ((size_t)(o * dim + i)) * chunk, chunk);
            dst += chunk;
        }
    return true;
}

/* ---- Pad ----------------------------------------------------------------------------------- */

typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

static bool pad_mode_parse(const kn_call *call, pad_mode *mode)
{
    const char *m = ir_get_string(call->node, "mode");
    static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
    for (int i = 0; i < 4; i++)
        if (strcmp(m, names[i]) == 0) {
            *mode = (pad_mode)i;
            return true;
        }
    return kn_fail(call, "mode \"%s\" is not constant, reflect, edge or wrap", m);
}

/* The source index of output position i on an axis of size n padded by `before`, or -1 for the
 * constant value. Reflect mirrors without repeating the edge (numpy "reflect"). */
static int64_t pad_source(int64_t i, int64_t n, int64_t before, pad_mode mode)
{
    int64_t s = i - before;
    if (s >= 0 && s < n)
        return s;
    switch (mode) {
    case PAD_CONSTANT: return -1;
    case PAD_EDGE: return s < 0 ? 0 : n - 1;
    case PAD_WRAP: return ((s % n) + n) % n;
    case PAD_REFLECT:
        if (n == 1)
            return 0;
        int64_t period = 2 * (n - 1);
        s = ((s % period) + period) % period;
        return s < n ? s : period - s;
    }
    FR_UNREACHABLE();
    return -1;
}

/* The begin and end pads of every axis, from the pads input and the optional axes input. */
static bool pad_amounts(const kn_call *call, int rank, int64_t *before, int64_t *after)
{
    int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
    int npads = kn_read_ints(call, &call->inputs[1], pads, 2 * IR_MAX_RANK, "pads");
    if (npads < 0)
        return false;
    int naxes = rank;
    for (int d = 0; d < rank; d++)
        axes[d] = d;
    if (call->ninputs > 3 && call->inputs[3].data &&
        (naxes = kn_read_ints(call, &call->inputs[3], axes, IR_MAX_RANK, "axes")) < 0)
        return false;
    if (npads != 2 * naxes)
        return kn_fail(call, "pads has %d values for %d axes", npads, naxes);
    for (int d = 0; d < rank; d++)
        before[d] = after[d] = 0;
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!kn_axis(call, axes[i], rank, "axis", &a))
            return false;
        before[a] = pads[i];
        after[a] = pads[naxes + i];
    }
    return true;
}

#define PAD_LOOP(T)                                                                                \
    do {                                                                                           \
        const T *src = x->data;                                                                    \
        T *dst = y->data, fill;                                                                    \
        memcpy(&fill, &value, sizeof fill);                                                        \
        int64_t idx[IR_MAX_RANK] = {0}, run = dims[r - 1];                                         \
        const int64_t *last = map[r - 1];                                                          \
        for (int64_t o = 0; o < y->numel; o += run) {                                              \
            int64_t off = 0;                                                                       \
            bool constant = false;                                                                 \
            for (int d = 0; d < r - 1; d++) {                                                      \
                constant |= map[d][idx[d]] < 0;                                                    \
                off += map[d][idx[d]] * xs[d];                                                     \
            }                                                                                      \
            for (int64_t i = 0; i < run; i++)                                                      \
                dst[o + i] = constant || last[i] < 0 ? fill : src[off + last[i]];                  \
            for (int d = r - 2; d >= 0; d--) {                                                     \
                if (++idx[d] < dims[d])                                                            \
                    break;                                                                         \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Pads (or, with negative pads, crops) every axis. Each axis gets a table from output position to
 * source position (-1: the constant), so the copy is one table lookup per element. */
bool kn_cpu_Pad(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    pad_mode mode = PAD_CONSTANT;
    int64_t before[IR_MAX_RANK], after[IR_MAX_RANK], dims[IR_MAX_RANK], xs[IR_MAX_RANK];
    int r = x->rank;
    if (!pad_mode_parse(call, &mode) || !pad_amounts(call, r, before, after))
        return false;
    for (int d = 0; d < r; d++) {
        dims[d] = x->dims[d] + before[d] + after[d];
        if (dims[d] < 0)
            return kn_fail(call, "axis %d would have size %lld", d, (long long)dims[d]);
        if (mode != PAD_CONSTANT && x->dims[d] == 0 && dims[d] > 0)
            return kn_fail(call, "cannot %s-pad the empty axis %d", mode == PAD_EDGE ? "edge"
                           : mode == PAD_WRAP ? "wrap" : "reflect", d);
    }
    if (!same_dtype(call, x, y) || !output_is(call, 0, r, dims))
        return false;
    if (y->numel == 0)
        return true;
    /* the constant, in the tensor's dtype */
    uint64_t value = 0;
    if (call->ninputs > 2 && call->inputs[2].data && call->inputs[2].numel > 0) {
        kn_tensor v = {.dtype = x->dtype, .rank = 0, .numel = 1, .data = &value};
        kn_set_f64(&v, 0, kn_get_f64(&call->inputs[2], 0));
    }
    if (r == 0) {
        copy_bytes(y->data, x->data, elem_size(x));
        return true;
    }
    int64_t total = 0;
    for (int d = 0; d < r; d++)
        total += dims[d];
    int64_t *tables = malloc((size_t)total * sizeof *tables);
    if (!tables)
        return kn_fail(call, "cannot allocate the index tables");
    const int64_t *map[IR_MAX_RANK];
    for (int d = 0, at = 0; d < r; at += (int)dims[d], d++) {
        for (int64_t i = 0; i < dims[d]; i++)
            tables[at + i] = pad_source(i, x->dims[d], before[d], mode);
        map[d] = tables + at;
    }
    kn_strides(r, x->dims, xs);
    switch (elem_size(x)) {
    case 1: PAD_LOOP(uint8_t); break;
    case 2: PAD_LOOP(uint16_t); break;
    case 4: PAD_LOOP(uint32_t); break;
    case 8: PAD_LOOP(uint64_t); break;
    default: FR_UNREACHABLE();
    }
    free(tables);
    return true;
}

/* ---- Trilu --------------------------------------------------------------------------------- */

/* Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each of the last two dims' matrices
 * and zeroes the rest. */
bool kn_cpu_Trilu(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    bool upper = ir_get_int(call->node, "upper") != 0;
    int64_t k = 0;
    if (call->ninputs > 1 && call->inputs[1].data) {
        if (call->inputs[1].numel != 1)
            return kn_fail(call, "k must be a scalar");
        k = kn_get_int(&call->inputs[1], 0);
    }
    if (x->rank < 2)
        return kn_fail(call, "the input must have rank >= 2, not %d", x->rank);
    if (!copy_view(call))
        return false;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t mats = rows > 0 && cols > 0 ? x->numel / (rows * cols) : 0;
    size_t size = elem_size(x);
    char *d = y->data;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                bool keep = upper ? j - i >= k : j - i <= k;
                if (!keep)
                    memset(d + (size_t)((m * rows + i) * cols + j) * size, 0, size);
            }
    return true;
}
