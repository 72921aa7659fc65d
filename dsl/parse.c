/* Loading rule files: reading them (following includes), and the loop that feeds the lexer's
 * tokens to the Lemon parser, recovering after a syntax error so that one run reports several.
 *
 * Recovery: after a syntax error the parser is reset and tokens are skipped up to the next one
 * that starts a statement: `rule`, `set`, `pred`, `for` or `include` anywhere, or a name or `let`
 * at the start of a line (anonymous rules are written from column 1; continuation lines are
 * indented). */
#include "dsl/parse.h"

#include "base/check.h"
#include "base/path.h"
#include "grammar/rules_grammar.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_FILE_BYTES = 64 << 20, MAX_INCLUDE_DEPTH = 32, MAX_SHOWN_TOKEN = 40 };

/* ---- syntax errors ---- */

static char opener_of(int code)
{
    return code == DSL_T_RPAREN ? '(' : code == DSL_T_RBRACKET ? '[' : '{';
}

static char closer_for(char opener)
{
    return opener == '(' ? ')' : opener == '[' ? ']' : '}';
}

/* The keywords that begin a statement (after a syntax error, parsing resumes at one). */
static bool is_keyword_statement(int code)
{
    return code == DSL_T_RULE || code == DSL_T_SET || code == DSL_T_PRED ||
           code == DSL_T_FOR || code == DSL_T_INCLUDE;
}

/* How a token is named in a message: "'=>'", "end of file", "a string". */
static const char *describe(dsl_parse *ctx, int code, dsl_token tok)
{
    if (code == 0)
        return "end of file";
    if (code == DSL_T_STRING)
        return "a string";
    const char *text = dsl_tok_text(ctx->src, tok);
    if (tok.len > MAX_SHOWN_TOKEN)
        return ar_printf(ctx->rs->arena, "'%.*s...'", MAX_SHOWN_TOKEN, text);
    return ar_printf(ctx->rs->arena, "'%.*s'", (int)tok.len, text);
}

/* Whether a token cannot appear before the innermost open bracket is closed: then the bracket
 * is the likely culprit, and the error names it. */
static bool needs_closer(const dsl_parse *ctx, int code, dsl_token tok, char open)
{
    if (tok.offset == 0 || ctx->src->text[tok.offset - 1] == '\n')
        return true; /* a new statement begins, most likely */
    switch (code) {
    case 0:
    case DSL_T_ARROW:
    case DSL_T_RULE:
    case DSL_T_SET:
    case DSL_T_PRED:
    case DSL_T_FOR:
    case DSL_T_INCLUDE:
    case DSL_T_WHERE:
    case DSL_T_LET:
        return true;
    case DSL_T_RPAREN:
    case DSL_T_RBRACKET:
    case DSL_T_RBRACE:
        return opener_of(code) != open;
    default:
        return false;
    }
}

/* Whether `=>` comes later on the token's line: then the token is no replacement, and something
 * else is missing (`Conv Relu => ...` lacks a '>'). */
static bool arrow_follows(const dsl_parse *ctx, dsl_token tok)
{
    const char *p = ctx->src->text + tok.offset, *end = ctx->src->text + ctx->src->len;
    for (; p + 1 < end && *p != '\n'; p++)
        if (p[0] == '=' && p[1] == '>')
            return true;
    return false;
}

void dsl_parse_syntax_error(dsl_parse *ctx, int code, dsl_token tok)
{
    ctx->failed = true;
    size_t at = tok.offset, len = tok.len;
    if (code == 0) { /* point just past the last token */
        at = ctx->last.offset + ctx->last.len;
        len = 1;
    }
    const char *what = describe(ctx, code, tok);
    if (code == DSL_T_VAR) {
        dg_error(ctx->dg, ctx->src, at, len,
                 "%s is a family variable: it stands only in the rule after a `for` header", what);
        return;
    }
    if (ctx->brackets.len) {
        dsl_token open = ctx->brackets.items[ctx->brackets.len - 1];
        char open_char = dsl_tok_text(ctx->src, open)[0];
        if (needs_closer(ctx, code, tok, open_char)) {
            dg_error(ctx->dg, ctx->src, at, len, "expected '%c' before %s", closer_for(open_char),
                     what);
            dg_note(ctx->dg, ctx->src, open.offset, 1, "to match this '%c'", open_char);
            return;
        }
    }
    bool next_statement = code == 0 || is_keyword_statement(code);
    if (next_statement && ctx->was_in_pattern && !ctx->brackets.len) {
        /* `rule r: Conv > Relu {act = Relu}`: the braces were the Relu's, and no `=>` came */
        dg_error(ctx->dg, ctx->src, ctx->last.offset + ctx->last.len, 1,
                 "expected '=>' and a replacement after the pattern, before %s", what);
        return;
    }
    if (ctx->in_pattern && (code == DSL_T_IDENT || code == DSL_T_LBRACE) && !arrow_follows(ctx, tok)) {
        /* `Conv > Relu FusedConvAct`: a complete pattern, then what can only be its replacement */
        dg_error(ctx->dg, ctx->src, at, len,
                 "expected '=>' before %s (a rule is `rule NAME: PATTERN => REPLACEMENT`)", what);
        return;
    }
    dg_error(ctx->dg, ctx->src, at, len, "unexpected %s", what);
}

void dsl_parse_overflow(dsl_parse *ctx)
{
    ctx->failed = true;
    dg_error(ctx->dg, ctx->src, ctx->current.offset, ctx->current.len,
             "too deeply nested (the parser's stack is exhausted)");
}

/* ---- the token loop ---- */

static void track_brackets(dsl_parse *ctx, int code, dsl_token tok)
{
    if (code == DSL_T_LPAREN || code == DSL_T_LBRACKET || code == DSL_T_LBRACE) {
        vec_push(&ctx->brackets, tok);
    } else if ((code == DSL_T_RPAREN || code == DSL_T_RBRACKET || code == DSL_T_RBRACE) &&
               ctx->brackets.len) {
        ctx->brackets.len--;
    }
}

bool dsl_starts_statement(const dsl_parse *ctx, int code, dsl_token tok)
{
    if (is_keyword_statement(code))
        return true;
    bool line_start = tok.offset == 0 || ctx->src->text[tok.offset - 1] == '\n';
    return line_start && (code == DSL_T_IDENT || code == DSL_T_LET);
}

static void feed(dsl_parse *ctx, void *parser, int code, dsl_token tok)
{
    ctx->current = tok;
    ctx->was_in_pattern = ctx->in_pattern;
    if (is_keyword_statement(code))
        ctx->in_pattern = code == DSL_T_RULE;
    else if (dsl_starts_statement(ctx, code, tok))
        ctx->in_pattern = true; /* an anonymous rule, or a `let` before its pattern */
    else if (code == DSL_T_ARROW)
        ctx->in_pattern = false;
    dsl_parser(parser, code, tok);
    if (!ctx->failed) {
        track_brackets(ctx, code, tok);
        ctx->last = tok;
    }
}

/* Drops the half-parsed statement (the destructors free its lists). */
static void reset(dsl_parse *ctx, void *parser)
{
    dsl_parserFinalize(parser);
    dsl_parserInit(parser, ctx);
    ctx->brackets.len = 0;
    ctx->failed = false;
    ctx->too_deep = false;
}

static void run(dsl_parse *ctx, void *parser)
{
    bool skipping = false;
    int pending = -1; /* a token read ahead by a rule family's expansion */
    dsl_token next = {0};
    for (;;) {
        dsl_token tok = next;
        int code = pending;
        if (pending < 0)
            code = dsl_lex(ctx, &tok);
        pending = -1;
        if (skipping && code != 0 && !dsl_starts_statement(ctx, code, tok))
            continue;
        skipping = false;
        feed(ctx, parser, code, tok);
        if (ctx->family && !ctx->failed) {
            /* the `for` header is done; tok begins its rule, which the family parses instead */
            reset(ctx, parser);
            if (code == 0)
                break;
            pending = dsl_expand_family(ctx, code, tok, &next);
            continue;
        }
        if (ctx->failed) {
            reset(ctx, parser);
            if (code == 0)
                break;
            /* The offending token may itself begin the next statement. */
            skipping = true;
            if (dsl_starts_statement(ctx, code, tok)) {
                feed(ctx, parser, code, tok);
                skipping = ctx->failed;
                if (ctx->failed)
                    reset(ctx, parser);
            }
            continue;
        }
        if (code == 0)
            break;
    }
}

void dsl_parse_range(const dsl_parse *outer, const dg_source *src, uint32_t start, uint32_t end,
                     uint32_t line)
{
    dsl_parse ctx = {0};
    ctx.rs = outer->rs;
    ctx.dg = outer->dg;
    ctx.src = src;
    ctx.includer = outer->includer;
    ctx.parent = outer->parent;
    ctx.included_at = outer->included_at;
    ctx.identity = outer->identity;
    ctx.include_depth = outer->include_depth;
    dsl_lex_init(&ctx.lex, src);
    ctx.lex.cur = ctx.lex.start + start;
    ctx.lex.line = line;
    void *parser = dsl_parserAlloc(malloc, &ctx);
    FR_CHECK(parser != NULL);
    for (;;) {
        dsl_token tok;
        int code = dsl_lex(&ctx, &tok);
        if (code == 0 || tok.offset >= end) {
            feed(&ctx, parser, 0, (dsl_token){end, 0, tok.line});
            break;
        }
        feed(&ctx, parser, code, tok);
        if (ctx.failed)
            break; /* one syntax error per rule of a family */
    }
    dsl_parserFree(parser, free);
    vec_free(&ctx.brackets);
}

static void parse_source(dsl_ruleset *rs, dg_context *dg, const dg_source *src, dsl_parse *parent,
                         dsl_token included_at, const char *identity)
{
    dsl_parse ctx = {0};
    ctx.rs = rs;
    ctx.dg = dg;
    ctx.src = src;
    ctx.includer = src->path;
    ctx.parent = parent;
    ctx.included_at = included_at;
    ctx.identity = identity;
    ctx.include_depth = parent ? parent->include_depth + 1 : 0;
    dsl_lex_init(&ctx.lex, src);
    void *parser = dsl_parserAlloc(malloc, &ctx);
    FR_CHECK(parser != NULL);
    run(&ctx, parser);
    dsl_parserFree(parser, free);
    vec_free(&ctx.brackets);
}

/* ---- files ---- */

/* Keeps a source for the rule set's lifetime (diagnostics and rules point into it). */
static const dg_source *keep_source(dsl_ruleset *rs, const char *path, const char *text,
                                    size_t len)
{
    dg_source *src = ar_alloc(rs->arena, sizeof *src);
    src->path = ar_strdup(rs->arena, path);
    src->text = text;
    src->len = len;
    vec_push(&rs->state->sources, src);
    return src;
}

/* An error about a file: located at the include that names it, or about the path itself. */
static void file_error(dg_context *dg, const dsl_parse *parent, dsl_token at, const char *path,
                       const char *problem)
{
    if (parent)
        dg_error(dg, parent->src, at.offset, at.len, "cannot include '%s': %s", path, problem);
    else
        dg_error_path(dg, path, "%s", problem);
}

static bool on_include_stack(const dsl_parse *parent, const char *identity)
{
    for (const dsl_parse *p = parent; p; p = p->parent)
        if (strcmp(p->identity, identity) == 0)
            return true;
    return false;
}

static void report_cycle(dg_context *dg, const dsl_parse *parent, dsl_token at, const char *path)
{
    dg_error(dg, parent->src, at.offset, at.len, "include cycle: '%s' is already being read",
             path);
    for (const dsl_parse *p = parent; p->parent; p = p->parent)
        dg_note(dg, p->parent->src, p->included_at.offset, p->included_at.len,
                "'%s' is included from here", p->src->path);
}

/* Rules are text: a control byte first (an ONNX model's first byte is a protobuf tag below 0x20)
 * means a binary file, reported once instead of an error per garbled line echoing its bytes. */
static bool is_binary(const dg_source *text)
{
    unsigned char c = text->len ? (unsigned char)text->text[0] : ' ';
    return (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') ||
           c == 0x7f;
}

const dg_source *dsl_keep_source(dsl_ruleset *rs, const char *path, char *text, size_t len)
{
    return keep_source(rs, path, text, len);
}

static void load_file(dsl_ruleset *rs, dg_context *dg, dsl_parse *parent, dsl_token at,
                      const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        file_error(dg, parent, at, path, strerror(errno));
        return;
    }
    if (S_ISDIR(sb.st_mode)) { /* `-r rules/`: the shell expands the glob of its files, we do not */
        const char *slash = path[0] && path[strlen(path) - 1] == '/' ? "" : "/";
        char hint[512];
        snprintf(hint, sizeof hint, "is a directory; name its rule files (%.400s%s*.rules)",
                 path, slash);
        file_error(dg, parent, at, path, parent ? "is a directory" : hint);
        return;
    }
    if (!S_ISREG(sb.st_mode)) {
        file_error(dg, parent, at, path, "not a regular file");
        return;
    }
    if (sb.st_size > MAX_FILE_BYTES) {
        file_error(dg, parent, at, path, "larger than 64 MiB");
        return;
    }
    char identity[64];
    snprintf(identity, sizeof identity, "%" PRIuMAX ":%" PRIuMAX, (uintmax_t)sb.st_dev,
             (uintmax_t)sb.st_ino);
    if (on_include_stack(parent, identity)) {
        report_cycle(dg, parent, at, path);
        return;
    }
    dsl_state *st = rs->state;
    if (sm_get(&st->loaded, identity, strlen(identity)))
        return; /* a file included twice is loaded once */
    dg_source text;
    if (!dg_source_read(dg, path, &text))
        return;
    if (is_binary(&text)) {
        file_error(dg, parent, at, path, "a binary file (an ONNX model?), not rules text");
        dg_source_release(&text);
        return;
    }
    const dg_source *src = keep_source(rs, path, text.text, text.len);
    const char *key = ar_strdup(rs->arena, identity);
    sm_put(&st->loaded, key, strlen(key), (void *)src);
    parse_source(rs, dg, src, parent, at, key);
}

void dsl_include(dsl_parse *ctx, dsl_token keyword, dsl_token path)
{
    if (ctx->rs->state->opts.no_includes) {
        dg_error(ctx->dg, ctx->src, keyword.offset, keyword.len, "include is disabled here");
        return;
    }
    const char *name = dsl_decode_string(ctx, path);
    if (!name[0]) {
        dg_error(ctx->dg, ctx->src, path.offset, path.len, "empty include path");
        return;
    }
    if (ctx->include_depth + 1 >= MAX_INCLUDE_DEPTH) {
        dg_error(ctx->dg, ctx->src, path.offset, path.len, "includes nest more than %d deep",
                 MAX_INCLUDE_DEPTH);
        return;
    }
    const char *full = path_beside(ctx->rs->arena, ctx->includer, name);
    load_file(ctx->rs, ctx->dg, ctx, path, full);
}

bool dsl_load_file(dsl_ruleset *rs, const char *path, dg_context *dg)
{
    size_t errors = dg_error_count(dg);
    uint32_t rules = rs->nrules;
    if (strcmp(path, "-") == 0) { /* rules on stdin: includes are relative to the working folder */
        dg_source text;
        if (dg_source_read(dg, path, &text)) {
            if (is_binary(&text))
                dg_error_path(dg, text.path, "a binary file (an ONNX model?), not rules text");
            else
                dsl_load_text(rs, text.path, text.text, text.len, dg);
            dg_source_release(&text);
        }
        path = "<stdin>";
    } else {
        load_file(rs, dg, NULL, dsl_no_token(), path);
    }
    bool ok = dg_error_count(dg) == errors;
    if (ok && rs->nrules == rules) /* an empty file, or one of sets only: say so, once */
        dg_warning_path(dg, path, "no rules here: this file fuses nothing");
    return ok;
}

bool dsl_load_text(dsl_ruleset *rs, const char *path, const char *text, size_t len,
                   dg_context *dg)
{
    if (len > MAX_FILE_BYTES) {
        dg_error_path(dg, path, "larger than 64 MiB");
        return false;
    }
    size_t errors = dg_error_count(dg);
    char *copy = malloc(len + 1); /* with the NUL sentinel the lexer needs */
    FR_CHECK(copy != NULL);
    if (len)
        memcpy(copy, text, len);
    copy[len] = '\0';
    const dg_source *src = keep_source(rs, path, copy, len);
    parse_source(rs, dg, src, NULL, dsl_no_token(), "");
    return dg_error_count(dg) == errors;
}
