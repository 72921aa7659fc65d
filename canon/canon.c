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

/* Makes every live node read what the steps so far forwarded its inputs to (nothing to do when
 * no step forwarded anything since the last time). */
static void apply_forwards(cn_ctx *c)
{
    ir_graph *g = c->g;
    if (c->nforwards == c->applied && !c->opts->whole_rounds)
        return;
    c->applied = c->nforwards;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; !n->dead && k < n->ninputs; k++)
            n->inputs[k] = cn_resolve(c, n->inputs[k]);
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
        n->dead = true;
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
 * the node they start from): a step finds nothing to do in a graph without them. A new respelling
 * or no-op in spell.c, through.c, qdq.c or noops.c adds the op it starts from here, or it is skipped
 * in graphs that have none of the others. */
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

/* Notes which ops the graph's live nodes have, for may_act. */
static void note_ops(cn_ctx *c)
{
    memset(c->has_op, 0, sizeof c->has_op);
    for (size_t i = 0; i < c->g->nodes.len; i++)
        if (!c->g->nodes.items[i]->dead)
            c->has_op[c->g->nodes.items[i]->op] = true;
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

/* One round: the steps in order over the whole graph, each seeing what the ones before forwarded;
 * then the dead nodes go and the graph is compacted and validated (types inferred again) where
 * the round changed it (ir_validate_since: the nodes it changed, their readers, and downstream
 * where a type changed). Returns false when the graph no longer validates. `*valid` holds the
 * fingerprints of the graph as last validated; the use lists are current when `c->uses_current`. */
static bool round_of_steps(cn_ctx *c, uint32_t *changed, ir_validated **valid, dg_context *dg)
{
    ir_graph *g = c->g;
    cn_report *rep = c->rep;
    if (!c->uses_current || c->opts->whole_rounds)
        ir_compute_uses(g);
    c->uses_current = true;
    if (!*valid)
        *valid = ir_validated_take(g);
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
    n = cn_fold(c);
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
    n = c->round > 1 && !*changed && !c->opts->whole_rounds ? 0 : drop_dead(c);
    rep->dead += n;
    *changed += n;
    free(c->fwd);
    free(c->gained);
    c->fwd = NULL;
    c->gained = NULL;
    c->nfwd = 0;
    if (!*changed)
        return true;
    /* before compaction: it releases the values of dead nodes too, which compaction drops */
    release_vague_declarations(g);
    bool ok;
    if (c->opts->whole_rounds) {
        ir_compact(g);
        ok = ir_validate(g, dg);
        ir_validated_free(*valid);
        *valid = ok ? ir_validated_take(g) : NULL;
    } else {
        ok = ir_validate_since(g, *valid, dg); /* compacts */
    }
    c->uses_current = ok;
    if (ok)
        return true; /* and *valid holds the fingerprints of g as validated now */
    ir_validated_free(*valid);
    *valid = NULL;
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
    ir_validated *valid = NULL;
    bool ok = true;
    for (uint32_t round = 1; ok && round <= CN_MAX_ROUNDS; round++) {
        uint32_t changed = 0;
        rep->rounds = c.round = round;
        ok = round_of_steps(&c, &changed, &valid, dg);
        if (!changed)
            break;
    }
    ir_validated_free(valid);
    if (!ok || !c.uses_current || opts->whole_rounds)
        ir_compute_uses(g);
    rep->seconds = cpu_seconds() - t0;
    return ok;
}
