/* The fused ops that ONNX 23 made standard: imported as the catalog's fused op where the semantics
 * match exactly, refused with the reason where they do not.
 *
 *   RMSNormalization(X, scale) {axis, epsilon, stash_type=1}   RMSNorm(X, scale) {axis, epsilon}
 *     (stash_type 1: the statistics in float or wider; the catalog's kernels sum in double)
 *   Attention(Q, K, V, attn_mask?) {is_causal, scale}          Attention(Q, K, V, mask) {causal,
 *     4-D [B, H, S, D] operands (layout BHSD), an additive         scale}
 *     mask; is_causal only where S = T (ONNX aligns its causal mask top left, the catalog bottom
 *     right: the same triangle when the lengths agree)
 *   RotaryEmbedding(X, cos, sin, position_ids?) {interleaved}   RoPE(X, c, s) {interleaved}, c and
 *     X [B, H, S, D], tables [B, S, D/2] or, with                s the tables (gathered at the
 *     position_ids [B, S], [max_position, D/2]                   positions) unsqueezed to
 *                                                                 [B, 1, S, D/2]
 *
 * Refused by name: past_key/past_value and the extra outputs of Attention (a KV cache, the scores),
 * softcap, 3-D operands (q_num_heads, kv_num_heads, num_heads), a partial rotary_embedding_dim,
 * stash_type other than 1. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <inttypes.h>
#include <string.h>

static const struct {
    const char *name;
    ir_op op;
} ops23[] = {
    {"RMSNormalization", IR_OP_RMSNorm},
    {"Attention", IR_OP_Attention},
    {"RotaryEmbedding", IR_OP_RoPE},
};

bool ox_onnx23_lookup(const char *op_type, int64_t opset, ir_op *out)
{
    if (opset < 23)
        return false;
    for (size_t i = 0; i < FR_COUNT_OF(ops23); i++) {
        if (strcmp(ops23[i].name, op_type) == 0) {
            *out = ops23[i].op;
            return true;
        }
    }
    return false;
}

static bool refuse(ox_importer *im, ox_pending *p, const char *what)
{
    ox_unsupported(ox_importer_report(im), "%s: %s is outside what the catalog's %s expresses",
                   p->label, what, ir_op_name(p->node->op));
    return false;
}

static bool input(ox_importer *im, ox_pending *p, size_t slot, ir_value **out)
{
    return ox_importer_input(im, p, slot, out);
}

/* Sets input `index` of n, growing its input list. */
static void set_input_at(ox_importer *im, ir_node *n, uint32_t index, ir_value *v)
{
    if (index >= n->ninputs) {
        ir_value **grown = ar_alloc_array(ox_importer_graph(im)->arena, index + 1, sizeof *grown);
        memcpy(grown, n->inputs, n->ninputs * sizeof *grown);
        n->inputs = grown;
        n->ninputs = index + 1;
    }
    ir_set_input(n, index, v);
}

static bool rms_normalization(ox_importer *im, ox_pending *p)
{
    ir_graph *g = ox_importer_graph(im);
    ir_value *x, *scale;
    if (!input(im, p, 0, &x) || !input(im, p, 1, &scale))
        return false;
    set_input_at(im, p->node, 0, x);
    set_input_at(im, p->node, 1, scale);
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        const char *name = a->name ? a->name : "";
        if (strcmp(name, "axis") == 0 && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
            ir_set_attr_int(g, p->node, "axis", a->i);
        else if (strcmp(name, "epsilon") == 0 &&
                 a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
            ir_set_attr_float(g, p->node, "epsilon", ox_float_to_double(a->f));
        else if (strcmp(name, "stash_type") == 0 &&
                 a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && a->i == 1)
            continue; /* float statistics: the kernels' double is at least that */
        else
            return refuse(im, p, ar_printf(g->arena, "attribute '%s' (this value)", name));
    }
    return true;
}

/* ---- Attention ------------------------------------------------------------------------------ */

static bool same_dim(int64_t a, int64_t b)
{
    return a == b && a != IR_DIM_UNKNOWN;
}

typedef struct {
    ir_node *node;
    const char *label;
} causal_check;

/* is_causal: ONNX's triangle is aligned top left, the catalog's bottom right; they agree when the
 * query and key lengths are the same dim. */
static bool check_causal(ox_importer *im, void *ctx)
{
    causal_check *c = ctx;
    const ir_type *q = c->node->inputs[0]->type, *k = c->node->inputs[1]->type;
    if (q->rank == 4 && k->rank == 4 && same_dim(q->dims[2], k->dims[2]))
        return true;
    ox_unsupported(ox_importer_report(im),
                   "%s: is_causal with query and key lengths that may differ: ONNX aligns the "
                   "causal mask top left, the catalog's Attention bottom right",
                   c->label);
    return false;
}

static bool attention(ox_importer *im, ox_pending *p)
{
    ir_graph *g = ox_importer_graph(im);
    if ((p->proto->n_input > 4 && p->proto->input[4][0]) ||
        (p->proto->n_input > 5 && p->proto->input[5][0]))
        return refuse(im, p, "past_key/past_value (a KV cache)");
    for (uint32_t i = 0; i < 4; i++) {
        ir_value *v;
        if (!input(im, p, i, &v))
            return false;
        if (v || i < 3)
            set_input_at(im, p->node, i, v);
    }
    if (p->node->ninputs > 3 && p->node->inputs[3] && p->node->inputs[3]->type->dtype == IR_BOOL)
        return refuse(im, p, "a boolean attn_mask");
    ir_set_attr_string(g, p->node, "layout", "BHSD");
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        const char *name = a->name ? a->name : "";
        bool is_int = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        if (strcmp(name, "is_causal") == 0 && is_int && (a->i == 0 || a->i == 1)) {
            if (a->i) {
                ir_set_attr_int(g, p->node, "causal", 1);
                causal_check *c = ar_alloc(g->arena, sizeof *c);
                *c = (causal_check){p->node, p->label};
                ox_importer_after_validation(im, check_causal, c);
            }
        } else if (strcmp(name, "scale") == 0 &&
                   a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT && a->f > 0) {
            ir_set_attr_float(g, p->node, "scale", ox_float_to_double(a->f));
        } else if ((strcmp(name, "softcap") == 0 &&
                    a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT && a->f == 0) ||
                   strcmp(name, "softmax_precision") == 0 ||
                   strcmp(name, "qk_matmul_output_mode") == 0) {
            continue; /* no softcap; the precision of the softmax (the kernels sum in double);
                         the mode of an output that is not asked for */
        } else {
            return refuse(im, p, ar_printf(g->arena, "attribute '%s' (this value)", name));
        }
    }
    return true;
}

/* ---- RotaryEmbedding ------------------------------------------------------------------------ */

static ir_value *made(ox_importer *im, ir_op op, const char *stem, ir_value *a, ir_value *b)
{
    ir_graph *g = ox_importer_graph(im);
    const char *name = ir_fresh_name(g, stem);
    ir_node *n = ir_add_node(g, op, 2, &name, 1);
    FR_CHECK(n != NULL); /* the name is fresh */
    ir_set_input(n, 0, a);
    ir_set_input(n, 1, b);
    return n->outputs[0];
}

/* X must be [B, H, S, D]: a 3-D X (with num_heads) is refused. */
static bool check_rope_rank(ox_importer *im, void *ctx)
{
    causal_check *c = ctx;
    if (c->node->inputs[0]->type->rank == 4)
        return true;
    ox_unsupported(ox_importer_report(im),
                   "%s: an input of rank %d; import converts RotaryEmbedding of [batch, heads, "
                   "sequence, head size]",
                   c->label, c->node->inputs[0]->type->rank);
    return false;
}

static bool rotary_embedding(ox_importer *im, ox_pending *p)
{
    ir_graph *g = ox_importer_graph(im);
    ir_value *x, *tables[2], *pos;
    if (!input(im, p, 0, &x) || !input(im, p, 1, &tables[0]) || !input(im, p, 2, &tables[1]) ||
        !input(im, p, 3, &pos))
        return false;
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        const char *name = a->name ? a->name : "";
        bool is_int = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        if (strcmp(name, "interleaved") == 0 && is_int && (a->i == 0 || a->i == 1))
            ir_set_attr_int(g, p->node, "interleaved", a->i);
        else if ((strcmp(name, "rotary_embedding_dim") == 0 || strcmp(name, "num_heads") == 0) &&
                 is_int && a->i == 0)
            continue; /* the defaults: the whole head rotated, X in heads already */
        else
            return refuse(im, p, ar_printf(g->arena, "attribute '%s' (this value)", name));
    }
    const char *stem = p->node->outputs[0]->name;
    static const int64_t zero[] = {0}, one[] = {1};
    for (int i = 0; i < 2; i++) {
        ir_value *t = tables[i];
        if (!t || !x) {
            ox_invalid(ox_importer_report(im), "%s needs its input, cos_cache and sin_cache",
                       p->label);
            return false;
        }
        const char *what = i ? "sin" : "cos";
        if (pos) { /* the rows of the cache at each position: [B, S, D/2] */
            ir_value *idx =
                made(im, IR_OP_Gather, ar_printf(g->arena, "%s/%s", stem, what), t, pos);
            ir_set_attr_int(g, idx->producer, "axis", zero[0]);
            t = idx;
        }
        t = made(im, IR_OP_Unsqueeze, ar_printf(g->arena, "%s/%s_heads", stem, what), t,
                 ox_const_i64(im, ar_printf(g->arena, "%s/heads_axis", stem), one, 1, false));
        tables[i] = t;
    }
    set_input_at(im, p->node, 0, x);
    set_input_at(im, p->node, 1, tables[0]);
    set_input_at(im, p->node, 2, tables[1]);
    p->node->ninputs = 3;
    causal_check *c = ar_alloc(g->arena, sizeof *c);
    *c = (causal_check){p->node, p->label};
    ox_importer_after_validation(im, check_rope_rank, c);
    return true;
}

bool ox_onnx23_import(ox_importer *im, ox_pending *p)
{
    switch (p->node->op) {
    case IR_OP_RMSNorm: return rms_normalization(im, p);
    case IR_OP_Attention: return attention(im, p);
    case IR_OP_RoPE: return rotary_embedding(im, p);
    default: FR_UNREACHABLE(); return false;
    }
}
