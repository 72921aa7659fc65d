/* Internal to canon/: the state of a round and the steps, one file each.
 *
 * canon.c   the rounds; forwarding readers; dead nodes; validation
 * spell.c   one spelling per op
 * noops.c   no-ops removed
 * fold.c    constant folding
 * cse.c     common subexpressions
 * through.c reading through exact Casts and Nots
 * qdq.c     quantize round trips */
#ifndef FUSERULE_CANON_INTERNAL_H
#define FUSERULE_CANON_INTERNAL_H

#include "base/vec.h"
#include "canon/canon.h"

/* A node that reads other operands: `from` replaced by `to` (apply_forwards; both NULL after
 * cn_touch_operands), `quiet` where validation may see the two the same. */
typedef struct {
    ir_node *reader;
    ir_value *from, *to;
    bool quiet;
} cn_rewired;

typedef struct cn_ctx {
    ir_graph *g;
    const cn_options *opts;
    cn_report *rep;
    ir_value **fwd; /* by value id: what its readers read instead (NULL: itself) */
    bool *gained;   /* by value id: readers were forwarded to it this round */
    size_t nfwd;
    uint32_t round;    /* 1 for the first */
    size_t nforwards;  /* cn_forward calls this round */
    size_t applied;    /* of which the readers read the target already */
    bool uses_current; /* the use lists are the graph's */
    /* the last cn_cse merged nothing and found no equal it could not merge (a merge can make a
     * node it skipped as its input's only reader read a shared value: it may find more) */
    bool cse_fixed;
    /* the ops of the live nodes at the round's start (after a round that only forwarded readers
     * and dropped nodes, the ops of the nodes cn_visit gives only: those steps ask of no other) */
    bool has_op[IR_OP_COUNT];
    /* What the round's steps changed, which validation checks and infers again
     * (ir_validate_marked): the nodes and values they changed in place (cn_touch,
     * cn_touch_value), and the nodes that read other operands (cn_touch_operands, and
     * apply_forwards', with the operand replaced when validation may see them the same). Nodes
     * and values made in the round count as changed. */
    VEC(ir_node *) touched;
    VEC(ir_value *) touched_values;
    VEC(cn_rewired) rewired;
    VEC(ir_node *) dead;  /* the nodes marked dead in the round (cn_kill) */
    VEC(ir_node *) visit; /* the nodes of the round's start cn_visit gives */
    VEC(ir_node *) unread; /* round 1: the nodes no node read and no graph output was at its start */
    VEC(ir_value *) vague; /* node outputs of a declared type with unknown dims at the start */
    bool uses_updated;     /* the use lists are the graph's again (drop_unread) */
    bool only_forwarded;   /* the last round only forwarded readers and dropped nodes */
    size_t nodes0, values0; /* the graph's nodes and values at the round's start */
} cn_ctx;

/* The nodes that the steps acting on some ops only (spell, through, qdq, noops) visit, in order,
 * i < cn_nvisits(c): the nodes of those ops at the round's start, then any node made since (with
 * cn_options.whole_rounds, every node). A node of another op is none of theirs, and no step turns
 * one into one of those ops (spell changes the ops of nodes of those ops, and makes a view before
 * the BatchNormalization it visits one, visited already as a view). */
static inline size_t cn_nvisits(const cn_ctx *c)
{
    return c->visit.len + (c->g->nodes.len - c->nodes0);
}

static inline ir_node *cn_visit(const cn_ctx *c, size_t i)
{
    return i < c->visit.len ? c->visit.items[i] : c->g->nodes.items[c->nodes0 + i - c->visit.len];
}

/* Every step records each node and value it changes other than by marking a node dead or by
 * cn_forward (an unrecorded change would go unchecked; cn_options.check_marks finds one):
 *
 * - cn_touch: n changed in place (its op, attributes, operands or outputs, or its outputs'
 *   types): validation checks it and infers it again, and the readers of its outputs;
 * - cn_touch_operands: n reads other operands, nothing else changed: it is checked and inferred
 *   again (and downstream where its types come out different);
 * - cn_touch_value: v's kind, constant, producer or type changed: its readers are checked and
 *   inferred again. */
void cn_touch(cn_ctx *c, ir_node *n);
void cn_touch_operands(cn_ctx *c, ir_node *n);
void cn_touch_value(cn_ctx *c, ir_value *v);
/* Marks n dead (its outputs' readers read something else, or nothing reads them), and lists it. */
void cn_kill(cn_ctx *c, ir_node *n);

/* Makes the readers of `from` read `to` (applied by the driver after the step). False, and
 * nothing recorded, when that would change the graph's interface or types: `from` a graph output
 * (its name would change), or another type than `to`. */
bool cn_forward(cn_ctx *c, ir_value *from, ir_value *to);
/* Whether v may be read by more than one node now: by the use lists of the round's start, or
 * because readers were forwarded to it since. */
bool cn_shared(const cn_ctx *c, const ir_value *v);
/* `v` after the forwards recorded so far in this step. */
ir_value *cn_resolve(const cn_ctx *c, ir_value *v);

/* The elements of an integer constant as int64 (malloc'd; NULL when v is not a readable integer
 * constant). */
int64_t *cn_const_ints(ir_graph *g, ir_value *v, int64_t *count);
/* Constants up to this many elements are written as literals (readable in the text); larger
 * ones as data (saved to the safetensors file beside the graph). */
enum { CN_LITERAL_LIMIT = 16 };
/* Makes v (a constant) hold `data` in its dtype. */
void cn_set_const(ir_graph *g, ir_value *v, const void *data, size_t nbytes);
/* A new i64[count] constant named after `stem`. */
ir_value *cn_new_ints(ir_graph *g, const char *stem, const int64_t *x, int64_t count);

/* The steps: each returns how many nodes it changed. */
uint32_t cn_spell(cn_ctx *c);
uint32_t cn_noops(cn_ctx *c);
uint32_t cn_fold(cn_ctx *c);
uint32_t cn_cse(cn_ctx *c);
/* Readers that read through an exact Cast or a Not (through.c); quantize round trips (qdq.c). */
uint32_t cn_through(cn_ctx *c);
uint32_t cn_qdq(cn_ctx *c);
/* After common subexpressions: no-ops whose output is a graph output (noops.c). */
uint32_t cn_output_noops(cn_ctx *c);

#endif
