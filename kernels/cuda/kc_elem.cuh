// Elements addressed by a dtype code (kc_elem), with the CPU reference's conversions
// (kernels/cpu/cpu_util.c): loads as double or int64, integers wrapped as a C cast to the narrower
// type does, floats to integers truncated and saturated (NaN to 0), floats stored through f32 and
// then rounded to the 16-bit storage. Shared by the typed kernels (typed.cu) and the integer and
// generator kernels (integer.cu, generate.cu).
#ifndef FUSERULE_KERNELS_CUDA_KC_ELEM_CUH
#define FUSERULE_KERNELS_CUDA_KC_ELEM_CUH

#include "kernels/cuda/kc_common.cuh"

__device__ __forceinline__ bool elem_is_float(kc_elem t)
{
    return t == KC_E_F32 || t == KC_E_F16 || t == KC_E_BF16;
}

__device__ __forceinline__ double load_f64(const void *p, kc_elem t, int64_t i)
{
    switch (t) {
    case KC_E_F32: return ((const float *)p)[i];
    case KC_E_F16: return __half2float(((const __half *)p)[i]);
    case KC_E_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case KC_E_I8: return ((const int8_t *)p)[i];
    case KC_E_U8:
    case KC_E_BOOL: return ((const uint8_t *)p)[i];
    case KC_E_I32: return ((const int32_t *)p)[i];
    case KC_E_I64: return (double)((const int64_t *)p)[i];
    }
    return 0;
}

__device__ __forceinline__ int64_t load_i64(const void *p, kc_elem t, int64_t i)
{
    switch (t) {
    case KC_E_I8: return ((const int8_t *)p)[i];
    case KC_E_U8:
    case KC_E_BOOL: return ((const uint8_t *)p)[i];
    case KC_E_I32: return ((const int32_t *)p)[i];
    case KC_E_I64: return ((const int64_t *)p)[i];
    default: return 0;
    }
}

// An int64 wrapped to t as a C cast to the narrower type does (bool: != 0).
__device__ __forceinline__ int64_t wrap_int(int64_t v, kc_elem t)
{
    switch (t) {
    case KC_E_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case KC_E_U8: return (uint8_t)(uint64_t)v;
    case KC_E_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case KC_E_BOOL: return v != 0;
    default: return v;
    }
}

// A float to integer type t: truncated, saturated, NaN to 0; bool: v != 0 (NaN is true).
__device__ __forceinline__ int64_t float_to_int(double v, kc_elem t)
{
    if (t == KC_E_BOOL)
        return v != 0;
    if (v != v)
        return 0;
    double lo = t == KC_E_I8    ? -128.0
                : t == KC_E_U8  ? 0.0
                : t == KC_E_I32 ? -2147483648.0
                                : -9223372036854775808.0;
    double hi = t == KC_E_I8    ? 127.0
                : t == KC_E_U8  ? 255.0
                : t == KC_E_I32 ? 2147483647.0
                                : 9223372036854774784.0; // the largest double below 2^63
    v = trunc(v);
    return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

__device__ __forceinline__ void store_int(void *p, kc_elem t, int64_t i, int64_t v)
{
    switch (t) {
    case KC_E_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case KC_E_U8:
    case KC_E_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case KC_E_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KC_E_I64: ((int64_t *)p)[i] = v; break;
    default: break;
    }
}

__device__ __forceinline__ void store_float(void *p, kc_elem t, int64_t i, float v)
{
    switch (t) {
    case KC_E_F32: ((float *)p)[i] = v; break;
    case KC_E_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    case KC_E_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    default: break;
    }
}

#endif
