/* ir/acts.def, the one table of epilogue activations, against every copy of it that is not
 * generated from it: the ONNX ops' own schemas in the catalog, rules/cnn.rules' `set Act`, and the
 * activation table of docs/kernels.md. Run from tests/ir (the paths are relative to it). */
#include "../unit.h"

#include "ir/acts.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

/* Every row's op really computes it: the parameters are the op's (attributes with the same ONNX
 * defaults, or optional inputs), and a row selected by `approximate` names a value of it. */
static void test_rows_match_the_catalog(void)
{
    for (unsigned i = 0; i < IR_ACT_COUNT; i++) {
        const ir_act_info *a = ir_act_get((ir_act)i);
        unsigned named = (a->param[0] != NULL) + (a->param[1] != NULL);
        CHECK_INT(a->nparams, named);
        CHECK(a->nparams == 0 ? a->from == IR_ACT_FROM_NONE : a->from != IR_ACT_FROM_NONE);
        CHECK(!a->ort_gemm ||
              a->ort_conv); /* contrib.c's table is FusedConv's, gemm a flag of it */
        ir_act back;
        CHECK(ir_act_lookup(a->name, &back) && back == (ir_act)i);
        if (a->op == IR_OP_COUNT) {
            CHECK(a->nparams == 0 && !a->approximate);
            continue;
        }
        const ir_op_info *op = ir_op_info_get(a->op);
        for (unsigned k = 0; k < a->nparams; k++) {
            if (a->from == IR_ACT_FROM_INPUTS) {
                CHECK(op->max_inputs > k + 1 && op->min_inputs <= k + 1);
                continue;
            }
            const ir_attr_schema *s = ir_op_attr_schema(a->op, a->param[k]);
            CHECK(s && s->kind == IR_ATTR_FLOAT && !s->required);
            if (s && s->f != a->dflt[k])
                fprintf(stderr, "%s: %s defaults to %g in the catalog, %g in ir/acts.def\n",
                        a->name, a->param[k], s->f, a->dflt[k]);
            CHECK(s && s->f == a->dflt[k]);
        }
        if (a->approximate) {
            const ir_attr_schema *s = ir_op_attr_schema(a->op, "approximate");
            CHECK(s && s->kind == IR_ATTR_STRING);
        }
    }
}

/* Nodes map back to their row; other ops and an unknown name to none. */
static void test_lookups(void)
{
    ir_graph *g = ir_graph_new("acts");
    ir_node *gelu = ir_add_node(g, IR_OP_Gelu, 1, (const char *[]){"y"}, 1);
    ir_node *mul = ir_add_node(g, IR_OP_Mul, 2, (const char *[]){"z"}, 1);
    ir_act a = IR_ACT_IDENTITY;
    CHECK(ir_act_of_node(gelu, &a) && a == IR_ACT_GELU);
    ir_set_attr_string(g, gelu, "approximate", "tanh");
    CHECK(ir_act_of_node(gelu, &a) && a == IR_ACT_GELU_TANH);
    CHECK(!ir_act_of_node(mul, &a));
    CHECK(ir_act_is_op(IR_OP_Clip) && ir_act_is_op(IR_OP_HardSwish));
    CHECK(!ir_act_is_op(IR_OP_Identity) && !ir_act_is_op(IR_OP_Mul));
    CHECK(!ir_act_lookup("Swish", &a) && !ir_act_lookup("relu", &a));
    char names[IR_ACT_NAMES_SIZE];
    ir_act_names(names, sizeof names);
    CHECK_STR(names, "Identity, Relu, LeakyRelu, Sigmoid, Tanh, Clip, Gelu, GeluTanh, Silu, "
                     "HardSwish or HardSigmoid");
    ir_graph_free(g);
}

/* Whether `name` is in the list of distinct op names of the rows. */
static bool row_op_named(const char *name, size_t len)
{
    for (unsigned i = 0; i < IR_ACT_COUNT; i++) {
        const ir_act_info *a = ir_act_get((ir_act)i);
        if (a->op == IR_OP_COUNT)
            continue;
        const char *op = ir_op_name(a->op);
        if (strlen(op) == len && strncmp(op, name, len) == 0)
            return true;
    }
    return false;
}

/* rules/cnn.rules' `set Act` is exactly the ops of the table's rows: the activations a matched
 * node can carry into FusedConvAct's epilogue. */
static void test_cnn_rules_set(void)
{
    char *rules = slurp("../../rules/cnn.rules");
    CHECK(rules != NULL);
    if (!rules)
        return;
    const char *set = strstr(rules, "\nset Act = [");
    CHECK(set != NULL);
    unsigned members = 0, distinct_ops = 0;
    if (set) {
        const char *p = set + strlen("\nset Act = [");
        const char *end = strchr(p, ']');
        while (p < end) {
            while (p < end && (*p == ' ' || *p == '|'))
                p++;
            const char *w = p;
            while (p < end && isalnum((unsigned char)*p))
                p++;
            if (p == w)
                break;
            if (!row_op_named(w, (size_t)(p - w)))
                fprintf(stderr, "set Act has %.*s, which no row of ir/acts.def computes\n",
                        (int)(p - w), w);
            CHECK(row_op_named(w, (size_t)(p - w)));
            members++;
        }
    }
    for (unsigned i = 0; i < IR_ACT_COUNT; i++) {
        const ir_act_info *a = ir_act_get((ir_act)i);
        bool first = a->op != IR_OP_COUNT;
        for (unsigned j = 0; j < i && first; j++)
            first = ir_act_get((ir_act)j)->op != a->op;
        distinct_ops += first;
    }
    CHECK_INT(members, distinct_ops);
    free(rules);
}

/* A parameter cell of docs/kernels.md: "alpha (0.01)", "min (-inf)", or empty. */
static void param_cell(char *buf, size_t size, const ir_act_info *a, unsigned k)
{
    if (k >= a->nparams) {
        buf[0] = 0;
        return;
    }
    double d = a->dflt[k];
    if (isinf(d))
        snprintf(buf, size, "%s (%sinf)", a->param[k], d < 0 ? "-" : "+");
    else
        snprintf(buf, size, "%s (%g)", a->param[k], d);
}

/* docs/kernels.md's table under "## Activations" has one row per activation, in the table's
 * order, with its parameters and their defaults. */
static void test_docs_table(void)
{
    char *doc = slurp("../../docs/kernels.md");
    CHECK(doc != NULL);
    if (!doc)
        return;
    const char *sec = strstr(doc, "\n## Activations\n");
    CHECK(sec != NULL);
    const char *p = sec ? strstr(sec, "\n|---|") : NULL;
    CHECK(p != NULL);
    unsigned row = 0;
    while (p && (p = strchr(p + 1, '\n')) && p[1] == '|') {
        const char *line = p + 1;
        const char *eol = strchr(line, '\n');
        char cells[8][160];
        unsigned n = 0;
        const char *c = line + 1;
        while (c < eol && n < 8) {
            const char *bar = memchr(c, '|', (size_t)(eol - c));
            if (!bar)
                break;
            const char *b = c, *e = bar;
            while (b < e && *b == ' ')
                b++;
            while (e > b && e[-1] == ' ')
                e--;
            snprintf(cells[n++], sizeof cells[0], "%.*s", (int)(e - b), b);
            c = bar + 1;
        }
        CHECK_INT(n, 4);
        CHECK(row < IR_ACT_COUNT);
        if (n == 4 && row < IR_ACT_COUNT) {
            const ir_act_info *a = ir_act_get((ir_act)row);
            char want[2][64];
            param_cell(want[0], sizeof want[0], a, 0);
            param_cell(want[1], sizeof want[1], a, 1);
            CHECK_STR(cells[0], a->name);
            CHECK_STR(cells[2], want[0]);
            CHECK_STR(cells[3], want[1]);
        }
        row++;
    }
    CHECK_INT(row, IR_ACT_COUNT);
    free(doc);
}

int main(void)
{
    RUN(test_rows_match_the_catalog);
    RUN(test_lookups);
    RUN(test_cnn_rules_set);
    RUN(test_docs_table);
    return unit_finish();
}
