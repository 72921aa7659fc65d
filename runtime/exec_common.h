/* What the CPU and CUDA executors share: shapes at run time, the outputs' copies, timing totals,
 * the kernels' view of host data and storage conversions, scratch buffers, views and releasing
 * values after a node.
 *
 * Shapes. Every node's inference runs again during a run, on the bound, static types of
 * its inputs. Small integer tensors and scalars computed at run time (shapes,
 * axes, indices: rt_is_shape_tensor) are shown to inference as in-memory
 * constants for the duration of the call, so a Reshape or Expand fed by a Shape
 * computation resolves too. The executors differ only in where a value's bytes
 * are, which they tell through rt_value_source. */
#ifndef FUSERULE_RUNTIME_EXEC_COMMON_H
#define FUSERULE_RUNTIME_EXEC_COMMON_H

#include "kernels/kernels.h"
#include "runtime/pool.h"
#include "runtime/runtime.h"

#include <time.h>

/* Integer tensors up to this many elements computed at run time count as shape
 * tensors. */
enum { RT_SHAPE_TENSOR_MAX = 4096 };

/* How an executor shows its values to rt_infer_node. */
typedef struct rt_value_source {
    /* The run-time type of v when v has been computed (or bound) in this run,
   * else NULL. */
    const ir_type *(*defined)(void *user, const ir_value *v);
    /* v's bytes on the host in its storage dtype (fetched if needed); NULL after
   * reporting. */
    const void *(*host)(void *user, ir_value *v, const ir_node *reader, size_t *nbytes);
    void *user;
} rt_value_source;

/* Every input of an op flagged IR_OPF_VALUE_SHAPE (NonZero) is shown to its inference the same
 * way, whatever its size and dtype: its output's size is a function of those values. */

/* Whether v (defined, with run-time type t) is shown to inference as a
 * constant: an integer tensor of at most RT_SHAPE_TENSOR_MAX elements, or a
 * scalar of any dtype (Range's bounds). */
bool rt_is_shape_tensor(const ir_value *v, const ir_type *t);

typedef enum rt_infer_status {
    RT_INFER_OK,
    RT_INFER_FAILED,  /* inference or a fetch failed; it was reported */
    RT_INFER_UNKNOWN, /* an output's shape is not static: *unknown names it,
                       nothing reported */
} rt_infer_status;

/* Runs n's inference at run time; on RT_INFER_OK every output's type is static.
 */
rt_infer_status rt_infer_node(ir_graph *g, ir_node *n, dg_context *dg, const rt_value_source *src,
                              ir_value **unknown);

/* Copies every graph output (src->host, then src->defined for its run-time type) into
 * res->outputs, in g->outputs order. False after a fetch that failed (reported), or after
 * out_of_memory(src->user, v) for the output v whose copy could not be allocated (it reports that
 * the executor's way and returns false). */
bool rt_collect_outputs(ir_graph *g, rt_result *res, const rt_value_source *src,
                        bool (*out_of_memory)(void *user, const ir_value *v));

/* The storage dtypes only the CPU executor converts (f64, i16, u16, u32, u64): false after
 * reporting the first value of g that has one, naming `backend`. */
bool rt_check_storage(const ir_graph *g, const char *backend, dg_context *dg);

/* Fills res->times from per-op totals: the ops that ran, most time first. */
void rt_collect_times(rt_result *res, const rt_op_time times[IR_OP_COUNT]);

/* Whether input i of n is the first occurrence of its value among n's inputs: a
 * node reading a value twice is one consumer when counting down its remaining
 * readers. */
bool rt_first_read(const ir_node *n, uint32_t i);

/* ---- host data as the CPU kernels see it ---- */

/* A kn_tensor of type t's dims at data, labelled `label` (the dtype the kernel is told: f32 for
 * every float storage dtype, see kernels/kernels.h). */
kn_tensor rt_tensor_view(const ir_type *t, void *data, ir_dtype label);

/* Converts n values of dtype `from` into dtype `to`: floats (f16, bf16, f32, f64) each rounded to
 * the nearest value of `to` (f64 to a 16-bit dtype through f32); the wide integers (i16, u16,
 * u32, u64) to and from i64, wrapping like a C conversion, u64 by its bit pattern. */
void rt_convert(ir_dtype from, const void *src, ir_dtype to, void *dst, size_t n);

/* ---- scratch buffers: one node's converted operands ---- */

typedef VEC(rt_buffer *) rt_buffers;

/* A buffer of nbytes from pool, held in scratch until rt_scratch_release; NULL when the pool is
 * out of memory (the caller reports it its way). */
void *rt_scratch_get(rt_buffers *scratch, rt_pool *pool, size_t nbytes);
/* Every scratch buffer back to pool. */
void rt_scratch_release(rt_buffers *scratch, rt_pool *pool);

/* ---- views and releasing values ---- */

/* Whether n may share its input's buffers instead of computing (a view op with one output and
 * input 0 present); the executor still checks that dtype and size agree. */
bool rt_view_candidate(const ir_node *n);

/* How an executor counts down and releases its values (rt_release_after). */
typedef struct rt_releaser {
    /* The count of v's readers that have not run yet, NULL for a value not counted. */
    uint32_t *(*remaining)(void *user, const ir_value *v);
    /* Gives back v's buffers after its last reader (a graph output's are kept). */
    void (*release)(void *user, ir_value *v);
    void *user;
} rt_releaser;

/* After n has run: its scratch goes back to pool, and so do the inputs whose last reader n was
 * and the outputs that nothing reads. */
void rt_release_after(const ir_node *n, rt_buffers *scratch, rt_pool *pool, const rt_releaser *r);

/* ---- one run's state ---- */

/* What every executor holds for one run; the CPU and CUDA executors embed it as `run`, beside
 * their own slots for the values' bytes. */
typedef struct rt_exec {
    ir_graph *g;
    dg_context *dg;
    const rt_options *opts;
    rt_result *res;
    ir_type *saved;           /* every value's type before the run, restored by rt_exec_end */
    int64_t *symbols;         /* per graph symbol: its bound size, or -1 */
    VEC(kn_tensor) kin, kout; /* a CPU kernel's view of one node's operands */
    rt_buffers scratch;       /* host buffers of one node's converted operands */
    rt_op_time times[IR_OP_COUNT];
} rt_exec;

/* Starts a run of g: *out gets a new arena, opts the defaults when NULL, every value's type is
 * saved, every symbol unbound and every value's uses counted. */
void rt_exec_begin(rt_exec *x, ir_graph *g, const rt_options *opts, rt_result *out, dg_context *dg);
/* Restores every value's type and frees what rt_exec_begin allocated and the vectors (the scratch
 * buffers themselves go back to the executor's pool first; *out stays). */
void rt_exec_end(rt_exec *x);
/* Node n's CPU kernel call on the operands in x->kin and x->kout. */
kn_call rt_exec_kernel_call(const rt_exec *x, const ir_node *n);
/* Binds the inputs (runtime/inputs.h: symbols, given or generated data into x->res->inputs), then
 * hands each graph input and its bound tensor to bind(user, v, used), which makes it v's data.
 * False after reporting (the binding's error, or bind's). */
bool rt_exec_bind_inputs(rt_exec *x, const rt_tensor *given, size_t ngiven,
                         bool (*bind)(void *user, ir_value *v, const rt_tensor *used), void *user);

/* The time of `clock` in seconds. */
double rt_now(clockid_t clock);

#endif
