/* ONNX import and export (protobuf-c over the onnx.proto that Debian's libonnx-dev ships).
 *
 * Import turns a ModelProto into a validated graph: initializers and Constant nodes become
 * constants, graph inputs keep their symbolic dims, value names are kept as they are, attributes
 * that later opsets moved to inputs become constant inputs (the catalog's form). Export writes a
 * graph back as a ModelProto: catalog ops as standard ONNX, fused ops as the com.microsoft contrib
 * ops of ONNX Runtime where one has the same semantics, otherwise as ops of the "fuserule" domain.
 * docs/onnx.md describes the mapping and every limit.
 *
 * Hostile files are refused with a clear error and never crash: the file is walked once before
 * decoding (wire format, nesting depth), decoding runs under a memory budget proportional to the
 * file size, and every tensor's size is checked against its dims before anything is allocated. */
#ifndef FUSERULE_ONNX_ONNX_IO_H
#define FUSERULE_ONNX_ONNX_IO_H

#include "base/arena.h"
#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The default-domain opsets import accepts (older models load when each op they use has kept its
 * semantics since, or has a form legacy.c converts; see docs/onnx.md), and the ones export writes.
 * Opsets 22 and 23 changed only element types of the catalog's ops (and added Attention,
 * RMSNormalization and RotaryEmbedding, which import as fused ops). */
enum {
    OX_MIN_OPSET = 11,
    OX_MAX_OPSET = 23,
    OX_EXPORT_MIN_OPSET = 13,
    OX_EXPORT_MAX_OPSET = 21,
    OX_EXPORT_DEFAULT_OPSET = 17,
};

/* What import found out besides the graph. */
typedef struct ox_import_info {
    int64_t opset;     /* the model's default-domain opset (0 when unknown) */
    /* True when import failed only because the model is valid ONNX that uses something outside
     * the catalog (an op, a dtype, an attribute, an opset); `reason` then says what, in one line.
     * The conformance runner skips such models; every other failure is a failure. */
    bool unsupported;
    char reason[256];
} ox_import_info;

/* Reads, decodes and validates an .onnx model. NULL after reporting errors to dg. info may be
 * NULL. External data files are read relative to the model's folder, never outside it. */
ir_graph *ox_import(const char *path, ox_import_info *info, dg_context *dg);

/* A tensor read from a serialized TensorProto (the backend tests' input_N.pb / output_N.pb). */
typedef struct ox_tensor {
    const char *name; /* as stored; may be "" */
    ir_type type;     /* static */
    void *data;       /* in the dtype's storage form (f16/bf16 as 16-bit codes, bool as a byte) */
    size_t nbytes;
} ox_tensor;

/* Reads a serialized TensorProto file; the name and data live in `arena`. `as` is the dtype the
 * caller expects, or IR_DTYPE_UNKNOWN: for IR_BF16 and IR_F16, UINT16 data is read as their bit
 * patterns (how ONNX's test data stores bfloat16, numpy having no such type). */
bool ox_read_tensor(const char *path, ir_dtype as, ar_arena *arena, ox_tensor *out,
                    ox_import_info *info, dg_context *dg);

/* What export writes fused ops as. */
typedef enum ox_flavour {
    /* Lossless (the default): a com.microsoft contrib op where one has exactly the fused op's
     * semantics, otherwise an op of the "fuserule" domain that import reads back unchanged. */
    OX_FLAVOUR_LOSSLESS,
    /* For ONNX Runtime: only ops its CPU and CUDA providers run; a fused op without such a contrib
     * op becomes the smallest standard subgraph that computes it (FusedQKV: one MatMul over the
     * concatenated weights and a Split), or is an error naming why it cannot be written. */
    OX_FLAVOUR_ONNXRUNTIME,
} ox_flavour;

/* The flavour a `--for NAME` names ("lossless", "onnxruntime"); false for another name. */
bool ox_flavour_parse(const char *name, ox_flavour *out);

typedef struct ox_export_options {
    /* Default-domain opset to write: 0 chooses the lowest one from OX_EXPORT_DEFAULT_OPSET up that
     * expresses every node; otherwise OX_EXPORT_MIN_OPSET..OX_EXPORT_MAX_OPSET. */
    int64_t opset;
    ox_flavour flavour;
    /* Weights that lie unchanged in the .onnx the graph was imported from become ONNX external
     * data naming that file and their place in it, not copies (docs/onnx.md, "Linked weights"):
     * out_path is the output's name, and the input must lie in its folder or below. */
    bool link_weights;
    const char *out_path;
} ox_export_options;

/* Serializes a validated graph as a ModelProto into a malloc'd buffer (*data, *len; free()).
 * Reports an error (and returns false) for what ONNX cannot express. */
bool ox_export(ir_graph *g, const ox_export_options *opts, uint8_t **data, size_t *len,
               dg_context *dg);

/* The same in two steps, for models too large to hold twice: ox_export_model builds the model
 * (NULL after reporting what ONNX cannot express); ox_model_write streams its bytes, the same
 * bytes ox_export gives, reading each weight where it lies (a weight no rule changed is copied
 * from the mapped file it was imported from, its pages given back as they are written: the
 * weights are never held in memory). False on a write error (errno says why). g must outlive
 * the model, unchanged. */
typedef struct ox_model ox_model;
ox_model *ox_export_model(ir_graph *g, const ox_export_options *opts, dg_context *dg);
size_t ox_model_size(const ox_model *om);
bool ox_model_write(ox_model *om, FILE *out);
void ox_model_free(ox_model *om);

#endif
