/* Compiling rules into one automaton: the variants of every rule are inserted into a trie per root
 * op (identical check prefixes merge), and the tries are emitted as one flat table.
 *
 * Emission lays a trie node out as a block: its check, whose `skip` is the end of the block, then
 * the blocks of its children. Children that test the op of the same position against single ops
 * become one SWITCH (a sorted table searched by binary search), so that a node is never tested
 * against many rules that cannot match there. */
#include "matcher/internal.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

/* The trie's edges by (level, check): inserting a rule finds an existing child in constant time
 * instead of scanning its siblings, which made 100k rules sharing a prefix quadratic. */
typedef struct {
    const mt_kids *level;
    mt_tnode *node; /* NULL: an empty slot */
} edge;

typedef struct {
    edge *slots;
    size_t cap, len; /* cap is a power of two */
} edge_map;

typedef struct {
    mt_automaton *a;
    mt_kids tries[IR_OP_COUNT];
    edge_map edges;
    VEC(uint32_t) code;
    VEC(const mt_tnode *) at;
    VEC(mt_accept) accepts;
    VEC(const ir_attr *) attrs;
    mt_variant_vec variants; /* while lowering; then moved into the automaton */
} compiler;

/* ---- the attribute pool ------------------------------------------------------------------------ */

static bool attr_same(const ir_attr *a, const ir_attr *b)
{
    if (strcmp(a->name, b->name) != 0 || a->kind != b->kind)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT: return a->v.i == b->v.i;
    case IR_ATTR_FLOAT: return a->v.f == b->v.f;
    case IR_ATTR_STRING: return strcmp(a->v.s, b->v.s) == 0;
    case IR_ATTR_INTS:
        return a->count == b->count && memcmp(a->v.ints, b->v.ints, a->count * sizeof *a->v.ints) == 0;
    case IR_ATTR_FLOATS:
        return a->count == b->count &&
               memcmp(a->v.floats, b->v.floats, a->count * sizeof *a->v.floats) == 0;
    }
    return false;
}

static uint32_t pool_attr(compiler *C, const ir_attr *attr)
{
    for (size_t i = 0; i < C->attrs.len; i++)
        if (attr_same(C->attrs.items[i], attr))
            return (uint32_t)i;
    vec_push(&C->attrs, attr);
    return (uint32_t)(C->attrs.len - 1);
}

/* ---- the trie ------------------------------------------------------------------------------------ */

static uint64_t edge_hash(const mt_kids *level, const mt_check *c)
{
    uint64_t h = (uint64_t)(uintptr_t)level * 0x9e3779b97f4a7c15ull;
    h = (h ^ (uint64_t)c->op) * 1099511628211ull;
    h = (h ^ c->nargs) * 1099511628211ull;
    for (uint32_t i = 0; i < c->nargs; i++)
        h = (h ^ c->args[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* The slot of the edge (level, c): the child when it exists, else the empty slot to fill. */
static edge *edge_slot(const edge_map *m, const mt_kids *level, const mt_check *c)
{
    size_t mask = m->cap - 1;
    for (size_t i = edge_hash(level, c) & mask;; i = (i + 1) & mask) {
        edge *e = &m->slots[i];
        if (!e->node || (e->level == level && mt_check_equal(&e->node->check, c)))
            return e;
    }
}

/* Keeps the map at most half full. */
static void edge_reserve(edge_map *m)
{
    if ((m->len + 1) * 2 <= m->cap)
        return;
    edge_map bigger = {calloc(m->cap ? m->cap * 2 : 256, sizeof(edge)), m->cap ? m->cap * 2 : 256,
                       m->len};
    FR_CHECK(bigger.slots != NULL);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].node)
            *edge_slot(&bigger, m->slots[i].level, &m->slots[i].node->check) = m->slots[i];
    free(m->slots);
    *m = bigger;
}

static void insert(compiler *C, mt_kids *level, const mt_variant *v)
{
    for (uint32_t d = 0; d < v->nchecks; d++) {
        const mt_check *c = &v->checks[d];
        edge_reserve(&C->edges);
        edge *e = edge_slot(&C->edges, level, c);
        mt_tnode *node = e->node;
        if (!node) {
            node = ar_alloc(C->a->arena, sizeof *node);
            node->check = *c;
            node->depth = d;
            node->first = v;
            if (level->last)
                level->last->next = node;
            else
                level->first = node;
            level->last = node;
            level->n++;
            C->a->stats.trie_nodes++;
            *e = (edge){level, node};
            C->edges.len++;
        }
        node->nseq++;
        level = &node->kids;
    }
}

/* Gives GUARD and ACCEPT the variant's number (so that they never merge) and ATTR its pool index. */
static void finish_checks(compiler *C, mt_variant *v, uint32_t index)
{
    for (uint32_t d = 0; d < v->nchecks; d++) {
        mt_check *c = &v->checks[d];
        if (c->op == MI_GUARD || c->op == MI_ACCEPT)
            c->args[0] = index;
        else if (c->op == MI_ATTR)
            c->args[1] = pool_attr(C, &c->pat->attrs[c->args[1]]);
    }
}

/* ---- emission ------------------------------------------------------------------------------------ */

static uint32_t here(const compiler *C)
{
    return (uint32_t)C->code.len;
}

static void word(compiler *C, uint32_t w, const mt_tnode *at)
{
    if (C->code.len == C->code.cap) { /* code and at grow together */
        vec_reserve(&C->code, C->code.len + 1);
        vec_reserve(&C->at, C->code.cap);
    }
    C->code.items[C->code.len++] = w;
    C->at.items[C->at.len++] = at;
}

static void emit_kids(compiler *C, const mt_kids *list);

/* A single-op OP check, which a SWITCH can take over. */
static bool is_single_op(const mt_tnode *t)
{
    return t->check.op == MI_OP;
}

static int by_op(const void *a, const void *b)
{
    const mt_tnode *x = *(mt_tnode *const *)a, *y = *(mt_tnode *const *)b;
    return (x->check.args[1] > y->check.args[1]) - (x->check.args[1] < y->check.args[1]);
}

/* SWITCH reg n (op off)... with each case's children followed by a JUMP to the end. */
static void emit_switch(compiler *C, mt_tnode **cases, size_t n)
{
    qsort(cases, n, sizeof *cases, by_op);
    uint32_t pc = here(C);
    word(C, mt_word(MI_SWITCH, 2 + 2 * (uint32_t)n), cases[0]);
    word(C, 0, NULL); /* skip: the end, patched below */
    word(C, cases[0]->check.args[0], NULL);
    word(C, (uint32_t)n, NULL);
    for (size_t i = 0; i < n; i++) {
        word(C, cases[i]->check.args[1], cases[i]);
        word(C, 0, NULL);
    }
    VEC(uint32_t) jumps = {0};
    for (size_t i = 0; i < n; i++) {
        C->code.items[pc + 5 + 2 * i] = here(C);
        emit_kids(C, &cases[i]->kids);
        vec_push(&jumps, here(C) + 1);
        word(C, MI_JUMP, NULL);
        word(C, 0, NULL);
    }
    uint32_t end = here(C);
    C->code.items[pc + 1] = end;
    for (size_t i = 0; i < jumps.len; i++)
        C->code.items[jumps.items[i]] = end;
    vec_free(&jumps);
}

static void emit_block(compiler *C, const mt_tnode *t)
{
    const mt_check *c = &t->check;
    uint32_t pc = here(C);
    word(C, mt_word(c->op, c->nargs), t);
    word(C, 0, NULL);
    for (uint32_t i = 0; i < c->nargs; i++)
        word(C, c->args[i], NULL);
    if (c->op == MI_ACCEPT) {
        /* an accept entry per ACCEPT instruction: a variant rooted at several ops has several */
        C->code.items[pc + 2] = (uint32_t)C->accepts.len;
        vec_push(&C->accepts, ((mt_accept){.v = &C->a->variants[c->args[0]], .pc = pc}));
    }
    emit_kids(C, &t->kids);
    if (c->op == MI_JOIN) {
        word(C, MI_NEXT, NULL);
        word(C, pc, NULL);
    }
    C->code.items[pc + 1] = here(C);
}

/* The children of a trie node, in insertion order, except that single-op checks of one register
 * are gathered into a SWITCH where the first of them stood. */
static void emit_kids(compiler *C, const mt_kids *list)
{
    size_t n = list->n;
    if (n == 0) /* a leaf: most trie nodes */
        return;
    if (n == 1) {
        emit_block(C, list->first);
        return;
    }
    enum { FEW = 16 }; /* most nodes have few children: no allocation for them */
    uint8_t done_few[FEW] = {0};
    mt_tnode *group_few[FEW], *kids_few[FEW];
    uint8_t *done = n <= FEW ? done_few : calloc(n, 1);
    mt_tnode **group = n <= FEW ? group_few : malloc(n * sizeof *group);
    mt_tnode **kids = n <= FEW ? kids_few : malloc(n * sizeof *kids);
    FR_CHECK(done && group && kids);
    size_t k = 0;
    for (mt_tnode *t = list->first; t; t = t->next)
        kids[k++] = t;
    FR_CHECK(k == n);
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        size_t count = 0;
        if (is_single_op(kids[i]))
            for (size_t j = i; j < n; j++)
                if (!done[j] && is_single_op(kids[j]) &&
                    kids[j]->check.args[0] == kids[i]->check.args[0]) {
                    group[count++] = kids[j];
                    done[j] = 1;
                }
        if (count >= 2) {
            emit_switch(C, group, count);
        } else {
            done[i] = 1;
            emit_block(C, kids[i]);
        }
    }
    if (done != done_few)
        free(done);
    if (group != group_few)
        free(group);
    if (kids != kids_few)
        free(kids);
}

/* ---- the whole compilation ---------------------------------------------------------------------- */

static void lower_all(compiler *C, dsl_rule *const *rules, uint32_t nrules, dg_context *dg)
{
    mt_automaton *a = C->a;
    a->rules = ar_alloc_array(a->arena, nrules, sizeof *a->rules);
    for (uint32_t i = 0; i < nrules; i++) {
        if (!rules[i]->checked)
            continue;
        size_t before = C->variants.len;
        if (mt_lower_rule(a->arena, rules[i], a->nrules, &C->variants, dg)) {
            a->rules[a->nrules++] = rules[i];
            /* a sequence goes under each op its root may be */
            for (size_t k = before; k < C->variants.len; k++)
                a->stats.checks += C->variants.items[k].nchecks * C->variants.items[k].root->nops;
        }
    }
    a->stats.rules = a->nrules;
    a->stats.variants = (uint32_t)C->variants.len;
    a->nvariants = (uint32_t)C->variants.len;
    a->variants = ar_alloc_array(a->arena, a->nvariants, sizeof *a->variants);
    if (a->nvariants)
        memcpy(a->variants, C->variants.items, a->nvariants * sizeof *a->variants);
    vec_free(&C->variants);
}

static void build_tries(compiler *C)
{
    mt_automaton *a = C->a;
    for (uint32_t k = 0; k < a->nvariants; k++) {
        mt_variant *v = &a->variants[k];
        finish_checks(C, v, k);
        if (v->nregs > a->stats.registers)
            a->stats.registers = v->nregs;
        if (v->nloops > a->nloops)
            a->nloops = v->nloops;
        for (uint32_t i = 0; i < v->root->nops; i++)
            insert(C, &C->tries[v->root->ops[i]], v);
    }
}

static void emit_all(compiler *C)
{
    mt_automaton *a = C->a;
    word(C, 0, NULL); /* offset 0 means "no block" */
    for (unsigned op = 0; op < IR_OP_COUNT; op++) {
        if (!C->tries[op].n)
            continue;
        a->root[op] = here(C);
        a->stats.root_ops++;
        emit_kids(C, &C->tries[op]);
        a->root_end[op] = here(C);
        word(C, MI_END, NULL);
    }
}

/* Moves the compiler's growing vectors into the automaton's arena. */
static void *keep(ar_arena *arena, const void *items, size_t n, size_t size)
{
    void *copy = ar_alloc_array(arena, n, size);
    if (n)
        memcpy(copy, items, n * size);
    return copy;
}

mt_automaton *mt_compile_rules(dsl_rule *const *rules, uint32_t nrules, dg_context *dg)
{
    ar_arena *arena = ar_new();
    mt_automaton *a = ar_alloc(arena, sizeof *a);
    a->arena = arena;
    compiler *C = calloc(1, sizeof *C);
    FR_CHECK(C != NULL);
    C->a = a;
    lower_all(C, rules, nrules, dg);
    build_tries(C);
    emit_all(C);

    a->ncode = (uint32_t)C->code.len;
    a->code = keep(arena, C->code.items, C->code.len, sizeof *a->code);
    a->at = keep(arena, C->at.items, C->at.len, sizeof *a->at);
    a->naccepts = (uint32_t)C->accepts.len;
    a->accepts = keep(arena, C->accepts.items, C->accepts.len, sizeof *a->accepts);
    a->nattrs = (uint32_t)C->attrs.len;
    a->attrs = keep(arena, C->attrs.items, C->attrs.len, sizeof *a->attrs);
    a->stats.words = a->ncode;

    free(C->edges.slots);
    vec_free(&C->code);
    vec_free(&C->at);
    vec_free(&C->accepts);
    vec_free(&C->attrs);
    free(C);
    return a;
}

mt_automaton *mt_compile(const dsl_ruleset *rs, dg_context *dg)
{
    return mt_compile_rules(rs->rules, rs->nrules, dg);
}

void mt_free(mt_automaton *a)
{
    if (a)
        ar_free(a->arena);
}

void mt_get_stats(const mt_automaton *a, mt_stats *out)
{
    *out = a->stats;
}

dsl_rule *const *mt_rules(const mt_automaton *a, uint32_t *count)
{
    *count = a->nrules;
    return a->rules;
}

const char *mt_opcode_name(mt_opcode op)
{
    static const char *const names[] = {
#define MT_OPCODE_NAME(id, name) name,
        MT_OPCODES(MT_OPCODE_NAME)
#undef MT_OPCODE_NAME
    };
    FR_CHECK((unsigned)op < MI_COUNT);
    return names[op];
}
