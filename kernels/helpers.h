/* The helpers of the CPU reference kernels that modules outside kernels/ use too (the CUDA
 * executor's launches in runtime/, the kernels' tests): run-time errors at a node, axes, element
 * access of integer and float tensors, and the geometry of convolutions, transposed convolutions
 * and quantization as the CPU kernels resolve it, so that another backend resolves it the same
 * way. They are defined beside the CPU kernels that use them (kernels/cpu/); the rest of those
 * kernels' helpers stay in kernels/cpu/cpu_util.h, internal to kernels/.
 *
 * Tensors follow kernels/kernels.h. Helpers that can fail at run time take the kn_call so that the
 * error names the node. */
#ifndef FUSERULE_KERNELS_HELPERS_H
#define FUSERULE_KERNELS_HELPERS_H

#include "kernels/kernels.h"

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

/* ---- axes and tensor elements -------------------------------------------------------------- */

/* Turns an ONNX axis in [-rank, rank) into [0, rank); reports an error naming `what` otherwise. */
bool kn_axis(const kn_call *call, int64_t axis, int rank, const char *what, int *out);
/* ONNX's clamping of one Slice axis: negative starts/ends count from the end; then for a positive
 * step start and end clamp to [0, dim], for a negative step start to [0, dim-1] and end to
 * [-1, dim-1]. Returns the element count, ceil((end - start) / step) or 0, and the first index. */
int64_t kn_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first);

/* Element i of an integer or bool tensor (i8, u8, i32, i64, bool) as int64; of an f32 tensor,
 * truncated and saturated (kn_float_to_int). */
int64_t kn_get_int(const kn_tensor *t, int64_t i);
/* Element i of any tensor as double (f32 or an integer dtype). */
double kn_get_f64(const kn_tensor *t, int64_t i);
/* Stores v into element i of t, converted to t's dtype (kn_float_to_int for floats to integers). */
void kn_set_f64(kn_tensor *t, int64_t i, double v);
/* The integer of dtype `dt` that a float becomes: truncated toward zero and saturated to the
 * dtype's range, NaN to 0 (ONNX leaves out-of-range casts undefined; this is numpy's and ORT's
 * in-range behaviour and a defined result outside it). Bool: v != 0 (NaN is true). */
int64_t kn_float_to_int(double v, ir_dtype dt);

/* ---- geometry ------------------------------------------------------------------------------ */

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
