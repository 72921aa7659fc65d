/* Plans of the movement ops' CUDA launches (kernels/cuda/copy_plan.c): Transpose, Slice, Concat,
 * Split, DepthToSpace and SpaceToDepth as strided copies (kc_strided_copy) on the run's static
 * shapes; and Pad's plan. Private to kernels/cuda/launch_onnx.c (and
 * tests/gpu/test_gpu_kernels.c, which applies the copy plans on the host). */
#ifndef FUSERULE_KERNELS_CUDA_COPY_PLAN_H
#define FUSERULE_KERNELS_CUDA_COPY_PLAN_H

#include "ir/ir.h"
#include "kernels/cuda/cuda_kernels.h"

enum { KN_CUDA_MOVE_MAX_PLANS = 64, KN_CUDA_MOVE_MAX_INPUTS = 64 };

/* What a plan is made from: the run's types of the node's inputs and outputs, and the integer
 * inputs read on the host (Slice's starts, ends, axes, steps: ints[1..4], NULL when absent). */
typedef struct kn_cuda_move_io {
    const ir_type *in_type[KN_CUDA_MOVE_MAX_INPUTS];
    const ir_type *out_type[KN_CUDA_MOVE_MAX_PLANS];
    const int64_t *ints[5];
    int nints[5];
} kn_cuda_move_io;

/* The copies that compute node n: one per Concat input or Split output, else one. Concat's plan k
 * reads input k, Split's plan k writes output k; the others read input 0 into output 0. False with
 * *err when the node's operands do not make a plan. */
bool kn_cuda_move_plans(const ir_node *n, const kn_cuda_move_io *io, kc_copy_plan *plans,
                        int *nplans, const char **err);

/* Pad node n over a rank-`rank` X: its mode and the begin pads of every axis, from the pads
 * (and optional axes) values read on the host, as the CPU kernel reads them. False with *err. */
bool kn_cuda_pad_plan(const ir_node *n, int rank, const int64_t *pads, int npads,
                      const int64_t *axes, int naxes, int64_t *before, kc_pad_mode *mode,
                      const char **err);

#endif
