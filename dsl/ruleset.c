/* Rule sets: creation, freeing, and dsl_check, which resolves the sets and predicates, checks every
 * rule, makes rule names unique and looks for rules that can never fire. */
#include "dsl/sema.h"

#include "base/check.h"
#include "dsl/names.h"

#include <stdlib.h>
#include <string.h>

dsl_ruleset *dsl_ruleset_new(const dsl_options *opts)
{
    dsl_ruleset *rs = calloc(1, sizeof *rs);
    FR_CHECK(rs != NULL);
    rs->arena = ar_new();
    rs->state = ar_alloc(rs->arena, sizeof *rs->state);
    if (opts)
        rs->state->opts = *opts;
    return rs;
}

void dsl_ruleset_free(dsl_ruleset *rs)
{
    if (!rs)
        return;
    dsl_state *st = rs->state;
    for (size_t i = 0; i < st->sources.len; i++)
        free((char *)st->sources.items[i]->text);
    vec_free(&st->sources);
    vec_free(&st->rules);
    vec_free(&st->sets);
    vec_free(&st->preds);
    sm_free(&st->loaded);
    ar_free(rs->arena);
    free(rs);
}

/* ---- sets ---- */

/* A set's members: ops, aliases, and sets defined before it (so sets cannot form cycles). */
static void resolve_set(dsl_ruleset *rs, const sm_map *sets, dsl_set_def *set, dg_context *dg)
{
    VEC(ir_op) ops = {0};
    for (uint32_t i = 0; i < set->nmembers; i++) {
        dsl_token tok = set->members[i];
        const char *name = dsl_tok_text(set->src, tok);
        const dsl_set_def *other = sm_get(sets, name, tok.len);
        ir_op op;
        if (dsl_lookup_op(name, tok.len, &op)) {
            vec_push(&ops, op);
        } else if (other == set) {
            dg_error(dg, set->src, tok.offset, tok.len, "set '%s' contains itself", set->label);
            set->bad = true;
        } else if (other && other->ops == NULL && !other->bad) {
            dg_error(dg, set->src, tok.offset, tok.len,
                     "set '%s' is used before it is defined", other->label);
            set->bad = true;
        } else if (other) {
            for (uint32_t k = 0; k < other->nops; k++)
                vec_push(&ops, other->ops[k]);
            set->bad |= other->bad;
        } else {
            dsl_suggest s;
            dsl_suggest_init(&s, name, tok.len);
            dsl_suggest_ops(&s);
            char hint[128];
            dg_error(dg, set->src, tok.offset, tok.len, "unknown op '%.*s'%s", (int)tok.len, name,
                     dsl_suggest_hint(&s, hint, sizeof hint));
            set->bad = true;
        }
    }
    set->nops = (uint32_t)ops.len;
    set->ops = ar_alloc_array(rs->arena, ops.len, sizeof *set->ops);
    if (ops.len)
        memcpy(set->ops, ops.items, ops.len * sizeof *ops.items);
    vec_free(&ops);
}

void dsl_check_sets(dsl_ruleset *rs, sm_map *sets, dg_context *dg)
{
    dsl_state *st = rs->state;
    for (size_t i = 0; i < st->sets.len; i++) {
        dsl_set_def *set = st->sets.items[i];
        ir_op op;
        const dsl_set_def *old = sm_get(sets, set->label, set->name.len);
        if (dsl_lookup_op(set->label, set->name.len, &op)) {
            dg_error(dg, set->src, set->name.offset, set->name.len,
                     "set '%s' would hide the op of that name", set->label);
            set->bad = true;
        } else if (old) {
            dg_error(dg, set->src, set->name.offset, set->name.len, "set '%s' is defined twice",
                     set->label);
            dg_note(dg, old->src, old->name.offset, old->name.len, "first defined here");
            set->bad = true;
        } else {
            sm_put(sets, set->label, set->name.len, set);
        }
    }
    for (size_t i = 0; i < st->sets.len; i++)
        resolve_set(rs, sets, st->sets.items[i], dg);
}

/* ---- rules ---- */

/* Named rules must differ; two anonymous rules on one line get "file:LINE(2)", ... */
static void unique_name(dsl_ruleset *rs, sm_map *names, dsl_rule *rule, dg_context *dg)
{
    const dsl_rule *old = sm_get(names, rule->name, strlen(rule->name));
    if (old && rule->anonymous) {
        const char *base = rule->name;
        for (unsigned n = 2; old; n++) {
            rule->name = ar_printf(rs->arena, "%s(%u)", base, n);
            old = sm_get(names, rule->name, strlen(rule->name));
        }
    } else if (old) {
        dg_error(dg, rule->src, rule->src_offset, rule->src_len, "rule '%s' is defined twice",
                 rule->name);
        dg_note(dg, old->src, old->src_offset, old->src_len, "first defined here");
        rule->checked = false;
        return;
    }
    sm_put(names, rule->name, strlen(rule->name), rule);
}

bool dsl_check(dsl_ruleset *rs, dg_context *dg)
{
    dsl_state *st = rs->state;
    FR_CHECK(!st->checked);
    st->checked = true;
    size_t errors = dg_error_count(dg);
    sm_map sets = {0}, names = {0}, preds = {0};
    dsl_check_sets(rs, &sets, dg);
    dsl_check_preds(rs, &preds, dg);
    bool ops_used[IR_OP_COUNT] = {0};
    for (size_t i = 0; i < st->rules.len; i++) {
        dsl_rule_check rc = {.rs = rs, .st = st, .dg = dg, .rule = st->rules.items[i],
                             .sets = &sets, .preds = &preds, .ops_used = ops_used};
        dsl_check_rule(&rc);
        unique_name(rs, &names, rc.rule, dg);
    }
    rs->nops_used = 0;
    for (int op = 0; op < IR_OP_COUNT; op++)
        rs->nops_used += ops_used[op];
    dsl_warn_rules(rs, dg);
    sm_free(&sets);
    sm_free(&preds);
    sm_free(&names);
    return dg_error_count(dg) == errors;
}
