/* The rules language front end: rule files -> checked rule AST (docs/rules.md is the reference).
 *
 *     dsl_ruleset *rs = dsl_ruleset_new(&opts);
 *     dsl_load_file(rs, "rules/cnn.rules", dg);   (any number of files; `include` is followed)
 *     dsl_check(rs, dg);                          (semantic checks, warnings; false on errors)
 *     ... rs->rules[i] ...
 *     dsl_ruleset_free(rs);
 *
 * A rule is a pattern, a replacement and an optional guard. The pattern is a DAG of pattern nodes,
 * rooted at the sink op(s) and walked UP operand edges: `Conv > BN > Relu` is Relu(BN(Conv)), so
 * its root is Relu, whose operand 0 is the BN node, whose operand 0 is the Conv node. A node that
 * several operands share (a repeated capture, a `let` binding used twice) is ONE node with several
 * users. Horizontal patterns (`MatMul(@x, @wq) & MatMul(@x, @wk)`) have several roots.
 *
 * Memory: one arena per rule set holds the AST; everything is freed by dsl_ruleset_free. The
 * sources the diagnostics point into are owned by the rule set too, so print the diagnostics
 * before freeing it. */
#ifndef FUSERULE_DSL_DSL_H
#define FUSERULE_DSL_DSL_H

#include "base/arena.h"
#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A pattern may nest at most this many ops deep (after `let` bindings are substituted). */
enum { DSL_MAX_DEPTH = 256 };

typedef struct dsl_pattern dsl_pattern;
typedef struct dsl_capture dsl_capture;
typedef struct dsl_expr dsl_expr;

/* ---- patterns ------------------------------------------------------------------------------ */

/* Predicates on the value a pattern node stands for: a leaf's value, or an op node's output 0. */
typedef struct dsl_value_preds {
    bool is_const;     /* `:const` (leaves only) */
    ir_dtype dtype;    /* `:f16`; IR_DTYPE_UNKNOWN = any */
    ir_layout layout;  /* `:NHWC`; IR_LAYOUT_NONE = any */
    int8_t rank;       /* `:rank2`; -1 = any */
} dsl_value_preds;

typedef enum {
    DSL_PAT_OP,  /* an op (or a set of alternative ops) with operand patterns */
    DSL_PAT_ANY, /* a leaf: any value (`@x`, `_`), subject to its predicates */
} dsl_pattern_kind;

struct dsl_pattern {
    dsl_pattern_kind kind;
    uint32_t id;               /* index in rule->nodes; operands come before their users */
    const char *text;          /* as written, for messages: "BN", "Act", "[Relu|Gelu]", "@x", "_" */
    dsl_value_preds preds;
    dsl_capture *capture;      /* the first name given to this node, or NULL */
    uint32_t users;            /* operand slots holding this node: 0 for a root, > 1 if shared */
    uint32_t src_offset, src_len;

    /* DSL_PAT_OP only: */
    const ir_op *ops;          /* the alternatives, sorted by ir_op, without duplicates */
    uint32_t nops;
    dsl_pattern **operands;    /* positional; see `open` */
    uint32_t noperands;
    bool open;                 /* operands after the listed ones are unconstrained (`Conv`, `Conv(@x, ...)`);
                                  when false the op must have exactly noperands inputs */
    bool optional;             /* `Relu?`: when the op is absent, operand 0 stands in its place */
    bool commutative;          /* every alternative commutes its first two operands (Add, Mul):
                                  the matcher tries both orders */
    ir_attr *attrs;            /* inline attribute equalities `Conv{group=1}` (INT, FLOAT, STRING, INTS, FLOATS) */
    uint32_t nattrs;

    /* DSL_PAT_ANY only: `@f.1`, output output_index (>= 1) of the op node output_of (an op of
     * the same pattern, never optional). NULL for other leaves. */
    const dsl_pattern *output_of;
    uint32_t output_index;

    /* Parser and checker state (internal). */
    struct dsl_pattern_syntax *syntax;
};

/* A name for a pattern node: `@c` (a node capture when it names an op, a value capture when it
 * names a leaf) or a `let` binding. A repeated name denotes the same node. */
struct dsl_capture {
    const char *name;          /* without '@' */
    dsl_pattern *node;
    bool is_let;
    uint32_t src_offset, src_len; /* where it is first written */
    uint32_t refs;             /* times written in the pattern, replacement and guard */
};

/* ---- replacements -------------------------------------------------------------------------- */

/* The actions a replacement may name in `[...]`: X(ID, name). Each has a pattern check in
 * dsl/actions.c and an implementation rw_action_<name> in rewrite/action_<name>.c; both tables are
 * generated from this list, so an action without either does not build. */
#define DSL_ACTIONS(X)                                                                             \
    X(FOLD_BN, fold_bn)               /* BatchNormalization into the Conv before it */            \
    X(CONCAT_WEIGHTS, concat_weights) /* the constant weights of parallel MatMuls */              \
    X(FOLD_SCALE, fold_scale)         /* a constant Mul or Div into the GEMM or Conv before it */ \
    X(FOLD_TRANSPOSE, fold_transpose) /* a Transpose of a GEMM operand into transA/transB */      \
    X(FOLD_ATTENTION, fold_attention) /* the scores' K transpose and scale into Attention */     \
    X(FOLD_PAD, fold_pad)             /* a constant zero Pad into the pads of the Conv it feeds */ \
    X(SEPARABLE, separable)           /* a depthwise and a pointwise conv into SeparableConv */   \
    X(MATCH_DTYPE, match_dtype)       /* constant inputs to input 0's float dtype, exactly */    \
    X(FOLD_ADD, fold_add)             /* a constant per-channel Add into the Conv's bias */      \
    X(FOLD_ALPHA, fold_alpha)         /* a constant scalar Mul or Div of a GEMM into its alpha */ \
    X(PACK_QKV, pack_qkv)             /* FusedQKV's projection into a packed Attention */

typedef enum {
#define DSL_ACTION_ENUM(id, name) DSL_ACTION_##id,
    DSL_ACTIONS(DSL_ACTION_ENUM)
#undef DSL_ACTION_ENUM
        DSL_ACTION_COUNT
} dsl_action;

const char *dsl_action_name(dsl_action a);

typedef enum {
    DSL_RATTR_LITERAL, /* `alpha = 0.1`, `act = Relu` (a name is a STRING): value holds it */
    DSL_RATTR_OP_NAME, /* `mode = @a`: a STRING, the op name of the node @a matched */
    DSL_RATTR_ACT,     /* `act = @a`: the epilogue activation of the node @a matched (its name,
                          and its parameters as act_alpha, act_beta) */
    DSL_RATTR_INPUT,   /* `residual = @res`: the captured value feeds the target's input port so named */
    DSL_RATTR_CONST,   /* `epsilon = @eps`: a numeric attribute takes the value of a constant
                          capture (one element for INT and FLOAT); checked when the rule fires */
} dsl_rattr_kind;

typedef struct dsl_rattr {
    dsl_rattr_kind kind;
    ir_attr value;             /* value.name is the attribute (or port) name */
    dsl_capture *capture;      /* OP_NAME, ACT, INPUT, CONST */
    int port;                  /* INPUT: the port's input index, or -1 when no port table is known */
    uint32_t src_offset, src_len;
} dsl_rattr;

typedef enum {
    DSL_REPL_OP,      /* `=> Target(...)[actions]{attrs} exports @v` */
    DSL_REPL_FORWARD, /* `=> @x`: the root's users read @x instead (Identity/Dropout removal) */
} dsl_repl_kind;

typedef struct dsl_replacement {
    dsl_repl_kind kind;
    ir_op op;                  /* OP: the target (aliases resolved) */
    const char *text;          /* as written */
    /* OP: the inputs in order. When none are written (operands_explicit false) the fused node
     * takes the match's external inputs: walking the roots in order, depth first, operand by
     * operand, each leaf and each unconstrained operand the first time it is reached; actions
     * then rewrite that list (docs/rules.md, "Replacements"). */
    dsl_capture **operands;
    uint32_t noperands;
    bool operands_explicit;
    dsl_action *actions;
    uint32_t nactions;
    dsl_rattr *attrs;          /* attributes not set here carry over from the matched ops */
    uint32_t nattrs;
    dsl_capture **exports;     /* interior nodes whose values become extra outputs, in order */
    uint32_t *export_outputs;  /* per export: which output of its op (0: its value; `@s.1`: 1) */
    uint32_t nexports;
    /* interior nodes the fused node may absorb while other nodes still read them (`shares @t`):
     * such a node stays for its other readers and dies with its last one (docs/matcher.md,
     * "Shared nodes") */
    dsl_capture **shares;
    uint32_t nshares;
    dsl_capture *forward;      /* FORWARD */
    uint32_t src_offset, src_len;
} dsl_replacement;

/* ---- guards -------------------------------------------------------------------------------- */

typedef enum {
    DSL_TYPE_ERROR = 0, /* a subexpression that already failed to check */
    DSL_TYPE_BOOL,
    DSL_TYPE_INT,
    DSL_TYPE_FLOAT,
    DSL_TYPE_STRING,
    DSL_TYPE_DTYPE,
    DSL_TYPE_LAYOUT,
    DSL_TYPE_SHAPE,     /* a list of dims, possibly symbolic */
    DSL_TYPE_INTS,      /* a list literal or an INTS attribute */
    DSL_TYPE_FLOATS,
    DSL_TYPE_OP,        /* op(@n), or an op name */
    DSL_TYPE_VALUE,     /* a capture used as a function argument */
} dsl_type;

const char *dsl_type_name(dsl_type t);

typedef enum {
    DSL_EXPR_INT, DSL_EXPR_FLOAT, DSL_EXPR_STRING, DSL_EXPR_BOOL, DSL_EXPR_DTYPE,
    DSL_EXPR_LAYOUT, DSL_EXPR_OP, DSL_EXPR_LIST, DSL_EXPR_CAPTURE, DSL_EXPR_CALL,
    DSL_EXPR_UNARY, DSL_EXPR_BINARY,
    DSL_EXPR_NAME,      /* parser only: a bare name, resolved by the checks */
} dsl_expr_kind;

#define DSL_FUNCTIONS(X)                                                                           \
    X(SHAPE, "shape", 1, "the dims of a value")                                                   \
    X(RANK, "rank", 1, "the rank of a value")                                                     \
    X(DIM, "dim", 2, "dim(@v, i): one dim of a value; i < 0 counts from the end")               \
    X(NUMEL, "numel", 1, "the element count of a value")                                         \
    X(DTYPE, "dtype", 1, "the element type of a value")                                           \
    X(LAYOUT, "layout", 1, "the layout tag of a value")                                           \
    X(IS_CONST, "is_const", 1, "whether a value is a constant")                                   \
    X(ATTR, "attr", 2, "attr(@n, name): an attribute of a matched op (catalog default if unset)") \
    X(OP, "op", 1, "the op a node capture matched")                                               \
    X(VALUE, "value", 1, "the element of a one-element constant, as a float")                    \
    X(ALL, "all", 1, "all(L == x): a comparison of a list with a number holds for every element") \
    X(ANY, "any", 1, "any(L == x): a comparison of a list with a number holds for some element") \
    X(IS_OUTPUT, "is_output", 3, "is_output(@v, @n, i): whether value @v is output i of op @n") \
    X(CAUSAL_MASK, "causal_mask", 2,                                                             \
      "causal_mask(@c, @s): whether @c is the causal mask of the scores @s [..., S, T]")

typedef enum {
#define DSL_FN_ENUM(id, name, nargs, summary) DSL_FN_##id,
    DSL_FUNCTIONS(DSL_FN_ENUM)
#undef DSL_FN_ENUM
        DSL_FN_COUNT
} dsl_function;

typedef enum {
    DSL_OP_NOT, DSL_OP_NEG,                                        /* unary */
    DSL_OP_OR, DSL_OP_AND, DSL_OP_EQ, DSL_OP_NE, DSL_OP_LT, DSL_OP_LE, DSL_OP_GT, DSL_OP_GE,
    DSL_OP_ADD, DSL_OP_SUB, DSL_OP_MUL, DSL_OP_DIV, DSL_OP_MOD,   /* binary */
} dsl_operator;

/* A named guard predicate, `pred NAME(@a, ...) = EXPR`: a guard that calls it gets a copy of its
 * body with the arguments in place of the parameters (dsl/pred.c), so it costs nothing at match
 * time; near-miss reports still name it. */
typedef struct dsl_predicate {
    const char *name;
    const dg_source *src;
    uint32_t src_offset, src_len; /* `NAME(@a, ...)` in its definition */
    uint32_t body_offset, body_len;
} dsl_predicate;

struct dsl_expr {
    dsl_expr_kind kind;
    dsl_type type;             /* set by the checks */
    uint32_t src_offset, src_len;
    const dg_source *src;      /* where src_offset points: NULL for the rule's own source, else the
                                  file of the predicate body this expression was copied from */
    const dsl_predicate *pred; /* the root of a predicate's expansion: which one (its range is the
                                  call's) */
    const dsl_expr *call;      /* inside an expansion: its root (NULL in the rule's own text) */
    union {
        int64_t i;             /* INT */
        double f;              /* FLOAT */
        const char *s;         /* STRING; NAME as written */
        bool b;                /* BOOL */
        ir_dtype dtype;        /* DTYPE */
        ir_layout layout;      /* LAYOUT */
        ir_op op;              /* OP */
        dsl_capture *capture;  /* CAPTURE */
    } v;
    dsl_function fn;           /* CALL */
    const char *attr_name;     /* CALL of attr(): the attribute */
    dsl_operator op;           /* UNARY, BINARY */
    dsl_expr **args;           /* CALL arguments, LIST elements, UNARY/BINARY operands */
    uint32_t nargs;
    uint32_t depth;            /* nesting, bounded by DSL_MAX_DEPTH */
};

/* ---- rules and rule sets ------------------------------------------------------------------- */

/* The phase of a rule without `phase N`. A round commits only rules of the lowest phase that has a
 * legal match, so the rules of phase 0 (the library's weight folds) reach their fixed point before
 * any rule of phase 1 fires (docs/matcher.md, "Phases"). */
#define DSL_DEFAULT_PHASE 1

typedef struct dsl_rule {
    const char *name;          /* `rule NAME:`, or "FILE:LINE" for an anonymous rule */
    bool anonymous;
    uint32_t index;            /* position in the rule set (load order) */
    int64_t priority;          /* `priority N`, else the number of op nodes */
    bool priority_explicit;
    int64_t phase;             /* `phase N`, else DSL_DEFAULT_PHASE: lower phases fire first */
    const dg_source *src;
    uint32_t src_offset, src_len; /* the rule's first token */

    dsl_pattern **roots;       /* one, or several for a horizontal pattern */
    uint32_t nroots;
    dsl_pattern **nodes;       /* every node once, operands before users */
    uint32_t nnodes;
    uint32_t nops;             /* op nodes among them */
    dsl_capture **captures;    /* every name, in order of first appearance */
    uint32_t ncaptures;
    dsl_replacement repl;
    dsl_expr *guard;           /* `where ...`, or NULL */

    bool checked;              /* passed the semantic checks */
    struct dsl_rule_syntax *syntax; /* parser and checker state (internal) */
} dsl_rule;

typedef struct dsl_options {
    /* Whether some registered kernel can run op (any backend). NULL: every op can. */
    bool (*has_kernel)(ir_op op, void *user);
    /* The index of op's input port called `name`, -1 when op has no such port, -2 when op has no
     * port table (then any name is accepted). NULL: any name is accepted. */
    int (*input_port)(ir_op op, const char *name, void *user);
    void *user;
    /* `include` is an error (for fuzzing and untrusted text). */
    bool no_includes;
} dsl_options;

typedef struct dsl_ruleset {
    ar_arena *arena;
    dsl_rule **rules;          /* load order; checked rules have rule->checked set */
    uint32_t nrules;
    uint32_t nops_used;        /* distinct ops named by patterns and targets (after dsl_check) */
    struct dsl_state *state;   /* internal */
} dsl_ruleset;

/* opts may be NULL (defaults); it is copied. */
dsl_ruleset *dsl_ruleset_new(const dsl_options *opts);
void dsl_ruleset_free(dsl_ruleset *rs);

/* Parses a rule file and the files it includes into rs. False after reporting errors (the rules
 * that parsed are kept, so that dsl_check can still report their problems). "-" reads the rules
 * from stdin (their includes relative to the working folder). */
bool dsl_load_file(dsl_ruleset *rs, const char *path, dg_context *dg);
/* Likewise for text in memory (copied; may hold NUL bytes); `path` names it in diagnostics and
 * includes are resolved against its folder. */
bool dsl_load_text(dsl_ruleset *rs, const char *path, const char *text, size_t len,
                   dg_context *dg);

/* Resolves names and checks every rule loaded so far; reports errors and warnings (duplicate and
 * shadowed rules). Returns false when there were errors. Call once, after loading. */
bool dsl_check(dsl_ruleset *rs, dg_context *dg);
/* After dsl_check of rules loaded from several files: warns where a rule of one file matches part
 * of every match of a larger rule of another file and ranks before it, so that the larger one
 * never fires (`check A.rules B.rules`). Within a file the author ordered the rules. */
void dsl_warn_preempted(const dsl_ruleset *rs, dg_context *dg);

/* The desugared form of a checked rule on one line, e.g.
 *     rule conv_bn_act priority 3: Relu@a(BatchNormalization(Conv, ...), ...) => FusedConvAct[fold_bn]{act=@a}
 * (for tests and debugging; the format is documented in docs/rules.md). */
void dsl_rule_print(const dsl_rule *r, FILE *out);

#endif
