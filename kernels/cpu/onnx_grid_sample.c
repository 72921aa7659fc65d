/* GridSample (2-D): each output pixel reads X at the grid's normalized (x, y) in [-1, 1], mapped
 * to pixels by align_corners as ONNX's reference does, with nearest (half to even), bilinear or
 * bicubic (A = -0.75) interpolation. padding_mode says what lies outside: zeros, the border pixel
 * (coordinates clamped), or the image reflected at its border (align_corners: the pixel centres of
 * the edges; otherwise the edges themselves). */
#include "kernels/cpu/cpu_util.h"

#include <string.h>

typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } pad_mode;

static double denormalize(double v, int64_t len, bool align)
{
    return align ? (v + 1) / 2 * (double)(len - 1) : ((v + 1) * (double)len - 1) / 2;
}

static double reflect(double v, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0)
        return lo;
    if (v < lo || v > hi) {
        double dv = v < lo ? lo - v : v - hi;
        double k = floor(dv / range), r = dv - k * range;
        bool even = fmod(k, 2) == 0;
        v = v < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
    }
    return v;
}

typedef struct {
    const float *plane;
    int64_t h, w;
    pad_mode pad;
    bool align;
} image;

static double pixel(const image *im, int64_t r, int64_t c)
{
    if (im->pad == PAD_ZEROS) {
        if (r < 0 || r >= im->h || c < 0 || c >= im->w)
            return 0;
    } else if (im->pad == PAD_BORDER) {
        r = r < 0 ? 0 : r >= im->h ? im->h - 1 : r;
        c = c < 0 ? 0 : c >= im->w ? im->w - 1 : c;
    } else {
        double lo = im->align ? 0 : -0.5;
        c = (int64_t)reflect((double)c, lo, im->align ? (double)im->w - 1 : (double)im->w - 0.5);
        r = (int64_t)reflect((double)r, lo, im->align ? (double)im->h - 1 : (double)im->h - 0.5);
        c = c < 0 ? 0 : c >= im->w ? im->w - 1 : c;
        r = r < 0 ? 0 : r >= im->h ? im->h - 1 : r;
    }
    return im->plane[r * im->w + c];
}

static double cubic(double d) /* |distance| in [0, 2], A = -0.75 */
{
    const double a = -0.75;
    if (d <= 1)
        return ((a + 2) * d - (a + 3)) * d * d + 1;
    return d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0;
}

static double sample(const image *im, const char *mode, double x, double y)
{
    if (strcmp(mode, "nearest") == 0)
        return pixel(im, (int64_t)nearbyint(y), (int64_t)nearbyint(x));
    double fx = floor(x), fy = floor(y), tx = x - fx, ty = y - fy;
    int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
    if (strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0)
        return (1 - ty) * ((1 - tx) * pixel(im, y0, x0) + tx * pixel(im, y0, x0 + 1)) +
               ty * ((1 - tx) * pixel(im, y0 + 1, x0) + tx * pixel(im, y0 + 1, x0 + 1));
    double v = 0;
    for (int i = -1; i <= 2; i++)
        for (int j = -1; j <= 2; j++)
            v += cubic(fabs(ty - i)) * cubic(fabs(tx - j)) * pixel(im, y0 + i, x0 + j);
    return v;
}

bool kn_cpu_GridSample(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *grid = &call->inputs[1];
    kn_tensor *y = &call->outputs[0];
    const char *mode = ir_get_string(call->node, "mode");
    const char *pad = ir_get_string(call->node, "padding_mode");
    bool align = ir_get_int(call->node, "align_corners") != 0;
    if (x->dtype != IR_F32 || x->rank != 4 || grid->rank != 4 || grid->dims[3] != 2 ||
        grid->dims[0] != x->dims[0])
        return kn_fail(call, "X must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
    int64_t n = x->dims[0], c = x->dims[1], ho = grid->dims[1], wo = grid->dims[2];
    if (!kn_check_numel(call, 0, n * c * ho * wo))
        return false;
    image im = {NULL, x->dims[2], x->dims[3],
                strcmp(pad, "border") == 0       ? PAD_BORDER
                : strcmp(pad, "reflection") == 0 ? PAD_REFLECTION
                                                 : PAD_ZEROS,
                align};
    const float *gd = grid->data;
    float *out = y->data;
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < ho * wo; i++) {
            double gx = denormalize(gd[(b * ho * wo + i) * 2], im.w, align);
            double gy = denormalize(gd[(b * ho * wo + i) * 2 + 1], im.h, align);
            if (im.pad == PAD_BORDER) {
                gx = gx < 0 ? 0 : gx > (double)im.w - 1 ? (double)im.w - 1 : gx;
                gy = gy < 0 ? 0 : gy > (double)im.h - 1 ? (double)im.h - 1 : gy;
            } else if (im.pad == PAD_REFLECTION) {
                double lo = align ? 0 : -0.5;
                gx = reflect(gx, lo, align ? (double)im.w - 1 : (double)im.w - 0.5);
                gy = reflect(gy, lo, align ? (double)im.h - 1 : (double)im.h - 0.5);
            }
            /* far outside, every tap reads padding: bounded so that the integer conversions
             * stay defined, NaN included */
            gx = fmin(fmax(gx, -4.0), (double)im.w + 3);
            gy = fmin(fmax(gy, -4.0), (double)im.h + 3);
            for (int64_t ch = 0; ch < c; ch++) {
                im.plane = (const float *)x->data + (b * c + ch) * im.h * im.w;
                out[(b * c + ch) * ho * wo + i] = (float)sample(&im, mode, gx, gy);
            }
        }
    return true;
}
