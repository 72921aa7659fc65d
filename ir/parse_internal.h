/* Internal to ir/: the pieces of the .graph text parser shared by the lexer (grammar/graph.re),
 * the grammar (grammar/graph.y), the builders its actions call (ir/parse_build.c) and the driver
 * (ir/parse.c), plus the "did you mean" helper that the parser and the validator share.
 *
 * Memory: the syntax pieces below (lists of names, attributes, literals) live on the malloc heap
 * only while the grammar assembles one line; the grammar's actions hand them to a builder, which
 * frees them, and its %destructor directives free what error recovery pops. A freed piece is kept
 * for the next line (gp_spares: the lines of a large graph would otherwise cost a dozen mallocs
 * each) until the parse ends. Everything that ends up in the graph is copied into the graph's
 * arena. */
#ifndef FUSERULE_IR_PARSE_INTERNAL_H
#define FUSERULE_IR_PARSE_INTERNAL_H

#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- tokens and the lexer ------------------------------------------------------------------ */

/* A token is a byte range of the source; its text is read back from the source when needed. */
typedef struct {
    uint32_t offset, len;
} gp_token;

/* The largest source the parser accepts: offsets are 32-bit. */
#define GP_MAX_SOURCE ((size_t)UINT32_MAX - 1)

enum { GP_MAX_OPEN = 256 }; /* open brackets whose positions the lexer remembers */

typedef struct {
    const dg_source *src;
    dg_context *dg;
    const unsigned char *text; /* the source's bytes followed by a NUL sentinel */
    size_t len;
    size_t pos;
    int last;                  /* code of the previous token returned; 0 before the first */
    uint32_t last_end;         /* where that token ended */
    uint32_t depth;            /* open '(', '[' and attribute '{': line breaks inside are spacing */
    uint32_t open_at[GP_MAX_OPEN];
    bool line_error;           /* a lexical error on this line: the syntax error it causes is not
                                * reported again (the driver clears it after each line) */
} gp_lexer;

void gp_lexer_init(gp_lexer *lx, const dg_source *src, const unsigned char *text,
                   dg_context *dg);
/* The next token's code (0 at the end of input). Blank lines and line breaks inside brackets are
 * not reported; the last line gets a NEWLINE even when the file does not end with one. */
int gp_lex(gp_lexer *lx, gp_token *tok);
/* Offset of the innermost open bracket, or false when none is open. */
bool gp_lexer_open_bracket(const gp_lexer *lx, uint32_t *offset);

/* ---- syntax pieces the grammar assembles --------------------------------------------------- */

/* A type as written, or a list of dims on its way to becoming one. */
typedef struct {
    ir_type type;
    uint32_t ndims;  /* dims written, which may exceed IR_MAX_RANK (reported once) */
    gp_token tok;    /* the whole type text */
    bool ok;         /* false after an error was reported about it */
} gp_type;

/* One name on the left of `=` in a node line, with its optional type. */
typedef struct {
    gp_token name;
    gp_type type;
    bool typed;
} gp_result;

typedef struct {
    VEC(gp_result) items;
} gp_results;

typedef struct {
    VEC(gp_token) items;
} gp_names;

typedef enum { GP_LIT_INT, GP_LIT_FLOAT, GP_LIT_STRING, GP_LIT_LIST } gp_lit_kind;

/* A literal: a number, a string, or a (possibly nested) list of literals. */
typedef struct gp_lit {
    gp_lit_kind kind;
    gp_token tok; /* the literal; for a list, its '[' */
    VEC(struct gp_lit *) items;
} gp_lit;

typedef struct {
    gp_token name;
    gp_lit *value;
} gp_attr_syntax;

typedef struct {
    VEC(gp_attr_syntax) items;
} gp_attrs;

/* An operand name waiting for the whole file to be read: node->inputs[index] = value named tok. */
typedef struct {
    ir_node *node;
    uint32_t index;
    gp_token tok;
} gp_ref;

/* Syntax pieces freed by earlier lines, with their lists' room, for the next ones to reuse. */
typedef struct {
    gp_results *results;
    gp_names *names;
    gp_attrs *attrs;
    VEC(gp_lit *) lits;
} gp_spares;

/* The parser's state: Lemon's %extra_context. */
typedef struct {
    ir_graph *g;
    const dg_source *src;
    dg_context *dg;
    gp_lexer lx;
    gp_token cur;              /* the token being fed to the parser */
    uint32_t body_open;        /* offset of the graph's '{' once the header is read */
    bool has_body;
    bool body_closed;          /* the graph's '}' was read */
    bool fast;                 /* common lines may be read by ir/parse_fast.c */
    size_t fast_lines;         /* lines it read */
    bool aborted;              /* the parser gave up (nesting too deep, unrecoverable error) */
    bool placeholders;         /* `const w : T = _` is allowed (ir_parse_expected) */
    bool syntax_failed;        /* a syntax error skipped a line */
    VEC(gp_ref) refs;
    VEC(gp_token) outputs;     /* `output` names, resolved at the end */
    sm_map poisoned;           /* names defined by lines that had errors: no "undefined" for them */
    sm_map ops;                /* op names met so far -> op + 1 (keys: the source's bytes) */
    /* the op names found last, by their length and first and last bytes: most lines' op is one
     * of a few, compared with its last token here before the map is asked (lookup_op) */
    struct {
        gp_token tok; /* len 0: none */
        ir_op op;
    } op_cache[32];
    gp_spares spares;
    /* short INTS attribute lists built so far, by a hash of their elements: a later equal list
     * shares the graph's copy (every Conv's kernel_shape=[1,1]); attribute lists are never
     * changed in place */
    struct {
        const int64_t *ints; /* NULL: none */
        uint32_t count;
    } ints_shared[64];
} gp_state;

/* ---- builders called by the grammar's actions (ir/parse.c) --------------------------------- */

void gp_graph_header(gp_state *st, gp_token name, gp_token brace);
void gp_input(gp_state *st, gp_token name, const gp_type *type);
void gp_const_literal(gp_state *st, const gp_result *head, gp_lit *value);
void gp_const_random(gp_state *st, const gp_result *head, gp_token kw, gp_attrs *args);
/* `const w : T = _`: a constant of type T whose value is not given (ir_parse_expected only). */
void gp_const_placeholder(gp_state *st, const gp_result *head, gp_token name);
void gp_const_file(gp_state *st, const gp_result *head, gp_token path, gp_token key);
void gp_node(gp_state *st, gp_results *results, gp_token op, gp_names *operands, gp_attrs *attrs,
             gp_token kernel);
void gp_output(gp_state *st, gp_token name);

/* A dim as it is parsed: its encoding in the graph, and where it was written. */
typedef struct {
    int64_t dim;
    gp_token tok;
    bool ok;
} gp_dim;

gp_dim gp_dim_atom(gp_state *st, gp_token t);
/* `a + b`, `a - b`, `a * b` (op is the character): an expression dim of the graph. */
gp_dim gp_dim_binop(gp_state *st, gp_dim a, char op, gp_dim b);
gp_dim gp_dim_paren(gp_dim a, gp_token open, gp_token close);

gp_type gp_dims_empty(void);
void gp_dims_push(gp_state *st, gp_type *dims, gp_dim dim);
/* A type from its dtype name and dims (NULL dims: unknown rank `[*]`); end is its ']'. */
gp_type gp_type_make(gp_state *st, gp_token dtype, const gp_type *dims, gp_token end,
                     gp_token layout);
gp_result gp_result_make(gp_token name, const gp_type *type);

gp_results *gp_results_push(gp_state *st, gp_results *list, const gp_result *r);
gp_names *gp_names_push(gp_state *st, gp_names *list, gp_token name);
gp_attrs *gp_attrs_push(gp_state *st, gp_attrs *list, gp_token name, gp_lit *value);
gp_lit *gp_lit_new(gp_state *st, gp_lit_kind kind, gp_token tok);
gp_lit *gp_lit_push(gp_lit *list, gp_lit *item);
/* Each hands the piece (NULL: nothing) back to st's spares. */
void gp_results_free(gp_state *st, gp_results *list);
void gp_names_free(gp_state *st, gp_names *list);
void gp_attrs_free(gp_state *st, gp_attrs *list);
void gp_lit_free(gp_state *st, gp_lit *lit);
/* Frees the spares for good, once the parse is over. */
void gp_spares_free(gp_state *st);

/* A token with no text: an absent optional part (no layout, no kernel). */
static inline gp_token gp_none(void)
{
    return (gp_token){0, 0};
}

/* Once the whole file is read: every operand and output name bound to its value (ir/parse_build.c),
 * undefined ones reported with a "did you mean". */
void gp_resolve_names(gp_state *st);

/* ir_parse for a text whose byte text[len] is a NUL (dg_source_read's): the lexer reads it in
 * place, with no copy for its sentinel (ir/parse.c). */
ir_graph *gp_parse_terminated(const dg_source *src, dg_context *dg);

/* The line at the lexer's position, when it has one of the common shapes ir/parse_fast.c lists,
 * read and built without the grammar: true, and the lexer is past its line break. False, with
 * nothing done (blank lines before it skipped), for any other line, which the grammar reads. Only
 * where the parser is between two statements of the graph's body, with no syntax error so far. */
bool gp_fast_line(gp_state *st);

/* ir_parse with the fast path on or off (every line read by the grammar), counting the lines the
 * fast path read: for tests that compare the two. */
ir_graph *gp_parse_lines(const dg_source *src, dg_context *dg, bool fast, size_t *fast_lines);

/* Syntax errors (ir/parse.c). expected is a bit set of token codes the parser could have shifted. */
void gp_syntax_error(gp_state *st, int code, gp_token tok, uint64_t expected);
void gp_nesting_too_deep(gp_state *st);

/* The Lemon parser (generated from grammar/graph.y). */
void *gp_parseAlloc(void *(*alloc)(size_t), gp_state *st);
void gp_parse(void *parser, int code, gp_token tok);
void gp_parseFree(void *parser, void (*release)(void *));

/* ---- "did you mean" ------------------------------------------------------------------------ */

/* Finds the candidate closest to a misspelt word: offer every candidate, then ask for the result.
 * Case differences cost nothing, so `relu` suggests `Relu`. */
typedef struct {
    const char *word;
    size_t word_len;
    const char *best;
    size_t best_distance;
} ir_suggester;

void ir_suggest_init(ir_suggester *s, const char *word);
void ir_suggest_offer(ir_suggester *s, const char *candidate);
/* The closest candidate within a small edit distance, or NULL. */
const char *ir_suggest_result(const ir_suggester *s);

#endif
