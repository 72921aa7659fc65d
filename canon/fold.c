/* Constant folding (docs/canon.md, "Constant folding"): a node whose inputs are all constants is
 * run once on the CPU reference kernels, alone in a graph of its own, in its own dtypes, and its
 * outputs become constants with the same names. A Shape reads only the type of its input, so a
 * Shape of a value with static dims folds too; a CastLike reads only the dtype of its target, so a
 * CastLike of a constant folds whatever its target. A node whose outputs are larger than the budget, or
 * whose kernel fails, stays. */
#include "canon/internal.h"

#include "base/check.h"
#include "runtime/runtime.h"

#include <string.h>

/* Ops never folded: Dropout may be random; quantize/dequantize pairs are what the quantized rules
 * fuse (folding a DequantizeLinear of an int8 weight would turn it back into f32); Constant has
 * no inputs and nothing to fold. */
static const bool keep_op[IR_OP_COUNT] = {
    [IR_OP_Dropout] = true,
    [IR_OP_QuantizeLinear] = true,
    [IR_OP_DequantizeLinear] = true,
};

/* Ops that read only the type of input 0 (never its data). */
static const bool reads_type_only[IR_OP_COUNT] = {
    [IR_OP_Shape] = true,
};

/* Ops that read only the dtype of input 1 (never its data nor its shape): CastLike of a constant
 * folds whatever the target's shape. */
static const bool reads_dtype_of_1[IR_OP_COUNT] = {
    [IR_OP_CastLike] = true,
};

static bool foldable(const cn_ctx *c, const ir_node *n)
{
    if (n->dead || keep_op[n->op] || n->ninputs == 0)
        return false;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const ir_value *v = n->inputs[k];
        if (!v || v->kind == IR_VALUE_CONST)
            continue;
        if (k == 1 && reads_dtype_of_1[n->op])
            continue;
        if (!(k == 0 && reads_type_only[n->op] && ir_type_is_static(v->type)))
            return false;
    }
    int64_t total = 0, bytes;
    for (uint32_t k = 0; k < n->noutputs; k++) {
        if (!ir_type_nbytes(n->outputs[k]->type, &bytes))
            return false;
        total += bytes;
    }
    return total <= c->opts->fold_budget;
}

/* Whether every reader of n's outputs (now constants) still infers its types: a model can be
 * wrong in a way only a known value shows (ONNX Runtime's reshape tests compute a shape that does
 * not fit their input, which nothing runs). Folding then stops there, so that canonicalization
 * never turns a graph that loads into one that does not. The readers' output types are restored:
 * validation after the round infers them again. */
static bool readers_accept(ir_graph *g, const ir_node *n)
{
    bool ok = true;
    for (uint32_t k = 0; k < n->noutputs && ok; k++) {
        const ir_value *v = n->outputs[k];
        for (uint32_t u = 0; u < v->nuses && ok; u++) {
            ir_node *reader = v->uses[u];
            if (reader->dead)
                continue;
            ir_type saved[8];
            uint32_t nsaved = reader->noutputs < 8 ? reader->noutputs : 8;
            for (uint32_t o = 0; o < nsaved; o++)
                saved[o] = *reader->outputs[o]->type;
            dg_context *dg = dg_new();
            ok = reader->noutputs <= 8 && ir_op_info_get(reader->op)->infer(g, reader, dg);
            dg_free(dg);
            for (uint32_t o = 0; o < nsaved; o++)
                ir_value_set_type(g, reader->outputs[o], &saved[o]);
        }
    }
    return ok;
}

/* Runs n alone; on success its outputs become constants holding the results. */
static bool fold(cn_ctx *c, ir_node *n)
{
    ir_graph *g = c->g;
    ir_graph *one = ir_graph_new("fold");
    dg_context *dg = dg_new();
    bool ok = true;
    const char **names = ar_alloc_array(one->arena, n->noutputs, sizeof *names);
    for (uint32_t k = 0; k < n->noutputs; k++)
        names[k] = n->outputs[k]->name;
    ir_node *copy = ir_add_node(one, n->op, n->ninputs, names, n->noutputs);
    FR_CHECK(copy != NULL);
    for (uint32_t k = 0; ok && k < n->ninputs; k++) {
        ir_value *v = n->inputs[k];
        if (!v)
            continue;
        ir_value *w = ir_find_value(one, v->name);
        if (!w && v->kind == IR_VALUE_CONST) {
            const void *data = ir_const_data(g, v, dg);
            int64_t nbytes;
            ok = data && ir_type_nbytes(v->type, &nbytes);
            w = ok ? ir_add_const(one, v->name, v->type, ir_const_new(one, IR_CONST_DATA)) : NULL;
            if (w)
                ir_const_set_data(one, w, data, (size_t)nbytes);
        } else if (!w && k == 1 && reads_dtype_of_1[n->op]) {
            /* read for its dtype only: a zero scalar of that dtype stands in */
            ir_type t = {.dtype = v->type->dtype, .rank = 0};
            static const unsigned char zero[16];
            int64_t nbytes;
            ok = ir_type_nbytes(&t, &nbytes) && nbytes <= (int64_t)sizeof zero;
            w = ok ? ir_add_const(one, v->name, &t, ir_const_new(one, IR_CONST_DATA)) : NULL;
            if (w)
                ir_const_set_data(one, w, zero, (size_t)nbytes);
        } else if (!w) {
            w = ir_add_input(one, v->name, v->type); /* read for its type only */
        }
        if (w)
            ir_set_input(copy, k, w);
    }
    for (uint32_t a = 0; a < n->nattrs; a++)
        ir_set_attr(one, copy, &n->attrs[a]);
    for (uint32_t k = 0; k < n->noutputs; k++)
        ir_add_output(one, copy->outputs[k]);
    rt_result r = {0};
    rt_options ro = {.seed = 0};
    ok = ok && ir_validate(one, dg) && rt_run_cpu(one, NULL, 0, &ro, &r, dg);
    for (uint32_t k = 0; ok && k < n->noutputs; k++)
        ok = ir_type_equal(&r.outputs[k].type, n->outputs[k]->type) ||
             (r.outputs[k].type.dtype == n->outputs[k]->type->dtype &&
              r.outputs[k].type.rank == n->outputs[k]->type->rank &&
              memcmp(r.outputs[k].type.dims, n->outputs[k]->type->dims,
                     sizeof(int64_t) *
                         (size_t)(r.outputs[k].type.rank > 0 ? r.outputs[k].type.rank : 0)) == 0);
    if (ok) {
        /* an output's shape value shares its place with the constant: kept for an undo */
        const ir_shape_value **svs = malloc((n->noutputs ? n->noutputs : 1) * sizeof *svs);
        FR_CHECK(svs != NULL);
        for (uint32_t k = 0; k < n->noutputs; k++) {
            ir_value *v = n->outputs[k];
            svs[k] = v->sv;
            v->kind = IR_VALUE_CONST;
            v->producer = NULL;
            v->out_index = 0;
            cn_set_const(g, v, r.outputs[k].data, r.outputs[k].nbytes);
        }
        n->dead = true;
        if (!readers_accept(g, n)) {
            /* a reader's inference refuses the known value: undo, leave the graph as it loaded */
            for (uint32_t k = 0; k < n->noutputs; k++) {
                ir_value *v = n->outputs[k];
                v->kind = IR_VALUE_NODE;
                v->producer = n;
                v->out_index = k;
                v->sv = svs[k];
            }
            n->dead = false;
            ok = false;
        }
        free(svs);
        for (uint32_t k = 0; ok && k < n->noutputs; k++)
            cn_touch_value(c, n->outputs[k]);
        if (ok)
            cn_kill(c, n);
    }
    if (r.arena)
        rt_result_free(&r);
    dg_free(dg);
    ir_graph_free(one);
    return ok;
}

/* A node whose one output is a small integer vector that inference knows every element of (a
 * Shape of static dims, a Gather of the static dim of a symbolic shape; ir/shape_value.c) becomes
 * that constant without running: its input need not be a constant at all. */
static bool fold_shape_value(cn_ctx *c, ir_node *n)
{
    if (n->dead || keep_op[n->op] || n->noutputs != 1 || !ir_sv_is_constant(n->outputs[0]))
        return false;
    ir_value *v = n->outputs[0];
    const ir_shape_value *sv = v->sv;
    int64_t numel;
    if (!ir_type_numel(v->type, &numel) || numel != sv->len)
        return false;
    unsigned char data[IR_SV_MAX * 8];
    size_t size = ir_dtype_size(v->type->dtype);
    for (uint32_t k = 0; k < sv->len; k++) {
        int64_t x = sv->el[k].v;
        if (v->type->dtype == IR_I64) {
            memcpy(data + 8 * k, &x, 8);
        } else if (v->type->dtype == IR_I32) {
            if (x < INT32_MIN || x > INT32_MAX)
                return false;
            int32_t y = (int32_t)x;
            memcpy(data + 4 * k, &y, 4);
        } else {
            data[k] = x != 0;
        }
    }
    v->kind = IR_VALUE_CONST;
    v->producer = NULL;
    v->out_index = 0;
    v->sv = NULL;
    cn_set_const(c->g, v, data, size * sv->len);
    n->dead = true;
    if (!readers_accept(c->g, n)) {
        v->kind = IR_VALUE_NODE;
        v->producer = n;
        v->out_index = 0;
        v->konst = NULL;
        n->dead = false;
        return false;
    }
    cn_touch_value(c, v);
    cn_kill(c, n);
    return true;
}

uint32_t cn_fold(cn_ctx *c)
{
    if (c->opts->fold_budget <= 0)
        return 0;
    uint32_t folded = 0;
    /* in topological order: a folded node's readers may fold next, in the same step */
    for (size_t i = 0; i < c->g->nodes.len; i++) {
        ir_node *n = c->g->nodes.items[i];
        if (fold_shape_value(c, n) || (foldable(c, n) && fold(c, n)))
            folded++;
    }
    return folded;
}
