/* Subgraphs made by import: an ONNX node that has no catalog op of its own (com.microsoft's
 * dropout ops, EmbedLayerNormalization, FusedMatMul forms GemmEpilogue cannot hold) becomes the
 * catalog ops that compute it. The nodes that carry the ONNX outputs keep their names; the nodes
 * in between get fresh names from a stem, so that `fuserule import` shows where they came from. */
#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "ir/infer_util.h"

#include <math.h>
#include <string.h>

ir_node *ox_build(ox_importer *im, ir_op op, const char *stem, uint32_t nin, ir_value *const *in,
                  uint32_t nout)
{
    ir_graph *g = ox_importer_graph(im);
    const char *names[4];
    FR_CHECK(nout >= 1 && nout <= 4);
    for (uint32_t i = 0; i < nout; i++)
        names[i] = ir_fresh_name(g, nout == 1 ? stem : ar_printf(g->arena, "%s_%u", stem, i));
    ir_node *n = ir_add_node(g, op, nin, names, nout);
    FR_CHECK(n != NULL); /* the names are fresh */
    for (uint32_t i = 0; i < nin; i++)
        ir_set_input(n, i, in[i]);
    return n;
}

ir_value *ox_build1(ox_importer *im, ir_op op, const char *stem, uint32_t nin, ir_value *const *in)
{
    return ox_build(im, op, stem, nin, in, 1)->outputs[0];
}

void ox_become(ox_importer *im, ir_node *n, ir_op op, uint32_t nin, ir_value *const *in)
{
    ir_graph *g = ox_importer_graph(im);
    n->op = op;
    n->nattrs = 0;
    n->attrs = NULL;
    n->ninputs = nin;
    n->inputs = nin ? ar_alloc_array(g->arena, nin, sizeof *n->inputs) : NULL;
    for (uint32_t i = 0; i < nin; i++)
        ir_set_input(n, i, in[i]);
}

ir_node *ox_output_node(ox_importer *im, const ox_pending *p, size_t slot)
{
    if (slot >= p->proto->n_output || !p->proto->output[slot][0])
        return NULL;
    return ir_find_value(ox_importer_graph(im), p->proto->output[slot])->producer;
}

bool ox_const_number(ox_importer *im, ir_value *v, double *out)
{
    int64_t n;
    if (!v || v->kind != IR_VALUE_CONST || !ir_type_numel(v->type, &n) || n != 1)
        return false;
    const void *data = ir_const_data_or_null(ox_importer_graph(im), v);
    if (!data)
        return false;
    *out = ir_const_element(data, v->type->dtype, 0);
    return true;
}

ir_value *ox_cast(ox_importer *im, const char *stem, ir_value *x, ir_dtype to)
{
    ir_node *c = ox_build(im, IR_OP_Cast, stem, 1, &x, 1);
    ir_set_attr_int(ox_importer_graph(im), c, "to", ox_dtype_to_onnx(to));
    return c->outputs[0];
}

/* A graph input's or constant's element type is known at import; a node's only after validation,
 * so the cast to it is a CastLike then. */
ir_value *ox_cast_like(ox_importer *im, const char *stem, ir_value *x, ir_value *like)
{
    if (like->kind != IR_VALUE_NODE)
        return ox_cast(im, stem, x, like->type->dtype);
    ir_value *in[] = {x, like};
    return ox_build1(im, IR_OP_CastLike, stem, 2, in);
}

ir_value *ox_number_like(ox_importer *im, const char *stem, double value, ir_value *like)
{
    if (like->kind != IR_VALUE_NODE)
        return ox_const_scalar(im, stem, like->type->dtype, value);
    return ox_cast_like(im, stem, ox_const_f32(im, stem, value), like);
}

ir_value *ox_binary(ox_importer *im, ir_op op, const char *stem, ir_value *a, ir_value *b)
{
    ir_value *in[] = {a, b};
    return ox_build1(im, op, stem, 2, in);
}
