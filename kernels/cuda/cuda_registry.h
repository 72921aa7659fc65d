/* The C side of the CUDA backend that needs no CUDA headers, compiled into fr_kernels when the
 * build has CUDA (kernels/cuda/CMakeLists.txt): the CUDA column's `supports` checks, used by
 * kernels/registry.c, its launches, and the ElementwiseChain code generator. */
#ifndef FUSERULE_KERNELS_CUDA_CUDA_REGISTRY_H
#define FUSERULE_KERNELS_CUDA_CUDA_REGISTRY_H

#include "base/arena.h"
#include "ir/ir.h"
#include "kernels/kernels.h"

#include <stdbool.h>

/* The CUDA column's supports checks (kn_supports_fn), one per fused op: what the CUDA kernel
 * can run (dtypes, ranks, layouts, alignment, attributes), independent of whether this machine
 * has a device, which the executor reports. Each writes why not into why_not (KN_WHY_SIZE). */
#define IR_OP(name, ...)                                                                           \
    bool kn_cuda_supports_##name(const ir_graph *g, const ir_node *n, char *why_not);
#include "ir/fused_ops.def"
#undef IR_OP

/* The CUDA column's launches (kn_cuda_fn), one per fused op, in kernels/cuda/launch_*.c: each
 * reads the node's attributes into its kernel's parameters and calls the kc_ launcher. */
#define IR_OP(name, ...) bool kn_cuda_run_##name(const kn_cuda_call *call);
#include "ir/fused_ops.def"
#undef IR_OP

/* The CUDA column's rows for the plain ONNX ops (kernels/cuda/launch_onnx.c): the launch of op,
 * which fetches the operands it reads through the call, or NULL when no CUDA kernel runs op (the
 * ops kn_cuda_onnx_supports refuses as having none). kn_cuda_get's plain rows. */
kn_cuda_fn kn_cuda_onnx_run(ir_op op);

/* Fetches every input of the call's node as a typed device tensor (absent ones zero) and
 * allocates every output, then runs `run` on them: how the executor launches a fused op, and the
 * plain ops on a fused op's kernel (Conv, MatMul, ...) are launched (launch_operands.c). */
bool kn_cuda_run_given(const kn_cuda_call *call, kn_cuda_fn run);

/* Whether op's output is sized by a count made on the device (NonZero, Compress): the executor
 * then sets the output's type from kn_cuda_count_output instead of running inference, and never
 * copies the input to the host. */
bool kn_cuda_counts_output(ir_op op);
/* That type, as the op's inference would set it (ir/infer_index.c); false after reporting,
 * e.g. while capturing a CUDA graph, which cannot read the count back (launch_scatter.c). */
bool kn_cuda_count_output(const kn_cuda_call *call, ir_type *out);

/* The CUDA source of an ElementwiseChain expression: one C expression over float variables
 * x0..x(n-1) calling the fr_* device functions of the NVRTC prelude (kernels/cuda/ewchain.cu),
 * e.g. "fr_mul(fr_sigmoid(fr_add(x0, x1)), fr_sub(x2, 1.5f))"; constants are exact float
 * literals (infinities and NaN by their bits). Allocated in arena. */
const char *kn_cuda_ewchain_source(ar_arena *arena, const ir_ew_program *prog);

/* ---- plain ONNX ops on the GPU (docs/cuda.md, "Plain ONNX ops") ---- */

/* Whether a CUDA kernel runs plain ONNX node n (an elementwise op of kernels/cuda/onnx_ew_table.c,
 * MatMul, Gemm, Conv, Softmax, LayerNormalization); when not, why_not (KN_WHY_SIZE) says why, e.g.
 * "i64: the CUDA elementwise kernels take f32, f16 or bf16". Like the fused checks, what is not
 * known yet is not refused: the executor asks again on the run's shapes. */
bool kn_cuda_onnx_supports(const ir_graph *g, const ir_node *n, char *why_not);

/* The checks of quant.cu's and linalg.cu's kernels (QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, ConvTranspose,
 * Det, DFT, Einsum, RNN, GRU, LSTM), in kernels/cuda/cuda_supports_linalg.c;
 * kn_cuda_onnx_supports calls it. */
bool kn_cuda_linalg_supports(const ir_graph *g, const ir_node *n, char *why_not);
/* Inputs and summed labels the CUDA Einsum takes (KC_EINSUM_MAX_INPUTS, KC_EINSUM_MAX_SUM). */
enum { KN_CUDA_EINSUM_MAX_INPUTS = 4, KN_CUDA_EINSUM_MAX_SUM = 32 };
/* Whether plain ONNX node n runs on the integer kernel (kernels/cuda/integer.cu): Mod, BitShift
 * and the Bitwise* ops, and the arithmetic ops whose input 0 is an integer (their float forms are
 * the elementwise table's). The executor dispatches by it, before the table. */
bool kn_cuda_int_kernel(const ir_node *n);

enum { KN_CUDA_EW_MAX_INPUTS = 32 };

/* A plain elementwise op as an ElementwiseChain expression. */
typedef struct kn_cuda_ew_expr {
    const char *expr;                       /* in the expression language: "clip(x0, x1, 1e39)" */
    const char *body;                       /* its CUDA source (kn_cuda_ewchain_source) */
    uint32_t inputs[KN_CUDA_EW_MAX_INPUTS]; /* x<i> is the node's input inputs[i] */
    uint32_t ninputs;
    bool per_channel; /* inputs after the first are [C] along the first input's dim 1 */
} kn_cuda_ew_expr;

/* Whether op has a row in the elementwise table. */
bool kn_cuda_ew_op_listed(ir_op op);
/* The expression of node n from its table row, allocated in arena; false with why_not when the
 * op has none or the node cannot be expressed (a NaN attribute, a missing input). */
bool kn_cuda_ew_expand(ar_arena *arena, const ir_node *n, kn_cuda_ew_expr *out, char *why_not);

/* The most inputs the CUDA ElementwiseChain kernel takes (its launch parameters hold one pointer
 * and KC_MAX_RANK strides per input): KN_CUDA_EW_MAX_INPUTS above. */
/* Head dims the CUDA attention kernel handles (KC_ATTENTION_MAX_HEAD_DIM). */
enum { KN_CUDA_ATTENTION_MAX_HEAD_DIM = 128 };
/* Depthwise channels the CUDA SeparableConv keeps per tile position (KC_SEPARABLE_MAX_CHANNELS). */
enum { KN_CUDA_SEPARABLE_MAX_CHANNELS = 12288 };
/* Channels (and reduced channels) the CUDA SqueezeExcite keeps in shared memory
 * (KC_SQUEEZE_EXCITE_MAX_CHANNELS). */
enum { KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS = 4096 };

#endif
