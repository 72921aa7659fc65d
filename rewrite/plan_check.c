/* The tentative fused node: the plan built aside, its type inference run and compared with the
 * types it replaces, the target backend asked for a kernel, the actions run and the new
 * constants computed, all before anything in the graph changes. */
#include "rewrite/internal.h"

#include <string.h>

bool rw_same_type(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    if (a->layout && b->layout && a->layout != b->layout)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Whether the fused node's type `got` may stand for the type `want` the matched ops gave their
 * output: the same type, or one that knows a dim where the original's inference left it unknown
 * (`?`), every known dim the same. That is sound: the fused node computes what the matched ops
 * compute, so wherever they run their result has the fused node's shape; the `?` only said that
 * inference could not tell (the causal mask `Slice(bias[1,1,N,N], T - S, T)`, whose rows are
 * min(T, N) - (T - S), which no dim expression writes). The output value takes the fused type, and
 * the consumers' types are inferred again from it. A dim the original knows is never replaced. */
static bool fused_type_fits(const ir_type *want, const ir_type *got)
{
    if (want->dtype != got->dtype || want->rank != got->rank)
        return false;
    if (want->layout && got->layout && want->layout != got->layout)
        return false;
    for (int i = 0; i < want->rank; i++)
        if (want->dims[i] != got->dims[i] && want->dims[i] != IR_DIM_UNKNOWN)
            return false;
    return true;
}

static ir_node *tentative(rw_plan *p)
{
    ar_arena *arena = p->ctx->scratch;
    ir_node *t = ar_alloc(arena, sizeof *t);
    t->op = p->rule->repl.op;
    t->id = RW_TENTATIVE_ID;
    t->ninputs = (uint32_t)p->inputs.len;
    t->inputs = ar_alloc_array(arena, t->ninputs, sizeof *t->inputs);
    for (uint32_t i = 0; i < t->ninputs; i++)
        t->inputs[i] = p->inputs.items[i].v;
    t->nattrs = (uint32_t)p->attrs.len;
    t->attrs = ar_alloc_array(arena, t->nattrs, sizeof *t->attrs);
    if (t->nattrs) /* an empty vector's items are NULL, which memcpy may not be given */
        memcpy(t->attrs, p->attrs.items, t->nattrs * sizeof *t->attrs);
    t->noutputs = (uint16_t)p->outputs.len; /* a rule names at most the op's outputs (< 256) */
    t->outputs = ar_alloc_array(arena, t->noutputs, sizeof *t->outputs);
    for (uint32_t i = 0; i < t->noutputs; i++) {
        ir_value *v = ar_alloc(arena, sizeof *v);
        v->name = p->outputs.items[i]->name;
        v->kind = IR_VALUE_NODE;
        v->producer = t;
        v->out_index = i;
        ir_value_set_type(p->g, v, &(ir_type){.rank = -1});
        t->outputs[i] = v;
    }
    t->src_offset = p->roots.items[0]->src_offset;
    t->src_len = p->roots.items[0]->src_len;
    return t;
}

static bool check_tentative(rw_plan *p, char *why)
{
    ir_node *t = p->tentative = tentative(p);
    char msg[RW_WHY_SIZE];
    dg_context *dg = rw_quiet(p->ctx);
    bool inferred = ir_op_info_get(t->op)->infer(p->g, t, dg);
    if (!inferred)
        rw_first_error(dg, msg, sizeof msg);
    rw_quiet_done(p->ctx, dg);
    if (!inferred)
        return rw_why(why, "shape: the fused node would be invalid: %s", msg);
    for (uint32_t i = 0; i < t->noutputs; i++) {
        const ir_type *want = p->outputs.items[i]->type, *got = t->outputs[i]->type;
        if (!fused_type_fits(want, got)) {
            char a[160], b[160];
            return rw_why(why, "shape: the fused node gives %s for '%s', which is %s",
                          ir_type_format(p->g, got, a, sizeof a), p->outputs.items[i]->name,
                          ir_type_format(p->g, want, b, sizeof b));
        }
    }
    if (!rw_check_layout(t, why))
        return false;
    /* A plain ONNX op has no backend kernel to ask about: every executor runs it (the CUDA one on
     * its CPU reference kernel, as it ran the plain ops the match replaces), so conv_bn's Conv or
     * layernorm's LayerNormalization fuse on every target and later rules can take them further. */
    char kn_why[KN_WHY_SIZE] = "";
    if (kn_fused_entry_get(t->op) && !kn_supports(p->g, t, p->ctx->opts.target, kn_why))
        return rw_why(why, "kernel: %s", kn_why);
    return true;
}

static bool compute_consts(rw_plan *p, char *why)
{
    if (p->new_bytes > p->ctx->budget_left)
        return rw_why(why,
                      "budget: folding needs %lld bytes of new constants and %lld of the budget are "
                      "left (%d times the graph's constants, at most 8 GiB)",
                      (long long)p->new_bytes, (long long)p->ctx->budget_left, RW_BUDGET_FACTOR);
    for (size_t i = 0; i < p->consts.len; i++) {
        rw_newconst *c = p->consts.items[i];
        if (!c->compute(p, c, why))
            return false;
    }
    return true;
}

static bool run_actions(rw_plan *p, char *why)
{
    const dsl_replacement *repl = &p->rule->repl;
    for (uint32_t i = 0; i < repl->nactions; i++) {
        if (!rw_action_get(repl->actions[i])(p, why))
            return false;
    }
    return true;
}

/* A helper node takes the place of a member that precedes the root: only a single-output
 * replacement keeps every member before its root. */
static bool check_helpers(rw_plan *p, char *why)
{
    if (p->helpers.len && p->outputs.len != 1)
        return rw_why(why, "replacement: helper nodes need a replacement with one output");
    return true;
}

bool rw_plan_replacement(rw_plan *p, char *why)
{
    rw_build_inputs(p);
    return rw_build_attrs(p, why) && run_actions(p, why) && check_helpers(p, why) &&
           rw_check_kept(p, why) && rw_place_ports(p, why) && rw_check_inputs(p, why) &&
           rw_check_attrs(p, why) && check_tentative(p, why) && compute_consts(p, why);
}
