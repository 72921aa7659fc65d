/* ONNX import: a ModelProto becomes a validated graph.
 *
 * The steps, in order: decode the file (decode.c); read the opsets; initializers become constants;
 * graph inputs become inputs (with symbolic dims); every node's outputs are defined, then its
 * inputs and attributes are read (so nodes may come in any order); Constant nodes become
 * constants; attributes that later opsets moved to inputs are converted (legacy.c), com.microsoft
 * ops become fused ops (contrib.c); then the graph is validated, which infers every type.
 *
 * Names are kept as ONNX writes them (the text form quotes what needs quoting), so the mapping is
 * the identity; only an output that ONNX leaves unnamed ("") before a named one gets a fresh name.
 * docs/onnx.md has the details. */
#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "base/half.h"
#include "base/path.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Constants of at most this many elements are written inline in the text (`= [1, -1]`); larger
 * ones go to the safetensors file beside the graph. */
enum { LITERAL_MAX = 8 };

typedef struct {
    const char *op_type; /* "domain.op" outside the default domain */
    unsigned count;
} op_tally;

/* A default-domain op_type and the op it is (standard_op). */
enum { OP_MEMO = 128 }; /* a power of two */
typedef struct {
    const char *type; /* in the decoded message; NULL: a free slot */
    ir_op op;
    bool known;
} op_memo;

struct ox_importer {
    ox_report *r;
    ir_graph *g;
    const char *model_dir;
    int64_t opset;    /* default domain; 0 when the model imports none */
    int64_t ms_opset; /* com.microsoft; 0 when not imported */
    bool fuserule;    /* the "fuserule" domain is imported */
    VEC(ox_pending) pending;
    VEC(op_tally) unknown_ops;
    VEC(ir_node *) legacy_softmax;
    VEC(ox_deferred_const) deferred;
    VEC(ox_fixup) fixups;
    /* every name the model's nodes define, which made-up names must avoid: collected from
     * `nodes` when the first name is made up (most models need none) */
    sm_map onnx_names;
    const Onnx__NodeProto *const *nodes;
    size_t nnodes;
    bool names_collected;
    op_memo op_memo[OP_MEMO];
};

ir_graph *ox_importer_graph(ox_importer *im) { return im->g; }
ox_report *ox_importer_report(ox_importer *im) { return im->r; }

/* ---- names ---------------------------------------------------------------------------------- */

/* The graph's name: ONNX's, or the file's name without ".onnx" when ONNX gives none. Copied: the
 * message is freed after import. */
static const char *graph_name(ar_arena *a, const char *onnx_name, const char *path)
{
    if (onnx_name && onnx_name[0])
        return ar_strdup(a, onnx_name);
    const char *base = path_base(path);
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".onnx") == 0)
        n -= 5;
    return n ? ar_strndup(a, base, n) : "model";
}

/* a, b and c put together: labels are made for every node and initializer, and ar_printf costs
 * more than the rest of their import */
static const char *concat3(ar_arena *arena, const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *s = ar_alloc(arena, na + nb + nc + 1);
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    memcpy(s + na + nb, c, nc + 1);
    return s;
}

/* "node 'name' (Op)" for messages; an unnamed node is named by its first output. */
static const char *node_label(ar_arena *a, const Onnx__NodeProto *np)
{
    const char *name = np->name && np->name[0] ? np->name
                       : np->n_output && np->output[0][0] ? np->output[0]
                                                          : "?";
    const char *op = np->op_type ? np->op_type : "?";
    size_t nlen = strlen(name), oplen = strlen(op);
    char *s = ar_alloc(a, nlen + oplen + sizeof "node '' ()");
    char *p = s;
    memcpy(p, "node '", 6), p += 6;
    memcpy(p, name, nlen), p += nlen;
    memcpy(p, "' (", 3), p += 3;
    memcpy(p, op, oplen), p += oplen;
    memcpy(p, ")", 2);
    return s;
}

/* ---- constants ------------------------------------------------------------------------------ */

/* The values of a small tensor as doubles, exactly; false when it is too big to be a literal or
 * holds a value a literal cannot spell (nan, inf, an i64 beyond 2^53). */
static bool literal_values(ar_arena *a, const ox_tensor_data *td, double **out, size_t *count)
{
    size_t size = ir_dtype_size(td->type.dtype);
    size_t n = td->nbytes / size;
    if (n == 0 || n > LITERAL_MAX)
        return false;
    double *v = ar_alloc_array(a, n, sizeof *v);
    const uint8_t *p = td->data;
    for (size_t i = 0; i < n; i++, p += size) {
        switch (td->type.dtype) {
        case IR_F32: {
            float f;
            memcpy(&f, p, 4);
            v[i] = ox_float_to_double(f);
            break;
        }
        case IR_F16:
        case IR_BF16: {
            uint16_t h;
            memcpy(&h, p, 2);
            v[i] = ox_float_to_double(td->type.dtype == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h));
            break;
        }
        case IR_F64:
            memcpy(&v[i], p, 8);
            break;
        case IR_I8:
            v[i] = *(const int8_t *)p;
            break;
        case IR_U8:
        case IR_BOOL:
            v[i] = *p;
            break;
        case IR_I32: {
            int32_t x;
            memcpy(&x, p, 4);
            v[i] = x;
            break;
        }
        case IR_I64: {
            int64_t x;
            memcpy(&x, p, 8);
            if (x > ((int64_t)1 << 53) || x < -((int64_t)1 << 53))
                return false;
            v[i] = (double)x;
            break;
        }
        default: /* i16, u16, u32, u64: kept as data */
            return false;
        }
        if (!isfinite(v[i]))
            return false;
    }
    *out = v;
    *count = n;
    return true;
}

/* A constant holding a decoded tensor: inline when small, else data for the safetensors file. */
static ir_value *add_const(ox_importer *im, const char *name, ox_tensor_data *td)
{
    ir_graph *g = im->g;
    double *values;
    size_t count;
    bool literal = literal_values(g->arena, td, &values, &count);
    ir_const *c = ir_const_new(g, literal ? IR_CONST_LITERAL : IR_CONST_DATA);
    ir_value *v = ir_add_const(g, name, &td->type, c);
    if (!v)
        return NULL;
    if (literal) {
        c->literal = values;
        c->literal_count = count;
    } else if (td->mapped) {
        if (td->map) { /* external data: the graph owns its mapping from now on */
            ir_const_adopt_mapping(g, td->map, td->map_len);
            td->map = NULL;
        }
        ir_const_set_mapped(g, v, td->data, td->nbytes); /* the bytes stay in the file */
    } else {
        ir_const_set_data(g, v, td->data, td->nbytes);
    }
    return v;
}

/* A constant of i64 or f32 values made by import itself. */
static ir_value *made_const(ox_importer *im, const char *stem, ir_dtype dt, const void *data,
                            uint32_t count, bool scalar)
{
    ox_tensor_data td = {.type = {.dtype = dt, .rank = scalar ? 0 : 1, .dims = {count}},
                         .data = data,
                         .nbytes = count * ir_dtype_size(dt)};
    ir_value *v = add_const(im, ir_fresh_name(im->g, stem), &td);
    FR_CHECK(v != NULL); /* the name is fresh */
    return v;
}

ir_value *ox_const_i64(ox_importer *im, const char *stem, const int64_t *values, uint32_t count,
                       bool scalar)
{
    return made_const(im, stem, IR_I64, count ? (const void *)values : "", count, scalar);
}

ir_value *ox_const_scalar(ox_importer *im, const char *stem, ir_dtype dt, double value)
{
    ir_graph *g = im->g;
    ir_const *c = ir_const_new(g, IR_CONST_LITERAL);
    ir_type t = {.dtype = dt, .rank = 0};
    ir_value *v = ir_add_const(g, ir_fresh_name(g, stem), &t, c);
    FR_CHECK(v != NULL); /* the name is fresh */
    c->literal = ar_alloc_array(g->arena, 1, sizeof *c->literal);
    c->literal[0] = value;
    c->literal_count = 1;
    return v;
}

void ox_importer_defer_const(ox_importer *im, ir_node *n, uint32_t index, double value)
{
    vec_push(&im->deferred, ((ox_deferred_const){n, index, value}));
}

void ox_importer_after_validation(ox_importer *im, ox_fixup_fn fn, void *ctx)
{
    vec_push(&im->fixups, ((ox_fixup){fn, ctx}));
}

/* Runs what waited for the graph's types; true when nothing did or all of it worked. */
static bool run_fixups(ox_importer *im)
{
    bool ok = true;
    if (im->deferred.len)
        ok = ox_legacy_bounds_fixup(im, im->deferred.items, im->deferred.len);
    for (size_t i = 0; i < im->fixups.len; i++)
        ok = im->fixups.items[i].fn(im, im->fixups.items[i].ctx) && ok;
    return ok;
}

ir_value *ox_const_f32(ox_importer *im, const char *stem, double value)
{
    float f = (float)value;
    return made_const(im, stem, IR_F32, &f, 1, true);
}

ir_value *ox_const_f32s(ox_importer *im, const char *stem, const float *values, uint32_t count)
{
    return made_const(im, stem, IR_F32, count ? (const void *)values : "", count, false);
}

ir_value *ox_const_vector(ox_importer *im, const char *stem, ir_dtype dt, const void *data,
                          uint32_t count)
{
    return made_const(im, stem, dt, count ? data : "", count, false);
}

/* Whether `name` is listed among the graph's inputs. */
static bool listed_as_input(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name && strcmp(gp->input[i]->name, name) == 0)
            return true;
    return false;
}

/* From IR version 4 on, an initializer that is also a graph input is only a default: the caller
 * may feed another value (ONNX IR spec, "Graphs"; ONNX Runtime does not fold or fuse such a
 * tensor either). It becomes a graph input, so that no rule treats it as a constant; the IR has
 * no input defaults, so the default is dropped, with a warning. In IR version 3 every
 * initializer is listed as an input and its value is the constant. */
static bool overridable(const Onnx__ModelProto *m, const char *name)
{
    return m->ir_version >= 4 && listed_as_input(m->graph, name);
}

static bool add_initializers(ox_importer *im, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *gp = m->graph;
    bool ok = true;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !t->name[0]) {
            ox_invalid(im->r, "initializer %zu has no name", i);
            ok = false;
            continue;
        }
        if (overridable(m, t->name)) {
            dg_warning_path(im->r->dg, im->r->path,
                            "initializer '%s' is also a graph input (IR version %lld): it is "
                            "imported as a graph input, its default value dropped, and nothing "
                            "folds or fuses it as a constant",
                            t->name, (long long)m->ir_version);
            continue;
        }
        const char *what = concat3(im->g->arena, "initializer '", t->name, "'");
        ox_tensor_data td;
        if (!ox_tensor_decode(im->r, t, im->model_dir, what, &td)) {
            ok = false;
            continue;
        }
        if (!add_const(im, t->name, &td)) {
            ox_invalid(im->r, "%s is defined twice", what);
            ok = false;
        }
        ox_tensor_data_release(&td);
    }
    if (gp->n_sparse_initializer) {
        ox_unsupported(im->r, "sparse initializers are outside the IR");
        ok = false;
    }
    return ok;
}

/* ---- graph inputs --------------------------------------------------------------------------- */

/* Dim denotations (DATA_BATCH, DATA_CHANNEL, DATA_FEATURE) spell a layout, e.g. NCHW = "NCFF". */
static const struct {
    const char *pattern;
    ir_layout layout;
} layouts[] = {
    {"NCFF", IR_LAYOUT_NCHW}, {"NFFC", IR_LAYOUT_NHWC},   {"NCF", IR_LAYOUT_NCW},
    {"NFC", IR_LAYOUT_NWC},   {"NCFFF", IR_LAYOUT_NCDHW}, {"NFFFC", IR_LAYOUT_NDHWC},
    {"NC", IR_LAYOUT_NC},
};

static ir_layout layout_of(const Onnx__TensorShapeProto *shape)
{
    char pattern[IR_MAX_RANK + 1] = {0};
    for (size_t i = 0; i < shape->n_dim; i++) {
        const char *d = shape->dim[i]->denotation;
        if (!d)
            return IR_LAYOUT_NONE;
        pattern[i] = strcmp(d, "DATA_BATCH") == 0     ? 'N'
                     : strcmp(d, "DATA_CHANNEL") == 0 ? 'C'
                     : strcmp(d, "DATA_FEATURE") == 0 ? 'F'
                                                      : '?';
    }
    for (size_t i = 0; i < FR_COUNT_OF(layouts); i++)
        if (strcmp(pattern, layouts[i].pattern) == 0)
            return layouts[i].layout;
    return IR_LAYOUT_NONE;
}

static bool read_dims(ox_importer *im, const Onnx__TensorShapeProto *shape, const char *what,
                      ir_type *t)
{
    if (shape->n_dim > IR_MAX_RANK) {
        ox_unsupported(im->r, "%s has rank %zu; the IR holds ranks up to %d", what, shape->n_dim,
                       IR_MAX_RANK);
        return false;
    }
    t->rank = (int8_t)shape->n_dim;
    int64_t numel = 1;
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        int64_t dim = IR_DIM_UNKNOWN;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            dim = d->dim_value;
            if (dim < 0) {
                ox_invalid(im->r, "%s has a negative dim %" PRId64, what, dim);
                return false;
            }
            if (dim != 0 && numel > IR_MAX_NUMEL / dim) {
                ox_invalid(im->r, "%s: its dims hold more than %" PRId64 " elements", what,
                           IR_MAX_NUMEL);
                return false;
            }
            numel *= dim;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param[0]) {
            dim = ir_symbol(im->g, d->dim_param, strlen(d->dim_param));
        }
        t->dims[i] = dim;
    }
    t->layout = (uint8_t)layout_of(shape);
    return true;
}

static bool value_type(ox_importer *im, const Onnx__ValueInfoProto *vi, const char *what,
                       ir_type *t)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
        ox_invalid(im->r, "%s has no type", what);
        return false;
    }
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        const char *kind = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? "a sequence"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE    ? "a map"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE
                               ? "an optional"
                               : "a sparse tensor";
        ox_unsupported(im->r, "%s is %s; the IR holds dense tensors only", what, kind);
        return false;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    ir_dtype dt;
    if (!tt->has_elem_type || !ox_dtype_from_onnx(tt->elem_type, &dt)) {
        int32_t code = tt->has_elem_type ? tt->elem_type : 0;
        if (code == 0)
            ox_invalid(im->r, "%s has no element type", what);
        else
            ox_unsupported(im->r, "%s has element type %s, which the IR does not hold", what,
                           ox_onnx_dtype_name(code));
        return false;
    }
    *t = (ir_type){.dtype = dt, .rank = -1};
    return !tt->shape || read_dims(im, tt->shape, what, t);
}

static bool add_inputs(ox_importer *im, const Onnx__GraphProto *gp)
{
    bool ok = true;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->name[0]) {
            ox_invalid(im->r, "graph input %zu has no name", i);
            ok = false;
            continue;
        }
        ir_value *known = ir_find_value(im->g, vi->name);
        /* IR version 3 lists initializers among the inputs: the initializer's value is used */
        if (known && known->kind == IR_VALUE_CONST)
            continue;
        const char *what = ar_printf(im->g->arena, "graph input '%s'", vi->name);
        ir_type t;
        if (!value_type(im, vi, what, &t)) {
            ok = false;
        } else if (!ir_add_input(im->g, vi->name, &t)) {
            ox_invalid(im->r, "%s is listed twice", what);
            ok = false;
        }
    }
    return ok;
}

/* ---- Constant nodes ------------------------------------------------------------------------- */

/* The tensor a Constant node's attribute holds, in ox_tensor_data form. */
static bool constant_tensor(ox_importer *im, const Onnx__AttributeProto *a, const char *what,
                            ox_tensor_data *td)
{
    const char *name = a->name ? a->name : "";
    *td = (ox_tensor_data){0};
    if (strcmp(name, "value") == 0 && a->t)
        return ox_tensor_decode(im->r, a->t, im->model_dir, what, td);
    bool is_float = strcmp(name, "value_float") == 0 || strcmp(name, "value_floats") == 0;
    bool is_int = strcmp(name, "value_int") == 0 || strcmp(name, "value_ints") == 0;
    if (!is_float && !is_int) {
        ox_unsupported(im->r, "%s: a Constant of attribute '%s' is outside the IR", what, name);
        return false;
    }
    bool scalar = strcmp(name, "value_float") == 0 || strcmp(name, "value_int") == 0;
    size_t count = scalar ? 1 : is_float ? a->n_floats : a->n_ints;
    td->type = (ir_type){.dtype = is_float ? IR_F32 : IR_I64, .rank = scalar ? 0 : 1,
                         .dims = {(int64_t)count}};
    td->nbytes = count * ir_dtype_size(td->type.dtype);
    const void *src = scalar ? (is_float ? (const void *)&a->f : (const void *)&a->i)
                             : (is_float ? (const void *)a->floats : (const void *)a->ints);
    td->data = count ? src : "";
    return true;
}

static bool define_constant(ox_importer *im, const Onnx__NodeProto *np, const char *label)
{
    if (np->n_output != 1 || !np->output[0][0] || np->n_input != 0 || np->n_attribute != 1) {
        ox_invalid(im->r, "%s must have one named output, no inputs and one attribute", label);
        return false;
    }
    ox_tensor_data td;
    if (!constant_tensor(im, np->attribute[0], label, &td))
        return false;
    bool ok = add_const(im, np->output[0], &td) != NULL;
    if (!ok)
        ox_invalid(im->r, "%s: value '%s' is defined twice", label, np->output[0]);
    ox_tensor_data_release(&td);
    return ok;
}

/* ---- nodes: defining outputs ---------------------------------------------------------------- */

static void tally_unknown(ox_importer *im, const char *domain, const char *op_type)
{
    const char *name = domain[0] && strcmp(domain, "ai.onnx") != 0
                           ? ar_printf(im->g->arena, "%s.%s", domain, op_type)
                           : op_type;
    for (size_t i = 0; i < im->unknown_ops.len; i++) {
        if (strcmp(im->unknown_ops.items[i].op_type, name) == 0) {
            im->unknown_ops.items[i].count++;
            return;
        }
    }
    vec_push(&im->unknown_ops, ((op_tally){name, 1}));
}

static bool lookup_standard_op(ox_importer *im, const char *type, ir_op *op)
{
    if (ir_op_lookup(type, strlen(type), op) && ir_op_info_get(*op)->cls != IR_CLASS_FUSED)
        return true;
    if (ox_legacy_lookup(type, im->opset, op)) /* Upsample, Scatter */
        return true;
    return ox_onnx23_lookup(type, im->opset, op); /* Attention, RMSNormalization, ... */
}

/* The op of a default-domain op_type, remembered per op_type: the catalog's lookup compares
 * every name, and a model has a few dozen op types over many thousands of nodes. */
static bool standard_op(ox_importer *im, const char *type, ir_op *op)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *c = type; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    for (unsigned probe = 0; probe < OP_MEMO; probe++) {
        op_memo *m = &im->op_memo[(h + probe) & (OP_MEMO - 1)];
        if (!m->type) {
            m->type = type;
            m->known = lookup_standard_op(im, type, &m->op);
            *op = m->op;
            return m->known;
        }
        if (strcmp(m->type, type) == 0) {
            *op = m->op;
            return m->known;
        }
    }
    return lookup_standard_op(im, type, op); /* more op types than the table holds */
}

/* Which IR op a node is, and the opset of its domain; false when the op is not one import knows. */
static bool node_op(ox_importer *im, const Onnx__NodeProto *np, ir_op *op, int64_t *opset)
{
    const char *domain = np->domain ? np->domain : "";
    const char *type = np->op_type ? np->op_type : "";
    if (!domain[0] || strcmp(domain, "ai.onnx") == 0) {
        *opset = im->opset;
        return standard_op(im, type, op);
    }
    if (strcmp(domain, "com.microsoft") == 0) {
        *opset = im->ms_opset;
        return ox_contrib_lookup(type, op) || ox_contrib_standard(type, op, opset);
    }
    if (strcmp(domain, "fuserule") == 0) {
        *opset = OX_MAX_OPSET; /* fuserule ops have the catalog's (latest) semantics */
        return ir_op_lookup(type, strlen(type), op);
    }
    return false;
}

static void collect_names(ox_importer *im);

const char *ox_importer_fresh(ox_importer *im, const Onnx__NodeProto *np, size_t slot)
{
    collect_names(im);
    const char *stem = np->name && np->name[0] ? np->name : NULL;
    for (size_t i = 0; !stem && i < np->n_output; i++)
        if (np->output[i][0])
            stem = np->output[i];
    const char *base = ar_printf(im->g->arena, "%s_output%zu", stem ? stem : "node", slot);
    const char *name = base;
    /* distinct from the graph's names so far and from those later nodes define */
    for (unsigned k = 1; ir_find_value(im->g, name) || sm_get(&im->onnx_names, name, strlen(name));
         k++)
        name = ar_printf(im->g->arena, "%s_%u", base, k);
    return name;
}

/* Records the names of the model's node outputs (once, before the first made-up name). */
static void collect_names(ox_importer *im)
{
    if (im->names_collected)
        return;
    im->names_collected = true;
    const Onnx__NodeProto *const *nodes = im->nodes;
    for (size_t i = 0; i < im->nnodes; i++)
        for (size_t k = 0; k < nodes[i]->n_output; k++)
            sm_put(&im->onnx_names, nodes[i]->output[k], strlen(nodes[i]->output[k]),
                   (void *)nodes[i]);
}

ir_node *ox_importer_add_node(ox_importer *im, ir_op op, uint32_t ninputs, const char **names,
                              uint32_t noutputs, const char *label)
{
    for (uint32_t i = 0; i < noutputs; i++) {
        for (uint32_t k = 0; k < i; k++) {
            if (strcmp(names[k], names[i]) == 0) {
                ox_invalid(im->r, "%s writes value '%s' twice", label, names[i]);
                return NULL;
            }
        }
    }
    ir_node *n = ir_add_node(im->g, op, ninputs, names, noutputs);
    for (uint32_t i = 0; !n && i < noutputs; i++) { /* it refused a name the graph has */
        if (ir_find_value(im->g, names[i])) {
            ox_invalid(im->r, "%s defines '%s', which is already defined", label, names[i]);
            return NULL;
        }
    }
    FR_CHECK(n != NULL);
    return n;
}

/* A node of the default or fuserule domain: ONNX's outputs without trailing unnamed ("") ones,
 * and a fresh name for an unnamed output before a named one. */
static ir_node *define_plain(ox_importer *im, const Onnx__NodeProto *np, ir_op op,
                             const char *label)
{
    size_t nout = np->n_output;
    while (nout > 0 && !np->output[nout - 1][0])
        nout--;
    if (nout == 0) {
        ox_invalid(im->r, "%s has no named output", label);
        return NULL;
    }
    const ir_op_info *info = ir_op_info_get(op);
    if (info->max_outputs != IR_VARIADIC && nout > info->max_outputs) {
        ox_unsupported(im->r, "%s has %zu outputs; the catalog's %s has at most %u", label, nout,
                       info->name, info->max_outputs);
        return NULL;
    }
    if (nout > IR_MAX_OUTPUTS) { /* a value's out_index is 16 bits */
        ox_unsupported(im->r, "%s has %zu outputs; a node has at most %u", label, nout,
                       (unsigned)IR_MAX_OUTPUTS);
        return NULL;
    }
    const char **names = ar_alloc_array(im->g->arena, nout, sizeof *names);
    for (size_t i = 0; i < nout; i++)
        names[i] = np->output[i][0] ? np->output[i] : ox_importer_fresh(im, np, i);
    size_t nin = np->n_input;
    while (nin > 0 && !np->input[nin - 1][0])
        nin--;
    return ox_importer_add_node(im, op, (uint32_t)nin, names, (uint32_t)nout, label);
}

/* A com.microsoft op that becomes a fused op (contrib.c), not a standard op under that domain. */
static bool is_contrib_form(const Onnx__NodeProto *np)
{
    ir_op op;
    return np->domain && strcmp(np->domain, "com.microsoft") == 0 && np->op_type &&
           ox_contrib_lookup(np->op_type, &op);
}

static bool define_node(ox_importer *im, const Onnx__NodeProto *np)
{
    const char *label = node_label(im->g->arena, np);
    const char *domain = np->domain ? np->domain : "";
    bool standard = !domain[0] || strcmp(domain, "ai.onnx") == 0;
    if (standard && np->op_type && strcmp(np->op_type, "Constant") == 0)
        return define_constant(im, np, label);
    if (standard && !im->opset) {
        ox_invalid(im->r, "%s: the model imports no opset of the default domain", label);
        return false;
    }
    /* ONNX Runtime runs com.microsoft ops whether or not the model imports that domain (its
     * optimizer writes them so), so import does too */
    if (strcmp(domain, "fuserule") == 0 && !im->fuserule) {
        ox_invalid(im->r, "%s: the model imports no opset of domain '%s'", label, domain);
        return false;
    }
    ir_op op;
    int64_t opset;
    if (!node_op(im, np, &op, &opset)) {
        tally_unknown(im, domain, np->op_type ? np->op_type : "");
        return true; /* reported with every other unknown op by report_unknown_ops */
    }
    ir_node *n = is_contrib_form(np) ? ox_contrib_define(im, np, op, label)
                                     : define_plain(im, np, op, label);
    if (!n)
        return false;
    vec_push(&im->pending, ((ox_pending){np, n, opset, label}));
    return true;
}

/* ---- nodes: inputs and attributes ----------------------------------------------------------- */

static bool resolve_inputs(ox_importer *im, ox_pending *p)
{
    const ir_op_info *info = ir_op_info_get(p->node->op);
    if (info->max_inputs != IR_VARIADIC && p->node->ninputs > info->max_inputs) {
        ox_unsupported(im->r, "%s has %u inputs; the catalog's %s takes at most %u", p->label,
                       p->node->ninputs, info->name, info->max_inputs);
        return false;
    }
    bool ok = true;
    for (uint32_t i = 0; i < p->node->ninputs; i++) {
        const char *name = p->proto->input[i];
        if (!name[0])
            continue; /* an omitted optional input */
        ir_value *v = ir_find_value(im->g, name);
        if (!v) {
            ox_invalid(im->r, "%s reads '%s', which nothing defines", p->label, name);
            ok = false;
        }
        ir_set_input(p->node, i, v);
    }
    return ok;
}

static const char *attr_kind_name(ir_attr_kind k)
{
    static const char *const names[] = {"int", "float", "string", "ints", "floats"};
    return names[k];
}

/* ConstantOfShape's tensor `value` becomes the catalog's float `value` and TensorProto `dtype`. */
static bool constant_of_shape_value(ox_importer *im, ox_pending *p, const Onnx__AttributeProto *a)
{
    ox_tensor_data td;
    if (!ox_tensor_decode(im->r, a->t, NULL, p->label, &td))
        return false;
    double *values;
    size_t count;
    bool ok = literal_values(im->g->arena, &td, &values, &count) && count == 1;
    if (ok) {
        ir_set_attr_float(im->g, p->node, "value", values[0]);
        ir_set_attr_int(im->g, p->node, "dtype", ox_dtype_to_onnx(td.type.dtype));
    } else {
        ox_unsupported(im->r, "%s: value must be one finite number", p->label);
    }
    ox_tensor_data_release(&td);
    return ok;
}

/* Levenshtein distance of two short names, capped at 3. */
static unsigned edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 3;
    unsigned row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb] < 3 ? row[lb] : 3;
}

/* The op's attribute that `name` misspells (at most 2 edits from it), or NULL. */
static const char *misspelt_attr(ir_op op, const char *name)
{
    const ir_op_info *info = ir_op_info_get(op);
    for (uint32_t i = 0; i < info->nattrs; i++)
        if (edit_distance(name, info->attrs[i].name) <= 2 && strlen(name) > 3)
            return info->attrs[i].name;
    return NULL;
}

static bool copy_attr(ox_importer *im, ox_pending *p, const Onnx__AttributeProto *a)
{
    ir_graph *g = im->g;
    ir_node *n = p->node;
    const char *name = a->name ? a->name : "";
    if (a->ref_attr_name && a->ref_attr_name[0]) {
        ox_invalid(im->r, "%s: attribute '%s' refers to a function's attribute", p->label, name);
        return false;
    }
    const ir_attr_schema *s = ir_op_attr_schema(n->op, name);
    bool legacy = !s && ox_legacy_attr(n->op, p->opset, name); /* moved to an input by legacy.c */
    if (!s && !legacy) {
        const char *near = misspelt_attr(n->op, name);
        if (near) /* not valid ONNX either: the op has no such attribute */
            ox_invalid(im->r, "%s: attribute '%s' is not one of %s's (a misspelling of '%s'?)",
                       p->label, name, ir_op_name(n->op), near);
        else
            ox_unsupported(im->r, "%s: attribute '%s' is outside the catalog", p->label, name);
        return false;
    }
    if (!a->has_type) {
        ox_invalid(im->r, "%s: attribute '%s' has no type", p->label, name);
        return false;
    }
    ir_attr_kind kind;
    switch (a->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        kind = IR_ATTR_FLOAT;
        ir_set_attr_float(g, n, name, ox_float_to_double(a->f));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        kind = IR_ATTR_INT;
        ir_set_attr_int(g, n, name, a->i);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        kind = IR_ATTR_STRING;
        if (a->s.len && memchr(a->s.data, '\0', a->s.len)) {
            ox_invalid(im->r, "%s: attribute '%s' holds a NUL byte", p->label, name);
            return false;
        }
        ir_set_attr_string(g, n, name,
                           a->s.len ? ar_strndup(g->arena, (const char *)a->s.data, a->s.len) : "");
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        kind = IR_ATTR_INTS;
        ir_set_attr_ints(g, n, name, a->ints, (uint32_t)a->n_ints);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        kind = IR_ATTR_FLOATS;
        double *v = ar_alloc_array(g->arena, a->n_floats, sizeof *v);
        for (size_t i = 0; i < a->n_floats; i++)
            v[i] = ox_float_to_double(a->floats[i]);
        ir_set_attr_floats(g, n, name, v, (uint32_t)a->n_floats);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (n->op == IR_OP_ConstantOfShape && strcmp(name, "value") == 0 && a->t)
            return constant_of_shape_value(im, p, a);
        /* fall through */
    default:
        ox_unsupported(im->r, "%s: attribute '%s' is a graph, tensor or list of strings, which "
                              "the catalog does not take",
                       p->label, name);
        return false;
    }
    if (legacy)
        return true;
    if (kind != s->kind && !(kind == IR_ATTR_INT && s->kind == IR_ATTR_FLOAT)) {
        ox_invalid(im->r, "%s: attribute '%s' is %s %s, but %s takes %s %s", p->label, name,
                   kind == IR_ATTR_INT ? "an" : "a", attr_kind_name(kind), ir_op_name(n->op),
                   s->kind == IR_ATTR_INT || s->kind == IR_ATTR_INTS ? "an" : "a",
                   attr_kind_name(s->kind));
        return false;
    }
    return true;
}

static bool finish_node(ox_importer *im, ox_pending *p)
{
    if (is_contrib_form(p->proto))
        return ox_contrib_import(im, p);
    const char *domain = p->proto->domain ? p->proto->domain : "";
    if (strcmp(domain, "fuserule") != 0 && ir_op_info_get(p->node->op)->cls == IR_CLASS_FUSED)
        return ox_onnx23_import(im, p); /* a default-domain op of opset 23 */
    if (!resolve_inputs(im, p))
        return false;
    bool ok = true;
    for (size_t i = 0; i < p->proto->n_attribute; i++)
        ok = copy_attr(im, p, p->proto->attribute[i]) && ok;
    if (!ok)
        return false;
    ir_op op = p->node->op;
    if ((op == IR_OP_Softmax || op == IR_OP_LogSoftmax || op == IR_OP_Hardmax) && p->opset < 13)
        vec_push(&im->legacy_softmax, p->node);
    return ox_legacy_convert(im, p);
}

/* Used by contrib.c: the value an ONNX input slot names, NULL when omitted; false when undefined. */
bool ox_importer_input(ox_importer *im, ox_pending *p, size_t slot, ir_value **out)
{
    *out = NULL;
    if (slot >= p->proto->n_input || !p->proto->input[slot][0])
        return true;
    *out = ir_find_value(im->g, p->proto->input[slot]);
    if (!*out)
        ox_invalid(im->r, "%s reads '%s', which nothing defines", p->label,
                   p->proto->input[slot]);
    return *out != NULL;
}

/* ---- the model ------------------------------------------------------------------------------ */

static bool read_opsets(ox_importer *im, const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *domain = o->domain ? o->domain : "";
        int64_t version = o->has_version ? o->version : 0;
        if (!domain[0] || strcmp(domain, "ai.onnx") == 0)
            im->opset = version;
        else if (strcmp(domain, "com.microsoft") == 0)
            im->ms_opset = version;
        else if (strcmp(domain, "fuserule") == 0)
            im->fuserule = true;
    }
    im->r->info->opset = im->opset;
    if (im->opset > OX_MAX_OPSET) {
        ox_unsupported(im->r, "opset %" PRId64 " is newer than import reads (up to %d)",
                       im->opset, OX_MAX_OPSET);
        return false;
    }
    if (im->opset < 0) {
        ox_invalid(im->r, "opset %" PRId64 " is not a version", im->opset);
        return false;
    }
    return true;
}

static bool report_unknown_ops(ox_importer *im)
{
    if (!im->unknown_ops.len)
        return true;
    char list[1024];
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < im->unknown_ops.len && used < sizeof list; i++) {
        const op_tally *t = &im->unknown_ops.items[i];
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s (%u)", i ? ", " : "",
                                 t->op_type, t->count);
    }
    ox_unsupported(im->r, "%zu op type%s outside the catalog: %s", im->unknown_ops.len,
                   im->unknown_ops.len == 1 ? "" : "s", list);
    return false;
}

static bool add_outputs(ox_importer *im, const Onnx__GraphProto *gp)
{
    bool ok = true;
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        ir_value *v = ir_find_value(im->g, name);
        if (!v) {
            ox_invalid(im->r, "graph output '%s' is not defined", name);
            ok = false;
            continue;
        }
        ir_add_output(im->g, v);
    }
    return ok;
}

/* The value-name map is larger than the caches: the slots that a node a few places ahead defines
 * or reads are fetched while this one is handled. */
enum { PREFETCH_AHEAD = 8 };

static void prefetch_names(ox_importer *im, char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ir_names_prefetch(&im->g->by_name, names[i], strlen(names[i]));
}

static bool import_graph(ox_importer *im, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *gp = m->graph;
    /* the value names, one a node (most have one output), initializer and input: the map is
     * sized once, not doubled and rehomed (and its new pages faulted in) as it fills */
    ir_names_reserve(&im->g->by_name, gp->n_node + gp->n_initializer + gp->n_input);
    if (!add_initializers(im, m) || !add_inputs(im, gp))
        return false;
    const Onnx__NodeProto **nodes;
    size_t count;
    if (!ox_inline_functions(im->r, im->g->arena, m, im->opset, &nodes, &count))
        return false;
    im->nodes = nodes;
    im->nnodes = count;
    bool ok = true;
    for (size_t i = 0; i < count; i++) {
        if (i + PREFETCH_AHEAD < count)
            prefetch_names(im, nodes[i + PREFETCH_AHEAD]->output,
                           nodes[i + PREFETCH_AHEAD]->n_output);
        ok = define_node(im, nodes[i]) && ok;
    }
    if (!report_unknown_ops(im) || !ok)
        return false;
    for (size_t i = 0; i < im->pending.len; i++) {
        if (i + PREFETCH_AHEAD < im->pending.len) {
            const Onnx__NodeProto *ahead = im->pending.items[i + PREFETCH_AHEAD].proto;
            prefetch_names(im, ahead->input, ahead->n_input);
        }
        ok = finish_node(im, &im->pending.items[i]) && ok;
    }
    return add_outputs(im, gp) && ok;
}

/* Puts the constants in the order nodes first read them (the others after, as they were): the order
 * ONNX lists initializers in means nothing, and this one survives an export and a re-import,
 * whichever constants the export turned into attributes and import back into constants. */
static void order_constants(ir_graph *g)
{
    size_t n = g->values.len;
    ir_value **order = malloc((n ? n : 1) * sizeof *order);
    bool *placed = calloc(n ? n : 1, sizeof *placed);
    FR_CHECK(order && placed);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) { /* everything but constants keeps its place */
        ir_value *v = g->values.items[i];
        if (v->kind != IR_VALUE_CONST) {
            order[k++] = v;
            placed[i] = true;
        }
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *node = g->nodes.items[i];
        for (uint32_t j = 0; j < node->ninputs; j++) {
            ir_value *v = node->inputs[j];
            if (v && !placed[v->id]) {
                placed[v->id] = true;
                order[k++] = v;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!placed[i])
            order[k++] = g->values.items[i];
    FR_CHECK(k == n);
    for (size_t i = 0; i < n; i++) {
        g->values.items[i] = order[i];
        order[i]->id = (uint32_t)i;
    }
    free(order);
    free(placed);
}

static void importer_free(ox_importer *im)
{
    vec_free(&im->pending);
    vec_free(&im->unknown_ops);
    vec_free(&im->legacy_softmax);
    vec_free(&im->deferred);
    vec_free(&im->fixups);
    sm_free(&im->onnx_names);
}

static ir_graph *import_model(ox_report *r, const Onnx__ModelProto *m, const char *path,
                              ox_decoded *decoded)
{
    if (!m->graph) {
        ox_invalid(r, "the model has no graph");
        return NULL;
    }
    char *dir = path_dir(NULL, path);
    ox_importer im = {.r = r, .model_dir = dir};
    im.g = ir_graph_new("model");
    ox_decoded_give_mapping(decoded, im.g); /* its tensors left in the file become constants */
    im.g->name = graph_name(im.g->arena, m->graph->name, path);
    im.g->dir = ar_strdup(im.g->arena, dir);
    bool ok = read_opsets(&im, m) && import_graph(&im, m) && !dg_has_errors(r->dg);
    /* validation prefixes its errors about a built graph with the graph's name: here they are
     * about the file */
    const char *name = im.g->name;
    im.g->name = path;
    ok = ok && ir_validate(im.g, r->dg);
    if (ok && (im.deferred.len || im.fixups.len))
        ok = run_fixups(&im) && !dg_has_errors(r->dg) && ir_validate(im.g, r->dg);
    if (ok && im.legacy_softmax.len)
        ok = ox_legacy_softmax_fixup(&im, im.legacy_softmax.items, im.legacy_softmax.len) &&
             ir_validate(im.g, r->dg);
    im.g->name = name;
    if (ok)
        order_constants(im.g);
    if (!ok && !r->invalid && !r->unsupported)
        r->invalid = true; /* validation failed */
    importer_free(&im);
    free(dir);
    if (!ok) {
        ir_graph_free(im.g);
        return NULL;
    }
    return im.g;
}

ir_graph *ox_import(const char *path, ox_import_info *info, dg_context *dg)
{
    ox_import_info scratch;
    if (!info)
        info = &scratch;
    *info = (ox_import_info){0};
    ox_report r = {.path = path, .dg = dg, .info = info};
    ox_decoded *owner;
    const Onnx__ModelProto *m =
        (const Onnx__ModelProto *)ox_decode_file_lazy(&r, &onnx__model_proto__descriptor, &owner);
    r.decoded = owner;
    ir_graph *g = m ? import_model(&r, m, path, owner) : NULL;
    ox_decoded_free(owner);
    ox_report_finish(&r);
    return g;
}
