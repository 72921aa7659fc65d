// ConvTranspose, Det and DFT with the CPU reference's semantics (kernels/cpu/onnx_conv.c,
// kernels/cpu/onnx_nn_more.c): direct kernels, one thread per output (per matrix for Det).
#include "kernels/cuda/kc_common.cuh"

// One output of ConvTranspose: the bias, then every (input channel of the group, kernel offset)
// whose input position i * stride - pad + k * dilation lands on this output, in fp32.
template <typename T>
__global__ void conv_transpose_kernel(const T *x, const T *w, const T *bias, kc_conv3d g, T *y)
{
    int64_t spatial = g.out[0] * g.out[1] * g.out[2];
    int64_t total = g.batch * g.out_channels * spatial;
    int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
    int64_t in_size = g.in[0] * g.in[1] * g.in[2];
    int64_t ksize = g.kernel[0] * g.kernel[1] * g.kernel[2];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[3];
        o[2] = i % g.out[2];
        o[1] = (i / g.out[2]) % g.out[1];
        o[0] = (i / (g.out[2] * g.out[1])) % g.out[0];
        int64_t m = (i / spatial) % g.out_channels, b = i / (spatial * g.out_channels);
        int64_t grp = m / mg, ml = m % mg;
        float acc = bias ? kc_to_f32(bias[m]) : 0.0f;
        for (int64_t k0 = 0; k0 < g.kernel[0]; k0++) {
            int64_t t0 = o[0] + g.pad_begin[0] - k0 * g.dilations[0];
            if (t0 < 0 || t0 % g.strides[0] || t0 / g.strides[0] >= g.in[0])
                continue;
            for (int64_t k1 = 0; k1 < g.kernel[1]; k1++) {
                int64_t t1 = o[1] + g.pad_begin[1] - k1 * g.dilations[1];
                if (t1 < 0 || t1 % g.strides[1] || t1 / g.strides[1] >= g.in[1])
                    continue;
                for (int64_t k2 = 0; k2 < g.kernel[2]; k2++) {
                    int64_t t2 = o[2] + g.pad_begin[2] - k2 * g.dilations[2];
                    if (t2 < 0 || t2 % g.strides[2] || t2 / g.strides[2] >= g.in[2])
                        continue;
                    int64_t at = (t0 / g.strides[0] * g.in[1] + t1 / g.strides[1]) * g.in[2] +
                                 t2 / g.strides[2];
                    int64_t kat = (k0 * g.kernel[1] + k1) * g.kernel[2] + k2;
                    for (int64_t c = 0; c < cg; c++) {
                        int64_t ic = grp * cg + c;
                        acc += kc_to_f32(x[(b * g.in_channels + ic) * in_size + at]) *
                               kc_to_f32(w[(ic * mg + ml) * ksize + kat]);
                    }
                }
            }
        }
        y[i] = kc_from_f32<T>(acc);
    }
}

// The CPU's elimination step by step in double; the _rn intrinsics keep the compiler from fusing
// a multiply and a subtraction the CPU rounds twice. a: this thread's copy of its matrix.
__global__ void det_kernel(const float *x, int64_t count, int64_t m, double *work, float *y)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < count;
         t += (int64_t)gridDim.x * blockDim.x) {
        double *a = work + t * m * m;
        for (int64_t i = 0; i < m * m; i++)
            a[i] = x[t * m * m + i];
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
            det = __dmul_rn(det, a[col * m + col]);
            for (int64_t r = col + 1; r < m; r++) {
                double f = __ddiv_rn(a[r * m + col], a[col * m + col]);
                for (int64_t k = col; k < m; k++)
                    a[r * m + k] = __dsub_rn(a[r * m + k], __dmul_rn(f, a[col * m + k]));
            }
        }
        y[t] = (float)det;
    }
}

// One output frequency k of one (outer, inner) line, summed in double as the CPU does.
__global__ void dft_kernel(const float *x, int64_t outer, int64_t len, int64_t inner, int64_t comp,
                           int64_t n, int64_t outlen, bool inverse, float *y)
{
    int64_t total = outer * outlen * inner;
    double sign = inverse ? 1 : -1;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, k = (e / inner) % outlen, o = e / (inner * outlen);
        double re = 0, im = 0;
        for (int64_t j = 0; j < n && j < len; j++) {
            const float *v = x + ((o * len + j) * inner + i) * comp;
            double a = v[0], b = comp == 2 ? v[1] : 0;
            double t =
                __dmul_rn(sign * 2 * 3.14159265358979323846, (double)((j * k) % n)) / (double)n;
            double c = cos(t), s = sin(t);
            re = __dadd_rn(re, __dsub_rn(__dmul_rn(a, c), __dmul_rn(b, s)));
            im = __dadd_rn(im, __dadd_rn(__dmul_rn(a, s), __dmul_rn(b, c)));
        }
        float *w = y + e * 2;
        w[0] = (float)(inverse ? re / (double)n : re);
        w[1] = (float)(inverse ? im / (double)n : im);
    }
}

bool kc_conv_transpose(kc_context *ctx, const kc_tensor *x, const kc_tensor *w,
                       const kc_tensor *bias, const kc_conv3d *g, kc_tensor *y)
{
    if (g->group < 1 || g->in_channels % g->group || g->out_channels % g->group)
        return KC_FAIL(ctx, "conv transpose: %lld channels in, %lld out, group %lld",
                       (long long)g->in_channels, (long long)g->out_channels, (long long)g->group);
    if (x->dtype != w->dtype || x->dtype != y->dtype ||
        (bias && bias->data && bias->dtype != x->dtype))
        return KC_FAIL(ctx, "conv transpose: the operands must have one float dtype");
    if (y->numel == 0)
        return true;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        conv_transpose_kernel<T><<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, (const T *)w->data,
            bias && bias->data ? (const T *)bias->data : nullptr, *g, (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}

bool kc_det(kc_context *ctx, const float *x, int64_t count, int64_t m, float *y)
{
    if (count == 0)
        return true;
    double *work = (double *)kc_workspace(ctx, (size_t)(count * m * m + 1) * sizeof(double));
    if (!work)
        return false;
    det_kernel<<<kc_blocks(count), KC_THREADS, 0, ctx->stream>>>(x, count, m, work, y);
    return KC_LAUNCHED(ctx);
}

bool kc_dft(kc_context *ctx, const float *x, int64_t outer, int64_t len, int64_t inner,
            int64_t comp, int64_t n, int64_t outlen, bool inverse, float *y)
{
    int64_t total = outer * outlen * inner;
    if (total == 0)
        return true;
    dft_kernel<<<kc_blocks(total), KC_THREADS, 0, ctx->stream>>>(x, outer, len, inner, comp, n,
                                                                 outlen, inverse, y);
    return KC_LAUNCHED(ctx);
}

// Einsum: one thread per output element; the summed labels walked as an odometer in label order,
// as the CPU kernel's walk over every label visits them for a fixed output element.
template <typename T> struct einsum_inputs {
    const T *p[KC_EINSUM_MAX_INPUTS];
};

template <typename T>
__global__ void einsum_kernel(einsum_inputs<T> in, kc_einsum p, int64_t out_numel, T *y)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < out_numel;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t base[KC_EINSUM_MAX_INPUTS] = {0}, rest = o;
        for (int k = p.out_rank - 1; k >= 0; k--) {
            int64_t pos = rest % p.out_dims[k];
            rest /= p.out_dims[k];
            for (int i = 0; i < p.ninputs; i++)
                base[i] += pos * p.out_strides[i][k];
        }
        int64_t pos[KC_EINSUM_MAX_SUM] = {0}, total = 1;
        for (int l = 0; l < p.nsum; l++)
            total *= p.sum_dims[l];
        double acc = 0;
        for (int64_t t = 0; t < total; t++) {
            double prod = 1;
            for (int i = 0; i < p.ninputs; i++)
                prod = __dmul_rn(prod, (double)kc_to_f32(in.p[i][base[i]]));
            acc = __dadd_rn(acc, prod);
            for (int l = p.nsum - 1; l >= 0; l--) {
                for (int i = 0; i < p.ninputs; i++)
                    base[i] += p.sum_strides[i][l];
                if (++pos[l] < p.sum_dims[l])
                    break;
                for (int i = 0; i < p.ninputs; i++)
                    base[i] -= p.sum_strides[i][l] * p.sum_dims[l];
                pos[l] = 0;
            }
        }
        y[o] = kc_from_f32<T>((float)acc);
    }
}

bool kc_einsum_run(kc_context *ctx, kc_dtype dt, const void *const *inputs, const kc_einsum *p,
                   int64_t out_numel, void *y)
{
    if (p->ninputs < 1 || p->ninputs > KC_EINSUM_MAX_INPUTS || p->nsum > KC_EINSUM_MAX_SUM ||
        p->out_rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "einsum: %d inputs, %d summed labels", p->ninputs, p->nsum);
    if (out_numel == 0)
        return true;
    return kc_dispatch_float(ctx, dt, [&]<typename T>() {
        einsum_inputs<T> in = {};
        for (int i = 0; i < p->ninputs; i++)
            in.p[i] = (const T *)inputs[i];
        einsum_kernel<T>
            <<<kc_blocks(out_numel), KC_THREADS, 0, ctx->stream>>>(in, *p, out_numel, (T *)y);
        return KC_LAUNCHED(ctx);
    });
}
