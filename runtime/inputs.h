/* Binding a graph's inputs for one run: shared by the CPU and CUDA executors.
 *
 * Every symbol is bound from the given tensors first (a symbol bound twice must agree), then each
 * graph input gets its data: a copy of the given tensor, or generated from the seed when none is
 * given. Errors are located at the input's declaration when the graph has a source. */
#ifndef FUSERULE_RUNTIME_INPUTS_H
#define FUSERULE_RUNTIME_INPUTS_H

#include "runtime/runtime.h"

/* Fills res->inputs (in g->inputs order, allocated in res->arena) and sets each input value's type
 * to its bound static type. `symbols` has one entry per graph symbol, -1 when unbound; it is
 * updated. Returns false after reporting to dg. */
bool rt_bind_inputs(ir_graph *g, dg_context *dg, const rt_options *opts, int64_t *symbols,
                    rt_result *res, const rt_tensor *given, size_t ngiven);

#endif
