/* Einsum equations: parsing (shared by the inference below and the CPU kernel) and Einsum's type
 * inference.
 *
 * An equation is `term,term,...->term` or, implicitly, `term,...` (the output is then the
 * broadcast ellipsis dims followed by the letters that appear exactly once, in alphabetical
 * order). A term is letters (a-z, A-Z) and at most one `...`, which stands for the dims its input
 * has beyond its letters; the ellipsis dims of all inputs broadcast against each other, aligned
 * from the right. Spaces are ignored. */
#include "ir/infer_util.h"

#include <ctype.h>
#include <string.h>

static bool fail(const char **err, const char *what)
{
    *err = what;
    return false;
}

static int letter_label(char c)
{
    return islower((unsigned char)c) ? c - 'a' : c - 'A' + 26;
}

/* Parses one term into labels for an input (rank >= 0) or the output (rank < 0: `...` takes
 * the common ellipsis rank). Returns false with *err set. */
static bool parse_term(const char *s, size_t len, int rank, int ellipsis_rank, int8_t *labels,
                       int *count, int *ell_count, const char **err)
{
    int letters = 0;
    bool has_ellipsis = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ')
            continue;
        if (s[i] == '.') {
            if (has_ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return fail(err, "a '.' that is not one '...'");
            has_ellipsis = true;
            i += 2;
        } else if (isalpha((unsigned char)s[i])) {
            letters++;
        } else {
            return fail(err, "a character other than a letter, ',', '...' or '->'");
        }
    }
    int ell = 0;
    if (rank >= 0) {
        if (has_ellipsis ? letters > rank : letters != rank)
            return fail(err, "a term whose letters do not match its input's rank");
        ell = has_ellipsis ? rank - letters : 0;
    } else {
        ell = has_ellipsis ? ellipsis_rank : 0;
    }
    if (letters + ell > IR_MAX_RANK)
        return fail(err, "a term of more than 8 dims");
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int k = 0; k < ell; k++) /* right-aligned in the common ellipsis */
                labels[n++] = (int8_t)(IR_EINSUM_ELLIPSIS + ellipsis_rank - ell + k);
            i += 2;
        } else if (isalpha((unsigned char)s[i])) {
            labels[n++] = (int8_t)letter_label(s[i]);
        }
    }
    *count = n;
    *ell_count = ell;
    return true;
}

bool ir_einsum_parse(const char *eq, const int *ranks, int ninputs, ir_einsum *e, const char **err)
{
    memset(e, 0, sizeof *e);
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    if (ninputs > IR_EINSUM_MAX_INPUTS)
        return fail(err, "more than 8 inputs");
    /* first pass: the common ellipsis rank */
    const char *p = eq;
    int ell_rank = 0;
    for (int i = 0; i < ninputs; i++) {
        const char *end = memchr(p, ',', lhs_len - (size_t)(p - eq));
        size_t len = end ? (size_t)(end - p) : lhs_len - (size_t)(p - eq);
        if (!end && i + 1 < ninputs)
            return fail(err, "fewer terms than inputs");
        if (end && i + 1 == ninputs)
            return fail(err, "more terms than inputs");
        int count, ell;
        if (!parse_term(p, len, ranks[i], IR_MAX_RANK, e->labels[i], &count, &ell, err))
            return false;
        ell_rank = ell > ell_rank ? ell : ell_rank;
        p = end ? end + 1 : p + len;
    }
    /* second pass with the common ellipsis rank */
    p = eq;
    int uses[IR_EINSUM_LABELS] = {0};
    for (int i = 0; i < ninputs; i++) {
        const char *end = memchr(p, ',', lhs_len - (size_t)(p - eq));
        size_t len = end ? (size_t)(end - p) : lhs_len - (size_t)(p - eq);
        int ell;
        parse_term(p, len, ranks[i], ell_rank, e->labels[i], &e->rank[i], &ell, err);
        for (int k = 0; k < e->rank[i]; k++)
            uses[e->labels[i][k]]++;
        p = end ? end + 1 : p + len;
    }
    e->ninputs = ninputs;
    e->ellipsis_rank = ell_rank;
    if (arrow) {
        int ell;
        if (!parse_term(arrow + 2, strlen(arrow + 2), -1, ell_rank, e->out, &e->out_rank, &ell,
                        err))
            return false;
        for (int k = 0; k < e->out_rank; k++) {
            if (!uses[e->out[k]])
                return fail(err, "an output letter that no input has");
            for (int j = 0; j < k; j++)
                if (e->out[j] == e->out[k])
                    return fail(err, "an output letter written twice");
        }
    } else {
        for (int k = 0; k < ell_rank; k++)
            e->out[e->out_rank++] = (int8_t)(IR_EINSUM_ELLIPSIS + k);
        for (int l = 0; l < IR_EINSUM_ELLIPSIS; l++)
            if (uses[l] == 1) {
                if (e->out_rank == IR_MAX_RANK)
                    return fail(err, "an output of more than 8 dims");
                e->out[e->out_rank++] = (int8_t)l;
            }
    }
    return true;
}

bool ir_einsum_sizes(const ir_einsum *e, const int64_t *const *dims, int64_t *size,
                     int64_t (*stride)[IR_EINSUM_LABELS], bool *used, int64_t *a, int64_t *b)
{
    for (int l = 0; l < IR_EINSUM_LABELS; l++) {
        size[l] = 1;
        used[l] = false;
    }
    for (int i = 0; i < e->ninputs; i++) {
        memset(stride[i], 0, sizeof stride[i]);
        int64_t s = 1;
        for (int k = e->rank[i] - 1; k >= 0; k--) {
            int l = e->labels[i][k];
            int64_t d = dims[i][k];
            if (used[l] && size[l] != d && d != 1 && size[l] != 1) {
                *a = size[l], *b = d;
                return false;
            }
            if (!used[l] || size[l] == 1)
                size[l] = d;
            used[l] = true;
            if (d != 1)
                stride[i][l] += s; /* a repeated label walks the diagonal */
            s *= d;
        }
    }
    return true;
}

/* Einsum(Inputs...) {equation}: one dtype; each letter's size agrees across its uses (the
 * ellipsis dims broadcast); the output has the output term's dims. */
bool ir_infer_Einsum(ir_graph *g, ir_node *n, dg_context *dg)
{
    if (!ir_check_arity(g, n, dg))
        return false;
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (!ir_check_dtype(g, n, dg, i, IR_DTS_NUMERIC) || !ir_check_same_dtype(g, n, dg, 0, i))
            return false;
    ir_dtype dt = ir_common_dtype(n, 0, n->ninputs - 1);
    int ranks[IR_EINSUM_MAX_INPUTS];
    for (uint32_t i = 0; i < n->ninputs && i < IR_EINSUM_MAX_INPUTS; i++) {
        ranks[i] = ir_in(n, i)->rank;
        if (ranks[i] < 0) {
            ir_set_unknown(g, n->outputs[0], dt, -1);
            return ir_infer_done(g, n, dg);
        }
    }
    const char *eq = ir_get_string(n, "equation"), *err = NULL;
    ir_einsum e;
    if (!ir_einsum_parse(eq, ranks, (int)n->ninputs, &e, &err))
        return ir_node_error(g, n, dg, "equation \"%s\" has %s", eq, err);
    int64_t size[IR_EINSUM_LABELS];
    bool seen[IR_EINSUM_LABELS] = {false};
    for (int i = 0; i < e.ninputs; i++)
        for (int k = 0; k < e.rank[i]; k++) {
            int l = e.labels[i][k];
            int64_t d = ir_in(n, (uint32_t)i)->dims[k], u;
            bool ellipsis = l >= IR_EINSUM_ELLIPSIS;
            if (!seen[l] || (ellipsis && size[l] == 1)) {
                size[l] = d;
            } else if (ellipsis && d == 1) {
                continue; /* broadcast */
            } else if (!ir_dim_unify(size[l], d, &u)) {
                return ir_node_error(g, n, dg,
                                     "equation \"%s\": a dim is %lld in one place and "
                                     "%lld in another",
                                     eq, (long long)size[l], (long long)d);
            } else {
                size[l] = u;
            }
            seen[l] = true;
        }
    ir_type y = ir_type_unknown(dt, e.out_rank);
    for (int k = 0; k < e.out_rank; k++)
        y.dims[k] = size[e.out[k]];
    ir_value_set_type(g, n->outputs[0], &y);
    return ir_infer_done(g, n, dg);
}
