/* The action table (dsl.h, DSL_ACTIONS): the weight transformations a replacement may ask for.
 * The rewriter performs them; here each action's needs are checked against the pattern, so that
 * a rule cannot ask for a transformation that cannot work (fold_bn across a Relu, ...). Whether
 * the weights are really constant is checked again on the graph, at rewrite time. */
#include "dsl/sema.h"

#include <string.h>

static const char *const names[] = {
#define DSL_ACTION_ROW(id, name) [DSL_ACTION_##id] = #name,
    DSL_ACTIONS(DSL_ACTION_ROW)
#undef DSL_ACTION_ROW
};

_Static_assert(sizeof names / sizeof names[0] == DSL_ACTION_COUNT, "one name per action");

const char *dsl_action_name(dsl_action a)
{
    return names[a];
}

static bool is_single(const dsl_pattern *p, ir_op op)
{
    return p->kind == DSL_PAT_OP && p->nops == 1 && p->ops[0] == op;
}

/* Every alternative of p is a or b. */
static bool only_ops(const dsl_pattern *p, ir_op a, ir_op b)
{
    if (p->kind != DSL_PAT_OP || p->nops == 0)
        return false;
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i] != a && p->ops[i] != b)
            return false;
    return true;
}

/* fold_bn: a BatchNormalization whose input comes straight from a Conv or ConvTranspose; its
 * scale, bias, mean and variance must be inputs of the match, not computed inside it. */
static void check_fold_bn(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    const dsl_pattern *first_bn = NULL;
    for (uint32_t i = 0; i < rule->nnodes; i++) {
        const dsl_pattern *bn = rule->nodes[i];
        if (!is_single(bn, IR_OP_BatchNormalization) || bn->optional)
            continue;
        first_bn = first_bn ? first_bn : bn;
        const dsl_pattern *in = bn->noperands ? bn->operands[0] : NULL;
        if (!in || in->optional ||
            !(only_ops(in, IR_OP_Conv, IR_OP_ConvTranspose) || is_single(in, IR_OP_MatMul)))
            continue;
        for (uint32_t k = 1; k < bn->noperands; k++) {
            if (bn->operands[k]->kind == DSL_PAT_OP) {
                dsl_rule_error(rc, at.offset, at.len,
                               "fold_bn needs constant BatchNormalization parameters, but "
                               "operand %u is computed by %s", k, bn->operands[k]->text);
                return;
            }
        }
        return;
    }
    if (!first_bn) {
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_bn needs a BatchNormalization (not optional) in the pattern");
        return;
    }
    const dsl_pattern *in = first_bn->noperands ? first_bn->operands[0] : NULL;
    const char *source = !in || in->kind != DSL_PAT_OP
                             ? "its input is not matched by the pattern"
                             : ar_printf(rc->rs->arena, "its input comes from %s%s", in->text,
                                         in->optional ? "?" : "");
    dsl_rule_error(rc, at.offset, at.len,
                   "fold_bn needs the BatchNormalization's input to come straight from a Conv, "
                   "ConvTranspose or MatMul, but %s", source);
    dsl_rule_note(rc, first_bn->src_offset, first_bn->src_len, "the BatchNormalization");
}

/* The projection of a concat_weights root: the root itself (a MatMul or Gemm), or the MatMul or
 * Gemm under a bias Add(MatMul(@x, @w:const), @b:const), in either order; NULL otherwise. */
static const dsl_pattern *projection_of(const dsl_pattern *root)
{
    if (only_ops(root, IR_OP_MatMul, IR_OP_Gemm))
        return root;
    if (!is_single(root, IR_OP_Add) || root->optional || root->noperands != 2)
        return NULL;
    for (uint32_t k = 0; k < 2; k++) {
        const dsl_pattern *mm = root->operands[k], *b = root->operands[1 - k];
        if (only_ops(mm, IR_OP_MatMul, IR_OP_Gemm) && !mm->optional && b->kind == DSL_PAT_ANY &&
            b->preds.is_const)
            return mm;
    }
    return NULL;
}

/* concat_weights: two or more MatMul/Gemm roots (each optionally plus a constant bias) reading one
 * input, each with a constant weight. */
static void check_concat_weights(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    if (rule->nroots < 2) {
        dsl_rule_error(rc, at.offset, at.len,
                       "concat_weights needs a horizontal pattern: two or more MatMuls joined "
                       "with '&'");
        return;
    }
    const dsl_pattern *input = NULL;
    for (uint32_t i = 0; i < rule->nroots; i++) {
        const dsl_pattern *root = projection_of(rule->roots[i]);
        if (!root) {
            root = rule->roots[i];
            dsl_rule_error(rc, root->src_offset, root->src_len,
                           "concat_weights works on MatMul or Gemm roots, not %s", root->text);
            return;
        }
        if (root->noperands < 2) {
            dsl_rule_error(rc, root->src_offset, root->src_len,
                           "concat_weights needs each root's input and weight written: "
                           "MatMul(@x, @w:const)");
            return;
        }
        input = input ? input : root->operands[0];
        if (root->operands[0] != input) {
            dsl_rule_error(rc, root->operands[0]->src_offset, root->operands[0]->src_len,
                           "concat_weights needs every root to read the same input");
            return;
        }
        const dsl_pattern *w = root->operands[1];
        if (w->kind != DSL_PAT_ANY || !w->preds.is_const) {
            dsl_rule_error(rc, w->src_offset, w->src_len,
                           "concat_weights needs constant weights: write '%s:const'",
                           w->kind == DSL_PAT_ANY ? w->text : "@w");
            return;
        }
    }
}

/* A Conv, MatMul, Gemm or GemmEpilogue (every alternative), present in every match. */
static bool is_weighted(const dsl_pattern *p)
{
    if (p->kind != DSL_PAT_OP || p->optional || p->nops == 0)
        return false;
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i] != IR_OP_Conv && p->ops[i] != IR_OP_MatMul && p->ops[i] != IR_OP_Gemm &&
            p->ops[i] != IR_OP_GemmEpilogue)
            return false;
    return true;
}

/* An Add of a MatMul's output and an input of the match (a bias): (x @ W + b) * s folds too. */
static bool is_biased_matmul(const dsl_pattern *p)
{
    if (!is_single(p, IR_OP_Add) || p->optional || p->noperands < 2)
        return false;
    for (uint32_t k = 0; k < 2; k++)
        if (is_single(p->operands[k], IR_OP_MatMul) && !p->operands[k]->optional &&
            p->operands[1 - k]->kind == DSL_PAT_ANY)
            return true;
    return false;
}

/* fold_scale: a Mul (either order) or Div of a Conv/MatMul/Gemm/GemmEpilogue output by a scale that is an
 * input of the match (its constness and shape are checked on the graph). */
static void check_fold_scale(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    for (uint32_t i = 0; i < rule->nnodes; i++) {
        const dsl_pattern *p = rule->nodes[i];
        bool mul = is_single(p, IR_OP_Mul), div = is_single(p, IR_OP_Div);
        if ((!mul && !div) || p->optional || p->noperands < 2)
            continue;
        for (uint32_t g = 0; g < (mul ? 2u : 1u); g++)
            if ((is_weighted(p->operands[g]) || is_biased_matmul(p->operands[g])) &&
                p->operands[1 - g]->kind == DSL_PAT_ANY)
                return;
    }
    dsl_rule_error(rc, at.offset, at.len,
                   "fold_scale needs a Mul or Div of a Conv, MatMul, Gemm or GemmEpilogue output by "
                   "a scale that is an input of the pattern, as in Mul(Conv, @s:const)");
}

static bool is_gemm(const dsl_pattern *p);

/* fold_transpose: a Transpose feeding operand A or B of a MatMul, Gemm or GemmEpilogue, and a
 * target whose transA/transB flags can absorb it. */
static void check_fold_transpose(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    bool found = false;
    for (uint32_t i = 0; i < rule->nnodes && !found; i++) {
        const dsl_pattern *p = rule->nodes[i];
        if (!is_gemm(p))
            continue;
        for (uint32_t k = 0; k < 2 && k < p->noperands; k++) {
            const dsl_pattern *o = p->operands[k];
            if (is_single(o, IR_OP_Cast) && !o->optional && o->noperands > 0)
                o = o->operands[0]; /* Transpose > Cast > GEMM */
            found |= is_single(o, IR_OP_Transpose) && !o->optional;
        }
    }
    if (!found) {
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_transpose needs a Transpose feeding input A or B of a MatMul, Gemm or "
                       "GemmEpilogue");
        return;
    }
    const dsl_replacement *r = &rule->repl;
    if (rc->target_ok && (!ir_op_attr_schema(r->op, "transA") ||
                          !ir_op_attr_schema(r->op, "transB")))
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_transpose needs a target with transA and transB attributes, and %s "
                       "has none", ir_op_name(r->op));
}

static bool is_transpose(const dsl_pattern *p)
{
    return is_single(p, IR_OP_Transpose) && !p->optional;
}

/* fold_attention: a MatMul whose second operand is a Transpose (the scores' K^T), or a Mul of one
 * (torch's split scale, Mul(Transpose(@k), @b)), and Attention as the target. */
static void check_fold_attention(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    bool found = false;
    for (uint32_t i = 0; i < rule->nnodes && !found; i++) {
        const dsl_pattern *p = rule->nodes[i];
        if (!is_single(p, IR_OP_MatMul) || p->optional || p->noperands < 2)
            continue;
        const dsl_pattern *b = p->operands[1];
        found = is_transpose(b) || (is_single(b, IR_OP_Mul) && !b->optional && b->noperands >= 2 &&
                                    (is_transpose(b->operands[0]) || is_transpose(b->operands[1])));
    }
    if (!found)
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_attention needs a MatMul whose second operand is a Transpose (the "
                       "scores' K^T), as in MatMul(@q, Transpose(@k)), or a Mul of one");
    else if (rc->target_ok && rule->repl.op != IR_OP_Attention)
        dsl_rule_error(rc, at.offset, at.len, "fold_attention needs Attention as the target, not %s",
                       ir_op_name(rule->repl.op));
}

/* The convolutions fold_pad pads: Conv, FusedConvAct and SeparableConv (every alternative). */
static bool is_padded_conv(const dsl_pattern *p)
{
    if (p->kind != DSL_PAT_OP || p->optional || p->nops == 0)
        return false;
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i] != IR_OP_Conv && p->ops[i] != IR_OP_FusedConvAct &&
            p->ops[i] != IR_OP_SeparableConv && p->ops[i] != IR_OP_AveragePool)
            return false;
    return true;
}

/* fold_pad: a Pad (not optional) whose output is operand 0 of a Conv, FusedConvAct or
 * SeparableConv (not optional), and a target with a `pads` attribute to take the amounts. Mode,
 * value and amounts are checked on the graph when the rule fires. */
static void check_fold_pad(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    bool found = false;
    for (uint32_t i = 0; i < rule->nnodes && !found; i++) {
        const dsl_pattern *p = rule->nodes[i];
        found = is_padded_conv(p) && p->noperands >= 1 && is_single(p->operands[0], IR_OP_Pad) &&
                !p->operands[0]->optional;
    }
    if (!found)
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_pad needs a Pad feeding the data input of a Conv, FusedConvAct, "
                       "SeparableConv or AveragePool, as in Pad > Conv");
    else if (rc->target_ok && !ir_op_attr_schema(rule->repl.op, "pads"))
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_pad needs a target with a 'pads' attribute, and %s has none",
                       ir_op_name(rule->repl.op));
}

/* separable: a Conv or FusedConvAct (not optional) whose operand 0 is another (not optional),
 * and SeparableConv as the target. Depthwise and pointwise shapes are checked on the graph. */
static void check_separable(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    bool found = false;
    for (uint32_t i = 0; i < rule->nnodes && !found; i++) {
        const dsl_pattern *p = rule->nodes[i];
        found = only_ops(p, IR_OP_Conv, IR_OP_FusedConvAct) && !p->optional && p->noperands >= 1 &&
                only_ops(p->operands[0], IR_OP_Conv, IR_OP_FusedConvAct) &&
                !p->operands[0]->optional;
    }
    if (!found)
        dsl_rule_error(rc, at.offset, at.len,
                       "separable needs a Conv or FusedConvAct feeding the data input of another, "
                       "as in Conv > Conv");
    else if (rc->target_ok && rule->repl.op != IR_OP_SeparableConv)
        dsl_rule_error(rc, at.offset, at.len,
                       "separable needs SeparableConv as the target, not %s",
                       ir_op_name(rule->repl.op));
}

/* match_dtype: a target with inputs besides input 0 to convert. Which inputs need it, and whether
 * they are constants holding exact values, is known only on the graph. */
static void check_match_dtype(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    if (rc->target_ok && ir_op_info_get(rule->repl.op)->max_inputs < 2)
        dsl_rule_error(rc, at.offset, at.len,
                       "match_dtype converts inputs after the first, and %s has only one",
                       ir_op_name(rule->repl.op));
}

static bool is_gemm(const dsl_pattern *p)
{
    if (p->kind != DSL_PAT_OP || p->nops == 0 || p->optional)
        return false;
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i] != IR_OP_MatMul && p->ops[i] != IR_OP_Gemm && p->ops[i] != IR_OP_GemmEpilogue)
            return false;
    return true;
}

/* fold_alpha: a Mul or Div (not optional) feeding input A or B of a MatMul, Gemm or GemmEpilogue,
 * or reading its output, and a target with an alpha attribute. Whether the other operand is a
 * constant scalar is known only on the graph. */
static void check_fold_alpha(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    bool found = false;
    for (uint32_t i = 0; i < rule->nnodes && !found; i++) {
        const dsl_pattern *p = rule->nodes[i];
        if (is_gemm(p)) {
            for (uint32_t k = 0; k < 2 && k < p->noperands; k++)
                found |=
                    only_ops(p->operands[k], IR_OP_Mul, IR_OP_Div) && !p->operands[k]->optional;
        } else if (only_ops(p, IR_OP_Mul, IR_OP_Div) && !p->optional) {
            for (uint32_t k = 0; k < 2 && k < p->noperands; k++)
                found |= is_gemm(p->operands[k]);
        }
    }
    if (!found) {
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_alpha needs a Mul or Div feeding input A or B of a MatMul, Gemm or "
                       "GemmEpilogue, or reading its output");
        return;
    }
    if (rc->target_ok && !ir_op_attr_schema(rule->repl.op, "alpha"))
        dsl_rule_error(rc, at.offset, at.len,
                       "fold_alpha needs a target with an alpha attribute, and %s has none",
                       ir_op_name(rule->repl.op));
}

typedef void (*action_check)(dsl_rule_check *rc, dsl_token at);

/* fold_add: an Add of a Conv's output and an addend that is an input of the match (its constness
 * and per-channel shape are checked on the graph). */
static void check_fold_add(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    for (uint32_t i = 0; i < rule->nnodes; i++) {
        const dsl_pattern *p = rule->nodes[i];
        if (!is_single(p, IR_OP_Add) || p->optional || p->noperands < 2)
            continue;
        for (uint32_t g = 0; g < 2; g++)
            if (is_single(p->operands[g], IR_OP_Conv) && !p->operands[g]->optional &&
                p->operands[1 - g]->kind == DSL_PAT_ANY)
                return;
    }
    dsl_rule_error(rc, at.offset, at.len,
                   "fold_add needs an Add of a Conv output and an addend that is an input of the "
                   "pattern, as in Add(Conv, @c:const)");
}

/* pack_qkv: an Attention root, an Attention target and a FusedQKV (not optional) in the pattern;
 * that the root's Q, K and V are head views of its three outputs is checked on the graph. */
static void check_pack_qkv(dsl_rule_check *rc, dsl_token at)
{
    const dsl_rule *rule = rc->rule;
    bool qkv = false;
    for (uint32_t i = 0; i < rule->nnodes; i++)
        qkv |= is_single(rule->nodes[i], IR_OP_FusedQKV) && !rule->nodes[i]->optional;
    if (!qkv || rule->nroots != 1 || !is_single(rule->roots[0], IR_OP_Attention))
        dsl_rule_error(rc, at.offset, at.len,
                       "pack_qkv needs an Attention root whose Q, K and V come from a FusedQKV of "
                       "the pattern");
    else if (rc->target_ok && rule->repl.op != IR_OP_Attention)
        dsl_rule_error(rc, at.offset, at.len, "pack_qkv makes an Attention, not %s",
                       ir_op_name(rule->repl.op));
}

/* One check per action, named after it: an action added to DSL_ACTIONS without its check_<name>
 * does not compile. */
static const action_check checks[] = {
#define DSL_ACTION_CHECK(id, name) [DSL_ACTION_##id] = check_##name,
    DSL_ACTIONS(DSL_ACTION_CHECK)
#undef DSL_ACTION_CHECK
};

_Static_assert(sizeof checks / sizeof checks[0] == DSL_ACTION_COUNT, "one check per action");

void dsl_check_actions(dsl_rule_check *rc)
{
    const dsl_replacement *r = &rc->rule->repl;
    const dsl_repl_syntax *syn = rc->rule->syntax->repl;
    /* repl.c resolved the names into r->actions, skipping unknown ones; the tokens give places */
    for (uint32_t i = 0, k = 0; i < syn->nactions && k < r->nactions; i++) {
        dsl_token tok = syn->actions[i];
        const char *name = dsl_action_name(r->actions[k]);
        if (strlen(name) != tok.len || memcmp(name, dsl_tok_text(rc->src, tok), tok.len) != 0)
            continue;
        checks[r->actions[k]](rc, tok);
        k++;
    }
}
