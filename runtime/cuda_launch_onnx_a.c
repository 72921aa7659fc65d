/* cuda-a (runtime/cuda_internal.h): the integer kernel (integer.cu) and the generators
 * (generate.cu). */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/helpers.h"

#include <math.h>
#include <string.h>

/* Element k of input i read on the host as its CPU kernel reads it (kn_get_f64 and kn_get_int on
 * the view the CPU executor gives it: f16/bf16 widened to f32); false after reporting. */
static bool host_elem(executor *ex, ir_node *n, uint32_t i, int64_t k, double *f, int64_t *iv)
{
    ir_value *v = n->inputs[i];
    const void *data = rt_cu_ensure_host(ex, v, n);
    if (!data)
        return false;
    ir_dtype dt = ex->slots[v->id].type.dtype;
    float w;
    kn_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = (void *)data};
    if (dt == IR_F16 || dt == IR_BF16) {
        uint16_t h = ((const uint16_t *)data)[k];
        w = dt == IR_F16 ? f16_to_f32(h) : bf16_to_f32(h);
        t = (kn_tensor){.dtype = IR_F32, .rank = 0, .numel = 1, .data = &w};
        k = 0;
    }
    if (f)
        *f = kn_get_f64(&t, k);
    if (iv)
        *iv = kn_get_int(&t, k);
    return true;
}

static int64_t slot_numel(const executor *ex, const ir_value *v)
{
    int64_t numel = 0;
    FR_CHECK(ir_type_numel(&ex->slots[v->id].type, &numel));
    return numel;
}

/* v stored in dt as the CPU kernels store a double (kn_set_f64): floats through f32 and then the
 * 16-bit storage, integers truncated and saturated; the element's bytes in the low bytes. */
static uint64_t elem_bits(ir_dtype dt, double v)
{
    uint64_t bits = 0;
    if (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16) {
        float f = (float)v;
        uint16_t h = dt == IR_F16 ? f32_to_f16(f) : f32_to_bf16(f);
        if (dt == IR_F32)
            memcpy(&bits, &f, sizeof f);
        else
            memcpy(&bits, &h, sizeof h);
    } else {
        kn_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = &bits};
        kn_set_f64(&t, 0, v);
    }
    return bits;
}

static kc_int_op int_op_of(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_Add: return KC_INT_ADD;
    case IR_OP_Sub: return KC_INT_SUB;
    case IR_OP_Mul: return KC_INT_MUL;
    case IR_OP_Div: return KC_INT_DIV;
    case IR_OP_Mod: return ir_get_int(n, "fmod") != 0 ? KC_INT_FMOD : KC_INT_MOD;
    case IR_OP_Max: return KC_INT_MAX;
    case IR_OP_Min: return KC_INT_MIN;
    case IR_OP_BitwiseAnd: return KC_INT_AND;
    case IR_OP_BitwiseOr: return KC_INT_OR;
    case IR_OP_BitwiseXor: return KC_INT_XOR;
    case IR_OP_BitShift:
        return strcmp(ir_get_string(n, "direction"), "LEFT") == 0 ? KC_INT_SHL : KC_INT_SHR;
    case IR_OP_Neg: return KC_INT_NEG;
    case IR_OP_Abs: return KC_INT_ABS;
    case IR_OP_BitwiseNot: return KC_INT_NOT;
    case IR_OP_Sign: return KC_INT_SIGN;
    case IR_OP_Relu: return KC_INT_RELU;
    case IR_OP_Clip: return KC_INT_CLIP;
    case IR_OP_Shrink: return KC_INT_SHRINK;
    default: FR_UNREACHABLE(); return KC_INT_ADD;
    }
}

/* Clip's integer bound (input `i`, else attribute `attr`, else `none`), as the CPU reads it. */
static bool int_clip_bound(executor *ex, ir_node *n, uint32_t i, const char *attr, int64_t none,
                           int64_t *out)
{
    *out = none;
    if (i < n->ninputs && n->inputs[i]) {
        int64_t count = slot_numel(ex, n->inputs[i]);
        if (count != 1)
            return rt_cu_report(ex, n, "%s must be a scalar, not %lld values", attr,
                                (long long)count);
        return host_elem(ex, n, i, 0, NULL, out);
    }
    if (ir_node_attr(n, attr))
        *out = kn_float_to_int(ir_get_float(n, attr), IR_I64);
    return true;
}

/* Integer arithmetic, Mod, BitShift and the Bitwise* ops; zero divisors are the CPU's errors,
 * found on the host before the launch. Max and Min fold their inputs in order into Y. */
static bool run_int_op(executor *ex, ir_node *n)
{
    kc_elem t;
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype;
    if (!rt_cu_elem_of(dt, &t))
        return rt_cu_report(ex, n, "%s: no CUDA integer kernel takes it", ir_dtype_name(dt));
    kc_int_op op = int_op_of(n);
    kc_int_args args = {INT64_MIN, INT64_MAX, 0, 0};
    kc_tensor y, in[2] = {{0}, {0}};
    if (!rt_cu_raw_output(ex, n, &y))
        return false;
    bool divides = op == KC_INT_DIV || op == KC_INT_MOD || op == KC_INT_FMOD;
    if (divides && !ir_dtype_is_float(dt) && y.numel > 0) {
        int64_t count = slot_numel(ex, n->inputs[1]);
        for (int64_t k = 0; k < count; k++) {
            int64_t v;
            if (!host_elem(ex, n, 1, k, NULL, &v))
                return false;
            if (v == 0)
                return rt_cu_report(ex, n, "integer %s by zero (divisor element %lld)",
                                    op == KC_INT_DIV ? "division" : "modulo", (long long)k);
        }
    }
    if (op == KC_INT_CLIP && (!int_clip_bound(ex, n, 1, "min", INT64_MIN, &args.lo) ||
                              !int_clip_bound(ex, n, 2, "max", INT64_MAX, &args.hi)))
        return false;
    if (op == KC_INT_SHRINK) {
        args.bias = ir_get_float(n, "bias");
        args.lambd = ir_get_float(n, "lambd");
    }
    bool unary = op >= KC_INT_NEG;
    uint32_t operands = unary ? 1 : n->ninputs;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &in[0]))
        return false;
    if (operands == 1) /* a unary op, or Max/Min of one input: max(x, x) broadcast is x */
        return kc_int_ew(ex->kc, op, &in[0], &in[0], t, &args, &y) || rt_cu_failed(ex, n);
    for (uint32_t k = 1; k < operands; k++) {
        if (!rt_cu_raw_tensor(ex, n, n->inputs[k], &in[1]))
            return false;
        if (!kc_int_ew(ex->kc, op, k == 1 ? &in[0] : &y, &in[1], t, &args, &y))
            return rt_cu_failed(ex, n);
    }
    return true;
}

/* Range: start, limit and delta read on the host and checked as the CPU kernel checks them; the
 * element count must be the one inference gave the output. */
static bool run_range(executor *ex, ir_node *n, kc_tensor *y, kc_elem t, ir_dtype dt)
{
    double f[3];
    int64_t iv[3];
    for (uint32_t i = 0; i < 3; i++)
        if (slot_numel(ex, n->inputs[i]) != 1)
            return rt_cu_report(ex, n, "start, limit and delta must be scalars");
    for (uint32_t i = 0; i < 3; i++)
        if (!host_elem(ex, n, i, 0, &f[i], &iv[i]))
            return false;
    int64_t count;
    if (ir_dtype_is_float(dt)) {
        float start = (float)f[0], limit = (float)f[1], delta = (float)f[2];
        if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
            return rt_cu_report(ex, n, "delta must be non-zero and start, limit, delta finite");
        double c = ceil(((double)limit - start) / delta);
        count = c > 0 ? (int64_t)c : 0;
        if (count != y->numel)
            return rt_cu_report(ex, n, "Range gives %lld values; the output holds %lld",
                                (long long)count, (long long)y->numel);
        return kc_range(ex->kc, t, start, delta, 0, 0, y->data, count) || rt_cu_failed(ex, n);
    }
    if (iv[2] == 0)
        return rt_cu_report(ex, n, "delta must be non-zero");
    __int128 span = (__int128)iv[1] - iv[0], d = iv[2];
    __int128 c = span / d + ((span % d != 0) && ((span > 0) == (d > 0)));
    count = c > 0 ? (int64_t)(c > IR_MAX_NUMEL ? IR_MAX_NUMEL + 1 : c) : 0;
    if (count != y->numel)
        return rt_cu_report(ex, n, "Range gives %lld values; the output holds %lld",
                            (long long)count, (long long)y->numel);
    return kc_range(ex->kc, t, 0, 0, iv[0], iv[2], y->data, count) || rt_cu_failed(ex, n);
}

/* OneHot: depth and [off, on] read on the host, checked as the CPU kernel checks them. */
static bool run_one_hot(executor *ex, ir_node *n, kc_tensor *y, ir_dtype dt)
{
    kc_tensor idx;
    kc_elem it;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &idx))
        return false;
    if (!rt_cu_elem_of(ex->slots[n->inputs[0]->id].type.dtype, &it))
        return rt_cu_report(ex, n, "a dtype no CUDA kernel takes");
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -(idx.rank + 1) || axis > idx.rank)
        return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)axis,
                            idx.rank + 1);
    int ax = (int)(axis < 0 ? axis + idx.rank + 1 : axis);
    ir_value *values = n->inputs[2];
    const void *vals = rt_cu_ensure_host(ex, values, n);
    if (!vals)
        return false;
    if (slot_numel(ex, values) != 2 || ex->slots[values->id].type.dtype != dt)
        return rt_cu_report(ex, n, "values must hold [off, on] in the output's dtype");
    double depth_value;
    if (!host_elem(ex, n, 1, 0, &depth_value, NULL))
        return false;
    if (!(depth_value >= 1 && depth_value <= (double)IR_MAX_NUMEL))
        return rt_cu_report(ex, n, "depth %g is not in [1, 2^40]", depth_value);
    int64_t depth = (int64_t)depth_value;
    int64_t outer = rt_cu_dims_prod(idx.dims, 0, ax),
            inner = rt_cu_dims_prod(idx.dims, ax, idx.rank);
    if (outer * depth * inner != y->numel)
        return rt_cu_report(ex, n, "the output holds %lld values, not %lld", (long long)y->numel,
                            (long long)(outer * depth * inner));
    size_t es = ir_dtype_size(dt);
    uint64_t off = 0, on = 0;
    memcpy(&off, vals, es);
    memcpy(&on, (const char *)vals + es, es);
    return kc_one_hot(ex->kc, idx.data, it, outer, depth, inner, es, off, on, y->data) ||
           rt_cu_failed(ex, n);
}

/* ReverseSequence: every sequence length checked on the host as the CPU kernel checks it. */
static bool run_reverse_sequence(executor *ex, ir_node *n, kc_tensor *y, ir_dtype dt)
{
    kc_tensor x, lens;
    kc_elem lt;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_tensor(ex, n, n->inputs[1], &lens))
        return false;
    int64_t b_axis = ir_get_int(n, "batch_axis"), t_axis = ir_get_int(n, "time_axis");
    if (x.rank < 2 || !((b_axis == 0 && t_axis == 1) || (b_axis == 1 && t_axis == 0)))
        return rt_cu_report(ex, n, "batch_axis and time_axis must be 0 and 1 of a rank-2+ input");
    if (!rt_cu_elem_of(ex->slots[n->inputs[1]->id].type.dtype, &lt))
        return rt_cu_report(ex, n, "a dtype no CUDA kernel takes");
    int64_t batch = x.dims[b_axis], steps = x.dims[t_axis];
    if (lens.numel != batch)
        return rt_cu_report(ex, n, "sequence_lens has %lld values for a batch of %lld",
                            (long long)lens.numel, (long long)batch);
    for (int64_t b = 0; b < batch; b++) {
        int64_t len;
        if (!host_elem(ex, n, 1, b, NULL, &len))
            return false;
        if (len < 0 || len > steps)
            return rt_cu_report(ex, n, "sequence length %lld is not in [0, %lld]", (long long)len,
                                (long long)steps);
    }
    return kc_reverse_sequence(ex->kc, x.data, ir_dtype_size(dt), lens.data, lt, b_axis == 0, batch,
                               steps, rt_cu_dims_prod(x.dims, 2, x.rank), y->data) ||
           rt_cu_failed(ex, n);
}

/* The window functions' size, read and checked on the host as the CPU kernel reads it. */
static bool run_window(executor *ex, ir_node *n, kc_tensor *y, kc_elem t)
{
    int64_t size;
    if (!host_elem(ex, n, 0, 0, NULL, &size))
        return false;
    if (size < 0)
        return rt_cu_report(ex, n, "size %lld is negative", (long long)size);
    if (size != y->numel)
        return rt_cu_report(ex, n, "the output holds %lld values, not %lld", (long long)y->numel,
                            (long long)size);
    bool periodic = ir_get_int(n, "periodic") != 0;
    double a0 = n->op == IR_OP_HannWindow ? 0.5 : n->op == IR_OP_HammingWindow ? 25.0 / 46 : 0.42;
    double a1 = n->op == IR_OP_HannWindow ? 0.5 : n->op == IR_OP_HammingWindow ? 21.0 / 46 : 0.5;
    double a2 = n->op == IR_OP_BlackmanWindow ? 0.08 : 0;
    return kc_window(ex->kc, t, a0, a1, a2, size, periodic, y->data) || rt_cu_failed(ex, n);
}

/* Shape, Size, ConstantOfShape, CastLike, Range, EyeLike, the windows, OneHot, ReverseSequence,
 * RandomUniform(Like). Shape and Size read only their input's type, never its data. */
static bool run_gen_op(executor *ex, ir_node *n)
{
    kc_tensor y;
    kc_elem t;
    ir_dtype dt = ex->slots[n->outputs[0]->id].type.dtype;
    if (!rt_cu_elem_of(dt, &t))
        return rt_cu_report(ex, n, "%s: no CUDA kernel takes it", ir_dtype_name(dt));
    if (!rt_cu_raw_output(ex, n, &y))
        return false;
    const ir_type *x = n->ninputs > 0 && n->inputs[0] ? &ex->slots[n->inputs[0]->id].type : NULL;
    switch (n->op) {
    case IR_OP_Shape: {
        int64_t start = ir_get_int(n, "start"), end = ir_get_int(n, "end"), r = x->rank;
        start = start < 0 ? (start + r < 0 ? 0 : start + r) : (start > r ? r : start);
        end = end < 0 ? (end + r < 0 ? 0 : end + r) : (end > r ? r : end);
        int64_t count = end > start ? end - start : 0;
        if (count != y.numel)
            return rt_cu_report(ex, n, "the output holds %lld values, not %lld", (long long)y.numel,
                                (long long)count);
        return kc_set_i64(ex->kc, x->dims + start, (int)count, y.data) || rt_cu_failed(ex, n);
    }
    case IR_OP_Size: {
        int64_t numel = slot_numel(ex, n->inputs[0]);
        return kc_set_i64(ex->kc, &numel, 1, y.data) || rt_cu_failed(ex, n);
    }
    case IR_OP_ConstantOfShape:
        return kc_fill(ex->kc, y.data, ir_dtype_size(dt), elem_bits(dt, ir_get_float(n, "value")),
                       y.numel) ||
               rt_cu_failed(ex, n);
    case IR_OP_CastLike: {
        kc_tensor a;
        kc_elem at;
        if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &a))
            return false;
        if (!rt_cu_elem_of(x->dtype, &at))
            return rt_cu_report(ex, n, "%s: no CUDA kernel takes it", ir_dtype_name(x->dtype));
        return kc_cast(ex->kc, a.data, at, y.data, t, y.numel) || rt_cu_failed(ex, n);
    }
    case IR_OP_Range: return run_range(ex, n, &y, t, dt);
    case IR_OP_EyeLike:
        if (y.rank != 2)
            return rt_cu_report(ex, n, "the input must be a matrix");
        return kc_eye(ex->kc, y.data, ir_dtype_size(dt), elem_bits(dt, 1), y.dims[0], y.dims[1],
                      ir_get_int(n, "k")) ||
               rt_cu_failed(ex, n);
    case IR_OP_HannWindow:
    case IR_OP_HammingWindow:
    case IR_OP_BlackmanWindow: return run_window(ex, n, &y, t);
    case IR_OP_OneHot: return run_one_hot(ex, n, &y, dt);
    case IR_OP_ReverseSequence: return run_reverse_sequence(ex, n, &y, dt);
    case IR_OP_RandomUniform:
    case IR_OP_RandomUniformLike: {
        double seed = ir_get_float(n, "seed");
        uint64_t s = fabs(seed) < 9e18 ? (uint64_t)(int64_t)llround(seed) : 0; /* NaN: absent */
        if (!ir_dtype_is_float(dt))
            return rt_cu_report(ex, n, "the output must be a float tensor");
        return kc_random_uniform(ex->kc, t, s, ir_get_float(n, "low"), ir_get_float(n, "high"),
                                 y.data, y.numel) ||
               rt_cu_failed(ex, n);
    }
    default: return rt_cu_report(ex, n, "%s has no CUDA generator", ir_op_name(n->op));
    }
}

static bool is_gen_op(ir_op op)
{
    switch (op) {
    case IR_OP_Shape:
    case IR_OP_Size:
    case IR_OP_ConstantOfShape:
    case IR_OP_CastLike:
    case IR_OP_Range:
    case IR_OP_EyeLike:
    case IR_OP_HannWindow:
    case IR_OP_HammingWindow:
    case IR_OP_BlackmanWindow:
    case IR_OP_OneHot:
    case IR_OP_ReverseSequence:
    case IR_OP_RandomUniform:
    case IR_OP_RandomUniformLike: return true;
    default: return false;
    }
}

/* cuda-a's ops; *handled false (nothing reported) for any other op. */
bool rt_cu_run_cuda_a(executor *ex, ir_node *n, bool *handled)
{
    *handled = true;
    if (kn_cuda_int_kernel(n)) /* before the table, which has the float forms */
        return run_int_op(ex, n);
    if (is_gen_op(n->op))
        return run_gen_op(ex, n);
    *handled = false;
    return false;
}

#endif /* FR_HAVE_CUDA */
