/* Binding a graph's inputs for one run (runtime/inputs.h). */
#include "runtime/inputs.h"

#include <stdarg.h>
#include <string.h>

typedef struct binder {
    ir_graph *g;
    dg_context *dg;
    const rt_options *opts;
    rt_result *res;
    int64_t *symbols; /* per graph symbol: its bound size, or -1 */
    bool *from_dim;   /* per graph symbol: bound by --dim (opts->dims) */
} binder;

static bool error_value(binder *ex, const ir_value *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error about graph input v, located at its declaration when the graph has a source. Always
 * returns false. */
static bool error_value(binder *ex, const ir_value *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *msg = ar_vprintf(ex->res->arena, fmt, ap);
    va_end(ap);
    uint32_t len = ir_value_src_len(ex->g->src, v);
    if (len)
        dg_error(ex->dg, ex->g->src, v->src_offset, len, "%s", msg);
    else
        dg_error_path(ex->dg, ex->g->name, "%s", msg);
    return false;
}

static const char *type_str(binder *ex, const ir_type *t)
{
    char *buf = ar_alloc(ex->res->arena, 160);
    return ir_type_format(ex->g, t, buf, 160);
}

/* Binds dim i of input v, declared `declared`, to the size `given`. A dim that is an expression
 * (`S + 1`) is checked, or binds its one unbound name, once the plain names are bound
 * (check_exprs). */
static bool bind_dim(binder *ex, const ir_value *v, int i, int64_t declared, int64_t given)
{
    if (ir_dim_is_static(declared) && declared != given)
        return error_value(ex, v, "input '%s': dim %d is %lld in the graph but %lld in the tensor",
                           v->name, i, (long long)declared, (long long)given);
    if (ir_dim_expr(ex->g, declared))
        return true;
    if (ir_dim_is_symbol(declared)) {
        int64_t *bound = &ex->symbols[ir_dim_symbol(declared)];
        const char *sym = ir_symbol_name(ex->g, declared);
        if (*bound >= 0 && *bound != given && ex->from_dim[ir_dim_symbol(declared)])
            return error_value(ex, v, "input '%s': %s is %lld in the tensor but --dim %s=%lld",
                               v->name, sym, (long long)given, sym, (long long)*bound);
        if (*bound >= 0 && *bound != given)
            return error_value(ex, v, "input '%s': %s is %lld here but %lld in an earlier input",
                               v->name, sym, (long long)given, (long long)*bound);
        *bound = given;
    }
    return true;
}

static const rt_tensor *find_given(const rt_tensor *given, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(given[i].name, name) == 0)
            return &given[i];
    return NULL;
}

/* Checks a given tensor against its graph input and binds the input's symbols. */
static bool bind_given(binder *ex, const ir_value *v, const rt_tensor *t)
{
    if (t->type.dtype != v->type->dtype)
        return error_value(ex, v, "input '%s' is %s in the graph but %s in the tensor", v->name,
                           ir_dtype_name(v->type->dtype), ir_dtype_name(t->type.dtype));
    if (v->type->rank >= 0 && t->type.rank != v->type->rank)
        return error_value(ex, v, "input '%s' has rank %d in the graph but %d in the tensor",
                           v->name, v->type->rank, t->type.rank);
    int64_t nbytes;
    if (!ir_type_nbytes(&t->type, &nbytes) || (size_t)nbytes != t->nbytes)
        return error_value(ex, v, "input '%s': %zu bytes do not hold a %s tensor", v->name,
                           t->nbytes, type_str(ex, &t->type));
    for (int i = 0; i < v->type->rank; i++)
        if (!bind_dim(ex, v, i, v->type->dims[i], t->type.dims[i]))
            return false;
    return true;
}

/* The dims of the given inputs that are expressions: each binds its one unbound name when it is
 * linear in it (`S + 1` of 5 binds S = 4), rounds until nothing more binds, then every one whose
 * names are bound must have its tensor's size. */
static bool check_exprs(binder *ex, const rt_tensor *given, size_t ngiven)
{
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t k = 0; k < ex->g->inputs.len; k++) {
            const ir_value *v = ex->g->inputs.items[k];
            const rt_tensor *t = find_given(given, ngiven, v->name);
            for (int i = 0; t && i < v->type->rank; i++) {
                int64_t d = v->type->dims[i], value;
                uint32_t solved;
                if (ir_dim_expr(ex->g, d) && !ir_dim_eval(ex->g, d, ex->symbols, &value) &&
                    ir_dim_solve(ex->g, d, t->type.dims[i], ex->symbols, &solved))
                    progress = true;
            }
        }
    }
    for (size_t k = 0; k < ex->g->inputs.len; k++) {
        const ir_value *v = ex->g->inputs.items[k];
        const rt_tensor *t = find_given(given, ngiven, v->name);
        for (int i = 0; t && i < v->type->rank; i++) {
            int64_t d = v->type->dims[i], value;
            if (ir_dim_expr(ex->g, d) && ir_dim_eval(ex->g, d, ex->symbols, &value) &&
                value != t->type.dims[i])
                return error_value(ex, v,
                                   "input '%s': dim %d is %s = %lld with the sizes bound so far, "
                                   "but %lld in the tensor",
                                   v->name, i, ir_symbol_name(ex->g, d), (long long)value,
                                   (long long)t->type.dims[i]);
        }
    }
    return true;
}

/* The static type of a graph input that was not given: its symbols must be bound by now. */
static bool resolve_missing(binder *ex, const ir_value *v, ir_type *out)
{
    *out = *v->type;
    if (v->type->rank < 0)
        return error_value(ex, v, "input '%s' has an unknown rank: give it with --inputs or --input",
                           v->name);
    for (int i = 0; i < v->type->rank; i++) {
        int64_t d = v->type->dims[i], value;
        if (ir_dim_is_symbol(d) && ir_dim_eval(ex->g, d, ex->symbols, &value) && value >= 0 &&
            value <= IR_MAX_NUMEL)
            out->dims[i] = value;
        else if (!ir_dim_is_static(d))
            return error_value(ex, v,
                               "input '%s' has dim %d of unknown size (%s): give the input "
                               "(--inputs, --input) or the size (--dim NAME=N)",
                               v->name, i, type_str(ex, v->type));
    }
    return true;
}

/* ---- the values generated for an input ------------------------------------------------------ */

/* How many values, 0 .. count - 1, an integer input can take where it is read. A token id must
 * stay inside the table it indexes, and all-zero ids or masks would hide the very mistakes verify
 * is there to find (every token the same embedding, every key masked alike); a value read as a
 * shape, a count or a slice bound has no safe range but zero. */
enum { ANY_COUNT = INT64_MAX, /* read only where its values do not matter (Shape) */
       INDEX_DEPTH = 8 };     /* views followed from an input to its reader */

static int64_t count_at(const ir_value *v, int depth);

/* The dim a Gather or GatherElements indexes with operand 1: its data's dim along axis, when
 * static; else 1 (zeros only). */
static int64_t indexed_dim(const ir_node *n)
{
    const ir_type *data = n->inputs[0]->type;
    int64_t axis = ir_get_int(n, "axis");
    if (axis < 0)
        axis += data->rank;
    if (axis < 0 || axis >= data->rank || !ir_dim_is_static(data->dims[axis]))
        return 1;
    return data->dims[axis] > 0 ? data->dims[axis] : 1;
}

/* What node n's operand k allows: an index its dim; a mask (cast to a float or bool, compared)
 * 0 and 1; a view, a Transpose, an Expand or an integer Cast what its output allows; anything else
 * zero. */
static int64_t count_for_reader(const ir_node *n, uint32_t k, int depth)
{
    switch ((ir_op)n->op) {
    case IR_OP_Gather:
    case IR_OP_GatherElements:
        return k == 1 ? indexed_dim(n) : 1;
    case IR_OP_Shape:
    case IR_OP_Size:
        return ANY_COUNT;
    case IR_OP_Equal:
    case IR_OP_Less:
    case IR_OP_Greater:
    case IR_OP_LessOrEqual:
    case IR_OP_GreaterOrEqual:
        return 2;
    case IR_OP_Cast: {
        ir_dtype to = n->outputs[0]->type->dtype;
        if (ir_dtype_is_float(to) || to == IR_BOOL)
            return 2;
        return depth < INDEX_DEPTH ? count_at(n->outputs[0], depth + 1) : 1;
    }
    case IR_OP_Transpose:
    case IR_OP_Expand: /* values moved or repeated, none made */
        return k == 0 && depth < INDEX_DEPTH ? count_at(n->outputs[0], depth + 1) : 1;
    default: /* the views (the catalog's IR_OPF_VIEW: Reshape, Squeeze, ...) pass values through */
        if (ir_op_info_get(n->op)->flags & IR_OPF_VIEW)
            return k == 0 && depth < INDEX_DEPTH ? count_at(n->outputs[0], depth + 1) : 1;
        return 1;
    }
}

/* The fewest values any reader of v allows (a graph output allows any). */
static int64_t count_at(const ir_value *v, int depth)
{
    int64_t count = ANY_COUNT;
    for (uint32_t u = 0; u < v->nuses; u++) {
        const ir_node *n = v->uses[u];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            if (n->inputs[k] == v) {
                int64_t here = count_for_reader(n, k, depth);
                count = here < count ? here : count;
            }
        }
    }
    return count;
}

/* Generated inputs: floats in [-1, 1), i8/u8 over their range, bool 0/1; other integers from 0 up
 * to what their readers allow (count_at), zero where nothing is known. */
static void random_range(const ir_value *v, double *lo, double *hi)
{
    ir_dtype dt = v->type->dtype;
    *lo = 0, *hi = 1;
    if (ir_dtype_is_float(dt)) {
        *lo = -1;
    } else if (dt == IR_I8) {
        *lo = -128, *hi = 128;
    } else if (dt == IR_U8) {
        *hi = 256;
    } else if (dt == IR_BOOL) {
        *hi = 2;
    } else {
        int64_t count = count_at(v, 0);
        *hi = count == ANY_COUNT ? 1 : (double)count;
    }
}

/* Makes graph input k's data: a copy of the given tensor t, or generated when t is NULL. */
static bool make_input(binder *ex, size_t k, const rt_tensor *t)
{
    ir_value *v = ex->g->inputs.items[k];
    rt_tensor *used = &ex->res->inputs[k];
    used->name = v->name;
    if (t) {
        used->type = t->type;
        used->type.layout = v->type->layout;
    } else if (!resolve_missing(ex, v, &used->type)) {
        return false;
    }
    int64_t nbytes, numel;
    if (!ir_type_nbytes(&used->type, &nbytes) || !ir_type_numel(&used->type, &numel))
        return error_value(ex, v, "input '%s' of type %s is too large", v->name,
                           type_str(ex, &used->type));
    used->nbytes = (size_t)nbytes;
    used->data = ar_try_alloc(ex->res->arena, used->nbytes ? used->nbytes : 1);
    if (!used->data)
        return error_value(ex, v, "out of memory for input '%s' (%zu bytes)", v->name,
                           used->nbytes);
    if (t) {
        if (used->nbytes) /* an empty tensor's data may be NULL */
            memcpy(used->data, t->data, used->nbytes);
    } else {
        double lo, hi;
        random_range(v, &lo, &hi);
        ir_random_fill(ex->opts->seed + k, lo, hi, v->type->dtype, used->data, (size_t)numel);
    }
    ir_value_set_type(ex->g, v, &used->type);
    return true;
}

/* Binds the sizes given by --dim; each must name a symbol of the graph. */
static bool bind_dims(binder *ex)
{
    for (size_t k = 0; k < ex->opts->ndims; k++) {
        const rt_dim *d = &ex->opts->dims[k];
        int64_t i = ir_symbol_lookup(ex->g, d->name);
        if (i < 0) {
            dg_error_path(ex->dg, ex->g->src ? ex->g->src->path : ex->g->name,
                          "--dim %s: graph %s has no symbolic dim '%s'", d->name, ex->g->name,
                          d->name);
            return false;
        }
        ex->symbols[i] = d->size;
        ex->from_dim[i] = true;
    }
    return true;
}

bool rt_bind_inputs(ir_graph *g, dg_context *dg, const rt_options *opts, int64_t *symbols,
                    rt_result *res, const rt_tensor *given, size_t ngiven)
{
    bool *from_dim = ar_alloc_array(res->arena, g->symbols.len + 1, sizeof *from_dim);
    memset(from_dim, 0, (g->symbols.len + 1) * sizeof *from_dim);
    binder b = {g, dg, opts, res, symbols, from_dim}, *ex = &b;
    if (!bind_dims(ex))
        return false;
    ex->res->ninputs = g->inputs.len;
    ex->res->inputs = ar_alloc_array(ex->res->arena, g->inputs.len, sizeof *ex->res->inputs);
    for (size_t k = 0; k < g->inputs.len; k++) {
        const rt_tensor *t = find_given(given, ngiven, g->inputs.items[k]->name);
        if (t && !bind_given(ex, g->inputs.items[k], t))
            return false;
    }
    if (!check_exprs(ex, given, ngiven))
        return false;
    for (size_t k = 0; k < g->inputs.len; k++)
        if (!make_input(ex, k, find_given(given, ngiven, g->inputs.items[k]->name)))
            return false;
    return true;
}
