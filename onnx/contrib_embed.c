/* com.microsoft EmbedLayerNormalization, imported as the catalog ops that compute it:
 *
 *   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
 *                           segment_embedding?, gamma, beta, mask?, position_ids?)
 *                          {epsilon = 1e-12, mask_index_type}
 *       -> output, mask_index?, embedding_sum?
 *     sum = Gather(word_embedding, input_ids) + Gather(position_embedding, positions)
 *           (+ Gather(segment_embedding, segment_ids)), added in that order as ONNX Runtime does;
 *           positions = position_ids ([B, S] or [1, S]), or 0 .. S-1 when absent
 *     output = LayerNormalization(sum, gamma, beta) {axis = -1, epsilon}
 *     embedding_sum = sum
 *     mask_index = the count of mask entries equal to 1 in each row (int32 [B]), as ONNX Runtime's
 *                  CPU kernel counts them; zeros without a mask
 *
 * mask_index_type selects the CUDA kernel's mask layout; the CPU kernel, whose results these are,
 * reads none, so any value is accepted. ONNX Runtime refuses ids outside the tables at run time;
 * Gather reads a negative id from the end. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <math.h>
#include <string.h>

enum { IDS, SEGMENT_IDS, WORDS, POSITIONS, SEGMENTS, GAMMA, BETA, MASK, POSITION_IDS, NINPUTS };

static const double ort_epsilon = 1e-12; /* ONNX Runtime's default for this op */

static bool read_epsilon(ox_importer *im, ox_pending *p, double *epsilon)
{
    *epsilon = ort_epsilon;
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        const char *name = a->name ? a->name : "";
        if (strcmp(name, "epsilon") == 0 && a->has_type &&
            a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT && isfinite(a->f) && a->f >= 0)
            *epsilon = ox_float_to_double(a->f);
        else if (strcmp(name, "mask_index_type") == 0 && a->has_type &&
                 a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
            continue;
        else {
            ox_unsupported(ox_importer_report(im),
                           "%s: attribute '%s' (this value) is outside what "
                           "EmbedLayerNormalization's import expresses",
                           p->label, name);
            return false;
        }
    }
    return true;
}

static ir_value *gather(ox_importer *im, const char *stem, ir_value *table, ir_value *ids)
{
    ir_value *in[] = {table, ids};
    return ox_build1(im, IR_OP_Gather, stem, 2, in);
}

/* The rows 0 .. S-1 of the position table, S = input_ids' second dim. */
static ir_value *default_positions(ox_importer *im, const char *stem, ir_value *table,
                                   ir_value *ids)
{
    ir_graph *g = ox_importer_graph(im);
    ir_value *shape =
        ox_build1(im, IR_OP_Shape, ar_printf(g->arena, "%s/ids_shape", stem), 1, &ids);
    int64_t one = 1, zero = 0;
    ir_value *gin[] = {shape,
                       ox_const_i64(im, ar_printf(g->arena, "%s/seq_axis", stem), &one, 1, true)};
    ir_value *len = ox_build1(im, IR_OP_Gather, ar_printf(g->arena, "%s/seq_len", stem), 2, gin);
    ir_value *rin[] = {ox_const_i64(im, ar_printf(g->arena, "%s/start", stem), &zero, 1, true), len,
                       ox_const_i64(im, ar_printf(g->arena, "%s/step", stem), &one, 1, true)};
    ir_value *range = ox_build1(im, IR_OP_Range, ar_printf(g->arena, "%s/positions", stem), 3, rin);
    return gather(im, ar_printf(g->arena, "%s/position_rows", stem), table, range);
}

/* mask_index: per row, how many mask entries are 1; zeros of [B] without a mask. */
static void mask_index(ox_importer *im, const char *stem, ir_node *out, ir_value *mask,
                       ir_value *ids)
{
    ir_graph *g = ox_importer_graph(im);
    if (!mask) {
        ir_value *shape =
            ox_build1(im, IR_OP_Shape, ar_printf(g->arena, "%s/ids_shape", stem), 1, &ids);
        int64_t zero = 0, one = 1;
        ir_value *sin[] = {shape,
                           ox_const_i64(im, ar_printf(g->arena, "%s/b0", stem), &zero, 1, false),
                           ox_const_i64(im, ar_printf(g->arena, "%s/b1", stem), &one, 1, false)};
        ir_value *batch = ox_build1(im, IR_OP_Slice, ar_printf(g->arena, "%s/batch", stem), 3, sin);
        ox_become(im, out, IR_OP_ConstantOfShape, 1, &batch);
        ir_set_attr_int(g, out, "dtype", ox_dtype_to_onnx(IR_I32));
        return;
    }
    ir_value *one = ox_cast_like(
        im, ar_printf(g->arena, "%s/one", stem),
        ox_const_i64(im, ar_printf(g->arena, "%s/one_i64", stem), (const int64_t[]){1}, 1, true),
        mask);
    ir_value *is_one =
        ox_binary(im, IR_OP_Equal, ar_printf(g->arena, "%s/is_one", stem), mask, one);
    ir_value *count = ox_cast(im, ar_printf(g->arena, "%s/ones", stem), is_one, IR_I32);
    static const int64_t axis[] = {1};
    ir_value *rin[] = {count,
                       ox_const_i64(im, ar_printf(g->arena, "%s/axes", stem), axis, 1, false)};
    ox_become(im, out, IR_OP_ReduceSum, 2, rin);
    ir_set_attr_int(g, out, "keepdims", 0);
}

bool ox_contrib_embed_import(ox_importer *im, ox_pending *p)
{
    ox_report *r = ox_importer_report(im);
    ir_graph *g = ox_importer_graph(im);
    if (p->proto->n_input > NINPUTS) {
        ox_invalid(r, "%s has %zu inputs; EmbedLayerNormalization takes at most %d", p->label,
                   p->proto->n_input, NINPUTS);
        return false;
    }
    ir_value *in[NINPUTS];
    for (size_t k = 0; k < NINPUTS; k++)
        if (!ox_importer_input(im, p, k, &in[k]))
            return false;
    if (!in[IDS] || !in[WORDS] || !in[POSITIONS] || !in[GAMMA]) {
        ox_invalid(r, "%s needs input_ids, word_embedding, position_embedding and gamma", p->label);
        return false;
    }
    if (in[SEGMENT_IDS] && !in[SEGMENTS]) { /* (a table without ids is unread, as in ORT) */
        ox_invalid(r, "%s has segment_ids but no segment_embedding", p->label);
        return false;
    }
    double epsilon;
    if (!read_epsilon(im, p, &epsilon))
        return false;
    const char *stem = p->node->outputs[0]->name;
    ir_value *terms[3] = {
        gather(im, ar_printf(g->arena, "%s/words", stem), in[WORDS], in[IDS]),
        in[POSITION_IDS] ? gather(im, ar_printf(g->arena, "%s/position_rows", stem), in[POSITIONS],
                                  in[POSITION_IDS])
                         : default_positions(im, stem, in[POSITIONS], in[IDS]),
        in[SEGMENT_IDS]
            ? gather(im, ar_printf(g->arena, "%s/segments", stem), in[SEGMENTS], in[SEGMENT_IDS])
            : NULL};
    int nterms = terms[2] ? 3 : 2;
    ir_value *sum = terms[0];
    for (int k = 1; k < nterms - 1; k++)
        sum = ox_binary(im, IR_OP_Add, ar_printf(g->arena, "%s/sum%d", stem, k), sum, terms[k]);
    /* the last Add carries embedding_sum when the model reads it */
    ir_value *last[] = {sum, terms[nterms - 1]};
    ir_node *sum_out = ox_output_node(im, p, 2);
    if (sum_out) {
        ox_become(im, sum_out, IR_OP_Add, 2, last);
        sum = sum_out->outputs[0];
    } else {
        sum = ox_build1(im, IR_OP_Add, ar_printf(g->arena, "%s/embedding_sum", stem), 2, last);
    }
    ir_node *y = ox_output_node(im, p, 0);
    if (y) {
        ir_value *lin[] = {sum, in[GAMMA], in[BETA]};
        ox_become(im, y, IR_OP_LayerNormalization, 3, lin);
        ir_set_attr_int(g, y, "axis", -1);
        if (epsilon != ir_op_attr_schema(IR_OP_LayerNormalization, "epsilon")->f)
            ir_set_attr_float(g, y, "epsilon", epsilon);
    }
    ir_node *mi = ox_output_node(im, p, 1);
    if (mi)
        mask_index(im, ar_printf(g->arena, "%s/mask_index", stem), mi, in[MASK], in[IDS]);
    return true;
}
