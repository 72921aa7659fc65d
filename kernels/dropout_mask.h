/* The mask of a training-mode Dropout, shared by the CPU kernels (Dropout, BiasDropout) and the
 * CUDA kernel (kernels/cuda/dropout.cu), so that every backend and the fused and unfused forms
 * drop the same elements (docs/kernels.md, "Dropout in training mode").
 *
 * Counter-based: element i of the output (row-major over the output's shape) is kept when the top
 * 24 bits of the (i + 1)-th number of a SplitMix64 generator seeded with `seed` (the node's seed
 * attribute, 0 when absent) are at least ceil(ratio * 2^24). The mask is then a pure function of
 * (seed, ratio, i): integer arithmetic only, the same on every machine, in any order, in any
 * build (the f64 build of the CPU kernels included). A kept element is x * scale, scale =
 * 1 / (1 - ratio) computed in f32. */
#ifndef FUSERULE_KERNELS_DROPOUT_MASK_H
#define FUSERULE_KERNELS_DROPOUT_MASK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KN_DROPOUT_FN __host__ __device__ static inline
#else
#define KN_DROPOUT_FN static inline
#endif

/* The (i + 1)-th output of SplitMix64 seeded with seed. */
KN_DROPOUT_FN uint64_t kn_dropout_bits(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The keep threshold of a ratio in [0, 1): ceil(ratio * 2^24), exact in double. */
KN_DROPOUT_FN uint32_t kn_dropout_threshold(double ratio)
{
    return (uint32_t)ceil(ratio * 16777216.0);
}

/* Whether element i is kept. */
KN_DROPOUT_FN bool kn_dropout_keep(uint64_t seed, uint32_t threshold, uint64_t i)
{
    return (uint32_t)(kn_dropout_bits(seed, i) >> 40) >= threshold;
}

/* The scale of kept elements, 1 / (1 - ratio) in f32 (_Float32 where a build widens float). */
KN_DROPOUT_FN float kn_dropout_scale(double ratio)
{
#ifdef __CUDACC__
    return 1.0f / (1.0f - (float)ratio);
#else
    return (float)((_Float32)1.0f / ((_Float32)1.0f - (_Float32)ratio));
#endif
}

/* The seed attribute as the generator's seed (its two's-complement bits). */
KN_DROPOUT_FN uint64_t kn_dropout_seed(int64_t seed)
{
    return (uint64_t)seed;
}

#endif
