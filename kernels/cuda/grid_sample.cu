// GridSample (2-D) with the CPU reference's semantics (kernels/cpu/onnx_grid_sample.c): each
// output pixel reads X at the grid's normalized (x, y) mapped to pixels by align_corners, with
// nearest (half to even), bilinear or bicubic (A = -0.75) interpolation, and zeros, border or
// reflection padding; in double, rounded once. One thread per output element. The arithmetic is
// the CPU's operation for operation, with IEEE double intrinsics where nvcc would otherwise
// contract a multiply and an add into an FMA.
#include "kernels/cuda/kc_common.cuh"

struct gs_args {
    int64_t n, c, h, w, ho, wo;
    kc_grid_mode mode;
    kc_grid_pad pad;
    bool align;
};

__device__ double gs_denormalize(double v, int64_t len, bool align)
{
    return align ? __dmul_rn((v + 1) / 2, (double)(len - 1))
                 : (__dmul_rn(v + 1, (double)len) - 1) / 2;
}

__device__ double gs_reflect(double v, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0)
        return lo;
    if (v < lo || v > hi) {
        double dv = v < lo ? lo - v : v - hi;
        double k = floor(dv / range), r = __dsub_rn(dv, __dmul_rn(k, range));
        bool even = fmod(k, 2) == 0;
        v = v < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
    }
    return v;
}

template <typename T>
__device__ double gs_pixel(const T *plane, const gs_args &a, int64_t r, int64_t c)
{
    if (a.pad == KC_GRID_ZEROS) {
        if (r < 0 || r >= a.h || c < 0 || c >= a.w)
            return 0;
    } else if (a.pad == KC_GRID_BORDER) {
        r = r < 0 ? 0 : r >= a.h ? a.h - 1 : r;
        c = c < 0 ? 0 : c >= a.w ? a.w - 1 : c;
    } else {
        double lo = a.align ? 0 : -0.5;
        c = (int64_t)gs_reflect((double)c, lo, a.align ? (double)a.w - 1 : (double)a.w - 0.5);
        r = (int64_t)gs_reflect((double)r, lo, a.align ? (double)a.h - 1 : (double)a.h - 0.5);
        c = c < 0 ? 0 : c >= a.w ? a.w - 1 : c;
        r = r < 0 ? 0 : r >= a.h ? a.h - 1 : r;
    }
    return (double)kc_to_f32(plane[r * a.w + c]);
}

__device__ double gs_cubic(double d) // |distance| in [0, 2], A = -0.75
{
    const double a = -0.75;
    if (d <= 1)
        return __dadd_rn(__dmul_rn(__dmul_rn(__dsub_rn(__dmul_rn(a + 2, d), a + 3), d), d), 1);
    if (d < 2) {
        double t = __dsub_rn(__dmul_rn(a, d), __dmul_rn(5, a));
        t = __dadd_rn(__dmul_rn(t, d), __dmul_rn(8, a));
        return __dsub_rn(__dmul_rn(t, d), __dmul_rn(4, a));
    }
    return 0;
}

template <typename T>
__device__ double gs_sample(const T *plane, const gs_args &a, double x, double y)
{
    if (a.mode == KC_GRID_NEAREST)
        return gs_pixel(plane, a, (int64_t)rint(y), (int64_t)rint(x));
    double fx = floor(x), fy = floor(y), tx = x - fx, ty = y - fy;
    int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
    if (a.mode == KC_GRID_BILINEAR) {
        double top = __dadd_rn(__dmul_rn(1 - tx, gs_pixel(plane, a, y0, x0)),
                               __dmul_rn(tx, gs_pixel(plane, a, y0, x0 + 1)));
        double bottom = __dadd_rn(__dmul_rn(1 - tx, gs_pixel(plane, a, y0 + 1, x0)),
                                  __dmul_rn(tx, gs_pixel(plane, a, y0 + 1, x0 + 1)));
        return __dadd_rn(__dmul_rn(1 - ty, top), __dmul_rn(ty, bottom));
    }
    double v = 0;
    for (int i = -1; i <= 2; i++)
        for (int j = -1; j <= 2; j++)
            v = __dadd_rn(v, __dmul_rn(__dmul_rn(gs_cubic(fabs(ty - i)), gs_cubic(fabs(tx - j))),
                                       gs_pixel(plane, a, y0 + i, x0 + j)));
    return v;
}

template <typename T> __global__ void grid_sample_kernel(const T *x, const T *grid, gs_args a, T *y)
{
    int64_t total = a.n * a.c * a.ho * a.wo;
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = o % (a.ho * a.wo), bc = o / (a.ho * a.wo), b = bc / a.c;
        double gx = gs_denormalize(kc_to_f32(grid[(b * a.ho * a.wo + i) * 2]), a.w, a.align);
        double gy = gs_denormalize(kc_to_f32(grid[(b * a.ho * a.wo + i) * 2 + 1]), a.h, a.align);
        if (a.pad == KC_GRID_BORDER) {
            gx = gx < 0 ? 0 : gx > (double)a.w - 1 ? (double)a.w - 1 : gx;
            gy = gy < 0 ? 0 : gy > (double)a.h - 1 ? (double)a.h - 1 : gy;
        } else if (a.pad == KC_GRID_REFLECTION) {
            double lo = a.align ? 0 : -0.5;
            gx = gs_reflect(gx, lo, a.align ? (double)a.w - 1 : (double)a.w - 0.5);
            gy = gs_reflect(gy, lo, a.align ? (double)a.h - 1 : (double)a.h - 0.5);
        }
        gx = fmin(fmax(gx, -4.0), (double)a.w + 3);
        gy = fmin(fmax(gy, -4.0), (double)a.h + 3);
        y[o] = kc_from_f32<T>((float)gs_sample(x + bc * a.h * a.w, a, gx, gy));
    }
}

bool kc_grid_sample(kc_context *ctx, const kc_tensor *x, const kc_tensor *grid, kc_grid_mode mode,
                    kc_grid_pad pad, bool align_corners, kc_tensor *y)
{
    if (x->rank != 4 || grid->rank != 4 || grid->dims[3] != 2 || grid->dims[0] != x->dims[0] ||
        grid->dtype != x->dtype)
        return KC_FAIL(ctx, "grid sample: X must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
    gs_args a = {x->dims[0],    x->dims[1], x->dims[2], x->dims[3],   grid->dims[1],
                 grid->dims[2], mode,       pad,        align_corners};
    int64_t total = a.n * a.c * a.ho * a.wo;
    if (total == 0)
        return true;
    if (a.h == 0 || a.w == 0) // nothing to read: every tap is padding (zeros)
        return kc_fill_bytes(ctx, y->data, 0, (size_t)total * (x->dtype == KC_F32 ? 4 : 2));
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        grid_sample_kernel<T><<<kc_blocks(total), KC_THREADS, 0, ctx->stream>>>(
            (const T *)x->data, (const T *)grid->data, a, (T *)y->data);
        return KC_LAUNCHED(ctx);
    });
}
