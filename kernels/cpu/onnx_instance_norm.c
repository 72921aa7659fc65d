/* InstanceNormalization: each (n, c) plane of [N, C, D...] normalized by its own mean and biased
 * variance (accumulated in double), then scaled and shifted by the channel's scale and B. */
#include "kernels/cpu/cpu_util.h"

bool kn_cpu_InstanceNormalization(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *scale = &call->inputs[1], *bias = &call->inputs[2];
    double eps = ir_get_float(call->node, "epsilon");
    if (x->dtype != IR_F32 || x->rank < 2)
        return kn_fail(call, "the input must be a float tensor [N, C, ...]");
    int64_t channels = x->dims[1], planes = x->dims[0] * channels;
    int64_t size = planes ? x->numel / planes : 0;
    if (scale->numel != channels || bias->numel != channels)
        return kn_fail(call, "scale and B must hold one value per channel (%lld)",
                       (long long)channels);
    if (!kn_check_numel(call, 0, x->numel))
        return false;
    const float *xd = x->data, *s = scale->data, *b = bias->data;
    float *y = call->outputs[0].data;
    for (int64_t p = 0; p < planes; p++) {
        const float *row = xd + p * size;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < size; i++)
            mean += row[i];
        mean /= (double)size;
        for (int64_t i = 0; i < size; i++)
            var += (row[i] - mean) * (row[i] - mean);
        var /= (double)size;
        double k = s[p % channels] / sqrt(var + eps);
        for (int64_t i = 0; i < size; i++)
            y[p * size + i] = (float)((row[i] - mean) * k + b[p % channels]);
    }
    return true;
}
