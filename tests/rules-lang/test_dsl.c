/* The shape of the rule AST (dsl/dsl.h) for a few rules: chains desugared to trees rooted at the
 * sink, shared nodes, horizontal roots, commutativity, predicates, replacements, guards, and the
 * hooks the CLI sets (kernels, input ports). */
#include "dsl/dsl.h"
#include "tests/unit.h"

#include <string.h>

typedef struct {
    dsl_ruleset *rs;
    dg_context *dg;
    bool ok;
} loaded;

static loaded load_with(const char *text, const dsl_options *opts)
{
    loaded l = {dsl_ruleset_new(opts), dg_new(), false};
    l.ok = dsl_load_text(l.rs, "t.rules", text, strlen(text), l.dg);
    l.ok = dsl_check(l.rs, l.dg) && l.ok;
    return l;
}

static loaded load(const char *text)
{
    return load_with(text, NULL);
}

static void unload(loaded *l)
{
    dsl_ruleset_free(l->rs);
    dg_free(l->dg);
}

static const dsl_capture *capture(const dsl_rule *r, const char *name)
{
    for (uint32_t i = 0; i < r->ncaptures; i++)
        if (strcmp(r->captures[i]->name, name) == 0)
            return r->captures[i];
    return NULL;
}

static bool is_op(const dsl_pattern *p, ir_op op)
{
    return p->kind == DSL_PAT_OP && p->nops == 1 && p->ops[0] == op;
}

static void test_card_form(void)
{
    loaded l = load("Conv>BN>Relu => FusedConvAct[fold_bn]\n");
    CHECK(l.ok);
    CHECK_INT(l.rs->nrules, 1);
    const dsl_rule *r = l.rs->rules[0];
    CHECK(r->checked);
    CHECK(r->anonymous);
    CHECK_STR(r->name, "t.rules:1");
    CHECK_INT(r->nroots, 1);
    const dsl_pattern *relu = r->roots[0];
    CHECK(is_op(relu, IR_OP_Relu));
    CHECK_INT(relu->noperands, 1);
    CHECK(!relu->open); /* Relu(x) lists every operand Relu has */
    const dsl_pattern *bn = relu->operands[0];
    CHECK(is_op(bn, IR_OP_BatchNormalization));
    CHECK_STR(bn->text, "BN");
    CHECK_INT(bn->noperands, 1);
    CHECK(bn->open);
    const dsl_pattern *conv = bn->operands[0];
    CHECK(is_op(conv, IR_OP_Conv));
    CHECK_INT(conv->noperands, 0);
    CHECK(conv->open);
    /* operands come before their users */
    CHECK_INT(r->nnodes, 3);
    CHECK(r->nodes[0] == conv && r->nodes[1] == bn && r->nodes[2] == relu);
    CHECK_INT(conv->id, 0);
    CHECK_INT(r->nops, 3);
    CHECK_INT(r->priority, 3);
    CHECK(!r->priority_explicit);
    CHECK_INT(r->repl.kind, DSL_REPL_OP);
    CHECK_INT(r->repl.op, IR_OP_FusedConvAct);
    CHECK(!r->repl.operands_explicit);
    CHECK_INT(r->repl.nactions, 1);
    CHECK_INT(r->repl.actions[0], DSL_ACTION_FOLD_BN);
    CHECK(r->guard == NULL);
    CHECK_INT(l.rs->nops_used, 4);
    unload(&l);
}

static void test_shared_nodes(void)
{
    loaded l = load("rule softmax: let m = ReduceMax(@x) {keepdims = 1}\n"
                    "              let e = Exp(Sub(@x, m))\n"
                    "              Div(e, ReduceSum(e) {keepdims = 1}) => Softmax(@x)\n");
    CHECK(l.ok);
    const dsl_rule *r = l.rs->rules[0];
    const dsl_pattern *div = r->roots[0];
    CHECK(is_op(div, IR_OP_Div));
    const dsl_pattern *exp = div->operands[0], *sum = div->operands[1];
    CHECK(is_op(exp, IR_OP_Exp));
    CHECK(is_op(sum, IR_OP_ReduceSum));
    CHECK(sum->operands[0] == exp); /* e is one node with two users */
    const dsl_pattern *sub = exp->operands[0];
    const dsl_pattern *x = sub->operands[0], *max = sub->operands[1];
    CHECK(is_op(max, IR_OP_ReduceMax));
    CHECK(max->operands[0] == x); /* @x written three times: one leaf */
    CHECK_INT(x->users, 2);        /* Sub and ReduceMax */
    CHECK_INT(exp->users, 2);
    CHECK_INT(div->users, 0);
    CHECK_INT(x->kind, DSL_PAT_ANY);
    CHECK_INT(max->nattrs, 1);
    CHECK_STR(max->attrs[0].name, "keepdims");
    CHECK_INT(max->attrs[0].kind, IR_ATTR_INT);
    CHECK_INT(max->attrs[0].v.i, 1);
    CHECK_INT(r->nnodes, 6);
    for (uint32_t i = 0; i < r->nnodes; i++)
        for (uint32_t k = 0; k < r->nodes[i]->noperands; k++)
            CHECK(r->nodes[i]->operands[k]->id < r->nodes[i]->id);
    const dsl_capture *e = capture(r, "e");
    CHECK(e && e->is_let && e->node == exp);
    CHECK(capture(r, "x") && capture(r, "x")->node == x);
    CHECK(r->repl.operands_explicit);
    CHECK_INT(r->repl.noperands, 1);
    CHECK(r->repl.operands[0]->node == x);
    unload(&l);
}

static void test_horizontal(void)
{
    loaded l = load("rule qkv: MatMul(@x, @wq:const) & MatMul(@x, @wk:const) & MatMul(@x, "
                    "@wv:const:f16) => FusedQKV[concat_weights]\n");
    CHECK(l.ok);
    const dsl_rule *r = l.rs->rules[0];
    CHECK_INT(r->nroots, 3);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(is_op(r->roots[i], IR_OP_MatMul));
        CHECK(!r->roots[i]->open);
        CHECK(r->roots[i]->operands[0] == r->roots[0]->operands[0]);
        CHECK(r->roots[i]->operands[1]->preds.is_const);
    }
    CHECK_INT(r->roots[2]->operands[1]->preds.dtype, IR_F16);
    CHECK_INT(r->roots[0]->operands[1]->preds.dtype, IR_DTYPE_UNKNOWN);
    CHECK_INT(r->repl.actions[0], DSL_ACTION_CONCAT_WEIGHTS);
    unload(&l);
}

static void test_commutative_and_sets(void)
{
    loaded l = load("set AddMul = [Add | Mul]\n"
                    "rule a: Add(@x, Relu) => Relu(@x)\n"
                    "rule b: Sub(@x, Relu) => Relu(@x)\n"
                    "rule c: AddMul(@x, Relu) => Relu(@x)\n"
                    "rule d: [Add | Sub](@x, Relu) => Relu(@x)\n");
    CHECK(l.ok);
    CHECK(l.rs->rules[0]->roots[0]->commutative);
    CHECK(!l.rs->rules[1]->roots[0]->commutative);
    const dsl_pattern *c = l.rs->rules[2]->roots[0];
    CHECK(c->commutative);
    CHECK_INT(c->nops, 2);
    CHECK_INT(c->ops[0], IR_OP_Add);
    CHECK_INT(c->ops[1], IR_OP_Mul);
    CHECK(!l.rs->rules[3]->roots[0]->commutative);
    unload(&l);
}

static void test_chain_details(void)
{
    loaded l = load("rule opt: Conv > BN? > Relu@a => FusedConvAct {act = @a}\n"
                    "rule caret priority 7: Sqrt > Div(@one:const, ^) => Reciprocal(@one)\n"
                    "rule open: Conv{group = 1, strides = [1, 1]}(@x, @w, ...) > Relu => "
                    "FusedConvAct(@x, @w)\n");
    CHECK(l.ok);
    const dsl_rule *opt = l.rs->rules[0];
    const dsl_pattern *bn = opt->roots[0]->operands[0];
    CHECK(bn->optional);
    CHECK(!opt->roots[0]->optional);
    CHECK_INT(opt->repl.nattrs, 1);
    CHECK_INT(opt->repl.attrs[0].kind, DSL_RATTR_ACT);
    CHECK(opt->repl.attrs[0].capture->node == opt->roots[0]);

    const dsl_rule *caret = l.rs->rules[1];
    CHECK_INT(caret->priority, 7);
    CHECK(caret->priority_explicit);
    const dsl_pattern *div = caret->roots[0];
    CHECK(div->operands[0]->kind == DSL_PAT_ANY);
    CHECK(is_op(div->operands[1], IR_OP_Sqrt));

    const dsl_pattern *conv = l.rs->rules[2]->roots[0]->operands[0];
    CHECK(conv->open);
    CHECK_INT(conv->noperands, 2);
    CHECK_INT(conv->nattrs, 2);
    CHECK_STR(conv->attrs[1].name, "strides");
    CHECK_INT(conv->attrs[1].kind, IR_ATTR_INTS);
    CHECK_INT(conv->attrs[1].count, 2);
    unload(&l);
}

/* An activation attribute other than `act` (SqueezeExcite's gate: the target has gate_alpha) takes
 * the captured op's activation with its parameters; a string attribute without NAME_alpha takes
 * only the op's name. */
static void test_act_attrs(void)
{
    loaded l = load("rule se: Mul(@x, Sigmoid@g(FusedConvAct(FusedConvAct@down(_, @w1, @b1),"
                    " @w2, @b2))) => SqueezeExcite(@x, @w1, @b1, @w2, @b2)"
                    " {act = @down, gate = @g}\n");
    CHECK(l.ok);
    const dsl_rule *se = l.rs->rules[0];
    CHECK_INT(se->repl.nattrs, 2);
    CHECK_INT(se->repl.attrs[0].kind, DSL_RATTR_ACT);
    CHECK_INT(se->repl.attrs[1].kind, DSL_RATTR_ACT);
    CHECK_STR(se->repl.attrs[1].value.name, "gate");
    unload(&l);
}

static void test_guard_types(void)
{
    loaded l = load("rule g: Conv@c(@x, @w) > Add(@b:const) => Conv(@x, @w, @b)\n"
                    "        where shape(@b) == [64] && dim(@x, -1) % 8 == 0 && attr(@c, group) == 1"
                    " && dtype(@x) == f16\n");
    CHECK(l.ok);
    const dsl_expr *g = l.rs->rules[0]->guard;
    CHECK(g != NULL);
    CHECK_INT(g->kind, DSL_EXPR_BINARY);
    CHECK_INT(g->op, DSL_OP_AND);
    CHECK_INT(g->type, DSL_TYPE_BOOL);
    const dsl_expr *dtype_eq = g->args[1];
    CHECK_INT(dtype_eq->args[0]->kind, DSL_EXPR_CALL);
    CHECK_INT(dtype_eq->args[0]->fn, DSL_FN_DTYPE);
    CHECK_INT(dtype_eq->args[1]->kind, DSL_EXPR_DTYPE);
    CHECK_INT(dtype_eq->args[1]->v.dtype, IR_F16);
    const dsl_expr *first = g->args[0]->args[0]->args[0]; /* shape(@b) == [64] */
    CHECK_INT(first->args[0]->type, DSL_TYPE_SHAPE);
    CHECK_INT(first->args[1]->type, DSL_TYPE_INTS);
    const dsl_expr *attr = g->args[0]->args[1]->args[0];
    CHECK_INT(attr->fn, DSL_FN_ATTR);
    CHECK_STR(attr->attr_name, "group");
    CHECK_INT(attr->type, DSL_TYPE_INT);
    unload(&l);
}

static void test_replacements(void)
{
    loaded l = load("rule ln: Add@sum(@a, @b) > LN(^, @g:const, @beta:const)\n"
                    "         => AddLayerNorm(@a, @b, @g, @beta) {epsilon = 0.001} exports @sum\n"
                    "rule drop: Identity(@x) => @x\n");
    CHECK(l.ok);
    const dsl_replacement *r = &l.rs->rules[0]->repl;
    CHECK_INT(r->op, IR_OP_AddLayerNorm);
    CHECK_INT(r->noperands, 4);
    CHECK_INT(r->nexports, 1);
    CHECK_STR(r->exports[0]->name, "sum");
    CHECK_INT(r->attrs[0].kind, DSL_RATTR_LITERAL);
    CHECK_INT(r->attrs[0].value.kind, IR_ATTR_FLOAT);
    CHECK_NEAR(r->attrs[0].value.v.f, 0.001, 0, 1e-12);
    const dsl_replacement *fwd = &l.rs->rules[1]->repl;
    CHECK_INT(fwd->kind, DSL_REPL_FORWARD);
    CHECK_STR(fwd->forward->name, "x");
    unload(&l);
}

static bool no_kernel_for_qkv(ir_op op, void *user)
{
    (*(int *)user)++;
    return op != IR_OP_FusedQKV;
}

static int ports(ir_op op, const char *name, void *user)
{
    (void)user;
    if (op != IR_OP_FusedConvAct)
        return -2;
    return strcmp(name, "residual") == 0 ? 3 : -1;
}

static void test_hooks(void)
{
    int asked = 0;
    dsl_options opts = {.has_kernel = no_kernel_for_qkv, .input_port = ports, .user = &asked};
    loaded l = load_with("rule a: Conv@c > Add(@res) > Relu => "
                         "FusedConvAct {act = Relu, residual = @res} where shape(@res) == shape(@c)\n"
                         "rule b: MatMul(@x, @wq:const) & MatMul(@x, @wk:const) => "
                         "FusedQKV[concat_weights]\n"
                         "rule c: Add(@x, @y) => FusedConvAct(@x, @y) {skip = @y}\n",
                         &opts);
    CHECK(!l.ok);
    CHECK_INT(asked, 3);
    CHECK_INT(dg_error_count(l.dg), 2); /* no kernel for FusedQKV; no port 'skip' */
    const dsl_rule *a = l.rs->rules[0];
    CHECK(a->checked);
    CHECK_INT(a->repl.attrs[1].kind, DSL_RATTR_INPUT);
    CHECK_INT(a->repl.attrs[1].port, 3);
    CHECK(!l.rs->rules[1]->checked);
    CHECK(!l.rs->rules[2]->checked);
    unload(&l);
}

static void test_warnings(void)
{
    loaded l = load("rule a: Conv > Relu => FusedConvAct {act = Relu}\n"
                    "rule b: Conv(@x, @w) > Relu => FusedConvAct(@x, @w) {act = Relu}\n"
                    "rule c: Conv > Relu => FusedConvAct {act = Relu}\n");
    CHECK(l.ok); /* warnings only */
    CHECK_INT(dg_warning_count(l.dg), 2);
    unload(&l);
}

/* Hostile text is a diagnostic, never a crash. */
/* A predicate's call becomes a copy of its body: the root keeps the call's place in the rule and
 * names the predicate; the body's nodes point into the definition; the arguments are the rule's
 * own captures. A family is one rule per value, each with its own source text. */
static void test_predicates_and_families(void)
{
    loaded l = load("pred vec(@b, @w) = rank(@b) == 1 && dim(@b, 0) == dim(@w, -1)\n"
                    "rule g: MatMul(@x, @w:const) > Add(@b:const) => GemmEpilogue(@x, @w, @b)\n"
                    "        where vec(@b, @w)\n"
                    "for a in [Relu | Tanh]\n"
                    "rule c_$a: Conv > $a => FusedConvAct\n");
    CHECK(l.ok);
    CHECK_INT(l.rs->nrules, 3);
    const dsl_rule *g = l.rs->rules[0];
    const dsl_expr *root = g->guard;
    CHECK_INT(root->kind, DSL_EXPR_BINARY);
    CHECK_INT(root->op, DSL_OP_AND);
    CHECK(root->pred != NULL && strcmp(root->pred->name, "vec") == 0);
    CHECK(root->src == NULL && root->call == NULL);
    CHECK_INT(root->src_len, (uint32_t)strlen("vec(@b, @w)"));
    const dsl_expr *rank = root->args[0];
    CHECK(rank->src == root->pred->src && rank->call == root && rank->pred == NULL);
    const dsl_expr *arg = rank->args[0]->args[0];
    CHECK_INT(arg->kind, DSL_EXPR_CAPTURE);
    CHECK(arg->v.capture == capture(g, "b"));
    CHECK(arg->src == NULL);
    CHECK(root->args[1]->args[1]->args[0]->v.capture == capture(g, "w"));
    CHECK_STR(l.rs->rules[1]->name, "c_Relu");
    CHECK_STR(l.rs->rules[2]->name, "c_Tanh");
    CHECK(is_op(l.rs->rules[2]->roots[0], IR_OP_Tanh));
    CHECK(l.rs->rules[1]->src != l.rs->rules[2]->src);
    CHECK_STR(l.rs->rules[2]->src->path, "t.rules");
    unload(&l);
}

static void test_bad_bytes(void)
{
    static const char text[] = "rule a: Co\0nv > Relu => Relu\n\xff\xfe rule b: Relu => \"\xc3\x28\"\n";
    dsl_ruleset *rs = dsl_ruleset_new(NULL);
    dg_context *dg = dg_new();
    CHECK(!dsl_load_text(rs, "bad.rules", text, sizeof text - 1, dg));
    dsl_check(rs, dg);
    CHECK(dg_error_count(dg) >= 3);
    dsl_ruleset_free(rs);
    dg_free(dg);
}

int main(void)
{
    RUN(test_card_form);
    RUN(test_shared_nodes);
    RUN(test_horizontal);
    RUN(test_commutative_and_sets);
    RUN(test_chain_details);
    RUN(test_act_attrs);
    RUN(test_guard_types);
    RUN(test_replacements);
    RUN(test_hooks);
    RUN(test_warnings);
    RUN(test_predicates_and_families);
    RUN(test_bad_bytes);
    return unit_finish();
}
