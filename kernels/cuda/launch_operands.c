/* The operands of a plain ONNX op's launch (kernels/cuda/cuda_launch.h): fetched through the
 * executor's hooks in the call, as device tensors (typed or shape only), host copies and integer
 * inputs read on the host; and the fused ops' way, every operand given at once
 * (kn_cuda_run_given). */
#include "kernels/cuda/cuda_launch.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/cuda/cuda_registry.h"
#include "kernels/helpers.h"

#include <string.h>

const ir_type *kn_cuda_type(const kn_cuda_call *call, const ir_value *v)
{
    return call->type(call->user, v);
}

void *kn_cuda_device(const kn_cuda_call *call, ir_value *v)
{
    return call->device(call->user, v, call->node);
}

const void *kn_cuda_host(const kn_cuda_call *call, ir_value *v)
{
    return call->host(call->user, v, call->node);
}

bool kn_cuda_dtype_of(ir_dtype dt, kc_dtype *out)
{
    switch (dt) {
    case IR_F32: *out = KC_F32; return true;
    case IR_F16: *out = KC_F16; return true;
    case IR_BF16: *out = KC_BF16; return true;
    case IR_I8: *out = KC_I8; return true;
    case IR_I32: *out = KC_I32; return true;
    case IR_BOOL: *out = KC_BOOL; return true;
    default: return false;
    }
}

bool kn_cuda_elem_of(ir_dtype dt, kc_elem *out)
{
    switch (dt) {
    case IR_F32: *out = KC_E_F32; return true;
    case IR_F16: *out = KC_E_F16; return true;
    case IR_BF16: *out = KC_E_BF16; return true;
    case IR_I8: *out = KC_E_I8; return true;
    case IR_U8: *out = KC_E_U8; return true;
    case IR_I32: *out = KC_E_I32; return true;
    case IR_I64: *out = KC_E_I64; return true;
    case IR_BOOL: *out = KC_E_BOOL; return true;
    default: return false;
    }
}

/* A tensor of type t at data, dtype left 0 (the raw-byte kernels do not read it). */
static kc_tensor shape_tensor(const ir_type *t, void *data)
{
    kc_tensor k = {.rank = t->rank, .data = data};
    memcpy(k.dims, t->dims, sizeof k.dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(t, &k.numel));
    return k;
}

bool kn_cuda_device_tensor(const kn_cuda_call *call, ir_value *v, void *ptr, kc_tensor *t)
{
    *t = (kc_tensor){0};
    if (!v)
        return true;
    const ir_type *type = kn_cuda_type(call, v);
    kc_dtype dt;
    if (!kn_cuda_dtype_of(type->dtype, &dt))
        return kn_cuda_fail(call, "'%s' is %s, which no CUDA kernel takes", v->name,
                            ir_dtype_name(type->dtype));
    *t = shape_tensor(type, ptr);
    t->dtype = dt;
    return true;
}

bool kn_cuda_inputs(const kn_cuda_call *call, uint32_t count, kc_tensor *in)
{
    const ir_node *n = call->node;
    for (uint32_t i = 0; i < count; i++) {
        ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
        void *ptr = v ? kn_cuda_device(call, v) : NULL;
        if ((v && !ptr) || !kn_cuda_device_tensor(call, v, ptr, &in[i]))
            return false;
    }
    return true;
}

bool kn_cuda_alloc_outputs(const kn_cuda_call *call, kc_tensor *out)
{
    const ir_node *n = call->node;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        void *ptr = call->output(call->user, n->outputs[k], n);
        if (!ptr || !kn_cuda_device_tensor(call, n->outputs[k], ptr, &out[k]))
            return false;
    }
    return true;
}

bool kn_cuda_raw_tensor(const kn_cuda_call *call, ir_value *v, kc_tensor *t)
{
    *t = (kc_tensor){0};
    void *ptr = kn_cuda_device(call, v);
    if (!ptr)
        return false;
    *t = shape_tensor(kn_cuda_type(call, v), ptr);
    return true;
}

bool kn_cuda_raw_output(const kn_cuda_call *call, kc_tensor *t)
{
    ir_value *v = call->node->outputs[0];
    void *ptr = call->output(call->user, v, call->node);
    if (!ptr)
        return false;
    *t = shape_tensor(kn_cuda_type(call, v), ptr);
    return true;
}

bool kn_cuda_raw_outputs(const kn_cuda_call *call, kc_tensor *out)
{
    const ir_node *n = call->node;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        void *ptr = call->output(call->user, n->outputs[k], n);
        if (!ptr)
            return false;
        out[k] = shape_tensor(kn_cuda_type(call, n->outputs[k]), ptr);
    }
    return true;
}

void *kn_cuda_scratch(const kn_cuda_call *call, size_t nbytes, const char *what)
{
    return call->scratch(call->user, nbytes ? nbytes : 1, what, call->node);
}

bool kn_cuda_host_ints(const kn_cuda_call *call, uint32_t i, const int64_t **out, int *count)
{
    const ir_node *n = call->node;
    *out = NULL, *count = 0;
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v)
        return true;
    const void *data = kn_cuda_host(call, v);
    if (!data)
        return false;
    const ir_type *t = kn_cuda_type(call, v);
    int64_t numel;
    FR_CHECK(ir_type_numel(t, &numel));
    if (numel > 2 * IR_MAX_RANK || (t->dtype != IR_I64 && t->dtype != IR_I32))
        return kn_cuda_fail(call, "input %u must hold at most %d i32/i64 values", i,
                            2 * IR_MAX_RANK);
    int64_t *vals = ar_alloc_array(call->arena, (size_t)numel, sizeof *vals);
    for (int64_t k = 0; k < numel; k++)
        vals[k] = t->dtype == IR_I64 ? ((const int64_t *)data)[k] : ((const int32_t *)data)[k];
    *out = vals, *count = (int)numel;
    return true;
}

uint64_t kn_cuda_elem_bits(ir_dtype dt, double v)
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

int64_t kn_cuda_index_at(const void *data, ir_dtype dt, int64_t j)
{
    return dt == IR_I64 ? ((const int64_t *)data)[j] : ((const int32_t *)data)[j];
}

int64_t kn_cuda_dims_prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= dims[d];
    return p;
}

bool kn_cuda_run_given(const kn_cuda_call *call, kn_cuda_fn run)
{
    const ir_node *n = call->node;
    kc_tensor in[KN_CUDA_MAX_IO], out[3];
    if (n->ninputs > KN_CUDA_MAX_IO || n->noutputs > 3)
        return kn_cuda_fail(call, "too many operands for the CUDA executor");
    /* Optional operands the kernels index (up to 6 inputs) read as absent. */
    for (uint32_t i = 0; i < KN_CUDA_MAX_IO; i++)
        in[i] = (kc_tensor){0};
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_value *v = n->inputs[i];
        void *ptr = v ? kn_cuda_device(call, v) : NULL;
        if ((v && !ptr) || !kn_cuda_device_tensor(call, v, ptr, &in[i]))
            return false;
    }
    if (!kn_cuda_alloc_outputs(call, out))
        return false;
    kn_cuda_call given = *call;
    given.inputs = in;
    given.ninputs = n->ninputs;
    given.outputs = out;
    given.noutputs = n->noutputs;
    return run(&given);
}
