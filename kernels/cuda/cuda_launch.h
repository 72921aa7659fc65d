/* What the CUDA column's launches share (kernels/cuda/launch_*.c; internal to kernels/): reporting
 * through the call, the plain ops' operands fetched through it, the normalized axis, the
 * activation attributes, the pooling window. */
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

/* ---- the plain ONNX ops' operands (launch_operands.c) ----
 *
 * A plain op's launch fetches what it reads, in the order it reads it, through the executor's
 * hooks in the call: an input that stays on the host (Slice's starts, Resize's scales) is never
 * uploaded. Each returns false (NULL) after reporting at the call's node. */

/* The most operands kn_cuda_run_given passes. */
enum { KN_CUDA_MAX_IO = 64 };

/* v's type in this run. */
const ir_type *kn_cuda_type(const kn_cuda_call *call, const ir_value *v);
/* v's device copy (uploaded when only the host has it). */
void *kn_cuda_device(const kn_cuda_call *call, ir_value *v);
/* v's host copy (downloaded when only the device has it), in its storage dtype. */
const void *kn_cuda_host(const kn_cuda_call *call, ir_value *v);
/* v (when not NULL) at ptr as a typed device tensor (all zero when v is NULL); refuses a dtype no
 * typed kernel takes (kn_cuda_dtype_of). */
bool kn_cuda_device_tensor(const kn_cuda_call *call, ir_value *v, void *ptr, kc_tensor *t);
/* The typed device tensors of the node's first `count` inputs (data NULL for an absent one). */
bool kn_cuda_inputs(const kn_cuda_call *call, uint32_t count, kc_tensor *in);
/* Device buffers for every output of the node, as typed device tensors in out. */
bool kn_cuda_alloc_outputs(const kn_cuda_call *call, kc_tensor *out);
/* v's device copy as a tensor of shape only (the raw-byte kernels do not read its dtype). */
bool kn_cuda_raw_tensor(const kn_cuda_call *call, ir_value *v, kc_tensor *t);
/* A device buffer for output 0 (or every output) as a tensor of shape only. */
bool kn_cuda_raw_output(const kn_cuda_call *call, kc_tensor *t);
bool kn_cuda_raw_outputs(const kn_cuda_call *call, kc_tensor *out);
/* A device buffer of nbytes that the executor frees when the launch returns; NULL after
 * reporting. */
void *kn_cuda_scratch(const kn_cuda_call *call, size_t nbytes, const char *what);
/* Integer input i (at most 2 * IR_MAX_RANK i32/i64 values) read on the host as int64 in
 * call->arena; *out NULL when the input is absent. */
bool kn_cuda_host_ints(const kn_cuda_call *call, uint32_t i, const int64_t **out, int *count);
/* The typed kernels' element type of a storage dtype (false: none takes it). */
bool kn_cuda_elem_of(ir_dtype dt, kc_elem *out);
/* v stored in dt as the CPU kernels store a double (kn_set_f64): floats through f32 and then the
 * 16-bit storage, integers truncated and saturated; the element's bytes in the low bytes. */
uint64_t kn_cuda_elem_bits(ir_dtype dt, double v);
/* Element j of host i32/i64 indices of dtype dt. */
int64_t kn_cuda_index_at(const void *data, ir_dtype dt, int64_t j);
/* The product of dims [from, to). */
int64_t kn_cuda_dims_prod(const int64_t *dims, int from, int to);
/* The kernels' dtype of a storage dtype (false: no typed-dtype kernel takes it). */
bool kn_cuda_dtype_of(ir_dtype dt, kc_dtype *out);

/* The launches of the plain ops that run on the fused ops' kernels (through kn_cuda_run_given). */
bool kn_cuda_run_Conv(const kn_cuda_call *call);      /* launch_conv.c, FusedConvAct's launch */
bool kn_cuda_run_pool(const kn_cuda_call *call);      /* launch_conv.c: MaxPool, AveragePool */
bool kn_cuda_run_onnx_gemm(const kn_cuda_call *call); /* launch_gemm.c: MatMul, Gemm */
bool kn_cuda_run_Softmax(const kn_cuda_call *call);   /* launch_norm.c */
bool kn_cuda_run_LayerNormalization(const kn_cuda_call *call); /* launch_norm.c */

/* The plain ops' launches in the other files (rows of kn_cuda_onnx_run, launch_onnx.c). */
bool kn_cuda_run_int_op(const kn_cuda_call *call);    /* launch_generate.c: integer.cu */
bool kn_cuda_run_generator(const kn_cuda_call *call); /* launch_generate.c: generate.cu */
/* launch_norm_more.c */
bool kn_cuda_run_log_softmax(const kn_cuda_call *call); /* LogSoftmax, Hardmax */
bool kn_cuda_run_global_max_pool(const kn_cuda_call *call);
bool kn_cuda_run_layer_norm_stats(const kn_cuda_call *call); /* with Mean and InvStdDev */
bool kn_cuda_run_group_norm(const kn_cuda_call *call);
bool kn_cuda_run_mvn(const kn_cuda_call *call);
bool kn_cuda_run_lrn(const kn_cuda_call *call);
bool kn_cuda_run_loss(const kn_cuda_call *call); /* NegativeLogLikelihood, SoftmaxCrossEntropy */
/* launch_scatter.c */
bool kn_cuda_run_topk(const kn_cuda_call *call);
bool kn_cuda_run_scatter_plan(const kn_cuda_call *call); /* ScatterElements, ScatterND reducing */
bool kn_cuda_run_nonzero(const kn_cuda_call *call);
bool kn_cuda_run_compress(const kn_cuda_call *call);
/* launch_resample.c */
bool kn_cuda_run_resize(const kn_cuda_call *call);
bool kn_cuda_run_maxpool_indices(const kn_cuda_call *call);
bool kn_cuda_run_maxunpool(const kn_cuda_call *call);
bool kn_cuda_run_grid_sample(const kn_cuda_call *call);
/* launch_linalg.c */
bool kn_cuda_run_qdq(const kn_cuda_call *call); /* QuantizeLinear, DequantizeLinear */
bool kn_cuda_run_dynamic_quantize(const kn_cuda_call *call);
bool kn_cuda_run_int_matmul(const kn_cuda_call *call); /* MatMulInteger, QLinearMatMul */
bool kn_cuda_run_int_conv(const kn_cuda_call *call);   /* ConvInteger, QLinearConv */
bool kn_cuda_run_conv_transpose(const kn_cuda_call *call);
bool kn_cuda_run_det_dft(const kn_cuda_call *call);
bool kn_cuda_run_einsum(const kn_cuda_call *call);
bool kn_cuda_run_rnn_op(const kn_cuda_call *call); /* RNN, GRU, LSTM */

#endif
