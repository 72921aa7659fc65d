/* The plain ONNX ops' CUDA launches on the integer kernel (integer.cu) and the generators
 * (generate.cu); rows of kn_cuda_onnx_run (launch_onnx.c). */
#include "kernels/cuda/cuda_launch.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/helpers.h"

#include <math.h>
#include <string.h>

/* Element k of input i read on the host as its CPU kernel reads it (kn_get_f64 and kn_get_int on
 * the view the CPU executor gives it: f16/bf16 widened to f32); false after reporting. */
static bool host_elem(const kn_cuda_call *call, uint32_t i, int64_t k, double *f, int64_t *iv)
{
    const ir_node *n = call->node;
    ir_value *v = n->inputs[i];
    const void *data = kn_cuda_host(call, v);
    if (!data)
        return false;
    ir_dtype dt = kn_cuda_type(call, v)->dtype;
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

static int64_t value_numel(const kn_cuda_call *call, const ir_value *v)
{
    int64_t numel = 0;
    FR_CHECK(ir_type_numel(kn_cuda_type(call, v), &numel));
    return numel;
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
static bool int_clip_bound(const kn_cuda_call *call, uint32_t i, const char *attr, int64_t none,
                           int64_t *out)
{
    const ir_node *n = call->node;
    *out = none;
    if (i < n->ninputs && n->inputs[i]) {
        int64_t count = value_numel(call, n->inputs[i]);
        if (count != 1)
            return kn_cuda_fail(call, "%s must be a scalar, not %lld values", attr,
                                (long long)count);
        return host_elem(call, i, 0, NULL, out);
    }
    if (ir_node_attr(n, attr))
        *out = kn_float_to_int(ir_get_float(n, attr), IR_I64);
    return true;
}

/* Integer arithmetic, Mod, BitShift and the Bitwise* ops; zero divisors are the CPU's errors,
 * found on the host before the launch. Max and Min fold their inputs in order into Y. */
bool kn_cuda_run_int_op(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_elem t;
    ir_dtype dt = kn_cuda_type(call, n->inputs[0])->dtype;
    if (!kn_cuda_elem_of(dt, &t))
        return kn_cuda_fail(call, "%s: no CUDA integer kernel takes it", ir_dtype_name(dt));
    kc_int_op op = int_op_of(n);
    kc_int_args args = {INT64_MIN, INT64_MAX, 0, 0};
    kc_tensor y, in[2] = {{0}, {0}};
    if (!kn_cuda_raw_output(call, &y))
        return false;
    bool divides = op == KC_INT_DIV || op == KC_INT_MOD || op == KC_INT_FMOD;
    if (divides && !ir_dtype_is_float(dt) && y.numel > 0) {
        int64_t count = value_numel(call, n->inputs[1]);
        for (int64_t k = 0; k < count; k++) {
            int64_t v;
            if (!host_elem(call, 1, k, NULL, &v))
                return false;
            if (v == 0)
                return kn_cuda_fail(call, "integer %s by zero (divisor element %lld)",
                                    op == KC_INT_DIV ? "division" : "modulo", (long long)k);
        }
    }
    if (op == KC_INT_CLIP && (!int_clip_bound(call, 1, "min", INT64_MIN, &args.lo) ||
                              !int_clip_bound(call, 2, "max", INT64_MAX, &args.hi)))
        return false;
    if (op == KC_INT_SHRINK) {
        args.bias = ir_get_float(n, "bias");
        args.lambd = ir_get_float(n, "lambd");
    }
    bool unary = op >= KC_INT_NEG;
    uint32_t operands = unary ? 1 : n->ninputs;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &in[0]))
        return false;
    if (operands == 1) /* a unary op, or Max/Min of one input: max(x, x) broadcast is x */
        return kc_int_ew(call->kc, op, &in[0], &in[0], t, &args, &y) || kn_cuda_failed(call);
    for (uint32_t k = 1; k < operands; k++) {
        if (!kn_cuda_raw_tensor(call, n->inputs[k], &in[1]))
            return false;
        if (!kc_int_ew(call->kc, op, k == 1 ? &in[0] : &y, &in[1], t, &args, &y))
            return kn_cuda_failed(call);
    }
    return true;
}

/* Range: start, limit and delta read on the host and checked as the CPU kernel checks them; the
 * element count must be the one inference gave the output. */
static bool run_range(const kn_cuda_call *call, kc_tensor *y, kc_elem t, ir_dtype dt)
{
    const ir_node *n = call->node;
    double f[3];
    int64_t iv[3];
    for (uint32_t i = 0; i < 3; i++)
        if (value_numel(call, n->inputs[i]) != 1)
            return kn_cuda_fail(call, "start, limit and delta must be scalars");
    for (uint32_t i = 0; i < 3; i++)
        if (!host_elem(call, i, 0, &f[i], &iv[i]))
            return false;
    int64_t count;
    if (ir_dtype_is_float(dt)) {
        float start = (float)f[0], limit = (float)f[1], delta = (float)f[2];
        if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
            return kn_cuda_fail(call, "delta must be non-zero and start, limit, delta finite");
        double c = ceil(((double)limit - start) / delta);
        count = c > 0 ? (int64_t)c : 0;
        if (count != y->numel)
            return kn_cuda_fail(call, "Range gives %lld values; the output holds %lld",
                                (long long)count, (long long)y->numel);
        return kc_range(call->kc, t, start, delta, 0, 0, y->data, count) || kn_cuda_failed(call);
    }
    if (iv[2] == 0)
        return kn_cuda_fail(call, "delta must be non-zero");
    __int128 span = (__int128)iv[1] - iv[0], d = iv[2];
    __int128 c = span / d + ((span % d != 0) && ((span > 0) == (d > 0)));
    count = c > 0 ? (int64_t)(c > IR_MAX_NUMEL ? IR_MAX_NUMEL + 1 : c) : 0;
    if (count != y->numel)
        return kn_cuda_fail(call, "Range gives %lld values; the output holds %lld",
                            (long long)count, (long long)y->numel);
    return kc_range(call->kc, t, 0, 0, iv[0], iv[2], y->data, count) || kn_cuda_failed(call);
}

/* OneHot: depth and [off, on] read on the host, checked as the CPU kernel checks them. */
static bool run_one_hot(const kn_cuda_call *call, kc_tensor *y, ir_dtype dt)
{
    const ir_node *n = call->node;
    kc_tensor idx;
    kc_elem it;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &idx))
        return false;
    if (!kn_cuda_elem_of(kn_cuda_type(call, n->inputs[0])->dtype, &it))
        return kn_cuda_fail(call, "a dtype no CUDA kernel takes");
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -(idx.rank + 1) || axis > idx.rank)
        return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)axis,
                            idx.rank + 1);
    int ax = (int)(axis < 0 ? axis + idx.rank + 1 : axis);
    ir_value *values = n->inputs[2];
    const void *vals = kn_cuda_host(call, values);
    if (!vals)
        return false;
    if (value_numel(call, values) != 2 || kn_cuda_type(call, values)->dtype != dt)
        return kn_cuda_fail(call, "values must hold [off, on] in the output's dtype");
    double depth_value;
    if (!host_elem(call, 1, 0, &depth_value, NULL))
        return false;
    if (!(depth_value >= 1 && depth_value <= (double)IR_MAX_NUMEL))
        return kn_cuda_fail(call, "depth %g is not in [1, 2^40]", depth_value);
    int64_t depth = (int64_t)depth_value;
    int64_t outer = kn_cuda_dims_prod(idx.dims, 0, ax),
            inner = kn_cuda_dims_prod(idx.dims, ax, idx.rank);
    if (outer * depth * inner != y->numel)
        return kn_cuda_fail(call, "the output holds %lld values, not %lld", (long long)y->numel,
                            (long long)(outer * depth * inner));
    size_t es = ir_dtype_size(dt);
    uint64_t off = 0, on = 0;
    memcpy(&off, vals, es);
    memcpy(&on, (const char *)vals + es, es);
    return kc_one_hot(call->kc, idx.data, it, outer, depth, inner, es, off, on, y->data) ||
           kn_cuda_failed(call);
}

/* ReverseSequence: every sequence length checked on the host as the CPU kernel checks it. */
static bool run_reverse_sequence(const kn_cuda_call *call, kc_tensor *y, ir_dtype dt)
{
    const ir_node *n = call->node;
    kc_tensor x, lens;
    kc_elem lt;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &lens))
        return false;
    int64_t b_axis = ir_get_int(n, "batch_axis"), t_axis = ir_get_int(n, "time_axis");
    if (x.rank < 2 || !((b_axis == 0 && t_axis == 1) || (b_axis == 1 && t_axis == 0)))
        return kn_cuda_fail(call, "batch_axis and time_axis must be 0 and 1 of a rank-2+ input");
    if (!kn_cuda_elem_of(kn_cuda_type(call, n->inputs[1])->dtype, &lt))
        return kn_cuda_fail(call, "a dtype no CUDA kernel takes");
    int64_t batch = x.dims[b_axis], steps = x.dims[t_axis];
    if (lens.numel != batch)
        return kn_cuda_fail(call, "sequence_lens has %lld values for a batch of %lld",
                            (long long)lens.numel, (long long)batch);
    for (int64_t b = 0; b < batch; b++) {
        int64_t len;
        if (!host_elem(call, 1, b, NULL, &len))
            return false;
        if (len < 0 || len > steps)
            return kn_cuda_fail(call, "sequence length %lld is not in [0, %lld]", (long long)len,
                                (long long)steps);
    }
    return kc_reverse_sequence(call->kc, x.data, ir_dtype_size(dt), lens.data, lt, b_axis == 0,
                               batch, steps, kn_cuda_dims_prod(x.dims, 2, x.rank), y->data) ||
           kn_cuda_failed(call);
}

/* The window functions' size, read and checked on the host as the CPU kernel reads it. */
static bool run_window(const kn_cuda_call *call, kc_tensor *y, kc_elem t)
{
    const ir_node *n = call->node;
    int64_t size;
    if (!host_elem(call, 0, 0, NULL, &size))
        return false;
    if (size < 0)
        return kn_cuda_fail(call, "size %lld is negative", (long long)size);
    if (size != y->numel)
        return kn_cuda_fail(call, "the output holds %lld values, not %lld", (long long)y->numel,
                            (long long)size);
    bool periodic = ir_get_int(n, "periodic") != 0;
    double a0 = n->op == IR_OP_HannWindow ? 0.5 : n->op == IR_OP_HammingWindow ? 25.0 / 46 : 0.42;
    double a1 = n->op == IR_OP_HannWindow ? 0.5 : n->op == IR_OP_HammingWindow ? 21.0 / 46 : 0.5;
    double a2 = n->op == IR_OP_BlackmanWindow ? 0.08 : 0;
    return kc_window(call->kc, t, a0, a1, a2, size, periodic, y->data) || kn_cuda_failed(call);
}

/* Shape, Size, ConstantOfShape, CastLike, Range, EyeLike, the windows, OneHot, ReverseSequence,
 * RandomUniform(Like). Shape and Size read only their input's type, never its data. */
bool kn_cuda_run_generator(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor y;
    kc_elem t;
    ir_dtype dt = kn_cuda_type(call, n->outputs[0])->dtype;
    if (!kn_cuda_elem_of(dt, &t))
        return kn_cuda_fail(call, "%s: no CUDA kernel takes it", ir_dtype_name(dt));
    if (!kn_cuda_raw_output(call, &y))
        return false;
    const ir_type *x = n->ninputs > 0 && n->inputs[0] ? kn_cuda_type(call, n->inputs[0]) : NULL;
    switch (n->op) {
    case IR_OP_Shape: {
        int64_t start = ir_get_int(n, "start"), end = ir_get_int(n, "end"), r = x->rank;
        start = start < 0 ? (start + r < 0 ? 0 : start + r) : (start > r ? r : start);
        end = end < 0 ? (end + r < 0 ? 0 : end + r) : (end > r ? r : end);
        int64_t count = end > start ? end - start : 0;
        if (count != y.numel)
            return kn_cuda_fail(call, "the output holds %lld values, not %lld", (long long)y.numel,
                                (long long)count);
        return kc_set_i64(call->kc, x->dims + start, (int)count, y.data) || kn_cuda_failed(call);
    }
    case IR_OP_Size: {
        int64_t numel = value_numel(call, n->inputs[0]);
        return kc_set_i64(call->kc, &numel, 1, y.data) || kn_cuda_failed(call);
    }
    case IR_OP_ConstantOfShape:
        return kc_fill(call->kc, y.data, ir_dtype_size(dt),
                       kn_cuda_elem_bits(dt, ir_get_float(n, "value")), y.numel) ||
               kn_cuda_failed(call);
    case IR_OP_CastLike: {
        kc_tensor a;
        kc_elem at;
        if (!kn_cuda_raw_tensor(call, n->inputs[0], &a))
            return false;
        if (!kn_cuda_elem_of(x->dtype, &at))
            return kn_cuda_fail(call, "%s: no CUDA kernel takes it", ir_dtype_name(x->dtype));
        return kc_cast(call->kc, a.data, at, y.data, t, y.numel) || kn_cuda_failed(call);
    }
    case IR_OP_Range: return run_range(call, &y, t, dt);
    case IR_OP_EyeLike:
        if (y.rank != 2)
            return kn_cuda_fail(call, "the input must be a matrix");
        return kc_eye(call->kc, y.data, ir_dtype_size(dt), kn_cuda_elem_bits(dt, 1), y.dims[0],
                      y.dims[1], ir_get_int(n, "k")) ||
               kn_cuda_failed(call);
    case IR_OP_HannWindow:
    case IR_OP_HammingWindow:
    case IR_OP_BlackmanWindow: return run_window(call, &y, t);
    case IR_OP_OneHot: return run_one_hot(call, &y, dt);
    case IR_OP_ReverseSequence: return run_reverse_sequence(call, &y, dt);
    case IR_OP_RandomUniform:
    case IR_OP_RandomUniformLike: {
        double seed = ir_get_float(n, "seed");
        uint64_t s = fabs(seed) < 9e18 ? (uint64_t)(int64_t)llround(seed) : 0; /* NaN: absent */
        if (!ir_dtype_is_float(dt))
            return kn_cuda_fail(call, "the output must be a float tensor");
        return kc_random_uniform(call->kc, t, s, ir_get_float(n, "low"), ir_get_float(n, "high"),
                                 y.data, y.numel) ||
               kn_cuda_failed(call);
    }
    default: return kn_cuda_fail(call, "%s has no CUDA generator", ir_op_name(n->op));
    }
}
