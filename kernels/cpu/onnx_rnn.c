/* RNN, GRU and LSTM with ONNX's default activations (sigmoid gates, tanh cell and hidden), the
 * formulas of the ONNX spec, in double, one batch entry and one direction at a time.
 *
 * Gate order in W, R and B: RNN i; GRU z, r, h; LSTM i, o, f, c (P holds i, o, f). Steps at and
 * after a batch entry's sequence length leave Y zero and the state as it was; the reverse
 * direction runs from its last valid step down. `clip` bounds every gate's input to
 * [-clip, clip]. GRU's linear_before_reset applies r after R's product; LSTM's input_forget ties
 * f to 1 - i. */
#include "kernels/cpu/cpu_util.h"

#include <stdlib.h>
#include <string.h>

typedef enum { K_RNN = 1, K_GRU = 3, K_LSTM = 4 } rnn_kind;

typedef struct {
    rnn_kind kind;
    int64_t seq, batch, input, hidden, dirs;
    bool batch_first, lbr, input_forget;
    double clip;
    const kn_tensor *x, *w, *r, *b, *lens, *h0, *c0, *p;
} rnn;

static const kn_tensor *opt(const kn_call *call, uint32_t i)
{
    return i < call->ninputs && call->inputs[i].data ? &call->inputs[i] : NULL;
}

static double sigmoid(double v)
{
    return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v));
}

static double clipped(const rnn *m, double v)
{
    if (m->clip > 0)
        v = v < -m->clip ? -m->clip : v > m->clip ? m->clip : v;
    return v;
}

/* Element (step t, batch b, k) of a tensor laid out [seq, batch, k] or [batch, seq, k]. */
static int64_t at3(const rnn *m, int64_t t, int64_t b, int64_t k, int64_t width)
{
    return (m->batch_first ? b * m->seq + t : t * m->batch + b) * width + k;
}

/* gate[g*H + j] = W[d] row (g*H + j) . x_t + Wb (xw) and R[d] row . h + Rb (hr). */
static void products(const rnn *m, int64_t d, int64_t t, int64_t b, const double *h, double *xw,
                     double *hr)
{
    int64_t gh = m->kind * m->hidden;
    const float *w = (const float *)m->w->data + d * gh * m->input;
    const float *r = (const float *)m->r->data + d * gh * m->hidden;
    const float *x = m->x->data;
    const float *bias = m->b ? (const float *)m->b->data + d * 2 * gh : NULL;
    for (int64_t k = 0; k < gh; k++) {
        double sx = bias ? bias[k] : 0, sh = bias ? bias[gh + k] : 0;
        for (int64_t i = 0; i < m->input; i++)
            sx += (double)w[k * m->input + i] * x[at3(m, t, b, i, m->input)];
        for (int64_t j = 0; j < m->hidden; j++)
            sh += (double)r[k * m->hidden + j] * h[j];
        xw[k] = sx;
        hr[k] = sh;
    }
}

/* One step: h (and LSTM's c) updated in place. */
static void step(const rnn *m, int64_t d, int64_t t, int64_t b, double *h, double *c, double *xw,
                 double *hr, double *tmp)
{
    int64_t H = m->hidden;
    products(m, d, t, b, h, xw, hr);
    if (m->kind == K_RNN) {
        for (int64_t j = 0; j < H; j++)
            h[j] = tanh(clipped(m, xw[j] + hr[j]));
        return;
    }
    if (m->kind == K_GRU) {
        const float *r = (const float *)m->r->data + d * 3 * H * H;
        const float *bias = m->b ? (const float *)m->b->data + d * 6 * H : NULL;
        for (int64_t j = 0; j < H; j++) {
            double z = sigmoid(clipped(m, xw[j] + hr[j]));
            double rr = sigmoid(clipped(m, xw[H + j] + hr[H + j]));
            double hh;
            if (m->lbr) {
                hh = xw[2 * H + j] + rr * hr[2 * H + j];
            } else { /* (r . h) R_h + Rb_h */
                double s = bias ? bias[3 * H + 2 * H + j] : 0;
                for (int64_t k = 0; k < H; k++) {
                    double rk = sigmoid(clipped(m, xw[H + k] + hr[H + k]));
                    s += (double)r[(2 * H + j) * H + k] * rk * h[k];
                }
                hh = xw[2 * H + j] + s;
            }
            tmp[j] = (1 - z) * tanh(clipped(m, hh)) + z * h[j];
        }
        memcpy(h, tmp, (size_t)H * sizeof *h);
        return;
    }
    const float *p = m->p ? (const float *)m->p->data + d * 3 * H : NULL;
    for (int64_t j = 0; j < H; j++) {
        double i = sigmoid(clipped(m, xw[j] + hr[j] + (p ? p[j] * c[j] : 0)));
        double f = m->input_forget ? 1 - i
                                   : sigmoid(clipped(m, xw[2 * H + j] + hr[2 * H + j] +
                                                            (p ? p[2 * H + j] * c[j] : 0)));
        double g = tanh(clipped(m, xw[3 * H + j] + hr[3 * H + j]));
        double cn = f * c[j] + i * g;
        double o = sigmoid(clipped(m, xw[H + j] + hr[H + j] + (p ? p[H + j] * cn : 0)));
        c[j] = cn;
        tmp[j] = o * tanh(cn);
    }
    memcpy(h, tmp, (size_t)H * sizeof *h);
}

static bool setup(const kn_call *call, rnn_kind kind, rnn *m)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->x = &call->inputs[0];
    m->w = &call->inputs[1];
    m->r = &call->inputs[2];
    m->b = opt(call, 3);
    m->lens = opt(call, 4);
    m->h0 = opt(call, 5);
    m->c0 = kind == K_LSTM ? opt(call, 6) : NULL;
    m->p = kind == K_LSTM ? opt(call, 7) : NULL;
    m->batch_first = ir_get_int(call->node, "layout") == 1;
    m->lbr = kind == K_GRU && ir_get_int(call->node, "linear_before_reset") != 0;
    m->input_forget = kind == K_LSTM && ir_get_int(call->node, "input_forget") != 0;
    m->clip = ir_get_float(call->node, "clip");
    const char *dir = ir_get_string(call->node, "direction");
    m->dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (m->x->dtype != IR_F32 || m->x->rank != 3 || m->w->rank != 3 || m->r->rank != 3)
        return kn_fail(call, "X, W and R must be float tensors of rank 3");
    m->seq = m->x->dims[m->batch_first ? 1 : 0];
    m->batch = m->x->dims[m->batch_first ? 0 : 1];
    m->input = m->x->dims[2];
    m->hidden = m->r->dims[2];
    int64_t gh = kind * m->hidden;
    if (m->w->dims[0] != m->dirs || m->w->dims[1] != gh || m->w->dims[2] != m->input ||
        m->r->dims[0] != m->dirs || m->r->dims[1] != gh ||
        (m->b && m->b->numel != m->dirs * 2 * gh) || (m->lens && m->lens->numel != m->batch) ||
        (m->h0 && m->h0->numel != m->dirs * m->batch * m->hidden) ||
        (m->c0 && m->c0->numel != m->dirs * m->batch * m->hidden) ||
        (m->p && m->p->numel != m->dirs * 3 * m->hidden))
        return kn_fail(call, "the weights, biases or states do not fit X and hidden_size %lld",
                       (long long)m->hidden);
    return true;
}

/* The initial state of (d, b), laid out [dirs, batch, H] or [batch, dirs, H]. */
static int64_t state_at(const rnn *m, int64_t d, int64_t b)
{
    return (m->batch_first ? b * m->dirs + d : d * m->batch + b) * m->hidden;
}

static bool run_rnn(const kn_call *call, rnn_kind kind)
{
    rnn m;
    if (!setup(call, kind, &m))
        return false;
    const char *dir = ir_get_string(call->node, "direction");
    bool reverse_only = strcmp(dir, "reverse") == 0;
    int64_t H = m.hidden, gh = kind * H;
    kn_tensor *y = call->noutputs > 0 && call->outputs[0].data ? &call->outputs[0] : NULL;
    kn_tensor *yh = call->noutputs > 1 && call->outputs[1].data ? &call->outputs[1] : NULL;
    kn_tensor *yc = call->noutputs > 2 && call->outputs[2].data ? &call->outputs[2] : NULL;
    if ((y && !kn_check_numel(call, 0, m.seq * m.dirs * m.batch * H)) ||
        (yh && !kn_check_numel(call, 1, m.dirs * m.batch * H)) ||
        (yc && !kn_check_numel(call, 2, m.dirs * m.batch * H)))
        return false;
    double *buf = calloc((size_t)(2 * gh + 3 * H + 1), sizeof *buf);
    if (!buf)
        return kn_fail(call, "cannot allocate the gates");
    double *xw = buf, *hr = buf + gh, *h = hr + gh, *c = h + H, *tmp = c + H;
    if (y)
        memset(y->data, 0, (size_t)y->numel * sizeof(float));
    bool ok = true;
    for (int64_t d = 0; d < m.dirs && ok; d++)
        for (int64_t b = 0; b < m.batch && ok; b++) {
            int64_t len = m.lens ? kn_get_int(m.lens, b) : m.seq;
            if (len < 0 || len > m.seq) {
                ok = kn_fail(call, "sequence length %lld is not in [0, %lld]", (long long)len,
                             (long long)m.seq);
                break;
            }
            for (int64_t j = 0; j < H; j++) {
                h[j] = m.h0 ? ((const float *)m.h0->data)[state_at(&m, d, b) + j] : 0;
                c[j] = m.c0 ? ((const float *)m.c0->data)[state_at(&m, d, b) + j] : 0;
            }
            bool backward = reverse_only || d == 1;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = backward ? len - 1 - s : s;
                step(&m, d, t, b, h, c, xw, hr, tmp);
                if (y) {
                    float *out = y->data;
                    int64_t row = m.batch_first ? (b * m.seq + t) * m.dirs + d
                                                : (t * m.dirs + d) * m.batch + b;
                    for (int64_t j = 0; j < H; j++)
                        out[row * H + j] = (float)h[j];
                }
            }
            for (int64_t j = 0; j < H; j++) {
                if (yh)
                    ((float *)yh->data)[state_at(&m, d, b) + j] = (float)h[j];
                if (yc)
                    ((float *)yc->data)[state_at(&m, d, b) + j] = (float)c[j];
            }
        }
    free(buf);
    return ok;
}

bool kn_cpu_RNN(const kn_call *call)
{
    return run_rnn(call, K_RNN);
}
bool kn_cpu_GRU(const kn_call *call)
{
    return run_rnn(call, K_GRU);
}
bool kn_cpu_LSTM(const kn_call *call)
{
    return run_rnn(call, K_LSTM);
}
