/* Shared helpers of the CPU kernels (cpu_util.h, and kernels/helpers.h for the ones other modules
 * use): run-time errors, axes and integer tensors. The rest of cpu_util.h is in cpu_broadcast.c,
 * cpu_gemm.c, cpu_conv.c and cpu_norm.c. */
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
