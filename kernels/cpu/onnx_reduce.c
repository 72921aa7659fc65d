/* ReduceSum, ReduceMean, ReduceMax and ReduceMin.
 *
 * Axes come from the optional second input (opset 13 for ReduceSum, 18 for the others) or else
 * from the `axes` attribute; empty axes reduce everything unless noop_with_empty_axes=1, which
 * makes the op an identity. Floats accumulate in double; integers in long double, which holds
 * every int64 exactly on x86-64 (its 64-bit mantissa). Max and Min propagate NaN like numpy; an
 * empty reduction gives 0 (Sum), NaN (Mean), -inf / +inf (Max / Min, saturated for integers). */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

typedef enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN } red_kind;

/* x's dims with neighbouring dims of the same kind (reduced or kept) merged, and the stride of
 * each in the output (0 for reduced dims). x is walked in storage order. */
typedef struct {
    int rank;
    int64_t dims[IR_MAX_RANK];
    bool reduced[IR_MAX_RANK];
    int64_t out_stride[IR_MAX_RANK];
    int64_t count; /* elements reduced into each output */
} red_plan;

static void plan_init(red_plan *p, const kn_tensor *x, const bool *mask)
{
    memset(p, 0, sizeof *p);
    p->count = 1;
    for (int d = 0; d < x->rank; d++) {
        if (mask[d])
            p->count *= x->dims[d];
        if (x->dims[d] == 1)
            continue; /* a dim of 1 is the same reduced or kept */
        if (p->rank > 0 && p->reduced[p->rank - 1] == mask[d]) {
            p->dims[p->rank - 1] *= x->dims[d];
            continue;
        }
        p->dims[p->rank] = x->dims[d];
        p->reduced[p->rank++] = mask[d];
    }
    if (p->rank == 0) {
        p->dims[0] = 1;
        p->rank = 1;
    }
    int64_t s = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        p->out_stride[d] = p->reduced[d] ? 0 : s;
        if (!p->reduced[d])
            s *= p->dims[d];
    }
}

/* Folds v into the accumulator a. */
#define COMBINE(kind, a, v)                                                                        \
    do {                                                                                           \
        if ((kind) <= RED_MEAN)                                                                    \
            (a) += (v);                                                                            \
        else if ((kind) == RED_MAX ? ((v) > (a) || (v) != (v)) : ((v) < (a) || (v) != (v)))        \
            (a) = (v);                                                                             \
    } while (0)

/* acc[out] = fold of x over the plan, for accumulator type ACC and element type T. */
#define DEFINE_REDUCE(name, T, ACC)                                                                \
    static void name(const red_plan *p, const T *x, int64_t numel, red_kind kind, ACC *acc)        \
    {                                                                                              \
        int64_t idx[IR_MAX_RANK] = {0}, o = 0, run = p->dims[p->rank - 1];                        \
        bool inner_reduced = p->reduced[p->rank - 1];                                              \
        for (int64_t i = 0; i < numel; i += run) {                                                 \
            if (inner_reduced) {                                                                   \
                ACC a = acc[o];                                                                    \
                for (int64_t j = 0; j < run; j++)                                                  \
                    COMBINE(kind, a, (ACC)x[i + j]);                                               \
                acc[o] = a;                                                                        \
            } else {                                                                               \
                for (int64_t j = 0; j < run; j++)                                                  \
                    COMBINE(kind, acc[o + j], (ACC)x[i + j]);                                      \
            }                                                                                      \
            for (int d = p->rank - 2; d >= 0; d--) { /* the odometer over the outer dims */        \
                o += p->out_stride[d];                                                             \
                if (++idx[d] < p->dims[d])                                                         \
                    break;                                                                         \
                o -= p->out_stride[d] * p->dims[d];                                                \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_REDUCE(reduce_f32, float, double)
DEFINE_REDUCE(reduce_i8, int8_t, long double)
DEFINE_REDUCE(reduce_u8, uint8_t, long double)
DEFINE_REDUCE(reduce_i32, int32_t, long double)
DEFINE_REDUCE(reduce_i64, int64_t, long double)

bool kn_reduce_mask(const kn_call *call, const kn_tensor *x, bool *mask, bool *noop)
{
    int64_t axes[IR_MAX_RANK];
    int naxes;
    if (call->ninputs > 1 && call->inputs[1].data) {
        naxes = kn_read_ints(call, &call->inputs[1], axes, IR_MAX_RANK, "axes");
        if (naxes < 0)
            return false;
    } else {
        const int64_t *attr;
        uint32_t n = ir_get_ints(call->node, "axes", &attr);
        if (n > IR_MAX_RANK)
            return kn_fail(call, "axes has %u values for rank %d", n, x->rank);
        naxes = (int)n;
        if (n)
            memcpy(axes, attr, n * sizeof *attr);
    }
    *noop = naxes == 0 && ir_get_int(call->node, "noop_with_empty_axes") != 0;
    for (int d = 0; d < x->rank; d++)
        mask[d] = naxes == 0;
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!kn_axis(call, axes[i], x->rank, "axis", &a))
            return false;
        mask[a] = true;
    }
    return true;
}

/* Writes an integer accumulator to output element i, saturated to the output dtype. */
static void store_int(kn_tensor *y, int64_t i, long double v)
{
    long double lo = y->dtype == IR_I8 ? INT8_MIN : y->dtype == IR_U8 ? 0
                   : y->dtype == IR_I32 ? INT32_MIN : (long double)INT64_MIN;
    long double hi = y->dtype == IR_I8 ? INT8_MAX : y->dtype == IR_U8 ? UINT8_MAX
                   : y->dtype == IR_I32 ? INT32_MAX : (long double)INT64_MAX;
    v = v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
    int64_t t = (int64_t)v;
    switch (y->dtype) {
    case IR_I8: ((int8_t *)y->data)[i] = (int8_t)t; break;
    case IR_U8: ((uint8_t *)y->data)[i] = (uint8_t)t; break;
    case IR_I32: ((int32_t *)y->data)[i] = (int32_t)t; break;
    case IR_I64: ((int64_t *)y->data)[i] = t; break;
    default: FR_UNREACHABLE();
    }
}

static bool reduce_float(const red_plan *p, const kn_tensor *x, red_kind kind, kn_tensor *y,
                         double *acc)
{
    reduce_f32(p, x->data, x->numel, kind, acc);
    float *yd = y->data;
    for (int64_t i = 0; i < y->numel; i++)
        yd[i] = (float)(kind == RED_MEAN ? acc[i] / (double)p->count : acc[i]);
    return true;
}

static bool reduce_int(const kn_call *call, const red_plan *p, const kn_tensor *x, red_kind kind,
                       kn_tensor *y, long double *acc)
{
    switch (x->dtype) {
    case IR_I8: reduce_i8(p, x->data, x->numel, kind, acc); break;
    case IR_U8: reduce_u8(p, x->data, x->numel, kind, acc); break;
    case IR_I32: reduce_i32(p, x->data, x->numel, kind, acc); break;
    case IR_I64: reduce_i64(p, x->data, x->numel, kind, acc); break;
    default: return kn_fail(call, "dtype %s is not supported", ir_dtype_name(x->dtype));
    }
    for (int64_t i = 0; i < y->numel; i++) /* an integer mean truncates toward zero */
        store_int(y, i, kind == RED_MEAN ? truncl(acc[i] / (long double)p->count) : acc[i]);
    return true;
}

static bool run_reduce(const kn_call *call, red_kind kind)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    bool mask[IR_MAX_RANK], noop = false;
    if (!kn_reduce_mask(call, x, mask, &noop))
        return false;
    if (y->dtype != x->dtype)
        return kn_fail(call, "output dtype %s differs from input dtype %s", ir_dtype_name(y->dtype),
                       ir_dtype_name(x->dtype));
    if (noop) {
        if (!kn_check_numel(call, 0, x->numel))
            return false;
        if (x->numel)
            memcpy(y->data, x->data, (size_t)x->numel * ir_dtype_size(x->dtype));
        return true;
    }
    red_plan p;
    plan_init(&p, x, mask);
    int64_t out = 1;
    for (int d = 0; d < x->rank; d++)
        out *= mask[d] ? 1 : x->dims[d];
    if (!kn_check_numel(call, 0, out))
        return false;
    bool is_float = x->dtype == IR_F32;
    size_t elem = is_float ? sizeof(double) : sizeof(long double);
    void *acc = malloc((size_t)out * elem + 1);
    if (!acc)
        return kn_fail(call, "cannot allocate %lld accumulators", (long long)out);
    double init = kind == RED_MAX ? -INFINITY : kind == RED_MIN ? INFINITY : 0.0;
    for (int64_t i = 0; i < out; i++) {
        if (is_float)
            ((double *)acc)[i] = init;
        else
            ((long double *)acc)[i] = init;
    }
    bool ok = is_float ? reduce_float(&p, x, kind, y, acc) : reduce_int(call, &p, x, kind, y, acc);
    free(acc);
    return ok;
}

bool kn_cpu_ReduceSum(const kn_call *call) { return run_reduce(call, RED_SUM); }
bool kn_cpu_ReduceMean(const kn_call *call) { return run_reduce(call, RED_MEAN); }
bool kn_cpu_ReduceMax(const kn_call *call) { return run_reduce(call, RED_MAX); }
bool kn_cpu_ReduceMin(const kn_call *call) { return run_reduce(call, RED_MIN); }
