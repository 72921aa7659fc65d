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

typedef struct rt_options {
    uint64_t seed;   /* graph inputs not given are filled by ir_random_fill(seed + input index, ...) */
    bool time;       /* collect wall time per node class */
} rt_options;

typedef struct rt_result {
    ar_arena *arena;      /* owns everything below */
    rt_tensor *outputs;   /* in g->outputs order */
    size_t noutputs;
    rt_tensor *inputs;    /* the inputs actually used (given or generated), in g->inputs order */
    size_t ninputs;
} rt_result;

/* Runs a validated graph on the CPU. `inputs` (may be NULL) are matched to graph inputs by name;
 * dtype and shape must agree; symbolic input dims take their size from the given tensor. Returns
 * false after reporting an error (a shape that cannot be resolved, a kernel error). */
bool rt_run_cpu(ir_graph *g, const rt_tensor *inputs, size_t ninputs, const rt_options *opts,
                rt_result *out, dg_context *dg);
void rt_result_free(rt_result *r);

#endif
