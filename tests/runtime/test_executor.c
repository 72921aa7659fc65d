/* The CPU executor: memory planning, 16-bit storage, binding inputs and symbols, shapes computed at
 * run time, generated inputs, timing, and the errors a run reports. */
#include "base/half.h"
#include "ir/ir.h"
#include "runtime/runtime.h"
#include "tests/runtime/rtt.h"
#include "tests/unit.h"

#include <math.h>
#include <string.h>

/* A chain of n unary ops (Neg, Abs, Neg, ...) over an f32[256, 256] input (256 KiB per value). */
static ir_graph *long_chain(int n)
{
    ir_graph *g = ir_graph_new("chain");
    ir_value *v = rtt_input(g, "x", IR_F32, DIMS(256, 256));
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        v = rtt_op(g, i % 2 ? IR_OP_Abs : IR_OP_Neg, name, IN(v));
    }
    ir_add_output(g, v);
    return g;
}

static void test_buffers_are_reused(void)
{
    ir_graph *g = long_chain(20);
    rt_result r;
    CHECK(rtt_run(g, 1, &r));
    size_t value = 256 * 256 * 4;
    CHECK_INT(r.memory.intermediate_bytes, 20 * value);
    /* two buffers alternate along the chain: one being read, one written */
    CHECK_INT(r.memory.peak_bytes, 2 * value);
    CHECK_INT(r.memory.allocations, 2);
    CHECK_INT(r.memory.reuses, 18);
    /* the result is right: neg then abs, ten times, leaves |x| */
    const rt_tensor *x = rt_result_find(&r, "x"), *y = &r.outputs[0];
    for (size_t i = 0; i < rt_tensor_numel(x); i += 997)
        CHECK_NEAR(rt_tensor_get(y, i), fabs(rt_tensor_get(x, i)), 0, 0);
    rt_result_free(&r);
    ir_graph_free(g);
}

/* A value read by a later node keeps its buffer until then; a diamond needs three buffers. */
static void test_buffers_live_until_last_use(void)
{
    ir_graph *g = ir_graph_new("diamond");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(64, 64));
    ir_value *a = rtt_op(g, IR_OP_Relu, "a", IN(x));
    ir_value *b = rtt_op(g, IR_OP_Neg, "b", IN(a));
    ir_value *c = rtt_op(g, IR_OP_Exp, "c", IN(b));
    ir_value *d = rtt_op(g, IR_OP_Add, "d", IN(a, c)); /* a is still live here */
    ir_value *e = rtt_op(g, IR_OP_Neg, "e", IN(d));
    ir_add_output(g, e);
    rt_result r;
    CHECK(rtt_run(g, 3, &r));
    const rt_tensor *xs = rt_result_find(&r, "x");
    for (size_t i = 0; i < rt_tensor_numel(xs); i += 101) {
        double av = fmax(rt_tensor_get(xs, i), 0);
        CHECK_NEAR(rt_tensor_get(&r.outputs[0], i), -(av + exp(-av)), 1e-6, 1e-6);
    }
    CHECK_INT(r.memory.peak_bytes, 3 * 64 * 64 * 4);
    rt_result_free(&r);
    ir_graph_free(g);
}

/* Reshape, Squeeze and Identity share their input's buffer instead of copying it. */
static void test_views_share_buffers(void)
{
    ir_graph *g = ir_graph_new("views");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(4, 1, 6));
    ir_value *a = rtt_op(g, IR_OP_Relu, "a", IN(x));
    ir_value *b = rtt_op(g, IR_OP_Reshape, "b", IN(a, rtt_ints(g, "shape", (double[]){2, 12}, 2)));
    ir_value *c = rtt_op(g, IR_OP_Identity, "c", IN(b));
    ir_value *d = rtt_op(g, IR_OP_Neg, "d", IN(c));
    ir_add_output(g, d);
    ir_add_output(g, b); /* an output that is a view of a released chain */
    rt_result r;
    CHECK(rtt_run(g, 2, &r));
    CHECK_INT(r.memory.allocations, 2); /* a (shared by b and c) and d */
    CHECK_INT(r.memory.intermediate_bytes, 2 * 24 * 4);
    CHECK_INT(r.outputs[1].type.rank, 2);
    CHECK_INT(r.outputs[1].type.dims[1], 12);
    const rt_tensor *xs = rt_result_find(&r, "x");
    for (size_t i = 0; i < 24; i++) {
        CHECK_NEAR(rt_tensor_get(&r.outputs[1], i), fmax(rt_tensor_get(xs, i), 0), 0, 0);
        CHECK_NEAR(rt_tensor_get(&r.outputs[0], i), -fmax(rt_tensor_get(xs, i), 0), 0, 0);
    }
    rt_result_free(&r);
    ir_graph_free(g);
}

/* f16 values round-trip bit for bit, and each op's result is rounded to f16 once. */
static void test_f16_storage(void)
{
    ir_graph *g = ir_graph_new("half");
    ir_value *x = rtt_input(g, "x", IR_F16, DIMS(3));
    ir_value *y = rtt_input(g, "y", IR_F16, DIMS(3));
    ir_value *s = rtt_op(g, IR_OP_Add, "s", IN(x, y));
    ir_value *copy = rtt_op(g, IR_OP_Neg, "n", IN(rtt_op(g, IR_OP_Neg, "m", IN(x))));
    ir_add_output(g, s);
    ir_add_output(g, copy);
    /* 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in f16: it rounds to even, 1 */
    uint16_t xs[3] = {f32_to_f16(1.0f), f32_to_f16(65504.0f), 0x0001 /* smallest subnormal */};
    uint16_t ys[3] = {f32_to_f16(0.00048828125f), f32_to_f16(65504.0f), 0x0001};
    rt_tensor in[2] = {
        {"x", {.dtype = IR_F16, .rank = 1, .dims = {3}}, xs, sizeof xs},
        {"y", {.dtype = IR_F16, .rank = 1, .dims = {3}}, ys, sizeof ys},
    };
    rt_result r;
    CHECK(rtt_run_with(g, 0, in, 2, &r));
    const uint16_t *sum = r.outputs[0].data, *round_trip = r.outputs[1].data;
    CHECK_INT(r.outputs[0].type.dtype, IR_F16);
    CHECK_INT(sum[0], f32_to_f16(1.0f));
    CHECK_INT(sum[1], 0x7c00); /* 131008 overflows f16: +inf */
    CHECK_INT(sum[2], 0x0002);
    CHECK(memcmp(round_trip, xs, sizeof xs) == 0);
    rt_result_free(&r);
    ir_graph_free(g);
}

/* bf16 constants and inputs are widened, computed in f32 and rounded back. */
static void test_bf16_storage(void)
{
    ir_graph *g = ir_graph_new("bf");
    ir_value *x = rtt_input(g, "x", IR_BF16, DIMS(2));
    ir_value *c = rtt_literal(g, "c", IR_BF16, (double[]){3, 0.5}, 2, DIMS(2));
    ir_add_output(g, rtt_op(g, IR_OP_Mul, "y", IN(x, c)));
    uint16_t xs[2] = {f32_to_bf16(1.5f), f32_to_bf16(-256.0f)};
    rt_tensor in = {"x", {.dtype = IR_BF16, .rank = 1, .dims = {2}}, xs, sizeof xs};
    rt_result r;
    CHECK(rtt_run_with(g, 0, &in, 1, &r));
    CHECK_NEAR(rt_tensor_get(&r.outputs[0], 0), 4.5, 0, 0);
    CHECK_NEAR(rt_tensor_get(&r.outputs[0], 1), -128, 0, 0);
    rt_result_free(&r);
    ir_graph_free(g);
}

/* Symbolic dims bind from the given tensors; outputs get the bound shape. */
static void test_symbols_bind(void)
{
    ir_graph *g = ir_graph_new("sym");
    int64_t n = ir_symbol(g, "N", 1);
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(n, 4));
    ir_value *w = rtt_random(g, "w", IR_F32, 5, DIMS(4, 3));
    ir_value *b = rtt_input(g, "b", IR_F32, DIMS(n, 3));
    ir_add_output(g, rtt_op(g, IR_OP_Add, "y", IN(rtt_op(g, IR_OP_MatMul, "m", IN(x, w)), b)));
    float xs[5 * 4] = {0};
    xs[0] = 1;
    rt_tensor in = {"x", {.dtype = IR_F32, .rank = 2, .dims = {5, 4}}, xs, sizeof xs};
    rt_result r;
    CHECK(rtt_run_with(g, 7, &in, 1, &r)); /* b is generated with the bound N = 5 */
    CHECK_INT(r.outputs[0].type.dims[0], 5);
    CHECK_INT(r.outputs[0].type.dims[1], 3);
    CHECK_INT(rt_result_find(&r, "b")->type.dims[0], 5);
    /* the graph keeps its symbolic types after the run */
    CHECK(ir_dim_is_symbol(g->outputs.items[0]->type->dims[0]));
    CHECK(ir_dim_is_symbol(x->type->dims[0]));
    rt_result_free(&r);

    /* N bound by nothing: b cannot be generated */
    char buf[512] = "";
    dg_context *dg = dg_new();
    CHECK(!rt_run_cpu(g, NULL, 0, NULL, &r, dg));
    FILE *f = fmemopen(buf, sizeof buf, "w");
    dg_print(dg, f);
    fclose(f);
    CHECK_STR(buf, "sym: error: input 'x' has dim 0 of unknown size (f32[N,4]): give the input "
                   "(--inputs, --input) or the size (--dim NAME=N)\n");
    dg_free(dg);

    /* two inputs that disagree on N */
    float bs[2 * 3] = {0};
    rt_tensor both[2] = {in, {"b", {.dtype = IR_F32, .rank = 2, .dims = {2, 3}}, bs, sizeof bs}};
    dg = dg_new();
    CHECK(!rt_run_cpu(g, both, 2, NULL, &r, dg));
    f = fmemopen(buf, sizeof buf, "w");
    dg_print(dg, f);
    fclose(f);
    CHECK_STR(buf, "sym: error: input 'b': N is 2 here but 5 in an earlier input\n");
    dg_free(dg);
    ir_graph_free(g);
}

static void expect_error(ir_graph *g, const rt_tensor *in, size_t n, const char *message)
{
    char buf[512] = "";
    dg_context *dg = dg_new();
    rt_result r;
    bool ok = ir_validate(g, dg);
    CHECK(ok);
    CHECK(!rt_run_cpu(g, in, n, NULL, &r, dg));
    FILE *f = fmemopen(buf, sizeof buf, "w");
    dg_print(dg, f);
    fclose(f);
    if (!strstr(buf, message))
        fprintf(stderr, "expected \"%s\" in: %s", message, buf);
    CHECK(strstr(buf, message) != NULL);
    dg_free(dg);
}

static void test_input_mismatches(void)
{
    ir_graph *g = ir_graph_new("in");
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(2, 3));
    ir_add_output(g, rtt_op(g, IR_OP_Relu, "y", IN(x)));
    float data[6] = {0};
    rt_tensor wrong_dtype = {"x", {.dtype = IR_F16, .rank = 2, .dims = {2, 3}}, data, 12};
    expect_error(g, &wrong_dtype, 1, "input 'x' is f32 in the graph but f16 in the tensor");
    rt_tensor wrong_rank = {"x", {.dtype = IR_F32, .rank = 1, .dims = {6}}, data, 24};
    expect_error(g, &wrong_rank, 1, "input 'x' has rank 2 in the graph but 1 in the tensor");
    rt_tensor wrong_dim = {"x", {.dtype = IR_F32, .rank = 2, .dims = {3, 2}}, data, 24};
    expect_error(g, &wrong_dim, 1, "input 'x': dim 0 is 2 in the graph but 3 in the tensor");
    rt_tensor short_data = {"x", {.dtype = IR_F32, .rank = 2, .dims = {2, 3}}, data, 20};
    expect_error(g, &short_data, 1, "input 'x': 20 bytes do not hold a f32[2,3] tensor");
    ir_graph_free(g);
}

/* A kernel's run-time error (an index out of range) fails the run, located at the node. */
static void test_kernel_error(void)
{
    ir_graph *g = ir_graph_new("gather");
    ir_value *data = rtt_input(g, "data", IR_F32, DIMS(4, 2));
    ir_value *idx = rtt_input(g, "idx", IR_I64, DIMS(2));
    ir_add_output(g, rtt_op(g, IR_OP_Gather, "y", IN(data, idx)));
    int64_t bad[2] = {1, 7};
    rt_tensor in = {"idx", {.dtype = IR_I64, .rank = 1, .dims = {2}}, bad, sizeof bad};
    expect_error(g, &in, 1, "gather: error: node y: Gather: index 7 is out of range");
    ir_graph_free(g);
}

/* Reshape to the shape of another tensor, computed at run time by Shape. */
static void test_shape_computed_at_run_time(void)
{
    ir_graph *g = ir_graph_new("dyn");
    int64_t n = ir_symbol(g, "N", 1);
    ir_value *x = rtt_input(g, "x", IR_F32, DIMS(n, 6));
    ir_value *t = rtt_input(g, "t", IR_F32, DIMS(3, n, 2));
    ir_value *shape = rtt_op(g, IR_OP_Shape, "shape", IN(t));
    ir_value *y = rtt_op(g, IR_OP_Reshape, "y", IN(rtt_op(g, IR_OP_Relu, "r", IN(x)), shape));
    ir_add_output(g, y);
    float xs[4 * 6], ts[3 * 4 * 2] = {0};
    for (int i = 0; i < 24; i++)
        xs[i] = (float)(i - 12);
    rt_tensor in[2] = {{"x", {.dtype = IR_F32, .rank = 2, .dims = {4, 6}}, xs, sizeof xs},
                       {"t", {.dtype = IR_F32, .rank = 3, .dims = {3, 4, 2}}, ts, sizeof ts}};
    rt_result r;
    CHECK(rtt_run_with(g, 0, in, 2, &r));
    CHECK_INT(r.outputs[0].type.rank, 3);
    CHECK_INT(r.outputs[0].type.dims[0], 3);
    CHECK_INT(r.outputs[0].type.dims[1], 4);
    CHECK_INT(r.outputs[0].type.dims[2], 2);
    CHECK_NEAR(rt_tensor_get(&r.outputs[0], 23), 11, 0, 0);
    CHECK_NEAR(rt_tensor_get(&r.outputs[0], 0), 0, 0, 0);
    rt_result_free(&r);
    ir_graph_free(g);
}

/* Generated inputs depend only on the seed and the input's position. */
static void test_generated_inputs(void)
{
    ir_graph *g = ir_graph_new("gen");
    ir_value *a = rtt_input(g, "a", IR_F32, DIMS(100));
    ir_value *i = rtt_input(g, "i", IR_I64, DIMS(3));
    ir_value *q = rtt_input(g, "q", IR_I8, DIMS(200));
    ir_add_output(g, a);
    ir_add_output(g, i);
    ir_add_output(g, q);
    rt_result r1, r2, r3;
    CHECK(rtt_run(g, 5, &r1));
    CHECK(rtt_run(g, 5, &r2));
    CHECK(rtt_run(g, 6, &r3));
    CHECK(memcmp(r1.outputs[0].data, r2.outputs[0].data, 400) == 0);
    CHECK(memcmp(r1.outputs[0].data, r3.outputs[0].data, 400) != 0);
    double lo = 1, hi = -1, qlo = 0, qhi = 0;
    for (size_t k = 0; k < 100; k++) {
        lo = fmin(lo, rt_tensor_get(&r1.outputs[0], k));
        hi = fmax(hi, rt_tensor_get(&r1.outputs[0], k));
    }
    for (size_t k = 0; k < 200; k++) {
        qlo = fmin(qlo, rt_tensor_get(&r1.outputs[2], k));
        qhi = fmax(qhi, rt_tensor_get(&r1.outputs[2], k));
    }
    CHECK(lo >= -1 && lo < -0.8 && hi < 1 && hi > 0.8);
    CHECK(qlo < -100 && qhi > 100);
    for (size_t k = 0; k < 3; k++)
        CHECK_NEAR(rt_tensor_get(&r1.outputs[1], k), 0, 0, 0);
    /* the same values as ir_random_fill(seed + index) */
    float want[100];
    ir_random_fill(5 + 0, -1, 1, IR_F32, want, 100);
    CHECK(memcmp(want, r1.outputs[0].data, sizeof want) == 0);
    rt_result_free(&r1);
    rt_result_free(&r2);
    rt_result_free(&r3);
    ir_graph_free(g);
}

static void test_timing(void)
{
    ir_graph *g = long_chain(6);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    rt_options opts = {.seed = 1, .time = true};
    rt_result r;
    CHECK(rt_run_cpu(g, NULL, 0, &opts, &r, dg));
    CHECK_INT(r.ntimes, 2);
    uint64_t calls = 0;
    for (size_t i = 0; i < r.ntimes; i++) {
        CHECK(r.times[i].op == IR_OP_Abs || r.times[i].op == IR_OP_Neg);
        CHECK(r.times[i].seconds >= 0);
        calls += r.times[i].calls;
    }
    CHECK_INT(calls, 6);
    if (r.ntimes == 2)
        CHECK(r.times[0].seconds >= r.times[1].seconds);
    rt_result_free(&r);
    dg_free(dg);
    ir_graph_free(g);
}

/* Runs leave the graph as they found it, so the same graph runs again. */
static void test_graph_unchanged(void)
{
    ir_graph *g = long_chain(3);
    dg_context *dg = dg_new();
    CHECK(ir_validate(g, dg));
    ir_type before = *g->outputs.items[0]->type;
    rt_result r1, r2;
    CHECK(rt_run_cpu(g, NULL, 0, NULL, &r1, dg));
    CHECK(ir_type_equal(&before, g->outputs.items[0]->type));
    CHECK(rt_run_cpu(g, NULL, 0, NULL, &r2, dg));
    CHECK(memcmp(r1.outputs[0].data, r2.outputs[0].data, r1.outputs[0].nbytes) == 0);
    rt_result_free(&r1);
    rt_result_free(&r2);
    dg_free(dg);
    ir_graph_free(g);
}

int main(void)
{
    RUN(test_buffers_are_reused);
    RUN(test_buffers_live_until_last_use);
    RUN(test_views_share_buffers);
    RUN(test_f16_storage);
    RUN(test_bf16_storage);
    RUN(test_symbols_bind);
    RUN(test_input_mismatches);
    RUN(test_kernel_error);
    RUN(test_shape_computed_at_run_time);
    RUN(test_generated_inputs);
    RUN(test_timing);
    RUN(test_graph_unchanged);
    return unit_finish();
}
