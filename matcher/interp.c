/* The interpreter: runs the table from the block of a node's op, exploring every path, and turns
 * the accepted paths into matches (ordered by key, equal bindings dropped, at most
 * MT_MAX_SOLUTIONS per rule).
 *
 * Registers hold values (positions); a JOIN loop keeps the index of the next consumer to try per
 * loop depth. In explain mode every failed check is charged to the rules whose accepts lie in the
 * block it skips, and each rule keeps the failure on its furthest path. */
#include "matcher/internal.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

enum { REASON_SIZE = 320 };

/* An accepted path, before it becomes a match. */
typedef struct {
    const mt_variant *v;
    size_t key_at, vals_at; /* offsets into the matcher's key and value buffers */
    const uint32_t *key;    /* set once the buffers stop growing */
} solution;

typedef struct {
    int32_t depth;          /* the furthest failing check; -1 none yet; -2 not under this op */
    bool matched;
    const dsl_pattern *at;
    char reason[REASON_SIZE];
} progress;

struct mt_matcher {
    const mt_automaton *a;
    bool explain;
    ir_graph *g;
    ir_value **regs;
    uint32_t *loop_next;
    uint32_t max_nodes;      /* the most pattern nodes of any rule */
    ir_value **scratch_vals; /* a guard's bindings */
    ir_node **scratch_nodes;
    VEC(solution) sols;
    VEC(uint32_t) keys;
    VEC(ir_value *) vals;
    ar_arena *arena;         /* the matches' arrays and near misses' texts */
    VEC(mt_match) matches;
    VEC(mt_near_miss) misses;
    progress *prog;          /* explain: per rule */
    VEC(uint32_t) touched;   /* explain: rules under the current node's op */
};

mt_matcher *mt_matcher_new(const mt_automaton *a, bool explain)
{
    mt_matcher *m = calloc(1, sizeof *m);
    FR_CHECK(m != NULL);
    m->a = a;
    m->explain = explain;
    for (uint32_t i = 0; i < a->nrules; i++)
        if (a->rules[i]->nnodes > m->max_nodes)
            m->max_nodes = a->rules[i]->nnodes;
    size_t nregs = a->stats.registers ? a->stats.registers : 1;
    size_t nodes = m->max_nodes ? m->max_nodes : 1;
    m->regs = calloc(nregs, sizeof *m->regs);
    m->loop_next = calloc(a->nloops ? a->nloops : 1, sizeof *m->loop_next);
    m->scratch_vals = calloc(nodes, sizeof *m->scratch_vals);
    m->scratch_nodes = calloc(nodes, sizeof *m->scratch_nodes);
    m->arena = ar_new();
    FR_CHECK(m->regs && m->loop_next && m->scratch_vals && m->scratch_nodes);
    if (explain) {
        m->prog = calloc(a->nrules ? a->nrules : 1, sizeof *m->prog);
        FR_CHECK(m->prog != NULL);
        for (uint32_t i = 0; i < a->nrules; i++)
            m->prog[i].depth = -2;
    }
    return m;
}

void mt_matcher_free(mt_matcher *m)
{
    if (!m)
        return;
    free(m->regs);
    free(m->loop_next);
    free(m->scratch_vals);
    free(m->scratch_nodes);
    vec_free(&m->sols);
    vec_free(&m->keys);
    vec_free(&m->vals);
    vec_free(&m->matches);
    vec_free(&m->misses);
    vec_free(&m->touched);
    free(m->prog);
    ar_free(m->arena);
    free(m);
}

void mt_matcher_reset(mt_matcher *m)
{
    m->matches.len = 0;
    m->misses.len = 0;
    ar_free(m->arena);
    m->arena = ar_new();
}

const mt_match *mt_matches(const mt_matcher *m, size_t *count)
{
    *count = m->matches.len;
    return m->matches.items;
}

const mt_near_miss *mt_near_misses(const mt_matcher *m, size_t *count)
{
    *count = m->misses.len;
    return m->misses.items;
}

/* ---- bindings ------------------------------------------------------------------------------------ */

/* The values and nodes of a variant's pattern nodes from the registers. */
static void bindings(const mt_matcher *m, const mt_variant *v, ir_value **vals, ir_node **nodes)
{
    for (uint32_t i = 0; i < v->rule->nnodes; i++) {
        ir_value *val = v->reg_of[i] >= 0 ? m->regs[v->reg_of[i]] : NULL;
        vals[i] = val;
        if (nodes)
            nodes[i] = v->present[i] && val ? val->producer : NULL;
    }
}

static void accept(mt_matcher *m, const mt_variant *v)
{
    solution s = {.v = v, .key_at = m->keys.len, .vals_at = m->vals.len};
    for (uint32_t i = 0; i < v->nkey; i++) {
        int32_t k = v->key[i];
        vec_push(&m->keys, k >= 0 ? (uint32_t)k : m->regs[-(k + 1)]->producer->id);
    }
    vec_reserve(&m->vals, m->vals.len + v->rule->nnodes);
    bindings(m, v, m->vals.items + m->vals.len, NULL);
    m->vals.len += v->rule->nnodes;
    vec_push(&m->sols, s);
    if (m->explain)
        m->prog[v->rule_index].matched = true;
}

static bool guard(mt_matcher *m, const mt_variant *v)
{
    bindings(m, v, m->scratch_vals, m->scratch_nodes);
    return mt_guard_holds(v->rule, m->g, m->scratch_vals, m->scratch_nodes);
}

/* ---- explain ------------------------------------------------------------------------------------- */

/* The first accept entry at or after pc. */
static uint32_t first_accept(const mt_automaton *a, uint32_t pc)
{
    uint32_t lo = 0, hi = a->naccepts;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->accepts[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The check at `pc` (depth `depth`) failed: every rule accepting in [from, to) except in
 * [skip_from, skip_to) failed there. */
static void charge(mt_matcher *m, uint32_t depth, uint32_t from, uint32_t to, uint32_t skip_from,
                   uint32_t skip_to)
{
    const mt_automaton *a = m->a;
    for (uint32_t i = first_accept(a, from); i < a->naccepts && a->accepts[i].pc < to; i++) {
        if (a->accepts[i].pc >= skip_from && a->accepts[i].pc < skip_to)
            continue;
        const mt_variant *v = a->accepts[i].v;
        progress *p = &m->prog[v->rule_index];
        if ((int32_t)depth <= p->depth)
            continue;
        p->depth = (int32_t)depth;
        p->at = v->checks[depth].pat;
        const dsl_expr *failed = NULL;
        if (v->checks[depth].op == MI_GUARD) {
            bindings(m, v, m->scratch_vals, m->scratch_nodes);
            failed = mt_guard_failing(v->rule, m->g, m->scratch_vals, m->scratch_nodes);
        }
        mt_describe_failure(a, v, depth, m->regs, failed, p->reason, sizeof p->reason);
    }
}

static void explain_start(mt_matcher *m, ir_node *n)
{
    const mt_automaton *a = m->a;
    m->touched.len = 0;
    for (uint32_t i = first_accept(a, a->root[n->op]);
         i < a->naccepts && a->accepts[i].pc < a->root_end[n->op]; i++) {
        progress *p = &m->prog[a->accepts[i].v->rule_index];
        if (p->depth == -2) {
            *p = (progress){.depth = -1};
            vec_push(&m->touched, a->accepts[i].v->rule_index);
        }
    }
}

static void explain_finish(mt_matcher *m, ir_node *n)
{
    for (size_t i = 0; i < m->touched.len; i++) {
        progress *p = &m->prog[m->touched.items[i]];
        if (!p->matched && p->depth >= 0) {
            mt_near_miss miss = {.rule = m->a->rules[m->touched.items[i]],
                                 .rule_index = m->touched.items[i], .root = n, .at = p->at,
                                 .reason = ar_strdup(m->arena, p->reason)};
            vec_push(&m->misses, miss);
        }
        p->depth = -2;
    }
}

/* ---- the loop ------------------------------------------------------------------------------------ */

static bool is_output0(const ir_value *v)
{
    return v && v->kind == IR_VALUE_NODE && v->out_index == 0;
}

static bool op_in(uint32_t op, const uint32_t *ops, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (ops[i] == op)
            return true;
    return false;
}

/* Binds the join's destination to the next acceptable consumer; false when there is none. */
static bool join_next(mt_matcher *m, const uint32_t *x)
{
    uint32_t dst = x[0], depth = x[2], nexcl = x[3];
    const ir_value *v = m->regs[x[1]];
    uint32_t limit = v->nuses < MT_JOIN_LIMIT ? v->nuses : MT_JOIN_LIMIT;
    for (uint32_t i = m->loop_next[depth]; i < limit; i++) {
        ir_node *c = v->uses[i];
        bool excluded = c->dead || c->noutputs == 0;
        for (uint32_t e = 0; e < nexcl && !excluded; e++)
            excluded = m->regs[x[4 + e]]->producer == c;
        if (excluded)
            continue;
        m->loop_next[depth] = i + 1;
        m->regs[dst] = c->outputs[0];
        return true;
    }
    m->loop_next[depth] = limit;
    return false;
}

/* SWITCH reg n (op off)...: the block of the value's op, or 0. */
static uint32_t switch_target(const mt_matcher *m, const uint32_t *x, uint32_t *case_index)
{
    const ir_value *v = m->regs[x[0]];
    if (!is_output0(v))
        return 0;
    uint32_t op = (uint32_t)v->producer->op, lo = 0, hi = x[1];
    const uint32_t *cases = x + 2;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cases[2 * mid] < op)
            lo = mid + 1;
        else
            hi = mid;
    }
    *case_index = lo;
    return lo < x[1] && cases[2 * lo] == op ? cases[2 * lo + 1] : 0;
}

static void explain_switch(mt_matcher *m, uint32_t pc, uint32_t target, uint32_t case_index)
{
    const uint32_t *code = m->a->code, *x = code + pc + 2;
    uint32_t end = code[pc + 1], depth = m->a->at[pc]->depth;
    if (!target) {
        charge(m, depth, pc, end, 0, 0);
        return;
    }
    uint32_t case_end = case_index + 1 < x[1] ? x[2 + 2 * (case_index + 1) + 1] : end;
    charge(m, depth, pc, end, target, case_end);
}

static void run(mt_matcher *m, ir_node *n)
{
    const mt_automaton *a = m->a;
    const uint32_t *code = a->code;
    ir_value **regs = m->regs;
    uint32_t pc = a->root[n->op];
    regs[0] = n->outputs[0];
    for (;;) {
        uint32_t w = code[pc];
        const uint32_t *x = code + pc + 2;
        uint32_t next = pc + 2 + mt_word_nargs(w);
        bool ok = false;
        switch (mt_word_op(w)) {
        case MI_OP:
            ok = is_output0(regs[x[0]]) && regs[x[0]]->producer->op == x[1];
            break;
        case MI_OPSET:
            ok = is_output0(regs[x[0]]) && op_in(regs[x[0]]->producer->op, x + 2, x[1]);
            break;
        case MI_ARITY_EQ: ok = regs[x[0]]->producer->ninputs == x[1]; break;
        case MI_ARITY_GE: ok = regs[x[0]]->producer->ninputs >= x[1]; break;
        case MI_LOAD: {
            const ir_node *p = regs[x[1]]->producer;
            regs[x[0]] = x[2] < p->ninputs ? p->inputs[x[2]] : NULL;
            ok = regs[x[0]] != NULL;
            break;
        }
        case MI_CONST: ok = regs[x[0]]->kind == IR_VALUE_CONST; break;
        case MI_DTYPE: ok = regs[x[0]]->type->dtype == x[1]; break;
        case MI_LAYOUT: ok = regs[x[0]]->type->layout == x[1]; break;
        case MI_RANK: ok = regs[x[0]]->type->rank == (int32_t)x[1]; break;
        case MI_ATTR: ok = mt_attr_equal(regs[x[0]]->producer, a->attrs[x[1]]); break;
        case MI_EQ: ok = regs[x[0]] == regs[x[1]]; break;
        case MI_OUTPUT:
            ok = regs[x[0]]->kind == IR_VALUE_NODE &&
                 regs[x[0]]->producer == regs[x[1]]->producer && regs[x[0]]->out_index == x[2];
            break;
        case MI_JOIN:
            m->loop_next[x[2]] = 0;
            ok = join_next(m, x);
            break;
        case MI_GUARD: ok = guard(m, &a->variants[x[0]]); break;
        case MI_ACCEPT:
            accept(m, a->accepts[x[0]].v);
            ok = true;
            break;
        case MI_SWITCH: {
            uint32_t case_index = 0, target = switch_target(m, x, &case_index);
            if (m->explain)
                explain_switch(m, pc, target, case_index);
            pc = target ? target : code[pc + 1];
            continue;
        }
        case MI_NEXT: {
            uint32_t join = code[pc + 1];
            pc = join_next(m, code + join + 2) ? join + 2 + mt_word_nargs(code[join])
                                               : code[join + 1];
            continue;
        }
        case MI_JUMP: pc = code[pc + 1]; continue;
        case MI_END: return;
        case MI_COUNT: FR_UNREACHABLE();
        }
        if (ok) {
            pc = next;
        } else {
            if (m->explain)
                charge(m, a->at[pc]->depth, pc, code[pc + 1], 0, 0);
            pc = code[pc + 1];
        }
    }
}

/* ---- from solutions to matches ------------------------------------------------------------------- */

static int by_rule_and_key(const void *p, const void *q)
{
    const solution *x = p, *y = q;
    if (x->v->rule_index != y->v->rule_index)
        return x->v->rule_index < y->v->rule_index ? -1 : 1;
    uint32_t na = x->v->nkey, nb = y->v->nkey;
    for (uint32_t i = 0; i < na && i < nb; i++)
        if (x->key[i] != y->key[i])
            return x->key[i] < y->key[i] ? -1 : 1;
    return (na > nb) - (na < nb);
}

static bool same_bindings(const mt_matcher *m, const solution *x, const solution *y)
{
    uint32_t n = x->v->rule->nnodes;
    for (uint32_t i = 0; i < n; i++)
        if (m->vals.items[x->vals_at + i] != m->vals.items[y->vals_at + i] ||
            x->v->present[i] != y->v->present[i])
            return false;
    return true;
}

static void add_match(mt_matcher *m, ir_node *n, const solution *s)
{
    const dsl_rule *r = s->v->rule;
    mt_match match = {.rule = r, .rule_index = s->v->rule_index, .root = n, .nkey = s->v->nkey};
    /* one block: the values, the nodes, then the key (a match a round per node and rule that
     * fires or is outranked: half a million at 1M nodes) */
    size_t nn = r->nnodes;
    ir_value **block = ar_alloc(m->arena, 2 * nn * sizeof(void *) + match.nkey * sizeof(uint32_t));
    match.values = block;
    match.nodes = (ir_node **)(block + nn);
    uint32_t *key = (uint32_t *)(block + 2 * nn);
    if (match.nkey) /* a rule without a key has s->key NULL, which memcpy may not be given */
        memcpy(key, s->key, match.nkey * sizeof *key);
    match.key = key;
    for (uint32_t i = 0; i < r->nnodes; i++) {
        ir_value *v = m->vals.items[s->vals_at + i];
        match.values[i] = v;
        match.nodes[i] = s->v->present[i] && v ? v->producer : NULL;
    }
    vec_push(&m->matches, match);
}

/* Sorts the node's solutions and keeps, per rule, the first MT_MAX_SOLUTIONS with distinct
 * bindings. */
static size_t finish(mt_matcher *m, ir_node *n)
{
    for (size_t i = 0; i < m->sols.len; i++)
        m->sols.items[i].key = m->keys.len ? m->keys.items + m->sols.items[i].key_at : NULL;
    if (m->sols.len > 1) /* with none, items is NULL, which qsort may not be given */
        qsort(m->sols.items, m->sols.len, sizeof *m->sols.items, by_rule_and_key);
    size_t kept[MT_MAX_SOLUTIONS], nkept = 0, added = 0;
    for (size_t i = 0; i < m->sols.len; i++) {
        const solution *s = &m->sols.items[i];
        if (i > 0 && s->v->rule_index != m->sols.items[i - 1].v->rule_index)
            nkept = 0;
        bool duplicate = false;
        for (size_t j = 0; j < nkept && !duplicate; j++)
            duplicate = same_bindings(m, &m->sols.items[kept[j]], s);
        if (duplicate || nkept == MT_MAX_SOLUTIONS)
            continue;
        kept[nkept++] = i;
        add_match(m, n, s);
        added++;
    }
    return added;
}

size_t mt_match_node(mt_matcher *m, ir_graph *g, ir_node *n)
{
    const mt_automaton *a = m->a;
    if (n->dead || n->noutputs == 0 || !a->root[n->op])
        return 0;
    m->g = g;
    m->sols.len = m->keys.len = m->vals.len = 0;
    if (m->explain)
        explain_start(m, n);
    run(m, n);
    size_t added = finish(m, n);
    if (m->explain)
        explain_finish(m, n);
    return added;
}
