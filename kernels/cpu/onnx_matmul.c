/* MatMul and Gemm over cblas_sgemm. */
#include "kernels/cpu/cpu_util.h"

/* numpy matmul: 1-D operands promoted (and the promoted dim dropped from the result), batch dims
 * broadcast; see kn_matmul_f32. */
bool kn_cpu_MatMul(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    if (a->dtype != IR_F32 || b->dtype != IR_F32)
        return kn_fail(call, "float operands only, not %s and %s", ir_dtype_name(a->dtype),
                       ir_dtype_name(b->dtype));
    return kn_matmul_f32(call, a, b, &call->outputs[0]);
}

/* Y = alpha * op(A) @ op(B) + beta * C, A and B 2-D, C (optional) broadcast to [M, N]. */
bool kn_cpu_Gemm(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[1];
    const kn_tensor *c = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    kn_tensor *y = &call->outputs[0];
    bool ta = ir_get_int(call->node, "transA") != 0, tb = ir_get_int(call->node, "transB") != 0;
    float alpha = (float)ir_get_float(call->node, "alpha");
    float beta = (float)ir_get_float(call->node, "beta");
    if (a->dtype != IR_F32 || b->dtype != IR_F32 || (c && c->dtype != IR_F32))
        return kn_fail(call, "float operands only");
    if (a->rank != 2 || b->rank != 2)
        return kn_fail(call, "A and B must be 2-D, not rank %d and %d", a->rank, b->rank);
    int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
    if (k != kb)
        return kn_fail(call, "inner dims differ: %lld and %lld", (long long)k, (long long)kb);
    if (y->rank != 2 || y->dims[0] != m || y->dims[1] != n)
        return kn_fail(call, "the output was allocated with another shape than [%lld, %lld]",
                       (long long)m, (long long)n);
    if (c && beta != 0) {
        if (!kn_broadcast_copy(c, y, sizeof(float)))
            return kn_fail(call, "C does not broadcast to [%lld, %lld]", (long long)m,
                           (long long)n);
    } else {
        beta = 0; /* C absent (or scaled by 0): Y is not read */
    }
    kn_gemm_f32(ta, tb, m, n, k, alpha, a->data, a->dims[1], b->data, b->dims[1], beta, y->data,
                n);
    return true;
}
