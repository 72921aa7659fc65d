/* Constants as doubles: what actions fold is computed in double and stored in the weight's dtype,
 * and a value that does not fit (f16 overflows above 65504) refuses the fusion instead of writing
 * an infinity into the model. */
#include "rewrite/internal.h"

#include "base/check.h"
#include "base/half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    dg_context *dg = dg_new();
    size_t have;
    const unsigned char *data = ir_const_bytes(p->g, v, &have, dg);
    if (!data) {
        const char *msg = dg_first_error(dg);
        rw_why(why, "constant: '%s' cannot be read: %s", v->name, msg ? msg : "no reason given");
        dg_free(dg);
        return NULL;
    }
    dg_free(dg);
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
            return rw_why(why, "%s: element %lld of the folded '%s' is %g, which is not finite in %s",
                          what, (long long)i, c->stem, x[i], ir_dtype_name(dt));
    }
    return true;
}
