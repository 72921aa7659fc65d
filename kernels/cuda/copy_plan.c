/* The CUDA launches' data movement: Transpose, Slice, Concat, Split, DepthToSpace and
 * SpaceToDepth as strided copies on the device (kc_strided_copy), whatever the element type. Their plans are the CPU kernels'
 * (kernels/cpu/onnx_movement.c) with element offsets; the shapes are the ones inference gave the
 * outputs for this run. */
#include "kernels/cuda/copy_plan.h"

#include "base/check.h"
#include "kernels/helpers.h"

#include <string.h>

static void strides_of(int rank, const int64_t *dims, int64_t *out)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        out[d] = s;
        s *= dims[d];
    }
}

/* The normalized axis; false when out of range (inference already refused such a node). */
static bool norm_axis(int64_t axis, int rank, int *out)
{
    if (axis < 0)
        axis += rank;
    *out = (int)axis;
    return axis >= 0 && axis < rank;
}

static bool transpose(const kn_cuda_move_io *io, const ir_node *n, kc_copy_plan *p,
                      const char **err)
{
    const ir_type *x = io->in_type[0];
    const int64_t *perm_attr;
    uint32_t np = ir_get_ints(n, "perm", &perm_attr);
    int64_t xs[IR_MAX_RANK];
    strides_of(x->rank, x->dims, xs);
    p->rank = x->rank;
    for (int d = 0; d < x->rank; d++) {
        int64_t from = np ? perm_attr[d] : x->rank - 1 - d; /* default: reverse the dims */
        if (from < 0 || from >= x->rank) {
            *err = "perm is not a permutation";
            return false;
        }
        p->dims[d] = x->dims[from];
        p->src_strides[d] = xs[from];
    }
    strides_of(p->rank, p->dims, p->dst_strides);
    return true;
}

static bool slice(const kn_cuda_move_io *io, const ir_node *n, kc_copy_plan *p, const char **err)
{
    const ir_type *x = io->in_type[0];
    int64_t xs[IR_MAX_RANK], first[IR_MAX_RANK] = {0}, step[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {false};
    strides_of(x->rank, x->dims, xs);
    p->rank = x->rank;
    for (int d = 0; d < x->rank; d++) {
        p->dims[d] = x->dims[d];
        step[d] = 1;
    }
    int count = io->nints[1];
    if (io->nints[2] != count || (io->ints[3] && io->nints[3] != count) ||
        (io->ints[4] && io->nints[4] != count)) {
        *err = "starts, ends, axes and steps differ in length";
        return false;
    }
    for (int i = 0; i < count; i++) {
        int a;
        int64_t st = io->ints[4] ? io->ints[4][i] : 1;
        if (!norm_axis(io->ints[3] ? io->ints[3][i] : i, x->rank, &a) || seen[a] || st == 0) {
            *err = "an axis out of range, repeated or with step 0";
            return false;
        }
        seen[a] = true;
        step[a] = st;
        p->dims[a] = kn_slice_axis(x->dims[a], io->ints[1][i], io->ints[2][i], st, &first[a]);
    }
    for (int d = 0; d < x->rank; d++) {
        p->src_base += first[d] * xs[d];
        p->src_strides[d] = step[d] * xs[d];
    }
    strides_of(p->rank, p->dims, p->dst_strides);
    return true;
}

/* DepthToSpace and SpaceToDepth as one 6-D copy over the space side's [N, C, H/b, b, W/b, b]
 * (kernels/cpu/onnx_index.c): the depth side's channel is (bh*b + bw)*C + c in DCR mode (and
 * always for SpaceToDepth), c*b*b + bh*b + bw in CRD mode. */
static bool depth_space(const kn_cuda_move_io *io, const ir_node *n, kc_copy_plan *p,
                        const char **err)
{
    bool to_space = n->op == IR_OP_DepthToSpace;
    const ir_type *space = to_space ? io->out_type[0] : io->in_type[0];
    int64_t b = ir_get_int(n, "blocksize");
    bool crd = to_space && strcmp(ir_get_string(n, "mode"), "CRD") == 0;
    if (space->rank != 4 || b < 1 || space->dims[2] % b || space->dims[3] % b) {
        *err = "needs rank-4 tensors and a blocksize dividing H and W";
        return false;
    }
    int64_t N = space->dims[0], C = space->dims[1], H = space->dims[2], W = space->dims[3];
    int64_t dh = H / b, dw = W / b, plane = dh * dw;
    const int64_t dims[6] = {N, C, dh, b, dw, b};
    const int64_t space_strides[6] = {C * H * W, H * W, b * W, W, b, 1};
    const int64_t depth_strides[6] = {
        C * b * b * plane,      crd ? b * b * plane : plane, dw, crd ? b * plane : b * C * plane, 1,
        crd ? plane : C * plane};
    p->rank = 6;
    memcpy(p->dims, dims, sizeof dims);
    memcpy(to_space ? p->src_strides : p->dst_strides, depth_strides, sizeof depth_strides);
    memcpy(to_space ? p->dst_strides : p->src_strides, space_strides, sizeof space_strides);
    return true;
}

bool kn_cuda_move_plans(const ir_node *n, const kn_cuda_move_io *io, kc_copy_plan *plans,
                        int *nplans, const char **err)
{
    *nplans = 0;
    *err = "unsupported";
    memset(plans, 0, sizeof *plans * (size_t)KN_CUDA_MOVE_MAX_PLANS);
    switch (n->op) {
    case IR_OP_Transpose: *nplans = 1; return transpose(io, n, &plans[0], err);
    case IR_OP_Slice: *nplans = 1; return slice(io, n, &plans[0], err);
    case IR_OP_DepthToSpace:
    case IR_OP_SpaceToDepth: *nplans = 1; return depth_space(io, n, &plans[0], err);
    case IR_OP_Concat:
    case IR_OP_Split: {
        /* Concat: input k lands at its offset along the axis of the output; Split: output k
         * comes from its offset along the axis of the input. */
        bool concat = n->op == IR_OP_Concat;
        const ir_type *whole = concat ? io->out_type[0] : io->in_type[0];
        int parts = concat ? (int)n->ninputs : (int)n->noutputs;
        int axis;
        if (parts > KN_CUDA_MOVE_MAX_PLANS ||
            !norm_axis(ir_get_int(n, "axis"), whole->rank, &axis)) {
            *err = "too many parts or the axis out of range";
            return false;
        }
        int64_t ws[IR_MAX_RANK], at = 0;
        strides_of(whole->rank, whole->dims, ws);
        for (int k = 0; k < parts; k++) {
            const ir_type *part = concat ? io->in_type[k] : io->out_type[k];
            kc_copy_plan *p = &plans[k];
            p->rank = part->rank;
            memcpy(p->dims, part->dims, sizeof p->dims[0] * (size_t)part->rank);
            int64_t *own = concat ? p->src_strides : p->dst_strides;
            int64_t *big = concat ? p->dst_strides : p->src_strides;
            strides_of(part->rank, part->dims, own);
            memcpy(big, ws, sizeof ws[0] * (size_t)part->rank);
            *(concat ? &p->dst_base : &p->src_base) = at * ws[axis];
            at += part->dims[axis];
        }
        *nplans = parts;
        return true;
    }
    default: *err = "not a movement op with a CUDA kernel"; return false;
    }
}

bool kn_cuda_pad_plan(const ir_node *n, int rank, const int64_t *pads, int npads,
                      const int64_t *axes, int naxes, int64_t *before, kc_pad_mode *mode,
                      const char **err)
{
    static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
    static const kc_pad_mode modes[] = {KC_PAD_CONSTANT, KC_PAD_REFLECT, KC_PAD_EDGE, KC_PAD_WRAP};
    const char *m = ir_get_string(n, "mode");
    *err = "mode is not constant, reflect, edge or wrap";
    bool known = false;
    for (int i = 0; i < 4; i++)
        if (strcmp(m, names[i]) == 0) {
            *mode = modes[i];
            known = true;
        }
    if (!known)
        return false;
    if (!axes)
        naxes = rank;
    if (npads != 2 * naxes) {
        *err = "pads does not hold two values per axis";
        return false;
    }
    for (int d = 0; d < rank; d++)
        before[d] = 0;
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!norm_axis(axes ? axes[i] : i, rank, &a)) {
            *err = "an axis is out of range";
            return false;
        }
        before[a] = pads[i];
    }
    return true;
}
