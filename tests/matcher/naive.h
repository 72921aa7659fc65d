/* The reference matcher: one rule at a time, recursive backtracking straight from the semantics
 * written in matcher/matcher.h. It shares nothing with the automaton but the two predicates that
 * header exports (attribute equality and guard evaluation). Kept in the tests only. */
#ifndef FUSERULE_TESTS_MATCHER_NAIVE_H
#define FUSERULE_TESTS_MATCHER_NAIVE_H

#include "base/vec.h"
#include "dsl/dsl.h"
#include "ir/ir.h"

typedef struct nv_match {
    uint32_t rule_index;
    ir_node *root;
    ir_value **values; /* per rule->nodes[i] */
    ir_node **nodes;
    uint32_t *key;
    uint32_t nkey;
} nv_match;

typedef VEC(nv_match) nv_matches;

/* Appends the matches of rule r at node n of g (uses computed) in key order: distinct bindings,
 * at most MT_MAX_SOLUTIONS. Arrays are allocated in arena. */
void nv_match_rule(ar_arena *arena, ir_graph *g, const dsl_rule *r, uint32_t rule_index,
                   ir_node *n, nv_matches *out);

#endif
