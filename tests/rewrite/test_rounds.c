/* The rewrite driver's shortcuts give what the plain way gives: validating only what a round
 * changed (ir_validate_marked) against validating the whole graph after every round, on every
 * example model and every golden graph of the rewriter's and canon's suites, with the rule library
 * and the rewriter's test rules; and a commit that corrupts the graph is still caught. */
#include "canon/canon.h"
#include "tests/rewrite/rwkit.h"
#include "tests/unit.h"

#include <glob.h>

static char *report_text(const rw_report *rep)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rw_report_print(rep, f, RW_REPORT_JSON, true);
    rw_report_print(rep, f, RW_REPORT_TEXT, true);
    fclose(f);
    return text;
}

/* The graph at path, validated and canonicalized as `fuserule apply` has it; NULL when it does
 * not load (a golden of bad input). */
static ir_graph *load(const char *path)
{
    dg_context *dg = dg_new();
    ir_graph *g = ir_load_text(path, dg);
    cn_report crep;
    cn_options co = cn_options_default();
    if (g && !cn_canonicalize(g, &co, &crep, dg)) {
        dg_print(dg, stderr);
        abort();
    }
    dg_free(dg);
    return g;
}

typedef struct {
    dsl_ruleset *rs;
    mt_automaton *a;
} rule_set;

/* The rules of the files matching pattern, loaded together; a = NULL when they do not load. */
static rule_set load_rules(const char *pattern)
{
    glob_t gl;
    rule_set r = {0};
    if (glob(pattern, 0, NULL, &gl) != 0)
        return r;
    dg_context *dg = dg_new();
    r.a = rw_load_rules((const char *const *)gl.gl_pathv, gl.gl_pathc, &r.rs, dg);
    dg_free(dg);
    globfree(&gl);
    return r;
}

static void rules_done(rule_set *r)
{
    mt_free(r->a);
    dsl_ruleset_free(r->rs);
}

/* Applies the rules to the graph at path with opts; the state and report texts: the reports with
 * explain (NULL when the overlaps were only counted, count_overlaps) and the plain text report. */
static bool apply_file(const char *path, const rule_set *r, rw_options opts, char **state,
                       char **report, char **plain)
{
    ir_graph *g = load(path);
    if (!g)
        return false;
    dg_context *dg = dg_new();
    rw_report rep;
    opts.explain = !opts.count_overlaps;
    bool ok = rw_apply(g, r->a, &opts, &rep, dg);
    if (!ok) {
        fprintf(stderr, "%s:\n", path);
        dg_print(dg, stderr);
    }
    CHECK(ok);
    dg_free(dg);
    *state = gk_state_text(g);
    *report = opts.explain ? report_text(&rep) : NULL;
    *plain = plain_report(&rep);
    rw_report_free(&rep);
    ir_graph_free(g);
    return true;
}

/* Every graph of the pattern, with the rules: validating what each round changed gives the state
 * and report of validating the whole graph; counting the overlaps instead of recording each
 * (count_overlaps, as `fuserule apply` without --explain) gives the same state and text report. */
static size_t compare_on(const char *graphs, const rule_set *r)
{
    glob_t gl;
    size_t compared = 0;
    if (glob(graphs, 0, NULL, &gl) != 0)
        return 0;
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        const char *path = gl.gl_pathv[i];
        if (strstr(path, "qwen2.graph"))
            continue;
        rw_options whole = rw_options_default(), marked = whole;
        whole.validate_each = marked.validate_each = false;
        whole.whole_validation = true;
        rw_options counted = marked;
        counted.count_overlaps = true;
        char *s[3], *t[3], *p[3];
        if (!apply_file(path, r, whole, &s[0], &t[0], &p[0]))
            continue;
        apply_file(path, r, marked, &s[1], &t[1], &p[1]);
        apply_file(path, r, counted, &s[2], &t[2], &p[2]);
        if (strcmp(s[1], s[0]) != 0 || strcmp(t[1], t[0]) != 0)
            fprintf(stderr, "%s: differs from whole validation\n", path);
        if (strcmp(s[2], s[0]) != 0 || strcmp(p[2], p[0]) != 0)
            fprintf(stderr, "%s: differs with the overlaps counted\n", path);
        CHECK_STR(s[1], s[0]);
        CHECK_STR(t[1], t[0]);
        CHECK_STR(s[2], s[0]);
        CHECK_STR(p[2], p[0]);
        for (int k = 0; k < 3; k++) {
            free(s[k]);
            free(t[k]);
            free(p[k]);
        }
        compared++;
    }
    globfree(&gl);
    return compared;
}

static void test_same_as_whole(void)
{
    /* the library on every graph (but qwen2.graph: 3 GB and 13 CPU seconds an apply; tests/byteident
     * holds its output); the rewriter's test rules on its own goldens */
    static const struct {
        const char *rules, *graphs;
    } runs[] = {{"../../rules/*.rules", "../../examples/*.graph"},
                {"../../rules/*.rules", "*.graph"},
                {"../../rules/*.rules", "../canon/*.graph"},
                {"cnn.rules", "*.graph"},
                {"bert.rules", "*.graph"},
                {"guard.rules", "*.graph"},
                {"pred.rules", "*.graph"},
                {"user_add_relu.rules", "*.graph"},
                {"user_add_relu_plain.rules", "*.graph"}};
    size_t compared = 0;
    for (size_t i = 0; i < FR_COUNT_OF(runs); i++) {
        rule_set r = load_rules(runs[i].rules);
        CHECK(r.a != NULL);
        if (!r.a)
            continue;
        compared += compare_on(runs[i].graphs, &r);
        rules_done(&r);
    }
    fprintf(stderr, "%zu graph and rule set pairs\n", compared);
    CHECK(compared > 90); /* the globs found the graphs */
}

/* ---- a refined type flows on within the round ---- */

/* attention_mask_div's Attention knows y's rows (S) where the original's inference left them `?`
 * (tests/rewrite/refine_unknown_dims.graph), and gemm_bias_act fuses the GEMM reading y in the
 * same round: its plan inferred the GemmEpilogue on y's type as it was (`?`). Validation takes a
 * plan's type only while no operand's type changed (ir_validate_planned), so r is inferred again
 * after y's refinement: f32[1,2,S,4], as validating the whole graph gives. */
static const char refined_downstream[] = "graph refine_downstream {\n"
                                         "  input  q : f32[1,2,S,8]\n"
                                         "  input  k : f32[1,2,S,8]\n"
                                         "  input  v : f32[1,2,S,8]\n"
                                         "  const  bias : f32[1,1,8,8] = random(seed=3)\n"
                                         "  const  zero : i64[1] = 0\n"
                                         "  const  two : i64[1] = 2\n"
                                         "  const  three : i64[1] = 3\n"
                                         "  const  d : f32[] = 2.8284271247461903\n"
                                         "  const  w2 : f32[8,4] = random(seed=4)\n"
                                         "  const  b2 : f32[4] = random(seed=5)\n"
                                         "  shp = Shape(q)\n"
                                         "  n = Slice(shp, two, three)\n"
                                         "  m1 = Slice(bias, zero, n, two)\n"
                                         "  m2 = Slice(m1, zero, n, three)\n"
                                         "  kt = Transpose(k) {perm=[0,1,3,2]}\n"
                                         "  scores = MatMul(q, kt)\n"
                                         "  scaled = Div(scores, d)\n"
                                         "  masked = Add(scaled, m2)\n"
                                         "  probs = Softmax(masked) {axis=-1}\n"
                                         "  y = MatMul(probs, v)\n"
                                         "  p = MatMul(y, w2)\n"
                                         "  z = Add(p, b2)\n"
                                         "  r = Relu(z)\n"
                                         "  output r\n"
                                         "}\n";

/* graph_text canonicalized, then the rules applied with the validation after each round over
 * what it changed (whole false) or over the whole graph (whole true). */
static gk_graph *canon_and_apply(const char *graph_text, const rule_set *r, bool whole,
                                 rw_report *rep)
{
    gk_graph *t = gk_parse(graph_text);
    dg_context *dg = dg_new();
    cn_report crep;
    cn_options co = cn_options_default();
    CHECK(cn_canonicalize(t->g, &co, &crep, dg));
    rw_options opts = rw_options_default();
    opts.validate_each = false;
    opts.whole_validation = whole;
    CHECK(rw_apply(t->g, r->a, &opts, rep, dg));
    dg_free(dg);
    return t;
}

/* Applies `rules` to `graph` validating what each round changed, then validating the whole graph:
 * `rule` (and `also`, when not NULL, with both in round 1 and nothing in round 2) fires once, r's
 * type is `r_type`, and the two graphs are the same, types included. */
static void check_round_as_whole(const char *graph, const char *rules, const char *rule,
                                 const char *also, const char *r_type)
{
    rule_set r = load_rules(rules);
    CHECK(r.a != NULL);
    char *text[2];
    for (int whole = 0; whole < 2; whole++) {
        rw_report rep;
        gk_graph *t = canon_and_apply(graph, &r, whole, &rep);
        CHECK_INT(fired(&rep, rule), 1);
        if (also) {
            CHECK_INT(fired(&rep, also), 1);
            CHECK_INT(rep.rounds, 2);
        }
        char type[64];
        CHECK_STR(ir_type_format(t->g, ir_find_value(t->g, "r")->type, type, sizeof type),
                  r_type);
        text[whole] = gk_state_text(t->g);
        rw_report_free(&rep);
        gk_free(t);
    }
    CHECK_STR(text[0], text[1]);
    free(text[0]);
    free(text[1]);
    rules_done(&r);
}

static void test_refined_downstream(void)
{
    check_round_as_whole(refined_downstream, "../../rules/transformer.rules",
                         "attention_mask_div", "gemm_bias_act", "f32[1,2,S,4]");
}

/* The same refinement read by a node no rule fuses: r is a reader of the removed MatMul's output
 * y (now the Attention's), reading what it read, so validation skips its inference only while no
 * operand's type changed in the check (ir_validate_round); y's rows became S, so r is inferred
 * again: f32[1,2,S,8], as validating the whole graph gives. */
static void test_refined_reader(void)
{
    char graph[sizeof refined_downstream + 64];
    const char *tail = strstr(refined_downstream, "  p = MatMul(y, w2)\n");
    FR_CHECK(tail != NULL);
    snprintf(graph, sizeof graph, "%.*s  r = Sigmoid(y)\n  output r\n}\n",
             (int)(tail - refined_downstream), refined_downstream);
    check_round_as_whole(graph, "../../rules/transformer.rules", "attention_mask_div", NULL,
                         "f32[1,2,S,8]");
}

/* conv_bn's Conv reads fold_bn's new constants: its plan inferred it on their tentative values,
 * and the commit keeps that type for the round's validation (rw_commit's stood_for). With a
 * symbolic batch, strides and a bias the BN folds into, the types after validating what the round
 * changed are those of validating the whole graph. */
static const char conv_bn_block[] = "graph conv_bn_block {\n"
                                    "  input  x : f32[N,3,9,9]\n"
                                    "  const  w : f32[4,3,3,3] = random(seed=1)\n"
                                    "  const  b : f32[4] = random(seed=2)\n"
                                    "  const  g : f32[4] = random(seed=3, lo=0.5, hi=1.5)\n"
                                    "  const  beta : f32[4] = random(seed=4)\n"
                                    "  const  mean : f32[4] = random(seed=5)\n"
                                    "  const  var : f32[4] = random(seed=6, lo=0.5, hi=1.5)\n"
                                    "  c = Conv(x, w, b) {kernel_shape=[3,3], strides=[2,2]}\n"
                                    "  n = BatchNormalization(c, g, beta, mean, var)\n"
                                    "  r = Relu(n)\n"
                                    "  output r\n"
                                    "}\n";

static void test_folded_constants_planned(void)
{
    check_round_as_whole(conv_bn_block, "../../rules/cnn.rules", "conv_bn", NULL, "f32[N,4,4,4]");
}

/* ---- a corrupted commit is caught ---- */

typedef enum { CORRUPT_ATTR, CORRUPT_CYCLE, CORRUPT_READER } corruption;

typedef struct {
    corruption how;
    int commits;
} corrupter;

/* After the first rewrite: an attribute the fused op does not have; the fused node reading its
 * own output; or a reader of the fused node's output reading a value no node defines. */
static void corrupt(ir_graph *g, ir_node *fused, void *arg)
{
    corrupter *c = arg;
    if (!fused || c->commits++)
        return;
    if (c->how == CORRUPT_ATTR) {
        ir_set_attr_int(g, fused, "no_such_attribute", 1);
    } else if (c->how == CORRUPT_CYCLE) {
        fused->inputs[0] = fused->outputs[0];
    } else {
        ir_value *v = fused->outputs[0];
        ir_value *stray = ar_alloc(g->arena, sizeof *stray);
        *stray = *v;
        stray->name = "stray";
        stray->producer = NULL;
        stray->kind = IR_VALUE_INPUT;
        for (size_t i = 0; i < g->nodes.len; i++) {
            ir_node *n = g->nodes.items[i];
            for (uint32_t k = 0; !n->dead && k < n->ninputs; k++)
                if (n->inputs[k] == v)
                    n->inputs[k] = stray;
        }
    }
}

static const char two_blocks[] = "graph g {\n"
                                 "  input  x : f32[1,4,6,6]\n"
                                 "  const  w : f32[4,4,3,3] = random(seed=1)\n"
                                 "  const  v : f32[4,4,3,3] = random(seed=2)\n"
                                 "  c = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
                                 "  r = Relu(c)\n"
                                 "  d = Conv(r, v) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
                                 "  s = Relu(d)\n"
                                 "  t = Sigmoid(s)\n"
                                 "  output t\n"
                                 "}\n";

static void test_corrupted_commit(void)
{
    rk_rules r = rules_from("rule conv_relu: Conv > Relu => FusedConvAct {act = Relu}\n");
    for (int how = CORRUPT_ATTR; how <= CORRUPT_READER; how++)
        for (int mode = 0; mode < 3; mode++) {
            gk_graph *t = gk_parse(two_blocks);
            rw_options opts = rw_options_default();
            opts.validate_each = mode == 2;
            opts.whole_validation = mode == 1;
            corrupter c = {.how = (corruption)how};
            opts.after_commit = corrupt;
            opts.after_commit_arg = &c;
            dg_context *dg = dg_new();
            rw_report rep;
            bool ok = rw_apply(t->g, r.a, &opts, &rep, dg);
            if (ok)
                fprintf(stderr, "corruption %d not caught (mode %d)\n", how, mode);
            CHECK(!ok);
            CHECK(dg_has_errors(dg));
            CHECK_INT(c.commits, mode == 2 ? 1 : 2); /* caught at once, or after the round */
            rw_report_free(&rep);
            dg_free(dg);
            gk_free(t);
        }
    rules_free(&r);
}

/* A round that changed the graph gives its lists' spare room back (round_end): the node and value
 * lists end as long as they are (compaction shortened them; their pages would stay resident into
 * the next rounds and the output), and the graph they leave is the same in every mode. */
static void test_lists_given_back(void)
{
    rk_rules r = rules_from("rule conv_relu: Conv > Relu => FusedConvAct {act = Relu}\n");
    char *state[3];
    for (int mode = 0; mode < 3; mode++) {
        gk_graph *t = gk_parse(two_blocks);
        rw_options opts = rw_options_default();
        opts.validate_each = mode == 2;
        opts.whole_validation = mode == 1;
        dg_context *dg = dg_new();
        rw_report rep;
        CHECK(rw_apply(t->g, r.a, &opts, &rep, dg));
        CHECK_INT(rep.rounds, 2);
        CHECK_INT(t->g->nodes.len, 3); /* two FusedConvAct and the Sigmoid */
        CHECK_INT(t->g->nodes.cap, t->g->nodes.len);
        CHECK_INT(t->g->values.cap, t->g->values.len);
        state[mode] = gk_state_text(t->g);
        rw_report_free(&rep);
        dg_free(dg);
        gk_free(t);
    }
    CHECK_STR(state[1], state[0]);
    CHECK_STR(state[2], state[0]);
    for (int mode = 0; mode < 3; mode++)
        free(state[mode]);
    rules_free(&r);
}

int main(void)
{
    RUN(test_same_as_whole);
    RUN(test_refined_downstream);
    RUN(test_refined_reader);
    RUN(test_corrupted_commit);
    RUN(test_folded_constants_planned);
    RUN(test_lists_given_back);
    return unit_finish();
}
