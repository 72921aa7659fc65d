/* com.microsoft Attention and MultiHeadAttention: imported as the catalog's Attention (layout
 * BSHD) with the projections, head reshapes and masks ONNX Runtime's kernels compute around it.
 *
 *   Attention(X, W, bias?, mask_index?, _, attention_bias?) {num_heads, qkv_hidden_sizes,
 *             unidirectional, mask_filter_value, scale} -> Y, present?
 *     q, k, v = FusedQKV(X, W, bias) {sizes = qkv_hidden_sizes, or W's width in thirds}
 *     Y = Reshape(Attention(Reshape(q, [0,0,H,-1]), Reshape(k, ...), Reshape(v, ...), mask)
 *                 {layout="BSHD", causal=unidirectional, scale}, [0, 0, -1])
 *     present = Concat(Unsqueeze(Transpose(k4, [0,2,1,3]), [0]), the same of v4) on axis 0
 *   MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?)
 *             {num_heads, mask_filter_value, scale, unidirectional} -> Y, present_key?,
 *             present_value?
 *     q, k, v = query, key, value (+ their thirds of bias); key and value either [B, T, H*D] or
 *     already in heads [B, H, T, D] (then Attention runs in BHSD on them as they are, the query
 *     transposed to BHSD and the result back, and only the query's third of the bias is added,
 *     as ONNX Runtime does);
 *     present_key/value = k4/v4 transposed to [B, H, T, D].
 *
 * mask (mask_index or key_padding_mask) is ONNX Runtime's 2-D raw mask [B, T]: a key whose entry
 * is not > 0 gets mask_filter_value (-10000 by default) added to its scores, which is what the
 * catalog Attention's key_mask input (with its mask_filter_value) means: the mask goes there as it
 * is; attention_bias is added as it is (after the key mask, as ONNX Runtime adds them). Attention's mask_index may also be Megatron's 4-D mask [B, 1, M, M] (ONNX
 * Runtime's CUDA kernel): query s after P cached tokens reads row P + s, keys 0 .. P + S - 1, an
 * entry of 0 adding mask_filter_value. Because their constants take the data's element type, the
 * mask is built after the first validation (an after-validation fixup), as are the checks of ranks
 * that only inference knows.
 *
 * A KV cache (Attention's past [2, B, H, P, D], MHA's past_key/past_value [B, H, P, D]) puts its
 * keys and values before the new ones: the operands are transposed to BHSD, concatenated along
 * the sequence (the present outputs), and Attention runs in BHSD, its causal mask aligned to the
 * bottom right as ONNX Runtime's (query i sees keys up to P + i). Everything else ONNX Runtime's
 * ops take (past_sequence_length and cache_indirection, a shared buffer; 1-D and 3-D mask_index;
 * packed QKV; rotary attributes; the qk output) is refused by name. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef enum { KIND_ATTENTION, KIND_MHA } mha_kind;

/* What the finish step decided, for the after-validation fixup. */
typedef struct {
    mha_kind kind;
    const char *label;
    ir_node *attention;  /* the catalog Attention node */
    ir_value *x;         /* the data whose element type the mask takes (X or query) */
    ir_value *mask;      /* the raw 2-D mask, or NULL */
    ir_value *bias;      /* MHA: bias [hq + hk + hv] to split, or NULL */
    ir_node *reshape[3]; /* MHA: the head reshapes of q, k, v (bias goes before them) */
    bool key_in_heads;   /* MHA: key and value arrived as [B, H, T, D] */
    ir_value *kv[2];     /* MHA: key and value as they came */
    ir_value *past;      /* Attention: the cache [2, B, H, P, D], or NULL */
    double filter;       /* mask_filter_value */
} mha_fixup;

static const char *const kind_names[] = {"Attention", "MultiHeadAttention"};

bool ox_contrib_is_attention(const char *op_type)
{
    return strcmp(op_type, kind_names[0]) == 0 || strcmp(op_type, kind_names[1]) == 0;
}

/* ---- building nodes ------------------------------------------------------------------------- */

/* A node over `in` (subgraph.c's builder); FusedQKV's three outputs are named <stem>q, k, v. */
static ir_node *add(ox_importer *im, ir_op op, const char *stem, uint32_t nin, ir_value *const *in,
                    uint32_t nout)
{
    if (nout == 1)
        return ox_build(im, op, stem, nin, in, 1);
    ir_graph *g = ox_importer_graph(im);
    const char *names[3];
    FR_CHECK(nout == 3);
    for (uint32_t i = 0; i < nout; i++)
        names[i] = ir_fresh_name(g, ar_printf(g->arena, "%s%c", stem, "qkv"[i]));
    ir_node *n = ir_add_node(g, op, nin, names, nout);
    FR_CHECK(n != NULL); /* the names are fresh */
    for (uint32_t i = 0; i < nin; i++)
        ir_set_input(n, i, in[i]);
    return n;
}

static ir_value *add1(ox_importer *im, ir_op op, const char *stem, uint32_t nin,
                      ir_value *const *in)
{
    return ox_build1(im, op, stem, nin, in);
}

/* Sets input `index` of n, growing its input list (Attention's optional mask slot). */
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

static ir_value *i64s(ox_importer *im, const char *stem, const int64_t *v, uint32_t n)
{
    return ox_const_i64(im, stem, v, n, false);
}

static ir_value *transpose_heads(ox_importer *im, const char *stem, ir_value *x)
{
    static const int64_t perm[] = {0, 2, 1, 3};
    ir_node *t = add(im, IR_OP_Transpose, stem, 1, &x, 1);
    ir_set_attr_ints(ox_importer_graph(im), t, "perm", perm, 4);
    return t->outputs[0];
}

/* Reshape(x, [0, 0, H, -1]): [B, S, H*D] into heads [B, S, H, D]. */
static ir_node *split_heads(ox_importer *im, const char *stem, ir_value *x, int64_t heads)
{
    const int64_t shape[] = {0, 0, heads, -1};
    ir_graph *g = ox_importer_graph(im);
    ir_value *in[] = {x, i64s(im, ar_printf(g->arena, "%s_shape", stem), shape, 4)};
    return add(im, IR_OP_Reshape, stem, 2, in, 1);
}

/* ---- attributes ----------------------------------------------------------------------------- */

typedef struct {
    int64_t heads, unidirectional;
    double filter, scale;
    const int64_t *sizes;
    size_t nsizes;
} mha_attrs;

static bool read_attrs(ox_importer *im, ox_pending *p, mha_kind kind, mha_attrs *a)
{
    ox_report *r = ox_importer_report(im);
    *a = (mha_attrs){.filter = -10000.0};
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *at = p->proto->attribute[i];
        const char *name = at->name ? at->name : "";
        bool is_int = at->has_type && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        bool is_float = at->has_type && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        if (strcmp(name, "num_heads") == 0 && is_int)
            a->heads = at->i;
        else if (strcmp(name, "unidirectional") == 0 && is_int && (at->i == 0 || at->i == 1))
            a->unidirectional = at->i;
        else if (strcmp(name, "mask_filter_value") == 0 && is_float && isfinite(at->f))
            a->filter = ox_float_to_double(at->f);
        else if (strcmp(name, "scale") == 0 && is_float && at->f >= 0 && isfinite(at->f))
            a->scale = ox_float_to_double(at->f);
        else if (kind == KIND_ATTENTION && strcmp(name, "qkv_hidden_sizes") == 0 && at->has_type &&
                 at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && at->n_ints == 3)
            a->sizes = at->ints, a->nsizes = 3;
        else if ((strcmp(name, "do_rotary") == 0 || strcmp(name, "rotary_embedding_dim") == 0 ||
                  strcmp(name, "past_present_share_buffer") == 0) &&
                 is_int && at->i == 0)
            continue; /* the defaults: no rotary, separate past and present */
        else {
            ox_unsupported(r,
                           "%s: attribute '%s' (this value) is outside what the catalog's "
                           "Attention expresses",
                           p->label, name);
            return false;
        }
    }
    if (a->heads <= 0) {
        ox_invalid(r, "%s needs num_heads > 0", p->label);
        return false;
    }
    return true;
}

/* Refuses the inputs at `slots` (KV caches and the like) when given. */
static bool refuse_inputs(ox_importer *im, ox_pending *p, const size_t *slots, size_t n,
                          const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (slots[i] < p->proto->n_input && p->proto->input[slots[i]][0]) {
            ox_unsupported(ox_importer_report(im),
                           "%s: input %zu (%s) is outside what the catalog's Attention expresses",
                           p->label, slots[i], what);
            return false;
        }
    }
    return true;
}

/* ---- define: the nodes that carry the ONNX outputs ------------------------------------------ */

ir_node *ox_contrib_attention_define(ox_importer *im, const Onnx__NodeProto *np, const char *label)
{
    ox_report *r = ox_importer_report(im);
    bool mha = strcmp(np->op_type, "MultiHeadAttention") == 0;
    size_t max_out = mha ? 3 : 2;
    for (size_t k = 0; k < np->n_output; k++) {
        if (np->output[k][0] && k >= max_out) {
            ox_unsupported(r, "%s: output %zu of %s is outside the catalog", label, k, np->op_type);
            return NULL;
        }
    }
    if (np->n_output == 0 || !np->output[0][0]) {
        ox_invalid(r, "%s has no named first output", label);
        return NULL;
    }
    const char *name = np->output[0];
    ir_node *y = ox_importer_add_node(im, IR_OP_Reshape, 2, &name, 1, label);
    if (!y)
        return NULL;
    for (size_t k = 1; k < np->n_output; k++) {
        if (!np->output[k][0])
            continue;
        /* Attention's present stacks K and V; MHA's present_key/value transpose them */
        ir_op op = mha ? IR_OP_Transpose : IR_OP_Concat;
        if (!ox_importer_add_node(im, op, mha ? 1 : 2, (const char **)&np->output[k], 1, label))
            return NULL;
    }
    return y;
}

/* ---- finish: the nodes in between ----------------------------------------------------------- */

static ir_node *output_node(ox_importer *im, const ox_pending *p, size_t slot)
{
    if (slot >= p->proto->n_output || !p->proto->output[slot][0])
        return NULL;
    return ir_find_value(ox_importer_graph(im), p->proto->output[slot])->producer;
}

static bool mha_fix(ox_importer *im, void *ctx);

/* Y = Reshape(att, [0, 0, -1]) into the node that carries Y. */
static void merge_heads(ox_importer *im, ox_pending *p, ir_value *att)
{
    static const int64_t shape[] = {0, 0, -1};
    ir_graph *g = ox_importer_graph(im);
    ir_set_input(p->node, 0, att);
    ir_set_input(p->node, 1,
                 i64s(im, ar_printf(g->arena, "%s_shape", p->node->outputs[0]->name), shape, 3));
}

static ir_node *attention_node(ox_importer *im, const char *stem, ir_value *const qkv[3],
                               const mha_attrs *a, const char *layout)
{
    ir_graph *g = ox_importer_graph(im);
    ir_node *att = add(im, IR_OP_Attention, stem, 3, qkv, 1);
    ir_set_attr_string(g, att, "layout", layout);
    if (a->unidirectional)
        ir_set_attr_int(g, att, "causal", 1);
    if (a->scale != 0)
        ir_set_attr_float(g, att, "scale", a->scale);
    return att;
}

/* A KV cache: Q, K and V (in heads, BSHD) transposed to BHSD, the cache's keys and values
 * [B, H, P, D] put before the new ones along the sequence. heads[] becomes the BHSD operands. */
static void append_to_cache(ox_importer *im, const char *stem, ir_value *heads[3], ir_value *past_k,
                            ir_value *past_v)
{
    ir_graph *g = ox_importer_graph(im);
    for (int i = 0; i < 3; i++)
        heads[i] = transpose_heads(im, ar_printf(g->arena, "%s/%c_bhsd", stem, "qkv"[i]), heads[i]);
    ir_value *past[] = {past_k, past_v};
    for (int i = 0; i < 2; i++) {
        ir_value *in[] = {past[i], heads[1 + i]};
        ir_node *cat =
            add(im, IR_OP_Concat, ar_printf(g->arena, "%s/%c_total", stem, "kv"[i]), 2, in, 1);
        ir_set_attr_int(g, cat, "axis", 2);
        heads[1 + i] = cat->outputs[0];
    }
}

/* The Attention node over the operands, its result in BSHD heads. */
static ir_node *attend(ox_importer *im, const char *stem, ir_value *const heads[3],
                       const mha_attrs *a, bool bhsd, ir_value **out)
{
    ir_graph *g = ox_importer_graph(im);
    ir_node *att = attention_node(im, ar_printf(g->arena, "%s/attention", stem), heads, a,
                                  bhsd ? "BHSD" : "BSHD");
    *out =
        bhsd ? transpose_heads(im, ar_printf(g->arena, "%s/attention_bshd", stem), att->outputs[0])
             : att->outputs[0];
    return att;
}

static bool import_attention(ox_importer *im, ox_pending *p, const mha_attrs *a, mha_fixup *fx)
{
    static const size_t cache[] = {6};
    ox_report *r = ox_importer_report(im);
    ir_graph *g = ox_importer_graph(im);
    if (!refuse_inputs(im, p, cache, 1, "past_sequence_length (a shared KV buffer)"))
        return false;
    ir_value *x, *w, *bias, *mask, *past, *abias;
    if (!ox_importer_input(im, p, 0, &x) || !ox_importer_input(im, p, 1, &w) ||
        !ox_importer_input(im, p, 2, &bias) || !ox_importer_input(im, p, 3, &mask) ||
        !ox_importer_input(im, p, 4, &past) || !ox_importer_input(im, p, 5, &abias))
        return false;
    if (!x || !w) {
        ox_invalid(r, "%s needs its input and weights", p->label);
        return false;
    }
    int64_t sizes[3];
    if (a->nsizes == 3) {
        memcpy(sizes, a->sizes, sizeof sizes);
    } else if (w->type->rank == 2 && ir_dim_is_static(w->type->dims[1]) &&
               w->type->dims[1] % 3 == 0) {
        sizes[0] = sizes[1] = sizes[2] = w->type->dims[1] / 3;
    } else {
        ox_unsupported(r,
                       "%s: the weights' width is not known at import and there is no "
                       "qkv_hidden_sizes",
                       p->label);
        return false;
    }
    if (sizes[0] != sizes[1] || sizes[0] <= 0 || sizes[2] <= 0 || sizes[0] % a->heads != 0 ||
        sizes[2] % a->heads != 0) {
        ox_invalid(r,
                   "%s: Q, K and V widths [%" PRId64 ", %" PRId64 ", %" PRId64 "] do not "
                   "split into %" PRId64 " heads (with Q and K alike)",
                   p->label, sizes[0], sizes[1], sizes[2], a->heads);
        return false;
    }
    const char *stem = p->node->outputs[0]->name;
    ir_value *in[] = {x, w, bias};
    ir_node *qkv = add(im, IR_OP_FusedQKV, ar_printf(g->arena, "%s/", stem), bias ? 3 : 2, in, 3);
    ir_set_attr_ints(g, qkv, "sizes", sizes, 3);
    ir_value *heads[3];
    for (int i = 0; i < 3; i++)
        heads[i] = split_heads(im, ar_printf(g->arena, "%s/%c4", stem, "qkv"[i]), qkv->outputs[i],
                               a->heads)
                       ->outputs[0];
    if (past) { /* [2, B, H, P, D]: its keys and values before the new ones */
        ir_value *cache_kv[2];
        for (int i = 0; i < 2; i++) {
            int64_t index = i;
            ir_value *gin[] = {
                past, ox_const_i64(im, ar_printf(g->arena, "%s/past_%c_index", stem, "kv"[i]),
                                   &index, 1, true)};
            cache_kv[i] =
                add1(im, IR_OP_Gather, ar_printf(g->arena, "%s/past_%c", stem, "kv"[i]), 2, gin);
        }
        append_to_cache(im, stem, heads, cache_kv[0], cache_kv[1]);
    }
    ir_value *y;
    ir_node *att = attend(im, stem, heads, a, past != NULL, &y);
    if (abias)
        set_input_at(im, att, 3, abias);
    merge_heads(im, p, y);
    ir_node *present = output_node(im, p, 1);
    if (present) { /* [2, B, H, T, D]: K and V in heads, stacked */
        static const int64_t zero[] = {0};
        for (int i = 0; i < 2; i++) {
            ir_value *t =
                past ? heads[1 + i]
                     : transpose_heads(im, ar_printf(g->arena, "%s/%c_bnsh", stem, "kv"[i]),
                                       heads[1 + i]);
            ir_value *uin[] = {t, i64s(im, ar_printf(g->arena, "%s/axes", stem), zero, 1)};
            ir_set_input(present, (uint32_t)i,
                         add1(im, IR_OP_Unsqueeze,
                              ar_printf(g->arena, "%s/%c_1bnsh", stem, "kv"[i]), 2, uin));
        }
        ir_set_attr_int(g, present, "axis", 0);
    }
    *fx = (mha_fixup){.kind = KIND_ATTENTION,
                      .label = p->label,
                      .attention = att,
                      .x = x,
                      .mask = mask,
                      .past = past,
                      .filter = a->filter};
    return true;
}

static bool import_mha(ox_importer *im, ox_pending *p, const mha_attrs *a, mha_fixup *fx)
{
    static const size_t cache[] = {8, 9};
    ox_report *r = ox_importer_report(im);
    ir_graph *g = ox_importer_graph(im);
    if (!refuse_inputs(im, p, cache, 2,
                       "past_sequence_length or cache_indirection (a shared KV buffer, beam "
                       "search)"))
        return false;
    ir_value *q, *k, *v, *bias, *mask, *abias, *past_k, *past_v;
    if (!ox_importer_input(im, p, 0, &q) || !ox_importer_input(im, p, 1, &k) ||
        !ox_importer_input(im, p, 2, &v) || !ox_importer_input(im, p, 3, &bias) ||
        !ox_importer_input(im, p, 4, &mask) || !ox_importer_input(im, p, 5, &abias) ||
        !ox_importer_input(im, p, 6, &past_k) || !ox_importer_input(im, p, 7, &past_v))
        return false;
    if (!past_k != !past_v) {
        ox_invalid(r, "%s has one of past_key and past_value without the other", p->label);
        return false;
    }
    if (!q || !k || !v) {
        ox_unsupported(r,
                       "%s: packed QKV or KV (no key or value input) is outside what the "
                       "catalog's Attention expresses",
                       p->label);
        return false;
    }
    /* a graph input or constant has its rank now; anything else is checked after validation */
    bool in_heads = k->type->rank == 4 && v->type->rank == 4;
    if (in_heads && past_k) {
        ox_unsupported(r,
                       "%s: a KV cache with key and value already in heads [B, H, T, D] is "
                       "outside what import converts",
                       p->label);
        return false;
    }
    const char *stem = p->node->outputs[0]->name;
    ir_value *heads[3];
    ir_node *reshape[3] = {0};
    ir_value *in[] = {q, k, v};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && in_heads) { /* read in BHSD as they are */
            heads[i] = in[i];
            continue;
        }
        reshape[i] =
            split_heads(im, ar_printf(g->arena, "%s/%c4", stem, "qkv"[i]), in[i], a->heads);
        heads[i] = reshape[i]->outputs[0];
    }
    if (in_heads) /* the query joins them in BHSD: one transpose of [B, S, H, D], a view when S
                   * is 1 (a decoder step), instead of one of each cache */
        heads[0] = transpose_heads(im, ar_printf(g->arena, "%s/q_bhsd", stem), heads[0]);
    if (past_k)
        append_to_cache(im, stem, heads, past_k, past_v);
    ir_value *y;
    ir_node *att = attend(im, stem, heads, a, past_k != NULL || in_heads, &y);
    if (abias)
        set_input_at(im, att, 3, abias);
    merge_heads(im, p, y);
    for (int i = 0; i < 2; i++) {
        ir_node *present = output_node(im, p, (size_t)(1 + i));
        if (!present)
            continue;
        if (in_heads || past_k) { /* the cache that came in, or the cache and the new */
            present->op = IR_OP_Identity;
            ir_set_input(present, 0, past_k ? heads[1 + i] : in[1 + i]);
        } else {
            static const int64_t perm[] = {0, 2, 1, 3};
            ir_set_input(present, 0, heads[1 + i]);
            ir_set_attr_ints(g, present, "perm", perm, 4);
        }
    }
    *fx = (mha_fixup){.kind = KIND_MHA,
                      .label = p->label,
                      .attention = att,
                      .x = q,
                      .mask = mask,
                      .bias = bias,
                      .key_in_heads = in_heads,
                      .filter = a->filter};
    memcpy(fx->reshape, reshape, sizeof reshape);
    fx->kv[0] = k;
    fx->kv[1] = v;
    return true;
}

bool ox_contrib_attention_import(ox_importer *im, ox_pending *p)
{
    mha_kind kind =
        strcmp(p->proto->op_type, "MultiHeadAttention") == 0 ? KIND_MHA : KIND_ATTENTION;
    mha_attrs a;
    if (!read_attrs(im, p, kind, &a))
        return false;
    mha_fixup *fx = ar_alloc(ox_importer_graph(im)->arena, sizeof *fx);
    bool ok = kind == KIND_MHA ? import_mha(im, p, &a, fx) : import_attention(im, p, &a, fx);
    if (ok)
        ox_importer_after_validation(im, mha_fix, fx);
    return ok;
}

/* ---- after validation: ranks, the bias split, the mask -------------------------------------- */

static bool need_rank(ox_importer *im, const mha_fixup *fx, const ir_value *v, int rank,
                      const char *what)
{
    if (v->type->rank == rank)
        return true;
    ox_unsupported(ox_importer_report(im), "%s: %s '%s' has rank %d; import converts rank %d",
                   fx->label, what, v->name, v->type->rank, rank);
    return false;
}

/* MHA's bias [hq + hk + hv]: its thirds added to q, k and v before their head reshapes. */
static bool split_bias(ox_importer *im, mha_fixup *fx)
{
    ir_graph *g = ox_importer_graph(im);
    int64_t widths[3], start = 0;
    for (int i = 0; i < 3; i++) {
        /* key and value already in heads [B, H, T, D] are H * D wide */
        const ir_type *t = fx->reshape[i] ? fx->reshape[i]->inputs[0]->type : fx->kv[i - 1]->type;
        widths[i] = t->rank == 3 ? t->dims[2]
                    : t->rank == 4 && ir_dim_is_static(t->dims[1]) && ir_dim_is_static(t->dims[3])
                        ? t->dims[1] * t->dims[3]
                        : IR_DIM_UNKNOWN;
        if (!ir_dim_is_static(widths[i])) {
            ox_unsupported(ox_importer_report(im),
                           "%s: the bias needs the widths of query, key and value, which are "
                           "not static",
                           fx->label);
            return false;
        }
    }
    const ir_type *bt = fx->bias->type;
    if (bt->rank != 1 || bt->dims[0] != widths[0] + widths[1] + widths[2]) {
        ox_invalid(ox_importer_report(im),
                   "%s: bias '%s' must be a vector of %" PRId64 " (query, key and value widths)",
                   fx->label, fx->bias->name, widths[0] + widths[1] + widths[2]);
        return false;
    }
    for (int i = 0; i < 3; i++) {
        const char *stem = ar_printf(g->arena, "%s_%c", fx->bias->name, "qkv"[i]);
        int64_t from = start, to = start + widths[i];
        start = to;
        if (!fx->reshape[i])
            continue; /* ONNX Runtime adds no bias to keys and values that come in heads */
        ir_value *sin[] = {fx->bias, i64s(im, ar_printf(g->arena, "%s_start", stem), &from, 1),
                           i64s(im, ar_printf(g->arena, "%s_end", stem), &to, 1)};
        ir_value *part = add1(im, IR_OP_Slice, stem, 3, sin);
        ir_value *ain[] = {fx->reshape[i]->inputs[0], part};
        ir_set_input(
            fx->reshape[i], 0,
            add1(im, IR_OP_Add, ar_printf(g->arena, "%s_plus_bias", ain[0]->name), 2, ain));
    }
    return true;
}

/* Dims [from, from + 1) of v's shape: a one-element i64 vector. */
static ir_value *dim_of(ox_importer *im, const char *stem, ir_value *v, int64_t from)
{
    ir_graph *g = ox_importer_graph(im);
    int64_t to = from + 1;
    ir_value *sin[] = {add1(im, IR_OP_Shape, ar_printf(g->arena, "%s_shape", stem), 1, &v),
                       i64s(im, ar_printf(g->arena, "%s_from", stem), &from, 1),
                       i64s(im, ar_printf(g->arena, "%s_to", stem), &to, 1)};
    return add1(im, IR_OP_Slice, stem, 3, sin);
}

/* Megatron's 4-D mask [B, 1, M, M] (M the longest sequence): query s of S new tokens after P
 * cached ones reads row P + s, keys 0 .. P + S - 1 (ONNX Runtime's CUDA kernel; its CPU kernel
 * has none). Returns the rows and keys used, [B, 1, S, P + S]. */
static ir_value *megatron_rows(ox_importer *im, mha_fixup *fx)
{
    ir_graph *g = ox_importer_graph(im);
    const char *stem = fx->mask->name;
    static const int64_t zero[] = {0}, axes[] = {2, 3};
    ir_value *s = dim_of(im, ar_printf(g->arena, "%s_queries", stem), fx->x, 1);
    ir_value *p = fx->past ? dim_of(im, ar_printf(g->arena, "%s_cached", stem), fx->past, 3)
                           : i64s(im, ar_printf(g->arena, "%s_cached", stem), zero, 1);
    ir_value *tin[] = {p, s};
    ir_value *t = add1(im, IR_OP_Add, ar_printf(g->arena, "%s_keys", stem), 2, tin);
    ir_value *bin[] = {p, i64s(im, ar_printf(g->arena, "%s_first_key", stem), zero, 1)};
    ir_value *ein[] = {t, t};
    ir_node *begin = add(im, IR_OP_Concat, ar_printf(g->arena, "%s_starts", stem), 2, bin, 1);
    ir_node *end = add(im, IR_OP_Concat, ar_printf(g->arena, "%s_ends", stem), 2, ein, 1);
    ir_set_attr_int(g, begin, "axis", 0);
    ir_set_attr_int(g, end, "axis", 0);
    ir_value *sin[] = {fx->mask, begin->outputs[0], end->outputs[0],
                       i64s(im, ar_printf(g->arena, "%s_axes", stem), axes, 2)};
    return add1(im, IR_OP_Slice, ar_printf(g->arena, "%s_rows", stem), 4, sin);
}

/* The raw mask: a 2-D [B, T] mask (a key whose entry is not > 0 is masked) is Attention's
 * key_mask, with mask_filter_value; Megatron's 4-D mask (an entry of 0 is masked) at the rows and
 * keys of megatron_rows becomes scores to add, plus attention_bias when there is one. */
static bool build_mask(ox_importer *im, mha_fixup *fx)
{
    ir_graph *g = ox_importer_graph(im);
    const ir_type *mt = fx->mask->type;
    bool megatron = mt->rank == 4 && fx->kind == KIND_ATTENTION;
    if ((mt->rank != 2 && !megatron) || (mt->dtype != IR_I32 && mt->dtype != IR_I64)) {
        ox_unsupported(ox_importer_report(im),
                       "%s: mask '%s' is %s of rank %d; import converts ONNX Runtime's 2-D "
                       "[batch, keys] raw mask and Attention's 4-D Megatron mask (int32) only",
                       fx->label, fx->mask->name, ir_dtype_name(mt->dtype), mt->rank);
        return false;
    }
    if (megatron && ((ir_dim_is_static(mt->dims[1]) && mt->dims[1] != 1) ||
                     !ir_dim_is_static(mt->dims[2]) || mt->dims[2] != mt->dims[3])) {
        ox_invalid(ox_importer_report(im),
                   "%s: 4-D mask '%s' must be [batch, 1, max_sequence_length, "
                   "max_sequence_length]",
                   fx->label, fx->mask->name);
        return false;
    }
    ir_node *att = fx->attention;
    if (!megatron) { /* Attention reads the raw mask itself: its key_mask */
        set_input_at(im, att, 6, fx->mask);
        if (fx->filter != -10000.0)
            ir_set_attr_float(g, att, "mask_filter_value", fx->filter);
        return true;
    }
    const char *stem = fx->mask->name;
    ir_dtype dt = fx->x->type->dtype;
    ir_value *gin[] = {megatron_rows(im, fx),
                       ox_const_scalar(im, ar_printf(g->arena, "%s_zero", stem), mt->dtype, 0)};
    ir_value *masked = add1(im, IR_OP_Equal, ar_printf(g->arena, "%s_masked", stem), 2, gin);
    ir_value *open = ox_const_scalar(im, ar_printf(g->arena, "%s_open", stem), dt, 0);
    ir_value *filter = ox_const_scalar(im, ar_printf(g->arena, "%s_filter", stem), dt, fx->filter);
    ir_value *win[] = {masked, filter, open};
    ir_value *add_mask = add1(im, IR_OP_Where, ar_printf(g->arena, "%s_scores", stem), 3, win);
    if (att->ninputs > 3 && att->inputs[3]) {
        ir_value *ain[] = {att->inputs[3], add_mask};
        add_mask = add1(im, IR_OP_Add, ar_printf(g->arena, "%s_with_bias", stem), 2, ain);
    }
    set_input_at(im, att, 3, add_mask);
    return true;
}

static bool mha_fix(ox_importer *im, void *ctx)
{
    mha_fixup *fx = ctx;
    if (!need_rank(im, fx, fx->x, 3, fx->kind == KIND_MHA ? "query" : "input"))
        return false;
    if (fx->kind == KIND_MHA && !fx->key_in_heads &&
        (!need_rank(im, fx, fx->reshape[1]->inputs[0], 3, "key") ||
         !need_rank(im, fx, fx->reshape[2]->inputs[0], 3, "value")))
        return false;
    if (fx->bias && !split_bias(im, fx))
        return false;
    return !fx->mask || build_mask(im, fx);
}
