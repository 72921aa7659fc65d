/* concat_weights: parallel MatMuls that read one input X with constant weights W_k [K, N_k] (each
 * optionally followed by the Add of a constant bias b_k [N_k]) become one GEMM over the weights
 * concatenated along the output axis, [W_0 | W_1 | ...], and the biases [b_0 | b_1 | ...]. The
 * fused node's `sizes` attribute holds each N_k, taken from that projection's own weight: with
 * grouped-query attention K and V are narrower than Q, and none of their widths is Q's. */
#include "rewrite/internal.h"

#include "base/half.h"
#include "ir/infer_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t n;
    ir_value **w, **b; /* per root; b NULL when no root has a bias */
    int64_t k, total;
} concat;

/* The MatMul of root r and its bias (NULL when r is the MatMul itself). */
static bool projection(rw_plan *p, ir_node *r, ir_node **mm, ir_value **bias, char *why)
{
    *bias = NULL;
    if (r->op == IR_OP_MatMul) {
        *mm = r;
        return true;
    }
    for (uint32_t i = 0; r->op == IR_OP_Add && i < 2; i++) {
        const ir_value *v = r->inputs[i];
        if (v && v->kind == IR_VALUE_NODE && v->producer->op == IR_OP_MatMul &&
            rw_is_member(p, v->producer)) {
            *mm = v->producer;
            *bias = r->inputs[1 - i];
            return true;
        }
    }
    return rw_why(why, "concat_weights: root '%s' is neither a MatMul nor a MatMul plus a bias",
                  r->outputs[0]->name);
}

/* compute_cat when every part has the result's dtype (f32, f16 or bf16): their values pass
 * through double unchanged, so the result's bytes are the parts' rows side by side, with the
 * double path's refusal of a value that is not finite (at the first such element of the result).
 * Nothing is copied: the result is the parts' rows (ir_const_set_rows), assembled when something
 * reads it and written to an output from where the parts lie (a Qwen2-7B gate/up pair is 543 MB
 * in f32). The parts are read once here, a chunk at a time (rw_scan_not_finite), for that check. */
static bool copy_cat(rw_plan *p, rw_newconst *c, ir_value **parts, int64_t rows, char *why)
{
    const concat *cc = c->arg;
    ir_dtype dt = c->value->type->dtype;
    size_t size = ir_dtype_size(dt);
    ir_const_part *out = ar_alloc_array(p->ctx->scratch, cc->n, sizeof *out);
    uint32_t nout = 0; /* the parts with columns */
    bool bad = false;
    for (uint32_t i = 0; i < cc->n; i++) {
        int64_t n;
        const unsigned char *x = rw_const_bytes(p, parts[i], &n, why);
        if (!x)
            return false;
        if (n)
            out[nout++] = (ir_const_part){x, (size_t)(n / rows) * size};
        bad = bad || rw_scan_not_finite(p, dt, x, n); /* a part never stays resident whole */
    }
    for (int64_t r = 0; bad && r < rows; r++) { /* the first in the result's order */
        int64_t col = 0;
        for (uint32_t i = 0; i < nout; i++) {
            const unsigned char *row = (const unsigned char *)out[i].src + r * out[i].row_bytes;
            int64_t k = rw_first_not_finite(dt, row, (int64_t)(out[i].row_bytes / size));
            if (k >= 0)
                return rw_not_finite(why, "concat_weights", r * cc->total + col + k, c->stem,
                                     ir_const_element(row, dt, (int64_t)k), dt);
            col += (int64_t)(out[i].row_bytes / size);
        }
    }
    c->nbytes = (size_t)(rows * cc->total) * size;
    if (!c->nbytes) /* no bytes to assemble */
        return (c->data = malloc(1)) != NULL || rw_why(why, "budget: no memory");
    c->parts = out;
    c->nparts = nout;
    c->rows = (size_t)rows;
    return true;
}

static bool compute_cat(rw_plan *p, rw_newconst *c, ir_value **parts, int64_t rows, char *why)
{
    const concat *cc = c->arg;
    ir_dtype dt = c->value->type->dtype;
    bool same = dt == IR_F32 || dt == IR_F16 || dt == IR_BF16;
    for (uint32_t i = 0; same && i < cc->n; i++)
        same = parts[i] && parts[i]->type->dtype == dt;
    if (same)
        return copy_cat(p, c, parts, rows, why);
    double *out = malloc((size_t)(rows * cc->total) * sizeof *out);
    if (!out)
        return rw_why(why, "budget: no memory to concatenate weights");
    int64_t col = 0;
    bool ok = true;
    for (uint32_t i = 0; ok && i < cc->n; i++) {
        int64_t n;
        double *x = rw_const_read(p, parts[i], &n, why);
        if (!(ok = x != NULL))
            break;
        int64_t width = n / rows;
        for (int64_t r = 0; r < rows; r++)
            memcpy(out + r * cc->total + col, x + r * width, (size_t)width * sizeof *out);
        col += width;
        free(x);
    }
    ok = ok && rw_const_store(c, out, rows * cc->total, "concat_weights", why);
    free(out);
    return ok;
}

static bool compute_weights(rw_plan *p, rw_newconst *c, char *why)
{
    const concat *cc = c->arg;
    return compute_cat(p, c, cc->w, cc->k, why);
}

static bool compute_biases(rw_plan *p, rw_newconst *c, char *why)
{
    const concat *cc = c->arg;
    return compute_cat(p, c, cc->b, 1, why);
}

bool rw_action_concat_weights(rw_plan *p, char *why)
{
    ar_arena *arena = p->ctx->scratch;
    concat *cc = ar_alloc(arena, sizeof *cc);
    cc->n = (uint32_t)p->roots.len;
    cc->w = ar_alloc_array(arena, cc->n, sizeof *cc->w);
    cc->b = ar_alloc_array(arena, cc->n, sizeof *cc->b);
    int64_t *sizes = ar_alloc_array(arena, cc->n, sizeof *sizes);
    const ir_value *x = NULL;
    uint32_t biases = 0;
    for (uint32_t i = 0; i < cc->n; i++) {
        ir_node *mm = NULL;
        if (!projection(p, p->roots.items[i], &mm, &cc->b[i], why))
            return false;
        ir_value *w = cc->w[i] = mm->inputs[1];
        const ir_type *t = w->type;
        if (i == 0)
            x = mm->inputs[0];
        if (mm->inputs[0] != x)
            return rw_why(why, "concat_weights: the projections read different inputs ('%s', '%s')",
                          x->name, mm->inputs[0]->name);
        if (w->kind != IR_VALUE_CONST || (cc->b[i] && cc->b[i]->kind != IR_VALUE_CONST))
            return rw_why(why, "constant: concat_weights needs '%s' to be a constant",
                          w->kind != IR_VALUE_CONST ? w->name : cc->b[i]->name);
        if (t->rank != 2 || !ir_type_is_static(t) || !ir_dtype_is_float(t->dtype))
            return rw_why(why, "concat_weights: the weight '%s' is not a static float matrix", w->name);
        if (i == 0)
            cc->k = t->dims[0];
        if (t->dims[0] != cc->k || t->dtype != cc->w[0]->type->dtype)
            return rw_why(why, "concat_weights: '%s' and '%s' differ in rows or dtype",
                          cc->w[0]->name, w->name);
        sizes[i] = t->dims[1];
        cc->total += sizes[i];
        biases += cc->b[i] != NULL;
        int64_t bn;
        if (cc->b[i] &&
            (!ir_type_numel(cc->b[i]->type, &bn) || bn != sizes[i] || cc->b[i]->type->rank != 1))
            return rw_why(why, "concat_weights: the bias '%s' is not a vector of %lld",
                          cc->b[i]->name, (long long)sizes[i]);
    }
    if (biases != 0 && biases != cc->n)
        return rw_why(why, "concat_weights: some projections have a bias and some do not");
    ir_type wt = *cc->w[0]->type;
    wt.dims[1] = cc->total;
    rw_newconst *w = rw_plan_new_const(p, cc->w[0]->name, &wt, compute_weights, cc);
    w->value->name = ar_printf(arena, "%s_concat", cc->w[0]->name);
    if (!rw_plan_replace_input(p, cc->w[0], w->value))
        return rw_why(why, "concat_weights: the weight '%s' is not an input of the fused node",
                      cc->w[0]->name);
    for (uint32_t i = 1; i < cc->n; i++)
        rw_plan_remove_input(p, cc->w[i]);
    if (biases) {
        ir_type bt = {.dtype = wt.dtype, .rank = 1, .dims = {cc->total}};
        rw_newconst *b = rw_plan_new_const(p, cc->b[0]->name, &bt, compute_biases, cc);
        b->value->name = ar_printf(arena, "%s_concat", cc->b[0]->name);
        if (!rw_plan_replace_input(p, cc->b[0], b->value))
            rw_plan_insert_after(p, w->value, b->value);
        for (uint32_t i = 1; i < cc->n; i++)
            rw_plan_remove_input(p, cc->b[i]);
    } else {
        cc->b = NULL;
    }
    rw_plan_set_attr(p, &(ir_attr){.name = "sizes", .kind = IR_ATTR_INTS, .count = cc->n,
                                   .v.ints = sizes});
    return true;
}
