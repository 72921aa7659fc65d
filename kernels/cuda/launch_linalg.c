/* The plain ONNX ops' CUDA launches of quantized and integer linear algebra, ConvTranspose, Det,
 * DFT, Einsum (quant.cu, linalg.cu), RNN, GRU, LSTM (rnn.cu); rows of kn_cuda_onnx_run
 * (launch_onnx.c). Shapes and parameters are checked on the host by the CPU kernels' own geometry
 * code (kn_qmap_init, kn_conv_geom_init, kn_tconv_geom_init) or a copy of their checks, reporting
 * the CPU kernel's errors, before anything is launched. */
#include "kernels/cuda/cuda_launch.h"

#include "base/check.h"
#include "kernels/helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The node's operands as the CPU kernel's kn_call would see them, shapes only: float dtypes read
 * as f32, `data` marks presence (never read). */
typedef struct shape_call {
    kn_tensor in[9], out[3];
    kn_call call;
} shape_call;

/* A tensor of type t's dims at data as the CPU kernels are shown it (float dtypes as f32). */
static kn_tensor shape_view(const ir_type *t, void *data)
{
    kn_tensor k = {
        .dtype = ir_dtype_is_float(t->dtype) ? IR_F32 : t->dtype, .rank = t->rank, .data = data};
    memcpy(k.dims, t->dims, sizeof k.dims[0] * (size_t)(t->rank > 0 ? t->rank : 0));
    FR_CHECK(ir_type_numel(t, &k.numel));
    return k;
}

static void shape_call_init(const kn_cuda_call *call, shape_call *sc)
{
    const ir_node *n = call->node;
    memset(sc, 0, sizeof *sc);
    for (uint32_t i = 0; i < n->ninputs && i < 9; i++)
        if (n->inputs[i])
            sc->in[i] = shape_view(kn_cuda_type(call, n->inputs[i]), n->inputs[i]);
    for (uint32_t k = 0; k < n->noutputs && k < 3; k++)
        sc->out[k] = shape_view(kn_cuda_type(call, n->outputs[k]), n->outputs[k]);
    sc->call = (kn_call){.graph = call->graph,
                         .node = n,
                         .inputs = sc->in,
                         .ninputs = n->ninputs < 9 ? n->ninputs : 9,
                         .outputs = sc->out,
                         .noutputs = n->noutputs < 3 ? n->noutputs : 3,
                         .dg = call->dg};
}

/* Device copies of the present inputs (t[i].data NULL for an absent one) and of every output,
 * shapes only (the dtype-free kernels' way). */
static bool raw_operands(const kn_cuda_call *call, kc_tensor *in, kc_tensor *out)
{
    const ir_node *n = call->node;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        in[i] = (kc_tensor){0};
        if (n->inputs[i] && !kn_cuda_raw_tensor(call, n->inputs[i], &in[i]))
            return false;
    }
    return kn_cuda_raw_outputs(call, out);
}

static kc_elem elem_of_value(const kn_cuda_call *call, const ir_value *v)
{
    kc_elem e = KC_E_I8;
    FR_CHECK(!v ||
             kn_cuda_elem_of(kn_cuda_type(call, v)->dtype, &e)); /* the supports check saw to it */
    return e;
}

/* QuantizeLinear and DequantizeLinear. */
bool kn_cuda_run_qdq(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[3], y;
    shape_call sc;
    kn_qmap m;
    if (!raw_operands(call, in, &y))
        return false;
    shape_call_init(call, &sc);
    ir_value *zp = n->ninputs > 2 ? n->inputs[2] : NULL;
    if (!kn_qmap_init(&sc.call, &sc.in[0], &sc.in[1], zp ? &sc.in[2] : NULL, &m))
        return false;
    kc_qmap km = {m.kind, m.axis_dim, m.inner, m.block, m.scale_axis_dim};
    if (n->op == IR_OP_QuantizeLinear)
        return kc_quantize_linear(call->kc, in[0].data, in[1].data, zp ? in[2].data : NULL,
                                  elem_of_value(call, n->outputs[0]), &km, in[0].numel, y.data) ||
               kn_cuda_failed(call);
    return kc_dequantize_linear(call->kc, in[0].data, elem_of_value(call, n->inputs[0]), in[1].data,
                                zp ? in[2].data : NULL, &km, in[0].numel, y.data) ||
           kn_cuda_failed(call);
}

/* DynamicQuantizeLinear: the range comes back to the host (outside a capture) so that an
 * infinity is the CPU kernel's error. */
bool kn_cuda_run_dynamic_quantize(const kn_cuda_call *call)
{
    kc_tensor x, out[3];
    shape_call sc;
    float range[2] = {0, 0};
    if (!raw_operands(call, &x, out))
        return false;
    shape_call_init(call, &sc);
    if (!kc_dynamic_quantize(call->kc, x.data, x.numel, out[0].data, out[1].data, out[2].data,
                             call->capturing ? NULL : range))
        return kn_cuda_failed(call);
    if (isinf(range[0]) || isinf(range[1]))
        return kn_fail(&sc.call, "the input holds an infinity: no scale covers it");
    return true;
}

/* A zero point or scale of 1 or `len` values, as the CPU's check_param. */
static bool param_len(const kn_call *call, const kc_tensor *t, int64_t len, const char *what)
{
    if (!t->data || t->numel == 1 || t->numel == len)
        return true;
    return kn_fail(call, "%s has %lld values; expected 1 or %lld", what, (long long)t->numel,
                   (long long)len);
}

static kc_qoperand qoperand(const kn_cuda_call *call, const kc_tensor *in, uint32_t data,
                            uint32_t zp)
{
    const ir_node *n = call->node;
    return (kc_qoperand){in[data].data, elem_of_value(call, n->inputs[data]), in[zp].data,
                         in[zp].numel};
}

/* MatMulInteger and QLinearMatMul, shapes as the CPU's int_matmul (numpy batch broadcasting). */
bool kn_cuda_run_int_matmul(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    bool ql = n->op == IR_OP_QLinearMatMul;
    uint32_t ia = 0, ib = ql ? 3 : 1, iaz = 2, ibz = ql ? 5 : 3;
    kc_tensor in[8] = {0}, y;
    shape_call sc;
    if (!raw_operands(call, in, &y))
        return false;
    shape_call_init(call, &sc);
    const kc_tensor *a = &in[ia], *b = &in[ib];
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (ql &&
        (!param_len(&sc.call, &in[1], m, "a_scale") || !param_len(&sc.call, &in[4], nn, "b_scale")))
        return false;
    if (k != kb)
        return kn_fail(&sc.call, "inner dimensions differ (%lld vs %lld)", (long long)k,
                       (long long)kb);
    if (!param_len(&sc.call, &in[iaz], m, "a_zero_point") ||
        !param_len(&sc.call, &in[ibz], nn, "b_zero_point"))
        return false;
    kc_int_matmul p = {.m = m, .n = nn, .k = k, .batches = 1};
    p.batch_rank = y.rank - (a->rank >= 2) - (b->rank >= 2);
    int64_t astr = m * k, bstr = k * nn;
    for (int d = p.batch_rank - 1, da = a->rank - 3, db = b->rank - 3; d >= 0; d--, da--, db--) {
        p.a_strides[d] = da >= 0 && a->dims[da] != 1 ? astr : 0;
        p.b_strides[d] = db >= 0 && b->dims[db] != 1 ? bstr : 0;
        astr *= da >= 0 ? a->dims[da] : 1;
        bstr *= db >= 0 ? b->dims[db] : 1;
    }
    for (int d = 0; d < p.batch_rank; d++)
        p.batch_dims[d] = y.dims[d], p.batches *= y.dims[d];
    if (p.batches * m * nn != y.numel)
        return kn_fail(&sc.call, "the output was allocated with another shape than the product's");
    kc_qoperand qa = qoperand(call, in, ia, iaz), qb = qoperand(call, in, ib, ibz);
    if (!ql)
        return kc_int_matmul_run(call->kc, &qa, &qb, &p, NULL, y.data) || kn_cuda_failed(call);
    kc_requant rq = {.a_scale = in[1].data,
                     .b_scale = in[4].data,
                     .y_scale = in[6].data,
                     .a_scale_n = in[1].numel,
                     .b_scale_n = in[4].numel,
                     .y_zp = in[7].data,
                     .yt = elem_of_value(call, n->outputs[0]),
                     .row_div = nn,
                     .rows = m,
                     .col_div = 1,
                     .cols = nn};
    return kc_int_matmul_run(call->kc, &qa, &qb, &p, &rq, y.data) || kn_cuda_failed(call);
}

/* ConvInteger and QLinearConv, geometry from the CPU's kn_conv_geom_init. */
bool kn_cuda_run_int_conv(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    bool ql = n->op == IR_OP_QLinearConv;
    uint32_t ix = 0, iw = ql ? 3 : 1, ixz = 2, iwz = ql ? 5 : 3;
    kc_tensor in[9] = {0}, y;
    shape_call sc;
    kn_conv_geom g;
    if (!raw_operands(call, in, &y))
        return false;
    shape_call_init(call, &sc);
    int64_t m = in[iw].rank >= 1 ? in[iw].dims[0] : 1;
    if (ql &&
        (!param_len(&sc.call, &in[4], m, "w_scale") || !param_len(&sc.call, &in[8], m, "the bias")))
        return false;
    if (!kn_conv_geom_init(&sc.call, &sc.in[ix], &sc.in[iw], &sc.out[0], &g) ||
        !param_len(&sc.call, &in[ixz], 1, "x_zero_point") ||
        !param_len(&sc.call, &in[iwz], g.out_channels, "w_zero_point"))
        return false;
    kc_conv3d c = {.batch = g.batch,
                   .in_channels = g.in_channels,
                   .out_channels = g.out_channels,
                   .group = g.group};
    for (int i = 0, o = 3 - g.nspatial; i < 3; i++) {
        bool real = i >= o;
        c.in[i] = real ? g.in[i - o] : 1, c.out[i] = real ? g.out[i - o] : 1;
        c.kernel[i] = real ? g.kernel[i - o] : 1, c.strides[i] = real ? g.strides[i - o] : 1;
        c.dilations[i] = real ? g.dilations[i - o] : 1;
        c.pad_begin[i] = real ? g.pad_begin[i - o] : 0;
    }
    kc_qoperand qx = qoperand(call, in, ix, ixz), qw = qoperand(call, in, iw, iwz);
    if (!ql)
        return kc_int_conv_run(call->kc, &qx, &qw, &c, NULL, y.data) || kn_cuda_failed(call);
    int64_t spatial = c.out[0] * c.out[1] * c.out[2];
    kc_requant rq = {.a_scale = in[1].data,
                     .b_scale = in[4].data,
                     .y_scale = in[6].data,
                     .a_scale_n = in[1].numel,
                     .b_scale_n = in[4].numel,
                     .y_zp = in[7].data,
                     .yt = elem_of_value(call, n->outputs[0]),
                     .bias = in[8].data,
                     .row_div = 1,
                     .rows = 1,
                     .col_div = spatial,
                     .cols = m};
    return kc_int_conv_run(call->kc, &qx, &qw, &c, &rq, y.data) || kn_cuda_failed(call);
}

/* ConvTranspose, geometry from the CPU's kn_tconv_geom_init. */
bool kn_cuda_run_conv_transpose(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[3] = {0}, y;
    shape_call sc;
    kn_tconv_geom t;
    for (uint32_t i = 0; i < n->ninputs && i < 3; i++) {
        void *ptr = n->inputs[i] ? kn_cuda_device(call, n->inputs[i]) : NULL;
        if ((n->inputs[i] && !ptr) || !kn_cuda_device_tensor(call, n->inputs[i], ptr, &in[i]))
            return false;
    }
    if (!kn_cuda_alloc_outputs(call, &y))
        return false;
    shape_call_init(call, &sc);
    if (!kn_tconv_geom_init(&sc.call, &sc.in[0], &sc.in[1], &t))
        return false;
    if (in[2].data && in[2].numel != t.out_channels)
        return kn_fail(&sc.call, "bias has %lld values for %lld output channels",
                       (long long)in[2].numel, (long long)t.out_channels);
    kc_conv3d c = {.batch = t.batch,
                   .in_channels = t.in_channels,
                   .out_channels = t.out_channels,
                   .group = t.group};
    for (int i = 0; i < 3; i++) {
        c.in[i] = t.in[i], c.out[i] = t.out[i], c.kernel[i] = t.k[i], c.strides[i] = t.s[i];
        c.dilations[i] = t.d[i], c.pad_begin[i] = t.pad[i];
    }
    return kc_conv_transpose(call->kc, &in[0], &in[1], &in[2], &c, &y) || kn_cuda_failed(call);
}

/* Det and DFT, with the CPU kernels' checks. */
bool kn_cuda_run_det_dft(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[2] = {0}, y;
    shape_call sc;
    if (!raw_operands(call, in, &y))
        return false;
    shape_call_init(call, &sc);
    const kc_tensor *x = &in[0];
    if (n->op == IR_OP_Det) {
        if (x->rank < 2)
            return kn_fail(&sc.call, "the input must be a float tensor of rank 2 or more");
        int64_t m = x->dims[x->rank - 1];
        if (x->dims[x->rank - 2] != m)
            return kn_fail(&sc.call, "the matrices are not square");
        int64_t count = m ? x->numel / (m * m) : 1;
        return kn_check_numel(&sc.call, 0, count) &&
               (kc_det(call->kc, x->data, count, m, y.data) || kn_cuda_failed(call));
    }
    int axis;
    if (x->rank < 2 || y.rank != x->rank)
        return kn_fail(&sc.call, "the input must be a float tensor [..., 1 or 2]");
    if (!kn_axis(&sc.call, ir_get_int(n, "axis"), x->rank - 1, "axis", &axis))
        return false;
    int64_t comp = x->dims[x->rank - 1], len = x->dims[axis], dft_len = len;
    const int64_t *given;
    int ngiven;
    if (!kn_cuda_host_ints(call, 1, &given, &ngiven))
        return false;
    if (given && ngiven >= 1)
        dft_len = given[0];
    int64_t outlen = y.dims[axis];
    if ((comp != 1 && comp != 2) || dft_len < 1 || y.dims[y.rank - 1] != 2)
        return kn_fail(&sc.call, "the last dim must be 1 or 2, and dft_length at least 1");
    int64_t outer = kn_cuda_dims_prod(x->dims, 0, axis),
            inner = kn_cuda_dims_prod(x->dims, axis + 1, x->rank - 1);
    return kn_check_numel(&sc.call, 0, outer * outlen * inner * 2) &&
           (kc_dft(call->kc, x->data, outer, len, inner, comp, dft_len, outlen,
                   ir_get_int(n, "inverse") != 0, y.data) ||
            kn_cuda_failed(call));
}

/* Einsum: the equation resolved and the shapes checked as the CPU kernel does (its errors). */
bool kn_cuda_run_einsum(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[KC_EINSUM_MAX_INPUTS], y;
    shape_call sc;
    if (n->ninputs > KC_EINSUM_MAX_INPUTS)
        return kn_cuda_fail(call, "the CUDA Einsum takes at most %d inputs", KC_EINSUM_MAX_INPUTS);
    if (!raw_operands(call, in, &y))
        return false;
    shape_call_init(call, &sc);
    int ranks[IR_EINSUM_MAX_INPUTS];
    for (uint32_t i = 0; i < n->ninputs; i++)
        ranks[i] = in[i].rank;
    const char *eq = ir_get_string(n, "equation"), *err;
    ir_einsum e;
    if (!ir_einsum_parse(eq, ranks, (int)n->ninputs, &e, &err))
        return kn_fail(&sc.call, "equation \"%s\" has %s", eq, err);
    int64_t size[IR_EINSUM_LABELS], stride[KC_EINSUM_MAX_INPUTS][IR_EINSUM_LABELS], a, b;
    bool used[IR_EINSUM_LABELS], in_out[IR_EINSUM_LABELS] = {false};
    const int64_t *dims[KC_EINSUM_MAX_INPUTS];
    for (int i = 0; i < e.ninputs; i++)
        dims[i] = in[i].dims;
    if (!ir_einsum_sizes(&e, dims, size, stride, used, &a, &b))
        return kn_fail(&sc.call, "equation \"%s\": a dim is %lld in one place and %lld in another",
                       eq, (long long)a, (long long)b);
    kc_einsum p = {.ninputs = e.ninputs, .out_rank = e.out_rank};
    int64_t out_numel = 1;
    for (int k = 0; k < e.out_rank; k++) {
        int l = e.out[k];
        in_out[l] = true;
        out_numel *= size[l];
        if (y.rank != e.out_rank || y.dims[k] != size[l])
            return kn_fail(&sc.call, "the output was allocated with another shape than the "
                                     "equation's");
        p.out_dims[k] = size[l];
        for (int i = 0; i < e.ninputs; i++)
            p.out_strides[i][k] = stride[i][l];
    }
    if (!kn_check_numel(&sc.call, 0, out_numel))
        return false;
    for (int l = 0; l < IR_EINSUM_LABELS; l++) {
        if (!used[l] || in_out[l])
            continue;
        if (p.nsum == KC_EINSUM_MAX_SUM)
            return kn_cuda_fail(call, "the CUDA Einsum sums over at most %d labels",
                                KC_EINSUM_MAX_SUM);
        p.sum_dims[p.nsum] = size[l];
        for (int i = 0; i < e.ninputs; i++)
            p.sum_strides[i][p.nsum] = stride[i][l];
        p.nsum++;
    }
    const void *ptrs[KC_EINSUM_MAX_INPUTS];
    for (int i = 0; i < e.ninputs; i++)
        ptrs[i] = in[i].data;
    kc_dtype dt;
    if (!kn_cuda_dtype_of(kn_cuda_type(call, n->outputs[0])->dtype, &dt))
        return kn_cuda_fail(call, "a dtype no CUDA kernel takes");
    return kc_einsum_run(call->kc, dt, ptrs, &p, out_numel, y.data) || kn_cuda_failed(call);
}

/* RNN, GRU and LSTM: shapes checked as the CPU kernel's setup, sequence lengths read on the host
 * and checked against [0, seq] as the CPU does. */
bool kn_cuda_run_rnn_op(const kn_cuda_call *call)
{
    const ir_node *n = call->node;
    kc_tensor in[8] = {0}, out[3] = {0};
    shape_call sc;
    if (!raw_operands(call, in, out))
        return false;
    shape_call_init(call, &sc);
    int kind = n->op == IR_OP_RNN ? 1 : n->op == IR_OP_GRU ? 3 : 4;
    bool lstm = kind == 4;
    const char *dir = ir_get_string(n, "direction");
    kc_rnn_params m = {.kind = kind,
                       .batch_first = ir_get_int(n, "layout") == 1,
                       .lbr = kind == 3 && ir_get_int(n, "linear_before_reset") != 0,
                       .input_forget = lstm && ir_get_int(n, "input_forget") != 0,
                       .reverse_only = strcmp(dir, "reverse") == 0,
                       .clip = ir_get_float(n, "clip"),
                       .dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1};
    const kc_tensor *x = &in[0], *w = &in[1], *r = &in[2], *b = &in[3], *lens = &in[4];
    const kc_tensor *h0 = &in[5], *c0 = lstm ? &in[6] : NULL, *pp = lstm ? &in[7] : NULL;
    if (x->rank != 3 || w->rank != 3 || r->rank != 3)
        return kn_fail(&sc.call, "X, W and R must be float tensors of rank 3");
    m.seq = x->dims[m.batch_first ? 1 : 0];
    m.batch = x->dims[m.batch_first ? 0 : 1];
    m.input = x->dims[2];
    m.hidden = r->dims[2];
    int64_t gh = kind * m.hidden, state = m.dirs * m.batch * m.hidden;
    if (w->dims[0] != m.dirs || w->dims[1] != gh || w->dims[2] != m.input || r->dims[0] != m.dirs ||
        r->dims[1] != gh || (b->data && b->numel != m.dirs * 2 * gh) ||
        (lens->data && lens->numel != m.batch) || (h0->data && h0->numel != state) ||
        (c0 && c0->data && c0->numel != state) ||
        (pp && pp->data && pp->numel != m.dirs * 3 * m.hidden))
        return kn_fail(&sc.call, "the weights, biases or states do not fit X and hidden_size %lld",
                       (long long)m.hidden);
    if ((n->noutputs > 0 && !kn_check_numel(&sc.call, 0, m.seq * state)) ||
        (n->noutputs > 1 && !kn_check_numel(&sc.call, 1, state)) ||
        (n->noutputs > 2 && !kn_check_numel(&sc.call, 2, state)))
        return false;
    bool lens64 = false;
    if (lens->data) { /* one per batch entry: read here, as many as there are */
        lens64 = kn_cuda_type(call, n->inputs[4])->dtype == IR_I64;
        const void *host = kn_cuda_host(call, n->inputs[4]);
        if (!host)
            return false;
        for (int64_t i = 0; i < lens->numel; i++) {
            int64_t v = lens64 ? ((const int64_t *)host)[i] : ((const int32_t *)host)[i];
            if (v < 0 || v > m.seq)
                return kn_fail(&sc.call, "sequence length %lld is not in [0, %lld]", (long long)v,
                               (long long)m.seq);
        }
    }
    kc_rnn_operands o = {.x = x->data,
                         .w = w->data,
                         .r = r->data,
                         .b = b->data,
                         .lens = lens->data,
                         .h0 = h0->data,
                         .c0 = c0 ? c0->data : NULL,
                         .p = pp ? pp->data : NULL,
                         .lens64 = lens64,
                         .y = n->noutputs > 0 ? out[0].data : NULL,
                         .yh = n->noutputs > 1 ? out[1].data : NULL,
                         .yc = n->noutputs > 2 ? out[2].data : NULL};
    return kc_rnn(call->kc, &m, &o) || kn_cuda_failed(call);
}
