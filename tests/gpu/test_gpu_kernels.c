/* Every CUDA kernel against the CPU reference, op by op: each case is a one-node graph (odd sizes,
 * broadcast operands, every dtype the kernel takes) run by rt_run_cpu and rt_run_cuda on the same
 * seeded inputs, with guard bytes around every device buffer (rt_options.sentinels) so that an
 * out-of-bounds write fails the case. Outputs are compared NaN/Inf first (same class, same sign),
 * then by a tolerance per case that says why it is what it is.
 *
 * Then whole examples fused for the CUDA target against the unfused graphs on the CPU.
 *
 * Without a CUDA device the test skips (exit 77) and says why. With FUSERULE_GPU_RESULTS set to a
 * folder, one line per case (worst errors) is appended to gpu_kernels.txt there. */
#include "tests/unit.h"

#include "base/diag.h"
#include "kernels/cuda/copy_plan.h" /* the executor's copy plans, applied on the host below */
#include "kernels/cuda/cuda_registry.h"
#include "kernels/kernels.h"
#include "rewrite/rewrite.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gpu_case {
    const char *name;
    const char *text; /* the graph */
    double rtol, atol;
    const char *why; /* why this tolerance */
} gpu_case;

/* Tolerances. Kernels accumulate in fp32 like the reference but in another order (warp trees,
 * cuBLASLt/cuDNN blockings); 16-bit results may differ by one rounding of the storage type. */
#define F32_REDUCE 1e-4, 1e-5, "f32, reductions summed in another order"
#define F32_GEMM 1e-4, 1e-4, "f32 GEMM, K-length sums in another blocking (no TF32)"
#define F32_EW 1e-5, 1e-6, "f32 elementwise, device expf/erff/tanhf within a few ulp"
#define F16_ANY 4e-3, 2e-3, "f16 storage: one rounding (2^-11) of the result plus fp32 noise"
#define BF16_ANY 2e-2, 1e-2, "bf16 storage: one rounding (2^-8) of the result plus fp32 noise"
#define EXACT 0, 0, "int8 requantized: round half to even of the same fp32 value"
#define SAME 0, 0, "no arithmetic: a copy, or a value defined exactly (0, NaN, a bound)"

static const gpu_case cases[] = {
    {"rmsnorm_f32_odd",
     "graph t {\n input x : f32[3,5,131]\n const s : f32[131] = random(seed=2)\n"
     " y = RMSNorm(x, s) {epsilon=1e-5}\n output y\n}\n", F32_REDUCE},
    {"rmsnorm_f16_vec",
     "graph t {\n input x : f16[7,256]\n const s : f16[256] = random(seed=2)\n"
     " y = RMSNorm(x, s)\n output y\n}\n", F16_ANY},
    {"rmsnorm_bf16_long_row",
     "graph t {\n input x : bf16[2,20000]\n const s : bf16[20000] = random(seed=2)\n"
     " y = RMSNorm(x, s)\n output y\n}\n", BF16_ANY},
    {"rmsnorm_axis1",
     "graph t {\n input x : f32[4,6,10]\n const s : f32[6,10] = random(seed=2)\n"
     " y = RMSNorm(x, s) {axis=1}\n output y\n}\n", F32_REDUCE},
    {"addlayernorm_f32_sum",
     "graph t {\n input a : f32[5,97]\n input b : f32[5,97]\n const s : f32[97] = random(seed=2)\n"
     " const c : f32[97] = random(seed=3)\n y, sum = AddLayerNorm(a, b, s, c)\n output y\n"
     " output sum\n}\n", F32_REDUCE},
    {"addlayernorm_f16_bcast",
     "graph t {\n input a : f16[4,3,64]\n input b : f16[3,64]\n const s : f16[1] = random(seed=2)\n"
     " y = AddLayerNorm(a, b, s)\n output y\n}\n", F16_ANY},
    {"addrmsnorm_bf16",
     "graph t {\n input a : bf16[9,128]\n input b : bf16[9,128]\n"
     " const s : bf16[128] = random(seed=2)\n y, sum = AddRMSNorm(a, b, s)\n output y\n"
     " output sum\n}\n", BF16_ANY},
    {"softmax_mask_f32",
     "graph t {\n input x : f32[2,3,5,77]\n input m : f32[2,1,1,77]\n"
     " y = FusedSoftmax(x, m) {scale=0.125}\n output y\n}\n", F32_REDUCE},
    {"softmax_axis1_f16",
     "graph t {\n input x : f16[3,33,7]\n y = FusedSoftmax(x) {axis=1}\n output y\n}\n", F16_ANY},
    {"softmax_long_row",
     "graph t {\n input x : f32[2,13000]\n y = FusedSoftmax(x)\n output y\n}\n", F32_REDUCE},
    {"swiglu_f32_odd",
     "graph t {\n input g : f32[3,333]\n input u : f32[3,333]\n y = SwiGLU(g, u)\n output y\n}\n",
     F32_EW},
    {"swiglu_bf16_bcast",
     "graph t {\n input g : bf16[4,64]\n input u : bf16[64]\n y = SwiGLU(g, u)\n output y\n}\n",
     BF16_ANY},
    {"rope_half_table",
     "graph t {\n input x : f32[2,3,7,16]\n input c : f32[7,8]\n input s : f32[7,8]\n"
     " y = RoPE(x, c, s)\n output y\n}\n", F32_EW},
    {"rope_full_table_interleaved_f16",
     "graph t {\n input x : f16[2,2,5,8]\n input c : f16[2,1,5,8]\n input s : f16[2,1,5,8]\n"
     " y = RoPE(x, c, s) {interleaved=1}\n output y\n}\n", F16_ANY},
    {"ewchain_f32_bcast",
     "graph t {\n input a : f32[3,1,17]\n input b : f32[5,17]\n input c : f32[1]\n"
     " y = ElementwiseChain(a, b, c) {expr=\"mul(sigmoid(add(x0, x1)), sub(x2, 1.5))\"}\n"
     " output y\n}\n", F32_EW},
    {"ewchain_every_function",
     "graph t {\n input a : f32[257]\n input b : f32[257]\n y = ElementwiseChain(a, b) {expr=\""
     "add(neg(abs(x0)), add(exp(x1), add(log(add(abs(x0), 1)), add(sqrt(abs(x1)), add("
     "rsqrt(add(abs(x0), 0.5)), add(recip(add(abs(x1), 2)), add(tanh(x0), add(relu(x1)"
     ", add(erf(x0), add(gelu(x1), add(gelu_tanh(x0), add(silu(x1), add(hardswish(x0),"
     " add(sin(x1), add(cos(x0), add(floor(x1), add(ceil(x0), add(pow(abs(x0), 1.5), a"
     "dd(max(x0, x1), add(min(x0, x1), add(clip(x0, -0.5, 0.5), div(x0, 3)))))))))))))"
     ")))))))))"
     "\"}\n output y\n}\n",
     1e-5, 1e-5, "f32 elementwise, device transcendental functions within a few ulp"},
    {"ewchain_bf16",
     "graph t {\n input a : bf16[2,50]\n input b : bf16[2,50]\n"
     " y = ElementwiseChain(a, b) {expr=\"max(x0, mul(x1, 2))\"}\n output y\n}\n", BF16_ANY},
    {"attention_gqa_f32",
     "graph t {\n input q : f32[2,4,9,32]\n input k : f32[2,2,13,32]\n input v : f32[2,2,13,24]\n"
     " y = Attention(q, k, v)\n output y\n}\n", F32_REDUCE},
    {"attention_packed_qkv_key_mask",
     "graph t {\n input x : f32[2,9,64]\n input w : f32[64,160]\n input b : f32[160]\n"
     " input km : i32[2,9]\n y = Attention(x, w, b, _, _, _, km) {layout=\"BSHD\", "
     "qkv_sizes=[64,64,32], num_heads=4}\n output y\n}\n",
     F32_REDUCE},
    {"attention_causal_kvcache_mask",
     "graph t {\n input q : f32[1,2,5,64]\n input k : f32[1,2,70,64]\n input v : f32[1,2,70,64]\n"
     " input m : f32[1,1,1,70]\n y = Attention(q, k, v, m) {causal=1, scale=0.1}\n output y\n}\n",
     F32_REDUCE},
    {"attention_mqa_f16_d128",
     "graph t {\n input q : f16[1,8,33,128]\n input k : f16[1,1,33,128]\n"
     " input v : f16[1,1,33,128]\n y = Attention(q, k, v) {causal=1}\n output y\n}\n", F16_ANY},
    {"attention_bshd_gqa_mask",
     "graph t {\n input q : f32[2,9,6,32]\n input k : f32[2,13,2,32]\n input v : f32[2,13,2,24]\n"
     " input m : f32[2,1,1,13]\n y = Attention(q, k, v, m) {layout=\"BSHD\"}\n output y\n}\n",
     F32_REDUCE},
    {"attention_rotary_half_table_causal",
     "graph t {\n input q : f32[1,4,37,64]\n input k : f32[1,2,37,64]\n input v : f32[1,2,37,64]\n"
     " input c : f32[37,32]\n input s : f32[37,32]\n"
     " y = Attention(q, k, v, _, c, s) {causal=1}\n output y\n}\n", F32_REDUCE},
    {"attention_bshd_rotary_f16_d128",
     "graph t {\n input q : f16[1,16,28,128]\n input k : f16[1,16,4,128]\n"
     " input v : f16[1,16,4,128]\n input m : f16[16,16]\n input c : f16[16,128]\n"
     " input s : f16[16,128]\n y = Attention(q, k, v, m, c, s) {layout=\"BSHD\"}\n output y\n}\n",
     F16_ANY},
    {"gemm_bias_relu_f32",
     "graph t {\n input a : f32[2,7,64]\n const b : f32[64,36] = random(seed=2)\n"
     " const c : f32[36] = random(seed=3)\n y = GemmEpilogue(a, b, c) {act=\"Relu\"}\n"
     " output y\n}\n", F32_GEMM},
    {"gemm_gelu_erf_residual_f32",
     "graph t {\n input a : f32[9,32]\n const b : f32[32,40] = random(seed=2)\n"
     " const c : f32[40] = random(seed=3)\n input r : f32[9,40]\n"
     " y = GemmEpilogue(a, b, c, r) {act=\"Gelu\", alpha=0.5, beta=2.0}\n output y\n}\n",
     F32_GEMM},
    {"gemm_gelu_tanh_transb_f16",
     "graph t {\n input a : f16[17,64]\n const b : f16[24,64] = random(seed=2)\n"
     " const c : f16[24] = random(seed=3)\n input r : f16[24]\n"
     " y = GemmEpilogue(a, b, c, r) {act=\"GeluTanh\", transB=1}\n output y\n}\n", F16_ANY},
    {"gemm_transa_batched_bf16",
     "graph t {\n input a : bf16[3,32,8]\n const b : bf16[32,16] = random(seed=2)\n"
     " y = GemmEpilogue(a, b) {transA=1, act=\"LeakyRelu\", act_alpha=0.2}\n output y\n}\n",
     BF16_ANY},
    {"gemm_batched_b_transb_alpha_f32",
     "graph t {\n input a : f32[3,8,32]\n input b : f32[3,40,32]\n"
     " y = GemmEpilogue(a, b) {transB=1, alpha=0.5}\n output y\n}\n", F32_GEMM},
    {"gemm_batched_b_transa_broadcast_f16",
     "graph t {\n input a : f16[32,8]\n input b : f16[2,32,24]\n"
     " y = GemmEpilogue(a, b) {transA=1, alpha=3.0}\n output y\n}\n", F16_ANY},
    {"qkv_gqa_f32",
     "graph t {\n input x : f32[2,5,32]\n const w : f32[32,64] = random(seed=2)\n"
     " const c : f32[64] = random(seed=3)\n q, k, v = FusedQKV(x, w, c) {sizes=[32,16,16]}\n"
     " output q\n output k\n output v\n}\n", F32_GEMM},
    {"qkv_gate_up_f16",
     "graph t {\n input x : f16[7,64]\n const w : f16[64,48] = random(seed=2)\n"
     " g, u = FusedQKV(x, w) {sizes=[24,24]}\n output g\n output u\n}\n", F16_ANY},
    {"conv_bias_relu_residual_f32",
     "graph t {\n input x : f32[2,3,11,13]\n const w : f32[8,3,3,3] = random(seed=2)\n"
     " const b : f32[8] = random(seed=3)\n input z : f32[2,8,11,13]\n"
     " y = FusedConvAct(x, w, b, z) {kernel_shape=[3,3], pads=[1,1,1,1], act=\"Relu\"}\n"
     " output y\n}\n", F32_GEMM},
    {"conv_identity_nobias_f16",
     "graph t {\n input x : f16[1,8,9,9]\n const w : f16[16,8,1,1] = random(seed=2)\n"
     " y = FusedConvAct(x, w) {kernel_shape=[1,1]}\n output y\n}\n", F16_ANY},
    {"conv_grouped_strided_sigmoid",
     "graph t {\n input x : f32[1,8,15,15]\n const w : f32[8,2,3,3] = random(seed=2)\n"
     " const b : f32[8] = random(seed=3)\n"
     " y = FusedConvAct(x, w, b) {kernel_shape=[3,3], group=4, strides=[2,2], dilations=[1,1],"
     " act=\"Sigmoid\"}\n output y\n}\n", F32_GEMM},
    {"conv_bf16_clip",
     "graph t {\n input x : bf16[2,4,8,8]\n const w : bf16[4,4,3,3] = random(seed=2)\n"
     " const b : bf16[4] = random(seed=3)\n"
     " y = FusedConvAct(x, w, b) {kernel_shape=[3,3], act=\"Clip\", act_alpha=-0.5,"
     " act_beta=0.5}\n output y\n}\n", BF16_ANY},
    {"separable_mobilenet_f32",
     "graph t {\n input x : f32[2,16,15,15]\n const wd : f32[16,1,3,3] = random(seed=2)\n"
     " const wp : f32[24,16,1,1] = random(seed=3)\n const bd : f32[16] = random(seed=4)\n"
     " const bp : f32[24] = random(seed=5)\n"
     " y = SeparableConv(x, wd, wp, bd, bp) {group=16, kernel_shape=[3,3], pads=[1,1,1,1],"
     " strides=[2,2], act=\"Clip\", act_alpha=0, act_beta=6, out_act=\"Relu\"}\n"
     " output y\n}\n", F32_GEMM},
    /* MobileNetV2's inverted residual: the residual added after the pointwise bias */
    {"separable_residual_f16",
     "graph t {\n input x : f16[2,16,15,15]\n input r : f16[2,24,15,15]\n"
     " const wd : f16[16,1,3,3] = random(seed=2)\n const wp : f16[24,16,1,1] = random(seed=3)\n"
     " const bd : f16[16] = random(seed=4)\n const bp : f16[24] = random(seed=5)\n"
     " y = SeparableConv(x, wd, wp, bd, bp, r) {group=16, kernel_shape=[3,3], pads=[1,1,1,1],"
     " act=\"Clip\", act_alpha=0, act_beta=6}\n output y\n}\n", F16_ANY},
    {"separable_conformer_1d_f32",
     "graph t {\n input x : f32[1,64,100]\n const wd : f32[64,1,31] = random(seed=2)\n"
     " const wp : f32[64,64,1] = random(seed=3)\n const bd : f32[64] = random(seed=4)\n"
     " y = SeparableConv(x, wd, wp, bd) {group=64, kernel_shape=[31], pads=[15,15],"
     " act=\"Silu\"}\n output y\n}\n", F32_GEMM},
    {"separable_multiplier_dilated_f16",
     "graph t {\n input x : f16[1,8,12,10]\n const wd : f16[16,1,3,3] = random(seed=2)\n"
     " const wp : f16[8,16,1,1] = random(seed=3)\n"
     " y = SeparableConv(x, wd, wp) {group=8, kernel_shape=[3,3], pads=[2,2,2,2],"
     " dilations=[2,2]}\n output y\n}\n", F16_ANY},
    /* SqueezeExcite: EfficientNet's (Silu, Sigmoid), MobileNetV3's (Relu, torch's Hardsigmoid),
     * a 1-D block, and more channels than a block has threads */
    {"squeeze_excite_efficientnet_f32",
     "graph t {\n input x : f32[2,48,16,16]\n const w1 : f32[12,48,1,1] = random(seed=2)\n"
     " const b1 : f32[12] = random(seed=3)\n const w2 : f32[48,12,1,1] = random(seed=4)\n"
     " const b2 : f32[48] = random(seed=5)\n"
     " y = SqueezeExcite(x, w1, b1, w2, b2) {act=\"Silu\", gate=\"Sigmoid\"}\n output y\n}\n",
     F32_REDUCE},
    {"squeeze_excite_mobilenet_f16",
     "graph t {\n input x : f16[1,16,28,28]\n const w1 : f16[8,16,1,1] = random(seed=2)\n"
     " const b1 : f16[8] = random(seed=3)\n const w2 : f16[16,8,1,1] = random(seed=4)\n"
     " const b2 : f16[16] = random(seed=5)\n"
     " y = SqueezeExcite(x, w1, b1, w2, b2) {act=\"Relu\", gate=\"HardSigmoid\","
     " gate_alpha=0.16666667, gate_beta=0.5}\n output y\n}\n", F16_ANY},
    {"squeeze_excite_1d_wide_bf16",
     "graph t {\n input x : bf16[3,600,9]\n const w1 : bf16[40,600,1] = random(seed=2)\n"
     " const b1 : bf16[40] = random(seed=3)\n const w2 : bf16[600,40,1] = random(seed=4)\n"
     " const b2 : bf16[600] = random(seed=5)\n"
     " y = SqueezeExcite(x, w1, b1, w2, b2) {act=\"HardSwish\"}\n output y\n}\n", BF16_ANY},
    {"qgemm_f32_per_channel",
     "graph t {\n input a : i8[6,64]\n const as : f32[] = 0.02\n"
     " const b : i8[64,12] = random(seed=2, lo=-128, hi=128)\n"
     " const bs : f32[12] = random(seed=3, lo=0.01, hi=0.03)\n const c : f32[12] = random(seed=4)\n"
     " y = QGemm(a, as, b, bs, c)\n output y\n}\n", 1e-5, 1e-4,
     "int32 accumulation is exact; one fp32 scaling"},
    {"qgemm_requant",
     "graph t {\n input a : i8[2,3,32]\n const as : f32[] = 0.05\n"
     " const b : i8[32,8] = random(seed=2, lo=-128, hi=128)\n"
     " const bs : f32[] = 0.01\n const ys : f32[] = 0.5\n y = QGemm(a, as, b, bs, _, ys)\n"
     " output y\n}\n", EXACT},
    {"dynq_matmul_i8_bias",
     "graph t {\n input a : f32[2,5,32]\n const b : i8[32,12] = random(seed=2, lo=-128, hi=128)\n"
     " const bs : f32[12] = random(seed=3, lo=0.001, hi=0.02)\n const bz : i8[] = -3\n"
     " const c : f32[12] = random(seed=4)\n y = DynamicQuantizeMatMul(a, b, bs, bz, c)\n"
     " output y\n}\n", 0, 0,
     "the CPU's quantization of A, the same int32 accumulator, three f32 operations (_rn, no FMA)"},
    {"bias_dropout_f32_residual_mask",
     "graph t {\n input x : f32[3,7,65]\n const b : f32[65] = random(seed=2)\n"
     " input r : f32[3,7,65]\n const p : f32[] = 0.3\n const on : bool[] = 1\n"
     " y, m = BiasDropout(x, b, r, p, on) {seed=5}\n output y\n output m\n}\n", 0, 0,
     "the same integer mask generator (kernels/dropout_mask.h), the same f32 operations (_rn)"},
    {"bias_dropout_f16_inference",
     "graph t {\n input x : f16[4,64]\n input b : f16[4,64]\n const p : f32[] = 0.8\n"
     " input on : bool[]\n y = BiasDropout(x, b, _, p, on)\n output y\n}\n", F16_ANY},
    {"qlinear_add_i8_broadcast",
     "graph t {\n input a : i8[2,5,16]\n const b : i8[16] = random(seed=2, lo=-128, hi=128)\n"
     " const as : f32[] = 0.05\n const az : i8[] = -3\n const bs : f32[] = 0.02\n"
     " const bz : i8[] = 4\n const cs : f32[] = 0.07\n const cz : i8[] = 1\n"
     " y = QLinearAdd(a, as, az, b, bs, bz, cs, cz)\n output y\n}\n", 0, 0,
     "the CPU's f32 operations in its order (_rn, no FMA), rounded half to even: bit for bit"},

    /* ---- rows at the launch limits: 1024 threads with 8-wide f16/bf16 vectors (7,200+
     * elements: registers), the shared-memory row cache up to 16,384 floats (64 KiB, opted in)
     * across the old 12,288 boundary, and the first row past the cache ---- */
    {"rmsnorm_f16_7200",
     "graph t {\n input x : f16[3,7200]\n const s : f16[7200] = random(seed=2)\n"
     " y = RMSNorm(x, s)\n output y\n}\n", F16_ANY},
    {"addrmsnorm_bf16_8192_sum",
     "graph t {\n input a : bf16[2,8192]\n input b : bf16[2,8192]\n"
     " const s : bf16[8192] = random(seed=2)\n y, sum = AddRMSNorm(a, b, s)\n output y\n"
     " output sum\n}\n", BF16_ANY},
    {"addlayernorm_f16_12288",
     "graph t {\n input a : f16[2,12288]\n input b : f16[2,12288]\n"
     " const s : f16[12288] = random(seed=2)\n const c : f16[12288] = random(seed=3)\n"
     " y = AddLayerNorm(a, b, s, c)\n output y\n}\n", F16_ANY},
    {"addlayernorm_bf16_12289",
     "graph t {\n input a : bf16[2,12289]\n input b : bf16[12289]\n"
     " const s : bf16[12289] = random(seed=2)\n y = AddLayerNorm(a, b, s)\n output y\n}\n",
     BF16_ANY},
    {"rmsnorm_f32_16384_cached",
     "graph t {\n input x : f32[2,16384]\n const s : f32[16384] = random(seed=2)\n"
     " y = RMSNorm(x, s)\n output y\n}\n", F32_REDUCE},
    {"rmsnorm_bf16_16385_uncached",
     "graph t {\n input x : bf16[2,16385]\n const s : bf16[16385] = random(seed=2)\n"
     " y = RMSNorm(x, s)\n output y\n}\n", BF16_ANY},
    {"softmax_f16_12288",
     "graph t {\n input x : f16[3,12288]\n y = FusedSoftmax(x)\n output y\n}\n", F16_ANY},
    {"softmax_bf16_12288_mask",
     "graph t {\n input x : bf16[2,12288]\n input m : bf16[12288]\n"
     " y = FusedSoftmax(x, m) {scale=0.5}\n output y\n}\n", BF16_ANY},

    /* ---- attention: bf16, key length a multiple of the 32-key tile, head dims not multiples
     * of 32, fully masked rows (NaN like the CPU), causal with S > T (the first S - T rows see no
     * key: NaN), no keys at all (T = 0: 0 like the CPU) ---- */
    {"attention_bf16_t64",
     "graph t {\n input q : bf16[1,4,10,64]\n input k : bf16[1,2,64,64]\n"
     " input v : bf16[1,2,64,64]\n y = Attention(q, k, v)\n output y\n}\n", BF16_ANY},
    {"attention_d40_dv72",
     "graph t {\n input q : f32[2,2,7,40]\n input k : f32[2,2,11,40]\n input v : f32[2,2,11,72]\n"
     " y = Attention(q, k, v)\n output y\n}\n", F32_REDUCE},
    {"attention_fully_masked_row",
     "graph t {\n input q : f32[1,1,3,32]\n input k : f32[1,1,4,32]\n input v : f32[1,1,4,32]\n"
     " const m : f32[1,1,3,4] = [0,-inf,0,0, -inf,-inf,-inf,-inf, 0,0,0,-inf]\n"
     " y = Attention(q, k, v, m)\n output y\n}\n", F32_REDUCE},
    {"attention_causal_fill_past_mask",
     "graph t {\n input q : f32[2,2,5,32]\n input k : f32[2,2,70,32]\n input v : f32[2,2,70,32]\n"
     " input m : f32[2,1,1,70]\n y = Attention(q, k, v, m) {causal=2, causal_fill=-3.0}\n"
     " output y\n}\n",
     F32_REDUCE},
    {"attention_causal_s_gt_t",
     "graph t {\n input q : f32[1,2,9,32]\n input k : f32[1,2,5,32]\n input v : f32[1,2,5,32]\n"
     " y = Attention(q, k, v) {causal=1}\n output y\n}\n", F32_REDUCE},
    {"attention_no_keys",
     "graph t {\n input q : f32[1,2,3,32]\n input k : f32[1,2,0,32]\n input v : f32[1,2,0,16]\n"
     " y = Attention(q, k, v)\n output y\n}\n", SAME},
    /* nan_to_zero (torch SDPA's Where(IsNaN(p), 0, p)): the fully masked row and, causal with
     * S > T, the rows that see no key are 0 instead of NaN; the others as without it */
    {"attention_nan_to_zero_masked_row",
     "graph t {\n input q : f32[1,1,3,32]\n input k : f32[1,1,4,32]\n input v : f32[1,1,4,32]\n"
     " const m : f32[1,1,3,4] = [0,-inf,0,0, -inf,-inf,-inf,-inf, 0,0,0,-inf]\n"
     " y = Attention(q, k, v, m) {nan_to_zero=1}\n output y\n}\n", F32_REDUCE},
    {"attention_nan_to_zero_causal_bf16",
     "graph t {\n input q : bf16[1,2,9,32]\n input k : bf16[1,2,5,32]\n input v : bf16[1,2,5,32]\n"
     " y = Attention(q, k, v) {causal=1, nan_to_zero=1}\n output y\n}\n", BF16_ANY},

    /* ---- GEMM epilogues ---- */
    {"gemm_gelu_tanh_f32",
     "graph t {\n input a : f32[5,64]\n const b : f32[64,32] = random(seed=2)\n"
     " const c : f32[32] = random(seed=3)\n y = GemmEpilogue(a, b, c) {act=\"GeluTanh\"}\n"
     " output y\n}\n", F32_GEMM},
    {"gemm_bias_bf16",
     "graph t {\n input a : bf16[7,32]\n const b : bf16[32,24] = random(seed=2)\n"
     " const c : bf16[24] = random(seed=3)\n y = GemmEpilogue(a, b, c)\n output y\n}\n",
     BF16_ANY},
    {"gemm_transa_batched_bias_bcast_residual",
     "graph t {\n input a : f32[3,32,8]\n const b : f32[32,16] = random(seed=2)\n"
     " const c : f32[16] = random(seed=3)\n input r : f32[8,16]\n"
     " y = GemmEpilogue(a, b, c, r) {transA=1, beta=0.5}\n output y\n}\n", F32_GEMM},
    {"gemm_clip_keeps_nan",
     "graph t {\n input a : f32[4,16]\n const b : f32[16,8] = random(seed=2)\n"
     " const c : f32[8] = [nan,0,1e30,-1e30,0,0,0,nan]\n"
     " y = GemmEpilogue(a, b, c) {act=\"Clip\", act_alpha=-0.5, act_beta=0.5}\n output y\n}\n",
     F32_GEMM},

    /* ---- convolutions ---- */
    {"conv_f16_relu_bias_residual",
     "graph t {\n input x : f16[2,8,10,10]\n const w : f16[16,8,3,3] = random(seed=2)\n"
     " const b : f16[16] = random(seed=3)\n input z : f16[2,16,10,10]\n"
     " y = FusedConvAct(x, w, b, z) {kernel_shape=[3,3], pads=[1,1,1,1], act=\"Relu\"}\n"
     " output y\n}\n", F16_ANY},
    {"conv_dilated_identity",
     "graph t {\n input x : f32[1,4,16,16]\n const w : f32[8,4,3,3] = random(seed=2)\n"
     " y = FusedConvAct(x, w) {kernel_shape=[3,3], pads=[2,2,2,2], dilations=[2,2]}\n"
     " output y\n}\n", F32_GEMM},
    {"conv_large_workspace",
     "graph t {\n input x : f32[4,64,48,48]\n const w : f32[64,64,5,5] = random(seed=2)\n"
     " const b : f32[64] = random(seed=3)\n"
     " y = FusedConvAct(x, w, b) {kernel_shape=[5,5], pads=[2,2,2,2], act=\"Relu\"}\n"
     " output y\n}\n", 1e-4, 1e-3, "f32 conv, 1,600-term sums in another blocking (no TF32)"},

    /* ---- one element, rank 0, special values, empty K ---- */
    {"ewchain_rank0",
     "graph t {\n input a : f32[]\n input b : f32[]\n"
     " y = ElementwiseChain(a, b) {expr=\"add(mul(x0, x1), 1)\"}\n output y\n}\n", F32_EW},
    {"ewchain_one_element_f16",
     "graph t {\n input a : f16[1]\n input b : f16[1,1]\n"
     " y = ElementwiseChain(a, b) {expr=\"silu(sub(x0, x1))\"}\n output y\n}\n", F16_ANY},
    {"rmsnorm_one_element",
     "graph t {\n input x : f32[1,1]\n const s : f32[1] = [2]\n y = RMSNorm(x, s)\n"
     " output y\n}\n", F32_REDUCE},
    {"ewchain_special_values",
     "graph t {\n const a : f32[8] = [nan,inf,-inf,-0.0,0.0,3.5,-3.5,1e-40]\n input b : f32[8]\n"
     " y = ElementwiseChain(a, b) {expr=\"add(clip(x0, -2, 2), add(mul(relu(x0), 1e39),"
     " max(x0, x1)))\"}\n output y\n}\n", F32_EW},
    {"ewchain_new_functions",
     "graph t {\n input a : f32[300]\n y = ElementwiseChain(a) {expr=\"add(softplus(mul(x0, 30)),"
     " add(leakyrelu(x0, 0.1), add(elu(x0, 1.5), hardsigmoid(x0, 0.2, 0.5))))\"}\n"
     " output y\n}\n", F32_EW},
    {"qgemm_requant_nan_is_zero",
     "graph t {\n input a : i8[2,8]\n const as : f32[] = 0.05\n"
     " const b : i8[8,8] = random(seed=2, lo=-128, hi=128)\n const bs : f32[] = 0.01\n"
     " const c : f32[8] = [nan,0,0,nan,0,0,0,0]\n const ys : f32[] = 0.5\n"
     " y = QGemm(a, as, b, bs, c, ys)\n output y\n}\n", EXACT},
    {"qkv_k0_bias",
     "graph t {\n input x : f32[3,0]\n const w : f32[0,48] = random(seed=2)\n"
     " const c : f32[48] = random(seed=3)\n q, k, v = FusedQKV(x, w, c) {sizes=[16,16,16]}\n"
     " output q\n output k\n output v\n}\n", SAME},
    {"qgemm_k0_bias",
     "graph t {\n input a : i8[2,0]\n const as : f32[] = 0.05\n const b : i8[0,8] = random(seed=2)\n"
     " const bs : f32[] = 0.01\n const c : f32[8] = random(seed=4)\n"
     " y = QGemm(a, as, b, bs, c)\n output y\n}\n", SAME},

    /* ---- plain ONNX ops on their CUDA kernels (kernels/cuda/onnx_ew_table.c and the library
     * ops): each against its CPU kernel ---- */
    {"onnx_unary_f32",
     "graph t {\n input x : f32[5,67]\n a = Relu(x)\n b = Sigmoid(a)\n c = Tanh(x)\n"
     " d = Erf(c)\n e = Exp(d)\n f = Abs(x)\n g = Log(f)\n h = Sqrt(f)\n i = Reciprocal(e)\n"
     " j = Floor(x)\n k = Ceil(x)\n l = Sin(x)\n m = Cos(x)\n n = Neg(x)\n o = Softplus(x)\n"
     " output b\n output g\n output h\n output i\n output j\n output k\n output l\n"
     " output m\n output n\n output o\n}\n", F32_EW},
    {"onnx_activations_f16",
     "graph t {\n input x : f16[3,41]\n a = LeakyRelu(x) {alpha=0.3}\n b = Elu(x)\n"
     " c = HardSigmoid(x)\n d = HardSwish(x)\n e = Gelu(x)\n"
     " f = Gelu(x) {approximate=\"tanh\"}\n g = Identity(x)\n output a\n output b\n"
     " output c\n output d\n output e\n output f\n output g\n}\n", F16_ANY},
    {"onnx_clip_inputs_and_nan",
     "graph t {\n const x : f32[6] = [nan,-3,-0.2,0.2,3,inf]\n const lo : f32[] = -1\n"
     " const hi : f32[] = 1\n a = Clip(x, lo, hi)\n b = Clip(x, _, hi)\n c = Clip(x)\n"
     " output a\n output b\n output c\n}\n", SAME},
    {"onnx_binary_bcast_bf16",
     "graph t {\n input x : bf16[4,3,17]\n input z : bf16[3,1]\n a = Add(x, z)\n"
     " b = Sub(z, x)\n c = Mul(a, b)\n d = Div(c, z)\n e = PRelu(x, z)\n"
     " f = Max(x, z, a)\n g = Min(x, z)\n output d\n output e\n output f\n output g\n}\n",
     BF16_ANY},
    {"onnx_pow_expand_f32",
     "graph t {\n input x : f32[2,1,5]\n input p : f32[5]\n const s : i64[3] = [2,3,5]\n"
     " a = Pow(x, p)\n b = Expand(x, s)\n output a\n output b\n}\n", F32_EW},
    {"onnx_matmul_gemm",
     "graph t {\n input a : f32[2,5,32]\n const b : f32[32,16] = random(seed=2)\n"
     " input g : f32[16,8]\n const w : f32[12,16] = random(seed=3)\n input c : f32[12]\n"
     " y = MatMul(a, b)\n z = Gemm(g, w, c) {transA=1, transB=1, alpha=0.5, beta=2.0}\n"
     " output y\n output z\n}\n", F32_GEMM},
    {"onnx_movement_f16",
     "graph t {\n input x : f16[2,3,5,7]\n const st : i64[1] = [-1]\n const en : i64[1] = [-100]\n"
     " const ax : i64[1] = [3]\n const sp : i64[1] = [-2]\n const s2 : i32[2] = [1,-4]\n"
     " const e2 : i32[2] = [6,9]\n const a2 : i32[2] = [2,0]\n const p2 : i32[2] = [2,1]\n"
     " a = Transpose(x) {perm=[0,2,3,1]}\n b = Slice(x, st, en, ax, sp)\n"
     " g = Slice(x, s2, e2, a2, p2)\n c = Concat(x, x, b) {axis=-1}\n"
     " d, e, f = Split(c) {axis=3, num_outputs=3}\n output a\n output b\n output g\n"
     " output c\n output d\n output e\n output f\n}\n", SAME},
    {"onnx_transpose_i64_rank0",
     "graph t {\n input x : i64[3,4]\n input s : f32[]\n a = Transpose(x)\n b = Transpose(s)\n"
     " output a\n output b\n}\n", SAME},
    {"onnx_reduce_f32",
     "graph t {\n input x : f32[3,4,129]\n const ax : i64[2] = [0,2]\n"
     " a = ReduceMean(x) {axes=[-1]}\n b = ReduceSum(x, ax) {keepdims=0}\n"
     " c = ReduceMax(x) {axes=[1]}\n d = ReduceMin(x)\n e = ReduceSum(x) {noop_with_empty_axes=1}\n"
     " output a\n output b\n output c\n output d\n output e\n}\n", F32_REDUCE},
    {"onnx_reduce_nan_bf16",
     "graph t {\n const x : bf16[2,3] = [1,nan,3,-inf,5,6]\n a = ReduceMax(x) {axes=[1]}\n"
     " b = ReduceMin(x) {axes=[1]}\n c = ReduceMean(x) {axes=[0]}\n output a\n output b\n"
     " output c\n}\n", BF16_ANY},
    {"onnx_gather_where",
     "graph t {\n input e : f16[50,24]\n const ids : i64[2,3] = [0,49,-1,7,7,-50]\n"
     " input x : f32[4,5,6]\n const j : i32[2] = [4,-2]\n const m : bool[5,1] = [1,0,0,1,1]\n"
     " input z : f32[6]\n a = Gather(e, ids)\n b = Gather(x, j) {axis=1}\n"
     " c = Where(m, x, z)\n output a\n output b\n output c\n}\n", SAME},
    {"onnx_matmul_batched_b",
     "graph t {\n input q : f32[2,3,7,32]\n input k : f32[2,3,32,16]\n input w : f32[16,32]\n"
     " s = MatMul(q, k)\n t = MatMul(w, k)\n output s\n output t\n}\n", F32_GEMM},
    {"onnx_batchnorm_gap",
     "graph t {\n input x : f32[2,5,7,9]\n const s : f32[5] = random(seed=2)\n"
     " const b : f32[5] = random(seed=3)\n const m : f32[5] = random(seed=4)\n"
     " const v : f32[5] = random(seed=5, lo=0.5, hi=2)\n"
     " y = BatchNormalization(x, s, b, m, v) {epsilon=1e-3}\n g = GlobalAveragePool(y)\n"
     " output y\n output g\n}\n", F32_REDUCE},
    {"onnx_pools",
     "graph t {\n input x : f32[2,3,11,12]\n input w : f16[1,4,9]\n input v : f32[1,2,5,6,7]\n"
     " a = MaxPool(x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}\n"
     " b = AveragePool(x) {kernel_shape=[3,2], pads=[1,0,1,1], count_include_pad=1,"
     " ceil_mode=1, strides=[2,2]}\n c = MaxPool(x) {kernel_shape=[2,2], dilations=[2,2],"
     " auto_pad=\"SAME_UPPER\"}\n d = AveragePool(v) {kernel_shape=[2,2,2]}\n e = MaxPool(w) {kernel_shape=[3], strides=[2]}\n"
     " output a\n output b\n output c\n output d\n output e\n}\n", F32_REDUCE},
    {"onnx_cast_compare_not",
     "graph t {\n const x : f32[8] = [nan,inf,-inf,-0.0,2.7,-2.7,300.5,-1e20]\n"
     " input i : i64[8]\n input h : f16[2,8]\n"
     " a = Cast(x) {to=3}\n b = Cast(x) {to=2}\n c = Cast(x) {to=9}\n d = Cast(x) {to=7}\n"
     " e = Cast(x) {to=10}\n f = Cast(i) {to=1}\n g = Cast(h) {to=6}\n k = Cast(d) {to=3}\n"
     " l = Equal(x, x)\n m = Less(h, e)\n o = Greater(i, d)\n p = Not(c)\n"
     " output a\n output b\n output c\n output d\n output e\n output f\n output g\n"
     " output k\n output l\n output m\n output o\n output p\n}\n", SAME},
    {"onnx_tile_trilu",
     "graph t {\n input x : bf16[2,3,5]\n const r : i64[3] = [2,1,3]\n input i : i32[4,6]\n"
     " const k : i64[] = -1\n a = Tile(x, r)\n b = Trilu(i, k)\n c = Trilu(x) {upper=0}\n"
     " output a\n output b\n output c\n}\n", SAME},
    {"onnx_pad_modes",
     "graph t {\n input x : f16[2,3,4]\n const p : i64[6] = [0,2,-1,1,1,3]\n"
     " const q : i64[2] = [2,5]\n const ax : i64[1] = [2]\n const v : f16[] = 1.5\n"
     " input i : i32[3,2]\n const w : i32[] = -7\n const r : i64[4] = [1,1,2,0]\n"
     " a = Pad(x, p, v)\n b = Pad(x, p) {mode=\"reflect\"}\n c = Pad(x, p) {mode=\"edge\"}\n"
     " d = Pad(x, q, _, ax) {mode=\"wrap\"}\n e = Pad(i, r, w)\n"
     " output a\n output b\n output c\n output d\n output e\n}\n", SAME},
    {"onnx_matmul_f16",
     "graph t {\n input a : f16[9,64]\n const b : f16[64,24] = random(seed=2)\n"
     " y = MatMul(a, b)\n output y\n}\n", F16_ANY},
    {"onnx_conv_softmax_layernorm",
     "graph t {\n input x : f32[2,3,9,9]\n const w : f32[6,3,3,3] = random(seed=2)\n"
     " const b : f32[6] = random(seed=3)\n const s : f32[9,9] = random(seed=4)\n"
     " y = Conv(x, w, b) {kernel_shape=[3,3], pads=[1,1,1,1]}\n z = Softmax(y) {axis=1}\n"
     " n = LayerNormalization(x, s) {axis=2}\n output z\n output n\n}\n", F32_GEMM},
    /* ---- catalog ops on the GPU: the elementwise table's rows, the reduce kernel's folds and
     * the typed kernel's comparisons and logical ops, each against its CPU kernel ---- */
    {"onnx_catalog_ew_f32",
     "graph t {\n input x : f32[3,5,19]\n input z : f32[5,1]\n input w : f32[19]\n"
     " a = Sum(x, z, w)\n b = Mean(x, z, w)\n c = Sum(x)\n d = Softsign(x)\n e = Mish(x)\n"
     " f = Selu(x)\n g = Selu(x) {alpha=2, gamma=0.5}\n h = Celu(x) {alpha=0.7}\n"
     " i = Celu(x) {alpha=-1.5}\n j = Mean(z)\n output a\n output b\n output c\n output d\n"
     " output e\n output f\n output g\n output h\n output i\n output j\n}\n", F32_EW},
    {"onnx_catalog_ew_special",
     "graph t {\n const x : f32[7] = [nan,inf,-inf,-0.0,0,90,-90]\n a = Softsign(x)\n"
     " b = Mish(x)\n c = Selu(x)\n d = Celu(x)\n e = Mean(x, x)\n output a\n output b\n"
     " output c\n output d\n output e\n}\n", F32_EW},
    {"onnx_reduce_more_f32",
     "graph t {\n input x : f32[3,4,37]\n const p : f32[2,5,7] = random(seed=2, lo=0.5, hi=1.5)\n"
     " const ax : i64[2] = [0,2]\n a = ReduceProd(p) {axes=[1]}\n b = ReduceL1(x, ax)\n"
     " c = ReduceL2(x) {axes=[-1], keepdims=0}\n d = ReduceSumSquare(x)\n"
     " e = ReduceLogSum(p) {axes=[0,2]}\n f = ReduceLogSumExp(x) {axes=[2]}\n"
     " g = ReduceL1(x) {noop_with_empty_axes=1}\n output a\n output b\n output c\n"
     " output d\n output e\n output f\n output g\n}\n", F32_REDUCE},
    {"onnx_reduce_more_special_f16",
     "graph t {\n const x : f16[4,3] = [1,nan,3,inf,2,1,-inf,-inf,0,60000,60000,1]\n"
     " const e : f16[2,0] = 0\n a = ReduceLogSumExp(x) {axes=[1]}\n b = ReduceL2(x) {axes=[1]}\n"
     " c = ReduceProd(e) {axes=[1]}\n d = ReduceLogSum(e) {axes=[1]}\n"
     " f = ReduceLogSumExp(e) {axes=[1]}\n output a\n output b\n output c\n output d\n"
     " output f\n}\n", F16_ANY},
    {"onnx_depth_space",
     "graph t {\n input x : f16[2,12,3,5]\n input z : i64[1,3,4,6]\n"
     " a = DepthToSpace(x) {blocksize=2}\n b = DepthToSpace(x) {blocksize=2, mode=\"CRD\"}\n"
     " c = SpaceToDepth(z) {blocksize=2}\n d = SpaceToDepth(a) {blocksize=2}\n output a\n"
     " output b\n output c\n output d\n}\n", SAME},
    {"onnx_compare_logical",
     "graph t {\n const x : f32[6] = [nan,1,-inf,2,-0.0,0]\n"
     " const y : f32[6] = [1,nan,-inf,1,0,3]\n input i : i64[3,1]\n input j : i64[4]\n"
     " input p : bool[2,3]\n input q : bool[3]\n"
     " a = GreaterOrEqual(x, y)\n b = LessOrEqual(x, y)\n c = GreaterOrEqual(i, j)\n"
     " d = LessOrEqual(j, i)\n e = And(p, q)\n f = Or(p, q)\n g = Xor(p, q)\n output a\n"
     " output b\n output c\n output d\n output e\n output f\n output g\n}\n", SAME},
    {"onnx_argmax_argmin",
     "graph t {\n input x : f32[3,7,5]\n const s : f32[2,4] = [1,nan,3,nan,2,2,-inf,2]\n"
     " input h : f16[4,9]\n a = ArgMax(x) {axis=1}\n b = ArgMin(x) {axis=-1, keepdims=0}\n"
     " c = ArgMax(s) {axis=1}\n d = ArgMin(s) {axis=1, select_last_index=1}\n"
     " e = ArgMax(s) {axis=1, select_last_index=1}\n f = ArgMax(h) {axis=0}\n output a\n"
     " output b\n output c\n output d\n output e\n output f\n}\n", SAME},
    {"onnx_cumsum_f32",
     "graph t {\n input x : f32[3,6,5]\n const a1 : i64[] = 1\n const a2 : i32[] = -1\n"
     " a = CumSum(x, a1)\n b = CumSum(x, a2) {exclusive=1}\n c = CumSum(x, a1) {reverse=1}\n"
     " d = CumSum(x, a2) {exclusive=1, reverse=1}\n output a\n output b\n output c\n"
     " output d\n}\n", F32_REDUCE},
    {"onnx_gather_elements",
     "graph t {\n input x : f16[3,4,5]\n const i : i64[3,2,5] = random(seed=3, lo=-4, hi=3.9)\n"
     " input z : i64[4,6]\n const j : i32[2,6] = [0,3,-1,2,1,0,3,3,-4,0,1,2]\n"
     " a = GatherElements(x, i) {axis=1}\n b = GatherElements(z, j)\n output a\n"
     " output b\n}\n", SAME},
    {"onnx_gather_scatter_nd",
     "graph t {\n input x : f32[2,3,4,5]\n const i : i64[2,3,2] = [0,1,1,-1,-2,2,1,0,0,2,-1,-3]\n"
     " const j : i64[2,4,1] = [2,0,-1,1,0,0,2,1]\n input u : bf16[3,4]\n"
     " const k : i64[2,2] = [1,2,-1,0]\n input v : bf16[2]\n const r : i64[3,1] = [0,-1,0]\n"
     " input w : f32[3,3,4,5]\n a = GatherND(x, i)\n b = GatherND(x, j) {batch_dims=1}\n"
     " c = ScatterND(u, k, v)\n d = ScatterND(x, r, w)\n output a\n output b\n output c\n"
     " output d\n}\n", SAME},
    {"onnx_instance_norm_f32",
     "graph t {\n input x : f32[2,3,7,45]\n const s : f32[3] = random(seed=2)\n"
     " const b : f32[3] = random(seed=3)\n y = InstanceNormalization(x, s, b) {epsilon=1e-3}\n"
     " output y\n}\n", F32_REDUCE},
    {"onnx_instance_norm_f16",
     "graph t {\n input h : f16[1,4,300]\n const t : f16[4] = [1,2,0.5,-1]\n"
     " const c : f16[4] = [0,1,-1,2]\n z = InstanceNormalization(h, t, c)\n output z\n}\n",
     F16_ANY},
    {"onnx_isnan_isinf",
     "graph t {\n const x : f32[6] = [nan,inf,-inf,0,-1e30,1]\n input h : bf16[3,7]\n"
     " a = IsNaN(x)\n b = IsInf(x)\n c = IsInf(x) {detect_negative=0}\n"
     " d = IsInf(x) {detect_positive=0}\n e = IsNaN(h)\n output a\n output b\n output c\n"
     " output d\n output e\n}\n", SAME},
    /* ---- cuda-b: normalizations, windows, losses (norm_more.cu), TopK (topk.cu), scatter
     * reductions (scatter.cu), each against its CPU kernel ---- */
    {"onnx_log_softmax_hardmax_f32",
     "graph t {\n input x : f32[3,7,5]\n const s : f32[3,4] = [1,nan,3,-inf,2,2,-inf,inf,-0.0,0,-1,-1]\n"
     " a = LogSoftmax(x) {axis=1}\n b = Hardmax(x) {axis=-1}\n c = LogSoftmax(s) {axis=1}\n"
     " d = Hardmax(s)\n e = Hardmax(x) {axis=0}\n input l : f32[3,3000]\n f = LogSoftmax(l)\n"
     " output a\n output b\n output c\n output d\n output e\n output f\n}\n", F32_REDUCE},
    {"onnx_log_softmax_maxpool_f16",
     "graph t {\n input h : f16[4,1000]\n input p : f16[2,3,5,7]\n"
     " const q : f16[1,2,3] = [1,nan,2,-inf,-inf,-inf]\n a = LogSoftmax(h)\n b = Hardmax(h)\n"
     " c = GlobalMaxPool(p)\n d = GlobalMaxPool(q)\n output a\n output b\n output c\n"
     " output d\n}\n", F16_ANY},
    {"onnx_layernorm_stats_f32",
     "graph t {\n input x : f32[3,5,131]\n const s : f32[131] = random(seed=2)\n"
     " const b : f32[131] = random(seed=3)\n const w : f32[5,1] = random(seed=4)\n"
     " y, m, v = LayerNormalization(x, s, b)\n z, n = LayerNormalization(x, w) {axis=1}\n"
     " output y\n output m\n output v\n output z\n output n\n}\n", F32_REDUCE},
    {"onnx_layernorm_stats_bf16",
     "graph t {\n input x : bf16[4,300]\n const s : bf16[300] = random(seed=2)\n"
     " y, m, v = LayerNormalization(x, s) {epsilon=1e-3}\n output y\n output m\n output v\n}\n",
     BF16_ANY},
    {"onnx_group_mvn_lrn_f32",
     "graph t {\n input x : f32[2,6,5,7]\n const s : f32[6] = random(seed=2)\n"
     " const b : f32[6] = random(seed=3)\n a = GroupNormalization(x, s, b) {num_groups=3}\n"
     " c = GroupNormalization(x, s, b) {num_groups=6, epsilon=1e-2}\n"
     " d = MeanVarianceNormalization(x)\n e = MeanVarianceNormalization(x) {axes=[1,3]}\n"
     " f = LRN(x) {size=3}\n g = LRN(x) {size=4, alpha=0.01, beta=0.5, bias=2}\n output a\n"
     " output c\n output d\n output e\n output f\n output g\n}\n", F32_REDUCE},
    {"onnx_group_norm_lrn_f16",
     "graph t {\n input x : f16[1,8,33]\n const s : f16[8] = random(seed=2)\n"
     " const b : f16[8] = random(seed=3)\n a = GroupNormalization(x, s, b) {num_groups=2}\n"
     " f = LRN(x) {size=5}\n output a\n output f\n}\n", F16_ANY},
    {"onnx_losses_f32",
     "graph t {\n input x : f32[4,5,3]\n const t : i64[4,3] = [0,4,-1,2,2,1,3,-1,0,4,4,4]\n"
     " const w : f32[5] = [0.5,1,2,1.5,0.25]\n const u : i32[4,3] = [1,1,1,0,0,0,2,2,2,3,3,3]\n"
     " a = NegativeLogLikelihoodLoss(x, t, w) {ignore_index=-1, reduction=\"none\"}\n"
     " b = NegativeLogLikelihoodLoss(x, t, w) {ignore_index=-1, reduction=\"sum\"}\n"
     " c = NegativeLogLikelihoodLoss(x, u)\n"
     " d, lp = SoftmaxCrossEntropyLoss(x, t, w) {ignore_index=-1}\n"
     " e = SoftmaxCrossEntropyLoss(x, u) {reduction=\"none\"}\n"
     " f = NegativeLogLikelihoodLoss(x, u) {ignore_index=2, reduction=\"mean\"}\n"
     " output a\n output b\n output c\n output d\n output lp\n output e\n output f\n}\n",
     F32_REDUCE},
    {"onnx_losses_all_ignored_f16",
     "graph t {\n input x : f16[2,3]\n const t : i64[2] = [7,7]\n"
     " a = NegativeLogLikelihoodLoss(x, t) {ignore_index=7}\n"
     " b, lp = SoftmaxCrossEntropyLoss(x, t) {ignore_index=7, reduction=\"sum\"}\n"
     " output a\n output b\n output lp\n}\n", F16_ANY},
    {"onnx_topk",
     "graph t {\n input x : f32[3,40,5]\n const s : f32[2,6] = [1,nan,3,-0.0,0,3,nan,-inf,inf,2,2,-1]\n"
     " input i : i64[4,9]\n input h : f16[2,3,17]\n const k1 : i64[1] = [7]\n"
     " const k2 : i64[1] = [6]\n const k3 : i64[1] = [3]\n const k0 : i64[1] = [0]\n"
     " a, ai = TopK(x, k1) {axis=1}\n b, bi = TopK(x, k3) {largest=0}\n"
     " c, ci = TopK(s, k2)\n d, di = TopK(s, k2) {largest=0}\n e, ei = TopK(i, k3)\n"
     " f, fi = TopK(h, k3) {axis=1, largest=0}\n g, gi = TopK(x, k0)\n output a\n output ai\n"
     " output b\n output bi\n output c\n output ci\n output d\n output di\n output e\n"
     " output ei\n output f\n output fi\n output g\n output gi\n}\n", SAME},
    {"onnx_scatter_reductions",
     "graph t {\n input x : f32[4,5]\n const i : i64[3,5] = [0,1,2,3,-1,0,1,2,3,-1,1,1,1,1,1]\n"
     " input u : f32[3,5]\n input z : i32[2,6]\n const j : i32[1,4] = [1,1,-1,1]\n"
     " input v : i32[1,4]\n const r : i64[3,1] = [2,0,2]\n input w : f32[3,5]\n"
     " input h : bf16[5,2]\n const q : i64[4,1] = [4,4,0,4]\n input g : bf16[4,2]\n"
     " const nn : f32[4] = [nan,1,-inf,2]\n const ni : i64[3] = [1,1,2]\n"
     " const nu : f32[3] = [nan,5,-inf]\n"
     " a = ScatterElements(x, i, u)\n b = ScatterElements(x, i, u) {reduction=\"add\"}\n"
     " c = ScatterElements(x, i, u) {axis=0, reduction=\"mul\"}\n"
     " d = ScatterElements(z, j, v) {reduction=\"add\"}\n e = ScatterND(x, r, w) {reduction=\"add\"}\n"
     " f = ScatterND(x, r, w) {reduction=\"max\"}\n g2 = ScatterND(h, q, g) {reduction=\"min\"}\n"
     " k = ScatterND(h, q, g) {reduction=\"mul\"}\n m = ScatterElements(nn, ni, nu) {reduction=\"max\"}\n"
     " o = ScatterElements(nn, ni, nu) {reduction=\"min\"}\n output a\n output b\n output c\n"
     " output d\n output e\n output f\n output g2\n output k\n output m\n output o\n}\n",
     SAME},
    {"onnx_nonzero_compress",
     "graph t {\n const s : f32[2,4] = [nan,0,-0.0,1,0,-inf,0,2]\n input x : f32[3,1100]\n"
     " input i : i64[2,3,5]\n const z : f16[7] = 0\n input h : bf16[4,6]\n"
     " const c : bool[3] = [1,0,1]\n const f : bool[2] = [0,0]\n const e : bool[5] = [0,1,1,0,1]\n"
     " a = NonZero(s)\n b = NonZero(x)\n d = NonZero(i)\n g = NonZero(z)\n"
     " k = Compress(h, c) {axis=1}\n l = Compress(h, f) {axis=0}\n m = Compress(h, e)\n"
     " o = Compress(i, c) {axis=-2}\n output a\n output b\n output d\n output g\n"
     " output k\n output l\n output m\n output o\n}\n", SAME},
    {"onnx_resize_modes_f32",
     "graph t {\n input x : f32[1,2,5,7]\n const s2 : f32[4] = [1,1,2,1.5]\n"
     " const sd : f32[4] = [1,1,0.6,0.5]\n const z : i64[4] = [1,2,9,4]\n"
     " const r : f32[8] = [0,0,0.1,-0.2,1,1,0.9,1.3]\n const w : i64[2] = [10,10]\n"
     " const s1 : f32[1] = [3]\n"
     " a = Resize(x, _, s2)\n"
     " b = Resize(x, _, s2) {coordinate_transformation_mode=\"asymmetric\", nearest_mode=\"floor\"}\n"
     " c = Resize(x, _, s2) {coordinate_transformation_mode=\"align_corners\","
     " nearest_mode=\"round_prefer_ceil\"}\n"
     " d = Resize(x, _, s2) {mode=\"linear\"}\n"
     " e = Resize(x, _, sd) {mode=\"linear\", coordinate_transformation_mode=\"pytorch_half_pixel\"}\n"
     " f = Resize(x, _, _, z) {mode=\"cubic\"}\n"
     " g = Resize(x, _, _, z) {mode=\"cubic\", exclude_outside=1, cubic_coeff_a=-0.5}\n"
     " h = Resize(x, r, _, z) {mode=\"linear\", coordinate_transformation_mode=\"tf_crop_and_resize\","
     " extrapolation_value=7}\n"
     " i = Resize(x, _, s2) {coordinate_transformation_mode=\"tf_half_pixel_for_nn\","
     " nearest_mode=\"ceil\"}\n"
     " j = Resize(x, _, _, z) {mode=\"linear\", coordinate_transformation_mode=\"half_pixel_symmetric\"}\n"
     " k = Resize(x, _, _, w) {axes=[2,3], keep_aspect_ratio_policy=\"not_larger\", mode=\"linear\"}\n"
     " l = Resize(x, _, s1) {axes=[-1], mode=\"cubic\", coordinate_transformation_mode=\"align_corners\"}\n"
     " output a\n output b\n output c\n output d\n output e\n output f\n output g\n output h\n"
     " output i\n output j\n output k\n output l\n}\n",
     1e-6, 1e-7, "the CPU's double passes op for op (no FMA contraction): equal up to the last bit"},
    {"onnx_resize_special_f16",
     "graph t {\n const x : f16[1,1,3,4] = [1,nan,2,3,inf,0,-0.0,1,-inf,2,60000,60000]\n"
     " const s : f32[4] = [1,1,1.7,2]\n a = Resize(x, _, s) {mode=\"linear\"}\n"
     " b = Resize(x, _, s)\n c = Resize(x, _, s) {mode=\"cubic\"}\n output a\n output b\n"
     " output c\n}\n", F16_ANY},
    {"onnx_maxpool_indices_unpool",
     "graph t {\n input x : f32[2,3,7,9]\n const h : f16[1,1,2,5] = [nan,1,2,2,-inf,3,nan,2,-0.0,0]\n"
     " input r : f32[1,2,11]\n const os : i64[4] = [2,3,15,19]\n"
     " y, i = MaxPool(x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}\n"
     " a, j = MaxPool(x) {kernel_shape=[2,3], storage_order=1, dilations=[2,1]}\n"
     " b, k = MaxPool(h) {kernel_shape=[2,2], strides=[1,2], ceil_mode=1}\n"
     " c, l = MaxPool(r) {kernel_shape=[3], strides=[3], pads=[2,2]}\n"
     " u = MaxUnpool(y, i) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}\n"
     " v = MaxUnpool(y, i, os) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}\n"
     " w = MaxUnpool(c, l) {kernel_shape=[3], strides=[3], pads=[2,2]}\n"
     " output y\n output i\n output a\n output j\n output b\n output k\n output c\n"
     " output l\n output u\n output v\n output w\n}\n", SAME},
    {"onnx_grid_sample_f32",
     "graph t {\n input x : f32[2,3,5,6]\n const g : f32[2,4,7,2] = random(seed=4, lo=-1.3, hi=1.3)\n"
     " a = GridSample(x, g)\n b = GridSample(x, g) {mode=\"nearest\", padding_mode=\"border\","
     " align_corners=1}\n c = GridSample(x, g) {mode=\"bicubic\", padding_mode=\"reflection\"}\n"
     " d = GridSample(x, g) {padding_mode=\"reflection\", align_corners=1}\n"
     " e = GridSample(x, g) {mode=\"bicubic\", padding_mode=\"border\"}\n"
     " f = GridSample(x, g) {mode=\"nearest\"}\n output a\n output b\n output c\n output d\n"
     " output e\n output f\n}\n",
     1e-6, 1e-7, "the CPU's double arithmetic op for op (no FMA contraction): equal up to the last bit"},
    {"onnx_grid_sample_f16",
     "graph t {\n input x : f16[1,2,4,4]\n input g : f16[1,3,3,2]\n"
     " a = GridSample(x, g) {mode=\"bicubic\"}\n b = GridSample(x, g) {padding_mode=\"border\"}\n"
     " output a\n output b\n}\n", F16_ANY},
    {"onnx_cuda_b_empty",
     "graph t {\n input e : f32[0,5]\n const s : f32[5] = random(seed=2)\n"
     " input p : f32[0,2,3]\n input q : f32[2,0,3,3]\n const k0 : i64[1] = [0]\n"
     " const i : i64[0,5] = 0\n input u : f32[0,5]\n const z : i64[2] = [6,6]\n"
     " a = LogSoftmax(e)\n b = Hardmax(e) {axis=0}\n c, m, v = LayerNormalization(e, s)\n"
     " d = GlobalMaxPool(p)\n f = MeanVarianceNormalization(q)\n g, gi = TopK(e, k0) {axis=0}\n"
     " h = NonZero(e)\n j = ScatterElements(e, i, u) {reduction=\"add\"}\n"
     " l = Resize(q, _, _, z) {axes=[2,3], mode=\"linear\"}\n o = LRN(q) {size=3}\n output a\n output b\n"
     " output c\n output m\n output v\n output d\n output f\n output g\n output gi\n"
     " output h\n output j\n output l\n output o\n}\n", SAME},

    /* ---- cuda-c: quantized and integer linear algebra, ConvTranspose, Det, DFT, Einsum
     * (quant.cu, linalg.cu), RNN, GRU, LSTM (rnn.cu) against their CPU kernels: per tensor, per
     * axis and blocked scales, u8 and i8, ties, NaN, ±inf and saturation, batch broadcasting, 1-D
     * operands, groups, pads, strides, dilations, auto_pad and output_shape, diagonals and
     * ellipses, every direction, both layouts, sequence lengths (0 too, more than 16 of them),
     * states, peepholes, clip ---- */
    {"onnx_quantize_linear",
     "graph t {\n input x : f32[4,6,5]\n const s : f32[] = 0.01\n const z : u8[] = 128\n"
     " a = QuantizeLinear(x, s, z)\n const sc : f32[6] = random(seed=2, lo=0.002, hi=0.02)\n"
     " const zc : i8[6] = [0,1,-1,5,-5,127]\n b = QuantizeLinear(x, sc, zc) {axis=1}\n"
     " const sb : f32[4,2,5] = random(seed=3, lo=0.005, hi=0.02)\n"
     " const zb : i8[4,2,5] = random(seed=4, lo=-10, hi=10)\n"
     " c = QuantizeLinear(x, sb, zb) {axis=1, block_size=4}\n"
     " const sp : f32[12] = [0.5,1.5,2.5,-0.5,-1.5,-2.5,nan,inf,-inf,300,-300,-0.0]\n"
     " const one : f32[] = 1\n d = QuantizeLinear(sp, one)\n const zi : i8[] = 3\n"
     " e = QuantizeLinear(sp, one, zi)\n output a\n output b\n output c\n output d\n"
     " output e\n}\n", EXACT},
    {"onnx_dequantize_linear",
     "graph t {\n input q : u8[3,8,5]\n const s : f32[] = 0.02\n const z : u8[] = 100\n"
     " a = DequantizeLinear(q, s, z)\n input r : i8[3,8,5]\n"
     " const sc : f32[8] = random(seed=2, lo=0.01, hi=0.1)\n"
     " const zc : i8[8] = random(seed=3, lo=-20, hi=20)\n"
     " b = DequantizeLinear(r, sc, zc) {axis=1}\n"
     " const sb : f32[3,2,5] = random(seed=4, lo=0.01, hi=0.1)\n"
     " c = DequantizeLinear(r, sb) {axis=1, block_size=4}\n"
     " const w : i32[7] = [2147483647,-2147483648,16777217,-16777217,0,1,-1]\n"
     " const sw : f32[] = 0.5\n const zw : i32[] = -5\n d = DequantizeLinear(w, sw)\n"
     " e = DequantizeLinear(w, sw, zw)\n output a\n output b\n output c\n output d\n"
     " output e\n}\n", 0, 0, "one f32 product of the same integer and scale, as on the CPU"},
    {"onnx_dynamic_quantize",
     "graph t {\n input x : f32[7,33]\n y, s, z = DynamicQuantizeLinear(x)\n"
     " const c : f32[6] = [0,0,0,-0.0,0,0]\n y2, s2, z2 = DynamicQuantizeLinear(c)\n"
     " const p : f32[5] = [nan,1,2,3,0.5]\n y3, s3, z3 = DynamicQuantizeLinear(p)\n output y\n"
     " output s\n output z\n output y2\n output s2\n output z2\n output y3\n output s3\n"
     " output z3\n}\n", EXACT},
    {"onnx_matmul_integer",
     "graph t {\n input a : u8[2,3,5,40]\n input b : i8[40,7]\n const az : u8[] = 128\n"
     " const bz : i8[7] = random(seed=2, lo=-5, hi=5)\n y = MatMulInteger(a, b, az, bz)\n"
     " const ar : u8[5] = [0,1,128,200,255]\n h = MatMulInteger(a, b, ar)\n"
     " input c : i8[1,5,16]\n input d : i8[3,16,9]\n e = MatMulInteger(c, d)\n"
     " input f : u8[16]\n g = MatMulInteger(f, d)\n output y\n output h\n output e\n"
     " output g\n}\n", 0, 0, "int32 accumulation: exact"},
    {"onnx_qlinear_matmul",
     "graph t {\n input a : u8[2,6,32]\n const as : f32[] = 0.02\n const az : u8[] = 120\n"
     " const b : i8[32,10] = random(seed=2, lo=-128, hi=128)\n"
     " const bs : f32[10] = random(seed=3, lo=0.005, hi=0.02)\n const bz : i8[] = 0\n"
     " const ys : f32[] = 2\n const yz : u8[] = 128\n"
     " y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)\n const yi : i8[] = -3\n"
     " const ar : f32[6] = random(seed=4, lo=0.01, hi=0.03)\n"
     " w = QLinearMatMul(a, ar, az, b, bs, bz, ys, yi)\n output y\n output w\n}\n", EXACT},
    {"onnx_conv_integer",
     "graph t {\n input x : u8[2,4,9,11]\n"
     " const w : i8[6,2,3,3] = random(seed=2, lo=-128, hi=128)\n"
     " const xz : u8[] = 128\n const wz : i8[6] = random(seed=3, lo=-5, hi=5)\n"
     " y = ConvInteger(x, w, xz, wz) {kernel_shape=[3,3], pads=[1,0,1,2], strides=[2,1],"
     " group=2}\n input v : i8[1,3,20]\n const k : u8[5,3,4] = random(seed=4, lo=0, hi=256)\n"
     " z = ConvInteger(v, k) {dilations=[2], auto_pad=\"SAME_UPPER\"}\n output y\n"
     " output z\n}\n", 0, 0, "int32 accumulation: exact"},
    {"onnx_qlinear_conv",
     "graph t {\n input x : u8[1,8,7,7]\n const xs : f32[] = 0.02\n const xz : u8[] = 128\n"
     " const w : i8[12,4,3,3] = random(seed=2, lo=-128, hi=128)\n"
     " const ws : f32[12] = random(seed=3, lo=0.005, hi=0.02)\n const wz : i8[] = 0\n"
     " const ys : f32[] = 0.5\n const yz : i8[] = -10\n"
     " const b : i32[12] = random(seed=4, lo=-5000, hi=5000)\n"
     " y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz, b) {kernel_shape=[3,3], pads=[1,1,1,1],"
     " group=2}\n const yu : u8[] = 5\n"
     " u = QLinearConv(x, xs, xz, w, ws, wz, ys, yu) {strides=[2,2], group=2}\n output y\n"
     " output u\n}\n", EXACT},
    {"onnx_conv_transpose_f32",
     "graph t {\n input x : f32[2,4,5,6]\n const w : f32[4,3,3,3] = random(seed=2)\n"
     " const b : f32[6] = random(seed=3)\n y = ConvTranspose(x, w, b) {group=2, strides=[2,2],"
     " pads=[1,0,1,1], output_padding=[1,0], dilations=[1,2]}\n input v : f32[1,3,10]\n"
     " const k : f32[3,2,4] = random(seed=4)\n a = ConvTranspose(v, k) {strides=[3],"
     " auto_pad=\"SAME_UPPER\"}\n c = ConvTranspose(v, k) {strides=[2], output_shape=[25]}\n"
     " input u : f32[1,2,3,3,3]\n const k3 : f32[2,2,2,2,2] = random(seed=5)\n"
     " d = ConvTranspose(u, k3) {strides=[2,2,2], pads=[0,1,0,1,0,1]}\n output y\n output a\n"
     " output c\n output d\n}\n", F32_GEMM},
    {"onnx_conv_transpose_f16",
     "graph t {\n input x : f16[1,6,4,4]\n const w : f16[6,2,2,2] = random(seed=2)\n"
     " const b : f16[4] = random(seed=3)\n y = ConvTranspose(x, w, b) {group=2, strides=[2,2]}\n"
     " output y\n}\n", F16_ANY},
    {"onnx_det",
     "graph t {\n input x : f32[3,4,4]\n y = Det(x)\n const s : f32[2,2] = [1,2,2,4]\n"
     " z = Det(s)\n input b : f32[6,6]\n w = Det(b)\n output y\n output z\n output w\n}\n",
     1e-6, 1e-7, "the CPU's elimination in double, operation for operation; one f32 rounding"},
    {"onnx_dft",
     "graph t {\n input x : f32[2,10,3,1]\n a = DFT(x) {axis=1}\n b = DFT(x) {axis=1, onesided=1}\n"
     " input c : f32[3,8,2]\n d = DFT(c) {axis=1, inverse=1}\n const n : i64[] = 12\n"
     " e = DFT(c, n) {axis=1}\n const m : i64[] = 5\n f = DFT(c, m) {axis=1}\n output a\n"
     " output b\n output d\n output e\n output f\n}\n",
     1e-6, 1e-6, "double sums; the device's cos/sin within an ulp of glibc's; one f32 rounding"},
    {"onnx_einsum",
     "graph t {\n input a : f32[2,3,5]\n input b : f32[2,5,4]\n"
     " y = Einsum(a, b) {equation=\"bij,bjk->bik\"}\n input c : f32[4,4]\n"
     " t = Einsum(c) {equation=\"ii->\"}\n d = Einsum(c) {equation=\"ii->i\"}\n"
     " input u : f32[3]\n input v : f32[7]\n o = Einsum(u, v) {equation=\"i,j->ij\"}\n"
     " e = Einsum(a) {equation=\"...j->...\"}\n input w : f32[1,5]\n"
     " f = Einsum(a, w, u) {equation=\"bij,xj,i->bx\"}\n output y\n output t\n output d\n"
     " output o\n output e\n output f\n}\n",
     1e-6, 1e-7, "products and sums in double in the CPU's order; one f32 rounding"},
    {"onnx_einsum_f16",
     "graph t {\n input h : f16[3,8]\n input g : f16[8,5]\n"
     " z = Einsum(h, g) {equation=\"ij,jk->ki\"}\n output z\n}\n", F16_ANY},
    {"onnx_lstm_bidirectional",
     "graph t {\n input x : f32[5,3,4]\n const w : f32[2,24,4] = random(seed=2)\n"
     " const r : f32[2,24,6] = random(seed=3)\n const b : f32[2,48] = random(seed=4)\n"
     " const l : i32[3] = [5,2,0]\n input h : f32[2,3,6]\n input c : f32[2,3,6]\n"
     " const p : f32[2,18] = random(seed=5)\n"
     " y, yh, yc = LSTM(x, w, r, b, l, h, c, p) {direction=\"bidirectional\", hidden_size=6,"
     " clip=3}\n const w1 : f32[1,8,4] = random(seed=6)\n const r1 : f32[1,8,2] = random(seed=7)\n"
     " q, qh = LSTM(x, w1, r1) {hidden_size=2, input_forget=1, direction=\"reverse\"}\n"
     " output y\n output yh\n output yc\n output q\n output qh\n}\n",
     1e-5, 1e-6, "double on both sides; the device's exp/tanh within an ulp; one f32 rounding"},
    {"onnx_gru_rnn",
     "graph t {\n input x : f32[2,7,3]\n const w : f32[1,15,3] = random(seed=2)\n"
     " const r : f32[1,15,5] = random(seed=3)\n const b : f32[1,30] = random(seed=4)\n"
     " y, yh = GRU(x, w, r, b) {layout=1, hidden_size=5}\n"
     " z, zh = GRU(x, w, r, b) {layout=1, hidden_size=5, linear_before_reset=1,"
     " direction=\"reverse\"}\n input s : f32[4,18,3]\n const wr : f32[2,5,3] = random(seed=5)\n"
     " const rr : f32[2,5,5] = random(seed=6)\n"
     " const l : i32[18] = [3,4,0,1,2,3,4,4,4,1,2,3,0,0,4,2,1,3]\n"
     " v, vh = RNN(s, wr, rr, _, l) {hidden_size=5, direction=\"bidirectional\", clip=0.5}\n"
     " output y\n output yh\n output z\n output zh\n output v\n output vh\n}\n",
     1e-5, 1e-6, "double on both sides; the device's exp/tanh within an ulp; one f32 rounding"},
    /* ---- cuda-a: the elementwise functions added to the expression language, the integer kernel
     * (integer.cu) and the generators (generate.cu), each against its CPU kernel ---- */
    {"onnx_trig_hyperbolic_f32",
     "graph t {\n input x : f32[3,37]\n const one : f32[] = 1\n a = Tan(x)\n b = Asin(x)\n"
     " c = Acos(x)\n d = Atan(x)\n e = Sinh(x)\n f = Cosh(x)\n g = Asinh(x)\n h = Atanh(x)\n"
     " i = Abs(x)\n j = Add(i, one)\n k = Acosh(j)\n output a\n output b\n output c\n"
     " output d\n output e\n output f\n output g\n output h\n output k\n}\n", F32_EW},
    {"onnx_sign_round_shrink_special",
     "graph t {\n const x : f32[12] = [nan,inf,-inf,-0.0,0,0.5,1.5,2.5,-2.5,-0.7,0.6,-0.6]\n"
     " a = Sign(x)\n b = Round(x)\n c = ThresholdedRelu(x) {alpha=0.5}\n"
     " d = Shrink(x) {bias=0.25, lambd=0.6}\n e = Tan(x)\n f = Atanh(x)\n output a\n"
     " output b\n output c\n output d\n output e\n output f\n}\n", F32_EW},
    {"onnx_new_functions_f16",
     "graph t {\n input h : f16[4,33]\n const s : f16[] = 3\n m = Mul(h, s)\n a = Round(m)\n"
     " b = Sign(h)\n c = Sinh(m)\n d = Shrink(m) {lambd=1}\n e = ThresholdedRelu(m)\n"
     " f = Atan(m)\n output a\n output b\n output c\n output d\n output e\n output f\n}\n",
     F16_ANY},
    {"onnx_int_arith_i32",
     "graph t {\n const a : i32[6] = [2147483647,-2147483648,-7,7,0,-1]\n"
     " const b : i32[6] = [1,-1,2,-2,3,-1]\n const lo : i32[] = -5\n const hi : i32[] = 5\n"
     " c = Add(a, a)\n d = Sub(a, b)\n e = Mul(a, a)\n f = Div(a, b)\n g = Mod(a, b)\n"
     " h = Mod(a, b) {fmod=1}\n i = Max(a, b, c)\n j = Min(a, b)\n k = Neg(a)\n l = Abs(a)\n"
     " m = Sign(a)\n n = Relu(a)\n o = Clip(a, lo, hi)\n p = Shrink(a) {bias=1.5, lambd=2}\n"
     " q = Max(a)\n output c\n output d\n output e\n output f\n output g\n output h\n"
     " output i\n output j\n output k\n output l\n output m\n output n\n output o\n"
     " output p\n output q\n}\n", SAME},
    {"onnx_int_bcast_i8_i64_u8",
     "graph t {\n input x : i8[3,7]\n const y : i8[7] = [127,-128,-3,5,1,-1,2]\n"
     " const i : i64[4,5] = random(seed=3, lo=-1e12, hi=1e12)\n"
     " const j : i64[5] = [3,-3,7,-1,1000]\n input u : u8[2,6]\n"
     " const v : u8[6] = [1,128,255,3,7,17]\n a = Add(x, y)\n b = Mul(x, y)\n c = Div(x, y)\n"
     " d = Mod(x, y)\n e = Min(x, y)\n f = Mul(i, j)\n g = Div(i, j)\n h = Mod(i, j)\n"
     " k = Mod(i, j) {fmod=1}\n l = Sub(u, v)\n m = Div(u, v)\n n = Abs(u)\n"
     " o = Clip(x) {min=-100, max=50}\n output a\n output b\n output c\n output d\n"
     " output e\n output f\n output g\n output h\n output k\n output l\n output m\n"
     " output n\n output o\n}\n", SAME},
    {"onnx_bitwise_bitshift",
     "graph t {\n input x : i8[3,7]\n const y : i8[7] = [127,-128,-3,5,1,-1,2]\n"
     " const i : i32[4] = [-1,65535,-2147483648,12345]\n const j : i32[4] = [255,-256,1,-1]\n"
     " input u : u8[2,6]\n const s : u8[6] = [0,1,7,8,9,3]\n a = BitwiseAnd(x, y)\n"
     " b = BitwiseOr(x, y)\n c = BitwiseXor(i, j)\n d = BitwiseNot(i)\n e = BitwiseNot(u)\n"
     " f = BitShift(u, s) {direction=\"LEFT\"}\n g = BitShift(u, s) {direction=\"RIGHT\"}\n"
     " output a\n output b\n output c\n output d\n output e\n output f\n output g\n}\n",
     SAME},
    {"onnx_fmod_float",
     "graph t {\n input x : f32[3,6]\n const m : f32[6] = [1.5,-0.25,0,inf,nan,-0.0]\n"
     " input h : f16[2,6]\n const k : f16[6] = [0.5,-0.3,2,-2,0.125,3]\n"
     " a = Mod(x, m) {fmod=1}\n b = Mod(h, k) {fmod=1}\n output a\n output b\n}\n", SAME},
    {"onnx_shape_generators",
     "graph t {\n input x : f32[2,3,5]\n const sh : i64[3] = [2,3,4]\n input ti : i32[1]\n"
     " input m : f16[3,4]\n const s0 : f32[] = 0.5\n const l0 : f32[] = 7\n"
     " const d0 : f32[] = 0.75\n const s1 : i64[] = 10\n const l1 : i64[] = -3\n"
     " const d1 : i64[] = -4\n const s2 : i32[] = -3\n const l2 : i32[] = 3\n"
     " const d2 : i32[] = 2\n a = Shape(x)\n b = Shape(x) {start=1, end=-1}\n c = Size(x)\n"
     " d = ConstantOfShape(sh) {value=1.5}\n e = ConstantOfShape(sh) {value=-7, dtype=6}\n"
     " f = CastLike(x, ti)\n g = EyeLike(m) {k=1}\n h = EyeLike(m) {k=-2, dtype=7}\n"
     " i = Range(s0, l0, d0)\n j = Range(s1, l1, d1)\n k = Range(s2, l2, d2)\n"
     " output a\n output b\n output c\n output d\n output e\n output f\n output g\n"
     " output h\n output i\n output j\n output k\n}\n", SAME},
    {"onnx_windows",
     "graph t {\n const n : i64[] = 10\n const one : i32[] = 1\n a = HannWindow(n)\n"
     " b = HammingWindow(n) {periodic=0}\n c = BlackmanWindow(n)\n d = HannWindow(one)\n"
     " e = BlackmanWindow(n) {periodic=0, output_datatype=10}\n output a\n output b\n"
     " output c\n output d\n output e\n}\n", F32_EW},
    {"onnx_one_hot_reverse_sequence",
     "graph t {\n const ids : i64[2,3] = [0,3,-1,5,-6,2]\n const depth : i64[] = 5\n"
     " const vals : f32[2] = [-1,2.5]\n const fi : f32[4] = [1.9,-0.5,-4.9,nan]\n"
     " const fd : f32[] = 4.7\n const iv : i32[2] = [0,7]\n input x : f16[4,3,2]\n"
     " const lens : i64[3] = [4,1,0]\n input z : i32[2,5]\n const zl : i64[2] = [3,5]\n"
     " a = OneHot(ids, depth, vals)\n b = OneHot(ids, depth, vals) {axis=0}\n"
     " c = OneHot(fi, fd, iv) {axis=1}\n d = ReverseSequence(x, lens)\n"
     " e = ReverseSequence(z, zl) {batch_axis=0, time_axis=1}\n output a\n output b\n"
     " output c\n output d\n output e\n}\n", SAME},
    {"onnx_random_uniform",
     "graph t {\n input x : bf16[5,9]\n"
     " a = RandomUniform() {shape=[3,50], seed=7, low=-2, high=3}\n"
     " b = RandomUniform() {shape=[17], dtype=10}\n c = RandomUniformLike(x) {seed=2.6}\n"
     " d = RandomUniformLike(x) {dtype=1, low=1e30, high=3e38}\n output a\n output b\n"
     " output c\n output d\n}\n", SAME},
    /* AddLayerNorm's skip_bias (SkipLayerNormalization's bias): vectorized f16 with the sum,
     * bf16 past the row cache without beta, f32 of an odd width (scalar path) */
    {"addlayernorm_skip_bias_f16",
     "graph t {\n input a : f16[3,5,256]\n input b : f16[3,5,256]\n"
     " const s : f16[256] = random(seed=2)\n const c : f16[256] = random(seed=3)\n"
     " const sb : f16[256] = random(seed=4)\n y, sum = AddLayerNorm(a, b, s, c, sb)\n output y\n"
     " output sum\n}\n", F16_ANY},
    {"addlayernorm_skip_bias_bf16_20000",
     "graph t {\n input a : bf16[2,20000]\n input b : bf16[2,20000]\n"
     " const s : bf16[20000] = random(seed=2)\n const sb : bf16[20000] = random(seed=4)\n"
     " y = AddLayerNorm(a, b, s, _, sb)\n output y\n}\n", BF16_ANY},
    {"addlayernorm_skip_bias_f32_97",
     "graph t {\n input a : f32[4,97]\n input b : f32[97]\n const s : f32[97] = random(seed=2)\n"
     " const sb : f32[97] = random(seed=4)\n y, sum = AddLayerNorm(a, b, s, _, sb)\n output y\n"
     " output sum\n}\n", F32_REDUCE},
    /* Attention's key_mask (ONNX Runtime's raw 2-D mask): BSHD with a mask added after it, and
     * f16 BHSD with one row for every batch and a filter of its own */
    {"attention_key_mask_bshd_mask",
     "graph t {\n input q : f32[2,9,4,32]\n input k : f32[2,13,4,32]\n input v : f32[2,13,4,24]\n"
     " input m : f32[2,1,1,13]\n"
     " const km : i32[2,13] = [0,1,1,0,1,1,0,1,1,0,1,1,0, 1,1,0,1,1,0,1,1,0,1,1,0,1]\n"
     " y = Attention(q, k, v, m, _, _, km) {layout=\"BSHD\"}\n output y\n}\n",
     F32_REDUCE},
    {"attention_key_mask_f16_filter",
     "graph t {\n input q : f16[3,2,7,64]\n input k : f16[3,2,40,64]\n input v : f16[3,2,40,64]\n"
     " const km : i32[1,40] = [-1,3,3,3,3,-1,3,3,3,3,-1,3,3,3,3,-1,3,3,3,3,\n"
     "   -1,3,3,3,3,-1,3,3,3,3,-1,3,3,3,3,-1,3,3,3,3]\n"
     " y = Attention(q, k, v, _, _, _, km) {mask_filter_value=-30, causal=1}\n output y\n}\n",
     F16_ANY},
    /* Attention's bias, added after the mask: Wav2Vec2-Conformer's position scores [1, H, S, T]
     * with a padding mask, and an f16 BSHD bias [B, 1, 1, T] with causal and no mask */
    {"attention_bias_mask",
     "graph t {\n input q : f32[2,4,9,32]\n input k : f32[2,4,13,32]\n input v : f32[2,4,13,24]\n"
     " input m : f32[2,1,1,13]\n input pb : f32[1,4,9,13]\n"
     " y = Attention(q, k, v, m, _, _, _, pb)\n output y\n}\n",
     F32_REDUCE},
    {"attention_bias_f16_bshd_causal",
     "graph t {\n input q : f16[3,7,2,64]\n input k : f16[3,40,2,64]\n input v : f16[3,40,2,64]\n"
     " input pb : f16[3,1,1,40]\n"
     " y = Attention(q, k, v, _, _, _, _, pb) {layout=\"BSHD\", causal=1}\n output y\n}\n",
     F16_ANY},
};

/* Compares one output; NaN/Inf must agree in class and sign before any tolerance applies. */
static bool compare(const char *name, const rt_tensor *want, const rt_tensor *got, double rtol,
                    double atol, double *worst_abs, double *worst_rel)
{
    if (want->type.dtype != got->type.dtype || rt_tensor_numel(want) != rt_tensor_numel(got)) {
        fprintf(stderr, "%s: '%s' has another dtype or size on the GPU\n", name, want->name);
        return false;
    }
    size_t n = rt_tensor_numel(want), bad = 0;
    for (size_t i = 0; i < n; i++) {
        double w = rt_tensor_get(want, i), g = rt_tensor_get(got, i);
        bool special = isnan(w) || isinf(w) || isnan(g) || isinf(g);
        bool ok = special ? (isnan(w) && isnan(g)) || (isinf(w) && w == g)
                          : fabs(g - w) <= atol + rtol * fabs(w);
        if (!special) {
            double e = fabs(g - w);
            if (e > *worst_abs)
                *worst_abs = e;
            if (fabs(w) > 1e-3 && e / fabs(w) > *worst_rel)
                *worst_rel = e / fabs(w);
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "%s: '%s'[%zu] is %.9g on the GPU, %.9g on the CPU\n", name,
                    want->name, i, g, w);
    }
    return bad == 0;
}

static FILE *results;

/* The CUDA kernel's supports check of any node: the fused column's, or the plain-op one. */
static bool gpu_supports(const ir_graph *g, const ir_node *n, char *why)
{
    switch (n->op) {
#define IR_OP(name, ...)                                                                           \
    case IR_OP_##name: return kn_cuda_supports_##name(g, n, why);
#include "ir/fused_ops.def"
#undef IR_OP
    default: return kn_cuda_onnx_supports(g, n, why);
    }
}

/* Runs case c on the CPU and on the GPU (`repeat` times, the later runs replayed from a CUDA graph
 * when cuda_graph) and compares; `label` names the mode in the results. */
static void run_case_as(const gpu_case *c, int repeat, bool cuda_graph, const char *label)
{
    dg_context *dg = dg_new();
    dg_source src = {c->name, c->text, strlen(c->text)};
    ir_graph *g = ir_parse(&src, dg);
    bool ok = g && ir_validate(g, dg);
    rt_result want = {0}, got = {0};
    /* no guard bytes in a captured run: checking them means copying to the host */
    rt_options opts = {.seed = 11, .sentinels = !cuda_graph, .repeat = repeat,
                       .cuda_graph = cuda_graph};
    ok = ok && rt_run_cpu(g, NULL, 0, &opts, &want, dg);
    ok = ok && rt_run_cuda(g, want.inputs, want.ninputs, &opts, &got, dg);
    /* Every node of a case must have run on the GPU: the test is of the kernel, not of a
     * fallback. */
    for (size_t i = 0; ok && i < got.nfallbacks; i++) {
        fprintf(stderr, "%s: %s ran on the CPU: %s\n", c->name, got.fallbacks[i].node,
                got.fallbacks[i].why);
        ok = false;
    }
    double worst_abs = 0, worst_rel = 0;
    for (size_t k = 0; ok && k < want.noutputs; k++)
        ok = compare(c->name, &want.outputs[k], &got.outputs[k], c->rtol, c->atol, &worst_abs,
                     &worst_rel) && ok;
    if (dg_has_errors(dg))
        dg_print(dg, stderr);
    if (!ok)
        fprintf(stderr, "FAIL %s (tolerance rtol %g atol %g: %s)\n", c->name, c->rtol, c->atol,
                c->why);
    if (results)
        fprintf(results, "%-36s %s%s max_abs=%.3g max_rel=%.3g (rtol %g atol %g: %s)\n", c->name,
                label, ok ? "ok  " : "FAIL", worst_abs, worst_rel, c->rtol, c->atol, c->why);
    CHECK(ok);
    rt_result_free(&want);
    rt_result_free(&got);
    if (g)
        ir_graph_free(g);
    dg_free(dg);
}

static void test_every_case(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_as(&cases[i], 1, false, "");
}

/* State must not leak from one run into the next (caches of algorithms, compiled kernels, the
 * buffer pool, persistent weights), and a run captured as a CUDA graph must replay to the same
 * values: a case of each kernel family run 3 times, node by node and then replayed. */
static const char *const repeated[] = {
    "rmsnorm_f16_7200",        "addlayernorm_f32_sum",   "softmax_mask_f32",
    "attention_gqa_f32",       "gemm_bias_relu_f32",     "qkv_gqa_f32",
    "conv_bias_relu_residual_f32", "separable_mobilenet_f32", "qgemm_requant",
    "ewchain_f32_bcast",       "rope_half_table",        "swiglu_bf16_bcast",
    "onnx_matmul_gemm",        "onnx_binary_bcast_bf16",
    /* cuda-b: the capturable ones (scatter plans are uploaded, NonZero's count and MaxUnpool's
     * indices read back) */
    "onnx_log_softmax_hardmax_f32", "onnx_layernorm_stats_f32", "onnx_group_mvn_lrn_f32",
    "onnx_losses_f32", "onnx_topk", "onnx_resize_modes_f32", "onnx_grid_sample_f32",
    "onnx_dynamic_quantize", /* cuda-c: a memset, an atomic range, a read-back */
    /* cuda-a */
    "onnx_int_arith_i32",      "onnx_shape_generators",  "onnx_random_uniform",
    "addlayernorm_skip_bias_f16",
};

static void test_repeated_and_replayed(void)
{
    for (size_t r = 0; r < sizeof repeated / sizeof repeated[0]; r++) {
        const gpu_case *c = NULL;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (strcmp(cases[i].name, repeated[r]) == 0)
                c = &cases[i];
        CHECK(c != NULL);
        if (!c)
            continue;
        run_case_as(c, 3, false, "x3 ");
        run_case_as(c, 3, true, "graph ");
    }
}

/* A node no CUDA kernel takes runs on the CPU, the result says which and why, and the values
 * moved across agree with the CPU run. */
static void test_fallback_is_listed(void)
{
    const char *text = "graph t {\n input x : f16[4,3,3]\n y = Det(x)\n z = Relu(y)\n"
                       " output z\n}\n";
    dg_context *dg = dg_new();
    dg_source src = {"fallback", text, strlen(text)};
    ir_graph *g = ir_parse(&src, dg);
    rt_result want = {0}, got = {0};
    rt_options opts = {.seed = 3, .sentinels = true};
    bool ok = g && ir_validate(g, dg) && rt_run_cpu(g, NULL, 0, &opts, &want, dg) &&
              rt_run_cuda(g, want.inputs, want.ninputs, &opts, &got, dg);
    CHECK(ok);
    if (ok) {
        CHECK(got.nfallbacks == 1);
        CHECK_STR(got.fallbacks[0].node, "y");
        CHECK_STR(got.fallbacks[0].why, "the input is f16; the CUDA Det takes f32");
        double a = 0, b = 0;
        CHECK(compare("fallback", &want.outputs[0], &got.outputs[0], 0, 0, &a, &b));
    }
    if (dg_has_errors(dg))
        dg_print(dg, stderr);
    rt_result_free(&want);
    rt_result_free(&got);
    if (g)
        ir_graph_free(g);
    dg_free(dg);
}

/* Whole examples: each fused with the standard rules for the CUDA target, run on the CUDA executor
 * (fused nodes on the GPU, the rest on the CPU) against the unfused graph on the CPU reference.
 * GEMM-sized sums in another order: f32 1e-3 relative + 1e-3 absolute. */
static const char *const examples[] = {"resnet_block", "bert_layer", "conformer", "qwen2"};

static void test_whole_examples(void)
{
    const char *rules[] = {FR_SOURCE_DIR "/rules/cnn.rules",
                           FR_SOURCE_DIR "/rules/transformer.rules",
                           FR_SOURCE_DIR "/rules/llm.rules", FR_SOURCE_DIR "/rules/quant.rules"};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s.graph", FR_SOURCE_DIR, examples[i]);
        dg_context *dg = dg_new();
        dsl_ruleset *rs = NULL;
        mt_automaton *a = rw_load_rules(rules, sizeof rules / sizeof rules[0], &rs, dg);
        ir_graph *original = a ? ir_load_text(path, dg) : NULL;
        ir_graph *fused = original ? ir_load_text(path, dg) : NULL;
        rw_options opts = rw_options_default();
        opts.target = KN_BACKEND_CUDA;
        rw_report rep = {0};
        rt_options ro = {.seed = 5, .sentinels = true};
        rt_result want = {0}, got = {0};
        bool ok = fused && rw_apply(fused, a, &opts, &rep, dg) &&
                  rt_run_cpu(original, NULL, 0, &ro, &want, dg) &&
                  rt_run_cuda(fused, want.inputs, want.ninputs, &ro, &got, dg);
        double worst_abs = 0, worst_rel = 0;
        for (size_t k = 0; ok && k < want.noutputs; k++)
            ok = compare(examples[i], &want.outputs[k], &got.outputs[k], 1e-3, 1e-3, &worst_abs,
                         &worst_rel) && ok;
        if (dg_has_errors(dg))
            dg_print(dg, stderr);
        if (results)
            fprintf(results, "example %-28s %s max_abs=%.3g max_rel=%.3g (rtol 1e-3 atol 1e-3)\n",
                    examples[i], ok ? "ok  " : "FAIL", worst_abs, worst_rel);
        CHECK(ok);
        rt_result_free(&want);
        rt_result_free(&got);
        if (fused)
            rw_report_free(&rep);
        if (original)
            ir_graph_free(original);
        if (fused)
            ir_graph_free(fused);
        mt_free(a);
        dsl_ruleset_free(rs);
        dg_free(dg);
    }
}

/* Runs without a device: every case is a valid graph whose node the CUDA kernel supports. */
static void test_cases_are_valid(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dg_context *dg = dg_new();
        dg_source src = {cases[i].name, cases[i].text, strlen(cases[i].text)};
        ir_graph *g = ir_parse(&src, dg);
        bool ok = g && ir_validate(g, dg);
        char why[KN_WHY_SIZE] = "";
        for (size_t k = 0; ok && k < g->nodes.len; k++)
            if (!gpu_supports(g, g->nodes.items[k], why)) {
                fprintf(stderr, "%s: the CUDA kernel refuses it: %s\n", cases[i].name, why);
                ok = false;
            }
        if (dg_has_errors(dg))
            dg_print(dg, stderr);
        CHECK(ok);
        if (g)
            ir_graph_free(g);
        dg_free(dg);
    }
}

/* Runs without a device: the CPU half of every case (the reference accepts the empty, rank-0 and
 * special-value graphs), so that a device run spends its minutes on the GPU half only. */
static void test_cases_run_on_cpu(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dg_context *dg = dg_new();
        dg_source src = {cases[i].name, cases[i].text, strlen(cases[i].text)};
        ir_graph *g = ir_parse(&src, dg);
        rt_result r = {0};
        rt_options opts = {.seed = 11};
        bool ok = g && ir_validate(g, dg) && rt_run_cpu(g, NULL, 0, &opts, &r, dg);
        if (dg_has_errors(dg))
            dg_print(dg, stderr);
        CHECK(ok);
        rt_result_free(&r);
        if (g)
            ir_graph_free(g);
        dg_free(dg);
    }
}

/* Runs without a device: the strided-copy plans of the movement ops that have no other host-side
 * check (DepthToSpace, SpaceToDepth), applied on the host to the CPU run's input, give the CPU
 * kernel's output byte for byte; so the device run checks the copy kernel, not the plan. */
static void test_copy_plans_on_host(void)
{
    static const char *const graphs[] = {
        "graph t {\n input x : i32[2,12,3,5]\n y = DepthToSpace(x) {blocksize=2}\n output y\n}\n",
        "graph t {\n input x : i32[2,18,2,1]\n y = DepthToSpace(x) {blocksize=3, mode=\"CRD\"}\n"
        " output y\n}\n",
        "graph t {\n input x : i32[1,3,4,6]\n y = SpaceToDepth(x) {blocksize=2}\n output y\n}\n",
        "graph t {\n input x : i32[2,2,3,3]\n y = SpaceToDepth(x) {blocksize=3}\n output y\n}\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        dg_context *dg = dg_new();
        dg_source src = {"t.graph", graphs[i], strlen(graphs[i])};
        ir_graph *g = ir_parse(&src, dg);
        rt_result r = {0};
        rt_options opts = {.seed = 5};
        bool ok = g && ir_validate(g, dg) && rt_run_cpu(g, NULL, 0, &opts, &r, dg);
        CHECK(ok);
        if (ok) {
            const ir_node *n = g->nodes.items[0];
            kn_cuda_move_io io = {.in_type = {&r.inputs[0].type}, .out_type = {&r.outputs[0].type}};
            kc_copy_plan plan[KN_CUDA_MOVE_MAX_PLANS];
            int nplans = 0;
            const char *err = "";
            CHECK(kn_cuda_move_plans(n, &io, plan, &nplans, &err) && nplans == 1);
            const int32_t *x = r.inputs[0].data, *want = r.outputs[0].data;
            int64_t numel = (int64_t)(r.outputs[0].nbytes / sizeof *want), idx[KC_MAX_RANK] = {0};
            int32_t *got = calloc((size_t)numel, sizeof *got);
            int64_t count = 1;
            for (int d = 0; d < plan[0].rank; d++)
                count *= plan[0].dims[d];
            CHECK(count == numel);
            for (int64_t k = 0; k < count; k++) {
                int64_t from = plan[0].src_base, to = plan[0].dst_base;
                for (int d = 0; d < plan[0].rank; d++) {
                    from += idx[d] * plan[0].src_strides[d];
                    to += idx[d] * plan[0].dst_strides[d];
                }
                got[to] = x[from];
                for (int d = plan[0].rank - 1; d >= 0 && ++idx[d] == plan[0].dims[d]; d--)
                    idx[d] = 0;
            }
            CHECK(memcmp(got, want, (size_t)numel * sizeof *got) == 0);
            free(got);
        }
        rt_result_free(&r);
        if (g)
            ir_graph_free(g);
        dg_free(dg);
    }
}

/* Without a device, running on CUDA is an error that says so, not a crash. */
static void test_no_device_is_reported(void)
{
    dg_context *dg = dg_new();
    dg_source src = {cases[0].name, cases[0].text, strlen(cases[0].text)};
    ir_graph *g = ir_parse(&src, dg);
    CHECK(g && ir_validate(g, dg));
    rt_result r = {0};
    CHECK(g && !rt_run_cuda(g, NULL, 0, NULL, &r, dg));
    CHECK(dg_error_count(dg) == 1);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    dg_print(dg, mem);
    fclose(mem);
    CHECK(strstr(text, "no CUDA device: ") != NULL);
    free(text);
    if (g)
        ir_graph_free(g);
    dg_free(dg);
}

int main(void)
{
    RUN(test_cases_are_valid);
    RUN(test_cases_run_on_cpu);
    RUN(test_copy_plans_on_host);
    if (unit_failed)
        return unit_finish();
    char why[256];
    if (!rt_cuda_available(why, sizeof why)) {
        RUN(test_no_device_is_reported);
        if (unit_failed)
            return unit_finish();
        printf("skipped: %s\n", why);
        return 77;
    }
    const char *dir = getenv("FUSERULE_GPU_RESULTS");
    char path[1024];
    if (dir) {
        snprintf(path, sizeof path, "%s/gpu_kernels.txt", dir);
        results = fopen(path, "a");
    }
    RUN(test_every_case);
    RUN(test_repeated_and_replayed);
    RUN(test_fallback_is_listed);
    RUN(test_whole_examples);
    if (results)
        fclose(results);
    return unit_finish();
}
