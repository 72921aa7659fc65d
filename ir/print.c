/* The canonical text form of a graph (docs/graph-format.md): fixed spacing; inputs, then constants
 * in definition order, then nodes in their order (topological after ir_validate) with the types of
 * their outputs, then outputs. Parsing the text gives the same graph back, and canonical text
 * prints back byte for byte. */
#include "ir/ir.h"

#include "base/check.h"
#include "base/utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Words the lexer reads as something other than a name; names spelt so must be quoted. `_` is a
 * name token, but an unquoted `_` operand means "omitted". */
static const char *const reserved[] = {"graph", "input", "const", "output", "random",
                                       "file",  "inf",   "nan",   "_"};

static bool is_name_start(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '/';
}

static bool is_name_char(unsigned char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

static bool needs_quotes(const char *name)
{
    if (!is_name_start((unsigned char)name[0]))
        return true; /* also the empty name */
    for (const char *p = name + 1; *p; p++)
        if (!is_name_char((unsigned char)*p))
            return true;
    for (size_t i = 0; i < FR_COUNT_OF(reserved); i++)
        if (strcmp(name, reserved[i]) == 0)
            return true;
    return false;
}

/* A string in double quotes; what would not read back as itself (quotes, backslashes, control
 * characters, bytes that are not UTF-8) is escaped. */
static void print_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char c = *p;
        size_t n = utf8_sequence(p, SIZE_MAX); /* the rules of the lexer */
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f || n == 0)
            fprintf(out, "\\x%02x", c);
        else
            fwrite(p, 1, n, out);
        p += n ? n : 1;
    }
    fputc('"', out);
}

static void print_name(FILE *out, const char *name)
{
    if (needs_quotes(name))
        print_quoted(out, name);
    else
        fputs(name, out);
}

/* The shortest text that reads back as the same double, written as Python's repr writes it:
 * the fewest significant digits that round-trip, in fixed notation for exponents from -4 to 15
 * and in scientific notation beyond (10.0, 0.0001, 1e-05, 1e+20). With as_float, an integral value
 * keeps a ".0" so that it reads back as a float rather than an integer. */
static void format_double(double v, bool as_float, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return;
    }
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(buf, size, "%.*e", digits - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, size, "%.*e", digits - 1, v);
    int exponent = atoi(strchr(buf, 'e') + 1);
    if (exponent >= -4 && exponent < 16)
        snprintf(buf, size, "%.*f", digits - 1 - exponent > 0 ? digits - 1 - exponent : 0, v);
    if (as_float && !strpbrk(buf, ".e"))
        strncat(buf, ".0", size - strlen(buf) - 1);
}

static void print_double(FILE *out, double v, bool as_float)
{
    char buf[40];
    format_double(v, as_float, buf, sizeof buf);
    fputs(buf, out);
}

static void print_type(FILE *out, const ir_graph *g, const ir_type *t)
{
    fputs(ir_dtype_name(t->dtype), out);
    if (t->rank < 0) {
        fputs("[*]", out);
    } else {
        fputc('[', out);
        for (int i = 0; i < t->rank; i++) {
            int64_t d = t->dims[i];
            if (i)
                fputc(',', out);
            if (ir_dim_is_static(d))
                fprintf(out, "%" PRId64, d);
            else if (ir_dim_is_symbol(d))
                print_name(out, ir_symbol_name(g, d));
            else
                fputc('?', out);
        }
        fputc(']', out);
    }
    if (t->layout != IR_LAYOUT_NONE)
        fprintf(out, " %s", ir_layout_name((ir_layout)t->layout));
}

/* ---- constants ----------------------------------------------------------------------------- */

/* One element of a literal constant: integers for integer and bool dtypes. */
static void print_element(FILE *out, ir_dtype dt, double v)
{
    if (!ir_dtype_is_float(dt) && v == floor(v) && fabs(v) < 9.2e18)
        fprintf(out, "%lld", (long long)v);
    else
        print_double(out, v, true);
}

static void print_const_init(FILE *out, const ir_graph *g, const ir_value *v)
{
    const ir_const *c = v->konst;
    FR_CHECK(c != NULL);
    switch (c->kind) {
    case IR_CONST_LITERAL:
        if (c->literal_count == 1) {
            print_element(out, v->type.dtype, c->literal[0]);
            break;
        }
        fputc('[', out);
        for (size_t i = 0; i < c->literal_count; i++) {
            if (i)
                fputc(',', out);
            print_element(out, v->type.dtype, c->literal[i]);
        }
        fputc(']', out);
        break;
    case IR_CONST_RANDOM:
        fprintf(out, "random(seed=%" PRIu64, c->seed);
        if (c->lo != -1.0) {
            fputs(", lo=", out);
            print_double(out, c->lo, true);
        }
        if (c->hi != 1.0) {
            fputs(", hi=", out);
            print_double(out, c->hi, true);
        }
        fputc(')', out);
        break;
    case IR_CONST_FILE:
        fputs("file(", out);
        print_quoted(out, c->file);
        fputs(", ", out);
        print_quoted(out, c->key);
        fputc(')', out);
        break;
    case IR_CONST_DATA: {
        /* ir_save writes these to <graph name>.safetensors, keyed by value name */
        fputs("file(", out);
        size_t n = strlen(g->name) + sizeof ".safetensors";
        char *file = malloc(n);
        FR_CHECK(file != NULL);
        snprintf(file, n, "%s.safetensors", g->name);
        print_quoted(out, file);
        free(file);
        fputs(", ", out);
        print_quoted(out, v->name);
        fputc(')', out);
        break;
    }
    }
}

/* ---- nodes --------------------------------------------------------------------------------- */

static void print_attr_value(FILE *out, const ir_attr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT:
        fprintf(out, "%" PRId64, a->v.i);
        break;
    case IR_ATTR_FLOAT:
        print_double(out, a->v.f, true);
        break;
    case IR_ATTR_STRING:
        print_quoted(out, a->v.s);
        break;
    case IR_ATTR_INTS:
    case IR_ATTR_FLOATS:
        fputc('[', out);
        for (uint32_t i = 0; i < a->count; i++) {
            if (i)
                fputc(',', out);
            if (a->kind == IR_ATTR_INTS)
                fprintf(out, "%" PRId64, a->v.ints[i]);
            else
                print_double(out, a->v.floats[i], true);
        }
        fputc(']', out);
        break;
    }
}

static void print_attr(FILE *out, const ir_attr *a, bool *first)
{
    fputs(*first ? " {" : ", ", out);
    *first = false;
    print_name(out, a->name);
    fputc('=', out);
    print_attr_value(out, a);
}

/* Attributes in the order of the op's schema, then any the schema does not know (a graph that was
 * not validated) in the node's order. */
static void print_attrs(FILE *out, const ir_node *n)
{
    const ir_op_info *info = ir_op_info_get(n->op);
    bool first = true;
    for (uint32_t i = 0; i < info->nattrs; i++) {
        const ir_attr *a = ir_node_attr(n, info->attrs[i].name);
        if (a)
            print_attr(out, a, &first);
    }
    for (uint32_t i = 0; i < n->nattrs; i++)
        if (!ir_op_attr_schema(n->op, n->attrs[i].name))
            print_attr(out, &n->attrs[i], &first);
    if (!first)
        fputc('}', out);
}

static void print_kernel(FILE *out, const char *kernel)
{
    fputs(" @", out);
    for (const char *p = kernel; *p; p++) {
        if (!is_name_char((unsigned char)*p)) {
            print_quoted(out, kernel);
            return;
        }
    }
    fputs(kernel[0] ? kernel : "\"\"", out);
}

static void print_node(FILE *out, const ir_graph *g, const ir_node *n)
{
    fputs("  ", out);
    for (uint32_t i = 0; i < n->noutputs; i++) {
        const ir_value *v = n->outputs[i];
        if (i)
            fputs(", ", out);
        print_name(out, v->name);
        if (v->type.dtype != IR_DTYPE_UNKNOWN) {
            fputs(" : ", out);
            print_type(out, g, &v->type);
        }
    }
    fprintf(out, " = %s(", ir_op_name(n->op));
    for (uint32_t i = 0; i < n->ninputs; i++) {
        if (i)
            fputs(", ", out);
        if (n->inputs[i])
            print_name(out, n->inputs[i]->name);
        else
            fputc('_', out);
    }
    fputc(')', out);
    print_attrs(out, n);
    if (n->kernel)
        print_kernel(out, n->kernel);
    fputc('\n', out);
}

void ir_print(const ir_graph *g, FILE *out)
{
    fputs("graph ", out);
    print_name(out, g->name);
    fputs(" {\n", out);
    for (size_t i = 0; i < g->inputs.len; i++) {
        const ir_value *v = g->inputs.items[i];
        fputs("  input  ", out);
        print_name(out, v->name);
        fputs(" : ", out);
        print_type(out, g, &v->type);
        fputc('\n', out);
    }
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        if (v->kind != IR_VALUE_CONST)
            continue;
        fputs("  const  ", out);
        print_name(out, v->name);
        fputs(" : ", out);
        print_type(out, g, &v->type);
        fputs(" = ", out);
        print_const_init(out, g, v);
        fputc('\n', out);
    }
    for (size_t i = 0; i < g->nodes.len; i++)
        if (!g->nodes.items[i]->dead)
            print_node(out, g, g->nodes.items[i]);
    for (size_t i = 0; i < g->outputs.len; i++) {
        fputs("  output ", out);
        print_name(out, g->outputs.items[i]->name);
        fputc('\n', out);
    }
    fputs("}\n", out);
}
