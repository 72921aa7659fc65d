/* Automaton equivalence: on random graphs and random rule sets, the automaton finds exactly the
 * matches (rule, root, key, every binding) that the naive rule-by-rule matcher finds.
 *
 * Rules use every feature the automaton compiles: op sets, optional ops, commutative ops, open and
 * closed operand lists, leaves with predicates, repeated captures and shared op nodes, inline
 * attributes, guards, and horizontal roots joined through a shared value. Graphs are built
 * directly (no validation: the matcher reads structure, types and attributes only), with values
 * used several times, omitted optional inputs, and multi-output nodes.
 *
 *     test_equivalence [ITERATIONS [SEED]]   (defaults 300 and 1) */
#include "matcher/matcher.h"
#include "tests/matcher/naive.h"
#include "tests/matcher/rulekit.h"
#include "tests/unit.h"

#include <inttypes.h>
#include <stdlib.h>

/* ---- a small deterministic generator ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? (uint32_t)(rng_state % n) : 0;
}

static bool chance(uint32_t percent)
{
    return rnd(100) < percent;
}

/* ---- the op pool ---- */

typedef struct {
    ir_op op;
    uint32_t min_in, max_in, nout;
    const char *attr; /* an INT or FLOAT attribute some nodes set */
    bool attr_float;
} pool_op;

static const pool_op pool[] = {
    {IR_OP_Relu, 1, 1, 1, NULL, false},       {IR_OP_Sigmoid, 1, 1, 1, NULL, false},
    {IR_OP_Exp, 1, 1, 1, NULL, false},        {IR_OP_LeakyRelu, 1, 1, 1, "alpha", true},
    {IR_OP_Add, 2, 2, 1, NULL, false},        {IR_OP_Mul, 2, 2, 1, NULL, false},
    {IR_OP_Sub, 2, 2, 1, NULL, false},        {IR_OP_MatMul, 2, 2, 1, NULL, false},
    {IR_OP_Concat, 1, 3, 1, "axis", false},   {IR_OP_Split, 1, 1, 2, "axis", false},
    {IR_OP_Conv, 2, 3, 1, "group", false},
};
enum { NPOOL = sizeof pool / sizeof pool[0] };

static const pool_op *pool_of(ir_op op)
{
    for (size_t i = 0; i < NPOOL; i++)
        if (pool[i].op == op)
            return &pool[i];
    return NULL;
}

/* ---- random graphs ---- */

static ir_type random_type(void)
{
    ir_type t = {.dtype = chance(70) ? IR_F32 : IR_F16, .rank = (int8_t)(1 + rnd(3))};
    for (int i = 0; i < t.rank; i++)
        t.dims[i] = 2 + rnd(3);
    t.layout = chance(20) ? IR_LAYOUT_NCHW : IR_LAYOUT_NONE;
    return t;
}

static ir_graph *random_graph(void)
{
    ir_graph *g = ir_graph_new("random");
    VEC(ir_value *) vals = {0};
    char name[32];
    uint32_t ninputs = 1 + rnd(3), nconsts = 1 + rnd(3), nnodes = 4 + rnd(24);
    for (uint32_t i = 0; i < ninputs; i++) {
        snprintf(name, sizeof name, "in%u", i);
        ir_type t = random_type();
        vec_push(&vals, ir_add_input(g, name, &t));
    }
    for (uint32_t i = 0; i < nconsts; i++) {
        snprintf(name, sizeof name, "k%u", i);
        ir_type t = random_type();
        vec_push(&vals, ir_add_const(g, name, &t, ir_const_new(g, IR_CONST_RANDOM)));
    }
    for (uint32_t i = 0; i < nnodes; i++) {
        const pool_op *po = &pool[rnd(NPOOL)];
        uint32_t nin = po->min_in + rnd(po->max_in - po->min_in + 1);
        char out0[32], out1[32];
        snprintf(out0, sizeof out0, "v%u", i);
        snprintf(out1, sizeof out1, "v%u_1", i);
        const char *outs[] = {out0, out1};
        ir_node *n = ir_add_node(g, po->op, nin, outs, po->nout);
        for (uint32_t k = 0; k < nin; k++) {
            /* mostly recent values, so that chains form; the last Conv input may be omitted */
            size_t pick = vals.len - 1 - rnd(vals.len < 4 ? (uint32_t)vals.len : 4);
            if (chance(25))
                pick = rnd((uint32_t)vals.len);
            bool omit = po->op == IR_OP_Conv && k == 2 && chance(40);
            ir_set_input(n, k, omit ? NULL : vals.items[pick]);
        }
        if (po->attr && chance(60)) {
            if (po->attr_float)
                ir_set_attr_float(g, n, po->attr, chance(50) ? 0.2 : 0.01);
            else
                ir_set_attr_int(g, n, po->attr, rnd(3));
        }
        for (uint32_t k = 0; k < po->nout; k++) {
            ir_type t = random_type();
            ir_value_set_type(g, n->outputs[k], &t);
            vec_push(&vals, n->outputs[k]);
        }
    }
    ir_add_output(g, vals.items[vals.len - 1]);
    vec_free(&vals);
    ir_compute_uses(g);
    return g;
}

/* ---- random rules ---- */

typedef struct {
    rk_kit *k;
    VEC(dsl_pattern *) ops;    /* op nodes of the rule being built, for sharing */
    VEC(const char *) leaves;  /* leaf capture names in use */
    VEC(const char *) named;   /* op capture names */
    uint32_t serial;
} rule_gen;

static void random_preds(dsl_pattern *p)
{
    if (chance(15))
        p->preds.is_const = p->kind == DSL_PAT_ANY;
    if (chance(15))
        p->preds.dtype = chance(70) ? IR_F32 : IR_F16;
    if (chance(15))
        p->preds.rank = (int8_t)(1 + rnd(3));
    if (chance(8))
        p->preds.layout = IR_LAYOUT_NCHW;
}

static dsl_pattern *random_leaf(rule_gen *rg)
{
    if (chance(30))
        return rk_leaf(rg->k, "_");
    char name[16];
    if (rg->leaves.len && chance(35))
        return rk_leaf(rg->k, rg->leaves.items[rnd((uint32_t)rg->leaves.len)]);
    snprintf(name, sizeof name, "@l%u", rg->serial++);
    const char *kept = ar_strdup(rk_arena(rg->k), name);
    vec_push(&rg->leaves, kept);
    dsl_pattern *p = rk_leaf(rg->k, kept);
    random_preds(p);
    return p;
}

static dsl_pattern *random_pattern(rule_gen *rg, uint32_t depth);

static dsl_pattern *random_op(rule_gen *rg, uint32_t depth, bool root)
{
    ir_op ops[3];
    uint32_t nops = 1;
    ops[0] = pool[rnd(NPOOL)].op;
    if (chance(20)) {
        nops = 2 + rnd(2);
        for (uint32_t i = 1; i < nops; i++)
            ops[i] = pool[rnd(NPOOL)].op;
    }
    const pool_op *po = pool_of(ops[0]);
    uint32_t n = rnd(po->max_in + 1);
    if (chance(15))
        n = po->max_in + 1 - rnd(2); /* sometimes more operands than it has */
    if (n > 3)
        n = 3;
    dsl_pattern *operands[3];
    for (uint32_t i = 0; i < n; i++)
        operands[i] = random_pattern(rg, depth);
    int open = chance(60) ? RK_OPEN : RK_CLOSED;
    dsl_pattern *p = rk_opset(rg->k, ops, nops, open, n, n > 0 ? operands[0] : NULL,
                              n > 1 ? operands[1] : NULL, n > 2 ? operands[2] : NULL);
    if (!root && chance(15))
        rk_optional(p);
    if (chance(10))
        random_preds(p);
    if (po->attr && nops == 1 && chance(25)) {
        if (po->attr_float)
            rk_attr_float(rg->k, p, po->attr, chance(50) ? 0.2 : 0.01);
        else
            rk_attr_int(rg->k, p, po->attr, rnd(3));
    }
    if (chance(25)) {
        char name[16];
        snprintf(name, sizeof name, "n%u", rg->serial++);
        const char *kept = ar_strdup(rk_arena(rg->k), name);
        rk_name(rg->k, p, kept);
        vec_push(&rg->named, kept);
    }
    vec_push(&rg->ops, p);
    return p;
}

static dsl_pattern *random_pattern(rule_gen *rg, uint32_t depth)
{
    if (rg->ops.len && chance(8))
        return rg->ops.items[rnd((uint32_t)rg->ops.len)]; /* a shared op node (a `let`) */
    if (depth == 0 || chance(35))
        return random_leaf(rg);
    return random_op(rg, depth - 1, false);
}

static dsl_expr *random_value_ref(rule_gen *rg, dsl_rule *r)
{
    size_t total = rg->leaves.len + rg->named.len;
    if (!total)
        return NULL;
    uint32_t i = rnd((uint32_t)total);
    const char *name = i < rg->leaves.len ? rg->leaves.items[i] + 1 : rg->named.items[i - rg->leaves.len];
    dsl_capture *c = rk_capture(r, name);
    return c ? rk_ref(rg->k, c) : NULL;
}

static dsl_expr *random_guard(rule_gen *rg, dsl_rule *r)
{
    rk_kit *k = rg->k;
    dsl_expr *a = random_value_ref(rg, r), *b = random_value_ref(rg, r);
    if (!a || !b)
        return NULL;
    switch (rnd(6)) {
    case 0: return rk_bin(k, DSL_OP_EQ, rk_call(k, DSL_FN_RANK, a, NULL), rk_call(k, DSL_FN_RANK, b, NULL));
    case 1: return rk_bin(k, DSL_OP_EQ, rk_call(k, DSL_FN_DTYPE, a, NULL), rk_dtype(k, IR_F32));
    case 2: return rk_bin(k, DSL_OP_EQ, rk_call(k, DSL_FN_SHAPE, a, NULL), rk_call(k, DSL_FN_SHAPE, b, NULL));
    case 3: return rk_not(k, rk_bin(k, DSL_OP_EQ, rk_call(k, DSL_FN_DIM, a, rk_int(k, -1)), rk_int(k, 3)));
    case 4:
        return rk_bin(k, DSL_OP_OR, rk_bin(k, DSL_OP_EQ, rk_call(k, DSL_FN_OP, a, NULL), rk_opname(k, IR_OP_Relu)),
                      rk_bin(k, DSL_OP_GE, rk_call(k, DSL_FN_NUMEL, b, NULL), rk_int(k, 8)));
    default:
        return rk_bin(k, DSL_OP_AND, rk_bin(k, DSL_OP_LT, rk_call(k, DSL_FN_RANK, a, NULL), rk_int(k, 3)),
                      rk_bin(k, DSL_OP_NE, rk_call(k, DSL_FN_DTYPE, b, NULL), rk_dtype(k, IR_F16)));
    }
}

/* A horizontal root: an op reading the shared leaf directly or one op further down. */
static dsl_pattern *joined_root(rule_gen *rg, dsl_pattern *shared)
{
    dsl_pattern *below = shared;
    if (chance(40))
        below = rk_op(rg->k, chance(50) ? IR_OP_Relu : IR_OP_Exp, RK_OPEN, 1, shared);
    ir_op op = chance(50) ? IR_OP_MatMul : IR_OP_Add;
    return chance(50) ? rk_op(rg->k, op, RK_OPEN, 1, below)
                      : rk_op(rg->k, op, RK_CLOSED, 2, below, random_leaf(rg));
}

static dsl_rule *random_rule(rk_kit *k, uint32_t index)
{
    rule_gen rg = {.k = k};
    char name[32];
    snprintf(name, sizeof name, "r%u", index);
    dsl_rule *r;
    if (chance(20)) {
        dsl_pattern *shared = rk_leaf(k, "@s");
        vec_push(&rg.leaves, "@s");
        dsl_pattern *r0 = joined_root(&rg, shared);
        r = chance(50) ? rk_rule(k, name, 2, r0, joined_root(&rg, shared))
                       : rk_rule(k, name, 3, r0, joined_root(&rg, shared), joined_root(&rg, shared));
    } else {
        r = rk_rule(k, name, 1, random_op(&rg, 1 + rnd(3), true));
    }
    if (chance(20))
        r->guard = random_guard(&rg, r);
    vec_free(&rg.ops);
    vec_free(&rg.leaves);
    vec_free(&rg.named);
    return r;
}

/* ---- comparing ---- */

static size_t compared_matches, compared_nodes, mismatches;
/* what the compared matches exercised */
static size_t seen_horizontal, seen_alternative, seen_guard;

static bool same_match(const mt_match *a, const nv_match *b, uint32_t nnodes)
{
    return a->rule_index == b->rule_index && a->root == b->root && a->nkey == b->nkey &&
           memcmp(a->key, b->key, a->nkey * sizeof *a->key) == 0 &&
           memcmp(a->values, b->values, nnodes * sizeof *a->values) == 0 &&
           memcmp(a->nodes, b->nodes, nnodes * sizeof *a->nodes) == 0;
}

static void compare_graph(mt_automaton *a, mt_matcher *m, ir_graph *g, uint64_t seed)
{
    uint32_t nrules;
    dsl_rule *const *rules = mt_rules(a, &nrules);
    ar_arena *arena = ar_new();
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        nv_matches want = {0};
        for (uint32_t r = 0; r < nrules; r++)
            nv_match_rule(arena, g, rules[r], r, n, &want);
        mt_matcher_reset(m);
        mt_match_node(m, g, n);
        size_t got;
        const mt_match *ms = mt_matches(m, &got);
        bool ok = got == want.len;
        for (size_t j = 0; ok && j < got; j++)
            ok = same_match(&ms[j], &want.items[j], rules[ms[j].rule_index]->nnodes);
        if (!ok) {
            if (mismatches++ < 5)
                fprintf(stderr, "seed %" PRIu64 ": node %zu (%s): automaton %zu matches, naive %zu\n",
                        seed, i, ir_op_name(n->op), got, want.len);
            CHECK(ok);
        }
        compared_matches += want.len;
        for (size_t j = 0; j < want.len; j++) {
            const dsl_rule *r = rules[want.items[j].rule_index];
            bool alternative = false;
            for (uint32_t d = 0; d < want.items[j].nkey; d++)
                alternative |= want.items[j].key[d] == 1;
            seen_horizontal += r->nroots > 1;
            seen_alternative += alternative;
            seen_guard += r->guard != NULL;
        }
        compared_nodes++;
        vec_free(&want);
    }
    ar_free(arena);
}

static void run_iteration(uint64_t seed)
{
    rng_state = seed * 0x9e3779b97f4a7c15u + 1;
    rk_kit *k = rk_new();
    uint32_t nrules = 4 + rnd(12);
    dsl_rule **rules = calloc(nrules, sizeof *rules);
    for (uint32_t i = 0; i < nrules; i++)
        rules[i] = random_rule(k, i);
    dg_context *dg = dg_new();
    mt_automaton *a = mt_compile_rules(rules, nrules, dg);
    mt_matcher *m = mt_matcher_new(a, seed % 4 == 0); /* explain mode must not change matches */
    for (int gi = 0; gi < 3; gi++) {
        ir_graph *g = random_graph();
        compare_graph(a, m, g, seed);
        ir_graph_free(g);
    }
    mt_matcher_free(m);
    mt_free(a);
    dg_free(dg);
    free(rules);
    rk_free(k);
}

/* A value with more consumers than the join examines: both matchers stop at the same place. */
static void test_join_limit(void)
{
    rk_kit *k = rk_new();
    dsl_pattern *x = rk_leaf(k, "@x");
    dsl_rule *r = rk_rule(k, "pair", 2, rk_op(k, IR_OP_Relu, RK_CLOSED, 1, x),
                          rk_op(k, IR_OP_Sigmoid, RK_CLOSED, 1, x));
    ir_graph *g = ir_graph_new("wide");
    ir_type t = {.dtype = IR_F32, .rank = 1, .dims = {4}};
    ir_value *in = ir_add_input(g, "x", &t);
    char name[32];
    for (int i = 0; i < MT_JOIN_LIMIT + 6; i++) {
        snprintf(name, sizeof name, "y%d", i);
        const char *outs[] = {name};
        /* the Sigmoid consumers come last, past the limit, except one */
        ir_op op = i == 3 || i >= MT_JOIN_LIMIT + 2 ? IR_OP_Sigmoid : IR_OP_Relu;
        ir_set_input(ir_add_node(g, op, 1, outs, 1), 0, in);
    }
    ir_compute_uses(g);
    dg_context *dg = dg_new();
    mt_automaton *a = mt_compile_rules(&r, 1, dg);
    mt_matcher *m = mt_matcher_new(a, false);
    compare_graph(a, m, g, 0);
    mt_matcher_reset(m);
    CHECK_INT(mt_match_node(m, g, g->nodes.items[0]), 1); /* only y3 is within reach */
    mt_matcher_free(m);
    mt_free(a);
    dg_free(dg);
    ir_graph_free(g);
    rk_free(k);
}

static int iterations = 300;
static uint64_t first_seed = 1;

static void test_random(void)
{
    for (int i = 0; i < iterations; i++)
        run_iteration(first_seed + (uint64_t)i);
    printf("compared %zu matches at %zu nodes: %zu horizontal, %zu through a swap or an absent "
           "optional op, %zu guarded\n",
           compared_matches, compared_nodes, seen_horizontal, seen_alternative, seen_guard);
    CHECK(seen_horizontal > 0 && seen_alternative > 0 && seen_guard > 0);
    /* the generator must produce matches, or the comparison proves nothing */
    CHECK(compared_matches > (size_t)iterations);
    CHECK_INT(mismatches, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iterations = atoi(argv[1]);
    if (argc > 2)
        first_seed = strtoull(argv[2], NULL, 10);
    RUN(test_join_limit);
    RUN(test_random);
    return unit_finish();
}
