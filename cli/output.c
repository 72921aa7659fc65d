/* Where `-o PATH` writes, and how, for every command: outputs never destroy what is there.
 *
 * A regular file or a new name is written to a temporary file beside it and renamed over it, so a
 * failed run leaves the old file whole. A symlink is followed to its target, which is then
 * written the same way (the link stays a link). A device, FIFO or socket, and `-` (standard
 * output), are written in place: renaming over /dev/null would replace the device with a file.
 * A directory is an error. The graph text's companion .safetensors goes beside the real target,
 * and a stream gets none. The format follows the name (.graph or .onnx), or --format. */
#include "cli/cli.h"

#include "base/check.h"
#include "base/mapwatch.h"
#include "base/path.h"
#include "onnx/onnx_io.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_LINK_HOPS = 40 }; /* as the kernel's own symlink limit */

/* A file is written in blocks of this size, not stdio's 4 KiB: the page cache takes a small folio
 * for each small write() (ir/save.c says what that cost). */
enum { WRITE_BUFFER = 1 << 20 };

typedef struct {
    char *target; /* the path to write: `given` with its symlinks followed; NULL for stdout */
    bool direct;  /* written in place: stdout, a device, a FIFO, a socket, /proc/self/fd/N */
} resolved;

static char *dup_checked(const char *s)
{
    char *copy = strdup(s);
    FR_CHECK(copy != NULL);
    return copy;
}

/* The link's text resolved against the folder of the link itself. */
static char *follow(const char *link_path, const char *text)
{
    return path_beside(NULL, link_path, text);
}

/* /dev/stdout is a link to /proc/self/fd/1, whose own text ("pipe:[123]") is no path: such links
 * are opened as they are, never resolved or renamed over. */
static bool is_fd_link(const char *path)
{
    return strncmp(path, "/proc/self/fd/", 14) == 0 || strncmp(path, "/dev/fd/", 8) == 0;
}

static bool resolve(const char *given, resolved *out, dg_context *dg)
{
    *out = (resolved){0};
    if (strcmp(given, "-") == 0) {
        out->direct = true;
        return true;
    }
    char *path = dup_checked(given);
    for (int hop = 0;; hop++) {
        struct stat st;
        if (is_fd_link(path)) {
            out->direct = true;
            break;
        }
        if (lstat(path, &st) != 0)
            break; /* a new name (a missing folder is reported when the file is opened) */
        if (S_ISDIR(st.st_mode)) {
            dg_error_path(dg, given, "is a directory; give a file name (-o %s/NAME)", given);
            free(path);
            return false;
        }
        if (!S_ISLNK(st.st_mode)) {
            out->direct = !S_ISREG(st.st_mode);
            break;
        }
        char text[PATH_MAX];
        ssize_t n = readlink(path, text, sizeof text - 1);
        if (n < 0 || hop == MAX_LINK_HOPS) {
            dg_error_path(dg, given, "cannot follow the symbolic link: %s",
                          n < 0 ? strerror(errno) : "too many levels");
            free(path);
            return false;
        }
        text[n] = '\0';
        char *next = follow(path, text);
        free(path);
        path = next;
    }
    if (out->direct && is_fd_link(path)) {
        free(path); /* open the name the user gave: the kernel resolves the descriptor */
        path = dup_checked(given);
    }
    out->target = path;
    return true;
}

/* The first failure's errno, kept across the flush and close that follow it. */
static bool step(bool ok, int *err)
{
    if (!ok && !*err)
        *err = errno ? errno : EIO;
    return ok;
}

static void write_failed(dg_context *dg, const char *given, int err)
{
    dg_error_path(dg, given, "write failed: %s", mw_write_error(err));
}

/* Writes to the stream in place. */
static bool write_direct(const resolved *r, const char *given, cli_write_fn fn, void *ctx,
                         dg_context *dg)
{
    FILE *out = r->target ? fopen(r->target, "wb") : stdout;
    if (!out) {
        dg_error_path(dg, given, "cannot write: %s", strerror(errno));
        return false;
    }
    int err = 0;
    errno = 0;
    bool ok = step(fn(out, ctx), &err);
    ok = step(fflush(out) == 0, &err) && ok;
    if (r->target)
        ok = step(fclose(out) == 0, &err) && ok;
    if (!ok)
        write_failed(dg, given, err);
    return ok;
}

/* Writes to a temporary file beside the target and renames it over the target when complete. */
static bool write_renamed(const char *target, const char *given, cli_write_fn fn, void *ctx,
                          dg_context *dg)
{
    size_t len = strlen(target);
    char *tmp = malloc(len + 32);
    FR_CHECK(tmp != NULL);
    snprintf(tmp, len + 32, "%s.tmp.%ld", target, (long)getpid());
    mw_temp_begin(tmp); /* removed if an input shrinks under us while it is written */
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        mw_temp_done(tmp);
        dg_error_path(dg, given, "cannot write: %s", strerror(errno));
        free(tmp);
        return false;
    }
    char *buffer = malloc(WRITE_BUFFER); /* glibc ignores the size of a buffer it allocates */
    FR_CHECK(buffer != NULL);
    setvbuf(out, buffer, _IOFBF, WRITE_BUFFER);
    int err = 0;
    errno = 0;
    bool ok = step(fn(out, ctx), &err);
    ok = step(fflush(out) == 0, &err) && ok;
    ok = step(fsync(fileno(out)) == 0, &err) && ok;
    ok = step(fclose(out) == 0, &err) && ok;
    free(buffer);
    if (ok && rename(tmp, target) != 0) {
        dg_error_path(dg, given, "cannot rename into place: %s", strerror(errno));
        ok = false;
    } else if (!ok) {
        write_failed(dg, given, err);
    }
    if (!ok)
        unlink(tmp);
    mw_temp_done(tmp);
    free(tmp);
    return ok;
}

bool cli_write_atomic(const char *path, cli_write_fn fn, void *ctx, dg_context *dg)
{
    resolved r;
    if (!resolve(path, &r, dg))
        return false;
    bool ok =
        r.direct ? write_direct(&r, path, fn, ctx, dg) : write_renamed(r.target, path, fn, ctx, dg);
    free(r.target);
    return ok;
}

/* ---- graphs: the format from the name ------------------------------------------------------- */

static bool ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcasecmp(s + n - k, suffix) == 0;
}

bool cli_parse_format(const char *s, cli_format *out)
{
    if (strcmp(s, "graph") == 0)
        *out = CLI_FORMAT_GRAPH;
    else if (strcmp(s, "onnx") == 0)
        *out = CLI_FORMAT_ONNX;
    else
        return false;
    return true;
}

/* The format a name asks for: its extension; for a stream (which has no name to judge by) the
 * command's own. */
static bool choose_format(const char *given, const resolved *r, cli_format requested,
                          cli_format stream_default, cli_format *out, dg_context *dg)
{
    if (requested != CLI_FORMAT_AUTO)
        *out = requested;
    else if (ends_with_nocase(given, ".graph"))
        *out = CLI_FORMAT_GRAPH;
    else if (ends_with_nocase(given, ".onnx"))
        *out = CLI_FORMAT_ONNX;
    else if (r->direct)
        *out = stream_default;
    else {
        dg_error_path(dg, given,
                      "cannot tell the format from the name: use a name ending in .graph (the "
                      "text form) or .onnx (an ONNX model), or say --format graph|onnx");
        return false;
    }
    return true;
}

static bool write_model(FILE *out, void *ctx)
{
    return ox_model_write(ctx, out);
}

static bool write_text(FILE *out, void *ctx)
{
    ir_print(ctx, out);
    return !ferror(out);
}

static size_t count_in_memory(const ir_graph *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        n += v->kind == IR_VALUE_CONST && v->konst->kind == IR_CONST_DATA;
    }
    return n;
}

bool cli_save_graph(ir_graph *g, const char *path, const cli_save_options *opts, dg_context *dg)
{
    resolved r;
    cli_format format;
    if (!resolve(path, &r, dg))
        return false;
    bool ok = choose_format(path, &r, opts->format, opts->stream_default, &format, dg);
    if (ok && format == CLI_FORMAT_GRAPH && opts->onnx_only_option) {
        dg_error_path(dg, path,
                      "%s applies to an ONNX output only, and this one is the text form; name "
                      "it .onnx or say --format onnx",
                      opts->onnx_only_option);
        ok = false;
    }
    if (ok && format == CLI_FORMAT_ONNX && opts->onnx && opts->onnx->link_weights && r.direct) {
        dg_error_path(dg, path,
                      "--link-weights names the input file beside the output: give the output "
                      "a file name in a folder, not a stream");
        ok = false;
    }
    if (ok && format == CLI_FORMAT_ONNX) {
        ox_export_options onnx = opts->onnx ? *opts->onnx : (ox_export_options){0};
        onnx.out_path = r.target; /* the real file: its folder is where external data is found */
        ox_model *model = ox_export_model(g, &onnx, dg);
        ok = model != NULL;
        if (ok) /* streamed: the weights are copied from where they lie, never held twice */
            ok = r.direct ? write_direct(&r, path, write_model, model, dg)
                          : write_renamed(r.target, path, write_model, model, dg);
        ox_model_free(model);
    } else if (ok && !r.direct) {
        ok = ir_save(g, r.target, dg); /* the companion .safetensors goes beside the real target */
    } else if (ok) {
        size_t stored = count_in_memory(g);
        if (stored) /* the text still reads; only a loader of its weights would miss them */
            dg_warning(dg, NULL, 0, 0,
                       "%s: the %zu tensors the text form keeps in \"%s.safetensors\" are not "
                       "written (a stream has no file beside it); write to FILE.graph, or say "
                       "--format onnx, to keep them",
                       path, stored, g->name);
        ok = write_direct(&r, path, write_text, g, dg);
    }
    free(r.target);
    return ok;
}
