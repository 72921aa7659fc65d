/* Runs the fixture file written by onnx_node_tests.py: ONNX backend node tests, one kernel call
 * per data set, compared with ONNX's expected outputs.
 *
 * The file is line-based:
 *     test NAME                      a new test (one ONNX node)
 *     op OPNAME
 *     skip REASON...                 the test cannot run here, and why
 *     attr NAME i V | f V | s TEXT | is N V... | fs N V...
 *     in INDEX none                  an omitted optional input
 *     in INDEX DTYPE RANK DIMS... VALUES...
 *     out INDEX DTYPE RANK DIMS... VALUES...
 *     run                            call the kernel on the inputs and outputs listed since the
 *                                    last run, and compare
 * f16 and bf16 tensors are handed to kernels as f32; their outputs are rounded to the storage type
 * before the comparison, as the executor stores them.
 *
 * Tolerances are ONNX's backend-test defaults (rtol 1e-3, atol 1e-7) for f32 and f16, 1e-2 for
 * bf16 (ONNX's bf16 data was made by truncation, this executor rounds to nearest even), exact for
 * integers and bool; NaN must meet NaN, and infinities their sign.
 *
 * Exit status: 0 when every test that ran passed (expected failures aside), 1 otherwise. */
#include "base/check.h"
#include "base/half.h"
#include "kernels/helpers.h"
#include "tests/kernels-onnx/kt.h"

#include <stdint.h>

/* Tests that fail for a reason outside the kernels, with the reason. */
static const struct {
    const char *name, *reason;
} expected_failures[] = {
#define RANDOM_DROPOUT                                                                             \
    "training-mode Dropout: the expected mask is numpy's, ours is kernels/dropout_mask.h's"
    {"test_training_dropout", RANDOM_DROPOUT},
    {"test_training_dropout_default", RANDOM_DROPOUT},
    {"test_training_dropout_default_mask", RANDOM_DROPOUT},
    {"test_training_dropout_mask", RANDOM_DROPOUT},
};

static const char *expected_failure(const char *name)
{
    for (size_t i = 0; i < sizeof expected_failures / sizeof expected_failures[0]; i++)
        if (strcmp(name, expected_failures[i].name) == 0)
            return expected_failures[i].reason;
    return NULL;
}

typedef struct {
    kt t;
    bool open;                   /* a test is being read */
    char name[256];
    bool failed;                 /* some data set of this test failed */
    ir_dtype storage[KT_MAX];    /* expected outputs' storage dtypes */
    double *want[KT_MAX];        /* expected outputs, as doubles */
    int runs, passed, failed_count, skipped, xfailed;
} driver;

static ir_dtype parse_dtype(const char *s, ir_dtype *storage)
{
    ir_dtype dt = IR_DTYPE_UNKNOWN;
    if (!ir_dtype_parse(s, strlen(s), &dt))
        return IR_DTYPE_UNKNOWN;
    *storage = dt;
    return ir_dtype_is_float(dt) ? IR_F32 : dt; /* what the kernel sees */
}

/* Reads "DTYPE RANK DIMS... VALUES..." from the tokenizer state into a fresh tensor. */
static bool parse_tensor(char **save, kn_tensor *x, ir_dtype *storage, double **values)
{
    char *tok = strtok_r(NULL, " \n", save);
    ir_dtype dt = tok ? parse_dtype(tok, storage) : IR_DTYPE_UNKNOWN;
    tok = strtok_r(NULL, " \n", save);
    if (dt == IR_DTYPE_UNKNOWN || !tok)
        return false;
    int rank = atoi(tok);
    int64_t dims[IR_MAX_RANK];
    if (rank < 0 || rank > IR_MAX_RANK)
        return false;
    for (int d = 0; d < rank; d++) {
        tok = strtok_r(NULL, " \n", save);
        if (!tok)
            return false;
        dims[d] = strtoll(tok, NULL, 10);
    }
    *x = kt_tensor(dt, rank, dims, NULL);
    *values = malloc((size_t)x->numel * sizeof **values + 1);
    for (int64_t i = 0; i < x->numel; i++) {
        tok = strtok_r(NULL, " \n", save);
        if (!tok)
            return false;
        (*values)[i] = strtod(tok, NULL);
        if (dt == IR_I64) /* exact beyond 2^53 */
            ((int64_t *)x->data)[i] = strtoll(tok, NULL, 10);
        else
            kn_set_f64(x, i, (*values)[i]);
    }
    return true;
}

static void parse_attr(driver *dr, char **save)
{
    char *name = strtok_r(NULL, " \n", save), *kind = strtok_r(NULL, " \n", save);
    ir_graph *g = dr->t.g;
    ir_node *n = dr->t.node;
    if (strcmp(kind, "i") == 0) {
        ir_set_attr_int(g, n, name, strtoll(strtok_r(NULL, " \n", save), NULL, 10));
    } else if (strcmp(kind, "f") == 0) {
        ir_set_attr_float(g, n, name, strtod(strtok_r(NULL, " \n", save), NULL));
    } else if (strcmp(kind, "s") == 0) {
        ir_set_attr_string(g, n, name, strtok_r(NULL, " \n", save));
    } else {
        int count = atoi(strtok_r(NULL, " \n", save));
        int64_t *ints = malloc((size_t)count * sizeof *ints + 1);
        double *floats = malloc((size_t)count * sizeof *floats + 1);
        for (int i = 0; i < count; i++) {
            char *tok = strtok_r(NULL, " \n", save);
            ints[i] = strtoll(tok, NULL, 10);
            floats[i] = strtod(tok, NULL);
        }
        if (strcmp(kind, "is") == 0)
            ir_set_attr_ints(g, n, name, ints, (uint32_t)count);
        else
            ir_set_attr_floats(g, n, name, floats, (uint32_t)count);
        free(ints);
        free(floats);
    }
}

/* The stored value of a kernel's f32 result in the storage dtype. */
static double stored(float v, ir_dtype storage)
{
    if (storage == IR_F16)
        return f16_to_f32(f32_to_f16(v));
    if (storage == IR_BF16)
        return bf16_to_f32(f32_to_bf16(v));
    return v;
}

static bool close_enough(double got, double want, ir_dtype storage)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    if (!ir_dtype_is_float(storage))
        return got == want;
    double rtol = storage == IR_BF16 ? 1e-2 : 1e-3, atol = 1e-7;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Compares output k; prints the first mismatch. */
static bool compare(driver *dr, uint32_t k)
{
    const kn_tensor *y = &dr->t.out[k];
    for (int64_t i = 0; i < y->numel; i++) {
        double got = y->dtype == IR_F32 ? stored(((float *)y->data)[i], dr->storage[k])
                     : y->dtype == IR_I64 ? (double)((int64_t *)y->data)[i]
                                          : kn_get_f64(y, i);
        if (y->dtype == IR_I64 && ((int64_t *)y->data)[i] != (int64_t)dr->want[k][i] &&
            fabs(dr->want[k][i]) < 9e15) {
            fprintf(stderr, "  %s: output %u[%lld] = %lld, expected %.17g\n", dr->name, k,
                    (long long)i, (long long)((int64_t *)y->data)[i], dr->want[k][i]);
            return false;
        }
        if (!close_enough(got, dr->want[k][i], dr->storage[k])) {
            fprintf(stderr, "  %s: output %u[%lld] = %.9g, expected %.9g\n", dr->name, k,
                    (long long)i, got, dr->want[k][i]);
            return false;
        }
    }
    return true;
}

static void run_data_set(driver *dr)
{
    bool ok = kt_run(&dr->t);
    if (!ok) {
        fprintf(stderr, "  %s: the kernel reported an error:\n", dr->name);
        dg_print(dr->t.dg, stderr);
    }
    for (uint32_t k = 0; ok && k < dr->t.nout; k++)
        ok = compare(dr, k);
    dr->failed |= !ok;
    for (uint32_t i = 0; i < KT_MAX; i++) { /* the next data set brings its own tensors */
        free(dr->t.in[i].data);
        free(dr->t.out[i].data);
        free(dr->want[i]);
        dr->t.in[i].data = dr->t.out[i].data = NULL;
        dr->want[i] = NULL;
    }
    dr->t.nin = dr->t.nout = 0;
}

static void finish_test(driver *dr)
{
    if (!dr->open)
        return;
    const char *xfail = expected_failure(dr->name);
    dr->runs++;
    if (dr->failed && xfail) {
        dr->xfailed++;
        printf("XFAIL %s: %s\n", dr->name, xfail);
    } else if (dr->failed || xfail) {
        dr->failed_count++;
        printf("FAIL %s%s\n", dr->name, xfail ? " (passed, but is listed as an expected failure)" : "");
    } else {
        dr->passed++;
    }
    kt_end(&dr->t);
    dr->open = false;
}

static void handle_line(driver *dr, char *line)
{
    char *save = NULL, *cmd = strtok_r(line, " \n", &save);
    if (!cmd)
        return;
    if (strcmp(cmd, "test") == 0) {
        finish_test(dr);
        snprintf(dr->name, sizeof dr->name, "%s", strtok_r(NULL, " \n", &save));
        dr->failed = false;
    } else if (strcmp(cmd, "op") == 0) {
        char *op = strtok_r(NULL, " \n", &save);
        ir_op code;
        FR_CHECK(ir_op_lookup(op, strlen(op), &code));
        kt_begin(&dr->t, code, 0, KT_MAX);
        dr->t.nout = 0;
        dr->open = true;
    } else if (strcmp(cmd, "skip") == 0) {
        printf("SKIP %s: %s", dr->name, save ? save : "\n");
        dr->skipped++;
        kt_end(&dr->t);
        dr->open = false;
    } else if (strcmp(cmd, "attr") == 0) {
        parse_attr(dr, &save);
    } else if (strcmp(cmd, "in") == 0 || strcmp(cmd, "out") == 0) {
        uint32_t i = (uint32_t)atoi(strtok_r(NULL, " \n", &save));
        FR_CHECK(i < KT_MAX);
        bool in = cmd[0] == 'i';
        kn_tensor *x = in ? &dr->t.in[i] : &dr->t.out[i];
        uint32_t *count = in ? &dr->t.nin : &dr->t.nout;
        *count = *count > i + 1 ? *count : i + 1;
        if (in && strncmp(save, "none", 4) == 0)
            return; /* stays {0}: omitted */
        ir_dtype storage;
        double *values = NULL;
        FR_CHECK(parse_tensor(&save, x, &storage, &values));
        if (in) {
            free(values);
        } else {
            dr->want[i] = values;
            dr->storage[i] = storage;
        }
    } else if (strcmp(cmd, "run") == 0) {
        run_data_set(dr);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURES\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    driver dr = {0};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        handle_line(&dr, line);
    finish_test(&dr);
    free(line);
    fclose(f);
    printf("%d run, %d passed, %d failed, %d expected failures, %d skipped\n", dr.runs, dr.passed,
           dr.failed_count, dr.xfailed, dr.skipped);
    return dr.failed_count ? 1 : 0;
}
