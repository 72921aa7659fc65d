/* Shape values (docs/canon.md, "Shape values"): what inference knows of the small integer vectors
 * exporters compute shapes with. `Shape(x)` of a value with static or symbolic dims is known as a
 * vector of dims; Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Cast, Equal, Where, Expand,
 * ConstantOfShape and Add/Sub/Mul/Div over such vectors are known where their result is, so the
 * classic torch exporter's `Reshape(x, Concat(Gather(Shape(x), 0), [12, 64]))` reads as
 * `[batch, 12, 64]`. Reshape, Expand, ConstantOfShape and Tile read them (infer_util.c,
 * ir_read_dims); canonicalization folds a value whose elements are all known numbers.
 *
 * Arithmetic on dims is exact (ir/dimexpr.c): a quotient with a remainder, a product with a
 * negative number, anything that is not a dim, is an unknown element. */
#include "ir/infer_util.h"

#include "base/check.h"

#include <string.h>

static bool sv_dtype(ir_dtype dt)
{
    return dt == IR_I64 || dt == IR_I32 || dt == IR_BOOL;
}

/* The element count of a static type holding at most IR_SV_MAX elements; 0 otherwise. */
static uint32_t small_numel(const ir_type *t)
{
    int64_t n;
    return ir_type_numel(t, &n) && n >= 1 && n <= IR_SV_MAX ? (uint32_t)n : 0;
}

static ir_sv_elem num(int64_t v)
{
    return (ir_sv_elem){v, IR_SV_INT};
}

static ir_sv_elem unknown(void)
{
    return (ir_sv_elem){0, IR_SV_UNKNOWN};
}

/* A dim as an element: a static dim is a number. */
static ir_sv_elem dim_elem(int64_t d)
{
    if (ir_dim_is_static(d))
        return num(d);
    return ir_dim_is_symbol(d) ? (ir_sv_elem){d, IR_SV_DIM} : unknown();
}

/* What is known of value v: its constant data or its shape value. */
static bool read(ir_graph *g, const ir_value *v, ir_shape_value *out)
{
    if (!v || !sv_dtype(v->type->dtype))
        return false;
    if (v->kind == IR_VALUE_CONST) {
        uint32_t n = small_numel(v->type);
        if (!n || v->type->rank > 1)
            return false;
        const void *data = ir_const_data_or_null(g, (ir_value *)v);
        if (!data)
            return false;
        out->len = n;
        for (uint32_t k = 0; k < n; k++) {
            int64_t x;
            if (v->type->dtype == IR_I64) {
                memcpy(&x, (const char *)data + 8 * k, 8);
            } else if (v->type->dtype == IR_I32) {
                int32_t y;
                memcpy(&y, (const char *)data + 4 * k, 4);
                x = y;
            } else {
                x = ((const uint8_t *)data)[k] != 0;
            }
            out->el[k] = num(x);
        }
        return true;
    }
    if (!v->sv)
        return false;
    *out = *v->sv;
    return true;
}

/* The dim an element stands for, when it is one (a number >= 0 or a dim). */
static bool as_dim(ir_sv_elem e, int64_t *d)
{
    if (e.kind == IR_SV_DIM || (e.kind == IR_SV_INT && e.v >= 0 && e.v <= IR_MAX_NUMEL)) {
        *d = e.v;
        return true;
    }
    return false;
}

static ir_sv_elem from_dim(int64_t d)
{
    return d > IR_MAX_NUMEL ? unknown() : dim_elem(d);
}

/* ---- elementwise ---- */

static ir_sv_elem arith(ir_graph *g, ir_op op, ir_sv_elem a, ir_sv_elem b)
{
    if (a.kind == IR_SV_UNKNOWN || b.kind == IR_SV_UNKNOWN)
        return unknown();
    if (a.kind == IR_SV_INT && b.kind == IR_SV_INT) {
        int64_t r;
        switch (op) {
        case IR_OP_Add: return __builtin_add_overflow(a.v, b.v, &r) ? unknown() : num(r);
        case IR_OP_Sub: return __builtin_sub_overflow(a.v, b.v, &r) ? unknown() : num(r);
        case IR_OP_Mul: return __builtin_mul_overflow(a.v, b.v, &r) ? unknown() : num(r);
        case IR_OP_Div:
            /* integer Div truncates (ONNX Runtime's C++ division) */
            return b.v == 0 || (a.v == INT64_MIN && b.v == -1) ? unknown() : num(a.v / b.v);
        default: return unknown();
        }
    }
    int64_t x = 0, y = 0;
    bool dx = as_dim(a, &x), dy = as_dim(b, &y);
    switch (op) {
    case IR_OP_Add:
        if (dx && dy)
            return from_dim(ir_dim_sum(g, x, y));
        if (dx && b.kind == IR_SV_INT && b.v < 0 && b.v > -IR_MAX_NUMEL)
            return from_dim(ir_dim_difference(g, x, -b.v));
        if (dy && a.kind == IR_SV_INT && a.v < 0 && a.v > -IR_MAX_NUMEL)
            return from_dim(ir_dim_difference(g, y, -a.v));
        return unknown();
    case IR_OP_Sub:
        if (dx && dy)
            return from_dim(ir_dim_difference(g, x, y));
        if (dx && b.kind == IR_SV_INT && b.v < 0 && b.v > -IR_MAX_NUMEL)
            return from_dim(ir_dim_sum(g, x, -b.v));
        return unknown();
    case IR_OP_Mul:
        if (dx && dy)
            return from_dim(ir_dim_product(g, x, y));
        return unknown();
    case IR_OP_Div:
        if (dx && dy && y != 0)
            return from_dim(ir_dim_quotient(g, x, y));
        return unknown();
    default: return unknown();
    }
}

/* Equal of two elements: a dim is never negative, and a symbol equals itself. */
static ir_sv_elem equal(ir_sv_elem a, ir_sv_elem b)
{
    if (a.kind == IR_SV_UNKNOWN || b.kind == IR_SV_UNKNOWN)
        return unknown();
    if (a.kind == b.kind && a.v == b.v)
        return num(1);
    if (a.kind == IR_SV_INT && b.kind == IR_SV_INT)
        return num(0);
    ir_sv_elem k = a.kind == IR_SV_INT ? a : b;
    return k.kind == IR_SV_INT && k.v < 0 ? num(0) : unknown();
}

/* The flat index into an input of `in_len` elements read by output element k under numpy
 * broadcasting, for the types of a small elementwise op. */
static uint32_t broadcast_index(const ir_type *out, const ir_type *in, uint32_t k)
{
    uint32_t idx = 0, stride = 1;
    int64_t rest = k;
    for (int i = out->rank - 1; i >= 0; i--) {
        int64_t od = out->dims[i];
        int64_t coord = rest % od;
        rest /= od;
        int j = i - (out->rank - in->rank);
        if (j < 0)
            continue;
        int64_t id = in->dims[j];
        idx += (uint32_t)((id == 1 ? 0 : coord) * stride);
        stride *= (uint32_t)id;
    }
    return idx;
}

static bool elementwise(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    const ir_type *y = n->outputs[0]->type;
    uint32_t len = small_numel(y);
    uint32_t count = n->op == IR_OP_Where ? 3 : 2;
    ir_shape_value in[3];
    for (uint32_t i = 0; i < count; i++)
        if (i >= n->ninputs || !read(g, n->inputs[i], &in[i]) || !ir_type_is_static(ir_in(n, i)))
            return false;
    out->len = len;
    for (uint32_t k = 0; k < len; k++) {
        ir_sv_elem e[3];
        for (uint32_t i = 0; i < count; i++)
            e[i] = in[i].el[broadcast_index(y, ir_in(n, i), k)];
        if (n->op == IR_OP_Where)
            out->el[k] = e[0].kind != IR_SV_INT ? unknown() : e[0].v ? e[1] : e[2];
        else if (n->op == IR_OP_Equal)
            out->el[k] = equal(e[0], e[1]);
        else
            out->el[k] = arith(g, n->op, e[0], e[1]);
    }
    return true;
}

/* ---- movement ---- */

static bool shape_of(const ir_node *n, ir_shape_value *out)
{
    const ir_type *x = ir_in(n, 0);
    int64_t rank = x->rank, start = ir_get_int(n, "start"), end = ir_get_int(n, "end");
    start = start < 0 ? (start < -rank ? 0 : start + rank) : (start > rank ? rank : start);
    end = end < 0 ? (end < -rank ? 0 : end + rank) : (end > rank ? rank : end);
    out->len = 0;
    for (int64_t i = start; i < end; i++)
        out->el[out->len++] = dim_elem(x->dims[i]);
    return true;
}

static bool gather(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    ir_shape_value data, idx;
    const ir_type *x = ir_in(n, 0);
    if (x->rank != 1 || !read(g, n->inputs[0], &data) || !read(g, n->inputs[1], &idx))
        return false;
    out->len = idx.len;
    for (uint32_t k = 0; k < idx.len; k++) {
        if (idx.el[k].kind != IR_SV_INT)
            return false;
        int64_t i = idx.el[k].v < 0 ? idx.el[k].v + data.len : idx.el[k].v;
        if (i < 0 || i >= data.len)
            return false;
        out->el[k] = data.el[i];
    }
    return true;
}

static bool concat(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    out->len = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_shape_value part;
        if (!read(g, n->inputs[i], &part) || ir_in(n, i)->rank != 1 ||
            out->len + part.len > IR_SV_MAX)
            return false;
        memcpy(&out->el[out->len], part.el, sizeof part.el[0] * part.len);
        out->len += part.len;
    }
    return true;
}

/* Slice of a vector with constant starts, ends and steps (ONNX's clamping). */
static bool slice(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    ir_shape_value data, p[4];
    if (ir_in(n, 0)->rank != 1 || !read(g, n->inputs[0], &data))
        return false;
    for (uint32_t k = 0; k < 4; k++) {
        bool given = k + 1 < n->ninputs && n->inputs[k + 1];
        if (k < 2 && !given)
            return false;
        if (given &&
            (!read(g, n->inputs[k + 1], &p[k]) || p[k].len != 1 || p[k].el[0].kind != IR_SV_INT))
            return false;
    }
    bool has_axes = n->ninputs > 3 && n->inputs[3], has_steps = n->ninputs > 4 && n->inputs[4];
    if (has_axes && p[2].el[0].v != 0 && p[2].el[0].v != -1)
        return false;
    int64_t len = data.len, start = p[0].el[0].v, end = p[1].el[0].v;
    int64_t step = has_steps ? p[3].el[0].v : 1;
    if (step == 0)
        return false;
    if (start < 0)
        start = start < -len ? (step > 0 ? 0 : -1) : start + len;
    if (end < 0)
        end = end < -len ? -1 : end + len;
    out->len = 0;
    if (step > 0) {
        start = start > len ? len : start;
        end = end > len ? len : end < 0 ? 0 : end;
        for (int64_t i = start; i < end; i += step)
            out->el[out->len++] = data.el[i];
    } else {
        start = start > len - 1 ? len - 1 : start;
        end = end > len - 1 ? len - 1 : end;
        for (int64_t i = start; i > end && i >= 0; i += step)
            out->el[out->len++] = data.el[i];
    }
    return true;
}

/* Ops whose output holds the input's elements in the same order. */
static bool same_elements(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    if (!read(g, n->inputs[0], out))
        return false;
    if (n->op == IR_OP_Cast && n->outputs[0]->type->dtype == IR_BOOL)
        for (uint32_t k = 0; k < out->len; k++)
            out->el[k] = out->el[k].kind == IR_SV_INT ? num(out->el[k].v != 0) : unknown();
    return true;
}

/* Expand of a vector: elements repeated by broadcasting. */
static bool expand(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    ir_shape_value in;
    const ir_type *y = n->outputs[0]->type;
    if (!read(g, n->inputs[0], &in) || !ir_type_is_static(ir_in(n, 0)))
        return false;
    out->len = small_numel(y);
    for (uint32_t k = 0; k < out->len; k++)
        out->el[k] = in.el[broadcast_index(y, ir_in(n, 0), k)];
    return true;
}

static bool constant_of_shape(const ir_node *n, ir_shape_value *out)
{
    double v = ir_get_float(n, "value");
    if (v != (double)(int64_t)v)
        return false;
    out->len = small_numel(n->outputs[0]->type);
    for (uint32_t k = 0; k < out->len; k++)
        out->el[k] = num(n->outputs[0]->type->dtype == IR_BOOL ? v != 0 : (int64_t)v);
    return true;
}

static bool compute(ir_graph *g, const ir_node *n, ir_shape_value *out)
{
    switch (n->op) {
    case IR_OP_Shape: return ir_in(n, 0)->rank >= 0 && shape_of(n, out);
    case IR_OP_Gather: return ir_get_int(n, "axis") == 0 && gather(g, n, out);
    case IR_OP_Concat: return concat(g, n, out);
    case IR_OP_Slice: return slice(g, n, out);
    case IR_OP_Identity:
    case IR_OP_Reshape:
    case IR_OP_Squeeze:
    case IR_OP_Unsqueeze:
    case IR_OP_Flatten:
    case IR_OP_Cast: return same_elements(g, n, out);
    case IR_OP_Expand: return expand(g, n, out);
    case IR_OP_ConstantOfShape: return constant_of_shape(n, out);
    case IR_OP_Add:
    case IR_OP_Sub:
    case IR_OP_Mul:
    case IR_OP_Div:
    case IR_OP_Equal:
    case IR_OP_Where: return elementwise(g, n, out);
    default: return false;
    }
}

bool ir_shape_value_equal(const ir_shape_value *a, const ir_shape_value *b)
{
    if (!a || !b)
        return a == b;
    if (a->len != b->len)
        return false;
    for (uint32_t k = 0; k < a->len && k < IR_SV_MAX; k++)
        if (a->el[k].kind != b->el[k].kind || a->el[k].v != b->el[k].v)
            return false;
    return true;
}

void ir_infer_shape_value(ir_graph *g, ir_node *n)
{
    for (uint32_t k = 0; k < n->noutputs; k++)
        n->outputs[k]->sv = NULL;
    if (n->noutputs != 1)
        return;
    ir_value *y = n->outputs[0];
    uint32_t len = small_numel(y->type);
    if (!len || y->type->rank > 1 || !sv_dtype(y->type->dtype))
        return;
    ir_shape_value sv;
    memset(&sv, 0, sizeof sv);
    if (!compute(g, n, &sv) || sv.len != len)
        return;
    bool any = false;
    for (uint32_t k = 0; k < len; k++)
        any |= sv.el[k].kind != IR_SV_UNKNOWN;
    if (!any)
        return;
    ir_shape_value *copy = ar_alloc(g->arena, sizeof *copy);
    *copy = sv;
    y->sv = copy;
}

bool ir_sv_is_constant(const ir_value *v)
{
    const ir_shape_value *sv = ir_value_sv(v);
    if (!sv)
        return false;
    for (uint32_t k = 0; k < sv->len; k++)
        if (sv->el[k].kind != IR_SV_INT)
            return false;
    return true;
}
