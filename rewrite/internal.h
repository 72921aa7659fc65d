/* Internal to rewrite/: the driver's state, a replacement plan, and the action interface.
 *
 * driver.c      rounds: match, sort, commit; keeping a topological order; renumbering; validation
 * legality.c    interior values (fan-out, graph outputs), convexity, precision
 * refusal.c     refusals as records, and their text when a report asks
 * plan.c        the replacement plan's API (what the replacement and the actions edit)
 * plan_inputs.c the fused node's inputs: operands, external inputs, ports, arity
 * plan_attrs.c  its attributes: carried over, the activation epilogue, literals, schema check
 * plan_check.c  the tentative node: inference, output types, kernel support, actions, constants
 * commit.c      committing a checked plan into the graph
 * forward.c     forwarding replacements (`=> @x`)
 * share.c       shared nodes (`shares @t`): which members stay for readers outside the match
 * dce.c         removing the nodes a round leaves unread
 * weights.c     reading and writing constants as doubles
 * actions.c     the action table; action_*.c one action each
 * report.c      text and JSON reports */
#ifndef FUSERULE_REWRITE_INTERNAL_H
#define FUSERULE_REWRITE_INTERNAL_H

#include "rewrite/rewrite.h"

enum { RW_WHY_SIZE = 400 };

/* Per node (by id) during a round: 16 bytes, ids instead of pointers (a million nodes' states are
 * part of apply's peak memory). */
typedef struct rw_node_state {
    uint32_t pos;        /* index in the topological order */
    int32_t claimed_by;  /* the rule whose committed match holds it, -1 */
    uint32_t link;       /* 0; or the fused node it became, its id + 1 (rw_replaced_by); or, with
                          * RW_FORWARDED, a forwarded node's value its readers read instead, its
                          * id + 1 (rw_forwarded_to). A removed node is one or the other. */
    uint32_t mark;       /* a stamp (rw_new_stamp): the plan's it is a member of (rw_is_member),
                          * or a walk's that visited it (convexity, reordering); walks never mark
                          * a member, so one field serves both. After the commit, rw_remove_unread
                          * counts a producer's unlisted readers here (dce.c). */
} rw_node_state;

enum { RW_FORWARDED = 1u << 31 };

static inline bool rw_is_replaced(const rw_node_state *s)
{
    return s->link && !(s->link & RW_FORWARDED);
}

static inline bool rw_is_forwarded(const rw_node_state *s)
{
    return (s->link & RW_FORWARDED) != 0;
}

/* What a round changed, by the ids of its start (rw_remove_unread marks them where it visits the
 * removed nodes; validate_round carries them through renumbering and compaction and frees them). */
typedef struct rw_round_marks {
    bool *node;     /* the live readers of a removed node's output (and, added by validate_round,
                     * the new nodes) */
    bool *value;    /* the outputs of the removed nodes (and the new nodes' and values) */
    size_t removed; /* how many nodes of the round's start were removed */
} rw_round_marks;

typedef struct rw_ctx {
    ir_graph *g;
    const mt_automaton *a;
    rw_options opts;
    rw_report *rep;
    dg_context *dg;
    VEC(rw_node_state) st;
    /* When the round is validated by what it changed (neither validate_each nor whole_validation,
     * which renumber the nodes with their states): a node the round adds (an id from st.len on)
     * keeps its state in the slot of a node its commit removes (rw_state_share), whose pos and mark
     * no one reads again (its claimed_by and link stay what they are: the new node's claimed_by is
     * the same rule, and its link is never set). By id - st.len, the slot; UINT32_MAX for none.
     * The 250k fused nodes of the 1M-node bench's first round take 1 MB here instead of 4 MB of
     * states. */
    bool st_shared;
    VEC(uint32_t) st_new;
    /* Live nodes in a topological order, by id (RW_NO_NODE where one was removed; rw_order_at):
     * 4 bytes an entry, as a million-node first round's order is part of apply's peak memory.
     * Ids are places in g->nodes, which only grows during a round (renumber rebuilds the order). */
    VEC(uint32_t) order;
    uint32_t stamp;
    int64_t budget_left;
    ar_arena *scratch;     /* per round: tentative nodes, plans */
    bool round_forwarded;  /* a forward committed this round (old nodes read other values) */
    struct rw_plan *spare; /* the last plan's lists, kept for the next one (rw_plan_free) */
    /* The type the plan's inference gave a fused node committed this round, on the operands it
     * reads (validation takes it instead of inferring the node again: ir_validate_planned); by the
     * node's id - nodes0 (the round's new nodes, in the order they were added), NULL for none:
     * 8 bytes per new node, where a (node, type) pair took 16 per fused node (rw_commit). */
    VEC(const ir_type *) planned;
    size_t nodes0; /* the node list's length at the round's start: the round's new nodes follow */
    dg_context *quiet;       /* for the plans' inference (rw_quiet) */
    /* per target op (malloc'd when first used): for each of its attributes and each op, the op's
     * schema of that attribute, and whether it is the activation's (carry_attrs asks the same for
     * every match; plan_attrs.c) */
    const ir_attr_schema **carry_schemas[IR_OP_COUNT];
    /* per rule (malloc'd when first used): carry_attrs' pairs for its last match's ops
     * (plan_attrs.c; rw_carry_lists_free) */
    struct rw_carry_list **carry_lists;
    /* the last fused node's attributes (commit.c, shared_attrs): a node whose attributes are the
     * same takes its array */
    ir_op last_op;
    const ir_attr *last_attrs;
    uint32_t last_nattrs;
    rw_round_marks marks; /* the round's end (dce.c, validate_round) */
    /* fold_bn's last factors (action_fold_bn.c; malloc'd): the BNs of a model often share their
     * parameters. Valid while `params` (the values, their constants and their bytes) are the same
     * as when computed; forgotten at each round's start. */
    struct rw_bn_factors {
        const void *params[4][3]; /* each parameter's value, ir_const and bytes */
        double eps;
        int64_t channels;
        double *st; /* s, then t: 2 * channels */
    } bn_last;
} rw_ctx;

/* The id of a node built aside (a tentative fused or helper node): it has no state. */
#define RW_TENTATIVE_ID UINT32_MAX

/* An empty place in the order (rw_ctx.order). */
enum { RW_NO_NODE = UINT32_MAX };

/* The node at place pos of the order, or NULL where one was removed. */
static inline ir_node *rw_order_at(const rw_ctx *ctx, size_t pos)
{
    uint32_t id = ctx->order.items[pos];
    return id == RW_NO_NODE ? NULL : ctx->g->nodes.items[id];
}

/* Puts n (a node of the graph, not a tentative one; NULL: none) at place pos of the order. */
static inline void rw_order_set(rw_ctx *ctx, size_t pos, const ir_node *n)
{
    ctx->order.items[pos] = n ? n->id : RW_NO_NODE;
}

/* The state of a node of the graph (the list grows to a new node's id, or a new node finds the slot
 * it shares: rw_state_grow). Inline: the driver and the checks ask for it several times per node of
 * every match. */
rw_node_state *rw_state_grow(rw_ctx *ctx, const ir_node *n);
/* Before n's state is first asked for: n, added by the commit of plan p, keeps its state in the
 * slot of `removed`, a member the commit removes (the fused node in its root's, a helper node in
 * the member it replaces); when the round shares no slots (ctx->st_shared), n has its own. */
void rw_state_share(const struct rw_plan *p, const ir_node *n, const ir_node *removed);
static inline rw_node_state *rw_state(rw_ctx *ctx, const ir_node *n)
{
    return n->id < ctx->st.len ? &ctx->st.items[n->id] : rw_state_grow(ctx, n);
}
/* What rw_node_state.link names (NULL: nothing, or the other kind), and their writers. */
ir_node *rw_replaced_by(rw_ctx *ctx, const ir_node *n);
ir_value *rw_forwarded_to(rw_ctx *ctx, const ir_node *n);
void rw_set_replaced_by(rw_ctx *ctx, const ir_node *n, const ir_node *by);
void rw_set_forwarded_to(rw_ctx *ctx, const ir_node *n, const ir_value *to);
/* A fresh stamp for rw_node_state.mark. */
uint32_t rw_new_stamp(rw_ctx *ctx);

/* A constant an action creates: a tentative value (for inference) until committed. */
typedef struct rw_newconst rw_newconst;
typedef struct rw_plan rw_plan;
typedef bool (*rw_compute_fn)(rw_plan *p, rw_newconst *c, char *why);

struct rw_newconst {
    const char *stem;      /* the value it replaces or derives from: names the new one */
    ir_value *value;       /* tentative (type only) until committed */
    void *data;            /* filled by compute (malloc) */
    size_t nbytes;
    /* or, data NULL, compute's result is rows assembled from other constants' bytes (the scratch
     * arena's array; ir_const_set_rows) */
    const ir_const_part *parts;
    uint32_t nparts;
    size_t rows;
    /* or, data NULL and scaled.src set, the result is scaled.src's elements scaled, computed when
     * read (the scratch arena's factors; ir_const_set_scaled) */
    ir_const_scaled scaled;
    rw_compute_fn compute;
    void *arg;             /* the action's */
};

/* A helper node an action puts in front of the fused node (a Transpose that gives Attention its K
 * from the K^T the graph computed): tentative until committed. */
typedef struct rw_helper {
    ir_node *node;         /* tentative: op, input, attributes, one output */
    ir_node *replaces;     /* the member whose place in the order it takes */
} rw_helper;

/* An input of the fused node, and the leaf or capture of the rule it came from (NULL for an
 * unconstrained operand or a constant an action made): a port attribute moves its own entry. */
typedef struct rw_input {
    ir_value *v;           /* NULL: an omitted optional input */
    const dsl_pattern *from;
} rw_input;

/* Everything a committed match needs, built and checked before the graph is touched. */
struct rw_plan {
    rw_ctx *ctx;
    ir_graph *g;
    const mt_match *m;
    const dsl_rule *rule;
    uint32_t stamp;                /* members carry it in rw_node_state.stamp */
    VEC(ir_node *) members;        /* the matched nodes, each once */
    VEC(ir_node *) roots;          /* the node of each root */
    VEC(ir_value *) outputs;       /* the roots' values, then the exported ones */
    VEC(rw_input) inputs;          /* the fused node's inputs */
    VEC(ir_attr) attrs;            /* set on the fused node; one per name */
    VEC(rw_newconst *) consts;
    VEC(rw_helper) helpers;
    int64_t new_bytes;
    ir_node *tentative;            /* the fused node before commit */
    VEC(ir_node *) kept;           /* shared members that stay for readers outside the match */
};

bool rw_is_member(const rw_plan *p, const ir_node *n);

/* Whether op is a GEMM whose inputs 0 and 1 are A and B (MatMul, Gemm, GemmEpilogue): the ops
 * fold_alpha, fold_scale and fold_transpose fold into, and cast_moved looks for. */
static inline bool rw_is_gemm(ir_op op)
{
    return op == IR_OP_MatMul || op == IR_OP_Gemm || op == IR_OP_GemmEpilogue;
}

/* Whether a recorded refusal is an overlap (refusal.c). */
bool rw_refusal_is_overlap(const rw_refusal_rec *f);
/* Counts the overlap f (its name the text for RW_REASON_TEXT) in r->overlaps; the index of its
 * pair there (report.c). */
size_t rw_report_count_overlap(rw_report *r, const rw_refusal_rec *f);

/* ---- legality (legality.c): each returns false with the reason in why ---- */

bool rw_check_interior(rw_plan *p, bool forward, char *why);
bool rw_check_convex(rw_plan *p, char *why);
bool rw_check_precision(rw_plan *p, char *why);
/* The tentative fused node's inputs carry only layout tags its kernels read (kn_layouts). */
bool rw_check_layout(const ir_node *fused, char *why);

/* ---- shared nodes (share.c; docs/matcher.md, "Shared nodes") ---- */

/* Whether n is the node of a capture the rule's `shares` names. */
bool rw_is_shared(const rw_plan *p, const ir_node *n);
/* Whether n is a member kept for readers outside the match. */
bool rw_is_kept(const rw_plan *p, const ir_node *n);
/* For a shared member: adds it to the kept ones when a node outside the match will still read it
 * (or it is a graph output), and returns true; false when n is not shared (the interior check
 * applies). */
bool rw_keep_shared(rw_plan *p, ir_node *n);
/* Keeps the shared members the kept ones read; refuses when a kept node reads another member. */
bool rw_close_kept(rw_plan *p, char *why);
/* After the actions: no helper takes a kept node's place, and the fused node and helpers launch
 * no more kernels than the members that go. */
bool rw_check_kept(rw_plan *p, char *why);
/* At commit: the kept nodes leave the members (they stay in the graph and the order). */
void rw_release_kept(rw_plan *p);

/* ---- the replacement (plan*.c, commit.c, forward.c) ----
 *
 * The fused node is planned, checked tentatively, then committed. Inputs: the replacement's
 * explicit operands, or else the match's external inputs; then the actions rewrite that list; then
 * port attributes put their values at their port. Attributes: carried over from the matched ops,
 * then the activation, then the rule's literals, then the actions. Outputs: the roots' values, then
 * the exported ones. Before anything changes, the planned node is built aside: its arity is
 * checked, the op's type inference runs on it and must give exactly the types it replaces, and the
 * target backend must have a kernel that supports it. */

/* Fills the plan from the match: members, roots, outputs. */
void rw_plan_init(rw_plan *p, rw_ctx *ctx, const mt_match *m);
/* Frees what the plan computed; its lists stay with the context for the next plan. */
void rw_plan_free(rw_plan *p);
/* Frees the lists rw_plan_free kept. */
void rw_plan_spare_free(rw_ctx *ctx);
/* Builds inputs and attributes, runs the actions, and checks the tentative node (arity, type
 * inference, output types, kernel support, budget, constants computed). */
bool rw_plan_replacement(rw_plan *p, char *why);
/* Replaces the match by the planned node. */
ir_node *rw_commit(rw_plan *p);
/* `=> @x`: checks and commits a forwarding replacement. */
bool rw_plan_forward(rw_plan *p, char *why);
void rw_commit_forward(rw_plan *p);
/* The value readers of v read now: v itself, or where a chain of forwards earlier in the round
 * sent them. */
ir_value *rw_forwarded(rw_ctx *ctx, ir_value *v);

/* Sets (or replaces) an attribute of the plan; the attribute's arrays must outlive the plan. */
void rw_plan_set_attr(rw_plan *p, const ir_attr *a);
const ir_attr *rw_plan_attr(const rw_plan *p, const char *name);
/* Replaces the first occurrence of `from` in the inputs by `to` (appends when absent and `append`);
 * returns whether it was there. */
bool rw_plan_replace_input(rw_plan *p, const ir_value *from, ir_value *to);
void rw_plan_remove_input(rw_plan *p, const ir_value *v);
/* Inserts v right after `after` in the inputs (at the end when after is absent). */
void rw_plan_insert_after(rw_plan *p, const ir_value *after, ir_value *v);
/* A new constant of type t derived from `stem`, computed later by compute(arg). */
rw_newconst *rw_plan_new_const(rw_plan *p, const char *stem, const ir_type *t, rw_compute_fn compute,
                               void *arg);
/* A helper node of op `op` reading `input`, with one attribute, in place of member `replaces`;
 * returns its tentative output (typed by the op's inference), or NULL with why. */
ir_value *rw_plan_helper(rw_plan *p, ir_op op, ir_value *input, const ir_attr *attr,
                         ir_node *replaces, char *why);
/* The first error dg holds, quoted into out (a generic reason when it holds none). */
void rw_first_error(dg_context *dg, char *out, size_t size);
/* A diagnostics context for a tentative node's inference, empty (the context's own, made anew only
 * after one that reported), and giving it back when done. */
dg_context *rw_quiet(rw_ctx *ctx);
void rw_quiet_done(rw_ctx *ctx, dg_context *dg);
/* a, '_' and b in the arena (what ar_printf's "%s_%s" gives, without a printf; commit.c). */
char *rw_underscored(ar_arena *arena, const char *a, const char *b);

/* The plan's steps, in the order rw_plan_replacement runs them (plan_inputs.c, plan_attrs.c). */
void rw_build_inputs(rw_plan *p);
bool rw_build_attrs(rw_plan *p, char *why);
bool rw_place_ports(rw_plan *p, char *why);
bool rw_check_inputs(rw_plan *p, char *why);
bool rw_check_attrs(rw_plan *p, char *why);
/* Equal dtype, rank, dims, and layout where both carry one (plan_check.c). */
bool rw_same_type(const ir_type *a, const ir_type *b);
/* Marks the members removed (replaced by `by`); their places in the order emptied when
 * clear_order (commit.c). */
void rw_kill_members(rw_plan *p, ir_node *by, bool clear_order);

/* The value a capture of the rule stands for in the match, NULL when unbound. */
ir_value *rw_capture_value(const rw_plan *p, const dsl_capture *c);
ir_node *rw_capture_node(const rw_plan *p, const dsl_capture *c);

/* ---- constants as doubles (weights.c) ---- */

/* The elements of a constant as doubles (malloc'd), or NULL with why set (not a constant, data
 * unreadable, too large). */
double *rw_const_read(rw_plan *p, ir_value *v, int64_t *numel, char *why);
/* The same checks, and the constant's bytes where they lie (unaligned: read them by memcpy; give
 * their pages back with ir_const_release when done), or NULL with why set. */
const void *rw_const_bytes(rw_plan *p, ir_value *v, int64_t *numel, char *why);
/* Stores doubles into a new constant's dtype; false with why when a value is not finite there
 * (f16 overflows above 65504). */
bool rw_const_store(rw_newconst *c, const double *x, int64_t n, const char *what, char *why);
bool rw_why(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Folding float weights in one pass, without doubles in memory: c->data allocated for n elements
 * of c's dtype (ir_const_element reads one element of the input as a double); ir_const_scale_elems
 * scales elements, rounded as rw_const_store rounds (so the bytes are those of rw_const_read, a
 * multiply in double and rw_const_store), returning how many results are not finite; the first
 * element that is not finite (-1: none); rw_const_store's refusal for element i whose unrounded
 * value is x. */
bool rw_const_alloc(rw_newconst *c, int64_t n, char *why);
int64_t rw_first_not_finite(ir_dtype dt, const void *data, int64_t n);
bool rw_any_not_finite(ir_dtype dt, const void *data, int64_t n);
/* The same checks over a constant's bytes where they lie (rw_const_bytes), each read once
 * (ir_const_scan: from the file where they lie in one, never kept resident): whether one of the n
 * elements of float dtype dt is not finite; the largest magnitude among them (infinity or NaN when
 * one is not finite). */
bool rw_scan_not_finite(rw_plan *p, ir_dtype dt, const void *data, int64_t n);
double rw_scan_max_abs(rw_plan *p, ir_dtype dt, const void *data, int64_t n);
/* Whether every element of magnitude at most max_abs, scaled by a factor of magnitude at most
 * max_factor, is finite in dt as ir_const_scale_elems rounds it (rounding is monotonic: the
 * largest product bounds every one). */
bool rw_scale_stays_finite(ir_dtype dt, double max_abs, double max_factor);
bool rw_not_finite(char *why, const char *what, int64_t i, const char *stem, double x, ir_dtype dt);

/* ---- actions (actions.c) ---- */

/* An action checks what it needs in the match and rewrites the plan (inputs, new constants,
 * attributes); false with the reason in why. */
typedef bool rw_action_fn(rw_plan *p, char *why);

/* The implementation of an action (never NULL). */
rw_action_fn *rw_action_get(dsl_action a);

/* ---- unread nodes (dce.c; docs/matcher.md, "Unread nodes") ---- */

/* At the end of a round that committed: marks removed (and out of the order) every node that
 * produced a value one of the round's removed nodes read, once no live node reads any of its
 * outputs and none is a graph output; transitively. Returns how many. The nodes from nodes0 on are
 * the round's. Fills ctx->marks from the removed nodes of the round's start, where it visits them
 * (validate_round takes them). */
size_t rw_remove_unread(rw_ctx *ctx, size_t nodes0);
/* Frees rw_ctx.carry_lists (plan_attrs.c). */
void rw_carry_lists_free(rw_ctx *ctx);

#define RW_ACTION_DECL(id, name) rw_action_fn rw_action_##name;
DSL_ACTIONS(RW_ACTION_DECL)
#undef RW_ACTION_DECL

#endif
