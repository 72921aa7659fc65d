/* Parsing .graph text: the driver that feeds the lexer's tokens to the Lemon parser, and the
 * syntax errors it reports. The builders the grammar's actions call are in ir/parse_build.c. Every
 * error is reported at the byte range it concerns, and parsing goes on to find more; ir_parse
 * returns NULL if anything was reported. */
#include "ir/parse_internal.h"

#include "base/check.h"
#include "base/path.h"
#include "grammar/graph_grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- syntax errors ------------------------------------------------------------------------- */

/* How a token is named in "unexpected ..." messages. */
static void describe_found(const gp_state *st, int code, gp_token t, char *buf, size_t size)
{
    int shown = t.len > 40 ? 40 : (int)t.len;
    const char *text = st->src->text + t.offset;
    switch (code) {
    case 0:
        snprintf(buf, size, "end of input");
        break;
    case GP_NEWLINE:
        snprintf(buf, size, "end of line");
        break;
    case GP_NAME:
        snprintf(buf, size, "name '%.*s'", shown, text);
        break;
    case GP_STRING:
        snprintf(buf, size, "string %.*s", shown, text);
        break;
    case GP_INT:
    case GP_FLOAT:
        snprintf(buf, size, "number '%.*s'", shown, text);
        break;
    case GP_KERNEL:
        snprintf(buf, size, "kernel binding '%.*s'", shown, text);
        break;
    default:
        snprintf(buf, size, "'%.*s'", shown, text);
        break;
    }
}

/* How a token is named in "expected ..." lists. */
static const char *describe_expected(int code)
{
    switch (code) {
    case 0: return "end of input";
    case GP_GRAPH: return "'graph'";
    case GP_INPUT: return "'input'";
    case GP_CONST: return "'const'";
    case GP_OUTPUT: return "'output'";
    case GP_RANDOM: return "'random'";
    case GP_FILE: return "'file'";
    case GP_NAME: return "a name";
    case GP_STRING: return "a string";
    case GP_INT: return "an integer";
    case GP_FLOAT: return "a number";
    case GP_KERNEL: return "a kernel binding '@name'";
    case GP_EQ: return "'='";
    case GP_COLON: return "':'";
    case GP_COMMA: return "','";
    case GP_LPAREN: return "'('";
    case GP_RPAREN: return "')'";
    case GP_LBRACKET: return "'['";
    case GP_RBRACKET: return "']'";
    case GP_LBRACE: return "'{'";
    case GP_RBRACE: return "'}'";
    case GP_QUESTION: return "'?'";
    case GP_STAR: return "'*'";
    case GP_PLUS: return "'+'";
    case GP_MINUS: return "'-'";
    case GP_NEWLINE: return "end of line";
    }
    return "?";
}

/* "; expected A, B or C" for a set of token codes, or "" when the set is empty or too long to
 * help. A name may always be quoted, so "a name" covers "a string"; "a number" covers integers. */
static void format_expected(uint64_t set, char *buf, size_t size)
{
    enum { MAX_LISTED = 6 };
    uint64_t bit = 1;
    if ((set & (bit << GP_NAME)) && (set & (bit << GP_STRING)))
        set &= ~(bit << GP_STRING);
    if ((set & (bit << GP_INT)) && (set & (bit << GP_FLOAT)))
        set &= ~(bit << GP_INT);
    int codes[64], n = 0;
    for (int c = 0; c < 64; c++)
        if (set & (bit << c))
            codes[n++] = c;
    buf[0] = '\0';
    if (n == 0 || n > MAX_LISTED)
        return;
    size_t used = (size_t)snprintf(buf, size, "; expected ");
    for (int i = 0; i < n && used < size; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        used += (size_t)snprintf(buf + used, size - used, "%s%s", sep, describe_expected(codes[i]));
    }
}

static bool line_break_between(const gp_state *st, uint32_t from, uint32_t to)
{
    return memchr(st->src->text + from, '\n', to > from ? to - from : 0) != NULL;
}

void gp_syntax_error(gp_state *st, int code, gp_token tok, uint64_t expected)
{
    st->syntax_failed = true;
    if (st->lx.line_error)
        return; /* the lexer reported what went wrong on this line */
    char found[80], wanted[256];
    describe_found(st, code, tok, found, sizeof found);
    format_expected(expected, wanted, sizeof wanted);
    dg_error(st->dg, st->src, tok.offset, tok.len, "unexpected %s%s", found, wanted);
    uint32_t open;
    if (gp_lexer_open_bracket(&st->lx, &open)) {
        if (code == 0 || line_break_between(st, open, tok.offset))
            dg_note(st->dg, st->src, open, 1, "to match this '%c'", st->src->text[open]);
    } else if (code == 0 && st->has_body) {
        dg_note(st->dg, st->src, st->body_open, 1, "to match this '{'");
    }
}

void gp_nesting_too_deep(gp_state *st)
{
    dg_error(st->dg, st->src, st->cur.offset, st->cur.len, "nesting too deep");
    st->aborted = true;
}

/* ---- the driver ---------------------------------------------------------------------------- */

/* A name that a line is about to define: the first of a node line, or the one after `input` or
 * `const`. Its slot in the name map is fetched while the parser reads the rest of the line, so
 * that the definition's probe (a cache miss in a large graph's map) does not wait for it. */
static void prefetch_definition(gp_state *st, int prev, int code, gp_token tok)
{
    if (code == GP_NAME && (prev == GP_NEWLINE || prev == GP_INPUT || prev == GP_CONST))
        ir_names_prefetch(&st->g->by_name, st->src->text + tok.offset, tok.len);
}

/* Whether the next line may be read by ir/parse_fast.c: a line of the graph's body begins (the
 * parser is between two statements) and no syntax error has put the parser into recovery. */
static bool fast_allowed(const gp_state *st)
{
    return st->fast && st->lx.last == GP_NEWLINE && st->lx.depth == 0 && st->has_body &&
           !st->body_closed && !st->syntax_failed && !st->aborted;
}

static void run_parser(gp_state *st)
{
    void *parser = gp_parseAlloc(malloc, st);
    FR_CHECK(parser != NULL);
    int code = 0;
    do {
        if (fast_allowed(st))
            while (gp_fast_line(st))
                ;
        gp_token tok;
        int prev = code;
        uint32_t depth = st->lx.depth;
        code = gp_lex(&st->lx, &tok);
        if (code == GP_RBRACE && depth == 0)
            st->body_closed = true; /* (or a stray '}': the parser reports it) */
        prefetch_definition(st, prev, code, tok);
        st->cur = tok;
        gp_parse(parser, code, tok);
        if (code == GP_NEWLINE)
            st->lx.line_error = false;
    } while (code != 0 && !st->aborted);
    gp_parseFree(parser, free);
}

static ir_graph *parse(const dg_source *src, dg_context *dg, bool placeholders, bool terminated,
                       bool fast, size_t *fast_lines)
{
    size_t errors_before = dg_error_count(dg);
    if (src->len > GP_MAX_SOURCE) {
        dg_error_path(dg, src->path, "too large to parse (%zu bytes)", src->len);
        return NULL;
    }
    /* re2c reads up to a NUL sentinel: the text's own when it has one (dg_source_read's), else
     * that of a copy */
    unsigned char *copy = NULL;
    const unsigned char *text = (const unsigned char *)src->text;
    if (!terminated) {
        copy = malloc(src->len + 1);
        FR_CHECK(copy != NULL);
        if (src->len)
            memcpy(copy, src->text, src->len);
        copy[src->len] = '\0';
        text = copy;
    }

    gp_state st = {.src = src, .dg = dg, .placeholders = placeholders, .fast = fast};
    st.g = ir_graph_new("");
    /* A line defines one value, most lines: the name map's size from the first probe on. At
     * most a value per 32 bytes (a line of a real graph is longer), so that a file of empty lines
     * reserves no more than the text's own size (the hostile suite's address-space limit). */
    size_t lines = 1;
    for (const char *p = src->text, *end = src->text + src->len;
         (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        lines++;
    ir_names_reserve(&st.g->by_name, lines < src->len / 32 ? lines : src->len / 32);
    st.g->src = src;
    st.g->dir = path_dir(st.g->arena, src->path); /* what file() paths are relative to */
    gp_lexer_init(&st.lx, src, text, dg);
    run_parser(&st);
    /* after a syntax error, lines were skipped: their names would look undefined */
    if (!st.aborted && !st.syntax_failed)
        gp_resolve_names(&st);

    free(copy);
    if (fast_lines)
        *fast_lines = st.fast_lines;
    vec_free(&st.refs);
    vec_free(&st.outputs);
    sm_free(&st.poisoned);
    sm_free(&st.ops);
    gp_spares_free(&st);
    if (dg_error_count(dg) > errors_before) {
        ir_graph_free(st.g);
        return NULL;
    }
    return st.g;
}

ir_graph *ir_parse(const dg_source *src, dg_context *dg)
{
    return parse(src, dg, false, false, true, NULL);
}

ir_graph *ir_parse_expected(const dg_source *src, dg_context *dg)
{
    return parse(src, dg, true, false, true, NULL);
}

ir_graph *gp_parse_terminated(const dg_source *src, dg_context *dg)
{
    return parse(src, dg, false, true, true, NULL);
}

ir_graph *gp_parse_lines(const dg_source *src, dg_context *dg, bool fast, size_t *fast_lines)
{
    return parse(src, dg, false, false, fast, fast_lines);
}
