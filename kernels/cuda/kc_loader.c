/* The CUDA module loader: the definitions of cuda_kernels.h that C code links against.
 *
 * The kernels and the libraries behind them (cuDNN, cuBLASLt, NVRTC, the CUDA runtime: together
 * more than a gigabyte of mappings) live in a shared module, libfr_cuda.so, opened with dlopen the
 * first time the CUDA backend is asked for a device. Programs that never use the GPU never map
 * those libraries, so they start as fast and under the same memory limits as a build without CUDA,
 * and a machine without the CUDA libraries still runs everything else.
 *
 * The module is found at FUSERULE_CUDA_MODULE (environment) when set, else at the path the build
 * wrote (FR_CUDA_MODULE), else by the dynamic linker's search for "libfr_cuda.so". */
#include "kernels/cuda/cuda_kernels.h"

#include "base/check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FR_CUDA_MODULE
#define FR_CUDA_MODULE "libfr_cuda.so"
#endif

static struct {
#define KC_FN(ret, name, params, args) ret(*name) params;
#define KC_VOID(name, params, args) void(*name) params;
#include "kernels/cuda/kc_api.def"
#undef KC_FN
#undef KC_VOID
    bool (*kc_device_count)(int *count, char *why, size_t why_size);
    kc_context *(*kc_create)(char *err);
    bool (*kc_ewchain_compile_check)(const char *body, int ninputs, kc_dtype dtype, char *err);
} api;

static int load_state; /* 0 not tried, 1 loaded, -1 failed */
static char load_error[KC_ERROR_SIZE];

static bool find(void *module, const char *name, void **fn)
{
    *fn = dlsym(module, name);
    if (!*fn)
        snprintf(load_error, sizeof load_error, "the CUDA module has no %s", name);
    return *fn != NULL;
}

/* Opens the module once; false with load_error set when it cannot. */
static bool load(void)
{
    if (load_state)
        return load_state > 0;
    load_state = -1;
    const char *path = getenv("FUSERULE_CUDA_MODULE");
    void *module = dlopen(path ? path : FR_CUDA_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (!module && !path)
        module = dlopen("libfr_cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        snprintf(load_error, sizeof load_error, "cannot load the CUDA module: %s", dlerror());
        return false;
    }
    bool ok = true;
#define KC_FN(ret, name, params, args) ok = ok && find(module, #name, (void **)&api.name);
#define KC_VOID(name, params, args) KC_FN(void, name, params, args)
#include "kernels/cuda/kc_api.def"
#undef KC_FN
#undef KC_VOID
    ok = ok && find(module, "kc_device_count", (void **)&api.kc_device_count) &&
         find(module, "kc_create", (void **)&api.kc_create) &&
         find(module, "kc_ewchain_compile_check", (void **)&api.kc_ewchain_compile_check);
    if (!ok)
        return false; /* the module stays open: dlclose of a CUDA runtime is not worth the risk */
    load_state = 1;
    return true;
}

bool kc_device_count(int *count, char *why, size_t why_size)
{
    *count = 0;
    if (!load()) {
        snprintf(why, why_size, "no CUDA device: %s", load_error);
        return false;
    }
    return api.kc_device_count(count, why, why_size);
}

kc_context *kc_create(char *err)
{
    if (!load()) {
        snprintf(err, KC_ERROR_SIZE, "%s", load_error);
        return NULL;
    }
    return api.kc_create(err);
}

bool kc_ewchain_compile_check(const char *body, int ninputs, kc_dtype dtype, char *err)
{
    if (!load()) {
        snprintf(err, KC_ERROR_SIZE, "%s", load_error);
        return false;
    }
    return api.kc_ewchain_compile_check(body, ninputs, dtype, err);
}

/* Every other function takes a context, which only a loaded module can have made. */
#define KC_FN(ret, name, params, args)                                                             \
    ret name params                                                                                \
    {                                                                                              \
        FR_CHECK(load_state > 0);                                                                  \
        return api.name args;                                                                      \
    }
#define KC_VOID(name, params, args)                                                                \
    void name params                                                                               \
    {                                                                                              \
        FR_CHECK(load_state > 0);                                                                  \
        api.name args;                                                                             \
    }
#include "kernels/cuda/kc_api.def"
#undef KC_FN
#undef KC_VOID
