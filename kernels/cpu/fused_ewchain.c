/* ElementwiseChain: an expression over broadcast inputs (docs/kernels.md), evaluated in one pass.
 *
 * The expression is parsed once per node into a postfix program (ir_ew_parse). The output is
 * walked in rows (fused_rows) and each row in blocks of BLOCK elements; every instruction runs
 * over a whole block, so the interpretation costs one switch per block and instruction, and the
 * intermediate values never leave a few KiB of stack. Contiguous inputs are read in place. */
#include "base/check.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK = 512 };

static const unsigned arity[IR_EW_COUNT] = {
#define ARITY(name, n) [IR_EW_##name] = n,
    IR_EW_FUNCS(ARITY)
#undef ARITY
};

static float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }
static float nan_min(float a, float b) { return (a != a || a < b) ? a : b; }
static float relu(float x) { return x < 0 ? 0.0f : x; }

typedef struct {
    const ir_ew_program *prog;
    const float *const *inputs; /* per input: data */
    const int64_t *off;         /* per input: offset of the row start */
    const int64_t *step;        /* per input: 1 (contiguous), 0 (broadcast along the row) */
    const float **arg;          /* the stack: where each slot's values are */
    float *slots;               /* the stack's own storage: depth blocks */
} evaluator;

static void eval_unary(ir_ew_opcode op, const float *a, float *y, int64_t n)
{
#define MAP(expr)                                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                              \
        float x = a[i];                                                                            \
        y[i] = (expr);                                                                             \
    }                                                                                              \
    break
    switch (op) {
    case IR_EW_neg: MAP(-x);
    case IR_EW_abs: MAP(fabsf(x));
    case IR_EW_exp: MAP(expf(x));
    case IR_EW_log: MAP(logf(x));
    case IR_EW_sqrt: MAP(sqrtf(x));
    case IR_EW_rsqrt: MAP(1.0f / sqrtf(x));
    case IR_EW_recip: MAP(1.0f / x);
    case IR_EW_sigmoid: MAP(kn_sigmoid(x));
    case IR_EW_tanh: MAP(tanhf(x));
    case IR_EW_relu: MAP(relu(x));
    case IR_EW_erf: MAP(erff(x));
    case IR_EW_gelu: MAP(kn_gelu_erf(x));
    case IR_EW_gelu_tanh: MAP(kn_gelu_tanh(x));
    case IR_EW_silu: MAP(x * kn_sigmoid(x));
    case IR_EW_hardswish: MAP(kn_hard_swish(x));
    case IR_EW_sin: MAP(sinf(x));
    case IR_EW_cos: MAP(cosf(x));
    case IR_EW_floor: MAP(floorf(x));
    case IR_EW_ceil: MAP(ceilf(x));
    case IR_EW_softplus: MAP(kn_softplus(x));
    case IR_EW_sign: MAP(x != x ? x : (float)((x > 0) - (x < 0))); /* NaN stays; -0 gives 0 */
    case IR_EW_round: MAP(nearbyintf(x)); /* the default rounding mode: half to even */
    case IR_EW_tan: MAP(tanf(x));
    case IR_EW_asin: MAP(asinf(x));
    case IR_EW_acos: MAP(acosf(x));
    case IR_EW_atan: MAP(atanf(x));
    case IR_EW_sinh: MAP(sinhf(x));
    case IR_EW_cosh: MAP(coshf(x));
    case IR_EW_asinh: MAP(asinhf(x));
    case IR_EW_acosh: MAP(acoshf(x));
    case IR_EW_atanh: MAP(atanhf(x));
    default: FR_UNREACHABLE();
    }
#undef MAP
}

static void eval_binary(ir_ew_opcode op, const float *a, const float *b, float *y, int64_t n)
{
#define ZIP(expr)                                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                              \
        float x = a[i], z = b[i];                                                                  \
        y[i] = (expr);                                                                             \
    }                                                                                              \
    break
    switch (op) {
    case IR_EW_add: ZIP(x + z);
    case IR_EW_sub: ZIP(x - z);
    case IR_EW_mul: ZIP(x * z);
    case IR_EW_div: ZIP(x / z);
    case IR_EW_pow: ZIP(powf(x, z));
    case IR_EW_max: ZIP(nan_max(x, z));
    case IR_EW_min: ZIP(nan_min(x, z));
    case IR_EW_leakyrelu: ZIP(kn_leaky_relu(x, z));
    case IR_EW_elu: ZIP(kn_elu(x, z));
    case IR_EW_thresholdedrelu: ZIP(x > z ? x : 0.0f);
    default: FR_UNREACHABLE();
    }
#undef ZIP
}

static void eval_ternary(ir_ew_opcode op, const float *a, const float *b, const float *c, float *y,
                         int64_t n)
{
    if (op == IR_EW_clip)
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_clip(a[i], b[i], c[i]);
    else if (op == IR_EW_hardsigmoid)
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_hard_sigmoid(a[i], b[i], c[i]);
    else if (op == IR_EW_shrink) /* shrink(x, bias, lambd), as ONNX Shrink */
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] < -c[i] ? a[i] + b[i] : a[i] > c[i] ? a[i] - b[i] : 0.0f;
    else
        FR_UNREACHABLE();
}

/* Evaluates n <= BLOCK elements starting at element `at` of the current row into y. A function
 * writes its result into the slot of its first argument; slot k's storage is slots[k * BLOCK]. */
static void eval_block(const evaluator *ev, int64_t at, int64_t n, float *y)
{
    const ir_ew_program *prog = ev->prog;
    uint32_t sp = 0;
    for (uint32_t pc = 0; pc < prog->len; pc++) {
        const ir_ew_instr *ins = &prog->code[pc];
        float *own = ev->slots + (size_t)sp * BLOCK;
        switch (ins->op) {
        case IR_EW_INPUT: {
            uint32_t k = ins->index;
            const float *src = ev->inputs[k] + ev->off[k];
            int64_t step = ev->step[k];
            if (step == 1) {
                ev->arg[sp++] = src + at;
            } else {
                for (int64_t i = 0; i < n; i++)
                    own[i] = src[(at + i) * step];
                ev->arg[sp++] = own;
            }
            break;
        }
        case IR_EW_CONST:
            for (int64_t i = 0; i < n; i++)
                own[i] = (float)ins->value;
            ev->arg[sp++] = own;
            break;
        default: {
            /* a function: its result goes into its first argument's slot */
            unsigned nargs = arity[ins->op];
            FR_CHECK(nargs >= 1 && nargs <= sp);
            const float **args = ev->arg + (sp - nargs);
            float *dst = ev->slots + (size_t)(sp - nargs) * BLOCK;
            if (nargs == 1)
                eval_unary(ins->op, args[0], dst, n);
            else if (nargs == 2)
                eval_binary(ins->op, args[0], args[1], dst, n);
            else
                eval_ternary(ins->op, args[0], args[1], args[2], dst, n);
            sp -= nargs - 1;
            ev->arg[sp - 1] = dst;
            break;
        }
        }
    }
    FR_CHECK(sp == 1);
    memcpy(y, ev->arg[0], (size_t)n * sizeof *y);
}

bool kn_cpu_ElementwiseChain(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    uint32_t ninputs = call->ninputs;
    if (ninputs + 1 > FUSED_MAX_OPERANDS)
        return kn_fail(call, "too many inputs (%u)", ninputs);
    ar_arena *arena = ar_new();
    ir_ew_program prog;
    const char *err;
    size_t err_at;
    if (!ir_ew_parse(arena, ir_get_string(call->node, "expr"), ninputs, &prog, &err, &err_at)) {
        ar_free(arena);
        return kn_fail(call, "in expr at column %zu: %s", err_at + 1, err);
    }
    const kn_tensor *ops[FUSED_MAX_OPERANDS];
    const float *inputs[FUSED_MAX_OPERANDS];
    ops[0] = y;
    for (uint32_t k = 0; k < ninputs; k++) {
        ops[k + 1] = &call->inputs[k];
        inputs[k] = call->inputs[k].data;
    }
    fused_rows rows;
    fused_rows_init(&rows, y->rank, y->dims, ops, (int)ninputs + 1);
    int64_t off[FUSED_MAX_OPERANDS];
    const float **arg = ar_alloc_array(arena, prog.depth, sizeof *arg);
    float *slots = ar_alloc_array(arena, (size_t)prog.depth * BLOCK, sizeof *slots);
    evaluator ev = {&prog, inputs, off + 1, rows.step + 1, arg, slots};
    float *Y = y->data;
    for (int64_t r = 0; r < rows.nrows; r++) {
        fused_rows_offsets(&rows, r, off);
        for (int64_t at = 0; at < rows.len; at += BLOCK) {
            int64_t n = rows.len - at < BLOCK ? rows.len - at : BLOCK;
            eval_block(&ev, at, n, Y + off[0] + at);
        }
    }
    ar_free(arena);
    return true;
}
