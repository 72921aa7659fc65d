/* Einsum: every combination of the equation's labels visited once, the product of the inputs'
 * elements added into the output element the output labels pick (ir_einsum_parse resolves the
 * equation). Floats accumulate in double, integers in int64 wrapped to their width. A reference,
 * not a fast path: the work is the product of all label sizes. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

bool kn_cpu_Einsum(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    int ranks[IR_EINSUM_MAX_INPUTS];
    if (call->ninputs > IR_EINSUM_MAX_INPUTS)
        return kn_fail(call, "at most %d inputs", IR_EINSUM_MAX_INPUTS);
    for (uint32_t i = 0; i < call->ninputs; i++) {
        ranks[i] = call->inputs[i].rank;
        if (call->inputs[i].dtype != y->dtype || y->dtype == IR_BOOL)
            return kn_fail(call, "every input must have the output's numeric dtype");
    }
    const char *eq = ir_get_string(call->node, "equation"), *err;
    ir_einsum e;
    if (!ir_einsum_parse(eq, ranks, (int)call->ninputs, &e, &err))
        return kn_fail(call, "equation \"%s\" has %s", eq, err);
    /* each label's size, and each operand's stride along it (0 where it broadcasts) */
    int64_t size[IR_EINSUM_LABELS], stride[IR_EINSUM_MAX_INPUTS + 1][IR_EINSUM_LABELS], a, b;
    bool used[IR_EINSUM_LABELS];
    const int64_t *dims[IR_EINSUM_MAX_INPUTS];
    for (int i = 0; i < e.ninputs; i++)
        dims[i] = call->inputs[i].dims;
    memset(stride, 0, sizeof stride);
    if (!ir_einsum_sizes(&e, dims, size, stride, used, &a, &b))
        return kn_fail(call, "equation \"%s\": a dim is %lld in one place and %lld in another",
                       eq, (long long)a, (long long)b);
    int64_t s = 1, out_numel = 1;
    for (int k = e.out_rank - 1; k >= 0; k--) {
        stride[e.ninputs][e.out[k]] = s;
        s *= size[e.out[k]];
        out_numel *= size[e.out[k]];
        if (y->rank != e.out_rank || y->dims[k] != size[e.out[k]])
            return kn_fail(call, "the output was allocated with another shape than the "
                                 "equation's");
    }
    if (!kn_check_numel(call, 0, out_numel))
        return false;
    int labels[IR_EINSUM_LABELS], nl = 0;
    int64_t total = 1;
    for (int l = 0; l < IR_EINSUM_LABELS; l++)
        if (used[l]) {
            labels[nl++] = l;
            total *= size[l];
        }
    bool is_float = y->dtype == IR_F32;
    double *facc = is_float ? calloc((size_t)(out_numel ? out_numel : 1), sizeof *facc) : NULL;
    uint64_t *iacc = is_float ? NULL : calloc((size_t)(out_numel ? out_numel : 1), sizeof *iacc);
    if (is_float ? !facc : !iacc)
        return kn_fail(call, "cannot allocate %lld accumulators", (long long)out_numel);
    int64_t pos[IR_EINSUM_LABELS] = {0}, off[IR_EINSUM_MAX_INPUTS + 1] = {0};
    for (int64_t t = 0; t < total; t++) {
        double fp = 1;
        uint64_t ip = 1;
        for (int i = 0; i < e.ninputs; i++) {
            if (is_float)
                fp *= kn_get_f64(&call->inputs[i], off[i]);
            else
                ip *= (uint64_t)kn_get_int(&call->inputs[i], off[i]);
        }
        if (is_float)
            facc[off[e.ninputs]] += fp;
        else
            iacc[off[e.ninputs]] += ip;
        for (int k = nl - 1; k >= 0; k--) { /* the odometer over every label */
            int l = labels[k];
            for (int i = 0; i <= e.ninputs; i++)
                off[i] += stride[i][l];
            if (++pos[l] < size[l])
                break;
            for (int i = 0; i <= e.ninputs; i++)
                off[i] -= stride[i][l] * size[l];
            pos[l] = 0;
        }
    }
    for (int64_t o = 0; o < out_numel; o++) {
        if (is_float)
            ((float *)y->data)[o] = (float)facc[o];
        else
            kn_set_int(y, o, (int64_t)iacc[o]);
    }
    free(facc);
    free(iacc);
    return true;
}
