/* Internal to ir/: helpers shared by the per-op type inference in ir/infer_*.c.
 *
 * Conventions every ir_infer_<Op> follows:
 *   - an input's type may be partly unknown: dtype IR_DTYPE_UNKNOWN matches anything, rank -1 skips
 *     rank and dim checks (the output then has unknown rank unless the op fixes it);
 *   - static dims are checked exactly; a symbol matches itself; a static dim wins over a symbol or an
 *     unknown dim where the op requires the two to be equal (it is the only size that can run);
 *   - arithmetic on static dims saturates at IR_DIM_HUGE, so an impossible size never wraps around:
 *     ir_infer_done then reports it;
 *   - errors go through ir_node_error, which names the op and locates the node;
 *   - each function ends with `return ir_infer_done(g, n, dg);`. */
#ifndef FUSERULE_IR_INFER_UTIL_H
#define FUSERULE_IR_INFER_UTIL_H

#include "ir/catalog.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- errors ---- */

/* Reports "Op: message" located at n (its source text, or "graph: error: node y: Op: message" for a
 * built graph). Always returns false, so a check reads `return ir_node_error(...)`. */
bool ir_node_error(ir_graph *g, const ir_node *n, dg_context *dg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "[1,64,N,?]" (or "[*]"), allocated in g's arena: for messages. */
const char *ir_shape_str(ir_graph *g, const ir_type *t);
/* The name of input i, quoted for messages: "'x'". */
const char *ir_input_name(ir_graph *g, const ir_node *n, uint32_t i);

/* ---- inputs and outputs ---- */

/* Input i's type, or NULL when the input is omitted or past the node's inputs. */
static inline const ir_type *ir_in(const ir_node *n, uint32_t i)
{
    return i < n->ninputs && n->inputs[i] ? n->inputs[i]->type : NULL;
}
static inline bool ir_has_input(const ir_node *n, uint32_t i) { return ir_in(n, i) != NULL; }

/* The op's required inputs (the first min_inputs) are present and output counts within its
 * arity. ir_validate checks arity before inference; this guards built graphs. */
bool ir_check_arity(ir_graph *g, const ir_node *n, dg_context *dg);

/* A type of the given dtype and rank with every dim unknown (rank -1: unknown rank). */
ir_type ir_type_unknown(ir_dtype dtype, int rank);
/* Sets v's type to ir_type_unknown(dtype, rank). */
void ir_set_unknown(ir_graph *g, ir_value *v, ir_dtype dtype, int rank);

/* A result rank within IR_MAX_RANK (Unsqueeze, Gather, Expand, ... can grow it). */
bool ir_check_out_rank(ir_graph *g, const ir_node *n, dg_context *dg, int64_t rank);

/* Final checks on every output: rank within IR_MAX_RANK, no dim or element count above
 * IR_MAX_NUMEL. Returns false after reporting. */
bool ir_infer_done(ir_graph *g, ir_node *n, dg_context *dg);

/* ---- dtypes ---- */

#define IR_DT(dt) (1u << (dt))
enum {
    IR_DTS_FLOAT = IR_DT(IR_F32) | IR_DT(IR_F16) | IR_DT(IR_BF16) | IR_DT(IR_F64),
    IR_DTS_INT = IR_DT(IR_I8) | IR_DT(IR_U8) | IR_DT(IR_I32) | IR_DT(IR_I64) | IR_DT(IR_I16) |
                 IR_DT(IR_U16) | IR_DT(IR_U32) | IR_DT(IR_U64),
    IR_DTS_SIGNED = IR_DTS_FLOAT | IR_DT(IR_I8) | IR_DT(IR_I32) | IR_DT(IR_I64) | IR_DT(IR_I16),
    IR_DTS_NUMERIC = IR_DTS_FLOAT | IR_DTS_INT,
    IR_DTS_INDEX = IR_DT(IR_I32) | IR_DT(IR_I64),
    IR_DTS_QUANT = IR_DT(IR_I8) | IR_DT(IR_U8) | IR_DT(IR_I16) | IR_DT(IR_U16) | IR_DT(IR_I32),
    IR_DTS_BOOL = IR_DT(IR_BOOL),
    IR_DTS_ANY = IR_DTS_NUMERIC | IR_DTS_BOOL,
};

/* Input i (when present) has a dtype in `allowed`:
 * "Conv: input 'x' is i64; expected f32, f16 or bf16". */
bool ir_check_dtype(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, unsigned allowed);
/* Inputs i and j (when present) have the same dtype. */
bool ir_check_same_dtype(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, uint32_t j);
/* The first known dtype among the present inputs in [first, last]. */
ir_dtype ir_common_dtype(const ir_node *n, uint32_t first, uint32_t last);
/* ONNX TensorProto code -> dtype; false for codes outside the IR (strings, f64, ...). */
bool ir_dtype_from_onnx(int64_t code, ir_dtype *out);

/* ---- ranks, axes, dims ---- */

/* Input i (when present, rank known) has rank in [min, max]. */
bool ir_check_rank(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int min, int max);
/* Input i (when present, rank known) is a scalar: rank 0, or rank 1 with one element. */
bool ir_check_scalar(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i);
/* Normalizes axis (negative counts from the end) into [0, rank); `what` names it in the message. */
bool ir_norm_axis(ir_graph *g, const ir_node *n, dg_context *dg, int64_t axis, int rank,
                  const char *what, int *out);

/* Saturating at IR_DIM_HUGE: the first size that ir_infer_done refuses. */
#define IR_DIM_HUGE (IR_MAX_NUMEL + 1)
int64_t ir_sat_add(int64_t a, int64_t b); /* a, b >= 0 */
int64_t ir_sat_mul(int64_t a, int64_t b); /* a, b >= 0 */
/* Static dims: the saturated sum or product; symbolic ones: the expression (ir/dimexpr.c);
 * with an unknown dim: unknown. */
int64_t ir_dim_add(ir_graph *g, int64_t a, int64_t b);
int64_t ir_dim_mul(ir_graph *g, int64_t a, int64_t b);
/* Two dims that must be equal: false when both are static and differ; *out is the static one if
 * either is static, the symbol when both are the same symbol, else unknown. */
bool ir_dim_unify(int64_t a, int64_t b, int64_t *out);

/* Numpy broadcasting of a and b into *out (dims and rank; dtype and layout untouched). A static 1
 * takes the other dim; a static size other than 1 wins over a symbol or unknown (the only size
 * that can run); two different symbols give unknown. */
bool ir_broadcast(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *a, const ir_type *b,
                  ir_type *out);
/* Broadcasts every present input in [first, last] into *out, with the dtype of `first` and the
 * layout of the first input whose rank is the result's. */
bool ir_broadcast_inputs(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t first,
                         uint32_t last, ir_type *out);
/* `from` broadcasts to `to` one way (each of its dims is 1 or equal to to's): PRelu slope, Gemm C,
 * LayerNormalization scale. */
bool ir_check_unidirectional(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *from,
                             const ir_type *to, const char *what);

/* ---- values read from constant inputs ---- */

typedef enum {
    IR_READ_ERROR,   /* reported */
    IR_READ_UNKNOWN, /* the input is not a constant (or is omitted): the values are not known */
    IR_READ_KNOWN,
} ir_read_status;

/* Reads an integer input (i32 or i64, rank 0 or 1) holding at most `max` values. */
ir_read_status ir_read_ints(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int64_t *out,
                            uint32_t max, uint32_t *count);
/* Reads an integer vector input as dims where they are known: a constant's numbers, or a shape
 * value's elements (ir/shape_value.c: `Concat(Gather(Shape(x), 0), [12, 64])` gives
 * [batch, 12, 64]), each a number, a dim or unknown. */
ir_read_status ir_read_dims(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                            ir_sv_elem *out, uint32_t max, uint32_t *count);
/* Reads a one-element numeric input as a double. */
ir_read_status ir_read_scalar(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                              double *out);
/* The data of constant input i and its element count, for inputs of any rank. */
ir_read_status ir_read_const(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                             const void **data, int64_t *numel);
/* Element k of constant data of dtype dt (any IR dtype) as a double; i64 beyond 2^53 rounds. */
double ir_const_element(const void *data, ir_dtype dt, int64_t k);
/* The number of values an integer vector input holds, when its length is static; else -1. */
int64_t ir_input_length(const ir_node *n, uint32_t i);

/* Axes (at most IR_MAX_RANK) from input `input` when present, else from attribute `attr`; giving
 * both is an error. `*known` is false when the input is not a constant (then *count is 0). */
bool ir_read_axes_raw(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t input,
                      const char *attr, int64_t *vals, uint32_t *count, bool *known);
/* Normalizes axes against `rank` (known) into axes[], refusing duplicates. */
bool ir_norm_axes(ir_graph *g, const ir_node *n, dg_context *dg, const int64_t *vals,
                  uint32_t count, int rank, int *axes);

/* ---- windows: convolution and pooling ---- */

typedef struct ir_window {
    int spatial; /* number of spatial dims */
    int64_t kernel[IR_MAX_RANK];
    int64_t strides[IR_MAX_RANK];
    int64_t dilations[IR_MAX_RANK];
    int64_t pads[2 * IR_MAX_RANK]; /* begins, then ends (ONNX order) */
    const char *auto_pad;          /* NOTSET, SAME_UPPER, SAME_LOWER, VALID */
    bool ceil_mode;
} ir_window;

/* Reads kernel_shape (when `kernel_from_attr`), strides, dilations, pads and auto_pad for `spatial`
 * spatial dims, checking their counts and ranges. */
bool ir_window_read(ir_graph *g, const ir_node *n, dg_context *dg, int spatial,
                    bool kernel_from_attr, ir_window *w);
/* Output size of spatial dim k for input size `in` (a dim encoding). */
bool ir_window_out(ir_graph *g, const ir_node *n, dg_context *dg, const ir_window *w, int k,
                   int64_t in, int64_t *out);

/* Conv's output type for input x [N, C, D...] and weight w [M, C/group, k...] from the node's
 * group, kernel_shape, strides, dilations, pads and auto_pad (ir/infer_nn.c); shared by Conv,
 * ConvInteger and QLinearConv, which check dtypes and their other inputs themselves. */
bool ir_conv_output(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *x,
                    const ir_type *w, ir_type *y);

/* numpy matmul's output type for a and b (ir/infer_nn.c), in a's dtype; shared by MatMul,
 * MatMulInteger and QLinearMatMul. */
bool ir_matmul_output(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *a,
                      const ir_type *b, ir_type *y);

#endif
