/* The parts of the CUDA backend that run without a device: the ElementwiseChain code generator
 * (its exact output, and NVRTC compiling it to PTX for sm_90 in every dtype) and the CUDA
 * column's supports checks (a case each must accept beside a case each must refuse, with the
 * reason). */
#include "tests/unit.h"

#include "base/diag.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_registry.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *source_of(ar_arena *arena, const char *expr, uint32_t ninputs)
{
    ir_ew_program prog;
    const char *err;
    size_t at;
    if (!ir_ew_parse(arena, expr, ninputs, &prog, &err, &at)) {
        fprintf(stderr, "%s: %s at %zu\n", expr, err, at);
        return "";
    }
    return kn_cuda_ewchain_source(arena, &prog);
}

static void test_source_text(void)
{
    ar_arena *a = ar_new();
    CHECK_STR(source_of(a, "mul(sigmoid(add(x0, x1)), sub(x2, 1.5))", 3),
              "fr_mul(fr_sigmoid(fr_add(x0, x1)), fr_sub(x2, 1.5f))");
    CHECK_STR(source_of(a, "x0", 1), "x0");
    CHECK_STR(source_of(a, "clip(x0, -2, 3e-4)", 1),
              "fr_clip(x0, (-2.0f), 0.000300000014f)");
    CHECK_STR(source_of(a, "gelu_tanh(neg(x1))", 2), "fr_gelu_tanh(fr_neg(x1))");
    CHECK_STR(source_of(a, "add(x0, 1e+30)", 1), "fr_add(x0, 1.00000002e+30f)");
    ar_free(a);
}

/* A program of one constant, as ir_ew_parse makes for a literal (the language has no literal for
 * NaN or -0, which a rule's folded constant can still carry). */
static const char *const_source(ar_arena *arena, double value)
{
    ir_ew_instr ins = {.op = IR_EW_CONST, .value = value};
    ir_ew_program prog = {.code = &ins, .len = 1, .depth = 1};
    return kn_cuda_ewchain_source(arena, &prog);
}

/* Constants the CPU evaluates as inf, -inf, NaN and -0 are printed so that NVRTC takes them and
 * the GPU computes the same float: 1e39 overflows float to inf, as (float)1e39 does on the CPU. */
static void test_constants(void)
{
    ar_arena *a = ar_new();
    CHECK_STR(source_of(a, "add(x0, 1e39)", 1), "fr_add(x0, __int_as_float(0x7f800000))");
    CHECK_STR(const_source(a, -1e39), "(-__int_as_float(0x7f800000))");
    CHECK_STR(const_source(a, NAN), "__int_as_float(0x7fc00000)");
    CHECK_STR(const_source(a, -0.0), "(-0.0f)");
    CHECK_STR(const_source(a, 0.0), "0.0f");
    CHECK_STR(const_source(a, 16777217.0), "16777216.0f"); /* the nearest float, as the CPU */
    CHECK_STR(const_source(a, 1e-45), "1.40129846e-45f");   /* the smallest subnormal */
    char err[KC_ERROR_SIZE];
    const char *body = ar_printf(a, "fr_add(fr_add(fr_add(x0, %s), fr_mul(x0, %s)), fr_add(%s, %s))",
                                 const_source(a, INFINITY), const_source(a, -INFINITY),
                                 const_source(a, NAN), const_source(a, -0.0));
    const kc_dtype dts[] = {KC_F32, KC_F16, KC_BF16};
    for (size_t i = 0; i < 3; i++) {
        bool ok = kc_ewchain_compile_check(body, 1, dts[i], err);
        if (!ok)
            fprintf(stderr, "%s\n", err);
        CHECK(ok);
    }
    ar_free(a);
}

/* Every function of the expression language (IR_EW_FUNCS, so that a new one is compiled here
 * without editing this test), summed into one expression over x0, x1 and 2. */
static const char *every_function(ar_arena *a)
{
    static const char *const calls[] = {
#define CALL(name, n)                                                                              \
    n == 1 ? #name "(x0)" : n == 2 ? #name "(x0, x1)" : #name "(x0, x1, 2)",
        IR_EW_FUNCS(CALL)
#undef CALL
    };
    const char *sum = "x0";
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        sum = ar_printf(a, "add(%s, %s)", sum, calls[i]);
    CHECK((size_t)IR_EW_COUNT - 2 == sizeof calls / sizeof calls[0]);
    return sum;
}

static void test_nvrtc_compiles(void)
{
    ar_arena *a = ar_new();
    const char *body = source_of(a, every_function(a), 2);
    /* each function by its prelude name, so a missing fr_<name> is what NVRTC reports */
#define SEEN(name, n) CHECK(strstr(body, "fr_" #name "(") != NULL);
    IR_EW_FUNCS(SEEN)
#undef SEEN
    char err[KC_ERROR_SIZE];
    const kc_dtype dts[] = {KC_F32, KC_F16, KC_BF16};
    for (size_t i = 0; i < 3; i++) {
        bool ok = kc_ewchain_compile_check(body, 2, dts[i], err);
        if (!ok)
            fprintf(stderr, "dtype %d: %s\n", (int)dts[i], err);
        CHECK(ok);
    }
    /* The largest input count. */
    CHECK(kc_ewchain_compile_check("fr_add(x0, x31)", 32, KC_F32, err));
    /* A body that is not C is reported, not crashed on. */
    CHECK(!kc_ewchain_compile_check("fr_nope(x0)", 1, KC_F32, err));
    CHECK(strstr(err, "NVRTC") != NULL);
    ar_free(a);
}

/* The first node of `text` and what the CUDA column says about it. */
static bool supported(const char *text, char *why)
{
    dg_context *dg = dg_new();
    dg_source src = {"t.graph", text, strlen(text)};
    ir_graph *g = ir_parse(&src, dg);
    bool valid = g && ir_validate(g, dg);
    if (!valid)
        dg_print(dg, stderr);
    CHECK(valid);
    bool ok = false;
    if (valid) {
        const ir_node *n = g->nodes.items[0];
        switch (n->op) {
#define IR_OP(name, ...)                                                                           \
    case IR_OP_##name: ok = kn_cuda_supports_##name(g, n, why); break;
#include "ir/fused_ops.def"
#undef IR_OP
        default: ok = kn_cuda_onnx_supports(g, n, why); break;
        }
    }
    if (g)
        ir_graph_free(g);
    dg_free(dg);
    return ok;
}

static void test_supports(void)
{
    char why[KN_WHY_SIZE];
    CHECK(supported("graph t {\n input x : f32[1,3,8,8]\n input w : f32[4,3,3,3]\n"
                    " y = FusedConvAct(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]}\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f32[1,3,8,8]\n input w : f32[4,3,3,3]\n"
                     " y = FusedConvAct(x, w) {kernel_shape=[3,3], pads=[0,0,1,1]}\n output y\n}\n",
                     why));
    CHECK_STR(why, "pads [0,0,1,1] are asymmetric; cuDNN pads symmetrically");
    CHECK(!supported("graph t {\n input x : f32[1,3,8,8,8]\n input w : f32[4,3,3,3,3]\n"
                     " y = FusedConvAct(x, w) {kernel_shape=[3,3,3]}\n output y\n}\n", why));
    CHECK_STR(why, "the cuDNN kernel runs 2-D convolutions; X has rank 5");
    CHECK(supported("graph t {\n input a : f16[4,64]\n input b : f16[64,8]\n"
                    " y = GemmEpilogue(a, b) {act=\"Gelu\"}\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input a : f16[4,33]\n input b : f16[33,8]\n"
                     " y = GemmEpilogue(a, b)\n output y\n}\n", why));
    CHECK_STR(why, "A's last dim = 33: rows of 66 bytes are not 16-byte aligned, as cuBLASLt's "
                   "kernels need");
    CHECK(!supported("graph t {\n input a : f32[4,2,64]\n input b : f32[2,64,8]\n"
                     " y = GemmEpilogue(a, b) {transBatchA=1}\n output y\n}\n",
                     why));
    CHECK_STR(why, "transBatchA/transBatchB: the cuBLASLt kernel reads each operand's matrices "
                   "contiguous, not interleaved along its batch dims");
    CHECK(supported("graph t {\n input q : f32[1,2,4,128]\n input k : f32[1,1,4,128]\n"
                    " input v : f32[1,1,4,128]\n y = Attention(q, k, v)\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input q : f32[1,2,4,256]\n input k : f32[1,1,4,256]\n"
                     " input v : f32[1,1,4,256]\n y = Attention(q, k, v)\n output y\n}\n", why));
    CHECK_STR(why, "head dims 256 and 256; the CUDA kernel handles up to 128");
    /* BSHD: the heads are dim 2 (70000 of them, past the grid's 65535), the positions dim 1 */
    CHECK(supported("graph t {\n input q : f32[1,70000,2,64]\n input c : f32[70000,32]\n"
                    " y = Attention(q, q, q, _, c, c) {layout=\"BSHD\"}\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input q : f32[1,70000,2,64]\n"
                     " y = Attention(q, q, q)\n output y\n}\n", why));
    CHECK_STR(why, "batch 1 or heads 70000 above the 65535 of the kernel's grid");
    /* the key-padding mask: i32 on the device, i64 on the CPU */
    CHECK(supported("graph t {\n input q : f32[2,4,3,8]\n input km : i32[2,4]\n"
                    " y = Attention(q, q, q, _, _, _, km) {layout=\"BSHD\"}\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input q : f32[2,4,3,8]\n input km : i64[1,4]\n"
                     " y = Attention(q, q, q, _, _, _, km) {layout=\"BSHD\"}\n output y\n}\n",
                    why));
    CHECK_STR(why, "key_mask is i64; the CUDA kernel reads an i32 key_mask");
    /* the bias: Q's dtype on the device */
    CHECK(supported("graph t {\n input q : f32[2,4,3,8]\n input b : f32[1,4,3,3]\n"
                    " y = Attention(q, q, q, _, _, _, _, b)\n output y\n}\n",
                    why));
    /* packed QKV: the GEMM's rows aligned as FusedQKV's, the head dims within the kernel's */
    CHECK(supported("graph t {\n input x : f32[2,3,16]\n input w : f32[16,48]\n input b : f32[48]\n"
                    " y = Attention(x, w, b) {layout=\"BSHD\", qkv_sizes=[16,16,16], num_heads=2}\n"
                    " output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f32[2,3,512]\n input w : f32[512,1536]\n"
                     " input b : f32[1536]\n y = Attention(x, w, b) {layout=\"BSHD\", "
                     "qkv_sizes=[512,512,512], num_heads=2}\n output y\n}\n",
                     why));
    CHECK_STR(why, "packed head dims above the CUDA kernel's 128");
    CHECK(!supported("graph t {\n input a : i8[4,30]\n input as : f32[]\n input b : i8[30,8]\n"
                     " input bs : f32[]\n y = QGemm(a, as, b, bs)\n output y\n}\n", why));
    CHECK_STR(why, "K = 30 and N = 8 must be multiples of 4 for cuBLASLt's int8 GEMM");
    CHECK(supported("graph t {\n input x : bf16[3,5]\n input s : bf16[5]\n"
                    " y = RMSNorm(x, s)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : f32[1,4,10]\n input wd : f32[4,1,3]\n"
                    " input wp : f32[6,4,1]\n y = SeparableConv(x, wd, wp) {group=4}\n"
                    " output y\n}\n", why));
    CHECK(!supported("graph t {\n input x : f32[1,4,6,6,6]\n input wd : f32[4,1,3,3,3]\n"
                     " input wp : f32[6,4,1,1,1]\n y = SeparableConv(x, wd, wp) {group=4}\n"
                     " output y\n}\n", why));
    CHECK_STR(why, "the CUDA kernel runs 1-D or 2-D convolutions; X has rank 5");
    CHECK(!supported("graph t {\n input x : f32[1,4,6,6]\n input wd : f32[4,1,3,3]\n"
                     " input wp : f32[6,4,1,1]\n"
                     " y = SeparableConv(x, wd, wp) {group=4, auto_pad=\"SAME_UPPER\"}\n"
                     " output y\n}\n", why));
    CHECK_STR(why, "auto_pad SAME_UPPER: the CUDA kernel takes explicit pads");
    CHECK(supported("graph t {\n input x : f16[1,8,5,5]\n input w1 : f16[2,8,1,1]\n"
                    " input b1 : f16[2]\n input w2 : f16[8,2,1,1]\n input b2 : f16[8]\n"
                    " y = SqueezeExcite(x, w1, b1, w2, b2)\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input x : f32[1,5000,2,2]\n input w1 : f32[8,5000,1,1]\n"
                     " input b1 : f32[8]\n input w2 : f32[5000,8,1,1]\n input b2 : f32[5000]\n"
                     " y = SqueezeExcite(x, w1, b1, w2, b2)\n output y\n}\n", why));
    CHECK_STR(why, "5000 channels (8 reduced); the CUDA kernel keeps at most 4096 of each in "
                   "shared memory");
}

/* The expression the elementwise table gives the first node of `text`. */
static const char *expansion(ar_arena *arena, const char *text)
{
    dg_context *dg = dg_new();
    dg_source src = {"t.graph", text, strlen(text)};
    ir_graph *g = ir_parse(&src, dg);
    CHECK(g && ir_validate(g, dg));
    const char *out = "(refused)";
    kn_cuda_ew_expr e;
    char why[KN_WHY_SIZE];
    if (g && kn_cuda_ew_expand(arena, g->nodes.items[0], &e, why)) {
        out = ar_printf(arena, "%s | %s", e.expr, e.body);
        /* the inputs the expression reads, as node input indices */
        for (uint32_t i = 0; i < e.ninputs; i++)
            out = ar_printf(arena, "%s | x%u=in%u", out, i, e.inputs[i]);
    }
    if (g)
        ir_graph_free(g);
    dg_free(dg);
    return out;
}

/* The catalog ops of the elementwise table compile with NVRTC in every storage dtype (the
 * expressions use only prelude functions, but the text generated from their templates is what
 * runs). */
static void test_catalog_rows_compile(void)
{
    static const char *const graphs[] = {
        "graph t {\n input x : f32[4]\n input z : f32[4]\n y = Sum(x, z, x)\n output y\n}\n",
        "graph t {\n input x : f32[4]\n input z : f32[4]\n y = Mean(x, z)\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Softsign(x)\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Mish(x)\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Selu(x)\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Celu(x) {alpha=-2}\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = ThresholdedRelu(x) {alpha=-0.5}\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Shrink(x) {bias=2, lambd=0}\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Round(x)\n output y\n}\n",
        "graph t {\n input x : f32[4]\n y = Acosh(x)\n output y\n}\n",
    };
    const kc_dtype dts[] = {KC_F32, KC_F16, KC_BF16};
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        ar_arena *a = ar_new();
        dg_context *dg = dg_new();
        dg_source src = {"t.graph", graphs[i], strlen(graphs[i])};
        ir_graph *g = ir_parse(&src, dg);
        CHECK(g && ir_validate(g, dg));
        kn_cuda_ew_expr e;
        char why[KN_WHY_SIZE];
        bool expanded = g && kn_cuda_ew_expand(a, g->nodes.items[0], &e, why);
        CHECK(expanded);
        for (size_t d = 0; expanded && d < 3; d++) {
            char err[KC_ERROR_SIZE];
            bool ok = kc_ewchain_compile_check(e.body, e.ninputs, dts[d], err);
            if (!ok)
                fprintf(stderr, "%s: %s\n", e.expr, err);
            CHECK(ok);
        }
        if (g)
            ir_graph_free(g);
        dg_free(dg);
        ar_free(a);
    }
}

/* Plain ONNX ops: the elementwise table's expressions (attributes, absent optional inputs,
 * variadic folds, inputs not read), and what the other plain-op checks accept and refuse. */
static void test_onnx_ops(void)
{
    ar_arena *a = ar_new();
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n input m : f32[]\n"
                           " y = Clip(x, _, m)\n output y\n}\n"),
              "clip(x0, -1e39, x1) | fr_clip(x0, (-__int_as_float(0x7f800000)), x1) | x0=in0 | "
              "x1=in2");
    CHECK_STR(expansion(a, "graph t {\n input x : f16[4]\n y = LeakyRelu(x) {alpha=0.2}\n"
                           " output y\n}\n"),
              "leakyrelu(x0, 0.200000003) | fr_leakyrelu(x0, 0.200000003f) | x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n y = HardSigmoid(x)\n output y\n}\n"),
              "hardsigmoid(x0, 0.200000003, 0.5) | fr_hardsigmoid(x0, 0.200000003f, 0.5f) | "
              "x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n input z : f32[1]\n"
                           " y = Max(x, z, x)\n output y\n}\n"),
              "max(max(x0, x1), x2) | fr_max(fr_max(x0, x1), x2) | x0=in0 | x1=in1 | x2=in2");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n"
                           " y = Gelu(x) {approximate=\"tanh\"}\n output y\n}\n"),
              "gelu_tanh(x0) | fr_gelu_tanh(x0) | x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[1,4]\n input s : i64[2]\n"
                           " y = Expand(x, s)\n output y\n}\n"),
              "x0 | x0 | x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n input z : f32[1]\n"
                           " y = Mean(x, z, x)\n output y\n}\n"),
              "div(add(add(x0, x1), x2), 3) | fr_div(fr_add(fr_add(x0, x1), x2), 3.0f) | x0=in0 | "
              "x1=in1 | x2=in2");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n y = Selu(x) {gamma=2}\n output y\n}\n"),
              "mul(elu(x0, 1.67326319), 2) | fr_mul(fr_elu(x0, 1.67326319f), 2.0f) | x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n y = Celu(x) {alpha=0.5}\n"
                           " output y\n}\n"),
              "add(relu(x0), min(0, mul(0.5, sub(exp(div(x0, 0.5)), 1)))) | "
              "fr_add(fr_relu(x0), fr_min(0.0f, fr_mul(0.5f, fr_sub(fr_exp(fr_div(x0, 0.5f)), "
              "1.0f)))) | x0=in0");
    char why[KN_WHY_SIZE];
    CHECK(supported("graph t {\n input x : bf16[4,3]\n input z : bf16[3]\n"
                    " y = Add(x, z)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : f16[4,3]\n y = ReduceLogSumExp(x) {axes=[1]}\n"
                    " output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : i32[4,3]\n y = ReduceProd(x)\n output y\n}\n", why));
    CHECK_STR(why, "input 0 is i32; the CUDA kernel takes f32, f16 or bf16");
    CHECK(supported("graph t {\n input x : i64[4,3]\n input z : i64[3]\n"
                    " y = GreaterOrEqual(x, z)\n output y\n}\n",
                    why));
    CHECK(supported("graph t {\n input x : bool[4,3]\n input z : bool[3]\n"
                    " y = Xor(x, z)\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f64[4]\n input z : f64[4]\n"
                     " y = LessOrEqual(x, z)\n output y\n}\n",
                     why));
    CHECK_STR(why, "f64: no CUDA kernel takes it");
    CHECK(supported("graph t {\n input x : f16[4]\n y = IsInf(x) {detect_negative=0}\n"
                    " output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f16[4]\n"
                     " y = IsInf(x) {detect_negative=0, detect_positive=0}\n output y\n}\n",
                     why));
    CHECK_STR(why, "IsInf detecting neither infinity has no CUDA kernel");
    CHECK(supported("graph t {\n input x : bf16[4,3]\n y = ArgMax(x) {axis=1}\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : i32[4,3]\n const a : i64[] = 0\n"
                     " y = CumSum(x, a)\n output y\n}\n", why));
    CHECK_STR(why, "input 0 is i32; the CUDA kernel takes f32, f16 or bf16");
    CHECK(supported("graph t {\n input x : i64[4,3]\n input i : i32[4,2]\n"
                    " y = GatherElements(x, i) {axis=1}\n output y\n}\n", why));
    /* cuda-b: scatter reductions, TopK, NonZero, the normalizations and losses */
    CHECK(supported("graph t {\n input x : f32[4,3]\n input i : i64[2,1]\n input u : f32[2,3]\n"
                    " y = ScatterND(x, i, u) {reduction=\"add\"}\n output y\n}\n",
                    why));
    CHECK(supported("graph t {\n input x : i8[4,3]\n input i : i32[2,3]\n input u : i8[2,3]\n"
                    " y = ScatterElements(x, i, u) {reduction=\"mul\"}\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f64[4,3]\n input i : i64[2,3]\n input u : f64[2,3]\n"
                     " y = ScatterElements(x, i, u)\n output y\n}\n",
                     why));
    CHECK_STR(why, "f64: no CUDA scatter takes it");
    CHECK(supported("graph t {\n input x : i64[4,9]\n const k : i64[1] = [3]\n"
                    " y, i = TopK(x, k)\n output y\n output i\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f64[4,9]\n const k : i64[1] = [3]\n"
                     " y, i = TopK(x, k)\n output y\n output i\n}\n",
                     why));
    CHECK_STR(why, "f64: no CUDA TopK takes it");
    CHECK(supported("graph t {\n input x : bool[4,9]\n y = NonZero(x)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : f16[2,8]\n input s : f16[8]\n"
                    " y, m, v = LayerNormalization(x, s)\n output y\n output m\n output v\n}\n",
                    why));
    CHECK(supported("graph t {\n input x : bf16[2,5,3]\n input t : i32[2,3]\n"
                    " y, p = SoftmaxCrossEntropyLoss(x, t)\n output y\n output p\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : i64[4]\n y = Pow(x, x)\n output y\n}\n", why));
    CHECK_STR(why, "i64: the CUDA elementwise kernels take f32, f16 or bf16");
    /* cuda-a: the new functions' expansions; the integer kernel; the generators */
    CHECK_STR(expansion(a, "graph t {\n input x : f32[4]\n y = Shrink(x)\n output y\n}\n"),
              "shrink(x0, 0, 0.5) | fr_shrink(x0, 0.0f, 0.5f) | x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : bf16[4]\n y = ThresholdedRelu(x)\n"
                           " output y\n}\n"),
              "thresholdedrelu(x0, 1) | fr_thresholdedrelu(x0, 1.0f) | x0=in0");
    CHECK_STR(expansion(a, "graph t {\n input x : f16[4]\n y = Sign(x)\n output y\n}\n"),
              "sign(x0) | fr_sign(x0) | x0=in0");
    CHECK(supported("graph t {\n input x : i64[4]\n y = Relu(x)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : i8[4,3]\n input z : i8[3]\n"
                    " y = Div(x, z)\n output y\n}\n",
                    why));
    CHECK(supported("graph t {\n input x : f16[4,3]\n input z : f16[3]\n"
                    " y = Mod(x, z) {fmod=1}\n output y\n}\n",
                    why));
    CHECK(supported("graph t {\n input x : u8[4]\n y = BitwiseNot(x)\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input x : i16[4]\n y = Neg(x)\n output y\n}\n", why));
    CHECK_STR(why, "i16: the CUDA integer kernel takes i8, u8, i32 or i64");
    CHECK(supported("graph t {\n input x : f32[2,3]\n y = Shape(x)\n output y\n}\n", why));
    CHECK(supported("graph t {\n y = RandomUniform() {shape=[4], dtype=16}\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : i64[5,2]\n input l : i64[2]\n"
                    " y = ReverseSequence(x, l)\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f64[3]\n input t : f64[1]\n"
                     " y = CastLike(x, t)\n output y\n}\n",
                     why));
    CHECK_STR(why, "f64: no CUDA kernel takes it");
    CHECK(supported("graph t {\n input x : i64[4,3]\n y = Transpose(x)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : i8[4,3]\n const s : f32[] = 0.5\n"
                    " y = DequantizeLinear(x, s)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input a : f16[2,4,64]\n input b : f16[64,8]\n"
                    " y = MatMul(a, b)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input a : f32[2,3,4,64]\n input b : f32[2,3,64,8]\n"
                    " y = MatMul(a, b)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input a : f32[4,64]\n input b : f32[2,3,64,8]\n"
                    " y = MatMul(a, b)\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input a : f32[2,1,4,64]\n input b : f32[1,3,64,8]\n"
                     " y = MatMul(a, b)\n output y\n}\n", why));
    CHECK_STR(why, "batch dims that broadcast in part (A's 2 batches, B's 3); cuBLASLt's strided "
                   "batches take all or one");
    CHECK(supported("graph t {\n input x : f32[2,8]\n input s : f32[8]\n"
                    " y = LayerNormalization(x, s)\n output y\n}\n", why));
    /* QGemm: the int32 accumulator bounds K, as on the CPU */
    CHECK(!supported("graph t {\n input a : i8[4,131076]\n input as : f32[]\n"
                     " input b : i8[131076,8]\n input bs : f32[]\n y = QGemm(a, as, b, bs)\n"
                     " output y\n}\n", why));
    CHECK_STR(why, "K = 131076 could overflow the int32 accumulator (at most 131072)");
    ar_free(a);
}

/* cuda-c: the checks of quant.cu's, linalg.cu's and rnn.cu's kernels (cuda_supports_linalg.c):
 * what each takes beside what it refuses, with the reason. */
static void test_linalg_supports(void)
{
    char why[KN_WHY_SIZE];
    CHECK(supported("graph t {\n input x : f32[4,6]\n const s : f32[6] = 0.5\n"
                    " const z : i8[6] = 1\n y = QuantizeLinear(x, s, z) {axis=1}\n output y\n}\n",
                    why));
    CHECK(!supported("graph t {\n input x : f16[4,6]\n const s : f16[] = 0.5\n"
                     " y = QuantizeLinear(x, s)\n output y\n}\n", why));
    CHECK_STR(why, "x is f16; the CUDA QuantizeLinear takes f32");
    CHECK(supported("graph t {\n input x : i32[4]\n const s : f32[] = 0.5\n"
                    " y = DequantizeLinear(x, s)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : f32[4]\n y, s, z = DynamicQuantizeLinear(x)\n"
                    " output y\n}\n", why));
    CHECK(supported("graph t {\n input a : u8[3,8]\n input b : i8[8,5]\n"
                    " y = MatMulInteger(a, b)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : u8[1,2,5,5]\n input w : u8[3,2,3,3]\n"
                    " y = ConvInteger(x, w)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input a : i8[3,8]\n const s : f32[] = 0.1\n const z : i8[] = 0\n"
                    " input b : i8[8,5]\n const u : u8[] = 3\n"
                    " y = QLinearMatMul(a, s, z, b, s, z, s, u)\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input x : f32[4]\n const s : f32[] = 0.5\n"
                     " const z : i16[] = 1\n y = QuantizeLinear(x, s, z)\n output y\n}\n",
                     why));
    CHECK_STR(why, "the output is i16; the CUDA QuantizeLinear takes i8 or u8");
    CHECK(supported("graph t {\n input x : bf16[1,4,5,5]\n input w : bf16[4,2,3,3]\n"
                    " y = ConvTranspose(x, w)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input x : f32[2,3,3]\n y = Det(x)\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input x : f16[2,3,3]\n y = Det(x)\n output y\n}\n", why));
    CHECK_STR(why, "the input is f16; the CUDA Det takes f32");
    CHECK(supported("graph t {\n input x : f32[2,8,1]\n y = DFT(x)\n output y\n}\n", why));
    CHECK(supported("graph t {\n input a : f16[2,3]\n input b : f16[3,4]\n"
                    " y = Einsum(a, b) {equation=\"ij,jk->ik\"}\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input a : i32[2,3]\n input b : i32[3,4]\n"
                     " y = Einsum(a, b) {equation=\"ij,jk->ik\"}\n output y\n}\n", why));
    CHECK_STR(why, "an operand is i32; the CUDA Einsum takes f32, f16 or bf16");
    CHECK(!supported("graph t {\n input a : f32[2]\n"
                     " y = Einsum(a, a, a, a, a) {equation=\"i,i,i,i,i->i\"}\n output y\n}\n",
                     why));
    CHECK_STR(why, "5 inputs; the CUDA Einsum takes at most 4");
    CHECK(supported("graph t {\n input x : f32[5,2,3]\n input w : f32[1,20,3]\n"
                    " input r : f32[1,20,5]\n const l : i32[2] = [5,3]\n"
                    " y, h, c = LSTM(x, w, r, _, l) {hidden_size=5}\n output y\n}\n", why));
    CHECK(!supported("graph t {\n input x : f16[5,2,3]\n input w : f16[1,15,3]\n"
                     " input r : f16[1,15,5]\n y, h = GRU(x, w, r) {hidden_size=5}\n"
                     " output y\n}\n", why));
    CHECK_STR(why, "X is f16; the CUDA GRU takes f32");
}

int main(void)
{
    RUN(test_source_text);
    RUN(test_constants);
    RUN(test_nvrtc_compiles);
    RUN(test_supports);
    RUN(test_onnx_ops);
    RUN(test_catalog_rows_compile);
    RUN(test_linalg_supports);
    return unit_finish();
}
