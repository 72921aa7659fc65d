/* Helpers of the fused CPU kernels (kernels/cpu/fused_*.c): the activation epilogue, and
 * broadcasting of any number of operands by rows. The plain-op helpers are in cpu_util.h. */
#ifndef FUSERULE_KERNELS_CPU_FUSED_UTIL_H
#define FUSERULE_KERNELS_CPU_FUSED_UTIL_H

#include "ir/acts.h"
#include "kernels/kernels.h"

#include <stdint.h>

/* ---- the activation epilogue (FusedConvAct, GemmEpilogue) --------------------------------- */

typedef struct fused_act {
    ir_act kind;       /* a row of ir/acts.def */
    float alpha, beta; /* LeakyRelu alpha; Clip min, max; HardSigmoid alpha, beta */
} fused_act;

/* Reads the node's activation, its parameters defaulting to the table's; false (after reporting)
 * for a name ir/acts.def does not know,
 * which inference has already refused, so only a built-but-unvalidated node gets there. */
bool fused_act_read(const kn_call *call, fused_act *out);
/* The same for the activation named by attribute `attr`, with `attr`_alpha and `attr`_beta
 * (SeparableConv's "out_act"). */
bool fused_act_read_named(const kn_call *call, const char *attr, fused_act *out);

/* y[i] = act(y[i]) for i < n. */
void fused_act_apply(const fused_act *act, float *y, int64_t n);

/* ---- broadcasting by rows -------------------------------------------------------------------
 *
 * Operands broadcast (numpy, right-aligned) to an output shape, seen as rows of the innermost
 * dim after merging neighbouring dims that every operand walks the same way (so a same-shape
 * operand set is one row, and a bias per channel a row per channel plane):
 *
 *     fused_rows r;
 *     fused_rows_init(&r, out->rank, out->dims, operands, n);
 *     for (int64_t row = 0; row < r.nrows; row++) {
 *         fused_rows_offsets(&r, row, off);   // element offset of each operand at the row start
 *         ... element j of operand k is at off[k] + j * r.step[k], j < r.len
 *     }
 *
 * The caller has checked broadcastability (inference did). */

enum { FUSED_MAX_OPERANDS = 40 };

typedef struct fused_rows {
    int rank;                      /* merged rank, >= 1 */
    int noperands;
    int64_t dims[IR_MAX_RANK];     /* merged output dims */
    int64_t strides[FUSED_MAX_OPERANDS][IR_MAX_RANK]; /* 0 on broadcast dims */
    int64_t len;                   /* dims[rank - 1] */
    int64_t step[FUSED_MAX_OPERANDS];
    int64_t nrows;
} fused_rows;

void fused_rows_init(fused_rows *r, int rank, const int64_t *dims, const kn_tensor *const *operands,
                     int noperands);
void fused_rows_offsets(const fused_rows *r, int64_t row, int64_t *off);

/* The product of dims[from .. to). */
int64_t fused_prod(const int64_t *dims, int from, int to);

/* The strides (in elements) of `t` broadcast to a shape of `rank` dims: 0 on a dim t has as 1
 * (or lacks), t's own stride elsewhere. */
void fused_bcast_strides(const kn_tensor *t, int rank, int64_t *strides);

/* ---- RoPE (kernels/cpu/fused_llm.c, and Attention's rotary inputs) ---------------------------- */

/* Rotates one row of D elements (D even): the pairs are (i, i + D/2), or (2i, 2i + 1) when
 * interleaved; c and s point at the row's table entries, tstep elements apart, W = D (one entry
 * per element) or D/2 (one per pair). y may be x. */
void fused_rope_row(const float *x, float *y, int64_t d, int64_t w, const float *c, const float *s,
                    int64_t tstep, bool interleaved);

#endif
