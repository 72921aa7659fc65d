/* fold_bn: a BatchNormalization that reads a Conv (or ConvTranspose) of the match disappears into
 * the conv's weights and bias:
 *
 *     s = gamma / sqrt(var + epsilon)           per output channel
 *     W' = W * s   on the output-channel axis   (axis 0 of a Conv weight [M, C/group, k...];
 *                                                for ConvTranspose [C, M/group, k...] channel
 *                                                g * M/group + j of group g is axis 1's j)
 *     b' = (b - mean) * s + beta                (b = 0 when the conv has no bias)
 *
 * computed in double and stored in the weight's dtype. The inputs W and B of the fused node
 * become W' and b' (b' right after W' when the conv had no bias), and the BN's parameters leave
 * them. Refused when a parameter is not a constant, the channel counts disagree, var + epsilon is
 * not positive, or a folded value is not finite in the weight's dtype (an f16 overflow).
 *
 * A MatMul of a matrix by a constant W [K, N] folds the same way (ONNX Runtime's MatmulBNFusion):
 * its output [M, N] has the BN's channels on axis 1, the columns, so W' = W * s per column and b'
 * = beta - mean * s, a bias the target (Gemm) takes after W'. A MatMul output of another rank
 * has its channels elsewhere and is refused. */
#include "rewrite/internal.h"

#include "ir/infer_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ir_node *conv, *bn;
    ir_value *w, *b, *params[4]; /* gamma, beta, mean, var */
    int64_t channels, group;
    bool transposed, matmul;
    double *s, *t; /* the factors, once computed (in the plan's scratch): W' and b' share them */
} fold_bn;

/* Whether the context's last factors (rw_ctx.bn_last) are those of f's parameters (the same
 * values, constants and bytes, epsilon and channel count), each parameter's bytes in bytes[i]; or
 * false with why when a parameter cannot be read (the refusal its read would give). */
static bool last_factors(rw_plan *p, const fold_bn *f, double eps, const void *bytes[4], bool *same,
                         char *why)
{
    const struct rw_bn_factors *last = &p->ctx->bn_last;
    *same = last->st && last->eps == eps && last->channels == f->channels;
    for (int i = 0; i < 4; i++) {
        int64_t n;
        if (!(bytes[i] = rw_const_bytes(p, f->params[i], &n, why)))
            return false;
        *same = *same && last->params[i][0] == f->params[i] &&
                last->params[i][1] == f->params[i]->konst && last->params[i][2] == bytes[i];
    }
    return true;
}

/* Keeps s and t as the context's last factors (none when there is no memory for them). */
static void keep_factors(rw_plan *p, const fold_bn *f, double eps, const void *const bytes[4],
                         const double *s, const double *t)
{
    struct rw_bn_factors *last = &p->ctx->bn_last;
    size_t n = (size_t)f->channels;
    free(last->st);
    *last = (struct rw_bn_factors){.eps = eps, .channels = f->channels,
                                   .st = malloc((n ? 2 * n : 1) * sizeof *last->st)};
    if (!last->st)
        return;
    for (int i = 0; i < 4; i++) {
        last->params[i][0] = f->params[i];
        last->params[i][1] = f->params[i]->konst;
        last->params[i][2] = bytes[i];
    }
    if (n) {
        memcpy(last->st, s, n * sizeof *s);
        memcpy(last->st + n, t, n * sizeof *t);
    }
}

/* The per-channel factor f->s and shift f->t (folded b' = b * s + t), computed once for W' and
 * b' (their parameters read once), or false with why. A BN whose parameters the last fold read
 * (the same constants) takes that fold's factors: the same bytes in, the same doubles out. */
static bool factors(rw_plan *p, fold_bn *f, char *why)
{
    if (f->s)
        return true;
    double eps = ir_get_float(f->bn, "epsilon");
    const void *bytes[4];
    bool same;
    if (!last_factors(p, f, eps, bytes, &same, why))
        return false;
    size_t size = (size_t)f->channels * sizeof *f->s;
    if (same) {
        double *s = ar_try_alloc(p->ctx->scratch, size ? size : 1);
        double *t = ar_try_alloc(p->ctx->scratch, size ? size : 1);
        if (!s || !t)
            return rw_why(why, "budget: no memory for %lld channels", (long long)f->channels);
        if (size) {
            memcpy(s, p->ctx->bn_last.st, size);
            memcpy(t, p->ctx->bn_last.st + f->channels, size);
        }
        f->s = s;
        f->t = t;
        return true;
    }
    double *x[4] = {0};
    int64_t n;
    bool ok = true;
    for (int i = 0; i < 4 && ok; i++)
        ok = (x[i] = rw_const_read(p, f->params[i], &n, why)) != NULL;
    double *s = ar_try_alloc(p->ctx->scratch, size ? size : 1);
    double *t = ar_try_alloc(p->ctx->scratch, size ? size : 1);
    if (ok && (!s || !t))
        ok = rw_why(why, "budget: no memory for %lld channels", (long long)f->channels);
    for (int64_t m = 0; ok && m < f->channels; m++) {
        double den = x[3][m] + eps;
        if (!(den > 0))
            ok = rw_why(why, "fold_bn: var + epsilon is %g at channel %lld of '%s'; it must be "
                             "positive",
                        den, (long long)m, f->params[3]->name);
        else {
            s[m] = x[0][m] / sqrt(den);
            t[m] = x[1][m] - x[2][m] * s[m];
        }
    }
    for (int i = 0; i < 4; i++)
        free(x[i]);
    if (ok) {
        f->s = s;
        f->t = t;
        keep_factors(p, f, eps, bytes, s, t);
    }
    return ok;
}

/* W' computed when read (written to the output a chunk at a time, never held whole): where each
 * element's factor is s[(i / inner) % channels] (every layout but a grouped ConvTranspose's) and
 * no scaled element can be infinite or NaN. The weight is read once here for its largest
 * magnitude: that one scaled by the largest factor bounds every result, so when it is finite the
 * fold cannot be refused, and W' is what compute_weight's loop would have stored, byte for byte
 * (the same kernel, ir_const_scale_elems, computes it when read). */
static bool deferred_weight(rw_plan *p, rw_newconst *c, const double *s, const void *w, int64_t n)
{
    const fold_bn *f = c->arg;
    const ir_type *wt = f->w->type;
    if (n == 0 || (f->transposed && f->group != 1))
        return false;
    double max_factor = 0;
    for (int64_t m = 0; m < f->channels; m++) {
        if (!isfinite(s[m]))
            return false;
        max_factor = fmax(max_factor, fabs(s[m]));
    }
    if (!rw_scale_stays_finite(wt->dtype, rw_scan_max_abs(p, wt->dtype, w, n), max_factor))
        return false;
    /* the elements of one factor: Conv [M, C/group, k...]: all of an M; ConvTranspose [C, M, k...]
     * of one group: a (C, M) pair's, M the channel; MatMul [K, N]: one, N the channel */
    int64_t inner = 1;
    for (int i = f->matmul || f->transposed ? 2 : 1; i < wt->rank; i++)
        inner *= wt->dims[i];
    c->nbytes = (size_t)n * ir_dtype_size(wt->dtype);
    c->scaled = (ir_const_scaled){w, s, (size_t)f->channels, (size_t)inner}; /* in the scratch */
    return true;
}

/* W' = W * s in one pass from the weight's bytes where they lie to the result, no doubles in
 * memory: the same arithmetic (each element widened to double, multiplied, rounded to the dtype)
 * and so the same bytes and refusals as rw_const_read, a multiply and rw_const_store. */
static bool compute_weight(rw_plan *p, rw_newconst *c, char *why)
{
    fold_bn *f = c->arg;
    const void *w;
    int64_t n;
    if (!factors(p, f, why))
        return false;
    const double *s = f->s;
    bool deferred = false;
    if (!(w = rw_const_bytes(p, f->w, &n, why)) || (deferred = deferred_weight(p, c, s, w, n)) ||
        !rw_const_alloc(c, n, why))
        return deferred;
    ir_const_will_read(p->g, w, c->nbytes); /* every byte is read: mapped in one call */
    const ir_type *wt = f->w->type;
    ir_dtype dt = wt->dtype;
    int64_t inner = 1; /* elements per (axis 0, axis 1) pair */
    for (int i = 2; i < wt->rank; i++)
        inner *= wt->dims[i];
    int64_t d0 = wt->dims[0], d1 = wt->dims[1];
    /* Conv: channel a. ConvTranspose: input channel a is in group a / (C/group), whose output
     * channels start at that group times M/group. MatMul: column b */
#define CHANNEL(a, b) (f->matmul ? (b) : f->transposed ? (a) / (d0 / f->group) * d1 + (b) : (a))
    size_t nonfinite = 0;
    if (f->matmul) /* a row of W takes s as it is: the columns are the channels */
        for (int64_t a = 0; a < d0; a++)
            for (int64_t b = 0; b < d1; b++)
                nonfinite += ir_const_scale_elems(dt, c->data, w, (size_t)(a * d1 + b), 1, s[b]);
    else if (!f->transposed)
        for (int64_t a = 0; a < d0; a++)
            nonfinite += ir_const_scale_elems(dt, c->data, w, (size_t)(a * d1 * inner),
                                              (size_t)(d1 * inner), s[a]);
    else
        for (int64_t a = 0; a < d0; a++)
            for (int64_t b = 0; b < d1; b++)
                nonfinite += ir_const_scale_elems(dt, c->data, w, (size_t)((a * d1 + b) * inner),
                                                  (size_t)inner, s[CHANNEL(a, b)]);
    ir_const_release(p->g, w, c->nbytes); /* read once: its pages need not stay */
    bool ok = true;
    if (nonfinite) {
        int64_t bad = rw_first_not_finite(dt, c->data, n);
        int64_t a = bad / (d1 * inner), b = bad / inner % d1;
        ok = rw_not_finite(why, "fold_bn", bad, c->stem,
                           ir_const_element(w, dt, (int64_t)bad) * s[CHANNEL(a, b)], dt);
    }
#undef CHANNEL
    return ok;
}

static bool compute_bias(rw_plan *p, rw_newconst *c, char *why)
{
    fold_bn *f = c->arg;
    double *b = NULL;
    int64_t n = f->channels;
    if (!factors(p, f, why))
        return false;
    const double *s = f->s;
    double *t = f->t; /* W' took s only: t becomes b' here */
    bool ok = true;
    if (f->b)
        ok = (b = rw_const_read(p, f->b, &n, why)) != NULL;
    for (int64_t m = 0; ok && m < f->channels; m++)
        t[m] += (b ? b[m] : 0.0) * s[m];
    ok = ok && rw_const_store(c, t, f->channels, "fold_bn", why);
    free(b);
    return ok;
}

static bool is_vector_of(const ir_value *v, int64_t n)
{
    int64_t numel;
    return v->type->rank == 1 && ir_type_numel(v->type, &numel) && numel == n;
}

static bool find_pair(rw_plan *p, fold_bn *f, char *why)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *bn = p->members.items[i];
        const ir_value *x = bn->op == IR_OP_BatchNormalization ? bn->inputs[0] : NULL;
        if (!x || x->kind != IR_VALUE_NODE || !rw_is_member(p, x->producer))
            continue;
        ir_node *conv = x->producer;
        if (conv->op == IR_OP_Conv || conv->op == IR_OP_ConvTranspose ||
            conv->op == IR_OP_MatMul) {
            f->conv = conv;
            f->bn = bn;
            f->transposed = conv->op == IR_OP_ConvTranspose;
            f->matmul = conv->op == IR_OP_MatMul;
            return true;
        }
    }
    return rw_why(why, "fold_bn: no BatchNormalization of the match reads a matched Conv or MatMul "
                       "directly");
}

bool rw_action_fold_bn(rw_plan *p, char *why)
{
    fold_bn *f = ar_alloc(p->ctx->scratch, sizeof *f);
    if (!find_pair(p, f, why))
        return false;
    f->w = f->conv->inputs[1];
    f->b = f->conv->ninputs > 2 ? f->conv->inputs[2] : NULL;
    f->group = f->matmul ? 1 : ir_get_int(f->conv, "group");
    const ir_type *wt = f->w->type;
    if (f->w->kind != IR_VALUE_CONST || (f->b && f->b->kind != IR_VALUE_CONST))
        return rw_why(why, "constant: fold_bn needs the conv's weight and bias to be constants");
    if (f->matmul) { /* no bias of its own: b' = beta - mean * s */
        if (!ir_type_is_static(wt) || wt->rank != 2 || !ir_dtype_is_float(wt->dtype) ||
            f->conv->outputs[0]->type->rank != 2)
            return rw_why(why,
                          "fold_bn: the MatMul '%s' is not a matrix times a float matrix "
                          "weight (its BatchNormalization channels would not be its columns)",
                          f->conv->outputs[0]->name);
    } else if (!ir_type_is_static(wt) || wt->rank < 3 || !ir_dtype_is_float(wt->dtype) ||
               f->group < 1 || (f->transposed && wt->dims[0] % f->group != 0))
        return rw_why(why, "fold_bn: the conv weight '%s' is not a float tensor of rank 3 or more",
                      f->w->name);
    f->channels = f->matmul ? wt->dims[1] : f->transposed ? wt->dims[1] * f->group : wt->dims[0];
    for (int i = 0; i < 4; i++) {
        ir_value *v = f->params[i] = f->bn->inputs[i + 1];
        if (v->kind != IR_VALUE_CONST)
            return rw_why(why, "constant: fold_bn needs '%s' to be a constant", v->name);
        if (!is_vector_of(v, f->channels))
            return rw_why(why, "fold_bn: '%s' should hold %lld channels", v->name,
                          (long long)f->channels);
    }
    if (f->b && !is_vector_of(f->b, f->channels))
        return rw_why(why, "fold_bn: the conv bias '%s' should hold %lld channels", f->b->name,
                      (long long)f->channels);
    ir_type bt = {.dtype = wt->dtype, .rank = 1, .dims = {f->channels}};
    rw_newconst *w = rw_plan_new_const(p, f->w->name, wt, compute_weight, f);
    rw_newconst *b = rw_plan_new_const(p, f->b ? f->b->name : f->w->name, &bt, compute_bias, f);
    if (!f->b)
        b->value->name = rw_underscored(p->ctx->scratch, f->w->name, "bias");
    if (!rw_plan_replace_input(p, f->w, w->value))
        return rw_why(why, "fold_bn: the conv weight '%s' is not an input of the fused node",
                      f->w->name);
    if (!f->b || !rw_plan_replace_input(p, f->b, b->value))
        rw_plan_insert_after(p, w->value, b->value);
    for (int i = 0; i < 4; i++)
        rw_plan_remove_input(p, f->params[i]);
    return true;
}
