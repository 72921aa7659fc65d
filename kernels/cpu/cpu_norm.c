/* Normalization and softmax for the CPU kernels (kernels/cpu/cpu_util.h). */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- normalization and softmax ------------------------------------------------------------- */

void kn_layernorm_f32(const float *x, const float *scale, const float *bias, int64_t rows,
                      int64_t cols, float epsilon, float *y, float *mean, float *inv_std)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < cols; i++)
            sum += xr[i];
        double mu = cols ? sum / (double)cols : 0;
        for (int64_t i = 0; i < cols; i++) /* two passes: no cancellation in E[x^2] - E[x]^2 */
            sq += (xr[i] - mu) * (xr[i] - mu);
        double var = cols ? sq / (double)cols : 0;
        float m = (float)mu, is = (float)(1.0 / sqrt(var + (double)epsilon));
        for (int64_t i = 0; i < cols; i++) {
            float v = (xr[i] - m) * is * scale[i];
            yr[i] = bias ? v + bias[i] : v;
        }
        if (mean)
            mean[r] = m;
        if (inv_std)
            inv_std[r] = is;
    }
}

void kn_softmax_f32(const float *x, float *y, int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xs = x + o * n * inner + j;
            float *ys = y + o * n * inner + j;
            float mx = -INFINITY;
            for (int64_t i = 0; i < n; i++)
                mx = fmaxf(mx, xs[i * inner]);
            double sum = 0;
            for (int64_t i = 0; i < n; i++) {
                float e = expf(xs[i * inner] - mx);
                ys[i * inner] = e;
                sum += e;
            }
            float inv = (float)(1.0 / sum);
            for (int64_t i = 0; i < n; i++)
                ys[i * inner] *= inv;
        }
}
