/* IEEE binary16 and bfloat16 storage conversions (round to nearest even). Arithmetic is fp32. */
#ifndef FUSERULE_BASE_HALF_H
#define FUSERULE_BASE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t half_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float half_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) /* inf or nan */
        return half_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return half_bits_f32(sign);
        float f = (float)mant * (1.0f / 16777216.0f); /* subnormal: mant * 2^-24 */
        return sign ? -f : f;
    }
    return half_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

static inline uint16_t f32_to_f16(float f)
{
    uint32_t u = half_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* nan: keep it a quiet nan */
        return sign | 0x7e00u;
    if (abs >= 0x477ff000u) /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (abs < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        float a = half_bits_f32(abs);
        /* a * 2^24, rounded to nearest even by the fp32 addition of a large power of two */
        float scaled = a * 16777216.0f + 8388608.0f;
        uint32_t m = half_f32_bits(scaled) - 0x4b000000u;
        return sign | (uint16_t)m;
    }
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return sign | (uint16_t)((rounded - 0x38000000u) >> 13);
}

static inline float bf16_to_f32(uint16_t b)
{
    return half_bits_f32((uint32_t)b << 16);
}

static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u = half_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
