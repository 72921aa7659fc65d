// The LLM kernels: SwiGLU, RoPE and attention.
#include "kernels/cuda/kc_common.cuh"

// ---- SwiGLU ----------------------------------------------------------------------------------

__device__ __forceinline__ float swiglu(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// gate and up with y's shape, 16-byte aligned: one vector per step, a scalar tail.
template <typename T>
__global__ void swiglu_vec_kernel(const T *gate, const T *up, T *y, int64_t n)
{
    constexpr int V = kc_vec<T>::n;
    const int64_t chunks = n / V;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < chunks; c += stride) {
        float g[V], u[V];
        kc_load16(gate + c * V, g);
        kc_load16(up + c * V, u);
#pragma unroll
        for (int k = 0; k < V; k++)
            g[k] = swiglu(g[k], u[k]);
        kc_store16(y + c * V, g);
    }
    const int64_t tail = chunks * V + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (int64_t i = tail; i < n; i += stride)
        y[i] = kc_from_f32<T>(swiglu(kc_to_f32(gate[i]), kc_to_f32(up[i])));
}

template <typename T>
__global__ void swiglu_bcast_kernel(const T *gate, kc_bcast gb, const T *up, kc_bcast ub, T *y,
                                    int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = kc_from_f32<T>(swiglu(kc_to_f32(gate[kc_bcast_offset(gb, i)]),
                                     kc_to_f32(up[kc_bcast_offset(ub, i)])));
}

bool kc_swiglu(kc_context *ctx, const kc_tensor *gate, const kc_tensor *up, kc_tensor *y)
{
    if (y->numel == 0)
        return true;
    kc_bcast gb, ub;
    if (!kc_bcast_make(gate, y->dims, y->rank, &gb) || !kc_bcast_make(up, y->dims, y->rank, &ub))
        return KC_FAIL(ctx, "swiglu: gate and up do not broadcast to Y");
    return kc_dispatch_float(ctx, y->dtype, [&]<typename T>() {
        const T *g = (const T *)gate->data, *u = (const T *)up->data;
        T *out = (T *)y->data;
        if (gb.same && ub.same && kc_aligned16(g) && kc_aligned16(u) && kc_aligned16(out))
            swiglu_vec_kernel<T><<<kc_blocks(y->numel / kc_vec<T>::n + 1), KC_THREADS, 0,
                                   ctx->stream>>>(g, u, out, y->numel);
        else
            swiglu_bcast_kernel<T><<<kc_blocks(y->numel), KC_THREADS, 0, ctx->stream>>>(
                g, gb, u, ub, out, y->numel);
        return KC_LAUNCHED(ctx);
    });
}

// ---- RoPE --------------------------------------------------------------------------------------

template <typename T> struct rope_args {
    const T *x, *cos_t, *sin_t;
    kc_bcast cb, sb; // the tables broadcast to x's shape with the last dim W
    T *y;
    int64_t pairs, d, w;
    bool interleaved;
};

// One thread per element pair (a, b) of a row; see docs/kernels.md for the pairing.
template <typename T> __global__ void rope_kernel(rope_args<T> p)
{
    const int64_t half = p.d / 2;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.pairs;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = i / half, j = i - row * half;
        int64_t a = p.interleaved ? 2 * j : j, b = p.interleaved ? 2 * j + 1 : j + half;
        int64_t ta = p.w == half ? j : a, tb = p.w == half ? j : b;
        int64_t ra = row * p.w + ta, rb = row * p.w + tb;
        float xa = kc_to_f32(p.x[row * p.d + a]), xb = kc_to_f32(p.x[row * p.d + b]);
        float ca = kc_to_f32(p.cos_t[kc_bcast_offset(p.cb, ra)]);
        float sa = kc_to_f32(p.sin_t[kc_bcast_offset(p.sb, ra)]);
        float cb = kc_to_f32(p.cos_t[kc_bcast_offset(p.cb, rb)]);
        float sb = kc_to_f32(p.sin_t[kc_bcast_offset(p.sb, rb)]);
        p.y[row * p.d + a] = kc_from_f32<T>(xa * ca - xb * sa);
        p.y[row * p.d + b] = kc_from_f32<T>(xb * cb + xa * sb);
    }
}

bool kc_rope(kc_context *ctx, const kc_tensor *x, const kc_tensor *cos_t, const kc_tensor *sin_t,
             kc_tensor *y, bool interleaved)
{
    if (x->rank < 1 || x->dims[x->rank - 1] % 2 != 0)
        return KC_FAIL(ctx, "rope: the last dim of X must be even");
    int64_t d = x->dims[x->rank - 1];
    int64_t w = cos_t->rank ? cos_t->dims[cos_t->rank - 1] : 1;
    if (w != d && w != d / 2)
        return KC_FAIL(ctx, "rope: the tables have %lld entries per row, not %lld or %lld",
                       (long long)w, (long long)d, (long long)(d / 2));
    if (x->numel == 0)
        return true;
    int64_t table_dims[KC_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        table_dims[k] = x->dims[k];
    table_dims[x->rank - 1] = w;
    return kc_dispatch_float(ctx, x->dtype, [&]<typename T>() {
        rope_args<T> p = {};
        if (!kc_bcast_make(cos_t, table_dims, x->rank, &p.cb) ||
            !kc_bcast_make(sin_t, table_dims, x->rank, &p.sb))
            return KC_FAIL(ctx, "rope: cos or sin does not broadcast to X");
        p.x = (const T *)x->data;
        p.cos_t = (const T *)cos_t->data;
        p.sin_t = (const T *)sin_t->data;
        p.y = (T *)y->data;
        p.pairs = x->numel / 2;
        p.d = d;
        p.w = w;
        p.interleaved = interleaved;
        rope_kernel<T><<<kc_blocks(p.pairs), KC_THREADS, 0, ctx->stream>>>(p);
        return KC_LAUNCHED(ctx);
    });
}

// ---- attention ---------------------------------------------------------------------------------
//
// FlashAttention-style: a block of ROWS warps takes ROWS query rows of one (batch, head); keys and
// values stream through shared memory in tiles of 32 (one key per lane for the scores), and each
// warp keeps its row's running max, running sum and output accumulator (Dv/32 values per lane) in
// registers, rescaling them when the max grows (the online softmax). No score matrix is stored.
// Q, K, V and Y are read through strides (att_view), so [B, H, S, D] and [B, S, H, D] are the same
// kernel; with rotary tables, Q and K are rotated as they are loaded into shared memory.

enum { ATT_ROWS = 4, ATT_TILE = 32, ATT_MAXD = KC_ATTENTION_MAX_HEAD_DIM };
enum { ATT_PER_LANE = ATT_MAXD / 32 };

// Element (b, h, i, c) of a [B, H, L, D] view is at b * sb + h * sh + i * row + c.
struct att_view {
    int64_t sb, sh, row;
};

static att_view att_view_of(const kc_tensor *t, bool bshd)
{
    const int64_t *x = t->dims;
    if (bshd)
        return {x[1] * x[2] * x[3], x[3], x[2] * x[3]};
    return {x[1] * x[2] * x[3], x[2] * x[3], x[3]};
}

template <typename T> struct att_args {
    const T *q, *k, *v, *mask, *cos_t, *sin_t, *bias;
    att_view qv, kv, vv, yv;
    kc_bcast mb, bb; // the mask and the bias to [B, Hq, S, T]
    kc_bcast cq, ck; // the tables (sin has cos's shape) to [B, Hq, S, W] and [B, Hkv, T, W]
    T *y;
    int64_t b, hq, hkv, s, t, d, dv, w;
    float scale;
    bool causal;
    bool causal_fill_mode; // causal = 2: a hidden key's score becomes causal_fill before the masks
    float causal_fill;
    bool nan_to_zero; // NaN probabilities become 0 (torch's Where(IsNaN(p), 0, p) after SDPA)
    const int32_t *key_mask; // broadcasting to [B, T]: a key whose entry is not > 0 adds `filter`
    int64_t key_mask_sb, key_mask_sj; // its strides (0 along a dim of 1)
    float filter;
};

// Element c of the row x (D elements) after the rotate-half RoPE, as docs/kernels.md's RoPE with
// W = D or D/2; `trow` is the flat index of the row's first entry in the broadcast table.
template <typename T>
__device__ __forceinline__ float att_rotated(const att_args<T> &p, const T *x, int64_t c,
                                             const kc_bcast &tb, int64_t trow)
{
    const int64_t half = p.d / 2;
    const bool first = c < half;
    const float xc = kc_to_f32(x[c]), xp = kc_to_f32(x[first ? c + half : c - half]);
    const int64_t at = trow + (p.w == p.d || first ? c : c - half);
    const float cs = kc_to_f32(p.cos_t[kc_bcast_offset(tb, at)]);
    const float sn = kc_to_f32(p.sin_t[kc_bcast_offset(tb, at)]);
    return first ? xc * cs - xp * sn : xc * cs + xp * sn;
}

template <typename T>
__global__ void __launch_bounds__(ATT_ROWS * 32) attention_kernel(att_args<T> p)
{
    __shared__ float ks[ATT_TILE][ATT_MAXD + 1]; // +1: lanes read different rows, no bank conflict
    __shared__ float vs[ATT_TILE][ATT_MAXD];
    __shared__ float qs[ATT_ROWS][ATT_MAXD];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t bi = blockIdx.z, h = blockIdx.y;
    const int64_t hk = h / (p.hq / p.hkv); // grouped-query attention
    const int64_t s0 = (int64_t)blockIdx.x * ATT_ROWS, s = s0 + warp;
    const bool active = s < p.s;
    const T *kbase = p.k + bi * p.kv.sb + hk * p.kv.sh;
    const T *vbase = p.v + bi * p.vv.sb + hk * p.vv.sh;
    const int64_t qrow = ((bi * p.hq + h) * p.s + s); // in the logical [B, Hq, S, .]
    if (active) {
        const T *qx = p.q + bi * p.qv.sb + h * p.qv.sh + s * p.qv.row;
        for (int64_t c = lane; c < p.d; c += 32)
            qs[warp][c] = p.cos_t ? att_rotated(p, qx, c, p.cq, qrow * p.w) : kc_to_f32(qx[c]);
    }
    // With the causal mask, query s sees keys up to s + T - S: later tiles are skipped.
    int64_t s_last = s0 + ATT_ROWS - 1 < p.s - 1 ? s0 + ATT_ROWS - 1 : p.s - 1;
    int64_t kend = p.causal ? s_last + p.t - p.s + 1 : p.t;
    kend = kend < p.t ? kend : p.t;
    float m = -INFINITY, l = 0.0f, acc[ATT_PER_LANE];
#pragma unroll
    for (int c = 0; c < ATT_PER_LANE; c++)
        acc[c] = 0.0f;
    for (int64_t t0 = 0; t0 < kend; t0 += ATT_TILE) {
        __syncthreads(); // the previous tile (and the q rows) are complete / no longer read
        for (int64_t i = threadIdx.x; i < (int64_t)ATT_TILE * p.d; i += blockDim.x) {
            int64_t j = i / p.d, c = i - j * p.d, tj = t0 + j;
            float kval = 0.0f;
            if (tj < p.t) {
                const T *kx = kbase + tj * p.kv.row;
                kval = p.cos_t ? att_rotated(p, kx, c, p.ck, ((bi * p.hkv + hk) * p.t + tj) * p.w)
                               : kc_to_f32(kx[c]);
            }
            ks[j][c] = kval;
        }
        for (int64_t i = threadIdx.x; i < (int64_t)ATT_TILE * p.dv; i += blockDim.x) {
            int64_t j = i / p.dv, c = i - j * p.dv;
            vs[j][c] = t0 + j < p.t ? kc_to_f32(vbase[(t0 + j) * p.vv.row + c]) : 0.0f;
        }
        __syncthreads();
        if (!active)
            continue;
        const int64_t t = t0 + lane;
        float score = -INFINITY;
        if (t < p.t && !(p.causal && t > s + p.t - p.s)) {
            float dot = 0.0f;
            for (int64_t c = 0; c < p.d; c++)
                dot += qs[warp][c] * ks[lane][c];
            score = p.scale * dot;
            if (p.causal_fill_mode && t > s + p.t - p.s) // replaced, not added, as on the CPU
                score = p.causal_fill;
            if (p.key_mask && !(p.key_mask[bi * p.key_mask_sb + t * p.key_mask_sj] > 0))
                score += p.filter; // before the mask, as the CPU adds them
            if (p.mask)
                score += kc_to_f32(p.mask[kc_bcast_offset(p.mb, qrow * p.t + t)]);
            if (p.bias) // after the mask, as the unfused Adds
                score += kc_to_f32(p.bias[kc_bcast_offset(p.bb, qrow * p.t + t)]);
        }
        float m_new = fmaxf(m, kc_warp_max(score));
        // exp(-inf - -inf) would be NaN: a row that has seen only masked keys keeps zero weight.
        float corr = m == -INFINITY ? 0.0f : expf(m - m_new);
        float pr = score == -INFINITY ? 0.0f : expf(score - m_new);
        l = l * corr + kc_warp_sum(pr);
        m = m_new;
#pragma unroll
        for (int c = 0; c < ATT_PER_LANE; c++)
            acc[c] *= corr;
        for (int j = 0; j < ATT_TILE; j++) {
            float pj = __shfl_sync(0xffffffffu, pr, j);
#pragma unroll
            for (int c = 0; c < ATT_PER_LANE; c++)
                if (lane + 32 * c < p.dv)
                    acc[c] += pj * vs[j][lane + 32 * c];
        }
    }
    if (!active)
        return;
    // A row whose keys were all masked has l = 0 and gives NaN, as the unfused softmax does; with
    // no keys at all (T = 0) the product with an empty V is 0, as on the CPU.
    float inv = p.t == 0 ? 0.0f : 1.0f / l;
    T *yrow = p.y + bi * p.yv.sb + h * p.yv.sh + s * p.yv.row;
    // The softmax gives NaN for every probability of a row or for none: exactly when its sum is
    // NaN (a NaN or +inf score) or its keys are all masked (l = 0). nan_to_zero then makes the
    // whole row of probabilities 0, and the CPU's product with V is 0 in each column, or NaN where
    // that column of V holds a non-finite value (0 * inf): that is what the row gets here.
    if (p.nan_to_zero && p.t > 0 && (isnan(l) || l == 0.0f)) {
        for (int64_t c = lane; c < p.dv; c += 32) {
            float out = 0.0f;
            for (int64_t j = 0; j < p.t; j++)
                out += 0.0f * kc_to_f32(vbase[j * p.vv.row + c]);
            yrow[c] = kc_from_f32<T>(out);
        }
        return;
    }
#pragma unroll
    for (int c = 0; c < ATT_PER_LANE; c++)
        if (lane + 32 * c < p.dv)
            yrow[lane + 32 * c] = kc_from_f32<T>(acc[c] * inv);
}

bool kc_attention(kc_context *ctx, const kc_tensor *q, const kc_tensor *k, const kc_tensor *v,
                  const kc_tensor *mask, const kc_tensor *cos_t, const kc_tensor *sin_t,
                  kc_tensor *y, float scale, int causal, bool bshd, bool nan_to_zero,
                  const kc_tensor *key_mask, float filter, const kc_tensor *bias,
                  float causal_fill)
{
    if (q->rank != 4 || k->rank != 4 || v->rank != 4)
        return KC_FAIL(ctx, "attention: Q, K and V must have rank 4");
    const bool keyed = key_mask && key_mask->data;
    if (keyed && (key_mask->dtype != KC_I32 || key_mask->rank != 2 ||
                  (key_mask->dims[1] != 1 && key_mask->dims[1] != k->dims[bshd ? 1 : 2]) ||
                  (key_mask->dims[0] != 1 && key_mask->dims[0] != q->dims[0])))
        return KC_FAIL(ctx, "attention: key_mask must be i32 broadcasting to [B, T]");
    const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2; // the dims of heads and positions
    int64_t hq = q->dims[hd], hkv = k->dims[hd];
    if (hkv < 1 || hq % hkv != 0)
        return KC_FAIL(ctx, "attention: %lld query heads for %lld key heads", (long long)hq,
                       (long long)hkv);
    if (q->dims[3] > ATT_MAXD || v->dims[3] > ATT_MAXD)
        return KC_FAIL(ctx, "attention: head dims above %d", ATT_MAXD);
    if (q->dims[0] > 65535 || hq > 65535)
        return KC_FAIL(ctx, "attention: batch or heads above 65535");
    bool rotary = cos_t && cos_t->data && sin_t && sin_t->data;
    if (rotary && (q->dims[3] % 2 != 0 || cos_t->rank < 1))
        return KC_FAIL(ctx, "attention: rotary needs an even head size and tables of rank >= 1");
    if (y->numel == 0)
        return true;
    return kc_dispatch_float(ctx, q->dtype, [&]<typename T>() {
        att_args<T> p = {};
        p.q = (const T *)q->data, p.k = (const T *)k->data, p.v = (const T *)v->data;
        p.y = (T *)y->data;
        p.qv = att_view_of(q, bshd), p.kv = att_view_of(k, bshd), p.vv = att_view_of(v, bshd);
        p.yv = att_view_of(y, bshd);
        p.b = q->dims[0], p.hq = hq, p.hkv = hkv, p.s = q->dims[sd], p.t = k->dims[sd];
        p.d = q->dims[3], p.dv = v->dims[3];
        p.scale = scale != 0.0f ? scale : 1.0f / sqrtf((float)p.d);
        p.causal = causal == 1;
        p.causal_fill_mode = causal == 2;
        p.causal_fill = causal_fill;
        p.nan_to_zero = nan_to_zero;
        if (keyed) {
            p.key_mask = (const int32_t *)key_mask->data;
            p.key_mask_sb = key_mask->dims[0] == 1 ? 0 : key_mask->dims[1];
            p.key_mask_sj = key_mask->dims[1] == 1 ? 0 : 1;
            p.filter = filter;
        }
        if (mask && mask->data) {
            int64_t dims[4] = {p.b, p.hq, p.s, p.t};
            if (!kc_bcast_make(mask, dims, 4, &p.mb))
                return KC_FAIL(ctx, "attention: the mask does not broadcast to [B, Hq, S, T]");
            p.mask = (const T *)mask->data;
        }
        if (bias && bias->data) {
            int64_t dims[4] = {p.b, p.hq, p.s, p.t};
            if (bias->dtype != q->dtype || !kc_bcast_make(bias, dims, 4, &p.bb))
                return KC_FAIL(ctx, "attention: the bias must be Q's dtype broadcasting to "
                                    "[B, Hq, S, T]");
            p.bias = (const T *)bias->data;
        }
        if (rotary) {
            p.w = cos_t->dims[cos_t->rank - 1];
            int64_t qdims[4] = {p.b, p.hq, p.s, p.w}, kdims[4] = {p.b, p.hkv, p.t, p.w};
            if ((p.w != p.d && 2 * p.w != p.d) || !kc_bcast_make(cos_t, qdims, 4, &p.cq) ||
                !kc_bcast_make(cos_t, kdims, 4, &p.ck))
                return KC_FAIL(ctx, "attention: the rotary tables do not broadcast to Q and K");
            p.cos_t = (const T *)cos_t->data;
            p.sin_t = (const T *)sin_t->data;
        }
        dim3 grid((unsigned)((p.s + ATT_ROWS - 1) / ATT_ROWS), (unsigned)p.hq, (unsigned)p.b);
        attention_kernel<T><<<grid, ATT_ROWS * 32, 0, ctx->stream>>>(p);
        return KC_LAUNCHED(ctx);
    });
}
