/* The rewrite driver: rounds of match, sort, commit, until nothing fires.
 *
 * A round starts from a validated graph whose node list is a topological order. Every live node
 * is matched (in reverse order); the matches are sorted by priority, then rule order, then the
 * later root first (reverse topological order), then key; matches of one rule at one node are
 * alternatives, tried in key order until one is legal. The driver keeps a topological order of
 * the live nodes while it rewrites (the convexity check relies on it), and at the end of the round
 * makes it the graph's node list, compacts and validates. Nothing depends on addresses or hash
 * order, so the same input gives the same output. */
#include "rewrite/internal.h"

#include "base/check.h"
#include "base/strmap.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of the process: steadier than wall time on a loaded machine. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

rw_options rw_options_default(void)
{
    rw_options o = {.target = KN_BACKEND_CPU, .max_rounds = RW_DEFAULT_ROUNDS};
#ifndef NDEBUG
    o.validate_each = true;
#endif
    return o;
}

rw_node_state *rw_state_grow(rw_ctx *ctx, const ir_node *n)
{
    FR_CHECK(n->id != RW_TENTATIVE_ID);
    while (ctx->st.len <= n->id)
        vec_push(&ctx->st, ((rw_node_state){.claimed_by = -1}));
    return &ctx->st.items[n->id];
}

uint32_t rw_new_stamp(rw_ctx *ctx)
{
    return ++ctx->stamp;
}

/* ---- the order and renumbering ------------------------------------------------------------------- */

static void round_begin(rw_ctx *ctx)
{
    ir_graph *g = ctx->g;
    ctx->order.len = 0;
    ctx->st.len = 0;
    ctx->stamp = 0;
    size_t n = g->nodes.len;
    vec_reserve(&ctx->order, n);
    vec_reserve(&ctx->st, n);
    for (size_t i = 0; i < n; i++) {
        ir_node *node = g->nodes.items[i];
        FR_CHECK(node->id == i && !node->dead);
        ctx->order.items[i] = node;
        ctx->st.items[i] = (rw_node_state){.pos = (uint32_t)i, .claimed_by = -1};
    }
    ctx->order.len = ctx->st.len = n;
}

/* Makes the graph's node list the live nodes in the driver's order followed by the removed ones,
 * numbers the nodes by that list (moving their state along), so that validation keeps both. */
static void renumber(rw_ctx *ctx)
{
    ir_graph *g = ctx->g;
    size_t n = g->nodes.len;
    ir_node **list = malloc((n ? n : 1) * sizeof *list);
    rw_node_state *st = malloc((n ? n : 1) * sizeof *st);
    FR_CHECK(list && st);
    size_t k = 0;
    for (size_t i = 0; i < ctx->order.len; i++)
        if (ctx->order.items[i] && !ctx->order.items[i]->dead)
            list[k++] = ctx->order.items[i];
    size_t live = k;
    for (size_t i = 0; i < n; i++)
        if (g->nodes.items[i]->dead)
            list[k++] = g->nodes.items[i];
    FR_CHECK(k == n); /* every live node is in the order exactly once */
    for (size_t i = 0; i < n; i++) {
        st[i] = *rw_state(ctx, list[i]);
        st[i].pos = (uint32_t)i;
    }
    for (size_t i = 0; i < n; i++) {
        list[i]->id = (uint32_t)i;
        g->nodes.items[i] = list[i];
        ctx->st.items[i] = st[i];
    }
    ctx->st.len = n;
    ctx->order.len = 0;
    for (size_t i = 0; i < live; i++)
        vec_push(&ctx->order, list[i]);
    free(list);
    free(st);
}

/* At the end of a round: makes the graph's node list the live nodes in the driver's order and
 * numbers them by it; the removed nodes leave the list (ir_compact would drop them next) and the
 * nodes' state stays behind (the next round starts its own). `live`: how many live nodes the list
 * held. */
static void renumber_live(rw_ctx *ctx, size_t live)
{
    ir_graph *g = ctx->g;
    size_t k = 0;
    for (size_t i = 0; i < ctx->order.len; i++) {
        ir_node *n = ctx->order.items[i];
        if (n && !n->dead) {
            FR_CHECK(k < live);
            n->id = (uint32_t)k;
            g->nodes.items[k++] = n;
        }
    }
    FR_CHECK(k == live); /* every live node is in the order exactly once */
    g->nodes.len = k;
    ctx->order.len = 0;
    ctx->st.len = 0;
}

static bool validate_failed(rw_ctx *ctx, const char *when)
{
    dg_error_path(ctx->dg, ctx->g->name,
                  "internal error: the graph is invalid %s (a bug in fuserule's rewriter)", when);
    return false;
}

/* After a rewrite (validate_each), renumbered: the whole graph, removed nodes still in it (their
 * state is still read this round). */
static bool validate_rewrite(rw_ctx *ctx)
{
    return ir_validate(ctx->g, ctx->dg) || validate_failed(ctx, "after a rewrite");
}

/* After a round: renumbers, compacts and validates what the round changed (ir_validate_marked): the
 * nodes it added and their values; the values of the nodes it removed (now another node's, or gone)
 * and their live readers (a forward gave them another operand); and downstream of them where a
 * type changed. Or the whole graph, with opts.whole_validation or validate_each (which renumbered
 * the list during the round). The nodes from nodes0 on and the values from values0 on are the
 * round's (the lists before renumbering). */
static bool validate_round(rw_ctx *ctx, size_t nodes0, size_t values0)
{
    ir_graph *g = ctx->g;
    if (ctx->opts.whole_validation || ctx->opts.validate_each) {
        renumber(ctx);
        ir_compact(g);
        return ir_validate(g, ctx->dg) || validate_failed(ctx, "after a round of rewrites");
    }
    VEC(ir_node *) nodes = {0};
    VEC(ir_value *) values = {0};
    bool whole = false; /* a node made and removed in one round: the use lists do not say */
    size_t live = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        live += !n->dead;
        if (i < nodes0 && !n->dead)
            continue;
        whole |= i >= nodes0 && n->dead;
        if (i >= nodes0)
            vec_push(&nodes, n);
        for (uint32_t k = 0; k < n->noutputs; k++) {
            ir_value *v = n->outputs[k];
            vec_push(&values, v);
            for (uint32_t u = 0; i < nodes0 && u < v->nuses; u++) /* the uses of the round's start */
                if (!v->uses[u]->dead)
                    vec_push(&nodes, v->uses[u]);
        }
    }
    for (size_t i = values0; i < g->values.len; i++)
        vec_push(&values, g->values.items[i]);
    renumber_live(ctx, live);
    ir_compact(g);
    bool *dirty_node = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *dirty_node);
    bool *dirty_value = calloc(g->values.len ? g->values.len : 1, sizeof *dirty_value);
    FR_CHECK(dirty_node && dirty_value);
    for (size_t i = 0; i < nodes.len; i++) {
        ir_node *n = nodes.items[i];
        if (n->id < g->nodes.len && g->nodes.items[n->id] == n) /* not removed since collected */
            dirty_node[n->id] = true;
    }
    for (size_t i = 0; i < values.len; i++) {
        ir_value *v = values.items[i];
        if (v->id < g->values.len && g->values.items[v->id] == v) /* not dropped */
            dirty_value[v->id] = true;
    }
    /* the fused nodes' types as their plans inferred them, unless a forward re-pointed readers or
     * a test's hook changed the graph after a commit (the operands may not be those planned on) */
    const ir_type **planned = NULL;
    if (!whole && ctx->planned.len && !ctx->round_forwarded && !ctx->opts.after_commit) {
        planned = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *planned);
        FR_CHECK(planned != NULL);
        for (size_t i = 0; i < ctx->planned.len; i++) {
            const rw_planned *e = &ctx->planned.items[i];
            if (!e->node->dead && e->node->id < g->nodes.len &&
                g->nodes.items[e->node->id] == e->node)
                planned[e->node->id] = e->type;
        }
    }
    ctx->planned.len = 0;
    bool ok = whole ? ir_validate(g, ctx->dg)
                    : ir_validate_planned(g, dirty_node, dirty_value, planned, ctx->dg);
    free(planned);
    free(dirty_node);
    free(dirty_value);
    vec_free(&nodes);
    vec_free(&values);
    return ok || validate_failed(ctx, "after a round of rewrites");
}

/* ---- recording ----------------------------------------------------------------------------------- */

typedef struct {
    rw_ctx *ctx;
    sm_map seen; /* refusals already recorded, by refusal_key */
} recorder;

/* What makes a refusal the same as one recorded in an earlier round: the same rule at the same root
 * for the same reason (the code and its operands; a text by its hash). Nodes and values keep their
 * addresses for the whole rewrite (removed ones are only marked), so a node is its address and a
 * name its pointer. */
typedef struct {
    const ir_node *root;
    const void *operand;
    uint64_t text_hash;
    uint32_t rule;
    int32_t owner;
    uint32_t code;
    uint32_t unused; /* zeroed: no padding garbage in the key */
} refusal_key;

static uint64_t text_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Records that m was refused: for `reason` (its code and operands), or for the text in why when
 * the code is RW_REASON_TEXT. */
static void record(recorder *rec, const mt_match *m, const rw_refusal_rec *reason, const char *why)
{
    rw_report *rep = rec->ctx->rep;
    /* A single-root rule's matches at one root are one group of the round's sorted candidates, so
     * its refusal there is recorded once a round; when a match committed before it took the root
     * (an overlap, most refusals in a large graph), no later round matches that root again: the
     * refusal is new and stays the only one, and needs no key. */
    if (!(m->rule->nroots == 1 && m->root->dead)) {
        refusal_key *key = ar_alloc(rep->arena, sizeof *key); /* zeroed */
        key->root = m->root;
        key->rule = m->rule_index;
        key->code = reason->code;
        key->owner = reason->owner;
        if (reason->code == RW_REASON_TEXT)
            key->text_hash = text_hash(why);
        else
            key->operand = reason->name;
        if (sm_get(&rec->seen, (const char *)key, sizeof *key))
            return;
        sm_put(&rec->seen, (const char *)key, sizeof *key, key);
    }
    rw_refusal_rec r = *reason;
    r.node = m->root->noutputs ? m->root->outputs[0]->name : "?";
    r.rule = m->rule_index;
    if (r.code == RW_REASON_TEXT)
        r.name = ar_strdup(rep->arena, why);
    vec_push(&rep->refused, r);
}

static void keep_near_misses(rw_ctx *ctx, const mt_matcher *m)
{
    rw_report *rep = ctx->rep;
    rep->near_misses.len = 0;
    size_t n;
    const mt_near_miss *misses = mt_near_misses(m, &n);
    /* the matcher found them in reverse order; report them in graph order */
    for (size_t i = n; i-- > 0;) {
        const ir_node *root = misses[i].root;
        rw_refusal r = {ar_strdup(rep->arena, misses[i].rule->name),
                        ar_strdup(rep->arena, root->noutputs ? root->outputs[0]->name : "?"),
                        ar_strdup(rep->arena, misses[i].reason)};
        vec_push(&rep->near_misses, r);
    }
}

/* ---- candidates ---------------------------------------------------------------------------------- */

typedef struct {
    const mt_match *m;
    int64_t phase, priority; /* the rule's, copied: the sort reads no rule */
    uint32_t rule;  /* its index */
    uint32_t pos;   /* of the latest root */
    uint32_t alt;   /* its place among the matches of its rule at its root */
    uint32_t nroots;
} candidate;

/* The place of root k's node (node ids are places at the start of a round). */
static uint32_t root_pos(const mt_match *m, uint32_t k)
{
    return m->values[m->rule->roots[k]->id]->producer->id;
}

/* Priority, then rule order, then the later match first (reverse topological order); the same
 * nodes matched from different roots of a horizontal pattern: roots in graph order first. */
static int by_preference(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->rule != y->rule)
        return x->rule < y->rule ? -1 : 1;
    if (x->pos != y->pos)
        return x->pos > y->pos ? -1 : 1;
    for (uint32_t k = 0; x->nroots > 1 && k < x->nroots; k++) /* one root: it is at pos */
        if (root_pos(x->m, k) != root_pos(y->m, k))
            return root_pos(x->m, k) < root_pos(y->m, k) ? -1 : 1;
    return (x->alt > y->alt) - (x->alt < y->alt);
}

/* The rules ranked as the sort ranks them: phase, then priority, then rule order. */
static int by_rank(const void *a, const void *b)
{
    const dsl_rule *const *x = a, *const *y = b;
    if ((*x)->phase != (*y)->phase)
        return (*x)->phase < (*y)->phase ? -1 : 1;
    if ((*x)->priority != (*y)->priority)
        return (*x)->priority > (*y)->priority ? -1 : 1;
    return 0; /* stable by rule order below */
}

/* Sorts the candidates by_preference. The matcher found them root by root in reverse order, and at
 * one root a rule's matches in key order: for a rule of one root that is already the order among
 * its matches, so a stable distribution by the rules' rank sorts them; a rule of several roots has
 * its own part sorted. The result is checked against by_preference. */
static void sort_candidates(rw_ctx *ctx, candidate *c, size_t n)
{
    uint32_t nrules;
    dsl_rule *const *rules = mt_rules(ctx->a, &nrules);
    size_t *rank = malloc((nrules + 1) * sizeof *rank), *start = calloc(nrules + 1, sizeof *start);
    uint32_t *order = malloc((nrules ? nrules : 1) * sizeof *order);
    candidate *out = malloc((n ? n : 1) * sizeof *out);
    FR_CHECK(rank && start && order && out);
    for (uint32_t r = 0; r < nrules; r++)
        order[r] = r;
    /* insertion sort, stable: few rules, and qsort is not stable */
    for (uint32_t i = 1; i < nrules; i++)
        for (uint32_t j = i; j > 0 && by_rank(&rules[order[j - 1]], &rules[order[j]]) > 0; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (uint32_t k = 0; k < nrules; k++)
        rank[order[k]] = k;
    for (size_t i = 0; i < n; i++)
        start[rank[c[i].rule] + 1]++;
    for (size_t k = 0; k < nrules; k++)
        start[k + 1] += start[k];
    for (size_t i = 0; i < n; i++)
        out[start[rank[c[i].rule]]++] = c[i];
    for (size_t k = nrules, end = n; k-- > 0;) { /* start[k] is now where rank k ends */
        size_t begin = k ? start[k - 1] : 0;
        if (end - begin > 1 && rules[order[k]]->nroots > 1)
            qsort(out + begin, end - begin, sizeof *out, by_preference);
        end = begin;
    }
    for (size_t i = 1; i < n; i++)
        FR_CHECK(by_preference(&out[i - 1], &out[i]) < 0);
    if (n)
        memcpy(c, out, n * sizeof *c);
    free(out);
    free(order);
    free(start);
    free(rank);
}

static candidate *collect(rw_ctx *ctx, mt_matcher *m, size_t *count)
{
    for (size_t i = ctx->order.len; i-- > 0;)
        mt_match_node(m, ctx->g, ctx->order.items[i]);
    size_t n;
    const mt_match *ms = mt_matches(m, &n);
    candidate *c = malloc((n ? n : 1) * sizeof *c);
    FR_CHECK(c != NULL);
    for (size_t i = 0; i < n; i++) {
        bool same_group = i > 0 && ms[i].root == ms[i - 1].root &&
                          ms[i].rule_index == ms[i - 1].rule_index;
        uint32_t latest = 0;
        for (uint32_t k = 0; k < ms[i].rule->nroots; k++)
            if (root_pos(&ms[i], k) > latest)
                latest = root_pos(&ms[i], k);
        c[i] = (candidate){.m = &ms[i], .phase = ms[i].rule->phase,
                           .priority = ms[i].rule->priority, .rule = ms[i].rule_index,
                           .pos = latest, .alt = same_group ? c[i - 1].alt + 1 : 0,
                           .nroots = ms[i].rule->nroots};
    }
    sort_candidates(ctx, c, n);
    *count = n;
    return c;
}

/* ---- committing ---------------------------------------------------------------------------------- */

static const char *node_name(const ir_node *n)
{
    return n->noutputs ? n->outputs[0]->name : "?";
}

/* Overlap (docs/matcher.md, "Legality"): a node of the match taken by a match committed before it
 * in the round, or a value it reads removed by one. False with the reason's record. */
static bool check_overlap(rw_ctx *ctx, const mt_match *m, rw_refusal_rec *why)
{
    const dsl_rule *r = m->rule;
    for (uint32_t i = 0; i < r->nnodes; i++) {
        const ir_node *n = m->nodes[i];
        if (!n)
            continue;
        int32_t owner = rw_state(ctx, n)->claimed_by;
        if (owner >= 0 && ctx->rep->rule_nops[owner] < r->nops) {
            /* a shorter chain preempted this one: the report says why it ranked first (a user's
             * rule with a priority, or of an earlier phase, taking part of a library chain) */
            *why = (rw_refusal_rec){.code = RW_REASON_OVERLAP_SHORTER, .name = node_name(n),
                                    .op = (uint16_t)n->op, .owner = owner};
            return false;
        }
        if (owner >= 0 || n->dead) {
            *why = (rw_refusal_rec){.code = RW_REASON_OVERLAP_TAKEN, .name = node_name(n),
                                    .op = (uint16_t)n->op, .owner = owner};
            return false;
        }
    }
    /* a value the match reads may have been forwarded away by a rewrite earlier in the round; a
     * forward may still pass on the value its own capture was forwarded to (rw_forwarded) */
    const ir_value *passed_on = NULL;
    if (r->repl.kind == DSL_REPL_FORWARD && r->repl.forward)
        passed_on = m->values[r->repl.forward->node->id];
    for (uint32_t i = 0; i < r->nnodes; i++) {
        const ir_value *v = m->values[i];
        if (v && v == passed_on && v->kind == IR_VALUE_NODE && v->producer->dead &&
            rw_state(ctx, v->producer)->forwarded_to)
            continue;
        if (v && v->kind == IR_VALUE_NODE && v->producer->dead) {
            *why = (rw_refusal_rec){.code = RW_REASON_OVERLAP_REMOVED, .name = v->name, .owner = -1};
            return false;
        }
    }
    return true;
}

enum { SCRATCH_LIMIT = 1 << 20 };

/* Plans one alternative; commits it when legal; false with the reason's record in *reason (its text
 * in why for RW_REASON_TEXT). Overlap is checked first, on the match: a match that overlaps a
 * committed one (most refusals in a large graph) costs no plan. A plan's scratch (the tentative node, new
 * constants before commit) is dead once the plan is decided: the arena is recycled whenever it
 * has grown past SCRATCH_LIMIT, which bounds it without a malloc per plan. */
static bool try_commit(rw_ctx *ctx, const mt_match *m, char *why, rw_refusal_rec *reason)
{
    *reason = (rw_refusal_rec){.code = RW_REASON_TEXT, .owner = -1};
    if (!check_overlap(ctx, m, reason))
        return false;
    if (ctx->scratch && ar_bytes_used(ctx->scratch) > SCRATCH_LIMIT) {
        ar_free(ctx->scratch);
        ctx->scratch = NULL;
    }
    if (!ctx->scratch)
        ctx->scratch = ar_new();
    rw_plan p;
    rw_plan_init(&p, ctx, m);
    bool forward = m->rule->repl.kind == DSL_REPL_FORWARD;
    /* A forwarding rule (`=> @x`) removes the match like any fusion does, so it answers to every
     * legality check: Cast(Cast(@x)) => @x must not drop an f32 -> f16 -> f32 round trip. */
    bool ok = rw_check_interior(&p, forward, why) && rw_check_convex(&p, why) &&
              rw_check_precision(&p, why);
    ir_node *made = NULL;
    if (ok && forward) {
        ok = rw_plan_forward(&p, why);
        if (ok)
            rw_commit_forward(&p);
    } else if (ok) {
        ok = rw_plan_replacement(&p, why);
        if (ok)
            made = rw_commit(&p);
    }
    if (ok && ctx->opts.after_commit)
        ctx->opts.after_commit(ctx->g, made, ctx->opts.after_commit_arg);
    rw_plan_free(&p);
    return ok;
}

/* Commits what it can among the sorted candidates (lowest phase first); returns the number of
 * rewrites, or -1 after an internal error. Once a rule of some phase has fired, the candidates of
 * later phases wait for a later round: matched again on the graph the earlier phase leaves, they
 * never fire on one that an earlier phase's rule would still change. */
static long commit_round(rw_ctx *ctx, const candidate *c, size_t n, recorder *rec)
{
    long fired = 0;
    int64_t fired_phase = 0;
    char why[RW_WHY_SIZE], first_why[RW_WHY_SIZE];
    rw_refusal_rec reason, first_reason = {0};
    for (size_t i = 0; i < n;) {
        if (fired && c[i].m->rule->phase > fired_phase)
            break; /* phases are sorted first: what follows all waits */
        size_t end = i + 1;
        while (end < n && c[end].m->root == c[i].m->root &&
               c[end].m->rule_index == c[i].m->rule_index)
            end++;
        bool done = false;
        for (size_t j = i; j < end && !done; j++) {
            why[0] = '\0';
            done = try_commit(ctx, c[j].m, why, &reason);
            if (!done && j == i) {
                memcpy(first_why, why, sizeof why);
                first_reason = reason;
            }
        }
        if (done) {
            fired_phase = c[i].m->rule->phase;
            fired++;
            ctx->rep->fired[c[i].m->rule_index]++;
            if (ctx->opts.validate_each) {
                renumber(ctx);
                if (!validate_rewrite(ctx))
                    return -1;
            }
        } else {
            record(rec, c[i].m, &first_reason, first_why[0] ? first_why : "refused");
        }
        i = end;
    }
    return fired;
}

/* ---- the whole rewrite --------------------------------------------------------------------------- */

static int64_t constant_bytes(const ir_graph *g)
{
    int64_t total = 0, n;
    for (size_t i = 0; i < g->values.len; i++)
        if (g->values.items[i]->kind == IR_VALUE_CONST &&
            ir_type_nbytes(g->values.items[i]->type, &n))
            total += n;
    return total;
}

static void report_init(rw_report *rep, const mt_automaton *a, const ir_graph *g, int64_t budget)
{
    memset(rep, 0, sizeof *rep);
    rep->arena = ar_new();
    dsl_rule *const *rules = mt_rules(a, &rep->nrules);
    rep->rule_names = ar_alloc_array(rep->arena, rep->nrules, sizeof(char *));
    rep->fired = ar_alloc_array(rep->arena, rep->nrules, sizeof(uint32_t));
    rep->rule_nops = ar_alloc_array(rep->arena, rep->nrules, sizeof(uint32_t));
    rep->rule_phase = ar_alloc_array(rep->arena, rep->nrules, sizeof(int64_t));
    for (uint32_t i = 0; i < rep->nrules; i++) {
        rep->rule_names[i] = ar_strdup(rep->arena, rules[i]->name);
        rep->rule_nops[i] = rules[i]->nops;
        rep->rule_phase[i] = rules[i]->phase;
    }
    ir_compute_stats(g, &rep->before);
    if (!budget) {
        budget = RW_BUDGET_FACTOR * constant_bytes(g);
        if (budget < RW_BUDGET_FLOOR)
            budget = RW_BUDGET_FLOOR;
        if (budget > RW_BUDGET_CAP)
            budget = RW_BUDGET_CAP;
    }
    rep->budget = budget;
}

bool rw_apply(ir_graph *g, const mt_automaton *a, const rw_options *opts, rw_report *report,
              dg_context *dg)
{
    report_init(report, a, g, opts->budget);
    rw_ctx ctx = {.g = g, .a = a, .opts = *opts, .rep = report, .dg = dg,
                  .budget_left = report->budget};
    if (!ctx.opts.max_rounds)
        ctx.opts.max_rounds = RW_DEFAULT_ROUNDS;
    recorder rec = {.ctx = &ctx};
    mt_matcher *m = mt_matcher_new(a, opts->explain);
    bool ok = true;
    for (uint32_t round = 1; ok && round <= ctx.opts.max_rounds; round++) {
        double t0 = cpu_seconds();
        size_t nodes0 = g->nodes.len, values0 = g->values.len;
        round_begin(&ctx);
        ctx.round_forwarded = false;
        ctx.planned.len = 0;
        mt_matcher_reset(m);
        size_t n;
        candidate *c = collect(&ctx, m, &n);
        double t1 = cpu_seconds();
        long fired = commit_round(&ctx, c, n, &rec);
        free(c);
        double t2 = cpu_seconds();
        report->match_seconds += t1 - t0;
        report->commit_seconds += t2 - t1;
        if (opts->explain)
            keep_near_misses(&ctx, m);
        report->rounds = round;
        if (fired < 0) {
            ok = false;
        } else if (fired > 0) {
            report->removed_unread += rw_remove_unread(&ctx, nodes0);
            ok = validate_round(&ctx, nodes0, values0);
            report->round_limit = round == ctx.opts.max_rounds;
            report->validate_seconds += cpu_seconds() - t2;
        }
        if (fired == 0)
            break;
    }
    mt_matcher_free(m);
    for (size_t i = 0; i < IR_OP_COUNT; i++)
        free(ctx.carry_schemas[i]);
    rw_plan_spare_free(&ctx);
    ar_free(ctx.scratch);
    sm_free(&rec.seen);
    vec_free(&ctx.st);
    vec_free(&ctx.order);
    vec_free(&ctx.planned);
    dg_free(ctx.quiet);
    report->folded_bytes = report->budget - ctx.budget_left;
    ir_compute_stats(g, &report->after);
    return ok;
}

void rw_report_free(rw_report *report)
{
    vec_free(&report->refused);
    vec_free(&report->near_misses);
    ar_free(report->arena);
    memset(report, 0, sizeof *report);
}
