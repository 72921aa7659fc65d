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

static void print_tolerance(FILE *out, const pv_judgment *j)
{
    if (j->tol.atol > 0 || j->tol.rtol > 0)
        fprintf(out, "tolerance %g + %g*|x|%s", j->tol.atol, j->tol.rtol,
                j->reference ? " + the original's distance" : "");
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
        if (v->kind != IR_VALUE_NODE && ir_type_numel(v->type, &n))
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

/* An output judged: the original's, the rewritten graph's and the f64 reference's values (ref NULL
 * without one), and the worst element. */
typedef struct judged_output {
    const rt_tensor *original, *rewritten, *ref;
    size_t at;
} judged_output;

/* Keeps a failing instance if it is the smallest so far: the failure line, then the original
 * graph, the inputs it ran on, and (when an output was judged) its worst element, in verify's
 * order: original, fused, f64. */
static void record_failure(prover *pv, ir_graph *g, const run_inputs *inputs, char *failure,
                           const judged_output *out)
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
    if (out) {
        char index[160];
        fprintf(f, "worst at %s: original ",
                rt_format_index(&out->original->type, out->at, index, sizeof index));
        print_number(f, rt_tensor_get(out->original, out->at));
        fputs(", fused ", f);
        print_number(f, rt_tensor_get(out->rewritten, out->at));
        if (out->ref) {
            fputs(", f64 ", f);
            print_number(f, rt_tensor_get(out->ref, out->at));
        }
        fputc('\n', f);
    }
    fclose(f);
}

/* Judges every output of the rewritten run against the original's and the f64 reference's (ref
 * NULL when the reference did not run); false (after recording the failure) when one fails. */
static bool compare_outputs(prover *pv, ir_graph *g, const run_inputs *inputs,
                            const rt_result *want, const rt_result *got, const rt_result *ref)
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
                           NULL);
            return false;
        }
        const rt_tensor *r = ref && ir_dtype_is_float(w->type.dtype) ? &ref->outputs[i] : NULL;
        pv_judgment c = pv_judge(w, o, r, scale);
        if (!c.ok) {
            char *line = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&line, &len);
            FR_CHECK(f != NULL);
            if (c.special)
                fprintf(f, "NaN or infinity at other places in %zu elements of '%s'", c.special,
                        w->name);
            else if (c.reference)
                fprintf(f,
                        "outputs differ: '%s' is up to %.3g from f64 in %zu elements, the "
                        "original within %.3g",
                        w->name, c.worst_diff, c.bad, c.original_distance);
            else
                fprintf(f, "outputs differ by %.3g in %zu elements of '%s'", c.worst_diff, c.bad,
                        w->name);
            fputs(" (", f);
            print_tolerance(f, &c);
            fputc(')', f);
            fclose(f);
            judged_output out = {w, o, r, c.at};
            record_failure(pv, g, inputs, line, &out);
            return false;
        }
        /* the verdict's distances are verify's: on the drawn inputs (a scaled variant's
         * differences scale with it) */
        if (inputs->kind != PV_INPUTS_DRAWN)
            continue;
        pv_result *res = pv->res;
        res->reference |= c.reference;
        if (c.worst_diff > res->max_diff)
            res->max_diff = c.worst_diff;
        if (c.original_distance > res->max_original)
            res->max_original = c.original_distance;
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
    char buf[RW_REASON_SIZE];
    for (size_t i = 0; i < rep->refused.len; i++)
        tally(&pv->refusals, rw_report_refusal(rep, i, buf).reason);
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
    rt_result want = {0}, got = {0}, ref = {0};
    dg_context *dg = dg_new();
    bool ok = true;
    if (rt_run_cpu(g, in, drawn->ninputs, &ro, &want, dg)) {
        if (!rt_run_cpu(fused, in, drawn->ninputs, &ro, &got, dg)) {
            char *why = first_diagnostic(dg);
            record_failure(pv, g, &inputs, format("the rewritten graph does not run: %s", why),
                           NULL);
            free(why);
            ok = false;
        } else {
            /* the f64 reference of the original, as verify runs it; an original the f64
             * evaluator cannot run is judged without it (as `verify --no-reference`) */
            dg_context *dg2 = dg_new();
            bool referenced = rt_run_reference(g, in, drawn->ninputs, &ro, &ref, dg2);
            dg_free(dg2);
            ok = compare_outputs(pv, g, &inputs, &want, &got, referenced ? &ref : NULL);
        }
    }
    rt_result_free(&want);
    rt_result_free(&got);
    rt_result_free(&ref);
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
        /* The executor cannot run the original (an op it refuses). If it runs
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
                           NULL);
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
        record_failure(pv, g, &inputs, format("the rewrite failed: %s", why), NULL);
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
        fprintf(out, "proved on %u instance%s", res->instances, res->instances == 1 ? "" : "s");
        if (res->reference)
            fprintf(out, " (|original - f64| %.2g, |fused - f64| %.2g)\n", res->max_original,
                    res->max_diff);
        else
            fprintf(out, " (max |diff| %.2g)\n", res->max_diff);
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
