// SqueezeExcite: y = x * gate(W2 act(W1 mean(x) + B1) + B2), the squeeze-and-excitation block of
// EfficientNet and MobileNetV3; x [N, C, spatial...], w1 [R, C, 1...], b1 [R], w2 [C, R, 1...],
// b2 [C], y x's shape.
//
// One kernel, one block per image: each warp takes channels in turn and sums them over the
// positions (a warp-wide reduction), the block then runs the two 1x1 convs over the pooled
// vector in shared memory (one thread per output channel), and finally scales every element of
// the image by its channel's gate. The pooled vector, the hidden layer and the gates never go to
// device memory. Arithmetic in fp32 whatever the storage type.
#include "kernels/cuda/kc_common.cuh"

// The most dynamic shared memory a block takes: C + R + C floats, C and R at most
// KC_SQUEEZE_EXCITE_MAX_CHANNELS (tests/gpu/resources.py reads this).
constexpr int64_t SE_SHARED_BYTES = 3 * 4096 * 4;
static_assert(SE_SHARED_BYTES == 3 * KC_SQUEEZE_EXCITE_MAX_CHANNELS * sizeof(float),
              "shared memory of the largest call");

template <typename T>
__global__ void squeeze_excite_kernel(const T *x, const T *w1, const T *b1, const T *w2,
                                      const T *b2, T *y, int64_t c, int64_t r, int64_t positions,
                                      kc_act act, kc_act gate)
{
    extern __shared__ float buf[]; // pooled [c], hidden [r], scale [c]
    float *pooled = buf, *hidden = buf + c, *scale = hidden + r;
    const int64_t n = blockIdx.x;
    const T *xn = x + n * c * positions;
    T *yn = y + n * c * positions;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int64_t ch = warp; ch < c; ch += nwarps) {
        float s = 0.0f;
        for (int64_t p = lane; p < positions; p += 32)
            s += kc_to_f32(xn[ch * positions + p]);
        s = kc_warp_sum(s);
        if (lane == 0)
            pooled[ch] = s / (float)positions;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < r; i += blockDim.x) {
        float s = kc_to_f32(b1[i]);
        for (int64_t j = 0; j < c; j++)
            s += kc_to_f32(w1[i * c + j]) * pooled[j];
        hidden[i] = kc_apply_act(act, s);
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
        float s = kc_to_f32(b2[i]);
        for (int64_t j = 0; j < r; j++)
            s += kc_to_f32(w2[i * r + j]) * hidden[j];
        scale[i] = kc_apply_act(gate, s);
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < c * positions; i += blockDim.x)
        yn[i] = kc_from_f32<T>(kc_to_f32(xn[i]) * scale[i / positions]);
}

bool kc_squeeze_excite(kc_context *ctx, const kc_tensor *x, const kc_tensor *w1,
                       const kc_tensor *b1, const kc_tensor *w2, const kc_tensor *b2, kc_tensor *y,
                       const kc_squeeze_excite_params *p)
{
    if (x->rank < 3)
        return KC_FAIL(ctx, "squeeze-excite: x must be [N, C, spatial...], not rank %d", x->rank);
    const int64_t batch = x->dims[0], c = x->dims[1], r = w1->dims[0];
    if (w1->numel != r * c || w2->numel != c * r || b1->numel != r || b2->numel != c ||
        y->numel != x->numel)
        return KC_FAIL(ctx, "squeeze-excite: the weights do not take %lld channels to %lld and back",
                       (long long)c, (long long)r);
    if (c > KC_SQUEEZE_EXCITE_MAX_CHANNELS || r > KC_SQUEEZE_EXCITE_MAX_CHANNELS)
        return KC_FAIL(ctx, "squeeze-excite: %lld channels (%lld reduced) exceed %d",
                       (long long)c, (long long)r, (int)KC_SQUEEZE_EXCITE_MAX_CHANNELS);
    if (batch > 2147483647)
        return KC_FAIL(ctx, "squeeze-excite: batch %lld exceeds the grid", (long long)batch);
    if (x->numel == 0)
        return true;
    const int64_t positions = x->numel / (batch * c);
    const size_t shared = (size_t)(c + r + c) * sizeof(float);
    return kc_dispatch_float(ctx, y->dtype, [&]<typename T>() {
        squeeze_excite_kernel<T><<<(unsigned)batch, KC_THREADS, shared, ctx->stream>>>(
            (const T *)x->data, (const T *)w1->data, (const T *)b1->data, (const T *)w2->data,
            (const T *)b2->data, (T *)y->data, c, r, positions, p->act, p->gate);
        return KC_LAUNCHED(ctx);
    });
}
