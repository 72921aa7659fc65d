/* Common subexpressions (docs/canon.md, "Common subexpressions"): a node computing what an earlier
 * node computes (the same op, the same attributes, the same inputs after the merges before it)
 * is replaced by that node, and a small constant equal to an earlier one (type and bytes) by it.
 * Nodes are visited in topological order, so Sub(x, ReduceMean(x)) written twice merges at once.
 * The key is the node serialized; the first node with a key stays: no dependence on addresses. */
#include "canon/internal.h"

#include "base/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Constants up to this many elements are compared by value; larger ones up to SPLAT_CONST
 * elements when every element is the same (a splat: the zeros torch's classic exporter folds
 * each layer's masked_fill into), by their type and that element. */
enum { SMALL_CONST = 16, SPLAT_CONST = 1 << 16 };

/* Ops never merged: Dropout in training mode draws a new mask each time; QDQ exporters give each
 * consumer its own QuantizeLinear/DequantizeLinear on purpose (the quantized rules fuse a
 * DequantizeLinear into the one GEMM that reads it: shared, it would be read outside the match). */
static const bool keep_op[IR_OP_COUNT] = {
    [IR_OP_Dropout] = true,
    [IR_OP_QuantizeLinear] = true,
    [IR_OP_DequantizeLinear] = true,
};

static int by_attr_name(const void *a, const void *b)
{
    return strcmp((*(const ir_attr *const *)a)->name, (*(const ir_attr *const *)b)->name);
}

/* A byte buffer that grows. */
typedef struct {
    char *b;
    size_t len, cap;
} buf;

static void put(buf *k, const void *p, size_t n)
{
    if (k->len + n > k->cap) {
        k->cap = (k->len + n) * 2 + 64;
        k->b = realloc(k->b, k->cap);
        FR_CHECK(k->b != NULL);
    }
    memcpy(k->b + k->len, p, n);
    k->len += n;
}

/* The node's key: op, inputs (resolved), attributes sorted by name. */
static void node_key(cn_ctx *c, buf *k, const ir_node *n)
{
    k->len = 0;
    uint32_t head[3] = {(uint32_t)n->op, n->ninputs, n->noutputs};
    put(k, head, sizeof head);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_value *v = cn_resolve(c, n->inputs[i]);
        uint32_t id = v ? v->id : UINT32_MAX;
        put(k, &id, sizeof id);
    }
    const ir_attr *one[8], **attrs = n->nattrs <= 8 ? one : malloc(n->nattrs * sizeof *attrs);
    FR_CHECK(attrs != NULL);
    for (uint32_t a = 0; a < n->nattrs; a++)
        attrs[a] = &n->attrs[a];
    qsort(attrs, n->nattrs, sizeof *attrs, by_attr_name);
    for (uint32_t a = 0; a < n->nattrs; a++) {
        const ir_attr *at = attrs[a];
        put(k, at->name, strlen(at->name) + 1);
        uint32_t kc[2] = {(uint32_t)at->kind, at->count};
        put(k, kc, sizeof kc);
        switch (at->kind) {
        case IR_ATTR_INT: put(k, &at->v.i, sizeof at->v.i); break;
        case IR_ATTR_FLOAT: put(k, &at->v.f, sizeof at->v.f); break;
        case IR_ATTR_STRING: put(k, at->v.s, strlen(at->v.s) + 1); break;
        case IR_ATTR_INTS: put(k, at->v.ints, sizeof *at->v.ints * at->count); break;
        case IR_ATTR_FLOATS: put(k, at->v.floats, sizeof *at->v.floats * at->count); break;
        }
    }
    if (attrs != one)
        free(attrs);
}

/* A hash set of keys (open addressing; each slot keeps its key's full hash, compared before the
 * bytes), mapping a key to the first thing that had it. */
typedef struct {
    uint64_t hash;
    const char *key;
    size_t len;
    void *first;
} slot;

typedef struct {
    slot *s;
    size_t cap, len;
    ar_arena *arena; /* the keys */
} table;

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then a finalizer that mixes every bit */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static slot *lookup(table *t, uint64_t h, const char *key, size_t len)
{
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        slot *s = &t->s[i];
        if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
            return s;
    }
}

/* The first thing with this key; `first` is recorded (with a copy of the key) when it is new. */
static void *first_with(table *t, const char *key, size_t len, void *first)
{
    if ((t->len + 1) * 2 > t->cap) {
        table bigger = {calloc(t->cap ? t->cap * 2 : 1024, sizeof(slot)),
                        t->cap ? t->cap * 2 : 1024, t->len, t->arena};
        FR_CHECK(bigger.s != NULL);
        for (size_t i = 0; i < t->cap; i++)
            if (t->s[i].key)
                *lookup(&bigger, t->s[i].hash, t->s[i].key, t->s[i].len) = t->s[i];
        free(t->s);
        *t = bigger;
    }
    uint64_t h = hash_bytes(key, len);
    slot *s = lookup(t, h, key, len);
    if (s->key)
        return s->first;
    char *copy = ar_alloc(t->arena, len ? len : 1);
    memcpy(copy, key, len);
    *s = (slot){h, copy, len, first};
    t->len++;
    return NULL;
}

/* Whether the n elements of `size` bytes at data are all the same bytes. */
static bool splat(const unsigned char *data, int64_t n, int64_t size)
{
    for (int64_t i = 1; i < n; i++)
        if (memcmp(data, data + i * size, (size_t)size) != 0)
            return false;
    return true;
}

/* A small constant's key: its type and its bytes (a larger splat's: its type and its one element);
 * false for another large or an unreadable one. */
static bool const_key(ir_graph *g, buf *k, ir_value *v)
{
    int64_t n, nbytes;
    if (!ir_type_numel(&v->type, &n) || n > SPLAT_CONST || !ir_type_nbytes(&v->type, &nbytes))
        return false;
    dg_context *dg = dg_new();
    const unsigned char *data = ir_const_data(g, v, dg);
    dg_free(dg);
    if (!data)
        return false;
    if (n > SMALL_CONST) {
        if (nbytes % n != 0 || !splat(data, n, nbytes / n))
            return false;
        nbytes /= n;
    }
    ir_type t;
    memset(&t, 0, sizeof t); /* padding too: the key is compared as bytes */
    t.dtype = v->type.dtype;
    t.rank = v->type.rank;
    t.layout = v->type.layout;
    for (int8_t d = 0; d < v->type.rank; d++)
        t.dims[d] = v->type.dims[d];
    k->len = 0;
    put(k, &t, sizeof t);
    put(k, data, (size_t)nbytes);
    return true;
}

uint32_t cn_cse(cn_ctx *c)
{
    ir_graph *g = c->g;
    buf k = {0};
    table consts = {.arena = ar_new()}, nodes = {.arena = consts.arena};
    uint32_t merged = 0;
    bool refused = false;
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        if (v->kind != IR_VALUE_CONST || !const_key(g, &k, v))
            continue;
        ir_value *first = first_with(&consts, k.b, k.len, v);
        if (first && cn_forward(c, v, first))
            merged++;
        else if (first)
            refused = true;
    }
    for (size_t j = 0; j < g->nodes.len; j++) {
        ir_node *n = g->nodes.items[j];
        if (n->dead || keep_op[n->op] || n->ninputs == 0)
            continue;
        /* a duplicate reads the same inputs: when this node is the only reader of one, there is
         * none (most nodes of a chain), and building its key is skipped */
        bool alone = false;
        for (uint32_t i = 0; i < n->ninputs && !alone; i++) {
            const ir_value *v = cn_resolve(c, n->inputs[i]);
            alone = v && !cn_shared(c, v);
        }
        if (alone)
            continue;
        node_key(c, &k, n);
        ir_node *first = first_with(&nodes, k.b, k.len, n);
        if (!first)
            continue;
        bool ok = true;
        for (uint32_t o = 0; o < n->noutputs && ok; o++)
            ok = !n->outputs[o]->is_output &&
                 ir_type_equal(&n->outputs[o]->type, &first->outputs[o]->type);
        if (!ok) {
            refused = true;
            continue;
        }
        for (uint32_t o = 0; o < n->noutputs; o++)
            FR_CHECK(cn_forward(c, n->outputs[o], first->outputs[o]));
        n->dead = true;
        merged++;
    }
    c->cse_fixed = merged == 0 && !refused;
    free(consts.s);
    free(nodes.s);
    ar_free(consts.arena);
    free(k.b);
    return merged;
}
