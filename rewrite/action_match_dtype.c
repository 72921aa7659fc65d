/* match_dtype: every float input of the fused node whose dtype differs from input 0's becomes a
 * constant of input 0's dtype holding the same values.
 *
 * A target such as LayerNormalization takes one dtype for X, scale and bias. An f16 model that
 * computes a LayerNorm in f32 casts X up and the result back, and its exporter has usually
 * folded the Cast of the f16 weights into f32 constants; the fused node reads the f16 X, so the
 * weights go back to f16. That is exact only when each value is an f16 value, which it is when
 * it came from one: a value that would round (an f32 weight of an f32-trained model) refuses the
 * fusion, as does an input of another dtype that is not a constant. */
#include "rewrite/internal.h"

#include "base/half.h"

#include <stdlib.h>

typedef struct {
    ir_value *src;
} converted;

/* Whether x is exactly a value of dtype dt. */
static bool exact_in(double x, ir_dtype dt)
{
    float f = (float)x;
    if ((double)f != x)
        return false;
    if (dt == IR_F16)
        return f16_to_f32(f32_to_f16(f)) == f;
    if (dt == IR_BF16)
        return bf16_to_f32(f32_to_bf16(f)) == f;
    return true;
}

static bool compute(rw_plan *p, rw_newconst *c, char *why)
{
    const converted *cv = c->arg;
    ir_dtype dt = c->value->type->dtype;
    int64_t n;
    double *x = rw_const_read(p, cv->src, &n, why);
    if (!x)
        return false;
    bool ok = true;
    for (int64_t i = 0; ok && i < n; i++)
        if (x[i] == x[i] && !exact_in(x[i], dt)) /* NaN stays NaN in every float dtype */
            ok = rw_why(why,
                        "precision: match_dtype: element %lld of '%s' is %.9g, which %s cannot "
                        "hold exactly",
                        (long long)i, cv->src->name, x[i], ir_dtype_name(dt));
    ok = ok && rw_const_store(c, x, n, "match_dtype", why);
    free(x);
    return ok;
}

bool rw_action_match_dtype(rw_plan *p, char *why)
{
    ir_value *x = p->inputs.len ? p->inputs.items[0].v : NULL;
    if (!x || !ir_dtype_is_float(x->type->dtype))
        return rw_why(why, "match_dtype: the fused node's input 0 is not a float tensor");
    ir_dtype dt = x->type->dtype;
    for (size_t i = 1; i < p->inputs.len; i++) {
        ir_value *v = p->inputs.items[i].v;
        if (!v || !ir_dtype_is_float(v->type->dtype) || v->type->dtype == dt)
            continue;
        if (v->kind != IR_VALUE_CONST)
            return rw_why(why,
                          "constant: match_dtype converts '%s' (%s) to %s only when it is a "
                          "constant",
                          v->name, ir_dtype_name(v->type->dtype), ir_dtype_name(dt));
        converted *cv = ar_alloc(p->ctx->scratch, sizeof *cv);
        cv->src = v;
        ir_type t = *v->type;
        t.dtype = dt;
        rw_newconst *c = rw_plan_new_const(p, v->name, &t, compute, cv);
        p->inputs.items[i].v = c->value;
    }
    return true;
}
