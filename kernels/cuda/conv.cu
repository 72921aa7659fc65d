// FusedConvAct on cuDNN (2-D convolutions, NCHW or NHWC, f32 / f16 / bf16).
//
// Two paths:
//  - fused: cudnnConvolutionBiasActivationForward computes act(conv(x) + alpha2 z + bias) in one
//    call. cuDNN offers it only for Relu and Identity (Identity only with the
//    IMPLICIT_PRECOMP_GEMM algorithm), and for the FLOAT and PSEUDO_HALF configurations (f32, f16);
//  - otherwise: cudnnConvolutionForward with the residual through beta (y is first a copy of z),
//    then one bias + activation epilogue kernel (kc_bias_act).
// The algorithm and workspace size are chosen once per shape (cuDNN's heuristics, no trial runs,
// so nothing is allocated in the choice) and cached in the context.
#include "kernels/cuda/kc_common.cuh"

#include <cstdio>

// Descriptors of one call, destroyed whatever happens.
struct conv_descs {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnActivationDescriptor_t act = nullptr;
    ~conv_descs()
    {
        if (act)
            cudnnDestroyActivationDescriptor(act);
        if (conv)
            cudnnDestroyConvolutionDescriptor(conv);
        if (w)
            cudnnDestroyFilterDescriptor(w);
        if (bias)
            cudnnDestroyTensorDescriptor(bias);
        if (y)
            cudnnDestroyTensorDescriptor(y);
        if (x)
            cudnnDestroyTensorDescriptor(x);
    }
};

static cudnnDataType_t dnn_type(kc_dtype dt)
{
    return dt == KC_F16 ? CUDNN_DATA_HALF : dt == KC_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// n, c, h, w of a 4-D tensor in either layout.
static void nchw_of(const kc_tensor *t, bool nhwc, int dims[4])
{
    dims[0] = (int)t->dims[0];
    dims[1] = (int)t->dims[nhwc ? 3 : 1];
    dims[2] = (int)t->dims[nhwc ? 1 : 2];
    dims[3] = (int)t->dims[nhwc ? 2 : 3];
}

static bool make_descs(kc_context *ctx, const kc_tensor *x, const kc_tensor *w, const kc_tensor *y,
                       const kc_conv_params *p, conv_descs &d)
{
    cudnnTensorFormat_t fmt = p->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t dt = dnn_type(x->dtype);
    int xs[4], ws[4], ys[4], out[4];
    nchw_of(x, p->nhwc, xs);
    nchw_of(w, p->nhwc, ws);
    nchw_of(y, p->nhwc, ys);
    // f32 stays exact fp32 (no TF32); 16-bit data may use tensor cores, accumulating in fp32.
    cudnnMathType_t math = x->dtype == KC_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    if (!KC_CHECK(ctx, cudnnCreateTensorDescriptor(&d.x)) ||
        !KC_CHECK(ctx, cudnnCreateTensorDescriptor(&d.y)) ||
        !KC_CHECK(ctx, cudnnCreateTensorDescriptor(&d.bias)) ||
        !KC_CHECK(ctx, cudnnCreateFilterDescriptor(&d.w)) ||
        !KC_CHECK(ctx, cudnnCreateConvolutionDescriptor(&d.conv)) ||
        !KC_CHECK(ctx, cudnnCreateActivationDescriptor(&d.act)) ||
        !KC_CHECK(ctx, cudnnSetTensor4dDescriptor(d.x, fmt, dt, xs[0], xs[1], xs[2], xs[3])) ||
        !KC_CHECK(ctx, cudnnSetTensor4dDescriptor(d.y, fmt, dt, ys[0], ys[1], ys[2], ys[3])) ||
        !KC_CHECK(ctx, cudnnSetTensor4dDescriptor(d.bias, CUDNN_TENSOR_NCHW, dt, 1, ys[1], 1, 1)) ||
        !KC_CHECK(ctx, cudnnSetFilter4dDescriptor(d.w, dt, fmt, ws[0], ws[1], ws[2], ws[3])) ||
        !KC_CHECK(ctx, cudnnSetConvolution2dDescriptor(
                           d.conv, (int)p->pads[0], (int)p->pads[1], (int)p->strides[0],
                           (int)p->strides[1], (int)p->dilations[0], (int)p->dilations[1],
                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
        !KC_CHECK(ctx, cudnnSetConvolutionGroupCount(d.conv, (int)p->group)) ||
        !KC_CHECK(ctx, cudnnSetConvolutionMathType(d.conv, math)) ||
        !KC_CHECK(ctx, cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &out[0], &out[1],
                                                             &out[2], &out[3])))
        return false;
    for (int i = 0; i < 4; i++)
        if (out[i] != ys[i])
            return KC_FAIL(ctx,
                           "conv: cuDNN computes an output of %dx%dx%dx%d, the graph %dx%dx%dx%d",
                           out[0], out[1], out[2], out[3], ys[0], ys[1], ys[2], ys[3]);
    return true;
}

// The most workspace a convolution may take: cuDNN's fastest algorithm can ask for gigabytes,
// which the shared workspace would then hold for the executor's life.
constexpr size_t CONV_MAX_WORKSPACE = (size_t)512 << 20;

// Whether a heuristic entry may serve: for f32 only FMA or DEFAULT entries (TENSOR_OP ones are
// TF32 kernels), which then run with FMA math (DEFAULT would allow TF32 on sm_80+); 16-bit data
// takes any math type.
static bool math_allowed(kc_dtype dt, cudnnMathType_t m)
{
    return dt != KC_F32 || m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
}

// The algorithm for this shape: from the cache, or cuDNN's best heuristic choice
// (IMPLICIT_PRECOMP_GEMM when the fused call runs Identity) among those that succeed, need at most
// CONV_MAX_WORKSPACE and use an allowed math type. The descriptor's math type is set to the
// choice's (cuDNN's contract: the algorithm runs with the math type it was listed with), FMA for
// f32 whatever the entry says.
static bool choose_algo(kc_context *ctx, const kc_tensor *x, const kc_tensor *w,
                        const kc_conv_params *p, bool fused_identity, conv_descs &d,
                        kc_conv_choice *out)
{
    char key[400];
    snprintf(key, sizeof key,
             "%d|%lld,%lld,%lld,%lld|%lld,%lld,%lld,%lld|%lld,%lld,%lld,%lld,%lld,%lld,%lld|%d%d",
             (int)x->dtype, (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2],
             (long long)x->dims[3], (long long)w->dims[0], (long long)w->dims[1],
             (long long)w->dims[2], (long long)w->dims[3], (long long)p->group,
             (long long)p->pads[0], (long long)p->pads[1], (long long)p->strides[0],
             (long long)p->strides[1], (long long)p->dilations[0], (long long)p->dilations[1],
             (int)p->nhwc, (int)fused_identity);
    auto hit = ctx->conv_cache.find(key);
    if (hit != ctx->conv_cache.end()) {
        *out = hit->second;
        return KC_CHECK(ctx, cudnnSetConvolutionMathType(d.conv, out->math));
    }
    const cudnnMathType_t wanted = x->dtype == KC_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    kc_conv_choice c = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 0, wanted};
    if (!fused_identity) {
        cudnnConvolutionFwdAlgoPerf_t perf[2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int n = 0;
        if (!KC_CHECK(ctx, cudnnGetConvolutionForwardAlgorithm_v7(
                               ctx->dnn, d.x, d.w, d.conv, d.y,
                               2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf)))
            return false;
        int i = 0;
        while (i < n && (perf[i].status != CUDNN_STATUS_SUCCESS ||
                         perf[i].memory > CONV_MAX_WORKSPACE ||
                         !math_allowed(x->dtype, perf[i].mathType)))
            i++;
        if (i == n)
            return KC_FAIL(ctx, "conv: cuDNN has no algorithm for this convolution within %zu MiB "
                                "of workspace%s",
                           CONV_MAX_WORKSPACE >> 20, x->dtype == KC_F32 ? " and FMA math" : "");
        c.algo = perf[i].algo;
        c.math = x->dtype == KC_F32 ? CUDNN_FMA_MATH : perf[i].mathType;
    }
    if (!KC_CHECK(ctx, cudnnSetConvolutionMathType(d.conv, c.math)) ||
        !KC_CHECK(ctx, cudnnGetConvolutionForwardWorkspaceSize(ctx->dnn, d.x, d.w, d.conv, d.y,
                                                               c.algo, &c.workspace)))
        return false;
    if (c.workspace > CONV_MAX_WORKSPACE)
        return KC_FAIL(ctx, "conv: the algorithm needs %zu bytes of workspace (at most %zu)",
                       c.workspace, CONV_MAX_WORKSPACE);
    ctx->conv_cache[key] = c;
    *out = c;
    return true;
}

bool kc_conv_act(kc_context *ctx, const kc_tensor *x, const kc_tensor *w, const kc_tensor *bias,
                 const kc_tensor *z, kc_tensor *y, const kc_conv_params *p)
{
    if (x->rank != 4 || w->rank != 4 || y->rank != 4)
        return KC_FAIL(ctx, "conv: cuDNN path takes 2-D convolutions (rank-4 tensors)");
    if (p->pads[0] != p->pads[2] || p->pads[1] != p->pads[3])
        return KC_FAIL(ctx, "conv: cuDNN needs symmetric pads");
    if (y->numel == 0)
        return true;
    const bool has_bias = bias && bias->data, has_z = z && z->data;
    const bool fused = x->dtype != KC_BF16 &&
                       (p->act.kind == KC_ACT_RELU || p->act.kind == KC_ACT_IDENTITY);
    conv_descs d;
    kc_conv_choice choice;
    if (!make_descs(ctx, x, w, y, p, d) ||
        !choose_algo(ctx, x, w, p, fused && p->act.kind == KC_ACT_IDENTITY, d, &choice))
        return false;
    int64_t channels = p->nhwc ? y->dims[3] : y->dims[1];
    size_t esize = x->dtype == KC_F32 ? 4 : 2;
    // The zero bias follows the algorithm's workspace at a 256-byte boundary (cuDNN wants its
    // operands aligned; the workspace size is any number of bytes).
    size_t zero_bytes = ((size_t)channels * esize + 255) / 256 * 256;
    size_t zero_at = (choice.workspace + 255) / 256 * 256;
    char *ws = (char *)kc_workspace(ctx, zero_at + zero_bytes);
    if (!ws)
        return false;
    float one = 1.0f, zero = 0.0f;
    if (fused) {
        cudnnActivationMode_t mode =
            p->act.kind == KC_ACT_RELU ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
        const void *b = has_bias ? bias->data : ws + zero_at; // a zero bias
        if ((!has_bias && !kc_fill_bytes(ctx, ws + zero_at, 0, zero_bytes)) ||
            !KC_CHECK(ctx, cudnnSetActivationDescriptor(d.act, mode, CUDNN_PROPAGATE_NAN, 0.0)))
            return false;
        // Without a residual, z aliases y with alpha2 = 0 (cuDNN allows it).
        return KC_CHECK(ctx, cudnnConvolutionBiasActivationForward(
                                 ctx->dnn, &one, d.x, x->data, d.w, w->data, d.conv, choice.algo,
                                 ws, choice.workspace, has_z ? &one : &zero, d.y,
                                 has_z ? z->data : y->data, d.bias, b, d.act, d.y, y->data));
    }
    if (has_z && !kc_copy(ctx, y->data, z->data, (size_t)y->numel * esize))
        return false;
    if (!KC_CHECK(ctx, cudnnConvolutionForward(ctx->dnn, &one, d.x, x->data, d.w, w->data, d.conv,
                                               choice.algo, ws, choice.workspace,
                                               has_z ? &one : &zero, d.y, y->data)))
        return false;
    int64_t inner = p->nhwc ? 1 : y->dims[2] * y->dims[3];
    if (!has_bias && p->act.kind == KC_ACT_IDENTITY)
        return true;
    return kc_bias_act(ctx, y, has_bias ? bias : nullptr, nullptr, channels, inner, &p->act);
}
