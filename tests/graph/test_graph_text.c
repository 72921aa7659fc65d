/* The graph text form through the C API: parsing non-canonical text, printing, reparsing and
 * printing again; the structure the parser builds; stable topological order; validation of built
 * graphs; hostile input (deep nesting, text without a terminating NUL, random mutations). */
#include "base/check.h"
#include "ir/ir.h"
#include "ir/parse_internal.h"
#include "tests/matcher/graphkit.h"
#include "tests/unit.h"

#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------- */

static dg_source source(const char *path, const char *text)
{
    return (dg_source){path, text, strlen(text)};
}

static char *diagnostics_text(const dg_context *dg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dg_print(dg, f);
    fclose(f);
    return buf;
}

/* Parses (and validates) text that must be good; prints the diagnostics when it is not. */
static ir_graph *load(const dg_source *src, bool validate)
{
    dg_context *dg = dg_new();
    ir_graph *g = ir_parse(src, dg);
    if (g && validate && !ir_validate(g, dg)) {
        ir_graph_free(g);
        g = NULL;
    }
    if (!g) {
        char *text = diagnostics_text(dg);
        fprintf(stderr, "unexpected errors:\n%s", text);
        free(text);
    }
    dg_free(dg);
    return g;
}

/* print(parse(text)), or NULL when text does not load. */
static char *reformat(const char *text, bool validate)
{
    dg_source src = source("t.graph", text);
    ir_graph *g = load(&src, validate);
    if (!g)
        return NULL;
    char *out = gk_graph_text(g);
    ir_graph_free(g);
    return out;
}

/* Checks that text loads, prints as `expected`, and that the printed text prints back as itself. */
static void check_round_trip(const char *text, const char *expected, bool validate)
{
    char *once = reformat(text, validate);
    CHECK(once != NULL);
    if (!once)
        return;
    if (expected)
        CHECK_STR(once, expected);
    char *twice = reformat(once, validate);
    CHECK(twice != NULL);
    if (twice)
        CHECK_STR(twice, once);
    free(once);
    free(twice);
}

static ir_node *node_named(const ir_graph *g, const char *output)
{
    ir_value *v = ir_find_value(g, output);
    return v ? v->producer : NULL;
}

/* ---- round trips --------------------------------------------------------------------------- */

static void test_noncanonical_round_trip(void)
{
    const char *text = "   # a comment before the graph\n"
                       "\n"
                       "graph   g{\n"
                       "output y   # outputs may come first\n"
                       "  y = Add( r ,b )     # r and b are defined below\n"
                       "\n"
                       "r=Relu(c)\n"
                       "  c = Conv(x, w) {kernel_shape = [3, 3],\n"
                       "                  pads = [1, 1,\n"
                       "                          1, 1]}\n"
                       "\tconst w:f32[4,3,3,3]=random(seed=7,hi=0.5)\n"
                       "  input x : f32[1, 3, 8, 8]\n"
                       "  const b : f32[4,1,1] = [0.5, -0.25, 1e2, 3]\n"
                       "}"; /* no line break at the end */
    const char *canonical = "graph g {\n"
                            "  input  x : f32[1,3,8,8]\n"
                            "  const  w : f32[4,3,3,3] = random(seed=7, hi=0.5)\n"
                            "  const  b : f32[4,1,1] = [0.5,-0.25,100.0,3.0]\n"
                            "  c : f32[1,4,8,8] = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
                            "  r : f32[1,4,8,8] = Relu(c)\n"
                            "  y : f32[1,4,8,8] = Add(r, b)\n"
                            "  output y\n"
                            "}\n";
    check_round_trip(text, canonical, true);
}

/* Without validation: names and strings that need quoting and escapes, attributes the schema
 * does not know, extreme numbers, kernels. */
static void test_unvalidated_round_trip(void)
{
    const char *text =
        "graph \"g\\t1\" {\n"
        "  input \"a\\\"b\" : f32[\"N:0\",2]\n"
        "  input input2 : i8[*]\n"
        "  const c : f32[4] = [0.1, -0.0, 1e-300, 123456789.125]\n"
        "  const n : f32[3] = [inf, -inf, nan]\n"
        "  const i : i64[3] = [9007199254740992, -9007199254740992, 0]\n"
        "  const one : u8[5] = 255\n"
        "  y = Identity(\"a\\\"b\") {s=\"tab\\there\\nnl \\\\ \\x01 \\xff \xc3\xa9\", "
        "f=[1.5, 2], i=[], v=-7, e=1e-320, big=1e300} @\"k e r\"\n"
        "  z = Relu(y) @cpu.relu_v2\n"
        "  \"output\" = Clip(z, _, _)\n"
        "  output z, \"output\"\n"
        "}\n";
    char *once = reformat(text, false);
    CHECK(once != NULL);
    if (!once)
        return;
    CHECK(strstr(once, "graph \"g\\t1\" {\n") != NULL);
    CHECK(strstr(once, "input  \"a\\\"b\" : f32[\"N:0\",2]\n") != NULL);
    CHECK(strstr(once, "const  c : f32[4] = [0.1,-0.0,1e-300,123456789.125]\n") != NULL);
    CHECK(strstr(once, "const  n : f32[3] = [inf,-inf,nan]\n") != NULL);
    CHECK(strstr(once, "[9007199254740992,-9007199254740992,0]") != NULL);
    CHECK(strstr(once, "const  one : u8[5] = 255\n") != NULL);
    CHECK(strstr(once, "s=\"tab\\there\\nnl \\\\ \\x01 \\xff \xc3\xa9\"") != NULL);
    CHECK(strstr(once, "f=[1.5,2.0], i=[], v=-7, e=1e-320, big=1e+300} @\"k e r\"\n") != NULL);
    CHECK(strstr(once, "= Relu(y) @cpu.relu_v2\n") != NULL);
    CHECK(strstr(once, "  \"output\" = Clip(z, _, _)\n") != NULL);
    check_round_trip(once, once, false);
    free(once);
}

/* Doubles print in the fewest digits that read back exactly, in fixed notation for exponents
 * from -4 to 15. */
static void test_float_printing(void)
{
    static const struct {
        double value;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},          {1.0 / 3.0, "0.3333333333333333"}, {1e-5, "1e-05"},
        {1e16, "1e+16"},       {123.456, "123.456"},              {-2.5e-8, "-2.5e-08"},
        {1e-310, "1e-310"},    {5e-324, "5e-324"},                {1.7e308, "1.7e+308"},
        {65504, "65504.0"},    {0.000125, "0.000125"},            {100.0, "100.0"},
        {-0.0, "-0.0"},        {1e15, "1000000000000000.0"},     {0.3, "0.3"},
    };
    for (size_t i = 0; i < FR_COUNT_OF(cases); i++) {
        char text[256], want[64];
        snprintf(text, sizeof text,
                 "graph g {\n  input x : f32[1]\n  y = LeakyRelu(x) {alpha=%.17g}\n  output y\n}\n",
                 cases[i].value);
        snprintf(want, sizeof want, "{alpha=%s}\n", cases[i].text);
        char *printed = reformat(text, false);
        CHECK(printed && strstr(printed, want));
        if (printed && !strstr(printed, want))
            fprintf(stderr, "  %.17g printed as: %s", cases[i].value, strstr(printed, "{alpha"));
        dg_source again = source("f.graph", printed ? printed : "");
        ir_graph *g = printed ? load(&again, false) : NULL;
        const ir_attr *a = g ? ir_node_attr(node_named(g, "y"), "alpha") : NULL;
        CHECK(a && a->kind == IR_ATTR_FLOAT);
        CHECK(a && memcmp(&a->v.f, &cases[i].value, sizeof(double)) == 0); /* bit for bit */
        ir_graph_free(g);
        free(printed);
    }
}

/* ---- what the parser builds ---------------------------------------------------------------- */

static void test_structure(void)
{
    const char *text = "graph block {\n"
                       "  input x : f32[N,4] NC\n"
                       "  const hi : f32[] = 6.0\n"
                       "  y = Clip(x, _, hi)\n"
                       "  z = LeakyRelu(y) {alpha=1}\n"
                       "  t = Transpose(z) {perm=[]}\n"
                       "  k = Constant() {value_floats=[]}\n"
                       "  f = FusedConvAct(x, x) {act=\"Relu\"} @cpu.fused_conv_act\n"
                       "  output t, k, f\n"
                       "}\n";
    dg_source src = source("models/v1/block.graph", text);
    ir_graph *g = load(&src, false);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK_STR(g->name, "block");
    CHECK_STR(g->dir, "models/v1");
    CHECK(g->src == &src);
    CHECK_INT(g->inputs.len, 1);
    CHECK_INT(g->outputs.len, 3);
    ir_value *x = ir_find_value(g, "x");
    CHECK(x && x->kind == IR_VALUE_INPUT && x->type->rank == 2);
    CHECK(x && ir_dim_is_symbol(x->type->dims[0]) && x->type->dims[1] == 4);
    CHECK(x && x->type->layout == IR_LAYOUT_NC);
    CHECK(x && x->src_offset == (uint32_t)(strstr(text, "x :") - text) &&
          ir_value_src_len(&src, x) == 1);
    ir_value *hi = ir_find_value(g, "hi");
    CHECK(hi && hi->kind == IR_VALUE_CONST && hi->type->rank == 0);
    CHECK(hi && hi->konst->kind == IR_CONST_LITERAL && hi->konst->literal_count == 1);
    CHECK(hi && hi->konst->literal[0] == 6.0);

    ir_node *clip = node_named(g, "y");
    CHECK(clip && clip->op == IR_OP_Clip && clip->ninputs == 3);
    CHECK(clip && clip->inputs[0] == x && clip->inputs[1] == NULL && clip->inputs[2] == hi);
    CHECK(clip && clip->src_offset == (uint32_t)(strstr(text, "Clip") - text) &&
          clip->src_len == 4);
    /* the schema decides what the text cannot: alpha is a float, perm and value_floats lists */
    const ir_attr *alpha = ir_node_attr(node_named(g, "z"), "alpha");
    CHECK(alpha && alpha->kind == IR_ATTR_FLOAT && alpha->v.f == 1.0);
    CHECK(alpha && alpha->src_offset == (uint32_t)(strstr(text, "alpha") - text));
    const ir_attr *perm = ir_node_attr(node_named(g, "t"), "perm");
    CHECK(perm && perm->kind == IR_ATTR_INTS && perm->count == 0);
    const ir_attr *vf = ir_node_attr(node_named(g, "k"), "value_floats");
    CHECK(vf && vf->kind == IR_ATTR_FLOATS && vf->count == 0);
    ir_node *f = node_named(g, "f");
    CHECK(f && f->kernel && strcmp(ir_node_kernel(g, f), "cpu.fused_conv_act") == 0);
    const ir_attr *act = ir_node_attr(f, "act");
    CHECK(act && act->kind == IR_ATTR_STRING && strcmp(act->v.s, "Relu") == 0);
    ir_graph_free(g);

    dg_source here = source("here.graph", "graph g {\n  input x : f32[1]\n  output x\n}\n");
    g = load(&here, false);
    CHECK(g && strcmp(g->dir, ".") == 0);
    ir_graph_free(g);
}

/* Nodes are sorted topologically, keeping the file's order wherever that is legal. */
static void test_stable_topological_order(void)
{
    const char *text = "graph g {\n"
                       "  input x : f32[2]\n"
                       "  d = Relu(c)\n"
                       "  a = Relu(x)\n"
                       "  c = Relu(b)\n"
                       "  b = Relu(a)\n"
                       "  e = Relu(x)\n"
                       "  output d, e\n"
                       "}\n";
    dg_source src = source("t.graph", text);
    ir_graph *g = load(&src, true);
    CHECK(g != NULL);
    if (!g)
        return;
    static const char *const order[] = {"a", "b", "c", "d", "e"};
    CHECK_INT(g->nodes.len, 5);
    for (size_t i = 0; i < g->nodes.len && i < 5; i++) {
        CHECK_STR(g->nodes.items[i]->outputs[0]->name, order[i]);
        CHECK_INT(g->nodes.items[i]->id, i);
    }
    /* uses are computed */
    CHECK_INT(ir_find_value(g, "x")->nuses, 2);
    CHECK(ir_find_value(g, "d")->is_output);
    ir_graph_free(g);

    /* a graph in order but for a removed node: the removed node goes last, the others keep
     * their order */
    const char *in_order = "graph g {\n"
                           "  input x : f32[2]\n"
                           "  a = Relu(x)\n"
                           "  b = Relu(a)\n"
                           "  c = Relu(a)\n"
                           "  output c\n"
                           "}\n";
    src = source("t.graph", in_order);
    g = load(&src, true);
    CHECK(g != NULL);
    if (!g)
        return;
    dg_context *dg;
    /* ids that no longer say where values are: validation renumbers them, finding each name */
    for (size_t i = 0; i < g->values.len; i++)
        g->values.items[i]->id = (uint32_t)(g->values.len - 1 - i);
    dg = dg_new();
    CHECK(ir_validate(g, dg));
    dg_free(dg);
    for (size_t i = 0; i < g->values.len; i++)
        CHECK_INT(g->values.items[i]->id, i);
    node_named(g, "b")->dead = true;
    dg = dg_new();
    CHECK(ir_validate(g, dg));
    dg_free(dg);
    static const char *const after[] = {"a", "c", "b"};
    for (size_t i = 0; i < g->nodes.len && i < 3; i++) {
        CHECK_STR(g->nodes.items[i]->outputs[0]->name, after[i]);
        CHECK_INT(g->nodes.items[i]->id, i);
    }
    ir_graph_free(g);
}

/* ---- validation of built graphs ------------------------------------------------------------ */

static ir_type f32_vector(int64_t n)
{
    ir_type t = {.dtype = IR_F32, .rank = 1};
    t.dims[0] = n;
    return t;
}

static ir_node *add_unary(ir_graph *g, ir_op op, const char *out, ir_value *in)
{
    ir_node *n = ir_add_node(g, op, 1, &out, 1);
    ir_set_input(n, 0, in);
    return n;
}

static char *validate_text(ir_graph *g, bool *ok)
{
    dg_context *dg = dg_new();
    *ok = ir_validate(g, dg);
    char *text = diagnostics_text(dg);
    dg_free(dg);
    return text;
}

static void test_built_graph_errors(void)
{
    ir_type t = f32_vector(2);
    ir_graph *g = ir_graph_new("built");
    ir_value *x = ir_add_input(g, "x", &t);
    const char *out = "y";
    ir_node *n = ir_add_node(g, IR_OP_Relu, 2, &out, 1);
    ir_set_input(n, 0, x);
    ir_set_input(n, 1, x);
    bool ok;
    char *text = validate_text(g, &ok);
    CHECK(!ok);
    CHECK_STR(text, "built: error: Relu takes 1 input, not 2\n"
                    "built: error: graph 'built' has no outputs\n");
    free(text);
    ir_graph_free(g);

    /* a cycle made with ir_set_input, and a value of another graph */
    g = ir_graph_new("built");
    ir_graph *other = ir_graph_new("other");
    x = ir_add_input(g, "x", &t);
    ir_value *stranger = ir_add_input(other, "x2", &t);
    ir_node *a = add_unary(g, IR_OP_Relu, "a", x);
    ir_node *b = add_unary(g, IR_OP_Relu, "b", a->outputs[0]);
    ir_set_input(a, 0, b->outputs[0]);
    ir_add_output(g, b->outputs[0]);
    text = validate_text(g, &ok);
    CHECK(!ok);
    CHECK_STR(text, "built: error: cycle in the graph: a -> b -> a\n");
    free(text);
    add_unary(g, IR_OP_Relu, "c", stranger);
    text = validate_text(g, &ok);
    CHECK(!ok);
    CHECK_STR(text, "built: error: input 1 of Relu is undefined value 'x2'\n");
    free(text);
    ir_graph_free(other);
    ir_graph_free(g);

    /* a good built graph validates, gets its types, and prints */
    g = ir_graph_new("built");
    x = ir_add_input(g, "x", &t);
    ir_const *k = ir_const_new(g, IR_CONST_DATA);
    ir_value *w = ir_add_const(g, "w", &t, k);
    const char *sum = "s";
    n = ir_add_node(g, IR_OP_Add, 2, &sum, 1);
    ir_set_input(n, 0, x);
    ir_set_input(n, 1, w);
    ir_add_output(g, n->outputs[0]);
    ir_set_attr_int(g, add_unary(g, IR_OP_LeakyRelu, "r", n->outputs[0]), "alpha", 2);
    text = validate_text(g, &ok);
    CHECK(ok);
    CHECK_STR(text, "");
    free(text);
    /* the integer alpha became a float; in-memory constants refer to <graph>.safetensors */
    CHECK(ir_node_attr(node_named(g, "r"), "alpha")->kind == IR_ATTR_FLOAT);
    text = gk_graph_text(g);
    CHECK_STR(text, "graph built {\n"
                    "  input  x : f32[2]\n"
                    "  const  w : f32[2] = file(\"built.safetensors\", \"w\")\n"
                    "  s : f32[2] = Add(x, w)\n"
                    "  r : f32[2] = LeakyRelu(s) {alpha=2.0}\n"
                    "  output s\n"
                    "}\n");
    free(text);
    ir_graph_free(g);
}

/* ---- hostile input ------------------------------------------------------------------------- */

static void test_deep_nesting(void)
{
    enum { DEPTH = 100000 };
    const char *head = "graph g {\n  const c : f32[1] = ";
    size_t len = strlen(head) + DEPTH + 16;
    char *text = malloc(len);
    strcpy(text, head);
    memset(text + strlen(head), '[', DEPTH);
    strcpy(text + strlen(head) + DEPTH, "\n}\n");
    dg_source src = source("deep.graph", text);
    dg_context *dg = dg_new();
    ir_graph *g = ir_parse(&src, dg);
    CHECK(g == NULL);
    CHECK_INT(dg_error_count(dg), 1);
    char *out = diagnostics_text(dg);
    CHECK(strncmp(out, "deep.graph:2:", 13) == 0);
    CHECK(strstr(out, ": error: nesting too deep\n") != NULL);
    free(out);
    dg_free(dg);
    free(text);
}

/* The parser reads exactly len bytes: a source need not end with a NUL (ASan checks). */
static void test_unterminated_buffer(void)
{
    static const char good[] = "graph g {\n  input x : f32[2]\n  output x\n}";
    char *exact = malloc(sizeof good - 1);
    memcpy(exact, good, sizeof good - 1);
    dg_source src = {"exact.graph", exact, sizeof good - 1};
    ir_graph *g = load(&src, false);
    CHECK(g != NULL);
    ir_graph_free(g);
    free(exact);

    static const char cut[] = "graph g {\n  y = Gelu(x) {approximate=\"ta";
    exact = malloc(sizeof cut - 1);
    memcpy(exact, cut, sizeof cut - 1);
    src = (dg_source){"cut.graph", exact, sizeof cut - 1};
    dg_context *dg = dg_new();
    CHECK(ir_parse(&src, dg) == NULL);
    char *out = diagnostics_text(dg);
    CHECK(strstr(out, "cut.graph:2:28: error: unterminated string\n") != NULL);
    free(out);
    dg_free(dg);
    free(exact);
}

/* `edits` random edits of text[0, len) (a byte deleted, inserted or replaced; bytes the grammar
 * cares about most often), within cap bytes; the new length. */
static size_t mutate(char *text, size_t len, size_t cap, int edits, uint64_t *state)
{
    static const char inserts[] = "[]{}(),:=?*_@\"\\#\n x0-.e\xff\xc3";
    for (int edit = 0; edit < edits; edit++) {
        *state = *state * 6364136223846793005u + 1442695040888963407u;
        size_t at = (size_t)(*state >> 33) % len;
        unsigned what = (unsigned)(*state >> 20) % 3;
        if (what == 0 && len > 1) { /* delete a byte */
            memmove(text + at, text + at + 1, len - at - 1);
            len--;
        } else if (len + 1 < cap) { /* insert or replace a byte */
            char c = inserts[(*state >> 40) % (sizeof inserts - 1)];
            if (what == 1) {
                memmove(text + at + 1, text + at, len - at);
                len++;
            }
            text[at] = c;
        }
    }
    return len;
}

/* Random edits of good text: loading never crashes, and whatever loads prints canonically. */
static void test_mutations(void)
{
    static const char seed_text[] =
        "graph g {\n"
        "  input x : f32[N,3,8,8] NCHW\n"
        "  const w : f32[4,3,3,3] = random(seed=1, lo=-0.5)\n"
        "  const s : i64[2] = [1, -1]\n"
        "  c = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
        "  r : f32[N,4,8,8] NCHW = Relu(c)\n"
        "  a, b = Split(r) {axis=1, split=[2,2]}\n"
        "  y = Clip(a, _, _) @cpu.clip\n"
        "  z = Gelu(b) {approximate=\"tanh\"}  # comment\n"
        "  output y, z\n"
        "}\n";
    uint64_t state = 0x9e3779b97f4a7c15u;
    int loaded = 0;
    for (int round = 0; round < 2000; round++) {
        char text[sizeof seed_text + 64];
        size_t len = sizeof seed_text - 1;
        memcpy(text, seed_text, len);
        len = mutate(text, len, sizeof text, 1 + round % 4, &state);
        dg_source src = {"m.graph", text, len};
        dg_context *dg = dg_new();
        ir_graph *g = ir_parse(&src, dg);
        if (g && ir_validate(g, dg)) {
            loaded++;
            char *once = gk_graph_text(g);
            dg_source again = source("m.graph", once);
            ir_graph *g2 = load(&again, true);
            CHECK(g2 != NULL);
            if (g2) {
                char *twice = gk_graph_text(g2);
                CHECK_STR(twice, once);
                free(twice);
                ir_graph_free(g2);
            }
            free(once);
        } else {
            CHECK(dg_has_errors(dg));
        }
        ir_graph_free(g);
        dg_free(dg);
    }
    CHECK(loaded > 0); /* some edits (in comments, spacing) keep the graph good */
}

/* ---- the fast path for common lines (ir/parse_fast.c) against the grammar ------------------ */

/* What loading src says: its diagnostics, then, when it loads and validates, the printed graph. */
static char *outcome(const dg_source *src, bool fast, size_t *fast_lines)
{
    dg_context *dg = dg_new();
    ir_graph *g = gp_parse_lines(src, dg, fast, fast_lines);
    bool ok = g && ir_validate(g, dg);
    char *diags = diagnostics_text(dg);
    char *printed = ok ? gk_graph_text(g) : NULL;
    size_t n = strlen(diags) + (printed ? strlen(printed) : 0) + 16;
    char *out = malloc(n);
    snprintf(out, n, "%s---\n%s", diags, printed ? printed : "(not loaded)\n");
    free(diags);
    free(printed);
    ir_graph_free(g);
    dg_free(dg);
    return out;
}

/* Loads src with the fast path and with the grammar alone: the same diagnostics and the same
 * graph. Returns how many lines the fast path read. */
static size_t check_fast_agrees(const dg_source *src)
{
    size_t lines = 0, none = 0;
    char *fast = outcome(src, true, &lines);
    char *grammar = outcome(src, false, &none);
    CHECK_STR(fast, grammar);
    if (strcmp(fast, grammar) != 0)
        fprintf(stderr, "in %s\n", src->path);
    CHECK_INT(none, 0);
    free(fast);
    free(grammar);
    return lines;
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 4096 > cap) {
            cap = cap * 2 + 4096;
            buf = realloc(buf, cap);
            FR_CHECK(buf != NULL);
        }
        size_t got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    return buf;
}

/* Every .graph file of the tests (goldens with errors among them) and the examples. */
static void test_fast_path_files(void)
{
    static const char *const patterns[] = {"../*/*.graph", "../*/*/*.graph", "../*/*/*/*.graph",
                                           "../../examples/*.graph"};
    size_t files = 0, lines = 0;
    for (size_t p = 0; p < FR_COUNT_OF(patterns); p++) {
        glob_t found;
        if (glob(patterns[p], 0, NULL, &found) != 0)
            continue;
        for (size_t i = 0; i < found.gl_pathc; i++) {
            size_t len;
            char *text = read_text(found.gl_pathv[i], &len);
            CHECK(text != NULL);
            if (!text)
                continue;
            dg_source src = {found.gl_pathv[i], text, len};
            lines += check_fast_agrees(&src);
            files++;
            free(text);
        }
        globfree(&found);
    }
    CHECK(files > 100);
    CHECK(lines > 1000); /* the fast path read most lines */
}

/* Lines of every shape the fast path reads, and others it hands to the grammar, with the errors
 * the builders report on them; then random edits of them. */
static void test_fast_path_shapes(void)
{
    static const char good[] =
        "graph g {\n"
        "  input x : f32[N,3,8,8] NCHW\n"
        "\n"
        "  const w : f32[4,3,3,3] = random(seed=1, lo=-0.5, hi=0.5)\n"
        "  const e : f32[4] = random()\n"
        "  const s : i64[2] = [1, -1]\n"
        "  const k : f32[] = 2.5e-1\n"
        "  const l : f32[3] = [1., -2.0, 3e2]\n"
        "  const z : i64[0] = []\n"
        "  c : f32[N, 4, 8, 8] NCHW = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
        "  r = Relu(c) {}\n"
        "  a, b : f32[N,2,8,8] = Split(r) {axis=1, split=[2,2]}\n"
        "  y = Clip(a, _, _) @cpu.clip\n"
        "  q = Gelu(b) {approximate=\"tanh\"}\n"
        "  u : f32[*] = Relu(q)\n"
        "  t = Relu(u)  # a comment: the grammar's line\n"
        "  v = Relu(\n    t)\n"
        "  const \"quoted name\" : f32[1] = 1\n"
        "  output y, v\n"
        "}\n";
    dg_source src = source("good.graph", good);
    CHECK(check_fast_agrees(&src) >= 12);
    static const char *const bad[] = {
        /* errors the builders report on lines the fast path reads */
        "graph g {\n  input x : f32[2]\n  y = Rleu(x)\n  y = Relu(x)\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  y : f33[2] = Relu(x)\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  y : f32[2] XYZ = Relu(x)\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  y : f32[99999999999999999999] = Relu(x)\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  y : f32[1,1,1,1,1,1,1,1,1] = Relu(x)\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  const w : f32[2] = [1, 2, 3]\n  output x\n}\n",
        "graph g {\n  input x : f32[2]\n  const w : i8[1] = 300\n  output x\n}\n",
        "graph g {\n  input x : f32[2]\n  const w : f32[2] = random(seed=-1, lo=1, hi=0, foo=2)\n  "
        "output x\n}\n",
        "graph g {\n  input x : f32[2]\n  const w : f32[N] = random()\n  output x\n}\n",
        "graph g {\n  input x : f32[2]\n  y = Relu(x) {a=1, a=2}\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  a, a = Split(x)\n  output a\n}\n",
        "graph g {\n  input x : f32[2]\n  y = Relu(w)\n  z = Relu(y y)\n  output z\n}\n",
        "graph g {\n  input x : f32[2]\n  y = Relu(x)\n  output y\n}\n  z = Relu(x)\n",
        "graph g {\n  input x : f32[2]\n  y = Relu(x)\n  output y\n",
        "graph g {\n  input x : f32[2]\n  y = Relu(x) {axis=[[1]], b=1x}\n  output y\n}\n",
        "graph g {\n  input x : f32[2]\n  y = Relu(x)\n  input = Relu(x)\n  z = Relu(inf)\n}\n",
    };
    for (size_t i = 0; i < FR_COUNT_OF(bad); i++) {
        dg_source b = source("bad.graph", bad[i]);
        check_fast_agrees(&b);
    }
    uint64_t state = 0x2545f4914f6cdd1du;
    for (int round = 0; round < 3000; round++) {
        char text[sizeof good + 64];
        size_t len = sizeof good - 1;
        memcpy(text, good, len);
        len = mutate(text, len, sizeof text, 1 + round % 3, &state);
        dg_source m = {"m.graph", text, len};
        check_fast_agrees(&m);
    }
}

/* An attribute given twice is reported with where it was first given: among a few (compared
 * one by one) and among many (looked up in a map), known to the op's schema or not. */
static void test_repeated_attributes(void)
{
    char text[4096];
    int len = snprintf(text, sizeof text,
                       "graph g {\n  input x : f32[2]\n"
                       "  y = LeakyRelu(x) {foo=1, alpha=0.5, foo=2}\n  z = LeakyRelu(y) {");
    for (int i = 0; i < 40; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "%sa%d=%d", i ? ", " : "",
                        i == 39 ? 3 : i, i);
    snprintf(text + len, sizeof text - (size_t)len, "}\n  output z\n}\n");
    dg_source src = source("rep.graph", text);
    dg_context *dg = dg_new();
    CHECK(ir_parse(&src, dg) == NULL);
    char *out = diagnostics_text(dg);
    CHECK(strstr(out, "rep.graph:3:39: error: attribute 'foo' is given twice\n") != NULL);
    CHECK(strstr(out, "rep.graph:3:21: note: first given here\n") != NULL);
    CHECK(strstr(out, "rep.graph:4:313: error: attribute 'a3' is given twice\n") != NULL);
    CHECK(strstr(out, "rep.graph:4:39: note: first given here\n") != NULL);
    CHECK_INT(dg_error_count(dg), 2);
    free(out);
    dg_free(dg);
}

/* Numbers are read as strtod and strtoll read them (the parser reads most of them itself): random
 * decimals of every length and exponent, and the edges of the exact cases, bit for bit. */
static void test_number_reading(void)
{
    enum { N = 3000 };
    static const char *const edges[] = {
        "0", "-0", "-0.0", "0.1", "1e22", "1e23", "-1e-22", "1e-23", "123456789012345",
        "1234567890123456", "9007199254740993", "0.000000000000001", "1.5e+3", "2E-2", "5e-324",
        "1.7976931348623157e308", "00000000000000000001.5", "3.", "-7.e2", "1e0022"};
    char **words = calloc(N, sizeof *words);
    size_t cap = 64, len = 0;
    char *text = malloc(cap);
    uint64_t state = 0x853c49e6748fea9bu;
    for (int i = 0; i < N; i++) {
        char w[64];
        if (i < (int)FR_COUNT_OF(edges)) {
            snprintf(w, sizeof w, "%s", edges[i]);
        } else {
            state = state * 6364136223846793005u + 1442695040888963407u;
            int lead = 1 + (int)((state >> 33) % 17), frac = (int)((state >> 40) % 19) - 1;
            int n = snprintf(w, sizeof w, "%s", (state >> 20) & 1 ? "-" : "");
            for (int k = 0; k < lead; k++) {
                state = state * 6364136223846793005u + 1442695040888963407u;
                w[n++] = (char)('0' + (state >> 50) % 10);
            }
            if (frac >= 0)
                w[n++] = '.';
            for (int k = 0; k < frac; k++) {
                state = state * 6364136223846793005u + 1442695040888963407u;
                w[n++] = (char)('0' + (state >> 50) % 10);
            }
            if ((state >> 10) % 3 == 0)
                n += snprintf(w + n, sizeof w - (size_t)n, "e%d", (int)((state >> 12) % 61) - 30);
            w[n] = '\0';
        }
        words[i] = strdup(w);
    }
    const char *head = "graph g {\n  const c : f32[3000] = [";
    for (int i = -1; i < N; i++) {
        const char *piece = i < 0 ? head : words[i];
        size_t need = len + strlen(piece) + 64;
        if (need > cap) {
            cap = need * 2;
            text = realloc(text, cap);
        }
        len += (size_t)sprintf(text + len, "%s%s", piece, i >= 0 && i < N - 1 ? ", " : "");
    }
    sprintf(text + len, "]\n  y = Relu(c) {pads=[1, -2, 123456789012345678, 9223372036854775807, "
                        "-9223372036854775808]}\n  output y\n}\n");
    dg_source src = source("n.graph", text);
    ir_graph *g = load(&src, false);
    CHECK(g != NULL);
    if (g) {
        const ir_const *c = ir_find_value(g, "c")->konst;
        CHECK_INT(c->literal_count, N);
        for (int i = 0; i < N && i < (int)c->literal_count; i++) {
            double want = strtod(words[i], NULL);
            if (memcmp(&want, &c->literal[i], sizeof want) != 0) {
                fprintf(stderr, "'%s' read as %.17g, strtod gives %.17g\n", words[i],
                        c->literal[i], want);
                CHECK(false);
            }
        }
        const ir_attr *pads = ir_node_attr(node_named(g, "y"), "pads");
        CHECK(pads && pads->kind == IR_ATTR_INTS && pads->count == 5);
        if (pads && pads->count == 5) {
            CHECK(pads->v.ints[0] == 1 && pads->v.ints[1] == -2);
            CHECK(pads->v.ints[2] == 123456789012345678);
            CHECK(pads->v.ints[3] == INT64_MAX && pads->v.ints[4] == INT64_MIN);
        }
        ir_graph_free(g);
    }
    for (int i = 0; i < N; i++)
        free(words[i]);
    free(words);
    free(text);
}

/* ---- did you mean -------------------------------------------------------------------------- */

static const char *suggest(const char *word, const char *const *candidates, size_t n)
{
    ir_suggester s;
    ir_suggest_init(&s, word);
    for (size_t i = 0; i < n; i++)
        ir_suggest_offer(&s, candidates[i]);
    return ir_suggest_result(&s);
}

static void test_suggestions(void)
{
    static const char *const ops[] = {"Conv", "Relu", "Reshape", "kernel_shape", "w1", "axis"};
    size_t n = FR_COUNT_OF(ops);
    CHECK_STR(suggest("Rleu", ops, n), "Relu");
    CHECK_STR(suggest("relu", ops, n), "Relu");
    CHECK_STR(suggest("Conv2d", ops, n), "Conv");
    CHECK_STR(suggest("kernel_shap", ops, n), "kernel_shape");
    CHECK_STR(suggest("w9", ops, n), "w1");
    CHECK(suggest("Frobnicate", ops, n) == NULL);
    CHECK(suggest("Relu", ops, n) == NULL); /* the word itself is no suggestion */
}

/* A value's name length is scanned from the text when a diagnostic needs it (ir_value_src_len):
 * unquoted names, quoted ones with escaped quotes and backslashes, and a built value (none). */
static void test_value_src_len(void)
{
    const char *text = "graph g {\n"
                       "  input a.b/c-1_x : f32[2]\n"
                       "  input \"q \\\" \\\\ \\x41\\n\" : f32[2]\n"
                       "  y = Add(a.b/c-1_x, \"q \\\" \\\\ \\x41\\n\")\n"
                       "  output y\n"
                       "}\n";
    dg_source src = source("v.graph", text);
    ir_graph *g = load(&src, true);
    CHECK(g != NULL);
    if (!g)
        return;
    ir_value *a = ir_find_value(g, "a.b/c-1_x");
    CHECK(a && ir_value_src_len(&src, a) == strlen("a.b/c-1_x"));
    ir_value *q = ir_find_value(g, "q \" \\ A\n");
    CHECK(q && ir_value_src_len(&src, q) == strlen("\"q \\\" \\\\ \\x41\\n\""));
    ir_value *y = ir_find_value(g, "y");
    CHECK(y && ir_value_src_len(&src, y) == 1);
    CHECK(y && ir_value_src_len(NULL, y) == 0);
    ir_value *built = ir_add_input(g, "built", ir_type_unknown_interned(g));
    CHECK(built && ir_value_src_len(&src, built) == 0);
    ir_graph_free(g);
}

/* Equal short INTS lists share the graph's copy; a different list has its own. */
static void test_shared_ints(void)
{
    const char *text = "graph g {\n"
                       "  input x : f32[1,1,4,4]\n"
                       "  const w : f32[1,1,1,1] = 1\n"
                       "  a = Conv(x, w) {kernel_shape=[1,1]}\n"
                       "  b = Conv(a, w) {kernel_shape=[1,1], strides=[1,1]}\n"
                       "  c = Conv(b, w) {kernel_shape=[1,1], pads=[0,0,0,0]}\n"
                       "  output c\n"
                       "}\n";
    dg_source src = source("s.graph", text);
    ir_graph *g = load(&src, true);
    CHECK(g != NULL);
    if (!g)
        return;
    const ir_node *a = ir_find_value(g, "a")->producer, *b = ir_find_value(g, "b")->producer;
    const ir_node *c = ir_find_value(g, "c")->producer;
    const int64_t *ka, *kb, *kc, *sb, *pc;
    CHECK(ir_get_ints(a, "kernel_shape", &ka) == 2 && ir_get_ints(b, "kernel_shape", &kb) == 2 &&
          ir_get_ints(c, "kernel_shape", &kc) == 2);
    CHECK(ka == kb && kb == kc && ka[0] == 1 && ka[1] == 1);
    CHECK(ir_get_ints(b, "strides", &sb) == 2 && sb == ka); /* equal: shared as well */
    CHECK(ir_get_ints(c, "pads", &pc) == 4 && pc != ka && pc[0] == 0 && pc[3] == 0);
    ir_graph_free(g);
}

/* Every op of the catalog by its name, in three passes of different orders (so that names the
 * parser's op cache keeps in one slot follow each other): each node has the op its line names. */
static void test_every_op(void)
{
    enum { PASSES = 3 };
    size_t cap = 64 + (size_t)IR_OP_COUNT * PASSES * 64, len = 0;
    char *text = malloc(cap);
    ir_op expect[IR_OP_COUNT * PASSES];
    size_t n = 0;
    len += (size_t)snprintf(text + len, cap - len, "graph g {\n  input x : f32[1]\n");
    for (unsigned pass = 0; pass < PASSES; pass++)
        for (unsigned i = 0; i < IR_OP_COUNT; i++) {
            /* forward, backward, then by a stride coprime with most counts */
            unsigned k = pass == 0 ? i : pass == 1 ? IR_OP_COUNT - 1 - i : (i * 7u) % IR_OP_COUNT;
            if (pass == 2 && IR_OP_COUNT % 7 == 0)
                k = i;
            expect[n] = (ir_op)k;
            len += (size_t)snprintf(text + len, cap - len, "  v%zu = %s(x)\n", n++,
                                    ir_op_name((ir_op)k));
        }
    snprintf(text + len, cap - len, "}\n");
    dg_source src = source("ops.graph", text);
    ir_graph *g = load(&src, false);
    CHECK(g != NULL);
    if (g) {
        CHECK_INT(g->nodes.len, n);
        for (size_t i = 0; i < n && i < g->nodes.len; i++)
            CHECK_STR(ir_op_name(g->nodes.items[i]->op), ir_op_name(expect[i]));
        ir_graph_free(g);
    }
    free(text);
}

int main(void)
{
    RUN(test_noncanonical_round_trip);
    RUN(test_unvalidated_round_trip);
    RUN(test_float_printing);
    RUN(test_structure);
    RUN(test_stable_topological_order);
    RUN(test_built_graph_errors);
    RUN(test_deep_nesting);
    RUN(test_unterminated_buffer);
    RUN(test_mutations);
    RUN(test_fast_path_files);
    RUN(test_fast_path_shapes);
    RUN(test_repeated_attributes);
    RUN(test_number_reading);
    RUN(test_suggestions);
    RUN(test_value_src_len);
    RUN(test_shared_ints);
    RUN(test_every_op);
    return unit_finish();
}
