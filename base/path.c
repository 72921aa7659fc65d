/* File paths (base/path.h). */
#include "base/path.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

/* s[0..len) + t, NUL-terminated, in arena or malloc'd. */
static char *concat(ar_arena *arena, const char *s, size_t len, const char *t)
{
    size_t tlen = strlen(t);
    char *out = arena ? ar_alloc(arena, len + tlen + 1) : malloc(len + tlen + 1);
    FR_CHECK(out != NULL);
    memcpy(out, s, len);
    memcpy(out + len, t, tlen + 1);
    return out;
}

const char *path_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

char *path_dir(ar_arena *arena, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return concat(arena, ".", 1, "");
    return concat(arena, path, slash == path ? 1 : (size_t)(slash - path), "");
}

char *path_beside(ar_arena *arena, const char *of, const char *rel)
{
    const char *slash = strrchr(of, '/');
    if (rel[0] == '/' || !slash)
        return concat(arena, rel, strlen(rel), "");
    return concat(arena, of, (size_t)(slash - of) + 1, rel);
}
