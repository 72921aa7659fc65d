/* Readers that read through a node which changes nothing they compute (docs/canon.md, "Reading
 * through"):
 *
 * - a Cast of a Cast that was exact (every value of x's dtype is a value of the middle dtype:
 *   u8 to f32, f16 to f32, i8 to i32, ...) casts x itself: Cast(Cast(x, f32), u8) of a u8 x is x,
 *   Cast(Cast(x, f32), f16) of an i8 x is Cast(x, f16). Only where the kernels give the same
 *   result both ways: an integer cast to a narrower integer wraps, a float cast to an integer
 *   saturates, so an integer through a float into an integer collapses only where the integer
 *   fits (kn_float_to_int, kn_wrap_int);
 * - Where(Not(c), a, b) is Where(c, b, a).
 *
 * The node read through goes when nothing else reads it (dead nodes). */
#include "canon/internal.h"

#define DT(d) (1u << (d))

/* The dtypes every value of `from` is exactly a value of (the storage integers i16, u16, u32 and
 * u64 are left out: their casts wrap through i64). */
static unsigned exact_into(ir_dtype from)
{
    const unsigned floats = DT(IR_F16) | DT(IR_BF16) | DT(IR_F32) | DT(IR_F64);
    switch (from) {
    case IR_BOOL: return floats | DT(IR_I8) | DT(IR_U8) | DT(IR_I32) | DT(IR_I64);
    case IR_I8:
    case IR_U8: return floats | DT(IR_I32) | DT(IR_I64);
    case IR_I32: return DT(IR_F64) | DT(IR_I64);
    case IR_F16:
    case IR_BF16: return DT(IR_F32) | DT(IR_F64);
    case IR_F32: return DT(IR_F64);
    default: return 0;
    }
}

static bool is_float(ir_dtype d)
{
    return d == IR_F16 || d == IR_BF16 || d == IR_F32 || d == IR_F64;
}

/* Whether Cast(Cast(x, mid), to) equals Cast(x, to) for an x of dtype `from`. */
static bool collapses(ir_dtype from, ir_dtype mid, ir_dtype to)
{
    if (!(exact_into(from) & DT(mid)))
        return false;
    if (is_float(from) || !is_float(mid) || is_float(to) || to == IR_BOOL)
        return true; /* the same value cast the same way */
    /* an integer through a float into an integer: saturated one way, wrapped the other, the same
     * where the value fits */
    return to == from || (exact_into(from) & DT(to));
}

/* Cast(Cast(x)) with an exact inner Cast: the outer one reads x. Returns whether it changed. */
static bool cast_through(cn_ctx *c, ir_node *n)
{
    ir_value *m = cn_resolve(c, n->inputs[0]);
    if (!m || m->kind != IR_VALUE_NODE || m->producer->op != IR_OP_Cast || m->producer->dead)
        return false;
    ir_value *x = cn_resolve(c, m->producer->inputs[0]);
    if (!x || !collapses(x->type->dtype, m->type->dtype, n->outputs[0]->type->dtype))
        return false;
    if (x->type->dtype == n->outputs[0]->type->dtype && cn_forward(c, n->outputs[0], x)) {
        cn_kill(c, n);
        return true;
    }
    n->inputs[0] = x;
    cn_touch_operands(c, n);
    if (x->id < c->nfwd) /* a reader more: no step may change it in place now */
        c->gained[x->id] = true;
    return true;
}

/* Where(Not(c), a, b): Where(c, b, a). */
static bool where_not(cn_ctx *c, ir_node *n)
{
    ir_value *v = cn_resolve(c, n->inputs[0]);
    if (!v || v->kind != IR_VALUE_NODE || v->producer->op != IR_OP_Not || v->producer->dead)
        return false;
    ir_value *cond = cn_resolve(c, v->producer->inputs[0]);
    ir_value *a = n->inputs[1];
    n->inputs[0] = cond;
    n->inputs[1] = n->inputs[2];
    n->inputs[2] = a;
    cn_touch_operands(c, n);
    if (cond->id < c->nfwd)
        c->gained[cond->id] = true;
    return true;
}

uint32_t cn_through(cn_ctx *c)
{
    uint32_t changed = 0;
    for (size_t i = 0; i < cn_nvisits(c); i++) {
        ir_node *n = cn_visit(c, i);
        if (n->dead || n->ninputs == 0 || !n->inputs[0])
            continue;
        if ((n->op == IR_OP_Cast && cast_through(c, n)) ||
            (n->op == IR_OP_Where && n->ninputs == 3 && where_not(c, n)))
            changed++;
    }
    return changed;
}
