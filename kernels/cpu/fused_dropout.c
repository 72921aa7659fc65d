/* BiasDropout: Dropout(X + bias, ratio, training_mode) [+ residual] in one pass, with the mask of
 * the unfused Dropout (kernels/dropout_mask.h: element i of Y, row-major, drawn from the seed
 * attribute), so that the fused and the unfused graph agree bit for bit in f32. */
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/fused_util.h"
#include "kernels/dropout_mask.h"

bool kn_cpu_BiasDropout(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *b = &call->inputs[1];
    const kn_tensor *res = call->ninputs > 2 && call->inputs[2].data ? &call->inputs[2] : NULL;
    kn_tensor *y = &call->outputs[0];
    double ratio =
        call->ninputs > 3 && call->inputs[3].data ? kn_get_f64(&call->inputs[3], 0) : 0.5;
    bool training = call->ninputs > 4 && call->inputs[4].data && kn_get_int(&call->inputs[4], 0);
    if (!training)
        ratio = 0;
    if (!(ratio >= 0 && ratio < 1))
        return kn_fail(call, "ratio %g is not in [0, 1)", ratio);
    uint8_t *mask = call->noutputs > 1 && call->outputs[1].data ? call->outputs[1].data : NULL;
    if (mask && !kn_check_numel(call, 1, y->numel))
        return false;
    uint64_t seed = kn_dropout_seed(ir_get_int(call->node, "seed"));
    uint32_t threshold = kn_dropout_threshold(ratio);
    float scale = ratio == 0 ? 1.0f : kn_dropout_scale(ratio);
    const kn_tensor *ops[4] = {y, x, b, res};
    fused_rows r;
    fused_rows_init(&r, y->rank, y->dims, ops, res ? 4 : 3);
    const float *X = x->data, *B = b->data, *R = res ? res->data : NULL;
    float *Y = y->data;
    int64_t off[4];
    for (int64_t row = 0; row < r.nrows; row++) {
        fused_rows_offsets(&r, row, off);
        for (int64_t j = 0; j < r.len; j++) {
            int64_t i = off[0] + j;
            bool keep = kn_dropout_keep(seed, threshold, (uint64_t)i);
            float v = X[off[1] + j * r.step[1]] + B[off[2] + j * r.step[2]];
            /* the unfused Dropout copies its input when it keeps everything (no scaling) */
            float d = ratio == 0 ? v : keep ? v * scale : 0.0f;
            Y[i] = R ? d + R[off[3] + j * r.step[3]] : d;
            if (mask)
                mask[i] = keep;
        }
    }
    return true;
}
