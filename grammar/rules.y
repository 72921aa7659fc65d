/* The rules language grammar (Lemon). Generated into build/grammar/rules_grammar.{c,h}.
 *
 * Actions only call the dsl_* builders of dsl/build.c; names are resolved and checked later
 * (dsl/sema.c). AST nodes live in the rule set's arena; the lists built here are heap vectors,
 * freed by the builder that consumes them, or by %destructor when a syntax error abandons them.
 * docs/rules.md has this grammar in one page. */

%include {
#include "dsl/parse.h"
}

%name dsl_parser
%token_prefix DSL_T_
%token_type {dsl_token}
%extra_context {dsl_parse *ctx}
%stack_size 1000
%stack_overflow { dsl_parse_overflow(ctx); }
%syntax_error { dsl_parse_syntax_error(ctx, yymajor, yyminor); }
%start_symbol file

/* Keywords, names and literals first, then punctuation; see grammar/rules.re. */
%token RULE SET PRED FOR IN LET INCLUDE WHERE PRIORITY PHASE EXPORTS SHARES.
/* VAR, a rule family's `$name`, never reaches the parser inside a family (dsl/family.c replaces
 * it first); anywhere else it is a syntax error. */
%token IDENT CAPTURE VAR INT FLOAT STRING.
%token ARROW ASSIGN COLON COMMA AMP PIPE QUESTION CARET UNDERSCORE ELLIPSIS.
%token LPAREN RPAREN LBRACKET RBRACKET LBRACE RBRACE.
/* `@f.1`: output 1 of the op captured as @f (a pattern leaf). */
%token OUTPUT.

/* Guard operators, loosest first. GT doubles as the chain operator of patterns, where no
 * precedence is involved. */
%left OROR.
%left ANDAND.
%nonassoc EQ NE.
%nonassoc LT LE GT GE.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right NOT.

/* Arena-owned AST nodes are freed with the rule set; only heap lists need freeing here. */
%default_destructor { (void)ctx; (void)$$; }
%type letlist {dsl_list *}
%type roots {dsl_list *}
%type aroots {dsl_list *}
%type oroots {dsl_list *}
%type alts {dsl_list *}
%type preds {dsl_list *}
%type operands {dsl_list *}
%type oplist {dsl_list *}
%type attrs {dsl_list *}
%type attrlist {dsl_list *}
%type vlist {dsl_list *}
%type refs {dsl_list *}
%type xrefs {dsl_list *}
%type names {dsl_list *}
%type ropnds {dsl_list *}
%type ractions {dsl_list *}
%type rattrs {dsl_list *}
%type rexports {dsl_list *}
%type rshares {dsl_list *}
%type args {dsl_list *}
%type params {dsl_list *}
%type forvars {dsl_list *}
%type forvar {dsl_family_var *}
%type paramlist {dsl_list *}
%type arglist {dsl_list *}
%destructor letlist { dsl_list_free($$); }
%destructor roots { dsl_list_free($$); }
%destructor aroots { dsl_list_free($$); }
%destructor oroots { dsl_list_free($$); }
%destructor alts { dsl_list_free($$); }
%destructor preds { dsl_list_free($$); }
%destructor operands { dsl_list_free($$); }
%destructor oplist { dsl_list_free($$); }
%destructor attrs { dsl_list_free($$); }
%destructor attrlist { dsl_list_free($$); }
%destructor vlist { dsl_list_free($$); }
%destructor refs { dsl_list_free($$); }
%destructor xrefs { dsl_list_free($$); }
%destructor names { dsl_list_free($$); }
%destructor ropnds { dsl_list_free($$); }
%destructor ractions { dsl_list_free($$); }
%destructor rattrs { dsl_list_free($$); }
%destructor rexports { dsl_list_free($$); }
%destructor rshares { dsl_list_free($$); }
%destructor args { dsl_list_free($$); }
%destructor params { dsl_list_free($$); }
%destructor forvars { dsl_list_free($$); }
%destructor paramlist { dsl_list_free($$); }
%destructor arglist { dsl_list_free($$); }
%type chain {dsl_pattern *}
%type achain {dsl_pattern *}
%type ochain {dsl_pattern *}
%type term {dsl_pattern *}
%type aterm {dsl_pattern *}
%type opterm {dsl_pattern *}
%type aopterm {dsl_pattern *}
%type ophead {dsl_pattern *}
%type aophead {dsl_pattern *}
%type leaf {dsl_pattern *}
%type let {dsl_let *}
%type attr {dsl_attr_syntax *}
%type value {dsl_value *}
%type repl {dsl_repl_syntax *}
%type guard {dsl_expr *}
%type expr {dsl_expr *}
%type priority {dsl_token}
%type phase {dsl_token}
%type capture {dsl_token}
%type optional {bool}

/* ---- statements ---- */

file ::= stmts.
stmts ::= .
stmts ::= stmts stmt.

stmt ::= INCLUDE(K) STRING(P).                                 { dsl_include(ctx, K, P); }
stmt ::= SET IDENT(N) ASSIGN LBRACKET alts(A) RBRACKET.       { dsl_define_set(ctx, N, A); }
stmt ::= PRED IDENT(N) LPAREN params(P) RPAREN(C) ASSIGN expr(E). { dsl_define_pred(ctx, N, P, C, E); }
/* A rule family's header; the token loop then parses the rule after it once per value. */
stmt ::= FOR(K) forvars(V).                                    { dsl_begin_family(ctx, K, V); }
stmt ::= RULE IDENT(N) priority(P) phase(H) COLON roots(R) ARROW repl(X) guard(G).
                                                               { dsl_add_rule(ctx, &N, P, H, NULL, R, X, G); }
stmt ::= RULE IDENT(N) priority(P) phase(H) COLON letlist(L) oroots(R) ARROW repl(X) guard(G).
                                                               { dsl_add_rule(ctx, &N, P, H, L, R, X, G); }
/* An anonymous rule (the card form `Conv>BN>Relu => FusedConvAct[fold_bn]`) starts with a name or
 * `let`, never with `[`, which would continue the previous replacement's action list. */
stmt ::= aroots(R) ARROW repl(X) guard(G).                     { dsl_add_rule(ctx, NULL, dsl_no_token(), dsl_no_token(), NULL, R, X, G); }
stmt ::= letlist(L) oroots(R) ARROW repl(X) guard(G).          { dsl_add_rule(ctx, NULL, dsl_no_token(), dsl_no_token(), L, R, X, G); }

priority(P) ::= .                                              { P = dsl_no_token(); }
priority(P) ::= PRIORITY INT(N).                               { P = N; }
phase(H) ::= .                                                 { H = dsl_no_token(); }
phase(H) ::= PHASE INT(N).                                     { H = N; }

letlist(L) ::= let(B).                                         { L = dsl_list_push(ctx, NULL, B); }
letlist(L) ::= letlist(A) let(B).                              { L = dsl_list_push(ctx, A, B); }
let(B) ::= LET IDENT(N) ASSIGN chain(P).                       { B = dsl_let_new(ctx, N, P); }

forvars(L) ::= forvar(B).                                      { L = dsl_list_push(ctx, NULL, B); }
forvars(L) ::= forvars(A) COMMA forvar(B).                     { L = dsl_list_push(ctx, A, B); }
forvar(B) ::= IDENT(N) IN LBRACKET alts(A) RBRACKET.           { B = dsl_family_var_new(ctx, N, A); }

params(L) ::= .                                                { L = NULL; }
params(L) ::= paramlist(A).                                    { L = A; }
paramlist(L) ::= CAPTURE(T).                                   { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
paramlist(L) ::= paramlist(A) COMMA CAPTURE(T).                { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }

/* ---- patterns: `A & B` roots, `A > B` chains, `Op?@c:pred{attr=v}(operands)` ---- */

roots(L) ::= chain(P).                                         { L = dsl_list_push(ctx, NULL, P); }
roots(L) ::= roots(A) AMP chain(P).                            { L = dsl_list_push(ctx, A, P); }
oroots(L) ::= ochain(P).                                       { L = dsl_list_push(ctx, NULL, P); }
oroots(L) ::= oroots(A) AMP chain(P).                          { L = dsl_list_push(ctx, A, P); }
aroots(L) ::= achain(P).                                       { L = dsl_list_push(ctx, NULL, P); }
aroots(L) ::= aroots(A) AMP chain(P).                          { L = dsl_list_push(ctx, A, P); }

/* After `let m = Relu`, the first root starts with an op: a capture would continue the let. */
ochain(P) ::= opterm(T).                                       { P = T; }
ochain(P) ::= ochain(A) GT opterm(S).                          { P = dsl_chain(ctx, A, S); }
chain(P) ::= term(T).                                          { P = T; }
chain(P) ::= chain(A) GT opterm(S).                            { P = dsl_chain(ctx, A, S); }
achain(P) ::= aterm(T).                                        { P = T; }
achain(P) ::= achain(A) GT opterm(S).                          { P = dsl_chain(ctx, A, S); }

term(P) ::= opterm(T).                                         { P = T; }
term(P) ::= leaf(T).                                           { P = T; }
aterm(P) ::= aopterm(T).                                       { P = T; }

opterm(P) ::= aopterm(T).                                      { P = T; }
opterm(P) ::= ophead(H).                                       { P = H; }
opterm(P) ::= ophead(H) attrs(A).                              { P = dsl_op_attrs(ctx, H, A); }
opterm(P) ::= ophead(H) LPAREN operands(L) RPAREN(C).          { P = dsl_op_operands(ctx, H, L, C); }
opterm(P) ::= ophead(H) LPAREN operands(L) RPAREN(C) attrs(A). { P = dsl_op_attrs(ctx, dsl_op_operands(ctx, H, L, C), A); }
opterm(P) ::= ophead(H) attrs(A) LPAREN operands(L) RPAREN(C). { P = dsl_op_operands(ctx, dsl_op_attrs(ctx, H, A), L, C); }
aopterm(P) ::= aophead(H).                                     { P = H; }
aopterm(P) ::= aophead(H) attrs(A).                            { P = dsl_op_attrs(ctx, H, A); }
aopterm(P) ::= aophead(H) LPAREN operands(L) RPAREN(C).        { P = dsl_op_operands(ctx, H, L, C); }
aopterm(P) ::= aophead(H) LPAREN operands(L) RPAREN(C) attrs(A). { P = dsl_op_attrs(ctx, dsl_op_operands(ctx, H, L, C), A); }
aopterm(P) ::= aophead(H) attrs(A) LPAREN operands(L) RPAREN(C). { P = dsl_op_operands(ctx, dsl_op_attrs(ctx, H, A), L, C); }

ophead(H) ::= LBRACKET(B) alts(A) RBRACKET(E) optional(O) capture(C) preds(L).
                                                               { H = dsl_op_head(ctx, B, A, O, C, L, E); }
aophead(H) ::= IDENT(N) optional(O) capture(C) preds(L).      { H = dsl_op_head(ctx, N, NULL, O, C, L, N); }

alts(L) ::= IDENT(N).                                          { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, N)); }
alts(L) ::= alts(A) PIPE IDENT(N).                             { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, N)); }
optional(O) ::= .                                              { O = false; }
optional(O) ::= QUESTION.                                      { O = true; }
capture(C) ::= .                                               { C = dsl_no_token(); }
capture(C) ::= CAPTURE(T).                                     { C = T; }
preds(L) ::= .                                                 { L = NULL; }
preds(L) ::= preds(A) COLON IDENT(N).                          { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, N)); }

leaf(P) ::= CAPTURE(C) preds(L).                               { P = dsl_leaf(ctx, C, L); }
leaf(P) ::= UNDERSCORE(U) preds(L).                            { P = dsl_leaf(ctx, U, L); }
leaf(P) ::= OUTPUT(O) preds(L).                                { P = dsl_output_leaf(ctx, O, L); }
leaf(P) ::= CARET(C).                                          { P = dsl_prev_slot(ctx, C); }

/* A trailing `...` (a NULL item) leaves the remaining operands unconstrained. */
operands(L) ::= .                                              { L = dsl_list_new(ctx); }
operands(L) ::= ELLIPSIS.                                      { L = dsl_list_push(ctx, NULL, NULL); }
operands(L) ::= oplist(A).                                     { L = A; }
operands(L) ::= oplist(A) COMMA ELLIPSIS.                      { L = dsl_list_push(ctx, A, NULL); }
oplist(L) ::= chain(P).                                        { L = dsl_list_push(ctx, NULL, P); }
oplist(L) ::= oplist(A) COMMA chain(P).                        { L = dsl_list_push(ctx, A, P); }

/* ---- attribute lists, in patterns (equalities) and replacements (settings) ---- */

attrs(L) ::= LBRACE RBRACE.                                    { L = dsl_list_new(ctx); }
attrs(L) ::= LBRACE attrlist(A) RBRACE.                        { L = A; }
attrlist(L) ::= attr(B).                                       { L = dsl_list_push(ctx, NULL, B); }
attrlist(L) ::= attrlist(A) COMMA attr(B).                     { L = dsl_list_push(ctx, A, B); }
attr(B) ::= IDENT(N) ASSIGN value(V).                          { B = dsl_attr(ctx, N, V); }

value(V) ::= INT(T).                                           { V = dsl_value_atom(ctx, DSL_VAL_INT, T, false); }
value(V) ::= MINUS INT(T).                                     { V = dsl_value_atom(ctx, DSL_VAL_INT, T, true); }
value(V) ::= FLOAT(T).                                         { V = dsl_value_atom(ctx, DSL_VAL_FLOAT, T, false); }
value(V) ::= MINUS FLOAT(T).                                   { V = dsl_value_atom(ctx, DSL_VAL_FLOAT, T, true); }
value(V) ::= STRING(T).                                        { V = dsl_value_atom(ctx, DSL_VAL_STRING, T, false); }
value(V) ::= IDENT(T).                                         { V = dsl_value_atom(ctx, DSL_VAL_NAME, T, false); }
value(V) ::= CAPTURE(T).                                       { V = dsl_value_atom(ctx, DSL_VAL_CAPTURE, T, false); }
value(V) ::= LBRACKET(O) RBRACKET(C).                          { V = dsl_value_list(ctx, O, NULL, C); }
value(V) ::= LBRACKET(O) vlist(L) RBRACKET(C).                 { V = dsl_value_list(ctx, O, L, C); }
vlist(L) ::= value(V).                                         { L = dsl_list_push(ctx, NULL, V); }
vlist(L) ::= vlist(A) COMMA value(V).                          { L = dsl_list_push(ctx, A, V); }

/* ---- replacements: `=> Target(@a, @b)[actions]{attrs} exports @v shares @t` or `=> @x` ---- */

repl(X) ::= CAPTURE(C).                                        { X = dsl_repl_forward(ctx, C); }
repl(X) ::= IDENT(T) ropnds(O) ractions(A) rattrs(S) rexports(E) rshares(H).
                                                               { X = dsl_repl_op(ctx, T, O, A, S, E, H); }
ropnds(L) ::= .                                                { L = NULL; }
ropnds(L) ::= LPAREN RPAREN.                                   { L = dsl_list_new(ctx); }
ropnds(L) ::= LPAREN refs(A) RPAREN.                           { L = A; }
ractions(L) ::= .                                              { L = NULL; }
ractions(L) ::= LBRACKET RBRACKET.                             { L = dsl_list_new(ctx); }
ractions(L) ::= LBRACKET names(A) RBRACKET.                    { L = A; }
rattrs(L) ::= .                                                { L = NULL; }
rattrs(L) ::= attrs(A).                                        { L = A; }
rexports(L) ::= .                                              { L = NULL; }
rexports(L) ::= EXPORTS xrefs(A).                              { L = A; }
rshares(L) ::= .                                               { L = NULL; }
rshares(L) ::= SHARES refs(A).                                 { L = A; }
refs(L) ::= CAPTURE(T).                                        { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
refs(L) ::= IDENT(T).                                          { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
refs(L) ::= refs(A) COMMA CAPTURE(T).                          { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }
refs(L) ::= refs(A) COMMA IDENT(T).                            { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }
/* exports may also name another output of an op: `exports @s.1` */
xrefs(L) ::= CAPTURE(T).                                       { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
xrefs(L) ::= IDENT(T).                                         { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
xrefs(L) ::= OUTPUT(T).                                        { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
xrefs(L) ::= xrefs(A) COMMA CAPTURE(T).                        { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }
xrefs(L) ::= xrefs(A) COMMA IDENT(T).                          { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }
xrefs(L) ::= xrefs(A) COMMA OUTPUT(T).                         { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }
names(L) ::= IDENT(T).                                         { L = dsl_list_push(ctx, NULL, dsl_token_dup(ctx, T)); }
names(L) ::= names(A) COMMA IDENT(T).                          { L = dsl_list_push(ctx, A, dsl_token_dup(ctx, T)); }

/* ---- guards ---- */

guard(G) ::= .                                                 { G = NULL; }
guard(G) ::= WHERE expr(E).                                    { G = E; }

expr(E) ::= expr(A) OROR expr(B).                              { E = dsl_expr_binary(ctx, DSL_OP_OR, A, B); }
expr(E) ::= expr(A) ANDAND expr(B).                            { E = dsl_expr_binary(ctx, DSL_OP_AND, A, B); }
expr(E) ::= expr(A) EQ expr(B).                                { E = dsl_expr_binary(ctx, DSL_OP_EQ, A, B); }
expr(E) ::= expr(A) NE expr(B).                                { E = dsl_expr_binary(ctx, DSL_OP_NE, A, B); }
expr(E) ::= expr(A) LT expr(B).                                { E = dsl_expr_binary(ctx, DSL_OP_LT, A, B); }
expr(E) ::= expr(A) LE expr(B).                                { E = dsl_expr_binary(ctx, DSL_OP_LE, A, B); }
expr(E) ::= expr(A) GT expr(B).                                { E = dsl_expr_binary(ctx, DSL_OP_GT, A, B); }
expr(E) ::= expr(A) GE expr(B).                                { E = dsl_expr_binary(ctx, DSL_OP_GE, A, B); }
expr(E) ::= expr(A) PLUS expr(B).                              { E = dsl_expr_binary(ctx, DSL_OP_ADD, A, B); }
expr(E) ::= expr(A) MINUS expr(B).                             { E = dsl_expr_binary(ctx, DSL_OP_SUB, A, B); }
expr(E) ::= expr(A) STAR expr(B).                              { E = dsl_expr_binary(ctx, DSL_OP_MUL, A, B); }
expr(E) ::= expr(A) SLASH expr(B).                             { E = dsl_expr_binary(ctx, DSL_OP_DIV, A, B); }
expr(E) ::= expr(A) PERCENT expr(B).                           { E = dsl_expr_binary(ctx, DSL_OP_MOD, A, B); }
expr(E) ::= NOT(O) expr(A).                                    { E = dsl_expr_unary(ctx, O, DSL_OP_NOT, A); }
expr(E) ::= MINUS(O) expr(A). [NOT]                            { E = dsl_expr_unary(ctx, O, DSL_OP_NEG, A); }
expr(E) ::= LPAREN(O) expr(A) RPAREN(C).                       { E = dsl_expr_paren(ctx, O, A, C); }
expr(E) ::= INT(T).                                            { E = dsl_expr_atom(ctx, DSL_EXPR_INT, T); }
expr(E) ::= FLOAT(T).                                          { E = dsl_expr_atom(ctx, DSL_EXPR_FLOAT, T); }
expr(E) ::= STRING(T).                                         { E = dsl_expr_atom(ctx, DSL_EXPR_STRING, T); }
expr(E) ::= IDENT(T).                                          { E = dsl_expr_atom(ctx, DSL_EXPR_NAME, T); }
expr(E) ::= CAPTURE(T).                                        { E = dsl_expr_atom(ctx, DSL_EXPR_CAPTURE, T); }
expr(E) ::= IDENT(F) LPAREN args(A) RPAREN(C).                 { E = dsl_expr_call(ctx, F, A, C); }
expr(E) ::= LBRACKET(O) args(A) RBRACKET(C).                   { E = dsl_expr_list(ctx, O, A, C); }
args(L) ::= .                                                  { L = NULL; }
args(L) ::= arglist(A).                                        { L = A; }
arglist(L) ::= expr(B).                                        { L = dsl_list_push(ctx, NULL, B); }
arglist(L) ::= arglist(A) COMMA expr(B).                       { L = dsl_list_push(ctx, A, B); }
