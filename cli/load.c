/* Loading a GRAPH operand: a .graph text or an ONNX model, told apart by the file's first bytes
 * (never its name: `model.ONNX`, a model without an extension), or `-` for standard input.
 *
 * The text form starts with printable text (`graph`, a comment, blank lines, or a UTF-8 byte order
 * mark). An ONNX model is a protobuf, whose serializers write fields in number order: its first
 * byte is the tag of ir_version (0x08), or of another low-numbered field, all below 0x20. So a
 * control byte first means binary, which goes to the ONNX importer and is never echoed back by
 * the text parser's excerpts. One byte suffices, so stdin needs no more look-ahead than that. */
#define _XOPEN_SOURCE 700 /* mkdtemp */

#include "cli/cli.h"

#include "onnx/onnx_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_binary_byte(unsigned char c)
{
    return (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f;
}

static ir_graph *import_onnx(const char *path, dg_context *dg)
{
    ir_graph *g = ox_import(path, NULL, dg);
    if (g)
        cli_debug_dump("import", g);
    return g;
}

static ir_graph *load_text(const char *path, dg_context *dg)
{
    ir_graph *g = ir_load_text(path, dg);
    if (g)
        cli_debug_dump("load", g);
    return g;
}

static bool copy_stream(FILE *in, FILE *out)
{
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            return false;
    return !ferror(in);
}

/* An ONNX model on stdin: the importer reads regular files (it maps external data beside the
 * model), so the bytes go to a file of their own in a fresh private folder, where no external
 * data can be found. */
static ir_graph *import_stdin(dg_context *dg)
{
    const char *tmpdir = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuserule-stdin.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        dg_error_path(dg, "<stdin>", "cannot make a temporary folder for the model: %s",
                      strerror(errno));
        return NULL;
    }
    char file[4200];
    snprintf(file, sizeof file, "%s/stdin.onnx", dir);
    FILE *out = fopen(file, "wb");
    bool ok = out && copy_stream(stdin, out);
    ok = out && fclose(out) == 0 && ok;
    ir_graph *g = NULL;
    if (!ok)
        dg_error_path(dg, "<stdin>", "cannot keep the model read from stdin: %s", strerror(errno));
    else
        g = import_onnx(file, dg);
    unlink(file);
    rmdir(dir);
    return g;
}

ir_graph *cli_load_onnx(const char *path, dg_context *dg)
{
    return strcmp(path, "-") == 0 ? import_stdin(dg) : import_onnx(path, dg);
}

ir_graph *cli_load_graph(const char *path, dg_context *dg)
{
    if (strcmp(path, "-") == 0) {
        int c = getc(stdin); /* one byte of look-ahead, given back for the text reader */
        if (c != EOF && is_binary_byte((unsigned char)c)) {
            ungetc(c, stdin);
            return import_stdin(dg);
        }
        if (c != EOF)
            ungetc(c, stdin);
        return load_text(path, dg);
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        dg_error_path(dg, path, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        dg_error_path(dg, path, "is a directory; GRAPH is a .graph file or an ONNX model");
        return NULL;
    }
    int c = getc(f);
    fclose(f);
    return c != EOF && is_binary_byte((unsigned char)c) ? import_onnx(path, dg)
                                                        : load_text(path, dg);
}
