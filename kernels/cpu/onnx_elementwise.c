/* Unary elementwise ONNX ops: activations, math functions, Not, Cast and Dropout.
 *
 * Each kernel maps its input to an output of the same element count. Float ops see f32 (the
 * executor widens f16/bf16); the ops that ONNX also defines on integers (Relu, Neg, Abs, Clip) run
 * on i8, u8, i32 and i64 in their own dtype. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/dropout_mask.h"

#include "base/check.h"

#include <string.h>

/* y[i] = expr for every element, with `v` bound to x[i] of type T. */
#define MAP(T, TO, call, expr)                                                                     \
    do {                                                                                           \
        const T *x_ = (call)->inputs[0].data;                                                      \
        TO *y_ = (call)->outputs[0].data;                                                          \
        int64_t n_ = (call)->inputs[0].numel;                                                      \
        for (int64_t i_ = 0; i_ < n_; i_++) {                                                      \
            T v = x_[i_];                                                                          \
            y_[i_] = (expr);                                                                       \
        }                                                                                          \
    } while (0)

#define MAP_F32(call, expr) MAP(float, float, call, expr)

/* The same expression over every integer dtype; false for a dtype it does not cover. */
#define MAP_INTS(call, expr)                                                                       \
    do {                                                                                           \
        switch ((call)->inputs[0].dtype) {                                                         \
        case IR_I8: MAP(int8_t, int8_t, call, expr); break;                                        \
        case IR_U8: MAP(uint8_t, uint8_t, call, expr); break;                                      \
        case IR_I32: MAP(int32_t, int32_t, call, expr); break;                                     \
        case IR_I64: MAP(int64_t, int64_t, call, expr); break;                                     \
        default: return unsupported(call);                                                         \
        }                                                                                          \
    } while (0)

static bool unsupported(const kn_call *call)
{
    return kn_fail(call, "input dtype %s is not supported", ir_dtype_name(call->inputs[0].dtype));
}

/* Output 0 holds as many elements as input 0, and input 0 has dtype `dt` (IR_DTYPE_UNKNOWN: any). */
static bool ready(const kn_call *call, ir_dtype dt)
{
    if (dt != IR_DTYPE_UNKNOWN && call->inputs[0].dtype != dt)
        return unsupported(call);
    return kn_check_numel(call, 0, call->inputs[0].numel);
}

/* Kernels of float-only ops that take no attributes: one line each. */
#define FLOAT_UNARY(Op, expr)                                                                      \
    bool kn_cpu_##Op(const kn_call *call)                                                          \
    {                                                                                              \
        if (!ready(call, IR_F32))                                                                  \
            return false;                                                                          \
        MAP_F32(call, expr);                                                                       \
        return true;                                                                               \
    }

FLOAT_UNARY(Sigmoid, kn_sigmoid(v))
FLOAT_UNARY(Tanh, tanhf(v))
FLOAT_UNARY(HardSwish, kn_hard_swish(v))
FLOAT_UNARY(Softplus, kn_softplus(v))
FLOAT_UNARY(Erf, erff(v))
FLOAT_UNARY(Exp, expf(v))
FLOAT_UNARY(Log, logf(v))
FLOAT_UNARY(Sqrt, sqrtf(v))
FLOAT_UNARY(Reciprocal, 1.0f / v)
FLOAT_UNARY(Floor, floorf(v))
FLOAT_UNARY(Ceil, ceilf(v))
FLOAT_UNARY(Sin, sinf(v))
FLOAT_UNARY(Cos, cosf(v))

bool kn_cpu_LeakyRelu(const kn_call *call)
{
    float alpha = (float)ir_get_float(call->node, "alpha");
    if (!ready(call, IR_F32))
        return false;
    MAP_F32(call, kn_leaky_relu(v, alpha));
    return true;
}

bool kn_cpu_HardSigmoid(const kn_call *call)
{
    float alpha = (float)ir_get_float(call->node, "alpha");
    float beta = (float)ir_get_float(call->node, "beta");
    if (!ready(call, IR_F32))
        return false;
    MAP_F32(call, kn_hard_sigmoid(v, alpha, beta));
    return true;
}

bool kn_cpu_Elu(const kn_call *call)
{
    float alpha = (float)ir_get_float(call->node, "alpha");
    if (!ready(call, IR_F32))
        return false;
    MAP_F32(call, kn_elu(v, alpha));
    return true;
}

bool kn_cpu_Gelu(const kn_call *call)
{
    const char *approx = ir_get_string(call->node, "approximate");
    if (!ready(call, IR_F32))
        return false;
    if (strcmp(approx, "none") == 0)
        MAP_F32(call, kn_gelu_erf(v));
    else if (strcmp(approx, "tanh") == 0)
        MAP_F32(call, kn_gelu_tanh(v));
    else
        return kn_fail(call, "approximate must be \"none\" or \"tanh\", not \"%s\"", approx);
    return true;
}

/* ---- ops defined on floats and integers ---------------------------------------------------- */

bool kn_cpu_Relu(const kn_call *call)
{
    if (!ready(call, IR_DTYPE_UNKNOWN))
        return false;
    if (call->inputs[0].dtype == IR_F32)
        MAP_F32(call, v < 0 ? 0.0f : v); /* max(0, x): NaN stays NaN */
    else
        MAP_INTS(call, v > 0 ? v : 0);
    return true;
}

bool kn_cpu_Neg(const kn_call *call)
{
    if (!ready(call, IR_DTYPE_UNKNOWN))
        return false;
    switch (call->inputs[0].dtype) {
    case IR_F32: MAP_F32(call, -v); break;
    case IR_I8: MAP(int8_t, int8_t, call, (int8_t)(uint8_t)(0u - (uint8_t)v)); break;
    case IR_I32: MAP(int32_t, int32_t, call, (int32_t)(0u - (uint32_t)v)); break;
    case IR_I64: MAP(int64_t, int64_t, call, (int64_t)(0u - (uint64_t)v)); break;
    default: return unsupported(call); /* u8 and bool have no negation in ONNX */
    }
    return true;
}

bool kn_cpu_Abs(const kn_call *call)
{
    if (!ready(call, IR_DTYPE_UNKNOWN))
        return false;
    /* the most negative integer stays itself, as in two's-complement C and numpy */
    switch (call->inputs[0].dtype) {
    case IR_F32: MAP_F32(call, fabsf(v)); break;
    case IR_I8: MAP(int8_t, int8_t, call, v < 0 ? (int8_t)(uint8_t)(0u - (uint8_t)v) : v); break;
    case IR_U8: MAP(uint8_t, uint8_t, call, v); break;
    case IR_I32: MAP(int32_t, int32_t, call, v < 0 ? (int32_t)(0u - (uint32_t)v) : v); break;
    case IR_I64: MAP(int64_t, int64_t, call, v < 0 ? (int64_t)(0u - (uint64_t)v) : v); break;
    default: return unsupported(call);
    }
    return true;
}

bool kn_cpu_Not(const kn_call *call)
{
    if (!ready(call, IR_BOOL))
        return false;
    MAP(uint8_t, uint8_t, call, (uint8_t)!v);
    return true;
}

/* Clip's bound: the optional input (opset 11+) when given, else the attribute (opset < 11),
 * else none (`none` holds the unbounded value). Integer inputs keep their bounds exact in *i. */
static bool clip_bound(const kn_call *call, uint32_t input, const char *attr, int64_t none,
                       double *f, int64_t *i)
{
    *f = none < 0 ? -INFINITY : INFINITY;
    *i = none;
    if (input < call->ninputs && call->inputs[input].data) {
        const kn_tensor *t = &call->inputs[input];
        if (t->numel != 1)
            return kn_fail(call, "%s must be a scalar, not %lld values", attr, (long long)t->numel);
        *f = kn_get_f64(t, 0);
        *i = t->dtype == IR_F32 ? kn_float_to_int(*f, IR_I64) : kn_get_int(t, 0);
    } else if (ir_node_attr(call->node, attr)) {
        *f = ir_get_float(call->node, attr);
        *i = kn_float_to_int(*f, IR_I64);
    }
    return true;
}

static inline int64_t clip_int(int64_t v, int64_t lo, int64_t hi)
{
    int64_t t = v < lo ? lo : v;
    return t > hi ? hi : t;
}

bool kn_cpu_Clip(const kn_call *call)
{
    double lo, hi;
    int64_t ilo, ihi;
    if (!ready(call, IR_DTYPE_UNKNOWN) || !clip_bound(call, 1, "min", INT64_MIN, &lo, &ilo) ||
        !clip_bound(call, 2, "max", INT64_MAX, &hi, &ihi))
        return false;
    if (call->inputs[0].dtype == IR_F32) {
        float l = (float)lo, h = (float)hi;
        MAP_F32(call, kn_clip(v, l, h));
    } else {
        MAP_INTS(call, clip_int(v, ilo, ihi)); /* integers too: hi wins when lo > hi */
    }
    return true;
}

/* ---- Cast ---------------------------------------------------------------------------------- */

/* Casts element i of x into element i of y. Floats to integers truncate toward zero and saturate
 * (kn_float_to_int); integers to narrower integers wrap like C and numpy; anything to bool is
 * `!= 0`; to float is the nearest value (the executor then rounds to f16/bf16 storage). */
static void cast_element(const kn_tensor *x, kn_tensor *y, int64_t i)
{
    if (y->dtype == IR_F32) {
        ((float *)y->data)[i] = (float)kn_get_f64(x, i);
    } else if (x->dtype == IR_F32) {
        kn_set_f64(y, i, ((const float *)x->data)[i]);
    } else {
        int64_t v = kn_wrap_int(kn_get_int(x, i), y->dtype);
        switch (y->dtype) {
        case IR_I8: ((int8_t *)y->data)[i] = (int8_t)v; break;
        case IR_U8:
        case IR_BOOL: ((uint8_t *)y->data)[i] = (uint8_t)v; break;
        case IR_I32: ((int32_t *)y->data)[i] = (int32_t)v; break;
        case IR_I64: ((int64_t *)y->data)[i] = v; break;
        default: FR_UNREACHABLE();
        }
    }
}

bool kn_cpu_Cast(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    if (!ready(call, IR_DTYPE_UNKNOWN))
        return false;
    if (x->dtype == y->dtype) { /* f16 -> f32 and the like arrive here as f32 -> f32 */
        if (x->numel)
            memcpy(y->data, x->data, (size_t)x->numel * ir_dtype_size(x->dtype));
        return true;
    }
    for (int64_t i = 0; i < x->numel; i++)
        cast_element(x, y, i);
    return true;
}

/* ---- Dropout ------------------------------------------------------------------------------- */

/* Inference: y = x and the optional mask is all true. Training mode (input 2 true) with a ratio
 * above 0 drops elements by the counter-based mask of kernels/dropout_mask.h, a pure function of
 * the seed attribute (0 when absent), the ratio and the element index: y = x * mask / (1 - ratio),
 * computed as x * scale, scale = 1 / (1 - ratio) in f32. */
bool kn_cpu_Dropout(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    bool training = call->ninputs > 2 && call->inputs[2].data && kn_get_int(&call->inputs[2], 0);
    double ratio = ir_get_float(call->node, "ratio");
    if (call->ninputs > 1 && call->inputs[1].data)
        ratio = kn_get_f64(&call->inputs[1], 0);
    if (training && !(ratio >= 0 && ratio < 1))
        return kn_fail(call, "ratio %g is not in [0, 1)", ratio);
    if (!ready(call, IR_DTYPE_UNKNOWN))
        return false;
    bool has_mask = call->noutputs > 1 && call->outputs[1].data;
    if (has_mask && !kn_check_numel(call, 1, x->numel))
        return false;
    if (!training || ratio == 0) {
        if (x->numel)
            memcpy(call->outputs[0].data, x->data, (size_t)x->numel * ir_dtype_size(x->dtype));
        if (has_mask)
            memset(call->outputs[1].data, 1, (size_t)x->numel);
        return true;
    }
    if (x->dtype != IR_F32)
        return unsupported(call);
    uint64_t seed = kn_dropout_seed(ir_get_int(call->node, "seed"));
    uint32_t threshold = kn_dropout_threshold(ratio);
    float scale = kn_dropout_scale(ratio);
    const float *X = x->data;
    float *Y = call->outputs[0].data;
    uint8_t *M = has_mask ? call->outputs[1].data : NULL;
    for (int64_t i = 0; i < x->numel; i++) {
        bool keep = kn_dropout_keep(seed, threshold, (uint64_t)i);
        Y[i] = keep ? X[i] * scale : 0.0f;
        if (M)
            M[i] = keep;
    }
    return true;
}
