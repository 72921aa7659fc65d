/* A small harness for calling the CPU kernels of plain ONNX ops directly: a one-node graph holds
 * the node (for its attributes), tensors are built from literals, and the expectations print the
 * test's own line when they fail.
 *
 *     kt t;
 *     kt_begin(&t, IR_OP_Add, 2, 1);
 *     kt_in_f32(&t, 0, DIMS(2, 3), (float[]){1, 2, 3, 4, 5, 6});
 *     kt_in_f32(&t, 1, DIMS(3), (float[]){10, 20, 30});
 *     kt_out(&t, 0, IR_F32, DIMS(2, 3));
 *     CHECK(kt_run(&t));
 *     EXPECT_F32(&t, 0, 11, 22, 33, 14, 25, 36);
 *     kt_end(&t);
 *
 * Outputs are pre-filled with 0xA5 bytes, so an element a kernel forgot to write shows up. Header
 * only, because tests/unit.h keeps its counters per translation unit. */
#ifndef FUSERULE_TESTS_KERNELS_ONNX_KT_H
#define FUSERULE_TESTS_KERNELS_ONNX_KT_H

#include "kernels/kernels.h"
#include "tests/unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KT_MAX = 10 }; /* QLinearConv has 9 inputs */

/* `rank, dims` arguments from a list of dims: DIMS(2, 3). SCALAR is rank 0. */
#define DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define SCALAR 0, (int64_t[]){0}

typedef struct kt {
    ir_graph *g;
    ir_node *node;
    dg_context *dg;
    kn_tensor in[KT_MAX], out[KT_MAX];
    uint32_t nin, nout;
} kt;

static const kn_cpu_fn kt_kernels[] = {
#define IR_OP(name, ...) kn_cpu_##name,
#include "ir/ops.def"
#undef IR_OP
};

static inline void kt_begin(kt *t, ir_op op, uint32_t nin, uint32_t nout)
{
    static const char *const names[KT_MAX] = {"y0", "y1", "y2", "y3", "y4",
                                              "y5", "y6", "y7", "y8", "y9"};
    memset(t, 0, sizeof *t);
    t->g = ir_graph_new("kt");
    t->node = ir_add_node(t->g, op, nin, names, nout);
    t->dg = dg_new();
    t->nin = nin;
    t->nout = nout;
}

static inline void kt_end(kt *t)
{
    for (uint32_t i = 0; i < KT_MAX; i++) {
        free(t->in[i].data);
        free(t->out[i].data);
    }
    dg_free(t->dg);
    ir_graph_free(t->g);
}

static inline kn_tensor kt_tensor(ir_dtype dt, int rank, const int64_t *dims, const void *vals)
{
    kn_tensor x = {.dtype = dt, .rank = rank, .numel = 1};
    for (int d = 0; d < rank; d++) {
        x.dims[d] = dims[d];
        x.numel *= dims[d];
    }
    size_t bytes = (size_t)x.numel * ir_dtype_size(dt);
    x.data = malloc(bytes + 1); /* never NULL for an empty tensor: NULL means omitted */
    if (vals)
        memcpy(x.data, vals, bytes);
    else
        memset(x.data, 0xA5, bytes);
    return x;
}

static inline void kt_in(kt *t, uint32_t i, ir_dtype dt, int rank, const int64_t *dims,
                         const void *vals)
{
    free(t->in[i].data);
    t->in[i] = kt_tensor(dt, rank, dims, vals);
}

static inline void kt_in_f32(kt *t, uint32_t i, int rank, const int64_t *dims, const float *v)
{
    kt_in(t, i, IR_F32, rank, dims, v);
}

static inline void kt_in_i64(kt *t, uint32_t i, int rank, const int64_t *dims, const int64_t *v)
{
    kt_in(t, i, IR_I64, rank, dims, v);
}

/* A 1-D i64 input from a list: kt_ints(&t, 1, (int64_t[]){1, 2}, 2). */
static inline void kt_ints(kt *t, uint32_t i, const int64_t *v, int64_t n)
{
    kt_in(t, i, IR_I64, 1, &n, v);
}

static inline void kt_out(kt *t, uint32_t i, ir_dtype dt, int rank, const int64_t *dims)
{
    free(t->out[i].data);
    t->out[i] = kt_tensor(dt, rank, dims, NULL);
}

/* Fills a float tensor with a deterministic pseudo-random sequence in [-1, 1). */
static inline void kt_fill_random(kn_tensor *x, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 12345u;
    float *d = x->data;
    for (int64_t i = 0; i < x->numel; i++) {
        s = s * 1664525u + 1013904223u;
        d[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    }
}

static inline bool kt_run(kt *t)
{
    kn_call call = {.graph = t->g, .node = t->node, .inputs = t->in, .ninputs = t->nin,
                    .outputs = t->out, .noutputs = t->nout, .dg = t->dg};
    return kt_kernels[t->node->op](&call);
}

/* Runs the kernel expecting a run-time error whose text contains `needle`. */
static inline bool kt_fails_with(kt *t, const char *needle)
{
    if (kt_run(t) || !dg_has_errors(t->dg))
        return false;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    dg_print(t->dg, f);
    fclose(f);
    bool found = strstr(text, needle) != NULL;
    if (!found)
        fprintf(stderr, "error text was: %s", text);
    free(text);
    return found;
}

/* ---- expectations -------------------------------------------------------------------------- */

/* Floats: |got - want| <= 1e-5 + 1e-5 |want| (the f32 reference against values computed in
 * double), NaN only where NaN is expected, infinities with their sign. */
static inline void kt_expect_f32(const kt *t, uint32_t k, const double *want, size_t n,
                                 double tol, const char *file, int line)
{
    const kn_tensor *y = &t->out[k];
    if (y->numel != (int64_t)n) {
        fprintf(stderr, "%s:%d: output %u has %lld elements, expected %zu\n", file, line, k,
                (long long)y->numel, n);
        unit_current_failed = 1;
        return;
    }
    const float *d = y->data;
    for (size_t i = 0; i < n; i++) {
        double got = d[i], w = want[i];
        bool ok = isnan(w) ? isnan(got)
                  : isinf(w) ? got == w
                             : fabs(got - w) <= tol + tol * fabs(w);
        if (!ok) {
            fprintf(stderr, "%s:%d: output %u[%zu] == %.9g, expected %.9g\n", file, line, k, i,
                    got, w);
            unit_current_failed = 1;
            return;
        }
    }
}

static inline void kt_expect_int(const kt *t, uint32_t k, const int64_t *want, size_t n,
                                 const char *file, int line)
{
    const kn_tensor *y = &t->out[k];
    if (y->numel != (int64_t)n) {
        fprintf(stderr, "%s:%d: output %u has %lld elements, expected %zu\n", file, line, k,
                (long long)y->numel, n);
        unit_current_failed = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t got;
        switch (y->dtype) {
        case IR_I8: got = ((const int8_t *)y->data)[i]; break;
        case IR_U8:
        case IR_BOOL: got = ((const uint8_t *)y->data)[i]; break;
        case IR_I32: got = ((const int32_t *)y->data)[i]; break;
        default: got = ((const int64_t *)y->data)[i]; break;
        }
        if (got != want[i]) {
            fprintf(stderr, "%s:%d: output %u[%zu] == %lld, expected %lld\n", file, line, k, i,
                    (long long)got, (long long)want[i]);
            unit_current_failed = 1;
            return;
        }
    }
}

#define KT_COUNT(T, ...) (sizeof((T[]){__VA_ARGS__}) / sizeof(T))
#define EXPECT_F32(t, k, ...)                                                                      \
    kt_expect_f32((t), (k), (double[]){__VA_ARGS__}, KT_COUNT(double, __VA_ARGS__), 1e-5,         \
                  __FILE__, __LINE__)
#define EXPECT_F32_TOL(t, k, tol, ...)                                                             \
    kt_expect_f32((t), (k), (double[]){__VA_ARGS__}, KT_COUNT(double, __VA_ARGS__), (tol),        \
                  __FILE__, __LINE__)
/* Integer and bool outputs, exactly. */
#define EXPECT_INT(t, k, ...)                                                                      \
    kt_expect_int((t), (k), (int64_t[]){__VA_ARGS__}, KT_COUNT(int64_t, __VA_ARGS__), __FILE__,    \
                  __LINE__)

/* Output k against a reference array of the same size (f32). */
static inline void kt_expect_close(const kt *t, uint32_t k, const float *want, double tol,
                                   const char *file, int line)
{
    const kn_tensor *y = &t->out[k];
    const float *d = y->data;
    for (int64_t i = 0; i < y->numel; i++)
        if (!(fabs((double)d[i] - want[i]) <= tol + tol * fabs((double)want[i]))) {
            fprintf(stderr, "%s:%d: output %u[%lld] == %.9g, reference %.9g\n", file, line, k,
                    (long long)i, d[i], want[i]);
            unit_current_failed = 1;
            return;
        }
}
#define EXPECT_CLOSE(t, k, want, tol) kt_expect_close((t), (k), (want), (tol), __FILE__, __LINE__)

#endif
