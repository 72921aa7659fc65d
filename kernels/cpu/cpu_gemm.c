/* GEMM for the CPU kernels (kernels/cpu/cpu_util.h): OpenBLAS, batched and broadcast. */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- GEMM ---------------------------------------------------------------------------------- */

/* The same product without BLAS, for sizes that do not fit BLAS's int arguments. */
static void gemm_loops(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++) {
                float av = trans_a ? a[p * lda + i] : a[i * lda + p];
                float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
                acc += (double)av * bv;
            }
            float prev = beta == 0 ? 0 : beta * c[i * ldc + j];
            c[i * ldc + j] = alpha * (float)acc + prev;
        }
    }
}

void kn_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0 || alpha == 0) { /* BLAS needs k >= 1; the product is empty: C = beta * C */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];
        return;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX) {
        gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                b, (int)ldb, beta, c, (int)ldc);
}

/* Offsets of one batch entry of a broadcast batched operand. */
static int64_t batch_offset(int64_t b, int rank, const int64_t *dims, const int64_t *strides)
{
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        off += (b % dims[d]) * strides[d];
        b /= dims[d];
    }
    return off;
}

bool kn_matmul_f32(const kn_call *call, const kn_tensor *a, const kn_tensor *b, kn_tensor *y)
{
    if (a->rank < 1 || b->rank < 1)
        return kn_fail(call, "MatMul operands must have rank >= 1");
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    int64_t k = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (k != kb)
        return kn_fail(call, "inner dims differ: %lld and %lld", (long long)k, (long long)kb);

    /* Batch dims: broadcast of a's and b's leading dims, right-aligned. */
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    int rank = ra > rb ? ra : rb;
    int64_t dims[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], batches = 1;
    int64_t stride_a = m * k, stride_b = k * n;
    for (int d = rank - 1; d >= 0; d--) {
        int da = d - (rank - ra), db = d - (rank - rb);
        int64_t ea = da >= 0 ? a->dims[da] : 1, eb = db >= 0 ? b->dims[db] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return kn_fail(call, "batch dims %lld and %lld do not broadcast", (long long)ea,
                           (long long)eb);
        dims[d] = ea > eb ? ea : eb;
        sa[d] = ea == 1 ? 0 : stride_a;
        sb[d] = eb == 1 ? 0 : stride_b;
        stride_a *= ea;
        stride_b *= eb;
        batches *= dims[d];
    }
    if (y->numel != batches * m * n)
        return kn_fail(call, "MatMul result has %lld elements but the output holds %lld",
                       (long long)(batches * m * n), (long long)y->numel);
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    if (rb == 0) { /* b is one matrix: every row of every batch of a in one GEMM */
        kn_gemm_f32(false, false, batches * m, n, k, 1.0f, pa, k, pb, n, 0.0f, py, n);
        return true;
    }
    for (int64_t i = 0; i < batches; i++)
        kn_gemm_f32(false, false, m, n, k, 1.0f, pa + batch_offset(i, rank, dims, sa), k,
                    pb + batch_offset(i, rank, dims, sb), n, 0.0f, py + i * m * n, n);
    return true;
}
