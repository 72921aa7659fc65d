/* Op knowledge for building instances: given the inputs of a node that are already built, the
 * types (and for structural operands, the values) of the others, and the attributes the op needs.
 * This is mechanism, like the op catalog's inference: which operand of a Conv is its weight and
 * what shape it has. The proposals need not always be right: inference has the last word and a
 * candidate it rejects is simply drawn again. */
#include "prove/internal.h"

#include "base/check.h"

#include <string.h>

/* ---- helpers ---- */

/* Whether the node has the attribute set (not only its catalog default). */
static bool attr_is_set(const ir_node *n, const char *name)
{
    for (uint32_t i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return true;
    return false;
}

/* Whether the op has the attribute and the pattern did not set it. */
static bool free_attr(const ir_node *n, const char *name)
{
    return ir_op_attr_schema(n->op, name) && !attr_is_set(n, name);
}

static int64_t pool_dim(pv_gen *gen)
{
    return gen->pool[pv_rng_below(gen->rng, FR_COUNT_OF(gen->pool))];
}

ir_type pv_random_type(pv_gen *gen, int rank)
{
    /* sometimes square (every dim one size, not 1): a statistic kept without its dim
     * (keepdims = 0) or a transposed value keeps the shape there, so a rule wrong only on such
     * shapes fires */
    bool square = rank >= 2 && pv_rng_chance(gen->rng, 0.3);
    ir_type t = {.dtype = IR_F32, .rank = (int8_t)rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = square && i ? t.dims[0] : pool_dim(gen);
    for (int tries = 0; square && t.dims[0] == 1 && tries < 4; tries++)
        t.dims[0] = pool_dim(gen); /* a square of ones says nothing */
    for (int i = 1; square && i < rank; i++)
        t.dims[i] = t.dims[0];
    return t;
}

static ir_type vector_type(ir_dtype dt, int64_t n)
{
    return (ir_type){.dtype = dt, .rank = 1, .dims = {n}};
}

/* The type slot i has: its built input's, else what was proposed for it, else NULL. */
static const ir_type *slot_type(const ir_node *n, const pv_operand *out, uint32_t i)
{
    if (i >= n->ninputs)
        return NULL;
    if (n->inputs[i])
        return n->inputs[i]->type;
    return out[i].type.dtype != IR_DTYPE_UNKNOWN ? &out[i].type : NULL;
}

static bool open_slot(const ir_node *n, const pv_operand *out, uint32_t i)
{
    return i < n->ninputs && !slot_type(n, out, i);
}

static int hint_rank(const pv_node_facts *const *hints, uint32_t i, int lo, int hi, pv_gen *gen)
{
    if (hints[i] && hints[i]->rank >= 0)
        return hints[i]->rank;
    return lo + (int)pv_rng_below(gen->rng, (uint32_t)(hi - lo + 1));
}

/* Proposes slot i as primary data of rank lo..hi (or the pattern's rank) if it is open; returns
 * its type either way (NULL when not built, not proposed, and not open). */
/* A type for primary data of `rank`: mostly one drawn before for another leaf of that rank
 * (independent inputs of one pattern, Q, K and V, usually agree in a model), else a new one. */
static ir_type primary_type(pv_gen *gen, int rank)
{
    uint32_t same[FR_COUNT_OF(gen->primaries)], n = 0;
    for (uint32_t i = 0; i < gen->nprimaries; i++)
        if (gen->primaries[i].rank == rank)
            same[n++] = i;
    if (n && pv_rng_chance(gen->rng, 0.6))
        return gen->primaries[same[pv_rng_below(gen->rng, n)]];
    ir_type t = pv_random_type(gen, rank);
    if (gen->nprimaries < FR_COUNT_OF(gen->primaries))
        gen->primaries[gen->nprimaries++] = t;
    return t;
}

static const ir_type *primary(pv_gen *gen, const ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out, uint32_t i, int lo, int hi)
{
    if (open_slot(n, out, i))
        out[i].type = primary_type(gen, hint_rank(hints, i, lo, hi, gen));
    return slot_type(n, out, i);
}

static void propose(pv_operand *o, ir_type t, bool want_const, pv_domain domain)
{
    o->type = t;
    o->want_const = want_const;
    o->domain = domain;
}

/* An i64 vector constant of exact values (axes, starts, shapes). */
static void propose_ints(pv_gen *gen, pv_operand *o, const int64_t *v, int64_t n)
{
    propose(o, vector_type(IR_I64, n), true, PV_DOM_INT);
    o->values = ar_alloc(gen->g->arena, (size_t)(n + 1) * sizeof *o->values);
    for (int64_t i = 0; i < n; i++)
        o->values[i] = (double)v[i];
}

static int64_t random_axis(pv_gen *gen, int rank)
{
    return (int64_t)pv_rng_below(gen->rng, (uint32_t)(2 * rank)) - rank; /* [-rank, rank) */
}

/* Salts that keep the enumerated choices of one node from moving in lockstep (pv_cycle). */
enum {
    SALT_AXIS = 1,
    SALT_KEEPDIMS = 2,
    SALT_PERM = 3,
    SALT_PARTNER = 5,
    SALT_APPROX = 7,
    SALT_ALPHA = 11,
    SALT_BETA = 13,
    SALT_QAXIS = 17,
    SALT_TRAINING = 23,
};

/* An axis enumerated over the turns: -1 (the usual last axis, counted from the end), then each axis
 * 0 .. rank-1 by number; `with_unset` adds a first option -2: leave the attribute at its
 * default. */
static int64_t cycled_axis(pv_gen *gen, int rank, bool with_unset)
{
    uint32_t n = (uint32_t)rank + 1 + (with_unset ? 1 : 0);
    int64_t k = (int64_t)pv_cycle(gen, SALT_AXIS, n) - (with_unset ? 1 : 0);
    return k < 0 ? -2 : k == 0 ? -1 : k - 1;
}

static int64_t normal_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

/* ---- broadcasting ---- */

/* Whether t satisfies the leaf hints (rank, one element). */
static bool fits(const ir_type *t, const pv_node_facts *h)
{
    if (!h)
        return true;
    int64_t numel;
    if (h->rank >= 0 && t->rank != h->rank)
        return false;
    return !h->one_element || (ir_type_numel(t, &numel) && numel == 1);
}

/* A partner for a broadcast op with operand type s, enumerated over the turns: the same shape
 * (twice as often), a suffix of it (a bias [C], a scalar), [1], one value per channel [C, 1, 1]
 * or [1, C, 1, 1], one per row [..., 1], s with a leading 1. */
static ir_type broadcast_partner(pv_gen *gen, const ir_type *s, const pv_node_facts *h)
{
    ir_type c[2 * IR_MAX_RANK + 4];
    uint32_t n = 0;
    c[n++] = *s;
    c[n++] = *s;
    for (int r = 0; r < s->rank; r++) { /* suffixes of rank r: [], [last], ... */
        ir_type t = {.dtype = s->dtype, .rank = (int8_t)r};
        memcpy(t.dims, s->dims + (s->rank - r), (size_t)r * sizeof *t.dims);
        c[n++] = t;
    }
    c[n++] = (ir_type){.dtype = s->dtype, .rank = 1, .dims = {1}};
    if (s->rank >= 3)
        c[n++] = (ir_type){.dtype = s->dtype, .rank = 3, .dims = {s->dims[s->rank - 3], 1, 1}};
    if (s->rank == 4) /* one value per channel, batch dim kept: [1, C, 1, 1] */
        c[n++] = (ir_type){.dtype = s->dtype, .rank = 4, .dims = {1, s->dims[1], 1, 1}};
    if (s->rank >= 1) { /* [..., 1]: one value per row */
        ir_type t = *s;
        t.dims[t.rank - 1] = 1;
        c[n++] = t;
    }
    if (s->rank >= 2) {
        ir_type t = *s;
        t.dims[0] = 1;
        c[n++] = t;
    }
    ir_type fit[FR_COUNT_OF(c)];
    uint32_t nfit = 0;
    for (uint32_t i = 0; i < n; i++)
        if (fits(&c[i], h))
            fit[nfit++] = c[i];
    if (!nfit)
        return c[pv_cycle(gen, SALT_PARTNER, n)];
    return fit[pv_cycle(gen, SALT_PARTNER, nfit)];
}

static bool propose_binary(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                           pv_operand *out)
{
    const ir_type *a = slot_type(n, out, 0), *b = slot_type(n, out, 1);
    if (!a && !b)
        a = primary(gen, n, hints, out, 0, 1, 4);
    bool pow = n->op == IR_OP_Pow, div = n->op == IR_OP_Div;
    if (!b) {
        /* an exponent is mostly a small integer scalar; a divisor stays away from zero */
        if (pow && pv_rng_chance(gen->rng, 0.7))
            propose(&out[1], (ir_type){.dtype = a->dtype, .rank = 0}, true, PV_DOM_INT);
        else
            propose(&out[1], broadcast_partner(gen, a, hints[1]), pv_rng_chance(gen->rng, 0.4),
                    div ? PV_DOM_POSITIVE : PV_DOM_ANY);
    }
    if (!a)
        propose(&out[0], broadcast_partner(gen, b, hints[0]), pv_rng_chance(gen->rng, 0.4),
                PV_DOM_ANY);
    return true;
}

/* ---- ops ---- */

/* The output type of a Conv-like node: [N, M, (D + pads - dilation * (k - 1) - 1) / stride + 1...]. */
static ir_type conv_output(const ir_node *n, const ir_type *x, const ir_type *w)
{
    const int64_t *pads, *strides, *dilations;
    int spatial = x->rank - 2;
    uint32_t np = ir_get_ints(n, "pads", &pads), ns = ir_get_ints(n, "strides", &strides);
    uint32_t nd = ir_get_ints(n, "dilations", &dilations);
    ir_type y = {.dtype = x->dtype, .rank = x->rank, .dims = {x->dims[0], w->dims[0]}};
    for (int i = 0; i < spatial; i++) {
        int64_t pad = np == (uint32_t)(2 * spatial) ? pads[i] + pads[spatial + i] : 0;
        int64_t stride = ns == (uint32_t)spatial ? strides[i] : 1;
        int64_t dilation = nd == (uint32_t)spatial ? dilations[i] : 1;
        y.dims[2 + i] = (x->dims[2 + i] + pad - dilation * (w->dims[2 + i] - 1) - 1) / stride + 1;
    }
    return y;
}

/* A conv weight [m, cin, k...] of x's rank with k 3 (with probability p3) or 1, proposed for slot
 * i; when the pattern left the pads free, they keep the spatial size (k / 2 each side). */
static void propose_window_weight(pv_gen *gen, ir_node *n, const ir_type *x, pv_operand *o,
                                  int64_t m, int64_t cin, double p3)
{
    int spatial = x->rank - 2;
    int64_t k = pv_rng_chance(gen->rng, p3) ? 3 : 1;
    ir_type w = {.dtype = x->dtype, .rank = x->rank, .dims = {m, cin}};
    for (int i = 0; i < spatial; i++)
        w.dims[2 + i] = k;
    propose(o, w, true, PV_DOM_ANY);
    if (free_attr(n, "pads")) {
        int64_t pads[2 * IR_MAX_RANK];
        for (int i = 0; i < 2 * spatial; i++)
            pads[i] = k / 2;
        ir_set_attr_ints(gen->g, n, "pads", pads, (uint32_t)(2 * spatial));
    }
}

/* Conv(X[N,C,D...], W[M,C/group,k...], B[M]?) with k 1 or 3 (padded to keep the size), strides 1
 * or 2, and sometimes a depthwise group; FusedConvAct the same, with a residual of the output's
 * shape and sometimes an activation. */
static bool propose_conv(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 4, 4);
    if (!x || x->rank < 3)
        return false;
    int spatial = x->rank - 2;
    int64_t c = x->dims[1];
    if (free_attr(n, "group"))
        ir_set_attr_int(gen->g, n, "group", pv_rng_chance(gen->rng, 0.25) ? c : 1);
    int64_t group = ir_get_int(n, "group");
    if (group <= 0 || c % group)
        return false;
    if (open_slot(n, out, 1))
        propose_window_weight(gen, n, x, &out[1], group * pool_dim(gen), c / group, 0.5);
    if (free_attr(n, "strides") && pv_rng_chance(gen->rng, 0.3)) {
        int64_t strides[IR_MAX_RANK];
        for (int i = 0; i < spatial; i++)
            strides[i] = 2;
        ir_set_attr_ints(gen->g, n, "strides", strides, (uint32_t)spatial);
    }
    const ir_type *w = slot_type(n, out, 1);
    if (w && w->rank >= 1 && open_slot(n, out, 2))
        propose(&out[2], vector_type(x->dtype, w->dims[0]), true, PV_DOM_ANY);
    if (w && w->rank == x->rank && open_slot(n, out, 3)) /* FusedConvAct's residual */
        propose(&out[3], conv_output(n, x, w), false, PV_DOM_ANY);
    if (free_attr(n, "act") && pv_rng_chance(gen->rng, 0.5))
        ir_set_attr_string(gen->g, n, "act", pv_rng_chance(gen->rng, 0.5) ? "Relu" : "Sigmoid");
    return true;
}

/* SeparableConv(X[N,C,D...], W_dw[C*mult,1,k...], W_pw[M,C*mult,1...], B_dw[C*mult]?, B_pw[M]?):
 * the depthwise conv's group is C, its kernel 1 or 3 (padded to keep the size), mult 1 or 2;
 * sometimes an activation between the convs and one after. */
static bool propose_separable(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 3, 4);
    if (!x || x->rank < 3)
        return false;
    int spatial = x->rank - 2;
    int64_t c = x->dims[1];
    if (free_attr(n, "group"))
        ir_set_attr_int(gen->g, n, "group", c);
    if (open_slot(n, out, 1)) /* depthwise: one input channel per group, multiplier 1 or 2 */
        propose_window_weight(gen, n, x, &out[1], c * (pv_rng_chance(gen->rng, 0.3) ? 2 : 1), 1,
                              0.7);
    const ir_type *wd = slot_type(n, out, 1);
    if (!wd || wd->rank != x->rank)
        return false;
    if (open_slot(n, out, 2)) {
        ir_type w = {.dtype = x->dtype, .rank = x->rank, .dims = {pool_dim(gen), wd->dims[0]}};
        for (int i = 0; i < spatial; i++)
            w.dims[2 + i] = 1;
        propose(&out[2], w, true, PV_DOM_ANY);
    }
    const ir_type *wp = slot_type(n, out, 2);
    if (open_slot(n, out, 3))
        propose(&out[3], vector_type(x->dtype, wd->dims[0]), true, PV_DOM_ANY);
    if (wp && wp->rank >= 1 && open_slot(n, out, 4))
        propose(&out[4], vector_type(x->dtype, wp->dims[0]), true, PV_DOM_ANY);
    if (free_attr(n, "act") && pv_rng_chance(gen->rng, 0.5))
        ir_set_attr_string(gen->g, n, "act", pv_rng_chance(gen->rng, 0.5) ? "Relu" : "Silu");
    if (free_attr(n, "out_act") && pv_rng_chance(gen->rng, 0.3))
        ir_set_attr_string(gen->g, n, "out_act", "Relu");
    return true;
}

/* BatchNormalization(X[N,C,...], scale, B, mean, var: [C]); var positive. */
static bool propose_batchnorm(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 2, 4);
    if (!x || x->rank < 2)
        return false;
    for (uint32_t i = 1; i < n->ninputs; i++)
        if (open_slot(n, out, i))
            propose(&out[i], vector_type(x->dtype, x->dims[1]), true,
                    i == 4 ? PV_DOM_POSITIVE : PV_DOM_ANY);
    return true;
}

/* Normalizations over the last axis: X (and, for the Add forms, a second X), then [last] vectors. */
static bool propose_norm(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out, uint32_t ndata)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 2, 3);
    if (!x || x->rank < 1)
        return false;
    for (uint32_t i = 1; i < n->ninputs; i++)
        if (open_slot(n, out, i))
            propose(&out[i], i < ndata ? *x : vector_type(x->dtype, x->dims[x->rank - 1]),
                    i >= ndata, PV_DOM_ANY);
    return true;
}

/* MatMul(A[..., M, K], B[K, N] or [..., K, N]). */
static bool propose_matmul(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                           pv_operand *out)
{
    const ir_type *a = slot_type(n, out, 0), *b = slot_type(n, out, 1);
    if (!a && !b)
        a = primary(gen, n, hints, out, 0, 2, 3);
    if (a && !b) {
        if (a->rank < 1)
            return false;
        int rank = a->rank >= 3 && pv_rng_chance(gen->rng, 0.5) ? a->rank : 2;
        ir_type w = {.dtype = a->dtype, .rank = (int8_t)rank};
        memcpy(w.dims, a->dims, (size_t)(rank - 2) * sizeof *w.dims);
        w.dims[rank - 2] = a->dims[a->rank - 1];
        w.dims[rank - 1] = pool_dim(gen);
        propose(&out[1], w, rank == 2 && pv_rng_chance(gen->rng, 0.6), PV_DOM_ANY);
    } else if (!a) {
        if (b->rank < 2)
            return false;
        int rank = b->rank > 2 ? b->rank : hint_rank(hints, 0, 2, 3, gen);
        ir_type x = {.dtype = b->dtype, .rank = (int8_t)rank};
        for (int i = 0; i < rank - 2; i++)
            x.dims[i] = b->rank > 2 ? b->dims[i] : pool_dim(gen);
        x.dims[rank - 2] = pool_dim(gen);
        x.dims[rank - 1] = b->dims[b->rank - 2];
        propose(&out[0], x, false, PV_DOM_ANY);
    }
    return true;
}

/* Gemm(A[M, K], B[K, N], C?) {transA, transB, alpha, beta}: the transposes drawn where the
 * pattern leaves them free (the classic exporter writes nn.Linear as transB = 1), alpha and beta
 * 1 or not, C mostly a vector of N (an epilogue's bias), else [M, N], [1] or a scalar. */
static bool propose_gemm(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out)
{
    static const char *const trans[] = {"transA", "transB"};
    static const char *const scales[] = {"alpha", "beta"};
    for (int i = 0; i < 2; i++) {
        if (free_attr(n, trans[i]))
            ir_set_attr_int(gen->g, n, trans[i], pv_rng_chance(gen->rng, i ? 0.6 : 0.2));
        if (free_attr(n, scales[i]) && pv_rng_chance(gen->rng, 0.2))
            ir_set_attr_float(gen->g, n, scales[i], i ? 2.0 : 0.5);
    }
    const ir_type *a = primary(gen, n, hints, out, 0, 2, 2);
    if (!a || a->rank != 2)
        return false;
    bool ta = ir_get_int(n, "transA") != 0, tb = ir_get_int(n, "transB") != 0;
    int64_t m = a->dims[ta], k = a->dims[!ta];
    if (open_slot(n, out, 1)) {
        int64_t nn = pool_dim(gen);
        ir_type b = {.dtype = a->dtype, .rank = 2, .dims = {tb ? nn : k, tb ? k : nn}};
        propose(&out[1], b, true, PV_DOM_ANY);
    }
    const ir_type *b = slot_type(n, out, 1);
    if (!b || b->rank != 2)
        return false;
    int64_t cols = b->dims[!tb];
    if (open_slot(n, out, 2)) {
        uint32_t pick = pv_rng_below(gen->rng, 10);
        ir_type c = pick < 7   ? vector_type(a->dtype, cols)
                    : pick < 8 ? (ir_type){.dtype = a->dtype, .rank = 2, .dims = {m, cols}}
                    : pick < 9 ? vector_type(a->dtype, 1)
                               : (ir_type){.dtype = a->dtype, .rank = 0};
        propose(&out[2], c, true, PV_DOM_ANY);
    }
    return true;
}

/* GemmEpilogue(A[..., M, K], B[K, N], bias[N]?, residual[..., M, N]?). */
static bool propose_gemm_epilogue(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                                  pv_operand *out)
{
    const ir_type *a = primary(gen, n, hints, out, 0, 2, 3);
    if (!a || a->rank < 2)
        return false;
    if (open_slot(n, out, 1))
        propose(
            &out[1],
            (ir_type){.dtype = a->dtype, .rank = 2, .dims = {a->dims[a->rank - 1], pool_dim(gen)}},
            true, PV_DOM_ANY);
    const ir_type *b = slot_type(n, out, 1);
    if (!b || b->rank != 2)
        return false;
    if (open_slot(n, out, 2))
        propose(&out[2], vector_type(a->dtype, b->dims[1]), true, PV_DOM_ANY);
    if (open_slot(n, out, 3)) {
        ir_type r = *a;
        r.dims[r.rank - 1] = b->dims[1];
        propose(&out[3], r, false, PV_DOM_ANY);
    }
    return true;
}

/* ReduceX(data, axes?): axes as an input (one axis) or an attribute; keepdims either way. */
static bool propose_reduce(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                           pv_operand *out)
{
    /* the axes and keepdims a pattern leaves free are enumerated: a rule that forgot to pin them
     * meets every axis and keepdims = 0 within a few instances. keepdims = 0 is on two turns of
     * three, and then new data is mostly square: only there does the statistic broadcast back to
     * the data's shape, so that a rule wrong for it fires at all. */
    bool drop = free_attr(n, "keepdims") && pv_cycle(gen, SALT_KEEPDIMS, 3) != 1;
    bool was_open = open_slot(n, out, 0);
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x || x->rank < 1)
        return pv_why(gen, "%s: operand 0: no data of rank 1 or more", ir_op_name(n->op));
    if (drop && was_open && x->rank >= 2 && pv_rng_chance(gen->rng, 0.7)) {
        int64_t d = x->dims[0] > 1             ? x->dims[0]
                    : x->dims[x->rank - 1] > 1 ? x->dims[x->rank - 1]
                                               : 3;
        for (int i = 0; i < out[0].type.rank; i++)
            out[0].type.dims[i] = d;
    }
    if (open_slot(n, out, 1)) {
        int64_t axis = cycled_axis(gen, x->rank, false);
        propose_ints(gen, &out[1], &axis, 1);
    } else if (n->ninputs == 1 && free_attr(n, "axes")) {
        int64_t axis = cycled_axis(gen, x->rank, true);
        if (axis != -2)
            ir_set_attr_ints(gen->g, n, "axes", &axis, 1);
    }
    if (free_attr(n, "keepdims"))
        ir_set_attr_int(gen->g, n, "keepdims", !drop);
    return true;
}

/* Transpose(X) {perm}: the identity or a random permutation of X's rank. */
static bool propose_transpose(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out)
{
    const int64_t *perm;
    uint32_t count = ir_get_ints(n, "perm", &perm);
    const ir_type *x = count ? primary(gen, n, hints, out, 0, (int)count, (int)count)
                             : primary(gen, n, hints, out, 0, 2, 4);
    if (!x || (count && count != (uint32_t)x->rank))
        return false;
    if (!count) {
        /* enumerated: the identity, the last two axes swapped (a K^T), the head split [0, 2, 1, 3],
         * the layout changes [0, 2, 3, 1] and [0, 3, 1, 2], the reversal, then random ones */
        int r = x->rank;
        int64_t p[IR_MAX_RANK];
        for (int i = 0; i < r; i++)
            p[i] = i;
        uint32_t kind = pv_cycle(gen, SALT_PERM, 7);
        if (kind == 1 && r >= 2)
            p[r - 1] = r - 2, p[r - 2] = r - 1;
        else if (kind == 2 && r >= 3)
            p[1] = 2, p[2] = 1;
        else if (kind == 3 && r >= 3)
            for (int i = 1; i < r; i++)
                p[i] = i == r - 1 ? 1 : i + 1;
        else if (kind == 4 && r >= 3)
            for (int i = 1; i < r; i++)
                p[i] = i == 1 ? r - 1 : i - 1;
        else if (kind == 5)
            for (int i = 0; i < r; i++)
                p[i] = r - 1 - i;
        for (int i = r - 1; kind == 6 && i > 0; i--) {
            uint32_t j = pv_rng_below(gen->rng, (uint32_t)i + 1);
            int64_t t = p[i];
            p[i] = p[j], p[j] = t;
        }
        ir_set_attr_ints(gen->g, n, "perm", p, (uint32_t)r);
    }
    return true;
}

/* Reshape(X, shape): the shape the guard asks of the result (`shape(@r) == shape(@x)`,
 * `shape(@r) == [...]`) most often; else X with two adjacent dims merged, X's element count as one
 * dim, [d0, -1], X's dims reversed, or the shape of an earlier value with as many elements. */
static bool propose_reshape(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                            pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 3);
    int64_t numel;
    if (!x || !ir_type_numel(x, &numel) || !open_slot(n, out, 1))
        return x != NULL;
    ir_type asked;
    if (pv_rng_chance(gen->rng, 0.8) && pv_solve_shape(gen, gen->node, &asked)) {
        propose_ints(gen, &out[1], asked.dims, asked.rank);
        return true;
    }
    ir_type c[16];
    uint32_t nc = 0;
    if (x->rank >= 2) {
        int at = (int)pv_rng_below(gen->rng, (uint32_t)x->rank - 1); /* dims at, at + 1 merge */
        ir_type merged = {.rank = (int8_t)(x->rank - 1)};
        for (int i = 0; i < x->rank - 1; i++)
            merged.dims[i] = i < at    ? x->dims[i]
                             : i == at ? x->dims[i] * x->dims[i + 1]
                                       : x->dims[i + 1];
        c[nc++] = merged, c[nc++] = merged;
        c[nc++] = (ir_type){.rank = 2, .dims = {x->dims[0], -1}};
    }
    if (x->rank == 3 && x->dims[2] % 2 == 0) { /* a head split [B, S, 2, N / 2], often */
        ir_type split = {.rank = 4, .dims = {x->dims[0], x->dims[1], 2, x->dims[2] / 2}};
        c[nc++] = split, c[nc++] = split, c[nc++] = split, c[nc++] = split;
    }
    c[nc++] = (ir_type){.rank = 1, .dims = {numel}};
    ir_type rev = {.rank = x->rank};
    for (int i = 0; i < x->rank; i++)
        rev.dims[i] = x->dims[x->rank - 1 - i];
    c[nc++] = rev;
    for (size_t i = 0; i < gen->g->values.len && nc + 2 <= FR_COUNT_OF(c); i++) {
        const ir_value *v = gen->g->values.items[i];
        int64_t m;
        if (v->kind != IR_VALUE_CONST && ir_type_numel(v->type, &m) && m == numel &&
            v->type->rank > 0)
            c[nc++] = *v->type, c[nc++] = *v->type;
    }
    const ir_type *t = &c[pv_rng_below(gen->rng, nc)];
    propose_ints(gen, &out[1], t->dims, t->rank);
    return true;
}

/* Unsqueeze(X, axes): one new axis anywhere in the result. */
static bool propose_unsqueeze(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x)
        return false;
    if (open_slot(n, out, 1)) {
        int64_t axis = random_axis(gen, x->rank + 1);
        propose_ints(gen, &out[1], &axis, 1);
    } else if (n->ninputs == 1 && free_attr(n, "axes")) {
        int64_t axis = random_axis(gen, x->rank + 1);
        ir_set_attr_ints(gen->g, n, "axes", &axis, 1);
    }
    return true;
}

/* Expand(X, shape): X's dims of size 1 widened (each to a pool dim, or kept). */
static bool propose_expand(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                           pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x || !open_slot(n, out, 1))
        return x != NULL;
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        dims[i] = x->dims[i] == 1 && pv_rng_chance(gen->rng, 0.8) ? pool_dim(gen) : x->dims[i];
    propose_ints(gen, &out[1], dims, x->rank);
    return true;
}

/* Pad(X, pads, value?): zeros on the batch and channel axes, 0..2 on the others (the spatial
 * padding a Conv after it can take over). */
static bool propose_pad(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints, pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 3, 4);
    if (!x)
        return false;
    if (open_slot(n, out, 1)) {
        int64_t pads[2 * IR_MAX_RANK] = {0};
        for (int i = 2; i < x->rank; i++) {
            pads[i] = pv_rng_below(gen->rng, 3);
            pads[x->rank + i] = pv_rng_below(gen->rng, 3);
        }
        propose_ints(gen, &out[1], pads, 2 * x->rank);
    }
    if (open_slot(n, out, 2)) {
        propose(&out[2], (ir_type){.dtype = x->dtype}, true, PV_DOM_ANY);
        out[2].values = ar_alloc(gen->g->arena, sizeof(double));
        out[2].values[0] = 0;
    }
    return true;
}

/* Concat{axis}(X0, X1, ...): the operands differ only along the axis. */
static bool propose_concat(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                           pv_operand *out)
{
    const ir_type *first = NULL;
    for (uint32_t i = 0; i < n->ninputs && !first; i++)
        first = slot_type(n, out, i);
    if (!first)
        first = primary(gen, n, hints, out, 0, 1, 4);
    if (first->rank < 1)
        return false;
    if (free_attr(n, "axis"))
        ir_set_attr_int(gen->g, n, "axis",
                        pv_rng_chance(gen->rng, 0.5) ? -1 : random_axis(gen, first->rank));
    int64_t axis = normal_axis(ir_get_int(n, "axis"), first->rank);
    if (axis < 0 || axis >= first->rank)
        return false;
    ir_type base = *first;
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (open_slot(n, out, i)) {
            ir_type t = base;
            t.dims[axis] = pool_dim(gen);
            propose(&out[i], t, false, PV_DOM_ANY);
        }
    return true;
}

/* Split{axis}(X, split?): X's dim along the axis holds one element or more per output, and the
 * sizes (where the pattern gives the input) cut it into a random part of one or more for each. */
static bool propose_split(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                          pv_operand *out)
{
    bool x_open = open_slot(n, out, 0);
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x || x->rank < 1)
        return false;
    if (free_attr(n, "axis"))
        ir_set_attr_int(gen->g, n, "axis",
                        pv_rng_chance(gen->rng, 0.5) ? -1 : random_axis(gen, x->rank));
    int64_t axis = normal_axis(ir_get_int(n, "axis"), x->rank), parts = n->noutputs;
    if (axis < 0 || axis >= x->rank)
        return false;
    if (x_open && out[0].type.dims[axis] < parts)
        out[0].type.dims[axis] = parts * (1 + (int64_t)pv_rng_below(gen->rng, 4));
    int64_t d = x->dims[axis];
    if (d < parts)
        return false;
    if (n->ninputs > 1 && open_slot(n, out, 1)) {
        /* equal parts on every other turn, where they divide (torch's chunk, rotate-half) */
        bool equal = d % parts == 0 && pv_rng_chance(gen->rng, 0.5);
        int64_t *sizes = ar_alloc(gen->g->arena, (size_t)parts * sizeof *sizes);
        for (int64_t i = 0; i < parts; i++)
            sizes[i] = equal ? d / parts : 1;
        for (int64_t rest = equal ? 0 : d - parts; rest > 0; rest--)
            sizes[pv_rng_below(gen->rng, (uint32_t)parts)]++;
        propose_ints(gen, &out[1], sizes, parts);
    }
    return true;
}

/* Slice(X, starts, ends, axes?, steps?): one axis, a non-empty range of it, step 1. */
static bool propose_slice(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                          pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x || x->rank < 1)
        return false;
    int64_t axis = n->ninputs > 3 ? random_axis(gen, x->rank) : 0;
    int64_t d = x->dims[normal_axis(axis, x->rank)];
    if (d < 1)
        return false;
    int64_t start = pv_rng_below(gen->rng, (uint32_t)d);
    int64_t end = start + 1 + pv_rng_below(gen->rng, (uint32_t)(d - start));
    int64_t one = 1;
    if (open_slot(n, out, 1))
        propose_ints(gen, &out[1], &start, 1);
    if (open_slot(n, out, 2))
        propose_ints(gen, &out[2], &end, 1);
    if (open_slot(n, out, 3))
        propose_ints(gen, &out[3], &axis, 1);
    if (open_slot(n, out, 4))
        propose_ints(gen, &out[4], &one, 1);
    return true;
}

/* The dtype the pattern gives slot i's leaf, else `dflt`. */
static ir_dtype hint_dtype(const pv_node_facts *const *hints, uint32_t i, ir_dtype dflt)
{
    return hints[i] && hints[i]->dtype != IR_DTYPE_UNKNOWN ? hints[i]->dtype : dflt;
}

/* DequantizeLinear(X:i8, scale, zero_point?) and QuantizeLinear(X:f32, scale, zero_point?): the
 * scale per tensor or per channel along `axis`, the zero point its shape in the quantized dtype. */
static bool propose_quant(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                          pv_operand *out)
{
    bool dq = n->op == IR_OP_DequantizeLinear;
    /* per-channel along rows (axis 0) on every other turn when the pattern leaves the axis free;
     * its data then mostly square, so that a per-row scale has a per-column scale's length */
    bool rows = free_attr(n, "axis") && pv_cycle(gen, SALT_QAXIS, 2) == 1;
    if (open_slot(n, out, 0)) {
        out[0].type = pv_random_type(gen, hint_rank(hints, 0, 1, 3, gen));
        out[0].type.dtype = dq ? hint_dtype(hints, 0, IR_I8) : IR_F32;
        for (int i = 1; rows && i < out[0].type.rank && pv_rng_chance(gen->rng, 0.7); i++)
            out[0].type.dims[i] = out[0].type.dims[0];
    }
    const ir_type *x = slot_type(n, out, 0);
    if (!x)
        return pv_why(gen, "%s: operand 0: no type", ir_op_name(n->op));
    ir_dtype qt = dq ? x->dtype : hint_dtype(hints, 2, IR_I8);
    if (rows && x->rank >= 2)
        ir_set_attr_int(gen->g, n, "axis", 0);
    if (open_slot(n, out, 1)) {
        int64_t axis = normal_axis(ir_get_int(n, "axis"), x->rank);
        bool per_channel = axis >= 0 && axis < x->rank && !(hints[1] && hints[1]->one_element) &&
                           pv_rng_chance(gen->rng, 0.4);
        /* a quantizing scale near 1 keeps float data of about [-10, 10] unsaturated and far
         * from rounding ties (within float rounding of one, the two sides may round apart) */
        propose(&out[1],
                per_channel ? vector_type(IR_F32, x->dims[axis]) : (ir_type){.dtype = IR_F32}, true,
                dq ? PV_DOM_SCALE : PV_DOM_POSITIVE);
    }
    const ir_type *s = slot_type(n, out, 1);
    if (s && open_slot(n, out, 2)) {
        ir_type z = *s;
        z.dtype = qt;
        propose(&out[2], z, true, PV_DOM_INT);
    }
    return true;
}

/* DynamicQuantizeLinear(X f32), and MatMulInteger(A, B [K, N], a_zero_point?, b_zero_point?):
 * A u8 (DynamicQuantizeLinear's) unless the pattern says, B u8 or i8 on alternate draws, full-range
 * data and zero points of their operand's dtype, per tensor. */
static bool propose_integer(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                            pv_operand *out)
{
    if (open_slot(n, out, 0)) {
        out[0].type = pv_random_type(gen, hint_rank(hints, 0, 2, 3, gen));
        out[0].type.dtype = n->op == IR_OP_DynamicQuantizeLinear ? IR_F32 : hint_dtype(hints, 0, IR_U8);
    }
    if (n->op == IR_OP_DynamicQuantizeLinear)
        return true;
    const ir_type *a = slot_type(n, out, 0);
    if (!a || a->rank < 1)
        return pv_why(gen, "MatMulInteger: operand 0: no type of rank 1 or more");
    if (open_slot(n, out, 1)) {
        ir_dtype dt = pv_rng_chance(gen->rng, 0.5) ? IR_U8 : IR_I8;
        ir_type w = {.dtype = hint_dtype(hints, 1, dt), .rank = 2};
        w.dims[0] = a->dims[a->rank - 1];
        w.dims[1] = pool_dim(gen);
        propose(&out[1], w, pv_rng_chance(gen->rng, 0.6), PV_DOM_ANY);
    }
    const ir_type *b = slot_type(n, out, 1);
    if (open_slot(n, out, 2))
        propose(&out[2], (ir_type){.dtype = a->dtype}, true, PV_DOM_ANY);
    if (b && open_slot(n, out, 3))
        propose(&out[3], (ir_type){.dtype = b->dtype}, true, PV_DOM_ANY);
    return true;
}

/* Unary elementwise ops and their parameters: Clip's bounds, LeakyRelu's slope, Gelu's form. */
static bool propose_elementwise(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                                pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x)
        return false;
    if (n->op == IR_OP_Clip) {
        double bound[2] = {-0.1 * (1 + pv_rng_below(gen->rng, 9)),
                           0.1 * (1 + pv_rng_below(gen->rng, 9))};
        for (uint32_t i = 1; i < 3; i++)
            if (open_slot(n, out, i)) {
                propose(&out[i], (ir_type){.dtype = x->dtype}, true, PV_DOM_ANY);
                out[i].values = ar_alloc(gen->g->arena, sizeof(double));
                out[i].values[0] = bound[i - 1];
            }
    }
    for (uint32_t i = 1; i < n->ninputs; i++)
        if (open_slot(n, out, i)) /* Dropout's ratio, ...: a scalar */
            propose(&out[i], (ir_type){.dtype = x->dtype}, true, PV_DOM_POSITIVE);
    /* the parameters a pattern leaves free are enumerated, the op's default among them */
    static const double leaky[] = {0, 0.1, 0.2, 0.3}, hs_alpha[] = {0, 0.16666667, 0.5},
                        hs_beta[] = {0, 0.5, 0.3};
    uint32_t k;
    if (free_attr(n, "alpha") && n->op == IR_OP_LeakyRelu &&
        (k = pv_cycle(gen, SALT_ALPHA, FR_COUNT_OF(leaky))))
        ir_set_attr_float(gen->g, n, "alpha", leaky[k]);
    if (free_attr(n, "alpha") && n->op == IR_OP_HardSigmoid &&
        (k = pv_cycle(gen, SALT_ALPHA, FR_COUNT_OF(hs_alpha))))
        ir_set_attr_float(gen->g, n, "alpha", hs_alpha[k]);
    if (free_attr(n, "beta") && n->op == IR_OP_HardSigmoid &&
        (k = pv_cycle(gen, SALT_BETA, FR_COUNT_OF(hs_beta))))
        ir_set_attr_float(gen->g, n, "beta", hs_beta[k]);
    if (free_attr(n, "approximate") && pv_cycle(gen, SALT_APPROX, 2))
        ir_set_attr_string(gen->g, n, "approximate", "tanh");
    return true;
}

/* Softmax{axis}(X). */
static bool propose_softmax(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                            pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x || x->rank < 1)
        return false;
    if (free_attr(n, "axis")) { /* enumerated: the default, -1, then each axis by number */
        int64_t axis = cycled_axis(gen, x->rank, true);
        if (axis != -2)
            ir_set_attr_int(gen->g, n, "axis", axis);
    }
    return true;
}

/* Attention(Q, K, V, mask?, cos?, sin?): in BHSD, Q [B, Hq, S, D], K [B, Hkv, T, D] with Hq a
 * multiple of Hkv, V [B, Hkv, T, Dv], the mask [S, T] or [B, 1, S, T], the tables [S, D]. BSHD
 * swaps axes 1 and 2 of each. Built from whichever of Q and K exists first. */
static bool propose_attention(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out)
{
    const char *layout = ir_op_attr_schema(n->op, "layout") ? ir_get_string(n, "layout") : NULL;
    bool bshd = layout && strcmp(layout, "BSHD") == 0;
    int h = bshd ? 2 : 1, s = bshd ? 1 : 2; /* where heads and positions are */
    const ir_type *q = slot_type(n, out, 0), *k = slot_type(n, out, 1);
    if (!q && !k)
        q = primary(gen, n, hints, out, 0, 4, 4);
    if ((q && q->rank != 4) || (k && k->rank != 4))
        return false;
    if (!k) {
        ir_type t = *q;
        if (pv_rng_chance(gen->rng, 0.3)) /* grouped-query: fewer key/value heads */
            t.dims[h] = 1;
        if (pv_rng_chance(gen->rng, 0.3))
            t.dims[s] = pool_dim(gen);
        propose(&out[1], t, false, PV_DOM_ANY);
        k = &out[1].type;
    }
    if (!q) {
        ir_type t = *k;
        t.dims[h] = k->dims[h] * (pv_rng_chance(gen->rng, 0.7) ? 1 : 2);
        propose(&out[0], t, false, PV_DOM_ANY);
        q = &out[0].type;
    }
    if (open_slot(n, out, 2))
        propose(&out[2], *k, false, PV_DOM_ANY);
    if (open_slot(n, out, 3)) {
        ir_type square = {.dtype = q->dtype, .rank = 2, .dims = {q->dims[s], k->dims[s]}};
        ir_type padding = {
            .dtype = q->dtype, .rank = 4, .dims = {q->dims[0], 1, q->dims[s], k->dims[s]}};
        propose(&out[3], pv_rng_chance(gen->rng, 0.5) ? square : padding, false, PV_DOM_ANY);
    }
    ir_type table = {.dtype = q->dtype, .rank = 2, .dims = {q->dims[s], q->dims[3]}};
    for (uint32_t i = 4; i < 6; i++)
        if (open_slot(n, out, i))
            propose(&out[i], table, false, PV_DOM_ANY);
    return true;
}

/* RoPE(X [..., S, D], cos, sin [S, D] or [S, D/2]) with D even; X from the tables when they exist
 * first (a second RoPE sharing them). */
static bool propose_rope(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out)
{
    const ir_type *x = slot_type(n, out, 0), *table = slot_type(n, out, 1);
    if (!table)
        table = slot_type(n, out, 2);
    if (!x && table && table->rank >= 2) {
        ir_type t = pv_random_type(gen, hint_rank(hints, 0, 3, 4, gen));
        int64_t width = table->dims[table->rank - 1];
        t.dims[t.rank - 2] = table->dims[table->rank - 2];
        t.dims[t.rank - 1] = pv_rng_chance(gen->rng, 0.7) ? width : 2 * width;
        propose(&out[0], t, false, PV_DOM_ANY);
        x = &out[0].type;
    }
    if (!x) {
        out[0].type = pv_random_type(gen, hint_rank(hints, 0, 3, 4, gen));
        out[0].type.dims[out[0].type.rank - 1] = 2 * pool_dim(gen);
        x = &out[0].type;
    }
    if (x->rank < 2)
        return false;
    int64_t d = x->dims[x->rank - 1];
    bool half = d % 2 == 0 && pv_rng_chance(gen->rng, 0.3);
    ir_type t = {.dtype = x->dtype, .rank = 2, .dims = {x->dims[x->rank - 2], half ? d / 2 : d}};
    if (table)
        t = *table;
    for (uint32_t i = 1; i < 3; i++)
        if (open_slot(n, out, i))
            propose(&out[i], t, false, PV_DOM_ANY);
    return true;
}

/* The 16-bit float type of this candidate (f16 mostly, else bf16), drawn once. */
static ir_dtype half_type(pv_gen *gen)
{
    if (gen->half == IR_DTYPE_UNKNOWN)
        gen->half = pv_rng_chance(gen->rng, 0.7) ? IR_F16 : IR_BF16;
    return gen->half;
}

/* The ONNX TensorProto.DataType code of a dtype (Cast's `to`). */
static int64_t onnx_code(ir_dtype dt)
{
    switch (dt) {
    case IR_F16: return 10;
    case IR_BF16: return 16;
    case IR_I32: return 6;
    case IR_I64: return 7;
    case IR_I8: return 3;
    default: return 1;
    }
}

/* Cast(X) {to}. Each candidate is of one kind, drawn once: mostly as mixed-precision models use
 * Casts (a 16-bit value widened to f32, an f32 value narrowed back to 16 bits), sometimes as a
 * wrong rule might meet them (f32 narrowed to a 16-bit type and widened again; f32 to i32 and
 * back). A Cast of a Cast mostly goes back to the first one's input type: the round trips
 * `Cast(Cast(@x)) => @x` claims are no-ops, exact (f16 -> f32 -> f16) or not (f32 -> f16 -> f32,
 * f32 -> i32 -> f32). */
static bool propose_cast(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out)
{
    if (gen->casts == PV_CASTS_UNDRAWN) {
        double u = pv_rng_uniform(gen->rng, 0, 1);
        gen->casts = u < 0.6 ? PV_CASTS_MIXED : u < 0.85 ? PV_CASTS_NARROW : PV_CASTS_INTEGER;
    }
    if (open_slot(n, out, 0)) {
        primary(gen, n, hints, out, 0, 1, 3);
        out[0].type.dtype =
            hint_dtype(hints, 0, gen->casts == PV_CASTS_MIXED ? half_type(gen) : IR_F32);
    }
    const ir_type *x = slot_type(n, out, 0);
    if (!x)
        return pv_why(gen, "Cast: operand 0: no type");
    if (free_attr(n, "to")) {
        const ir_node *inner = n->inputs[0] ? n->inputs[0]->producer : NULL;
        ir_dtype to;
        if (inner && inner->op == IR_OP_Cast && inner->inputs[0] && pv_rng_chance(gen->rng, 0.8))
            to = inner->inputs[0]->type->dtype; /* back where the first Cast started */
        else if (pv_rng_chance(gen->rng, 0.2))
            to = x->dtype; /* to its own type, as exporters also write (no_cast's instances) */
        else if (x->dtype != IR_F32)
            to = IR_F32;
        else
            to = gen->casts == PV_CASTS_INTEGER ? IR_I32 : half_type(gen);
        ir_set_attr_int(gen->g, n, "to", onnx_code(to));
    }
    return true;
}

/* Tile(X, repeats): repeats an i64 vector of X's rank, 1 on every axis but one (the heads' axis 1
 * of a rank-4 X, as grouped-query attention tiles K and V; else one enumerated), which repeats 2 or
 * 3 times. The factor follows the turn alone, so two Tiles of one candidate (K and V) agree. */
static bool propose_tile(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x || x->rank < 1)
        return pv_why(gen, "Tile: operand 0: not a tensor of rank 1 or more");
    if (open_slot(n, out, 1)) {
        int64_t reps[IR_MAX_RANK];
        for (int i = 0; i < x->rank; i++)
            reps[i] = 1;
        int axis = x->rank == 4 ? 1 : (int)((gen->turn / 2) % (uint32_t)x->rank);
        reps[axis] = 2 + gen->turn % 2;
        propose_ints(gen, &out[1], reps, x->rank);
    }
    return true;
}

/* Dropout(X, ratio?, training_mode?): the ratio an f32 scalar (0.1 or 0.5), training_mode a bool
 * scalar, false or true by turns. In training mode the executor drops elements by the seeded mask
 * of kernels/dropout_mask.h: a rule that removes the Dropout there gives other outputs. */
static bool propose_dropout(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                            pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 4);
    if (!x)
        return pv_why(gen, "Dropout: operand 0: no type");
    if (open_slot(n, out, 1)) {
        propose(&out[1], (ir_type){.dtype = IR_F32}, true, PV_DOM_POSITIVE);
        out[1].values = ar_alloc(gen->g->arena, sizeof(double));
        out[1].values[0] = pv_rng_chance(gen->rng, 0.5) ? 0.1 : 0.5;
    }
    if (open_slot(n, out, 2)) {
        propose(&out[2], (ir_type){.dtype = IR_BOOL}, true, PV_DOM_INT);
        out[2].values = ar_alloc(gen->g->arena, sizeof(double));
        out[2].values[0] = pv_cycle(gen, SALT_TRAINING, 2);
    }
    return true;
}

/* Where(condition, x, y): the condition bool (usually computed by the pattern: Greater(@x, 0)),
 * x and y float data of its shape or a broadcast partner of it, whichever is built first. */
static bool propose_where(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                          pv_operand *out)
{
    const ir_type *c = slot_type(n, out, 0), *data = slot_type(n, out, 1);
    if (!data)
        data = slot_type(n, out, 2);
    if (!c && !data)
        data = primary(gen, n, hints, out, 1, 1, 4);
    if (!data) {
        ir_type t = *c;
        t.dtype = IR_F32;
        propose(&out[1], t, false, PV_DOM_ANY);
        data = &out[1].type;
    }
    ir_type base = *data;
    for (uint32_t i = 1; i < 3; i++)
        if (open_slot(n, out, i))
            propose(&out[i], broadcast_partner(gen, &base, hints[i]), pv_rng_chance(gen->rng, 0.4),
                    PV_DOM_ANY);
    if (open_slot(n, out, 0)) {
        ir_type t = base;
        t.dtype = IR_BOOL;
        propose(&out[0], t, false, PV_DOM_ANY);
    }
    return true;
}

/* Not(X): bool data. */
static bool propose_not(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints, pv_operand *out)
{
    if (open_slot(n, out, 0)) {
        primary(gen, n, hints, out, 0, 1, 4);
        out[0].type.dtype = IR_BOOL;
    }
    return true;
}

/* MaxPool / AveragePool(X[N, C, D...]) {kernel_shape}: a window of 1 to 3 per spatial dim, no
 * larger than the dim, when the pattern does not give one. */
static bool propose_pool(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                         pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 3, 4);
    if (!x || x->rank < 3)
        return pv_why(gen, "%s: operand 0: rank %d; a pool needs [N, C, D...]", ir_op_name(n->op),
                      x ? x->rank : -1);
    if (free_attr(n, "kernel_shape")) {
        int64_t k[IR_MAX_RANK];
        int64_t size = 1 + pv_rng_below(gen->rng, 3);
        for (int i = 2; i < x->rank; i++)
            k[i - 2] = size < x->dims[i] ? size : x->dims[i];
        ir_set_attr_ints(gen->g, n, "kernel_shape", k, (uint32_t)(x->rank - 2));
    }
    return true;
}

/* Gather(data, indices) {axis}: i64 indices inside the gathered axis, a vector of 1 to 3 (or a
 * scalar). */
static bool propose_gather(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                           pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 1, 3);
    if (!x || x->rank < 1)
        return pv_why(gen, "Gather: operand 0: rank 0; nothing to gather from");
    int64_t axis = normal_axis(ir_get_int(n, "axis"), x->rank);
    if (axis < 0 || axis >= x->rank || x->dims[axis] < 1)
        return pv_why(gen, "Gather: axis %lld outside data of rank %d", (long long)axis, x->rank);
    if (open_slot(n, out, 1)) {
        int64_t idx[3] = {0, 0, 0};
        uint32_t count = 1 + pv_rng_below(gen->rng, 3);
        for (uint32_t i = 0; i < count; i++)
            idx[i] = pv_rng_below(gen->rng, (uint32_t)x->dims[axis]);
        propose_ints(gen, &out[1], idx, count);
        if (count == 1 && pv_rng_chance(gen->rng, 0.3))
            out[1].type.rank = 0;
    }
    return true;
}

/* ConstantOfShape(shape): an i64 vector of pool dims. */
static bool propose_constant_of_shape(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                                      pv_operand *out)
{
    (void)hints;
    if (open_slot(n, out, 0)) {
        ir_type t = pv_random_type(gen, 1 + (int)pv_rng_below(gen->rng, 3));
        propose_ints(gen, &out[0], t.dims, t.rank);
    }
    return true;
}

/* Range(start, limit, delta): scalars of one type (f32 or i64), 0 up to a pool dim by 1. */
static bool propose_range(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                          pv_operand *out)
{
    const ir_type *known = slot_type(n, out, 0);
    for (uint32_t i = 1; i < 3 && !known; i++)
        known = slot_type(n, out, i);
    ir_dtype dt = known ? known->dtype : hint_dtype(hints, 0, IR_F32);
    double v[3] = {0, (double)pool_dim(gen), 1};
    for (uint32_t i = 0; i < 3; i++)
        if (open_slot(n, out, i)) {
            propose(&out[i], (ir_type){.dtype = dt}, true, PV_DOM_INT);
            out[i].values = ar_alloc(gen->g->arena, sizeof(double));
            out[i].values[0] = v[i];
        }
    return true;
}

/* Any other op: the first operand is primary data, the others take its type. */
/* FusedQKV(X [.., C], W [C, Nq + Nk + Nv], bias?) {sizes}: X drawn [B, S, C], sizes even
 * (two heads' worth) with Nq = Nk (Q and K heads of one size), unless the pattern set them. */
static bool propose_fused_qkv(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                              pv_operand *out)
{
    const ir_type *x = primary(gen, n, hints, out, 0, 3, 3);
    if (!x || x->rank < 1)
        return false;
    const int64_t *set;
    int64_t *sizes = ar_alloc(gen->g->arena, 3 * sizeof *sizes), total = 0;
    uint32_t ns = ir_get_ints(n, "sizes", &set);
    if (ns != n->noutputs) {
        int64_t dq = 2 * pool_dim(gen), dv = pv_rng_chance(gen->rng, 0.7) ? dq : 2 * pool_dim(gen);
        sizes[0] = sizes[1] = dq, sizes[2] = dv;
        ns = n->noutputs < 3 ? n->noutputs : 3;
        ir_set_attr(gen->g, n,
                    &(ir_attr){.name = "sizes", .kind = IR_ATTR_INTS, .count = ns,
                               .v.ints = sizes});
        set = sizes;
    }
    for (uint32_t i = 0; i < ns; i++)
        total += set[i];
    if (open_slot(n, out, 1))
        propose(&out[1],
                (ir_type){.dtype = x->dtype, .rank = 2, .dims = {x->dims[x->rank - 1], total}},
                pv_rng_chance(gen->rng, 0.6), PV_DOM_ANY);
    if (open_slot(n, out, 2))
        propose(&out[2], (ir_type){.dtype = x->dtype, .rank = 1, .dims = {total}},
                pv_rng_chance(gen->rng, 0.6), PV_DOM_ANY);
    return true;
}

static bool propose_default(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints,
                            pv_operand *out)
{
    const ir_type *first = NULL;
    for (uint32_t i = 0; i < n->ninputs && !first; i++)
        first = slot_type(n, out, i);
    if (!first)
        first = primary(gen, n, hints, out, 0, 1, 4);
    ir_type t = *first;
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (open_slot(n, out, i))
            propose(&out[i], t, false, PV_DOM_ANY);
    return true;
}

bool pv_op_propose(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints, pv_operand *out)
{
    switch (n->op) {
    case IR_OP_Conv:
    case IR_OP_FusedConvAct: return propose_conv(gen, n, hints, out);
    case IR_OP_SeparableConv: return propose_separable(gen, n, hints, out);
    case IR_OP_Attention: return propose_attention(gen, n, hints, out);
    case IR_OP_RoPE: return propose_rope(gen, n, hints, out);
    case IR_OP_Unsqueeze: return propose_unsqueeze(gen, n, hints, out);
    case IR_OP_Expand: return propose_expand(gen, n, hints, out);
    case IR_OP_Pad: return propose_pad(gen, n, hints, out);
    case IR_OP_Cast: return propose_cast(gen, n, hints, out);
    case IR_OP_Tile: return propose_tile(gen, n, hints, out);
    case IR_OP_Dropout: return propose_dropout(gen, n, hints, out);
    case IR_OP_Where: return propose_where(gen, n, hints, out);
    case IR_OP_Not: return propose_not(gen, n, hints, out);
    case IR_OP_MaxPool:
    case IR_OP_AveragePool: return propose_pool(gen, n, hints, out);
    case IR_OP_Gather: return propose_gather(gen, n, hints, out);
    case IR_OP_ConstantOfShape: return propose_constant_of_shape(gen, n, hints, out);
    case IR_OP_Range: return propose_range(gen, n, hints, out);
    case IR_OP_BatchNormalization: return propose_batchnorm(gen, n, hints, out);
    case IR_OP_LayerNormalization:
    case IR_OP_RMSNorm: return propose_norm(gen, n, hints, out, 1);
    case IR_OP_AddLayerNorm:
    case IR_OP_AddRMSNorm: return propose_norm(gen, n, hints, out, 2);
    case IR_OP_MatMul: return propose_matmul(gen, n, hints, out);
    case IR_OP_Gemm: return propose_gemm(gen, n, hints, out);
    case IR_OP_GemmEpilogue: return propose_gemm_epilogue(gen, n, hints, out);
    case IR_OP_Transpose: return propose_transpose(gen, n, hints, out);
    case IR_OP_Reshape: return propose_reshape(gen, n, hints, out);
    case IR_OP_Concat: return propose_concat(gen, n, hints, out);
    case IR_OP_Slice: return propose_slice(gen, n, hints, out);
    case IR_OP_Split: return propose_split(gen, n, hints, out);
    case IR_OP_DequantizeLinear:
    case IR_OP_QuantizeLinear: return propose_quant(gen, n, hints, out);
    case IR_OP_Softmax: return propose_softmax(gen, n, hints, out);
    case IR_OP_DynamicQuantizeLinear:
    case IR_OP_MatMulInteger: return propose_integer(gen, n, hints, out);
    case IR_OP_FusedQKV: return propose_fused_qkv(gen, n, hints, out);
    default: break;
    }
    const ir_op_info *info = ir_op_info_get(n->op);
    /* an ElementwiseChain of two operands broadcasts them as a binary op does (BiasGelu's bias) */
    if ((info->cls == IR_CLASS_BROADCAST || n->op == IR_OP_ElementwiseChain) && n->ninputs == 2)
        return propose_binary(gen, n, hints, out);
    if (info->cls == IR_CLASS_REDUCTION)
        return propose_reduce(gen, n, hints, out);
    if (info->cls == IR_CLASS_ELEMENTWISE)
        return propose_elementwise(gen, n, hints, out);
    return propose_default(gen, n, hints, out);
}
