/* The canonical text form of a graph (docs/graph-format.md): fixed spacing; inputs, then constants
 * in definition order, then nodes in their order (topological after ir_validate) with the types of
 * their outputs, then outputs. Parsing the text gives the same graph back, and canonical text
 * prints back byte for byte. */
#include "ir/ir.h"

#include "base/check.h"
#include "base/numtext.h"
#include "base/utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The printer writes through a buffer of its own, flushed to the FILE in large blocks: stdio's
 * per-call locking and format parsing were a tenth of `apply` at a million nodes. Short pieces
 * (names, punctuation) are copied inline, not through a call to memcpy; names are scanned through
 * a table of byte classes; and what repeats is made text once per print and copied from then on:
 * each distinct type (types are interned: a graph has few), the doubles of attributes and
 * random() bounds, kernel names, the length of each op's name. */

/* What a byte is to the lexer (one table lookup, not a chain of comparisons). */
enum {
    CH_START = 1, /* starts a name */
    CH_NAME = 2,  /* continues a name */
    CH_PLAIN = 4, /* stands for itself inside a quoted string */
};

/* The text of one type, keyed by the interned type's address. */
typedef struct {
    const ir_type *key;
    uint8_t len;
    char text[55];
} type_text;

enum { TYPE_CACHE = 256 }; /* slots, indexed by the top 8 bits of a hash of the address */

/* The text of one double, keyed by its bits. */
typedef struct {
    uint64_t bits;
    bool as_float;
    uint8_t len; /* 0: empty */
    char text[NUMTEXT_SIZE];
} number_text;

enum { NUMBER_CACHE = 64 };

/* The spelling of one kernel name, keyed by its address (a graph keeps one copy of each name). */
typedef struct {
    const char *key;
    size_t len; /* its length when it needs no quotes */
    bool quoted;
} kernel_text;

enum { KERNEL_CACHE = 16 };

typedef struct {
    FILE *file;
    size_t len;
    uint64_t flushes; /* how often buf was emptied: bytes written since a mark are still there */
    unsigned char cls[256];
    uint8_t op_len[IR_OP_COUNT]; /* 0: not measured yet */
    type_text types[TYPE_CACHE];
    number_text numbers[NUMBER_CACHE];
    kernel_text kernels[KERNEL_CACHE];
    char buf[1 << 16];
} pbuf;

static void pb_flush(pbuf *b)
{
    if (b->len)
        fwrite(b->buf, 1, b->len, b->file);
    b->len = 0;
    b->flushes++;
}

/* Up to 16 bytes as two overlapping copies of a fixed size (no call, never beyond s + n). */
static inline void copy_short(char *d, const char *s, size_t n)
{
    if (n >= 8) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

static void pb_write_slow(pbuf *b, const char *s, size_t n)
{
    pb_flush(b);
    if (n > sizeof b->buf) {
        fwrite(s, 1, n, b->file);
        return;
    }
    memcpy(b->buf, s, n);
    b->len = n;
}

static inline void pb_write(pbuf *b, const char *s, size_t n)
{
    if (__builtin_expect(n > sizeof b->buf - b->len, 0)) {
        pb_write_slow(b, s, n);
        return;
    }
    char *d = b->buf + b->len;
    b->len += n;
    if (n <= 16)
        copy_short(d, s, n);
    else
        memcpy(d, s, n);
}

static void pb_puts(pbuf *b, const char *s)
{
    pb_write(b, s, strlen(s));
}

/* A string literal, its length known at compile time. */
#define PB_LIT(b, literal) pb_write(b, literal, sizeof literal - 1)

static inline void pb_putc(pbuf *b, char c)
{
    if (b->len == sizeof b->buf)
        pb_flush(b);
    b->buf[b->len++] = c;
}

static void pb_u64(pbuf *b, uint64_t v)
{
    if (v < 10) {
        pb_putc(b, (char)('0' + v));
        return;
    }
    char digits[20];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    pb_write(b, digits + sizeof digits - n, n);
}

static void pb_i64(pbuf *b, int64_t v)
{
    if (v < 0) {
        pb_putc(b, '-');
        pb_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        pb_u64(b, (uint64_t)v);
    }
}

static void pb_printf(pbuf *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void pb_printf(pbuf *b, const char *format, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    FR_CHECK(n >= 0 && (size_t)n < sizeof text);
    pb_write(b, text, (size_t)n);
}

static bool is_name_start(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '/';
}

static bool is_name_char(unsigned char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

static void init_classes(unsigned char cls[256])
{
    for (unsigned c = 0; c < 256; c++)
        cls[c] = (unsigned char)((is_name_start((unsigned char)c) ? CH_START : 0) |
                                 (is_name_char((unsigned char)c) ? CH_NAME : 0) |
                                 (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? CH_PLAIN : 0));
}

/* Words the lexer reads as something other than a name; names spelt so must be quoted. `_` is a
 * name token, but an unquoted `_` operand means "omitted". */
static bool is_reserved(const char *s, size_t len)
{
    switch (len) {
    case 1: return s[0] == '_';
    case 3: return memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0;
    case 4: return memcmp(s, "file", 4) == 0;
    case 5:
        return memcmp(s, "graph", 5) == 0 || memcmp(s, "input", 5) == 0 ||
               memcmp(s, "const", 5) == 0;
    case 6: return memcmp(s, "output", 6) == 0 || memcmp(s, "random", 6) == 0;
    default: return false;
    }
}

/* Whether name must be quoted; *len is its length when it need not. */
static bool needs_quotes(const pbuf *out, const char *name, size_t *len)
{
    const unsigned char *p = (const unsigned char *)name;
    if (!(out->cls[p[0]] & CH_START))
        return true; /* also the empty name */
    size_t n = 1;
    while (out->cls[p[n]] & CH_NAME)
        n++;
    if (p[n] != '\0')
        return true;
    *len = n;
    return is_reserved(name, n);
}

/* A string in double quotes; what would not read back as itself (quotes, backslashes, control
 * characters, bytes that are not UTF-8) is escaped. Runs of printable ASCII are copied whole. */
static void print_quoted(pbuf *out, const char *s)
{
    pb_putc(out, '"');
    for (const unsigned char *p = (const unsigned char *)s;;) {
        const unsigned char *run = p;
        while (out->cls[*p] & CH_PLAIN)
            p++;
        if (p != run)
            pb_write(out, (const char *)run, (size_t)(p - run));
        unsigned char c = *p;
        if (c == '\0')
            break;
        size_t n = utf8_sequence(p, SIZE_MAX); /* the rules of the lexer */
        if (c == '"' || c == '\\')
            pb_printf(out, "\\%c", c);
        else if (c == '\n')
            PB_LIT(out, "\\n");
        else if (c == '\t')
            PB_LIT(out, "\\t");
        else if (c < 0x20 || c == 0x7f || n == 0)
            pb_printf(out, "\\x%02x", c);
        else
            pb_write(out, (const char *)p, n);
        p += n ? n : 1;
    }
    pb_putc(out, '"');
}

static void print_name(pbuf *out, const char *name)
{
    size_t len;
    if (needs_quotes(out, name, &len))
        print_quoted(out, name);
    else
        pb_write(out, name, len);
}

/* The shortest text that reads back as the same double, as Python's repr writes it (numtext.h);
 * with as_float an integral value keeps a ".0" so that it reads back as a float. */
static void print_double(pbuf *out, double v, bool as_float)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    _Static_assert(NUMBER_CACHE == 1 << 6, "the slot is the hash's top 6 bits");
    number_text *e = &out->numbers[(bits * UINT64_C(0x9e3779b97f4a7c15)) >> 58];
    if (e->len == 0 || e->bits != bits || e->as_float != as_float) {
        e->len = (uint8_t)numtext_double(v, as_float, e->text);
        e->bits = bits;
        e->as_float = as_float;
    }
    pb_write(out, e->text, e->len);
}

/* An expression dim as the parser reads it back: `batch * S * 12 + 1`, `T - S`, names quoted
 * where needed (spaces around the operators: `-` and `/` are name characters). An expression
 * always has a positive term (ir/dimexpr.c). */
static void print_dim_expr(pbuf *out, const ir_graph *g, const ir_dimx *p)
{
    /* the positive terms first, so that the text reads back left to right through sizes */
    bool first = true;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < p->nterms; i++) {
            const ir_dimx_term *t = &p->terms[i];
            if ((t->coef < 0) != (pass == 1))
                continue;
            uint64_t mag = t->coef < 0 ? (uint64_t)0 - (uint64_t)t->coef : (uint64_t)t->coef;
            if (!first)
                pb_puts(out, t->coef < 0 ? " - " : " + ");
            first = false;
            for (int k = 0; k < t->nvars; k++) {
                if (k)
                    PB_LIT(out, " * ");
                print_name(out, g->symbols.items[t->vars[k]]);
            }
            if (t->nvars == 0 || mag != 1)
                pb_printf(out, "%s%llu", t->nvars ? " * " : "", (unsigned long long)mag);
        }
}

static void print_type_text(pbuf *out, const ir_graph *g, const ir_type *t)
{
    pb_puts(out, ir_dtype_name(t->dtype));
    if (t->rank < 0) {
        PB_LIT(out, "[*]");
    } else {
        pb_putc(out, '[');
        for (int i = 0; i < t->rank; i++) {
            int64_t d = t->dims[i];
            if (i)
                pb_putc(out, ',');
            if (ir_dim_is_static(d))
                pb_i64(out, d);
            else if (ir_dim_expr(g, d))
                print_dim_expr(out, g, ir_dim_expr(g, d));
            else if (ir_dim_is_symbol(d))
                print_name(out, ir_symbol_name(g, d));
            else
                pb_putc(out, '?');
        }
        pb_putc(out, ']');
    }
    if (t->layout != IR_LAYOUT_NONE)
        pb_printf(out, " %s", ir_layout_name((ir_layout)t->layout));
}

/* A type's text, made once per print for each type (by the address of its interned copy: nothing
 * changes while the graph prints) and copied from then on. */
static void print_type(pbuf *out, const ir_graph *g, const ir_type *t)
{
    _Static_assert(TYPE_CACHE == 1 << 8, "the slot is the hash's top 8 bits");
    type_text *e = &out->types[((uintptr_t)t * UINT64_C(0x9e3779b97f4a7c15)) >> 56];
    if (e->key == t) {
        pb_write(out, e->text, e->len);
        return;
    }
    size_t start = out->len;
    uint64_t flushes = out->flushes;
    print_type_text(out, g, t);
    size_t len = out->len - start;
    if (out->flushes == flushes && len <= sizeof e->text) {
        e->key = t;
        e->len = (uint8_t)len;
        memcpy(e->text, out->buf + start, len);
    }
}

/* ---- constants ----------------------------------------------------------------------------- */

/* One element of a literal constant: integers for integer and bool dtypes. */
static void print_element(pbuf *out, ir_dtype dt, double v)
{
    if (!ir_dtype_is_float(dt) && v == floor(v) && fabs(v) < 9.2e18)
        pb_i64(out, (int64_t)v);
    else
        print_double(out, v, true);
}

/* data_file: `<graph name>.safetensors`, made once per print. */
static void print_const_init(pbuf *out, const char *data_file, const ir_value *v)
{
    const ir_const *c = v->konst;
    FR_CHECK(c != NULL);
    switch (c->kind) {
    case IR_CONST_LITERAL:
        if (c->literal_count == 1) {
            print_element(out, v->type->dtype, c->literal[0]);
            break;
        }
        pb_putc(out, '[');
        for (size_t i = 0; i < c->literal_count; i++) {
            if (i)
                pb_putc(out, ',');
            print_element(out, v->type->dtype, c->literal[i]);
        }
        pb_putc(out, ']');
        break;
    case IR_CONST_RANDOM:
        PB_LIT(out, "random(seed=");
        pb_u64(out, c->seed);
        if (c->lo != -1.0) {
            PB_LIT(out, ", lo=");
            print_double(out, c->lo, true);
        }
        if (c->hi != 1.0) {
            PB_LIT(out, ", hi=");
            print_double(out, c->hi, true);
        }
        pb_putc(out, ')');
        break;
    case IR_CONST_FILE:
        PB_LIT(out, "file(");
        print_quoted(out, c->file);
        PB_LIT(out, ", ");
        print_quoted(out, c->key);
        pb_putc(out, ')');
        break;
    case IR_CONST_DATA: {
        /* ir_save writes these to <graph name>.safetensors, keyed by value name */
        PB_LIT(out, "file(");
        print_quoted(out, data_file);
        PB_LIT(out, ", ");
        print_quoted(out, v->name);
        pb_putc(out, ')');
        break;
    }
    }
}

/* ---- nodes --------------------------------------------------------------------------------- */

static void print_attr_value(pbuf *out, const ir_attr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT:
        pb_i64(out, a->v.i);
        break;
    case IR_ATTR_FLOAT:
        print_double(out, a->v.f, true);
        break;
    case IR_ATTR_STRING:
        print_quoted(out, a->v.s);
        break;
    case IR_ATTR_INTS:
    case IR_ATTR_FLOATS:
        pb_putc(out, '[');
        for (uint32_t i = 0; i < a->count; i++) {
            if (i)
                pb_putc(out, ',');
            if (a->kind == IR_ATTR_INTS)
                pb_i64(out, a->v.ints[i]);
            else
                print_double(out, a->v.floats[i], true);
        }
        pb_putc(out, ']');
        break;
    }
}

static void print_attr(pbuf *out, const ir_attr *a, bool *first)
{
    if (*first)
        PB_LIT(out, " {");
    else
        PB_LIT(out, ", ");
    *first = false;
    print_name(out, a->name);
    pb_putc(out, '=');
    print_attr_value(out, a);
}

/* ir_node_attr for a schema's name: an attribute's name is often the catalog's own string,
 * compared by address before by text. */
static const ir_attr *attr_named(const ir_node *n, const char *name)
{
    for (uint32_t i = 0; i < n->nattrs; i++)
        if (n->attrs[i].name == name ||
            (n->attrs[i].name[0] == name[0] && strcmp(n->attrs[i].name, name) == 0))
            return &n->attrs[i];
    return NULL;
}

/* Whether the op's schema has attribute a. */
static bool in_schema(const ir_op_info *info, const ir_node *n, const ir_attr *a)
{
    for (uint32_t i = 0; i < info->nattrs; i++)
        if (info->attrs[i].name == a->name)
            return true;
    return ir_op_attr_schema(n->op, a->name) != NULL;
}

/* Attributes in the order of the op's schema, then any the schema does not know (a graph that was
 * not validated) in the node's order. */
static void print_attrs(pbuf *out, const ir_node *n)
{
    if (n->nattrs == 0)
        return;
    const ir_op_info *info = ir_op_info_get(n->op);
    bool first = true;
    for (uint32_t i = 0; i < info->nattrs; i++) {
        const ir_attr *a = attr_named(n, info->attrs[i].name);
        if (a)
            print_attr(out, a, &first);
    }
    for (uint32_t i = 0; i < n->nattrs; i++)
        if (!in_schema(info, n, &n->attrs[i]))
            print_attr(out, &n->attrs[i], &first);
    if (!first)
        pb_putc(out, '}');
}

static void print_kernel(pbuf *out, const char *kernel)
{
    PB_LIT(out, " @");
    _Static_assert(KERNEL_CACHE == 1 << 4, "the slot is the hash's top 4 bits");
    kernel_text *e = &out->kernels[((uintptr_t)kernel * UINT64_C(0x9e3779b97f4a7c15)) >> 60];
    if (e->key != kernel) {
        size_t n = 0;
        while (out->cls[(unsigned char)kernel[n]] & CH_NAME)
            n++;
        *e = (kernel_text){kernel, n, kernel[n] != '\0'};
    }
    if (e->quoted)
        print_quoted(out, kernel);
    else if (e->len)
        pb_write(out, kernel, e->len);
    else
        PB_LIT(out, "\"\"");
}

/* An op's name, measured once per print. */
static void print_op_name(pbuf *out, ir_op op)
{
    const char *name = ir_op_name(op);
    size_t n = out->op_len[op];
    if (!n) {
        n = strlen(name);
        if (n > UINT8_MAX) {
            pb_write(out, name, n);
            return;
        }
        out->op_len[op] = (uint8_t)n;
    }
    pb_write(out, name, n);
}

static void print_node(pbuf *out, const ir_graph *g, const ir_node *n)
{
    PB_LIT(out, "  ");
    for (uint32_t i = 0; i < n->noutputs; i++) {
        const ir_value *v = n->outputs[i];
        if (i)
            PB_LIT(out, ", ");
        print_name(out, v->name);
        if (v->type->dtype != IR_DTYPE_UNKNOWN) {
            PB_LIT(out, " : ");
            print_type(out, g, v->type);
        }
    }
    PB_LIT(out, " = ");
    print_op_name(out, n->op);
    pb_putc(out, '(');
    for (uint32_t i = 0; i < n->ninputs; i++) {
        if (i)
            PB_LIT(out, ", ");
        if (n->inputs[i])
            print_name(out, n->inputs[i]->name);
        else
            pb_putc(out, '_');
    }
    pb_putc(out, ')');
    print_attrs(out, n);
    if (n->kernel)
        print_kernel(out, ir_node_kernel(g, n));
    pb_putc(out, '\n');
}

/* The nodes print in order, but what they point to lies anywhere in a graph larger than the
 * caches, and the work between two nodes is too long for the processor to reach the next node's
 * loads on its own: while node i prints, node i + 2 * AHEAD is fetched, then the values that node
 * i + AHEAD reads and writes (their names lie beside them). Fetching further ahead, or the names
 * as a third stage, measured slower. */
enum { AHEAD = 8 };

static void prefetch_ahead(ir_node *const *nodes, size_t len, size_t i)
{
    if (i + 2 * AHEAD < len) {
        __builtin_prefetch(nodes[i + 2 * AHEAD]);
        __builtin_prefetch((const char *)nodes[i + 2 * AHEAD] + 64); /* its operand arrays */
    }
    if (i + AHEAD < len && !nodes[i + AHEAD]->dead) {
        const ir_node *n = nodes[i + AHEAD];
        for (uint32_t k = 0; k < n->noutputs; k++) {
            __builtin_prefetch(&n->outputs[k]->name);
            __builtin_prefetch(&n->outputs[k]->type);
        }
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k])
                __builtin_prefetch(&n->inputs[k]->name);
    }
}

static void print_graph(const ir_graph *g, pbuf *out)
{
    size_t n = strlen(g->name) + sizeof ".safetensors";
    char *data_file = malloc(n);
    FR_CHECK(data_file != NULL);
    snprintf(data_file, n, "%s.safetensors", g->name);
    PB_LIT(out, "graph ");
    print_name(out, g->name);
    PB_LIT(out, " {\n");
    for (size_t i = 0; i < g->inputs.len; i++) {
        const ir_value *v = g->inputs.items[i];
        PB_LIT(out, "  input  ");
        print_name(out, v->name);
        PB_LIT(out, " : ");
        print_type(out, g, v->type);
        pb_putc(out, '\n');
    }
    for (size_t i = 0; i < g->values.len; i++) {
        if (i + AHEAD < g->values.len) { /* as the nodes below */
            __builtin_prefetch(&g->values.items[i + AHEAD]->name);
            __builtin_prefetch(&g->values.items[i + AHEAD]->kind);
        }
        const ir_value *v = g->values.items[i];
        if (v->kind != IR_VALUE_CONST)
            continue;
        PB_LIT(out, "  const  ");
        print_name(out, v->name);
        PB_LIT(out, " : ");
        print_type(out, g, v->type);
        PB_LIT(out, " = ");
        print_const_init(out, data_file, v);
        pb_putc(out, '\n');
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        prefetch_ahead(g->nodes.items, g->nodes.len, i);
        if (!g->nodes.items[i]->dead)
            print_node(out, g, g->nodes.items[i]);
    }
    for (size_t i = 0; i < g->outputs.len; i++) {
        PB_LIT(out, "  output ");
        print_name(out, g->outputs.items[i]->name);
        pb_putc(out, '\n');
    }
    PB_LIT(out, "}\n");
    free(data_file);
}

void ir_print(const ir_graph *g, FILE *file)
{
    pbuf *out = malloc(sizeof *out);
    FR_CHECK(out != NULL);
    out->file = file;
    out->len = 0;
    out->flushes = 0;
    init_classes(out->cls);
    memset(out->op_len, 0, sizeof out->op_len);
    for (size_t i = 0; i < TYPE_CACHE; i++)
        out->types[i].key = NULL;
    for (size_t i = 0; i < NUMBER_CACHE; i++)
        out->numbers[i].len = 0;
    for (size_t i = 0; i < KERNEL_CACHE; i++)
        out->kernels[i].key = NULL;
    print_graph(g, out);
    pb_flush(out);
    free(out);
}
