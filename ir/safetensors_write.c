/* The safetensors writer (ir/safetensors.h, st_write): a deterministic header and data layout. The
 * reader is ir/safetensors.c. */
#include "ir/safetensors.h"

#include "base/check.h"
#include "base/json.h"
#include "base/mapwatch.h"
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

/* Sorting by name: each entry's first 8 bytes as a big-endian number (zeros after the end) order
 * the names as strcmp does, so a radix sort on them sorts by name but for names that share their
 * first 8 bytes; those runs are sorted by strcmp. The header of a graph's 166k folded constants
 * was sorted twice by strcmp through qsort and looked up by bsearch, a tenth of writing it. */
typedef struct {
    uint64_t key;
    const st_entry *e;
} name_key;

static uint64_t name_prefix(const char *name)
{
    uint64_t key = 0;
    size_t i = 0;
    for (; i < 8 && name[i]; i++)
        key = key << 8 | (unsigned char)name[i];
    return key << (8 * (8 - i));
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(((const name_key *)a)->e->name, ((const name_key *)b)->e->name);
}

/* Sorts k[0..n) by name (tmp: room for n more): a least-significant-byte-first radix sort of the
 * keys, skipping the bytes in which all keys agree, then strcmp within a run of equal keys whose
 * names go on past them. */
static void sort_by_name(name_key *k, name_key *tmp, size_t n)
{
    uint64_t all_and = UINT64_MAX, all_or = 0;
    for (size_t i = 0; i < n; i++) {
        all_and &= k[i].key;
        all_or |= k[i].key;
    }
    name_key *src = k, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if ((((all_and ^ all_or) >> shift) & 0xff) == 0)
            continue; /* every key has the same byte here */
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i].key >> shift) & 0xff) + 1]++;
        for (unsigned d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].key >> shift) & 0xff]++] = src[i];
        name_key *t = src;
        src = dst;
        dst = t;
    }
    if (src != k)
        memcpy(k, src, n * sizeof *k);
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        while (end < n && k[end].key == k[i].key)
            end++;
        if (end - i > 1 && (k[i].key & 0xff) != 0) /* 8 bytes alike, and more to compare */
            qsort(k + i, end - i, sizeof *k, compare_names);
        i = end;
    }
}

static bool has_size(const size_t *sizes, size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++)
        if (sizes[i] == size)
            return true;
    return false;
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
    name_key *keys = malloc(2 * slots * sizeof *keys);
    FR_CHECK(sorted && layout && begin && keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (name_key){name_prefix(entries[i].name), &entries[i]};
    sort_by_name(keys, keys + slots, n);
    for (size_t i = 0; i < n; i++)
        sorted[i] = keys[i].e;
    bool ok = true;
    for (size_t i = 1; i < n && ok; i++) {
        if (keys[i].key == keys[i - 1].key && strcmp(sorted[i]->name, sorted[i - 1]->name) == 0) {
            dg_error_path(dg, path, "two tensors are named \"%s\"", sorted[i]->name);
            ok = false;
        }
    }
    free(keys);
    char_buf header = {0};
    if (ok) {
        /* The data in layout order: wider elements first so that every tensor stays aligned,
         * then by name: `sorted` taken apart by element size, widest first, each part in order.
         * begin[] follows `sorted`. */
        size_t sizes[IR_DTYPE_COUNT], nsizes = 0, placed = 0;
        bool present[IR_DTYPE_COUNT] = {false};
        for (size_t i = 0; i < n; i++)
            present[sorted[i]->dtype] = true;
        for (int d = 0; d < IR_DTYPE_COUNT; d++) {
            size_t size = ir_dtype_size((ir_dtype)d), at = nsizes;
            if (!present[d] || has_size(sizes, nsizes, size))
                continue;
            while (at > 0 && sizes[at - 1] < size) /* descending */
                at--;
            memmove(sizes + at + 1, sizes + at, (nsizes - at) * sizeof *sizes);
            sizes[at] = size;
            nsizes++;
        }
        uint64_t offset = 0;
        for (size_t k = 0; k < nsizes; k++)
            for (size_t i = 0; i < n; i++) {
                if (ir_dtype_size(sorted[i]->dtype) != sizes[k])
                    continue;
                layout[placed++] = sorted[i];
                begin[i] = offset;
                offset += sorted[i]->nbytes;
            }
        FR_CHECK(placed == n);
        build_header(&header, sorted, begin, n);
        ok = header.len <= ST_MAX_HEADER_BYTES;
        if (!ok)
            dg_error_path(dg, path, "too many tensors: the header would exceed %u bytes",
                          ST_MAX_HEADER_BYTES);
    }
    if (ok && !write_all(out, &header, entries, rows, layout, n)) {
        dg_error_path(dg, path, "write failed: %s", mw_write_error(errno));
        ok = false;
    }
    vec_free(&header);
    free(sorted);
    free(layout);
    free(begin);
    return ok;
}
