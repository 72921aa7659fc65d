/* Quantize round trips (docs/canon.md, "Quantize round trips"): QuantizeLinear(DequantizeLinear(q,
 * s, z), s, z) with the same per-tensor scale and zero point gives q back, when it does for every
 * value q's dtype holds. That is checked, not assumed: every value (256 of an 8-bit dtype, 65536 of
 * a 16-bit one) goes through the two kernels once, on the CPU reference, with the graph's own scale
 * and zero point (a bf16 scale rounds (q - z) * s to 8 bits, and some scales do not come back).
 *
 * - Q(DQ(q)) is q: Q's readers read q;
 * - Q(M(DQ(q))), M an op that only moves elements (Transpose, Reshape, Squeeze, ...), is M(q): M
 *   reads q and writes Q's output (its name stays). A constant q then folds through M: ONNX
 *   Runtime's "QDQ node units" of constant weights.
 *
 * The opposite order, DQ(Q(x)), rounds x: never removed. */
#include "canon/internal.h"

#include "base/check.h"
#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

/* Ops whose output elements are elements of input 0 (the others are shapes or indices). */
static const bool moves[IR_OP_COUNT] = {
    [IR_OP_Transpose] = true, [IR_OP_Reshape] = true, [IR_OP_Flatten] = true,
    [IR_OP_Squeeze] = true,   [IR_OP_Unsqueeze] = true, [IR_OP_Expand] = true,
    [IR_OP_Slice] = true,     [IR_OP_Gather] = true,
};

/* Whether constants a and b (NULL: omitted) are the same: one value, or equal type and bytes. */
static bool same_const(ir_graph *g, ir_value *a, ir_value *b)
{
    if (a == b)
        return true;
    int64_t na, nb;
    if (!a || !b || a->kind != IR_VALUE_CONST || b->kind != IR_VALUE_CONST ||
        !ir_type_equal(a->type, b->type) || !ir_type_nbytes(a->type, &na) ||
        !ir_type_nbytes(b->type, &nb) || na != nb)
        return false;
    const void *da = ir_const_data_or_null(g, a);
    const void *db = da ? ir_const_data_or_null(g, b) : NULL;
    bool same = da && db && memcmp(da, db, (size_t)na) == 0;
    return same;
}

/* A constant of one element (per tensor), or omitted. */
static bool per_tensor(const ir_value *v, bool may_omit)
{
    int64_t n;
    if (!v)
        return may_omit;
    return v->kind == IR_VALUE_CONST && ir_type_numel(v->type, &n) && n == 1;
}

/* Copies constant v of one element into `one` as a scalar named `name`. */
static ir_value *scalar_copy(ir_graph *g, ir_graph *one, ir_value *v, const char *name,
                             dg_context *dg)
{
    const void *data = ir_const_data(g, v, dg);
    if (!data)
        return NULL;
    ir_type t = {.dtype = v->type->dtype, .rank = 0};
    ir_value *w = ir_add_const(one, name, &t, ir_const_new(one, IR_CONST_DATA));
    if (w)
        ir_const_set_data(one, w, data, ir_dtype_size(t.dtype));
    return w;
}

/* Whether Q(DQ(k)) == k for every k of q's dtype, with dq's and qn's scale, zero point and
 * attributes, run on the CPU kernels. */
static bool round_trips(ir_graph *g, const ir_node *dq, const ir_node *qn, ir_dtype dt)
{
    int64_t count = dt == IR_I8 || dt == IR_U8 ? 256 : dt == IR_I16 || dt == IR_U16 ? 65536 : 0;
    if (!count)
        return false;
    size_t size = ir_dtype_size(dt);
    unsigned char *all = malloc((size_t)count * size);
    FR_CHECK(all != NULL);
    for (int64_t k = 0; k < count; k++) { /* every bit pattern, little-endian */
        all[k * (int64_t)size] = (unsigned char)(k & 0xff);
        if (size == 2)
            all[k * 2 + 1] = (unsigned char)(k >> 8);
    }
    ir_graph *one = ir_graph_new("round_trip");
    dg_context *dg = dg_new();
    ir_type t = {.dtype = dt, .rank = 1, .dims = {count}};
    ir_value *q = ir_add_const(one, "q", &t, ir_const_new(one, IR_CONST_DATA));
    ir_const_set_data(one, q, all, (size_t)count * size);
    ir_value *s = scalar_copy(g, one, dq->inputs[1], "s", dg);
    ir_value *z = dq->ninputs > 2 && dq->inputs[2] ? scalar_copy(g, one, dq->inputs[2], "z", dg)
                                                     : NULL;
    bool ok = s && (z || dq->ninputs < 3 || !dq->inputs[2]);
    const char *dname = "d", *rname = "r";
    ir_node *d = ir_add_node(one, IR_OP_DequantizeLinear, z ? 3 : 2, &dname, 1);
    ir_node *r = ir_add_node(one, IR_OP_QuantizeLinear, z ? 3 : 2, &rname, 1);
    FR_CHECK(d != NULL && r != NULL);
    ir_set_input(d, 0, q);
    ir_set_input(r, 0, d->outputs[0]);
    if (ok) {
        ir_set_input(d, 1, s);
        ir_set_input(r, 1, s);
        if (z) {
            ir_set_input(d, 2, z);
            ir_set_input(r, 2, z);
        }
    }
    for (uint32_t a = 0; a < dq->nattrs; a++)
        ir_set_attr(one, d, &dq->attrs[a]);
    for (uint32_t a = 0; a < qn->nattrs; a++)
        ir_set_attr(one, r, &qn->attrs[a]);
    ir_add_output(one, r->outputs[0]);
    rt_result res = {0};
    rt_options ro = {.seed = 0};
    ok = ok && ir_validate(one, dg) && rt_run_cpu(one, NULL, 0, &ro, &res, dg) &&
         res.outputs[0].type.dtype == dt && res.outputs[0].nbytes == (size_t)count * size &&
         memcmp(res.outputs[0].data, all, (size_t)count * size) == 0;
    if (res.arena)
        rt_result_free(&res);
    dg_free(dg);
    ir_graph_free(one);
    free(all);
    return ok;
}

/* The DequantizeLinear that Q (node qn) undoes exactly, reading `v`; NULL when none. */
static ir_node *undone_dq(cn_ctx *c, ir_node *qn, ir_value *v)
{
    if (!v || v->kind != IR_VALUE_NODE || v->producer->op != IR_OP_DequantizeLinear ||
        v->producer->dead)
        return NULL;
    ir_node *dq = v->producer;
    ir_value *q = cn_resolve(c, dq->inputs[0]);
    ir_value *zd = dq->ninputs > 2 ? cn_resolve(c, dq->inputs[2]) : NULL;
    ir_value *zq = qn->ninputs > 2 ? cn_resolve(c, qn->inputs[2]) : NULL;
    ir_value *sd = cn_resolve(c, dq->inputs[1]), *sq = cn_resolve(c, qn->inputs[1]);
    if (!q || q->type->dtype != qn->outputs[0]->type->dtype || !per_tensor(sd, false) ||
        !per_tensor(zd, true) || !same_const(c->g, sd, sq) || !same_const(c->g, zd, zq) ||
        ir_get_int(dq, "block_size") != 0 || ir_get_int(qn, "block_size") != 0 ||
        !round_trips(c->g, dq, qn, q->type->dtype))
        return NULL;
    return dq;
}

/* Q(M(DQ(q))): M reads q and writes Q's output. M's own output must be read by Q alone. */
static bool through_move(cn_ctx *c, ir_node *qn, ir_value *mv)
{
    ir_node *m = mv->producer;
    if (!moves[m->op] || m->dead || m->noutputs != 1 || mv->is_output || mv->nuses != 1 ||
        mv->id >= c->nfwd || c->gained[mv->id] || c->fwd[mv->id])
        return false;
    ir_node *dq = undone_dq(c, qn, cn_resolve(c, m->inputs[0]));
    if (!dq)
        return false;
    ir_value *q = cn_resolve(c, dq->inputs[0]);
    ir_value *out = qn->outputs[0];
    m->inputs[0] = q;
    m->outputs[0] = out;
    out->producer = m;
    out->out_index = 0;
    cn_touch(c, m);
    if (q->id < c->nfwd)
        c->gained[q->id] = true;
    cn_kill(c, qn);
    return true;
}

uint32_t cn_qdq(cn_ctx *c)
{
    uint32_t removed = 0;
    for (size_t i = 0; i < cn_nvisits(c); i++) {
        ir_node *n = cn_visit(c, i);
        if (n->dead || n->op != IR_OP_QuantizeLinear || n->ninputs < 2 || n->noutputs != 1)
            continue;
        ir_value *v = cn_resolve(c, n->inputs[0]);
        if (!v || v->kind != IR_VALUE_NODE)
            continue;
        ir_node *dq = v->producer->op == IR_OP_DequantizeLinear ? undone_dq(c, n, v) : NULL;
        if (dq && cn_forward(c, n->outputs[0], cn_resolve(c, dq->inputs[0]))) {
            cn_kill(c, n);
            removed++;
        } else if (!dq && through_move(c, n, v)) {
            removed++;
        }
    }
    return removed;
}
