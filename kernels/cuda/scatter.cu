// ScatterElements and ScatterND with every reduction, with the CPU reference's semantics
// (kernels/cpu/onnx_index.c): y starts as data; the updates apply in index order, so a target hit
// twice folds both, in that order. Floats fold in f32 and round once to the storage type at the
// end (the CPU executor holds f16 and bf16 as f32 around the kernel); max and min let a NaN update
// win and keep a NaN already there; integers fold in int64 and wrap to their width (bool: != 0);
// none keeps the last update.
//
// The host checks every index (the CPU kernel's errors) and groups the updates by target, in
// order (kc_scatter_plan's plan); one thread per (group, element of a slice) folds its group's
// updates into its target, so no two threads touch one element and the order is the CPU's.
#include "kernels/cuda/kc_common.cuh"

template <typename T> struct scatter_float {
    static constexpr bool value = false;
};
template <> struct scatter_float<float> {
    static constexpr bool value = true;
};
template <> struct scatter_float<__half> {
    static constexpr bool value = true;
};
template <> struct scatter_float<__nv_bfloat16> {
    static constexpr bool value = true;
};

__device__ __forceinline__ float scatter_fold(float a, float b, kc_scatter_red r)
{
    switch (r) {
    case KC_SCATTER_ADD: return a + b;
    case KC_SCATTER_MUL: return a * b;
    case KC_SCATTER_MAX: return b > a || b != b ? b : a;
    case KC_SCATTER_MIN: return b < a || b != b ? b : a;
    default: return b;
    }
}

__device__ __forceinline__ int64_t scatter_fold_int(int64_t a, int64_t b, kc_scatter_red r)
{
    switch (r) {
    case KC_SCATTER_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case KC_SCATTER_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case KC_SCATTER_MAX: return b > a ? b : a;
    case KC_SCATTER_MIN: return b < a ? b : a;
    default: return b;
    }
}

// is_bool: the wrap of bool (v != 0) instead of the width's.
template <typename T>
__global__ void scatter_plan_kernel(const T *upd, int64_t slice, const int64_t *targets,
                                    const int64_t *starts, const int64_t *members, int64_t ngroups,
                                    kc_scatter_red r, bool is_bool, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ngroups * slice;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t g = i / slice, e = i % slice, at = targets[g] + e;
        if (r == KC_SCATTER_NONE) {
            y[at] = upd[members[starts[g + 1] - 1] * slice + e];
        } else if constexpr (scatter_float<T>::value) {
            float v = kc_to_f32(y[at]);
            for (int64_t m = starts[g]; m < starts[g + 1]; m++)
                v = scatter_fold(v, kc_to_f32(upd[members[m] * slice + e]), r);
            y[at] = kc_from_f32<T>(v);
        } else {
            int64_t v = (int64_t)y[at];
            for (int64_t m = starts[g]; m < starts[g + 1]; m++) {
                v = scatter_fold_int(v, (int64_t)upd[members[m] * slice + e], r);
                v = is_bool ? v != 0 : (int64_t)(T)v; // wrapped after each step, as kn_set_int
            }
            y[at] = (T)v;
        }
    }
}

template <typename T>
static bool launch_scatter(kc_context *ctx, const void *upd, int64_t slice, const int64_t *dplan,
                           int64_t ngroups, kc_scatter_red r, bool is_bool, void *y)
{
    scatter_plan_kernel<T><<<kc_blocks(ngroups * slice), KC_THREADS, 0, ctx->stream>>>(
        (const T *)upd, slice, dplan, dplan + ngroups, dplan + 2 * ngroups + 1, ngroups, r, is_bool,
        (T *)y);
    return KC_LAUNCHED(ctx);
}

bool kc_scatter_plan(kc_context *ctx, kc_elem t, kc_scatter_red r, const void *updates,
                     int64_t slice, const int64_t *plan, int64_t ngroups, int64_t nmembers, void *y)
{
    if (ngroups * slice == 0)
        return true;
    if (ctx->capturing)
        return KC_FAIL(ctx, "scatter: the index plan is uploaded, which a CUDA graph capture "
                            "cannot hold");
    size_t bytes = (size_t)(2 * ngroups + 1 + nmembers) * sizeof(int64_t);
    int64_t *dplan = (int64_t *)kc_workspace(ctx, bytes);
    if (!dplan || !kc_upload(ctx, dplan, plan, bytes))
        return false;
    switch (t) {
    case KC_E_F32: return launch_scatter<float>(ctx, updates, slice, dplan, ngroups, r, false, y);
    case KC_E_F16: return launch_scatter<__half>(ctx, updates, slice, dplan, ngroups, r, false, y);
    case KC_E_BF16:
        return launch_scatter<__nv_bfloat16>(ctx, updates, slice, dplan, ngroups, r, false, y);
    case KC_E_I8: return launch_scatter<int8_t>(ctx, updates, slice, dplan, ngroups, r, false, y);
    case KC_E_U8: return launch_scatter<uint8_t>(ctx, updates, slice, dplan, ngroups, r, false, y);
    case KC_E_BOOL: return launch_scatter<uint8_t>(ctx, updates, slice, dplan, ngroups, r, true, y);
    case KC_E_I32: return launch_scatter<int32_t>(ctx, updates, slice, dplan, ngroups, r, false, y);
    case KC_E_I64: return launch_scatter<int64_t>(ctx, updates, slice, dplan, ngroups, r, false, y);
    default: return KC_FAIL(ctx, "scatter: element type %d", (int)t);
    }
}
