/* Rule families, after GCC match.pd's `for`:
 *
 *     for act in [Relu | Sigmoid], fn in [relu | sigmoid]
 *     rule scale_$fn: Mul(@x, @s:const) > $act
 *                     => ElementwiseChain(@x, @s) {expr = "$fn(mul(x0, x1))"}
 *
 * is the two rules scale_relu and scale_sigmoid. The variables advance together (the k-th rule
 * takes every variable's k-th value). The rule is expanded as text: for each k, a text with each
 * `$name` of the rule replaced by its value, on the rule's own line and column (the lines before
 * it left empty), is kept as a source of the rule set under the file's name, and the rule is
 * parsed from it. So each rule of a family is an ordinary rule with its own name, and a
 * diagnostic shows the line of the rule it is about, with the values in place. */
#include "dsl/parse.h"

#include "base/check.h"
#include "grammar/rules_grammar.h"

#include <stdlib.h>
#include <string.h>

/* The expanded rules of one family may take this much text together. */
enum { MAX_FAMILY_BYTES = 64 << 20 };

static bool same_text(const dg_source *src, dsl_token a, dsl_token b)
{
    return a.len == b.len && memcmp(dsl_tok_text(src, a), dsl_tok_text(src, b), a.len) == 0;
}

dsl_family_var *dsl_family_var_new(dsl_parse *ctx, dsl_token name, dsl_list *values)
{
    dsl_family_var *v = ar_alloc(ctx->rs->arena, sizeof *v);
    v->name = name;
    uint32_t n = 0;
    dsl_token **items = NULL;
    if (values) {
        n = (uint32_t)values->v.len;
        items = (dsl_token **)values->v.items;
    }
    v->values = ar_alloc_array(ctx->rs->arena, n + 1, sizeof *v->values);
    for (uint32_t i = 0; i < n; i++)
        v->values[i] = *items[i];
    v->nvalues = n;
    dsl_list_free(values);
    return v;
}

void dsl_begin_family(dsl_parse *ctx, dsl_token keyword, dsl_list *vars)
{
    dsl_family *f = ar_alloc(ctx->rs->arena, sizeof *f);
    f->keyword = keyword;
    f->nvars = (uint32_t)vars->v.len;
    f->vars = ar_alloc_array(ctx->rs->arena, f->nvars + 1, sizeof *f->vars);
    memcpy(f->vars, vars->v.items, f->nvars * sizeof *f->vars);
    dsl_list_free(vars);
    for (uint32_t i = 0; i < f->nvars; i++) {
        const dsl_family_var *v = f->vars[i];
        for (uint32_t k = 0; k < i; k++)
            if (same_text(ctx->src, v->name, f->vars[k]->name)) {
                dg_error(ctx->dg, ctx->src, v->name.offset, v->name.len,
                         "variable '%.*s' is defined twice in this family", (int)v->name.len,
                         dsl_tok_text(ctx->src, v->name));
                f->bad = true;
            }
        if (v->nvalues != f->vars[0]->nvalues) {
            dg_error(ctx->dg, ctx->src, v->name.offset, v->name.len,
                     "variable '%.*s' has %u value%s but '%.*s' has %u: the variables of a "
                     "family advance together",
                     (int)v->name.len, dsl_tok_text(ctx->src, v->name), v->nvalues,
                     v->nvalues == 1 ? "" : "s", (int)f->vars[0]->name.len,
                     dsl_tok_text(ctx->src, f->vars[0]->name), f->vars[0]->nvalues);
            f->bad = true;
        }
    }
    ctx->family = f;
}

/* ---- expansion ---- */

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static const dsl_family_var *find_var(const dsl_parse *ctx, const dsl_family *f, const char *name,
                                      uint32_t len)
{
    for (uint32_t i = 0; i < f->nvars; i++)
        if (f->vars[i]->name.len == len &&
            memcmp(dsl_tok_text(ctx->src, f->vars[i]->name), name, len) == 0)
            return f->vars[i];
    return NULL;
}

/* The end of the comment at i, when a comment starts there (outside a string), else i. Comments
 * are copied as written: a `$` in one is no variable. */
static uint32_t skip_comment(const char *text, uint32_t i, uint32_t end, bool *in_string)
{
    if (text[i] == '"' && (!*in_string || text[i - 1] != '\\'))
        *in_string = !*in_string;
    else if (text[i] == '\n')
        *in_string = false; /* the lexer reported it unterminated */
    if (*in_string || text[i] != '#')
        return i;
    while (i + 1 < end && text[i + 1] != '\n')
        i++;
    return i;
}

/* Reports every `$name` of [start, end) that is no variable of the family; false if there was
 * one. */
static bool check_uses(dsl_parse *ctx, const dsl_family *f, uint32_t start, uint32_t end)
{
    const char *text = ctx->src->text;
    bool ok = true, in_string = false;
    for (uint32_t i = start; i < end; i++) {
        i = skip_comment(text, i, end, &in_string);
        if (text[i] != '$')
            continue;
        uint32_t n = 0;
        while (i + 1 + n < end && ident_char(text[i + 1 + n]))
            n++;
        if (n && !find_var(ctx, f, text + i + 1, n)) {
            dg_error(ctx->dg, ctx->src, i, n + 1, "'$%.*s' is not a variable of this family",
                     (int)n, text + i + 1);
            ok = false;
        }
    }
    return ok;
}

/* The rule needs a variable in its name, or its rules would all be named alike. */
static bool check_name(dsl_parse *ctx, dsl_token rule_kw, uint32_t end)
{
    const char *text = ctx->src->text;
    uint32_t i = rule_kw.offset + rule_kw.len;
    while (i < end && text[i] != ':' && text[i] != '$')
        i++;
    if (i < end && text[i] == '$')
        return true;
    dg_error(ctx->dg, ctx->src, rule_kw.offset, rule_kw.len,
             "the rule of a family needs a variable in its name (`rule scale_$act:`), so that "
             "each of its rules has a name of its own");
    return false;
}

/* The rule expanded with the k-th values, at the line and column where it is written: empty lines
 * and spaces before it, so that diagnostics show the file's line and column numbers. */
static char *instance_text(const dsl_parse *ctx, const dsl_family *f, uint32_t k, uint32_t start,
                           uint32_t end, uint32_t line, size_t *len, uint32_t *new_start,
                           uint32_t *new_end)
{
    const char *text = ctx->src->text;
    uint32_t col = 0;
    while (col < start && text[start - col - 1] != '\n')
        col++;
    size_t cap = (size_t)line + col + 2 + (end - start);
    for (uint32_t i = start; i < end; i++) /* room for the longest value at every '$' */
        if (text[i] == '$')
            for (uint32_t v = 0; v < f->nvars; v++)
                cap += f->vars[v]->values[k].len;
    char *out = malloc(cap);
    FR_CHECK(out != NULL);
    size_t used = 0;
    for (uint32_t i = 1; i < line; i++)
        out[used++] = '\n';
    for (uint32_t i = 0; i < col; i++)
        out[used++] = text[start - col + i] == '\t' ? '\t' : ' ';
    *new_start = (uint32_t)used;
    bool in_string = false;
    for (uint32_t i = start; i < end; i++) {
        uint32_t after = skip_comment(text, i, end, &in_string);
        if (after != i) {
            memcpy(out + used, text + i, after + 1 - i);
            used += after + 1 - i;
            i = after;
            continue;
        }
        uint32_t n = 0;
        while (text[i] == '$' && i + 1 + n < end && ident_char(text[i + 1 + n]))
            n++;
        const dsl_family_var *v = n ? find_var(ctx, f, text + i + 1, n) : NULL;
        if (!v) {
            out[used++] = text[i];
            continue;
        }
        dsl_token val = v->values[k];
        memcpy(out + used, dsl_tok_text(ctx->src, val), val.len);
        used += val.len;
        i += n;
    }
    *new_end = (uint32_t)used;
    out[used++] = '\n';
    out[used] = '\0';
    *len = used;
    return out;
}

int dsl_expand_family(dsl_parse *ctx, int code, dsl_token tok, dsl_token *next)
{
    dsl_family *f = ctx->family;
    ctx->family = NULL;
    if (code != DSL_T_RULE) {
        dg_error(ctx->dg, ctx->src, tok.offset, tok.len,
                 "expected the family's rule after its `for` header (`rule NAME_$var: ...`)");
        *next = tok;
        return code;
    }
    /* the rule runs up to the next statement */
    uint32_t start = tok.offset, end = tok.offset + tok.len;
    size_t errors = dg_error_count(ctx->dg);
    int after;
    for (;;) {
        after = dsl_lex(ctx, next);
        if (after == 0 || dsl_starts_statement(ctx, after, *next))
            break;
        end = next->offset + next->len;
    }
    /* lexical errors in the rule were reported while reading it: once, not once per rule */
    bool ok = !f->bad && dg_error_count(ctx->dg) == errors && check_name(ctx, tok, end);
    ok = check_uses(ctx, f, start, end) && ok;
    /* each rule of the family is a text as long as the file up to the rule's end, and longer by
     * the values that replace its variables: bounded */
    uint64_t dollars = 0, longest = 0;
    for (uint32_t i = start; i < end; i++)
        dollars += ctx->src->text[i] == '$';
    for (uint32_t v = 0; v < f->nvars; v++)
        for (uint32_t k = 0; k < f->vars[v]->nvalues; k++)
            longest = f->vars[v]->values[k].len > longest ? f->vars[v]->values[k].len : longest;
    uint64_t bytes = (uint64_t)f->vars[0]->nvalues *
                     ((uint64_t)tok.line + 2 * (end - start) + dollars * f->nvars * longest);
    if (ok && bytes > MAX_FAMILY_BYTES) {
        dg_error(ctx->dg, ctx->src, f->keyword.offset, f->keyword.len,
                 "this family expands to more than %d MiB of rule text", MAX_FAMILY_BYTES >> 20);
        ok = false;
    }
    for (uint32_t k = 0; ok && k < f->vars[0]->nvalues; k++) {
        size_t len;
        uint32_t from, to;
        char *text = instance_text(ctx, f, k, start, end, tok.line, &len, &from, &to);
        const dg_source *src = dsl_keep_source(ctx->rs, ctx->src->path, text, len);
        dsl_parse_range(ctx, src, from, to, tok.line);
    }
    return after;
}
