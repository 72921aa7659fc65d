/* The rule prover through its API: the guard solver picks the constants a guard asks for, the
 * generator is deterministic, --instances is honoured, and a wrong rule's verdict carries its
 * counterexample. (The CLI's output is in the golden files beside this one.) */
#include "tests/unit.h"

#include "prove/internal.h"
#include "rewrite/rewrite.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    dsl_ruleset *rs;
    dg_context *dg;
} loaded;

/* Rules from text, checked against the kernel registry (aborts on errors). */
static loaded load(const char *text)
{
    loaded l = {.dg = dg_new()};
    dsl_options opts = rw_dsl_options();
    l.rs = dsl_ruleset_new(&opts);
    dsl_load_text(l.rs, "test.rules", text, strlen(text), l.dg);
    if (!dsl_check(l.rs, l.dg) || dg_has_errors(l.dg)) {
        dg_print(l.dg, stderr);
        abort();
    }
    return l;
}

static void unload(loaded *l)
{
    dsl_ruleset_free(l->rs);
    dg_free(l->dg);
}

static const dsl_pattern *node_of(const dsl_rule *r, const char *capture)
{
    for (uint32_t i = 0; i < r->ncaptures; i++)
        if (strcmp(r->captures[i]->name, capture) == 0)
            return r->captures[i]->node;
    abort();
}

/* With @x built as f32[3,8], each constant gets what its comparisons ask: an equality through a
 * product with a dim, a literal; and across what bounds allow: an integer at or above a dim, a
 * value inside a range, an integer strictly above a bound (over many draws, near the bound and
 * far above it). */
static void test_solver(void)
{
    loaded l = load(
        "rule r: Slice(Slice(@x, @z:const, @h:const, @a:const), @s:const, @e:const, @k:const)\n"
        "  => @x where value(@h) * 2 == dim(@x, -1) && value(@a) == -1 &&\n"
        "  value(@z) == 0 && value(@e) >= dim(@x, -1) && value(@s) > 0.7 &&\n"
        "  value(@s) < 0.8 && value(@k) > 2\n");
    const dsl_rule *r = l.rs->rules[0];
    ar_arena *arena = ar_new();
    pv_facts facts;
    pv_facts_compute(r, arena, &facts);
    CHECK(facts.nodes[node_of(r, "h")->id].one_element);
    CHECK(facts.nodes[node_of(r, "h")->id].is_const);
    pv_rng rng = {1};
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 2, .dims = {3, 8}};
    pv_gen gen = {.g = g, .facts = &facts, .rng = &rng};
    gen.values = calloc(r->nnodes, sizeof *gen.values);
    gen.values[node_of(r, "x")->id] = ir_add_input(g, "x", &t);
    double v = 0;
    CHECK(pv_solve_value(&gen, node_of(r, "h"), IR_I64, &v) && v == 4);
    CHECK(pv_solve_value(&gen, node_of(r, "a"), IR_I64, &v) && v == -1);
    CHECK(pv_solve_value(&gen, node_of(r, "z"), IR_I64, &v) && v == 0);
    bool near = false, far = false;
    for (int i = 0; i < 200; i++) {
        CHECK(pv_solve_value(&gen, node_of(r, "e"), IR_I64, &v) && v >= 8 && v == (int64_t)v);
        CHECK(pv_solve_value(&gen, node_of(r, "s"), IR_F32, &v) && v > 0.7 && v < 0.8);
        CHECK(pv_solve_value(&gen, node_of(r, "k"), IR_I64, &v) && v > 2 && v == (int64_t)v);
        near |= v == 3, far |= v >= 10;
    }
    CHECK(near && far);
    free(gen.values);
    ir_graph_free(g);
    ar_free(arena);
    unload(&l);
}

/* `value(@s) != 0` alone: values of both signs, small and large, never 0; `value(@a) > 0` reaches
 * above 1 (a LeakyRelu slope the guard admits by mistake). */
static void test_solver_ranges(void)
{
    loaded l =
        load("rule r: Max(Mul(Relu(@x), @s:const), Mul(@x, @a:const)) => ElementwiseChain(@x, @s, "
             "@a) {expr = \"relu(mul(x0, x1))\"}\n  where value(@s) != 0 && value(@a) > 0\n");
    const dsl_rule *r = l.rs->rules[0];
    ar_arena *arena = ar_new();
    pv_facts facts;
    pv_facts_compute(r, arena, &facts);
    pv_rng rng = {3};
    ir_graph *g = ir_graph_new("t");
    pv_gen gen = {.g = g, .facts = &facts, .rng = &rng};
    gen.values = calloc(r->nnodes, sizeof *gen.values);
    bool negative = false, positive = false, large = false, above_one = false;
    double v;
    for (int i = 0; i < 200; i++) {
        CHECK(pv_solve_value(&gen, node_of(r, "s"), IR_F32, &v) && v != 0);
        negative |= v<0, positive |= v> 0, large |= fabs(v) > 2;
        CHECK(pv_solve_value(&gen, node_of(r, "a"), IR_F32, &v) && v > 0);
        above_one |= v > 1;
    }
    CHECK(negative && positive && large && above_one);
    free(gen.values);
    ir_graph_free(g);
    ar_free(arena);
    unload(&l);
}

/* A guard's shape(@r) == [list] and shape(@y) == shape(@x) give shapes once @x is built. */
static void test_shape_solver(void)
{
    loaded l =
        load("rule r: Add(Reshape@r(@x, _:const), @y) => ElementwiseChain(@x, @y) {expr = "
             "\"add(x0, x1)\"}\n"
             "  where shape(@r) == [dim(@x, 1), dim(@x, 0) * 2] && shape(@y) == shape(@x)\n");
    const dsl_rule *r = l.rs->rules[0];
    ar_arena *arena = ar_new();
    pv_facts facts;
    pv_facts_compute(r, arena, &facts);
    pv_rng rng = {1};
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 2, .dims = {3, 8}}, got;
    pv_gen gen = {.g = g, .facts = &facts, .rng = &rng};
    gen.values = calloc(r->nnodes, sizeof *gen.values);
    CHECK(!pv_solve_shape(&gen, node_of(r, "r"), &got)); /* nothing built yet */
    gen.values[node_of(r, "x")->id] = ir_add_input(g, "x", &t);
    CHECK(pv_solve_shape(&gen, node_of(r, "r"), &got));
    CHECK_INT(got.rank, 2);
    CHECK_INT(got.dims[0], 8);
    CHECK_INT(got.dims[1], 6);
    CHECK(pv_solve_shape(&gen, node_of(r, "y"), &got) && ir_type_equal(&got, &t));
    free(gen.values);
    ir_graph_free(g);
    ar_free(arena);
    unload(&l);
}

/* A guard's dim(@b, k) == e sets dim k of @b's type once e can be computed. */
static void test_dim_solver(void)
{
    loaded l = load("rule r: Mul(@x, @b) => ElementwiseChain(@x, @b) {expr = \"mul(x0, x1)\"}\n"
                    "  where rank(@b) == 2 && dim(@b, 0) == dim(@x, -1) && dim(@b, -1) == 7\n");
    const dsl_rule *r = l.rs->rules[0];
    ar_arena *arena = ar_new();
    pv_facts facts;
    pv_facts_compute(r, arena, &facts);
    CHECK_INT(facts.nodes[node_of(r, "b")->id].rank, 2);
    pv_rng rng = {1};
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 2, .dims = {3, 8}};
    pv_gen gen = {.g = g, .facts = &facts, .rng = &rng};
    gen.values = calloc(r->nnodes, sizeof *gen.values);
    ir_type b = {.dtype = IR_F32, .rank = 2, .dims = {2, 2}};
    pv_solve_dims(&gen, node_of(r, "b"), &b); /* @x not built: only the literal */
    CHECK_INT(b.dims[0], 2);
    CHECK_INT(b.dims[1], 7);
    gen.values[node_of(r, "x")->id] = ir_add_input(g, "x", &t);
    pv_solve_dims(&gen, node_of(r, "b"), &b);
    CHECK_INT(b.dims[0], 8);
    CHECK_INT(b.dims[1], 7);
    free(gen.values);
    ir_graph_free(g);
    ar_free(arena);
    unload(&l);
}

/* The same rng state draws the same graph (the prover runs a twin of each candidate). */
static void test_generator_deterministic(void)
{
    loaded l = load("rule r: Conv > BN > Relu => FusedConvAct[fold_bn]\n");
    ar_arena *arena = ar_new();
    pv_facts facts;
    pv_facts_compute(l.rs->rules[0], arena, &facts);
    uint32_t built = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        pv_rng a = {seed}, b = {seed};
        ir_graph *ga = pv_generate(&facts, &a, (uint32_t)seed, NULL),
                 *gb = pv_generate(&facts, &b, (uint32_t)seed, NULL);
        CHECK((ga == NULL) == (gb == NULL));
        if (ga && gb) {
            built++;
            char *ta = NULL, *tb = NULL;
            size_t na = 0, nb = 0;
            FILE *fa = open_memstream(&ta, &na), *fb = open_memstream(&tb, &nb);
            ir_print(ga, fa);
            ir_print(gb, fb);
            fclose(fa);
            fclose(fb);
            CHECK_STR(ta, tb);
            CHECK(strstr(ta, "BatchNormalization") != NULL);
            free(ta);
            free(tb);
        }
        ir_graph_free(ga);
        ir_graph_free(gb);
    }
    CHECK(built > 10);
    ar_free(arena);
    unload(&l);
}

/* --instances N: a correct rule is proved on exactly N instances; the same seed, the same run. */
static void test_instances(void)
{
    loaded l = load("rule r: Conv > BN => Conv[fold_bn]\n");
    pv_options opts = {.seed = 7, .instances = 3};
    pv_result a, b;
    pv_prove(l.rs->rules[0], &opts, &a);
    pv_prove(l.rs->rules[0], &opts, &b);
    CHECK_INT(a.verdict, PV_PROVED);
    CHECK_INT(a.instances, 3);
    CHECK_INT(a.attempts, b.attempts);
    CHECK(a.max_diff == b.max_diff);
    CHECK(a.max_diff > 0 && a.max_diff < 1e-4);
    pv_result_free(&a);
    pv_result_free(&b);
    unload(&l);
}

/* A wrong rule fails with a counterexample: the graph, its inputs and the worst element. */
static void test_counterexample(void)
{
    loaded l =
        load("rule r: Sigmoid(Tanh(@x)) => ElementwiseChain(@x) {expr = \"tanh(sigmoid(x0))\"}\n");
    pv_result res;
    pv_prove(l.rs->rules[0], NULL, &res);
    CHECK_INT(res.verdict, PV_FAILED);
    CHECK(res.failures > 0 && res.failures <= res.instances);
    CHECK(res.failure && strstr(res.failure, "outputs differ by") == res.failure);
    CHECK(res.counterexample && strstr(res.counterexample, "graph instance {") != NULL);
    /* x is an input (its values listed) or a constant (its values in the graph) */
    CHECK(strstr(res.counterexample, "x = [") != NULL ||
          strstr(res.counterexample, "const  x") != NULL);
    CHECK(strstr(res.counterexample, ": original ") != NULL);
    pv_result_free(&res);
    unload(&l);
}

/* An f32 tensor of n values over `data` (the caller's array). */
static rt_tensor f32_tensor(const char *name, float *data, int64_t n)
{
    return (rt_tensor){.name = name,
                       .type = {.dtype = IR_F32, .rank = 1, .dims = {n}},
                       .data = data,
                       .nbytes = (size_t)n * sizeof *data};
}

/* The judge: NaN must meet NaN and an infinity one of its sign, the worst element is the first such
 * disagreement (else the one furthest out of tolerance), and on scaled inputs the tolerance grows
 * (s^2 atol + s rtol |x|). */
static void test_judge(void)
{
    float a[4] = {1, NAN, INFINITY, 0.5f}, b[4] = {1, NAN, INFINITY, 0.5f};
    rt_tensor orig = f32_tensor("y", a, 4), rewr = f32_tensor("y", b, 4);
    pv_judgment j = pv_judge(&orig, &rewr, 1);
    CHECK(j.ok && j.special == 0 && j.bad == 0);
    b[2] = -INFINITY;
    j = pv_judge(&orig, &rewr, 1);
    CHECK(!j.ok && j.special == 1 && j.at == 2);
    b[2] = INFINITY, b[1] = 3;
    j = pv_judge(&orig, &rewr, 1);
    CHECK(!j.ok && j.special == 1 && j.at == 1);
    b[1] = NAN, b[3] = 0.5003f; /* 3e-4 off: out of f32's 1e-5 + 1e-4 * 0.5, inside it times 8 */
    j = pv_judge(&orig, &rewr, 1);
    CHECK(!j.ok && j.bad == 1 && j.at == 3);
    CHECK_NEAR(j.worst_diff, 3e-4, 0, 1e-6);
    CHECK(pv_judge(&orig, &rewr, 8).ok);
    rt_tolerance t = pv_tolerance(IR_F32, 8);
    CHECK_NEAR(t.atol, 64e-5, 0, 1e-12);
    CHECK_NEAR(t.rtol, 8e-4, 0, 1e-12);
}

/* The input variants: float inputs scaled (8, 64, 1/1024), integer ones untouched; the planted
 * variant puts one NaN and one other special value into data inputs, none into parameters. */
static void test_input_variants(void)
{
    float x[6] = {0.5f, -0.25f, 1, 0, -1, 0.125f}, w[6] = {1, 2, 3, 4, 5, 6};
    int64_t idx[2] = {1, 2};
    rt_tensor in[3] = {f32_tensor("x", x, 6),
                       f32_tensor("w", w, 6),
                       {.name = "i",
                        .type = {.dtype = IR_I64, .rank = 1, .dims = {2}},
                        .data = idx,
                        .nbytes = sizeof idx}};
    bool is_param[3] = {false, true, false};
    ar_arena *arena = ar_new();
    rt_tensor *v = pv_inputs_variant(in, 3, PV_INPUTS_TIMES8, 1, is_param, arena);
    CHECK_NEAR(rt_tensor_get(&v[0], 1), -2, 0, 0);
    CHECK_NEAR(rt_tensor_get(&v[1], 5), 48, 0, 0);
    CHECK_NEAR(rt_tensor_get(&v[2], 1), 2, 0, 0);
    CHECK_NEAR(x[1], -0.25, 0, 0); /* a copy: the drawn inputs stay */
    v = pv_inputs_variant(in, 3, PV_INPUTS_SMALL, 1, is_param, arena);
    CHECK_NEAR(rt_tensor_get(&v[2], 0), 1, 0, 0);
    CHECK_NEAR(rt_tensor_get(&v[0], 0), 0.5 / 1024, 0, 0);
    for (uint64_t seed = 0; seed < 20; seed++) {
        v = pv_inputs_variant(in, 3, PV_INPUTS_SPECIAL, seed, is_param, arena);
        int nans = 0, special = 0;
        for (size_t k = 0; k < 6; k++) {
            double e = rt_tensor_get(&v[0], k);
            nans += isnan(e);
            special += isnan(e) || isinf(e) || (e == 0 && x[k] != 0) || (e == 0 && signbit(e));
            CHECK(!isnan(rt_tensor_get(&v[1], k)) && !isinf(rt_tensor_get(&v[1], k)));
        }
        CHECK(nans == 1 && special >= 1 && special <= 2);
    }
    ar_free(arena);
}

/* A guard no small instance satisfies: unproven after the whole budget. */
static void test_unproven(void)
{
    loaded l =
        load("rule r: Relu(@x) > Sigmoid => ElementwiseChain(@x) {expr = \"sigmoid(relu(x0))\"}\n"
             "  where numel(@x) > 100000\n");
    pv_options opts = {.attempts = 50};
    pv_result res;
    pv_prove(l.rs->rules[0], &opts, &res);
    CHECK_INT(res.verdict, PV_UNPROVEN);
    CHECK_INT(res.attempts, 50);
    CHECK_INT(res.instances, 0);
    pv_result_free(&res);
    unload(&l);
}

int main(void)
{
    RUN(test_solver);
    RUN(test_solver_ranges);
    RUN(test_shape_solver);
    RUN(test_dim_solver);
    RUN(test_generator_deterministic);
    RUN(test_instances);
    RUN(test_counterexample);
    RUN(test_unproven);
    RUN(test_judge);
    RUN(test_input_variants);
    return unit_finish();
}
