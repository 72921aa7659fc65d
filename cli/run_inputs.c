/* What `run` and `verify` share: inputs from a safetensors file (--inputs) and .npy files
 * (--input NAME=FILE.npy), sizes of symbolic dims (--dim NAME=N) and the memory budget
 * (--memory-budget). */
#include "cli/cli.h"

#include "ir/npy.h"
#include "ir/safetensors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct owned {
    st_file *st;
    VEC(void *) arrays;
} owned;

/* "8G" -> 8 GiB; a plain number is bytes. */
static bool parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!(*s >= '0' && *s <= '9'))
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (*end && !end[1]) {
        const char *units = "KMGT", *u = strchr(units, *end);
        if (!u)
            return false;
        shift = 10 * (int)(u - units + 1);
        end++;
    }
    if (errno || *end || v == 0 || v > (UINT64_MAX >> shift))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

int cli_run_inputs_option(cli_args *args, const char *a, cli_run_inputs *in, const char *cmd,
                          const char *usage)
{
    bool inputs = strcmp(a, "--inputs") == 0, input = strcmp(a, "--input") == 0;
    bool dim = strcmp(a, "--dim") == 0, budget = strcmp(a, "--memory-budget") == 0;
    if (!inputs && !input && !dim && !budget)
        return 0;
    const char *v = cli_value(args, a);
    if (!v)
        return EXIT_BAD_INPUT + 1;
    if (inputs) {
        if (in->file)
            return cli_usage_error(cmd, usage, "--inputs given twice") + 1;
        in->file = v;
        return 1;
    }
    if (budget) {
        if (!parse_bytes(v, &in->memory_budget))
            return cli_usage_error(cmd, usage,
                                   "--memory-budget takes a positive byte count such as "
                                   "1000000, 512M or 8G, not '%s'",
                                   v) +
                   1;
        return 1;
    }
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return cli_usage_error(cmd, usage, "%s takes NAME=%s, not '%s'", a,
                               input ? "FILE.npy" : "N", v) +
               1;
    if (input) {
        vec_push(&in->npy, v);
        return 1;
    }
    char *end;
    errno = 0;
    long long n = strtoll(eq + 1, &end, 10);
    if (errno || *end || n < 0 || n > IR_MAX_NUMEL || eq[1] == '-' || eq[1] == '+')
        return cli_usage_error(cmd, usage, "--dim %s: the size must be an integer from 0 to %lld",
                               v, (long long)IR_MAX_NUMEL) +
               1;
    size_t len = (size_t)(eq - v);
    char *name = malloc(len + 1);
    if (!name)
        return cli_usage_error(cmd, usage, "out of memory") + 1;
    memcpy(name, v, len);
    name[len] = 0;
    for (size_t i = 0; i < in->dims.len; i++)
        if (strcmp(in->dims.items[i].name, name) == 0) {
            free(name);
            return cli_usage_error(cmd, usage, "--dim %.*s given twice", (int)len, v) + 1;
        }
    vec_push(&in->dims, ((rt_dim){name, n}));
    return 1;
}

/* The file's tensors that name graph inputs (data stays in the mapping). */
static bool read_safetensors(const ir_graph *g, st_file *f, cli_run_inputs *in, dg_context *dg)
{
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *t = st_at(f, i);
        ir_value *v = ir_find_value(g, t->name);
        if (!v || v->kind != IR_VALUE_INPUT) {
            dg_warning(dg, NULL, 0, 0, "%s: tensor '%s' is not an input of graph %s; ignored",
                       st_path(f), t->name, g->name);
            continue;
        }
        if (t->dtype == IR_DTYPE_UNKNOWN) {
            dg_error_path(dg, st_path(f),
                          "tensor '%s' has dtype %s, which fuserule does not support", t->name,
                          t->dtype_name);
            return false;
        }
        if (t->rank > IR_MAX_RANK) {
            dg_error_path(dg, st_path(f), "tensor '%s' has rank %u; at most %d is supported",
                          t->name, t->rank, IR_MAX_RANK);
            return false;
        }
        rt_tensor r = {.name = t->name,
                       .type = {.dtype = t->dtype, .rank = (int8_t)t->rank},
                       .data = (void *)t->data,
                       .nbytes = t->nbytes};
        for (uint32_t d = 0; d < t->rank; d++)
            r.type.dims[d] = t->dims[d];
        vec_push(&in->tensors, r);
    }
    return true;
}

/* --input NAME=FILE.npy: NAME must be a graph input, given once. */
static bool read_npy(const ir_graph *g, const char *spec, cli_run_inputs *in, owned *o,
                     dg_context *dg)
{
    const char *eq = strchr(spec, '=');
    size_t len = (size_t)(eq - spec);
    const ir_value *v = NULL;
    for (size_t k = 0; k < g->inputs.len && !v; k++)
        if (strlen(g->inputs.items[k]->name) == len &&
            memcmp(g->inputs.items[k]->name, spec, len) == 0)
            v = g->inputs.items[k];
    if (!v) {
        dg_error_path(dg, eq + 1, "--input %.*s: graph %s has no input '%.*s'", (int)len, spec,
                      g->name, (int)len, spec);
        return false;
    }
    for (size_t i = 0; i < in->tensors.len; i++)
        if (strcmp(in->tensors.items[i].name, v->name) == 0) {
            dg_error_path(dg, eq + 1,
                          "input '%s' is given twice (--inputs and --input, or two "
                          "--input)",
                          v->name);
            return false;
        }
    npy_array a;
    if (!npy_read(eq + 1, &a, dg))
        return false;
    vec_push(&o->arrays, a.data);
    vec_push(&in->tensors, ((rt_tensor){v->name, a.type, a.data, a.nbytes}));
    return true;
}

bool cli_read_inputs(const ir_graph *g, cli_run_inputs *in, rt_options *opts, dg_context *dg)
{
    owned *o = calloc(1, sizeof *o);
    if (!o)
        return false;
    in->owned = o;
    opts->dims = in->dims.items;
    opts->ndims = in->dims.len;
    opts->memory_budget = in->memory_budget ? in->memory_budget : rt_available_memory();
    if (in->file && !((o->st = st_open(in->file, dg)) && read_safetensors(g, o->st, in, dg)))
        return false;
    for (size_t i = 0; i < in->npy.len; i++)
        if (!read_npy(g, in->npy.items[i], in, o, dg))
            return false;
    return true;
}

void cli_run_inputs_free(cli_run_inputs *in)
{
    owned *o = in->owned;
    if (o) {
        if (o->st)
            st_close(o->st);
        for (size_t i = 0; i < o->arrays.len; i++)
            free(o->arrays.items[i]);
        vec_free(&o->arrays);
        free(o);
    }
    for (size_t i = 0; i < in->dims.len; i++)
        free((char *)in->dims.items[i].name);
    vec_free(&in->dims);
    vec_free(&in->npy);
    vec_free(&in->tensors);
    *in = (cli_run_inputs){0};
}
