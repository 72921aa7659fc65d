/* Building and editing graphs. */
#include "ir/ir.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

ir_graph *ir_graph_new(const char *name)
{
    ar_arena *arena = ar_new();
    ir_graph *g = ar_alloc(arena, sizeof *g);
    g->arena = arena;
    g->name = ar_strdup(arena, name);
    g->dir = ".";
    return g;
}

void ir_graph_free(ir_graph *g)
{
    if (!g)
        return;
    ir_const_files_close(g);
    vec_free(&g->values);
    vec_free(&g->nodes);
    vec_free(&g->inputs);
    vec_free(&g->outputs);
    vec_free(&g->symbols);
    vec_free(&g->symexprs);
    sm_free(&g->symbol_index);
    sm_free(&g->expr_index);
    vec_free(&g->kernels);
    sm_free(&g->kernel_index);
    ir_names_free(&g->by_name);
    free(g->types.slots);
    if (g->src_hold)
        dg_source_drop(g->src_hold);
    ar_free(g->arena);
}

_Static_assert(sizeof(ir_node) % _Alignof(ir_value *) == 0, "operand arrays follow the node");
_Static_assert(sizeof(ir_node) <= 48 && sizeof(ir_value) <= 56, "ir/ir.h: a node or value grew");

static ir_value *new_value(ir_graph *g, const char *name, size_t len, ir_value_kind kind)
{
    size_t slot;
    if (!ir_names_claim(&g->by_name, name, len, &slot)) /* the name's one probe */
        return NULL;
    ir_value *v = ir_names_new_value(g->arena, name, len);
    v->kind = kind;
    v->type = ir_type_unknown_interned(g);
    FR_CHECK(g->values.len < UINT32_MAX);
    v->id = (uint32_t)g->values.len;
    vec_push(&g->values, v);
    ir_names_set(&g->by_name, slot, v);
    return v;
}

ir_value *ir_add_input_n(ir_graph *g, const char *name, size_t len, const ir_type *type)
{
    ir_value *v = new_value(g, name, len, IR_VALUE_INPUT);
    if (v) {
        ir_value_set_type(g, v, type);
        vec_push(&g->inputs, v);
    }
    return v;
}

ir_value *ir_add_input(ir_graph *g, const char *name, const ir_type *type)
{
    return ir_add_input_n(g, name, strlen(name), type);
}

ir_value *ir_add_const_n(ir_graph *g, const char *name, size_t len, const ir_type *type,
                         ir_const *c)
{
    ir_value *v = new_value(g, name, len, IR_VALUE_CONST);
    if (v) {
        ir_value_set_type(g, v, type);
        v->konst = c;
    }
    return v;
}

ir_value *ir_add_const(ir_graph *g, const char *name, const ir_type *type, ir_const *c)
{
    return ir_add_const_n(g, name, strlen(name), type, c);
}

ir_node *ir_add_node_n(ir_graph *g, ir_op op, uint32_t ninputs, const char *const *out_names,
                       const size_t *out_lens, uint32_t noutputs)
{
    /* with one output, new_value's own check is the only lookup */
    for (uint32_t i = 0; noutputs > 1 && i < noutputs; i++)
        if (ir_names_get(&g->by_name, out_names[i], out_lens[i]))
            return NULL;
    ir_value *first = NULL;
    if (noutputs == 1 && !(first = new_value(g, out_names[0], out_lens[0], IR_VALUE_NODE)))
        return NULL;
    /* the node and its operand arrays in one allocation: no rounding of each array to the
     * arena's alignment, and a node's operands beside it in memory */
    FR_CHECK(noutputs <= IR_MAX_OUTPUTS); /* the parser and the importer report more */
    ir_node *n = ar_alloc(g->arena, sizeof *n + ((size_t)ninputs + noutputs) * sizeof(ir_value *));
    n->op = op;
    FR_CHECK(g->nodes.len < UINT32_MAX);
    n->id = (uint32_t)g->nodes.len;
    n->ninputs = ninputs;
    n->inputs = (ir_value **)(n + 1);
    n->noutputs = (uint16_t)noutputs;
    n->outputs = n->inputs + ninputs;
    for (uint32_t i = 0; i < noutputs; i++) {
        ir_value *v = first ? first : new_value(g, out_names[i], out_lens[i], IR_VALUE_NODE);
        FR_CHECK(v != NULL); /* names were checked above; a repeated name in out_names is a bug */
        v->producer = n;
        v->out_index = (uint16_t)i;
        n->outputs[i] = v;
    }
    vec_push(&g->nodes, n);
    return n;
}

ir_node *ir_add_node(ir_graph *g, ir_op op, uint32_t ninputs, const char *const *out_names,
                     uint32_t noutputs)
{
    enum { FEW = 8 };
    size_t few[FEW] = {0};
    size_t *lens = noutputs <= FEW ? few : malloc(noutputs * sizeof *lens);
    FR_CHECK(lens != NULL);
    for (uint32_t i = 0; i < noutputs; i++)
        lens[i] = strlen(out_names[i]);
    ir_node *n = ir_add_node_n(g, op, ninputs, out_names, lens, noutputs);
    if (lens != few)
        free(lens);
    return n;
}

void ir_set_input(ir_node *n, uint32_t index, ir_value *v)
{
    FR_CHECK(index < n->ninputs);
    n->inputs[index] = v;
}

_Static_assert(IR_MAX_KERNELS - IR_MAX_TEXT_KERNELS >= 2 * IR_OP_COUNT,
               "a text's kernel names leave room for the registry's (cpu and cuda per op)");

bool ir_node_set_kernel_n(ir_graph *g, ir_node *n, const char *name, size_t len)
{
    uintptr_t known = (uintptr_t)sm_get(&g->kernel_index, name, len);
    if (!known) {
        if (g->kernels.len >= IR_MAX_KERNELS)
            return false;
        char *copy = ar_strndup(g->arena, name, len);
        vec_push(&g->kernels, copy);
        known = g->kernels.len;
        sm_put(&g->kernel_index, copy, len, (void *)known);
    }
    n->kernel = (uint16_t)known;
    return true;
}

bool ir_node_set_kernel(ir_graph *g, ir_node *n, const char *name)
{
    if (!name) {
        n->kernel = 0;
        return true;
    }
    return ir_node_set_kernel_n(g, n, name, strlen(name));
}

void ir_add_output(ir_graph *g, ir_value *v)
{
    v->is_output = true;
    vec_push(&g->outputs, v);
}

ir_const *ir_const_new(ir_graph *g, ir_const_kind kind)
{
    ir_const *c = ar_alloc(g->arena, sizeof *c);
    c->kind = kind;
    if (kind == IR_CONST_RANDOM) {
        c->lo = -1.0;
        c->hi = 1.0;
    }
    return c;
}

int64_t ir_symbol(ir_graph *g, const char *name, size_t len)
{
    uintptr_t known = (uintptr_t)sm_get(&g->symbol_index, name, len);
    if (known)
        return ir_dim_from_symbol((uint32_t)(known - 1));
    FR_CHECK(g->symbols.len < INT32_MAX);
    char *copy = ar_strndup(g->arena, name, len);
    vec_push(&g->symbols, copy);
    vec_push(&g->symexprs, NULL);
    sm_put(&g->symbol_index, copy, len, (void *)(uintptr_t)g->symbols.len);
    return ir_dim_from_symbol((uint32_t)(g->symbols.len - 1));
}

const char *ir_symbol_name(const ir_graph *g, int64_t dim)
{
    FR_CHECK(ir_dim_is_symbol(dim) && ir_dim_symbol(dim) < g->symbols.len);
    return g->symbols.items[ir_dim_symbol(dim)];
}

int64_t ir_symbol_lookup(const ir_graph *g, const char *name)
{
    uintptr_t known = (uintptr_t)sm_get(&g->symbol_index, name, strlen(name));
    return known ? (int64_t)(known - 1) : -1;
}

const char *ir_fresh_name(ir_graph *g, const char *stem)
{
    if (!ir_names_get(&g->by_name, stem, strlen(stem)))
        return ar_strdup(g->arena, stem);
    for (unsigned long k = 1;; k++) {
        char *name = ar_printf(g->arena, "%s_%lu", stem, k);
        if (!ir_names_get(&g->by_name, name, strlen(name)))
            return name;
    }
}

ir_value *ir_find_value(const ir_graph *g, const char *name)
{
    return ir_names_get(&g->by_name, name, strlen(name));
}

ir_value *ir_find_value_n(const ir_graph *g, const char *name, size_t len)
{
    return ir_names_get(&g->by_name, name, len);
}

/* ---- attributes ---- */

/* A node's attribute array is never written in place: the rewriter gives fused nodes with equal
 * attributes one array (rw_commit), so a change takes a copy of its own. */
void ir_set_attr(ir_graph *g, ir_node *n, const ir_attr *a)
{
    uint32_t at = 0;
    while (at < n->nattrs && strcmp(n->attrs[at].name, a->name) != 0)
        at++;
    uint32_t count = n->nattrs + (at == n->nattrs);
    ir_attr *copy = ar_alloc_array(g->arena, count, sizeof *copy);
    if (n->nattrs)
        memcpy(copy, n->attrs, n->nattrs * sizeof *copy);
    copy[at] = *a;
    n->attrs = copy;
    n->nattrs = count;
}

void ir_set_attr_int(ir_graph *g, ir_node *n, const char *name, int64_t v)
{
    ir_attr a = {.name = ar_strdup(g->arena, name), .kind = IR_ATTR_INT, .v.i = v};
    ir_set_attr(g, n, &a);
}

void ir_set_attr_float(ir_graph *g, ir_node *n, const char *name, double v)
{
    ir_attr a = {.name = ar_strdup(g->arena, name), .kind = IR_ATTR_FLOAT, .v.f = v};
    ir_set_attr(g, n, &a);
}

void ir_set_attr_string(ir_graph *g, ir_node *n, const char *name, const char *v)
{
    ir_attr a = {.name = ar_strdup(g->arena, name), .kind = IR_ATTR_STRING,
                 .v.s = ar_strdup(g->arena, v)};
    ir_set_attr(g, n, &a);
}

void ir_set_attr_ints(ir_graph *g, ir_node *n, const char *name, const int64_t *v, uint32_t count)
{
    int64_t *copy = ar_alloc_array(g->arena, count, sizeof *copy);
    if (count)
        memcpy(copy, v, count * sizeof *copy);
    ir_attr a = {.name = ar_strdup(g->arena, name), .kind = IR_ATTR_INTS, .count = count,
                 .v.ints = copy};
    ir_set_attr(g, n, &a);
}

void ir_set_attr_floats(ir_graph *g, ir_node *n, const char *name, const double *v, uint32_t count)
{
    double *copy = ar_alloc_array(g->arena, count, sizeof *copy);
    if (count)
        memcpy(copy, v, count * sizeof *copy);
    ir_attr a = {.name = ar_strdup(g->arena, name), .kind = IR_ATTR_FLOATS, .count = count,
                 .v.floats = copy};
    ir_set_attr(g, n, &a);
}

const ir_attr *ir_node_attr(const ir_node *n, const char *name)
{
    for (uint32_t i = 0; i < n->nattrs; i++) {
        const char *have = n->attrs[i].name; /* the first byte first: no strcmp call for most */
        if (have == name || (have[0] == name[0] && strcmp(have, name) == 0))
            return &n->attrs[i];
    }
    return NULL;
}

/* The schema entry for an attribute the caller reads; reading an attribute the op does not declare
 * is a bug in the caller. */
static const ir_attr_schema *schema(const ir_node *n, const char *name, ir_attr_kind kind)
{
    const ir_attr_schema *s = ir_op_attr_schema(n->op, name);
    if (!s) {
        fprintf(stderr, "internal error: op %s has no attribute '%s'\n", ir_op_name(n->op), name);
        abort();
    }
    FR_CHECK(s->kind == kind);
    return s;
}

int64_t ir_get_int(const ir_node *n, const char *name)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_INT)
        return a->v.i;
    return schema(n, name, IR_ATTR_INT)->i;
}

double ir_get_float(const ir_node *n, const char *name)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_FLOAT)
        return a->v.f;
    if (a && a->kind == IR_ATTR_INT) /* `alpha=1` written without a point */
        return (double)a->v.i;
    return schema(n, name, IR_ATTR_FLOAT)->f;
}

const char *ir_get_string(const ir_node *n, const char *name)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_STRING)
        return a->v.s;
    return schema(n, name, IR_ATTR_STRING)->s;
}

uint32_t ir_get_ints(const ir_node *n, const char *name, const int64_t **out)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_INTS) {
        *out = a->v.ints;
        return a->count;
    }
    const ir_attr_schema *s = schema(n, name, IR_ATTR_INTS);
    *out = s->ints;
    return s->nints;
}

/* ---- whole-graph passes ---- */

void ir_compute_uses(ir_graph *g)
{
    /* a value's list has room for at least as many consumers as it lists: a list that still
     * fits is rewritten in place (after a round that changed little, nearly all do), so that each
     * pass does not leave a new list per value in the arena */
    size_t nv = g->values.len;
    uint32_t *room = malloc((nv ? nv : 1) * sizeof *room);
    FR_CHECK(room != NULL);
    for (size_t i = 0; i < nv; i++) {
        room[i] = g->values.items[i]->nuses;
        g->values.items[i]->nuses = 0;
        g->values.items[i]->is_output = false;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        g->outputs.items[i]->is_output = true;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k])
                n->inputs[k]->nuses++;
    }
    for (size_t i = 0; i < nv; i++) {
        ir_value *v = g->values.items[i];
        if (!v->uses || v->nuses > room[i])
            v->uses = ar_alloc_array(g->arena, v->nuses, sizeof *v->uses);
        v->nuses = 0;
    }
    free(room);
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            ir_value *v = n->inputs[k];
            /* a node that reads the same value twice is one consumer */
            if (v && (v->nuses == 0 || v->uses[v->nuses - 1] != n))
                v->uses[v->nuses++] = n;
        }
    }
}

/* Drops the dead nodes, renumbering the live ones in order. */
static void compact_nodes(ir_graph *g)
{
    size_t kept = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        n->id = (uint32_t)kept;
        g->nodes.items[kept++] = n;
    }
    g->nodes.len = kept;
}

/* Removes the names of the values not live (by id, before compaction) in one pass over the name
 * map: when a round drops many values, that reads the slots in order instead of hashing each name
 * and probing for it (at a cache miss or two each). Returns which live values (by id) the map
 * holds: compaction moves the marks with the values and the map keeps them for validation
 * (ir_names_take_seen), which then need not read the map again. */
static bool *release_names(ir_graph *g, const bool *live)
{
    bool *seen = calloc(g->values.len ? g->values.len : 1, sizeof *seen);
    FR_CHECK(seen != NULL);
    ir_names_remove_dead(&g->by_name, g->values.items, g->values.len, live, seen);
    return seen;
}

/* ir_compact, moving value_flag (may be NULL) along with the values; with `uses`, also the use
 * lists as ir_compute_uses would leave them after it, from the same passes over the live nodes'
 * operands and the kept values (false, the lists untouched, when a live node reads a value that
 * is not the graph's: validation reports it). */
static bool compact(ir_graph *g, bool *value_flag, bool uses)
{
    compact_nodes(g);

    /* a value survives when it is an input, an output, a live node's output, or read by one */
    size_t nv = g->values.len;
    bool *live = calloc(nv ? nv : 1, sizeof *live);
    FR_CHECK(live != NULL);
    uint32_t *reads = NULL; /* with uses: how many operands of live nodes each value is */
    if (uses) {
        reads = calloc(nv ? nv : 1, sizeof *reads);
        FR_CHECK(reads != NULL);
    }
    for (size_t i = 0; i < g->inputs.len; i++)
        live[g->inputs.items[i]->id] = true;
    for (size_t i = 0; i < g->outputs.len; i++)
        live[g->outputs.items[i]->id] = true;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            const ir_value *v = n->inputs[k];
            if (!v)
                continue;
            live[v->id] = true;
            if (reads && v->id < nv && g->values.items[v->id] == v) {
                reads[v->id]++;
            } else if (reads) { /* not the graph's: no lists */
                free(reads);
                reads = NULL;
            }
        }
        for (uint32_t k = 0; k < n->noutputs; k++)
            live[n->outputs[k]->id] = true;
    }
    /* the name stays reserved in by_name only while the value lives */
    size_t dropped = 0;
    for (size_t i = 0; i < nv; i++)
        dropped += !live[i];
    bool *seen = dropped > g->by_name.cap / 8 ? release_names(g, live) : NULL;
    size_t kept = 0;
    for (size_t i = 0; i < nv; i++) {
        ir_value *v = g->values.items[i];
        if (!live[i]) {
            if (dropped <= g->by_name.cap / 8)
                ir_names_remove(&g->by_name, v);
            continue;
        }
        if (value_flag)
            value_flag[kept] = value_flag[i];
        if (seen)
            seen[kept] = seen[i];
        if (reads) {
            /* a list that still fits is rewritten in place (ir_compute_uses) */
            if (!v->uses || reads[i] > v->nuses)
                v->uses = ar_alloc_array(g->arena, reads[i], sizeof *v->uses);
            v->nuses = 0;
            v->is_output = false;
        }
        v->id = (uint32_t)kept;
        g->values.items[kept++] = v;
    }
    g->values.len = kept;
    free(live);
    if (seen)
        ir_names_keep_seen(&g->by_name, seen, g->values.items, kept);
    if (!reads)
        return false;
    free(reads);
    for (size_t i = 0; i < g->outputs.len; i++)
        g->outputs.items[i]->is_output = true;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            ir_value *v = n->inputs[k];
            /* a node that reads the same value twice is one consumer */
            if (v && (v->nuses == 0 || v->uses[v->nuses - 1] != n))
                v->uses[v->nuses++] = n;
        }
    }
    return true;
}

void ir_compact(ir_graph *g)
{
    compact(g, NULL, false);
}

bool ir_compact_uses(ir_graph *g, bool *value_flag)
{
    return compact(g, value_flag, true);
}

bool ir_value_kept(const ir_graph *g, const ir_value *v)
{
    (void)g;
    if (v->nuses > 0 || v->is_output)
        return true;
    const ir_node *p = v->kind == IR_VALUE_NODE ? v->producer : NULL;
    return p && !p->dead && v->out_index < p->noutputs && p->outputs[v->out_index] == v;
}

void ir_compact_used(ir_graph *g)
{
    compact_nodes(g);
    bool *input = calloc(g->values.len ? g->values.len : 1, sizeof *input);
    FR_CHECK(input != NULL);
    for (size_t i = 0; i < g->inputs.len; i++)
        input[g->inputs.items[i]->id] = true;
    /* a dropped value's name is released AHEAD drops later, its slot prefetched now: in a name
     * map larger than the caches each release is a cache miss, and these overlap (a round of
     * canon at 1M nodes drops 166,666 values) */
    enum { AHEAD = 8 };
    const ir_value *ring[AHEAD];
    size_t ndropped = 0;
    size_t kept = 0;
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        if (!input[i] && !ir_value_kept(g, v)) {
            size_t r = ndropped++ % AHEAD;
            if (ndropped > AHEAD)
                ir_names_remove(&g->by_name, ring[r]);
            ring[r] = v;
            ir_names_prefetch(&g->by_name, v->name, strlen(v->name));
            continue;
        }
        v->id = (uint32_t)kept;
        g->values.items[kept++] = v;
    }
    for (size_t d = ndropped > AHEAD ? ndropped - AHEAD : 0; d < ndropped; d++)
        ir_names_remove(&g->by_name, ring[d % AHEAD]);
    g->values.len = kept;
    free(input);
}
