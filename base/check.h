/* Internal invariants. A failed FR_CHECK is a bug in fuserule, never a user error: it names the file
 * and line and aborts. User errors go through base/diag.h instead. */
#ifndef FUSERULE_BASE_CHECK_H
#define FUSERULE_BASE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FR_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: internal error: check failed: %s\n", __FILE__, __LINE__,       \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define FR_UNREACHABLE() FR_CHECK(!"unreachable")

#define FR_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#endif
