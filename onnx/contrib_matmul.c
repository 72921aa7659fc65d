/* com.microsoft FusedMatMul(A, B) {alpha, transA, transB, transBatchA, transBatchB} where the
 * catalog's GemmEpilogue cannot hold it: Y = alpha * (A' @ B'), with
 *
 *   A' = A, its first dim moved behind the batch dims when transBatchA ([d0, b..., d] becomes
 *        [b..., d0, d]; ONNX Runtime requires A and B of one rank >= 3 then), its last two dims
 *        swapped when transA; B' alike;
 *
 * imported as Transpose (one per operand, the two moves composed), MatMul, and Mul by alpha when
 * alpha is not 1 (ONNX Runtime scales the finished products, as the Mul does). GemmEpilogue takes
 * the node when there is no transBatch and B is known at import to be 2-D (a constant or a graph
 * input), and with transBatch when A and B are known to have one rank of at least 3 (GemmEpilogue's
 * transBatchA / transBatchB); a B computed by another node may be 3-D, so the subgraph is taken,
 * which rules fuse again where they may. onnx/forms checks each form against onnxruntime. */
#include "onnx/onnx_internal.h"

#include "base/check.h"

#include <inttypes.h>
#include <string.h>

typedef struct {
    double alpha;
    int64_t trans[2], batch[2]; /* A, B */
} matmul_attrs;

static bool read_attrs(ox_importer *im, ox_pending *p, matmul_attrs *a)
{
    static const char *const ints[] = {"transA", "transB", "transBatchA", "transBatchB"};
    *a = (matmul_attrs){.alpha = 1.0};
    for (size_t i = 0; i < p->proto->n_attribute; i++) {
        const Onnx__AttributeProto *at = p->proto->attribute[i];
        const char *name = at->name ? at->name : "";
        bool is_int = at->has_type && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        bool is_float = at->has_type && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        int64_t *slot[] = {&a->trans[0], &a->trans[1], &a->batch[0], &a->batch[1]};
        bool known = false;
        for (size_t k = 0; k < FR_COUNT_OF(ints) && !known; k++) {
            if (strcmp(name, ints[k]) == 0 && is_int && (at->i == 0 || at->i == 1)) {
                *slot[k] = at->i;
                known = true;
            }
        }
        if (!known && strcmp(name, "alpha") == 0 && is_float) {
            a->alpha = ox_float_to_double(at->f);
            known = true;
        }
        if (!known) {
            ox_unsupported(ox_importer_report(im),
                           "%s: attribute '%s' (this value) is outside what FusedMatMul's "
                           "import expresses",
                           p->label, name);
            return false;
        }
    }
    return true;
}

/* The rank of v where import knows it: a graph input, a constant, or a Transpose with a perm. */
static int known_rank(const ir_value *v)
{
    if (v->kind != IR_VALUE_NODE)
        return v->type->rank;
    const ir_node *n = v->producer;
    const int64_t *perm;
    uint32_t count = n->op == IR_OP_Transpose ? ir_get_ints(n, "perm", &perm) : 0;
    return count ? (int)count : -1;
}

/* x transposed as the attributes say (rank r), or x itself. */
static ir_value *operand(ox_importer *im, const char *stem, ir_value *x, int r, bool batch,
                         bool trans)
{
    if (!batch && !trans)
        return x;
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    if (batch) { /* [d0, b..., d] -> [b..., d0, d] */
        for (int i = 0; i < r - 2; i++)
            perm[i] = i + 1;
        perm[r - 2] = 0;
    }
    if (trans) {
        int64_t t = perm[r - 1];
        perm[r - 1] = perm[r - 2];
        perm[r - 2] = t;
    }
    ir_node *n = ox_build(im, IR_OP_Transpose, stem, 1, &x, 1);
    ir_set_attr_ints(ox_importer_graph(im), n, "perm", perm, (uint32_t)r);
    return n->outputs[0];
}

bool ox_contrib_fused_matmul(ox_importer *im, ox_pending *p, bool *decomposed)
{
    ox_report *r = ox_importer_report(im);
    ir_graph *g = ox_importer_graph(im);
    *decomposed = false;
    ir_value *a, *b;
    if (!ox_importer_input(im, p, 0, &a) || !ox_importer_input(im, p, 1, &b))
        return false;
    if (!a || !b || p->proto->n_input > 2) {
        ox_invalid(r, "%s takes exactly two inputs, A and B", p->label);
        return false;
    }
    matmul_attrs at;
    if (!read_attrs(im, p, &at))
        return false;
    bool batch = at.batch[0] || at.batch[1];
    int ra = known_rank(a), rb = known_rank(b);
    if (!batch && rb == 2 && (ra < 0 || ra >= 2))
        return true; /* GemmEpilogue's form */
    if (batch && ra >= 3 && ra == rb)
        return true; /* GemmEpilogue's form, with transBatchA / transBatchB */
    int rank[2] = {ra, rb};
    if (batch) {
        int known = ra >= 0 ? ra : rb;
        if (known < 0) {
            ox_unsupported(r,
                           "%s: transBatchA/transBatchB on operands whose rank import cannot "
                           "tell (neither is a graph input, a constant or a Transpose)",
                           p->label);
            return false;
        }
        if (known < 3 || (ra >= 0 && rb >= 0 && ra != rb)) {
            ox_invalid(r,
                       "%s: transBatchA/transBatchB need A and B of one rank of at least 3 "
                       "(A has rank %d, B %d)",
                       p->label, ra, rb);
            return false;
        }
        rank[0] = rank[1] = known;
    }
    ir_value *in[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (at.trans[i] && !at.batch[i] && rank[i] < 2) {
            ox_unsupported(r,
                           "%s: trans%c on an operand whose rank import cannot tell, with a B "
                           "GemmEpilogue cannot take",
                           p->label, "AB"[i]);
            return false;
        }
        in[i] = operand(im, ar_printf(g->arena, "%s/%c", p->node->outputs[0]->name, "ab"[i]), in[i],
                        rank[i], at.batch[i], at.trans[i]);
    }
    if (at.alpha == 1.0) {
        ox_become(im, p->node, IR_OP_MatMul, 2, in);
    } else {
        const char *stem = p->node->outputs[0]->name;
        ir_value *prod =
            ox_build1(im, IR_OP_MatMul, ar_printf(g->arena, "%s/product", stem), 2, in);
        ir_value *mul[] = {prod, ox_number_like(im, ar_printf(g->arena, "%s/alpha", stem), at.alpha,
                                                a->kind != IR_VALUE_NODE ? a : b)};
        ox_become(im, p->node, IR_OP_Mul, 2, mul);
    }
    *decomposed = true;
    return true;
}
