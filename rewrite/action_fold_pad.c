/* fold_pad: a constant-mode Pad whose output is the data input of a matched Conv (or
 * FusedConvAct, or SeparableConv, whose pads are its depthwise conv's) disappears into the conv's
 * own zero padding:
 *
 *     Pad(x, pads, value?, axes?) {mode = "constant"} > Conv {pads = q}
 *         => Conv(x, ...) {pads = q + the Pad's spatial amounts}
 *
 * A conv pads with zeros, so this is exact only when the Pad does too: mode "constant", the
 * value absent or 0, every amount >= 0 (a negative amount crops), the batch and channel axes
 * unpadded (a conv cannot pad those), and the conv's auto_pad NOTSET or VALID (VALID pads
 * nothing, so the Pad's amounts become its pads and auto_pad NOTSET: TensorFlow's exports pad
 * explicitly before a VALID conv). SAME_* computes its own pads from the padded size and is
 * refused, as is anything else, with its reason. The Pad's operands (pads,
 * value, axes) leave the fused node's inputs; its data input takes the Pad's place.
 *
 * An AveragePool takes a zero Pad the same way when it counts its own padding in each window's
 * divisor, as it counts the Pad's zeros: count_include_pad = 1, or no pads of its own (it then
 * gets count_include_pad = 1). count_include_pad = 0 with pads of its own would divide the Pad's
 * zeros and its own padding differently, and ceil_mode windows that run past the padding are
 * refused too. (MaxPool pads with -inf, not zeros: never.) */
#include "rewrite/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ir_node *pad, *conv;
    int rank;                   /* of the padded data */
    int64_t begin[IR_MAX_RANK]; /* the Pad's amounts per axis of the data */
    int64_t end[IR_MAX_RANK];
} fold_pad;

/* The Pad of the match whose output is operand 0 of a matched Conv, FusedConvAct or
 * SeparableConv. */
static bool find(rw_plan *p, fold_pad *f, char *why)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *conv = p->members.items[i];
        if (conv->op != IR_OP_Conv && conv->op != IR_OP_FusedConvAct &&
            conv->op != IR_OP_SeparableConv && conv->op != IR_OP_AveragePool)
            continue;
        const ir_value *x = conv->inputs[0];
        if (x && x->kind == IR_VALUE_NODE && rw_is_member(p, x->producer) &&
            x->producer->op == IR_OP_Pad) {
            f->pad = x->producer;
            f->conv = conv;
            return true;
        }
    }
    return rw_why(why, "fold_pad: no Pad of the match feeds a matched Conv's data input");
}

/* The constant value (input 2), when given, must be 0: a conv pads with zeros. */
static bool zero_value(rw_plan *p, const fold_pad *f, char *why)
{
    ir_value *v = f->pad->ninputs > 2 ? f->pad->inputs[2] : NULL;
    if (!v)
        return true;
    int64_t n;
    double *x = rw_const_read(p, v, &n, why);
    if (!x)
        return rw_why(why, "fold_pad: the pad value '%s' must be a constant 0", v->name);
    bool zero = n == 1 && x[0] == 0.0;
    double value = n >= 1 ? x[0] : NAN;
    free(x);
    if (!zero)
        return rw_why(why, "fold_pad: the pad value is %g; the conv pads with zeros", value);
    return true;
}

/* The Pad's amounts per axis of the data: pads lists the begins then the ends of each axis of
 * `axes` (every axis when absent; negative axes count from the end). */
static bool read_amounts(rw_plan *p, fold_pad *f, char *why)
{
    ir_value *pads = f->pad->inputs[1], *axes_v = f->pad->ninputs > 3 ? f->pad->inputs[3] : NULL;
    int64_t npads, naxes = f->rank;
    double *amounts = rw_const_read(p, pads, &npads, why), *axes = NULL;
    if (!amounts)
        return rw_why(why, "fold_pad: the pad amounts '%s' must be a constant", pads->name);
    if (axes_v && !(axes = rw_const_read(p, axes_v, &naxes, why))) {
        free(amounts);
        return rw_why(why, "fold_pad: the pad axes '%s' must be a constant", axes_v->name);
    }
    bool ok = npads == 2 * naxes;
    if (!ok)
        rw_why(why, "fold_pad: %lld pad amounts for %lld axes", (long long)npads, (long long)naxes);
    for (int64_t k = 0; ok && k < naxes; k++) {
        int64_t axis = axes ? (int64_t)axes[k] : k;
        axis = axis < 0 ? axis + f->rank : axis;
        if (axis < 0 || axis >= f->rank) {
            ok = rw_why(why, "fold_pad: pad axis %lld is out of range", (long long)axis);
            break;
        }
        f->begin[axis] = (int64_t)amounts[k];
        f->end[axis] = (int64_t)amounts[naxes + k];
    }
    free(amounts);
    free(axes);
    return ok;
}

/* Amounts a conv can take over: none negative, none on the batch or channel axis. */
static bool foldable(const fold_pad *f, char *why)
{
    for (int a = 0; a < f->rank; a++) {
        if (f->begin[a] < 0 || f->end[a] < 0)
            return rw_why(why,
                          "fold_pad: pads [%lld, %lld] of axis %d crop; only amounts >= 0 "
                          "fold into the conv",
                          (long long)f->begin[a], (long long)f->end[a], a);
        if (a < 2 && (f->begin[a] || f->end[a]))
            return rw_why(why, "fold_pad: the Pad pads the %s axis; a conv pads only spatial axes",
                          a == 0 ? "batch" : "channel");
    }
    return true;
}

/* The conv's pads (the plan's, which carried them over, or the conv's own; none with VALID),
 * plus the Pad's. */
static bool set_pads(rw_plan *p, const fold_pad *f, bool valid, char *why)
{
    int spatial = f->rank - 2;
    const ir_attr *a = rw_plan_attr(p, "pads");
    const int64_t *old = a ? a->v.ints : NULL;
    uint32_t nold = a ? a->count : ir_get_ints(f->conv, "pads", &old);
    if (valid)
        nold = 0;
    if (nold != 0 && nold != (uint32_t)(2 * spatial))
        return rw_why(why, "fold_pad: the conv's pads have %u values for %d spatial axes", nold,
                      spatial);
    int64_t *sum = ar_alloc_array(p->ctx->scratch, (size_t)(2 * spatial), sizeof *sum);
    for (int k = 0; k < spatial; k++) {
        sum[k] = (nold ? old[k] : 0) + f->begin[k + 2];
        sum[spatial + k] = (nold ? old[spatial + k] : 0) + f->end[k + 2];
    }
    rw_plan_set_attr(p, &(ir_attr){.name = "pads",
                                   .kind = IR_ATTR_INTS,
                                   .count = (uint32_t)(2 * spatial),
                                   .v.ints = sum});
    return true;
}

/* An AveragePool divides each window's sum by its size counting the Pad's zeros: its own padding
 * must count too (count_include_pad = 1, or no pads of its own), and it then does. Checked before
 * set_pads adds the Pad's amounts. */
static bool pool_counts_pads(rw_plan *p, const fold_pad *f, bool valid, char *why)
{
    if (f->conv->op != IR_OP_AveragePool)
        return true;
    if (ir_get_int(f->conv, "ceil_mode") != 0)
        return rw_why(why, "fold_pad: the AveragePool's ceil_mode windows may run past the "
                           "padding, which it does not count");
    const ir_attr *a = rw_plan_attr(p, "count_include_pad");
    int64_t counts = a ? a->v.i : ir_get_int(f->conv, "count_include_pad");
    const int64_t *old;
    uint32_t nold = valid ? 0 : ir_get_ints(f->conv, "pads", &old);
    bool own = false;
    for (uint32_t k = 0; k < nold; k++)
        own |= old[k] != 0;
    if (!counts && own)
        return rw_why(why, "fold_pad: the AveragePool pads without counting its padding "
                           "(count_include_pad 0), but counts the Pad's zeros");
    rw_plan_set_attr(p, &(ir_attr){.name = "count_include_pad", .kind = IR_ATTR_INT, .v.i = 1});
    return true;
}

/* VALID folded into explicit pads: the fused node's auto_pad is the default, NOTSET (not written). */
static void unset_auto_pad(rw_plan *p)
{
    for (size_t i = 0; i < p->attrs.len; i++)
        if (strcmp(p->attrs.items[i].name, "auto_pad") == 0) {
            p->attrs.items[i] = p->attrs.items[p->attrs.len - 1];
            p->attrs.len--;
            return;
        }
}

/* The match is the Pad and the conv alone, fused into the conv's own op (Pad > FusedConvAct =>
 * FusedConvAct): its inputs keep the conv's positions, so that an omitted bias before a residual
 * stays omitted instead of the residual moving into the bias's slot. */
static void keep_conv_positions(rw_plan *p, const fold_pad *f)
{
    const ir_node *c = f->conv;
    size_t present = 0;
    for (uint32_t k = 0; k < c->ninputs; k++)
        present += c->inputs[k] != NULL;
    if (p->rule->repl.operands_explicit || p->rule->repl.op != c->op || p->inputs.len != present)
        return;
    rw_input *seated = ar_alloc_array(p->ctx->scratch, c->ninputs, sizeof *seated);
    for (uint32_t k = 0; k < c->ninputs; k++) {
        ir_value *v = k == 0 ? f->pad->inputs[0] : c->inputs[k];
        seated[k] = (rw_input){v, NULL};
        for (size_t i = 0; v && i < p->inputs.len; i++)
            if (p->inputs.items[i].v == v)
                seated[k].from = p->inputs.items[i].from;
    }
    p->inputs.len = 0;
    for (uint32_t k = 0; k < c->ninputs; k++)
        vec_push(&p->inputs, seated[k]);
}

bool rw_action_fold_pad(rw_plan *p, char *why)
{
    fold_pad *f = ar_alloc(p->ctx->scratch, sizeof *f);
    if (!find(p, f, why))
        return false;
    const char *mode = ir_get_string(f->pad, "mode");
    if (strcmp(mode, "constant") != 0)
        return rw_why(why, "fold_pad: the Pad's mode is \"%s\"; a conv pads with constant zeros",
                      mode);
    const ir_attr *auto_pad = rw_plan_attr(p, "auto_pad");
    const char *ap = auto_pad ? auto_pad->v.s : ir_get_string(f->conv, "auto_pad");
    bool valid = strcmp(ap, "VALID") == 0;
    if (strcmp(ap, "NOTSET") != 0 && !valid)
        return rw_why(why, "fold_pad: the conv's auto_pad is %s; it computes its own pads", ap);
    ir_value *x = f->pad->inputs[0];
    f->rank = x->type->rank;
    if (f->rank < 3)
        return rw_why(why, "fold_pad: the padded data '%s' has no spatial axes of known rank",
                      x->name);
    if (!zero_value(p, f, why) || !read_amounts(p, f, why) || !foldable(f, why) ||
        !pool_counts_pads(p, f, valid, why) || !set_pads(p, f, valid, why))
        return false;
    if (valid)
        unset_auto_pad(p);
    for (uint32_t k = 1; k < f->pad->ninputs; k++)
        if (f->pad->inputs[k])
            rw_plan_remove_input(p, f->pad->inputs[k]);
    keep_conv_positions(p, f);
    return true;
}
