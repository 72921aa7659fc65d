/* f64 storage, the f64 reference (rt_run_reference) and the memory budget of a run.
 *
 * The reference is checked against sums computed here in double from the same inputs: it must be
 * as accurate as double arithmetic, and the f32 run measurably less so. */
#include "base/half.h"
#include "tests/runtime/rtt.h"

#include <math.h>
#include <stdlib.h>

/* Checks what dg_print prints. */
#define CHECK_DIAG(dg, expected)                                                                   \
    do {                                                                                           \
        char *text_ = NULL;                                                                        \
        size_t len_ = 0;                                                                           \
        FILE *f_ = open_memstream(&text_, &len_);                                                  \
        dg_print(dg, f_);                                                                          \
        fclose(f_);                                                                                \
        CHECK_STR(text_, expected);                                                                \
        free(text_);                                                                               \
    } while (0)

static double f32_at(const rt_tensor *t, size_t i)
{
    return ((const float *)t->data)[i];
}
static double f64_at(const rt_tensor *t, size_t i)
{
    return ((const double *)t->data)[i];
}

/* A chain of 200 x*a + b steps on 4096 values: f32 rounding accumulates with depth, f64 not. */
static void test_reference_deep_chain(void)
{
    enum { N = 4096, DEPTH = 200 };
    ir_graph *g = ir_graph_new("deep");
    ir_value *y = rtt_input(g, "x", IR_F32, DIMS(N));
    ir_value *a = rtt_literal(g, "a", IR_F32, (double[]){1.0009765625}, 1, SCALAR); /* 1 + 2^-10 */
    ir_value *b = rtt_literal(g, "b", IR_F32, (double[]){0.1}, 1, SCALAR);
    double bv = (float)0.1;
    char name[32];
    for (int i = 0; i < DEPTH; i++) {
        snprintf(name, sizeof name, "m%d", i);
        y = rtt_op(g, IR_OP_Mul, name, IN(y, a));
        snprintf(name, sizeof name, "s%d", i);
        y = rtt_op(g, IR_OP_Add, name, IN(y, b));
    }
    ir_add_output(g, y);
    rt_result f32 = {0}, ref = {0};
    CHECK(rtt_run(g, 3, &f32));
    dg_context *dg = dg_new();
    CHECK(rt_run_reference(g, f32.inputs, f32.ninputs, NULL, &ref, dg));
    CHECK_DIAG(dg, "");
    dg_free(dg);
    if (f32.arena && ref.arena) {
        CHECK_INT(ref.outputs[0].type.dtype, IR_F64);
        CHECK_INT(ref.outputs[0].nbytes, N * sizeof(double));
        double worst_ref = 0, worst_f32 = 0;
        for (size_t i = 0; i < N; i++) {
            double want = f32_at(&f32.inputs[0], i);
            for (int k = 0; k < DEPTH; k++)
                want = want * 1.0009765625 + bv;
            worst_ref = fmax(worst_ref, fabs(f64_at(&ref.outputs[0], i) - want));
            worst_f32 = fmax(worst_f32, fabs(f32_at(&f32.outputs[0], i) - want));
        }
        CHECK(worst_ref < 1e-11);
        CHECK(worst_f32 > 1e-6); /* f32 rounding that grew over 400 ops */
    }
    rt_result_free(&f32);
    rt_result_free(&ref);
    ir_graph_free(g);
}

/* MatMul over a long inner dim: the reference runs dgemm. */
static void test_reference_matmul(void)
{
    enum { M = 8, K = 8192, N = 4 };
    ir_graph *g = ir_graph_new("mm");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(M, K));
    ir_value *w = rtt_random(g, "w", IR_F32, 5, DIMS(K, N));
    ir_add_output(g, rtt_op(g, IR_OP_MatMul, "y", IN(x, w)));
    rt_result f32 = {0}, ref = {0};
    CHECK(rtt_run(g, 1, &f32));
    dg_context *dg = dg_new();
    CHECK(rt_run_reference(g, f32.inputs, f32.ninputs, NULL, &ref, dg));
    dg_free(dg);
    if (f32.arena && ref.arena) {
        dg_context *cd = dg_new();
        const float *wd = ir_const_data(g, w, cd);
        dg_free(cd);
        double worst_ref = 0, worst_f32 = 0;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double want = 0;
                for (size_t k = 0; k < K; k++)
                    want += f32_at(&f32.inputs[0], i * K + k) * (double)wd[k * N + j];
                worst_ref = fmax(worst_ref, fabs(f64_at(&ref.outputs[0], i * N + j) - want));
                worst_f32 = fmax(worst_f32, fabs(f32_at(&f32.outputs[0], i * N + j) - want));
            }
        CHECK(worst_ref < 1e-10);
        CHECK(worst_f32 > 1e-7);
    }
    rt_result_free(&f32);
    rt_result_free(&ref);
    ir_graph_free(g);
}

/* A Cast still rounds in the reference: f32 -> f16 -> f32 gives the f16 values. */
static void test_reference_cast_rounds(void)
{
    ir_graph *g = ir_graph_new("cast");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(64));
    ir_value *h = rtt_op(g, IR_OP_Cast, "h", IN(x));
    ir_set_attr_int(g, rtt_producer(h), "to", 10);
    ir_value *y = rtt_op(g, IR_OP_Cast, "y", IN(h));
    ir_set_attr_int(g, rtt_producer(y), "to", 1);
    ir_add_output(g, y);
    rt_result f32 = {0}, ref = {0};
    CHECK(rtt_run(g, 2, &f32));
    dg_context *dg = dg_new();
    CHECK(rt_run_reference(g, f32.inputs, f32.ninputs, NULL, &ref, dg));
    dg_free(dg);
    if (f32.arena && ref.arena)
        for (size_t i = 0; i < 64; i++)
            CHECK(f64_at(&ref.outputs[0], i) == f32_at(&f32.outputs[0], i));
    rt_result_free(&f32);
    rt_result_free(&ref);
    ir_graph_free(g);
}

/* f64 storage computes in double (the f64 kernels), and Cast converts to and from it. */
static void test_f64_storage(void)
{
    ir_graph *g = ir_graph_new("f64");
    ir_value *x = rtt_input(g, "x", IR_F64, DIMS(3));
    ir_value *c = rtt_literal(g, "c", IR_F64, (double[]){0.1}, 1, SCALAR);
    ir_value *s = rtt_op(g, IR_OP_Add, "s", IN(x, c));
    ir_value *f = rtt_op(g, IR_OP_Cast, "f", IN(s));
    ir_set_attr_int(g, rtt_producer(f), "to", 1);
    ir_value *back = rtt_op(g, IR_OP_Cast, "back", IN(f));
    ir_set_attr_int(g, rtt_producer(back), "to", 11);
    ir_add_output(g, s);
    ir_add_output(g, back);
    double xs[3] = {1e-9, 1.0, 1e10};
    rt_tensor in = {"x", {.dtype = IR_F64, .rank = 1, .dims = {3}}, xs, sizeof xs};
    rt_result r;
    CHECK(rtt_run_with(g, 0, &in, 1, &r));
    if (r.arena) {
        CHECK_INT(r.outputs[0].type.dtype, IR_F64);
        CHECK_INT(r.outputs[1].type.dtype, IR_F64);
        for (size_t i = 0; i < 3; i++) {
            CHECK(f64_at(&r.outputs[0], i) == xs[i] + 0.1); /* exact in double, not in float */
            CHECK(f64_at(&r.outputs[1], i) == (double)(float)(xs[i] + 0.1));
        }
    }
    rt_result_free(&r);
    ir_graph_free(g);
}

/* The budget is checked before any input is made; a reference run counts its f64 copies. */
static void test_memory_budget(void)
{
    ir_graph *g = ir_graph_new("budget");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(1024));
    ir_add_output(g, rtt_op(g, IR_OP_Relu, "y", IN(x)));
    dg_context *dg = dg_new();
    rt_result r;
    rt_options opts = {.memory_budget = 8192}; /* 4 KiB input + 4 KiB output fit */
    CHECK(ir_validate(g, dg));
    CHECK(rt_run_cpu(g, NULL, 0, &opts, &r, dg));
    rt_result_free(&r);
    CHECK(!rt_run_reference(g, NULL, 0, &opts, &r, dg)); /* + 8 KiB of f64 input, 8 KiB output */
    opts.memory_budget = 8191;
    CHECK(!rt_run_cpu(g, NULL, 0, &opts, &r, dg));
    CHECK_DIAG(dg, "budget: error: the run needs about 20 KiB (12 KiB of inputs and f64 copies, "
                   "8 KiB of intermediates at their peak), more than the memory budget of 8 KiB "
                   "(--memory-budget)\n"
                   "budget: error: the run needs about 8 KiB (4 KiB of inputs, 4 KiB of "
                   "intermediates at their peak), more than the memory budget of 7.999 KiB "
                   "(--memory-budget)\n");
    dg_free(dg);
    ir_graph_free(g);
}

int main(void)
{
    RUN(test_reference_deep_chain);
    RUN(test_reference_matmul);
    RUN(test_reference_cast_rounds);
    RUN(test_f64_storage);
    RUN(test_memory_budget);
    return unit_finish();
}
