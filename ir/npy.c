/* NumPy .npy files (ir/npy.h). */
#include "ir/npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct parser {
    const char *path;
    dg_context *dg;
    const char *start, *p, *end; /* the header text */
} parser;

static bool fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(parser *ps, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dg_error_path(ps->dg, ps->path, "%s", msg);
    return false;
}

static void skip_space(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n'))
        ps->p++;
}

static bool expect(parser *ps, char c)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return true;
    }
    return fail(ps, "npy header: expected '%c' at byte %td of the header", c, ps->p - ps->start);
}

/* A quoted string (single or double quotes, no escapes) into buf. */
static bool string(parser *ps, char *buf, size_t size)
{
    skip_space(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return fail(ps, "npy header: expected a quoted string");
    char q = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != q) {
        if (n + 1 >= size || *ps->p == '\\')
            return fail(ps, "npy header: a string is too long or has an escape");
        buf[n++] = *ps->p++;
    }
    if (ps->p >= ps->end)
        return fail(ps, "npy header: unterminated string");
    ps->p++;
    buf[n] = 0;
    return true;
}

static bool word(parser *ps, const char *w)
{
    skip_space(ps);
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
        ps->p += n;
        return true;
    }
    return false;
}

/* (d0, d1, ...) with an optional trailing comma; () is a scalar. */
static bool shape(parser *ps, ir_type *t)
{
    if (!expect(ps, '('))
        return false;
    t->rank = 0;
    double numel = 1;
    for (;;) {
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ')') {
            ps->p++;
            return true;
        }
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "npy header: a shape holds non-negative integers");
        int64_t d = 0;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            if (d > IR_MAX_NUMEL)
                return fail(ps, "npy header: a dim is larger than %lld", (long long)IR_MAX_NUMEL);
            d = d * 10 + (*ps->p++ - '0');
        }
        if (t->rank == IR_MAX_RANK)
            return fail(ps, "npy header: the shape has more than %d dims", IR_MAX_RANK);
        if (d > IR_MAX_NUMEL || (numel *= (double)d) > (double)IR_MAX_NUMEL)
            return fail(ps, "npy header: the shape has more than %lld elements",
                        (long long)IR_MAX_NUMEL);
        t->dims[t->rank++] = d;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',')
            ps->p++;
        else if (ps->p >= ps->end || *ps->p != ')')
            return fail(ps, "npy header: expected ',' or ')' in the shape");
    }
}

/* The IR dtype of a descr such as '<f4'. */
static bool descr(parser *ps, const char *d, ir_dtype *out)
{
    static const struct {
        const char *code;
        ir_dtype dtype;
    } codes[] = {{"f2", IR_F16}, {"f4", IR_F32}, {"f8", IR_F64}, {"i1", IR_I8},
                 {"u1", IR_U8},  {"i4", IR_I32}, {"i8", IR_I64}, {"b1", IR_BOOL},
                 {"i2", IR_I16}, {"u2", IR_U16}, {"u4", IR_U32}, {"u8", IR_U64}};
    const uint16_t one = 1;
    bool little_host = *(const uint8_t *)&one == 1;
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return fail(ps,
                    "npy header: descr '%s' is not a plain array type (structured and "
                    "object arrays are not supported)",
                    d);
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        if (strcmp(d + 1, codes[i].code) != 0)
            continue;
        bool one_byte = d[2] == '1';
        if (!one_byte && (order == '>' || order == '|' || (order == '=' && !little_host)))
            return fail(ps,
                        "npy header: descr '%s' is not little-endian; save the array as "
                        "'<%s' (a.astype('<%s'))",
                        d, d + 1, d + 1);
        *out = codes[i].dtype;
        return true;
    }
    return fail(ps,
                "npy header: dtype '%s' is not supported (f2, f4, f8, i1, u1, i2, u2, i4, u4, i8, "
                "u8, b1)",
                d);
}

static bool header(parser *ps, ir_type *t)
{
    bool seen[3] = {false, false, false};
    if (!expect(ps, '{'))
        return false;
    for (;;) {
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            break;
        }
        char key[32], value[32];
        if (!string(ps, key, sizeof key) || !expect(ps, ':'))
            return false;
        int k = strcmp(key, "descr") == 0           ? 0
                : strcmp(key, "fortran_order") == 0 ? 1
                : strcmp(key, "shape") == 0         ? 2
                                                    : -1;
        if (k < 0)
            return fail(ps, "npy header: unknown key '%s'", key);
        if (seen[k])
            return fail(ps, "npy header: key '%s' appears twice", key);
        seen[k] = true;
        if (k == 0 && (!string(ps, value, sizeof value) || !descr(ps, value, &t->dtype)))
            return false;
        if (k == 1) {
            if (word(ps, "True"))
                return fail(ps, "npy header: Fortran-order arrays are not supported; save "
                                "np.ascontiguousarray(a)");
            if (!word(ps, "False"))
                return fail(ps, "npy header: fortran_order must be True or False");
        }
        if (k == 2 && !shape(ps, t))
            return false;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',')
            ps->p++;
        else if (ps->p >= ps->end || *ps->p != '}')
            return fail(ps, "npy header: expected ',' or '}'");
    }
    skip_space(ps);
    if (ps->p != ps->end)
        return fail(ps, "npy header: text after the dict");
    if (!seen[0] || !seen[1] || !seen[2])
        return fail(ps, "npy header: missing key '%s'",
                    !seen[0]   ? "descr"
                    : !seen[1] ? "fortran_order"
                               : "shape");
    return true;
}

bool npy_read(const char *path, npy_array *out, dg_context *dg)
{
    *out = (npy_array){0};
    parser ps = {.path = path, .dg = dg};
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(&ps, "cannot open: %s", strerror(errno));
    struct stat st;
    unsigned char pre[12];
    bool ok = false;
    char *text = NULL;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fail(&ps, "not a regular file");
        goto done;
    }
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fail(&ps, "not a .npy file (no \\x93NUMPY magic)");
        goto done;
    }
    int major = pre[6];
    if (major < 1 || major > 3) {
        fail(&ps, "npy format version %d.%d is not supported (1, 2 or 3)", major, pre[7]);
        goto done;
    }
    uint64_t hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8, start = 10;
    if (major > 1) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            fail(&ps, "truncated header length");
            goto done;
        }
        hlen |= (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
        start = 12;
    }
    if (hlen > NPY_MAX_HEADER_BYTES || start + hlen > (uint64_t)st.st_size) {
        fail(&ps, "npy header of %llu bytes is %s", (unsigned long long)hlen,
             hlen > NPY_MAX_HEADER_BYTES ? "longer than 65536 bytes" : "past the end of the file");
        goto done;
    }
    text = malloc(hlen + 1);
    if (!text || fread(text, 1, hlen, f) != hlen) {
        fail(&ps, "cannot read the header");
        goto done;
    }
    for (uint64_t i = 0; i < hlen; i++)
        if ((unsigned char)text[i] < 0x20 && text[i] != '\n' && text[i] != '\t') {
            fail(&ps, "npy header: control byte 0x%02x at byte %llu", (unsigned char)text[i],
                 (unsigned long long)i);
            goto done;
        }
    ps.start = ps.p = text, ps.end = text + hlen;
    if (!header(&ps, &out->type))
        goto done;
    int64_t nbytes;
    if (!ir_type_nbytes(&out->type, &nbytes)) {
        fail(&ps, "the array is too large");
        goto done;
    }
    uint64_t have = (uint64_t)st.st_size - start - hlen;
    if (have != (uint64_t)nbytes) {
        fail(&ps, "the data is %llu bytes but shape and dtype need %lld (%s)",
             (unsigned long long)have, (long long)nbytes,
             have < (uint64_t)nbytes ? "truncated file" : "trailing bytes");
        goto done;
    }
    out->nbytes = (size_t)nbytes;
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data) {
        fail(&ps, "out of memory for %lld bytes", (long long)nbytes);
        goto done;
    }
    if (fread(out->data, 1, out->nbytes, f) != out->nbytes) {
        fail(&ps, "cannot read the data");
        goto done;
    }
    ok = true;
done:
    free(text);
    fclose(f);
    if (!ok) {
        free(out->data);
        *out = (npy_array){0};
    }
    return ok;
}
