/* Integer and quantized linear algebra: DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinearMatMul and QLinearConv.
 *
 * The products run on integers: each operand minus its zero point, multiplied and summed in int64
 * (exact: an 8-bit difference is at most 255 in magnitude, so no sum of up to 2^48 products can
 * overflow) and stored as int32 (ONNX's accumulator type; a sum outside int32 wraps, as it would
 * in ONNX Runtime's int32 accumulators). The QLinear ops then requantize: the accumulator times
 * the input scales over the output scale, rounded half to even, plus the output zero point,
 * saturated to its 8-bit range (kn_quantize). */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

/* Element i of an optional per-tensor or per-index parameter (a zero point or scale): the one
 * value of a scalar, else element i; an omitted one is 0. */
static double param(const kn_tensor *t, int64_t i)
{
    if (!t || !t->data)
        return 0;
    return kn_get_f64(t, t->numel == 1 ? 0 : i);
}

static bool check_param(const kn_call *call, const kn_tensor *t, int64_t len, const char *what)
{
    if (!t || !t->data || t->numel == 1 || t->numel == len)
        return true;
    return kn_fail(call, "%s has %lld values; expected 1 or %lld", what, (long long)t->numel,
                   (long long)len);
}

static bool is_8bit(const kn_tensor *t)
{
    return t->dtype == IR_I8 || t->dtype == IR_U8;
}

static const kn_tensor *optional(const kn_call *call, uint32_t i)
{
    return i < call->ninputs && call->inputs[i].data ? &call->inputs[i] : NULL;
}

/* ---- DynamicQuantizeLinear ----------------------------------------------------------------- */

bool kn_dynamic_quantize(const float *x, int64_t n, uint8_t *y, float *scale, uint8_t *zero)
{
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    if (isinf(lo) || isinf(hi))
        return false;
    float s = (hi - lo) / 255.0f;
    int64_t z = s == 0 ? 0 : kn_quantize((double)(0.0f - lo / s), 0, 0, 255);
    for (int64_t i = 0; i < n; i++)
        y[i] = (uint8_t)(s == 0 ? 0 : kn_quantize((double)(x[i] / s), z, 0, 255));
    *scale = s;
    *zero = (uint8_t)z;
    return true;
}

/* ONNX's formula: the range [min(0, min x), max(0, max x)] maps onto [0, 255]; scale = range / 255,
 * zero point = round(-min / scale) saturated, y = saturate(round(x / scale) + zero point). An
 * all-zero input has scale 0: the zero point and every y are then 0. NaN inputs are skipped by the
 * range and quantize to the zero point. */
bool kn_cpu_DynamicQuantizeLinear(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0];
    if (x->dtype != IR_F32)
        return kn_fail(call, "input dtype %s is not supported", ir_dtype_name(x->dtype));
    if (!kn_check_numel(call, 0, x->numel) || !kn_check_numel(call, 1, 1) ||
        !kn_check_numel(call, 2, 1))
        return false;
    if (!kn_dynamic_quantize(x->data, x->numel, call->outputs[0].data, call->outputs[1].data,
                             call->outputs[2].data))
        return kn_fail(call, "the input holds an infinity: no scale covers it");
    return true;
}

/* ---- integer products ---------------------------------------------------------------------- */

/* acc = (a - a_zp) @ (b - b_zp) with numpy matmul's shapes (1-D operands promoted, batch dims
 * broadcast); acc has y's element count. a_zp is per tensor or per row, b_zp per tensor or per
 * column. */
static bool int_matmul(const kn_call *call, const kn_tensor *a, const kn_tensor *a_zp,
                       const kn_tensor *b, const kn_tensor *b_zp, const kn_tensor *y, int32_t *acc)
{
    if (!is_8bit(a) || !is_8bit(b))
        return kn_fail(call, "A and B must be i8 or u8, not %s and %s", ir_dtype_name(a->dtype),
                       ir_dtype_name(b->dtype));
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (k != kb)
        return kn_fail(call, "inner dimensions differ (%lld vs %lld)", (long long)k, (long long)kb);
    if (!check_param(call, a_zp, m, "a_zero_point") || !check_param(call, b_zp, n, "b_zero_point"))
        return false;
    /* batch dims of y, and each operand's stride along them (0 where it broadcasts) */
    int yb = y->rank - (a->rank >= 2) - (b->rank >= 2);
    int64_t as[IR_MAX_RANK] = {0}, bs[IR_MAX_RANK] = {0}, pos[IR_MAX_RANK] = {0};
    int64_t astr = m * k, bstr = k * n;
    for (int d = yb - 1, da = a->rank - 3, db = b->rank - 3; d >= 0; d--, da--, db--) {
        if (da >= 0 && a->dims[da] != 1)
            as[d] = astr;
        if (db >= 0 && b->dims[db] != 1)
            bs[d] = bstr;
        astr *= da >= 0 ? a->dims[da] : 1;
        bstr *= db >= 0 ? b->dims[db] : 1;
    }
    int64_t batches = 1;
    for (int d = 0; d < yb; d++)
        batches *= y->dims[d];
    if (batches * m * n != y->numel)
        return kn_fail(call, "the output was allocated with another shape than the product's");
    for (int64_t t = 0; t < batches; t++) {
        int64_t ao = 0, bo = 0;
        for (int d = 0; d < yb; d++) {
            ao += pos[d] * as[d];
            bo += pos[d] * bs[d];
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t s = 0, za = (int64_t)param(a_zp, i), zb = (int64_t)param(b_zp, j);
                for (int64_t p = 0; p < k; p++)
                    s +=
                        (kn_get_int(a, ao + i * k + p) - za) * (kn_get_int(b, bo + p * n + j) - zb);
                acc[(t * m + i) * n + j] = (int32_t)(uint32_t)(uint64_t)s;
            }
        for (int d = yb - 1; d >= 0 && ++pos[d] == y->dims[d]; d--)
            pos[d] = 0;
    }
    return true;
}

/* acc = conv(x - x_zp, w - w_zp) with Conv's attributes; w_zp per tensor or per output channel. */
static bool int_conv(const kn_call *call, const kn_tensor *x, const kn_tensor *x_zp,
                     const kn_tensor *w, const kn_tensor *w_zp, const kn_tensor *y, int32_t *acc)
{
    kn_conv_geom g;
    if (!is_8bit(x) || !is_8bit(w))
        return kn_fail(call, "x and w must be i8 or u8, not %s and %s", ir_dtype_name(x->dtype),
                       ir_dtype_name(w->dtype));
    if (!kn_conv_geom_init(call, x, w, y, &g) || !check_param(call, x_zp, 1, "x_zero_point") ||
        !check_param(call, w_zp, g.out_channels, "w_zero_point"))
        return false;
    /* pad to 3 spatial dims with leading dims of size 1 */
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, ker[3] = {1, 1, 1}, st[3] = {1, 1, 1};
    int64_t dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    for (int i = 0, o = 3 - g.nspatial; i < g.nspatial; i++) {
        in[o + i] = g.in[i], out[o + i] = g.out[i], ker[o + i] = g.kernel[i];
        st[o + i] = g.strides[i], dl[o + i] = g.dilations[i], pb[o + i] = g.pad_begin[i];
    }
    int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
    int64_t in_size = in[0] * in[1] * in[2], ksize = ker[0] * ker[1] * ker[2];
    int64_t zx = (int64_t)param(x_zp, 0), at = 0;
    for (int64_t b = 0; b < g.batch; b++)
        for (int64_t mo = 0; mo < g.out_channels; mo++) {
            int64_t grp = mo / mg, zw = (int64_t)param(w_zp, mo);
            for (int64_t o0 = 0; o0 < out[0]; o0++)
                for (int64_t o1 = 0; o1 < out[1]; o1++)
                    for (int64_t o2 = 0; o2 < out[2]; o2++, at++) {
                        int64_t s = 0;
                        for (int64_t c = 0; c < cg; c++) {
                            int64_t xc = (b * g.in_channels + grp * cg + c) * in_size;
                            int64_t wc = (mo * cg + c) * ksize;
                            for (int64_t k0 = 0; k0 < ker[0]; k0++)
                                for (int64_t k1 = 0; k1 < ker[1]; k1++)
                                    for (int64_t k2 = 0; k2 < ker[2]; k2++) {
                                        int64_t i0 = o0 * st[0] + k0 * dl[0] - pb[0];
                                        int64_t i1 = o1 * st[1] + k1 * dl[1] - pb[1];
                                        int64_t i2 = o2 * st[2] + k2 * dl[2] - pb[2];
                                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                                            i2 < 0 || i2 >= in[2])
                                            continue; /* padding: x - x_zp is 0 there */
                                        int64_t xv =
                                            kn_get_int(x, xc + (i0 * in[1] + i1) * in[2] + i2);
                                        int64_t wv =
                                            kn_get_int(w, wc + (k0 * ker[1] + k1) * ker[2] + k2);
                                        s += (xv - zx) * (wv - zw);
                                    }
                        }
                        acc[at] = (int32_t)(uint32_t)(uint64_t)s;
                    }
        }
    return true;
}

bool kn_cpu_MatMulInteger(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    if (y->dtype != IR_I32)
        return kn_fail(call, "the output must be i32");
    return int_matmul(call, &call->inputs[0], optional(call, 2), &call->inputs[1],
                      optional(call, 3), y, y->data);
}

bool kn_cpu_ConvInteger(const kn_call *call)
{
    kn_tensor *y = &call->outputs[0];
    if (y->dtype != IR_I32)
        return kn_fail(call, "the output must be i32");
    return int_conv(call, &call->inputs[0], optional(call, 2), &call->inputs[1], optional(call, 3),
                    y, y->data);
}

/* ---- requantized products ------------------------------------------------------------------ */

/* y[i] = saturate(round(acc[i] * a_scale[row] * b_scale[col] / y_scale) + y_zp), where row and col
 * pick the per-row / per-column (or per-channel) scales: row = i / row_div % rows, col likewise. */
typedef struct {
    const kn_tensor *a_scale, *b_scale, *y_scale, *y_zp;
    int64_t row_div, rows, col_div, cols;
} requant;

static bool requantize(const kn_call *call, const requant *r, const int32_t *acc, kn_tensor *y)
{
    if (!is_8bit(y) || y->dtype != r->y_zp->dtype)
        return kn_fail(call, "the output must have y_zero_point's 8-bit dtype");
    int64_t lo = y->dtype == IR_I8 ? -128 : 0, hi = y->dtype == IR_I8 ? 127 : 255;
    double ys = param(r->y_scale, 0);
    int64_t yz = (int64_t)param(r->y_zp, 0);
    for (int64_t i = 0; i < y->numel; i++) {
        double sa = param(r->a_scale, i / r->row_div % r->rows);
        double sb = param(r->b_scale, i / r->col_div % r->cols);
        /* scales multiply in f32, as ONNX Runtime's reference does */
        float scale = (float)sa * (float)sb / (float)ys;
        kn_set_f64(y, i, (double)kn_quantize((double)((float)acc[i] * scale), yz, lo, hi));
    }
    return true;
}

bool kn_cpu_QLinearMatMul(const kn_call *call)
{
    const kn_tensor *a = &call->inputs[0], *b = &call->inputs[3];
    kn_tensor *y = &call->outputs[0];
    int32_t *acc = malloc((size_t)(y->numel ? y->numel : 1) * sizeof *acc);
    if (!acc)
        return kn_fail(call, "cannot allocate the accumulators");
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1,
            n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    requant r = {
        &call->inputs[1], &call->inputs[4], &call->inputs[6], &call->inputs[7], n, m, 1, n};
    bool ok = check_param(call, r.a_scale, m, "a_scale") &&
              check_param(call, r.b_scale, n, "b_scale") &&
              int_matmul(call, a, &call->inputs[2], b, &call->inputs[5], y, acc) &&
              requantize(call, &r, acc, y);
    free(acc);
    return ok;
}

bool kn_cpu_QLinearConv(const kn_call *call)
{
    const kn_tensor *x = &call->inputs[0], *w = &call->inputs[3], *bias = optional(call, 8);
    kn_tensor *y = &call->outputs[0];
    int32_t *acc = malloc((size_t)(y->numel ? y->numel : 1) * sizeof *acc);
    if (!acc)
        return kn_fail(call, "cannot allocate the accumulators");
    int64_t m = w->rank >= 1 ? w->dims[0] : 1, spatial = 1;
    for (int d = 2; d < y->rank; d++)
        spatial *= y->dims[d];
    requant r = {
        &call->inputs[1], &call->inputs[4], &call->inputs[6], &call->inputs[7], 1, 1, spatial, m};
    bool ok = check_param(call, r.b_scale, m, "w_scale") &&
              check_param(call, bias, m, "the bias") &&
              int_conv(call, x, &call->inputs[2], w, &call->inputs[5], y, acc);
    if (ok && bias)
        for (int64_t i = 0; i < y->numel; i++)
            acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)kn_get_int(bias, i / spatial % m));
    ok = ok && requantize(call, &r, acc, y);
    free(acc);
    return ok;
}
