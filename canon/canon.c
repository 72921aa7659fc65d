/* The rounds of canonicalization: each step records which values' readers read another value
 * instead (cn_forward), the driver makes them do so, drops the nodes nothing reads, compacts and
 * validates (types are inferred again: a folded constant or a new spelling may make more known),
 * until a round changes nothing. */
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
    if (from->is_output || from == to || !ir_type_equal(&from->type, &to->type))
        return false;
    FR_CHECK(from->id < c->nfwd);
    c->fwd[from->id] = to;
    return true;
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
    if (!v || v->kind != IR_VALUE_CONST || !ir_type_numel(&v->type, &n) ||
        (v->type.dtype != IR_I64 && v->type.dtype != IR_I32))
        return NULL;
    dg_context *dg = dg_new();
    const void *data = ir_const_data(g, v, dg);
    dg_free(dg);
    if (!data)
        return NULL;
    int64_t *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    FR_CHECK(x != NULL);
    for (int64_t i = 0; i < n; i++)
        x[i] = v->type.dtype == IR_I64 ? ((const int64_t *)data)[i] : ((const int32_t *)data)[i];
    *count = n;
    return x;
}

void cn_set_const(ir_graph *g, ir_value *v, const void *data, size_t nbytes)
{
    int64_t n;
    FR_CHECK(ir_type_numel(&v->type, &n));
    if (n == 0 || n > CN_LITERAL_LIMIT) {
        v->konst = NULL;
        ir_const_set_data(g, v, data, nbytes);
        return;
    }
    rt_tensor t = {.type = v->type, .data = (void *)data, .nbytes = nbytes};
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

/* Readers read what the step forwarded; a node whose outputs nothing reads (and no graph output
 * is) goes, in reverse topological order so that a chain goes at once. Returns the nodes dropped. */
static uint32_t commit(cn_ctx *c)
{
    ir_graph *g = c->g;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        for (uint32_t k = 0; k < n->ninputs; k++)
            n->inputs[k] = cn_resolve(c, n->inputs[k]);
    }
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

/* Runs one step and commits it; false when the graph no longer validates. */
static bool step(cn_ctx *c, uint32_t (*fn)(cn_ctx *), uint32_t *count, uint32_t *changed,
                 dg_context *dg)
{
    ir_graph *g = c->g;
    ir_compute_uses(g);
    c->nfwd = g->values.len;
    c->fwd = calloc(c->nfwd ? c->nfwd : 1, sizeof *c->fwd);
    FR_CHECK(c->fwd != NULL);
    uint32_t n = fn(c);
    uint32_t dead = commit(c);
    free(c->fwd);
    c->fwd = NULL;
    *count += n;
    c->rep->dead += dead;
    *changed += n + dead;
    if (!n && !dead)
        return true;
    ir_compact(g);
    if (ir_validate(g, dg))
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
    cn_ctx c = {.g = g, .opts = opts, .rep = rep};
    bool ok = true;
    for (uint32_t round = 1; ok && round <= CN_MAX_ROUNDS; round++) {
        uint32_t changed = 0;
        rep->rounds = round;
        ok = step(&c, cn_spell, &rep->respelled, &changed, dg) &&
             step(&c, cn_noops, &rep->removed, &changed, dg) &&
             step(&c, cn_fold, &rep->folded, &changed, dg) &&
             step(&c, cn_cse, &rep->merged, &changed, dg);
        if (!changed)
            break;
    }
    ir_compute_uses(g);
    rep->seconds = cpu_seconds() - t0;
    return ok;
}
