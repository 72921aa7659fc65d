// Tensors made from attributes, shapes and scalars: ConstantOfShape, Shape and Size (values known
// on the host, passed in the launch), Range, EyeLike, the Hann/Hamming/Blackman windows, OneHot,
// ReverseSequence and RandomUniform(Like), each as the CPU kernel computes it (kernels/cpu/
// onnx_shape.c, onnx_index.c, onnx_nn_more.c, onnx_random.c). Float arithmetic that the CPU does
// in separate roundings uses the explicitly rounded intrinsics (__fmul_rn, __dadd_rn, ...), so
// that nvcc cannot contract it into a fused multiply-add and round once where the CPU rounds
// twice. Grid-stride loops of KC_THREADS threads.
#include "kernels/cuda/kc_elem.cuh"

#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

// Element i of y (esize bytes) set to the low esize bytes of bits.
__device__ __forceinline__ void put_bits(void *y, size_t esize, int64_t i, uint64_t bits)
{
    switch (esize) {
    case 1: ((uint8_t *)y)[i] = (uint8_t)bits; break;
    case 2: ((uint16_t *)y)[i] = (uint16_t)bits; break;
    case 4: ((uint32_t *)y)[i] = (uint32_t)bits; break;
    default: ((uint64_t *)y)[i] = bits; break;
    }
}

__global__ void gen_fill_kernel(void *y, size_t esize, uint64_t bits, int64_t n)
{
    GRID_STRIDE(i, n)
    put_bits(y, esize, i, bits);
}

struct gen_values {
    int64_t v[KC_MAX_RANK];
};

__global__ void gen_set_i64_kernel(gen_values vals, int n, int64_t *y)
{
    GRID_STRIDE(i, n)
    y[i] = vals.v[i];
}

// Floats: start + (float)i * delta in float, two roundings (numpy's arange, the CPU's loop);
// integers: start + i * delta in 64 bits, wrapped to t (the CPU's __int128 narrowed).
__global__ void gen_range_kernel(kc_elem t, float fstart, float fdelta, int64_t istart,
                                 int64_t idelta, void *y, int64_t n)
{
    GRID_STRIDE(i, n)
    if (elem_is_float(t))
        store_float(y, t, i, __fadd_rn(fstart, __fmul_rn(__ll2float_rn(i), fdelta)));
    else
        store_int(y, t, i,
                  wrap_int((int64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)idelta), t));
}

__global__ void gen_eye_kernel(void *y, size_t esize, uint64_t one, int64_t rows, int64_t cols,
                               int64_t k)
{
    GRID_STRIDE(i, rows * cols)
    put_bits(y, esize, i, i % cols - i / cols == k ? one : 0);
}

// a0 - a1 cos(t) + a2 cos(2t), t = 2 pi i / N, with the CPU's roundings in double.
__global__ void gen_window_kernel(kc_elem t, double a0, double a1, double a2, double len, void *y,
                                  int64_t n)
{
    GRID_STRIDE(i, n)
    {
        double angle =
            len > 0 ? __ddiv_rn(__dmul_rn(2 * 3.14159265358979323846, (double)i), len) : 0;
        double w = __dadd_rn(__dsub_rn(a0, __dmul_rn(a1, cos(angle))),
                             __dmul_rn(a2, cos(__dmul_rn(2.0, angle))));
        if (elem_is_float(t))
            store_float(y, t, i, (float)w);
        else
            store_int(y, t, i, float_to_int(w, t));
    }
}

// One thread per output element [o, d, i]: `on` where the index of (o, i) is d.
__global__ void gen_one_hot_kernel(const void *indices, kc_elem it, int64_t depth, int64_t inner,
                                   size_t esize, uint64_t off, uint64_t on, void *y, int64_t n)
{
    GRID_STRIDE(e, n)
    {
        int64_t i = e % inner, d = e / inner % depth, o = e / inner / depth;
        double dv = load_f64(indices, it, o * inner + i);
        bool hit = false;
        if (fabs(dv) < (double)depth + 1) { // outside [-depth, depth), NaN included: none
            int64_t v = (int64_t)dv;        // truncated, as ONNX casts float indices
            if (v < 0)
                v += depth;
            hit = v == d;
        }
        put_bits(y, esize, e, hit ? on : off);
    }
}

// One thread per element of y [batch, steps, inner] or [steps, batch, inner].
__global__ void gen_reverse_sequence_kernel(const void *x, size_t esize, const void *lens,
                                            kc_elem lt, bool batch_first, int64_t batch,
                                            int64_t steps, int64_t inner, void *y, int64_t n)
{
    GRID_STRIDE(e, n)
    {
        int64_t k = e % inner, row = e / inner;
        int64_t b = batch_first ? row / steps : row % batch;
        int64_t t = batch_first ? row % steps : row / batch;
        int64_t len = load_i64(lens, lt, b);
        int64_t src_t = t < len ? len - 1 - t : t;
        int64_t src = (batch_first ? b * steps + src_t : src_t * batch + b) * inner + k;
        const char *from = (const char *)x + src * (int64_t)esize;
        char *to = (char *)y + e * (int64_t)esize;
        for (size_t j = 0; j < esize; j++)
            to[j] = from[j];
    }
}

// ---- RandomUniform: ir/consts.c's generator, bit for bit ----

__device__ __forceinline__ uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Element i of stream seed, uniform in [0, 1) with 53 random bits (uniform01).
__device__ __forceinline__ double uniform01(uint64_t seed, uint64_t i)
{
    uint64_t z = mix64(seed) + (i + 1) * 0x9e3779b97f4a7c15ull;
    return (double)(mix64(z) >> 11) * 0x1.0p-53;
}

// put_random for f32: lo (1 - u) + hi u, kept below hi; the float nearest (clamped as
// encode_float clamps), stepped down once when rounding reached hi and the step stays >= lo.
__device__ float random_f32(uint64_t seed, uint64_t i, double lo, double hi)
{
    double u = uniform01(seed, i);
    double x = __dadd_rn(__dmul_rn(lo, __dsub_rn(1.0, u)), __dmul_rn(hi, u));
    if (x >= hi && hi > lo)
        x = nextafter(hi, lo);
    const double round_to_inf = 0x1.ffffffp+127,
                 flt_max = 3.40282346638528859811704183484516925e+38;
    float f = x != x               ? __int_as_float(0x7fc00000)
              : x >= round_to_inf  ? __int_as_float(0x7f800000)
              : x <= -round_to_inf ? -__int_as_float(0x7f800000)
              : x > flt_max        ? (float)flt_max
              : x < -flt_max       ? -(float)flt_max
                                   : __double2float_rn(x);
    if ((double)f >= hi) { // step_down: the next float towards -infinity
        uint32_t bits = (uint32_t)__float_as_int(f);
        uint32_t below = (bits & 0x80000000u) ? bits + 1 : bits == 0 ? 0x80000001u : bits - 1;
        if ((double)__int_as_float((int)below) >= lo)
            f = __int_as_float((int)below);
    }
    return f;
}

__global__ void gen_random_kernel(kc_elem t, uint64_t seed, double lo, double hi, void *y,
                                  int64_t n)
{
    GRID_STRIDE(i, n)
    store_float(y, t, i, random_f32(seed, (uint64_t)i, lo, hi));
}

// ---- launches ----

bool kc_fill(kc_context *ctx, void *y, size_t esize, uint64_t bits, int64_t n)
{
    if (n == 0)
        return true;
    gen_fill_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(y, esize, bits, n);
    return KC_LAUNCHED(ctx);
}

bool kc_set_i64(kc_context *ctx, const int64_t *values, int n, int64_t *y)
{
    if (n < 0 || n > KC_MAX_RANK)
        return KC_FAIL(ctx, "set_i64: %d values, at most %d", n, (int)KC_MAX_RANK);
    if (n == 0)
        return true;
    gen_values vals = {};
    for (int i = 0; i < n; i++)
        vals.v[i] = values[i];
    gen_set_i64_kernel<<<1, KC_THREADS, 0, ctx->stream>>>(vals, n, y);
    return KC_LAUNCHED(ctx);
}

bool kc_range(kc_context *ctx, kc_elem t, float fstart, float fdelta, int64_t istart,
              int64_t idelta, void *y, int64_t n)
{
    if (n == 0)
        return true;
    gen_range_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(t, fstart, fdelta, istart,
                                                                   idelta, y, n);
    return KC_LAUNCHED(ctx);
}

bool kc_eye(kc_context *ctx, void *y, size_t esize, uint64_t one, int64_t rows, int64_t cols,
            int64_t k)
{
    if (rows * cols == 0)
        return true;
    gen_eye_kernel<<<kc_blocks(rows * cols), KC_THREADS, 0, ctx->stream>>>(y, esize, one, rows,
                                                                           cols, k);
    return KC_LAUNCHED(ctx);
}

bool kc_window(kc_context *ctx, kc_elem t, double a0, double a1, double a2, int64_t size,
               bool periodic, void *y)
{
    if (size <= 0)
        return true;
    double len = periodic ? (double)size : (double)size - 1;
    gen_window_kernel<<<kc_blocks(size), KC_THREADS, 0, ctx->stream>>>(t, a0, a1, a2, len, y, size);
    return KC_LAUNCHED(ctx);
}

bool kc_one_hot(kc_context *ctx, const void *indices, kc_elem it, int64_t outer, int64_t depth,
                int64_t inner, size_t esize, uint64_t off, uint64_t on, void *y)
{
    int64_t n = outer * depth * inner;
    if (n == 0)
        return true;
    gen_one_hot_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(indices, it, depth, inner,
                                                                     esize, off, on, y, n);
    return KC_LAUNCHED(ctx);
}

bool kc_reverse_sequence(kc_context *ctx, const void *x, size_t esize, const void *lens, kc_elem lt,
                         bool batch_first, int64_t batch, int64_t steps, int64_t inner, void *y)
{
    int64_t n = batch * steps * inner;
    if (n == 0)
        return true;
    gen_reverse_sequence_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(
        x, esize, lens, lt, batch_first, batch, steps, inner, y, n);
    return KC_LAUNCHED(ctx);
}

bool kc_random_uniform(kc_context *ctx, kc_elem t, uint64_t seed, double lo, double hi, void *y,
                       int64_t n)
{
    if (n == 0)
        return true;
    gen_random_kernel<<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(t, seed, lo, hi, y, n);
    return KC_LAUNCHED(ctx);
}
