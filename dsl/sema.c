/* Semantic checks of one rule's pattern: op names (aliases, sets, `[A | B]`), `let` references,
 * predicates, inline attributes, arity; then captures are unified, which turns the parsed trees
 * into the pattern DAG (a repeated name is one node), and the DAG is ordered, operands first.
 *
 * Parsed trees are at most DSL_MAX_DEPTH deep (the parser refused deeper ones), so the passes over
 * them recurse; the DAG can be deeper through `let` bindings, so it is walked with a stack. */
#include "dsl/sema.h"

#include "base/check.h"
#include "dsl/names.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- reporting ---- */

void dsl_rule_error(dsl_rule_check *rc, uint32_t offset, uint32_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = ar_vprintf(rc->rs->arena, fmt, ap);
    va_end(ap);
    dg_error(rc->dg, rc->src, offset, len, "%s", msg);
    rc->ok = false;
}

void dsl_rule_note(dsl_rule_check *rc, uint32_t offset, uint32_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = ar_vprintf(rc->rs->arena, fmt, ap);
    va_end(ap);
    dg_note(rc->dg, rc->src, offset, len, "%s", msg);
}

static const char *tok_str(dsl_rule_check *rc, dsl_token tok)
{
    return ar_strndup(rc->rs->arena, dsl_tok_text(rc->src, tok), tok.len);
}

/* ---- captures ---- */

static dsl_capture *find_capture(dsl_rule_check *rc, const char *name, size_t len)
{
    return sm_get(&rc->names, name, len);
}

static dsl_capture *new_capture(dsl_rule_check *rc, const char *name, uint32_t offset,
                                uint32_t len, bool is_let)
{
    dsl_capture *cap = ar_alloc(rc->rs->arena, sizeof *cap);
    cap->name = name;
    cap->is_let = is_let;
    cap->src_offset = offset;
    cap->src_len = len;
    sm_put(&rc->names, cap->name, strlen(cap->name), cap);
    vec_push(&rc->captures, cap);
    return cap;
}

static void note_occurrence(dsl_rule_check *rc, dsl_token tok, dsl_pattern **slot, bool defines)
{
    const char *name = tok_str(rc, (dsl_token){tok.offset + 1, tok.len - 1, tok.line});
    dsl_capture *cap = find_capture(rc, name, strlen(name));
    if (!cap)
        cap = new_capture(rc, name, tok.offset, tok.len, false);
    dsl_occurrence o = {cap, slot, *slot, tok, defines};
    vec_push(&rc->occurrences, o);
}

dsl_capture *dsl_rule_ref_name(dsl_rule_check *rc, const char *name, uint32_t offset,
                               uint32_t len, const char *written)
{
    dsl_capture *cap = find_capture(rc, name, strlen(name));
    bool bare = written[0] != '@';
    if (cap && cap->node && bare && !cap->is_let) {
        dsl_rule_error(rc, offset, len, "'%s' is not bound by the pattern; did you mean '@%s'?",
                       written, name);
        cap->refs++; /* meant as a use: no "never used" error on top */
        return NULL;
    }
    if (!cap || !cap->node) {
        dsl_suggest s;
        dsl_suggest_init(&s, written, strlen(written));
        for (size_t i = 0; i < rc->captures.len; i++) {
            const dsl_capture *c = rc->captures.items[i];
            dsl_suggest_add(&s, c->is_let ? c->name : ar_printf(rc->rs->arena, "@%s", c->name));
        }
        char hint[128];
        dsl_rule_error(rc, offset, len, "'%s' is not bound by the pattern%s", written,
                       dsl_suggest_hint(&s, hint, sizeof hint));
        return NULL;
    }
    cap->refs++;
    return cap;
}

const char *dsl_at_name(ar_arena *arena, const char *name)
{
    size_t n = strlen(name);
    char *s = ar_alloc(arena, n + 2);
    s[0] = '@';
    memcpy(s + 1, name, n + 1);
    return s;
}

dsl_capture *dsl_rule_ref(dsl_rule_check *rc, dsl_token tok)
{
    const char *text = tok_str(rc, tok);
    const char *name = text[0] == '@' ? text + 1 : text;
    return dsl_rule_ref_name(rc, name, tok.offset, tok.len, text);
}

/* ---- predicates ---- */

static void suggest_predicates(dsl_suggest *s)
{
    dsl_suggest_add(s, "const");
    for (int dt = IR_DTYPE_UNKNOWN + 1; dt < IR_DTYPE_COUNT; dt++)
        dsl_suggest_add(s, ir_dtype_name((ir_dtype)dt));
    for (int l = IR_LAYOUT_NONE + 1; l < IR_LAYOUT_COUNT; l++)
        dsl_suggest_add(s, ir_layout_name((ir_layout)l));
    dsl_suggest_add(s, "rank1");
}

/* `rankN` with 0 <= N <= IR_MAX_RANK; -1 when the name is not of that form, -2 when N is too big. */
static int parse_rank(const char *s, size_t len)
{
    if (len < 5 || memcmp(s, "rank", 4) != 0)
        return -1;
    int rank = 0;
    for (size_t i = 4; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (rank > IR_MAX_RANK)
            return -2;
        rank = rank * 10 + (s[i] - '0');
    }
    return rank <= IR_MAX_RANK ? rank : -2;
}

static void resolve_pred(dsl_rule_check *rc, dsl_pattern *p, dsl_token tok)
{
    const char *s = dsl_tok_text(rc->src, tok);
    size_t len = tok.len;
    dsl_value_preds *pr = &p->preds;
    ir_dtype dt;
    ir_layout layout;
    int rank = parse_rank(s, len);
    if (len == 5 && memcmp(s, "const", 5) == 0) {
        if (p->kind == DSL_PAT_OP)
            dsl_rule_error(rc, tok.offset, tok.len,
                           "':const' applies to values: the output of an op is never a constant");
        pr->is_const = true;
    } else if (ir_dtype_parse(s, len, &dt)) {
        if (pr->dtype != IR_DTYPE_UNKNOWN && pr->dtype != dt)
            dsl_rule_error(rc, tok.offset, tok.len, "conflicting dtype predicates :%s and :%s",
                           ir_dtype_name(pr->dtype), ir_dtype_name(dt));
        pr->dtype = dt;
    } else if (ir_layout_parse(s, len, &layout)) {
        if (pr->layout != IR_LAYOUT_NONE && pr->layout != layout)
            dsl_rule_error(rc, tok.offset, tok.len, "conflicting layout predicates :%s and :%s",
                           ir_layout_name(pr->layout), ir_layout_name(layout));
        pr->layout = layout;
    } else if (rank >= 0) {
        if (pr->rank >= 0 && pr->rank != rank)
            dsl_rule_error(rc, tok.offset, tok.len, "conflicting rank predicates :rank%d and :rank%d",
                           pr->rank, rank);
        pr->rank = (int8_t)rank;
    } else if (rank == -2) {
        dsl_rule_error(rc, tok.offset, tok.len, "a rank predicate is at most :rank%d", IR_MAX_RANK);
    } else {
        dsl_suggest sg;
        dsl_suggest_init(&sg, s, len);
        suggest_predicates(&sg);
        char hint[128];
        dsl_rule_error(rc, tok.offset, tok.len,
                       "unknown predicate ':%.*s' (const, a dtype, a layout or rankN)%s", (int)len,
                       s, dsl_suggest_hint(&sg, hint, sizeof hint));
    }
}

static void resolve_preds(dsl_rule_check *rc, dsl_pattern *p)
{
    for (uint32_t i = 0; i < p->syntax->npreds; i++)
        resolve_pred(rc, p, p->syntax->preds[i]);
}

/* Adds src's predicates to dst (the same capture written twice); conflicts are errors. */
static void merge_preds(dsl_rule_check *rc, dsl_pattern *dst, const dsl_pattern *src,
                        dsl_token at)
{
    const dsl_value_preds *s = &src->preds;
    dsl_value_preds *d = &dst->preds;
    const char *name = dst->capture ? dst->capture->name : tok_str(rc, at) + 1;
    if (s->is_const && dst->kind == DSL_PAT_OP)
        dsl_rule_error(rc, at.offset, at.len,
                       "'@%s' names an op, whose output is never a constant", name);
    d->is_const |= s->is_const;
    if (s->dtype != IR_DTYPE_UNKNOWN) {
        if (d->dtype != IR_DTYPE_UNKNOWN && d->dtype != s->dtype)
            dsl_rule_error(rc, at.offset, at.len, "'@%s' is :%s here but :%s elsewhere", name,
                           ir_dtype_name(s->dtype), ir_dtype_name(d->dtype));
        d->dtype = s->dtype;
    }
    if (s->layout != IR_LAYOUT_NONE) {
        if (d->layout != IR_LAYOUT_NONE && d->layout != s->layout)
            dsl_rule_error(rc, at.offset, at.len, "'@%s' is :%s here but :%s elsewhere", name,
                           ir_layout_name(s->layout), ir_layout_name(d->layout));
        d->layout = s->layout;
    }
    if (s->rank >= 0) {
        if (d->rank >= 0 && d->rank != s->rank)
            dsl_rule_error(rc, at.offset, at.len, "'@%s' is :rank%d here but :rank%d elsewhere",
                           name, s->rank, d->rank);
        d->rank = s->rank;
    }
}

/* ---- op names ---- */

static int compare_ops(const void *a, const void *b)
{
    return (int)*(const ir_op *)a - (int)*(const ir_op *)b;
}

static void unknown_op(dsl_rule_check *rc, dsl_token tok)
{
    const char *name = dsl_tok_text(rc->src, tok);
    dsl_suggest s;
    dsl_suggest_init(&s, name, tok.len);
    dsl_suggest_ops(&s);
    for (size_t i = 0; i < rc->st->sets.len; i++)
        dsl_suggest_add(&s, rc->st->sets.items[i]->label);
    char hint[128];
    dsl_rule_error(rc, tok.offset, tok.len, "unknown op '%.*s'%s", (int)tok.len, name,
                   dsl_suggest_hint(&s, hint, sizeof hint));
}

static void resolve_ops(dsl_rule_check *rc, dsl_pattern *p)
{
    VEC(ir_op) ops = {0};
    for (uint32_t i = 0; i < p->syntax->nnames; i++) {
        dsl_token tok = p->syntax->names[i];
        const char *name = dsl_tok_text(rc->src, tok);
        ir_op op;
        const dsl_set_def *set = sm_get(rc->sets, name, tok.len);
        if (dsl_lookup_op(name, tok.len, &op)) {
            vec_push(&ops, op);
        } else if (set) {
            if (set->bad)
                rc->ok = false;
            for (uint32_t k = 0; k < set->nops; k++)
                vec_push(&ops, set->ops[k]);
        } else {
            unknown_op(rc, tok);
        }
    }
    if (ops.len > 1)
        qsort(ops.items, ops.len, sizeof *ops.items, compare_ops);
    size_t n = 0;
    for (size_t i = 0; i < ops.len; i++)
        if (n == 0 || ops.items[n - 1] != ops.items[i])
            ops.items[n++] = ops.items[i];
    ir_op *out = n ? ar_alloc_array(rc->rs->arena, n, sizeof *out) : NULL;
    if (n)
        memcpy(out, ops.items, n * sizeof *out);
    vec_free(&ops);
    p->ops = out;
    p->nops = (uint32_t)n;
    p->commutative = n > 0;
    for (size_t i = 0; i < n; i++) {
        rc->ops_used[out[i]] = true;
        if (!(ir_op_info_get(out[i])->flags & IR_OPF_COMMUTATIVE))
            p->commutative = false;
    }
}

/* ---- arity and inline attributes ---- */

const char *dsl_count_inputs(dsl_rule_check *rc, const ir_op_info *info)
{
    if (info->max_inputs == IR_VARIADIC)
        return ar_printf(rc->rs->arena, "at least %u input%s", info->min_inputs,
                         info->min_inputs == 1 ? "" : "s");
    if (info->min_inputs == info->max_inputs)
        return ar_printf(rc->rs->arena, "%u input%s", info->min_inputs,
                         info->min_inputs == 1 ? "" : "s");
    return ar_printf(rc->rs->arena, "%u to %u inputs", info->min_inputs, info->max_inputs);
}

static void check_arity(dsl_rule_check *rc, dsl_pattern *p)
{
    uint32_t n = p->noperands;
    for (uint32_t i = 0; i < p->nops; i++) {
        const ir_op_info *info = ir_op_info_get(p->ops[i]);
        bool too_many = info->max_inputs != IR_VARIADIC && n > info->max_inputs;
        bool too_few = !p->open && n < info->min_inputs;
        if (!too_many && !too_few)
            continue;
        dsl_rule_error(rc, p->src_offset, p->src_len, "%s takes %s, but %s%u %s given%s",
                       info->name, dsl_count_inputs(rc, info), p->open ? "at least " : "",
                       n, n == 1 ? "is" : "are",
                       p->syntax->chained ? " (the previous chain stage is one of them)" : "");
        return;
    }
}

const char *dsl_attr_kind_name(ir_attr_kind kind)
{
    switch (kind) {
    case IR_ATTR_INT:
        return "an int";
    case IR_ATTR_FLOAT:
        return "a float";
    case IR_ATTR_STRING:
        return "a string";
    case IR_ATTR_INTS:
        return "a list of ints";
    case IR_ATTR_FLOATS:
        return "a list of floats";
    }
    FR_UNREACHABLE();
    return "";
}

static const char *value_kind_name(const dsl_value *v)
{
    switch (v->kind) {
    case DSL_VAL_INT:
        return "an int";
    case DSL_VAL_FLOAT:
        return "a float";
    case DSL_VAL_STRING:
        return "a string";
    case DSL_VAL_NAME:
        return "a name";
    case DSL_VAL_CAPTURE:
        return "a capture";
    case DSL_VAL_LIST:
        return "a list";
    }
    FR_UNREACHABLE();
    return "";
}

/* A list of numbers as INTS or FLOATS. */
static bool convert_list(dsl_rule_check *rc, const dsl_value *v, ir_attr_kind want, ir_attr *out)
{
    out->kind = want;
    out->count = v->nitems;
    if (want == IR_ATTR_INTS)
        out->v.ints = ar_alloc_array(rc->rs->arena, v->nitems, sizeof(int64_t));
    else
        out->v.floats = ar_alloc_array(rc->rs->arena, v->nitems, sizeof(double));
    for (uint32_t i = 0; i < v->nitems; i++) {
        const dsl_value *item = v->items[i];
        bool fits = item->kind == DSL_VAL_INT || (item->kind == DSL_VAL_FLOAT && want == IR_ATTR_FLOATS);
        if (!fits) {
            dsl_rule_error(rc, item->src_offset, item->src_len, "%s cannot hold %s",
                           dsl_attr_kind_name(want), value_kind_name(item));
            return false;
        }
        if (want == IR_ATTR_INTS)
            out->v.ints[i] = item->i;
        else
            out->v.floats[i] = item->f;
    }
    return true;
}

bool dsl_convert_value(dsl_rule_check *rc, const dsl_value *v, ir_attr_kind want,
                       const char *attr, const char *op, ir_attr *out)
{
    out->name = attr;
    out->kind = want;
    out->src_offset = v->src_offset;
    bool ok;
    switch (want) {
    case IR_ATTR_INT:
        ok = v->kind == DSL_VAL_INT;
        out->v.i = v->i;
        break;
    case IR_ATTR_FLOAT:
        ok = v->kind == DSL_VAL_INT || v->kind == DSL_VAL_FLOAT;
        out->v.f = v->f;
        break;
    case IR_ATTR_STRING:
        ok = v->kind == DSL_VAL_STRING || v->kind == DSL_VAL_NAME;
        out->v.s = v->s;
        break;
    default:
        if (v->kind == DSL_VAL_LIST)
            return convert_list(rc, v, want, out);
        ok = false;
        break;
    }
    if (!ok)
        dsl_rule_error(rc, v->src_offset, v->src_len, "attribute '%s' of %s takes %s, not %s",
                       attr, op, dsl_attr_kind_name(want), value_kind_name(v));
    return ok;
}

static void suggest_attr(dsl_rule_check *rc, ir_op op, dsl_token name, char *hint, size_t size)
{
    dsl_suggest s;
    dsl_suggest_init(&s, dsl_tok_text(rc->src, name), name.len);
    const ir_op_info *info = ir_op_info_get(op);
    for (uint32_t i = 0; i < info->nattrs; i++)
        dsl_suggest_add(&s, info->attrs[i].name);
    dsl_suggest_hint(&s, hint, size);
}

/* `Op{name = value}`: the attribute must exist, with one kind, in every alternative. */
static void check_inline_attr(dsl_rule_check *rc, dsl_pattern *p, const dsl_attr_syntax *a,
                              ir_attr *out)
{
    const char *name = tok_str(rc, a->name);
    const ir_attr_schema *first = NULL;
    for (uint32_t i = 0; i < p->nops; i++) {
        const ir_attr_schema *schema = ir_op_attr_schema(p->ops[i], name);
        if (!schema) {
            char hint[128] = "";
            suggest_attr(rc, p->ops[i], a->name, hint, sizeof hint);
            dsl_rule_error(rc, a->name.offset, a->name.len, "%s has no attribute '%s'%s",
                           ir_op_name(p->ops[i]), name, hint);
            return;
        }
        if (first && schema->kind != first->kind) {
            dsl_rule_error(rc, a->name.offset, a->name.len,
                           "attribute '%s' is %s in %s but %s in %s", name,
                           dsl_attr_kind_name(first->kind), ir_op_name(p->ops[0]),
                           dsl_attr_kind_name(schema->kind), ir_op_name(p->ops[i]));
            return;
        }
        first = schema;
    }
    if (!first)
        return;
    if (a->value->kind == DSL_VAL_CAPTURE) {
        dsl_rule_error(rc, a->value->src_offset, a->value->src_len,
                       "an inline attribute compares with a literal; compare with a capture in "
                       "a where guard: attr(@n, %s) == ...", name);
        return;
    }
    dsl_convert_value(rc, a->value, first->kind, name, ir_op_name(p->ops[0]), out);
}

static void check_inline_attrs(dsl_rule_check *rc, dsl_pattern *p)
{
    uint32_t n = p->syntax->nattrs;
    if (!n)
        return;
    p->attrs = ar_alloc_array(rc->rs->arena, n, sizeof *p->attrs);
    for (uint32_t i = 0; i < n; i++) {
        const dsl_attr_syntax *a = p->syntax->attrs[i];
        for (uint32_t k = 0; k < i; k++) {
            const dsl_token other = p->syntax->attrs[k]->name;
            if (other.len == a->name.len &&
                memcmp(dsl_tok_text(rc->src, other), dsl_tok_text(rc->src, a->name), other.len) == 0)
                dsl_rule_error(rc, a->name.offset, a->name.len, "attribute '%s' is written twice",
                               tok_str(rc, a->name));
        }
        check_inline_attr(rc, p, a, &p->attrs[p->nattrs]);
        if (p->attrs[p->nattrs].name)
            p->nattrs++;
    }
}

/* `X > Relu` lists every operand Relu can have: the list is closed, as if written Relu(X). */
static void close_full_list(dsl_pattern *p)
{
    for (uint32_t i = 0; i < p->nops; i++) {
        uint8_t max = ir_op_info_get(p->ops[i])->max_inputs;
        if (max == IR_VARIADIC || p->noperands < max)
            return;
    }
    p->open = false;
}

/* ---- resolving the parsed trees ---- */

/* A bare name that a `let` bound: the slot takes the let's node. */
static bool resolve_let_reference(dsl_rule_check *rc, dsl_pattern **slot)
{
    dsl_pattern *p = *slot;
    dsl_pattern_syntax *syn = p->syntax;
    if (syn->bracketed || syn->nnames != 1)
        return false;
    dsl_capture *cap = find_capture(rc, dsl_tok_text(rc->src, syn->names[0]), syn->names[0].len);
    if (!cap || !cap->is_let)
        return false;
    const char *name = cap->name;
    if (syn->chained)
        dsl_rule_error(rc, p->src_offset, p->src_len,
                       "'%s' is a let binding and cannot be a chain stage", name);
    else if (syn->has_operand_list || syn->nattrs || syn->npreds || p->optional || syn->capture.len)
        dsl_rule_error(rc, p->src_offset, p->src_len,
                       "'%s' is a let binding: it stands for its whole pattern and takes no "
                       "operands, attributes, predicates, '?' or capture", name);
    cap->refs++;
    *slot = cap->node;
    return true;
}

static void resolve_tree(dsl_rule_check *rc, dsl_pattern **slot)
{
    dsl_pattern *p = *slot;
    dsl_pattern_syntax *syn = p->syntax;
    if (p->kind == DSL_PAT_ANY) {
        if (syn->prev_slot)
            dsl_rule_error(rc, p->src_offset, p->src_len,
                           "'^' stands for the previous stage of a chain, and there is none here");
        resolve_preds(rc, p);
        if (syn->capture.len)
            note_occurrence(rc, syn->capture, slot, false);
        if (syn->output_ref.len)
            vec_push(&rc->outputs, p);
        return;
    }
    if (resolve_let_reference(rc, slot))
        return;
    /* In source order: a chain's earlier stages first, then this op, then its other operands. */
    if (syn->chained)
        resolve_tree(rc, &p->operands[syn->chain_slot]);
    if (syn->capture.len)
        note_occurrence(rc, syn->capture, slot, true);
    resolve_ops(rc, p);
    resolve_preds(rc, p);
    for (uint32_t i = 0; i < p->noperands; i++)
        if (!syn->chained || i != syn->chain_slot)
            resolve_tree(rc, &p->operands[i]);
    if (p->optional && p->noperands == 0)
        dsl_rule_error(rc, p->src_offset, p->src_len,
                       "optional op '%s?' needs an operand to stand in for it when it is absent",
                       p->text);
    if (p->nops) {
        check_arity(rc, p);
        check_inline_attrs(rc, p);
        close_full_list(p);
    }
}

static bool names_op_or_set(dsl_rule_check *rc, dsl_token tok)
{
    ir_op op;
    const char *s = dsl_tok_text(rc->src, tok);
    return dsl_lookup_op(s, tok.len, &op) || sm_get(rc->sets, s, tok.len);
}

static void resolve_lets(dsl_rule_check *rc)
{
    const dsl_rule_syntax *syn = rc->rule->syntax;
    for (uint32_t i = 0; i < syn->nlets; i++) {
        dsl_let *let = syn->lets[i];
        resolve_tree(rc, &let->value);
        const char *name = tok_str(rc, let->name);
        dsl_capture *old = find_capture(rc, name, strlen(name));
        if (names_op_or_set(rc, let->name)) {
            dsl_rule_error(rc, let->name.offset, let->name.len,
                           "let '%s' would hide the op or set of that name", name);
        } else if (old) {
            dsl_rule_error(rc, let->name.offset, let->name.len, "'%s' is already bound", name);
            dsl_rule_note(rc, old->src_offset, old->src_len, "'%s' is bound here", name);
        } else {
            dsl_capture *cap = new_capture(rc, name, let->name.offset, let->name.len, true);
            cap->node = let->value;
        }
    }
}

/* ---- captures: one node per name ---- */

static void unify_captures(dsl_rule_check *rc)
{
    for (size_t i = 0; i < rc->occurrences.len; i++) {
        dsl_occurrence *o = &rc->occurrences.items[i];
        dsl_capture *cap = o->capture;
        if (!o->defines) {
            if (!cap->node)
                cap->node = o->node;
            continue;
        }
        if (cap->is_let) {
            dsl_rule_error(rc, o->tok.offset, o->tok.len,
                           "'%s' is a let binding; it cannot also name this op", cap->name);
        } else if (cap->node && cap->node->kind == DSL_PAT_OP && cap->node != o->node) {
            dsl_rule_error(rc, o->tok.offset, o->tok.len, "'@%s' already names another op",
                           cap->name);
            dsl_rule_note(rc, cap->node->src_offset, cap->node->src_len, "'@%s' names this op",
                          cap->name);
        } else {
            cap->node = o->node; /* an op takes over from value occurrences */
        }
    }
    for (size_t i = 0; i < rc->occurrences.len; i++) {
        dsl_occurrence *o = &rc->occurrences.items[i];
        dsl_capture *cap = o->capture;
        cap->refs++;
        if (o->defines || o->node == cap->node)
            continue;
        merge_preds(rc, cap->node, o->node, o->tok);
        *o->slot = cap->node;
        o->node->syntax->forward = cap->node; /* for let references to the repeated leaf */
    }
}

dsl_capture *dsl_output_ref(dsl_rule_check *rc, dsl_token ref, unsigned long *index)
{
    const char *text = tok_str(rc, ref), *dot = strchr(text, '.');
    uint32_t name_len = (uint32_t)(dot - text);
    const char *name = ar_strndup(rc->rs->arena, text + 1, name_len - 1);
    *index = strtoul(dot + 1, NULL, 10);
    dsl_capture *cap = dsl_rule_ref_name(rc, name, ref.offset, name_len,
                                         ar_strndup(rc->rs->arena, text, name_len));
    if (!cap)
        return NULL;
    const dsl_pattern *n = cap->node;
    if (n->kind != DSL_PAT_OP) {
        dsl_rule_error(rc, ref.offset, ref.len,
                       "'@%s' names a value, not an op: only an op's outputs can be named '@%s.N'",
                       name, name);
        return NULL;
    }
    if (n->optional) {
        dsl_rule_error(rc, ref.offset, ref.len,
                       "'%s?' is optional: when it is absent, '%s' has no output %lu", n->text,
                       text, *index);
        return NULL;
    }
    for (uint32_t k = 0; k < n->nops; k++)
        if (*index >= ir_op_info_get(n->ops[k])->max_outputs) {
            dsl_rule_error(rc, ref.offset, ref.len, "%s has %u output%s; '%s' names output %lu",
                           ir_op_name(n->ops[k]), ir_op_info_get(n->ops[k])->max_outputs,
                           ir_op_info_get(n->ops[k])->max_outputs == 1 ? "" : "s", text, *index);
            return NULL;
        }
    return cap;
}

/* `@f.1`: ties each output leaf to its op (an op of this pattern that always or may have that
 * output); a second leaf for the same output of the same op is the same node. */
static void resolve_outputs(dsl_rule_check *rc)
{
    for (size_t i = 0; i < rc->outputs.len; i++) {
        dsl_pattern *p = rc->outputs.items[i];
        dsl_token ref = p->syntax->output_ref;
        const char *text = tok_str(rc, ref);
        uint32_t name_len = (uint32_t)(strchr(text, '.') - text);
        unsigned long index;
        dsl_capture *cap = dsl_output_ref(rc, ref, &index);
        if (!cap)
            continue;
        const dsl_pattern *n = cap->node;
        if (p->preds.is_const) {
            dsl_rule_error(rc, ref.offset, ref.len,
                           "'%s' is an output of an op, which is never a constant", text);
            continue;
        }
        if (index == 0) {
            dsl_rule_error(rc, ref.offset, ref.len, "'%s' is output 0 of '%.*s': write '%.*s'",
                           text, (int)name_len, text, (int)name_len, text);
            continue;
        }
        p->output_of = n;
        p->output_index = (uint32_t)index;
        for (size_t j = 0; j < i; j++) {
            dsl_pattern *q = rc->outputs.items[j];
            if (q->output_of == n && q->output_index == p->output_index) {
                merge_preds(rc, q, p, ref);
                p->syntax->forward = q; /* one node per output, as for a repeated capture */
                break;
            }
        }
    }
}

static dsl_pattern *follow(dsl_pattern *p)
{
    while (p->syntax->forward)
        p = p->syntax->forward;
    return p;
}

static int compare_captures(const void *a, const void *b)
{
    const dsl_capture *x = *(dsl_capture *const *)a, *y = *(dsl_capture *const *)b;
    return x->src_offset < y->src_offset ? -1 : x->src_offset > y->src_offset;
}

/* ---- the DAG: operands first, no cycles, bounded depth ---- */

typedef struct {
    dsl_pattern *node;
    uint32_t next;
} frame;

enum { UNSEEN = 0, ON_PATH, DONE };

static bool finish_node(dsl_rule_check *rc, dsl_pattern *p)
{
    uint32_t depth = p->kind == DSL_PAT_OP ? 1 : 0;
    for (uint32_t i = 0; i < p->noperands; i++)
        if (p->operands[i]->syntax->depth + 1 > depth)
            depth = p->operands[i]->syntax->depth + 1;
    p->syntax->depth = depth;
    p->syntax->mark = DONE;
    p->id = (uint32_t)rc->nodes.len;
    vec_push(&rc->nodes, p);
    if (depth > DSL_MAX_DEPTH) {
        dsl_rule_error(rc, p->src_offset, p->src_len,
                       "pattern nests more than %d ops deep once its let bindings are substituted",
                       DSL_MAX_DEPTH);
        return false;
    }
    return true;
}

static bool visit(dsl_rule_check *rc, dsl_pattern *root)
{
    if (root->syntax->mark == DONE)
        return true;
    VEC(frame) stack = {0};
    vec_push(&stack, ((frame){root, 0}));
    root->syntax->mark = ON_PATH;
    bool ok = true;
    while (ok && stack.len) {
        frame *f = &stack.items[stack.len - 1];
        dsl_pattern *p = f->node;
        if (f->next == p->noperands && p->output_of &&
            p->output_of->syntax->mark != DONE) {
            /* `@f.1` after its op, so that operands still come before their users */
            dsl_pattern *of = (dsl_pattern *)p->output_of;
            if (of->syntax->mark == ON_PATH) {
                dsl_rule_error(rc, p->src_offset, p->src_len,
                               "'%s' is an output of an op that reads it: the pattern would be "
                               "a cycle",
                               p->text);
                ok = false;
                break;
            }
            of->syntax->mark = ON_PATH;
            vec_push(&stack, ((frame){of, 0}));
            continue;
        }
        if (f->next == p->noperands) {
            ok = finish_node(rc, p);
            stack.len--;
            continue;
        }
        dsl_pattern *child = p->operands[f->next] = follow(p->operands[f->next]);
        f->next++;
        child->syntax->users++;
        if (child->syntax->mark == ON_PATH) {
            const dsl_capture *cap = NULL;
            for (size_t i = 0; i < rc->captures.len && !cap; i++)
                if (rc->captures.items[i]->node == child)
                    cap = rc->captures.items[i];
            dsl_rule_error(rc, child->src_offset, child->src_len,
                           "'%s%s' names an op that contains it: the pattern would be a cycle",
                           cap && !cap->is_let ? "@" : "", cap ? cap->name : child->text);
            ok = false;
        } else if (child->syntax->mark == UNSEEN) {
            child->syntax->mark = ON_PATH;
            vec_push(&stack, ((frame){child, 0}));
        }
    }
    vec_free(&stack);
    return ok;
}

static bool order_nodes(dsl_rule_check *rc)
{
    dsl_rule_syntax *syn = rc->rule->syntax;
    for (uint32_t i = 0; i < syn->nroots; i++) {
        syn->roots[i] = follow(syn->roots[i]);
        if (!visit(rc, syn->roots[i]))
            return false;
    }
    for (size_t i = 0; i < rc->captures.len; i++)
        if (rc->captures.items[i]->node)
            rc->captures.items[i]->node = follow(rc->captures.items[i]->node);
    return true;
}

/* ---- roots ---- */

static uint32_t find_set(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Horizontal roots must be connected through shared nodes, else the rule would match every
 * combination of unrelated nodes. */
static void check_connected(dsl_rule_check *rc, dsl_pattern **roots, uint32_t nroots)
{
    uint32_t n = (uint32_t)rc->nodes.len;
    uint32_t *parent = malloc(n * sizeof *parent);
    FR_CHECK(parent != NULL);
    for (uint32_t i = 0; i < n; i++)
        parent[i] = i;
    for (uint32_t i = 0; i < n; i++) {
        const dsl_pattern *p = rc->nodes.items[i];
        for (uint32_t k = 0; k < p->noperands; k++)
            parent[find_set(parent, p->operands[k]->id)] = find_set(parent, p->id);
        if (p->output_of)
            parent[find_set(parent, p->output_of->id)] = find_set(parent, p->id);
    }
    for (uint32_t i = 1; i < nroots; i++)
        if (find_set(parent, roots[i]->id) != find_set(parent, roots[0]->id))
            dsl_rule_error(rc, roots[i]->src_offset, roots[i]->src_len,
                           "the roots of a horizontal pattern must share an input, but this one "
                           "shares nothing with the first");
    free(parent);
}

static void check_roots(dsl_rule_check *rc)
{
    dsl_rule_syntax *syn = rc->rule->syntax;
    for (uint32_t i = 0; i < syn->nroots; i++) {
        dsl_pattern *root = syn->roots[i];
        if (root->kind != DSL_PAT_OP)
            dsl_rule_error(rc, root->src_offset, root->src_len,
                           "a pattern's root must be an op, not a value");
        else if (root->users)
            dsl_rule_error(rc, root->src_offset, root->src_len,
                           "this root is also an operand inside the pattern");
    }
    if (rc->ok && syn->nroots > 1)
        check_connected(rc, syn->roots, syn->nroots);
}

static bool has_predicate(const dsl_pattern *p)
{
    return p->preds.is_const || p->preds.dtype != IR_DTYPE_UNKNOWN ||
           p->preds.layout != IR_LAYOUT_NONE || p->preds.rank >= 0;
}

/* A name written once and never referred to does nothing (a named leaf with predicates still
 * documents the operand, as in MatMul(@x, @w:const)). */
static void check_unused(dsl_rule_check *rc)
{
    for (size_t i = 0; i < rc->captures.len; i++) {
        const dsl_capture *cap = rc->captures.items[i];
        if (cap->is_let && cap->refs == 0)
            dsl_rule_error(rc, cap->src_offset, cap->src_len, "let binding '%s' is never used",
                           cap->name);
        else if (!cap->is_let && cap->refs == 1 && cap->node &&
                 !(cap->node->kind == DSL_PAT_ANY && has_predicate(cap->node)))
            dsl_rule_error(rc, cap->src_offset, cap->src_len,
                           "capture '@%s' is never used%s", cap->name,
                           cap->node->kind == DSL_PAT_ANY ? " (write '_' for any value)" : "");
    }
}

/* ---- the rule ---- */

static void finish_rule(dsl_rule_check *rc)
{
    dsl_rule *rule = rc->rule;
    ar_arena *arena = rc->rs->arena;
    dsl_rule_syntax *syn = rule->syntax;
    rule->roots = syn->roots;
    rule->nroots = syn->nroots;
    rule->nnodes = (uint32_t)rc->nodes.len;
    rule->nodes = ar_alloc_array(arena, rule->nnodes, sizeof *rule->nodes);
    if (rule->nnodes)
        memcpy(rule->nodes, rc->nodes.items, rule->nnodes * sizeof *rule->nodes);
    rule->nops = 0;
    for (uint32_t i = 0; i < rule->nnodes; i++) {
        rule->nodes[i]->users = rule->nodes[i]->syntax->users;
        rule->nops += rule->nodes[i]->kind == DSL_PAT_OP;
    }
    if (!rule->priority_explicit)
        rule->priority = rule->nops;
    if (rc->captures.len > 1)
        qsort(rc->captures.items, rc->captures.len, sizeof *rc->captures.items,
              compare_captures);
    rule->ncaptures = (uint32_t)rc->captures.len;
    rule->captures = ar_alloc_array(arena, rule->ncaptures, sizeof *rule->captures);
    for (uint32_t i = 0; i < rule->ncaptures; i++) {
        dsl_capture *cap = rc->captures.items[i];
        rule->captures[i] = cap;
        if (cap->node && !cap->node->capture)
            cap->node->capture = cap;
    }
}

void dsl_check_rule(dsl_rule_check *rc)
{
    dsl_rule *rule = rc->rule;
    rc->src = rule->src;
    rc->ok = true;
    if (rule->syntax->too_deep)
        return; /* reported while parsing */
    resolve_lets(rc);
    for (uint32_t i = 0; i < rule->syntax->nroots; i++)
        resolve_tree(rc, &rule->syntax->roots[i]);
    unify_captures(rc);
    resolve_outputs(rc);
    if (order_nodes(rc)) {
        finish_rule(rc);
        check_roots(rc);
        dsl_check_replacement(rc);
        if (rule->guard)
            dsl_check_guard(rc);
        dsl_check_actions(rc);
        check_unused(rc);
    }
    rule->checked = rc->ok;
    sm_free(&rc->names);
    vec_free(&rc->captures);
    vec_free(&rc->occurrences);
    vec_free(&rc->nodes);
    vec_free(&rc->outputs);
}
