/* Helpers of the fused CPU kernels: the activation epilogue (one switch per array, not per
 * element) and row-wise broadcasting of any number of operands. */
#include "kernels/cpu/fused_util.h"

#include "base/check.h"
#include "kernels/cpu/cpu_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool fused_act_read_named(const kn_call *call, const char *attr, fused_act *out)
{
    char alpha[32], beta[32];
    snprintf(alpha, sizeof alpha, "%s_alpha", attr);
    snprintf(beta, sizeof beta, "%s_beta", attr);
    const char *name = ir_get_string(call->node, attr);
    if (!ir_act_lookup(name, &out->kind))
        return kn_fail(call, "unknown activation '%s'", name);
    const ir_act_info *info = ir_act_get(out->kind);
    out->alpha = ir_node_attr(call->node, alpha) ? (float)ir_get_float(call->node, alpha)
                                                 : (float)info->dflt[0];
    out->beta = ir_node_attr(call->node, beta) ? (float)ir_get_float(call->node, beta)
                                               : (float)info->dflt[1];
    return true;
}

bool fused_act_read(const kn_call *call, fused_act *out)
{
    return fused_act_read_named(call, "act", out);
}

void fused_act_apply(const fused_act *act, float *y, int64_t n)
{
    const float a = act->alpha, b = act->beta;
    switch (act->kind) {
    case IR_ACT_IDENTITY: break;
    case IR_ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < 0 ? 0.0f : y[i]; /* NaN stays NaN, as in ONNX Relu */
        break;
    case IR_ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_leaky_relu(y[i], a);
        break;
    case IR_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_sigmoid(y[i]);
        break;
    case IR_ACT_TANH:
        for (int64_t i = 0; i < n; i++)
            y[i] = tanhf(y[i]);
        break;
    case IR_ACT_CLIP:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_clip(y[i], a, b);
        break;
    case IR_ACT_GELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_gelu_erf(y[i]);
        break;
    case IR_ACT_GELU_TANH:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_gelu_tanh(y[i]);
        break;
    case IR_ACT_SILU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] * kn_sigmoid(y[i]);
        break;
    case IR_ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_hard_swish(y[i]);
        break;
    case IR_ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            y[i] = kn_hard_sigmoid(y[i], a, b);
        break;
    }
}

/* ---- broadcasting by rows ---- */

int64_t fused_prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

void fused_bcast_strides(const kn_tensor *t, int rank, int64_t *strides)
{
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int ti = i - (rank - t->rank);
        int64_t d = ti >= 0 ? t->dims[ti] : 1;
        strides[i] = d == 1 ? 0 : stride;
        stride *= d;
    }
}

void fused_rows_init(fused_rows *r, int rank, const int64_t *dims, const kn_tensor *const *operands,
                     int noperands)
{
    FR_CHECK(noperands <= FUSED_MAX_OPERANDS && rank <= IR_MAX_RANK);
    int64_t full[FUSED_MAX_OPERANDS][IR_MAX_RANK];
    for (int k = 0; k < noperands; k++)
        fused_bcast_strides(operands[k], rank, full[k]);
    /* Merge dim i into the dim after it when every operand steps over both as one: stride[i] ==
     * stride[i+1] * dims[i+1]. Size-1 output dims are dropped first. */
    int m = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1)
            continue;
        bool merge = m > 0;
        for (int k = 0; k < noperands && merge; k++)
            merge = r->strides[k][m - 1] == full[k][i] * dims[i];
        if (merge) {
            r->dims[m - 1] *= dims[i];
            for (int k = 0; k < noperands; k++)
                r->strides[k][m - 1] = full[k][i];
        } else {
            r->dims[m] = dims[i];
            for (int k = 0; k < noperands; k++)
                r->strides[k][m] = full[k][i];
            m++;
        }
    }
    if (m == 0) { /* a scalar output */
        r->dims[0] = 1;
        for (int k = 0; k < noperands; k++)
            r->strides[k][0] = 0;
        m = 1;
    }
    r->rank = m;
    r->noperands = noperands;
    r->len = r->dims[m - 1];
    r->nrows = 1;
    for (int i = 0; i < m - 1; i++)
        r->nrows *= r->dims[i];
    for (int k = 0; k < noperands; k++)
        r->step[k] = r->strides[k][m - 1];
}

void fused_rows_offsets(const fused_rows *r, int64_t row, int64_t *off)
{
    for (int k = 0; k < r->noperands; k++)
        off[k] = 0;
    for (int i = r->rank - 2; i >= 0; i--) {
        int64_t idx = row % r->dims[i];
        row /= r->dims[i];
        for (int k = 0; k < r->noperands; k++)
            off[k] += idx * r->strides[k][i];
    }
}

void fused_rope_row(const float *x, float *y, int64_t d, int64_t w, const float *c, const float *s,
                    int64_t tstep, bool interleaved)
{
    int64_t half = d / 2;
    for (int64_t p = 0; p < half; p++) {
        int64_t a = interleaved ? 2 * p : p, b = interleaved ? 2 * p + 1 : p + half;
        int64_t ta = (w == d ? a : p) * tstep, tb = (w == d ? b : p) * tstep;
        float xa = x[a], xb = x[b];
        y[a] = xa * c[ta] - xb * s[ta];
        y[b] = xb * c[tb] + xa * s[tb];
    }
}
