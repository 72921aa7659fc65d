/* The element kernels of scaled constants (ir_const_set_scaled: a folded weight computed when
 * read, ir/consts.c), which rewrite's folds share: a weight computed when written has the bytes it
 * would have had computed at once. */
#include "ir/ir.h"

#include "base/check.h"
#include "base/half.h"

#include <math.h>
#include <string.h>

/* Elements per block: loops over a fixed count the compiler vectorizes at -O2. */
enum { BLOCK = 64 };

size_t ir_const_scale_elems(ir_dtype dt, void *out, const void *in, size_t first, size_t count,
                            double s)
{
    size_t size = ir_dtype_size(dt), bad = 0, k = 0;
    const unsigned char *src = (const unsigned char *)in + size * first;
    unsigned char *dst = (unsigned char *)out + size * first;
    switch (dt) {
    case IR_F32: /* through local blocks: no aliasing to check, no alignment assumed */
        for (; k + BLOCK <= count; k += BLOCK) {
            float a[BLOCK], r[BLOCK];
            uint32_t u[BLOCK], nb = 0;
            memcpy(a, src + 4 * k, sizeof a);
            for (int j = 0; j < BLOCK; j++)
                r[j] = (float)((double)a[j] * s);
            memcpy(dst + 4 * k, r, sizeof r);
            memcpy(u, r, sizeof u);
            for (int j = 0; j < BLOCK; j++)
                nb += (u[j] & 0x7f800000u) == 0x7f800000u;
            bad += nb;
        }
        for (; k < count; k++) {
            float f;
            memcpy(&f, src + 4 * k, 4);
            f = (float)((double)f * s);
            memcpy(dst + 4 * k, &f, 4);
            uint32_t u;
            memcpy(&u, &f, 4);
            bad += (u & 0x7f800000u) == 0x7f800000u;
        }
        return bad;
    case IR_F64:
        for (; k < count; k++) {
            double d;
            memcpy(&d, src + 8 * k, 8);
            d *= s;
            memcpy(dst + 8 * k, &d, 8);
            bad += !isfinite(d);
        }
        return bad;
    case IR_F16:
    case IR_BF16: {
        uint16_t mask = dt == IR_F16 ? 0x7c00u : 0x7f80u;
        for (; k < count; k++) {
            uint16_t h;
            memcpy(&h, src + 2 * k, 2);
            float f = (float)((double)(dt == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h)) * s);
            h = dt == IR_F16 ? f32_to_f16(f) : f32_to_bf16(f);
            memcpy(dst + 2 * k, &h, 2);
            bad += (h & mask) == mask;
        }
        return bad;
    }
    default: FR_UNREACHABLE(); return 0;
    }
}

/* The largest of the count elements' bits with the sign bit cleared: for a float encoding, the
 * order of the magnitudes, and at least the exponent mask for an infinity or a NaN. */
#define MAX_BITS(T, mask)                                                                          \
    do {                                                                                           \
        T acc = 0;                                                                                 \
        size_t k = 0;                                                                              \
        for (; k + BLOCK <= count; k += BLOCK) {                                                   \
            T u[BLOCK], m = 0;                                                                     \
            memcpy(u, p + sizeof(T) * k, sizeof u);                                                \
            for (int j = 0; j < BLOCK; j++) {                                                      \
                T a = (T)(u[j] & (mask));                                                          \
                m = a > m ? a : m;                                                                 \
            }                                                                                      \
            acc = m > acc ? m : acc;                                                               \
        }                                                                                          \
        for (; k < count; k++) {                                                                   \
            T a;                                                                                   \
            memcpy(&a, p + sizeof(T) * k, sizeof a);                                               \
            a = (T)(a & (mask));                                                                   \
            acc = a > acc ? a : acc;                                                               \
        }                                                                                          \
        bits = acc;                                                                                \
    } while (0)

double ir_const_max_abs(ir_dtype dt, const void *data, size_t count)
{
    const unsigned char *p = data;
    switch (dt) {
    case IR_F32: {
        uint32_t bits;
        MAX_BITS(uint32_t, 0x7fffffffu);
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    case IR_F64: {
        uint64_t bits;
        MAX_BITS(uint64_t, 0x7fffffffffffffffu);
        double d;
        memcpy(&d, &bits, 8);
        return d;
    }
    case IR_F16:
    case IR_BF16: {
        uint16_t bits;
        MAX_BITS(uint16_t, 0x7fffu);
        return dt == IR_F16 ? f16_to_f32(bits) : bf16_to_f32(bits);
    }
    default: FR_UNREACHABLE(); return 0;
    }
}
#undef MAX_BITS
