// Data movement: one strided copy, the kernel behind Transpose, Slice, Concat and Split.
//
// dst[dbase + sum(i_d * dstride_d)] = src[sbase + sum(i_d * sstride_d)] over every index i of
// `dims`; source strides may be 0 (broadcast) or negative (a reversed slice). One thread per
// element, grid-stride, the element moved as raw bytes of its size.
#include "kernels/cuda/kc_common.cuh"

struct copy_plan {
    int rank;
    int64_t dims[KC_MAX_RANK], sstride[KC_MAX_RANK], dstride[KC_MAX_RANK];
    int64_t sbase, dbase, n;
};

template <typename T>
__global__ void strided_copy_kernel(const T *src, T *dst, copy_plan p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i, s = p.sbase, d = p.dbase;
        for (int k = p.rank - 1; k >= 0; k--) {
            int64_t q = rest / p.dims[k], at = rest - q * p.dims[k];
            s += at * p.sstride[k];
            d += at * p.dstride[k];
            rest = q;
        }
        dst[d] = src[s];
    }
}

bool kc_strided_copy(kc_context *ctx, const void *src, void *dst, size_t esize,
                     const kc_copy_plan *plan)
{
    if (plan->rank < 0 || plan->rank > KC_MAX_RANK)
        return KC_FAIL(ctx, "strided copy: rank %d", plan->rank);
    copy_plan p = {};
    p.rank = plan->rank;
    p.n = 1;
    for (int k = 0; k < plan->rank; k++) {
        p.dims[k] = plan->dims[k];
        p.sstride[k] = plan->src_strides[k];
        p.dstride[k] = plan->dst_strides[k];
        p.n *= plan->dims[k];
    }
    p.sbase = plan->src_base, p.dbase = plan->dst_base;
    if (p.n == 0)
        return true;
    switch (esize) {
    case 1:
        strided_copy_kernel<uint8_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint8_t *)src, (uint8_t *)dst, p);
        break;
    case 2:
        strided_copy_kernel<uint16_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint16_t *)src, (uint16_t *)dst, p);
        break;
    case 4:
        strided_copy_kernel<uint32_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint32_t *)src, (uint32_t *)dst, p);
        break;
    case 8:
        strided_copy_kernel<uint64_t><<<kc_blocks(p.n), KC_THREADS, 0, ctx->stream>>>(
            (const uint64_t *)src, (uint64_t *)dst, p);
        break;
    default: return KC_FAIL(ctx, "strided copy: elements of %zu bytes", esize);
    }
    return KC_LAUNCHED(ctx);
}
