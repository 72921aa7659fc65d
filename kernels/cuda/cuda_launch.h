/* What the CUDA column's launches share (kernels/cuda/launch_*.c; internal to kernels/ but for
 * kn_cuda_pool_params, which the executor's MaxPool with Indices uses too): reporting through the
 * call, the normalized axis, the activation attributes, the pooling window. */
#ifndef FUSERULE_KERNELS_CUDA_CUDA_LAUNCH_H
#define FUSERULE_KERNELS_CUDA_CUDA_LAUNCH_H

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernels.h"

/* Reports the formatted message at the call's node through call->fail; returns false. */
bool kn_cuda_fail(const kn_cuda_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The kernels' last CUDA error ("CUDA: <kc_last_error>"), reported as kn_cuda_fail does. */
bool kn_cuda_failed(const kn_cuda_call *call);

/* The node's `axis` normalized for a rank-`rank` tensor; false after reporting when out of
 * range. */
bool kn_cuda_axis(const kn_cuda_call *call, int rank, int *out);

/* The activation named by attribute `attr` ("act"; SeparableConv's "out_act"), read as the CPU
 * kernels read it; *ok false after an error reported to call->dg. */
kc_act kn_cuda_act(const kn_cuda_call *call, const char *attr, bool *ok);

/* MaxPool / AveragePool node n over X of the given dims: the window geometry as the CPU kernel
 * resolves it (kn_window_axis for auto_pad and ceil_mode), padded to 3 spatial dims by leading
 * dims of 1. False with *err when the attributes do not fit X. */
bool kn_cuda_pool_params(const ir_node *n, int rank, const int64_t *dims, kc_pool_params *p,
                         const char **err);

/* The launches of the plain ops that run on the fused ops' kernels (kn_cuda_onnx_run's rows). */
bool kn_cuda_run_Conv(const kn_cuda_call *call);      /* launch_conv.c, FusedConvAct's launch */
bool kn_cuda_run_pool(const kn_cuda_call *call);      /* launch_conv.c: MaxPool, AveragePool */
bool kn_cuda_run_onnx_gemm(const kn_cuda_call *call); /* launch_gemm.c: MatMul, Gemm */
bool kn_cuda_run_Softmax(const kn_cuda_call *call);   /* launch_norm.c */
bool kn_cuda_run_LayerNormalization(const kn_cuda_call *call); /* launch_norm.c */

#endif
