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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

typedef struct {
    ox_report *r;
    const uint8_t *base; /* the whole file, for byte offsets in messages */
} walker;

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
                         size_t len, unsigned depth);

/* One field of a message: checks that it fits, and walks into it when it is a sub-message. */
static bool walk_field(walker *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                       size_t len, size_t *pos, unsigned depth)
{
    const uint8_t *at = p + *pos;
    uint64_t key, size = 0;
    if (!read_varint(p, len, pos, &key))
        return corrupt(w, at, "a field key runs past the end");
    uint64_t tag = key >> 3;
    if (tag == 0 || tag > 0x1fffffff)
        return corrupt(w, at, "an invalid field number");
    switch (key & 7) {
    case 0: /* varint */
        if (!read_varint(p, len, pos, &size))
            return corrupt(w, at, "a varint runs past the end");
        return true;
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
    if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
        !walk_message(w, f->descriptor, p + *pos, (size_t)size, depth + 1))
        return false;
    if (f && f->type == PROTOBUF_C_TYPE_STRING && !clean_utf8(p + *pos, (size_t)size)) {
        ox_invalid(w->r, "%s.%s at byte %zu is not UTF-8 or holds a NUL byte", desc->short_name,
                   f->name, (size_t)(at - w->base));
        return false;
    }
    *pos += (size_t)size;
    return true;
}

static bool walk_message(walker *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                         size_t len, unsigned depth)
{
    if (depth > OX_MAX_NESTING) {
        ox_invalid(w->r, "messages are nested more than %d levels deep (at byte %zu)",
                   OX_MAX_NESTING, (size_t)(p - w->base));
        return false;
    }
    for (size_t pos = 0; pos < len;)
        if (!walk_field(w, desc, p, len, &pos, depth))
            return false;
    return true;
}

/* ---- reading -------------------------------------------------------------------------------- */

static uint8_t *read_file(ox_report *r, size_t *len)
{
    FILE *f = fopen(r->path, "rb");
    if (!f) {
        ox_invalid(r, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        ox_invalid(r, "not a regular file");
        fclose(f);
        return NULL;
    }
    if (st.st_size > OX_MAX_FILE_BYTES) {
        ox_invalid(r, "file of %lld bytes is larger than protobuf's 2 GiB limit (large weights "
                      "belong in external data files)",
                   (long long)st.st_size);
        fclose(f);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        ox_invalid(r, "out of memory reading %zu bytes", size);
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, size, f);
    bool err = ferror(f);
    fclose(f);
    if (err || got != size) {
        ox_invalid(r, "read error");
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}

ProtobufCMessage *ox_decode_file(ox_report *r, const ProtobufCMessageDescriptor *desc,
                                 ox_decoded **owner)
{
    *owner = NULL;
    size_t len;
    uint8_t *buf = read_file(r, &len);
    if (!buf)
        return NULL;
    walker w = {r, buf};
    if (len == 0) {
        ox_invalid(r, "empty file");
        free(buf);
        return NULL;
    }
    if (!walk_message(&w, desc, buf, len, 1)) {
        free(buf);
        return NULL;
    }
    ox_decoded *d = calloc(1, sizeof *d);
    FR_CHECK(d != NULL);
    d->allocator = (ProtobufCAllocator){budget_alloc, budget_free, d};
    d->limit = len > (SIZE_MAX - BUDGET_EXTRA) / BUDGET_FACTOR ? SIZE_MAX
                                                               : len * BUDGET_FACTOR + BUDGET_EXTRA;
    d->message = protobuf_c_message_unpack(desc, &d->allocator, len, buf);
    free(buf);
    if (!d->message) {
        if (d->exceeded)
            ox_invalid(r, "decoding needs more than %zu MiB, more than a file of %zu bytes "
                          "can legitimately need",
                       d->limit >> 20, len);
        else
            ox_invalid(r, "not a valid %s: the protobuf data is corrupt", desc->short_name);
        free(d);
        return NULL;
    }
    *owner = d;
    return d->message;
}

void ox_decoded_free(ox_decoded *d)
{
    if (!d)
        return;
    protobuf_c_message_free_unpacked(d->message, &d->allocator);
    FR_CHECK(d->used == 0);
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
