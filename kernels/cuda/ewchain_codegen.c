/* ElementwiseChain code generation for NVRTC: the postfix program that ir_ew_parse compiled is
 * turned back into one nested C expression over the inputs, which kernels/cuda/ewchain.cu pastes
 * into its kernel template. Every function becomes a call of the prelude's fr_<name>, whose
 * semantics are the CPU reference's (NaN-propagating max/min, ReLU keeping NaN, ...). */
#include "kernels/cuda/cuda_registry.h"

#include "base/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t arity(ir_ew_opcode op)
{
    switch (op) {
#define ARITY(name, n)                                                                             \
    case IR_EW_##name: return n;
        IR_EW_FUNCS(ARITY)
#undef ARITY
    default: return 0;
    }
}

/* The constant v, exactly as the CPU evaluates it (the float nearest the parsed value), as a C++
 * float expression: a decimal literal with an `f` suffix (%.9g round-trips every float; ".0" is
 * added where it printed an integer, so that -0 stays a negative float zero), in parentheses when
 * negative; infinities and NaN, which have no literal (NVRTC rejects `inf`), by their bits. */
static const char *float_literal(ar_arena *arena, float v)
{
    if (isnan(v))
        return "__int_as_float(0x7fc00000)";
    if (isinf(v))
        return v > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
    char digits[32];
    snprintf(digits, sizeof digits, "%.9g", (double)v);
    const char *point = strpbrk(digits, ".e") ? "" : ".0";
    return ar_printf(arena, signbit(v) ? "(%s%sf)" : "%s%sf", digits, point);
}

const char *kn_cuda_ewchain_source(ar_arena *arena, const ir_ew_program *prog)
{
    const char **stack = ar_alloc_array(arena, prog->depth, sizeof *stack);
    uint32_t sp = 0;
    for (uint32_t i = 0; i < prog->len; i++) {
        const ir_ew_instr *ins = &prog->code[i];
        if (ins->op == IR_EW_INPUT) {
            FR_CHECK(sp < prog->depth);
            stack[sp++] = ar_printf(arena, "x%u", ins->index);
            continue;
        }
        if (ins->op == IR_EW_CONST) {
            FR_CHECK(sp < prog->depth);
            stack[sp++] = float_literal(arena, (float)ins->value);
            continue;
        }
        uint32_t n = arity(ins->op);
        FR_CHECK(n >= 1 && n <= 3 && sp >= n); /* ir_ew_parse made a well-formed program */
        const char **args = &stack[sp - n];
        const char *name = ir_ew_name(ins->op);
        const char *call =
            n == 1   ? ar_printf(arena, "fr_%s(%s)", name, args[0])
            : n == 2 ? ar_printf(arena, "fr_%s(%s, %s)", name, args[0], args[1])
                     : ar_printf(arena, "fr_%s(%s, %s, %s)", name, args[0], args[1], args[2]);
        sp -= n;
        stack[sp++] = call;
    }
    FR_CHECK(sp == 1);
    return stack[0];
}
