/* Folding weights in one pass (rewrite/weights.c): ir_const_scale_elems gives, byte for byte, what the
 * double path gives (each element read into a double, multiplied, stored by rw_const_store), and
 * counts the same non-finite results that make rw_const_store refuse, at the same first element;
 * for every float dtype, with values that overflow, infinities and NaNs among the inputs. */
#include "rewrite/internal.h"
#include "tests/unit.h"

#include "base/check.h"
#include "base/half.h"
#include "ir/infer_util.h"

#include <stdlib.h>

enum { N = 4099 }; /* not a multiple of a vector width or of the check's block */

/* Element i of a float dtype's bytes, decoded independently of weights.c. */
static double decode(ir_dtype dt, const unsigned char *p, size_t i)
{
    if (dt == IR_F32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    if (dt == IR_F64) {
        double d;
        memcpy(&d, p + 8 * i, 8);
        return d;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return dt == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

/* count elements of dt: pseudo-random values around magnitude 1, and the special ones */
static void fill(ir_dtype dt, unsigned char *p, size_t count, unsigned seed, bool specials)
{
    uint64_t state = seed * 0x9e3779b97f4a7c15u + 1;
    for (size_t i = 0; i < count; i++) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        double x = ((double)(state >> 11) * 0x1.0p-53 - 0.5) * 8;
        if (specials && i % 997 == 5)
            x = i % 3 == 0 ? INFINITY : i % 3 == 1 ? -NAN : 60000;
        if (dt == IR_F32) {
            float f = (float)x;
            memcpy(p + 4 * i, &f, 4);
        } else if (dt == IR_F64) {
            memcpy(p + 8 * i, &x, 8);
        } else {
            uint16_t h = dt == IR_F16 ? f32_to_f16((float)x) : f32_to_bf16((float)x);
            memcpy(p + 2 * i, &h, 2);
        }
    }
}

static void check_one(ir_dtype dt, double s, bool specials, unsigned seed)
{
    size_t size = ir_dtype_size(dt);
    unsigned char *in = malloc(N * size + 1);
    CHECK(in != NULL);
    fill(dt, in + 1, N, seed, specials); /* unaligned, as bytes in a mapped file are */
    double *x = malloc(N * sizeof *x);
    for (size_t i = 0; i < N; i++)
        x[i] = decode(dt, in + 1, i) * s;
    ir_type type = {.dtype = dt, .rank = 1, .dims = {N}};
    ir_value value = {.kind = IR_VALUE_CONST, .type = &type};
    rw_newconst ref = {.stem = "w", .value = &value}, got = ref;
    char why_ref[512] = "", why_got[512] = "";
    bool ok_ref = rw_const_store(&ref, x, N, "fold_bn", why_ref);
    CHECK(rw_const_alloc(&got, N, why_got));
    /* in two runs, as fold_bn scales a channel at a time */
    size_t bad = ir_const_scale_elems(dt, got.data, in + 1, 0, N / 3, s) +
                 ir_const_scale_elems(dt, got.data, in + 1, N / 3, N - N / 3, s);
    CHECK_INT(got.nbytes, N * size);
    CHECK_INT(bad == 0, ok_ref);
    if (ok_ref) {
        CHECK(memcmp(got.data, ref.data, N * size) == 0);
        CHECK_INT(rw_first_not_finite(dt, got.data, N), -1);
    } else {
        int64_t first = rw_first_not_finite(dt, got.data, N);
        CHECK(first >= 0);
        if (first >= 0) {
            CHECK(!rw_not_finite(why_got, "fold_bn", first, "w",
                                 ir_const_element(in + 1, dt, first) * s, dt));
            CHECK_STR(why_got, why_ref);
        }
    }
    free(ref.data);
    free(got.data);
    free(x);
    free(in);
}

static void test_scale_matches_double_path(void)
{
    static const ir_dtype dts[] = {IR_F32, IR_F64, IR_F16, IR_BF16};
    static const double scales[] = {0.7310585786300049, -1.25, 1e-3, 3.0e4, 1e300};
    for (size_t d = 0; d < FR_COUNT_OF(dts); d++)
        for (size_t k = 0; k < FR_COUNT_OF(scales); k++)
            for (int specials = 0; specials < 2; specials++)
                check_one(dts[d], scales[k], specials, (unsigned)(d * 10 + k));
}

static void test_first_not_finite(void)
{
    float f[9000];
    for (size_t i = 0; i < FR_COUNT_OF(f); i++)
        f[i] = (float)i;
    CHECK_INT(rw_first_not_finite(IR_F32, f, FR_COUNT_OF(f)), -1);
    f[8500] = NAN;
    f[8999] = INFINITY;
    CHECK_INT(rw_first_not_finite(IR_F32, f, FR_COUNT_OF(f)), 8500);
    f[0] = -INFINITY;
    CHECK_INT(rw_first_not_finite(IR_F32, f, FR_COUNT_OF(f)), 0);
    CHECK_INT(rw_first_not_finite(IR_F32, f, 0), -1);
}

int main(void)
{
    RUN(test_scale_matches_double_path);
    RUN(test_first_not_finite);
    return unit_finish();
}
