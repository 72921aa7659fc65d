/* The fused normalizations: RMSNorm, AddLayerNorm and AddRMSNorm.
 *
 * Each normalizes rows: X viewed as [rows, cols] with cols the product of the dims from `axis` on.
 * Statistics accumulate in double. The residual variants compute the sum A + B (+ AddLayerNorm's
 * skip_bias, per column, added last as ONNX Runtime's SkipLayerNormalization does) one row at a
 * time, accumulating its mean on the way, and normalize it while it is in cache, exporting the sum
 * when the node has a second output. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The row geometry of a normalization over dims [axis, rank) of x. */
typedef struct {
    int axis;
    int64_t rows, cols;
    float epsilon;
} norm_geom;

static bool norm_geom_init(const kn_call *call, const kn_tensor *x, norm_geom *ng)
{
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &ng->axis))
        return false;
    ng->cols = fused_prod(x->dims, ng->axis, x->rank);
    ng->rows = fused_prod(x->dims, 0, ng->axis);
    ng->epsilon = (float)ir_get_float(call->node, "epsilon");
    return true;
}

/* A scale or bias broadcast to the normalized dims, as `cols` contiguous values: the tensor's own
 * data when it already has them all, else a copy in *owned (freed by the caller). NULL input gives
 * NULL. False after reporting when memory runs out. */
static bool per_column(const kn_call *call, const kn_tensor *x, const norm_geom *ng,
                       const kn_tensor *p, const float **out, float **owned)
{
    *owned = NULL;
    if (!p || !p->data) {
        *out = NULL;
        return true;
    }
    if (p->numel == ng->cols) {
        *out = p->data;
        return true;
    }
    float *buf = malloc((size_t)ng->cols * sizeof *buf);
    if (!buf)
        return kn_fail(call, "out of memory");
    kn_tensor dst = {.dtype = IR_F32, .rank = x->rank - ng->axis, .numel = ng->cols, .data = buf};
    memcpy(dst.dims, x->dims + ng->axis, (size_t)dst.rank * sizeof dst.dims[0]);
    if (!kn_broadcast_copy(p, &dst, sizeof(float))) {
        free(buf);
        return kn_fail(call, "a parameter does not broadcast to the normalized dims");
    }
    *out = buf;
    *owned = buf;
    return true;
}

/* Row statistics accumulate in double, in four independent partial sums so that the additions
 * pipeline instead of waiting on one another. */
static double sum_sq(const float *x, int64_t n)
{
    double acc[4] = {0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            acc[k] += (double)x[j + k] * x[j + k];
    for (; j < n; j++)
        acc[0] += (double)x[j] * x[j];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* sum((x - mu)^2): the variance's second pass, free of the cancellation of E[x^2] - E[x]^2. */
static double centered_sum_sq(const float *x, int64_t n, double mu)
{
    double acc[4] = {0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            acc[k] += (x[j + k] - mu) * (x[j + k] - mu);
    for (; j < n; j++)
        acc[0] += (x[j] - mu) * (x[j] - mu);
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* y = x / sqrt(mean(x^2) + epsilon) * scale over one row. */
static void rms_row(const float *x, const float *scale, int64_t cols, float epsilon, float *y)
{
    double ms = sum_sq(x, cols) / (double)(cols ? cols : 1);
    float inv = (float)(1.0 / sqrt(ms + epsilon));
    for (int64_t j = 0; j < cols; j++)
        y[j] = x[j] * inv * scale[j];
}

/* s = a + b (+ sb, per column, when given) over one row, returning the row's sum (in double) for
 * the mean. */
static double add_row(const float *a, const float *b, const float *sb, int64_t cols, float *s)
{
    double acc[4] = {0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 4 <= cols; j += 4)
        for (int k = 0; k < 4; k++) {
            s[j + k] = a[j + k] + b[j + k];
            if (sb)
                s[j + k] += sb[j + k];
            acc[k] += s[j + k];
        }
    for (; j < cols; j++) {
        s[j] = a[j] + b[j];
        if (sb)
            s[j] += sb[j];
        acc[0] += s[j];
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* LayerNormalization of one row whose sum is known: the same arithmetic as the plain
 * LayerNormalization kernel (biased variance, epsilon inside the root, fp32 output math). */
static void layernorm_row(const float *x, double sum, const float *scale, const float *bias,
                          int64_t cols, float epsilon, float *y)
{
    double mu = cols ? sum / (double)cols : 0;
    double var = cols ? centered_sum_sq(x, cols, mu) / (double)cols : 0;
    float m = (float)mu, is = (float)(1.0 / sqrt(var + (double)epsilon));
    for (int64_t j = 0; j < cols; j++) {
        float v = (x[j] - m) * is * scale[j];
        y[j] = bias ? v + bias[j] : v;
    }
}

bool kn_cpu_RMSNorm(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    norm_geom ng;
    const float *scale;
    float *owned;
    if (!norm_geom_init(call, x, &ng) ||
        !per_column(call, x, &ng, &call->inputs[1], &scale, &owned))
        return false;
    const float *X = x->data;
    float *Y = call->outputs[0].data;
    for (int64_t r = 0; r < ng.rows; r++)
        rms_row(X + r * ng.cols, scale, ng.cols, ng.epsilon, Y + r * ng.cols);
    free(owned);
    return true;
}

/* AddLayerNorm and AddRMSNorm: sum = A + B (B broadcast to A) + skip_bias, y = norm(sum). */
static bool add_norm(const kn_call *call, bool layer_norm)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    const kn_tensor *bias_t = layer_norm && call->ninputs > 3 ? &call->inputs[3] : NULL;
    const kn_tensor *skip_bias_t = layer_norm && call->ninputs > 4 ? &call->inputs[4] : NULL;
    norm_geom ng;
    const float *scale, *bias, *skip_bias;
    float *owned_scale = NULL, *owned_bias = NULL, *owned_sb = NULL, *owned_b = NULL, *row = NULL;
    bool ok = norm_geom_init(call, a, &ng) &&
              per_column(call, a, &ng, &call->inputs[2], &scale, &owned_scale) &&
              per_column(call, a, &ng, bias_t, &bias, &owned_bias) &&
              per_column(call, a, &ng, skip_bias_t, &skip_bias, &owned_sb);
    /* B at A's full size: itself, or broadcast into a copy */
    const float *B = b->data;
    if (ok && b->numel != a->numel) {
        kn_tensor full = *a;
        full.data = owned_b = malloc((size_t)(a->numel ? a->numel : 1) * sizeof(float));
        ok = owned_b ? kn_broadcast_copy(b, &full, sizeof(float)) : kn_fail(call, "out of memory");
        B = owned_b;
    }
    float *sum = call->noutputs > 1 ? call->outputs[1].data : NULL;
    if (ok && !sum && !(row = malloc((size_t)(ng.cols ? ng.cols : 1) * sizeof *row)))
        ok = kn_fail(call, "out of memory");
    const float *A = a->data;
    float *Y = call->outputs[0].data;
    for (int64_t r = 0; ok && r < ng.rows; r++) {
        int64_t at = r * ng.cols;
        float *s = sum ? sum + at : row;
        double row_sum = add_row(A + at, B + at, skip_bias, ng.cols, s);
        if (layer_norm)
            layernorm_row(s, row_sum, scale, bias, ng.cols, ng.epsilon, Y + at);
        else
            rms_row(s, scale, ng.cols, ng.epsilon, Y + at);
    }
    free(owned_scale);
    free(owned_bias);
    free(owned_sb);
    free(owned_b);
    free(row);
    return ok;
}

bool kn_cpu_AddLayerNorm(const kn_call *call) { return add_norm(call, true); }

bool kn_cpu_AddRMSNorm(const kn_call *call) { return add_norm(call, false); }
