/* Proving rules by testing them: `fuserule check --prove` (docs/prove.md).
 *
 *     pv_result res;
 *     pv_prove(rule, &opts, &res);        (a checked rule)
 *     pv_result_print(rule, &res, stdout);
 *     pv_result_free(&res);
 *
 * For one rule, builds small random graphs that are instances of its pattern: its op nodes (a set
 * of alternatives picks one member, an optional op is present or absent, commutative operands come
 * in either order) with their inline attributes, the pattern's leaves as graph inputs or constants,
 * shapes proposed from each op's semantics, constants chosen so that the guard can hold (the
 * literals it compares value(@c) with, values derived from the shapes). A candidate is an instance
 * when THAT rule, compiled alone, fires on it through the real matcher and rewriter (so its guard
 * and the framework's legality held). The original and the rewritten graph then run on the CPU
 * executor with the same inputs and every output is compared with `fuserule verify`'s tolerances.
 * Everything is seeded: the same rule and options give the same verdict and text.
 *
 * Memory: a result owns its strings (malloc); pv_result_free releases them. */
#ifndef FUSERULE_PROVE_PROVE_H
#define FUSERULE_PROVE_PROVE_H

#include "dsl/dsl.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum {
    PV_DEFAULT_INSTANCES = 8,   /* instances a rule must fire on to be proved */
    PV_DEFAULT_ATTEMPTS = 1000, /* candidate graphs built per rule at most */
};

typedef struct pv_options {
    uint64_t seed;
    uint32_t instances; /* 0: PV_DEFAULT_INSTANCES */
    uint32_t attempts;  /* 0: PV_DEFAULT_ATTEMPTS (at least `instances`) */
} pv_options;

typedef enum {
    PV_PROVED,   /* both sides agreed on every instance */
    PV_FAILED,   /* some instance's outputs differ (or the rewritten graph does not run) */
    PV_UNPROVEN, /* no candidate was an instance */
} pv_verdict;

typedef struct pv_result {
    pv_verdict verdict;
    uint32_t attempts;  /* candidates built */
    uint32_t instances; /* of them, those the rule fired on and both sides ran */
    uint32_t failures;  /* of the instances, those whose outputs differ */
    double max_diff;    /* the largest |rewritten - original| over the agreeing instances, on
                         * their drawn inputs (not the scaled or planted variants) */
    /* FAILED: the smallest failing instance (fewest elements in its inputs and constants). */
    char *failure;        /* one line: "outputs differ by 0.83 (tolerance ...)" */
    char *counterexample; /* lines: the graph, its input values, the two sides' worst element */
    /* UNPROVEN: the reason the rewriter refused the rule most often, or NULL if it never matched. */
    char *refusal;
    uint32_t refusals; /* how many times it refused for that reason */
    /* UNPROVEN: why the generator could not build a candidate most often ("Tile: operand 1: ..."),
     * or NULL. */
    char *unbuilt;
    uint32_t unbuilt_count;
} pv_result;

/* Proves one checked rule. Never fails: what goes wrong is the verdict (a rule the automaton
 * cannot express, which `fuserule check --prove` reports as an error first, is unproven after no
 * attempt). */
void pv_prove(dsl_rule *rule, const pv_options *opts, pv_result *out);
void pv_result_free(pv_result *res);

/* The verdict line, "FILE:LINE: NAME: proved on 8 instances (max |diff| 2.4e-07)", and for a
 * failure the counterexample below it. */
void pv_result_print(const dsl_rule *rule, const pv_result *res, FILE *out);

#endif
