/* Executing graphs. The CPU executor runs any graph of catalog ops and fused ops with fp32
 * arithmetic (f16/bf16 storage), planning buffers so that each is reused once its last consumer has
 * run. It is the reference every other backend is compared with. */
#ifndef FUSERULE_RUNTIME_RUNTIME_H
#define FUSERULE_RUNTIME_RUNTIME_H

#include "base/arena.h"
#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A named tensor in its storage dtype (f16/bf16 as 16-bit encodings, bool as one byte). */
typedef struct rt_tensor {
    const char *name;
    ir_type type; /* static */
    void *data;
    size_t nbytes;
} rt_tensor;

/* A size given to a symbolic dim (`--dim N=4`). */
typedef struct rt_dim {
    const char *name;
    int64_t size;
} rt_dim;

typedef struct rt_options {
    uint64_t seed;   /* graph inputs not given are filled by ir_random_fill(seed + input index, ...):
                      * floats uniform in [-1, 1), i8/u8 over their whole range, bool 0 or 1, and
                      * i32/i64 (indices, shapes) zero */
    bool time;       /* collect wall time per node class */
    bool sentinels;  /* CUDA: guard bytes before every device buffer and right after the size
                      * asked for, checked when it is freed (the GPU tests' out-of-bounds write
                      * detector) */
    int repeat;      /* CUDA: run the graph this many times (0 or 1: once); the outputs are the
                      * last run's (the GPU tests' check that state does not leak between runs) */
    bool cuda_graph; /* CUDA, with repeat > 1: the runs after the first are one run captured as
                      * a CUDA graph and replayed (every node must be on the GPU) */
    const rt_dim *dims; /* sizes of symbolic dims that no given tensor binds */
    size_t ndims;
    uint64_t memory_budget; /* bytes the inputs and intermediates of a run may take, checked
                             * before anything is allocated (rt_check_budget); 0: unchecked */
} rt_options;

/* Time spent in the nodes of one op (conversions of f16/bf16 storage included): wall time, and
 * the process's CPU time (all threads; steadier than wall time on a loaded machine). */
typedef struct rt_op_time {
    ir_op op;
    uint64_t calls;
    double seconds;
    double cpu_seconds;
} rt_op_time;

/* What memory planning achieved. */
typedef struct rt_memory {
    size_t peak_bytes;         /* the most bytes the buffer pool held at once */
    size_t intermediate_bytes; /* the sum of every node output's size: what no reuse would hold */
    size_t allocations;        /* buffers the pool had to allocate */
    size_t reuses;             /* requests served by a released buffer */
} rt_memory;

/* A node that a CUDA run (rt_run_cuda) ran on its CPU kernel, and why no CUDA kernel took it. */
typedef struct rt_fallback {
    const char *node; /* its first output's name */
    ir_op op;
    const char *why;
} rt_fallback;

typedef struct rt_result {
    ar_arena *arena;      /* owns everything below */
    rt_tensor *outputs;   /* in g->outputs order */
    size_t noutputs;
    rt_tensor *inputs;    /* the inputs actually used (given or generated), in g->inputs order */
    size_t ninputs;
    rt_memory memory;
    rt_op_time *times;    /* with opts->time: ops that ran, most time first */
    size_t ntimes;
    rt_fallback *fallbacks; /* rt_run_cuda: the nodes that ran on the CPU, in graph order */
    size_t nfallbacks;
} rt_result;

/* Runs a validated graph on the CPU. `inputs` (may be NULL) are matched to graph inputs by name;
 * dtype and shape must agree; symbolic input dims take their size from the given tensor. Returns
 * false after reporting an error (a shape that cannot be resolved, a kernel error). */
bool rt_run_cpu(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                rt_result *out, dg_context *dg);
void rt_result_free(rt_result *r);

/* The f64 reference: runs g like rt_run_cpu, on the same inputs (given in the graph's dtypes), but
 * holds every float value in f64 and runs every node on the f64 build of the CPU kernels
 * (kernels/cpu/f64_build.h); a Cast still rounds to its target dtype. Outputs that are float in the
 * graph come back as f64 tensors. It judges f32 runs: rounding an f32 graph accumulates over its
 * depth shows as the distance of its run from this one. */
bool rt_run_reference(ir_graph *g, const rt_tensor *inputs, size_t ninputs,
                      const rt_options *opts, rt_result *out, dg_context *dg);

/* The memory the machine has available now (MemAvailable), in bytes; 0 when unknown. */
uint64_t rt_available_memory(void);
/* The checks before a run allocates anything: with symbolic dims bound (opts->dims, the given
 * tensors), every node's inference again on the bound sizes, so that sizes that cannot work are
 * reported before any input is made; then the bytes the run needs (inputs, intermediates at their
 * peak; f64 copies in a reference run) against opts->memory_budget. Reports and returns false
 * when either fails; g's types are left as they were. Runs check it themselves. */
bool rt_check_budget(ir_graph *g, const rt_tensor *given, size_t ngiven, const rt_options *opts,
                     bool reference, dg_context *dg);

/* The CUDA backend (runtime/cuda_executor.c, docs/cuda.md). Nodes that a CUDA kernel supports on
 * the run's shapes run on the GPU, every other node on its CPU reference kernel (listed in
 * fallbacks); values move between host and device only when the other side reads them. Same
 * contract as rt_run_cpu; memory reports the device pool. Fails with a located error when the
 * build has no CUDA backend or the machine no device. */
bool rt_run_cuda(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                 rt_result *out, dg_context *dg);
/* Whether this build has a CUDA backend and the machine a device; why not otherwise. */
bool rt_cuda_available(char *why, size_t size);
/* Benchmarks: runs g once to warm up (kernels compiled, weights uploaded), then `iters` times,
 * optionally captured once as a CUDA graph and replayed; *ms is the mean time of one run. */
bool rt_cuda_time(ir_graph *g, const rt_options *opts, int iters, bool cuda_graph, double *ms,
                  dg_context *dg);

/* The tensor of a result by name (outputs first, then inputs); NULL when absent. */
const rt_tensor *rt_result_find(const rt_result *r, const char *name);
/* Element i of a tensor as a double, whatever its storage dtype. */
double rt_tensor_get(const rt_tensor *t, size_t i);
size_t rt_tensor_numel(const rt_tensor *t);

/* ---- comparing results ---------------------------------------------------------------------- */

/* |got - want| <= atol + rtol * |want| per element: f32 1e-5 + 1e-4|x|, f16 2.5e-3 + 1e-3|x|,
 * bf16 0.02 + 0.01|x|, f64 1e-7 + 1e-7|x|, integers and bool exactly (runtime/compare.c has the
 * table and its sources). */
typedef struct rt_tolerance {
    double rtol, atol; /* PyTorch's assert_close order, as the tests write theirs */
} rt_tolerance;

rt_tolerance rt_tolerance_of(ir_dtype dt);

/* How `got` differs from `want` (same type): NaN and infinities (with their sign) must sit at the
 * same places, then every element must be within the tolerance. */
typedef struct rt_comparison {
    size_t bad;         /* elements out of tolerance */
    size_t special;     /* NaN / infinity disagreements */
    double worst_diff;  /* the largest |got - want| */
    double worst_ratio; /* the largest |diff| / allowed */
    size_t at;          /* the first NaN/Inf disagreement, else where worst_ratio is */
} rt_comparison;

/* Compared with tolerance `tol` (rt_tolerance_of the dtype, or the user's) and `slack` added to
 * every element's allowance (verify's reference mode: the original run's own distance from the f64
 * reference). want may be f64 where got is a narrower float type. */
rt_comparison rt_compare_with(const rt_tensor *got, const rt_tensor *want, rt_tolerance tol,
                              double slack);
/* How a fused run's output is judged (verify, `fuserule test`): NaN and infinities must sit where
 * the original run has them; then, with a reference (`ref`: the f64 run of the original, NULL for
 * none or for a non-float output), each element within tol of the reference plus the original's
 * own worst distance from it, else within tol of the original. */
typedef struct rt_judgement {
    rt_comparison c;          /* the fused output against ref (or the original); c.special and
                               * c.at count NaN/Inf disagreements with the original first */
    double original_distance; /* max |original - ref| over finite elements; 0 without ref */
    size_t bad;               /* elements that fail */
} rt_judgement;

rt_judgement rt_judge(const rt_tensor *original, const rt_tensor *fused, const rt_tensor *ref,
                      rt_tolerance tol);

/* Element `flat` of a tensor of type t as its index, "[0, 12, 7]" ("[]" for a scalar). */
const char *rt_format_index(const ir_type *t, size_t flat, char *buf, size_t size);

#endif
