/* The C side of the CUDA backend that needs no CUDA headers, compiled into fr_kernels when the
 * build has CUDA (kernels/cuda/CMakeLists.txt): the CUDA column's `supports` checks, used by
 * kernels/registry.c, and the ElementwiseChain code generator, used by the CUDA executor. */
#ifndef FUSERULE_KERNELS_CUDA_CUDA_REGISTRY_H
#define FUSERULE_KERNELS_CUDA_CUDA_REGISTRY_H

#include "base/arena.h"
#include "ir/ir.h"

#include <stdbool.h>

/* The CUDA column's supports checks (kn_supports_fn), one per fused op: what the CUDA kernel
 * can run (dtypes, ranks, layouts, alignment, attributes), independent of whether this machine
 * has a device, which the executor reports. Each writes why not into why_not (KN_WHY_SIZE). */
#define IR_OP(name, ...)                                                                           \
    bool kn_cuda_supports_##name(const ir_graph *g, const ir_node *n, char *why_not);
#include "ir/fused_ops.def"
#undef IR_OP

/* The CUDA source of an ElementwiseChain expression: one C expression over float variables
 * x0..x(n-1) calling the fr_* device functions of the NVRTC prelude (kernels/cuda/ewchain.cu),
 * e.g. "fr_mul(fr_sigmoid(fr_add(x0, x1)), fr_sub(x2, (float)(1.5)))". Allocated in arena. */
const char *kn_cuda_ewchain_source(ar_arena *arena, const ir_ew_program *prog);

/* The most inputs the CUDA ElementwiseChain kernel takes (its launch parameters hold one pointer
 * and KC_MAX_RANK strides per input). */
enum { KN_CUDA_EW_MAX_INPUTS = 32 };
/* Head dims the CUDA attention kernel handles (KC_ATTENTION_MAX_HEAD_DIM). */
enum { KN_CUDA_ATTENTION_MAX_HEAD_DIM = 128 };
/* Depthwise channels the CUDA SeparableConv keeps per tile position (KC_SEPARABLE_MAX_CHANNELS). */
enum { KN_CUDA_SEPARABLE_MAX_CHANNELS = 12288 };

#endif
