/* The plain ONNX ops' CUDA launches on norm_more.cu and softmax_loss.cu: LogSoftmax, Hardmax,
 * GlobalMaxPool, LayerNormalization with its statistics, GroupNormalization,
 * MeanVarianceNormalization, LRN and the losses; rows of kn_cuda_onnx_run (launch_onnx.c). Each
 * checks what the CPU kernel checks, with its message, before launching. */
#include "kernels/cuda/cuda_launch.h"

#include <string.h>

/* LogSoftmax and Hardmax along their axis. */
bool kn_cuda_run_log_softmax(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    int axis = 0; /* set by axis_of before any use */
    if (!kn_cuda_inputs(call, 1, &x) || !kn_cuda_axis(call, x.rank, &axis) ||
        !kn_cuda_alloc_outputs(call, &y))
        return false;
    return kc_log_softmax(call->kc, x.dtype, x.data, kn_cuda_dims_prod(x.dims, 0, axis),
                          x.dims[axis], kn_cuda_dims_prod(x.dims, axis + 1, x.rank),
                          n->op == IR_OP_Hardmax, y.data) ||
           kn_cuda_failed(call);
}

bool kn_cuda_run_global_max_pool(const kn_cuda_call *call)
{
    kc_tensor x, y;
    if (!kn_cuda_inputs(call, 1, &x))
        return false;
    if (x.rank < 3)
        return kn_cuda_fail(call, "the input must be a float tensor of rank 3 or more");
    int64_t planes = x.dims[0] * x.dims[1], size = planes ? x.numel / planes : 0;
    if (size == 0 && planes > 0)
        return kn_cuda_fail(call, "the spatial dims are empty: there is no maximum");
    return kn_cuda_alloc_outputs(call, &y) &&
           (kc_plane_max(call->kc, x.dtype, x.data, planes, size, y.data) || kn_cuda_failed(call));
}

/* LayerNormalization with its Mean and InvStdDev outputs. */
bool kn_cuda_run_layer_norm_stats(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[3], out[3] = {{0}};
    int axis = 0; /* set by axis_of before any use */
    if (!kn_cuda_inputs(call, 3, in) || !kn_cuda_axis(call, in[0].rank, &axis) ||
        !kn_cuda_alloc_outputs(call, out))
        return false;
    return kc_layer_norm_stats(
               call->kc, &in[0], &in[1], &in[2], axis, (float)ir_get_float(n, "epsilon"), &out[0],
               n->noutputs > 1 ? &out[1] : NULL, n->noutputs > 2 ? &out[2] : NULL) ||
           kn_cuda_failed(call);
}

bool kn_cuda_run_group_norm(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[3], y;
    if (!kn_cuda_inputs(call, 3, in))
        return false;
    if (in[0].rank < 2)
        return kn_cuda_fail(call, "the input must be a float tensor of rank 2 or more");
    int64_t groups = ir_get_int(n, "num_groups"), c = in[0].dims[1];
    if (groups < 1 || c % groups != 0 || in[1].numel != c || in[2].numel != c)
        return kn_cuda_fail(call,
                            "%lld channels, %lld groups: scale and bias need one value per "
                            "channel",
                            (long long)c, (long long)groups);
    return kn_cuda_alloc_outputs(call, &y) &&
           (kc_group_norm(call->kc, &in[0], &in[1], &in[2], groups, ir_get_float(n, "epsilon"),
                          &y) ||
            kn_cuda_failed(call));
}

bool kn_cuda_run_mvn(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    if (!kn_cuda_inputs(call, 1, &x))
        return false;
    const int64_t *vals;
    uint32_t count = ir_get_ints(n, "axes", &vals);
    bool reduced[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < count; k++) {
        if (vals[k] < -x.rank || vals[k] >= x.rank)
            return kn_cuda_fail(call, "axis %lld is out of range for rank %d", (long long)vals[k],
                                x.rank);
        reduced[vals[k] < 0 ? vals[k] + x.rank : vals[k]] = true;
    }
    return kn_cuda_alloc_outputs(call, &y) &&
           (kc_mvn(call->kc, &x, reduced, &y) || kn_cuda_failed(call));
}

bool kn_cuda_run_lrn(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, y;
    int64_t size = ir_get_int(n, "size");
    if (!kn_cuda_inputs(call, 1, &x))
        return false;
    if (x.rank < 3)
        return kn_cuda_fail(call, "the input must be a float tensor of rank 3 or more");
    if (size < 1)
        return kn_cuda_fail(call, "size %lld is below 1", (long long)size);
    return kn_cuda_alloc_outputs(call, &y) &&
           (kc_lrn(call->kc, &x, size, ir_get_float(n, "alpha"), ir_get_float(n, "beta"),
                   ir_get_float(n, "bias"), &y) ||
            kn_cuda_failed(call));
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the targets checked on the host. */
bool kn_cuda_run_loss(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor x, w = {0}, t, out[2] = {{0}};
    bool has_w = n->ninputs > 2 && n->inputs[2];
    if (!kn_cuda_inputs(call, 1, &x) || !kn_cuda_raw_tensor(call, n->inputs[1], &t))
        return false;
    if (has_w) {
        void *ptr = kn_cuda_device(call, n->inputs[2]);
        if (!ptr || !kn_cuda_device_tensor(call, n->inputs[2], ptr, &w))
            return false;
    }
    const char *red = ir_get_string(n, "reduction");
    int reduction = strcmp(red, "none") == 0   ? 0
                    : strcmp(red, "sum") == 0  ? 1
                    : strcmp(red, "mean") == 0 ? 2
                                               : -1;
    if (reduction < 0)
        return kn_cuda_fail(call, "reduction \"%s\" is not none, sum or mean", red);
    if (x.rank < 2)
        return kn_cuda_fail(call, "the input must be a float tensor [N, C, ...]");
    int64_t nb = x.dims[0], c = x.dims[1], inner = nb && c ? x.numel / (nb * c) : 0;
    if (t.numel != nb * inner || (has_w && w.numel != c))
        return kn_cuda_fail(call, "target must be [N, d...] and weight [C] for input [N, C, d...]");
    ir_dtype tt = kn_cuda_type(call, n->inputs[1])->dtype;
    const void *host = kn_cuda_host(call, n->inputs[1]);
    if (!host)
        return false;
    int64_t ignore = ir_get_int(n, "ignore_index");
    for (int64_t j = 0; j < t.numel; j++) {
        int64_t v = kn_cuda_index_at(host, tt, j);
        if (v != ignore && (v < 0 || v >= c))
            return kn_cuda_fail(call, "target %lld is not a class in [0, %lld)", (long long)v,
                                (long long)c);
    }
    return kn_cuda_alloc_outputs(call, out) &&
           (kc_nll_loss(call->kc, &x, n->op == IR_OP_SoftmaxCrossEntropyLoss, t.data, tt == IR_I64,
                        has_w ? &w : NULL, reduction, ignore, &out[0],
                        n->noutputs > 1 ? &out[1] : NULL) ||
            kn_cuda_failed(call));
}
