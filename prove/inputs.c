/* The inputs each instance runs on. The executor's own draw (floats uniform in [-1, 1), what
 * `fuserule verify --seed S` uses) misses rules that are wrong only for large magnitudes (Clip(x,
 * 0, 6) taken for Relu, x * (x/6 + 0.5) for HardSwish) or only at special values (Where(x > 0, x,
 * 0) for Relu at NaN), so every instance also runs with its float inputs scaled by 8 and by 64, and
 * with a few NaN, +-inf, -0 and 0 planted. Integer and bool inputs (indices, quantized data,
 * masks) stay as drawn. Scaled by 1/1024 too: a normalization whose epsilon is misplaced differs
 * where the statistics are small. Special values go into data only, not into a weight the generator made
 * a graph input: a kernel that skips a conv's padding (0 * inf) is not a wrong rule. */
#include "prove/internal.h"

#include "base/check.h"
#include "base/half.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void set_element(rt_tensor *t, size_t i, double x)
{
    unsigned char *p = (unsigned char *)t->data + i * ir_dtype_size(t->type.dtype);
    float f = (float)x;
    uint16_t h;
    switch (t->type.dtype) {
    case IR_F32: memcpy(p, &f, sizeof f); break;
    case IR_F16: h = f32_to_f16(f), memcpy(p, &h, sizeof h); break;
    case IR_BF16: h = f32_to_bf16(f), memcpy(p, &h, sizeof h); break;
    default: break;
    }
}

static bool is_float_storage(ir_dtype dt)
{
    return dt == IR_F32 || dt == IR_F16 || dt == IR_BF16;
}

/* Two elements of t (one for a one-element tensor) become special values at two places drawn from
 * rng: a NaN, and one of +inf, -inf, -0 and 0. */
static void plant(rt_tensor *t, pv_rng *rng)
{
    static const double special[] = {INFINITY, -INFINITY, -0.0, 0.0};
    size_t n = rt_tensor_numel(t);
    if (!n)
        return;
    uint32_t at = pv_rng_below(rng, (uint32_t)n);
    set_element(t, at, NAN);
    if (n > 1) /* another place: the NaN stays */
        set_element(t, (at + 1 + pv_rng_below(rng, (uint32_t)n - 1)) % n,
                    special[pv_rng_below(rng, FR_COUNT_OF(special))]);
}

double pv_inputs_scale(pv_inputs_kind kind)
{
    return kind == PV_INPUTS_TIMES8 ? 8 : kind == PV_INPUTS_TIMES64 ? 64 : 1;
}

/* The factor the float inputs are multiplied by. */
static double factor(pv_inputs_kind kind)
{
    return kind == PV_INPUTS_SMALL ? 1.0 / 1024 : pv_inputs_scale(kind);
}

rt_tensor *pv_inputs_variant(const rt_tensor *drawn, size_t n, pv_inputs_kind kind, uint64_t seed,
                             const bool *is_param, ar_arena *arena)
{
    rt_tensor *v = ar_alloc(arena, (n ? n : 1) * sizeof *v);
    pv_rng rng = {seed ^ 0x5bd1e995u};
    for (size_t i = 0; i < n; i++) {
        v[i] = drawn[i];
        v[i].data = ar_alloc(arena, drawn[i].nbytes ? drawn[i].nbytes : 1);
        memcpy(v[i].data, drawn[i].data, drawn[i].nbytes);
        if (!is_float_storage(v[i].type.dtype))
            continue;
        double scale = factor(kind);
        if (scale != 1)
            for (size_t k = 0; k < rt_tensor_numel(&v[i]); k++)
                set_element(&v[i], k, scale * rt_tensor_get(&v[i], k));
        if (kind == PV_INPUTS_SPECIAL && !(is_param && is_param[i]))
            plant(&v[i], &rng);
    }
    return v;
}

void pv_inputs_describe(pv_inputs_kind kind, uint64_t seed, FILE *out)
{
    fprintf(out, "what `fuserule verify --seed %" PRIu64 "` draws for this graph", seed);
    switch (kind) {
    case PV_INPUTS_TIMES8: fputs(", scaled by 8", out); break;
    case PV_INPUTS_TIMES64: fputs(", scaled by 64", out); break;
    case PV_INPUTS_SMALL: fputs(", scaled by 1/1024", out); break;
    case PV_INPUTS_SPECIAL: fputs(", with NaN, infinities and zeros planted", out); break;
    default: break;
    }
}
