/* fold_add: y = Conv(x, W, B) + c, where c is a constant scalar or one value per output channel,
 * becomes Conv(x, W, B') with
 *
 *     B'[m] = B[m] + c[m]        (B = 0 when the conv has none: B' follows W in the inputs)
 *
 * c is per channel when all its dims but the output's channel axis (1) are 1: [M, 1, 1] after a
 * 2-D conv, [1, M, 1] or [M, 1] after a 1-D one. The sum must keep the conv's shape (a c that
 * broadcasts the output bigger is refused, and so is a c that is not per channel: a residual is
 * FusedConvAct's, not a bias). The weight is not read, so it need not be a constant; the bias and
 * c must be. The sum is computed in double and stored in the weight's dtype. */
#include "rewrite/internal.h"

#include <stdlib.h>

typedef struct {
    ir_node *conv, *add;
    ir_value *w, *b, *c;
    bool per_channel;
    int64_t channels;
} fold_add;

static bool compute_bias(rw_plan *p, rw_newconst *nc, char *why)
{
    const fold_add *f = nc->arg;
    int64_t nb = 0, n;
    double *c = rw_const_read(p, f->c, &n, why), *b = NULL;
    bool ok = c != NULL;
    if (ok && f->b)
        ok = (b = rw_const_read(p, f->b, &nb, why)) != NULL;
    double *out = ok ? malloc((size_t)f->channels * sizeof *out) : NULL;
    if (ok && !out)
        ok = rw_why(why, "budget: no memory for %lld channels", (long long)f->channels);
    for (int64_t m = 0; ok && m < f->channels; m++)
        out[m] = (b ? b[m] : 0.0) + c[f->per_channel ? m : 0];
    ok = ok && rw_const_store(nc, out, f->channels, "fold_add", why);
    free(out);
    free(b);
    free(c);
    return ok;
}

/* The Add of the match that adds an input of the match to a matched Conv's output. */
static bool find(rw_plan *p, fold_add *f, char *why)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *add = p->members.items[i];
        if (add->op != IR_OP_Add || add->ninputs != 2)
            continue;
        for (uint32_t k = 0; k < 2; k++) {
            const ir_value *v = add->inputs[k];
            ir_value *c = add->inputs[1 - k];
            if (v && c && v->kind == IR_VALUE_NODE && rw_is_member(p, v->producer) &&
                v->producer->op == IR_OP_Conv &&
                (c->kind != IR_VALUE_NODE || !rw_is_member(p, c->producer))) {
                f->conv = v->producer;
                f->add = add;
                f->c = c;
                return true;
            }
        }
    }
    return rw_why(why, "fold_add: no Add of the match adds an input of the match to a matched "
                       "Conv");
}

/* Whether c is one value, or one per channel along axis 1 of a result of rank `rank`. */
static bool shape_of_addend(fold_add *f, int rank, char *why)
{
    const ir_type *t = f->c->type;
    int64_t n;
    if (!ir_type_numel(t, &n) || t->rank > rank)
        return rw_why(why, "fold_add: '%s' does not broadcast per channel", f->c->name);
    f->per_channel = n != 1;
    for (int i = 0; f->per_channel && i < t->rank; i++) {
        int out_axis = rank - t->rank + i;
        if (t->dims[i] != (out_axis == 1 ? f->channels : 1))
            return rw_why(why,
                          "fold_add: '%s' is neither a scalar nor one value per output channel "
                          "(a residual, not a bias)",
                          f->c->name);
    }
    return true;
}

bool rw_action_fold_add(rw_plan *p, char *why)
{
    fold_add *f = ar_alloc(p->ctx->scratch, sizeof *f);
    if (!find(p, f, why))
        return false;
    f->w = f->conv->inputs[1];
    f->b = f->conv->ninputs > 2 ? f->conv->inputs[2] : NULL;
    const ir_type *wt = f->w->type, *out = f->conv->outputs[0]->type;
    if (f->c->kind != IR_VALUE_CONST || (f->b && f->b->kind != IR_VALUE_CONST))
        return rw_why(why, "constant: fold_add needs the addend and the conv's bias to be "
                           "constants");
    if (!ir_type_is_static(wt) || wt->rank < 3 || wt->dims[0] < 1 || !ir_dtype_is_float(wt->dtype) || out->rank < 3)
        return rw_why(why, "fold_add: the conv weight '%s' has no static output channels",
                      f->w->name);
    f->channels = wt->dims[0];
    if (!ir_type_equal(f->add->outputs[0]->type, out))
        return rw_why(why, "fold_add: adding '%s' changes the shape of '%s'", f->c->name,
                      f->conv->outputs[0]->name);
    if (!shape_of_addend(f, out->rank, why))
        return false;
    int64_t bn;
    if (f->b && (f->b->type->rank != 1 || !ir_type_numel(f->b->type, &bn) || bn != f->channels))
        return rw_why(why, "fold_add: the conv bias '%s' should hold %lld channels", f->b->name,
                      (long long)f->channels);
    ir_type bt = {.dtype = wt->dtype, .rank = 1, .dims = {f->channels}};
    rw_newconst *b = rw_plan_new_const(p, f->b ? f->b->name : f->w->name, &bt, compute_bias, f);
    if (!f->b)
        b->value->name = rw_underscored(p->ctx->scratch, f->w->name, "bias");
    if (!f->b || !rw_plan_replace_input(p, f->b, b->value))
        rw_plan_insert_after(p, f->w, b->value);
    rw_plan_remove_input(p, f->c);
    return true;
}
