/* The CUDA column's rows for the plain ONNX ops (kn_cuda_onnx_run: one launch per op, the table at
 * the end), and the launches of the elementwise table (onnx_ew_table.c), movement, Gather and the
 * index ops, Where, Cast and comparisons, Pad, Tile, Trilu and the reductions. Each launch fetches
 * the operands it reads through the call (launch_operands.c) and checks what the CPU kernel
 * checks, with its message, before launching. */
#include "kernels/cuda/cuda_launch.h"

#include "base/check.h"
#include "base/half.h"
#include "kernels/cuda/copy_plan.h"
#include "kernels/cuda/cuda_registry.h"
#include "kernels/helpers.h"

#include <stdlib.h>
#include <string.h>

/* A plain elementwise op as its ElementwiseChain expression: only the inputs the expression reads
 * go to the device (not Expand's shape, nor a Clip bound that is absent). */
static bool run_ew_op(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kn_cuda_ew_expr e;
    char why[KN_WHY_SIZE];
    if (!kn_cuda_ew_expand(call->arena, n, &e, why))
        return kn_cuda_fail(call, "%s", why);
    kc_tensor in[KN_CUDA_EW_MAX_INPUTS], out;
    const kc_tensor *ptrs[KN_CUDA_EW_MAX_INPUTS];
    for (uint32_t i = 0; i < e.ninputs; i++) {
        ir_value *v = n->inputs[e.inputs[i]];
        void *ptr = kn_cuda_device(call, v);
        if (!ptr || !kn_cuda_device_tensor(call, v, ptr, &in[i]))
            return false;
        if (e.per_channel && i > 0) { /* [C] as [C, 1, ...] against [N, C, ...] */
            int64_t c = in[i].numel;
            in[i].rank = in[0].rank - 1;
            for (int d = 0; d < in[i].rank; d++)
                in[i].dims[d] = d == 0 ? c : 1;
        }
        ptrs[i] = &in[i];
    }
    if (n->noutputs != 1 || !kn_cuda_alloc_outputs(call, &out))
        return n->noutputs != 1 ? kn_cuda_fail(call, "one output expected") : false;
    return kc_ewchain(call->kc, e.body, ptrs, (int)e.ninputs, &out) || kn_cuda_failed(call);
}

/* Transpose, Slice, Concat, Split: strided copies of raw elements (any dtype). */
static bool run_move_op(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kn_cuda_move_io io = {0};
    if (n->ninputs > KN_CUDA_MOVE_MAX_INPUTS || n->noutputs > KN_CUDA_MOVE_MAX_PLANS)
        return kn_cuda_fail(call, "too many operands for the CUDA copy");
    uint32_t data_inputs = n->op == IR_OP_Concat ? n->ninputs : 1;
    const void *src[KN_CUDA_MOVE_MAX_INPUTS];
    for (uint32_t i = 0; i < data_inputs; i++) {
        if (!(src[i] = kn_cuda_device(call, n->inputs[i])))
            return false;
        io.in_type[i] = kn_cuda_type(call, n->inputs[i]);
    }
    for (uint32_t i = 1; n->op == IR_OP_Slice && i < 5; i++)
        if (!kn_cuda_host_ints(call, i, &io.ints[i], &io.nints[i]))
            return false;
    void *dst[KN_CUDA_MOVE_MAX_PLANS];
    for (uint32_t k = 0; k < n->noutputs; k++) {
        if (!(dst[k] = call->output(call->user, n->outputs[k], n)))
            return false;
        io.out_type[k] = kn_cuda_type(call, n->outputs[k]);
    }
    kc_copy_plan plans[KN_CUDA_MOVE_MAX_PLANS];
    int nplans;
    const char *err;
    if (!kn_cuda_move_plans(n, &io, plans, &nplans, &err))
        return kn_cuda_fail(call, "%s", err);
    size_t esize = ir_dtype_size(io.in_type[0]->dtype);
    for (int k = 0; k < nplans; k++) {
        const void *from = src[n->op == IR_OP_Concat ? k : 0];
        void *to = dst[n->op == IR_OP_Split ? k : 0];
        if (!kc_strided_copy(call->kc, from, to, esize, &plans[k]))
            return kn_cuda_failed(call);
    }
    return true;
}

/* Gather: the indices are checked on the host (an index outside [-dim, dim) is the CPU kernel's
 * error too), then read by the kernel from their device copy. */
static bool run_gather(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor data, idx, y;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &data) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &idx) || !kn_cuda_raw_output(call, &y))
        return false;
    int64_t axis = ir_get_int(n, "axis");
    axis += axis < 0 ? data.rank : 0;
    if (axis < 0 || axis >= data.rank)
        return kn_cuda_fail(call, "axis %lld is out of range for rank %d",
                            (long long)ir_get_int(n, "axis"), data.rank);
    ir_dtype it = kn_cuda_type(call, n->inputs[1])->dtype;
    const void *host = kn_cuda_host(call, n->inputs[1]);
    if (!host)
        return false;
    int64_t dim = data.dims[axis], outer = 1, inner = 1;
    for (int64_t j = 0; j < idx.numel; j++) {
        int64_t i = it == IR_I64 ? ((const int64_t *)host)[j] : ((const int32_t *)host)[j];
        if (i < -dim || i >= dim)
            return kn_cuda_fail(call, "index %lld is out of range for axis %lld of size %lld",
                                (long long)i, (long long)axis, (long long)dim);
    }
    for (int d = 0; d < data.rank; d++)
        *(d < axis ? &outer : &inner) *= d == axis ? 1 : data.dims[d];
    size_t esize = ir_dtype_size(kn_cuda_type(call, n->inputs[0])->dtype);
    return kc_gather(call->kc, data.data, esize, outer, dim, inner, idx.data, it == IR_I64,
                     idx.numel, y.data) ||
           kn_cuda_failed(call);
}

/* ArgMax, ArgMin (axis attribute) and CumSum (axis input, read on the host) over float x viewed
 * as [outer, n, inner]; keepdims changes only the output's shape, not its layout. */
static bool run_axis_op(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    kc_dtype dt;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) || !kn_cuda_raw_output(call, &y))
        return false;
    if (!kn_cuda_dtype_of(kn_cuda_type(call, n->inputs[0])->dtype, &dt))
        return kn_cuda_fail(call, "a dtype no CUDA kernel takes");
    int64_t axis = ir_get_int(n, "axis");
    if (n->op == IR_OP_CumSum) {
        const int64_t *a;
        int na;
        if (!kn_cuda_host_ints(call, 1, &a, &na))
            return false;
        if (na != 1)
            return kn_cuda_fail(call, "axis must hold one value");
        axis = a[0];
    }
    if (axis < -x.rank || axis >= x.rank)
        return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)axis, x.rank);
    int ax = (int)(axis < 0 ? axis + x.rank : axis);
    int64_t outer = kn_cuda_dims_prod(x.dims, 0, ax), len = x.dims[ax];
    int64_t inner = kn_cuda_dims_prod(x.dims, ax + 1, x.rank);
    if (n->op == IR_OP_CumSum)
        return kc_cumsum(call->kc, dt, x.data, outer, len, inner, ir_get_int(n, "exclusive") != 0,
                         ir_get_int(n, "reverse") != 0, y.data) ||
               kn_cuda_failed(call);
    bool max = n->op == IR_OP_ArgMax;
    if (len == 0 && outer * inner > 0) /* the CPU kernel's error */
        return kn_cuda_fail(call, "the axis is empty: there is no %s", max ? "maximum" : "minimum");
    return kc_arg_reduce(call->kc, dt, x.data, outer, len, inner, max,
                         ir_get_int(n, "select_last_index") != 0, y.data) ||
           kn_cuda_failed(call);
}

/* GatherElements: the indices are checked on the host as the CPU kernel checks them (same rank
 * as data, dims off the axis at most data's, values in [-dim, dim)). */
static bool run_gather_elements(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor data, idx, y;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &data) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &idx) || !kn_cuda_raw_output(call, &y))
        return false;
    int64_t axis = ir_get_int(n, "axis");
    if (axis < -data.rank || axis >= data.rank || idx.rank != data.rank)
        return kn_cuda_fail(call, "axis %lld or indices of rank %d do not fit data of rank %d",
                            (long long)axis, idx.rank, data.rank);
    int ax = (int)(axis < 0 ? axis + data.rank : axis);
    for (int d = 0; d < data.rank; d++)
        if (d != ax && idx.dims[d] > data.dims[d])
            return kn_cuda_fail(call, "indices' dim %d (%lld) is above data's (%lld)", d,
                                (long long)idx.dims[d], (long long)data.dims[d]);
    ir_dtype it = kn_cuda_type(call, n->inputs[1])->dtype;
    const void *host = kn_cuda_host(call, n->inputs[1]);
    if (!host)
        return false;
    int64_t dim = data.dims[ax];
    for (int64_t j = 0; j < idx.numel; j++) {
        int64_t i = it == IR_I64 ? ((const int64_t *)host)[j] : ((const int32_t *)host)[j];
        if (i < -dim || i >= dim)
            return kn_cuda_fail(call, "index %lld is out of range for a dim of %lld", (long long)i,
                                (long long)dim);
    }
    size_t esize = ir_dtype_size(kn_cuda_type(call, n->inputs[0])->dtype);
    return kc_gather_elements(call->kc, data.data, esize, data.rank, data.dims, idx.dims, ax,
                              idx.data, it == IR_I64, y.data) ||
           kn_cuda_failed(call);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, z = *(const int64_t *)b;
    return x < z ? -1 : x > z;
}

/* GatherND and ScatterND (reduction none): the shapes and every index checked on the host as the
 * CPU kernel checks them (its errors), then the kernel reads the indices' device copy. ScatterND
 * copies data into Y first; its tuples run at once when the host finds no two alike. */
static bool run_nd(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    bool scatter = n->op == IR_OP_ScatterND;
    kc_tensor x, idx, upd = {0}, y;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &idx) ||
        (scatter && !kn_cuda_raw_tensor(call, n->inputs[2], &upd)) || !kn_cuda_raw_output(call, &y))
        return false;
    int64_t b = scatter ? 0 : ir_get_int(n, "batch_dims");
    if (idx.rank < 1 || b < 0 || b >= x.rank || b >= idx.rank)
        return kn_cuda_fail(call, "batch_dims %lld does not fit ranks %d and %d", (long long)b,
                            x.rank, idx.rank);
    int64_t depth = idx.dims[idx.rank - 1];
    if (depth < 1 || depth > x.rank - b)
        return kn_cuda_fail(call, "indices' last dim %lld does not fit data of rank %d",
                            (long long)depth, x.rank);
    for (int d = 0; d < b; d++)
        if (idx.dims[d] != x.dims[d])
            return kn_cuda_fail(call, "batch dim %d differs: %lld in data, %lld in indices", d,
                                (long long)x.dims[d], (long long)idx.dims[d]);
    kc_nd_args p = {.depth = (int)depth};
    p.batches = kn_cuda_dims_prod(x.dims, 0, (int)b);
    p.per_batch = kn_cuda_dims_prod(x.dims, (int)b, x.rank);
    p.tuples = kn_cuda_dims_prod(idx.dims, (int)b, idx.rank - 1);
    p.slice = kn_cuda_dims_prod(x.dims, (int)(b + depth), x.rank);
    for (int k = 0; k < depth; k++) {
        p.dims[k] = x.dims[b + k];
        p.strides[k] = kn_cuda_dims_prod(x.dims, (int)b + k + 1, x.rank);
    }
    ir_dtype dt = kn_cuda_type(call, n->inputs[0])->dtype;
    if (scatter &&
        (upd.numel != p.tuples * p.slice || kn_cuda_type(call, n->inputs[2])->dtype != dt))
        return kn_cuda_fail(call, "updates must be indices[:-1] + data[%lld:] of data's dtype",
                            (long long)depth);
    ir_dtype it = kn_cuda_type(call, n->inputs[1])->dtype;
    const void *host = kn_cuda_host(call, n->inputs[1]);
    if (!host)
        return false;
    int64_t ntuples = p.batches * p.tuples;
    int64_t *offs = scatter ? ar_alloc_array(call->arena, (size_t)ntuples, sizeof *offs) : NULL;
    for (int64_t t = 0; t < ntuples; t++) {
        int64_t off = 0;
        for (int64_t k = 0; k < depth; k++) {
            int64_t at = t * depth + k;
            int64_t v = it == IR_I64 ? ((const int64_t *)host)[at] : ((const int32_t *)host)[at];
            if (v < -p.dims[k] || v >= p.dims[k])
                return kn_cuda_fail(call, "index %lld is out of range for a dim of %lld",
                                    (long long)v, (long long)p.dims[k]);
            off += (v < 0 ? v + p.dims[k] : v) * p.strides[k];
        }
        if (offs)
            offs[t] = off;
    }
    size_t esize = ir_dtype_size(dt);
    if (!scatter)
        return kc_gather_nd(call->kc, x.data, esize, idx.data, it == IR_I64, &p, y.data) ||
               kn_cuda_failed(call);
    bool unique = true;
    qsort(offs, (size_t)ntuples, sizeof *offs, cmp_i64);
    for (int64_t t = 1; t < ntuples && unique; t++)
        unique = offs[t] != offs[t - 1];
    return (kc_copy(call->kc, y.data, x.data, (size_t)x.numel * esize) &&
            kc_scatter_nd(call->kc, upd.data, esize, idx.data, it == IR_I64, &p, unique, y.data)) ||
           kn_cuda_failed(call);
}

/* InstanceNormalization: scale and B must hold one value per channel, as the CPU kernel checks. */
static bool run_instance_norm(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor t[3], y;
    for (uint32_t i = 0; i < 3; i++) {
        void *ptr = kn_cuda_device(call, n->inputs[i]);
        if (!ptr || !kn_cuda_device_tensor(call, n->inputs[i], ptr, &t[i]))
            return false;
    }
    if (t[0].rank < 2 || t[1].numel != t[0].dims[1] || t[2].numel != t[0].dims[1])
        return kn_cuda_fail(call, "scale and B must hold one value per channel of [N, C, ...]");
    if (!kn_cuda_alloc_outputs(call, &y))
        return false;
    return kc_instance_norm(call->kc, &t[0], &t[1], &t[2], ir_get_float(n, "epsilon"), &y) ||
           kn_cuda_failed(call);
}

static bool run_where(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor c, x, z, y;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &c) ||
        !kn_cuda_raw_tensor(call, n->inputs[1], &x) ||
        !kn_cuda_raw_tensor(call, n->inputs[2], &z) || !kn_cuda_raw_output(call, &y))
        return false;
    size_t esize = ir_dtype_size(kn_cuda_type(call, n->inputs[1])->dtype);
    return kc_where(call->kc, &c, &x, &z, esize, &y) || kn_cuda_failed(call);
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
static bool run_typed(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor a, b = {0}, y;
    kc_elem at, yt;
    bool binary =
        n->op != IR_OP_Cast && n->op != IR_OP_Not && n->op != IR_OP_IsNaN && n->op != IR_OP_IsInf;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &a) ||
        (binary && !kn_cuda_raw_tensor(call, n->inputs[1], &b)) || !kn_cuda_raw_output(call, &y))
        return false;
    if (!kn_cuda_elem_of(kn_cuda_type(call, n->inputs[0])->dtype, &at) ||
        !kn_cuda_elem_of(kn_cuda_type(call, n->outputs[0])->dtype, &yt))
        return kn_cuda_fail(call, "a dtype no CUDA kernel takes");
    if (n->op == IR_OP_Cast)
        return kc_cast(call->kc, a.data, at, y.data, yt, y.numel) || kn_cuda_failed(call);
    kc_compare_op op;
    if (!compare_op_of(n->op, &op))
        return kn_cuda_fail(call, "no typed CUDA kernel runs %s", ir_op_name(n->op));
    if (n->op == IR_OP_IsInf) {
        bool neg = ir_get_int(n, "detect_negative") != 0;
        bool pos = ir_get_int(n, "detect_positive") != 0;
        if (!neg && !pos)
            return kn_cuda_fail(call, "IsInf detecting neither infinity has no CUDA kernel");
        op = neg && pos ? KC_CMP_ISINF : pos ? KC_CMP_ISINF_POS : KC_CMP_ISINF_NEG;
    }
    return kc_compare(call->kc, op, &a, &b, at, &y) || kn_cuda_failed(call);
}

/* Pad: amounts and mode as the CPU reads them; the constant (input 2, default 0) converted to the
 * element type as the CPU kernel converts it (floats through f32, then the 16-bit storage). */
static bool run_pad(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    const int64_t *pads, *axes;
    int npads, naxes;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) || !kn_cuda_raw_output(call, &y) ||
        !kn_cuda_host_ints(call, 1, &pads, &npads) || !kn_cuda_host_ints(call, 3, &axes, &naxes))
        return false;
    int64_t before[IR_MAX_RANK];
    kc_pad_mode mode;
    const char *err;
    if (!pads || !kn_cuda_pad_plan(n, x.rank, pads, npads, axes, naxes, before, &mode, &err))
        return kn_cuda_fail(call, "%s", pads ? err : "the pads input is missing");
    ir_dtype dt = kn_cuda_type(call, n->inputs[0])->dtype;
    double v = 0;
    ir_value *cv = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (cv && (dt == IR_F32 || dt == IR_F16 || dt == IR_BF16)) {
        const void *h = kn_cuda_host(call, cv);
        if (!h)
            return false;
        v = dt == IR_F32   ? ((const float *)h)[0]
            : dt == IR_F16 ? f16_to_f32(((const uint16_t *)h)[0])
                           : bf16_to_f32(((const uint16_t *)h)[0]);
    } else if (cv) {
        const void *h = kn_cuda_host(call, cv);
        if (!h)
            return false;
        switch (dt) {
        case IR_I8: v = ((const int8_t *)h)[0]; break;
        case IR_U8:
        case IR_BOOL: v = ((const uint8_t *)h)[0]; break;
        case IR_I32: v = ((const int32_t *)h)[0]; break;
        case IR_I64: v = (double)((const int64_t *)h)[0]; break;
        default: return kn_cuda_fail(call, "%s: no CUDA Pad takes it", ir_dtype_name(dt));
        }
    }
    uint64_t fill = kn_cuda_elem_bits(dt, v);
    size_t esize = ir_dtype_size(dt);
    return kc_pad(call->kc, x.data, esize, x.rank, x.dims, y.dims, before, mode, fill, y.data) ||
           kn_cuda_failed(call);
}

/* Tile (the repeats are the inferred output shape) and Trilu (k read on the host). */
static bool run_tile_trilu(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    if (!kn_cuda_raw_tensor(call, n->inputs[0], &x) || !kn_cuda_raw_output(call, &y))
        return false;
    size_t esize = ir_dtype_size(kn_cuda_type(call, n->inputs[0])->dtype);
    if (n->op == IR_OP_Tile)
        return kc_tile(call->kc, x.data, esize, x.rank, x.dims, y.dims, y.data) ||
               kn_cuda_failed(call);
    const int64_t *k = NULL;
    int nk = 0;
    if (!kn_cuda_host_ints(call, 1, &k, &nk))
        return false;
    if (k && nk != 1)
        return kn_cuda_fail(call, "k must be a scalar");
    return kc_trilu(call->kc, x.data, esize, x.rank, x.dims, ir_get_int(n, "upper") != 0,
                    k ? k[0] : 0, y.data) ||
           kn_cuda_failed(call);
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
static bool run_reduce_op(const kn_cuda_call *call, kc_reduce_kind kind)
{
    const ir_node *n = call->node;
    const int64_t *axes = NULL;
    int naxes = 0;
    static const int64_t spatial[] = {2, 3, 4, 5, 6, 7};
    if (n->op == IR_OP_GlobalAveragePool) { /* the mean over every dim after N and C */
        axes = spatial;
        naxes = kn_cuda_type(call, n->inputs[0])->rank - 2;
        if (naxes < 1)
            return kn_cuda_fail(call, "GlobalAveragePool needs [N, C, spatial...]");
    } else if (n->ninputs > 1 && n->inputs[1]) {
        if (!kn_cuda_host_ints(call, 1, &axes, &naxes))
            return false;
    } else {
        naxes = (int)ir_get_ints(n, "axes", &axes);
    }
    kc_tensor x, y;
    void *ptr = kn_cuda_device(call, n->inputs[0]);
    if (!ptr || !kn_cuda_device_tensor(call, n->inputs[0], ptr, &x) ||
        !kn_cuda_alloc_outputs(call, &y))
        return false;
    bool mask[IR_MAX_RANK];
    bool noop = naxes == 0 && ir_get_int(n, "noop_with_empty_axes") != 0;
    for (int d = 0; d < x.rank; d++)
        mask[d] = naxes == 0 && !noop;
    for (int i = 0; i < naxes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x.rank : axes[i];
        if (a < 0 || a >= x.rank)
            return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)axes[i],
                                x.rank);
        mask[a] = true;
    }
    return kc_reduce(call->kc, kind, &x, mask, &y) || kn_cuda_failed(call);
}

static bool run_reduce(const kn_cuda_call *call)
{
    kc_reduce_kind kind = KC_REDUCE_SUM;
    FR_CHECK(reduce_kind_of(call->node->op, &kind)); /* the table's rows are reduce_kind_of's ops */
    return run_reduce_op(call, kind);
}

/* ---- the plain ops' rows ---------------------------------------------------------------------
 *
 * One launch per op. Where two kernels share an op, its launch picks by the node, as the supports
 * check (kn_cuda_onnx_supports) does: an integer input 0 runs on the integer kernel, the float forms
 * on the elementwise table; MaxPool with Indices and LayerNormalization with its statistics have
 * their own kernels; ScatterND with a reduction runs the scatter plan. */

/* The elementwise table's ops and the integer kernel's (Mod, BitShift, Bitwise*). */
static bool run_elementwise(const kn_cuda_call *call)
{
    if (kn_cuda_int_kernel(call->node)) /* before the table, which has the float forms */
        return kn_cuda_run_int_op(call);
    return run_ew_op(call);
}

static bool run_maxpool(const kn_cuda_call *call)
{
    if (call->node->noutputs > 1)
        return kn_cuda_run_maxpool_indices(call);
    return kn_cuda_run_given(call, kn_cuda_run_pool);
}

static bool run_layer_norm(const kn_cuda_call *call)
{
    if (call->node->noutputs > 1)
        return kn_cuda_run_layer_norm_stats(call);
    return kn_cuda_run_given(call, kn_cuda_run_LayerNormalization);
}

static bool run_scatter_nd(const kn_cuda_call *call)
{
    if (strcmp(ir_get_string(call->node, "reduction"), "none") != 0)
        return kn_cuda_run_scatter_plan(call);
    return run_nd(call);
}

/* The plain ops on the fused ops' kernels, given every operand (kn_cuda_run_given). */
static bool run_conv(const kn_cuda_call *call)
{
    return kn_cuda_run_given(call, kn_cuda_run_Conv);
}

static bool run_gemm(const kn_cuda_call *call)
{
    return kn_cuda_run_given(call, kn_cuda_run_onnx_gemm);
}

static bool run_avgpool(const kn_cuda_call *call)
{
    return kn_cuda_run_given(call, kn_cuda_run_pool);
}

static bool run_softmax(const kn_cuda_call *call)
{
    return kn_cuda_run_given(call, kn_cuda_run_Softmax);
}

/* Adding a plain op to the GPU: its supports check in kn_cuda_onnx_supports (cuda_supports.c) and
 * its row here; an elementwise op is one row of onnx_ew_table.c instead. The registry test
 * (tests/kernels-fused/test_registry.c) checks that every op the supports check claims has a
 * launch and no other op has one. */
static const kn_cuda_fn onnx_runs[IR_OP_COUNT] = {
    /* the integer kernel (launch_generate.c); the float elementwise ops are the table's */
    [IR_OP_Mod] = run_elementwise,
    [IR_OP_BitShift] = run_elementwise,
    [IR_OP_BitwiseAnd] = run_elementwise,
    [IR_OP_BitwiseOr] = run_elementwise,
    [IR_OP_BitwiseXor] = run_elementwise,
    [IR_OP_BitwiseNot] = run_elementwise,
    /* the generators (launch_generate.c) */
    [IR_OP_Shape] = kn_cuda_run_generator,
    [IR_OP_Size] = kn_cuda_run_generator,
    [IR_OP_ConstantOfShape] = kn_cuda_run_generator,
    [IR_OP_CastLike] = kn_cuda_run_generator,
    [IR_OP_Range] = kn_cuda_run_generator,
    [IR_OP_EyeLike] = kn_cuda_run_generator,
    [IR_OP_HannWindow] = kn_cuda_run_generator,
    [IR_OP_HammingWindow] = kn_cuda_run_generator,
    [IR_OP_BlackmanWindow] = kn_cuda_run_generator,
    [IR_OP_OneHot] = kn_cuda_run_generator,
    [IR_OP_ReverseSequence] = kn_cuda_run_generator,
    [IR_OP_RandomUniform] = kn_cuda_run_generator,
    [IR_OP_RandomUniformLike] = kn_cuda_run_generator,
    /* normalizations and losses (launch_norm_more.c, launch_norm.c) */
    [IR_OP_LogSoftmax] = kn_cuda_run_log_softmax,
    [IR_OP_Hardmax] = kn_cuda_run_log_softmax,
    [IR_OP_GlobalMaxPool] = kn_cuda_run_global_max_pool,
    [IR_OP_GroupNormalization] = kn_cuda_run_group_norm,
    [IR_OP_MeanVarianceNormalization] = kn_cuda_run_mvn,
    [IR_OP_LRN] = kn_cuda_run_lrn,
    [IR_OP_NegativeLogLikelihoodLoss] = kn_cuda_run_loss,
    [IR_OP_SoftmaxCrossEntropyLoss] = kn_cuda_run_loss,
    [IR_OP_LayerNormalization] = run_layer_norm,
    [IR_OP_Softmax] = run_softmax,
    [IR_OP_InstanceNormalization] = run_instance_norm,
    /* TopK, scatters, NonZero, Compress (launch_scatter.c) */
    [IR_OP_TopK] = kn_cuda_run_topk,
    [IR_OP_ScatterElements] = kn_cuda_run_scatter_plan,
    [IR_OP_ScatterND] = run_scatter_nd,
    [IR_OP_NonZero] = kn_cuda_run_nonzero,
    [IR_OP_Compress] = kn_cuda_run_compress,
    /* resampling and pooling (launch_resample.c, launch_conv.c) */
    [IR_OP_Resize] = kn_cuda_run_resize,
    [IR_OP_MaxUnpool] = kn_cuda_run_maxunpool,
    [IR_OP_GridSample] = kn_cuda_run_grid_sample,
    [IR_OP_MaxPool] = run_maxpool,
    [IR_OP_AveragePool] = run_avgpool,
    /* convolution and GEMM on the fused ops' kernels (launch_conv.c, launch_gemm.c) */
    [IR_OP_Conv] = run_conv,
    [IR_OP_MatMul] = run_gemm,
    [IR_OP_Gemm] = run_gemm,
    /* quantized and integer linear algebra, Det, DFT, Einsum, RNNs (launch_linalg.c) */
    [IR_OP_QuantizeLinear] = kn_cuda_run_qdq,
    [IR_OP_DequantizeLinear] = kn_cuda_run_qdq,
    [IR_OP_DynamicQuantizeLinear] = kn_cuda_run_dynamic_quantize,
    [IR_OP_MatMulInteger] = kn_cuda_run_int_matmul,
    [IR_OP_QLinearMatMul] = kn_cuda_run_int_matmul,
    [IR_OP_ConvInteger] = kn_cuda_run_int_conv,
    [IR_OP_QLinearConv] = kn_cuda_run_int_conv,
    [IR_OP_ConvTranspose] = kn_cuda_run_conv_transpose,
    [IR_OP_Det] = kn_cuda_run_det_dft,
    [IR_OP_DFT] = kn_cuda_run_det_dft,
    [IR_OP_Einsum] = kn_cuda_run_einsum,
    [IR_OP_RNN] = kn_cuda_run_rnn_op,
    [IR_OP_GRU] = kn_cuda_run_rnn_op,
    [IR_OP_LSTM] = kn_cuda_run_rnn_op,
    /* this file's */
    [IR_OP_ReduceSum] = run_reduce,
    [IR_OP_ReduceMean] = run_reduce,
    [IR_OP_ReduceMax] = run_reduce,
    [IR_OP_ReduceMin] = run_reduce,
    [IR_OP_ReduceProd] = run_reduce,
    [IR_OP_ReduceL1] = run_reduce,
    [IR_OP_ReduceL2] = run_reduce,
    [IR_OP_ReduceSumSquare] = run_reduce,
    [IR_OP_ReduceLogSum] = run_reduce,
    [IR_OP_ReduceLogSumExp] = run_reduce,
    [IR_OP_GlobalAveragePool] = run_reduce,
    [IR_OP_Transpose] = run_move_op,
    [IR_OP_Slice] = run_move_op,
    [IR_OP_Concat] = run_move_op,
    [IR_OP_Split] = run_move_op,
    [IR_OP_DepthToSpace] = run_move_op,
    [IR_OP_SpaceToDepth] = run_move_op,
    [IR_OP_Gather] = run_gather,
    [IR_OP_GatherElements] = run_gather_elements,
    [IR_OP_GatherND] = run_nd,
    [IR_OP_Where] = run_where,
    [IR_OP_ArgMax] = run_axis_op,
    [IR_OP_ArgMin] = run_axis_op,
    [IR_OP_CumSum] = run_axis_op,
    [IR_OP_Tile] = run_tile_trilu,
    [IR_OP_Trilu] = run_tile_trilu,
    [IR_OP_Pad] = run_pad,
    [IR_OP_Cast] = run_typed,
    [IR_OP_Equal] = run_typed,
    [IR_OP_Less] = run_typed,
    [IR_OP_Greater] = run_typed,
    [IR_OP_LessOrEqual] = run_typed,
    [IR_OP_GreaterOrEqual] = run_typed,
    [IR_OP_And] = run_typed,
    [IR_OP_Or] = run_typed,
    [IR_OP_Xor] = run_typed,
    [IR_OP_Not] = run_typed,
    [IR_OP_IsNaN] = run_typed,
    [IR_OP_IsInf] = run_typed,
};

kn_cuda_fn kn_cuda_onnx_run(ir_op op)
{
    if ((unsigned)op >= IR_OP_COUNT || kn_fused_entry_get(op))
        return NULL;
    if (kn_cuda_ew_op_listed(op)) /* Add, Relu, ...: the integer kernel or the table */
        return run_elementwise;
    return onnx_runs[op];
}
