#!/usr/bin/env python3
"""Migration aid for interned types (issue 20): rewrites C code written against the old
`ir_type type;` member of ir_value (an inline struct) to the new `const ir_type *type` (the
graph's shared copy, changed only through ir_value_set_type).

    scripts/retype_values.py BUILD_DIR      (run in a tree whose ir/ir.h still has `ir_type type;`)

It lets the compiler find the sites: ir_value's member is renamed `type_` for the moment, every C
file of BUILD_DIR/compile_commands.json is compiled with -fsyntax-only, and each "'ir_value' has
no member named 'type'" error (FILE:LINE:COL at the member) is one access to rewrite:

    X->type.f              ->  X->type->f     (a write of a field stays an error: fix by hand)
    &X->type               ->  X->type
    X->type = *Y;          ->  ir_value_set_type(g, X, Y);
    X->type = Y;           ->  ir_value_set_type(g, X, &Y);     (Y a name, ->, . or [] chain)
    any other X->type      ->  *X->type       (the type's value: copies, initializers)

The member is renamed back afterwards; ir/ir.h itself is left for the caller to change. What it
cannot rewrite (a write of another form, an expression over lines) is listed as MANUAL; the
graph is assumed to be called `g` (the compiler says where it is not). Files outside
compile_commands.json (the clang-only fuzz targets) are not seen."""
import concurrent.futures as cf
import json
import re
import shlex
import subprocess
import sys
from collections import defaultdict

HEADER = 'ir/ir.h'
OLD, TMP = '    ir_type type;', '    ir_type type_;'


def syntax_errors(build):
    cc = json.load(open(build + '/compile_commands.json'))

    def run(e):
        if not e['file'].endswith('.c'):
            return ''
        args = e.get('arguments') or shlex.split(e['command'])
        if args[0].endswith('ccache'):
            args = args[1:]
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
            elif a == '-o':
                skip = True
            elif a != '-c':
                out.append(a)
        out += ['-fsyntax-only', '-fmax-errors=0']
        return subprocess.run(out, cwd=e['directory'], capture_output=True, text=True).stderr

    with cf.ThreadPoolExecutor(2) as ex:
        return '\n'.join(ex.map(run, cc))


def match_back(s, j, close, open_):
    depth = 0
    while j >= 0:
        if s[j] == close:
            depth += 1
        elif s[j] == open_:
            depth -= 1
            if depth == 0:
                return j
        j -= 1
    return -1


def postfix_start(s, arrow):
    """Start of the postfix expression whose member access begins at s[arrow] ('->')."""
    j = arrow - 1
    while True:
        while j >= 0 and s[j] == ' ':
            j -= 1
        if j < 0:
            return -1
        if s[j] == ']':
            k = match_back(s, j, ']', '[')
            if k < 0:
                return -1
            j = k - 1
            continue
        if s[j] == ')':
            k = match_back(s, j, ')', '(')
            if k < 0:
                return -1
            m = re.search(r'[A-Za-z_][A-Za-z0-9_]*\s*$', s[:k])
            if not m:
                return k  # a parenthesized expression or a cast
            start = m.start()
        else:
            m = re.search(r'[A-Za-z_][A-Za-z0-9_]*$', s[:j + 1])
            if not m:
                return -1
            start = m.start()
        j = start - 1
        k = j
        while k >= 0 and s[k] == ' ':
            k -= 1
        if k >= 1 and s[k - 1:k + 1] == '->':
            j = k - 2
            continue
        if k >= 0 and s[k] == '.' and not (k >= 1 and s[k - 1].isdigit()):
            j = k - 1
            continue
        return start


LVALUE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*(\s*(->|\.)\s*[A-Za-z_][A-Za-z0-9_]*|\[[^\[\]]*\])*$')


def rewrite(s, col, manual, where):
    i = col - 1
    assert s[i:i + 4] == 'type', (where, s)
    k = i - 1
    while s[k] == ' ':
        k -= 1
    if s[k - 1:k + 1] != '->':
        manual.append(where + ' (not ->)')
        return s
    arrow = k - 1
    start = postfix_start(s, arrow)
    if start < 0:
        manual.append(where + ' (expression start)')
        return s
    after = a = i + 4
    while a < len(s) and s[a] == ' ':
        a += 1
    if a < len(s) and s[a] == '.':
        return s[:after] + '->' + s[a + 1:]
    if a < len(s) and s[a] == '=' and s[a + 1:a + 2] != '=':
        semi = s.find(';', a)
        before = s[:start].strip()
        if semi < 0 or before not in ('', '{', 'else') and not before.endswith((')', '{', ';')):
            manual.append(where + ' (write)')
            return s
        rhs = s[a + 1:semi].strip()
        if rhs.startswith('*') and LVALUE.match(rhs[1:].strip()):
            ptr = rhs[1:].strip()
        elif LVALUE.match(rhs):
            ptr = '&' + rhs
        else:
            manual.append(where + ' (write of ' + rhs + ')')
            return s
        return s[:start] + 'ir_value_set_type(g, ' + s[start:arrow] + ', ' + ptr + ')' + s[semi:]
    b = start - 1
    while b >= 0 and s[b] == ' ':
        b -= 1
    if b >= 0 and s[b] == '&' and not (b >= 1 and s[b - 1] == '&'):
        return s[:b] + s[b + 1:]
    return s[:start] + '*' + s[start:]


def main():
    build = sys.argv[1]
    header = open(HEADER).read()
    if header.count(OLD) != 1:
        sys.exit('retype_values.py: %s has no `ir_type type;` member (already migrated?)' % HEADER)
    open(HEADER, 'w').write(header.replace(OLD, TMP))
    try:
        errors = syntax_errors(build)
    finally:
        open(HEADER, 'w').write(header)
    sites = defaultdict(set)
    for line in errors.splitlines():
        m = re.match(r'^(.*?):(\d+):(\d+): error: .ir_value. has no member named .type.', line)
        if m:
            sites[m.group(1)].add((int(m.group(2)), int(m.group(3))))
    manual = []
    for path, locs in sorted(sites.items()):
        lines = open(path).read().split('\n')
        for ln, col in sorted(locs, reverse=True):  # right to left within a line
            lines[ln - 1] = rewrite(lines[ln - 1], col, manual, '%s:%d:%d' % (path, ln, col))
        open(path, 'w').write('\n'.join(lines))
    for m in manual:
        print('MANUAL', m)
    print('%d sites in %d files' % (sum(len(v) for v in sites.values()), len(sites)), file=sys.stderr)


main()
