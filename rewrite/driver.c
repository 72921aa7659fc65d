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

_Static_assert(sizeof(rw_node_state) == 16, "a node's state grew");

rw_node_state *rw_state_grow(rw_ctx *ctx, const ir_node *n)
{
    FR_CHECK(n->id != RW_TENTATIVE_ID);
    if (ctx->st_shared) {
        size_t k = n->id - ctx->st.len; /* n->id >= st.len */
        FR_CHECK(k < ctx->st_new.len && ctx->st_new.items[k] != UINT32_MAX); /* shared first */
        return &ctx->st.items[ctx->st_new.items[k]];
    }
    while (ctx->st.len <= n->id)
        vec_push(&ctx->st, ((rw_node_state){.claimed_by = -1}));
    return &ctx->st.items[n->id];
}

ir_node *rw_replaced_by(rw_ctx *ctx, const ir_node *n)
{
    const rw_node_state *s = rw_state(ctx, n);
    return rw_is_replaced(s) ? ctx->g->nodes.items[s->link - 1] : NULL;
}

ir_value *rw_forwarded_to(rw_ctx *ctx, const ir_node *n)
{
    const rw_node_state *s = rw_state(ctx, n);
    return rw_is_forwarded(s) ? ctx->g->values.items[(s->link & ~RW_FORWARDED) - 1] : NULL;
}

/* Node ids are places in the graph's node list (renumber keeps them so), value ids in its value
 * list (compacted only at the end of a round, when the states are dropped). */
void rw_set_replaced_by(rw_ctx *ctx, const ir_node *n, const ir_node *by)
{
    FR_CHECK(!by || (by->id < ctx->g->nodes.len && ctx->g->nodes.items[by->id] == by &&
                     by->id + 1 < RW_FORWARDED));
    rw_node_state *s = rw_state(ctx, n);
    FR_CHECK(!rw_is_forwarded(s)); /* a removed node is replaced or forwarded, never both */
    s->link = by ? by->id + 1 : 0;
}

void rw_set_forwarded_to(rw_ctx *ctx, const ir_node *n, const ir_value *to)
{
    FR_CHECK(!to || (to->id < ctx->g->values.len && ctx->g->values.items[to->id] == to &&
                     to->id + 1 < RW_FORWARDED));
    rw_node_state *s = rw_state(ctx, n);
    FR_CHECK(!rw_is_replaced(s));
    s->link = to ? (to->id + 1) | RW_FORWARDED : 0;
}

void rw_state_share(const rw_plan *p, const ir_node *n, const ir_node *removed)
{
    rw_ctx *ctx = p->ctx;
    if (!ctx->st_shared)
        return;
    /* a live member of the plan, of the round's start (its slot is no other new node's) */
    FR_CHECK(!removed->dead && removed->id < ctx->st.len && rw_is_member(p, removed));
    FR_CHECK(n->id != RW_TENTATIVE_ID && n->id >= ctx->st.len);
    size_t k = n->id - ctx->st.len;
    while (ctx->st_new.len <= k)
        vec_push(&ctx->st_new, UINT32_MAX);
    FR_CHECK(ctx->st_new.items[k] == UINT32_MAX);
    ctx->st_new.items[k] = removed->id;
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
        ctx->order.items[i] = (uint32_t)i;
        ctx->st.items[i] = (rw_node_state){.pos = (uint32_t)i, .claimed_by = -1};
    }
    ctx->order.len = ctx->st.len = n;
    ctx->nodes0 = n;
    ctx->st_shared = !ctx->opts.validate_each && !ctx->opts.whole_validation;
    ctx->st_new.len = 0;
    free(ctx->bn_last.st);
    ctx->bn_last = (struct rw_bn_factors){0};
}

/* Makes the graph's node list the live nodes in the driver's order followed by the removed ones,
 * numbers the nodes by that list (moving their state along), so that validation keeps both. */
static void renumber(rw_ctx *ctx)
{
    ir_graph *g = ctx->g;
    size_t n = g->nodes.len;
    FR_CHECK(!ctx->st_shared); /* every node has a state of its own */
    ir_node **list = malloc((n ? n : 1) * sizeof *list);
    rw_node_state *st = malloc((n ? n : 1) * sizeof *st);
    FR_CHECK(list && st);
    size_t k = 0;
    for (size_t i = 0; i < ctx->order.len; i++) {
        ir_node *x = rw_order_at(ctx, i);
        if (x && !x->dead)
            list[k++] = x;
    }
    size_t live = k;
    for (size_t i = 0; i < n; i++)
        if (g->nodes.items[i]->dead)
            list[k++] = g->nodes.items[i];
    FR_CHECK(k == n); /* every live node is in the order exactly once */
    uint32_t *place = malloc((n ? n : 1) * sizeof *place); /* by old id */
    FR_CHECK(place != NULL);
    for (size_t i = 0; i < n; i++) {
        st[i] = *rw_state(ctx, list[i]);
        st[i].pos = (uint32_t)i;
        place[list[i]->id] = (uint32_t)i;
    }
    for (size_t i = 0; i < n; i++) {
        if (rw_is_replaced(&st[i])) /* an id + 1 */
            st[i].link = place[st[i].link - 1] + 1;
        list[i]->id = (uint32_t)i;
        g->nodes.items[i] = list[i];
        ctx->st.items[i] = st[i];
    }
    free(place);
    ctx->st.len = n;
    ctx->order.len = 0;
    for (size_t i = 0; i < live; i++)
        vec_push(&ctx->order, list[i]->id);
    free(list);
    free(st);
}

/* At the end of a round: makes the graph's node list the live nodes in the driver's order and
 * numbers them by it; the removed nodes leave the list (ir_compact would drop them next) and the
 * nodes' state stays behind (the next round starts its own). `live`: how many live nodes the list
 * held. `flag` (by node id, may be NULL) moves along: flag[n->id] before is flag[n->id] after;
 * `old` (when not NULL, `live` entries) is set for the flagged nodes of the round's start (ids
 * below nodes0 before); `planned` (when not NULL, `live` entries, zeroed) takes ctx->planned's
 * types by the new ids. */
static void renumber_live(rw_ctx *ctx, size_t live, bool *flag, bool *old, size_t nodes0,
                          const ir_type **planned)
{
    ir_graph *g = ctx->g;
    bool *moved = NULL;
    if (flag) {
        moved = malloc(live ? live : 1);
        FR_CHECK(moved != NULL);
    }
    /* a new list: the order names the nodes by their places in the old one */
    ir_node **list = malloc((live ? live : 1) * sizeof *list);
    FR_CHECK(list != NULL);
    size_t k = 0;
    for (size_t i = 0; i < ctx->order.len; i++) {
        ir_node *n = rw_order_at(ctx, i);
        if (n && !n->dead) {
            FR_CHECK(k < live);
            if (moved)
                moved[k] = flag[n->id];
            if (old)
                old[k] = flag[n->id] && n->id < nodes0;
            if (planned && n->id >= nodes0 && n->id - nodes0 < ctx->planned.len)
                planned[k] = ctx->planned.items[n->id - nodes0];
            n->id = (uint32_t)k;
            list[k++] = n;
        }
    }
    FR_CHECK(k == live); /* every live node is in the order exactly once */
    free(g->nodes.items);
    g->nodes.items = list;
    g->nodes.len = g->nodes.cap = k;
    ctx->order.len = 0;
    ctx->st.len = 0;
    if (moved) {
        memcpy(flag, moved, live);
        free(moved);
    }
}

/* After a round that changed the graph: the round's own lists go back (the next round's, sized to
 * the graph the rewrites left, are made anew; the order of a million-node graph's first round is
 * three times the next one's), and so does the room the node and value lists held past their
 * lengths, which fell by the nodes the round removed and the values compaction dropped: their
 * pages would otherwise stay resident into the next rounds and the output. */
static void round_end(rw_ctx *ctx)
{
    vec_free(&ctx->st);
    vec_free(&ctx->st_new);
    vec_free(&ctx->order);
    vec_free(&ctx->planned);
    vec_shrink(&ctx->g->nodes);
    vec_shrink(&ctx->g->values);
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
 * round's (the lists before renumbering). rw_remove_unread marked the removed nodes' outputs and
 * readers, by the ids of the round's start, where it visited them (no pass here over the removed
 * nodes); the marks move with the nodes and values through renumbering and compaction. */
static bool validate_round(rw_ctx *ctx, size_t nodes0, size_t values0)
{
    ir_graph *g = ctx->g;
    bool *dirty_node = ctx->marks.node, *dirty_value = ctx->marks.value;
    size_t removed = ctx->marks.removed;
    ctx->marks = (rw_round_marks){0};
    FR_CHECK(dirty_node && dirty_value); /* rw_remove_unread ran */
    bool ok;
    if (ctx->opts.whole_validation || ctx->opts.validate_each) {
        renumber(ctx);
        ir_compact(g);
        ok = ir_validate(g, ctx->dg);
    } else {
        bool whole = false; /* a node made and removed in one round: the use lists do not say */
        size_t live = nodes0 - removed;
        for (size_t i = nodes0; i < g->nodes.len; i++) {
            ir_node *n = g->nodes.items[i];
            whole |= n->dead;
            if (n->dead)
                continue;
            live++;
            dirty_node[i] = true;
            for (uint32_t k = 0; k < n->noutputs; k++) {
                ir_value *v = n->outputs[k];
                if (v->id < g->values.len && g->values.items[v->id] == v)
                    dirty_value[v->id] = true;
            }
        }
        for (size_t i = values0; i < g->values.len; i++)
            dirty_value[i] = true;
        /* the flagged nodes of the round's start read what they read, unless a forward re-pointed
         * readers or a test's hook changed the graph after a commit */
        bool *same = NULL;
        if (!whole && !ctx->round_forwarded && !ctx->opts.after_commit) {
            same = malloc(live ? live : 1);
            FR_CHECK(same != NULL);
        }
        /* the fused nodes' types as their plans inferred them, unless a forward re-pointed readers
         * or a test's hook changed the graph after a commit (the operands may not be those planned
         * on); by the ids renumbering gives (compaction keeps them: no node is removed) */
        const ir_type **planned = NULL;
        if (!whole && ctx->planned.len && !ctx->round_forwarded && !ctx->opts.after_commit) {
            planned = calloc(live ? live : 1, sizeof *planned);
            FR_CHECK(planned != NULL);
        }
        renumber_live(ctx, live, dirty_node, same, nodes0, planned);
        vec_free(&ctx->planned);
        if (whole) {
            ir_compact(g);
            ok = ir_validate(g, ctx->dg);
        } else {
            /* the use lists with the compaction (unless a node reads a value not the graph's) */
            bool uses_kept = ir_compact_uses(g, dirty_value);
            FR_CHECK(g->nodes.len == live);
            ok = uses_kept ? ir_validate_round(g, dirty_node, dirty_value, planned, same, ctx->dg)
                           : ir_validate_planned(g, dirty_node, dirty_value, planned, ctx->dg);
        }
        free(planned);
        free(same);
    }
    ctx->planned.len = 0;
    free(dirty_node);
    free(dirty_value);
    return ok || validate_failed(ctx, "after a round of rewrites");
}

/* ---- recording ----------------------------------------------------------------------------------- */

typedef struct {
    rw_ctx *ctx;
    sm_map seen; /* refusals already recorded, by refusal_key */
    /* count_overlaps: the pair the last coded overlap went to, and what decides a coded one's pair
     * (the refused rule; the owner, or a removed value) */
    bool has_last, last_removed;
    uint32_t last_rule;
    int32_t last_owner;
    size_t last_pair;
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

/* Counts the overlap r in its pair (rw_report_count_overlap). The refusals come rule by rule,
 * mostly of one pair: a coded one of the last one's rule and owner goes to its pair at once. */
static void count_overlap(recorder *rec, const rw_refusal_rec *r)
{
    rw_report *rep = rec->ctx->rep;
    bool coded = r->code != RW_REASON_TEXT, removed = r->code == RW_REASON_OVERLAP_REMOVED;
    if (coded && rec->has_last && r->rule == rec->last_rule && r->owner == rec->last_owner &&
        removed == rec->last_removed) {
        rep->overlaps[rec->last_pair].count++;
        return;
    }
    size_t k = rw_report_count_overlap(rep, r);
    if (coded) {
        rec->has_last = true;
        rec->last_removed = removed;
        rec->last_rule = r->rule;
        rec->last_owner = r->owner;
        rec->last_pair = k;
    }
}

/* Records that m was refused: for `reason` (its code and operands), or for the text in why when
 * the code is RW_REASON_TEXT; with count_overlaps, an overlap is only counted. */
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
    r.rule = m->rule_index;
    if (r.code == RW_REASON_TEXT)
        r.name = why;
    if (rec->ctx->opts.count_overlaps && rw_refusal_is_overlap(&r)) {
        count_overlap(rec, &r); /* its pair counted: no record, no copy of the text */
        return;
    }
    r.node = m->root->noutputs ? m->root->outputs[0]->name : "?";
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

/* A round's matches, compact and kept per rule: the matcher's are copied out every MATCH_CHUNK
 * matches and forgotten (an mt_match and its arrays take four times the room). Per match, one
 * 32-bit word per pattern node in its rule's list: the node it matched, by its id at the round's
 * start, tagged (MATCH_NODE), whose first output is the value it stands for (an op pattern node
 * matches a node's first output); else the value (a leaf, or an absent optional op), by its id + 1
 * (values keep their ids through the round), or 0 for NULL. Ids, not pointers: half the room (a
 * million-node graph's first round holds 18 MB of pointer words at once). The node list only grows
 * during a round, so a node of its start is still at its id, unless validate_each renumbers it
 * after each rewrite: then the round keeps a copy of the start's list. The root is the node of the
 * rule's first root and a match's place among its rule's matches at its root follows from the
 * list's order (a rule's matches at one root are found together), so neither is stored. Nodes keep
 * their outputs for the whole round (a commit gives the values to the fused node, not the removed
 * node's list away), so a record reads back the match it was. A record is turned back into an
 * mt_match when it is tried (expand). The rules' lists are tried in rank order, and each is freed
 * once tried: the graph grows by the rewrites while the matches shrink. */
typedef struct {
    VEC(uint32_t) w; /* rule->nnodes words per match */
} rule_matches;

/* The tag of a word that holds a node (its id shifted left by one; a value's id + 1 is shifted
 * alike). Ids below MATCH_IDS fit: a graph of 2^31 nodes or values would take hundreds of GB, and
 * a node's replacement (RW_FORWARDED) asks the same of its id already. */
enum { MATCH_NODE = 1 };
#define MATCH_IDS ((1u << 31) - 1)

typedef struct {
    const ir_graph *g;
    ir_node **start;        /* the round's start's node list, when validate_each renumbers it */
    dsl_rule *const *rules; /* mt_rules */
    uint32_t nrules;
    rule_matches *by_rule;   /* nrules */
    uint32_t *order;         /* the rules by rank: the order their matches are tried in */
    VEC(ir_value *) values;  /* expand's arrays, per pattern node */
    VEC(ir_node *) nodes;
} round_matches;

enum { MATCH_CHUNK = 4096 };

static void round_matches_init(round_matches *rm, const mt_automaton *a, const rw_ctx *ctx)
{
    memset(rm, 0, sizeof *rm);
    rm->g = ctx->g;
    if (ctx->opts.validate_each) {
        size_t n = ctx->g->nodes.len;
        rm->start = malloc((n ? n : 1) * sizeof *rm->start);
        FR_CHECK(rm->start != NULL);
        if (n)
            memcpy(rm->start, ctx->g->nodes.items, n * sizeof *rm->start);
    }
    rm->rules = mt_rules(a, &rm->nrules);
    rm->by_rule = calloc(rm->nrules ? rm->nrules : 1, sizeof *rm->by_rule);
    rm->order = malloc((rm->nrules ? rm->nrules : 1) * sizeof *rm->order);
    FR_CHECK(rm->by_rule && rm->order);
}

static void rule_matches_free(rule_matches *x)
{
    vec_free(&x->w);
}

static void round_matches_free(round_matches *rm)
{
    for (uint32_t r = 0; r < rm->nrules; r++)
        rule_matches_free(&rm->by_rule[r]);
    free(rm->by_rule);
    free(rm->order);
    free(rm->start);
    vec_free(&rm->values);
    vec_free(&rm->nodes);
}

/* The node a record's word stands for (NULL for a value's word), and the value. */
static ir_node *word_node(const round_matches *rm, uint32_t w)
{
    if (!(w & MATCH_NODE))
        return NULL;
    return rm->start ? rm->start[w >> 1] : rm->g->nodes.items[w >> 1];
}

static ir_value *word_value(const round_matches *rm, uint32_t w)
{
    if (w & MATCH_NODE)
        return word_node(rm, w)->outputs[0];
    return w ? rm->g->values.items[(w >> 1) - 1] : NULL;
}

/* The word of a record's first root: a node's (take_matches checks), the same for the same root. */
static uint32_t record_root(const dsl_rule *r, const uint32_t *rec)
{
    return rec[r->roots[0]->id];
}

static uint32_t node_word(const ir_graph *g, const ir_node *n)
{
    FR_CHECK(n->id < MATCH_IDS && n->id < g->nodes.len && g->nodes.items[n->id] == n);
    return n->id << 1 | MATCH_NODE;
}

static uint32_t value_word(const ir_graph *g, const ir_value *v)
{
    if (!v)
        return 0;
    FR_CHECK(v->id < MATCH_IDS && v->id < g->values.len && g->values.items[v->id] == v);
    return (v->id + 1) << 1;
}

/* Copies the matcher's matches from `from` on into their rules' lists. */
static void take_matches(round_matches *rm, const mt_matcher *m, size_t from)
{
    size_t n;
    const mt_match *ms = mt_matches(m, &n);
    for (size_t i = from; i < n; i++) {
        const mt_match *x = &ms[i];
        const dsl_rule *r = x->rule;
        rule_matches *to = &rm->by_rule[x->rule_index];
        vec_reserve(&to->w, to->w.len + r->nnodes);
        uint32_t *rec = to->w.items + to->w.len;
        to->w.len += r->nnodes;
        for (uint32_t k = 0; k < r->nnodes; k++) {
            ir_node *node = x->nodes[k];
            FR_CHECK(!node || (r->nodes[k]->kind == DSL_PAT_OP && node->noutputs &&
                               node->outputs[0] == x->values[k]));
            rec[k] = node ? node_word(rm->g, node) : value_word(rm->g, x->values[k]);
        }
        for (uint32_t k = 0; k < r->nroots; k++) /* root_pos reads their ids */
            FR_CHECK(rec[r->roots[k]->id] & MATCH_NODE);
        FR_CHECK(word_node(rm, record_root(r, rec)) == x->root);
    }
}

/* The match a record of rule index `rule` stands for (its arrays are rm's, valid until the next
 * expand). */
static mt_match expand(round_matches *rm, uint32_t rule, const uint32_t *rec)
{
    const dsl_rule *r = rm->rules[rule];
    vec_reserve(&rm->values, r->nnodes);
    vec_reserve(&rm->nodes, r->nnodes);
    for (uint32_t k = 0; k < r->nnodes; k++) {
        rm->values.items[k] = word_value(rm, rec[k]);
        rm->nodes.items[k] = word_node(rm, rec[k]);
    }
    return (mt_match){.rule = r,
                      .rule_index = rule,
                      .root = word_node(rm, record_root(r, rec)),
                      .values = rm->values.items,
                      .nodes = rm->nodes.items};
}

/* A record as the sort compares it. */
typedef struct {
    const dsl_rule *rule;
    const uint32_t *rec;
    uint32_t index; /* the rule's */
    uint32_t alt;   /* its place among the matches of its rule at its root */
    uint32_t pos;   /* of the latest root */
} sort_key;

/* The place of root k's node (node ids are places at the start of a round; a root's word is its
 * node's, before any commit of the round: the node still produces the value it stands for). */
static uint32_t root_pos(const sort_key *x, uint32_t k)
{
    return x->rec[x->rule->roots[k]->id] >> 1;
}

/* The key of record i of rule index `rule`; prev: the key of record i - 1 (for alt), or NULL. */
static sort_key key_of(const round_matches *rm, uint32_t rule, const uint32_t *rec,
                       const sort_key *prev)
{
    sort_key x = {.rule = rm->rules[rule], .rec = rec, .index = rule};
    x.alt =
        prev && prev->index == rule && record_root(x.rule, prev->rec) == record_root(x.rule, rec)
            ? prev->alt + 1
            : 0;
    for (uint32_t k = 0; k < x.rule->nroots; k++)
        if (root_pos(&x, k) > x.pos)
            x.pos = root_pos(&x, k);
    return x;
}

/* Priority, then rule order, then the later match first (reverse topological order); the same
 * nodes matched from different roots of a horizontal pattern: roots in graph order first. */
static int by_preference(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->rule->phase != y->rule->phase)
        return x->rule->phase < y->rule->phase ? -1 : 1;
    if (x->rule->priority != y->rule->priority)
        return x->rule->priority > y->rule->priority ? -1 : 1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->pos != y->pos)
        return x->pos > y->pos ? -1 : 1;
    /* one root: it is at pos */
    for (uint32_t k = 0; x->rule->nroots > 1 && k < x->rule->nroots; k++)
        if (root_pos(x, k) != root_pos(y, k))
            return root_pos(x, k) < root_pos(y, k) ? -1 : 1;
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

/* Sorts one rule's records (a rule of several roots) by_preference. */
static void sort_part(const round_matches *rm, uint32_t rule, rule_matches *x)
{
    size_t nn = rm->rules[rule]->nnodes, n = x->w.len / nn;
    sort_key *keys = malloc(n * sizeof *keys);
    uint32_t *sorted = malloc(x->w.len * sizeof *sorted);
    FR_CHECK(keys && sorted);
    for (size_t i = 0; i < n; i++)
        keys[i] = key_of(rm, rule, x->w.items + i * nn, i ? &keys[i - 1] : NULL);
    qsort(keys, n, sizeof *keys, by_preference);
    for (size_t i = 0; i < n; i++)
        memcpy(sorted + i * nn, keys[i].rec, nn * sizeof *sorted);
    free(x->w.items);
    x->w.items = sorted;
    x->w.cap = x->w.len;
    free(keys);
}

/* Puts the records in by_preference order: the rules by rank (rm->order), and each rule's records
 * in its own order. The matcher found them root by root in reverse order, and at one root a rule's
 * matches in key order: for a rule of one root that is already the order among its matches; a rule
 * of several roots has its records sorted. The result is checked against by_preference. */
static void sort_candidates(round_matches *rm)
{
    dsl_rule *const *rules = rm->rules;
    uint32_t *order = rm->order;
    for (uint32_t r = 0; r < rm->nrules; r++)
        order[r] = r;
    /* insertion sort, stable: few rules, and qsort is not stable */
    for (uint32_t i = 1; i < rm->nrules; i++)
        for (uint32_t j = i; j > 0 && by_rank(&rules[order[j - 1]], &rules[order[j]]) > 0; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    sort_key last;
    bool any = false;
    for (uint32_t k = 0; k < rm->nrules; k++) {
        rule_matches *x = &rm->by_rule[order[k]];
        size_t nn = rules[order[k]]->nnodes;
        if (x->w.len > nn && rules[order[k]]->nroots > 1)
            sort_part(rm, order[k], x);
        for (size_t i = 0; nn && i < x->w.len; i += nn) {
            sort_key b = key_of(rm, order[k], x->w.items + i, any ? &last : NULL);
            FR_CHECK(!any || by_preference(&last, &b) < 0);
            last = b;
            any = true;
        }
    }
}

static void collect(rw_ctx *ctx, mt_matcher *m, round_matches *rm)
{
    size_t taken = 0;
    for (size_t i = ctx->order.len; i-- > 0;) {
        mt_match_node(m, ctx->g, rw_order_at(ctx, i));
        size_t n;
        mt_matches(m, &n);
        if (n - taken >= MATCH_CHUNK) {
            take_matches(rm, m, taken);
            taken = n;
            if (!ctx->opts.explain) { /* near misses stay to the round's end */
                mt_matcher_reset(m);
                taken = 0;
            }
        }
    }
    take_matches(rm, m, taken);
    sort_candidates(rm);
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
            rw_is_forwarded(rw_state(ctx, v->producer)))
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
 * never fire on one that an earlier phase's rule would still change. A rule's records are freed
 * once tried. */
static long commit_round(rw_ctx *ctx, round_matches *rm, recorder *rec)
{
    long fired = 0;
    int64_t fired_phase = 0;
    char why[RW_WHY_SIZE], first_why[RW_WHY_SIZE];
    rw_refusal_rec reason, first_reason = {0};
    for (uint32_t k = 0; k < rm->nrules; k++) {
        const dsl_rule *rule = rm->rules[rm->order[k]];
        rule_matches *x = &rm->by_rule[rm->order[k]];
        if (fired && rule->phase > fired_phase)
            break; /* phases are sorted first: what follows all waits */
        uint32_t nn = rule->nnodes;
        const uint32_t *c = x->w.items;
        size_t n = nn ? x->w.len / nn : 0;
        for (size_t i = 0; i < n;) {
            uint32_t root = record_root(rule, c + i * nn);
            size_t end = i + 1;
            while (end < n && record_root(rule, c + end * nn) == root)
                end++;
            bool done = false;
            for (size_t j = i; j < end && !done; j++) {
                why[0] = '\0';
                mt_match m = expand(rm, rm->order[k], c + j * nn);
                done = try_commit(ctx, &m, why, &reason);
                if (!done && j == i) {
                    memcpy(first_why, why, sizeof why);
                    first_reason = reason;
                }
            }
            if (done) {
                fired_phase = rule->phase;
                fired++;
                ctx->rep->fired[rm->order[k]]++;
                if (ctx->opts.validate_each) {
                    renumber(ctx);
                    if (!validate_rewrite(ctx))
                        return -1;
                }
            } else {
                /* record reads the rule and the root, not the values and nodes: no expand */
                mt_match m = {.rule = rule, .rule_index = rm->order[k],
                              .root = word_node(rm, root)};
                record(rec, &m, &first_reason, first_why[0] ? first_why : "refused");
            }
            i = end;
        }
        rule_matches_free(x);
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
        round_matches rm;
        round_matches_init(&rm, a, &ctx);
        collect(&ctx, m, &rm);
        double t1 = cpu_seconds();
        long fired = commit_round(&ctx, &rm, &rec);
        round_matches_free(&rm);
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
            /* The nodes' states are not read again this round (validation of what changed
             * renumbers by the order, renumber_live, and leaves them behind): their memory goes
             * back before validation allocates its own, and the next round's, sized to its graph,
             * is made anew. (The whole validation's renumber moves them along.) */
            if (!ctx.opts.whole_validation && !ctx.opts.validate_each) {
                vec_free(&ctx.st);
                vec_free(&ctx.st_new);
            }
            ok = validate_round(&ctx, nodes0, values0);
            round_end(&ctx);
            report->round_limit = round == ctx.opts.max_rounds;
            report->validate_seconds += cpu_seconds() - t2;
        }
        if (fired == 0)
            break;
    }
    mt_matcher_free(m);
    for (size_t i = 0; i < IR_OP_COUNT; i++)
        free(ctx.carry_schemas[i]);
    free(ctx.bn_last.st);
    rw_carry_lists_free(&ctx);
    rw_plan_spare_free(&ctx);
    ar_free(ctx.scratch);
    sm_free(&rec.seen);
    vec_free(&ctx.st);
    vec_free(&ctx.st_new);
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
