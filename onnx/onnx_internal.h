/* Internal to onnx/: decoding with defences, tensors, and the pieces import and export share. */
#ifndef FUSERULE_ONNX_ONNX_INTERNAL_H
#define FUSERULE_ONNX_ONNX_INTERNAL_H

#include "onnx/onnx_io.h"
#include "onnx_proto/onnx.pb-c.h"

#include <stdarg.h>

/* ---- reporting ------------------------------------------------------------------------------ */

/* Errors about one ONNX file. A binary file has no lines, so messages name the node, value or
 * byte offset they are about. Two kinds are kept apart for the conformance runner: a file that is
 * broken (truncated, lying sizes, undefined values) and a valid file that uses something outside
 * the catalog. */
typedef struct ox_report {
    const char *path;
    dg_context *dg;
    ox_import_info *info; /* never NULL inside onnx/ */
    bool invalid;         /* some error was of the first kind */
    bool unsupported;     /* some error was of the second kind */
    /* external data files that could not be opened, each reported once (tensor.c); the count of
     * the other tensors that read it is noted by ox_report_finish */
    struct ox_missing_file *missing;
    size_t nmissing;
    const struct ox_decoded *decoded; /* a lazy decode's tensors left in the file, or NULL */
} ox_report;

void ox_invalid(ox_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ox_unsupported(ox_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets info->unsupported once every error has been reported; notes how many more tensors read
 * each missing external data file, and frees that list. */
void ox_report_finish(ox_report *r);
/* Whether `location` already failed to open (then it counts one more reader and marks r invalid,
 * without another message); else remembers it as failed. */
bool ox_missing_seen(ox_report *r, const char *location);

/* ---- decoding (decode.c) -------------------------------------------------------------------- */

/* Messages nested deeper than this (a graph in an attribute of a node of a graph in an attribute
 * ...) are refused before decoding: protobuf-c recurses once per level. */
enum { OX_MAX_NESTING = 64 };
/* protobuf cannot encode a message of 2 GiB or more; larger weights live in external data. */
#define OX_MAX_FILE_BYTES ((int64_t)INT32_MAX)

typedef struct ox_decoded ox_decoded;

/* Maps a file and decodes it as a message of type `desc` (protobuf-c's structs, decode.c's own
 * decoder), checking its wire format and nesting, under a memory budget. Bytes fields point into
 * the mapping. NULL after reporting; *owner must be released with ox_decoded_free, which frees
 * the message and unmaps the file. */
ProtobufCMessage *ox_decode_file(ox_report *r, const ProtobufCMessageDescriptor *desc,
                                 ox_decoded **owner);
void ox_decoded_free(ox_decoded *d);

/* Weights never copied (docs/onnx.md, "Weights"): the decode maps the file and leaves every bytes
 * field in it; a lazy decode hands on each TensorProto.raw_data of OX_LAZY_MIN_BYTES or more as
 * mapped (ox_lazy_raw_data), so that it stays in the file. The mapping lives as long as *owner,
 * or as the graph that ox_decoded_give_mapping hands it to. */
enum { OX_LAZY_MIN_BYTES = 4096 };
ProtobufCMessage *ox_decode_file_lazy(ox_report *r, const ProtobufCMessageDescriptor *desc,
                                      ox_decoded **owner);
/* Whether message m (a TensorProto of a lazy decode) has raw_data to be left in the file: then
 * *data, *len. */
bool ox_lazy_raw_data(const ox_decoded *d, const ProtobufCMessage *m, const uint8_t **data,
                      size_t *len);
void ox_decoded_give_mapping(ox_decoded *d, ir_graph *g);

/* ---- tensors (tensor.c) --------------------------------------------------------------------- */

/* TensorProto.DataType codes: the ones the IR holds map to ir_dtype; names for the others. */
bool ox_dtype_from_onnx(int32_t code, ir_dtype *out);
int32_t ox_dtype_to_onnx(ir_dtype dt);
const char *ox_onnx_dtype_name(int32_t code);

/* A decoded tensor: `data` points into the message (raw_data), into the mapped file (raw_data a
 * lazy decode left there), or to `owned` (malloc'd, released by ox_tensor_data_release). */
typedef struct ox_tensor_data {
    ir_type type;
    const void *data;
    size_t nbytes;
    void *owned;
    bool mapped; /* data lies in a mapped file: the lazily decoded model (r->decoded) or `map` */
    void *map;   /* a mapping of external data made for this tensor (munmap'd by release unless a
                  * graph adopted it and cleared this), or NULL */
    size_t map_len;
} ox_tensor_data;

/* Decodes dtype, dims and data, checking that the data holds exactly the elements the dims
 * declare. `model_dir` is the folder external data is read from (NULL: external data refused);
 * `what` names the tensor in messages ("initializer 'w'"). */
bool ox_tensor_decode(ox_report *r, const Onnx__TensorProto *t, const char *model_dir,
                      const char *what, ox_tensor_data *out);
void ox_tensor_data_release(ox_tensor_data *d);

/* The shortest decimal that reads back to the float f, as a double: ONNX stores attributes and
 * most weights as float32, and 1e-5f should come back as 1e-05, not 9.99999974737875e-06. */
double ox_float_to_double(float f);

/* ---- model-local functions (functions.c) ---------------------------------------------------- */

/* The graph's nodes with every call of a model-local function replaced by the function's nodes
 * (copies in `arena`, pointing into the message), recursively. False after reporting recursion,
 * a call that does not fit its function, or a function of another default-domain opset. */
bool ox_inline_functions(ox_report *r, ar_arena *arena, const Onnx__ModelProto *m, int64_t opset,
                         const Onnx__NodeProto ***nodes, size_t *count);

/* ---- import helpers (import.c, legacy.c, contrib.c) ----------------------------------------- */

typedef struct ox_importer ox_importer;

/* A constant made by import (a moved attribute): i64 values of the given rank-0 or rank-1 shape. */
ir_value *ox_const_i64(ox_importer *im, const char *stem, const int64_t *values, uint32_t count,
                       bool scalar);
ir_value *ox_const_f32(ox_importer *im, const char *stem, double value);
/* A rank-1 f32 constant made by import (Upsample-7's scales). */
ir_value *ox_const_f32s(ox_importer *im, const char *stem, const float *values, uint32_t count);
/* A rank-1 constant of `count` elements of dt, copied from data (GroupNormalization-18's). */
ir_value *ox_const_vector(ox_importer *im, const char *stem, ir_dtype dt, const void *data,
                          uint32_t count);
ir_graph *ox_importer_graph(ox_importer *im);
ox_report *ox_importer_report(ox_importer *im);

/* An ONNX node on its way into the graph: the IR node, plus the ONNX attributes that the catalog
 * does not take as they are (moved to inputs, renamed, dropped). */
typedef struct ox_pending {
    const Onnx__NodeProto *proto;
    ir_node *node;
    int64_t opset;  /* version of the node's domain the model imports */
    const char *label; /* "node 'name' (Op)" for messages */
} ox_pending;

/* A scalar constant of any float or integer element type made by import. */
ir_value *ox_const_scalar(ox_importer *im, const char *stem, ir_dtype dt, double value);

/* An input that an older form gave as a float attribute and the catalog takes as a scalar of the
 * data's element type (input 0's), known only after validation. */
typedef struct ox_deferred_const {
    ir_node *node;
    uint32_t index;
    double value; /* NAN: the op's default for the absent attribute */
} ox_deferred_const;
void ox_importer_defer_const(ox_importer *im, ir_node *n, uint32_t index, double value);
/* Work that needs the graph's types (a constant of the data's element type, a check of a rank):
 * run after the first validation, which is repeated afterwards. fn reports its own errors. */
typedef bool (*ox_fixup_fn)(ox_importer *im, void *ctx);
typedef struct ox_fixup {
    ox_fixup_fn fn;
    void *ctx;
} ox_fixup;
void ox_importer_after_validation(ox_importer *im, ox_fixup_fn fn, void *ctx);
/* Makes the deferred inputs once validation has typed the graph (legacy.c). */
bool ox_legacy_bounds_fixup(ox_importer *im, const ox_deferred_const *items, size_t count);
/* Whether `name` is an attribute that an older form of op had and legacy.c moves to an input (opset.c). */
bool ox_legacy_attr(ir_op op, int64_t opset, const char *name);

/* Opset conversions of a standard node (legacy.c): returns false after reporting. */
bool ox_legacy_convert(ox_importer *im, ox_pending *p);
/* The catalog op that an op type of older opsets only (Upsample, Scatter) is now (opset.c);
 * false for another name or an opset outside the type's. */
bool ox_legacy_lookup(const char *op_type, int64_t opset, ir_op *out);
/* The lowest default-domain opset whose form of `op` import reads (opset.c). */
int64_t ox_op_first_opset(ir_op op);
/* Softmax before opset 13 works on the input flattened to 2-D at `axis`; after validation, nodes
 * whose axis is not the last are rewritten to Flatten > Softmax > Reshape (legacy.c). */
bool ox_legacy_softmax_fixup(ox_importer *im, ir_node **nodes, size_t count);

/* Used by contrib.c: */
/* A fresh name for the unnamed output `slot` of a node: "<node or first output>_output<slot>". */
const char *ox_importer_fresh(ox_importer *im, const Onnx__NodeProto *np, size_t slot);
/* ir_add_node, reporting duplicate output names instead of failing silently. */
ir_node *ox_importer_add_node(ox_importer *im, ir_op op, uint32_t ninputs, const char **names,
                              uint32_t noutputs, const char *label);
/* The value ONNX input `slot` of p names (NULL when omitted); false after reporting an undefined
 * one. */
bool ox_importer_input(ox_importer *im, ox_pending *p, size_t slot, ir_value **out);

/* ONNX 23's Attention, RMSNormalization and RotaryEmbedding (onnx23.c): the fused op an op_type
 * of the default domain at `opset` becomes, and its inputs and attributes (false after
 * reporting). */
bool ox_onnx23_lookup(const char *op_type, int64_t opset, ir_op *out);
bool ox_onnx23_import(ox_importer *im, ox_pending *p);

/* com.microsoft ops (contrib.c): the fused op a contrib op_type becomes, or false when import does
 * not know it. */
bool ox_contrib_lookup(const char *op_type, ir_op *out);
/* com.microsoft ops that are a standard op (QuantizeLinear, DequantizeLinear): the catalog op and
 * the default-domain opset whose form they have; false for others. */
bool ox_contrib_standard(const char *op_type, ir_op *out, int64_t *opset);
/* Defines the IR node of a contrib node (its outputs mapped to the fused op's); NULL after
 * reporting. */
ir_node *ox_contrib_define(ox_importer *im, const Onnx__NodeProto *np, ir_op op,
                           const char *label);
/* com.microsoft Attention and MultiHeadAttention become several nodes (contrib_attention.c):
 * define makes the nodes that carry the ONNX outputs, import the rest. */
bool ox_contrib_is_attention(const char *op_type);
ir_node *ox_contrib_attention_define(ox_importer *im, const Onnx__NodeProto *np,
                                     const char *label);
bool ox_contrib_attention_import(ox_importer *im, ox_pending *p);
/* com.microsoft ops imported as subgraphs of catalog ops (contrib_dropout.c, contrib_embed.c): the
 * nodes that carry the ONNX outputs exist (Identity placeholders, unless the op defines its own);
 * import builds the rest and turns each into the op that computes its output. False after
 * reporting. */
bool ox_contrib_dropout_import(ox_importer *im, ox_pending *p);
/* BiasDropout and BitmaskDropout: the Dropout node first (the pending node), then the Add of the
 * residual or the Cast of the packed mask that carry the other ONNX outputs. */
ir_node *ox_contrib_dropout_define(ox_importer *im, const Onnx__NodeProto *np, const char *label);
bool ox_contrib_embed_import(ox_importer *im, ox_pending *p);
/* FusedMatMul forms GemmEpilogue cannot hold (transBatchA/B, a B not known to be 2-D) as
 * Transpose, MatMul and Mul (contrib_matmul.c); *decomposed says whether it did. False after
 * reporting. */
bool ox_contrib_fused_matmul(ox_importer *im, ox_pending *p, bool *decomposed);
/* Sets the inputs and attributes of a contrib node's IR node; false after reporting. */
bool ox_contrib_import(ox_importer *im, ox_pending *p);

/* ---- subgraphs made by import (subgraph.c) --------------------------------------------------- */

/* A node of op over `in` whose outputs get fresh names from stem (`stem_0`, ... for several). */
ir_node *ox_build(ox_importer *im, ir_op op, const char *stem, uint32_t nin, ir_value *const *in,
                  uint32_t nout);
ir_value *ox_build1(ox_importer *im, ir_op op, const char *stem, uint32_t nin, ir_value *const *in);
ir_value *ox_binary(ox_importer *im, ir_op op, const char *stem, ir_value *a, ir_value *b);
ir_value *ox_cast(ox_importer *im, const char *stem, ir_value *x, ir_dtype to);
/* x in like's element type: a Cast when import knows that type (like is a graph input or a
 * constant), else a CastLike. */
ir_value *ox_cast_like(ox_importer *im, const char *stem, ir_value *x, ir_value *like);
/* A scalar constant in like's element type (an f32 constant through CastLike when import does
 * not know that type); value is exact in float32. */
ir_value *ox_number_like(ox_importer *im, const char *stem, double value, ir_value *like);
/* Turns n (a node that carries an ONNX output) into op over `in`, without attributes. */
void ox_become(ox_importer *im, ir_node *n, ir_op op, uint32_t nin, ir_value *const *in);
/* The node that carries ONNX output `slot` of p; NULL when the model leaves it unnamed. */
ir_node *ox_output_node(ox_importer *im, const ox_pending *p, size_t slot);
/* The value of a one-element constant (any numeric type), when v is one. */
bool ox_const_number(ox_importer *im, ir_value *v, double *out);

/* ---- which opset spells an op how (opset.c), for import and export ------------------------ */

/* The opset from which a Reduce op (flagged IR_OPF_AXES_INPUT) takes its axes as an input rather
 * than an attribute: 13 for ReduceSum, 18 for the others; 0 for any other op. */
int64_t ox_reduce_axes_input_since(ir_op op);
/* Whether a Reduce node's noop_with_empty_axes matters (1, and no axes or an empty list: the node
 * is an Identity), which only the opsets from ox_reduce_axes_input_since can say; before them
 * the attribute does not exist and no axes reduce every dim. */
bool ox_reduce_noop_needed(const ir_node *n);
/* The lowest opset at which n can be written as a standard op (0: any). */
int64_t ox_opset_node_needs(const ir_node *n);
/* ONNX's IR version that goes with an opset. */
int64_t ox_opset_ir_version(int64_t opset);

/* ---- export helpers (export.c, contrib.c) --------------------------------------------------- */

typedef struct ox_exporter ox_exporter;

/* Emits node n as com.microsoft contrib op(s) when one has exactly its semantics; returns false
 * when none applies (the caller then writes a "fuserule" domain op). */
bool ox_contrib_export(ox_exporter *ex, const ir_node *n);

/* The exporter's building blocks that contrib.c uses. */
Onnx__NodeProto *ox_emit_node(ox_exporter *ex, const char *domain, const char *op_type,
                              const ir_node *n);
void ox_emit_attr_int(ox_exporter *ex, Onnx__NodeProto *np, const char *name, int64_t v);
void ox_emit_attr_float(ox_exporter *ex, Onnx__NodeProto *np, const char *name, double v);
void ox_emit_attr_string(ox_exporter *ex, Onnx__NodeProto *np, const char *name, const char *v);
void ox_emit_attr_ints(ox_exporter *ex, Onnx__NodeProto *np, const char *name, const int64_t *v,
                       uint32_t count);
void ox_emit_attr_floats(ox_exporter *ex, Onnx__NodeProto *np, const char *name,
                         const double *v, uint32_t count);
/* Building blocks of the subgraphs export_ort.c writes: a made-up value name, made-up
 * initializers, a node over names (a constant of the graph named as an input is written), an
 * error about a node (export goes on to find the others). */
int64_t ox_emit_opset(const ox_exporter *ex);
const char *ox_emit_temp(ox_exporter *ex, const char *stem);
const char *ox_emit_const_i64(ox_exporter *ex, const char *stem, const int64_t *v, uint32_t n,
                              bool scalar);
const char *ox_emit_const_float(ox_exporter *ex, const char *stem, ir_dtype dt, double v);
const char *ox_emit_const_data(ox_exporter *ex, const char *stem, const ir_type *t,
                               const void *data, size_t nbytes);
Onnx__NodeProto *ox_emit_raw(ox_exporter *ex, const char *domain, const char *op_type,
                             const char *const *in, uint32_t nin, const char *const *out,
                             uint32_t nout);
void ox_emit_error(ox_exporter *ex, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* For ONNX Runtime (export_ort.c): writes fused node n, which has no contrib op of its exact
 * semantics, as standard ops (and contrib ops) ONNX Runtime runs; reports an error otherwise. */
void ox_ort_export(ox_exporter *ex, const ir_node *n);
/* The opset the subgraph of n needs (0: any): 20 for a Gelu of another type than float32. */
int64_t ox_ort_needs_opset(const ir_node *n);

/* Copies the attributes of n that are listed in `names` (NULL-terminated), when present. */
void ox_emit_copy_attrs(ox_exporter *ex, Onnx__NodeProto *np, const ir_node *n,
                        const char *const *names);
/* Sets np's outputs: n's outputs placed at the given ONNX output slots (others left empty). */
void ox_emit_outputs(ox_exporter *ex, Onnx__NodeProto *np, const ir_node *n, const int *slots,
                     uint32_t nslots);

#endif
