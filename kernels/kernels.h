/* The kernel registry: every op's CPU reference implementation, and for fused ops the backends
 * (cpu, cuda) that can run them with the constraints under which they can.
 *
 * A kernel sees contiguous row-major tensors. Float tensors are always handed to CPU kernels as f32
 * (the executor converts f16/bf16 storage to f32 before the call and back after it: fp32 arithmetic,
 * f16/bf16 storage); integer and bool tensors are handed over in their own dtype. Outputs are
 * allocated by the executor from the types inferred by the op catalog. */
#ifndef FUSERULE_KERNELS_KERNELS_H
#define FUSERULE_KERNELS_KERNELS_H

#include "base/arena.h"
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
 * the files of kernels/cpu/. */
#define IR_OP(name, ...) bool kn_cpu_##name(const kn_call *call);
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP

/* The same kernels computing in double: every file of kernels/cpu/ compiled a second time with
 * double in place of float (kernels/cpu/f64_build.h). Float tensors are handed to them as doubles,
 * still labelled IR_F32; integer and bool tensors as in the f32 build. */
#define IR_OP(name, ...) bool kn_cpu_##name##_f64(const kn_call *call);
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP

/* ---- the registry ---------------------------------------------------------------------------
 *
 * One table (kernels/registry.c): each fused op's operands and, per backend, the constraints under
 * which it can run (`supports`) and its implementation. A backend is listed for a fused op only
 * where its implementation exists; a rewrite binds a fused node only where `kn_supports` says yes,
 * so a rule never fires where no kernel can run it. Plain ONNX ops all run on the CPU. */

typedef enum { KN_BACKEND_CPU, KN_BACKEND_CUDA, KN_BACKEND_COUNT } kn_backend;

const char *kn_backend_name(kn_backend b);       /* "cpu", "cuda" */
bool kn_backend_parse(const char *s, kn_backend *out);

/* Room for the reason a backend cannot run a node. */
enum { KN_WHY_SIZE = 200 };
/* For supports checks: writes the formatted reason into why_not (KN_WHY_SIZE bytes; nothing when
 * why_not is NULL) and returns false, so a check says `return kn_why(why_not, "...", ...)`. */
bool kn_why(char *why_not, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether the backend can run node n with its input types and attributes; when not, writes why
 * into why_not (KN_WHY_SIZE bytes). Input types may be partly symbolic; what is not known yet is
 * not refused (the executor checks static shapes again). */
typedef bool (*kn_supports_fn)(const ir_graph *g, const ir_node *n, char *why_not);

/* An operand of a fused op, as docs/kernels.md names it. */
typedef struct kn_port {
    const char *name;
    bool optional;
} kn_port;

typedef struct kn_cpu_impl {
    const char *kernel;      /* the name a bound node records (ir_node_kernel) */
    kn_supports_fn supports;
    kn_cpu_fn run;
} kn_cpu_impl;

/* What a CUDA launch is given: the node, its operands as device tensors, the kernel context and a
 * way to report. The kernels' types are kernels/cuda/cuda_kernels.h's (declared here by tag only,
 * so nothing but the CUDA backend sees them); the executor (runtime/cuda_*.c) fills the call. */
struct kc_context;
struct kc_tensor;
typedef struct kn_cuda_call {
    const ir_graph *graph;
    const ir_node *node;            /* attributes come from here */
    struct kc_context *kc;          /* the device, its stream, the library handles and scratch */
    const struct kc_tensor *inputs; /* at least KN_MAX_PORTS: omitted or absent ones data NULL */
    uint32_t ninputs;
    struct kc_tensor *outputs;
    uint32_t noutputs;
    ar_arena *arena; /* per-node allocations (ElementwiseChain's source) */
    dg_context *dg;  /* attribute errors found while reading them (the activation) */
    /* Reports msg as an error located at node; returns false. */
    bool (*fail)(void *user, const ir_node *node, const char *msg);
    void *user;
    /* The executor's copies of the node's values, through which a plain ONNX op's launch fetches
     * the operands it reads itself (inputs and outputs NULL; kernels/cuda/cuda_launch.h wraps
     * them). Each but `type` returns NULL after reporting at node. */
    const ir_type *(*type)(void *user, const ir_value *v);             /* v's type in this run */
    void *(*device)(void *user, ir_value *v, const ir_node *node);     /* uploaded when needed */
    const void *(*host)(void *user, ir_value *v, const ir_node *node); /* downloaded when needed */
    void *(*output)(void *user, ir_value *v, const ir_node *node); /* output v's device buffer */
    /* A device buffer of nbytes (at least 1) that the executor frees when the launch returns. */
    void *(*scratch)(void *user, size_t nbytes, const char *what, const ir_node *node);
    bool capturing; /* the launch is captured into a CUDA graph: nothing may be read back */
} kn_cuda_call;

/* Launches the node's kernel on the stream; returns false after reporting through call->fail (or
 * call->dg). */
typedef bool (*kn_cuda_fn)(const kn_cuda_call *call);

/* The CUDA column (kernels/cuda/, docs/cuda.md): empty without the CUDA backend. A row with a
 * kernel name has its supports check and its launch. */
typedef struct kn_cuda_impl {
    const char *kernel;
    kn_supports_fn supports;
    kn_cuda_fn run;
} kn_cuda_impl;

enum { KN_MAX_PORTS = 8 };

/* Layout tags (docs/graph-format.md) as a set: bit (1 << IR_LAYOUT_x). A tag names what each dim
 * of a tensor is; the kernels of convolutions read the channels at dim 1, so they declare the
 * channels-first tags. 0 means every tag. */
#define KN_LAYOUT(name) (1u << IR_LAYOUT_##name)
#define KN_CHANNELS_FIRST (KN_LAYOUT(NC) | KN_LAYOUT(NCW) | KN_LAYOUT(NCHW) | KN_LAYOUT(NCDHW))

typedef struct kn_fused_entry {
    ir_op op;
    const char *summary;              /* one line: what it computes */
    kn_port inputs[KN_MAX_PORTS];     /* attributes: the op's catalog schema (ir_op_info_get) */
    kn_port outputs[KN_MAX_PORTS];
    bool variadic_inputs;             /* inputs[0] names the repeated operand */
    kn_cpu_impl cpu;
    kn_cuda_impl cuda;
} kn_fused_entry;

/* The registry's rows, in fused_ops.def order. */
const kn_fused_entry *kn_fused_entries(size_t *count);
/* The entry of a fused op; NULL for a plain ONNX op. */
const kn_fused_entry *kn_fused_entry_get(ir_op op);

/* The layout tags the inputs of op's kernels may carry, on either backend (KN_LAYOUT bits; 0:
 * any); an untagged input always passes. The rewriter refuses a fusion whose inputs carry
 * another tag (rewrite/legality.c). */
unsigned kn_layouts(ir_op op);

/* Whether `backend` can run node n (any op); on false, why_not (KN_WHY_SIZE bytes) says why. */
bool kn_supports(const ir_graph *g, const ir_node *n, kn_backend backend, char *why_not);
/* The name of the kernel that runs op on backend ("cpu.FusedConvAct"), or NULL when none. */
const char *kn_kernel_name(ir_op op, kn_backend backend);
/* The CPU implementation of any catalog op. */
kn_cpu_fn kn_cpu_get(ir_op op);
/* Its f64 build (see kn_cpu_<Op>_f64 above). */
kn_cpu_fn kn_cpu_get_f64(ir_op op);
/* The CUDA launch of op: a fused op's CUDA column (given its operands), or a plain ONNX op's row
 * (kernels/cuda/launch_onnx.c; it fetches its operands through the call); NULL for an op no CUDA
 * kernel runs and in a build without the CUDA backend. */
kn_cuda_fn kn_cuda_get(ir_op op);

#endif
