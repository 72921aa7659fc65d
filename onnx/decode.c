/* Reading protobuf files defensively.
 *
 * protobuf-c decodes a hostile file faithfully: it recurses once per nested message (a file of
 * nested attribute graphs overflows the stack) and allocates what the file asks for. So a file is
 * first walked without decoding, checking the wire format against the message descriptors and
 * capping the nesting depth; then it is decoded with an allocator that refuses to hand out more
 * than a budget proportional to the file's size. */
#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "base/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decoding expands a file: every message becomes a C struct, every repeated field an array. A
 * generous factor of the file size, plus a fixed allowance for small files, bounds it. */
enum { BUDGET_FACTOR = 8 };
#define BUDGET_EXTRA ((size_t)64 << 20)

/* ---- the budgeted allocator ----------------------------------------------------------------- */

/* Each block carries its size in front, so that frees give the budget back. */
typedef union {
    size_t size;
    max_align_t align;
} block_header;

struct ox_decoded {
    ProtobufCAllocator allocator;
    ProtobufCMessage *message;
    size_t limit, used;
    bool exceeded;
    /* a lazy decode's file, kept mapped while tensors are left in it */
    uint8_t *map;
    size_t map_len;
    int fd;     /* the mapped file, for a writer that copies its ranges */
    char *path; /* its name */
    ox_lazy_range *ranges;
    size_t nranges;
    bool map_given; /* a graph owns the mapping now */
};

static void *budget_alloc(void *data, size_t size)
{
    ox_decoded *d = data;
    if (size > d->limit - d->used || size > SIZE_MAX - sizeof(block_header)) {
        d->exceeded = true;
        return NULL;
    }
    block_header *h = malloc(sizeof *h + size);
    if (!h) {
        d->exceeded = true;
        return NULL;
    }
    h->size = size;
    d->used += size;
    return h + 1;
}

static void budget_free(void *data, void *p)
{
    if (!p)
        return;
    ox_decoded *d = data;
    block_header *h = (block_header *)p - 1;
    d->used -= h->size;
    free(h);
}

/* ---- the wire-format walk ------------------------------------------------------------------- */

/* A lazy walk also writes a skeleton of the file: the same messages, except that each large
 * TensorProto.raw_data is replaced by a marker field (OX_LAZY_TAG, fixed64: the range's index)
 * and its bytes stay in the mapped file. Protobuf-c copies every bytes field it decodes; the
 * skeleton gives it only what import reads. It takes two passes: the first checks the file and
 * measures every rewritten message; the second writes them, in the same order. */
typedef struct {
    ox_report *r;
    const uint8_t *base; /* the whole file, for byte offsets in messages */
    bool lazy;
    VEC(size_t) sizes;         /* pass 1: each sub-message's rewritten length, in walk order */
    VEC(ox_lazy_range) ranges; /* pass 1: the raw_data fields left in the file, in walk order */
    uint8_t *out;              /* pass 2: the skeleton, written at out_len */
    size_t out_len, next_size, next_range;
} walker;

enum { RAW_DATA_FIELD = 9 }; /* TensorProto.raw_data */

static bool read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
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

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

static void emit(walker *w, const void *p, size_t n)
{
    if (n)
        memcpy(w->out + w->out_len, p, n);
    w->out_len += n;
}

static void emit_varint(walker *w, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        w->out[w->out_len++] = (uint8_t)(v | 0x80);
    w->out[w->out_len++] = (uint8_t)v;
}

static bool corrupt(walker *w, const uint8_t *at, const char *what)
{
    ox_invalid(w->r, "truncated or corrupt protobuf: %s at byte %zu", what, (size_t)(at - w->base));
    return false;
}

/* Whether p[0..n) is UTF-8 without NUL bytes: protobuf strings must be UTF-8, protobuf-c hands
 * them over as C strings (a NUL would cut a name short), and the text form prints names. */
static bool clean_utf8(const uint8_t *p, size_t n)
{
    return memchr(p, 0, n) == NULL && utf8_invalid_at(p, n) == n;
}

static bool walk_message(walker *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                         size_t len, unsigned depth, size_t *new_len);

/* One field of a message: checks that it fits, and walks into it when it is a sub-message.
 * *new_size is what the field takes in the skeleton (lazy walks). `leave_raw`: a raw_data field
 * of this message is large enough to leave in the file. */
static bool walk_field(walker *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                       size_t len, size_t *pos, unsigned depth, bool leave_raw, size_t *new_size)
{
    const uint8_t *at = p + *pos;
    size_t start = *pos;
    uint64_t key, size = 0;
    if (!read_varint(p, len, pos, &key))
        return corrupt(w, at, "a field key runs past the end");
    uint64_t tag = key >> 3;
    if (tag == 0 || tag > 0x1fffffff)
        return corrupt(w, at, "an invalid field number");
    size_t key_end = *pos;
    switch (key & 7) {
    case 0: /* varint */
        if (!read_varint(p, len, pos, &size))
            return corrupt(w, at, "a varint runs past the end");
        size = 0;
        break;
    case 1: /* 64-bit */
        size = 8;
        break;
    case 5: /* 32-bit */
        size = 4;
        break;
    case 2: /* length-delimited: bytes, strings, packed arrays, messages */
        if (!read_varint(p, len, pos, &size))
            return corrupt(w, at, "a length runs past the end");
        break;
    default: /* groups (3, 4) are not used by onnx.proto; 6 and 7 do not exist */
        return corrupt(w, at, "an unknown wire type");
    }
    if (size > len - *pos)
        return corrupt(w, at, "a field runs past the end of its message");
    const ProtobufCFieldDescriptor *f =
        (key & 7) == 2 ? protobuf_c_message_descriptor_get_field(desc, (unsigned)tag) : NULL;
    bool tensor = w->lazy && desc == &onnx__tensor_proto__descriptor;
    if (tensor && tag == OX_LAZY_TAG) { /* a field of that number in the file: dropped */
        *pos += (size_t)size;
        *new_size = 0;
        return true;
    }
    if (tensor && leave_raw && tag == RAW_DATA_FIELD && (key & 7) == 2 &&
        size >= OX_LAZY_MIN_BYTES) {
        uint64_t marker = (uint64_t)OX_LAZY_TAG << 3 | 1;
        if (w->out) {
            uint64_t index = w->next_range++;
            uint8_t le[8];
            for (int i = 0; i < 8; i++)
                le[i] = (uint8_t)(index >> (8 * i));
            emit_varint(w, marker);
            emit(w, le, 8);
        } else {
            vec_push(&w->ranges, ((ox_lazy_range){(size_t)(p + *pos - w->base), (size_t)size}));
        }
        *pos += (size_t)size;
        *new_size = varint_size(marker) + 8;
        return true;
    }
    if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
        size_t slot = 0, sub_len = 0;
        if (w->out) {
            emit(w, p + start, key_end - start);
            emit_varint(w, w->sizes.items[w->next_size++]);
        } else if (w->lazy) {
            slot = w->sizes.len;
            vec_push(&w->sizes, 0);
        }
        if (!walk_message(w, f->descriptor, p + *pos, (size_t)size, depth + 1, &sub_len))
            return false;
        if (w->lazy && !w->out)
            w->sizes.items[slot] = sub_len;
        *pos += (size_t)size;
        *new_size = (key_end - start) + varint_size(sub_len) + sub_len;
        return true;
    }
    if (f && f->type == PROTOBUF_C_TYPE_STRING && !clean_utf8(p + *pos, (size_t)size)) {
        ox_invalid(w->r, "%s.%s at byte %zu is not UTF-8 or holds a NUL byte", desc->short_name,
                   f->name, (size_t)(at - w->base));
        return false;
    }
    *pos += (size_t)size;
    if (w->out)
        emit(w, p + start, *pos - start);
    *new_size = *pos - start;
    return true;
}

/* How many raw_data fields a TensorProto's bytes hold (stopping at anything malformed, which the
 * walk then reports). Only a tensor with one has its raw_data left in the file: with two, the
 * last would win, and the skeleton keeps that rule by leaving both in. */
static unsigned count_raw_data(const uint8_t *p, size_t len)
{
    unsigned n = 0;
    for (size_t pos = 0; pos < len;) {
        uint64_t key, v;
        if (!read_varint(p, len, &pos, &key))
            break;
        switch (key & 7) {
        case 0:
            if (!read_varint(p, len, &pos, &v))
                return n;
            continue;
        case 1:
            v = 8;
            break;
        case 5:
            v = 4;
            break;
        case 2:
            if (!read_varint(p, len, &pos, &v))
                return n;
            break;
        default:
            return n;
        }
        if (v > len - pos)
            return n;
        n += (key >> 3) == RAW_DATA_FIELD;
        pos += (size_t)v;
    }
    return n;
}

static bool walk_message(walker *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                         size_t len, unsigned depth, size_t *new_len)
{
    if (depth > OX_MAX_NESTING) {
        ox_invalid(w->r, "messages are nested more than %d levels deep (at byte %zu)",
                   OX_MAX_NESTING, (size_t)(p - w->base));
        return false;
    }
    bool leave_raw = w->lazy && desc == &onnx__tensor_proto__descriptor &&
                     len >= OX_LAZY_MIN_BYTES && count_raw_data(p, len) == 1;
    *new_len = 0;
    for (size_t pos = 0; pos < len;) {
        size_t field = 0;
        if (!walk_field(w, desc, p, len, &pos, depth, leave_raw, &field))
            return false;
        *new_len += field;
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
    walker w = {.r = r, .base = map, .lazy = lazy};
    size_t skeleton_len;
    if (!walk_message(&w, desc, map, len, 1, &skeleton_len)) {
        vec_free(&w.sizes);
        vec_free(&w.ranges);
        munmap(map, len);
        close(fd);
        return NULL;
    }
    const uint8_t *bytes = map;
    size_t nbytes = len;
    uint8_t *skeleton = NULL;
    if (lazy && w.ranges.len) {
        skeleton = malloc(skeleton_len ? skeleton_len : 1);
        FR_CHECK(skeleton != NULL);
        w.out = skeleton;
        size_t again;
        FR_CHECK(walk_message(&w, desc, map, len, 1, &again));
        FR_CHECK(again == skeleton_len && w.out_len == skeleton_len &&
                 w.next_size == w.sizes.len && w.next_range == w.ranges.len);
        bytes = skeleton, nbytes = skeleton_len;
    }
    vec_free(&w.sizes);
    ox_decoded *d = calloc(1, sizeof *d);
    FR_CHECK(d != NULL);
    d->allocator = (ProtobufCAllocator){budget_alloc, budget_free, d};
    d->limit = nbytes > (SIZE_MAX - BUDGET_EXTRA) / BUDGET_FACTOR
                   ? SIZE_MAX
                   : nbytes * BUDGET_FACTOR + BUDGET_EXTRA;
    d->message = protobuf_c_message_unpack(desc, &d->allocator, nbytes, bytes);
    free(skeleton);
    if (!d->message) {
        if (d->exceeded)
            ox_invalid(r, "decoding needs more than %zu MiB, more than a file of %zu bytes "
                          "can legitimately need",
                       d->limit >> 20, len);
        else
            ox_invalid(r, "not a valid %s: the protobuf data is corrupt", desc->short_name);
        vec_free(&w.ranges);
        munmap(map, len);
        close(fd);
        free(d);
        return NULL;
    }
    if (w.ranges.len) { /* the tensors left in the file need it mapped */
        d->map = map;
        d->map_len = len;
        d->fd = fd;
        d->path = strdup(r->path);
        FR_CHECK(d->path != NULL);
        d->ranges = w.ranges.items;
        d->nranges = w.ranges.len;
    } else {
        munmap(map, len);
        close(fd);
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
    if (!d || !d->nranges)
        return false;
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
        if (u->tag != OX_LAZY_TAG)
            continue;
        /* the walk dropped the file's own fields of this number: this one is a marker */
        FR_CHECK(u->wire_type == PROTOBUF_C_WIRE_TYPE_64BIT && u->len == 8);
        uint64_t index = 0;
        for (int k = 7; k >= 0; k--)
            index = index << 8 | u->data[k];
        FR_CHECK(index < d->nranges);
        *data = d->map + d->ranges[index].offset;
        *len = d->ranges[index].len;
        return true;
    }
    return false;
}

void ox_decoded_give_mapping(ox_decoded *d, ir_graph *g)
{
    if (!d || !d->map || d->map_given)
        return;
    ir_const_adopt_mapped_file(g, d->map, d->map_len, d->fd, d->path);
    d->map_given = true;
}

void ox_decoded_free(ox_decoded *d)
{
    if (!d)
        return;
    protobuf_c_message_free_unpacked(d->message, &d->allocator);
    FR_CHECK(d->used == 0);
    if (d->map && !d->map_given) {
        munmap(d->map, d->map_len);
        close(d->fd);
    }
    free(d->ranges);
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
