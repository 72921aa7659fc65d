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

/* Appends without a format: the keys of a large rule set are built from many short pieces, and
 * vsnprintf twice per piece was most of loading them. The text stays NUL-terminated, as
 * dsl_buf_printf leaves it. */
void dsl_buf_append(dsl_buf *b, const char *s, size_t n)
{
    vec_reserve(&b->v, b->v.len + n + 1);
    if (n)
        memcpy(b->v.items + b->v.len, s, n);
    b->v.len += n;
    b->v.items[b->v.len] = '\0';
}

static void put_s(dsl_buf *b, const char *s)
{
    dsl_buf_append(b, s, strlen(s));
}

static void put_c(dsl_buf *b, char c)
{
    dsl_buf_append(b, &c, 1);
}

static void put_u(dsl_buf *b, uint64_t v)
{
    char text[24];
    size_t n = sizeof text;
    do
        text[--n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    dsl_buf_append(b, text + n, sizeof text - n);
}

static void put_i(dsl_buf *b, int64_t v)
{
    if (v < 0)
        put_c(b, '-');
    put_u(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

typedef struct {
    const dsl_rule *rule;
    bool named;
    uint32_t *seen; /* per node id: 0, or its position in printing order */
    uint32_t next;
} printer;

static void put_string(dsl_buf *b, const char *s)
{
    put_c(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            put_c(b, '\\');
            put_c(b, *s);
        } else if (*s == '\n')
            put_s(b, "\\n");
        else if (*s == '\t')
            put_s(b, "\\t");
        else
            put_c(b, *s);
    }
    put_c(b, '"');
}

/* The shortest form that reads back as the same double. */
static void put_double(dsl_buf *b, double v)
{
    char text[32];
    snprintf(text, sizeof text, "%.15g", v);
    if (strtod(text, NULL) != v)
        snprintf(text, sizeof text, "%.17g", v);
    put_s(b, text);
}

static void put_attr_value(dsl_buf *b, const ir_attr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT: put_i(b, a->v.i); break;
    case IR_ATTR_FLOAT:
        put_double(b, a->v.f);
        break;
    case IR_ATTR_STRING:
        put_string(b, a->v.s);
        break;
    case IR_ATTR_INTS:
    case IR_ATTR_FLOATS:
        put_c(b, '[');
        for (uint32_t i = 0; i < a->count; i++) {
            if (a->kind == IR_ATTR_INTS) {
                put_s(b, i ? ", " : "");
                put_i(b, a->v.ints[i]);
            } else {
                put_s(b, i ? ", " : "");
                put_double(b, a->v.floats[i]);
            }
        }
        put_c(b, ']');
        break;
    }
}

static void put_capture_ref(printer *pr, dsl_buf *b, const dsl_capture *cap)
{
    if (pr->named) {
        put_s(b, cap->is_let ? "" : "@");
        put_s(b, cap->name);
        return;
    }
    uint32_t id = cap->node->id;
    put_c(b, '%');
    put_u(b, id < pr->rule->nnodes ? pr->seen[id] : 0);
}

static void put_preds(dsl_buf *b, const dsl_value_preds *p)
{
    if (p->is_const)
        put_s(b, ":const");
    if (p->dtype != IR_DTYPE_UNKNOWN) {
        put_c(b, ':');
        put_s(b, ir_dtype_name(p->dtype));
    }
    if (p->layout != IR_LAYOUT_NONE) {
        put_c(b, ':');
        put_s(b, ir_layout_name(p->layout));
    }
    if (p->rank >= 0) {
        put_s(b, ":rank");
        put_i(b, p->rank);
    }
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
    put_c(b, '{');
    for (uint32_t i = 0; i < n; i++) {
        put_s(b, i ? ", " : "");
        put_s(b, sorted[i]->name);
        put_c(b, '=');
        put_attr_value(b, sorted[i]);
    }
    put_c(b, '}');
    free(sorted);
}

static void put_repl_attrs(printer *pr, dsl_buf *b, const dsl_rattr *attrs, uint32_t n)
{
    const dsl_rattr **sorted = malloc(n * sizeof *sorted);
    FR_CHECK(sorted != NULL);
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = &attrs[i];
    qsort(sorted, n, sizeof *sorted, compare_rattrs);
    put_s(b, " {");
    for (uint32_t i = 0; i < n; i++) {
        put_s(b, i ? ", " : "");
        put_s(b, sorted[i]->value.name);
        put_c(b, '=');
        if (sorted[i]->kind == DSL_RATTR_LITERAL)
            put_attr_value(b, &sorted[i]->value);
        else
            put_capture_ref(pr, b, sorted[i]->capture);
    }
    put_c(b, '}');
    free(sorted);
}

static void put_node(printer *pr, dsl_buf *b, const dsl_pattern *p)
{
    if (pr->seen[p->id]) {
        if (pr->named && p->capture)
            put_capture_ref(pr, b, p->capture);
        else if (pr->named && p->output_of && p->output_of->capture) {
            put_c(b, '@');
            put_s(b, p->output_of->capture->name);
            put_c(b, '.');
            put_u(b, p->output_index);
        } else {
            put_c(b, '%');
            put_u(b, pr->seen[p->id]);
        }
        return;
    }
    pr->seen[p->id] = ++pr->next;
    bool shared = p->users > 1;
    if (!pr->named && shared) {
        put_c(b, '%');
        put_u(b, pr->seen[p->id]);
        put_c(b, '=');
    }
    if (pr->named && p->capture && p->capture->is_let) {
        put_s(b, p->capture->name);
        put_c(b, '=');
    }
    if (p->kind == DSL_PAT_ANY && p->output_of) {
        if (pr->named && p->output_of->capture) {
            put_c(b, '@');
            put_s(b, p->output_of->capture->name);
            put_c(b, '.');
        } else {
            put_s(b, "_.");
        }
        put_u(b, p->output_index);
        put_preds(b, &p->preds);
        return;
    }
    if (p->kind == DSL_PAT_ANY) {
        if (pr->named && p->capture && !p->capture->is_let) {
            put_c(b, '@');
            put_s(b, p->capture->name);
        } else {
            put_c(b, '_');
        }
        put_preds(b, &p->preds);
        return;
    }
    if (p->nops == 1) {
        put_s(b, ir_op_name(p->ops[0]));
    } else {
        put_c(b, '[');
        for (uint32_t i = 0; i < p->nops; i++) {
            put_s(b, i ? "|" : "");
            put_s(b, ir_op_name(p->ops[i]));
        }
        put_c(b, ']');
    }
    if (p->optional)
        put_c(b, '?');
    if (pr->named && p->capture && !p->capture->is_let) {
        put_c(b, '@');
        put_s(b, p->capture->name);
    }
    put_preds(b, &p->preds);
    put_inline_attrs(b, p->attrs, p->nattrs);
    if (p->open && p->noperands == 0)
        return;
    put_c(b, '(');
    for (uint32_t i = 0; i < p->noperands; i++) {
        put_s(b, i ? ", " : "");
        put_node(pr, b, p->operands[i]);
    }
    put_s(b, p->open ? ", ...)" : ")");
}

static void put_expr(printer *pr, dsl_buf *b, const dsl_expr *e)
{
    switch (e->kind) {
    case DSL_EXPR_INT: put_i(b, e->v.i); return;
    case DSL_EXPR_FLOAT:
        put_double(b, e->v.f);
        return;
    case DSL_EXPR_STRING:
        put_string(b, e->v.s);
        return;
    case DSL_EXPR_BOOL: put_s(b, e->v.b ? "true" : "false"); return;
    case DSL_EXPR_DTYPE: put_s(b, ir_dtype_name(e->v.dtype)); return;
    case DSL_EXPR_LAYOUT: put_s(b, ir_layout_name(e->v.layout)); return;
    case DSL_EXPR_OP: put_s(b, ir_op_name(e->v.op)); return;
    case DSL_EXPR_NAME: put_s(b, e->v.s); return;
    case DSL_EXPR_CAPTURE:
        put_capture_ref(pr, b, e->v.capture);
        return;
    case DSL_EXPR_LIST:
    case DSL_EXPR_CALL:
        put_s(b, e->kind == DSL_EXPR_CALL ? e->v.s : "");
        put_c(b, e->kind == DSL_EXPR_CALL ? '(' : '[');
        for (uint32_t i = 0; i < e->nargs; i++) {
            put_s(b, i ? ", " : "");
            put_expr(pr, b, e->args[i]);
        }
        put_c(b, e->kind == DSL_EXPR_CALL ? ')' : ']');
        return;
    case DSL_EXPR_UNARY:
        put_c(b, e->op == DSL_OP_NOT ? '!' : '-');
        put_expr(pr, b, e->args[0]);
        return;
    case DSL_EXPR_BINARY: {
        static const char *const text[] = {"", "", "||", "&&", "==", "!=", "<", "<=", ">", ">=",
                                           "+", "-", "*", "/", "%"};
        put_c(b, '(');
        put_expr(pr, b, e->args[0]);
        put_c(b, ' ');
        put_s(b, text[e->op]);
        put_c(b, ' ');
        put_expr(pr, b, e->args[1]);
        put_c(b, ')');
        return;
    }
    }
    FR_UNREACHABLE();
}

static void put_capture_list(printer *pr, dsl_buf *b, dsl_capture *const *caps, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        put_s(b, i ? ", " : "");
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
    put_s(b, ir_op_name(r->op));
    if (r->operands_explicit) {
        put_c(b, '(');
        put_capture_list(pr, b, r->operands, r->noperands);
        put_c(b, ')');
    }
    if (r->nactions) {
        put_c(b, '[');
        for (uint32_t i = 0; i < r->nactions; i++) {
            put_s(b, i ? ", " : "");
            put_s(b, dsl_action_name(r->actions[i]));
        }
        put_c(b, ']');
    }
    if (r->nattrs)
        put_repl_attrs(pr, b, r->attrs, r->nattrs);
    if (r->nexports) {
        put_s(b, " exports ");
        for (uint32_t i = 0; i < r->nexports; i++) {
            put_s(b, i ? ", " : "");
            put_capture_ref(pr, b, r->exports[i]);
            if (r->export_outputs[i]) {
                put_c(b, '.');
                put_u(b, r->export_outputs[i]);
            }
        }
    }
    if (r->nshares) {
        put_s(b, " shares ");
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
        put_s(b, i ? " & " : "");
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
    dsl_buf_append(&pattern, "", 0);
    dsl_buf_append(&repl, "", 0);
    dsl_buf_append(&guard, "", 0);
    char phase[32] = "";
    if (r->phase != DSL_DEFAULT_PHASE)
        snprintf(phase, sizeof phase, " phase %" PRId64, r->phase);
    fprintf(out, "rule %s priority %" PRId64 "%s: %s => %s%s%s\n", r->name, r->priority, phase,
            pattern.v.items, repl.v.items, r->guard ? " where " : "", guard.v.items);
    dsl_buf_free(&pattern);
    dsl_buf_free(&repl);
    dsl_buf_free(&guard);
}
