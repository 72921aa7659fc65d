/* The .graph lexer (re2c). One function per lexical mode: lex_main for tokens, lex_string for the
 * body of a quoted string, lex_comment for a comment. Tokens carry byte offsets; line and column
 * are computed only when a diagnostic is printed. All state lives in the gp_lexer the caller owns.
 *
 * The text ends with a NUL sentinel (re2c's `$` rule fires there); a NUL byte inside the text is an
 * error located at the byte, and so is every byte that is not valid UTF-8. */
#include "ir/parse_internal.h"

#include "grammar/graph_grammar.h"

/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;

    name_start = [A-Za-z_/];
    name_char  = [A-Za-z0-9_./-];
    name       = name_start name_char*;
    digits     = [0-9]+;
    exponent   = [eE] [+-]? digits;
    integer    = "-"? digits;
    number     = "-"? (digits "." [0-9]* | "." digits) exponent?
               | "-"? digits exponent
               | "-"? "inf" | "nan";
    utf8       = [\xc2-\xdf] [\x80-\xbf]
               | "\xe0" [\xa0-\xbf] [\x80-\xbf]
               | [\xe1-\xec\xee\xef] [\x80-\xbf]{2}
               | "\xed" [\x80-\x9f] [\x80-\xbf]
               | "\xf0" [\x90-\xbf] [\x80-\xbf]{2}
               | [\xf1-\xf3] [\x80-\xbf]{3}
               | "\xf4" [\x80-\x8f] [\x80-\xbf]{2};
*/

static uint32_t offset_of(const gp_lexer *lx, const unsigned char *p)
{
    return (uint32_t)(p - lx->text);
}

/* A byte that no rule accepts: a NUL, a byte that is not UTF-8, or a stray character. */
static void bad_byte(gp_lexer *lx, const unsigned char *p)
{
    uint32_t at = offset_of(lx, p);
    if (*p == 0)
        dg_error(lx->dg, lx->src, at, 1, "NUL byte in the text");
    else if (*p >= 0x80)
        dg_error(lx->dg, lx->src, at, 1, "invalid UTF-8 byte 0x%02x", *p);
    else if (*p < 0x20 || *p == 0x7f)
        dg_error(lx->dg, lx->src, at, 1, "unexpected control character 0x%02x", *p);
    else
        dg_error(lx->dg, lx->src, at, 1, "unexpected character '%c'", *p);
    lx->line_error = true;
}

static void unterminated(gp_lexer *lx, const unsigned char *open)
{
    dg_error(lx->dg, lx->src, offset_of(lx, open), 1, "unterminated string");
    lx->line_error = true;
}

/* Scans the body of a quoted string whose opening quote is at `open`, up to and including its
 * closing quote. Bad escapes, NUL bytes and invalid UTF-8 are reported and skipped; a string that
 * reaches the end of its line is unterminated (the line break is left for lex_main). */
static void lex_string(gp_lexer *lx, const unsigned char *open)
{
    const unsigned char *YYLIMIT = lx->text + lx->len, *YYMARKER;
    for (;;) {
        const unsigned char *YYCURSOR = lx->text + lx->pos, *start = YYCURSOR;
        /*!re2c
            "\""                                { lx->pos = offset_of(lx, YYCURSOR); return; }
            ([^"\\\n\x00\x80-\xff] | utf8)+     { lx->pos = offset_of(lx, YYCURSOR); continue; }
            "\\x00"                             {
                dg_error(lx->dg, lx->src, offset_of(lx, start), 4, "a string cannot hold a NUL byte");
                lx->line_error = true;
                lx->pos = offset_of(lx, YYCURSOR);
                continue;
            }
            "\\" ["\\nt] | "\\x" [0-9a-fA-F]{2} { lx->pos = offset_of(lx, YYCURSOR); continue; }
            "\\"                                {
                dg_error(lx->dg, lx->src, offset_of(lx, start), 2,
                         "unknown escape sequence; a string may use \\\", \\\\, \\n, \\t and \\xHH");
                lx->line_error = true;
                lx->pos = offset_of(lx, YYCURSOR);
                continue;
            }
            "\n"                                { unterminated(lx, open); return; }
            $                                   { unterminated(lx, open); return; }
            *                                   {
                bad_byte(lx, start);
                lx->pos = offset_of(lx, YYCURSOR);
                continue;
            }
        */
    }
}

/* Skips a comment, from '#' to the end of its line (the line break is left for lex_main). */
static void lex_comment(gp_lexer *lx)
{
    const unsigned char *YYLIMIT = lx->text + lx->len, *YYMARKER;
    for (;;) {
        const unsigned char *YYCURSOR = lx->text + lx->pos, *start = YYCURSOR;
        /*!re2c
            ([^\n\x00\x80-\xff] | utf8)+  { lx->pos = offset_of(lx, YYCURSOR); continue; }
            "\n"                          { return; }
            $                             { return; }
            *                             {
                bad_byte(lx, start);
                lx->pos = offset_of(lx, YYCURSOR);
                continue;
            }
        */
    }
}

/* The next token, line breaks included. */
static int lex_main(gp_lexer *lx, gp_token *tok)
{
    const unsigned char *YYLIMIT = lx->text + lx->len, *YYMARKER;
    for (;;) {
        const unsigned char *YYCURSOR = lx->text + lx->pos, *start = YYCURSOR;
        int code = 0;
        /*!re2c
            [ \t\r]+             { lx->pos = offset_of(lx, YYCURSOR); continue; }
            "#"                  { lx->pos = offset_of(lx, YYCURSOR); lex_comment(lx); continue; }
            "\n"                 { code = GP_NEWLINE; goto done; }

            "graph"              { code = GP_GRAPH; goto done; }
            "input"              { code = GP_INPUT; goto done; }
            "const"              { code = GP_CONST; goto done; }
            "output"             { code = GP_OUTPUT; goto done; }
            "random"             { code = GP_RANDOM; goto done; }
            "file"               { code = GP_FILE; goto done; }

            integer              { code = GP_INT; goto done; }
            number               { code = GP_FLOAT; goto done; }
            name                 { code = GP_NAME; goto done; }
            [0-9] name_char*     {
                dg_error(lx->dg, lx->src, offset_of(lx, start), (uint32_t)(YYCURSOR - start),
                         "not a number, and a name cannot start with a digit (quote it: \"%.*s\")",
                         (int)(YYCURSOR - start), (const char *)start);
                lx->line_error = true;
                code = GP_NAME;
                goto done;
            }
            "\""                 {
                lx->pos = offset_of(lx, YYCURSOR);
                lex_string(lx, start);
                YYCURSOR = lx->text + lx->pos;
                code = GP_STRING;
                goto done;
            }
            "@" name_char+       { code = GP_KERNEL; goto done; }
            "@\""                {
                lx->pos = offset_of(lx, YYCURSOR);
                lex_string(lx, start + 1);
                YYCURSOR = lx->text + lx->pos;
                code = GP_KERNEL;
                goto done;
            }
            "@"                  {
                dg_error(lx->dg, lx->src, offset_of(lx, start), 1,
                         "expected a kernel name after '@'");
                lx->line_error = true;
                lx->pos = offset_of(lx, YYCURSOR);
                continue;
            }

            "="                  { code = GP_EQ; goto done; }
            ":"                  { code = GP_COLON; goto done; }
            ","                  { code = GP_COMMA; goto done; }
            "("                  { code = GP_LPAREN; goto done; }
            ")"                  { code = GP_RPAREN; goto done; }
            "["                  { code = GP_LBRACKET; goto done; }
            "]"                  { code = GP_RBRACKET; goto done; }
            "{"                  { code = GP_LBRACE; goto done; }
            "}"                  { code = GP_RBRACE; goto done; }
            "?"                  { code = GP_QUESTION; goto done; }
            "*"                  { code = GP_STAR; goto done; }
            "+"                  { code = GP_PLUS; goto done; }
            "-"                  { code = GP_MINUS; goto done; }

            utf8                 {
                dg_error(lx->dg, lx->src, offset_of(lx, start), (uint32_t)(YYCURSOR - start),
                         "unexpected character '%.*s' (names with other characters must be quoted)",
                         (int)(YYCURSOR - start), (const char *)start);
                lx->line_error = true;
                lx->pos = offset_of(lx, YYCURSOR);
                continue;
            }
            $                    { tok->offset = lx->last_end; tok->len = 0; return 0; }
            *                    { bad_byte(lx, start); lx->pos = offset_of(lx, YYCURSOR); continue; }
        */
    done:
        tok->offset = offset_of(lx, start);
        tok->len = (uint32_t)(YYCURSOR - start);
        lx->pos = offset_of(lx, YYCURSOR);
        return code;
    }
}

void gp_lexer_init(gp_lexer *lx, const dg_source *src, const unsigned char *text, dg_context *dg)
{
    *lx = (gp_lexer){.src = src, .dg = dg, .text = text, .len = src->len};
}

/* Brackets decide where line breaks are spacing: inside '(', '[' and an attribute block's '{'
 * (a '{' right after ')'), but not inside the graph's own braces. A closing bracket closes the
 * innermost open one whatever its kind; the parser reports the mismatch. */
static void track_brackets(gp_lexer *lx, int code, gp_token tok)
{
    bool opens = code == GP_LPAREN || code == GP_LBRACKET || (code == GP_LBRACE && lx->last == GP_RPAREN);
    bool closes = code == GP_RPAREN || code == GP_RBRACKET || code == GP_RBRACE;
    if (opens) {
        if (lx->depth < GP_MAX_OPEN)
            lx->open_at[lx->depth] = tok.offset;
        if (lx->depth < UINT32_MAX)
            lx->depth++;
    } else if (closes && lx->depth > 0) {
        lx->depth--;
    }
}

int gp_lex(gp_lexer *lx, gp_token *tok)
{
    for (;;) {
        int code = lex_main(lx, tok);
        if (code == GP_NEWLINE && (lx->depth > 0 || lx->last == GP_NEWLINE || lx->last == 0))
            continue; /* a blank line, or a line break inside brackets */
        if (code == 0 && lx->depth == 0 && lx->last != GP_NEWLINE && lx->last != 0) {
            /* the last line has no line break: end it as if it had one */
            *tok = (gp_token){lx->last_end, 0};
            code = GP_NEWLINE;
        }
        track_brackets(lx, code, *tok);
        lx->last = code;
        if (code != 0 && code != GP_NEWLINE) /* the end of input is reported after the last word */
            lx->last_end = tok->offset + tok->len;
        return code;
    }
}

bool gp_lexer_open_bracket(const gp_lexer *lx, uint32_t *offset)
{
    if (lx->depth == 0 || lx->depth > GP_MAX_OPEN)
        return false;
    *offset = lx->open_at[lx->depth - 1];
    return true;
}
