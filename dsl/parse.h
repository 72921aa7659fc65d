/* Internal to dsl/: the lexer, the parse context, and the builders the grammar actions call.
 *
 * The parser builds the AST of dsl.h with names still unresolved (the `syntax` parts of patterns
 * and rules); dsl_check (sema.c) resolves them. AST nodes live in the rule set's arena; the lists
 * the grammar accumulates are heap vectors (dsl_list), freed by whoever consumes them or, when a
 * syntax error abandons them, by the grammar's %destructor. */
#ifndef FUSERULE_DSL_PARSE_H
#define FUSERULE_DSL_PARSE_H

#include "base/strmap.h"
#include "base/vec.h"
#include "dsl/dsl.h"

/* A token: a byte range of the source. len == 0 marks an absent optional token (real tokens are
 * never empty, except end of file). */
typedef struct dsl_token {
    uint32_t offset, len;
    uint32_t line; /* 1-based, counted by the lexer, for naming anonymous rules */
} dsl_token;

typedef struct dsl_pattern_syntax dsl_pattern_syntax;
typedef struct dsl_rule_syntax dsl_rule_syntax;
typedef struct dsl_state dsl_state;

static inline dsl_token dsl_no_token(void)
{
    return (dsl_token){0, 0, 0};
}

/* A growable list of pointers (a NULL item is meaningful to some lists: `...`). */
typedef struct dsl_list {
    VEC(void *) v;
} dsl_list;

/* A value in an attribute list `{name = value}`, before it is checked against a schema. */
typedef enum { DSL_VAL_INT, DSL_VAL_FLOAT, DSL_VAL_STRING, DSL_VAL_NAME, DSL_VAL_CAPTURE,
               DSL_VAL_LIST } dsl_value_kind;

typedef struct dsl_value {
    dsl_value_kind kind;
    uint32_t src_offset, src_len; /* the literal (without its sign), name, capture or list */
    int64_t i;                 /* INT */
    double f;                  /* FLOAT (and INT, converted) */
    const char *s;             /* STRING (decoded), NAME, CAPTURE (without '@') */
    struct dsl_value **items;  /* LIST */
    uint32_t nitems;
} dsl_value;

typedef struct dsl_attr_syntax {
    dsl_token name;
    dsl_value *value;
} dsl_attr_syntax;

/* What the parser knows about a pattern node before names are resolved. */
struct dsl_pattern_syntax {
    dsl_token *names;          /* OP: the op, alias, set or let name; or `[A | B]` alternatives */
    uint32_t nnames;
    bool bracketed;            /* written as `[A | B]` */
    dsl_token capture;         /* `@c` (len 0: none) */
    dsl_token *preds;          /* `:const`, `:f16`, ... */
    uint32_t npreds;
    dsl_attr_syntax **attrs;
    uint32_t nattrs;
    bool has_operand_list;     /* `Op(...)` was written */
    bool prev_slot;            /* ANY: the `^` of a chain stage */
    dsl_token output_ref;      /* ANY: `@f.1`, another output of a captured op (len 0: none) */
    bool chained;              /* OP: a chain stage that received the previous stage ... */
    uint32_t chain_slot;       /* ... as this operand */
    uint32_t depth;            /* ops nested below and including this node, as written */
    dsl_token first;           /* the first token written: a chain's first stage */
    /* sema's bookkeeping: */
    int mark;                  /* DFS state */
    uint32_t users;            /* operand slots of the pattern that hold this node */
    dsl_pattern *forward;      /* a repeated capture: the node that stands for this one */
};

typedef struct dsl_let {
    dsl_token name;
    dsl_pattern *value;
} dsl_let;

/* The text of a token of src. */
static inline const char *dsl_tok_text(const dg_source *src, dsl_token tok)
{
    return src->text + tok.offset;
}

/* A replacement as written. */
typedef struct dsl_repl_syntax {
    dsl_token target;          /* len 0: a forward replacement `=> @x` */
    dsl_token forward;
    dsl_token *operands;       /* captures or let names */
    uint32_t noperands;
    bool operands_written;
    dsl_token *actions;
    uint32_t nactions;
    dsl_attr_syntax **attrs;
    uint32_t nattrs;
    dsl_token *exports;
    uint32_t nexports;
    dsl_token *shares;
    uint32_t nshares;
} dsl_repl_syntax;

/* What the parser knows about a rule before it is checked. */
struct dsl_rule_syntax {
    dsl_let **lets;
    uint32_t nlets;
    dsl_pattern **roots;       /* as parsed (trees) */
    uint32_t nroots;
    dsl_repl_syntax *repl;
    bool too_deep;             /* a depth error was reported while parsing it */
};

typedef struct dsl_set_def {
    dsl_token name;
    const char *label;         /* the name as a string */
    dsl_token *members;
    uint32_t nmembers;
    const dg_source *src;
    /* resolved by dsl_check_sets: */
    ir_op *ops;                /* NULL until resolved */
    uint32_t nops;
    bool bad;
} dsl_set_def;

/* `pred NAME(@a, ...) = EXPR` as parsed; dsl_check_preds (pred.c) checks it once, and each guard
 * that calls it gets a checked copy of the body (dsl_expand_pred). */
typedef struct dsl_pred_def {
    dsl_predicate pub;         /* name, source, where it is written: for near-miss reports */
    dsl_token name;
    dsl_token *params;         /* `@a`, ... */
    uint32_t nparams;
    dsl_expr *body;            /* never checked itself: each use checks its own copy */
    int mark;                  /* the recursion check's DFS state */
    bool bad;                  /* an error was reported in the definition: uses say nothing more */
} dsl_pred_def;

/* `for act in [Relu | Sigmoid], fn in [relu | sigmoid]`: a rule family's variables, each with
 * one value per rule of the family (family.c). */
typedef struct dsl_family_var {
    dsl_token name;            /* `act` */
    dsl_token *values;
    uint32_t nvalues;
} dsl_family_var;

typedef struct dsl_family {
    dsl_token keyword;         /* `for` */
    dsl_family_var **vars;
    uint32_t nvars;
    bool bad;                  /* an error was reported in the header: the rule is skipped */
} dsl_family;

/* The rule set's private state. */
struct dsl_state {
    dsl_options opts;
    VEC(dsl_rule *) rules;
    VEC(dsl_set_def *) sets;
    VEC(dsl_pred_def *) preds;
    VEC(dg_source *) sources;  /* every file read, owned */
    sm_map loaded;             /* "device:inode" -> source, so that a file is loaded once */
    bool checked;
};

/* The lexer's position in one source. The text must have a NUL byte at lim (a sentinel). */
typedef struct dsl_lexer {
    const unsigned char *start, *cur, *lim, *marker;
    uint32_t line; /* of cur */
} dsl_lexer;

/* The state of parsing one file (includes nest: one per file being parsed). */
typedef struct dsl_parse {
    dsl_ruleset *rs;
    dg_context *dg;
    const dg_source *src;
    const char *includer;      /* the file includes are relative to (path_beside) */
    struct dsl_parse *parent;  /* the including file, for cycle detection */
    dsl_token included_at;     /* the path token of the `include` in parent */
    const char *identity;      /* "device:inode" of this file ("" for text in memory) */
    unsigned include_depth;
    dsl_lexer lex;
    VEC(dsl_token) brackets;   /* open ( [ { not closed yet, innermost last */
    dsl_token last;            /* the last token fed to the parser */
    dsl_token current;         /* the token being fed to the parser */
    bool failed;               /* a syntax error or stack overflow since the last resync */
    bool too_deep;             /* a nesting error was reported in the statement being parsed */
    bool in_pattern;           /* after `rule ...:` and before its `=>` */
    bool was_in_pattern;       /* in_pattern before the token being fed */
    dsl_family *family;        /* a `for` header just parsed: the rule after it is its family */
} dsl_parse;

/* ---- lexer (grammar/rules.re) ---- */

void dsl_lex_init(dsl_lexer *lx, const dg_source *src);
/* The next token's code (0 at end of input). Lexical errors are reported and skipped. */
int dsl_lex(dsl_parse *ctx, dsl_token *tok);

/* ---- parser (grammar/rules.y, generated by Lemon) ---- */

void *dsl_parserAlloc(void *(*malloc_fn)(size_t), dsl_parse *ctx);
void dsl_parserFree(void *parser, void (*free_fn)(void *));
void dsl_parserInit(void *parser, dsl_parse *ctx);
void dsl_parserFinalize(void *parser);
void dsl_parser(void *parser, int code, dsl_token tok);

void dsl_parse_syntax_error(dsl_parse *ctx, int code, dsl_token tok);
void dsl_parse_overflow(dsl_parse *ctx);

/* ---- the token loop's helpers (parse.c), for family.c ---- */

/* Whether a token begins a statement: a statement keyword, or a name or `let` at a line start. */
bool dsl_starts_statement(const dsl_parse *ctx, int code, dsl_token tok);
/* Keeps a malloc'd text as a source of the rule set (freed with it). */
const dg_source *dsl_keep_source(dsl_ruleset *rs, const char *path, char *text, size_t len);
/* Parses the statement at [start, end) of src (whose line at start is `line`) with a parser of
 * its own, as part of the file ctx is parsing. */
void dsl_parse_range(const dsl_parse *ctx, const dg_source *src, uint32_t start, uint32_t end,
                     uint32_t line);

/* ---- rule families (family.c) ---- */

/* Called by the token loop after the `for` header's statement was reduced, with the token after
 * it (which the loop fed and then dropped): reads the rule that follows up to the next statement
 * and parses it once per value of the variables, each time from a copy of the file with `$name`
 * replaced. Returns the code of the first token after the rule (0 at end of input), in *next. */
int dsl_expand_family(dsl_parse *ctx, int code, dsl_token tok, dsl_token *next);

/* ---- builders called by grammar actions (build.c) ---- */

dsl_list *dsl_list_new(dsl_parse *ctx);
dsl_list *dsl_list_push(dsl_parse *ctx, dsl_list *list, void *item); /* list may be NULL */
void dsl_list_free(dsl_list *list);
dsl_token *dsl_token_dup(dsl_parse *ctx, dsl_token tok);
/* The text of a string token without its quotes, escapes decoded, in the arena. */
char *dsl_decode_string(dsl_parse *ctx, dsl_token tok);

void dsl_include(dsl_parse *ctx, dsl_token keyword, dsl_token path);
void dsl_define_set(dsl_parse *ctx, dsl_token name, dsl_list *members);
dsl_family_var *dsl_family_var_new(dsl_parse *ctx, dsl_token name, dsl_list *values);
void dsl_begin_family(dsl_parse *ctx, dsl_token keyword, dsl_list *vars);
/* params: capture tokens (may be NULL); close: the ')' after them. */
void dsl_define_pred(dsl_parse *ctx, dsl_token name, dsl_list *params, dsl_token close,
                     dsl_expr *body);
/* name NULL: an anonymous rule. priority.len 0: none written. lets may be NULL. */
void dsl_add_rule(dsl_parse *ctx, const dsl_token *name, dsl_token priority, dsl_token phase,
                  dsl_list *lets, dsl_list *roots, dsl_repl_syntax *repl, dsl_expr *guard);

dsl_let *dsl_let_new(dsl_parse *ctx, dsl_token name, dsl_pattern *value);
dsl_pattern *dsl_op_head(dsl_parse *ctx, dsl_token first, dsl_list *alternatives, bool optional,
                         dsl_token capture, dsl_list *preds, dsl_token last);
dsl_pattern *dsl_op_attrs(dsl_parse *ctx, dsl_pattern *op, dsl_list *attrs);
dsl_pattern *dsl_op_operands(dsl_parse *ctx, dsl_pattern *op, dsl_list *operands, dsl_token close);
dsl_pattern *dsl_leaf(dsl_parse *ctx, dsl_token name, dsl_list *preds);
/* `@f.1 :preds`: a leaf standing for output 1 of the op captured as @f (resolved by sema). */
dsl_pattern *dsl_output_leaf(dsl_parse *ctx, dsl_token ref, dsl_list *preds);
dsl_pattern *dsl_prev_slot(dsl_parse *ctx, dsl_token caret);
dsl_pattern *dsl_chain(dsl_parse *ctx, dsl_pattern *prev, dsl_pattern *stage);

/* operands NULL: none written; actions, attrs, exports, shares may be NULL. */
dsl_repl_syntax *dsl_repl_op(dsl_parse *ctx, dsl_token target, dsl_list *operands,
                             dsl_list *actions, dsl_list *attrs, dsl_list *exports,
                             dsl_list *shares);
dsl_repl_syntax *dsl_repl_forward(dsl_parse *ctx, dsl_token capture);

dsl_expr *dsl_expr_atom(dsl_parse *ctx, dsl_expr_kind kind, dsl_token tok);
dsl_expr *dsl_expr_unary(dsl_parse *ctx, dsl_token op_tok, dsl_operator op, dsl_expr *a);
dsl_expr *dsl_expr_binary(dsl_parse *ctx, dsl_operator op, dsl_expr *a, dsl_expr *b);
dsl_expr *dsl_expr_paren(dsl_parse *ctx, dsl_token open, dsl_expr *e, dsl_token close);
dsl_expr *dsl_expr_call(dsl_parse *ctx, dsl_token name, dsl_list *args, dsl_token close);
dsl_expr *dsl_expr_list(dsl_parse *ctx, dsl_token open, dsl_list *items, dsl_token close);

dsl_attr_syntax *dsl_attr(dsl_parse *ctx, dsl_token name, dsl_value *value);
dsl_value *dsl_value_atom(dsl_parse *ctx, dsl_value_kind kind, dsl_token tok, bool negative);
dsl_value *dsl_value_list(dsl_parse *ctx, dsl_token open, dsl_list *items, dsl_token close);

#endif
