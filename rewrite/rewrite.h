/* The rewriter: selection, legality, the rewrite driver and the actions.
 *
 *     rw_report rep;
 *     rw_apply(g, automaton, &opts, &rep, dg);   (g validated; rewritten in place)
 *     rw_report_print(&rep, stdout, RW_REPORT_JSON);
 *     rw_report_free(&rep);
 *
 * Each round matches every live node (the automaton, matcher/matcher.h), sorts the matches by
 * priority (the rule's, by default its op count; ties by rule order, then the later root first:
 * reverse topological order), and commits them greedily: a match is refused, with its reason
 * recorded, when it overlaps a committed one, loses an interior value that is read outside it or is
 * a graph output (unless the replacement exports it), would create a cycle, changes precision inside
 * the chain, lacks the constants its actions need, breaks the folding budget, gives a fused node
 * whose shape or type differs from what it replaces, or has no kernel on the target backend. A
 * committed match becomes one node bound to its kernel; actions fold weights into new constants.
 * Rounds repeat until nothing fires (at most max_rounds), then the graph is compacted and validated.
 * Output is deterministic. docs/matcher.md describes the rules of selection and legality. */
#ifndef FUSERULE_REWRITE_REWRITE_H
#define FUSERULE_REWRITE_REWRITE_H

#include "base/arena.h"
#include "base/diag.h"
#include "base/vec.h"
#include "ir/ir.h"
#include "kernels/kernels.h"
#include "matcher/matcher.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum {
    RW_DEFAULT_ROUNDS = 16,
};

/* The folding budget: new constant bytes at most RW_BUDGET_FACTOR times the graph's constant bytes
 * (and at least RW_BUDGET_FLOOR), never more than RW_BUDGET_CAP. */
#define RW_BUDGET_FACTOR 4
#define RW_BUDGET_FLOOR ((int64_t)1 << 20)
#define RW_BUDGET_CAP ((int64_t)8 << 30)

typedef struct rw_options {
    kn_backend target;
    bool explain;           /* record near misses (of the last round) */
    uint32_t max_rounds;    /* 0: RW_DEFAULT_ROUNDS */
    int64_t budget;         /* bytes of new constants allowed; 0: the default budget above */
    /* Validate the whole graph after every single rewrite (always after every round). On by
     * default in debug builds (rw_options_default). */
    bool validate_each;
    /* Validate the whole graph after each round instead of only what the round changed
     * (ir_validate_marked): the same result, slower; tests compare the two. */
    bool whole_validation;
    /* Count the overlap refusals (rw_refusal_is_overlap) per pair of rules in report->overlaps
     * instead of recording each in report->refused: for a report that prints only their counts
     * (the text report without explain), 32 bytes less per overlap (a quarter of a million at a
     * million nodes). Off by default: --explain, the JSON report, prove and rule tests read
     * each. */
    bool count_overlaps;
    /* Tests only (NULL otherwise): called after each committed rewrite with the node it made (NULL
     * for a forward); a test corrupts the graph there to see validation catch it. */
    void (*after_commit)(ir_graph *g, ir_node *fused, void *arg);
    void *after_commit_arg;
} rw_options;

rw_options rw_options_default(void);

/* A rule that did not fire where it matched, or (explain) nearly matched. */
typedef struct rw_refusal {
    const char *rule;
    const char *node;       /* the name of the root's first output */
    const char *reason;
} rw_refusal;

/* Why a rule did not fire, as the rewrite records it: a code and its operands, made text only when
 * a report asks for it (rw_report_refusal). */
typedef enum {
    RW_REASON_TEXT,            /* `name` is the reason's text */
    RW_REASON_OVERLAP_SHORTER, /* the node whose output is `name` (of `op`) was taken by rule
                                * `owner`, a shorter chain ranked first */
    RW_REASON_OVERLAP_TAKEN,   /* the node whose output is `name` (of `op`) was taken by rule
                                * `owner` (-1: a rewrite that named no rule) */
    RW_REASON_OVERLAP_REMOVED, /* the value `name` was removed by an earlier rewrite */
} rw_reason;

/* A refusal as recorded. The names are the graph's: read the report before freeing the graph. */
typedef struct rw_refusal_rec {
    const char *node;       /* the name of the root's first output */
    const char *name;       /* the operand's name, or the text */
    uint32_t rule;          /* the refused rule */
    int32_t owner;          /* the rule that took the node, -1 */
    uint16_t code;          /* rw_reason */
    uint16_t op;            /* the node's op */
} rw_refusal_rec;

enum { RW_REASON_SIZE = 400 };

/* Overlap refusals of one pair of rules, counted (rw_options.count_overlaps). */
typedef struct rw_overlap_count {
    const char *rule;       /* the refused rule */
    const char *by;         /* the rule that took the nodes (by_len bytes, not terminated), "?",
                             * or "an earlier rewrite" */
    int by_len;
    size_t count;
} rw_overlap_count;

typedef struct rw_report {
    ar_arena *arena;        /* owns the strings below */
    ir_stats before, after;
    uint32_t rounds;
    bool round_limit;       /* stopped by max_rounds while rules still fired */
    uint32_t nrules;
    const char **rule_names; /* in rule order */
    uint32_t *fired;         /* per rule */
    uint32_t *rule_nops;     /* per rule: the ops its chain counts */
    int64_t *rule_phase;     /* per rule */
    VEC(rw_refusal_rec) refused; /* rw_report_refusal gives each as text */
    VEC(rw_refusal) near_misses;
    /* With count_overlaps: the overlap refusals (none of them in refused) per pair of rules, in
     * order of first appearance, in the arena. */
    rw_overlap_count *overlaps;
    size_t noverlaps, overlaps_cap;
    int64_t folded_bytes;    /* new constant bytes created by actions */
    size_t removed_unread;   /* nodes removed because the fusions left them unread (dce.c) */
    int64_t budget;
    /* CPU seconds spent (all rounds): running the automaton, selecting and rewriting, and
     * validating the graph after each round. */
    double match_seconds, commit_seconds, validate_seconds;
} rw_report;

/* Rewrites the validated graph g in place. Returns false after reporting an error to dg (an
 * internal inconsistency: the graph failed validation after rewriting; or a constant that could
 * not be read). The report is filled either way and must be freed. */
bool rw_apply(ir_graph *g, const mt_automaton *a, const rw_options *opts, rw_report *report,
              dg_context *dg);
void rw_report_free(rw_report *report);
/* Refusal i (of report->refused.len) as text; buf (RW_REASON_SIZE bytes) holds the reason when
 * the record keeps it as a code. */
rw_refusal rw_report_refusal(const rw_report *report, size_t i, char *buf);

typedef enum { RW_REPORT_TEXT, RW_REPORT_JSON } rw_report_format;

/* The report: text for people, or one JSON object (docs/matcher.md, "The report"). Near misses are
 * printed when explain is set. */
void rw_report_print(const rw_report *report, FILE *out, rw_report_format format, bool explain);

/* ---- rules ---------------------------------------------------------------------------------------- */

/* Options of the rules language backed by the kernel registry: a replacement's target needs a
 * registered kernel, and `residual = @res` names an input port of the fused op. */
dsl_options rw_dsl_options(void);
/* Loads rule files (with their includes) into a new rule set *rs, checks them and compiles the
 * automaton. NULL after errors, which are in dg (*rs is set either way: the diagnostics point into
 * it, so print them before dsl_ruleset_free). */
mt_automaton *rw_load_rules(const char *const *paths, size_t n, dsl_ruleset **rs, dg_context *dg);
/* The second half of rw_load_rules, for a rule set loaded otherwise (a rule test's own rules):
 * checks it and compiles the automaton; NULL after errors, which are in dg. */
mt_automaton *rw_compile_rules(dsl_ruleset *rs, dg_context *dg);

#endif
