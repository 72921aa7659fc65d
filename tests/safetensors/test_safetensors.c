/* safetensors I/O, constants' data and ir_save.
 *
 * Every file is written under a fresh temporary folder, removed at the end. Diagnostics are
 * compared as the exact text dg_print gives. */
#define _XOPEN_SOURCE 700 /* mkdtemp, open_memstream's neighbours */

#include "base/half.h"
#include "base/mapwatch.h"
#include "ir/ir.h"
#include "ir/safetensors.h"
#include "malformed.h"
#include "tests/unit.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { PATH_SIZE = 4096 };

static char tmp_root[PATH_SIZE];

/* ---- helpers --------------------------------------------------------------------------------- */

static const char *tmp_path(char *buf, const char *name)
{
    int n = snprintf(buf, PATH_SIZE, "%s/%s", tmp_root, name);
    if (n < 0 || n >= PATH_SIZE)
        abort();
    return buf;
}

static void write_bytes(const char *path, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(bytes, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

/* The whole file, NUL-terminated (malloc'd), or NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = 2 * (n + got + 1);
            buf = realloc(buf, cap);
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* What dg_print prints (malloc'd). */
static char *diag_text(const dg_context *dg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    dg_print(dg, f);
    fclose(f);
    return text;
}

/* Checks the printed diagnostics, with every "DIR" in `expected` standing for tmp_root. */
#define CHECK_DIAG(dg, expected)                                                                   \
    do {                                                                                           \
        char *want_ = with_dir(expected);                                                          \
        char *got_ = diag_text(dg);                                                                \
        CHECK_STR(got_, want_);                                                                    \
        free(got_);                                                                                \
        free(want_);                                                                               \
    } while (0)

static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t nfrom = strlen(from), nto = strlen(to), count = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + nfrom, from))
        count++;
    char *out = malloc(strlen(text) + count * nto + 1);
    char *o = out;
    for (const char *p = text, *hit; (hit = strstr(p, from)) || *p; p = hit + nfrom) {
        if (!hit) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, to, nto);
        o += nto;
    }
    *o = '\0';
    return out;
}

static char *with_dir(const char *text)
{
    return replace_all(text, "DIR", tmp_root);
}

static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        chmod(path, 0700);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char child[PATH_SIZE];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Names in a folder that look like temporaries (".tmp." or ".old."). */
static int count_temporaries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp.") != NULL || strstr(e->d_name, ".old.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static bool write_entries(const char *path, const st_entry *entries, size_t n, dg_context *dg)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = st_write(f, path, entries, n, dg);
    return fclose(f) == 0 && ok;
}

/* A file with a hand-written header and `data_len` bytes of data. */
static void write_raw(const char *path, const char *header, size_t data_len)
{
    malformed_case c = {"raw", header, data_len, -1, -1, "", 0};
    size_t len;
    unsigned char *bytes = malformed_build(&c, &len);
    write_bytes(path, bytes, len);
    free(bytes);
}

static ir_type make_type(ir_dtype dt, int rank, const int64_t *dims)
{
    ir_type t = {dt, (int8_t)rank, 0, {0}};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

static ir_value *add_literal(ir_graph *g, const char *name, ir_dtype dt, int rank,
                             const int64_t *dims, const double *values, size_t count)
{
    ir_const *c = ir_const_new(g, IR_CONST_LITERAL);
    c->literal = ar_alloc_array(g->arena, count, sizeof(double));
    if (count)
        memcpy(c->literal, values, count * sizeof(double));
    c->literal_count = count;
    ir_type t = make_type(dt, rank, dims);
    return ir_add_const(g, name, &t, c);
}

static ir_value *add_file_const(ir_graph *g, const char *name, ir_dtype dt, int rank,
                                const int64_t *dims, const char *file, const char *key)
{
    ir_const *c = ir_const_new(g, IR_CONST_FILE);
    c->file = ar_strdup(g->arena, file);
    c->key = ar_strdup(g->arena, key);
    ir_type t = make_type(dt, rank, dims);
    return ir_add_const(g, name, &t, c);
}

static uint16_t load16(const void *p, size_t i)
{
    uint16_t v;
    memcpy(&v, (const char *)p + 2 * i, 2);
    return v;
}

/* ---- writing and reading --------------------------------------------------------------------- */

static const int64_t dims_2x3[] = {2, 3}, dims_4[] = {4}, dims_3[] = {3}, dims_5[] = {5},
                     dims_2x2[] = {2, 2}, dims_2[] = {2}, dims_0x4[] = {0, 4}, dims_0[] = {0};

static float f32_values[6] = {1.0f, -2.5f, 3.25f, 0.0f, -0.0f, 1e30f};
static uint16_t f16_values[4];
static uint16_t bf16_values[3];
static int8_t i8_values[5] = {-128, -1, 0, 1, 127};
static uint8_t u8_values[3] = {0, 128, 255};
static int32_t i32_values[4] = {INT32_MIN, -1, 0, INT32_MAX};
static int64_t i64_values[2] = {INT64_MIN, INT64_MAX};
static uint8_t bool_values[3] = {0, 1, 1};
static float scalar_value = 42.0f;

/* One tensor of every dtype, a scalar and two empty tensors, deliberately not in name order. */
static size_t every_dtype(st_entry *e)
{
    f16_values[0] = f32_to_f16(1.0f);
    f16_values[1] = f32_to_f16(-2.0f);
    f16_values[2] = f32_to_f16(65504.0f);
    f16_values[3] = f32_to_f16(5.96046448e-8f); /* the smallest subnormal */
    bf16_values[0] = f32_to_bf16(1.0f);
    bf16_values[1] = f32_to_bf16(-3.0e38f);
    bf16_values[2] = f32_to_bf16(1.0e-30f);
    size_t n = 0;
    e[n++] = (st_entry){"w.f32", IR_F32, 2, dims_2x3, f32_values, sizeof f32_values};
    e[n++] = (st_entry){"half", IR_F16, 1, dims_4, f16_values, sizeof f16_values};
    e[n++] = (st_entry){"brain", IR_BF16, 1, dims_3, bf16_values, sizeof bf16_values};
    e[n++] = (st_entry){"i8", IR_I8, 1, dims_5, i8_values, sizeof i8_values};
    e[n++] = (st_entry){"u8", IR_U8, 1, dims_3, u8_values, sizeof u8_values};
    e[n++] = (st_entry){"i32", IR_I32, 2, dims_2x2, i32_values, sizeof i32_values};
    e[n++] = (st_entry){"i64", IR_I64, 1, dims_2, i64_values, sizeof i64_values};
    e[n++] = (st_entry){"mask", IR_BOOL, 1, dims_3, bool_values, sizeof bool_values};
    e[n++] = (st_entry){"scalar", IR_F32, 0, NULL, &scalar_value, sizeof scalar_value};
    e[n++] = (st_entry){"empty", IR_F32, 2, dims_0x4, NULL, 0};
    e[n++] = (st_entry){"empty.i64", IR_I64, 1, dims_0, NULL, 0};
    return n;
}

static void test_roundtrip_every_dtype(void)
{
    st_entry e[16];
    size_t n = every_dtype(e);
    char path[PATH_SIZE];
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "every.safetensors"), e, n, dg));
    st_file *f = st_open(path, dg);
    CHECK(f != NULL);
    CHECK_DIAG(dg, "");
    if (!f) {
        dg_free(dg);
        return;
    }
    CHECK_INT(st_count(f), n);
    for (size_t i = 1; i < st_count(f); i++) /* header order is name order */
        CHECK(strcmp(st_at(f, i - 1)->name, st_at(f, i)->name) < 0);
    for (size_t i = 0; i < n; i++) {
        const st_tensor *t = st_find(f, e[i].name);
        CHECK(t != NULL);
        if (!t)
            continue;
        CHECK_INT(t->dtype, e[i].dtype);
        CHECK_INT(t->rank, e[i].rank);
        for (uint32_t d = 0; d < t->rank; d++)
            CHECK_INT(t->dims[d], e[i].dims[d]);
        CHECK_INT(t->nbytes, e[i].nbytes);
        CHECK(e[i].nbytes == 0 || memcmp(t->data, e[i].data, e[i].nbytes) == 0);
        /* the writer lays data out so that every tensor is aligned to its element size */
        CHECK_INT((uintptr_t)t->data % ir_dtype_size(t->dtype), 0);
    }
    const st_tensor *h = st_find(f, "half");
    CHECK(h && load16(h->data, 0) == 0x3c00 && load16(h->data, 2) == 0x7bff &&
          load16(h->data, 3) == 0x0001);
    const st_tensor *b = st_find(f, "brain");
    CHECK(b && load16(b->data, 0) == 0x3f80);
    CHECK_STR(st_find(f, "mask")->dtype_name, "BOOL");
    CHECK_STR(st_find(f, "brain")->dtype_name, "BF16");
    CHECK(st_find(f, "missing") == NULL);
    st_close(f);

    /* the header is padded with spaces so that the data starts 8-byte aligned */
    size_t len;
    char *bytes = read_all(path, &len);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | (unsigned char)bytes[i];
    CHECK_INT(header_len % 8, 0);
    CHECK(bytes[8] == '{' && bytes[8 + header_len - 1] == ' ');

    /* deterministic: the same tensors in another order give the same bytes */
    st_entry reversed[16];
    for (size_t i = 0; i < n; i++)
        reversed[i] = e[n - 1 - i];
    char path2[PATH_SIZE];
    CHECK(write_entries(tmp_path(path2, "every2.safetensors"), reversed, n, dg));
    size_t len2;
    char *bytes2 = read_all(path2, &len2);
    CHECK(len == len2 && memcmp(bytes, bytes2, len) == 0);
    free(bytes);
    free(bytes2);
    dg_free(dg);
}

static void test_empty_file_roundtrip(void)
{
    char path[PATH_SIZE];
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "none.safetensors"), NULL, 0, dg));
    size_t len;
    char *bytes = read_all(path, &len);
    CHECK_INT(len, 16);
    CHECK(bytes && memcmp(bytes, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
    free(bytes);
    st_file *f = st_open(path, dg);
    CHECK(f && st_count(f) == 0);
    st_close(f);
    CHECK_DIAG(dg, "");
    dg_free(dg);
}

/* What other writers produce: metadata, spaces, escapes, a dtype the IR lacks, an unsorted
 * header, data not in header order, empty tensors at the end of the buffer. */
static void test_reader_accepts_foreign_files(void)
{
    const char *header =
        "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"caf\\u00e9 \\ud83d\\ude00\"}, "
        "\"b\" : {\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[4,12]} ,\n"
        "\"a\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]},"
        "\"z\\u00e9\":{\"dtype\":\"BF16\",\"shape\":[0,3],\"data_offsets\":[12,12]},"
        "\"e\":{\"dtype\":\"F4\",\"shape\":[0],\"data_offsets\":[12,12]}}    ";
    char path[PATH_SIZE];
    write_raw(tmp_path(path, "foreign.safetensors"), header, 12);
    dg_context *dg = dg_new();
    st_file *f = st_open(path, dg);
    CHECK(f != NULL);
    CHECK_DIAG(dg, "");
    if (f) {
        CHECK_INT(st_count(f), 4);
        CHECK_STR(st_at(f, 0)->name, "b");
        CHECK_STR(st_at(f, 1)->name, "a");
        CHECK_STR(st_at(f, 2)->name, "z\xc3\xa9");
        CHECK_INT(st_at(f, 0)->dtype, IR_DTYPE_UNKNOWN);
        CHECK_STR(st_at(f, 0)->dtype_name, "C64");
        CHECK_INT(st_at(f, 1)->rank, 0);
        CHECK_INT(st_at(f, 1)->nbytes, 4);
        CHECK_INT(st_at(f, 2)->nbytes, 0);
        CHECK_STR(st_metadata(f, "format"), "pt");
        CHECK_STR(st_metadata(f, "note"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
        CHECK(st_metadata(f, "missing") == NULL);
        CHECK_STR(st_path(f), path);
    }
    st_close(f);
    dg_free(dg);
}

static void test_writer_refuses(void)
{
    float data[2] = {1, 2};
    struct {
        st_entry e[2];
        size_t n;
        const char *expected;
    } cases[] = {
        {{{"x", IR_F32, 1, dims_2, data, 8}, {"x", IR_F32, 1, dims_2, data, 8}},
         2,
         "DIR/w.safetensors: error: two tensors are named \"x\"\n"},
        {{{"x", IR_F32, 1, dims_3, data, 8}}, 1,
         "DIR/w.safetensors: error: tensor 'x': 8 bytes of data do not match its shape\n"},
        {{{"__metadata__", IR_F32, 1, dims_2, data, 8}}, 1,
         "DIR/w.safetensors: error: cannot write a tensor named \"__metadata__\"\n"},
        {{{"", IR_F32, 1, dims_2, data, 8}}, 1,
         "DIR/w.safetensors: error: cannot write a tensor named \"\"\n"},
        {{{"bad\xff", IR_F32, 1, dims_2, data, 8}}, 1,
         "DIR/w.safetensors: error: cannot write a tensor named \"bad\xff\"\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[PATH_SIZE];
        dg_context *dg = dg_new();
        CHECK(!write_entries(tmp_path(path, "w.safetensors"), cases[i].e, cases[i].n, dg));
        CHECK_DIAG(dg, cases[i].expected);
        dg_free(dg);
    }
}

static void test_json_escapes_in_names(void)
{
    float data[1] = {7};
    static const int64_t one[] = {1};
    st_entry e[] = {{"quote\"back\\slash\ttab/é", IR_F32, 1, one, data, 4}};
    char path[PATH_SIZE];
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "escapes.safetensors"), e, 1, dg));
    st_file *f = st_open(path, dg);
    CHECK(f && st_find(f, e[0].name) != NULL);
    st_close(f);
    CHECK_DIAG(dg, "");
    dg_free(dg);
}

static void test_open_errors(void)
{
    dg_context *dg = dg_new();
    char path[PATH_SIZE];
    CHECK(st_open(tmp_path(path, "absent.safetensors"), dg) == NULL);
    CHECK(st_open(tmp_root, dg) == NULL);
    char *expected = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&expected, &len);
    fprintf(f, "DIR/absent.safetensors: error: cannot open: No such file or directory\n");
    fprintf(f, "DIR: error: not a regular file\n");
    fclose(f);
    CHECK_DIAG(dg, expected);
    free(expected);
    dg_free(dg);
}

/* Every case of the corpus fails with exactly its message, from a file and from memory. */
static void test_malformed_corpus(void)
{
    for (size_t i = 0; i < malformed_case_count; i++) {
        const malformed_case *c = &malformed_cases[i];
        char name[256], path[PATH_SIZE];
        snprintf(name, sizeof name, "%s.safetensors", c->name);
        tmp_path(path, name);
        size_t len;
        unsigned char *bytes = malformed_build(c, &len);
        write_bytes(path, bytes, len);
        char *expected = replace_all(c->expected, "PATH", path);
        char *line = malloc(strlen(expected) + 2);
        sprintf(line, "%s\n", expected);

        dg_context *dg = dg_new();
        st_file *f = st_open(path, dg);
        CHECK(f == NULL);
        char *got = diag_text(dg);
        if (strcmp(got, line) != 0)
            fprintf(stderr, "case %s:\n", c->name);
        CHECK_STR(got, line);
        free(got);
        st_close(f);
        dg_free(dg);

        dg = dg_new();
        f = st_open_memory(bytes, len, path, dg);
        CHECK(f == NULL);
        got = diag_text(dg);
        CHECK_STR(got, line);
        free(got);
        st_close(f);
        dg_free(dg);

        free(line);
        free(expected);
        free(bytes);
    }
}

/* A valid file cut at every length, and with every header byte changed: never a crash, and only
 * the whole, unchanged file loads. */
static void test_every_truncation_and_byte_flip(void)
{
    st_entry e[16];
    size_t n = every_dtype(e);
    char *bytes = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&bytes, &len);
    dg_context *dg = dg_new();
    CHECK(st_write(mem, "mem", e, n, dg));
    fclose(mem);
    for (size_t cut = 0; cut < len; cut++) {
        st_file *f = st_open_memory(bytes, cut, "cut", dg);
        CHECK(f == NULL);
        st_close(f);
    }
    CHECK_INT(dg_error_count(dg), len);
    st_file *whole = st_open_memory(bytes, len, "whole", dg);
    CHECK(whole != NULL);
    st_close(whole);
    unsigned char *copy = malloc(len);
    static const unsigned char flips[] = {0x01, 0x20, 0x80, 0xff};
    for (size_t i = 0; i < 8 + 200 && i < len; i++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            memcpy(copy, bytes, len);
            copy[i] ^= flips[k];
            st_close(st_open_memory(copy, len, "flipped", dg));
        }
    }
    free(copy);
    free(bytes);
    dg_free(dg);
}

/* ---- the seeded generator -------------------------------------------------------------------- */

static void test_random_known_values(void)
{
    /* pinned from an independent implementation (splitmix64 in Python): a change of the stream
     * changes every random constant of every saved graph */
    uint32_t bits[4];
    ir_random_fill(1, -1.0, 1.0, IR_F32, bits, 4);
    CHECK_INT(bits[0], 0x3effbe01u);
    CHECK_INT(bits[1], 0xbe82ab4cu);
    CHECK_INT(bits[2], 0xbdfcca04u);
    CHECK_INT(bits[3], 0x3f6881fcu);
    int32_t ints[4];
    ir_random_fill(7, -1000, 1000, IR_I32, ints, 4);
    CHECK_INT(ints[0], 48);
    CHECK_INT(ints[1], -396);
    CHECK_INT(ints[2], 881);
    CHECK_INT(ints[3], 766);
}

static void test_random_chunked_equals_whole(void)
{
    enum { N = 1000 };
    static const ir_dtype all[] = {IR_F32, IR_F16, IR_BF16, IR_I8, IR_U8, IR_I32, IR_I64, IR_BOOL};
    static const size_t chunks[] = {1, 7, 333, 999};
    for (size_t d = 0; d < sizeof all / sizeof all[0]; d++) {
        size_t size = ir_dtype_size(all[d]);
        unsigned char whole[N * 8], parts[N * 8];
        ir_random_fill(12345, -100, 100, all[d], whole, N);
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            memset(parts, 0xaa, sizeof parts);
            for (size_t at = 0; at < N; at += chunks[c]) {
                size_t count = N - at < chunks[c] ? N - at : chunks[c];
                ir_random_fill_at(12345, at, -100, 100, all[d], parts + at * size, count);
            }
            CHECK(memcmp(whole, parts, N * size) == 0);
        }
        unsigned char again[N * 8], other[N * 8];
        ir_random_fill(12345, -100, 100, all[d], again, N);
        ir_random_fill(12346, -100, 100, all[d], other, N);
        CHECK(memcmp(whole, again, N * size) == 0);
        CHECK(memcmp(whole, other, N * size) != 0);
    }
}

static void test_random_ranges(void)
{
    enum { N = 100000 };
    static float f[N];
    ir_random_fill(3, -1, 1, IR_F32, f, N);
    double sum = 0, lo = 1, hi = -1;
    for (int i = 0; i < N; i++) {
        CHECK(f[i] >= -1.0f && f[i] < 1.0f);
        sum += f[i];
        lo = f[i] < lo ? f[i] : lo;
        hi = f[i] > hi ? f[i] : hi;
    }
    CHECK_NEAR(sum / N, 0.0, 0, 0.01);
    CHECK(lo < -0.999 && hi > 0.999);

    /* rounding to 16 bits must not reach hi: f16 and bf16 values just below 1 round up to 1 */
    static uint16_t h[N];
    ir_random_fill(4, 0, 1, IR_F16, h, N);
    int below_hi = 1;
    for (int i = 0; i < N; i++)
        below_hi &= f16_to_f32(h[i]) >= 0.0f && f16_to_f32(h[i]) < 1.0f;
    CHECK(below_hi);
    ir_random_fill(4, 0, 1, IR_BF16, h, N);
    below_hi = 1;
    for (int i = 0; i < N; i++)
        below_hi &= bf16_to_f32(h[i]) >= 0.0f && bf16_to_f32(h[i]) < 1.0f;
    CHECK(below_hi);

    /* integers: floor, so [-3, 5) gives -3..4, each about equally often */
    static int8_t i8[N];
    ir_random_fill(5, -3, 5, IR_I8, i8, N);
    int seen[8] = {0};
    for (int i = 0; i < N; i++) {
        CHECK(i8[i] >= -3 && i8[i] <= 4);
        if (i8[i] >= -3 && i8[i] <= 4)
            seen[i8[i] + 3]++;
    }
    for (int k = 0; k < 8; k++)
        CHECK(seen[k] > N / 8 - N / 80 && seen[k] < N / 8 + N / 80);

    /* integers clamp to the dtype: [-1, 1) as u8 is all 0; [-1000, 1000) as i8 saturates */
    static uint8_t u8[N];
    ir_random_fill(6, -1, 1, IR_U8, u8, N);
    int zeros = 0;
    for (int i = 0; i < N; i++)
        zeros += u8[i] == 0;
    CHECK_INT(zeros, N);
    ir_random_fill(6, -1000, 1000, IR_I8, i8, N);
    int saturated = 0;
    for (int i = 0; i < N; i++)
        saturated += i8[i] == -128 || i8[i] == 127;
    CHECK(saturated > N * 8 / 10);

    static int64_t i64[N];
    ir_random_fill(7, 0, 1e18, IR_I64, i64, N);
    int in_range = 1;
    for (int i = 0; i < N; i++)
        in_range &= i64[i] >= 0 && i64[i] < 1000000000000000000LL;
    CHECK(in_range);
    ir_random_fill(7, -1e30, 1e30, IR_I64, i64, 8); /* clamps, never overflows */

    static uint8_t b[N];
    ir_random_fill(8, -1, 1, IR_BOOL, b, N);
    int ones = 0;
    for (int i = 0; i < N; i++) {
        CHECK(b[i] <= 1);
        ones += b[i];
    }
    CHECK(ones > N / 2 - N / 50 && ones < N / 2 + N / 50);

    float same[16];
    ir_random_fill(9, 2.5, 2.5, IR_F32, same, 16); /* an empty range gives lo */
    for (int i = 0; i < 16; i++)
        CHECK(same[i] == 2.5f);
}

/* ---- constants' data ------------------------------------------------------------------------- */

static void test_literal_constants(void)
{
    ir_graph *g = ir_graph_new("lit");
    dg_context *dg = dg_new();
    static const double half = 0.5, list3[] = {1, 2, 3}, f16s[] = {1, -2}, one = 1,
                        bools[] = {0, 1};
    ir_value *fill = add_literal(g, "fill", IR_F32, 2, dims_2x2, &half, 1);
    const float *fd = ir_const_data(g, fill, dg);
    CHECK(fd && fd[0] == 0.5f && fd[3] == 0.5f);
    CHECK(ir_const_data(g, fill, dg) == fd); /* materialized once */
    CHECK_INT(fill->konst->nbytes, 16);

    ir_value *ints = add_literal(g, "ints", IR_I32, 1, dims_3, list3, 3);
    const int32_t *id = ir_const_data(g, ints, dg);
    CHECK(id && id[0] == 1 && id[1] == 2 && id[2] == 3);
    ir_value *big = add_literal(g, "big", IR_I64, 1, dims_3, list3, 3);
    const int64_t *bd = ir_const_data(g, big, dg);
    CHECK(bd && bd[2] == 3);
    ir_value *h = add_literal(g, "h", IR_F16, 1, dims_2, f16s, 2);
    const void *hd = ir_const_data(g, h, dg);
    CHECK(hd && load16(hd, 0) == 0x3c00 && load16(hd, 1) == 0xc000);
    ir_value *bf = add_literal(g, "bf", IR_BF16, 0, NULL, &one, 1);
    const void *bfd = ir_const_data(g, bf, dg);
    CHECK(bfd && load16(bfd, 0) == 0x3f80);
    ir_value *mask = add_literal(g, "mask", IR_BOOL, 1, dims_2, bools, 2);
    const uint8_t *md = ir_const_data(g, mask, dg);
    CHECK(md && md[0] == 0 && md[1] == 1);
    ir_value *none = add_literal(g, "none", IR_F32, 2, dims_0x4, NULL, 0);
    CHECK(ir_const_data(g, none, dg) != NULL);
    CHECK_DIAG(dg, "");
    dg_free(dg);

    static const double frac = 1.5, big_u8 = 300, big_f16 = 70000, two = 2, neg = -1,
                        huge_i64 = 9223372036854775808.0;
    struct {
        const char *name;
        ir_dtype dt;
        const double *values;
        size_t count;
        const char *expected;
    } bad[] = {
        {"three", IR_F32, list3, 3,
         "fuserule: error: constant 'three' lists 3 values for 4 elements (write 1 value to "
         "fill it, or all 4)\n"},
        {"frac", IR_I32, &frac, 1,
         "fuserule: error: constant 'frac': i32 value 1.5 is not an integer\n"},
        {"byte", IR_U8, &big_u8, 1,
         "fuserule: error: constant 'byte': u8 value 300 is out of range\n"},
        {"neg", IR_U8, &neg, 1, "fuserule: error: constant 'neg': u8 value -1 is out of range\n"},
        {"long", IR_I64, &huge_i64, 1,
         "fuserule: error: constant 'long': i64 value 9.2233720368547758e+18 is out of "
         "range\n"},
        {"half", IR_F16, &big_f16, 1,
         "fuserule: error: constant 'half': f16 value 70000 overflows\n"},
        {"flag", IR_BOOL, &two, 1,
         "fuserule: error: constant 'flag': bool value 2 is out of range\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dg = dg_new();
        ir_value *v = add_literal(g, bad[i].name, bad[i].dt, 2, dims_2x2, bad[i].values,
                                  bad[i].count);
        CHECK(ir_const_data(g, v, dg) == NULL);
        CHECK(v->konst->data == NULL);
        CHECK_DIAG(dg, bad[i].expected);
        dg_free(dg);
    }
    ir_graph_free(g);
}

/* With a source, an error points at the constant's definition. */
static void test_errors_are_located(void)
{
    static const char text[] = "graph g {\n  const c : u8[2] = [1, 999]\n}\n";
    dg_source src = {"g.graph", text, sizeof text - 1};
    ir_graph *g = ir_graph_new("g");
    g->src = &src;
    static const double values[] = {1, 999};
    ir_value *v = add_literal(g, "c", IR_U8, 1, dims_2, values, 2);
    v->src_offset = 18; /* 'c': its length is scanned from the text */
    dg_context *dg = dg_new();
    CHECK(ir_const_data(g, v, dg) == NULL);
    CHECK_DIAG(dg, "g.graph:2:9: error: constant 'c': u8 value 999 is out of range\n"
                   "    const c : u8[2] = [1, 999]\n"
                   "          ^\n");
    dg_free(dg);
    ir_graph_free(g);
}

static void test_random_constants(void)
{
    ir_graph *g = ir_graph_new("rnd");
    dg_context *dg = dg_new();
    ir_const *c = ir_const_new(g, IR_CONST_RANDOM);
    c->seed = 42;
    c->lo = -0.5;
    c->hi = 0.5;
    ir_type t = make_type(IR_BF16, 2, dims_2x3);
    ir_value *v = ir_add_const(g, "r", &t, c);
    CHECK(ir_const_is_cheap(v));
    const void *data = ir_const_data(g, v, dg);
    uint16_t expected[6];
    ir_random_fill(42, -0.5, 0.5, IR_BF16, expected, 6);
    CHECK(data && memcmp(data, expected, sizeof expected) == 0);

    ir_const *bad = ir_const_new(g, IR_CONST_RANDOM);
    bad->lo = 1;
    bad->hi = 0;
    ir_value *w = ir_add_const(g, "w", &t, bad);
    CHECK(ir_const_data(g, w, dg) == NULL);
    CHECK_DIAG(dg, "fuserule: error: constant 'w': random range [1, 0) is not a finite range "
                   "with lo <= hi\n");
    dg_free(dg);
    ir_graph_free(g);
}

static void test_sizes_and_budget(void)
{
    ir_graph *g = ir_graph_new("sizes");
    dg_context *dg = dg_new();
    static const double zero = 0;
    int64_t n_dim = ir_symbol(g, "N", 1);
    const int64_t sym_dims[] = {n_dim, 3};
    ir_value *sym = add_literal(g, "s", IR_F32, 2, sym_dims, &zero, 1);
    CHECK(ir_const_data(g, sym, dg) == NULL);
    static const int64_t over_budget[] = {((int64_t)1 << 32) + 1};
    ir_value *big = add_literal(g, "big", IR_F32, 1, over_budget, &zero, 1);
    CHECK(ir_const_data(g, big, dg) == NULL);
    static const int64_t too_many[] = {(int64_t)1 << 30, (int64_t)1 << 30, 4};
    ir_value *many = add_literal(g, "many", IR_U8, 3, too_many, &zero, 1);
    CHECK(ir_const_data(g, many, dg) == NULL);
    CHECK_DIAG(dg, "fuserule: error: constant 's' needs a static type to hold data, not f32[N,3]\n"
                   "fuserule: error: constant 'big' of type f32[4294967297] is too large "
                   "(constants are limited to 16 GiB)\n"
                   "fuserule: error: constant 'many' of type u8[1073741824,1073741824,4] is too "
                   "large (constants are limited to 16 GiB)\n");
    dg_free(dg);
    ir_graph_free(g);
}

static void test_file_constants(void)
{
    char dir[PATH_SIZE];
    tmp_path(dir, "files");
    CHECK(mkdir(dir, 0700) == 0);
    float conv[6] = {1, 2, 3, 4, 5, 6};
    uint16_t scale[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
    st_entry e[] = {{"conv.weight", IR_F32, 2, dims_2x3, conv, sizeof conv},
                    {"bn.scale", IR_F16, 1, dims_4, scale, sizeof scale}};
    char path[PATH_SIZE];
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "files/weights.safetensors"), e, 2, dg));
    write_raw(tmp_path(path, "files/wide.safetensors"),
              "{\"d\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8);

    ir_graph *g = ir_graph_new("files");
    g->dir = ar_strdup(g->arena, dir);
    ir_value *w = add_file_const(g, "w", IR_F32, 2, dims_2x3, "weights.safetensors", "conv.weight");
    ir_value *s = add_file_const(g, "s", IR_F16, 1, dims_4, "weights.safetensors", "bn.scale");
    CHECK(!ir_const_is_cheap(w));
    const void *wd = ir_const_data(g, w, dg);
    CHECK(wd && memcmp(wd, conv, sizeof conv) == 0);
    CHECK(ir_const_is_cheap(w));
    /* the file was opened once and stays open: removing it now does not matter */
    CHECK(unlink(tmp_path(path, "files/weights.safetensors")) == 0);
    const void *sd = ir_const_data(g, s, dg);
    CHECK(sd && memcmp(sd, scale, sizeof scale) == 0);
    CHECK_DIAG(dg, "");

    /* an absolute path is not joined to the graph's folder */
    ir_value *abs = add_file_const(g, "abs", IR_F32, 1, dims_2,
                                   tmp_path(path, "files/wide.safetensors"), "d");
    ir_value *missing_key = add_file_const(g, "k", IR_F32, 2, dims_2x3, "weights.safetensors",
                                           "nope");
    ir_value *wrong_dtype = add_file_const(g, "x", IR_F16, 2, dims_2x3, "weights.safetensors",
                                           "conv.weight");
    static const int64_t dims_3x2[] = {3, 2};
    ir_value *wrong_shape = add_file_const(g, "y", IR_F32, 2, dims_3x2, "weights.safetensors",
                                           "conv.weight");
    ir_value *missing1 = add_file_const(g, "p", IR_F32, 1, dims_2, "gone.safetensors", "a");
    ir_value *missing2 = add_file_const(g, "q", IR_F32, 1, dims_2, "gone.safetensors", "b");
    CHECK(ir_const_data(g, abs, dg) == NULL);
    CHECK(ir_const_data(g, missing_key, dg) == NULL);
    CHECK(ir_const_data(g, wrong_dtype, dg) == NULL);
    CHECK(ir_const_data(g, wrong_shape, dg) == NULL);
    CHECK(ir_const_data(g, missing1, dg) == NULL);
    CHECK(ir_const_data(g, missing2, dg) == NULL);
    CHECK_DIAG(dg, "fuserule: error: constant 'abs': tensor \"d\" in DIR/files/wide.safetensors "
                   "has dtype C64, which fuserule does not support\n"
                   "fuserule: error: constant 'k': no tensor \"nope\" in "
                   "DIR/files/weights.safetensors\n"
                   "fuserule: error: constant 'x' is declared f16 but tensor \"conv.weight\" in "
                   "DIR/files/weights.safetensors is F32\n"
                   "fuserule: error: constant 'y' is declared f32[3,2] but tensor "
                   "\"conv.weight\" in DIR/files/weights.safetensors has shape [2,3]\n"
                   "DIR/files/gone.safetensors: error: cannot open: No such file or directory\n"
                   "fuserule: error: constant 'p' cannot be loaded from "
                   "DIR/files/gone.safetensors\n"
                   "fuserule: error: constant 'q': DIR/files/gone.safetensors could not be "
                   "loaded (see above)\n");
    dg_free(dg);
    ir_graph_free(g);
}

static void test_set_data(void)
{
    ir_graph *g = ir_graph_new("set");
    static const double zero = 0;
    ir_value *v = add_literal(g, "v", IR_I32, 1, dims_3, &zero, 1);
    int32_t values[3] = {7, 8, 9};
    ir_const_set_data(g, v, values, sizeof values);
    values[0] = 0; /* the constant holds a copy */
    CHECK_INT(v->konst->kind, IR_CONST_DATA);
    CHECK(ir_const_is_cheap(v));
    dg_context *dg = dg_new();
    const int32_t *d = ir_const_data(g, v, dg);
    CHECK(d && d[0] == 7 && d[2] == 9);
    CHECK_INT(v->konst->nbytes, 12);
    ir_type t = make_type(IR_F32, 1, dims_2);
    ir_value *x = ir_add_input(g, "x", &t);
    CHECK(!ir_const_is_cheap(x));
    dg_free(dg);
    ir_graph_free(g);
}

/* ---- ir_save --------------------------------------------------------------------------------- */

/* x + w, with w in memory and b a literal. */
static ir_graph *saved_graph(const float *w_data)
{
    ir_graph *g = ir_graph_new("model");
    ir_type t = make_type(IR_F32, 1, dims_4);
    ir_value *x = ir_add_input(g, "x", &t);
    ir_value *w = ir_add_const(g, "w", &t, ir_const_new(g, IR_CONST_DATA));
    ir_const_set_data(g, w, w_data, 16);
    static const double one = 1;
    ir_value *b = add_literal(g, "b", IR_F32, 1, dims_4, &one, 1);
    const char *names1[] = {"y"}, *names2[] = {"z"};
    ir_node *add = ir_add_node(g, IR_OP_Add, 2, names1, 1);
    ir_set_input(add, 0, x);
    ir_set_input(add, 1, w);
    ir_node *add2 = ir_add_node(g, IR_OP_Add, 2, names2, 1);
    ir_set_input(add2, 0, add->outputs[0]);
    ir_set_input(add2, 1, b);
    ir_add_output(g, add2->outputs[0]);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    CHECK_DIAG(dg, "");
    dg_free(dg);
    return g;
}

static void test_save_writes_both_files(void)
{
    char dir[PATH_SIZE], graph_path[PATH_SIZE], st_path[PATH_SIZE];
    CHECK(mkdir(tmp_path(dir, "save"), 0700) == 0);
    tmp_path(graph_path, "save/model.graph");
    tmp_path(st_path, "save/model.safetensors");
    const float w_data[4] = {0.5f, -1, 2, 3};
    ir_graph *g = saved_graph(w_data);
    dg_context *dg = dg_new();
    CHECK(ir_save(g, graph_path, dg));
    CHECK_DIAG(dg, "");
    CHECK_INT(g->values.items[1]->konst->kind, IR_CONST_FILE);
    CHECK_STR(g->values.items[1]->konst->file, "model.safetensors");
    CHECK_STR(g->values.items[1]->konst->key, "w");
    CHECK_INT(count_temporaries(dir), 0);

    char *text = read_all(graph_path, NULL);
    CHECK(text && strstr(text, "file(\"model.safetensors\", \"w\")") != NULL);
    st_file *f = st_open(st_path, dg);
    CHECK(f && st_count(f) == 1);
    const st_tensor *t = f ? st_find(f, "w") : NULL;
    CHECK(t && t->dtype == IR_F32 && t->rank == 1 && t->dims[0] == 4 &&
          memcmp(t->data, w_data, 16) == 0);
    st_close(f);

    /* saving again gives byte-identical files */
    size_t st_len;
    char *st_bytes = read_all(st_path, &st_len);
    CHECK(ir_save(g, graph_path, dg));
    char *text2 = read_all(graph_path, NULL);
    size_t st_len2;
    char *st_bytes2 = read_all(st_path, &st_len2);
    CHECK(text && text2 && strcmp(text, text2) == 0);
    CHECK(st_len == st_len2 && memcmp(st_bytes, st_bytes2, st_len) == 0);
    free(text);
    free(text2);
    free(st_bytes);
    free(st_bytes2);

    /* the saved graph loads back with the same data */
    ir_graph *back = ir_load_text(graph_path, dg);
    CHECK(back != NULL);
    ir_value *w = back ? ir_find_value(back, "w") : NULL;
    const void *wd = w ? ir_const_data(back, w, dg) : NULL;
    CHECK(wd && memcmp(wd, w_data, 16) == 0);
    CHECK_DIAG(dg, "");
    ir_graph_free(back);
    ir_graph_free(g);
    dg_free(dg);
}

static void test_save_without_data_writes_no_safetensors(void)
{
    char dir[PATH_SIZE], graph_path[PATH_SIZE], st_path[PATH_SIZE];
    CHECK(mkdir(tmp_path(dir, "plain"), 0700) == 0);
    ir_graph *g = ir_graph_new("plain");
    ir_type t = make_type(IR_F32, 1, dims_4);
    ir_value *x = ir_add_input(g, "x", &t);
    const char *names[] = {"y"};
    ir_node *n = ir_add_node(g, IR_OP_Relu, 1, names, 1);
    ir_set_input(n, 0, x);
    ir_add_output(g, n->outputs[0]);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    CHECK(ir_save(g, tmp_path(graph_path, "plain/plain.graph"), dg));
    CHECK(exists(graph_path));
    CHECK(!exists(tmp_path(st_path, "plain/plain.safetensors")));
    CHECK_DIAG(dg, "");
    dg_free(dg);
    ir_graph_free(g);
}

/* A failed save changes nothing: not the old files, not the graph, and leaves no temporaries. */
static void test_failed_save_leaves_old_files(void)
{
    char dir[PATH_SIZE], graph_path[PATH_SIZE], st_path[PATH_SIZE];
    CHECK(mkdir(tmp_path(dir, "fail"), 0700) == 0);
    /* the graph's name is taken by a folder: the last rename fails after the safetensors file
     * was already renamed into place, which must then be put back */
    CHECK(mkdir(tmp_path(graph_path, "fail/model.graph"), 0700) == 0);
    write_bytes(tmp_path(st_path, "fail/model.safetensors"), "old weights", 11);
    const float w_data[4] = {1, 2, 3, 4};
    ir_graph *g = saved_graph(w_data);
    dg_context *dg = dg_new();
    CHECK(!ir_save(g, graph_path, dg));
    CHECK_DIAG(dg, "DIR/fail/model.graph: error: cannot rename into place: Is a directory\n");
    char *old = read_all(st_path, NULL);
    CHECK_STR(old, "old weights");
    free(old);
    CHECK_INT(count_temporaries(dir), 0);
    CHECK_INT(g->values.items[1]->konst->kind, IR_CONST_DATA); /* the graph is as it was */
    dg_free(dg);

    /* the same with no previous safetensors file: the new one is removed again */
    CHECK(unlink(st_path) == 0);
    dg = dg_new();
    CHECK(!ir_save(g, graph_path, dg));
    CHECK(!exists(st_path));
    CHECK_INT(count_temporaries(dir), 0);
    dg_free(dg);

    /* a folder that does not exist */
    dg = dg_new();
    CHECK(!ir_save(g, tmp_path(graph_path, "fail/nowhere/model.graph"), dg));
    CHECK_DIAG(dg, "DIR/fail/nowhere/model.graph: error: cannot write into DIR/fail/nowhere: No "
                   "such file or directory\n");
    dg_free(dg);

    /* an unwritable folder (permissions do not stop root, who skips this part) */
    if (geteuid() != 0) {
        char ro[PATH_SIZE], ro_graph[PATH_SIZE], ro_st[PATH_SIZE];
        CHECK(mkdir(tmp_path(ro, "readonly"), 0700) == 0);
        write_bytes(tmp_path(ro_graph, "readonly/model.graph"), "old graph", 9);
        write_bytes(tmp_path(ro_st, "readonly/model.safetensors"), "old weights", 11);
        CHECK(chmod(ro, 0500) == 0);
        dg = dg_new();
        CHECK(!ir_save(g, ro_graph, dg));
        char *kept_graph = read_all(ro_graph, NULL), *kept_st = read_all(ro_st, NULL);
        CHECK_STR(kept_graph, "old graph");
        CHECK_STR(kept_st, "old weights");
        free(kept_graph);
        free(kept_st);
        CHECK_INT(count_temporaries(ro), 0);
        dg_free(dg);
        chmod(ro, 0700);
    }
    ir_graph_free(g);
}

/* Saving over the graph's own files keeps the constants that were read from them, and saving
 * into another folder rewrites file() paths to reach the same files. */
static void test_save_over_itself_and_elsewhere(void)
{
    char dir[PATH_SIZE], other[PATH_SIZE], path[PATH_SIZE];
    CHECK(mkdir(tmp_path(dir, "self"), 0700) == 0);
    CHECK(mkdir(tmp_path(other, "elsewhere"), 0700) == 0);
    float old_w[4] = {9, 8, 7, 6};
    st_entry e[] = {{"old", IR_F32, 1, dims_4, old_w, sizeof old_w}};
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "self/model.safetensors"), e, 1, dg));
    CHECK(write_entries(tmp_path(path, "self/shared.safetensors"), e, 1, dg));

    const float w_data[4] = {1, 2, 3, 4};
    ir_graph *g = saved_graph(w_data);
    g->dir = ar_strdup(g->arena, dir);
    ir_value *kept = add_file_const(g, "kept", IR_F32, 1, dims_4, "model.safetensors", "old");
    ir_value *shared = add_file_const(g, "shared", IR_F32, 1, dims_4, "shared.safetensors", "old");
    CHECK(ir_save(g, tmp_path(path, "self/model.graph"), dg));
    CHECK_DIAG(dg, "");
    CHECK_STR(kept->konst->file, "model.safetensors");
    CHECK_STR(kept->konst->key, "kept");
    CHECK_STR(shared->konst->file, "shared.safetensors");
    st_file *f = st_open(tmp_path(path, "self/model.safetensors"), dg);
    CHECK(f && st_count(f) == 2 && st_find(f, "kept") && st_find(f, "w"));
    CHECK(f && memcmp(st_find(f, "kept")->data, old_w, 16) == 0);
    st_close(f);

    CHECK(ir_save(g, tmp_path(path, "elsewhere/copy.graph"), dg));
    CHECK_DIAG(dg, "");
    /* nothing is in memory any more: no copy.safetensors, every file() reaches back */
    CHECK_STR(shared->konst->file, "../self/shared.safetensors");
    CHECK_STR(kept->konst->file, "../self/model.safetensors");
    CHECK(!exists(tmp_path(other, "elsewhere/copy.safetensors")));
    tmp_path(other, "elsewhere");
    CHECK_STR(g->dir, other);
    ir_graph *back = ir_load_text(path, dg);
    CHECK(back != NULL);
    ir_value *s = back ? ir_find_value(back, "shared") : NULL;
    const void *sd = s ? ir_const_data(back, s, dg) : NULL;
    CHECK(sd && memcmp(sd, old_w, 16) == 0);
    CHECK_DIAG(dg, "");
    ir_graph_free(back);
    ir_graph_free(g);
    dg_free(dg);
}

/* ---- tensors written from rows (concatenated weights) ------------------------------------- */

/* st_write_rows of rows from parts gives the bytes st_write gives for the same tensor put
 * together; rows that do not hold the tensor's bytes are refused. */
static void test_write_rows(void)
{
    /* [2, 3] = [a | b] with a [2, 1] and b [2, 2] */
    static const float a[2] = {1, 4}, b[4] = {2, 3, 5, 6}, whole[6] = {1, 2, 3, 4, 5, 6};
    const ir_const_part parts[2] = {{a, 4}, {b, 8}};
    st_entry e[2] = {{"cat", IR_F32, 2, dims_2x3, NULL, sizeof whole},
                     {"i32", IR_I32, 2, dims_2x2, i32_values, sizeof i32_values}};
    st_rows rows[2] = {{parts, 2, 2}, {NULL, 0, 0}};
    char rows_path[PATH_SIZE], whole_path[PATH_SIZE];
    dg_context *dg = dg_new();
    FILE *f = fopen(tmp_path(rows_path, "rows.safetensors"), "wb");
    CHECK(f && st_write_rows(f, rows_path, e, rows, 2, dg));
    CHECK(f && fclose(f) == 0);
    e[0].data = whole;
    CHECK(write_entries(tmp_path(whole_path, "whole.safetensors"), e, 2, dg));
    CHECK_DIAG(dg, "");
    size_t n1, n2;
    char *b1 = read_all(rows_path, &n1), *b2 = read_all(whole_path, &n2);
    CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
    free(b1);
    free(b2);

    e[0].data = NULL;
    rows[0].rows = 3; /* 3 rows of 12 bytes are not the tensor's 24 */
    f = fopen(rows_path, "wb");
    CHECK(f && !st_write_rows(f, rows_path, e, rows, 2, dg));
    CHECK(f && fclose(f) == 0);
    CHECK_DIAG(dg, "DIR/rows.safetensors: error: tensor 'cat': 24 bytes of data do not match "
                   "its shape\n");
    dg_free(dg);
    dg = dg_new();
    CHECK(!write_entries(rows_path, e, 1, dg)); /* no rows at all */
    CHECK_DIAG(dg, "DIR/rows.safetensors: error: tensor 'cat': 24 bytes of data do not match "
                   "its shape\n");
    dg_free(dg);
}

/* `y = Add(x, w)`: x an input of type t, w a constant of `rows` rows, each the parts side by side
 * (ir_const_set_rows: written, never put together in memory). */
static ir_graph *add_rows_graph(const ir_type *t, size_t rows, const ir_const_part *parts,
                                uint32_t nparts)
{
    ir_graph *g = ir_graph_new("model");
    ir_value *x = ir_add_input(g, "x", t);
    ir_value *w = ir_add_const(g, "w", t, ir_const_new(g, IR_CONST_DATA));
    ir_const_set_rows(g, w, rows, parts, nparts);
    const char *names[] = {"y"};
    ir_node *add = ir_add_node(g, IR_OP_Add, 2, names, 1);
    ir_set_input(add, 0, x);
    ir_set_input(add, 1, w);
    ir_add_output(g, add->outputs[0]);
    return g;
}

/* ir_save writes a constant assembled from rows (ir_const_set_rows) row by row: the file holds
 * the rows side by side, the constant is never put together in memory, and the saved graph
 * reads back the same values. */
static void test_save_rows_constant(void)
{
    static const float a[2] = {1, 4}, b[4] = {2, 3, 5, 6}, whole[6] = {1, 2, 3, 4, 5, 6};
    char dir[PATH_SIZE], graph_path[PATH_SIZE];
    CHECK(mkdir(tmp_path(dir, "rows"), 0700) == 0);
    tmp_path(graph_path, "rows/model.graph");
    ir_type t = make_type(IR_F32, 2, dims_2x3);
    const ir_const_part parts[2] = {{a, 4}, {b, 8}};
    ir_graph *g = add_rows_graph(&t, 2, parts, 2);
    ir_value *w = ir_find_value(g, "w");
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    CHECK(ir_save(g, graph_path, dg));
    CHECK_DIAG(dg, "");
    CHECK(w->konst->data == NULL); /* written from the rows, not assembled */
    ir_graph *back = ir_load_text(graph_path, dg);
    ir_value *wb = back ? ir_find_value(back, "w") : NULL;
    const void *wd = wb ? ir_const_data(back, wb, dg) : NULL;
    CHECK(wd && memcmp(wd, whole, sizeof whole) == 0);
    CHECK_DIAG(dg, "");
    ir_graph_free(back);
    ir_graph_free(g);
    dg_free(dg);
}

/* An input file that another program truncates while a save copies its weights out of the map
 * (a graph saved over itself copies the weights of the file it replaces): the process ends with
 * status 2 and a message naming that file, the old graph text stays whole and no temporary is
 * left (base/mapwatch). In a child process, which the handler ends. */
static void test_input_shrinking_during_save(void)
{
    static float big[256 * 1024]; /* 1 MiB: the save reads pages far past the truncation */
    static const int64_t dims_big[] = {256 * 1024};
    for (size_t i = 0; i < sizeof big / sizeof *big; i++)
        big[i] = (float)i;
    char dir[PATH_SIZE], in_path[PATH_SIZE], in_st[PATH_SIZE], err_path[PATH_SIZE];
    CHECK(mkdir(tmp_path(dir, "shrink"), 0700) == 0);
    tmp_path(in_path, "shrink/in.graph");
    tmp_path(in_st, "shrink/in.safetensors");
    tmp_path(err_path, "shrink/stderr.txt");
    ir_type t = make_type(IR_F32, 1, dims_big);
    const ir_const_part whole = {big, sizeof big};
    ir_graph *g = add_rows_graph(&t, 1, &whole, 1);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg) && ir_save(g, in_path, dg));
    ir_graph_free(g);
    size_t old_len;
    char *old_text = read_all(in_path, &old_len);
    ir_graph *back = ir_load_text(in_path, dg); /* its weights stay in the mapped file */
    CHECK(back != NULL);
    CHECK_DIAG(dg, "");
    if (!back)
        return;
    /* a new weight: the save writes a new in.safetensors, copying w out of the old one */
    ir_value *b = ir_add_const(back, "b", &t, ir_const_new(back, IR_CONST_DATA));
    ir_const_set_rows(back, b, 1, &whole, 1);
    const char *names2[] = {"z"};
    ir_node *add2 = ir_add_node(back, IR_OP_Add, 2, names2, 1);
    ir_set_input(add2, 0, ir_find_value(back, "y"));
    ir_set_input(add2, 1, b);
    ir_add_output(back, add2->outputs[0]);
    CHECK(ir_validate(back, dg));
    size_t w_bytes; /* opens and maps the file, copying nothing */
    CHECK(ir_const_bytes(back, ir_find_value(back, "w"), &w_bytes, dg) != NULL);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(err_path, "w", stderr) || truncate(in_st, 4096) != 0)
            _exit(90);
        mw_install("fuserule");
        bool saved = ir_save(back, in_path, dg);
        dg_print(dg, stderr);
        _exit(saved ? 0 : 3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == MW_EXIT_STATUS);
    char *err = read_all(err_path, NULL);
    CHECK(err && strstr(err, "in.safetensors: the file shrank while it was being read") != NULL);
    size_t now_len;
    char *now_text = read_all(in_path, &now_len);
    CHECK(old_text && now_text && old_len == now_len && memcmp(old_text, now_text, now_len) == 0);
    CHECK_INT(count_temporaries(dir), 0);
    free(err);
    free(old_text);
    free(now_text);
    ir_graph_free(back);
    dg_free(dg);
}

/* The header's exact text: names with and without characters to escape, sizes of several
 * digits and 0. */
static void test_header_text(void)
{
    static float data[300];
    static const int64_t dims_300[] = {300}, dims_1x0[] = {1, 0};
    st_entry e[] = {{"plain.w", IR_F32, 1, dims_300, data, sizeof data},
                    {"q\"\\\n\x01", IR_F32, 1, dims_300, data, sizeof data},
                    {"empty", IR_F32, 2, dims_1x0, NULL, 0}};
    char path[PATH_SIZE];
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "header.safetensors"), e, 3, dg));
    CHECK_DIAG(dg, "");
    size_t len;
    char *bytes = read_all(path, &len);
    const char *expected =
        "{\"empty\":{\"dtype\":\"F32\",\"shape\":[1,0],\"data_offsets\":[0,0]},"
        "\"plain.w\":{\"dtype\":\"F32\",\"shape\":[300],\"data_offsets\":[0,1200]},"
        "\"q\\\"\\\\\\n\\u0001\":{\"dtype\":\"F32\",\"shape\":[300],\"data_offsets\":[1200,2400]}}";
    size_t n = strlen(expected);
    CHECK(bytes && len >= 8 + n && memcmp(bytes + 8, expected, n) == 0);
    free(bytes);
    dg_free(dg);
}

/* ---- order: many tensors -------------------------------------------------------------------- */

static int entry_by_name(const void *a, const void *b)
{
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

static int entry_by_layout(const void *a, const void *b)
{
    size_t x = ir_dtype_size(((const st_entry *)a)->dtype);
    size_t y = ir_dtype_size(((const st_entry *)b)->dtype);
    return x != y ? (x > y ? -1 : 1) : entry_by_name(a, b);
}

/* Many tensors of every dtype, with names that share long prefixes, are shorter than 8 bytes or
 * hold UTF-8 (the writer sorts by each name's first 8 bytes, then by strcmp within ties): the
 * header lists them as strcmp orders them, and the data lies widest element first, then by name;
 * checked byte for byte against qsort of the same entries. A duplicate among them is found. */
static void test_write_order(void)
{
    enum { N = 700, NAME = 64 };
    static const ir_dtype dtypes[] = {IR_F32,  IR_F16, IR_BF16, IR_I8,  IR_U8,  IR_I32, IR_I64,
                                      IR_BOOL, IR_F64, IR_I16,  IR_U16, IR_U32, IR_U64};
    static const char *const stems[] = {"w",
                                        "b.",
                                        "layer.0.attention.",
                                        "layer.0.attn",
                                        "layer.1",
                                        "\xc3\xa9t\xc3\xa9",
                                        "z",
                                        "layer.0.attention.q"};
    static char names[N][NAME];
    static int64_t dims[N][1];
    static unsigned char data[N][24];
    static st_entry e[N], by_name[N], by_layout[N];
    uint64_t seed = 20;
    for (size_t i = 0; i < N; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        const char *stem = stems[(seed >> 33) % (sizeof stems / sizeof *stems)];
        if (i % 5 == 0)
            snprintf(names[i], NAME, "%s%zu", stem, i); /* some of them short */
        else
            snprintf(names[i], NAME, "%s%02u_%zu", stem, (unsigned)(seed >> 40) % 100, i);
        ir_dtype dt = dtypes[(seed >> 20) % (sizeof dtypes / sizeof *dtypes)];
        dims[i][0] = 1 + (int64_t)((seed >> 50) % 3);
        size_t nbytes = (size_t)dims[i][0] * ir_dtype_size(dt);
        for (size_t k = 0; k < nbytes; k++)
            data[i][k] = (unsigned char)(i * 7 + k);
        e[i] = (st_entry){names[i], dt, 1, dims[i], data[i], nbytes};
    }
    memcpy(by_name, e, sizeof e);
    memcpy(by_layout, e, sizeof e);
    qsort(by_name, N, sizeof *by_name, entry_by_name);
    qsort(by_layout, N, sizeof *by_layout, entry_by_layout);

    /* the expected header and data */
    size_t cap = 200 * N, len = 0, data_len = 0;
    char *header = malloc(cap);
    unsigned char *bytes = malloc(sizeof data);
    if (!header || !bytes)
        abort();
    for (size_t i = 0; i < N; i++) {
        memcpy(bytes + data_len, by_layout[i].data, by_layout[i].nbytes);
        data_len += by_layout[i].nbytes;
    }
    len += (size_t)snprintf(header + len, cap - len, "{");
    for (size_t i = 0; i < N; i++) {
        uint64_t begin = 0;
        for (size_t k = 0; strcmp(by_layout[k].name, by_name[i].name) != 0; k++)
            begin += by_layout[k].nbytes;
        len += (size_t)snprintf(header + len, cap - len,
                                "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld],\"data_offsets\":"
                                "[%llu,%llu]}",
                                i ? "," : "", by_name[i].name, st_dtype_name(by_name[i].dtype),
                                (long long)by_name[i].dims[0], (unsigned long long)begin,
                                (unsigned long long)(begin + by_name[i].nbytes));
    }
    len += (size_t)snprintf(header + len, cap - len, "}");
    while (len % 8)
        header[len++] = ' ';

    char path[PATH_SIZE];
    dg_context *dg = dg_new();
    CHECK(write_entries(tmp_path(path, "order.safetensors"), e, N, dg));
    CHECK_DIAG(dg, "");
    size_t got_len;
    unsigned char *got = (unsigned char *)read_all(path, &got_len);
    uint64_t header_len = 0;
    for (int i = 0; got && got_len >= 8 && i < 8; i++)
        header_len |= (uint64_t)got[i] << (8 * i);
    CHECK(got && header_len == len && got_len == 8 + len + data_len);
    if (got && header_len == len && got_len == 8 + len + data_len) {
        CHECK(memcmp(got + 8, header, len) == 0);
        CHECK(memcmp(got + 8 + len, bytes, data_len) == 0);
    }
    free(got);
    dg_free(dg);

    e[N - 1].name = e[N / 2].name; /* a duplicate */
    dg = dg_new();
    CHECK(!write_entries(tmp_path(path, "order.safetensors"), e, N, dg));
    char expected[160];
    snprintf(expected, sizeof expected,
             "DIR/order.safetensors: error: two tensors are named \"%s\"\n", e[N / 2].name);
    CHECK_DIAG(dg, expected);
    dg_free(dg);
    free(header);
    free(bytes);
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "%s/fr_safetensors_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_roundtrip_every_dtype);
    RUN(test_empty_file_roundtrip);
    RUN(test_reader_accepts_foreign_files);
    RUN(test_writer_refuses);
    RUN(test_json_escapes_in_names);
    RUN(test_open_errors);
    RUN(test_malformed_corpus);
    RUN(test_every_truncation_and_byte_flip);
    RUN(test_random_known_values);
    RUN(test_random_chunked_equals_whole);
    RUN(test_random_ranges);
    RUN(test_literal_constants);
    RUN(test_errors_are_located);
    RUN(test_random_constants);
    RUN(test_sizes_and_budget);
    RUN(test_file_constants);
    RUN(test_set_data);
    RUN(test_save_writes_both_files);
    RUN(test_save_without_data_writes_no_safetensors);
    RUN(test_failed_save_leaves_old_files);
    RUN(test_save_over_itself_and_elsewhere);
    RUN(test_write_rows);
    RUN(test_save_rows_constant);
    RUN(test_input_shrinking_during_save);
    RUN(test_header_text);
    RUN(test_write_order);
    remove_tree(tmp_root);
    return unit_finish();
}
