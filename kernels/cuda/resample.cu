// Resize with the CPU reference's semantics (kernels/cpu/onnx_resize.c): separably, one axis at a
// time (every axis, as the CPU does), values carried in double between passes and rounded to the
// output dtype once. Each output coordinate maps to an input coordinate by the
// coordinate_transformation_mode; nearest takes one tap (nearest_mode), linear two, cubic four
// (cubic_coeff_a); taps past the edges read the edge element, or with exclude_outside get weight 0
// and the rest are renormalized; tf_crop_and_resize outside the input gives extrapolation_value.
//
// One thread per element of each pass computes its own taps. The arithmetic is the CPU's operation
// for operation, with explicit IEEE double intrinsics where nvcc would otherwise contract a
// multiply and an add into an FMA (which the CPU build does not), so coordinates, ties of
// nearest_mode and weights come out bit for bit.
#include "kernels/cuda/kc_common.cuh"

struct rs_taps {
    int ntaps;
    int64_t index[4];
    double weight[4];
    bool outside;
};

struct rs_axis {
    int64_t outer, in, out, inner;
    double scale, roi_start, roi_end;
};

__device__ double rs_input_coord(const kc_resize_params &p, int64_t x, const rs_axis &a)
{
    double xd = (double)x, in = (double)a.in, out = (double)a.out;
    double resized = __dmul_rn(in, a.scale);
    switch (p.coord) {
    case KC_COORD_ALIGN_CORNERS:
        return resized == 1 ? 0 : __ddiv_rn(__dmul_rn(xd, in - 1), resized - 1);
    case KC_COORD_ASYMMETRIC: return __ddiv_rn(xd, a.scale);
    case KC_COORD_PYTORCH_HALF_PIXEL:
        return resized > 1 ? __dsub_rn(__ddiv_rn(xd + 0.5, a.scale), 0.5) : 0;
    case KC_COORD_TF_HALF_PIXEL_FOR_NN: return __ddiv_rn(xd + 0.5, a.scale);
    case KC_COORD_TF_CROP_AND_RESIZE:
        return a.out > 1
                   ? __dadd_rn(__dmul_rn(a.roi_start, in - 1),
                               __ddiv_rn(__dmul_rn(__dmul_rn(xd, a.roi_end - a.roi_start), in - 1),
                                         out - 1))
                   : __dmul_rn(__dmul_rn(0.5, a.roi_start + a.roi_end), in - 1);
    case KC_COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = __ddiv_rn(out, __dmul_rn(a.scale, in));
        double center = in / 2, offset = __dmul_rn(center, 1 - adjustment);
        return __dsub_rn(__dadd_rn(offset, __ddiv_rn(xd + 0.5, a.scale)), 0.5);
    }
    case KC_COORD_HALF_PIXEL: break;
    }
    return __dsub_rn(__ddiv_rn(xd + 0.5, a.scale), 0.5);
}

__device__ int64_t rs_nearest(kc_nearest_mode mode, double v)
{
    if (mode == KC_NEAREST_FLOOR)
        return (int64_t)floor(v);
    if (mode == KC_NEAREST_CEIL)
        return (int64_t)ceil(v);
    double f = floor(v);
    if (v - f == 0.5) // a tie
        return mode == KC_NEAREST_ROUND_PREFER_CEIL ? (int64_t)f + 1 : (int64_t)f;
    return (int64_t)floor(v + 0.5);
}

// ((a + 2) d - (a + 3)) d d + 1 for d <= 1; ((a d - 5 a) d + 8 a) d - 4 a below 2; else 0.
__device__ double rs_cubic(double a, double d)
{
    if (d <= 1)
        return __dadd_rn(__dmul_rn(__dmul_rn(__dsub_rn(__dmul_rn(a + 2, d), a + 3), d), d), 1);
    if (d < 2) {
        double t = __dsub_rn(__dmul_rn(a, d), __dmul_rn(5, a));
        t = __dadd_rn(__dmul_rn(t, d), __dmul_rn(8, a));
        return __dsub_rn(__dmul_rn(t, d), __dmul_rn(4, a));
    }
    return 0;
}

__device__ int64_t rs_clamp(int64_t i, int64_t in)
{
    return i < 0 ? 0 : i >= in ? in - 1 : i;
}

__device__ rs_taps rs_taps_for(const kc_resize_params &p, double v, int64_t in)
{
    rs_taps t = {};
    if (p.coord == KC_COORD_TF_CROP_AND_RESIZE && (v < 0 || v > (double)(in - 1))) {
        t.outside = true;
        return t;
    }
    v = fmin(fmax(v, -3.0), (double)in + 2);
    if (p.mode == KC_RESIZE_NEAREST) {
        t.ntaps = 1;
        t.index[0] = rs_clamp(rs_nearest(p.nearest, v), in);
        t.weight[0] = 1;
        return t;
    }
    double f = floor(v), r = v - f;
    int64_t base = (int64_t)f;
    if (p.mode == KC_RESIZE_LINEAR) {
        t.ntaps = 2;
        t.index[0] = base;
        t.index[1] = base + 1;
        t.weight[0] = 1 - r;
        t.weight[1] = r;
    } else {
        t.ntaps = 4;
        for (int k = 0; k < 4; k++) {
            t.index[k] = base - 1 + k;
            t.weight[k] = rs_cubic(p.cubic_a, fabs(r - (k - 1)));
        }
    }
    double kept = 0;
    for (int k = 0; k < t.ntaps; k++) {
        bool out_of_range = t.index[k] < 0 || t.index[k] >= in;
        if (out_of_range && p.exclude_outside)
            t.weight[k] = 0;
        kept += t.weight[k];
        t.index[k] = rs_clamp(t.index[k], in);
    }
    if (p.exclude_outside && kept != 0)
        for (int k = 0; k < t.ntaps; k++)
            t.weight[k] /= kept;
    return t;
}

__device__ __forceinline__ double rs_load(const double *p)
{
    return *p;
}
template <typename T> __device__ __forceinline__ double rs_load(const T *p)
{
    return (double)kc_to_f32(*p);
}
__device__ __forceinline__ void rs_store(double *p, double v)
{
    *p = v;
}
template <typename T> __device__ __forceinline__ void rs_store(T *p, double v)
{
    *p = kc_from_f32<T>((float)v);
}

// One pass along one axis: dst [outer, out, inner] from src [outer, in, inner].
template <typename S, typename D>
__global__ void resize_pass_kernel(const S *src, kc_resize_params p, rs_axis a, D *dst)
{
    int64_t n = a.outer * a.out * a.inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t inner = i % a.inner, x = (i / a.inner) % a.out, o = i / (a.inner * a.out);
        rs_taps t = rs_taps_for(p, rs_input_coord(p, x, a), a.in);
        double v = t.outside ? p.extrapolation : 0;
        for (int k = 0; k < t.ntaps; k++)
            v = __dadd_rn(v, __dmul_rn(t.weight[k],
                                       rs_load(src + (o * a.in + t.index[k]) * a.inner + inner)));
        rs_store(dst + i, v);
    }
}

template <typename S, typename D>
static bool launch_pass(kc_context *ctx, const void *src, const kc_resize_params &p,
                        const rs_axis &a, void *dst)
{
    resize_pass_kernel<S, D><<<kc_blocks(a.outer * a.out * a.inner), KC_THREADS, 0, ctx->stream>>>(
        (const S *)src, p, a, (D *)dst);
    return KC_LAUNCHED(ctx);
}

bool kc_resize(kc_context *ctx, const kc_tensor *x, kc_tensor *y, const kc_resize_params *p)
{
    if (x->rank != y->rank || x->dtype != y->dtype)
        return KC_FAIL(ctx, "resize: X and Y differ in rank or dtype");
    if (y->numel == 0)
        return true;
    if (x->rank == 0)
        return kc_copy(ctx, y->data, x->data, x->dtype == KC_F32 ? 4 : 2);
    int64_t cap = 1, dims[KC_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 0)
            return KC_FAIL(ctx, "resize: an empty axis %d", d);
        cap *= x->dims[d] > y->dims[d] ? x->dims[d] : y->dims[d];
        dims[d] = x->dims[d];
    }
    double *buf = (double *)kc_workspace(ctx, 2 * (size_t)cap * sizeof(double));
    if (!buf)
        return false;
    int cur = 0;
    for (int d = 0; d < x->rank; d++) {
        rs_axis a = {1, x->dims[d], y->dims[d], 1, p->scale[d], p->roi_start[d], p->roi_end[d]};
        for (int i = 0; i < d; i++)
            a.outer *= dims[i];
        for (int i = d + 1; i < x->rank; i++)
            a.inner *= dims[i];
        bool first = d == 0, last = d == x->rank - 1;
        const void *src = first ? x->data : buf + cur * cap;
        void *dst = last ? y->data : buf + (1 - cur) * cap;
        bool ok = kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
            if (first && last)
                return launch_pass<T, T>(ctx, src, *p, a, dst);
            if (first)
                return launch_pass<T, double>(ctx, src, *p, a, dst);
            if (last)
                return launch_pass<double, T>(ctx, src, *p, a, dst);
            return launch_pass<double, double>(ctx, src, *p, a, dst);
        });
        if (!ok)
            return false;
        dims[d] = y->dims[d];
        cur = 1 - cur;
    }
    return true;
}
