/* Canonicalization: a fixed point (canon of canon is byte-identical), deterministic (twice from
 * the same text gives the same text), and semantics-preserving (the canonical form computes what
 * the original does, exactly: folding runs the same CPU kernels), on the example models, the
 * golden inputs of this folder and random graphs of the things canon rewrites. */
#include "canon/canon.h"
#include "runtime/runtime.h"
#include "tests/matcher/graphkit.h"
#include "tests/unit.h"

#include <math.h>

static ir_graph *load(const char *path)
{
    dg_context *dg = dg_new();
    ir_graph *g = ir_load_text(path, dg);
    if (!g)
        dg_print(dg, stderr);
    dg_free(dg);
    FR_CHECK(g != NULL);
    return g;
}

static void canonicalize(ir_graph *g, cn_report *rep)
{
    dg_context *dg = dg_new();
    cn_options o = cn_options_default();
    o.check_marks = true; /* every change a step makes is one it recorded */
    bool ok = cn_canonicalize(g, &o, rep, dg);
    if (!ok)
        dg_print(dg, stderr);
    CHECK(ok);
    dg_free(dg);
}

static void check_stats(const ir_stats *got, const ir_stats *want)
{
    CHECK_INT(got->nodes, want->nodes);
    CHECK_INT(got->kernels, want->kernels);
    CHECK_INT(got->bytes, want->bytes);
    CHECK_INT(got->unsized_values, want->unsized_values);
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        CHECK_INT(got->per_op[op], want->per_op[op]);
}

/* Canonicalizes g, and a second copy of its text with whole rounds (cn_options.whole_rounds):
 * the shortcuts (validation of what a round changed, steps skipped) give the same graph, the same
 * types and the same report. The statistics canon counts of the graph as given
 * (cn_options.stats_before) are ir_compute_stats's. */
static void canonicalize_both_ways(ir_graph *g, cn_report *rep, ir_graph *copy)
{
    dg_context *dg = dg_new();
    cn_options o = cn_options_default(), whole = o;
    whole.whole_rounds = true;
    o.check_marks = true; /* every change a step makes is one it recorded */
    ir_stats want, got, wgot;
    ir_compute_stats(g, &want);
    memset(&got, 0xff, sizeof got);
    memset(&wgot, 0xff, sizeof wgot);
    o.stats_before = &got;
    whole.stats_before = &wgot;
    cn_report wrep;
    bool ok = cn_canonicalize(g, &o, rep, dg) && cn_canonicalize(copy, &whole, &wrep, dg);
    if (!ok)
        dg_print(dg, stderr);
    CHECK(ok);
    dg_free(dg);
    check_stats(&got, &want);
    check_stats(&wgot, &want);
    char *a = gk_state_text(g), *b = gk_state_text(copy);
    CHECK_STR(a, b);
    CHECK_INT(rep->folded, wrep.folded);
    CHECK_INT(rep->removed, wrep.removed);
    CHECK_INT(rep->merged, wrep.merged);
    CHECK_INT(rep->respelled, wrep.respelled);
    CHECK_INT(rep->dead, wrep.dead);
    CHECK_INT(rep->rounds, wrep.rounds);
    free(a);
    free(b);
}

/* The sizes of the symbolic dims of the golden files. */
static const rt_dim golden_dims[] = {{"batch", 2}, {"S", 3}, {"P", 4}};

/* Largest |a - b| over every output (NaN where one is NaN and the other is not). */
static double difference(ir_graph *a, ir_graph *b)
{
    rt_result ra, rb;
    /* the golden dims the graph has (binding one it lacks is an error) */
    rt_dim dims[FR_COUNT_OF(golden_dims)];
    rt_options ro = {.seed = 0, .dims = dims, .ndims = 0};
    for (size_t i = 0; i < FR_COUNT_OF(golden_dims); i++)
        if (ir_symbol_lookup(a, golden_dims[i].name) >= 0)
            dims[ro.ndims++] = golden_dims[i];
    dg_context *dg = dg_new();
    if (!rt_run_cpu(a, NULL, 0, &ro, &ra, dg) || !rt_run_cpu(b, NULL, 0, &ro, &rb, dg)) {
        dg_print(dg, stderr);
        abort();
    }
    dg_free(dg);
    double worst = 0;
    FR_CHECK(ra.noutputs == rb.noutputs);
    for (size_t i = 0; i < ra.noutputs; i++) {
        size_t n = rt_tensor_numel(&ra.outputs[i]);
        FR_CHECK(n == rt_tensor_numel(&rb.outputs[i]));
        for (size_t k = 0; k < n; k++) {
            double x = rt_tensor_get(&ra.outputs[i], k), y = rt_tensor_get(&rb.outputs[i], k);
            if (isnan(x) != isnan(y))
                return NAN;
            if (!isnan(x) && fabs(x - y) > worst)
                worst = fabs(x - y);
        }
    }
    rt_result_free(&ra);
    rt_result_free(&rb);
    return worst;
}

/* The checks on one graph file; `run` also compares outputs. */
static void check_file(const char *path, bool run)
{
    ir_graph *g = load(path), *again = load(path), *whole = load(path);
    cn_report rep;
    canonicalize_both_ways(g, &rep, whole);
    ir_graph_free(whole);
    canonicalize(again, &rep);
    char *first = gk_graph_text(g), *second = gk_graph_text(again);
    CHECK_STR(first, second); /* deterministic */
    /* a fixed point: the text of the canonical form, parsed and canonicalized, prints the same
     * (constants folded to data are compared through the same graph, which keeps them) */
    canonicalize(again, &rep);
    char *third = gk_graph_text(again);
    CHECK_STR(third, first);
    CHECK_INT(rep.folded + rep.removed + rep.merged + rep.respelled + rep.dead, 0);
    CHECK_INT(rep.rounds, 1);
    if (run) {
        ir_graph *original = load(path);
        double d = difference(original, g);
        if (!(d == 0))
            fprintf(stderr, "%s: canonical form differs by %g\n", path, d);
        CHECK(d == 0);
        ir_graph_free(original);
    }
    free(first);
    free(second);
    free(third);
    ir_graph_free(g);
    ir_graph_free(again);
}

static void test_examples(void)
{
    check_file("../../examples/resnet_block.graph", true);
    check_file("../../examples/bert_layer.graph", true);
    check_file("../../examples/conformer.graph", true);
    check_file("../../examples/resnet50.graph", false);
    check_file("../../examples/bert_base.graph", false);
    check_file("../../examples/qwen2.graph", false);
}

static void test_goldens(void)
{
    check_file("fold.graph", true);
    check_file("cse.graph", true);
    check_file("spell.graph", true);
    check_file("declared.graph", true);
    check_file("fold_stops.graph", false); /* nothing can run it: its Reshape does not fit */
    check_file("symbolic.graph", true);
    check_file("through.graph", true);
    check_file("output_noop.graph", true);
    check_file("qdq.graph", true);
    check_file("unstack.graph", true);
    check_file("unit_transpose.graph", true);
    check_file("fold_castlike.graph", false); /* symbolic dims: nothing binds them here */
    check_file("transpose_pair.graph", true);
    check_file("unit_reduce.graph", true);
    check_file("noops.graph", true);
    check_file("noops_expand.graph", true);
    check_file("noops_expand_dynamic.graph", false); /* T: not a golden dim */
    check_file("range_symbolic.graph", true);
    check_file("reshape_output.graph", false); /* a, b, c: not golden dims */
    check_file("cse_qdq.graph", true);
    check_file("cse_splat.graph", true);
    check_file("spell_kt_view.graph", true);
    check_file("bn_view.graph", true);
}

/* The printed canonical form parses back to a graph that canon leaves alone: literals (folded
 * small constants, new axes) round-trip through the text. */
static void test_text_round_trip(void)
{
    /* symbolic.graph: dim expressions (`batch * 12`, `P + S`) print and parse back too */
    static const char *const files[] = {"spell.graph", "symbolic.graph", "qdq.graph"};
    for (size_t i = 0; i < FR_COUNT_OF(files); i++) {
        ir_graph *g = load(files[i]);
        cn_report rep;
        canonicalize(g, &rep);
        char *text = gk_graph_text(g);
        gk_graph *t = gk_parse(text);
        canonicalize(t->g, &rep);
        CHECK_INT(rep.folded + rep.removed + rep.merged + rep.respelled + rep.dead, 0);
        char *back = gk_graph_text(t->g);
        CHECK_STR(back, text);
        free(back);
        free(text);
        gk_free(t);
        ir_graph_free(g);
    }
}

/* Random graphs of no-ops, duplicates, constant subgraphs and respellings around real ops: the
 * canonical form computes exactly what the original does, and is a fixed point. */
static void test_random(void)
{
    uint64_t seed = 7;
    for (int trial = 0; trial < 40; trial++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        fprintf(f,
                "graph g {\n  input x : f32[2,3,4]\n  const c : f32[4] = random(seed=%d)\n"
                "  const two : f32[] = 2.0\n  const ax : i64[1] = 2\n  const shp : i64[3] = "
                "[2,3,4]\n  const off : bool[] = 0\n  v0 = Relu(x)\n",
                trial);
        int n = 1;
        for (int step = 0; step < 14; step++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int a = (int)((seed >> 33) % (uint64_t)n), b = (int)((seed >> 40) % (uint64_t)n);
            switch ((seed >> 50) % 10) {
            case 0: fprintf(f, "  v%d = Identity(v%d)\n", n, a); break;
            case 1: fprintf(f, "  v%d = Dropout(v%d, two, off)\n", n, a); break;
            case 2: fprintf(f, "  v%d = Add(v%d, v%d)\n", n, a, b); break;
            case 3: fprintf(f, "  v%d = Mul(v%d, v%d)\n", n, a, a); break;
            case 4:
                fprintf(f, "  v%d_k = Mul(c, two)\n  v%d = Add(v%d, v%d_k)\n", n, n, a, n);
                break;
            case 5:
                fprintf(f, "  v%d_m = ReduceMean(v%d) {axes=[2], keepdims=1}\n", n, a);
                fprintf(f, "  v%d = Sub(v%d, v%d_m)\n", n, a, n);
                break;
            case 6:
                fprintf(f, "  v%d_m = ReduceMean(v%d, ax) {keepdims=1}\n", n, a);
                fprintf(f, "  v%d = Sub(v%d, v%d_m)\n", n, a, n);
                break;
            case 7: fprintf(f, "  v%d = Reshape(v%d, shp)\n", n, a); break;
            case 8: /* two Transposes that compose to the identity */
                fprintf(f, "  v%d_t = Transpose(v%d) {perm=[2,0,1]}\n", n, a);
                fprintf(f, "  v%d = Transpose(v%d_t) {perm=[1,2,0]}\n", n, n);
                break;
            default: fprintf(f, "  v%d = Softmax(v%d) {axis=2}\n", n, a); break;
            }
            n++;
        }
        fprintf(f, "  output v%d\n}\n", n - 1);
        fclose(f);
        gk_graph *t = gk_parse(text), *original = gk_parse(text), *whole = gk_parse(text);
        cn_report rep;
        canonicalize_both_ways(t->g, &rep, whole->g);
        gk_free(whole);
        double d = difference(original->g, t->g);
        CHECK(d == 0);
        char *once = gk_graph_text(t->g);
        canonicalize(t->g, &rep);
        char *twice = gk_graph_text(t->g);
        CHECK_STR(twice, once);
        if (!(d == 0) || strcmp(once, twice) != 0)
            fprintf(stderr, "trial %d:\n%s", trial, text);
        free(once);
        free(twice);
        gk_free(t);
        gk_free(original);
        free(text);
    }
}

/* The folding budget: a node with more output bytes than the budget stays; 0 folds nothing. */
static void test_budget(void)
{
    const char *text =
        "graph g {\n  input x : f32[8]\n  const a : f32[8] = 1.0\n"
        "  const b : f32[8] = 2.0\n  s = Add(a, b)\n  y = Mul(x, s)\n  output y\n}\n";
    cn_report rep;
    dg_context *dg = dg_new();
    for (int i = 0; i < 3; i++) {
        gk_graph *t = gk_parse(text);
        cn_options o = {.fold_budget = i == 0 ? 32 : i == 1 ? 31 : 0};
        CHECK(cn_canonicalize(t->g, &o, &rep, dg));
        CHECK_INT(rep.folded, i == 0);
        CHECK_INT(t->g->nodes.len, i == 0 ? 1 : 2);
        gk_free(t);
    }
    dg_free(dg);
}

/* Constants merged by value whatever their spelling (docs/canon.md, "Common subexpressions"): b
 * draws what a draws (seed 7) and merges; c (seed 8) stays; z (random integers in [0, 1): zeros)
 * and zl (written out) are the same bytes, and so are the splats big and bigl (all 5); p and q share
 * their type and first element (what constants are compared by first) but differ after it. The
 * random() constants are drawn for the comparison, not stored in the graph. */
static void test_cse_constants(void)
{
    const char *text = "graph g {\n"
                       "  input  x : f32[4]\n"
                       "  input  xi : i64[3]\n"
                       "  input  xj : i32[32]\n"
                       "  input  xp : f32[3]\n"
                       "  const  a : f32[4] = random(seed=7)\n"
                       "  const  b : f32[4] = random(seed=7)\n"
                       "  const  c : f32[4] = random(seed=8)\n"
                       "  const  z : i64[3] = random(seed=1, lo=0, hi=1)\n"
                       "  const  zl : i64[3] = [0, 0, 0]\n"
                       "  const  big : i32[32] = random(seed=3, lo=5, hi=6)\n"
                       "  const  bigl : i32[32] = 5\n"
                       "  const  p : f32[3] = [1, 2, 3]\n"
                       "  const  q : f32[3] = [1, 2, 4]\n"
                       "  s1 = Add(x, a)\n"
                       "  s2 = Sub(x, b)\n"
                       "  s3 = Mul(x, c)\n"
                       "  t1 = Add(xi, z)\n"
                       "  t2 = Mul(xi, zl)\n"
                       "  u1 = Add(xj, big)\n"
                       "  u2 = Mul(xj, bigl)\n"
                       "  v1 = Add(xp, p)\n"
                       "  v2 = Mul(xp, q)\n"
                       "  output s1\n"
                       "  output s2\n"
                       "  output s3\n"
                       "  output t1\n"
                       "  output t2\n"
                       "  output u1\n"
                       "  output u2\n"
                       "  output v1\n"
                       "  output v2\n"
                       "}\n";
    gk_graph *t = gk_parse(text);
    dg_context *dg = dg_new();
    cn_options o = cn_options_default();
    cn_report rep;
    CHECK(cn_canonicalize(t->g, &o, &rep, dg));
    CHECK_INT(rep.merged, 3);
    static const char *const reads[][2] = {{"s1", "a"},   {"s2", "a"}, {"s3", "c"},
                                           {"t1", "z"},   {"t2", "z"}, {"u1", "big"},
                                           {"u2", "big"}, {"v1", "p"}, {"v2", "q"}};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        ir_value *v = ir_find_value(t->g, reads[i][0]);
        CHECK(v != NULL && v->producer != NULL);
        if (v && v->producer)
            CHECK_STR(v->producer->inputs[1]->name, reads[i][1]);
    }
    for (size_t i = 0; i < t->g->values.len; i++) {
        const ir_value *v = t->g->values.items[i];
        if (v->kind == IR_VALUE_CONST && v->konst && v->konst->kind == IR_CONST_RANDOM)
            CHECK(v->konst->data == NULL);
    }
    dg_free(dg);
    gk_free(t);
}

/* A constant that common subexpressions merge many copies into gains all their readers in one
 * round: its use list is built once, not once per reader (which took memory quadratic in them:
 * 1.1 GB for a 126k-node LLaMA export whose scalar constants are repeated in every layer). */
static void test_cse_many_readers(void)
{
    enum { N = 4000 };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "graph g {\n  input  x : f32[2]\n");
    for (int i = 0; i < N; i++)
        fprintf(f, "  const  c%d : f32[2] = [1, 2]\n  y%d = Add(x, c%d)\n  output y%d\n", i, i, i,
                i);
    fprintf(f, "}\n");
    fclose(f);
    gk_graph *t = gk_parse(text);
    size_t before = ar_bytes_used(t->g->arena);
    dg_context *dg = dg_new();
    cn_options o = cn_options_default();
    cn_report rep;
    CHECK(cn_canonicalize(t->g, &o, &rep, dg));
    CHECK_INT(rep.merged, N - 1);
    ir_value *c0 = ir_find_value(t->g, "c0");
    CHECK(c0 != NULL && c0->nuses == N);
    for (uint32_t u = 1; c0 && u < c0->nuses; u++)
        CHECK(c0->uses[u - 1]->id < c0->uses[u]->id);
    /* a list per reader: N * N / 2 pointers, 64 MB; one list: N pointers */
    CHECK(ar_bytes_used(t->g->arena) - before < (size_t)N * 1024);
    dg_free(dg);
    gk_free(t);
    free(text);
}

/* Merged duplicates that read a value with many readers, and merged values that many nodes
 * read: the round's use lists lose those readers in one pass per long list (update_uses), which
 * must leave what ir_compute_uses gives (check_marks compares them inside canon too). */
static void test_cse_hub_readers(void)
{
    enum { N = 40 };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "graph g {\n  input  x : f32[2]\n");
    for (int i = 0; i < N; i++) /* N copies of Neg(x): x has N readers, N - 1 of them go */
        fprintf(f, "  y%d = Neg(x)\n", i);
    for (int i = 0; i < N; i++) /* y1 has N readers, all re-pointed to y0 */
        fprintf(f, "  z%d = Add(y1, y%d)\n  output z%d\n", i, i % 3, i);
    fprintf(f, "}\n");
    fclose(f);
    gk_graph *t = gk_parse(text);
    dg_context *dg = dg_new();
    cn_options o = cn_options_default();
    o.check_marks = true;
    cn_report rep;
    CHECK(cn_canonicalize(t->g, &o, &rep, dg));
    CHECK(rep.merged >= N - 1);
    ir_graph *g = t->g;
    size_t nv = g->values.len, total = 0;
    uint32_t *counts = calloc(nv ? nv : 1, sizeof *counts);
    for (size_t i = 0; i < nv; i++)
        total += counts[i] = g->values.items[i]->nuses;
    ir_node **lists = malloc((total ? total : 1) * sizeof *lists);
    size_t at = 0;
    for (size_t i = 0; i < nv; i++)
        for (uint32_t u = 0; u < counts[i]; u++)
            lists[at++] = g->values.items[i]->uses[u];
    ir_compute_uses(g);
    at = 0;
    for (size_t i = 0; i < nv; i++) {
        const ir_value *v = g->values.items[i];
        CHECK_INT(v->nuses, counts[i]);
        for (uint32_t u = 0; u < v->nuses && u < counts[i]; u++)
            CHECK(v->uses[u] == lists[at + u]);
        at += counts[i];
    }
    ir_value *x = ir_find_value(g, "x");
    CHECK(x != NULL && x->nuses == 1);
    free(counts);
    free(lists);
    dg_free(dg);
    gk_free(t);
    free(text);
}

/* Common subexpressions among nodes a step changed in the round: both BatchNormalizations of a
 * view of x are respelled to read x (one spelling per op), and the two BatchNormalization(x, s,
 * b, m, v) they become merge in that round, then the Reshapes after them. cn_cse skips a node
 * whose least read operand lists no other reader of its op (a duplicate would be listed there)
 * only where the lists of the round's start cover every reader: here spell changed nodes in place
 * (the BNs now read x, the old BNs are Reshapes), so every node is keyed: 3 rounds, as whole
 * rounds give, not 4. */
static void test_cse_respelled(void)
{
    const char *text = "graph g {\n"
                       "  input  x : f32[2,5]\n"
                       "  const  s : f32[5] = random(seed=2, lo=0.5, hi=1.5)\n"
                       "  const  b : f32[5] = random(seed=3)\n"
                       "  const  m : f32[5] = random(seed=4)\n"
                       "  const  v : f32[5] = random(seed=5, lo=0.5, hi=1.5)\n"
                       "  const  sh : i64[4] = [2,1,1,5]\n"
                       "  r1 = Reshape(x, sh)\n"
                       "  t1 = Transpose(r1) {perm=[0,3,1,2]}\n"
                       "  y1 = BatchNormalization(t1, s, b, m, v)\n"
                       "  r2 = Reshape(x, sh)\n"
                       "  t2 = Transpose(r2) {perm=[0,3,1,2]}\n"
                       "  y2 = BatchNormalization(t2, s, b, m, v)\n"
                       "  z = Add(y1, y2)\n"
                       "  output z\n"
                       "}\n";
    gk_graph *a = gk_parse(text), *b = gk_parse(text);
    cn_report rep;
    canonicalize_both_ways(a->g, &rep, b->g);
    CHECK_INT(rep.respelled, 2);
    CHECK_INT(rep.merged, 4);
    CHECK_INT(rep.rounds, 3);
    gk_free(a);
    gk_free(b);
}

int main(void)
{
    RUN(test_goldens);
    RUN(test_text_round_trip);
    RUN(test_random);
    RUN(test_budget);
    RUN(test_cse_constants);
    RUN(test_cse_many_readers);
    RUN(test_cse_hub_readers);
    RUN(test_cse_respelled);
    RUN(test_examples);
    return unit_finish();
}
