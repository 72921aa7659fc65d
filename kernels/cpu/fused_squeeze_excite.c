/* SqueezeExcite: y = x * gate(W2 act(W1 mean(x) + B1) + B2), the squeeze-and-excitation block of
 * EfficientNet (SiLU between the convs, a Sigmoid gate) and MobileNetV3 (Relu, HardSigmoid).
 *
 * Per image: the mean of every channel over the spatial positions (in double, as
 * GlobalAveragePool sums), the two 1x1 convs as small matrix-vector products (in double, rounded
 * to float where the unfused convs write their outputs), the activations, then one pass that
 * scales each channel of x by its gate. The pooled vector and the gates never leave this call;
 * the unfused block writes and re-reads them through four kernels. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <math.h>
#include <stdlib.h>

/* out[i] = bias[i] + sum_j w[i, j] in[j], for i < rows, j < cols; w row-major [rows, cols]. */
static void matvec(const float *w, const float *bias, const float *in, int64_t rows, int64_t cols,
                   float *out)
{
    for (int64_t i = 0; i < rows; i++) {
        double s = 0;
        for (int64_t j = 0; j < cols; j++)
            s += (double)w[i * cols + j] * (double)in[j];
        out[i] = (float)(s + (double)bias[i]);
    }
}

bool kn_cpu_SqueezeExcite(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *w1 = &call->inputs[1], *b1 = &call->inputs[2];
    const kn_tensor *w2 = &call->inputs[3], *b2 = &call->inputs[4];
    kn_tensor *y = &call->outputs[0];
    fused_act act, gate;
    if (!fused_act_read(call, &act) || !fused_act_read_named(call, "gate", &gate))
        return false;
    if (x->rank < 3)
        return kn_fail(call, "input must be [N, C, spatial...]");
    int64_t batch = x->dims[0], c = x->dims[1], r = w1->dims[0];
    if (w1->numel != r * c || w2->numel != c * r || b1->numel != r || b2->numel != c ||
        y->numel != x->numel)
        return kn_fail(call, "the weights do not take %lld channels to %lld and back",
                       (long long)c, (long long)r);
    int64_t positions = batch != 0 && c != 0 ? x->numel / (batch * c) : 0;
    if (x->numel == 0)
        return true;
    float *pooled = malloc((size_t)(c + r + c) * sizeof *pooled);
    if (!pooled)
        return kn_fail(call, "no memory for %lld channels", (long long)c);
    float *hidden = pooled + c, *scale = hidden + r;
    const float *xd = x->data;
    float *yd = y->data;
    for (int64_t n = 0; n < batch; n++) {
        const float *xn = xd + n * c * positions;
        float *yn = yd + n * c * positions;
        for (int64_t ch = 0; ch < c; ch++) {
            double sum = 0;
            for (int64_t p = 0; p < positions; p++)
                sum += xn[ch * positions + p];
            pooled[ch] = (float)(sum / (double)positions);
        }
        matvec(w1->data, b1->data, pooled, r, c, hidden);
        fused_act_apply(&act, hidden, r);
        matvec(w2->data, b2->data, hidden, c, r, scale);
        fused_act_apply(&gate, scale, c);
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < positions; p++)
                yn[ch * positions + p] = xn[ch * positions + p] * scale[ch];
    }
    free(pooled);
    return true;
}
