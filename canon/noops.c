/* No-ops removed: nodes whose first output is always their input (docs/canon.md, "No-ops"). A
 * table gives, per op, when it is one; the readers then read the input (cn_forward refuses a graph
 * output, whose name would change, and a change of type). Every other output must be unread.
 * After the round's merges (cn_output_noops), a no-op that writes a graph output goes too when
 * only it reads its input: the node before writes the graph output itself.
 * Also an Expand that a broadcasting reader would do anyway: that reader reads its input. */
#include "canon/internal.h"

#include <stdlib.h>
#include <string.h>

/* Whether every element of constant v is zero (false when v is not a readable constant). */
static bool all_zero(ir_graph *g, ir_value *v)
{
    int64_t n;
    if (!v || v->kind != IR_VALUE_CONST || !ir_type_nbytes(v->type, &n))
        return false;
    const unsigned char *data = ir_const_data_or_null(g, v);
    if (!data)
        return false;
    /* +0.0 and integer 0 are all-zero bytes; -0.0 pads with -0.0, which adds 0 just the same, but
     * is left alone */
    for (int64_t i = 0; i < n; i++)
        if (data[i])
            return false;
    return true;
}

/* Whether every element of constant v is non-zero; -1 when some element is zero and some is not
 * or v is not readable, 0 when all are zero, 1 when all are non-zero. */
static int truth(ir_graph *g, ir_value *v)
{
    int64_t n;
    if (!v || v->kind != IR_VALUE_CONST || v->type->dtype != IR_BOOL || !ir_type_numel(v->type, &n))
        return -1;
    const unsigned char *data = ir_const_data_or_null(g, v);
    if (!data || n == 0)
        return -1;
    int first = data[0] != 0;
    for (int64_t i = 1; i < n; i++)
        if ((data[i] != 0) != first)
            return -1;
    return first;
}

/* Whether every element of an integer constant equals `x`. */
static bool all_ints(ir_graph *g, ir_value *v, int64_t x)
{
    int64_t n;
    int64_t *e = cn_const_ints(g, v, &n);
    bool ok = e != NULL;
    for (int64_t i = 0; ok && i < n; i++)
        ok = e[i] == x;
    free(e);
    return ok;
}

/* The same type as the output, and no unknown dim in it: an Expand, Reshape or Slice that keeps
 * every dim keeps every element in place. */
static bool keeps_type(const ir_node *n, const ir_value *in)
{
    const ir_type *t = n->outputs[0]->type;
    if (!in || t->rank < 0 || !ir_type_equal(t, in->type))
        return false;
    for (int8_t d = 0; d < t->rank; d++)
        if (t->dims[d] == IR_DIM_UNKNOWN)
            return false;
    return true;
}

typedef ir_value *(*noop_fn)(ir_graph *g, ir_node *n);

static ir_value *identity(ir_graph *g, ir_node *n)
{
    (void)g;
    return n->inputs[0];
}

/* In inference mode only: training_mode absent or a constant false. */
static ir_value *dropout(ir_graph *g, ir_node *n)
{
    if (n->ninputs >= 3 && n->inputs[2] && truth(g, n->inputs[2]) != 0)
        return NULL;
    return n->inputs[0];
}

static ir_value *cast(ir_graph *g, ir_node *n)
{
    (void)g;
    return n->outputs[0]->type->dtype == n->inputs[0]->type->dtype ? n->inputs[0] : NULL;
}

static ir_value *same_shape(ir_graph *g, ir_node *n)
{
    (void)g;
    return keeps_type(n, n->inputs[0]) ? n->inputs[0] : NULL;
}

/* The identity permutation (an empty perm reverses the axes: a no-op at rank 0 or 1). */
static ir_value *transpose(ir_graph *g, ir_node *n)
{
    (void)g;
    const int64_t *perm;
    uint32_t count = ir_get_ints(n, "perm", &perm);
    for (uint32_t i = 0; i < count; i++)
        if (perm[i] != (int64_t)i)
            return NULL;
    return count || n->inputs[0]->type->rank == 0 || n->inputs[0]->type->rank == 1 ? n->inputs[0]
                                                                                   : NULL;
}

/* Same dims with steps of one (absent or constant): starts are then 0 and ends the sizes. A step
 * of -1 keeps the dims but reverses, so steps must be known. */
static ir_value *slice(ir_graph *g, ir_node *n)
{
    if (n->ninputs >= 5 && n->inputs[4] && !all_ints(g, n->inputs[4], 1))
        return NULL;
    return keeps_type(n, n->inputs[0]) ? n->inputs[0] : NULL;
}

static ir_value *one_input(ir_graph *g, ir_node *n)
{
    (void)g;
    return n->ninputs == 1 ? n->inputs[0] : NULL;
}

/* Where(c, a, b) with c a constant all true (a) or all false (b), of the output's type. */
static ir_value *where(ir_graph *g, ir_node *n)
{
    int t = truth(g, n->inputs[0]);
    ir_value *v = t == 1 ? n->inputs[1] : t == 0 ? n->inputs[2] : NULL;
    return v && ir_type_equal(v->type, n->outputs[0]->type) ? v : NULL;
}

/* Pads all zero (the mode does not matter then). */
static ir_value *pad(ir_graph *g, ir_node *n)
{
    if (n->ninputs >= 4 && n->inputs[3])
        return NULL; /* axes: read below only when absent, to keep this simple and sure */
    return all_zero(g, n->inputs[1]) && keeps_type(n, n->inputs[0]) ? n->inputs[0] : NULL;
}

/* Element 0 (or -1) of a one-element vector that a Reshape or Unsqueeze made of a scalar: that
 * scalar (the dynamo exporter's Gather(Reshape(max(lengths), [1]), 0)). */
static ir_value *gather_scalar(ir_graph *g, ir_node *n)
{
    ir_value *v = n->inputs[0], *idx = n->ninputs > 1 ? n->inputs[1] : NULL;
    if (!idx || idx->type->rank != 0 || v->kind != IR_VALUE_NODE || v->type->rank != 1 ||
        v->type->dims[0] != 1 || n->outputs[0]->type->rank != 0 ||
        (!all_ints(g, idx, 0) && !all_ints(g, idx, -1)))
        return NULL;
    const ir_node *p = v->producer;
    if ((p->op != IR_OP_Reshape && p->op != IR_OP_Unsqueeze) || !p->inputs[0] ||
        p->inputs[0]->type->rank != 0)
        return NULL;
    return p->inputs[0];
}

static const noop_fn noop_table[IR_OP_COUNT] = {
    [IR_OP_Identity] = identity, [IR_OP_Dropout] = dropout,    [IR_OP_Cast] = cast,
    [IR_OP_Expand] = same_shape, [IR_OP_Reshape] = same_shape, [IR_OP_Transpose] = transpose,
    [IR_OP_Slice] = slice,       [IR_OP_Concat] = one_input,   [IR_OP_Where] = where,
    [IR_OP_Pad] = pad,           [IR_OP_Gather] = gather_scalar,
};

/* Numpy broadcasting of static t into dims/rank (false when t is not static or does not
 * broadcast). */
static bool broadcast_into(int64_t *dims, int *rank, const ir_type *t)
{
    if (!ir_type_is_static(t))
        return false;
    int r = t->rank > *rank ? t->rank : *rank;
    int64_t out[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - *rank), ib = i - (r - t->rank);
        int64_t a = ia >= 0 ? dims[ia] : 1, b = ib >= 0 ? t->dims[ib] : 1;
        if (a != b && a != 1 && b != 1)
            return false;
        out[i] = a == 1 ? b : a;
    }
    memcpy(dims, out, (size_t)r * sizeof *out);
    *rank = r;
    return true;
}

/* Whether n's output has the shape its inputs broadcast to with input k read as v instead. */
static bool same_broadcast(const ir_node *n, uint32_t k, const ir_value *v)
{
    int64_t dims[IR_MAX_RANK];
    int rank = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_value *in = i == k ? v : n->inputs[i];
        if (!in || !broadcast_into(dims, &rank, in->type))
            return false;
    }
    const ir_type *y = n->outputs[0]->type;
    return ir_type_is_static(y) && y->rank == rank &&
           memcmp(y->dims, dims, (size_t)rank * sizeof *dims) == 0;
}

/* Whether dim a of a value that broadcasts into dim b of another is 1 or b itself (a static size
 * or the same symbol; an unknown dim is neither). */
static bool dim_broadcasts_into(int64_t a, int64_t b)
{
    return a == 1 || (a == b && a != IR_DIM_UNKNOWN);
}

/* Whether v = Expand(e, Shape(m)) where m is another input of n and e broadcasts into m's shape
 * (each of e's dims, right-aligned, 1 or m's): then v has m's shape, and n, which broadcasts m
 * with its other inputs anyway, gives the same output reading e. Symbolic and unknown dims of m
 * are fine: nothing needs to be static (the dynamo exporter's masked_fill of a mask whose length
 * is computed). */
static bool expand_to_sibling(cn_ctx *c, const ir_node *n, uint32_t k, const ir_value *v,
                              const ir_value *e)
{
    const ir_node *x = v->producer;
    ir_value *sv = x->ninputs > 1 && x->inputs[1] ? cn_resolve(c, x->inputs[1]) : NULL;
    if (!sv || sv->kind != IR_VALUE_NODE || sv->producer->op != IR_OP_Shape ||
        !sv->producer->inputs[0] || ir_node_attr(sv->producer, "end") ||
        ir_get_int(sv->producer, "start") != 0)
        return false;
    const ir_value *m = cn_resolve(c, sv->producer->inputs[0]);
    bool sibling = false;
    for (uint32_t i = 0; i < n->ninputs && !sibling; i++)
        sibling = i != k && n->inputs[i] && cn_resolve(c, n->inputs[i]) == m;
    const ir_type *te = e->type, *tm = m->type;
    if (!sibling || te->rank < 0 || tm->rank < 0 || te->rank > tm->rank)
        return false;
    for (int i = 0; i < te->rank; i++)
        if (!dim_broadcasts_into(te->dims[i], tm->dims[i + tm->rank - te->rank]))
            return false;
    return true;
}

/* Whether v, a 1-D shape tensor, is Concat(ones..., [s]) for s resolving to `limit`: every input
 * but the last a constant of ones, the last a Reshape or Unsqueeze of a scalar to one element. */
static bool ones_then(cn_ctx *c, ir_value *v, const ir_value *limit)
{
    v = v ? cn_resolve(c, v) : NULL;
    if (!v || v->kind != IR_VALUE_NODE || v->producer->op != IR_OP_Concat || v->type->rank != 1)
        return false;
    const ir_node *cat = v->producer;
    for (uint32_t i = 0; i + 1 < cat->ninputs; i++)
        if (!cat->inputs[i] || !all_ints(c->g, cn_resolve(c, cat->inputs[i]), 1))
            return false;
    ir_value *last = cat->ninputs ? cn_resolve(c, cat->inputs[cat->ninputs - 1]) : NULL;
    if (!last || last->kind != IR_VALUE_NODE || last->type->rank != 1 || last->type->dims[0] != 1 ||
        (last->producer->op != IR_OP_Reshape && last->producer->op != IR_OP_Unsqueeze))
        return false;
    ir_value *s = last->producer->inputs[0];
    return s && s->type->rank == 0 && cn_resolve(c, s) == limit;
}

/* Whether v = Expand(e, Concat(ones..., [L])) for e = Range(0, L, 1): v is e with leading 1s
 * (e has L elements; a negative L is no valid Expand), and another input of n has at least v's
 * rank, so n reading e broadcasts to the same output (torch's arange(n).expand(1, n) of a length
 * computed from the data: the dynamo exporter's padding mask). */
static bool expand_range(cn_ctx *c, const ir_node *n, uint32_t k, const ir_value *v,
                         const ir_value *e)
{
    const ir_node *x = v->producer;
    if (e->kind != IR_VALUE_NODE || e->producer->op != IR_OP_Range || e->type->rank != 1 ||
        v->type->rank < 1 || x->ninputs < 2)
        return false;
    const ir_node *r = e->producer;
    if (!r->inputs[0] || !r->inputs[1] || !r->inputs[2] ||
        !all_ints(c->g, cn_resolve(c, r->inputs[0]), 0) ||
        !all_ints(c->g, cn_resolve(c, r->inputs[2]), 1) ||
        !ones_then(c, x->inputs[1], cn_resolve(c, r->inputs[1])))
        return false;
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (i != k && n->inputs[i] && n->inputs[i]->type->rank >= v->type->rank)
            return true;
    return false;
}

/* An Expand read by an op that broadcasts all its inputs (numpy style), whose output has its
 * shape without the Expand too: that op reads the Expand's input instead, which it broadcasts
 * the same (torch's masked_fill writes Where(m, a, Expand(0, Shape(m)))). Only that reader
 * changes; the Expand goes when nothing else reads it. PRelu broadcasts one way and is left
 * alone; static shapes only, or an Expand to the shape of another input of the reader
 * (expand_to_sibling), or of a Range to its own length (expand_range). */
static uint32_t absorb_expands(cn_ctx *c)
{
    uint32_t absorbed = 0;
    for (size_t i = 0; i < c->g->nodes.len; i++) {
        ir_node *n = c->g->nodes.items[i];
        if (n->dead || ir_op_info_get(n->op)->cls != IR_CLASS_BROADCAST || n->op == IR_OP_PRelu)
            continue;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            ir_value *v = cn_resolve(c, n->inputs[k]);
            if (!v || v->kind != IR_VALUE_NODE || v->producer->op != IR_OP_Expand ||
                !v->producer->inputs[0])
                continue;
            ir_value *e = cn_resolve(c, v->producer->inputs[0]);
            if (e->type->dtype == v->type->dtype &&
                (same_broadcast(n, k, e) || expand_to_sibling(c, n, k, v, e) ||
                 expand_range(c, n, k, v, e))) {
                n->inputs[k] = e;
                cn_touch_operands(c, n);
                if (e->id < c->nfwd) /* a reader more: no step may change it in place now */
                    c->gained[e->id] = true;
                absorbed++;
            }
        }
    }
    return absorbed;
}

/* A no-op n whose output is a graph output: when its input `to` is the output of another node
 * that only n reads, that node writes the graph output itself (the output keeps its name and
 * type; `to` is left unread). */
static bool give_output(cn_ctx *c, ir_node *n, ir_value *to)
{
    ir_value *out = n->outputs[0];
    if (!out->is_output || !to || to->kind != IR_VALUE_NODE || to->is_output || to->nuses != 1 ||
        to->id >= c->nfwd || c->gained[to->id] || c->fwd[to->id] || to->producer->dead ||
        !ir_type_equal(to->type, out->type))
        return false;
    bool read_once = false;
    for (uint32_t k = 0; k < n->ninputs; k++)
        read_once |= n->inputs[k] == to;
    if (!read_once)
        return false;
    ir_node *p = to->producer;
    p->outputs[to->out_index] = out;
    out->producer = p;
    out->out_index = to->out_index;
    cn_touch(c, p);
    return true;
}

uint32_t cn_noops(cn_ctx *c)
{
    /* no step before makes an Expand */
    uint32_t removed = c->has_op[IR_OP_Expand] || c->opts->whole_rounds ? absorb_expands(c) : 0;
    for (size_t i = 0; i < cn_nvisits(c); i++) {
        ir_node *n = cn_visit(c, i);
        noop_fn fn = noop_table[n->op];
        if (!fn || n->dead || !n->inputs[0])
            continue;
        bool others_unread = true;
        for (uint32_t k = 1; k < n->noutputs; k++)
            others_unread &= n->outputs[k]->nuses == 0 && !n->outputs[k]->is_output;
        ir_value *to = others_unread ? fn(c->g, n) : NULL;
        if (to && cn_forward(c, n->outputs[0], cn_resolve(c, to))) {
            cn_kill(c, n);
            removed++;
        }
    }
    return removed;
}

uint32_t cn_output_noops(cn_ctx *c)
{
    uint32_t removed = 0;
    for (size_t i = 0; i < cn_nvisits(c); i++) {
        ir_node *n = cn_visit(c, i);
        noop_fn fn = noop_table[n->op];
        if (!fn || n->dead || !n->inputs[0] || !n->outputs[0]->is_output)
            continue;
        bool others_unread = true;
        for (uint32_t k = 1; k < n->noutputs; k++)
            others_unread &= n->outputs[k]->nuses == 0 && !n->outputs[k]->is_output;
        if (others_unread && give_output(c, n, fn(c->g, n))) {
            cn_kill(c, n);
            removed++;
        }
    }
    return removed;
}
