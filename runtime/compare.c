/* Comparing a result with a reference (runtime/runtime.h): the rule `fuserule verify`,
 * `fuserule test` and `fuserule check --prove` judge a fused graph by. */
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>

/* The one table of tolerances. f32, f16 and bf16: ONNX Runtime's fused-kernel tests
 * (shared/ANCHORS.md), since a fused kernel adds in another order and only float rounding may
 * differ. f64: PyTorch's assert_close defaults for float64 (an f64 graph computes in double
 * throughout, so only double rounding may differ). Integers and bool must agree exactly. */
rt_tolerance rt_tolerance_of(ir_dtype dt)
{
    switch (dt) {
    case IR_F32: return (rt_tolerance){.rtol = 1e-4, .atol = 1e-5};
    case IR_F16: return (rt_tolerance){.rtol = 1e-3, .atol = 2.5e-3};
    case IR_BF16: return (rt_tolerance){.rtol = 0.01, .atol = 0.02};
    case IR_F64: return (rt_tolerance){.rtol = 1e-7, .atol = 1e-7};
    default: return (rt_tolerance){.rtol = 0, .atol = 0};
    }
}

rt_comparison rt_compare_with(const rt_tensor *got, const rt_tensor *want, rt_tolerance tol,
                              double slack)
{
    rt_comparison c = {0};
    size_t n = rt_tensor_numel(want);
    for (size_t i = 0; i < n; i++) {
        double a = rt_tensor_get(got, i), b = rt_tensor_get(want, i);
        if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
            bool same =
                (isnan(a) && isnan(b)) || (isinf(a) && isinf(b) && signbit(a) == signbit(b));
            if (!same && c.special++ == 0)
                c.at = i;
            continue;
        }
        double diff = fabs(a - b), allowed = tol.atol + tol.rtol * fabs(b) + slack;
        double ratio = allowed > 0 ? diff / allowed : (diff > 0 ? INFINITY : 0);
        if (diff > c.worst_diff)
            c.worst_diff = diff;
        if (ratio > c.worst_ratio && !c.special) {
            c.worst_ratio = ratio;
            c.at = i;
        }
        c.bad += diff > allowed;
    }
    return c;
}

rt_judgement rt_judge(const rt_tensor *original, const rt_tensor *fused, const rt_tensor *ref,
                      rt_tolerance tol)
{
    rt_judgement j = {0};
    rt_comparison direct = rt_compare_with(fused, original, tol, 0);
    j.c = direct;
    if (ref) {
        j.original_distance = rt_compare_with(original, ref, tol, 0).worst_diff;
        j.c = rt_compare_with(fused, ref, tol, j.original_distance);
        j.c.special = direct.special; /* NaN/Inf: where the original run has them */
        if (direct.special)
            j.c.at = direct.at;
    }
    j.bad = j.c.special + j.c.bad;
    return j;
}

const char *rt_format_index(const ir_type *t, size_t flat, char *buf, size_t size)
{
    size_t index[IR_MAX_RANK] = {0};
    for (int d = t->rank - 1; d >= 0; d--) {
        size_t dim = t->dims[d] > 0 ? (size_t)t->dims[d] : 1;
        index[d] = flat % dim;
        flat /= dim;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %zu" : "%zu", index[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}
