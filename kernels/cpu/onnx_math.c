/* Arithmetic ONNX ops beyond the basic binary set: Mod, the variadic Sum and Mean, and unary math
 * (Softsign, Sign, Round, the trigonometric and hyperbolic functions, Selu, Celu, ThresholdedRelu,
 * Shrink).
 *
 * Floats are f32 (the executor widens f16/bf16). Integer Mod runs in int64 and is stored back
 * wrapped to the dtype; a zero divisor is a run-time error, as for Div. */
#include "kernels/cpu/cpu_util.h"

#include <math.h>
#include <string.h>

/* ---- Mod ----------------------------------------------------------------------------------- */

/* a mod b for b != 0: with fmod, C's remainder (the dividend's sign); without, Python's (the
 * divisor's sign). b == -1 is special-cased because INT64_MIN % -1 overflows in C. */
static int64_t int_mod(int64_t a, int64_t b, bool fmod_sign)
{
    if (b == -1)
        return 0;
    int64_t r = a % b;
    if (!fmod_sign && r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

bool kn_cpu_Mod(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    bool use_fmod = ir_get_int(call->node, "fmod") != 0;
    bool is_float = a->dtype == IR_F32;
    if (a->dtype != b->dtype || a->dtype != y->dtype)
        return kn_fail(call, "operand dtypes differ: %s and %s", ir_dtype_name(a->dtype),
                       ir_dtype_name(b->dtype));
    if (a->dtype == IR_BOOL)
        return kn_fail(call, "dtype bool is not supported");
    if (is_float && !use_fmod)
        return kn_fail(call, "fmod = 0 is defined on integers only");
    if (!is_float && y->numel > 0)
        for (int64_t i = 0; i < b->numel; i++)
            if (kn_get_int(b, i) == 0)
                return kn_fail(call, "integer modulo by zero (divisor element %lld)", (long long)i);
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, y, ins, 2))
        return kn_fail(call, "the operands do not broadcast to the output shape");
    for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))
        for (int64_t k = 0; k < it.run; k++) {
            int64_t i = it.off[0] + k * it.step[0], j = it.off[1] + k * it.step[1];
            if (is_float)
                ((float *)y->data)[o + k] = (float)fmod(kn_get_f64(a, i), kn_get_f64(b, j));
            else
                kn_set_int(y, o + k, int_mod(kn_get_int(a, i), kn_get_int(b, j), use_fmod));
        }
    return true;
}

/* ---- Sum, Mean ----------------------------------------------------------------------------- */

/* y = the sum of every input broadcast to y's shape, divided by the count for Mean. Summed in f32
 * in input order, as ONNX Runtime does. */
static bool run_sum(const kn_call *call, bool mean)
{
    kn_tensor *y = &call->outputs[0];
    for (uint32_t k = 0; k < call->ninputs; k++)
        if (call->inputs[k].dtype != IR_F32)
            return kn_fail(call, "input %u has dtype %s; Sum and Mean take floats", k,
                           ir_dtype_name(call->inputs[k].dtype));
    if (!kn_broadcast_copy(&call->inputs[0], y, sizeof(float)))
        return kn_fail(call, "the operands do not broadcast to the output shape");
    float *out = y->data;
    for (uint32_t k = 1; k < call->ninputs; k++) {
        kn_bcast it;
        const kn_tensor *ins[2] = {y, &call->inputs[k]};
        if (!kn_bcast_init(&it, y, ins, 2))
            return kn_fail(call, "the operands do not broadcast to the output shape");
        const float *x = call->inputs[k].data;
        for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))
            for (int64_t i = 0; i < it.run; i++)
                out[o + i] += x[it.off[1] + i * it.step[1]];
    }
    if (mean)
        for (int64_t i = 0; i < y->numel; i++)
            out[i] /= (float)call->ninputs;
    return true;
}

bool kn_cpu_Sum(const kn_call *call)
{
    return run_sum(call, false);
}
bool kn_cpu_Mean(const kn_call *call)
{
    return run_sum(call, true);
}

/* ---- unary math ---------------------------------------------------------------------------- */

static bool float_ready(const kn_call *call)
{
    if (call->inputs[0].dtype != IR_F32)
        return kn_fail(call, "input dtype %s is not supported",
                       ir_dtype_name(call->inputs[0].dtype));
    return kn_check_numel(call, 0, call->inputs[0].numel);
}

/* y[i] = expr with v = x[i], over f32. */
#define MAP_F32(call, expr)                                                                        \
    do {                                                                                           \
        const float *x_ = (call)->inputs[0].data;                                                  \
        float *y_ = (call)->outputs[0].data;                                                       \
        for (int64_t i_ = 0; i_ < (call)->inputs[0].numel; i_++) {                                 \
            float v = x_[i_];                                                                      \
            y_[i_] = (expr);                                                                       \
        }                                                                                          \
    } while (0)

#define FLOAT_UNARY(Op, expr)                                                                      \
    bool kn_cpu_##Op(const kn_call *call)                                                          \
    {                                                                                              \
        if (!float_ready(call))                                                                    \
            return false;                                                                          \
        MAP_F32(call, expr);                                                                       \
        return true;                                                                               \
    }

FLOAT_UNARY(Softsign, v / (1.0f + fabsf(v)))
FLOAT_UNARY(Round, nearbyintf(v)) /* the default rounding mode: half to even, as ONNX says */
FLOAT_UNARY(Tan, tanf(v))
FLOAT_UNARY(Asin, asinf(v))
FLOAT_UNARY(Acos, acosf(v))
FLOAT_UNARY(Atan, atanf(v))
FLOAT_UNARY(Sinh, sinhf(v))
FLOAT_UNARY(Cosh, coshf(v))
FLOAT_UNARY(Asinh, asinhf(v))
FLOAT_UNARY(Acosh, acoshf(v))
FLOAT_UNARY(Atanh, atanhf(v))

bool kn_cpu_Selu(const kn_call *call)
{
    float alpha = (float)ir_get_float(call->node, "alpha");
    float gamma = (float)ir_get_float(call->node, "gamma");
    if (!float_ready(call))
        return false;
    MAP_F32(call, v > 0 ? gamma * v : gamma * alpha * expm1f(v));
    return true;
}

/* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
bool kn_cpu_Celu(const kn_call *call)
{
    float alpha = (float)ir_get_float(call->node, "alpha");
    if (!float_ready(call))
        return false;
    if (alpha == 0.0f)
        return kn_fail(call, "alpha must not be 0");
    MAP_F32(call, v > 0 ? v : alpha * expm1f(v / alpha));
    return true;
}

bool kn_cpu_ThresholdedRelu(const kn_call *call)
{
    float alpha = (float)ir_get_float(call->node, "alpha");
    if (!float_ready(call))
        return false;
    MAP_F32(call, v > alpha ? v : 0.0f);
    return true;
}

/* Sign and Shrink are defined on integers too; they run through double (exact for every value
 * Shrink can produce from an integer of at most 32 bits, and Sign is -1, 0 or 1). */
bool kn_cpu_Sign(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    if (x->dtype == IR_BOOL)
        return kn_fail(call, "input dtype bool is not supported");
    if (!kn_check_numel(call, 0, x->numel))
        return false;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = x->dtype == IR_F32 ? kn_get_f64(x, i) : (double)kn_get_int(x, i);
        kn_set_f64(y, i, isnan(v) ? v : (v > 0) - (v < 0));
    }
    return true;
}

bool kn_cpu_Shrink(const kn_call *call)
{
    double bias = ir_get_float(call->node, "bias"), lambd = ir_get_float(call->node, "lambd");
    const kn_tensor *x = &call->inputs[0];
    kn_tensor *y = &call->outputs[0];
    if (x->dtype == IR_BOOL)
        return kn_fail(call, "input dtype bool is not supported");
    if (!kn_check_numel(call, 0, x->numel))
        return false;
    if (x->dtype == IR_F32) {
        float b = (float)bias, l = (float)lambd;
        MAP_F32(call, v < -l ? v + b : v > l ? v - b : 0.0f);
        return true;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        double v = kn_get_f64(x, i);
        kn_set_f64(y, i, v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
    return true;
}

/* ---- BitShift ------------------------------------------------------------------------------ */

/* Unsigned integers; a shift of the width or more gives 0, as in numpy. u8 comes as it is; u16,
 * u32 and u64 come widened to i64 (zero-extended, u64 by its bit pattern), so the shift is done on
 * the 64 bits as unsigned and the executor's store back to the narrow dtype drops what a left
 * shift pushed past its width. */
bool kn_cpu_BitShift(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    bool left = strcmp(ir_get_string(call->node, "direction"), "LEFT") == 0;
    bool narrow = a->dtype == IR_U8;
    if ((a->dtype != IR_U8 && a->dtype != IR_I64) || b->dtype != a->dtype || y->dtype != a->dtype)
        return kn_fail(call, "BitShift takes unsigned operands of one dtype");
    unsigned width = narrow ? 8 : 64;
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, y, ins, 2))
        return kn_fail(call, "the operands do not broadcast to the output shape");
    for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))
        for (int64_t k = 0; k < it.run; k++) {
            int64_t ia = it.off[0] + k * it.step[0], ib = it.off[1] + k * it.step[1];
            uint64_t v =
                narrow ? ((const uint8_t *)a->data)[ia] : (uint64_t)((const int64_t *)a->data)[ia];
            uint64_t s =
                narrow ? ((const uint8_t *)b->data)[ib] : (uint64_t)((const int64_t *)b->data)[ib];
            uint64_t r = s >= width ? 0 : left ? v << s : v >> s;
            if (narrow)
                ((uint8_t *)y->data)[o + k] = (uint8_t)r;
            else
                ((int64_t *)y->data)[o + k] = (int64_t)r;
        }
    return true;
}

/* ---- Mish, bitwise ops --------------------------------------------------------------------- */

/* x * tanh(softplus(x)) */
FLOAT_UNARY(Mish, v *tanhf(kn_softplus(v)))

typedef enum { BIT_AND, BIT_OR, BIT_XOR } bit_op;

/* Integers as their two's-complement bits; the result wraps back to the dtype's width. */
static bool run_bitwise(const kn_call *call, bit_op op)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    if (a->dtype != b->dtype || a->dtype == IR_F32 || a->dtype == IR_BOOL)
        return kn_fail(call, "bitwise ops take integer operands of one dtype");
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, y, ins, 2))
        return kn_fail(call, "the operands do not broadcast to the output shape");
    for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))
        for (int64_t k = 0; k < it.run; k++) {
            uint64_t x = (uint64_t)kn_get_int(a, it.off[0] + k * it.step[0]);
            uint64_t z = (uint64_t)kn_get_int(b, it.off[1] + k * it.step[1]);
            uint64_t r = op == BIT_AND ? x & z : op == BIT_OR ? x | z : x ^ z;
            kn_set_int(y, o + k, (int64_t)r);
        }
    return true;
}

bool kn_cpu_BitwiseAnd(const kn_call *call)
{
    return run_bitwise(call, BIT_AND);
}
bool kn_cpu_BitwiseOr(const kn_call *call)
{
    return run_bitwise(call, BIT_OR);
}
bool kn_cpu_BitwiseXor(const kn_call *call)
{
    return run_bitwise(call, BIT_XOR);
}

bool kn_cpu_BitwiseNot(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (x->dtype == IR_F32 || x->dtype == IR_BOOL)
        return kn_fail(call, "BitwiseNot takes integers");
    if (!kn_check_numel(call, 0, x->numel))
        return false;
    for (int64_t i = 0; i < x->numel; i++)
        kn_set_int(&call->outputs[0], i, (int64_t) ~(uint64_t)kn_get_int(x, i));
    return true;
}
