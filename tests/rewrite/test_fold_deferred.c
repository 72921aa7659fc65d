/* Folded weights computed when read (ir_const_set_scaled, docs/onnx.md "Weights"): fold_bn's
 * weight is left as its source and its factors where no result can be infinite, and every way of
 * reading it (ir_const_read_at a range at a time, as export writes it; ir_const_data, as every
 * other reader) gives, byte for byte, the double path's bytes (each element read into a double,
 * multiplied by its channel's factor, stored by rw_const_store), for every float dtype and weight
 * layout, from memory and from a mapped file (read by pread). Where the bound does not hold
 * (grouped ConvTranspose, a large factor), the weight is computed at once as before. */
#include "rewrite/internal.h"
#include "tests/rewrite/rwkit.h"
#include "tests/unit.h"

#include "base/half.h"
#include "ir/infer_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static const char fold_rules[] = "rule conv_bn: Conv > BN => Conv[fold_bn]\n"
                                 "rule convt_bn: ConvTranspose > BN => ConvTranspose[fold_bn]\n"
                                 "rule matmul_bn: MatMul(_, @w:const) > BN => Gemm[fold_bn]\n";

typedef struct {
    const char *op;    /* the producer: Conv, ConvTranspose or MatMul */
    const char *x;     /* the input's dims */
    int64_t d0, d1, k; /* the weight's dims: [d0, d1, k, 1] (MatMul: [d0, d1]) */
    int64_t group;
    int channels;      /* BN's */
    const char *w;     /* the weight's initializer */
    const char *gamma; /* BN's scale's */
    bool deferred;     /* computed when read (in f16, when deferred_f16) */
    bool deferred_f16;
} layout;

static const layout layouts[] = {
    {"Conv", "[1,4,6,6]", 8, 4, 3, 1, 8, "random(seed=1)", "random(seed=3, lo=0.5, hi=1.5)", true,
     true},
    {"Conv", "[1,4,6,6]", 8, 2, 3, 2, 8, "random(seed=1)", "random(seed=3, lo=-1.5, hi=1.5)", true,
     true},
    {"ConvTranspose", "[1,4,6,1]", 4, 6, 3, 1, 6, "random(seed=1)",
     "random(seed=3, lo=0.5, hi=1.5)", true, true},
    {"MatMul", "[3,4]", 4, 6, 0, 1, 6, "random(seed=1)", "random(seed=3, lo=0.5, hi=1.5)", true,
     true},
    /* a grouped ConvTranspose's channel is no (i / inner) % channels: computed at once */
    {"ConvTranspose", "[1,4,6,1]", 4, 3, 3, 2, 6, "random(seed=1)",
     "random(seed=3, lo=0.5, hi=1.5)", false, false},
    /* a large factor on weights below 1: every result fits in every dtype, and the bound on the
     * largest weight says so */
    {"Conv", "[1,4,6,1]", 4, 4, 1, 1, 4, "random(seed=1)", "[300, 1, 1, 1]", true, true},
    /* the bound fails in f16 (30000 times a factor above 2.9 overflows) though no result does
     * (the weight of the large factor is small): computed at once, and accepted */
    {"Conv", "[1,2,6,1]", 2, 2, 1, 1, 2, "[0.001, 0.002, 30000, 0.003]", "[2.9, 0.001]", true,
     false},
};

/* The BN channel of element i of the weight (rewrite/action_fold_bn.c's layouts). */
static int64_t channel(const layout *l, int64_t i)
{
    if (strcmp(l->op, "MatMul") == 0)
        return i % l->d1;
    int64_t a = i / (l->d1 * l->k), b = i / l->k % l->d1;
    return strcmp(l->op, "Conv") == 0 ? a : a / (l->d0 / l->group) * l->d1 + b;
}

static const char *dtype_names[] = {"f32", "f16", "bf16", "f64"};
static const ir_dtype dtypes[] = {IR_F32, IR_F16, IR_BF16, IR_F64};

static char *graph_text(const layout *l, const char *dt)
{
    char *text = malloc(4096), w[64];
    FR_CHECK(text != NULL);
    if (strcmp(l->op, "MatMul") == 0)
        snprintf(w, sizeof w, "[%lld,%lld]", (long long)l->d0, (long long)l->d1);
    else
        snprintf(w, sizeof w, "[%lld,%lld,%lld,1]", (long long)l->d0, (long long)l->d1,
                 (long long)l->k);
    char attrs[128] = "";
    if (strcmp(l->op, "MatMul") != 0)
        snprintf(attrs, sizeof attrs, "{kernel_shape=[%lld,1], group=%lld}", (long long)l->k,
                 (long long)l->group);
    snprintf(text, 4096,
             "graph g {\n  input x : %s%s\n  const w : %s%s = %s\n"
             "  const s : %s[%d] = %s\n  const t : %s[%d] = random(seed=4)\n"
             "  const m : %s[%d] = random(seed=5)\n"
             "  const v : %s[%d] = random(seed=6, lo=0.5, hi=1.5)\n"
             "  c = %s(x, w) %s\n  y = BatchNormalization(c, s, t, m, v) {epsilon=0.001}\n"
             "  output y\n}\n",
             dt, l->x, dt, w, l->w, dt, l->channels, l->gamma, dt, l->channels, dt, l->channels, dt,
             l->channels, l->op, attrs);
    return text;
}

/* The double path's bytes of the folded weight: W's elements as doubles, times their channel's
 * factor gamma / sqrt(var + epsilon), stored by rw_const_store. */
static void *expected_weight(ir_graph *g, const layout *l, size_t *nbytes)
{
    ir_value *w = ir_find_value(g, "w"), *s = ir_find_value(g, "s"), *v = ir_find_value(g, "v");
    ir_dtype dt = w->type->dtype;
    const void *wd = ir_const_data(g, w, NULL), *sd = ir_const_data(g, s, NULL),
               *vd = ir_const_data(g, v, NULL);
    FR_CHECK(wd && sd && vd);
    int64_t n;
    FR_CHECK(ir_type_numel(w->type, &n));
    double eps = ir_get_float(ir_find_value(g, "y")->producer, "epsilon");
    double *x = malloc((size_t)n * sizeof *x);
    FR_CHECK(x != NULL);
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = channel(l, i);
        double factor = ir_const_element(sd, dt, ch) / sqrt(ir_const_element(vd, dt, ch) + eps);
        x[i] = ir_const_element(wd, dt, i) * factor;
    }
    ir_value value = {.kind = IR_VALUE_CONST, .type = w->type};
    rw_newconst c = {.stem = "w", .value = &value};
    char why[512] = "";
    CHECK(rw_const_store(&c, x, n, "fold_bn", why));
    free(x);
    *nbytes = c.nbytes;
    return c.data;
}

/* w's bytes moved into a file, mapped at an odd offset (as raw_data lies in an .onnx) and adopted
 * with its descriptor: the fold reads them with pread. */
static void map_weight(ir_graph *g, const char *path)
{
    ir_value *w = ir_find_value(g, "w");
    int64_t size;
    FR_CHECK(ir_type_nbytes(w->type, &size));
    size_t nbytes = (size_t)size;
    const void *data = ir_const_data(g, w, NULL);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    FR_CHECK(fd >= 0 && write(fd, "abc", 3) == 3 && write(fd, data, nbytes) == (ssize_t)nbytes);
    void *base = mmap(NULL, nbytes + 3, PROT_READ, MAP_PRIVATE, fd, 0);
    FR_CHECK(base != MAP_FAILED);
    ir_const_adopt_mapped_file(g, base, nbytes + 3, fd, path);
    ir_const_set_mapped(g, w, (const char *)base + 3, nbytes);
}

static void check_layout(const layout *l, size_t d, bool mapped)
{
    char *text = graph_text(l, dtype_names[d]);
    gk_graph *ref = gk_parse(text), *t = gk_parse(text);
    size_t nbytes;
    void *want = expected_weight(ref->g, l, &nbytes);
    char path[] = "/tmp/fold_deferred_XXXXXX";
    if (mapped) {
        int tmp = mkstemp(path);
        FR_CHECK(tmp >= 0);
        close(tmp);
        map_weight(t->g, path);
    }
    rk_rules r = rules_from(fold_rules);
    rw_report rep = apply(t, &r);
    CHECK_INT(rep.after.nodes, 1);
    ir_value *folded = ir_find_value(t->g, "y")->producer->inputs[1];
    bool deferred = dtypes[d] == IR_F16 ? l->deferred_f16 : l->deferred;
    CHECK_INT(ir_const_is_deferred(folded), deferred);
    CHECK_INT(ir_const_scaled_get(folded) != NULL, deferred);
    /* by ranges of odd sizes, as a writer streams it; then whole */
    size_t size = ir_dtype_size(dtypes[d]);
    unsigned char *got = malloc(nbytes);
    FR_CHECK(got != NULL);
    for (size_t at = 0, step = 7 * size; at < nbytes; at += step) {
        size_t n = nbytes - at < step ? nbytes - at : step;
        CHECK(ir_const_read_at(t->g, folded, at, n, got + at, NULL));
    }
    CHECK(memcmp(got, want, nbytes) == 0);
    const void *whole = ir_const_data(t->g, folded, NULL);
    CHECK(whole && memcmp(whole, want, nbytes) == 0);
    CHECK(!ir_const_is_deferred(folded));
    if (dtypes[d] == IR_F32 || dtypes[d] == IR_F64) { /* and the layouts are the kernels' */
        double err = worst_error(ref, t);
        CHECK(err < 1e-4);
        if (!(err < 1e-4))
            fprintf(stderr, "%s %s (layout %zu): worst relative error %g\n", l->op, dtype_names[d],
                    (size_t)(l - layouts), err);
    }
    if (mapped)
        unlink(path);
    free(got);
    free(want);
    rw_report_free(&rep);
    rules_free(&r);
    gk_free(ref);
    gk_free(t);
    free(text);
}

static void test_fold_bn_deferred(void)
{
    for (size_t i = 0; i < FR_COUNT_OF(layouts); i++)
        for (size_t d = 0; d < FR_COUNT_OF(dtypes); d++)
            for (int mapped = 0; mapped < 2; mapped++)
                check_layout(&layouts[i], d, mapped);
}

/* A row-assembled constant read by ranges that start and end inside parts and rows. */
static void test_rows_read_at(void)
{
    gk_graph *t = gk_parse("graph g {\n  const a : f32[3,2] = [1, 2, 3, 4, 5, 6]\n"
                           "  const b : f32[3,1] = [7, 8, 9]\n  const c : f32[3,3] = 0\n"
                           "  output c\n}\n");
    ir_graph *g = t->g;
    const void *a = ir_const_data(g, ir_find_value(g, "a"), NULL),
               *b = ir_const_data(g, ir_find_value(g, "b"), NULL);
    ir_const_part parts[] = {{a, 8}, {b, 4}};
    ir_value *c = ir_find_value(g, "c");
    ir_const_set_rows(g, c, 3, parts, 2);
    CHECK(ir_const_is_deferred(c));
    CHECK(ir_const_scaled_get(c) == NULL);
    static const float want[] = {1, 2, 7, 3, 4, 8, 5, 6, 9};
    for (size_t off = 0; off < sizeof want; off++)
        for (size_t len = 0; off + len <= sizeof want; len += 3) {
            unsigned char got[sizeof want];
            CHECK(ir_const_read_at(g, c, off, len, got, NULL));
            CHECK(memcmp(got, (const unsigned char *)want + off, len) == 0);
        }
    gk_free(t);
}

static void test_max_abs(void)
{
    float f[200];
    for (size_t i = 0; i < FR_COUNT_OF(f); i++)
        f[i] = (float)i * (i % 2 ? -1.0f : 1.0f);
    CHECK(ir_const_max_abs(IR_F32, f, FR_COUNT_OF(f)) == 199);
    CHECK(ir_const_max_abs(IR_F32, f, 0) == 0);
    f[150] = -1e30f; /* in a block */
    CHECK(ir_const_max_abs(IR_F32, f, FR_COUNT_OF(f)) == 1e30f);
    f[199] = -INFINITY; /* in the tail */
    CHECK(isinf(ir_const_max_abs(IR_F32, f, FR_COUNT_OF(f))));
    f[3] = NAN;
    CHECK(isnan(ir_const_max_abs(IR_F32, f, FR_COUNT_OF(f))));
    double d[5] = {1, -3, 2, 0, -0.5};
    CHECK(ir_const_max_abs(IR_F64, d, 5) == 3);
    d[2] = NAN;
    CHECK(isnan(ir_const_max_abs(IR_F64, d, 5)));
    uint16_t h[100];
    for (size_t i = 0; i < FR_COUNT_OF(h); i++)
        h[i] = f32_to_f16((float)i - 50);
    CHECK(ir_const_max_abs(IR_F16, h, FR_COUNT_OF(h)) == 50);
    h[70] = 0xfc00; /* -inf */
    CHECK(isinf(ir_const_max_abs(IR_F16, h, FR_COUNT_OF(h))));
    for (size_t i = 0; i < FR_COUNT_OF(h); i++)
        h[i] = f32_to_bf16((float)i - 60);
    CHECK(ir_const_max_abs(IR_BF16, h, FR_COUNT_OF(h)) == 60);
    h[99] = 0x7fc1; /* NaN */
    CHECK(isnan(ir_const_max_abs(IR_BF16, h, FR_COUNT_OF(h))));
}

/* BNs that share their parameters take the last fold's factors (rw_ctx.bn_last): a BN with
 * another gamma, another epsilon or another variance between them gets its own, and one whose
 * variance is negative is still refused after a fold of the same shape. */
static const char shared_text[] =
    "graph g {\n  input x : f32[1,4,3,3]\n"
    "  const s : f32[4] = [1, 2, 3, 4]\n  const s2 : f32[4] = [-4, 0.5, 7, 1]\n"
    "  const t : f32[4] = [0.1, 0.2, 0.3, 0.4]\n  const m : f32[4] = [1, -1, 2, -2]\n"
    "  const v : f32[4] = [0.5, 1, 2, 4]\n  const v2 : f32[4] = [9, 3, 0.25, 1]\n"
    "  const bad : f32[4] = [1, -5, 1, 1]\n"
    "  const w1 : f32[4,4,1,1] = random(seed=1)\n  const w2 : f32[4,4,1,1] = random(seed=2)\n"
    "  const w3 : f32[4,4,1,1] = random(seed=3)\n  const w4 : f32[4,4,1,1] = random(seed=4)\n"
    "  const w5 : f32[4,4,1,1] = random(seed=5)\n  const w6 : f32[4,4,1,1] = random(seed=6)\n"
    "  c1 = Conv(x, w1) {kernel_shape=[1,1]}\n  y1 = BatchNormalization(c1, s, t, m, v)\n"
    "  c2 = Conv(y1, w2) {kernel_shape=[1,1]}\n  y2 = BatchNormalization(c2, s, t, m, %s)\n"
    "  c3 = Conv(y2, w3) {kernel_shape=[1,1]}\n  y3 = BatchNormalization(c3, s2, t, m, v)\n"
    "  c4 = Conv(y3, w4) {kernel_shape=[1,1]}\n"
    "  y4 = BatchNormalization(c4, s2, t, m, v) {epsilon=0.5}\n"
    "  c5 = Conv(y4, w5) {kernel_shape=[1,1]}\n  y5 = BatchNormalization(c5, s2, t, m, v2)\n"
    "  c6 = Conv(y5, w6) {kernel_shape=[1,1]}\n  y6 = BatchNormalization(c6, s, t, m, v)\n"
    "  output y6\n}\n";

/* BNs that share their parameters take the last fold's factors (rw_ctx.bn_last): a BN with
 * another gamma, another epsilon or another variance between them gets its own (the fused graph
 * computes what the original does), and one whose variance is negative is still refused after a
 * fold that read the same gamma, beta and mean. */
static void test_fold_bn_shared_factors(void)
{
    char text[sizeof shared_text + 8];
    snprintf(text, sizeof text, shared_text, "v");
    gk_graph *ref = gk_parse(text), *t = gk_parse(text);
    rk_rules r = rules_from(fold_rules);
    rw_report rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_bn"), 6);
    CHECK_INT(count_op(t->g, IR_OP_BatchNormalization), 0);
    /* the folded weights' factors: one copy for consecutive equal ones (ir_const_set_scaled) */
    const ir_const_scaled *sc[6];
    for (int i = 0; i < 6; i++) {
        char name[4];
        snprintf(name, sizeof name, "y%d", i + 1);
        sc[i] = ir_const_scaled_get(gk_node(t, name)->inputs[1]);
        FR_CHECK(sc[i] != NULL);
        CHECK(sc[i]->nfactors == 4);
    }
    CHECK(sc[1]->factors == sc[0]->factors);
    CHECK(sc[2]->factors != sc[1]->factors && sc[3]->factors != sc[2]->factors);
    CHECK(sc[5]->factors != sc[0]->factors); /* equal, but not the last call's */
    CHECK(memcmp(sc[5]->factors, sc[0]->factors, 4 * sizeof(double)) == 0);
    CHECK(worst_error(ref, t) < 1e-5); /* (reading them computes them) */
    rw_report_free(&rep);
    gk_free(ref);
    gk_free(t);

    /* y2 reads the negative variance: refused, the others fold */
    snprintf(text, sizeof text, shared_text, "bad");
    t = gk_parse(text);
    rep = apply(t, &r);
    CHECK_INT(fired(&rep, "conv_bn"), 5);
    const char *why = refusal(&rep, "conv_bn", "y2");
    CHECK(why && strstr(why, "var + epsilon is -4.99999 at channel 1"));
    CHECK_INT(count_op(t->g, IR_OP_BatchNormalization), 1);
    rw_report_free(&rep);
    rules_free(&r);
    gk_free(t);
}

int main(void)
{
    RUN(test_fold_bn_deferred);
    RUN(test_fold_bn_shared_factors);
    RUN(test_rows_read_at);
    RUN(test_max_abs);
    return unit_finish();
}
