/* Older opsets: their forms turned into the catalog's.
 *
 * The catalog takes each op in its latest form (opset 21). An op whose semantics have not changed
 * since an older version imports from that version on (the table below); within that range, the
 * attributes that later opsets moved to inputs become constant inputs here:
 *
 *   ReduceSum axes (before 13), ReduceMean/ReduceMax/ReduceMin/ReduceProd/ReduceL1/ReduceL2/
 *   ReduceSumSquare/ReduceLogSum/ReduceLogSumExp axes (before 18), Squeeze/Unsqueeze axes
 *   (before 13), Split split (before 13), Dropout ratio (before 12), TopK k (before 10).
 *
 * and, kept as attributes by import until converted here: Clip min/max (before 11; as inputs of
 * the data's element type once validation knows it), Pad pads/value (before 11), Slice
 * starts/ends/axes (before 10).
 *
 * Two op types of older opsets are catalog ops under another name: Scatter (9-10) is
 * ScatterElements, and Upsample (7-9) is Resize, as Resize-10 is too: scales an attribute at
 * Upsample-7 and the second input after, no roi, and the coordinates ONNX Runtime gives them
 * (asymmetric; nearest rounds down when upsampling and up when downsampling, read from Resize-10's
 * scales once validation has typed them; Upsample's are at least 1).
 *
 * GroupNormalization before 21 scaled and biased each group (scale and bias [num_groups]); the
 * catalog's, opset 21's, each channel. Such a node is an Identity until validation knows its
 * channels, then the catalog's op with each value repeated over its group's channels.
 *
 * Softmax before 13 normalized the input flattened to 2-D at `axis`, not one axis: where that
 * differs (the axis is not the last), the node becomes Reshape(Softmax(Flatten(x)), shape of x),
 * the shape a constant when x's is static and Shape(x) otherwise. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Whether the node was written as one of renamed_ops' types. */
static bool is_renamed(const ox_pending *p, const char *type)
{
    return p->proto->op_type && strcmp(p->proto->op_type, type) == 0;
}

/* ---- editing a node under construction ------------------------------------------------------ */

static void remove_attr(ir_node *n, const char *name)
{
    for (uint32_t i = 0; i < n->nattrs; i++) {
        if (strcmp(n->attrs[i].name, name) == 0) {
            memmove(&n->attrs[i], &n->attrs[i + 1], (n->nattrs - i - 1) * sizeof n->attrs[0]);
            n->nattrs--;
            return;
        }
    }
}

/* Sets input `index`, growing the node's input list when it is shorter. */
static void set_input_growing(ir_graph *g, ir_node *n, uint32_t index, ir_value *v)
{
    if (index >= n->ninputs) {
        ir_value **grown = ar_alloc_array(g->arena, index + 1, sizeof *grown);
        memcpy(grown, n->inputs, n->ninputs * sizeof *grown);
        n->inputs = grown;
        n->ninputs = index + 1;
    }
    n->inputs[index] = v;
}

/* Moves an attribute to a constant input at `index`; the node must not have that input too. */
static bool attr_to_input(ox_importer *im, ox_pending *p, const char *attr, uint32_t index)
{
    ir_graph *g = ox_importer_graph(im);
    ir_node *n = p->node;
    const ir_attr *a = ir_node_attr(n, attr);
    if (!a)
        return true;
    if (index < n->ninputs && n->inputs[index]) {
        ox_invalid(ox_importer_report(im), "%s has both the attribute and the input '%s'",
                   p->label, attr);
        return false;
    }
    const char *stem = ar_printf(g->arena, "%s_%s", n->outputs[0]->name, attr);
    ir_value *v;
    if (a->kind == IR_ATTR_INTS) {
        v = ox_const_i64(im, stem, a->v.ints, a->count, false);
    } else if (a->kind == IR_ATTR_INT) { /* TopK-1's k: a one-element tensor */
        v = ox_const_i64(im, stem, &a->v.i, 1, false);
    } else if (a->kind == IR_ATTR_FLOATS) { /* Upsample-7's scales */
        float *f = ar_alloc_array(g->arena, a->count, sizeof *f);
        for (uint32_t i = 0; i < a->count; i++)
            f[i] = (float)a->v.floats[i];
        v = ox_const_f32s(im, stem, f, a->count);
    } else if (a->kind == IR_ATTR_FLOAT) {
        v = ox_const_f32(im, stem, a->v.f);
    } else { /* a string: no older form had one where an input is now */
        ox_invalid(ox_importer_report(im), "%s: attribute '%s' is a string", p->label, attr);
        return false;
    }
    remove_attr(n, attr);
    set_input_growing(g, n, index, v);
    return true;
}

/* ---- per-op conversions --------------------------------------------------------------------- */

/* An attribute holding a TensorProto element type (Cast's `to`) must name one the IR holds. */
static bool check_dtype_attr(ox_importer *im, ox_pending *p, const char *attr)
{
    const ir_attr *a = ir_node_attr(p->node, attr);
    ir_dtype dt;
    if (!a || a->kind != IR_ATTR_INT || (a->v.i == 0 && strcmp(attr, "to") != 0) ||
        (a->v.i >= INT32_MIN && a->v.i <= INT32_MAX && ox_dtype_from_onnx((int32_t)a->v.i, &dt)))
        return true;
    ox_unsupported(ox_importer_report(im), "%s: %s = %s, an element type the IR does not hold",
                   p->label, attr,
                   a->v.i >= INT32_MIN && a->v.i <= INT32_MAX ? ox_onnx_dtype_name((int32_t)a->v.i)
                                                              : "out of range");
    return false;
}

/* A float attribute that becomes a scalar input of the data's element type, which is known only
 * after validation: recorded now, made by ox_legacy_bounds_fixup. NAN asks for Clip-6's default
 * bound (the lowest or highest float). */
static void defer_float(ox_importer *im, ox_pending *p, const char *attr, uint32_t index,
                        double absent)
{
    const ir_attr *a = ir_node_attr(p->node, attr);
    double v = a ? (a->kind == IR_ATTR_FLOAT ? a->v.f : (double)a->v.i) : absent;
    remove_attr(p->node, attr);
    ox_importer_defer_const(im, p->node, index, v);
}

/* ---- Upsample and Resize-10 ---------------------------------------------------------------- */

/* Resize-11's attributes, which no older form had: a model that gives them at an older opset is
 * not the op it claims to be. */
static const char *const resize11_attrs[] = {
    "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
    "extrapolation_value", "antialias", "keep_aspect_ratio_policy", "axes",
};

typedef struct {
    ir_node *node;
    const char *label;
} nearest_fix;

/* ONNX Runtime's rounding of nearest before Resize-11 ("simple"): down where an axis grows (or
 * keeps its size), up where it shrinks. One nearest_mode of the catalog covers the node when the
 * scales are known and shrink no axis or grow none. */
static bool nearest_rounding(ox_importer *im, void *ctx)
{
    const nearest_fix *f = ctx;
    ir_graph *g = ox_importer_graph(im);
    ox_report *r = ox_importer_report(im);
    ir_value *scales = f->node->inputs[2];
    if (scales->kind != IR_VALUE_CONST || !ir_type_is_static(scales->type)) {
        ox_unsupported(r,
                       "%s: nearest with scales computed at run time (its rounding, down or "
                       "up, depends on their values)",
                       f->label);
        return false;
    }
    const float *v = ir_const_data(g, scales, r->dg);
    if (!v)
        return false;
    int64_t count = 0;
    ir_type_numel(scales->type, &count); /* static: known */
    bool grows = false, shrinks = false;
    for (int64_t i = 0; i < count; i++) {
        grows = grows || v[i] > 1.0f;
        shrinks = shrinks || v[i] < 1.0f;
    }
    if (grows && shrinks) {
        ox_unsupported(r,
                       "%s: nearest that grows one axis and shrinks another (ONNX Runtime "
                       "rounds down on the first and up on the second)",
                       f->label);
        return false;
    }
    ir_set_attr_string(g, f->node, "nearest_mode", shrinks ? "ceil" : "floor");
    return true;
}

/* Upsample-7 (scales an attribute), Upsample-9 and Resize-10 (X, scales) into Resize(X, , scales)
 * with the coordinates these forms had. */
static bool resize_10(ox_importer *im, ox_pending *p)
{
    ir_graph *g = ox_importer_graph(im);
    ox_report *r = ox_importer_report(im);
    ir_node *n = p->node;
    for (size_t i = 0; i < FR_COUNT_OF(resize11_attrs); i++) {
        if (ir_node_attr(n, resize11_attrs[i])) {
            ox_invalid(r, "%s: attribute '%s' is Resize-11's; opset %" PRId64 " has no such "
                          "attribute",
                       p->label, resize11_attrs[i], p->opset);
            return false;
        }
    }
    if (p->opset < 9) {
        if (n->ninputs != 1 || !ir_node_attr(n, "scales")) {
            ox_invalid(r, "%s: Upsample-7 takes one input and the attribute 'scales'", p->label);
            return false;
        }
        if (!attr_to_input(im, p, "scales", 2))
            return false;
    } else {
        if (n->ninputs != 2 || !n->inputs[1]) {
            ox_invalid(r, "%s takes two inputs, X and scales", p->label);
            return false;
        }
        set_input_growing(g, n, 2, n->inputs[1]);
        n->inputs[1] = NULL; /* no roi */
    }
    const char *mode = ir_get_string(n, "mode");
    if (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0) {
        ox_invalid(r, "%s: mode '%s'; opset %" PRId64 " has nearest and linear", p->label, mode,
                   p->opset);
        return false;
    }
    ir_set_attr_string(g, n, "coordinate_transformation_mode", "asymmetric");
    if (strcmp(mode, "nearest") != 0)
        return true;
    /* Upsample's scales are at least 1 (its spec): it rounds down, whatever computes them */
    ir_set_attr_string(g, n, "nearest_mode", "floor");
    if (!is_renamed(p, "Upsample")) { /* Resize-10's may shrink an axis: known from the scales */
        nearest_fix *f = ar_alloc(g->arena, sizeof *f);
        *f = (nearest_fix){n, p->label};
        ox_importer_after_validation(im, nearest_rounding, f);
    }
    return true;
}

/* ---- GroupNormalization before opset 21 ------------------------------------------------------ */

typedef struct {
    ir_node *node;
    ir_attr *attrs; /* the node's, kept aside while it is an Identity */
    uint32_t nattrs;
    const char *label;
} group_norm_fix;

static ir_node *add_binary(ir_graph *g, ir_op op, ir_value *a, ir_value *b, const char *stem)
{
    const char *name = ir_fresh_name(g, stem);
    ir_node *n = ir_add_node(g, op, 2, &name, 1);
    FR_CHECK(n != NULL); /* the name is fresh */
    ir_set_input(n, 0, a);
    ir_set_input(n, 1, b);
    return n;
}

/* v [groups] repeated to [channels], each value over its group's channels: a constant when v is
 * one, else Reshape(Expand(Reshape(v, [G, 1]), [G, C/G]), [C]). */
static ir_value *per_channel(ox_importer *im, ir_value *v, int64_t groups, int64_t channels,
                             const char *stem)
{
    ir_graph *g = ox_importer_graph(im);
    int64_t per = channels / groups;
    if (v->kind == IR_VALUE_CONST) {
        const uint8_t *data = ir_const_data(g, v, ox_importer_report(im)->dg);
        if (!data)
            return NULL;
        size_t size = ir_dtype_size(v->type->dtype);
        uint8_t *out = ar_alloc_array(g->arena, (size_t)channels, size);
        for (int64_t c = 0; c < channels; c++)
            memcpy(out + (size_t)c * size, data + (size_t)(c / per) * size, size);
        return ox_const_vector(im, stem, v->type->dtype, out, (uint32_t)channels);
    }
    int64_t column[2] = {groups, 1}, grid[2] = {groups, per};
    ir_value *r = add_binary(g, IR_OP_Reshape, v,
                             ox_const_i64(im, ar_printf(g->arena, "%s_column", stem), column, 2,
                                          false),
                             ar_printf(g->arena, "%s_column", stem))
                      ->outputs[0];
    ir_value *e = add_binary(g, IR_OP_Expand, r,
                             ox_const_i64(im, ar_printf(g->arena, "%s_grid", stem), grid, 2, false),
                             ar_printf(g->arena, "%s_grid", stem))
                      ->outputs[0];
    return add_binary(g, IR_OP_Reshape, e,
                      ox_const_i64(im, ar_printf(g->arena, "%s_shape", stem), &channels, 1, false),
                      stem)
        ->outputs[0];
}

static bool group_norm_channels(ox_importer *im, void *ctx)
{
    const group_norm_fix *f = ctx;
    ir_graph *g = ox_importer_graph(im);
    ox_report *r = ox_importer_report(im);
    ir_node *n = f->node;
    n->op = IR_OP_GroupNormalization;
    n->attrs = f->attrs;
    n->nattrs = f->nattrs;
    n->ninputs = 3;
    const ir_attr *groups_attr = ir_node_attr(n, "num_groups");
    const ir_type *x = n->inputs[0]->type;
    int64_t c = x->rank >= 2 ? x->dims[1] : IR_DIM_UNKNOWN;
    if (!groups_attr || groups_attr->kind != IR_ATTR_INT || groups_attr->v.i < 1 ||
        (ir_dim_is_static(c) && c % groups_attr->v.i != 0))
        return true; /* validation names what is wrong */
    int64_t groups = groups_attr->v.i;
    if (!ir_dim_is_static(c)) {
        ox_unsupported(r, "%s: scale and bias per group (before opset 21) over a channel count "
                          "known only at run time",
                       f->label);
        return false;
    }
    for (uint32_t i = 1; i <= 2; i++) {
        ir_value *v = n->inputs[i];
        if (v->type->rank != 1 || v->type->dims[0] != groups) {
            ox_invalid(r,
                       "%s: %s has %s values; before opset 21 it takes one per group (%" PRId64 ")",
                       f->label, i == 1 ? "scale" : "bias",
                       v->type->rank == 1 && ir_dim_is_static(v->type->dims[0])
                           ? ar_printf(g->arena, "%" PRId64, v->type->dims[0])
                           : "not a static number of",
                       groups);
            return false;
        }
        const char *stem =
            ar_printf(g->arena, "%s_%s", n->outputs[0]->name, i == 1 ? "scale" : "bias");
        ir_value *expanded = per_channel(im, v, groups, c, stem);
        if (!expanded)
            return false;
        n->inputs[i] = expanded;
    }
    return true;
}

/* GroupNormalization-18: an Identity of X (the output's type is X's) until validation knows the
 * channels, then group_norm_channels makes it the catalog's op. */
static bool group_norm_18(ox_importer *im, ox_pending *p)
{
    ir_graph *g = ox_importer_graph(im);
    ir_node *n = p->node;
    if (n->ninputs != 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2]) {
        ox_invalid(ox_importer_report(im), "%s takes X, scale and bias", p->label);
        return false;
    }
    group_norm_fix *f = ar_alloc(g->arena, sizeof *f);
    *f = (group_norm_fix){n, n->attrs, n->nattrs, p->label};
    n->op = IR_OP_Identity;
    n->ninputs = 1; /* scale and bias stay in n->inputs[1..2] for the fixup */
    n->attrs = NULL;
    n->nattrs = 0;
    ox_importer_after_validation(im, group_norm_channels, f);
    return true;
}

bool ox_legacy_convert(ox_importer *im, ox_pending *p)
{
    ir_node *n = p->node;
    if (is_renamed(p, "Scatter"))
        return true; /* ScatterElements without `reduction`, whose default is Scatter's */
    if (is_renamed(p, "Upsample"))
        return resize_10(im, p);
    int64_t first = ox_op_first_opset(n->op);
    if (p->opset < first) {
        ox_unsupported(ox_importer_report(im),
                       "%s: opset %" PRId64 " is older than the form import reads (from "
                       "opset %" PRId64 ")",
                       p->label, p->opset, first);
        return false;
    }
    switch (n->op) {
    case IR_OP_Cast:
        return check_dtype_attr(im, p, "to");
    case IR_OP_QuantizeLinear:
        return check_dtype_attr(im, p, "output_dtype");
    case IR_OP_ReduceSum:
        return p->opset >= 13 || attr_to_input(im, p, "axes", 1);
    case IR_OP_ReduceMean:
    case IR_OP_ReduceMax:
    case IR_OP_ReduceMin:
    case IR_OP_ReduceProd:
    case IR_OP_ReduceL1:
    case IR_OP_ReduceL2:
    case IR_OP_ReduceSumSquare:
    case IR_OP_ReduceLogSum:
    case IR_OP_ReduceLogSumExp:
        return p->opset >= 18 || attr_to_input(im, p, "axes", 1);
    case IR_OP_TopK:
        if (p->opset < 10 && !ir_node_attr(n, "k")) {
            ox_invalid(ox_importer_report(im), "%s has no 'k'", p->label);
            return false;
        }
        return p->opset >= 10 || attr_to_input(im, p, "k", 1);
    case IR_OP_Resize:
        return p->opset >= 11 || resize_10(im, p);
    case IR_OP_GroupNormalization:
        return p->opset >= 21 || group_norm_18(im, p);
    case IR_OP_Squeeze:
    case IR_OP_Unsqueeze:
        return p->opset >= 13 || attr_to_input(im, p, "axes", 1);
    case IR_OP_Split:
        return p->opset >= 13 || attr_to_input(im, p, "split", 1);
    case IR_OP_Dropout:
        return p->opset >= 12 || attr_to_input(im, p, "ratio", 1);
    case IR_OP_Clip:
        /* Clip-6: the bounds were attributes, by default the lowest and highest float */
        if (p->opset < 11) {
            defer_float(im, p, "min", 1, NAN);
            defer_float(im, p, "max", 2, NAN);
        }
        return true;
    case IR_OP_Pad:
        /* Pad-2: pads and the fill value were attributes (the fill 0 by default, the input's
         * default too) */
        if (p->opset < 11) {
            const ir_attr *value = ir_node_attr(n, "value");
            if (value && value->v.f != 0.0)
                defer_float(im, p, "value", 2, 0.0);
            remove_attr(n, "value");
            if (!ir_node_attr(n, "pads")) {
                ox_invalid(ox_importer_report(im), "%s has no 'pads'", p->label);
                return false;
            }
            return attr_to_input(im, p, "pads", 1);
        }
        return true;
    case IR_OP_Slice:
        /* Slice-1: starts, ends and axes were attributes (no steps) */
        if (p->opset < 10) {
            if (!ir_node_attr(n, "starts") || !ir_node_attr(n, "ends")) {
                ox_invalid(ox_importer_report(im), "%s needs 'starts' and 'ends'", p->label);
                return false;
            }
            return attr_to_input(im, p, "starts", 1) && attr_to_input(im, p, "ends", 2) &&
                   attr_to_input(im, p, "axes", 3);
        }
        return true;
    case IR_OP_Softmax:
    case IR_OP_LogSoftmax:
    case IR_OP_Hardmax:
        /* the old default axis was 1; the fixup after validation needs it written */
        if (p->opset < 13 && !ir_node_attr(n, "axis"))
            ir_set_attr_int(ox_importer_graph(im), n, "axis", 1);
        return true;
    case IR_OP_BatchNormalization:
        /* before opset 14, asking for the running statistics meant training mode */
        if (p->opset < 14 && n->noutputs > 1)
            ir_set_attr_int(ox_importer_graph(im), n, "training_mode", 1);
        return true;
    default:
        return true;
    }
}

/* ---- Softmax before opset 13 ---------------------------------------------------------------- */

static ir_node *add_unary(ir_graph *g, ir_op op, ir_value *x, const char *stem)
{
    const char *name = ir_fresh_name(g, stem);
    ir_node *n = ir_add_node(g, op, 1, &name, 1);
    FR_CHECK(n != NULL); /* the name is fresh */
    ir_set_input(n, 0, x);
    return n;
}

/* Rewrites n = Softmax(x){axis} (old semantics; LogSoftmax and Hardmax alike) into
 * Reshape(Softmax(Flatten(x){axis}), shape), keeping n, now the Reshape, as the producer of the
 * result. */
static void flatten_softmax(ox_importer *im, ir_node *n)
{
    ir_graph *g = ox_importer_graph(im);
    ir_value *x = n->inputs[0];
    const char *stem = n->outputs[0]->name;
    ir_node *flat = add_unary(g, IR_OP_Flatten, x, ar_printf(g->arena, "%s_2d", stem));
    ir_set_attr_int(g, flat, "axis", ir_get_int(n, "axis"));
    ir_node *soft = add_unary(g, n->op, flat->outputs[0],
                              ar_printf(g->arena, "%s_2d_softmax", stem));
    /* x's shape: a constant when it is static, so that inference knows the result's shape */
    const char *shape_stem = ar_printf(g->arena, "%s_shape", stem);
    ir_value *shape;
    if (ir_type_is_static(x->type))
        shape = ox_const_i64(im, shape_stem, x->type->dims, (uint32_t)x->type->rank, false);
    else
        shape = add_unary(g, IR_OP_Shape, x, shape_stem)->outputs[0];
    n->op = IR_OP_Reshape;
    n->nattrs = 0;
    set_input_growing(g, n, 1, shape);
    n->inputs[0] = soft->outputs[0];
}

bool ox_legacy_softmax_fixup(ox_importer *im, ir_node **nodes, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        ir_node *n = nodes[i];
        int rank = n->inputs[0]->type->rank;
        int64_t axis = ir_get_int(n, "axis");
        if (axis == -1 || (rank >= 0 && axis == rank - 1))
            continue; /* one axis either way: the semantics agree */
        flatten_softmax(im, n);
    }
    return true;
}

/* ---- bounds whose element type is the data's -------------------------------------------------- */

bool ox_legacy_bounds_fixup(ox_importer *im, const ox_deferred_const *items, size_t count)
{
    ir_graph *g = ox_importer_graph(im);
    for (size_t i = 0; i < count; i++) {
        ir_node *n = items[i].node;
        ir_dtype dt = n->inputs[0]->type->dtype;
        double v = items[i].value;
        if (isnan(v)) {
            /* Clip-6's default bound: -FLT_MAX or FLT_MAX, which only a float32 input can hold
             * (ONNX Runtime ran Clip-6 on float only); elsewhere absent, i.e. unbounded */
            if (dt != IR_F32)
                continue;
            v = items[i].index == 1 ? -FLT_MAX : FLT_MAX;
        }
        const char *what = n->op == IR_OP_Pad ? "value" : items[i].index == 1 ? "min" : "max";
        const char *stem = ar_printf(g->arena, "%s_%s", n->outputs[0]->name, what);
        set_input_growing(g, n, items[i].index, ox_const_scalar(im, stem, dt, v));
    }
    return true;
}
