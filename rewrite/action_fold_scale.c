/* fold_scale: y = G(x) * s (or G(x) / s), where G is a matched Conv, MatMul, Gemm or
 * GemmEpilogue with a constant weight and s a constant scalar or per-output-channel vector,
 * becomes G with the scale folded into its weight (and bias):
 *
 *     Conv   W [M, C/group, k...]: W'[m] = W[m] * s[m];  B'[m] = B[m] * s[m]
 *     MatMul W [K, N]:             W'[:, n] = W[:, n] * s[n]
 *     Gemm   B [K, N] or [N, K] (transB): the same per output column n; C' = C * s per column
 *     MatMul + Add(b): as MatMul, with b as its bias ((x @ W + b) * s = x @ (W s) + b s)
 *     GemmEpilogue: as Gemm, its bias as C; only without an activation or a residual, which
 *            the scale does not distribute over (act(z) * s is not act(z * s); (z + r) * s adds
 *            r * s)
 *
 * s is per channel when all its dims but the output's channel axis (Conv: 1, GEMM: the last) are
 * 1. The scaled output must keep G's shape (a scale that broadcasts G's output bigger is refused),
 * and a Div by a zero element is refused (its folded weight is not finite). */
#include "rewrite/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    ir_node *g, *s_node;
    ir_value *w, *b, *s;
    ir_value *add_bias; /* the constant of a matched Add between G and the scale, or NULL */
    bool divide, per_channel, trans_b;
    int64_t channels;
} fold_scale;

/* s as `channels` factors (one value repeated when it is a scalar). */
static double *factors(rw_plan *p, const fold_scale *f, char *why)
{
    int64_t n;
    double *x = rw_const_read(p, f->s, &n, why);
    if (!x)
        return NULL;
    double *out = malloc((size_t)f->channels * sizeof *out);
    for (int64_t m = 0; out && m < f->channels; m++)
        out[m] = f->divide ? 1.0 / x[f->per_channel ? m : 0] : x[f->per_channel ? m : 0];
    free(x);
    if (!out)
        rw_why(why, "budget: no memory for %lld channels", (long long)f->channels);
    return out;
}

/* Scales a tensor whose channel index of element i is channel(i). */
static bool scale_tensor(rw_plan *p, rw_newconst *c, ir_value *src, int64_t stride, int64_t period,
                         char *why)
{
    const fold_scale *f = c->arg;
    int64_t n;
    double *s = factors(p, f, why), *x = s ? rw_const_read(p, src, &n, why) : NULL;
    bool ok = x != NULL;
    if (ok) {
        int64_t out_n;
        ir_type_numel(c->value->type, &out_n);
        double *y = out_n == n ? x : malloc((size_t)out_n * sizeof *y);
        for (int64_t i = 0; y && i < out_n; i++)
            y[i] = (out_n == n ? x[i] : x[0]) * s[(i / stride) % period];
        ok = y && rw_const_store(c, y, out_n, "fold_scale", why);
        if (y != x)
            free(y);
    }
    free(s);
    free(x);
    return ok;
}

static bool compute_weight(rw_plan *p, rw_newconst *c, char *why)
{
    const fold_scale *f = c->arg;
    const ir_type *t = f->w->type;
    if (f->g->op == IR_OP_Conv) {
        int64_t inner = 1; /* elements per output channel */
        for (int i = 1; i < t->rank; i++)
            inner *= t->dims[i];
        return scale_tensor(p, c, f->w, inner, f->channels, why);
    }
    /* [K, N]: the channel is the column; [N, K] (transB): the row */
    return f->trans_b ? scale_tensor(p, c, f->w, t->dims[1], f->channels, why)
                      : scale_tensor(p, c, f->w, 1, f->channels, why);
}

static bool compute_bias(rw_plan *p, rw_newconst *c, char *why)
{
    const fold_scale *f = c->arg;
    /* a bias is a vector of channels, or a GEMM's C whose last dim is the channel */
    return scale_tensor(p, c, f->b, 1, f->channels, why);
}

/* A matched Add of a constant to a matched MatMul's output: *v becomes the MatMul's output and
 * *bias the constant. */
static bool find_bias_add(rw_plan *p, ir_node *add, const ir_value **v, ir_value **bias)
{
    for (uint32_t k = 0; k < 2; k++) {
        const ir_value *m = add->inputs[k];
        ir_value *c = add->inputs[1 - k];
        if (m && c && c->kind == IR_VALUE_CONST && m->kind == IR_VALUE_NODE &&
            rw_is_member(p, m->producer) && m->producer->op == IR_OP_MatMul) {
            *v = m;
            *bias = c;
            return true;
        }
    }
    return false;
}

/* The scaling node of the match: a Mul or Div by a constant of a matched GEMM or Conv's output,
 * or of a matched MatMul's output plus a constant bias. */
static bool find(rw_plan *p, fold_scale *f, char *why)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *s = p->members.items[i];
        if (s->op != IR_OP_Mul && s->op != IR_OP_Div)
            continue;
        for (uint32_t k = 0; k < 2; k++) {
            const ir_value *v = s->inputs[k];
            if (!v || v->kind != IR_VALUE_NODE || !rw_is_member(p, v->producer) ||
                (s->op == IR_OP_Div && k != 0))
                continue;
            ir_op op = v->producer->op;
            ir_value *bias = NULL;
            if (op == IR_OP_Add && find_bias_add(p, v->producer, &v, &bias))
                op = IR_OP_MatMul; /* (x @ W + b) * s: the scale distributes over the bias */
            if (op == IR_OP_Conv || rw_is_gemm(op)) {
                f->add_bias = bias;
                f->g = v->producer;
                f->s_node = s;
                f->s = s->inputs[1 - k];
                f->divide = s->op == IR_OP_Div;
                return true;
            }
        }
    }
    return rw_why(why, "fold_scale: no Mul or Div of the match scales a matched Conv, MatMul, "
                       "Gemm or GemmEpilogue");
}

/* Whether s is one value, or one per channel along `axis` of a result of rank `rank`. */
static bool shape_of_scale(fold_scale *f, int axis, int rank, char *why)
{
    const ir_type *t = f->s->type;
    int64_t n;
    if (!ir_type_numel(t, &n) || t->rank > rank)
        return rw_why(why, "fold_scale: '%s' does not broadcast per channel", f->s->name);
    f->per_channel = n != 1;
    for (int i = 0; f->per_channel && i < t->rank; i++) {
        int out_axis = rank - t->rank + i;
        if (t->dims[i] != (out_axis == axis ? f->channels : 1))
            return rw_why(why,
                          "fold_scale: '%s' is neither a scalar nor one value per output "
                          "channel",
                          f->s->name);
    }
    return true;
}

bool rw_action_fold_scale(rw_plan *p, char *why)
{
    fold_scale *f = ar_alloc(p->ctx->scratch, sizeof *f);
    if (!find(p, f, why))
        return false;
    ir_node *g = f->g;
    if (g->op == IR_OP_GemmEpilogue &&
        ((g->ninputs > 3 && g->inputs[3]) || strcmp(ir_get_string(g, "act"), "Identity") != 0))
        return rw_why(why,
                      "fold_scale: '%s' adds a residual or applies an activation, which a "
                      "scale after it does not distribute over",
                      g->outputs[0]->name);
    f->w = g->inputs[1];
    f->b = f->add_bias ? f->add_bias : g->ninputs > 2 ? g->inputs[2] : NULL;
    const ir_type *wt = f->w->type, *out = g->outputs[0]->type;
    if (f->s->kind != IR_VALUE_CONST || f->w->kind != IR_VALUE_CONST ||
        (f->b && f->b->kind != IR_VALUE_CONST))
        return rw_why(why, "constant: fold_scale needs the scale, the weight and the bias to be "
                           "constants");
    if (!ir_type_is_static(wt) || !ir_dtype_is_float(wt->dtype) || out->rank < 1 ||
        (g->op != IR_OP_Conv && wt->rank != 2))
        return rw_why(why, "fold_scale: the weight '%s' has a shape it cannot fold into",
                      f->w->name);
    if (!ir_type_equal(f->s_node->outputs[0]->type, out))
        return rw_why(why, "fold_scale: scaling by '%s' changes the shape of '%s'", f->s->name,
                      g->outputs[0]->name);
    f->trans_b = (g->op == IR_OP_Gemm || g->op == IR_OP_GemmEpilogue) && ir_get_int(g, "transB");
    f->channels = g->op == IR_OP_Conv ? wt->dims[0] : f->trans_b ? wt->dims[0] : wt->dims[1];
    if (!shape_of_scale(f, g->op == IR_OP_Conv ? 1 : out->rank - 1, out->rank, why))
        return false;
    rw_newconst *w = rw_plan_new_const(p, f->w->name, wt, compute_weight, f);
    if (!rw_plan_replace_input(p, f->w, w->value))
        return rw_why(why, "fold_scale: the weight '%s' is not an input of the fused node",
                      f->w->name);
    if (f->b) {
        const ir_type *bt = f->b->type;
        int64_t bn;
        if (!ir_type_numel(bt, &bn) ||
            !(bn == 1 ||
              (bt->rank >= 1 && bt->dims[bt->rank - 1] == f->channels && bn % f->channels == 0)))
            return rw_why(why, "fold_scale: the bias '%s' is neither a scalar nor per channel",
                          f->b->name);
        ir_type scaled = *bt;
        if (bn == 1 && f->per_channel) /* a scalar bias becomes one per channel */
            scaled = (ir_type){.dtype = bt->dtype, .rank = 1, .dims = {f->channels}};
        rw_newconst *b = rw_plan_new_const(p, f->b->name, &scaled, compute_bias, f);
        rw_plan_replace_input(p, f->b, b->value);
    }
    rw_plan_remove_input(p, f->s);
    return true;
}
