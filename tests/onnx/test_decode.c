/* onnx/decode: the hand decoder against protobuf-c's own unpack, on the same bytes.
 *
 *     onnx_decode_test DIR...     (the ONNX fuzz seeds and corpus)
 *
 * Every file of the folders, a fixed series of mutations of each (truncations, flipped and
 * inserted bytes, spliced ranges) and a few hand-made messages (a message field given twice,
 * oneof members in turn, packed and unpacked arrays, unknown fields) are decoded both ways. Where
 * protobuf-c refuses the bytes, the decoder must refuse them; where both decode, the messages
 * must pack to the same bytes (protobuf-c's pack is a function of the struct); where only
 * protobuf-c decodes, the decoder's reason must be one of the checks it adds (nesting depth,
 * UTF-8, field numbers). Prints one line per disagreement; exit 1 on any. */
#include "onnx/onnx_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures, decoded_both, refused_both, refused_by_checks;

static bool write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static uint8_t *packed(const ProtobufCMessage *m, size_t *n)
{
    *n = protobuf_c_message_get_packed_size(m);
    uint8_t *out = malloc(*n ? *n : 1);
    if (!out || protobuf_c_message_pack(m, out) != *n) {
        fprintf(stderr, "test_decode: pack failed\n");
        exit(2);
    }
    return out;
}

static void compare(const char *what, const uint8_t *p, size_t n, const char *tmp)
{
    if (n == 0)
        return; /* the decoder refuses an empty file before decoding */
    if (!write_file(tmp, p, n)) {
        perror(tmp);
        exit(2);
    }
    ProtobufCMessage *theirs = protobuf_c_message_unpack(&onnx__model_proto__descriptor, NULL, n, p);
    dg_context *dg = dg_new();
    ox_import_info info = {0};
    ox_report r = {.path = tmp, .dg = dg, .info = &info};
    ox_decoded *owner;
    ProtobufCMessage *ours = ox_decode_file(&r, &onnx__model_proto__descriptor, &owner);
    if (!theirs && ours) {
        printf("FAIL %s: protobuf-c refuses it, the decoder does not\n", what);
        failures++;
    } else if (theirs && !ours) {
        if (strstr(info.reason, "nested more than") || strstr(info.reason, "not UTF-8") ||
            strstr(info.reason, "invalid field number")) {
            refused_by_checks++;
        } else {
            printf("FAIL %s: the decoder refuses what protobuf-c decodes: %s\n", what,
                   info.reason);
            failures++;
        }
    } else if (theirs && ours) {
        size_t na, nb;
        uint8_t *a = packed(theirs, &na), *b = packed(ours, &nb);
        if (na != nb || memcmp(a, b, na) != 0) {
            printf("FAIL %s: the messages differ (%zu and %zu bytes packed)\n", what, na, nb);
            failures++;
        } else {
            decoded_both++;
        }
        free(a);
        free(b);
    } else {
        refused_both++;
    }
    protobuf_c_message_free_unpacked(theirs, NULL);
    ox_decoded_free(owner);
    ox_report_finish(&r);
    dg_free(dg);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void mutations(const char *name, const uint8_t *p, size_t n, const char *tmp)
{
    enum { MUTATIONS = 40 };
    uint8_t *buf = malloc(2 * n + 16);
    for (int k = 0; k < MUTATIONS && n; k++) {
        size_t len = n;
        memcpy(buf, p, n);
        switch (next() % 4) {
        case 0:
            len = next() % n;
            break;
        case 1:
            for (uint64_t i = 0, c = 1 + next() % 3; i < c; i++)
                buf[next() % n] = (uint8_t)next();
            break;
        case 2: { /* a few bytes inserted */
            size_t at = next() % n, c = 1 + next() % 5;
            memmove(buf + at + c, buf + at, n - at);
            for (size_t i = 0; i < c; i++)
                buf[at + i] = (uint8_t)next();
            len = n + c;
            break;
        }
        default: { /* a range of the file inserted elsewhere: repeated fields and messages */
            size_t at = next() % n, from = next() % n, c = 1 + next() % 64;
            if (c > n - from)
                c = n - from;
            memmove(buf + at + c, buf + at, n - at);
            memcpy(buf + at, p + from, c);
            len = n + c;
            break;
        }
        }
        char what[4200];
        snprintf(what, sizeof what, "%s, mutation %d", name, k);
        compare(what, buf, len, tmp);
    }
    free(buf);
}

static void from_folder(const char *dir, const char *tmp)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        exit(2);
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t *p = malloc(1 << 20);
        size_t n = fread(p, 1, 1 << 20, f);
        fclose(f);
        compare(path, p, n, tmp);
        mutations(path, p, n, tmp);
        free(p);
    }
    closedir(d);
}

/* ---- hand-made messages --------------------------------------------------------------------- */

typedef struct {
    uint8_t b[4096];
    size_t n;
} msg;

static void varint(msg *m, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        m->b[m->n++] = (uint8_t)(v | 0x80);
    m->b[m->n++] = (uint8_t)v;
}

static void bytes_field(msg *m, unsigned tag, const void *p, size_t n)
{
    varint(m, tag << 3 | 2);
    varint(m, n);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void sub(msg *m, unsigned tag, const msg *s) { bytes_field(m, tag, s->b, s->n); }
static void str(msg *m, unsigned tag, const char *s) { bytes_field(m, tag, s, strlen(s)); }
static void int_field(msg *m, unsigned tag, uint64_t v)
{
    varint(m, tag << 3);
    varint(m, v);
}

static void hand_made(const char *tmp)
{
    msg dim1 = {0}, dim2 = {0}, shape = {0}, tensor_type = {0}, type = {0}, type2 = {0};
    int_field(&dim1, 1, 4);    /* dim_value 4 */
    str(&dim1, 2, "batch");    /* then dim_param: the oneof keeps the last */
    str(&dim2, 2, "seq");
    int_field(&dim2, 1, 8);
    sub(&shape, 1, &dim1);
    sub(&shape, 1, &dim2);
    int_field(&tensor_type, 1, 1);
    sub(&tensor_type, 2, &shape);
    sub(&type, 1, &tensor_type);
    sub(&type2, 1, &tensor_type);
    msg vi = {0};
    str(&vi, 1, "x");
    sub(&vi, 2, &type);
    sub(&vi, 2, &type2); /* TypeProto given twice: merged */

    msg attr = {0}, packed = {0};
    str(&attr, 1, "perm");
    int_field(&attr, 20, 7); /* type INTS */
    varint(&packed, 1);
    varint(&packed, 0);
    varint(&packed, UINT64_MAX);
    bytes_field(&attr, 8, packed.b, packed.n); /* ints, packed */
    int_field(&attr, 8, 5);                    /* and one more unpacked */
    float f[3] = {1.5f, -2.0f, 1e-5f};
    msg attr2 = {0};
    str(&attr2, 1, "scales");
    bytes_field(&attr2, 7, f, sizeof f); /* floats, packed */
    varint(&attr2, 7 << 3 | 5);          /* and one unpacked */
    memcpy(attr2.b + attr2.n, &f[2], 4);
    attr2.n += 4;

    msg node = {0};
    str(&node, 1, "x");
    str(&node, 2, "y");
    str(&node, 4, "Transpose");
    sub(&node, 5, &attr);
    sub(&node, 5, &attr2);
    int_field(&node, 1000, 3); /* unknown fields */
    str(&node, 1001, "kept");

    msg g1 = {0}, g2 = {0}, model = {0};
    sub(&g1, 1, &node);
    str(&g1, 2, "first");
    sub(&g1, 11, &vi);
    sub(&g2, 1, &node);
    str(&g2, 2, "second");
    int_field(&model, 1, 8);
    sub(&model, 7, &g1);
    sub(&model, 7, &g2); /* GraphProto given twice: its nodes concatenated, the last name */
    int_field(&model, 1, 9);
    compare("hand-made model", model.b, model.n, tmp);

    msg wrong = {0}; /* a string field as a varint: protobuf-c refuses it */
    int_field(&wrong, 4, 3);
    compare("hand-made wrong wire type", wrong.b, wrong.n, tmp);
    msg bad_packed = {0}; /* packed floats of 5 bytes */
    bytes_field(&bad_packed, 7, f, 5);
    msg bad_attr = {0};
    sub(&bad_attr, 5, &bad_packed);
    msg bad_model = {0};
    msg bad_node = {0};
    sub(&bad_node, 5, &bad_packed);
    msg bad_graph = {0};
    sub(&bad_graph, 1, &bad_node);
    sub(&bad_model, 7, &bad_graph);
    compare("hand-made packed floats of 5 bytes", bad_model.b, bad_model.n, tmp);
}

int main(int argc, char **argv)
{
    char tmp[] = "/tmp/onnx_decode_test.XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0) {
        perror("mkstemp");
        return 2;
    }
    close(fd);
    for (int i = 1; i < argc; i++)
        from_folder(argv[i], tmp);
    hand_made(tmp);
    unlink(tmp);
    printf("%d decoded alike, %d refused by both, %d refused by the decoder's own checks, %d "
           "disagreements\n",
           decoded_both, refused_both, refused_by_checks, failures);
    return failures ? 1 : 0;
}
