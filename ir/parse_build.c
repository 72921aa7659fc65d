/* The builders the .graph grammar's actions call (ir/parse_internal.h; the driver is ir/parse.c).
 * They create the graph with the ir.h builders as lines are read; operand and output names are
 * resolved once the whole file is read (gp_resolve_names), since a value may be used before the
 * line that defines it. Every error is reported at the byte range it concerns. */
#include "ir/parse_internal.h"

#include "base/check.h"
#include "base/hex.h"
#include "grammar/graph_grammar.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "Did you mean" searches are capped per parse: each one scans every value name. */
enum { MAX_SUGGESTIONS = 20 };

/* Integers that a double (a literal constant's element) holds exactly. */
#define EXACT_INT_LIMIT ((int64_t)1 << 53)

static void *xcalloc(size_t size)
{
    void *p = calloc(1, size);
    FR_CHECK(p != NULL);
    return p;
}

/* ---- token text ---------------------------------------------------------------------------- */

static const char *tok_text(const gp_state *st, gp_token t)
{
    return st->src->text + t.offset;
}

static bool tok_is(const gp_state *st, gp_token t, const char *s)
{
    return t.len == strlen(s) && memcmp(tok_text(st, t), s, t.len) == 0;
}

static bool tok_quoted(const gp_state *st, gp_token t)
{
    return t.len > 0 && tok_text(st, t)[0] == '"';
}

/* The text a quoted token (`"..."`, starting at `s`, `len` bytes) stands for, with escapes
 * decoded, into out (room for len bytes), NUL-terminated. The lexer reported anything wrong
 * inside; what is left of a bad escape or a missing closing quote is kept as written. */
static void decode_quoted_into(const char *s, size_t len, char *out)
{
    size_t n = len - 1; /* without the opening quote */
    s++;
    if (n > 0 && s[n - 1] == '"')
        n--;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char e = s[i + 1];
            if (e == 'n' || e == 't' || e == '"' || e == '\\') {
                out[k++] = e == 'n' ? '\n' : e == 't' ? '\t' : e;
                i++;
                continue;
            }
            if (e == 'x' && i + 3 < n && hex_digit(s[i + 2]) >= 0 && hex_digit(s[i + 3]) >= 0) {
                out[k++] = (char)(hex_digit(s[i + 2]) * 16 + hex_digit(s[i + 3]));
                i += 3;
                continue;
            }
        }
        out[k++] = s[i];
    }
    out[k] = '\0';
}

/* The same in the graph's arena. */
static char *decode_quoted(gp_state *st, const char *s, size_t len)
{
    char *out = ar_alloc(st->g->arena, len);
    decode_quoted_into(s, len, out);
    return out;
}

/* A name token's text in the graph's arena: as written, or decoded when quoted. */
static char *name_of(gp_state *st, gp_token t)
{
    if (tok_quoted(st, t))
        return decode_quoted(st, tok_text(st, t), t.len);
    return ar_strndup(st->g->arena, tok_text(st, t), t.len);
}

/* A name as the text gives it, not copied into the graph: the token's own bytes, or, quoted, its
 * decoded text (up to a decoded NUL, as a C string ends) in a buffer of its own. */
typedef struct {
    const char *s;
    size_t len;
    char *owned; /* the decoded text, freed by name_done */
} gp_name;

static gp_name name_bytes(gp_state *st, gp_token t)
{
    if (!tok_quoted(st, t))
        return (gp_name){tok_text(st, t), t.len, NULL};
    char *out = malloc(t.len);
    FR_CHECK(out != NULL);
    decode_quoted_into(tok_text(st, t), t.len, out);
    return (gp_name){out, strlen(out), out};
}

static void name_done(gp_name *n)
{
    free(n->owned);
    *n = (gp_name){0};
}

/* The name of a value being defined; false (reported) when empty. */
static bool value_name(gp_state *st, gp_token t, gp_name *out)
{
    *out = name_bytes(st, t);
    if (out->len == 0) {
        dg_error(st->dg, st->src, t.offset, t.len, "a name cannot be empty");
        name_done(out);
        return false;
    }
    return true;
}

/* ---- numbers ------------------------------------------------------------------------------- */

/* An integer of up to 18 digits (no overflow) as strtoll reads it, without copying it out for
 * strtoll: most integers of a graph. False for anything else. */
static bool short_int(const char *s, uint32_t len, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    uint32_t i = neg;
    if (i == len || len - i > 18)
        return false;
    int64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

static bool parse_int(gp_state *st, gp_token t, int64_t *out)
{
    if (short_int(tok_text(st, t), t.len, out))
        return true;
    char buf[32];
    if (t.len < sizeof buf) {
        memcpy(buf, tok_text(st, t), t.len);
        buf[t.len] = '\0';
        errno = 0;
        long long v = strtoll(buf, NULL, 10);
        if (errno == 0) {
            *out = v;
            return true;
        }
    }
    dg_error(st->dg, st->src, t.offset, t.len, "integer out of range (the limit is 2^63-1)");
    return false;
}

/* A seed: an integer from 0 to 2^64-1. */
static bool parse_seed(gp_state *st, gp_token t, uint64_t *out)
{
    int64_t small;
    if (tok_text(st, t)[0] != '-' && short_int(tok_text(st, t), t.len, &small)) {
        *out = (uint64_t)small; /* up to 18 digits: what strtoull reads */
        return true;
    }
    char buf[32];
    if (t.len < sizeof buf && tok_text(st, t)[0] != '-') {
        memcpy(buf, tok_text(st, t), t.len);
        buf[t.len] = '\0';
        errno = 0;
        unsigned long long v = strtoull(buf, NULL, 10);
        if (errno == 0) {
            *out = v;
            return true;
        }
    }
    dg_error(st->dg, st->src, t.offset, t.len, "a seed is an integer from 0 to 2^64-1");
    return false;
}

/* A decimal number of at most 15 digits whose power of ten is within 10^+-22, the most common
 * kind (`0.5`, `-1e-3`): its digits and the power of ten are exact doubles, so one multiplication
 * or division, rounded once, gives the double nearest the number, as strtod does (Clinger's exact
 * case). False for anything else, which strtod reads. */
static bool exact_decimal(const char *s, uint32_t len, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    uint32_t i = 0;
    bool neg = s[0] == '-';
    i += neg;
    int64_t digits = 0;
    int ndigits = 0, scale = 0; /* the value is digits * 10^scale */
    bool point = false;
    for (; i < len; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (++ndigits > 15)
                return false;
            digits = digits * 10 + (c - '0');
            scale -= point;
        } else if (c == '.' && !point) {
            point = true;
        } else {
            break;
        }
    }
    if (ndigits == 0)
        return false;
    if (i < len) {
        if (s[i] != 'e' && s[i] != 'E')
            return false;
        i++;
        bool eneg = i < len && s[i] == '-';
        i += i < len && (s[i] == '-' || s[i] == '+');
        int e = 0, edigits = 0;
        for (; i < len && s[i] >= '0' && s[i] <= '9' && edigits < 4; i++, edigits++)
            e = e * 10 + (s[i] - '0');
        if (edigits == 0 || i < len)
            return false;
        scale += eneg ? -e : e;
    }
    if (scale < -22 || scale > 22)
        return false;
    double v = (double)digits;
    v = scale < 0 ? v / pow10[-scale] : v * pow10[scale];
    *out = neg ? -v : v;
    return true;
}

static bool parse_float(gp_state *st, gp_token t, double *out)
{
    if (t.len > 0 && exact_decimal(tok_text(st, t), t.len, out))
        return true;
    char small[64]; /* most numbers; a longer one (many digits) gets a buffer of its own */
    char *buf = t.len < sizeof small ? small : malloc((size_t)t.len + 1);
    FR_CHECK(buf != NULL);
    memcpy(buf, tok_text(st, t), t.len);
    buf[t.len] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    bool overflow = errno == ERANGE && isinf(v);
    if (buf != small)
        free(buf);
    if (overflow) {
        dg_error(st->dg, st->src, t.offset, t.len, "number out of range");
        return false;
    }
    *out = v;
    return true;
}

/* A literal number (INT or FLOAT) as a double. Integers are read as text too, so that `-0` stays
 * negative zero and integers beyond 64 bits become the nearest double. */
static bool lit_number(gp_state *st, const gp_lit *lit, double *out)
{
    return parse_float(st, lit->tok, out);
}

/* ---- syntax pieces ------------------------------------------------------------------------- */

/* list = the list in its spare slot (emptied, with its room), or a fresh one. */
#define TAKE_SPARE(slot, list)                                                                     \
    do {                                                                                           \
        (list) = (slot) ? (slot) : xcalloc(sizeof *(list));                                        \
        (slot) = NULL;                                                                             \
    } while (0)
/* Gives an emptied list back to its spare slot, keeping its room; a second one of a kind is
 * freed. */
#define GIVE_SPARE(slot, list)                                                                     \
    do {                                                                                           \
        (list)->items.len = 0;                                                                     \
        if (!(slot)) {                                                                             \
            (slot) = (list);                                                                       \
        } else {                                                                                   \
            vec_free(&(list)->items);                                                              \
            free(list);                                                                            \
        }                                                                                          \
    } while (0)
/* Frees a spare slot's list (NULL: none). */
#define DROP_SPARE(slot)                                                                           \
    do {                                                                                           \
        if (slot)                                                                                  \
            vec_free(&(slot)->items);                                                              \
        free(slot);                                                                                \
    } while (0)


gp_results *gp_results_push(gp_state *st, gp_results *list, const gp_result *r)
{
    if (!list)
        TAKE_SPARE(st->spares.results, list);
    vec_push(&list->items, *r);
    return list;
}

gp_names *gp_names_push(gp_state *st, gp_names *list, gp_token name)
{
    if (!list)
        TAKE_SPARE(st->spares.names, list);
    vec_push(&list->items, name);
    return list;
}

gp_attrs *gp_attrs_push(gp_state *st, gp_attrs *list, gp_token name, gp_lit *value)
{
    if (!list)
        TAKE_SPARE(st->spares.attrs, list);
    gp_attr_syntax a = {name, value};
    vec_push(&list->items, a);
    return list;
}

gp_lit *gp_lit_new(gp_state *st, gp_lit_kind kind, gp_token tok)
{
    gp_lit *lit = st->spares.lits.len ? st->spares.lits.items[--st->spares.lits.len]
                                      : xcalloc(sizeof *lit);
    lit->kind = kind;
    lit->tok = tok;
    return lit;
}

gp_lit *gp_lit_push(gp_lit *list, gp_lit *item)
{
    vec_push(&list->items, item);
    return list;
}

void gp_results_free(gp_state *st, gp_results *list)
{
    if (list)
        GIVE_SPARE(st->spares.results, list);
}

void gp_names_free(gp_state *st, gp_names *list)
{
    if (list)
        GIVE_SPARE(st->spares.names, list);
}

void gp_attrs_free(gp_state *st, gp_attrs *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->items.len; i++)
        gp_lit_free(st, list->items.items[i].value);
    GIVE_SPARE(st->spares.attrs, list);
}

/* Recursion is bounded by the parser's stack: lists cannot nest deeper than it. Up to MAX_SPARE
 * literals are kept. */
void gp_lit_free(gp_state *st, gp_lit *lit)
{
    enum { MAX_SPARE = 256 };
    if (!lit)
        return;
    for (size_t i = 0; i < lit->items.len; i++)
        gp_lit_free(st, lit->items.items[i]);
    lit->items.len = 0;
    if (st->spares.lits.len < MAX_SPARE) {
        vec_push(&st->spares.lits, lit);
        return;
    }
    vec_free(&lit->items);
    free(lit);
}

void gp_spares_free(gp_state *st)
{
    gp_spares *s = &st->spares;
    DROP_SPARE(s->results);
    DROP_SPARE(s->names);
    DROP_SPARE(s->attrs);
    for (size_t i = 0; i < s->lits.len; i++) {
        vec_free(&s->lits.items[i]->items);
        free(s->lits.items[i]);
    }
    vec_free(&s->lits);
    *s = (gp_spares){0};
}

gp_result gp_result_make(gp_token name, const gp_type *type)
{
    gp_result r = {.name = name, .typed = type != NULL};
    if (type)
        r.type = *type;
    return r;
}

/* ---- types --------------------------------------------------------------------------------- */

gp_type gp_dims_empty(void)
{
    gp_type t = {.ok = true};
    t.type.rank = 0;
    return t;
}

static bool parse_dim(gp_state *st, gp_token t, int64_t *dim)
{
    char c = tok_text(st, t)[0];
    if (c == '?') {
        *dim = IR_DIM_UNKNOWN;
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        int64_t v;
        if (!parse_int(st, t, &v))
            return false;
        if (v < 0 || v > IR_MAX_NUMEL) {
            dg_error(st->dg, st->src, t.offset, t.len,
                     v < 0 ? "a dim is a size (0 or more), a name, or '?'"
                           : "dim too large (the limit is 2^40)");
            return false;
        }
        *dim = v;
        return true;
    }
    gp_name name = name_bytes(st, t);
    bool named = name.len > 0;
    if (!named)
        dg_error(st->dg, st->src, t.offset, t.len, "a dim name cannot be empty");
    else
        *dim = ir_symbol(st->g, name.s, name.len);
    name_done(&name);
    return named;
}

gp_dim gp_dim_atom(gp_state *st, gp_token t)
{
    gp_dim d = {.dim = IR_DIM_UNKNOWN, .tok = t};
    d.ok = parse_dim(st, t, &d.dim);
    return d;
}

static gp_token span(gp_token a, gp_token b)
{
    return (gp_token){a.offset, b.offset + b.len - a.offset};
}

gp_dim gp_dim_binop(gp_state *st, gp_dim a, char op, gp_dim b)
{
    gp_dim d = {.dim = IR_DIM_UNKNOWN, .tok = span(a.tok, b.tok), .ok = a.ok && b.ok};
    if (!d.ok)
        return d;
    if (a.dim == IR_DIM_UNKNOWN || b.dim == IR_DIM_UNKNOWN) {
        dg_error(st->dg, st->src, d.tok.offset, d.tok.len,
                 "'?' cannot be part of a dim expression");
        d.ok = false;
        return d;
    }
    d.dim = op == '+'   ? ir_dim_sum(st->g, a.dim, b.dim)
            : op == '-' ? ir_dim_difference(st->g, a.dim, b.dim)
                        : ir_dim_product(st->g, a.dim, b.dim);
    if (d.dim == IR_DIM_UNKNOWN) {
        dg_error(st->dg, st->src, d.tok.offset, d.tok.len,
                 "this dim expression is not a size (negative for every size of its names, or "
                 "longer than %d terms of %d names)",
                 IR_DIMX_MAX_TERMS, IR_DIMX_MAX_VARS);
        d.ok = false;
    } else if (d.dim > IR_MAX_NUMEL) {
        dg_error(st->dg, st->src, d.tok.offset, d.tok.len, "dim too large (the limit is 2^40)");
        d.ok = false;
    }
    return d;
}

gp_dim gp_dim_paren(gp_dim a, gp_token open, gp_token close)
{
    a.tok = span(open, close);
    return a;
}

void gp_dims_push(gp_state *st, gp_type *dims, gp_dim dim)
{
    if (dims->ndims < UINT32_MAX)
        dims->ndims++;
    if (dims->ndims == IR_MAX_RANK + 1) {
        dg_error(st->dg, st->src, dim.tok.offset, dim.tok.len,
                 "too many dims (a type has at most %d)", IR_MAX_RANK);
        dims->ok = false;
    }
    if (dims->ndims > IR_MAX_RANK)
        return;
    if (!dim.ok)
        dims->ok = false;
    dims->type.dims[dims->type.rank++] = dim.ok ? dim.dim : IR_DIM_UNKNOWN;
}

static int layout_rank(ir_layout layout)
{
    switch (layout) {
    case IR_LAYOUT_NC:
        return 2;
    case IR_LAYOUT_NCW:
    case IR_LAYOUT_NWC:
        return 3;
    case IR_LAYOUT_NCHW:
    case IR_LAYOUT_NHWC:
        return 4;
    case IR_LAYOUT_NCDHW:
    case IR_LAYOUT_NDHWC:
        return 5;
    default:
        return -1;
    }
}

/* The static dims of t multiply to at most IR_MAX_NUMEL (symbols and `?` count as 1). */
static bool size_possible(const ir_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i];
        if (!ir_dim_is_static(d) || d == 0)
            continue;
        if (n > IR_MAX_NUMEL / d)
            return false;
        n *= d;
    }
    return true;
}

static void check_layout(gp_state *st, gp_type *t, gp_token layout)
{
    ir_layout l;
    if (!ir_layout_parse(tok_text(st, layout), layout.len, &l)) {
        dg_error(st->dg, st->src, layout.offset, layout.len,
                 "unknown layout '%.*s' (known: NCHW, NHWC, NCW, NWC, NCDHW, NDHWC, NC)",
                 (int)layout.len, tok_text(st, layout));
        t->ok = false;
        return;
    }
    if (t->type.rank >= 0 && t->ok && layout_rank(l) != t->type.rank) {
        dg_error(st->dg, st->src, layout.offset, layout.len, "layout %s needs %d dims, not %d",
                 ir_layout_name(l), layout_rank(l), t->type.rank);
        t->ok = false;
        return;
    }
    t->type.layout = (uint8_t)l;
}

gp_type gp_type_make(gp_state *st, gp_token dtype, const gp_type *dims, gp_token end,
                     gp_token layout)
{
    gp_type t = {.ok = true};
    t.type.rank = -1;
    if (dims)
        t = *dims;
    gp_token last = layout.len ? layout : end;
    t.tok = (gp_token){dtype.offset, last.offset + last.len - dtype.offset};
    ir_dtype dt;
    if (ir_dtype_parse(tok_text(st, dtype), dtype.len, &dt)) {
        t.type.dtype = dt;
    } else {
        dg_error(st->dg, st->src, dtype.offset, dtype.len,
                 "unknown element type '%.*s' (known: f32, f16, bf16, i8, u8, i32, i64, bool)",
                 (int)dtype.len, tok_text(st, dtype));
        t.ok = false;
    }
    if (layout.len)
        check_layout(st, &t, layout);
    if (t.ok && !size_possible(&t.type)) {
        dg_error(st->dg, st->src, t.tok.offset, t.tok.len,
                 "too many elements: the dims multiply to more than 2^40");
        t.ok = false;
    }
    return t;
}

/* ---- defining values ----------------------------------------------------------------------- */

/* Where a name was first defined: by a value, or by a line that had errors. */
static bool first_definition(gp_state *st, const gp_name *name, uint32_t *offset, uint32_t *len)
{
    ir_value *v = ir_find_value_n(st->g, name->s, name->len);
    if (v) {
        *offset = v->src_offset;
        *len = ir_value_src_len(st->src, v);
        return true;
    }
    gp_token *bad = sm_get(&st->poisoned, name->s, name->len);
    if (bad) {
        *offset = bad->offset;
        *len = bad->len;
        return true;
    }
    return false;
}

/* Reports a second definition of name; true when the name is new. */
static bool check_new_name(gp_state *st, const gp_name *name, gp_token t)
{
    uint32_t offset, len;
    if (!first_definition(st, name, &offset, &len))
        return true;
    int n = (int)name->len;
    dg_error(st->dg, st->src, t.offset, t.len, "duplicate definition of '%.*s'", n, name->s);
    dg_note(st->dg, st->src, offset, len, "'%.*s' is first defined here", n, name->s);
    return false;
}

/* Whether a definition may leave the check that its name is new to the graph's own probe (one
 * lookup per definition): when no line with errors reserved a name, the graph knows every name
 * defined so far. */
static bool defines_once(const gp_state *st)
{
    return st->poisoned.len == 0;
}

/* Remembers a name that a line with errors meant to define, so that its uses are not reported as
 * undefined as well. */
static void poison(gp_state *st, const gp_name *name, gp_token t)
{
    uint32_t offset, len;
    if (first_definition(st, name, &offset, &len))
        return;
    gp_token *where = ar_alloc(st->g->arena, sizeof *where);
    *where = t;
    sm_put(&st->poisoned, ar_strndup(st->g->arena, name->s, name->len), name->len, where);
}

uint32_t ir_value_src_len(const dg_source *src, const ir_value *v)
{
    if (!src || v->src_offset == 0 || v->src_offset >= src->len)
        return 0;
    const char *text = src->text;
    size_t end = v->src_offset, len = src->len;
    if (text[end] == '"') { /* lex_string: up to the closing quote, or the line's end */
        for (end++; end < len && text[end] != '\n'; end++) {
            if (text[end] == '"')
                return (uint32_t)(end + 1 - v->src_offset);
            /* an escaped quote or backslash; the other escapes hold neither */
            if (text[end] == '\\' && end + 1 < len &&
                (text[end + 1] == '"' || text[end + 1] == '\\'))
                end++;
        }
        return (uint32_t)(end - v->src_offset);
    }
    for (; end < len; end++) { /* name_char: [A-Za-z0-9_./-] */
        char c = text[end];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '/' || c == '-'))
            break;
    }
    return (uint32_t)(end - v->src_offset);
}

static void set_location(ir_value *v, gp_token name)
{
    v->src_offset = name.offset;
}

void gp_graph_header(gp_state *st, gp_token name, gp_token brace)
{
    st->g->name = name_of(st, name);
    st->body_open = brace.offset;
    st->has_body = true;
}

void gp_input(gp_state *st, gp_token name, const gp_type *type)
{
    gp_name n;
    if (!value_name(st, name, &n))
        return;
    ir_value *v = NULL;
    if (defines_once(st) || check_new_name(st, &n, name)) {
        v = ir_add_input_n(st->g, n.s, n.len, &type->type);
        if (!v) /* defined before: ir_add_input_n's probe found it */
            check_new_name(st, &n, name);
    }
    name_done(&n);
    if (!v)
        return;
    set_location(v, name);
    v->type_declared = true;
}

/* Defines the constant a `const NAME : TYPE =` line names; NULL when its name is unusable. The
 * caller fills in the constant, checking the type only when *usable. */
static ir_const *define_const(gp_state *st, const gp_result *head, ir_const_kind kind,
                              bool *usable)
{
    gp_name n;
    if (!value_name(st, head->name, &n))
        return NULL;
    ir_const *c = NULL;
    ir_value *v = NULL;
    if (defines_once(st) || check_new_name(st, &n, head->name)) {
        c = ir_const_new(st->g, kind);
        v = ir_add_const_n(st->g, n.s, n.len, &head->type.type, c);
        if (!v) /* defined before: ir_add_const_n's probe found it */
            check_new_name(st, &n, head->name);
    }
    name_done(&n);
    if (!v)
        return NULL;
    *usable = head->type.ok;
    if (head->type.ok && !ir_type_is_static(&head->type.type)) {
        dg_error(st->dg, st->src, head->type.tok.offset, head->type.tok.len,
                 "a constant needs a static shape (sizes, not names or '?')");
        *usable = false;
    }
    set_location(v, head->name);
    v->type_declared = true;
    return c;
}

/* ---- literal constants --------------------------------------------------------------------- */

/* The values an element of dtype dt can take exactly, for integer and bool dtypes. */
static bool integer_range(ir_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case IR_BOOL:
        *lo = 0, *hi = 1;
        return true;
    case IR_I8:
        *lo = -128, *hi = 127;
        return true;
    case IR_U8:
        *lo = 0, *hi = 255;
        return true;
    case IR_I32:
        *lo = -2147483648.0, *hi = 2147483647.0;
        return true;
    case IR_I64:
        *lo = -(double)EXACT_INT_LIMIT, *hi = (double)EXACT_INT_LIMIT;
        return true;
    case IR_I16:
        *lo = -32768, *hi = 32767;
        return true;
    case IR_U16:
        *lo = 0, *hi = 65535;
        return true;
    case IR_U32:
        *lo = 0, *hi = 4294967295.0;
        return true;
    case IR_U64:
        *lo = 0, *hi = (double)EXACT_INT_LIMIT;
        return true;
    default:
        return false;
    }
}

/* One element of a literal constant of dtype dt. */
static bool literal_element(gp_state *st, const gp_lit *lit, ir_dtype dt, double *out)
{
    if (lit->kind == GP_LIT_LIST) {
        dg_error(st->dg, st->src, lit->tok.offset, lit->tok.len,
                 "nested lists are not allowed: list the elements flat, in row-major order");
        return false;
    }
    if (lit->kind == GP_LIT_STRING) {
        dg_error(st->dg, st->src, lit->tok.offset, lit->tok.len, "a constant holds numbers");
        return false;
    }
    if (lit->kind == GP_LIT_INT && dt == IR_I64) {
        int64_t i;
        if (!parse_int(st, lit->tok, &i))
            return false;
        if (i > EXACT_INT_LIMIT || i < -EXACT_INT_LIMIT) {
            dg_error(st->dg, st->src, lit->tok.offset, lit->tok.len,
                     "a literal i64 value must lie within +-2^53 (use file() for larger values)");
            return false;
        }
    }
    double v;
    if (!lit_number(st, lit, &v))
        return false;
    double lo, hi;
    if (integer_range(dt, &lo, &hi) && (!(v >= lo && v <= hi) || v != floor(v))) {
        dg_error(st->dg, st->src, lit->tok.offset, lit->tok.len, "%.*s is not a valid %s value",
                 (int)lit->tok.len, tok_text(st, lit->tok), ir_dtype_name(dt));
        return false;
    }
    *out = v;
    return true;
}

void gp_const_literal(gp_state *st, const gp_result *head, gp_lit *value)
{
    bool usable = false;
    ir_const *c = define_const(st, head, IR_CONST_LITERAL, &usable);
    if (!c || !usable) {
        gp_lit_free(st, value);
        return;
    }
    const ir_type *t = &head->type.type;
    bool list = value->kind == GP_LIT_LIST;
    size_t count = list ? value->items.len : 1;
    c->literal = ar_alloc_array(st->g->arena, count, sizeof *c->literal);
    c->literal_count = count;
    bool ok = true;
    for (size_t i = 0; i < count; i++)
        ok &= literal_element(st, list ? value->items.items[i] : value, t->dtype, &c->literal[i]);
    int64_t numel = 0;
    if (ok && ir_type_numel(t, &numel) && count != (size_t)numel && count != 1)
        dg_error(st->dg, st->src, value->tok.offset, value->tok.len,
                 "%zu values for a constant of %lld elements (give all of them, or one for all)",
                 count, (long long)numel);
    gp_lit_free(st, value);
}

/* ---- random and file constants ------------------------------------------------------------- */

/* Applies one `seed=`, `lo=` or `hi=` argument of random(...). */
static void random_arg(gp_state *st, ir_const *c, const char *name, const gp_attr_syntax *a)
{
    const gp_lit *v = a->value;
    bool is_seed = strcmp(name, "seed") == 0;
    if (is_seed && v->kind == GP_LIT_INT) {
        parse_seed(st, v->tok, &c->seed);
        return;
    }
    if (!is_seed && (v->kind == GP_LIT_INT || v->kind == GP_LIT_FLOAT)) {
        double x;
        if (!lit_number(st, v, &x))
            return;
        if (!isfinite(x))
            dg_error(st->dg, st->src, v->tok.offset, v->tok.len, "%s must be finite", name);
        *(strcmp(name, "lo") == 0 ? &c->lo : &c->hi) = x;
        return;
    }
    dg_error(st->dg, st->src, v->tok.offset, v->tok.len, "%s takes %s", name,
             is_seed ? "an integer" : "a number");
}

void gp_const_random(gp_state *st, const gp_result *head, gp_token kw, gp_attrs *args)
{
    static const char *const arg_names[] = {"seed", "lo", "hi"};
    bool usable = false, given[3] = {false, false, false};
    ir_const *c = define_const(st, head, IR_CONST_RANDOM, &usable);
    size_t n = args ? args->items.len : 0;
    for (size_t i = 0; c && i < n; i++) {
        const gp_attr_syntax *a = &args->items.items[i];
        gp_name name = name_bytes(st, a->name); /* compared, not kept */
        size_t k = 0;
        while (k < 3 &&
               !(strlen(arg_names[k]) == name.len && memcmp(name.s, arg_names[k], name.len) == 0))
            k++;
        if (k < 3 && !given[k]) {
            given[k] = true;
            random_arg(st, c, arg_names[k], a);
        } else {
            dg_error(st->dg, st->src, a->name.offset, a->name.len,
                     k < 3 ? "'%.*s' is given twice" : "random() takes seed, lo and hi, not '%.*s'",
                     (int)name.len, name.s);
        }
        name_done(&name);
    }
    if (c && !(c->lo < c->hi))
        dg_error(st->dg, st->src, kw.offset, kw.len, "random() needs lo < hi");
    gp_attrs_free(st, args);
}

void gp_const_placeholder(gp_state *st, const gp_result *head, gp_token name)
{
    if (name.len != 1 || st->src->text[name.offset] != '_')
        dg_error(st->dg, st->src, name.offset, name.len,
                 "expected a constant's value: a literal, random(...) or file(...)");
    else if (!st->placeholders)
        dg_error(st->dg, st->src, name.offset, name.len,
                 "'_' (a constant whose value is not given) is allowed only in a rule test's "
                 "expected graph");
    /* The value is never compared: seeded random data keeps the graph an ordinary one. After an
     * error the constant is still defined, so that its uses are not reported as undefined. */
    gp_const_random(st, head, name, NULL);
}

void gp_const_file(gp_state *st, const gp_result *head, gp_token path, gp_token key)
{
    bool usable = false;
    ir_const *c = define_const(st, head, IR_CONST_FILE, &usable);
    if (!c)
        return;
    c->file = name_of(st, path);
    c->key = name_of(st, key);
    if (c->file[0] == '\0')
        dg_error(st->dg, st->src, path.offset, path.len, "the file name cannot be empty");
}

/* ---- nodes --------------------------------------------------------------------------------- */

/* An op by its name as written. The ops a file names are few: each is looked up in the catalog
 * once and kept in st->ops (key: the first token's bytes, value: op + 1), where the lines after
 * find it by one probe into a small table; before that, a comparison with the token it was last
 * found for in st->op_cache (no hash of the name). */
static bool lookup_op(gp_state *st, gp_token t, ir_op *op)
{
    const char *text = tok_text(st, t);
    /* the slot of the op names found before: by the first and last bytes and the length */
    size_t slot =
        t.len ? ((unsigned char)text[0] * 31u + (unsigned char)text[t.len - 1] * 7u + t.len) % 32
              : 0;
    gp_token last = st->op_cache[slot].tok;
    if (last.len == t.len && t.len && memcmp(tok_text(st, last), text, t.len) == 0) {
        *op = st->op_cache[slot].op;
        return true;
    }
    uintptr_t known = (uintptr_t)sm_get(&st->ops, text, t.len);
    if (known) {
        *op = (ir_op)(known - 1);
        st->op_cache[slot].tok = t;
        st->op_cache[slot].op = *op;
        return true;
    }
    if (ir_op_lookup(text, t.len, op)) {
        sm_put(&st->ops, text, t.len, (void *)((uintptr_t)*op + 1));
        st->op_cache[slot].tok = t;
        st->op_cache[slot].op = *op;
        return true;
    }
    char *name = name_of(st, t);
    ir_suggester s;
    ir_suggest_init(&s, name);
    for (unsigned i = 0; i < IR_OP_COUNT; i++)
        ir_suggest_offer(&s, ir_op_name((ir_op)i));
    const char *best = ir_suggest_result(&s);
    if (best)
        dg_error(st->dg, st->src, t.offset, t.len, "unknown op '%s'; did you mean '%s'?", name,
                 best);
    else
        dg_error(st->dg, st->src, t.offset, t.len, "unknown op '%s'", name);
    return false;
}

/* The names a node line defines, checked to be new; false (reported) when one is not. A name
 * that is unusable is left empty (s NULL). */
static bool result_names(gp_state *st, const gp_results *results, gp_name *names, bool defer_new)
{
    bool ok = true;
    sm_map line = {0}; /* names defined earlier in this line (a line of one defines no other) */
    for (size_t i = 0; i < results->items.len; i++) {
        gp_token t = results->items.items[i].name;
        if (!value_name(st, t, &names[i])) {
            ok = false;
        } else if (i > 0 && sm_get(&line, names[i].s, names[i].len)) {
            dg_error(st->dg, st->src, t.offset, t.len, "'%.*s' is named twice in this line",
                     (int)names[i].len, names[i].s);
            ok = false;
            name_done(&names[i]);
        } else if (!defer_new && !check_new_name(st, &names[i], t)) {
            ok = false;
            name_done(&names[i]);
        } else if (results->items.len > 1) {
            sm_put(&line, names[i].s, names[i].len, (void *)&names[i]);
        }
    }
    sm_free(&line);
    return ok;
}

enum { SHARED_INTS_MAX = 8 }; /* the longest INTS list shared (ints_shared) */

/* A short INTS list's elements, parsed into a buffer and then shared with an equal list built
 * before (st->ints_shared), or copied to the graph's arena and remembered. */
static bool shared_ints(gp_state *st, const gp_lit *lit, ir_attr *out)
{
    int64_t buf[SHARED_INTS_MAX];
    uint32_t n = out->count;
    uint64_t h = n;
    for (uint32_t i = 0; i < n; i++) {
        if (!parse_int(st, lit->items.items[i]->tok, &buf[i]))
            return false;
        h = (h ^ (uint64_t)buf[i]) * 0x100000001b3u;
    }
    size_t slot = (size_t)(h >> 58); /* 64 slots */
    const int64_t *seen = st->ints_shared[slot].ints;
    if (seen && st->ints_shared[slot].count == n && memcmp(seen, buf, n * sizeof *buf) == 0) {
        out->v.ints = (int64_t *)seen;
        return true;
    }
    out->v.ints = ar_alloc_array(st->g->arena, n, sizeof *out->v.ints);
    memcpy(out->v.ints, buf, n * sizeof *buf);
    st->ints_shared[slot].ints = out->v.ints;
    st->ints_shared[slot].count = n;
    return true;
}

/* A list attribute: INTS unless an element is a float or the schema wants FLOATS. */
static bool list_attr(gp_state *st, const ir_attr_schema *schema, const gp_lit *lit, ir_attr *out)
{
    bool floats = schema && schema->kind == IR_ATTR_FLOATS;
    for (size_t i = 0; i < lit->items.len; i++) {
        const gp_lit *item = lit->items.items[i];
        if (item->kind == GP_LIT_LIST || item->kind == GP_LIT_STRING) {
            dg_error(st->dg, st->src, item->tok.offset, item->tok.len,
                     item->kind == GP_LIT_LIST ? "nested lists are not allowed in attributes"
                                               : "attribute lists hold numbers, not strings");
            return false;
        }
        floats |= item->kind == GP_LIT_FLOAT;
    }
    size_t n = lit->items.len;
    out->kind = floats ? IR_ATTR_FLOATS : IR_ATTR_INTS;
    out->count = (uint32_t)n;
    if (!floats && n > 0 && n <= SHARED_INTS_MAX)
        return shared_ints(st, lit, out);
    if (floats)
        out->v.floats = ar_alloc_array(st->g->arena, n, sizeof(double));
    else
        out->v.ints = ar_alloc_array(st->g->arena, n, sizeof(int64_t));
    for (size_t i = 0; i < n; i++) {
        const gp_lit *item = lit->items.items[i];
        bool ok = floats ? lit_number(st, item, &out->v.floats[i])
                         : parse_int(st, item->tok, &out->v.ints[i]);
        if (!ok)
            return false;
    }
    return true;
}

/* An attribute value from its literal. The schema decides what the text cannot: an integer for a
 * float attribute is a float, and `[]` is a list of the schema's kind. A kind that disagrees with
 * the schema is left for ir_validate to report. */
static bool attr_from_literal(gp_state *st, const ir_attr_schema *schema, const gp_lit *lit,
                              ir_attr *out)
{
    switch (lit->kind) {
    case GP_LIT_INT:
        if (schema && schema->kind == IR_ATTR_FLOAT) {
            out->kind = IR_ATTR_FLOAT;
            return lit_number(st, lit, &out->v.f);
        }
        out->kind = IR_ATTR_INT;
        return parse_int(st, lit->tok, &out->v.i);
    case GP_LIT_FLOAT:
        out->kind = IR_ATTR_FLOAT;
        return parse_float(st, lit->tok, &out->v.f);
    case GP_LIT_STRING:
        out->kind = IR_ATTR_STRING;
        out->v.s = name_of(st, lit->tok);
        return true;
    case GP_LIT_LIST:
        return list_attr(st, schema, lit, out);
    }
    FR_UNREACHABLE();
    return false;
}

/* An attribute's name: the catalog's own string when the op's schema has it (*schema), else a
 * copy in the graph's arena (reported by validation as unknown). */
static const char *schema_name(gp_state *st, ir_op op, gp_token t, const ir_attr_schema **schema)
{
    if (!tok_quoted(st, t)) {
        const ir_op_info *info = ir_op_info_get(op);
        for (uint32_t i = 0; i < info->nattrs; i++) {
            const char *known = info->attrs[i].name;
            if (strlen(known) == t.len && memcmp(known, tok_text(st, t), t.len) == 0) {
                *schema = &info->attrs[i];
                return known;
            }
        }
    }
    char *name = name_of(st, t);
    *schema = ir_op_attr_schema(op, name);
    return name;
}

/* The node's attributes, built as one array (ir_set_attr would copy the array for each one). */
static void set_attrs(gp_state *st, ir_node *n, const gp_attrs *attrs)
{
    size_t count = attrs ? attrs->items.len : 0;
    if (count == 0 || count > UINT32_MAX)
        return;
    n->attrs = ar_alloc_array(st->g->arena, count, sizeof *n->attrs);
    /* repeats: the few names of a line are compared with the ones before (a known name is the
     * catalog's string: compared by address first); a long list is looked up in a map */
    enum { FEW = 32 };
    const char *few[FEW];
    const char **names = count <= FEW ? few : NULL;
    sm_map seen = {0}; /* (a long list) attribute name -> its syntax */
    for (size_t i = 0; i < count; i++) {
        const gp_attr_syntax *a = &attrs->items.items[i];
        const ir_attr_schema *schema = NULL;
        const char *name = schema_name(st, n->op, a->name, &schema);
        const gp_attr_syntax *first = NULL;
        if (names) {
            for (size_t j = 0; j < i && !first; j++)
                if (names[j] == name || strcmp(names[j], name) == 0)
                    first = &attrs->items.items[j];
            names[i] = name;
        } else {
            first = sm_get(&seen, name, strlen(name));
        }
        if (first) {
            dg_error(st->dg, st->src, a->name.offset, a->name.len,
                     "attribute '%s' is given twice", name);
            dg_note(st->dg, st->src, first->name.offset, first->name.len, "first given here");
            continue;
        }
        if (!names)
            sm_put(&seen, name, strlen(name), (void *)a);
        ir_attr attr = {.name = name, .src_offset = a->name.offset};
        if (attr_from_literal(st, schema, a->value, &attr))
            n->attrs[n->nattrs++] = attr;
    }
    sm_free(&seen);
}

/* An operand defined by an earlier line is bound now (its name's slot is likely still in the
 * cache: most operands were defined a line or two before); the others wait for the whole file
 * (gp_resolve_names). Values are never removed while parsing, so what is found now is what the
 * end would find. */
static void set_operands(gp_state *st, ir_node *n, const gp_names *operands)
{
    for (uint32_t i = 0; i < n->ninputs; i++) {
        gp_token t = operands->items.items[i];
        if (tok_is(st, t, "_")) /* `_` (unquoted) is an omitted optional input */
            continue;
        ir_value *v = tok_quoted(st, t) ? NULL : ir_find_value_n(st->g, tok_text(st, t), t.len);
        if (v)
            ir_set_input(n, i, v);
        else
            vec_push(&st->refs, ((gp_ref){n, i, t}));
    }
}

/* Binds n to the kernel of the token `@name` or `@"name"`. The graph keeps one copy of each
 * distinct name; past IR_MAX_TEXT_KERNELS of them the token is refused (the rest of the table is
 * the rewriter's, which must never find it full). */
static void bind_kernel(gp_state *st, ir_node *n, gp_token t)
{
    const char *text = tok_text(st, t) + 1;
    size_t len = t.len - 1;
    bool ok;
    if (len > 0 && text[0] == '"') {
        char *name = xcalloc(len); /* the decoded text and its NUL fit in the quoted length */
        decode_quoted_into(text, len, name);
        ok = ir_node_set_kernel(st->g, n, name);
        free(name);
    } else {
        ok = ir_node_set_kernel_n(st->g, n, text, len);
    }
    if (!ok || n->kernel > IR_MAX_TEXT_KERNELS)
        dg_error(st->dg, st->src, t.offset, t.len,
                 "too many distinct kernel names: a graph's text names at most %u",
                 (unsigned)IR_MAX_TEXT_KERNELS);
}

static void build_node(gp_state *st, const gp_results *results, gp_token op_tok,
                       const gp_names *operands, const gp_attrs *attrs, gp_token kernel)
{
    size_t nresults = results->items.len;
    enum { FEW = 8 }; /* results of most lines: no allocation for them */
    gp_name few_names[FEW] = {{0}};
    gp_name *names = nresults <= FEW ? few_names : xcalloc(nresults * sizeof *names);
    ir_op op;
    bool op_ok = lookup_op(st, op_tok, &op);
    bool count_ok = nresults <= IR_MAX_OUTPUTS; /* a value's out_index is 16 bits */
    if (!count_ok) {
        gp_token extra = results->items.items[IR_MAX_OUTPUTS].name;
        dg_error(st->dg, st->src, extra.offset, extra.len,
                 "too many results: a node has at most %u outputs, this line names %zu",
                 (unsigned)IR_MAX_OUTPUTS, nresults);
    }
    /* one result on a line without other errors: ir_add_node_n's probe checks that it is new */
    bool defer_new = op_ok && nresults == 1 && defines_once(st);
    bool names_ok = result_names(st, results, names, defer_new);
    size_t noperands = operands ? operands->items.len : 0;
    ir_node *n = NULL;
    if (!op_ok || !names_ok || !count_ok || noperands > UINT32_MAX) {
        for (size_t i = 0; i < nresults; i++)
            if (names[i].s)
                poison(st, &names[i], results->items.items[i].name);
    } else {
        const char *few_s[FEW] = {0};
        size_t few_len[FEW] = {0};
        const char **s = nresults <= FEW ? few_s : xcalloc(nresults * sizeof *s);
        size_t *len = nresults <= FEW ? few_len : xcalloc(nresults * sizeof *len);
        for (size_t i = 0; i < nresults; i++) {
            s[i] = names[i].s;
            len[i] = names[i].len;
        }
        n = ir_add_node_n(st->g, op, (uint32_t)noperands, s, len, (uint32_t)nresults);
        if (!n) {
            FR_CHECK(defer_new); /* else result_names checked every name */
            check_new_name(st, &names[0], results->items.items[0].name);
        }
        if (s != few_s) {
            free(s);
            free(len);
        }
    }
    for (size_t i = 0; i < nresults; i++)
        name_done(&names[i]);
    if (names != few_names)
        free(names);
    if (!n)
        return;
    n->src_offset = op_tok.offset;
    n->src_len = ir_node_src_len(op_tok.len);
    for (size_t i = 0; i < nresults; i++) {
        const gp_result *r = &results->items.items[i];
        set_location(n->outputs[i], r->name);
        if (r->typed && r->type.ok) {
            ir_value_set_type(st->g, n->outputs[i], &r->type.type);
            n->outputs[i]->type_declared = true;
        }
    }
    if (noperands)
        set_operands(st, n, operands);
    set_attrs(st, n, attrs);
    if (kernel.len)
        bind_kernel(st, n, kernel);
}

void gp_node(gp_state *st, gp_results *results, gp_token op, gp_names *operands, gp_attrs *attrs,
             gp_token kernel)
{
    build_node(st, results, op, operands, attrs, kernel);
    gp_results_free(st, results);
    gp_names_free(st, operands);
    gp_attrs_free(st, attrs);
}

void gp_output(gp_state *st, gp_token name)
{
    vec_push(&st->outputs, name);
}

/* ---- resolving names once the file is read ------------------------------------------------- */

static void report_undefined(gp_state *st, gp_token t, const char *name, unsigned *suggestions)
{
    const char *best = NULL;
    if (*suggestions < MAX_SUGGESTIONS) {
        ++*suggestions;
        ir_suggester s;
        ir_suggest_init(&s, name);
        for (size_t i = 0; i < st->g->values.len; i++)
            ir_suggest_offer(&s, st->g->values.items[i]->name);
        best = ir_suggest_result(&s);
    }
    if (best)
        dg_error(st->dg, st->src, t.offset, t.len, "undefined value '%s'; did you mean '%s'?",
                 name, best);
    else
        dg_error(st->dg, st->src, t.offset, t.len, "undefined value '%s'", name);
}

/* The value a name refers to; NULL after reporting it (or, for a name whose definition had
 * errors, silently). */
static ir_value *resolve(gp_state *st, gp_token t, unsigned *suggestions)
{
    gp_name name = name_bytes(st, t); /* the token's own bytes, unless quoted: no copy */
    ir_value *v = ir_find_value_n(st->g, name.s, name.len);
    if (!v && !sm_get(&st->poisoned, name.s, name.len))
        report_undefined(st, t, ar_strndup(st->g->arena, name.s, name.len), suggestions);
    name_done(&name);
    return v;
}

/* Starts loading the name map's slot for an operand resolved a few operands later (a quoted name
 * is looked up by its decoded text: not worth decoding twice). */
static void prefetch_ref(gp_state *st, gp_token t)
{
    if (!tok_quoted(st, t))
        ir_names_prefetch(&st->g->by_name, tok_text(st, t), t.len);
}

void gp_resolve_names(gp_state *st)
{
    enum { AHEAD = 16 }; /* operands in flight: enough to cover a cache miss */
    unsigned suggestions = 0;
    for (size_t i = 0; i < st->refs.len; i++) {
        if (i + AHEAD < st->refs.len)
            prefetch_ref(st, st->refs.items[i + AHEAD].tok);
        gp_ref *r = &st->refs.items[i];
        ir_value *v = resolve(st, r->tok, &suggestions);
        if (v)
            ir_set_input(r->node, r->index, v);
    }
    for (size_t i = 0; i < st->outputs.len; i++) {
        gp_token t = st->outputs.items[i];
        ir_value *v = resolve(st, t, &suggestions);
        if (v && v->is_output)
            dg_error(st->dg, st->src, t.offset, t.len, "'%s' is already an output", v->name);
        else if (v)
            ir_add_output(st->g, v);
    }
}
