/* The builders that the grammar actions call: tokens in, AST nodes out (names still unresolved).
 * Literals are converted here, while the source is at hand; chains are desugared here; nesting
 * depth is counted here so that every later pass may recurse safely. */
#include "dsl/parse.h"

#include "base/check.h"
#include "base/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- lists ---- */

dsl_list *dsl_list_new(dsl_parse *ctx)
{
    (void)ctx;
    dsl_list *list = calloc(1, sizeof *list);
    FR_CHECK(list != NULL);
    return list;
}

dsl_list *dsl_list_push(dsl_parse *ctx, dsl_list *list, void *item)
{
    if (!list)
        list = dsl_list_new(ctx);
    vec_push(&list->v, item);
    return list;
}

void dsl_list_free(dsl_list *list)
{
    if (!list)
        return;
    vec_free(&list->v);
    free(list);
}

/* Moves a list's items into an arena array and frees the list. NULL list: no items. */
static void **take(dsl_parse *ctx, dsl_list *list, uint32_t *count)
{
    *count = 0;
    if (!list)
        return NULL;
    void **items = NULL;
    if (list->v.len) {
        items = ar_alloc_array(ctx->rs->arena, list->v.len, sizeof *items);
        memcpy(items, list->v.items, list->v.len * sizeof *items);
    }
    *count = (uint32_t)list->v.len;
    dsl_list_free(list);
    return items;
}

/* A list of dsl_token pointers, as an arena array of tokens. */
static dsl_token *take_tokens(dsl_parse *ctx, dsl_list *list, uint32_t *count)
{
    dsl_token **ptrs = (dsl_token **)take(ctx, list, count);
    if (!*count)
        return NULL;
    dsl_token *toks = ar_alloc_array(ctx->rs->arena, *count, sizeof *toks);
    for (uint32_t i = 0; i < *count; i++)
        toks[i] = *ptrs[i];
    return toks;
}

dsl_token *dsl_token_dup(dsl_parse *ctx, dsl_token tok)
{
    dsl_token *copy = ar_alloc(ctx->rs->arena, sizeof *copy);
    *copy = tok;
    return copy;
}

static char *tok_strdup(dsl_parse *ctx, dsl_token tok, uint32_t skip)
{
    return ar_strndup(ctx->rs->arena, dsl_tok_text(ctx->src, tok) + skip, tok.len - skip);
}

/* ---- literals ---- */

static bool parse_int(dsl_parse *ctx, dsl_token tok, bool negative, int64_t *out)
{
    const char *s = dsl_tok_text(ctx->src, tok);
    uint64_t v = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (uint32_t i = 0; i < tok.len; i++) {
        uint64_t digit = (uint64_t)(s[i] - '0');
        if (v > (limit - digit) / 10) {
            dg_error(ctx->dg, ctx->src, tok.offset, tok.len, "integer literal out of range");
            *out = 0;
            return false;
        }
        v = v * 10 + digit;
    }
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static double parse_float(dsl_parse *ctx, dsl_token tok, bool negative)
{
    char buf[64];
    const char *s = dsl_tok_text(ctx->src, tok);
    char *copy = tok.len < sizeof buf ? buf : ar_alloc(ctx->rs->arena, (size_t)tok.len + 1);
    memcpy(copy, s, tok.len);
    copy[tok.len] = '\0';
    errno = 0;
    double v = strtod(copy, NULL);
    if (errno == ERANGE && (v > 1.0 || v < -1.0))
        dg_error(ctx->dg, ctx->src, tok.offset, tok.len, "number literal out of range");
    return negative ? -v : v;
}

/* The text between the quotes with escapes decoded (the lexer checked them). */
char *dsl_decode_string(dsl_parse *ctx, dsl_token tok)
{
    const char *s = dsl_tok_text(ctx->src, tok) + 1;
    uint32_t n = tok.len >= 2 && s[tok.len - 2] == '"' ? tok.len - 2 : tok.len - 1;
    char *out = ar_alloc(ctx->rs->arena, (size_t)n + 1), *o = out;
    for (uint32_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char e = s[++i];
            *o++ = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

/* ---- statements ---- */

void dsl_define_set(dsl_parse *ctx, dsl_token name, dsl_list *members)
{
    dsl_set_def *set = ar_alloc(ctx->rs->arena, sizeof *set);
    set->name = name;
    set->label = tok_strdup(ctx, name, 0);
    set->members = take_tokens(ctx, members, &set->nmembers);
    set->src = ctx->src;
    vec_push(&ctx->rs->state->sets, set);
}

void dsl_define_pred(dsl_parse *ctx, dsl_token name, dsl_list *params, dsl_token close,
                     dsl_expr *body)
{
    dsl_pred_def *def = ar_alloc(ctx->rs->arena, sizeof *def);
    def->name = name;
    def->params = take_tokens(ctx, params, &def->nparams);
    def->body = body;
    def->pub.name = tok_strdup(ctx, name, 0);
    def->pub.src = ctx->src;
    def->pub.src_offset = name.offset;
    def->pub.src_len = close.offset + close.len - name.offset;
    def->pub.body_offset = body->src_offset;
    def->pub.body_len = body->src_len;
    vec_push(&ctx->rs->state->preds, def);
}

/* "file.rules:LINE" for an anonymous rule (the checks make clashes unique). */
static const char *anonymous_name(dsl_parse *ctx, uint32_t line)
{
    return ar_printf(ctx->rs->arena, "%s:%u", path_base(ctx->src->path), line);
}

void dsl_add_rule(dsl_parse *ctx, const dsl_token *name, dsl_token priority, dsl_token phase,
                  dsl_list *lets, dsl_list *roots, dsl_repl_syntax *repl, dsl_expr *guard)
{
    ar_arena *arena = ctx->rs->arena;
    dsl_rule *rule = ar_alloc(arena, sizeof *rule);
    dsl_rule_syntax *syn = ar_alloc(arena, sizeof *syn);
    rule->syntax = syn;
    rule->src = ctx->src;
    syn->lets = (dsl_let **)take(ctx, lets, &syn->nlets);
    syn->roots = (dsl_pattern **)take(ctx, roots, &syn->nroots);
    syn->repl = repl;
    rule->guard = guard;
    syn->too_deep = ctx->too_deep;
    ctx->too_deep = false;
    if (name) {
        rule->name = tok_strdup(ctx, *name, 0);
        rule->src_offset = name->offset;
        rule->src_len = name->len;
    } else {
        dsl_token first = syn->nlets ? syn->lets[0]->name : syn->roots[0]->syntax->first;
        rule->name = anonymous_name(ctx, first.line);
        rule->anonymous = true;
        rule->src_offset = first.offset;
        rule->src_len = first.len;
    }
    if (priority.len) {
        rule->priority_explicit = parse_int(ctx, priority, false, &rule->priority);
    }
    rule->phase = DSL_DEFAULT_PHASE;
    if (phase.len)
        parse_int(ctx, phase, false, &rule->phase);
    dsl_state *st = ctx->rs->state;
    rule->index = (uint32_t)st->rules.len;
    vec_push(&st->rules, rule);
    ctx->rs->rules = st->rules.items;
    ctx->rs->nrules = (uint32_t)st->rules.len;
}

dsl_let *dsl_let_new(dsl_parse *ctx, dsl_token name, dsl_pattern *value)
{
    dsl_let *let = ar_alloc(ctx->rs->arena, sizeof *let);
    let->name = name;
    let->value = value;
    return let;
}

/* ---- patterns ---- */

static dsl_pattern *new_pattern(dsl_parse *ctx, dsl_pattern_kind kind, dsl_token first,
                                dsl_token last)
{
    dsl_pattern *p = ar_alloc(ctx->rs->arena, sizeof *p);
    p->kind = kind;
    p->syntax = ar_alloc(ctx->rs->arena, sizeof *p->syntax);
    p->src_offset = first.offset;
    p->src_len = last.offset + last.len - first.offset;
    p->text = ar_strndup(ctx->rs->arena, dsl_tok_text(ctx->src, first), p->src_len);
    p->preds.rank = -1;
    p->syntax->first = first;
    return p;
}

/* Reports a pattern that nests deeper than DSL_MAX_DEPTH, once: at the node that crosses it. */
static void set_depth(dsl_parse *ctx, dsl_pattern *p, uint32_t depth)
{
    if (depth <= p->syntax->depth)
        return;
    if (depth == DSL_MAX_DEPTH + 1) { /* deeper nodes are above this one */
        dg_error(ctx->dg, ctx->src, p->src_offset, p->src_len,
                 "pattern nests more than %d ops deep", DSL_MAX_DEPTH);
        ctx->too_deep = true;
    }
    p->syntax->depth = depth;
}

dsl_pattern *dsl_op_head(dsl_parse *ctx, dsl_token first, dsl_list *alternatives, bool optional,
                         dsl_token capture, dsl_list *preds, dsl_token last)
{
    dsl_pattern *p = new_pattern(ctx, DSL_PAT_OP, first, last);
    dsl_pattern_syntax *syn = p->syntax;
    if (alternatives) {
        syn->names = take_tokens(ctx, alternatives, &syn->nnames);
        syn->bracketed = true;
    } else {
        syn->names = dsl_token_dup(ctx, first);
        syn->nnames = 1;
    }
    p->optional = optional;
    p->open = true;
    syn->capture = capture;
    syn->preds = take_tokens(ctx, preds, &syn->npreds);
    syn->depth = 1;
    return p;
}

dsl_pattern *dsl_op_attrs(dsl_parse *ctx, dsl_pattern *op, dsl_list *attrs)
{
    op->syntax->attrs = (dsl_attr_syntax **)take(ctx, attrs, &op->syntax->nattrs);
    return op;
}

dsl_pattern *dsl_op_operands(dsl_parse *ctx, dsl_pattern *op, dsl_list *operands, dsl_token close)
{
    (void)close;
    uint32_t n;
    dsl_pattern **items = (dsl_pattern **)take(ctx, operands, &n);
    op->open = n > 0 && items[n - 1] == NULL; /* a trailing `...` */
    op->operands = items;
    op->noperands = op->open ? n - 1 : n;
    op->syntax->has_operand_list = true;
    uint32_t depth = 1;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (items[i]->syntax->depth + 1 > depth)
            depth = items[i]->syntax->depth + 1;
    set_depth(ctx, op, depth);
    return op;
}

dsl_pattern *dsl_leaf(dsl_parse *ctx, dsl_token name, dsl_list *preds)
{
    dsl_pattern *p = new_pattern(ctx, DSL_PAT_ANY, name, name);
    if (dsl_tok_text(ctx->src, name)[0] == '@')
        p->syntax->capture = name;
    p->syntax->preds = take_tokens(ctx, preds, &p->syntax->npreds);
    return p;
}

dsl_pattern *dsl_output_leaf(dsl_parse *ctx, dsl_token ref, dsl_list *preds)
{
    dsl_pattern *p = dsl_leaf(ctx, ref, preds);
    p->syntax->capture = dsl_no_token(); /* `@f.1` names no value of its own */
    p->syntax->output_ref = ref;
    return p;
}

dsl_pattern *dsl_prev_slot(dsl_parse *ctx, dsl_token caret)
{
    dsl_pattern *p = new_pattern(ctx, DSL_PAT_ANY, caret, caret);
    p->syntax->prev_slot = true;
    return p;
}

/* `prev > stage`: prev becomes the stage's operand where `^` stands, else its operand 0. */
dsl_pattern *dsl_chain(dsl_parse *ctx, dsl_pattern *prev, dsl_pattern *stage)
{
    int slot = -1;
    for (uint32_t i = 0; i < stage->noperands; i++) {
        if (!stage->operands[i]->syntax->prev_slot)
            continue;
        if (slot < 0) {
            slot = (int)i;
        } else {
            dg_error(ctx->dg, ctx->src, stage->operands[i]->src_offset, 1,
                     "'^' appears twice in one chain stage");
            stage->operands[i]->syntax->prev_slot = false; /* one error is enough */
        }
    }
    if (slot >= 0) {
        stage->operands[slot] = prev;
        stage->syntax->chain_slot = (uint32_t)slot;
    } else {
        dsl_pattern **ops = ar_alloc_array(ctx->rs->arena, (size_t)stage->noperands + 1, sizeof *ops);
        ops[0] = prev;
        if (stage->noperands)
            memcpy(ops + 1, stage->operands, stage->noperands * sizeof *ops);
        stage->operands = ops;
        stage->noperands++;
    }
    stage->syntax->chained = true;
    stage->syntax->first = prev->syntax->first;
    set_depth(ctx, stage, prev->syntax->depth + 1);
    return stage;
}

/* ---- attribute values ---- */

dsl_attr_syntax *dsl_attr(dsl_parse *ctx, dsl_token name, dsl_value *value)
{
    dsl_attr_syntax *a = ar_alloc(ctx->rs->arena, sizeof *a);
    a->name = name;
    a->value = value;
    return a;
}

dsl_value *dsl_value_atom(dsl_parse *ctx, dsl_value_kind kind, dsl_token tok, bool negative)
{
    dsl_value *v = ar_alloc(ctx->rs->arena, sizeof *v);
    v->kind = kind;
    v->src_offset = tok.offset;
    v->src_len = tok.len;
    switch (kind) {
    case DSL_VAL_INT:
        parse_int(ctx, tok, negative, &v->i);
        v->f = (double)v->i;
        break;
    case DSL_VAL_FLOAT:
        v->f = parse_float(ctx, tok, negative);
        break;
    case DSL_VAL_STRING:
        v->s = dsl_decode_string(ctx, tok);
        break;
    case DSL_VAL_NAME:
        v->s = tok_strdup(ctx, tok, 0);
        break;
    case DSL_VAL_CAPTURE:
        v->s = tok_strdup(ctx, tok, 1);
        break;
    case DSL_VAL_LIST:
        FR_UNREACHABLE();
    }
    return v;
}

dsl_value *dsl_value_list(dsl_parse *ctx, dsl_token open, dsl_list *items, dsl_token close)
{
    dsl_value *v = ar_alloc(ctx->rs->arena, sizeof *v);
    v->kind = DSL_VAL_LIST;
    v->src_offset = open.offset;
    v->src_len = close.offset + close.len - open.offset;
    v->items = (dsl_value **)take(ctx, items, &v->nitems);
    return v;
}

/* ---- replacements ---- */

dsl_repl_syntax *dsl_repl_op(dsl_parse *ctx, dsl_token target, dsl_list *operands,
                             dsl_list *actions, dsl_list *attrs, dsl_list *exports,
                             dsl_list *shares)
{
    dsl_repl_syntax *r = ar_alloc(ctx->rs->arena, sizeof *r);
    r->target = target;
    r->operands_written = operands != NULL;
    r->operands = take_tokens(ctx, operands, &r->noperands);
    r->actions = take_tokens(ctx, actions, &r->nactions);
    r->attrs = (dsl_attr_syntax **)take(ctx, attrs, &r->nattrs);
    r->exports = take_tokens(ctx, exports, &r->nexports);
    r->shares = take_tokens(ctx, shares, &r->nshares);
    return r;
}

dsl_repl_syntax *dsl_repl_forward(dsl_parse *ctx, dsl_token capture)
{
    dsl_repl_syntax *r = ar_alloc(ctx->rs->arena, sizeof *r);
    r->forward = capture;
    return r;
}

/* ---- guard expressions ---- */

static dsl_expr *new_expr(dsl_parse *ctx, dsl_expr_kind kind, uint32_t from, uint32_t to)
{
    dsl_expr *e = ar_alloc(ctx->rs->arena, sizeof *e);
    e->kind = kind;
    e->src_offset = from;
    e->src_len = to - from;
    e->depth = 1;
    return e;
}

static uint32_t end_of(const dsl_expr *e)
{
    return e->src_offset + e->src_len;
}

/* Like set_depth, for expressions (`a + a + ... + a` nests as deep as it is long). */
static void expr_depth(dsl_parse *ctx, dsl_expr *e)
{
    uint32_t depth = 1;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (e->args[i]->depth + 1 > depth)
            depth = e->args[i]->depth + 1;
    e->depth = depth;
    bool child_too_deep = false;
    for (uint32_t i = 0; i < e->nargs; i++)
        child_too_deep |= e->args[i]->depth > DSL_MAX_DEPTH;
    if (depth > DSL_MAX_DEPTH && !child_too_deep) {
        dg_error(ctx->dg, ctx->src, e->src_offset, e->src_len,
                 "expression nests more than %d levels deep", DSL_MAX_DEPTH);
        ctx->too_deep = true;
    }
}

dsl_expr *dsl_expr_atom(dsl_parse *ctx, dsl_expr_kind kind, dsl_token tok)
{
    dsl_expr *e = new_expr(ctx, kind, tok.offset, tok.offset + tok.len);
    switch (kind) {
    case DSL_EXPR_INT:
        parse_int(ctx, tok, false, &e->v.i);
        break;
    case DSL_EXPR_FLOAT:
        e->v.f = parse_float(ctx, tok, false);
        break;
    case DSL_EXPR_STRING:
        e->v.s = dsl_decode_string(ctx, tok);
        break;
    case DSL_EXPR_NAME:
        e->v.s = tok_strdup(ctx, tok, 0);
        break;
    case DSL_EXPR_CAPTURE:
        e->v.s = tok_strdup(ctx, tok, 1); /* the checks replace it by the capture */
        break;
    default:
        FR_UNREACHABLE();
    }
    return e;
}

static dsl_expr **pair(dsl_parse *ctx, dsl_expr *a, dsl_expr *b)
{
    dsl_expr **args = ar_alloc_array(ctx->rs->arena, b ? 2 : 1, sizeof *args);
    args[0] = a;
    if (b)
        args[1] = b;
    return args;
}

dsl_expr *dsl_expr_unary(dsl_parse *ctx, dsl_token op_tok, dsl_operator op, dsl_expr *a)
{
    dsl_expr *e = new_expr(ctx, DSL_EXPR_UNARY, op_tok.offset, end_of(a));
    e->op = op;
    e->args = pair(ctx, a, NULL);
    e->nargs = 1;
    expr_depth(ctx, e);
    return e;
}

dsl_expr *dsl_expr_binary(dsl_parse *ctx, dsl_operator op, dsl_expr *a, dsl_expr *b)
{
    dsl_expr *e = new_expr(ctx, DSL_EXPR_BINARY, a->src_offset, end_of(b));
    e->op = op;
    e->args = pair(ctx, a, b);
    e->nargs = 2;
    expr_depth(ctx, e);
    return e;
}

dsl_expr *dsl_expr_paren(dsl_parse *ctx, dsl_token open, dsl_expr *e, dsl_token close)
{
    (void)ctx;
    e->src_offset = open.offset;
    e->src_len = close.offset + close.len - open.offset;
    return e;
}

dsl_expr *dsl_expr_call(dsl_parse *ctx, dsl_token name, dsl_list *args, dsl_token close)
{
    dsl_expr *e = new_expr(ctx, DSL_EXPR_CALL, name.offset, close.offset + close.len);
    e->v.s = tok_strdup(ctx, name, 0); /* the checks resolve it into e->fn */
    e->args = (dsl_expr **)take(ctx, args, &e->nargs);
    expr_depth(ctx, e);
    return e;
}

dsl_expr *dsl_expr_list(dsl_parse *ctx, dsl_token open, dsl_list *items, dsl_token close)
{
    dsl_expr *e = new_expr(ctx, DSL_EXPR_LIST, open.offset, close.offset + close.len);
    e->args = (dsl_expr **)take(ctx, items, &e->nargs);
    expr_depth(ctx, e);
    return e;
}
