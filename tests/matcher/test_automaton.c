/* The matcher automaton on hand-written rules and graphs: one case that must match beside one that
 * must not, for every feature of the pattern language; near misses; the dump; the limits. */
#include "matcher/matcher.h"
#include "tests/matcher/graphkit.h"
#include "tests/matcher/naive.h"
#include "tests/matcher/rulekit.h"
#include "tests/unit.h"

#include <stdarg.h>

/* ---- helpers ---- */

/* Compiles the rules, matches node `at` and returns the number of matches of rule `which`. */
typedef struct {
    mt_automaton *a;
    mt_matcher *m;
    dg_context *dg;
} fixture;

static fixture compile(dsl_rule **rules, uint32_t n, bool explain)
{
    fixture f = {.dg = dg_new()};
    f.a = mt_compile_rules(rules, n, f.dg);
    f.m = mt_matcher_new(f.a, explain);
    return f;
}

static void done(fixture *f)
{
    mt_matcher_free(f->m);
    mt_free(f->a);
    dg_free(f->dg);
}

/* The matches at node `name` of rule `rule` (all rules when NULL). */
static size_t count_at(fixture *f, gk_graph *t, const char *name, const char *rule)
{
    mt_matcher_reset(f->m);
    mt_match_node(f->m, t->g, gk_node(t, name));
    size_t n, hits = 0;
    const mt_match *ms = mt_matches(f->m, &n);
    for (size_t i = 0; i < n; i++)
        hits += !rule || strcmp(ms[i].rule->name, rule) == 0;
    return hits;
}

static const mt_match *first_match(fixture *f, gk_graph *t, const char *name)
{
    mt_matcher_reset(f->m);
    mt_match_node(f->m, t->g, gk_node(t, name));
    size_t n;
    const mt_match *ms = mt_matches(f->m, &n);
    return n ? &ms[0] : NULL;
}

static const char *bound_name(const mt_match *m, const char *capture)
{
    dsl_capture *c = rk_capture(m->rule, capture);
    return c && m->values[c->node->id] ? m->values[c->node->id]->name : "(none)";
}

static const char conv_graph[] =
    "graph g {\n"
    "  input  x : f32[1,8,8,8] NCHW\n"
    "  const  w : f32[8,8,3,3] = random(seed=1)\n"
    "  const  w2 : f32[8,4,3,3] = random(seed=9)\n"
    "  const  s : f32[8] = random(seed=2, lo=0.5, hi=1.5)\n"
    "  const  b : f32[8] = random(seed=3)\n"
    "  const  mu : f32[8] = random(seed=4)\n"
    "  const  var : f32[8] = random(seed=5, lo=0.5, hi=1.5)\n"
    "  c1 = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
    "  b1 = BatchNormalization(c1, s, b, mu, var)\n"
    "  r1 = Relu(b1)\n"
    "  c2 = Conv(r1, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
    "  r2 = Relu(c2)\n"
    "  c3 = Conv(r2, w2) {kernel_shape=[3,3], pads=[1,1,1,1], group=2}\n"
    "  a3 = Add(x, c3)\n"
    "  r3 = Sigmoid(a3)\n"
    "  a4 = Add(c3, r3)\n"
    "  m4 = Mul(a4, a4)\n"
    "  m5 = Mul(a4, r3)\n"
    "  output m4\n"
    "  output m5\n"
    "}\n";

/* ---- chains, op sets, optional ops ---- */

static void test_chain(void)
{
    rk_kit *k = rk_new();
    dsl_rule *cbr = rk_rule(k, "conv_bn_relu", 1,
                            rk_op(k, IR_OP_Relu, RK_OPEN, 1,
                                  rk_op(k, IR_OP_BatchNormalization, RK_OPEN, 1,
                                        rk_op(k, IR_OP_Conv, RK_OPEN, 0))));
    dsl_rule *cr = rk_rule(k, "conv_relu", 1,
                           rk_op(k, IR_OP_Relu, RK_OPEN, 1, rk_op(k, IR_OP_Conv, RK_OPEN, 0)));
    dsl_rule *rules[] = {cbr, cr};
    fixture f = compile(rules, 2, false);
    gk_graph *t = gk_parse(conv_graph);
    CHECK_INT(count_at(&f, t, "r1", "conv_bn_relu"), 1);
    CHECK_INT(count_at(&f, t, "r1", "conv_relu"), 0);
    CHECK_INT(count_at(&f, t, "r2", "conv_relu"), 1);
    CHECK_INT(count_at(&f, t, "r2", "conv_bn_relu"), 0);
    CHECK_INT(count_at(&f, t, "c2", NULL), 0); /* no rule is rooted at Conv */
    const mt_match *m = first_match(&f, t, "r1");
    CHECK(m && m->nodes[cbr->roots[0]->operands[0]->id] == gk_node(t, "b1"));
    CHECK(m && m->nodes[cbr->roots[0]->operands[0]->operands[0]->id] == gk_node(t, "c1"));
    done(&f);
    gk_free(t);
    rk_free(k);
}

static void test_op_sets_and_optional(void)
{
    rk_kit *k = rk_new();
    ir_op acts[] = {IR_OP_Relu, IR_OP_Sigmoid};
    dsl_rule *r = rk_rule(k, "conv_bn_act", 1,
                          rk_name(k,
                                  rk_opset(k, acts, 2, RK_OPEN, 1,
                                           rk_optional(rk_name(
                                               k, rk_op(k, IR_OP_BatchNormalization, RK_OPEN, 1,
                                                        rk_name(k, rk_op(k, IR_OP_Conv, RK_OPEN, 0), "c")),
                                               "bn"))),
                                  "a"));
    fixture f = compile(&r, 1, false);
    gk_graph *t = gk_parse(conv_graph);
    const mt_match *m = first_match(&f, t, "r1");
    CHECK(m != NULL);
    if (m) {
        CHECK_STR(bound_name(m, "bn"), "b1"); /* present before absent */
        CHECK_STR(bound_name(m, "c"), "c1");
    }
    m = first_match(&f, t, "r2");
    CHECK(m != NULL);
    if (m) {
        CHECK(m->nodes[rk_capture(r, "bn")->node->id] == NULL); /* absent */
        CHECK_STR(bound_name(m, "bn"), "c2");                  /* stands for its operand */
        CHECK_STR(bound_name(m, "c"), "c2");
    }
    CHECK_INT(count_at(&f, t, "r3", NULL), 0); /* Sigmoid(Add): no Conv below */
    done(&f);
    gk_free(t);
    rk_free(k);
}

/* ---- commutative ops, repeated captures ---- */

static void test_commutative(void)
{
    rk_kit *k = rk_new();
    dsl_rule *r = rk_rule(k, "conv_add", 1,
                          rk_op(k, IR_OP_Add, RK_CLOSED, 2, rk_name(k, rk_op(k, IR_OP_Conv, RK_OPEN, 0), "c"),
                                rk_leaf(k, "@res")));
    fixture f = compile(&r, 1, false);
    gk_graph *t = gk_parse(conv_graph);
    /* a3 = Add(x, c3): only the swapped order matches */
    const mt_match *m = first_match(&f, t, "a3");
    CHECK(m != NULL);
    if (m) {
        CHECK_STR(bound_name(m, "res"), "x");
        CHECK_INT(m->nkey, 1);
        CHECK_INT(m->key[0], 1);
    }
    /* a4 = Add(c3, r3): straight */
    m = first_match(&f, t, "a4");
    CHECK(m != NULL && strcmp(bound_name(m, "res"), "r3") == 0 && m->key[0] == 0);
    done(&f);
    gk_free(t);
    rk_free(k);
}

static void test_repeated_capture(void)
{
    rk_kit *k = rk_new();
    dsl_pattern *x = rk_leaf(k, "@x");
    dsl_rule *sq = rk_rule(k, "square", 1, rk_op(k, IR_OP_Mul, RK_CLOSED, 2, x, x));
    fixture f = compile(&sq, 1, false);
    gk_graph *t = gk_parse(conv_graph);
    CHECK_INT(count_at(&f, t, "m4", NULL), 1);
    CHECK_INT(count_at(&f, t, "m5", NULL), 0);
    done(&f);
    gk_free(t);
    rk_free(k);
}

/* ---- predicates, attributes, guards ---- */

static void test_predicates(void)
{
    rk_kit *k = rk_new();
    dsl_pattern *w = rk_leaf(k, "@w");
    w->preds.is_const = true;
    w->preds.rank = 4;
    dsl_rule *cw = rk_rule(k, "conv_const_w", 1,
                           rk_op(k, IR_OP_Relu, RK_OPEN, 1,
                                 rk_op(k, IR_OP_Conv, RK_OPEN, 2, rk_leaf(k, "@x"), w)));
    dsl_pattern *x2 = rk_leaf(k, "@x");
    x2->preds.dtype = IR_F16;
    dsl_rule *f16 = rk_rule(k, "conv_f16", 1,
                            rk_op(k, IR_OP_Relu, RK_OPEN, 1, rk_op(k, IR_OP_Conv, RK_OPEN, 1, x2)));
    dsl_pattern *grouped = rk_attr_int(k, rk_op(k, IR_OP_Conv, RK_OPEN, 0), "group", 2);
    dsl_rule *g2 = rk_rule(k, "grouped", 1, rk_op(k, IR_OP_Add, RK_OPEN, 1, grouped));
    dsl_pattern *ungrouped = rk_attr_int(k, rk_op(k, IR_OP_Conv, RK_OPEN, 0), "group", 1);
    dsl_rule *g1 = rk_rule(k, "ungrouped", 1, rk_op(k, IR_OP_Add, RK_OPEN, 1, ungrouped));
    dsl_rule *rules[] = {cw, f16, g2, g1};
    fixture f = compile(rules, 4, false);
    gk_graph *t = gk_parse(conv_graph);
    CHECK_INT(count_at(&f, t, "r2", "conv_const_w"), 1);
    CHECK_INT(count_at(&f, t, "r2", "conv_f16"), 0);
    CHECK_INT(count_at(&f, t, "a4", "grouped"), 1);   /* c3 has group 2 */
    CHECK_INT(count_at(&f, t, "a4", "ungrouped"), 0); /* and the default 1 does not apply */
    CHECK_INT(count_at(&f, t, "a3", "grouped"), 1);   /* Add(x, c3): either operand */
    done(&f);
    gk_free(t);
    rk_free(k);
}

static void test_guard(void)
{
    rk_kit *k = rk_new();
    dsl_pattern *c = rk_name(k, rk_op(k, IR_OP_Conv, RK_OPEN, 0), "c");
    dsl_rule *r = rk_rule(k, "residual", 1, rk_op(k, IR_OP_Add, RK_CLOSED, 2, c, rk_leaf(k, "@res")));
    r->guard = rk_bin(k, DSL_OP_EQ, rk_call(k, DSL_FN_SHAPE, rk_ref(k, rk_capture(r, "res")), NULL),
                      rk_call(k, DSL_FN_SHAPE, rk_ref(k, rk_capture(r, "c")), NULL));
    const char *text = "graph g {\n"
                       "  input  x : f32[1,4,8,8]\n"
                       "  input  big : f32[2,4,8,8]\n"
                       "  const  w : f32[4,4,1,1] = random(seed=1)\n"
                       "  c = Conv(x, w) {kernel_shape=[1,1]}\n"
                       "  same = Add(c, x)\n"
                       "  bcast = Add(c, big)\n"
                       "  output same\n"
                       "  output bcast\n"
                       "}\n";
    gk_graph *t = gk_parse(text);
    fixture f = compile(&r, 1, true);
    CHECK_INT(count_at(&f, t, "same", NULL), 1);
    CHECK_INT(count_at(&f, t, "bcast", NULL), 0);
    size_t n;
    const mt_near_miss *miss = mt_near_misses(f.m, &n);
    CHECK_INT(n, 1);
    if (n)
        CHECK(strstr(miss[0].reason, "guard") != NULL);
    done(&f);
    gk_free(t);
    rk_free(k);
}

/* ---- horizontal patterns ---- */

static const char qkv_graph[] = "graph g {\n"
                                "  input  x : f32[2,16]\n"
                                "  input  y : f32[16,8]\n"
                                "  const  wq : f32[16,8] = random(seed=1)\n"
                                "  const  wk : f32[16,4] = random(seed=2)\n"
                                "  const  wv : f32[16,4] = random(seed=3)\n"
                                "  q = MatMul(x, wq)\n"
                                "  kk = MatMul(x, wk)\n"
                                "  v = MatMul(x, wv)\n"
                                "  z = MatMul(x, y)\n"
                                "  output q\n"
                                "  output kk\n"
                                "  output v\n"
                                "  output z\n"
                                "}\n";

static dsl_rule *qkv_rule(rk_kit *k)
{
    dsl_pattern *x = rk_leaf(k, "@x");
    dsl_pattern *w[3];
    const char *names[] = {"@wq", "@wk", "@wv"};
    for (int i = 0; i < 3; i++) {
        w[i] = rk_leaf(k, names[i]);
        w[i]->preds.is_const = true;
    }
    return rk_rule(k, "qkv", 3, rk_op(k, IR_OP_MatMul, RK_CLOSED, 2, x, w[0]),
                   rk_op(k, IR_OP_MatMul, RK_CLOSED, 2, x, w[1]),
                   rk_op(k, IR_OP_MatMul, RK_CLOSED, 2, x, w[2]));
}

static void test_horizontal(void)
{
    rk_kit *k = rk_new();
    dsl_rule *r = qkv_rule(k);
    fixture f = compile(&r, 1, false);
    gk_graph *t = gk_parse(qkv_graph);
    const mt_match *m = first_match(&f, t, "q");
    CHECK(m != NULL);
    if (m) {
        CHECK(m->nodes[r->roots[1]->id] == gk_node(t, "kk"));
        CHECK(m->nodes[r->roots[2]->id] == gk_node(t, "v"));
        CHECK_STR(bound_name(m, "wk"), "wk");
    }
    /* from q, the roots may be (kk, v) or (v, kk); z's weight is not a constant */
    CHECK_INT(count_at(&f, t, "q", NULL), 2);
    CHECK_INT(count_at(&f, t, "z", NULL), 0);
    done(&f);
    gk_free(t);
    rk_free(k);
}

/* ---- near misses and the dump ---- */

static void test_explain(void)
{
    rk_kit *k = rk_new();
    dsl_rule *cbr = rk_rule(k, "conv_bn_relu", 1,
                            rk_op(k, IR_OP_Relu, RK_OPEN, 1,
                                  rk_op(k, IR_OP_BatchNormalization, RK_OPEN, 1,
                                        rk_op(k, IR_OP_Conv, RK_OPEN, 0))));
    fixture f = compile(&cbr, 1, true);
    gk_graph *t = gk_parse(conv_graph);
    CHECK_INT(count_at(&f, t, "r2", NULL), 0);
    size_t n;
    const mt_near_miss *miss = mt_near_misses(f.m, &n);
    CHECK_INT(n, 1);
    if (n) {
        CHECK_STR(miss[0].reason, "`BatchNormalization`: expected BatchNormalization, found 'c2' (Conv)");
        CHECK(miss[0].root == gk_node(t, "r2"));
    }
    CHECK_INT(count_at(&f, t, "r1", NULL), 1);
    mt_near_misses(f.m, &n);
    CHECK_INT(n, 0);
    done(&f);
    gk_free(t);
    rk_free(k);
}

static void test_dump_and_sharing(void)
{
    rk_kit *k = rk_new();
    dsl_rule *rules[3];
    ir_op below[] = {IR_OP_Conv, IR_OP_BatchNormalization, IR_OP_Add};
    const char *names[] = {"relu_conv", "relu_bn", "relu_add"};
    for (int i = 0; i < 3; i++)
        rules[i] = rk_rule(k, names[i], 1,
                           rk_op(k, IR_OP_Relu, RK_OPEN, 1, rk_op(k, below[i], RK_OPEN, 0)));
    fixture f = compile(rules, 3, false);
    mt_stats s;
    mt_get_stats(f.a, &s);
    CHECK_INT(s.rules, 3);
    CHECK_INT(s.root_ops, 1);
    /* per rule: load r1, op r1, accept (Relu's arity is the catalog's); the load is shared */
    CHECK_INT(s.checks, 9);
    CHECK_INT(s.trie_nodes, 7);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    mt_dump(f.a, out);
    fclose(out);
    CHECK(strstr(text, "switch r1:") != NULL);
    CHECK(strstr(text, "accept relu_bn") != NULL);
    CHECK(strstr(text, "x3") != NULL); /* the shared load */
    free(text);
    done(&f);
    rk_free(k);
}

/* ---- arity, outputs, limits ---- */

static void test_arity_and_outputs(void)
{
    rk_kit *k = rk_new();
    /* Conv(@x, @w) closed: a conv with a bias has 3 inputs and does not match */
    dsl_rule *closed = rk_rule(k, "closed", 1,
                               rk_op(k, IR_OP_Relu, RK_OPEN, 1,
                                     rk_op(k, IR_OP_Conv, RK_CLOSED, 2, rk_leaf(k, "@x"),
                                           rk_leaf(k, "@w"))));
    dsl_rule *split = rk_rule(k, "split_relu", 1,
                              rk_op(k, IR_OP_Relu, RK_OPEN, 1, rk_op(k, IR_OP_Split, RK_OPEN, 0)));
    dsl_rule *rules[] = {closed, split};
    fixture f = compile(rules, 2, false);
    const char *text = "graph g {\n"
                       "  input  x : f32[1,4,8,8]\n"
                       "  const  w : f32[4,4,1,1] = random(seed=1)\n"
                       "  const  b : f32[4] = random(seed=2)\n"
                       "  const  sizes : i64[2] = [2, 2]\n"
                       "  c = Conv(x, w) {kernel_shape=[1,1]}\n"
                       "  cb = Conv(x, w, b) {kernel_shape=[1,1]}\n"
                       "  r = Relu(c)\n"
                       "  rb = Relu(cb)\n"
                       "  s0, s1 = Split(x, sizes) {axis=1}\n"
                       "  p0 = Relu(s0)\n"
                       "  p1 = Relu(s1)\n"
                       "  output r\n  output rb\n  output p0\n  output p1\n"
                       "}\n";
    gk_graph *t = gk_parse(text);
    CHECK_INT(count_at(&f, t, "r", "closed"), 1);
    CHECK_INT(count_at(&f, t, "rb", "closed"), 0);
    CHECK_INT(count_at(&f, t, "p0", "split_relu"), 1);
    CHECK_INT(count_at(&f, t, "p1", "split_relu"), 0); /* reads output 1 */
    done(&f);
    gk_free(t);
    rk_free(k);
}

static void test_too_many_variants(void)
{
    rk_kit *k = rk_new();
    /* eleven nested commutative Adds: 2^11 combinations */
    dsl_pattern *p = rk_leaf(k, "@x");
    for (int i = 0; i < 11; i++)
        p = rk_op(k, IR_OP_Add, RK_CLOSED, 2, p, rk_leaf(k, "_"));
    dsl_rule *r = rk_rule(k, "huge", 1, p);
    fixture f = compile(&r, 1, false);
    mt_stats s;
    mt_get_stats(f.a, &s);
    CHECK_INT(s.rules, 0);
    CHECK_INT(dg_error_count(f.dg), 1);
    done(&f);
    rk_free(k);
}

/* The automaton agrees with the reference matcher on the hand-written cases too. */
static void test_agrees_with_naive(void)
{
    rk_kit *k = rk_new();
    dsl_rule *r = qkv_rule(k);
    fixture f = compile(&r, 1, false);
    gk_graph *t = gk_parse(qkv_graph);
    ar_arena *arena = ar_new();
    for (size_t i = 0; i < t->g->nodes.len; i++) {
        ir_node *n = t->g->nodes.items[i];
        nv_matches want = {0};
        nv_match_rule(arena, t->g, r, 0, n, &want);
        mt_matcher_reset(f.m);
        mt_match_node(f.m, t->g, n);
        size_t got;
        const mt_match *ms = mt_matches(f.m, &got);
        CHECK_INT(got, want.len);
        for (size_t j = 0; j < got && j < want.len; j++) {
            CHECK_INT(ms[j].nkey, want.items[j].nkey);
            CHECK(memcmp(ms[j].values, want.items[j].values, r->nnodes * sizeof(ir_value *)) == 0);
        }
        vec_free(&want);
    }
    ar_free(arena);
    done(&f);
    gk_free(t);
    rk_free(k);
}

int main(void)
{
    RUN(test_chain);
    RUN(test_op_sets_and_optional);
    RUN(test_commutative);
    RUN(test_repeated_capture);
    RUN(test_predicates);
    RUN(test_guard);
    RUN(test_horizontal);
    RUN(test_explain);
    RUN(test_dump_and_sharing);
    RUN(test_arity_and_outputs);
    RUN(test_too_many_variants);
    RUN(test_agrees_with_naive);
    return unit_finish();
}
