/* mmap with MAP_ANONYMOUS, madvise: beyond POSIX 2008 */
#define _DEFAULT_SOURCE

#include "base/diag.h"

#include "base/check.h"
#include "base/mapwatch.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    dg_severity sev;
    const dg_source *src;
    char *path; /* for path-only diagnostics: a copy, since the caller's string may not outlive us */
    size_t offset, len;
    char *message;
} diagnostic;

/* A source handed over by dg_source_adopt or opened by dg_source_open, with the holds on it
 * (dg_source_hold; the context's own is one) and its storage: a mapping of `mapped` bytes at
 * `map`, or (mapped 0) the malloc'd text. */
typedef struct {
    dg_source src;
    size_t holds;
    void *map;
    size_t mapped;
} adopted_source;

struct dg_context {
    VEC(diagnostic) items;
    VEC(adopted_source *) adopted; /* sources handed over by dg_source_adopt */
    size_t errors, warnings, dropped;
};

dg_context *dg_new(void)
{
    dg_context *ctx = calloc(1, sizeof *ctx);
    FR_CHECK(ctx != NULL);
    return ctx;
}

void dg_free(dg_context *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->items.len; i++) {
        free(ctx->items.items[i].message);
        free(ctx->items.items[i].path);
    }
    vec_free(&ctx->items);
    for (size_t i = 0; i < ctx->adopted.len; i++)
        dg_source_drop(&ctx->adopted.items[i]->src);
    vec_free(&ctx->adopted);
    free(ctx);
}

static char *format_message(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    FR_CHECK(n >= 0);
    char *s = malloc((size_t)n + 1);
    FR_CHECK(s != NULL);
    vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

static void add(dg_context *ctx, dg_severity sev, const dg_source *src, const char *path,
                size_t offset, size_t len, const char *fmt, va_list ap)
{
    if (sev == DG_ERROR)
        ctx->errors++;
    else if (sev == DG_WARNING)
        ctx->warnings++;
    if (ctx->items.len >= DG_MAX_STORED) {
        ctx->dropped++;
        return;
    }
    char *path_copy = path ? strdup(path) : NULL;
    FR_CHECK(!path || path_copy);
    diagnostic d = {sev, src, path_copy, offset, len, format_message(fmt, ap)};
    vec_push(&ctx->items, d);
}

void dg_report(dg_context *ctx, dg_severity sev, const dg_source *src, size_t offset, size_t len,
               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(ctx, sev, src, NULL, offset, len, fmt, ap);
    va_end(ap);
}

#define DEFINE_REPORTER(fn, sev)                                                                   \
    void fn(dg_context *ctx, const dg_source *src, size_t offset, size_t len, const char *fmt,     \
            ...)                                                                                   \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        add(ctx, sev, src, NULL, offset, len, fmt, ap);                                            \
        va_end(ap);                                                                                \
    }
DEFINE_REPORTER(dg_error, DG_ERROR)
DEFINE_REPORTER(dg_warning, DG_WARNING)
DEFINE_REPORTER(dg_note, DG_NOTE)

void dg_error_path(dg_context *ctx, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(ctx, DG_ERROR, NULL, path, 0, 0, fmt, ap);
    va_end(ap);
}

void dg_warning_path(dg_context *ctx, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(ctx, DG_WARNING, NULL, path, 0, 0, fmt, ap);
    va_end(ap);
}

void dg_note_path(dg_context *ctx, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(ctx, DG_NOTE, NULL, path, 0, 0, fmt, ap);
    va_end(ap);
}

size_t dg_error_count(const dg_context *ctx)
{
    return ctx->errors;
}

size_t dg_warning_count(const dg_context *ctx)
{
    return ctx->warnings;
}

bool dg_has_errors(const dg_context *ctx)
{
    return ctx->errors > 0;
}

const char *dg_first_error(const dg_context *ctx)
{
    for (size_t i = 0; i < ctx->items.len; i++)
        if (ctx->items.items[i].sev == DG_ERROR)
            return ctx->items.items[i].message;
    return NULL;
}

void dg_line_col(const dg_source *src, size_t offset, unsigned *line, unsigned *col)
{
    unsigned l = 1;
    size_t line_start = 0;
    if (offset > src->len)
        offset = src->len;
    for (size_t i = 0; i < offset; i++) {
        if (src->text[i] == '\n') {
            l++;
            line_start = i + 1;
        }
    }
    *line = l;
    *col = (unsigned)(offset - line_start) + 1;
}

static const char *severity_name(dg_severity sev)
{
    switch (sev) {
    case DG_ERROR:
        return "error";
    case DG_WARNING:
        return "warning";
    case DG_NOTE:
        return "note";
    }
    FR_UNREACHABLE();
    return "";
}

/* The source line, with bytes that would garble a terminal shown as '?', then the caret line;
 * tabs are kept in the caret line so that the caret lines up. */
/* The length of the UTF-8 sequence at p (at most n bytes), or 0 when it is none. */
static size_t utf8_length(const char *p, size_t n)
{
    unsigned char c = (unsigned char)p[0];
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if (((unsigned char)p[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

static void print_excerpt(const dg_source *src, size_t offset, size_t len, FILE *out)
{
    if (offset > src->len)
        offset = src->len;
    size_t start = offset, end = offset;
    while (start > 0 && src->text[start - 1] != '\n')
        start--;
    while (end < src->len && src->text[end] != '\n')
        end++;
    fputs("  ", out);
    for (size_t i = start; i < end; i++) {
        unsigned char c = (unsigned char)src->text[i];
        size_t n = c < 0x80 ? 1 : utf8_length(src->text + i, end - i);
        if (c >= 0x80 && n) { /* valid UTF-8 prints as it is */
            fwrite(src->text + i, 1, n, out);
            i += n - 1;
            continue;
        }
        /* control bytes and bytes that are no UTF-8 never reach the terminal as they are */
        fputc(c == '\t' || (c >= 0x20 && c < 0x7f) ? c : '?', out);
    }
    fputs("\n  ", out);
    for (size_t i = start; i < offset; i++)
        fputc(src->text[i] == '\t' ? '\t' : ' ', out);
    fputc('^', out);
    for (size_t i = 1; i < len && offset + i < end; i++)
        fputc('~', out);
    fputc('\n', out);
}

void dg_print(const dg_context *ctx, FILE *out)
{
    for (size_t i = 0; i < ctx->items.len; i++) {
        const diagnostic *d = &ctx->items.items[i];
        if (d->src) {
            unsigned line, col;
            dg_line_col(d->src, d->offset, &line, &col);
            fprintf(out, "%s:%u:%u: %s: %s\n", d->src->path, line, col, severity_name(d->sev),
                    d->message);
            print_excerpt(d->src, d->offset, d->len, out);
        } else {
            fprintf(out, "%s: %s: %s\n", d->path ? d->path : "fuserule", severity_name(d->sev),
                    d->message);
        }
    }
    if (ctx->dropped)
        fprintf(out, "fuserule: %zu error(s) and %zu warning(s) in all; only the first %d shown\n",
                ctx->errors, ctx->warnings, DG_MAX_STORED);
}

bool dg_source_read(dg_context *ctx, const char *path, dg_source *out)
{
    bool is_stdin = strcmp(path, "-") == 0;
    if (is_stdin)
        path = "<stdin>";
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        dg_error_path(ctx, path, "cannot open: %s", strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f); /* reading a directory fails with EISDIR: say so instead of "read error" */
        dg_error_path(ctx, path, "is a directory, not a file");
        return false;
    }
    VEC(char) buf = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        vec_reserve(&buf, buf.len + n + 1);
        memcpy(buf.items + buf.len, chunk, n);
        buf.len += n;
    }
    bool failed = ferror(f);
    int err = errno;
    if (!is_stdin)
        fclose(f);
    if (failed) {
        vec_free(&buf);
        dg_error_path(ctx, path, "read error: %s", strerror(err));
        return false;
    }
    /* A UTF-8 byte order mark (editors on Windows write one) is no part of the text. */
    static const char bom[] = "\xEF\xBB\xBF";
    if (buf.len >= 3 && memcmp(buf.items, bom, 3) == 0) {
        memmove(buf.items, buf.items + 3, buf.len - 3);
        buf.len -= 3;
    }
    vec_reserve(&buf, buf.len + 1);
    buf.items[buf.len] = '\0';
    out->path = path;
    out->text = buf.items;
    out->len = buf.len;
    return true;
}

void dg_source_release(dg_source *src)
{
    free((char *)src->text);
    src->text = NULL;
    src->len = 0;
}

static adopted_source *adopt(dg_context *ctx, dg_source *src, void *map, size_t mapped)
{
    adopted_source *kept = malloc(sizeof *kept);
    char *path = strdup(src->path);
    FR_CHECK(kept != NULL && path != NULL);
    *kept = (adopted_source){*src, 1, map, mapped};
    kept->src.path = path;
    vec_push(&ctx->adopted, kept);
    *src = (dg_source){0};
    return kept;
}

const dg_source *dg_source_adopt(dg_context *ctx, dg_source *src)
{
    return &adopt(ctx, src, NULL, 0)->src;
}

/* Maps a regular file of size bytes read-only, with at least one zero byte after it: the file's
 * last page is zero past its end, and an anonymous page follows when the size fills its pages.
 * False when the system cannot map it or it starts with a byte order mark (the caller reads it
 * instead). */
static bool map_file(int fd, size_t size, void **map, size_t *mapped)
{
    long page_size = sysconf(_SC_PAGESIZE);
    size_t page = page_size > 0 ? (size_t)page_size : 4096;
    if (size > SIZE_MAX - page)
        return false;
    size_t span = (size / page + 1) * page;
    char *area = mmap(NULL, span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return false;
    static const char bom[] = "\xEF\xBB\xBF";
    if (mmap(area, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED ||
        (size >= 3 && memcmp(area, bom, 3) == 0)) {
        munmap(area, span);
        return false;
    }
    *map = area;
    *mapped = span;
    return true;
}

const dg_source *dg_source_open(dg_context *ctx, const char *path)
{
    /* standard input is read as a stream (a caller may have given a byte back to it) */
    if (strcmp(path, "-") != 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        void *map = NULL;
        size_t mapped = 0;
        bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
                  (uintmax_t)st.st_size < SIZE_MAX &&
                  map_file(fd, (size_t)st.st_size, &map, &mapped);
        if (fd >= 0)
            close(fd);
        if (ok) {
            mw_watch(map, mapped, path);
            dg_source src = {path, map, (size_t)st.st_size};
            return &adopt(ctx, &src, map, mapped)->src;
        }
    }
    dg_source src;
    if (!dg_source_read(ctx, path, &src)) /* which reports what cannot be opened or read */
        return NULL;
    return dg_source_adopt(ctx, &src);
}

const dg_source *dg_source_hold(const dg_source *adopted)
{
    adopted_source *kept = (adopted_source *)(uintptr_t)adopted; /* src is its first member */
    __atomic_add_fetch(&kept->holds, 1, __ATOMIC_RELAXED);
    return adopted;
}

void dg_source_drop(const dg_source *held)
{
    adopted_source *kept = (adopted_source *)(uintptr_t)held;
    if (__atomic_sub_fetch(&kept->holds, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (kept->mapped) {
        mw_forget(kept->map);
        munmap(kept->map, kept->mapped);
    }
    else
        dg_source_release(&kept->src);
    free((char *)kept->src.path);
    free(kept);
}

void dg_source_rest(const dg_source *adopted)
{
    const adopted_source *kept = (const adopted_source *)adopted;
    if (kept->mapped)
        madvise(kept->map, kept->mapped, MADV_DONTNEED);
}
