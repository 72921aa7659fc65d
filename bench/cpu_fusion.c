/* CPU executor time of fused vs unfused forms of the same computation.
 *
 *     cpu_fusion [--reps N] [--case NAME] [--detail]
 *
 * Each case builds the unfused graph (plain ONNX ops) and the fused graph (one fused node) over
 * the same seeded inputs and weights, on tensors larger than the caches, runs each `reps` times
 * (alternating the two forms) after one warm-up run and reports the medians of the executor's
 * node time (kernels and storage conversions; not input generation or copying results out), as
 * process CPU time and as wall time, with the ratios unfused / fused, and the ratio of the two
 * fastest runs' CPU times. The two forms' outputs are compared; a disagreement fails the run.
 * --detail prints the time per op of each form. */
#include "base/check.h"
#include "ir/ir.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `rank, dims` and `ninputs, inputs` argument pairs from lists */
#define DIMS(...)                                                                                  \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define IN(...)                                                                                    \
    (uint32_t)(sizeof((ir_value *[]){__VA_ARGS__}) / sizeof(ir_value *)),                          \
        (ir_value *[]){__VA_ARGS__}

/* ---- building graphs ---- */

static ir_type type_of(int rank, const int64_t *dims)
{
    ir_type t = {.dtype = IR_F32, .rank = (int8_t)rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

static ir_value *input(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_type t = type_of(rank, dims);
    return ir_add_input(g, name, &t);
}

static ir_value *random_const(ir_graph *g, const char *name, uint64_t seed, double lo, double hi,
                              int rank, const int64_t *dims)
{
    ir_type t = type_of(rank, dims);
    ir_const *c = ir_const_new(g, IR_CONST_RANDOM);
    c->seed = seed;
    c->lo = lo;
    c->hi = hi;
    return ir_add_const(g, name, &t, c);
}

/* A constant holding `data` (count floats). */
static ir_value *data_const(ir_graph *g, const char *name, const float *data, int rank,
                            const int64_t *dims)
{
    ir_type t = type_of(rank, dims);
    ir_value *v = ir_add_const(g, name, &t, ir_const_new(g, IR_CONST_DATA));
    int64_t nbytes;
    FR_CHECK(ir_type_nbytes(&t, &nbytes));
    ir_const_set_data(g, v, data, (size_t)nbytes);
    return v;
}

static ir_value *op(ir_graph *g, ir_op o, const char *out, uint32_t nin, ir_value *const *ins)
{
    ir_node *n = ir_add_node(g, o, nin, &out, 1);
    for (uint32_t i = 0; i < nin; i++)
        ir_set_input(n, i, ins[i]);
    return n->outputs[0];
}

/* ---- the cases ---- */

/* Conv 3x3 (64 -> 64 channels, 112x112) + BatchNormalization + Relu, against FusedConvAct with
 * the batch norm folded into the weights and bias (what `Conv>BN>Relu => FusedConvAct[fold_bn]`
 * produces). */
enum { C = 64, HW = 112 };

static void conv_weights(float *w, float *g, float *beta, float *mean, float *var)
{
    ir_random_fill(1, -0.06, 0.06, IR_F32, w, C * C * 9);
    ir_random_fill(2, 0.5, 1.5, IR_F32, g, C);
    ir_random_fill(3, -0.1, 0.1, IR_F32, beta, C);
    ir_random_fill(4, -0.1, 0.1, IR_F32, mean, C);
    ir_random_fill(5, 0.5, 1.5, IR_F32, var, C);
}

static void conv_attrs(ir_graph *g, ir_node *n)
{
    ir_set_attr_ints(g, n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    ir_set_attr_ints(g, n, "kernel_shape", (int64_t[]){3, 3}, 2);
}

static ir_graph *conv_bn_relu(bool fused)
{
    ir_graph *g = ir_graph_new(fused ? "conv_fused" : "conv_bn_relu");
    ir_value *x = input(g, "x", DIMS(1, C, HW, HW));
    static float w[C * C * 9], gam[C], beta[C], mean[C], var[C];
    conv_weights(w, gam, beta, mean, var);
    ir_value *y;
    if (fused) {
        static float wf[C * C * 9], bf[C];
        for (int m = 0; m < C; m++) {
            float s = gam[m] / sqrtf(var[m] + 1e-5f);
            for (int k = 0; k < C * 9; k++)
                wf[m * C * 9 + k] = w[m * C * 9 + k] * s;
            bf[m] = beta[m] - mean[m] * s;
        }
        ir_value *wv = data_const(g, "w", wf, DIMS(C, C, 3, 3));
        ir_value *bv = data_const(g, "b", bf, DIMS(C));
        y = op(g, IR_OP_FusedConvAct, "y", IN(x, wv, bv));
        conv_attrs(g, y->producer);
        ir_set_attr_string(g, y->producer, "act", "Relu");
    } else {
        ir_value *c = op(g, IR_OP_Conv, "c", IN(x, data_const(g, "w", w, DIMS(C, C, 3, 3))));
        conv_attrs(g, c->producer);
        ir_value *gv = data_const(g, "g", gam, DIMS(C));
        ir_value *bv = data_const(g, "beta", beta, DIMS(C));
        ir_value *mv = data_const(g, "mean", mean, DIMS(C));
        ir_value *vv = data_const(g, "var", var, DIMS(C));
        ir_value *b = op(g, IR_OP_BatchNormalization, "bn", IN(c, gv, bv, mv, vv));
        y = op(g, IR_OP_Relu, "y", IN(b));
    }
    ir_add_output(g, y);
    return g;
}

/* MatMul [512, 768] @ [768, 3072] + bias + erf Gelu (a BERT FFN up-projection), against
 * GemmEpilogue with act=Gelu. */
static ir_graph *matmul_bias_gelu(bool fused)
{
    ir_graph *g = ir_graph_new(fused ? "gemm_fused" : "matmul_bias_gelu");
    ir_value *x = input(g, "x", DIMS(512, 768));
    ir_value *w = random_const(g, "w", 1, -0.036, 0.036, DIMS(768, 3072));
    ir_value *b = random_const(g, "b", 2, -0.02, 0.02, DIMS(3072));
    ir_value *y;
    if (fused) {
        y = op(g, IR_OP_GemmEpilogue, "y", IN(x, w, b));
        ir_set_attr_string(g, y->producer, "act", "Gelu");
    } else {
        ir_value *m = op(g, IR_OP_MatMul, "m", IN(x, w));
        y = op(g, IR_OP_Gelu, "y", IN(op(g, IR_OP_Add, "mb", IN(m, b))));
    }
    ir_add_output(g, y);
    return g;
}

/* Residual Add + LayerNormalization over [32, 512, 768] (48 MiB per tensor), the sum kept for the
 * next residual, against AddLayerNorm exporting the sum. */
static ir_graph *residual_layernorm(bool fused)
{
    ir_graph *g = ir_graph_new(fused ? "add_ln_fused" : "residual_layernorm");
    ir_value *a = input(g, "a", DIMS(32, 512, 768));
    ir_value *b = input(g, "b", DIMS(32, 512, 768));
    ir_value *scale = random_const(g, "scale", 1, 0.9, 1.1, DIMS(768));
    ir_value *bias = random_const(g, "bias", 2, -0.05, 0.05, DIMS(768));
    if (fused) {
        static const char *const names[] = {"y", "sum"};
        ir_node *n = ir_add_node(g, IR_OP_AddLayerNorm, 4, names, 2);
        ir_value *ins[] = {a, b, scale, bias};
        for (uint32_t i = 0; i < 4; i++)
            ir_set_input(n, i, ins[i]);
        ir_add_output(g, n->outputs[0]);
        ir_add_output(g, n->outputs[1]);
    } else {
        ir_value *sum = op(g, IR_OP_Add, "sum", IN(a, b));
        ir_add_output(g, op(g, IR_OP_LayerNormalization, "y", IN(sum, scale, bias)));
        ir_add_output(g, sum);
    }
    return g;
}

/* The scalar constant 1.5. */
static ir_value *one_and_a_half(ir_graph *g)
{
    ir_type t = type_of(0, NULL);
    ir_const *c = ir_const_new(g, IR_CONST_LITERAL);
    c->literal = ar_alloc(g->arena, sizeof(double));
    c->literal[0] = 1.5;
    c->literal_count = 1;
    return ir_add_const(g, "k", &t, c);
}

/* 4-op elementwise chains over [16, 1024, 1024] (64 MiB per tensor) with a broadcast operand,
 * against one ElementwiseChain node:
 *   elementwise_chain       y = sigmoid(x0 + x1) * (x2 - 1.5)   (exp-bound: Sigmoid dominates)
 *   elementwise_chain_cheap y = relu((x0 + x1) * x2 - 1.5)      (memory-bound) */
static ir_graph *chain(bool fused, bool cheap)
{
    ir_graph *g = ir_graph_new(fused ? "chain_fused" : "chain");
    ir_value *x0 = input(g, "x0", DIMS(16, 1024, 1024));
    ir_value *x1 = input(g, "x1", DIMS(1024));
    ir_value *x2 = input(g, "x2", DIMS(16, 1024, 1024));
    ir_value *y;
    if (fused) {
        y = op(g, IR_OP_ElementwiseChain, "y", IN(x0, x1, x2));
        ir_set_attr_string(g, y->producer, "expr",
                           cheap ? "relu(sub(mul(add(x0, x1), x2), 1.5))"
                                 : "mul(sigmoid(add(x0, x1)), sub(x2, 1.5))");
    } else if (cheap) {
        ir_value *m = op(g, IR_OP_Mul, "m", IN(op(g, IR_OP_Add, "a", IN(x0, x1)), x2));
        y = op(g, IR_OP_Relu, "y", IN(op(g, IR_OP_Sub, "d", IN(m, one_and_a_half(g)))));
    } else {
        ir_value *s = op(g, IR_OP_Sigmoid, "s", IN(op(g, IR_OP_Add, "a", IN(x0, x1))));
        y = op(g, IR_OP_Mul, "y", IN(s, op(g, IR_OP_Sub, "d", IN(x2, one_and_a_half(g)))));
    }
    ir_add_output(g, y);
    return g;
}

static ir_graph *elementwise_chain(bool fused) { return chain(fused, false); }
static ir_graph *elementwise_chain_cheap(bool fused) { return chain(fused, true); }

typedef struct {
    const char *name;
    const char *shapes;
    ir_graph *(*build)(bool fused);
} bench_case;

static const bench_case cases[] = {
    {"conv_bn_relu", "x 1x64x112x112, w 64x64x3x3", conv_bn_relu},
    {"matmul_bias_gelu", "512x768 @ 768x3072", matmul_bias_gelu},
    {"residual_layernorm", "2 x 32x512x768", residual_layernorm},
    {"elementwise_chain", "2 x 16x1024x1024 + 1024", elementwise_chain},
    {"elementwise_chain_cheap", "2 x 16x1024x1024 + 1024", elementwise_chain_cheap},
};

/* ---- timing ---- */

typedef struct {
    double wall, cpu;          /* medians, seconds */
    double best_cpu;           /* the fastest run's CPU time */
} timing;

static bool detail; /* --detail: print each form's time per op */

/* The executor's node time of one run; the result is kept in *r. */
static timing run_once(ir_graph *g, rt_result *r)
{
    dg_context *dg = dg_new();
    rt_options opts = {.seed = 42, .time = true};
    if (!rt_run_cpu(g, NULL, 0, &opts, r, dg)) {
        dg_print(dg, stderr);
        exit(2);
    }
    dg_free(dg);
    timing t = {0, 0, 0};
    for (size_t i = 0; i < r->ntimes; i++) {
        t.wall += r->times[i].seconds;
        t.cpu += r->times[i].cpu_seconds;
    }
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Runs of one form: their times, for the medians. */
typedef struct {
    ir_graph *g;
    double *wall, *cpu;
} series;

static void run_into(series *s, int i)
{
    rt_result r;
    timing t = run_once(s->g, &r);
    s->wall[i] = t.wall;
    s->cpu[i] = t.cpu;
    if (detail && i == 0)
        for (size_t k = 0; k < r.ntimes; k++)
            fprintf(stderr, "  %-20s %-20s %10.2f ms cpu\n", s->g->name,
                    ir_op_name(r.times[k].op), 1e3 * r.times[k].cpu_seconds);
    rt_result_free(&r);
}

static timing summarize(series *s, int reps)
{
    timing m = {median(s->wall, reps), median(s->cpu, reps), 0};
    m.best_cpu = s->cpu[0]; /* median() sorted it */
    free(s->wall);
    free(s->cpu);
    return m;
}

/* Times both forms, alternating their runs so that both see the same machine load; one warm-up
 * run of each comes first and its results are kept for the comparison. */
static void time_both(ir_graph *unfused, ir_graph *fused, int reps, timing *tu, timing *tf,
                      rt_result *ru, rt_result *rf)
{
    size_t n = (size_t)reps;
    series su = {unfused, calloc(n, sizeof(double)), calloc(n, sizeof(double))};
    series sf = {fused, calloc(n, sizeof(double)), calloc(n, sizeof(double))};
    FR_CHECK(su.wall && su.cpu && sf.wall && sf.cpu);
    run_once(unfused, ru);
    run_once(fused, rf);
    for (int i = 0; i < reps; i++) {
        run_into(&su, i);
        run_into(&sf, i);
    }
    *tu = summarize(&su, reps);
    *tf = summarize(&sf, reps);
}

/* The largest difference between the two forms' outputs, relative to the reference's scale. */
static double max_rel_diff(const rt_result *a, const rt_result *b)
{
    double worst = 0;
    for (size_t k = 0; k < a->noutputs; k++) {
        size_t n = rt_tensor_numel(&a->outputs[k]);
        for (size_t i = 0; i < n; i++) {
            double x = rt_tensor_get(&a->outputs[k], i), y = rt_tensor_get(&b->outputs[k], i);
            double d = fabs(x - y) / (1e-3 + fabs(y));
            if (!(d <= worst))
                worst = d; /* NaN sticks */
        }
    }
    return worst;
}

static void run_case(const bench_case *c, int reps)
{
    ir_graph *unfused = c->build(false), *fused = c->build(true);
    dg_context *dg = dg_new();
    if (!ir_validate(unfused, dg) || !ir_validate(fused, dg)) {
        dg_print(dg, stderr);
        exit(2);
    }
    dg_free(dg);
    rt_result ru, rf;
    timing tu, tf;
    time_both(unfused, fused, reps, &tu, &tf, &ru, &rf);
    double diff = max_rel_diff(&rf, &ru);
    printf("| %s | %s | %zu | %.1f | %.1f | **%.2fx** | %.2fx | %.1f | %.1f | %.2fx | %.1e |\n",
           c->name, c->shapes, unfused->nodes.len, 1e3 * tu.cpu, 1e3 * tf.cpu, tu.cpu / tf.cpu,
           tu.best_cpu / tf.best_cpu, 1e3 * tu.wall, 1e3 * tf.wall, tu.wall / tf.wall, diff);
    fflush(stdout);
    if (!(diff < 1e-3)) {
        fprintf(stderr, "%s: the fused and unfused forms disagree (%g)\n", c->name, diff);
        exit(1);
    }
    rt_result_free(&ru);
    rt_result_free(&rf);
    ir_graph_free(unfused);
    ir_graph_free(fused);
}

int main(int argc, char **argv)
{
    int reps = 5;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--detail") == 0) {
            detail = true;
        } else {
            fprintf(stderr, "usage: cpu_fusion [--reps N] [--case NAME] [--detail]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    printf("| case | shapes | unfused ops | unfused cpu ms | fused cpu ms | ratio | "
           "best-run ratio | unfused wall ms | fused wall ms | wall ratio | max rel diff |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!only || strcmp(only, cases[i].name) == 0)
            run_case(&cases[i], reps);
    return 0;
}
