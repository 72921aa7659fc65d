/* fuserule run GRAPH [--inputs IN.safetensors] [--input NAME=FILE.npy]... [--dim NAME=N]...
 *                   [-o OUT.safetensors] [--seed N] [--time] [--memory-budget B]
 *                   [--target cpu|cuda]
 *
 * Runs a graph on the CPU executor (or CUDA) and prints, per graph output, its type and checksums:
 * the sum and the sum of absolute values (in double) and an FNV-1a hash of its bytes. Inputs come
 * from a safetensors file by name and from .npy files (cli/run_inputs.c); the others are generated
 * from the seed, their symbolic dims sized by --dim. */
#include "cli/cli.h"

#include "ir/safetensors.h"
#include "kernels/kernels.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule run GRAPH [--inputs IN.safetensors] [--input NAME=FILE.npy]... [--dim NAME=N]...\n"
    "                    [-o OUT.safetensors] [--seed N] [--time] [--memory-budget B]\n"
    "                    [--target cpu|cuda]\n"
    "Runs GRAPH (on the CPU reference executor, or CUDA) and prints each output's type, the sum\n"
    "and the sum of absolute values of its elements, and an FNV-1a hash of its bytes. Inputs not\n"
    "given are generated from the seed.\n"
    "  -o FILE              write the outputs, by name, to a safetensors file (- for stdout;\n"
    "                       the summary then goes to stderr)\n"
    "  --seed N             seed of the generated inputs (default 0)\n"
    "  --time               print the wall and CPU time per op and the memory plan to stderr\n"
    "  --target T           cpu (the reference, default) or cuda (fused nodes on the GPU)\n"
    CLI_RUN_INPUTS_USAGE;

typedef struct {
    const char *graph, *out;
    cli_run_inputs in;
    uint64_t seed;
    bool time;
    kn_backend target; /* KN_BACKEND_CPU (0) unless --target cuda */
} run_args;

static bool parse_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return false;
    *out = v;
    return true;
}

/* Returns -1 when the arguments are fine, else the exit status. */
static int parse_args(int argc, char **argv, run_args *ra)
{
    cli_args args = cli_args_start(argc, argv);
    for (const char *a; (a = cli_next(&args));) {
        const char *v;
        int taken = cli_run_inputs_option(&args, a, &ra->in, "run", usage);
        if (taken > 1)
            return taken - 1;
        if (taken) {
            continue;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--time") == 0) {
            ra->time = true;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--seed") == 0 || strcmp(a, "--target") == 0) {
            if (!(v = cli_value(&args, a)))
                return EXIT_BAD_INPUT;
            if (a[1] == 'o')
                ra->out = v;
            else if (a[2] == 's' && !parse_seed(v, &ra->seed))
                return cli_usage_error("run", usage,
                                       "--seed takes a non-negative integer, not '%s'", v);
            else if (a[2] == 't' && !kn_backend_parse(v, &ra->target))
                return cli_usage_error("run", usage, "unknown target '%s' (cpu or cuda)", v);
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("run", usage, "unknown option '%s'", a);
        } else if (ra->graph) {
            return cli_usage_error("run", usage, "one graph at a time");
        } else {
            ra->graph = a;
        }
    }
    if (!ra->graph)
        return cli_usage_error("run", usage, "missing GRAPH");
    return -1;
}

/* ---- printing ---- */

static void print_output(FILE *to, const ir_graph *g, const rt_tensor *t)
{
    double sum = 0, abs_sum = 0;
    size_t n = rt_tensor_numel(t);
    const float *f = t->type.dtype == IR_F32 ? t->data : NULL; /* the common case, read directly */
    for (size_t i = 0; i < n; i++) {
        double x = f ? f[i] : rt_tensor_get(t, i);
        sum += x;
        abs_sum += x < 0 ? -x : x;
    }
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < t->nbytes; i++)
        h = (h ^ ((const unsigned char *)t->data)[i]) * 0x100000001b3u;
    char type[160];
    fprintf(to, "%s: %s sum=%.9g abs=%.9g fnv1a=%016" PRIx64 "\n", t->name,
           ir_type_format(g, &t->type, type, sizeof type), sum, abs_sum, h);
}

static void print_times(const rt_result *r)
{
    double total = 0, cpu_total = 0;
    for (size_t i = 0; i < r->ntimes; i++) {
        total += r->times[i].seconds;
        cpu_total += r->times[i].cpu_seconds;
    }
    fprintf(stderr, "%-20s %8s %12s %12s %7s\n", "op", "calls", "wall ms", "cpu ms", "%");
    for (size_t i = 0; i < r->ntimes; i++) {
        const rt_op_time *t = &r->times[i];
        fprintf(stderr, "%-20s %8" PRIu64 " %12.3f %12.3f %6.1f%%\n", ir_op_name(t->op), t->calls,
                1e3 * t->seconds, 1e3 * t->cpu_seconds,
                total > 0 ? 100.0 * t->seconds / total : 0.0);
    }
    fprintf(stderr, "%-20s %8s %12.3f %12.3f\n", "total", "", 1e3 * total, 1e3 * cpu_total);
    fprintf(stderr, "memory: peak %zu bytes in the pool, %zu bytes of node outputs, %zu buffers "
                    "allocated, %zu reuses\n",
            r->memory.peak_bytes, r->memory.intermediate_bytes, r->memory.allocations,
            r->memory.reuses);
    for (size_t i = 0; i < r->nfallbacks; i++)
        fprintf(stderr, "on the CPU: %s (%s): %s\n", r->fallbacks[i].node,
                ir_op_name(r->fallbacks[i].op), r->fallbacks[i].why);
}

/* ---- writing ---- */

typedef struct {
    const char *path;
    const rt_result *r;
    dg_context *dg;
} write_ctx;

static bool write_outputs(FILE *out, void *ctx)
{
    write_ctx *w = ctx;
    st_entry *entries = calloc(w->r->noutputs ? w->r->noutputs : 1, sizeof *entries);
    if (!entries)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < w->r->noutputs; i++) {
        const rt_tensor *t = &w->r->outputs[i];
        bool seen = false; /* a value listed twice as an output is written once */
        for (size_t j = 0; j < n && !seen; j++)
            seen = strcmp(entries[j].name, t->name) == 0;
        if (!seen)
            entries[n++] = (st_entry){t->name, t->type.dtype, (uint32_t)t->type.rank,
                                      t->type.dims, t->data, t->nbytes};
    }
    bool ok = st_write(out, w->path, entries, n, w->dg);
    free(entries);
    return ok;
}

int cmd_run(int argc, char **argv)
{
    run_args ra = {0};
    int status = parse_args(argc, argv, &ra);
    if (status >= 0) {
        cli_run_inputs_free(&ra.in);
        return status;
    }
    dg_context *dg = dg_new();
    bool overwrites = cli_output_overwrites(ra.graph, ra.out, dg) ||
                      cli_output_overwrites(ra.in.file, ra.out, dg);
    ir_graph *g = overwrites ? NULL : cli_load_graph(ra.graph, dg);
    rt_result r = {0};
    rt_options opts = {.seed = ra.seed, .time = ra.time};
    bool ok = g != NULL && cli_read_inputs(g, &ra.in, &opts, dg);
    ok = ok && (ra.target == KN_BACKEND_CUDA ? rt_run_cuda : rt_run_cpu)(
                   g, ra.in.tensors.items, ra.in.tensors.len, &opts, &r, dg);
    if (ok && ra.out) {
        write_ctx w = {ra.out, &r, dg};
        ok = cli_write_atomic(ra.out, write_outputs, &w, dg);
    }
    if (ok) {
        /* -o - streams the safetensors to stdout: the summary goes to stderr then, so that the
         * stream stays a file. */
        FILE *summary = ra.out && strcmp(ra.out, "-") == 0 ? stderr : stdout;
        for (size_t i = 0; i < r.noutputs; i++)
            print_output(summary, g, &r.outputs[i]);
        if (ra.time)
            print_times(&r);
    }
    status = cli_finish_diagnostics(dg);
    rt_result_free(&r);
    cli_run_inputs_free(&ra.in);
    ir_graph_free(g);
    dg_free(dg);
    return status;
}
