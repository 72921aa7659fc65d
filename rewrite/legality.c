/* Legality checks owned by the framework (docs/matcher.md, "Legality"): interior values (fan-out
 * and graph outputs), convexity, and precision (overlap: the driver, before a plan). Each refusal
 * says why, starting with the name of the check. */
#include "rewrite/internal.h"

#include "base/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

bool rw_why(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, RW_WHY_SIZE, fmt, ap);
    va_end(ap);
    return false;
}

bool rw_is_member(const rw_plan *p, const ir_node *n)
{
    return n && n->id != RW_TENTATIVE_ID && rw_state(p->ctx, n)->mark == p->stamp;
}

static const char *node_name(const ir_node *n)
{
    return n->noutputs ? n->outputs[0]->name : "?";
}

static bool is_output_of_plan(const rw_plan *p, const ir_value *v, bool forward)
{
    if (forward)
        return v == p->outputs.items[0];
    for (size_t i = 0; i < p->outputs.len; i++)
        if (p->outputs.items[i] == v)
            return true;
    return false;
}

/* Every value a member computes and the fused node does not give must die with the match: no
 * consumer outside it (a consumer fused earlier in the round counts as outside), not a graph
 * output; except a member the rule shares (`shares @t`), which is kept for those readers
 * (share.c), with the shared members it reads. */
bool rw_check_interior(rw_plan *p, bool forward, char *why)
{
    for (size_t i = 0; i < p->outputs.len; i++) {
        const ir_value *v = p->outputs.items[i];
        if (!v || v->kind != IR_VALUE_NODE || !rw_is_member(p, v->producer))
            return rw_why(why, "export: '%s' is not computed by a node of the match",
                          v ? v->name : "(unbound)");
    }
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *n = p->members.items[i];
        if (!forward && rw_keep_shared(p, n))
            continue;
        for (uint32_t k = 0; k < n->noutputs; k++) {
            const ir_value *v = n->outputs[k];
            if (is_output_of_plan(p, v, forward))
                continue;
            if (v->is_output)
                return rw_why(why,
                              "graph output: '%s' is an output of the graph and would be lost "
                              "(export it to keep it)",
                              v->name);
            for (uint32_t u = 0; u < v->nuses; u++)
                if (!rw_is_member(p, v->uses[u]))
                    return rw_why(why, "fan-out: '%s' is also read by '%s' (%s) outside the match",
                                  v->name, node_name(v->uses[u]), ir_op_name(v->uses[u]->op));
        }
    }
    return rw_close_kept(p, why);
}

/* A path that leaves the match and comes back would be a cycle through the fused node. Walks up
 * from the match's external inputs; in a topological order nothing before the match's first node
 * can depend on it, which bounds the walk to the match's span. A path back to a kept node (shared,
 * staying for other readers) is none: that node stays outside the fused node, and the walk from
 * its own inputs finds any path through the match. */
bool rw_check_convex(rw_plan *p, char *why)
{
    rw_ctx *ctx = p->ctx;
    uint32_t lo = UINT32_MAX;
    for (size_t i = 0; i < p->members.len; i++)
        if (rw_state(ctx, p->members.items[i])->pos < lo)
            lo = rw_state(ctx, p->members.items[i])->pos;
    uint32_t seen = rw_new_stamp(ctx);
    VEC(ir_node *) stack = {0};
    VEC(const ir_value *) via = {0}; /* the external input each walk started from */
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *n = p->members.items[i];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            const ir_value *v = n->inputs[k];
            if (!v || v->kind != IR_VALUE_NODE || rw_is_member(p, v->producer))
                continue;
            rw_node_state *s = rw_state(ctx, v->producer);
            if (s->pos < lo || s->mark == seen)
                continue;
            s->mark = seen;
            vec_push(&stack, v->producer);
            vec_push(&via, v);
        }
    }
    bool ok = true;
    while (ok && stack.len) {
        ir_node *x = stack.items[--stack.len];
        const ir_value *from = via.items[--via.len];
        for (uint32_t k = 0; ok && k < x->ninputs; k++) {
            const ir_value *v = x->inputs[k];
            if (!v || v->kind != IR_VALUE_NODE || rw_is_kept(p, v->producer))
                continue;
            if (rw_is_member(p, v->producer)) {
                ok = rw_why(why,
                            "cycle: '%s' depends on '%s', computed inside the match, and is read "
                            "by it; fusing would create a cycle",
                            from->name, v->name);
                break;
            }
            rw_node_state *s = rw_state(ctx, v->producer);
            if (s->pos < lo || s->mark == seen)
                continue;
            s->mark = seen;
            vec_push(&stack, v->producer);
            vec_push(&via, from);
        }
    }
    vec_free(&stack);
    vec_free(&via);
    return ok;
}

/* The tags of a layout set, for a message: "NC, NCW, NCHW, NCDHW". */
static void layout_names(unsigned set, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (int l = 1; l < IR_LAYOUT_COUNT && len < size; l++)
        if (set & (1u << l))
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "",
                                    ir_layout_name((ir_layout)l));
}

/* A layout tag says what each dim of a tensor is (NHWC: channels last). A fused kernel declares
 * the tags it reads (kn_layouts: the convolutions read channels at dim 1, so only
 * channels-first tags); an input of the fused node tagged otherwise would be read against its
 * own description, and the fusion is refused. Untagged inputs pass. */
bool rw_check_layout(const ir_node *fused, char *why)
{
    const kn_fused_entry *e = kn_fused_entry_get(fused->op);
    unsigned layouts = kn_layouts(fused->op);
    if (!e || !layouts)
        return true;
    for (uint32_t i = 0; i < fused->ninputs; i++) {
        const ir_value *v = fused->inputs[i];
        ir_layout l = v ? (ir_layout)v->type->layout : IR_LAYOUT_NONE;
        if (l == IR_LAYOUT_NONE || (layouts & (1u << l)))
            continue;
        char names[80];
        layout_names(layouts, names, sizeof names);
        const char *port = i < KN_MAX_PORTS && e->inputs[i].name ? e->inputs[i].name : "input";
        return rw_why(why, "layout: %s's %s '%s' is %s; its kernels read only %s data",
                      ir_op_name(fused->op), port, v->name, ir_layout_name(l), names);
    }
    return true;
}

/* Whether every value of float dtype `from` is exactly a value of float dtype `to`: f32 holds
 * every f16 and bf16 value; f16 and bf16 hold neither each other's values nor f32's. */
static bool float_widens(ir_dtype from, ir_dtype to)
{
    return from == to || to == IR_F32;
}

/* Whether a Cast narrowing to `to` inside the match starts the match's tail in its output
 * dtype: every output of the match has dtype `to`, and every member downstream of the Cast
 * computes in `to` (none changes the dtype again). The matched ops after the Cast then round
 * each step to the output's dtype, as a decomposition written in that dtype does, and the fused
 * kernel computes that tail in f32 and rounds once at its output: the rounding it skips is the
 * one it skips for the same ops written in `to` throughout (ONNX Runtime's LayerNorm test that
 * casts the normalized values back to f16 before the scale and bias). */
static bool narrows_to_tail(const rw_plan *p, const ir_node *cast, ir_dtype to)
{
    if (!p->outputs.len)
        return false;
    for (size_t i = 0; i < p->outputs.len; i++)
        if (p->outputs.items[i]->type->dtype != to)
            return false;
    /* Mark the members downstream of the Cast (members hold a few dozen nodes: quadratic is
     * fine); one that changes the dtype there refuses. */
    size_t nm = p->members.len;
    bool *down = calloc(nm ? nm : 1, sizeof *down);
    if (!down)
        return false;
    bool ok = true, grew = true;
    while (ok && grew) {
        grew = false;
        for (size_t i = 0; i < nm && ok; i++) {
            const ir_node *n = p->members.items[i];
            if (down[i] || n == cast)
                continue;
            bool reads = false;
            for (uint32_t k = 0; k < n->ninputs && !reads; k++) {
                const ir_value *v = n->inputs[k];
                if (!v)
                    continue;
                if (v == cast->outputs[0])
                    reads = true;
                for (size_t j = 0; j < nm && !reads; j++)
                    if (down[j] && p->members.items[j]->noutputs &&
                        v == p->members.items[j]->outputs[0])
                        reads = true;
            }
            if (!reads)
                continue;
            down[i] = grew = true;
            for (uint32_t k = 0; k < n->noutputs && ok; k++)
                ok = !n->outputs[k] || n->outputs[k]->type->dtype == to;
        }
    }
    free(down);
    return ok;
}

/* A Cast the rule names may still not fuse: the fused kernel computes in f32 (docs/kernels.md),
 * so a Cast that widens to f32 (an f16 model computing a LayerNorm in f32) only says what the
 * kernel does anyway, and a Cast that narrows the match's result back (to f16) is the rounding
 * of the fused node's own output, as is one that narrows to the output's dtype for the rest of
 * the match (narrows_to_tail). A Cast that narrows inside the match otherwise (an f32 model
 * computing a step in f16) is a rounding the fused kernel would skip, and a Cast from or to an integer or
 * bool type is no float arithmetic at all: both change the numbers, and are refused. */
static bool cast_fuses(rw_plan *p, const ir_node *n, ir_dtype in, ir_dtype out, char *why)
{
    if (!ir_dtype_is_float(in) || !ir_dtype_is_float(out))
        return rw_why(why,
                      "precision: '%s' (Cast) converts %s to %s; only float Casts fuse into a "
                      "kernel that computes in f32",
                      node_name(n), ir_dtype_name(in), ir_dtype_name(out));
    if (float_widens(in, out))
        return true;
    for (size_t i = 0; i < p->outputs.len; i++)
        if (p->outputs.items[i] == n->outputs[0])
            return true;
    if (narrows_to_tail(p, n, out))
        return true;
    return rw_why(why,
                  "precision: '%s' (Cast) narrows %s to %s inside the match; the fused kernel, "
                  "computing in f32, would skip that rounding",
                  node_name(n), ir_dtype_name(in), ir_dtype_name(out));
}

/* The i32 -> f32 Cast of an integer product that the target's kernel converts exactly as Cast does
 * (a fused op flagged IR_OPF_INT_ACCUMULATOR: the int32 accumulator, then the float epilogue;
 * docs/kernels.md), read from a MatMulInteger of the match. */
static bool cast_in_kernel(const rw_plan *p, const ir_node *n, ir_dtype in, ir_dtype out)
{
    const ir_value *src = n->inputs[0];
    const dsl_replacement *r = &p->rule->repl;
    return r->kind == DSL_REPL_OP && (ir_op_info_get(r->op)->flags & IR_OPF_INT_ACCUMULATOR) &&
           in == IR_I32 && out == IR_F32 && src->kind == IR_VALUE_NODE &&
           src->producer->op == IR_OP_MatMulInteger && rw_is_member(p, src->producer);
}

/* A Cast that fold_transpose moves before the Transpose it reads (Transpose > Cast > GEMM: the
 * fused node reads a helper Cast of the source), so its rounding stays in the graph. */
static bool cast_moved(const rw_plan *p, const ir_node *n)
{
    const dsl_replacement *r = &p->rule->repl;
    bool folds = false;
    for (uint32_t i = 0; i < r->nactions; i++)
        folds |= r->actions[i] == DSL_ACTION_FOLD_TRANSPOSE;
    const ir_value *src = n->inputs[0];
    if (!folds || src->kind != IR_VALUE_NODE || src->producer->op != IR_OP_Transpose ||
        !rw_is_member(p, src->producer))
        return false;
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *g = p->members.items[i];
        if (rw_is_gemm(g->op) && (g->inputs[0] == n->outputs[0] || g->inputs[1] == n->outputs[0]))
            return true;
    }
    return false;
}

/* A node inside the match that changes the element type (a Cast, a quantization) may only be
 * fused when the rule names its op alone: an op set or alternative must not carry a fusion across
 * a precision change by accident. A named Cast must also keep the numbers (cast_fuses). */
bool rw_check_precision(rw_plan *p, char *why)
{
    const dsl_rule *r = p->rule;
    for (size_t i = 0; i < p->members.len; i++) {
        const ir_node *n = p->members.items[i];
        if (!n->ninputs || !n->inputs[0] || !n->noutputs)
            continue;
        ir_dtype in = n->inputs[0]->type->dtype, out = n->outputs[0]->type->dtype;
        if (in == IR_DTYPE_UNKNOWN || out == IR_DTYPE_UNKNOWN || in == out)
            continue;
        bool named = false;
        for (uint32_t k = 0; k < r->nnodes && !named; k++)
            named = p->m->nodes[k] == n && r->nodes[k]->nops == 1;
        if (!named)
            return rw_why(why,
                          "precision: '%s' (%s) changes %s to %s inside the match; name the op in "
                          "the pattern to fuse across it",
                          node_name(n), ir_op_name(n->op), ir_dtype_name(in), ir_dtype_name(out));
        if (n->op == IR_OP_Cast && !cast_moved(p, n) && !cast_in_kernel(p, n, in, out) &&
            !cast_fuses(p, n, in, out, why))
            return false;
    }
    return true;
}
