/* Diagnostics: user errors and warnings, accumulated in a context; the caller decides the exit status.
 *
 * A diagnostic points at a byte offset in a source; line and column are computed only when printed:
 *
 *     file.graph:4:12: error: undefined value 'w9'
 *       c1 = Conv(x, w9)
 *                    ^~
 *
 * Columns count bytes from 1. A source must outlive every context that refers to it. */
#ifndef FUSERULE_BASE_DIAG_H
#define FUSERULE_BASE_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct dg_source {
    const char *path; /* as given by the user; printed verbatim */
    const char *text; /* need not be NUL-terminated; may contain NUL bytes */
    size_t len;
} dg_source;

typedef enum { DG_ERROR, DG_WARNING, DG_NOTE } dg_severity;

typedef struct dg_context dg_context;

enum { DG_MAX_STORED = 100 }; /* past this, errors are counted but not kept */

dg_context *dg_new(void);
void dg_free(dg_context *ctx);

/* Report at [offset, offset+len) of src. src may be NULL for a diagnostic without a location
 * (then the message is printed as "fuserule: error: ..."), and a NULL src with a path-only
 * location is dg_report_path. */
void dg_report(dg_context *ctx, dg_severity sev, const dg_source *src, size_t offset, size_t len,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void dg_error(dg_context *ctx, const dg_source *src, size_t offset, size_t len, const char *fmt,
              ...) __attribute__((format(printf, 5, 6)));
void dg_warning(dg_context *ctx, const dg_source *src, size_t offset, size_t len, const char *fmt,
                ...) __attribute__((format(printf, 5, 6)));
void dg_note(dg_context *ctx, const dg_source *src, size_t offset, size_t len, const char *fmt,
             ...) __attribute__((format(printf, 5, 6)));
/* An error about a whole file (cannot open, bad binary header): "path: error: message". */
void dg_error_path(dg_context *ctx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a warning or a note about a whole file ("path: warning: message"). */
void dg_warning_path(dg_context *ctx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dg_note_path(dg_context *ctx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

size_t dg_error_count(const dg_context *ctx);
size_t dg_warning_count(const dg_context *ctx);
bool dg_has_errors(const dg_context *ctx);
/* The message of the first stored error, without its location ("x.graph:3:5: error: "): what a
 * caller that reports the failure in its own words quotes. NULL when none is stored. */
const char *dg_first_error(const dg_context *ctx);

/* Prints every stored diagnostic in report order, then a "N errors" summary line when more were
 * reported than stored. */
void dg_print(const dg_context *ctx, FILE *out);

/* 1-based line and byte column of offset in src. */
void dg_line_col(const dg_source *src, size_t offset, unsigned *line, unsigned *col);

/* Reads a whole file into a malloc'd source (text NUL-terminated for convenience); "-" reads
 * standard input (named "<stdin>"); a leading UTF-8 byte order mark is dropped. On failure
 * reports to ctx (a directory as such) and returns false. dg_source_release frees what dg_source_read allocated. */
bool dg_source_read(dg_context *ctx, const char *path, dg_source *out);
void dg_source_release(dg_source *src);
/* Hands a source filled by dg_source_read over to ctx, which releases it (and a copy of its path)
 * in dg_free; returns its lasting address. For loaders that give up on their result while the
 * diagnostics they reported still point into the text. *src is emptied. */
const dg_source *dg_source_adopt(dg_context *ctx, dg_source *src);
/* dg_source_read and dg_source_adopt in one, with the text's one copy: a regular file is mapped
 * read-only (the page cache's pages; the file must not be truncated while it is mapped), anything
 * else (standard input, a pipe, a file that cannot be mapped, one that starts with a byte order
 * mark) is read as dg_source_read reads. text[len] is a NUL of the same storage, which a lexer may
 * use as its sentinel in place. NULL after reporting an error. */
const dg_source *dg_source_open(dg_context *ctx, const char *path);
/* Another holder of a source dg_source_adopt or dg_source_open returned (a graph loaded from it,
 * which may outlive ctx): the source stays until dg_free of its context and a dg_source_drop for
 * each hold. Returns `adopted`. */
const dg_source *dg_source_hold(const dg_source *adopted);
void dg_source_drop(const dg_source *held);
/* Gives the pages of a source dg_source_open mapped back to the system until something reads the
 * text again (a diagnostic; the page cache serves it then): for a loader that has read what it
 * needs. No effect on a source that was read into a buffer. The text stays valid and unchanged. */
void dg_source_rest(const dg_source *adopted);

#endif
