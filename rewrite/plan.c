/* The replacement plan's API: the match's members, roots and outputs; the plan's attributes,
 * inputs, new constants and helper nodes, as the replacement and the actions edit them. Nothing here
 * touches the graph. */
#include "rewrite/internal.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

ir_value *rw_capture_value(const rw_plan *p, const dsl_capture *c)
{
    return c ? p->m->values[c->node->id] : NULL;
}

ir_node *rw_capture_node(const rw_plan *p, const dsl_capture *c)
{
    return c ? p->m->nodes[c->node->id] : NULL;
}

/* Export i's value: its capture's value, or (`@s.1`) that output of the captured node; NULL when
 * the node has no such output (rw_check_interior refuses the plan then). */
static ir_value *export_value(const rw_plan *p, uint32_t i)
{
    const dsl_replacement *r = &p->rule->repl;
    uint32_t k = r->export_outputs[i];
    if (k == 0)
        return rw_capture_value(p, r->exports[i]);
    ir_node *n = rw_capture_node(p, r->exports[i]);
    return n && k < n->noutputs ? n->outputs[k] : NULL;
}

/* The lists of a plan, by a macro over their fields. */
#define PLAN_LISTS(X) X(members) X(roots) X(outputs) X(inputs) X(attrs) X(consts) X(helpers) X(kept)

void rw_plan_init(rw_plan *p, rw_ctx *ctx, const mt_match *m)
{
    memset(p, 0, sizeof *p);
    if (ctx->spare) { /* the last plan's lists, emptied: no malloc and free per plan */
#define TAKE(f) p->f = ctx->spare->f, p->f.len = 0;
        PLAN_LISTS(TAKE)
#undef TAKE
    }
    p->ctx = ctx;
    p->g = ctx->g;
    p->m = m;
    p->rule = m->rule;
    p->stamp = rw_new_stamp(ctx);
    const dsl_rule *r = m->rule;
    for (uint32_t i = 0; i < r->nnodes; i++) {
        ir_node *n = m->nodes[i];
        if (n && rw_state(ctx, n)->mark != p->stamp) {
            rw_state(ctx, n)->mark = p->stamp;
            vec_push(&p->members, n);
        }
    }
    for (uint32_t k = 0; k < r->nroots; k++) {
        ir_value *v = m->values[r->roots[k]->id];
        vec_push(&p->roots, v->producer);
        vec_push(&p->outputs, v);
    }
    for (uint32_t i = 0; r->repl.kind == DSL_REPL_OP && i < r->repl.nexports; i++)
        vec_push(&p->outputs, export_value(p, i));
}

void rw_plan_free(rw_plan *p)
{
    for (size_t i = 0; i < p->consts.len; i++)
        free(p->consts.items[i]->data);
    rw_ctx *ctx = p->ctx;
    if (!ctx->spare) {
        ctx->spare = calloc(1, sizeof *ctx->spare);
        FR_CHECK(ctx->spare != NULL);
    }
    /* the spare's lists are these (given by rw_plan_init) or none yet; grown ones moved */
#define KEEP(f) ctx->spare->f = p->f;
    PLAN_LISTS(KEEP)
#undef KEEP
    memset(p, 0, sizeof *p);
}

void rw_plan_spare_free(rw_ctx *ctx)
{
    if (!ctx->spare)
        return;
#define FREE(f) vec_free(&ctx->spare->f);
    PLAN_LISTS(FREE)
#undef FREE
    free(ctx->spare);
    ctx->spare = NULL;
}

void rw_plan_set_attr(rw_plan *p, const ir_attr *a)
{
    for (size_t i = 0; i < p->attrs.len; i++)
        if (strcmp(p->attrs.items[i].name, a->name) == 0) {
            p->attrs.items[i] = *a;
            return;
        }
    vec_push(&p->attrs, *a);
}

const ir_attr *rw_plan_attr(const rw_plan *p, const char *name)
{
    for (size_t i = 0; i < p->attrs.len; i++)
        if (strcmp(p->attrs.items[i].name, name) == 0)
            return &p->attrs.items[i];
    return NULL;
}

static ptrdiff_t input_index(const rw_plan *p, const ir_value *v)
{
    for (size_t i = 0; i < p->inputs.len; i++)
        if (p->inputs.items[i].v == v)
            return (ptrdiff_t)i;
    return -1;
}

bool rw_plan_replace_input(rw_plan *p, const ir_value *from, ir_value *to)
{
    ptrdiff_t i = input_index(p, from);
    if (i >= 0)
        p->inputs.items[i].v = to;
    return i >= 0;
}

void rw_plan_remove_input(rw_plan *p, const ir_value *v)
{
    size_t k = 0;
    for (size_t i = 0; i < p->inputs.len; i++)
        if (p->inputs.items[i].v != v || !v)
            p->inputs.items[k++] = p->inputs.items[i];
    p->inputs.len = k;
}

void rw_plan_insert_after(rw_plan *p, const ir_value *after, ir_value *v)
{
    ptrdiff_t i = input_index(p, after);
    size_t at = i >= 0 ? (size_t)i + 1 : p->inputs.len;
    vec_push(&p->inputs, ((rw_input){0}));
    memmove(&p->inputs.items[at + 1], &p->inputs.items[at],
            (p->inputs.len - 1 - at) * sizeof p->inputs.items[0]);
    p->inputs.items[at] = (rw_input){v, NULL};
}

rw_newconst *rw_plan_new_const(rw_plan *p, const char *stem, const ir_type *t, rw_compute_fn compute,
                               void *arg)
{
    ar_arena *arena = p->ctx->scratch;
    rw_newconst *c = ar_alloc(arena, sizeof *c);
    c->stem = stem;
    c->compute = compute;
    c->arg = arg;
    c->value = ar_alloc(arena, sizeof *c->value);
    size_t len = strlen(stem);
    char *name = ar_alloc(arena, len + sizeof "_folded");
    memcpy(name, stem, len);
    memcpy(name + len, "_folded", sizeof "_folded");
    c->value->name = name;
    c->value->kind = IR_VALUE_CONST;
    ir_value_set_type(p->g, c->value, t);
    int64_t bytes = 0;
    ir_type_nbytes(t, &bytes);
    p->new_bytes += bytes;
    vec_push(&p->consts, c);
    return c;
}

ir_value *rw_plan_helper(rw_plan *p, ir_op op, ir_value *input, const ir_attr *attr,
                         ir_node *replaces, char *why)
{
    ar_arena *arena = p->ctx->scratch;
    ir_node *t = ar_alloc(arena, sizeof *t);
    t->op = op;
    t->id = RW_TENTATIVE_ID;
    t->ninputs = 1;
    t->inputs = ar_alloc(arena, sizeof *t->inputs);
    t->inputs[0] = input;
    t->nattrs = attr ? 1 : 0;
    t->attrs = ar_alloc(arena, sizeof *t->attrs);
    if (attr)
        t->attrs[0] = *attr;
    t->noutputs = 1;
    t->outputs = ar_alloc(arena, sizeof *t->outputs);
    ir_value *out = ar_alloc(arena, sizeof *out);
    out->name = ar_printf(arena, "%s_%s", input->name, op == IR_OP_Transpose ? "t" : "h");
    out->kind = IR_VALUE_NODE;
    out->producer = t;
    ir_value_set_type(p->g, out, &(ir_type){.rank = -1});
    t->outputs[0] = out;
    t->src_offset = replaces->src_offset;
    t->src_len = replaces->src_len;
    dg_context *dg = rw_quiet(p->ctx);
    bool ok = ir_op_info_get(op)->infer(p->g, t, dg);
    char msg[RW_WHY_SIZE / 2];
    if (!ok)
        rw_first_error(dg, msg, sizeof msg);
    rw_quiet_done(p->ctx, dg);
    if (!ok) {
        rw_why(why, "shape: the helper %s would be invalid: %s", ir_op_name(op), msg);
        return NULL;
    }
    vec_push(&p->helpers, ((rw_helper){t, replaces}));
    return out;
}


/* The first error dg holds, quoted into out (a generic reason when it holds none). */
void rw_first_error(dg_context *dg, char *out, size_t size)
{
    const char *msg = dg_first_error(dg);
    snprintf(out, size, "%s", msg ? msg : "the op's inference failed");
}

/* One context for every plan's inference: a dg_new and dg_free per plan cost as much as a small
 * op's inference. One that reported is dropped, so that the next starts empty. */
dg_context *rw_quiet(rw_ctx *ctx)
{
    if (!ctx->quiet)
        ctx->quiet = dg_new();
    return ctx->quiet;
}

void rw_quiet_done(rw_ctx *ctx, dg_context *dg)
{
    if (dg_error_count(dg) || dg_warning_count(dg)) {
        dg_free(dg);
        ctx->quiet = NULL;
    }
}
