/* causal_mask(@c, @s): whether the value c is, wherever the graph runs, the causal mask of the
 * scores s [..., S, T] aligned to the bottom right: true (nonzero) where key j <= i + T - S, false
 * where the key is hidden (docs/rules.md, "Guards"; the catalog Attention's causal).
 *
 * Two forms are known:
 * - a constant whose dims are all 1 but the last two, [S, T] as s has them (static), with exactly
 *   that pattern of nonzero elements;
 * - GPT-2's: a window of a constant lower-triangular buffer B [1, ..., 1, N, N] (B[r, k] nonzero
 *   iff k <= r, N >= 2), `Slice(B, T - S, T)` on the rows and `Slice(B, 0, T)` on the columns
 *   (in either order, one Slice per axis, steps 1), with T and S the dims of s (symbolic or
 *   static) and the rows' start a dim that is never negative (static, or a polynomial without
 *   negative terms: the past's length) and that T - S is; under a Cast to bool or not.
 *   Window row r is B's row T - S + r, whose keys k <= T - S + r are seen: the causal mask. Where
 *   T > N the Slices clamp to N columns, which do not broadcast to s's T (N >= 2): the unfused
 *   graph fails there, and nothing is claimed about it.
 * Anything else is false: the rule does not fire. */
#include "matcher/internal.h"

#include "base/half.h"

#include <string.h>

/* Whether element i of the constant data of dtype dt is nonzero; false for an unknown dtype, with
 * *ok cleared. */
static bool nonzero(const void *data, ir_dtype dt, int64_t i, bool *ok)
{
    switch (dt) {
    case IR_BOOL:
    case IR_U8: return ((const uint8_t *)data)[i] != 0;
    case IR_I8: return ((const int8_t *)data)[i] != 0;
    case IR_I32: return ((const int32_t *)data)[i] != 0;
    case IR_I64: return ((const int64_t *)data)[i] != 0;
    case IR_F32: return ((const float *)data)[i] != 0.0f;
    case IR_F64: return ((const double *)data)[i] != 0.0;
    case IR_F16: return f16_to_f32(((const uint16_t *)data)[i]) != 0.0f;
    case IR_BF16: return bf16_to_f32(((const uint16_t *)data)[i]) != 0.0f;
    default: *ok = false; return false;
    }
}

/* Whether every dim of t but the last two is 1 (t of rank >= 2). */
static bool leading_ones(const ir_type *t)
{
    if (t->rank < 2)
        return false;
    for (int i = 0; i < t->rank - 2; i++)
        if (t->dims[i] != 1)
            return false;
    return true;
}

/* Whether the constant v [1, ..., rows, cols] (static) is nonzero exactly where col <= row + off. */
static bool const_band(ir_graph *g, ir_value *v, int64_t off)
{
    const ir_type *t = v->type;
    if (v->kind != IR_VALUE_CONST || !leading_ones(t))
        return false;
    int64_t rows = t->dims[t->rank - 2], cols = t->dims[t->rank - 1];
    if (!ir_dim_is_static(rows) || !ir_dim_is_static(cols))
        return false;
    const void *data = ir_const_data_or_null(g, v);
    if (!data)
        return false;
    bool ok = true;
    for (int64_t r = 0; r < rows && ok; r++)
        for (int64_t k = 0; k < cols && ok; k++)
            if (nonzero(data, t->dtype, r * cols + k, &ok) != (k <= r + off))
                return false;
    return ok;
}

/* The one element of a bound of a Slice as a dim: a constant, or a shape value that inference
 * follows (`Shape(s)[-1]`, a difference of two of them). False when it is not known, or negative
 * (a bound from the end, which only a static window could place). */
static bool bound_dim(ir_graph *g, ir_value *v, int64_t *dim)
{
    int64_t n;
    if (!v || !ir_type_numel(v->type, &n) || n != 1)
        return false;
    if (v->kind == IR_VALUE_CONST) {
        if (v->type->dtype != IR_I64 && v->type->dtype != IR_I32)
            return false;
        const void *data = ir_const_data_or_null(g, v);
        if (!data)
            return false;
        *dim = v->type->dtype == IR_I64 ? *(const int64_t *)data : *(const int32_t *)data;
        return *dim >= 0;
    }
    const ir_shape_value *sv = v->sv;
    if (!sv || sv->len != 1)
        return false;
    if (sv->el[0].kind == IR_SV_INT) {
        *dim = sv->el[0].v;
        return *dim >= 0;
    }
    *dim = sv->el[0].v;
    return sv->el[0].kind == IR_SV_DIM;
}

/* Whether a dim is never negative: static, a named symbol, or an expression with no negative
 * term (symbols are sizes). */
static bool never_negative(const ir_graph *g, int64_t d)
{
    if (ir_dim_is_static(d))
        return true;
    if (!ir_dim_is_symbol(d))
        return false;
    const ir_dimx *e = ir_dim_expr(g, d);
    for (int i = 0; e && i < e->nterms; i++)
        if (e->terms[i].coef < 0)
            return false;
    return true;
}

typedef struct {
    bool set;
    int64_t start, end; /* dims */
} window;

/* Reads the Slice n's bounds on the last two axes of its data into rows and cols; false for
 * steps other than 1, another axis, an axis sliced twice, or bounds not known as dims. */
static bool read_slice(ir_graph *g, const ir_node *n, window *rows, window *cols)
{
    int rank = n->inputs[0]->type->rank;
    ir_value *starts = n->inputs[1], *ends = n->inputs[2];
    ir_value *axes = n->ninputs > 3 ? n->inputs[3] : NULL;
    ir_value *steps = n->ninputs > 4 ? n->inputs[4] : NULL;
    int64_t count;
    if (rank < 2 || !ir_type_numel(starts->type, &count))
        return false;
    const void *ax = axes ? ir_const_data_or_null(g, axes) : NULL;
    const void *st = steps ? ir_const_data_or_null(g, steps) : NULL;
    if ((axes && (!ax || axes->type->dtype != IR_I64)) ||
        (steps && (!st || steps->type->dtype != IR_I64)))
        return false;
    if (count != 1)
        return false;
    int64_t axis = ax ? ((const int64_t *)ax)[0] : 0;
    if (st && ((const int64_t *)st)[0] != 1)
        return false;
    axis = axis < 0 ? axis + rank : axis;
    window *w = axis == rank - 2 ? rows : axis == rank - 1 ? cols : NULL;
    if (!w || w->set)
        return false;
    w->set = true;
    return bound_dim(g, starts, &w->start) && bound_dim(g, ends, &w->end);
}

bool mt_causal_mask(ir_graph *g, ir_value *c, const ir_value *s)
{
    const ir_type *st = s->type;
    if (st->rank < 2)
        return false;
    int64_t sq = st->dims[st->rank - 2], tk = st->dims[st->rank - 1];
    if (sq == IR_DIM_UNKNOWN || tk == IR_DIM_UNKNOWN)
        return false;
    /* nonzero stays true through a Cast to bool (a Cast to a number may not keep it: 0.5 -> 0) */
    if (c->kind == IR_VALUE_NODE && c->producer->op == IR_OP_Cast && c->type->dtype == IR_BOOL)
        c = c->producer->inputs[0];
    if (c->kind == IR_VALUE_CONST) { /* [1, ..., S, T] as the scores have them */
        const ir_type *ct = c->type;
        return ir_dim_is_static(sq) && ir_dim_is_static(tk) && leading_ones(ct) &&
               ct->dims[ct->rank - 2] == sq && ct->dims[ct->rank - 1] == tk &&
               const_band(g, c, tk - sq);
    }
    window rows = {0}, cols = {0};
    while (c->kind == IR_VALUE_NODE && c->producer->op == IR_OP_Slice) {
        if (!read_slice(g, c->producer, &rows, &cols))
            return false;
        c = c->producer->inputs[0];
    }
    const ir_type *bt = c->type;
    if (c->kind != IR_VALUE_CONST || !rows.set || !cols.set || !leading_ones(bt))
        return false;
    int64_t n = bt->dims[bt->rank - 2];
    if (n < 2 || bt->dims[bt->rank - 1] != n || !const_band(g, c, 0))
        return false;
    return never_negative(g, rows.start) && ir_dim_sum(g, rows.start, sq) == tk &&
           rows.end == tk && cols.start == 0 && cols.end == tk;
}
