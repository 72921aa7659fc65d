/* Warnings about rules that can never fire. Rules are ranked as the matcher ranks them: lower
 * phase first, then higher priority, ties by load order. A rule is reported when a rule ranked before it
 *   - has the same pattern and guard (capture names aside): an exact duplicate when the
 *     replacement is the same too, else it is shadowed. Found by hashing, for every rule;
 *   - or matches everything it matches: a single-root pattern without guard, optional ops or
 *     shared nodes that is more general node by node (a superset of ops, fewer predicates and
 *     attributes, operands left open) than the rule, which has one root and no optional ops.
 *     Each rule is compared with at most SCAN_LIMIT rules ranked before it with the same root
 *     op, which keeps a large rule set linear. */
#include "dsl/sema.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

enum { SCAN_LIMIT = 256 };

typedef enum { SAME_RULE, SAME_PATTERN, MORE_GENERAL } finding_kind;

typedef struct {
    const dsl_rule *loser, *winner;
    finding_kind kind;
} finding;

static int by_rank(const void *a, const void *b)
{
    const dsl_rule *x = *(const dsl_rule *const *)a, *y = *(const dsl_rule *const *)b;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_loser(const void *a, const void *b)
{
    const finding *x = a, *y = b;
    return x->loser->index < y->loser->index ? -1 : x->loser->index > y->loser->index;
}

/* ---- one pattern covering another ---- */

static bool preds_cover(const dsl_value_preds *a, const dsl_value_preds *b)
{
    return (!a->is_const || b->is_const) &&
           (a->dtype == IR_DTYPE_UNKNOWN || a->dtype == b->dtype) &&
           (a->layout == IR_LAYOUT_NONE || a->layout == b->layout) &&
           (a->rank < 0 || a->rank == b->rank);
}

static bool attr_equal(const ir_attr *a, const ir_attr *b)
{
    if (a->kind != b->kind || strcmp(a->name, b->name) != 0)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT:
        return a->v.i == b->v.i;
    case IR_ATTR_FLOAT:
        return a->v.f == b->v.f;
    case IR_ATTR_STRING:
        return strcmp(a->v.s, b->v.s) == 0;
    case IR_ATTR_INTS:
        return a->count == b->count && (!a->count || memcmp(a->v.ints, b->v.ints, a->count * sizeof *a->v.ints) == 0);
    case IR_ATTR_FLOATS:
        if (a->count != b->count)
            return false;
        for (uint32_t i = 0; i < a->count; i++)
            if (a->v.floats[i] != b->v.floats[i])
                return false;
        return true;
    }
    return false;
}

static bool has_attr(const dsl_pattern *p, const ir_attr *a)
{
    for (uint32_t i = 0; i < p->nattrs; i++)
        if (attr_equal(&p->attrs[i], a))
            return true;
    return false;
}

static bool has_op(const dsl_pattern *p, ir_op op)
{
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i] == op)
            return true;
    return false;
}

static bool unconstrained(const dsl_pattern *p)
{
    const dsl_value_preds *pr = &p->preds;
    return p->kind == DSL_PAT_ANY && !pr->is_const && pr->dtype == IR_DTYPE_UNKNOWN &&
           pr->layout == IR_LAYOUT_NONE && pr->rank < 0;
}

/* Whether every node matched by b is matched by a (both from checked rules; recursion is
 * bounded by DSL_MAX_DEPTH). */
static bool covers(const dsl_pattern *a, const dsl_pattern *b)
{
    if (a->kind == DSL_PAT_ANY)
        return preds_cover(&a->preds, &b->preds);
    if (b->kind != DSL_PAT_OP || b->optional)
        return false;
    for (uint32_t i = 0; i < b->nops; i++)
        if (!has_op(a, b->ops[i]))
            return false;
    if (!preds_cover(&a->preds, &b->preds))
        return false;
    for (uint32_t i = 0; i < a->nattrs; i++)
        if (!has_attr(b, &a->attrs[i]))
            return false;
    if (!a->open && (b->open || b->noperands != a->noperands))
        return false;
    for (uint32_t i = 0; i < a->noperands; i++) {
        if (i >= b->noperands) {
            if (!b->open || !unconstrained(a->operands[i]))
                return false;
        } else if (!covers(a->operands[i], b->operands[i])) {
            return false;
        }
    }
    return true;
}

static bool has_optional(const dsl_rule *r)
{
    for (uint32_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i]->optional)
            return true;
    return false;
}

/* A tree without optional ops: what it matches is the intersection of its nodes' conditions. */
static bool plain_tree(const dsl_rule *r)
{
    for (uint32_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i]->users > 1 || r->nodes[i]->output_of) /* `@f.1` ties two nodes */
            return false;
    return !has_optional(r);
}

/* ---- the pass ---- */

typedef struct {
    VEC(const dsl_rule *) rules;
} bucket;

typedef struct {
    VEC(finding) v;
} findings_list;

static char *pattern_key(const dsl_rule *r, char **repl_key)
{
    dsl_buf pattern = {0}, repl = {0}, guard = {0};
    dsl_format_rule(r, false, &pattern, &repl, &guard);
    dsl_buf_append(&pattern, " where ", 7);
    dsl_buf_append(&pattern, guard.v.items, guard.v.len);
    dsl_buf_append(&repl, "", 0);
    dsl_buf_free(&guard);
    *repl_key = repl.v.items;
    return pattern.v.items;
}

/* r may share nodes: a tree that covers it read as a tree covers it with the sharing too. */
static void find_general(const dsl_rule *r, const bucket *buckets, findings_list *out)
{
    if (r->nroots != 1 || has_optional(r))
        return;
    const bucket *candidates = &buckets[r->roots[0]->ops[0]];
    size_t n = candidates->rules.len < SCAN_LIMIT ? candidates->rules.len : SCAN_LIMIT;
    for (size_t i = 0; i < n; i++) {
        const dsl_rule *general = candidates->rules.items[i];
        if (covers(general->roots[0], r->roots[0])) {
            vec_push(&out->v, ((finding){r, general, MORE_GENERAL}));
            return;
        }
    }
}

static void file_general(const dsl_rule *r, bucket *buckets)
{
    if (r->nroots != 1 || r->guard || !plain_tree(r))
        return;
    for (uint32_t i = 0; i < r->roots[0]->nops; i++)
        vec_push(&buckets[r->roots[0]->ops[i]].rules, r);
}

static void report(const finding *f, dg_context *dg)
{
    const dsl_rule *a = f->winner, *b = f->loser;
    const char *why = a->phase < b->phase         ? "is in an earlier phase"
                      : a->priority > b->priority ? "has a higher priority"
                                                  : "comes first (same priority)";
    if (f->kind == SAME_RULE)
        dg_warning(dg, b->src, b->src_offset, b->src_len, "rule '%s' duplicates rule '%s'",
                   b->name, a->name);
    else if (f->kind == SAME_PATTERN)
        dg_warning(dg, b->src, b->src_offset, b->src_len,
                   "rule '%s' never fires: rule '%s' has the same pattern and %s", b->name,
                   a->name, why);
    else
        dg_warning(dg, b->src, b->src_offset, b->src_len,
                   "rule '%s' never fires: rule '%s' matches everything it matches and %s",
                   b->name, a->name, why);
    dg_note(dg, a->src, a->src_offset, a->src_len, "rule '%s' is here", a->name);
}

void dsl_warn_rules(dsl_ruleset *rs, dg_context *dg)
{
    VEC(const dsl_rule *) ranked = {0};
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (rs->rules[i]->checked)
            vec_push(&ranked, rs->rules[i]);
    if (ranked.len > 1)
        qsort(ranked.items, ranked.len, sizeof *ranked.items, by_rank);

    sm_map first = {0}; /* pattern key -> index in ranked */
    VEC(char *) keys = {0};
    VEC(char *) repl_keys = {0};
    findings_list findings = {0};
    bucket *buckets = calloc(IR_OP_COUNT, sizeof *buckets);
    FR_CHECK(buckets != NULL);
    for (size_t i = 0; i < ranked.len; i++) {
        const dsl_rule *r = ranked.items[i];
        char *repl_key, *key = pattern_key(r, &repl_key);
        vec_push(&keys, key);
        vec_push(&repl_keys, repl_key);
        void *seen = sm_get(&first, key, strlen(key));
        if (seen) {
            size_t w = (size_t)(uintptr_t)seen - 1;
            bool same = strcmp(repl_keys.items[w], repl_key) == 0;
            vec_push(&findings.v, ((finding){r, ranked.items[w], same ? SAME_RULE : SAME_PATTERN}));
            continue;
        }
        sm_put(&first, key, strlen(key), (void *)(uintptr_t)(i + 1));
        find_general(r, buckets, &findings);
        file_general(r, buckets);
    }
    if (findings.v.len > 1)
        qsort(findings.v.items, findings.v.len, sizeof *findings.v.items, by_loser);
    for (size_t i = 0; i < findings.v.len; i++)
        report(&findings.v.items[i], dg);

    for (int op = 0; op < IR_OP_COUNT; op++)
        vec_free(&buckets[op].rules);
    free(buckets);
    for (size_t i = 0; i < keys.len; i++) {
        free(keys.items[i]);
        free(repl_keys.items[i]);
    }
    vec_free(&keys);
    vec_free(&repl_keys);
    vec_free(&findings.v);
    vec_free(&ranked);
    sm_free(&first);
}

/* ---- across files: a rule that takes part of another file's chain first ---- */

static bool ranks_before(const dsl_rule *a, const dsl_rule *b)
{
    return a->priority != b->priority ? a->priority > b->priority : a->index < b->index;
}

static bool same_file(const dsl_rule *a, const dsl_rule *b)
{
    return a->src == b->src || strcmp(a->src->path, b->src->path) == 0;
}

/* The node of `chain` at which `part` matches whatever the chain matches there, or NULL. */
static const dsl_pattern *covered_node(const dsl_rule *part, const dsl_rule *chain)
{
    for (uint32_t i = 0; i < chain->nnodes; i++) {
        const dsl_pattern *v = chain->nodes[i];
        if (v->kind == DSL_PAT_OP && covers(part->roots[0], v))
            return v;
    }
    return NULL;
}

void dsl_warn_preempted(const dsl_ruleset *rs, dg_context *dg)
{
    for (uint32_t i = 0; i < rs->nrules; i++) {
        const dsl_rule *x = rs->rules[i];
        if (!x->checked || x->nroots != 1 || x->guard || !plain_tree(x))
            continue; /* a guard may keep it from firing: no certain preemption */
        for (uint32_t k = 0; k < rs->nrules; k++) {
            const dsl_rule *y = rs->rules[k];
            if (!y->checked || same_file(x, y) || !ranks_before(x, y) || y->nnodes <= x->nnodes)
                continue;
            const dsl_pattern *at = covered_node(x, y);
            if (!at)
                continue;
            dg_warning(dg, x->src, x->src_offset, x->src_len,
                       "rule '%s' preempts rule '%s' of %s: it matches part of every match of "
                       "'%s' (from its %s) and ranks first (%s), so '%s' never fires",
                       x->name, y->name, y->src->path, y->name, at->text,
                       x->priority > y->priority
                           ? "a higher priority"
                           : "the same priority, loaded first",
                       y->name);
            dg_note(dg, y->src, y->src_offset, y->src_len, "rule '%s' is here", y->name);
        }
    }
}
