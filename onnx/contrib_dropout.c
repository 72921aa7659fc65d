/* com.microsoft's training-graph dropout ops, imported as the catalog ops that compute them with
 * ONNX Runtime's semantics (its CPU kernels where it has them, else its CUDA kernels):
 *
 *   BiasDropout(data, bias, residual?, ratio?, training_mode?) -> output, mask?
 *     y, mask = Dropout(Add(data, bias), ratio, training_mode); output = Add(y, residual) or y
 *   BitmaskDropout(data, ratio?, training_mode?) -> output, mask? (uint32 [ceil(N / 32)])
 *     y, m = Dropout(data, ratio, training_mode); mask = m packed 32 elements a word, element i
 *     in bit i % 32 of word i / 32, the bits past the last element set (ONNX Runtime sets every
 *     bit of an inference mask)
 *   DropoutGrad(dy, mask, ratio?, training_mode?) -> dx
 *     dx = dy when ratio is 0, else Cast(mask) * dy / (1 - ratio) (training_mode is not read)
 *   BitmaskDropoutGrad(dy, mask, ratio?, training_mode?) -> dx
 *     dx = Cast(float(dy) * bit * (1 / (1 - r)), T), r = ratio in training mode, else 0
 *
 * ratio defaults to 0.5; the seed attribute becomes the Dropout's. Dropout in training mode stays
 * the catalog's Dropout with its training_mode input: random, never folded or removed (canon and
 * the rules refuse to); the CPU executor draws its seeded mask (docs/kernels.md). Masks are
 * packed and unpacked with i64 arithmetic (powers of two, Div, Mod, ReduceSum), which is exact for
 * 32-bit words. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <string.h>

enum { WORD_BITS = 32 };

static const char *stem_of(ox_importer *im, const ox_pending *p, const char *what)
{
    ir_graph *g = ox_importer_graph(im);
    for (size_t k = 0; k < p->proto->n_output; k++)
        if (p->proto->output[k][0])
            return ar_printf(g->arena, "%s/%s", p->proto->output[k], what);
    return ar_printf(g->arena, "dropout/%s", what);
}

static ir_value *i64_vector(ox_importer *im, const ox_pending *p, const char *what,
                            const int64_t *v, uint32_t n)
{
    return ox_const_i64(im, stem_of(im, p, what), v, n, false);
}

static ir_value *i64_scalar(ox_importer *im, const ox_pending *p, const char *what, int64_t v)
{
    return ox_const_i64(im, stem_of(im, p, what), &v, 1, true);
}

static ir_value *powers_of_two(ox_importer *im, const ox_pending *p)
{
    int64_t pow2[WORD_BITS];
    for (int i = 0; i < WORD_BITS; i++)
        pow2[i] = (int64_t)1 << i;
    return i64_vector(im, p, "bit_values", pow2, WORD_BITS);
}

/* The element count of x as a one-element i64 vector (Slice's and Pad's operand form). */
static ir_value *count_vector(ox_importer *im, const ox_pending *p, ir_value *x)
{
    ir_value *size = ox_build1(im, IR_OP_Size, stem_of(im, p, "count"), 1, &x);
    static const int64_t zero[] = {0};
    ir_value *in[] = {size, i64_vector(im, p, "count_axes", zero, 1)};
    return ox_build1(im, IR_OP_Unsqueeze, stem_of(im, p, "count_1d"), 2, in);
}

/* A bool tensor as uint32 words: element i in bit i % 32 of word i / 32, trailing bits set. */
static ir_value *pack_mask(ox_importer *im, const ox_pending *p, ir_value *mask)
{
    ir_graph *g = ox_importer_graph(im);
    static const int64_t flat[] = {-1}, rows[] = {-1, WORD_BITS}, axis1[] = {1};
    ir_value *ints = ox_cast(im, stem_of(im, p, "mask_i64"), mask, IR_I64);
    ir_value *rin[] = {ints, i64_vector(im, p, "flat_shape", flat, 1)};
    ir_value *line = ox_build1(im, IR_OP_Reshape, stem_of(im, p, "mask_flat"), 2, rin);
    /* pad to whole words with ones: (32 - N % 32) % 32 elements at the end */
    ir_value *n = count_vector(im, p, mask);
    ir_value *word = i64_scalar(im, p, "word_bits", WORD_BITS);
    ir_value *rest = ox_binary(im, IR_OP_Mod, stem_of(im, p, "pad_count"),
                               ox_binary(im, IR_OP_Sub, stem_of(im, p, "pad_gap"), word,
                                         ox_binary(im, IR_OP_Mod, stem_of(im, p, "tail"), n, word)),
                               word);
    static const int64_t zero[] = {0};
    ir_value *cin[] = {i64_vector(im, p, "pad_begin", zero, 1), rest};
    ir_node *pads = ox_build(im, IR_OP_Concat, stem_of(im, p, "pads"), 2, cin, 1);
    ir_set_attr_int(g, pads, "axis", 0);
    ir_value *pin[] = {line, pads->outputs[0], i64_scalar(im, p, "pad_value", 1)};
    ir_value *padded = ox_build1(im, IR_OP_Pad, stem_of(im, p, "mask_padded"), 3, pin);
    ir_value *win[] = {padded, i64_vector(im, p, "word_shape", rows, 2)};
    ir_value *bits = ox_build1(im, IR_OP_Reshape, stem_of(im, p, "mask_words"), 2, win);
    ir_value *weighted =
        ox_binary(im, IR_OP_Mul, stem_of(im, p, "mask_bits"), bits, powers_of_two(im, p));
    ir_value *sin[] = {weighted, i64_vector(im, p, "word_axis", axis1, 1)};
    ir_node *sum = ox_build(im, IR_OP_ReduceSum, stem_of(im, p, "mask_packed"), 2, sin, 1);
    ir_set_attr_int(g, sum, "keepdims", 0);
    return sum->outputs[0];
}

/* uint32 words back to one f32 0/1 per element of like, in like's shape. */
static ir_value *unpack_mask(ox_importer *im, const ox_pending *p, ir_value *words, ir_value *like)
{
    static const int64_t axis1[] = {1}, flat[] = {-1}, zero[] = {0};
    ir_value *w = ox_cast(im, stem_of(im, p, "words_i64"), words, IR_I64);
    ir_value *uin[] = {w, i64_vector(im, p, "word_axis", axis1, 1)};
    ir_value *col = ox_build1(im, IR_OP_Unsqueeze, stem_of(im, p, "words_column"), 2, uin);
    ir_value *shifted =
        ox_binary(im, IR_OP_Div, stem_of(im, p, "words_shifted"), col, powers_of_two(im, p));
    ir_value *bit =
        ox_binary(im, IR_OP_Mod, stem_of(im, p, "bits"), shifted, i64_scalar(im, p, "two", 2));
    ir_value *rin[] = {bit, i64_vector(im, p, "flat_shape", flat, 1)};
    ir_value *line = ox_build1(im, IR_OP_Reshape, stem_of(im, p, "bits_flat"), 2, rin);
    ir_value *sin[] = {line, i64_vector(im, p, "bits_start", zero, 1), count_vector(im, p, like)};
    ir_value *used = ox_build1(im, IR_OP_Slice, stem_of(im, p, "bits_used"), 3, sin);
    ir_value *shape = ox_build1(im, IR_OP_Shape, stem_of(im, p, "shape"), 1, &like);
    ir_value *sh[] = {used, shape};
    ir_value *shaped = ox_build1(im, IR_OP_Reshape, stem_of(im, p, "bits_shaped"), 2, sh);
    return ox_cast(im, stem_of(im, p, "bits_f32"), shaped, IR_F32);
}

/* Training mode: -1 when it is a run-time value, else 0 or 1 (absent is 0). */
static int training_mode(ox_importer *im, ir_value *tm)
{
    double v;
    if (!tm)
        return 0;
    return ox_const_number(im, tm, &v) ? v != 0 : -1;
}

static bool inputs(ox_importer *im, ox_pending *p, size_t count, ir_value **out)
{
    for (size_t k = 0; k < count; k++)
        if (!ox_importer_input(im, p, k, &out[k]))
            return false;
    return true;
}

static bool named(const Onnx__NodeProto *np, size_t slot)
{
    return slot < np->n_output && np->output[slot][0];
}

ir_node *ox_contrib_dropout_define(ox_importer *im, const Onnx__NodeProto *np, const char *label)
{
    bool bias = strcmp(np->op_type, "BiasDropout") == 0;
    bool residual = bias && np->n_input > 2 && np->input[2][0];
    const char *names[2] = {named(np, 0) && !residual ? np->output[0]
                                                      : ox_importer_fresh(im, np, 0),
                            bias && named(np, 1) ? np->output[1] : ox_importer_fresh(im, np, 1)};
    ir_node *d = ox_importer_add_node(im, IR_OP_Dropout, 3, names, named(np, 1) ? 2 : 1, label);
    if (!d)
        return NULL;
    if (residual && named(np, 0) &&
        !ox_importer_add_node(im, IR_OP_Add, 2, (const char **)&np->output[0], 1, label))
        return NULL;
    if (!bias && named(np, 1) &&
        !ox_importer_add_node(im, IR_OP_Cast, 1, (const char **)&np->output[1], 1, label))
        return NULL;
    return d;
}

/* The seed attribute of BiasDropout and BitmaskDropout carries over to the Dropout, whose mask it
 * draws (docs/kernels.md, "Dropout in training mode"); absent, the Dropout has none (seed 0). */
static void copy_seed(ox_importer *im, ox_pending *p)
{
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = p->proto->attribute[i];
        if (a->name && strcmp(a->name, "seed") == 0 && a->has_type &&
            a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
            ir_set_attr_int(ox_importer_graph(im), p->node, "seed", a->i);
    }
}

/* Drops the trailing omitted inputs of Dropout (defined with all three slots). */
static void trim_inputs(ir_node *d)
{
    while (d->ninputs > 1 && !d->inputs[d->ninputs - 1])
        d->ninputs--;
}

static bool bias_dropout(ox_importer *im, ox_pending *p)
{
    ir_value *in[5];
    if (!inputs(im, p, 5, in))
        return false;
    if (!in[0] || !in[1]) {
        ox_invalid(ox_importer_report(im), "%s needs data and bias", p->label);
        return false;
    }
    ir_node *d = p->node;
    ir_set_input(d, 0, ox_binary(im, IR_OP_Add, stem_of(im, p, "biased"), in[0], in[1]));
    ir_set_input(d, 1, in[3]);
    ir_set_input(d, 2, in[4]);
    trim_inputs(d);
    copy_seed(im, p);
    ir_node *y = ox_output_node(im, p, 0);
    if (in[2] && y) { /* the residual's Add carries the output */
        ir_set_input(y, 0, d->outputs[0]);
        ir_set_input(y, 1, in[2]);
    }
    return true;
}

static bool bitmask_dropout(ox_importer *im, ox_pending *p)
{
    ir_value *in[3];
    if (!inputs(im, p, 3, in))
        return false;
    if (!in[0]) {
        ox_invalid(ox_importer_report(im), "%s needs data", p->label);
        return false;
    }
    ir_node *d = p->node;
    for (uint32_t k = 0; k < 3; k++)
        ir_set_input(d, k, in[k]);
    trim_inputs(d);
    copy_seed(im, p);
    ir_node *mask = ox_output_node(im, p, 1);
    if (mask) { /* the Cast of the packed words carries it */
        ir_set_input(mask, 0, pack_mask(im, p, d->outputs[1]));
        ir_set_attr_int(ox_importer_graph(im), mask, "to", ox_dtype_to_onnx(IR_U32));
    }
    return true;
}

/* ONNX Runtime reads ratio as float (from any float type); absent, it is 0.5. */
static ir_value *ratio_f32(ox_importer *im, const ox_pending *p, ir_value *ratio)
{
    return ratio ? ox_cast(im, stem_of(im, p, "ratio_f32"), ratio, IR_F32)
                 : ox_const_f32(im, stem_of(im, p, "ratio"), 0.5);
}

static bool dropout_grad(ox_importer *im, ox_pending *p)
{
    ir_value *in[4];
    if (!inputs(im, p, 4, in))
        return false;
    ir_value *dy = in[0], *mask = in[1];
    if (!dy || !mask) {
        ox_invalid(ox_importer_report(im), "%s needs dy and mask", p->label);
        return false;
    }
    ir_node *dx = ox_output_node(im, p, 0);
    if (!dx)
        return true;
    double r = 0.5;
    bool known = !in[2] || ox_const_number(im, in[2], &r);
    if (known && (float)r == 0.0f) { /* a copy of dy, mask unread */
        ox_become(im, dx, IR_OP_Identity, 1, &dy);
        return true;
    }
    /* (1.0f - ratio) in float, then in dy's type, as ONNX Runtime's kernel divides */
    ir_value *kept = ox_binary(im, IR_OP_Mul, stem_of(im, p, "kept"),
                               ox_cast_like(im, stem_of(im, p, "mask_t"), mask, dy), dy);
    ir_value *keep = known
                         ? ox_number_like(im, stem_of(im, p, "keep"), (double)(1.0f - (float)r), dy)
                         : ox_cast_like(im, stem_of(im, p, "keep_t"),
                                        ox_binary(im, IR_OP_Sub, stem_of(im, p, "keep"),
                                                  ox_const_f32(im, stem_of(im, p, "one"), 1.0),
                                                  ratio_f32(im, p, in[2])),
                                        dy);
    ir_value *div[] = {kept, keep};
    if (known) {
        ox_become(im, dx, IR_OP_Div, 2, div);
        return true;
    }
    ir_value *scaled = ox_build1(im, IR_OP_Div, stem_of(im, p, "scaled"), 2, div);
    ir_value *zero =
        ox_binary(im, IR_OP_Equal, stem_of(im, p, "ratio_zero"), ratio_f32(im, p, in[2]),
                  ox_const_f32(im, stem_of(im, p, "zero"), 0));
    ir_value *where[] = {zero, dy, scaled};
    ox_become(im, dx, IR_OP_Where, 3, where);
    return true;
}

static bool bitmask_dropout_grad(ox_importer *im, ox_pending *p)
{
    ir_value *in[4];
    if (!inputs(im, p, 4, in))
        return false;
    ir_value *dy = in[0], *words = in[1];
    if (!dy || !words) {
        ox_invalid(ox_importer_report(im), "%s needs dy and mask", p->label);
        return false;
    }
    ir_node *dx = ox_output_node(im, p, 0);
    if (!dx)
        return true;
    ir_value *bits = unpack_mask(im, p, words, dy);
    /* float(dy) * bit * scale, rounded once to dy's type */
    bool f32 = dy->kind != IR_VALUE_NODE && dy->type->dtype == IR_F32;
    ir_value *dy32 = f32 ? dy : ox_cast(im, stem_of(im, p, "dy_f32"), dy, IR_F32);
    int training = training_mode(im, in[3]);
    double r = 0.5;
    bool known = training == 0 || !in[2] || ox_const_number(im, in[2], &r);
    ir_value *scale = NULL;
    if (training == 1 && known) {
        float keep = 1.0f - (float)r;
        scale = ox_const_f32(im, stem_of(im, p, "scale"), (double)(1.0f / keep));
    } else if (training != 0) { /* 1 / (1 - r), r = ratio in training mode, else 0 */
        ir_value *where[] = {in[3], ratio_f32(im, p, in[2]),
                             ox_const_f32(im, stem_of(im, p, "zero"), 0)};
        ir_value *r_eff = ox_build1(im, IR_OP_Where, stem_of(im, p, "ratio_used"), 3, where);
        ir_value *keep = ox_binary(im, IR_OP_Sub, stem_of(im, p, "keep"),
                                   ox_const_f32(im, stem_of(im, p, "one"), 1.0), r_eff);
        scale = ox_build1(im, IR_OP_Reciprocal, stem_of(im, p, "scale"), 1, &keep);
    }
    /* the last product: dy * bit, or (dy * bit) * scale */
    ir_value *last[] = {dy32, bits};
    if (scale) {
        last[0] = ox_binary(im, IR_OP_Mul, stem_of(im, p, "kept"), dy32, bits);
        last[1] = scale;
    }
    if (f32) { /* no cast back: dx is that product */
        ox_become(im, dx, IR_OP_Mul, 2, last);
        return true;
    }
    ir_value *prod = ox_build1(im, IR_OP_Mul, stem_of(im, p, "scaled"), 2, last);
    if (dy->kind != IR_VALUE_NODE) {
        ox_become(im, dx, IR_OP_Cast, 1, &prod);
        ir_set_attr_int(ox_importer_graph(im), dx, "to", ox_dtype_to_onnx(dy->type->dtype));
        return true;
    }
    ir_value *back[] = {prod, dy};
    ox_become(im, dx, IR_OP_CastLike, 2, back);
    return true;
}

bool ox_contrib_dropout_import(ox_importer *im, ox_pending *p)
{
    const char *t = p->proto->op_type;
    if (strcmp(t, "BiasDropout") == 0)
        return bias_dropout(im, p);
    if (strcmp(t, "BitmaskDropout") == 0)
        return bitmask_dropout(im, p);
    if (strcmp(t, "DropoutGrad") == 0)
        return dropout_grad(im, p);
    FR_CHECK(strcmp(t, "BitmaskDropoutGrad") == 0);
    return bitmask_dropout_grad(im, p);
}
