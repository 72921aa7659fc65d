// The integer forms of the arithmetic ops (Add, Sub, Mul, Div, Neg, Abs, Max, Min, Relu, Clip,
// Sign, Shrink), Mod (both forms, fmod on floats too), BitShift and the Bitwise* ops: one kernel
// addressing i8, u8, i32 and i64 (and f32/f16/bf16 for Mod's fmod) by a dtype code, with the CPU
// kernels' semantics (kernels/cpu/onnx_binary.c, onnx_elementwise.c, onnx_math.c). Every value is
// widened to int64 (u8 zero-extended), computed there with unsigned wrap-around where C would
// overflow, and wrapped back to the dtype as the CPU's narrowing casts do. Operands broadcast
// (kc_bcast). Zero divisors are refused on the host before the launch.
#include "kernels/cuda/kc_elem.cuh"

// a mod b for b != 0, as kernels/cpu/onnx_math.c's int_mod: with fmod_sign C's remainder (the
// dividend's sign), else Python's (the divisor's). b == -1 gives 0 (INT64_MIN % -1 overflows).
__device__ __forceinline__ int64_t int_mod(int64_t a, int64_t b, bool fmod_sign)
{
    if (b == -1)
        return 0;
    int64_t r = a % b;
    if (!fmod_sign && r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

__device__ __forceinline__ int64_t wrapped(uint64_t v)
{
    return (int64_t)v;
}

// The op on x (and z) widened to int64; the caller wraps the result to the dtype.
__device__ int64_t int_apply(kc_int_op op, int64_t x, int64_t z, kc_elem t, const kc_int_args &p)
{
    uint64_t ux = (uint64_t)x, uz = (uint64_t)z;
    switch (op) {
    case KC_INT_ADD: return wrapped(ux + uz);
    case KC_INT_SUB: return wrapped(ux - uz);
    case KC_INT_MUL: return wrapped(ux * uz);
    case KC_INT_DIV: return z == -1 ? wrapped(0 - ux) : x / z; // MIN / -1 wraps to MIN
    case KC_INT_MOD: return int_mod(x, z, false);
    case KC_INT_FMOD: return int_mod(x, z, true);
    case KC_INT_MAX: return z > x ? z : x;
    case KC_INT_MIN: return z < x ? z : x;
    case KC_INT_AND: return wrapped(ux & uz);
    case KC_INT_OR: return wrapped(ux | uz);
    case KC_INT_XOR: return wrapped(ux ^ uz);
    case KC_INT_SHL:
    case KC_INT_SHR: {
        uint64_t width = t == KC_E_U8 ? 8 : 64;
        return uz >= width ? 0 : wrapped(op == KC_INT_SHL ? ux << uz : ux >> uz);
    }
    case KC_INT_NEG: return wrapped(0 - ux);
    case KC_INT_ABS: return x < 0 ? wrapped(0 - ux) : x; // the most negative value stays itself
    case KC_INT_NOT: return wrapped(~ux);
    case KC_INT_SIGN: return (x > 0) - (x < 0);
    case KC_INT_RELU: return x > 0 ? x : 0;
    case KC_INT_CLIP: {
        int64_t v = x < p.lo ? p.lo : x;
        return v > p.hi ? p.hi : v;
    }
    default: return 0;
    }
}

__global__ void int_ew_kernel(kc_int_op op, const void *a, kc_bcast ab, const void *b, kc_bcast bb,
                              kc_elem t, kc_int_args p, void *y, int64_t n)
{
    bool unary = op >= KC_INT_NEG;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ia = kc_bcast_offset(ab, i), ib = unary ? 0 : kc_bcast_offset(bb, i);
        if (elem_is_float(t)) { // Mod with fmod = 1: fmod in double, as the CPU
            store_float(y, t, i, (float)fmod(load_f64(a, t, ia), load_f64(b, t, ib)));
        } else if (op == KC_INT_SHRINK) { // through double, stored truncated and saturated
            double v = (double)load_i64(a, t, ia);
            double r = v < -p.lambd ? v + p.bias : v > p.lambd ? v - p.bias : 0.0;
            store_int(y, t, i, float_to_int(r, t));
        } else {
            int64_t z = unary ? 0 : load_i64(b, t, ib);
            store_int(y, t, i, wrap_int(int_apply(op, load_i64(a, t, ia), z, t, p), t));
        }
    }
}

bool kc_int_ew(kc_context *ctx, kc_int_op op, const kc_tensor *a, const kc_tensor *b, kc_elem t,
               const kc_int_args *args, kc_tensor *y)
{
    if (y->numel == 0)
        return true;
    bool unary = op >= KC_INT_NEG;
    kc_bcast ab, bb = {};
    if (!kc_bcast_make(a, y->dims, y->rank, &ab) ||
        (!unary && !kc_bcast_make(b, y->dims, y->rank, &bb)))
        return KC_FAIL(ctx, "integer op: an operand does not broadcast to Y");
    kc_int_args p = args ? *args : kc_int_args{};
    int_ew_kernel<<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
        op, a->data, ab, unary ? nullptr : b->data, bb, t, p, y->data, y->numel);
    return KC_LAUNCHED(ctx);
}
