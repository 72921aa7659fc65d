/* The epilogue activation table (ir/acts.def) and its lookups. */
#include "ir/acts.h"

#include "base/check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const ir_act_info acts[] = {
#define ACT(NAME, ENUM, OP, APPROX, FROM, NP, P0, D0, P1, D1, CONV, GEMM)                          \
    [IR_ACT_##ENUM] = {#NAME, OP, APPROX, IR_ACT_FROM_##FROM, NP, {P0, P1}, {D0, D1}, CONV, GEMM},
#include "ir/acts.def"
#undef ACT
};
_Static_assert(FR_COUNT_OF(acts) == IR_ACT_COUNT, "ir/acts.def: one row per activation");

const ir_act_info *ir_act_get(ir_act act)
{
    FR_CHECK((unsigned)act < IR_ACT_COUNT);
    return &acts[act];
}

bool ir_act_lookup(const char *name, ir_act *out)
{
    for (unsigned i = 0; i < IR_ACT_COUNT; i++)
        if (strcmp(name, acts[i].name) == 0) {
            *out = (ir_act)i;
            return true;
        }
    return false;
}

bool ir_act_of_node(const ir_node *n, ir_act *out)
{
    for (unsigned i = 0; i < IR_ACT_COUNT; i++) {
        if (acts[i].op != n->op)
            continue;
        if (acts[i].approximate &&
            strcmp(ir_get_string(n, "approximate"), acts[i].approximate) != 0)
            continue;
        *out = (ir_act)i;
        return true;
    }
    return false;
}

bool ir_act_is_op(ir_op op)
{
    for (unsigned i = 0; i < IR_ACT_COUNT; i++)
        if (acts[i].op == op)
            return true;
    return false;
}

void ir_act_names(char *buf, size_t size)
{
    size_t len = 0;
    for (unsigned i = 0; i < IR_ACT_COUNT; i++) {
        const char *sep = i == 0 ? "" : i + 1 == IR_ACT_COUNT ? " or " : ", ";
        int k = snprintf(buf + len, size - len, "%s%s", sep, acts[i].name);
        FR_CHECK(k >= 0 && (size_t)k < size - len);
        len += (size_t)k;
    }
}
