/* Softmax with its usual producers folded in: FusedSoftmax (scale and additive mask) and
 * Attention (scaled dot product with mask, causal masking, grouped-query heads, either head
 * layout and rotary embedding of Q and K). */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
 * Q, K, V and Y are seen as [B, H, S, D] through strides, whatever their layout ("BHSD", or
 * "BSHD": a head's rows are then H * D apart, which the GEMMs take as their row stride). Query
 * head h reads key/value head h / (Hq / Hkv). Causal masking is aligned to the bottom right: query
 * i sees keys j <= i + T - S, so a decoder step (S = 1) sees the whole cache. With rotary tables,
 * Q and K are first rotated into copies (in their own layout); then one head's [S, T] score matrix
 * is the only intermediate. */

/* Where element (b, h, i, c) of a [B, H, L, D] view lies: b * sb + h * sh + i * row + c. */
typedef struct {
    int64_t b, h, len, d; /* the logical dims */
    int64_t sb, sh, row;  /* strides in elements */
} heads;

static heads heads_of(const kn_tensor *t, bool bshd)
{
    const int64_t *x = t->dims;
    if (bshd)
        return (heads){x[0], x[2], x[1], x[3], x[1] * x[2] * x[3], x[3], x[2] * x[3]};
    return (heads){x[0], x[1], x[2], x[3], x[1] * x[2] * x[3], x[2] * x[3], x[3]};
}

/* The offset of head h of batch b. */
static int64_t head_at(const heads *v, int64_t b, int64_t h)
{
    return b * v->sb + h * v->sh;
}

typedef struct {
    heads q, k, v, y;
    float scale;
    bool causal;
    bool causal_fill_mode; /* causal = 2: masked scores become causal_fill before the masks */
    float causal_fill;
    bool nan_to_zero; /* NaN probabilities (a row of -inf or NaN scores) become 0 */
    const float *mask;
    int64_t mask_strides[4]; /* the mask broadcast to [B, Hq, S, T] */
    const kn_tensor *key_mask; /* i32 or i64 broadcasting to [B, T]: a key whose entry is not > 0
                                * is masked */
    float filter;              /* what a masked key adds to its scores */
    const float *bias;         /* a second additive term, added after the mask */
    int64_t bias_strides[4];   /* the bias broadcast to [B, Hq, S, T] */
} attention;

/* Whether key j of batch b is kept by the key-padding mask. */
static bool key_kept(const kn_tensor *km, int64_t b, int64_t j)
{
    int64_t at = (km->dims[0] == 1 ? 0 : b) * km->dims[1] + (km->dims[1] == 1 ? 0 : j);
    return km->dtype == IR_I64 ? ((const int64_t *)km->data)[at] > 0
                               : ((const int32_t *)km->data)[at] > 0;
}

/* Scores of query head h of batch b into p [S, T], masked, then softmaxed. */
static void attention_scores(const attention *at, const float *q, const float *k, int64_t b,
                             int64_t h, float *p)
{
    int64_t s = at->q.len, t = at->k.len;
    kn_gemm_f32(false, true, s, t, at->q.d, at->scale, q, at->q.row, k, at->k.row, 0.0f, p, t);
    if (at->causal_fill_mode) /* replaced, not added: the masks below add to the fill */
        for (int64_t i = 0; i < s; i++) {
            int64_t first = i + t - s + 1; /* the first key query i may not see */
            for (int64_t j = first > 0 ? first : 0; j < t; j++)
                p[i * t + j] = at->causal_fill;
        }
    if (at->key_mask) /* first, as ONNX Runtime adds its raw mask before attention_bias */
        for (int64_t j = 0; j < t; j++)
            if (!key_kept(at->key_mask, b, j))
                for (int64_t i = 0; i < s; i++)
                    p[i * t + j] += at->filter;
    if (at->mask) {
        const int64_t *ms = at->mask_strides;
        for (int64_t i = 0; i < s; i++) {
            const float *m = at->mask + b * ms[0] + h * ms[1] + i * ms[2];
            for (int64_t j = 0; j < t; j++)
                p[i * t + j] += m[j * ms[3]];
        }
    }
    if (at->bias) { /* after the mask: (scores * s + mask) + bias, as the unfused Adds */
        const int64_t *bs = at->bias_strides;
        for (int64_t i = 0; i < s; i++) {
            const float *m = at->bias + b * bs[0] + h * bs[1] + i * bs[2];
            for (int64_t j = 0; j < t; j++)
                p[i * t + j] += m[j * bs[3]];
        }
    }
    if (at->causal)
        for (int64_t i = 0; i < s; i++) {
            int64_t first = i + t - s + 1; /* the first key query i may not see */
            for (int64_t j = first > 0 ? first : 0; j < t; j++)
                p[i * t + j] = -INFINITY;
        }
    kn_softmax_f32(p, p, s, t, 1);
    if (at->nan_to_zero)
        for (int64_t i = 0; i < s * t; i++)
            p[i] = isnan(p[i]) ? 0.0f : p[i];
}

/* A rotated copy of x (viewed as v) by the rotate-half RoPE with tables cos/sin broadcasting to
 * [B, H, L, W]; NULL when out of memory. */
static float *rotated(const kn_tensor *x, const heads *v, const kn_tensor *ct, const kn_tensor *st)
{
    float *out = malloc((size_t)(x->numel > 0 ? x->numel : 1) * sizeof *out);
    if (!out)
        return NULL;
    int64_t ts[4], w = ct->dims[ct->rank - 1];
    fused_bcast_strides(ct, 4, ts); /* sin has cos's shape (inference checked) */
    const float *X = x->data, *C = ct->data, *S = st->data;
    for (int64_t b = 0; b < v->b; b++)
        for (int64_t h = 0; h < v->h; h++)
            for (int64_t i = 0; i < v->len; i++) {
                int64_t at = head_at(v, b, h) + i * v->row;
                int64_t tbase = b * ts[0] + h * ts[1] + i * ts[2];
                fused_rope_row(X + at, out + at, v->d, w, C + tbase, S + tbase, ts[3], false);
            }
    return out;
}

static bool attention_run(const kn_call *call, const attention *at, const float *Q, const float *K,
                          const float *V)
{
    float *p = malloc((size_t)(at->q.len * at->k.len > 0 ? at->q.len * at->k.len : 1) * sizeof *p);
    if (!p)
        return kn_fail(call, "out of memory for the %lld x %lld scores", (long long)at->q.len,
                       (long long)at->k.len);
    int64_t group = at->q.h / at->k.h;
    float *Y = call->outputs[0].data;
    for (int64_t b = 0; b < at->q.b; b++)
        for (int64_t h = 0; h < at->q.h; h++) {
            int64_t kvh = h / group;
            attention_scores(at, Q + head_at(&at->q, b, h), K + head_at(&at->k, b, kvh), b, h, p);
            kn_gemm_f32(false, false, at->q.len, at->v.d, at->k.len, 1.0f, p, at->k.len,
                        V + head_at(&at->v, b, kvh), at->v.row, 0.0f, Y + head_at(&at->y, b, h),
                        at->y.row);
        }
    free(p);
    return true;
}

/* Packed (qkv_sizes, num_heads): P = X @ W + bias [B * S, N] once, and Q, K, V its column blocks
 * seen as [B, S, H, D] heads whose rows are N apart. */
static bool attention_packed(const kn_call *call, attention *at)
{
    const kn_tensor *in = call->inputs;
    const int64_t *sizes;
    ir_get_ints(call->node, "qkv_sizes", &sizes);
    int64_t h = ir_get_int(call->node, "num_heads");
    int64_t b = in[0].dims[0], s = in[0].dims[1], c = in[0].dims[2], n = in[1].dims[1];
    float *p = malloc((size_t)(b * s * n > 0 ? b * s * n : 1) * sizeof *p);
    if (!p)
        return kn_fail(call, "out of memory for the packed projection");
    const float *bias = in[2].data;
    for (int64_t r = 0; r < b * s; r++)
        for (int64_t j = 0; j < n; j++)
            p[r * n + j] = bias[j];
    kn_gemm_f32(false, false, b * s, n, c, 1.0f, in[0].data, c, in[1].data, n, 1.0f, p, n);
    heads *views[3] = {&at->q, &at->k, &at->v};
    for (int i = 0; i < 3; i++)
        *views[i] = (heads){b, h, s, sizes[i] / h, s * n, sizes[i] / h, n};
    if (at->scale == 0.0f)
        at->scale = (float)(1.0 / sqrt((double)(at->q.d ? at->q.d : 1)));
    bool ok = attention_run(call, at, p, p + sizes[0], p + sizes[0] + sizes[1]);
    free(p);
    return ok;
}

bool kn_cpu_Attention(const kn_call *call)
{
    const kn_tensor *in = call->inputs;
    bool bshd = strcmp(ir_get_string(call->node, "layout"), "BSHD") == 0;
    const kn_tensor *mask = call->ninputs > 3 && in[3].data ? &in[3] : NULL;
    const kn_tensor *bias = call->ninputs > 7 && in[7].data ? &in[7] : NULL;
    bool rotary = call->ninputs > 5 && in[4].data && in[5].data;
    attention at = {
        .q = heads_of(&in[0], bshd),
        .k = heads_of(&in[1], bshd),
        .v = heads_of(&in[2], bshd),
        .y = heads_of(&call->outputs[0], bshd),
        .scale = (float)ir_get_float(call->node, "scale"),
        .causal = ir_get_int(call->node, "causal") == 1,
        .causal_fill_mode = ir_get_int(call->node, "causal") == 2,
        .causal_fill = (float)ir_get_float(call->node, "causal_fill"),
        .nan_to_zero = ir_get_int(call->node, "nan_to_zero") != 0,
        .mask = mask ? mask->data : NULL,
        .key_mask = call->ninputs > 6 && in[6].data ? &in[6] : NULL,
        .filter = (float)ir_get_float(call->node, "mask_filter_value"),
        .bias = bias ? bias->data : NULL,
    };
    if (mask)
        fused_bcast_strides(mask, 4, at.mask_strides);
    if (bias)
        fused_bcast_strides(bias, 4, at.bias_strides);
    if (ir_get_int(call->node, "num_heads") > 0)
        return attention_packed(call, &at);
    if (at.k.h < 1 || at.q.h % at.k.h != 0)
        return kn_fail(call, "Q's %lld heads are not a multiple of K's %lld", (long long)at.q.h,
                       (long long)at.k.h);
    if (!kn_check_numel(call, 0, at.q.b * at.q.h * at.q.len * at.v.d))
        return false;
    if (at.scale == 0.0f)
        at.scale = (float)(1.0 / sqrt((double)(at.q.d ? at.q.d : 1)));
    if (!rotary)
        return attention_run(call, &at, in[0].data, in[1].data, in[2].data);
    float *q = rotated(&in[0], &at.q, &in[4], &in[5]);
    float *k = q ? rotated(&in[1], &at.k, &in[4], &in[5]) : NULL;
    bool ok =
        k ? attention_run(call, &at, q, k, in[2].data) : kn_fail(call, "out of memory for the rotated Q and K");
    free(q);
    free(k);
    return ok;
}
