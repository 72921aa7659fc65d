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

typedef VEC(refusal) tally_list;

typedef struct prover {
    const mt_automaton *automaton;
    pv_result *res;
    int64_t smallest;  /* elements of the smallest failing instance so far */
    uint64_t seed;     /* the executor's seed for the current instance's inputs */
    bool is_param[64]; /* per graph input of the current instance: a weight made an input */
    tally_list refusals;
    tally_list unbuilt; /* why draws gave no graph, by reason */
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

/* `[1, 2]`: element i of tensor t by its index in each dim. */
static void print_element_index(FILE *out, const rt_tensor *t, size_t i)
{
    size_t index[IR_MAX_RANK];
    for (int d = t->type.rank - 1; d >= 0; d--) {
        size_t dim = (size_t)t->type.dims[d];
        index[d] = dim ? i % dim : 0;
        i = dim ? i / dim : 0;
    }
    fputc('[', out);
    for (int d = 0; d < t->type.rank; d++)
        fprintf(out, "%s%zu", d ? ", " : "", index[d]);
    fputc(']', out);
}

static void print_tolerance(FILE *out, ir_dtype dt, double scale)
{
    rt_tolerance tol = pv_tolerance(dt, scale);
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

/* The inputs one run of an instance used: the tensors, and how they were made. */
typedef struct run_inputs {
    const rt_tensor *tensors;
    size_t count;
    pv_inputs_kind kind;
} run_inputs;

/* Keeps a failing instance if it is the smallest so far: the failure line, then the original
 * graph, the inputs it ran on, and (when an output was compared) the worst element. */
static void record_failure(prover *pv, ir_graph *g, const run_inputs *inputs, char *failure,
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
    if (inputs && inputs->count) {
        fputs("inputs (", f);
        pv_inputs_describe(inputs->kind, seed, f);
        fputs("):\n", f);
    }
    for (size_t i = 0; inputs && i < inputs->count; i++) {
        const rt_tensor *t = &inputs->tensors[i];
        fprintf(f, "%s = [", t->name);
        for (size_t k = 0; k < rt_tensor_numel(t); k++) {
            fputs(k ? ", " : "", f);
            print_number(f, rt_tensor_get(t, k));
        }
        fputs("]\n", f);
    }
    if (got && want) {
        fputs("worst at ", f);
        print_element_index(f, want, at);
        fputs(": original ", f);
        print_number(f, rt_tensor_get(want, at));
        fputs(", rewritten ", f);
        print_number(f, rt_tensor_get(got, at));
        fputc('\n', f);
    }
    fclose(f);
}

/* Compares every output of the two runs; false (after recording the failure) when one differs. */
static bool compare_outputs(prover *pv, ir_graph *g, const run_inputs *inputs,
                            const rt_result *want, const rt_result *got)
{
    double scale = pv_inputs_scale(inputs->kind);
    for (size_t i = 0; i < want->noutputs; i++) {
        const rt_tensor *w = &want->outputs[i], *o = &got->outputs[i];
        if (!ir_type_equal(&w->type, &o->type) || w->nbytes != o->nbytes) {
            char a[160], b[160];
            record_failure(pv, g, inputs,
                           format("the rewritten graph gives '%s' the type %s instead of %s",
                                  w->name, ir_type_format(g, &o->type, a, sizeof a),
                                  ir_type_format(g, &w->type, b, sizeof b)),
                           NULL, NULL, 0);
            return false;
        }
        pv_judgment c = pv_judge(w, o, scale);
        if (!c.ok) {
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
            print_tolerance(f, w->type.dtype, scale);
            fputc(')', f);
            fclose(f);
            record_failure(pv, g, inputs, line, o, w, c.at);
            return false;
        }
        /* the verdict's max |diff| is verify's: on the drawn inputs (a scaled variant's
         * differences scale with it) */
        if (inputs->kind == PV_INPUTS_DRAWN && c.worst_diff > pv->res->max_diff)
            pv->res->max_diff = c.worst_diff;
    }
    return true;
}

/* Counts one more occurrence of `reason` in a tally. */
static void tally(tally_list *l, const char *reason)
{
    for (size_t k = 0; k < l->len; k++)
        if (strcmp(l->items[k].reason, reason) == 0) {
            l->items[k].count++;
            return;
        }
    vec_push(l, ((refusal){strdup(reason), 1}));
}

static const refusal *most_often(const tally_list *l)
{
    const refusal *most = NULL;
    for (size_t k = 0; k < l->len; k++)
        if (!most || l->items[k].count > most->count)
            most = &l->items[k];
    return most;
}

static void tally_free(tally_list *l)
{
    for (size_t k = 0; k < l->len; k++)
        free(l->items[k].reason);
    vec_free(l);
}

static void note_refusals(prover *pv, const rw_report *rep)
{
    for (size_t i = 0; i < rep->refused.len; i++)
        tally(&pv->refusals, rep->refused.items[i].reason);
}

/* Runs both sides on one variant of the drawn inputs; false (after recording the failure) when
 * they disagree. A variant the original cannot run on (a kernel that refuses a planted NaN) says
 * nothing and passes. */
static bool run_variant(prover *pv, ir_graph *g, ir_graph *fused, const rt_result *drawn,
                        pv_inputs_kind kind, ar_arena *arena)
{
    rt_options ro = {.seed = pv->seed};
    rt_tensor *in = pv_inputs_variant(drawn->inputs, drawn->ninputs, kind, pv->seed,
                                      drawn->ninputs <= 64 ? pv->is_param : NULL, arena);
    run_inputs inputs = {in, drawn->ninputs, kind};
    rt_result want = {0}, got = {0};
    dg_context *dg = dg_new();
    bool ok = true;
    if (rt_run_cpu(g, in, drawn->ninputs, &ro, &want, dg)) {
        if (!rt_run_cpu(fused, in, drawn->ninputs, &ro, &got, dg)) {
            char *why = first_diagnostic(dg);
            record_failure(pv, g, &inputs, format("the rewritten graph does not run: %s", why),
                           NULL, NULL, 0);
            free(why);
            ok = false;
        } else {
            ok = compare_outputs(pv, g, &inputs, &want, &got);
        }
    }
    rt_result_free(&want);
    rt_result_free(&got);
    dg_free(dg);
    return ok;
}

/* Runs the rule on one candidate (g and its identical twin fused) and, if it fired, both sides on
 * the drawn inputs and their variants (inputs.c), until one disagrees. */
static void try_instance(prover *pv, ir_graph *g, ir_graph *fused, uint64_t seed)
{
    dg_context *dg = dg_new();
    rw_options opts = rw_options_default();
    rw_report rep = {0};
    rt_options ro = {.seed = seed};
    rt_result drawn = {0};
    pv->seed = seed;
    if (!ir_validate(g, dg) || !ir_validate(fused, dg))
        goto done; /* not a well-typed graph after all: draw again */
    bool rewrote = rw_apply(fused, pv->automaton, &opts, &rep, dg);
    if (!rep.fired || !rep.fired[0]) {
        note_refusals(pv, &rep);
        goto done;
    }
    if (!rt_run_cpu(g, NULL, 0, &ro, &drawn, dg)) {
        /* The executor cannot run the original (a training-mode Dropout is random). If it runs
         * the rewritten graph, the rule removed what cannot be computed: that is no rewrite of
         * the same function. Otherwise this is no instance to judge by. */
        rt_result got = {0};
        char *why = first_diagnostic(dg);
        dg_context *dg2 = dg_new();
        if (rewrote && rt_run_cpu(fused, NULL, 0, &ro, &got, dg2)) {
            pv->res->instances++;
            record_failure(pv, g, NULL,
                           format("the original graph does not run (%s) but the rewritten one "
                                  "does",
                                  why),
                           NULL, NULL, 0);
        }
        free(why);
        rt_result_free(&got);
        dg_free(dg2);
        goto done;
    }
    pv->res->instances++;
    run_inputs inputs = {drawn.inputs, drawn.ninputs, PV_INPUTS_DRAWN};
    if (!rewrote) {
        char *why = first_diagnostic(dg);
        record_failure(pv, g, &inputs, format("the rewrite failed: %s", why), NULL, NULL, 0);
        free(why);
        goto done;
    }
    ar_arena *arena = ar_new();
    for (int kind = 0; kind < PV_INPUTS_COUNT; kind++)
        if (!run_variant(pv, g, fused, &drawn, (pv_inputs_kind)kind, arena))
            break;
    ar_free(arena);
done:
    rt_result_free(&drawn);
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
        /* each candidate's stream from a hash of its number: consecutive raw states would be one
         * stream shifted by a draw, and neighbouring candidates would draw alike */
        pv_rng mix = {base + i * 0x9e3779b97f4a7c15u};
        uint64_t seed = pv_rng_next(&mix);
        out->attempts++;
        pv_rng rng = {seed}, twin = {seed};
        pv_trace trace;
        ir_graph *g = pv_generate(&facts, &rng, out->instances, &trace);
        ir_graph *fused = g ? pv_generate(&facts, &twin, out->instances, NULL) : NULL;
        if (!g && trace.why[0])
            tally(&pv.unbuilt, trace.why);
        for (size_t k = 0; k < FR_COUNT_OF(pv.is_param); k++)
            pv.is_param[k] = (trace.param_inputs >> k) & 1;
        if (fused)
            try_instance(&pv, g, fused, seed);
        ir_graph_free(g);
        ir_graph_free(fused);
    }
    out->verdict = out->failures ? PV_FAILED : out->instances ? PV_PROVED : PV_UNPROVEN;
    const refusal *most = most_often(&pv.refusals), *unbuilt = most_often(&pv.unbuilt);
    if (out->verdict == PV_UNPROVEN && most) {
        out->refusal = strdup(most->reason);
        out->refusals = most->count;
    }
    if (out->verdict == PV_UNPROVEN && unbuilt) {
        out->unbuilt = strdup(unbuilt->reason);
        out->unbuilt_count = unbuilt->count;
    }
    tally_free(&pv.refusals);
    tally_free(&pv.unbuilt);
    ar_free(arena);
    mt_free(a);
    dg_free(dg);
}

void pv_result_free(pv_result *res)
{
    free(res->failure);
    free(res->counterexample);
    free(res->refusal);
    free(res->unbuilt);
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
        if (res->unbuilt)
            fprintf(out, " (%u draws stopped at %s)", res->unbuilt_count, res->unbuilt);
        fputc('\n', out);
        break;
    }
}
