/* Type inference of every ONNX op in ir/ops.def, on tiny graphs built with the ir.h builders, and
 * the attribute schemas of the catalog.
 *
 * Types are written as the IR prints them: "f32[1,64,N,?] NCHW" (dtype, dims with symbols and `?`,
 * `[*]` for an unknown rank, then the layout). Every op must be exercised by some test: the last
 * test fails for an op of ops.def that no test ran. */
#include "ir/ir.h"

#include "tests/unit.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

static ir_graph *G;
static dg_context *DG;
static int next_name;

/* The ops of ops.def (the ONNX part of the catalog), and which ones a test ran. */
static const ir_op onnx_ops[] = {
#define IR_OP(name, ...) IR_OP_##name,
#include "ir/ops.def"
#undef IR_OP
};
static bool covered[IR_OP_COUNT];

/* ---- building ---- */

static void begin(void)
{
    G = ir_graph_new("t");
    DG = dg_new();
}

static void end(void)
{
    ir_graph_free(G);
    dg_free(DG);
}

#define TEST(fn)                                                                                   \
    do {                                                                                           \
        begin();                                                                                   \
        RUN(fn);                                                                                   \
        end();                                                                                     \
    } while (0)

/* Parses the printed form of a type ("f32[N,3,?] NCHW", "i64[]", "f32[*]"). */
static ir_type parse_type(const char *spec)
{
    ir_type t = {.rank = 0};
    const char *open = strchr(spec, '[');
    if (!open || !ir_dtype_parse(spec, (size_t)(open - spec), &t.dtype)) {
        fprintf(stderr, "bad type spec %s\n", spec);
        abort();
    }
    const char *p = open + 1;
    if (*p == '*') {
        t.rank = -1;
        p += 2;
    } else {
        while (*p != ']') {
            size_t len = strcspn(p, ",]");
            int64_t d;
            if (*p == '?')
                d = IR_DIM_UNKNOWN;
            else if (*p >= '0' && *p <= '9')
                d = strtoll(p, NULL, 10);
            else
                d = ir_symbol(G, p, len);
            t.dims[t.rank++] = d;
            p += len + (p[len] == ',');
        }
        p++;
    }
    if (*p == ' ') {
        ir_layout layout;
        if (!ir_layout_parse(p + 1, strlen(p + 1), &layout))
            abort();
        t.layout = (uint8_t)layout;
    }
    return t;
}

static ir_value *input(const char *spec)
{
    ir_type t = parse_type(spec);
    char name[32];
    snprintf(name, sizeof name, "x%d", next_name++);
    return ir_add_input(G, name, &t);
}

/* A literal constant of the given type holding `count` values. */
static ir_value *literal(const char *spec, size_t count, const double *vals)
{
    ir_type t = parse_type(spec);
    ir_const *c = ir_const_new(G, IR_CONST_LITERAL);
    c->literal = ar_alloc_array(G->arena, count, sizeof *c->literal);
    if (count)
        memcpy(c->literal, vals, count * sizeof *vals);
    c->literal_count = count;
    char name[32];
    snprintf(name, sizeof name, "c%d", next_name++);
    return ir_add_const(G, name, &t, c);
}

/* An i64 vector constant holding exactly the given values: INTS(1, -1, INT64_MAX). */
#define INTS(...) ints_const((const long long[]){__VA_ARGS__}, COUNT(__VA_ARGS__))
#define COUNT(...) (sizeof((const long long[]){__VA_ARGS__}) / sizeof(long long))
static ir_value *ints_const(const long long *vals, size_t count)
{
    char spec[32];
    snprintf(spec, sizeof spec, "i64[%zu]", count);
    ir_type t = parse_type(spec);
    char name[32];
    snprintf(name, sizeof name, "c%d", next_name++);
    ir_value *v = ir_add_const(G, name, &t, ir_const_new(G, IR_CONST_DATA));
    int64_t data[16];
    for (size_t k = 0; k < count; k++)
        data[k] = vals[k];
    ir_const_set_data(G, v, data, count * sizeof data[0]);
    return v;
}

static ir_value *scalar(const char *dtype, double v)
{
    char spec[32];
    snprintf(spec, sizeof spec, "%s[]", dtype);
    return literal(spec, 1, &v);
}

/* A node with `nout` outputs and the given inputs (NULL: omitted). */
static ir_node *node(ir_op op, uint32_t nout, uint32_t nin, ...)
{
    const char *names[8];
    char buf[8][16];
    for (uint32_t k = 0; k < nout; k++) {
        snprintf(buf[k], sizeof buf[k], "y%d", next_name++);
        names[k] = buf[k];
    }
    ir_node *n = ir_add_node(G, op, nin, names, nout);
    va_list ap;
    va_start(ap, nin);
    for (uint32_t i = 0; i < nin; i++)
        ir_set_input(n, i, va_arg(ap, ir_value *));
    va_end(ap);
    return n;
}

#define N1(op, ...) node(IR_OP_##op, 1, FR_NARGS(__VA_ARGS__), __VA_ARGS__)
#define FR_NARGS(...) FR_NARGS_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define FR_NARGS_(a, b, c, d, e, f, n, ...) n

/* An INTS attribute: SET_INTS(n, "pads", 1, 1, 1, 1); CLEAR_INTS(n, "pads") sets an empty list. */
#define SET_INTS(n, name, ...) set_ints(n, name, (const long long[]){__VA_ARGS__}, COUNT(__VA_ARGS__))
#define CLEAR_INTS(n, name) set_ints(n, name, NULL, 0)
static void set_ints(ir_node *n, const char *name, const long long *vals, size_t count)
{
    int64_t copy[16];
    for (size_t k = 0; k < count; k++)
        copy[k] = vals[k];
    ir_set_attr_ints(G, n, name, copy, (uint32_t)count);
}

/* ---- checking ---- */

static bool infer(ir_node *n)
{
    covered[n->op] = true;
    return ir_op_info_get(n->op)->infer(G, n, DG);
}

/* The printed diagnostics, as one malloc'd string. */
static char *diagnostics(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    dg_print(DG, f);
    fclose(f);
    return text;
}

/* Inference of n succeeds and output k has the type `spec`. */
#define EXPECT_TYPE(n, k, spec) expect_type(__LINE__, n, k, spec)
static void expect_type(int line, ir_node *n, uint32_t k, const char *spec)
{
    if (!infer(n)) {
        char *text = diagnostics();
        fprintf(stderr, "%s:%d: %s failed: %s", __FILE__, line, ir_op_name(n->op), text);
        free(text);
        unit_current_failed = 1;
        return;
    }
    char buf[256];
    ir_type_format(G, n->outputs[k]->type, buf, sizeof buf);
    if (strcmp(buf, spec) != 0) {
        fprintf(stderr, "%s:%d: %s output %u is %s, expected %s\n", __FILE__, line,
                ir_op_name(n->op), k, buf, spec);
        unit_current_failed = 1;
    }
}

/* Inference of n fails with a message containing `part`. */
#define EXPECT_ERROR(n, part) expect_error(__LINE__, n, part)
static void expect_error(int line, ir_node *n, const char *part)
{
    bool ok = infer(n);
    char *text = diagnostics();
    if (ok || !dg_has_errors(DG) || !strstr(text, part)) {
        fprintf(stderr, "%s:%d: %s: expected an error containing \"%s\", got %s: %s\n", __FILE__,
                line, ir_op_name(n->op), part, ok ? "success" : "failure", text);
        unit_current_failed = 1;
    }
    free(text);
    dg_free(DG);
    DG = dg_new();
}

/* ---- elementwise ---- */

static void test_unary(void)
{
    static const ir_op float_ops[] = {
        IR_OP_Relu,  IR_OP_LeakyRelu, IR_OP_Sigmoid, IR_OP_Tanh,       IR_OP_HardSigmoid,
        IR_OP_HardSwish, IR_OP_Gelu,  IR_OP_Elu,     IR_OP_Softplus,   IR_OP_Erf,
        IR_OP_Exp,   IR_OP_Log,       IR_OP_Neg,     IR_OP_Abs,        IR_OP_Sqrt,
        IR_OP_Reciprocal, IR_OP_Floor, IR_OP_Ceil,   IR_OP_Sin,        IR_OP_Cos,
        IR_OP_Identity,
    };
    ir_value *x = input("f16[N,64,?,7] NCHW");
    for (size_t k = 0; k < sizeof float_ops / sizeof float_ops[0]; k++)
        EXPECT_TYPE(node(float_ops[k], 1, 1, x), 0, "f16[N,64,?,7] NCHW");
    EXPECT_TYPE(N1(Not, input("bool[3]")), 0, "bool[3]");
    EXPECT_TYPE(N1(Relu, input("i8[2,2]")), 0, "i8[2,2]");
    EXPECT_TYPE(N1(Abs, input("u8[2]")), 0, "u8[2]");
    EXPECT_TYPE(N1(Sigmoid, input("f32[*]")), 0, "f32[*]");
    EXPECT_ERROR(N1(Sigmoid, input("i64[2]")), "Sigmoid: input 'x");
    EXPECT_ERROR(N1(Exp, input("i32[2]")), "is i32; expected f32, f16, bf16 or f64");
    EXPECT_ERROR(N1(Relu, input("bool[2]")), "expected f32, f16, bf16, i8, i32, i64, f64 or i16");
    EXPECT_ERROR(N1(Not, input("f32[2]")), "expected bool");
    EXPECT_ERROR(N1(Neg, input("u8[2]")), "Neg");
    ir_node *gelu = N1(Gelu, x);
    ir_set_attr_string(G, gelu, "approximate", "tanh");
    EXPECT_TYPE(gelu, 0, "f16[N,64,?,7] NCHW");
    ir_set_attr_string(G, gelu, "approximate", "fast");
    EXPECT_ERROR(gelu, "approximate \"fast\" is not \"none\" or \"tanh\"");
}

static void test_clip_cast_dropout(void)
{
    ir_value *x = input("f32[2,N]");
    EXPECT_TYPE(N1(Clip, x), 0, "f32[2,N]");
    EXPECT_TYPE(N1(Clip, x, scalar("f32", 0), scalar("f32", 6)), 0, "f32[2,N]");
    EXPECT_TYPE(N1(Clip, x, NULL, scalar("f32", 6)), 0, "f32[2,N]");
    EXPECT_ERROR(N1(Clip, x, scalar("f16", 0)), "must have the same dtype");
    EXPECT_ERROR(N1(Clip, x, INTS(0, 1)), "same dtype");
    EXPECT_ERROR(N1(Clip, x, literal("f32[2]", 1, (double[]){0})), "must be a scalar");

    ir_node *cast = N1(Cast, input("f32[1,3,H,W] NCHW"));
    ir_set_attr_int(G, cast, "to", 10);
    EXPECT_TYPE(cast, 0, "f16[1,3,H,W] NCHW");
    static const struct { int code; const char *type; } codes[] = {
        {1, "f32[1,3,H,W] NCHW"}, {16, "bf16[1,3,H,W] NCHW"}, {3, "i8[1,3,H,W] NCHW"},
        {2, "u8[1,3,H,W] NCHW"},  {6, "i32[1,3,H,W] NCHW"},   {7, "i64[1,3,H,W] NCHW"},
        {9, "bool[1,3,H,W] NCHW"}, {11, "f64[1,3,H,W] NCHW"},
    };
    for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        ir_set_attr_int(G, cast, "to", codes[k].code);
        EXPECT_TYPE(cast, 0, codes[k].type);
    }
    ir_set_attr_int(G, cast, "to", 8); /* STRING */
    EXPECT_ERROR(cast, "to = 8 is not a supported type");

    ir_node *drop = node(IR_OP_Dropout, 2, 1, x);
    EXPECT_TYPE(drop, 0, "f32[2,N]");
    EXPECT_TYPE(drop, 1, "bool[2,N]");
    EXPECT_TYPE(N1(Dropout, x, scalar("f32", 0.1), scalar("bool", 0)), 0, "f32[2,N]");
    ir_node *bad = N1(Dropout, x);
    ir_set_attr_float(G, bad, "ratio", 1.5);
    EXPECT_ERROR(bad, "ratio 1.5 is not in [0, 1)");
}

static void test_broadcast(void)
{
    ir_value *a = input("f32[N,1,64]"), *b = input("f32[3,1]");
    EXPECT_TYPE(N1(Add, a, b), 0, "f32[N,3,64]");
    EXPECT_TYPE(N1(Add, input("f32[N,5]"), input("f32[M,5]")), 0, "f32[?,5]");
    EXPECT_TYPE(N1(Sub, input("f32[N,5]"), input("f32[N,1]")), 0, "f32[N,5]");
    EXPECT_TYPE(N1(Mul, input("f32[N,5]"), input("f32[7,5]")), 0, "f32[7,5]");
    EXPECT_TYPE(N1(Div, input("f32[?,5]"), input("f32[1]")), 0, "f32[?,5]");
    EXPECT_TYPE(N1(Add, input("f32[]"), input("f32[2,3]")), 0, "f32[2,3]");
    EXPECT_TYPE(N1(Add, input("f32[*]"), input("f32[2,3]")), 0, "f32[*]");
    /* the layout comes from the input of the result's rank, whichever operand that is */
    EXPECT_TYPE(N1(Add, input("f32[64,1,1]"), input("f32[N,64,H,W] NCHW")), 0,
                "f32[N,64,H,W] NCHW");
    EXPECT_ERROR(N1(Add, input("f32[2,3]"), input("f32[4]")),
                 "Add: shapes [2,3] and [4] do not broadcast (3 vs 4)");
    EXPECT_ERROR(N1(Mul, input("f32[2]"), input("f16[2]")),
                 "inputs 'x");
    EXPECT_ERROR(N1(Add, input("bool[2]"), input("bool[2]")), "is bool");

    EXPECT_TYPE(N1(Pow, input("f32[2,3]"), input("i64[]")), 0, "f32[2,3]");
    EXPECT_TYPE(N1(PRelu, input("f32[1,64,8,8] NCHW"), input("f32[64,1,1]")), 0,
                "f32[1,64,8,8] NCHW");
    EXPECT_ERROR(N1(PRelu, input("f32[1,64,8,8]"), input("f32[32,1,1]")),
                 "slope of shape [32,1,1] does not broadcast to [1,64,8,8]");
    EXPECT_TYPE(N1(Max, input("i32[3,1]"), input("i32[1,4]"), input("i32[4]")), 0, "i32[3,4]");
    EXPECT_TYPE(N1(Min, input("f32[5]")), 0, "f32[5]");
    EXPECT_ERROR(N1(Min, input("f32[5]"), input("f32[3]")), "do not broadcast");
    EXPECT_TYPE(N1(Equal, input("i64[N]"), input("i64[]")), 0, "bool[N]");
    EXPECT_TYPE(N1(Equal, input("bool[2]"), input("bool[2]")), 0, "bool[2]");
    EXPECT_TYPE(N1(Less, input("f32[2,1]"), input("f32[3]")), 0, "bool[2,3]");
    EXPECT_TYPE(N1(Greater, input("f16[4]"), input("f16[4]")), 0, "bool[4]");
    EXPECT_ERROR(N1(Less, input("f32[2]"), input("i64[2]")), "same dtype");
    EXPECT_TYPE(N1(Where, input("bool[N,1]"), input("f16[1,8]"), input("f16[]")), 0,
                "f16[N,8]");
    EXPECT_ERROR(N1(Where, input("f32[2]"), input("f32[2]"), input("f32[2]")), "expected bool");
    EXPECT_ERROR(N1(Where, input("bool[2]"), input("f32[2]"), input("i64[2]")), "same dtype");
}

/* ---- convolution and pooling ---- */

static void test_conv(void)
{
    ir_node *n = N1(Conv, input("f32[1,3,224,224] NCHW"), input("f32[64,3,7,7]"),
                    input("f32[64]"));
    SET_INTS(n, "strides", 2, 2);
    SET_INTS(n, "pads", 3, 3, 3, 3);
    EXPECT_TYPE(n, 0, "f32[1,64,112,112] NCHW");
    SET_INTS(n, "kernel_shape", 7, 7);
    EXPECT_TYPE(n, 0, "f32[1,64,112,112] NCHW");
    SET_INTS(n, "kernel_shape", 5, 5);
    EXPECT_ERROR(n, "kernel_shape[0] = 5 but the weight's kernel is 7");

    /* depthwise: group = channels */
    n = N1(Conv, input("f16[N,32,56,56]"), input("f16[32,1,3,3]"));
    ir_set_attr_int(G, n, "group", 32);
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_TYPE(n, 0, "f16[N,32,56,56]");
    ir_set_attr_int(G, n, "group", 1);
    EXPECT_ERROR(n, "Conv: input has 32 channels but the weight expects 1 (group 1)");
    ir_set_attr_int(G, n, "group", 0);
    EXPECT_ERROR(n, "group 0 is out of range");

    /* grouped with 2 groups; dilation 2: extent 5 */
    n = N1(Conv, input("f32[1,8,56,56]"), input("f32[16,4,3,3]"));
    ir_set_attr_int(G, n, "group", 2);
    SET_INTS(n, "dilations", 2, 2);
    EXPECT_TYPE(n, 0, "f32[1,16,52,52]");
    SET_INTS(n, "dilations", 0, 1);
    EXPECT_ERROR(n, "dilations[0] = 0 is out of range");

    /* auto_pad */
    ir_value *x = input("f32[1,4,57,56]"), *w = input("f32[8,4,3,3]");
    n = N1(Conv, x, w);
    ir_set_attr_string(G, n, "auto_pad", "SAME_UPPER");
    SET_INTS(n, "strides", 2, 2);
    EXPECT_TYPE(n, 0, "f32[1,8,29,28]");
    ir_set_attr_string(G, n, "auto_pad", "SAME_LOWER");
    EXPECT_TYPE(n, 0, "f32[1,8,29,28]");
    ir_set_attr_string(G, n, "auto_pad", "VALID");
    EXPECT_TYPE(n, 0, "f32[1,8,28,27]");
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_ERROR(n, "pads cannot be used with auto_pad \"VALID\"");
    ir_set_attr_string(G, n, "auto_pad", "SAME");
    EXPECT_ERROR(n, "auto_pad \"SAME\" is not one of");

    /* symbolic spatial dims survive windows that keep the size */
    n = N1(Conv, input("f32[N,64,H,W] NCHW"), input("f32[128,64,1,1]"));
    EXPECT_TYPE(n, 0, "f32[N,128,H,W] NCHW");
    n = N1(Conv, input("f32[N,64,H,W]"), input("f32[64,64,3,3]"));
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_TYPE(n, 0, "f32[N,64,H,W]");
    SET_INTS(n, "strides", 2, 1);
    EXPECT_TYPE(n, 0, "f32[N,64,?,W]");

    /* 1-D and 3-D */
    EXPECT_TYPE(N1(Conv, input("f32[2,4,10] NCW"), input("f32[8,4,3]")), 0, "f32[2,8,8] NCW");
    EXPECT_TYPE(N1(Conv, input("f32[1,2,8,8,8]"), input("f32[4,2,3,3,3]")), 0,
                "f32[1,4,6,6,6]");

    EXPECT_ERROR(N1(Conv, input("f32[1,3,8,8]"), input("f32[64,64,3,3]")),
                 "input has 3 channels but the weight expects 64 (group 1)");
    EXPECT_ERROR(N1(Conv, input("i64[1,3,8,8]"), input("i64[4,3,3,3]")),
                 "Conv: input 'x");
    EXPECT_ERROR(N1(Conv, input("f32[1,3,8,8]"), input("f16[4,3,3,3]")), "same dtype");
    EXPECT_ERROR(N1(Conv, input("f32[1,3,8,8]"), input("f32[4,3,3]")), "expected rank 4");
    EXPECT_ERROR(N1(Conv, input("f32[1,3,8,8]"), input("f32[4,3,3,3]"), input("f32[5]")),
                 "bias has 5 values; expected one per output channel (4)");
    EXPECT_ERROR(N1(Conv, input("f32[1,3,2,8]"), input("f32[4,3,3,3]")),
                 "spatial dim 0 has size 2 (padded 2), smaller than the kernel extent 3");
    EXPECT_ERROR(N1(Conv, input("f32[3,8]"), input("f32[4,3]")), "expected N, C and spatial");
    EXPECT_TYPE(N1(Conv, input("f32[*]"), input("f32[8,4,3,3]")), 0, "f32[?,8,?,?]");
}

static void test_conv_transpose(void)
{
    ir_value *x = input("f32[1,16,14,14] NCHW");
    ir_node *n = N1(ConvTranspose, x, input("f32[16,8,4,4]"), input("f32[8]"));
    SET_INTS(n, "strides", 2, 2);
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_TYPE(n, 0, "f32[1,8,28,28] NCHW");

    n = N1(ConvTranspose, x, input("f32[16,8,3,3]"));
    ir_set_attr_int(G, n, "group", 2);
    SET_INTS(n, "strides", 2, 2);
    SET_INTS(n, "pads", 1, 1, 1, 1);
    SET_INTS(n, "output_padding", 1, 1);
    EXPECT_TYPE(n, 0, "f32[1,16,28,28] NCHW");
    SET_INTS(n, "output_padding", 2, 0);
    EXPECT_ERROR(n, "output_padding[0] = 2 must be at least 0 and below the stride");
    CLEAR_INTS(n, "output_padding");
    SET_INTS(n, "output_shape", 30, 29);
    EXPECT_TYPE(n, 0, "f32[1,16,30,29] NCHW");
    SET_INTS(n, "output_shape", 1, 16, 27, 27);
    EXPECT_TYPE(n, 0, "f32[1,16,27,27] NCHW");
    CLEAR_INTS(n, "output_shape");
    CLEAR_INTS(n, "pads");
    ir_set_attr_string(G, n, "auto_pad", "SAME_UPPER");
    EXPECT_TYPE(n, 0, "f32[1,16,28,28] NCHW");

    EXPECT_TYPE(N1(ConvTranspose, input("f32[N,4,L]"), input("f32[4,2,1]")), 0, "f32[N,2,L]");
    EXPECT_ERROR(N1(ConvTranspose, input("f32[1,4,5,5]"), input("f32[8,2,3,3]")),
                 "input has 4 channels but the weight expects 8");
    n = N1(ConvTranspose, input("f32[1,4,1,1]"), input("f32[4,2,1,1]"));
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_ERROR(n, "spatial dim 0 would have size -1 after pads");
}

static void test_pool(void)
{
    ir_node *n = N1(MaxPool, input("f32[1,64,112,112] NCHW"));
    SET_INTS(n, "kernel_shape", 3, 3);
    SET_INTS(n, "strides", 2, 2);
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_TYPE(n, 0, "f32[1,64,56,56] NCHW");

    n = node(IR_OP_MaxPool, 2, 1, input("f32[1,1,5,5]"));
    SET_INTS(n, "kernel_shape", 2, 2);
    SET_INTS(n, "strides", 2, 2);
    EXPECT_TYPE(n, 0, "f32[1,1,2,2]");
    ir_set_attr_int(G, n, "ceil_mode", 1);
    EXPECT_TYPE(n, 0, "f32[1,1,3,3]");
    EXPECT_TYPE(n, 1, "i64[1,1,3,3]");
    /* ceil mode never starts a window in the trailing padding: 5 + 1 + 1 by 2 gives 3, not 4 */
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_TYPE(n, 0, "f32[1,1,3,3]");
    ir_set_attr_int(G, n, "storage_order", 2);
    EXPECT_ERROR(n, "storage_order 2 is not 0 or 1");

    EXPECT_ERROR(N1(MaxPool, input("f32[1,1,5,5]")), "kernel_shape attribute is required");
    n = N1(MaxPool, input("f32[1,1,5,5]"));
    SET_INTS(n, "kernel_shape", 2);
    EXPECT_ERROR(n, "kernel_shape has 1 values; expected 2");
    n = N1(MaxPool, input("u8[1,1,4,4]"));
    SET_INTS(n, "kernel_shape", 2, 2);
    SET_INTS(n, "dilations", 2, 2);
    EXPECT_TYPE(n, 0, "u8[1,1,2,2]");

    n = N1(AveragePool, input("f32[N,8,7,7]"));
    SET_INTS(n, "kernel_shape", 3, 3);
    SET_INTS(n, "strides", 2, 2);
    ir_set_attr_string(G, n, "auto_pad", "SAME_LOWER");
    EXPECT_TYPE(n, 0, "f32[N,8,4,4]");
    ir_set_attr_string(G, n, "auto_pad", "NOTSET");
    ir_set_attr_int(G, n, "ceil_mode", 1);
    EXPECT_TYPE(n, 0, "f32[N,8,3,3]");
    n = N1(AveragePool, input("f32[*]"));
    SET_INTS(n, "kernel_shape", 3);
    EXPECT_TYPE(n, 0, "f32[?,?,?]");
    n = N1(AveragePool, input("i32[1,1,4,4]"));
    SET_INTS(n, "kernel_shape", 2, 2);
    EXPECT_ERROR(n, "expected f32, f16, bf16 or f64");

    EXPECT_TYPE(N1(GlobalAveragePool, input("f32[N,2048,7,7] NCHW")), 0, "f32[N,2048,1,1] NCHW");
    EXPECT_ERROR(N1(GlobalAveragePool, input("f32[4,7]")), "expected rank 3 or more");
}

/* ir_window_read resolves its attributes in one walk: names given as the catalog's own strings
 * (as the parser and the rewriter give them) or as other copies, the first of a repeated name,
 * one of another kind (the schema's default instead, as ir_get_ints), and ceil_mode only where
 * the op declares it. */
static void test_window_attrs(void)
{
    ir_node *n = N1(Conv, input("f32[1,1,9,9]"), input("f32[1,1,3,3]"));
    int64_t two[] = {2, 2}, one[] = {1, 1};
    ir_attr *attrs = ar_alloc_array(G->arena, 2, sizeof *attrs);
    attrs[0] = (ir_attr){.name = ir_op_attr_schema(IR_OP_Conv, "strides")->name,
                         .kind = IR_ATTR_INTS, .count = 2, .v.ints = two};
    attrs[1] = (ir_attr){.name = "strides", .kind = IR_ATTR_INTS, .count = 2, .v.ints = one};
    n->attrs = attrs;
    n->nattrs = 2;
    EXPECT_TYPE(n, 0, "f32[1,1,4,4]"); /* the first strides: 2 */
    attrs[0] = (ir_attr){.name = "strides", .kind = IR_ATTR_INT, .v.i = 3};
    EXPECT_TYPE(n, 0, "f32[1,1,7,7]"); /* an INT strides: the default, 1 */
    attrs[0] = (ir_attr){.name = ir_op_attr_schema(IR_OP_Conv, "dilations")->name,
                         .kind = IR_ATTR_INTS, .count = 2, .v.ints = two};
    attrs[1] = (ir_attr){.name = "pads", .kind = IR_ATTR_INTS, .count = 2, .v.ints = one};
    EXPECT_ERROR(n, "pads has 2 values; expected 4");
    n->nattrs = 1;
    EXPECT_TYPE(n, 0, "f32[1,1,5,5]"); /* dilated: extent 5 */

    /* ceil_mode is read where the op has it, not on Conv */
    n = N1(Conv, input("f32[1,1,5,5]"), input("f32[1,1,2,2]"));
    SET_INTS(n, "strides", 2, 2);
    ir_set_attr_int(G, n, "ceil_mode", 1);
    EXPECT_TYPE(n, 0, "f32[1,1,2,2]");
    n = N1(MaxPool, input("f32[1,1,5,5]"));
    SET_INTS(n, "kernel_shape", 2, 2);
    SET_INTS(n, "strides", 2, 2);
    ir_set_attr_int(G, n, "ceil_mode", 1);
    EXPECT_TYPE(n, 0, "f32[1,1,3,3]");
    ir_set_attr_string(G, n, "ceil_mode", "yes"); /* another kind: the default, 0 */
    EXPECT_TYPE(n, 0, "f32[1,1,2,2]");
}

/* ---- matrix products and normalizations ---- */

static void test_matmul_gemm(void)
{
    EXPECT_TYPE(N1(MatMul, input("f32[3]"), input("f32[3]")), 0, "f32[]");
    EXPECT_TYPE(N1(MatMul, input("f32[2,3]"), input("f32[3]")), 0, "f32[2]");
    EXPECT_TYPE(N1(MatMul, input("f32[3]"), input("f32[3,4]")), 0, "f32[4]");
    EXPECT_TYPE(N1(MatMul, input("f32[3]"), input("f32[B,3,4]")), 0, "f32[B,4]");
    EXPECT_TYPE(N1(MatMul, input("f16[B,S,768]"), input("f16[768,2304]")), 0, "f16[B,S,2304]");
    EXPECT_TYPE(N1(MatMul, input("f32[B,1,2,3]"), input("f32[5,3,4]")), 0, "f32[B,5,2,4]");
    EXPECT_TYPE(N1(MatMul, input("i32[2,K]"), input("i32[K,4]")), 0, "i32[2,4]");
    EXPECT_TYPE(N1(MatMul, input("f32[*]"), input("f32[3,4]")), 0, "f32[*]");
    EXPECT_ERROR(N1(MatMul, input("f32[2,3]"), input("f32[4,5]")),
                 "MatMul: inner dimensions differ: [2,3] times [4,5] (3 vs 4)");
    EXPECT_ERROR(N1(MatMul, input("f32[2,2,3]"), input("f32[3,3,4]")), "do not broadcast");
    EXPECT_ERROR(N1(MatMul, input("f32[2,3]"), input("f16[3,4]")), "same dtype");
    EXPECT_ERROR(N1(MatMul, input("f32[]"), input("f32[3]")), "expected rank 1 or more");

    ir_node *n = N1(Gemm, input("f32[4,3]"), input("f32[5,4]"), input("f32[5]"));
    ir_set_attr_int(G, n, "transA", 1);
    ir_set_attr_int(G, n, "transB", 1);
    EXPECT_TYPE(n, 0, "f32[3,5]");
    ir_set_attr_int(G, n, "transB", 0);
    EXPECT_ERROR(n, "inner dimensions differ: A [4,3] (transA 1) times B [5,4] (transB 0)");
    EXPECT_TYPE(N1(Gemm, input("f32[M,K]"), input("f32[K,N]")), 0, "f32[M,N]");
    EXPECT_TYPE(N1(Gemm, input("f32[2,3]"), input("f32[3,4]"), input("f32[2,1]")), 0,
                "f32[2,4]");
    EXPECT_ERROR(N1(Gemm, input("f32[2,3]"), input("f32[3,4]"), input("f32[2]")),
                 "C of shape [2] does not broadcast to [2,4]");
    EXPECT_ERROR(N1(Gemm, input("f32[2,3,1]"), input("f32[3,4]")), "expected rank 2");
}

static void test_norms(void)
{
    ir_value *x = input("f32[N,64,H,W] NCHW"), *p = input("f32[64]");
    EXPECT_TYPE(N1(BatchNormalization, x, p, p, p, p), 0, "f32[N,64,H,W] NCHW");
    ir_node *train = node(IR_OP_BatchNormalization, 3, 5, x, p, p, p, p);
    EXPECT_ERROR(train, "running_mean and running_var are outputs only when training_mode=1");
    ir_set_attr_int(G, train, "training_mode", 1);
    EXPECT_TYPE(train, 2, "f32[64]");
    EXPECT_ERROR(N1(BatchNormalization, x, p, input("f32[32]"), p, p),
                 "B has 32 values but the input has 64 channels");
    EXPECT_ERROR(N1(BatchNormalization, input("i32[1,2]"), p, p, p, p), "expected f32");

    ir_value *h = input("f16[B,S,768]");
    ir_node *ln = node(IR_OP_LayerNormalization, 3, 3, h, input("f16[768]"), input("f16[768]"));
    EXPECT_TYPE(ln, 0, "f16[B,S,768]");
    EXPECT_TYPE(ln, 1, "f32[B,S,1]");
    EXPECT_TYPE(ln, 2, "f32[B,S,1]");
    ir_set_attr_int(G, ln, "axis", 1);
    EXPECT_TYPE(ln, 1, "f32[B,1,1]");
    ir_set_attr_int(G, ln, "axis", 3);
    EXPECT_ERROR(ln, "axis 3 is out of range for rank 3");
    EXPECT_ERROR(N1(LayerNormalization, h, input("f16[512]")),
                 "scale of shape [512] does not broadcast to [768]");
    ir_node *ln2 = N1(LayerNormalization, h, input("f16[768]"));
    ir_set_attr_int(G, ln2, "stash_type", 7);
    EXPECT_ERROR(ln2, "stash_type 7 is not a float type");

    ir_node *sm = N1(Softmax, input("f32[B,12,S,S]"));
    EXPECT_TYPE(sm, 0, "f32[B,12,S,S]");
    ir_set_attr_int(G, sm, "axis", -5);
    EXPECT_ERROR(sm, "Softmax: axis -5 is out of range for rank 4");
}

static void test_quant(void)
{
    ir_value *x = input("f32[1,64,8,8] NCHW");
    EXPECT_TYPE(N1(QuantizeLinear, x, scalar("f32", 0.1)), 0, "u8[1,64,8,8] NCHW");
    EXPECT_TYPE(N1(QuantizeLinear, x, input("f32[64]"), input("i8[64]")), 0, "i8[1,64,8,8] NCHW");
    ir_node *blocked = N1(QuantizeLinear, x, input("f32[1,16,8,8]"), input("i8[1,16,8,8]"));
    ir_set_attr_int(G, blocked, "block_size", 4);
    EXPECT_TYPE(blocked, 0, "i8[1,64,8,8] NCHW");
    ir_set_attr_int(G, blocked, "block_size", 3);
    EXPECT_ERROR(blocked, "a blocked scale for [1,64,8,8] (axis 1, block_size 3) cannot have");
    EXPECT_ERROR(N1(QuantizeLinear, x, input("f32[32]")),
                 "a per-axis scale must have one value per element of axis 1");
    EXPECT_ERROR(N1(QuantizeLinear, x, input("f32[64]"), input("i8[32]")),
                 "the zero point's shape [32] differs from the scale's [64]");
    ir_node *q = N1(QuantizeLinear, x, scalar("f32", 0.1));
    ir_set_attr_int(G, q, "output_dtype", 3);
    EXPECT_TYPE(q, 0, "i8[1,64,8,8] NCHW");
    ir_set_attr_int(G, q, "output_dtype", 1);
    EXPECT_ERROR(q, "output_dtype 1 is not i8 (3), u8 (2), i16 (5) or u16 (4)");

    EXPECT_TYPE(N1(DequantizeLinear, input("i8[N,16]"), scalar("f16", 0.5), scalar("i8", 0)), 0,
                "f16[N,16]");
    EXPECT_TYPE(N1(DequantizeLinear, input("i32[16]"), input("f32[]")), 0, "f32[16]");
    EXPECT_ERROR(N1(DequantizeLinear, input("u8[4]"), input("f32[]"), input("i8[]")),
                 "same dtype");
    EXPECT_ERROR(N1(DequantizeLinear, input("f32[4]"), input("f32[]")),
                 "expected i8, u8, i32, i16 or u16");
}

/* ---- reductions ---- */

static void test_reduce(void)
{
    ir_value *x = input("f32[2,N,4] NCW");
    ir_node *n = N1(ReduceMean, x);
    SET_INTS(n, "axes", 1);
    EXPECT_TYPE(n, 0, "f32[2,1,4] NCW");
    ir_set_attr_int(G, n, "keepdims", 0);
    EXPECT_TYPE(n, 0, "f32[2,4]");

    n = N1(ReduceSum, x, INTS(-1, 0));
    ir_set_attr_int(G, n, "keepdims", 0);
    EXPECT_TYPE(n, 0, "f32[N]");
    EXPECT_TYPE(N1(ReduceMax, x), 0, "f32[1,1,1] NCW");
    n = N1(ReduceMin, x);
    ir_set_attr_int(G, n, "keepdims", 0);
    EXPECT_TYPE(n, 0, "f32[]");
    n = N1(ReduceSum, x, literal("i64[0]", 0, NULL));
    ir_set_attr_int(G, n, "noop_with_empty_axes", 1);
    EXPECT_TYPE(n, 0, "f32[2,N,4] NCW");

    /* axes not known: keepdims keeps the rank; without, the rank drops by the axes' count */
    ir_value *axes = input("i64[2]");
    n = N1(ReduceSum, x, axes);
    EXPECT_TYPE(n, 0, "f32[?,?,?] NCW");
    ir_set_attr_int(G, n, "keepdims", 0);
    EXPECT_TYPE(n, 0, "f32[?]");
    n = N1(ReduceSum, x, input("i64[K]"));
    ir_set_attr_int(G, n, "keepdims", 0);
    EXPECT_TYPE(n, 0, "f32[*]");

    n = N1(ReduceMean, x);
    SET_INTS(n, "axes", 3);
    EXPECT_ERROR(n, "ReduceMean: axis 3 is out of range for rank 3");
    SET_INTS(n, "axes", 1, -2);
    EXPECT_ERROR(n, "axis -2 is listed twice");
    n = N1(ReduceMean, x, INTS(0));
    SET_INTS(n, "axes", 1);
    EXPECT_ERROR(n, "axes given both as input 'c");
    EXPECT_ERROR(N1(ReduceMean, x, input("f32[1]")), "expected i32 or i64");
    EXPECT_ERROR(N1(ReduceMean, input("bool[2]")), "is bool");
}

/* ---- data movement ---- */

static void test_transpose_flatten(void)
{
    ir_node *n = N1(Transpose, input("f32[1,3,H,W] NCHW"));
    SET_INTS(n, "perm", 0, 2, 3, 1);
    EXPECT_TYPE(n, 0, "f32[1,H,W,3] NHWC");
    n = N1(Transpose, input("f32[1,H,W,3] NHWC"));
    SET_INTS(n, "perm", 0, 3, 1, 2);
    EXPECT_TYPE(n, 0, "f32[1,3,H,W] NCHW");
    SET_INTS(n, "perm", 0, 1, 2, 3);
    EXPECT_TYPE(n, 0, "f32[1,H,W,3] NHWC");
    SET_INTS(n, "perm", 1, 0, 2, 3);
    EXPECT_TYPE(n, 0, "f32[H,1,W,3]");
    EXPECT_TYPE(N1(Transpose, input("i64[2,3,4]")), 0, "i64[4,3,2]");
    SET_INTS(n, "perm", 0, 1, 1, 3);
    EXPECT_ERROR(n, "perm is not a permutation of 0..3");
    SET_INTS(n, "perm", 0, 1, 2);
    EXPECT_ERROR(n, "perm has 3 values but the input has rank 4");
    n = N1(Transpose, input("f32[*]"));
    SET_INTS(n, "perm", 1, 0);
    EXPECT_TYPE(n, 0, "f32[?,?]");

    ir_value *x = input("f32[N,3,4,5]");
    n = N1(Flatten, x);
    EXPECT_TYPE(n, 0, "f32[N,60]");
    ir_set_attr_int(G, n, "axis", 0);
    EXPECT_TYPE(n, 0, "f32[1,N * 60]"); /* products of symbols are expressions */
    ir_set_attr_int(G, n, "axis", -1);
    EXPECT_TYPE(n, 0, "f32[N * 12,5]");
    ir_set_attr_int(G, n, "axis", 4);
    EXPECT_TYPE(n, 0, "f32[N * 60,1]");
    ir_set_attr_int(G, n, "axis", 5);
    EXPECT_ERROR(n, "axis 5 is out of range for rank 4");
    n = N1(Flatten, input("f32[2,3,4,5]"));
    ir_set_attr_int(G, n, "axis", 2);
    EXPECT_TYPE(n, 0, "f32[6,20]");

    EXPECT_TYPE(N1(Trilu, input("f32[B,S,S]"), scalar("i64", 1)), 0, "f32[B,S,S]");
    EXPECT_ERROR(N1(Trilu, input("f32[5]")), "expected rank 2 or more");
}

static void test_reshape(void)
{
    EXPECT_TYPE(N1(Reshape, input("f32[2,3,4]"), INTS(0, -1)), 0, "f32[2,12]");
    EXPECT_TYPE(N1(Reshape, input("f32[N,128,768]"), INTS(0, 0, 12, 64)), 0,
                "f32[N,128,12,64]");
    EXPECT_TYPE(N1(Reshape, input("f32[N,12,64]"), INTS(0, -1)), 0, "f32[N,768]");
    EXPECT_TYPE(N1(Reshape, input("f32[N,768]"), INTS(-1, 12, 64)), 0, "f32[N,12,64]");
    EXPECT_TYPE(N1(Reshape, input("f32[N,128,768]"), INTS(-1, 768)), 0, "f32[N * 128,768]");
    EXPECT_TYPE(N1(Reshape, input("f32[N,S,768]"), INTS(0, -1, 12, 64)), 0, "f32[N,S,12,64]");
    EXPECT_TYPE(N1(Reshape, input("f32[6]"), INTS(1, -1, 2)), 0, "f32[1,3,2]");
    EXPECT_TYPE(N1(Reshape, input("f32[*]"), INTS(0, 4)), 0, "f32[?,4]");
    ir_node *n = N1(Reshape, input("f32[0,3]"), INTS(0, 3));
    ir_set_attr_int(G, n, "allowzero", 1);
    EXPECT_TYPE(n, 0, "f32[0,3]");
    n = N1(Reshape, input("f32[0,3]"), INTS(0, -1));
    ir_set_attr_int(G, n, "allowzero", 1);
    EXPECT_ERROR(n, "shape has both 0 and -1 with allowzero=1");
    EXPECT_TYPE(N1(Reshape, input("f32[2,3]"), input("i64[3]")), 0, "f32[?,?,?]");
    EXPECT_TYPE(N1(Reshape, input("f32[2,3]"), input("i64[R]")), 0, "f32[*]");

    EXPECT_ERROR(N1(Reshape, input("f32[2,3,4]"), INTS(5, 5)),
                 "Reshape: cannot reshape [2,3,4] (24 elements) into [5,5] (25 elements)");
    EXPECT_ERROR(N1(Reshape, input("f32[2,3,4]"), INTS(5, -1)),
                 "cannot reshape [2,3,4] into [5,?]: 24 is not a multiple of 5");
    EXPECT_ERROR(N1(Reshape, input("f32[24]"), INTS(-1, 2, -1)), "more than one -1");
    EXPECT_ERROR(N1(Reshape, input("f32[24]"), INTS(-2, 12)), "shape[0] = -2 is out of range");
    EXPECT_ERROR(N1(Reshape, input("f32[24]"), INTS(24, 0)),
                 "shape[1] = 0 copies dim 1, but the input [24] has rank 1");
    EXPECT_ERROR(N1(Reshape, input("f32[24]"), input("i32[2]")), "expected i64");
    EXPECT_ERROR(N1(Reshape, input("f32[2]"), INTS(1 << 30, 1 << 30)),
                 "more than 2^40 elements");
}

static void test_squeeze_unsqueeze(void)
{
    ir_value *x = input("f32[N,1,5,1]");
    ir_node *n = N1(Squeeze, x);
    SET_INTS(n, "axes", 1);
    EXPECT_TYPE(n, 0, "f32[N,5,1]");
    EXPECT_TYPE(N1(Squeeze, x, INTS(-1, 1)), 0, "f32[N,5]");
    EXPECT_TYPE(N1(Squeeze, input("f32[1,3,1]")), 0, "f32[3]");
    EXPECT_TYPE(N1(Squeeze, x), 0, "f32[*]");
    EXPECT_TYPE(N1(Squeeze, x, input("i64[2]")), 0, "f32[?,?]");
    EXPECT_ERROR(N1(Squeeze, x, INTS(2)), "Squeeze: dim 2 has size 5, not 1");
    EXPECT_ERROR(N1(Squeeze, x, INTS(4)), "axis 4 is out of range for rank 4");

    n = N1(Unsqueeze, input("f32[3,4] NC"));
    SET_INTS(n, "axes", 0, 3);
    EXPECT_TYPE(n, 0, "f32[1,3,4,1]");
    EXPECT_TYPE(N1(Unsqueeze, input("i64[N]"), INTS(-1)), 0, "i64[N,1]");
    EXPECT_TYPE(N1(Unsqueeze, input("i64[]"), INTS(0)), 0, "i64[1]");
    EXPECT_TYPE(N1(Unsqueeze, input("f32[3]"), input("i64[2]")), 0, "f32[?,?,?]");
    EXPECT_TYPE(N1(Unsqueeze, input("f32[3]"), INTS(1, -1)), 0, "f32[3,1,1]");
    EXPECT_ERROR(N1(Unsqueeze, input("f32[3]"), INTS(2, -1)), "axis -1 is listed twice");
    EXPECT_ERROR(N1(Unsqueeze, input("f32[3]"), INTS(3)), "axis 3 is out of range for rank 2");
    EXPECT_ERROR(N1(Unsqueeze, input("f32[2,2,2,2,2,2,2,2]"), INTS(0)),
                 "the result would have rank 9");
}

static void test_concat_split(void)
{
    ir_node *n = N1(Concat, input("f32[N,3,H] NCW"), input("f32[N,5,H]"), input("f32[1,2,H]"));
    ir_set_attr_int(G, n, "axis", 1);
    EXPECT_TYPE(n, 0, "f32[1,10,H] NCW");
    ir_set_attr_int(G, n, "axis", -1);
    EXPECT_ERROR(n, "Concat: input 'x");
    n = N1(Concat, input("f32[2,S]"), input("f32[2,4]"));
    ir_set_attr_int(G, n, "axis", 1);
    EXPECT_TYPE(n, 0, "f32[2,S + 4]");
    n = N1(Concat, input("f32[2,3]"), input("f32[2]"));
    ir_set_attr_int(G, n, "axis", 0);
    EXPECT_ERROR(n, "inputs have ranks 2 and 1");
    n = N1(Concat, input("i64[1]"), input("i64[*]"));
    ir_set_attr_int(G, n, "axis", 0);
    EXPECT_TYPE(n, 0, "i64[?]");

    ir_value *x = input("f32[6,N]");
    n = node(IR_OP_Split, 2, 1, x);
    SET_INTS(n, "split", 2, 4);
    EXPECT_TYPE(n, 0, "f32[2,N]");
    EXPECT_TYPE(n, 1, "f32[4,N]");
    SET_INTS(n, "split", 2, 3);
    EXPECT_ERROR(n, "split sizes add up to 5 but the dim is 6");
    SET_INTS(n, "split", 2, 2, 2);
    EXPECT_ERROR(n, "split lists 3 sizes for 2 outputs");
    n = node(IR_OP_Split, 2, 2, x, INTS(1, 5));
    EXPECT_TYPE(n, 1, "f32[5,N]");
    n = node(IR_OP_Split, 3, 1, input("f32[7]"));
    EXPECT_TYPE(n, 0, "f32[3]");
    EXPECT_TYPE(n, 2, "f32[1]");
    ir_set_attr_int(G, n, "num_outputs", 2);
    EXPECT_ERROR(n, "num_outputs is 2 but the node has 3 outputs");
    n = node(IR_OP_Split, 4, 1, input("f32[5]"));
    EXPECT_ERROR(n, "a dim of 5 cannot be split into 4 parts");
    n = node(IR_OP_Split, 2, 1, x);
    ir_set_attr_int(G, n, "axis", 1);
    EXPECT_TYPE(n, 1, "f32[6,?]");
    n = node(IR_OP_Split, 2, 2, x, input("i64[2]"));
    EXPECT_TYPE(n, 0, "f32[?,N]");
}

static void test_slice(void)
{
    ir_value *x = input("f32[10,20,N]");
    const long long end = INT64_MAX, begin = INT64_MIN;
    EXPECT_TYPE(N1(Slice, x, INTS(-3), INTS(end), INTS(1)), 0, "f32[10,3,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(0), INTS(end), INTS(2)), 0, "f32[10,20,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(-1), INTS(begin), INTS(-1), INTS(-1)), 0,
                "f32[10,20,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(1), INTS(2), INTS(-1)), 0, "f32[10,20,?]");
    EXPECT_TYPE(N1(Slice, x, INTS(1), INTS(-1), INTS(0), INTS(2)), 0, "f32[4,20,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(8), INTS(1), INTS(0), INTS(-3)), 0, "f32[3,20,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(-100, 5), INTS(100, 2)), 0, "f32[10,0,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(3), INTS(3)), 0, "f32[0,20,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(20), INTS(-100), INTS(1), INTS(-1)), 0,
                "f32[10,20,N]");
    EXPECT_TYPE(N1(Slice, x, input("i64[1]"), INTS(5), INTS(1)), 0, "f32[10,?,N]");
    EXPECT_TYPE(N1(Slice, x, INTS(0), INTS(5), input("i64[1]")), 0, "f32[?,?,?]");
    EXPECT_ERROR(N1(Slice, x, INTS(0), INTS(5), INTS(0), INTS(0)), "steps[0] is 0");
    EXPECT_ERROR(N1(Slice, x, INTS(0, 0), INTS(5)), "must have the same length");
    EXPECT_ERROR(N1(Slice, x, INTS(0), INTS(5), INTS(3)),
                 "axis 3 is out of range for rank 3");
}

static void test_expand_tile_gather(void)
{
    EXPECT_TYPE(N1(Expand, input("f32[3,1] NC"), INTS(2, 1, 6)), 0, "f32[2,3,6]");
    EXPECT_TYPE(N1(Expand, input("f32[N,1]"), INTS(1, 4)), 0, "f32[N,4]");
    EXPECT_TYPE(N1(Expand, input("f32[3,1]"), input("i64[4]")), 0, "f32[?,?,?,?]");
    EXPECT_ERROR(N1(Expand, input("f32[3,2]"), INTS(4, 2)),
                 "shapes [3,2] and [4,2] do not broadcast");
    EXPECT_ERROR(N1(Expand, input("f32[3,2]"), INTS(-1, 2)), "shape[0] = -1 is out of range");

    EXPECT_TYPE(N1(Tile, input("f32[2,N] NC"), INTS(3, 2)), 0, "f32[6,N * 2] NC");
    EXPECT_TYPE(N1(Tile, input("f32[2,N]"), INTS(3, 1)), 0, "f32[6,N]");
    EXPECT_TYPE(N1(Tile, input("f32[2,3]"), input("i64[2]")), 0, "f32[?,?]");
    EXPECT_ERROR(N1(Tile, input("f32[2,3]"), INTS(2)),
                 "repeats has 1 values but the input has rank 2");
    EXPECT_ERROR(N1(Tile, input("f32[1024,1024]"), INTS(1 << 20, 1 << 20)),
                 "Tile: output 'y");

    ir_value *table = input("f32[1000,768]");
    EXPECT_TYPE(N1(Gather, table, input("i64[B,S]")), 0, "f32[B,S,768]");
    ir_node *n = N1(Gather, input("f32[5,4,3]"), input("i32[2]"));
    ir_set_attr_int(G, n, "axis", 1);
    EXPECT_TYPE(n, 0, "f32[5,2,3]");
    EXPECT_TYPE(N1(Gather, input("i64[4]"), scalar("i64", -4)), 0, "i64[]");
    EXPECT_ERROR(N1(Gather, input("i64[4]"), scalar("i64", 4)),
                 "index 4 is out of range for a dim of 4");
    EXPECT_ERROR(N1(Gather, table, input("f32[2]")), "expected i32 or i64");
    ir_set_attr_int(G, n, "axis", 3);
    EXPECT_ERROR(n, "axis 3 is out of range for rank 3");
}

static void test_pad(void)
{
    ir_value *x = input("f32[1,3,4,W] NCHW");
    EXPECT_TYPE(N1(Pad, x, INTS(0, 0, 1, 2, 0, 0, 1, 2)), 0, "f32[1,3,6,W + 4] NCHW");
    EXPECT_TYPE(N1(Pad, x, INTS(0, 0, -1, 0, 0, 0, -1, 0), scalar("f32", 0)), 0,
                "f32[1,3,2,W] NCHW");
    EXPECT_TYPE(N1(Pad, x, INTS(1, 1, 1, 1), NULL, INTS(1, 2)), 0, "f32[1,5,6,W] NCHW");
    EXPECT_TYPE(N1(Pad, x, input("i64[8]")), 0, "f32[?,?,?,?] NCHW");
    EXPECT_ERROR(N1(Pad, x, INTS(0, 0, -3, 0, 0, 0, -2, 0)),
                 "axis 2 of size 4 would have size -1 after pads");
    EXPECT_ERROR(N1(Pad, x, INTS(0, 0, 1, 1)), "pads has 4 values; expected 8");
    EXPECT_ERROR(N1(Pad, x, INTS(0, 0, 1, 1, 0, 0, 1, 1), scalar("i64", 0)), "same dtype");
    ir_node *n = N1(Pad, x, INTS(0, 0, 4, 0, 0, 0, 0, 0));
    ir_set_attr_string(G, n, "mode", "reflect");
    EXPECT_ERROR(n, "reflect pads of axis 2 must be below its size 4");
    ir_set_attr_string(G, n, "mode", "edge");
    EXPECT_TYPE(n, 0, "f32[1,3,8,W] NCHW");
    ir_set_attr_string(G, n, "mode", "mirror");
    EXPECT_ERROR(n, "mode \"mirror\" is not constant, reflect, edge or wrap");
}

/* ---- generators ---- */

static void test_generators(void)
{
    ir_value *x = input("f32[N,3,4]");
    ir_node *n = N1(Shape, x);
    EXPECT_TYPE(n, 0, "i64[3]");
    ir_set_attr_int(G, n, "start", 1);
    EXPECT_TYPE(n, 0, "i64[2]");
    ir_set_attr_int(G, n, "end", -1);
    EXPECT_TYPE(n, 0, "i64[1]");
    ir_set_attr_int(G, n, "start", -10);
    ir_set_attr_int(G, n, "end", 10);
    EXPECT_TYPE(n, 0, "i64[3]");
    ir_set_attr_int(G, n, "start", 3);
    EXPECT_TYPE(n, 0, "i64[0]");
    EXPECT_TYPE(N1(Shape, input("f32[*]")), 0, "i64[?]");

    n = N1(ConstantOfShape, INTS(2, 3));
    EXPECT_TYPE(n, 0, "f32[2,3]");
    ir_set_attr_int(G, n, "dtype", 7);
    EXPECT_TYPE(n, 0, "i64[2,3]");
    ir_set_attr_int(G, n, "dtype", 8);
    EXPECT_ERROR(n, "dtype 8 is not a supported type");
    EXPECT_TYPE(N1(ConstantOfShape, input("i64[3]")), 0, "f32[?,?,?]");
    EXPECT_TYPE(N1(ConstantOfShape, literal("i64[0]", 0, NULL)), 0, "f32[]");
    EXPECT_ERROR(N1(ConstantOfShape, INTS(3, -1)), "shape[1] = -1 is out of range");
    EXPECT_ERROR(N1(ConstantOfShape, INTS(1 << 20, 1 << 20, 2)), "more than 2^40 elements");

    EXPECT_TYPE(N1(Range, scalar("i64", 0), scalar("i64", 10), scalar("i64", 3)), 0, "i64[4]");
    EXPECT_TYPE(N1(Range, scalar("f32", 1), scalar("f32", 0), scalar("f32", -0.25)), 0,
                "f32[4]");
    EXPECT_TYPE(N1(Range, scalar("i32", 5), scalar("i32", 0), scalar("i32", 1)), 0, "i32[0]");
    EXPECT_TYPE(N1(Range, scalar("i64", 0), input("i64[]"), scalar("i64", 1)), 0, "i64[?]");
    EXPECT_ERROR(N1(Range, scalar("i64", 0), scalar("i64", 5), scalar("i64", 0)), "delta is 0");
    EXPECT_ERROR(N1(Range, scalar("i64", 0), scalar("f32", 5), scalar("i64", 1)), "same dtype");
    EXPECT_ERROR(N1(Range, scalar("f32", 0), scalar("f32", 1e18), scalar("f32", 1)),
                 "more than 2^40 values");

    n = node(IR_OP_Constant, 1, 0);
    EXPECT_ERROR(n, "no value: set one of value_float");
    SET_INTS(n, "value_ints", 1, 2, 3);
    EXPECT_TYPE(n, 0, "i64[3]");
    ir_set_attr_float(G, n, "value_float", 0.5);
    EXPECT_ERROR(n, "both value_float and value_ints are set");
    n = node(IR_OP_Constant, 1, 0);
    ir_set_attr_float(G, n, "value_float", 0.5);
    EXPECT_TYPE(n, 0, "f32[]");
    n = node(IR_OP_Constant, 1, 0);
    ir_set_attr_int(G, n, "value_int", 4);
    EXPECT_TYPE(n, 0, "i64[]");
    n = node(IR_OP_Constant, 1, 0);
    ir_set_attr_floats(G, n, "value_floats", (double[]){1, 2}, 2);
    EXPECT_TYPE(n, 0, "f32[2]");
}

/* ---- diagnostics, arity, overflow ---- */

/* With a source, errors point at the node's text; without, they name the graph and the node. */
static void test_error_location(void)
{
    static const char text[] = "graph t {\n  y = Conv(x, w)\n}\n";
    dg_source src = {.path = "t.graph", .text = text, .len = sizeof text - 1};
    ir_node *n = N1(Conv, input("f32[1,3,8,8]"), input("f32[4,5,3,3]"));
    EXPECT_ERROR(n, "t: error: node y");
    G->src = &src;
    n->src_offset = 12;
    n->src_len = 14;
    EXPECT_ERROR(n, "t.graph:2:3: error: Conv: input has 3 channels but the weight expects 5 "
                    "(group 1)\n");
    EXPECT_ERROR(n, "\n    y = Conv(x, w)\n    ^~~~~~~~~~~~~~\n");
    G->src = NULL;
}

static void test_arity_and_overflow(void)
{
    EXPECT_ERROR(node(IR_OP_Conv, 1, 1, input("f32[1,3,8,8]")), "Conv: takes 2 to 3 inputs, not 1");
    EXPECT_ERROR(node(IR_OP_Add, 1, 2, input("f32[1]"), NULL), "input #1 is required");
    EXPECT_ERROR(node(IR_OP_Relu, 2, 1, input("f32[1]")), "Relu: gives 1 outputs, not 2");
    /* sizes near int64 never wrap around: they are refused as impossible */
    ir_node *n = N1(Conv, input("f32[1,1,1099511627776,1]"), input("f32[1,1,1,1]"));
    SET_INTS(n, "pads", 1099511627776LL, 0, 1099511627776LL, 0);
    EXPECT_ERROR(n, "would have shape [1,1,1099511627777,1]: a dim above 2^40");
    n = N1(Conv, input("f32[1,1,8,8]"), input("f32[1,1,1,1]"));
    SET_INTS(n, "strides", INT64_MAX, 1);
    EXPECT_ERROR(n, "strides[0] = 9223372036854775807 is out of range");
    EXPECT_ERROR(N1(MatMul, input("f32[1048576,4]"), input("f32[4,1048577]")),
                 "more than 2^40 elements");
    EXPECT_ERROR(node(IR_OP_Max, 1, 0), "Max: takes at least 1 inputs, not 0");
    EXPECT_ERROR(N1(Tile, input("f32[0,1048576]"), INTS(1, 1048577)),
                 "would have shape [0,1099511627777]: a dim above 2^40");
    EXPECT_ERROR(N1(Expand, input("f32[1]"), INTS(1 << 20, 1 << 20, 2)),
                 "would have shape [1048576,1048576,2]");
}

/* ---- the catalog ---- */

static const ir_attr_schema *attr(ir_op op, const char *name)
{
    const ir_attr_schema *s = ir_op_attr_schema(op, name);
    if (!s)
        fprintf(stderr, "%s has no attribute %s\n", ir_op_name(op), name);
    return s;
}

#define CHECK_INT_ATTR(op, name, value)                                                            \
    do {                                                                                           \
        const ir_attr_schema *s_ = attr(IR_OP_##op, name);                                         \
        CHECK(s_ && s_->kind == IR_ATTR_INT && !s_->required && s_->i == (value));                 \
    } while (0)
#define CHECK_FLOAT_ATTR(op, name, value)                                                          \
    do {                                                                                           \
        const ir_attr_schema *s_ = attr(IR_OP_##op, name);                                         \
        CHECK(s_ && s_->kind == IR_ATTR_FLOAT && !s_->required && s_->f == (value));               \
    } while (0)
#define CHECK_STRING_ATTR(op, name, value)                                                         \
    do {                                                                                           \
        const ir_attr_schema *s_ = attr(IR_OP_##op, name);                                         \
        CHECK(s_ && s_->kind == IR_ATTR_STRING && s_->s && strcmp(s_->s, value) == 0);             \
    } while (0)
#define CHECK_KIND(op, name, k, req)                                                               \
    do {                                                                                           \
        const ir_attr_schema *s_ = attr(IR_OP_##op, name);                                         \
        CHECK(s_ && s_->kind == (k) && s_->required == (req));                                     \
    } while (0)

/* Every row has a name, an inference and a well-formed schema. */
static void test_catalog_rows(void)
{
    for (unsigned op = 0; op < IR_OP_COUNT; op++) {
        const ir_op_info *info = ir_op_info_get((ir_op)op);
        CHECK(info->name && info->name[0]);
        CHECK(info->infer != NULL);
        CHECK(info->min_inputs <= info->max_inputs);
        CHECK(info->min_outputs >= 1 && info->min_outputs <= info->max_outputs);
        ir_op found;
        size_t len = strlen(info->name);
        CHECK(ir_op_lookup(info->name, len, &found) && found == (ir_op)op);
        /* near misses: a prefix, the name with a letter more, read only as far as len says */
        char longer[128];
        CHECK(len + 2 <= sizeof longer);
        memcpy(longer, info->name, len);
        memcpy(longer + len, "x", 2);
        CHECK(!ir_op_lookup(info->name, len - 1, &found) || strlen(ir_op_name(found)) == len - 1);
        CHECK(!ir_op_lookup(longer, len + 1, &found));
        CHECK(ir_op_lookup(longer, len, &found) && found == (ir_op)op);
        for (uint32_t k = 0; k < info->nattrs; k++) {
            const ir_attr_schema *s = &info->attrs[k];
            CHECK(s->name && s->name[0]);
            CHECK(s->kind <= IR_ATTR_FLOATS);
            CHECK(ir_op_attr_schema((ir_op)op, s->name) == s); /* names are unique */
            if (s->kind == IR_ATTR_STRING && !s->required)
                CHECK(s->s != NULL);
            if (s->kind == IR_ATTR_INTS)
                CHECK((s->ints == NULL) == (s->nints == 0));
            if (s->required) /* a required attribute has no default to fall back on */
                CHECK(s->i == 0 && s->f == 0 && !s->s && !s->ints);
        }
    }
}

/* The defaults ONNX documents. */
static void test_catalog_defaults(void)
{
    CHECK_STRING_ATTR(Conv, "auto_pad", "NOTSET");
    CHECK_INT_ATTR(Conv, "group", 1);
    CHECK_KIND(Conv, "dilations", IR_ATTR_INTS, false);
    CHECK_KIND(Conv, "kernel_shape", IR_ATTR_INTS, false);
    CHECK_KIND(Conv, "pads", IR_ATTR_INTS, false);
    CHECK_KIND(Conv, "strides", IR_ATTR_INTS, false);
    CHECK_KIND(ConvTranspose, "output_padding", IR_ATTR_INTS, false);
    CHECK_KIND(ConvTranspose, "output_shape", IR_ATTR_INTS, false);
    CHECK_FLOAT_ATTR(BatchNormalization, "epsilon", 1e-5);
    CHECK_FLOAT_ATTR(BatchNormalization, "momentum", 0.9);
    CHECK_INT_ATTR(BatchNormalization, "training_mode", 0);
    CHECK_FLOAT_ATTR(LeakyRelu, "alpha", 0.01);
    CHECK_STRING_ATTR(Gelu, "approximate", "none");
    CHECK_FLOAT_ATTR(HardSigmoid, "alpha", 0.2);
    CHECK_FLOAT_ATTR(HardSigmoid, "beta", 0.5);
    CHECK_FLOAT_ATTR(Elu, "alpha", 1.0);
    CHECK_INT_ATTR(Softmax, "axis", -1);
    CHECK_INT_ATTR(LayerNormalization, "axis", -1);
    CHECK_FLOAT_ATTR(LayerNormalization, "epsilon", 1e-5);
    CHECK_INT_ATTR(LayerNormalization, "stash_type", 1);
    CHECK_FLOAT_ATTR(Gemm, "alpha", 1.0);
    CHECK_FLOAT_ATTR(Gemm, "beta", 1.0);
    CHECK_INT_ATTR(Gemm, "transA", 0);
    CHECK_INT_ATTR(Gemm, "transB", 0);
    static const ir_op reduces[] = {IR_OP_ReduceMean, IR_OP_ReduceSum, IR_OP_ReduceMax,
                                    IR_OP_ReduceMin};
    for (size_t k = 0; k < 4; k++) {
        const ir_attr_schema *keep = attr(reduces[k], "keepdims");
        const ir_attr_schema *noop = attr(reduces[k], "noop_with_empty_axes");
        const ir_attr_schema *axes = attr(reduces[k], "axes");
        CHECK(keep && keep->i == 1 && noop && noop->i == 0 && axes && axes->kind == IR_ATTR_INTS);
    }
    CHECK_KIND(Squeeze, "axes", IR_ATTR_INTS, false);
    CHECK_KIND(Unsqueeze, "axes", IR_ATTR_INTS, false);
    CHECK_KIND(Split, "split", IR_ATTR_INTS, false);
    CHECK_INT_ATTR(Split, "axis", 0);
    CHECK_INT_ATTR(Split, "num_outputs", 0);
    CHECK_KIND(Cast, "to", IR_ATTR_INT, true);
    CHECK_STRING_ATTR(Pad, "mode", "constant");
    CHECK_KIND(Clip, "min", IR_ATTR_FLOAT, false);
    CHECK_KIND(Clip, "max", IR_ATTR_FLOAT, false);
    CHECK(attr(IR_OP_Clip, "min")->f < -3e38 && attr(IR_OP_Clip, "max")->f > 3e38);
    CHECK_KIND(Constant, "value_float", IR_ATTR_FLOAT, false);
    CHECK_KIND(Constant, "value_floats", IR_ATTR_FLOATS, false);
    CHECK_KIND(Constant, "value_int", IR_ATTR_INT, false);
    CHECK_KIND(Constant, "value_ints", IR_ATTR_INTS, false);
    CHECK_KIND(Dropout, "seed", IR_ATTR_INT, false);
    CHECK_FLOAT_ATTR(Dropout, "ratio", 0.5);
    CHECK_KIND(MaxPool, "kernel_shape", IR_ATTR_INTS, true);
    CHECK_KIND(AveragePool, "kernel_shape", IR_ATTR_INTS, true);
    CHECK_INT_ATTR(MaxPool, "ceil_mode", 0);
    CHECK_INT_ATTR(MaxPool, "storage_order", 0);
    CHECK_INT_ATTR(AveragePool, "count_include_pad", 0);
    CHECK_KIND(Transpose, "perm", IR_ATTR_INTS, false);
    CHECK_INT_ATTR(Flatten, "axis", 1);
    CHECK_KIND(Concat, "axis", IR_ATTR_INT, true);
    CHECK_INT_ATTR(Gather, "axis", 0);
    CHECK_INT_ATTR(Trilu, "upper", 1);
    CHECK_INT_ATTR(QuantizeLinear, "axis", 1);
    CHECK_INT_ATTR(QuantizeLinear, "saturate", 1);
    CHECK_INT_ATTR(DequantizeLinear, "axis", 1);
    CHECK_INT_ATTR(DequantizeLinear, "block_size", 0);
    CHECK_FLOAT_ATTR(ConstantOfShape, "value", 0.0);
    CHECK_INT_ATTR(ConstantOfShape, "dtype", 1);
    CHECK_INT_ATTR(Shape, "start", 0);
    CHECK_INT_ATTR(Reshape, "allowzero", 0);
    CHECK(ir_op_info_get(IR_OP_Relu)->nattrs == 0 && ir_op_info_get(IR_OP_Add)->nattrs == 0);
}

/* ---- ops added for the exporters and ONNX Runtime's models (issue 13) ---- */

static void test_logic_and_math(void)
{
    ir_value *a = input("bool[N,1,4]"), *b = input("bool[3,1]");
    EXPECT_TYPE(N1(And, a, b), 0, "bool[N,3,4]");
    EXPECT_TYPE(N1(Or, a, b), 0, "bool[N,3,4]");
    EXPECT_TYPE(N1(Xor, a, a), 0, "bool[N,1,4]");
    EXPECT_ERROR(N1(And, a, input("i64[1]")), "And: input 'x");
    ir_value *x = input("f16[2,3] NC"), *y = input("f16[3]");
    EXPECT_TYPE(N1(GreaterOrEqual, x, y), 0, "bool[2,3] NC");
    EXPECT_TYPE(N1(LessOrEqual, input("i64[4]"), input("i64[]")), 0, "bool[4]");
    EXPECT_ERROR(N1(LessOrEqual, x, input("f32[3]")), "same dtype");
    EXPECT_ERROR(N1(GreaterOrEqual, input("f32[2]"), input("f32[3]")), "do not broadcast");
    EXPECT_TYPE(N1(IsNaN, x), 0, "bool[2,3] NC");
    EXPECT_TYPE(N1(IsInf, input("f32[*]")), 0, "bool[*]");
    EXPECT_ERROR(N1(IsNaN, input("i32[2]")), "expected f32, f16, bf16 or f64");

    ir_node *mod = N1(Mod, input("i32[2,3]"), input("i32[3]"));
    EXPECT_TYPE(mod, 0, "i32[2,3]");
    mod = N1(Mod, x, y);
    EXPECT_ERROR(mod, "Mod: fmod = 0 is defined on integers only; f16 needs fmod = 1");
    ir_set_attr_int(G, mod, "fmod", 1);
    EXPECT_TYPE(mod, 0, "f16[2,3] NC");
    ir_set_attr_int(G, mod, "fmod", 2);
    EXPECT_ERROR(mod, "fmod = 2 is not 0 or 1");

    EXPECT_TYPE(N1(Sum, x), 0, "f16[2,3] NC");
    EXPECT_TYPE(N1(Sum, x, y, input("f16[N,1,1]")), 0, "f16[N,2,3]");
    EXPECT_TYPE(N1(Mean, y, x), 0, "f16[2,3] NC");
    EXPECT_ERROR(N1(Sum, input("i32[2]"), input("i32[2]")), "expected f32, f16, bf16 or f64");
    EXPECT_ERROR(N1(Mean, x, input("f32[3]")), "same dtype");

    static const ir_op float_ops[] = {
        IR_OP_Softsign, IR_OP_Round, IR_OP_Tan,  IR_OP_Asin,  IR_OP_Acos,  IR_OP_Atan,
        IR_OP_Sinh,     IR_OP_Cosh,  IR_OP_Asinh, IR_OP_Acosh, IR_OP_Atanh, IR_OP_Selu,
        IR_OP_Celu,     IR_OP_ThresholdedRelu,
    };
    for (size_t k = 0; k < sizeof float_ops / sizeof float_ops[0]; k++) {
        EXPECT_TYPE(node(float_ops[k], 1, 1, x), 0, "f16[2,3] NC");
        EXPECT_ERROR(node(float_ops[k], 1, 1, input("i32[2]")), "expected f32, f16, bf16 or f64");
    }
    EXPECT_TYPE(N1(Sign, input("i8[5]")), 0, "i8[5]");
    EXPECT_TYPE(N1(Shrink, input("u8[5]")), 0, "u8[5]");
    EXPECT_ERROR(N1(Sign, input("bool[5]")), "Sign");
}

static void test_gather_scatter(void)
{
    ir_value *x = input("f32[N,3,4]"), *idx = input("i64[N,2,4]");
    ir_node *n = N1(GatherElements, x, idx);
    ir_set_attr_int(G, n, "axis", 1);
    EXPECT_TYPE(n, 0, "f32[N,2,4]");
    ir_set_attr_int(G, n, "axis", 3);
    EXPECT_ERROR(n, "GatherElements: axis 3 is out of range for rank 3");
    EXPECT_ERROR(N1(GatherElements, x, input("i64[2,2]")), "indices have rank 2; data has rank 3");
    EXPECT_ERROR(N1(GatherElements, x, input("f32[1,1,1]")), "expected i32 or i64");

    n = N1(ScatterElements, x, idx, input("f32[N,2,4]"));
    EXPECT_TYPE(n, 0, "f32[N,3,4]");
    ir_set_attr_string(G, n, "reduction", "mean");
    EXPECT_ERROR(n, "reduction \"mean\" is not none, add, mul, max or min");
    EXPECT_ERROR(N1(ScatterElements, x, idx, input("f32[N,2,5]")), "differ in shape");
    EXPECT_ERROR(N1(ScatterElements, x, idx, input("f16[N,2,4]")), "same dtype");

    /* GatherND: data[:b] + indices[b:-1] + data[b + depth:] */
    ir_value *data = input("f32[2,3,4,5]");
    EXPECT_TYPE(N1(GatherND, data, input("i64[7,2]")), 0, "f32[7,4,5]");
    EXPECT_TYPE(N1(GatherND, data, input("i64[K,6,4]")), 0, "f32[K,6]");
    n = N1(GatherND, data, input("i64[2,7,1]"));
    ir_set_attr_int(G, n, "batch_dims", 1);
    EXPECT_TYPE(n, 0, "f32[2,7,4,5]");
    EXPECT_TYPE(N1(GatherND, data, input("i64[7,?]")), 0, "f32[*]");
    EXPECT_ERROR(N1(GatherND, data, input("i64[7,5]")), "indices' last dim is 5; it must be in [1, 4]");
    EXPECT_ERROR(N1(GatherND, data, input("i32[7,1]")), "expected i64");
    n = N1(GatherND, data, input("i64[3,1]"));
    ir_set_attr_int(G, n, "batch_dims", 1);
    EXPECT_ERROR(n, "batch dim 0 differs");

    EXPECT_TYPE(N1(ScatterND, data, input("i64[7,2]"), input("f32[7,4,5]")), 0, "f32[2,3,4,5]");
    EXPECT_ERROR(N1(ScatterND, data, input("i64[7,2]"), input("f32[7,5]")),
                 "updates are [7,5]; data [2,3,4,5] and indices [7,2] need indices[:-1] + data[2:]");
}

static void test_onehot_nonzero_topk(void)
{
    ir_value *idx = input("i64[N,3]");
    ir_value *values = literal("f32[2]", 2, (double[]){0, 1});
    EXPECT_TYPE(N1(OneHot, idx, scalar("i64", 10), values), 0, "f32[N,3,10]");
    ir_node *n = N1(OneHot, idx, scalar("f32", 5), values);
    ir_set_attr_int(G, n, "axis", 0);
    EXPECT_TYPE(n, 0, "f32[5,N,3]");
    EXPECT_TYPE(N1(OneHot, idx, input("i64[]"), values), 0, "f32[N,3,?]");
    EXPECT_ERROR(N1(OneHot, idx, scalar("i64", 0), values), "depth 0 is not in [1, 2^40]");
    EXPECT_ERROR(N1(OneHot, idx, scalar("i64", 3), literal("f32[3]", 1, (double[]){0})),
                 "values has 3 elements");

    EXPECT_TYPE(N1(NonZero, input("f32[2,3]")), 0, "i64[2,?]");
    EXPECT_TYPE(N1(NonZero, literal("i32[2,2]", 4, (double[]){1, 0, 3, 4})), 0, "i64[2,3]");
    CHECK(ir_op_info_get(IR_OP_NonZero)->flags & IR_OPF_VALUE_SHAPE);

    ir_value *x = input("f32[2,N,8] NCW");
    n = N1(ArgMax, x);
    ir_set_attr_int(G, n, "axis", -1);
    EXPECT_TYPE(n, 0, "i64[2,N,1] NCW");
    n = N1(ArgMin, x);
    ir_set_attr_int(G, n, "keepdims", 0);
    EXPECT_TYPE(n, 0, "i64[N,8]");
    ir_set_attr_int(G, n, "axis", 5);
    EXPECT_ERROR(n, "ArgMin: axis 5 is out of range");

    n = node(IR_OP_TopK, 2, 2, x, INTS(3));
    EXPECT_TYPE(n, 0, "f32[2,N,3]");
    EXPECT_TYPE(n, 1, "i64[2,N,3]");
    n = node(IR_OP_TopK, 2, 2, x, input("i64[1]"));
    EXPECT_TYPE(n, 1, "i64[2,N,?]");
    EXPECT_ERROR(node(IR_OP_TopK, 2, 2, x, INTS(9)), "k = 9 is above the axis' size 8");
    EXPECT_ERROR(node(IR_OP_TopK, 2, 2, x, INTS(-1)), "k = -1 is negative");
    EXPECT_ERROR(node(IR_OP_TopK, 2, 2, x, INTS(1, 2)), "must be a scalar");
}

static void test_cumsum_depth_space_size(void)
{
    ir_value *x = input("f32[2,N]");
    EXPECT_TYPE(N1(CumSum, x, scalar("i32", 1)), 0, "f32[2,N]");
    EXPECT_TYPE(N1(CumSum, x, input("i64[]")), 0, "f32[2,N]");
    EXPECT_ERROR(N1(CumSum, x, scalar("i64", 2)), "CumSum: axis 2 is out of range for rank 2");
    EXPECT_ERROR(N1(CumSum, x, scalar("f32", 0)), "expected i32 or i64");

    ir_node *n = N1(DepthToSpace, input("f32[1,8,2,N]"));
    ir_set_attr_int(G, n, "blocksize", 2);
    EXPECT_TYPE(n, 0, "f32[1,2,4,N * 2]");
    ir_set_attr_string(G, n, "mode", "XYZ");
    EXPECT_ERROR(n, "mode \"XYZ\" is not \"DCR\" or \"CRD\"");
    n = N1(DepthToSpace, input("f32[1,6,2,2]"));
    ir_set_attr_int(G, n, "blocksize", 2);
    EXPECT_ERROR(n, "dim 1 of [1,6,2,2] is not divisible by 4");
    n = N1(SpaceToDepth, input("f32[1,3,4,6]"));
    ir_set_attr_int(G, n, "blocksize", 2);
    EXPECT_TYPE(n, 0, "f32[1,12,2,3]");
    ir_set_attr_int(G, n, "blocksize", 0);
    EXPECT_ERROR(n, "blocksize 0 is not in [1, 65536]");
    EXPECT_ERROR(N1(SpaceToDepth, input("f32[4,6]")), "rank");

    EXPECT_TYPE(N1(Size, input("f16[N,3]")), 0, "i64[]");
    EXPECT_TYPE(N1(CastLike, input("f32[2,3] NC"), input("i8[1]")), 0, "i8[2,3] NC");
}

static void test_more_reductions(void)
{
    static const ir_op ops[] = {IR_OP_ReduceProd,      IR_OP_ReduceL1,     IR_OP_ReduceL2,
                                IR_OP_ReduceSumSquare, IR_OP_ReduceLogSum, IR_OP_ReduceLogSumExp};
    ir_value *x = input("f32[2,N,4] NCW");
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        ir_node *n = node(ops[k], 1, 2, x, INTS(1));
        EXPECT_TYPE(n, 0, "f32[2,1,4] NCW");
        ir_set_attr_int(G, n, "keepdims", 0);
        EXPECT_TYPE(n, 0, "f32[2,4]");
        EXPECT_ERROR(node(ops[k], 1, 2, x, INTS(3)), "axis 3 is out of range for rank 3");
    }
}

static void test_integer_quantized(void)
{
    ir_node *n = node(IR_OP_DynamicQuantizeLinear, 3, 1, input("f32[N,4]"));
    EXPECT_TYPE(n, 0, "u8[N,4]");
    EXPECT_TYPE(n, 1, "f32[]");
    EXPECT_TYPE(n, 2, "u8[]");
    EXPECT_ERROR(node(IR_OP_DynamicQuantizeLinear, 3, 1, input("f16[4]")), "expected f32");

    ir_value *a = input("u8[B,3,4]"), *b = input("i8[4,5]");
    EXPECT_TYPE(N1(MatMulInteger, a, b), 0, "i32[B,3,5]");
    EXPECT_TYPE(N1(MatMulInteger, a, b, literal("u8[3]", 1, (double[]){1}), scalar("i8", 0)), 0,
                "i32[B,3,5]");
    EXPECT_TYPE(N1(MatMulInteger, a, b, NULL, literal("i8[5]", 1, (double[]){1})), 0,
                "i32[B,3,5]");
    EXPECT_ERROR(N1(MatMulInteger, a, b, literal("u8[4]", 1, (double[]){1})),
                 "a_zero_point 'c");
    EXPECT_ERROR(N1(MatMulInteger, a, b, scalar("i8", 0)), "same dtype");
    EXPECT_ERROR(N1(MatMulInteger, input("f32[3,4]"), b), "expected i8 or u8");
    EXPECT_ERROR(N1(MatMulInteger, a, input("i8[5,5]")), "inner dimensions differ");

    ir_value *x = input("u8[1,4,8,8] NCHW"), *w = input("u8[6,2,3,3]");
    n = N1(ConvInteger, x, w, scalar("u8", 1), literal("u8[6]", 1, (double[]){0}));
    ir_set_attr_int(G, n, "group", 2);
    SET_INTS(n, "pads", 1, 1, 1, 1);
    EXPECT_TYPE(n, 0, "i32[1,6,8,8] NCHW");
    n = N1(ConvInteger, x, w);
    EXPECT_ERROR(n, "input has 4 channels but the weight expects 2 (group 1)");
    EXPECT_ERROR(N1(ConvInteger, x, input("u8[6,4,3]")), "the weight has rank 3");

    ir_value *s = scalar("f32", 0.1), *zu = scalar("u8", 3), *zi = scalar("i8", 0);
    n = node(IR_OP_QLinearMatMul, 1, 8, a, s, zu, b, literal("f32[5]", 1, (double[]){0.5}),
             literal("i8[5]", 1, (double[]){0}), s, zi);
    EXPECT_TYPE(n, 0, "i8[B,3,5]");
    n = node(IR_OP_QLinearMatMul, 1, 8, a, s, zi, b, s, zi, s, zi);
    EXPECT_ERROR(n, "same dtype");
    n = node(IR_OP_QLinearMatMul, 1, 8, a, literal("f32[4]", 1, (double[]){1}), zu, b, s, zi, s,
             zu);
    EXPECT_ERROR(n, "a_scale 'c");

    n = node(IR_OP_QLinearConv, 1, 9, x, s, zu, input("i8[6,4,3,3]"),
             literal("f32[6]", 1, (double[]){0.5}), zi, s, zu, input("i32[6]"));
    EXPECT_TYPE(n, 0, "u8[1,6,6,6] NCHW");
    n = node(IR_OP_QLinearConv, 1, 9, x, s, zu, input("i8[6,4,3,3]"), s, zi, s, zu,
             input("i32[5]"));
    EXPECT_ERROR(n, "the bias 'x");
    n = node(IR_OP_QLinearConv, 1, 8, x, s, zu, input("i8[6,4,3,3]"), s, zi, s,
             literal("u8[2]", 1, (double[]){0}));
    EXPECT_ERROR(n, "must be a scalar");

    ir_value *c = input("f32[3]");
    EXPECT_TYPE(N1(InstanceNormalization, input("f32[N,3,H,W] NCHW"), c, c), 0,
                "f32[N,3,H,W] NCHW");
    EXPECT_ERROR(N1(InstanceNormalization, input("f32[2,4,5]"), c, c),
                 "scale has 3 values; the input has 4 channels");
    EXPECT_ERROR(N1(InstanceNormalization, input("f32[2,3]"), c, c), "rank");
    EXPECT_ERROR(N1(InstanceNormalization, input("i32[2,3,4]"), c, c), "expected f32");
}

static void test_resize(void)
{
    ir_value *x = input("f32[N,3,4,6] NCHW");
    ir_value *scales = literal("f32[4]", 4, (double[]){1, 1, 2, 0.5});
    ir_node *n = N1(Resize, x, NULL, scales);
    EXPECT_TYPE(n, 0, "f32[N,3,8,3] NCHW");
    n = N1(Resize, x, literal("f32[0]", 0, NULL), scales); /* opset 11: an empty roi */
    EXPECT_TYPE(n, 0, "f32[N,3,8,3] NCHW");
    EXPECT_TYPE(N1(Resize, x, NULL, literal("f32[0]", 0, NULL), INTS(1, 3, 5, 5)), 0,
                "f32[1,3,5,5] NCHW");
    EXPECT_TYPE(N1(Resize, x, NULL, input("f32[4]")), 0, "f32[?,?,?,?] NCHW");
    /* axes (opset 18) and keep_aspect_ratio_policy */
    n = N1(Resize, x, NULL, NULL, INTS(8, 8));
    SET_INTS(n, "axes", 2, -1);
    EXPECT_TYPE(n, 0, "f32[N,3,8,8] NCHW");
    ir_set_attr_string(G, n, "keep_aspect_ratio_policy", "not_larger");
    EXPECT_TYPE(n, 0, "f32[N,3,5,8] NCHW"); /* scale min(8/4, 8/6): 4 * 4/3 rounds to 5 */
    ir_set_attr_string(G, n, "keep_aspect_ratio_policy", "not_smaller");
    EXPECT_TYPE(n, 0, "f32[N,3,8,12] NCHW");
    /* tf_crop_and_resize: the roi's extent */
    n = N1(Resize, input("f32[1,1,10,10]"), literal("f32[8]", 8, (double[]){0, 0, 0.2, 0.2, 1, 1, 0.8, 0.6}),
           literal("f32[4]", 4, (double[]){1, 1, 1, 2}));
    ir_set_attr_string(G, n, "coordinate_transformation_mode", "tf_crop_and_resize");
    EXPECT_TYPE(n, 0, "f32[1,1,6,8]");

    EXPECT_ERROR(N1(Resize, x, NULL, scales, INTS(1, 3, 5, 5)),
                 "Resize: exactly one of scales and sizes must be given");
    EXPECT_ERROR(N1(Resize, x), "exactly one of scales and sizes");
    EXPECT_ERROR(N1(Resize, x, NULL, literal("f32[2]", 2, (double[]){1, 2})),
                 "scales holds 2 values for 4 axes");
    EXPECT_ERROR(N1(Resize, x, NULL, literal("f32[4]", 4, (double[]){1, 1, 0, 1})),
                 "scale 0 for axis 2 is not positive");
    n = N1(Resize, x, NULL, scales);
    ir_set_attr_string(G, n, "mode", "area");
    EXPECT_ERROR(n, "mode \"area\" is not nearest, linear or cubic");
    n = N1(Resize, x, NULL, scales);
    ir_set_attr_string(G, n, "mode", "linear");
    ir_set_attr_int(G, n, "antialias", 1);
    EXPECT_ERROR(n, "antialias = 1 (a widened filter when downsampling) is not supported");
    n = N1(Resize, x, NULL, scales);
    ir_set_attr_string(G, n, "coordinate_transformation_mode", "half");
    EXPECT_ERROR(n, "coordinate_transformation_mode \"half\"");
    CHECK(ir_op_info_get(IR_OP_Resize)->flags & IR_OPF_VALUE_SHAPE);
}

static void test_einsum(void)
{
    ir_value *a = input("f32[B,3,4]"), *b = input("f32[4,5]");
    ir_node *n = N1(Einsum, a, b);
    ir_set_attr_string(G, n, "equation", "bij,jk->bik");
    EXPECT_TYPE(n, 0, "f32[B,3,5]");
    ir_set_attr_string(G, n, "equation", "...ij,jk");
    EXPECT_TYPE(n, 0, "f32[B,3,5]"); /* implicit: the ellipsis, then i and k */
    ir_set_attr_string(G, n, "equation", "bij,jk->kb");
    EXPECT_TYPE(n, 0, "f32[5,B]");
    ir_set_attr_string(G, n, "equation", "bij,kk->i");
    EXPECT_ERROR(n, "Einsum: equation \"bij,kk->i\": a dim is 4 in one place and 5 in another");
    ir_set_attr_string(G, n, "equation", "ij,jk->ik");
    EXPECT_ERROR(n, "has a term whose letters do not match its input's rank");
    ir_set_attr_string(G, n, "equation", "bij->bi");
    EXPECT_ERROR(n, "has fewer terms than inputs");
    ir_set_attr_string(G, n, "equation", "bij,jk->bix");
    EXPECT_ERROR(n, "has an output letter that no input has");
    ir_set_attr_string(G, n, "equation", "bij,jk->bii");
    EXPECT_ERROR(n, "has an output letter written twice");
    ir_set_attr_string(G, n, "equation", "b.ij,jk");
    EXPECT_ERROR(n, "has a '.' that is not one '...'");
    ir_set_attr_string(G, n, "equation", "b1j,jk");
    EXPECT_ERROR(n, "has a character other than a letter");
    n = N1(Einsum, input("f32[1,2,3]"), input("f32[4,3,3]"));
    ir_set_attr_string(G, n, "equation", "...ij,...jk->...ik");
    EXPECT_TYPE(n, 0, "f32[4,2,3]"); /* the ellipsis broadcasts */
    n = N1(Einsum, a, input("i32[4,5]"));
    ir_set_attr_string(G, n, "equation", "bij,jk");
    EXPECT_ERROR(n, "same dtype");
}

static void test_random(void)
{
    ir_node *n = node(IR_OP_RandomUniform, 1, 0);
    SET_INTS(n, "shape", 2, 3);
    EXPECT_TYPE(n, 0, "f32[2,3]");
    ir_set_attr_int(G, n, "dtype", 10);
    EXPECT_TYPE(n, 0, "f16[2,3]");
    ir_set_attr_int(G, n, "dtype", 7);
    EXPECT_ERROR(n, "RandomUniform: dtype 7 is not f32 (1), f16 (10) or bf16 (16)");
    ir_set_attr_int(G, n, "dtype", 1);
    ir_set_attr_float(G, n, "low", 2);
    EXPECT_ERROR(n, "low 2 and high 1 are not a finite range");
    n = node(IR_OP_RandomUniform, 1, 0);
    SET_INTS(n, "shape", 2, -3);
    EXPECT_ERROR(n, "shape[1] = -3 is negative");
    EXPECT_TYPE(N1(RandomUniformLike, input("bf16[N,4] NC")), 0, "bf16[N,4]");
    CHECK(ir_op_info_get(IR_OP_RandomUniform)->flags & IR_OPF_RANDOM);
    CHECK(ir_op_info_get(IR_OP_RandomUniformLike)->flags & IR_OPF_RANDOM);
    CHECK(!(ir_op_info_get(IR_OP_Dropout)->flags & IR_OPF_RANDOM));
}

static void test_logsoftmax_losses(void)
{
    ir_value *x = input("f16[N,5,7] NCW");
    EXPECT_TYPE(N1(LogSoftmax, x), 0, "f16[N,5,7] NCW");
    ir_node *n = N1(Hardmax, x);
    ir_set_attr_int(G, n, "axis", -4);
    EXPECT_ERROR(n, "Hardmax: axis -4 is out of range for rank 3");
    EXPECT_ERROR(N1(LogSoftmax, input("i32[3]")), "expected f32, f16, bf16 or f64");

    ir_value *t = input("i64[N,7]"), *w = input("f16[5]");
    n = N1(NegativeLogLikelihoodLoss, x, t, w);
    EXPECT_TYPE(n, 0, "f16[]");
    ir_set_attr_string(G, n, "reduction", "none");
    EXPECT_TYPE(n, 0, "f16[N,7]");
    ir_set_attr_string(G, n, "reduction", "max");
    EXPECT_ERROR(n, "reduction \"max\" is not none, sum or mean");
    EXPECT_ERROR(N1(NegativeLogLikelihoodLoss, x, input("i64[N,8]")),
                 "target [N,8] does not fit input [N,5,7]");
    EXPECT_ERROR(N1(NegativeLogLikelihoodLoss, x, t, input("f16[4]")),
                 "weight has 4 values; the input has 5 classes");
    EXPECT_ERROR(N1(NegativeLogLikelihoodLoss, x, input("f32[N,7]")), "expected i32 or i64");
    n = node(IR_OP_SoftmaxCrossEntropyLoss, 2, 2, x, t);
    EXPECT_TYPE(n, 0, "f16[]");
    EXPECT_TYPE(n, 1, "f16[N,5,7] NCW");
}

static void test_more_nn_and_indexing(void)
{
    EXPECT_TYPE(N1(GlobalMaxPool, input("f32[N,8,5,5] NCHW")), 0, "f32[N,8,1,1] NCHW");
    ir_node *n = N1(LRN, input("f32[1,8,5,5]"));
    ir_set_attr_int(G, n, "size", 3);
    EXPECT_TYPE(n, 0, "f32[1,8,5,5]");
    ir_set_attr_int(G, n, "size", 0);
    EXPECT_ERROR(n, "LRN: size 0 is not a window of at least 1");
    EXPECT_TYPE(N1(MeanVarianceNormalization, input("f32[2,3,4,5]")), 0, "f32[2,3,4,5]");
    EXPECT_ERROR(N1(MeanVarianceNormalization, input("f32[2,3]")), "axis 2 is out of range");
    EXPECT_TYPE(N1(Det, input("f32[B,3,3]")), 0, "f32[B]");
    EXPECT_ERROR(N1(Det, input("f32[3,4]")), "[3,4] is not a stack of square matrices");
    n = N1(BitShift, input("u8[4]"), input("u8[]"));
    ir_set_attr_string(G, n, "direction", "LEFT");
    EXPECT_TYPE(n, 0, "u8[4]");
    ir_set_attr_string(G, n, "direction", "UP");
    EXPECT_ERROR(n, "direction \"UP\" is not \"LEFT\" or \"RIGHT\"");

    n = N1(EyeLike, input("i32[3,4]"));
    EXPECT_TYPE(n, 0, "i32[3,4]");
    ir_set_attr_int(G, n, "dtype", 1);
    EXPECT_TYPE(n, 0, "f32[3,4]");
    EXPECT_ERROR(N1(EyeLike, input("f32[3]")), "rank");
    ir_value *x = input("f32[T,B,2]");
    EXPECT_TYPE(N1(ReverseSequence, x, input("i64[B]")), 0, "f32[T,B,2]");
    EXPECT_ERROR(N1(ReverseSequence, input("f32[3,4]"), input("i64[3]")),
                 "sequence_lens has 3 values for a batch of 4");
    n = N1(ReverseSequence, x, input("i64[B]"));
    ir_set_attr_int(G, n, "time_axis", 2);
    EXPECT_ERROR(n, "batch_axis 1 and time_axis 2 must be 0 and 1");
    ir_value *cond = literal("bool[3]", 3, (double[]){1, 0, 1});
    n = N1(Compress, input("f32[2,3]"), cond);
    ir_set_attr_int(G, n, "axis", 1);
    EXPECT_TYPE(n, 0, "f32[2,2]");
    EXPECT_TYPE(N1(Compress, input("f32[2,3]"), cond), 0, "f32[2]");
    EXPECT_TYPE(N1(Compress, input("f32[2,3]"), input("bool[3]")), 0, "f32[?]");
    CHECK(ir_op_info_get(IR_OP_Compress)->flags & IR_OPF_VALUE_SHAPE);
}

static void test_windows_groupnorm_bitwise(void)
{
    static const ir_op windows[] = {IR_OP_HannWindow, IR_OP_HammingWindow, IR_OP_BlackmanWindow};
    for (size_t k = 0; k < 3; k++) {
        EXPECT_TYPE(node(windows[k], 1, 1, scalar("i64", 10)), 0, "f32[10]");
        EXPECT_TYPE(node(windows[k], 1, 1, input("i32[]")), 0, "f32[?]");
        EXPECT_ERROR(node(windows[k], 1, 1, scalar("i64", -1)), "size -1 is not in [0, 2^40]");
    }
    ir_node *n = N1(HannWindow, scalar("i32", 4));
    ir_set_attr_int(G, n, "output_datatype", 10);
    EXPECT_TYPE(n, 0, "f16[4]");
    ir_set_attr_int(G, n, "output_datatype", 9);
    EXPECT_ERROR(n, "output_datatype = 9 is not a numeric type the IR holds");

    ir_value *x = input("f32[N,6,4] NCW"), *c = input("f32[6]");
    n = N1(GroupNormalization, x, c, c);
    ir_set_attr_int(G, n, "num_groups", 3);
    EXPECT_TYPE(n, 0, "f32[N,6,4] NCW");
    ir_set_attr_int(G, n, "num_groups", 4);
    EXPECT_ERROR(n, "GroupNormalization: 6 channels do not divide into 4 groups");
    n = N1(GroupNormalization, x, input("f32[3]"), input("f32[3]"));
    ir_set_attr_int(G, n, "num_groups", 3);
    EXPECT_ERROR(n, "scale has 3 values; the input has 6 channels");

    EXPECT_TYPE(N1(Mish, x), 0, "f32[N,6,4] NCW");
    EXPECT_TYPE(N1(BitwiseAnd, input("i32[2,3]"), input("i32[3]")), 0, "i32[2,3]");
    EXPECT_TYPE(N1(BitwiseOr, input("u8[2]"), input("u8[2]")), 0, "u8[2]");
    EXPECT_TYPE(N1(BitwiseXor, input("i64[2]"), input("i64[]")), 0, "i64[2]");
    EXPECT_TYPE(N1(BitwiseNot, input("i8[2]")), 0, "i8[2]");
    EXPECT_ERROR(N1(BitwiseNot, input("bool[2]")), "expected i8, u8, i32, i64, i16, u16, u32 or u64");
}

static void test_recurrent(void)
{
    ir_value *x = input("f32[S,B,3]"), *w = input("f32[2,20,3]"), *r = input("f32[2,20,5]");
    ir_node *n = node(IR_OP_LSTM, 3, 3, x, w, r);
    ir_set_attr_string(G, n, "direction", "bidirectional");
    EXPECT_TYPE(n, 0, "f32[S,2,B,5]");
    EXPECT_TYPE(n, 1, "f32[2,B,5]");
    EXPECT_TYPE(n, 2, "f32[2,B,5]");
    ir_set_attr_string(G, n, "direction", "forward");
    EXPECT_ERROR(n, "LSTM: W 'x");
    n = node(IR_OP_GRU, 2, 3, input("f32[B,S,3]"), input("f32[1,15,3]"), input("f32[1,15,5]"));
    ir_set_attr_int(G, n, "layout", 1);
    EXPECT_TYPE(n, 0, "f32[B,S,1,5]");
    EXPECT_TYPE(n, 1, "f32[B,1,5]");
    n = node(IR_OP_RNN, 2, 3, x, input("f32[1,5,3]"), input("f32[1,5,5]"));
    ir_set_attr_int(G, n, "hidden_size", 4);
    EXPECT_ERROR(n, "RNN: W 'x");
    ir_set_attr_int(G, n, "hidden_size", 5);
    EXPECT_TYPE(n, 1, "f32[1,B,5]");
    ir_set_attr_string(G, n, "direction", "sideways");
    EXPECT_ERROR(n, "direction \"sideways\" is not forward, reverse or bidirectional");
    n = node(IR_OP_RNN, 2, 5, x, input("f32[1,5,3]"), input("f32[1,5,5]"), NULL, input("i64[B]"));
    EXPECT_ERROR(n, "expected i32");
}

static void test_grid_sample(void)
{
    ir_node *n = N1(GridSample, input("f32[N,3,8,8] NCHW"), input("f32[N,4,5,2]"));
    EXPECT_TYPE(n, 0, "f32[N,3,4,5] NCHW");
    ir_set_attr_string(G, n, "mode", "area");
    EXPECT_ERROR(n, "GridSample: mode \"area\" is not bilinear, nearest or bicubic");
    n = N1(GridSample, input("f32[1,3,8,8]"), input("f32[1,4,5,3]"));
    EXPECT_ERROR(n, "grid [1,4,5,3] does not fit X [1,3,8,8]");
    n = N1(GridSample, input("f32[1,3,8,8]"), input("f32[1,4,5,2]"));
    ir_set_attr_string(G, n, "padding_mode", "wrap");
    EXPECT_ERROR(n, "padding_mode \"wrap\" is not zeros, border or reflection");
}

static void test_unpool_dft(void)
{
    ir_node *n = N1(MaxUnpool, input("f32[1,3,2,2] NCHW"), input("i64[1,3,2,2]"));
    SET_INTS(n, "kernel_shape", 2, 2);
    SET_INTS(n, "strides", 2, 2);
    EXPECT_TYPE(n, 0, "f32[1,3,4,4] NCHW");
    SET_INTS(n, "pads", 1, 0, 0, 0);
    EXPECT_TYPE(n, 0, "f32[1,3,3,4] NCHW");
    SET_INTS(n, "kernel_shape", 2);
    EXPECT_ERROR(n, "MaxUnpool: kernel_shape, strides or pads do not fit 2 spatial dims");
    n = N1(MaxUnpool, input("f32[1,3,2,2]"), input("i64[1,3,2,2]"), INTS(1, 3, 5, 5));
    SET_INTS(n, "kernel_shape", 2, 2);
    EXPECT_TYPE(n, 0, "f32[1,3,5,5]");

    ir_value *x = input("f32[B,10,8,1]");
    n = N1(DFT, x);
    EXPECT_TYPE(n, 0, "f32[B,10,8,2]");
    ir_set_attr_int(G, n, "onesided", 1);
    EXPECT_TYPE(n, 0, "f32[B,6,8,2]");
    n = N1(DFT, x, scalar("i64", 16));
    ir_set_attr_int(G, n, "axis", 2);
    EXPECT_TYPE(n, 0, "f32[B,10,16,2]");
    ir_set_attr_int(G, n, "axis", 3);
    EXPECT_ERROR(n, "DFT: axis 3 is out of range for rank 3");
    EXPECT_ERROR(N1(DFT, input("f32[4,3]")), "the last dim is 3; it is 1 (real) or 2 (complex)");
}

/* Runs last: every op of ops.def went through some test above. */
static void test_every_op_covered(void)
{
    for (size_t k = 0; k < sizeof onnx_ops / sizeof onnx_ops[0]; k++) {
        if (!covered[onnx_ops[k]]) {
            fprintf(stderr, "no inference test ran op %s\n", ir_op_name(onnx_ops[k]));
            unit_current_failed = 1;
        }
    }
}

/* Dim expressions (ir/dimexpr.c): exact arithmetic, one interned dim per polynomial, evaluation
 * and solving for one unbound name. */
static void test_dim_exprs(void)
{
    int64_t n = ir_symbol(G, "N", 1), s = ir_symbol(G, "S", 1);
    int64_t ns12 = ir_dim_product(G, ir_dim_product(G, n, 12), s);
    int64_t sn12 = ir_dim_product(G, s, ir_dim_product(G, 3, ir_dim_product(G, n, 4)));
    CHECK_INT(ns12, sn12); /* the same polynomial, computed two ways: the same dim */
    CHECK_STR(ir_symbol_name(G, ns12), "N * S * 12");
    CHECK_INT(ir_dim_quotient(G, ns12, ir_dim_product(G, n, 12)), s);
    CHECK_INT(ir_dim_quotient(G, ns12, 5), IR_DIM_UNKNOWN); /* not exact */
    CHECK_INT(ir_dim_quotient(G, s, 2), IR_DIM_UNKNOWN);
    int64_t s1 = ir_dim_sum(G, s, 1), two_s2 = ir_dim_product(G, s1, 2);
    CHECK_STR(ir_symbol_name(G, two_s2), "S * 2 + 2");
    CHECK_INT(ir_dim_quotient(G, two_s2, s1), 2);
    CHECK_INT(ir_dim_difference(G, s1, 1), s);
    CHECK_INT(ir_dim_difference(G, s, s), 0);
    CHECK_INT(ir_dim_difference(G, 2, 3), IR_DIM_UNKNOWN);
    CHECK_INT(ir_dim_difference(G, 0, s), IR_DIM_UNKNOWN); /* never a size */
    CHECK_STR(ir_symbol_name(G, ir_dim_difference(G, ir_dim_sum(G, n, 4), s)), "N + 4 - S");
    CHECK_INT(ir_dim_sum(G, IR_DIM_UNKNOWN, s), IR_DIM_UNKNOWN);
    int64_t bound[2] = {-1, -1};
    int64_t v = 0;
    uint32_t solved = 9;
    CHECK(!ir_dim_eval(G, s1, bound, &v));
    CHECK(ir_dim_solve(G, two_s2, 10, bound, &solved)); /* S * 2 + 2 = 10 */
    CHECK_INT(solved, ir_dim_symbol(s));
    CHECK(ir_dim_eval(G, s1, bound, &v) && v == 5);
    CHECK(!ir_dim_solve(G, ns12, 7, bound, &solved)); /* 12 * S * N = 7: no whole N */
    CHECK(ir_dim_solve(G, ns12, 96, bound, &solved) && bound[ir_dim_symbol(n)] == 2); /* S is 4 */
}

int main(void)
{
    TEST(test_unary);
    TEST(test_clip_cast_dropout);
    TEST(test_broadcast);
    TEST(test_conv);
    TEST(test_conv_transpose);
    TEST(test_pool);
    TEST(test_window_attrs);
    TEST(test_matmul_gemm);
    TEST(test_norms);
    TEST(test_quant);
    TEST(test_reduce);
    TEST(test_transpose_flatten);
    TEST(test_reshape);
    TEST(test_squeeze_unsqueeze);
    TEST(test_concat_split);
    TEST(test_slice);
    TEST(test_expand_tile_gather);
    TEST(test_pad);
    TEST(test_generators);
    TEST(test_error_location);
    TEST(test_arity_and_overflow);
    TEST(test_catalog_rows);
    TEST(test_catalog_defaults);
    TEST(test_logic_and_math);
    TEST(test_gather_scatter);
    TEST(test_onehot_nonzero_topk);
    TEST(test_cumsum_depth_space_size);
    TEST(test_more_reductions);
    TEST(test_integer_quantized);
    TEST(test_resize);
    TEST(test_einsum);
    TEST(test_random);
    TEST(test_logsoftmax_losses);
    TEST(test_more_nn_and_indexing);
    TEST(test_windows_groupnorm_bitwise);
    TEST(test_recurrent);
    TEST(test_grid_sample);
    TEST(test_unpool_dft);
    TEST(test_dim_exprs);
    TEST(test_every_op_covered);
    return unit_finish();
}
