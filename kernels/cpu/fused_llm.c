/* The elementwise ops of LLM decoder layers: RoPE (rotary position embedding) and SwiGLU. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"

/* ---- RoPE ----
 *
 * X [..., S, D] is rotated in pairs of its last dim: (i, i + D/2) in the rotate-half form, or
 * (2i, 2i + 1) when interleaved. cos/sin [..., W] broadcast to X's leading dims; with W = D/2 pair
 * p uses entry p for both elements, with W = D each element uses its own entry:
 *     y[a] = x[a] * cos[ta] - x[b] * sin[ta],   y[b] = x[b] * cos[tb] + x[a] * sin[tb]. */
bool kn_cpu_RoPE(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *ct = &call->inputs[1], *st = &call->inputs[2];
    kn_tensor *y = &call->outputs[0];
    int rank = x->rank;
    int64_t d = x->dims[rank - 1], w = ct->dims[ct->rank - 1];
    if (d % 2 != 0 || (w != d && 2 * w != d))
        return kn_fail(call, "cos/sin's last dim %lld must be D = %lld or D/2", (long long)w,
                       (long long)d);
    bool interleaved = ir_get_int(call->node, "interleaved") != 0;
    int64_t ts[IR_MAX_RANK];
    fused_bcast_strides(ct, rank, ts); /* sin has cos's shape (inference checked) */
    const float *X = x->data, *C = ct->data, *S = st->data;
    float *Y = y->data;
    int64_t rows = fused_prod(x->dims, 0, rank - 1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t tbase = 0, rest = r;
        for (int i = rank - 2; i >= 0; i--) {
            tbase += (rest % x->dims[i]) * ts[i];
            rest /= x->dims[i];
        }
        fused_rope_row(X + r * d, Y + r * d, d, w, C + tbase, S + tbase, ts[rank - 1], interleaved);
    }
    return true;
}

/* ---- SwiGLU: gate * sigmoid(gate) * up, broadcasting ---- */

bool kn_cpu_SwiGLU(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    const kn_tensor *ops[3] = {y, &call->inputs[0], &call->inputs[1]};
    fused_rows r;
    fused_rows_init(&r, y->rank, y->dims, ops, 3);
    const float *G = call->inputs[0].data, *U = call->inputs[1].data;
    float *Y = y->data;
    int64_t off[3];
    for (int64_t row = 0; row < r.nrows; row++) {
        fused_rows_offsets(&r, row, off);
        for (int64_t j = 0; j < r.len; j++) {
            float g = G[off[1] + j * r.step[1]];
            Y[off[0] + j] = g * kn_sigmoid(g) * U[off[2] + j * r.step[2]];
        }
    }
    return true;
}
