/* Comparing a result with a reference (runtime/runtime.h): the rule `fuserule verify` and
 * `fuserule check --prove` both judge a fused graph by. */
#include "runtime/runtime.h"

#include <math.h>

/* The tolerances of ONNX Runtime's fused-kernel tests (shared/ANCHORS.md): a fused kernel adds
 * in another order, and only float rounding may differ. Integers must agree exactly. */
rt_tolerance rt_tolerance_of(ir_dtype dt)
{
    switch (dt) {
    case IR_F32: return (rt_tolerance){1e-5, 1e-4};
    case IR_F16: return (rt_tolerance){2.5e-3, 1e-3};
    case IR_BF16: return (rt_tolerance){0.02, 0.01};
    default: return (rt_tolerance){0, 0};
    }
}

rt_comparison rt_compare(const rt_tensor *got, const rt_tensor *want)
{
    rt_comparison c = {0};
    rt_tolerance tol = rt_tolerance_of(want->type.dtype);
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
        double diff = fabs(a - b), allowed = tol.atol + tol.rtol * fabs(b);
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
