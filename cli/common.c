/* Argument scanning, graph loading, diagnostics and atomic writes shared by the subcommands. */
#include "cli/cli.h"

#ifdef HAVE_FR_ONNX
#include "onnx/onnx_io.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cli_debug_ir;

void cli_debug_dump(const char *stage, const ir_graph *g)
{
    if (!cli_debug_ir)
        return;
    fprintf(stderr, "--- IR after %s ---\n", stage);
    ir_print(g, stderr);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

ir_graph *cli_load_graph(const char *path, dg_context *dg)
{
    if (has_suffix(path, ".onnx")) {
#ifdef HAVE_FR_ONNX
        ir_graph *g = ox_import(path, NULL, dg);
        if (g)
            cli_debug_dump("import", g);
        return g;
#else
        dg_error_path(dg, path, "ONNX import is not available in this build");
        return NULL;
#endif
    }
    ir_graph *g = ir_load_text(path, dg);
    if (g)
        cli_debug_dump("load", g);
    return g;
}

int cli_finish_diagnostics(dg_context *dg)
{
    dg_print(dg, stderr);
    return dg_has_errors(dg) ? EXIT_BAD_INPUT : EXIT_OK;
}

cli_args cli_args_start(int argc, char **argv)
{
    return (cli_args){argc, 1, argv, argv[0]};
}

const char *cli_next(cli_args *a)
{
    return a->i < a->argc ? a->argv[a->i++] : NULL;
}

const char *cli_value(cli_args *a, const char *opt)
{
    if (a->i >= a->argc) {
        fprintf(stderr, "fuserule %s: option %s needs a value\n", a->cmd, opt);
        return NULL;
    }
    return a->argv[a->i++];
}

int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuserule %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%s", usage);
    va_end(ap);
    return EXIT_BAD_INPUT;
}

bool cli_output_overwrites(const char *in, const char *out, dg_context *dg)
{
    struct stat a, b;
    if (!in || !out || stat(in, &a) != 0 || stat(out, &b) != 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino)
        return false;
    dg_error_path(dg, out, "this is the input '%s'; writing it would destroy the input", in);
    return true;
}

bool cli_write_atomic(const char *path, bool (*write_fn)(FILE *out, void *ctx), void *ctx,
                      dg_context *dg)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + 32);
    if (!tmp) {
        dg_error_path(dg, path, "out of memory");
        return false;
    }
    snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        dg_error_path(dg, path, "cannot write: %s", strerror(errno));
        free(tmp);
        return false;
    }
    bool ok = write_fn(out, ctx);
    ok = fflush(out) == 0 && ok;
    ok = fsync(fileno(out)) == 0 && ok;
    ok = fclose(out) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        dg_error_path(dg, path, "cannot rename into place: %s", strerror(errno));
        ok = false;
    } else if (!ok) {
        dg_error_path(dg, path, "write failed");
    }
    if (!ok)
        unlink(tmp);
    free(tmp);
    return ok;
}

bool cli_is_rules_file(const char *path)
{
    size_t n = strlen(path);
    return n > 6 && strcmp(path + n - 6, ".rules") == 0;
}
