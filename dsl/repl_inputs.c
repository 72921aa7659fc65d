/* What a replacement's inputs are, decided before any graph is seen: the number of implicit
 * operands against the target's arity, and an ElementwiseChain `expr` parsed against the number
 * of its operands. Both would otherwise fail only when the rule fires (or under --prove).
 *
 * Without a written operand list, the fused node takes the pattern's inputs (rewrite/plan_inputs.c,
 * default_inputs_of): each leaf once, and each op's inputs that no written operand took. Their
 * number is known up to the ops' own arity ranges; an error is reported only when every match
 * would give a count outside the target's. Actions and input-port attributes (`residual = @r`)
 * change the list after that, so rules with them are not counted. */
#include "dsl/sema.h"

#include "dsl/names.h"

#include <string.h>

enum { UNBOUNDED = UINT32_MAX };

typedef struct {
    uint32_t lo, hi; /* hi UNBOUNDED: a variadic op or an open list of one */
    bool unknown;    /* an optional op: present or absent gives other inputs; not counted */
} range;

static uint32_t add_sat(uint32_t a, uint32_t b)
{
    return a == UNBOUNDED || b == UNBOUNDED || a + b < a ? UNBOUNDED : a + b;
}

static void count_inputs(const dsl_pattern *p, uint8_t *seen, range *r)
{
    if (seen[p->id])
        return;
    seen[p->id] = 1;
    if (p->output_of)
        return; /* `@f.1`: computed inside the match, no input */
    if (p->kind == DSL_PAT_ANY) {
        r->lo = add_sat(r->lo, 1);
        r->hi = add_sat(r->hi, 1);
        return;
    }
    if (p->optional) {
        r->unknown = true;
        return;
    }
    for (uint32_t i = 0; i < p->noperands; i++)
        count_inputs(p->operands[i], seen, r);
    if (!p->open)
        return; /* exactly the written operands */
    uint32_t lo = UNBOUNDED, hi = 0;
    for (uint32_t i = 0; i < p->nops; i++) {
        const ir_op_info *info = ir_op_info_get(p->ops[i]);
        lo = info->min_inputs < lo ? info->min_inputs : lo;
        hi = info->max_inputs == IR_VARIADIC             ? UNBOUNDED
             : hi == UNBOUNDED || info->max_inputs <= hi ? hi
                                                         : info->max_inputs;
    }
    r->lo = add_sat(r->lo, lo > p->noperands ? lo - p->noperands : 0);
    r->hi = add_sat(r->hi, hi == UNBOUNDED ? UNBOUNDED : hi > p->noperands ? hi - p->noperands : 0);
}

/* The number of inputs the fused node gets, or unknown. */
static range replacement_inputs(dsl_rule_check *rc, const dsl_replacement *r)
{
    range out = {0, 0, false};
    uint32_t ports = 0;
    for (uint32_t i = 0; i < r->nattrs; i++)
        ports += r->attrs[i].kind == DSL_RATTR_INPUT;
    if (r->operands_explicit) {
        out.lo = out.hi = r->noperands + ports;
        return out;
    }
    if (ports || r->nactions) {
        out.unknown = true;
        return out;
    }
    const dsl_rule *rule = rc->rule;
    uint8_t *seen = ar_alloc(rc->rs->arena, rule->nnodes);
    memset(seen, 0, rule->nnodes);
    for (uint32_t k = 0; k < rule->nroots; k++)
        count_inputs(rule->roots[k], seen, &out);
    return out;
}

static void check_implicit_count(dsl_rule_check *rc, const dsl_replacement *r, range n)
{
    const ir_op_info *info = ir_op_info_get(r->op);
    bool too_many = info->max_inputs != IR_VARIADIC && n.lo > info->max_inputs;
    bool too_few = n.hi != UNBOUNDED && n.hi < info->min_inputs;
    if (!too_many && !too_few)
        return;
    const char *count = n.lo == n.hi ? ar_printf(rc->rs->arena, "%u", n.lo)
                        : too_many   ? ar_printf(rc->rs->arena, "at least %u", n.lo)
                                     : ar_printf(rc->rs->arena, "at most %u", n.hi);
    dsl_rule_error(rc, r->src_offset, r->src_len,
                   "%s takes %s, but with no operands written it takes every input of the "
                   "pattern, %s here; write the ones it takes: %s(@a, ...)",
                   info->name, dsl_count_inputs(rc, info), count, info->name);
}

/* ---- ElementwiseChain's expression ---------------------------------------------------------- */

static const dsl_rattr *find_attr(const dsl_replacement *r, const char *name)
{
    for (uint32_t i = 0; i < r->nattrs; i++)
        if (r->attrs[i].kind == DSL_RATTR_LITERAL && strcmp(r->attrs[i].value.name, name) == 0)
            return &r->attrs[i];
    return NULL;
}

/* Whether `name` is `text` with one character inserted. */
static bool one_inserted(const char *text, size_t len, const char *name)
{
    size_t n = strlen(name), i = 0;
    if (n != len + 1)
        return false;
    while (i < len && text[i] == name[i])
        i++;
    return memcmp(text + i, name + i + 1, len - i) == 0;
}

static void check_expr(dsl_rule_check *rc, const dsl_replacement *r, range n)
{
    const dsl_rattr *a = find_attr(r, "expr");
    if (!a || a->value.kind != IR_ATTR_STRING)
        return;
    const char *text = a->value.v.s;
    /* the string's text in the source: after `expr = "`, byte for byte unless it has escapes */
    const char *written = dsl_tok_text(rc->src, (dsl_token){a->src_offset, a->src_len, 0});
    const char *quote = memchr(written, '"', a->src_len);
    uint32_t start = quote ? (uint32_t)(quote - written) + 1 : 0;
    bool exact = quote && a->src_len >= start + 1 && a->src_len - start - 1 == strlen(text);
    uint32_t ninputs = n.unknown || n.lo != n.hi ? UNBOUNDED : n.lo;
    ir_ew_program prog;
    const char *err = NULL;
    size_t at = 0;
    if (ir_ew_parse(rc->rs->arena, text, ninputs, &prog, &err, &at))
        return;
    size_t len = 0;
    while (text[at + len] == '_' || (text[at + len] >= 'a' && text[at + len] <= 'z') ||
           (text[at + len] >= '0' && text[at + len] <= '9') ||
           (text[at + len] >= 'A' && text[at + len] <= 'Z'))
        len++;
    uint32_t off = exact ? a->src_offset + start + (uint32_t)at : a->src_offset;
    uint32_t span = exact ? (uint32_t)(len ? len : 1) : a->src_len;
    if (strcmp(err, "unknown function") == 0 || strcmp(err, "unknown name") == 0) {
        dsl_suggest s;
        dsl_suggest_init(&s, text + at, len);
        const char *missing_one = NULL; /* `ad` for add: too short for the edit distance */
        int near = 0;
        for (int op = IR_EW_CONST + 1; op < IR_EW_COUNT; op++) {
            const char *name = ir_ew_name((ir_ew_opcode)op);
            dsl_suggest_add(&s, name);
            if (one_inserted(text + at, len, name)) {
                missing_one = name;
                near++;
            }
        }
        char hint[128];
        if (!s.best && near == 1)
            snprintf(hint, sizeof hint, "; did you mean '%s'?", missing_one);
        else
            dsl_suggest_hint(&s, hint, sizeof hint);
        dsl_rule_error(rc, off, span, "expr: unknown function '%.*s'%s", (int)len, text + at,
                       s.best || near == 1 ? hint : "");
    } else if (strcmp(err, "input index out of range") == 0) {
        dsl_rule_error(rc, off, span,
                       "expr: '%.*s' reads an input the node does not have: ElementwiseChain "
                       "gets %u operand%s here (x0%s)",
                       (int)len, text + at, ninputs, ninputs == 1 ? "" : "s",
                       ninputs == 1   ? ""
                       : ninputs == 2 ? ", x1"
                                      : ar_printf(rc->rs->arena, " to x%u", ninputs - 1));
    } else if (strncmp(err, "this function", 13) == 0) {
        dsl_rule_error(rc, off, span, "expr: '%.*s'%s", (int)len, text + at, err + 13);
    } else {
        dsl_rule_error(rc, off, span, "expr: %s", err);
    }
}

void dsl_check_target_inputs(dsl_rule_check *rc, const dsl_replacement *r)
{
    if (!rc->ok)
        return; /* an unknown op or action leaves nothing to count */
    range n = replacement_inputs(rc, r);
    if (!r->operands_explicit && !n.unknown)
        check_implicit_count(rc, r, n);
    if (r->op == IR_OP_ElementwiseChain)
        check_expr(rc, r, n);
}
