/* Helpers shared by the per-op type inference (see infer_util.h for the conventions). */
#include "ir/infer_util.h"

#include "base/check.h"
#include "base/half.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---- */

bool ir_node_error(ir_graph *g, const ir_node *n, dg_context *dg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(g->arena, fmt, ap);
    va_end(ap);
    const char *op = ir_op_name(n->op);
    if (g->src)
        dg_error(dg, g->src, n->src_offset, n->src_len, "%s: %s", op, msg);
    else
        dg_error_path(dg, g->name, "node %s: %s: %s", n->noutputs ? n->outputs[0]->name : "?", op,
                      msg);
    return false;
}

static const char *dim_str(ir_graph *g, int64_t d)
{
    if (ir_dim_is_static(d))
        return ar_printf(g->arena, "%lld", (long long)d);
    if (ir_dim_is_symbol(d) && ir_dim_symbol(d) < g->symbols.len)
        return ir_symbol_name(g, d);
    return "?";
}

const char *ir_shape_str(ir_graph *g, const ir_type *t)
{
    if (t->rank < 0)
        return "[*]";
    const char *s = "[";
    for (int i = 0; i < t->rank; i++)
        s = ar_printf(g->arena, "%s%s%s", s, i ? "," : "", dim_str(g, t->dims[i]));
    return ar_printf(g->arena, "%s]", s);
}

const char *ir_input_name(ir_graph *g, const ir_node *n, uint32_t i)
{
    if (i < n->ninputs && n->inputs[i])
        return ar_printf(g->arena, "'%s'", n->inputs[i]->name);
    return ar_printf(g->arena, "#%u", i);
}

/* ---- inputs and outputs ---- */

/* "2", "2 to 3" or "at least 1": an arity range for messages. */
static const char *arity_text(ir_graph *g, unsigned min, unsigned max)
{
    if (max == IR_VARIADIC)
        return ar_printf(g->arena, "at least %u", min);
    if (min == max)
        return ar_printf(g->arena, "%u", min);
    return ar_printf(g->arena, "%u to %u", min, max);
}

bool ir_check_arity(ir_graph *g, const ir_node *n, dg_context *dg)
{
    const ir_op_info *info = ir_op_info_get(n->op);
    if (n->ninputs < info->min_inputs ||
        (info->max_inputs != IR_VARIADIC && n->ninputs > info->max_inputs))
        return ir_node_error(g, n, dg, "takes %s inputs, not %u",
                             arity_text(g, info->min_inputs, info->max_inputs), n->ninputs);
    if (n->noutputs < info->min_outputs ||
        (info->max_outputs != IR_VARIADIC && n->noutputs > info->max_outputs))
        return ir_node_error(g, n, dg, "gives %s outputs, not %u",
                             arity_text(g, info->min_outputs, info->max_outputs), n->noutputs);
    for (uint32_t i = 0; i < info->min_inputs; i++)
        if (!n->inputs[i])
            return ir_node_error(g, n, dg, "input #%u is required", i);
    return true;
}

ir_type ir_type_unknown(ir_dtype dtype, int rank)
{
    FR_CHECK(rank <= IR_MAX_RANK);
    ir_type t = {.dtype = dtype, .rank = (int8_t)rank};
    for (int i = 0; i < IR_MAX_RANK; i++)
        t.dims[i] = IR_DIM_UNKNOWN;
    return t;
}

void ir_set_unknown(ir_graph *g, ir_value *v, ir_dtype dtype, int rank)
{
    ir_type t = ir_type_unknown(dtype, rank);
    ir_value_set_type(g, v, &t);
}

bool ir_check_out_rank(ir_graph *g, const ir_node *n, dg_context *dg, int64_t rank)
{
    if (rank > IR_MAX_RANK)
        return ir_node_error(g, n, dg, "the result would have rank %lld; at most %d is supported",
                             (long long)rank, IR_MAX_RANK);
    return true;
}

bool ir_infer_done(ir_graph *g, ir_node *n, dg_context *dg)
{
    for (uint32_t k = 0; k < n->noutputs; k++) {
        const ir_type *t = n->outputs[k]->type;
        FR_CHECK(t->rank <= IR_MAX_RANK);
        int64_t numel = 1;
        bool empty = false;
        for (int i = 0; i < t->rank; i++) {
            int64_t d = t->dims[i];
            FR_CHECK(d >= 0 || d == IR_DIM_UNKNOWN || ir_dim_is_symbol(d));
            if (d > IR_MAX_NUMEL)
                return ir_node_error(g, n, dg, "output '%s' would have shape %s: a dim above 2^40",
                                     n->outputs[k]->name, ir_shape_str(g, t));
            if (d == 0)
                empty = true;
            else if (ir_dim_is_static(d))
                numel = ir_sat_mul(numel, d);
        }
        /* the static dims alone are too many elements (a symbol can only be 0 to rescue it) */
        if (!empty && numel > IR_MAX_NUMEL)
            return ir_node_error(g, n, dg,
                                 "output '%s' would have shape %s: more than 2^40 elements",
                                 n->outputs[k]->name, ir_shape_str(g, t));
    }
    return true;
}

/* ---- dtypes ---- */

static const char *dtype_list(ir_graph *g, unsigned allowed)
{
    const char *s = "";
    unsigned left = 0;
    for (unsigned dt = 1; dt < IR_DTYPE_COUNT; dt++)
        left += (allowed & IR_DT(dt)) != 0;
    for (unsigned dt = 1; dt < IR_DTYPE_COUNT; dt++) {
        if (!(allowed & IR_DT(dt)))
            continue;
        left--;
        const char *sep = !*s ? "" : left ? ", " : " or ";
        s = ar_printf(g->arena, "%s%s%s", s, sep, ir_dtype_name((ir_dtype)dt));
    }
    return s;
}

bool ir_check_dtype(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, unsigned allowed)
{
    const ir_type *t = ir_in(n, i);
    if (!t || t->dtype == IR_DTYPE_UNKNOWN || (allowed & IR_DT(t->dtype)))
        return true;
    return ir_node_error(g, n, dg, "input %s is %s; expected %s", ir_input_name(g, n, i),
                         ir_dtype_name(t->dtype), dtype_list(g, allowed));
}

bool ir_check_same_dtype(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, uint32_t j)
{
    const ir_type *a = ir_in(n, i), *b = ir_in(n, j);
    if (!a || !b || a->dtype == IR_DTYPE_UNKNOWN || b->dtype == IR_DTYPE_UNKNOWN ||
        a->dtype == b->dtype)
        return true;
    return ir_node_error(g, n, dg, "inputs %s (%s) and %s (%s) must have the same dtype",
                         ir_input_name(g, n, i), ir_dtype_name(a->dtype), ir_input_name(g, n, j),
                         ir_dtype_name(b->dtype));
}

ir_dtype ir_common_dtype(const ir_node *n, uint32_t first, uint32_t last)
{
    for (uint32_t i = first; i <= last; i++) {
        const ir_type *t = ir_in(n, i);
        if (t && t->dtype != IR_DTYPE_UNKNOWN)
            return t->dtype;
    }
    return IR_DTYPE_UNKNOWN;
}

bool ir_dtype_from_onnx(int64_t code, ir_dtype *out)
{
    switch (code) {
    case 1: *out = IR_F32; return true;
    case 2: *out = IR_U8; return true;
    case 3: *out = IR_I8; return true;
    case 6: *out = IR_I32; return true;
    case 7: *out = IR_I64; return true;
    case 9: *out = IR_BOOL; return true;
    case 10: *out = IR_F16; return true;
    case 11: *out = IR_F64; return true;
    case 4: *out = IR_U16; return true;
    case 5: *out = IR_I16; return true;
    case 12: *out = IR_U32; return true;
    case 13: *out = IR_U64; return true;
    case 16: *out = IR_BF16; return true;
    default: return false;
    }
}

/* ---- ranks, axes, dims ---- */

bool ir_check_rank(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int min, int max)
{
    const ir_type *t = ir_in(n, i);
    if (!t || t->rank < 0 || (t->rank >= min && t->rank <= max))
        return true;
    if (min == max)
        return ir_node_error(g, n, dg, "input %s has rank %d (shape %s); expected rank %d",
                             ir_input_name(g, n, i), t->rank, ir_shape_str(g, t), min);
    if (max >= IR_MAX_RANK)
        return ir_node_error(g, n, dg, "input %s has rank %d (shape %s); expected rank %d or more",
                             ir_input_name(g, n, i), t->rank, ir_shape_str(g, t), min);
    return ir_node_error(g, n, dg, "input %s has rank %d (shape %s); expected rank %d to %d",
                         ir_input_name(g, n, i), t->rank, ir_shape_str(g, t), min, max);
}

bool ir_check_scalar(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i)
{
    const ir_type *t = ir_in(n, i);
    if (!t || t->rank <= 0 || (t->rank == 1 && !(ir_dim_is_static(t->dims[0]) && t->dims[0] != 1)))
        return true;
    return ir_node_error(g, n, dg, "input %s must be a scalar, not shape %s",
                         ir_input_name(g, n, i), ir_shape_str(g, t));
}

bool ir_norm_axis(ir_graph *g, const ir_node *n, dg_context *dg, int64_t axis, int rank,
                  const char *what, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return ir_node_error(g, n, dg, "%s %lld is out of range for rank %d", what,
                             (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

int64_t ir_sat_add(int64_t a, int64_t b)
{
    FR_CHECK(a >= 0 && b >= 0);
    return a > IR_DIM_HUGE - b ? IR_DIM_HUGE : a + b;
}

int64_t ir_sat_mul(int64_t a, int64_t b)
{
    FR_CHECK(a >= 0 && b >= 0);
    if (a == 0 || b == 0)
        return 0;
    return a > IR_DIM_HUGE / b ? IR_DIM_HUGE : a * b;
}

int64_t ir_dim_add(ir_graph *g, int64_t a, int64_t b)
{
    return ir_dim_is_static(a) && ir_dim_is_static(b) ? ir_sat_add(a, b) : ir_dim_sum(g, a, b);
}

int64_t ir_dim_mul(ir_graph *g, int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a == 1)
        return b;
    if (b == 1)
        return a;
    return ir_dim_is_static(a) && ir_dim_is_static(b) ? ir_sat_mul(a, b) : ir_dim_product(g, a, b);
}

bool ir_dim_unify(int64_t a, int64_t b, int64_t *out)
{
    if (ir_dim_is_static(a) && ir_dim_is_static(b)) {
        *out = a;
        return a == b;
    }
    if (ir_dim_is_static(a) || ir_dim_is_static(b))
        *out = ir_dim_is_static(a) ? a : b;
    else
        *out = a == b ? a : IR_DIM_UNKNOWN;
    return true;
}

/* One aligned pair of dims under numpy broadcasting; false when both are static and neither is 1. */
static bool broadcast_dim(int64_t a, int64_t b, int64_t *out)
{
    if (a == 1) {
        *out = b;
        return true;
    }
    if (b == 1) {
        *out = a;
        return true;
    }
    return ir_dim_unify(a, b, out);
}

bool ir_broadcast(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *a, const ir_type *b,
                  ir_type *out)
{
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return true;
    }
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (!broadcast_dim(da, db, &dims[i]))
            return ir_node_error(g, n, dg, "shapes %s and %s do not broadcast (%lld vs %lld)",
                                 ir_shape_str(g, a), ir_shape_str(g, b), (long long)da,
                                 (long long)db);
    }
    out->rank = (int8_t)rank;
    memcpy(out->dims, dims, sizeof dims[0] * (size_t)rank);
    return true;
}

bool ir_broadcast_inputs(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t first,
                         uint32_t last, ir_type *out)
{
    *out = ir_type_unknown(ir_in(n, first) ? ir_in(n, first)->dtype : IR_DTYPE_UNKNOWN, 0);
    for (uint32_t i = first; i <= last; i++) {
        const ir_type *t = ir_in(n, i);
        if (t && !ir_broadcast(g, n, dg, out, t, out))
            return false;
    }
    for (uint32_t i = first; i <= last && out->rank >= 0; i++) {
        const ir_type *t = ir_in(n, i);
        if (t && t->rank == out->rank && t->layout != IR_LAYOUT_NONE) {
            out->layout = t->layout;
            break;
        }
    }
    return true;
}

bool ir_check_unidirectional(ir_graph *g, const ir_node *n, dg_context *dg, const ir_type *from,
                             const ir_type *to, const char *what)
{
    if (from->rank < 0 || to->rank < 0)
        return true;
    bool ok = from->rank <= to->rank;
    for (int i = 0; ok && i < from->rank; i++) {
        int64_t d = from->dims[i], unified;
        ok = d == 1 || ir_dim_unify(d, to->dims[i + to->rank - from->rank], &unified);
    }
    if (!ok)
        return ir_node_error(g, n, dg, "%s of shape %s does not broadcast to %s", what,
                             ir_shape_str(g, from), ir_shape_str(g, to));
    return true;
}

/* ---- values read from constant inputs ---- */

double ir_const_element(const void *data, ir_dtype dt, int64_t k)
{
    const unsigned char *p = data;
    switch (dt) {
    case IR_F32: {
        float f;
        memcpy(&f, p + 4 * k, 4);
        return f;
    }
    case IR_F16: {
        uint16_t h;
        memcpy(&h, p + 2 * k, 2);
        return f16_to_f32(h);
    }
    case IR_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * k, 2);
        return bf16_to_f32(h);
    }
    case IR_F64: {
        double d;
        memcpy(&d, p + 8 * k, 8);
        return d;
    }
    case IR_I8: return (int8_t)p[k];
    case IR_U8: return p[k];
    case IR_BOOL: return p[k] != 0;
    case IR_I16: {
        int16_t v;
        memcpy(&v, p + 2 * k, 2);
        return v;
    }
    case IR_U16: {
        uint16_t v;
        memcpy(&v, p + 2 * k, 2);
        return v;
    }
    case IR_U32: {
        uint32_t v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    case IR_U64: {
        uint64_t v;
        memcpy(&v, p + 8 * k, 8);
        return (double)v;
    }
    case IR_I32: {
        int32_t v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    case IR_I64: {
        int64_t v;
        memcpy(&v, p + 8 * k, 8);
        return (double)v;
    }
    default: FR_UNREACHABLE(); return 0;
    }
}

/* The constant behind input i with its element count, or NULL when it is not a readable constant. */
static ir_value *const_input(const ir_node *n, uint32_t i, int64_t *numel)
{
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v || v->kind != IR_VALUE_CONST || v->type->dtype == IR_DTYPE_UNKNOWN ||
        !ir_type_numel(v->type, numel))
        return NULL;
    return v;
}

ir_read_status ir_read_ints(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int64_t *out,
                            uint32_t max, uint32_t *count)
{
    if (!ir_has_input(n, i))
        return IR_READ_UNKNOWN;
    if (!ir_check_dtype(g, n, dg, i, IR_DTS_INDEX) || !ir_check_rank(g, n, dg, i, 0, 1))
        return IR_READ_ERROR;
    int64_t numel;
    ir_value *v = const_input(n, i, &numel);
    if (!v && ir_sv_is_constant(n->inputs[i])) {
        /* a computed vector whose elements inference knows (ir/shape_value.c) */
        const ir_shape_value *sv = n->inputs[i]->sv;
        if (sv->len > max)
            return IR_READ_UNKNOWN;
        for (uint32_t k = 0; k < sv->len; k++)
            out[k] = sv->el[k].v;
        *count = sv->len;
        return IR_READ_KNOWN;
    }
    if (!v)
        return IR_READ_UNKNOWN;
    if (numel > max) {
        ir_node_error(g, n, dg, "input %s holds %lld values; at most %u are expected",
                      ir_input_name(g, n, i), (long long)numel, max);
        return IR_READ_ERROR;
    }
    const void *data = ir_const_data(g, v, dg);
    if (!data)
        return IR_READ_ERROR;
    for (int64_t k = 0; k < numel; k++) {
        if (v->type->dtype == IR_I64) {
            memcpy(&out[k], (const char *)data + 8 * k, 8);
        } else {
            int32_t x;
            memcpy(&x, (const char *)data + 4 * k, 4);
            out[k] = x;
        }
    }
    *count = (uint32_t)numel;
    return IR_READ_KNOWN;
}

ir_read_status ir_read_dims(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                            ir_sv_elem *out, uint32_t max, uint32_t *count)
{
    int64_t vals[IR_SV_MAX];
    ir_read_status st = ir_read_ints(g, n, dg, i, vals, max < IR_SV_MAX ? max : IR_SV_MAX, count);
    if (st == IR_READ_KNOWN)
        for (uint32_t k = 0; k < *count; k++)
            out[k] = (ir_sv_elem){vals[k], IR_SV_INT};
    if (st != IR_READ_UNKNOWN || n->inputs[i]->kind == IR_VALUE_CONST || !n->inputs[i]->sv ||
        n->inputs[i]->sv->len > max)
        return st;
    const ir_shape_value *sv = n->inputs[i]->sv;
    memcpy(out, sv->el, sizeof sv->el[0] * sv->len);
    *count = sv->len;
    return IR_READ_KNOWN;
}

ir_read_status ir_read_const(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                             const void **data, int64_t *numel)
{
    ir_value *v = const_input(n, i, numel);
    if (!v)
        return IR_READ_UNKNOWN;
    *data = ir_const_data(g, v, dg);
    return *data ? IR_READ_KNOWN : IR_READ_ERROR;
}

ir_read_status ir_read_scalar(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i,
                              double *out)
{
    if (!ir_has_input(n, i))
        return IR_READ_UNKNOWN;
    if (!ir_check_scalar(g, n, dg, i))
        return IR_READ_ERROR;
    int64_t numel;
    ir_value *v = const_input(n, i, &numel);
    if (!v || numel != 1)
        return IR_READ_UNKNOWN;
    const void *data = ir_const_data(g, v, dg);
    if (!data)
        return IR_READ_ERROR;
    *out = ir_const_element(data, v->type->dtype, 0);
    return IR_READ_KNOWN;
}

int64_t ir_input_length(const ir_node *n, uint32_t i)
{
    const ir_type *t = ir_in(n, i);
    if (!t || t->rank < 0 || t->rank > 1)
        return -1;
    if (t->rank == 0)
        return 1;
    return ir_dim_is_static(t->dims[0]) ? t->dims[0] : -1;
}

bool ir_read_axes_raw(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t input,
                      const char *attr, int64_t *vals, uint32_t *count, bool *known)
{
    *count = 0;
    *known = true;
    if (ir_has_input(n, input)) {
        if (ir_node_attr(n, attr))
            return ir_node_error(g, n, dg, "%s given both as input %s and as an attribute", attr,
                                 ir_input_name(g, n, input));
        ir_read_status st = ir_read_ints(g, n, dg, input, vals, IR_MAX_RANK, count);
        *known = st == IR_READ_KNOWN;
        return st != IR_READ_ERROR;
    }
    const int64_t *attr_vals;
    uint32_t nattr = ir_get_ints(n, attr, &attr_vals);
    if (nattr > IR_MAX_RANK)
        return ir_node_error(g, n, dg, "%s lists %u axes; at most %d are supported", attr, nattr,
                             IR_MAX_RANK);
    if (nattr)
        memcpy(vals, attr_vals, nattr * sizeof *vals);
    *count = nattr;
    return true;
}

bool ir_norm_axes(ir_graph *g, const ir_node *n, dg_context *dg, const int64_t *vals,
                  uint32_t count, int rank, int *axes)
{
    bool seen[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < count; k++) {
        if (!ir_norm_axis(g, n, dg, vals[k], rank, "axis", &axes[k]))
            return false;
        if (seen[axes[k]])
            return ir_node_error(g, n, dg, "axis %lld is listed twice", (long long)vals[k]);
        seen[axes[k]] = true;
    }
    return true;
}

/* ---- windows: convolution and pooling ---- */

/* The window's attributes, resolved as ir_get_* resolves them (the node's first attribute of that
 * name when it has the schema's kind, else the schema's default) with one walk over the node's
 * attributes and one over the op's schema, instead of a walk of each per attribute read. */
enum { WA_AUTO_PAD, WA_CEIL_MODE, WA_KERNEL, WA_STRIDES, WA_DILATIONS, WA_PADS, WA_COUNT };
static const char *const window_names[WA_COUNT] = {"auto_pad",  "ceil_mode", "kernel_shape",
                                                   "strides",   "dilations", "pads"};

/* Which of window_names `name` is, or -1. */
static int window_attr_index(const char *name)
{
    int j;
    switch (name[0]) {
    case 'a': j = WA_AUTO_PAD; break;
    case 'c': j = WA_CEIL_MODE; break;
    case 'k': j = WA_KERNEL; break;
    case 's': j = WA_STRIDES; break;
    case 'd': j = WA_DILATIONS; break;
    case 'p': j = WA_PADS; break;
    default: return -1;
    }
    /* the second byte first: most of an op's names that begin like one of these differ there */
    const char *want = window_names[j];
    return name[1] == want[1] && strcmp(name, want) == 0 ? j : -1;
}

typedef struct window_attrs {
    const ir_attr *given[WA_COUNT];          /* the node's, NULL when absent */
    const ir_attr_schema *schema[WA_COUNT];  /* the op's, NULL when it has none */
    const ir_op_info *op;
} window_attrs;

/* Each op's schema entries of window_names, found once (by text) and then read from here: for
 * each name, 8 bits of (index in the op's schema + 1, 0 when it has none), and WINDOW_SCHEMA_KNOWN.
 * Any thread computes the same bits, so relaxed atomics suffice. */
#define WINDOW_SCHEMA_KNOWN (UINT64_C(1) << 63)
static _Atomic uint64_t window_schema_slots[IR_OP_COUNT];

static uint64_t window_schema_find(const ir_op_info *info)
{
    uint64_t bits = WINDOW_SCHEMA_KNOWN;
    FR_CHECK(info->nattrs < 255);
    for (uint32_t i = 0; i < info->nattrs; i++) {
        int j = window_attr_index(info->attrs[i].name);
        if (j >= 0 && !(bits >> (8 * j) & 0xff))
            bits |= (uint64_t)(i + 1) << (8 * j);
    }
    return bits;
}

static void window_attrs_find(const ir_node *n, window_attrs *wa)
{
    memset(wa, 0, sizeof *wa);
    wa->op = ir_op_info_get(n->op);
    FR_CHECK((unsigned)n->op < IR_OP_COUNT);
    uint64_t bits = atomic_load_explicit(&window_schema_slots[n->op], memory_order_relaxed);
    if (!bits) {
        bits = window_schema_find(wa->op);
        atomic_store_explicit(&window_schema_slots[n->op], bits, memory_order_relaxed);
    }
    for (int j = 0; j < WA_COUNT; j++) {
        unsigned at = (unsigned)(bits >> (8 * j) & 0xff);
        if (at)
            wa->schema[j] = &wa->op->attrs[at - 1];
    }
    /* a node's attribute is mostly named by the catalog's own string: by address, else by text */
    for (uint32_t i = 0; i < n->nattrs; i++) {
        const char *name = n->attrs[i].name;
        int j = 0;
        while (j < WA_COUNT && !(wa->schema[j] && wa->schema[j]->name == name))
            j++;
        if (j == WA_COUNT)
            j = window_attr_index(name);
        if (j >= 0 && !wa->given[j])
            wa->given[j] = &n->attrs[i];
    }
}

/* The schema's entry for attribute j, which the caller reads: as ir_get_*, an op that does not
 * declare it is a bug in the caller. */
static const ir_attr_schema *window_schema(const window_attrs *wa, int j, ir_attr_kind kind)
{
    const ir_attr_schema *s = wa->schema[j];
    if (!s) {
        fprintf(stderr, "internal error: op %s has no attribute '%s'\n", wa->op->name,
                window_names[j]);
        abort();
    }
    FR_CHECK(s->kind == kind);
    return s;
}

/* Reads INTS attribute j of `want` values (when given) in [min, IR_MAX_NUMEL] into out; absent
 * leaves out as it is. */
static bool window_ints(ir_graph *g, const ir_node *n, dg_context *dg, const window_attrs *wa,
                        int j, uint32_t want, int64_t min, int64_t *out)
{
    const ir_attr *a = wa->given[j];
    const int64_t *vals;
    uint32_t count;
    if (a && a->kind == IR_ATTR_INTS) {
        vals = a->v.ints;
        count = a->count;
    } else {
        const ir_attr_schema *s = window_schema(wa, j, IR_ATTR_INTS);
        vals = s->ints;
        count = s->nints;
    }
    if (count == 0)
        return true;
    const char *name = window_names[j];
    if (count != want)
        return ir_node_error(g, n, dg, "%s has %u values; expected %u", name, count, want);
    for (uint32_t k = 0; k < count; k++) {
        if (vals[k] < min || vals[k] > IR_MAX_NUMEL)
            return ir_node_error(g, n, dg, "%s[%u] = %lld is out of range (%lld to 2^40)", name,
                                 k, (long long)vals[k], (long long)min);
        out[k] = vals[k];
    }
    return true;
}

static bool auto_pad_known(const char *s)
{
    return strcmp(s, "NOTSET") == 0 || strcmp(s, "SAME_UPPER") == 0 ||
           strcmp(s, "SAME_LOWER") == 0 || strcmp(s, "VALID") == 0;
}

bool ir_window_read(ir_graph *g, const ir_node *n, dg_context *dg, int spatial,
                    bool kernel_from_attr, ir_window *w)
{
    FR_CHECK(spatial >= 0 && spatial <= IR_MAX_RANK);
    memset(w, 0, sizeof *w);
    w->spatial = spatial;
    for (int k = 0; k < IR_MAX_RANK; k++) {
        w->kernel[k] = IR_DIM_UNKNOWN;
        w->strides[k] = 1;
        w->dilations[k] = 1;
    }
    window_attrs wa;
    window_attrs_find(n, &wa);
    if (kernel_from_attr && !wa.given[WA_KERNEL])
        return ir_node_error(g, n, dg, "the kernel_shape attribute is required");
    const ir_attr *pad = wa.given[WA_AUTO_PAD];
    w->auto_pad = pad && pad->kind == IR_ATTR_STRING
                      ? pad->v.s
                      : window_schema(&wa, WA_AUTO_PAD, IR_ATTR_STRING)->s;
    if (!auto_pad_known(w->auto_pad))
        return ir_node_error(g, n, dg,
                             "auto_pad \"%s\" is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                             w->auto_pad);
    if (wa.schema[WA_CEIL_MODE]) {
        const ir_attr *c = wa.given[WA_CEIL_MODE];
        w->ceil_mode = (c && c->kind == IR_ATTR_INT
                            ? c->v.i
                            : window_schema(&wa, WA_CEIL_MODE, IR_ATTR_INT)->i) != 0;
    }
    uint32_t u = (uint32_t)spatial;
    if (!window_ints(g, n, dg, &wa, WA_KERNEL, u, 1, w->kernel) ||
        !window_ints(g, n, dg, &wa, WA_STRIDES, u, 1, w->strides) ||
        !window_ints(g, n, dg, &wa, WA_DILATIONS, u, 1, w->dilations) ||
        !window_ints(g, n, dg, &wa, WA_PADS, 2 * u, 0, w->pads))
        return false;
    if (strcmp(w->auto_pad, "NOTSET") != 0) {
        for (int k = 0; k < 2 * spatial; k++)
            if (w->pads[k] != 0)
                return ir_node_error(g, n, dg, "pads cannot be used with auto_pad \"%s\"",
                                     w->auto_pad);
    }
    return true;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

bool ir_window_out(ir_graph *g, const ir_node *n, dg_context *dg, const ir_window *w, int k,
                   int64_t in, int64_t *out)
{
    int64_t kernel = w->kernel[k], stride = w->strides[k];
    if (strncmp(w->auto_pad, "SAME", 4) == 0) {
        /* SAME pads so that the output is ceil(in / stride), whatever the kernel */
        *out = ir_dim_is_static(in) ? ceil_div(in, stride) : ir_dim_quotient(g, in, stride);
        return true;
    }
    if (kernel == IR_DIM_UNKNOWN) {
        *out = IR_DIM_UNKNOWN;
        return true;
    }
    if (kernel < 1)
        return ir_node_error(g, n, dg, "kernel dim %d has size %lld; it must be at least 1", k,
                             (long long)kernel);
    int64_t extent = ir_sat_add(ir_sat_mul(kernel - 1, w->dilations[k]), 1);
    int64_t pads = ir_sat_add(w->pads[k], w->pads[k + w->spatial]);
    if (!ir_dim_is_static(in)) {
        /* (in + pads - extent) / stride + 1 as an expression, where the division is exact for
         * every size (always for stride 1; ceil and floor agree then) */
        int64_t span = ir_dim_difference(g, ir_dim_sum(g, in, pads), extent);
        int64_t steps = span == IR_DIM_UNKNOWN ? span : ir_dim_quotient(g, span, stride);
        *out = steps == IR_DIM_UNKNOWN ? steps : ir_dim_sum(g, steps, 1);
        return true;
    }
    int64_t padded = ir_sat_add(in, pads);
    if (padded < extent)
        return ir_node_error(g, n, dg,
                             "spatial dim %d has size %lld (padded %lld), smaller than the "
                             "kernel extent %lld",
                             k, (long long)in, (long long)padded, (long long)extent);
    int64_t span = padded - extent;
    if (!w->ceil_mode) {
        *out = span / stride + 1;
        return true;
    }
    /* ceil mode: the last window must start inside the input or its leading padding */
    int64_t size = ceil_div(span, stride) + 1;
    if ((size - 1) * stride >= ir_sat_add(in, w->pads[k]))
        size--;
    *out = size;
    return true;
}
