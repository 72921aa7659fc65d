/* Checking a graph and inferring its types.
 *
 * ir_validate works on parsed and on built graphs (import, rewrites). In order: values (unique
 * names, sane types, constants that fit their type), nodes (known op, operands that belong to the
 * graph, arity, attributes against the op's schema), a stable topological sort that reports
 * cycles, type inference in that order (declared types must equal inferred ones), and outputs.
 * Each problem is reported where it was written (or, for a built graph, against the graph's name)
 * and checking goes on; a node with an error, and everything downstream of it, is left out of
 * type inference so that one mistake is reported once. */
#include "ir/parse_internal.h"

#include "base/check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SUGGESTIONS = 20, MAX_CYCLE_NAMES = 16 };

/* ---- "did you mean" ------------------------------------------------------------------------ */

enum { SUGGEST_MAX_LEN = 64 };

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Edit distance (insertions, deletions, substitutions and swaps of neighbours), ignoring case. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t rows[3][SUGGEST_MAX_LEN + 1]; /* the rows for i-2, i-1 and i */
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        /* (i + 1) % 3 == (i - 2) % 3: read only when i > 1 */
        size_t *row = rows[i % 3], *above = rows[(i - 1) % 3], *before = rows[(i + 1) % 3];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = above[j - 1] + (lower(a[i - 1]) != lower(b[j - 1]));
            if (above[j] + 1 < best)
                best = above[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && before[j - 2] + 1 < best)
                best = before[j - 2] + 1;
            row[j] = best;
        }
    }
    return rows[la % 3][lb];
}

/* How far a candidate may be from a word of `len` bytes to be suggested. */
static size_t max_distance(size_t len)
{
    size_t d = len / 3;
    return d < 1 ? 1 : d > 3 ? 3 : d;
}

void ir_suggest_init(ir_suggester *s, const char *word)
{
    *s = (ir_suggester){.word = word, .word_len = strlen(word), .best_distance = SIZE_MAX};
}

void ir_suggest_offer(ir_suggester *s, const char *candidate)
{
    size_t len = strlen(candidate), limit = max_distance(s->word_len);
    if (s->word_len > SUGGEST_MAX_LEN || len > SUGGEST_MAX_LEN || len + limit < s->word_len ||
        s->word_len + limit < len || strcmp(candidate, s->word) == 0)
        return;
    size_t d = edit_distance(s->word, s->word_len, candidate, len);
    if (d <= limit && d < s->best_distance) {
        s->best = candidate;
        s->best_distance = d;
    }
}

const char *ir_suggest_result(const ir_suggester *s)
{
    return s->best;
}

/* ---- reporting ----------------------------------------------------------------------------- */

typedef struct {
    ir_graph *g;
    dg_context *dg;
    size_t nnodes, nvalues;
    bool *bad_node;    /* by node id: left out of inference */
    bool *bad_value;   /* by value id: type unknown because of an error upstream */
    bool structure_ok; /* every operand and output belongs to the graph */
    unsigned suggestions;
} checker;

static void report(const checker *c, dg_severity sev, uint32_t offset, uint32_t len,
                   const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    FR_CHECK(n >= 0);
    char *msg = malloc((size_t)n + 1);
    FR_CHECK(msg != NULL);
    vsnprintf(msg, (size_t)n + 1, fmt, again);
    va_end(again);
    if (c->g->src && len > 0)
        dg_report(c->dg, sev, c->g->src, offset, len, "%s", msg);
    else if (sev == DG_ERROR)
        dg_error_path(c->dg, c->g->src ? c->g->src->path : c->g->name, "%s", msg);
    /* a note without a location would only repeat its error */
    free(msg);
}

__attribute__((format(printf, 4, 5))) static void error_at(const checker *c, uint32_t offset,
                                                           uint32_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(c, DG_ERROR, offset, len, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void error_node(const checker *c, const ir_node *n,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(c, DG_ERROR, n->src_offset, n->src_len, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void error_value(const checker *c, const ir_value *v,
                                                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(c, DG_ERROR, v->src_offset, ir_value_src_len(c->g->src, v), fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void note_value(const checker *c, const ir_value *v,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(c, DG_NOTE, v->src_offset, ir_value_src_len(c->g->src, v), fmt, ap);
    va_end(ap);
}

static const char *type_text(const ir_graph *g, const ir_type *t, char *buf, size_t size)
{
    return ir_type_format(g, t, buf, size);
}

/* ---- values -------------------------------------------------------------------------------- */

static bool in_graph(const checker *c, const ir_value *v)
{
    return v->id < c->nvalues && c->g->values.items[v->id] == v;
}

static bool node_in_graph(const checker *c, const ir_node *n)
{
    return n->id < c->nnodes && c->g->nodes.items[n->id] == n;
}

/* Rank and dims within range, and a size that can exist. */
static bool check_type(const checker *c, const ir_value *v)
{
    const ir_type *t = v->type;
    if (t->rank < -1 || t->rank > IR_MAX_RANK) {
        error_value(c, v, "'%s' has rank %d (the limit is %d)", v->name, t->rank, IR_MAX_RANK);
        return false;
    }
    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i];
        if (ir_dim_is_symbol(d) && ir_dim_symbol(d) >= c->g->symbols.len) {
            error_value(c, v, "'%s' has a dim naming no symbol of the graph", v->name);
            return false;
        }
        if (d < IR_DIM_UNKNOWN && !ir_dim_is_symbol(d))
            d = IR_DIM_UNKNOWN;
        if (!ir_dim_is_static(d) || d == 0)
            continue;
        if (d > IR_MAX_NUMEL || numel > IR_MAX_NUMEL / d) {
            error_value(c, v, "'%s' has more than 2^40 elements", v->name);
            return false;
        }
        numel *= d;
    }
    return true;
}

static void check_const(const checker *c, const ir_value *v)
{
    const ir_const *k = v->konst;
    int64_t numel;
    if (!k) {
        error_value(c, v, "constant '%s' has no data", v->name);
    } else if (!ir_type_numel(v->type, &numel)) {
        error_value(c, v, "constant '%s' needs a static shape", v->name);
    } else if (k->kind == IR_CONST_LITERAL && k->literal_count != (size_t)numel &&
               k->literal_count != 1) {
        error_value(c, v, "constant '%s' has %zu values for %lld elements", v->name,
                    k->literal_count, (long long)numel);
    }
}

/* Marks the values the graph's name map holds (under their own name: a slot's key is its value's
 * name, ir/names.h), by one pass over the map: no lookup per value. */
static bool *named_values(const checker *c)
{
    bool *named = calloc(c->nvalues ? c->nvalues : 1, sizeof *named);
    FR_CHECK(named != NULL);
    const ir_names *m = &c->g->by_name;
    /* the slots are read in order, the values they point to and the list's entries at their ids
     * at random: a value is prefetched 2 * AHEAD slots ahead, its list entry AHEAD slots ahead
     * (by its id, loaded by then) */
    enum { AHEAD = 16 };
    ir_value *const *items = c->g->values.items;
    for (size_t i = 0; i < m->cap; i++) {
        const ir_value *far = i + 2 * AHEAD < m->cap ? ir_names_value_at(m, i + 2 * AHEAD) : NULL;
        if (far)
            __builtin_prefetch(&far->id);
        const ir_value *near = i + AHEAD < m->cap ? ir_names_value_at(m, i + AHEAD) : NULL;
        if (near && near->id < c->nvalues)
            __builtin_prefetch(&items[near->id]);
        const ir_value *v = ir_names_value_at(m, i);
        if (v && in_graph(c, v))
            named[v->id] = true;
    }
    return named;
}

/* `named`: the name map is known to hold v under its name (else it is looked up). */
static void check_value(checker *c, ir_value *v, bool named_ok)
{
    ir_value *named = named_ok ? v : ir_find_value(c->g, v->name);
    if (named && named != v) {
        error_value(c, v, "duplicate definition of '%s'", v->name);
        note_value(c, named, "'%s' is first defined here", v->name);
    } else if (!named) {
        error_value(c, v, "'%s' is missing from the graph's names", v->name);
    }
    bool type_ok = check_type(c, v);
    if (v->kind == IR_VALUE_NODE) {
        bool linked = v->producer && v->out_index < v->producer->noutputs &&
                      v->producer->outputs[v->out_index] == v;
        if (!linked) {
            error_value(c, v, "'%s' is not an output of its producer", v->name);
            c->structure_ok = false;
        }
        return;
    }
    if (v->type->dtype == IR_DTYPE_UNKNOWN)
        error_value(c, v, "'%s' has no element type", v->name);
    if (v->kind == IR_VALUE_CONST && type_ok)
        check_const(c, v);
}

/* ---- nodes --------------------------------------------------------------------------------- */

static void arity_text(char *buf, size_t size, unsigned min, unsigned max, const char *what)
{
    if (max == IR_VARIADIC)
        snprintf(buf, size, "at least %u %s%s", min, what, min == 1 ? "" : "s");
    else if (min == max)
        snprintf(buf, size, "%u %s%s", min, what, min == 1 ? "" : "s");
    else
        snprintf(buf, size, "%u to %u %ss", min, max, what);
}

static bool check_arity(const checker *c, const ir_node *n, const ir_op_info *info)
{
    char want[64];
    bool ok = true;
    if (n->ninputs < info->min_inputs ||
        (info->max_inputs != IR_VARIADIC && n->ninputs > info->max_inputs)) {
        arity_text(want, sizeof want, info->min_inputs, info->max_inputs, "input");
        error_node(c, n, "%s takes %s, not %u", info->name, want, n->ninputs);
        ok = false;
    }
    if (n->noutputs < info->min_outputs ||
        (info->max_outputs != IR_VARIADIC && n->noutputs > info->max_outputs)) {
        arity_text(want, sizeof want, info->min_outputs, info->max_outputs, "output");
        error_node(c, n, "%s gives %s, not %u", info->name, want, n->noutputs);
        ok = false;
    }
    for (uint32_t i = 0; ok && i < n->ninputs && i < info->min_inputs; i++) {
        if (!n->inputs[i]) {
            error_node(c, n, "input %u of %s is required and cannot be omitted", i + 1,
                       info->name);
            ok = false;
        }
    }
    return ok;
}

static bool check_operands(checker *c, const ir_node *n)
{
    bool ok = true;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_value *v = n->inputs[i];
        if (!v)
            continue;
        if (!in_graph(c, v)) {
            error_node(c, n, "input %u of %s is undefined value '%s'", i + 1, ir_op_name(n->op),
                       v->name);
            c->structure_ok = false;
            ok = false;
        } else if (v->kind == IR_VALUE_NODE && v->producer->dead) {
            error_node(c, n, "'%s' is produced by a removed node", v->name);
            ok = false;
        }
    }
    for (uint32_t i = 0; i < n->noutputs; i++)
        if (!in_graph(c, n->outputs[i]))
            c->structure_ok = false;
    return ok;
}

static const char *kind_text(ir_attr_kind kind)
{
    switch (kind) {
    case IR_ATTR_INT: return "an integer";
    case IR_ATTR_FLOAT: return "a float";
    case IR_ATTR_STRING: return "a string";
    case IR_ATTR_INTS: return "a list of integers";
    case IR_ATTR_FLOATS: return "a list of floats";
    }
    return "?";
}

static uint32_t attr_len(const ir_attr *a)
{
    return a->src_offset ? (uint32_t)strlen(a->name) : 0;
}

/* An integer where the schema wants a float (or integers where it wants floats) is the same
 * number: convert it, so that the graph holds one spelling of each attribute. */
static bool widen_attr(ir_graph *g, ir_attr *a, ir_attr_kind want)
{
    if (want == IR_ATTR_FLOAT && a->kind == IR_ATTR_INT) {
        a->v.f = (double)a->v.i;
        a->kind = IR_ATTR_FLOAT;
        return true;
    }
    if (want == IR_ATTR_FLOATS && a->kind == IR_ATTR_INTS) {
        double *floats = ar_alloc_array(g->arena, a->count, sizeof *floats);
        for (uint32_t i = 0; i < a->count; i++)
            floats[i] = (double)a->v.ints[i];
        a->v.floats = floats;
        a->kind = IR_ATTR_FLOATS;
        return true;
    }
    return false;
}

static void report_unknown_attr(const checker *c, const ir_node *n, const ir_attr *a,
                                const ir_op_info *info)
{
    ir_suggester s;
    ir_suggest_init(&s, a->name);
    for (uint32_t i = 0; i < info->nattrs; i++)
        ir_suggest_offer(&s, info->attrs[i].name);
    const char *best = ir_suggest_result(&s);
    uint32_t offset = a->src_offset ? a->src_offset : n->src_offset;
    uint32_t len = a->src_offset ? attr_len(a) : n->src_len;
    if (best)
        error_at(c, offset, len, "%s has no attribute '%s'; did you mean '%s'?", info->name,
                 a->name, best);
    else
        error_at(c, offset, len, "%s has no attribute '%s'", info->name, a->name);
}

/* The schema of attribute a: by its name's address first (the parser points a known attribute's
 * name at the catalog's own string), then by its text. */
static const ir_attr_schema *attr_schema(const ir_node *n, const ir_op_info *info,
                                         const ir_attr *a)
{
    for (uint32_t i = 0; i < info->nattrs; i++)
        if (info->attrs[i].name == a->name)
            return &info->attrs[i];
    return ir_op_attr_schema(n->op, a->name);
}

static bool check_attrs(checker *c, ir_node *n, const ir_op_info *info)
{
    bool ok = true;
    for (uint32_t i = 0; i < n->nattrs; i++) {
        ir_attr *a = &n->attrs[i];
        const ir_attr_schema *s = attr_schema(n, info, a);
        if (!s) {
            report_unknown_attr(c, n, a, info);
            ok = false;
        } else if (s->kind != a->kind && !widen_attr(c->g, a, s->kind)) {
            uint32_t offset = a->src_offset ? a->src_offset : n->src_offset;
            error_at(c, offset, a->src_offset ? attr_len(a) : n->src_len,
                     "attribute '%s' of %s is %s, not %s", a->name, info->name,
                     kind_text(s->kind), kind_text(a->kind));
            ok = false;
        }
    }
    for (uint32_t i = 0; i < info->nattrs; i++) {
        if (info->attrs[i].required && !ir_node_attr(n, info->attrs[i].name)) {
            error_node(c, n, "%s needs attribute '%s'", info->name, info->attrs[i].name);
            ok = false;
        }
    }
    return ok;
}

static void check_node(checker *c, ir_node *n)
{
    if ((unsigned)n->op >= IR_OP_COUNT) {
        error_node(c, n, "node %u has no valid op", n->id);
        c->bad_node[n->id] = true;
        c->structure_ok = false;
        return;
    }
    const ir_op_info *info = ir_op_info_get(n->op);
    bool ok = check_operands(c, n);
    ok &= check_arity(c, n, info);
    ok &= check_attrs(c, n, info);
    c->bad_node[n->id] = !ok;
}

/* ---- topological order and cycles ---------------------------------------------------------- */

/* The producer of an operand when it is a live node of this graph, else NULL. */
static ir_node *producer_of(const checker *c, const ir_value *v)
{
    if (!v || !in_graph(c, v) || v->kind != IR_VALUE_NODE || !v->producer)
        return NULL;
    ir_node *p = v->producer;
    return !p->dead && node_in_graph(c, p) ? p : NULL;
}

/* A binary min-heap of node ids: the ready node that came first in the file goes first. */
typedef struct {
    uint32_t *items;
    size_t len;
} heap;

static void heap_push(heap *h, uint32_t x)
{
    size_t i = h->len++;
    while (i > 0 && h->items[(i - 1) / 2] > x) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = x;
}

static uint32_t heap_pop(heap *h)
{
    uint32_t top = h->items[0], last = h->items[--h->len];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->len)
            break;
        if (child + 1 < h->len && h->items[child + 1] < h->items[child])
            child++;
        if (h->items[child] >= last)
            break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->len)
        h->items[i] = last;
    return top;
}

typedef VEC(char) text_buffer;

/* Appends s to a growing message. */
static void append(text_buffer *buf, const char *s)
{
    size_t n = strlen(s);
    vec_reserve(buf, buf->len + n + 1);
    memcpy(buf->items + buf->len, s, n + 1);
    buf->len += n;
}

/* The operand of n whose producer is another node left over by the sort (so on a cycle or
 * downstream of one): there is always one. */
static const ir_value *leftover_operand(const checker *c, const ir_node *n, const bool *placed)
{
    for (uint32_t i = 0; i < n->ninputs; i++) {
        ir_node *p = producer_of(c, n->inputs[i]);
        if (p && !placed[p->id])
            return n->inputs[i];
    }
    FR_UNREACHABLE();
    return NULL;
}

/* Walks from a left-over node up through left-over producers until the walk meets itself, and
 * reports that cycle at the node where it closes, naming its values in data-flow order. A walk
 * that reaches a node an earlier walk went through has nothing new to report. */
static void report_cycle_from(checker *c, ir_node *start, const bool *placed, uint32_t *walk_of,
                              uint32_t walk)
{
    /* step i of the walk: node nodes[i] reads values[i], which nodes[i+1] produces */
    VEC(const ir_node *) nodes = {0};
    VEC(const ir_value *) values = {0};
    ir_node *n = start;
    while (walk_of[n->id] == 0) {
        walk_of[n->id] = walk;
        const ir_value *v = leftover_operand(c, n, placed);
        vec_push(&nodes, n);
        vec_push(&values, v);
        n = v->producer;
    }
    if (walk_of[n->id] == walk) {
        size_t closing = 0; /* the step at which the walk first met n */
        while (nodes.items[closing] != n)
            closing++;
        /* n produces the last value walked, which flows back down the walk to n */
        text_buffer msg = {0};
        append(&msg, "cycle in the graph: ");
        for (size_t i = values.len, shown = 0; i-- > closing; shown++) {
            append(&msg, shown == MAX_CYCLE_NAMES ? "..." : values.items[i]->name);
            append(&msg, " -> ");
            if (shown == MAX_CYCLE_NAMES)
                break;
        }
        append(&msg, values.items[values.len - 1]->name);
        error_node(c, n, "%s", msg.items);
        vec_free(&msg);
    }
    vec_free(&nodes);
    vec_free(&values);
}

/* Who reads each live node's outputs, as one array: the consumers of node p are
 * edges[first[p]] .. edges[first[p+1]-1] (a node reading p twice is there twice). pending[i]
 * counts node i's operands produced by live nodes. */
typedef struct {
    uint32_t *first, *edges, *pending;
} consumer_table;

static consumer_table consumers_of(const checker *c)
{
    size_t n = c->nnodes;
    ir_node **nodes = c->g->nodes.items;
    consumer_table t = {calloc(n + 1, sizeof *t.first), NULL, calloc(n ? n : 1, sizeof *t.pending)};
    FR_CHECK(t.first && t.pending);
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; !nodes[i]->dead && k < nodes[i]->ninputs; k++) {
            ir_node *p = producer_of(c, nodes[i]->inputs[k]);
            if (p) {
                t.first[p->id + 1]++;
                t.pending[i]++;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        t.first[i + 1] += t.first[i];
    t.edges = malloc((t.first[n] ? t.first[n] : 1) * sizeof *t.edges);
    uint32_t *fill = malloc((n ? n : 1) * sizeof *fill);
    FR_CHECK(t.edges && fill);
    memcpy(fill, t.first, n * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; !nodes[i]->dead && k < nodes[i]->ninputs; k++) {
            ir_node *p = producer_of(c, nodes[i]->inputs[k]);
            if (p)
                t.edges[fill[p->id]++] = (uint32_t)i;
        }
    }
    free(fill);
    return t;
}

/* Kahn's algorithm with the ready nodes in a min-heap of ids: each step places the ready node
 * that came first, so the file's order is kept wherever it is legal. Returns how many were
 * placed into order[]; placed[] marks them. */
static size_t place_in_order(const checker *c, consumer_table *t, ir_node **order, bool *placed)
{
    size_t n = c->nnodes, len = 0;
    ir_node **nodes = c->g->nodes.items;
    heap ready = {malloc((n ? n : 1) * sizeof(uint32_t)), 0};
    FR_CHECK(ready.items != NULL);
    for (size_t i = 0; i < n; i++)
        if (!nodes[i]->dead && t->pending[i] == 0)
            heap_push(&ready, (uint32_t)i);
    while (ready.len) {
        uint32_t i = heap_pop(&ready);
        placed[i] = true;
        order[len++] = nodes[i];
        for (uint32_t e = t->first[i]; e < t->first[i + 1]; e++)
            if (--t->pending[t->edges[e]] == 0)
                heap_push(&ready, t->edges[e]);
    }
    free(ready.items);
    return len;
}

/* Whether every operand of n that a live node of the graph produces comes from a node before n. */
static bool reads_earlier(const checker *c, const ir_node *n)
{
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const ir_node *p = producer_of(c, n->inputs[i]);
        if (p && p->id >= n->id)
            return false;
    }
    return true;
}

/* Sorts the live nodes topologically; the nodes left over (on a cycle or downstream of one) are
 * reported, left out of inference and kept after the sorted ones in their order, then the dead
 * nodes. */
static void sort_nodes(checker *c)
{
    size_t n = c->nnodes;
    ir_node **nodes = c->g->nodes.items;
    consumer_table t = consumers_of(c);
    ir_node **order = malloc((n ? n : 1) * sizeof *order);
    bool *placed = calloc(n ? n : 1, sizeof *placed);
    uint32_t *walk_of = calloc(n ? n : 1, sizeof *walk_of); /* which cycle walk passed a node */
    FR_CHECK(order && placed && walk_of);
    size_t len = place_in_order(c, &t, order, placed);
    uint32_t walk = 0;
    for (size_t i = 0; i < n; i++) {
        if (nodes[i]->dead || placed[i])
            continue;
        c->bad_node[i] = true;
        order[len++] = nodes[i];
        if (walk_of[i] == 0)
            report_cycle_from(c, nodes[i], placed, walk_of, ++walk);
    }
    for (size_t i = 0; i < n; i++)
        if (nodes[i]->dead)
            order[len++] = nodes[i];
    FR_CHECK(len == n);
    if (n)
        memcpy(nodes, order, n * sizeof *order);
    free(walk_of);
    free(placed);
    free(order);
    free(t.first);
    free(t.edges);
    free(t.pending);
}

/* ---- type inference ------------------------------------------------------------------------ */

/* Checks an inferred output against the type the text declared. A layout tag is compared only
 * when both have one: a declared tag that inference does not know is kept (it says how the data is
 * laid out, which shapes cannot), and a type written without one leaves the inferred tag alone. */
static void check_declared(const checker *c, const ir_node *n, ir_value *v,
                           const ir_type *declared)
{
    if (declared->layout != IR_LAYOUT_NONE && v->type->layout == IR_LAYOUT_NONE) {
        ir_type tagged = *v->type;
        tagged.layout = declared->layout;
        ir_value_set_type(c->g, v, &tagged);
    }
    ir_type stated = *declared;
    if (stated.layout == IR_LAYOUT_NONE)
        stated.layout = v->type->layout;
    /* a declared `?` says less than inference may know (a Reshape to a computed shape that
     * shape values follow): it is no conflict */
    for (int i = 0; stated.rank == v->type->rank && i < stated.rank; i++)
        if (stated.dims[i] == IR_DIM_UNKNOWN)
            stated.dims[i] = v->type->dims[i];
    if (ir_type_equal(&stated, v->type))
        return;
    char want[256], got[256];
    error_value(c, v, "declared type %s but %s gives %s",
                type_text(c->g, declared, want, sizeof want), ir_op_name(n->op),
                type_text(c->g, v->type, got, sizeof got));
}

/* Infers n's types. What shape values make known (ir/shape_value.c) is a hint, not the graph's
 * word: when n's inference refuses it (a model whose computed shape cannot fit, which nothing
 * ever ran), n is inferred again without them, as it was before they were known. */
static bool infer_with_shape_values(ir_graph *g, ir_node *n, dg_context *dg)
{
    ir_infer_fn infer = ir_op_info_get(n->op)->infer;
    bool hints = false;
    for (uint32_t i = 0; i < n->ninputs; i++)
        hints |= n->inputs[i] && n->inputs[i]->kind != IR_VALUE_CONST && n->inputs[i]->sv;
    if (!hints)
        return infer(g, n, dg);
    dg_context *quiet = dg_new();
    bool ok = infer(g, n, quiet);
    dg_free(quiet);
    if (ok)
        return true;
    const ir_shape_value **saved = malloc(n->ninputs * sizeof *saved);
    FR_CHECK(saved != NULL);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        saved[i] = n->inputs[i] ? n->inputs[i]->sv : NULL;
        if (n->inputs[i] && n->inputs[i]->kind != IR_VALUE_CONST)
            n->inputs[i]->sv = NULL;
    }
    ok = infer(g, n, dg);
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (n->inputs[i])
            n->inputs[i]->sv = saved[i];
    free(saved);
    return ok;
}

/* Infers n's types; `planned`, when not NULL, is the type the caller's own inference gave n's one
 * output on the operands it reads now (ir_validate_planned): it is taken instead of inferring again,
 * and checked as an inferred one is. */
static void infer_node(checker *c, ir_node *n, const ir_type *planned)
{
    bool skip = c->bad_node[n->id];
    for (uint32_t i = 0; i < n->ninputs; i++)
        skip |= n->inputs[i] && c->bad_value[n->inputs[i]->id];
    enum { FEW = 4 }; /* most nodes have one output: no allocation for them */
    ir_type few[FEW];
    ir_type *declared = n->noutputs <= FEW ? few : malloc(n->noutputs * sizeof *declared);
    FR_CHECK(declared != NULL);
    /* a planned node's one output takes its planned type next: no unknown type before it */
    bool take_planned = !skip && planned && n->noutputs == 1;
    for (uint32_t i = 0; i < n->noutputs; i++) {
        const ir_type *t = n->outputs[i]->type;
        declared[i] = *t;
        /* (an output with no declared type has the unknown type already: no interning again) */
        if (!take_planned &&
            (t->rank != -1 || t->dtype != IR_DTYPE_UNKNOWN || t->layout != IR_LAYOUT_NONE))
            ir_value_set_type(c->g, n->outputs[i], &(ir_type){.rank = -1});
    }
    if (!skip && planned)
        ir_value_set_type(c->g, n->outputs[0], planned);
    else if (!skip && !infer_with_shape_values(c->g, n, c->dg))
        skip = true;
    if (!skip)
        ir_infer_shape_value(c->g, n);
    for (uint32_t i = 0; i < n->noutputs && skip; i++)
        n->outputs[i]->sv = NULL;
    for (uint32_t i = 0; i < n->noutputs && !skip; i++) {
        ir_value *v = n->outputs[i];
        if (!check_type(c, v))
            c->bad_value[v->id] = true;
        else if (v->type_declared)
            check_declared(c, n, v, &declared[i]);
    }
    for (uint32_t i = 0; i < n->noutputs && skip; i++) {
        /* keep what was written, for printing */
        ir_value_set_type(c->g, n->outputs[i], &declared[i]);
        c->bad_value[n->outputs[i]->id] = true;
    }
    if (declared != few)
        free(declared);
}

/* ---- outputs ------------------------------------------------------------------------------- */

/* Where the text's `graph` keyword is: after blank lines and comments. */
static uint32_t header_offset(const dg_source *src)
{
    size_t i = 0;
    while (i < src->len) {
        char ch = src->text[i];
        if (ch == '#')
            while (i < src->len && src->text[i] != '\n')
                i++;
        else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            i++;
        else
            break;
    }
    return (uint32_t)i;
}

static void check_outputs(checker *c)
{
    ir_graph *g = c->g;
    if (g->outputs.len == 0) {
        uint32_t at = g->src ? header_offset(g->src) : 0;
        error_at(c, at, g->src ? 5 : 0, "graph '%s' has no outputs", g->name);
    }
    bool *listed = calloc(c->nvalues ? c->nvalues : 1, sizeof *listed);
    FR_CHECK(listed != NULL);
    for (size_t i = 0; i < g->outputs.len; i++) {
        ir_value *v = g->outputs.items[i];
        if (!in_graph(c, v)) {
            error_at(c, 0, 0, "output '%s' is not a value of the graph", v->name);
            c->structure_ok = false;
        } else if (listed[v->id]) {
            error_value(c, v, "'%s' is listed as an output twice", v->name);
        } else {
            listed[v->id] = true;
        }
    }
    free(listed);
}

/* ---- the whole check ----------------------------------------------------------------------- */

bool ir_validate(ir_graph *g, dg_context *dg)
{
    size_t errors_before = dg_error_count(dg);
    checker c = {.g = g, .dg = dg, .nnodes = g->nodes.len, .nvalues = g->values.len,
                 .structure_ok = true};
    FR_CHECK(c.nnodes < UINT32_MAX && c.nvalues < UINT32_MAX);
    for (size_t i = 0; i < c.nnodes; i++)
        g->nodes.items[i]->id = (uint32_t)i;
    c.bad_node = calloc(c.nnodes ? c.nnodes : 1, sizeof *c.bad_node);
    c.bad_value = calloc(c.nvalues ? c.nvalues : 1, sizeof *c.bad_value);
    FR_CHECK(c.bad_node && c.bad_value);

    /* the values' ids are set in the pass that checks them: the pass over the name map before it
     * finds a value under its id only where the id is right already (a value elsewhere is looked
     * up by its name instead) */
    bool *named = ir_names_take_seen(&g->by_name, g->values.items, c.nvalues);
    if (!named)
        named = named_values(&c);
    for (size_t i = 0; i < c.nvalues; i++) {
        g->values.items[i]->id = (uint32_t)i;
        check_value(&c, g->values.items[i], named[i]);
    }
    free(named);
    /* whether the nodes are in order already (each live node reads only nodes before it, and no
     * dead node comes before a live one: a parsed graph, nearly always), in which case the sort
     * would keep every node where it is */
    bool in_order = true, dead_before = false;
    for (size_t i = 0; i < c.nnodes; i++) {
        ir_node *n = g->nodes.items[i];
        if (n->dead) {
            dead_before = true;
            continue;
        }
        check_node(&c, n);
        in_order = in_order && !dead_before && reads_earlier(&c, n);
    }
    if (c.structure_ok) {
        if (!in_order)
            sort_nodes(&c);
        for (size_t i = 0; i < c.nnodes; i++)
            if (!g->nodes.items[i]->dead)
                infer_node(&c, g->nodes.items[i], NULL);
    }
    check_outputs(&c);
    for (size_t i = 0; i < c.nnodes; i++)
        g->nodes.items[i]->id = (uint32_t)i;
    if (c.structure_ok)
        ir_compute_uses(g);
    free(c.bad_node);
    free(c.bad_value);
    return dg_error_count(dg) == errors_before;
}

/* ---- again, after changes (ir_validate_since) ---------------------------------------------- */

/* What a validated graph was: a fingerprint of each node and each value, by position. A change
 * that validation reads (an operand, an output, an attribute, the op; a value's kind, constant,
 * producer, type or shape value) changes the fingerprint; anything else (use lists, names,
 * declared flags, which only the producer's own check reads) does not. */
struct ir_validated {
    size_t nnodes, nvalues;
    uint64_t *node_fp, *value_fp;
};

/* One step of a fingerprint: for each x a bijection of h (xor, an odd multiplier, an xorshift), so
 * that two sequences of words that differ in one word never give the same fingerprint. */
static uint64_t mix(uint64_t h, uint64_t x)
{
    h = (h ^ x) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t ptr_bits(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

static uint64_t node_fingerprint(const ir_node *n)
{
    uint64_t h = mix(ptr_bits(n), (uint64_t)n->op);
    h = mix(h, ((uint64_t)n->ninputs << 40) ^ ((uint64_t)n->noutputs << 20) ^ n->nattrs);
    h = mix(h, ((uint64_t)n->kernel << 1) ^ (uint64_t)n->dead);
    for (uint32_t k = 0; k < n->ninputs; k++)
        h = mix(h, ptr_bits(n->inputs[k]));
    for (uint32_t k = 0; k < n->noutputs; k++)
        h = mix(h, ptr_bits(n->outputs[k]));
    for (uint32_t a = 0; a < n->nattrs; a++) {
        const ir_attr *at = &n->attrs[a];
        uint64_t bits;
        memcpy(&bits, &at->v, sizeof bits);
        h = mix(h, ptr_bits(at->name) ^ ((uint64_t)at->kind << 56) ^ ((uint64_t)at->count << 24));
        h = mix(h, bits);
    }
    return h;
}

static uint64_t value_fingerprint(const ir_value *v)
{
    uint64_t h = mix(ptr_bits(v), (uint64_t)v->kind);
    h = mix(h, ptr_bits(v->producer) ^ v->out_index);
    h = mix(h, ptr_bits(v->konst)); /* (or its shape value, in the same place) */
    /* the data of a literal, random or file constant is a cache, filled on first read */
    if (v->kind == IR_VALUE_CONST && v->konst) {
        const ir_const *k = v->konst;
        bool literal = k->kind == IR_CONST_LITERAL; /* (the fields of its kind only) */
        h = mix(h, (k->kind == IR_CONST_DATA ? ptr_bits(k->data) : 0) ^
                       (literal ? ptr_bits(k->literal) ^ k->literal_count : 0) ^
                       ((uint64_t)k->kind << 60));
    }
    const ir_type *t = v->type;
    h = mix(h,
            (uint64_t)t->dtype ^ ((uint64_t)(uint8_t)t->rank << 8) ^ ((uint64_t)t->layout << 16));
    for (int i = 0; i < t->rank && i < IR_MAX_RANK; i++)
        h = mix(h, (uint64_t)t->dims[i]);
    return h;
}

/* Fills s with g's fingerprints. */
static void take(ir_validated *s, const ir_graph *g)
{
    s->nnodes = g->nodes.len;
    s->nvalues = g->values.len;
    s->node_fp = malloc((s->nnodes ? s->nnodes : 1) * sizeof *s->node_fp);
    s->value_fp = malloc((s->nvalues ? s->nvalues : 1) * sizeof *s->value_fp);
    FR_CHECK(s->node_fp && s->value_fp);
    for (size_t i = 0; i < s->nnodes; i++)
        s->node_fp[i] = node_fingerprint(g->nodes.items[i]);
    for (size_t i = 0; i < s->nvalues; i++)
        s->value_fp[i] = value_fingerprint(g->values.items[i]);
}

ir_validated *ir_validated_take(const ir_graph *g)
{
    ir_validated *s = malloc(sizeof *s);
    FR_CHECK(s != NULL);
    take(s, g);
    return s;
}

void ir_validated_free(ir_validated *s)
{
    if (!s)
        return;
    free(s->node_fp);
    free(s->value_fp);
    free(s);
}

/* Whether two types say the same. */
static bool same_type(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->layout != b->layout)
        return false;
    for (int i = 0; i < a->rank && i < IR_MAX_RANK; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Infers n again (or takes its planned type); true when one of its outputs now has another type or
 * shape value. */
static bool reinfer_node(checker *c, ir_node *n, const ir_type *planned)
{
    enum { KEEP = 8 };
    ir_type types[KEEP];
    ir_shape_value svs[KEEP];
    const ir_shape_value *had[KEEP];
    bool kept = n->noutputs <= KEEP;
    for (uint32_t i = 0; kept && i < n->noutputs; i++) {
        types[i] = *n->outputs[i]->type;
        had[i] = n->outputs[i]->sv;
        if (had[i])
            svs[i] = *had[i];
    }
    infer_node(c, n, planned);
    bool changed = !kept;
    for (uint32_t i = 0; !changed && i < n->noutputs; i++)
        changed = !same_type(&types[i], n->outputs[i]->type) ||
                  !ir_shape_value_equal(had[i] ? &svs[i] : NULL, n->outputs[i]->sv);
    return changed;
}

/* Whether n, read as before (the caller's `same`), needs no inference again: it passed its checks,
 * and no operand took another type or shape value in this check (retyped) or is in error. Its
 * inference would give what it gave when last validated: the same operands with the same types,
 * shape values and constants, the same attributes. */
static bool inferred_as_before(const checker *c, const ir_node *n, const bool *same,
                               const bool *retyped)
{
    if (!same || !same[n->id] || c->bad_node[n->id])
        return false;
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] && (retyped[n->inputs[k]->id] || c->bad_value[n->inputs[k]->id]))
            return false;
    return true;
}

/* The type planned[n->id] when the caller planned n's one output and no operand of n took another
 * type or shape value in this check (retyped), else NULL: n is inferred again. */
static const ir_type *still_planned(const ir_node *n, const ir_type *const *planned,
                                    const bool *retyped)
{
    if (!planned || !planned[n->id] || n->noutputs != 1)
        return NULL;
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] && retyped[n->inputs[k]->id])
            return NULL;
    return planned[n->id];
}

/* The incremental check; false when it cannot stand for ir_validate (a changed node reads a value
 * produced after it, the changes broke the structure): nothing reported then, types unchanged.
 * Keeps s's fingerprints current (s may be NULL: ir_validate_marked). planned: see
 * ir_validate_planned (may be NULL). */
static bool validate_changed(ir_graph *g, ir_validated *s, bool *dirty_node, bool *dirty_value,
                             const ir_type *const *planned, const bool *same, bool uses_kept,
                             dg_context *dg, bool *ok)
{
    size_t errors_before = dg_error_count(dg);
    checker c = {
        .g = g, .dg = dg, .nnodes = g->nodes.len, .nvalues = g->values.len, .structure_ok = true};
    /* the nodes that read a changed value or changed themselves must come after their
     * producers: then the order ir_validate's sort keeps is this one */
    for (size_t i = 0; i < c.nnodes; i++) {
        ir_node *n = g->nodes.items[i];
        bool dirty = dirty_node[i];
        for (uint32_t k = 0; !dirty && k < n->ninputs; k++)
            dirty = n->inputs[k] && n->inputs[k]->id < c.nvalues &&
                    g->values.items[n->inputs[k]->id] == n->inputs[k] &&
                    dirty_value[n->inputs[k]->id];
        if (!dirty)
            continue;
        dirty_node[i] = true;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            ir_value *v = n->inputs[k];
            if (!v)
                continue; /* an omitted optional input */
            if (!in_graph(&c, v))
                return false;
            if (v->kind == IR_VALUE_NODE &&
                (!v->producer || !node_in_graph(&c, v->producer) || v->producer->id >= i))
                return false;
        }
        for (uint32_t k = 0; k < n->noutputs; k++)
            if (!in_graph(&c, n->outputs[k]))
                return false;
    }
    c.bad_node = calloc(c.nnodes ? c.nnodes : 1, sizeof *c.bad_node);
    c.bad_value = calloc(c.nvalues ? c.nvalues : 1, sizeof *c.bad_value);
    FR_CHECK(c.bad_node && c.bad_value);
    /* each dirty value's name is looked up, or, when they are many, the map is read once (the
     * probes of a large map miss the cache), unless compaction's pass over it found them already */
    bool *named = ir_names_take_seen(&g->by_name, g->values.items, c.nvalues);
    size_t ndirty = 0;
    for (size_t i = 0; !named && i < c.nvalues; i++)
        ndirty += dirty_value[i];
    if (!named && ndirty > g->by_name.cap / 8)
        named = named_values(&c);
    for (size_t i = 0; i < c.nvalues; i++)
        if (dirty_value[i])
            check_value(&c, g->values.items[i], named && named[i]);
    free(named);
    for (size_t i = 0; i < c.nnodes; i++)
        if (dirty_node[i]) {
            check_node(&c, g->nodes.items[i]); /* may widen an attribute */
            if (s)
                s->node_fp[i] = node_fingerprint(g->nodes.items[i]);
        }
    /* the values whose type or shape value this check changed: a planned node reading one is
     * inferred again */
    bool *retyped =
        planned || same ? calloc(c.nvalues ? c.nvalues : 1, sizeof *retyped) : NULL;
    FR_CHECK(!(planned || same) || retyped);
    if (c.structure_ok) {
        for (size_t i = 0; i < c.nnodes; i++) {
            ir_node *n = g->nodes.items[i];
            bool dirty = dirty_node[i];
            for (uint32_t k = 0; !dirty && k < n->ninputs; k++)
                dirty = n->inputs[k] && dirty_value[n->inputs[k]->id];
            if (!dirty)
                continue;
            if (inferred_as_before(&c, n, same, retyped))
                continue;
            bool changed = reinfer_node(&c, n, still_planned(n, planned, retyped));
            for (uint32_t k = 0; k < n->noutputs; k++) {
                dirty_value[n->outputs[k]->id] |= changed;
                if (retyped)
                    retyped[n->outputs[k]->id] |= changed;
                if (s)
                    s->value_fp[n->outputs[k]->id] = value_fingerprint(n->outputs[k]);
            }
        }
    }
    free(retyped);
    check_outputs(&c);
    if (c.structure_ok && !uses_kept)
        ir_compute_uses(g);
    free(c.bad_node);
    free(c.bad_value);
    *ok = dg_error_count(dg) == errors_before;
    return true;
}

bool ir_validate_since(ir_graph *g, ir_validated *s, dg_context *dg)
{
    if (g->nodes.len < s->nnodes || g->values.len < s->nvalues) {
        ir_compact(g);
        bool ok = ir_validate(g, dg);
        take(s, g);
        return ok;
    }
    /* what changed, by the positions before compaction; the flags and the fingerprints then
     * move with what ir_compact keeps (in its order) */
    size_t nn = g->nodes.len, nv = g->values.len;
    bool *node_changed = malloc((nn ? nn : 1) * sizeof *node_changed);
    bool *value_changed = malloc((nv ? nv : 1) * sizeof *value_changed);
    uint64_t *node_fp = malloc((nn ? nn : 1) * sizeof *node_fp);
    uint64_t *value_fp = malloc((nv ? nv : 1) * sizeof *value_fp);
    ir_value **before = malloc((nv ? nv : 1) * sizeof *before);
    FR_CHECK(node_changed && value_changed && node_fp && value_fp && before);
    for (size_t i = 0; i < nn; i++) {
        node_fp[i] = node_fingerprint(g->nodes.items[i]);
        node_changed[i] = i >= s->nnodes || node_fp[i] != s->node_fp[i];
    }
    for (size_t i = 0; i < nv; i++) {
        value_fp[i] = value_fingerprint(g->values.items[i]);
        value_changed[i] = i >= s->nvalues || value_fp[i] != s->value_fp[i];
    }
    size_t kept = 0;
    for (size_t i = 0; i < nn; i++)
        if (!g->nodes.items[i]->dead) {
            node_changed[kept] = node_changed[i];
            node_fp[kept++] = node_fp[i];
        }
    if (nv)
        memcpy(before, g->values.items, nv * sizeof *before);
    ir_compact(g);
    FR_CHECK(kept == g->nodes.len);
    kept = 0;
    for (size_t i = 0; i < nv && kept < g->values.len; i++)
        if (g->values.items[kept] == before[i]) {
            value_changed[kept] = value_changed[i];
            value_fp[kept++] = value_fp[i];
        }
    FR_CHECK(kept == g->values.len);
    free(before);
    free(s->node_fp);
    free(s->value_fp);
    s->node_fp = node_fp;
    s->value_fp = value_fp;
    s->nnodes = g->nodes.len;
    s->nvalues = g->values.len;
    bool ok = false;
    if (!validate_changed(g, s, node_changed, value_changed, NULL, NULL, false, dg, &ok)) {
        ok = ir_validate(g, dg);
        free(s->node_fp);
        free(s->value_fp);
        take(s, g);
    }
    free(node_changed);
    free(value_changed);
    return ok;
}

bool ir_validate_marked(ir_graph *g, bool *dirty_node, bool *dirty_value, dg_context *dg)
{
    return ir_validate_planned(g, dirty_node, dirty_value, NULL, dg);
}

bool ir_validate_planned(ir_graph *g, bool *dirty_node, bool *dirty_value,
                         const ir_type *const *planned, dg_context *dg)
{
    bool ok = false;
    if (!validate_changed(g, NULL, dirty_node, dirty_value, planned, NULL, false, dg, &ok))
        ok = ir_validate(g, dg);
    return ok;
}

bool ir_validate_round(ir_graph *g, bool *dirty_node, bool *dirty_value,
                       const ir_type *const *planned, const bool *same, dg_context *dg)
{
    bool ok = false;
    if (!validate_changed(g, NULL, dirty_node, dirty_value, planned, same, true, dg, &ok))
        ok = ir_validate(g, dg);
    return ok;
}

void ir_validated_changed(const ir_validated *s, const ir_graph *g, bool *node_changed,
                          bool *value_changed)
{
    for (size_t i = 0; i < g->nodes.len; i++)
        node_changed[i] = i >= s->nnodes || node_fingerprint(g->nodes.items[i]) != s->node_fp[i];
    for (size_t i = 0; i < g->values.len; i++)
        value_changed[i] =
            i >= s->nvalues || value_fingerprint(g->values.items[i]) != s->value_fp[i];
}
