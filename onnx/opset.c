/* Which opset spells an op how: the opset knowledge import's legacy conversions (legacy.c) and
 * export (export.c) share.
 *
 * Import reads each op from the oldest version whose semantics the catalog takes (first_opsets),
 * takes two op types of older opsets under their catalog names (renamed_ops), and knows which
 * attributes older forms had that later opsets moved to inputs (moved_attrs). Export writes each
 * node at the lowest opset that expresses it (ox_opset_node_needs) with the IR version that goes
 * with it. Where a Reduce op's axes moved from an attribute to an input is said once, for both. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <string.h>

/* ---- import: the oldest forms read ---------------------------------------------------------- */

/* The oldest version of each op whose semantics (for every attribute the catalog takes) import
 * reads. Versions between it and 21 changed only types, defaults that import fills in, or
 * attributes that are converted below. */
static const struct {
    ir_op op;
    int64_t first;
} first_opsets[] = {
    {IR_OP_Relu, 6}, {IR_OP_LeakyRelu, 6}, {IR_OP_Sigmoid, 6}, {IR_OP_Tanh, 6}, {IR_OP_Clip, 6},
    {IR_OP_HardSigmoid, 6}, {IR_OP_HardSwish, 14}, {IR_OP_Gelu, 20}, {IR_OP_Elu, 6},
    {IR_OP_Softplus, 1}, {IR_OP_Erf, 9}, {IR_OP_Exp, 6}, {IR_OP_Log, 6}, {IR_OP_Neg, 6},
    {IR_OP_Abs, 6}, {IR_OP_Sqrt, 6}, {IR_OP_Reciprocal, 6}, {IR_OP_Floor, 6}, {IR_OP_Ceil, 6},
    {IR_OP_Sin, 7}, {IR_OP_Cos, 7}, {IR_OP_Not, 1}, {IR_OP_Cast, 6}, {IR_OP_Dropout, 7},
    {IR_OP_Add, 7}, {IR_OP_Sub, 7}, {IR_OP_Mul, 7}, {IR_OP_Div, 7}, {IR_OP_Pow, 7},
    {IR_OP_PRelu, 7}, {IR_OP_Max, 6}, {IR_OP_Min, 6}, {IR_OP_Equal, 7}, {IR_OP_Less, 7},
    {IR_OP_Greater, 7}, {IR_OP_Where, 9}, {IR_OP_Conv, 1}, {IR_OP_ConvTranspose, 1},
    {IR_OP_MatMul, 1}, {IR_OP_Gemm, 7}, {IR_OP_BatchNormalization, 7},
    {IR_OP_LayerNormalization, 1}, {IR_OP_Softmax, 1}, {IR_OP_MaxPool, 8},
    {IR_OP_AveragePool, 7}, {IR_OP_GlobalAveragePool, 1}, {IR_OP_QuantizeLinear, 10},
    {IR_OP_DequantizeLinear, 10}, {IR_OP_Range, 11}, {IR_OP_ReduceMean, 1},
    {IR_OP_ReduceSum, 1}, {IR_OP_ReduceMax, 1}, {IR_OP_ReduceMin, 1}, {IR_OP_Transpose, 1},
    {IR_OP_Reshape, 5}, {IR_OP_Flatten, 1}, {IR_OP_Squeeze, 1}, {IR_OP_Unsqueeze, 1},
    {IR_OP_Identity, 1}, {IR_OP_Concat, 4}, {IR_OP_Split, 2}, {IR_OP_Slice, 1},
    {IR_OP_Expand, 8}, {IR_OP_Tile, 6}, {IR_OP_Gather, 1}, {IR_OP_Pad, 2}, {IR_OP_Trilu, 14},
    {IR_OP_Shape, 1}, {IR_OP_ConstantOfShape, 9}, {IR_OP_Constant, 1},
    /* Ops whose semantics have not changed since (later versions widened types only, or added
     * an attribute whose default is the earlier behaviour). */
    {IR_OP_Softsign, 1}, {IR_OP_Size, 1}, {IR_OP_LRN, 1}, {IR_OP_GlobalMaxPool, 1},
    {IR_OP_SpaceToDepth, 1}, {IR_OP_LogSoftmax, 1}, {IR_OP_Hardmax, 1}, {IR_OP_Sum, 6},
    {IR_OP_Mean, 6}, {IR_OP_Selu, 6}, {IR_OP_InstanceNormalization, 6}, {IR_OP_And, 7},
    {IR_OP_Or, 7}, {IR_OP_Xor, 7}, {IR_OP_Tan, 7}, {IR_OP_Asin, 7}, {IR_OP_Acos, 7},
    {IR_OP_Atan, 7}, {IR_OP_IsNaN, 9}, {IR_OP_NonZero, 9}, {IR_OP_Sign, 9}, {IR_OP_Sinh, 9},
    {IR_OP_Cosh, 9}, {IR_OP_Asinh, 9}, {IR_OP_Acosh, 9}, {IR_OP_Atanh, 9}, {IR_OP_Shrink, 9},
    {IR_OP_EyeLike, 9}, {IR_OP_MeanVarianceNormalization, 9}, {IR_OP_IsInf, 10},
    {IR_OP_Mod, 10}, {IR_OP_ThresholdedRelu, 10}, {IR_OP_ReverseSequence, 10},
    {IR_OP_MatMulInteger, 10}, {IR_OP_ConvInteger, 10}, {IR_OP_QLinearConv, 10},
    {IR_OP_QLinearMatMul, 10}, {IR_OP_GreaterOrEqual, 12}, {IR_OP_LessOrEqual, 12},
    {IR_OP_Celu, 12}, {IR_OP_Einsum, 12},
    /* Converted below: TopK's k an attribute before 10, Resize-10's scales-only form, axes
     * attributes before 18. */
    {IR_OP_TopK, 1}, {IR_OP_Resize, 10}, {IR_OP_ReduceProd, 1}, {IR_OP_ReduceL1, 1},
    {IR_OP_ReduceL2, 1}, {IR_OP_ReduceSumSquare, 1}, {IR_OP_ReduceLogSum, 1},
    {IR_OP_ReduceLogSumExp, 1}, {IR_OP_GroupNormalization, 18},
};

/* Op types that only older opsets have, and the catalog op each became; `last` is the last opset
 * of the type (the next one renamed or replaced it). */
static const struct {
    const char *type;
    ir_op op;
    int64_t first, last;
} renamed_ops[] = {
    {"Upsample", IR_OP_Resize, 7, 9},          /* Resize-10 replaced it */
    {"Scatter", IR_OP_ScatterElements, 9, 10}, /* ScatterElements-11 is Scatter renamed */
};

bool ox_legacy_lookup(const char *op_type, int64_t opset, ir_op *out)
{
    for (size_t i = 0; i < FR_COUNT_OF(renamed_ops); i++) {
        if (strcmp(renamed_ops[i].type, op_type) == 0 && opset >= renamed_ops[i].first &&
            opset <= renamed_ops[i].last) {
            *out = renamed_ops[i].op;
            return true;
        }
    }
    return false;
}

int64_t ox_op_first_opset(ir_op op)
{
    for (size_t i = 0; i < FR_COUNT_OF(first_opsets); i++)
        if (first_opsets[i].op == op)
            return first_opsets[i].first;
    return OX_MIN_OPSET;
}

/* Attributes of older forms that the catalog takes as inputs: copy_attr keeps them on the node
 * as they are, and ox_legacy_convert moves them. */
static const struct {
    ir_op op;
    int64_t before; /* the opset that moved it */
    const char *name;
} moved_attrs[] = {
    {IR_OP_Clip, 11, "min"},   {IR_OP_Clip, 11, "max"},     {IR_OP_Pad, 11, "pads"},
    {IR_OP_Pad, 11, "value"},  {IR_OP_Slice, 10, "starts"}, {IR_OP_Slice, 10, "ends"},
    {IR_OP_Slice, 10, "axes"}, {IR_OP_TopK, 10, "k"},       {IR_OP_Resize, 9, "scales"},
};

bool ox_legacy_attr(ir_op op, int64_t opset, const char *name)
{
    for (size_t i = 0; i < FR_COUNT_OF(moved_attrs); i++)
        if (moved_attrs[i].op == op && opset < moved_attrs[i].before &&
            strcmp(moved_attrs[i].name, name) == 0)
            return true;
    return false;
}

/* ---- Reduce axes ---------------------------------------------------------------------------- */

int64_t ox_reduce_axes_input_since(ir_op op)
{
    if (!(ir_op_info_get(op)->flags & IR_OPF_AXES_INPUT))
        return 0;
    return op == IR_OP_ReduceSum ? 13 : 18;
}

bool ox_reduce_noop_needed(const ir_node *n)
{
    const ir_attr *noop = ir_node_attr(n, "noop_with_empty_axes");
    if (!noop || noop->kind != IR_ATTR_INT || noop->v.i == 0)
        return false;
    const ir_attr *attr = ir_node_attr(n, "axes");
    if (attr && attr->count > 0)
        return false;
    const ir_value *axes = n->ninputs > 1 ? n->inputs[1] : NULL;
    return !axes ||
           (axes->kind == IR_VALUE_CONST && axes->type->rank == 1 && axes->type->dims[0] == 0);
}

/* ---- export: the opset a node needs --------------------------------------------------------- */

static bool has_attr_not(const ir_node *n, const char *name, int64_t absent)
{
    const ir_attr *a = ir_node_attr(n, name);
    return a && a->kind == IR_ATTR_INT && a->v.i != absent;
}

/* 16-bit quantized integers: QuantizeLinear/DequantizeLinear take them since opset 21. */
static bool is_16bit(ir_dtype dt) { return dt == IR_I16 || dt == IR_U16; }

int64_t ox_opset_node_needs(const ir_node *n)
{
    /* axes known only at run time: only the input form can say them; noop_with_empty_axes came
     * with it */
    int64_t axes_since = ox_reduce_axes_input_since(n->op);
    if (axes_since) {
        bool runtime_axes = n->ninputs > 1 && n->inputs[1] && n->inputs[1]->kind != IR_VALUE_CONST;
        return runtime_axes || ox_reduce_noop_needed(n) ? axes_since : 0;
    }
    switch (n->op) {
    case IR_OP_LayerNormalization:
        return 17;
    case IR_OP_HardSwish:
    case IR_OP_Trilu:
        return 14;
    case IR_OP_Reshape:
        return has_attr_not(n, "allowzero", 0) ? 14 : 0;
    case IR_OP_BatchNormalization:
        return has_attr_not(n, "training_mode", 0) ? 14 : 0;
    case IR_OP_Shape:
        return ir_node_attr(n, "start") || ir_node_attr(n, "end") ? 15 : 0;
    case IR_OP_Gelu:
        /* f32 Gelu goes to com.microsoft before opset 20 */
        return n->inputs[0]->type->dtype == IR_F32 ? 0 : 20;
    case IR_OP_CastLike:
        return 15;
    case IR_OP_ScatterND:
    case IR_OP_ScatterElements: {
        /* reduction add and mul came in opset 16, max and min in 18 */
        const char *r = ir_get_string(n, "reduction");
        if (strcmp(r, "max") == 0 || strcmp(r, "min") == 0)
            return 18;
        return strcmp(r, "none") == 0 ? 0 : 16;
    }
    case IR_OP_Resize:
        /* axes, antialias and keep_aspect_ratio_policy came in 18, half_pixel_symmetric in 19 */
        if (strcmp(ir_get_string(n, "coordinate_transformation_mode"), "half_pixel_symmetric") == 0)
            return 19;
        return ir_node_attr(n, "axes") || has_attr_not(n, "antialias", 0) ||
                       strcmp(ir_get_string(n, "keep_aspect_ratio_policy"), "stretch") != 0
                   ? 18
                   : 0;
    case IR_OP_Pad:
        return n->ninputs > 3 && n->inputs[3] ? 18 : 0;
    case IR_OP_Split: {
        /* before 18, no split sizes means equal parts, which needs a divisible dim */
        if (!has_attr_not(n, "num_outputs", 0) || (n->ninputs > 1 && n->inputs[1]))
            return 0;
        const ir_type *t = n->inputs[0]->type;
        int64_t axis = ir_get_int(n, "axis");
        if (t->rank > 0 && axis < 0)
            axis += t->rank;
        bool divisible = t->rank > 0 && axis >= 0 && axis < t->rank &&
                         ir_dim_is_static(t->dims[axis]) && t->dims[axis] % n->noutputs == 0;
        return divisible ? 0 : 18;
    }
    case IR_OP_AveragePool: {
        const int64_t *d;
        uint32_t count = ir_get_ints(n, "dilations", &d);
        for (uint32_t i = 0; i < count; i++)
            if (d[i] != 1)
                return 19;
        return 0;
    }
    case IR_OP_QuantizeLinear:
        if (has_attr_not(n, "output_dtype", 0) || has_attr_not(n, "block_size", 0) ||
            is_16bit(n->outputs[0]->type->dtype))
            return 21;
        return n->inputs[1]->type->dtype != IR_F32 ? 19 : 0; /* an f16/bf16 scale: since 19 */
    case IR_OP_DequantizeLinear:
        if (has_attr_not(n, "block_size", 0) || is_16bit(n->inputs[0]->type->dtype))
            return 21;
        return n->inputs[1]->type->dtype != IR_F32 ? 19 : 0;
    default:
        return 0;
    }
}

/* ONNX's IR version that goes with an opset. */
int64_t ox_opset_ir_version(int64_t opset)
{
    return opset >= 21 ? 10 : opset >= 19 ? 9 : 8;
}

