/* The CUDA kernels, callable from C.
 *
 * This header is the only contact between the C code (the CUDA executor, runtime/cuda_executor.c)
 * and the CUDA translation units of kernels/cuda/: plain C types, no IR, no CUDA headers. The
 * executor reads a node's attributes into the parameter structs below and hands over device
 * pointers; the kernels never see the graph.
 *
 * Errors. Every CUDA, cuDNN, cuBLASLt and NVRTC call is checked (KC_CHECK in kc_common.cuh); a
 * failure stores "file:line: call: the library's error string" in the context and the function
 * returns false. The executor reports that text into its dg_context at the node; nothing aborts.
 *
 * Tensors are contiguous row-major; `dims` are int64 and every index computed from them is int64.
 * Float tensors are f32, f16 or bf16 in storage; arithmetic is fp32 (reductions in fp32 with
 * warp shuffles and block reductions). Operands that broadcast (numpy, right-aligned) say so. */
#ifndef FUSERULE_KERNELS_CUDA_CUDA_KERNELS_H
#define FUSERULE_KERNELS_CUDA_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KC_MAX_RANK = 8, KC_ERROR_SIZE = 512 };

/* KC_BOOL: one byte per element, 0 or 1 (BiasDropout's training_mode and mask). */
typedef enum { KC_F32, KC_F16, KC_BF16, KC_I8, KC_I32, KC_BOOL } kc_dtype;

typedef struct kc_tensor {
    kc_dtype dtype;
    int rank;
    int64_t dims[KC_MAX_RANK];
    int64_t numel;
    void *data; /* device memory; NULL for an omitted optional operand */
} kc_tensor;

/* The activations of FusedConvAct and GemmEpilogue, as docs/kernels.md defines them: the rows of
 * ir/acts.def in its order (KC_ACT_GELU is erf GELU, KC_ACT_GELU_TANH the tanh approximation, the
 * only GELU cuBLASLt computes). */
typedef enum {
#define ACT(NAME, ENUM, ...) KC_ACT_##ENUM,
#include "ir/acts.def"
#undef ACT
} kc_act_kind;

typedef struct kc_act {
    kc_act_kind kind;
    float alpha, beta;
} kc_act;

/* ---- the context: device, stream, library handles, caches ---------------------------------- */

typedef struct kc_context kc_context;

/* How many CUDA devices there are; false with the reason ("no CUDA device: ...") when the driver
 * or a device is missing. */
bool kc_device_count(int *count, char *why, size_t why_size);
/* A context on device 0 with one stream; NULL with the reason in err (KC_ERROR_SIZE bytes). */
kc_context *kc_create(char *err);
void kc_destroy(kc_context *ctx);
/* The message of the last failure. */
const char *kc_last_error(const kc_context *ctx);
/* The device's name and compute capability, e.g. "NVIDIA H200 (sm_90)". */
const char *kc_device_name(const kc_context *ctx);

bool kc_alloc(kc_context *ctx, size_t nbytes, void **out);
void kc_free(kc_context *ctx, void *p);
bool kc_upload(kc_context *ctx, void *dst, const void *src, size_t nbytes);
bool kc_download(kc_context *ctx, void *dst, const void *src, size_t nbytes);
bool kc_copy(kc_context *ctx, void *dst, const void *src, size_t nbytes); /* device to device */
bool kc_fill_bytes(kc_context *ctx, void *dst, unsigned char byte, size_t nbytes);
/* Waits for the stream and reports any error a kernel raised asynchronously. */
bool kc_sync(kc_context *ctx);

/* CUDA graph capture of the stream: everything launched between begin and end is recorded into
 * a graph (no allocation and no synchronization may happen in between), which kc_graph_replay
 * launches again as one unit. */
bool kc_capture_begin(kc_context *ctx);
bool kc_capture_end(kc_context *ctx);
bool kc_graph_replay(kc_context *ctx);

/* Timing on the stream: events recorded around work, milliseconds between them. */
bool kc_timer_start(kc_context *ctx);
bool kc_timer_stop(kc_context *ctx, float *ms);

/* ---- library-backed kernels --------------------------------------------------------------- */

/* FusedConvAct on cuDNN, 2-D: x [N, C, H, W] (or [N, H, W, C] when nhwc), w [M, C/group, kh, kw]
 * (or [M, kh, kw, C/group]), bias [M]?, z (residual, y's shape)?, y. Pads are begin/end per
 * spatial dim; cuDNN needs them symmetric (the supports check refuses others). Relu and Identity
 * run as one cudnnConvolutionBiasActivationForward; other activations as the convolution (with
 * the residual through beta) followed by one fused bias + activation epilogue kernel. The
 * algorithm and workspace are chosen once per shape and cached in the context. */
typedef struct kc_conv_params {
    bool nhwc;
    int64_t group;
    int64_t pads[4]; /* top, left, bottom, right */
    int64_t strides[2], dilations[2];
    kc_act act;
} kc_conv_params;
bool kc_conv_act(kc_context *ctx, const kc_tensor *x, const kc_tensor *w, const kc_tensor *bias,
                 const kc_tensor *z, kc_tensor *y, const kc_conv_params *p);

/* SeparableConv, 1-D or 2-D (a 1-D conv is a 2-D one of height 1): one kernel per call; each block
 * computes a tile of output positions of one image, the depthwise conv of every channel into
 * shared memory (+ B_dw, act), then the pointwise 1x1 conv from there (+ B_pw, out_act), in fp32.
 * x [N, C, (H,) W], w_dw [C*k, 1, (kh,) kw], w_pw [M, C*k, 1, (1)], b_dw [C*k]?, b_pw [M]?, y. */
enum { KC_SEPARABLE_MAX_CHANNELS = 12288 }; /* C*k floats of one tile position in 48 KiB */
typedef struct kc_separable_params {
    int64_t kernel[2], strides[2], dilations[2], pads[2]; /* (h, w); pads: the begins */
    kc_act act, out_act;
} kc_separable_params;
bool kc_separable_conv(kc_context *ctx, const kc_tensor *x, const kc_tensor *w_dw,
                       const kc_tensor *w_pw, const kc_tensor *b_dw, const kc_tensor *b_pw,
                       const kc_tensor *residual, kc_tensor *y, const kc_separable_params *p);

/* SqueezeExcite: y = x * gate(w2 act(w1 mean(x) + b1) + b2), one kernel, one block per image:
 * the pooled vector, the hidden layer and the gates stay in shared memory (fp32).
 * x [N, C, spatial...], w1 [R, C, 1...], b1 [R], w2 [C, R, 1...], b2 [C], y x's shape. */
enum { KC_SQUEEZE_EXCITE_MAX_CHANNELS = 4096 }; /* C + R + C floats in 48 KiB */
typedef struct kc_squeeze_excite_params {
    kc_act act, gate;
} kc_squeeze_excite_params;
bool kc_squeeze_excite(kc_context *ctx, const kc_tensor *x, const kc_tensor *w1,
                       const kc_tensor *b1, const kc_tensor *w2, const kc_tensor *b2, kc_tensor *y,
                       const kc_squeeze_excite_params *p);

/* GemmEpilogue on cuBLASLt: y [batch.., M, N] = act(alpha op(A) op(B) + bias + beta residual).
 * A [batch.., M, K] (transA: [.., K, M]), B [K, N] (transB: [N, K]), bias [N]?, residual y's shape
 * or broadcasting to it?. The bias and Relu / GeluTanh run in cuBLASLt's epilogue, the residual
 * through C with beta (copied into y first when it must be broadcast); other activations in one
 * epilogue kernel after the GEMM. */
typedef struct kc_gemm_params {
    bool trans_a, trans_b;
    float alpha, beta;
    kc_act act;
} kc_gemm_params;
bool kc_gemm_epilogue(kc_context *ctx, const kc_tensor *a, const kc_tensor *b,
                      const kc_tensor *bias, const kc_tensor *residual, kc_tensor *y,
                      const kc_gemm_params *p);

/* FusedQKV: one cuBLASLt GEMM x [.., K] @ w [K, sum(sizes)] (+ bias through the epilogue) into a
 * scratch [rows, sum(sizes)], then one kernel splitting it into the 2 or 3 outputs. */
bool kc_fused_qkv(kc_context *ctx, const kc_tensor *x, const kc_tensor *w, const kc_tensor *bias,
                  kc_tensor *const *outs, int nouts);

/* QGemm: int8 A [.., M, K] @ int8 B [K, N] on cuBLASLt with an int32 accumulator, then one kernel
 * applying a_scale * b_scale[n] (+ bias[n]) and, with y_scale, requantizing to int8 (round half
 * to even, saturate). The scales and bias are f32 device tensors. */
bool kc_qgemm(kc_context *ctx, const kc_tensor *a, const kc_tensor *a_scale, const kc_tensor *b,
              const kc_tensor *b_scale, const kc_tensor *bias, const kc_tensor *y_scale,
              kc_tensor *y);

/* ---- custom kernels ------------------------------------------------------------------------ */

typedef enum { KC_NORM_LAYER, KC_NORM_RMS } kc_norm_kind;

/* Normalizes rows of `cols` = product of dims [axis, rank): y = norm(a + b + skip_bias) * scale +
 * bias, with the sum exported to `sum` when given. b (broadcasting to a), skip_bias, bias and sum
 * are optional; skip_bias, scale and bias broadcast to the normalized dims. One block per row; the
 * row is read once and written once when it fits in shared memory. */
bool kc_norm(kc_context *ctx, kc_norm_kind kind, const kc_tensor *a, const kc_tensor *b,
             const kc_tensor *skip_bias, const kc_tensor *scale, const kc_tensor *bias,
             kc_tensor *y, kc_tensor *sum, int axis, float epsilon);

/* y = softmax(scale * x + mask) along axis; mask broadcasts to x. */
bool kc_softmax(kc_context *ctx, const kc_tensor *x, const kc_tensor *mask, kc_tensor *y,
                int axis, float scale);

/* y = gate * sigmoid(gate) * up, gate and up broadcasting to y. */
bool kc_swiglu(kc_context *ctx, const kc_tensor *gate, const kc_tensor *up, kc_tensor *y);

/* RoPE on the last dim of x [.., S, D] with cos/sin tables [.., W] (W = D/2 or D) broadcasting to
 * x's [.., S, W]. */
bool kc_rope(kc_context *ctx, const kc_tensor *x, const kc_tensor *cos_t, const kc_tensor *sin_t,
             kc_tensor *y, bool interleaved);

/* Attention: q [B, Hq, S, D], k [B, Hkv, T, D], v [B, Hkv, T, Dv], y [B, Hq, S, Dv], or each as
 * [B, S, H, D] when bshd; mask (additive, broadcasting to [B, Hq, S, T])?; cos_t and sin_t (one
 * shape [.., W], W = D or D/2)?: the rotate-half RoPE of q and k, the tables broadcasting to
 * [B, Hq, S, W] and [B, Hkv, T, W]; key_mask (i32 broadcasting to [B, T])?: key j of batch b adds filter to
 * its scores where key_mask[b, j] is not > 0, before the mask. Tiled over keys with an online softmax: no score matrix is
 * stored. bias (additive, broadcasting to [B, Hq, S, T])?: added after the mask. D and Dv at most
 * KC_ATTENTION_MAX_HEAD_DIM. */
enum { KC_ATTENTION_MAX_HEAD_DIM = 128 };
bool kc_attention(kc_context *ctx, const kc_tensor *q, const kc_tensor *k, const kc_tensor *v,
                  const kc_tensor *mask, const kc_tensor *cos_t, const kc_tensor *sin_t,
                  kc_tensor *y, float scale, int causal, bool bshd, bool nan_to_zero,
                  const kc_tensor *key_mask, float filter, const kc_tensor *bias,
                  float causal_fill);

/* ElementwiseChain: `body` is the CUDA source of one expression over float inputs x0..x(n-1)
 * (made by kn_cuda_ewchain_source, kernels/cuda/ewchain_codegen.c). The kernel is compiled at run
 * time with NVRTC for this device, once per (body, input count, dtype): the context caches the
 * modules by that key. Inputs broadcast to y. */
bool kc_ewchain(kc_context *ctx, const char *body, const kc_tensor *const *inputs, int ninputs,
                kc_tensor *y);

/* ---- data movement (movement.cu) ---------------------------------------------------------- */

/* dst[dst_base + sum(i_d * dst_strides[d])] = src[src_base + sum(i_d * src_strides[d])] for every
 * index i of dims (element offsets; source strides may be 0 or negative): Transpose, Slice, Concat
 * and Split. Elements of esize bytes (1, 2, 4 or 8), moved unchanged. */
typedef struct kc_copy_plan {
    int rank;
    int64_t dims[KC_MAX_RANK];
    int64_t src_strides[KC_MAX_RANK], dst_strides[KC_MAX_RANK];
    int64_t src_base, dst_base;
} kc_copy_plan;
bool kc_strided_copy(kc_context *ctx, const void *src, void *dst, size_t esize,
                     const kc_copy_plan *plan);

/* Gather along one axis: y[o, j, k] = data[o, indices[j], k] over [outer, nidx, inner], data's
 * axis of size dim; indices i64 (idx64) or i32, already checked to lie in [-dim, dim). */
bool kc_gather(kc_context *ctx, const void *data, size_t esize, int64_t outer, int64_t dim,
               int64_t inner, const void *indices, bool idx64, int64_t nidx, void *y);
/* y = cond ? x : z, numpy-broadcast to y's dims; cond is bool (one byte), x, z and y elements of
 * esize bytes (the tensors' dtype fields are not read). */
bool kc_where(kc_context *ctx, const kc_tensor *cond, const kc_tensor *x, const kc_tensor *z,
              size_t esize, kc_tensor *y);

/* Tile: y (out_dims) = x (in_dims) repeated, y[o] = x[o mod in_dims per axis]. */
bool kc_tile(kc_context *ctx, const void *x, size_t esize, int rank, const int64_t *in_dims,
             const int64_t *out_dims, void *y);
/* Trilu: y = x with each matrix of the last two dims zeroed outside the upper (j - i >= k) or lower
 * (j - i <= k) triangle. */
bool kc_trilu(kc_context *ctx, const void *x, size_t esize, int rank, const int64_t *dims,
              bool upper, int64_t k, void *y);

/* Pad: y (out_dims) = x (in_dims) padded (negative pads crop) by `before` at the start of each
 * axis, in ONNX's modes; `fill` holds the constant's bytes in the element type. */
typedef enum { KC_PAD_CONSTANT, KC_PAD_REFLECT, KC_PAD_EDGE, KC_PAD_WRAP } kc_pad_mode;
bool kc_pad(kc_context *ctx, const void *x, size_t esize, int rank, const int64_t *in_dims,
            const int64_t *out_dims, const int64_t *before, kc_pad_mode mode, uint64_t fill,
            void *y);

/* ---- pooling (pool.cu) ------------------------------------------------------------------------ */

/* MaxPool / AveragePool over `planes` (N * C) planes of up to 3 spatial dims (leading dims of 1
 * when fewer), the geometry resolved by the caller as the CPU kernel resolves it. */
typedef struct kc_pool_params {
    int64_t planes;
    int64_t in[3], out[3], kernel[3], strides[3], dilations[3], pad_begin[3], pad_end[3];
    bool max, count_include_pad;
} kc_pool_params;
bool kc_pool(kc_context *ctx, const kc_tensor *x, kc_tensor *y, const kc_pool_params *p);

/* ---- elementwise across dtypes (typed.cu) ------------------------------------------------------ */

/* The element types the typed kernels address (the storage dtypes of the CPU executor they mirror). */
typedef enum {
    KC_E_F32, KC_E_F16, KC_E_BF16, KC_E_I8, KC_E_U8, KC_E_I32, KC_E_I64, KC_E_BOOL
} kc_elem;
typedef enum {
    KC_CMP_EQUAL,
    KC_CMP_LESS,
    KC_CMP_GREATER,
    KC_CMP_LESS_EQUAL,
    KC_CMP_GREATER_EQUAL,
    KC_CMP_AND, /* And, Or, Xor: bool operands */
    KC_CMP_OR,
    KC_CMP_XOR,
    KC_CMP_NOT, /* the unary ops from here on: b is not read */
    KC_CMP_ISNAN,
    KC_CMP_ISINF,     /* either infinity */
    KC_CMP_ISINF_POS, /* +inf only */
    KC_CMP_ISINF_NEG, /* -inf only */
} kc_compare_op;

/* Cast of n elements with the CPU's conversions (nearest float; floats to integers truncated,
 * saturated, NaN 0; integers wrapped; bool != 0). */
bool kc_cast(kc_context *ctx, const void *x, kc_elem xt, void *y, kc_elem yt, int64_t n);
/* y (bool) = a OP b broadcast, both of element type t; the unary ops (KC_CMP_NOT on a bool a,
 * IsNaN and IsInf on a float a) read a only, b may be NULL. The tensors' dtype fields are not
 * read. */
bool kc_compare(kc_context *ctx, kc_compare_op op, const kc_tensor *a, const kc_tensor *b,
                kc_elem t, kc_tensor *y);

/* ---- ops along one axis (index.cu) ---------------------------------------------------------- */

/* ArgMax (max) / ArgMin of float x (dtype dt) viewed as [outer, n, inner]: y[outer, inner] the
 * index of the extreme along n (NaN above everything, chosen by both; ties to the first index
 * unless last). n must be at least 1. */
bool kc_arg_reduce(kc_context *ctx, kc_dtype dt, const void *x, int64_t outer, int64_t n,
                   int64_t inner, bool max, bool last, int64_t *y);
/* CumSum of float x (dtype dt) along n of [outer, n, inner] into y (same dtype and shape), summed
 * in double; exclusive leaves out the element itself, reverse runs from the end. */
bool kc_cumsum(kc_context *ctx, kc_dtype dt, const void *x, int64_t outer, int64_t n,
               int64_t inner, bool exclusive, bool reverse, void *y);
/* GatherElements: y[i] = data[i with its axis coordinate replaced by indices[i]] over the
 * indices' dims (same rank as data, each at most data's off the axis); indices (i32 or i64, may be
 * negative) already checked against [-dim, dim) on the host. Raw elements of esize bytes. */
bool kc_gather_elements(kc_context *ctx, const void *data, size_t esize, int rank,
                        const int64_t *data_dims, const int64_t *idx_dims, int axis,
                        const void *indices, bool idx64, void *y);

/* GatherND / ScatterND geometry: `depth` indexed dims of `dims` and element `strides` (within a
 * batch), a slice of `slice` elements per index tuple, `tuples` tuples per batch, `per_batch`
 * elements of data per batch (GatherND's batch_dims; ScatterND has one batch). */
typedef struct kc_nd_args {
    int depth;
    int64_t dims[KC_MAX_RANK], strides[KC_MAX_RANK];
    int64_t batches, tuples, slice, per_batch;
} kc_nd_args;
/* GatherND: y[b, t, e] = x[b * per_batch + offset(tuple b, t) + e]; indices (i32/i64, [batches *
 * tuples, depth], may be negative) already checked on the host. Raw elements of esize bytes. */
bool kc_gather_nd(kc_context *ctx, const void *x, size_t esize, const void *indices, bool idx64,
                  const kc_nd_args *p, void *y);
/* ScatterND with reduction none into y (already holding data): y[offset(t) + e] = updates[t, e],
 * the tuples in order; unique (no two tuples alike, checked on the host) lets them run at once. */
bool kc_scatter_nd(kc_context *ctx, const void *updates, size_t esize, const void *indices,
                   bool idx64, const kc_nd_args *p, bool unique, void *y);

/* ---- InstanceNormalization (instance_norm.cu) ---------------------------------------------- */

/* y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c] over each (n, c) plane of x [N, C, ...]
 * (mean and biased variance in double); scale and bias [C], all of x's float dtype. */
bool kc_instance_norm(kc_context *ctx, const kc_tensor *x, const kc_tensor *scale,
                      const kc_tensor *bias, double eps, kc_tensor *y);

/* ---- cuda-b: normalizations and windows (norm_more.cu), softmax and losses (softmax_loss.cu) - */

/* LogSoftmax (or, with hardmax, Hardmax) of float x (dtype dt) along n of [outer, n, inner] into
 * y (same dtype and shape): the maximum (NaN wins) and the log-sum of exp(x - max) in double;
 * Hardmax 1 at the first maximum, 0 elsewhere. */
bool kc_log_softmax(kc_context *ctx, kc_dtype dt, const void *x, int64_t outer, int64_t n,
                    int64_t inner, bool hardmax, void *y);
/* GlobalMaxPool: y[p] = the maximum of plane p of `size` elements (NaN propagates); size >= 1. */
bool kc_plane_max(kc_context *ctx, kc_dtype dt, const void *x, int64_t planes, int64_t size,
                  void *y);
/* LayerNormalization over dims [axis, rank) with its Mean and InvStdDev outputs (either may be
 * NULL or have NULL data; their dtype is the stash type): statistics in double, the row in float
 * as the CPU kernel computes it. scale and bias (optional) broadcast to the normalized dims. */
bool kc_layer_norm_stats(kc_context *ctx, const kc_tensor *x, const kc_tensor *scale,
                         const kc_tensor *bias, int axis, float epsilon, kc_tensor *y,
                         kc_tensor *mean, kc_tensor *inv_std);
/* GroupNormalization of x [N, C, ...] in `groups` groups (C a multiple); scale and bias [C]. */
bool kc_group_norm(kc_context *ctx, const kc_tensor *x, const kc_tensor *scale,
                   const kc_tensor *bias, int64_t groups, double eps, kc_tensor *y);
/* MeanVarianceNormalization over the dims d with reduced[d] (x->rank flags). */
bool kc_mvn(kc_context *ctx, const kc_tensor *x, const bool *reduced, kc_tensor *y);
/* LRN across the channels of x [N, C, ...]. */
bool kc_lrn(kc_context *ctx, const kc_tensor *x, int64_t size, double alpha, double beta,
            double bias, kc_tensor *y);
/* NegativeLogLikelihoodLoss of x [N, C, d...] (softmax: SoftmaxCrossEntropyLoss, x the scores,
 * log_prob its optional second output) with targets [N, d...] (i64 when target64, else i32,
 * already checked on the host to lie in [0, C) unless equal to ignore_index), weight [C]?;
 * reduction 0 none, 1 sum, 2 mean. */
bool kc_nll_loss(kc_context *ctx, const kc_tensor *x, bool softmax, const void *target,
                 bool target64, const kc_tensor *weight, int reduction, int64_t ignore_index,
                 kc_tensor *y, kc_tensor *log_prob);

/* ---- cuda-b: TopK (topk.cu) and scatter with reductions (scatter.cu) ------------------------- */

/* TopK of x (element type t: the floats, i8, u8, i32, i64) along n of [outer, n, inner]: the k
 * first of each line in the CPU's order (largest or smallest first, NaN above everything, equal
 * values by lower index) into values (x's type) and indices, both [outer, k, inner]. */
bool kc_topk(kc_context *ctx, kc_elem t, const void *x, int64_t outer, int64_t n, int64_t inner,
             int64_t k, bool largest, void *values, int64_t *indices);

typedef enum {
    KC_SCATTER_NONE,
    KC_SCATTER_ADD,
    KC_SCATTER_MUL,
    KC_SCATTER_MAX,
    KC_SCATTER_MIN
} kc_scatter_red;
/* ScatterElements and ScatterND into y (already holding data), from a plan made on the host:
 * `plan` (host memory) holds targets[ngroups] (element offsets in y), starts[ngroups + 1] and
 * members[nmembers] (update rows, in the order the CPU applies them); group g folds updates
 * [members[m] * slice + e] for m in [starts[g], starts[g + 1]) into y[targets[g] + e], e in
 * [0, slice): floats in f32 rounded once, integers in int64 wrapped to their width, none the last
 * update. The plan is uploaded (so the call cannot be captured into a CUDA graph). */
bool kc_scatter_plan(kc_context *ctx, kc_elem t, kc_scatter_red r, const void *updates,
                     int64_t slice, const int64_t *plan, int64_t ngroups, int64_t nmembers,
                     void *y);

/* ---- cuda-b: NonZero and Compress (nonzero.cu) ---------------------------------------------- */

/* The count of the n elements of x (element type t) whose value != 0 (NaN counts, -0 does not),
 * counted on the device; only the count is copied to the host (so not inside a capture). */
bool kc_count_nonzero(kc_context *ctx, kc_elem t, const void *x, int64_t n, int64_t *count);
/* NonZero: y [rank, count] (int64) = the coordinates of x's `count` non-zero elements in
 * row-major order (a rank-0 x writes one row of 0s); `count` as kc_count_nonzero gave it. */
bool kc_nonzero(kc_context *ctx, kc_elem t, const void *x, int rank, const int64_t *dims,
                int64_t count, int64_t *y);

/* ---- cuda-b: Resize (resample.cu) ------------------------------------------------------------ */

typedef enum { KC_RESIZE_NEAREST, KC_RESIZE_LINEAR, KC_RESIZE_CUBIC } kc_resize_mode;
typedef enum {
    KC_COORD_HALF_PIXEL,
    KC_COORD_ALIGN_CORNERS,
    KC_COORD_ASYMMETRIC,
    KC_COORD_PYTORCH_HALF_PIXEL,
    KC_COORD_TF_HALF_PIXEL_FOR_NN,
    KC_COORD_TF_CROP_AND_RESIZE,
    KC_COORD_HALF_PIXEL_SYMMETRIC,
} kc_coord_mode;
typedef enum {
    KC_NEAREST_ROUND_PREFER_FLOOR,
    KC_NEAREST_ROUND_PREFER_CEIL,
    KC_NEAREST_FLOOR,
    KC_NEAREST_CEIL,
} kc_nearest_mode;
/* The attributes, and per axis of x the scale and roi, resolved on the host as the CPU kernel
 * resolves them (every axis: 1 and [0, 1] for the ones not resized). */
typedef struct kc_resize_params {
    kc_resize_mode mode;
    kc_coord_mode coord;
    kc_nearest_mode nearest;
    double cubic_a, extrapolation;
    bool exclude_outside;
    double scale[KC_MAX_RANK], roi_start[KC_MAX_RANK], roi_end[KC_MAX_RANK];
} kc_resize_params;
/* Resize of float x into y (same dtype and rank, y's dims the output's): the CPU kernel's
 * separable passes in double, every axis, rounded once; no dim of x may be 0. */
bool kc_resize(kc_context *ctx, const kc_tensor *x, kc_tensor *y, const kc_resize_params *p);

/* ---- cuda-b: MaxPool's Indices and MaxUnpool (unpool.cu), GridSample (grid_sample.cu) ------- */

/* MaxPool with its Indices output (int64, y's shape): the flat index of each window's first
 * maximum, row-major over the input or with the spatial dims column-major (storage_order=1); -1
 * for a window entirely in the padding. */
bool kc_maxpool_indices(kc_context *ctx, const kc_tensor *x, kc_tensor *y, int64_t *indices,
                        const kc_pool_params *p, bool column_major);
/* MaxUnpool: y = zeros with x[i] at the position indices[i] (int64, already checked to lie in
 * the default output of dims def_dims, x's rank) names, mapped into y's dims; the last i wins. */
bool kc_maxunpool(kc_context *ctx, const kc_tensor *x, const int64_t *indices,
                  const int64_t *def_dims, kc_tensor *y);

typedef enum { KC_GRID_NEAREST, KC_GRID_BILINEAR, KC_GRID_BICUBIC } kc_grid_mode;
typedef enum { KC_GRID_ZEROS, KC_GRID_BORDER, KC_GRID_REFLECTION } kc_grid_pad;
/* GridSample, 2-D: x [N, C, H, W], grid [N, Ho, Wo, 2] (x's dtype), y [N, C, Ho, Wo]. */
bool kc_grid_sample(kc_context *ctx, const kc_tensor *x, const kc_tensor *grid, kc_grid_mode mode,
                    kc_grid_pad pad, bool align_corners, kc_tensor *y);
/* ---- quantized and integer linear algebra (quant.cu) ---------------------------------------- */

/* Maps element i of a QuantizeLinear / DequantizeLinear input to its scale and zero-point
 * element, as the CPU kernel does (kernels/cpu/onnx_quant.c): kind 0 per tensor, 1 per axis
 * ((i / inner) % axis_dim), 2 per block of `block` along the axis (the scale's axis dim
 * scale_axis_dim). */
typedef struct kc_qmap {
    int kind;
    int64_t axis_dim, inner, block, scale_axis_dim;
} kc_qmap;
/* QuantizeLinear: y = saturate(rint(x / scale) + zp) (f32 division, round half to even, NaN to
 * the zero point), y and zp i8 or u8 (yt), zp NULL for 0. */
bool kc_quantize_linear(kc_context *ctx, const float *x, const float *scale, const void *zp,
                        kc_elem yt, const kc_qmap *m, int64_t n, void *y);
/* DequantizeLinear: y = (float)(x - zp) * scale, x and zp i8, u8 or i32 (xt), zp NULL for 0. */
bool kc_dequantize_linear(kc_context *ctx, const void *x, kc_elem xt, const float *scale,
                          const void *zp, const kc_qmap *m, int64_t n, float *y);
/* DynamicQuantizeLinear of n f32 values into u8 y, the scale and the zero point, with ONNX's
 * formula as the CPU kernel computes it. When range is not NULL the range [lo, hi] the kernel
 * found is copied there (synchronizing), so that the caller can report an infinity as the CPU
 * does. */
bool kc_dynamic_quantize(kc_context *ctx, const float *x, int64_t n, void *y, float *scale,
                         void *zero_point, float *range);

/* An integer operand of MatMulInteger / ConvInteger / the QLinear ops: i8 or u8 elements, and its
 * zero point (NULL for 0) with zp_n values (1: per tensor; else per row of A, per column of B,
 * per output channel of W). */
typedef struct kc_qoperand {
    const void *data;
    kc_elem type;
    const void *zp;
    int64_t zp_n;
} kc_qoperand;
/* The QLinear ops' requantization of the int32 accumulator, as the CPU's: scale = a_scale[row] *
 * b_scale[col] / y_scale in f32, y = saturate(rint(acc * scale) + y_zp) into yt (i8 or u8), with
 * row = i / row_div % rows and col = i / col_div % cols; a scale of one value is per tensor.
 * bias (QLinearConv, i32, NULL for none) is added to the accumulator at col first, wrapping. */
typedef struct kc_requant {
    const float *a_scale, *b_scale, *y_scale;
    int64_t a_scale_n, b_scale_n;
    const void *y_zp;
    kc_elem yt;
    const int32_t *bias;
    int64_t row_div, rows, col_div, cols;
} kc_requant;
/* y = (A - a_zp) @ (B - b_zp), numpy batch broadcasting: `batches` products of [m, k] @ [k, n],
 * batch t's operands at a_off(t) / b_off(t) = sum over batch dims of pos_d * stride_d (a stride 0
 * where the operand broadcasts). Summed in int64 and wrapped to int32 (MatMulInteger, into y as
 * i32), or requantized when rq is not NULL (QLinearMatMul, into y of rq->yt). */
typedef struct kc_int_matmul {
    int64_t m, n, k, batches;
    int batch_rank;
    int64_t batch_dims[KC_MAX_RANK], a_strides[KC_MAX_RANK], b_strides[KC_MAX_RANK];
} kc_int_matmul;
bool kc_int_matmul_run(kc_context *ctx, const kc_qoperand *a, const kc_qoperand *b,
                       const kc_int_matmul *p, const kc_requant *rq, void *y);
/* DynamicQuantizeMatMul (kernels/cuda/dynq.cu): A f32 [.., K] quantized by kc_dynamic_quantize,
 * (a_q - a_zp) @ (B - b_zp) for B i8 [K, N] (b_zp i8 of 1 or N values, data NULL for none) in
 * int32, then y = acc * (a_scale * b_scale) + bias (b_scale 1 or N values, bias N or data NULL).
 * An infinity in A is an error, as on the CPU (checked outside a graph capture). */
bool kc_dynq_matmul(kc_context *ctx, const kc_tensor *a, const kc_tensor *b,
                    const kc_tensor *b_scale, const kc_tensor *b_zp, const kc_tensor *bias,
                    kc_tensor *y);
/* BiasDropout (kernels/cuda/dropout.cu): y = Dropout(x + bias, ratio, training) [+ res], x, bias
 * and res (data NULL for none) broadcasting to y, one float dtype; ratio a float scalar (data NULL:
 * 0.5), training a bool scalar (data NULL: false); the mask of kernels/dropout_mask.h from seed,
 * written to mask (bool, data NULL for none). */
bool kc_bias_dropout(kc_context *ctx, const kc_tensor *x, const kc_tensor *bias,
                     const kc_tensor *res, const kc_tensor *ratio, const kc_tensor *training,
                     uint64_t seed, kc_tensor *y, kc_tensor *mask);
/* A convolution's geometry padded to 3 spatial dims by leading dims of 1 (kn_conv_geom's). */
typedef struct kc_conv3d {
    int64_t batch, in_channels, out_channels, group;
    int64_t in[3], out[3], kernel[3], strides[3], dilations[3], pad_begin[3];
} kc_conv3d;
/* y = conv(x - x_zp, w - w_zp), one thread per output, the padding contributing 0; int32 into y
 * (ConvInteger) or requantized with rq (QLinearConv). */
bool kc_int_conv_run(kc_context *ctx, const kc_qoperand *x, const kc_qoperand *w,
                     const kc_conv3d *g, const kc_requant *rq, void *y);

/* ---- linear algebra and signal (linalg.cu) ------------------------------------------------- */

/* ConvTranspose of f32/f16/bf16 x [N, C, in...] with w [C, M/group, k...] (+ bias [M]) into y
 * [N, M, out...], geometry as the CPU resolves it (pad_begin the pads before, out the output
 * size); each output the sum over the input positions i with i * stride - pad + k * dilation = o,
 * accumulated in fp32. */
bool kc_conv_transpose(kc_context *ctx, const kc_tensor *x, const kc_tensor *w,
                       const kc_tensor *bias, const kc_conv3d *g, kc_tensor *y);
/* Det of `count` f32 m x m matrices: the CPU's Gaussian elimination with partial pivoting in
 * double, the same operations in the same order, one thread per matrix (its copy in the
 * context's workspace); m = 0 gives 1. */
bool kc_det(kc_context *ctx, const float *x, int64_t count, int64_t m, float *y);
/* DFT of f32 x viewed as [outer, len, inner, comp] (comp 1 real, 2 complex) into y [outer,
 * outlen, inner, 2]: y[k] = sum_{j < min(n, len)} x[j] e^(sign 2 pi i (j k mod n) / n), in
 * double, divided by n when inverse (sign +1). */
bool kc_dft(kc_context *ctx, const float *x, int64_t outer, int64_t len, int64_t inner,
            int64_t comp, int64_t n, int64_t outlen, bool inverse, float *y);

/* Einsum of float inputs (one dtype T: f32, f16 or bf16) as the CPU kernel computes it: for each
 * output element, every combination of the summed labels in label order (the last fastest), the
 * product of the inputs' elements in double added into a double accumulator, rounded to f32 and
 * then to T. An input's stride along a label is 0 where it broadcasts, the sum of its dims'
 * strides where the label repeats (a diagonal). */
enum { KC_EINSUM_MAX_INPUTS = 4, KC_EINSUM_MAX_SUM = 32 };
typedef struct kc_einsum {
    int ninputs, out_rank, nsum;
    int64_t out_dims[KC_MAX_RANK], sum_dims[KC_EINSUM_MAX_SUM];
    int64_t out_strides[KC_EINSUM_MAX_INPUTS][KC_MAX_RANK];
    int64_t sum_strides[KC_EINSUM_MAX_INPUTS][KC_EINSUM_MAX_SUM];
} kc_einsum;
bool kc_einsum_run(kc_context *ctx, kc_dtype dt, const void *const *inputs, const kc_einsum *p,
                   int64_t out_numel, void *y);

/* ---- RNN, GRU, LSTM (rnn.cu) -------------------------------------------------------------- */

/* The recurrence as the CPU kernel computes it (kernels/cpu/onnx_rnn.c): ONNX's default
 * activations, in double; kind 1 RNN (gate i), 3 GRU (z, r, h), 4 LSTM (i, o, f, c). Steps at
 * and after an entry's sequence length leave Y zero and the state as it was; the reverse
 * direction runs from its last valid step down. */
typedef struct kc_rnn_params {
    int kind;
    int64_t seq, batch, input, hidden, dirs;
    bool batch_first, lbr, input_forget, reverse_only;
    double clip; /* 0: none */
} kc_rnn_params;
/* Device operands, all f32 (lens i32 or i64, already checked to lie in [0, seq]); NULL for an
 * absent optional one. */
typedef struct kc_rnn_operands {
    const void *x, *w, *r, *b, *lens, *h0, *c0, *p;
    bool lens64;
    void *y, *yh, *yc;
} kc_rnn_operands;
bool kc_rnn(kc_context *ctx, const kc_rnn_params *p, const kc_rnn_operands *o);

/* ---- reductions (reduce.cu) ---------------------------------------------------------------- */

typedef enum {
    KC_REDUCE_SUM,
    KC_REDUCE_MEAN,
    KC_REDUCE_MAX,
    KC_REDUCE_MIN,
    KC_REDUCE_PROD,
    KC_REDUCE_L1,
    KC_REDUCE_L2,
    KC_REDUCE_SUMSQ,
    KC_REDUCE_LOGSUM,
    KC_REDUCE_LOGSUMEXP,
} kc_reduce_kind;

/* y = x reduced over the dims d with axes[d] (x->rank flags), y holding the kept dims in order
 * (keepdims or not: the same layout). Float dtypes; the CPU reference's semantics. */
bool kc_reduce(kc_context *ctx, kc_reduce_kind kind, const kc_tensor *x, const bool *axes,
               kc_tensor *y);

/* Compiles an ElementwiseChain kernel to PTX without a device (the test of the code generator);
 * false with NVRTC's log in err (KC_ERROR_SIZE bytes). */
bool kc_ewchain_compile_check(const char *body, int ninputs, kc_dtype dtype, char *err);

/* ---- the epilogue kernel shared by the conv and GEMM paths --------------------------------- */

/* y[i] = act(y[i] + bias[channel(i)] + z[i]) in place; the channel of element i is
 * (i / inner) % channels (inner = 1 for NHWC and for GEMM rows, H*W for NCHW). bias and z may
 * be NULL. */
bool kc_bias_act(kc_context *ctx, kc_tensor *y, const kc_tensor *bias, const kc_tensor *z,
                 int64_t channels, int64_t inner, const kc_act *act);

/* ---- integer arithmetic, Mod and the bit ops (integer.cu) ------------------------------------ */

/* The integer forms of the arithmetic ops and the ops defined on integers only, with the CPU
 * kernels' semantics (kernels/cpu/onnx_binary.c, onnx_elementwise.c, onnx_math.c): computed in
 * 64 bits and wrapped to the dtype (two's complement); Div truncates toward zero (the most
 * negative value divided by -1 is itself); MOD has the divisor's sign, FMOD the dividend's (and
 * on floats is fmod in double); a shift of the width or more gives 0. Zero divisors are checked
 * on the host before the launch, as the CPU kernel checks them. */
typedef enum {
    KC_INT_ADD,
    KC_INT_SUB,
    KC_INT_MUL,
    KC_INT_DIV,
    KC_INT_MOD,  /* Mod fmod=0: the divisor's sign (Python) */
    KC_INT_FMOD, /* Mod fmod=1: the dividend's sign (C); floats too */
    KC_INT_MAX,
    KC_INT_MIN,
    KC_INT_AND,
    KC_INT_OR,
    KC_INT_XOR,
    KC_INT_SHL, /* BitShift on unsigned operands (u8: width 8, i64 holding a u64: width 64) */
    KC_INT_SHR,
    KC_INT_NEG, /* the unary ops from here on: b is not read */
    KC_INT_ABS,
    KC_INT_NOT,
    KC_INT_SIGN,
    KC_INT_RELU,
    KC_INT_CLIP,   /* to [args.lo, args.hi] */
    KC_INT_SHRINK, /* through double with args.bias and args.lambd, then truncated and saturated */
} kc_int_op;
typedef struct kc_int_args {
    int64_t lo, hi;     /* KC_INT_CLIP */
    double bias, lambd; /* KC_INT_SHRINK */
} kc_int_args;
/* y = a OP b (or OP a), a and b broadcasting to y, all of element type t (the tensors' dtype
 * fields are not read). */
bool kc_int_ew(kc_context *ctx, kc_int_op op, const kc_tensor *a, const kc_tensor *b, kc_elem t,
               const kc_int_args *args, kc_tensor *y);

/* ---- generators (generate.cu) ----------------------------------------------------------------- */

/* y[i] = the element whose bytes are the low esize bytes of `bits`, i < n (ConstantOfShape). */
bool kc_fill(kc_context *ctx, void *y, size_t esize, uint64_t bits, int64_t n);
/* y[i] = values[i], i < n <= KC_MAX_RANK: values known on the host (Shape, Size), passed in the
 * launch so that a captured run replays them. */
bool kc_set_i64(kc_context *ctx, const int64_t *values, int n, int64_t *y);
/* Range: y[i] = start + i * delta, n elements of type t: floats in float arithmetic (no fused
 * multiply-add, as the CPU), integers in 64 bits wrapped to t. */
bool kc_range(kc_context *ctx, kc_elem t, float fstart, float fdelta, int64_t istart,
              int64_t idelta, void *y, int64_t n);
/* EyeLike: y [rows, cols] holds `one` (esize bytes) where col - row == k, zero bytes elsewhere. */
bool kc_eye(kc_context *ctx, void *y, size_t esize, uint64_t one, int64_t rows, int64_t cols,
            int64_t k);
/* Hann, Hamming, Blackman: y[i] = a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N) in double (N =
 * size when periodic, else size - 1), stored in t as the CPU stores a double. */
bool kc_window(kc_context *ctx, kc_elem t, double a0, double a1, double a2, int64_t size,
               bool periodic, void *y);
/* OneHot: y [outer, depth, inner] = `off` everywhere except y[o, v, i] = `on` for the index v of
 * indices[o, i] (type it, read as a double, truncated; negative ones count from depth; outside
 * [-depth, depth) or NaN: none). on and off are esize bytes. */
bool kc_one_hot(kc_context *ctx, const void *indices, kc_elem it, int64_t outer, int64_t depth,
                int64_t inner, size_t esize, uint64_t off, uint64_t on, void *y);
/* ReverseSequence over x [batch, steps, inner] (batch_first) or [steps, batch, inner]: the first
 * lens[b] steps of each batch entry reversed, the rest copied; lens (type lt) already checked to
 * lie in [0, steps] on the host. Raw elements of esize bytes. */
bool kc_reverse_sequence(kc_context *ctx, const void *x, size_t esize, const void *lens, kc_elem lt,
                         bool batch_first, int64_t batch, int64_t steps, int64_t inner, void *y);
/* RandomUniform(Like): element i is the CPU's ir_random_fill_at(seed, i, lo, hi, f32) (the
 * counter-based splitmix64 stream of ir/consts.c, bit for bit), then rounded to t's storage. */
bool kc_random_uniform(kc_context *ctx, kc_elem t, uint64_t seed, double lo, double hi, void *y,
                       int64_t n);

/* QLinearAdd (kernels/cuda/qlinear_add.cu): c = saturate(rint((f32(a - a_zp) * a_scale +
 * f32(b - b_zp) * b_scale) / c_scale) + c_zp), a and b broadcasting to c; every tensor i8 but the
 * f32 scales, each parameter one value. */
bool kc_qlinear_add(kc_context *ctx, const kc_tensor *a, const kc_tensor *a_scale,
                    const kc_tensor *a_zp, const kc_tensor *b, const kc_tensor *b_scale,
                    const kc_tensor *b_zp, const kc_tensor *c_scale, const kc_tensor *c_zp,
                    kc_tensor *c);

#ifdef __cplusplus
}
#endif

#endif
