/* base/: zero-size arena allocations, UTF-8 validation, paths, JSON strings, the shortest text
 * of numbers (against the printf/strtod searches it replaces), sources opened by mapping, large
 * zeroed blocks and the string map across its small and huge-page tables. */
#include "../unit.h"

#include "base/arena.h"
#include "base/bigmem.h"
#include "base/diag.h"
#include "base/json.h"
#include "base/numtext.h"
#include "base/path.h"
#include "base/strmap.h"
#include "base/utf8.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An array of no elements is a valid allocation (never NULL), first in an arena or after others,
 * and it takes no room from the allocations around it. */
static void test_arena_zero_size(void)
{
    ar_arena *a = ar_new();
    void *first = ar_alloc_array(a, 0, sizeof(int64_t));
    CHECK(first != NULL);
    CHECK(ar_alloc(a, 0) != NULL);
    CHECK(ar_try_alloc(a, 0) != NULL);
    int64_t *x = ar_alloc_array(a, 4, sizeof *x);
    x[3] = 7;
    void *empty = ar_alloc_array(a, 0, sizeof(double));
    CHECK(empty != NULL);
    int64_t *y = ar_alloc_array(a, 2, sizeof *y);
    CHECK(y != NULL && (uintptr_t)y % 8 == 0);
    y[0] = y[1] = 1;
    /* allocations pack to 8 bytes: a 24-byte one is followed directly by the next */
    char *p = ar_alloc(a, 24), *q = ar_alloc(a, 8);
    CHECK(q == p + 24);
    CHECK_INT(x[3], 7);
    for (int i = 0; i < 10000; i++) /* across the end of a block */
        CHECK(ar_alloc(a, i % 3 ? 0 : 40) != NULL);
    ar_free(a);
}

/* An arena that fills blocks up to its largest (mapped, zeroed) ones: every allocation comes
 * zeroed and aligned, small ones and payloads of their own block alike, and none overlaps the
 * one before it (each is filled with its own byte and checked after the next). */
static void test_arena_growth(void)
{
    ar_arena *a = ar_new();
    unsigned char *prev = NULL;
    size_t prev_size = 0;
    for (size_t i = 0, total = 0; total < 24u << 20; i++) {
        size_t size = i % 97 == 0 ? 20000 + i % 5000 : 1 + i % 200;
        unsigned char *p = ar_alloc(a, size);
        CHECK((uintptr_t)p % 8 == 0);
        size_t nonzero = 0, changed = 0;
        for (size_t k = 0; k < size; k++)
            nonzero += p[k] != 0;
        memset(p, (int)(i % 255) + 1, size);
        for (size_t k = 0; prev && k < prev_size; k++)
            changed += prev[k] != (unsigned char)((i - 1) % 255 + 1);
        CHECK(nonzero == 0 && changed == 0);
        prev = p;
        prev_size = size;
        total += size;
    }
    CHECK(ar_bytes_used(a) >= 24u << 20);
    ar_free(a);
}

/* Blocks on both sides of the huge-page threshold are zeroed, writable to their last byte, and
 * those of 2 MiB or more are aligned to it. */
static void test_bigmem(void)
{
    const size_t sizes[] = {1, 4096, BM_HUGE - 1, BM_HUGE, BM_HUGE + 1, 3 * (size_t)BM_HUGE + 17};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = bm_alloc(sizes[i]);
        CHECK(p != NULL);
        CHECK(p[0] == 0 && p[sizes[i] / 2] == 0 && p[sizes[i] - 1] == 0);
        p[0] = p[sizes[i] - 1] = 0xab;
        if (sizes[i] >= BM_HUGE)
            CHECK((uintptr_t)p % BM_HUGE == 0);
        bm_free(p, sizes[i]);
    }
    bm_free(NULL, BM_HUGE);
}

/* Names in and out of a map that grows from its first slots to a table of huge pages (200k keys,
 * 8 MiB of slots): every key found with its value, absent ones not, and a repeated insert finds
 * the first. */
static void test_strmap(void)
{
    enum { N = 200000 };
    char(*names)[16] = malloc(N * sizeof *names);
    CHECK(names != NULL);
    for (int i = 0; i < N; i++)
        snprintf(names[i], sizeof names[i], "v%d", i);
    sm_map m = {0};
    CHECK(sm_get(&m, "v0", 2) == NULL);
    for (int i = 0; i < N; i++) {
        bool inserted = false;
        sm_slot *s = sm_insert(&m, names[i], strlen(names[i]), &inserted);
        CHECK(inserted && s->value == NULL);
        s->value = names[i];
    }
    CHECK_INT(m.len, N);
    CHECK(m.cap * sizeof(sm_slot) >= BM_HUGE);
    for (int i = 0; i < N; i++)
        CHECK(sm_get(&m, names[i], strlen(names[i])) == names[i]);
    CHECK(sm_get(&m, "v200000", 7) == NULL && sm_get(&m, "v", 1) == NULL);
    bool inserted = true;
    sm_slot *again = sm_insert(&m, "v123", 4, &inserted);
    CHECK(!inserted && again->value == names[123]);
    CHECK(sm_put(&m, "v7", 2, names[8]) == names[7] && sm_get(&m, "v7", 2) == names[8]);
    CHECK_INT(m.len, N);
    sm_free(&m);
    CHECK(m.slots == NULL && m.cap == 0 && m.len == 0);
    free(names);
}

/* The name map's slots: keys that share bytes or differ only in length are distinct, a value is
 * found again after the table grows many times, and a slot is 24 bytes (its hash and key length 32
 * bits each). */
static void test_strmap_slots(void)
{
    CHECK_INT(sizeof(sm_slot), 24);
    sm_map m = {0};
    enum { N = 20000 };
    static char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "v%d", i);
        CHECK(sm_put(&m, names[i], strlen(names[i]), &names[i]) == NULL);
    }
    CHECK_INT(m.len, N);
    for (int i = 0; i < N; i++)
        CHECK(sm_get(&m, names[i], strlen(names[i])) == &names[i]);
    CHECK(sm_get(&m, "v1", 1) == NULL); /* "v", a prefix of a key */
    CHECK(sm_get(&m, "v19999x", 7) == NULL);
    bool inserted;
    sm_slot *s = sm_insert(&m, "v7", 2, &inserted);
    CHECK(!inserted && s->value == &names[7]);
    s = sm_insert(&m, "w", 1, &inserted);
    CHECK(inserted && s->value == NULL);
    s->value = &m;
    CHECK(sm_put(&m, "w", 1, NULL) == &m);
    sm_free(&m);
}

static size_t invalid_at(const char *s)
{
    return utf8_invalid_at((const unsigned char *)s, strlen(s));
}

static void test_utf8(void)
{
    CHECK_INT(invalid_at("plain ascii"), 11);
    CHECK_INT(invalid_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), 14);
    CHECK_INT(invalid_at("a\xc0\xafz"), 1);        /* overlong '/' */
    CHECK_INT(invalid_at("ab\xe0\x80\xaf"), 2);    /* overlong, three bytes */
    CHECK_INT(invalid_at("\xed\xa0\x80"), 0);      /* a surrogate */
    CHECK_INT(invalid_at("x\xf4\x90\x80\x80"), 1); /* above U+10FFFF */
    CHECK_INT(invalid_at("x\xf5\x80\x80\x80"), 1);
    CHECK_INT(invalid_at("\x80"), 0);       /* a lone continuation byte */
    CHECK_INT(invalid_at("ok\xe2\x82"), 2); /* cut short */
    const unsigned char euro[] = "\xe2\x82\xac";
    CHECK_INT(utf8_sequence(euro, 3), 3);
    CHECK_INT(utf8_sequence(euro, 2), 0);
    CHECK_INT(utf8_sequence(euro, SIZE_MAX), 3);
    CHECK_INT(utf8_sequence((const unsigned char *)"\xe2\x82", SIZE_MAX), 0); /* NUL ends it */
}

static void test_paths(void)
{
    CHECK_STR(path_base("a/b/c.graph"), "c.graph");
    CHECK_STR(path_base("c.graph"), "c.graph");
    CHECK_STR(path_base("/c"), "c");
    ar_arena *a = ar_new();
    CHECK_STR(path_dir(a, "a/b/c.graph"), "a/b");
    CHECK_STR(path_dir(a, "c.graph"), ".");
    CHECK_STR(path_dir(a, "/c.graph"), "/");
    CHECK_STR(path_beside(a, "t/x.test", "w.safetensors"), "t/w.safetensors");
    CHECK_STR(path_beside(a, "/x.test", "w"), "/w");
    CHECK_STR(path_beside(a, "x.test", "w"), "w");
    CHECK_STR(path_beside(a, "t/x.test", "/abs/w"), "/abs/w");
    char *m = path_dir(NULL, "d/e");
    CHECK_STR(m, "d");
    free(m);
    m = path_beside(NULL, "d/e", "f");
    CHECK_STR(m, "d/f");
    free(m);
    ar_free(a);
}

static void test_json_quote(void)
{
    char *q = json_quote("a\"b\\c\nd\te\x01 \xc3\xa9");
    CHECK_STR(q, "\"a\\\"b\\\\c\\nd\\te\\u0001 \xc3\xa9\"");
    free(q);
    q = json_quote("");
    CHECK_STR(q, "\"\"");
    free(q);
}

/* The searches numtext replaces, as ir/print.c and onnx/tensor.c wrote them: the oracle. */
static void reference_double(double v, bool as_float, char *buf, size_t size)
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

static double reference_float(float f)
{
    if (!isfinite(f) || f == 0.0f)
        return (double)f;
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)f);
        double d = strtod(buf, NULL);
        if ((float)d == f)
            return d;
    }
    return (double)f;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int numtext_mismatches;
static void check_double(double v)
{
    char want[64], got[NUMTEXT_SIZE];
    for (int as_float = 0; as_float < 2; as_float++) {
        reference_double(v, as_float, want, sizeof want);
        size_t n = numtext_double(v, as_float, got);
        if ((strcmp(want, got) != 0 || n != strlen(want)) && numtext_mismatches++ < 10)
            CHECK_STR(got, want);
    }
}

static void check_float(float f)
{
    double want = reference_float(f), got = numtext_float_as_double(f);
    if (memcmp(&want, &got, sizeof want) != 0 && numtext_mismatches++ < 10) {
        fprintf(stderr, "float %.9g: %.17g, want %.17g\n", (double)f, got, want);
        CHECK(false);
    }
}

/* Every class of number the graphs hold: any bit pattern, floats widened, short decimals at every
 * exponent (where ties and carries live), integers, powers of ten and their neighbours. */
static void test_numtext(void)
{
    static const double fixed[] = {0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 2.5, 9.5, 9.96, 99.5, 0.0001,
                                   0.00001, 1e-05, 1e15, 1e16, 1e20, 1e22, 1e23, 1e-300, 5e-324,
                                   1.7976931348623157e308, 123456789012345.67, 9007199254740993.0,
                                   9007199254740990.0, 0.30000000000000004, 1e100, 1e-100,
                                   2.2250738585072014e-308, 9.6e22, -9.96e22, 9.9999e22,
                                   NAN, INFINITY, -INFINITY}; /* 9.6e22: a carry past 10^22 */
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        check_double(fixed[i]);
        check_float((float)fixed[i]);
    }
    for (int i = 0; i < 25000; i++) {
        uint64_t bits = next_random();
        double v;
        memcpy(&v, &bits, sizeof v);
        check_double(v);
        uint32_t fbits = (uint32_t)next_random();
        float f;
        memcpy(&f, &fbits, sizeof f);
        check_float(f);
        check_double((double)f);
        /* a short decimal: 1 to 17 digits, exponent -40 .. 40 */
        char text[64];
        int digits = 1 + (int)(next_random() % 17);
        uint64_t m = next_random() % 100000000000000000u;
        for (int k = 17; k > digits; k--)
            m /= 10;
        snprintf(text, sizeof text, "%s%llue%d", next_random() & 1 ? "-" : "",
                 (unsigned long long)m, (int)(next_random() % 81) - 40);
        double d = strtod(text, NULL);
        check_double(d);
        check_float((float)d);
        check_double((double)(float)d);
        check_double((double)(int64_t)(next_random() >> (next_random() % 64)));
        check_double(nextafter(pow(10, (int)(next_random() % 60) - 30), (next_random() & 1) ? 0 : 1e300));
    }
    CHECK_INT(numtext_mismatches, 0);
}

/* Writes len bytes of text to a fresh file; returns its path (static storage). */
static const char *temp_file(const char *text, size_t len)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/fr_test_base_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, text, len) == (ssize_t)len);
    close(fd);
    return path;
}

/* dg_source_open: the file's bytes, a NUL after them (also when the file fills its last page, and
 * when it is read, not mapped), the byte order mark dropped, the text kept while a hold is left
 * after its context is gone, and unchanged after its pages are given back. */
static void test_source_open(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t sizes[] = {1, 100, page - 1, page, page + 1, 3 * page};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        char *text = malloc(n);
        CHECK(text != NULL);
        for (size_t i = 0; i < n; i++)
            text[i] = (char)('a' + (i * 7 + k) % 26);
        const char *path = temp_file(text, n);
        dg_context *dg = dg_new();
        const dg_source *src = dg_source_open(dg, path);
        CHECK(src != NULL);
        CHECK_INT(src->len, n);
        CHECK(memcmp(src->text, text, n) == 0);
        CHECK_INT(src->text[n], 0);
        const dg_source *held = dg_source_hold(src);
        dg_source_rest(held);
        CHECK(memcmp(held->text, text, n) == 0);
        dg_free(dg); /* the hold keeps it */
        CHECK(memcmp(held->text, text, n) == 0);
        CHECK_INT(held->text[n], 0);
        CHECK(strcmp(held->path, path) == 0);
        dg_source_drop(held);
        unlink(path);
        free(text);
    }
    /* a byte order mark: read, not mapped, and dropped */
    const char *path = temp_file("\xEF\xBB\xBFgraph", 8);
    dg_context *dg = dg_new();
    const dg_source *src = dg_source_open(dg, path);
    CHECK(src != NULL && src->len == 5 && memcmp(src->text, "graph", 6) == 0);
    dg_source_rest(src); /* nothing to give back */
    CHECK(memcmp(src->text, "graph", 6) == 0);
    unlink(path);
    /* an empty file, a folder and a missing file */
    path = temp_file("", 0);
    src = dg_source_open(dg, path);
    CHECK(src != NULL && src->len == 0 && src->text[0] == '\0');
    unlink(path);
    CHECK_INT(dg_error_count(dg), 0);
    CHECK(dg_source_open(dg, "/tmp") == NULL);
    CHECK(dg_source_open(dg, path) == NULL);
    CHECK_INT(dg_error_count(dg), 2);
    dg_free(dg);
}

int main(void)
{
    RUN(test_arena_zero_size);
    RUN(test_arena_growth);
    RUN(test_bigmem);
    RUN(test_strmap);
    RUN(test_strmap_slots);
    RUN(test_utf8);
    RUN(test_paths);
    RUN(test_json_quote);
    RUN(test_numtext);
    RUN(test_source_open);
    return unit_finish();
}
