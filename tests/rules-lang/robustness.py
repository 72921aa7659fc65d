#!/usr/bin/env python3
"""Hostile and huge rule files, generated at test time: `fuserule check` must answer each with a
located diagnostic (or a clean pass) and the right exit status, never a crash or a hang, and must
check a large rule file in linear time.

usage: robustness.py FUSERULE
"""
import os
import random
import resource
import subprocess
import sys
import tempfile

N = 100_000
failures = []


def run(binary, folder, name, content):
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(content)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([binary, "check", name], cwd=folder, capture_output=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # User time only: system time is the kernel's page handling (zeroing and compacting huge
    # pages), which varies several-fold with the machine's memory state, not with our work.
    cpu = after.ru_utime - before.ru_utime
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), \
        proc.stderr.decode("utf-8", "replace"), cpu


def expect(binary, folder, name, content, status, *needles):
    code, out, err, cpu = run(binary, folder, name, content)
    problems = []
    if code != status:
        problems.append(f"exit status {code}, expected {status}")
    for needle in needles:
        if needle not in out + err:
            problems.append(f"output lacks {needle!r}")
    if problems:
        failures.append(f"{name}: " + "; ".join(problems) + "\n--- stderr (start)\n" + err[:2000])
    print(f"{name}: exit {code}, {cpu:.2f}s user cpu")
    return cpu


def big_rules(n):
    """n distinct rules over 10 unary ops, each with a guard and a set."""
    ops = ["Relu", "Sigmoid", "Tanh", "Gelu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Erf"]
    lines = ["set Act = [Relu | Sigmoid | Tanh]\n"]
    for i in range(n):
        stages = [ops[(i // 10 ** k) % 10] for k in range(5)]
        lines.append(f"rule r{i}: {stages[0]}(@x) > {' > '.join(stages[1:])} > Act"
                     f" => Relu(@x) where rank(@x) == {i % 5}\n")
    return "".join(lines).encode()


def main():
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        # NUL bytes and invalid UTF-8, in code, strings and comments
        expect(binary, folder, "nul.rules", b"rule a: Co\0nv > Relu => Relu\n\0\0\0\n", 2,
               "nul.rules:1:11: error: NUL byte in rule text")
        expect(binary, folder, "utf8.rules",
               b"# comment \xff\xfe is fine\nrule a: Relu\xc3\x28 => Relu\n"
               b"rule b: Relu => Relu {act = \"\xe2\x82\"}\nrule c: Relu\xc3\xa9 => Relu\n", 2,
               "utf8.rules:2:13: error: invalid UTF-8",
               "utf8.rules:3:30: error: invalid UTF-8 or control byte in string",
               "utf8.rules:4:13: error: non-ASCII text outside a string or comment")
        # 100,000-deep nesting: a clean error each, no stack overflow
        expect(binary, folder, "deep_parens.rules",
               b"rule d: " + b"Relu(" * N + b"@x" + b")" * N + b" => @x\n", 2,
               "too deeply nested")
        expect(binary, folder, "deep_brackets.rules", b"rule d: " + b"[" * N + b"\n", 2,
               "deep_brackets.rules:1:")
        expect(binary, folder, "deep_chain.rules",
               b"rule d: Conv" + b" > Relu" * N + b" => Relu\n", 2,
               "pattern nests more than 256 ops deep")
        expect(binary, folder, "deep_sum.rules",
               b"rule d: Relu(@x) => @x where " + b" + ".join([b"rank(@x)"] * N) + b" == 1\n", 2,
               "expression nests more than 256 levels deep")
        expect(binary, folder, "deep_not.rules",
               b"rule d: Relu(@x) => @x where " + b"!" * N + b"true\n", 2, "too deeply nested")
        expect(binary, folder, "deep_lets.rules",
               b"rule d: let a0 = Relu(@x)\n" +
               b"".join(b"  let a%d = Relu(a%d)\n" % (i + 1, i) for i in range(300)) +
               b"  Relu(a300) => @x\n", 2, "once its let bindings are substituted")
        # random bytes
        rng = random.Random(7)
        garbage = bytes(rng.randrange(256) for _ in range(200_000))
        expect(binary, folder, "garbage.rules", garbage, 2, "garbage.rules:1:")
        # includes nested deeper than the limit
        for i in range(40):
            with open(os.path.join(folder, f"inc{i}.rules"), "w") as f:
                f.write(f'include "inc{i + 1}.rules"\n')
        with open(os.path.join(folder, "inc40.rules"), "w") as f:
            f.write("rule last: Relu(@x) => @x\n")
        expect(binary, folder, "inc_top.rules", b'include "inc0.rules"\n', 2,
               "includes nest more than 32 deep")
        # a 100,000-rule file checks clean, in time linear in its size: 4x the rules of a
        # 25,000-rule file in about 4x the CPU time (quadratic work would take 16x). Each size's
        # best of three runs, and sizes large enough (0.07 s and more) that timer ticks and
        # start-up do not decide the ratio.
        small = min(expect(binary, folder, "rules_25k.rules", big_rules(N // 4), 0,
                           "rules_25k.rules: 25000 rules, 10 ops, 0 warnings") for _ in range(3))
        large = min(expect(binary, folder, "rules_100k.rules", big_rules(N), 0,
                           "rules_100k.rules: 100000 rules, 10 ops, 0 warnings")
                    for _ in range(3))
        ratio = large / max(small, 0.01)
        print(f"100k rules: {large:.2f}s, 25k rules: {small:.2f}s, ratio {ratio:.1f} (linear: 4)")
        if ratio > 10:
            failures.append(f"checking 4x the rules took {ratio:.1f}x the time")
    for f in failures:
        print("FAIL " + f)
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
