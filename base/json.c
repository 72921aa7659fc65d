/* JSON strings (base/json.h). */
#include "base/json.h"

#include "base/check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *json_quote(const char *s)
{
    size_t len = strlen(s);
    FR_CHECK(len < (SIZE_MAX - 3) / 6);
    char *out = malloc(6 * len + 3); /* \u00XX is the longest escape */
    FR_CHECK(out != NULL);
    char *o = out;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': o += sprintf(o, "\\\""); break;
        case '\\': o += sprintf(o, "\\\\"); break;
        case '\n': o += sprintf(o, "\\n"); break;
        case '\t': o += sprintf(o, "\\t"); break;
        default:
            if (*p < 0x20)
                o += sprintf(o, "\\u%04x", *p);
            else
                *o++ = (char)*p;
        }
    }
    *o++ = '"';
    *o = 0;
    return out;
}
