/* Lowering a rule into check sequences, one per combination of its alternatives.
 *
 * Choices are made in pattern pre-order (roots in order, operands in order): an optional op is
 * present (digit 0) or absent (1), then a commutative op is straight (0) or swapped (1). The
 * variants are enumerated like an odometer over those digits, so they come in key order.
 *
 * For one variant, positions are bound breadth first from each root, and checks are laid out in
 * this order (docs/matcher.md, "Order of checks"):
 *   1. root 0: per op node, its op (the root's is the switch), arity, and a load per operand;
 *   2. root 0: value predicates (const, dtype, layout, rank) per position;
 *   3. per further root: the join loops from the shared value down to the root, then 1 and 2;
 *   4. inline attributes; 5. repeated-capture equalities; 6. the guard; then accept. */
#include "matcher/internal.h"

#include "base/check.h"

#include <string.h>

/* ---- choosing a variant ------------------------------------------------------------------------ */

typedef struct {
    VEC(uint8_t) digits; /* the choices of the current variant, in the order they were made */
    size_t used;         /* digits consumed by the current walk */
    size_t fixed;        /* digits [0, fixed) are given; later ones start at 0 */
} odometer;

static unsigned choose(odometer *od)
{
    if (od->used < od->fixed)
        return od->digits.items[od->used++];
    if (od->used == od->digits.len)
        vec_push(&od->digits, 0);
    od->digits.items[od->used++] = 0;
    return 0;
}

/* Moves to the next variant: the last choice still at 0 becomes 1, later ones are dropped. */
static bool odometer_next(odometer *od)
{
    size_t i = od->used;
    while (i > 0 && od->digits.items[i - 1] == 1)
        i--;
    if (i == 0)
        return false;
    od->digits.items[i - 1] = 1;
    od->fixed = i;
    od->digits.len = i;
    od->used = 0;
    return true;
}

/* The state of lowering one variant. */
typedef struct {
    ar_arena *arena;
    const dsl_rule *rule;
    odometer od;
    uint8_t *visited, *present, *swapped; /* per pattern node */
    int32_t *reg_of;
    VEC(int32_t) key;
    VEC(uint32_t) join_slots;               /* where each joined root's digit goes in key */
    uint8_t *preds_done;                    /* per pattern node: its value predicates are laid out */
    VEC(mt_check) checks;
    VEC(mt_check) eqs;                      /* repeated captures: laid out after attributes */
    VEC(const dsl_pattern *) bound;         /* op and leaf nodes in the order they were bound */
    VEC(const dsl_pattern *) queue;
    uint32_t nregs, nloops;
    const char *problem;                    /* why this variant cannot be compiled */
} lowering;

/* Pre-order walk that makes the choices of one variant. */
static void choose_node(lowering *L, const dsl_pattern *p)
{
    if (L->visited[p->id])
        return;
    L->visited[p->id] = 1;
    if (p->kind != DSL_PAT_OP)
        return;
    L->present[p->id] = 1;
    if (p->optional) {
        unsigned d = choose(&L->od);
        vec_push(&L->key, (int32_t)d);
        if (d) {
            L->present[p->id] = 0;
            if (p->noperands)
                choose_node(L, p->operands[0]);
            return;
        }
    }
    if (p->commutative && p->noperands >= 1) {
        unsigned d = choose(&L->od);
        vec_push(&L->key, (int32_t)d);
        L->swapped[p->id] = (uint8_t)d;
    }
    for (uint32_t i = 0; i < p->noperands; i++)
        choose_node(L, p->operands[i]);
}

/* The input slot that operand i of p reads in this variant. */
static uint32_t slot_of(const lowering *L, const dsl_pattern *p, uint32_t i)
{
    return L->swapped[p->id] && i < 2 ? 1 - i : i;
}

/* What stands at a slot written as p: p itself, or for an absent optional op the node its
 * operand 0 stands for (NULL when it has none: the value is unconstrained). */
static const dsl_pattern *effective(const lowering *L, const dsl_pattern *p)
{
    while (p && p->kind == DSL_PAT_OP && !L->present[p->id])
        p = p->noperands ? p->operands[0] : NULL;
    return p;
}

/* ---- emitting checks --------------------------------------------------------------------------- */

static mt_check *add_check(lowering *L, mt_opcode op, const dsl_pattern *pat, uint32_t nargs)
{
    mt_check c = {.op = op, .nargs = nargs, .pat = pat};
    c.args = ar_alloc_array(L->arena, nargs, sizeof *c.args);
    vec_push(&L->checks, c);
    return &L->checks.items[L->checks.len - 1];
}

static void check1(lowering *L, mt_opcode op, const dsl_pattern *pat, uint32_t a)
{
    add_check(L, op, pat, 1)->args[0] = a;
}

static void check2(lowering *L, mt_opcode op, const dsl_pattern *pat, uint32_t a, uint32_t b)
{
    mt_check *c = add_check(L, op, pat, 2);
    c->args[0] = a;
    c->args[1] = b;
}

static void check_op(lowering *L, const dsl_pattern *p, uint32_t reg)
{
    if (p->nops == 1) {
        check2(L, MI_OP, p, reg, (uint32_t)p->ops[0]);
        return;
    }
    mt_check *c = add_check(L, MI_OPSET, p, 2 + p->nops);
    c->args[0] = reg;
    c->args[1] = p->nops;
    for (uint32_t i = 0; i < p->nops; i++)
        c->args[2 + i] = (uint32_t)p->ops[i];
}

static uint32_t new_reg(lowering *L)
{
    return L->nregs++;
}

/* Binds p and the absent optional ops standing for it (from `written` down) to reg. */
static void bind(lowering *L, const dsl_pattern *written, const dsl_pattern *p, int32_t reg)
{
    for (const dsl_pattern *q = written; q && q != p; q = q->noperands ? q->operands[0] : NULL)
        if (L->reg_of[q->id] < 0)
            L->reg_of[q->id] = reg;
    if (p && L->reg_of[p->id] < 0) {
        L->reg_of[p->id] = reg;
        vec_push(&L->bound, p);
    }
}

/* The arity check, left out where the catalog's arity of every alternative already guarantees it
 * (a node of a validated graph has an input count within its op's range): `Relu` and `Relu(@x)`
 * then share their checks. */
static void check_arity(lowering *L, const dsl_pattern *p, uint32_t reg)
{
    uint32_t need = 0, min_in = UINT32_MAX, max_in = 0;
    for (uint32_t i = 0; i < p->noperands; i++)
        if (slot_of(L, p, i) + 1 > need)
            need = slot_of(L, p, i) + 1;
    for (uint32_t i = 0; i < p->nops; i++) {
        const ir_op_info *info = ir_op_info_get(p->ops[i]);
        if (info->min_inputs < min_in)
            min_in = info->min_inputs;
        if (info->max_inputs > max_in)
            max_in = info->max_inputs;
    }
    if (!p->open) {
        if (need > p->noperands)
            L->problem = "a closed commutative op with one operand cannot match";
        if (min_in != p->noperands || max_in != p->noperands)
            check2(L, MI_ARITY_EQ, p, reg, p->noperands);
    } else if (need > min_in) {
        check2(L, MI_ARITY_GE, p, reg, need);
    }
}

/* The join loops' registers of the nodes on the path from a joined root to its shared value:
 * a load that reaches one of them must find the same value. */
typedef struct {
    const dsl_pattern *node[DSL_MAX_DEPTH + 1];
    uint32_t reg[DSL_MAX_DEPTH + 1];
    uint32_t len;
} join_path;

static int32_t joined_reg(const join_path *jp, const dsl_pattern *p)
{
    for (uint32_t i = 0; jp && i < jp->len; i++)
        if (jp->node[i] == p)
            return (int32_t)jp->reg[i];
    return -1;
}

/* Step 1 for one root: breadth first from the root (already bound), op checks (skipped for the
 * root itself, whose op the switch or the join checked), arity and loads. */
static void lower_structure(lowering *L, const dsl_pattern *root, const join_path *jp)
{
    L->queue.len = 0;
    vec_push(&L->queue, root);
    for (size_t qi = 0; qi < L->queue.len; qi++) {
        const dsl_pattern *p = L->queue.items[qi];
        uint32_t reg = (uint32_t)L->reg_of[p->id];
        if (p != root && joined_reg(jp, p) < 0)
            check_op(L, p, reg);
        check_arity(L, p, reg);
        for (uint32_t i = 0; i < p->noperands; i++) {
            const dsl_pattern *q = p->operands[i], *e = effective(L, q);
            uint32_t r = new_reg(L);
            add_check(L, MI_LOAD, q, 3);
            mt_check *load = &L->checks.items[L->checks.len - 1];
            load->args[0] = r;
            load->args[1] = reg;
            load->args[2] = slot_of(L, p, i);
            int32_t jr = e ? joined_reg(jp, e) : -1;
            int32_t old = e ? L->reg_of[e->id] : L->reg_of[q->id];
            if (jr >= 0) {
                /* a node of the join path: the load must land on the loop's node */
                check2(L, MI_EQ, q, r, (uint32_t)jr);
                bind(L, q, e, jr);
                vec_push(&L->queue, e);
            } else if (old >= 0) {
                /* reached again (a repeated capture, a let, or the joined shared value) */
                mt_check eq = {.op = MI_EQ, .nargs = 2, .pat = q};
                eq.args = ar_alloc_array(L->arena, 2, sizeof *eq.args);
                eq.args[0] = r;
                eq.args[1] = (uint32_t)old;
                if (jp)
                    vec_push(&L->checks, eq); /* the join's own test: early */
                else
                    vec_push(&L->eqs, eq);
                bind(L, q, e, old);
            } else {
                bind(L, q, e, (int32_t)r);
                if (e && e->kind == DSL_PAT_OP)
                    vec_push(&L->queue, e);
            }
        }
    }
}

/* Step 2: the value predicates of every node bound so far that has none laid out yet (an absent
 * optional op carries its predicates to the value it stands for), in register order. */
static void lower_value_preds(lowering *L)
{
    const dsl_rule *r = L->rule;
    VEC(const dsl_pattern *) bound = {0};
    for (uint32_t k = 0; k < r->nnodes; k++) {
        const dsl_pattern *q = r->nodes[k];
        if (L->reg_of[q->id] >= 0 && !L->preds_done[q->id])
            vec_push(&bound, q);
    }
    /* insertion sort by register (stable: node order breaks ties); lists are short */
    for (size_t i = 1; i < bound.len; i++)
        for (size_t j = i; j > 0 && L->reg_of[bound.items[j - 1]->id] > L->reg_of[bound.items[j]->id];
             j--) {
            const dsl_pattern *t = bound.items[j];
            bound.items[j] = bound.items[j - 1];
            bound.items[j - 1] = t;
        }
    for (size_t i = 0; i < bound.len; i++) {
        const dsl_pattern *q = bound.items[i];
        uint32_t reg = (uint32_t)L->reg_of[q->id];
        const dsl_value_preds *pr = &q->preds;
        L->preds_done[q->id] = 1;
        if (pr->is_const)
            check1(L, MI_CONST, q, reg);
        if (pr->dtype != IR_DTYPE_UNKNOWN)
            check2(L, MI_DTYPE, q, reg, (uint32_t)pr->dtype);
        if (pr->layout != IR_LAYOUT_NONE)
            check2(L, MI_LAYOUT, q, reg, (uint32_t)pr->layout);
        if (pr->rank >= 0)
            check2(L, MI_RANK, q, reg, (uint32_t)pr->rank);
    }
    vec_free(&bound);
}

/* The first node of root's pattern, in pre-order, that an earlier root bound; fills the path of
 * op nodes from the root down to (not including) it. */
static const dsl_pattern *find_shared(lowering *L, const dsl_pattern *p, join_path *jp)
{
    jp->node[jp->len++] = p;
    for (uint32_t i = 0; i < p->noperands; i++) {
        const dsl_pattern *q = p->operands[i], *e = effective(L, q);
        if (L->reg_of[q->id] >= 0 || (e && L->reg_of[e->id] >= 0))
            return e ? e : q;
        if (e && e->kind == DSL_PAT_OP && jp->len <= DSL_MAX_DEPTH) {
            const dsl_pattern *s = find_shared(L, e, jp);
            if (s)
                return s;
        }
    }
    jp->len--;
    return NULL;
}

/* Step 3: the join loops of root k, from the shared value down to the root. */
static bool lower_join(lowering *L, uint32_t k, join_path *jp)
{
    const dsl_pattern *root = effective(L, L->rule->roots[k]);
    if (!root || root->kind != DSL_PAT_OP || L->reg_of[root->id] >= 0) {
        L->problem = "each root of a horizontal pattern must be an op of its own";
        return false;
    }
    jp->len = 0;
    const dsl_pattern *shared = find_shared(L, root, jp);
    if (!shared) {
        L->problem = "a root of a horizontal pattern reads no value that the earlier roots bind";
        return false;
    }
    uint32_t from = (uint32_t)L->reg_of[shared->id];
    for (uint32_t t = jp->len; t-- > 0;) {
        uint32_t u = new_reg(L);
        uint32_t nexcl = t == 0 ? k : 0;
        mt_check *c = add_check(L, MI_JOIN, jp->node[t], 4 + nexcl);
        c->args[0] = u;
        c->args[1] = from;
        c->args[2] = L->nloops++;
        c->args[3] = nexcl;
        for (uint32_t j = 0; j < nexcl; j++)
            c->args[4 + j] = (uint32_t)L->reg_of[effective(L, L->rule->roots[j])->id];
        check_op(L, jp->node[t], u);
        jp->reg[t] = u;
        from = u;
    }
    bind(L, L->rule->roots[k], root, (int32_t)jp->reg[0]);
    return true;
}

/* ---- one variant ------------------------------------------------------------------------------- */

static void reset(lowering *L)
{
    uint32_t n = L->rule->nnodes;
    memset(L->visited, 0, n);
    memset(L->present, 0, n);
    memset(L->swapped, 0, n);
    memset(L->preds_done, 0, n);
    for (uint32_t i = 0; i < n; i++)
        L->reg_of[i] = -1;
    L->key.len = L->join_slots.len = L->checks.len = L->eqs.len = L->bound.len = 0;
    L->nregs = L->nloops = 0;
    L->problem = NULL;
}

/* Makes the choices of the next variant and lays out its checks; false when it cannot match. */
static bool lower_variant(lowering *L)
{
    const dsl_rule *r = L->rule;
    reset(L);
    for (uint32_t k = 0; k < r->nroots; k++) {
        if (k > 0) {
            vec_push(&L->join_slots, (uint32_t)L->key.len);
            vec_push(&L->key, -1); /* the joined root's node: filled in below */
        }
        choose_node(L, r->roots[k]);
    }
    const dsl_pattern *root = effective(L, r->roots[0]);
    if (!root || root->kind != DSL_PAT_OP) {
        L->problem = "the root of a pattern must be an op";
        return false;
    }
    bind(L, r->roots[0], root, (int32_t)new_reg(L));
    lower_structure(L, root, NULL);
    lower_value_preds(L);
    for (uint32_t k = 1; k < r->nroots; k++) {
        join_path jp;
        if (!lower_join(L, k, &jp))
            return false;
        L->key.items[L->join_slots.items[k - 1]] = -(int32_t)(jp.reg[0] + 1);
        lower_structure(L, jp.node[0], &jp);
        lower_value_preds(L);
    }
    /* inline attributes; argument 1 is the attribute's index in the node (the compiler turns it
     * into an index of the automaton's pool) */
    for (size_t i = 0; i < L->bound.len; i++) {
        const dsl_pattern *p = L->bound.items[i];
        for (uint32_t a = 0; p->kind == DSL_PAT_OP && L->present[p->id] && a < p->nattrs; a++)
            check2(L, MI_ATTR, p, (uint32_t)L->reg_of[p->id], a);
    }
    for (size_t i = 0; i < L->eqs.len; i++)
        vec_push(&L->checks, L->eqs.items[i]);
    /* `@f.k` leaves: the value is output k of the node @f bound */
    for (uint32_t i = 0; i < r->nnodes; i++) {
        const dsl_pattern *q = r->nodes[i];
        if (!q->output_of || L->reg_of[q->id] < 0)
            continue;
        if (L->reg_of[q->output_of->id] < 0 || !L->present[q->output_of->id]) {
            L->problem = "an output '@f.k' of an op the pattern does not reach";
            continue;
        }
        mt_check *c = add_check(L, MI_OUTPUT, q, 3);
        c->args[0] = (uint32_t)L->reg_of[q->id];
        c->args[1] = (uint32_t)L->reg_of[q->output_of->id];
        c->args[2] = q->output_index;
    }
    if (r->guard)
        add_check(L, MI_GUARD, NULL, 1);
    add_check(L, MI_ACCEPT, r->roots[0], 1);
    return L->problem == NULL;
}

static mt_variant save_variant(lowering *L, uint32_t rule_index)
{
    const dsl_rule *r = L->rule;
    mt_variant v = {.rule = r, .rule_index = rule_index, .root = effective(L, r->roots[0]),
                    .nchecks = (uint32_t)L->checks.len, .nkey = (uint32_t)L->key.len,
                    .nregs = L->nregs, .nloops = L->nloops};
    v.checks = ar_alloc_array(L->arena, v.nchecks, sizeof *v.checks);
    if (v.nchecks)
        memcpy(v.checks, L->checks.items, v.nchecks * sizeof *v.checks);
    v.reg_of = ar_alloc_array(L->arena, r->nnodes, sizeof *v.reg_of);
    v.present = ar_alloc_array(L->arena, r->nnodes, sizeof *v.present);
    memcpy(v.reg_of, L->reg_of, r->nnodes * sizeof *v.reg_of);
    memcpy(v.present, L->present, r->nnodes);
    for (uint32_t i = 0; i < r->nnodes; i++)
        if (v.reg_of[i] < 0)
            v.present[i] = 0; /* not reached: binds nothing */
    v.key = ar_alloc_array(L->arena, v.nkey, sizeof *v.key);
    if (v.nkey) /* an empty vector's items are NULL, which memcpy may not be given */
        memcpy(v.key, L->key.items, v.nkey * sizeof *v.key);
    return v;
}

bool mt_lower_rule(ar_arena *arena, const dsl_rule *r, uint32_t rule_index, mt_variant_vec *out,
                   dg_context *dg)
{
    lowering L = {.arena = arena, .rule = r};
    size_t n = r->nnodes ? r->nnodes : 1;
    L.visited = calloc(n, 1);
    L.present = calloc(n, 1);
    L.swapped = calloc(n, 1);
    L.preds_done = calloc(n, 1);
    L.reg_of = malloc(n * sizeof *L.reg_of);
    FR_CHECK(L.visited && L.present && L.swapped && L.preds_done && L.reg_of);
    size_t first = out->len, variants = 0;
    const char *problem = NULL;
    bool ok = true;
    do {
        L.od.used = 0;
        if (++variants > MT_MAX_VARIANTS) {
            dg_error(dg, r->src, r->src_offset, r->src_len,
                     "rule '%s' has more than %d combinations of commutative and optional ops; "
                     "the matcher cannot compile it",
                     r->name, MT_MAX_VARIANTS);
            ok = false;
            break;
        }
        if (lower_variant(&L)) {
            vec_push(out, save_variant(&L, rule_index));
        } else if (!problem) {
            problem = L.problem;
        }
    } while (odometer_next(&L.od));
    if (ok && out->len == first) {
        dg_error(dg, r->src, r->src_offset, r->src_len, "rule '%s' cannot be compiled: %s",
                 r->name, problem ? problem : "no combination of its alternatives can match");
        ok = false;
    }
    if (!ok)
        out->len = first;
    vec_free(&L.od.digits);
    vec_free(&L.key);
    vec_free(&L.join_slots);
    vec_free(&L.checks);
    vec_free(&L.eqs);
    vec_free(&L.bound);
    vec_free(&L.queue);
    free(L.visited);
    free(L.present);
    free(L.swapped);
    free(L.preds_done);
    free(L.reg_of);
    return ok;
}

bool mt_check_equal(const mt_check *a, const mt_check *b)
{
    return a->op == b->op && a->nargs == b->nargs &&
           memcmp(a->args, b->args, a->nargs * sizeof *a->args) == 0;
}
