/* base/: zero-size arena allocations, UTF-8 validation, paths and JSON strings. */
#include "../unit.h"

#include "base/arena.h"
#include "base/json.h"
#include "base/path.h"
#include "base/utf8.h"

#include <stdint.h>
#include <stdlib.h>

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
    CHECK(y != NULL && (uintptr_t)y % 16 == 0);
    y[0] = y[1] = 1;
    CHECK_INT(x[3], 7);
    for (int i = 0; i < 10000; i++) /* across the end of a block */
        CHECK(ar_alloc(a, i % 3 ? 0 : 40) != NULL);
    ar_free(a);
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

int main(void)
{
    RUN(test_arena_zero_size);
    RUN(test_utf8);
    RUN(test_paths);
    RUN(test_json_quote);
    return unit_finish();
}
