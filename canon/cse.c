/* Common subexpressions (docs/canon.md, "Common subexpressions"): a node computing what an earlier
 * node computes (the same op, the same attributes, the same inputs after the merges before it)
 * is replaced by that node, and a small constant equal to an earlier one (type and bytes) by it.
 * Nodes are visited in topological order, so Sub(x, ReduceMean(x)) written twice merges at once.
 * The key is the node serialized; the first node with a key stays: no dependence on addresses. */
#include "canon/internal.h"

#include "base/check.h"
#include "base/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Constants up to this many elements are compared by value. */
enum { SMALL_CONST = 16 };

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

/* The node's key in the arena: op, inputs (resolved), attributes sorted by name. */
static const char *node_key(cn_ctx *c, ar_arena *arena, const ir_node *n, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    FR_CHECK(f != NULL);
    uint32_t head[3] = {(uint32_t)n->op, n->ninputs, n->noutputs};
    fwrite(head, sizeof head, 1, f);
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const ir_value *v = cn_resolve(c, n->inputs[k]);
        uint32_t id = v ? v->id : UINT32_MAX;
        fwrite(&id, sizeof id, 1, f);
    }
    const ir_attr **attrs = malloc((n->nattrs ? n->nattrs : 1) * sizeof *attrs);
    FR_CHECK(attrs != NULL);
    for (uint32_t a = 0; a < n->nattrs; a++)
        attrs[a] = &n->attrs[a];
    qsort(attrs, n->nattrs, sizeof *attrs, by_attr_name);
    for (uint32_t a = 0; a < n->nattrs; a++) {
        const ir_attr *at = attrs[a];
        fwrite(at->name, strlen(at->name) + 1, 1, f);
        uint32_t kc[2] = {(uint32_t)at->kind, at->count};
        fwrite(kc, sizeof kc, 1, f);
        switch (at->kind) {
        case IR_ATTR_INT: fwrite(&at->v.i, sizeof at->v.i, 1, f); break;
        case IR_ATTR_FLOAT: fwrite(&at->v.f, sizeof at->v.f, 1, f); break;
        case IR_ATTR_STRING: fwrite(at->v.s, strlen(at->v.s) + 1, 1, f); break;
        case IR_ATTR_INTS: fwrite(at->v.ints, sizeof *at->v.ints, at->count, f); break;
        case IR_ATTR_FLOATS: fwrite(at->v.floats, sizeof *at->v.floats, at->count, f); break;
        }
    }
    free(attrs);
    fclose(f);
    char *key = ar_alloc(arena, size ? size : 1);
    memcpy(key, buf, size);
    free(buf);
    *len = size;
    return key;
}

/* A small constant's key: its type and its bytes; NULL for a large or unreadable one. */
static const char *const_key(ir_graph *g, ar_arena *arena, ir_value *v, size_t *len)
{
    int64_t n, nbytes;
    if (!ir_type_numel(&v->type, &n) || n > SMALL_CONST || !ir_type_nbytes(&v->type, &nbytes))
        return NULL;
    dg_context *dg = dg_new();
    const void *data = ir_const_data(g, v, dg);
    dg_free(dg);
    if (!data)
        return NULL;
    ir_type t;
    memset(&t, 0, sizeof t); /* padding too: the key is compared as bytes */
    t.dtype = v->type.dtype;
    t.rank = v->type.rank;
    t.layout = v->type.layout;
    for (int8_t d = 0; d < v->type.rank; d++)
        t.dims[d] = v->type.dims[d];
    *len = sizeof t + (size_t)nbytes;
    char *key = ar_alloc(arena, *len);
    memcpy(key, &t, sizeof t);
    memcpy(key + sizeof t, data, (size_t)nbytes);
    return key;
}

uint32_t cn_cse(cn_ctx *c)
{
    ir_graph *g = c->g;
    ar_arena *arena = ar_new();
    sm_map seen = {0};
    uint32_t merged = 0;
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        size_t len;
        const char *key = v->kind == IR_VALUE_CONST ? const_key(g, arena, v, &len) : NULL;
        if (!key)
            continue;
        ir_value *first = sm_get(&seen, key, len);
        if (!first)
            sm_put(&seen, key, len, v);
        else if (cn_forward(c, v, first))
            merged++;
    }
    sm_free(&seen);
    memset(&seen, 0, sizeof seen);
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        if (n->dead || keep_op[n->op] || n->ninputs == 0)
            continue;
        size_t len;
        const char *key = node_key(c, arena, n, &len);
        ir_node *first = sm_get(&seen, key, len);
        if (!first) {
            sm_put(&seen, key, len, n);
            continue;
        }
        bool ok = true;
        for (uint32_t k = 0; k < n->noutputs && ok; k++)
            ok = !n->outputs[k]->is_output &&
                 ir_type_equal(&n->outputs[k]->type, &first->outputs[k]->type);
        if (!ok)
            continue;
        for (uint32_t k = 0; k < n->noutputs; k++)
            FR_CHECK(cn_forward(c, n->outputs[k], first->outputs[k]));
        n->dead = true;
        merged++;
    }
    sm_free(&seen);
    ar_free(arena);
    return merged;
}
