/* The expression language of ElementwiseChain's `expr` (docs/kernels.md, "ElementwiseChain"):
 * its function table and the parser that compiles an expression into a stack program
 * (ir_ew_parse, ir.h). The op's schema and inference are in ir/catalog_fused.c. */
#include "ir/ir.h"

#include "base/check.h"
#include "base/vec.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned arity;
} ew_funcs[] = {
    [IR_EW_INPUT] = {"input", 0},
    [IR_EW_CONST] = {"const", 0},
#define IR_EW_ROW(fname, farity) [IR_EW_##fname] = {#fname, farity},
    IR_EW_FUNCS(IR_EW_ROW)
#undef IR_EW_ROW
};

const char *ir_ew_name(ir_ew_opcode op)
{
    FR_CHECK((unsigned)op < IR_EW_COUNT);
    return ew_funcs[op].name;
}

enum { EW_MAX_NESTING = 64, EW_MAX_CODE = 4096 };

typedef struct {
    const char *text;
    size_t pos;
    uint32_t ninputs;
    VEC(ir_ew_instr) code;
    uint32_t depth, max_depth;
    const char *err;
    size_t err_at;
} ew_parser;

static bool ew_error(ew_parser *p, size_t at, const char *msg)
{
    if (!p->err) {
        p->err = msg;
        p->err_at = at;
    }
    return false;
}

static void ew_skip_space(ew_parser *p)
{
    while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n')
        p->pos++;
}

static bool ew_emit(ew_parser *p, ir_ew_instr ins, unsigned pops)
{
    if (p->code.len >= EW_MAX_CODE)
        return ew_error(p, p->pos, "expression is too long");
    vec_push(&p->code, ins);
    p->depth = p->depth - pops + 1;
    if (p->depth > p->max_depth)
        p->max_depth = p->depth;
    return true;
}

static bool ew_number(ew_parser *p)
{
    const char *start = p->text + p->pos;
    char *end;
    double v = strtod(start, &end);
    if (end == start || !isfinite(v))
        return ew_error(p, p->pos, "expected a number");
    p->pos += (size_t)(end - start);
    return ew_emit(p, (ir_ew_instr){.op = IR_EW_CONST, .value = v}, 0);
}

static bool ew_expr(ew_parser *p, unsigned nesting);

/* name '(' expr {',' expr} ')' with the function's exact arity. */
static bool ew_call(ew_parser *p, size_t at, size_t len, unsigned nesting)
{
    unsigned op = IR_EW_COUNT;
    for (unsigned i = IR_EW_CONST + 1; i < IR_EW_COUNT; i++)
        if (strlen(ew_funcs[i].name) == len && memcmp(ew_funcs[i].name, p->text + at, len) == 0)
            op = i;
    if (op == IR_EW_COUNT)
        return ew_error(p, at, "unknown function");
    ew_skip_space(p);
    if (p->text[p->pos] != '(')
        return ew_error(p, p->pos, "expected '(' after the function name");
    p->pos++;
    unsigned nargs = 0;
    for (;;) {
        if (!ew_expr(p, nesting + 1))
            return false;
        nargs++;
        ew_skip_space(p);
        if (p->text[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->text[p->pos] != ')')
            return ew_error(p, p->pos, "expected ',' or ')'");
        p->pos++;
        break;
    }
    if (nargs != ew_funcs[op].arity)
        return ew_error(p, at, ew_funcs[op].arity == 1   ? "this function takes 1 argument"
                               : ew_funcs[op].arity == 2 ? "this function takes 2 arguments"
                                                         : "this function takes 3 arguments");
    return ew_emit(p, (ir_ew_instr){.op = (ir_ew_opcode)op}, nargs);
}

/* xN: an input reference. */
static bool ew_input(ew_parser *p, size_t at, size_t len)
{
    uint64_t index = 0;
    for (size_t i = 1; i < len; i++) {
        if (!isdigit((unsigned char)p->text[at + i]) || index > UINT32_MAX / 10)
            return ew_error(p, at, "bad input reference");
        index = index * 10 + (uint64_t)(p->text[at + i] - '0');
    }
    if (len < 2 || index >= p->ninputs)
        return ew_error(p, at, "input index out of range");
    return ew_emit(p, (ir_ew_instr){.op = IR_EW_INPUT, .index = (uint32_t)index}, 0);
}

static bool ew_expr(ew_parser *p, unsigned nesting)
{
    ew_skip_space(p);
    if (nesting > EW_MAX_NESTING)
        return ew_error(p, p->pos, "expression is nested too deeply");
    char c = p->text[p->pos];
    if (isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.')
        return ew_number(p);
    size_t at = p->pos;
    while (isalnum((unsigned char)p->text[p->pos]) || p->text[p->pos] == '_')
        p->pos++;
    size_t len = p->pos - at;
    if (len == 0)
        return ew_error(p, at, "expected an input, a number or a function");
    ew_skip_space(p);
    if (p->text[p->pos] == '(')
        return ew_call(p, at, len, nesting);
    if (p->text[at] == 'x')
        return ew_input(p, at, len);
    return ew_error(p, at, "unknown name");
}

bool ir_ew_parse(ar_arena *arena, const char *text, uint32_t ninputs, ir_ew_program *out,
                 const char **err, size_t *err_at)
{
    ew_parser p = {.text = text, .ninputs = ninputs};
    bool ok = ew_expr(&p, 0);
    if (ok) {
        ew_skip_space(&p);
        if (text[p.pos] != '\0')
            ok = ew_error(&p, p.pos, "unexpected text after the expression");
    }
    if (ok) {
        out->len = (uint32_t)p.code.len;
        out->depth = p.max_depth;
        out->code = ar_alloc_array(arena, p.code.len, sizeof *out->code);
        memcpy(out->code, p.code.items, p.code.len * sizeof *out->code);
    } else {
        *err = p.err;
        *err_at = p.err_at;
    }
    vec_free(&p.code);
    return ok;
}
