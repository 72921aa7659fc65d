/* `fuserule check --dump-automaton`: the table, one instruction a line.
 *
 *     root Relu: words 17..96
 *         17  arity+ r0 >= 1              skip 96   Relu       conv_bn_relu rules.rules:4  x3
 *         21  load   r1 = r0.in[0]        skip 96   BN         conv_bn_relu rules.rules:4  x3
 *
 * Each check names the pattern node and the rule (name, file:line of the node) that first created
 * it, and `xN` when N check sequences share it. */
#include "matcher/internal.h"

#include "base/check.h"

#include <stdio.h>
#include <string.h>

static void text_ops(const uint32_t *ops, uint32_t n, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "|" : "",
                                 ir_op_name((ir_op)ops[i]));
}

/* The operands of the instruction at pc. */
static void text_operands(const mt_automaton *a, uint32_t pc, char *buf, size_t size)
{
    const uint32_t *x = a->code + pc + 2;
    char tmp[200];
    switch (mt_word_op(a->code[pc])) {
    case MI_OP: snprintf(buf, size, "r%u is %s", x[0], ir_op_name((ir_op)x[1])); break;
    case MI_OPSET:
        text_ops(x + 2, x[1], tmp, sizeof tmp);
        snprintf(buf, size, "r%u in [%s]", x[0], tmp);
        break;
    case MI_ARITY_EQ: snprintf(buf, size, "r%u == %u", x[0], x[1]); break;
    case MI_ARITY_GE: snprintf(buf, size, "r%u >= %u", x[0], x[1]); break;
    case MI_LOAD: snprintf(buf, size, "r%u = r%u.in[%u]", x[0], x[1], x[2]); break;
    case MI_CONST: snprintf(buf, size, "r%u", x[0]); break;
    case MI_DTYPE: snprintf(buf, size, "r%u == %s", x[0], ir_dtype_name((ir_dtype)x[1])); break;
    case MI_LAYOUT: snprintf(buf, size, "r%u == %s", x[0], ir_layout_name((ir_layout)x[1])); break;
    case MI_RANK: snprintf(buf, size, "r%u == %u", x[0], x[1]); break;
    case MI_ATTR:
        mt_attr_text(a->attrs[x[1]], tmp, sizeof tmp);
        snprintf(buf, size, "r%u %s == %s", x[0], a->attrs[x[1]]->name, tmp);
        break;
    case MI_EQ: snprintf(buf, size, "r%u == r%u", x[0], x[1]); break;
    case MI_OUTPUT: snprintf(buf, size, "r%u == r%u.out[%u]", x[0], x[1], x[2]); break;
    case MI_JOIN: {
        size_t used =
            (size_t)snprintf(buf, size, "r%u = consumer of r%u, loop %u", x[0], x[1], x[2]);
        for (uint32_t e = 0; e < x[3] && used < size; e++)
            used += (size_t)snprintf(buf + used, size - used, "%s r%u", e ? "," : ", not", x[4 + e]);
        break;
    }
    case MI_GUARD: snprintf(buf, size, "of %s", a->variants[x[0]].rule->name); break;
    case MI_ACCEPT: snprintf(buf, size, "%s", a->accepts[x[0]].v->rule->name); break;
    case MI_SWITCH: {
        size_t used = (size_t)snprintf(buf, size, "r%u:", x[0]);
        for (uint32_t i = 0; i < x[1] && used < size; i++)
            used += (size_t)snprintf(buf + used, size - used, " %s->%u", ir_op_name((ir_op)x[2 + 2 * i]),
                                     x[3 + 2 * i]);
        break;
    }
    case MI_NEXT: snprintf(buf, size, "loop at %u", a->code[pc + 1]); break;
    case MI_JUMP: snprintf(buf, size, "%u", a->code[pc + 1]); break;
    case MI_END: buf[0] = 0; break;
    case MI_COUNT: FR_UNREACHABLE();
    }
}

/* The instruction at pc without its annotation: its mnemonic, then its operands. */
static void text_instr(const mt_automaton *a, uint32_t pc, char *buf, size_t size)
{
    const char *name = mt_opcode_name(mt_word_op(a->code[pc]));
    char operands[512];
    text_operands(a, pc, operands, sizeof operands);
    if (operands[0])
        snprintf(buf, size, "%-6s %s", name, operands);
    else
        snprintf(buf, size, "%s", name);
}

static uint32_t instr_len(const uint32_t *code, uint32_t pc)
{
    mt_opcode op = mt_word_op(code[pc]);
    if (op == MI_END)
        return 1;
    return 2 + mt_word_nargs(code[pc]);
}

static void annotate(const mt_tnode *t, FILE *out)
{
    const mt_variant *v = t->first;
    const dsl_rule *r = v->rule;
    const dsl_pattern *p = t->check.pat;
    unsigned line = 0, col = 0;
    if (r->src)
        dg_line_col(r->src, p ? p->src_offset : r->src_offset, &line, &col);
    fprintf(out, "  %-12s %s %s:%u", p && p->text ? p->text : "where", r->name,
            r->src ? r->src->path : "?", line);
    if (t->nseq > 1)
        fprintf(out, "  x%u", t->nseq);
}

void mt_dump(const mt_automaton *a, FILE *out)
{
    const mt_stats *s = &a->stats;
    fprintf(out,
            "automaton: %u rules, %u sequences, %u checks merged into %u, %u root ops, "
            "%u registers, %u words (%zu bytes)\n",
            s->rules, s->variants, s->checks, s->trie_nodes, s->root_ops, s->registers, s->words,
            (size_t)s->words * sizeof(uint32_t));
    for (unsigned op = 0; op < IR_OP_COUNT; op++) {
        if (!a->root[op])
            continue;
        fprintf(out, "root %s: words %u..%u\n", ir_op_name((ir_op)op), a->root[op],
                a->root_end[op]);
        for (uint32_t pc = a->root[op]; pc <= a->root_end[op]; pc += instr_len(a->code, pc)) {
            char text[400];
            text_instr(a, pc, text, sizeof text);
            mt_opcode code = mt_word_op(a->code[pc]);
            bool check = code != MI_NEXT && code != MI_JUMP && code != MI_END;
            if (!check || !a->at[pc]) {
                fprintf(out, "  %6u  %s\n", pc, text);
                continue;
            }
            fprintf(out, "  %6u  %-44s", pc, text);
            if (code != MI_ACCEPT)
                fprintf(out, " skip %-6u", a->code[pc + 1]);
            else
                fprintf(out, " %-11s", "");
            annotate(a->at[pc], out);
            fputc('\n', out);
        }
    }
}
