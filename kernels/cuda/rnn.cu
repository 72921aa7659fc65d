// RNN, GRU and LSTM with the CPU reference's semantics (kernels/cpu/onnx_rnn.c): ONNX's default
// activations (sigmoid gates, tanh cell and hidden), in double, every direction, sequence_lens,
// initial states, peepholes, clip, linear_before_reset, input_forget and both layouts.
//
// One block per (direction, batch entry), walking its steps in order as the CPU does: per step the
// block's threads compute the gate rows' products (W x_t + Wb and R h + Rb, each a sequential dot
// product in double, as the CPU sums it), synchronize, apply the gates per hidden unit into a
// scratch vector, synchronize, and commit the new state. The block's vectors live in the
// context's workspace (2 * gates + 3 * hidden doubles per block).
#include "kernels/cuda/kc_common.cuh"

static __device__ __forceinline__ double rnn_sigmoid(double v)
{
    return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v));
}

static __device__ __forceinline__ double rnn_clip(const kc_rnn_params &m, double v)
{
    if (m.clip > 0)
        v = v < -m.clip ? -m.clip : v > m.clip ? m.clip : v;
    return v;
}

// Element (step t, batch b, k) of a tensor laid out [seq, batch, k] or [batch, seq, k].
static __device__ __forceinline__ int64_t rnn_at3(const kc_rnn_params &m, int64_t t, int64_t b,
                                                  int64_t k, int64_t width)
{
    return (m.batch_first ? b * m.seq + t : t * m.batch + b) * width + k;
}

// The initial / final state of (d, b), laid out [dirs, batch, H] or [batch, dirs, H].
static __device__ __forceinline__ int64_t rnn_state(const kc_rnn_params &m, int64_t d, int64_t b)
{
    return (m.batch_first ? b * m.dirs + d : d * m.batch + b) * m.hidden;
}

__global__ void rnn_kernel(kc_rnn_params m, const float *x, const float *w, const float *r,
                           const float *bias, const void *lens, bool lens64, const float *h0,
                           const float *c0, const float *peep, double *work, float *y, float *yh,
                           float *yc)
{
    int64_t d = blockIdx.x / m.batch, b = blockIdx.x % m.batch;
    int64_t H = m.hidden, gh = m.kind * H;
    double *xw = work + (int64_t)blockIdx.x * (2 * gh + 3 * H), *hr = xw + gh, *h = hr + gh;
    double *c = h + H, *tmp = c + H;
    int64_t len = !lens ? m.seq : lens64 ? ((const int64_t *)lens)[b] : ((const int32_t *)lens)[b];
    for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
        h[j] = h0 ? h0[rnn_state(m, d, b) + j] : 0;
        c[j] = c0 ? c0[rnn_state(m, d, b) + j] : 0;
    }
    __syncthreads();
    const float *wd = w + d * gh * m.input, *rd = r + d * gh * H;
    const float *bd = bias ? bias + d * 2 * gh : nullptr;
    const float *pd = peep ? peep + d * 3 * H : nullptr;
    bool backward = m.reverse_only || d == 1;
    for (int64_t s = 0; s < len; s++) {
        int64_t t = backward ? len - 1 - s : s;
        for (int64_t k = threadIdx.x; k < gh; k += blockDim.x) {
            double sx = bd ? bd[k] : 0, sh = bd ? bd[gh + k] : 0;
            for (int64_t i = 0; i < m.input; i++)
                sx += (double)wd[k * m.input + i] * x[rnn_at3(m, t, b, i, m.input)];
            for (int64_t j = 0; j < H; j++)
                sh += (double)rd[k * H + j] * h[j];
            xw[k] = sx;
            hr[k] = sh;
        }
        __syncthreads();
        for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
            if (m.kind == 1) {
                tmp[j] = tanh(rnn_clip(m, xw[j] + hr[j]));
            } else if (m.kind == 3) {
                double z = rnn_sigmoid(rnn_clip(m, xw[j] + hr[j]));
                double rr = rnn_sigmoid(rnn_clip(m, xw[H + j] + hr[H + j]));
                double hh;
                if (m.lbr) {
                    hh = xw[2 * H + j] + rr * hr[2 * H + j];
                } else { // (r . h) R_h + Rb_h
                    double acc = bd ? bd[3 * H + 2 * H + j] : 0;
                    for (int64_t k = 0; k < H; k++) {
                        double rk = rnn_sigmoid(rnn_clip(m, xw[H + k] + hr[H + k]));
                        acc += (double)rd[(2 * H + j) * H + k] * rk * h[k];
                    }
                    hh = xw[2 * H + j] + acc;
                }
                tmp[j] = (1 - z) * tanh(rnn_clip(m, hh)) + z * h[j];
            } else {
                double i = rnn_sigmoid(rnn_clip(m, xw[j] + hr[j] + (pd ? pd[j] * c[j] : 0)));
                double f = m.input_forget
                               ? 1 - i
                               : rnn_sigmoid(rnn_clip(m, xw[2 * H + j] + hr[2 * H + j] +
                                                             (pd ? pd[2 * H + j] * c[j] : 0)));
                double g = tanh(rnn_clip(m, xw[3 * H + j] + hr[3 * H + j]));
                double cn = f * c[j] + i * g;
                double o =
                    rnn_sigmoid(rnn_clip(m, xw[H + j] + hr[H + j] + (pd ? pd[H + j] * cn : 0)));
                c[j] = cn;
                tmp[j] = o * tanh(cn);
            }
        }
        __syncthreads();
        int64_t row = m.batch_first ? (b * m.seq + t) * m.dirs + d : (t * m.dirs + d) * m.batch + b;
        for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
            h[j] = tmp[j];
            if (y)
                y[row * H + j] = (float)tmp[j];
        }
        __syncthreads();
    }
    for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
        if (yh)
            yh[rnn_state(m, d, b) + j] = (float)h[j];
        if (yc)
            yc[rnn_state(m, d, b) + j] = (float)c[j];
    }
}

bool kc_rnn(kc_context *ctx, const kc_rnn_params *p, const kc_rnn_operands *o)
{
    int64_t H = p->hidden, gh = p->kind * H, blocks = p->dirs * p->batch;
    if (p->kind != 1 && p->kind != 3 && p->kind != 4)
        return KC_FAIL(ctx, "rnn: kind %d", p->kind);
    if (o->y &&
        !KC_CHECK(ctx, cudaMemsetAsync(o->y, 0,
                                       (size_t)(p->seq * p->dirs * p->batch * H) * sizeof(float),
                                       ctx->stream)))
        return false;
    if (blocks == 0 || H == 0)
        return true;
    if (blocks > 2147483647)
        return KC_FAIL(ctx, "rnn: %lld (direction, batch) pairs", (long long)blocks);
    double *work =
        (double *)kc_workspace(ctx, (size_t)(blocks * (2 * gh + 3 * H)) * sizeof(double));
    if (!work)
        return false;
    rnn_kernel<<<(unsigned)blocks, KC_THREADS, 0, ctx->stream>>>(
        *p, (const float *)o->x, (const float *)o->w, (const float *)o->r, (const float *)o->b,
        o->lens, o->lens64, (const float *)o->h0, (const float *)o->c0, (const float *)o->p, work,
        (float *)o->y, (float *)o->yh, (float *)o->yc);
    return KC_LAUNCHED(ctx);
}
