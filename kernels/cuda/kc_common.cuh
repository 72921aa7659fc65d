// Shared by the CUDA translation units of kernels/cuda/: the context, the one error reporter,
// storage conversions, 16-byte vector access, broadcasting, reductions and the activations.
#ifndef FUSERULE_KERNELS_CUDA_KC_COMMON_CUH
#define FUSERULE_KERNELS_CUDA_KC_COMMON_CUH

#include "kernels/cuda/cuda_kernels.h"

#include <cublasLt.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <cstdint>
#include <map>
#include <string>

// ---- the context ---------------------------------------------------------------------------

// The driver entry points NVRTC-compiled kernels need, fetched through the runtime
// (cudaGetDriverEntryPointByVersion) so that no program links libcuda: the build must run on
// machines without a driver, where the runtime then reports "no CUDA device".
struct kc_driver {
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
    CUresult (*get_error_string)(CUresult, const char **);
};

// A cuDNN convolution chosen for one shape: the algorithm and its workspace size.
struct kc_conv_choice {
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace;
    cudnnMathType_t math; // set on the descriptor before the algorithm runs
};

struct kc_context {
    int device = 0;
    int sm = 0; // compute capability, major * 10 + minor
    char name[300] = {0};
    char err[KC_ERROR_SIZE] = {0};
    cudaStream_t stream = nullptr;
    cublasLtHandle_t lt = nullptr;
    cudnnHandle_t dnn = nullptr;
    // One workspace for cuBLASLt, cuDNN and scratch, grown on demand (never while capturing).
    void *workspace = nullptr;
    size_t workspace_size = 0;
    bool capturing = false;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graph_exec = nullptr;
    cudaEvent_t t0 = nullptr, t1 = nullptr;
    kc_driver drv = {};
    bool drv_loaded = false;
    std::map<std::string, kc_conv_choice> conv_cache; // by shape and parameters
    std::map<std::string, CUfunction> ew_cache;       // by dtype, input count and expression
    std::map<std::string, CUmodule> ew_modules;
};

// ---- the one reporter ------------------------------------------------------------------------
//
// KC_CHECK(ctx, call) evaluates a CUDA runtime, driver, cuBLASLt, cuDNN or NVRTC call; on
// failure it stores "file:line: call: the library's message" in ctx->err and evaluates to false.

bool kc_fail(kc_context *ctx, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool kc_status(kc_context *ctx, cudaError_t s, const char *expr, const char *file, int line);
bool kc_status(kc_context *ctx, CUresult s, const char *expr, const char *file, int line);
bool kc_status(kc_context *ctx, cublasStatus_t s, const char *expr, const char *file, int line);
bool kc_status(kc_context *ctx, cudnnStatus_t s, const char *expr, const char *file, int line);
bool kc_status(kc_context *ctx, nvrtcResult s, const char *expr, const char *file, int line);

#define KC_CHECK(ctx, call) kc_status((ctx), (call), #call, __FILE__, __LINE__)
#define KC_FAIL(ctx, ...) kc_fail((ctx), __FILE__, __LINE__, __VA_ARGS__)
// After a kernel launch: launch errors are reported at once, execution errors at kc_sync.
#define KC_LAUNCHED(ctx) KC_CHECK((ctx), cudaGetLastError())

// A workspace of at least `bytes` (grown outside capture only); NULL after reporting.
void *kc_workspace(kc_context *ctx, size_t bytes);

// ---- launch geometry -------------------------------------------------------------------------

enum { KC_THREADS = 256 };

// Blocks for a grid-stride loop over n items: enough to fill the GPU, never more than needed.
static inline unsigned kc_blocks(int64_t n, int threads = KC_THREADS)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    return (unsigned)(b < 65535 * 8 ? b : 65535 * 8);
}

// ---- storage conversions ---------------------------------------------------------------------

__device__ __forceinline__ float kc_to_f32(float v) { return v; }
__device__ __forceinline__ float kc_to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float kc_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T kc_from_f32(float v);
template <> __device__ __forceinline__ float kc_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half kc_from_f32<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 kc_from_f32<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

// 16-byte vectors: 4 floats or 8 halves per access.
template <typename T> struct kc_vec {
    static constexpr int n = 16 / sizeof(T);
};

template <typename T> __device__ __forceinline__ void kc_load16(const T *p, float *out)
{
    uint4 raw = *reinterpret_cast<const uint4 *>(p);
    const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int i = 0; i < kc_vec<T>::n; i++)
        out[i] = kc_to_f32(e[i]);
}

template <typename T> __device__ __forceinline__ void kc_store16(T *p, const float *in)
{
    uint4 raw;
    T *e = reinterpret_cast<T *>(&raw);
#pragma unroll
    for (int i = 0; i < kc_vec<T>::n; i++)
        e[i] = kc_from_f32<T>(in[i]);
    *reinterpret_cast<uint4 *>(p) = raw;
}

static inline bool kc_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// ---- broadcasting ----------------------------------------------------------------------------

// Maps a flat index of an output shape to the offset of an operand broadcasting to it (numpy,
// right-aligned): stride 0 on broadcast dims. `same` when the operand has the output's shape.
struct kc_bcast {
    int rank;
    bool same;
    int64_t dims[KC_MAX_RANK];
    int64_t strides[KC_MAX_RANK];
};

// False when `in` does not broadcast to `out`.
bool kc_bcast_make(const kc_tensor *in, const int64_t *out_dims, int out_rank, kc_bcast *b);

__device__ __forceinline__ int64_t kc_bcast_offset(const kc_bcast &b, int64_t i)
{
    if (b.same)
        return i;
    int64_t off = 0;
    for (int d = b.rank - 1; d >= 0; d--) {
        int64_t q = i / b.dims[d];
        off += (i - q * b.dims[d]) * b.strides[d];
        i = q;
    }
    return off;
}

// ---- reductions in fp32 ------------------------------------------------------------------------

__device__ __forceinline__ float kc_warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float kc_warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide sum or max; every thread of the block gets the result. `shared` holds 32 floats.
template <bool is_max> __device__ float kc_block_reduce(float v, float *shared)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int nwarps = (blockDim.x + 31) >> 5;
    v = is_max ? kc_warp_max(v) : kc_warp_sum(v);
    __syncthreads(); // shared may still be read by a previous reduction
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    float r = lane < nwarps ? shared[lane] : (is_max ? -INFINITY : 0.0f);
    return is_max ? kc_warp_max(r) : kc_warp_sum(r);
}

// Block-wide sum in double (the CPU kernels' accumulator); every thread gets it. `shared` holds
// 32 doubles.
__device__ __forceinline__ double kc_block_sum_f64(double v, double *shared)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    __syncthreads(); // shared may still be read by a previous reduction
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    double r = lane < nwarps ? shared[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1)
        r += __shfl_xor_sync(0xffffffffu, r, o);
    return r;
}

// ---- the activations (docs/kernels.md) ---------------------------------------------------------

__device__ __forceinline__ float kc_apply_act(const kc_act &a, float x)
{
    switch (a.kind) {
    case KC_ACT_IDENTITY: return x;
    case KC_ACT_RELU: return x < 0.0f ? 0.0f : x; // NaN stays NaN
    case KC_ACT_LEAKY_RELU: return x >= 0.0f ? x : a.alpha * x;
    case KC_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case KC_ACT_TANH: return tanhf(x);
    // ONNX's min(max(x, lo), hi) (hi wins when lo > hi); NaN passes through, as on the CPU.
    case KC_ACT_CLIP: return x != x ? x : fminf(fmaxf(x, a.alpha), a.beta);
    case KC_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case KC_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case KC_ACT_SILU: return x / (1.0f + expf(-x));
    case KC_ACT_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case KC_ACT_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a.alpha * x + a.beta));
    }
    return x;
}

// ---- dtype dispatch -------------------------------------------------------------------------

// Calls f.template operator()<T>() with T the storage type of dt; false for a non-float dtype.
template <typename F> bool kc_dispatch_float(kc_context *ctx, kc_dtype dt, F &&f)
{
    switch (dt) {
    case KC_F32: return f.template operator()<float>();
    case KC_F16: return f.template operator()<__half>();
    case KC_BF16: return f.template operator()<__nv_bfloat16>();
    default: return KC_FAIL(ctx, "a float kernel was given a non-float tensor");
    }
}

// Row geometry over dims [axis, rank): rows x cols.
static inline void kc_rows_cols(const kc_tensor *t, int axis, int64_t *rows, int64_t *cols)
{
    *rows = 1, *cols = 1;
    for (int d = 0; d < t->rank; d++)
        *(d < axis ? rows : cols) *= t->dims[d];
}

// Copies `src` broadcast to the shape `dims` (rank) into dst (same dtype); for parameters that
// the kernels want contiguous (norm scale/bias, a GEMM residual).
bool kc_broadcast_copy(kc_context *ctx, const kc_tensor *src, const int64_t *dims, int rank,
                       void *dst);

#endif
