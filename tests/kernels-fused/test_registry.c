/* The kernel registry: one row per fused op agreeing with the catalog, backends answered with
 * reasons, and the CPU supports checks refusing what the kernels cannot run. */
#include "ir/ir.h"
#include "kernels/kernels.h"
#ifdef FR_HAVE_CUDA
#include "kernels/cuda/cuda_registry.h"
#endif
#include "tests/unit.h"

#include <string.h>

static size_t ports(const kn_port *p)
{
    size_t n = 0;
    while (n < KN_MAX_PORTS && p[n].name)
        n++;
    return n;
}

/* Each row names as many operands as the catalog allows, the required ones first. */
static void test_rows_match_catalog(void)
{
    size_t count;
    const kn_fused_entry *rows = kn_fused_entries(&count);
    size_t fused = 0;
    for (unsigned op = 0; op < IR_OP_COUNT; op++)
        fused += ir_op_info_get((ir_op)op)->cls == IR_CLASS_FUSED;
    CHECK_INT(count, fused);
    for (size_t i = 0; i < count; i++) {
        const kn_fused_entry *e = &rows[i];
        const ir_op_info *info = ir_op_info_get(e->op);
        CHECK(kn_fused_entry_get(e->op) == e);
        CHECK(e->cpu.run == kn_cpu_get(e->op));
        CHECK(e->cpu.supports != NULL);
#ifdef FR_HAVE_CUDA /* the CUDA backend registers a kernel for every fused op */
        CHECK(e->cuda.supports != NULL);
#else
        CHECK(e->cuda.supports == NULL);
#endif
        /* A CUDA column that claims the op has its name, its check and its launch, and the
         * executor's lookup finds that launch. */
        CHECK((e->cuda.kernel != NULL) == (e->cuda.supports != NULL));
        CHECK((e->cuda.run != NULL) == (e->cuda.supports != NULL));
        CHECK(kn_cuda_get(e->op) == e->cuda.run);
        size_t nin = ports(e->inputs), nout = ports(e->outputs);
        if (e->variadic_inputs) {
            CHECK_INT(info->max_inputs, IR_VARIADIC);
            CHECK_INT(nin, 1);
        } else {
            CHECK_INT(nin, info->max_inputs);
            for (size_t k = 0; k < nin; k++)
                CHECK(e->inputs[k].optional == (k >= info->min_inputs));
        }
        CHECK_INT(nout, info->max_outputs);
        for (size_t k = 0; k < nout; k++)
            CHECK(e->outputs[k].optional == (k >= info->min_outputs));
    }
    CHECK(kn_fused_entry_get(IR_OP_Conv) == NULL);
}

static ir_node *node(ir_graph *g, ir_op op, ir_dtype dt, int rank, uint32_t ninputs)
{
    static int counter;
    char name[32];
    snprintf(name, sizeof name, "y%d", counter++);
    const char *out = name;
    ir_node *n = ir_add_node(g, op, ninputs, &out, 1);
    ir_type t = {.dtype = dt, .rank = (int8_t)rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = 4;
    for (uint32_t i = 0; i < ninputs; i++) {
        char in[32];
        snprintf(in, sizeof in, "x%d_%u", counter, i);
        ir_set_input(n, i, ir_add_input(g, in, &t));
    }
    return n;
}

static void test_supports(void)
{
    ir_graph *g = ir_graph_new("t");
    char why[KN_WHY_SIZE];

    ir_node *conv = node(g, IR_OP_FusedConvAct, IR_F16, 4, 2);
    CHECK(kn_supports(g, conv, KN_BACKEND_CPU, why));
#ifdef FR_HAVE_CUDA
    CHECK(kn_supports(g, conv, KN_BACKEND_CUDA, why));
#else
    CHECK(!kn_supports(g, conv, KN_BACKEND_CUDA, why));
    CHECK_STR(why, "no cuda kernel is registered for FusedConvAct");
#endif

    ir_node *conv6 = node(g, IR_OP_FusedConvAct, IR_F32, 6, 2);
    CHECK(!kn_supports(g, conv6, KN_BACKEND_CPU, why));
    CHECK_STR(why, "the CPU conv handles 1 to 3 spatial dims, not 4");

    ir_node *gemm = node(g, IR_OP_GemmEpilogue, IR_I32, 2, 2);
    CHECK(!kn_supports(g, gemm, KN_BACKEND_CPU, why));
    CHECK_STR(why, "input 0 is i32; the CPU kernel takes f32, f16 or bf16");

    ir_node *gemm3 = node(g, IR_OP_GemmEpilogue, IR_F32, 3, 2); /* B batched (FusedMatMul) */
    CHECK(kn_supports(g, gemm3, KN_BACKEND_CPU, why));
    ir_node *gemm1 = node(g, IR_OP_GemmEpilogue, IR_F32, 1, 2); /* A may be a vector, B not */
    CHECK(!kn_supports(g, gemm1, KN_BACKEND_CPU, why));
    CHECK_STR(why, "B has rank 1; the kernel takes rank 2 or more");
    ir_node *gemm0 = node(g, IR_OP_GemmEpilogue, IR_F32, 0, 2);
    CHECK(!kn_supports(g, gemm0, KN_BACKEND_CPU, why));
    CHECK_STR(why, "A has rank 0; the kernel takes rank 1 or more");

    ir_node *chain = node(g, IR_OP_ElementwiseChain, IR_F32, 1, 33);
    CHECK(!kn_supports(g, chain, KN_BACKEND_CPU, why));
    CHECK_STR(why, "the CPU kernel takes at most 32 inputs, not 33");

    ir_node *q = node(g, IR_OP_QGemm, IR_I8, 2, 4);
    ir_type wide = *q->inputs[0]->type;
    wide.dims[1] = (int64_t)1 << 18;
    ir_value_set_type(g, q->inputs[0], &wide);
    CHECK(!kn_supports(g, q, KN_BACKEND_CPU, why));
    CHECK_STR(why, "K = 262144 could overflow the int32 accumulator (at most 131072)");

    /* plain ops all run on the CPU and nowhere else yet */
    ir_node *relu = node(g, IR_OP_Relu, IR_F32, 2, 1);
    CHECK(kn_supports(g, relu, KN_BACKEND_CPU, why));
    CHECK(!kn_supports(g, relu, KN_BACKEND_CUDA, why));
    CHECK_STR(why, "no cuda kernel is registered for Relu");
    ir_graph_free(g);
}

static void test_names(void)
{
    CHECK_STR(kn_kernel_name(IR_OP_Attention, KN_BACKEND_CPU), "cpu.Attention");
#ifdef FR_HAVE_CUDA
    CHECK_STR(kn_kernel_name(IR_OP_Attention, KN_BACKEND_CUDA), "cuda.Attention");
#else
    CHECK(kn_kernel_name(IR_OP_Attention, KN_BACKEND_CUDA) == NULL);
#endif
    CHECK_STR(kn_kernel_name(IR_OP_Conv, KN_BACKEND_CPU), "Conv");
    kn_backend b;
    CHECK(kn_backend_parse("cuda", &b) && b == KN_BACKEND_CUDA);
    CHECK(!kn_backend_parse("tpu", &b));
    CHECK_STR(kn_backend_name(KN_BACKEND_CPU), "cpu");
}

/* The plain ops of the CUDA column: every op the CUDA supports check claims (anything but "<Op>
 * has no CUDA kernel" on a node of unknown types) has a launch, and no other op has one; nothing
 * has one without the CUDA backend. */
static void test_cuda_plain_ops(void)
{
#ifdef FR_HAVE_CUDA
    ir_graph *g = ir_graph_new("t");
    ir_type unknown = {.dtype = IR_DTYPE_UNKNOWN, .rank = -1};
    size_t claimed = 0;
#endif
    for (unsigned i = 0; i < IR_OP_COUNT; i++) {
        ir_op op = (ir_op)i;
        const ir_op_info *info = ir_op_info_get(op);
        if (info->cls == IR_CLASS_FUSED)
            continue;
#ifdef FR_HAVE_CUDA
        uint32_t nin = info->max_inputs == IR_VARIADIC ? 2 : info->max_inputs;
        uint32_t nout = info->min_outputs ? info->min_outputs : 1; /* MaxPool without Indices */
        const char *outs[8];
        char names[8][32];
        for (uint32_t k = 0; k < nout && k < 8; k++) {
            snprintf(names[k], sizeof names[k], "%s_y%u", ir_op_name(op), k);
            outs[k] = names[k];
        }
        ir_node *n = ir_add_node(g, op, nin, outs, nout < 8 ? nout : 8);
        for (uint32_t k = 0; k < nin; k++) {
            char in[48];
            snprintf(in, sizeof in, "%s_x%u", ir_op_name(op), k);
            ir_set_input(n, k, ir_add_input(g, in, &unknown));
        }
        char why[KN_WHY_SIZE] = "", none[KN_WHY_SIZE];
        snprintf(none, sizeof none, "%s has no CUDA kernel", ir_op_name(op));
        bool claims = kn_cuda_onnx_supports(g, n, why) || strcmp(why, none) != 0;
        claimed += claims;
        if (claims != (kn_cuda_get(op) != NULL))
            fprintf(stderr, "%s: the supports check %s it, the CUDA column has %s launch\n",
                    ir_op_name(op), claims ? "claims" : "refuses", kn_cuda_get(op) ? "a" : "no");
        CHECK(claims == (kn_cuda_get(op) != NULL));
#else
        CHECK(kn_cuda_get(op) == NULL);
#endif
    }
#ifdef FR_HAVE_CUDA
    CHECK(claimed > 100); /* the elementwise table alone has about 50 */
    CHECK(kn_cuda_get(IR_OP_Relu) != NULL);
    CHECK(kn_cuda_get(IR_OP_Transpose) != NULL);
    ir_graph_free(g);
#endif
    CHECK(kn_cuda_get(IR_OP_Reshape) == NULL); /* a view: no launch on either build */
}

int main(void)
{
    RUN(test_rows_match_catalog);
    RUN(test_supports);
    RUN(test_names);
    RUN(test_cuda_plain_ops);
    return unit_finish();
}
