/* The kernel registry: one table of fused ops with their operands and, per backend, the
 * constraints under which a kernel runs them and the kernel itself. docs/kernels.md is its prose
 * form; keep the two in step. */
#include "kernels/kernels.h"

#include "base/check.h"
#ifdef FR_HAVE_CUDA
#include "kernels/cuda/cuda_registry.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- supports checks (CPU) ------------------------------------------------------------------
 *
 * The op's inference already checks what makes a node well-formed (ranks, broadcastability,
 * attribute values). A supports check adds what one kernel cannot do, and restates the dtype
 * conditions so that it gives the right answer on a node built but not yet inferred. */

/* The CPU kernel of ElementwiseChain keeps one pointer per input on its evaluation stack. */
enum { CPU_EW_MAX_INPUTS = 32 };
/* QGemm accumulates int8 products (|a*b| <= 2^14) in int32: K up to 2^17 cannot overflow. */
#define CPU_QGEMM_MAX_K ((int64_t)1 << 17)

bool kn_why(char *why_not, const char *fmt, ...)
{
    if (why_not) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why_not, KN_WHY_SIZE, fmt, ap);
        va_end(ap);
    }
    return false;
}

static const ir_type *in_type(const ir_node *n, uint32_t i)
{
    return i < n->ninputs && n->inputs[i] ? n->inputs[i]->type : NULL;
}

/* Every present input is f32, f16 or bf16 (unknown dtypes are not refused). */
/* Inputs before `end` are float (or omitted). */
static bool float_inputs_before(const ir_node *n, uint32_t end, char *why_not)
{
    for (uint32_t i = 0; i < n->ninputs && i < end; i++) {
        const ir_type *t = in_type(n, i);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && !ir_dtype_is_float(t->dtype))
            return kn_why(why_not, "input %u is %s; the CPU kernel takes f32, f16 or bf16", i,
                          ir_dtype_name(t->dtype));
    }
    return true;
}

static bool float_inputs(const ir_node *n, char *why_not)
{
    return float_inputs_before(n, n->ninputs, why_not);
}

static bool cpu_float_op(const ir_graph *g, const ir_node *n, char *why_not)
{
    return float_inputs(n, why_not);
}

static bool cpu_conv(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!float_inputs(n, why_not))
        return false;
    const ir_type *x = in_type(n, 0);
    if (x && x->rank >= 0 && (x->rank < 3 || x->rank > 5))
        return kn_why(why_not, "the CPU conv handles 1 to 3 spatial dims, not %d", x->rank - 2);
    return true;
}

/* Input i (when present with a known rank) has rank in [lo, hi]. */
static bool rank_in(const ir_node *n, uint32_t i, int lo, int hi, const char *what, char *why_not)
{
    const ir_type *t = in_type(n, i);
    if (!t || t->rank < 0 || (t->rank >= lo && t->rank <= hi))
        return true;
    if (lo == hi)
        return kn_why(why_not, "%s has rank %d; the kernel takes rank %d", what, t->rank, lo);
    return kn_why(why_not, "%s has rank %d; the kernel takes rank %d or more", what, t->rank, lo);
}

/* GEMMs: A batched [..., M, K] (rank 2 or more), the weight a matrix, the bias a vector. */
static bool cpu_gemm(const ir_graph *g, const ir_node *n, char *why_not)
{
    return float_inputs(n, why_not) && rank_in(n, 0, 1, IR_MAX_RANK, "A", why_not) &&
           rank_in(n, 1, 2, IR_MAX_RANK, "B", why_not) && rank_in(n, 2, 1, 1, "the bias", why_not);
}

static bool cpu_qkv(const ir_graph *g, const ir_node *n, char *why_not)
{
    return float_inputs(n, why_not) && rank_in(n, 0, 1, IR_MAX_RANK, "X", why_not) &&
           rank_in(n, 1, 2, 2, "W", why_not) && rank_in(n, 2, 1, 1, "the bias", why_not);
}

static bool cpu_ewchain(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (n->ninputs > CPU_EW_MAX_INPUTS)
        return kn_why(why_not, "the CPU kernel takes at most %d inputs, not %u", CPU_EW_MAX_INPUTS,
                      n->ninputs);
    return float_inputs(n, why_not);
}

/* Q, K, V, mask, cos, sin and bias float; key_mask (input 6) i32 or i64, as inference checked. */
static bool cpu_attention(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!float_inputs_before(n, 6, why_not))
        return false;
    const ir_type *bt = in_type(n, 7);
    if (bt && bt->dtype != IR_DTYPE_UNKNOWN && !ir_dtype_is_float(bt->dtype))
        return kn_why(why_not, "input 7 is %s; the CPU kernel takes f32, f16 or bf16",
                      ir_dtype_name(bt->dtype));
    if (ir_get_int(n, "num_heads") > 0)
        return true; /* packed: X, W and bias, whose ranks inference checked */
    for (uint32_t i = 0; i < 3; i++) {
        const ir_type *t = in_type(n, i);
        if (t && t->rank >= 0 && t->rank != 4)
            return kn_why(why_not, "Q, K and V must have rank 4");
    }
    return true;
}

static bool cpu_qgemm(const ir_graph *g, const ir_node *n, char *why_not)
{
    const ir_type *a = in_type(n, 0), *b = in_type(n, 2);
    if ((a && a->dtype != IR_I8) || (b && b->dtype != IR_I8))
        return kn_why(why_not, "the CPU QGemm takes i8 A and B");
    if (!rank_in(n, 0, 2, IR_MAX_RANK, "A", why_not) || !rank_in(n, 2, 2, 2, "B", why_not))
        return false;
    if (a && a->rank >= 1) {
        int64_t k = a->dims[a->rank - 1];
        if (ir_dim_is_static(k) && k > CPU_QGEMM_MAX_K)
            return kn_why(why_not, "K = %lld could overflow the int32 accumulator (at most %lld)",
                          (long long)k, (long long)CPU_QGEMM_MAX_K);
    }
    return true;
}

static bool cpu_dynq_matmul(const ir_graph *g, const ir_node *n, char *why_not)
{
    const ir_type *a = in_type(n, 0), *b = in_type(n, 1);
    if (a && a->dtype != IR_DTYPE_UNKNOWN && a->dtype != IR_F32)
        return kn_why(why_not, "the CPU DynamicQuantizeMatMul takes an f32 A");
    if (b && b->dtype != IR_DTYPE_UNKNOWN && b->dtype != IR_U8 && b->dtype != IR_I8)
        return kn_why(why_not, "the CPU DynamicQuantizeMatMul takes a u8 or i8 B");
    return rank_in(n, 0, 2, IR_MAX_RANK, "A", why_not) && rank_in(n, 1, 2, 2, "B", why_not);
}

/* X, bias and residual float; ratio float and training_mode bool (scalars, inference checked). */
static bool cpu_bias_dropout(const ir_graph *g, const ir_node *n, char *why_not)
{
    for (uint32_t i = 0; i < 3; i++) {
        const ir_type *t = in_type(n, i);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && !ir_dtype_is_float(t->dtype))
            return kn_why(why_not, "input %u is %s; the CPU kernel takes f32, f16 or bf16", i,
                          ir_dtype_name(t->dtype));
    }
    return true;
}

/* A and B one 8-bit dtype (inference checked the scales and zero points). */
static bool cpu_qlinear_add(const ir_graph *g, const ir_node *n, char *why_not)
{
    const ir_type *a = in_type(n, 0), *b = in_type(n, 3);
    if ((a && a->dtype != IR_DTYPE_UNKNOWN && a->dtype != IR_U8 && a->dtype != IR_I8) ||
        (a && b && b->dtype != IR_DTYPE_UNKNOWN && b->dtype != a->dtype))
        return kn_why(why_not, "the CPU QLinearAdd takes u8 or i8 A and B of one dtype");
    return true;
}

/* ---- the table ------------------------------------------------------------------------------ */

#define CPU(op, check) {"cpu." #op, check, kn_cpu_##op}
#define NO_CUDA {NULL, NULL, NULL}
/* The CUDA column: kernels/cuda/ (docs/cuda.md), registered when the build has the CUDA backend. */
#ifdef FR_HAVE_CUDA
#define CUDA(op) {"cuda." #op, kn_cuda_supports_##op, kn_cuda_run_##op}
#else
#define CUDA(op) NO_CUDA
#endif

static const kn_fused_entry entries[] = {
    {IR_OP_FusedConvAct, "act(conv(X, W) + B + Z)",
     {{"X", false}, {"W", false}, {"B", true}, {"residual", true}}, {{"Y", false}}, false,
     CPU(FusedConvAct, cpu_conv), CUDA(FusedConvAct)},
    {IR_OP_GemmEpilogue, "act(alpha * A @ B + bias + beta * residual)",
     {{"A", false}, {"B", false}, {"bias", true}, {"residual", true}}, {{"Y", false}}, false,
     CPU(GemmEpilogue, cpu_gemm), CUDA(GemmEpilogue)},
    {IR_OP_FusedQKV, "one GEMM X @ W (+ bias) split into 2 or 3 outputs by `sizes`",
     {{"X", false}, {"W", false}, {"bias", true}}, {{"Q", false}, {"K", false}, {"V", true}},
     false, CPU(FusedQKV, cpu_qkv), CUDA(FusedQKV)},
    {IR_OP_RMSNorm, "X / sqrt(mean(X^2) + epsilon) * scale",
     {{"X", false}, {"scale", false}}, {{"Y", false}}, false, CPU(RMSNorm, cpu_float_op),
     CUDA(RMSNorm)},
    {IR_OP_AddLayerNorm, "LayerNorm(A + B + skip_bias) * scale + bias, and the sum",
     {{"A", false}, {"B", false}, {"scale", false}, {"bias", true}, {"skip_bias", true}},
     {{"Y", false}, {"Sum", true}}, false, CPU(AddLayerNorm, cpu_float_op),
     CUDA(AddLayerNorm)},
    {IR_OP_AddRMSNorm, "RMSNorm(A + B) * scale, and the sum",
     {{"A", false}, {"B", false}, {"scale", false}}, {{"Y", false}, {"Sum", true}}, false,
     CPU(AddRMSNorm, cpu_float_op), CUDA(AddRMSNorm)},
    {IR_OP_FusedSoftmax, "softmax(scale * X + mask) along axis",
     {{"X", false}, {"mask", true}}, {{"Y", false}}, false, CPU(FusedSoftmax, cpu_float_op),
     CUDA(FusedSoftmax)},
    {IR_OP_ElementwiseChain, "the expression `expr` over broadcast inputs x0..xN, in one pass",
     {{"x", false}}, {{"Y", false}}, true, CPU(ElementwiseChain, cpu_ewchain),
     CUDA(ElementwiseChain)},
    {IR_OP_Attention,
     "softmax(scale * rope(Q) @ rope(K)^T + key_mask + mask + bias) @ V, causal optional, GQA, "
     "BHSD or BSHD",
     {{"Q", false}, {"K", false}, {"V", false}, {"mask", true}, {"cos", true}, {"sin", true},
      {"key_mask", true}, {"bias", true}},
     {{"Y", false}}, false,
     CPU(Attention, cpu_attention), CUDA(Attention)},
    {IR_OP_RoPE, "X * cos + rotate(X) * sin on the last dim",
     {{"X", false}, {"cos", false}, {"sin", false}}, {{"Y", false}}, false,
     CPU(RoPE, cpu_float_op), CUDA(RoPE)},
    {IR_OP_SwiGLU, "gate * sigmoid(gate) * up", {{"gate", false}, {"up", false}}, {{"Y", false}},
     false, CPU(SwiGLU, cpu_float_op), CUDA(SwiGLU)},
    {IR_OP_QGemm, "int8 A @ B accumulated in int32, dequantized (and requantized by y_scale)",
     {{"A", false}, {"a_scale", false}, {"B", false}, {"b_scale", false}, {"bias", true},
      {"y_scale", true}},
     {{"Y", false}}, false, CPU(QGemm, cpu_qgemm), CUDA(QGemm)},
    {IR_OP_SeparableConv,
     "out_act(pointwise(act(depthwise(X, W_dw) + B_dw), W_pw) + B_pw + residual)",
     {{"X", false}, {"W_dw", false}, {"W_pw", false}, {"B_dw", true}, {"B_pw", true},
      {"residual", true}},
     {{"Y", false}}, false, CPU(SeparableConv, cpu_conv), CUDA(SeparableConv)},
    {IR_OP_SqueezeExcite, "X * gate(W2 act(W1 mean(X) + B1) + B2), mean over the spatial dims",
     {{"X", false}, {"W1", false}, {"B1", false}, {"W2", false}, {"B2", false}},
     {{"Y", false}}, false, CPU(SqueezeExcite, cpu_float_op), CUDA(SqueezeExcite)},
    {IR_OP_DynamicQuantizeMatMul,
     "DynamicQuantizeLinear(A) @ B in int32 with the zero points, times a_scale * b_scale, + bias",
     {{"A", false}, {"B", false}, {"b_scale", false}, {"b_zero_point", true}, {"bias", true}},
     {{"Y", false}}, false, CPU(DynamicQuantizeMatMul, cpu_dynq_matmul),
     CUDA(DynamicQuantizeMatMul)},
    {IR_OP_BiasDropout, "Dropout(X + bias, ratio, training_mode) + residual, the mask of the seed",
     {{"X", false}, {"bias", false}, {"residual", true}, {"ratio", true}, {"training_mode", true}},
     {{"Y", false}, {"mask", true}}, false, CPU(BiasDropout, cpu_bias_dropout),
     CUDA(BiasDropout)},
    {IR_OP_QLinearAdd,
     "QuantizeLinear(DequantizeLinear(A) + DequantizeLinear(B)), per-tensor parameters",
     {{"A", false}, {"A_scale", false}, {"A_zero_point", false}, {"B", false}, {"B_scale", false},
      {"B_zero_point", false}, {"C_scale", false}, {"C_zero_point", false}},
     {{"C", false}}, false, CPU(QLinearAdd, cpu_qlinear_add), CUDA(QLinearAdd)},
};

/* The layout column: the fused ops whose kernels read only some layout tags (the rest read any).
 * The convolutions read channels at dim 1 on both backends (the CPU loops; cuDNN is given NCHW),
 * so a channels-last tag contradicts what they would do with the tensor. */
static const struct {
    ir_op op;
    unsigned layouts;
} layout_rows[] = {
    {IR_OP_FusedConvAct, KN_CHANNELS_FIRST},
    {IR_OP_SeparableConv, KN_CHANNELS_FIRST},
    {IR_OP_SqueezeExcite, KN_CHANNELS_FIRST},
};

#define IR_OP(name, ...) +1
enum { FUSED_COUNT = 0
#include "ir/fused_ops.def"
};
#undef IR_OP
_Static_assert(FR_COUNT_OF(entries) == FUSED_COUNT, "one registry row per fused op");

/* The first fused op in the catalog enum: fused_ops.def follows ops.def. */
#define IR_OP(name, ...) IR_OP_##name,
static const ir_op fused_ops[] = {
#include "ir/fused_ops.def"
};
#undef IR_OP

static const kn_cpu_fn cpu_fns[IR_OP_COUNT] = {
#define IR_OP(name, ...) [IR_OP_##name] = kn_cpu_##name,
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP
};

static const kn_cpu_fn cpu_fns_f64[IR_OP_COUNT] = {
#define IR_OP(name, ...) [IR_OP_##name] = kn_cpu_##name##_f64,
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP
};

const kn_fused_entry *kn_fused_entries(size_t *count)
{
    *count = FR_COUNT_OF(entries);
    return entries;
}

const kn_fused_entry *kn_fused_entry_get(ir_op op)
{
    if (op < fused_ops[0] || (unsigned)op >= IR_OP_COUNT)
        return NULL;
    const kn_fused_entry *e = &entries[op - fused_ops[0]];
    FR_CHECK(e->op == op); /* the table is in fused_ops.def order */
    return e;
}

const char *kn_backend_name(kn_backend b)
{
    static const char *const names[KN_BACKEND_COUNT] = {"cpu", "cuda"};
    FR_CHECK((unsigned)b < KN_BACKEND_COUNT);
    return names[b];
}

bool kn_backend_parse(const char *s, kn_backend *out)
{
    for (unsigned b = 0; b < KN_BACKEND_COUNT; b++) {
        if (strcmp(s, kn_backend_name((kn_backend)b)) == 0) {
            *out = (kn_backend)b;
            return true;
        }
    }
    return false;
}

bool kn_supports(const ir_graph *g, const ir_node *n, kn_backend backend, char *why_not)
{
    const kn_fused_entry *e = kn_fused_entry_get(n->op);
    if (!e) {
        if (backend == KN_BACKEND_CPU)
            return true;
        return kn_why(why_not, "no %s kernel is registered for %s", kn_backend_name(backend),
                      ir_op_name(n->op));
    }
    kn_supports_fn check = backend == KN_BACKEND_CPU ? e->cpu.supports : e->cuda.supports;
    if (!check)
        return kn_why(why_not, "no %s kernel is registered for %s", kn_backend_name(backend),
                      ir_op_name(n->op));
    return check(g, n, why_not);
}

unsigned kn_layouts(ir_op op)
{
    for (size_t i = 0; i < FR_COUNT_OF(layout_rows); i++)
        if (layout_rows[i].op == op)
            return layout_rows[i].layouts;
    return 0;
}

const char *kn_kernel_name(ir_op op, kn_backend backend)
{
    const kn_fused_entry *e = kn_fused_entry_get(op);
    if (!e)
        return backend == KN_BACKEND_CPU ? ir_op_name(op) : NULL;
    return backend == KN_BACKEND_CPU ? e->cpu.kernel : e->cuda.kernel;
}

kn_cpu_fn kn_cpu_get(ir_op op)
{
    FR_CHECK((unsigned)op < IR_OP_COUNT);
    return cpu_fns[op];
}

kn_cpu_fn kn_cpu_get_f64(ir_op op)
{
    FR_CHECK((unsigned)op < IR_OP_COUNT);
    return cpu_fns_f64[op];
}

kn_cuda_fn kn_cuda_get(ir_op op)
{
    FR_CHECK((unsigned)op < IR_OP_COUNT);
    const kn_fused_entry *e = kn_fused_entry_get(op);
    if (e)
        return e->cuda.run;
#ifdef FR_HAVE_CUDA
    return kn_cuda_onnx_run(op);
#else
    return NULL;
#endif
}
