/* The CUDA column's supports checks: what each CUDA kernel of kernels/cuda/ can run.
 *
 * They describe the kernels, not the machine: a build with CUDA answers the same with or without
 * a device (the executor reports a missing device when a graph runs). What inference already
 * refuses (ranks, broadcasting, attribute values) is not repeated, and what is not known yet (an
 * unknown dtype, a symbolic dim) is not refused: the executor checks static shapes again. */
#include "kernels/cuda/cuda_registry.h"

#include "kernels/kernels.h"

#include <stdio.h>
#include <string.h>

/* cuBLASLt's vectorized kernels want every matrix row to start 16-byte aligned. */
enum { ROW_ALIGN = 16 };
/* cuDNN's 4-D descriptors hold int dims. */
#define INT_DIM_MAX ((int64_t)2147483647)

static const ir_type *in_type(const ir_node *n, uint32_t i)
{
    return i < n->ninputs && n->inputs[i] ? n->inputs[i]->type : NULL;
}

/* Dim d (negative: from the end) of input i when static, else -1. */
static int64_t static_dim(const ir_node *n, uint32_t i, int d)
{
    const ir_type *t = in_type(n, i);
    if (!t || t->rank < 0)
        return -1;
    int k = d < 0 ? t->rank + d : d;
    if (k < 0 || k >= t->rank || !ir_dim_is_static(t->dims[k]))
        return -1;
    return t->dims[k];
}

/* Inputs [first, last) that are present are float and share one dtype. */
static bool same_float(const ir_node *n, uint32_t first, uint32_t last, char *why_not)
{
    ir_dtype seen = IR_DTYPE_UNKNOWN;
    for (uint32_t i = first; i < last && i < n->ninputs; i++) {
        const ir_type *t = in_type(n, i);
        if (!t || t->dtype == IR_DTYPE_UNKNOWN)
            continue;
        if (!ir_dtype_is_float(t->dtype))
            return kn_why(why_not, "input %u is %s; the CUDA kernel takes f32, f16 or bf16", i,
                          ir_dtype_name(t->dtype));
        if (seen != IR_DTYPE_UNKNOWN && t->dtype != seen)
            return kn_why(why_not, "inputs mix %s and %s; the CUDA kernel takes one dtype",
                          ir_dtype_name(seen), ir_dtype_name(t->dtype));
        seen = t->dtype;
    }
    return true;
}

static bool rank_is(const ir_node *n, uint32_t i, int lo, int hi, const char *what, char *why_not)
{
    const ir_type *t = in_type(n, i);
    if (!t || t->rank < 0 || (t->rank >= lo && t->rank <= hi))
        return true;
    return kn_why(why_not, "%s has rank %d; the CUDA kernel takes rank %d to %d", what, t->rank, lo,
                  hi);
}

/* A row of `elems` elements of input i's dtype is a multiple of ROW_ALIGN bytes. */
static bool row_aligned(const ir_node *n, uint32_t i, int64_t elems, const char *what,
                        char *why_not)
{
    const ir_type *t = in_type(n, i);
    size_t esize = t ? ir_dtype_size(t->dtype) : 0;
    if (elems < 0 || esize == 0 || ((size_t)elems * esize) % ROW_ALIGN == 0)
        return true;
    return kn_why(
        why_not, "%s = %lld: rows of %zu bytes are not %d-byte aligned, as cuBLASLt's kernels need",
        what, (long long)elems, (size_t)elems * esize, ROW_ALIGN);
}

bool kn_cuda_supports_FusedConvAct(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!same_float(n, 0, 4, why_not))
        return false;
    const ir_type *x = in_type(n, 0);
    if (x && x->rank >= 0 && x->rank != 4)
        return kn_why(why_not, "the cuDNN kernel runs 2-D convolutions; X has rank %d", x->rank);
    const char *pad = ir_get_string(n, "auto_pad");
    if (strcmp(pad, "SAME_UPPER") == 0 || strcmp(pad, "SAME_LOWER") == 0)
        return kn_why(why_not, "auto_pad %s may pad asymmetrically; cuDNN pads symmetrically", pad);
    const int64_t *pads;
    uint32_t np = ir_get_ints(n, "pads", &pads);
    if (np == 4 && (pads[0] != pads[2] || pads[1] != pads[3]))
        return kn_why(
            why_not, "pads [%lld,%lld,%lld,%lld] are asymmetric; cuDNN pads symmetrically",
            (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3]);
    for (uint32_t i = 0; i < 2; i++) {
        const ir_type *t = in_type(n, i);
        for (int d = 0; t && d < t->rank; d++)
            if (ir_dim_is_static(t->dims[d]) && t->dims[d] > INT_DIM_MAX)
                return kn_why(why_not, "a dim of %lld does not fit cuDNN's int dims",
                              (long long)t->dims[d]);
    }
    return true;
}

/* SeparableConv: one kernel of kernels/cuda/separable.cu, 1-D or 2-D, explicit pads (the begins:
 * a SAME_* auto_pad would have to be resolved per shape), the depthwise channels of one tile
 * position in shared memory, the batch in the grid's y dimension. */
bool kn_cuda_supports_SeparableConv(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!same_float(n, 0, 6, why_not))
        return false;
    const ir_type *x = in_type(n, 0);
    if (x && x->rank >= 0 && x->rank != 3 && x->rank != 4)
        return kn_why(why_not, "the CUDA kernel runs 1-D or 2-D convolutions; X has rank %d",
                      x->rank);
    const char *pad = ir_get_string(n, "auto_pad");
    if (strcmp(pad, "SAME_UPPER") == 0 || strcmp(pad, "SAME_LOWER") == 0)
        return kn_why(why_not, "auto_pad %s: the CUDA kernel takes explicit pads", pad);
    int64_t mid = static_dim(n, 1, 0), batch = static_dim(n, 0, 0);
    if (mid > KN_CUDA_SEPARABLE_MAX_CHANNELS)
        return kn_why(why_not,
                      "%lld depthwise channels; the CUDA kernel keeps at most %d per tile "
                      "position in shared memory",
                      (long long)mid, (int)KN_CUDA_SEPARABLE_MAX_CHANNELS);
    if (batch > 65535)
        return kn_why(why_not, "batch %lld exceeds the CUDA grid (65535)", (long long)batch);
    return true;
}

/* SqueezeExcite: one block per image (kernels/cuda/squeeze_excite.cu) keeps the pooled channels,
 * the reduced channels and the gates in shared memory; every input one float dtype. */
bool kn_cuda_supports_SqueezeExcite(const ir_graph *g, const ir_node *n, char *why_not)
{
    (void)g;
    if (!same_float(n, 0, n->ninputs, why_not))
        return false;
    int64_t c = static_dim(n, 0, 1), r = static_dim(n, 1, 0);
    if (c > KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS || r > KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS)
        return kn_why(why_not,
                      "%lld channels (%lld reduced); the CUDA kernel keeps at most %d of each in "
                      "shared memory",
                      (long long)c, (long long)r, (int)KN_CUDA_SQUEEZE_EXCITE_MAX_CHANNELS);
    return true;
}

static int64_t batch_of(const ir_node *n, uint32_t i);

/* False with the reason when A's and B's batches (input 0 and 1, B batched) broadcast in part:
 * cuBLASLt's strided batches take all of Y's batches or one. */
static bool batches_fit(const ir_node *n, char *why_not)
{
    int64_t ab = batch_of(n, 0), bb = batch_of(n, 1);
    int64_t y = ab > bb ? ab : bb;
    if (ab >= 0 && bb >= 0 && ((ab != y && ab != 1) || (bb != y && bb != 1)))
        return kn_why(why_not,
                      "batch dims that broadcast in part (A's %lld batches, B's %lld); "
                      "cuBLASLt's strided batches take all or one",
                      (long long)ab, (long long)bb);
    return true;
}

/* GEMM rows: A's last dim (K, or M with transA), B's last dim and Y's (N) row alignment; a batched
 * B as MatMul's on cuBLASLt, when each operand holds every batch of Y or one matrix. transBatchA/B
 * (an operand's matrices interleaved along its batch dims) are not wired to cuBLASLt's layouts:
 * refused, so the Transpose stays a kernel of its own on --target cuda. */
bool kn_cuda_supports_GemmEpilogue(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!same_float(n, 0, 4, why_not) || !rank_is(n, 0, 2, IR_MAX_RANK, "A", why_not) ||
        !rank_is(n, 1, 2, IR_MAX_RANK, "B", why_not) || !rank_is(n, 2, 1, 1, "the bias", why_not))
        return false;
    if (ir_get_int(n, "transBatchA") || ir_get_int(n, "transBatchB"))
        return kn_why(why_not, "transBatchA/transBatchB: the cuBLASLt kernel reads each operand's "
                               "matrices contiguous, not interleaved along its batch dims");
    const ir_type *b = in_type(n, 1);
    if (b && b->rank > 2 && !batches_fit(n, why_not))
        return false;
    bool trans_b = ir_get_int(n, "transB") != 0;
    int64_t a_last = static_dim(n, 0, -1), b_last = static_dim(n, 1, -1);
    int64_t nn = trans_b ? static_dim(n, 1, -2) : b_last;
    return row_aligned(n, 0, a_last, "A's last dim", why_not) &&
           row_aligned(n, 1, b_last, "B's last dim", why_not) &&
           row_aligned(n, 1, nn, "N", why_not);
}

bool kn_cuda_supports_FusedQKV(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!same_float(n, 0, 3, why_not) || !rank_is(n, 1, 2, 2, "W", why_not) ||
        !rank_is(n, 2, 1, 1, "the bias", why_not))
        return false;
    if (n->noutputs < 2 || n->noutputs > 3)
        return kn_why(why_not, "the CUDA kernel splits into 2 or 3 outputs, not %u", n->noutputs);
    return row_aligned(n, 0, static_dim(n, 0, -1), "K", why_not) &&
           row_aligned(n, 1, static_dim(n, 1, -1), "the concatenated width", why_not);
}

bool kn_cuda_supports_RMSNorm(const ir_graph *g, const ir_node *n, char *why_not)
{
    return same_float(n, 0, 2, why_not);
}

bool kn_cuda_supports_AddLayerNorm(const ir_graph *g, const ir_node *n, char *why_not)
{
    return same_float(n, 0, 5, why_not);
}

bool kn_cuda_supports_AddRMSNorm(const ir_graph *g, const ir_node *n, char *why_not)
{
    return same_float(n, 0, 3, why_not);
}

bool kn_cuda_supports_FusedSoftmax(const ir_graph *g, const ir_node *n, char *why_not)
{
    return same_float(n, 0, 2, why_not);
}

bool kn_cuda_supports_ElementwiseChain(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (n->ninputs > KN_CUDA_EW_MAX_INPUTS)
        return kn_why(why_not, "the CUDA kernel takes at most %d inputs, not %u",
                      KN_CUDA_EW_MAX_INPUTS, n->ninputs);
    return same_float(n, 0, n->ninputs, why_not);
}

/* Either layout, the mask, the rotary tables, an i32 key_mask and the bias: the kernel reads Q,
 * K, V and Y through strides and rotates Q and K as it loads them. */
bool kn_cuda_supports_Attention(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (!same_float(n, 0, 6, why_not))
        return false;
    const ir_type *q = in_type(n, 0), *bias = in_type(n, 7);
    if (bias && (!ir_dtype_is_float(bias->dtype) || (q && bias->dtype != q->dtype)))
        return kn_why(why_not, "the bias is %s; the CUDA kernel reads it in Q's dtype",
                      ir_dtype_name(bias->dtype));
    const ir_type *km = in_type(n, 6);
    if (km && km->dtype != IR_DTYPE_UNKNOWN && km->dtype != IR_I32)
        return kn_why(why_not, "key_mask is %s; the CUDA kernel reads an i32 key_mask",
                      ir_dtype_name(km->dtype));
    const int64_t *sizes;
    int64_t packed_heads = ir_get_int(n, "num_heads");
    if (packed_heads > 0) { /* packed: FusedQKV's GEMM, then the attention on its head views */
        if (ir_get_ints(n, "qkv_sizes", &sizes) != 3 || !rank_is(n, 0, 3, 3, "X", why_not))
            return kn_why(why_not, "packed: X must be [B, S, C] and qkv_sizes have 3 entries");
        if (sizes[0] / packed_heads > KN_CUDA_ATTENTION_MAX_HEAD_DIM ||
            sizes[2] / packed_heads > KN_CUDA_ATTENTION_MAX_HEAD_DIM)
            return kn_why(why_not, "packed head dims above the CUDA kernel's %d",
                          KN_CUDA_ATTENTION_MAX_HEAD_DIM);
        int64_t pb = static_dim(n, 0, 0);
        if (pb > 65535 || packed_heads > 65535)
            return kn_why(why_not, "batch %lld or heads %lld above the 65535 of the kernel's grid",
                          (long long)pb, (long long)packed_heads);
        return rank_is(n, 1, 2, 2, "W", why_not) && rank_is(n, 2, 1, 1, "the bias", why_not) &&
               row_aligned(n, 0, static_dim(n, 0, -1), "K", why_not) &&
               row_aligned(n, 1, static_dim(n, 1, -1), "the concatenated width", why_not);
    }
    for (uint32_t i = 0; i < 3; i++)
        if (!rank_is(n, i, 4, 4, i == 0 ? "Q" : i == 1 ? "K" : "V", why_not))
            return false;
    int64_t d = static_dim(n, 0, 3), dv = static_dim(n, 2, 3);
    if (d > KN_CUDA_ATTENTION_MAX_HEAD_DIM || dv > KN_CUDA_ATTENTION_MAX_HEAD_DIM)
        return kn_why(why_not, "head dims %lld and %lld; the CUDA kernel handles up to %d",
                      (long long)d, (long long)dv, KN_CUDA_ATTENTION_MAX_HEAD_DIM);
    bool bshd = strcmp(ir_get_string(n, "layout"), "BSHD") == 0;
    int64_t b = static_dim(n, 0, 0), h = static_dim(n, 0, bshd ? 2 : 1);
    if (b > 65535 || h > 65535)
        return kn_why(why_not, "batch %lld or heads %lld above the 65535 of the kernel's grid",
                      (long long)b, (long long)h);
    return true;
}

bool kn_cuda_supports_RoPE(const ir_graph *g, const ir_node *n, char *why_not)
{
    return same_float(n, 0, 3, why_not);
}

bool kn_cuda_supports_SwiGLU(const ir_graph *g, const ir_node *n, char *why_not)
{
    return same_float(n, 0, 2, why_not);
}

/* cuBLASLt's int8 GEMM accumulates in int32 like the CPU kernel: |a*b| <= 2^14, so K up to 2^17
 * cannot overflow. */
#define QGEMM_MAX_K ((int64_t)1 << 17)

/* cuBLASLt's int8 GEMM needs K and N multiples of 4; the scales and bias are f32. */
bool kn_cuda_supports_QGemm(const ir_graph *g, const ir_node *n, char *why_not)
{
    const ir_type *a = in_type(n, 0), *b = in_type(n, 2);
    if ((a && a->dtype != IR_I8) || (b && b->dtype != IR_I8))
        return kn_why(why_not, "the CUDA QGemm takes i8 A and B");
    for (uint32_t i = 1; i < n->ninputs; i += (i == 1 ? 2 : 1)) {
        const ir_type *t = in_type(n, i);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != IR_F32)
            return kn_why(why_not, "input %u is %s; the CUDA QGemm takes f32 scales and bias", i,
                          ir_dtype_name(t->dtype));
    }
    if (!rank_is(n, 0, 2, IR_MAX_RANK, "A", why_not) || !rank_is(n, 2, 2, 2, "B", why_not))
        return false;
    int64_t k = static_dim(n, 2, 0), nn = static_dim(n, 2, 1);
    if ((k >= 0 && k % 4) || (nn >= 0 && nn % 4))
        return kn_why(why_not,
                      "K = %lld and N = %lld must be multiples of 4 for cuBLASLt's int8 GEMM",
                      (long long)k, (long long)nn);
    if (k > QGEMM_MAX_K)
        return kn_why(why_not, "K = %lld could overflow the int32 accumulator (at most %lld)",
                      (long long)k, (long long)QGEMM_MAX_K);
    return true;
}

/* ---- plain ONNX ops ---- */

/* An elementwise op of the table: every input it reads float and of the output's dtype (the
 * kernel has one storage type). */
static bool ew_supports(const ir_node *n, char *why_not)
{
    if (n->op == IR_OP_Dropout && (n->noutputs > 1 || (n->ninputs > 2 && n->inputs[2])))
        return kn_why(why_not, "Dropout with a mask output or a training_mode input has no CUDA "
                               "kernel (the CPU kernel checks the mode)");
    if (n->op == IR_OP_BatchNormalization &&
        (ir_get_int(n, "training_mode") != 0 || n->noutputs > 1))
        return kn_why(why_not, "BatchNormalization in training mode has no CUDA kernel");
    ar_arena *arena = ar_new();
    kn_cuda_ew_expr e;
    bool ok = kn_cuda_ew_expand(arena, n, &e, why_not);
    ir_dtype out = n->outputs[0]->type->dtype;
    for (uint32_t i = 0; ok && i < e.ninputs; i++) {
        const ir_type *t = in_type(n, e.inputs[i]);
        if (!t || t->dtype == IR_DTYPE_UNKNOWN)
            continue;
        if (!ir_dtype_is_float(t->dtype))
            ok = kn_why(why_not, "%s: the CUDA elementwise kernels take f32, f16 or bf16",
                        ir_dtype_name(t->dtype));
        else if (out != IR_DTYPE_UNKNOWN && t->dtype != out)
            ok = kn_why(why_not, "input %u is %s and the output %s; the CUDA kernel has one dtype",
                        e.inputs[i], ir_dtype_name(t->dtype), ir_dtype_name(out));
    }
    ar_free(arena);
    return ok;
}

/* The product of input i's dims before the last two (its batch), or -1 when not all static. */
static int64_t batch_of(const ir_node *n, uint32_t i)
{
    const ir_type *t = in_type(n, i);
    int64_t b = 1;
    for (int d = 0; t && d < t->rank - 2; d++) {
        if (!ir_dim_is_static(t->dims[d]))
            return -1;
        b *= t->dims[d];
    }
    return t && t->rank >= 0 ? b : -1;
}

/* MatMul and Gemm on cuBLASLt (kc_gemm_epilogue): rows 16-byte aligned; MatMul's B may be batched
 * when each operand holds every batch of Y or a single matrix (cuBLASLt's strided batches). */
static bool gemm_supports(const ir_node *n, bool trans_b, char *why_not)
{
    if (!same_float(n, 0, n->ninputs, why_not) || !rank_is(n, 0, 2, IR_MAX_RANK, "A", why_not) ||
        !rank_is(n, 1, 2, n->op == IR_OP_MatMul ? IR_MAX_RANK : 2, "B", why_not))
        return false;
    const ir_type *b = in_type(n, 1);
    if (n->op == IR_OP_MatMul && b && b->rank > 2 && !batches_fit(n, why_not))
        return false;
    int64_t a_last = static_dim(n, 0, -1), b_last = static_dim(n, 1, -1);
    int64_t nn = trans_b ? static_dim(n, 1, 0) : b_last;
    return row_aligned(n, 0, a_last, "A's last dim", why_not) &&
           row_aligned(n, 1, b_last, "B's last dim", why_not) &&
           row_aligned(n, 1, nn, "N", why_not);
}

/* The dtypes the typed kernels (Cast, comparisons, And, Or, Xor, Not, IsNaN, IsInf) address. */
static bool typed_dtype(ir_dtype dt)
{
    switch (dt) {
    case IR_F32:
    case IR_F16:
    case IR_BF16:
    case IR_I8:
    case IR_U8:
    case IR_I32:
    case IR_I64:
    case IR_BOOL:
    case IR_DTYPE_UNKNOWN: return true;
    default: return false;
    }
}

/* Every present input and the output have a dtype the typed kernels take. */
static bool typed_supports(const ir_node *n, char *why_not)
{
    for (uint32_t i = 0; i <= n->ninputs; i++) {
        const ir_type *t = i < n->ninputs ? in_type(n, i) : n->outputs[0]->type;
        if (t && !typed_dtype(t->dtype))
            return kn_why(why_not, "%s: no CUDA kernel takes it", ir_dtype_name(t->dtype));
    }
    return true;
}

/* ---- cuda-a: the integer kernels (integer.cu) and the generators (generate.cu) ---- */

static bool int_dtype(ir_dtype dt)
{
    return dt == IR_I8 || dt == IR_U8 || dt == IR_I32 || dt == IR_I64;
}

bool kn_cuda_int_kernel(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_Mod:
    case IR_OP_BitShift:
    case IR_OP_BitwiseAnd:
    case IR_OP_BitwiseOr:
    case IR_OP_BitwiseXor:
    case IR_OP_BitwiseNot: return true;
    case IR_OP_Add:
    case IR_OP_Sub:
    case IR_OP_Mul:
    case IR_OP_Div:
    case IR_OP_Neg:
    case IR_OP_Abs:
    case IR_OP_Max:
    case IR_OP_Min:
    case IR_OP_Relu:
    case IR_OP_Clip:
    case IR_OP_Sign:
    case IR_OP_Shrink: {
        const ir_type *t = in_type(n, 0);
        return t && t->dtype != IR_DTYPE_UNKNOWN && !ir_dtype_is_float(t->dtype);
    }
    default: return false;
    }
}

/* The integer kernel: i8, u8, i32 or i64 operands (Mod with fmod = 1 also floats). Inference
 * refuses the rest of what the CPU kernels refuse (operands of mixed dtypes, float Mod without
 * fmod, BitShift of signed integers, Neg of u8). */
static bool int_supports(const ir_node *n, char *why_not)
{
    const ir_type *x = in_type(n, 0);
    ir_dtype dt = x ? x->dtype : IR_DTYPE_UNKNOWN;
    if (dt == IR_DTYPE_UNKNOWN)
        return true;
    bool fmod_float = n->op == IR_OP_Mod && ir_get_int(n, "fmod") != 0 && ir_dtype_is_float(dt);
    if (!int_dtype(dt) && !fmod_float)
        return kn_why(why_not, "%s: the CUDA integer kernel takes i8, u8, i32 or i64%s",
                      ir_dtype_name(dt), n->op == IR_OP_Mod ? " (floats with fmod = 1)" : "");
    return true;
}

/* Generators: the output's dtype is one the kernels store (and a float for RandomUniform). */
static bool gen_supports(const ir_node *n, char *why_not)
{
    ir_dtype out = n->outputs[0]->type->dtype;
    if (n->op == IR_OP_RandomUniform || n->op == IR_OP_RandomUniformLike) {
        if (out != IR_DTYPE_UNKNOWN && !ir_dtype_is_float(out))
            return kn_why(why_not, "%s: the generator writes f32, f16 or bf16", ir_dtype_name(out));
        return true;
    }
    if (n->op == IR_OP_Range && out == IR_BOOL)
        return kn_why(why_not, "Range is not defined on bool");
    if (n->op == IR_OP_EyeLike && !rank_is(n, 0, 2, 2, "the input", why_not))
        return false;
    if (n->op == IR_OP_ReverseSequence) {
        const ir_type *t = in_type(n, 1);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && !int_dtype(t->dtype))
            return kn_why(why_not, "sequence_lens is %s; the CUDA kernel reads integers",
                          ir_dtype_name(t->dtype));
        return true;
    }
    if (n->op == IR_OP_OneHot) {
        const ir_type *t = in_type(n, 0);
        if (t && !typed_dtype(t->dtype))
            return kn_why(why_not, "indices are %s: no CUDA kernel reads them",
                          ir_dtype_name(t->dtype));
    }
    if (n->op == IR_OP_CastLike)
        return typed_supports(n, why_not);
    if (!typed_dtype(out))
        return kn_why(why_not, "%s: no CUDA kernel takes it", ir_dtype_name(out));
    return true;
}

bool kn_cuda_onnx_supports(const ir_graph *g, const ir_node *n, char *why_not)
{
    if (kn_cuda_int_kernel(n)) /* cuda-a: before the table, which has the float forms */
        return int_supports(n, why_not);
    if (kn_cuda_ew_op_listed(n->op))
        return ew_supports(n, why_not);
    if (ir_op_info_get(n->op)->flags & IR_OPF_AXES_INPUT) /* every Reduce op */
        return same_float(n, 0, 1, why_not);
    switch (n->op) {
    case IR_OP_MatMul: return gemm_supports(n, false, why_not);
    case IR_OP_Gemm: return gemm_supports(n, ir_get_int(n, "transB") != 0, why_not);
    case IR_OP_Conv: return kn_cuda_supports_FusedConvAct(g, n, why_not);
    case IR_OP_Softmax: return same_float(n, 0, 1, why_not);
    case IR_OP_GlobalAveragePool: return same_float(n, 0, 1, why_not);
    case IR_OP_MaxPool:
    case IR_OP_AveragePool:
        return same_float(n, 0, 1, why_not) && rank_is(n, 0, 3, 5, "X", why_not);
    case IR_OP_Gather: {
        const ir_type *t = in_type(n, 1);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != IR_I64 && t->dtype != IR_I32)
            return kn_why(why_not, "indices are %s; the CUDA Gather takes i32 or i64",
                          ir_dtype_name(t->dtype));
        return true;
    }
    case IR_OP_ScatterND:
    case IR_OP_GatherND:
    case IR_OP_GatherElements: {
        const ir_type *t = in_type(n, 1);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != IR_I64 && t->dtype != IR_I32)
            return kn_why(why_not, "indices are %s; the CUDA %s takes i32 or i64",
                          ir_dtype_name(t->dtype), ir_op_name(n->op));
        return true;
    }
    case IR_OP_InstanceNormalization: return same_float(n, 0, 3, why_not);
    case IR_OP_ArgMax:
    case IR_OP_ArgMin:
    case IR_OP_CumSum: return same_float(n, 0, 1, why_not); /* the CPU kernels also take integers */
    case IR_OP_Where: /* a bool condition and raw elements of any dtype */
    case IR_OP_Tile:
    case IR_OP_Trilu: return true;
    case IR_OP_Pad: {
        const ir_type *x = in_type(n, 0);
        if (x && x->dtype != IR_DTYPE_UNKNOWN && !typed_dtype(x->dtype))
            return kn_why(why_not, "%s: no CUDA Pad takes it", ir_dtype_name(x->dtype));
        return true;
    }
    case IR_OP_Cast:
    case IR_OP_Equal:
    case IR_OP_Less:
    case IR_OP_Greater:
    case IR_OP_LessOrEqual:
    case IR_OP_GreaterOrEqual:
    case IR_OP_And:
    case IR_OP_Or:
    case IR_OP_Xor:
    case IR_OP_Not:
    case IR_OP_IsNaN: return typed_supports(n, why_not);
    case IR_OP_IsInf:
        if (ir_get_int(n, "detect_negative") == 0 && ir_get_int(n, "detect_positive") == 0)
            return kn_why(why_not, "IsInf detecting neither infinity has no CUDA kernel");
        return typed_supports(n, why_not);
    case IR_OP_Transpose:
    case IR_OP_Slice:
    case IR_OP_Concat:
    case IR_OP_Split:
    case IR_OP_DepthToSpace:              /* rank 4, checked by inference */
    case IR_OP_SpaceToDepth: return true; /* raw strided copies: any dtype, any rank */
    case IR_OP_LayerNormalization:        /* with Mean and InvStdDev: kc_layer_norm_stats */
        return same_float(n, 0, n->ninputs, why_not);
    /* cuda-b: norm_more.cu, softmax_loss.cu, topk.cu, scatter.cu */
    case IR_OP_LogSoftmax:
    case IR_OP_Hardmax:
    case IR_OP_GlobalMaxPool:
    case IR_OP_GroupNormalization:
    case IR_OP_MeanVarianceNormalization:
    case IR_OP_LRN: return same_float(n, 0, n->ninputs, why_not);
    case IR_OP_Resize: return same_float(n, 0, 1, why_not); /* resample.cu */
    case IR_OP_GridSample: /* X and the grid of one float dtype (grid_sample.cu) */
        return same_float(n, 0, 2, why_not) && rank_is(n, 0, 4, 4, "X", why_not);
    case IR_OP_MaxUnpool: { /* unpool.cu */
        const ir_type *t = in_type(n, 1);
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != IR_I64)
            return kn_why(why_not, "indices are %s; the CUDA MaxUnpool takes i64",
                          ir_dtype_name(t->dtype));
        return same_float(n, 0, 1, why_not);
    }
    case IR_OP_NegativeLogLikelihoodLoss:
    case IR_OP_SoftmaxCrossEntropyLoss: /* the target (input 1) is i32/i64 by inference */
        return same_float(n, 0, 1, why_not) && same_float(n, 2, 3, why_not);
    case IR_OP_TopK: {
        const ir_type *x = in_type(n, 0);
        if (x && x->dtype != IR_DTYPE_UNKNOWN && (!typed_dtype(x->dtype) || x->dtype == IR_BOOL))
            return kn_why(why_not, "%s: no CUDA TopK takes it", ir_dtype_name(x->dtype));
        return true;
    }
    case IR_OP_NonZero: /* counted on the device, the count read back (nonzero.cu) */
    case IR_OP_Compress: {
        const ir_type *x = in_type(n, 0);
        if (x && x->dtype != IR_DTYPE_UNKNOWN && !typed_dtype(x->dtype))
            return kn_why(why_not, "%s: no CUDA %s takes it", ir_dtype_name(x->dtype),
                          ir_op_name(n->op));
        return true;
    }
    case IR_OP_ScatterElements: {
        const ir_type *x = in_type(n, 0), *t = in_type(n, 1);
        if (x && x->dtype != IR_DTYPE_UNKNOWN && !typed_dtype(x->dtype))
            return kn_why(why_not, "%s: no CUDA scatter takes it", ir_dtype_name(x->dtype));
        if (t && t->dtype != IR_DTYPE_UNKNOWN && t->dtype != IR_I64 && t->dtype != IR_I32)
            return kn_why(why_not, "indices are %s; the CUDA ScatterElements takes i32 or i64",
                          ir_dtype_name(t->dtype));
        return true;
    }
    /* cuda-c: quantized and integer linear algebra, ConvTranspose, Det, DFT, Einsum, RNNs */
    case IR_OP_QuantizeLinear:
    case IR_OP_DequantizeLinear:
    case IR_OP_DynamicQuantizeLinear:
    case IR_OP_MatMulInteger:
    case IR_OP_ConvInteger:
    case IR_OP_QLinearMatMul:
    case IR_OP_QLinearConv:
    case IR_OP_ConvTranspose:
    case IR_OP_Det:
    case IR_OP_DFT:
    case IR_OP_Einsum:
    case IR_OP_RNN:
    case IR_OP_GRU:
    case IR_OP_LSTM: return kn_cuda_linalg_supports(g, n, why_not);
    /* cuda-a: the generators (generate.cu) */
    case IR_OP_CastLike:
    case IR_OP_Shape:
    case IR_OP_Size:
    case IR_OP_ConstantOfShape:
    case IR_OP_Range:
    case IR_OP_EyeLike:
    case IR_OP_HannWindow:
    case IR_OP_HammingWindow:
    case IR_OP_BlackmanWindow:
    case IR_OP_OneHot:
    case IR_OP_ReverseSequence:
    case IR_OP_RandomUniform:
    case IR_OP_RandomUniformLike: return gen_supports(n, why_not);
    default: return kn_why(why_not, "%s has no CUDA kernel", ir_op_name(n->op));
    }
}
