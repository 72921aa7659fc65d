/* RandomUniform and RandomUniformLike: uniform in [low, high) from the project's seeded generator
 * (ir_random_fill), so that a run is reproducible: `seed` rounded to an integer, 0 without one
 * (or beyond int64).
 * The numbers are not ONNX Runtime's (ONNX leaves the generator open), so these outputs are no
 * reference to compare another runtime with; their rows carry IR_OPF_RANDOM. */
#include "kernels/cpu/cpu_util.h"

static bool run_random(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    double low = ir_get_float(call->node, "low"), high = ir_get_float(call->node, "high");
    double seed = ir_get_float(call->node, "seed");
    if (y->dtype != IR_F32)
        return kn_fail(call, "the output must be a float tensor");
    uint64_t s = fabs(seed) < 9e18 ? (uint64_t)(int64_t)llround(seed) : 0; /* NaN: absent */
    /* the generator writes f32; _Float32 stays 32-bit where a build widens `float` (main's f64
     * build of the kernels), and each number is then stored as the kernel's float */
    float *out = y->data;
    for (int64_t i = 0; i < y->numel; i++) {
        _Float32 v;
        ir_random_fill_at(s, (uint64_t)i, low, high, IR_F32, &v, 1);
        out[i] = (float)v;
    }
    return true;
}

bool kn_cpu_RandomUniform(const kn_call *call)
{
    return run_random(call);
}
bool kn_cpu_RandomUniformLike(const kn_call *call)
{
    return run_random(call);
}
