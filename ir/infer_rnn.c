/* Type inference of the recurrent layers RNN, GRU and LSTM.
 *
 * X is [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1); W [dirs, gates*H, input],
 * R [dirs, gates*H, H], B [dirs, 2*gates*H], sequence_lens (i32) [batch], initial_h (and LSTM's
 * initial_c) [dirs, batch, H] (batch first with layout 1), LSTM's P [dirs, 3*H]; gates is 1, 3
 * or 4 and dirs 2 for bidirectional. Outputs: Y [seq, dirs, batch, H] (layout 1:
 * [batch, seq, dirs, H]) and Y_h (LSTM also Y_c) [dirs, batch, H] (layout 1: [batch, dirs, H]). */
#include "ir/infer_util.h"

#include <string.h>

/* t's dim i must be `want` (when both are known). */
static bool dim_is(ir_graph *g, const ir_node *n, dg_context *dg, uint32_t i, int k, int64_t want,
                   const char *what)
{
    const ir_type *t = ir_in(n, i);
    int64_t d;
    if (!t || t->rank <= k || ir_dim_unify(t->dims[k], want, &d))
        return true;
    return ir_node_error(g, n, dg, "%s %s has %lld at dim %d; expected %lld", what,
                         ir_input_name(g, n, i), (long long)t->dims[k], k, (long long)want);
}

static bool recurrent(ir_graph *g, ir_node *n, dg_context *dg, int gates)
{
    if (!ir_check_arity(g, n, dg) || !ir_check_dtype(g, n, dg, 0, IR_DTS_FLOAT))
        return false;
    static const int ranks[8] = {3, 3, 3, 2, 1, 3, 3, 2};
    for (uint32_t i = 1; i < n->ninputs; i++) {
        if (i != 4 && !ir_check_same_dtype(g, n, dg, 0, i))
            return false;
        if (!ir_check_rank(g, n, dg, i, ranks[i], ranks[i]))
            return false;
    }
    if (!ir_check_dtype(g, n, dg, 4, IR_DT(IR_I32)) || !ir_check_rank(g, n, dg, 0, 3, 3))
        return false;
    const char *dir = ir_get_string(n, "direction");
    int64_t dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0)
        return ir_node_error(g, n, dg, "direction \"%s\" is not forward, reverse or bidirectional",
                             dir);
    int64_t layout = ir_get_int(n, "layout");
    if (layout != 0 && layout != 1)
        return ir_node_error(g, n, dg, "layout %lld is not 0 or 1", (long long)layout);
    if (ir_get_float(n, "clip") < 0)
        return ir_node_error(g, n, dg, "clip %g is negative", ir_get_float(n, "clip"));
    const ir_type *x = ir_in(n, 0), *r = ir_in(n, 2);
    int64_t h = ir_get_int(n, "hidden_size");
    if (h < 0)
        return ir_node_error(g, n, dg, "hidden_size %lld is negative", (long long)h);
    if (h == 0)
        h = r->rank == 3 ? r->dims[2] : IR_DIM_UNKNOWN;
    int64_t seq = x->rank == 3 ? x->dims[layout] : IR_DIM_UNKNOWN;
    int64_t batch = x->rank == 3 ? x->dims[1 - layout] : IR_DIM_UNKNOWN;
    int64_t input = x->rank == 3 ? x->dims[2] : IR_DIM_UNKNOWN;
    int64_t gh = ir_dim_mul(g, h, gates);
    if (!dim_is(g, n, dg, 1, 0, dirs, "W") || !dim_is(g, n, dg, 1, 1, gh, "W") ||
        !dim_is(g, n, dg, 1, 2, input, "W") || !dim_is(g, n, dg, 2, 0, dirs, "R") ||
        !dim_is(g, n, dg, 2, 1, gh, "R") || !dim_is(g, n, dg, 2, 2, h, "R") ||
        !dim_is(g, n, dg, 3, 0, dirs, "B") || !dim_is(g, n, dg, 3, 1, ir_dim_mul(g, gh, 2), "B") ||
        !dim_is(g, n, dg, 4, 0, batch, "sequence_lens") || !dim_is(g, n, dg, 7, 0, dirs, "P") ||
        !dim_is(g, n, dg, 7, 1, ir_dim_mul(g, h, 3), "P"))
        return false;
    for (uint32_t i = 5; i <= 6; i++)
        if (!dim_is(g, n, dg, i, (int)layout, dirs, "the initial state") ||
            !dim_is(g, n, dg, i, (int)(1 - layout), batch, "the initial state") ||
            !dim_is(g, n, dg, i, 2, h, "the initial state"))
            return false;
    ir_type y = ir_type_unknown(x->dtype, 4), state = ir_type_unknown(x->dtype, 3);
    int64_t ydims[2][4] = {{seq, dirs, batch, h}, {batch, seq, dirs, h}};
    int64_t sdims[2][3] = {{dirs, batch, h}, {batch, dirs, h}};
    memcpy(y.dims, ydims[layout], sizeof ydims[0]);
    memcpy(state.dims, sdims[layout], sizeof sdims[0]);
    ir_value_set_type(g, n->outputs[0], &y);
    for (uint32_t k = 1; k < n->noutputs; k++)
        ir_value_set_type(g, n->outputs[k], &state);
    return ir_infer_done(g, n, dg);
}

bool ir_infer_RNN(ir_graph *g, ir_node *n, dg_context *dg)
{
    return recurrent(g, n, dg, 1);
}
bool ir_infer_GRU(ir_graph *g, ir_node *n, dg_context *dg)
{
    return recurrent(g, n, dg, 3);
}
bool ir_infer_LSTM(ir_graph *g, ir_node *n, dg_context *dg)
{
    return recurrent(g, n, dg, 4);
}
