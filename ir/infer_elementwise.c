/* Type inference of elementwise ops: unary activations and math (output = input's type), Cast,
 * Dropout, and the broadcasting binary and n-ary ops (numpy broadcasting, see ir_broadcast). */
#include "ir/infer_util.h"

#include <string.h>

/* ---- unary ---- */

/* Output 0 takes input 0's type (dtype, shape and layout). */
static bool unary(ir_graph *g, ir_node *n, dg_context *dg, unsigned allowed)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, allowed))
        return false;
    ir_value_set_type(g, n->outputs[0], ir_in(n, 0));
    return ir_infer_done(g, n, dg);
}

#define UNARY(op, allowed)                                                                         \
    bool ir_infer_##op(ir_graph *g, ir_node *n, dg_context *dg) { return unary(g, n, dg, allowed); }

UNARY(Relu, IR_DTS_SIGNED)
UNARY(LeakyRelu, IR_DTS_FLOAT)
UNARY(Sigmoid, IR_DTS_FLOAT)
UNARY(Tanh, IR_DTS_FLOAT)
UNARY(HardSigmoid, IR_DTS_FLOAT)
UNARY(HardSwish, IR_DTS_FLOAT)
UNARY(Elu, IR_DTS_FLOAT)
UNARY(Softplus, IR_DTS_FLOAT)
UNARY(Erf, IR_DTS_NUMERIC)
UNARY(Exp, IR_DTS_FLOAT)
UNARY(Log, IR_DTS_FLOAT)
UNARY(Neg, IR_DTS_SIGNED)
UNARY(Abs, IR_DTS_NUMERIC)
UNARY(Sqrt, IR_DTS_FLOAT)
UNARY(Reciprocal, IR_DTS_FLOAT)
UNARY(Floor, IR_DTS_FLOAT)
UNARY(Ceil, IR_DTS_FLOAT)
UNARY(Sin, IR_DTS_FLOAT)
UNARY(Cos, IR_DTS_FLOAT)
UNARY(Not, IR_DTS_BOOL)

bool ir_infer_Gelu(ir_graph *g, ir_node *n, dg_context *dg)
{
    const char *approximate = ir_get_string(n, "approximate");
    if (strcmp(approximate, "none") != 0 && strcmp(approximate, "tanh") != 0)
        return ir_node_error(g, n, dg, "approximate \"%s\" is not \"none\" or \"tanh\"",
                             approximate);
    return unary(g, n, dg, IR_DTS_FLOAT);
}

/* Clip(x, min?, max?): the bounds are scalars of x's dtype (or the min/max attributes). */
bool ir_infer_Clip(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    for (uint32_t i = 1; i <= 2; i++) {
        if (!ir_check_same_dtype(g, n, dg, 0, i) || !ir_check_scalar(g, n, dg, i))
            return false;
    }
    return unary(g, n, dg, IR_DTS_NUMERIC);
}

/* Cast: x's shape with the dtype named by `to` (an ONNX TensorProto code). */
bool ir_infer_Cast(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    int64_t to = ir_get_int(n, "to");
    ir_dtype dtype;
    if (!ir_dtype_from_onnx(to, &dtype))
        return ir_node_error(g, n, dg,
                             "to = %lld is not a supported type (1 f32, 10 f16, 16 bf16, 3 i8, "
                             "2 u8, 6 i32, 7 i64, 9 bool)",
                             (long long)to);
    ir_type y = *ir_in(n, 0);
    y.dtype = dtype;
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}

/* Dropout(data, ratio?, training_mode?) -> output, mask?: the mask is bool of data's shape. */
bool ir_infer_Dropout(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 1, IR_DTS_FLOAT) ||
        !ir_check_scalar(g, n, dg, 1) || !ir_check_dtype(g, n, dg, 2, IR_DTS_BOOL) ||
        !ir_check_scalar(g, n, dg, 2))
        return false;
    double ratio = ir_get_float(n, "ratio");
    if (!(ratio >= 0.0 && ratio < 1.0))
        return ir_node_error(g, n, dg, "ratio %g is not in [0, 1)", ratio);
    if (!unary(g, n, dg, IR_DTS_FLOAT))
        return false;
    if (n->noutputs > 1) {
        ir_type mask = *ir_in(n, 0);
        mask.dtype = IR_BOOL;
        ir_value_set_type(g, n->outputs[1], &mask);
    }
    return true;
}

/* ---- broadcasting ---- */

/* All inputs share one dtype in `allowed`; the output is their broadcast, with dtype `out` (or the
 * inputs' dtype when out is IR_DTYPE_UNKNOWN). */
static bool nary(ir_graph *g, ir_node *n, dg_context *dg, unsigned allowed, ir_dtype out)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        if (!ir_check_dtype(g, n, dg, i, allowed) || !ir_check_same_dtype(g, n, dg, 0, i))
            return false;
    }
    ir_type t;
    if (!ir_broadcast_inputs(g, n, dg, 0, n->ninputs - 1, &t))
        return false;
    t.dtype = out != IR_DTYPE_UNKNOWN ? out : ir_common_dtype(n, 0, n->ninputs - 1);
    ir_value_set_type(g, n->outputs[0], &t);
    return ir_infer_done(g, n, dg);
}

#define NARY(op, allowed, out)                                                                     \
    bool ir_infer_##op(ir_graph *g, ir_node *n, dg_context *dg)                                    \
    {                                                                                              \
        return nary(g, n, dg, allowed, out);                                                       \
    }

NARY(Add, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN)
NARY(Sub, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN)
NARY(Mul, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN)
NARY(Div, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN)
NARY(Max, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN)
NARY(Min, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN)
NARY(Equal, IR_DTS_ANY, IR_BOOL)
NARY(Less, IR_DTS_NUMERIC, IR_BOOL)
NARY(Greater, IR_DTS_NUMERIC, IR_BOOL)

/* Pow(base, exponent): the exponent may have another numeric dtype; the result has base's. */
bool ir_infer_Pow(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_NUMERIC) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_NUMERIC))
        return false;
    ir_type t;
    if (!ir_broadcast_inputs(g, n, dg, 0, 1, &t))
        return false;
    t.dtype = ir_in(n, 0)->dtype;
    ir_value_set_type(g, n->outputs[0], &t);
    return ir_infer_done(g, n, dg);
}

/* PRelu(x, slope): slope broadcasts to x one way; the result has x's type. */
bool ir_infer_PRelu(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_SIGNED) ||
        !ir_check_same_dtype(g, n, dg, 0, 1) ||
        !ir_check_unidirectional(g, n, dg, ir_in(n, 1), ir_in(n, 0), "slope"))
        return false;
    ir_value_set_type(g, n->outputs[0], ir_in(n, 0));
    return ir_infer_done(g, n, dg);
}

/* Where(condition, x, y): bool condition; x and y share a dtype; all three broadcast. */
bool ir_infer_Where(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_BOOL) ||
        !ir_check_same_dtype(g, n, dg, 1, 2))
        return false;
    ir_type t;
    if (!ir_broadcast_inputs(g, n, dg, 0, 2, &t))
        return false;
    t.dtype = ir_common_dtype(n, 1, 2);
    ir_value_set_type(g, n->outputs[0], &t);
    return ir_infer_done(g, n, dg);
}

/* ---- ops added for the exporters and ONNX Runtime's models (issue 13) ---- */

NARY(And, IR_DTS_BOOL, IR_BOOL)
NARY(Or, IR_DTS_BOOL, IR_BOOL)
NARY(Xor, IR_DTS_BOOL, IR_BOOL)
NARY(GreaterOrEqual, IR_DTS_NUMERIC, IR_BOOL)
NARY(LessOrEqual, IR_DTS_NUMERIC, IR_BOOL)
NARY(Sum, IR_DTS_FLOAT, IR_DTYPE_UNKNOWN)
NARY(Mean, IR_DTS_FLOAT, IR_DTYPE_UNKNOWN)

/* Mod(A, B): fmod=0 (the divisor's sign, Python's %) is defined on integers only. */
bool ir_infer_Mod(ir_graph *g, ir_node *n, dg_context *dg)
{
    int64_t fmod = ir_get_int(n, "fmod");
    if (fmod != 0 && fmod != 1)
        return ir_node_error(g, n, dg, "fmod = %lld is not 0 or 1", (long long)fmod);
    ir_dtype dt = ir_common_dtype(n, 0, 1);
    if (fmod == 0 && ir_dtype_is_float(dt))
        return ir_node_error(g, n, dg, "fmod = 0 is defined on integers only; %s needs fmod = 1",
                             ir_dtype_name(dt));
    return nary(g, n, dg, IR_DTS_NUMERIC, IR_DTYPE_UNKNOWN);
}

/* Predicates on floats: bool of the input's shape. */
static bool predicate(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!unary(g, n, dg, IR_DTS_FLOAT))
        return false;
    ir_type y = *n->outputs[0]->type;
    y.dtype = IR_BOOL;
    ir_value_set_type(g, n->outputs[0], &y);
    return true;
}

bool ir_infer_IsNaN(ir_graph *g, ir_node *n, dg_context *dg) { return predicate(g, n, dg); }
bool ir_infer_IsInf(ir_graph *g, ir_node *n, dg_context *dg) { return predicate(g, n, dg); }

UNARY(Softsign, IR_DTS_FLOAT)
UNARY(Sign, IR_DTS_NUMERIC)
UNARY(Round, IR_DTS_FLOAT)
UNARY(Tan, IR_DTS_FLOAT)
UNARY(Asin, IR_DTS_FLOAT)
UNARY(Acos, IR_DTS_FLOAT)
UNARY(Atan, IR_DTS_FLOAT)
UNARY(Sinh, IR_DTS_FLOAT)
UNARY(Cosh, IR_DTS_FLOAT)
UNARY(Asinh, IR_DTS_FLOAT)
UNARY(Acosh, IR_DTS_FLOAT)
UNARY(Atanh, IR_DTS_FLOAT)
UNARY(Selu, IR_DTS_FLOAT)
UNARY(Celu, IR_DTS_FLOAT)
UNARY(ThresholdedRelu, IR_DTS_FLOAT)
UNARY(Shrink, IR_DTS_NUMERIC)

/* BitShift(X, Y) {direction}: unsigned integers (u8, u16, u32, u64), broadcast. */
bool ir_infer_BitShift(ir_graph *g, ir_node *n, dg_context *dg)
{
    const char *dir = ir_get_string(n, "direction");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return ir_node_error(g, n, dg, "direction \"%s\" is not \"LEFT\" or \"RIGHT\"", dir);
    return nary(g, n, dg, IR_DT(IR_U8) | IR_DT(IR_U16) | IR_DT(IR_U32) | IR_DT(IR_U64),
                IR_DTYPE_UNKNOWN);
}

UNARY(Mish, IR_DTS_FLOAT)
UNARY(BitwiseNot, IR_DTS_INT)
NARY(BitwiseAnd, IR_DTS_INT, IR_DTYPE_UNKNOWN)
NARY(BitwiseOr, IR_DTS_INT, IR_DTYPE_UNKNOWN)
NARY(BitwiseXor, IR_DTS_INT, IR_DTYPE_UNKNOWN)
