/* Removing what a round left unread (rewrite/dce.c; docs/matcher.md, "Unread nodes"), on a round's
 * end built by hand: which nodes go, and the marks validate_round takes (the removed nodes' outputs
 * and their live readers of the round's start, and how many of the round's start's went). With the
 * use lists read (only the round's new nodes counted) and not (a forward re-pointed a reader: every
 * reader counted); a new node left unread giving its reads back; states whose `mark` still holds
 * a walk's stamp, as the commit leaves them; and new nodes keeping their states in removed
 * members' slots. */
#include "rewrite/internal.h"
#include "tests/matcher/graphkit.h"
#include "tests/unit.h"

#include "base/check.h"

#include <stdlib.h>

/* A round's end as the driver leaves it: every node in the order, the use lists those of the
 * round's start (the nodes from nodes0 on, the round's, in none), and the named nodes removed by
 * the round's commit. Each node of the round's start has a state whose stamp is stale; a new node
 * has its own, or with `slots` (by id - nodes0, UINT32_MAX for none) shares a removed member's
 * (rw_state_share). */
static void round_end(rw_ctx *ctx, gk_graph *t, size_t nodes0, const char *const *dead,
                      const uint32_t *slots)
{
    ir_graph *g = t->g;
    *ctx = (rw_ctx){.g = g, .st_shared = slots != NULL};
    for (size_t i = 0; i < g->nodes.len; i++) {
        FR_CHECK(g->nodes.items[i]->id == i);
        if (i < nodes0 || !slots)
            vec_push(&ctx->st, ((rw_node_state){.pos = (uint32_t)i, .claimed_by = -1, .mark = 3}));
        else
            vec_push(&ctx->st_new, slots[i - nodes0]);
        vec_push(&ctx->order, (uint32_t)i);
    }
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        uint32_t kept = 0;
        for (uint32_t u = 0; u < v->nuses; u++)
            if (v->uses[u]->id < nodes0)
                v->uses[kept++] = v->uses[u];
        v->nuses = kept;
    }
    for (size_t i = 0; dead[i]; i++) {
        ir_node *n = gk_node(t, dead[i]);
        n->dead = true;
        rw_order_set(ctx, n->id, NULL);
    }
}

static void round_free(rw_ctx *ctx)
{
    free(ctx->marks.node);
    free(ctx->marks.value);
    vec_free(&ctx->st);
    vec_free(&ctx->st_new);
    vec_free(&ctx->order);
}

/* The nodes (by output name) that are dead, the values marked and the nodes marked, each as a
 * space-separated list in node and value order. */
static char *outcome(const rw_ctx *ctx)
{
    const ir_graph *g = ctx->g;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("dead:", f);
    for (size_t i = 0; i < g->nodes.len; i++)
        if (g->nodes.items[i]->dead)
            fprintf(f, " %s", g->nodes.items[i]->outputs[0]->name);
    fputs("; values:", f);
    for (size_t i = 0; i < g->values.len; i++)
        if (ctx->marks.value[i])
            fprintf(f, " %s", g->values.items[i]->name);
    fputs("; readers:", f);
    for (size_t i = 0; i < g->nodes.len; i++)
        if (ctx->marks.node[i])
            fprintf(f, " %s", g->nodes.items[i]->outputs[0]->name);
    fclose(f);
    return text;
}

/* Runs rw_remove_unread on the graph's round end: `removed` nodes go, `removed_old` of the round's
 * start count (the commit's included), the outcome is `want`, and the removed ones leave the
 * order. */
static void check_dce(const char *graph, size_t nodes0, bool forwarded, const char *const *dead,
                      size_t removed, size_t removed_old, const char *want)
{
    gk_graph *t = gk_parse(graph);
    rw_ctx ctx;
    round_end(&ctx, t, nodes0, dead, NULL);
    ctx.round_forwarded = forwarded;
    CHECK_INT(rw_remove_unread(&ctx, nodes0), removed);
    CHECK_INT(ctx.marks.removed, removed_old);
    char *got = outcome(&ctx);
    CHECK_STR(got, want);
    for (size_t i = 0; i < ctx.order.len; i++)
        CHECK(!rw_order_at(&ctx, i) || !rw_order_at(&ctx, i)->dead);
    free(got);
    round_free(&ctx);
    gk_free(t);
}

/* d is the commit's: the chain b > c that fed only d goes, a stays for its other reader keep, the
 * graph output o stays, and so does lone, unread before the round. e still reads d's output (a
 * fused node's now): it is marked. */
static const char chain[] = "graph chain {\n"
                            "  input  x : f32[4]\n"
                            "  a = Relu(x)\n"
                            "  b = Neg(a)\n"
                            "  c = Exp(b)\n"
                            "  o = Abs(x)\n"
                            "  d = Add(c, o)\n"
                            "  e = Neg(d)\n"
                            "  keep = Sigmoid(a)\n"
                            "  lone = Tanh(x)\n"
                            "  output e\n"
                            "  output o\n"
                            "  output keep\n"
                            "}\n";

static void test_chain(void)
{
    const char *const dead[] = {"d", NULL};
    check_dce(chain, 8, false, dead, 2, 3, "dead: b c d; values: b c d; readers: e");
    /* the same with a forward this round: every live reader counted, the same outcome */
    check_dce(chain, 8, true, dead, 2, 3, "dead: b c d; values: b c d; readers: e");
}

/* The round made b, f and c (from node 2 on) and removed c again: b is left unread and goes,
 * giving its read of a back; a goes with it unless f, new too (in no use list), still reads it. */
static const char made[] = "graph made {\n"
                           "  input  x : f32[4]\n"
                           "  a = Relu(x)\n"
                           "  keep = Sigmoid(x)\n"
                           "  b = Neg(a)\n"
                           "  f = Abs(a)\n"
                           "  c = Exp(b)\n"
                           "  output keep\n"
                           "  output f\n"
                           "}\n";

static void test_new_node_unread(void)
{
    const char *const c[] = {"c", NULL};
    check_dce(made, 2, false, c, 1, 0, "dead: b c; values: b; readers:");
    const char *const fc[] = {"f", "c", NULL};
    check_dce(made, 2, false, fc, 2, 1, "dead: a b f c; values: a b; readers:");
}

/* A forward re-pointed r from b to x this round (its use list still names r): with every reader
 * counted, b and a go, and r, still listed as b's reader, is marked. */
static const char repointed[] = "graph repointed {\n"
                                "  input  x : f32[4]\n"
                                "  a = Relu(x)\n"
                                "  b = Neg(a)\n"
                                "  i = Identity(b)\n"
                                "  r = Exp(b)\n"
                                "  output r\n"
                                "}\n";

static void test_forwarded(void)
{
    gk_graph *t = gk_parse(repointed);
    rw_ctx ctx;
    const char *const dead[] = {"i", NULL};
    round_end(&ctx, t, 4, dead, NULL);
    ctx.round_forwarded = true;
    gk_node(t, "r")->inputs[0] = ir_find_value(t->g, "x");
    CHECK_INT(rw_remove_unread(&ctx, 4), 2);
    CHECK_INT(ctx.marks.removed, 3);
    char *got = outcome(&ctx);
    CHECK_STR(got, "dead: a b i; values: a b i; readers: r");
    free(got);
    round_free(&ctx);
    gk_free(t);
}

/* The new nodes keep their states in the slots of members the commit removed (f in m's, h in
 * m2's; c, removed again, has none): f stays for its reader h, counted in m's slot, and m and m2
 * are marked as the commit's. */
static const char shared[] = "graph shared {\n"
                             "  input  x : f32[4]\n"
                             "  a = Relu(x)\n"
                             "  m = Neg(x)\n"
                             "  m2 = Tanh(x)\n"
                             "  keep = Sigmoid(x)\n"
                             "  f = Abs(a)\n"
                             "  h = Exp(f)\n"
                             "  c = Neg(f)\n"
                             "  output keep\n"
                             "  output h\n"
                             "}\n";

static void test_shared_states(void)
{
    gk_graph *t = gk_parse(shared);
    rw_ctx ctx;
    const char *const dead[] = {"m", "m2", "c", NULL};
    const uint32_t slots[] = {1, 2, UINT32_MAX};
    round_end(&ctx, t, 4, dead, slots);
    CHECK_INT(rw_remove_unread(&ctx, 4), 0);
    CHECK_INT(ctx.marks.removed, 2);
    char *got = outcome(&ctx);
    CHECK_STR(got, "dead: m m2 c; values: m m2; readers:");
    free(got);
    round_free(&ctx);
    gk_free(t);
}

int main(void)
{
    RUN(test_chain);
    RUN(test_new_node_unread);
    RUN(test_forwarded);
    RUN(test_shared_states);
    return unit_finish();
}
