/* The safetensors reader (see ir/safetensors.h and docs/safetensors.md); the writer is
 * ir/safetensors_write.c.
 *
 * Reading is three steps over the mapped file: the framing (length prefix, size limits, UTF-8), a
 * strict recursive-descent parser that reads the JSON header straight into the tensor table, and
 * the check that the tensors tile the data buffer exactly. */
#include "ir/safetensors.h"

#include "base/arena.h"
#include "base/check.h"
#include "base/hex.h"
#include "base/mapwatch.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- dtypes ---------------------------------------------------------------------------------- */

/* Every dtype of the format, with its width in bits (F4 and F6 pack several elements per byte) and
 * the IR dtype it maps to, if any. */
static const struct {
    const char *name;
    unsigned bits;
    ir_dtype ir;
} dtypes[] = {
    {"BOOL", 8, IR_BOOL},
    {"F4", 4, IR_DTYPE_UNKNOWN},
    {"F6_E2M3", 6, IR_DTYPE_UNKNOWN},
    {"F6_E3M2", 6, IR_DTYPE_UNKNOWN},
    {"U8", 8, IR_U8},
    {"I8", 8, IR_I8},
    {"F8_E5M2", 8, IR_DTYPE_UNKNOWN},
    {"F8_E4M3", 8, IR_DTYPE_UNKNOWN},
    {"F8_E8M0", 8, IR_DTYPE_UNKNOWN},
    {"I16", 16, IR_I16},
    {"U16", 16, IR_U16},
    {"F16", 16, IR_F16},
    {"BF16", 16, IR_BF16},
    {"I32", 32, IR_I32},
    {"U32", 32, IR_U32},
    {"F32", 32, IR_F32},
    {"C64", 64, IR_DTYPE_UNKNOWN},
    {"F64", 64, IR_F64},
    {"I64", 64, IR_I64},
    {"U64", 64, IR_U64},
};

static int find_dtype(const char *name)
{
    for (size_t i = 0; i < FR_COUNT_OF(dtypes); i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return (int)i;
    return -1;
}

const char *st_dtype_name(ir_dtype dt)
{
    for (size_t i = 0; i < FR_COUNT_OF(dtypes); i++)
        if (dtypes[i].ir == dt && dt != IR_DTYPE_UNKNOWN)
            return dtypes[i].name;
    return NULL;
}

/* ---- the header: a strict JSON parser for exactly the safetensors schema ---------------------- *
 *
 * Recursive descent in the shape of the format: the header object, each tensor entry, its shape
 * and offset arrays, the metadata object. Values are checked where they are read, so nothing is
 * built but the tensor table itself: memory stays a small multiple of the header's size, however
 * hostile the header. Nesting beyond the schema is refused by construction (no level accepts an
 * object or array where the schema has none). */

/* The most dimensions a tensor may have: far above any real tensor, and it bounds the memory one
 * shape can take. */
enum { ST_MAX_RANK = 64 };

struct st_file {
    ar_arena *arena;
    const char *path;
    void *map; /* the mapping st_open made, or NULL */
    size_t map_len;
    st_tensor **tensors; /* header order */
    size_t count;
    sm_map by_name;
    sm_map metadata; /* key -> value string */
};

typedef struct {
    const char *s; /* the header text */
    size_t len, pos;
    st_file *file;
    dg_context *dg;
    const unsigned char *data; /* the data buffer */
    size_t data_len;
    VEC(st_tensor *) tensors;
    VEC(int64_t) dims; /* scratch for the shape being read */
} reader;

/* What a number lexeme is: only NUM_UINT is ever accepted; the others make better messages. */
typedef enum { NUM_UINT, NUM_NEGATIVE, NUM_FRACTION, NUM_TOO_LARGE } num_class;

typedef struct {
    size_t offset, len; /* the lexeme, in the header */
    num_class cls;
    uint64_t u; /* when NUM_UINT */
} number;

/* What begins at the current position. */
typedef enum { AT_NONE, AT_OBJECT, AT_ARRAY, AT_STRING, AT_NUMBER } value_start;

static bool syntax_error(reader *r, size_t pos, const char *message)
{
    dg_error_path(r->dg, r->file->path, "header is not valid JSON: %s (byte %zu of the header)",
                  message, pos);
    return false;
}

static void skip_space(reader *r)
{
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
            break;
        r->pos++;
    }
}

/* Skips spaces and says what kind of value starts there; reports text that starts no value. */
static value_start peek_value(reader *r)
{
    skip_space(r);
    if (r->pos >= r->len) {
        syntax_error(r, r->pos, "unexpected end of header");
        return AT_NONE;
    }
    char c = r->s[r->pos];
    if (c == '{')
        return AT_OBJECT;
    if (c == '[')
        return AT_ARRAY;
    if (c == '"')
        return AT_STRING;
    if (c == '-' || (c >= '0' && c <= '9'))
        return AT_NUMBER;
    if (c == 't' || c == 'f' || c == 'n')
        syntax_error(r, r->pos, "true, false and null are not allowed");
    else
        syntax_error(r, r->pos, "expected a value");
    return AT_NONE;
}

/* The four hex digits of a \u escape at r->pos. */
static bool read_hex4(reader *r, uint32_t *out)
{
    if (r->len - r->pos < 4)
        return syntax_error(r, r->pos, "invalid \\u escape");
    uint32_t u = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(r->s[r->pos + (size_t)i]);
        if (d < 0)
            return syntax_error(r, r->pos, "invalid \\u escape");
        u = u * 16 + (uint32_t)d;
    }
    r->pos += 4;
    *out = u;
    return true;
}

static void put_utf8(char *out, size_t *n, uint32_t cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xc0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xe0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*n)++] = (char)(0xf0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* The code point of a \u escape (r->pos just past the 'u'), joining a surrogate pair. NUL is
 * refused: names and metadata are C strings. */
static bool read_escaped_code_point(reader *r, uint32_t *cp)
{
    size_t start = r->pos - 2;
    if (!read_hex4(r, cp))
        return false;
    if (*cp >= 0xdc00 && *cp <= 0xdfff)
        return syntax_error(r, start, "unpaired surrogate in a \\u escape");
    if (*cp >= 0xd800 && *cp <= 0xdbff) {
        uint32_t low;
        if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
            return syntax_error(r, start, "unpaired surrogate in a \\u escape");
        r->pos += 2;
        if (!read_hex4(r, &low))
            return false;
        if (low < 0xdc00 || low > 0xdfff)
            return syntax_error(r, start, "unpaired surrogate in a \\u escape");
        *cp = 0x10000 + ((*cp - 0xd800) << 10) + (low - 0xdc00);
    }
    if (*cp == 0)
        return syntax_error(r, start, "NUL character in a string");
    return true;
}

/* The string at r->pos (its opening quote), decoded into the file's arena. The decoded text is
 * never longer than its source. */
static bool parse_string(reader *r, const char **out, size_t *out_len)
{
    size_t start = r->pos++;
    size_t end = r->pos;
    while (end < r->len && r->s[end] != '"')
        end += r->s[end] == '\\' ? 2 : 1;
    if (end >= r->len)
        return syntax_error(r, start, "unterminated string");
    char *text = ar_alloc(r->file->arena, end - r->pos + 1);
    size_t n = 0;
    while (r->s[r->pos] != '"') {
        unsigned char c = (unsigned char)r->s[r->pos];
        if (c < 0x20)
            return syntax_error(r, r->pos,
                                c ? "control character in a string" : "NUL character in a string");
        r->pos++;
        if (c != '\\') {
            text[n++] = (char)c;
            continue;
        }
        static const char escapes[] = "\"\\/bfnrt", meanings[] = "\"\\/\b\f\n\r\t";
        char e = r->s[r->pos++];
        const char *simple = e ? strchr(escapes, e) : NULL;
        if (e == 'u') {
            uint32_t cp;
            if (!read_escaped_code_point(r, &cp))
                return false;
            put_utf8(text, &n, cp);
        } else if (simple) {
            text[n++] = meanings[simple - escapes];
        } else {
            return syntax_error(r, r->pos - 2, "invalid escape in a string");
        }
    }
    r->pos++;
    text[n] = '\0';
    *out = text;
    *out_len = n;
    return true;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Digits at r->pos; false when there are none. */
static bool skip_digits(reader *r)
{
    size_t start = r->pos;
    while (r->pos < r->len && is_digit(r->s[r->pos]))
        r->pos++;
    return r->pos > start;
}

/* A number by JSON's grammar, classified so that the caller can say what is wrong with it. */
static bool parse_number(reader *r, number *out)
{
    size_t start = r->pos;
    bool negative = r->s[r->pos] == '-';
    if (negative)
        r->pos++;
    size_t int_start = r->pos;
    if (!skip_digits(r))
        return syntax_error(r, start, "invalid number");
    if (r->s[int_start] == '0' && r->pos - int_start > 1)
        return syntax_error(r, start, "invalid number (leading zero)");
    uint64_t u = 0;
    bool too_large = false;
    for (size_t i = int_start; i < r->pos; i++) {
        unsigned d = (unsigned)(r->s[i] - '0');
        too_large = too_large || u > (UINT64_MAX - d) / 10;
        u = too_large ? 0 : u * 10 + d;
    }
    bool fraction = false;
    if (r->pos < r->len && r->s[r->pos] == '.') {
        r->pos++;
        fraction = true;
        if (!skip_digits(r))
            return syntax_error(r, start, "invalid number");
    }
    if (r->pos < r->len && (r->s[r->pos] == 'e' || r->s[r->pos] == 'E')) {
        r->pos++;
        fraction = true;
        if (r->pos < r->len && (r->s[r->pos] == '+' || r->s[r->pos] == '-'))
            r->pos++;
        if (!skip_digits(r))
            return syntax_error(r, start, "invalid number");
    }
    out->offset = start;
    out->len = r->pos - start;
    out->cls = negative    ? NUM_NEGATIVE
               : fraction  ? NUM_FRACTION
               : too_large ? NUM_TOO_LARGE
                           : NUM_UINT;
    out->u = u;
    return true;
}

/* Members of an object, after its '{': 1 with the next key and its ':' read, 0 after the closing
 * brace, -1 after reporting an error. *first is true before the first member. */
static int next_key(reader *r, bool *first, const char **key, size_t *key_len, size_t *key_pos)
{
    skip_space(r);
    if (r->pos < r->len && r->s[r->pos] == '}') {
        r->pos++;
        return 0;
    }
    if (!*first) {
        if (r->pos >= r->len || r->s[r->pos] != ',') {
            syntax_error(r, r->pos, "expected ',' or '}'");
            return -1;
        }
        r->pos++;
        skip_space(r);
    }
    *first = false;
    if (r->pos >= r->len || r->s[r->pos] != '"') {
        syntax_error(r, r->pos, "expected a string key");
        return -1;
    }
    *key_pos = r->pos;
    if (!parse_string(r, key, key_len))
        return -1;
    skip_space(r);
    if (r->pos >= r->len || r->s[r->pos] != ':') {
        syntax_error(r, r->pos, "expected ':'");
        return -1;
    }
    r->pos++;
    return 1;
}

/* Elements of an array, after its '[': 1 when another element follows, 0 after the closing
 * bracket, -1 after reporting an error. */
static int next_element(reader *r, bool *first)
{
    skip_space(r);
    if (r->pos < r->len && r->s[r->pos] == ']') {
        r->pos++;
        return 0;
    }
    if (!*first) {
        if (r->pos >= r->len || r->s[r->pos] != ',') {
            syntax_error(r, r->pos, "expected ',' or ']'");
            return -1;
        }
        r->pos++;
    }
    *first = false;
    return 1;
}

/* Why a number is not a non-negative integer, for "shape dimension -3 is negative". */
static const char *number_problem(const number *n)
{
    switch (n->cls) {
    case NUM_NEGATIVE:
        return "is negative";
    case NUM_FRACTION:
        return "is not an integer";
    case NUM_TOO_LARGE:
        return "is too large";
    case NUM_UINT:
        break;
    }
    FR_UNREACHABLE();
    return "";
}

/* ---- tensor entries -------------------------------------------------------------------------- */

/* "[2,3,4]" for messages. */
static const char *format_shape(ar_arena *arena, const int64_t *dims, uint32_t rank)
{
    VEC(char) buf = {0};
    vec_push(&buf, '[');
    for (uint32_t i = 0; i < rank; i++) {
        char num[24];
        int n = snprintf(num, sizeof num, "%s%" PRId64, i ? "," : "", dims[i]);
        for (int k = 0; k < n; k++)
            vec_push(&buf, num[k]);
    }
    vec_push(&buf, ']');
    const char *s = ar_strndup(arena, buf.items, buf.len);
    vec_free(&buf);
    return s;
}

static bool read_dtype(reader *r, st_tensor *t)
{
    value_start at = peek_value(r);
    if (at == AT_NONE)
        return false;
    const char *name;
    size_t len;
    if (at != AT_STRING) {
        dg_error_path(r->dg, r->file->path, "tensor '%s': dtype must be a string", t->name);
        return false;
    }
    if (!parse_string(r, &name, &len))
        return false;
    int d = find_dtype(name);
    if (d < 0) {
        dg_error_path(r->dg, r->file->path, "tensor '%s': unknown dtype \"%s\"", t->name, name);
        return false;
    }
    t->dtype_name = dtypes[d].name;
    t->dtype = dtypes[d].ir;
    return true;
}

static bool read_shape(reader *r, st_tensor *t)
{
    value_start at = peek_value(r);
    if (at == AT_NONE)
        return false;
    if (at != AT_ARRAY) {
        dg_error_path(r->dg, r->file->path, "tensor '%s': shape must be an array", t->name);
        return false;
    }
    r->pos++;
    r->dims.len = 0;
    bool first = true;
    int more;
    while ((more = next_element(r, &first)) == 1) {
        number n;
        if ((at = peek_value(r)) == AT_NONE)
            return false;
        if (at != AT_NUMBER) {
            dg_error_path(r->dg, r->file->path, "tensor '%s': shape must hold integers", t->name);
            return false;
        }
        if (!parse_number(r, &n))
            return false;
        if (n.cls == NUM_UINT && n.u > (uint64_t)INT64_MAX)
            n.cls = NUM_TOO_LARGE;
        if (n.cls != NUM_UINT) {
            dg_error_path(r->dg, r->file->path, "tensor '%s': shape dimension %.*s %s", t->name,
                          (int)n.len, r->s + n.offset, number_problem(&n));
            return false;
        }
        if (r->dims.len == ST_MAX_RANK) {
            dg_error_path(r->dg, r->file->path, "tensor '%s': shape has more than %d dimensions",
                          t->name, ST_MAX_RANK);
            return false;
        }
        vec_push(&r->dims, (int64_t)n.u);
    }
    if (more < 0)
        return false;
    int64_t *dims = ar_alloc_array(r->file->arena, r->dims.len, sizeof *dims);
    if (r->dims.len)
        memcpy(dims, r->dims.items, r->dims.len * sizeof *dims);
    t->rank = (uint32_t)r->dims.len;
    t->dims = dims;
    return true;
}

static bool read_offsets(reader *r, st_tensor *t)
{
    const char *shape_error = "tensor '%s': data_offsets must be an array of two integers";
    value_start at = peek_value(r);
    if (at == AT_NONE)
        return false;
    if (at != AT_ARRAY) {
        dg_error_path(r->dg, r->file->path, shape_error, t->name);
        return false;
    }
    r->pos++;
    uint64_t offsets[2];
    size_t count = 0;
    bool first = true;
    int more;
    while ((more = next_element(r, &first)) == 1) {
        number n;
        if ((at = peek_value(r)) == AT_NONE)
            return false;
        if (at != AT_NUMBER || count == 2) {
            dg_error_path(r->dg, r->file->path, shape_error, t->name);
            return false;
        }
        if (!parse_number(r, &n))
            return false;
        if (n.cls != NUM_UINT) {
            dg_error_path(r->dg, r->file->path, "tensor '%s': data offset %.*s %s", t->name,
                          (int)n.len, r->s + n.offset, number_problem(&n));
            return false;
        }
        offsets[count++] = n.u;
    }
    if (more < 0)
        return false;
    if (count != 2) {
        dg_error_path(r->dg, r->file->path, shape_error, t->name);
        return false;
    }
    t->begin = offsets[0];
    t->end = offsets[1];
    if (t->begin > t->end) {
        dg_error_path(r->dg, r->file->path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
                      t->name, t->begin, t->end);
        return false;
    }
    return true;
}

/* The byte size the shape and dtype call for, overflow-checked. */
static bool shape_bytes(reader *r, const st_tensor *t, uint64_t *bytes)
{
    unsigned bits = dtypes[find_dtype(t->dtype_name)].bits;
    uint64_t numel = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        uint64_t d = (uint64_t)t->dims[i];
        if (d != 0 && numel > UINT64_MAX / d) {
            dg_error_path(r->dg, r->file->path,
                          "tensor '%s': the element count of shape %s overflows", t->name,
                          format_shape(r->file->arena, t->dims, t->rank));
            return false;
        }
        numel *= d;
    }
    if (numel > UINT64_MAX / bits) {
        dg_error_path(r->dg, r->file->path, "tensor '%s': the byte size of shape %s overflows",
                      t->name, format_shape(r->file->arena, t->dims, t->rank));
        return false;
    }
    if (numel * bits % 8 != 0) {
        dg_error_path(r->dg, r->file->path,
                      "tensor '%s': shape %s of dtype %s is not a whole number of bytes", t->name,
                      format_shape(r->file->arena, t->dims, t->rank), t->dtype_name);
        return false;
    }
    *bytes = numel * bits / 8;
    return true;
}

/* One tensor's size against its offsets and the data buffer. */
static bool check_extent(reader *r, st_tensor *t)
{
    uint64_t bytes;
    if (!shape_bytes(r, t, &bytes))
        return false;
    if (t->end - t->begin != bytes) {
        dg_error_path(r->dg, r->file->path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                      " bytes but shape %s of dtype %s needs %" PRIu64,
                      t->name, t->begin, t->end, t->end - t->begin,
                      format_shape(r->file->arena, t->dims, t->rank), t->dtype_name, bytes);
        return false;
    }
    if (t->end > r->data_len) {
        dg_error_path(r->dg, r->file->path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] run past the end of the data buffer (%zu bytes)",
                      t->name, t->begin, t->end, r->data_len);
        return false;
    }
    t->data = r->data + t->begin;
    t->nbytes = (size_t)bytes;
    return true;
}

/* A tensor entry: an object with exactly the fields dtype, shape and data_offsets. */
static bool read_tensor(reader *r, st_tensor *t)
{
    static const char *const fields[] = {"dtype", "shape", "data_offsets"};
    static bool (*const readers[])(reader *, st_tensor *) = {read_dtype, read_shape, read_offsets};
    value_start at = peek_value(r);
    if (at == AT_NONE)
        return false;
    if (at != AT_OBJECT) {
        dg_error_path(r->dg, r->file->path, "tensor '%s': entry must be an object", t->name);
        return false;
    }
    r->pos++;
    bool seen[3] = {false, false, false}, first = true;
    const char *key;
    size_t key_len, key_pos;
    int more;
    while ((more = next_key(r, &first, &key, &key_len, &key_pos)) == 1) {
        size_t f = 0;
        while (f < 3 && strcmp(key, fields[f]) != 0)
            f++;
        if (f == 3) {
            dg_error_path(r->dg, r->file->path, "tensor '%s': unknown field \"%s\"", t->name, key);
            return false;
        }
        if (seen[f])
            return syntax_error(r, key_pos,
                                ar_printf(r->file->arena, "duplicate key \"%s\"", key));
        seen[f] = true;
        if (!readers[f](r, t))
            return false;
    }
    if (more < 0)
        return false;
    for (size_t f = 0; f < 3; f++) {
        if (!seen[f]) {
            dg_error_path(r->dg, r->file->path, "tensor '%s': missing field \"%s\"", t->name,
                          fields[f]);
            return false;
        }
    }
    return check_extent(r, t);
}

/* "__metadata__": an object of string values. */
static bool read_metadata(reader *r)
{
    value_start at = peek_value(r);
    if (at == AT_NONE)
        return false;
    if (at != AT_OBJECT) {
        dg_error_path(r->dg, r->file->path, "__metadata__ must be an object");
        return false;
    }
    r->pos++;
    bool first = true;
    const char *key, *value;
    size_t key_len, value_len, key_pos;
    int more;
    while ((more = next_key(r, &first, &key, &key_len, &key_pos)) == 1) {
        if (sm_get(&r->file->metadata, key, key_len))
            return syntax_error(r, key_pos,
                                ar_printf(r->file->arena, "duplicate key \"%s\"", key));
        if ((at = peek_value(r)) == AT_NONE)
            return false;
        if (at != AT_STRING) {
            dg_error_path(r->dg, r->file->path, "__metadata__ value of \"%s\" must be a string",
                          key);
            return false;
        }
        if (!parse_string(r, &value, &value_len))
            return false;
        sm_put(&r->file->metadata, key, key_len, (void *)value);
    }
    return more == 0;
}

/* Orders tensors by where their data begins (empty tensors before the one that starts there). */
static int compare_extents(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The tensors' data must cover the data buffer exactly once: a gap could hide data, an overlap
 * lets two tensors alias, and trailing bytes are data that no tensor owns. */
static bool check_tiling(reader *r)
{
    st_file *f = r->file;
    const st_tensor **order = malloc((f->count ? f->count : 1) * sizeof *order);
    FR_CHECK(order != NULL);
    for (size_t i = 0; i < f->count; i++)
        order[i] = f->tensors[i];
    qsort(order, f->count, sizeof *order, compare_extents);
    bool ok = true;
    const st_tensor *prev = NULL;
    uint64_t covered = 0;
    for (size_t i = 0; i < f->count && ok; i++) {
        const st_tensor *t = order[i];
        if (t->begin > covered) {
            if (prev)
                dg_error_path(r->dg, f->path,
                              "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                              "] leave a gap after tensor '%s', which ends at %" PRIu64,
                              t->name, t->begin, t->end, prev->name, covered);
            else
                dg_error_path(r->dg, f->path,
                              "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                              "] leave a gap at the start of the data buffer",
                              t->name, t->begin, t->end);
            ok = false;
        } else if (t->begin < covered) {
            dg_error_path(r->dg, f->path,
                          "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                          "] overlap tensor '%s' [%" PRIu64 ", %" PRIu64 "]",
                          t->name, t->begin, t->end, prev->name, prev->begin, prev->end);
            ok = false;
        }
        if (t->end > t->begin || !prev) {
            prev = t;
            covered = t->end;
        }
    }
    if (ok && covered != r->data_len) {
        dg_error_path(r->dg, f->path,
                      "the data buffer has %zu bytes but the tensors cover only %" PRIu64,
                      r->data_len, covered);
        ok = false;
    }
    free(order);
    return ok;
}

/* The header object: tensor entries and at most one "__metadata__". */
static bool read_header(reader *r)
{
    if (r->len == 0 || r->s[0] != '{') {
        dg_error_path(r->dg, r->file->path, "header is not a JSON object (it must start with '{')");
        return false;
    }
    r->pos = 1;
    bool first = true, seen_metadata = false;
    const char *key;
    size_t key_len, key_pos;
    int more;
    while ((more = next_key(r, &first, &key, &key_len, &key_pos)) == 1) {
        bool metadata = strcmp(key, "__metadata__") == 0;
        if ((metadata && seen_metadata) || sm_get(&r->file->by_name, key, key_len))
            return syntax_error(r, key_pos,
                                ar_printf(r->file->arena, "duplicate key \"%s\"", key));
        if (metadata) {
            seen_metadata = true;
            if (!read_metadata(r))
                return false;
            continue;
        }
        st_tensor *t = ar_alloc(r->file->arena, sizeof *t);
        t->name = key;
        if (!read_tensor(r, t))
            return false;
        sm_put(&r->file->by_name, key, key_len, t);
        vec_push(&r->tensors, t);
    }
    if (more < 0)
        return false;
    skip_space(r);
    if (r->pos < r->len) /* the format pads with spaces; anything else is not ours */
        return syntax_error(r, r->pos, "unexpected text after the header object");
    return true;
}

static uint64_t read_le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* The framing: the length prefix and the limits on the header. */
static bool check_framing(const unsigned char *bytes, size_t len, const char *path,
                          dg_context *dg, size_t *header_len)
{
    if (len < 8) {
        dg_error_path(dg, path,
                      "file is too short for safetensors (%zu bytes; the header length alone "
                      "takes 8)",
                      len);
        return false;
    }
    uint64_t n = read_le64(bytes);
    if (n > ST_MAX_HEADER_BYTES) {
        dg_error_path(dg, path, "header length %" PRIu64 " exceeds the limit of %u bytes", n,
                      ST_MAX_HEADER_BYTES);
        return false;
    }
    if (n > len - 8) {
        dg_error_path(dg, path,
                      "header length %" PRIu64 " runs past the end of the file (%zu bytes follow "
                      "the length)",
                      n, len - 8);
        return false;
    }
    *header_len = (size_t)n;
    return true;
}

st_file *st_open_memory(const void *bytes, size_t len, const char *path, dg_context *dg)
{
    const unsigned char *b = bytes;
    size_t header_len;
    if (!check_framing(b, len, path, dg, &header_len))
        return NULL;
    size_t bad = utf8_invalid_at(b + 8, header_len);
    if (bad < header_len) {
        dg_error_path(dg, path, "header is not valid UTF-8 (byte %zu of the header)", bad);
        return NULL;
    }
    ar_arena *arena = ar_new();
    st_file *f = ar_alloc(arena, sizeof *f);
    f->arena = arena;
    f->path = ar_strdup(arena, path);
    reader r = {.s = (const char *)b + 8, .len = header_len, .file = f, .dg = dg,
                .data = b + 8 + header_len, .data_len = len - 8 - header_len};
    bool ok = read_header(&r);
    f->count = r.tensors.len;
    f->tensors = ar_alloc_array(arena, f->count, sizeof *f->tensors);
    if (f->count)
        memcpy(f->tensors, r.tensors.items, f->count * sizeof *f->tensors);
    vec_free(&r.tensors);
    vec_free(&r.dims);
    if (!ok || !check_tiling(&r)) {
        st_close(f);
        return NULL;
    }
    return f;
}

st_file *st_open(const char *path, dg_context *dg)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block us */
    if (fd < 0) {
        dg_error_path(dg, path, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        dg_error_path(dg, path, "not a regular file");
        close(fd);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    if (len < 8) { /* too short for the format; read it only to report it (a map cannot be empty) */
        unsigned char small[8];
        ssize_t got = read(fd, small, len);
        close(fd);
        return st_open_memory(small, got > 0 ? (size_t)got : 0, path, dg);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        dg_error_path(dg, path, "cannot map: %s", strerror(errno));
        return NULL;
    }
    mw_watch(map, len, path);
    st_file *f = st_open_memory(map, len, path, dg);
    if (!f) {
        mw_forget(map);
        munmap(map, len);
        return NULL;
    }
    f->map = map;
    f->map_len = len;
    return f;
}

void st_close(st_file *f)
{
    if (!f)
        return;
    if (f->map) {
        mw_forget(f->map);
        munmap(f->map, f->map_len);
    }
    sm_free(&f->by_name);
    sm_free(&f->metadata);
    ar_free(f->arena);
}

const char *st_path(const st_file *f)
{
    return f->path;
}

size_t st_count(const st_file *f)
{
    return f->count;
}

const st_tensor *st_at(const st_file *f, size_t index)
{
    FR_CHECK(index < f->count);
    return f->tensors[index];
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    return sm_get(&f->by_name, name, strlen(name));
}

const char *st_metadata(const st_file *f, const char *key)
{
    return sm_get(&f->metadata, key, strlen(key));
}

bool st_maps(const st_file *f, const void *p, size_t n)
{
    uintptr_t base = (uintptr_t)f->map, at = (uintptr_t)p;
    return f->map && at >= base && at - base <= f->map_len && n <= f->map_len - (at - base);
}
