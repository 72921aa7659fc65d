/* The matcher automaton: every checked rule of a rule set compiled into ONE decision tree, emitted
 * as a flat table of 32-bit words and run by a small interpreter on each node of a graph.
 *
 *     mt_automaton *a = mt_compile(rs, dg);        (once per rule set)
 *     mt_matcher *m = mt_matcher_new(a, false);
 *     for each live node n:  mt_match_node(m, g, n); (appends to mt_matches(m, ...))
 *     ... mt_matcher_reset(m) ... mt_matcher_free(m); mt_free(a);
 *
 * Each rule is rooted at its sink (roots[0]) and walks UP operand edges. It is lowered, once per
 * combination of its alternatives (commutative operand orders, optional ops present or absent), to
 * a sequence of checks on positions (a position is a value reached from the root through operand
 * slots); the sequences of all rules are merged into a trie under a switch on the root op, shared
 * prefixes once, cheap checks (op, arity, operand present, const, dtype, layout, rank) before
 * costly ones (inline attributes, repeated-capture equality, guards). docs/matcher.md describes
 * the table format, the order of checks and the semantics of a match precisely.
 *
 * Semantics of a match (what the naive reference matcher in tests/matcher/ also computes):
 *   - roots[0] is the node being matched; an op pattern node matches the FIRST output of a node
 *     whose op is one of its alternatives, with exactly its operand count (or at least, when open);
 *     every operand written must be present (not an omitted optional input);
 *   - a commutative node (Add, Mul) also matches with its first two operand slots swapped;
 *   - an optional node absent stands for its operand 0 (its other operands are then not matched);
 *   - a pattern node reached twice (a repeated capture, a `let`) must be the same value;
 *   - value predicates hold on the value a node stands for, inline attributes on its node (catalog
 *     defaults apply), and the guard on the bindings (three-valued: unknown is not true);
 *   - each further root k of a horizontal pattern is a node other than the earlier roots, joined
 *     through the consumers of the first value in its pattern (pre-order) that earlier roots bound;
 *     at most MT_JOIN_LIMIT consumers of each value on that path are examined.
 * All ways a rule matches at a node are ordered by their key (the choices in pattern pre-order:
 * straight before swapped, present before absent; a joined root by its node id), the ones with
 * equal bindings are dropped but the first, and the first MT_MAX_SOLUTIONS are reported.
 *
 * Memory: the automaton owns its table and points into the rule set, which must outlive it. A
 * matcher owns the matches it collected until mt_matcher_reset. */
#ifndef FUSERULE_MATCHER_MATCHER_H
#define FUSERULE_MATCHER_MATCHER_H

#include "base/diag.h"
#include "dsl/dsl.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    MT_MAX_VARIANTS = 1024, /* combinations of alternatives one rule may expand to */
    MT_JOIN_LIMIT = 64,     /* consumers of a value examined when joining a horizontal root */
    MT_MAX_SOLUTIONS = 8,   /* ways one rule matches at one node that are reported */
};

typedef struct mt_automaton mt_automaton;
typedef struct mt_matcher mt_matcher;

/* ---- compiling ------------------------------------------------------------------------------ */

/* Compiles the checked rules of rs (unchecked ones are skipped). A rule the automaton cannot
 * express (more than MT_MAX_VARIANTS alternatives, a horizontal root that shares no value with the
 * earlier roots, a root that is not an op) is reported as an error at the rule and left out; the
 * result is never NULL. */
mt_automaton *mt_compile(const dsl_ruleset *rs, dg_context *dg);
/* The same for a list of rules (tests build rules by hand). */
mt_automaton *mt_compile_rules(dsl_rule *const *rules, uint32_t nrules, dg_context *dg);
void mt_free(mt_automaton *a);

typedef struct mt_stats {
    uint32_t rules;        /* rules compiled */
    uint32_t variants;     /* check sequences (one per combination of alternatives) */
    uint32_t checks;       /* checks before merging (a sequence counts under each root op) */
    uint32_t trie_nodes;   /* checks after merging shared prefixes */
    uint32_t words;        /* the table's size in 32-bit words */
    uint32_t root_ops;     /* ops some rule is rooted at */
    uint32_t registers;    /* the most positions a match needs */
} mt_stats;

void mt_get_stats(const mt_automaton *a, mt_stats *out);
/* The rules compiled, in rule-set order; mt_match.rule_index indexes it. */
dsl_rule *const *mt_rules(const mt_automaton *a, uint32_t *count);

/* Prints the table, one instruction a line, each check annotated with the pattern node and the
 * rule (name, file:line) it came from, and how many other rules share it. */
void mt_dump(const mt_automaton *a, FILE *out);

/* ---- matching ------------------------------------------------------------------------------- */

typedef struct mt_match {
    const dsl_rule *rule;
    uint32_t rule_index;   /* position in mt_rules() */
    ir_node *root;         /* the node roots[0] matched */
    /* Per pattern node (rule->nodes[i]): the value it stands for, NULL when the match did not
     * reach it (under an absent optional op); and the node it matched, NULL for leaves and absent
     * optional ops. */
    ir_value **values;
    ir_node **nodes;
    const uint32_t *key;   /* the order among the matches of one rule at one node */
    uint32_t nkey;
} mt_match;

/* A place where a rule's root op matched but the rule did not: the check that failed on the way
 * that got furthest (explain mode only). */
typedef struct mt_near_miss {
    const dsl_rule *rule;
    uint32_t rule_index;
    ir_node *root;
    const dsl_pattern *at;  /* the pattern node the check is about; NULL for the guard */
    const char *reason;     /* e.g. "`BN`: 'c1' is computed by Add, not BatchNormalization" */
} mt_near_miss;

/* explain: also record near misses (slower; for `fuserule apply --explain`). */
mt_matcher *mt_matcher_new(const mt_automaton *a, bool explain);
void mt_matcher_free(mt_matcher *m);

/* Finds every rule that matches at node n of g (uses must be computed: ir_validate or
 * ir_compute_uses) and appends the matches; returns how many were added. */
size_t mt_match_node(mt_matcher *m, ir_graph *g, ir_node *n);

const mt_match *mt_matches(const mt_matcher *m, size_t *count);
const mt_near_miss *mt_near_misses(const mt_matcher *m, size_t *count);
/* Forgets the matches and near misses collected so far. */
void mt_matcher_reset(mt_matcher *m);

/* ---- the predicates, shared with the reference matcher in the tests ----------------------- */

/* Whether node n's attribute (set, else the catalog default) equals a: integers exactly, floats
 * within a relative 1e-6 (an attribute read from ONNX is a float32), strings and lists exactly. */
bool mt_attr_equal(const ir_node *n, const ir_attr *a);

/* Evaluates rule r's guard on a match's bindings (values and nodes per rule->nodes[i]); true only
 * when it is definitely true (a dim that is unknown or symbolic makes a comparison unknown). A rule
 * without a guard holds. */
bool mt_guard_holds(const dsl_rule *r, ir_graph *g, ir_value *const *values,
                    ir_node *const *nodes);
/* The condition of r's guard that fails on these bindings: the first operand of its top-level
 * `&&` chain that is not definitely true (the whole guard when it is no such chain). For reports
 * that quote the condition, not the whole guard. */
const dsl_expr *mt_guard_failing(const dsl_rule *r, ir_graph *g, ir_value *const *values,
                                 ir_node *const *nodes);

#endif
