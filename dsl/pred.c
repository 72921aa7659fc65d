/* Named guard predicates: `pred bias_vector(@b, @w) = rank(@b) == 1 && dim(@b, 0) == dim(@w, -1)`.
 *
 * A definition is checked once (its name, its parameters, the calls in its body, recursion). A
 * guard that calls it gets, in place of the call, a copy of the body with a copy of each argument
 * where its parameter stood; the copy is then type checked like any guard, in the rule's terms.
 * So a predicate costs nothing when rules match, and the matcher, the prover and the printer see
 * an ordinary guard. The copy remembers where it came from (dsl_expr's src, pred and call), so
 * errors point into the body with a note at the call, and near misses name the predicate. */
#include "dsl/sema.h"

#include "base/check.h"
#include "dsl/names.h"

#include <string.h>

/* Predicates may call predicates; deeper than this is refused (it bounds the checks' recursion).
 * A guard's expansions together may copy at most MAX_PRED_NODES expressions (a predicate that
 * calls another twice, which calls another twice, ... would otherwise grow exponentially). */
enum { MAX_PRED_NESTING = 16, MAX_PRED_NODES = 1 << 16 };

static bool is_function(const char *name)
{
    static const char *const names[] = {
#define DSL_FN_NAME(id, name, nargs, summary) name,
        DSL_FUNCTIONS(DSL_FN_NAME)
#undef DSL_FN_NAME
    };
    for (size_t i = 0; i < FR_COUNT_OF(names); i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static const char *param_name(const dsl_pred_def *def, uint32_t i)
{
    return dsl_tok_text(def->pub.src, def->params[i]) + 1; /* without '@'; not NUL-terminated */
}

static int find_param(const dsl_pred_def *def, const char *name)
{
    size_t len = strlen(name);
    for (uint32_t i = 0; i < def->nparams; i++)
        if (def->params[i].len - 1 == len && memcmp(param_name(def, i), name, len) == 0)
            return (int)i;
    return -1;
}

static const char *plural(uint32_t n)
{
    return n == 1 ? "" : "s";
}

/* ---- checking definitions ---- */

typedef struct {
    dsl_ruleset *rs;
    dg_context *dg;
    sm_map *preds;
} defs;

static void def_error(const defs *d, dsl_pred_def *def, uint32_t offset, uint32_t len,
                      const char *msg)
{
    dg_error(d->dg, def->pub.src, offset, len, "%s", msg);
    def->bad = true;
}

/* The body's captures must be parameters, its calls functions or predicates with the right number
 * of arguments; uses[] counts each parameter's uses. */
static void check_body(const defs *d, dsl_pred_def *def, const dsl_expr *e, uint32_t *uses)
{
    ar_arena *arena = d->rs->arena;
    if (e->kind == DSL_EXPR_CAPTURE) {
        int k = find_param(def, e->v.s);
        if (k < 0)
            def_error(d, def, e->src_offset, e->src_len,
                      ar_printf(arena, "'@%s' is not a parameter of predicate '%s'", e->v.s,
                                def->pub.name));
        else
            uses[k]++;
    }
    if (e->kind == DSL_EXPR_CALL && !is_function(e->v.s)) {
        const dsl_pred_def *callee = sm_get(d->preds, e->v.s, strlen(e->v.s));
        uint32_t len = (uint32_t)strlen(e->v.s);
        if (!callee) {
            dsl_suggest sg;
            dsl_suggest_init(&sg, e->v.s, len);
            for (size_t i = 0; i < d->rs->state->preds.len; i++)
                dsl_suggest_add(&sg, d->rs->state->preds.items[i]->pub.name);
            char hint[128];
            def_error(d, def, e->src_offset, len,
                      ar_printf(arena, "unknown function or predicate '%s'%s", e->v.s,
                                dsl_suggest_hint(&sg, hint, sizeof hint)));
        } else if (callee->nparams != e->nargs) {
            def_error(d, def, e->src_offset, e->src_len,
                      ar_printf(arena, "predicate '%s' takes %u argument%s, but %u %s given",
                                e->v.s, callee->nparams, plural(callee->nparams), e->nargs,
                                e->nargs == 1 ? "is" : "are"));
        }
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        check_body(d, def, e->args[i], uses);
}

static void check_params(const defs *d, dsl_pred_def *def)
{
    ar_arena *arena = d->rs->arena;
    uint32_t *uses = ar_alloc_array(arena, def->nparams + 1, sizeof *uses);
    bool *repeated = ar_alloc_array(arena, def->nparams + 1, sizeof *repeated);
    for (uint32_t i = 0; i < def->nparams; i++)
        for (uint32_t k = 0; k < i && !repeated[i]; k++)
            if (def->params[i].len == def->params[k].len &&
                memcmp(param_name(def, i), param_name(def, k), def->params[i].len - 1) == 0) {
                def_error(d, def, def->params[i].offset, def->params[i].len,
                          ar_printf(arena, "parameter '%.*s' is written twice",
                                    (int)def->params[i].len,
                                    dsl_tok_text(def->pub.src, def->params[i])));
                repeated[i] = true;
            }
    check_body(d, def, def->body, uses);
    for (uint32_t i = 0; i < def->nparams; i++)
        if (!uses[i] && !repeated[i])
            def_error(d, def, def->params[i].offset, def->params[i].len,
                      ar_printf(arena, "parameter '%.*s' of predicate '%s' is never used",
                                (int)def->params[i].len, dsl_tok_text(def->pub.src, def->params[i]),
                                def->pub.name));
}

enum { UNSEEN = 0, ON_PATH, DONE };

/* A predicate that calls itself, directly or through others, could never be expanded. The call
 * graph is walked depth first from each predicate; the call that closes a cycle is reported. */
static bool find_cycle(const defs *d, dsl_pred_def *def, const dsl_expr *e, dsl_pred_def *top)
{
    if (e->kind == DSL_EXPR_CALL && !is_function(e->v.s)) {
        dsl_pred_def *callee = sm_get(d->preds, e->v.s, strlen(e->v.s));
        if (callee && callee->mark == ON_PATH) {
            def_error(d, def, e->src_offset, (uint32_t)strlen(e->v.s),
                      ar_printf(d->rs->arena,
                                callee == def ? "predicate '%s' calls itself"
                                              : "predicate '%s' calls itself through '%s'",
                                callee->pub.name, def->pub.name));
            top->bad = callee->bad = true;
            return true;
        }
        if (callee && callee->mark == UNSEEN) {
            callee->mark = ON_PATH;
            bool cycle = find_cycle(d, callee, callee->body, top);
            callee->mark = DONE;
            if (cycle) {
                def->bad = true;
                return true;
            }
        }
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (find_cycle(d, def, e->args[i], top))
            return true;
    return false;
}

void dsl_check_preds(dsl_ruleset *rs, sm_map *preds, dg_context *dg)
{
    dsl_state *st = rs->state;
    defs d = {rs, dg, preds};
    for (size_t i = 0; i < st->preds.len; i++) {
        dsl_pred_def *def = st->preds.items[i];
        const char *name = def->pub.name;
        const dsl_pred_def *old = sm_get(preds, name, strlen(name));
        if (is_function(name)) {
            def_error(
                &d, def, def->name.offset, def->name.len,
                ar_printf(rs->arena, "predicate '%s' would hide the function of that name", name));
        } else if (old) {
            def_error(&d, def, def->name.offset, def->name.len,
                      ar_printf(rs->arena, "predicate '%s' is defined twice", name));
            dg_note(dg, old->pub.src, old->name.offset, old->name.len, "first defined here");
        } else {
            sm_put(preds, name, strlen(name), def);
        }
    }
    for (size_t i = 0; i < st->preds.len; i++)
        check_params(&d, st->preds.items[i]);
    /* Cycles only through predicates that were registered under their name. */
    for (size_t i = 0; i < st->preds.len; i++) {
        dsl_pred_def *def = st->preds.items[i];
        if (sm_get(preds, def->pub.name, strlen(def->pub.name)) != def || def->mark == DONE)
            continue;
        def->mark = ON_PATH;
        find_cycle(&d, def, def->body, def);
        def->mark = DONE;
    }
}

void dsl_suggest_preds(const dsl_rule_check *rc, dsl_suggest *s)
{
    for (size_t i = 0; i < rc->st->preds.len; i++)
        dsl_suggest_add(s, rc->st->preds.items[i]->pub.name);
}

/* ---- expanding a call ---- */

/* A copy of an argument (a rule's expression, not checked yet: each copy is checked on its own). */
static dsl_expr *copy_expr(ar_arena *arena, const dsl_expr *e)
{
    dsl_expr *c = ar_alloc(arena, sizeof *c);
    *c = *e;
    if (e->nargs) {
        c->args = ar_alloc_array(arena, e->nargs, sizeof *c->args);
        for (uint32_t i = 0; i < e->nargs; i++)
            c->args[i] = copy_expr(arena, e->args[i]);
    }
    return c;
}

/* A copy of the body with the arguments in place of the parameters, each node marked as written in
 * the predicate's source and belonging to the expansion rooted at `root`. */
static dsl_expr *instantiate(ar_arena *arena, const dsl_pred_def *def, const dsl_expr *e,
                             dsl_expr *const *args, const dsl_expr *root)
{
    if (e->kind == DSL_EXPR_CAPTURE) {
        int k = find_param(def, e->v.s);
        FR_CHECK(k >= 0); /* dsl_check_preds made sure */
        return copy_expr(arena, args[k]);
    }
    dsl_expr *c = ar_alloc(arena, sizeof *c);
    *c = *e;
    c->src = def->pub.src;
    c->call = root;
    if (e->nargs) {
        c->args = ar_alloc_array(arena, e->nargs, sizeof *c->args);
        for (uint32_t i = 0; i < e->nargs; i++)
            c->args[i] = instantiate(arena, def, e->args[i], args, root);
    }
    return c;
}

/* The body's expressions, each argument counted as one (the body nests at most DSL_MAX_DEPTH). */
static uint32_t count_nodes(const dsl_expr *e)
{
    uint32_t n = 1;
    for (uint32_t i = 0; i < e->nargs; i++)
        n += count_nodes(e->args[i]);
    return n;
}

bool dsl_expand_pred(dsl_rule_check *rc, dsl_expr *call, dsl_type *type)
{
    dsl_pred_def *def = sm_get(rc->preds, call->v.s, strlen(call->v.s));
    if (!def)
        return false;
    *type = DSL_TYPE_ERROR;
    if (def->bad || call->nargs != def->nparams) {
        if (!def->bad)
            dsl_expr_error(rc, call, call->src_offset, call->src_len,
                           "predicate '%s' takes %u argument%s, but %u %s given", def->pub.name,
                           def->nparams, plural(def->nparams), call->nargs,
                           call->nargs == 1 ? "is" : "are");
        rc->ok = false; /* a bad definition was reported where it is written */
        for (uint32_t i = 0; i < call->nargs; i++) /* they are used: no "never used" after this */
            if (call->args[i]->kind == DSL_EXPR_CAPTURE)
                dsl_check_expr(rc, call->args[i]);
        return true;
    }
    /* past a limit, one error per guard: the calls after it would repeat it thousands of times */
    uint32_t size = count_nodes(def->body);
    if (rc->pred_nesting >= MAX_PRED_NESTING || size > MAX_PRED_NODES - rc->pred_nodes) {
        if (!rc->pred_limit)
            dsl_expr_error(rc, call, call->src_offset, call->src_len,
                           rc->pred_nesting >= MAX_PRED_NESTING
                               ? "predicates call each other more than %d deep"
                               : "predicates expand this guard to more than %d expressions",
                           rc->pred_nesting >= MAX_PRED_NESTING ? MAX_PRED_NESTING
                                                                : MAX_PRED_NODES);
        rc->pred_limit = true;
        rc->ok = false;
        return true;
    }
    rc->pred_nodes += size;
    dsl_expr *body = instantiate(rc->rs->arena, def, def->body, call->args, call);
    /* The copy takes the call's place; its root keeps the call's place in the text. */
    dsl_expr site = *call;
    *call = *body;
    call->src_offset = site.src_offset;
    call->src_len = site.src_len;
    call->src = site.src;
    call->call = site.call;
    call->pred = &def->pub;
    rc->pred_nesting++;
    *type = dsl_check_expr(rc, call);
    rc->pred_nesting--;
    return true;
}
