/* fuserule test FILES...: runs rule tests (docs/rule-tests.md).
 *
 * A test file holds a rule set (inline, or a reference to rule files), an input graph and what
 * fusing it must give: an expected output graph compared structurally (value names ignored),
 * rule firings, refusals with their reason, a kernel count, and optionally `verify` (the fused
 * graph computes what the input does, with verify's tolerances). Sections start with a `%%` line;
 * the graph and rule texts are parsed in place, so diagnostics point into the test file.
 *
 * Prints one line per test (`PASS file` or `FAIL file` followed by the reasons), then
 * `N passed, N failed`. Exit 0 when all pass, 1 when any fails, 2 when a test file is bad input
 * (its diagnostics on stderr; it also counts as failed). */
#include "cli/cli.h"

#include "canon/canon.h"

#include "base/check.h"
#include "base/path.h"
#include "rewrite/rewrite.h"
#include "runtime/runtime.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: fuserule test TESTFILES...\n"
    "Runs rule tests (docs/rule-tests.md): fuses each test's input graph with its rules and\n"
    "checks the expected graph, firings, refusals, kernel count and outputs (verify).\n"
    "Exit 1 when a test fails, 2 on a bad test file.\n";

/* ---- the test file ---- */

typedef enum { SEC_NONE, SEC_RULES, SEC_INPUT, SEC_OUTPUT } section;

typedef struct {
    const char *rule;
    long count;
    size_t off, len; /* the directive's line, for an unknown rule name */
} fired_expectation;

typedef struct {
    const char *rule;
    const char *reason; /* a substring of the recorded reason */
    size_t off, len;
} refused_expectation;

typedef struct {
    ar_arena *arena;
    dg_source src;                 /* the whole file */
    VEC(const char *) rule_paths;  /* resolved against the test's folder */
    dg_source rules, input, output; /* the file with every other line blanked; text NULL if absent */
    VEC(fired_expectation) fired;
    VEC(refused_expectation) refused;
    long kernels;                  /* -1: not checked */
    bool verify;
    bool no_canon; /* `%% no-canon`: match the input as written (apply --no-canon) */
} rule_test;

/* A copy of the file in which only bytes [begin, end) keep their text: other lines become spaces,
 * line breaks stay, so line and column numbers in diagnostics are the file's own. */
static dg_source section_source(rule_test *t, size_t begin, size_t end)
{
    char *text = ar_alloc(t->arena, t->src.len + 1);
    for (size_t i = 0; i < t->src.len; i++) {
        char c = t->src.text[i];
        text[i] = (i >= begin && i < end) || c == '\n' ? c : ' ';
    }
    return (dg_source){.path = t->src.path, .text = text, .len = t->src.len};
}

/* The next whitespace-separated word of a directive line, copied into the arena. */
static const char *word(rule_test *t, const char **p, const char *end)
{
    while (*p < end && isspace((unsigned char)**p))
        (*p)++;
    const char *start = *p;
    while (*p < end && !isspace((unsigned char)**p))
        (*p)++;
    return *p > start ? ar_strndup(t->arena, start, (size_t)(*p - start)) : NULL;
}

static bool parse_count(const char *s, long *out)
{
    if (!s || !isdigit((unsigned char)s[0]))
        return false;
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return !errno && !*end;
}

/* A path written in a test is relative to the test file's folder. */
static const char *resolve(rule_test *t, const char *path)
{
    return path_beside(t->arena, t->src.path, path);
}

/* Ends the section that started at `begin` (its text runs to `end`). */
static void close_section(rule_test *t, section s, size_t begin, size_t end)
{
    if (s == SEC_RULES)
        t->rules = section_source(t, begin, end);
    else if (s == SEC_INPUT)
        t->input = section_source(t, begin, end);
    else if (s == SEC_OUTPUT)
        t->output = section_source(t, begin, end);
}

/* One `%% ...` line; returns the section it opens (SEC_NONE for a one-line directive). */
static section directive(rule_test *t, size_t off, const char *line, const char *end,
                         dg_context *dg)
{
    const char *p = line + 2;
    const char *kw = word(t, &p, end);
    size_t len = (size_t)(end - line);
    if (!kw) {
        dg_error(dg, &t->src, off, len, "expected a directive after '%%%%'");
        return SEC_NONE;
    }
    const char *a = word(t, &p, end);
    if (strcmp(kw, "rules") == 0) {
        if (!a)
            return SEC_RULES;
        for (; a; a = word(t, &p, end))
            vec_push(&t->rule_paths, resolve(t, a));
        return SEC_NONE;
    }
    if (strcmp(kw, "input") == 0 || strcmp(kw, "output") == 0 || strcmp(kw, "verify") == 0) {
        if (a)
            dg_error(dg, &t->src, off, len, "'%%%% %s' takes nothing after it", kw);
        if (kw[0] == 'v')
            t->verify = true;
        return kw[0] == 'i' ? SEC_INPUT : kw[0] == 'o' ? SEC_OUTPUT : SEC_NONE;
    }
    if (strcmp(kw, "fired") == 0) {
        fired_expectation f = {.rule = a, .off = off, .len = len};
        if (!a || !parse_count(word(t, &p, end), &f.count) || word(t, &p, end))
            dg_error(dg, &t->src, off, len, "expected '%%%% fired RULE COUNT'");
        else
            vec_push(&t->fired, f);
        return SEC_NONE;
    }
    if (strcmp(kw, "refused") == 0) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        const char *stop = end;
        while (stop > p && isspace((unsigned char)stop[-1]))
            stop--;
        if (!a || p == stop)
            dg_error(dg, &t->src, off, len, "expected '%%%% refused RULE REASON'");
        else
            vec_push(&t->refused, ((refused_expectation){a, ar_strndup(t->arena, p, (size_t)(stop - p)),
                                                         off, len}));
        return SEC_NONE;
    }
    if (strcmp(kw, "no-canon") == 0) {
        if (a)
            dg_error(dg, &t->src, off, len, "'%%%% no-canon' takes nothing after it");
        t->no_canon = true;
        return SEC_NONE;
    }
    if (strcmp(kw, "kernels") == 0) {
        if (!parse_count(a, &t->kernels) || word(t, &p, end))
            dg_error(dg, &t->src, off, len, "expected '%%%% kernels COUNT'");
        return SEC_NONE;
    }
    static const char *const directives[] = {"rules",  "input",  "output",   "fired", "refused",
                                             "kernels", "verify", "no-canon", NULL};
    const char *near = cli_suggest(kw, directives);
    char hint[64] = "";
    if (near)
        snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
    dg_error(dg, &t->src, off, len,
             "unknown directive '%s'%s (rules, input, output, fired, refused, kernels, verify, "
             "no-canon)",
             kw, hint);
    return SEC_NONE;
}

/* Splits the file into its sections and directives. False after reporting errors. */
static bool parse_test(rule_test *t, dg_context *dg)
{
    const char *text = t->src.text;
    section open = SEC_NONE;
    size_t begin = 0;
    bool seen[SEC_OUTPUT + 1] = {false};
    for (size_t off = 0; off < t->src.len;) {
        const char *line = text + off, *nl = memchr(line, '\n', t->src.len - off);
        const char *end = nl ? nl : text + t->src.len;
        if (end - line >= 2 && line[0] == '%' && line[1] == '%') {
            close_section(t, open, begin, off);
            open = directive(t, off, line, end, dg);
            if (open != SEC_NONE && seen[open])
                dg_error(dg, &t->src, off, (size_t)(end - line), "this section appears twice");
            seen[open] = true;
            begin = (size_t)(end - text);
        } else if (open == SEC_NONE) {
            const char *p = line;
            while (p < end && isspace((unsigned char)*p))
                p++;
            if (p < end && *p != '#')
                dg_error(dg, &t->src, (size_t)(p - text), (size_t)(end - p),
                         "text outside a section (sections start with '%%%% rules', "
                         "'%%%% input' or '%%%% output')");
        }
        off = (size_t)(end - text) + (nl != NULL);
    }
    close_section(t, open, begin, t->src.len);
    if (!t->input.text)
        dg_error_path(dg, t->src.path, "no '%%%% input' section");
    if (!t->rules.text && !t->rule_paths.len)
        dg_error_path(dg, t->src.path, "no rules ('%%%% rules FILE...' or an inline '%%%% rules' section)");
    if (!dg_has_errors(dg) && !t->output.text && !t->fired.len && !t->refused.len &&
        t->kernels < 0 && !t->verify)
        dg_error_path(dg, t->src.path, "the test expects nothing ('%%%% output', 'fired', "
                                       "'refused', 'kernels' or 'verify')");
    return !dg_has_errors(dg);
}

/* ---- running it ---- */

typedef struct {
    VEC(char *) lines; /* why the test failed, one line each */
} failures;

static void fail(failures *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(failures *f, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    vec_push(&f->lines, strdup(buf));
}

static mt_automaton *load_rules(rule_test *t, dsl_ruleset **rs, dg_context *dg)
{
    dsl_options opts = rw_dsl_options();
    *rs = dsl_ruleset_new(&opts);
    for (size_t i = 0; i < t->rule_paths.len; i++)
        dsl_load_file(*rs, t->rule_paths.items[i], dg);
    if (t->rules.text)
        dsl_load_text(*rs, t->src.path, t->rules.text, t->rules.len, dg);
    return rw_compile_rules(*rs, dg);
}

/* expected: the `%% output` graph, whose constants may be `_` (only their types are compared). */
static ir_graph *parse_graph(const dg_source *src, bool expected, dg_context *dg)
{
    ir_graph *g = expected ? ir_parse_expected(src, dg) : ir_parse(src, dg);
    if (g && !ir_validate(g, dg)) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}

static void visit(ir_graph *g, ir_node *n, uint8_t *seen, ir_node **order, size_t *len)
{
    if (seen[n->id])
        return;
    seen[n->id] = 1;
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] && n->inputs[k]->kind == IR_VALUE_NODE)
            visit(g, n->inputs[k]->producer, seen, order, len);
    order[(*len)++] = n;
}

/* The nodes in an order that depends on the structure alone, not on the order the text wrote
 * them in: depth first from the graph outputs, operands in order, each node after its inputs
 * (still topological). Nodes no output reads keep their relative order at the end. */
static void canonical_order(ir_graph *g)
{
    size_t n = g->nodes.len, len = 0;
    uint8_t *seen = calloc(n ? n : 1, 1);
    ir_node **order = calloc(n ? n : 1, sizeof *order);
    FR_CHECK(seen != NULL && order != NULL);
    for (size_t i = 0; i < n; i++)
        g->nodes.items[i]->id = (uint32_t)i;
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i]->kind == IR_VALUE_NODE)
            visit(g, g->outputs.items[i]->producer, seen, order, &len);
    for (size_t i = 0; i < n; i++)
        if (!seen[i])
            order[len++] = g->nodes.items[i];
    for (size_t i = 0; i < n; i++) {
        g->nodes.items[i] = order[i];
        order[i]->id = (uint32_t)i;
    }
    free(seen);
    free(order);
}

/* Value names carry no meaning in a comparison: inputs become in0.., constants c0.. and node
 * outputs v0.., in the order the nodes first use them (nodes in canonical_order). */
static void rename_values(ir_graph *g)
{
    for (size_t i = 0; i < g->values.len; i++)
        g->values.items[i]->name = NULL;
    for (size_t i = 0; i < g->inputs.len; i++)
        g->inputs.items[i]->name = ar_printf(g->arena, "in%zu", i);
    size_t nconst = 0, nvalue = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        ir_node *n = g->nodes.items[i];
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k] && !n->inputs[k]->name)
                n->inputs[k]->name = ar_printf(g->arena, "c%zu", nconst++);
        for (uint32_t k = 0; k < n->noutputs; k++)
            n->outputs[k]->name = ar_printf(g->arena, "v%zu", nvalue++);
    }
    for (size_t i = 0; i < g->values.len; i++)
        if (!g->values.items[i]->name)
            g->values.items[i]->name = ar_printf(g->arena, "c%zu", nconst++);
}

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The canonical text of g with names ignored, as lines: constants by name and type only (a
 * folded weight has no text to compare with) and sorted, since a rewrite appends the ones it
 * creates; the graph's own name is left out. The caller frees *buf and *lines. */
static size_t canonical_lines(ir_graph *g, char **buf, char ***lines)
{
    canonical_order(g);
    rename_values(g);
    size_t size = 0;
    FILE *mem = open_memstream(buf, &size);
    FR_CHECK(mem != NULL);
    ir_print(g, mem);
    fclose(mem);
    size_t n = 0, cap = 16, nconst = 0;
    *lines = malloc(cap * sizeof **lines);
    FR_CHECK(*lines != NULL);
    for (char *line = strtok(*buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "graph ", 6) == 0)
            continue;
        if (strncmp(line, "  const ", 8) == 0) {
            char *eq = strstr(line, " = ");
            if (eq)
                *eq = '\0';
            nconst++;
        }
        if (n == cap) {
            cap *= 2;
            *lines = realloc(*lines, cap * sizeof **lines);
            FR_CHECK(*lines != NULL);
        }
        (*lines)[n++] = line;
    }
    /* the printer writes inputs, then constants, then nodes: sort the constants' block */
    size_t first = 0;
    while (first < n && strncmp((*lines)[first], "  const ", 8) != 0)
        first++;
    qsort(*lines + first, nconst, sizeof **lines, compare_lines);
    return n;
}

static void compare_graphs(ir_graph *got, ir_graph *want, failures *f)
{
    char *gbuf = NULL, *wbuf = NULL, **gl = NULL, **wl = NULL;
    size_t ng = canonical_lines(got, &gbuf, &gl), nw = canonical_lines(want, &wbuf, &wl);
    size_t i = 0;
    while (i < ng && i < nw && strcmp(gl[i], wl[i]) == 0)
        i++;
    if (i < ng || i < nw) {
        fail(f, "the fused graph differs from '%%%% output' (value names renamed, constants by type):");
        fail(f, "  expected: %s", i < nw ? wl[i] + strspn(wl[i], " ") : "(end of graph)");
        fail(f, "  got:      %s", i < ng ? gl[i] + strspn(gl[i], " ") : "(end of graph)");
    }
    free(gl);
    free(wl);
    free(gbuf);
    free(wbuf);
}

static void check_firings(const rule_test *t, const rw_report *rep, failures *f)
{
    for (size_t i = 0; i < t->fired.len; i++) {
        const fired_expectation *e = &t->fired.items[i];
        uint32_t r = 0;
        while (r < rep->nrules && strcmp(rep->rule_names[r], e->rule) != 0)
            r++;
        if (r == rep->nrules)
            fail(f, "'%%%% fired %s': no rule of that name is loaded", e->rule);
        else if (rep->fired[r] != (uint32_t)e->count)
            fail(f, "rule '%s' fired %u times, expected %ld", e->rule, rep->fired[r], e->count);
    }
    for (size_t i = 0; i < t->refused.len; i++) {
        const refused_expectation *e = &t->refused.items[i];
        bool found = false;
        char buf[RW_REASON_SIZE];
        for (size_t k = 0; k < rep->refused.len && !found; k++) {
            rw_refusal got = rw_report_refusal(rep, k, buf);
            found = strcmp(got.rule, e->rule) == 0 && strstr(got.reason, e->reason) != NULL;
        }
        if (found)
            continue;
        fail(f, "rule '%s' was not refused for '%s'%s", e->rule, e->reason,
             rep->refused.len ? "; refusals:" : " (nothing was refused)");
        for (size_t k = 0; k < rep->refused.len; k++) {
            rw_refusal got = rw_report_refusal(rep, k, buf);
            fail(f, "  %s at %s: %s", got.rule, got.node, got.reason);
        }
    }
    if (t->kernels >= 0 && rep->after.kernels != (size_t)t->kernels)
        fail(f, "%zu kernels after fusion, expected %ld", rep->after.kernels, t->kernels);
}

/* verify's judgement (rt_judge): NaN and infinities where the original has them, then every
 * float element within its dtype's tolerance of the f64 reference plus the original's own
 * distance from it; integers exactly. */
static void compare_outputs(const rt_result *got, const rt_result *want, const rt_result *ref,
                            failures *f)
{
    for (size_t i = 0; i < want->noutputs; i++) {
        const rt_tensor *a = &got->outputs[i], *b = &want->outputs[i];
        if (!ir_type_equal(&a->type, &b->type)) {
            fail(f, "verify: output '%s' has another type after fusion", b->name);
            continue;
        }
        const rt_tensor *r = ir_dtype_is_float(b->type.dtype) ? &ref->outputs[i] : NULL;
        rt_judgement j = rt_judge(b, a, r, rt_tolerance_of(b->type.dtype));
        char index[160], f64[48] = "";
        if (r)
            snprintf(f64, sizeof f64, ", f64 %.9g", rt_tensor_get(r, j.c.at));
        if (j.bad) /* the order of verify's report: original, fused, f64 */
            fail(f, "verify: output '%s' differs in %zu of %zu elements (worst at %s: original "
                    "%.9g, fused %.9g%s)",
                 b->name, j.bad, rt_tensor_numel(b),
                 rt_format_index(&b->type, j.c.at, index, sizeof index), rt_tensor_get(b, j.c.at),
                 rt_tensor_get(a, j.c.at), f64);
    }
}

/* Fuses the input and checks every expectation. False when the test could not run (bad input,
 * in dg). */
/* A rule named by `%% fired` or `%% refused` that no loaded rule has is a mistake in the test, not
 * a failure of the rules: an error at the directive, with the nearest loaded name. */
static void check_rule_names(const rule_test *t, const dsl_ruleset *rs, dg_context *dg)
{
    const char **names = calloc((size_t)rs->nrules + 1, sizeof *names);
    FR_CHECK(names != NULL);
    for (uint32_t i = 0; i < rs->nrules; i++)
        names[i] = rs->rules[i]->name;
    for (size_t i = 0; i < t->fired.len + t->refused.len; i++) {
        bool fired = i < t->fired.len;
        const char *rule = fired ? t->fired.items[i].rule : t->refused.items[i - t->fired.len].rule;
        size_t off = fired ? t->fired.items[i].off : t->refused.items[i - t->fired.len].off;
        size_t len = fired ? t->fired.items[i].len : t->refused.items[i - t->fired.len].len;
        uint32_t k = 0;
        while (k < rs->nrules && strcmp(names[k], rule) != 0)
            k++;
        if (k < rs->nrules)
            continue;
        const char *near = cli_suggest(rule, names);
        char hint[160] = "";
        if (near)
            snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
        dg_error(dg, &t->src, off, len, "no loaded rule is called '%s'%s", rule, hint);
    }
    free(names);
}

static bool run_test(rule_test *t, failures *f, dg_context *dg)
{
    dsl_ruleset *rs = NULL;
    mt_automaton *a = load_rules(t, &rs, dg);
    if (a) {
        check_rule_names(t, rs, dg);
        if (dg_has_errors(dg)) {
            mt_free(a);
            a = NULL;
        }
    }
    ir_graph *g = a ? parse_graph(&t->input, false, dg) : NULL;
    ir_graph *want = g && t->output.text ? parse_graph(&t->output, true, dg) : NULL;
    ir_graph *original = g && t->verify ? parse_graph(&t->input, false, dg) : NULL;
    bool ok = g && (!t->output.text || want) && (!t->verify || original);
    rw_options opts = rw_options_default();
    opts.validate_each = true;
    rw_report rep = {0};
    cn_options canon = cn_options_default();
    cn_report crep;
    if (ok && (t->no_canon || cn_canonicalize(g, &canon, &crep, dg)) &&
        rw_apply(g, a, &opts, &rep, dg)) {
        check_firings(t, &rep, f);
        if (want)
            compare_graphs(g, want, f);
        rt_options ro = {0};
        rt_result r0 = {0}, r1 = {0}, ref = {0};
        if (original) {
            if (rt_run_cpu(original, NULL, 0, &ro, &r0, dg) &&
                rt_run_reference(original, r0.inputs, r0.ninputs, &ro, &ref, dg) &&
                rt_run_cpu(g, r0.inputs, r0.ninputs, &ro, &r1, dg))
                compare_outputs(&r1, &r0, &ref, f);
            rt_result_free(&r0);
            rt_result_free(&r1);
            rt_result_free(&ref);
        }
    }
    if (g)
        rw_report_free(&rep);
    ok = !dg_has_errors(dg);
    ir_graph_free(g);
    ir_graph_free(want);
    ir_graph_free(original);
    mt_free(a);
    /* the diagnostics may point into the rule texts: print them before the rule set goes */
    dg_print(dg, stderr);
    dsl_ruleset_free(rs);
    return ok;
}

/* Runs one test file; prints PASS/FAIL. Returns EXIT_OK, EXIT_CHECK_FAILED or EXIT_BAD_INPUT. */
static int test_file(const char *path)
{
    rule_test t = {.arena = ar_new(), .kernels = -1};
    failures f = {0};
    dg_context *dg = dg_new();
    int status = EXIT_OK;
    if (!dg_source_read(dg, path, &t.src) || !parse_test(&t, dg)) {
        dg_print(dg, stderr);
        status = EXIT_BAD_INPUT;
    } else if (!run_test(&t, &f, dg)) {
        status = EXIT_BAD_INPUT;
    } else if (f.lines.len) {
        status = EXIT_CHECK_FAILED;
    }
    printf("%s %s\n", status == EXIT_OK ? "PASS" : "FAIL", path);
    if (status == EXIT_BAD_INPUT)
        printf("  the test could not run (see the errors above)\n");
    for (size_t i = 0; i < f.lines.len; i++) {
        printf("  %s\n", f.lines.items[i]);
        free(f.lines.items[i]);
    }
    vec_free(&f.lines);
    dg_source_release(&t.src);
    dg_free(dg);
    vec_free(&t.rule_paths);
    vec_free(&t.fired);
    vec_free(&t.refused);
    ar_free(t.arena);
    return status;
}

int cmd_test(int argc, char **argv)
{
    VEC(const char *) files = {0};
    cli_args args = cli_args_start(argc, argv);
    for (const char *a; (a = cli_next(&args));) {
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            vec_free(&files);
            return EXIT_OK;
        }
        if (a[0] == '-' && a[1]) {
            vec_free(&files);
            return cli_usage_error("test", usage, "unknown option '%s'", a);
        }
        vec_push(&files, a);
    }
    if (!files.len)
        return cli_usage_error("test", usage, "no test files given");
    size_t passed = 0, failed = 0;
    int status = EXIT_OK;
    for (size_t i = 0; i < files.len; i++) {
        int s = test_file(files.items[i]);
        if (s == EXIT_OK)
            passed++;
        else
            failed++;
        if (s > status)
            status = s;
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    vec_free(&files);
    return status;
}
