/* What the CUDA executor's files share (runtime/cuda_*.c; not a public header): the executor's
 * state, its device pool and slots, and the functions one file calls in another. The executor
 * itself is described in runtime/cuda_executor.c; docs/cuda.md maps the files. Compiled only with
 * FR_HAVE_CUDA. */
#ifndef FUSERULE_RUNTIME_CUDA_INTERNAL_H
#define FUSERULE_RUNTIME_CUDA_INTERNAL_H

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_registry.h"
#include "kernels/kernels.h"
#include "runtime/exec_common.h"
#include "runtime/pool.h"
#include "runtime/runtime.h"

/* With rt_options.sentinels, every device buffer has GUARD bytes of SENTINEL before it and right
 * after the size its current value asked for (not after the pool's rounded capacity, where a write
 * a few elements too far would land unseen), checked when it is freed. */
enum { GUARD = 256, SENTINEL = 0xA5 };

/* A device buffer; views share one through refs. */
typedef struct dbuf {
    void *base; /* what cudaMalloc returned: ptr - GUARD with sentinels */
    void *ptr;
    size_t cap;
    size_t size; /* what the current value asked for; the trailing guard starts there */
    unsigned refs;
    const char *owner; /* the value it was last allocated for, for the sentinel report */
} dbuf;

typedef struct dpool {
    VEC(dbuf *) free_list;
    size_t held, peak, allocations, reuses;
} dpool;

typedef struct slot {
    ir_type type; /* static once defined */
    size_t nbytes;
    const void *host; /* storage dtype; valid when not NULL */
    rt_buffer *hbuf;  /* the host pool buffer behind host, NULL for inputs and constants */
    dbuf *dev;        /* the device copy, NULL when none */
    bool persistent;  /* a constant's or input's device copy: kept across runs */
    uint32_t remaining;
} slot;

typedef struct executor {
    rt_exec run; /* the graph, options, result, saved types, symbols (exec_common.h) */
    kc_context *kc;
    slot *slots;
    bool *on_gpu;         /* per node */
    const char **cpu_why; /* per node: why it runs on the CPU (NULL on the GPU) */
    bool *ran_on_cpu;     /* per node: a CPU kernel ran it in the last run (not a view) */
    rt_pool hpool;        /* host copies and run.scratch's f32 copies of f16/bf16 operands */
    dpool dpool;
    ar_arena *scratch_arena; /* per-node strings (ElementwiseChain sources) */
    VEC(dbuf *) launch_scratch; /* the device buffers a launch asked for, freed when it returns */
    const char *oob;         /* the first sentinel violation found, reported after the node */
    bool capturing;          /* a run being captured as a CUDA graph: nothing synchronizes */
} executor;

/* ---- errors (cuda_executor.c); both always return false ---- */

/* An error located at node n (or at the graph when n is NULL). */
bool rt_cu_report(executor *ex, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The kernels' last CUDA error, located at n. */
bool rt_cu_failed(executor *ex, const ir_node *n);

/* Runs n's inference on the run-time types of its inputs and sizes its outputs' slots
 * (cuda_executor.c). */
bool rt_cu_infer_node(executor *ex, ir_node *n);

/* ---- the device pool (cuda_pool.c) ---- */

/* A buffer of at least size bytes for the value named owner; NULL when cudaMalloc failed. */
dbuf *rt_cu_dpool_get(executor *ex, size_t size, const char *owner);
/* Drops one reference to b; the last returns it to the pool (its guards checked first). */
void rt_cu_dpool_release(executor *ex, dbuf *b);
/* Frees every pooled buffer. */
void rt_cu_dpool_free(executor *ex);

/* ---- values and device tensors (cuda_transfer.c) ---- */

/* Makes graph input v's bound tensor the host data of its slot (rt_exec_bind_inputs). */
bool rt_cu_bind_input(void *user, ir_value *v, const rt_tensor *used);
/* The host copy of v (downloaded when only the device has it); NULL after reporting. */
const void *rt_cu_ensure_host(executor *ex, ir_value *v, const ir_node *n);
/* The device copy of v (uploaded when only the host has it); NULL after reporting. */
void *rt_cu_ensure_dev(executor *ex, ir_value *v, const ir_node *n);

/* ---- launches (cuda_launch.c) ---- */

/* Launches GPU node n through the registry's CUDA column (kn_cuda_get). */
bool rt_cu_run_gpu_node(executor *ex, ir_node *n);
/* NonZero and Compress on the GPU: whether n is one (kn_cuda_counts_output), and its inference
 * from the count made on the device. */
bool rt_cu_counted_on_gpu(const executor *ex, const ir_node *n);
bool rt_cu_infer_counted(executor *ex, ir_node *n);

/* ---- the CPU fallback (cuda_fallback.c) ---- */

/* Runs n's CPU reference kernel on host copies of its operands. */
bool rt_cu_run_cpu_node(executor *ex, ir_node *n);

#endif
