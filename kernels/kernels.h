/* The kernel registry: every op's CPU reference implementation, and for fused ops the backends
 * (cpu, cuda) that can run them with the constraints under which they can.
 *
 * A kernel sees contiguous row-major tensors. Float tensors are always handed to CPU kernels as f32
 * (the executor converts f16/bf16 storage to f32 before the call and back after it: fp32 arithmetic,
 * f16/bf16 storage); integer and bool tensors are handed over in their own dtype. Outputs are
 * allocated by the executor from the types inferred by the op catalog. */
#ifndef FUSERULE_KERNELS_KERNELS_H
#define FUSERULE_KERNELS_KERNELS_H

#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct kn_tensor {
    ir_dtype dtype; /* IR_F32 for every float storage type, see above */
    int rank;
    int64_t dims[IR_MAX_RANK];
    int64_t numel;
    void *data;     /* NULL for an omitted optional input */
} kn_tensor;

typedef struct kn_call {
    const ir_graph *graph;
    const ir_node *node;    /* attributes come from here (ir_get_int, ...) */
    const kn_tensor *inputs;
    uint32_t ninputs;
    kn_tensor *outputs;
    uint32_t noutputs;
    dg_context *dg;         /* for errors found at run time (an index out of range, ...) */
} kn_call;

/* Computes the node's outputs; returns false after reporting an error to call->dg. */
typedef bool (*kn_cpu_fn)(const kn_call *call);

/* One CPU reference implementation per catalog row, named kn_cpu_<OpName>, defined in
 * kernels/cpu/*.c. */
#define IR_OP(name, ...) bool kn_cpu_##name(const kn_call *call);
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP

#endif
