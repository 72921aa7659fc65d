/* Numpy broadcasting for the CPU kernels (kernels/cpu/cpu_util.h). */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numpy broadcasting -------------------------------------------------------------------- */

/* Output dims and per-operand strides, right-aligned, before merging. */
static bool bcast_layout(const kn_tensor *out, const kn_tensor *const *ins, int ninputs,
                         int64_t (*full)[IR_MAX_RANK])
{
    for (int k = 0; k < ninputs; k++) {
        const kn_tensor *t = ins[k];
        if (t->rank > out->rank)
            return false;
        int64_t s = 1;
        for (int d = out->rank - 1; d >= 0; d--) {
            int td = d - (out->rank - t->rank);
            int64_t dim = td >= 0 ? t->dims[td] : 1;
            if (dim != out->dims[d] && dim != 1)
                return false;
            full[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    return true;
}

bool kn_bcast_init(kn_bcast *it, const kn_tensor *out, const kn_tensor *const *ins, int ninputs)
{
    FR_CHECK(ninputs >= 1 && ninputs <= KN_BCAST_MAX_INPUTS);
    int64_t full[KN_BCAST_MAX_INPUTS][IR_MAX_RANK];
    if (!bcast_layout(out, ins, ninputs, full))
        return false;
    memset(it, 0, sizeof *it);
    it->ninputs = ninputs;
    /* Keep the dims of size other than 1, merging a dim into the previous kept one when every
     * operand steps over the pair as one contiguous (or fully broadcast) dim. */
    int r = 0;
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1)
            continue;
        bool merge = r > 0;
        for (int k = 0; k < ninputs && merge; k++)
            merge = it->strides[k][r - 1] == full[k][d] * out->dims[d];
        if (merge) {
            it->dims[r - 1] *= out->dims[d];
            for (int k = 0; k < ninputs; k++)
                it->strides[k][r - 1] = full[k][d];
            continue;
        }
        it->dims[r] = out->dims[d];
        for (int k = 0; k < ninputs; k++)
            it->strides[k][r] = full[k][d];
        r++;
    }
    if (r == 0) { /* a scalar, or all dims 1: one run of one element */
        it->dims[0] = 1;
        r = 1;
    }
    it->rank = r;
    it->run = it->dims[r - 1];
    for (int k = 0; k < ninputs; k++)
        it->step[k] = it->strides[k][r - 1];
    return true;
}

void kn_bcast_next(kn_bcast *it)
{
    for (int d = it->rank - 2; d >= 0; d--) {
        for (int k = 0; k < it->ninputs; k++)
            it->off[k] += it->strides[k][d];
        if (++it->idx[d] < it->dims[d])
            return;
        for (int k = 0; k < it->ninputs; k++)
            it->off[k] -= it->strides[k][d] * it->dims[d];
        it->idx[d] = 0;
    }
}

#define BCAST_COPY(T)                                                                              \
    do {                                                                                           \
        const T *s = src->data;                                                                    \
        T *y = dst->data;                                                                          \
        for (int64_t o = 0; o < dst->numel; o += it.run, kn_bcast_next(&it))                       \
            for (int64_t i = 0; i < it.run; i++)                                                   \
                y[o + i] = s[it.off[0] + i * it.step[0]];                                          \
    } while (0)

bool kn_broadcast_copy(const kn_tensor *src, kn_tensor *dst, size_t elem_size)
{
    kn_bcast it;
    const kn_tensor *ins[1] = {src};
    if (!kn_bcast_init(&it, dst, ins, 1))
        return false;
    switch (elem_size) {
    case 1: BCAST_COPY(uint8_t); break;
    case 2: BCAST_COPY(uint16_t); break;
    case 4: BCAST_COPY(uint32_t); break;
    case 8: BCAST_COPY(uint64_t); break;
    default: FR_UNREACHABLE();
    }
    return true;
}
