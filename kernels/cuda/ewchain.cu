// ElementwiseChain: one kernel per expression, generated and compiled at run time with NVRTC.
//
// The kernel source is a fixed prelude (the fr_* functions, with the CPU reference's semantics,
// and 16-bit storage conversions in inline PTX so that NVRTC needs no headers) around the
// expression made by kn_cuda_ewchain_source. It is compiled for the device's architecture once
// per (dtype, input count, expression) and the loaded function is cached in the context.
#include "kernels/cuda/kc_common.cuh"

#include <cstdio>
#include <vector>

static const char PRELUDE[] = R"(
typedef long long i64;
#if FR_DTYPE == 0
typedef float storage;
__device__ __forceinline__ float fr_load(const storage *p) { return *p; }
__device__ __forceinline__ void fr_store(storage *p, float v) { *p = v; }
#else
typedef unsigned short storage;
__device__ __forceinline__ float fr_load(const storage *p)
{
#if FR_DTYPE == 1
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
    return f;
#else
    return __uint_as_float(((unsigned)*p) << 16);
#endif
}
__device__ __forceinline__ void fr_store(storage *p, float v)
{
    unsigned short h;
#if FR_DTYPE == 1
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
#else
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
#endif
    *p = h;
}
#endif

__device__ __forceinline__ float fr_add(float a, float b) { return a + b; }
__device__ __forceinline__ float fr_sub(float a, float b) { return a - b; }
__device__ __forceinline__ float fr_mul(float a, float b) { return a * b; }
__device__ __forceinline__ float fr_div(float a, float b) { return a / b; }
__device__ __forceinline__ float fr_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ float fr_max(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float fr_min(float a, float b) { return (a != a || a < b) ? a : b; }
__device__ __forceinline__ float fr_neg(float x) { return -x; }
__device__ __forceinline__ float fr_abs(float x) { return fabsf(x); }
__device__ __forceinline__ float fr_exp(float x) { return expf(x); }
__device__ __forceinline__ float fr_log(float x) { return logf(x); }
__device__ __forceinline__ float fr_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float fr_rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ float fr_recip(float x) { return 1.0f / x; }
__device__ __forceinline__ float fr_sigmoid(float x)
{
    if (x >= 0.0f)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}
__device__ __forceinline__ float fr_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float fr_relu(float x) { return x < 0.0f ? 0.0f : x; }
__device__ __forceinline__ float fr_erf(float x) { return erff(x); }
__device__ __forceinline__ float fr_gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float fr_gelu_tanh(float x)
{
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float fr_silu(float x) { return x * fr_sigmoid(x); }
__device__ __forceinline__ float fr_hardswish(float x)
{
    float h = x / 6.0f + 0.5f;
    return x * (h < 0.0f ? 0.0f : h > 1.0f ? 1.0f : h);
}
__device__ __forceinline__ float fr_sin(float x) { return sinf(x); }
__device__ __forceinline__ float fr_cos(float x) { return cosf(x); }
__device__ __forceinline__ float fr_floor(float x) { return floorf(x); }
__device__ __forceinline__ float fr_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ float fr_softplus(float x)
{
    return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float fr_leakyrelu(float x, float alpha)
{
    return x >= 0.0f ? x : alpha * x;
}
__device__ __forceinline__ float fr_elu(float x, float alpha)
{
    return x >= 0.0f ? x : alpha * expm1f(x);
}
/* ONNX Clip, min(max(x, lo), hi): hi wins when lo > hi; NaN passes through. */
__device__ __forceinline__ float fr_clip(float x, float lo, float hi)
{
    return x != x ? x : fminf(fmaxf(x, lo), hi);
}
__device__ __forceinline__ float fr_hardsigmoid(float x, float alpha, float beta)
{
    return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
}
/* Sign: NaN stays NaN, -0 gives +0, as the CPU's (x > 0) - (x < 0). */
__device__ __forceinline__ float fr_sign(float x)
{
    return x != x ? x : (float)((x > 0.0f) - (x < 0.0f));
}
/* rintf rounds half to even, as the CPU's nearbyintf in the default rounding mode. */
__device__ __forceinline__ float fr_round(float x) { return rintf(x); }
__device__ __forceinline__ float fr_tan(float x) { return tanf(x); }
__device__ __forceinline__ float fr_asin(float x) { return asinf(x); }
__device__ __forceinline__ float fr_acos(float x) { return acosf(x); }
__device__ __forceinline__ float fr_atan(float x) { return atanf(x); }
__device__ __forceinline__ float fr_sinh(float x) { return sinhf(x); }
__device__ __forceinline__ float fr_cosh(float x) { return coshf(x); }
__device__ __forceinline__ float fr_asinh(float x) { return asinhf(x); }
__device__ __forceinline__ float fr_acosh(float x) { return acoshf(x); }
__device__ __forceinline__ float fr_atanh(float x) { return atanhf(x); }
/* ThresholdedRelu: x above alpha, else 0 (NaN gives 0: the comparison is false). */
__device__ __forceinline__ float fr_thresholdedrelu(float x, float alpha)
{
    return x > alpha ? x : 0.0f;
}
/* Shrink: x + bias below -lambd, x - bias above lambd, else 0 (NaN gives 0). */
__device__ __forceinline__ float fr_shrink(float x, float bias, float lambd)
{
    return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0f;
}

struct fr_params {
    const storage *in[FR_NIN];
    i64 stride[FR_NIN][8]; /* per input and output dim; 0 where it broadcasts */
    i64 dims[8];
    int rank;
    unsigned same; /* bit k: input k has the output's shape */
    storage *out;
    i64 n;
};

__device__ __forceinline__ float fr_input(const fr_params &p, int k, i64 i)
{
    if (p.same & (1u << k))
        return fr_load(p.in[k] + i);
    i64 off = 0;
    for (int d = p.rank - 1; d >= 0; d--) {
        i64 q = i / p.dims[d];
        off += (i - q * p.dims[d]) * p.stride[k][d];
        i = q;
    }
    return fr_load(p.in[k] + off);
}
)";

// The kernel around the expression: x0..x(n-1) are loaded, the expression stored.
static std::string kernel_source(const char *body, int ninputs)
{
    std::string s = "extern \"C\" __global__ void fr_ewchain(fr_params p)\n{\n"
                    "    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < p.n;\n"
                    "         i += (i64)gridDim.x * blockDim.x) {\n";
    for (int k = 0; k < ninputs; k++)
        s += "        const float x" + std::to_string(k) + " = fr_input(p, " + std::to_string(k) +
             ", i);\n";
    s += "        fr_store(p.out + i, " + std::string(body) + ");\n    }\n}\n";
    return s;
}

// Compiles the kernel to PTX for compute capability sm (the PTX then loads on that device).
static bool compile(kc_context *ctx, const char *body, int ninputs, kc_dtype dtype, int sm,
                    std::string *ptx)
{
    std::string src = std::string(PRELUDE) + kernel_source(body, ninputs);
    nvrtcProgram prog;
    if (!KC_CHECK(ctx, nvrtcCreateProgram(&prog, src.c_str(), "ewchain.cu", 0, nullptr, nullptr)))
        return false;
    std::string arch = "--gpu-architecture=compute_" + std::to_string(sm);
    std::string dt = "-DFR_DTYPE=" + std::to_string(dtype == KC_F32 ? 0 : dtype == KC_F16 ? 1 : 2);
    std::string nin = "-DFR_NIN=" + std::to_string(ninputs);
    const char *opts[] = {arch.c_str(), dt.c_str(), nin.c_str(), "--std=c++17"};
    nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
    bool ok = true;
    if (r != NVRTC_SUCCESS) {
        size_t log_size = 0;
        nvrtcGetProgramLogSize(prog, &log_size);
        std::vector<char> log(log_size + 1, 0);
        nvrtcGetProgramLog(prog, log.data());
        ok = KC_FAIL(ctx, "NVRTC cannot compile ElementwiseChain `%s`: %s: %s", body,
                     nvrtcGetErrorString(r), log.data());
    }
    size_t size = 0;
    ok = ok && KC_CHECK(ctx, nvrtcGetPTXSize(prog, &size));
    if (ok) {
        ptx->assign(size, '\0');
        ok = KC_CHECK(ctx, nvrtcGetPTX(prog, &(*ptx)[0]));
    }
    nvrtcDestroyProgram(&prog);
    return ok;
}

bool kc_ewchain_compile_check(const char *body, int ninputs, kc_dtype dtype, char *err)
{
    kc_context ctx;
    std::string ptx;
    if (compile(&ctx, body, ninputs, dtype, 90, &ptx))
        return true;
    snprintf(err, KC_ERROR_SIZE, "%s", ctx.err);
    return false;
}

// The loaded kernel for this expression, compiled on first use.
static bool get_function(kc_context *ctx, const char *body, int ninputs, kc_dtype dtype,
                         CUfunction *out)
{
    std::string key = std::to_string((int)dtype) + "|" + std::to_string(ninputs) + "|" + body;
    auto hit = ctx->ew_cache.find(key);
    if (hit != ctx->ew_cache.end()) {
        *out = hit->second;
        return true;
    }
    if (ctx->capturing)
        return KC_FAIL(ctx, "ElementwiseChain `%s` was first compiled during graph capture", body);
    std::string ptx;
    CUmodule mod;
    if (!compile(ctx, body, ninputs, dtype, ctx->sm, &ptx) ||
        !KC_CHECK(ctx, ctx->drv.module_load_data(&mod, ptx.c_str())))
        return false;
    ctx->ew_modules[key] = mod;
    if (!KC_CHECK(ctx, ctx->drv.module_get_function(out, mod, "fr_ewchain")))
        return false;
    ctx->ew_cache[key] = *out;
    return true;
}

bool kc_ewchain(kc_context *ctx, const char *body, const kc_tensor *const *inputs, int ninputs,
                kc_tensor *y)
{
    if (ninputs < 1 || ninputs > 32)
        return KC_FAIL(ctx, "ElementwiseChain: %d inputs (1 to 32)", ninputs);
    if (y->numel == 0)
        return true;
    CUfunction fn;
    if (!get_function(ctx, body, ninputs, y->dtype, &fn))
        return false;
    // Packed exactly as the generated struct: in[n], stride[n][8], dims[8], rank, same, out, n.
    std::vector<unsigned char> buf;
    auto put = [&buf](const void *p, size_t size, size_t align) {
        while (buf.size() % align)
            buf.push_back(0);
        buf.insert(buf.end(), (const unsigned char *)p, (const unsigned char *)p + size);
    };
    unsigned same = 0;
    int64_t strides[32][8] = {};
    for (int k = 0; k < ninputs; k++) {
        kc_bcast b;
        if (!kc_bcast_make(inputs[k], y->dims, y->rank, &b))
            return KC_FAIL(ctx, "ElementwiseChain: input %d does not broadcast to Y", k);
        same |= b.same ? 1u << k : 0;
        for (int d = 0; d < y->rank; d++)
            strides[k][d] = b.strides[d];
    }
    for (int k = 0; k < ninputs; k++)
        put(&inputs[k]->data, sizeof(void *), 8);
    for (int k = 0; k < ninputs; k++)
        put(strides[k], sizeof strides[k], 8);
    int64_t dims[8] = {};
    for (int d = 0; d < y->rank; d++)
        dims[d] = y->dims[d];
    int rank = y->rank;
    put(dims, sizeof dims, 8);
    put(&rank, sizeof rank, 4);
    put(&same, sizeof same, 4);
    put(&y->data, sizeof(void *), 8);
    put(&y->numel, sizeof y->numel, 8);
    while (buf.size() % 8)
        buf.push_back(0);
    void *args[] = {buf.data()};
    return KC_CHECK(ctx, ctx->drv.launch_kernel(fn, kc_blocks(y->numel), 1, 1, KC_THREADS, 1, 1, 0,
                                                ctx->stream, args, nullptr));
}
