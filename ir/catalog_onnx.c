/* Attribute schemas of the ONNX ops in ir/ops.def: names, kinds, defaults and required flags
 * follow ONNX (opsets 11-21). docs/ops.md lists them with what each op's inference checks.
 *
 * Attributes that ONNX moved to inputs in later opsets (Reduce* axes, Squeeze/Unsqueeze axes, Split
 * split, Clip min/max, Dropout ratio) are still listed, so that graphs from older opsets load; the
 * inference reads the input when it is present and the attribute otherwise.
 *
 * Where ONNX's attribute is a tensor, the schema holds its scalar:
 *   ConstantOfShape value  a float; its dtype is carried by `dtype` (a TensorProto code, as Cast's
 *                          `to`), so an int64 fill survives import.
 *   Constant               value_float, value_floats, value_int, value_ints only; a Constant whose
 *                          `value` is a tensor is turned into a graph constant by ONNX import. */
#include "ir/catalog.h"

#include "base/check.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

/* Row builders: an optional attribute with its default, or a required one. */
#define INT(n, d) {n, IR_ATTR_INT, false, d, 0.0, NULL, NULL, 0}
#define FLOAT(n, d) {n, IR_ATTR_FLOAT, false, 0, d, NULL, NULL, 0}
#define STRING(n, d) {n, IR_ATTR_STRING, false, 0, 0.0, d, NULL, 0}
#define INTS(n) {n, IR_ATTR_INTS, false, 0, 0.0, NULL, NULL, 0} /* default: empty (absent) */
#define FLOATS(n) {n, IR_ATTR_FLOATS, false, 0, 0.0, NULL, NULL, 0}
#define REQ_INT(n) {n, IR_ATTR_INT, true, 0, 0.0, NULL, NULL, 0}
#define REQ_INTS(n) {n, IR_ATTR_INTS, true, 0, 0.0, NULL, NULL, 0}
#define REQ_STRING(n) {n, IR_ATTR_STRING, true, 0, 0.0, NULL, NULL, 0}

#define ATTRS(op, ...)                                                                             \
    const ir_attr_schema ir_attrs_##op[] = {__VA_ARGS__};                                          \
    const uint32_t ir_nattrs_##op = FR_COUNT_OF(ir_attrs_##op);
#define NO_ATTRS(op)                                                                               \
    const ir_attr_schema ir_attrs_##op[1] = {{0}};                                                 \
    const uint32_t ir_nattrs_##op = 0;

/* Shared attribute groups. */
#define CONV_COMMON                                                                                \
    STRING("auto_pad", "NOTSET"), INTS("dilations"), INT("group", 1), INTS("kernel_shape"),        \
        INTS("pads"), INTS("strides")
#define REDUCE_COMMON INTS("axes"), INT("keepdims", 1), INT("noop_with_empty_axes", 0)

/* ---- activations and unary math ---- */
NO_ATTRS(Relu)
ATTRS(LeakyRelu, FLOAT("alpha", 0.01))
NO_ATTRS(Sigmoid)
NO_ATTRS(Tanh)
/* opset < 11: bounds as attributes; the defaults are float's full range */
ATTRS(Clip, FLOAT("min", -FLT_MAX), FLOAT("max", FLT_MAX))
ATTRS(HardSigmoid, FLOAT("alpha", 0.2), FLOAT("beta", 0.5))
NO_ATTRS(HardSwish)
ATTRS(Gelu, STRING("approximate", "none"))
ATTRS(Elu, FLOAT("alpha", 1.0))
NO_ATTRS(Softplus)
NO_ATTRS(Erf)
NO_ATTRS(Exp)
NO_ATTRS(Log)
NO_ATTRS(Neg)
NO_ATTRS(Abs)
NO_ATTRS(Sqrt)
NO_ATTRS(Reciprocal)
NO_ATTRS(Floor)
NO_ATTRS(Ceil)
NO_ATTRS(Sin)
NO_ATTRS(Cos)
NO_ATTRS(Not)
/* `to` is an ONNX TensorProto code: 1 f32, 2 u8, 3 i8, 6 i32, 7 i64, 9 bool, 10 f16, 16 bf16 */
ATTRS(Cast, REQ_INT("to"), INT("saturate", 1))
/* opset < 12: ratio as an attribute; seed: 0 = unseeded */
ATTRS(Dropout, FLOAT("ratio", 0.5), INT("seed", 0))

/* ---- binary and n-ary math ---- */
NO_ATTRS(Add)
NO_ATTRS(Sub)
NO_ATTRS(Mul)
NO_ATTRS(Div)
NO_ATTRS(Pow)
NO_ATTRS(PRelu)
NO_ATTRS(Max)
NO_ATTRS(Min)
NO_ATTRS(Equal)
NO_ATTRS(Less)
NO_ATTRS(Greater)
NO_ATTRS(Where)

/* ---- linear algebra, convolution, pooling, normalization ---- */
ATTRS(Conv, CONV_COMMON)
ATTRS(ConvTranspose, CONV_COMMON, INTS("output_padding"), INTS("output_shape"))
NO_ATTRS(MatMul)
ATTRS(Gemm, FLOAT("alpha", 1.0), FLOAT("beta", 1.0), INT("transA", 0), INT("transB", 0))
/* spatial: opset < 9; only the default (per-channel statistics) is supported */
ATTRS(BatchNormalization, FLOAT("epsilon", 1e-5), FLOAT("momentum", 0.9),
      INT("training_mode", 0), INT("spatial", 1))
ATTRS(LayerNormalization, INT("axis", -1), FLOAT("epsilon", 1e-5), INT("stash_type", 1))
ATTRS(Softmax, INT("axis", -1))
ATTRS(MaxPool, STRING("auto_pad", "NOTSET"), INT("ceil_mode", 0), INTS("dilations"),
      REQ_INTS("kernel_shape"), INTS("pads"), INT("storage_order", 0), INTS("strides"))
ATTRS(AveragePool, STRING("auto_pad", "NOTSET"), INT("ceil_mode", 0), INT("count_include_pad", 0),
      INTS("dilations"), REQ_INTS("kernel_shape"), INTS("pads"), INTS("strides"))
NO_ATTRS(GlobalAveragePool)
/* output_dtype: a TensorProto code, 0 = the zero point's dtype (u8 without one) */
ATTRS(QuantizeLinear, INT("axis", 1), INT("saturate", 1), INT("block_size", 0),
      INT("output_dtype", 0))
ATTRS(DequantizeLinear, INT("axis", 1), INT("block_size", 0))
NO_ATTRS(Range)

/* ---- reductions ---- */
ATTRS(ReduceMean, REDUCE_COMMON)
ATTRS(ReduceSum, REDUCE_COMMON)
ATTRS(ReduceMax, REDUCE_COMMON)
ATTRS(ReduceMin, REDUCE_COMMON)

/* ---- data movement ---- */
ATTRS(Transpose, INTS("perm")) /* empty: reverse the axes */
ATTRS(Reshape, INT("allowzero", 0))
ATTRS(Flatten, INT("axis", 1))
ATTRS(Squeeze, INTS("axes"))
ATTRS(Unsqueeze, INTS("axes"))
NO_ATTRS(Identity)
ATTRS(Concat, REQ_INT("axis"))
/* num_outputs 0: as many as the node has */
ATTRS(Split, INT("axis", 0), INT("num_outputs", 0), INTS("split"))
NO_ATTRS(Slice)
NO_ATTRS(Expand)
NO_ATTRS(Tile)
ATTRS(Gather, INT("axis", 0))
ATTRS(Pad, STRING("mode", "constant"))
ATTRS(Trilu, INT("upper", 1))
/* end INT64_MAX: up to the rank (ONNX: absent) */
ATTRS(Shape, INT("start", 0), INT("end", INT64_MAX))
ATTRS(ConstantOfShape, FLOAT("value", 0.0), INT("dtype", 1))
ATTRS(Constant, FLOAT("value_float", 0.0), FLOATS("value_floats"), INT("value_int", 0),
      INTS("value_ints"))

/* ---- ops added for the exporters and ONNX Runtime's models (issue 13) ---- */

/* logic, comparison and predicates */
NO_ATTRS(And)
NO_ATTRS(Or)
NO_ATTRS(Xor)
NO_ATTRS(GreaterOrEqual)
NO_ATTRS(LessOrEqual)
NO_ATTRS(IsNaN)
ATTRS(IsInf, INT("detect_negative", 1), INT("detect_positive", 1))

/* arithmetic */
/* fmod 0: the remainder takes the divisor's sign (integers only); 1: C's fmod */
ATTRS(Mod, INT("fmod", 0))
NO_ATTRS(Sum)
NO_ATTRS(Mean)
NO_ATTRS(Softsign)
NO_ATTRS(Sign)
NO_ATTRS(Round)
NO_ATTRS(Tan)
NO_ATTRS(Asin)
NO_ATTRS(Acos)
NO_ATTRS(Atan)
NO_ATTRS(Sinh)
NO_ATTRS(Cosh)
NO_ATTRS(Asinh)
NO_ATTRS(Acosh)
NO_ATTRS(Atanh)
/* ONNX's defaults, to the digits the spec writes */
ATTRS(Selu, FLOAT("alpha", 1.67326319217681884765625), FLOAT("gamma", 1.05070102214813232421875))
ATTRS(Celu, FLOAT("alpha", 1.0))
ATTRS(ThresholdedRelu, FLOAT("alpha", 1.0))
ATTRS(Shrink, FLOAT("bias", 0.0), FLOAT("lambd", 0.5))

/* indexing, scatter and gather, index results */
ATTRS(GatherElements, INT("axis", 0))
ATTRS(GatherND, INT("batch_dims", 0))
/* reduction: "none", "add", "mul", "max" or "min" */
ATTRS(ScatterElements, INT("axis", 0), STRING("reduction", "none"))
ATTRS(ScatterND, STRING("reduction", "none"))
ATTRS(OneHot, INT("axis", -1))
NO_ATTRS(NonZero)
ATTRS(ArgMax, INT("axis", 0), INT("keepdims", 1), INT("select_last_index", 0))
ATTRS(ArgMin, INT("axis", 0), INT("keepdims", 1), INT("select_last_index", 0))
ATTRS(TopK, INT("axis", -1), INT("largest", 1), INT("sorted", 1))
ATTRS(CumSum, INT("exclusive", 0), INT("reverse", 0))
/* mode: "DCR" (depth, column, row) or "CRD" */
ATTRS(DepthToSpace, REQ_INT("blocksize"), STRING("mode", "DCR"))
ATTRS(SpaceToDepth, REQ_INT("blocksize"))
NO_ATTRS(Size)
ATTRS(CastLike, INT("saturate", 1))

/* more reductions */
ATTRS(ReduceProd, REDUCE_COMMON)
ATTRS(ReduceL1, REDUCE_COMMON)
ATTRS(ReduceL2, REDUCE_COMMON)
ATTRS(ReduceSumSquare, REDUCE_COMMON)
ATTRS(ReduceLogSum, REDUCE_COMMON)
ATTRS(ReduceLogSumExp, REDUCE_COMMON)

/* integer and quantized linear algebra */
NO_ATTRS(DynamicQuantizeLinear)
NO_ATTRS(MatMulInteger)
ATTRS(ConvInteger, CONV_COMMON)
NO_ATTRS(QLinearMatMul)
ATTRS(QLinearConv, CONV_COMMON)

/* normalization */
ATTRS(InstanceNormalization, FLOAT("epsilon", 1e-5))

/* resampling; docs/ops.md lists the modes */
ATTRS(Resize, INT("antialias", 0), INTS("axes"),
      STRING("coordinate_transformation_mode", "half_pixel"), FLOAT("cubic_coeff_a", -0.75),
      INT("exclude_outside", 0), FLOAT("extrapolation_value", 0.0),
      STRING("keep_aspect_ratio_policy", "stretch"), STRING("mode", "nearest"),
      STRING("nearest_mode", "round_prefer_floor"))

/* tensor contraction */
ATTRS(Einsum, REQ_STRING("equation"))

/* random generators: dtype a TensorProto code (RandomUniformLike: 0 = the input's dtype); seed a
 * float as ONNX has it, NaN when absent (the kernel then uses seed 0) */
ATTRS(RandomUniform, INT("dtype", 1), FLOAT("high", 1.0), FLOAT("low", 0.0), FLOAT("seed", NAN),
      REQ_INTS("shape"))
ATTRS(RandomUniformLike, INT("dtype", 0), FLOAT("high", 1.0), FLOAT("low", 0.0),
      FLOAT("seed", NAN))

/* log-softmax, hardmax and the classification losses (opset 13 semantics: one axis); the losses'
 * ignore_index has no default in ONNX: INT64_MIN stands for absent */
ATTRS(LogSoftmax, INT("axis", -1))
ATTRS(Hardmax, INT("axis", -1))
ATTRS(NegativeLogLikelihoodLoss, INT("ignore_index", INT64_MIN), STRING("reduction", "mean"))
ATTRS(SoftmaxCrossEntropyLoss, INT("ignore_index", INT64_MIN), STRING("reduction", "mean"))

/* more pooling, normalization, linear algebra and bit ops */
NO_ATTRS(GlobalMaxPool)
ATTRS(LRN, FLOAT("alpha", 0.0001), FLOAT("beta", 0.75), FLOAT("bias", 1.0), REQ_INT("size"))
static const int64_t mvn_axes[] = {0, 2, 3};
const ir_attr_schema ir_attrs_MeanVarianceNormalization[] = {
    {"axes", IR_ATTR_INTS, false, 0, 0.0, NULL, mvn_axes, 3}};
const uint32_t ir_nattrs_MeanVarianceNormalization = 1;
NO_ATTRS(Det)
/* direction: "LEFT" or "RIGHT" */
ATTRS(BitShift, REQ_STRING("direction"))

/* more indexing: EyeLike's dtype 0 = the input's */
ATTRS(EyeLike, INT("dtype", 0), INT("k", 0))
ATTRS(ReverseSequence, INT("batch_axis", 1), INT("time_axis", 0))
/* axis INT64_MIN: absent (the input flattened) */
ATTRS(Compress, INT("axis", INT64_MIN))

/* opset 17-21 additions: windows (output_datatype a TensorProto code), Mish, GroupNormalization
 * (opset 21's form: scale and bias per channel), bitwise ops */
ATTRS(HannWindow, INT("output_datatype", 1), INT("periodic", 1))
ATTRS(HammingWindow, INT("output_datatype", 1), INT("periodic", 1))
ATTRS(BlackmanWindow, INT("output_datatype", 1), INT("periodic", 1))
NO_ATTRS(Mish)
ATTRS(GroupNormalization, FLOAT("epsilon", 1e-5), REQ_INT("num_groups"), INT("stash_type", 1))
NO_ATTRS(BitwiseAnd)
NO_ATTRS(BitwiseOr)
NO_ATTRS(BitwiseXor)
NO_ATTRS(BitwiseNot)

/* recurrent layers: clip 0 = none; hidden_size 0 = from R; direction forward, reverse or
 * bidirectional; activation_alpha/beta only matter for activations other than the defaults */
#define RNN_COMMON                                                                                 \
    FLOATS("activation_alpha"), FLOATS("activation_beta"), FLOAT("clip", 0.0),                     \
        STRING("direction", "forward"), INT("hidden_size", 0), INT("layout", 0)
ATTRS(RNN, RNN_COMMON)
ATTRS(GRU, RNN_COMMON, INT("linear_before_reset", 0))
ATTRS(LSTM, RNN_COMMON, INT("input_forget", 0))

/* sampling at given coordinates: mode bilinear (opset 20: linear), nearest, bicubic (cubic);
 * padding_mode zeros, border, reflection */
ATTRS(GridSample, INT("align_corners", 0), STRING("mode", "bilinear"),
      STRING("padding_mode", "zeros"))

/* unpooling and the discrete Fourier transform (opset 17's form: axis an attribute) */
ATTRS(MaxUnpool, REQ_INTS("kernel_shape"), INTS("pads"), INTS("strides"))
ATTRS(DFT, INT("axis", 1), INT("inverse", 0), INT("onesided", 0))
