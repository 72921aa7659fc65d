/* Shared helpers of the CPU reference kernels: run-time errors, axis and integer-tensor access,
 * numpy broadcasting iteration, GEMM and convolution over OpenBLAS, normalization and softmax rows,
 * and the scalar activation functions. The plain ONNX kernels (kernels/cpu/onnx_*.c) and the fused
 * kernels (kernels/cpu/fused_*.c) are both built from these.
 *
 * Tensors follow kernels/kernels.h: contiguous row-major, floats as f32, integers and bool in their
 * own dtype. Helpers that can fail at run time take the kn_call so that the error names the node.
 * The ones other modules use too (errors, axes, element access, conv/tconv/quantization geometry)
 * are declared in the public kernels/helpers.h, included here; this header is internal to
 * kernels/. */
#ifndef FUSERULE_KERNELS_CPU_CPU_UTIL_H
#define FUSERULE_KERNELS_CPU_CPU_UTIL_H

#include "kernels/helpers.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- axes and integer tensors -------------------------------------------------------------- */

/* A Reduce op's reduced dims of x as a mask (mask[d]: dim d is reduced): the axes from the optional
 * second input, else the `axes` attribute; none means all, unless noop_with_empty_axes=1 makes
 * the op the identity (*noop). Reports and returns false on a bad axis. */
bool kn_reduce_mask(const kn_call *call, const kn_tensor *x, bool *mask, bool *noop);
/* Wraps an int64 to dtype dt the way a C cast to the narrower two's-complement type does. */
int64_t kn_wrap_int(int64_t v, ir_dtype dt);

/* Stores v into element i of an integer or bool tensor, wrapped to its width (kn_wrap_int). */
void kn_set_int(kn_tensor *t, int64_t i, int64_t v);

/* Copies the values of a 1-D integer tensor (an axes, shape, pads or sizes input) into out, at most
 * `max` of them; reports an error naming `what` when it has more. Returns the count, or -1. */
int kn_read_ints(const kn_call *call, const kn_tensor *t, int64_t *out, int max, const char *what);

/* Strides (in elements) of a contiguous tensor of the given dims. */
void kn_strides(int rank, const int64_t *dims, int64_t *strides);

/* ---- numpy broadcasting -------------------------------------------------------------------- */

enum { KN_BCAST_MAX_INPUTS = 4 };

/* Iterates the output of an n-ary broadcast op in runs along its innermost dim. Output dims of
 * size 1 are dropped and neighbouring dims that every operand walks contiguously are merged, so a
 * same-shape op is one run over the whole tensor and a per-channel bias a run per channel plane.
 *
 *     kn_bcast it;
 *     if (!kn_bcast_init(&it, out, ins, 2)) ...incompatible shapes...
 *     for (int64_t o = 0; o < out->numel; o += it.run, kn_bcast_next(&it))
 *         ...y[o + i] = f(a[it.off[0] + i * it.step[0]], b[it.off[1] + i * it.step[1]]), i < run
 *
 * step[k] is 1 when operand k varies along the run and 0 when it is broadcast along it. */
typedef struct kn_bcast {
    int rank;                                      /* merged rank, >= 1 */
    int ninputs;
    int64_t dims[IR_MAX_RANK];                     /* merged output dims */
    int64_t strides[KN_BCAST_MAX_INPUTS][IR_MAX_RANK]; /* 0 on broadcast dims */
    int64_t run;                                   /* dims[rank - 1] */
    int64_t step[KN_BCAST_MAX_INPUTS];             /* strides[k][rank - 1]: 0 or 1 */
    int64_t idx[IR_MAX_RANK];                      /* position of the current run */
    int64_t off[KN_BCAST_MAX_INPUTS];              /* element offset of each operand at it */
} kn_bcast;

/* False when an input does not broadcast to out's shape (right-aligned: equal dims or 1). */
bool kn_bcast_init(kn_bcast *it, const kn_tensor *out, const kn_tensor *const *ins, int ninputs);
void kn_bcast_next(kn_bcast *it);

/* Broadcasts src into dst's shape, copying elements of `elem_size` bytes (Expand, and any
 * kernel that needs an operand materialized at full size). False when src does not broadcast. */
bool kn_broadcast_copy(const kn_tensor *src, kn_tensor *dst, size_t elem_size);

/* ---- GEMM and convolution (OpenBLAS) ------------------------------------------------------- */

/* C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n] + beta * C, row-major, op = transpose when trans_*.
 * lda/ldb/ldc are the row strides of A, B and C as stored. With beta == 0, C is not read. */
void kn_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc);

/* ONNX MatMul: numpy matmul with 1-D operands promoted and batch dims broadcast. y must have the
 * result's shape. Reports shape mismatches. */
bool kn_matmul_f32(const kn_call *call, const kn_tensor *a, const kn_tensor *b, kn_tensor *y);

/* One spatial axis of a sliding window (convolution, pooling). auto_pad "NOTSET" (or "") uses
 * *pad_begin / *pad_end as given; "VALID" zeroes them; "SAME_UPPER" / "SAME_LOWER" compute them so
 * that out = ceil(in / stride), an odd total putting the extra pad at the end / the beginning.
 * Otherwise out = floor((in + pads - extent) / stride) + 1 where extent = (kernel-1)*dilation + 1,
 * rounded up instead with ceil_mode (pooling), dropping a last window that would start in the end
 * padding. False when no window fits (out < 1). */
bool kn_window_axis(const char *auto_pad, int64_t in, int64_t kernel, int64_t stride,
                    int64_t dilation, bool ceil_mode, int64_t *pad_begin, int64_t *pad_end,
                    int64_t *out);

/* y = conv(x, w) + bias (bias: NULL or out_channels values), by im2col and one cblas_sgemm per
 * image and group; a 1x1 stride-1 unpadded conv skips im2col. False after reporting when the
 * column buffer cannot be allocated. */
bool kn_conv_f32(const kn_call *call, const kn_conv_geom *g, const float *x, const float *w,
                 const float *bias, float *y);

/* ---- normalization and softmax ------------------------------------------------------------- */

/* Normalizes each of `rows` rows of `cols` values: y = (x - mean) / sqrt(var + epsilon) * scale
 * + bias, with mean and (biased) variance accumulated in double. scale and bias hold `cols` values
 * (bias may be NULL); mean and inv_std (may be NULL) receive one value per row. */
void kn_layernorm_f32(const float *x, const float *scale, const float *bias, int64_t rows,
                      int64_t cols, float epsilon, float *y, float *mean, float *inv_std);

/* Softmax over the middle dim of x viewed as [outer, n, inner]: max-subtracted, summed in double. */
void kn_softmax_f32(const float *x, float *y, int64_t outer, int64_t n, int64_t inner);

/* ---- scalar activations (ONNX definitions) ------------------------------------------------- */

static inline float kn_sigmoid(float x)
{
    /* split by sign so that exp never overflows */
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* Gelu with approximate="none": x * Phi(x), Phi by erf. */
static inline float kn_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* Gelu with approximate="tanh": 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))). */
static inline float kn_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

static inline float kn_hard_sigmoid(float x, float alpha, float beta)
{
    return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
}

/* HardSwish = x * HardSigmoid(x) with alpha 1/6, beta 0.5. */
static inline float kn_hard_swish(float x) { return x * kn_hard_sigmoid(x, 1.0f / 6.0f, 0.5f); }

/* ONNX Clip is min(max(x, lo), hi): when lo > hi every x gives hi, and NaN passes through. Every
 * kernel that clips (Clip itself, the fused epilogues, ElementwiseChain's clip) goes through here
 * so that they agree on those inputs too. */
static inline float kn_clip(float x, float lo, float hi)
{
    float t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

static inline float kn_leaky_relu(float x, float alpha) { return x >= 0 ? x : alpha * x; }
static inline float kn_elu(float x, float alpha) { return x >= 0 ? x : alpha * expm1f(x); }

/* log(1 + exp(x)) without overflow for large x. */
static inline float kn_softplus(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

/* ---- quantization -------------------------------------------------------------------------- */

/* round(v) half to even, plus zero_point, saturated to [lo, hi] (QuantizeLinear). NaN has no
 * defined result in ONNX; it becomes the zero point (the quantized zero). */
static inline int64_t kn_quantize(double v, int64_t zero_point, int64_t lo, int64_t hi)
{
    if (isnan(v))
        return zero_point;
    double q = nearbyint(v) + (double)zero_point; /* default rounding mode: half to even */
    if (q < (double)lo)
        return lo;
    return q > (double)hi ? hi : (int64_t)q;
}

/* DynamicQuantizeLinear of x[0, n) into y (onnx_qlinear.c: the range [min(0, min x), max(0,
 * max x)] onto [0, 255]); false when x holds an infinity (no scale covers it). */
bool kn_dynamic_quantize(const float *x, int64_t n, uint8_t *y, float *scale, uint8_t *zero);

#endif
