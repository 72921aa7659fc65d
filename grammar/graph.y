/* The .graph text form (Lemon grammar). docs/graph-format.md is its reference.
 *
 * A file is one `graph NAME {` block of lines: `input`, `const`, node lines and `output`, in any
 * order. The lexer (grammar/graph.re) turns each line's end into NEWLINE, except inside brackets,
 * and skips blank lines, so the grammar sees one NEWLINE after each statement. Actions call the
 * builders in ir/parse.c, which create the graph as the lines are read; operand names are resolved
 * once the whole file is read, because a value may be used before the line that defines it.
 *
 * A syntax error skips to the end of its line (`stmts ::= stmts error NEWLINE`), so one run reports
 * an error per bad line. The parser's stack is bounded: nesting deeper than it is reported, never a
 * crash. */

%include {
#include "ir/parse_internal.h"

struct yyParser;
static uint64_t expected_tokens(struct yyParser *parser);
}

%name gp_parse
%token_prefix GP_
%token_type {gp_token}
%extra_context {gp_state *st}
%stack_size 200
%stack_overflow   { gp_nesting_too_deep(st); }
%syntax_error     { gp_syntax_error(st, yymajor, TOKEN, expected_tokens(yypParser)); }
%parse_failure    { st->aborted = true; }
%start_symbol file

/* Token codes in this order; syntax errors list what was expected in the same order. */
%token GRAPH INPUT CONST OUTPUT RANDOM FILE.
%token NAME STRING INT FLOAT KERNEL.
%token EQ COLON COMMA LPAREN RPAREN LBRACKET RBRACKET LBRACE RBRACE QUESTION STAR PLUS MINUS NEWLINE.

/* Dim expressions (`batch * 12`, `S + 1`): products bind tighter than sums. */
%left PLUS MINUS.
%left STAR.

%type name         {gp_token}
%type kernel       {gp_token}
%type dim          {gp_dim}
%type layout       {gp_token}
%type type         {gp_type}
%type dims         {gp_type}
%type result       {gp_result}
%type const_head   {gp_result}
%type results      {gp_results *}
%type operands     {gp_names *}
%type attrs        {gp_attrs *}
%type attr_list    {gp_attrs *}
%type value        {gp_lit *}
%type items        {gp_lit *}

%destructor results      { gp_results_free(st, $$); }
%destructor operands     { gp_names_free(st, $$); }
%destructor attrs        { gp_attrs_free(st, $$); }
%destructor attr_list    { gp_attrs_free(st, $$); }
%destructor value        { gp_lit_free(st, $$); }
%destructor items        { gp_lit_free(st, $$); }

file            ::= header stmts RBRACE NEWLINE.
header          ::= GRAPH name(N) LBRACE(B) NEWLINE.              { gp_graph_header(st, N, B); }

stmts           ::= .
stmts           ::= stmts stmt NEWLINE.
stmts           ::= stmts error NEWLINE.

stmt            ::= INPUT name(N) COLON type(T).                  { gp_input(st, N, &T); }
stmt            ::= const_head(H) value(V).                       { gp_const_literal(st, &H, V); }
stmt            ::= const_head(H) RANDOM(R) LPAREN RPAREN.        { gp_const_random(st, &H, R, NULL); }
stmt            ::= const_head(H) RANDOM(R) LPAREN attr_list(A) RPAREN.
                                                                  { gp_const_random(st, &H, R, A); }
stmt            ::= const_head(H) NAME(U).                        { gp_const_placeholder(st, &H, U); }
stmt            ::= const_head(H) FILE LPAREN STRING(P) COMMA STRING(K) RPAREN.
                                                                  { gp_const_file(st, &H, P, K); }
stmt            ::= results(R) EQ NAME(O) LPAREN RPAREN attrs(T) kernel(K).
                                                                  { gp_node(st, R, O, NULL, T, K); }
stmt            ::= results(R) EQ NAME(O) LPAREN operands(A) RPAREN attrs(T) kernel(K).
                                                                  { gp_node(st, R, O, A, T, K); }
stmt            ::= OUTPUT outputs.

const_head(H)   ::= CONST name(N) COLON type(T) EQ.               { H = gp_result_make(N, &T); }

outputs         ::= name(N).                                      { gp_output(st, N); }
outputs         ::= outputs COMMA name(N).                        { gp_output(st, N); }

results(L)      ::= result(R).                                    { L = gp_results_push(st, NULL, &R); }
results(L)      ::= results(A) COMMA result(R).                   { L = gp_results_push(st, A, &R); }
result(R)       ::= name(N).                                      { R = gp_result_make(N, NULL); }
result(R)       ::= name(N) COLON type(T).                        { R = gp_result_make(N, &T); }

operands(L)     ::= name(N).                                      { L = gp_names_push(st, NULL, N); }
operands(L)     ::= operands(A) COMMA name(N).                    { L = gp_names_push(st, A, N); }

attrs(L)        ::= .                                             { L = NULL; }
attrs(L)        ::= LBRACE RBRACE.                                { L = NULL; }
attrs(L)        ::= LBRACE attr_list(A) RBRACE.                   { L = A; }
attr_list(L)    ::= name(N) EQ value(V).                          { L = gp_attrs_push(st, NULL, N, V); }
attr_list(L)    ::= attr_list(A) COMMA name(N) EQ value(V).       { L = gp_attrs_push(st, A, N, V); }

kernel(K)       ::= .                                             { K = gp_none(); }
kernel(K)       ::= KERNEL(T).                                    { K = T; }

value(V)        ::= INT(T).                                       { V = gp_lit_new(st, GP_LIT_INT, T); }
value(V)        ::= FLOAT(T).                                     { V = gp_lit_new(st, GP_LIT_FLOAT, T); }
value(V)        ::= STRING(T).                                    { V = gp_lit_new(st, GP_LIT_STRING, T); }
value(V)        ::= LBRACKET(B) RBRACKET.                         { V = gp_lit_new(st, GP_LIT_LIST, B); }
value(V)        ::= items(L) RBRACKET.                            { V = L; }
items(L)        ::= LBRACKET(B) value(V).                         { L = gp_lit_push(gp_lit_new(st, GP_LIT_LIST, B), V); }
items(L)        ::= items(A) COMMA value(V).                      { L = gp_lit_push(A, V); }

type(T)         ::= NAME(D) LBRACKET RBRACKET(E) layout(L).       { T = gp_type_make(st, D, &(gp_type){.ok = true}, E, L); }
type(T)         ::= NAME(D) LBRACKET dims(S) RBRACKET(E) layout(L). { T = gp_type_make(st, D, &S, E, L); }
type(T)         ::= NAME(D) LBRACKET STAR RBRACKET(E) layout(L).  { T = gp_type_make(st, D, NULL, E, L); }
dims(S)         ::= dim(D).                                       { S = gp_dims_empty(); gp_dims_push(st, &S, D); }
dims(S)         ::= dims(A) COMMA dim(D).                         { S = A; gp_dims_push(st, &S, D); }
dim(D)          ::= INT(T).                                       { D = gp_dim_atom(st, T); }
dim(D)          ::= NAME(T).                                      { D = gp_dim_atom(st, T); }
dim(D)          ::= STRING(T).                                    { D = gp_dim_atom(st, T); }
dim(D)          ::= QUESTION(T).                                  { D = gp_dim_atom(st, T); }
dim(D)          ::= dim(A) PLUS dim(B).                           { D = gp_dim_binop(st, A, '+', B); }
dim(D)          ::= dim(A) MINUS dim(B).                          { D = gp_dim_binop(st, A, '-', B); }
dim(D)          ::= dim(A) STAR dim(B).                           { D = gp_dim_binop(st, A, '*', B); }
dim(D)          ::= LPAREN(P) dim(A) RPAREN(E).                   { D = gp_dim_paren(A, P, E); }
layout(L)       ::= .                                             { L = gp_none(); }
layout(L)       ::= NAME(T).                                      { L = T; }

name(N)         ::= NAME(T).                                      { N = T; }
name(N)         ::= STRING(T).                                    { N = T; }

%code {
_Static_assert(GP_NEWLINE < 64, "expected-token sets are 64-bit masks");

/* Whether the parser, in its current state, could go on with token `code`: replays the reductions
 * the token would cause on a scratch copy of the top of the state stack until the token would be
 * shifted (yes) or refused (no). The real stack is not touched. */
static bool accepts(const yyParser *p, YYCODETYPE code)
{
    enum { SCRATCH = 64 };
    YYACTIONTYPE pushed[SCRATCH];
    int npushed = 0;
    const yyStackEntry *real_top = p->yytos;
    YYACTIONTYPE state = p->yytos->stateno;
    for (int step = 0; step < 1000; step++) {
        YYACTIONTYPE act = yy_find_shift_action(code, state);
        if (act == YY_ERROR_ACTION || act == YY_NO_ACTION)
            return false;
        if (act < YY_MIN_REDUCE)
            return true; /* a shift, a shift-reduce, or accept */
        unsigned rule = act - YY_MIN_REDUCE;
        int pop = -yyRuleInfoNRhs[rule];
        if (pop <= npushed) {
            npushed -= pop;
        } else {
            real_top -= pop - npushed;
            npushed = 0;
            if (real_top < p->yystack)
                return false;
        }
        YYACTIONTYPE top = npushed ? pushed[npushed - 1] : real_top->stateno;
        if (npushed == SCRATCH)
            return true; /* too deep to follow; say yes rather than hide a real choice */
        state = yy_find_reduce_action(top, yyRuleInfoLhs[rule]);
        pushed[npushed++] = state;
    }
    return true;
}

static uint64_t expected_tokens(struct yyParser *parser)
{
    uint64_t set = 0;
    for (int code = 0; code <= GP_NEWLINE; code++)
        if (accepts(parser, (YYCODETYPE)code))
            set |= (uint64_t)1 << code;
    return set;
}
}
