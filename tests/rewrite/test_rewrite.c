/* The rewriter: a case that must fuse beside one that must not, for every legality check; the
 * actions' numerics (the fused graph runs on the CPU and must agree with the original); rounds to a
 * fixed point; determinism. */
#include "tests/rewrite/rwkit.h"
#include "tests/unit.h"

/* ---- fold_bn ---- */

static const char conv_bn_relu[] = "graph g {\n"
                                   "  input  x : f32[1,4,6,6]\n"
                                   "  const  w : f32[8,4,3,3] = random(seed=1)\n"
                                   "  const  s : f32[8] = random(seed=3, lo=0.5, hi=1.5)\n"
                                   "  const  beta : f32[8] = random(seed=4)\n"
                                   "  const  mu : f32[8] = random(seed=5)\n"
                                   "  const  var : f32[8] = random(seed=6, lo=0.5, hi=1.5)\n"
                                   "  c = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n"
                                   "  n = BatchNormalization(c, s, beta, mu, var) {epsilon=0.001}\n"
                                   "  y = Relu(n)\n"
                                   "  output y\n"
                                   "}\n";

static const char cnn_rules[] =
    "set Act = [Relu | Sigmoid | Tanh | LeakyRelu | Clip]\n"
    "rule conv_bn_act: Conv > BN > Act@a => FusedConvAct[fold_bn] {act = @a}\n"
    "rule conv_bn: Conv > BN => Conv[fold_bn]\n"
    "rule convt_bn: ConvTranspose > BN => ConvTranspose[fold_bn]\n"
    "rule conv_add_relu: Conv > Add(@res) > Relu => FusedConvAct {act = Relu, residual = @res}\n"
    "rule conv_act: Conv > Act@a => FusedConvAct {act = @a}\n";

/* Fuses text with rules, checks the fused graph computes what the original does. */
static rw_report fuse_and_compare(const char *text, const char *rules, double tolerance)
{
    rk_rules r = rules_from(rules);
    gk_graph *original = gk_parse(text), *fused = gk_parse(text);
    rw_report rep = apply(fused, &r);
    double err = worst_error(original, fused);
    CHECK(err <= tolerance);
    if (!(err <= tolerance))
        fprintf(stderr, "worst relative error %g\n", err);
    gk_free(original);
    gk_free(fused);
    rules_free(&r);
    return rep;
}

static void test_conv_bn_relu(void)
{
    rk_rules r = rules_from(cnn_rules);
    gk_graph *t = gk_parse(conv_bn_relu), *original = gk_parse(conv_bn_relu);
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_bn_act"), 1);
    CHECK_INT(rep.after.nodes, 1);
    CHECK_INT(count_op(t->g, IR_OP_FusedConvAct), 1);
    ir_node *n = ir_find_value(t->g, "y")->producer;
    CHECK_STR(ir_get_string(n, "act"), "Relu");
    CHECK_STR(ir_node_kernel(t->g, n), "cpu.FusedConvAct");
    CHECK_INT(n->ninputs, 3); /* x, the folded weight, the new bias */
    const int64_t *pads;
    CHECK_INT(ir_get_ints(n, "pads", &pads), 4); /* carried over from the Conv */
    CHECK(worst_error(original, t) < 1e-4);
    rw_report_free(&rep);
    gk_free(t);
    gk_free(original);
    rules_free(&r);
}

static void test_fold_bn_variants(void)
{
    /* with a bias, grouped, depthwise, transposed with groups */
    static const char *const graphs[] = {
        "graph g {\n  input x : f32[1,4,6,6]\n  const w : f32[8,4,3,3] = random(seed=1)\n"
        "  const b : f32[8] = random(seed=2)\n  const s : f32[8] = random(seed=3, lo=0.5, hi=1.5)\n"
        "  const t : f32[8] = random(seed=4)\n  const m : f32[8] = random(seed=5)\n"
        "  const v : f32[8] = random(seed=6, lo=0.5, hi=1.5)\n"
        "  c = Conv(x, w, b) {kernel_shape=[3,3]}\n  y = BatchNormalization(c, s, t, m, v)\n"
        "  output y\n}\n",
        "graph g {\n  input x : f32[1,4,6,6]\n  const w : f32[8,2,3,3] = random(seed=1)\n"
        "  const s : f32[8] = random(seed=3, lo=0.5, hi=1.5)\n  const t : f32[8] = random(seed=4)\n"
        "  const m : f32[8] = random(seed=5)\n  const v : f32[8] = random(seed=6, lo=0.5, hi=1.5)\n"
        "  c = Conv(x, w) {kernel_shape=[3,3], group=2}\n  y = BatchNormalization(c, s, t, m, v)\n"
        "  output y\n}\n",
        "graph g {\n  input x : f32[1,4,6,6]\n  const w : f32[4,1,3,3] = random(seed=1)\n"
        "  const s : f32[4] = random(seed=3, lo=0.5, hi=1.5)\n  const t : f32[4] = random(seed=4)\n"
        "  const m : f32[4] = random(seed=5)\n  const v : f32[4] = random(seed=6, lo=0.5, hi=1.5)\n"
        "  c = Conv(x, w) {kernel_shape=[3,3], group=4}\n  y = BatchNormalization(c, s, t, m, v)\n"
        "  output y\n}\n",
        "graph g {\n  input x : f32[1,4,5,5]\n  const w : f32[4,3,3,3] = random(seed=1)\n"
        "  const b : f32[6] = random(seed=2)\n  const s : f32[6] = random(seed=3, lo=0.5, hi=1.5)\n"
        "  const t : f32[6] = random(seed=4)\n  const m : f32[6] = random(seed=5)\n"
        "  const v : f32[6] = random(seed=6, lo=0.5, hi=1.5)\n"
        "  c = ConvTranspose(x, w, b) {kernel_shape=[3,3], group=2}\n"
        "  y = BatchNormalization(c, s, t, m, v)\n  output y\n}\n",
    };
    for (size_t i = 0; i < FR_COUNT_OF(graphs); i++) {
        rw_report rep = fuse_and_compare(graphs[i], cnn_rules, 1e-4);
        CHECK_INT(rep.after.nodes, 1);
        CHECK_INT(fired(&rep, i == 3 ? "convt_bn" : "conv_bn"), 1);
        rw_report_free(&rep);
    }
    /* a MatMul's columns: Gemm(x, W * s, beta - mean * s); a 3-D MatMul (channels on its rows)
     * is refused */
    const char *mm_rules = "rule matmul_bn: MatMul(_, @w:const) > BN => Gemm[fold_bn]\n";
    rw_report rep = fuse_and_compare(
        "graph g {\n  input x : f32[3,4]\n  const w : f32[4,6] = random(seed=1)\n"
        "  const s : f32[6] = random(seed=3, lo=0.5, hi=1.5)\n  const t : f32[6] = random(seed=4)\n"
        "  const m : f32[6] = random(seed=5)\n  const v : f32[6] = random(seed=6, lo=0.5, hi=1.5)\n"
        "  c = MatMul(x, w)\n  y = BatchNormalization(c, s, t, m, v)\n  output y\n}\n",
        mm_rules, 1e-4);
    CHECK_INT(rep.after.nodes, 1);
    CHECK_INT(fired(&rep, "matmul_bn"), 1);
    rw_report_free(&rep);
    rk_rules r = rules_from(mm_rules);
    gk_graph *t = gk_parse(
        "graph g {\n  input x : f32[2,6,4]\n  const w : f32[4,6] = random(seed=1)\n"
        "  const s : f32[6] = random(seed=3, lo=0.5, hi=1.5)\n  const t : f32[6] = random(seed=4)\n"
        "  const m : f32[6] = random(seed=5)\n  const v : f32[6] = random(seed=6, lo=0.5, hi=1.5)\n"
        "  c = MatMul(x, w)\n  y = BatchNormalization(c, s, t, m, v)\n  output y\n}\n");
    rep = apply(t, &r);
    const char *why = refusal(&rep, "matmul_bn", "y");
    CHECK(why && strstr(why, "fold_bn: the MatMul 'c' is not a matrix times a float matrix"));
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

static void test_fold_bn_refusals(void)
{
    rk_rules r = rules_from(cnn_rules);
    /* a BatchNormalization whose mean is not a constant */
    gk_graph *t = gk_parse("graph g {\n  input x : f32[1,4,6,6]\n  input mean : f32[4]\n"
                           "  const w : f32[4,4,1,1] = random(seed=1)\n  const s : f32[4] = 1\n"
                           "  const b : f32[4] = 0\n  const v : f32[4] = 1\n"
                           "  c = Conv(x, w) {kernel_shape=[1,1]}\n"
                           "  y = BatchNormalization(c, s, b, mean, v)\n  output y\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_bn"), 0);
    const char *why = refusal(&rep, "conv_bn", "y");
    CHECK(why && strstr(why, "constant: fold_bn needs 'mean'"));
    rw_report_free(&rep);
    gk_free(t);
    /* var + epsilon not positive */
    t = gk_parse("graph g {\n  input x : f32[1,4,6,6]\n  const w : f32[4,4,1,1] = random(seed=1)\n"
                 "  const s : f32[4] = 1\n  const b : f32[4] = 0\n  const m : f32[4] = 0\n"
                 "  const v : f32[4] = [1, 1, -1, 1]\n  c = Conv(x, w) {kernel_shape=[1,1]}\n"
                 "  y = BatchNormalization(c, s, b, m, v)\n  output y\n}\n");
    rep = apply(t, &r);
    why = refusal(&rep, "conv_bn", "y");
    CHECK(why && strstr(why, "var + epsilon is -0.99999 at channel 2"));
    rw_report_free(&rep);
    gk_free(t);
    /* f16 weights that overflow once folded (a variance near 0 with a large gamma) */
    t = gk_parse("graph g {\n  input x : f16[1,4,6,6]\n"
                 "  const w : f16[4,4,1,1] = random(seed=1, lo=0.5, hi=1)\n"
                 "  const s : f16[4] = 60000\n  const b : f16[4] = 0\n  const m : f16[4] = 0\n"
                 "  const v : f16[4] = 0.0001\n  c = Conv(x, w) {kernel_shape=[1,1]}\n"
                 "  y = BatchNormalization(c, s, b, m, v) {epsilon=0.0001}\n  output y\n}\n");
    rep = apply(t, &r);
    why = refusal(&rep, "conv_bn", "y");
    CHECK(why && strstr(why, "not finite in f16"));
    CHECK_INT(count_op(t->g, IR_OP_BatchNormalization), 1);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* ---- interior values: fan-out, graph outputs, exports ---- */

static void test_fan_out_and_outputs(void)
{
    rk_rules r = rules_from(cnn_rules);
    gk_graph *t = gk_parse("graph g {\n  input x : f32[1,4,6,6]\n"
                           "  const w : f32[4,4,1,1] = random(seed=1)\n"
                           "  c = Conv(x, w) {kernel_shape=[1,1]}\n  y = Relu(c)\n  z = Sigmoid(c)\n"
                           "  output y\n  output z\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_act"), 0);
    const char *why = refusal(&rep, "conv_act", "y");
    CHECK(why && strstr(why, "fan-out: 'c' is also read by 'z' (Sigmoid)") == why);
    rw_report_free(&rep);
    gk_free(t);
    t = gk_parse("graph g {\n  input x : f32[1,4,6,6]\n  const w : f32[4,4,1,1] = random(seed=1)\n"
                 "  c = Conv(x, w) {kernel_shape=[1,1]}\n  y = Relu(c)\n  output y\n  output c\n}\n");
    rep = apply(t, &r);
    why = refusal(&rep, "conv_act", "y");
    CHECK(why && strstr(why, "graph output: 'c'") == why);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

static const char add_ln_rules[] =
    "rule add_ln: LayerNormalization(Add@s(@a, @b), @scale, @bias) "
    "=> AddLayerNorm(@a, @b, @scale, @bias) exports @s\n";

static void test_exports_and_order(void)
{
    /* the sum is read again by a node that comes before the LayerNormalization: the fused node
     * must move before it */
    const char *text = "graph g {\n  input a : f32[2,8]\n  input b : f32[2,8]\n"
                       "  const g1 : f32[8] = random(seed=1)\n  const b1 : f32[8] = random(seed=2)\n"
                       "  s = Add(a, b)\n  r = Relu(s)\n  n = LayerNormalization(s, g1, b1)\n"
                       "  y = Add(n, r)\n  output y\n}\n";
    rw_report rep = fuse_and_compare(text, add_ln_rules, 1e-4);
    CHECK_INT(fired(&rep, "add_ln"), 1);
    CHECK_INT(rep.after.nodes, 3);
    rw_report_free(&rep);
}

/* ---- convexity ---- */

static void test_convexity(void)
{
    /* the LayerNormalization's scale depends on the sum: fusing Add and LayerNormalization would
     * need the fused node's own output as its input */
    rk_rules r = rules_from(add_ln_rules);
    gk_graph *t = gk_parse("graph g {\n  input a : f32[2,8]\n  input b : f32[2,8]\n"
                           "  const b1 : f32[8] = random(seed=2)\n"
                           "  s = Add(a, b)\n  m = ReduceMean(s) {axes=[0], keepdims=0}\n"
                           "  n = LayerNormalization(s, m, b1)\n  output n\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "add_ln"), 0);
    const char *why = refusal(&rep, "add_ln", "n");
    CHECK(why && strstr(why, "cycle: 'm' depends on 's'") == why);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* ---- overlap and priority ---- */

static const char residual_graph[] = "graph g {\n  input x : f32[1,4,6,6]\n"
                                     "  const w : f32[4,4,1,1] = random(seed=1)\n"
                                     "  c = Conv(x, w) {kernel_shape=[1,1]}\n  a = Add(c, x)\n"
                                     "  y = Relu(a)\n  output y\n}\n";

static void check_winner(const char *rules, const char *winner, const char *loser)
{
    rk_rules r = rules_from(rules);
    gk_graph *t = gk_parse(residual_graph);
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, winner), 1);
    CHECK_INT(fired(&rep, loser), 0);
    const char *why = refusal(&rep, loser, "y");
    CHECK(why && strstr(why, "overlap:") == why);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

static void test_overlap_priority(void)
{
    const char *chain = "rule chain: Add(@p, @q) > Relu => ElementwiseChain(@p, @q) "
                        "{expr = \"relu(add(x0, x1))\"}\n";
    const char *residual = "rule residual: Conv > Add(@res) > Relu "
                           "=> FusedConvAct {act = Relu, residual = @res}\n";
    char text[512];
    /* more ops wins, whatever the order */
    snprintf(text, sizeof text, "%s%s", chain, residual);
    check_winner(text, "residual", "chain");
    /* an explicit priority wins */
    snprintf(text, sizeof text,
             "rule chain priority 9: Add(@p, @q) > Relu => ElementwiseChain(@p, @q) "
             "{expr = \"relu(add(x0, x1))\"}\n%s",
             residual);
    check_winner(text, "chain", "residual");
    /* a tie goes to the rule that comes first */
    snprintf(text, sizeof text,
             "rule chain priority 3: Add(@p, @q) > Relu => ElementwiseChain(@p, @q) "
             "{expr = \"relu(add(x0, x1))\"}\n%s",
             residual);
    check_winner(text, "chain", "residual");
}

/* ---- kernel support, precision, shape ---- */

static void test_kernel_support(void)
{
    /* the CPU conv runs 1 to 3 spatial dims: a 4-D conv must not become a FusedConvAct */
    rk_rules r = rules_from(cnn_rules);
    gk_graph *t = gk_parse("graph g {\n  input x : f32[1,2,3,3,3,3]\n"
                           "  const w : f32[2,2,1,1,1,1] = random(seed=1)\n"
                           "  c = Conv(x, w) {kernel_shape=[1,1,1,1]}\n  y = Relu(c)\n"
                           "  output y\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_act"), 0);
    const char *why = refusal(&rep, "conv_act", "y");
    CHECK(why && strcmp(why, "kernel: the CPU conv handles 1 to 3 spatial dims, not 4") == 0);
    rw_report_free(&rep);
    gk_free(t);
    /* on CUDA a fused node is bound to a CUDA kernel, or refused by the registry */
    t = gk_parse(conv_bn_relu);
    rw_options opts = rw_options_default();
    opts.target = KN_BACKEND_CUDA;
    rep = apply_with(t, &r, opts);
    ir_node *n = ir_find_value(t->g, "y")->producer;
    why = refusal(&rep, "conv_bn_act", "y");
    if (fired(&rep, "conv_bn_act"))
        CHECK(n->kernel && strncmp(ir_node_kernel(t->g, n), "cuda.", 5) == 0);
    else
        CHECK(why && strncmp(why, "kernel: ", 8) == 0);
    rw_report_free(&rep);
    gk_free(t);
    /* a plain op replacement (conv_bn's Conv) fuses on every target: every executor runs plain
     * ops, the CUDA one on their CPU kernels, as it ran the Conv and BatchNormalization before */
    t = gk_parse("graph g {\n  input x : f32[1,2,4,4]\n  const w : f32[2,2,1,1] = random(seed=1)\n"
                 "  const s : f32[2] = [1,2]\n  const b : f32[2] = [0,1]\n"
                 "  const m : f32[2] = [0,0]\n  const v : f32[2] = [1,1]\n"
                 "  c = Conv(x, w)\n  y = BatchNormalization(c, s, b, m, v)\n  output y\n}\n");
    rep = apply_with(t, &r, opts);
    CHECK_INT(fired(&rep, "conv_bn"), 1);
    CHECK(ir_find_value(t->g, "y")->producer->op == IR_OP_Conv);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

static void test_precision(void)
{
    rk_rules r = rules_from("rule sig: [Cast | Relu] > Sigmoid => ElementwiseChain "
                            "{expr = \"sigmoid(relu(x0))\"}\n");
    gk_graph *t = gk_parse("graph g {\n  input x : f32[4]\n  c = Cast(x) {to=10}\n"
                           "  y = Sigmoid(c)\n  output y\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "sig"), 0);
    const char *why = refusal(&rep, "sig", "y");
    CHECK(why && strstr(why, "precision: 'c' (Cast) changes f32 to f16") == why);
    rw_report_free(&rep);
    gk_free(t);
    t = gk_parse("graph g {\n  input x : f32[4]\n  c = Relu(x)\n  y = Sigmoid(c)\n  output y\n}\n");
    rep = apply(t, &r);
    CHECK_INT(fired(&rep, "sig"), 1);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

static void test_gelu_flavours(void)
{
    const char *rules = "rule gemm_gelu: MatMul(@x, @w:const) > Add(@b:const) > Gelu@g "
                        "=> GemmEpilogue(@x, @w, @b) {act = @g}\n";
    static const char *const flavours[] = {"none", "tanh"};
    static const char *const acts[] = {"Gelu", "GeluTanh"};
    for (int i = 0; i < 2; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "graph g {\n  input x : f32[3,8]\n  const w : f32[8,5] = random(seed=1)\n"
                 "  const b : f32[5] = random(seed=2)\n  m = MatMul(x, w)\n  a = Add(m, b)\n"
                 "  y = Gelu(a) {approximate=\"%s\"}\n  output y\n}\n",
                 flavours[i]);
        rk_rules r = rules_from(rules);
        gk_graph *t = gk_parse(text), *original = gk_parse(text);
        rw_report rep = apply(t, &r);
        CHECK_INT(fired(&rep, "gemm_gelu"), 1);
        CHECK_STR(ir_get_string(ir_find_value(t->g, "y")->producer, "act"), acts[i]);
        CHECK(worst_error(original, t) < 1e-5); /* erf and tanh differ by up to 5e-4 */
        rw_report_free(&rep);
        gk_free(t);
        gk_free(original);
        rules_free(&r);
    }
}

static void test_residual_shape(void)
{
    /* the residual broadcasts per channel: FusedConvAct's Z must have the output's shape */
    rk_rules r = rules_from(cnn_rules);
    gk_graph *t = gk_parse("graph g {\n  input x : f32[1,4,6,6]\n  input z : f32[1,4,1,1]\n"
                           "  const w : f32[4,4,1,1] = random(seed=1)\n"
                           "  c = Conv(x, w) {kernel_shape=[1,1]}\n  a = Add(c, z)\n"
                           "  y = Relu(a)\n  output y\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_add_relu"), 0);
    const char *why = refusal(&rep, "conv_add_relu", "y");
    CHECK(why && strstr(why, "shape: the fused node would be invalid") == why);
    CHECK(why && strstr(why, "the residual Z has shape [1,4,1,1]"));
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* ---- forwarding, horizontal fusion, budget ---- */

static void test_forward(void)
{
    rk_rules r = rules_from("rule drop_identity: Identity(@x) => @x\n"
                            "rule drop_dropout: Dropout(@x, ...) => @x\n");
    const char *text = "graph g {\n  input x : f32[4]\n  i = Identity(x)\n  d = Dropout(i)\n"
                       "  y = Relu(d)\n  z = Identity(y)\n  output z\n}\n";
    gk_graph *t = gk_parse(text), *original = gk_parse(text);
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "drop_identity"), 1);
    CHECK_INT(fired(&rep, "drop_dropout"), 1);
    CHECK(ir_find_value(t->g, "y")->producer->inputs[0] == ir_find_value(t->g, "x"));
    /* z is a graph output: its name stays */
    const char *why = refusal(&rep, "drop_identity", "z");
    CHECK(why && strstr(why, "graph output: 'z'") == why);
    CHECK(worst_error(original, t) == 0);
    rw_report_free(&rep);
    gk_free(t);
    gk_free(original);
    rules_free(&r);
}

static void test_concat_weights_gqa(void)
{
    const char *rules = "rule qkv: MatMul(@x, @wq:const) & MatMul(@x, @wk:const) & "
                        "MatMul(@x, @wv:const) => FusedQKV[concat_weights]\n";
    const char *text = "graph g {\n  input x : f32[2,3,16]\n"
                       "  const wq : f32[16,8] = random(seed=1)\n"
                       "  const wk : f32[16,4] = random(seed=3)\n"
                       "  const wv : f32[16,4] = random(seed=5)\n"
                       "  q = MatMul(x, wq)\n  k = MatMul(x, wk)\n  v = MatMul(x, wv)\n"
                       "  output q\n  output k\n  output v\n}\n";
    rk_rules r = rules_from(rules);
    gk_graph *t = gk_parse(text), *original = gk_parse(text);
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "qkv"), 1);
    CHECK_INT(rep.after.nodes, 1);
    ir_node *n = ir_find_value(t->g, "q")->producer;
    CHECK_INT(n->op, IR_OP_FusedQKV);
    CHECK(n->outputs[1] == ir_find_value(t->g, "k") && n->outputs[2] == ir_find_value(t->g, "v"));
    const int64_t *sizes;
    CHECK_INT(ir_get_ints(n, "sizes", &sizes), 3);
    CHECK(sizes[0] == 8 && sizes[1] == 4 && sizes[2] == 4); /* K and V narrower than Q */
    CHECK(worst_error(original, t) < 1e-5);
    rw_report_free(&rep);
    gk_free(t);
    gk_free(original);
    rules_free(&r);
}

static void test_budget(void)
{
    rk_rules r = rules_from(cnn_rules);
    gk_graph *t = gk_parse(conv_bn_relu);
    rw_options opts = rw_options_default();
    opts.budget = 100; /* bytes: less than the folded weight */
    rw_report rep = apply_with(t, &r, opts);
    CHECK_INT(fired(&rep, "conv_bn_act"), 0);
    const char *why = refusal(&rep, "conv_bn_act", "y");
    CHECK(why && strstr(why, "budget:") == why);
    rw_report_free(&rep);
    gk_free(t);
    /* a weight larger than the budget: refused before its data is materialized */
    t = gk_parse("graph g {\n  input x : f32[1,4,2,2]\n"
                 "  const w : f32[1048576,4,1,1] = random(seed=1)\n"
                 "  const s : f32[1048576] = 1\n  const b : f32[1048576] = 0\n"
                 "  const m : f32[1048576] = 0\n  const v : f32[1048576] = 1\n"
                 "  c = Conv(x, w) {kernel_shape=[1,1]}\n"
                 "  y = BatchNormalization(c, s, b, m, v)\n  output y\n}\n");
    opts.budget = 1 << 20;
    rep = apply_with(t, &r, opts);
    why = refusal(&rep, "conv_bn", "y");
    CHECK(why && strstr(why, "budget:") == why);
    CHECK(ir_find_value(t->g, "w")->konst->data == NULL); /* never materialized */
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* ---- fold_scale, fold_transpose ---- */

static void test_fold_scale(void)
{
    const char *rules = "rule conv_scale: Mul(Conv, @s:const) => Conv[fold_scale]\n"
                        "rule mm_div: Div(MatMul(_, @w:const), @d:const) => MatMul[fold_scale]\n"
                        "rule gemm_scale: Mul(Gemm, @s:const) => Gemm[fold_scale]\n";
    static const char *const graphs[] = {
        /* per output channel, with a bias */
        "graph g {\n  input x : f32[1,4,5,5]\n  const w : f32[6,4,3,3] = random(seed=1)\n"
        "  const b : f32[6] = random(seed=2)\n  const s : f32[1,6,1,1] = random(seed=3, lo=0.5, hi=2)\n"
        "  c = Conv(x, w, b) {kernel_shape=[3,3]}\n  y = Mul(s, c)\n  output y\n}\n",
        /* a scalar divisor */
        "graph g {\n  input x : f32[3,8]\n  const w : f32[8,5] = random(seed=1)\n"
        "  const d : f32[] = 4\n  m = MatMul(x, w)\n  y = Div(m, d)\n  output y\n}\n",
        /* per column of a transposed weight, and the bias C scaled too */
        "graph g {\n  input x : f32[3,8]\n  const w : f32[5,8] = random(seed=1)\n"
        "  const c : f32[5] = random(seed=2)\n  const s : f32[5] = random(seed=3, lo=0.5, hi=2)\n"
        "  m = Gemm(x, w, c) {transB=1}\n  y = Mul(m, s)\n  output y\n}\n",
    };
    for (size_t i = 0; i < FR_COUNT_OF(graphs); i++) {
        rw_report rep = fuse_and_compare(graphs[i], rules, 1e-4); /* rounding moves: verify's f32 */
        CHECK_INT(rep.after.nodes, 1);
        rw_report_free(&rep);
    }
    /* a scale that is neither a scalar nor per channel */
    rk_rules r = rules_from(rules);
    gk_graph *t = gk_parse("graph g {\n  input x : f32[3,8]\n  const w : f32[8,5] = random(seed=1)\n"
                           "  const d : f32[3,5] = 2\n  m = MatMul(x, w)\n  y = Div(m, d)\n"
                           "  output y\n}\n");
    rw_report rep = apply(t, &r);
    const char *why = refusal(&rep, "mm_div", "y");
    CHECK(why && strstr(why, "fold_scale: 'd' is neither a scalar nor one value per output channel"));
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* ---- fold_add ---- */

static void test_fold_add(void)
{
    const char *rules = "rule conv_add_bias: Conv > Add(@c:const) => Conv[fold_add]\n";
    static const char *const graphs[] = {
        /* per output channel into a conv without a bias: B' = c */
        "graph g {\n  input x : f32[1,4,5,5]\n  const w : f32[6,4,3,3] = random(seed=1)\n"
        "  const c : f32[6,1,1] = random(seed=3)\n"
        "  v = Conv(x, w) {kernel_shape=[3,3]}\n  y = Add(c, v)\n  output y\n}\n",
        /* a scalar into a 1-D conv's bias */
        "graph g {\n  input x : f32[1,4,9]\n  const w : f32[6,4,3] = random(seed=1)\n"
        "  const b : f32[6] = random(seed=2)\n  const c : f32[] = 0.5\n"
        "  v = Conv(x, w, b) {kernel_shape=[3]}\n  y = Add(v, c)\n  output y\n}\n",
        /* [1, M, 1] after a 1-D conv, a weight that is a graph input (it is not read) */
        "graph g {\n  input x : f32[1,4,9]\n  input w : f32[6,4,3]\n"
        "  const b : f32[6] = random(seed=2)\n  const c : f32[1,6,1] = random(seed=4)\n"
        "  v = Conv(x, w, b) {kernel_shape=[3]}\n  y = Add(v, c)\n  output y\n}\n",
    };
    for (size_t i = 0; i < FR_COUNT_OF(graphs); i++) {
        rw_report rep = fuse_and_compare(graphs[i], rules, 1e-5);
        CHECK_INT(rep.after.nodes, 1);
        rw_report_free(&rep);
    }
    /* B' = B + c exactly, for c = 0.5 and B read back */
    rk_rules r = rules_from(rules);
    gk_graph *t = gk_parse("graph g {\n  input x : f32[1,1,4]\n  const w : f32[2,1,1] = [1, 2]\n"
                           "  const b : f32[2] = [0.25, -1]\n  const c : f32[2,1] = [0.5, 3]\n"
                           "  v = Conv(x, w, b) {kernel_shape=[1]}\n  y = Add(v, c)\n"
                           "  output y\n}\n");
    rw_report rep = apply(t, &r);
    ir_node *n = ir_find_value(t->g, "y")->producer;
    CHECK_INT(n->op, IR_OP_Conv);
    CHECK_INT(n->ninputs, 3);
    dg_context *dg = dg_new();
    const float *bias = ir_const_data(t->g, n->inputs[2], dg);
    CHECK(bias && n->inputs[2]->type->rank == 1 && n->inputs[2]->type->dims[0] == 2);
    CHECK(bias && bias[0] == 0.75f && bias[1] == 2.0f);
    dg_free(dg);
    rw_report_free(&rep);
    gk_free(t);
    /* a residual (not per channel) and an addend that enlarges the output are refused */
    static const struct {
        const char *graph, *why;
    } refused[] = {
        {"graph g {\n  input x : f32[1,4,5,5]\n  const w : f32[6,4,3,3] = random(seed=1)\n"
         "  const c : f32[1,6,3,3] = random(seed=3)\n"
         "  v = Conv(x, w) {kernel_shape=[3,3]}\n  y = Add(v, c)\n  output y\n}\n",
         "fold_add: 'c' is neither a scalar nor one value per output channel"},
        {"graph g {\n  input x : f32[1,4,5,5]\n  const w : f32[6,4,3,3] = random(seed=1)\n"
         "  const c : f32[2,6,1,1] = random(seed=3)\n"
         "  v = Conv(x, w) {kernel_shape=[3,3]}\n  y = Add(v, c)\n  output y\n}\n",
         "fold_add: adding 'c' changes the shape of 'v'"},
        {"graph g {\n  input x : f32[1,4,5,5]\n  const w : f32[6,4,3,3] = random(seed=1)\n"
         "  input b : f32[6]\n  const c : f32[6,1,1] = random(seed=3)\n"
         "  v = Conv(x, w, b) {kernel_shape=[3,3]}\n  y = Add(v, c)\n  output y\n}\n",
         "constant: fold_add needs the addend and the conv's bias to be constants"},
    };
    for (size_t i = 0; i < FR_COUNT_OF(refused); i++) {
        t = gk_parse(refused[i].graph);
        rep = apply(t, &r);
        const char *why = refusal(&rep, "conv_add_bias", "y");
        CHECK(why && strstr(why, refused[i].why));
        CHECK_INT(rep.after.nodes, 2);
        rw_report_free(&rep);
        gk_free(t);
    }
    rules_free(&r);
}

static void test_fold_transpose(void)
{
    const char *rules = "rule mm_t: MatMul(@a, Transpose(@w:const)) => Gemm(@a, @w)[fold_transpose]\n";
    const char *swap = "graph g {\n  input a : f32[3,8]\n  const w : f32[5,8] = random(seed=1)\n"
                       "  t = Transpose(w) {perm=[1,0]}\n  y = MatMul(a, t)\n  output y\n}\n";
    rk_rules r = rules_from(rules);
    gk_graph *t = gk_parse(swap), *original = gk_parse(swap);
    rw_report rep = apply(t, &r);
    ir_node *n = ir_find_value(t->g, "y")->producer;
    CHECK_INT(n->op, IR_OP_Gemm);
    CHECK_INT(ir_get_int(n, "transB"), 1);
    CHECK(worst_error(original, t) < 1e-6);
    rw_report_free(&rep);
    gk_free(t);
    gk_free(original);
    /* an identity permutation is no transpose: the node goes, transB stays 0 */
    const char *identity = "graph g {\n  input a : f32[3,8]\n  const w : f32[8,5] = random(seed=1)\n"
                           "  t = Transpose(w) {perm=[0,1]}\n  y = MatMul(a, t)\n  output y\n}\n";
    t = gk_parse(identity);
    original = gk_parse(identity);
    rep = apply(t, &r);
    n = ir_find_value(t->g, "y")->producer;
    CHECK(n->op == IR_OP_Gemm && ir_get_int(n, "transB") == 0);
    CHECK_INT(rep.after.nodes, 1);
    CHECK(worst_error(original, t) < 1e-6);
    rw_report_free(&rep);
    gk_free(t);
    gk_free(original);
    rules_free(&r);
}

/* ---- attention ---- */

static const char attention_rules[] =
    "rule attention: MatMul(Softmax{axis = -1}(Add([Mul | Div](MatMul(@q, Transpose(@k)), "
    "@s:const), @mask)), @v) => Attention(@q, @k, @v, @mask)[fold_attention]\n";

/* Scores from K^T of a [B,S,H,D] projection ([0,2,3,1]: a helper Transpose gives K), or of a
 * [B,H,S,D] K ([0,1,3,2]: K itself), scaled by a Mul or a Div. */
static void test_fold_attention(void)
{
    static const char *const graphs[] = {
        "graph g {\n  input q : f32[1,2,4,8]\n  input kr : f32[1,4,2,8]\n  input v : f32[1,2,4,8]\n"
        "  input mask : f32[1,1,1,4]\n  const s : f32[] = 0.35\n"
        "  kt = Transpose(kr) {perm=[0,2,3,1]}\n  sc = MatMul(q, kt)\n  m = Mul(sc, s)\n"
        "  a = Add(m, mask)\n  p = Softmax(a) {axis=-1}\n  y = MatMul(p, v)\n  output y\n}\n",
        "graph g {\n  input q : f32[1,2,4,8]\n  input k : f32[1,2,4,8]\n  input v : f32[1,2,4,8]\n"
        "  input mask : f32[4,4]\n  const d : f32[] = 2.8284271\n"
        "  kt = Transpose(k) {perm=[0,1,3,2]}\n  sc = MatMul(q, kt)\n  m = Div(sc, d)\n"
        "  a = Add(mask, m)\n  p = Softmax(a) {axis=-1}\n  y = MatMul(p, v)\n  output y\n}\n",
    };
    for (size_t i = 0; i < FR_COUNT_OF(graphs); i++) {
        rk_rules r = rules_from(attention_rules);
        gk_graph *t = gk_parse(graphs[i]), *original = gk_parse(graphs[i]);
        rw_report rep = apply(t, &r);
        CHECK_INT(fired(&rep, "attention"), 1);
        ir_node *n = ir_find_value(t->g, "y")->producer;
        CHECK_INT(n->op, IR_OP_Attention);
        CHECK_NEAR(ir_get_float(n, "scale"), i == 0 ? 0.35 : 1 / 2.8284271, 1e-6, 0);
        /* the first needs a helper Transpose for K; the second reads K itself */
        CHECK_INT(count_op(t->g, IR_OP_Transpose), i == 0 ? 1 : 0);
        CHECK(worst_error(original, t) < 1e-5);
        rw_report_free(&rep);
        gk_free(t);
        gk_free(original);
        rules_free(&r);
    }
}

/* ---- constants in guards and attributes; biased projections ---- */

static void test_constant_values(void)
{
    const char *guarded = "rule square: Pow(@x, @e:const) > Relu "
                          "=> ElementwiseChain(@x) {expr = \"relu(mul(x0, x0))\"} "
                          "where value(@e) == 2\n";
    rk_rules r = rules_from(guarded);
    gk_graph *t = gk_parse("graph g {\n  input x : f32[4]\n  const two : f32[] = 2\n"
                           "  const three : f32[] = 3\n  p = Pow(x, two)\n  y = Relu(p)\n"
                           "  q = Pow(x, three)\n  z = Relu(q)\n  output y\n  output z\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "square"), 1);
    CHECK_INT(ir_find_value(t->g, "y")->producer->op, IR_OP_ElementwiseChain);
    CHECK_INT(ir_find_value(t->g, "z")->producer->op, IR_OP_Relu); /* value(@e) is 3 */
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
    /* an attribute from a constant: LayerNormalization's epsilon */
    const char *ln = "rule ln: let d = Sub(@x, ReduceMean(@x) {axes = [-1]})\n"
                     "  Add(Mul(Div(d, Sqrt(Add(ReduceMean(Pow(d, @two:const)) {axes = [-1]}, "
                     "@eps:const))), @g:const), @b:const)\n"
                     "  => LayerNormalization(@x, @g, @b) {axis = -1, epsilon = @eps}\n"
                     "  where value(@two) == 2\n";
    const char *text = "graph g {\n  input x : f32[2,8]\n  const g1 : f32[8] = random(seed=1)\n"
                       "  const b1 : f32[8] = random(seed=2)\n  const two : f32[] = 2\n"
                       "  const eps : f32[] = 0.001\n  m = ReduceMean(x) {axes=[-1]}\n"
                       "  d = Sub(x, m)\n  sq = Pow(d, two)\n  var = ReduceMean(sq) {axes=[-1]}\n"
                       "  ve = Add(var, eps)\n  sd = Sqrt(ve)\n  n = Div(d, sd)\n"
                       "  sc = Mul(n, g1)\n  y = Add(sc, b1)\n  output y\n}\n";
    rw_report rep2 = fuse_and_compare(text, ln, 1e-4);
    CHECK_INT(rep2.after.nodes, 1);
    rw_report_free(&rep2);
    r = rules_from(ln);
    t = gk_parse(text);
    rep = apply(t, &r);
    CHECK_NEAR(ir_get_float(ir_find_value(t->g, "y")->producer, "epsilon"), 0.001, 1e-6, 0);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

static void test_concat_with_biases(void)
{
    const char *rules = "rule qkv: Add(MatMul(@x, @wq:const), @bq:const) & "
                        "Add(MatMul(@x, @wk:const), @bk:const) & "
                        "Add(MatMul(@x, @wv:const), @bv:const) => FusedQKV[concat_weights]\n";
    const char *text = "graph g {\n  input x : f32[2,3,16]\n"
                       "  const wq : f32[16,8] = random(seed=1)\n  const bq : f32[8] = random(seed=2)\n"
                       "  const wk : f32[16,4] = random(seed=3)\n  const bk : f32[4] = random(seed=4)\n"
                       "  const wv : f32[16,4] = random(seed=5)\n  const bv : f32[4] = random(seed=6)\n"
                       "  mq = MatMul(x, wq)\n  q = Add(mq, bq)\n  mk = MatMul(x, wk)\n"
                       "  k = Add(mk, bk)\n  mv = MatMul(x, wv)\n  v = Add(bv, mv)\n"
                       "  output q\n  output k\n  output v\n}\n";
    rw_report rep = fuse_and_compare(text, rules, 1e-5);
    CHECK_INT(fired(&rep, "qkv"), 1);
    CHECK_INT(rep.after.nodes, 1);
    rw_report_free(&rep);
}

/* ---- rounds, determinism, near misses ---- */

static void test_fixpoint(void)
{
    const char *rules = "rule conv_bn: Conv > BN => Conv[fold_bn]\n"
                        "rule conv_relu: Conv > Relu => FusedConvAct {act = Relu}\n";
    rk_rules r = rules_from(rules);
    gk_graph *t = gk_parse(conv_bn_relu), *original = gk_parse(conv_bn_relu);
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_bn"), 1);
    CHECK_INT(fired(&rep, "conv_relu"), 1); /* enabled by the first rewrite */
    CHECK_INT(rep.rounds, 3);
    CHECK(!rep.round_limit);
    CHECK_INT(rep.after.nodes, 1);
    CHECK(worst_error(original, t) < 1e-4);
    rw_report_free(&rep);
    gk_free(t);
    t = gk_parse(conv_bn_relu);
    rw_options opts = rw_options_default();
    opts.max_rounds = 1;
    rep = apply_with(t, &r, opts);
    CHECK(rep.round_limit);
    CHECK_INT(rep.after.nodes, 2);
    rw_report_free(&rep);
    gk_free(t);
    gk_free(original);
    rules_free(&r);
}

static void test_determinism(void)
{
    rk_rules r = rules_from(cnn_rules);
    char *texts[2];
    for (int i = 0; i < 2; i++) {
        gk_graph *t = gk_parse(residual_graph);
        rw_options opts = rw_options_default();
        opts.validate_each = i == 0; /* the debug path must not change the result */
        rw_report rep = apply_with(t, &r, opts);
        texts[i] = gk_graph_text(t->g);
        rw_report_free(&rep);
        gk_free(t);
    }
    CHECK_STR(texts[0], texts[1]);
    free(texts[0]);
    free(texts[1]);
    rules_free(&r);
}

static void test_near_misses(void)
{
    rk_rules r = rules_from("rule conv_bn_relu: Conv > BN > Relu => FusedConvAct[fold_bn]\n");
    gk_graph *t = gk_parse(residual_graph);
    rw_options opts = rw_options_default();
    opts.explain = true;
    rw_report rep = apply_with(t, &r, opts);
    CHECK_INT(rep.near_misses.len, 1);
    if (rep.near_misses.len) {
        CHECK_STR(rep.near_misses.items[0].node, "y");
        CHECK_STR(rep.near_misses.items[0].reason,
                  "`BN`: expected BatchNormalization, found 'a' (Add)");
    }
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* A graph's first lines: the input (f32[1,2,1,1]), a Conv weight w and a BatchNormalization's
 * s, b, m, v, all shared by the blocks that follow. */
static void bn_graph_header(FILE *g, const char *input)
{
    fprintf(g, "graph g {\n  input %s : f32[1,2,1,1]\n  const w : f32[2,2,1,1] = random(seed=1)\n"
               "  const s : f32[2] = random(seed=2, lo=0.5, hi=1.5)\n"
               "  const b : f32[2] = random(seed=3)\n  const m : f32[2] = random(seed=4)\n"
               "  const v : f32[2] = random(seed=5, lo=0.5, hi=1.5)\n",
            input);
}

/* More matches than the driver copies out of the matcher at once (MATCH_CHUNK, 4096): every one is
 * kept, with and without --explain (which keeps the matcher's near misses, so never resets it). */
static void test_many_matches(void)
{
    enum { BLOCKS = 3000 }; /* two matches each: conv_bn_act at the Relu, conv_bn at the BN */
    char *text = NULL;
    size_t len = 0;
    FILE *g = open_memstream(&text, &len);
    bn_graph_header(g, "x");
    for (int i = 0; i < BLOCKS; i++) {
        if (i)
            fprintf(g, "  c%d = Conv(r%d, w) {kernel_shape=[1,1]}\n", i, i - 1);
        else
            fprintf(g, "  c0 = Conv(x, w) {kernel_shape=[1,1]}\n");
        fprintf(g, "  n%d = BatchNormalization(c%d, s, b, m, v)\n  r%d = Relu(n%d)\n", i, i, i, i);
    }
    fprintf(g, "  output r%d\n}\n", BLOCKS - 1);
    fclose(g);
    rk_rules r = rules_from(cnn_rules);
    char *texts[2];
    for (int explain = 0; explain < 2; explain++) {
        gk_graph *t = gk_parse(text);
        rw_options opts = rw_options_default();
        opts.explain = explain;
        opts.max_rounds = 1; /* a match lost in round 1 would not be found again in round 2 */
        rw_report rep = apply_with(t, &r, opts);
        CHECK_INT(fired(&rep, "conv_bn_act"), BLOCKS);
        CHECK_INT(rep.refused.len, BLOCKS); /* conv_bn, overlapped at each block */
        CHECK_INT(rep.after.nodes, BLOCKS);
        texts[explain] = gk_graph_text(t->g);
        rw_report_free(&rep);
        gk_free(t);
    }
    CHECK_STR(texts[0], texts[1]);
    free(texts[0]);
    free(texts[1]);
    free(text);
    rules_free(&r);
}

/* ---- overlaps counted, not recorded ---- */

/* A chain of blocks of four kinds, each giving its own overlap or refusal: Conv > BN > Relu
 * (conv_bn_act takes conv_bn's nodes), Conv > Add > Relu (conv_add_relu takes add_relu's), a Conv
 * read twice (conv_act refused for fan-out: no overlap), and Identity > Add > Relu (drop_identity,
 * ranked first, removes the value add_relu reads: an earlier rewrite, at a root that stays). */
static char *overlap_blocks(int blocks)
{
    char *text = NULL;
    size_t len = 0;
    FILE *g = open_memstream(&text, &len);
    bn_graph_header(g, "r0");
    for (int i = 1; i <= blocks; i++) {
        int p = i - 1;
        switch (i * 7 % 4) { /* the kinds in a mixed order */
        case 0:
            fprintf(g, "  c%d = Conv(r%d, w) {kernel_shape=[1,1]}\n", i, p);
            fprintf(g, "  n%d = BatchNormalization(c%d, s, b, m, v)\n", i, i);
            fprintf(g, "  r%d = Relu(n%d)\n", i, i);
            break;
        case 1:
            fprintf(g, "  c%d = Conv(r%d, w) {kernel_shape=[1,1]}\n", i, p);
            fprintf(g, "  a%d = Add(c%d, r%d)\n  r%d = Relu(a%d)\n", i, i, p, i, i);
            break;
        case 2:
            fprintf(g, "  c%d = Conv(r%d, w) {kernel_shape=[1,1]}\n", i, p);
            fprintf(g, "  t%d = Relu(c%d)\n  r%d = Add(t%d, c%d)\n", i, i, i, i, i);
            break;
        default:
            fprintf(g, "  d%d = Identity(r%d)\n  a%d = Add(d%d, r%d)\n  r%d = Relu(a%d)\n", i, p,
                    i, i, p, i, i);
        }
    }
    fprintf(g, "  output r%d\n}\n", blocks);
    fclose(g);
    return text;
}

/* With count_overlaps the text report is the same bytes (the pairs in the same order, the same
 * counts and totals), no overlap is recorded, and the other refusals are as before. */
static void test_counted_overlaps(void)
{
    enum { BLOCKS = 200 };
    char *graph = overlap_blocks(BLOCKS), rules[1024];
    snprintf(rules, sizeof rules, "%s%s", cnn_rules,
             "rule add_relu: Add(@p, @q) > Relu => ElementwiseChain(@p, @q) "
             "{expr = \"relu(add(x0, x1))\"}\n"
             "rule drop_identity priority 9: Identity(@x) => @x\n");
    rk_rules r = rules_from(rules);
    char *texts[2];
    size_t recorded[2] = {0}, counts[2] = {0}, others[2] = {0};
    for (int counted = 0; counted < 2; counted++) {
        gk_graph *t = gk_parse(graph);
        rw_options opts = rw_options_default();
        opts.count_overlaps = counted;
        rw_report rep = apply_with(t, &r, opts);
        char buf[RW_REASON_SIZE];
        for (size_t i = 0; i < rep.refused.len; i++) {
            bool overlap = strncmp(rw_report_refusal(&rep, i, buf).reason, "overlap:", 8) == 0;
            recorded[counted] += overlap;
            others[counted] += !overlap;
        }
        for (size_t i = 0; i < rep.noverlaps; i++)
            counts[counted] += rep.overlaps[i].count;
        CHECK_INT(rep.noverlaps, counted ? 3 : 0);
        texts[counted] = plain_report(&rep);
        rw_report_free(&rep);
        gk_free(t);
    }
    CHECK_STR(texts[1], texts[0]);
    CHECK_INT(recorded[1], 0);
    CHECK_INT(counts[0], 0);
    CHECK_INT(counts[1], recorded[0]);
    CHECK_INT(recorded[0], 3 * (BLOCKS / 4)); /* the three pairs, one per block of their kind */
    CHECK_INT(others[1], others[0]);
    CHECK_INT(others[0], BLOCKS / 4);
    CHECK(strstr(texts[0], "  conv_bn_act superseded conv_bn 50 times\n"
                           "  conv_add_relu superseded add_relu 50 times\n"
                           "  an earlier rewrite superseded add_relu 50 times\n") != NULL);
    free(texts[0]);
    free(texts[1]);
    free(graph);
    rules_free(&r);
}

/* ---- chains of forwarding rewrites ---- */

/* A rule file's text (tests run in tests/rewrite). */
static char *file_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    FR_CHECK(f != NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, out);
    fclose(out);
    fclose(f);
    return text;
}

/* One no-op of each forwarding rule of the library, reading `in` (a value of f32[2,3,4,5]). */
static void random_no_op(FILE *g, uint64_t *seed, const char *out, const char *in)
{
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    switch ((*seed >> 33) % 8) {
    case 0: fprintf(g, "  %s = Identity(%s)\n", out, in); break;
    case 1: fprintf(g, "  %s = Dropout(%s)\n", out, in); break;
    case 2: fprintf(g, "  %s = Dropout(%s, r)\n", out, in); break;
    case 3: fprintf(g, "  %s = Dropout(%s, r, off)\n", out, in); break;
    case 4: fprintf(g, "  %s = Cast(%s) {to=1}\n", out, in); break;
    case 5: fprintf(g, "  %s = Transpose(%s) {perm=[0,1,2,3]}\n", out, in); break;
    case 6:
        fprintf(g, "  %s_t = Transpose(%s) {perm=[0,2,1,3]}\n", out, in);
        fprintf(g, "  %s = Transpose(%s_t) {perm=[0,2,1,3]}\n", out, out);
        break;
    default:
        fprintf(g, "  %s_t = Reshape(%s, flat)\n", out, in);
        fprintf(g, "  %s = Reshape(%s_t, back)\n", out, out);
        break;
    }
}

/* Random graphs of chains of no-ops of every forwarding rule of the library (cnn.rules'
 * no_identity, no_dropout*, no_cast; transformer.rules' no_transpose, transpose_pair,
 * reshape_back), between Relus and Adds that read earlier values (fan-out into the chains): every
 * single rewrite and every round must leave a valid graph (apply validates after each), the
 * no-ops all go in the first round, and the outputs do not change. */
static void test_forward_chains_random(void)
{
    char *cnn = file_text("../../rules/cnn.rules"),
         *tf = file_text("../../rules/transformer.rules");
    char *both = malloc(strlen(cnn) + strlen(tf) + 2);
    sprintf(both, "%s\n%s", cnn, tf);
    rk_rules r = rules_from(both);
    uint64_t seed = 19;
    for (int trial = 0; trial < 60; trial++) {
        char *text = NULL;
        size_t len = 0;
        FILE *g = open_memstream(&text, &len);
        fprintf(g, "graph g {\n  input x : f32[2,3,4,5]\n  const r : f32[] = 0.25\n"
                   "  const off : bool[] = 0\n  const flat : i64[2] = [6,20]\n"
                   "  const back : i64[4] = [2,3,4,5]\n  v0 = Relu(x)\n");
        int nvalues = 1, keep = 0;
        for (int step = 0; step < 12; step++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int chain = 1 + (int)((seed >> 35) % 4), from = (int)((seed >> 40) % (uint64_t)nvalues);
            char in[32], out[32];
            snprintf(in, sizeof in, "v%d", from);
            for (int k = 0; k < chain; k++) {
                snprintf(out, sizeof out, "n%d_%d", step, k);
                random_no_op(g, &seed, out, in);
                snprintf(in, sizeof in, "%s", out);
            }
            if ((seed >> 50) % 2)
                fprintf(g, "  v%d = Relu(%s)\n", nvalues, in);
            else
                fprintf(g, "  v%d = Add(%s, v%d)\n", nvalues, in,
                        (int)((seed >> 45) % (uint64_t)nvalues));
            keep++;
            nvalues++;
        }
        fprintf(g, "  output v%d\n}\n", nvalues - 1);
        fclose(g);
        /* validated after every rewrite (use lists rebuilt each time), and as `apply` runs in a
         * release build: only after each round, the use lists those of the round's start */
        for (int each = 0; each < 2; each++) {
            gk_graph *t = gk_parse(text), *original = gk_parse(text);
            rw_options opts = rw_options_default();
            opts.validate_each = each;
            rw_report rep = apply_with(t, &r, opts);
            CHECK_INT(rep.after.nodes, keep + 1);
            CHECK(rep.rounds <= 2);
            CHECK(worst_error(original, t) == 0);
            if (rep.after.nodes != (size_t)(keep + 1))
                fprintf(stderr, "trial %d:\n%s", trial, text);
            rw_report_free(&rep);
            gk_free(t);
            gk_free(original);
        }
        free(text);
    }
    rules_free(&r);
    free(both);
    free(cnn);
    free(tf);
}

/* carry_attrs' pairs are kept per rule for its last match's ops (plan_attrs.c, carry_list): a
 * rule whose pattern node matches another op between matches carries what that op declares, and
 * the first op's pairs again after it (an AveragePool's count_include_pad, which a MaxPool's
 * pairs lack). */
static void test_carry_alternatives(void)
{
    rk_rules r = rules_from("rule pool_id: [AveragePool | MaxPool] > Identity => AveragePool\n");
    gk_graph *t = gk_parse(
        "graph g {\n  input x : f32[1,2,8,8]\n"
        "  p1 = MaxPool(x) {kernel_shape=[3,3], strides=[1,1], pads=[1,1,1,1]}\n"
        "  i1 = Identity(p1)\n"
        "  p2 = AveragePool(i1) {kernel_shape=[2,2], count_include_pad=1}\n  i2 = Identity(p2)\n"
        "  p3 = MaxPool(i2) {kernel_shape=[2,2], strides=[2,2]}\n  i3 = Identity(p3)\n"
        "  output i3\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "pool_id"), 3);
    static const char *const outs[] = {"i1", "i2", "i3"};
    static const int64_t kernel[] = {3, 2, 2}, stride[] = {1, 1, 2}, count[] = {0, 1, 0};
    for (int i = 0; i < 3; i++) {
        const ir_node *n = ir_find_value(t->g, outs[i])->producer;
        CHECK_INT(n->op, IR_OP_AveragePool);
        const ir_attr *ks = ir_node_attr(n, "kernel_shape"), *st = ir_node_attr(n, "strides");
        CHECK(ks && ks->count == 2 && ks->v.ints[0] == kernel[i]);
        CHECK(i == 1 ? !st : st && st->count == 2 && st->v.ints[0] == stride[i]);
        const ir_attr *c = ir_node_attr(n, "count_include_pad");
        CHECK_INT(c ? c->v.i : 0, count[i]);
        CHECK_INT(ir_node_attr(n, "pads") != NULL, i == 0);
    }
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

/* A fused node whose attributes are the last fused node's (same op, names, values) shares its array
 * (commit.c, fused_attrs); one that differs in a value gets its own, and so does the next. */
static void test_shared_attrs(void)
{
    rk_rules r = rules_from("rule conv_relu: Conv > Relu => FusedConvAct {act = Relu}\n");
    gk_graph *t = gk_parse(
        "graph g {\n  input x : f32[1,4,8,8]\n  const w : f32[4,4,1,1] = random(seed=1)\n"
        "  c1 = Conv(x, w) {kernel_shape=[1,1]}\n  r1 = Relu(c1)\n"
        "  c2 = Conv(r1, w) {kernel_shape=[1,1]}\n  r2 = Relu(c2)\n"
        "  c3 = Conv(r2, w) {kernel_shape=[1,1], strides=[2,2]}\n  r3 = Relu(c3)\n"
        "  c4 = Conv(r3, w) {kernel_shape=[1,1]}\n  r4 = Relu(c4)\n"
        "  output r4\n}\n");
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_relu"), 4);
    const ir_node *n[4];
    for (int i = 0; i < 4; i++) {
        char name[4] = {'r', (char)('1' + i), 0};
        n[i] = ir_find_value(t->g, name)->producer;
        CHECK_INT(n[i]->op, IR_OP_FusedConvAct);
    }
    CHECK(n[0]->attrs == n[1]->attrs);
    CHECK(n[2]->attrs != n[1]->attrs && n[3]->attrs != n[2]->attrs);
    const ir_attr *st = ir_node_attr(n[2], "strides");
    CHECK(st && st->count == 2 && st->v.ints[0] == 2);
    CHECK(!ir_node_attr(n[1], "strides") && !ir_node_attr(n[3], "strides"));
    CHECK_STR(ir_get_string(n[3], "act"), "Relu");
    CHECK_INT(ir_find_value(t->g, "r4")->type->dims[2], 4);
    rw_report_free(&rep);
    gk_free(t);
    rules_free(&r);
}

int main(void)
{
    RUN(test_carry_alternatives);
    RUN(test_shared_attrs);
    RUN(test_conv_bn_relu);
    RUN(test_fold_bn_variants);
    RUN(test_fold_bn_refusals);
    RUN(test_fan_out_and_outputs);
    RUN(test_exports_and_order);
    RUN(test_convexity);
    RUN(test_overlap_priority);
    RUN(test_kernel_support);
    RUN(test_precision);
    RUN(test_gelu_flavours);
    RUN(test_residual_shape);
    RUN(test_forward);
    RUN(test_concat_weights_gqa);
    RUN(test_budget);
    RUN(test_fixpoint);
    RUN(test_determinism);
    RUN(test_near_misses);
    RUN(test_many_matches);
    RUN(test_counted_overlaps);
    RUN(test_fold_scale);
    RUN(test_fold_add);
    RUN(test_fold_transpose);
    RUN(test_fold_attention);
    RUN(test_constant_values);
    RUN(test_concat_with_biases);
    RUN(test_forward_chains_random);
    return unit_finish();
}
