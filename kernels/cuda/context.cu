// The CUDA context: device, stream, library handles, workspace, graph capture, timing, and the
// one error reporter every call goes through. Also the small kernels shared by several ops
// (broadcast copy, the bias + activation epilogue).
#include "kernels/cuda/kc_common.cuh"

#include <cstdarg>
#include <cstdio>
#include <cstring>

// ---- errors ----------------------------------------------------------------------------------

bool kc_fail(kc_context *ctx, const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    int n = snprintf(ctx->err, sizeof ctx->err, "%s:%d: ", base ? base + 1 : file, line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof ctx->err)
        vsnprintf(ctx->err + n, sizeof ctx->err - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

bool kc_status(kc_context *ctx, cudaError_t s, const char *expr, const char *file, int line)
{
    return s == cudaSuccess ||
           kc_fail(ctx, file, line, "%s: %s (%s)", expr, cudaGetErrorString(s),
                   cudaGetErrorName(s));
}

bool kc_status(kc_context *ctx, CUresult s, const char *expr, const char *file, int line)
{
    if (s == CUDA_SUCCESS)
        return true;
    const char *msg = "unknown driver error";
    if (ctx->drv_loaded)
        ctx->drv.get_error_string(s, &msg);
    return kc_fail(ctx, file, line, "%s: %s (CUresult %d)", expr, msg, (int)s);
}

bool kc_status(kc_context *ctx, cublasStatus_t s, const char *expr, const char *file, int line)
{
    return s == CUBLAS_STATUS_SUCCESS ||
           kc_fail(ctx, file, line, "%s: cuBLAS status %d", expr, (int)s);
}

bool kc_status(kc_context *ctx, cudnnStatus_t s, const char *expr, const char *file, int line)
{
    return s == CUDNN_STATUS_SUCCESS ||
           kc_fail(ctx, file, line, "%s: %s", expr, cudnnGetErrorString(s));
}

bool kc_status(kc_context *ctx, nvrtcResult s, const char *expr, const char *file, int line)
{
    return s == NVRTC_SUCCESS || kc_fail(ctx, file, line, "%s: %s", expr, nvrtcGetErrorString(s));
}

const char *kc_last_error(const kc_context *ctx) { return ctx->err; }
const char *kc_device_name(const kc_context *ctx) { return ctx->name; }

// ---- devices and contexts ----------------------------------------------------------------------

bool kc_device_count(int *count, char *why, size_t why_size)
{
    *count = 0;
    cudaError_t s = cudaGetDeviceCount(count);
    if (s != cudaSuccess) {
        snprintf(why, why_size, "no CUDA device: cudaGetDeviceCount: %s (%s)", cudaGetErrorName(s),
                 cudaGetErrorString(s));
        *count = 0;
        return false;
    }
    if (*count == 0) {
        snprintf(why, why_size, "no CUDA device: the driver reports none");
        return false;
    }
    return true;
}

static bool load_driver(kc_context *ctx)
{
    struct {
        const char *name;
        void **fn;
    } syms[] = {
        {"cuModuleLoadData", (void **)&ctx->drv.module_load_data},
        {"cuModuleGetFunction", (void **)&ctx->drv.module_get_function},
        {"cuModuleUnload", (void **)&ctx->drv.module_unload},
        {"cuLaunchKernel", (void **)&ctx->drv.launch_kernel},
        {"cuGetErrorString", (void **)&ctx->drv.get_error_string},
    };
    for (auto &s : syms) {
        cudaDriverEntryPointQueryResult found;
        if (!KC_CHECK(ctx, cudaGetDriverEntryPointByVersion(s.name, s.fn, 12000,
                                                            cudaEnableDefault, &found)))
            return false;
        if (found != cudaDriverEntryPointSuccess || !*s.fn)
            return KC_FAIL(ctx, "the CUDA driver has no %s", s.name);
    }
    ctx->drv_loaded = true;
    return true;
}

static bool init(kc_context *ctx)
{
    cudaDeviceProp prop;
    if (!KC_CHECK(ctx, cudaSetDevice(ctx->device)) ||
        !KC_CHECK(ctx, cudaGetDeviceProperties(&prop, ctx->device)))
        return false;
    ctx->sm = prop.major * 10 + prop.minor;
    snprintf(ctx->name, sizeof ctx->name, "%s (sm_%d)", prop.name, ctx->sm);
    return KC_CHECK(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) &&
           KC_CHECK(ctx, cublasLtCreate(&ctx->lt)) && KC_CHECK(ctx, cudnnCreate(&ctx->dnn)) &&
           KC_CHECK(ctx, cudnnSetStream(ctx->dnn, ctx->stream)) &&
           KC_CHECK(ctx, cudaEventCreate(&ctx->t0)) && KC_CHECK(ctx, cudaEventCreate(&ctx->t1)) &&
           load_driver(ctx);
}

kc_context *kc_create(char *err)
{
    kc_context *ctx = new (std::nothrow) kc_context();
    if (!ctx) {
        snprintf(err, KC_ERROR_SIZE, "out of memory");
        return nullptr;
    }
    if (!init(ctx)) {
        snprintf(err, KC_ERROR_SIZE, "%s", ctx->err);
        kc_destroy(ctx);
        return nullptr;
    }
    return ctx;
}

// Teardown: errors are ignored, there is nothing left to report them to.
void kc_destroy(kc_context *ctx)
{
    if (!ctx)
        return;
    if (ctx->stream)
        cudaStreamSynchronize(ctx->stream);
    for (auto &m : ctx->ew_modules)
        ctx->drv.module_unload(m.second);
    if (ctx->graph_exec)
        cudaGraphExecDestroy(ctx->graph_exec);
    if (ctx->graph)
        cudaGraphDestroy(ctx->graph);
    if (ctx->workspace)
        cudaFree(ctx->workspace);
    if (ctx->t0)
        cudaEventDestroy(ctx->t0);
    if (ctx->t1)
        cudaEventDestroy(ctx->t1);
    if (ctx->dnn)
        cudnnDestroy(ctx->dnn);
    if (ctx->lt)
        cublasLtDestroy(ctx->lt);
    if (ctx->stream)
        cudaStreamDestroy(ctx->stream);
    delete ctx;
}

// ---- memory ----------------------------------------------------------------------------------

bool kc_alloc(kc_context *ctx, size_t nbytes, void **out)
{
    *out = nullptr;
    if (ctx->capturing)
        return KC_FAIL(ctx, "allocation of %zu bytes during graph capture", nbytes);
    return KC_CHECK(ctx, cudaMalloc(out, nbytes ? nbytes : 1));
}

void kc_free(kc_context *ctx, void *p)
{
    if (p)
        KC_CHECK(ctx, cudaFree(p));
}

bool kc_upload(kc_context *ctx, void *dst, const void *src, size_t nbytes)
{
    return KC_CHECK(ctx, cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, ctx->stream)) &&
           KC_CHECK(ctx, cudaStreamSynchronize(ctx->stream));
}

bool kc_download(kc_context *ctx, void *dst, const void *src, size_t nbytes)
{
    return KC_CHECK(ctx, cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, ctx->stream)) &&
           KC_CHECK(ctx, cudaStreamSynchronize(ctx->stream));
}

bool kc_copy(kc_context *ctx, void *dst, const void *src, size_t nbytes)
{
    return KC_CHECK(ctx, cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, ctx->stream));
}

bool kc_fill_bytes(kc_context *ctx, void *dst, unsigned char byte, size_t nbytes)
{
    return KC_CHECK(ctx, cudaMemsetAsync(dst, byte, nbytes, ctx->stream));
}

bool kc_sync(kc_context *ctx)
{
    return KC_CHECK(ctx, cudaStreamSynchronize(ctx->stream)) &&
           KC_CHECK(ctx, cudaGetLastError());
}

void *kc_workspace(kc_context *ctx, size_t bytes)
{
    if (bytes <= ctx->workspace_size)
        return ctx->workspace;
    if (ctx->capturing) {
        KC_FAIL(ctx, "the workspace must grow to %zu bytes during graph capture", bytes);
        return nullptr;
    }
    // Old work may still use the old workspace.
    if (!KC_CHECK(ctx, cudaStreamSynchronize(ctx->stream)))
        return nullptr;
    if (ctx->workspace && !KC_CHECK(ctx, cudaFree(ctx->workspace)))
        return nullptr;
    ctx->workspace = nullptr;
    ctx->workspace_size = 0;
    size_t size = bytes < ((size_t)32 << 20) ? ((size_t)32 << 20) : bytes;
    if (!KC_CHECK(ctx, cudaMalloc(&ctx->workspace, size)))
        return nullptr;
    ctx->workspace_size = size;
    return ctx->workspace;
}

// ---- graph capture and timing ------------------------------------------------------------------

bool kc_capture_begin(kc_context *ctx)
{
    if (!KC_CHECK(ctx, cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal)))
        return false;
    ctx->capturing = true;
    return true;
}

bool kc_capture_end(kc_context *ctx)
{
    ctx->capturing = false;
    if (ctx->graph_exec && !KC_CHECK(ctx, cudaGraphExecDestroy(ctx->graph_exec)))
        return false;
    if (ctx->graph && !KC_CHECK(ctx, cudaGraphDestroy(ctx->graph)))
        return false;
    ctx->graph_exec = nullptr;
    ctx->graph = nullptr;
    return KC_CHECK(ctx, cudaStreamEndCapture(ctx->stream, &ctx->graph)) &&
           KC_CHECK(ctx, cudaGraphInstantiate(&ctx->graph_exec, ctx->graph, 0));
}

bool kc_graph_replay(kc_context *ctx)
{
    if (!ctx->graph_exec)
        return KC_FAIL(ctx, "no captured graph to replay");
    return KC_CHECK(ctx, cudaGraphLaunch(ctx->graph_exec, ctx->stream));
}

bool kc_timer_start(kc_context *ctx)
{
    return KC_CHECK(ctx, cudaEventRecord(ctx->t0, ctx->stream));
}

bool kc_timer_stop(kc_context *ctx, float *ms)
{
    return KC_CHECK(ctx, cudaEventRecord(ctx->t1, ctx->stream)) &&
           KC_CHECK(ctx, cudaEventSynchronize(ctx->t1)) &&
           KC_CHECK(ctx, cudaEventElapsedTime(ms, ctx->t0, ctx->t1));
}

// ---- broadcasting ------------------------------------------------------------------------------

bool kc_bcast_make(const kc_tensor *in, const int64_t *out_dims, int out_rank, kc_bcast *b)
{
    if (in->rank > out_rank || out_rank > KC_MAX_RANK)
        return false;
    b->rank = out_rank;
    b->same = in->rank == out_rank;
    int64_t stride = 1;
    for (int d = out_rank - 1; d >= 0; d--) {
        int id = d - (out_rank - in->rank);
        int64_t n = id >= 0 ? in->dims[id] : 1;
        if (n != out_dims[d] && n != 1)
            return false;
        b->dims[d] = out_dims[d];
        b->strides[d] = n == 1 ? 0 : stride;
        b->same = b->same && n == out_dims[d];
        stride *= n;
    }
    return true;
}

template <typename T>
__global__ void broadcast_copy_kernel(const T *src, kc_bcast b, T *dst, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = src[kc_bcast_offset(b, i)];
}

static size_t dtype_size(kc_dtype dt)
{
    switch (dt) {
    case KC_F32:
    case KC_I32: return 4;
    case KC_F16:
    case KC_BF16: return 2;
    case KC_I8:
    case KC_BOOL: return 1;
    }
    return 0;
}

bool kc_broadcast_copy(kc_context *ctx, const kc_tensor *src, const int64_t *dims, int rank,
                       void *dst)
{
    kc_bcast b;
    if (!kc_bcast_make(src, dims, rank, &b))
        return KC_FAIL(ctx, "an operand does not broadcast to the output shape");
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    if (n == 0)
        return true;
    switch (dtype_size(src->dtype)) {
    case 4:
        broadcast_copy_kernel<uint32_t><<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(
            (const uint32_t *)src->data, b, (uint32_t *)dst, n);
        break;
    case 2:
        broadcast_copy_kernel<uint16_t><<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(
            (const uint16_t *)src->data, b, (uint16_t *)dst, n);
        break;
    default:
        broadcast_copy_kernel<uint8_t><<<kc_blocks(n), KC_THREADS, 0, ctx->stream>>>(
            (const uint8_t *)src->data, b, (uint8_t *)dst, n);
    }
    return KC_LAUNCHED(ctx);
}

// ---- the bias + residual + activation epilogue -----------------------------------------------

template <typename T>
__global__ void bias_act_kernel(T *y, const T *bias, const T *z, int64_t n, int64_t channels,
                                int64_t inner, kc_act act)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = kc_to_f32(y[i]);
        if (bias)
            v += kc_to_f32(bias[(i / inner) % channels]);
        if (z)
            v += kc_to_f32(z[i]);
        y[i] = kc_from_f32<T>(kc_apply_act(act, v));
    }
}

bool kc_bias_act(kc_context *ctx, kc_tensor *y, const kc_tensor *bias, const kc_tensor *z,
                 int64_t channels, int64_t inner, const kc_act *act)
{
    if (y->numel == 0)
        return true;
    if (channels < 1 || inner < 1)
        return KC_FAIL(ctx, "bias_act: %lld channels, inner %lld", (long long)channels,
                       (long long)inner);
    return kc_dispatch_float(ctx, y->dtype, [&]<typename T>() {
        bias_act_kernel<T><<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
            (T *)y->data, bias ? (const T *)bias->data : nullptr,
            z ? (const T *)z->data : nullptr, y->numel, channels, inner, *act);
        return KC_LAUNCHED(ctx);
    });
}
