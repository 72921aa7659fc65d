/* Reading protobuf files defensively, and fast.
 *
 * protobuf-c decodes a hostile file faithfully: it recurses once per nested message (a file of
 * nested attribute graphs overflows the stack) and allocates what the file asks for. It is also
 * slow at scale: it mallocs every message, string and array, and copies every bytes field. So
 * files are decoded here, into protobuf-c's own structs (import reads them as before), by a
 * decoder driven by the message descriptors that checks the wire format and the nesting depth as
 * it goes, allocates from one budgeted arena (a bound proportional to the file's size), copies
 * strings (NUL-terminated, checked to be UTF-8) and leaves every bytes field where it lies in the
 * mapped file: weights are never copied (docs/onnx.md, "Weights").
 *
 * The semantics are protobuf's, as protobuf-c implements them: the last of a repeated scalar
 * field wins, repeated fields accept packed and unpacked elements, a oneof keeps its last member,
 * a message field given twice is the merge of both (decoded here from the two byte ranges put
 * together, which is how protobuf defines the merge), unknown fields are kept. A file protobuf-c
 * refuses (a field of the wrong wire type, a packed array of a bad length, a missing required
 * field) is refused. */
#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "base/mapwatch.h"
#include "base/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decoding expands a file: every message becomes a C struct, every repeated field an array. A
 * generous factor of the file size, plus a fixed allowance for small files, bounds it. */
enum { BUDGET_FACTOR = 8 };
#define BUDGET_EXTRA ((size_t)64 << 20)

/* ---- the budgeted arena --------------------------------------------------------------------- */

/* The decoded tree lives in chunks, freed in one call. Nothing is zeroed: every struct is
 * initialized by its descriptor and every array filled by the decoder. The chunks are small
 * enough for malloc to carve them from its heap rather than map them: once freed, the graph's
 * arena reuses their pages instead of faulting in fresh ones. */
enum { CHUNK_BYTES = 64 * 1024 - 64 };

typedef struct chunk {
    struct chunk *next;
    _Alignas(16) unsigned char data[];
} chunk;

struct ox_decoded {
    ProtobufCMessage *message;
    chunk *chunks;
    unsigned char *free_at;
    size_t free_len;
    size_t limit, used;
    bool exceeded;
    /* the mapped file, which the decoded bytes fields point into */
    uint8_t *map;
    size_t map_len;
    bool lazy;      /* large raw_data may be handed on as mapped (ox_lazy_raw_data) */
    size_t nmapped; /* raw_data fields in the file that ox_lazy_raw_data hands on */
    int fd;         /* the mapped file, for a writer that copies its ranges */
    char *path;     /* its name */
    bool map_given; /* a graph owns the mapping now */
};

static chunk *new_chunk(ox_decoded *d, size_t size)
{
    chunk *c = malloc(sizeof *c + size);
    if (!c)
        return NULL;
    c->next = d->chunks;
    d->chunks = c;
    return c;
}

/* size bytes aligned to `align` (a power of two up to 16); NULL when the budget or the memory
 * runs out. */
static void *budget_alloc(ox_decoded *d, size_t size, size_t align)
{
    if (size > d->limit - d->used) {
        d->exceeded = true;
        return NULL;
    }
    d->used += size;
    size_t pad = (size_t)(-(uintptr_t)d->free_at & (align - 1));
    if (d->free_at && pad + size <= d->free_len) {
        void *p = d->free_at + pad;
        d->free_at += pad + size;
        d->free_len -= pad + size;
        return p;
    }
    if (size > CHUNK_BYTES / 4) { /* a big array gets a chunk of its own */
        chunk *c = new_chunk(d, size);
        if (!c)
            d->exceeded = true;
        return c ? c->data : NULL;
    }
    chunk *c = new_chunk(d, CHUNK_BYTES);
    if (!c) {
        d->exceeded = true;
        return NULL;
    }
    d->free_at = c->data + size;
    d->free_len = CHUNK_BYTES - size;
    return c->data;
}

/* ---- the wire format ------------------------------------------------------------------------ */

/* Errors are kept, not reported, until the decode has failed: then the file is walked once
 * more, depth first and checking only the wire format, and the first error in the file's order
 * is reported (the decoder checks each message's framing before it descends, so the error it
 * met may come later in the file). */
typedef struct {
    ox_report *r;
    ox_decoded *d;
    const uint8_t *base; /* the whole file, for byte offsets in messages */
    const char *top;     /* the file's message type, for messages */
    char error[512];     /* the first error met */
} decoder;

static bool fail(decoder *dc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(decoder *dc, const char *fmt, ...)
{
    if (!dc->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(dc->error, sizeof dc->error, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* One field on the wire. */
typedef struct {
    uint32_t tag;
    unsigned wire;
    const uint8_t *at; /* its key */
    const uint8_t *after_key;
    const uint8_t *data; /* its payload: a varint's bytes, 4 or 8 bytes, or the delimited bytes */
    size_t len;          /* the payload's length */
    uint64_t value;      /* a varint's value */
} wire_field;

enum { WIRE_VARINT = 0, WIRE_64BIT = 1, WIRE_DELIMITED = 2, WIRE_32BIT = 5 };
enum { RAW_DATA_FIELD = 9 }; /* TensorProto.raw_data */
/* Fields a message type of onnx.proto may have (AttributeProto has 18). */
enum { MAX_FIELDS = 32 };

static bool read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
    if (*pos < len && p[*pos] < 0x80) { /* most are one byte */
        *out = p[(*pos)++];
        return true;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return false;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false; /* more than 10 bytes */
}

static size_t offset_of(const decoder *dc, const uint8_t *at)
{
    return (size_t)((uintptr_t)at - (uintptr_t)dc->base);
}

static bool corrupt(decoder *dc, const uint8_t *at, const char *what)
{
    return fail(dc, "truncated or corrupt protobuf: %s at byte %zu", what, offset_of(dc, at));
}

/* What protobuf-c refuses beyond the wire format: a field of the wrong wire type, a packed
 * array that does not divide into elements, a missing required field. */
static bool not_valid(decoder *dc)
{
    return fail(dc, "not a valid %s: the protobuf data is corrupt", dc->top);
}

static bool out_of_budget(decoder *dc)
{
    return fail(dc, "decoding needs more than %zu MiB, more than a file of %zu bytes can "
                    "legitimately need",
                dc->d->limit >> 20, dc->d->map_len);
}

static bool too_deep(decoder *dc, const uint8_t *p)
{
    return fail(dc, "messages are nested more than %d levels deep (at byte %zu)", OX_MAX_NESTING,
                offset_of(dc, p));
}

static bool not_utf8(decoder *dc, const ProtobufCMessageDescriptor *desc,
                     const ProtobufCFieldDescriptor *fd, const uint8_t *at)
{
    return fail(dc, "%s.%s at byte %zu is not UTF-8 or holds a NUL byte", desc->short_name,
                fd->name, offset_of(dc, at));
}

/* Reads the field at p[*pos]: checks that it fits in its message. */
static bool next_field(decoder *dc, const uint8_t *p, size_t len, size_t *pos, wire_field *f)
{
    f->at = p + *pos;
    uint64_t key, size = 0;
    if (!read_varint(p, len, pos, &key))
        return corrupt(dc, f->at, "a field key runs past the end");
    uint64_t tag = key >> 3;
    if (tag == 0 || tag > 0x1fffffff)
        return corrupt(dc, f->at, "an invalid field number");
    f->tag = (uint32_t)tag;
    f->wire = (unsigned)(key & 7);
    f->after_key = p + *pos;
    f->value = 0;
    switch (f->wire) {
    case WIRE_VARINT: {
        size_t start = *pos;
        if (!read_varint(p, len, pos, &f->value))
            return corrupt(dc, f->at, "a varint runs past the end");
        f->data = p + start;
        f->len = *pos - start;
        return true;
    }
    case WIRE_64BIT:
        size = 8;
        break;
    case WIRE_32BIT:
        size = 4;
        break;
    case WIRE_DELIMITED: /* bytes, strings, packed arrays, messages */
        if (!read_varint(p, len, pos, &size))
            return corrupt(dc, f->at, "a length runs past the end");
        break;
    default: /* groups (3, 4) are not used by onnx.proto; 6 and 7 do not exist */
        return corrupt(dc, f->at, "an unknown wire type");
    }
    if (size > len - *pos)
        return corrupt(dc, f->at, "a field runs past the end of its message");
    f->data = p + *pos;
    f->len = (size_t)size;
    *pos += (size_t)size;
    return true;
}

/* Whether p[0..n) is UTF-8 without NUL bytes: protobuf strings must be UTF-8, the decoded strings
 * are C strings (a NUL would cut a name short), and the text form prints names. */
static bool clean_utf8(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* ASCII without NUL, eight bytes at a time */
        uint64_t w;
        memcpy(&w, p + i, 8);
        if ((w | ((w - 0x0101010101010101u) & ~w)) & 0x8080808080808080u)
            break;
    }
    for (; i < n && p[i] && p[i] < 0x80; i++)
        ;
    if (i == n)
        return true;
    return memchr(p + i, 0, n - i) == NULL && utf8_invalid_at(p + i, n - i) == n - i;
}

static const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *desc,
                                                uint32_t tag, unsigned *hint)
{
    /* fields come in number order: the next one, or the same again (a repeated field) */
    for (unsigned k = *hint; k < desc->n_fields && k <= *hint + 1; k++)
        if (desc->fields[k].id == tag) {
            *hint = k;
            return &desc->fields[k];
        }
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, tag);
    if (f)
        *hint = (unsigned)(f - desc->fields);
    return f;
}

static size_t element_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

static bool packable(ProtobufCType type)
{
    return type != PROTOBUF_C_TYPE_STRING && type != PROTOBUF_C_TYPE_BYTES &&
           type != PROTOBUF_C_TYPE_MESSAGE;
}

static bool is_varint_type(ProtobufCType type)
{
    return type == PROTOBUF_C_TYPE_INT32 || type == PROTOBUF_C_TYPE_SINT32 ||
           type == PROTOBUF_C_TYPE_UINT32 || type == PROTOBUF_C_TYPE_INT64 ||
           type == PROTOBUF_C_TYPE_SINT64 || type == PROTOBUF_C_TYPE_UINT64 ||
           type == PROTOBUF_C_TYPE_ENUM || type == PROTOBUF_C_TYPE_BOOL;
}

static unsigned wire_of(ProtobufCType type)
{
    if (is_varint_type(type))
        return WIRE_VARINT;
    if (element_size(type) == 8 && packable(type))
        return WIRE_64BIT;
    return packable(type) ? WIRE_32BIT : WIRE_DELIMITED;
}

/* The elements of a packed array of a scalar type; false when they do not divide it. */
static bool count_packed(ProtobufCType type, const wire_field *f, size_t *count)
{
    if (type == PROTOBUF_C_TYPE_BOOL) { /* one byte each, 0 or 1 (protobuf-c's rule) */
        *count = f->len;
        for (size_t i = 0; i < f->len; i++)
            if (f->data[i] > 1)
                return false;
        return true;
    }
    if (!is_varint_type(type)) {
        size_t size = element_size(type);
        *count = f->len / size;
        return f->len % size == 0;
    }
    size_t n = 0;
    for (size_t pos = 0; pos < f->len; n++) {
        uint64_t v;
        if (!read_varint(f->data, f->len, &pos, &v))
            return false;
    }
    *count = n;
    return true;
}

/* Stores a varint's value as a field of `type`, as protobuf-c converts it. */
static void store_varint(ProtobufCType type, uint64_t v, const uint8_t *bytes, size_t nbytes,
                         void *member)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_UINT32: {
        uint32_t x = (uint32_t)v;
        memcpy(member, &x, 4);
        break;
    }
    case PROTOBUF_C_TYPE_SINT32: {
        uint32_t x = (uint32_t)v;
        int32_t z = (int32_t)(x >> 1) ^ -(int32_t)(x & 1);
        memcpy(member, &z, 4);
        break;
    }
    case PROTOBUF_C_TYPE_SINT64: {
        int64_t z = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
        memcpy(member, &z, 8);
        break;
    }
    case PROTOBUF_C_TYPE_BOOL: { /* any bit set in any byte */
        protobuf_c_boolean b = 0;
        for (size_t i = 0; i < nbytes; i++)
            b |= (bytes[i] & 0x7f) != 0;
        memcpy(member, &b, sizeof b);
        break;
    }
    default: /* INT64, UINT64 */
        memcpy(member, &v, 8);
        break;
    }
}

static bool decode_message(decoder *dc, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                           size_t len, unsigned depth, ProtobufCMessage **out);

/* One element of a field (not packed) at `member`; false after reporting. */
static bool decode_value(decoder *dc, const ProtobufCMessageDescriptor *desc,
                         const ProtobufCFieldDescriptor *fd, const wire_field *f, unsigned depth,
                         void *member)
{
    if (f->wire != wire_of(fd->type))
        return not_valid(dc);
    switch (fd->type) {
    case PROTOBUF_C_TYPE_STRING: {
        if (!clean_utf8(f->data, f->len))
            return not_utf8(dc, desc, fd, f->at);
        char *s = budget_alloc(dc->d, f->len + 1, 1);
        if (!s)
            return out_of_budget(dc);
        memcpy(s, f->data, f->len);
        s[f->len] = '\0';
        *(char **)member = s;
        return true;
    }
    case PROTOBUF_C_TYPE_BYTES: { /* left where it lies */
        ProtobufCBinaryData bd = {f->len, f->len ? (uint8_t *)(uintptr_t)f->data : NULL};
        memcpy(member, &bd, sizeof bd);
        return true;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        return decode_message(dc, fd->descriptor, f->data, f->len, depth + 1,
                              (ProtobufCMessage **)member);
    default:
        if (f->wire == WIRE_VARINT)
            store_varint(fd->type, f->value, f->data, f->len, member);
        else
            memcpy(member, f->data, f->len); /* 4 or 8 bytes, little-endian like the wire */
        return true;
    }
}

/* A packed array's elements, appended at array[*n]. */
static void decode_packed(const ProtobufCFieldDescriptor *fd, const wire_field *f, void *array,
                          size_t *n)
{
    size_t size = element_size(fd->type);
    unsigned char *at = (unsigned char *)array + *n * size;
    if (fd->type == PROTOBUF_C_TYPE_BOOL) {
        for (size_t i = 0; i < f->len; i++, at += size, (*n)++) {
            protobuf_c_boolean b = f->data[i];
            memcpy(at, &b, sizeof b);
        }
        return;
    }
    if (!is_varint_type(fd->type)) {
        if (f->len)
            memcpy(at, f->data, f->len);
        *n += f->len / size;
        return;
    }
    for (size_t pos = 0; pos < f->len; at += size, (*n)++) {
        size_t start = pos;
        uint64_t v;
        FR_CHECK(read_varint(f->data, f->len, &pos, &v)); /* counted before */
        store_varint(fd->type, v, f->data + start, pos - start, at);
    }
}

/* A message field given again: protobuf merges it into the one before, which is the message
 * that the two byte ranges decode to, one after the other. *prev, *prev_len: the bytes decoded
 * so far (in the file, or a buffer of the arena). */
static bool merge_message(decoder *dc, const ProtobufCFieldDescriptor *fd, const wire_field *f,
                          unsigned depth, const uint8_t **prev, size_t *prev_len, void *member)
{
    ProtobufCMessage *alone;
    if (!decode_message(dc, fd->descriptor, f->data, f->len, depth + 1, &alone))
        return false; /* checked on its own, so that errors name offsets in the file */
    if (*prev_len > SIZE_MAX - f->len)
        return out_of_budget(dc);
    uint8_t *both = budget_alloc(dc->d, *prev_len + f->len ? *prev_len + f->len : 1, 1);
    if (!both)
        return out_of_budget(dc);
    if (*prev_len)
        memcpy(both, *prev, *prev_len);
    if (f->len)
        memcpy(both + *prev_len, f->data, f->len);
    *prev = both;
    *prev_len += f->len;
    return decode_message(dc, fd->descriptor, both, *prev_len, depth + 1,
                          (ProtobufCMessage **)member);
}

static bool decode_message(decoder *dc, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                           size_t len, unsigned depth, ProtobufCMessage **out)
{
    if (depth > OX_MAX_NESTING)
        return too_deep(dc, p);
    FR_CHECK(desc->n_fields <= MAX_FIELDS);
    ProtobufCMessage *m = budget_alloc(dc->d, desc->sizeof_message, 16);
    if (!m)
        return out_of_budget(dc);
    protobuf_c_message_init(desc, m);
    unsigned char *base = (unsigned char *)m;

    /* first pass: the framing, and how many elements each repeated field has */
    size_t counts[MAX_FIELDS] = {0};
    bool seen[MAX_FIELDS] = {0};
    size_t unknown = 0;
    unsigned hint = 0;
    wire_field f;
    for (size_t pos = 0; pos < len;) {
        if (!next_field(dc, p, len, &pos, &f))
            return false;
        const ProtobufCFieldDescriptor *fd = field_of(desc, f.tag, &hint);
        if (!fd) {
            unknown++;
            continue;
        }
        seen[hint] = true;
        if (fd->label != PROTOBUF_C_LABEL_REPEATED)
            continue;
        size_t n = 1;
        if (f.wire == WIRE_DELIMITED && packable(fd->type) && !count_packed(fd->type, &f, &n))
            return not_valid(dc);
        counts[hint] += n;
    }
    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &desc->fields[i];
        if (fd->label == PROTOBUF_C_LABEL_REQUIRED && !seen[i] && !fd->default_value)
            return not_valid(dc);
        if (fd->label != PROTOBUF_C_LABEL_REPEATED || !counts[i])
            continue;
        size_t size = element_size(fd->type);
        if (counts[i] > SIZE_MAX / size)
            return out_of_budget(dc);
        void *array = budget_alloc(dc->d, counts[i] * size, size < 8 ? size : 8);
        if (!array)
            return out_of_budget(dc);
        memcpy(base + fd->offset, &array, sizeof array);
    }
    if (unknown) {
        if (unknown > SIZE_MAX / sizeof *m->unknown_fields)
            return out_of_budget(dc);
        m->unknown_fields = budget_alloc(dc->d, unknown * sizeof *m->unknown_fields, 8);
        if (!m->unknown_fields)
            return out_of_budget(dc);
    }

    /* second pass: the values */
    const uint8_t *prev[MAX_FIELDS] = {0}; /* each message field's bytes so far, for merges */
    size_t prev_len[MAX_FIELDS] = {0};
    bool tensor = desc == &onnx__tensor_proto__descriptor;
    hint = 0;
    for (size_t pos = 0; pos < len;) {
        FR_CHECK(next_field(dc, p, len, &pos, &f)); /* checked in the first pass */
        const ProtobufCFieldDescriptor *fd = field_of(desc, f.tag, &hint);
        if (!fd) { /* kept as protobuf-c keeps it (what follows the key), in the file */
            ProtobufCMessageUnknownField *u = &m->unknown_fields[m->n_unknown_fields++];
            u->tag = f.tag;
            u->wire_type = (ProtobufCWireType)f.wire;
            u->data = (uint8_t *)(uintptr_t)f.after_key;
            u->len = (size_t)(f.data + f.len - f.after_key);
            continue;
        }
        void *member = base + fd->offset;
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t *n = (size_t *)(void *)(base + fd->quantifier_offset);
            void *array;
            memcpy(&array, member, sizeof array);
            if (f.wire == WIRE_DELIMITED && packable(fd->type)) {
                decode_packed(fd, &f, array, n);
            } else {
                if (!decode_value(dc, desc, fd, &f, depth,
                                  (unsigned char *)array + *n * element_size(fd->type)))
                    return false;
                (*n)++;
            }
            continue;
        }
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) { /* the last member given wins */
            uint32_t *which = (uint32_t *)(void *)(base + fd->quantifier_offset);
            if (*which) {
                const ProtobufCFieldDescriptor *old =
                    protobuf_c_message_descriptor_get_field(desc, *which);
                memset(member, 0, element_size(old->type));
            }
            if (!decode_value(dc, desc, fd, &f, depth, member))
                return false;
            *which = f.tag;
            continue;
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE && prev[hint]) {
            if (f.wire != WIRE_DELIMITED)
                return not_valid(dc);
            if (!merge_message(dc, fd, &f, depth, &prev[hint], &prev_len[hint], member))
                return false;
        } else {
            if (!decode_value(dc, desc, fd, &f, depth, member))
                return false;
            if (fd->type == PROTOBUF_C_TYPE_MESSAGE)
                prev[hint] = f.data, prev_len[hint] = f.len;
        }
        if (fd->quantifier_offset)
            *(protobuf_c_boolean *)(void *)(base + fd->quantifier_offset) = 1;
        if (tensor && f.tag == RAW_DATA_FIELD && dc->d->lazy && f.len >= OX_LAZY_MIN_BYTES)
            dc->d->nmapped++;
    }
    *out = m;
    return true;
}

/* The wire format alone, depth first, in the file's order: for the first error of a file that
 * failed to decode. */
static bool walk_message(decoder *dc, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                         size_t len, unsigned depth)
{
    if (depth > OX_MAX_NESTING)
        return too_deep(dc, p);
    unsigned hint = 0;
    wire_field f;
    for (size_t pos = 0; pos < len;) {
        if (!next_field(dc, p, len, &pos, &f))
            return false;
        if (f.wire != WIRE_DELIMITED)
            continue;
        const ProtobufCFieldDescriptor *fd = field_of(desc, f.tag, &hint);
        if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE &&
            !walk_message(dc, fd->descriptor, f.data, f.len, depth + 1))
            return false;
        if (fd && fd->type == PROTOBUF_C_TYPE_STRING && !clean_utf8(f.data, f.len))
            return not_utf8(dc, desc, fd, f.at);
    }
    return true;
}

/* ---- reading -------------------------------------------------------------------------------- */
/* Maps the file read-only; *len its size (a map cannot be empty: an empty file is refused), *fd
 * its descriptor, left open. */
static uint8_t *map_file(ox_report *r, size_t *len, int *fd_out)
{
    int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block us */
    if (fd < 0) {
        ox_invalid(r, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ox_invalid(r, "not a regular file");
        close(fd);
        return NULL;
    }
    if (st.st_size > OX_MAX_FILE_BYTES) {
        ox_invalid(r, "file of %lld bytes is larger than protobuf's 2 GiB limit (large weights "
                      "belong in external data files)",
                   (long long)st.st_size);
        close(fd);
        return NULL;
    }
    if (st.st_size == 0) {
        ox_invalid(r, "empty file");
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        ox_invalid(r, "cannot map %zu bytes: %s", size, strerror(errno));
        close(fd);
        return NULL;
    }
    mw_watch(map, size, r->path);
    *len = size;
    *fd_out = fd;
    return map;
}

static ProtobufCMessage *decode(ox_report *r, const ProtobufCMessageDescriptor *desc, bool lazy,
                                ox_decoded **owner)
{
    *owner = NULL;
    size_t len;
    int fd;
    uint8_t *map = map_file(r, &len, &fd);
    if (!map)
        return NULL;
    ox_decoded *d = calloc(1, sizeof *d);
    FR_CHECK(d != NULL);
    d->map = map;
    d->map_len = len;
    d->fd = fd;
    d->lazy = lazy;
    d->limit = len > (SIZE_MAX - BUDGET_EXTRA) / BUDGET_FACTOR
                   ? SIZE_MAX
                   : len * BUDGET_FACTOR + BUDGET_EXTRA;
    decoder dc = {.r = r, .d = d, .base = map, .top = desc->short_name};
    if (!decode_message(&dc, desc, map, len, 1, &d->message)) {
        decoder walk = {.r = r, .d = d, .base = map, .top = desc->short_name};
        ox_invalid(r, "%s", walk_message(&walk, desc, map, len, 1) ? dc.error : walk.error);
        ox_decoded_free(d);
        return NULL;
    }
    if (d->nmapped) { /* a writer copies the tensors left in the file from it by name */
        d->path = strdup(r->path);
        FR_CHECK(d->path != NULL);
    }
    *owner = d;
    return d->message;
}

ProtobufCMessage *ox_decode_file(ox_report *r, const ProtobufCMessageDescriptor *desc,
                                 ox_decoded **owner)
{
    return decode(r, desc, false, owner);
}

ProtobufCMessage *ox_decode_file_lazy(ox_report *r, const ProtobufCMessageDescriptor *desc,
                                      ox_decoded **owner)
{
    return decode(r, desc, true, owner);
}

bool ox_lazy_raw_data(const ox_decoded *d, const ProtobufCMessage *m, const uint8_t **data,
                      size_t *len)
{
    if (!d || !d->lazy)
        return false;
    FR_CHECK(m->descriptor == &onnx__tensor_proto__descriptor);
    const Onnx__TensorProto *t = (const Onnx__TensorProto *)m;
    uintptr_t at = (uintptr_t)t->raw_data.data, map = (uintptr_t)d->map;
    /* a merged tensor's bytes lie in a buffer of the decode, not in the file */
    if (!t->has_raw_data || t->raw_data.len < OX_LAZY_MIN_BYTES || at < map ||
        at - map > d->map_len - t->raw_data.len)
        return false;
    *data = t->raw_data.data;
    *len = t->raw_data.len;
    return true;
}

void ox_decoded_give_mapping(ox_decoded *d, ir_graph *g)
{
    if (!d || !d->nmapped || d->map_given)
        return;
    ir_const_adopt_mapped_file(g, d->map, d->map_len, d->fd, d->path);
    d->map_given = true;
}

void ox_decoded_free(ox_decoded *d)
{
    if (!d)
        return;
    for (chunk *c = d->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    if (d->map && !d->map_given) {
        mw_forget(d->map);
        munmap(d->map, d->map_len);
        close(d->fd);
    }
    free(d->path);
    free(d);
}

/* ---- reporting ------------------------------------------------------------------------------ */

static void report(ox_report *r, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    dg_error_path(r->dg, r->path, "%s", msg);
    if (!r->info->reason[0]) { /* the first error says why, cut to fit */
        size_t n = strnlen(msg, sizeof r->info->reason - 1);
        memcpy(r->info->reason, msg, n);
        r->info->reason[n] = '\0';
    }
}

void ox_invalid(ox_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(r, fmt, ap);
    va_end(ap);
    r->invalid = true;
}

void ox_unsupported(ox_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(r, fmt, ap);
    va_end(ap);
    r->unsupported = true;
}

struct ox_missing_file {
    char *location;
    size_t more; /* tensors after the first that read it */
};

bool ox_missing_seen(ox_report *r, const char *location)
{
    for (size_t i = 0; i < r->nmissing; i++)
        if (strcmp(r->missing[i].location, location) == 0) {
            r->missing[i].more++;
            r->invalid = true;
            return true;
        }
    struct ox_missing_file *grown = realloc(r->missing, (r->nmissing + 1) * sizeof *grown);
    FR_CHECK(grown != NULL);
    r->missing = grown;
    r->missing[r->nmissing].location = strdup(location);
    FR_CHECK(r->missing[r->nmissing].location != NULL);
    r->missing[r->nmissing++].more = 0;
    return false;
}

void ox_report_finish(ox_report *r)
{
    r->info->unsupported = r->unsupported && !r->invalid;
    for (size_t i = 0; i < r->nmissing; i++) {
        if (r->missing[i].more)
            dg_note_path(r->dg, r->path, "%zu more tensor%s read '%s' as well",
                         r->missing[i].more, r->missing[i].more == 1 ? "" : "s",
                         r->missing[i].location);
        free(r->missing[i].location);
    }
    free(r->missing);
    r->missing = NULL;
    r->nmissing = 0;
}
