/* The plain ONNX ops' CUDA launches on resample.cu, pool.cu, unpool.cu and grid_sample.cu: Resize,
 * MaxPool with its Indices, MaxUnpool, GridSample; rows of kn_cuda_onnx_run (launch_onnx.c). Each
 * checks what the CPU kernel checks, with its message, before launching. */
#include "kernels/cuda/cuda_launch.h"

#include "base/check.h"
#include "base/half.h"

#include <math.h>
#include <string.h>

/* Float input i of n read on the host into out (at most max values); *count -1 when absent. */
static bool host_doubles(const kn_cuda_call *call, uint32_t i, double *out, int max, int *count)
{
    const ir_node *n = call->node;
    *count = -1;
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v)
        return true;
    const void *data = kn_cuda_host(call, v);
    if (!data)
        return false;
    const ir_type *t = kn_cuda_type(call, v);
    int64_t numel;
    FR_CHECK(ir_type_numel(t, &numel));
    if (numel > max)
        return kn_cuda_fail(call, "input %u holds %lld values; at most %d are possible", i,
                            (long long)numel, max);
    ir_dtype dt = t->dtype;
    if (dt != IR_F32 && dt != IR_F16 && dt != IR_BF16)
        return kn_cuda_fail(call, "input %u is %s; f32, f16 or bf16 expected", i,
                            ir_dtype_name(dt));
    for (int64_t k = 0; k < numel; k++)
        out[k] = dt == IR_F32   ? ((const float *)data)[k]
                 : dt == IR_F16 ? f16_to_f32(((const uint16_t *)data)[k])
                                : bf16_to_f32(((const uint16_t *)data)[k]);
    *count = (int)numel;
    return true;
}

/* Index of `s` in names (n entries), or `dflt` when it is none of them (the CPU kernel's
 * fallback). */
static int pick(const char *s, const char *const *names, int n, int dflt)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return dflt;
}

/* Resize: scales, sizes and roi read on the host and resolved as the CPU kernel's read_params
 * resolves them, with its errors. */
bool kn_cuda_run_resize(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    if (!kn_cuda_inputs(call, 1, &x) || !kn_cuda_alloc_outputs(call, &y))
        return false;
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {
        "half_pixel",           "align_corners",      "asymmetric",          "pytorch_half_pixel",
        "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    kc_resize_params p = {
        .mode = (kc_resize_mode)pick(ir_get_string(n, "mode"), modes, 3, KC_RESIZE_CUBIC),
        .coord = (kc_coord_mode)pick(ir_get_string(n, "coordinate_transformation_mode"), coords, 7,
                                     KC_COORD_HALF_PIXEL),
        .nearest = (kc_nearest_mode)pick(ir_get_string(n, "nearest_mode"), nearest, 4,
                                         KC_NEAREST_ROUND_PREFER_FLOOR),
        .cubic_a = ir_get_float(n, "cubic_coeff_a"),
        .extrapolation = ir_get_float(n, "extrapolation_value"),
        .exclude_outside = ir_get_int(n, "exclude_outside") != 0};
    double roi[2 * IR_MAX_RANK], sc[IR_MAX_RANK];
    int nroi = -1, nsc = -1, nsz = 0;
    const int64_t *sz = NULL;
    if (!host_doubles(call, 1, roi, 2 * IR_MAX_RANK, &nroi) ||
        !host_doubles(call, 2, sc, IR_MAX_RANK, &nsc) || !kn_cuda_host_ints(call, 3, &sz, &nsz))
        return false;
    bool has_sc = nsc > 0, has_sz = n->ninputs > 3 && n->inputs[3];
    const int64_t *attr;
    uint32_t naxes = ir_get_ints(n, "axes", &attr);
    int axes[IR_MAX_RANK];
    if (naxes > (uint32_t)x.rank)
        return kn_cuda_fail(call, "axes lists %u dims for rank %d", naxes, x.rank);
    for (uint32_t k = 0; k < naxes; k++) {
        if (attr[k] < -x.rank || attr[k] >= x.rank)
            return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)attr[k],
                                x.rank);
        axes[k] = (int)(attr[k] < 0 ? attr[k] + x.rank : attr[k]);
    }
    if (naxes == 0)
        for (int d = 0; d < x.rank; d++)
            axes[naxes++] = d;
    int given = has_sc ? nsc : has_sz ? nsz : -1;
    if (given != (int)naxes)
        return kn_cuda_fail(call, "scales or sizes must hold one value per resized axis (%u)",
                            naxes);
    if (nroi > 0 && nroi != 2 * (int)naxes)
        return kn_cuda_fail(call, "roi must hold %u starts and %u ends", naxes, naxes);
    const char *policy = ir_get_string(n, "keep_aspect_ratio_policy");
    bool not_larger = strcmp(policy, "not_larger") == 0;
    double common = not_larger ? INFINITY : 0;
    for (uint32_t k = 0; k < naxes && !has_sc; k++) {
        double s = (double)sz[k] / (double)x.dims[axes[k]];
        common = not_larger ? fmin(common, s) : fmax(common, s);
    }
    for (int d = 0; d < x.rank; d++) {
        p.scale[d] = 1;
        p.roi_start[d] = 0;
        p.roi_end[d] = 1;
    }
    for (uint32_t k = 0; k < naxes; k++) {
        int d = axes[k];
        p.scale[d] = has_sc                           ? sc[k]
                     : strcmp(policy, "stretch") == 0 ? (double)y.dims[d] / (double)x.dims[d]
                                                      : common;
        if (nroi > 0) {
            p.roi_start[d] = roi[k];
            p.roi_end[d] = roi[naxes + k];
        }
        if (!(p.scale[d] > 0))
            return kn_cuda_fail(call, "scale %g for axis %d is not positive", p.scale[d], d);
    }
    for (int d = 0; d < x.rank && y.numel > 0; d++)
        if (x.dims[d] == 0)
            return kn_cuda_fail(call, "cannot resize an empty axis %d to %lld", d,
                                (long long)y.dims[d]);
    return kc_resize(call->kc, &x, &y, &p) || kn_cuda_failed(call);
}

/* MaxPool with its Indices output: the geometry as for the plain pool (kn_cuda_pool_params). */
bool kn_cuda_run_maxpool_indices(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, out[2];
    kc_pool_params p = {0};
    const char *err = "";
    if (!kn_cuda_inputs(call, 1, &x) || !kn_cuda_raw_outputs(call, out))
        return false;
    if (!kn_cuda_pool_params(n, x.rank, x.dims, &p, &err))
        return kn_cuda_fail(call, "%s", err);
    return kc_maxpool_indices(call->kc, &x, &out[0], out[1].data, &p,
                              ir_get_int(n, "storage_order") != 0) ||
           kn_cuda_failed(call);
}

/* MaxUnpool: the default output's dims and every index checked on the host, as the CPU kernel
 * checks them. */
bool kn_cuda_run_maxunpool(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, idx, y;
    if (!kn_cuda_inputs(call, 1, &x) || !kn_cuda_raw_tensor(call, n->inputs[1], &idx) ||
        !kn_cuda_alloc_outputs(call, &y))
        return false;
    if (idx.numel != x.numel || x.rank < 3 || y.rank != x.rank)
        return kn_cuda_fail(call,
                            "X must be float [N, C, ...] and I hold one index per element of X");
    const int64_t *kernel, *strides, *pads;
    int spatial = x.rank - 2;
    uint32_t nk = ir_get_ints(n, "kernel_shape", &kernel);
    uint32_t ns = ir_get_ints(n, "strides", &strides);
    uint32_t np = ir_get_ints(n, "pads", &pads);
    if (nk != (uint32_t)spatial)
        return kn_cuda_fail(call, "kernel_shape must have %d values", spatial);
    int64_t def[IR_MAX_RANK] = {x.dims[0], x.dims[1]}, def_numel = x.dims[0] * x.dims[1];
    for (int k = 0; k < spatial; k++) {
        def[k + 2] = (x.dims[k + 2] - 1) * (ns ? strides[k] : 1) + kernel[k] -
                     (np ? pads[k] + pads[spatial + k] : 0);
        if (def[k + 2] > y.dims[k + 2] || def[k + 2] < 0)
            return kn_cuda_fail(call, "the output is smaller than the unpooled input");
        def_numel *= def[k + 2];
    }
    if (y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
        return kn_cuda_fail(call, "output_shape must keep N and C");
    const int64_t *host = kn_cuda_host(call, n->inputs[1]);
    if (!host)
        return false;
    for (int64_t i = 0; i < idx.numel; i++)
        if (host[i] < 0 || host[i] >= def_numel)
            return kn_cuda_fail(call, "index %lld is outside the unpooled output's %lld elements",
                                (long long)host[i], (long long)def_numel);
    return kc_maxunpool(call->kc, &x, idx.data, def, &y) || kn_cuda_failed(call);
}

bool kn_cuda_run_grid_sample(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[2], y;
    if (!kn_cuda_inputs(call, 2, in) || !kn_cuda_alloc_outputs(call, &y))
        return false;
    if (in[0].rank != 4 || in[1].rank != 4 || in[1].dims[3] != 2 || in[1].dims[0] != in[0].dims[0])
        return kn_cuda_fail(call, "X must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
    const char *mode = ir_get_string(n, "mode"), *pad = ir_get_string(n, "padding_mode");
    kc_grid_mode m = strcmp(mode, "nearest") == 0 ? KC_GRID_NEAREST
                     : strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0
                         ? KC_GRID_BILINEAR
                         : KC_GRID_BICUBIC;
    kc_grid_pad p = strcmp(pad, "border") == 0       ? KC_GRID_BORDER
                    : strcmp(pad, "reflection") == 0 ? KC_GRID_REFLECTION
                                                     : KC_GRID_ZEROS;
    return kc_grid_sample(call->kc, &in[0], &in[1], m, p, ir_get_int(n, "align_corners") != 0,
                          &y) ||
           kn_cuda_failed(call);
}
