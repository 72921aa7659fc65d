// DynamicQuantizeMatMul: DynamicQuantizeLinear(A) @ B in int32 with the zero points, then
// acc * (a_scale * b_scale) + bias, as the CPU kernel (kernels/cpu/fused_dynq.c) computes the
// unfused graph. A composition of quant.cu's kernels: kc_dynamic_quantize into the workspace,
// kc_int_matmul_run into Y's buffer as int32 (Y's f32 has the same size), then one epilogue kernel
// converting each accumulator in place. The f32 operations use the _rn intrinsics (never an FMA),
// in the graph's order: a_scale * b_scale first, then acc times that, then + bias.
#include "kernels/cuda/kc_common.cuh"

// The workspace: kc_dynamic_quantize's range at 0, a_scale at 16, a_zero_point at 20, the
// quantized A from 64.
enum { DQ_SCALE_AT = 16, DQ_ZP_AT = 20, DQ_DATA_AT = 64 };

__global__ void dynq_epilogue_kernel(void *y, int64_t total, int64_t n, const float *a_scale,
                                     const float *b_scale, int64_t b_scale_n, const float *bias)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = i % n;
        int32_t acc = ((const int32_t *)y)[i];
        float scale = __fmul_rn(*a_scale, b_scale[b_scale_n == 1 ? 0 : j]);
        float v = __fmul_rn((float)acc, scale);
        ((float *)y)[i] = bias ? __fadd_rn(v, bias[j]) : v;
    }
}

bool kc_dynq_matmul(kc_context *ctx, const kc_tensor *a, const kc_tensor *b,
                    const kc_tensor *b_scale, const kc_tensor *b_zp, const kc_tensor *bias,
                    kc_tensor *y)
{
    if (a->dtype != KC_F32 || b->dtype != KC_I8 || b->rank != 2 || a->rank < 2 ||
        (b_zp->data && b_zp->dtype != KC_I8))
        return KC_FAIL(ctx, "DynamicQuantizeMatMul: A must be f32 and B an i8 matrix");
    int64_t k = b->dims[0], n = b->dims[1], rows = a->numel / (k ? k : 1);
    if (a->dims[a->rank - 1] != k || y->numel != rows * n)
        return KC_FAIL(ctx, "DynamicQuantizeMatMul: A, B and Y disagree on K or N");
    char *ws = (char *)kc_workspace(ctx, DQ_DATA_AT + (size_t)(a->numel > 0 ? a->numel : 1));
    if (!ws)
        return false;
    // the range read back (outside a capture) so that an infinity is the CPU kernel's error
    float *a_scale = (float *)(ws + DQ_SCALE_AT), range[2] = {0, 0};
    if (!kc_dynamic_quantize(ctx, (const float *)a->data, a->numel, ws + DQ_DATA_AT, a_scale,
                             ws + DQ_ZP_AT, ctx->capturing ? nullptr : range))
        return false;
    if (isinf(range[0]) || isinf(range[1]))
        return KC_FAIL(ctx,
                       "DynamicQuantizeMatMul: the input holds an infinity: no scale covers it");
    kc_qoperand qa = {ws + DQ_DATA_AT, KC_E_U8, ws + DQ_ZP_AT, 1};
    kc_qoperand qb = {b->data, KC_E_I8, b_zp->data, b_zp->data ? b_zp->numel : 0};
    kc_int_matmul p = {};
    p.m = rows, p.n = n, p.k = k, p.batches = 1, p.batch_rank = 0;
    if (!kc_int_matmul_run(ctx, &qa, &qb, &p, nullptr, y->data))
        return false;
    int64_t total = rows * n;
    if (total == 0)
        return true;
    dynq_epilogue_kernel<<<kc_blocks(total), KC_THREADS, 0, ctx->stream>>>(
        y->data, total, n, a_scale, (const float *)b_scale->data, b_scale->numel,
        (const float *)bias->data);
    return KC_LAUNCHED(ctx);
}
