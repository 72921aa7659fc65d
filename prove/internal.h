/* Internals of the rule prover: the seeded generator, what a rule asks of its leaves, the op
 * knowledge that proposes operands, and the guard solver. */
#ifndef FUSERULE_PROVE_INTERNAL_H
#define FUSERULE_PROVE_INTERNAL_H

#include "prove/prove.h"

#include "dsl/dsl.h"
#include "ir/ir.h"
#include "runtime/runtime.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- random numbers (splitmix64: small, seedable, the same on every machine) ---- */

typedef struct pv_rng {
    uint64_t state;
} pv_rng;

uint64_t pv_rng_next(pv_rng *r);
uint32_t pv_rng_below(pv_rng *r, uint32_t n); /* uniform in [0, n), n > 0 */
double pv_rng_uniform(pv_rng *r, double lo, double hi);
bool pv_rng_chance(pv_rng *r, double p);

/* ---- what the rule asks of each pattern node (computed once per rule: facts.c) ---- */

typedef struct pv_node_facts {
    bool is_const;    /* `:const`, read by value(), or feeds a `{attr = @c}` */
    bool one_element; /* read by value(), `numel(@c) == 1`, or a `{attr = @c}` */
    bool positive;    /* an epsilon: feeds `{epsilon = @c}`, or is added under a Sqrt or Pow
                       * (`Sqrt(Add(ms, @eps))`): drawn small and positive, on a log scale */
    int8_t rank;      /* `:rankN` or `rank(@c) == N`; -1 = any */
    ir_dtype dtype;   /* `:i8`, ...; IR_DTYPE_UNKNOWN = any */
    bool exported;    /* `exports @c`: also made a graph output on some candidates */
    uint64_t export_mask; /* bit N: `exports @c.N` (N < 64): the node is built with that output,
                           * always a graph output */
    bool shared;      /* `shares @c`: also made a graph output (read outside the match, so kept)
                         on some candidates */
    const struct dsl_pattern *output_of; /* `is_output(@c, @n, i)`: @c is built as output
                                          * output_index of @n's node, not as a leaf */
    uint32_t output_index;
    const struct dsl_pattern *causal_of; /* `causal_mask(@c, @s)`: @c is built as the causal
                                          * mask of @s's scores, once @s is built */
} pv_node_facts;

/* An attribute value the guard compares attr(@n, name) with. */
typedef struct pv_attr_hint {
    const dsl_pattern *node;
    ir_attr value; /* value.name is the attribute */
} pv_attr_hint;

typedef struct pv_facts {
    const dsl_rule *rule;
    pv_node_facts *nodes; /* per rule->nodes[i] */
    pv_attr_hint *attrs;
    uint32_t nattrs;
} pv_facts;

/* facts->nodes and facts->attrs are allocated in the arena. */
void pv_facts_compute(const dsl_rule *r, ar_arena *arena, pv_facts *facts);

/* ---- building one candidate (generate.c, ops.c) ---- */

/* What a draw tells the prover besides its graph. */
typedef struct pv_trace {
    uint64_t param_inputs; /* bit i: graph input i is a parameter (a weight made an input) */
    char why[200];         /* a failed draw: the op, the operand and the reason */
} pv_trace;

/* What the Casts of a candidate do (drawn at its first Cast). */
typedef enum {
    PV_CASTS_UNDRAWN,
    PV_CASTS_MIXED,   /* 16-bit data widened to f32, f32 narrowed back: mixed precision */
    PV_CASTS_NARROW,  /* f32 narrowed to 16 bits (and back) */
    PV_CASTS_INTEGER, /* f32 to i32 (and back) */
} pv_casts;

/* The generator's state for one candidate graph. */
typedef struct pv_gen {
    ir_graph *g;
    const pv_facts *facts;
    pv_rng *rng;
    int64_t pool[3];      /* the dims this candidate draws from (shared dims line up often) */
    ir_type primaries[8]; /* the primary data types drawn so far, reused to line up operands */
    uint32_t nprimaries;
    ir_value **values;       /* per pattern node: the value it stands for once built */
    uint32_t names;          /* counter for fresh value names */
    uint32_t turn;           /* see pv_generate */
    const dsl_pattern *node; /* the op node being built */
    ir_dtype half;           /* the 16-bit float type of a mixed-precision candidate, once drawn */
    pv_casts casts;          /* what its Casts do, once drawn */
    pv_trace *trace;         /* never NULL while building */
} pv_gen;

/* Builds a candidate instance of the rule, or NULL when this draw gives no well-typed graph (then
 * trace->why says which op and operand stopped it, and why). The same rng state and `turn` give
 * the same graph. `turn` (the instances found so far) makes the choices of alternatives, optional
 * ops and the attributes the pattern leaves free cycle, so that N instances cover up to N options
 * rather than a random few. trace may be NULL. */
ir_graph *pv_generate(const pv_facts *facts, pv_rng *rng, uint32_t turn, pv_trace *trace);

/* Records why the draw fails (the first reason is kept) and returns false. */
bool pv_why(pv_gen *gen, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Option k of n for an attribute or operand shape of the node being built: mostly (85%) the one
 * whose turn it is (offset by `salt` and the node, so that two choices do not move in lockstep),
 * sometimes a random one. */
uint32_t pv_cycle(pv_gen *gen, uint32_t salt, uint32_t n);

/* What the op knowledge proposes for an operand that is not built yet. */
typedef enum {
    PV_DOM_ANY,      /* uniform in [-1, 1) */
    PV_DOM_POSITIVE, /* [0.5, 1.5): variances, divisors that must not be tiny */
    PV_DOM_SCALE,    /* [0.002, 0.01): quantization scales (full-range i8 data dequantizes
                      * to about [-1.3, 1.3], like float data: the f32 original of a QGemm
                      * then rounds within the absolute tolerance) */
    PV_DOM_INT,      /* small integers: zero points [-3, 3], exponents {2, 3} */
    PV_DOM_EPSILON,  /* epsilons: a typical 1e-5 or 1e-6 (1e-12 some exporters write), or
                      * log-uniform in [1e-12, 1e-1]: an epsilon outside the square root or not
                      * carried into the fused node shows at the large ones */
} pv_domain;

typedef struct pv_operand {
    ir_type type;
    bool want_const; /* a parameter: weights, statistics, axes, shapes, scales */
    pv_domain domain;
    double *values; /* exact values (axes, shapes, slice bounds), numel of type; or NULL */
} pv_operand;

/* Sets the attributes node n needs that are not set yet, and proposes every input that is not
 * set yet (n->inputs[i] NULL) from the ones that are, into out[i]. hints[i] is what the pattern
 * asks of the leaf in slot i (NULL for an op node or a slot the pattern leaves unconstrained).
 * False when the op cannot be instantiated with these inputs. */
bool pv_op_propose(pv_gen *gen, ir_node *n, const pv_node_facts *const *hints, pv_operand *out);

/* A static type of `rank` dims drawn from the pool ("primary" data: the first tensor of a chain). */
ir_type pv_random_type(pv_gen *gen, int rank);

/* ---- the guard (solve.c) ---- */

/* A shape the guard asks `node` to have, `shape(@n) == shape(@y)` with @y built or
 * `shape(@n) == [e0, e1, ...]` with every element computable from what is built; false when
 * there is none. Leaves take it, and a Reshape takes it as its target. */
bool pv_solve_shape(const pv_gen *gen, const dsl_pattern *node, ir_type *out);

/* Sets the dims of t (the type leaf `node` is about to get) that the guard fixes with
 * `dim(@n, k) == e`, e computable from what is built (`dim(@scale, 0) == dim(@x, -1)`). */
void pv_solve_dims(const pv_gen *gen, const dsl_pattern *node, ir_type *t);

/* A value for the one-element constant of `dtype` that leaf `node` becomes, as the guard's
 * comparisons with value(@c) ask for it, evaluated with what is built so far; false when the
 * guard says nothing usable about it. */
bool pv_solve_value(const pv_gen *gen, const dsl_pattern *node, ir_dtype dtype, double *out);

/* ---- judging an output (judge.c) ---- */

typedef struct pv_judgment {
    bool ok;
    bool reference;           /* judged against the f64 reference (else against the original) */
    rt_tolerance tol;         /* the tolerance it was judged with */
    size_t special;           /* elements where NaN or an infinity (with its sign) is not where
                               * the original has it */
    size_t bad;               /* finite elements out of tolerance */
    double worst_diff;        /* the largest |rewritten - f64| over the finite elements
                               * (|rewritten - original| without the reference) */
    double original_distance; /* the largest |original - f64|; 0 without the reference */
    size_t at;                /* the worst element: the first NaN/Inf disagreement, else the one
                               * furthest out of tolerance */
} pv_judgment;

/* The tolerance for an output of dtype dt when the inputs were scaled by `scale`, judged against
 * the f64 reference or (reference false) against the original (judge.c). */
rt_tolerance pv_tolerance(ir_dtype dt, double scale, bool reference);

/* Judges the rewritten graph's value of one output against `ref`, the f64 reference's value of it
 * (NULL: none, or not a float output), and the original's (same type as the rewritten one), run on
 * inputs scaled by `scale` (1 for the others): rt_judge with pv_tolerance. */
pv_judgment pv_judge(const rt_tensor *original, const rt_tensor *rewritten, const rt_tensor *ref,
                     double scale);

/* ---- the inputs an instance runs on (inputs.c) ---- */

typedef enum {
    PV_INPUTS_DRAWN,   /* what `fuserule verify --seed S` draws: floats uniform in [-1, 1) */
    PV_INPUTS_TIMES8,  /* the same, float inputs scaled by 8 */
    PV_INPUTS_TIMES64, /* ... by 64 */
    PV_INPUTS_SMALL,   /* ... by 1/1024: where a normalization's epsilon is not small beside the
                        * statistics (an epsilon outside the square root, or not carried) */
    PV_INPUTS_SPECIAL, /* the same, with a few NaN, +-inf, -0 and 0 planted in each float input */
    PV_INPUTS_COUNT,
} pv_inputs_kind;

/* The factor a variant scales the float inputs by (1 for the others). */
double pv_inputs_scale(pv_inputs_kind kind);

/* A copy of `drawn` (the inputs the executor drew) made into variant `kind`, allocated in
 * `arena`; `seed` places the planted values, which go only into data inputs (is_param[i] false:
 * not a weight or other parameter the generator made a graph input). */
rt_tensor *pv_inputs_variant(const rt_tensor *drawn, size_t n, pv_inputs_kind kind, uint64_t seed,
                             const bool *is_param, ar_arena *arena);
/* How a counterexample's inputs were made, for its header: "what `fuserule verify --seed 7` draws
 * for this graph, scaled by 8". */
void pv_inputs_describe(pv_inputs_kind kind, uint64_t seed, FILE *out);

#endif
