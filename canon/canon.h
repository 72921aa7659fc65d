/* Canonicalization: the one form of a graph that rules are written against (docs/canon.md).
 *
 * Every step preserves what the graph computes: constant folding (CPU kernels, the op's own dtype,
 * a size budget per node), no-ops removed, common subexpressions merged, one spelling per op
 * (attribute-or-input forms in the input form, default trailing inputs dropped, axes counted from
 * the end), dead nodes dropped. The steps repeat until none changes anything, so the result is a
 * fixed point: canonicalizing it again changes nothing (byte-identical text). Nothing depends on
 * addresses or hash order.
 *
 *     cn_options o = cn_options_default();
 *     cn_report rep;
 *     if (!cn_canonicalize(g, &o, &rep, dg)) ...   (g validated before and after) */
#ifndef FUSERULE_CANON_CANON_H
#define FUSERULE_CANON_CANON_H

#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stdint.h>

/* The default folding budget: bytes of folded output per node. */
#define CN_DEFAULT_FOLD_BUDGET ((int64_t)16 << 20)
/* Rounds of all the steps at most (each round that changes nothing ends it). */
enum { CN_MAX_ROUNDS = 16 };

typedef struct cn_options {
    int64_t fold_budget; /* bytes of output a folded node may have; 0: no folding */
    /* every round runs every step and validates the whole graph, with none of the shortcuts
     * (validation of what changed, steps skipped when nothing they read changed): the same
     * result, slower; tests compare the two */
    bool whole_rounds;
    /* after every round, a fingerprint of every node and value (ir_validated_changed) checks
     * that what the steps recorded as changed covers every change they made (aborts if not):
     * tests */
    bool check_marks;
    /* when set, ir_compute_stats of the graph as given, counted in the first round's pass over
     * the nodes rather than in a pass of its own (apply's report of the loaded graph) */
    ir_stats *stats_before;
} cn_options;

/* What each step did, summed over the rounds. */
typedef struct cn_report {
    uint32_t folded;    /* nodes computed into constants */
    uint32_t removed;   /* no-ops whose readers now read their input */
    uint32_t merged;    /* nodes (and small constants) equal to an earlier one */
    uint32_t respelled; /* nodes put in their one spelling */
    uint32_t dead;      /* nodes whose outputs nothing read */
    uint32_t rounds;
    double seconds; /* CPU time */
} cn_report;

cn_options cn_options_default(void);

/* Puts a validated graph in canonical form: one that ir_validate (or ir_validate_since) accepted
 * and that nothing changed since, whose use lists are read as validation left them. Returns false
 * after reporting an error (the graph no longer validates: a bug). */
bool cn_canonicalize(ir_graph *g, const cn_options *opts, cn_report *rep, dg_context *dg);

#endif
