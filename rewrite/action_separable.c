/* separable: a depthwise conv whose output is the data input of a pointwise (1x1) conv, each a
 * matched Conv or FusedConvAct, becomes one SeparableConv:
 *
 *     pw(dw(X, W_dw, B_dw?), W_pw, B_pw?, res?)  =>  SeparableConv(X, W_dw, W_pw, B_dw?, B_pw?, res?)
 *
 * Its window attributes (auto_pad, dilations, group, kernel_shape, pads, strides) are the
 * depthwise conv's, its act the depthwise conv's activation (a FusedConvAct's; Identity for a
 * Conv) and its out_act the pointwise conv's. Every attribute comes from the two convs: carried
 * values and rule literals are replaced, because both convs set the same attribute names and the
 * one nearest the root (the pointwise) would otherwise win.
 *
 * Exact only when the first conv is depthwise (group = its input channels, one input channel per
 * group) and the second a plain channel mix (1x1, stride 1, no padding, group 1); the pointwise
 * conv's residual (MobileNetV2's inverted residual) becomes SeparableConv's, added before its
 * out_act as FusedConvAct adds it before its act, but the depthwise conv must add none (it would
 * sit between the two convs). Anything else refuses the fusion with its reason. The rules' guards
 * say the same, so a refusal here means a rule without them. */
#include "rewrite/internal.h"

#include <string.h>

typedef struct {
    ir_node *dw, *pw;
} separable;

static bool is_conv(const ir_node *n)
{
    return n->op == IR_OP_Conv || n->op == IR_OP_FusedConvAct;
}

/* The matched pointwise conv whose data input a matched conv computes. */
static bool find(rw_plan *p, separable *s, char *why)
{
    for (size_t i = 0; i < p->members.len; i++) {
        ir_node *pw = p->members.items[i];
        const ir_value *x = is_conv(pw) ? pw->inputs[0] : NULL;
        if (x && x->kind == IR_VALUE_NODE && rw_is_member(p, x->producer) && is_conv(x->producer)) {
            s->dw = x->producer;
            s->pw = pw;
            return true;
        }
    }
    return rw_why(why, "separable: no matched conv feeds another matched conv's data input");
}

static bool has_residual(const ir_node *n)
{
    return n->op == IR_OP_FusedConvAct && n->ninputs > 3 && n->inputs[3];
}

/* Whether every element of the list attribute `name` of n (absent: the default) equals v. */
static bool all_ints(const ir_node *n, const char *name, int64_t v)
{
    const int64_t *x;
    uint32_t count = ir_get_ints(n, name, &x);
    for (uint32_t i = 0; i < count; i++)
        if (x[i] != v)
            return false;
    return true;
}

static bool check_depthwise(const separable *s, char *why)
{
    const ir_node *dw = s->dw;
    const ir_type *x = dw->inputs[0]->type, *w = dw->inputs[1]->type;
    int64_t group = ir_get_int(dw, "group");
    if (x->rank < 3 || w->rank != x->rank || !ir_dim_is_static(x->dims[1]) || group != x->dims[1] ||
        w->dims[1] != 1)
        return rw_why(why,
                      "separable: '%s' is not depthwise (group %lld; a depthwise conv's group "
                      "is its input channels, its weight [C*k, 1, kernel...])",
                      dw->outputs[0]->name, (long long)group);
    if (has_residual(dw))
        return rw_why(why, "separable: the depthwise conv '%s' adds a residual",
                      dw->outputs[0]->name);
    return true;
}

static bool check_pointwise(const separable *s, char *why)
{
    const ir_node *pw = s->pw;
    const ir_type *w = pw->inputs[1]->type;
    bool one_by_one = w->rank >= 3;
    for (int d = 2; d < w->rank; d++)
        one_by_one = one_by_one && w->dims[d] == 1;
    if (!one_by_one || ir_get_int(pw, "group") != 1 || !all_ints(pw, "strides", 1) ||
        !all_ints(pw, "pads", 0))
        return rw_why(why,
                      "separable: '%s' is not a pointwise conv (1x1, stride 1, no pads, "
                      "group 1)",
                      pw->outputs[0]->name);
    return true;
}

/* Copies n's attribute `from` (when set) to the plan as `to`. */
static void copy_attr(rw_plan *p, const ir_node *n, const char *from, const char *to)
{
    const ir_attr *a = ir_node_attr(n, from);
    if (a) {
        ir_attr c = *a;
        c.name = to;
        rw_plan_set_attr(p, &c);
    }
}

static void set_attrs(rw_plan *p, const separable *s)
{
    static const char *const window[] = {"auto_pad",     "dilations", "group",
                                         "kernel_shape", "pads",      "strides"};
    static const char *const act[] = {"act", "act_alpha", "act_beta"};
    static const char *const out_act[] = {"out_act", "out_act_alpha", "out_act_beta"};
    p->attrs.len = 0;
    for (size_t i = 0; i < sizeof window / sizeof window[0]; i++)
        copy_attr(p, s->dw, window[i], window[i]);
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++) {
        if (s->dw->op == IR_OP_FusedConvAct)
            copy_attr(p, s->dw, act[i], act[i]);
        if (s->pw->op == IR_OP_FusedConvAct)
            copy_attr(p, s->pw, act[i], out_act[i]);
    }
}

/* The plan's entry for v (its rule leaf), for a reordered input list. */
static rw_input entry_of(const rw_plan *p, ir_value *v)
{
    for (size_t i = 0; v && i < p->inputs.len; i++)
        if (p->inputs.items[i].v == v)
            return p->inputs.items[i];
    return (rw_input){v, NULL};
}

/* X, W_dw, W_pw, B_dw?, B_pw?, residual?: SeparableConv's ports, trailing omitted ones left out. */
static void set_inputs(rw_plan *p, const separable *s)
{
    const ir_node *dw = s->dw, *pw = s->pw;
    ir_value *ports[6] = {dw->inputs[0],
                          dw->inputs[1],
                          pw->inputs[1],
                          dw->ninputs > 2 ? dw->inputs[2] : NULL,
                          pw->ninputs > 2 ? pw->inputs[2] : NULL,
                          has_residual(pw) ? pw->inputs[3] : NULL};
    rw_input seated[6];
    uint32_t count = 0;
    for (uint32_t k = 0; k < 6; k++) {
        seated[k] = entry_of(p, ports[k]);
        if (ports[k])
            count = k + 1;
    }
    p->inputs.len = 0;
    for (uint32_t k = 0; k < count; k++)
        vec_push(&p->inputs, seated[k]);
}

bool rw_action_separable(rw_plan *p, char *why)
{
    separable s = {0};
    if (!find(p, &s, why) || !check_depthwise(&s, why) || !check_pointwise(&s, why))
        return false;
    set_attrs(p, &s);
    set_inputs(p, &s);
    return true;
}
