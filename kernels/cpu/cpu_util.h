/* Shared helpers of the CPU reference kernels: run-time errors, axis and integer-tensor access,
 * numpy broadcasting iteration, GEMM and convolution over OpenBLAS, normalization and softmax rows,
 * and the scalar activation functions. The plain ONNX kernels (kernels/cpu/onnx_*.c) and the fused
 * kernels (kernels/cpu/fused_*.c) are both built from these.
 *
 * Tensors follow kernels/kernels.h: contiguous row-major, floats as f32, integers and bool in their
 * own dtype. Helpers that can fail at run time take the kn_call so that the error names the node. */
#ifndef FUSERULE_KERNELS_CPU_CPU_UTIL_H
#define FUSERULE_KERNELS_CPU_CPU_UTIL_H

#include "kernels/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- run-time errors ----------------------------------------------------------------------- */

/* Reports "<graph>: error: <Op> '<first output>': <message>" to call->dg and returns false, so a
 * kernel can write `return kn_fail(call, "index %lld out of range", i);`. */
bool kn_fail(const kn_call *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Checks that output `index` has the element count `numel`: the executor sized it from the inferred
 * type, and a kernel whose result has another size (a value-dependent shape the inference could not
 * see) reports it instead of writing out of bounds. */
bool kn_check_numel(const kn_call *call, uint32_t index, int64_t numel);

/* ---- axes and integer tensors -------------------------------------------------------------- */

/* Turns an ONNX axis in [-rank, rank) into [0, rank); reports an error naming `what` otherwise. */
bool kn_axis(const kn_call *call, int64_t axis, int rank, const char *what, int *out);
/* A Reduce op's reduced dims of x as a mask (mask[d]: dim d is reduced): the axes from the optional
 * second input, else the `axes` attribute; none means all, unless noop_with_empty_axes=1 makes
 * the op the identity (*noop). Reports and returns false on a bad axis. */
bool kn_reduce_mask(const kn_call *call, const kn_tensor *x, bool *mask, bool *noop);
/* ONNX's clamping of one Slice axis: negative starts/ends count from the end; then for a positive
 * step start and end clamp to [0, dim], for a negative step start to [0, dim-1] and end to
 * [-1, dim-1]. Returns the element count, ceil((end - start) / step) or 0, and the first index. */
int64_t kn_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first);

/* Element i of an integer or bool tensor (i8, u8, i32, i64, bool) as int64; of an f32 tensor,
 * truncated and saturated (kn_float_to_int). */
int64_t kn_get_int(const kn_tensor *t, int64_t i);
/* Element i of any tensor as double (f32 or an integer dtype). */
double kn_get_f64(const kn_tensor *t, int64_t i);
/* Stores v into element i of t, converted to t's dtype (see kn_cast_f64 for floats to integers). */
void kn_set_f64(kn_tensor *t, int64_t i, double v);
/* The integer of dtype `dt` that a float becomes: truncated toward zero and saturated to the
 * dtype's range, NaN to 0 (ONNX leaves out-of-range casts undefined; this is numpy's and ORT's
 * in-range behaviour and a defined result outside it). Bool: v != 0 (NaN is true). */
int64_t kn_float_to_int(double v, ir_dtype dt);
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

enum { KN_CONV_MAX_SPATIAL = 3 };

/* A convolution's geometry, with auto_pad already resolved into explicit pads. */
typedef struct kn_conv_geom {
    int nspatial;                             /* 1, 2 or 3 */
    int64_t batch, in_channels, out_channels, group;
    int64_t in[KN_CONV_MAX_SPATIAL];          /* input spatial size */
    int64_t out[KN_CONV_MAX_SPATIAL];         /* output spatial size */
    int64_t kernel[KN_CONV_MAX_SPATIAL];
    int64_t strides[KN_CONV_MAX_SPATIAL];
    int64_t dilations[KN_CONV_MAX_SPATIAL];
    int64_t pad_begin[KN_CONV_MAX_SPATIAL];
    int64_t pad_end[KN_CONV_MAX_SPATIAL];
} kn_conv_geom;

/* Reads Conv's attributes (auto_pad, dilations, group, kernel_shape, pads, strides) from
 * call->node for input x [N, C, spatial...] and weight w [M, C/group, kernel...], resolving
 * auto_pad, and checks the result against output y. Works for any node with Conv's attributes
 * (FusedConvAct too). */
bool kn_conv_geom_init(const kn_call *call, const kn_tensor *x, const kn_tensor *w,
                       const kn_tensor *y, kn_conv_geom *g);

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

/* ---- geometry the CUDA executor shares (defined beside the CPU kernels that use it) -------- */

/* ConvTranspose's geometry padded to 3 spatial dims by leading dims of size 1: output size and
 * the pads before it resolved from pads, auto_pad, output_padding and output_shape
 * (kernels/cpu/onnx_conv.c). */
typedef struct kn_tconv_geom {
    int64_t batch, in_channels, out_channels, group;
    int64_t in[3], out[3], k[3], s[3], d[3], pad[3];
} kn_tconv_geom;
/* Reads ConvTranspose's attributes for x [N, C, spatial...] and w [C, M/group, kernel...] and
 * checks the result against output 0's shape; reports as the CPU kernel does. */
bool kn_tconv_geom_init(const kn_call *call, const kn_tensor *x, const kn_tensor *w,
                        kn_tconv_geom *t);

/* Maps an element of QuantizeLinear's / DequantizeLinear's x to its scale / zero-point element
 * (kernels/cpu/onnx_quant.c). */
typedef struct kn_qmap {
    int64_t axis_dim, inner; /* x's size along the axis, and the product of the dims after it */
    int64_t block;           /* block size along the axis; 0 unless blocked */
    int64_t scale_axis_dim;  /* blocked: the scale's size along the axis */
    int kind;                /* 0 per tensor, 1 per axis, 2 per block */
} kn_qmap;
/* Reads axis and block_size and checks the scale's (and zero point's, NULL when absent) shape
 * against x; reports as the CPU kernel does. */
bool kn_qmap_init(const kn_call *call, const kn_tensor *x, const kn_tensor *scale,
                  const kn_tensor *zp, kn_qmap *m);

#endif
