/* A tiny assertion harness for unit tests. A test file defines test functions, lists them in
 * main with RUN(test_fn), and returns unit_finish(). Output ends with "N passed, N failed". */
#ifndef FUSERULE_TESTS_UNIT_H
#define FUSERULE_TESTS_UNIT_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int unit_passed, unit_failed, unit_current_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            unit_current_failed = 1;                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, b_); \
            unit_current_failed = 1;                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                   \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a,      \
                    a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                       \
            unit_current_failed = 1;                                                               \
        }                                                                                          \
    } while (0)

/* |a - b| <= atol + rtol * |b| */
#define CHECK_NEAR(a, b, rtol, atol)                                                               \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                                 \
        if (!(fabs(a_ - b_) <= (atol) + (rtol)*fabs(b_))) {                                        \
            fprintf(stderr, "%s:%d: %s == %.9g, expected %.9g\n", __FILE__, __LINE__, #a, a_, b_); \
            unit_current_failed = 1;                                                               \
        }                                                                                          \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        unit_current_failed = 0;                                                                   \
        fn();                                                                                      \
        if (unit_current_failed) {                                                                 \
            unit_failed++;                                                                         \
            fprintf(stderr, "FAIL %s\n", #fn);                                                     \
        } else {                                                                                   \
            unit_passed++;                                                                         \
        }                                                                                          \
    } while (0)

static inline int unit_finish(void)
{
    printf("%d passed, %d failed\n", unit_passed, unit_failed);
    return unit_failed ? 1 : 0;
}

#endif
