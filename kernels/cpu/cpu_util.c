/* Shared helpers of the CPU kernels; see cpu_util.h. */
#include "kernels/cpu/cpu_util.h"

#include "base/check.h"

#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- run-time errors ----------------------------------------------------------------------- */

bool kn_fail(const kn_call *call, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    const ir_node *n = call->node;
    const char *op = ir_op_name(n->op);
    const char *out = n->noutputs && n->outputs[0] ? n->outputs[0]->name : "?";
    const ir_graph *g = call->graph;
    /* Located at the node when the graph came from text; otherwise name the graph and node. */
    if (g && g->src && n->src_len)
        dg_error(call->dg, g->src, n->src_offset, n->src_len, "%s '%s': %s", op, out, msg);
    else
        dg_error_path(call->dg, NULL, "graph '%s': %s '%s': %s", g && g->name ? g->name : "?", op,
                      out, msg);
    return false;
}

bool kn_check_numel(const kn_call *call, uint32_t index, int64_t numel)
{
    FR_CHECK(index < call->noutputs);
    if (call->outputs[index].numel == numel)
        return true;
    return kn_fail(call, "output %u would have %lld elements but was allocated with %lld", index,
                   (long long)numel, (long long)call->outputs[index].numel);
}

/* ---- axes and integer tensors -------------------------------------------------------------- */

bool kn_axis(const kn_call *call, int64_t axis, int rank, const char *what, int *out)
{
    if (axis < -(int64_t)rank || axis >= (int64_t)rank)
        return kn_fail(call, "%s %lld is out of range for rank %d", what, (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

int64_t kn_get_int(const kn_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case IR_I8:
        return ((const int8_t *)t->data)[i];
    case IR_U8:
    case IR_BOOL:
        return ((const uint8_t *)t->data)[i];
    case IR_I32:
        return ((const int32_t *)t->data)[i];
    case IR_I64:
        return ((const int64_t *)t->data)[i];
    case IR_F32:
        return kn_float_to_int(((const float *)t->data)[i], IR_I64);
    default:
        FR_UNREACHABLE();
        return 0;
    }
}

double kn_get_f64(const kn_tensor *t, int64_t i)
{
    if (t->dtype == IR_F32)
        return ((const float *)t->data)[i];
    return (double)kn_get_int(t, i);
}

int64_t kn_float_to_int(double v, ir_dtype dt)
{
    if (dt == IR_BOOL)
        return v != 0; /* NaN != 0 holds: NaN is true */
    if (isnan(v))
        return 0;
    double lo, hi;
    switch (dt) {
    case IR_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case IR_U8: lo = 0, hi = UINT8_MAX; break;
    case IR_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case IR_I64: lo = (double)INT64_MIN, hi = 9223372036854774784.0; break; /* largest double < 2^63 */
    default: FR_UNREACHABLE(); return 0;
    }
    v = trunc(v);
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    return (int64_t)v;
}

int64_t kn_wrap_int(int64_t v, ir_dtype dt)
{
    switch (dt) {
    case IR_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case IR_U8: return (uint8_t)(uint64_t)v;
    case IR_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case IR_I64: return v;
    case IR_BOOL: return v != 0;
    default: FR_UNREACHABLE(); return 0;
    }
}

void kn_set_f64(kn_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case IR_F32: ((float *)t->data)[i] = (float)v; break;
    case IR_I8: ((int8_t *)t->data)[i] = (int8_t)kn_float_to_int(v, IR_I8); break;
    case IR_U8: ((uint8_t *)t->data)[i] = (uint8_t)kn_float_to_int(v, IR_U8); break;
    case IR_I32: ((int32_t *)t->data)[i] = (int32_t)kn_float_to_int(v, IR_I32); break;
    case IR_I64: ((int64_t *)t->data)[i] = kn_float_to_int(v, IR_I64); break;
    case IR_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)kn_float_to_int(v, IR_BOOL); break;
    default: FR_UNREACHABLE();
    }
}

void kn_set_int(kn_tensor *t, int64_t i, int64_t v)
{
    v = kn_wrap_int(v, t->dtype);
    switch (t->dtype) {
    case IR_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case IR_U8:
    case IR_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case IR_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case IR_I64: ((int64_t *)t->data)[i] = v; break;
    default: FR_UNREACHABLE();
    }
}

int kn_read_ints(const kn_call *call, const kn_tensor *t, int64_t *out, int max, const char *what)
{
    if (t->dtype == IR_F32) {
        kn_fail(call, "%s must be an integer tensor", what);
        return -1;
    }
    if (t->numel > max) {
        kn_fail(call, "%s has %lld values; at most %d are possible", what, (long long)t->numel,
                max);
        return -1;
    }
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = kn_get_int(t, i);
    return (int)t->numel;
}

void kn_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

/* ---- numpy broadcasting -------------------------------------------------------------------- */

/* Output dims and per-operand strides, right-aligned, before merging. */
static bool bcast_layout(const kn_tensor *out, const kn_tensor *const *ins, int ninputs,
                         int64_t (*full)[IR_MAX_RANK])
{
    for (int k = 0; k < ninputs; k++) {
        const kn_tensor *t = ins[k];
        if (t->rank > out->rank)
            return false;
        int64_t s = 1;
        for (int d = out->rank - 1; d >= 0; d--) {
            int td = d - (out->rank - t->rank);
            int64_t dim = td >= 0 ? t->dims[td] : 1;
            if (dim != out->dims[d] && dim != 1)
                return false;
            full[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    return true;
}

bool kn_bcast_init(kn_bcast *it, const kn_tensor *out, const kn_tensor *const *ins, int ninputs)
{
    FR_CHECK(ninputs >= 1 && ninputs <= KN_BCAST_MAX_INPUTS);
    int64_t full[KN_BCAST_MAX_INPUTS][IR_MAX_RANK];
    if (!bcast_layout(out, ins, ninputs, full))
        return false;
    memset(it, 0, sizeof *it);
    it->ninputs = ninputs;
    /* Keep the dims of size other than 1, merging a dim into the previous kept one when every
     * operand steps over the pair as one contiguous (or fully broadcast) dim. */
    int r = 0;
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1)
            continue;
        bool merge = r > 0;
        for (int k = 0; k < ninputs && merge; k++)
            merge = it->strides[k][r - 1] == full[k][d] * out->dims[d];
        if (merge) {
            it->dims[r - 1] *= out->dims[d];
            for (int k = 0; k < ninputs; k++)
                it->strides[k][r - 1] = full[k][d];
            continue;
        }
        it->dims[r] = out->dims[d];
        for (int k = 0; k < ninputs; k++)
            it->strides[k][r] = full[k][d];
        r++;
    }
    if (r == 0) { /* a scalar, or all dims 1: one run of one element */
        it->dims[0] = 1;
        r = 1;
    }
    it->rank = r;
    it->run = it->dims[r - 1];
    for (int k = 0; k < ninputs; k++)
        it->step[k] = it->strides[k][r - 1];
    return true;
}

void kn_bcast_next(kn_bcast *it)
{
    for (int d = it->rank - 2; d >= 0; d--) {
        for (int k = 0; k < it->ninputs; k++)
            it->off[k] += it->strides[k][d];
        if (++it->idx[d] < it->dims[d])
            return;
        for (int k = 0; k < it->ninputs; k++)
            it->off[k] -= it->strides[k][d] * it->dims[d];
        it->idx[d] = 0;
    }
}

#define BCAST_COPY(T)                                                                              \
    do {                                                                                           \
        const T *s = src->data;                                                                    \
        T *y = dst->data;                                                                          \
        for (int64_t o = 0; o < dst->numel; o += it.run, kn_bcast_next(&it))                       \
            for (int64_t i = 0; i < it.run; i++)                                                   \
                y[o + i] = s[it.off[0] + i * it.step[0]];                                          \
    } while (0)

bool kn_broadcast_copy(const kn_tensor *src, kn_tensor *dst, size_t elem_size)
{
    kn_bcast it;
    const kn_tensor *ins[1] = {src};
    if (!kn_bcast_init(&it, dst, ins, 1))
        return false;
    switch (elem_size) {
    case 1: BCAST_COPY(uint8_t); break;
    case 2: BCAST_COPY(uint16_t); break;
    case 4: BCAST_COPY(uint32_t); break;
    case 8: BCAST_COPY(uint64_t); break;
    default: FR_UNREACHABLE();
    }
    return true;
}

/* ---- GEMM ---------------------------------------------------------------------------------- */

/* The same product without BLAS, for sizes that do not fit BLAS's int arguments. */
static void gemm_loops(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++) {
                float av = trans_a ? a[p * lda + i] : a[i * lda + p];
                float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
                acc += (double)av * bv;
            }
            float prev = beta == 0 ? 0 : beta * c[i * ldc + j];
            c[i * ldc + j] = alpha * (float)acc + prev;
        }
    }
}

void kn_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0 || alpha == 0) { /* BLAS needs k >= 1; the product is empty: C = beta * C */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];
        return;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX) {
        gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                b, (int)ldb, beta, c, (int)ldc);
}

/* Offsets of one batch entry of a broadcast batched operand. */
static int64_t batch_offset(int64_t b, int rank, const int64_t *dims, const int64_t *strides)
{
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        off += (b % dims[d]) * strides[d];
        b /= dims[d];
    }
    return off;
}

bool kn_matmul_f32(const kn_call *call, const kn_tensor *a, const kn_tensor *b, kn_tensor *y)
{
    if (a->rank < 1 || b->rank < 1)
        return kn_fail(call, "MatMul operands must have rank >= 1");
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    int64_t k = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (k != kb)
        return kn_fail(call, "inner dims differ: %lld and %lld", (long long)k, (long long)kb);

    /* Batch dims: broadcast of a's and b's leading dims, right-aligned. */
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    int rank = ra > rb ? ra : rb;
    int64_t dims[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], batches = 1;
    int64_t stride_a = m * k, stride_b = k * n;
    for (int d = rank - 1; d >= 0; d--) {
        int da = d - (rank - ra), db = d - (rank - rb);
        int64_t ea = da >= 0 ? a->dims[da] : 1, eb = db >= 0 ? b->dims[db] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return kn_fail(call, "batch dims %lld and %lld do not broadcast", (long long)ea,
                           (long long)eb);
        dims[d] = ea > eb ? ea : eb;
        sa[d] = ea == 1 ? 0 : stride_a;
        sb[d] = eb == 1 ? 0 : stride_b;
        stride_a *= ea;
        stride_b *= eb;
        batches *= dims[d];
    }
    if (y->numel != batches * m * n)
        return kn_fail(call, "MatMul result has %lld elements but the output holds %lld",
                       (long long)(batches * m * n), (long long)y->numel);
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    if (rb == 0) { /* b is one matrix: every row of every batch of a in one GEMM */
        kn_gemm_f32(false, false, batches * m, n, k, 1.0f, pa, k, pb, n, 0.0f, py, n);
        return true;
    }
    for (int64_t i = 0; i < batches; i++)
        kn_gemm_f32(false, false, m, n, k, 1.0f, pa + batch_offset(i, rank, dims, sa), k,
                    pb + batch_offset(i, rank, dims, sb), n, 0.0f, py + i * m * n, n);
    return true;
}

/* ---- sliding windows and convolution ------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

bool kn_window_axis(const char *auto_pad, int64_t in, int64_t kernel, int64_t stride,
                    int64_t dilation, bool ceil_mode, int64_t *pad_begin, int64_t *pad_end,
                    int64_t *out)
{
    int64_t extent = (kernel - 1) * dilation + 1; /* the dilated kernel's span */
    if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
        *out = ceil_div(in, stride);
        int64_t total = (*out - 1) * stride + extent - in;
        if (total < 0)
            total = 0;
        /* an odd total puts the extra pad at the end (UPPER) or the beginning (LOWER) */
        bool upper = auto_pad[5] == 'U';
        *pad_begin = upper ? total / 2 : total - total / 2;
        *pad_end = total - *pad_begin;
        return *out >= 1;
    }
    if (strcmp(auto_pad, "VALID") == 0)
        *pad_begin = *pad_end = 0;
    int64_t span = in + *pad_begin + *pad_end - extent;
    if (span < 0)
        return false;
    *out = (ceil_mode ? ceil_div(span, stride) : span / stride) + 1;
    /* with ceil_mode, a last window that would start inside the end padding is dropped */
    if (ceil_mode && (*out - 1) * stride >= in + *pad_begin)
        (*out)--;
    return *out >= 1;
}

bool kn_conv_geom_init(const kn_call *call, const kn_tensor *x, const kn_tensor *w,
                       const kn_tensor *y, kn_conv_geom *g)
{
    const ir_node *n = call->node;
    int ns = x->rank - 2;
    if (ns < 1 || ns > KN_CONV_MAX_SPATIAL)
        return kn_fail(call, "input rank %d: 1-D, 2-D or 3-D convolutions only", x->rank);
    if (w->rank != x->rank)
        return kn_fail(call, "weight rank %d differs from input rank %d", w->rank, x->rank);
    memset(g, 0, sizeof *g);
    g->nspatial = ns;
    g->batch = x->dims[0];
    g->in_channels = x->dims[1];
    g->out_channels = w->dims[0];
    g->group = ir_get_int(n, "group");
    if (g->group < 1 || g->in_channels != w->dims[1] * g->group || g->out_channels % g->group)
        return kn_fail(call, "input has %lld channels, weight [%lld, %lld, ...], group %lld",
                       (long long)g->in_channels, (long long)w->dims[0], (long long)w->dims[1],
                       (long long)g->group);

    const int64_t *ks, *st, *dl, *pd;
    uint32_t nks = ir_get_ints(n, "kernel_shape", &ks), nst = ir_get_ints(n, "strides", &st);
    uint32_t ndl = ir_get_ints(n, "dilations", &dl), npd = ir_get_ints(n, "pads", &pd);
    if ((nks && nks != (uint32_t)ns) || (nst && nst != (uint32_t)ns) ||
        (ndl && ndl != (uint32_t)ns) || (npd && npd != 2u * (uint32_t)ns))
        return kn_fail(call, "kernel_shape, strides, dilations or pads do not fit %d spatial dims",
                       ns);
    const char *auto_pad = ir_get_string(n, "auto_pad");
    for (int i = 0; i < ns; i++) {
        g->in[i] = x->dims[2 + i];
        g->kernel[i] = w->dims[2 + i];
        if (nks && ks[i] != g->kernel[i])
            return kn_fail(call, "kernel_shape %lld differs from the weight's %lld",
                           (long long)ks[i], (long long)g->kernel[i]);
        g->strides[i] = nst ? st[i] : 1;
        g->dilations[i] = ndl ? dl[i] : 1;
        g->pad_begin[i] = npd ? pd[i] : 0;
        g->pad_end[i] = npd ? pd[ns + i] : 0;
        if (g->strides[i] < 1 || g->dilations[i] < 1 || g->pad_begin[i] < 0 || g->pad_end[i] < 0)
            return kn_fail(call, "strides and dilations must be >= 1 and pads >= 0");
        if (!kn_window_axis(auto_pad, g->in[i], g->kernel[i], g->strides[i], g->dilations[i],
                            false, &g->pad_begin[i], &g->pad_end[i], &g->out[i]))
            return kn_fail(call, "the kernel does not fit spatial dim %d of size %lld", i,
                           (long long)g->in[i]);
    }
    bool fits = y->rank == x->rank && y->dims[0] == g->batch && y->dims[1] == g->out_channels;
    for (int i = 0; i < ns && fits; i++)
        fits = y->dims[2 + i] == g->out[i];
    if (!fits)
        return kn_fail(call, "the output was allocated with another shape than the convolution's");
    return true;
}

/* A convolution's geometry padded to 3 spatial dims by leading dims of size 1. */
typedef struct {
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
} geom3;

static geom3 to_geom3(const kn_conv_geom *g)
{
    geom3 t;
    int lead = 3 - g->nspatial;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        t.in[i] = j >= 0 ? g->in[j] : 1;
        t.out[i] = j >= 0 ? g->out[j] : 1;
        t.k[i] = j >= 0 ? g->kernel[j] : 1;
        t.s[i] = j >= 0 ? g->strides[j] : 1;
        t.d[i] = j >= 0 ? g->dilations[j] : 1;
        t.p[i] = j >= 0 ? g->pad_begin[j] : 0;
    }
    return t;
}

/* One row of the column matrix along the innermost axis: dst[o] = src[o*s + off] where that is
 * inside [0, n), else 0. */
static void im2col_line(const float *src, int64_t n, int64_t off, int64_t s, float *dst,
                        int64_t out)
{
    int64_t lo = off >= 0 ? 0 : ceil_div(-off, s);
    int64_t hi = n - off <= 0 ? 0 : ceil_div(n - off, s);
    if (lo > out)
        lo = out;
    if (hi > out)
        hi = out;
    if (hi < lo)
        hi = lo;
    for (int64_t o = 0; o < lo; o++)
        dst[o] = 0;
    if (s == 1)
        memcpy(dst + lo, src + lo + off, (size_t)(hi - lo) * sizeof *dst);
    else
        for (int64_t o = lo; o < hi; o++)
            dst[o] = src[o * s + off];
    for (int64_t o = hi; o < out; o++)
        dst[o] = 0;
}

/* col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...] or 0 in the padding. */
static void im2col(const float *x, int64_t channels, const geom3 *t, float *col)
{
    int64_t out_sp = t->out[0] * t->out[1] * t->out[2];
    for (int64_t c = 0; c < channels; c++)
        for (int64_t kd = 0; kd < t->k[0]; kd++)
            for (int64_t kh = 0; kh < t->k[1]; kh++)
                for (int64_t kw = 0; kw < t->k[2]; kw++) {
                    float *row = col + (((c * t->k[0] + kd) * t->k[1] + kh) * t->k[2] + kw) * out_sp;
                    for (int64_t od = 0; od < t->out[0]; od++) {
                        int64_t id = od * t->s[0] - t->p[0] + kd * t->d[0];
                        for (int64_t oh = 0; oh < t->out[1]; oh++) {
                            int64_t ih = oh * t->s[1] - t->p[1] + kh * t->d[1];
                            float *dst = row + (od * t->out[1] + oh) * t->out[2];
                            if (id < 0 || id >= t->in[0] || ih < 0 || ih >= t->in[1]) {
                                memset(dst, 0, (size_t)t->out[2] * sizeof *dst);
                                continue;
                            }
                            const float *src = x + ((c * t->in[0] + id) * t->in[1] + ih) * t->in[2];
                            im2col_line(src, t->in[2], kw * t->d[2] - t->p[2], t->s[2], dst,
                                        t->out[2]);
                        }
                    }
                }
}

/* A 1x1 kernel with stride 1 and no padding reads the input as it is stored. */
static bool is_pointwise(const kn_conv_geom *g)
{
    for (int i = 0; i < g->nspatial; i++)
        if (g->kernel[i] != 1 || g->strides[i] != 1 || g->pad_begin[i] || g->pad_end[i])
            return false;
    return true;
}

bool kn_conv_f32(const kn_call *call, const kn_conv_geom *g, const float *x, const float *w,
                 const float *bias, float *y)
{
    geom3 t = to_geom3(g);
    int64_t in_sp = t.in[0] * t.in[1] * t.in[2], out_sp = t.out[0] * t.out[1] * t.out[2];
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    int64_t rows = cg * t.k[0] * t.k[1] * t.k[2]; /* one weight row: C/group x kernel */
    bool pointwise = is_pointwise(g);
    float *col = NULL;
    if (!pointwise && rows * out_sp > 0) {
        size_t bytes;
        if (__builtin_mul_overflow((size_t)rows, (size_t)out_sp * sizeof(float), &bytes) ||
            !(col = malloc(bytes)))
            return kn_fail(call, "cannot allocate the %lld x %lld column buffer", (long long)rows,
                           (long long)out_sp);
    }
    for (int64_t nb = 0; nb < g->batch; nb++) {
        for (int64_t gr = 0; gr < g->group; gr++) {
            const float *xg = x + (nb * g->in_channels + gr * cg) * in_sp;
            float *yg = y + (nb * g->out_channels + gr * mg) * out_sp;
            const float *b = xg;
            if (!pointwise) {
                im2col(xg, cg, &t, col);
                b = col;
            }
            kn_gemm_f32(false, false, mg, out_sp, rows, 1.0f, w + gr * mg * rows, rows, b, out_sp,
                        0.0f, yg, out_sp);
        }
        if (bias)
            for (int64_t m = 0; m < g->out_channels; m++) {
                float *ym = y + (nb * g->out_channels + m) * out_sp;
                for (int64_t i = 0; i < out_sp; i++)
                    ym[i] += bias[m];
            }
    }
    free(col);
    return true;
}

/* ---- normalization and softmax ------------------------------------------------------------- */

void kn_layernorm_f32(const float *x, const float *scale, const float *bias, int64_t rows,
                      int64_t cols, float epsilon, float *y, float *mean, float *inv_std)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < cols; i++)
            sum += xr[i];
        double mu = cols ? sum / (double)cols : 0;
        for (int64_t i = 0; i < cols; i++) /* two passes: no cancellation in E[x^2] - E[x]^2 */
            sq += (xr[i] - mu) * (xr[i] - mu);
        double var = cols ? sq / (double)cols : 0;
        float m = (float)mu, is = (float)(1.0 / sqrt(var + (double)epsilon));
        for (int64_t i = 0; i < cols; i++) {
            float v = (xr[i] - m) * is * scale[i];
            yr[i] = bias ? v + bias[i] : v;
        }
        if (mean)
            mean[r] = m;
        if (inv_std)
            inv_std[r] = is;
    }
}

void kn_softmax_f32(const float *x, float *y, int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xs = x + o * n * inner + j;
            float *ys = y + o * n * inner + j;
            float mx = -INFINITY;
            for (int64_t i = 0; i < n; i++)
                mx = fmaxf(mx, xs[i * inner]);
            double sum = 0;
            for (int64_t i = 0; i < n; i++) {
                float e = expf(xs[i * inner] - mx);
                ys[i * inner] = e;
                sum += e;
            }
            float inv = (float)(1.0 / sum);
            for (int64_t i = 0; i < n; i++)
                ys[i * inner] *= inv;
        }
}
