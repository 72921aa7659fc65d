/* Common subexpressions (docs/canon.md, "Common subexpressions"): a node computing what an earlier
 * node computes (the same op, the same attributes, the same inputs after the merges before it)
 * is replaced by that node, and a small constant equal to an earlier one (type and bytes) by it.
 * Nodes are visited in topological order, so Sub(x, ReduceMean(x)) written twice merges at once.
 * The key is the node serialized; the first node with a key stays: no dependence on addresses. */
#include "canon/internal.h"

#include "base/check.h"

#include <math.h>
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
    if (n->nattrs > 1)
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

/* A hash set of keys (open addressing), mapping a key to the first thing that had it. A slot
 * keeps the key's hash and the thing, not the key: a thing whose hash matches has its key built
 * again to be compared (equal hashes are mostly equal keys). */
typedef struct {
    uint64_t hash;
    void *first;
} slot;

typedef struct {
    slot *s;
    size_t cap, len;
} table;

static uint64_t hash_bytes(const char *p, size_t n)
{
    /* eight bytes a step (keys are mostly ids, types and tensor bytes), then a finalizer that mixes
     * every bit; only equal keys match, so the hash decides no result, only the probes */
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n > i)
        memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* Whether `first`, in the table, has the key being looked up. */
typedef bool (*same_key_fn)(void *ctx, void *first);

/* The first thing with the key of hash h (same_key tells), or NULL after recording `first` (not
 * NULL) as the first with it. */
static void *first_with(table *t, uint64_t h, void *first, same_key_fn same_key, void *ctx)
{
    if ((t->len + 1) * 2 > t->cap) {
        table bigger = {calloc(t->cap ? t->cap * 2 : 1024, sizeof(slot)),
                        t->cap ? t->cap * 2 : 1024, t->len};
        FR_CHECK(bigger.s != NULL);
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->s[i].first)
                continue;
            size_t j = t->s[i].hash & (bigger.cap - 1);
            while (bigger.s[j].first)
                j = (j + 1) & (bigger.cap - 1);
            bigger.s[j] = t->s[i];
        }
        free(t->s);
        *t = bigger;
    }
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        slot *s = &t->s[i];
        if (!s->first) {
            *s = (slot){h, first};
            t->len++;
            return NULL;
        }
        if (s->hash == h && same_key(ctx, s->first))
            return s->first;
    }
}

/* Whether the n elements of `size` bytes at data are all the same bytes. */
static bool splat(const unsigned char *data, int64_t n, int64_t size)
{
    for (int64_t i = 1; i < n; i++)
        if (memcmp(data, data + i * size, (size_t)size) != 0)
            return false;
    return true;
}

/* The first `count` elements of a random() constant that has no data in memory yet, drawn into
 * `scratch` (room for SMALL_CONST elements of 8 bytes) or a buffer of their own (*owned, which the
 * caller frees) rather than into the graph (most are never read again): what ir_const_data would
 * give, or NULL where it would refuse (a range that is not finite, lo > hi). */
static const unsigned char *random_bytes(const ir_value *v, int64_t count, unsigned char *scratch,
                                         unsigned char **owned)
{
    const ir_const *c = v->konst;
    size_t size = ir_dtype_size(v->type->dtype);
    if (!isfinite(c->lo) || !isfinite(c->hi) || c->lo > c->hi || size == 0)
        return NULL;
    unsigned char *out = scratch;
    if ((size_t)count * size > SMALL_CONST * 8) {
        out = *owned = malloc((size_t)count * size);
        FR_CHECK(out != NULL);
    }
    ir_random_fill_at(c->seed, 0, c->lo, c->hi, v->type->dtype, out, (size_t)count);
    return out;
}

/* The element counts and sizes of the constants' types, by the type's address (a graph's constants
 * share a few interned types, and a type does not change during the step): ir_type_numel and
 * ir_type_nbytes once per type rather than per constant. Direct-mapped; a collision only
 * computes again. */
enum { TYPE_SIZES = 64 };
typedef struct {
    const ir_type *type[TYPE_SIZES];
    bool ok[TYPE_SIZES];
    int64_t n[TYPE_SIZES], nbytes[TYPE_SIZES];
} type_sizes;

static bool type_size(type_sizes *ts, const ir_type *t, int64_t *n, int64_t *nbytes)
{
    size_t i = (size_t)((((uintptr_t)t >> 4) * 0x9e3779b97f4a7c15ull) >> 58) % TYPE_SIZES;
    if (ts->type[i] != t) {
        ts->type[i] = t;
        ts->ok[i] = ir_type_numel(t, &ts->n[i]) && ir_type_nbytes(t, &ts->nbytes[i]);
    }
    *n = ts->n[i];
    *nbytes = ts->nbytes[i];
    return ts->ok[i];
}

/* A small constant's key: its type and its bytes (a larger splat's: its type and its one element);
 * false for another large or an unreadable one. With `first_only`, its type and its first element:
 * constants whose keys differ so have different full keys too. `dg` takes what reading it reports
 * (nothing is shown: an unreadable constant is only not merged). */
static bool const_key(ir_graph *g, buf *k, type_sizes *ts, ir_value *v, dg_context *dg,
                      bool first_only)
{
    int64_t n, nbytes;
    if (!type_size(ts, v->type, &n, &nbytes) || n > SPLAT_CONST)
        return false;
    unsigned char scratch[SMALL_CONST * 8], *owned = NULL;
    size_t have; /* a weight left in its file is compared where it lies, never copied out */
    const unsigned char *data = v->konst && v->konst->kind == IR_CONST_RANDOM && !v->konst->data
                                    ? random_bytes(v, first_only && n > 1 ? 1 : n, scratch, &owned)
                                    : ir_const_bytes(g, v, &have, dg);
    if (!data)
        return false;
    if (first_only) {
        if (n > 1)
            nbytes /= n;
    } else if (n > SMALL_CONST) {
        if (nbytes % n != 0 || !splat(data, n, nbytes / n)) {
            free(owned);
            return false;
        }
        nbytes /= n;
    }
    /* the type as dtype, rank, layout, then the rank's dims (the rank says how many follow) */
    int64_t head[2 + IR_MAX_RANK];
    head[0] = (int64_t)v->type->dtype;
    head[1] = (int64_t)v->type->rank << 8 | v->type->layout;
    for (int8_t d = 0; d < v->type->rank; d++)
        head[2 + d] = v->type->dims[d];
    k->len = 0;
    put(k, head, (size_t)(2 + v->type->rank) * sizeof *head);
    put(k, data, (size_t)nbytes);
    free(owned);
    return true;
}

/* What the comparisons read: the key looked up (k), and room for the key of a thing in the table
 * (other). */
typedef struct {
    cn_ctx *c;
    dg_context *quiet;
    buf k, other;
    type_sizes sizes;
} keys;

/* A constant's hash of its type and first element, and its position among the values. */
typedef struct {
    uint64_t hash;
    size_t index;
} hashed;

static int by_hash(const void *pa, const void *pb)
{
    uint64_t a = ((const hashed *)pa)->hash, b = ((const hashed *)pb)->hash;
    return (a > b) - (a < b);
}

/* Sorts by hash: one counting pass on the top 16 bits into buckets, then each bucket (a few
 * entries: the hashes are mixed) sorted on its own. Sequential passes, where a table of the
 * hashes took a cache miss per constant (166,674 of them at 1M nodes, most with a hash of their
 * own), and two where a byte-wise radix sort made sixteen. Entries of equal hash may come in any
 * order (the caller sorts the twins by position). */
static void sort_by_hash(hashed *a, size_t n)
{
    if (n < 2)
        return;
    enum { BITS = 16, BUCKETS = 1 << BITS };
    hashed *tmp = malloc(n * sizeof *tmp);
    size_t *start = calloc(BUCKETS + 1, sizeof *start);
    FR_CHECK(tmp != NULL && start != NULL);
    for (size_t i = 0; i < n; i++)
        start[(a[i].hash >> (64 - BITS)) + 1]++;
    for (size_t b = 0; b < BUCKETS; b++)
        start[b + 1] += start[b];
    for (size_t i = 0; i < n; i++)
        tmp[start[a[i].hash >> (64 - BITS)]++] = a[i];
    /* start[b] is now where bucket b ends, the next one's start */
    for (size_t b = 0, from = 0; b < BUCKETS; from = start[b++]) {
        size_t len = start[b] - from;
        hashed *e = tmp + from;
        if (len > 16) {
            qsort(e, len, sizeof *e, by_hash);
            continue;
        }
        for (size_t i = 1; i < len; i++) {
            hashed x = e[i];
            size_t j = i;
            for (; j > 0 && e[j - 1].hash > x.hash; j--)
                e[j] = e[j - 1];
            e[j] = x;
        }
    }
    memcpy(a, tmp, n * sizeof *a);
    free(start);
    free(tmp);
}

static bool same_const(void *ctx, void *first)
{
    keys *ks = ctx;
    return const_key(ks->c->g, &ks->other, &ks->sizes, first, ks->quiet, false) &&
           ks->other.len == ks->k.len && memcmp(ks->other.b, ks->k.b, ks->k.len) == 0;
}

static bool same_node(void *ctx, void *first)
{
    keys *ks = ctx;
    node_key(ks->c, &ks->other, first);
    return ks->other.len == ks->k.len && memcmp(ks->other.b, ks->k.b, ks->k.len) == 0;
}

static int by_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Whether every live node that reads a value now is listed among its readers of the round's
 * start, unless readers were forwarded to it (cn_shared): no node made in the round, none
 * changed in place, none given other operands by a step (apply_forwards' re-pointing and this
 * step's merges forward, which marks the value read). */
static bool listed_readers_cover(const cn_ctx *c)
{
    if (c->opts->whole_rounds || c->touched.len || c->g->nodes.len != c->nodes0)
        return false;
    for (size_t i = 0; i < c->rewired.len; i++)
        if (!c->rewired.items[i].from)
            return false;
    return true;
}

/* Lists up to this long are looked through for a possible duplicate (may_have_twin). */
enum { FEW_READERS = 8 };

/* With listed_readers_cover: whether n may have a duplicate, by the readers of its least read
 * operand that no reader was forwarded to. A duplicate reads that same value (its operands
 * resolve to n's), so it is listed there as a live node of n's op and arity; where none is,
 * no other node has n's key and building it is skipped (most of the nodes whose operands are
 * all shared: a MatMul of a layer's input by a weight every layer reads). */
static bool may_have_twin(const cn_ctx *c, const ir_node *n)
{
    const ir_value *least = NULL;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_value *v = cn_resolve(c, n->inputs[i]);
        if (v && v->id < c->nfwd && !c->gained[v->id] && (!least || v->nuses < least->nuses))
            least = v;
    }
    if (!least || least->nuses > FEW_READERS)
        return true;
    for (uint32_t u = 0; u < least->nuses; u++) {
        const ir_node *m = least->uses[u];
        if (m != n && !m->dead && m->op == n->op && m->ninputs == n->ninputs &&
            m->noutputs == n->noutputs)
            return true;
    }
    return false;
}

uint32_t cn_cse(cn_ctx *c)
{
    ir_graph *g = c->g;
    keys ks = {.c = c, .quiet = dg_new()};
    table consts = {0}, nodes = {0};
    uint32_t merged = 0;
    bool refused = false;
    /* first the hashes of the constants' types and first elements: only a constant that shares
     * one with another can equal one (the most of a model's weights share it with none), and only
     * those get the key of all their bytes, in the order of the values */
    VEC(size_t) twins = {0};
    VEC(hashed) firsts = {0};
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        if (v->kind == IR_VALUE_CONST && const_key(g, &ks.k, &ks.sizes, v, ks.quiet, true))
            vec_push(&firsts, ((hashed){hash_bytes(ks.k.b, ks.k.len), i}));
    }
    sort_by_hash(firsts.items, firsts.len);
    for (size_t i = 0, j; i < firsts.len; i = j) {
        for (j = i + 1; j < firsts.len && firsts.items[j].hash == firsts.items[i].hash; j++)
            ;
        for (size_t k = i; j - i > 1 && k < j; k++)
            vec_push(&twins, firsts.items[k].index);
    }
    vec_free(&firsts);
    if (twins.len)
        qsort(twins.items, twins.len, sizeof *twins.items, by_index);
    for (size_t t = 0; t < twins.len; t++) {
        ir_value *v = g->values.items[twins.items[t]];
        if (!const_key(g, &ks.k, &ks.sizes, v, ks.quiet, false))
            continue;
        ir_value *first = first_with(&consts, hash_bytes(ks.k.b, ks.k.len), v, same_const, &ks);
        if (first && cn_forward(c, v, first))
            merged++;
        else if (first)
            refused = true;
    }
    vec_free(&twins);
    bool covered = listed_readers_cover(c);
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
        if (alone || (covered && !may_have_twin(c, n)))
            continue;
        node_key(c, &ks.k, n);
        ir_node *first = first_with(&nodes, hash_bytes(ks.k.b, ks.k.len), n, same_node, &ks);
        if (!first)
            continue;
        bool ok = true;
        for (uint32_t o = 0; o < n->noutputs && ok; o++)
            ok = !n->outputs[o]->is_output &&
                 ir_type_equal(n->outputs[o]->type, first->outputs[o]->type);
        if (!ok) {
            refused = true;
            continue;
        }
        for (uint32_t o = 0; o < n->noutputs; o++)
            FR_CHECK(cn_forward(c, n->outputs[o], first->outputs[o]));
        cn_kill(c, n);
        merged++;
    }
    dg_free(ks.quiet);
    c->cse_fixed = merged == 0 && !refused;
    free(consts.s);
    free(nodes.s);
    free(ks.k.b);
    free(ks.other.b);
    return merged;
}
