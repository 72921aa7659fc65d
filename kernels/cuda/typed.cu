// Elementwise ops across dtypes: Cast, the comparisons (Equal, Less, Greater, LessOrEqual,
// GreaterOrEqual: bool out), the logical And / Or / Xor / Not, IsNaN and IsInf, with the CPU
// reference's conversions (kernels/cpu/onnx_elementwise.c, cpu_util.c): to a float type the
// nearest value (through double, then float, then the 16-bit storage, as the CPU's f32 result is
// rounded to storage); from a float to an integer truncation toward zero, saturated, NaN to 0;
// between integers C's wrapping; to bool != 0 (NaN is true). Elements are addressed by a dtype
// code, so one kernel serves every pair; inputs broadcast (kc_bcast).
#include "kernels/cuda/kc_elem.cuh"

__global__ void cast_kernel(const void *x, kc_elem xt, void *y, kc_elem yt, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (elem_is_float(yt))
            store_float(y, yt, i, (float)load_f64(x, xt, i));
        else if (elem_is_float(xt))
            store_int(y, yt, i, float_to_int((double)(float)load_f64(x, xt, i), yt));
        else
            store_int(y, yt, i, wrap_int(load_i64(x, xt, i), yt));
    }
}

// y = a OP b (bool), or y = !a for KC_CMP_NOT; floats compared as doubles (exact for f32 and the
// 16-bit types; NaN unequal and unordered, so every comparison with it is false), integers and
// bools as int64 (And / Or / Xor on bools, any nonzero byte true as on the CPU).
template <typename V> __device__ __forceinline__ bool compare_values(kc_compare_op op, V u, V v)
{
    switch (op) {
    case KC_CMP_EQUAL: return u == v;
    case KC_CMP_LESS: return u < v;
    case KC_CMP_GREATER: return u > v;
    case KC_CMP_LESS_EQUAL: return u <= v;
    case KC_CMP_GREATER_EQUAL: return u >= v;
    case KC_CMP_AND: return u != 0 && v != 0;
    case KC_CMP_OR: return u != 0 || v != 0;
    case KC_CMP_XOR: return (u != 0) != (v != 0);
    default: return false;
    }
}

__global__ void compare_kernel(kc_compare_op op, const void *a, kc_bcast ab, const void *b,
                               kc_bcast bb, kc_elem t, uint8_t *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ia = kc_bcast_offset(ab, i);
        if (op == KC_CMP_NOT) {
            y[i] = ((const uint8_t *)a)[ia] == 0;
            continue;
        }
        if (op > KC_CMP_NOT) { // IsNaN, IsInf: a float a
            double v = load_f64(a, t, ia);
            y[i] = op == KC_CMP_ISNAN       ? v != v
                   : op == KC_CMP_ISINF     ? isinf(v)
                   : op == KC_CMP_ISINF_POS ? v == INFINITY
                                            : v == -INFINITY;
            continue;
        }
        int64_t ib = kc_bcast_offset(bb, i);
        y[i] = elem_is_float(t) ? compare_values(op, load_f64(a, t, ia), load_f64(b, t, ib))
                                : compare_values(op, load_i64(a, t, ia), load_i64(b, t, ib));
    }
}

bool kc_cast(kc_context *ctx, const void *x, kc_elem xt, void *y, kc_elem yt, int64_t n)
{
    if (n == 0)
        return true;
    cast_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(x, xt, y, yt, n);
    return KC_LAUNCHED(ctx);
}

bool kc_compare(kc_context *ctx, kc_compare_op op, const kc_tensor *a, const kc_tensor *b,
                kc_elem t, kc_tensor *y)
{
    if (y->numel == 0)
        return true;
    kc_bcast ab, bb = {};
    if (!kc_bcast_make(a, y->dims, y->rank, &ab) ||
        (op < KC_CMP_NOT && !kc_bcast_make(b, y->dims, y->rank, &bb)))
        return KC_FAIL(ctx, "compare: an operand does not broadcast to Y");
    compare_kernel<<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
        op, a->data, ab, op >= KC_CMP_NOT ? nullptr : b->data, bb, t, (uint8_t *)y->data, y->numel);
    return KC_LAUNCHED(ctx);
}
