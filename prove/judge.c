/* The one place where the prover judges an output of an instance: the original graph's value, the
 * rewritten graph's value and the f64 reference's in, a verdict and the worst element out. Every
 * comparison the prover makes goes through pv_judge, and pv_judge through rt_judge
 * (runtime/compare.c), the rule `fuserule verify` and `fuserule test` judge by.
 *
 * The reference is the ORIGINAL graph evaluated in f64 (rt_run_reference): what the pattern
 * computes, without f32 rounding. Both sides are judged against it: the original's own worst
 * distance from it (its rounding on this instance) is measured, and the rewritten side passes where
 * each element is within the tolerance of the f64 value plus that distance. So the rewritten side
 * may round as badly as the unfused chain did, and a little more, but it may not compute something
 * else.
 *
 * The tolerance is tighter than verify's for f32 outputs. Verify's (ONNX Runtime's 1e-5 + 1e-4
 * |x|) is for two f32 computations judged against each other, for models with reductions over
 * thousands of elements; an instance here has a few hundred, and its original's rounding is already
 * in the allowance. A tenth of it (1e-6 + 1e-5 |x|, still over 100 f32 ulps) catches a rule wrong
 * by 3e-5 (GELU's sqrt(2) written as 1.414) that verify's tolerance hides below 1e-4 |x|, while a
 * fused kernel that adds in another order stays far inside. 16-bit outputs keep their dtype's
 * tolerance: one step of their rounding is about that, and a fused kernel may land on the
 * neighbouring value.
 *
 * On inputs scaled by s > 1 both sides' rounding grows with the magnitudes, relative to the output
 * by up to s (a softmax of scores s^2 times larger), absolute by up to s^2 (a sum of products of two
 * scaled inputs that cancels), so the tolerance is s^2 atol + s rtol |x|. A rule wrong only for
 * large magnitudes is wrong by far more (Clip(x, 0, 6) for Relu: by x - 6).
 *
 * Without a reference (an integer output, or an original the f64 evaluator cannot run) the
 * rewritten side is judged against the original directly with verify's tolerance, as
 * `fuserule verify --no-reference` does. */
#include "prove/internal.h"

/* How much tighter than verify's tolerance an f32 output is judged against the reference. */
enum { REFERENCE_TIGHTER = 10 };

rt_tolerance pv_tolerance(ir_dtype dt, double scale, bool reference)
{
    rt_tolerance tol = rt_tolerance_of(dt);
    if (reference && dt == IR_F32) {
        tol.atol /= REFERENCE_TIGHTER;
        tol.rtol /= REFERENCE_TIGHTER;
    }
    if (scale > 1) {
        tol.atol *= scale * scale;
        tol.rtol *= scale;
    }
    return tol;
}

pv_judgment pv_judge(const rt_tensor *original, const rt_tensor *rewritten, const rt_tensor *ref,
                     double scale)
{
    pv_judgment j = {.reference = ref != NULL};
    j.tol = pv_tolerance(original->type.dtype, scale, ref != NULL);
    rt_judgement r = rt_judge(original, rewritten, ref, j.tol);
    j.ok = r.bad == 0;
    j.special = r.c.special;
    j.bad = r.c.bad;
    j.at = r.c.at;
    j.worst_diff = r.c.worst_diff;
    j.original_distance = r.original_distance;
    return j;
}
