/* Logic, comparison and predicate ONNX ops with bool results: And, Or, Xor (bool operands),
 * GreaterOrEqual, LessOrEqual (numeric operands, numpy broadcasting), IsNaN and IsInf (floats).
 *
 * Integers compare as int64 and floats as double, so no comparison rounds (an i64 near 2^63 is not
 * squeezed through a double). NaN compares false with everything, as in IEEE 754 and numpy. */
#include "kernels/cpu/cpu_util.h"

#include <math.h>
#include <string.h>

typedef enum { CMP_GE, CMP_LE, LOGIC_AND, LOGIC_OR, LOGIC_XOR } pair_op;

static uint8_t compare(pair_op op, const kn_tensor *a, int64_t i, const kn_tensor *b, int64_t j)
{
    if (a->dtype == IR_F32) {
        double x = kn_get_f64(a, i), z = kn_get_f64(b, j);
        return op == CMP_GE ? x >= z : x <= z;
    }
    int64_t x = kn_get_int(a, i), z = kn_get_int(b, j);
    return op == CMP_GE ? x >= z : x <= z;
}

static uint8_t logic(pair_op op, uint8_t x, uint8_t z)
{
    x = x != 0;
    z = z != 0;
    return op == LOGIC_AND ? x & z : op == LOGIC_OR ? x | z : x ^ z;
}

/* y = a (op) b over the broadcast of a and b; y is bool. */
static bool run_pairs(const kn_call *call, pair_op op)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    bool is_logic = op >= LOGIC_AND;
    if (a->dtype != b->dtype)
        return kn_fail(call, "operand dtypes differ: %s and %s", ir_dtype_name(a->dtype),
                       ir_dtype_name(b->dtype));
    if (is_logic ? a->dtype != IR_BOOL : a->dtype == IR_BOOL)
        return kn_fail(call, "dtype %s is not supported", ir_dtype_name(a->dtype));
    if (y->dtype != IR_BOOL)
        return kn_fail(call, "the output must be bool, not %s", ir_dtype_name(y->dtype));
    kn_bcast it;
    const kn_tensor *ins[2] = {a, b};
    if (!kn_bcast_init(&it, y, ins, 2))
        return kn_fail(call, "the operands do not broadcast to the output shape");
    const uint8_t *pa = a->data, *pb = b->data;
    uint8_t *py = y->data;
    for (int64_t o = 0; o < y->numel; o += it.run, kn_bcast_next(&it))
        for (int64_t k = 0; k < it.run; k++) {
            int64_t i = it.off[0] + k * it.step[0], j = it.off[1] + k * it.step[1];
            py[o + k] = is_logic ? logic(op, pa[i], pb[j]) : compare(op, a, i, b, j);
        }
    return true;
}

bool kn_cpu_And(const kn_call *call)
{
    return run_pairs(call, LOGIC_AND);
}
bool kn_cpu_Or(const kn_call *call)
{
    return run_pairs(call, LOGIC_OR);
}
bool kn_cpu_Xor(const kn_call *call)
{
    return run_pairs(call, LOGIC_XOR);
}
bool kn_cpu_GreaterOrEqual(const kn_call *call)
{
    return run_pairs(call, CMP_GE);
}
bool kn_cpu_LessOrEqual(const kn_call *call)
{
    return run_pairs(call, CMP_LE);
}

/* ---- predicates on floats ------------------------------------------------------------------ */

static bool predicate_ready(const kn_call *call)
{
    if (call->inputs[0].dtype != IR_F32)
        return kn_fail(call, "input dtype %s is not supported",
                       ir_dtype_name(call->inputs[0].dtype));
    return kn_check_numel(call, 0, call->inputs[0].numel);
}

bool kn_cpu_IsNaN(const kn_call *call)
{
    if (!predicate_ready(call))
        return false;
    const float *x = call->inputs[0].data;
    uint8_t *y = call->outputs[0].data;
    for (int64_t i = 0; i < call->inputs[0].numel; i++)
        y[i] = isnan(x[i]) != 0;
    return true;
}

/* detect_negative / detect_positive choose which infinities count. */
bool kn_cpu_IsInf(const kn_call *call)
{
    bool neg = ir_get_int(call->node, "detect_negative") != 0;
    bool pos = ir_get_int(call->node, "detect_positive") != 0;
    if (!predicate_ready(call))
        return false;
    const float *x = call->inputs[0].data;
    uint8_t *y = call->outputs[0].data;
    for (int64_t i = 0; i < call->inputs[0].numel; i++)
        y[i] = isinf(x[i]) && (x[i] > 0 ? pos : neg);
    return true;
}
