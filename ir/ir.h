/* The graph IR: an arena-allocated SSA graph of ONNX-named ops.
 *
 * Every value is defined exactly once: by a graph input, a constant, or a node output. Nodes keep
 * topological order once ir_validate has run. Op names and attribute names are ONNX's; fused ops
 * (FusedConvAct, GemmEpilogue, ...) are rows of the same op catalog (ir/fused_ops.def).
 *
 * Memory: everything a graph holds (nodes, values, names, attributes, constant payloads) lives in
 * the graph's arena and is freed by ir_graph_free. Values share types: each points to the graph's
 * one copy of its type (ir_type_intern), changed only by ir_value_set_type. The `values`, `nodes`,
 * `inputs` and `outputs` lists are growable vectors owned by the graph. */
#ifndef FUSERULE_IR_IR_H
#define FUSERULE_IR_IR_H

#include "base/arena.h"
#include "base/diag.h"
#include "base/strmap.h"
#include "base/vec.h"
#include "ir/names.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- element types ------------------------------------------------------------------------- */

typedef enum {
    IR_DTYPE_UNKNOWN = 0,
    IR_F32,
    IR_F16,
    IR_BF16,
    IR_I8,
    IR_U8,
    IR_I32,
    IR_I64,
    IR_BOOL,
    IR_F64, /* storage dtypes; their arithmetic: docs/graph-format.md, "Element types" */
    IR_I16,
    IR_U16,
    IR_U32,
    IR_U64,
    IR_DTYPE_COUNT
} ir_dtype;

const char *ir_dtype_name(ir_dtype dt);        /* "f32", ...; "?" for unknown */
size_t ir_dtype_size(ir_dtype dt);             /* bytes per element; 0 for unknown */
bool ir_dtype_parse(const char *s, size_t len, ir_dtype *out);
bool ir_dtype_is_float(ir_dtype dt);

/* ---- layouts ------------------------------------------------------------------------------- */

#define IR_LAYOUTS(X) X(NCHW) X(NHWC) X(NCW) X(NWC) X(NCDHW) X(NDHWC) X(NC)

typedef enum {
    IR_LAYOUT_NONE = 0,
#define IR_LAYOUT_ENUM(name) IR_LAYOUT_##name,
    IR_LAYOUTS(IR_LAYOUT_ENUM)
#undef IR_LAYOUT_ENUM
        IR_LAYOUT_COUNT
} ir_layout;

const char *ir_layout_name(ir_layout layout); /* "" for none */
bool ir_layout_parse(const char *s, size_t len, ir_layout *out);

/* ---- shapes and types ---------------------------------------------------------------------- */

enum { IR_MAX_RANK = 8 };

/* A dim is a static size (>= 0), unknown (IR_DIM_UNKNOWN, printed `?`), or a symbol of the graph:
 * a name (printed by name, e.g. N) or an expression over names (`batch * 12`, `S + 1`, interned in
 * the same table; see "dim expressions" below), encoded as IR_DIM_SYM_BASE - symbol index. */
#define IR_DIM_UNKNOWN ((int64_t)-1)
#define IR_DIM_SYM_BASE ((int64_t)-2)
static inline bool ir_dim_is_static(int64_t d) { return d >= 0; }
static inline bool ir_dim_is_symbol(int64_t d) { return d <= IR_DIM_SYM_BASE; }
static inline uint32_t ir_dim_symbol(int64_t d) { return (uint32_t)(IR_DIM_SYM_BASE - d); }
static inline int64_t ir_dim_from_symbol(uint32_t sym) { return IR_DIM_SYM_BASE - (int64_t)sym; }

/* The largest element count a tensor may have: sizes beyond it are refused as impossible. */
#define IR_MAX_NUMEL ((int64_t)1 << 40)

typedef struct ir_type {
    ir_dtype dtype;
    int8_t rank;      /* -1: rank unknown (dims meaningless) */
    uint8_t layout;   /* ir_layout */
    int64_t dims[IR_MAX_RANK];
} ir_type;

/* The distinct types of a graph (ir/types.c): an open-addressing hash set of arena copies. */
typedef struct ir_type_set {
    const ir_type **slots;
    size_t cap, len;
    const ir_type *unknown; /* the unknown type's copy once interned (ir_type_unknown_interned) */
    const ir_type *last;    /* the copy ir_type_intern gave last: compared before the hash */
} ir_type_set;

/* ---- dim expressions (ir/dimexpr.c) ---- */

/* A polynomial over the graph's named symbols with integer coefficients, in canonical form: each
 * term's symbols sorted by name, terms by degree (highest first) then names, like terms merged. */
enum { IR_DIMX_MAX_TERMS = 6, IR_DIMX_MAX_VARS = 4 };
typedef struct ir_dimx_term {
    int64_t coef;
    uint8_t nvars;
    uint32_t vars[IR_DIMX_MAX_VARS]; /* symbol indices of named symbols; repeated for powers */
} ir_dimx_term;
typedef struct ir_dimx {
    uint8_t nterms; /* 0: the polynomial 0 */
    ir_dimx_term terms[IR_DIMX_MAX_TERMS];
} ir_dimx;

bool ir_type_equal(const ir_type *a, const ir_type *b);
bool ir_type_is_static(const ir_type *t); /* known rank and all dims static */
/* Element count of a static type; false when not static or above IR_MAX_NUMEL. */
bool ir_type_numel(const ir_type *t, int64_t *numel);
/* Bytes of a static type; false when not static or too large. */
bool ir_type_nbytes(const ir_type *t, int64_t *nbytes);

/* ---- attributes ---------------------------------------------------------------------------- */

typedef enum { IR_ATTR_INT, IR_ATTR_FLOAT, IR_ATTR_STRING, IR_ATTR_INTS, IR_ATTR_FLOATS } ir_attr_kind;

typedef struct ir_attr {
    const char *name;
    ir_attr_kind kind;
    uint32_t count;     /* elements of INTS / FLOATS */
    uint32_t src_offset; /* where it was written, for diagnostics (0 when built) */
    union {
        int64_t i;
        double f;
        const char *s;
        int64_t *ints;
        double *floats;
    } v;
} ir_attr;

/* ---- the op catalog ------------------------------------------------------------------------ */

typedef enum {
#define IR_OP(name, ...) IR_OP_##name,
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP
    IR_OP_COUNT
} ir_op;

typedef enum {
    IR_CLASS_ELEMENTWISE, /* unary, same shape out as in */
    IR_CLASS_BROADCAST,   /* n-ary elementwise with numpy broadcasting */
    IR_CLASS_REDUCTION,
    IR_CLASS_MOVEMENT,    /* data movement: transpose, reshape, concat, slice, gather, ... */
    IR_CLASS_OPAQUE,      /* conv, matmul, pooling, normalization, ... */
    IR_CLASS_FUSED,       /* added by the kernel registry */
} ir_op_class;

/* Flags of an op in the catalog. */
enum {
    IR_OPF_VIEW = 1 << 0,        /* only relabels a contiguous tensor: counts no kernel, moves no bytes */
    IR_OPF_COMMUTATIVE = 1 << 1, /* first two operands may swap (Add, Mul) */
    IR_OPF_NO_KERNEL = 1 << 2,   /* launches nothing (Constant) */
    IR_OPF_VALUE_SHAPE = 1 << 3, /* an output's size depends on input values (NonZero): executors
                                    show its inputs' data to inference at run time */
    IR_OPF_RANDOM = 1 << 4,      /* draws random numbers (RandomUniform): its output is no
                                    computable reference, so it is never constant-folded */
    IR_OPF_AXES_INPUT = 1 << 5,  /* a Reduce op whose axes, an attribute in older opsets, are its
                                    optional second input (ReduceSum from 13, the others from 18) */
    IR_OPF_INT_ACCUMULATOR = 1 << 6, /* a fused op whose kernel converts the int32 accumulator of
                                        its integer product to f32 as an i32 -> f32 Cast does
                                        (DynamicQuantizeMatMul): such a Cast in its match fuses */
    IR_OPF_CHEAP_SHARE = 1 << 7, /* not elementwise, broadcast or movement, but one pass over its
                                    input all the same (DynamicQuantizeLinear: a min/max and a
                                    map): a rule may absorb it while it stays for other readers
                                    (`shares`, docs/matcher.md "Shared nodes") */
};

typedef struct ir_graph ir_graph;
typedef struct ir_node ir_node;

/* Sets the types of n's outputs from its inputs and attributes, or reports an error located at the
 * node and returns false. */
typedef bool (*ir_infer_fn)(ir_graph *g, ir_node *n, dg_context *dg);

typedef struct ir_attr_schema {
    const char *name;
    ir_attr_kind kind;
    bool required;
    /* default when not required: */
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints; /* default INTS (count in nints); NULL: empty list, "absent" */
    uint32_t nints;
} ir_attr_schema;

#define IR_VARIADIC 255

typedef struct ir_op_info {
    const char *name;
    uint8_t min_inputs, max_inputs; /* max IR_VARIADIC: any number */
    uint8_t min_outputs, max_outputs;
    ir_op_class cls;
    unsigned flags;
    const ir_attr_schema *attrs;
    uint32_t nattrs;
    ir_infer_fn infer;
} ir_op_info;

const ir_op_info *ir_op_info_get(ir_op op);
static inline const char *ir_op_name(ir_op op) { return ir_op_info_get(op)->name; }
/* Exact ONNX name (or fused op name); false when unknown. */
bool ir_op_lookup(const char *name, size_t len, ir_op *out);
const ir_attr_schema *ir_op_attr_schema(ir_op op, const char *attr_name);

/* ---- constants ----------------------------------------------------------------------------- */

typedef enum {
    IR_CONST_LITERAL, /* `= [1, 2, 3]` or `= 0.5`: values listed in the text */
    IR_CONST_RANDOM,  /* `= random(seed=1)`, uniform in [lo, hi) from a counter-based generator */
    IR_CONST_FILE,    /* `= file("w.safetensors", "conv1.weight")`, relative to the graph's folder */
    IR_CONST_DATA,    /* produced in memory (import, rewrite); saved to a safetensors file */
} ir_const_kind;

/* A constant holds only what its kind uses (a union by kind, 56 bytes): read a kind's fields only
 * after checking `kind`. `data` and `nbytes` are every kind's: the materialized bytes. */
typedef struct ir_const {
    ir_const_kind kind;
    uint32_t nparts;       /* DATA: the number of parts (below; next to kind: no padding) */
    void *data;            /* materialized bytes in the value's dtype; NULL until loaded */
    size_t nbytes;
    union {
        struct { /* LITERAL */
            double *literal;      /* element values; a single value fills the whole tensor */
            size_t literal_count;
        };
        struct { /* RANDOM (ir_const_new sets the default range [-1, 1)) */
            uint64_t seed;
            double lo, hi;
        };
        struct { /* FILE */
            const char *file; /* as written */
            const char *key;  /* tensor name in the file */
        };
        struct { /* DATA: where the bytes are while `data` is NULL (at most one of the three) */
            /* in a file mapped read-only that the graph owns (ir_const_adopt_mapping),
             * unaligned; ir_const_data copies them out when read */
            const void *mapped;
            /* rows assembled from other bytes (ir_const_set_rows: concatenated weights), copied
             * together only when read */
            const struct ir_const_part *parts;
            size_t rows;
            /* another constant's elements scaled (ir_const_set_scaled: folded weights), computed
             * only when read */
            const struct ir_const_scaled *scaled;
        };
    };
} ir_const;

/* One source of a constant assembled from rows: row r of the constant is row r of each part in
 * turn; a part's row r is the row_bytes bytes at src + r * row_bytes. */
typedef struct ir_const_part {
    const void *src;
    size_t row_bytes;
} ir_const_part;

/* A constant computed from another's elements: element i is src's element i times
 * factors[(i / inner) % nfactors], computed as ir_const_scale_elems computes it (widened to
 * double, multiplied, rounded to the dtype: f32, f64, f16 or bf16). A BatchNormalization folded
 * into a Conv's weight is its output channels' factors, each over a channel's inner elements. */
typedef struct ir_const_scaled {
    const void *src; /* the source's bytes in the constant's dtype, unaligned */
    const double *factors;
    size_t nfactors;
    size_t inner;
} ir_const_scaled;

/* ---- values and nodes ---------------------------------------------------------------------- */

typedef enum { IR_VALUE_INPUT, IR_VALUE_CONST, IR_VALUE_NODE } ir_value_kind;

/* What inference knows of a small integer vector that is not a constant: the elements of a
 * `Shape` and of the arithmetic on it (Gather, Concat, Mul, ...; ir/shape_value.c, docs/canon.md
 * "Shape values"). An element is a known number, a dim (static, named or an expression), or
 * unknown. */
enum { IR_SV_MAX = 16 }; /* the most elements a shape value holds */
typedef enum { IR_SV_UNKNOWN, IR_SV_INT, IR_SV_DIM } ir_sv_kind;
typedef struct ir_sv_elem {
    int64_t v;    /* IR_SV_INT: the number; IR_SV_DIM: a dim encoding (never unknown) */
    uint8_t kind; /* ir_sv_kind */
} ir_sv_elem;
typedef struct ir_shape_value {
    uint32_t len; /* the value's element count (1 for a scalar) */
    ir_sv_elem el[IR_SV_MAX];
} ir_shape_value;

/* The most outputs a node has: a value's out_index is 16 bits. The text parser and the ONNX
 * importer report a node with more. */
enum { IR_MAX_OUTPUTS = UINT16_MAX };

/* (Fields ordered so that no padding is left between them: 56 bytes.) A constant's `konst` and a
 * computed value's shape value `sv` share their place: read `konst` only when kind is
 * IR_VALUE_CONST, `sv` only when it is not (ir_value_sv). Where the text wrote the value's name is
 * src_offset; its length is scanned from the text when a diagnostic needs it (ir_value_src_len). */
typedef struct ir_value {
    const char *name;
    const ir_type *type; /* the graph's shared copy (ir_type_intern); set by ir_value_set_type */
    ir_node *producer;    /* NODE: the defining node */
    ir_node **uses;
    union {
        ir_const *konst;          /* CONST */
        const ir_shape_value *sv; /* INPUT, NODE: set by inference for small integer values it
                                     can follow, or NULL */
    };
    uint32_t id;          /* index in graph->values */
    uint32_t src_offset;  /* where defined in the source text (0 when built) */
    uint32_t nuses;       /* consumers: filled by ir_compute_uses */
    uint16_t out_index;   /* NODE: which output of producer (< IR_MAX_OUTPUTS) */
    uint8_t kind;         /* ir_value_kind */
    bool type_declared : 1; /* the text wrote its type (checked against inference) */
    bool is_output : 1;     /* listed as a graph output */
} ir_value;

/* The length of v's name where src's text defines it (an unquoted name, or a quoted string up to
 * its closing quote or the end of its line, as the lexer reads them), scanned from v->src_offset:
 * not stored in every value, as only diagnostics read it. 0 when v was built (src_offset 0: the
 * text's first token is never a value's) or src is NULL. */
uint32_t ir_value_src_len(const dg_source *src, const ir_value *v);

/* v's shape value: NULL for a constant (whose place it shares) and where nothing is known. */
static inline const ir_shape_value *ir_value_sv(const ir_value *v)
{
    return v->kind == IR_VALUE_CONST ? NULL : v->sv;
}

/* (Fields ordered so that no padding is left between them: 48 bytes; the operand arrays of a node
 * ir_add_node made follow it in the same allocation.) A million-node graph holds a million of
 * them, so the narrow fields are as narrow as their limits: noutputs fits 16 bits
 * (IR_MAX_OUTPUTS), and the kernel a node is bound to is an index into its graph's table of
 * kernel names (IR_MAX_KERNELS of them), read and set through ir_node_kernel and
 * ir_node_set_kernel, not a pointer. */
struct ir_node {
    uint16_t op;          /* ir_op (the catalog has fewer than 2^16 ops) */
    bool dead;            /* removed by a rewrite; dropped by ir_compact */
    uint8_t src_len;      /* the op's length where it was written (ir_node_src_len: saturated) */
    uint32_t id;          /* index in graph->nodes */
    uint32_t ninputs, nattrs;
    uint32_t src_offset;  /* where its op was written (0 when built) */
    uint16_t noutputs;    /* at most IR_MAX_OUTPUTS */
    uint16_t kernel;      /* the registered kernel a fused node is bound to: 0 for none, else
                             1 + its index in graph->kernels (ir_node_kernel) */
    ir_value **inputs;    /* a NULL entry is an omitted optional input */
    ir_value **outputs;
    ir_attr *attrs;
};

/* A node's src_len for an op written len bytes long: op names are short, a longer span (never a
 * known op) is underlined from its start. */
static inline uint8_t ir_node_src_len(size_t len)
{
    return len < UINT8_MAX ? (uint8_t)len : UINT8_MAX;
}

struct ir_graph {
    ar_arena *arena;
    const char *name;
    VEC(ir_value *) values;  /* every value in definition order */
    VEC(ir_node *) nodes;    /* topological order after ir_validate */
    VEC(ir_value *) inputs;
    VEC(ir_value *) outputs;
    VEC(const char *) symbols;     /* symbolic dim names; an expression's display text */
    VEC(const ir_dimx *) symexprs; /* per symbol: NULL for a name, else its expression */
    sm_map symbol_index;       /* symbol name -> index + 1 */
    sm_map expr_index;         /* an expression's terms (as bytes) -> index + 1 */
    VEC(const char *) kernels; /* the distinct kernel names nodes are bound to (ir_node.kernel) */
    sm_map kernel_index;       /* kernel name -> index + 1 */
    ir_names by_name;          /* value name -> ir_value (ir/names.h) */
    ir_type_set types;         /* the types values point to, one copy of each (ir_type_intern) */
    const char *dir;           /* folder that file() paths are relative to */
    const dg_source *src;      /* the text it was parsed from, or NULL */
    void *const_files;         /* safetensors files opened by ir_const_data (ir/consts.c) */
    const dg_source *src_hold; /* a hold on src (ir_load_text), dropped by ir_graph_free */
    /* the factors ir_const_set_scaled copied last (the arena's): the next equal ones share them */
    const double *last_factors;
    size_t last_nfactors;
};

/* ---- building ------------------------------------------------------------------------------ */

ir_graph *ir_graph_new(const char *name);
void ir_graph_free(ir_graph *g);

/* Each returns NULL when the name is already defined. */
ir_value *ir_add_input(ir_graph *g, const char *name, const ir_type *type);
ir_value *ir_add_const(ir_graph *g, const char *name, const ir_type *type, ir_const *c);
/* Creates a node with `ninputs` inputs (all NULL; set them with ir_set_input) and named outputs
 * of unknown type. Returns NULL when an output name is already defined. */
ir_node *ir_add_node(ir_graph *g, ir_op op, uint32_t ninputs, const char *const *out_names,
                     uint32_t noutputs);
/* The same for names of the given lengths that need not end with a NUL (the parser's tokens): the
 * graph copies each name once. */
ir_value *ir_add_input_n(ir_graph *g, const char *name, size_t len, const ir_type *type);
ir_value *ir_add_const_n(ir_graph *g, const char *name, size_t len, const ir_type *type,
                         ir_const *c);
ir_node *ir_add_node_n(ir_graph *g, ir_op op, uint32_t ninputs, const char *const *out_names,
                       const size_t *out_lens, uint32_t noutputs);
void ir_set_input(ir_node *n, uint32_t index, ir_value *v);

/* The most distinct kernel names a graph holds (a node's kernel is a 16-bit index), and the most
 * its text may name (the text parser reports more): the rest are kept for the rewriter, which
 * binds fused nodes to the registry's kernels, one name per op and backend at most. */
enum { IR_MAX_KERNELS = UINT16_MAX, IR_MAX_TEXT_KERNELS = 64000 };
/* The name of the kernel n is bound to, or NULL. Equal names of one graph are one string. */
static inline const char *ir_node_kernel(const ir_graph *g, const ir_node *n)
{
    return n->kernel ? g->kernels.items[n->kernel - 1] : NULL;
}
/* Binds n to the kernel `name` (NULL: to none), adding a copy of the name to g's table when it
 * is new there. False, n unchanged, when the name is new and g has IR_MAX_KERNELS already. */
bool ir_node_set_kernel(ir_graph *g, ir_node *n, const char *name);
/* The same for a name of len bytes that need not end with a NUL (the parser's token). */
bool ir_node_set_kernel_n(ir_graph *g, ir_node *n, const char *name, size_t len);
void ir_add_output(ir_graph *g, ir_value *v);

ir_const *ir_const_new(ir_graph *g, ir_const_kind kind);
/* Interns a symbolic dim name, returning its dim encoding. */
int64_t ir_symbol(ir_graph *g, const char *name, size_t len);
const char *ir_symbol_name(const ir_graph *g, int64_t dim);
/* The index of the named symbol `name` (never an expression), or -1. */
int64_t ir_symbol_lookup(const ir_graph *g, const char *name);

/* Exact arithmetic on dims of g (static, named or expressions); the result is static when it is a
 * constant, else the interned expression; IR_DIM_UNKNOWN when an operand is unknown or the result
 * is not a polynomial that fits (a quotient with a remainder, too many terms). Static results
 * saturate at IR_MAX_NUMEL + 1, as inference does. */
int64_t ir_dim_sum(ir_graph *g, int64_t a, int64_t b);
int64_t ir_dim_difference(ir_graph *g, int64_t a, int64_t b);
int64_t ir_dim_product(ir_graph *g, int64_t a, int64_t b);
int64_t ir_dim_quotient(ir_graph *g, int64_t a, int64_t b);
/* The dim of a canonical polynomial: static when constant, the symbol itself for `1 * name`. */
int64_t ir_dim_intern(ir_graph *g, const ir_dimx *p);
/* The expression of dim d, or NULL when d is static, unknown or a named symbol. */
const ir_dimx *ir_dim_expr(const ir_graph *g, int64_t d);
/* The value of d with the named symbols bound (bound[i] >= 0, by symbol index; -1: unbound);
 * false when a symbol it reads is unbound or the value overflows. */
bool ir_dim_eval(const ir_graph *g, int64_t d, const int64_t *bound, int64_t *out);
/* Binds the one unbound symbol of expression d so that d == value, when d is linear in it
 * (`S + 1` = 5 binds S = 4); false when there is no such symbol or no whole solution >= 0. */
bool ir_dim_solve(const ir_graph *g, int64_t d, int64_t value, int64_t *bound, uint32_t *solved);
/* A fresh value name not yet used in g, from a stem ("c1" -> "c1_1"). */
const char *ir_fresh_name(ir_graph *g, const char *stem);

/* Values share their types: the graph's one copy of t (equal as ir_type_equal says; the dims past
 * the rank are not part of a type), added on first use. Copies live as long as the graph. */
const ir_type *ir_type_intern(ir_graph *g, const ir_type *t);
/* ir_type_intern of the unknown type (rank -1, no dtype), kept in g->types after its first use. */
const ir_type *ir_type_unknown_interned(ir_graph *g);
/* Every change of a value's type goes through here: v->type = ir_type_intern(g, t). v is g's or
 * a value that g outlives (the rewriter's tentative nodes), as the type lives in g's arena. */
void ir_value_set_type(ir_graph *g, ir_value *v, const ir_type *t);

ir_value *ir_find_value(const ir_graph *g, const char *name);
/* The same, for a name of len bytes that need not end with a NUL. */
ir_value *ir_find_value_n(const ir_graph *g, const char *name, size_t len);

/* Attributes: set replaces an attribute of the same name. */
void ir_set_attr_int(ir_graph *g, ir_node *n, const char *name, int64_t v);
void ir_set_attr_float(ir_graph *g, ir_node *n, const char *name, double v);
void ir_set_attr_string(ir_graph *g, ir_node *n, const char *name, const char *v);
void ir_set_attr_ints(ir_graph *g, ir_node *n, const char *name, const int64_t *v, uint32_t count);
void ir_set_attr_floats(ir_graph *g, ir_node *n, const char *name, const double *v, uint32_t count);
void ir_set_attr(ir_graph *g, ir_node *n, const ir_attr *a); /* copies *a (shallow for arrays) */

/* Lookups that fall back to the catalog's default; ir_get_ints returns the count (0 if absent). */
const ir_attr *ir_node_attr(const ir_node *n, const char *name);
int64_t ir_get_int(const ir_node *n, const char *name);
double ir_get_float(const ir_node *n, const char *name);
const char *ir_get_string(const ir_node *n, const char *name);
uint32_t ir_get_ints(const ir_node *n, const char *name, const int64_t **out);

/* ---- whole-graph passes -------------------------------------------------------------------- */

/* Fills value->uses / nuses and is_output from the live nodes. */
void ir_compute_uses(ir_graph *g);
/* Drops dead nodes and values no live node, input or output refers to; renumbers ids. */
void ir_compact(ir_graph *g);
/* ir_compact that also leaves the use lists as ir_compute_uses would after it (from the same passes
 * over the live nodes' operands and the kept values), and moves value_flag (by value id, may be
 * NULL) along with the values it keeps: value_flag[v->id] before is value_flag[v->id] after.
 * False, the use lists untouched, when a live node reads a value that is not the graph's
 * (validation reports that). */
bool ir_compact_uses(ir_graph *g, bool *value_flag);
/* ir_compact for a graph whose use lists (nuses, is_output) are those of its live nodes, without
 * reading every operand: a value stays when it is an input, an output or read (nuses), or the
 * output of a live node (ir_value_kept, inputs aside). */
void ir_compact_used(ir_graph *g);
bool ir_value_kept(const ir_graph *g, const ir_value *v);

/* Checks a built or parsed graph and infers every type: undefined or duplicate values, cycles
 * (nodes are then sorted topologically, stable w.r.t. their order), arity, attribute names and
 * kinds, declared vs inferred types, impossible shapes. Reports every problem found. */
bool ir_validate(ir_graph *g, dg_context *dg);

/* Validation again after a few changes, at the cost of the changes (ir/validate.c): the
 * fingerprints of a graph ir_validate (or ir_validate_since) has just accepted, one per node and
 * value, changing with what validation reads (a node's op, operands, outputs, attributes; a
 * value's kind, constant, producer, type, shape value). */
typedef struct ir_validated ir_validated;
ir_validated *ir_validated_take(const ir_graph *g);
void ir_validated_free(ir_validated *s);
/* Compacts g (ir_compact) and validates it, with the result, the reports, the types, the order
 * and the use lists ir_compact + ir_validate would give, checking and inferring only what changed
 * since `s` was taken: the nodes and values changed or added, the nodes reading those values, and
 * downstream of them wherever an inferred type or shape value changed. Between the two, nodes may
 * be marked dead and nodes and values appended, not removed or moved. Runs ir_validate itself
 * when a changed node reads a value produced after it (the nodes need sorting again). When it
 * returns true, `s` holds g's fingerprints again (as ir_validated_take would). */
bool ir_validate_since(ir_graph *g, ir_validated *s, dg_context *dg);
/* The same when the caller knows what changed since g was last validated: g compacted, the nodes
 * and values that changed or are new flagged by id in dirty_node and dirty_value (arrays of
 * g->nodes.len and g->values.len, overwritten). A node is checked again when flagged or when it
 * reads a flagged value; types are inferred again there and downstream where one changed. What is
 * not flagged must be as it was (a reader whose operand was replaced is flagged). */
bool ir_validate_marked(ir_graph *g, bool *dirty_node, bool *dirty_value, dg_context *dg);
/* ir_validate_marked where the caller inferred some flagged nodes itself (the rewriter's plans):
 * planned[node id], when not NULL, is the type the op's inference gave that node's one output on
 * the very operands it reads now, with the types and shape values they have now. Such a node is
 * not inferred again (its type is taken, then checked as an inferred one) unless an operand's type
 * or shape value changes during this check. planned may be NULL: ir_validate_marked. */
bool ir_validate_planned(ir_graph *g, bool *dirty_node, bool *dirty_value,
                         const ir_type *const *planned, dg_context *dg);
/* ir_validate_planned at the end of a rewrite round: on a graph whose use lists are current
 * (ir_compact_uses returned true: they are not computed again), and where same[node id], when not
 * NULL, says a flagged node reads the very operands, with the attributes, it had when last
 * validated (a reader of a replaced node's output, now another node's). Such a node is checked
 * (operands, arity, attributes) but not inferred again unless an operand's type or shape value
 * changes during this check or is in error: its inference would give what it gave. */
bool ir_validate_round(ir_graph *g, bool *dirty_node, bool *dirty_value,
                       const ir_type *const *planned, const bool *same, dg_context *dg);
/* Which nodes and values of g changed since `s` was taken (by position: g not compacted since,
 * nodes and values only appended), as ir_validate_since would find them: flags in node_changed
 * (g->nodes.len) and value_changed (g->values.len), the appended ones set. For checking a caller's
 * own record of what changed (canon/'s, in its tests). */
void ir_validated_changed(const ir_validated *s, const ir_graph *g, bool *node_changed,
                          bool *value_changed);

/* Sets the shape values (ir_value.sv) of n's outputs from its inputs' shape values, constants and
 * types, after n's types are inferred; NULL where nothing is known. ir_validate calls it. */
void ir_infer_shape_value(ir_graph *g, ir_node *n);
/* Whether two shape values say the same (NULL, nothing known, equals only NULL). */
bool ir_shape_value_equal(const ir_shape_value *a, const ir_shape_value *b);
/* Whether every element of v's shape value is a known number. */
bool ir_sv_is_constant(const ir_value *v);

/* ---- text form ----------------------------------------------------------------------------- */

/* Parses a .graph text. Returns NULL after reporting errors. The source must outlive the graph. */
ir_graph *ir_parse(const dg_source *src, dg_context *dg);
/* Likewise for a graph a rule test expects (docs/rule-tests.md): a constant may be written
 * `const w : f32[16] = _`, its value not given (it is not compared; seeded random data stands in). */
ir_graph *ir_parse_expected(const dg_source *src, dg_context *dg);
/* Reads, parses and validates a .graph file (file() paths resolved against its folder). */
ir_graph *ir_load_text(const char *path, dg_context *dg);
/* The canonical text: parse(print(g)) == g and canonical text prints back byte for byte. */
void ir_print(const ir_graph *g, FILE *out);

/* Formats "f32[1,64,N,?] NCHW" into buf; returns buf. */
char *ir_type_format(const ir_graph *g, const ir_type *t, char *buf, size_t size);

/* ---- constants' data ----------------------------------------------------------------------- */

/* The bytes of a constant in its dtype, materialized on first use (literal, random, file).
 * NULL after reporting an error (missing file or key, type mismatch). */
const void *ir_const_data(ir_graph *g, ir_value *v, dg_context *dg);
/* The same for a caller that only asks whether a constant qualifies (a guard, a predicate): NULL
 * when the bytes cannot be read, and the reason is dropped, not reported. */
const void *ir_const_data_or_null(ir_graph *g, ir_value *v);
/* Whether the constant's data can be read without loading a file (literal or random). */
bool ir_const_is_cheap(const ir_value *v);
/* Turns v into an in-memory constant holding `data` (nbytes must match its type; data is copied
 * into the graph's arena). Used by import and by rewrites that fold weights. */
void ir_const_set_data(ir_graph *g, ir_value *v, const void *data, size_t nbytes);
/* The same without the copy: `data` (malloc'd) is the graph's from now on, freed with it. */
void ir_const_take_data(ir_graph *g, ir_value *v, void *data, size_t nbytes);

/* The seeded generator behind `random(seed=S, lo=A, hi=B)` and `fuserule run`'s missing inputs:
 * element i of the stream is a pure function of (seed, i), uniform in [lo, hi), converted to dt
 * (integers are rounded down). Deterministic across machines. */
void ir_random_fill(uint64_t seed, double lo, double hi, ir_dtype dt, void *out, size_t count);
/* Elements [first, first + count) of the same stream: filling in chunks gives the same bytes. */
void ir_random_fill_at(uint64_t seed, uint64_t first, double lo, double hi, ir_dtype dt, void *out,
                       size_t count);
/* Closes the files ir_const_data opened for g, and unmaps the mappings g adopted (ir_graph_free
 * calls it). */
void ir_const_files_close(ir_graph *g);

/* Weights that are never copied (docs/onnx.md, "Weights"): a DATA constant may hold its bytes in
 * a file mapped read-only (ir_const.mapped) until something reads them. The graph adopts the
 * mapping (base, len from mmap) and unmaps it when freed. */
void ir_const_adopt_mapping(ir_graph *g, void *base, size_t len);
/* The same for a mapping of a regular file from its offset 0, whose descriptor g keeps (and
 * closes), opened by the name `path`: a writer copies file ranges from it (ir_const_file_range)
 * instead of reading them, or links them (ONNX external data). */
void ir_const_adopt_mapped_file(ir_graph *g, void *base, size_t len, int fd, const char *path);
/* A DATA constant whose nbytes bytes lie at `mapped`, inside a mapping g adopted. */
void ir_const_set_mapped(ir_graph *g, ir_value *v, const void *mapped, size_t nbytes);
/* A DATA constant of `rows` rows, each the concatenation of the parts' rows (the sum of their
 * row_bytes times rows is the type's size): the parts' bytes must live as long as g (its mappings,
 * its constants' data). The parts are copied; the bytes are assembled only when read
 * (ir_const_data, ir_const_bytes); ir_const_rows gives them to a writer that copies them. */
void ir_const_set_rows(ir_graph *g, ir_value *v, size_t rows, const ir_const_part *parts,
                       uint32_t nparts);
/* A row-assembled constant's parts and rows while its bytes are not assembled, else NULL. */
const ir_const_part *ir_const_rows(const ir_value *v, size_t *rows, uint32_t *nparts);
/* Whether [p, p + n) lies in a mapping of g's whose file g keeps open: its descriptor, the
 * range's offset in the file and the name it was opened by (path may be NULL: not asked). */
bool ir_const_file_range(const ir_graph *g, const void *p, size_t n, int *fd, int64_t *offset,
                         const char **path);
/* The bytes of a constant wherever they lie, without materializing them: a mapped constant's or
 * a file() constant's bytes in their file's mapping (unaligned: to be copied, not computed on),
 * otherwise ir_const_data's; *nbytes is their count. NULL after reporting an error, as
 * ir_const_data. */
const void *ir_const_bytes(ir_graph *g, ir_value *v, size_t *nbytes, dg_context *dg);
/* A DATA constant whose bytes are computed when read (docs/onnx.md, "Weights"): `src` (the
 * source's bytes, which must live as long as g: its mappings, its constants' data) scaled per
 * ir_const_scaled; the factors are copied (equal to the last call's: that copy is shared). */
void ir_const_set_scaled(ir_graph *g, ir_value *v, const void *src, const double *factors,
                         size_t nfactors, size_t inner);
/* A scaled constant's description while its bytes are not computed, else NULL. */
const ir_const_scaled *ir_const_scaled_get(const ir_value *v);
/* Whether v's bytes are neither held nor lie in a file but are computed when read (rows,
 * scaled): a writer that streams them takes them a range at a time from ir_const_read_at, so that
 * they are never held whole; every other reader gets them materialized from ir_const_data. */
bool ir_const_is_deferred(const ir_value *v);
/* Bytes [offset, offset + len) of v's bytes into out (offset and len multiples of its element
 * size): a deferred constant's computed for that range only, any other's copied from where they
 * lie (ir_const_bytes: false after reporting an error to dg, as it). */
bool ir_const_read_at(ir_graph *g, ir_value *v, size_t offset, size_t len, void *out,
                      dg_context *dg);
/* in's elements [first, first + count) times s into out's same elements (dtype dt: f32, f64, f16
 * or bf16; in unaligned), each widened to double, multiplied and rounded to dt (through f32 for the
 * 16-bit types); the count of results that are not finite. */
size_t ir_const_scale_elems(ir_dtype dt, void *out, const void *in, size_t first, size_t count,
                            double s);
/* The largest magnitude among the count elements of float dtype dt at p (unaligned), in double;
 * infinity or NaN when one of them is not finite. */
double ir_const_max_abs(ir_dtype dt, const void *p, size_t count);
/* Reads [p, p + n) once, in order, a chunk at a time (each a multiple of `unit` bytes but the
 * last), for a reader that looks at each byte once (a check): a range in a file mapping of g's
 * whose descriptor g keeps is read from the file into a buffer (pread, which costs less than
 * faulting the mapping's pages in and giving them back), any other in place. fn gets each chunk
 * and its offset in the range; when it returns false, so does ir_const_scan, at once. */
typedef bool (*ir_const_scan_fn)(void *arg, const void *chunk, size_t offset, size_t len);
bool ir_const_scan(const ir_graph *g, const void *p, size_t n, size_t unit, ir_const_scan_fn fn,
                   void *arg);
/* Drops the resident pages of [p, p + n) when that range lies in a file mapping of g's (an
 * adopted one or a safetensors file ir_const_data opened): a writer that streamed them out keeps
 * its peak memory low. Anywhere else (memory of the arena, of the heap), and for a range under
 * 64 KiB (not worth a system call), nothing happens. */
void ir_const_release(const ir_graph *g, const void *p, size_t n);
/* Maps the pages of [p, p + n) in one call when that range lies in a file mapping of g's, so that
 * a reader about to read all of it does not fault on each page (a hint: nothing happens where the
 * kernel cannot, for a range under 64 KiB, or anywhere else). */
void ir_const_will_read(const ir_graph *g, const void *p, size_t n);

/* Writes g as canonical text to graph_path, and every IR_CONST_DATA constant to a safetensors file
 * beside it (graph_path with .graph replaced by .safetensors), which the text then refers to with
 * file(...). Both files are written to temporary names and renamed into place; on failure nothing
 * is changed on disk, and g is unchanged.
 *
 * The contract with ir_print: before printing, each IR_CONST_DATA constant becomes IR_CONST_FILE
 * with file = the basename of the safetensors file and key = the value's name (its data stays in
 * memory). file() constants that read the safetensors file being replaced are copied into the new
 * one the same way; when graph_path is in another folder than g->dir, the other file() paths are
 * rewritten relative to it. On success g->dir becomes graph_path's folder. With no IR_CONST_DATA
 * constant, no safetensors file is written. The same graph gives byte-identical files. */
bool ir_save(ir_graph *g, const char *graph_path, dg_context *dg);

/* ---- statistics ---------------------------------------------------------------------------- */

/* What a graph costs to run, counted as DESIGN.md defines it: every live node that launches work is
 * one kernel; Constant and the views (Reshape, Flatten, Squeeze, Unsqueeze, Identity: every tensor
 * of the IR is contiguous, so they only relabel memory) count none. Each kernel reads each input once
 * and writes each output once; views move nothing; Shape reads only metadata. */
typedef struct ir_stats {
    size_t nodes;
    size_t kernels;
    int64_t bytes;          /* estimated memory traffic of all kernels */
    size_t unsized_values;  /* values whose size is unknown (symbolic dims): not in `bytes` */
    uint32_t per_op[IR_OP_COUNT];
} ir_stats;

void ir_compute_stats(const ir_graph *g, ir_stats *out);
/* The same a node at a time, for a pass over the nodes that does other work too (canon's first):
 * ir_stats_begin, then ir_stats_add for every node of g->nodes (dead ones are skipped) gives what
 * ir_compute_stats gives. The sizes of the types met are kept by the type's address. */
enum { IR_STATS_SIZES = 256 };
typedef struct ir_stats_counter {
    ir_stats *out;
    const ir_type *type[IR_STATS_SIZES];
    int64_t bytes[IR_STATS_SIZES]; /* -1: not static */
    bool kernel[IR_OP_COUNT];
} ir_stats_counter;
void ir_stats_begin(ir_stats_counter *c, ir_stats *out);
void ir_stats_add(ir_stats_counter *c, const ir_node *n);
/* Whether a node of this op launches a kernel. */
bool ir_op_is_kernel(ir_op op);

/* ---- Einsum equations (ir/einsum.c; docs/ops.md) ------------------------------------------- */

enum {
    IR_EINSUM_MAX_INPUTS = 8,
    IR_EINSUM_ELLIPSIS = 52, /* labels 0-25 are a-z, 26-51 A-Z, then the ellipsis dims */
    IR_EINSUM_LABELS = IR_EINSUM_ELLIPSIS + IR_MAX_RANK,
};

/* An equation resolved against its inputs' ranks: each input's dims and the output's as labels;
 * an input's ellipsis dims are the rightmost of the common ellipsis labels. */
typedef struct ir_einsum {
    int ninputs;
    int rank[IR_EINSUM_MAX_INPUTS];
    int8_t labels[IR_EINSUM_MAX_INPUTS][IR_MAX_RANK];
    int out_rank;
    int8_t out[IR_MAX_RANK];
    int ellipsis_rank;
} ir_einsum;

/* Parses `equation` for inputs of the given ranks; on error returns false with *err saying what
 * the equation has ("an output letter that no input has", ...). */
bool ir_einsum_parse(const char *equation, const int *ranks, int ninputs, ir_einsum *out,
                     const char **err);
/* The sizes of an equation's labels over inputs of the given dims: size[l] (1 for a label no input
 * has), used[l] (some input has it), and each input's stride along each label (rows 0 to
 * ninputs - 1: 0 where the input broadcasts it, the sum of its dims' strides where a label repeats:
 * the diagonal). False when a label has two sizes of which neither is 1: *a and *b are those. */
bool ir_einsum_sizes(const ir_einsum *e, const int64_t *const *dims, int64_t *size,
                     int64_t (*stride)[IR_EINSUM_LABELS], bool *used, int64_t *a, int64_t *b);

/* ---- ElementwiseChain expressions (defined in ir/catalog_fused.c; see docs/kernels.md) ------- */

/* The functions of the expression language: X(name, arity). */
#define IR_EW_FUNCS(X)                                                                             \
    X(add, 2) X(sub, 2) X(mul, 2) X(div, 2) X(pow, 2) X(max, 2) X(min, 2) X(neg, 1) X(abs, 1)     \
    X(exp, 1) X(log, 1) X(sqrt, 1) X(rsqrt, 1) X(recip, 1) X(sigmoid, 1) X(tanh, 1) X(relu, 1)    \
    X(erf, 1) X(gelu, 1) X(gelu_tanh, 1) X(silu, 1) X(hardswish, 1) X(sin, 1) X(cos, 1)           \
    X(floor, 1) X(ceil, 1) X(softplus, 1) X(leakyrelu, 2) X(elu, 2) X(clip, 3) X(hardsigmoid, 3)  \
    X(sign, 1) X(round, 1) X(tan, 1) X(asin, 1) X(acos, 1) X(atan, 1) X(sinh, 1) X(cosh, 1)       \
    X(asinh, 1) X(acosh, 1) X(atanh, 1) X(thresholdedrelu, 2) X(shrink, 3)

typedef enum {
    IR_EW_INPUT, /* push input `index` */
    IR_EW_CONST, /* push `value` */
#define IR_EW_ENUM(name, arity) IR_EW_##name,
    IR_EW_FUNCS(IR_EW_ENUM)
#undef IR_EW_ENUM
    IR_EW_COUNT
} ir_ew_opcode;

typedef struct ir_ew_instr {
    ir_ew_opcode op;
    uint32_t index; /* IR_EW_INPUT */
    double value;   /* IR_EW_CONST */
} ir_ew_instr;

/* An expression compiled to postfix: a function pops its arguments (first argument deepest). */
typedef struct ir_ew_program {
    ir_ew_instr *code;
    uint32_t len;
    uint32_t depth; /* the most stack slots evaluation needs */
} ir_ew_program;

/* Parses `text`, e.g. "mul(sigmoid(x0), add(x1, 1.5))", over inputs x0..x(ninputs-1). On error
 * returns false with a message and the byte offset in text where it was found. */
bool ir_ew_parse(ar_arena *arena, const char *text, uint32_t ninputs, ir_ew_program *out,
                 const char **err, size_t *err_at);
const char *ir_ew_name(ir_ew_opcode op);

#endif
