/* The rules language lexer (re2c). Generated into build/grammar/rules_lexer.c; edit this file.
 *
 * Two modes, one function each: dsl_lex (the main mode) and lex_string (inside "..."). The source
 * ends with a NUL sentinel at lim, so a NUL byte inside the text is an ordinary (invalid) byte.
 * Bad bytes are reported here and skipped; a run of them gives one error. */
#include "dsl/parse.h"
#include "grammar/rules_grammar.h"

#include <stdio.h>

/*!re2c
    re2c:api:style = free-form;
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = "lx->cur";
    re2c:define:YYMARKER = "lx->marker";
    re2c:define:YYLIMIT = "lx->lim";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;

    ident    = [A-Za-z_][A-Za-z0-9_]*;
    digits   = [0-9]+;
    exponent = [eE] [+-]? digits;
    float    = digits "." digits? exponent? | digits exponent;
    space    = [ \t\r\f\v]+;
    comment  = "#" [^\n]*;
    control  = [\x01-\x08\x0e-\x1f\x7f];
    utf8tail = [\x80-\xbf];
    utf8     = [\xc2-\xdf] utf8tail
             | "\xe0" [\xa0-\xbf] utf8tail | [\xe1-\xec\xee\xef] utf8tail utf8tail
             | "\xed" [\x80-\x9f] utf8tail
             | "\xf0" [\x90-\xbf] utf8tail utf8tail | [\xf1-\xf3] utf8tail utf8tail utf8tail
             | "\xf4" [\x80-\x8f] utf8tail utf8tail;
*/

void dsl_lex_init(dsl_lexer *lx, const dg_source *src)
{
    lx->start = (const unsigned char *)src->text;
    lx->cur = lx->start;
    lx->lim = lx->start + src->len;
    lx->marker = lx->cur;
    lx->line = 1;
}

static int token(dsl_parse *ctx, dsl_token *tok, const unsigned char *from, int code)
{
    dsl_lexer *lx = &ctx->lex;
    tok->offset = (uint32_t)(from - lx->start);
    tok->len = (uint32_t)(lx->cur - from);
    tok->line = lx->line;
    return code;
}

static void bad(dsl_parse *ctx, const unsigned char *from, const char *what)
{
    dsl_lexer *lx = &ctx->lex;
    dg_error(ctx->dg, ctx->src, (size_t)(from - lx->start), (size_t)(lx->cur - from), "%s", what);
}

/* Whether the next byte starts nothing valid either, so that a run of bad bytes is one error. */
static bool bad_byte_follows(const dsl_lexer *lx)
{
    if (lx->cur >= lx->lim)
        return false;
    unsigned char c = *lx->cur;
    return c == 0 || (c >= 0x80 && c < 0xc2) || c > 0xf4;
}

static int unterminated(dsl_parse *ctx, dsl_token *tok, const unsigned char *from)
{
    bad(ctx, from, "unterminated string");
    return token(ctx, tok, from, DSL_T_STRING);
}

/* After the opening quote: up to the closing quote; a newline or the end of input leaves the
 * string unterminated. Escapes are checked here and decoded by the builders. */
static int lex_string(dsl_parse *ctx, dsl_token *tok, const unsigned char *from)
{
    dsl_lexer *lx = &ctx->lex;
    for (;;) {
        const unsigned char *at = lx->cur;
        /*!re2c
            "\""                    { return token(ctx, tok, from, DSL_T_STRING); }
            "\\" [\\"nt]            { continue; }
            "\\"                    { bad(ctx, at, "unknown escape in string (use \\\\, \\\", \\n or \\t)"); continue; }
            [\x20-\x21\x23-\x5b\x5d-\x7e\t]+ { continue; }
            utf8                    { continue; }
            "\n"                    { lx->cur = at; return unterminated(ctx, tok, from); }
            $                       { return unterminated(ctx, tok, from); }
            *                       { while (bad_byte_follows(lx)) lx->cur++;
                                      bad(ctx, at, "invalid UTF-8 or control byte in string");
                                      continue; }
        */
    }
}

int dsl_lex(dsl_parse *ctx, dsl_token *tok)
{
    dsl_lexer *lx = &ctx->lex;
    for (;;) {
        const unsigned char *from = lx->cur;
        /*!re2c
            $           { return token(ctx, tok, from, 0); }
            "\n"        { lx->line++; continue; }
            space       { continue; }
            comment     { continue; }

            "rule"      { return token(ctx, tok, from, DSL_T_RULE); }
            "set"       { return token(ctx, tok, from, DSL_T_SET); }
            "pred"      { return token(ctx, tok, from, DSL_T_PRED); }
            "for"       { return token(ctx, tok, from, DSL_T_FOR); }
            "in"        { return token(ctx, tok, from, DSL_T_IN); }
            "let"       { return token(ctx, tok, from, DSL_T_LET); }
            "include"   { return token(ctx, tok, from, DSL_T_INCLUDE); }
            "where"     { return token(ctx, tok, from, DSL_T_WHERE); }
            "priority"  { return token(ctx, tok, from, DSL_T_PRIORITY); }
            "phase"     { return token(ctx, tok, from, DSL_T_PHASE); }
            "exports"   { return token(ctx, tok, from, DSL_T_EXPORTS); }
            "shares"    { return token(ctx, tok, from, DSL_T_SHARES); }
            "_"         { return token(ctx, tok, from, DSL_T_UNDERSCORE); }
            ident       { return token(ctx, tok, from, DSL_T_IDENT); }
            "@" ident   { return token(ctx, tok, from, DSL_T_CAPTURE); }
            "@" ident "." digits { return token(ctx, tok, from, DSL_T_OUTPUT); }
            "$" ident   { return token(ctx, tok, from, DSL_T_VAR); }
            digits      { return token(ctx, tok, from, DSL_T_INT); }
            float       { return token(ctx, tok, from, DSL_T_FLOAT); }
            "\""        { return lex_string(ctx, tok, from); }

            "=>"        { return token(ctx, tok, from, DSL_T_ARROW); }
            "=="        { return token(ctx, tok, from, DSL_T_EQ); }
            "!="        { return token(ctx, tok, from, DSL_T_NE); }
            "<="        { return token(ctx, tok, from, DSL_T_LE); }
            ">="        { return token(ctx, tok, from, DSL_T_GE); }
            "&&"        { return token(ctx, tok, from, DSL_T_ANDAND); }
            "||"        { return token(ctx, tok, from, DSL_T_OROR); }
            "..."       { return token(ctx, tok, from, DSL_T_ELLIPSIS); }
            "<"         { return token(ctx, tok, from, DSL_T_LT); }
            ">"         { return token(ctx, tok, from, DSL_T_GT); }
            "="         { return token(ctx, tok, from, DSL_T_ASSIGN); }
            ":"         { return token(ctx, tok, from, DSL_T_COLON); }
            ","         { return token(ctx, tok, from, DSL_T_COMMA); }
            "&"         { return token(ctx, tok, from, DSL_T_AMP); }
            "|"         { return token(ctx, tok, from, DSL_T_PIPE); }
            "?"         { return token(ctx, tok, from, DSL_T_QUESTION); }
            "^"         { return token(ctx, tok, from, DSL_T_CARET); }
            "!"         { return token(ctx, tok, from, DSL_T_NOT); }
            "+"         { return token(ctx, tok, from, DSL_T_PLUS); }
            "-"         { return token(ctx, tok, from, DSL_T_MINUS); }
            "*"         { return token(ctx, tok, from, DSL_T_STAR); }
            "/"         { return token(ctx, tok, from, DSL_T_SLASH); }
            "%"         { return token(ctx, tok, from, DSL_T_PERCENT); }
            "("         { return token(ctx, tok, from, DSL_T_LPAREN); }
            ")"         { return token(ctx, tok, from, DSL_T_RPAREN); }
            "["         { return token(ctx, tok, from, DSL_T_LBRACKET); }
            "]"         { return token(ctx, tok, from, DSL_T_RBRACKET); }
            "{"         { return token(ctx, tok, from, DSL_T_LBRACE); }
            "}"         { return token(ctx, tok, from, DSL_T_RBRACE); }

            "@"         { bad(ctx, from, "expected a capture name after '@'"); continue; }
            "\x00"      { while (bad_byte_follows(lx)) lx->cur++;
                          bad(ctx, from, "NUL byte in rule text"); continue; }
            control     { bad(ctx, from, "control character in rule text"); continue; }
            utf8+       { bad(ctx, from, "non-ASCII text outside a string or comment"); continue; }
            [\x80-\xff] { while (bad_byte_follows(lx)) lx->cur++;
                          bad(ctx, from, "invalid UTF-8"); continue; }
            *           { dg_error(ctx->dg, ctx->src, (size_t)(from - lx->start), 1,
                                   "unexpected character '%c'", *from);
                          continue; }
        */
    }
}
