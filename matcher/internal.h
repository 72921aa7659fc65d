/* Internal to matcher/: checks, variants, the trie and the table format (docs/matcher.md).
 *
 * lower.c   a rule -> one check sequence per combination of its alternatives (a variant)
 * compile.c variants -> a trie per root op -> the flat table of 32-bit words
 * interp.c  the interpreter that runs the table on a node
 * guard.c   attribute equality and where-guards
 * dump.c    the annotated listing of the table */
#ifndef FUSERULE_MATCHER_INTERNAL_H
#define FUSERULE_MATCHER_INTERNAL_H

#include "matcher/matcher.h"

#include "base/arena.h"
#include "base/vec.h"

/* ---- the instruction set ----------------------------------------------------------------------
 *
 * A check instruction is [opcode | nargs << 8, skip, args...]: when the check fails, execution
 * continues at `skip`, the end of the block of checks that depend on it; when it holds, at the
 * next instruction. Every path through the table is explored (a node is matched against every
 * rule under its op), so the end of a block is simply where its next sibling starts. */
#define MT_OPCODES(X)                                                                              \
    X(OP, "op")           /* reg op: the value is output 0 of a node of this op */               \
    X(OPSET, "op")        /* reg n op...: ... of one of these ops */                             \
    X(ARITY_EQ, "arity")  /* reg n: its node has exactly n inputs */                             \
    X(ARITY_GE, "arity+") /* reg n: ... at least n inputs */                                     \
    X(LOAD, "load")       /* dst src i: dst = input i of src's node, which must be present */    \
    X(CONST, "const")     /* reg: the value is a constant */                                     \
    X(DTYPE, "dtype")     /* reg dtype */                                                        \
    X(LAYOUT, "layout")   /* reg layout */                                                       \
    X(RANK, "rank")       /* reg rank */                                                         \
    X(ATTR, "attr")       /* reg a: the node's attribute equals attribute a of the pool */       \
    X(EQ, "same")         /* a b: the two positions hold the same value */                       \
    X(OUTPUT, "output")   /* reg src k: the value is output k of src's node (`@f.k`) */          \
    X(JOIN, "join")       /* dst src depth nexcl excl...: loop over consumers of src (not the    \
                             nodes of the excl registers); dst = the consumer's output 0 */       \
    X(GUARD, "guard")     /* accept: the rule's where-guard holds on accept's bindings */        \
    X(ACCEPT, "accept")   /* accept: record a match (skip: the next instruction) */              \
    X(SWITCH, "switch")   /* reg n (op off)...: jump to the block of the value's op; skip: end */ \
    X(NEXT, "next")       /* (not a check) [NEXT, join pc]: try the loop's next consumer */      \
    X(JUMP, "jump")       /* (not a check) [JUMP, target] */                                     \
    X(END, "end")         /* (not a check) [END]: the end of a root op's block */

typedef enum {
#define MT_OPCODE_ENUM(id, name) MI_##id,
    MT_OPCODES(MT_OPCODE_ENUM)
#undef MT_OPCODE_ENUM
        MI_COUNT
} mt_opcode;

/* The mnemonic the automaton dump prints (fuserule check --dump-automaton). */
const char *mt_opcode_name(mt_opcode op);

static inline uint32_t mt_word(mt_opcode op, uint32_t nargs)
{
    return (uint32_t)op | nargs << 8;
}
static inline mt_opcode mt_word_op(uint32_t w) { return (mt_opcode)(w & 0xff); }
static inline uint32_t mt_word_nargs(uint32_t w) { return w >> 8; }

/* ---- checks and variants ---------------------------------------------------------------------- */

/* One check of a sequence: an instruction before it is placed in the table. */
typedef struct mt_check {
    mt_opcode op;
    uint32_t nargs;
    uint32_t *args;
    const dsl_pattern *pat;   /* the pattern node it is about (NULL: the guard) */
} mt_check;

/* One combination of a rule's alternatives, lowered. */
typedef struct mt_variant {
    const dsl_rule *rule;
    uint32_t rule_index;
    const dsl_pattern *root;  /* roots[0] as it stands in this variant: its ops key the switch */
    mt_check *checks;         /* the last one is ACCEPT */
    uint32_t nchecks;
    int32_t *reg_of;          /* per pattern node: its register, -1 when not reached */
    uint8_t *present;         /* per pattern node: 1 when it binds a node (a present op) */
    int32_t *key;             /* choices in pre-order: >= 0 a digit, < 0 the node id of the
                                 producer of register -(key + 1) (a joined root) */
    uint32_t nkey;
    uint32_t nregs, nloops;
} mt_variant;

typedef VEC(mt_variant) mt_variant_vec;

/* Appends rule r's variants (allocated in arena) to out; reports and returns false when the rule
 * cannot be compiled. */
bool mt_lower_rule(ar_arena *arena, const dsl_rule *r, uint32_t rule_index, mt_variant_vec *out,
                   dg_context *dg);

bool mt_check_equal(const mt_check *a, const mt_check *b);

/* ---- the compiled automaton -------------------------------------------------------------------- */

/* A trie node's children in insertion order, a list through their `next` (nodes live in the
 * automaton's arena: building the trie allocates nothing else). */
typedef struct mt_kids {
    struct mt_tnode *first, *last;
    uint32_t n;
} mt_kids;

/* A check after merging: the trie node the table was emitted from (kept for the dump). */
typedef struct mt_tnode {
    mt_check check;
    uint32_t depth;              /* its index in every sequence through it */
    uint32_t nseq;               /* sequences through it */
    const mt_variant *first;     /* the first sequence that created it */
    mt_kids kids;                /* while compiling */
    struct mt_tnode *next;       /* its next sibling */
} mt_tnode;

typedef struct mt_accept {
    const mt_variant *v;
    uint32_t pc;                 /* where its ACCEPT instruction is */
} mt_accept;

struct mt_automaton {
    ar_arena *arena;
    dsl_rule **rules;            /* compiled rules, rule-set order */
    uint32_t nrules;
    uint32_t *code;              /* the table; word 0 is unused so that offset 0 means "none" */
    uint32_t ncode;
    uint32_t root[IR_OP_COUNT];  /* offset of each root op's block, 0 when no rule is rooted there */
    uint32_t root_end[IR_OP_COUNT]; /* where that block ends */
    mt_accept *accepts;          /* by accept index; ascending pc */
    uint32_t naccepts;
    mt_variant *variants;        /* every rule's variants; GUARD names one by index */
    uint32_t nvariants;
    uint32_t nloops;             /* the deepest nesting of JOIN loops */
    const ir_attr **attrs;       /* the attribute pool of ATTR */
    uint32_t nattrs;
    const mt_tnode **at;         /* per word: the trie node of the check that starts there */
    mt_stats stats;
};

/* Why check `depth` of v failed with these registers, in the rule's terms (explain.c). For the
 * guard, `failed` is the condition that failed (mt_guard_failing), or NULL for the whole guard. */
void mt_describe_failure(const mt_automaton *a, const mt_variant *v, uint32_t depth,
                         ir_value *const *regs, const dsl_expr *failed, char *buf, size_t size);
/* An attribute's value as the rules language writes it: 1, 0.5, "tanh", [1, 2]. */
void mt_attr_text(const ir_attr *a, char *buf, size_t size);
/* causal_mask(@c, @s): whether c is the bottom-right causal mask of the scores s (guard_causal.c). */
bool mt_causal_mask(ir_graph *g, ir_value *c, const ir_value *s);

#endif
