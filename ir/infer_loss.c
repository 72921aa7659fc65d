/* Type inference of LogSoftmax and Hardmax (Softmax's: one axis, opset 13) and of the
 * classification losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. */
#include "ir/infer_util.h"

#include <string.h>

static bool along_axis(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT))
        return false;
    const ir_type *x = ir_in(n, 0);
    int axis;
    if (x->rank >= 0 && !ir_norm_axis(g, n, dg, ir_get_int(n, "axis"), x->rank, "axis", &axis))
        return false;
    ir_value_set_type(g, n->outputs[0], x);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_LogSoftmax(ir_graph *g, ir_node *n, dg_context *dg)
{
    return along_axis(g, n, dg);
}
bool ir_infer_Hardmax(ir_graph *g, ir_node *n, dg_context *dg)
{
    return along_axis(g, n, dg);
}

/* (input [N, C, d...] float, target [N, d...] index, weight [C]?) -> the loss: target's shape
 * with reduction "none", else a scalar; SoftmaxCrossEntropyLoss' optional log_prob has input's
 * type. */
static bool loss(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT) ||
        !ir_check_dtype(g, n, dg, 1, IR_DTS_INDEX) || !ir_check_same_dtype(g, n, dg, 0, 2) ||
        !ir_check_rank(g, n, dg, 0, 2, IR_MAX_RANK) || !ir_check_rank(g, n, dg, 2, 1, 1))
        return false;
    const char *reduction = ir_get_string(n, "reduction");
    bool none = strcmp(reduction, "none") == 0;
    if (!none && strcmp(reduction, "sum") != 0 && strcmp(reduction, "mean") != 0)
        return ir_node_error(g, n, dg, "reduction \"%s\" is not none, sum or mean", reduction);
    const ir_type *x = ir_in(n, 0), *t = ir_in(n, 1), *w = ir_in(n, 2);
    ir_type y = ir_type_unknown(x->dtype, none ? t->rank : 0);
    if (x->rank >= 0 && t->rank >= 0) {
        bool ok = t->rank == x->rank - 1;
        for (int i = 0; ok && i < t->rank; i++)
            ok = ir_dim_unify(x->dims[i == 0 ? 0 : i + 1], t->dims[i], &y.dims[i]);
        if (!ok)
            return ir_node_error(g, n, dg,
                                 "target %s does not fit input %s (N and the dims "
                                 "after C)",
                                 ir_shape_str(g, t), ir_shape_str(g, x));
        int64_t d;
        if (w && w->rank == 1 && !ir_dim_unify(w->dims[0], x->dims[1], &d))
            return ir_node_error(g, n, dg, "weight has %lld values; the input has %lld classes",
                                 (long long)w->dims[0], (long long)x->dims[1]);
    }
    if (!none)
        y.rank = 0;
    ir_value_set_type(g, n->outputs[0], &y);
    if (n->noutputs > 1)
        ir_value_set_type(g, n->outputs[1], x);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_NegativeLogLikelihoodLoss(ir_graph *g, ir_node *n, dg_context *dg)
{
    return loss(g, n, dg);
}

bool ir_infer_SoftmaxCrossEntropyLoss(ir_graph *g, ir_node *n, dg_context *dg)
{
    return loss(g, n, dg);
}
