/* The parts of the CUDA backend that run without a device: the ElementwiseChain code generator
 * (its exact output, and NVRTC compiling it to PTX for sm_90 in every dtype) and the CUDA
 * column's supports checks (a case each must accept beside a case each must refuse, with the
 * reason). */
#include "tests/unit.h"

#include "base/diag.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_registry.h"
#include "kernels/kernels.h"

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
              "fr_mul(fr_sigmoid(fr_add(x0, x1)), fr_sub(x2, (float)(1.5)))");
    CHECK_STR(source_of(a, "x0", 1), "x0");
    CHECK_STR(source_of(a, "clip(x0, -2, 3e-4)", 1),
              "fr_clip(x0, (float)(-2), (float)(0.000300000014))");
    CHECK_STR(source_of(a, "gelu_tanh(neg(x1))", 2), "fr_gelu_tanh(fr_neg(x1))");
    ar_free(a);
}

/* Every function of the expression language, in one expression. */
static const char *EVERY =
    "add(add(add(neg(abs(x0)), exp(x1)), add(log(x0), sqrt(x1))), add(add(rsqrt(x0), recip(x1)),"
    " add(add(sigmoid(x0), tanh(x1)), add(add(relu(x0), erf(x1)), add(add(gelu(x0), gelu_tanh(x1)),"
    " add(add(silu(x0), hardswish(x1)), add(add(sin(x0), cos(x1)), add(add(floor(x0), ceil(x1)),"
    " add(pow(x0, x1), add(max(x0, x1), add(min(x0, x1), add(clip(x0, x1, 2),"
    " div(x0, x1)))))))))))))";

static void test_nvrtc_compiles(void)
{
    ar_arena *a = ar_new();
    const char *body = source_of(a, EVERY, 2);
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
        default: break;
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
}

int main(void)
{
    RUN(test_source_text);
    RUN(test_nvrtc_compiles);
    RUN(test_supports);
    return unit_finish();
}
