/* The canonical text of checked rules: `fuserule check` dumps, unit tests, and the keys that
 * find duplicate rules. A shared node is written in full where it first appears, and by name
 * (or by position, in keys) after that. Attributes are sorted by name. */
#include "dsl/sema.h"

#include "base/check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void dsl_buf_printf(dsl_buf *b, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    FR_CHECK(n >= 0);
    vec_reserve(&b->v, b->v.len + (size_t)n + 1);
    vsnprintf(b->v.items + b->v.len, (size_t)n + 1, fmt, again);
    va_end(again);
    b->v.len += (size_t)n;
}

void dsl_buf_free(dsl_buf *b)
{
    vec_free(&b->v);
}

typedef struct {
    const dsl_rule *rule;
    bool named;
    uint32_t *seen; /* per node id: 0, or its position in printing order */
    uint32_t next;
} printer;

static void put_string(dsl_buf *b, const char *s)
{
    dsl_buf_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            dsl_buf_printf(b, "\\%c", *s);
        else if (*s == '\n')
            dsl_buf_printf(b, "\\n");
        else if (*s == '\t')
            dsl_buf_printf(b, "\\t");
        else
            dsl_buf_printf(b, "%c", *s);
    }
    dsl_buf_printf(b, "\"");
}

/* The shortest form that reads back as the same double. */
static void put_double(dsl_buf *b, double v)
{
    char text[32];
    snprintf(text, sizeof text, "%.15g", v);
    if (strtod(text, NULL) != v)
        snprintf(text, sizeof text, "%.17g", v);
    dsl_buf_printf(b, "%s", text);
}

static void put_attr_value(dsl_buf *b, const ir_attr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT:
        dsl_buf_printf(b, "%" PRId64, a->v.i);
        break;
    case IR_ATTR_FLOAT:
        put_double(b, a->v.f);
        break;
    case IR_ATTR_STRING:
        put_string(b, a->v.s);
        break;
    case IR_ATTR_INTS:
    case IR_ATTR_FLOATS:
        dsl_buf_printf(b, "[");
        for (uint32_t i = 0; i < a->count; i++) {
            if (a->kind == IR_ATTR_INTS)
                dsl_buf_printf(b, "%s%" PRId64, i ? ", " : "", a->v.ints[i]);
            else {
                dsl_buf_printf(b, "%s", i ? ", " : "");
                put_double(b, a->v.floats[i]);
            }
        }
        dsl_buf_printf(b, "]");
        break;
    }
}

static void put_capture_ref(printer *pr, dsl_buf *b, const dsl_capture *cap)
{
    if (pr->named) {
        dsl_buf_printf(b, "%s%s", cap->is_let ? "" : "@", cap->name);
        return;
    }
    uint32_t id = cap->node->id;
    dsl_buf_printf(b, "%%%u", id < pr->rule->nnodes ? pr->seen[id] : 0);
}

static void put_preds(dsl_buf *b, const dsl_value_preds *p)
{
    if (p->is_const)
        dsl_buf_printf(b, ":const");
    if (p->dtype != IR_DTYPE_UNKNOWN)
        dsl_buf_printf(b, ":%s", ir_dtype_name(p->dtype));
    if (p->layout != IR_LAYOUT_NONE)
        dsl_buf_printf(b, ":%s", ir_layout_name(p->layout));
    if (p->rank >= 0)
        dsl_buf_printf(b, ":rank%d", p->rank);
}

static int compare_attrs(const void *a, const void *b)
{
    return strcmp((*(const ir_attr *const *)a)->name, (*(const ir_attr *const *)b)->name);
}

static int compare_rattrs(const void *a, const void *b)
{
    return strcmp((*(const dsl_rattr *const *)a)->value.name,
                  (*(const dsl_rattr *const *)b)->value.name);
}

/* `{a=1, b=[2, 3]}`, sorted by name. */
static void put_inline_attrs(dsl_buf *b, const ir_attr *attrs, uint32_t n)
{
    if (!n)
        return;
    const ir_attr **sorted = malloc(n * sizeof *sorted);
    FR_CHECK(sorted != NULL);
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = &attrs[i];
    qsort(sorted, n, sizeof *sorted, compare_attrs);
    dsl_buf_printf(b, "{");
    for (uint32_t i = 0; i < n; i++) {
        dsl_buf_printf(b, "%s%s=", i ? ", " : "", sorted[i]->name);
        put_attr_value(b, sorted[i]);
    }
    dsl_buf_printf(b, "}");
    free(sorted);
}

static void put_repl_attrs(printer *pr, dsl_buf *b, const dsl_rattr *attrs, uint32_t n)
{
    const dsl_rattr **sorted = malloc(n * sizeof *sorted);
    FR_CHECK(sorted != NULL);
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = &attrs[i];
    qsort(sorted, n, sizeof *sorted, compare_rattrs);
    dsl_buf_printf(b, " {");
    for (uint32_t i = 0; i < n; i++) {
        dsl_buf_printf(b, "%s%s=", i ? ", " : "", sorted[i]->value.name);
        if (sorted[i]->kind == DSL_RATTR_LITERAL)
            put_attr_value(b, &sorted[i]->value);
        else
            put_capture_ref(pr, b, sorted[i]->capture);
    }
    dsl_buf_printf(b, "}");
    free(sorted);
}

static void put_node(printer *pr, dsl_buf *b, const dsl_pattern *p)
{
    if (pr->seen[p->id]) {
        if (pr->named && p->capture)
            put_capture_ref(pr, b, p->capture);
        else if (pr->named && p->output_of && p->output_of->capture)
            dsl_buf_printf(b, "@%s.%u", p->output_of->capture->name, p->output_index);
        else
            dsl_buf_printf(b, "%%%u", pr->seen[p->id]);
        return;
    }
    pr->seen[p->id] = ++pr->next;
    bool shared = p->users > 1;
    if (!pr->named && shared)
        dsl_buf_printf(b, "%%%u=", pr->seen[p->id]);
    if (pr->named && p->capture && p->capture->is_let)
        dsl_buf_printf(b, "%s=", p->capture->name);
    if (p->kind == DSL_PAT_ANY && p->output_of) {
        if (pr->named && p->output_of->capture)
            dsl_buf_printf(b, "@%s.%u", p->output_of->capture->name, p->output_index);
        else
            dsl_buf_printf(b, "_.%u", p->output_index);
        put_preds(b, &p->preds);
        return;
    }
    if (p->kind == DSL_PAT_ANY) {
        if (pr->named && p->capture && !p->capture->is_let)
            dsl_buf_printf(b, "@%s", p->capture->name);
        else
            dsl_buf_printf(b, "_");
        put_preds(b, &p->preds);
        return;
    }
    if (p->nops == 1) {
        dsl_buf_printf(b, "%s", ir_op_name(p->ops[0]));
    } else {
        dsl_buf_printf(b, "[");
        for (uint32_t i = 0; i < p->nops; i++)
            dsl_buf_printf(b, "%s%s", i ? "|" : "", ir_op_name(p->ops[i]));
        dsl_buf_printf(b, "]");
    }
    if (p->optional)
        dsl_buf_printf(b, "?");
    if (pr->named && p->capture && !p->capture->is_let)
        dsl_buf_printf(b, "@%s", p->capture->name);
    put_preds(b, &p->preds);
    put_inline_attrs(b, p->attrs, p->nattrs);
    if (p->open && p->noperands == 0)
        return;
    dsl_buf_printf(b, "(");
    for (uint32_t i = 0; i < p->noperands; i++) {
        dsl_buf_printf(b, "%s", i ? ", " : "");
        put_node(pr, b, p->operands[i]);
    }
    dsl_buf_printf(b, "%s)", p->open ? ", ..." : "");
}

static void put_expr(printer *pr, dsl_buf *b, const dsl_expr *e)
{
    switch (e->kind) {
    case DSL_EXPR_INT:
        dsl_buf_printf(b, "%" PRId64, e->v.i);
        return;
    case DSL_EXPR_FLOAT:
        put_double(b, e->v.f);
        return;
    case DSL_EXPR_STRING:
        put_string(b, e->v.s);
        return;
    case DSL_EXPR_BOOL:
        dsl_buf_printf(b, "%s", e->v.b ? "true" : "false");
        return;
    case DSL_EXPR_DTYPE:
        dsl_buf_printf(b, "%s", ir_dtype_name(e->v.dtype));
        return;
    case DSL_EXPR_LAYOUT:
        dsl_buf_printf(b, "%s", ir_layout_name(e->v.layout));
        return;
    case DSL_EXPR_OP:
        dsl_buf_printf(b, "%s", ir_op_name(e->v.op));
        return;
    case DSL_EXPR_NAME:
        dsl_buf_printf(b, "%s", e->v.s);
        return;
    case DSL_EXPR_CAPTURE:
        put_capture_ref(pr, b, e->v.capture);
        return;
    case DSL_EXPR_LIST:
    case DSL_EXPR_CALL:
        dsl_buf_printf(b, "%s%s", e->kind == DSL_EXPR_CALL ? e->v.s : "",
                       e->kind == DSL_EXPR_CALL ? "(" : "[");
        for (uint32_t i = 0; i < e->nargs; i++) {
            dsl_buf_printf(b, "%s", i ? ", " : "");
            put_expr(pr, b, e->args[i]);
        }
        dsl_buf_printf(b, "%s", e->kind == DSL_EXPR_CALL ? ")" : "]");
        return;
    case DSL_EXPR_UNARY:
        dsl_buf_printf(b, "%s", e->op == DSL_OP_NOT ? "!" : "-");
        put_expr(pr, b, e->args[0]);
        return;
    case DSL_EXPR_BINARY: {
        static const char *const text[] = {"", "", "||", "&&", "==", "!=", "<", "<=", ">", ">=",
                                           "+", "-", "*", "/", "%"};
        dsl_buf_printf(b, "(");
        put_expr(pr, b, e->args[0]);
        dsl_buf_printf(b, " %s ", text[e->op]);
        put_expr(pr, b, e->args[1]);
        dsl_buf_printf(b, ")");
        return;
    }
    }
    FR_UNREACHABLE();
}

static void put_capture_list(printer *pr, dsl_buf *b, dsl_capture *const *caps, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        dsl_buf_printf(b, "%s", i ? ", " : "");
        if (caps[i])
            put_capture_ref(pr, b, caps[i]);
    }
}

static void put_replacement(printer *pr, dsl_buf *b, const dsl_replacement *r)
{
    if (r->kind == DSL_REPL_FORWARD) {
        put_capture_ref(pr, b, r->forward);
        return;
    }
    dsl_buf_printf(b, "%s", ir_op_name(r->op));
    if (r->operands_explicit) {
        dsl_buf_printf(b, "(");
        put_capture_list(pr, b, r->operands, r->noperands);
        dsl_buf_printf(b, ")");
    }
    if (r->nactions) {
        dsl_buf_printf(b, "[");
        for (uint32_t i = 0; i < r->nactions; i++)
            dsl_buf_printf(b, "%s%s", i ? ", " : "", dsl_action_name(r->actions[i]));
        dsl_buf_printf(b, "]");
    }
    if (r->nattrs)
        put_repl_attrs(pr, b, r->attrs, r->nattrs);
    if (r->nexports) {
        dsl_buf_printf(b, " exports ");
        put_capture_list(pr, b, r->exports, r->nexports);
    }
    if (r->nshares) {
        dsl_buf_printf(b, " shares ");
        put_capture_list(pr, b, r->shares, r->nshares);
    }
}

void dsl_format_rule(const dsl_rule *r, bool named, dsl_buf *pattern, dsl_buf *repl,
                     dsl_buf *guard)
{
    FR_CHECK(r->checked);
    printer pr = {r, named, calloc(r->nnodes ? r->nnodes : 1, sizeof(uint32_t)), 0};
    FR_CHECK(pr.seen != NULL);
    dsl_buf scratch = {0};
    dsl_buf *b = pattern ? pattern : &scratch;
    for (uint32_t i = 0; i < r->nroots; i++) {
        dsl_buf_printf(b, "%s", i ? " & " : "");
        put_node(&pr, b, r->roots[i]);
    }
    if (repl)
        put_replacement(&pr, repl, &r->repl);
    if (guard && r->guard)
        put_expr(&pr, guard, r->guard);
    dsl_buf_free(&scratch);
    free(pr.seen);
}

void dsl_rule_print(const dsl_rule *r, FILE *out)
{
    if (!r->checked) {
        fprintf(out, "rule %s: (not checked)\n", r->name);
        return;
    }
    dsl_buf pattern = {0}, repl = {0}, guard = {0};
    dsl_format_rule(r, true, &pattern, &repl, &guard);
    /* Printing nothing still reserves and writes the terminating NUL. */
    dsl_buf_printf(&pattern, "%s", "");
    dsl_buf_printf(&repl, "%s", "");
    dsl_buf_printf(&guard, "%s", "");
    char phase[32] = "";
    if (r->phase != DSL_DEFAULT_PHASE)
        snprintf(phase, sizeof phase, " phase %" PRId64, r->phase);
    fprintf(out, "rule %s priority %" PRId64 "%s: %s => %s%s%s\n", r->name, r->priority, phase,
            pattern.v.items, repl.v.items, r->guard ? " where " : "", guard.v.items);
    dsl_buf_free(&pattern);
    dsl_buf_free(&repl);
    dsl_buf_free(&guard);
}
