/* pack_qkv: an Attention (layout BSHD) whose Q, K and V are head views of the three outputs of one
 * FusedQKV of the match,
 *
 *     Attention(Reshape(q), Reshape(k), Reshape(v), rest...)    q, k, v = FusedQKV(X, W, bias)
 *
 * each Reshape [B, S, N_i] -> [B, S, H, N_i / H] with one H, becomes the packed
 *
 *     Attention(X, W, bias, rest...) {qkv_sizes = FusedQKV's sizes, num_heads = H}
 *
 * which computes X @ W + bias itself (ONNX Runtime's Attention with its packed weights). The root
 * Attention's inputs after V keep their positions (an omitted mask stays omitted before a
 * key_mask). Refused when a view is not such a Reshape of the right output, the heads differ or
 * are not static, X is not [B, S, C], or the FusedQKV has no bias. */
#include "rewrite/internal.h"

#include <string.h>

/* Whether dims a and b are the same known size or symbol. */
static bool same_dim(int64_t a, int64_t b)
{
    return a == b && a != IR_DIM_UNKNOWN;
}

/* The heads of v, a member Reshape [B, S, H, D] of output `index` [B, S, H * D] of a member
 * FusedQKV (stored in *f, which must stay the same node); -1 when it is not. */
static int64_t heads_of_view(const rw_plan *p, const ir_value *v, uint32_t index,
                             const ir_node **f)
{
    if (!v || v->kind != IR_VALUE_NODE || !rw_is_member(p, v->producer) ||
        v->producer->op != IR_OP_Reshape)
        return -1;
    const ir_value *src = v->producer->inputs[0];
    if (!src || src->kind != IR_VALUE_NODE || !rw_is_member(p, src->producer) ||
        src->producer->op != IR_OP_FusedQKV || src->out_index != index ||
        (*f && *f != src->producer))
        return -1;
    *f = src->producer;
    const ir_type *y = v->type, *x = src->type;
    if (y->rank != 4 || x->rank != 3 || !same_dim(y->dims[0], x->dims[0]) ||
        !same_dim(y->dims[1], x->dims[1]) || !ir_dim_is_static(y->dims[2]) ||
        !ir_dim_is_static(y->dims[3]) || !ir_dim_is_static(x->dims[2]) ||
        y->dims[2] * y->dims[3] != x->dims[2])
        return -1;
    return y->dims[2];
}

bool rw_action_pack_qkv(rw_plan *p, char *why)
{
    const ir_node *att = p->roots.items[0];
    if (att->op != IR_OP_Attention || strcmp(ir_get_string(att, "layout"), "BSHD") != 0)
        return rw_why(why, "pack_qkv: the root is not an Attention in layout BSHD");
    const ir_node *f = NULL;
    int64_t h = -1;
    for (uint32_t i = 0; i < 3; i++) {
        int64_t hi = heads_of_view(p, att->inputs[i], i, &f);
        if (hi < 1 || (h >= 1 && hi != h))
            return rw_why(why,
                          "pack_qkv: %s '%s' is not a [B, S, H, D] Reshape of output %u of one "
                          "FusedQKV, with the same H as Q",
                          i == 0 ? "Q" : i == 1 ? "K" : "V", att->inputs[i]->name, i);
        h = hi;
    }
    if (f->noutputs != 3 || f->ninputs < 3 || !f->inputs[2])
        return rw_why(why, "pack_qkv: '%s' is not a FusedQKV of three outputs with a bias",
                      f->outputs[0]->name);
    if (f->inputs[0]->type->rank != 3)
        return rw_why(why, "pack_qkv: X '%s' is not [B, S, C]", f->inputs[0]->name);
    p->inputs.len = 0;
    for (uint32_t i = 0; i < 3; i++)
        vec_push(&p->inputs, ((rw_input){f->inputs[i], NULL}));
    for (uint32_t i = 3; i < att->ninputs; i++)
        vec_push(&p->inputs, ((rw_input){att->inputs[i], NULL}));
    const int64_t *sizes;
    uint32_t n = ir_get_ints(f, "sizes", &sizes);
    rw_plan_set_attr(p, &(ir_attr){.name = "qkv_sizes",
                                   .kind = IR_ATTR_INTS,
                                   .count = n,
                                   .v.ints = (int64_t *)sizes});
    rw_plan_set_attr(p, &(ir_attr){.name = "num_heads", .kind = IR_ATTR_INT, .v.i = h});
    return true;
}
