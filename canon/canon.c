/* The rounds of canonicalization: each step records which values' readers read another value
 * instead (cn_forward), and the next step sees the graph with its readers moved; after the round
 * the nodes nothing reads go, and the graph is compacted and validated (types are inferred again:
 * a folded constant or a new spelling may make more known), until a round changes nothing. Types
 * stay right within a round: every step keeps them (a forward only to a value of the same type, a
 * fold into a constant of the same type, a spelling that moves no dim). */
#include "canon/internal.h"

#include "base/check.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

cn_options cn_options_default(void)
{
    return (cn_options){.fold_budget = CN_DEFAULT_FOLD_BUDGET};
}

bool cn_forward(cn_ctx *c, ir_value *from, ir_value *to)
{
    if (from->is_output || from == to || !ir_type_equal(from->type, to->type))
        return false;
    if (from->id >= c->nfwd || to->id >= c->nfwd) { /* made in this round (an axes constant) */
        size_t n = c->g->values.len;
        c->fwd = realloc(c->fwd, n * sizeof *c->fwd);
        c->gained = realloc(c->gained, n * sizeof *c->gained);
        FR_CHECK(c->fwd != NULL && c->gained != NULL);
        memset(c->fwd + c->nfwd, 0, (n - c->nfwd) * sizeof *c->fwd);
        memset(c->gained + c->nfwd, 0, (n - c->nfwd) * sizeof *c->gained);
        c->nfwd = n;
    }
    c->fwd[from->id] = to;
    c->gained[to->id] = true;
    c->nforwards++;
    return true;
}

bool cn_shared(const cn_ctx *c, const ir_value *v)
{
    return v->nuses > 1 || v->is_output || v->id >= c->nfwd || c->gained[v->id];
}

ir_value *cn_resolve(const cn_ctx *c, ir_value *v)
{
    while (v && v->id < c->nfwd && c->fwd[v->id])
        v = c->fwd[v->id];
    return v;
}

void cn_touch(cn_ctx *c, ir_node *n)
{
    vec_push(&c->touched, n);
}

void cn_touch_operands(cn_ctx *c, ir_node *n)
{
    vec_push(&c->rewired, ((cn_rewired){n, NULL, NULL, false}));
}

void cn_touch_value(cn_ctx *c, ir_value *v)
{
    vec_push(&c->touched_values, v);
}

void cn_kill(cn_ctx *c, ir_node *n)
{
    n->dead = true;
    vec_push(&c->dead, n);
}

int64_t *cn_const_ints(ir_graph *g, ir_value *v, int64_t *count)
{
    int64_t n;
    if (!v || v->kind != IR_VALUE_CONST || !ir_type_numel(v->type, &n) ||
        (v->type->dtype != IR_I64 && v->type->dtype != IR_I32))
        return NULL;
    const void *data = ir_const_data_or_null(g, v);
    if (!data)
        return NULL;
    int64_t *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    FR_CHECK(x != NULL);
    for (int64_t i = 0; i < n; i++)
        x[i] = v->type->dtype == IR_I64 ? ((const int64_t *)data)[i] : ((const int32_t *)data)[i];
    *count = n;
    return x;
}

void cn_set_const(ir_graph *g, ir_value *v, const void *data, size_t nbytes)
{
    int64_t n;
    FR_CHECK(ir_type_numel(v->type, &n));
    if (n == 0 || n > CN_LITERAL_LIMIT) {
        v->konst = NULL;
        ir_const_set_data(g, v, data, nbytes);
        return;
    }
    rt_tensor t = {.type = *v->type, .data = (void *)data, .nbytes = nbytes};
    double *x = ar_alloc_array(g->arena, (size_t)n, sizeof *x);
    for (int64_t i = 0; i < n; i++) {
        x[i] = rt_tensor_get(&t, (size_t)i);
        /* the text holds finite values, and integers within +-2^53 */
        if (!isfinite(x[i]) || fabs(x[i]) > 9007199254740992.0) {
            v->konst = NULL;
            ir_const_set_data(g, v, data, nbytes);
            return;
        }
    }
    ir_const *c = ir_const_new(g, IR_CONST_LITERAL);
    c->literal_count = (size_t)n;
    c->literal = x;
    v->konst = c;
}

ir_value *cn_new_ints(ir_graph *g, const char *stem, const int64_t *x, int64_t count)
{
    ir_type t = {.dtype = IR_I64, .rank = 1, .dims = {count}};
    ir_value *v = ir_add_const(g, ir_fresh_name(g, stem), &t, NULL);
    FR_CHECK(v != NULL);
    cn_set_const(g, v, x, (size_t)count * sizeof *x);
    return v;
}

/* Whether a node reading `to` instead of `from` may be the same to validation: both computed (no
 * constant data to read), of the same type and shape value. Validation checks it again all the
 * same unless, after the round, `from` is unchanged and `to` is made earlier by a live node
 * (validate_round). */
static bool may_be_quiet(const ir_value *from, const ir_value *to)
{
    return from->kind == IR_VALUE_NODE && to->kind == IR_VALUE_NODE &&
           ir_type_equal(from->type, to->type) && ir_shape_value_equal(from->sv, to->sv);
}

/* Makes every live node read what the steps so far forwarded its inputs to (nothing to do when
 * no step forwarded anything since the last time), and records the nodes that now read another
 * operand. */
static void apply_forwards(cn_ctx *c)
{
    ir_graph *g = c->g;
    if (c->nforwards == c->applied && !c->opts->whole_rounds)
        return;
    c->applied = c->nforwards;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; !n->dead && k < n->ninputs; k++) {
            ir_value *from = n->inputs[k], *to = cn_resolve(c, from);
            if (to == from)
                continue;
            n->inputs[k] = to;
            vec_push(&c->rewired, ((cn_rewired){n, from, to, may_be_quiet(from, to)}));
        }
    }
}

/* A node whose outputs nothing reads (and no graph output is) goes, in reverse topological order
 * so that a chain goes at once. Returns the nodes dropped. */
static uint32_t drop_dead(cn_ctx *c)
{
    ir_graph *g = c->g;
    size_t nv = g->values.len;
    uint32_t *readers = calloc(nv ? nv : 1, sizeof *readers);
    FR_CHECK(readers != NULL);
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; !n->dead && k < n->ninputs; k++)
            if (n->inputs[k])
                readers[n->inputs[k]->id]++;
    }
    uint32_t dropped = 0;
    for (size_t i = g->nodes.len; i-- > 0;) {
        ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        bool used = false;
        for (uint32_t k = 0; k < n->noutputs && !used; k++)
            used = readers[n->outputs[k]->id] > 0 || n->outputs[k]->is_output;
        if (used)
            continue;
        cn_kill(c, n);
        dropped++;
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k])
                readers[n->inputs[k]->id]--;
    }
    free(readers);
    return dropped;
}

/* A type the text declared with unknown dims may now be inferred with known ones (a Reshape to a
 * folded shape): the declaration said less, not something else, so it no longer binds the value
 * (a declared layout tag, which inference cannot know, stays binding). */
static void release_vague_declarations(ir_graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; k < n->noutputs; k++) {
            ir_value *v = n->outputs[k];
            if (v->type_declared && v->type->layout == IR_LAYOUT_NONE &&
                !ir_type_is_static(v->type))
                v->type_declared = false;
        }
    }
}

/* The ops the steps that act on some ops only look at (the nodes they change, or, reading through,
 * the node they start from): a step finds nothing to do in a graph without them, and visits only
 * the nodes of these ops (cn_visit). A new respelling or no-op in spell.c, through.c, qdq.c or
 * noops.c adds the op it starts from here, or it never sees a node of that op. */
#define CN_OPS(...)                                                                                \
    (const ir_op[]){__VA_ARGS__}, sizeof((const ir_op[]){__VA_ARGS__}) / sizeof(ir_op)
#define SPELL_OPS                                                                                  \
    CN_OPS(IR_OP_ReduceMean, IR_OP_ReduceSum, IR_OP_ReduceMax, IR_OP_ReduceMin, IR_OP_Squeeze,     \
           IR_OP_Unsqueeze, IR_OP_Split, IR_OP_Slice, IR_OP_Softmax, IR_OP_LayerNormalization,     \
           IR_OP_Concat, IR_OP_Reshape, IR_OP_Gather, IR_OP_Transpose, IR_OP_BatchNormalization)
#define THROUGH_OPS CN_OPS(IR_OP_Cast, IR_OP_Where)
#define QDQ_OPS     CN_OPS(IR_OP_QuantizeLinear)
#define NOOP_OPS                                                                                   \
    CN_OPS(IR_OP_Identity, IR_OP_Dropout, IR_OP_Cast, IR_OP_Expand, IR_OP_Reshape,                 \
           IR_OP_Transpose, IR_OP_Slice, IR_OP_Concat, IR_OP_Where, IR_OP_Pad, IR_OP_Gather)

/* Notes which ops the graph's live nodes have, for may_act, and lists the nodes of the ops of
 * SPELL_OPS, THROUGH_OPS, QDQ_OPS and NOOP_OPS (all of them with whole_rounds) for cn_visit; in
 * round 1, counts the statistics cn_options.stats_before asks for. */
static void note_ops(cn_ctx *c)
{
    const struct {
        const ir_op *ops;
        size_t n;
    } lists[] = {{SPELL_OPS}, {THROUGH_OPS}, {QDQ_OPS}, {NOOP_OPS}};
    bool visited[IR_OP_COUNT] = {0};
    for (size_t l = 0; l < FR_COUNT_OF(lists); l++)
        for (size_t i = 0; i < lists[l].n; i++)
            visited[lists[l].ops[i]] = true;
    memset(c->has_op, 0, sizeof c->has_op);
    c->unread.len = c->vague.len = 0;
    if (c->only_forwarded && !c->opts->whole_rounds) {
        /* the last round changed no node's op and made none: its list, less the nodes it dropped;
         * it changed no type, and released every vague declaration */
        size_t kept = 0;
        for (size_t i = 0; i < c->visit.len; i++)
            if (!c->visit.items[i]->dead) {
                c->visit.items[kept++] = c->visit.items[i];
                c->has_op[c->visit.items[kept - 1]->op] = true;
            }
        c->visit.len = kept;
        return;
    }
    c->visit.len = 0;
    /* round 1 sees the graph as given: its statistics are counted here when asked */
    ir_stats_counter stats;
    ir_stats *before = c->round == 1 ? c->opts->stats_before : NULL;
    if (before)
        ir_stats_begin(&stats, before);
    for (size_t i = 0; i < c->g->nodes.len; i++) {
        ir_node *n = c->g->nodes.items[i];
        if (n->dead)
            continue;
        if (before)
            ir_stats_add(&stats, n);
        c->has_op[n->op] = true;
        if (visited[n->op] || c->opts->whole_rounds)
            vec_push(&c->visit, n);
        /* after round 1 every node is read: the round before dropped the rest */
        bool read = c->round > 1;
        for (uint32_t k = 0; k < n->noutputs; k++) {
            ir_value *v = n->outputs[k];
            read |= v->nuses > 0 || v->is_output;
            if (v->type_declared && v->type->layout == IR_LAYOUT_NONE &&
                !ir_type_is_static(v->type))
                vec_push(&c->vague, v);
        }
        if (!read)
            vec_push(&c->unread, n);
    }
}

/* Whether a step that acts only on nodes of `ops` may change something: the graph has one, or a
 * step before it in this round changed something (which may have made one). */
static bool may_act(const cn_ctx *c, uint32_t changed, const ir_op *ops, size_t nops)
{
    if (changed || c->opts->whole_rounds)
        return true;
    for (size_t i = 0; i < nops; i++)
        if (c->has_op[ops[i]])
            return true;
    return false;
}

/* Stops on a change a step did not record (cn_options.check_marks). */
static void unrecorded(const char *what, const char *name)
{
    fprintf(stderr, "canon: %s '%s' changed, and no step recorded it (canon/internal.h)\n", what,
            name);
    abort();
}

/* Sets the flags by id (the graph compacted since) of the listed nodes and values still in it. */
static void flag_kept(const ir_graph *g, const ir_node *const *nodes, size_t nnodes,
                      bool *dirty_node, const ir_value *const *values, size_t nvalues,
                      bool *dirty_value)
{
    for (size_t i = 0; i < nnodes; i++)
        if (nodes[i]->id < g->nodes.len && g->nodes.items[nodes[i]->id] == nodes[i])
            dirty_node[nodes[i]->id] = true;
    for (size_t i = 0; i < nvalues; i++)
        if (values[i]->id < g->values.len && g->values.items[values[i]->id] == values[i])
            dirty_value[values[i]->id] = true;
}

static bool reads(const ir_node *n, const ir_value *v)
{
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] == v)
            return true;
    return false;
}

/* Takes n off v's readers. */
static void unlist_reader(ir_value *v, const ir_node *n)
{
    for (uint32_t u = 0; u < v->nuses; u++)
        if (v->uses[u] == n) {
            memmove(&v->uses[u], &v->uses[u + 1], (v->nuses - u - 1) * sizeof *v->uses);
            v->nuses--;
            return;
        }
}

/* A reader to list among a value's readers. */
typedef struct {
    ir_value *value;
    ir_node *reader;
} new_reader;

static int by_value_then_reader(const void *pa, const void *pb)
{
    const new_reader *a = pa, *b = pb;
    if (a->value->id != b->value->id)
        return a->value->id < b->value->id ? -1 : 1;
    return (a->reader->id > b->reader->id) - (a->reader->id < b->reader->id);
}

/* Lists the new readers, each once, in the order of the nodes (ir_compute_uses's): in place when
 * the list fits in its room, else one new list per value that gains readers (a list's room is
 * its length as ir_compute_uses left it), however many it gains: a constant CSE merged thousands
 * of copies into gains thousands of readers in one round, and a list per reader would take
 * memory quadratic in them. */
static void list_readers(ir_graph *g, new_reader *adds, size_t n)
{
    /* forwards re-point readers in the order of the nodes, mostly to values made before them in
     * that order: the list is often sorted already (166,666 entries at 1M nodes) */
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = by_value_then_reader(&adds[i - 1], &adds[i]) <= 0;
    if (!sorted)
        qsort(adds, n, sizeof *adds, by_value_then_reader);
    VEC(ir_node *) merged = {0};
    for (size_t i = 0, j; i < n; i = j) {
        ir_value *v = adds[i].value;
        for (j = i; j < n && adds[j].value == v; j++)
            ;
        vec_reserve(&merged, v->nuses + (j - i));
        uint32_t len = 0, a = 0;
        for (size_t b = i; a < v->nuses || b < j;) {
            bool old = b == j || (a < v->nuses && v->uses[a]->id <= adds[b].reader->id);
            ir_node *next = old ? v->uses[a++] : adds[b++].reader;
            /* a dead reader would be taken off after (update_uses): left out now */
            if (!next->dead && (len == 0 || merged.items[len - 1] != next))
                merged.items[len++] = next;
        }
        /* the list's room is at least its length: most fit there (a reader re-pointed from an
         * Identity that went to the Identity's operand, whose one reader was that Identity) */
        ir_node **uses = len <= v->nuses ? v->uses : ar_alloc_array(g->arena, len, sizeof *uses);
        if (len)
            memcpy(uses, merged.items, len * sizeof *uses);
        v->uses = uses;
        v->nuses = len;
    }
    vec_free(&merged);
}

/* Lists longer than this lose their stale readers in one pass at the end of update_uses instead
 * of one search and move per reader: a value thousands of merged duplicates read loses thousands
 * of readers in a round (llama_126k: 60% of canon's instructions were those moves). */
enum { SHORT_USES = 16 };

static int by_address(const void *pa, const void *pb)
{
    uintptr_t a = (uintptr_t) * (ir_value *const *)pa, b = (uintptr_t) * (ir_value *const *)pb;
    return (a > b) - (a < b);
}

/* Keeps the readers of v that are live and read it: in an only_forwards round, a listed reader
 * that does neither was re-pointed away from v or went (the round started with exact lists). */
static void prune_readers(ir_value *v)
{
    uint32_t kept = 0;
    for (uint32_t u = 0; u < v->nuses; u++)
        if (!v->uses[u]->dead && reads(v->uses[u], v))
            v->uses[kept++] = v->uses[u];
    v->nuses = kept;
}

/* The use lists after a round whose only changes were readers re-pointed to values validation
 * sees the same, and dead nodes (validate_round): what ir_compute_uses would give, by changing
 * only the lists of the values those read (node ids still the positions in the list). */
static void update_uses(cn_ctx *c)
{
    VEC(new_reader) adds = {0};
    VEC(ir_value *) long_lists = {0}; /* pruned at the end: each a stale reader or more */
    for (size_t i = 0; i < c->rewired.len; i++) {
        const cn_rewired *r = &c->rewired.items[i];
        FR_CHECK(r->from != NULL); /* only_forwards */
        if (!reads(r->reader, r->from)) {
            if (r->from->nuses <= SHORT_USES)
                unlist_reader(r->from, r->reader);
            else
                vec_push(&long_lists, r->from);
        }
        if (reads(r->reader, r->to)) /* not when a later forward took it on again */
            vec_push(&adds, ((new_reader){r->to, r->reader}));
    }
    list_readers(c->g, adds.items, adds.len);
    vec_free(&adds);
    for (size_t i = 0; i < c->dead.len; i++) {
        const ir_node *d = c->dead.items[i];
        for (uint32_t k = 0; k < d->ninputs; k++) {
            ir_value *v = d->inputs[k];
            if (v && v->nuses <= SHORT_USES)
                unlist_reader(v, d);
            else if (v)
                vec_push(&long_lists, v);
        }
    }
    if (long_lists.len > 1)
        qsort(long_lists.items, long_lists.len, sizeof *long_lists.items, by_address);
    for (size_t i = 0; i < long_lists.len; i++)
        if (i == 0 || long_lists.items[i] != long_lists.items[i - 1])
            prune_readers(long_lists.items[i]);
    vec_free(&long_lists);
}

/* The use lists as ir_compute_uses gives them (cn_options.check_marks): stops when update_uses
 * left another. */
static void check_uses(ir_graph *g)
{
    size_t nv = g->values.len, total = 0;
    uint32_t *count = malloc((nv ? nv : 1) * sizeof *count);
    FR_CHECK(count != NULL);
    for (size_t i = 0; i < nv; i++)
        total += count[i] = g->values.items[i]->nuses;
    ir_node **listed = malloc((total ? total : 1) * sizeof *listed);
    FR_CHECK(listed != NULL);
    total = 0;
    for (size_t i = 0; i < nv; i++)
        for (uint32_t u = 0; u < count[i]; u++)
            listed[total++] = g->values.items[i]->uses[u];
    ir_compute_uses(g);
    total = 0;
    for (size_t i = 0; i < nv; i++) {
        const ir_value *v = g->values.items[i];
        bool same = v->nuses == count[i];
        for (uint32_t u = 0; same && u < count[i]; u++)
            same = v->uses[u] == listed[total + u];
        if (!same) {
            fprintf(stderr, "canon: the readers of '%s' are not the graph's\n", v->name);
            abort();
        }
        total += count[i];
    }
    free(listed);
    free(count);
}

/* The values ir_compact keeps are the ones ir_compact_used keeps (cn_options.check_marks): stops
 * where they differ. */
static void check_kept(const ir_graph *g)
{
    size_t nv = g->values.len;
    bool *live = calloc(nv ? nv : 1, sizeof *live), *input = calloc(nv ? nv : 1, sizeof *input);
    FR_CHECK(live && input);
    for (size_t i = 0; i < g->inputs.len; i++)
        live[g->inputs.items[i]->id] = input[g->inputs.items[i]->id] = true;
    for (size_t i = 0; i < g->outputs.len; i++)
        live[g->outputs.items[i]->id] = true;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; !n->dead && k < n->ninputs; k++)
            if (n->inputs[k])
                live[n->inputs[k]->id] = true;
        for (uint32_t k = 0; !n->dead && k < n->noutputs; k++)
            live[n->outputs[k]->id] = true;
    }
    for (size_t i = 0; i < nv; i++) {
        const ir_value *v = g->values.items[i];
        if (live[i] != (input[i] || ir_value_kept(g, v))) {
            fprintf(stderr, "canon: '%s' is %s by compaction\n", v->name,
                    live[i] ? "dropped" : "kept");
            abort();
        }
    }
    free(live);
    free(input);
}

/* Whether the round's changes so far are readers apply_forwards re-pointed and nodes marked dead
 * (no node or value changed in place, none made): update_uses then gives the use lists. */
static bool only_forwards(const cn_ctx *c)
{
    if (c->opts->whole_rounds || c->touched.len || c->touched_values.len ||
        c->g->nodes.len != c->nodes0 || c->g->values.len != c->values0)
        return false;
    for (size_t i = 0; i < c->rewired.len; i++)
        if (!c->rewired.items[i].from)
            return false;
    return true;
}

/* drop_dead after a round of forwards only (only_forwards), without a pass over the graph: the
 * use lists updated (update_uses), a node whose outputs nothing reads now goes, and the nodes
 * whose outputs lost a reader are looked at again. Those are the nodes no node read at the
 * round's start (c->unread), the producers of the values forwarded and of the operands of the
 * nodes that went: the same nodes go as with drop_dead. */
static uint32_t drop_unread(cn_ctx *c)
{
    update_uses(c);
    c->uses_updated = true;
    VEC(ir_node *) work = {0};
    for (size_t i = 0; i < c->unread.len; i++)
        vec_push(&work, c->unread.items[i]);
    for (size_t i = 0; i < c->rewired.len; i++)
        if (c->rewired.items[i].from->kind == IR_VALUE_NODE && c->rewired.items[i].from->producer)
            vec_push(&work, c->rewired.items[i].from->producer);
    for (size_t i = 0; i < c->dead.len; i++)
        for (uint32_t k = 0; k < c->dead.items[i]->ninputs; k++) {
            const ir_value *v = c->dead.items[i]->inputs[k];
            if (v && v->kind == IR_VALUE_NODE && v->producer)
                vec_push(&work, v->producer);
        }
    uint32_t dropped = 0;
    while (work.len) {
        ir_node *n = work.items[--work.len];
        bool used = n->dead;
        for (uint32_t k = 0; k < n->noutputs && !used; k++)
            used = n->outputs[k]->nuses > 0 || n->outputs[k]->is_output;
        if (used)
            continue;
        cn_kill(c, n);
        dropped++;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            ir_value *v = n->inputs[k];
            if (!v)
                continue;
            unlist_reader(v, n);
            if (v->kind == IR_VALUE_NODE && v->producer)
                vec_push(&work, v->producer);
        }
    }
    vec_free(&work);
    return dropped;
}

/* Whether validate_round has something to validate: nodes or values the round made, ones the steps
 * changed in place, or a reader re-pointed in a way validation may not see the same (what its
 * flags would hold), found from the round's lists without a pass over the graph. */
static bool anything_to_validate(const cn_ctx *c)
{
    if (c->g->nodes.len > c->nodes0 || c->g->values.len > c->values0 || c->touched_values.len ||
        c->touched.len)
        return true;
    /* no value flagged: a re-pointed reader is quiet as validate_round tells it */
    for (size_t i = 0; i < c->rewired.len; i++) {
        const cn_rewired *r = &c->rewired.items[i];
        const ir_node *p = r->to ? r->to->producer : NULL;
        if (!(r->quiet && r->to->kind == IR_VALUE_NODE && p && !p->dead && p->id < r->reader->id))
            return true;
    }
    return false;
}

/* The end of a round with nothing to validate (anything_to_validate): only readers re-pointed to
 * what validation sees the same, and dead nodes; ir_validate_marked would check nothing. The use
 * lists are updated and the graph compacted. With `fp` (check_marks), the values whose
 * fingerprints changed unseen must be the ones compaction drops. */
static void end_forwards_only(cn_ctx *c, const ir_validated *fp, ir_value *const *unseen,
                              size_t nunseen)
{
    ir_graph *g = c->g;
    if (!c->uses_updated)
        update_uses(c);
    if (fp)
        check_kept(g);
    ir_compact_used(g); /* the lists are the live nodes' */
    if (fp)
        check_uses(g);
    for (size_t i = 0; i < nunseen; i++) {
        const ir_value *v = unseen[i];
        if (v->id < g->values.len && g->values.items[v->id] == v)
            unrecorded("value", v->name);
    }
}

/* After a round that changed something: the graph compacted, and validated where the round
 * changed it (ir_validate_marked): the nodes and values the steps recorded and the ones the
 * round made, and the nodes that read other operands. Except a node whose operand was forwarded
 * to a value validation sees the same: both computed, of the same type and shape value
 * (may_be_quiet), the one it read not changed in place, the one it reads made by a live node
 * before it. Validating such a node reads its operands' kinds, types, shape values and constants,
 * whether they are in the graph, and whether their producers are live and come before it; none
 * of that changed, so it would infer what it inferred (test_canon compares with whole rounds).
 * With `fp` (cn_options.check_marks: the fingerprints of the round's start), every change they
 * show must be one of those. */
static bool validate_round(cn_ctx *c, const ir_validated *fp, dg_context *dg)
{
    ir_graph *g = c->g;
    if (!fp && !anything_to_validate(c)) {
        /* the common end of a round of forwards: no flags made and swept to find nothing */
        c->only_forwarded = true;
        end_forwards_only(c, NULL, NULL, 0);
        return true;
    }
    size_t nn = g->nodes.len, nv = g->values.len;
    bool *node_flag = calloc(nn ? nn : 1, sizeof *node_flag);
    bool *value_flag = calloc(nv ? nv : 1, sizeof *value_flag);
    bool *quiet = calloc(nn ? nn : 1, sizeof *quiet);
    FR_CHECK(node_flag && value_flag && quiet);
    for (size_t i = c->nodes0; i < nn; i++)
        node_flag[i] = true;
    for (size_t i = c->values0; i < nv; i++)
        value_flag[i] = true;
    for (size_t i = 0; i < c->touched_values.len; i++)
        value_flag[c->touched_values.items[i]->id] = true;
    for (size_t i = 0; i < c->touched.len; i++) {
        ir_node *n = c->touched.items[i];
        node_flag[n->id] = true;
        for (uint32_t k = 0; k < n->noutputs; k++)
            value_flag[n->outputs[k]->id] = true;
    }
    for (size_t i = 0; i < c->rewired.len; i++) {
        const cn_rewired *r = &c->rewired.items[i];
        ir_node *n = r->reader, *p = r->to ? r->to->producer : NULL;
        if (r->quiet && !value_flag[r->from->id] && r->to->kind == IR_VALUE_NODE && p && !p->dead &&
            p->id < n->id)
            quiet[n->id] = true;
        else
            node_flag[n->id] = true;
    }
    VEC(ir_node *) nodes = {0};
    VEC(ir_value *) values = {0}, unseen = {0};
    bool any = false; /* anything to validate */
    for (size_t i = 0; i < nn && !any; i++)
        any = node_flag[i];
    for (size_t i = 0; i < nv && !any; i++)
        any = value_flag[i];
    FR_CHECK(fp ? any == anything_to_validate(c) : any); /* the shortcut above agrees */
    if (fp) {
        bool *node_changed = malloc((nn ? nn : 1) * sizeof *node_changed);
        bool *value_changed = malloc((nv ? nv : 1) * sizeof *value_changed);
        FR_CHECK(node_changed && value_changed);
        ir_validated_changed(fp, g, node_changed, value_changed);
        size_t ndead = 0;
        for (size_t i = 0; i < nn; i++) {
            ir_node *n = g->nodes.items[i];
            ndead += n->dead;
            if (node_changed[i] && !n->dead && !node_flag[i] && !quiet[i])
                unrecorded("node", n->noutputs ? n->outputs[0]->name : "?");
        }
        if (ndead != c->dead.len)
            unrecorded("the dead nodes' list of", g->name);
        for (size_t i = 0; i < nv; i++)
            if (value_changed[i] && !value_flag[i])
                vec_push(&unseen, g->values.items[i]); /* an error unless compaction drops it */
        free(node_changed);
        free(value_changed);
    }
    for (size_t i = 0; i < nn; i++)
        if (node_flag[i])
            vec_push(&nodes, g->nodes.items[i]);
    for (size_t i = 0; i < nv; i++)
        if (value_flag[i])
            vec_push(&values, g->values.items[i]);
    free(node_flag);
    free(value_flag);
    free(quiet);
    c->only_forwarded = !any;
    if (!any) {
        end_forwards_only(c, fp, unseen.items, unseen.len);
        vec_free(&nodes);
        vec_free(&values);
        vec_free(&unseen);
        return true;
    }
    ir_compact(g);
    bool *dirty_node = calloc(g->nodes.len ? g->nodes.len : 1, sizeof *dirty_node);
    bool *dirty_value = calloc(g->values.len ? g->values.len : 1, sizeof *dirty_value);
    FR_CHECK(dirty_node && dirty_value);
    flag_kept(g, (const ir_node *const *)nodes.items, nodes.len, dirty_node,
              (const ir_value *const *)values.items, values.len, dirty_value);
    for (size_t i = 0; i < unseen.len; i++) {
        const ir_value *v = unseen.items[i];
        if (v->id < g->values.len && g->values.items[v->id] == v)
            unrecorded("value", v->name);
    }
    bool ok = ir_validate_marked(g, dirty_node, dirty_value, dg);
    free(dirty_node);
    free(dirty_value);
    vec_free(&nodes);
    vec_free(&values);
    vec_free(&unseen);
    return ok;
}

/* One round: the steps in order over the whole graph, each seeing what the ones before forwarded;
 * then the dead nodes go and the graph is compacted and validated (types inferred again) where
 * the round changed it (validate_round: the nodes it changed, their readers, and downstream where
 * a type changed). Returns false when the graph no longer validates. The use lists are current
 * when `c->uses_current`. */
static bool round_of_steps(cn_ctx *c, uint32_t *changed, dg_context *dg)
{
    ir_graph *g = c->g;
    cn_report *rep = c->rep;
    if (!c->uses_current || c->opts->whole_rounds)
        ir_compute_uses(g);
    c->uses_current = true;
    ir_validated *fp = c->opts->check_marks ? ir_validated_take(g) : NULL;
    c->nodes0 = g->nodes.len;
    c->values0 = g->values.len;
    c->touched.len = c->touched_values.len = c->rewired.len = c->dead.len = 0;
    c->uses_updated = false;
    c->nforwards = c->applied = 0;
    c->nfwd = g->values.len;
    c->fwd = calloc(c->nfwd ? c->nfwd : 1, sizeof *c->fwd);
    c->gained = calloc(c->nfwd ? c->nfwd : 1, sizeof *c->gained);
    FR_CHECK(c->fwd != NULL && c->gained != NULL);
    note_ops(c);
    uint32_t n = may_act(c, *changed, SPELL_OPS) ? cn_spell(c) : 0;
    rep->respelled += n;
    *changed += n;
    n = may_act(c, *changed, THROUGH_OPS) ? cn_through(c) : 0;
    rep->respelled += n;
    *changed += n;
    n = may_act(c, *changed, QDQ_OPS) ? cn_qdq(c) : 0;
    rep->removed += n;
    *changed += n;
    n = may_act(c, *changed, NOOP_OPS) ? cn_noops(c) : 0;
    rep->removed += n;
    *changed += n;
    apply_forwards(c);
    /* after a round that only forwarded readers to what validation saw the same (no operand's
     * kind, type or shape value, no constant, no output's type changed since its cn_fold) and a
     * round so far that changed nothing, folding finds what it found: nothing (what it folded
     * would have changed a value: not such a round) */
    n = c->round > 1 && !*changed && c->only_forwarded && !c->opts->whole_rounds ? 0 : cn_fold(c);
    rep->folded += n;
    *changed += n;
    /* a cn_cse that found nothing finds nothing again until something changes */
    n = c->round > 1 && !*changed && c->cse_fixed && !c->opts->whole_rounds ? 0 : cn_cse(c);
    rep->merged += n;
    *changed += n;
    n = may_act(c, *changed, NOOP_OPS) ? cn_output_noops(c) : 0;
    rep->removed += n;
    *changed += n;
    apply_forwards(c);
    /* a round after the first starts with every node read (the last one dropped the rest, and
     * validation drops nothing): when its steps changed nothing, nothing is unread */
    n = c->round > 1 && !*changed && !c->opts->whole_rounds ? 0
        : only_forwards(c)                                  ? drop_unread(c)
                                                            : drop_dead(c);
    rep->dead += n;
    *changed += n;
    free(c->fwd);
    free(c->gained);
    c->fwd = NULL;
    c->gained = NULL;
    c->nfwd = 0;
    if (!*changed) {
        ir_validated_free(fp);
        return true;
    }
    /* before compaction: it releases the values of dead nodes too, which compaction drops. After
     * forwards only (no type changed, no node has another output), the ones noted at the start */
    if (only_forwards(c))
        for (size_t i = 0; i < c->vague.len; i++)
            c->vague.items[i]->type_declared = false;
    else
        release_vague_declarations(g);
    bool ok;
    if (c->opts->whole_rounds) {
        ir_compact(g);
        ok = ir_validate(g, dg);
    } else {
        ok = validate_round(c, fp, dg); /* compacts */
    }
    ir_validated_free(fp);
    c->uses_current = ok;
    if (ok)
        return true;
    dg_error_path(dg, g->name,
                  "internal error: the graph is invalid after canonicalization (a bug "
                  "in fuserule's canon/)");
    return false;
}

bool cn_canonicalize(ir_graph *g, const cn_options *opts, cn_report *rep, dg_context *dg)
{
    double t0 = cpu_seconds();
    memset(rep, 0, sizeof *rep);
    /* validated and not changed since (canon.h): ir_validate left the use lists current */
    cn_ctx c = {.g = g, .opts = opts, .rep = rep, .uses_current = true};
    bool ok = true;
    for (uint32_t round = 1; ok && round <= CN_MAX_ROUNDS; round++) {
        uint32_t changed = 0;
        rep->rounds = c.round = round;
        ok = round_of_steps(&c, &changed, dg);
        if (!changed)
            break;
    }
    vec_free(&c.touched);
    vec_free(&c.touched_values);
    vec_free(&c.rewired);
    vec_free(&c.dead);
    vec_free(&c.visit);
    vec_free(&c.unread);
    vec_free(&c.vague);
    if (!ok || !c.uses_current || opts->whole_rounds)
        ir_compute_uses(g);
    rep->seconds = cpu_seconds() - t0;
    return ok;
}
