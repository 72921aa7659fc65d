/* Binary and n-ary ONNX ops with numpy broadcasting: Add, Sub, Mul, Div, Pow, PRelu, Max, Min,
 * Equal, Less, Greater and Where.
 *
 * Arithmetic runs in the operands' dtype: f32, or i8/u8/i32/i64. Integer Add/Sub/Mul wrap on
 * overflow (two's complement, like numpy and ONNX Runtime); integer Div truncates toward zero (the
 * ONNX spec, and C's `/`), and a zero divisor is a run-time error rather than a crash. */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <string.h>

/* A broadcast loop: y = expr over operands x (from a) and z (from b) of type T, writing TO. The
 * inner run is specialized for operands that vary along it or are broadcast across it. */
typedef void (*binary_fn)(kn_bcast *it, const void *a, const void *b, void *y, int64_t numel);

#define BINARY(fn, T, TO, expr)                                                                    \
    static void fn(kn_bcast *it, const void *a_, const void *b_, void *y_, int64_t numel)          \
    {                                                                                              \
        const T *pa = a_, *pb = b_;                                                                \
        TO *py = y_;                                                                               \
        int64_t n = it->run;                                                                       \
        for (int64_t o = 0; o < numel; o += n, kn_bcast_next(it)) {                                \
            const T *a = pa + it->off[0], *b = pb + it->off[1];                                    \
            TO *y = py + o;                                                                        \
            if (it->step[0] && it->step[1]) {                                                      \
                for (int64_t i = 0; i < n; i++) {                                                  \
                    T x = a[i], z = b[i];                                                          \
                    y[i] = (expr);                                                                 \
                }                                                                                  \
            } else if (it->step[0]) {                                                              \
                T z = b[0];                                                                        \
                for (int64_t i = 0; i < n; i++) {                                                  \
                    T x = a[i];                                                                    \
                    y[i] = (expr);                                                                 \
                }                                                                                  \
            } else {                                                                               \
                T x = a[0];                                                                        \
                for (int64_t i = 0; i < n; i++) {                                                  \
                    T z = b[i * it->step[1]];                                                      \
                    y[i] = (expr);                                                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* One loop per dtype an op supports; NULL where ONNX (or this executor) does not define it. */
typedef struct {
    binary_fn f32, i8, u8, i32, i64, boolean;
} binary_table;

static binary_fn pick(const binary_table *t, ir_dtype dt)
{
    switch (dt) {
    case IR_F32: return t->f32;
    case IR_I8: return t->i8;
    case IR_U8: return t->u8;
    case IR_I32: return t->i32;
    case IR_I64: return t->i64;
    case IR_BOOL: return t->boolean;
    default: return NULL;
    }
}

static bool shapes_mismatch(const kn_call *call)
{
    return kn_fail(call, "the operands do not broadcast to the output shape");
}

/* Runs y = a (op) b for a two-operand node, choosing the loop by the operands' dtype. */
static bool run_binary(const kn_call *call, const binary_table *t)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    if (a->dtype != b->dtype)
        return kn_fail(call, "operand dtypes differ: %s and %s", ir_dtype_name(a->dtype),
                       ir_dtype_name(b->dtype));
    binary_fn fn = pick(t, a->dtype);
    if (!fn)
        return kn_fail(call, "dtype %s is not supported", ir_dtype_name(a->dtype));
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, y, ins, 2))
        return shapes_mismatch(call);
    fn(&it, a->data, b->data, y->data, y->numel);
    return true;
}

/* Signed wrap-around arithmetic without undefined behaviour: computed in the unsigned type. */
#define WRAP(T, U, e) ((T)(U)(e))

/* ---- Add, Sub, Mul ------------------------------------------------------------------------- */

BINARY(add_f32, float, float, x + z)
BINARY(add_i8, int8_t, int8_t, (int8_t)(x + z))
BINARY(add_u8, uint8_t, uint8_t, (uint8_t)(x + z))
BINARY(add_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, (uint32_t)x + (uint32_t)z))
BINARY(add_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, (uint64_t)x + (uint64_t)z))
static const binary_table add_table = {add_f32, add_i8, add_u8, add_i32, add_i64, NULL};

BINARY(sub_f32, float, float, x - z)
BINARY(sub_i8, int8_t, int8_t, (int8_t)(x - z))
BINARY(sub_u8, uint8_t, uint8_t, (uint8_t)(x - z))
BINARY(sub_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, (uint32_t)x - (uint32_t)z))
BINARY(sub_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, (uint64_t)x - (uint64_t)z))
static const binary_table sub_table = {sub_f32, sub_i8, sub_u8, sub_i32, sub_i64, NULL};

BINARY(mul_f32, float, float, x *z)
BINARY(mul_i8, int8_t, int8_t, (int8_t)(x * z))
BINARY(mul_u8, uint8_t, uint8_t, (uint8_t)(x * z))
BINARY(mul_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, (uint32_t)x * (uint32_t)z))
BINARY(mul_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, (uint64_t)x * (uint64_t)z))
static const binary_table mul_table = {mul_f32, mul_i8, mul_u8, mul_i32, mul_i64, NULL};

bool kn_cpu_Add(const kn_call *call) { return run_binary(call, &add_table); }
bool kn_cpu_Sub(const kn_call *call) { return run_binary(call, &sub_table); }
bool kn_cpu_Mul(const kn_call *call) { return run_binary(call, &mul_table); }

/* ---- Div ----------------------------------------------------------------------------------- */

/* The most negative value divided by -1 overflows; it wraps to itself, as the others do. */
#define IDIV(T, MIN) (z == -1 ? (x == MIN ? x : (T)-x) : (T)(x / z))

BINARY(div_f32, float, float, x / z)
BINARY(div_i8, int8_t, int8_t, IDIV(int8_t, INT8_MIN))
BINARY(div_u8, uint8_t, uint8_t, (uint8_t)(x / z))
BINARY(div_i32, int32_t, int32_t, IDIV(int32_t, INT32_MIN))
BINARY(div_i64, int64_t, int64_t, IDIV(int64_t, INT64_MIN))
static const binary_table div_table = {div_f32, div_i8, div_u8, div_i32, div_i64, NULL};

bool kn_cpu_Div(const kn_call *call)
{
    const kn_tensor *b = &call->inputs[1];
    if (b->dtype != IR_F32 && call->outputs[0].numel > 0)
        for (int64_t i = 0; i < b->numel; i++)
            if (kn_get_int(b, i) == 0)
                return kn_fail(call, "integer division by zero (divisor element %lld)",
                               (long long)i);
    return run_binary(call, &div_table);
}

/* ---- Pow, PRelu ---------------------------------------------------------------------------- */

BINARY(pow_f32, float, float, powf(x, z))

/* Pow's base and exponent may have different dtypes (f32 or integers); the result has the base's
 * dtype, computed in double (exact for integer results below 2^53). */
static bool pow_mixed(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, y, ins, 2))
        return shapes_mismatch(call);
    if (y->dtype == IR_BOOL || a->dtype == IR_BOOL || b->dtype == IR_BOOL)
        return kn_fail(call, "Pow is not defined on bool");
    for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))
        for (int64_t i = 0; i < it.run; i++)
            kn_set_f64(y, o + i, pow(kn_get_f64(a, it.off[0] + i * it.step[0]),
                                     kn_get_f64(b, it.off[1] + i * it.step[1])));
    return true;
}

bool kn_cpu_Pow(const kn_call *call)
{
    if (call->inputs[0].dtype == IR_F32 && call->inputs[1].dtype == IR_F32) {
        static const binary_table pow_table = {.f32 = pow_f32};
        return run_binary(call, &pow_table);
    }
    return pow_mixed(call);
}

BINARY(prelu_f32, float, float, x < 0 ? z * x : x)
BINARY(prelu_i32, int32_t, int32_t, x < 0 ? WRAP(int32_t, uint32_t, (uint32_t)z * (uint32_t)x) : x)
BINARY(prelu_i64, int64_t, int64_t, x < 0 ? WRAP(int64_t, uint64_t, (uint64_t)z * (uint64_t)x) : x)

bool kn_cpu_PRelu(const kn_call *call)
{
    static const binary_table prelu_table = {.f32 = prelu_f32, .i32 = prelu_i32, .i64 = prelu_i64};
    return run_binary(call, &prelu_table);
}

/* ---- Max, Min (variadic) ------------------------------------------------------------------- */

/* numpy maximum/minimum: a NaN in either operand gives NaN. */
BINARY(max_f32, float, float, z > x || isnan(z) ? z : x)
BINARY(max_i8, int8_t, int8_t, z > x ? z : x)
BINARY(max_u8, uint8_t, uint8_t, z > x ? z : x)
BINARY(max_i32, int32_t, int32_t, z > x ? z : x)
BINARY(max_i64, int64_t, int64_t, z > x ? z : x)
static const binary_table max_table = {max_f32, max_i8, max_u8, max_i32, max_i64, NULL};

BINARY(min_f32, float, float, z < x || isnan(z) ? z : x)
BINARY(min_i8, int8_t, int8_t, z < x ? z : x)
BINARY(min_u8, uint8_t, uint8_t, z < x ? z : x)
BINARY(min_i32, int32_t, int32_t, z < x ? z : x)
BINARY(min_i64, int64_t, int64_t, z < x ? z : x)
static const binary_table min_table = {min_f32, min_i8, min_u8, min_i32, min_i64, NULL};

/* y = input 0 broadcast to the output, then y = f(y, input k) for each further input. */
static bool run_variadic(const kn_call *call, const binary_table *t)
{
    kn_tensor *y = &call->outputs[0];
    binary_fn fn = pick(t, y->dtype);
    if (!fn)
        return kn_fail(call, "dtype %s is not supported", ir_dtype_name(y->dtype));
    for (uint32_t k = 0; k < call->ninputs; k++)
        if (call->inputs[k].dtype != y->dtype)
            return kn_fail(call, "input %u has dtype %s, not %s", k,
                           ir_dtype_name(call->inputs[k].dtype), ir_dtype_name(y->dtype));
    if (!kn_broadcast_copy(&call->inputs[0], y, ir_dtype_size(y->dtype)))
        return shapes_mismatch(call);
    for (uint32_t k = 1; k < call->ninputs; k++) {
        kn_bcast it;
        const kn_tensor *ins[2] = {y, &call->inputs[k]};
        if (!kn_bcast_init(&it, y, ins, 2))
            return shapes_mismatch(call);
        fn(&it, y->data, call->inputs[k].data, y->data, y->numel); /* in place: same index */
    }
    return true;
}

bool kn_cpu_Max(const kn_call *call) { return run_variadic(call, &max_table); }
bool kn_cpu_Min(const kn_call *call) { return run_variadic(call, &min_table); }

/* ---- comparisons -> bool ------------------------------------------------------------------- */

#define COMPARISONS(name, op)                                                                      \
    BINARY(name##_f32, float, uint8_t, x op z)                                                     \
    BINARY(name##_i8, int8_t, uint8_t, x op z)                                                     \
    BINARY(name##_u8, uint8_t, uint8_t, x op z)                                                    \
    BINARY(name##_i32, int32_t, uint8_t, x op z)                                                   \
    BINARY(name##_i64, int64_t, uint8_t, x op z)

COMPARISONS(eq, ==)
COMPARISONS(lt, <)
COMPARISONS(gt, >)

bool kn_cpu_Equal(const kn_call *call)
{
    /* bool compares as its bytes (0 or 1), the u8 loop */
    static const binary_table t = {eq_f32, eq_i8, eq_u8, eq_i32, eq_i64, eq_u8};
    return run_binary(call, &t);
}

bool kn_cpu_Less(const kn_call *call)
{
    static const binary_table t = {lt_f32, lt_i8, lt_u8, lt_i32, lt_i64, NULL};
    return run_binary(call, &t);
}

bool kn_cpu_Greater(const kn_call *call)
{
    static const binary_table t = {gt_f32, gt_i8, gt_u8, gt_i32, gt_i64, NULL};
    return run_binary(call, &t);
}

/* ---- Where --------------------------------------------------------------------------------- */

#define WHERE_LOOP(T)                                                                              \
    do {                                                                                           \
        const uint8_t *c = cond->data;                                                             \
        const T *a = x->data, *b = z->data;                                                        \
        T *out = y->data;                                                                          \
        for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))                         \
            for (int64_t i = 0; i < it.run; i++)                                                   \
                out[o + i] = c[it.off[0] + i * it.step[0]] ? a[it.off[1] + i * it.step[1]]         \
                                                           : b[it.off[2] + i * it.step[2]];        \
    } while (0)

/* y = cond ? x : z elementwise over all three broadcast; any dtype, moved as bytes. */
bool kn_cpu_Where(const kn_call *call)
{
    const kn_tensor *cond = &call->inputs[0], *x = &call->inputs[1], *z = &call->inputs[2];
    kn_tensor *y = &call->outputs[0];
    if (cond->dtype != IR_BOOL)
        return kn_fail(call, "the condition must be bool, not %s", ir_dtype_name(cond->dtype));
    if (x->dtype != z->dtype || x->dtype != y->dtype)
        return kn_fail(call, "the branches have dtypes %s and %s", ir_dtype_name(x->dtype),
                       ir_dtype_name(z->dtype));
    kn_bcast it;
    const kn_tensor *ins[3] = {cond, x, z};
    if (!kn_bcast_init(&it, y, ins, 3))
        return shapes_mismatch(call);
    switch (ir_dtype_size(y->dtype)) {
    case 1: WHERE_LOOP(uint8_t); break;
    case 2: WHERE_LOOP(uint16_t); break;
    case 4: WHERE_LOOP(uint32_t); break;
    case 8: WHERE_LOOP(uint64_t); break;
    default: FR_UNREACHABLE();
    }
    return true;
}
