/* The GEMM-based fused ops: GemmEpilogue, FusedQKV and QGemm.
 *
 * GemmEpilogue makes one cblas call for all rows (splitting the rows would make OpenBLAS pack B
 * once per block, which costs more than it saves), then applies the whole epilogue (bias,
 * residual, activation) in one pass over the output: separate MatMul, Add and activation kernels
 * make one pass each. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <stdlib.h>

/* ---- GemmEpilogue ---- */

typedef struct {
    const float *bias;   /* N values or NULL */
    const float *res;    /* residual or NULL */
    float beta;
    int rank;            /* the output's */
    const int64_t *dims; /* the output's */
    int64_t res_strides[IR_MAX_RANK]; /* the residual broadcast to the output (0: broadcast) */
    fused_act act;
} epilogue;

/* Offset of the residual's element at the start of output row r (a row: the last dim). */
static int64_t residual_row(const epilogue *e, int64_t r)
{
    int64_t off = 0;
    for (int i = e->rank - 2; i >= 0; i--) {
        off += (r % e->dims[i]) * e->res_strides[i];
        r /= e->dims[i];
    }
    return off;
}

/* Applies the epilogue to output rows [r0, r1) of y viewed as [rows, n]. */
static void apply_epilogue(const epilogue *e, float *y, int64_t n, int64_t r0, int64_t r1)
{
    int64_t step = e->res_strides[e->rank - 1];
    for (int64_t r = r0; r < r1; r++) {
        float *row = y + r * n;
        if (e->bias)
            for (int64_t j = 0; j < n; j++)
                row[j] += e->bias[j];
        if (e->res) {
            const float *src = e->res + residual_row(e, r);
            for (int64_t j = 0; j < n; j++)
                row[j] += e->beta * src[j * step];
        }
        fused_act_apply(&e->act, row, n);
    }
}

/* An operand as the GEMM reads it: its dims in the order the GEMM sees them (transBatch applied),
 * the distance between consecutive matrices of its batch dims and the row stride of each matrix. A
 * transBatch operand [d0, b..., d] is read in place as [b..., d0, d]: matrix i starts at i * d and
 * its rows are a whole batch of rows apart. */
typedef struct {
    const float *data;
    int rank;
    int64_t dims[IR_MAX_RANK];
    int64_t matrix_stride, ld;
} operand;

static operand operand_of(const kn_tensor *t, bool trans_batch)
{
    operand o = {.data = t->data, .rank = t->rank};
    int r = t->rank;
    for (int i = 0; i < r; i++)
        o.dims[i] = t->dims[i];
    if (r == 1) { /* a vector: one row [1, K] */
        o.rank = 2;
        o.dims[0] = 1;
        o.dims[1] = t->dims[0];
        o.ld = o.matrix_stride = t->dims[0];
        return o;
    }
    o.ld = t->dims[r - 1];
    o.matrix_stride = t->dims[r - 2] * t->dims[r - 1];
    if (trans_batch) {
        for (int i = 0; i < r - 2; i++)
            o.dims[i] = t->dims[i + 1];
        o.dims[r - 2] = t->dims[0];
        o.matrix_stride = t->dims[r - 1];
        o.ld = fused_prod(t->dims, 1, r - 1) * t->dims[r - 1];
    }
    return o;
}

/* The stride, in matrices, of each of Y's `nb` batch dims in t's batch dims (aligned from the
 * right; 0 where t has no such dim or a dim of 1 that broadcasts). */
static void batch_strides(const operand *t, const int64_t *ydims, int nb, int64_t *strides)
{
    int tb = t->rank - 2;
    int64_t s = 1;
    for (int j = nb - 1; j >= 0; j--) {
        int d = j - (nb - tb);
        strides[j] = d >= 0 && t->dims[d] == ydims[j] && ydims[j] != 1 ? s : 0;
        if (d >= 0)
            s *= t->dims[d];
    }
}

/* A batched B: one GEMM per batch of Y, A's and B's batches broadcast to Y's as MatMul's do. */
static void batched_gemm(const operand *a, const operand *b, kn_tensor *y, const epilogue *e,
                         bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha)
{
    int nb = y->rank - 2;
    int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
    batch_strides(a, y->dims, nb, sa);
    batch_strides(b, y->dims, nb, sb);
    int64_t batch = fused_prod(y->dims, 0, nb);
    float *Y = y->data;
    for (int64_t i = 0; i < batch; i++) {
        int64_t oa = 0, ob = 0, rest = i;
        for (int j = nb - 1; j >= 0; j--) {
            int64_t idx = rest % y->dims[j];
            rest /= y->dims[j];
            oa += idx * sa[j];
            ob += idx * sb[j];
        }
        kn_gemm_f32(ta, tb, m, n, k, alpha, a->data + oa * a->matrix_stride, a->ld,
                    b->data + ob * b->matrix_stride, b->ld, 0.0f, Y + i * m * n, n);
        apply_epilogue(e, Y, n, i * m, (i + 1) * m);
    }
}

bool kn_cpu_GemmEpilogue(const kn_call *call)
{
    const kn_tensor *bias = call->ninputs > 2 ? &call->inputs[2] : NULL;
    const kn_tensor *res = call->ninputs > 3 ? &call->inputs[3] : NULL;
    kn_tensor *y = &call->outputs[0];
    bool ta = ir_get_int(call->node, "transA") != 0, tb = ir_get_int(call->node, "transB") != 0;
    bool tba = ir_get_int(call->node, "transBatchA") != 0,
         tbb = ir_get_int(call->node, "transBatchB") != 0;
    operand a = operand_of(&call->inputs[0], tba), b = operand_of(&call->inputs[1], tbb);
    float alpha = (float)ir_get_float(call->node, "alpha");
    epilogue e = {.bias = bias && bias->data ? bias->data : NULL,
                  .res = res && res->data ? res->data : NULL,
                  .beta = (float)ir_get_float(call->node, "beta")};
    if (!fused_act_read(call, &e.act))
        return false;
    int r = a.rank, rb = b.rank;
    int64_t m = ta ? a.dims[r - 1] : a.dims[r - 2], k = ta ? a.dims[r - 2] : a.dims[r - 1];
    int64_t n = tb ? b.dims[rb - 2] : b.dims[rb - 1];
    int64_t batch = fused_prod(rb > 2 ? y->dims : a.dims, 0, (rb > 2 ? y->rank : r) - 2);
    if (!kn_check_numel(call, 0, batch * m * n))
        return false;
    e.rank = y->rank;
    e.dims = y->dims;
    if (e.res)
        fused_bcast_strides(res, y->rank, e.res_strides);
    if (rb > 2) { /* also every transBatch: A and B then have one rank of at least 3 */
        batched_gemm(&a, &b, y, &e, ta, tb, m, n, k, alpha);
        return true;
    }
    const float *A = a.data, *B = b.data;
    float *Y = y->data;
    int64_t ldb = tb ? k : n;
    if (!ta) {
        /* all batches at once: A is [batch * m, k] */
        kn_gemm_f32(false, tb, batch * m, n, k, alpha, A, k, B, ldb, 0.0f, Y, n);
        apply_epilogue(&e, Y, n, 0, batch * m);
    } else {
        for (int64_t i = 0; i < batch; i++) {
            kn_gemm_f32(true, tb, m, n, k, alpha, A + i * m * k, m, B, ldb, 0.0f, Y + i * m * n,
                        n);
            apply_epilogue(&e, Y, n, i * m, (i + 1) * m);
        }
    }
    return true;
}

/* ---- FusedQKV ---- */

/* Output i is X @ W[:, off_i : off_i + sizes[i]] (+ bias): one GEMM over the concatenated weight,
 * written straight into the split outputs (B is read with W's full row stride). */
bool kn_cpu_FusedQKV(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *w = &call->inputs[1];
    const kn_tensor *bias = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    const int64_t *sizes;
    uint32_t nsizes = ir_get_ints(call->node, "sizes", &sizes);
    if (nsizes != call->noutputs)
        return kn_fail(call, "sizes has %u entries for %u outputs", nsizes, call->noutputs);
    int64_t k = w->dims[0], total = w->dims[1];
    int64_t rows = fused_prod(x->dims, 0, x->rank - 1);
    int64_t off = 0;
    for (uint32_t i = 0; i < nsizes; i++) {
        if (off + sizes[i] > total || !kn_check_numel(call, i, rows * sizes[i]))
            return kn_fail(call, "sizes do not fit W's %lld columns", (long long)total);
        float *y = call->outputs[i].data;
        const float *wi = (const float *)w->data + off;
        kn_gemm_f32(false, false, rows, sizes[i], k, 1.0f, x->data, k, wi, total, 0.0f, y,
                    sizes[i]);
        if (bias) {
            const float *bi = (const float *)bias->data + off;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < sizes[i]; j++)
                    y[r * sizes[i] + j] += bi[j];
        }
        off += sizes[i];
    }
    return true;
}

/* ---- QGemm ---- */

/* Y = (A @ B accumulated in int32) * a_scale * b_scale[n] + bias[n], then, with y_scale, rounded
 * half to even to int8: saturate(round(Y / y_scale)). Zero points are 0. B is transposed once so
 * that every dot product reads both operands contiguously. */
bool kn_cpu_QGemm(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *as = &call->inputs[1], *b = &call->inputs[2],
                    *bs = &call->inputs[3];
    const float *bias = call->ninputs > 4 ? call->inputs[4].data : NULL;
    const float *ys = call->ninputs > 5 ? call->inputs[5].data : NULL;
    kn_tensor *y = &call->outputs[0];
    int64_t k = b->dims[0], n = b->dims[1];
    int64_t rows = fused_prod(a->dims, 0, a->rank - 1);
    if (!kn_check_numel(call, 0, rows * n))
        return false;
    int8_t *bt = malloc((size_t)(n * k > 0 ? n * k : 1));
    if (!bt)
        return kn_fail(call, "out of memory for the transposed B (%lld bytes)", (long long)(n * k));
    const int8_t *B = b->data, *A = a->data;
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++)
            bt[j * k + p] = B[p * n + j];
    float a_scale = *(const float *)as->data;
    const float *b_scale = bs->data;
    bool per_column = bs->numel > 1;
    for (int64_t r = 0; r < rows; r++) {
        const int8_t *ar = A + r * k;
        for (int64_t j = 0; j < n; j++) {
            const int8_t *bj = bt + j * k;
            int32_t acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (int32_t)ar[p] * (int32_t)bj[p];
            float v = (float)acc * a_scale * b_scale[per_column ? j : 0];
            if (bias)
                v += bias[j];
            if (ys)
                ((int8_t *)y->data)[r * n + j] =
                    (int8_t)kn_quantize((double)(v / *ys), 0, -128, 127);
            else
                ((float *)y->data)[r * n + j] = v;
        }
    }
    free(bt);
    return true;
}
