/* Building checked rules by hand, for tests of the matcher and the rewriter that must not depend on
 * the rules language's parser:
 *
 *     rk_kit *k = rk_new();
 *     dsl_pattern *x = rk_leaf(k, "@x");
 *     dsl_pattern *conv = rk_op(k, IR_OP_Conv, RK_OPEN, 1, x);
 *     dsl_pattern *relu = rk_op(k, IR_OP_Relu, RK_OPEN, 1, conv);
 *     dsl_rule *r = rk_rule(k, "conv_relu", 1, relu);
 *     ... rk_free(k);
 *
 * A rule gathers every pattern node reachable from its roots (operands before users), numbers
 * them, and counts its op nodes; its priority is that count. Everything lives in the kit's arena. */
#ifndef FUSERULE_TESTS_MATCHER_RULEKIT_H
#define FUSERULE_TESTS_MATCHER_RULEKIT_H

#include "dsl/dsl.h"

typedef struct rk_kit rk_kit;

enum { RK_CLOSED = 0, RK_OPEN = 1 };

rk_kit *rk_new(void);
void rk_free(rk_kit *k);
ar_arena *rk_arena(rk_kit *k);

/* A leaf: "@name" captures the value (a name used twice is the same node), "_" does not. */
dsl_pattern *rk_leaf(rk_kit *k, const char *text);
/* An op node with one op and n operands (dsl_pattern *...). Add and Mul are commutative. */
dsl_pattern *rk_op(rk_kit *k, ir_op op, int open, uint32_t n, ...);
/* An op node with several alternatives (ops[], nops) and n operands. */
dsl_pattern *rk_opset(rk_kit *k, const ir_op *ops, uint32_t nops, int open, uint32_t n, ...);
/* Names an op node (a node capture `Op@name`). */
dsl_pattern *rk_name(rk_kit *k, dsl_pattern *p, const char *name);
dsl_pattern *rk_optional(dsl_pattern *p);
/* Inline attribute equalities. */
dsl_pattern *rk_attr_int(rk_kit *k, dsl_pattern *p, const char *name, int64_t v);
dsl_pattern *rk_attr_float(rk_kit *k, dsl_pattern *p, const char *name, double v);
dsl_pattern *rk_attr_string(rk_kit *k, dsl_pattern *p, const char *name, const char *v);
dsl_pattern *rk_attr_ints(rk_kit *k, dsl_pattern *p, const char *name, const int64_t *v,
                          uint32_t n);

/* A rule over nroots roots (dsl_pattern *...), replacement FORWARD to nothing until set. */
dsl_rule *rk_rule(rk_kit *k, const char *name, uint32_t nroots, ...);
/* The capture named `name` of rule r (NULL when none). */
dsl_capture *rk_capture(const dsl_rule *r, const char *name);

/* Guard expressions (typed as the checks would type them). */
dsl_expr *rk_int(rk_kit *k, int64_t v);
dsl_expr *rk_float(rk_kit *k, double v);
dsl_expr *rk_dtype(rk_kit *k, ir_dtype dt);
dsl_expr *rk_opname(rk_kit *k, ir_op op);
dsl_expr *rk_ref(rk_kit *k, dsl_capture *c);
dsl_expr *rk_call(rk_kit *k, dsl_function fn, dsl_expr *a, dsl_expr *b);
dsl_expr *rk_attr_of(rk_kit *k, dsl_capture *c, const char *attr);
dsl_expr *rk_bin(rk_kit *k, dsl_operator op, dsl_expr *a, dsl_expr *b);
dsl_expr *rk_not(rk_kit *k, dsl_expr *a);
dsl_expr *rk_list(rk_kit *k, uint32_t n, const int64_t *items);

/* Replacements. */
void rk_target(rk_kit *k, dsl_rule *r, ir_op op);
void rk_forward(dsl_rule *r, const char *capture);
void rk_action(rk_kit *k, dsl_rule *r, const char *action_name);
void rk_set_attr(rk_kit *k, dsl_rule *r, const ir_attr *value);
void rk_set_act_from(rk_kit *k, dsl_rule *r, const char *capture);
void rk_set_port(rk_kit *k, dsl_rule *r, const char *port, int index, const char *capture);
void rk_operands(rk_kit *k, dsl_rule *r, uint32_t n, ...); /* capture names */
void rk_export(rk_kit *k, dsl_rule *r, const char *capture);

#endif
