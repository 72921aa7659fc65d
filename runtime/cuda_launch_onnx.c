/* Launches of the plain ONNX ops shared by the CUDA groups (runtime/cuda_internal.h): the
 * elementwise table, movement, Gather and the index ops, Where, Cast and comparisons, Pad, Tile,
 * Trilu, the reductions; and the helpers cuda-a, cuda-b and cuda-c build on. */
#include "runtime/runtime.h"

#ifdef FR_HAVE_CUDA

#include "runtime/cuda_internal.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/helpers.h"
#include "runtime/cuda_movement.h"

#include <stdlib.h>
#include <string.h>

/* A plain elementwise op as its ElementwiseChain expression: only the inputs the expression reads
 * go to the device (not Expand's shape, nor a Clip bound that is absent). */
static bool run_ew_op(executor *ex, ir_node *n)
{
    kn_cuda_ew_expr e;
    char why[KN_WHY_SIZE];
    if (!kn_cuda_ew_expand(ex->scratch_arena, n, &e, why))
        return rt_cu_report(ex, n, "%s", why);
    kc_tensor in[KN_CUDA_EW_MAX_INPUTS], out;
    const kc_tensor *ptrs[KN_CUDA_EW_MAX_INPUTS];
    for (uint32_t i = 0; i < e.ninputs; i++) {
        ir_value *v = n->inputs[e.inputs[i]];
        void *ptr = rt_cu_ensure_dev(ex, v, n);
        if (!ptr || !rt_cu_device_tensor(ex, n, v, ptr, &in[i]))
            return false;
        if (e.per_channel && i > 0) { /* [C] as [C, 1, ...] against [N, C, ...] */
            int64_t c = in[i].numel;
            in[i].rank = in[0].rank - 1;
            for (int d = 0; d < in[i].rank; d++)
                in[i].dims[d] = d == 0 ? c : 1;
        }
        ptrs[i] = &in[i];
    }
    if (n->noutputs != 1 || !rt_cu_alloc_outputs(ex, n, &out))
        return n->noutputs != 1 ? rt_cu_report(ex, n, "one output expected") : false;
    return kc_ewchain(ex->kc, e.body, ptrs, (int)e.ninputs, &out) || rt_cu_failed(ex, n);
}

static bool is_movement(ir_op op)
{
    return op == IR_OP_Transpose || op == IR_OP_Slice || op == IR_OP_Concat || op == IR_OP_Split ||
           op == IR_OP_DepthToSpace || op == IR_OP_SpaceToDepth;
}

/* Slice's integer input i read on the host as int64 (NULL when absent). */
bool rt_cu_host_ints(executor *ex, ir_node *n, uint32_t i, const int64_t **out, int *count)
{
    *out = NULL, *count = 0;
    ir_value *v = i < n->ninputs ? n->inputs[i] : NULL;
    if (!v)
        return true;
    const void *data = rt_cu_ensure_host(ex, v, n);
    if (!data)
        return false;
    const slot *s = &ex->slots[v->id];
    int64_t numel;
    FR_CHECK(ir_type_numel(&s->type, &numel));
    if (numel > 2 * IR_MAX_RANK || (s->type.dtype != IR_I64 && s->type.dtype != IR_I32))
        return rt_cu_report(ex, n, "input %u must hold at most %d i32/i64 values", i,
                            2 * IR_MAX_RANK);
    int64_t *vals = ar_alloc_array(ex->scratch_arena, (size_t)(numel ? numel : 1), sizeof *vals);
    for (int64_t k = 0; k < numel; k++)
        vals[k] = s->type.dtype == IR_I64 ? ((const int64_t *)data)[k] : ((const int32_t *)data)[k];
    *out = vals, *count = (int)numel;
    return true;
}

/* Transpose, Slice, Concat, Split: strided copies of raw elements (any dtype). */
static bool run_move_op(executor *ex, ir_node *n)
{
    rt_move_io io = {0};
    if (n->ninputs > RT_MOVE_MAX_INPUTS || n->noutputs > RT_MOVE_MAX_PLANS)
        return rt_cu_report(ex, n, "too many operands for the CUDA copy");
    uint32_t data_inputs = n->op == IR_OP_Concat ? n->ninputs : 1;
    const void *src[RT_MOVE_MAX_INPUTS];
    for (uint32_t i = 0; i < data_inputs; i++) {
        if (!(src[i] = rt_cu_ensure_dev(ex, n->inputs[i], n)))
            return false;
        io.in_type[i] = &ex->slots[n->inputs[i]->id].type;
    }
    for (uint32_t i = 1; n->op == IR_OP_Slice && i < 5; i++)
        if (!rt_cu_host_ints(ex, n, i, &io.ints[i], &io.nints[i]))
            return false;
    void *dst[RT_MOVE_MAX_PLANS];
    for (uint32_t k = 0; k < n->noutputs; k++) {
        slot *s = &ex->slots[n->outputs[k]->id];
        if (!(s->dev = rt_cu_dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[k]->name)))
            return rt_cu_failed(ex, n);
        dst[k] = s->dev->ptr;
        io.out_type[k] = &s->type;
    }
    kc_copy_plan plans[RT_MOVE_MAX_PLANS];
    int nplans;
    const char *err;
    if (!rt_move_plans(n, &io, plans, &nplans, &err))
        return rt_cu_report(ex, n, "%s", err);
    size_t esize = ir_dtype_size(io.in_type[0]->dtype);
    for (int k = 0; k < nplans; k++) {
        const void *from = src[n->op == IR_OP_Concat ? k : 0];
        void *to = dst[n->op == IR_OP_Split ? k : 0];
        if (!kc_strided_copy(ex->kc, from, to, esize, &plans[k]))
            return rt_cu_failed(ex, n);
    }
    return true;
}

/* v's device copy as a kc_tensor of shape only (the raw-byte kernels do not read its dtype). */
bool rt_cu_raw_tensor(executor *ex, const ir_node *n, ir_value *v, kc_tensor *t)
{
    *t = (kc_tensor){0};
    void *ptr = rt_cu_ensure_dev(ex, v, n);
    if (!ptr)
        return false;
    const slot *s = &ex->slots[v->id];
    t->rank = s->type.rank;
    memcpy(t->dims, s->type.dims, sizeof t->dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(&s->type, &t->numel));
    t->data = ptr;
    return true;
}

/* A device buffer for n's only output as a kc_tensor of shape only. */
bool rt_cu_raw_output(executor *ex, ir_node *n, kc_tensor *t)
{
    slot *s = &ex->slots[n->outputs[0]->id];
    if (!(s->dev = rt_cu_dpool_get(ex, s->nbytes ? s->nbytes : 1, n->outputs[0]->name)))
        return rt_cu_failed(ex, n);
    *t = (kc_tensor){.rank = s->type.rank, .data = s->dev->ptr};
    memcpy(t->dims, s->type.dims, sizeof t->dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(&s->type, &t->numel));
    return true;
}

/* Gather: the indices are checked on the host (an index outside [-dim, dim) is the CPU kernel's
 * error too), then read by the kernel from their device copy. */
static bool run_gather(executor *ex, ir_node *n)
{
    kc_tensor data, idx, y;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &data) ||
        !rt_cu_raw_tensor(ex, n, n->inputs[1], &idx) || !rt_cu_raw_output(ex, n, &y))
        return false;
    int64_t axis = ir_get_int(n, "axis");
    axis += axis < 0 ? data.rank : 0;
    if (axis < 0 || axis >= data.rank)
        return rt_cu_report(ex, n, "axis %lld is out of range for rank %d",
                            (long long)ir_get_int(n, "axis"), data.rank);
    ir_dtype it = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = rt_cu_ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t dim = data.dims[axis], outer = 1, inner = 1;
    for (int64_t j = 0; j < idx.numel; j++) {
        int64_t i = it == IR_I64 ? ((const int64_t *)host)[j] : ((const int32_t *)host)[j];
        if (i < -dim || i >= dim)
            return rt_cu_report(ex, n, "index %lld is out of range for axis %lld of size %lld",
                                (long long)i, (long long)axis, (long long)dim);
    }
    for (int d = 0; d < data.rank; d++)
        *(d < axis ? &outer : &inner) *= d == axis ? 1 : data.dims[d];
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    return kc_gather(ex->kc, data.data, esize, outer, dim, inner, idx.data, it == IR_I64, idx.numel,
                     y.data) ||
           rt_cu_failed(ex, n);
}

/* The product of dims [from, to). */
int64_t rt_cu_dims_prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= dims[d];
    return p;
}

/* ArgMax, ArgMin (axis attribute) and CumSum (axis input, read on the host) over float x viewed
 * as [outer, n, inner]; keepdims changes only the output's shape, not its layout. */
static bool run_axis_op(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    kc_dtype dt;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_output(ex, n, &y))
        return false;
    if (!rt_cu_dtype_of(ex->slots[n->inputs[0]->id].type.dtype, &dt))
        return rt_cu_report(ex, n, "a dtype no CUDA kernel takes");
    int64_t axis = ir_get_int(n, "axis");
    if (n->op == IR_OP_CumSum) {
        const int64_t *a;
        int na;
        if (!rt_cu_host_ints(ex, n, 1, &a, &na))
            return false;
        if (na != 1)
            return rt_cu_report(ex, n, "axis must hold one value");
        axis = a[0];
    }
    if (axis < -x.rank || axis >= x.rank)
        return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)axis,
                            x.rank);
    int ax = (int)(axis < 0 ? axis + x.rank : axis);
    int64_t outer = rt_cu_dims_prod(x.dims, 0, ax), len = x.dims[ax];
    int64_t inner = rt_cu_dims_prod(x.dims, ax + 1, x.rank);
    if (n->op == IR_OP_CumSum)
        return kc_cumsum(ex->kc, dt, x.data, outer, len, inner, ir_get_int(n, "exclusive") != 0,
                         ir_get_int(n, "reverse") != 0, y.data) ||
               rt_cu_failed(ex, n);
    bool max = n->op == IR_OP_ArgMax;
    if (len == 0 && outer * inner > 0) /* the CPU kernel's error */
        return rt_cu_report(ex, n, "the axis is empty: there is no %s",
                            max ? "maximum" : "minimum");
    return kc_arg_reduce(ex->kc, dt, x.data, outer, len, inner, max,
                         ir_get_int(n, "select_last_index") != 0, y.data) ||
           rt_cu_failed(ex, n);
}

/* GatherElements: the indices are checked on the host as the CPU kernel checks them (same rank
 * as data, dims off the axis at most data's, values in [-dim, dim)). */
static bool run_gather_elements(executor *ex, ir_node *n)
{
    kc_tensor data, idx, y;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &data) ||
        !rt_cu_raw_tensor(ex, n, n->inputs[1], &idx) || !rt_cu_raw_output(ex, n, &y))
        return false;
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -data.rank || axis >= data.rank || idx.rank != data.rank)
        return rt_cu_report(ex, n, "axis %lld or indices of rank %d do not fit data of rank %d",
                            (long long)axis, idx.rank, data.rank);
    int ax = (int)(axis < 0 ? axis + data.rank : axis);
    for (int d = 0; d < data.rank; d++)
        if (d != ax && idx.dims[d] > data.dims[d])
            return rt_cu_report(ex, n, "indices' dim %d (%lld) is above data's (%lld)", d,
                                (long long)idx.dims[d], (long long)data.dims[d]);
    ir_dtype it = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = rt_cu_ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t dim = data.dims[ax];
    for (int64_t j = 0; j < idx.numel; j++) {
        int64_t i = it == IR_I64 ? ((const int64_t *)host)[j] : ((const int32_t *)host)[j];
        if (i < -dim || i >= dim)
            return rt_cu_report(ex, n, "index %lld is out of range for a dim of %lld", (long long)i,
                                (long long)dim);
    }
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    return kc_gather_elements(ex->kc, data.data, esize, data.rank, data.dims, idx.dims, ax,
                              idx.data, it == IR_I64, y.data) ||
           rt_cu_failed(ex, n);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, z = *(const int64_t *)b;
    return x < z ? -1 : x > z;
}

/* GatherND and ScatterND (reduction none): the shapes and every index checked on the host as the
 * CPU kernel checks them (its errors), then the kernel reads the indices' device copy. ScatterND
 * copies data into Y first; its tuples run at once when the host finds no two alike. */
static bool run_nd(executor *ex, ir_node *n)
{
    bool scatter = n->op == IR_OP_ScatterND;
    kc_tensor x, idx, upd = {0}, y;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) ||
        !rt_cu_raw_tensor(ex, n, n->inputs[1], &idx) ||
        (scatter && !rt_cu_raw_tensor(ex, n, n->inputs[2], &upd)) || !rt_cu_raw_output(ex, n, &y))
        return false;
    int64_t b = scatter ? 0 : ir_get_int(n, "batch_dims");
    if (idx.rank < 1 || b < 0 || b >= x.rank || b >= idx.rank)
        return rt_cu_report(ex, n, "batch_dims %lld does not fit ranks %d and %d", (long long)b,
                            x.rank, idx.rank);
    int64_t depth = idx.dims[idx.rank - 1];
    if (depth < 1 || depth > x.rank - b)
        return rt_cu_report(ex, n, "indices' last dim %lld does not fit data of rank %d",
                            (long long)depth, x.rank);
    for (int d = 0; d < b; d++)
        if (idx.dims[d] != x.dims[d])
            return rt_cu_report(ex, n, "batch dim %d differs: %lld in data, %lld in indices", d,
                                (long long)x.dims[d], (long long)idx.dims[d]);
    kc_nd_args p = {.depth = (int)depth};
    p.batches = rt_cu_dims_prod(x.dims, 0, (int)b);
    p.per_batch = rt_cu_dims_prod(x.dims, (int)b, x.rank);
    p.tuples = rt_cu_dims_prod(idx.dims, (int)b, idx.rank - 1);
    p.slice = rt_cu_dims_prod(x.dims, (int)(b + depth), x.rank);
    for (int k = 0; k < depth; k++) {
        p.dims[k] = x.dims[b + k];
        p.strides[k] = rt_cu_dims_prod(x.dims, (int)b + k + 1, x.rank);
    }
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype;
    if (scatter &&
        (upd.numel != p.tuples * p.slice || ex->slots[n->inputs[2]->id].type.dtype != dt))
        return rt_cu_report(ex, n, "updates must be indices[:-1] + data[%lld:] of data's dtype",
                            (long long)depth);
    ir_dtype it = ex->slots[n->inputs[1]->id].type.dtype;
    const void *host = rt_cu_ensure_host(ex, n->inputs[1], n);
    if (!host)
        return false;
    int64_t ntuples = p.batches * p.tuples;
    int64_t *offs =
        scatter ? ar_alloc_array(ex->scratch_arena, (size_t)(ntuples ? ntuples : 1), sizeof *offs)
                : NULL;
    for (int64_t t = 0; t < ntuples; t++) {
        int64_t off = 0;
        for (int64_t k = 0; k < depth; k++) {
            int64_t at = t * depth + k;
            int64_t v = it == IR_I64 ? ((const int64_t *)host)[at] : ((const int32_t *)host)[at];
            if (v < -p.dims[k] || v >= p.dims[k])
                return rt_cu_report(ex, n, "index %lld is out of range for a dim of %lld",
                                    (long long)v, (long long)p.dims[k]);
            off += (v < 0 ? v + p.dims[k] : v) * p.strides[k];
        }
        if (offs)
            offs[t] = off;
    }
    size_t esize = ir_dtype_size(dt);
    if (!scatter)
        return kc_gather_nd(ex->kc, x.data, esize, idx.data, it == IR_I64, &p, y.data) ||
               rt_cu_failed(ex, n);
    bool unique = true;
    qsort(offs, (size_t)ntuples, sizeof *offs, cmp_i64);
    for (int64_t t = 1; t < ntuples && unique; t++)
        unique = offs[t] != offs[t - 1];
    return (kc_copy(ex->kc, y.data, x.data, (size_t)x.numel * esize) &&
            kc_scatter_nd(ex->kc, upd.data, esize, idx.data, it == IR_I64, &p, unique, y.data)) ||
           rt_cu_failed(ex, n);
}

/* InstanceNormalization: scale and B must hold one value per channel, as the CPU kernel checks. */
static bool run_instance_norm(executor *ex, ir_node *n)
{
    kc_tensor t[3], y;
    for (uint32_t i = 0; i < 3; i++) {
        void *ptr = rt_cu_ensure_dev(ex, n->inputs[i], n);
        if (!ptr || !rt_cu_device_tensor(ex, n, n->inputs[i], ptr, &t[i]))
            return false;
    }
    if (t[0].rank < 2 || t[1].numel != t[0].dims[1] || t[2].numel != t[0].dims[1])
        return rt_cu_report(ex, n, "scale and B must hold one value per channel of [N, C, ...]");
    if (!rt_cu_alloc_outputs(ex, n, &y))
        return false;
    return kc_instance_norm(ex->kc, &t[0], &t[1], &t[2], ir_get_float(n, "epsilon"), &y) ||
           rt_cu_failed(ex, n);
}

static bool run_where(executor *ex, ir_node *n)
{
    kc_tensor c, x, z, y;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &c) || !rt_cu_raw_tensor(ex, n, n->inputs[1], &x) ||
        !rt_cu_raw_tensor(ex, n, n->inputs[2], &z) || !rt_cu_raw_output(ex, n, &y))
        return false;
    size_t esize = ir_dtype_size(ex->slots[n->inputs[1]->id].type.dtype);
    return kc_where(ex->kc, &c, &x, &z, esize, &y) || rt_cu_failed(ex, n);
}

/* The typed kernels' element type of a storage dtype (false: none takes it). */
bool rt_cu_elem_of(ir_dtype dt, kc_elem *out)
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

/* The typed kernel's operation for a comparison or logical op. */
static bool compare_op_of(ir_op op, kc_compare_op *out)
{
    switch (op) {
    case IR_OP_Equal: *out = KC_CMP_EQUAL; return true;
    case IR_OP_Less: *out = KC_CMP_LESS; return true;
    case IR_OP_Greater: *out = KC_CMP_GREATER; return true;
    case IR_OP_LessOrEqual: *out = KC_CMP_LESS_EQUAL; return true;
    case IR_OP_GreaterOrEqual: *out = KC_CMP_GREATER_EQUAL; return true;
    case IR_OP_And: *out = KC_CMP_AND; return true;
    case IR_OP_Or: *out = KC_CMP_OR; return true;
    case IR_OP_Xor: *out = KC_CMP_XOR; return true;
    case IR_OP_Not: *out = KC_CMP_NOT; return true;
    case IR_OP_IsNaN: *out = KC_CMP_ISNAN; return true;
    case IR_OP_IsInf: *out = KC_CMP_ISINF; return true; /* the sign from the attributes */
    default: return false;
    }
}

/* Cast, the comparisons and the logical ops on the typed kernels. */
static bool run_typed(executor *ex, ir_node *n)
{
    kc_tensor a, b = {0}, y;
    kc_elem at, yt;
    bool binary =
        n->op != IR_OP_Cast && n->op != IR_OP_Not && n->op != IR_OP_IsNaN && n->op != IR_OP_IsInf;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &a) ||
        (binary && !rt_cu_raw_tensor(ex, n, n->inputs[1], &b)) || !rt_cu_raw_output(ex, n, &y))
        return false;
    if (!rt_cu_elem_of(ex->slots[n->inputs[0]->id].type.dtype, &at) ||
        !rt_cu_elem_of(ex->slots[n->outputs[0]->id].type.dtype, &yt))
        return rt_cu_report(ex, n, "a dtype no CUDA kernel takes");
    if (n->op == IR_OP_Cast)
        return kc_cast(ex->kc, a.data, at, y.data, yt, y.numel) || rt_cu_failed(ex, n);
    kc_compare_op op;
    if (!compare_op_of(n->op, &op))
        return rt_cu_report(ex, n, "no typed CUDA kernel runs %s", ir_op_name(n->op));
    if (n->op == IR_OP_IsInf) {
        bool neg = ir_get_int(n, "detect_negative") != 0;
        bool pos = ir_get_int(n, "detect_positive") != 0;
        if (!neg && !pos)
            return rt_cu_report(ex, n, "IsInf detecting neither infinity has no CUDA kernel");
        op = neg && pos ? KC_CMP_ISINF : pos ? KC_CMP_ISINF_POS : KC_CMP_ISINF_NEG;
    }
    return kc_compare(ex->kc, op, &a, &b, at, &y) || rt_cu_failed(ex, n);
}

/* Pad: amounts and mode as the CPU reads them; the constant (input 2, default 0) converted to the
 * element type as the CPU kernel converts it (floats through f32, then the 16-bit storage). */
static bool run_pad(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    const int64_t *pads, *axes;
    int npads, naxes;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_output(ex, n, &y) ||
        !rt_cu_host_ints(ex, n, 1, &pads, &npads) || !rt_cu_host_ints(ex, n, 3, &axes, &naxes))
        return false;
    int64_t before[IR_MAX_RANK];
    kc_pad_mode mode;
    const char *err;
    if (!pads || !rt_pad_plan(n, x.rank, pads, npads, axes, naxes, before, &mode, &err))
        return rt_cu_report(ex, n, "%s", pads ? err : "the pads input is missing");
    ir_dtype dt = ex->slots[n->inputs[0]->id].type.dtype;
    double v = 0;
    ir_value *cv = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (cv && (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16)) {
        const void *h = rt_cu_ensure_host(ex, cv, n);
        if (!h)
            return false;
        v = dt == IR_F32   ? ((const float *)h)[0]
            : dt == IR_F16 ? f16_to_f32(((const uint16_t *)h)[0])
                           : bf16_to_f32(((const uint16_t *)h)[0]);
    } else if (cv) {
        const void *h = rt_cu_ensure_host(ex, cv, n);
        if (!h)
            return false;
        switch (dt) {
        case IR_I8: v = ((const int8_t *)h)[0]; break;
        case IR_U8:
        case IR_BOOL: v = ((const uint8_t *)h)[0]; break;
        case IR_I32: v = ((const int32_t *)h)[0]; break;
        case IR_I64: v = (double)((const int64_t *)h)[0]; break;
        default: return rt_cu_report(ex, n, "%s: no CUDA Pad takes it", ir_dtype_name(dt));
        }
    }
    uint64_t fill = 0;
    if (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16) {
        float f = (float)v;
        uint16_t h = dt == IR_F16 ? f32_to_f16(f) : f32_to_bf16(f);
        if (dt == IR_F32)
            memcpy(&fill, &f, sizeof f);
        else
            memcpy(&fill, &h, sizeof h);
    } else {
        kn_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = &fill};
        kn_set_f64(&t, 0, v);
    }
    size_t esize = ir_dtype_size(dt);
    return kc_pad(ex->kc, x.data, esize, x.rank, x.dims, y.dims, before, mode, fill, y.data) ||
           rt_cu_failed(ex, n);
}

/* Tile (the repeats are the inferred output shape) and Trilu (k read on the host). */
static bool run_tile_trilu(executor *ex, ir_node *n)
{
    kc_tensor x, y;
    if (!rt_cu_raw_tensor(ex, n, n->inputs[0], &x) || !rt_cu_raw_output(ex, n, &y))
        return false;
    size_t esize = ir_dtype_size(ex->slots[n->inputs[0]->id].type.dtype);
    if (n->op == IR_OP_Tile)
        return kc_tile(ex->kc, x.data, esize, x.rank, x.dims, y.dims, y.data) ||
               rt_cu_failed(ex, n);
    const int64_t *k = NULL;
    int nk = 0;
    if (!rt_cu_host_ints(ex, n, 1, &k, &nk))
        return false;
    if (k && nk != 1)
        return rt_cu_report(ex, n, "k must be a scalar");
    return kc_trilu(ex->kc, x.data, esize, x.rank, x.dims, ir_get_int(n, "upper") != 0,
                    k ? k[0] : 0, y.data) ||
           rt_cu_failed(ex, n);
}

static bool reduce_kind_of(ir_op op, kc_reduce_kind *out)
{
    switch (op) {
    case IR_OP_ReduceSum: *out = KC_REDUCE_SUM; return true;
    case IR_OP_ReduceMean: *out = KC_REDUCE_MEAN; return true;
    case IR_OP_ReduceMax: *out = KC_REDUCE_MAX; return true;
    case IR_OP_ReduceMin: *out = KC_REDUCE_MIN; return true;
    case IR_OP_ReduceProd: *out = KC_REDUCE_PROD; return true;
    case IR_OP_ReduceL1: *out = KC_REDUCE_L1; return true;
    case IR_OP_ReduceL2: *out = KC_REDUCE_L2; return true;
    case IR_OP_ReduceSumSquare: *out = KC_REDUCE_SUMSQ; return true;
    case IR_OP_ReduceLogSum: *out = KC_REDUCE_LOGSUM; return true;
    case IR_OP_ReduceLogSumExp: *out = KC_REDUCE_LOGSUMEXP; return true;
    case IR_OP_GlobalAveragePool: *out = KC_REDUCE_MEAN; return true;
    default: return false;
    }
}

/* Every Reduce* op: the axes from input 1 (read on the host) or the attribute, as the CPU
 * kernel reads them; empty axes reduce everything unless noop_with_empty_axes (then no axis). */
static bool run_reduce_op(executor *ex, ir_node *n, kc_reduce_kind kind)
{
    const int64_t *axes = NULL;
    int naxes = 0;
    static const int64_t spatial[] = {2, 3, 4, 5, 6, 7};
    if (n->op == IR_OP_GlobalAveragePool) { /* the mean over every dim after N and C */
        axes = spatial;
        naxes = ex->slots[n->inputs[0]->id].type.rank - 2;
        if (naxes < 1)
            return rt_cu_report(ex, n, "GlobalAveragePool needs [N, C, spatial...]");
    } else if (n->ninputs > 1 && n->inputs[1]) {
        if (!rt_cu_host_ints(ex, n, 1, &axes, &naxes))
            return false;
    } else {
        naxes = (int)ir_get_ints(n, "axes", &axes);
    }
    kc_tensor x, y;
    void *ptr = rt_cu_ensure_dev(ex, n->inputs[0], n);
    if (!ptr || !rt_cu_device_tensor(ex, n, n->inputs[0], ptr, &x) ||
        !rt_cu_alloc_outputs(ex, n, &y))
        return false;
    bool mask[IR_MAX_RANK];
    bool noop = naxes == 0 && ir_get_int(n, "noop_with_empty_axes") != 0;
    for (int d = 0; d < x.rank; d++)
        mask[d] = naxes == 0 && !noop;
    for (int i = 0; i < naxes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x.rank : axes[i];
        if (a < 0 || a >= x.rank)
            return rt_cu_report(ex, n, "axis %lld is out of range for rank %d", (long long)axes[i],
                                x.rank);
        mask[a] = true;
    }
    return kc_reduce(ex->kc, kind, &x, mask, &y) || rt_cu_failed(ex, n);
}

/* The shared plain ops; *handled false (nothing reported) for any other op. */
bool rt_cu_run_common(executor *ex, ir_node *n, bool *handled)
{
    kc_reduce_kind reduce;
    kc_compare_op cmp;
    *handled = true;
    if (kn_cuda_ew_op_listed(n->op))
        return run_ew_op(ex, n);
    if (reduce_kind_of(n->op, &reduce))
        return run_reduce_op(ex, n, reduce);
    if (is_movement(n->op))
        return run_move_op(ex, n);
    if (n->op == IR_OP_Gather)
        return run_gather(ex, n);
    if (n->op == IR_OP_Where)
        return run_where(ex, n);
    if (n->op == IR_OP_ArgMax || n->op == IR_OP_ArgMin || n->op == IR_OP_CumSum)
        return run_axis_op(ex, n);
    if (n->op == IR_OP_GatherElements)
        return run_gather_elements(ex, n);
    if (n->op == IR_OP_GatherND || n->op == IR_OP_ScatterND)
        return run_nd(ex, n);
    if (n->op == IR_OP_InstanceNormalization)
        return run_instance_norm(ex, n);
    if (n->op == IR_OP_Tile || n->op == IR_OP_Trilu)
        return run_tile_trilu(ex, n);
    if (n->op == IR_OP_Pad)
        return run_pad(ex, n);
    if (n->op == IR_OP_Cast || compare_op_of(n->op, &cmp))
        return run_typed(ex, n);
    *handled = false;
    return false;
}

#endif /* FR_HAVE_CUDA */
