/* GlobalMaxPool, LRN (local response normalization across channels), MeanVarianceNormalization
 * and Det (the determinant of each trailing square matrix). Floats arrive as f32; sums and the
 * elimination run in double. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

static bool float_input(const kn_call *call, int min_rank)
{
    const kn_tensor *x = &call->inputs[0];
    if (x->dtype != IR_F32 || x->rank < min_rank)
        return kn_fail(call, "the input must be a float tensor of rank %d or more", min_rank);
    return true;
}

/* The maximum of each (n, c) plane; NaN propagates, as in MaxPool. */
bool kn_cpu_GlobalMaxPool(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (!float_input(call, 3))
        return false;
    int64_t planes = x->dims[0] * x->dims[1], size = planes ? x->numel / planes : 0;
    if (!kn_check_numel(call, 0, planes))
        return false;
    if (size == 0 && planes > 0)
        return kn_fail(call, "the spatial dims are empty: there is no maximum");
    const float *xd = x->data;
    float *y = call->outputs[0].data;
    for (int64_t p = 0; p < planes; p++) {
        float m = -INFINITY;
        for (int64_t i = 0; i < size; i++) {
            float v = xd[p * size + i];
            m = v > m || isnan(v) ? v : m;
            if (isnan(m))
                break;
        }
        y[p] = m;
    }
    return true;
}

/* y = x / (bias + alpha / size * sum of x^2 over the channels c - floor((size-1)/2) to
 * c + ceil((size-1)/2))^beta */
bool kn_cpu_LRN(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    double alpha = ir_get_float(call->node, "alpha"), beta = ir_get_float(call->node, "beta");
    double bias = ir_get_float(call->node, "bias");
    int64_t size = ir_get_int(call->node, "size");
    if (!float_input(call, 3) || !kn_check_numel(call, 0, x->numel))
        return false;
    if (size < 1)
        return kn_fail(call, "size %lld is below 1", (long long)size);
    int64_t c = x->dims[1], plane = c ? x->numel / (x->dims[0] * c) : 0;
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    const float *xd = x->data;
    float *y = call->outputs[0].data;
    for (int64_t b = 0; b < x->dims[0]; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t i = 0; i < plane; i++) {
                double sq = 0;
                for (int64_t k = ch - lo; k <= ch + hi; k++)
                    if (k >= 0 && k < c) {
                        double v = xd[(b * c + k) * plane + i];
                        sq += v * v;
                    }
                int64_t at = (b * c + ch) * plane + i;
                y[at] = (float)(xd[at] / pow(bias + alpha / (double)size * sq, beta));
            }
    return true;
}

/* (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over the axes, ONNX's function body. */
bool kn_cpu_MeanVarianceNormalization(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (!float_input(call, 0) || !kn_check_numel(call, 0, x->numel))
        return false;
    const int64_t *vals;
    uint32_t count = ir_get_ints(call->node, "axes", &vals);
    bool reduced[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < count; k++) {
        int a;
        if (!kn_axis(call, vals[k], x->rank, "axis", &a))
            return false;
        reduced[a] = true;
    }
    /* each element's group: its position over the kept dims */
    int64_t groups = 1, gs[IR_MAX_RANK];
    for (int d = x->rank - 1; d >= 0; d--) {
        gs[d] = reduced[d] ? 0 : groups;
        groups *= reduced[d] ? 1 : x->dims[d];
    }
    double *sum = calloc((size_t)(2 * groups + 1), sizeof *sum);
    int64_t *where = malloc((size_t)(x->numel ? x->numel : 1) * sizeof *where);
    if (!sum || !where) {
        free(sum), free(where);
        return kn_fail(call, "cannot allocate the statistics");
    }
    int64_t pos[IR_MAX_RANK] = {0}, per_group = groups ? x->numel / groups : 0;
    const float *xd = x->data;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t gi = 0;
        for (int d = 0; d < x->rank; d++)
            gi += pos[d] * gs[d];
        where[i] = gi;
        sum[gi] += xd[i];
        sum[groups + gi] += (double)xd[i] * xd[i];
        for (int d = x->rank - 1; d >= 0 && ++pos[d] == x->dims[d]; d--)
            pos[d] = 0;
    }
    float *y = call->outputs[0].data;
    for (int64_t i = 0; i < x->numel; i++) {
        double mean = sum[where[i]] / (double)per_group;
        double var = sum[groups + where[i]] / (double)per_group - mean * mean;
        y[i] = (float)((xd[i] - mean) / (sqrt(var > 0 ? var : 0) + 1e-9));
    }
    free(sum), free(where);
    return true;
}

/* The determinant by Gaussian elimination with partial pivoting, in double. */
bool kn_cpu_Det(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (!float_input(call, 2))
        return false;
    int64_t m = x->dims[x->rank - 1];
    if (x->dims[x->rank - 2] != m)
        return kn_fail(call, "the matrices are not square");
    int64_t count = m ? x->numel / (m * m) : 1;
    if (!kn_check_numel(call, 0, count))
        return false;
    double *a = malloc((size_t)(m * m + 1) * sizeof *a);
    if (!a)
        return kn_fail(call, "cannot allocate a %lld x %lld matrix", (long long)m, (long long)m);
    const float *xd = x->data;
    float *y = call->outputs[0].data;
    for (int64_t t = 0; t < count; t++) {
        for (int64_t i = 0; i < m * m; i++)
            a[i] = xd[t * m * m + i];
        double det = 1;
        for (int64_t col = 0; col < m && det != 0; col++) {
            int64_t piv = col;
            for (int64_t r = col + 1; r < m; r++)
                if (fabs(a[r * m + col]) > fabs(a[piv * m + col]))
                    piv = r;
            if (a[piv * m + col] == 0) {
                det = 0;
                break;
            }
            if (piv != col) {
                for (int64_t k = 0; k < m; k++) {
                    double tmp = a[col * m + k];
                    a[col * m + k] = a[piv * m + k];
                    a[piv * m + k] = tmp;
                }
                det = -det;
            }
            det *= a[col * m + col];
            for (int64_t r = col + 1; r < m; r++) {
                double f = a[r * m + col] / a[col * m + col];
                for (int64_t k = col; k < m; k++)
                    a[r * m + k] -= f * a[col * m + k];
            }
        }
        y[t] = (float)det;
    }
    free(a);
    return true;
}

/* ---- window functions ---------------------------------------------------------------------- */

/* w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1. */
static bool window(const kn_call *call, double a0, double a1, double a2)
{
    kn_tensor *y = &call->outputs[0];
    int64_t size = kn_get_int(&call->inputs[0], 0);
    bool periodic = ir_get_int(call->node, "periodic") != 0;
    if (size < 0)
        return kn_fail(call, "size %lld is negative", (long long)size);
    if (!kn_check_numel(call, 0, size))
        return false;
    double n = periodic ? (double)size : (double)size - 1;
    for (int64_t i = 0; i < size; i++) {
        double t = n > 0 ? 2 * 3.14159265358979323846 * (double)i / n : 0; /* 2 pi i / N */
        kn_set_f64(y, i, a0 - a1 * cos(t) + a2 * cos(2 * t));
    }
    return true;
}

bool kn_cpu_HannWindow(const kn_call *call)
{
    return window(call, 0.5, 0.5, 0);
}
bool kn_cpu_HammingWindow(const kn_call *call)
{
    return window(call, 25.0 / 46, 21.0 / 46, 0);
}
bool kn_cpu_BlackmanWindow(const kn_call *call)
{
    return window(call, 0.42, 0.5, 0.08);
}

/* ---- GroupNormalization -------------------------------------------------------------------- */

/* Each (n, group) block of C / num_groups channels normalized by its mean and biased variance
 * (double), then scaled and shifted per channel. */
bool kn_cpu_GroupNormalization(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *scale = &call->inputs[1], *bias = &call->inputs[2];
    double eps = ir_get_float(call->node, "epsilon");
    int64_t groups = ir_get_int(call->node, "num_groups");
    if (!float_input(call, 2) || !kn_check_numel(call, 0, x->numel))
        return false;
    int64_t c = x->dims[1];
    if (groups < 1 || c % groups != 0 || scale->numel != c || bias->numel != c)
        return kn_fail(call,
                       "%lld channels, %lld groups: scale and bias need one value per "
                       "channel",
                       (long long)c, (long long)groups);
    int64_t plane = c ? x->numel / (x->dims[0] * c) : 0, per = c / groups * plane;
    const float *xd = x->data, *s = scale->data, *b = bias->data;
    float *y = call->outputs[0].data;
    for (int64_t blk = 0; blk < x->dims[0] * groups; blk++) {
        const float *xb = xd + blk * per;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < per; i++)
            mean += xb[i];
        mean /= (double)per;
        for (int64_t i = 0; i < per; i++)
            var += (xb[i] - mean) * (xb[i] - mean);
        var /= (double)per;
        double inv = 1 / sqrt(var + eps);
        for (int64_t i = 0; i < per; i++) {
            int64_t ch = (blk % groups) * (c / groups) + i / plane;
            y[blk * per + i] = (float)((xb[i] - mean) * inv * s[ch] + b[ch]);
        }
    }
    return true;
}
