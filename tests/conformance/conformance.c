/* The ONNX backend node tests (Debian's libonnx-testdata) through ONNX import and the CPU executor.
 *
 *     onnx_conformance [--reference] DATA_DIR [NAME...]
 *
 * DATA_DIR holds one folder per test: model.onnx and test_data_set_N/{input,output}_K.pb. Each
 * test is imported; a model that is valid ONNX but uses an op, dtype, attribute or opset outside
 * the catalog is skipped, with the importer's reason. Every other test runs each data set and
 * compares every output with ONNX's own tolerance (numpy.testing.assert_allclose with rtol 1e-3,
 * atol 1e-7, after checking that NaN and infinities agree; bf16 within one unit in the last place,
 * see below); integers and bools must be equal. A data set that runs Dropout in training mode
 * with a nonzero ratio, or a model with a random generator (IR_OPF_RANDOM), is skipped: its
 * output is random.
 *
 * Each test runs in a child process, so a crash or a hang in a kernel is one failed test, not
 * the end of the suite. Prints one line per test (PASS, FAIL reason, SKIP reason) and a summary
 * "N passed, N failed, N skipped"; exits 1 when any test failed, 77 when DATA_DIR is absent. With
 * NAMEs, runs only the tests whose folder names contain one of them.
 *
 * With --reference, each data set runs on the f64 reference instead (rt_run_reference: the f64
 * build of every CPU kernel) and its f64 outputs are held to the same tolerances (integer outputs
 * to within one: a float rounded to an integer may land on the other side of a tie): the ctest
 * conformance/onnx-node-f64 checks that the double build of the kernels computes the ONNX ops. */
#include "base/diag.h"
#include "ir/ir.h"
#include "onnx/onnx_io.h"
#include "runtime/runtime.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A test's result, which is also its child process's exit status: FAIL and SKIP are not 1, the
 * status a sanitizer exits with, so that a child it stops is told apart (and reported). */
enum { EXIT_PASS = 0, EXIT_FAIL = 3, EXIT_SKIP = 4, EXIT_MISSING = 77 };
enum { TEST_TIMEOUT_S = 120, MAX_TENSORS = 64 };

/* numpy.testing.assert_allclose: |got - want| <= abs_tol + rel_tol * |want|, ONNX's defaults.
 * bf16 outputs allow one unit in the last place (2^-7): ONNX 1.12's generator makes bf16 data by
 * truncating float32, where the spec (and the executor) round to nearest. */
static const double rel_tol = 1e-3, abs_tol = 1e-7, bf16_rel_tol = 1.0 / 128;

/* --reference: run the f64 reference; float outputs come back as f64. */
static bool reference;

/* ---- reporting one test --------------------------------------------------------------------- */

/* The first line of the diagnostics in dg, for a one-line reason. */
static void first_diagnostic(dg_context *dg, char *buf, size_t size)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        snprintf(buf, size, "(no message)");
        return;
    }
    dg_print(dg, mem);
    fclose(mem);
    size_t n = strcspn(text, "\n");
    snprintf(buf, size, "%.*s", (int)n, text);
    free(text);
}

static int finish(const char *name, int status, const char *reason)
{
    static const char *const words[] = {[EXIT_PASS] = "PASS", [EXIT_FAIL] = "FAIL",
                                        [EXIT_SKIP] = "SKIP"};
    if (reason && reason[0])
        printf("%s %s: %s\n", words[status], name, reason);
    else
        printf("%s %s\n", words[status], name);
    fflush(stdout);
    return status;
}

/* ---- comparing ------------------------------------------------------------------------------ */

static bool same_shape(const ir_type *a, const ir_type *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static const char *shape_str(const ir_type *t, char *buf, size_t size)
{
    return ir_type_format(NULL, t, buf, size);
}

/* Compares one output with its expected tensor; on a mismatch writes why into `why`. */
static bool compare(const rt_tensor *got, const ox_tensor *want, char *why, size_t size)
{
    char a[160], b[160];
    bool widened = reference && got->type.dtype == IR_F64 && ir_dtype_is_float(want->type.dtype);
    if ((got->type.dtype != want->type.dtype && !widened) ||
        !same_shape(&got->type, &want->type)) {
        snprintf(why, size, "output '%s' is %s, expected %s", got->name,
                 shape_str(&got->type, a, sizeof a), shape_str(&want->type, b, sizeof b));
        return false;
    }
    rt_tensor expected = {want->name, want->type, want->data, want->nbytes};
    bool is_float = ir_dtype_is_float(want->type.dtype);
    double rel = want->type.dtype == IR_BF16 ? bf16_rel_tol : rel_tol;
    size_t n = rt_tensor_numel(&expected);
    for (size_t i = 0; i < n; i++) {
        double x = rt_tensor_get(got, i), y = rt_tensor_get(&expected, i);
        bool ok;
        if (!is_float)
            /* An integer the f64 build rounds from an exact quotient may be one off the float32
             * one the test data rounded (DynamicQuantizeLinear's ties); integer arithmetic is the
             * same code in both builds, and conformance/onnx-node holds it exactly. */
            ok = x == y || (reference && fabs(x - y) <= 1);
        else if (isnan(y) || isnan(x))
            ok = isnan(x) && isnan(y);
        else if (isinf(y) || isinf(x))
            ok = x == y;
        else
            ok = fabs(x - y) <= abs_tol + rel * fabs(y);
        if (!ok) {
            snprintf(why, size, "output '%s' element %zu is %.9g, expected %.9g", got->name, i, x,
                     y);
            return false;
        }
    }
    return true;
}

/* ---- one test ------------------------------------------------------------------------------- */

/* Reads dir/prefix_K.pb for K = 0, 1, ... into out, expecting the dtypes of `values` (the graph's
 * inputs or outputs); returns how many, or -1 after an error. */
static int read_tensors(const char *dir, const char *prefix, ir_value *const *values,
                        size_t nvalues, ar_arena *arena, ox_tensor *out, ox_import_info *info,
                        dg_context *dg)
{
    int count = 0;
    for (; count < MAX_TENSORS; count++) {
        char path[4096];
        int len = snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, count);
        if (len < 0 || (size_t)len >= sizeof path) {
            dg_error_path(dg, dir, "the path of %s_%d.pb is too long", prefix, count);
            return -1;
        }
        if (access(path, F_OK) != 0)
            break;
        ir_dtype as = (size_t)count < nvalues ? values[count]->type->dtype : IR_DTYPE_UNKNOWN;
        if (!ox_read_tensor(path, as, arena, &out[count], info, dg))
            return -1;
    }
    return count;
}

/* The value of a scalar input of a node for this data set (a given input or a constant), or
 * `absent` when the input is omitted or unknown. */
static double scalar_input(ir_graph *g, const ir_node *n, uint32_t index, const rt_tensor *given,
                           int ngiven, double absent)
{
    if (index >= n->ninputs || !n->inputs[index])
        return absent;
    const ir_value *v = n->inputs[index];
    for (int i = 0; i < ngiven; i++)
        if (strcmp(given[i].name, v->name) == 0 && given[i].nbytes)
            return rt_tensor_get(&given[i], 0);
    if (v->kind == IR_VALUE_CONST) {
        dg_context *dg = dg_new();
        const void *data = ir_const_data(g, (ir_value *)v, dg);
        dg_free(dg);
        rt_tensor t = {v->name, *v->type, (void *)data, v->konst->nbytes};
        if (data && t.nbytes)
            return rt_tensor_get(&t, 0);
    }
    return absent;
}

/* Dropout in training mode with a nonzero ratio draws a random mask: ONNX's expected outputs
 * come from numpy's generator, which no other implementation reproduces (the CPU kernel draws its
 * own, kernels/dropout_mask.h). Such a data set is skipped. */
static bool random_dropout(ir_graph *g, const rt_tensor *given, int ngiven)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const ir_node *n = g->nodes.items[i];
        if (n->op == IR_OP_Dropout && scalar_input(g, n, 2, given, ngiven, 0) != 0 &&
            scalar_input(g, n, 1, given, ngiven, 0.5) != 0)
            return true;
    }
    return false;
}

/* A random generator (RandomUniformLike, the expansion of Bernoulli...): the expected outputs are
 * numpy's random numbers, as for Dropout. Such a test is skipped. */
static const ir_node *random_node(const ir_graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++)
        if (ir_op_info_get(g->nodes.items[i]->op)->flags & IR_OPF_RANDOM)
            return g->nodes.items[i];
    return NULL;
}

static int is_data_set(const struct dirent *e)
{
    return strncmp(e->d_name, "test_data_set_", 14) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Whether every given input has the shape its graph input declares. A few data sets of ONNX 1.12
 * disagree with their own model (CastLike's `like` is [1] where the model says [3,4]); they test
 * nothing an implementation can get right, and are skipped with the reason. */
static bool inputs_match_model(const ir_graph *g, const ox_tensor *ins, int nin, char *why,
                               size_t size)
{
    for (int i = 0; i < nin; i++) {
        const ir_type *declared = g->inputs.items[i]->type;
        if (ir_type_is_static(declared) && !same_shape(declared, &ins[i].type)) {
            char a[160], b[160];
            snprintf(why, size, "input '%s' is %s in the data set but %s in the model (a defect "
                                "of the test data)",
                     g->inputs.items[i]->name, shape_str(&ins[i].type, a, sizeof a),
                     shape_str(declared, b, sizeof b));
            return false;
        }
    }
    return true;
}

/* Runs one data set; returns EXIT_PASS, or EXIT_FAIL / EXIT_SKIP with the reason in `why`. */
static int run_data_set(ir_graph *g, const char *dir, char *why, size_t size)
{
    ar_arena *arena = ar_new();
    dg_context *dg = dg_new();
    ox_tensor ins[MAX_TENSORS], outs[MAX_TENSORS];
    ox_import_info info;
    int status = EXIT_FAIL;
    int nin = read_tensors(dir, "input", g->inputs.items, g->inputs.len, arena, ins, &info, dg);
    int nout = nin < 0 ? -1
                       : read_tensors(dir, "output", g->outputs.items, g->outputs.len, arena, outs,
                                      &info, dg);
    rt_tensor given[MAX_TENSORS];
    rt_result res = {0};
    if (nin < 0 || nout < 0) {
        first_diagnostic(dg, why, size);
        status = info.unsupported ? EXIT_SKIP : EXIT_FAIL;
    } else if ((size_t)nin > g->inputs.len || (size_t)nout != g->outputs.len) {
        snprintf(why, size, "%d inputs and %d outputs in the data set, %zu and %zu in the graph",
                 nin, nout, g->inputs.len, g->outputs.len);
    } else {
        /* input_K is the K-th graph input that is not an initializer: import's input order */
        for (int i = 0; i < nin; i++)
            given[i] = (rt_tensor){g->inputs.items[i]->name, ins[i].type, ins[i].data,
                                   ins[i].nbytes};
        if (!inputs_match_model(g, ins, nin, why, size)) {
            status = EXIT_SKIP;
        } else if (random_dropout(g, given, nin)) {
            snprintf(why, size, "Dropout in training mode is random (outside the catalog)");
            status = EXIT_SKIP;
        } else if (random_node(g)) {
            snprintf(why, size, "%s draws random numbers (numpy's in the expected output)",
                     ir_op_name(random_node(g)->op));
            status = EXIT_SKIP;
        } else if (!(reference ? rt_run_reference : rt_run_cpu)(g, given, (size_t)nin, NULL, &res,
                                                                 dg)) {
            first_diagnostic(dg, why, size);
        } else {
            status = EXIT_PASS;
            for (int i = 0; i < nout && status == EXIT_PASS; i++)
                if (!compare(&res.outputs[i], &outs[i], why, size))
                    status = EXIT_FAIL;
        }
        rt_result_free(&res);
    }
    dg_free(dg);
    ar_free(arena);
    return status;
}

static int run_test(const char *root, const char *name)
{
    char dir[4096], model[4200], why[512] = "";
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    dg_context *dg = dg_new();
    ox_import_info info;
    ir_graph *g = ox_import(model, &info, dg);
    if (!g) {
        first_diagnostic(dg, why, sizeof why);
        dg_free(dg);
        return finish(name, info.unsupported ? EXIT_SKIP : EXIT_FAIL,
                      info.unsupported ? info.reason : why);
    }
    dg_free(dg);
    struct dirent **sets;
    int nsets = scandir(dir, &sets, is_data_set, by_name);
    int status = nsets > 0 ? EXIT_PASS : EXIT_FAIL;
    if (nsets <= 0)
        snprintf(why, sizeof why, "no test_data_set_* folder");
    for (int i = 0; i < nsets; i++) {
        char set[8400];
        snprintf(set, sizeof set, "%s/%s", dir, sets[i]->d_name);
        if (status == EXIT_PASS) {
            char one[480] = "";
            status = run_data_set(g, set, one, sizeof one);
            if (status != EXIT_PASS)
                snprintf(why, sizeof why, "%.200s: %.280s", sets[i]->d_name, one);
        }
        free(sets[i]);
    }
    free(sets);
    ir_graph_free(g);
    return finish(name, status, why);
}

/* ---- the suite ------------------------------------------------------------------------------ */

static int is_test(const struct dirent *e)
{
    return strncmp(e->d_name, "test_", 5) == 0;
}

static bool selected(const char *name, char **filters, int nfilters)
{
    if (nfilters == 0)
        return true;
    for (int i = 0; i < nfilters; i++)
        if (strstr(name, filters[i]))
            return true;
    return false;
}

/* Runs a test in a child; a signal or a timeout is a failure. */
static int run_isolated(const char *root, const char *name)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return finish(name, EXIT_FAIL, "cannot fork");
    }
    if (pid == 0) {
        alarm(TEST_TIMEOUT_S);
        _exit(run_test(root, name));
    }
    int wstatus;
    if (waitpid(pid, &wstatus, 0) < 0)
        return finish(name, EXIT_FAIL, "lost the child process");
    if (WIFEXITED(wstatus) &&
        (WEXITSTATUS(wstatus) == EXIT_PASS || WEXITSTATUS(wstatus) == EXIT_FAIL ||
         WEXITSTATUS(wstatus) == EXIT_SKIP))
        return WEXITSTATUS(wstatus);
    char why[128];
    if (WIFSIGNALED(wstatus))
        snprintf(why, sizeof why, "crashed (%s)",
                 WTERMSIG(wstatus) == SIGALRM ? "timeout" : strsignal(WTERMSIG(wstatus)));
    else
        snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(wstatus));
    return finish(name, EXIT_FAIL, why);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--reference") == 0) {
        reference = true;
        argv++, argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: onnx_conformance [--reference] DATA_DIR [NAME...]\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("SKIP all: %s is not there (install libonnx-testdata)\n", argv[1]);
        return EXIT_MISSING;
    }
    struct dirent **tests;
    int ntests = scandir(argv[1], &tests, is_test, by_name);
    if (ntests < 0) {
        perror(argv[1]);
        return 2;
    }
    int counts[EXIT_SKIP + 1] = {0};
    for (int i = 0; i < ntests; i++) {
        if (selected(tests[i]->d_name, argv + 2, argc - 2))
            counts[run_isolated(argv[1], tests[i]->d_name)]++;
        free(tests[i]);
    }
    free(tests);
    printf("%d passed, %d failed, %d skipped\n", counts[EXIT_PASS], counts[EXIT_FAIL],
           counts[EXIT_SKIP]);
    return counts[EXIT_FAIL] ? 1 : 0;
}
