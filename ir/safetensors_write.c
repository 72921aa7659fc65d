/* The safetensors writer (ir/safetensors.h, st_write): a deterministic header and data layout. The
 * reader is ir/safetensors.c. */
#include "ir/safetensors.h"

#include "base/check.h"
#include "base/json.h"
#include "base/utf8.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing --------------------------------------------------------------------------------- */

typedef VEC(char) char_buf;

static void put_str(char_buf *b, const char *s)
{
    size_t n = strlen(s);
    vec_reserve(b, b->len + n);
    memcpy(b->items + b->len, s, n);
    b->len += n;
}

static void put_u64(char_buf *b, uint64_t v)
{
    char num[24];
    size_t at = sizeof num;
    do {
        num[--at] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    vec_reserve(b, b->len + (sizeof num - at));
    memcpy(b->items + b->len, num + at, sizeof num - at);
    b->len += sizeof num - at;
}

/* A JSON string: quotes, backslashes and control characters escaped, UTF-8 passed through. A
 * name with nothing to escape (every name an export makes) is copied between quotes as it is. */
static void put_json_string(char_buf *b, const char *s)
{
    size_t n = 0;
    while (s[n] && (unsigned char)s[n] >= 0x20 && s[n] != '"' && s[n] != '\\')
        n++;
    if (!s[n]) {
        vec_reserve(b, b->len + n + 2);
        b->items[b->len++] = '"';
        memcpy(b->items + b->len, s, n);
        b->len += n;
        b->items[b->len++] = '"';
        return;
    }
    char *quoted = json_quote(s);
    put_str(b, quoted);
    free(quoted);
}

static int compare_names(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    return strcmp(x->name, y->name);
}

/* Data layout order: wider elements first so that every tensor stays aligned, then by name. */
static int compare_layout(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    size_t sx = ir_dtype_size(x->dtype), sy = ir_dtype_size(y->dtype);
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Whether rows `r` hold exactly nbytes. */
static bool rows_cover(const st_rows *r, size_t nbytes)
{
    size_t row = 0;
    for (uint32_t i = 0; i < r->nparts; i++) {
        if (!r->parts[i].src || r->parts[i].row_bytes > SIZE_MAX - row)
            return false;
        row += r->parts[i].row_bytes;
    }
    return r->nparts && r->rows && row && nbytes % r->rows == 0 && nbytes / r->rows == row;
}

static bool check_entry(const st_entry *e, const st_rows *rows, const char *path,
                        dg_context *dg)
{
    size_t len = strlen(e->name);
    if (len == 0 || strcmp(e->name, "__metadata__") == 0 ||
        utf8_invalid_at((const unsigned char *)e->name, len) != len) {
        dg_error_path(dg, path, "cannot write a tensor named \"%s\"", e->name);
        return false;
    }
    if (!st_dtype_name(e->dtype)) {
        dg_error_path(dg, path, "tensor '%s': cannot write dtype %s", e->name,
                      ir_dtype_name(e->dtype));
        return false;
    }
    uint64_t numel = 1;
    bool ok = true;
    for (uint32_t i = 0; i < e->rank && ok; i++) {
        ok = e->dims[i] >= 0 && (e->dims[i] == 0 || numel <= UINT64_MAX / (uint64_t)e->dims[i]);
        numel *= ok ? (uint64_t)e->dims[i] : 1;
    }
    if (!ok || numel > UINT64_MAX / ir_dtype_size(e->dtype) ||
        numel * ir_dtype_size(e->dtype) != e->nbytes ||
        (e->nbytes && !e->data && !(rows && rows_cover(rows, e->nbytes)))) {
        dg_error_path(dg, path, "tensor '%s': %zu bytes of data do not match its shape",
                      e->name, e->nbytes);
        return false;
    }
    return true;
}

/* The header text of `sorted` (by name), given each entry's offset, padded to 8 bytes. */
static void build_header(char_buf *h, const st_entry **sorted, const uint64_t *begin, size_t n)
{
    vec_push(h, '{');
    for (size_t i = 0; i < n; i++) {
        const st_entry *e = sorted[i];
        if (i)
            vec_push(h, ',');
        put_json_string(h, e->name);
        put_str(h, ":{\"dtype\":\"");
        put_str(h, st_dtype_name(e->dtype));
        put_str(h, "\",\"shape\":[");
        for (uint32_t d = 0; d < e->rank; d++) {
            if (d)
                vec_push(h, ',');
            put_u64(h, (uint64_t)e->dims[d]);
        }
        put_str(h, "],\"data_offsets\":[");
        put_u64(h, begin[i]);
        vec_push(h, ',');
        put_u64(h, begin[i] + e->nbytes);
        put_str(h, "]}");
    }
    vec_push(h, '}');
    while (h->len % 8 != 0)
        vec_push(h, ' ');
}

/* An entry's bytes from its rows' parts: the stream's buffer puts each row together. */
static bool write_rows(FILE *out, const st_rows *r)
{
    bool ok = true;
    for (size_t i = 0; i < r->rows && ok; i++) {
        for (uint32_t k = 0; k < r->nparts && ok; k++) {
            size_t width = r->parts[k].row_bytes;
            ok = fwrite((const char *)r->parts[k].src + i * width, 1, width, out) == width;
        }
    }
    return ok;
}

static bool write_all(FILE *out, char_buf *header, const st_entry *entries, const st_rows *rows,
                      const st_entry **layout, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)header->len >> (8 * i));
    bool ok = fwrite(len, 1, 8, out) == 8 &&
              fwrite(header->items, 1, header->len, out) == header->len;
    for (size_t i = 0; i < n && ok; i++) {
        const st_entry *e = layout[i];
        if (e->nbytes && e->data)
            ok = fwrite(e->data, 1, e->nbytes, out) == e->nbytes;
        else if (e->nbytes)
            ok = write_rows(out, &rows[e - entries]);
    }
    return ok && !ferror(out);
}

bool st_write(FILE *out, const char *path, const st_entry *entries, size_t n, dg_context *dg)
{
    return st_write_rows(out, path, entries, NULL, n, dg);
}

bool st_write_rows(FILE *out, const char *path, const st_entry *entries, const st_rows *rows,
                   size_t n, dg_context *dg)
{
    for (size_t i = 0; i < n; i++)
        if (!check_entry(&entries[i], rows ? &rows[i] : NULL, path, dg))
            return false;
    size_t slots = n ? n : 1;
    const st_entry **sorted = malloc(slots * sizeof *sorted);
    const st_entry **layout = malloc(slots * sizeof *layout);
    uint64_t *begin = malloc(slots * sizeof *begin);
    FR_CHECK(sorted && layout && begin);
    for (size_t i = 0; i < n; i++)
        sorted[i] = layout[i] = &entries[i];
    qsort(sorted, n, sizeof *sorted, compare_names);
    qsort(layout, n, sizeof *layout, compare_layout);
    bool ok = true;
    for (size_t i = 1; i < n && ok; i++) {
        if (strcmp(sorted[i]->name, sorted[i - 1]->name) == 0) {
            dg_error_path(dg, path, "two tensors are named \"%s\"", sorted[i]->name);
            ok = false;
        }
    }
    char_buf header = {0};
    if (ok) {
        /* begin[] follows `sorted`; offsets accumulate in layout order */
        uint64_t offset = 0;
        for (size_t i = 0; i < n; i++) {
            const st_entry *e = layout[i];
            const st_entry **at = bsearch(&e, sorted, n, sizeof *sorted, compare_names);
            FR_CHECK(at != NULL);
            begin[at - sorted] = offset;
            offset += e->nbytes;
        }
        build_header(&header, sorted, begin, n);
        ok = header.len <= ST_MAX_HEADER_BYTES;
        if (!ok)
            dg_error_path(dg, path, "too many tensors: the header would exceed %u bytes",
                          ST_MAX_HEADER_BYTES);
    }
    if (ok && !write_all(out, &header, entries, rows, layout, n)) {
        dg_error_path(dg, path, "write failed: %s", strerror(errno));
        ok = false;
    }
    vec_free(&header);
    free(sorted);
    free(layout);
    free(begin);
    return ok;
}
