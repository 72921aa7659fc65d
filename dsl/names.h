/* Internal to dsl/: op names and aliases, and "did you mean" suggestions. */
#ifndef FUSERULE_DSL_NAMES_H
#define FUSERULE_DSL_NAMES_H

#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>

/* A catalog op by its ONNX name or an alias (BN, LN, ...). */
bool dsl_lookup_op(const char *name, size_t len, ir_op *out);

/* Finds the candidate closest to a misspelt name (case-insensitive edit distance, or a prefix:
 * "BatchNorm" -> "BatchNormalization"). Feed candidates with dsl_suggest_add. */
typedef struct dsl_suggest {
    const char *input;
    size_t len;
    const char *best;
    unsigned best_score;
} dsl_suggest;

void dsl_suggest_init(dsl_suggest *s, const char *input, size_t len);
void dsl_suggest_add(dsl_suggest *s, const char *candidate);
/* Every catalog op name and alias. */
void dsl_suggest_ops(dsl_suggest *s);
/* "; did you mean 'X'?" or "" (a static or arena-free string: valid until the next call). */
const char *dsl_suggest_hint(const dsl_suggest *s, char *buf, size_t size);

#endif
