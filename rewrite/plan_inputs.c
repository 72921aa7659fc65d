/* The fused node's inputs: the replacement's explicit operands, or else the match's external
 * inputs (the roots in order, depth first, operand by operand: each leaf and each unconstrained
 * operand the first time it is reached); port attributes (`residual = @res`) then put their values
 * at their port, and the op's arity is checked. */
#include "rewrite/internal.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

static void add_input(rw_plan *p, ir_value *v, const dsl_pattern *from)
{
    if (v)
        vec_push(&p->inputs, ((rw_input){v, from}));
}

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
    if (pat->output_of)
        return; /* `@f.1`: computed inside the match */
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

void rw_build_inputs(rw_plan *p)
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
bool rw_place_ports(rw_plan *p, char *why)
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

bool rw_check_inputs(rw_plan *p, char *why)
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
