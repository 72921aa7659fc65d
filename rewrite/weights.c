/* Constants as doubles: what actions fold is computed in double and stored in the weight's dtype,
 * and a value that does not fit (f16 overflows above 65504) refuses the fusion instead of writing
 * an infinity into the model. */
#define _DEFAULT_SOURCE /* madvise */

#include "rewrite/internal.h"

#include "base/check.h"
#include "base/half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const void *rw_const_bytes(rw_plan *p, ir_value *v, int64_t *numel, char *why)
{
    if (!v || v->kind != IR_VALUE_CONST)
        return rw_why(why, "constant: '%s' must be a constant", v ? v->name : "(omitted)"), NULL;
    int64_t nbytes;
    if (!ir_type_numel(v->type, numel) || !ir_type_nbytes(v->type, &nbytes))
        return rw_why(why, "constant: '%s' has no static size", v->name), NULL;
    /* its data and a copy in double: a constant declared huge must not be materialized */
    if (*numel > (p->ctx->budget_left - nbytes) / (int64_t)sizeof(double))
        return rw_why(why,
                      "budget: reading '%s' (%lld elements) would take more than the %lld bytes "
                      "left of the folding budget",
                      v->name, (long long)*numel, (long long)p->ctx->budget_left),
               NULL;
    /* read where the bytes lie (a weight imported from .onnx stays in its mapped file): the
     * folded result is what the fold keeps, not a second copy of its input */
    dg_context *dg = rw_quiet(p->ctx); /* one context for all reads, not a dg_new per call */
    size_t have;
    const unsigned char *data = ir_const_bytes(p->g, v, &have, dg);
    if (!data) {
        const char *msg = dg_first_error(dg);
        rw_why(why, "constant: '%s' cannot be read: %s", v->name, msg ? msg : "no reason given");
        rw_quiet_done(p->ctx, dg);
        return NULL;
    }
    rw_quiet_done(p->ctx, dg);
    FR_CHECK(have == (size_t)nbytes);
    return data;
}

double *rw_const_read(rw_plan *p, ir_value *v, int64_t *numel, char *why)
{
    const unsigned char *data = rw_const_bytes(p, v, numel, why);
    if (!data)
        return NULL;
    size_t have = (size_t)*numel * ir_dtype_size(v->type->dtype);
    double *x = malloc((*numel ? (size_t)*numel : 1) * sizeof *x);
    if (!x)
        return rw_why(why, "budget: no memory for the %lld elements of '%s'", (long long)*numel,
                      v->name),
               NULL;
    /* elements are read by memcpy: bytes in a mapped file are not aligned to their type */
#define RW_ELEM(T, i) (memcpy(&e.T, data + (size_t)(i) * sizeof e.T, sizeof e.T), e.T)
    union {
        float f32;
        double f64;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        uint64_t u64;
        int8_t i8;
        uint8_t u8;
        int32_t i32;
        int64_t i64;
    } e;
    for (int64_t i = 0; i < *numel; i++) {
        switch (v->type->dtype) {
        case IR_F32: x[i] = RW_ELEM(f32, i); break;
        case IR_F16: x[i] = f16_to_f32(RW_ELEM(u16, i)); break;
        case IR_BF16: x[i] = bf16_to_f32(RW_ELEM(u16, i)); break;
        case IR_F64: x[i] = RW_ELEM(f64, i); break;
        case IR_I16: x[i] = RW_ELEM(i16, i); break;
        case IR_U16: x[i] = RW_ELEM(u16, i); break;
        case IR_U32: x[i] = RW_ELEM(u32, i); break;
        case IR_U64: x[i] = (double)RW_ELEM(u64, i); break;
        case IR_I8: x[i] = RW_ELEM(i8, i); break;
        case IR_U8: x[i] = RW_ELEM(u8, i); break;
        case IR_I32: x[i] = RW_ELEM(i32, i); break;
        case IR_I64: x[i] = (double)RW_ELEM(i64, i); break;
        case IR_BOOL: x[i] = RW_ELEM(u8, i) != 0; break;
        default: FR_UNREACHABLE();
        }
    }
#undef RW_ELEM
    ir_const_release(p->g, data, have); /* read once: its pages need not stay */
    return x;
}

bool rw_not_finite(char *why, const char *what, int64_t i, const char *stem, double x, ir_dtype dt)
{
    return rw_why(why, "%s: element %lld of the folded '%s' is %g, which is not finite in %s", what,
                  (long long)i, stem, x, ir_dtype_name(dt));
}

bool rw_const_alloc(rw_newconst *c, int64_t n, char *why)
{
    enum { HUGE_PAGE = 2 << 20 };
    c->nbytes = (size_t)n * ir_dtype_size(c->value->type->dtype);
    if (c->nbytes >= 2 * HUGE_PAGE) { /* a large result in huge pages: 512 times fewer faults */
        size_t size = (c->nbytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        if ((c->data = aligned_alloc(HUGE_PAGE, size)) != NULL) {
            madvise(c->data, size, MADV_HUGEPAGE);
            return true;
        }
    }
    c->data = malloc(c->nbytes ? c->nbytes : 1);
    return c->data ? true
                   : rw_why(why, "budget: no memory for %zu bytes of folded weights", c->nbytes);
}

/* Whether one of the count elements of a float dtype at p (unaligned) has an exponent of all
 * ones: an infinity or a NaN, in every float encoding. Blocks of a fixed count, whose loop the
 * compiler vectorizes at -O2: (e & mask) + lowest exponent bit carries into the sign bit of its
 * lane only for an exponent of all ones. */
static bool any_not_finite(ir_dtype dt, const unsigned char *p, size_t count)
{
    enum { BLOCK = 64 };
    size_t k = 0;
    if (dt == IR_F32) {
        uint32_t acc = 0;
        for (; k + BLOCK <= count; k += BLOCK) {
            const unsigned char *q = p + 4 * k;
            for (size_t j = 0; j < BLOCK; j++) {
                uint32_t u;
                memcpy(&u, q + 4 * j, 4);
                acc |= (u & 0x7f800000u) + 0x00800000u;
            }
        }
        for (; k < count; k++) {
            uint32_t u;
            memcpy(&u, p + 4 * k, 4);
            acc |= (u & 0x7f800000u) + 0x00800000u;
        }
        return acc & 0x80000000u;
    }
    if (dt == IR_F64) {
        uint64_t acc = 0;
        for (; k < count; k++) {
            uint64_t u;
            memcpy(&u, p + 8 * k, 8);
            acc |= (u & 0x7ff0000000000000u) + 0x0010000000000000u;
        }
        return acc & 0x8000000000000000u;
    }
    FR_CHECK(dt == IR_F16 || dt == IR_BF16);
    uint16_t mask = dt == IR_F16 ? 0x7c00u : 0x7f80u, low = dt == IR_F16 ? 0x0400u : 0x0080u;
    uint16_t acc = 0;
    for (; k + BLOCK <= count; k += BLOCK) {
        const unsigned char *q = p + 2 * k;
        for (size_t j = 0; j < BLOCK; j++) {
            uint16_t u;
            memcpy(&u, q + 2 * j, 2);
            acc |= (uint16_t)((u & mask) + low);
        }
    }
    for (; k < count; k++) {
        uint16_t u;
        memcpy(&u, p + 2 * k, 2);
        acc |= (uint16_t)((u & mask) + low);
    }
    return acc & 0x8000u;
}

bool rw_any_not_finite(ir_dtype dt, const void *data, int64_t n)
{
    FR_CHECK(ir_dtype_is_float(dt));
    return n > 0 && any_not_finite(dt, data, (size_t)n);
}

int64_t rw_first_not_finite(ir_dtype dt, const void *data, int64_t n)
{
    enum { BLOCK = 4096 };
    FR_CHECK(ir_dtype_is_float(dt));
    const unsigned char *p = data;
    size_t size = ir_dtype_size(dt);
    for (size_t first = 0; first < (size_t)n; first += BLOCK) {
        size_t count = (size_t)n - first < BLOCK ? (size_t)n - first : BLOCK;
        const unsigned char *block = p + first * size;
        if (!any_not_finite(dt, block, count))
            continue;
        for (size_t k = 0; k < count; k++) /* the block holds one: which */
            if (any_not_finite(dt, block + size * k, 1))
                return (int64_t)(first + k);
    }
    return -1;
}

typedef struct {
    ir_dtype dt;
    double max;
    bool bad;
} scan_state;

static bool scan_finite(void *arg, const void *chunk, size_t offset, size_t len)
{
    scan_state *st = arg;
    st->bad = any_not_finite(st->dt, chunk, len / ir_dtype_size(st->dt));
    return !st->bad;
}

bool rw_scan_not_finite(rw_plan *p, ir_dtype dt, const void *data, int64_t n)
{
    FR_CHECK(ir_dtype_is_float(dt));
    scan_state st = {.dt = dt};
    ir_const_scan(p->g, data, (size_t)n * ir_dtype_size(dt), ir_dtype_size(dt), scan_finite, &st);
    return st.bad;
}

static bool scan_max(void *arg, const void *chunk, size_t offset, size_t len)
{
    scan_state *st = arg;
    double m = ir_const_max_abs(st->dt, chunk, len / ir_dtype_size(st->dt));
    st->max = isnan(m) || m > st->max ? m : st->max;
    return isfinite(st->max);
}

double rw_scan_max_abs(rw_plan *p, ir_dtype dt, const void *data, int64_t n)
{
    FR_CHECK(ir_dtype_is_float(dt));
    scan_state st = {.dt = dt};
    ir_const_scan(p->g, data, (size_t)n * ir_dtype_size(dt), ir_dtype_size(dt), scan_max, &st);
    return st.max;
}

bool rw_scale_stays_finite(ir_dtype dt, double max_abs, double max_factor)
{
    if (!isfinite(max_abs) || !isfinite(max_factor))
        return false;
    /* the largest magnitude is an element's: exact in dt; scaled by the kernel itself */
    unsigned char in[8], out[8];
    if (dt == IR_F64) {
        memcpy(in, &max_abs, 8);
    } else if (dt == IR_F32) {
        float f = (float)max_abs;
        memcpy(in, &f, 4);
    } else {
        uint16_t h = dt == IR_F16 ? f32_to_f16((float)max_abs) : f32_to_bf16((float)max_abs);
        memcpy(in, &h, 2);
    }
    return ir_const_scale_elems(dt, out, in, 0, 1, max_factor) == 0;
}

bool rw_const_store(rw_newconst *c, const double *x, int64_t n, const char *what, char *why)
{
    ir_dtype dt = c->value->type->dtype;
    if (!ir_dtype_is_float(dt))
        return rw_why(why, "%s: folding into %s weights is not supported", what, ir_dtype_name(dt));
    size_t size = ir_dtype_size(dt);
    c->nbytes = (size_t)n * size;
    c->data = malloc(c->nbytes ? c->nbytes : 1);
    if (!c->data)
        return rw_why(why, "budget: no memory for %zu bytes of folded weights", c->nbytes);
    for (int64_t i = 0; i < n; i++) {
        float f = dt == IR_F64 ? 0.0f : (float)x[i];
        double back = f;
        if (dt == IR_F64) { /* the fold's own precision: no rounding through f32 */
            ((double *)c->data)[i] = x[i];
            back = x[i];
        } else if (dt == IR_F32) {
            ((float *)c->data)[i] = f;
        } else if (dt == IR_F16) {
            uint16_t h = f32_to_f16(f);
            ((uint16_t *)c->data)[i] = h;
            back = f16_to_f32(h);
        } else { /* IR_BF16 */
            uint16_t h = f32_to_bf16(f);
            ((uint16_t *)c->data)[i] = h;
            back = bf16_to_f32(h);
        }
        if (!isfinite(x[i]) || !isfinite(back))
            return rw_not_finite(why, what, i, c->stem, x[i], dt);
    }
    return true;
}
