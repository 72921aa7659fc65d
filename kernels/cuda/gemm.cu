// GEMMs on cuBLASLt: GemmEpilogue, FusedQKV and the int8 QGemm.
//
// cuBLASLt is column-major; a row-major Y[M, N] = A[M, K] @ B[K, N] is the column-major
// Y^T[N, M] = B^T @ A^T, so B is passed as cuBLASLt's first operand and A as its second, and the
// bias (a vector of N, one per row of Y^T) is exactly what cuBLASLt's BIAS epilogue adds.
// cuBLASLt computes D = epilogue(alpha op(A) op(B) + beta C + bias); its GELU is the tanh
// approximation, so it is used for GeluTanh only: erf GELU runs in the epilogue kernel.
#include "kernels/cuda/kc_common.cuh"

// The cuBLASLt workspace at the start of the context's workspace; scratch tensors follow it.
static const size_t LT_WORKSPACE = (size_t)32 << 20;

static cudaDataType lt_type(kc_dtype dt)
{
    switch (dt) {
    case KC_F16: return CUDA_R_16F;
    case KC_BF16: return CUDA_R_16BF;
    case KC_I8: return CUDA_R_8I;
    case KC_I32: return CUDA_R_32I;
    default: return CUDA_R_32F;
    }
}

static size_t elem_size(kc_dtype dt)
{
    return dt == KC_F32 || dt == KC_I32 ? 4 : dt == KC_I8 ? 1 : 2;
}

// One cuBLASLt matmul in row-major terms (see the top of the file).
struct lt_gemm {
    kc_dtype ab_type, d_type;
    bool trans_a, trans_b;
    int64_t m, n, k, batch;
    const void *a, *b, *c; // c: NULL for none (beta then 0)
    void *d;
    int64_t stride_a, stride_b, stride_d; // elements between batches (stride_b 0: shared B)
    float alpha, beta;
    cublasLtEpilogue_t epilogue;
    const void *bias;
};

// Destroys the descriptors of one call whatever happens.
struct lt_descs {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~lt_descs()
    {
        if (pref)
            cublasLtMatmulPreferenceDestroy(pref);
        if (lc)
            cublasLtMatrixLayoutDestroy(lc);
        if (lb)
            cublasLtMatrixLayoutDestroy(lb);
        if (la)
            cublasLtMatrixLayoutDestroy(la);
        if (op)
            cublasLtMatmulDescDestroy(op);
    }
};

static bool set_batch(kc_context *ctx, cublasLtMatrixLayout_t l, int64_t batch, int64_t stride)
{
    int32_t count = (int32_t)batch;
    return batch == 1 ||
           (KC_CHECK(ctx, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                           &count, sizeof count)) &&
            KC_CHECK(ctx, cublasLtMatrixLayoutSetAttribute(
                              l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                              sizeof stride)));
}

static bool lt_layouts(kc_context *ctx, const lt_gemm &g, lt_descs &ds)
{
    // cuBLASLt's A is our B: [N x K] column-major (ld N), or with transB [K x N] (ld K).
    cudaDataType ab = lt_type(g.ab_type), dt = lt_type(g.d_type);
    bool ok = g.trans_b ? KC_CHECK(ctx, cublasLtMatrixLayoutCreate(&ds.la, ab, g.k, g.n, g.k))
                        : KC_CHECK(ctx, cublasLtMatrixLayoutCreate(&ds.la, ab, g.n, g.k, g.n));
    // cuBLASLt's B is our A: [K x M] (ld K), or with transA [M x K] (ld M).
    ok = ok && (g.trans_a ? KC_CHECK(ctx, cublasLtMatrixLayoutCreate(&ds.lb, ab, g.m, g.k, g.m))
                          : KC_CHECK(ctx, cublasLtMatrixLayoutCreate(&ds.lb, ab, g.k, g.m, g.k)));
    ok = ok && KC_CHECK(ctx, cublasLtMatrixLayoutCreate(&ds.lc, dt, g.n, g.m, g.n));
    return ok && set_batch(ctx, ds.la, g.batch, g.stride_b) &&
           set_batch(ctx, ds.lb, g.batch, g.stride_a) && set_batch(ctx, ds.lc, g.batch, g.stride_d);
}

static bool lt_run(kc_context *ctx, const lt_gemm &g)
{
    if (g.m == 0 || g.n == 0 || g.batch == 0)
        return true;
    bool integer = g.ab_type == KC_I8;
    lt_descs ds;
    cublasComputeType_t compute = integer ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
    cudaDataType scale_type = integer ? CUDA_R_32I : CUDA_R_32F;
    cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!KC_CHECK(ctx, cublasLtMatmulDescCreate(&ds.op, compute, scale_type)) ||
        !KC_CHECK(ctx, cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
                                                      sizeof op_a)) ||
        !KC_CHECK(ctx, cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
                                                      sizeof op_b)) ||
        !KC_CHECK(ctx, cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                      &g.epilogue, sizeof g.epilogue)))
        return false;
    if (g.bias) {
        cudaDataType bias_type = lt_type(g.d_type);
        if (!KC_CHECK(ctx, cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &g.bias, sizeof g.bias)) ||
            !KC_CHECK(ctx, cublasLtMatmulDescSetAttribute(
                               ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                               sizeof bias_type)))
            return false;
    }
    if (!lt_layouts(ctx, g, ds))
        return false;
    void *ws = kc_workspace(ctx, LT_WORKSPACE);
    if (!ws)
        return false;
    size_t ws_size = LT_WORKSPACE;
    cublasLtMatmulHeuristicResult_t heur = {};
    int found = 0;
    if (!KC_CHECK(ctx, cublasLtMatmulPreferenceCreate(&ds.pref)) ||
        !KC_CHECK(ctx, cublasLtMatmulPreferenceSetAttribute(
                           ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_size,
                           sizeof ws_size)) ||
        !KC_CHECK(ctx, cublasLtMatmulAlgoGetHeuristic(ctx->lt, ds.op, ds.la, ds.lb, ds.lc, ds.lc,
                                                      ds.pref, 1, &heur, &found)))
        return false;
    if (found == 0)
        return KC_FAIL(ctx, "cuBLASLt has no algorithm for a %lldx%lldx%lld GEMM (batch %lld)",
                       (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch);
    int32_t ialpha = 1, ibeta = 0;
    float beta = g.c ? g.beta : 0.0f;
    const void *alpha_p = integer ? (const void *)&ialpha : (const void *)&g.alpha;
    const void *beta_p = integer ? (const void *)&ibeta : (const void *)&beta;
    const void *c = g.c ? g.c : g.d;
    return KC_CHECK(ctx, cublasLtMatmul(ctx->lt, ds.op, alpha_p, g.b, ds.la, g.a, ds.lb, beta_p,
                                        c, ds.lc, g.d, ds.lc, &heur.algo, ws, ws_size,
                                        ctx->stream));
}

// The epilogue cuBLASLt runs for an activation, and whether the activation is then done.
static cublasLtEpilogue_t epilogue_for(const kc_act &act, bool bias, bool *act_done)
{
    *act_done = true;
    if (act.kind == KC_ACT_RELU)
        return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    if (act.kind == KC_ACT_GELU_TANH)
        return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    *act_done = act.kind == KC_ACT_IDENTITY;
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

static bool same_shape(const kc_tensor *a, const kc_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

bool kc_gemm_epilogue(kc_context *ctx, const kc_tensor *a, const kc_tensor *b,
                      const kc_tensor *bias, const kc_tensor *residual, kc_tensor *y,
                      const kc_gemm_params *p)
{
    const int rank = a->rank > b->rank ? a->rank : b->rank;
    if (a->rank < 2 || b->rank < 2 || y->rank != rank)
        return KC_FAIL(ctx, "gemm: A and B must have rank 2 or more");
    lt_gemm g = {};
    g.ab_type = g.d_type = a->dtype;
    g.trans_a = p->trans_a, g.trans_b = p->trans_b;
    int64_t ar = a->dims[a->rank - 2], ac = a->dims[a->rank - 1];
    int64_t br = b->dims[b->rank - 2], bc = b->dims[b->rank - 1];
    g.m = p->trans_a ? ac : ar;
    g.k = p->trans_a ? ar : ac;
    g.n = p->trans_b ? br : bc;
    if ((p->trans_b ? bc : br) != g.k)
        return KC_FAIL(ctx, "gemm: K is %lld in A but not in B", (long long)g.k);
    if (y->numel == 0)
        return true;
    if (b->rank == 2) {
        g.batch = a->numel / (ar * ac > 0 ? ar * ac : 1);
        if (!p->trans_a) { // contiguous rows: the batch folds into M
            g.m *= g.batch;
            g.batch = 1;
        }
        g.stride_a = ar * ac, g.stride_b = 0, g.stride_d = g.m * g.n;
    } else {
        // A batched B (MatMul): strided batches over Y's batch dims, each operand either holding
        // every batch or one matrix shared by all (stride 0).
        g.batch = y->numel / (g.m * g.n);
        int64_t a_batch = ar * ac > 0 ? a->numel / (ar * ac) : 0;
        int64_t b_batch = br * bc > 0 ? b->numel / (br * bc) : 0;
        if ((a_batch != g.batch && a_batch != 1) || (b_batch != g.batch && b_batch != 1))
            return KC_FAIL(ctx, "gemm: batch dims that broadcast in part (A %lld, B %lld, Y %lld)",
                           (long long)a_batch, (long long)b_batch, (long long)g.batch);
        g.stride_a = a_batch == 1 ? 0 : ar * ac;
        g.stride_b = b_batch == 1 ? 0 : br * bc;
        g.stride_d = g.m * g.n;
    }
    g.a = a->data, g.b = b->data, g.d = y->data;
    g.alpha = p->alpha, g.beta = p->beta;
    if (residual && residual->data) {
        if (same_shape(residual, y)) {
            g.c = residual->data;
        } else { // broadcast into y first, then accumulate onto it
            if (!kc_broadcast_copy(ctx, residual, y->dims, y->rank, y->data))
                return false;
            g.c = y->data;
        }
    }
    bool act_done;
    g.bias = bias && bias->data ? bias->data : nullptr;
    g.epilogue = epilogue_for(p->act, g.bias != nullptr, &act_done);
    if (!lt_run(ctx, g))
        return false;
    return act_done || kc_bias_act(ctx, y, nullptr, nullptr, 1, 1, &p->act);
}

// ---- FusedQKV -----------------------------------------------------------------------------------

template <typename T>
__global__ void qkv_split_kernel(const T *src, int64_t rows, int64_t width, T *o0, int64_t w0,
                                 T *o1, int64_t w1, T *o2)
{
    int64_t n = rows * width;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / width, c = i - r * width;
        if (c < w0)
            o0[r * w0 + c] = src[i];
        else if (c < w0 + w1)
            o1[r * w1 + c - w0] = src[i];
        else
            o2[r * (width - w0 - w1) + c - w0 - w1] = src[i];
    }
}

bool kc_fused_qkv(kc_context *ctx, const kc_tensor *x, const kc_tensor *w, const kc_tensor *bias,
                  kc_tensor *const *outs, int nouts)
{
    if (w->rank != 2 || x->rank < 1 || nouts < 2 || nouts > 3)
        return KC_FAIL(ctx, "qkv: W must be a matrix and there must be 2 or 3 outputs");
    int64_t k = w->dims[0], width = w->dims[1];
    if (x->dims[x->rank - 1] != k)
        return KC_FAIL(ctx, "qkv: X's last dim is not W's rows");
    int64_t rows = 1, sum = 0;
    for (int d = 0; d < x->rank - 1; d++)
        rows *= x->dims[d];
    for (int i = 0; i < nouts; i++)
        sum += outs[i]->dims[outs[i]->rank - 1];
    if (sum != width)
        return KC_FAIL(ctx, "qkv: the outputs' widths add up to %lld, W has %lld columns",
                       (long long)sum, (long long)width);
    if (rows == 0)
        return true;
    size_t esize = elem_size(x->dtype);
    char *ws = (char *)kc_workspace(ctx, LT_WORKSPACE + (size_t)(rows * width) * esize);
    if (!ws)
        return false;
    void *scratch = ws + LT_WORKSPACE;
    lt_gemm g = {};
    g.ab_type = g.d_type = x->dtype;
    g.m = rows, g.n = width, g.k = k, g.batch = 1;
    g.a = x->data, g.b = w->data, g.d = scratch;
    g.alpha = 1.0f;
    g.bias = bias && bias->data ? bias->data : nullptr;
    g.epilogue = g.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (k == 0) { // an empty sum (cuBLASLt wants K >= 1): zeros plus the bias, as on the CPU
        kc_tensor s = *x;
        s.rank = 2, s.dims[0] = rows, s.dims[1] = width, s.numel = rows * width, s.data = scratch;
        const kc_act identity = {KC_ACT_IDENTITY, 0, 0};
        if (!kc_fill_bytes(ctx, scratch, 0, (size_t)(rows * width) * esize) ||
            (g.bias && !kc_bias_act(ctx, &s, bias, nullptr, width, 1, &identity)))
            return false;
    } else if (!lt_run(ctx, g)) {
        return false;
    }
    int64_t w0 = outs[0]->dims[outs[0]->rank - 1], w1 = outs[1]->dims[outs[1]->rank - 1];
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        qkv_split_kernel<T><<<kc_blocks(rows * width), KC_THREADS, 0, ctx->stream>>>(
            (const T *)scratch, rows, width, (T *)outs[0]->data, w0, (T *)outs[1]->data, w1,
            nouts == 3 ? (T *)outs[2]->data : nullptr);
        return KC_LAUNCHED(ctx);
    });
}

// ---- QGemm --------------------------------------------------------------------------------------

__global__ void transpose_i8_kernel(const int8_t *src, int8_t *dst, int64_t rows, int64_t cols)
{
    int64_t n = rows * cols;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / cols, c = i - r * cols;
        dst[c * rows + r] = src[i];
    }
}

// y = acc * a_scale * b_scale[n] + bias[n]; requantized to int8 with y_scale (round half to even,
// saturate), as QuantizeLinear with zero point 0.
__global__ void dequant_kernel(const int32_t *acc, int64_t rows, int64_t n, const float *a_scale,
                               const float *b_scale, bool per_column, const float *bias,
                               const float *y_scale, float *yf, int8_t *yq)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = i % n;
        float v = (float)acc[i] * a_scale[0] * b_scale[per_column ? c : 0];
        if (bias)
            v += bias[c];
        if (yq) {
            // NaN becomes the zero point (0), as the CPU's QuantizeLinear does.
            float q = rintf(v / y_scale[0]);
            yq[i] = q != q ? (int8_t)0 : (int8_t)fminf(fmaxf(q, -128.0f), 127.0f);
        } else {
            yf[i] = v;
        }
    }
}

// Launches dequant_kernel over the [m, n] accumulator into y (int8 when y_scale is given).
static bool dequant(kc_context *ctx, const int32_t *acc, int64_t m, int64_t n,
                    const kc_tensor *a_scale, const kc_tensor *b_scale, const kc_tensor *bias,
                    const kc_tensor *y_scale, kc_tensor *y)
{
    dequant_kernel<<<kc_blocks(m * n), KC_THREADS, 0, ctx->stream>>>(
        acc, m, n, (const float *)a_scale->data, (const float *)b_scale->data,
        b_scale->numel > 1, bias && bias->data ? (const float *)bias->data : nullptr,
        y_scale ? (const float *)y_scale->data : nullptr, y_scale ? nullptr : (float *)y->data,
        y_scale ? (int8_t *)y->data : nullptr);
    return KC_LAUNCHED(ctx);
}

bool kc_qgemm(kc_context *ctx, const kc_tensor *a, const kc_tensor *a_scale, const kc_tensor *b,
              const kc_tensor *b_scale, const kc_tensor *bias, const kc_tensor *y_scale,
              kc_tensor *y)
{
    if (a->rank < 2 || b->rank != 2 || a->dtype != KC_I8 || b->dtype != KC_I8)
        return KC_FAIL(ctx, "qgemm: A and B must be int8, B a matrix");
    int64_t k = b->dims[0], n = b->dims[1];
    if (a->dims[a->rank - 1] != k)
        return KC_FAIL(ctx, "qgemm: K is %lld in A but %lld in B",
                       (long long)a->dims[a->rank - 1], (long long)k);
    int64_t m = 1;
    for (int d = 0; d < a->rank - 1; d++)
        m *= a->dims[d];
    if (m == 0 || n == 0)
        return true;
    // Workspace: cuBLASLt's, then B transposed to [N, K] (int8 GEMMs want A transposed in
    // cuBLASLt's terms: "TN"), then the int32 accumulator.
    size_t bt_bytes = ((size_t)(k * n) + 255) / 256 * 256;
    char *ws = (char *)kc_workspace(ctx, LT_WORKSPACE + bt_bytes + (size_t)(m * n) * 4);
    if (!ws)
        return false;
    int8_t *bt = (int8_t *)(ws + LT_WORKSPACE);
    int32_t *acc = (int32_t *)(ws + LT_WORKSPACE + bt_bytes);
    bool requant = y_scale && y_scale->data;
    if (k == 0) { // an empty sum: the products are 0 and Y is the bias (cuBLASLt wants K >= 1)
        if (!kc_fill_bytes(ctx, acc, 0, (size_t)(m * n) * 4))
            return false;
        return dequant(ctx, acc, m, n, a_scale, b_scale, bias, requant ? y_scale : nullptr, y);
    }
    transpose_i8_kernel<<<kc_blocks(k * n), KC_THREADS, 0, ctx->stream>>>((const int8_t *)b->data,
                                                                         bt, k, n);
    if (!KC_LAUNCHED(ctx))
        return false;
    lt_gemm g = {};
    g.ab_type = KC_I8, g.d_type = KC_I32;
    g.trans_b = true; // bt is [N, K]
    g.m = m, g.n = n, g.k = k, g.batch = 1;
    g.a = a->data, g.b = bt, g.d = acc;
    g.alpha = 1.0f;
    g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (!lt_run(ctx, g))
        return false;
    return dequant(ctx, acc, m, n, a_scale, b_scale, bias, requant ? y_scale : nullptr, y);
}
