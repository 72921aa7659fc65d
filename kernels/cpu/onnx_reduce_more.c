/* The reductions beyond Sum, Mean, Max and Min: ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare,
 * ReduceLogSum and ReduceLogSumExp.
 *
 * Axes as in kernels/cpu/onnx_reduce.c: the optional second input, else the `axes` attribute;
 * empty axes reduce everything unless noop_with_empty_axes=1 (the identity). Every element is
 * folded into its output's accumulator in double; LogSumExp subtracts each output's maximum first,
 * so that large inputs do not overflow (a maximum of +-inf gives that infinity, as numpy's
 * logsumexp). Empty reductions give each fold's identity: 1 (Prod), 0 (L1, L2, SumSquare) and -inf
 * (LogSum, LogSumExp). Integer results are truncated toward zero and saturated. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

typedef enum { R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LOGSUMEXP } red_kind;

static double fold_init(red_kind k)
{
    return k == R_PROD ? 1.0 : 0.0;
}

static double fold(red_kind k, double acc, double v, double max)
{
    switch (k) {
    case R_PROD: return acc * v;
    case R_L1: return acc + fabs(v);
    case R_L2:
    case R_SUMSQ: return acc + v * v;
    case R_LOGSUM: return acc + v;
    case R_LOGSUMEXP: return acc + exp(v - max);
    }
    return acc;
}

static double finish(red_kind k, double acc, double max)
{
    switch (k) {
    case R_L2: return sqrt(acc);
    case R_LOGSUM: return log(acc);
    case R_LOGSUMEXP: return isinf(max) ? max : max + log(acc);
    default: return acc;
    }
}

/* out[i]: the output offset of every input element i, walking x in storage order. */
static void output_offsets(const kn_tensor *x, const bool *mask, int64_t *out)
{
    int64_t os[IR_MAX_RANK], s = 1, pos[IR_MAX_RANK] = {0}, o = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        os[d] = mask[d] ? 0 : s;
        s *= mask[d] ? 1 : x->dims[d];
    }
    for (int64_t i = 0; i < x->numel; i++) {
        out[i] = o;
        for (int d = x->rank - 1; d >= 0; d--) {
            o += os[d];
            if (++pos[d] < x->dims[d])
                break;
            o -= os[d] * x->dims[d];
            pos[d] = 0;
        }
    }
}

static bool run_reduce(const kn_call *call, red_kind kind)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    bool mask[IR_MAX_RANK], noop = false;
    if (x->dtype == IR_BOOL || y->dtype != x->dtype)
        return kn_fail(call, "dtype %s is not supported", ir_dtype_name(x->dtype));
    if (!kn_reduce_mask(call, x, mask, &noop))
        return false;
    int64_t count = 1;
    for (int d = 0; d < x->rank; d++)
        count *= mask[d] && !noop ? 1 : x->dims[d];
    if (!kn_check_numel(call, 0, count))
        return false;
    if (noop) { /* the identity: each element folded alone (ReduceL1 of -2 is 2) */
        for (int d = 0; d < x->rank; d++)
            mask[d] = false;
    }
    int64_t *where = malloc((size_t)(x->numel ? x->numel : 1) * sizeof *where);
    double *acc = malloc((size_t)(count ? count : 1) * sizeof *acc);
    double *max = malloc((size_t)(count ? count : 1) * sizeof *max);
    if (!where || !acc || !max) {
        free(where), free(acc), free(max);
        return kn_fail(call, "cannot allocate the accumulators");
    }
    output_offsets(x, mask, where);
    for (int64_t o = 0; o < count; o++) {
        acc[o] = fold_init(kind);
        max[o] = -INFINITY;
    }
    if (kind == R_LOGSUMEXP)
        for (int64_t i = 0; i < x->numel; i++) {
            double v = kn_get_f64(x, i);
            if (v > max[where[i]] || isnan(v))
                max[where[i]] = v;
        }
    for (int64_t i = 0; i < x->numel; i++)
        acc[where[i]] = fold(kind, acc[where[i]], kn_get_f64(x, i), max[where[i]]);
    for (int64_t o = 0; o < count; o++)
        kn_set_f64(y, o, finish(kind, acc[o], max[o]));
    free(where), free(acc), free(max);
    return true;
}

bool kn_cpu_ReduceProd(const kn_call *call)
{
    return run_reduce(call, R_PROD);
}
bool kn_cpu_ReduceL1(const kn_call *call)
{
    return run_reduce(call, R_L1);
}
bool kn_cpu_ReduceL2(const kn_call *call)
{
    return run_reduce(call, R_L2);
}
bool kn_cpu_ReduceSumSquare(const kn_call *call)
{
    return run_reduce(call, R_SUMSQ);
}
bool kn_cpu_ReduceLogSum(const kn_call *call)
{
    return run_reduce(call, R_LOGSUM);
}
bool kn_cpu_ReduceLogSumExp(const kn_call *call)
{
    return run_reduce(call, R_LOGSUMEXP);
}
