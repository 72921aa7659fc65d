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
    ir_random_fill(s, low, high, IR_F32, y->data, (size_t)y->numel);
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
