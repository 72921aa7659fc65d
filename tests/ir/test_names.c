/* ir/names.c, the graph's value-name map: every operation against a plain model (an array of
 * names with their values), through small tables where probes wrap around the end and removals
 * shift entries back, through growth from empty, and through the one-pass removal; then the
 * graph's own callers (ir_add_*, ir_fresh_name, ir_compact_used) on a table on huge pages. */
#include "base/diag.h"
#include "ir/ir.h"

#include "tests/unit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

/* Every slot's entry is found from its home by a probe that meets no empty slot (what makes the
 * lookups right), and the count of entries is len. */
static void check_table(const ir_names *m)
{
    size_t entries = 0;
    for (size_t i = 0; i < m->cap; i++) {
        const ir_value *v = ir_names_value_at(m, i);
        if (!v)
            continue;
        entries++;
        CHECK(ir_names_get(m, v->name, strlen(v->name)) == v);
    }
    CHECK_INT(entries, m->len);
    if (m->cap)
        CHECK(m->len < m->cap);
}

enum { NAMES = 3000 };

typedef struct {
    char name[16];
    ir_value *v; /* the value the map should give for name, or NULL */
} model_name;

/* Random claims, lookups and removals of NAMES names (a few lengths, under and over 8 bytes),
 * compared with the model after each step; every 500 steps, a one-pass removal of a random part. */
static void run_random(ir_names *m, ar_arena *arena, model_name *model, int steps)
{
    for (int step = 0; step < steps; step++) {
        model_name *e = &model[rnd(NAMES)];
        size_t len = strlen(e->name);
        uint32_t op = rnd(3);
        if (op == 0) { /* define */
            size_t at;
            bool claimed = ir_names_claim(m, e->name, len, &at);
            CHECK(claimed == (e->v == NULL));
            if (claimed) {
                CHECK(at < m->cap && ir_names_value_at(m, at) == NULL);
                e->v = ir_names_new_value(arena, e->name, len);
                CHECK_STR(e->v->name, e->name);
                ir_names_set(m, at, e->v);
            }
        } else if (op == 1) { /* look up */
            CHECK(ir_names_get(m, e->name, len) == e->v);
        } else if (e->v) { /* drop */
            size_t before = m->len;
            ir_names_remove(m, e->v);
            CHECK_INT(m->len, before - 1);
            ir_names_remove(m, e->v); /* no longer named: nothing changes */
            CHECK_INT(m->len, before - 1);
            e->v = NULL;
        }
        if (step % 500 == 499) {
            /* values[id] with live[id] false are removed in one pass; a value left out of the
             * list stays; seen marks the live values of the list */
            ir_value **values = calloc(NAMES, sizeof *values);
            bool *live = calloc(NAMES, sizeof *live);
            bool *seen = calloc(NAMES, sizeof *seen);
            CHECK(values && live && seen);
            for (uint32_t i = 0; i < NAMES; i++) {
                if (!model[i].v)
                    continue;
                model[i].v->id = i;
                values[i] = rnd(8) ? model[i].v : NULL;
                live[i] = rnd(4) != 0;
            }
            ir_names_remove_dead(m, values, NAMES, live, step % 1000 == 999 ? NULL : seen);
            for (uint32_t i = 0; i < NAMES; i++) {
                CHECK(seen[i] == (step % 1000 != 999 && values[i] && live[i]));
                if (values[i] && !live[i])
                    model[i].v = NULL;
            }
            free(values);
            free(live);
            free(seen);
        }
        if (step % 97 == 0)
            check_table(m);
    }
    check_table(m);
    for (int i = 0; i < NAMES; i++)
        CHECK(ir_names_get(m, model[i].name, strlen(model[i].name)) == model[i].v);
}

static void test_random_from_empty(void)
{
    ar_arena *arena = ar_new();
    model_name *model = calloc(NAMES, sizeof *model);
    CHECK(model != NULL);
    for (int i = 0; i < NAMES; i++)
        snprintf(model[i].name, sizeof model[i].name, i % 3 ? "v%d" : "layer.%d.out", i);
    ir_names m = {0};
    CHECK(ir_names_get(&m, "v1", 2) == NULL);
    ir_names_prefetch(&m, "v1", 2); /* an empty map has no slots to fetch */
    ir_names_remove_dead(&m, NULL, 0, NULL, NULL);
    run_random(&m, arena, model, 40000);
    ir_names_free(&m);
    free(model);
    ar_free(arena);
}

/* A table kept small (names defined and dropped around 40 live): probes wrap around its end
 * and every removal shifts back entries whose probes passed it. */
static void test_random_small(void)
{
    ar_arena *arena = ar_new();
    ir_names m = {0};
    model_name few[50] = {0};
    for (int i = 0; i < 50; i++)
        snprintf(few[i].name, sizeof few[i].name, "n%d", i);
    for (int round = 0; round < 400; round++) {
        model_name *e = &few[rnd(50)];
        size_t len = strlen(e->name);
        size_t at;
        if (rnd(2)) {
            bool claimed = ir_names_claim(&m, e->name, len, &at);
            CHECK(claimed == (e->v == NULL));
            if (claimed)
                ir_names_set(&m, at, e->v = ir_names_new_value(arena, e->name, len));
        } else if (e->v) {
            ir_names_remove(&m, e->v);
            e->v = NULL;
        }
        check_table(&m);
        for (int i = 0; i < 50; i++)
            CHECK(ir_names_get(&m, few[i].name, strlen(few[i].name)) == few[i].v);
    }
    CHECK(m.cap <= 128); /* the table grew with the live names, not with every name defined */
    ir_names_free(&m);
    ar_free(arena);
}

/* Names are compared as the bytes given: a prefix, an extension, a key with a NUL in it, and the
 * empty name are other names. */
static void test_exact_bytes(void)
{
    ar_arena *arena = ar_new();
    ir_names m = {0};
    ir_names_reserve(&m, 4);
    const char *names[] = {"a", "ab", "", "abcdefgh", "abcdefghi"};
    for (int i = 0; i < 5; i++) {
        size_t at;
        CHECK(ir_names_claim(&m, names[i], strlen(names[i]), &at));
        ir_names_set(&m, at, ir_names_new_value(arena, names[i], strlen(names[i])));
    }
    for (int i = 0; i < 5; i++) {
        const ir_value *v = ir_names_get(&m, names[i], strlen(names[i]));
        CHECK(v != NULL && strcmp(v->name, names[i]) == 0);
    }
    CHECK(ir_names_get(&m, "a\0b", 3) == NULL);
    CHECK(ir_names_get(&m, "ab\0", 3) == NULL);
    CHECK(ir_names_get(&m, "abc", 3) == NULL);
    CHECK(ir_names_get(&m, "abcdefg", 7) == NULL);
    CHECK(ir_names_get(&m, "abcdefgh", 8) != NULL); /* a key need not end with a NUL */
    CHECK(ir_names_get(&m, "abcdefghij", 9) == ir_names_get(&m, "abcdefghi", 9));
    CHECK(ir_names_get(&m, "abcdefghx", 9) == NULL);
    check_table(&m);
    ir_names_free(&m);
    ar_free(arena);
}

/* Through the graph: 300,000 names (a table on huge pages), redefinitions refused, fresh names
 * past the taken ones, and names given back by ir_compact_used. */
static void test_graph_names(void)
{
    ir_graph *g = ir_graph_new("t");
    ir_type t = {.dtype = IR_F32, .rank = 1, .dims = {4}};
    enum { N = 300000 };
    ir_names_reserve(&g->by_name, N);
    ir_value *x = ir_add_input(g, "x", &t);
    CHECK(ir_add_input(g, "x", &t) == NULL);
    char name[32];
    const char *out[1] = {name};
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        ir_node *n = ir_add_node(g, IR_OP_Relu, 1, out, 1);
        CHECK(n != NULL);
        ir_set_input(n, 0, x);
        if (i % 2)
            n->dead = true; /* odd ones go */
        else
            ir_add_output(g, n->outputs[0]);
    }
    CHECK(g->by_name.cap * IR_NAME_SLOT >= 2 * 1024 * 1024);
    snprintf(name, sizeof name, "v7");
    CHECK(ir_add_node(g, IR_OP_Relu, 1, out, 1) == NULL);
    CHECK_STR(ir_fresh_name(g, "v7"), "v7_1");
    CHECK_STR(ir_fresh_name(g, "w"), "w");
    ir_compute_uses(g);
    ir_compact_used(g);
    CHECK_INT(g->by_name.len, 1 + N / 2);
    check_table(&g->by_name);
    CHECK(ir_find_value(g, "v7") == NULL && ir_find_value(g, "v8") != NULL);
    CHECK(ir_add_node(g, IR_OP_Relu, 1, out, 1) != NULL); /* "v7" is free again */
    CHECK(ir_find_value_n(g, "v7xyz", 2) == g->nodes.items[g->nodes.len - 1]->outputs[0]);
    ir_graph_free(g);
}

/* Compaction's pass over the map (many values dropped) keeps what it found for validation, which
 * then does not read the map again; any change of the map drops it, and validation reads the map
 * itself: a name removed after compaction is still reported, with the same message. */
static void test_graph_seen(void)
{
    for (int remove = 0; remove < 2; remove++) {
        ir_graph *g = ir_graph_new("t");
        ir_type t = {.dtype = IR_F32, .rank = 1, .dims = {4}};
        ir_value *x = ir_add_input(g, "x", &t);
        char name[32];
        const char *out[1] = {name};
        for (int i = 0; i < 1000; i++) {
            snprintf(name, sizeof name, "v%d", i);
            ir_node *n = ir_add_node(g, IR_OP_Relu, 1, out, 1);
            CHECK(n != NULL);
            ir_set_input(n, 0, x);
            if (i % 2)
                n->dead = true;
            else
                ir_add_output(g, n->outputs[0]);
        }
        ir_compact(g);
        CHECK_INT(g->values.len, 501);
        CHECK(g->by_name.seen != NULL && g->by_name.nseen == g->values.len);
        for (size_t i = 0; i < g->values.len; i++)
            CHECK(g->by_name.seen[i]);
        /* another list, or one of another length, takes nothing (and drops it) */
        bool *seen = ir_names_take_seen(&g->by_name, g->values.items, g->values.len - 1);
        CHECK(seen == NULL && g->by_name.seen == NULL);
        seen = calloc(g->values.len, sizeof *seen);
        CHECK(seen != NULL);
        for (size_t i = 0; i < g->values.len; i++)
            seen[i] = true;
        ir_names_keep_seen(&g->by_name, seen, g->values.items, g->values.len);
        if (remove) {
            ir_names_remove(&g->by_name, ir_find_value(g, "v8"));
            CHECK(g->by_name.seen == NULL);
        }
        dg_context *dg = dg_new();
        CHECK(ir_validate(g, dg) == !remove);
        CHECK(g->by_name.seen == NULL); /* taken */
        CHECK_INT(dg_error_count(dg), remove);
        if (remove)
            CHECK_STR(dg_first_error(dg), "'v8' is missing from the graph's names");
        dg_free(dg);
        ir_graph_free(g);
    }
}

int main(void)
{
    RUN(test_random_from_empty);
    RUN(test_random_small);
    RUN(test_exact_bytes);
    RUN(test_graph_names);
    RUN(test_graph_seen);
    return unit_finish();
}
