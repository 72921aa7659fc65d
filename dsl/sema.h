/* Internal to dsl/: the state of checking one rule, shared by sema.c (patterns), repl.c
 * (replacements), guard.c (where guards) and actions.c (action requirements). */
#ifndef FUSERULE_DSL_SEMA_H
#define FUSERULE_DSL_SEMA_H

#include "dsl/names.h"
#include "dsl/parse.h"

/* One place where a capture name is written in the pattern. */
typedef struct dsl_occurrence {
    dsl_capture *capture;
    dsl_pattern **slot;        /* where the node sits (an operand slot or a root) */
    dsl_pattern *node;         /* the node written there */
    dsl_token tok;
    bool defines;              /* names an op (`Conv@c`) rather than a value (`@c`) */
} dsl_occurrence;

typedef struct dsl_rule_check {
    dsl_ruleset *rs;
    dsl_state *st;
    dg_context *dg;
    dsl_rule *rule;
    const dg_source *src;
    const sm_map *sets;        /* set name -> dsl_set_def */
    const sm_map *preds;       /* predicate name -> dsl_pred_def */
    uint32_t pred_nesting;     /* predicate expansions the guard check is inside */
    uint32_t pred_nodes;       /* expressions the guard's predicate expansions copied */
    bool pred_limit;           /* a limit of predicate expansion was reported for this guard */
    bool *ops_used;            /* IR_OP_COUNT flags for the summary */
    sm_map names;              /* capture and let names -> dsl_capture */
    VEC(dsl_capture *) captures;
    VEC(dsl_occurrence) occurrences;
    VEC(dsl_pattern *) nodes;
    VEC(dsl_pattern *) outputs; /* `@f.1` leaves, in source order */
    bool target_ok;            /* the replacement's target op resolved */
    bool ok;
} dsl_rule_check;

/* Checks one parsed rule; sets rule->checked when it passed. */
void dsl_check_rule(dsl_rule_check *rc);

/* Reports an error located in the rule's source and marks the rule as failed. */
void dsl_rule_error(dsl_rule_check *rc, uint32_t offset, uint32_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void dsl_rule_note(dsl_rule_check *rc, uint32_t offset, uint32_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The capture written as `tok` (`@x` or a let name) in a replacement or guard; reports an
 * unbound name and returns NULL. Counts the reference. */
dsl_capture *dsl_rule_ref(dsl_rule_check *rc, dsl_token tok);
dsl_capture *dsl_rule_ref_name(dsl_rule_check *rc, const char *name, uint32_t offset,
                               uint32_t len, const char *written);
/* The op an output reference `@f.k` names (an op of the pattern, not optional, with an output k
 * in every op it may match) and k in *index; NULL after reporting. k may be 0: the caller says
 * what that means where it stands. */
dsl_capture *dsl_output_ref(dsl_rule_check *rc, dsl_token ref, unsigned long *index);
/* "@name": how a guard or a replacement writes the capture `name` (for dsl_rule_ref_name). */
const char *dsl_at_name(ar_arena *arena, const char *name);

/* A value of an attribute list converted to the kind a schema wants; false after reporting. */
bool dsl_convert_value(dsl_rule_check *rc, const dsl_value *v, ir_attr_kind want,
                       const char *attr, const char *op, ir_attr *out);
const char *dsl_attr_kind_name(ir_attr_kind kind);
/* "1 input", "2 to 3 inputs", "at least 1 input". */
const char *dsl_count_inputs(dsl_rule_check *rc, const ir_op_info *info);

void dsl_check_replacement(dsl_rule_check *rc);  /* repl.c */
/* The implicit operands' count against the target's arity; ElementwiseChain's expr against its
 * operands (repl_inputs.c). */
void dsl_check_target_inputs(dsl_rule_check *rc, const dsl_replacement *r);
void dsl_check_guard(dsl_rule_check *rc);        /* guard.c */
/* Type checks a guard expression (guard.c; pred.c checks expansions with it). */
dsl_type dsl_check_expr(dsl_rule_check *rc, dsl_expr *e);
/* Reports an error at [offset, offset+len) of the source e is written in (a predicate's body, or
 * the rule), with a note at each predicate call it was expanded from. */
void dsl_expr_error(dsl_rule_check *rc, const dsl_expr *e, uint32_t offset, uint32_t len,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Named predicates (pred.c): checks every definition once (names, parameters, calls, recursion);
 * then a guard's call of one is replaced in place by a copy of its body with the arguments
 * substituted, and checked. dsl_expand_pred returns false when `call` names no predicate. */
void dsl_check_preds(dsl_ruleset *rs, sm_map *preds, dg_context *dg);
bool dsl_expand_pred(dsl_rule_check *rc, dsl_expr *call, dsl_type *type);
/* Adds every predicate's name to a suggestion. */
void dsl_suggest_preds(const dsl_rule_check *rc, dsl_suggest *s);
void dsl_check_actions(dsl_rule_check *rc);      /* actions.c */

/* Resolves every `set` (members, cycles, clashes with op names). */
void dsl_check_sets(dsl_ruleset *rs, sm_map *sets, dg_context *dg);
/* Duplicate and shadowed rules (warn.c). */
void dsl_warn_rules(dsl_ruleset *rs, dg_context *dg);

/* A growable text buffer, and the canonical text of rules (print.c). */
typedef struct dsl_buf {
    VEC(char) v;
} dsl_buf;
void dsl_buf_printf(dsl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends n bytes; the text stays NUL-terminated (as after dsl_buf_printf). */
void dsl_buf_append(dsl_buf *b, const char *s, size_t n);
void dsl_buf_free(dsl_buf *b);
/* The canonical text of a checked rule's pattern, replacement and guard (each may be NULL).
 * named: captures by name, for people; else nodes by position, so that two rules that differ
 * only in their capture names give the same text. */
void dsl_format_rule(const dsl_rule *r, bool named, dsl_buf *pattern, dsl_buf *repl,
                     dsl_buf *guard);

#endif
