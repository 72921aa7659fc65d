/* Near misses in words: why a check failed, in the terms of the rule's own pattern. */
#include "matcher/internal.h"

#include "base/check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A value as a reader knows it: "'c1' (Conv)", "graph input 'x'", "constant 'w'". */
static void value_text(const ir_value *v, char *buf, size_t size)
{
    if (!v)
        snprintf(buf, size, "an omitted input");
    else if (v->kind == IR_VALUE_INPUT)
        snprintf(buf, size, "graph input '%s'", v->name);
    else if (v->kind == IR_VALUE_CONST)
        snprintf(buf, size, "constant '%s'", v->name);
    else
        snprintf(buf, size, "'%s' (%s)", v->name, ir_op_name(v->producer->op));
}

/* An attribute's value as the rules language writes it. */
void mt_attr_text(const ir_attr *a, char *buf, size_t size)
{
    size_t used = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < size)                                                                           \
            used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__);                        \
    } while (0)
    switch (a->kind) {
    case IR_ATTR_INT: PUT("%" PRId64, a->v.i); break;
    case IR_ATTR_FLOAT: PUT("%g", a->v.f); break;
    case IR_ATTR_STRING: PUT("\"%s\"", a->v.s); break;
    case IR_ATTR_INTS:
    case IR_ATTR_FLOATS:
        PUT("[");
        for (uint32_t i = 0; i < a->count; i++) {
            if (a->kind == IR_ATTR_INTS)
                PUT("%s%" PRId64, i ? ", " : "", a->v.ints[i]);
            else
                PUT("%s%g", i ? ", " : "", a->v.floats[i]);
        }
        PUT("]");
        break;
    }
#undef PUT
}

static void ops_text(const uint32_t *ops, uint32_t n, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? (i + 1 == n ? " or " : ", ") : "",
                                 ir_op_name((ir_op)ops[i]));
}

static void describe_op(const mt_check *c, const ir_value *v, const char *what, char *buf,
                        size_t size)
{
    char want[160], found[160];
    ops_text(c->op == MI_OP ? &c->args[1] : &c->args[2], c->op == MI_OP ? 1 : c->args[1], want,
             sizeof want);
    value_text(v, found, sizeof found);
    if (v && v->kind == IR_VALUE_NODE && v->out_index != 0)
        snprintf(buf, size, "%s: '%s' is output %u of %s, not its first output", what, v->name,
                 v->out_index, ir_op_name(v->producer->op));
    else
        snprintf(buf, size, "%s: expected %s, found %s", what, want, found);
}

/* A range of source text, whole or, when longer than room, cut before a token with " ...", never
 * inside one (`attr(@pw, ` told nothing). "" when the range lies outside the source. */
static void quote(const dg_source *src, uint32_t offset, uint32_t len, size_t room, char *buf,
                  size_t size)
{
    if (!src || offset + (size_t)len > src->len) {
        snprintf(buf, size, "?");
        return;
    }
    const char *text = src->text + offset;
    const char *more = "";
    size_t n = len;
    if (n > room) {
        while (room > 0 && text[room] != ' ' && text[room] != ',' && text[room] != '(')
            room--;
        n = room;
        more = " ...";
    }
    snprintf(buf, size, "%.*s%s", (int)n, text, more);
}

/* The failed condition in the rule's words; a condition inside a named predicate also names the
 * predicate and quotes its clause that failed. */
static void describe_guard(const mt_variant *v, const dsl_expr *failed, char *buf, size_t size)
{
    const dsl_expr *g = failed ? failed : v->rule->guard;
    const dg_source *src = v->rule->src;
    if (!src) {
        snprintf(buf, size, "the guard is not true");
        return;
    }
    /* the expression as the rule writes it: the outermost predicate call around g, or g */
    const dsl_expr *site = g;
    while (site->src && site->call)
        site = site->call;
    const char *lead = site == v->rule->guard ? "the guard" : "the guard's condition";
    size_t room = size > 64 ? size - 64 : 0;
    char call[512], clause[512];
    const dsl_predicate *pred = g->pred ? g->pred : g->call ? g->call->pred : NULL;
    if (!pred) {
        quote(src, g->src_offset, g->src_len, room, call, sizeof call);
        snprintf(buf, size, "%s `%s` is not true", lead, call);
        return;
    }
    quote(src, site->src_offset, site->src_len, room / 3, call, sizeof call);
    if (g->pred) /* the whole body failed: a single clause */
        quote(pred->src, pred->body_offset, pred->body_len, room / 3, clause, sizeof clause);
    else
        quote(pred->src, g->src_offset, g->src_len, room / 3, clause, sizeof clause);
    char head[256];
    quote(pred->src, pred->src_offset, pred->src_len, room / 4, head, sizeof head);
    snprintf(buf, size, "%s `%s` is not true: in pred %s, `%s` is not true", lead, call, head,
             clause);
}

void mt_describe_failure(const mt_automaton *a, const mt_variant *v, uint32_t depth,
                         ir_value *const *regs, const dsl_expr *failed, char *buf, size_t size)
{
    FR_CHECK(depth < v->nchecks);
    const mt_check *c = &v->checks[depth];
    char what[96], val[160], other[160];
    snprintf(what, sizeof what, "`%s`", c->pat && c->pat->text ? c->pat->text : "?");
    /* every check but the guard (whose argument is a variant) names a register first */
    const ir_value *r0 = c->op != MI_GUARD && c->nargs ? regs[c->args[0]] : NULL;
    switch (c->op) {
    case MI_OP:
    case MI_OPSET: describe_op(c, r0, what, buf, size); return;
    case MI_ARITY_EQ:
    case MI_ARITY_GE:
        snprintf(buf, size, "%s: %s '%s' has %u inputs; the pattern needs %s%u", what,
                 ir_op_name(r0->producer->op), r0->name, r0->producer->ninputs,
                 c->op == MI_ARITY_GE ? "at least " : "", c->args[1]);
        return;
    case MI_LOAD: {
        const ir_value *p = regs[c->args[1]];
        snprintf(buf, size, "%s: input %u of %s '%s' is omitted", what, c->args[2],
                 ir_op_name(p->producer->op), p->name);
        return;
    }
    case MI_CONST:
        value_text(r0, val, sizeof val);
        snprintf(buf, size, "%s: %s is not a constant", what, val);
        return;
    case MI_DTYPE:
        snprintf(buf, size, "%s: '%s' is %s, not %s", what, r0->name,
                 ir_dtype_name(r0->type->dtype), ir_dtype_name((ir_dtype)c->args[1]));
        return;
    case MI_LAYOUT:
        snprintf(buf, size, "%s: '%s' has layout %s, not %s", what, r0->name,
                 r0->type->layout ? ir_layout_name((ir_layout)r0->type->layout) : "(none)",
                 ir_layout_name((ir_layout)c->args[1]));
        return;
    case MI_RANK:
        snprintf(buf, size, "%s: '%s' has rank %d, not %u", what, r0->name, r0->type->rank,
                 c->args[1]);
        return;
    case MI_ATTR: {
        const ir_attr *want = a->attrs[c->args[1]];
        const ir_attr *have = ir_node_attr(r0->producer, want->name);
        mt_attr_text(want, val, sizeof val);
        if (have)
            mt_attr_text(have, other, sizeof other);
        else
            snprintf(other, sizeof other, "its default");
        snprintf(buf, size, "%s: %s '%s' has %s = %s, not %s", what, ir_op_name(r0->producer->op),
                 r0->name, want->name, other, val);
        return;
    }
    case MI_EQ:
        value_text(r0, val, sizeof val);
        value_text(regs[c->args[1]], other, sizeof other);
        snprintf(buf, size, "%s: %s and %s must be the same value", what, val, other);
        return;
    case MI_OUTPUT:
        value_text(r0, val, sizeof val);
        snprintf(buf, size, "%s: %s is not output %u of %s '%s'", what, val, c->args[2],
                 ir_op_name(regs[c->args[1]]->producer->op), regs[c->args[1]]->name);
        return;
    case MI_JOIN:
        value_text(regs[c->args[1]], val, sizeof val);
        snprintf(buf, size, "%s: no other consumer of %s to join", what, val);
        return;
    case MI_GUARD: describe_guard(v, failed, buf, size); return;
    default: FR_UNREACHABLE();
    }
}
