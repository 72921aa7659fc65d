/* BatchNormalization, LayerNormalization and Softmax. Statistics are accumulated in double. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

/* ---- BatchNormalization -------------------------------------------------------------------- */

/* The per-channel statistics of x [N, C, ...] over N and the spatial dims (training mode):
 * mean and biased variance, in double. */
static void channel_stats(const float *x, int64_t n, int64_t c, int64_t sp, int64_t ch,
                          double *mean, double *var)
{
    double sum = 0, sq = 0;
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < sp; i++)
            sum += x[(b * c + ch) * sp + i];
    int64_t count = n * sp;
    *mean = count ? sum / (double)count : 0;
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < sp; i++) {
            double d = x[(b * c + ch) * sp + i] - *mean;
            sq += d * d;
        }
    *var = count ? sq / (double)count : 0;
}

/* y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel of x [N, C, spatial...].
 * Inference mode uses the given mean and var. Training mode (training_mode=1) normalizes with the
 * batch's own statistics and returns running_mean = mean * momentum + batch_mean * (1 - momentum)
 * (and the same for the variance, the batch's biased variance) as outputs 1 and 2. */
bool kn_cpu_BatchNormalization(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    const float *xd = x->data, *scale = call->inputs[1].data, *bias = call->inputs[2].data;
    const float *mean = call->inputs[3].data, *var = call->inputs[4].data;
    float *y = call->outputs[0].data;
    double eps = ir_get_float(call->node, "epsilon");
    double momentum = ir_get_float(call->node, "momentum");
    bool training = ir_get_int(call->node, "training_mode") != 0;
    if (x->dtype != IR_F32 || x->rank < 2)
        return kn_fail(call, "input must be float [N, C, ...]");
    int64_t n = x->dims[0], c = x->dims[1], sp = n > 0 && c > 0 ? x->numel / (n * c) : 0;
    for (uint32_t i = 1; i < 5; i++)
        if (call->inputs[i].numel != c || call->inputs[i].dtype != IR_F32)
            return kn_fail(call, "input %u must hold %lld float values (one per channel)", i,
                           (long long)c);
    if (!kn_check_numel(call, 0, x->numel))
        return false;
    bool stats_out = training && call->noutputs >= 3 && call->outputs[1].data &&
                     call->outputs[2].data;
    for (int64_t ch = 0; ch < c; ch++) {
        double mu = mean[ch], v = var[ch];
        if (training) {
            channel_stats(xd, n, c, sp, ch, &mu, &v);
            if (stats_out) {
                ((float *)call->outputs[1].data)[ch] =
                    (float)(mean[ch] * momentum + mu * (1 - momentum));
                ((float *)call->outputs[2].data)[ch] =
                    (float)(var[ch] * momentum + v * (1 - momentum));
            }
        }
        float a = (float)(scale[ch] / sqrt(v + eps));
        float b = (float)(bias[ch] - mu * scale[ch] / sqrt(v + eps));
        for (int64_t bi = 0; bi < n; bi++) {
            const float *xs = xd + (bi * c + ch) * sp;
            float *ys = y + (bi * c + ch) * sp;
            for (int64_t i = 0; i < sp; i++)
                ys[i] = xs[i] * a + b;
        }
    }
    return true;
}

/* ---- LayerNormalization -------------------------------------------------------------------- */

/* A parameter (scale or bias) at the full size of the normalized dims: itself when it already has
 * `cols` values, else broadcast into `buf`. NULL when it does not broadcast. */
static const float *full_param(const kn_tensor *p, int rank, const int64_t *dims, int64_t cols,
                               float *buf)
{
    if (p->numel == cols)
        return p->data;
    kn_tensor t = {.dtype = IR_F32, .rank = rank, .numel = cols, .data = buf};
    memcpy(t.dims, dims, (size_t)rank * sizeof *dims);
    return kn_broadcast_copy(p, &t, sizeof(float)) ? buf : NULL;
}

/* Normalizes over the dims from `axis` on; outputs Mean and InvStdDev (optional) have x's leading
 * dims followed by ones. */
bool kn_cpu_LayerNormalization(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *scale = &call->inputs[1];
    const kn_tensor *bias = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    int axis;
    if (x->dtype != IR_F32 || scale->dtype != IR_F32 || (bias && bias->dtype != IR_F32))
        return kn_fail(call, "float inputs only");
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis) ||
        !kn_check_numel(call, 0, x->numel))
        return false;
    int64_t rows = 1;
    for (int d = 0; d < axis; d++)
        rows *= x->dims[d];
    int64_t cols = rows ? x->numel / rows : 0;
    float *mean = call->noutputs > 1 ? call->outputs[1].data : NULL; /* NULL: not wanted */
    float *inv_std = call->noutputs > 2 ? call->outputs[2].data : NULL;
    if ((mean && !kn_check_numel(call, 1, rows)) || (inv_std && !kn_check_numel(call, 2, rows)))
        return false;
    float *buf = NULL;
    bool broadcast = scale->numel != cols || (bias && bias->numel != cols);
    if (broadcast && !(buf = malloc(2 * (size_t)cols * sizeof *buf + 1)))
        return kn_fail(call, "cannot allocate %lld values", (long long)cols);
    const float *s = full_param(scale, x->rank - axis, x->dims + axis, cols, buf);
    const float *b = bias ? full_param(bias, x->rank - axis, x->dims + axis, cols, buf + cols) : NULL;
    bool ok = s && (!bias || b);
    if (ok)
        kn_layernorm_f32(x->data, s, b, rows, cols, (float)ir_get_float(call->node, "epsilon"),
                         call->outputs[0].data, mean, inv_std);
    free(buf);
    return ok || kn_fail(call, "scale or bias does not broadcast to the normalized dims");
}

/* ---- Softmax ------------------------------------------------------------------------------- */

/* Opset 13 semantics: along the one dim `axis` (opsets < 13 flattened x to 2-D at axis; ONNX
 * import rewrites those). */
bool kn_cpu_Softmax(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    int axis;
    if (x->dtype != IR_F32)
        return kn_fail(call, "float input only");
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis) ||
        !kn_check_numel(call, 0, x->numel))
        return false;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    kn_softmax_f32(x->data, call->outputs[0].data, outer, x->dims[axis], inner);
    return true;
}
