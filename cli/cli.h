/* Shared pieces of the command line: subcommand entry points, argument parsing, graph loading. */
#ifndef FUSERULE_CLI_CLI_H
#define FUSERULE_CLI_CLI_H

#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>

enum { EXIT_OK = 0, EXIT_CHECK_FAILED = 1, EXIT_BAD_INPUT = 2 };

#define CMD(name, fn, summary) int fn(int argc, char **argv);
#include "cli/commands.def"
#undef CMD

/* Set by --debug-ir: print the IR after each stage. */
extern bool cli_debug_ir;
void cli_debug_dump(const char *stage, const ir_graph *g);

/* Loads GRAPH (cli/load.c): a .graph text or an ONNX model, told apart by the file's first byte
 * (never its name), `-` for stdin; a directory is reported as such. Validates it. On failure,
 * the diagnostics are in dg and NULL is returned. */
ir_graph *cli_load_graph(const char *path, dg_context *dg);
/* Loads an ONNX model (import's MODEL), `-` for stdin. */
ir_graph *cli_load_onnx(const char *path, dg_context *dg);

/* Prints dg to stderr and returns EXIT_BAD_INPUT if it holds errors, else EXIT_OK. */
int cli_finish_diagnostics(dg_context *dg);

/* Argument scanning: `--flag`, `--opt VALUE`, `--opt=VALUE`, `-o VALUE`, and positionals, in any
 * order. `-` is a positional (stdin or stdout). */
typedef struct {
    int argc, i;
    char **argv;
    const char *cmd;
    char opt[64];             /* the name part of `--opt=VALUE` */
    const char *inline_value; /* its value, until cli_value takes it */
} cli_args;

cli_args cli_args_start(int argc, char **argv);
/* The next argument, or NULL at the end. For `--opt=VALUE` it returns "--opt" and the following
 * cli_value returns VALUE; if the caller does not ask for it (a flag), the usage error exits 2. */
const char *cli_next(cli_args *a);
/* The value following an option; reports a usage error and returns NULL if it is missing. */
const char *cli_value(cli_args *a, const char *opt);
/* Prints "fuserule CMD: MESSAGE" and the command's usage to stderr; returns EXIT_BAD_INPUT. */
int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The candidate (a NULL-terminated list) nearest to `word` by edit distance, if near enough to be
 * a typo of it ("did you mean"), else NULL. */
const char *cli_suggest(const char *word, const char *const *candidates);

/* Whether a command-line operand names a rules file (ends in ".rules"): `-r a.rules b.rules GRAPH`
 * takes every such operand after -r as a rule file. */
bool cli_is_rules_file(const char *path);

/* Whether `out` names the same file as `in` (by device and inode); if so, reports that writing it
 * would destroy the input. For commands whose output has another format than their input. */
bool cli_output_overwrites(const char *in, const char *out, dg_context *dg);

/* ---- outputs (cli/output.c): nothing a command writes destroys what was there ---------------- */

typedef bool (*cli_write_fn)(FILE *out, void *ctx);

/* Writes `-o PATH`: a regular file or a new name through a temporary file beside it, renamed over
 * it only when complete (a symlink is followed and its target written so); a device, FIFO or
 * socket in place, `-` to stdout; a directory is an error. write_fn returns false on failure (then
 * a file is left as it was). */
bool cli_write_atomic(const char *path, cli_write_fn write_fn, void *ctx, dg_context *dg);

typedef enum { CLI_FORMAT_AUTO, CLI_FORMAT_GRAPH, CLI_FORMAT_ONNX } cli_format;

/* "graph" or "onnx" (--format); false for anything else. */
bool cli_parse_format(const char *s, cli_format *out);

struct ox_export_options;

typedef struct {
    cli_format format;         /* --format; AUTO: from the name (.graph, .onnx, any case) */
    cli_format stream_default; /* for `-`, a device or a FIFO, which have no name to judge by */
    const struct ox_export_options *onnx; /* NULL: the export defaults */
    /* An option that only an ONNX output takes (apply's "--for"): a graph output with it is an
     * error naming it, before anything is written. NULL: none. */
    const char *onnx_only_option;
} cli_save_options;

/* Writes g to `-o PATH` as cli_write_atomic does, in the format of its name: .graph the text
 * form, with its in-memory tensors in a .safetensors beside the real target (a stream gets the
 * text only, with a warning); .onnx an ONNX model; any other name is an error naming the two. */
bool cli_save_graph(ir_graph *g, const char *path, const cli_save_options *opts, dg_context *dg);

/* ---- import and export (cli/convert.c): one input, `-o OUT`, `--format` ---- */

typedef struct {
    const char *cmd, *usage;
    const char *noun;     /* "model": "one model at a time" */
    const char *in_name;  /* "MODEL.onnx": "missing MODEL.onnx" */
    const char *out_name; /* "OUT.graph": "missing -o OUT.graph" */
    const char *in, *out; /* as given; NULL until then */
    cli_format format;    /* --format */
} cli_convert;

/* Consumes argument `a` (and its value) when it is -o, --format or the input: returns 1; 0 when
 * `a` is another option (the command's own, or unknown); EXIT_BAD_INPUT + 1 after a usage error. */
int cli_convert_option(cli_args *args, const char *a, cli_convert *c);
/* Checks that the input and -o were given, loads the input with `load` and saves it to -o in the
 * format its name or --format says (stream_default for a stream); the exit status. */
int cli_convert_run(const cli_convert *c, ir_graph *(*load)(const char *, dg_context *),
                    cli_format stream_default, const struct ox_export_options *onnx);

/* Parses a byte count (0 to 2^40) for --fold-budget; -1 when it is not one. */
int cli_parse_budget(const char *s, int64_t *out);

/* ---- inputs and limits of `run` and `verify` (cli/run_inputs.c) ---- */

#include "base/vec.h"
#include "runtime/runtime.h"

typedef struct cli_run_inputs {
    const char *file;             /* --inputs FILE.safetensors */
    VEC(const char *) npy;        /* --input NAME=FILE.npy, as written */
    VEC(rt_dim) dims;             /* --dim NAME=N */
    uint64_t memory_budget;       /* --memory-budget; 0 until given */
    /* filled by cli_read_inputs */
    VEC(rt_tensor) tensors;
    void *owned;                  /* the open files and read arrays */
} cli_run_inputs;

/* The usage lines of the options below, for run's and verify's help. */
#define CLI_RUN_INPUTS_USAGE                                                                       \
    "  --inputs FILE        graph inputs by name from a safetensors file\n"                      \
    "  --input NAME=FILE    graph input NAME from a NumPy .npy file (repeatable)\n"              \
    "  --dim NAME=N         size of the symbolic dim NAME of generated inputs (repeatable)\n"    \
    "  --memory-budget B    bytes the inputs and intermediates may take (suffix K, M, G or T:\n" \
    "                       binary units); default: the machine's available memory\n"
/* Consumes option `a` (and its value) when it is one of --inputs, --input, --dim or
 * --memory-budget: returns 1; 0 when `a` is another option; EXIT_BAD_INPUT + 1 after a usage
 * error. */
int cli_run_inputs_option(cli_args *args, const char *a, cli_run_inputs *in, const char *cmd,
                          const char *usage);
/* Reads the given tensors (safetensors entries naming graph inputs; .npy arrays) into
 * in->tensors and fills opts' dims and memory budget (default: the available memory). False after
 * reporting. */
bool cli_read_inputs(const ir_graph *g, cli_run_inputs *in, rt_options *opts, dg_context *dg);
void cli_run_inputs_free(cli_run_inputs *in);

#endif
