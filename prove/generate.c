/* Building one candidate instance of a rule's pattern: its op nodes in pattern order (operands
 * before users), each with a drawn alternative, optional ops present or absent, commutative
 * operands in either order, the pattern's inline attributes and the attribute values its guard
 * compares with; every leaf a graph input or a constant with a proposed type; the roots the graph's
 * outputs. Each node's types are inferred as it is added, so later proposals see them. */
#include "prove/internal.h"

#include "base/check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ---- */

uint64_t pv_rng_next(pv_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

uint32_t pv_rng_below(pv_rng *r, uint32_t n)
{
    FR_CHECK(n > 0);
    return (uint32_t)(pv_rng_next(r) % n);
}

double pv_rng_uniform(pv_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(pv_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

bool pv_rng_chance(pv_rng *r, double p)
{
    return pv_rng_uniform(r, 0, 1) < p;
}

bool pv_why(pv_gen *gen, const char *fmt, ...)
{
    if (gen->trace->why[0])
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gen->trace->why, sizeof gen->trace->why, fmt, ap);
    va_end(ap);
    return false;
}

uint32_t pv_cycle(pv_gen *gen, uint32_t salt, uint32_t n)
{
    if (n <= 1)
        return 0;
    if (pv_rng_chance(gen->rng, 0.85))
        return (gen->turn + salt + (gen->node ? gen->node->id * 5 : 0)) % n;
    return pv_rng_below(gen->rng, n);
}

/* ---- leaves ---- */

/* x rounded to `places` decimals: constants print short in a counterexample, and the literal is
 * what the graph holds. */
static double decimals(double x, int places)
{
    double scale = pow(10, places);
    return round(x * scale) / scale;
}

/* x rounded to three significant digits (an epsilon of 1e-7 keeps its value). */
static double significant(double x)
{
    if (x == 0 || !isfinite(x))
        return x;
    double scale = pow(10, 2 - floor(log10(fabs(x))));
    return round(x * scale) / scale;
}

/* One random element of a constant in its domain. */
static double draw(pv_gen *gen, pv_domain domain, ir_dtype dt)
{
    static const double typical_eps[] = {1e-5, 1e-6, 1e-12};
    switch (domain) {
    case PV_DOM_EPSILON:
        if (pv_rng_chance(gen->rng, 0.4))
            return typical_eps[pv_rng_below(gen->rng, FR_COUNT_OF(typical_eps))];
        return significant(pow(10, pv_rng_uniform(gen->rng, -12, -1)));
    case PV_DOM_POSITIVE: return decimals(pv_rng_uniform(gen->rng, 0.5, 1.5), 3);
    case PV_DOM_SCALE: return decimals(pv_rng_uniform(gen->rng, 0.002, 0.01), 4);
    case PV_DOM_INT:
        if (ir_dtype_is_float(dt))
            return 2 + pv_rng_below(gen->rng, 2);
        return (double)pv_rng_below(gen->rng, 7) - 3;
    case PV_DOM_ANY: break;
    }
    if (dt == IR_I8)
        return (double)pv_rng_below(gen->rng, 256) - 128;
    if (dt == IR_U8)
        return pv_rng_below(gen->rng, 256);
    if (dt == IR_BOOL)
        return pv_rng_below(gen->rng, 2);
    if (!ir_dtype_is_float(dt))
        return (double)pv_rng_below(gen->rng, 7) - 3;
    return decimals(pv_rng_uniform(gen->rng, -1, 1), 3);
}

/* The values of a new constant leaf: the guard's for a one-element constant it reads, else exact
 * ones from the op knowledge (axes, shapes), else drawn from the domain. */
static double *const_values(pv_gen *gen, const pv_operand *o, const dsl_pattern *leaf,
                            const pv_node_facts *nf, const ir_type *t, int64_t numel)
{
    double *v = ar_alloc(gen->g->arena, (size_t)(numel + 1) * sizeof *v);
    double solved;
    if (leaf && numel == 1 && pv_rng_chance(gen->rng, 0.9) &&
        pv_solve_value(gen, leaf, t->dtype, &solved)) {
        v[0] = solved;
        return v;
    }
    if (o->values && numel > 0) {
        memcpy(v, o->values, (size_t)numel * sizeof *v);
        return v;
    }
    pv_domain domain = nf && nf->positive ? PV_DOM_EPSILON : o->domain;
    for (int64_t i = 0; i < numel; i++)
        v[i] = draw(gen, domain, t->dtype);
    return v;
}

/* Creates a graph input or constant from a proposal, for a pattern leaf (named after its capture;
 * nf is what the rule asks of it) or, with leaf and nf NULL, for an operand the pattern leaves
 * unconstrained (a constant exactly when the op wants one). */
static ir_value *make_leaf(pv_gen *gen, const pv_operand *o, const dsl_pattern *leaf,
                           const pv_node_facts *nf)
{
    ir_type t = o->type;
    ir_type asked;
    if (leaf && pv_rng_chance(gen->rng, 0.7) && pv_solve_shape(gen, leaf, &asked)) {
        asked.dtype = t.dtype;
        t = asked;
    }
    if (leaf && pv_rng_chance(gen->rng, 0.8))
        pv_solve_dims(gen, leaf, &t);
    if (leaf && leaf->preds.dtype != IR_DTYPE_UNKNOWN)
        t.dtype = leaf->preds.dtype;
    if (leaf && leaf->preds.layout != IR_LAYOUT_NONE)
        t.layout = leaf->preds.layout;
    int64_t numel;
    if (nf && nf->one_element && (!ir_type_numel(&t, &numel) || numel != 1)) {
        t.rank = pv_rng_chance(gen->rng, 0.5) ? 0 : 1;
        t.dims[0] = 1;
    }
    const ir_value *scores = nf && nf->causal_of ? gen->values[nf->causal_of->id] : NULL;
    if (scores && scores->type->rank >= 2 && pv_rng_chance(gen->rng, 0.9)) {
        /* causal_mask(@c, @s): the bool [S, T] of the keys each query sees, j <= i + T - S,
         * sometimes with leading ones (GPT-2's [1, 1, S, T]) */
        const ir_type *st = scores->type;
        int64_t s = st->dims[st->rank - 2], tk = st->dims[st->rank - 1];
        if (ir_dim_is_static(s) && ir_dim_is_static(tk) && s * tk > 0) {
            t.dtype = IR_BOOL;
            t.rank = pv_rng_chance(gen->rng, 0.5) ? 2 : 4;
            t.dims[0] = t.dims[1] = 1;
            t.dims[t.rank - 2] = s;
            t.dims[t.rank - 1] = tk;
            ir_const *c = ir_const_new(gen->g, IR_CONST_LITERAL);
            c->literal = ar_alloc(gen->g->arena, (size_t)(s * tk + 1) * sizeof *c->literal);
            for (int64_t i = 0; i < s; i++)
                for (int64_t j = 0; j < tk; j++)
                    c->literal[i * tk + j] = j <= i + tk - s;
            c->literal_count = (size_t)(s * tk);
            return ir_add_const(gen->g, ir_fresh_name(gen->g, leaf->capture->name), &t, c);
        }
    }
    if (!ir_type_numel(&t, &numel))
        return NULL;
    bool is_const = leaf ? nf->is_const || (o->want_const && pv_rng_chance(gen->rng, 0.85)) ||
                               pv_rng_chance(gen->rng, 0.15)
                         : o->want_const;
    const char *stem = leaf && leaf->capture && !leaf->capture->is_let ? leaf->capture->name
                       : is_const                                      ? "k"
                                                                       : "in";
    const char *name = ir_fresh_name(gen->g, stem);
    if (!is_const) {
        size_t index = gen->g->inputs.len;
        if (o->want_const && index < 64)
            gen->trace->param_inputs |= (uint64_t)1 << index;
        return ir_add_input(gen->g, name, &t);
    }
    ir_const *c = ir_const_new(gen->g, IR_CONST_LITERAL);
    c->literal = const_values(gen, o, leaf, nf, &t, numel);
    c->literal_count = (size_t)numel;
    return ir_add_const(gen->g, name, &t, c);
}

/* ---- op nodes ---- */

/* How many inputs the node gets: the operands written, or for an open pattern at least the op's
 * minimum, sometimes with an optional bias, bounds, or a Dropout's ratio and training mode. */
static uint32_t input_count(pv_gen *gen, const dsl_pattern *p, ir_op op)
{
    const ir_op_info *info = ir_op_info_get(op);
    uint32_t n = p->noperands;
    if (!p->open)
        return n;
    if (n < info->min_inputs)
        n = info->min_inputs;
    if ((op == IR_OP_Conv || op == IR_OP_Clip || op == IR_OP_Dropout) && n < info->max_inputs &&
        pv_rng_chance(gen->rng, 0.5))
        n = info->max_inputs;
    return n;
}

/* The attributes the pattern writes inline, then (sometimes) the values its guard compares
 * attr(@n, name) with. */
static void pattern_attrs(pv_gen *gen, const dsl_pattern *p, ir_node *n)
{
    for (uint32_t i = 0; i < p->nattrs; i++)
        ir_set_attr(gen->g, n, &p->attrs[i]);
    const pv_facts *f = gen->facts;
    for (uint32_t i = 0; i < f->nattrs; i++)
        if (f->attrs[i].node == p && ir_op_attr_schema(n->op, f->attrs[i].value.name) &&
            pv_rng_chance(gen->rng, 0.6))
            ir_set_attr(gen->g, n, &f->attrs[i].value);
}

/* Choice k of n for pattern node p: mostly the one whose turn it is (each node offset by its id,
 * so that two sets do not move in lockstep), sometimes a random one. */
static uint32_t choose(pv_gen *gen, const dsl_pattern *p, uint32_t n)
{
    if (pv_rng_chance(gen->rng, 0.75))
        return (gen->turn + p->id) % n;
    return pv_rng_below(gen->rng, n);
}

static bool build_op(pv_gen *gen, const dsl_pattern *p, dg_context *dg)
{
    if (p->optional && choose(gen, p, 2) == 1) {
        /* absent: operand 0 stands in its place */
        const dsl_pattern *x = p->operands[0];
        if (!gen->values[x->id]) {
            pv_operand o = {.type = pv_random_type(gen, 2 + (int)pv_rng_below(gen->rng, 3))};
            gen->values[x->id] = make_leaf(gen, &o, x, &gen->facts->nodes[x->id]);
        }
        gen->values[p->id] = gen->values[x->id];
        return gen->values[p->id] != NULL;
    }
    ir_op op = p->ops[choose(gen, p, p->nops)];
    const ir_op_info *info = ir_op_info_get(op);
    uint32_t nin = input_count(gen, p, op);
    if (nin < info->min_inputs || (info->max_inputs != IR_VARIADIC && nin > info->max_inputs))
        return pv_why(gen, "%s: %u operands written; the op takes %u to %u", info->name, nin,
                      info->min_inputs, info->max_inputs);
    /* every output an op always has (DynamicQuantizeLinear's three), and those the rule names
     * (`@f.2`, is_output(@v, @f, 2)), named v1, v2, ... */
    uint32_t nout = info->min_outputs > 1 ? info->min_outputs : 1;
    uint64_t exported = gen->facts->nodes[p->id].export_mask; /* `exports @p.N` */
    if (exported && 64u - (uint32_t)__builtin_clzll(exported) > nout)
        nout = 64u - (uint32_t)__builtin_clzll(exported);
    for (uint32_t i = 0; i < gen->facts->rule->nnodes; i++)
        if (gen->facts->nodes[i].output_of == p && gen->facts->nodes[i].output_index >= nout &&
            gen->facts->nodes[i].output_index < info->max_outputs)
            nout = gen->facts->nodes[i].output_index + 1;
    const char **out_names = ar_alloc(gen->g->arena, nout * sizeof *out_names);
    for (uint32_t k = 0; k < nout; k++)
        out_names[k] = ar_printf(gen->g->arena, "v%u", ++gen->names);
    ir_node *n = ir_add_node(gen->g, op, nin, out_names, nout);
    if (!n)
        return false;
    pattern_attrs(gen, p, n);

    /* which input slot each written operand goes to */
    uint32_t *slot_of = ar_alloc(gen->g->arena, (p->noperands + 1) * sizeof *slot_of);
    for (uint32_t k = 0; k < p->noperands; k++)
        slot_of[k] = k;
    if (p->commutative && p->noperands >= 2 && pv_rng_chance(gen->rng, 0.5))
        slot_of[0] = 1, slot_of[1] = 0;
    const dsl_pattern **leaf = ar_alloc(gen->g->arena, (nin + 1) * sizeof *leaf);
    const pv_node_facts **hints = ar_alloc(gen->g->arena, (nin + 1) * sizeof *hints);
    memset(leaf, 0, (nin + 1) * sizeof *leaf);
    memset(hints, 0, (nin + 1) * sizeof *hints);
    for (uint32_t k = 0; k < p->noperands; k++) {
        const dsl_pattern *o = p->operands[k];
        const pv_node_facts *of = &gen->facts->nodes[o->id];
        if (!gen->values[o->id] && of->output_of && gen->values[of->output_of->id]) {
            /* is_output(@o, @m, i): output i of @m's node, built before this one */
            const ir_value *m = gen->values[of->output_of->id];
            if (m->kind == IR_VALUE_NODE && of->output_index < m->producer->noutputs)
                gen->values[o->id] = m->producer->outputs[of->output_index];
        }
        if (gen->values[o->id]) {
            ir_set_input(n, slot_of[k], gen->values[o->id]);
        } else {
            FR_CHECK(o->kind == DSL_PAT_ANY); /* pattern order builds operand ops first */
            leaf[slot_of[k]] = o, hints[slot_of[k]] = &gen->facts->nodes[o->id];
        }
    }

    pv_operand *prop = ar_alloc(gen->g->arena, (nin + 1) * sizeof *prop);
    memset(prop, 0, (nin + 1) * sizeof *prop);
    gen->node = p;
    if (!pv_op_propose(gen, n, hints, prop)) {
        /* the op knowledge gave no reason of its own: name the operands it had to fit */
        char built[200] = "", t[120];
        size_t len = 0;
        for (uint32_t i = 0; i < nin && len < sizeof built; i++)
            if (n->inputs[i])
                len += (size_t)snprintf(built + len, sizeof built - len, "%soperand %u (%s)",
                                        len ? ", " : "", i,
                                        ir_type_format(gen->g, n->inputs[i]->type, t, sizeof t));
        return pv_why(gen, "%s: the op knowledge has no operands to go with %s", info->name,
                      len ? built : "the pattern's predicates");
    }
    for (uint32_t i = 0; i < nin; i++) {
        if (n->inputs[i])
            continue;
        ir_value *v = leaf[i] ? gen->values[leaf[i]->id] : NULL; /* the same leaf twice */
        if (!v) {
            if (prop[i].type.dtype == IR_DTYPE_UNKNOWN)
                return pv_why(gen, "%s: operand %u: no type proposed for it", info->name, i);
            if (!(v = make_leaf(gen, &prop[i], leaf[i], hints[i])))
                return pv_why(gen, "%s: operand %u: the proposed type has no element count",
                              info->name, i);
            if (leaf[i])
                gen->values[leaf[i]->id] = v;
        }
        ir_set_input(n, i, v);
    }
    if (!info->infer(gen->g, n, dg)) {
        const char *msg = dg_first_error(dg);
        return pv_why(gen, "%s: its inference refuses the operands: %s", info->name,
                      msg ? msg : "no reason given");
    }
    gen->values[p->id] = n->outputs[0];
    return true;
}

/* A node reading a root's value, whose output becomes the graph output instead: a forwarding rule
 * (`=> @x`) cannot remove a node whose output is a graph output, and a root read by another node
 * is the usual case in a model. Neg changes no value's magnitude (Not, for a bool value). */
static ir_value *consume(pv_gen *gen, ir_value *v, dg_context *dg)
{
    const char *name = ar_printf(gen->g->arena, "v%u", ++gen->names);
    ir_op op = v->type->dtype == IR_BOOL ? IR_OP_Not : IR_OP_Neg;
    ir_node *n = ir_add_node(gen->g, op, 1, &name, 1);
    if (!n)
        return NULL;
    ir_set_input(n, 0, v);
    if (ir_op_info_get(op)->infer(gen->g, n, dg))
        return n->outputs[0];
    pv_why(gen, "%s reading the root: its inference refuses %s", ir_op_name(op),
           ir_dtype_name(v->type->dtype));
    return NULL;
}

/* Three distinct dims from a small set: sizes that line up often (a MatMul's K with the weight
 * built elsewhere) and give instances of a few dozen elements. */
static void draw_pool(pv_gen *gen)
{
    /* 1 (a dim that broadcasts, or makes a wrong axis harmless), small sizes, and primes above 8
     * (no accidental divisibility or squares) */
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 8, 11, 13};
    uint32_t n = 0;
    while (n < FR_COUNT_OF(gen->pool)) {
        int64_t d = sizes[pv_rng_below(gen->rng, FR_COUNT_OF(sizes))];
        bool seen = false;
        for (uint32_t i = 0; i < n; i++)
            seen |= gen->pool[i] == d;
        if (!seen)
            gen->pool[n++] = d;
    }
}

ir_graph *pv_generate(const pv_facts *facts, pv_rng *rng, uint32_t turn, pv_trace *trace)
{
    const dsl_rule *r = facts->rule;
    ir_graph *g = ir_graph_new("instance");
    pv_trace scratch;
    if (!trace)
        trace = &scratch;
    *trace = (pv_trace){0};
    pv_gen gen = {.g = g, .facts = facts, .rng = rng, .turn = turn, .trace = trace};
    gen.values = calloc(r->nnodes + 1, sizeof *gen.values);
    dg_context *dg = dg_new(); /* inference errors only reject the draw */
    draw_pool(&gen);
    bool ok = gen.values != NULL;
    for (uint32_t i = 0; ok && i < r->nnodes; i++)
        if (r->nodes[i]->kind == DSL_PAT_OP)
            ok = build_op(&gen, r->nodes[i], dg);
    for (uint32_t i = 0; ok && i < r->nroots; i++) {
        ir_value *v = gen.values[r->roots[i]->id];
        ok = v && v->kind == IR_VALUE_NODE && !v->is_output;
        if (ok && (r->repl.kind == DSL_REPL_FORWARD || pv_rng_chance(rng, 0.25)))
            ok = (v = consume(&gen, v, dg)) != NULL;
        if (ok)
            ir_add_output(g, v);
    }
    /* the other outputs an export names (`exports @s.1`) are always graph outputs, so that the
     * judge compares them */
    for (uint32_t i = 0; ok && i < r->nnodes; i++) {
        ir_value *v = gen.values[i];
        if (!facts->nodes[i].export_mask || !v || v->kind != IR_VALUE_NODE)
            continue;
        for (uint32_t k = 1; k < v->producer->noutputs && k < 64; k++)
            if ((facts->nodes[i].export_mask >> k & 1) && !v->producer->outputs[k]->is_output)
                ir_add_output(g, v->producer->outputs[k]);
    }
    /* an exported or shared interior value is sometimes read outside the match too (a shared
     * node then stays for that reader) */
    for (uint32_t i = 0; ok && i < r->nnodes; i++) {
        ir_value *v = gen.values[i];
        if ((facts->nodes[i].exported || facts->nodes[i].shared) && v && v->kind == IR_VALUE_NODE &&
            !v->is_output && pv_rng_chance(rng, 0.5))
            ir_add_output(g, v);
    }
    dg_free(dg);
    free(gen.values);
    if (!ok) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}
