/* ONNX export: a validated graph becomes a ModelProto.
 *
 * Catalog ops become standard ONNX at one opset: the lowest from 17 (the newest that Debian's onnx
 * checker knows) that expresses every node (opset.c), or the one asked for. Attributes the catalog keeps in
 * an older form (Reduce axes, Clip bounds, ...) become whatever that opset wants, and back. Fused
 * ops become com.microsoft contrib ops where ONNX Runtime has one with the same semantics
 * (contrib.c), otherwise ops of the "fuserule" domain carrying the node's attributes, which import
 * reads back. Every protobuf struct lives in one arena, freed once the model is packed. */
#define _GNU_SOURCE /* copy_file_range */

#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "base/half.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An initializer whose bytes are computed when read (ir_const_is_deferred: rows of other
 * constants, a folded weight), not put together: its raw_data points at `key`, an address the
 * packer passes to the writer without reading it, and the writer copies the rows from where they
 * lie or computes the bytes a chunk at a time (ox_export, which packs into memory, materializes
 * them first). */
typedef struct {
    const uint8_t *key;
    ir_value *v;
    Onnx__TensorProto *tp;
} rows_init;

struct ox_exporter {
    ir_graph *g;
    dg_context *dg;
    ar_arena *a;
    int64_t opset;
    ox_flavour flavour;
    const char *out_path;                  /* link_weights: the output's name, else NULL */
    /* the input last asked about, and its location (NULL: refused) */
    const char *link_path, *link_location;
    bool uses_ms, uses_fuserule;
    VEC(Onnx__NodeProto *) nodes;
    VEC(Onnx__TensorProto *) made_inits; /* initializers export made up */
    VEC(rows_init) rows;                 /* initializers computed when written */
    bool *used;     /* by value id: the model reads this constant */
    sm_map made;    /* names of initializers export made up */
    bool ok;
};

static char *xstrdup(ox_exporter *ex, const char *s)
{
    return ar_strdup(ex->a, s);
}

/* Reports an error about a node; export goes on to find the others. */
static void node_error(ox_exporter *ex, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void node_error(ox_exporter *ex, const ir_node *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dg_error_path(ex->dg, ex->g->name, "node %s (%s): %s", n->outputs[0]->name,
                  ir_op_name(n->op), msg);
    ex->ok = false;
}

/* ---- tensors -------------------------------------------------------------------------------- */

static Onnx__TensorProto *new_tensor(ox_exporter *ex, const char *name, const ir_type *t,
                                     const void *data, size_t nbytes)
{
    Onnx__TensorProto *tp = ar_alloc(ex->a, sizeof *tp);
    onnx__tensor_proto__init(tp);
    tp->name = xstrdup(ex, name);
    tp->has_data_type = true;
    tp->data_type = ox_dtype_to_onnx(t->dtype);
    tp->n_dims = (size_t)t->rank;
    tp->dims = ar_alloc_array(ex->a, (size_t)t->rank, sizeof *tp->dims);
    memcpy(tp->dims, t->dims, (size_t)t->rank * sizeof *tp->dims);
    tp->has_raw_data = true;
    tp->raw_data.len = nbytes;
    tp->raw_data.data = (uint8_t *)data; /* read only by the packer */
    return tp;
}

/* The folder of path, resolved (symbolic links followed), or NULL. */
static char *real_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    FR_CHECK(dir != NULL);
    char *real = realpath(dir, NULL);
    free(dir);
    return real;
}

/* Where the output finds the input file `path` (open as fd): the name of the file it resolves to,
 * relative to the output's folder, which must hold it (readers of ONNX external data, ONNX
 * Runtime's and fuserule's, refuse a file that resolves outside the model's folder), or NULL
 * after reporting why not. The answer is kept for the next weight of the same file: a refusal is
 * reported once, not once per weight. */
static const char *link_location(ox_exporter *ex, int fd, const char *path)
{
    if (ex->link_path && strcmp(ex->link_path, path) == 0)
        return ex->link_location;
    struct stat by_fd, by_name;
    char *in = realpath(path, NULL), *out_dir = real_dir(ex->out_path);
    const char *location = NULL;
    if (!in || !out_dir || fstat(fd, &by_fd) != 0 || stat(in, &by_name) != 0 ||
        by_fd.st_dev != by_name.st_dev || by_fd.st_ino != by_name.st_ino) {
        dg_error_path(ex->dg, path,
                      "--link-weights: cannot link the weights of this file: it is no longer the "
                      "file they were read from, or its name cannot be resolved");
    } else {
        size_t n = strlen(out_dir);
        if (strncmp(in, out_dir, n) == 0 && in[n == 1 ? 0 : n] == '/')
            location = xstrdup(ex, in + (n == 1 ? 1 : n + 1));
        else
            dg_error_path(ex->dg, path,
                          "--link-weights: this file (%s) must be in the output's folder (%s) or "
                          "below it: ONNX external data may not leave the model's folder",
                          in, out_dir);
    }
    free(in);
    free(out_dir);
    ex->link_path = xstrdup(ex, path);
    ex->link_location = location;
    return location;
}

static Onnx__StringStringEntryProto *string_entry(ox_exporter *ex, const char *key,
                                                  const char *value)
{
    Onnx__StringStringEntryProto *e = ar_alloc(ex->a, sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = xstrdup(ex, key);
    e->value = xstrdup(ex, value);
    return e;
}

/* An initializer whose bytes stay in the input file: external data naming the file, their offset
 * and length. NULL after reporting why the file cannot be named. */
static Onnx__TensorProto *linked_tensor(ox_exporter *ex, const ir_value *v, int fd,
                                        const char *path, int64_t offset)
{
    const char *location = link_location(ex, fd, path);
    if (!location) {
        ex->ok = false;
        return NULL;
    }
    Onnx__TensorProto *tp = new_tensor(ex, v->name, v->type, NULL, 0);
    tp->has_raw_data = false;
    tp->has_data_location = true;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    tp->n_external_data = 3;
    tp->external_data = ar_alloc_array(ex->a, 3, sizeof *tp->external_data);
    tp->external_data[0] = string_entry(ex, "location", location);
    tp->external_data[1] = string_entry(ex, "offset", ar_printf(ex->a, "%" PRId64, offset));
    tp->external_data[2] = string_entry(ex, "length", ar_printf(ex->a, "%zu", v->konst->nbytes));
    return tp;
}

/* Marks a constant that the model needs as an initializer. */
static void use_value(ox_exporter *ex, ir_value *v)
{
    if (v && v->kind == IR_VALUE_CONST)
        ex->used[v->id] = true;
}

/* The initializers: the graph's constants that the model reads, in the graph's order, then the
 * ones export made up (lists that attributes held). */
static Onnx__TensorProto **initializers(ox_exporter *ex, size_t *count)
{
    VEC(Onnx__TensorProto *) all = {0};
    for (size_t i = 0; i < ex->g->values.len; i++) {
        ir_value *v = ex->g->values.items[i];
        if (!ex->used[v->id])
            continue;
        size_t nbytes;
        if (ir_const_is_deferred(v) && v->konst->nbytes >= OX_LAZY_MIN_BYTES) {
            /* the constant's record: a unique address, never read as the bytes */
            Onnx__TensorProto *tp = new_tensor(ex, v->name, v->type, v->konst, v->konst->nbytes);
            vec_push(&ex->rows, ((rows_init){tp->raw_data.data, v, tp}));
            vec_push(&all, tp);
            continue;
        }
        int fd;
        int64_t offset;
        const char *path;
        /* (a mapped constant's data, when something read it, is a copy of the mapped bytes) */
        if (ex->out_path && v->konst->kind == IR_CONST_DATA && v->konst->mapped &&
            v->konst->nbytes >= OX_LAZY_MIN_BYTES &&
            ir_const_file_range(ex->g, v->konst->mapped, v->konst->nbytes, &fd, &offset, &path)) {
            Onnx__TensorProto *tp = linked_tensor(ex, v, fd, path, offset);
            if (tp)
                vec_push(&all, tp);
            continue;
        }
        /* where the bytes lie: a weight no rule changed is written from its file's mapping */
        const void *data = ir_const_bytes(ex->g, v, &nbytes, ex->dg);
        if (!data) {
            ex->ok = false;
            continue;
        }
        vec_push(&all, new_tensor(ex, v->name, v->type, data, nbytes));
    }
    for (size_t i = 0; i < ex->made_inits.len; i++)
        vec_push(&all, ex->made_inits.items[i]);
    Onnx__TensorProto **out = ar_alloc_array(ex->a, all.len, sizeof *out);
    if (all.len)
        memcpy(out, all.items, all.len * sizeof *out);
    *count = all.len;
    vec_free(&all);
    return out;
}

/* A name for a tensor export makes up, distinct from the graph's names and from the others. */
static const char *made_name(ox_exporter *ex, const char *stem)
{
    const char *name = xstrdup(ex, stem);
    for (unsigned k = 1; ir_find_value(ex->g, name) || sm_get(&ex->made, name, strlen(name)); k++)
        name = ar_printf(ex->a, "%s_%u", stem, k);
    sm_put(&ex->made, name, strlen(name), (void *)name);
    return name;
}

/* An initializer export makes up (a list that an attribute held); returns its name. */
static const char *made_initializer(ox_exporter *ex, const char *stem, ir_dtype dt,
                                    const void *values, uint32_t count, bool scalar)
{
    size_t nbytes = count * ir_dtype_size(dt);
    void *copy = ar_alloc(ex->a, nbytes);
    memcpy(copy, values, nbytes);
    ir_type t = {.dtype = dt, .rank = scalar ? 0 : 1, .dims = {count}};
    const char *name = made_name(ex, stem);
    vec_push(&ex->made_inits, new_tensor(ex, name, &t, copy, nbytes));
    return name;
}

/* One float value stored in dtype dt, for Clip bounds made from attributes. */
static const char *made_scalar(ox_exporter *ex, const char *stem, ir_dtype dt, double value)
{
    uint8_t buf[8] = {0};
    float f = (float)value;
    switch (dt) {
    case IR_F32:
        memcpy(buf, &f, 4);
        break;
    case IR_F16: {
        uint16_t h = f32_to_f16(f);
        memcpy(buf, &h, 2);
        break;
    }
    case IR_BF16: {
        uint16_t h = f32_to_bf16(f);
        memcpy(buf, &h, 2);
        break;
    }
    case IR_F64:
        memcpy(buf, &value, 8);
        break;
    default:
        FR_UNREACHABLE();
    }
    return made_initializer(ex, stem, dt, buf, 1, true);
}

/* ---- attributes ----------------------------------------------------------------------------- */

static Onnx__AttributeProto *add_attr(ox_exporter *ex, Onnx__NodeProto *np, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = ar_alloc(ex->a, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xstrdup(ex, name);
    a->has_type = true;
    a->type = type;
    Onnx__AttributeProto **grown = ar_alloc_array(ex->a, np->n_attribute + 1, sizeof *grown);
    if (np->n_attribute)
        memcpy(grown, np->attribute, np->n_attribute * sizeof *grown);
    grown[np->n_attribute++] = a;
    np->attribute = grown;
    return a;
}

void ox_emit_attr_int(ox_exporter *ex, Onnx__NodeProto *np, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(ex, np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = true;
    a->i = v;
}

void ox_emit_attr_float(ox_exporter *ex, Onnx__NodeProto *np, const char *name, double v)
{
    Onnx__AttributeProto *a =
        add_attr(ex, np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = true;
    a->f = (float)v;
}

void ox_emit_attr_string(ox_exporter *ex, Onnx__NodeProto *np, const char *name, const char *v)
{
    Onnx__AttributeProto *a =
        add_attr(ex, np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = true;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)xstrdup(ex, v);
}

void ox_emit_attr_ints(ox_exporter *ex, Onnx__NodeProto *np, const char *name, const int64_t *v,
                       uint32_t count)
{
    Onnx__AttributeProto *a = add_attr(ex, np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = count;
    a->ints = ar_alloc_array(ex->a, count, sizeof *a->ints);
    if (count)
        memcpy(a->ints, v, count * sizeof *v);
}

void ox_emit_attr_floats(ox_exporter *ex, Onnx__NodeProto *np, const char *name,
                         const double *v, uint32_t count)
{
    Onnx__AttributeProto *a =
        add_attr(ex, np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = count;
    a->floats = ar_alloc_array(ex->a, count, sizeof *a->floats);
    for (uint32_t i = 0; i < count; i++)
        a->floats[i] = (float)v[i];
}

static void emit_attr(ox_exporter *ex, Onnx__NodeProto *np, const ir_attr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT:
        ox_emit_attr_int(ex, np, a->name, a->v.i);
        break;
    case IR_ATTR_FLOAT:
        ox_emit_attr_float(ex, np, a->name, a->v.f);
        break;
    case IR_ATTR_STRING:
        ox_emit_attr_string(ex, np, a->name, a->v.s);
        break;
    case IR_ATTR_INTS:
        ox_emit_attr_ints(ex, np, a->name, a->v.ints, a->count);
        break;
    case IR_ATTR_FLOATS:
        ox_emit_attr_floats(ex, np, a->name, a->v.floats, a->count);
        break;
    }
}

void ox_emit_copy_attrs(ox_exporter *ex, Onnx__NodeProto *np, const ir_node *n,
                        const char *const *names)
{
    for (; *names; names++) {
        const ir_attr *a = ir_node_attr(n, *names);
        if (a)
            emit_attr(ex, np, a);
    }
}

/* ---- nodes ---------------------------------------------------------------------------------- */

/* A node with n's outputs and the given inputs (NULL: omitted; trailing omitted ones dropped). */
static Onnx__NodeProto *new_node(ox_exporter *ex, const char *domain, const char *op_type,
                                 const ir_node *n, ir_value *const *in, uint32_t nin)
{
    Onnx__NodeProto *np = ar_alloc(ex->a, sizeof *np);
    onnx__node_proto__init(np);
    np->name = xstrdup(ex, n->outputs[0]->name);
    np->op_type = xstrdup(ex, op_type);
    if (domain[0])
        np->domain = xstrdup(ex, domain);
    while (nin > 0 && !in[nin - 1])
        nin--;
    np->n_input = nin;
    np->input = ar_alloc_array(ex->a, nin, sizeof *np->input);
    for (uint32_t i = 0; i < nin; i++) {
        np->input[i] = in[i] ? xstrdup(ex, in[i]->name) : "";
        use_value(ex, in[i]);
    }
    np->n_output = n->noutputs;
    np->output = ar_alloc_array(ex->a, n->noutputs, sizeof *np->output);
    for (uint32_t i = 0; i < n->noutputs; i++)
        np->output[i] = xstrdup(ex, n->outputs[i]->name);
    vec_push(&ex->nodes, np);
    return np;
}

Onnx__NodeProto *ox_emit_node(ox_exporter *ex, const char *domain, const char *op_type,
                              const ir_node *n)
{
    if (strcmp(domain, "com.microsoft") == 0)
        ex->uses_ms = true;
    return new_node(ex, domain, op_type, n, n->inputs, n->ninputs);
}

void ox_emit_outputs(ox_exporter *ex, Onnx__NodeProto *np, const ir_node *n, const int *slots,
                     uint32_t nslots)
{
    FR_CHECK(nslots >= n->noutputs);
    size_t count = 0;
    for (uint32_t i = 0; i < n->noutputs; i++)
        if ((size_t)slots[i] + 1 > count)
            count = (size_t)slots[i] + 1;
    np->n_output = count;
    np->output = ar_alloc_array(ex->a, count, sizeof *np->output);
    for (size_t i = 0; i < count; i++)
        np->output[i] = "";
    for (uint32_t i = 0; i < n->noutputs; i++)
        np->output[slots[i]] = xstrdup(ex, n->outputs[i]->name);
}

/* ---- subgraphs (export_ort.c) --------------------------------------------------------------- */

int64_t ox_emit_opset(const ox_exporter *ex) { return ex->opset; }

const char *ox_emit_temp(ox_exporter *ex, const char *stem) { return made_name(ex, stem); }

const char *ox_emit_const_i64(ox_exporter *ex, const char *stem, const int64_t *v, uint32_t n,
                              bool scalar)
{
    return made_initializer(ex, stem, IR_I64, n ? (const void *)v : "", n, scalar);
}

const char *ox_emit_const_float(ox_exporter *ex, const char *stem, ir_dtype dt, double v)
{
    return made_scalar(ex, stem, dt, v);
}

const char *ox_emit_const_data(ox_exporter *ex, const char *stem, const ir_type *t,
                               const void *data, size_t nbytes)
{
    void *copy = ar_alloc(ex->a, nbytes);
    memcpy(copy, data, nbytes);
    const char *name = made_name(ex, stem);
    vec_push(&ex->made_inits, new_tensor(ex, name, t, copy, nbytes));
    return name;
}

Onnx__NodeProto *ox_emit_raw(ox_exporter *ex, const char *domain, const char *op_type,
                             const char *const *in, uint32_t nin, const char *const *out,
                             uint32_t nout)
{
    Onnx__NodeProto *np = ar_alloc(ex->a, sizeof *np);
    onnx__node_proto__init(np);
    np->name = xstrdup(ex, out[0]);
    np->op_type = xstrdup(ex, op_type);
    if (domain[0])
        np->domain = xstrdup(ex, domain);
    if (strcmp(domain, "com.microsoft") == 0)
        ex->uses_ms = true;
    np->n_input = nin;
    np->input = ar_alloc_array(ex->a, nin, sizeof *np->input);
    for (uint32_t i = 0; i < nin; i++) {
        np->input[i] = xstrdup(ex, in[i] ? in[i] : "");
        if (in[i] && in[i][0])
            use_value(ex, ir_find_value(ex->g, in[i]));
    }
    np->n_output = nout;
    np->output = ar_alloc_array(ex->a, nout, sizeof *np->output);
    for (uint32_t i = 0; i < nout; i++)
        np->output[i] = xstrdup(ex, out[i]);
    vec_push(&ex->nodes, np);
    return np;
}

void ox_emit_error(ox_exporter *ex, const ir_node *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    node_error(ex, n, "%s", msg);
}

bool ox_flavour_parse(const char *name, ox_flavour *out)
{
    if (strcmp(name, "lossless") == 0)
        *out = OX_FLAVOUR_LOSSLESS;
    else if (strcmp(name, "onnxruntime") == 0)
        *out = OX_FLAVOUR_ONNXRUNTIME;
    else
        return false;
    return true;
}

/* ---- standard ops at the chosen opset ------------------------------------------------------- */

/* The i64 values of a constant input, or NULL (after reporting) when it is not one. */
static const int64_t *const_ints(ox_exporter *ex, const ir_node *n, ir_value *v, uint32_t *count)
{
    if (v->kind != IR_VALUE_CONST || v->type->dtype != IR_I64 || v->type->rank > 1) {
        node_error(ex, n, "input '%s' must be a constant list of i64 at opset %" PRId64, v->name,
                   ex->opset);
        return NULL;
    }
    const int64_t *data = ir_const_data(ex->g, v, ex->dg);
    if (!data) {
        ex->ok = false;
        return NULL;
    }
    *count = (uint32_t)(v->konst->nbytes / sizeof(int64_t));
    return data;
}

/* Moves an INTS attribute to a made-up initializer at input `index` of `in`. */
static void ints_attr_to_input(ox_exporter *ex, const ir_node *n, const char *attr,
                               ir_value **in, uint32_t index, const char **made)
{
    const ir_attr *a = ir_node_attr(n, attr);
    if (!a)
        return;
    const char *stem = ar_printf(ex->a, "%s_%s", n->outputs[0]->name, attr);
    made[index] = made_initializer(ex, stem, IR_I64, a->v.ints, a->count, false);
    in[index] = NULL;
}

typedef struct {
    ir_value **in;        /* the inputs to write (a copy of the node's, edited) */
    const char **made;    /* names of made-up inputs, by slot (NULL: none) */
    uint32_t nin;
    const char **skip;    /* attributes not to copy as they are */
    uint32_t nskip;
} std_form;

static void skip_attr(ox_exporter *ex, std_form *f, const char *name)
{
    const char **grown = ar_alloc_array(ex->a, f->nskip + 1, sizeof *grown);
    if (f->nskip)
        memcpy(grown, f->skip, f->nskip * sizeof *grown);
    grown[f->nskip++] = name;
    f->skip = grown;
}

static bool skipped(const std_form *f, const char *name)
{
    for (uint32_t i = 0; i < f->nskip; i++)
        if (strcmp(f->skip[i], name) == 0)
            return true;
    return false;
}

/* Reduce axes: an attribute before ox_reduce_axes_input_since, an input from it. The same opset
 * brought noop_with_empty_axes: before it, the attribute goes (ox_opset_node_needs asks for the
 * opset when it matters: 1 with no axes). */
static void reduce_axes(ox_exporter *ex, const ir_node *n, Onnx__NodeProto *np, std_form *f,
                        int64_t input_since)
{
    if (ex->opset >= input_since) {
        ints_attr_to_input(ex, n, "axes", f->in, 1, f->made);
        skip_attr(ex, f, "axes");
        return;
    }
    skip_attr(ex, f, "noop_with_empty_axes");
    if (ox_reduce_noop_needed(n))
        node_error(ex, n, "noop_with_empty_axes=1 without axes needs opset %" PRId64, input_since);
    if (f->nin > 1 && f->in[1]) {
        uint32_t count;
        const int64_t *axes = const_ints(ex, n, f->in[1], &count);
        if (axes)
            ox_emit_attr_ints(ex, np, "axes", axes, count);
        f->in[1] = NULL;
    }
}

/* Clip's attribute bounds (opset < 11 form) become inputs of the data's dtype. */
static void clip_bounds(ox_exporter *ex, const ir_node *n, std_form *f)
{
    static const char *const names[] = {"min", "max"};
    for (uint32_t i = 0; i < 2; i++) {
        const ir_attr *a = ir_node_attr(n, names[i]);
        skip_attr(ex, f, names[i]);
        if (!a)
            continue;
        if (f->in[1 + i]) {
            node_error(ex, n, "has both the attribute and the input '%s'", names[i]);
            continue;
        }
        if (!ir_dtype_is_float(n->inputs[0]->type->dtype)) {
            node_error(ex, n, "attribute bounds apply to float tensors only");
            continue;
        }
        const char *stem = ar_printf(ex->a, "%s_%s", n->outputs[0]->name, names[i]);
        f->made[1 + i] =
            made_scalar(ex, stem, n->inputs[0]->type->dtype, ir_get_float(n, names[i]));
    }
}

static void dropout_ratio(ox_exporter *ex, const ir_node *n, std_form *f)
{
    const ir_attr *a = ir_node_attr(n, "ratio");
    skip_attr(ex, f, "ratio");
    if (!a || f->in[1])
        return;
    const char *stem = ar_printf(ex->a, "%s_ratio", n->outputs[0]->name);
    f->made[1] = made_scalar(ex, stem, IR_F32, ir_get_float(n, "ratio"));
}

/* An attribute the chosen opset does not have: dropped when it holds the value that means
 * "absent", else an error. */
static void drop_if_default(ox_exporter *ex, const ir_node *n, std_form *f, const char *name,
                            int64_t since, int64_t absent)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (ex->opset >= since || !a)
        return;
    skip_attr(ex, f, name);
    if (a->kind == IR_ATTR_INT && a->v.i != absent)
        node_error(ex, n, "%s=%" PRId64 " needs opset %" PRId64, name, a->v.i, since);
}

static void constant_of_shape(ox_exporter *ex, const ir_node *n, Onnx__NodeProto *np,
                              std_form *f)
{
    skip_attr(ex, f, "value");
    skip_attr(ex, f, "dtype");
    if (!ir_node_attr(n, "value") && !ir_node_attr(n, "dtype"))
        return;
    ir_dtype dt = n->outputs[0]->type->dtype;
    uint8_t buf[8] = {0};
    double v = ir_get_float(n, "value");
    if (!ir_dtype_is_float(dt) && !(v >= -9.2e18 && v <= 9.2e18)) {
        node_error(ex, n, "value %g does not fit %s", v, ir_dtype_name(dt));
        return;
    }
    switch (dt) {
    case IR_F32: {
        float x = (float)v;
        memcpy(buf, &x, 4);
        break;
    }
    case IR_F16:
    case IR_BF16: {
        uint16_t h = dt == IR_F16 ? f32_to_f16((float)v) : f32_to_bf16((float)v);
        memcpy(buf, &h, 2);
        break;
    }
    case IR_F64:
        memcpy(buf, &v, 8);
        break;
    case IR_I64: {
        int64_t x = (int64_t)v;
        memcpy(buf, &x, 8);
        break;
    }
    case IR_I32: {
        int32_t x = (int32_t)v;
        memcpy(buf, &x, 4);
        break;
    }
    case IR_I8:
    case IR_U8:
    case IR_BOOL:
        buf[0] = (uint8_t)(int)v;
        break;
    case IR_I16:
    case IR_U16: {
        uint16_t x = dt == IR_I16 ? (uint16_t)(int16_t)v : (uint16_t)v;
        memcpy(buf, &x, 2);
        break;
    }
    case IR_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(buf, &x, 4);
        break;
    }
    case IR_U64: {
        uint64_t x = v < 0 ? 0 : (uint64_t)v;
        memcpy(buf, &x, 8);
        break;
    }
    default:
        FR_UNREACHABLE();
    }
    ir_type t = {.dtype = dt, .rank = 1, .dims = {1}};
    size_t size = ir_dtype_size(dt);
    void *copy = ar_alloc(ex->a, size);
    memcpy(copy, buf, size);
    Onnx__AttributeProto *a =
        add_attr(ex, np, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = new_tensor(ex, "value", &t, copy, size);
}

/* Rewrites the form of one standard node for the chosen opset. */
static void adjust_form(ox_exporter *ex, const ir_node *n, Onnx__NodeProto *np, std_form *f)
{
    int64_t axes_since = ox_reduce_axes_input_since(n->op);
    if (axes_since) {
        reduce_axes(ex, n, np, f, axes_since);
        return;
    }
    switch (n->op) {
    case IR_OP_Squeeze:
    case IR_OP_Unsqueeze:
        ints_attr_to_input(ex, n, "axes", f->in, 1, f->made);
        skip_attr(ex, f, "axes");
        break;
    case IR_OP_Split:
        ints_attr_to_input(ex, n, "split", f->in, 1, f->made);
        skip_attr(ex, f, "split");
        if (ex->opset < 18)
            skip_attr(ex, f, "num_outputs"); /* the output count says it */
        break;
    case IR_OP_Clip:
        clip_bounds(ex, n, f);
        break;
    case IR_OP_Dropout:
        dropout_ratio(ex, n, f);
        break;
    case IR_OP_Cast:
        drop_if_default(ex, n, f, "saturate", 19, 1);
        break;
    case IR_OP_QuantizeLinear:
        drop_if_default(ex, n, f, "saturate", 19, 1);
        drop_if_default(ex, n, f, "output_dtype", 21, 0);
        drop_if_default(ex, n, f, "block_size", 21, 0);
        break;
    case IR_OP_DequantizeLinear:
        drop_if_default(ex, n, f, "block_size", 21, 0);
        break;
    case IR_OP_BatchNormalization:
        drop_if_default(ex, n, f, "spatial", OX_MAX_OPSET + 1, 1); /* gone since opset 9 */
        drop_if_default(ex, n, f, "training_mode", 14, 0);
        break;
    case IR_OP_AveragePool: {
        const int64_t *d;
        uint32_t count = ir_get_ints(n, "dilations", &d);
        bool trivial = true;
        for (uint32_t i = 0; i < count; i++)
            trivial = trivial && d[i] == 1;
        if (ex->opset < 19 && count) {
            skip_attr(ex, f, "dilations");
            if (!trivial)
                node_error(ex, n, "dilations need opset 19");
        }
        break;
    }
    case IR_OP_ConstantOfShape:
        constant_of_shape(ex, n, np, f);
        break;
    default:
        break;
    }
}

/* The node's inputs: the edited copy, with made-up initializers in their slots. */
static void set_inputs(ox_exporter *ex, Onnx__NodeProto *np, const std_form *f)
{
    uint32_t nin = f->nin;
    while (nin > 0 && !f->in[nin - 1] && !f->made[nin - 1])
        nin--;
    np->n_input = nin;
    np->input = ar_alloc_array(ex->a, nin, sizeof *np->input);
    for (uint32_t i = 0; i < nin; i++) {
        np->input[i] = f->made[i] ? (char *)f->made[i] : f->in[i] ? xstrdup(ex, f->in[i]->name) : "";
        if (!f->made[i])
            use_value(ex, f->in[i]);
    }
}

static void export_standard(ox_exporter *ex, const ir_node *n, const char *domain)
{
    std_form f = {.nin = n->ninputs + 3}; /* room for inputs made from attributes */
    f.in = ar_alloc_array(ex->a, f.nin, sizeof *f.in);
    f.made = ar_alloc_array(ex->a, f.nin, sizeof *f.made);
    memcpy(f.in, n->inputs, n->ninputs * sizeof *f.in);
    Onnx__NodeProto *np = new_node(ex, domain, ir_op_name(n->op), n, NULL, 0);
    if (!domain[0])
        adjust_form(ex, n, np, &f);
    for (uint32_t i = 0; i < n->nattrs; i++)
        if (!skipped(&f, n->attrs[i].name))
            emit_attr(ex, np, &n->attrs[i]);
    set_inputs(ex, np, &f);
}

/* ---- the opset ------------------------------------------------------------------------------ */

static bool choose_opset(ox_exporter *ex, int64_t asked)
{
    if (asked && (asked < OX_EXPORT_MIN_OPSET || asked > OX_EXPORT_MAX_OPSET)) {
        dg_error_path(ex->dg, ex->g->name, "export writes opsets %d to %d, not %" PRId64,
                      OX_EXPORT_MIN_OPSET, OX_EXPORT_MAX_OPSET, asked);
        return false;
    }
    int64_t need = 0;
    const ir_node *needy = NULL;
    for (size_t i = 0; i < ex->g->nodes.len; i++) {
        const ir_node *n = ex->g->nodes.items[i];
        int64_t v = ox_opset_node_needs(n);
        if (ex->flavour == OX_FLAVOUR_ONNXRUNTIME && ox_ort_needs_opset(n) > v)
            v = ox_ort_needs_opset(n);
        if (v > need) {
            need = v;
            needy = n;
        }
    }
    if (asked && need > asked) {
        node_error(ex, needy, "needs opset %" PRId64 ", above the %" PRId64 " asked for", need,
                   asked);
        return false;
    }
    ex->opset = asked ? asked : need > OX_EXPORT_DEFAULT_OPSET ? need : OX_EXPORT_DEFAULT_OPSET;
    return true;
}

/* ---- graph inputs and outputs --------------------------------------------------------------- */

static const char *const denotations[IR_LAYOUT_COUNT] = {
    [IR_LAYOUT_NCHW] = "NCFF", [IR_LAYOUT_NHWC] = "NFFC",   [IR_LAYOUT_NCW] = "NCF",
    [IR_LAYOUT_NWC] = "NFC",   [IR_LAYOUT_NCDHW] = "NCFFF", [IR_LAYOUT_NDHWC] = "NFFFC",
    [IR_LAYOUT_NC] = "NC",
};

static const char *denotation(char c)
{
    return c == 'N' ? "DATA_BATCH" : c == 'C' ? "DATA_CHANNEL" : "DATA_FEATURE";
}

static Onnx__ValueInfoProto *value_info(ox_exporter *ex, const ir_value *v)
{
    const ir_type *t = v->type;
    Onnx__TypeProto__Tensor *tt = ar_alloc(ex->a, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = true;
    tt->elem_type = ox_dtype_to_onnx(t->dtype);
    const char *pattern = t->layout ? denotations[t->layout] : NULL;
    if (pattern && strlen(pattern) != (size_t)t->rank)
        pattern = NULL;
    if (t->rank >= 0) {
        Onnx__TensorShapeProto *shape = ar_alloc(ex->a, sizeof *shape);
        onnx__tensor_shape_proto__init(shape);
        shape->n_dim = (size_t)t->rank;
        shape->dim = ar_alloc_array(ex->a, (size_t)t->rank, sizeof *shape->dim);
        for (int i = 0; i < t->rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = ar_alloc(ex->a, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (ir_dim_is_static(t->dims[i])) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = t->dims[i];
            } else if (ir_dim_is_symbol(t->dims[i])) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = xstrdup(ex, ir_symbol_name(ex->g, t->dims[i]));
            }
            if (pattern)
                d->denotation = (char *)denotation(pattern[i]);
            shape->dim[i] = d;
        }
        tt->shape = shape;
    }
    Onnx__TypeProto *tp = ar_alloc(ex->a, sizeof *tp);
    onnx__type_proto__init(tp);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    Onnx__ValueInfoProto *vi = ar_alloc(ex->a, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = xstrdup(ex, v->name);
    vi->type = tp;
    return vi;
}

static Onnx__ValueInfoProto **value_infos(ox_exporter *ex, ir_value *const *values, size_t n)
{
    Onnx__ValueInfoProto **out = ar_alloc_array(ex->a, n, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = value_info(ex, values[i]);
        use_value(ex, values[i]); /* a constant output is an initializer too */
    }
    return out;
}

/* ---- the model ------------------------------------------------------------------------------ */

static void export_node(ox_exporter *ex, const ir_node *n)
{
    if (n->op == IR_OP_Gelu && ex->opset < 20 && ox_contrib_export(ex, n))
        return;
    if (ir_op_info_get(n->op)->cls != IR_CLASS_FUSED) {
        export_standard(ex, n, "");
        return;
    }
    if (ox_contrib_export(ex, n))
        return;
    if (ex->flavour == OX_FLAVOUR_ONNXRUNTIME) { /* a subgraph, or an error saying why not */
        ox_ort_export(ex, n);
        return;
    }
    ex->uses_fuserule = true;
    export_standard(ex, n, "fuserule");
}

static Onnx__OperatorSetIdProto *opset_id(ox_exporter *ex, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = ar_alloc(ex->a, sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = xstrdup(ex, domain);
    o->has_version = true;
    o->version = version;
    return o;
}

static Onnx__ModelProto *build_model(ox_exporter *ex)
{
    Onnx__GraphProto *gp = ar_alloc(ex->a, sizeof *gp);
    onnx__graph_proto__init(gp);
    gp->name = xstrdup(ex, ex->g->name);
    gp->n_input = ex->g->inputs.len;
    gp->input = value_infos(ex, ex->g->inputs.items, ex->g->inputs.len);
    for (size_t i = 0; i < ex->g->nodes.len; i++)
        export_node(ex, ex->g->nodes.items[i]);
    gp->n_output = ex->g->outputs.len;
    gp->output = value_infos(ex, ex->g->outputs.items, ex->g->outputs.len);
    gp->n_node = ex->nodes.len;
    gp->node = ex->nodes.items;
    gp->initializer = initializers(ex, &gp->n_initializer);

    Onnx__ModelProto *m = ar_alloc(ex->a, sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = true;
    m->ir_version = ox_opset_ir_version(ex->opset);
    m->producer_name = "fuserule";
    m->producer_version = "0.1";
    m->graph = gp;
    Onnx__OperatorSetIdProto **ids = ar_alloc_array(ex->a, 3, sizeof *ids);
    size_t nids = 0;
    ids[nids++] = opset_id(ex, "", ex->opset);
    if (ex->uses_ms)
        ids[nids++] = opset_id(ex, "com.microsoft", 1);
    if (ex->uses_fuserule)
        ids[nids++] = opset_id(ex, "fuserule", 1);
    m->n_opset_import = nids;
    m->opset_import = ids;
    return m;
}

struct ox_model {
    ox_exporter ex;
    Onnx__ModelProto *m;
    size_t size;
};

ox_model *ox_export_model(ir_graph *g, const ox_export_options *opts, dg_context *dg)
{
    ox_model *om = calloc(1, sizeof *om);
    FR_CHECK(om != NULL);
    ox_exporter *ex = &om->ex;
    *ex = (ox_exporter){.g = g, .dg = dg, .a = ar_new(), .ok = true,
                        .flavour = opts ? opts->flavour : OX_FLAVOUR_LOSSLESS,
                        .out_path = opts && opts->link_weights ? opts->out_path : NULL};
    FR_CHECK(!opts || !opts->link_weights || opts->out_path);
    ex->used = calloc(g->values.len ? g->values.len : 1, sizeof *ex->used);
    FR_CHECK(ex->used != NULL);
    if (choose_opset(ex, opts ? opts->opset : 0)) {
        om->m = build_model(ex);
        om->size = ex->ok ? onnx__model_proto__get_packed_size(om->m) : 0;
        if (ex->ok && om->size > (size_t)OX_MAX_FILE_BYTES) {
            dg_error_path(dg, g->name, "the model needs %zu bytes, more than protobuf's 2 GiB",
                          om->size);
            ex->ok = false;
        }
    } else {
        ex->ok = false;
    }
    if (!ex->ok) {
        ox_model_free(om);
        return NULL;
    }
    return om;
}

size_t ox_model_size(const ox_model *om)
{
    return om->size;
}

/* Appends to a file. A large append from a file mapping (a weight written from the model it was
 * read from) is copied from that file by the kernel (copy_file_range) where it can, without
 * touching the mapping; otherwise written from the mapping, giving its pages back as it goes, so
 * that writing does not hold the weights. An initializer of rows is written row by row, each part
 * the same way. */
typedef struct {
    ProtobufCBuffer base;
    FILE *out;
    const ox_exporter *ex;
    size_t written;
    bool ok;
    bool copy; /* copy_file_range to out may work: not yet refused */
} file_buffer;

enum { WRITE_CHUNK = 8 << 20 };

/* Copies what it can of [offset, offset + len) of file fd to the output: the bytes copied (fewer
 * than len when the kernel cannot copy between these files: the rest is to be written). */
static size_t copy_range(file_buffer *fb, int fd, int64_t offset, size_t len)
{
    if (!fb->copy || fflush(fb->out) != 0)
        return 0;
    size_t done = 0;
    while (done < len && fb->ok) {
        loff_t at = (loff_t)offset + (loff_t)done;
        ssize_t n = copy_file_range(fd, &at, fileno(fb->out), NULL, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                             errno == EOPNOTSUPP || errno == EBADF || errno == EPERM)) {
            fb->copy = false; /* not between these files: written from the mapping instead */
            break;
        } else if (n == 0) { /* the input ended early: it shrank under its mapping */
            errno = EFAULT;    /* as write() says it of such bytes (mw_write_error) */
            fb->ok = false;
        } else { /* a write error */
            fb->ok = false;
        }
    }
    fb->written += done;
    return done;
}

static void write_bytes(file_buffer *fb, size_t len, const uint8_t *data)
{
    if (len >= OX_LAZY_MIN_BYTES) {
        int fd;
        int64_t offset;
        if (ir_const_file_range(fb->ex->g, data, len, &fd, &offset, NULL)) {
            size_t done = copy_range(fb, fd, offset, len);
            data += done;
            len -= done;
        }
    }
    while (len && fb->ok) {
        size_t n = len < WRITE_CHUNK ? len : WRITE_CHUNK;
        fb->ok = fwrite(data, 1, n, fb->out) == n;
        if (n >= OX_LAZY_MIN_BYTES)
            ir_const_release(fb->ex->g, data, n);
        fb->written += n;
        data += n;
        len -= n;
    }
}

/* Rows whose parts are all this long are copied part by part; shorter ones (the K and V of
 * grouped-query attention, 2 KiB a row in Qwen2-7B) are put together a batch of rows at a time
 * and written at once: the kernel's cost per copy, and per partly written page, exceeds copying
 * them. */
enum { ROW_COPY_MIN = 64 << 10 };

static void write_rows(file_buffer *fb, const ir_value *v)
{
    size_t rows, row = 0;
    uint32_t nparts;
    const ir_const_part *parts = ir_const_rows(v, &rows, &nparts);
    FR_CHECK(parts != NULL);
    bool each = true;
    for (uint32_t i = 0; i < nparts; i++) {
        each = each && parts[i].row_bytes >= ROW_COPY_MIN;
        row += parts[i].row_bytes;
    }
    if (each || row > WRITE_CHUNK) {
        for (size_t r = 0; r < rows && fb->ok; r++)
            for (uint32_t i = 0; i < nparts; i++)
                write_bytes(fb, parts[i].row_bytes,
                            (const uint8_t *)parts[i].src + r * parts[i].row_bytes);
        return;
    }
    size_t batch = WRITE_CHUNK / row; /* rows a chunk holds */
    uint8_t *chunk = malloc(batch * row);
    FR_CHECK(chunk != NULL);
    for (size_t r0 = 0; r0 < rows && fb->ok; r0 += batch) {
        size_t n = rows - r0 < batch ? rows - r0 : batch, col = 0;
        for (uint32_t i = 0; i < nparts; i++) {
            size_t width = parts[i].row_bytes;
            const uint8_t *src = (const uint8_t *)parts[i].src + r0 * width;
            ir_const_will_read(fb->ex->g, src, n * width);
            for (size_t r = 0; r < n; r++)
                memcpy(chunk + r * row + col, src + r * width, width);
            ir_const_release(fb->ex->g, src, n * width);
            col += width;
        }
        fb->ok = fwrite(chunk, 1, n * row, fb->out) == n * row;
        fb->written += n * row;
    }
    free(chunk);
}

/* A constant computed when read (a folded weight) computed a chunk at a time into one buffer,
 * small enough to stay in the cache while it is written. */
enum { COMPUTE_CHUNK = 1 << 20 };

static void write_computed(file_buffer *fb, ir_value *v)
{
    size_t nbytes = v->konst->nbytes, chunk = COMPUTE_CHUNK;
    uint8_t *buf = malloc(nbytes < chunk ? nbytes : chunk);
    FR_CHECK(buf != NULL);
    for (size_t at = 0; at < nbytes && fb->ok; at += chunk) {
        size_t n = nbytes - at < chunk ? nbytes - at : chunk;
        FR_CHECK(ir_const_read_at(fb->ex->g, v, at, n, buf, fb->ex->dg)); /* deferred: no error */
        fb->ok = fwrite(buf, 1, n, fb->out) == n;
        fb->written += n;
    }
    free(buf);
}

static void file_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_buffer *fb = (file_buffer *)b;
    /* a record of rows is OX_LAZY_MIN_BYTES or more: the many small appends search nothing */
    for (size_t i = 0; len >= OX_LAZY_MIN_BYTES && i < fb->ex->rows.len; i++) {
        if (fb->ex->rows.items[i].key == data) {
            ir_value *v = fb->ex->rows.items[i].v;
            FR_CHECK(len == v->konst->nbytes);
            if (ir_const_scaled_get(v))
                write_computed(fb, v);
            else
                write_rows(fb, v);
            return;
        }
    }
    write_bytes(fb, len, data);
}

bool ox_model_write(ox_model *om, FILE *out)
{
    struct stat st; /* copy_file_range writes into regular files only */
    bool regular = fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);
    file_buffer fb = {.base = {file_append}, .out = out, .ex = &om->ex, .ok = true,
                      .copy = regular};
    size_t packed = onnx__model_proto__pack_to_buffer(om->m, &fb.base);
    FR_CHECK(!fb.ok || (packed == om->size && fb.written == om->size));
    return fb.ok;
}

void ox_model_free(ox_model *om)
{
    if (!om)
        return;
    vec_free(&om->ex.nodes);
    vec_free(&om->ex.made_inits);
    vec_free(&om->ex.rows);
    sm_free(&om->ex.made);
    free(om->ex.used);
    ar_free(om->ex.a);
    free(om);
}

bool ox_export(ir_graph *g, const ox_export_options *opts, uint8_t **data, size_t *len,
               dg_context *dg)
{
    *data = NULL;
    *len = 0;
    ox_model *om = ox_export_model(g, opts, dg);
    if (!om)
        return false;
    for (size_t i = 0; i < om->ex.rows.len; i++) { /* packed into memory: rows put together */
        const rows_init *ri = &om->ex.rows.items[i];
        const void *bytes = ir_const_data(g, ri->v, dg);
        if (!bytes) {
            ox_model_free(om);
            return false;
        }
        ri->tp->raw_data.data = (uint8_t *)bytes;
    }
    *data = malloc(om->size ? om->size : 1);
    FR_CHECK(*data != NULL);
    *len = onnx__model_proto__pack(om->m, *data);
    FR_CHECK(*len == om->size);
    ox_model_free(om);
    return true;
}
