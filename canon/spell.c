/* One spelling per op (docs/canon.md, "One spelling per op"):
 *
 * - attribute-or-input forms in the input form: the `axes` of ReduceMean/Sum/Max/Min, Squeeze and
 *   Unsqueeze and the `split` of Split become a constant input (named after the node's output);
 * - default trailing inputs dropped: a Slice's steps when they are all 1;
 * - axes counted from the end (-1 is the last) wherever the rank is known: those inputs, a Slice's
 *   axes, and the `axis` of Softmax, LayerNormalization, Concat and Split. Reduction, Squeeze and
 *   Unsqueeze axes are also sorted (their order means nothing);
 * - a Reshape to a computed shape whose elements inference knows (ir/shape_value.c) reshapes to a
 *   constant: a dim that is the input's own dim at that place becomes 0 (copy it), the one other
 *   dim left becomes -1, so `Reshape(x, Concat(Gather(Shape(x), 0), [12], [64]))` is
 *   `Reshape(x, [0,12,64])` and the shape arithmetic goes;
 * - one slice of a stack, Gather(Concat(Unsqueeze(k), Unsqueeze(v)), 0) along the stacked axis,
 *   is a Squeeze of that slice: a view;
 * - a Transpose that moves only dims of size 1 (and keeps the last) is a Reshape: a view;
 * - two Transposes in a row (the inner one read by nothing else) are one;
 * - a ReduceMax or ReduceMin over dims of size 1 is a Squeeze (or a no-op): a view.
 * - a Split without sizes (an even split) gets them as a constant input, where they are static;
 * - Slices that cut a value into consecutive parts along one axis, all of it, are one Split;
 * - a Concat reads no operand that adds nothing (a static extent of 0 along its axis): HF's
 *   partial rotary writes Concat(rope(x[..., :r]), x[..., r:]), whose second part is empty when r
 *   is the whole head; left with one operand, the Concat is a no-op (noops.c).
 * - a BatchNormalization of a view of a value [N, C, 1...] (views that move no element) normalizes
 *   that value, and the view follows as one Reshape.
 *
 * Which ops, which attribute and input, and how the axes count is the table below. */
#include "canon/internal.h"

#include "base/check.h"
#include "kernels/helpers.h"

#include <stdlib.h>
#include <string.h>

typedef enum {
    RANK_IN,  /* axes of input 0's dims */
    RANK_OUT, /* axes of output 0's dims (Unsqueeze: where the new dims go) */
} rank_of;

typedef struct {
    const char *attr; /* the attribute form, or NULL */
    int8_t input;     /* the input that holds the axes, or -1 */
    rank_of rank;
    bool sorted; /* the order of the axes means nothing */
    bool axes;   /* the values are axes (else only moved: Split's sizes) */
} spelling;

static const spelling table[IR_OP_COUNT] = {
    [IR_OP_ReduceMean] = {"axes", 1, RANK_IN, true, true},
    [IR_OP_ReduceSum] = {"axes", 1, RANK_IN, true, true},
    [IR_OP_ReduceMax] = {"axes", 1, RANK_IN, true, true},
    [IR_OP_ReduceMin] = {"axes", 1, RANK_IN, true, true},
    [IR_OP_Squeeze] = {"axes", 1, RANK_IN, true, true},
    [IR_OP_Unsqueeze] = {"axes", 1, RANK_OUT, true, true},
    [IR_OP_Split] = {"split", 1, RANK_IN, false, false},
    [IR_OP_Slice] = {NULL, 3, RANK_IN, false, true},
};

/* Scalar `axis` attributes counted from the end. */
static const bool axis_attr[IR_OP_COUNT] = {
    [IR_OP_Softmax] = true,
    [IR_OP_LayerNormalization] = true,
    [IR_OP_Concat] = true,
    [IR_OP_Split] = true,
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void remove_attr(ir_node *n, const char *name)
{
    for (uint32_t a = 0; a < n->nattrs; a++)
        if (strcmp(n->attrs[a].name, name) == 0) {
            memmove(&n->attrs[a], &n->attrs[a + 1], (n->nattrs - a - 1) * sizeof *n->attrs);
            n->nattrs--;
            return;
        }
}

/* Gives n an input at `index` (growing its input list with omitted ones). */
static void set_input(ir_graph *g, ir_node *n, uint32_t index, ir_value *v)
{
    if (index >= n->ninputs) {
        ir_value **in = ar_alloc_array(g->arena, index + 1, sizeof *in);
        memcpy(in, n->inputs, n->ninputs * sizeof *in);
        n->inputs = in;
        n->ninputs = index + 1;
    }
    n->inputs[index] = v;
}

/* Counts axes from the end for rank r (and sorts them); false when one is out of range or r is
 * unknown (then nothing changes). */
static bool normalize(int64_t *x, int64_t count, int r, bool sorted)
{
    if (r < 0)
        return false;
    for (int64_t i = 0; i < count; i++) {
        if (x[i] < -r || x[i] >= r)
            return false;
        if (x[i] >= 0)
            x[i] -= r;
    }
    if (sorted)
        qsort(x, (size_t)count, sizeof *x, cmp_i64);
    return true;
}

static char *stem(const ir_node *n, const char *what)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s_%s", n->outputs[0]->name, what);
    return buf;
}

/* The attribute form into the input form, and the axes counted from the end. */
static bool respell_axes(ir_graph *g, ir_node *n, const spelling *s)
{
    int r = s->rank == RANK_IN ? n->inputs[0]->type->rank : n->outputs[0]->type->rank;
    const ir_attr *a =
        s->attr && n->ninputs <= (uint32_t)s->input ? ir_node_attr(n, s->attr) : NULL;
    if (a && a->kind == IR_ATTR_INTS && a->count > 0) {
        int64_t *x = malloc(a->count * sizeof *x);
        FR_CHECK(x != NULL);
        memcpy(x, a->v.ints, a->count * sizeof *x);
        if (s->axes && !normalize(x, a->count, r, s->sorted)) {
            free(x);
            return false;
        }
        set_input(g, n, (uint32_t)s->input, cn_new_ints(g, stem(n, s->attr), x, a->count));
        remove_attr(n, s->attr);
        free(x);
        return true;
    }
    if (!s->axes || n->ninputs <= (uint32_t)s->input || !n->inputs[s->input])
        return false;
    int64_t count;
    int64_t *x = cn_const_ints(g, n->inputs[s->input], &count);
    if (!x)
        return false;
    int64_t *y = malloc((size_t)(count ? count : 1) * sizeof *y);
    FR_CHECK(y != NULL);
    memcpy(y, x, (size_t)count * sizeof *y);
    bool changed =
        normalize(y, count, r, s->sorted) && (memcmp(x, y, (size_t)count * sizeof *y) != 0 ||
                                              n->inputs[s->input]->type->dtype != IR_I64);
    if (changed)
        n->inputs[s->input] = cn_new_ints(g, stem(n, "axes"), y, count);
    free(x);
    free(y);
    return changed;
}

/* A Slice's steps of ones: the default, dropped (with the axes when those are absent too). */
static bool drop_unit_steps(ir_graph *g, ir_node *n)
{
    if (n->op != IR_OP_Slice || n->ninputs < 5 || !n->inputs[4])
        return false;
    int64_t count;
    int64_t *x = cn_const_ints(g, n->inputs[4], &count);
    bool ones = x != NULL;
    for (int64_t i = 0; ones && i < count; i++)
        ones = x[i] == 1;
    free(x);
    if (!ones)
        return false;
    n->ninputs = n->inputs[3] ? 4 : 3;
    return true;
}

static bool respell_axis_attr(ir_graph *g, ir_node *n)
{
    int r = n->inputs[0] ? n->inputs[0]->type->rank : -1;
    int64_t axis = ir_get_int(n, "axis");
    if (r <= 0 || axis < 0 || axis >= r)
        return false;
    ir_set_attr_int(g, n, "axis", axis - r);
    return true;
}

/* The producer of v when it is a node of op `op` that nothing else reads (now), else NULL. */
static ir_node *sole_producer(const cn_ctx *c, ir_value *v, ir_op op)
{
    if (!v || v->kind != IR_VALUE_NODE || v->producer->op != op || cn_shared(c, v))
        return NULL;
    return v->producer;
}

/* A transpose of the last two dims written through a 3-D view (the dynamo exporter's K^T for
 * scaled_dot_product_attention): Reshape(Transpose(x3, [0, 2, 1]), [..., D, T]), x3 [N, T, D] and
 * the outer Reshape splitting N into its leading dims. That is Transpose(Reshape(x3, [..., T, D]),
 * the last two dims swapped): the view first, then the transpose the rules know as K^T.
 *
 * - When x3 is a Reshape of x [..., T, D] that only merges x's leading dims (nothing else reads
 *   it), that Reshape takes the outer one's leading dims instead, the Transpose gets the rank-r
 *   permutation, and the outer Reshape keeps the shape it is given, a no-op that noops removes
 *   (x's own leading dims make the inner Reshape one too).
 * - Otherwise the two nodes trade places: the Transpose becomes the Reshape of x3, the outer
 *   Reshape the Transpose (it keeps its output, so its readers and name stay).
 * Static shapes only; the Transpose must have no other reader. */
static bool respell_kt_view(cn_ctx *c, ir_node *outer)
{
    if (outer->op != IR_OP_Reshape)
        return false;
    ir_node *t = sole_producer(c, outer->inputs[0], IR_OP_Transpose);
    const int64_t *perm;
    if (!t || !t->inputs[0] || ir_get_ints(t, "perm", &perm) != 3 || perm[0] != 0 || perm[1] != 2 ||
        perm[2] != 1)
        return false;
    const ir_type *m = t->inputs[0]->type, *o = outer->outputs[0]->type;
    int r = o->rank;
    if (!ir_type_is_static(m) || !ir_type_is_static(o) || m->rank != 3 || r < 3)
        return false;
    int64_t tdim = m->dims[1], d = m->dims[2], lead = 1;
    for (int i = 0; i < r - 2; i++)
        lead *= o->dims[i];
    if (o->dims[r - 2] != d || o->dims[r - 1] != tdim || lead != m->dims[0])
        return false;
    int64_t shape[IR_MAX_RANK], kperm[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        shape[i] = i < r - 2 ? o->dims[i] : i == r - 2 ? tdim : d;
        kperm[i] = i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2;
    }
    ir_node *inner = sole_producer(c, t->inputs[0], IR_OP_Reshape);
    const ir_type *x = inner && inner->inputs[0] ? inner->inputs[0]->type : NULL;
    if (x && ir_type_is_static(x) && x->rank >= 3 && x->dims[x->rank - 2] == tdim &&
        x->dims[x->rank - 1] == d) {
        set_input(c->g, inner, 1, cn_new_ints(c->g, stem(inner, "shape"), shape, r));
        ir_set_attr_ints(c->g, t, "perm", kperm, (uint32_t)r);
        cn_touch(c, inner);
        cn_touch(c, t);
        /* the types the round's inference would give, for the steps after this one */
        ir_type y = *inner->outputs[0]->type;
        y.rank = (int8_t)r;
        memcpy(y.dims, shape, (size_t)r * sizeof *shape);
        ir_value_set_type(c->g, inner->outputs[0], &y);
        y = *t->outputs[0]->type;
        y.rank = (int8_t)r;
        memcpy(y.dims, o->dims, (size_t)r * sizeof *shape);
        ir_value_set_type(c->g, t->outputs[0], &y);
        return true;
    }
    ir_value *x3 = t->inputs[0], *view_shape = cn_new_ints(c->g, stem(t, "shape"), shape, r);
    cn_touch(c, t);
    t->op = IR_OP_Reshape;
    remove_attr(t, "perm");
    set_input(c->g, t, 0, x3);
    set_input(c->g, t, 1, view_shape);
    ir_type y = *t->outputs[0]->type;
    y.rank = (int8_t)r;
    memcpy(y.dims, shape, (size_t)r * sizeof *shape);
    ir_value_set_type(c->g, t->outputs[0], &y);
    outer->op = IR_OP_Transpose;
    remove_attr(outer, "allowzero");
    outer->ninputs = 1;
    ir_set_attr_ints(c->g, outer, "perm", kperm, (uint32_t)r);
    return true;
}

/* Whether `now` says what `was` said and more: a symbolic or unknown dim became static (a -1
 * that divides exactly where the computed element was a symbol: the only size that runs). */
static bool refines(const ir_type *now, const ir_type *was)
{
    if (now->dtype != was->dtype || now->rank != was->rank || now->layout != was->layout)
        return false;
    for (int i = 0; i < now->rank; i++)
        if (now->dims[i] != was->dims[i] && ir_dim_is_static(was->dims[i]))
            return false;
    return true;
}

/* A Reshape's computed shape as a constant, when its elements are known numbers (>= 1), dims
 * equal to the input's own at their place (0: copy, when allowzero is 0), and at most one other
 * dim, unknown element or -1 (-1: what is left, the only size that runs). The output's type must
 * stay what it was or only gain static dims, also where it is a graph output: a dim the element
 * count determines is the only size with which the original runs (ONNX Runtime's ReshapeFusion
 * makes such a shape constant too). */
static bool respell_reshape_shape(ir_graph *g, ir_node *n)
{
    ir_value *shape = n->ninputs > 1 ? n->inputs[1] : NULL;
    const ir_type *x = n->inputs[0]->type;
    if (n->op != IR_OP_Reshape || !shape || shape->kind == IR_VALUE_CONST || !shape->sv ||
        shape->type->rank != 1)
        return false;
    bool allowzero = ir_get_int(n, "allowzero") != 0;
    const ir_shape_value *sv = shape->sv;
    int64_t vals[IR_SV_MAX];
    int left = 0;
    bool computed = false; /* some element is not a number (else constant folding's business) */
    for (uint32_t k = 0; k < sv->len; k++) {
        const ir_sv_elem *e = &sv->el[k];
        computed |= e->kind != IR_SV_INT;
        if (e->kind == IR_SV_INT && e->v >= 1) {
            vals[k] = e->v;
        } else if (e->kind == IR_SV_DIM && !allowzero && (int)k < x->rank && x->dims[k] == e->v) {
            vals[k] = 0;
        } else if (e->kind != IR_SV_INT || e->v == -1) {
            vals[k] = -1;
            left++;
        } else {
            return false; /* a computed 0 or a negative number: left as it is */
        }
    }
    if (left > 1 || !computed)
        return false;
    /* infer with the candidate as the shape's known elements, before making any constant */
    ir_type before = *n->outputs[0]->type;
    ir_shape_value candidate = {.len = sv->len};
    for (uint32_t k = 0; k < sv->len; k++)
        candidate.el[k] = (ir_sv_elem){vals[k], IR_SV_INT};
    shape->sv = &candidate;
    dg_context *quiet = dg_new();
    bool same =
        ir_op_info_get(n->op)->infer(g, n, quiet) &&
        (ir_type_equal(n->outputs[0]->type, &before) || refines(n->outputs[0]->type, &before));
    dg_free(quiet);
    shape->sv = sv;
    ir_value_set_type(g, n->outputs[0], &before); /* validation after the step infers it again */
    if (same)
        n->inputs[1] = cn_new_ints(g, stem(n, "shape"), vals, sv->len);
    return same;
}

/* One slice of a stack: Gather(Concat(s0, ..., sk) {axis a}, i) {axis a}, i a constant scalar and
 * every s_j of dim 1 at a, is s_i without that dim, Squeeze(s_i, [a]): a view, not a kernel.
 * ONNX Runtime's Attention returns its present K and V stacked ([2, B, H, T, D]) and its readers
 * Gather them back; the import writes the stack as a Concat of Unsqueezes. The Gather becomes
 * that Squeeze in place (its output, name and readers stay); the Concat goes when nothing else
 * reads it. */
static bool respell_unstack(cn_ctx *c, ir_node *n)
{
    if (n->op != IR_OP_Gather || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1])
        return false;
    ir_value *s = n->inputs[0], *idx = n->inputs[1];
    if (s->kind != IR_VALUE_NODE || s->producer->op != IR_OP_Concat || s->producer->dead ||
        idx->type->rank != 0)
        return false;
    const ir_node *cat = s->producer;
    int64_t r = s->type->rank, a = ir_get_int(n, "axis"), ca = ir_get_int(cat, "axis");
    a += a < 0 ? r : 0;
    ca += ca < 0 ? r : 0;
    if (r < 1 || a != ca || a < 0 || a >= r)
        return false;
    for (uint32_t j = 0; j < cat->ninputs; j++)
        if (!cat->inputs[j] || cat->inputs[j]->type->rank != r ||
            cat->inputs[j]->type->dims[a] != 1)
            return false;
    int64_t count, i = -1 - (int64_t)cat->ninputs; /* out of range unless read */
    int64_t *iv = cn_const_ints(c->g, idx, &count);
    if (iv && count == 1 && iv[0] >= -(int64_t)cat->ninputs && iv[0] < (int64_t)cat->ninputs)
        i = iv[0] < 0 ? iv[0] + cat->ninputs : iv[0];
    free(iv);
    if (i < 0)
        return false;
    ir_value *part = cat->inputs[i];
    int64_t axes = a - r; /* counted from the end, as respell_axes writes them */
    n->op = IR_OP_Squeeze;
    remove_attr(n, "axis");
    n->inputs[0] = part;
    n->inputs[1] = cn_new_ints(c->g, stem(n, "axes"), &axes, 1);
    if (part->id < c->nfwd) /* a reader more: no step may change it in place now */
        c->gained[part->id] = true;
    return true;
}

/* A Transpose that moves only dims of size 1 and keeps the last dim in place moves no element:
 * a Reshape to its output's shape (a view, not a kernel). A decoder step's head split of
 * [B, 1, H, D] (the query of one token) is one. The last dim must stay: a K^T that swaps it with a
 * length of 1 stays the Transpose the attention rules know. Static shapes of no zero dim (a 0 in
 * Reshape's shape would copy the input's dim). */
static bool respell_unit_transpose(cn_ctx *c, ir_node *n)
{
    if (n->op != IR_OP_Transpose || !n->inputs[0])
        return false;
    const ir_type *x = n->inputs[0]->type, *y = n->outputs[0]->type;
    const int64_t *perm;
    uint32_t count = ir_get_ints(n, "perm", &perm);
    int r = x->rank;
    if (r < 2 || count != (uint32_t)r || !ir_type_is_static(y) || perm[r - 1] != r - 1)
        return false;
    int64_t last = -1;
    bool moved = false;
    for (int i = 0; i < r; i++) {
        if (y->dims[i] < 1)
            return false;
        moved |= perm[i] != i;
        if (y->dims[i] == 1)
            continue;
        if (perm[i] < last)
            return false;
        last = perm[i];
    }
    if (!moved)
        return false; /* the identity: a no-op, noops' business */
    ir_value *shape = cn_new_ints(c->g, stem(n, "shape"), y->dims, r);
    n->op = IR_OP_Reshape;
    remove_attr(n, "perm");
    set_input(c->g, n, 1, shape);
    return true;
}

/* A ReduceMax or ReduceMin over dims that are all 1 takes the max or min of one element: the
 * element itself, exactly (a NaN too). With keepdims 0 it is a Squeeze of those dims, a view; with
 * keepdims 1 a Reshape to its own input's shape, a no-op that noops removes (static shapes then).
 * The dynamo exporter's padding mask reads `ReduceMax(lengths)` of a batch-1 [1] tensor. Not
 * ReduceSum or ReduceMean: they add the element to 0, which turns -0 into +0. No axes reduce every
 * dim, except with noop_with_empty_axes 1: then the node is an Identity and stays as it is. The
 * reduced dims must be a static 1; the others may be anything. */
static bool respell_unit_reduce(cn_ctx *c, ir_node *n)
{
    if ((n->op != IR_OP_ReduceMax && n->op != IR_OP_ReduceMin) || !n->inputs[0] ||
        ir_node_attr(n, "axes"))
        return false;
    const ir_type *x = n->inputs[0]->type, *y = n->outputs[0]->type;
    bool keep = ir_get_int(n, "keepdims") != 0;
    if (x->rank < 1 || (keep && !ir_type_is_static(y)))
        return false;
    bool reduced[IR_MAX_RANK];
    int64_t count = 0, *axes = NULL;
    if (n->ninputs > 1 && n->inputs[1]) {
        axes = cn_const_ints(c->g, n->inputs[1], &count);
        if (!axes)
            return false; /* axes known at run time */
    }
    bool all = count == 0;
    if (all && ir_get_int(n, "noop_with_empty_axes") != 0) {
        free(axes);
        return false;
    }
    for (int i = 0; i < x->rank; i++)
        reduced[i] = all;
    for (int64_t i = 0; i < count; i++) {
        int64_t k = axes[i] < 0 ? axes[i] + x->rank : axes[i];
        if (k < 0 || k >= x->rank) {
            free(axes);
            return false;
        }
        reduced[k] = true;
    }
    free(axes);
    int64_t squeezed[IR_MAX_RANK];
    int nsqueezed = 0;
    for (int i = 0; i < x->rank; i++) {
        if (reduced[i] && x->dims[i] != 1)
            return false;
        if (reduced[i])
            squeezed[nsqueezed++] = i - x->rank; /* counted from the end, sorted */
    }
    ir_value *shape = keep ? cn_new_ints(c->g, stem(n, "shape"), y->dims, y->rank)
                           : cn_new_ints(c->g, stem(n, "axes"), squeezed, nsqueezed);
    n->op = keep ? IR_OP_Reshape : IR_OP_Squeeze;
    remove_attr(n, "keepdims");
    remove_attr(n, "noop_with_empty_axes");
    set_input(c->g, n, 1, shape);
    return true;
}

/* Two Transposes in a row are one: Transpose(Transpose(x, p), q) is Transpose(x, r) with
 * r[i] = p[q[i]] (exact: it moves the same elements to the same places). Only when nothing else
 * reads the inner one, which then has no reader left; a composition that is the identity is a
 * no-op that noops removes. Not when the outer one swaps the last two dims (a matrix transpose:
 * the GEMM folds and the attention rules' K^T read it as it is). */
static bool respell_transpose_pair(cn_ctx *c, ir_node *outer)
{
    if (outer->op != IR_OP_Transpose || !outer->inputs[0])
        return false;
    ir_node *inner = sole_producer(c, outer->inputs[0], IR_OP_Transpose);
    if (!inner || !inner->inputs[0])
        return false;
    const int64_t *p, *q;
    uint32_t np = ir_get_ints(inner, "perm", &p), nq = ir_get_ints(outer, "perm", &q);
    int r = inner->inputs[0]->type->rank;
    /* an absent perm reverses the dims: only explicit ones of the known rank compose here */
    if (r < 1 || np != (uint32_t)r || nq != (uint32_t)r)
        return false;
    /* an outer swap of the last two dims is a matrix transpose that GEMMs take as transA/transB
     * and the attention rules read as K^T: it stays its own node */
    bool swap = r >= 2;
    for (int i = 0; i < r; i++)
        swap &= q[i] == (i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2);
    if (swap)
        return false;
    int64_t composed[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (q[i] < 0 || q[i] >= r || p[q[i]] < 0 || p[q[i]] >= r)
            return false;
        composed[i] = p[q[i]];
    }
    ir_value *x = inner->inputs[0];
    ir_set_attr_ints(c->g, outer, "perm", composed, (uint32_t)r);
    set_input(c->g, outer, 0, x);
    if (x->id < c->nfwd) /* a reader more: no step may change it in place now */
        c->gained[x->id] = true;
    return true;
}

/* Whether a view node moves no element: a Reshape, Flatten, Squeeze or Unsqueeze, or a Transpose
 * whose dims of more than 1 keep their order (static shapes of no zero dim). */
static bool moves_nothing(const ir_node *n)
{
    if (n->op == IR_OP_Reshape || n->op == IR_OP_Flatten || n->op == IR_OP_Squeeze ||
        n->op == IR_OP_Unsqueeze)
        return true;
    if (n->op != IR_OP_Transpose || !n->inputs[0])
        return false;
    const ir_type *x = n->inputs[0]->type;
    const int64_t *perm;
    if (ir_get_ints(n, "perm", &perm) != (uint32_t)x->rank || !ir_type_is_static(x))
        return false;
    int64_t last = -1;
    for (int i = 0; i < x->rank; i++) {
        if (perm[i] < 0 || perm[i] >= x->rank || x->dims[perm[i]] < 1)
            return false;
        if (x->dims[perm[i]] == 1)
            continue;
        if (perm[i] < last)
            return false;
        last = perm[i];
    }
    return true;
}

/* Whether t is [N, C, 1...] (rank 2 or more): a BatchNormalization's channels and nothing else. */
static bool channels_only(const ir_type *t, int64_t n, int64_t ch)
{
    if (t->rank < 2 || !ir_type_is_static(t) || t->dims[0] != n || t->dims[1] != ch)
        return false;
    for (int i = 2; i < t->rank; i++)
        if (t->dims[i] != 1)
            return false;
    return true;
}

/* A BatchNormalization of a view that moves no element (ONNX Runtime's MatmulBNFusion test:
 * MatMul [1, 5] > Reshape [1, 1, 1, 5] > Transpose [1, 5, 1, 1] > BN), where some value up the
 * chain of views, y, is [N, C, 1...] as the BN's input is: the BN normalizes y (the same elements
 * with the same channels, so exact), and a Reshape to its output's shape follows. The BN then reads
 * what computed y (matmul_bn folds it into a MatMul's weight) and the views between go. The views
 * must have no other reader, the BN one output and constant parameters: the view next to the BN
 * becomes the BN, the BN the Reshape (it keeps its output, so its readers and name stay). */
static bool respell_bn_through_view(cn_ctx *c, ir_node *bn)
{
    if (bn->op != IR_OP_BatchNormalization || bn->noutputs != 1 || bn->ninputs != 5 ||
        !bn->inputs[0])
        return false;
    const ir_type *x = bn->inputs[0]->type;
    if (x->rank < 2 || !ir_type_is_static(x))
        return false;
    int64_t dims[IR_MAX_RANK]; /* the BN's input, whose type the view next to it gives up */
    memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    for (uint32_t i = 1; i < 5; i++)
        if (!bn->inputs[i] || bn->inputs[i]->kind != IR_VALUE_CONST)
            return false;
    ir_node *top = NULL;
    ir_value *y = NULL;
    for (ir_value *v = bn->inputs[0]; v && v->kind == IR_VALUE_NODE;) {
        ir_node *view = v->producer;
        if (cn_shared(c, v) || view->dead || view->noutputs != 1 || !moves_nothing(view) ||
            !view->inputs[0])
            break;
        if (!top)
            top = view;
        v = view->inputs[0];
        if (v->type->dtype == x->dtype && channels_only(v->type, x->dims[0], x->dims[1]))
            y = v;
    }
    if (!y || y->type->rank == x->rank || bn->outputs[0]->type->rank != x->rank)
        return false; /* none, or the BN's own shape: a Reshape to itself, noops' business */
    ir_value **in = ar_alloc_array(c->g->arena, 5, sizeof *in);
    in[0] = y;
    for (uint32_t i = 1; i < 5; i++)
        in[i] = bn->inputs[i];
    ir_attr *attrs = ar_alloc_array(c->g->arena, bn->nattrs, sizeof *attrs);
    if (bn->nattrs) /* a BN without attributes has none to copy (attrs is NULL) */
        memcpy(attrs, bn->attrs, bn->nattrs * sizeof *attrs);
    cn_touch(c, top);
    top->op = IR_OP_BatchNormalization;
    top->inputs = in;
    top->ninputs = 5;
    top->attrs = attrs;
    top->nattrs = bn->nattrs;
    ir_value_set_type(c->g, top->outputs[0], y->type);
    int rank = bn->outputs[0]->type->rank;
    ir_value *shape = cn_new_ints(c->g, stem(bn, "shape"), dims, rank);
    bn->op = IR_OP_Reshape;
    bn->nattrs = 0;
    bn->ninputs = 2;
    bn->inputs[0] = top->outputs[0];
    bn->inputs[1] = shape;
    if (y->id < c->nfwd) /* a reader more: no step may change it in place now */
        c->gained[y->id] = true;
    return true;
}

/* One part of a value cut by a Slice: [start, end) along axis, clamped as ONNX clamps them
 * (kn_slice_axis, the CPU kernel's own clamping). */
typedef struct {
    ir_node *slice;
    int64_t start, end;
} slice_part;

/* The part Slice n cuts from its input of rank r: its starts, ends and axes one-element constants
 * (an absent axes is 0), no steps (drop_unit_steps dropped steps of ones), the axis of static
 * extent; false otherwise. */
static bool slice_part_of(ir_graph *g, const ir_node *n, int r, slice_part *p, int64_t *axis)
{
    if (n->op != IR_OP_Slice || n->dead || n->ninputs < 3 || n->ninputs > 4)
        return false;
    int64_t v[3] = {0, 0, 0}, count;
    for (uint32_t i = 1; i < n->ninputs; i++) {
        int64_t *x = cn_const_ints(g, n->inputs[i], &count);
        bool one = x && count == 1;
        if (one)
            v[i - 1] = x[0];
        free(x);
        if (!one)
            return false;
    }
    *axis = v[2] < 0 ? v[2] + r : v[2];
    if (*axis < 0 || *axis >= r || !ir_dim_is_static(n->inputs[0]->type->dims[*axis]))
        return false;
    int64_t len = kn_slice_axis(n->inputs[0]->type->dims[*axis], v[0], v[1], 1, &p->start);
    p->slice = (ir_node *)n;
    p->end = p->start + len;
    return len > 0;
}

static int by_start(const void *a, const void *b)
{
    int64_t x = ((const slice_part *)a)->start, y = ((const slice_part *)b)->start;
    return (x > y) - (x < y);
}

enum { MAX_TILE_READERS = 64 };

/* Moves `made`, the node made last, to where `dead` (a node marked dead) stands, and `dead` to the
 * end. The Split then comes before every reader of the Slices it replaces, as the first of them
 * did: the round's validation stays incremental (a node made at the end and read by nodes before
 * it would need the whole graph sorted again). */
static void take_place(cn_ctx *c, ir_node *made, ir_node *dead)
{
    ir_graph *g = c->g;
    FR_CHECK(made->id + 1 == g->nodes.len && dead->dead && dead->id < made->id);
    uint32_t at = dead->id;
    g->nodes.items[at] = made;
    g->nodes.items[made->id] = dead;
    dead->id = made->id;
    made->id = at;
    cn_touch(c, made); /* made in the round, though no longer at the end */
}

/* Slices of one value that cut it into consecutive parts along one axis, all of it between them
 * (torch's chunk in the classic export, a packed projection sliced apart, rotate-half's halves),
 * are one Split: their readers read its outputs, in the parts' order. Only when every Slice that
 * reads the value is such a part, along that axis, none a graph output, and the value has at most
 * MAX_TILE_READERS readers (a bound on the work: each of its Slices looks at every reader). */
static bool respell_slice_tiling(cn_ctx *c, ir_node *n)
{
    if (n->op != IR_OP_Slice || n->dead || !n->inputs[0] || n->inputs[0]->type->rank < 1 ||
        n->inputs[0]->nuses > MAX_TILE_READERS)
        return false;
    ir_value *x = n->inputs[0];
    int r = x->type->rank;
    int64_t axis = -1, a;
    VEC(slice_part) parts = {0};
    bool ok = true;
    for (uint32_t u = 0; u < x->nuses && ok; u++) {
        ir_node *s = x->uses[u];
        if (s->op != IR_OP_Slice || s->dead || s->inputs[0] != x)
            continue;
        slice_part p;
        ok = slice_part_of(c->g, s, r, &p, &a) && (axis < 0 || a == axis) &&
             !s->outputs[0]->is_output;
        axis = a;
        for (size_t k = 0; ok && k < parts.len; k++)
            ok = parts.items[k].slice != s;
        if (ok)
            vec_push(&parts, p);
    }
    ok = ok && parts.len >= 2;
    if (ok) {
        qsort(parts.items, parts.len, sizeof *parts.items, by_start);
        ok = parts.items[0].start == 0 && parts.items[parts.len - 1].end == x->type->dims[axis];
        for (size_t k = 1; ok && k < parts.len; k++)
            ok = parts.items[k].start == parts.items[k - 1].end;
    }
    if (ok) {
        size_t k_parts = parts.len;
        const char **names = ar_alloc_array(c->g->arena, k_parts, sizeof *names);
        int64_t *sizes = ar_alloc_array(c->g->arena, k_parts, sizeof *sizes);
        for (size_t k = 0; k < k_parts; k++) {
            names[k] = ir_fresh_name(c->g, parts.items[k].slice->outputs[0]->name);
            sizes[k] = parts.items[k].end - parts.items[k].start;
        }
        ir_node *split = ir_add_node(c->g, IR_OP_Split, 2, names, (uint32_t)k_parts);
        FR_CHECK(split != NULL);
        ir_set_input(split, 0, x);
        ir_set_input(split, 1, cn_new_ints(c->g, stem(n, "split"), sizes, (int64_t)k_parts));
        ir_set_attr_int(c->g, split, "axis", axis - r);
        ir_node *first = NULL;
        for (size_t k = 0; k < k_parts; k++) {
            ir_node *s = parts.items[k].slice;
            ir_value_set_type(c->g, split->outputs[k], s->outputs[0]->type);
            FR_CHECK(cn_forward(c, s->outputs[0], split->outputs[k]));
            cn_kill(c, s);
            if (!first || s->id < first->id)
                first = s;
        }
        take_place(c, split, first);
    }
    vec_free(&parts);
    return ok;
}

/* A Split with neither a sizes input nor a `split` attribute (an even split, by `num_outputs` or
 * by its output count) gets its sizes as a constant input, where inference made every part's
 * extent static: one spelling for both, which the rules read (`Split(x, @n:const)`). */
static bool respell_even_split(ir_graph *g, ir_node *n)
{
    if (n->op != IR_OP_Split || (n->ninputs > 1 && n->inputs[1]) || ir_node_attr(n, "split"))
        return false;
    int r = n->inputs[0]->type->rank;
    int64_t axis = ir_get_int(n, "axis");
    if (axis < 0)
        axis += r;
    if (r < 1 || axis < 0 || axis >= r)
        return false;
    int64_t *sizes = malloc(n->noutputs * sizeof *sizes);
    FR_CHECK(sizes != NULL);
    bool known = true;
    for (uint32_t k = 0; k < n->noutputs && known; k++) {
        const ir_type *t = n->outputs[k]->type;
        known = t->rank == r && ir_dim_is_static(t->dims[axis]);
        sizes[k] = known ? t->dims[axis] : 0;
    }
    if (known) {
        set_input(g, n, 1, cn_new_ints(g, stem(n, "split"), sizes, n->noutputs));
        remove_attr(n, "num_outputs");
    }
    free(sizes);
    return known;
}

/* The operands of a Concat that add nothing (an extent of 0 along its axis, static) dropped, one
 * kept when all are empty: the output's type stays. */
static bool drop_empty_concat_inputs(ir_node *n)
{
    if (n->op != IR_OP_Concat || n->ninputs < 2)
        return false;
    int r = n->outputs[0]->type->rank;
    int64_t axis = ir_get_int(n, "axis");
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r)
        return false;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_type *t = n->inputs[i] ? n->inputs[i]->type : NULL;
        bool empty = t && t->rank == r && ir_dim_is_static(t->dims[axis]) && t->dims[axis] == 0;
        if (!empty || (kept == 0 && i == n->ninputs - 1))
            n->inputs[kept++] = n->inputs[i];
    }
    bool changed = kept < n->ninputs;
    n->ninputs = kept;
    return changed;
}

uint32_t cn_spell(cn_ctx *c)
{
    uint32_t respelled = 0;
    for (size_t i = 0; i < cn_nvisits(c); i++) {
        ir_node *n = cn_visit(c, i);
        bool changed = false;
        if (table[n->op].input > 0 && n->inputs[0])
            changed |= respell_axes(c->g, n, &table[n->op]);
        changed |= drop_unit_steps(c->g, n);
        changed |= respell_reshape_shape(c->g, n);
        if (axis_attr[n->op])
            changed |= respell_axis_attr(c->g, n);
        changed |= respell_kt_view(c, n);
        changed |= respell_unstack(c, n);
        changed |= respell_unit_transpose(c, n);
        changed |= respell_transpose_pair(c, n);
        changed |= respell_unit_reduce(c, n);
        changed |= respell_bn_through_view(c, n);
        changed |= drop_empty_concat_inputs(n);
        changed |= respell_even_split(c->g, n);
        changed |= respell_slice_tiling(c, n); /* n is dead then: its part is the Split's */
        if (changed && !n->dead)
            cn_touch(c, n);
        respelled += changed;
    }
    return respelled;
}
