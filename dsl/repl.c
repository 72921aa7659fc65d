/* Checks of a rule's replacement: the target op (aliases resolve; a kernel must run it), its
 * operands, attributes (against the target's schema; a capture either names the op a node
 * matched or feeds an input port), exports, and the number of outputs. */
#include "dsl/sema.h"

#include "dsl/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_text(const dsl_rule_check *rc, dsl_token a, dsl_token b)
{
    return a.len == b.len &&
           memcmp(dsl_tok_text(rc->src, a), dsl_tok_text(rc->src, b), a.len) == 0;
}

static bool resolve_target(dsl_rule_check *rc, dsl_token tok, ir_op *op)
{
    const char *name = dsl_tok_text(rc->src, tok);
    if (dsl_lookup_op(name, tok.len, op))
        return true;
    if (sm_get(rc->sets, name, tok.len)) {
        dsl_rule_error(rc, tok.offset, tok.len,
                       "the target must be one op, and '%.*s' is a set", (int)tok.len, name);
        return false;
    }
    dsl_suggest s;
    dsl_suggest_init(&s, name, tok.len);
    dsl_suggest_ops(&s);
    char hint[128];
    dsl_rule_error(rc, tok.offset, tok.len, "unknown target op '%.*s'%s", (int)tok.len, name,
                   dsl_suggest_hint(&s, hint, sizeof hint));
    return false;
}

static void check_operands(dsl_rule_check *rc, const dsl_repl_syntax *syn, dsl_replacement *r)
{
    r->operands_explicit = syn->operands_written;
    r->noperands = syn->noperands;
    r->operands = ar_alloc_array(rc->rs->arena, syn->noperands, sizeof *r->operands);
    for (uint32_t i = 0; i < syn->noperands; i++)
        r->operands[i] = dsl_rule_ref(rc, syn->operands[i]);
}

/* An attribute set to a capture: the op name a node matched (`act = @a`, a STRING attribute of
 * the target), or else a value fed to the input port of that name (`residual = @res`). */
static void check_capture_attr(dsl_rule_check *rc, const dsl_attr_syntax *a, dsl_rattr *out,
                               const ir_attr_schema *schema, ir_op target)
{
    const dsl_value *v = a->value;
    out->capture = dsl_rule_ref_name(rc, v->s, v->src_offset, v->src_len,
                                     dsl_at_name(rc->rs->arena, v->s));
    if (!out->capture)
        return;
    const char *name = out->value.name;
    if (schema && schema->kind != IR_ATTR_STRING && out->capture->node->kind == DSL_PAT_ANY) {
        /* `epsilon = @eps`: the constant's value, read when the rule fires */
        out->kind = DSL_RATTR_CONST;
        out->value.kind = schema->kind;
        return;
    }
    if (schema) {
        if (schema->kind != IR_ATTR_STRING || out->capture->node->kind != DSL_PAT_OP) {
            dsl_rule_error(rc, v->src_offset, v->src_len,
                           "attribute '%s' of %s takes %s; a capture here must name an op (its "
                           "op name is used)", name, ir_op_name(target),
                           dsl_attr_kind_name(schema->kind));
            return;
        }
        /* `act` (and any NAME with a NAME_alpha beside it: SeparableConv's out_act,
         * SqueezeExcite's gate) is a fused op's activation: the rewriter also carries the
         * matched op's parameters (NAME_alpha, NAME_beta), so it gets a kind of its own */
        char alpha[96];
        snprintf(alpha, sizeof alpha, "%s_alpha", name);
        out->kind = strcmp(name, "act") == 0 || ir_op_attr_schema(target, alpha)
                        ? DSL_RATTR_ACT
                        : DSL_RATTR_OP_NAME;
        out->value.kind = IR_ATTR_STRING;
        return;
    }
    out->kind = DSL_RATTR_INPUT;
    out->port = -1;
    const dsl_options *o = &rc->st->opts;
    int port = o->input_port ? o->input_port(target, name, o->user) : -2;
    if (port == -1)
        dsl_rule_error(rc, a->name.offset, a->name.len,
                       "%s has neither an attribute nor an input named '%s'", ir_op_name(target),
                       name);
    else if (port >= 0)
        out->port = port;
}

static void check_attr(dsl_rule_check *rc, const dsl_attr_syntax *a, dsl_rattr *out, ir_op target)
{
    const char *name = ar_strndup(rc->rs->arena, dsl_tok_text(rc->src, a->name), a->name.len);
    const ir_attr_schema *schema = ir_op_attr_schema(target, name);
    out->value.name = name;
    out->src_offset = a->name.offset;
    out->src_len = a->value->src_offset + a->value->src_len - a->name.offset;
    if (a->value->kind == DSL_VAL_CAPTURE) {
        check_capture_attr(rc, a, out, schema, target);
        return;
    }
    if (!schema) {
        dsl_suggest s;
        dsl_suggest_init(&s, name, strlen(name));
        const ir_op_info *info = ir_op_info_get(target);
        for (uint32_t i = 0; i < info->nattrs; i++)
            dsl_suggest_add(&s, info->attrs[i].name);
        char hint[128];
        dsl_rule_error(rc, a->name.offset, a->name.len, "%s has no attribute '%s'%s",
                       ir_op_name(target), name, dsl_suggest_hint(&s, hint, sizeof hint));
        return;
    }
    out->kind = DSL_RATTR_LITERAL;
    dsl_convert_value(rc, a->value, schema->kind, name, ir_op_name(target), &out->value);
}

static void check_attrs(dsl_rule_check *rc, const dsl_repl_syntax *syn, dsl_replacement *r)
{
    r->attrs = ar_alloc_array(rc->rs->arena, syn->nattrs, sizeof *r->attrs);
    r->nattrs = syn->nattrs;
    for (uint32_t i = 0; i < syn->nattrs; i++) {
        for (uint32_t k = 0; k < i; k++)
            if (same_text(rc, syn->attrs[k]->name, syn->attrs[i]->name))
                dsl_rule_error(rc, syn->attrs[i]->name.offset, syn->attrs[i]->name.len,
                               "attribute '%.*s' is set twice", (int)syn->attrs[i]->name.len,
                               dsl_tok_text(rc->src, syn->attrs[i]->name));
        check_attr(rc, syn->attrs[i], &r->attrs[i], r->op);
    }
}

static void check_actions_named(dsl_rule_check *rc, const dsl_repl_syntax *syn, dsl_replacement *r)
{
    r->actions = ar_alloc_array(rc->rs->arena, syn->nactions, sizeof *r->actions);
    for (uint32_t i = 0; i < syn->nactions; i++) {
        dsl_token tok = syn->actions[i];
        const char *name = dsl_tok_text(rc->src, tok);
        int found = -1;
        for (int a = 0; a < DSL_ACTION_COUNT; a++)
            if (strlen(dsl_action_name((dsl_action)a)) == tok.len &&
                memcmp(dsl_action_name((dsl_action)a), name, tok.len) == 0)
                found = a;
        if (found < 0) {
            dsl_suggest s;
            dsl_suggest_init(&s, name, tok.len);
            for (int a = 0; a < DSL_ACTION_COUNT; a++)
                dsl_suggest_add(&s, dsl_action_name((dsl_action)a));
            char hint[128];
            dsl_rule_error(rc, tok.offset, tok.len, "unknown action '%.*s'%s", (int)tok.len, name,
                           dsl_suggest_hint(&s, hint, sizeof hint));
            continue;
        }
        for (uint32_t k = 0; k < r->nactions; k++)
            if (r->actions[k] == (dsl_action)found)
                dsl_rule_error(rc, tok.offset, tok.len, "action '%s' is listed twice",
                               dsl_action_name((dsl_action)found));
        r->actions[r->nactions++] = (dsl_action)found;
    }
}

/* `@s.N` in an export: the op captured as @s and N, which must name an output after the first
 * (output 0 is @s itself) that every op @s may match has. NULL after reporting. */
static dsl_capture *export_output(dsl_rule_check *rc, dsl_token tok, const char *text,
                                  uint32_t *index)
{
    unsigned long k;
    dsl_capture *cap = dsl_output_ref(rc, tok, &k);
    if (cap && k == 0) {
        uint32_t name_len = (uint32_t)(strchr(text, '.') - text);
        dsl_rule_error(rc, tok.offset, tok.len,
                       "'%s' is output 0 of '%.*s': export '%.*s' (a root's output 0 is the fused "
                       "node's own)", text, (int)name_len, text, (int)name_len, text);
        return NULL;
    }
    *index = (uint32_t)k;
    return cap;
}

/* `exports @v` names an op inside the pattern, whose value becomes an output of the fused node;
 * `exports @s.1` another output of an op, a root's too (Split@s(...) => FusedQKV exports @s.1,
 * @s.2: the fused node gives every part). */
static void check_exports(dsl_rule_check *rc, const dsl_repl_syntax *syn, dsl_replacement *r)
{
    r->exports = ar_alloc_array(rc->rs->arena, syn->nexports, sizeof *r->exports);
    r->export_outputs = ar_alloc_array(rc->rs->arena, syn->nexports, sizeof *r->export_outputs);
    for (uint32_t i = 0; i < syn->nexports; i++) {
        dsl_token tok = syn->exports[i];
        const char *text = ar_strndup(rc->rs->arena, dsl_tok_text(rc->src, tok), tok.len);
        uint32_t index = 0;
        dsl_capture *cap = text[0] == '@' && strchr(text, '.') ? export_output(rc, tok, text, &index)
                                                               : dsl_rule_ref(rc, tok);
        if (!cap)
            continue;
        for (uint32_t k = 0; k < r->nexports; k++)
            if (r->exports[k] == cap && r->export_outputs[k] == index)
                dsl_rule_error(rc, tok.offset, tok.len, "'%s' is exported twice",
                               index ? text : cap->name);
        if (index == 0 && (cap->node->kind != DSL_PAT_OP || cap->node->users == 0))
            dsl_rule_error(rc, tok.offset, tok.len,
                           "an export must name an op inside the pattern (not an input or a "
                           "root)");
        r->export_outputs[r->nexports] = index;
        r->exports[r->nexports++] = cap;
    }
}

/* Whether a node of op `op` is cheap to keep for other readers while a fusion absorbs it: one pass
 * over its data (elementwise, broadcast, movement, or flagged IR_OPF_CHEAP_SHARE, such as
 * DynamicQuantizeLinear), never a contraction or a window (a Conv or MatMul computed twice). */
static bool cheap_to_share(ir_op op)
{
    const ir_op_info *info = ir_op_info_get(op);
    return info->cls == IR_CLASS_ELEMENTWISE || info->cls == IR_CLASS_BROADCAST ||
           info->cls == IR_CLASS_MOVEMENT || (info->flags & IR_OPF_CHEAP_SHARE);
}

/* `shares @t`: an op inside the pattern (not a leaf, not a root, not exported), each of whose
 * alternatives is cheap to share. */
static void check_shares(dsl_rule_check *rc, const dsl_repl_syntax *syn, dsl_replacement *r)
{
    r->shares = ar_alloc_array(rc->rs->arena, syn->nshares, sizeof *r->shares);
    for (uint32_t i = 0; i < syn->nshares; i++) {
        dsl_token tok = syn->shares[i];
        dsl_capture *cap = dsl_rule_ref(rc, tok);
        if (!cap)
            continue;
        bool twice = false;
        for (uint32_t k = 0; k < r->nshares; k++)
            twice |= r->shares[k] == cap;
        for (uint32_t k = 0; k < r->nexports; k++)
            if (r->exports[k] == cap)
                dsl_rule_error(rc, tok.offset, tok.len,
                               "'%s' is exported; a shared node is not an output of the fused node",
                               cap->name);
        if (twice)
            dsl_rule_error(rc, tok.offset, tok.len, "'%s' is shared twice", cap->name);
        const dsl_pattern *n = cap->node;
        if (n->kind != DSL_PAT_OP || n->users == 0) {
            dsl_rule_error(rc, tok.offset, tok.len,
                           "a shared node must name an op inside the pattern (not an input or a "
                           "root)");
            continue;
        }
        for (uint32_t k = 0; k < n->nops; k++)
            if (!cheap_to_share(n->ops[k])) {
                dsl_rule_error(
                    rc, tok.offset, tok.len,
                    "'%s' may be %s, which is not cheap to keep for other readers: only "
                    "elementwise, broadcast and movement ops (and DynamicQuantizeLinear) "
                    "may be shared",
                    cap->name, ir_op_name(n->ops[k]));
                break;
            }
        r->shares[r->nshares++] = cap;
    }
}

/* The fused node's inputs (operands plus port bindings) and outputs (one per root, plus the
 * exports) must fit the target's arity. */
static void check_counts(dsl_rule_check *rc, dsl_replacement *r)
{
    const ir_op_info *info = ir_op_info_get(r->op);
    uint32_t inputs = r->noperands;
    for (uint32_t i = 0; i < r->nattrs; i++)
        inputs += r->attrs[i].kind == DSL_RATTR_INPUT;
    if (r->operands_explicit && (inputs < info->min_inputs ||
                                 (info->max_inputs != IR_VARIADIC && inputs > info->max_inputs)))
        dsl_rule_error(rc, r->src_offset, r->src_len, "%s takes %s, but %u %s given", info->name,
                       dsl_count_inputs(rc, info), inputs, inputs == 1 ? "is" : "are");
    uint32_t outputs = rc->rule->nroots + r->nexports;
    if (outputs > info->max_outputs)
        dsl_rule_error(rc, r->src_offset, r->src_len,
                       "%s has at most %u output%s, but the pattern needs %u (%u root%s, %u "
                       "export%s)", info->name, info->max_outputs, info->max_outputs == 1 ? "" : "s",
                       outputs, rc->rule->nroots, rc->rule->nroots == 1 ? "" : "s", r->nexports,
                       r->nexports == 1 ? "" : "s");
}

static void check_forward(dsl_rule_check *rc, const dsl_repl_syntax *syn, dsl_replacement *r)
{
    r->kind = DSL_REPL_FORWARD;
    r->src_offset = syn->forward.offset;
    r->src_len = syn->forward.len;
    r->text = ar_strndup(rc->rs->arena, dsl_tok_text(rc->src, syn->forward), syn->forward.len);
    r->forward = dsl_rule_ref(rc, syn->forward);
    if (rc->rule->nroots > 1)
        dsl_rule_error(rc, r->src_offset, r->src_len,
                       "a horizontal pattern cannot be replaced by one value");
    else if (r->forward && r->forward->node->users == 0)
        dsl_rule_error(rc, r->src_offset, r->src_len,
                       "'=> %s' must name a value inside the pattern, not its root", r->text);
}

/* Without a target the attributes and exports cannot be checked; their captures still count as
 * used, so that the one error is not followed by "never used" ones. */
static void count_references(dsl_rule_check *rc, const dsl_repl_syntax *syn)
{
    for (uint32_t i = 0; i < syn->nexports; i++)
        dsl_rule_ref(rc, syn->exports[i]);
    for (uint32_t i = 0; i < syn->nshares; i++)
        dsl_rule_ref(rc, syn->shares[i]);
    for (uint32_t i = 0; i < syn->nattrs; i++) {
        const dsl_value *v = syn->attrs[i]->value;
        if (v->kind == DSL_VAL_CAPTURE)
            dsl_rule_ref_name(rc, v->s, v->src_offset, v->src_len,
                              dsl_at_name(rc->rs->arena, v->s));
    }
}

void dsl_check_replacement(dsl_rule_check *rc)
{
    const dsl_repl_syntax *syn = rc->rule->syntax->repl;
    dsl_replacement *r = &rc->rule->repl;
    if (!syn->target.len) {
        check_forward(rc, syn, r);
        return;
    }
    r->kind = DSL_REPL_OP;
    r->src_offset = syn->target.offset;
    r->src_len = syn->target.len;
    r->text = ar_strndup(rc->rs->arena, dsl_tok_text(rc->src, syn->target), syn->target.len);
    check_operands(rc, syn, r);
    check_actions_named(rc, syn, r);
    if (!resolve_target(rc, syn->target, &r->op)) {
        count_references(rc, syn);
        return;
    }
    rc->target_ok = true;
    rc->ops_used[r->op] = true;
    const dsl_options *o = &rc->st->opts;
    if (o->has_kernel && !o->has_kernel(r->op, o->user))
        dsl_rule_error(rc, r->src_offset, r->src_len, "no registered kernel implements %s",
                       ir_op_name(r->op));
    check_attrs(rc, syn, r);
    check_exports(rc, syn, r);
    check_shares(rc, syn, r);
    check_counts(rc, r);
    dsl_check_target_inputs(rc, r);
}
