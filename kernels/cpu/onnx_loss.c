/* LogSoftmax and Hardmax along one axis, and the classification losses NegativeLogLikelihoodLoss
 * and SoftmaxCrossEntropyLoss (= LogSoftmax over the class axis, then the NLL loss).
 *
 * LogSoftmax subtracts the maximum and sums in double. The losses follow ONNX: with input
 * [N, C, d...] and target [N, d...], loss[n, d] = -input[n, target[n, d], d] * weight[target]
 * (weight 1 without a weight input), 0 where target == ignore_index; "sum" adds the losses, "mean"
 * divides the sum by the sum of the weights taken (0 / 0 when every target is ignored: NaN). A
 * target outside [0, C) that is not ignored is a run-time error. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

/* x viewed as [outer, n, inner] around the node's axis. */
static bool split_axis(const kn_call *call, const kn_tensor *x, int64_t *outer, int64_t *n,
                       int64_t *inner)
{
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis))
        return false;
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        *inner *= x->dims[d];
    *n = x->dims[axis];
    return true;
}

static void log_softmax(const float *x, float *y, int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *row = x + o * n * inner + i;
            double max = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++)
                max = row[j * inner] > max || isnan(row[j * inner]) ? row[j * inner] : max;
            for (int64_t j = 0; j < n; j++)
                sum += exp(row[j * inner] - max);
            double lse = max + log(sum);
            for (int64_t j = 0; j < n; j++)
                y[(o * n + j) * inner + i] = (float)(row[j * inner] - lse);
        }
}

bool kn_cpu_LogSoftmax(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    int64_t outer, n, inner;
    if (x->dtype != IR_F32)
        return kn_fail(call, "the input must be a float tensor");
    if (!split_axis(call, x, &outer, &n, &inner) || !kn_check_numel(call, 0, x->numel))
        return false;
    log_softmax(x->data, call->outputs[0].data, outer, n, inner);
    return true;
}

/* 1 at the first maximum along the axis, 0 elsewhere. */
bool kn_cpu_Hardmax(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    int64_t outer, n, inner;
    if (x->dtype != IR_F32)
        return kn_fail(call, "the input must be a float tensor");
    if (!split_axis(call, x, &outer, &n, &inner) || !kn_check_numel(call, 0, x->numel))
        return false;
    const float *xd = x->data;
    float *y = call->outputs[0].data;
    memset(y, 0, (size_t)x->numel * sizeof *y);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t best = 0;
            for (int64_t j = 1; j < n; j++)
                if (xd[(o * n + j) * inner + i] > xd[(o * n + best) * inner + i])
                    best = j;
            if (n > 0)
                y[(o * n + best) * inner + i] = 1;
        }
    return true;
}

/* The NLL loss of log-probabilities lp [N, C, d...] into y. */
static bool nll(const kn_call *call, const float *lp, const kn_tensor *x, const kn_tensor *target,
                const kn_tensor *weight, kn_tensor *y)
{
    const char *reduction = ir_get_string(call->node, "reduction");
    int64_t ignore = ir_get_int(call->node, "ignore_index");
    bool none = strcmp(reduction, "none") == 0, mean = strcmp(reduction, "mean") == 0;
    if (!none && !mean && strcmp(reduction, "sum") != 0)
        return kn_fail(call, "reduction \"%s\" is not none, sum or mean", reduction);
    int64_t n = x->dims[0], c = x->dims[1], inner = n && c ? x->numel / (n * c) : 0;
    if (target->numel != n * inner || (weight && weight->numel != c))
        return kn_fail(call, "target must be [N, d...] and weight [C] for input [N, C, d...]");
    if (!kn_check_numel(call, 0, none ? target->numel : 1))
        return false;
    double sum = 0, wsum = 0;
    float *out = y->data;
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t t = kn_get_int(target, b * inner + i);
            double l = 0, w = 0;
            if (t != ignore) {
                if (t < 0 || t >= c)
                    return kn_fail(call, "target %lld is not a class in [0, %lld)", (long long)t,
                                   (long long)c);
                w = weight ? ((const float *)weight->data)[t] : 1.0;
                l = -(double)lp[(b * c + t) * inner + i] * w;
            }
            if (none)
                out[b * inner + i] = (float)l;
            sum += l;
            wsum += w;
        }
    if (!none)
        out[0] = (float)(mean ? sum / wsum : sum);
    return true;
}

static const kn_tensor *weight_of(const kn_call *call)
{
    return call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
}

bool kn_cpu_NegativeLogLikelihoodLoss(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (x->dtype != IR_F32 || x->rank < 2)
        return kn_fail(call, "the input must be a float tensor [N, C, ...]");
    return nll(call, x->data, x, &call->inputs[1], weight_of(call), &call->outputs[0]);
}

bool kn_cpu_SoftmaxCrossEntropyLoss(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (x->dtype != IR_F32 || x->rank < 2)
        return kn_fail(call, "the scores must be a float tensor [N, C, ...]");
    int64_t n = x->dims[0], c = x->dims[1], inner = n && c ? x->numel / (n * c) : 0;
    float *lp = call->noutputs > 1 && call->outputs[1].data
                    ? call->outputs[1].data
                    : malloc((size_t)(x->numel ? x->numel : 1) * sizeof *lp);
    if (!lp)
        return kn_fail(call, "cannot allocate the log-probabilities");
    log_softmax(x->data, lp, n, c, inner);
    bool ok = nll(call, lp, x, &call->inputs[1], weight_of(call), &call->outputs[0]);
    if (lp != (call->noutputs > 1 ? call->outputs[1].data : NULL))
        free(lp);
    return ok;
}
