/* Softmax with its usual producers folded in: FusedSoftmax (scale and additive mask) and
 * Attention (scaled dot product with mask, causal masking and grouped-query heads). */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <math.h>
#include <stdlib.h>

/* ---- FusedSoftmax: softmax(scale * X + mask) along axis ---- */

bool kn_cpu_FusedSoftmax(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    const kn_tensor *mask = call->ninputs > 1 && call->inputs[1].data ? &call->inputs[1] : NULL;
    kn_tensor *y = &call->outputs[0];
    int axis;
    if (!kn_axis(call, ir_get_int(call->node, "axis"), x->rank, "axis", &axis))
        return false;
    float scale = (float)ir_get_float(call->node, "scale");
    const float *X = x->data;
    float *Y = y->data;
    if (mask) {
        const kn_tensor *ops[2] = {x, mask};
        fused_rows r;
        fused_rows_init(&r, x->rank, x->dims, ops, 2);
        const float *M = mask->data;
        int64_t off[2];
        for (int64_t row = 0; row < r.nrows; row++) {
            fused_rows_offsets(&r, row, off);
            for (int64_t j = 0; j < r.len; j++)
                Y[off[0] + j] = scale * X[off[0] + j] + M[off[1] + j * r.step[1]];
        }
    } else {
        for (int64_t i = 0; i < x->numel; i++)
            Y[i] = scale * X[i];
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    kn_softmax_f32(Y, Y, outer, x->dims[axis], inner);
    return true;
}

/* ---- Attention: softmax(scale * Q @ K^T + mask) @ V ----
 *
 * Q [B, Hq, S, D], K [B, Hkv, T, D], V [B, Hkv, T, Dv]; query head h reads key/value head
 * h / (Hq / Hkv). Causal masking is aligned to the bottom right: query i sees keys j <= i + T - S,
 * so a decoder step (S = 1) sees the whole cache. One head's [S, T] score matrix is the only
 * intermediate. */

typedef struct {
    int64_t batch, hq, hkv, s, t, d, dv;
    float scale;
    bool causal;
    const float *mask;
    int64_t mask_strides[4]; /* the mask broadcast to [B, Hq, S, T] */
} attention;

/* Scores of query head h of batch b into p [S, T], masked, then softmaxed. */
static void attention_scores(const attention *at, const float *q, const float *k, int64_t b,
                             int64_t h, float *p)
{
    kn_gemm_f32(false, true, at->s, at->t, at->d, at->scale, q, at->d, k, at->d, 0.0f, p, at->t);
    if (at->mask) {
        const int64_t *ms = at->mask_strides;
        for (int64_t i = 0; i < at->s; i++) {
            const float *m = at->mask + b * ms[0] + h * ms[1] + i * ms[2];
            for (int64_t j = 0; j < at->t; j++)
                p[i * at->t + j] += m[j * ms[3]];
        }
    }
    if (at->causal)
        for (int64_t i = 0; i < at->s; i++) {
            int64_t first = i + at->t - at->s + 1; /* the first key query i may not see */
            for (int64_t j = first > 0 ? first : 0; j < at->t; j++)
                p[i * at->t + j] = -INFINITY;
        }
    kn_softmax_f32(p, p, at->s, at->t, 1);
}

bool kn_cpu_Attention(const kn_call *call)
{
    const kn_tensor *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    const kn_tensor *mask = call->ninputs > 3 && call->inputs[3].data ? &call->inputs[3] : NULL;
    attention at = {
        .batch = q->dims[0], .hq = q->dims[1], .hkv = k->dims[1], .s = q->dims[2],
        .t = k->dims[2], .d = q->dims[3], .dv = v->dims[3],
        .scale = (float)ir_get_float(call->node, "scale"),
        .causal = ir_get_int(call->node, "causal") != 0,
        .mask = mask ? mask->data : NULL,
    };
    if (at.hkv < 1 || at.hq % at.hkv != 0)
        return kn_fail(call, "Q's %lld heads are not a multiple of K's %lld", (long long)at.hq,
                       (long long)at.hkv);
    if (!kn_check_numel(call, 0, at.batch * at.hq * at.s * at.dv))
        return false;
    if (at.scale == 0.0f)
        at.scale = (float)(1.0 / sqrt((double)(at.d ? at.d : 1)));
    if (mask)
        fused_bcast_strides(mask, 4, at.mask_strides);
    float *p = malloc((size_t)(at.s * at.t > 0 ? at.s * at.t : 1) * sizeof *p);
    if (!p)
        return kn_fail(call, "out of memory for the %lld x %lld scores", (long long)at.s,
                       (long long)at.t);
    int64_t group = at.hq / at.hkv;
    const float *Q = q->data, *K = k->data, *V = v->data;
    float *Y = call->outputs[0].data;
    for (int64_t b = 0; b < at.batch; b++) {
        for (int64_t h = 0; h < at.hq; h++) {
            int64_t kvh = b * at.hkv + h / group;
            const float *qh = Q + (b * at.hq + h) * at.s * at.d;
            attention_scores(&at, qh, K + kvh * at.t * at.d, b, h, p);
            kn_gemm_f32(false, false, at.s, at.dv, at.t, 1.0f, p, at.t, V + kvh * at.t * at.dv,
                        at.dv, 0.0f, Y + (b * at.hq + h) * at.s * at.dv, at.dv);
        }
    }
    free(p);
    return true;
}
