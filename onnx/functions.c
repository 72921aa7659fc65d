/* Model-local functions (ModelProto.functions, which torch's dynamo exporter writes): each call is
 * replaced by the function's nodes before import reads the graph.
 *
 * A call's node names the function by domain and op_type. Its nodes are copied with the formal
 * inputs and outputs renamed to the call's actual ones (an omitted optional input becomes "") and
 * every other name prefixed with the call's first output, "<output>/<name>", which is unique
 * because outputs are. An attribute that refers to one of the function's (`ref_attr_name`) takes
 * the call's attribute of that name, or is left out when the call gives none (the op's default).
 * Calls inside functions are expanded the same way; a function that calls itself, directly or
 * through others, is refused by name, as is nesting deeper than OX_MAX_FUNCTION_DEPTH and an
 * expansion of more than OX_MAX_INLINED_NODES nodes.
 *
 * onnx 1.12's schema has no FunctionProto.attribute_proto (default values of a function's
 * attributes, onnx 1.13): such defaults arrive as an unknown field, and a call that relies on one
 * is refused rather than given the op's default instead. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <inttypes.h>
#include <string.h>

enum {
    OX_MAX_FUNCTION_DEPTH = 32,
    /* Nodes that inlining may make: a function calling another twice, 32 levels deep, would
     * otherwise ask for 2^32 copies from a tiny file. */
    OX_MAX_INLINED_NODES = 1 << 20,
    FIELD_ATTRIBUTE_PROTO = 11, /* FunctionProto.attribute_proto in onnx 1.13 and later */
};

typedef struct {
    const Onnx__ModelProto *m;
    ox_report *r;
    ar_arena *arena;
    int64_t opset; /* the model's default-domain opset */
    VEC(const Onnx__NodeProto *) out;
    const Onnx__FunctionProto *stack[OX_MAX_FUNCTION_DEPTH];
    unsigned depth;
    size_t made; /* node copies so far */
} inliner;

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static bool same_domain(const char *a, const char *b)
{
    a = strcmp(or_empty(a), "ai.onnx") == 0 ? "" : or_empty(a);
    b = strcmp(or_empty(b), "ai.onnx") == 0 ? "" : or_empty(b);
    return strcmp(a, b) == 0;
}

static const Onnx__FunctionProto *find_function(const Onnx__ModelProto *m,
                                                const Onnx__NodeProto *np)
{
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (strcmp(or_empty(f->name), or_empty(np->op_type)) == 0 &&
            same_domain(f->domain, np->domain))
            return f;
    }
    return NULL;
}

static bool has_attribute_defaults(const Onnx__FunctionProto *f)
{
    for (unsigned i = 0; i < f->base.n_unknown_fields; i++)
        if (f->base.unknown_fields[i].tag == FIELD_ATTRIBUTE_PROTO)
            return true;
    return false;
}

/* The function's default-domain opset must be the model's: the nodes are imported as the model's. */
static bool check_opsets(inliner *in, const Onnx__FunctionProto *f)
{
    for (size_t i = 0; i < f->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = f->opset_import[i];
        int64_t v = o->has_version ? o->version : 0;
        if (same_domain(o->domain, "") && v != in->opset) {
            ox_unsupported(in->r,
                           "function '%s' imports opset %" PRId64 " of the default domain, the "
                           "model %" PRId64 "; import inlines functions of the model's opset",
                           f->name, v, in->opset);
            return false;
        }
    }
    return true;
}

/* Renames within one call: formal names to actual ones, the function's own names prefixed. */
typedef struct {
    sm_map names;
    const char *prefix;
    ar_arena *arena;
} renamer;

static const char *rename_value(renamer *rn, const char *name)
{
    if (!name[0])
        return "";
    const char *mapped = sm_get(&rn->names, name, strlen(name));
    if (mapped)
        return mapped;
    const char *fresh = ar_printf(rn->arena, "%s/%s", rn->prefix, name);
    sm_put(&rn->names, name, strlen(name), (void *)fresh);
    return fresh;
}

static char **rename_all(renamer *rn, char **names, size_t n)
{
    char **out = ar_alloc_array(rn->arena, n, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = (char *)rename_value(rn, names[i]);
    return out;
}

static const Onnx__AttributeProto *call_attr(const Onnx__NodeProto *call, const char *name)
{
    for (size_t i = 0; i < call->n_attribute; i++)
        if (strcmp(or_empty(call->attribute[i]->name), name) == 0)
            return call->attribute[i];
    return NULL;
}

/* The inner node's attributes with references resolved against the call's. */
static bool resolve_attrs(inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *call,
                          Onnx__NodeProto *copy)
{
    Onnx__AttributeProto **attrs = ar_alloc_array(in->arena, copy->n_attribute, sizeof *attrs);
    size_t n = 0;
    for (size_t i = 0; i < copy->n_attribute; i++) {
        const Onnx__AttributeProto *a = copy->attribute[i];
        const char *ref = or_empty(a->ref_attr_name);
        if (!ref[0]) {
            attrs[n++] = (Onnx__AttributeProto *)a;
            continue;
        }
        const Onnx__AttributeProto *given = call_attr(call, ref);
        if (!given) {
            if (has_attribute_defaults(f)) {
                ox_unsupported(in->r,
                               "function '%s': the call '%s' gives no attribute '%s', and the "
                               "function's default values (attribute_proto, onnx 1.13) are "
                               "outside the onnx 1.12 schema import reads",
                               f->name, call->output[0], ref);
                return false;
            }
            continue; /* absent: the op's default */
        }
        Onnx__AttributeProto *resolved = ar_alloc(in->arena, sizeof *resolved);
        *resolved = *given;
        resolved->name = a->name;
        resolved->ref_attr_name = NULL;
        attrs[n++] = resolved;
    }
    copy->attribute = attrs;
    copy->n_attribute = n;
    return true;
}

static bool expand(inliner *in, const Onnx__NodeProto *np);

static bool expand_call(inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *call)
{
    for (unsigned d = 0; d < in->depth; d++) {
        if (in->stack[d] == f) {
            const char *via = d + 1 < in->depth ? in->stack[in->depth - 1]->name : NULL;
            ox_unsupported(in->r, "function '%s' calls itself%s%s%s: recursion cannot be inlined",
                           f->name, via ? " through '" : "", via ? via : "", via ? "'" : "");
            return false;
        }
    }
    if (in->depth == OX_MAX_FUNCTION_DEPTH) {
        ox_invalid(in->r, "function '%s': calls nested deeper than %d", f->name,
                   OX_MAX_FUNCTION_DEPTH);
        return false;
    }
    if (call->n_input > f->n_input || call->n_output > f->n_output || call->n_output == 0 ||
        !call->output[0][0]) {
        ox_invalid(in->r,
                   "node '%s' calls function '%s' with %zu inputs and %zu outputs; it has %zu "
                   "and %zu (and the call's first output must be named)",
                   or_empty(call->name), f->name, call->n_input, call->n_output, f->n_input,
                   f->n_output);
        return false;
    }
    if (!check_opsets(in, f))
        return false;
    renamer rn = {.prefix = call->output[0], .arena = in->arena};
    for (size_t i = 0; i < f->n_input; i++)
        sm_put(&rn.names, f->input[i], strlen(f->input[i]),
               (void *)(i < call->n_input ? call->input[i] : ""));
    for (size_t i = 0; i < f->n_output; i++)
        if (i < call->n_output && call->output[i][0])
            sm_put(&rn.names, f->output[i], strlen(f->output[i]), call->output[i]);
    in->stack[in->depth++] = f;
    bool ok = true;
    for (size_t i = 0; i < f->n_node && ok; i++) {
        if (++in->made > OX_MAX_INLINED_NODES) {
            ox_invalid(in->r, "inlining function '%s' makes more than %d nodes", f->name,
                       OX_MAX_INLINED_NODES);
            ok = false;
            break;
        }
        Onnx__NodeProto *copy = ar_alloc(in->arena, sizeof *copy);
        *copy = *f->node[i];
        copy->input = rename_all(&rn, f->node[i]->input, f->node[i]->n_input);
        copy->output = rename_all(&rn, f->node[i]->output, f->node[i]->n_output);
        copy->name = ar_printf(in->arena, "%s/%s", call->output[0],
                               f->node[i]->name && f->node[i]->name[0] ? f->node[i]->name
                                                                       : or_empty(copy->op_type));
        ok = resolve_attrs(in, f, call, copy) && expand(in, copy);
    }
    in->depth--;
    sm_free(&rn.names);
    return ok;
}

static bool expand(inliner *in, const Onnx__NodeProto *np)
{
    const Onnx__FunctionProto *f = find_function(in->m, np);
    if (!f) {
        vec_push(&in->out, np);
        return true;
    }
    return expand_call(in, f, np);
}

bool ox_inline_functions(ox_report *r, ar_arena *arena, const Onnx__ModelProto *m, int64_t opset,
                         const Onnx__NodeProto ***nodes, size_t *count)
{
    const Onnx__GraphProto *gp = m->graph;
    if (m->n_functions == 0) {
        *nodes = (const Onnx__NodeProto **)gp->node;
        *count = gp->n_node;
        return true;
    }
    inliner in = {.m = m, .r = r, .arena = arena, .opset = opset};
    bool ok = true;
    for (size_t i = 0; i < gp->n_node; i++)
        ok = expand(&in, gp->node[i]) && ok;
    const Onnx__NodeProto **copy = ar_alloc_array(arena, in.out.len, sizeof *copy);
    if (in.out.len)
        memcpy(copy, in.out.items, in.out.len * sizeof *copy);
    *nodes = copy;
    *count = in.out.len;
    vec_free(&in.out);
    return ok;
}
