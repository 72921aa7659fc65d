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

/* ---- MaxUnpool, DFT ------------------------------------------------------------------------ */

/* Zeros, with each X value at the flat position its index names (MaxPool's Indices) in the
 * default output [N, C, (D - 1) * stride + kernel - pads...]; a larger output_shape holds that
 * default output at its start, as ONNX's reference pads it. */
bool kn_cpu_MaxUnpool(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *idx = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    if (x->dtype != IR_F32 || idx->numel != x->numel || x->rank < 3 || y->rank != x->rank)
        return kn_fail(call, "X must be float [N, C, ...] and I hold one index per element of X");
    const int64_t *kernel, *strides, *pads;
    int spatial = x->rank - 2;
    uint32_t nk = ir_get_ints(call->node, "kernel_shape", &kernel);
    uint32_t ns = ir_get_ints(call->node, "strides", &strides);
    uint32_t np = ir_get_ints(call->node, "pads", &pads);
    if (nk != (uint32_t)spatial)
        return kn_fail(call, "kernel_shape must have %d values", spatial);
    int64_t def[IR_MAX_RANK] = {x->dims[0], x->dims[1]}, def_numel = x->dims[0] * x->dims[1];
    for (int k = 0; k < spatial; k++) {
        def[k + 2] = (x->dims[k + 2] - 1) * (ns ? strides[k] : 1) + kernel[k] -
                     (np ? pads[k] + pads[spatial + k] : 0);
        if (def[k + 2] > y->dims[k + 2] || def[k + 2] < 0)
            return kn_fail(call, "the output is smaller than the unpooled input");
        def_numel *= def[k + 2];
    }
    if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return kn_fail(call, "output_shape must keep N and C");
    float *out = y->data;
    memset(out, 0, (size_t)y->numel * sizeof *out);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t at = kn_get_int(idx, i), rest = at, pos = 0, scale = 1;
        if (at < 0 || at >= def_numel)
            return kn_fail(call, "index %lld is outside the unpooled output's %lld elements",
                           (long long)at, (long long)def_numel);
        for (int d = x->rank - 1; d >= 0; d--) { /* the same coordinates in y */
            pos += rest % def[d] * scale;
            rest /= def[d];
            scale *= y->dims[d];
        }
        out[pos] = ((const float *)x->data)[i];
    }
    return true;
}

/* The transform along the axis in double: X_k = sum_j x_j e^(-+2 pi i jk / n) (n = dft_length,
 * the signal zero-padded or cut to it), divided by n when inverse. */
bool kn_cpu_DFT(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    int axis;
    if (x->dtype != IR_F32 || x->rank < 2 || y->rank != x->rank)
        return kn_fail(call, "the input must be a float tensor [..., 1 or 2]");
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank - 1, "axis", &axis))
        return false;
    int64_t comp = x->dims[x->rank - 1], len = x->dims[axis];
    int64_t n = call->ninputs > 1 && call->inputs[1].data ? kn_get_int(&call->inputs[1], 0) : len;
    bool inverse = ir_get_int(call->node, "inverse") != 0;
    int64_t outlen = y->dims[axis], outer = 1, inner = 1;
    if ((comp != 1 && comp != 2) || n < 1 || y->dims[y->rank - 1] != 2)
        return kn_fail(call, "the last dim must be 1 or 2, and dft_length at least 1");
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank - 1; d++)
        inner *= x->dims[d];
    if (!kn_check_numel(call, 0, outer * outlen * inner * 2))
        return false;
    const float *xd = x->data;
    float *out = y->data;
    double sign = inverse ? 1 : -1;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            for (int64_t k = 0; k < outlen; k++) {
                double re = 0, im = 0;
                for (int64_t j = 0; j < n && j < len; j++) {
                    const float *v = xd + ((o * len + j) * inner + i) * comp;
                    double a = v[0], b = comp == 2 ? v[1] : 0;
                    double t =
                        sign * 2 * 3.14159265358979323846 * (double)((j * k) % n) / (double)n;
                    re += a * cos(t) - b * sin(t);
                    im += a * sin(t) + b * cos(t);
                }
                float *w = out + ((o * outlen + k) * inner + i) * 2;
                w[0] = (float)(inverse ? re / (double)n : re);
                w[1] = (float)(inverse ? im / (double)n : im);
            }
    return true;
}
