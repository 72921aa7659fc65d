/* The supports checks of the CUDA kernels in kernels/cuda/quant.cu and linalg.cu: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv,
 * ConvTranspose, Det, DFT and Einsum, and of rnn.cu: RNN, GRU, LSTM (kn_cuda_onnx_supports
 * hands them here).
 *
 * The kernels take the dtypes the CUDA executor stores (it holds no 16-bit integers): 8-bit
 * quantized operands, f32 scales and f32 float data where the CPU kernel computes in f32 anyway.
 * As elsewhere, what is not known yet (an unknown dtype) is not refused. */
#include "kernels/cuda/cuda_registry.h"

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernels.h"

#include <stdio.h>

/* The dtype of input i (output -1 - i for negative i); IR_DTYPE_UNKNOWN when absent or unknown. */
static ir_dtype dtype_of(const ir_node *n, int i)
{
    if (i < 0)
        return (uint32_t)(-1 - i) < n->noutputs ? n->outputs[-1 - i]->type->dtype
                                                : IR_DTYPE_UNKNOWN;
    return (uint32_t)i < n->ninputs && n->inputs[i] ? n->inputs[i]->type->dtype : IR_DTYPE_UNKNOWN;
}

/* Operand i (as above) is unknown or one of the `count` dtypes in `ok`; else why not, naming it
 * `what`. */
static bool dtype_in(const ir_node *n, int i, const ir_dtype *ok, int count, const char *what,
                     const char *allowed, char *why_not)
{
    ir_dtype dt = dtype_of(n, i);
    if (dt == IR_DTYPE_UNKNOWN)
        return true;
    for (int k = 0; k < count; k++)
        if (ok[k] == dt)
            return true;
    return kn_why(why_not, "%s is %s; the CUDA %s takes %s", what, ir_dtype_name(dt),
                  ir_op_name(n->op), allowed);
}

static const ir_dtype f32[] = {IR_F32}, i32[] = {IR_I32}, q8[] = {IR_I8, IR_U8};
static const ir_dtype dq_in[] = {IR_I8, IR_U8, IR_I32}, floats[] = {IR_F32, IR_F16, IR_BF16};

#define IS_F32(i, what) dtype_in(n, i, f32, 1, what, "f32", why_not)
#define IS_Q8(i, what)  dtype_in(n, i, q8, 2, what, "i8 or u8", why_not)

/* Operands i and j (a zero point and its tensor) have one dtype when both are known. */
static bool same_dtype(const ir_node *n, int i, int j, const char *what, char *why_not)
{
    ir_dtype a = dtype_of(n, i), b = dtype_of(n, j);
    if (a == IR_DTYPE_UNKNOWN || b == IR_DTYPE_UNKNOWN || a == b)
        return true;
    return kn_why(why_not, "%s is %s and its tensor %s", what, ir_dtype_name(a), ir_dtype_name(b));
}

static bool rank_in(const ir_node *n, int lo, int hi, char *why_not)
{
    const ir_type *t = n->ninputs && n->inputs[0] ? n->inputs[0]->type : NULL;
    if (!t || t->rank < 0 || (t->rank >= lo && t->rank <= hi))
        return true;
    return kn_why(why_not, "input 0 has rank %d; the CUDA %s takes rank %d to %d", t->rank,
                  ir_op_name(n->op), lo, hi);
}

/* At most 4 inputs of rank 8 have at most 32 labels: every equation's summed labels fit the
 * CUDA Einsum's walk, so only the input count is checked. */
_Static_assert(KN_CUDA_EINSUM_MAX_SUM >= KN_CUDA_EINSUM_MAX_INPUTS * IR_MAX_RANK,
               "the CUDA Einsum must walk every label of its inputs");
_Static_assert((int)KN_CUDA_EINSUM_MAX_INPUTS == (int)KC_EINSUM_MAX_INPUTS &&
                   (int)KN_CUDA_EINSUM_MAX_SUM == (int)KC_EINSUM_MAX_SUM,
               "the check and the kernel agree on the Einsum's limits");

bool kn_cuda_linalg_supports(const ir_graph *g, const ir_node *n, char *why_not)
{
    (void)g;
    switch (n->op) {
    case IR_OP_QuantizeLinear:
        return IS_F32(0, "x") && IS_F32(1, "the scale") && IS_Q8(-1, "the output") &&
               same_dtype(n, 2, -1, "the zero point", why_not);
    case IR_OP_DequantizeLinear:
        return dtype_in(n, 0, dq_in, 3, "x", "i8, u8 or i32", why_not) && IS_F32(1, "the scale") &&
               IS_F32(-1, "the output") && same_dtype(n, 2, 0, "the zero point", why_not);
    case IR_OP_DynamicQuantizeLinear: return IS_F32(0, "x");
    case IR_OP_MatMulInteger:
    case IR_OP_ConvInteger:
        return IS_Q8(0, "input 0") && IS_Q8(1, "input 1") &&
               same_dtype(n, 2, 0, "input 0's zero point", why_not) &&
               same_dtype(n, 3, 1, "input 1's zero point", why_not) &&
               dtype_in(n, -1, i32, 1, "the output", "i32", why_not) &&
               (n->op == IR_OP_MatMulInteger || rank_in(n, 3, 5, why_not));
    case IR_OP_QLinearMatMul:
    case IR_OP_QLinearConv:
        return IS_Q8(0, "input 0") && IS_Q8(3, "input 3") && IS_Q8(7, "y_zero_point") &&
               IS_F32(1, "input 0's scale") && IS_F32(4, "input 3's scale") &&
               IS_F32(6, "y_scale") && same_dtype(n, 2, 0, "input 0's zero point", why_not) &&
               same_dtype(n, 5, 3, "input 3's zero point", why_not) &&
               same_dtype(n, 7, -1, "y_zero_point", why_not) &&
               dtype_in(n, 8, i32, 1, "the bias", "i32", why_not) &&
               (n->op == IR_OP_QLinearMatMul || rank_in(n, 3, 5, why_not));
    case IR_OP_ConvTranspose:
        for (int i = 0; i < (int)n->ninputs; i++) {
            if (!dtype_in(n, i, floats, 3, "an input", "f32, f16 or bf16", why_not))
                return false;
            if (dtype_of(n, i) != IR_DTYPE_UNKNOWN && dtype_of(n, 0) != IR_DTYPE_UNKNOWN &&
                dtype_of(n, i) != dtype_of(n, 0))
                return kn_why(why_not, "inputs mix %s and %s; the CUDA kernel takes one dtype",
                              ir_dtype_name(dtype_of(n, 0)), ir_dtype_name(dtype_of(n, i)));
        }
        return rank_in(n, 3, 5, why_not);
    case IR_OP_Einsum: {
        if (n->ninputs > KN_CUDA_EINSUM_MAX_INPUTS)
            return kn_why(why_not, "%u inputs; the CUDA Einsum takes at most %d", n->ninputs,
                          KN_CUDA_EINSUM_MAX_INPUTS);
        for (int i = -1; i < (int)n->ninputs; i++) {
            if (!dtype_in(n, i, floats, 3, "an operand", "f32, f16 or bf16", why_not))
                return false;
            ir_dtype a = dtype_of(n, i), y = dtype_of(n, -1);
            if (i >= 0 && a != IR_DTYPE_UNKNOWN && y != IR_DTYPE_UNKNOWN && a != y)
                return kn_why(why_not,
                              "input %d is %s and the output %s; the CUDA Einsum takes one "
                              "dtype",
                              i, ir_dtype_name(a), ir_dtype_name(y));
        }
        return true;
    }
    case IR_OP_RNN:
    case IR_OP_GRU:
    case IR_OP_LSTM: {
        for (int i = 0; i < (int)n->ninputs; i++)
            if (!(i == 4 ? dtype_in(n, i, i32, 1, "sequence_lens", "i32", why_not)
                         : IS_F32(i, i == 0 ? "X" : "a weight, bias or state")))
                return false;
        return true;
    }
    case IR_OP_Det: return IS_F32(0, "the input");
    case IR_OP_DFT: return IS_F32(0, "the input");
    default: return kn_why(why_not, "%s has no CUDA kernel", ir_op_name(n->op));
    }
}
