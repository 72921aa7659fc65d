/* Refusals as records (a code and its operands, rewrite.h) and their text, made only when a report
 * asks: the rewrite of a large graph refuses hundreds of thousands of overlapping matches, and
 * formatting each as it happened cost more than the check. The texts are those the overlap check
 * gave when it formatted them itself. */
#include "rewrite/internal.h"

#include <stdio.h>
#include <string.h>

static const char *rule_name(const rw_report *r, int32_t rule)
{
    return rule >= 0 ? r->rule_names[rule] : "?";
}

rw_refusal rw_report_refusal(const rw_report *r, size_t i, char *buf)
{
    const rw_refusal_rec *f = &r->refused.items[i];
    rw_refusal out = {r->rule_names[f->rule], f->node, buf};
    const char *op = ir_op_name((ir_op)f->op);
    switch ((rw_reason)f->code) {
    case RW_REASON_TEXT: out.reason = f->name; break;
    case RW_REASON_OVERLAP_SHORTER:
        snprintf(buf, RW_REASON_SIZE,
                 "overlap: '%s' (%s) is already fused by rule '%s', a shorter chain (%u ops, this "
                 "rule %u) ranked first by its %s",
                 f->name, op, rule_name(r, f->owner), r->rule_nops[f->owner], r->rule_nops[f->rule],
                 r->rule_phase[f->owner] < r->rule_phase[f->rule] ? "phase" : "priority");
        break;
    case RW_REASON_OVERLAP_TAKEN:
        snprintf(buf, RW_REASON_SIZE, "overlap: the %s producing '%s' is already fused by rule '%s'",
                 op, f->name, rule_name(r, f->owner));
        break;
    case RW_REASON_OVERLAP_REMOVED:
        snprintf(buf, RW_REASON_SIZE, "overlap: '%s' was removed by an earlier rewrite", f->name);
        break;
    }
    return out;
}

bool rw_refusal_is_overlap(const rw_refusal_rec *f)
{
    static const char OVERLAP[] = "overlap:";
    return f->code != RW_REASON_TEXT || strncmp(f->name, OVERLAP, sizeof OVERLAP - 1) == 0;
}
