/* The epilogue activations of the fused ops, from the table ir/acts.def: the enum, each one's
 * ONNX op and parameters, and the lookups the catalog, the rewriter and the kernels share. */
#ifndef FUSERULE_IR_ACTS_H
#define FUSERULE_IR_ACTS_H

#include "ir/ir.h"

typedef enum {
#define ACT(NAME, ENUM, ...) IR_ACT_##ENUM,
#include "ir/acts.def"
#undef ACT
} ir_act;

/* Not an ir_act, so that a switch over every activation needs no default. */
enum {
    IR_ACT_COUNT = 0
#define ACT(...) +1
#include "ir/acts.def"
#undef ACT
};

/* Where the ONNX op keeps the activation's parameters. */
typedef enum { IR_ACT_FROM_NONE, IR_ACT_FROM_ATTRS, IR_ACT_FROM_INPUTS } ir_act_from;

typedef struct ir_act_info {
    const char *name;        /* the `act` attribute's value */
    ir_op op;                /* the ONNX op that computes it; IR_OP_COUNT: none */
    const char *approximate; /* the op's `approximate` value selecting it, or NULL */
    ir_act_from from;
    unsigned nparams;        /* act_alpha, act_beta */
    const char *param[2];    /* the ONNX names of the parameters */
    double dflt[2];          /* their ONNX defaults: what an absent act_alpha / act_beta means */
    bool ort_conv, ort_gemm; /* com.microsoft FusedConv / FusedGemm take it */
} ir_act_info;

const ir_act_info *ir_act_get(ir_act act);
/* The activation named `name`; false when there is none. */
bool ir_act_lookup(const char *name, ir_act *out);
/* The activation node n computes on its own (Relu, Gelu with its approximate, ...); false for an op
 * that is none (Mul, Identity). */
bool ir_act_of_node(const ir_node *n, ir_act *out);
/* Whether some activation is computed by op. */
bool ir_act_is_op(ir_op op);
/* "Identity, Relu, ..., HardSwish or HardSigmoid" into buf: every name, for messages. */
enum { IR_ACT_NAMES_SIZE = 256 };
void ir_act_names(char *buf, size_t size);

#endif
