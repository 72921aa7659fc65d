/* The prover's driver: draw candidates, keep those the rule fires on, run both sides, compare. */
#include "prove/internal.h"

#include "base/check.h"
#include "rewrite/rewrite.h"
#include "runtime/runtime.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* How often the rewriter refused the rule for one reason (for an unproven verdict). */
typedef struct refusal {
    char *reason;
    uint32_t count;
} refusal;

typedef struct prover {
    const mt_automaton *automaton;
    pv_result *res;
    int64_t smallest; /* elements of the smallest failing instance so far */
    uint64_t seed;    /* the executor's seed for the current instance's inputs */
    VEC(refusal) refusals;
} prover;

/* ---- text helpers ---- */

/* The first error dg holds, as a string of its own (the generated graphs have no source to point
 * into, so the location would say nothing). */
static char *first_diagnostic(const dg_context *dg)
{
    const char *msg = dg_first_error(dg);
    char *text = strdup(msg ? msg : "no reason given");
    FR_CHECK(text != NULL);
    return text;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *format(const char *fmt, ...)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FR_CHECK(f != NULL);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    return text;
}

static void print_number(FILE *out, double x)
{
    if (isnan(x))
        fputs("NaN", out);
    else if (isinf(x))
        fputs(x < 0 ? "-Inf" : "+Inf", out);
    else
        fprintf(out, "%.9g", x);
}

/* `y[1,2]`: element i of tensor t by its index in each dim. */
static void print_element_name(FILE *out, const rt_tensor *t, size_t i)
{
    size_t index[IR_MAX_RANK];
    for (int d = t->type.rank - 1; d >= 0; d--) {
        size_t dim = (size_t)t->type.dims[d];
        index[d] = dim ? i % dim : 0;
        i = dim ? i / dim : 0;
    }
    fprintf(out, "%s[", t->name);
    for (int d = 0; d < t->type.rank; d++)
        fprintf(out, "%s%zu", d ? "," : "", index[d]);
    fputc(']', out);
}

static void print_tolerance(FILE *out, ir_dtype dt)
{
    rt_tolerance tol = rt_tolerance_of(dt);
    if (tol.atol > 0)
        fprintf(out, "tolerance %g + %g*|x|", tol.atol, tol.rtol);
    else
        fputs("exact", out);
}

/* ---- one instance ---- */

/* Elements in a graph's inputs and constants: what "smallest" instance means. */
static int64_t instance_elements(const ir_graph *g)
{
    int64_t total = 0, n;
    for (size_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        if (v->kind != IR_VALUE_NODE && ir_type_numel(&v->type, &n))
            total += n;
    }
    return total;
}

/* Keeps a failing instance if it is the smallest so far: the failure line, then the original
 * graph, the inputs it ran on, and (when an output was compared) the worst element. */
static void record_failure(prover *pv, ir_graph *g, const rt_result *inputs, char *failure,
                           const rt_tensor *got, const rt_tensor *want, size_t at)
{
    uint64_t seed = pv->seed;
    pv_result *res = pv->res;
    res->failures++;
    int64_t elements = instance_elements(g);
    if (res->failure && elements >= pv->smallest) {
        free(failure);
        return;
    }
    free(res->failure);
    free(res->counterexample);
    pv->smallest = elements;
    res->failure = failure;
    size_t len = 0;
    FILE *f = open_memstream(&res->counterexample, &len);
    FR_CHECK(f != NULL);
    fprintf(f, "smallest failing instance (%" PRId64 " elements):\n", elements);
    ir_print(g, f);
    if (inputs && inputs->ninputs)
        fprintf(f, "inputs (what `fuserule verify --seed %" PRIu64 "` draws for this graph):\n",
                seed);
    for (size_t i = 0; inputs && i < inputs->ninputs; i++) {
        const rt_tensor *t = &inputs->inputs[i];
        fprintf(f, "%s = [", t->name);
        for (size_t k = 0; k < rt_tensor_numel(t); k++) {
            fputs(k ? ", " : "", f);
            print_number(f, rt_tensor_get(t, k));
        }
        fputs("]\n", f);
    }
    if (got && want) {
        print_element_name(f, want, at);
        fputs(": original ", f);
        print_number(f, rt_tensor_get(want, at));
        fputs(", rewritten ", f);
        print_number(f, rt_tensor_get(got, at));
        fputc('\n', f);
    }
    fclose(f);
}

/* Compares every output of the two runs; false (after recording the failure) when one differs. */
static bool compare_outputs(prover *pv, ir_graph *g, const rt_result *want, const rt_result *got)
{
    for (size_t i = 0; i < want->noutputs; i++) {
        const rt_tensor *w = &want->outputs[i], *o = &got->outputs[i];
        if (!ir_type_equal(&w->type, &o->type) || w->nbytes != o->nbytes) {
            char a[160], b[160];
            record_failure(pv, g, want,
                           format("the rewritten graph gives '%s' the type %s instead of %s",
                                  w->name, ir_type_format(g, &o->type, a, sizeof a),
                                  ir_type_format(g, &w->type, b, sizeof b)),
                           NULL, NULL, 0);
            return false;
        }
        rt_comparison c = rt_compare(o, w);
        if (c.bad || c.special) {
            char *line = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&line, &len);
            FR_CHECK(f != NULL);
            if (c.special)
                fprintf(f, "NaN or infinity at other places in %zu elements of '%s'", c.special,
                        w->name);
            else
                fprintf(f, "outputs differ by %.3g in %zu elements of '%s'", c.worst_diff, c.bad,
                        w->name);
            fputs(" (", f);
            print_tolerance(f, w->type.dtype);
            fputc(')', f);
            fclose(f);
            record_failure(pv, g, want, line, o, w, c.at);
            return false;
        }
        if (c.worst_diff > pv->res->max_diff)
            pv->res->max_diff = c.worst_diff;
    }
    return true;
}

static void note_refusals(prover *pv, const rw_report *rep)
{
    for (size_t i = 0; i < rep->refused.len; i++) {
        const char *reason = rep->refused.items[i].reason;
        refusal *found = NULL;
        for (size_t k = 0; k < pv->refusals.len && !found; k++)
            if (strcmp(pv->refusals.items[k].reason, reason) == 0)
                found = &pv->refusals.items[k];
        if (found)
            found->count++;
        else
            vec_push(&pv->refusals, ((refusal){strdup(reason), 1}));
    }
}

/* Runs the rule on one candidate (g and its identical twin fused) and, if it fired, both sides. */
static void try_instance(prover *pv, ir_graph *g, ir_graph *fused, uint64_t seed)
{
    dg_context *dg = dg_new();
    rw_options opts = rw_options_default();
    rw_report rep = {0};
    rt_options ro = {.seed = seed};
    rt_result want = {0}, got = {0};
    pv->seed = seed;
    if (!ir_validate(g, dg) || !ir_validate(fused, dg))
        goto done; /* not a well-typed graph after all: draw again */
    bool rewrote = rw_apply(fused, pv->automaton, &opts, &rep, dg);
    if (!rep.fired || !rep.fired[0]) {
        note_refusals(pv, &rep);
        goto done;
    }
    if (!rt_run_cpu(g, NULL, 0, &ro, &want, dg))
        goto done; /* the executor cannot run the original: not an instance to judge by */
    pv->res->instances++;
    if (!rewrote) {
        char *why = first_diagnostic(dg);
        record_failure(pv, g, &want, format("the rewrite failed: %s", why), NULL, NULL, 0);
        free(why);
    } else if (!rt_run_cpu(fused, want.inputs, want.ninputs, &ro, &got, dg)) {
        char *why = first_diagnostic(dg);
        record_failure(pv, g, &want, format("the rewritten graph does not run: %s", why), NULL,
                       NULL, 0);
        free(why);
    } else {
        compare_outputs(pv, g, &want, &got);
    }
done:
    rt_result_free(&want);
    rt_result_free(&got);
    if (rep.arena)
        rw_report_free(&rep);
    dg_free(dg);
}

/* ---- the rule ---- */

/* A seed per rule that does not depend on the other rules loaded (FNV-1a of its name). */
static uint64_t rule_seed(const dsl_rule *r, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325u ^ seed;
    for (const char *s = r->name; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    return h;
}

void pv_prove(dsl_rule *rule, const pv_options *opts, pv_result *out)
{
    *out = (pv_result){0};
    uint32_t want = opts && opts->instances ? opts->instances : PV_DEFAULT_INSTANCES;
    uint32_t attempts = opts && opts->attempts ? opts->attempts : PV_DEFAULT_ATTEMPTS;
    if (attempts < want)
        attempts = want;
    dg_context *dg = dg_new();
    mt_automaton *a = mt_compile_rules(&rule, 1, dg);
    ar_arena *arena = ar_new();
    pv_facts facts;
    pv_facts_compute(rule, arena, &facts);
    prover pv = {.automaton = a, .res = out, .smallest = INT64_MAX};
    uint64_t base = rule_seed(rule, opts ? opts->seed : 0);
    for (uint32_t i = 0; !dg_has_errors(dg) && i < attempts && out->instances < want; i++) {
        uint64_t seed = base + i * 0x9e3779b97f4a7c15u;
        out->attempts++;
        pv_rng rng = {seed}, twin = {seed};
        ir_graph *g = pv_generate(&facts, &rng, out->instances);
        ir_graph *fused = g ? pv_generate(&facts, &twin, out->instances) : NULL;
        if (fused)
            try_instance(&pv, g, fused, seed);
        ir_graph_free(g);
        ir_graph_free(fused);
    }
    out->verdict = out->failures ? PV_FAILED : out->instances ? PV_PROVED : PV_UNPROVEN;
    refusal *most = NULL;
    for (size_t k = 0; k < pv.refusals.len; k++) {
        refusal *r = &pv.refusals.items[k];
        if (!most || r->count > most->count)
            most = r;
    }
    if (out->verdict == PV_UNPROVEN && most) {
        out->refusal = strdup(most->reason);
        out->refusals = most->count;
    }
    for (size_t k = 0; k < pv.refusals.len; k++)
        free(pv.refusals.items[k].reason);
    vec_free(&pv.refusals);
    ar_free(arena);
    mt_free(a);
    dg_free(dg);
}

void pv_result_free(pv_result *res)
{
    free(res->failure);
    free(res->counterexample);
    free(res->refusal);
    *res = (pv_result){0};
}

void pv_result_print(const dsl_rule *rule, const pv_result *res, FILE *out)
{
    unsigned line = 0, col = 0;
    if (rule->src)
        dg_line_col(rule->src, rule->src_offset, &line, &col);
    fprintf(out, "%s:%u: ", rule->src ? rule->src->path : "?", line);
    if (!rule->anonymous)
        fprintf(out, "%s: ", rule->name);
    switch (res->verdict) {
    case PV_PROVED:
        fprintf(out, "proved on %u instance%s (max |diff| %.2g)\n", res->instances,
                res->instances == 1 ? "" : "s", res->max_diff);
        break;
    case PV_FAILED:
        fprintf(out, "FAILED: %s, on %u of %u instances\n", res->failure, res->failures,
                res->instances);
        for (const char *s = res->counterexample; s && *s;) {
            const char *nl = strchr(s, '\n');
            size_t n = nl ? (size_t)(nl - s) : strlen(s);
            fprintf(out, "    %.*s\n", (int)n, s);
            s += n + (nl != NULL);
        }
        break;
    case PV_UNPROVEN:
        fprintf(out, "unproven: no instance satisfied the pattern and guards in %u attempts",
                res->attempts);
        if (res->refusal)
            fprintf(out, " (the rewriter refused it %u times: %s)", res->refusals, res->refusal);
        fputc('\n', out);
        break;
    }
}
