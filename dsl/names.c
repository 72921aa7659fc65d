/* Op names, the alias table, and "did you mean" by edit distance. */
#include "dsl/names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Short names people write for ONNX ops. One table: docs/rules.md lists it. */
typedef struct dsl_alias {
    const char *alias;
    const char *op;
} dsl_alias;

static const dsl_alias aliases[] = {
    {"BN", "BatchNormalization"},
    {"LN", "LayerNormalization"},
    {"GAP", "GlobalAveragePool"},
    {"ConvT", "ConvTranspose"},
    {"Q", "QuantizeLinear"},
    {"DQ", "DequantizeLinear"},
    {"ReLU", "Relu"},
    {"GELU", "Gelu"},
    {NULL, NULL},
};

bool dsl_lookup_op(const char *name, size_t len, ir_op *out)
{
    if (ir_op_lookup(name, len, out))
        return true;
    for (const dsl_alias *a = aliases; a->alias; a++)
        if (strlen(a->alias) == len && memcmp(a->alias, name, len) == 0)
            return ir_op_lookup(a->op, strlen(a->op), out);
    return false;
}

enum { MAX_SUGGEST_LEN = 64, NO_MATCH = ~0u };

void dsl_suggest_init(dsl_suggest *s, const char *input, size_t len)
{
    s->input = input;
    s->len = len;
    s->best = NULL;
    s->best_score = NO_MATCH;
}

/* Optimal-string-alignment distance between a and b, ignoring case, for short strings. */
static unsigned distance(const char *a, size_t n, const char *b, size_t m)
{
    unsigned rows[3][MAX_SUGGEST_LEN + 1];
    unsigned *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = (unsigned)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (unsigned)i;
        for (size_t j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            unsigned best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        unsigned *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

void dsl_suggest_add(dsl_suggest *s, const char *candidate)
{
    size_t m = strlen(candidate);
    if (s->len == 0 || s->len > MAX_SUGGEST_LEN || m > MAX_SUGGEST_LEN)
        return;
    if (m == s->len && memcmp(candidate, s->input, m) == 0)
        return; /* the name itself is not a suggestion */
    unsigned score = distance(s->input, s->len, candidate, m);
    unsigned limit = s->len <= 2 ? 0 : s->len <= 3 ? 1 : s->len <= 6 ? 2 : 3;
    if (score > limit) {
        /* A long enough, nearly right prefix ("LayerNorm", "BachNorm") still suggests the full
         * name, ranked behind real typos. */
        if (s->len < 4 || m <= s->len)
            return;
        unsigned prefix = NO_MATCH;
        for (size_t k = s->len - 1; k <= s->len + 1 && k < m; k++) {
            unsigned d = distance(s->input, s->len, candidate, k);
            prefix = d < prefix ? d : prefix;
        }
        if (prefix > 1)
            return;
        score = limit + 1 + prefix;
    }
    if (score < s->best_score) {
        s->best = candidate;
        s->best_score = score;
    }
}

void dsl_suggest_ops(dsl_suggest *s)
{
    for (unsigned i = 0; i < IR_OP_COUNT; i++)
        dsl_suggest_add(s, ir_op_name((ir_op)i));
    for (const dsl_alias *a = aliases; a->alias; a++)
        dsl_suggest_add(s, a->alias);
}

const char *dsl_suggest_hint(const dsl_suggest *s, char *buf, size_t size)
{
    if (!s->best)
        return "";
    snprintf(buf, size, "; did you mean '%s'?", s->best);
    return buf;
}
