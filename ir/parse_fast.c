/* The common lines of a .graph file read without the general grammar: a node line
 * (`c0 : f32[1,4,2,2] = Conv(x, w0) {kernel_shape=[1,1]}`) and a constant line
 * (`const w0 : f32[4,4,1,1] = random(seed=100, lo=-0.5, hi=0.5)`, or a literal), which are nearly
 * every line of a large graph.
 *
 * The Lemon grammar (grammar/graph.y) and the re2c lexer (grammar/graph.re) stay the one
 * definition of the language: this is a shortcut for exactly the shapes listed below, taken only
 * where the grammar is between two statements, and it hands every other line to them untouched.
 * A line is read in two steps:
 *
 *  1. recognize: the whole line, up to and including its line break, is matched against the
 *     shapes below, with no side effect (no diagnostic, no allocation, nothing built). Anything
 *     else, including anything the lexer or the grammar would report (a stray or non-ASCII byte,
 *     a comment, a quoted name, a keyword used as a name, a number followed by letters, a line
 *     break inside brackets, a dim expression, nested lists, too many of a thing), makes the line
 *     not ours: the driver then lexes and parses it as always, from its first byte, so every
 *     syntax error is still reported by the grammar.
 *  2. build: the builders the grammar's actions call (ir/parse_build.c) are called with the same
 *     tokens, in the order the grammar's reductions call them, so that the graph and every
 *     semantic diagnostic (an unknown op, a duplicate name, a bad attribute value) are the same.
 *
 * Skipping a statement leaves the parser where it was: each statement reduces to `stmts` with no
 * action of its own, so the parser in state "stmts" before a line is in the same state after it.
 * The lexer's state (position, last token, where the last token ended) is moved past the line as
 * if it had lexed it.
 *
 * Shapes (spaces and tabs allowed between tokens, as the lexer allows them):
 *   line     := result (',' result)* '=' NAME '(' [NAME (',' NAME)*] ')' [attrs] [KERNEL] '\n'
 *             | 'const' NAME ':' type '=' (literal | 'random' '(' [attr (',' attr)*] ')') '\n'
 *   result   := NAME [':' type]
 *   type     := NAME '[' (']' | '*' ']' | dim (',' dim)* ']') [NAME]
 *   dim      := INT | NAME | '?'
 *   attrs    := '{' '}' | '{' attr (',' attr)* '}'
 *   attr     := NAME '=' literal
 *   literal  := INT | FLOAT | STRING | '[' ']' | '[' scalar (',' scalar)* ']'
 * where NAME is unquoted and not a keyword (nor `inf`, `nan`), STRING has no escapes and only
 * ASCII, FLOAT is written with digits (`1.5`, `-2e-3`, `3.`), and a blank line is skipped. */
#include "ir/parse_internal.h"

#include <string.h>

enum {
    FAST_RESULTS = 8,
    FAST_OPERANDS = 64,
    FAST_ATTRS = 16,
    FAST_LITS = 128, /* literals of a line, list items included */
};

typedef struct {
    gp_token dtype, end, layout; /* layout.len == 0: none */
    int ndims;                   /* -1: `[*]` */
    gp_token dims[IR_MAX_RANK];
} fast_type;

typedef struct {
    gp_lit_kind kind;
    gp_token tok;          /* for a list, its '[' */
    uint32_t first, count; /* LIST: its items, lits[first .. first + count - 1] */
} fast_lit;

typedef struct {
    gp_token name;
    uint32_t lit;
} fast_attr;

/* A recognized line. */
typedef struct {
    const unsigned char *text;
    uint32_t pos;      /* the cursor */
    uint32_t last_end; /* where the last token ended */
    bool is_const;
    uint32_t nresults, noperands, nattrs, nlits;
    gp_token results[FAST_RESULTS];
    bool typed[FAST_RESULTS];
    fast_type types[FAST_RESULTS]; /* a constant's type is types[0] */
    gp_token op, kernel;           /* kernel.len == 0: none */
    gp_token operands[FAST_OPERANDS];
    bool has_random; /* a constant: random(...) rather than a literal */
    gp_token random;
    uint32_t value; /* a constant: its literal */
    fast_attr attrs[FAST_ATTRS];
    fast_lit lits[FAST_LITS];
} fast_line;

/* ---- recognizing --------------------------------------------------------------------------- */

/* The lexer's classes (grammar/graph.re): spacing, name_start, name_char, digits. */
enum { C_SPACE = 1, C_START = 2, C_NAME = 4, C_DIGIT = 8 };
static const unsigned char cls[256] = {
    [' '] = C_SPACE,
    ['\t'] = C_SPACE,
    ['\r'] = C_SPACE,
    ['a' ... 'z'] = C_START | C_NAME,
    ['A' ... 'Z'] = C_START | C_NAME,
    ['_'] = C_START | C_NAME,
    ['/'] = C_START | C_NAME,
    ['0' ... '9'] = C_NAME | C_DIGIT,
    ['.'] = C_NAME,
    ['-'] = C_NAME,
};

static bool name_start(unsigned char c)
{
    return cls[c] & C_START;
}

static bool name_char(unsigned char c)
{
    return cls[c] & C_NAME;
}

static bool digit(unsigned char c)
{
    return cls[c] & C_DIGIT;
}

/* (The cursor is read into locals: a byte read through an unsigned char pointer may alias the
 * line's fields, which the compiler would otherwise load and store again for each byte.) */
static inline void skip_space(fast_line *f)
{
    const unsigned char *s = f->text;
    uint32_t i = f->pos;
    while (cls[s[i]] & C_SPACE)
        i++;
    f->pos = i;
}

/* The next byte after spaces is c: consumed. */
static inline bool punct(fast_line *f, unsigned char c)
{
    skip_space(f);
    if (f->text[f->pos] != c)
        return false;
    f->pos++;
    f->last_end = f->pos;
    return true;
}

static bool peek(fast_line *f, unsigned char c)
{
    skip_space(f);
    return f->text[f->pos] == c;
}

static bool is(const unsigned char *s, uint32_t len, const char *w, uint32_t wlen)
{
    return len == wlen && memcmp(s, w, wlen) == 0;
}

/* Words the lexer reads as something other than a name: its keywords, and `inf` and `nan`,
 * which are numbers. */
static bool reserved(const unsigned char *s, uint32_t len)
{
    switch (s[0]) {
    case 'g': return is(s, len, "graph", 5);
    case 'i': return is(s, len, "input", 5) || is(s, len, "inf", 3);
    case 'c': return is(s, len, "const", 5);
    case 'o': return is(s, len, "output", 6);
    case 'r': return is(s, len, "random", 6);
    case 'f': return is(s, len, "file", 4);
    case 'n': return is(s, len, "nan", 3);
    }
    return false;
}

/* The word at the cursor (after spaces): as the lexer's name rule matches it; len 0 if none. */
static inline gp_token word(fast_line *f)
{
    skip_space(f);
    const unsigned char *s = f->text;
    uint32_t start = f->pos, end = start;
    if (name_start(s[end]))
        for (end++; name_char(s[end]);)
            end++;
    return (gp_token){start, end - start};
}

static void take(fast_line *f, gp_token t)
{
    f->pos = f->last_end = t.offset + t.len;
}

/* An unquoted name (a keyword is not one). */
static inline bool name(fast_line *f, gp_token *out)
{
    gp_token t = word(f);
    if (t.len == 0 || reserved(f->text + t.offset, t.len))
        return false;
    take(f, t);
    *out = t;
    return true;
}

/* keyword() past its first byte. */
static bool keyword_rest(fast_line *f, const char *w, uint32_t wlen, gp_token *out)
{
    gp_token t = word(f);
    if (!is(f->text + t.offset, t.len, w, wlen))
        return false;
    take(f, t);
    *out = t;
    return true;
}

/* The keyword w (wlen bytes). A word that starts with another byte is not scanned, nor is a
 * call made for it (the first word of most lines is a result's name, not `const`). */
static inline bool keyword(fast_line *f, const char *w, uint32_t wlen, gp_token *out)
{
    skip_space(f);
    if (f->text[f->pos] != (unsigned char)w[0])
        return false;
    return keyword_rest(f, w, wlen, out);
}

/* What may follow a number, so that the lexer's longest match ends where this one does. */
static bool ends_number(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ']' || c == '}' ||
           c == ')';
}

/* An INT (`-`? digits) or a FLOAT written with digits; false for anything else. */
static bool number(fast_line *f, gp_token *out, gp_lit_kind *kind)
{
    skip_space(f);
    const unsigned char *s = f->text;
    uint32_t i = f->pos;
    if (s[i] == '-')
        i++;
    if (!digit(s[i]))
        return false;
    while (digit(s[i]))
        i++;
    *kind = GP_LIT_INT;
    if (s[i] == '.') {
        i++;
        while (digit(s[i]))
            i++;
        *kind = GP_LIT_FLOAT;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        uint32_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (!digit(s[j]))
            return false;
        while (digit(s[j]))
            j++;
        i = j;
        *kind = GP_LIT_FLOAT;
    }
    if (!ends_number(s[i]))
        return false;
    *out = (gp_token){f->pos, i - f->pos};
    f->pos = f->last_end = i;
    return true;
}

/* A quoted string with no escapes, of ASCII bytes. */
static bool string(fast_line *f, gp_token *out)
{
    skip_space(f);
    const unsigned char *s = f->text;
    uint32_t i = f->pos;
    if (s[i] != '"')
        return false;
    for (i++; s[i] != '"'; i++)
        if (s[i] == '\\' || s[i] == '\n' || s[i] == 0 || s[i] >= 0x80)
            return false;
    *out = (gp_token){f->pos, i + 1 - f->pos};
    f->pos = f->last_end = i + 1;
    return true;
}

static bool scalar(fast_line *f, fast_lit *lit)
{
    if (number(f, &lit->tok, &lit->kind))
        return true;
    lit->kind = GP_LIT_STRING;
    return string(f, &lit->tok);
}

/* A literal into f->lits (*index: where); a list's items follow it. */
static bool literal(fast_line *f, uint32_t *index)
{
    if (f->nlits == FAST_LITS)
        return false;
    *index = f->nlits++;
    fast_lit *lit = &f->lits[*index];
    skip_space(f);
    if (f->text[f->pos] != '[')
        return scalar(f, lit);
    lit->kind = GP_LIT_LIST;
    lit->tok = (gp_token){f->pos, 1};
    lit->first = f->nlits;
    lit->count = 0;
    f->pos++;
    f->last_end = f->pos;
    if (punct(f, ']'))
        return true;
    do {
        if (f->nlits == FAST_LITS || !scalar(f, &f->lits[f->nlits]))
            return false;
        f->nlits++;
        lit->count++;
    } while (punct(f, ','));
    return punct(f, ']');
}

static bool attr(fast_line *f)
{
    if (f->nattrs == FAST_ATTRS)
        return false;
    fast_attr *a = &f->attrs[f->nattrs++];
    return name(f, &a->name) && punct(f, '=') && literal(f, &a->lit);
}

static bool dim(fast_line *f, gp_token *out)
{
    gp_lit_kind kind;
    skip_space(f);
    if (f->text[f->pos] == '?') {
        *out = (gp_token){f->pos, 1};
        f->pos++;
        f->last_end = f->pos;
        return true;
    }
    if (digit(f->text[f->pos]))
        return number(f, out, &kind) && kind == GP_LIT_INT;
    return name(f, out);
}

static bool type(fast_line *f, fast_type *t)
{
    if (!name(f, &t->dtype) || !punct(f, '['))
        return false;
    t->ndims = 0;
    t->layout = gp_none();
    if (punct(f, '*')) {
        t->ndims = -1;
    } else if (!peek(f, ']')) {
        do {
            if (t->ndims == IR_MAX_RANK || !dim(f, &t->dims[t->ndims]))
                return false;
            t->ndims++;
        } while (punct(f, ','));
    }
    skip_space(f);
    if (f->text[f->pos] != ']')
        return false;
    t->end = (gp_token){f->pos, 1};
    f->pos++;
    f->last_end = f->pos;
    skip_space(f);
    if (name_start(f->text[f->pos]))
        return name(f, &t->layout);
    return true;
}

/* The end of the line: spaces, then its line break (consumed). */
static bool line_end(fast_line *f)
{
    skip_space(f);
    if (f->text[f->pos] != '\n')
        return false;
    f->pos++;
    return true;
}

static bool node_line(fast_line *f)
{
    do {
        if (f->nresults == FAST_RESULTS || !name(f, &f->results[f->nresults]))
            return false;
        f->typed[f->nresults] = punct(f, ':');
        if (f->typed[f->nresults] && !type(f, &f->types[f->nresults]))
            return false;
        f->nresults++;
    } while (punct(f, ','));
    if (!punct(f, '=') || !name(f, &f->op) || !punct(f, '('))
        return false;
    if (!punct(f, ')')) {
        do {
            if (f->noperands == FAST_OPERANDS || !name(f, &f->operands[f->noperands]))
                return false;
            f->noperands++;
        } while (punct(f, ','));
        if (!punct(f, ')'))
            return false;
    }
    if (punct(f, '{') && !punct(f, '}')) {
        do {
            if (!attr(f))
                return false;
        } while (punct(f, ','));
        if (!punct(f, '}'))
            return false;
    }
    f->kernel = gp_none();
    if (peek(f, '@')) {
        uint32_t end = f->pos + 1;
        while (name_char(f->text[end]))
            end++;
        if (end == f->pos + 1)
            return false;
        f->kernel = (gp_token){f->pos, end - f->pos};
        f->pos = f->last_end = end;
    }
    return line_end(f);
}

/* After `const`. */
static bool const_line(fast_line *f)
{
    f->is_const = true;
    f->nresults = 1;
    if (!name(f, &f->results[0]) || !punct(f, ':') || !type(f, &f->types[0]) || !punct(f, '='))
        return false;
    f->has_random = keyword(f, "random", 6, &f->random);
    if (!f->has_random)
        return literal(f, &f->value) && line_end(f);
    if (!punct(f, '('))
        return false;
    if (!punct(f, ')')) {
        do {
            if (!attr(f))
                return false;
        } while (punct(f, ','));
        if (!punct(f, ')'))
            return false;
    }
    return line_end(f);
}

/* ---- building ------------------------------------------------------------------------------ */

/* The type as the grammar's reductions make it: each dim's atom, then its push; then the type. */
static gp_type build_type(gp_state *st, const fast_type *t)
{
    if (t->ndims < 0)
        return gp_type_make(st, t->dtype, NULL, t->end, t->layout);
    if (t->ndims == 0)
        return gp_type_make(st, t->dtype, &(gp_type){.ok = true}, t->end, t->layout);
    gp_type dims = gp_dims_empty();
    for (int i = 0; i < t->ndims; i++)
        gp_dims_push(st, &dims, gp_dim_atom(st, t->dims[i]));
    return gp_type_make(st, t->dtype, &dims, t->end, t->layout);
}

static gp_lit *build_lit(gp_state *st, const fast_line *f, uint32_t index)
{
    const fast_lit *lit = &f->lits[index];
    if (lit->kind != GP_LIT_LIST)
        return gp_lit_new(st, lit->kind, lit->tok);
    if (lit->count == 0)
        return gp_lit_new(st, GP_LIT_LIST, lit->tok);
    /* `items ::= LBRACKET value`: the first item is made before its list */
    gp_lit *first = build_lit(st, f, lit->first);
    gp_lit *list = gp_lit_push(gp_lit_new(st, GP_LIT_LIST, lit->tok), first);
    for (uint32_t i = 1; i < lit->count; i++)
        gp_lit_push(list, build_lit(st, f, lit->first + i));
    return list;
}

static gp_attrs *build_attrs(gp_state *st, const fast_line *f)
{
    gp_attrs *list = NULL;
    for (uint32_t i = 0; i < f->nattrs; i++)
        list = gp_attrs_push(st, list, f->attrs[i].name, build_lit(st, f, f->attrs[i].lit));
    return list;
}

static void build(gp_state *st, const fast_line *f)
{
    if (f->is_const) {
        gp_type t = build_type(st, &f->types[0]);
        gp_result head = gp_result_make(f->results[0], &t);
        if (f->has_random)
            gp_const_random(st, &head, f->random, build_attrs(st, f));
        else
            gp_const_literal(st, &head, build_lit(st, f, f->value));
        return;
    }
    gp_results *results = NULL;
    for (uint32_t i = 0; i < f->nresults; i++) {
        gp_result r;
        if (f->typed[i]) {
            gp_type t = build_type(st, &f->types[i]);
            r = gp_result_make(f->results[i], &t);
        } else {
            r = gp_result_make(f->results[i], NULL);
        }
        results = gp_results_push(st, results, &r);
    }
    gp_names *operands = NULL;
    for (uint32_t i = 0; i < f->noperands; i++)
        operands = gp_names_push(st, operands, f->operands[i]);
    gp_node(st, results, f->op, operands, build_attrs(st, f), f->kernel);
}

/* ---- the driver's entry -------------------------------------------------------------------- */

/* Whether the text at pos is a blank line: skipped as the lexer would. */
static bool blank_line(gp_lexer *lx)
{
    size_t i = lx->pos;
    while (lx->text[i] == ' ' || lx->text[i] == '\t' || lx->text[i] == '\r')
        i++;
    if (lx->text[i] != '\n')
        return false;
    lx->pos = i + 1;
    return true;
}

/* Starts loading the name map's slot of the name the line at pos defines (its first name, or
 * the one after `const`), for the probe the next line's build makes: in a large graph's map a
 * probe is a cache miss, which this line's build then overlaps. */
static void prefetch_next(const gp_state *st, uint32_t pos)
{
    fast_line f;
    f.text = st->lx.text;
    f.pos = pos;
    gp_token t;
    (void)keyword(&f, "const", 5, &t); /* skipped where it is there */
    if (name(&f, &t))
        ir_names_prefetch(&st->g->by_name, (const char *)f.text + t.offset, t.len);
}

bool gp_fast_line(gp_state *st)
{
    gp_lexer *lx = &st->lx;
    while (blank_line(lx))
        ;
    fast_line f; /* its fields are set before they are read */
    f.text = lx->text;
    f.pos = (uint32_t)lx->pos;
    f.last_end = lx->last_end;
    f.is_const = false;
    f.nresults = f.noperands = f.nattrs = f.nlits = 0;
    gp_token kw;
    bool ok = keyword(&f, "const", 5, &kw) ? const_line(&f) : node_line(&f);
    if (!ok)
        return false;
    lx->pos = f.pos;
    lx->last_end = f.last_end;
    prefetch_next(st, f.pos);
    build(st, &f);
    st->fast_lines++;
    return true;
}
