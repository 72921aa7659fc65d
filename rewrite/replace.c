/* The fused node: planned, checked tentatively, then committed.
 *
 * Inputs: the replacement's explicit operands, or else the match's external inputs (the roots in
 * order, depth first, operand by operand: each leaf and each unconstrained operand the first time
 * it is reached); then the actions rewrite that list; then port attributes (`residual = @res`) put their
 * values at their port.
 * Attributes: carried over from the matched ops (the node nearest the root that sets one of the
 * target's attributes, or whose op's default for it differs from the target's), then the
 * activation (the root when it is one, or `act = @a`), then the rule's literals, then the actions.
 * Outputs: the roots' values, then the exported ones: values keep their names, their consumers and
 * their place among the graph's outputs.
 * Before anything changes, the planned node is built aside: its arity is checked, the op's type
 * inference runs on it and must give exactly the types it replaces, and the target backend must
 * have a kernel that supports it. */
#include "rewrite/internal.h"

#include "base/check.h"
#include "ir/acts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan ------------------------------------------------------------------------------------ */

ir_value *rw_capture_value(const rw_plan *p, const dsl_capture *c)
{
    return c ? p->m->values[c->node->id] : NULL;
}

ir_node *rw_capture_node(const rw_plan *p, const dsl_capture *c)
{
    return c ? p->m->nodes[c->node->id] : NULL;
}

void rw_plan_init(rw_plan *p, rw_ctx *ctx, const mt_match *m)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->g = ctx->g;
    p->m = m;
    p->rule = m->rule;
    p->stamp = rw_new_stamp(ctx);
    const dsl_rule *r = m->rule;
    for (uint32_t i = 0; i < r->nnodes; i++) {
        ir_node *n = m->nodes[i];
        if (n && rw_state(ctx, n)->stamp != p->stamp) {
            rw_state(ctx, n)->stamp = p->stamp;
            vec_push(&p->members, n);
        }
    }
    for (uint32_t k = 0; k < r->nroots; k++) {
        ir_value *v = m->values[r->roots[k]->id];
        vec_push(&p->roots, v->producer);
        vec_push(&p->outputs, v);
    }
    for (uint32_t i = 0; r->repl.kind == DSL_REPL_OP && i < r->repl.nexports; i++)
        vec_push(&p->outputs, rw_capture_value(p, r->repl.exports[i]));
}

void rw_plan_free(rw_plan *p)
{
    for (size_t i = 0; i < p->consts.len; i++)
        free(p->consts.items[i]->data);
    vec_free(&p->members);
    vec_free(&p->roots);
    vec_free(&p->outputs);
    vec_free(&p->inputs);
    vec_free(&p->attrs);
    vec_free(&p->consts);
    vec_free(&p->helpers);
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

static void drop_attr(rw_plan *p, const char *name)
{
    for (size_t i = 0; i < p->attrs.len; i++)
        if (strcmp(p->attrs.items[i].name, name) == 0) {
            memmove(&p->attrs.items[i], &p->attrs.items[i + 1],
                    (p->attrs.len - i - 1) * sizeof p->attrs.items[0]);
            p->attrs.len--;
            return;
        }
}

static ptrdiff_t input_index(const rw_plan *p, const ir_value *v)
{
    for (size_t i = 0; i < p->inputs.len; i++)
        if (p->inputs.items[i].v == v)
            return (ptrdiff_t)i;
    return -1;
}

static void add_input(rw_plan *p, ir_value *v, const dsl_pattern *from)
{
    if (v)
        vec_push(&p->inputs, ((rw_input){v, from}));
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
    c->value->name = ar_printf(arena, "%s_folded", stem);
    c->value->kind = IR_VALUE_CONST;
    c->value->type = *t;
    int64_t bytes = 0;
    ir_type_nbytes(t, &bytes);
    p->new_bytes += bytes;
    vec_push(&p->consts, c);
    return c;
}

/* The first error a context holds, without its location. */
static void first_error(dg_context *dg, char *out, size_t size);

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
    out->type.rank = -1;
    t->outputs[0] = out;
    t->src_offset = replaces->src_offset;
    t->src_len = replaces->src_len;
    dg_context *dg = dg_new();
    bool ok = ir_op_info_get(op)->infer(p->g, t, dg);
    char msg[RW_WHY_SIZE / 2];
    if (!ok)
        first_error(dg, msg, sizeof msg);
    dg_free(dg);
    if (!ok) {
        rw_why(why, "shape: the helper %s would be invalid: %s", ir_op_name(op), msg);
        return NULL;
    }
    vec_push(&p->helpers, ((rw_helper){t, replaces}));
    return out;
}

/* ---- inputs -------------------------------------------------------------------------------------- */

/* The input slots of n that operand i of p takes: for a commutative op with one written operand the
 * match may have taken slot 1. */
static uint32_t written_slot(const rw_plan *p, const dsl_pattern *pat, const ir_node *n, uint32_t i)
{
    if (!pat->commutative || i >= 2 || n->ninputs < 2)
        return i;
    const ir_value *v = p->m->values[pat->operands[0]->id];
    bool swapped = pat->noperands >= 2 ? p->m->values[pat->operands[1]->id] == n->inputs[0] &&
                                             p->m->values[pat->operands[0]->id] != n->inputs[0]
                                       : v != n->inputs[0];
    return swapped ? 1 - i : i;
}

static void default_inputs_of(rw_plan *p, const dsl_pattern *pat, uint8_t *seen)
{
    if (seen[pat->id])
        return;
    seen[pat->id] = 1;
    const mt_match *m = p->m;
    ir_node *n = m->nodes[pat->id];
    if (pat->kind == DSL_PAT_ANY || (!n && (!pat->noperands || !m->values[pat->operands[0]->id]))) {
        add_input(p, m->values[pat->id], pat);
        return;
    }
    if (!n) { /* an absent optional op: its operand 0 stands in its place */
        default_inputs_of(p, pat->operands[0], seen);
        return;
    }
    uint32_t taken = 0; /* bit per slot < 32 that a written operand took */
    for (uint32_t i = 0; i < pat->noperands; i++) {
        uint32_t slot = written_slot(p, pat, n, i);
        if (slot < 32)
            taken |= 1u << slot;
        default_inputs_of(p, pat->operands[i], seen);
    }
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (k >= 32 || !(taken & (1u << k)))
            add_input(p, n->inputs[k], NULL);
}

static void build_inputs(rw_plan *p)
{
    const dsl_replacement *repl = &p->rule->repl;
    if (repl->operands_explicit) {
        for (uint32_t i = 0; i < repl->noperands; i++) {
            const dsl_capture *c = repl->operands[i];
            vec_push(&p->inputs, ((rw_input){rw_capture_value(p, c), c ? c->node : NULL}));
        }
        return;
    }
    uint8_t *seen = calloc(p->rule->nnodes ? p->rule->nnodes : 1, 1);
    FR_CHECK(seen != NULL);
    for (uint32_t k = 0; k < p->rule->nroots; k++)
        default_inputs_of(p, p->rule->roots[k], seen);
    free(seen);
}

/* The index of the target's input port named `name`, -1 when it has none. */
static int port_index(ir_op op, const char *name)
{
    const kn_fused_entry *e = kn_fused_entry_get(op);
    for (int i = 0; e && i < KN_MAX_PORTS && e->inputs[i].name; i++)
        if (strcmp(e->inputs[i].name, name) == 0)
            return i;
    return -1;
}

/* `residual = @res`: the captured value goes to its port (after the others, which may not reach it). */
static bool place_ports(rw_plan *p, char *why)
{
    const dsl_replacement *repl = &p->rule->repl;
    for (uint32_t i = 0; i < repl->nattrs; i++) {
        const dsl_rattr *a = &repl->attrs[i];
        if (a->kind != DSL_RATTR_INPUT)
            continue;
        int port = a->port >= 0 ? a->port : port_index(repl->op, a->value.name);
        if (port < 0)
            return rw_why(why, "replacement: %s has no input called '%s'", ir_op_name(repl->op),
                          a->value.name);
        ir_value *v = rw_capture_value(p, a->capture);
        /* the capture's own entry leaves the list (the same value may also be another operand) */
        for (size_t k = 0; k < p->inputs.len; k++)
            if (p->inputs.items[k].from == a->capture->node) {
                memmove(&p->inputs.items[k], &p->inputs.items[k + 1],
                        (p->inputs.len - k - 1) * sizeof p->inputs.items[0]);
                p->inputs.len--;
                break;
            }
        while (p->inputs.len <= (size_t)port)
            vec_push(&p->inputs, ((rw_input){0}));
        if (p->inputs.items[port].v)
            return rw_why(why,
                          "replacement: %s's input %d ('%s') would be '%s', which the match also "
                          "passes there; list the operands explicitly",
                          ir_op_name(repl->op), port + 1, a->value.name,
                          p->inputs.items[port].v->name);
        p->inputs.items[port] = (rw_input){v, a->capture->node};
    }
    return true;
}

static bool check_inputs(rw_plan *p, char *why)
{
    while (p->inputs.len && !p->inputs.items[p->inputs.len - 1].v)
        p->inputs.len--;
    const ir_op_info *info = ir_op_info_get(p->rule->repl.op);
    size_t n = p->inputs.len;
    if (n < info->min_inputs || (info->max_inputs != IR_VARIADIC && n > info->max_inputs)) {
        char list[200] = "";
        size_t used = 0;
        for (size_t i = 0; i < n && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     p->inputs.items[i].v ? p->inputs.items[i].v->name : "_");
        if (info->max_inputs == IR_VARIADIC)
            return rw_why(why, "replacement: %s takes at least %u inputs, not %zu (%s)", info->name,
                          info->min_inputs, n, list);
        return rw_why(why, "replacement: %s takes %u to %u inputs, not %zu (%s); list the operands "
                           "or add an action",
                      info->name, info->min_inputs, info->max_inputs, n, list);
    }
    for (size_t i = 0; i < n; i++) {
        const ir_value *v = p->inputs.items[i].v;
        if (!v && i < info->min_inputs)
            return rw_why(why, "replacement: %s's input %zu is required but the match has none",
                          info->name, i + 1);
        if (v && v->kind == IR_VALUE_NODE && rw_is_member(p, v->producer))
            return rw_why(why, "replacement: input '%s' is computed inside the match", v->name);
    }
    if (p->outputs.len < info->min_outputs ||
        (info->max_outputs != IR_VARIADIC && p->outputs.len > info->max_outputs))
        return rw_why(why, "replacement: %s gives %u to %u outputs, not %zu (roots and exports)",
                      info->name, info->min_outputs, info->max_outputs, p->outputs.len);
    return true;
}

/* ---- attributes ---------------------------------------------------------------------------------- */

static bool is_act_attr(const char *name)
{
    return strcmp(name, "act") == 0 || strcmp(name, "act_alpha") == 0 || strcmp(name, "act_beta") == 0;
}

static bool schema_default_equal(const ir_attr_schema *a, const ir_attr_schema *b)
{
    switch (a->kind) {
    case IR_ATTR_INT: return a->i == b->i;
    case IR_ATTR_FLOAT: return a->f == b->f || (isnan(a->f) && isnan(b->f));
    case IR_ATTR_STRING: return (!a->s && !b->s) || (a->s && b->s && strcmp(a->s, b->s) == 0);
    case IR_ATTR_INTS:
        return a->nints == b->nints &&
               (!a->nints || memcmp(a->ints, b->ints, a->nints * sizeof *a->ints) == 0);
    case IR_ATTR_FLOATS: return true;
    }
    return false;
}

static ir_attr from_schema(const ir_attr_schema *s)
{
    ir_attr a = {.name = s->name, .kind = s->kind};
    switch (s->kind) {
    case IR_ATTR_INT: a.v.i = s->i; break;
    case IR_ATTR_FLOAT: a.v.f = s->f; break;
    case IR_ATTR_STRING: a.v.s = s->s ? s->s : ""; break;
    case IR_ATTR_INTS:
        a.v.ints = (int64_t *)s->ints;
        a.count = s->nints;
        break;
    case IR_ATTR_FLOATS: break;
    }
    return a;
}

/* Attributes of the target that a matched op sets (or defaults differently): the node nearest the
 * root wins (rule->nodes lists operands before users). */
static void carry_attrs(rw_plan *p, bool with_act)
{
    const ir_op_info *target = ir_op_info_get(p->rule->repl.op);
    for (uint32_t s = 0; s < target->nattrs; s++) {
        const ir_attr_schema *want = &target->attrs[s];
        if (!want->name[0] || (!with_act && is_act_attr(want->name)))
            continue;
        for (uint32_t k = p->rule->nnodes; k-- > 0;) {
            const ir_node *n = p->m->nodes[k];
            if (!n)
                continue;
            const ir_attr *set = ir_node_attr(n, want->name);
            const ir_attr_schema *theirs = ir_op_attr_schema(n->op, want->name);
            if (set && (set->kind == want->kind ||
                        (set->kind == IR_ATTR_INT && want->kind == IR_ATTR_FLOAT))) {
                ir_attr a = *set;
                if (a.kind == IR_ATTR_INT && want->kind == IR_ATTR_FLOAT) {
                    a.kind = IR_ATTR_FLOAT;
                    a.v.f = (double)set->v.i;
                }
                rw_plan_set_attr(p, &a);
                break;
            }
            if (theirs && theirs->kind == want->kind && !theirs->required) {
                /* the op's default applies to it; carry it when the target's differs */
                if (!schema_default_equal(theirs, want)) {
                    ir_attr a = from_schema(theirs);
                    rw_plan_set_attr(p, &a);
                }
                break;
            }
        }
    }
}

static bool scalar_const(rw_plan *p, ir_value *v, double *out, char *why)
{
    int64_t n;
    double *x = rw_const_read(p, v, &n, why);
    if (!x)
        return false;
    bool ok = n == 1;
    if (ok)
        *out = x[0];
    free(x);
    return ok || rw_why(why, "act: '%s' must be one value", v->name);
}

/* The epilogue activation a matched node computes (its row of ir/acts.def): act, act_alpha,
 * act_beta. Parameters kept as inputs (Clip's bounds) leave the fused node's inputs (they become
 * attributes). */
static bool act_from_node(rw_plan *p, ir_node *n, char *why)
{
    ir_act act;
    /* erf and tanh GELU are different functions: the kernel gets the one the graph computes */
    if (!ir_act_of_node(n, &act))
        return rw_why(why, "act: %s is not an activation the fused kernels apply",
                      ir_op_name(n->op));
    const ir_act_info *info = ir_act_get(act);
    bool set[2] = {false, false};
    double v[2] = {0, 0};
    for (unsigned k = 0; k < info->nparams; k++) {
        if (info->from == IR_ACT_FROM_ATTRS) {
            set[k] = true;
            v[k] = ir_get_float(n, info->param[k]);
        } else if (n->ninputs > k + 1 && n->inputs[k + 1]) {
            set[k] = true;
            if (!scalar_const(p, n->inputs[k + 1], &v[k], why))
                return false;
        }
    }
    if (info->from == IR_ACT_FROM_INPUTS)
        for (uint32_t k = 1; k < n->ninputs; k++)
            rw_plan_remove_input(p, n->inputs[k]);
    rw_plan_set_attr(p, &(ir_attr){.name = "act", .kind = IR_ATTR_STRING, .v.s = info->name});
    drop_attr(p, "act_alpha");
    drop_attr(p, "act_beta");
    if (set[0])
        rw_plan_set_attr(p, &(ir_attr){.name = "act_alpha", .kind = IR_ATTR_FLOAT, .v.f = v[0]});
    if (set[1])
        rw_plan_set_attr(p, &(ir_attr){.name = "act_beta", .kind = IR_ATTR_FLOAT, .v.f = v[1]});
    return true;
}

static const dsl_rattr *rule_attr(const rw_plan *p, const char *name)
{
    const dsl_replacement *repl = &p->rule->repl;
    for (uint32_t i = 0; i < repl->nattrs; i++)
        if (repl->attrs[i].kind != DSL_RATTR_INPUT && strcmp(repl->attrs[i].value.name, name) == 0)
            return &repl->attrs[i];
    return NULL;
}

/* The shortest decimal that reads back as the same float32 as v: a float attribute taken from an
 * f32 constant holding 1e-12 prints as 1e-12, not 9.999999960041972e-13 (as ONNX import reads float
 * attributes). v itself when it is no float32 value. */
static double shortest_float32(double v)
{
    float f = (float)v;
    if ((double)f != v || !isfinite(f) || f == 0.0f)
        return v;
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        double d = strtod(buf, NULL);
        if ((float)d == f)
            return d;
    }
    return v;
}

/* `epsilon = @eps`: the attribute takes the value of the captured constant (one element for an INT
 * or FLOAT attribute, every element for a list). */
static bool attr_from_const(rw_plan *p, const dsl_rattr *a, char *why)
{
    ir_value *v = rw_capture_value(p, a->capture);
    int64_t n;
    double *x = v ? rw_const_read(p, v, &n, why) : NULL;
    if (!x)
        return v ? false : rw_why(why, "replacement: '@%s' is not bound", a->capture->name);
    ir_attr out = {.name = a->value.name, .kind = a->value.kind};
    bool list = out.kind == IR_ATTR_INTS || out.kind == IR_ATTR_FLOATS;
    bool ok = list || n == 1;
    if (ok && (out.kind == IR_ATTR_INT || out.kind == IR_ATTR_INTS)) {
        for (int64_t i = 0; i < n; i++)
            ok &= x[i] == (double)(int64_t)x[i];
    }
    if (ok && (v->type.dtype == IR_F32 || v->type.dtype == IR_F16 || v->type.dtype == IR_BF16))
        for (int64_t i = 0; i < n; i++) /* exact in float32: the shortest decimal of that float */
            x[i] = shortest_float32(x[i]);
    if (ok) {
        switch (out.kind) {
        case IR_ATTR_INT: out.v.i = (int64_t)x[0]; break;
        case IR_ATTR_FLOAT: out.v.f = x[0]; break;
        case IR_ATTR_INTS:
            out.v.ints = ar_alloc_array(p->ctx->scratch, (size_t)n, sizeof *out.v.ints);
            for (int64_t i = 0; i < n; i++)
                out.v.ints[i] = (int64_t)x[i];
            out.count = (uint32_t)n;
            break;
        case IR_ATTR_FLOATS:
            out.v.floats = ar_alloc_array(p->ctx->scratch, (size_t)n, sizeof *out.v.floats);
            memcpy(out.v.floats, x, (size_t)n * sizeof *x);
            out.count = (uint32_t)n;
            break;
        case IR_ATTR_STRING: ok = false; break;
        }
    }
    free(x);
    if (!ok)
        return rw_why(why, "replacement: '%s' cannot give %s its attribute '%s' (one %s value)",
                      v->name, ir_op_name(p->rule->repl.op), a->value.name,
                      out.kind == IR_ATTR_INT ? "integer" : "number");
    rw_plan_set_attr(p, &out);
    return true;
}

static bool build_attrs(rw_plan *p, char *why)
{
    const dsl_replacement *repl = &p->rule->repl;
    bool has_act = ir_op_attr_schema(repl->op, "act") != NULL;
    const dsl_rattr *act = rule_attr(p, "act");
    ir_node *root = p->roots.items[0];
    bool root_act = has_act && !act && p->rule->nroots == 1 && ir_act_is_op(root->op);
    carry_attrs(p, has_act && !act && !root_act);
    if (root_act && !act_from_node(p, root, why))
        return false;
    for (uint32_t i = 0; i < repl->nattrs; i++) {
        const dsl_rattr *a = &repl->attrs[i];
        if (a->kind == DSL_RATTR_LITERAL) {
            rw_plan_set_attr(p, &a->value);
        } else if (a->kind == DSL_RATTR_CONST) {
            if (!attr_from_const(p, a, why))
                return false;
        } else if (a->kind == DSL_RATTR_OP_NAME) {
            ir_node *n = rw_capture_node(p, a->capture);
            if (strcmp(a->value.name, "act") == 0) {
                if (n && !act_from_node(p, n, why))
                    return false;
            } else if (n) {
                rw_plan_set_attr(p, &(ir_attr){.name = a->value.name, .kind = IR_ATTR_STRING,
                                               .v.s = ir_op_name(n->op)});
            }
        }
    }
    return true;
}

/* Attributes the target's schema does not declare, or of another kind, are refused (INT widens
 * to FLOAT). */
static bool check_attrs(rw_plan *p, char *why)
{
    for (size_t i = 0; i < p->attrs.len; i++) {
        ir_attr *a = &p->attrs.items[i];
        const ir_attr_schema *s = ir_op_attr_schema(p->rule->repl.op, a->name);
        if (!s)
            return rw_why(why, "replacement: %s has no attribute '%s'", ir_op_name(p->rule->repl.op),
                          a->name);
        if (a->kind == IR_ATTR_INT && s->kind == IR_ATTR_FLOAT) {
            a->kind = IR_ATTR_FLOAT;
            a->v.f = (double)a->v.i;
        }
        if (a->kind != s->kind)
            return rw_why(why, "replacement: attribute '%s' of %s has the wrong kind", a->name,
                          ir_op_name(p->rule->repl.op));
    }
    return true;
}

/* ---- the tentative node -------------------------------------------------------------------------- */

/* The first error dg holds, quoted into out (a generic reason when it holds none). */
static void first_error(dg_context *dg, char *out, size_t size)
{
    const char *msg = dg_first_error(dg);
    snprintf(out, size, "%s", msg ? msg : "the op's inference failed");
}

static bool same_type(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    if (a->layout && b->layout && a->layout != b->layout)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static ir_node *tentative(rw_plan *p)
{
    ar_arena *arena = p->ctx->scratch;
    ir_node *t = ar_alloc(arena, sizeof *t);
    t->op = p->rule->repl.op;
    t->id = RW_TENTATIVE_ID;
    t->ninputs = (uint32_t)p->inputs.len;
    t->inputs = ar_alloc_array(arena, t->ninputs, sizeof *t->inputs);
    for (uint32_t i = 0; i < t->ninputs; i++)
        t->inputs[i] = p->inputs.items[i].v;
    t->nattrs = (uint32_t)p->attrs.len;
    t->attrs = ar_alloc_array(arena, t->nattrs, sizeof *t->attrs);
    if (t->nattrs) /* an empty vector's items are NULL, which memcpy may not be given */
        memcpy(t->attrs, p->attrs.items, t->nattrs * sizeof *t->attrs);
    t->noutputs = (uint32_t)p->outputs.len;
    t->outputs = ar_alloc_array(arena, t->noutputs, sizeof *t->outputs);
    for (uint32_t i = 0; i < t->noutputs; i++) {
        ir_value *v = ar_alloc(arena, sizeof *v);
        v->name = p->outputs.items[i]->name;
        v->kind = IR_VALUE_NODE;
        v->producer = t;
        v->out_index = i;
        v->type.rank = -1;
        t->outputs[i] = v;
    }
    t->src_offset = p->roots.items[0]->src_offset;
    t->src_len = p->roots.items[0]->src_len;
    return t;
}

static bool check_tentative(rw_plan *p, char *why)
{
    ir_node *t = p->tentative = tentative(p);
    char msg[RW_WHY_SIZE];
    dg_context *dg = dg_new();
    bool inferred = ir_op_info_get(t->op)->infer(p->g, t, dg);
    if (!inferred)
        first_error(dg, msg, sizeof msg);
    dg_free(dg);
    if (!inferred)
        return rw_why(why, "shape: the fused node would be invalid: %s", msg);
    for (uint32_t i = 0; i < t->noutputs; i++) {
        const ir_type *want = &p->outputs.items[i]->type, *got = &t->outputs[i]->type;
        if (!same_type(want, got)) {
            char a[160], b[160];
            return rw_why(why, "shape: the fused node gives %s for '%s', which is %s",
                          ir_type_format(p->g, got, a, sizeof a), p->outputs.items[i]->name,
                          ir_type_format(p->g, want, b, sizeof b));
        }
    }
    if (!rw_check_layout(t, why))
        return false;
    /* A plain ONNX op has no backend kernel to ask about: every executor runs it (the CUDA one on
     * its CPU reference kernel, as it ran the plain ops the match replaces), so conv_bn's Conv or
     * layernorm's LayerNormalization fuse on every target and later rules can take them further. */
    char kn_why[KN_WHY_SIZE] = "";
    if (kn_fused_entry_get(t->op) && !kn_supports(p->g, t, p->ctx->opts.target, kn_why))
        return rw_why(why, "kernel: %s", kn_why);
    return true;
}

static bool compute_consts(rw_plan *p, char *why)
{
    if (p->new_bytes > p->ctx->budget_left)
        return rw_why(why,
                      "budget: folding needs %lld bytes of new constants and %lld of the budget are "
                      "left (%d times the graph's constants, at most 8 GiB)",
                      (long long)p->new_bytes, (long long)p->ctx->budget_left, RW_BUDGET_FACTOR);
    for (size_t i = 0; i < p->consts.len; i++) {
        rw_newconst *c = p->consts.items[i];
        if (!c->compute(p, c, why))
            return false;
    }
    return true;
}

static bool run_actions(rw_plan *p, char *why)
{
    const dsl_replacement *repl = &p->rule->repl;
    for (uint32_t i = 0; i < repl->nactions; i++) {
        const rw_action_impl *impl = rw_action_find(dsl_action_name(repl->actions[i]));
        if (!impl)
            return rw_why(why, "action: '%s' is not implemented", dsl_action_name(repl->actions[i]));
        if (!impl->plan(p, why))
            return false;
    }
    return true;
}

/* A helper node takes the place of a member that precedes the root: only a single-output
 * replacement keeps every member before its root. */
static bool check_helpers(rw_plan *p, char *why)
{
    if (p->helpers.len && p->outputs.len != 1)
        return rw_why(why, "replacement: helper nodes need a replacement with one output");
    return true;
}

bool rw_plan_replacement(rw_plan *p, char *why)
{
    build_inputs(p);
    return build_attrs(p, why) && run_actions(p, why) && check_helpers(p, why) &&
           place_ports(p, why) && check_inputs(p, why) && check_attrs(p, why) &&
           check_tentative(p, why) && compute_consts(p, why);
}

/* ---- committing ---------------------------------------------------------------------------------- */

/* A copy of a plan attribute in the graph's arena (names and lists may live in the rule set or the
 * plan's scratch). */
static ir_attr copy_attr(ir_graph *g, const ir_attr *a)
{
    ir_attr c = *a;
    c.name = ar_strdup(g->arena, a->name);
    c.src_offset = 0;
    if (a->kind == IR_ATTR_STRING) {
        c.v.s = ar_strdup(g->arena, a->v.s);
    } else if (a->kind == IR_ATTR_INTS || a->kind == IR_ATTR_FLOATS) {
        size_t size = a->kind == IR_ATTR_INTS ? sizeof *a->v.ints : sizeof *a->v.floats;
        void *items = ar_alloc_array(g->arena, a->count, size);
        if (a->count)
            memcpy(items, a->kind == IR_ATTR_INTS ? (const void *)a->v.ints : (const void *)a->v.floats,
                   a->count * size);
        if (a->kind == IR_ATTR_INTS)
            c.v.ints = items;
        else
            c.v.floats = items;
    }
    return c;
}

/* A name for a new constant: its stem ("w1_folded"), else the stem and the root's name
 * ("w_folded_r12": unique when one weight is folded in many places, found without probing). */
static const char *const_name(rw_plan *p, const char *stem)
{
    if (!ir_find_value(p->g, stem))
        return ar_strdup(p->g->arena, stem);
    const char *root = p->outputs.items[0]->name;
    char *name = ar_printf(p->g->arena, "%s_%s", stem, root);
    return ir_find_value(p->g, name) ? ir_fresh_name(p->g, name) : name;
}

/* The new constants join the graph (named after what they replace) and take their tentative
 * values' places among the inputs. */
static void add_consts(rw_plan *p)
{
    for (size_t i = 0; i < p->consts.len; i++) {
        rw_newconst *c = p->consts.items[i];
        const char *name = const_name(p, c->value->name);
        ir_value *v = ir_add_const(p->g, name, &c->value->type, ir_const_new(p->g, IR_CONST_DATA));
        FR_CHECK(v != NULL);
        ir_const_set_data(p->g, v, c->data, c->nbytes);
        for (size_t k = 0; k < p->inputs.len; k++)
            if (p->inputs.items[k].v == c->value)
                p->inputs.items[k].v = v;
    }
    p->ctx->budget_left -= p->new_bytes;
}

/* Marks the members removed; their places in the order empty, unless the order was rebuilt. */
static void kill_members(rw_plan *p, ir_node *by, bool clear_order)
{
    int32_t rule = (int32_t)p->m->rule_index;
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *n = p->members.items[i];
        rw_node_state *s = rw_state(p->ctx, n);
        n->dead = true;
        s->claimed_by = rule;
        s->replaced_by = by;
        if (clear_order)
            p->ctx->order.items[s->pos] = NULL;
    }
}

/* A topological place for a node replacing members that are not all ancestors of one root (several
 * roots, or exports): within the members' span, the nodes that depend on the members move after
 * it, the others before it. */
static void reorder_span(rw_plan *p, ir_node *fused)
{
    rw_ctx *ctx = p->ctx;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < p->members.len; i++) {
        uint32_t pos = rw_state(ctx, p->members.items[i])->pos;
        lo = pos < lo ? pos : lo;
        hi = pos > hi ? pos : hi;
    }
    uint32_t below = rw_new_stamp(ctx);
    VEC(ir_node *) before = {0}, after = {0};
    for (uint32_t i = lo; i <= hi; i++) {
        ir_node *x = ctx->order.items[i];
        if (!x || rw_is_member(p, x))
            continue;
        bool depends = false;
        for (uint32_t k = 0; k < x->ninputs && !depends; k++) {
            const ir_value *v = x->inputs[k];
            /* the members' outputs are the fused node's by now */
            depends = v && v->kind == IR_VALUE_NODE &&
                      (v->producer == fused || rw_is_member(p, v->producer) ||
                       rw_state(ctx, v->producer)->visit == below);
        }
        if (depends) {
            rw_state(ctx, x)->visit = below;
            vec_push(&after, x);
        } else {
            vec_push(&before, x);
        }
    }
    uint32_t at = lo;
    for (size_t i = 0; i < before.len; i++, at++) {
        ctx->order.items[at] = before.items[i];
        rw_state(ctx, before.items[i])->pos = at;
    }
    ctx->order.items[at] = fused;
    rw_state(ctx, fused)->pos = at++;
    for (size_t i = 0; i < after.len; i++, at++) {
        ctx->order.items[at] = after.items[i];
        rw_state(ctx, after.items[i])->pos = at;
    }
    for (; at <= hi; at++)
        ctx->order.items[at] = NULL;
    vec_free(&before);
    vec_free(&after);
}

/* Helper nodes join the graph before the fused node, each in the place of the member it replaces
 * (which the fused node's single root follows). */
static void add_helpers(rw_plan *p)
{
    for (size_t i = 0; i < p->helpers.len; i++) {
        const ir_node *t = p->helpers.items[i].node;
        const char *name = const_name(p, t->outputs[0]->name);
        ir_node *n = ir_add_node(p->g, t->op, 1, &name, 1);
        FR_CHECK(n != NULL);
        ir_set_input(n, 0, t->inputs[0]);
        n->nattrs = t->nattrs;
        n->attrs = ar_alloc_array(p->g->arena, n->nattrs, sizeof *n->attrs);
        for (uint32_t k = 0; k < n->nattrs; k++)
            n->attrs[k] = copy_attr(p->g, &t->attrs[k]);
        n->outputs[0]->type = t->outputs[0]->type;
        n->src_offset = t->src_offset;
        n->src_len = t->src_len;
        for (size_t k = 0; k < p->inputs.len; k++)
            if (p->inputs.items[k].v == t->outputs[0])
                p->inputs.items[k].v = n->outputs[0];
        p->helpers.items[i].node = n; /* now the graph's */
        rw_state(p->ctx, n)->claimed_by = (int32_t)p->m->rule_index;
    }
}

ir_node *rw_commit(rw_plan *p)
{
    ir_graph *g = p->g;
    add_consts(p);
    add_helpers(p);
    ir_op op = p->rule->repl.op;
    ir_node *n = ir_add_node(g, op, (uint32_t)p->inputs.len, NULL, 0);
    for (uint32_t i = 0; i < n->ninputs; i++)
        ir_set_input(n, i, p->inputs.items[i].v);
    n->nattrs = (uint32_t)p->attrs.len;
    n->attrs = ar_alloc_array(g->arena, n->nattrs, sizeof *n->attrs);
    for (uint32_t i = 0; i < n->nattrs; i++)
        n->attrs[i] = copy_attr(g, &p->attrs.items[i]);
    n->noutputs = (uint32_t)p->outputs.len;
    n->outputs = ar_alloc_array(g->arena, n->noutputs, sizeof *n->outputs);
    for (uint32_t i = 0; i < n->noutputs; i++) {
        ir_value *v = p->outputs.items[i];
        v->producer = n;
        v->out_index = i;
        n->outputs[i] = v;
    }
    if (kn_fused_entry_get(op))
        n->kernel = kn_kernel_name(op, p->ctx->opts.target);
    n->src_offset = p->roots.items[0]->src_offset;
    n->src_len = p->roots.items[0]->src_len;

    rw_node_state *s = rw_state(p->ctx, n);
    s->claimed_by = (int32_t)p->m->rule_index;
    if (p->outputs.len == 1) {
        /* every member is an ancestor of the root: the root's place is a topological one */
        uint32_t pos = rw_state(p->ctx, p->roots.items[0])->pos;
        kill_members(p, n, true);
        for (size_t i = 0; i < p->helpers.len; i++) {
            /* the helper reads what the member it replaces read */
            rw_node_state *replaced = rw_state(p->ctx, p->helpers.items[i].replaces);
            replaced->replaced_by = p->helpers.items[i].node;
            rw_state(p->ctx, p->helpers.items[i].node)->pos = replaced->pos;
            p->ctx->order.items[replaced->pos] = p->helpers.items[i].node;
        }
        s = rw_state(p->ctx, n);
        s->pos = pos;
        p->ctx->order.items[pos] = n;
    } else {
        reorder_span(p, n); /* leaves the members out */
        kill_members(p, n, false);
    }
    return n;
}

/* ---- forwarding: `=> @x` ------------------------------------------------------------------------- */

ir_value *rw_forwarded(rw_ctx *ctx, ir_value *v)
{
    while (v && v->kind == IR_VALUE_NODE && v->producer->dead &&
           rw_state(ctx, v->producer)->forwarded_to)
        v = rw_state(ctx, v->producer)->forwarded_to;
    return v;
}

/* The value the root's readers will read: the forwarded capture, or, when a forward earlier in the
 * round removed its node (Identity(Identity(x)) with the inner one first), where that one went. */
static ir_value *forward_target(const rw_plan *p)
{
    return rw_forwarded(p->ctx, rw_capture_value(p, p->rule->repl.forward));
}

bool rw_plan_forward(rw_plan *p, char *why)
{
    ir_value *root = p->outputs.items[0], *x = forward_target(p);
    if (!x)
        return rw_why(why, "replacement: the forwarded capture is not bound in this match");
    if (x->kind == IR_VALUE_NODE && rw_is_member(p, x->producer))
        return rw_why(why, "replacement: '%s' is computed inside the match and would be removed",
                      x->name);
    if (root->is_output)
        return rw_why(why,
                      "graph output: '%s' is an output of the graph; removing its node would "
                      "rename it",
                      root->name);
    if (!same_type(&root->type, &x->type)) {
        char a[160], b[160];
        return rw_why(why, "shape: '%s' is %s but '%s' is %s", x->name,
                      ir_type_format(p->g, &x->type, a, sizeof a), root->name,
                      ir_type_format(p->g, &root->type, b, sizeof b));
    }
    return true;
}

/* Makes every live reader of `from` among the consumers of `via` read `to`. Use lists are those of
 * the start of the round: a consumer fused earlier in the round reads through the node that
 * replaced it; a consumer forwarded away earlier in the round (a chain of no-ops: Identity of
 * Identity, handled outermost first) handed `from` on to its own consumers, so they are visited in
 * its place. The graph is acyclic, so the walk ends. */
static void redirect_readers(rw_ctx *ctx, const ir_value *via, ir_value *from, ir_value *to)
{
    for (uint32_t u = 0; u < via->nuses; u++) {
        ir_node *c = via->uses[u];
        while (c->dead && rw_state(ctx, c)->replaced_by)
            c = rw_state(ctx, c)->replaced_by;
        if (c->dead) {
            for (uint32_t k = 0; k < c->noutputs; k++)
                redirect_readers(ctx, c->outputs[k], from, to);
            continue;
        }
        for (uint32_t k = 0; k < c->ninputs; k++)
            if (c->inputs[k] == from)
                c->inputs[k] = to;
    }
}

void rw_commit_forward(rw_plan *p)
{
    ir_value *root = p->outputs.items[0], *x = forward_target(p);
    redirect_readers(p->ctx, root, root, x);
    kill_members(p, NULL, true);
    rw_state(p->ctx, root->producer)->forwarded_to = x;
}
