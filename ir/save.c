/* Saving a graph: its in-memory constants to a safetensors file, then its canonical text.
 *
 * The contract with the printer: before printing, every IR_CONST_DATA constant becomes an
 * IR_CONST_FILE constant whose file is the basename of the safetensors file and whose key is the
 * value's name (its data stays in memory), so the text refers to the file written beside it.
 * file() constants keep referring to the same files: when the graph moves to another folder their
 * paths are rewritten relative to it, and those that live in the very file being replaced are
 * copied into the new one. Both files go to temporary names beside their targets, are flushed to
 * disk, and are renamed into place; on any failure the temporaries are removed, the previous files
 * are left (or put back) as they were, and the graph is unchanged. */
#define _XOPEN_SOURCE 700 /* realpath */

#include "ir/ir.h"

#include "base/check.h"
#include "base/mapwatch.h"
#include "base/path.h"
#include "ir/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The constants a save changes, with their previous state, so that a failed save can undo. */
typedef struct {
    ir_const *c;
    ir_const before;
} const_change;

/* Where a stored constant's bytes lie: held in memory or mapped (data), else built from rows. */
typedef struct {
    const void *data;
    st_rows rows;
} stored_bytes;

typedef struct {
    ir_graph *g;
    dg_context *dg;
    const char *graph_path;
    char *st_path;  /* the safetensors file beside the graph */
    char *out_dir;  /* the folder both are written to */
    VEC(ir_value *) stored;        /* constants whose data goes into st_path */
    VEC(stored_bytes) bytes;       /* where each one's bytes lie (taken before it names st_path) */
    VEC(const_change) changes;
} saver;

/* ---- paths ----------------------------------------------------------------------------------- */

/* graph_path with ".graph" replaced by ".safetensors" (appended when it has another name). */
static char *safetensors_path(const char *graph_path)
{
    size_t n = strlen(graph_path);
    const char *suffix = ".graph";
    size_t k = strlen(suffix);
    if (n > k && strcmp(graph_path + n - k, suffix) == 0)
        n -= k;
    char *out = malloc(n + sizeof ".safetensors");
    FR_CHECK(out != NULL);
    memcpy(out, graph_path, n);
    strcpy(out + n, ".safetensors");
    return out;
}

/* The path of canonical absolute file `to` relative to canonical absolute folder `from`. */
static char *relative_path(ar_arena *arena, const char *from, const char *to)
{
    /* with a trailing '/', every component of `from` ends in one */
    char *dir = strcmp(from, "/") == 0 ? ar_strdup(arena, "/") : ar_printf(arena, "%s/", from);
    size_t common = 0;
    for (size_t i = 0; dir[i] && dir[i] == to[i]; i++)
        if (dir[i] == '/')
            common = i + 1;
    size_t up = 0;
    for (size_t i = common; dir[i]; i++)
        up += dir[i] == '/';
    char *rel = ar_alloc(arena, 3 * up + strlen(to + common) + 1);
    for (size_t i = 0; i < up; i++)
        memcpy(rel + 3 * i, "../", 3);
    strcpy(rel + 3 * up, to + common);
    return rel;
}

static char *resolve(const ir_graph *g, const char *file)
{
    if (file[0] == '/' || !g->dir || !g->dir[0])
        return ar_strdup(g->arena, file);
    return ar_printf(g->arena, "%s/%s", g->dir, file);
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* ---- planning -------------------------------------------------------------------------------- */

static void change(saver *s, ir_const *c)
{
    const_change ch = {c, *c};
    vec_push(&s->changes, ch);
}

static void undo_changes(saver *s)
{
    for (size_t i = s->changes.len; i-- > 0;)
        *s->changes.items[i].c = s->changes.items[i].before;
}

static bool is_file_const(const ir_value *v)
{
    return v->kind == IR_VALUE_CONST && v->konst && v->konst->kind == IR_CONST_FILE;
}

/* The in-memory constants, and the file() constants that read the file about to be replaced
 * (their data is loaded now, while the old file is still there). */
static bool collect_stored(saver *s)
{
    ir_graph *g = s->g;
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        if (!(v->kind == IR_VALUE_CONST && v->konst && v->konst->kind == IR_CONST_DATA))
            continue;
        /* one assembled from rows is written row by row; one computed when read otherwise (a
         * folded weight) is put together first (safetensors holds each tensor whole) */
        size_t rows;
        uint32_t nparts;
        if (ir_const_is_deferred(v) && !ir_const_rows(v, &rows, &nparts) &&
            !ir_const_data(g, v, s->dg))
            return false;
        vec_push(&s->stored, v);
    }
    if (s->stored.len == 0)
        return true; /* no safetensors file is written, so every file() stays valid */
    for (size_t i = 0; i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        if (!is_file_const(v) || !same_file(resolve(g, v->konst->file), s->st_path))
            continue;
        if (!ir_const_data(g, v, s->dg))
            return false;
        vec_push(&s->stored, v);
    }
    return true;
}

/* When the graph moves to another folder, relative file() paths are rewritten to reach the same
 * files from there. */
static bool relocate_files(saver *s)
{
    ir_graph *g = s->g;
    char *out_real = realpath(s->out_dir, NULL);
    if (!out_real) {
        dg_error_path(s->dg, s->graph_path, "cannot write into %s: %s", s->out_dir,
                      strerror(errno));
        return false;
    }
    char *graph_real = realpath(g->dir && g->dir[0] ? g->dir : ".", NULL);
    bool moved = !graph_real || strcmp(graph_real, out_real) != 0;
    bool ok = true;
    for (size_t i = 0; moved && i < g->values.len && ok; i++) {
        ir_value *v = g->values.items[i];
        if (!is_file_const(v) || v->konst->file[0] == '/')
            continue;
        const char *path = resolve(g, v->konst->file);
        char *real = realpath(path, NULL);
        if (!real) {
            dg_error_path(s->dg, s->graph_path, "constant '%s' refers to %s, which cannot be "
                          "found: %s", v->name, path, strerror(errno));
            ok = false;
            break;
        }
        change(s, v->konst);
        v->konst->file = relative_path(g->arena, out_real, real);
        free(real);
    }
    free(graph_real);
    free(out_real);
    return ok;
}

/* Stored constants become file() constants naming the new safetensors file. */
static void point_at_new_file(saver *s)
{
    const char *file = ar_strdup(s->g->arena, path_base(s->st_path));
    for (size_t i = 0; i < s->stored.len; i++) {
        ir_value *v = s->stored.items[i];
        const ir_const *c = v->konst;
        /* a DATA constant's sources share the union with FILE's fields: taken before those */
        stored_bytes b = {c->data, {0}};
        if (!b.data && c->kind == IR_CONST_DATA && !(b.data = c->mapped))
            b.rows = (st_rows){c->parts, c->nparts, c->rows};
        vec_push(&s->bytes, b);
        change(s, v->konst);
        v->konst->kind = IR_CONST_FILE;
        v->konst->file = file;
        v->konst->key = v->name;
    }
}

/* ---- writing --------------------------------------------------------------------------------- */

/* "<path>.<tag>.<pid>": a name beside path that no other process writes. */
static char *sibling_path(const char *path, const char *tag)
{
    size_t size = strlen(path) + strlen(tag) + 32;
    char *sibling = malloc(size);
    FR_CHECK(sibling != NULL);
    snprintf(sibling, size, "%s.%s.%ld", path, tag, (long)getpid());
    return sibling;
}

typedef bool (*write_fn)(saver *s, FILE *out, const char *path);

/* The files are written in blocks of this size (stdio's default is the file system's block, 4
 * KiB): each write() of a few KiB costs the page cache a small folio of its own, and writing the
 * 154 MB of llama_126k's weights took 0.2 s of system time in 4 KiB writes, 0.05 s in 1 MiB
 * ones. */
enum { WRITE_BUFFER = 1 << 20 };

static bool write_safetensors(saver *s, FILE *out, const char *path)
{
    size_t n = s->stored.len;
    FR_CHECK(s->bytes.len == n);
    st_entry *entries = calloc(n ? n : 1, sizeof *entries);
    st_rows *rows = calloc(n ? n : 1, sizeof *rows);
    FR_CHECK(entries != NULL && rows != NULL);
    for (size_t i = 0; i < n; i++) {
        const ir_value *v = s->stored.items[i];
        /* a mapped constant is written from its file, one assembled from rows from where its
         * rows lie (never put together in memory), in-memory ones from memory */
        const stored_bytes *b = &s->bytes.items[i];
        entries[i] = (st_entry){v->name,       v->type->dtype, (uint32_t)v->type->rank,
                                v->type->dims, b->data,        v->konst->nbytes};
        if (!b->data) /* (the constant already names the new file: ir_const_rows would say no) */
            rows[i] = b->rows;
    }
    bool ok = st_write_rows(out, path, entries, rows, n, s->dg);
    free(entries);
    free(rows);
    return ok;
}

static bool write_graph(saver *s, FILE *out, const char *path)
{
    ir_print(s->g, out);
    if (ferror(out)) {
        dg_error_path(s->dg, path, "write failed: %s", mw_write_error(errno));
        return false;
    }
    return true;
}

/* Writes `path`'s content to `tmp`, flushed to disk. Removes tmp on failure. */
static bool write_temp(saver *s, const char *path, const char *tmp, write_fn fn)
{
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        dg_error_path(s->dg, path, "cannot write: %s", strerror(errno));
        return false;
    }
    char *buffer = malloc(WRITE_BUFFER); /* glibc ignores the size of a buffer it allocates */
    FR_CHECK(buffer != NULL);
    setvbuf(out, buffer, _IOFBF, WRITE_BUFFER);
    bool ok = fn(s, out, path);
    if (ok && (fflush(out) != 0 || fsync(fileno(out)) != 0)) {
        dg_error_path(s->dg, path, "write failed: %s", mw_write_error(errno));
        ok = false;
    }
    if (fclose(out) != 0 && ok) {
        dg_error_path(s->dg, path, "write failed: %s", mw_write_error(errno));
        ok = false;
    }
    free(buffer);
    if (!ok)
        unlink(tmp);
    return ok;
}

static void sync_folder(const char *dir)
{
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd); /* best effort: the renames are already atomic */
        close(fd);
    }
}

/* Renames the temporaries into place: the safetensors file first (the text refers to it), then the
 * graph. If the second rename fails, the first is undone from a hard link to the old file. */
static bool commit(saver *s, const char *st_tmp, const char *graph_tmp)
{
    char *backup = NULL;
    bool had_old = false;
    if (st_tmp) {
        had_old = access(s->st_path, F_OK) == 0;
        if (had_old) {
            backup = sibling_path(s->st_path, "old");
            if (link(s->st_path, backup) != 0) { /* no hard links here: no undo either */
                free(backup);
                backup = NULL;
            }
        }
        if (rename(st_tmp, s->st_path) != 0) {
            dg_error_path(s->dg, s->st_path, "cannot rename into place: %s", strerror(errno));
            if (backup)
                unlink(backup);
            free(backup);
            return false;
        }
    }
    bool ok = rename(graph_tmp, s->graph_path) == 0;
    if (!ok) {
        dg_error_path(s->dg, s->graph_path, "cannot rename into place: %s", strerror(errno));
        if (backup)
            rename(backup, s->st_path);
        else if (st_tmp && !had_old)
            unlink(s->st_path);
    } else if (backup) {
        unlink(backup);
    }
    free(backup);
    sync_folder(s->out_dir);
    return ok;
}

static bool write_files(saver *s)
{
    char *st_tmp = s->stored.len ? sibling_path(s->st_path, "tmp") : NULL;
    char *graph_tmp = sibling_path(s->graph_path, "tmp");
    if (st_tmp) /* removed if an input shrinks under us while the weights are copied */
        mw_temp_begin(st_tmp);
    mw_temp_begin(graph_tmp);
    bool ok = !st_tmp || write_temp(s, s->st_path, st_tmp, write_safetensors);
    if (ok && !write_temp(s, s->graph_path, graph_tmp, write_graph)) {
        ok = false;
        if (st_tmp)
            unlink(st_tmp);
    }
    if (ok && !commit(s, st_tmp, graph_tmp)) {
        ok = false;
        unlink(graph_tmp);
        if (st_tmp)
            unlink(st_tmp);
    }
    if (st_tmp)
        mw_temp_done(st_tmp);
    mw_temp_done(graph_tmp);
    free(st_tmp);
    free(graph_tmp);
    return ok;
}

bool ir_save(ir_graph *g, const char *graph_path, dg_context *dg)
{
    saver s = {.g = g, .dg = dg, .graph_path = graph_path};
    s.st_path = safetensors_path(graph_path);
    s.out_dir = path_dir(NULL, graph_path);
    bool ok = collect_stored(&s) && relocate_files(&s);
    if (ok) {
        point_at_new_file(&s);
        ok = write_files(&s);
    }
    if (ok)
        g->dir = ar_strdup(g->arena, s.out_dir);
    else
        undo_changes(&s);
    vec_free(&s.stored);
    vec_free(&s.bytes);
    vec_free(&s.changes);
    free(s.st_path);
    free(s.out_dir);
    return ok;
}
