/* The checks before a run allocates anything (runtime/runtime.h, rt_check_budget): shapes with
 * the symbolic dims bound, then the memory the run needs against a budget.
 *
 * The estimate: every graph input (a generated one is allocated, a given one copied), in a
 * reference run the f64 copies of every float input and constant, and the peak of node outputs
 * alive at once when each is released after its last consumer (graph outputs are kept to the
 * end). It counts views as copies and ignores the scratch of 16-bit conversions, so it is close to
 * what the buffer pool holds. Values whose size depends on data (a Reshape fed by a computed shape)
 * are not known before the run; they count as 0 here and are checked when allocated. */
#include "runtime/exec_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t rt_available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kib;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                fclose(f);
                return (uint64_t)kib * 1024;
            }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* The size of a dim once symbols are bound (an expression evaluated); -1 when still unknown. */
static int64_t bound_dim(const ir_graph *g, int64_t d, const int64_t *symbols)
{
    int64_t v;
    return ir_dim_eval(g, d, symbols, &v) && v >= 0 ? v : -1;
}

/* Bytes of a value of type t held as `dtype`, symbols substituted; 0 when not known. The product
 * is taken in double: a hostile 2^40-element shape must give a large number, not wrap. */
static double value_bytes(const ir_graph *g, const ir_type *t, ir_dtype dtype,
                          const int64_t *symbols)
{
    if (t->rank < 0)
        return 0;
    double n = (double)ir_dtype_size(dtype);
    for (int i = 0; i < t->rank; i++) {
        int64_t d = bound_dim(g, t->dims[i], symbols);
        if (d < 0)
            return 0;
        n *= (double)d;
    }
    return n;
}

static ir_dtype held(ir_dtype dt, bool reference)
{
    return reference && ir_dtype_is_float(dt) ? IR_F64 : dt;
}

/* Binds symbols from --dim and the given tensors, quietly: a conflict is the binder's to report
 * (runtime/inputs.c), after this check. */
static void bind_symbols(const ir_graph *g, const rt_tensor *given, size_t ngiven,
                         const rt_options *opts, int64_t *symbols)
{
    for (size_t i = 0; i < g->symbols.len; i++)
        symbols[i] = -1;
    for (size_t k = 0; k < opts->ndims; k++) {
        int64_t i = ir_symbol_lookup(g, opts->dims[k].name);
        if (i >= 0)
            symbols[i] = opts->dims[k].size;
    }
    for (size_t k = 0; k < ngiven; k++) {
        const ir_value *v = ir_find_value((ir_graph *)g, given[k].name);
        if (!v || v->kind != IR_VALUE_INPUT || v->type->rank != given[k].type.rank)
            continue;
        for (int i = 0; i < v->type->rank; i++)
            if (ir_dim_is_symbol(v->type->dims[i]) && !ir_dim_expr(g, v->type->dims[i]) &&
                symbols[ir_dim_symbol(v->type->dims[i])] < 0)
                symbols[ir_dim_symbol(v->type->dims[i])] = given[k].type.dims[i];
    }
}

/* Writes "4 TiB" / "812 MiB" / "96 bytes". */
static const char *human(double bytes, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5)
        bytes /= 1024, u++;
    if (u == 0)
        snprintf(buf, size, "%.0f bytes", bytes);
    else
        snprintf(buf, size, "%.4g %s", bytes, units[u]);
    return buf;
}

/* Runs every live node's inference again with the graph inputs' symbolic dims replaced by their
 * bound sizes, so that a size that cannot work (--dim N=3 where a constant shape needs N=4) is
 * reported before any input is made. Values computed at run time (a Shape feeding a Reshape) are
 * not known here; inference leaves what depends on them unknown, and the run checks it. */
static bool infer_bound(ir_graph *g, const int64_t *symbols, dg_context *dg)
{
    for (size_t k = 0; k < g->inputs.len; k++) {
        ir_type t = *g->inputs.items[k]->type;
        for (int i = 0; i < t.rank; i++)
            if (ir_dim_is_symbol(t.dims[i]) && bound_dim(g, t.dims[i], symbols) >= 0)
                t.dims[i] = bound_dim(g, t.dims[i], symbols);
        ir_value_set_type(g, g->inputs.items[k], &t);
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        if (!n->dead && !ir_op_info_get(n->op)->infer(g, n, dg))
            return false;
    }
    return true;
}

/* The bytes the run needs against the budget, on the types as they are now. */
static bool fits(ir_graph *g, const int64_t *symbols, const rt_options *opts, bool reference,
                 dg_context *dg);

bool rt_check_budget(ir_graph *g, const rt_tensor *given, size_t ngiven, const rt_options *opts,
                     bool reference, dg_context *dg)
{
    bool bound = opts && opts->ndims + ngiven > 0 && g->symbols.len > 0;
    if (!opts || (!opts->memory_budget && !bound))
        return true;
    int64_t *symbols = malloc((g->symbols.len ? g->symbols.len : 1) * sizeof *symbols);
    ir_type *saved = malloc((g->values.len ? g->values.len : 1) * sizeof *saved);
    if (!symbols || !saved) {
        free(symbols), free(saved);
        dg_error_path(dg, g->name, "out of memory while planning the run");
        return false;
    }
    bind_symbols(g, given, ngiven, opts, symbols);
    for (size_t i = 0; i < g->values.len; i++)
        saved[i] = *g->values.items[i]->type;
    bool ok = (!bound || infer_bound(g, symbols, dg)) &&
              (!opts->memory_budget || fits(g, symbols, opts, reference, dg));
    for (size_t i = 0; i < g->values.len; i++) /* a run leaves the graph as it found it */
        ir_value_set_type(g, g->values.items[i], &saved[i]);
    free(symbols), free(saved);
    return ok;
}

static bool fits(ir_graph *g, const int64_t *symbols, const rt_options *opts, bool reference,
                 dg_context *dg)
{
    double *live = calloc(g->values.len ? g->values.len : 1, sizeof *live);
    uint32_t *remaining = calloc(g->values.len ? g->values.len : 1, sizeof *remaining);
    if (!live || !remaining) {
        free(live), free(remaining);
        dg_error_path(dg, g->name, "out of memory while planning the run");
        return false;
    }
    ir_compute_uses(g);
    double fixed = 0, largest = 0, now = 0, peak = 0;
    const ir_value *largest_input = NULL;
    for (size_t k = 0; k < g->inputs.len; k++) {
        const ir_value *v = g->inputs.items[k];
        double b = value_bytes(g, v->type, v->type->dtype, symbols);
        if (reference && ir_dtype_is_float(v->type->dtype))
            b += value_bytes(g, v->type, IR_F64, symbols);
        fixed += b;
        if (b > largest)
            largest = b, largest_input = v;
    }
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        remaining[i] = v->nuses;
        if (reference && v->kind == IR_VALUE_CONST && ir_dtype_is_float(v->type->dtype))
            fixed += value_bytes(g, v->type, IR_F64, symbols);
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        if (n->dead)
            continue;
        for (uint32_t k = 0; k < n->noutputs; k++) {
            const ir_value *v = n->outputs[k];
            live[v->id] = value_bytes(g, v->type, held(v->type->dtype, reference), symbols);
            now += live[v->id];
        }
        if (now > peak)
            peak = now;
        for (uint32_t j = 0; j < n->ninputs; j++) {
            const ir_value *v = n->inputs[j];
            if (v && rt_first_read(n, j) && v->kind == IR_VALUE_NODE && !v->is_output &&
                --remaining[v->id] == 0)
                now -= live[v->id];
        }
    }
    free(live), free(remaining);
    double need = fixed + peak;
    if (need <= (double)opts->memory_budget)
        return true;
    char a[32], b[32], c[32], d[32];
    const char *msg = ar_printf(
        g->arena,
        "the run needs about %s (%s of inputs%s, %s of intermediates at their peak), more than "
        "the memory budget of %s (--memory-budget)",
        human(need, a, sizeof a), human(fixed, b, sizeof b), reference ? " and f64 copies" : "",
        human(peak, c, sizeof c), human((double)opts->memory_budget, d, sizeof d));
    uint32_t at_len = largest_input ? ir_value_src_len(g->src, largest_input) : 0;
    if (largest_input && largest >= need / 2 && at_len)
        dg_error(dg, g->src, largest_input->src_offset, at_len, "input '%s' alone is %s: %s",
                 largest_input->name, human(largest, a, sizeof a), msg);
    else
        dg_error_path(dg, g->src ? g->src->path : g->name, "%s", msg);
    return false;
}
