/* The one place where the prover judges an output of an instance: the original graph's value and
 * the rewritten graph's value in, a verdict and the worst element out. Every comparison the prover
 * makes goes through pv_judge, so that the judge can change in one place.
 *
 * Today the rewritten side is judged against the original with `fuserule verify`'s rules (as
 * rt_compare: NaN and infinities, with their sign, at the same places, then |rewritten -
 * original| <= atol + rtol |original| with the output dtype's tolerances), widened for inputs
 * scaled by s > 1: both sides' rounding grows with the magnitudes, relative to the output by up to
 * s (a softmax of scores s^2 times larger), absolute by up to s^2 (a sum of products of two scaled
 * inputs that cancels), so the tolerance is s^2 atol + s rtol |original|. A rule wrong only for
 * large magnitudes is wrong by far more (Clip(x, 0, 6) for Relu: by x - 6).
 *
 * The planned judge (issue 17, item 5) evaluates the original pattern in f64 and judges both sides
 * against that reference: the rewritten side fails where it is further from the reference than the
 * tolerance allows and than the original itself is. That catches a rule wrong by 3e-5 on a few
 * elements without failing a fused kernel for rounding better than the unfused chain, and needs
 * no slack. It needs the reference's values here as a third input; nothing else in the prover
 * changes. */
#include "prove/internal.h"

#include <math.h>

rt_tolerance pv_tolerance(ir_dtype dt, double scale)
{
    rt_tolerance tol = rt_tolerance_of(dt);
    if (scale > 1) {
        tol.atol *= scale * scale;
        tol.rtol *= scale;
    }
    return tol;
}

pv_judgment pv_judge(const rt_tensor *original, const rt_tensor *rewritten, double scale)
{
    pv_judgment j = {0};
    rt_tolerance tol = pv_tolerance(original->type.dtype, scale);
    double worst_ratio = 0;
    size_t n = rt_tensor_numel(original);
    for (size_t i = 0; i < n; i++) {
        double a = rt_tensor_get(rewritten, i), b = rt_tensor_get(original, i);
        if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
            bool same =
                (isnan(a) && isnan(b)) || (isinf(a) && isinf(b) && signbit(a) == signbit(b));
            if (!same && j.special++ == 0)
                j.at = i;
            continue;
        }
        double diff = fabs(a - b), allowed = tol.atol + tol.rtol * fabs(b);
        double ratio = allowed > 0 ? diff / allowed : (diff > 0 ? INFINITY : 0);
        if (diff > j.worst_diff)
            j.worst_diff = diff;
        if (ratio > worst_ratio && !j.special) {
            worst_ratio = ratio;
            j.at = i;
        }
        j.bad += diff > allowed;
    }
    j.ok = !j.bad && !j.special;
    return j;
}
