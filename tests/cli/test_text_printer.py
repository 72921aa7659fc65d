#!/usr/bin/env python3
"""The graph printer's shortcuts give the text the plain printer gave (ir/print.c).

Usage: test_text_printer.py FUSERULE. Builds canonical text that runs the printer through every
shortcut it takes and past the end of each: more distinct types than it keeps texts of, and types
too long to keep; more distinct doubles than it keeps; a kernel name bound to many nodes, quoted
and unquoted; names of every length from 1 to 20 (the short copies) and one longer than the
printer's 64 KiB buffer; every reserved word as a name; escapes and UTF-8 in quoted strings; and
enough lines for the buffer to be emptied many times in the middle of a line. `fuserule fmt` must
print that text back byte for byte, from a file and from stdin.
"""
import os
import random
import subprocess
import sys
import tempfile

RESERVED = ["_", "inf", "nan", "file", "graph", "input", "const", "output", "random"]


def number(rng, avoid):
    """A double with 1 to 6 decimals that is not `avoid` (random()'s default bound)."""
    while True:
        v = round(rng.uniform(0.001, 4.0), rng.randint(1, 6))
        if v != avoid:
            return v


def canonical_text():
    rng = random.Random(20)
    lines = ["graph print_text {"]
    inputs = []

    def add_input(name, type_text, printed=None):
        lines.append(f"  input  {printed or name} : {type_text}")
        inputs.append((printed or name, type_text))

    for k in range(1, 301):  # more distinct types than the printer keeps
        add_input(f"in{k}", f"f32[1,{k}]")
    add_input("wide", "i64[batch_dimension,sequence_length,hidden_size,attention_heads,"
                      "1,2]")  # longer than a kept type text
    add_input("sym", 'f16[batch,"seq len",12] NCW')
    add_input("expr", "bf16[batch * 2 + 1,seq - 3]")
    for word in RESERVED:
        add_input(word, "u8[2]", f'"{word}"')
    for n in range(1, 21):
        add_input("n" + "abcdefghijklmnopqrst"[: n - 1], f"i8[{n}]")
    add_input("quoted", "bool[3]", '"q\\"uote\\\\d\\t\\x01 \u00e9 \\xff"')
    long_name = "L" * 70000  # longer than the printer's buffer
    add_input(long_name, "i32[4]")
    for k in range(200):  # more distinct doubles than the printer keeps
        lo, hi = -number(rng, 1.0), number(rng, 1.0)
        lines.append(f"  const  c{k} : f32[{k % 7 + 1}] = random(seed={k * 7919}, lo={lo!r}, "
                     f"hi={hi!r})")
    lines.append("  const  small : i64[3] = [0,-1,9007199254740992]")
    outputs = []
    for i, (name, type_text) in enumerate(inputs):
        out = f"y{i}"
        if type_text.startswith("f32"):
            alpha = number(rng, None)
            kernel = "" if i % 3 else (" @cpu.LeakyRelu" if i % 2 else ' @"k e r"')
            lines.append(f"  {out} : {type_text} = LeakyRelu({name}) {{alpha={alpha!r}}}"
                         f"{kernel}")
        else:
            lines.append(f"  {out} : {type_text} = Identity({name})")
        outputs.append(out)
    lines += [f"  output {o}" for o in outputs] + [f"  output {long_name}", "}", ""]
    return "\n".join(lines).encode("utf-8")


def main():
    fuserule = sys.argv[1]
    text = canonical_text()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "print_text.graph")
        with open(path, "wb") as f:
            f.write(text)
        for args, stdin in ((["fmt", path], None), (["fmt", "-"], text)):
            proc = subprocess.run([fuserule] + args, input=stdin, capture_output=True,
                                  timeout=120)
            if proc.returncode != 0:
                failures.append(f"{args}: exit {proc.returncode}: {proc.stderr.decode()[:2000]}")
            elif proc.stdout != text:
                at = next((i for i, (a, b) in enumerate(zip(proc.stdout, text)) if a != b),
                          min(len(proc.stdout), len(text)))
                failures.append(f"{args}: differs at byte {at} of {len(text)}: "
                                f"{proc.stdout[max(0, at - 80):at + 80]!r}\n"
                                f"expected {text[max(0, at - 80):at + 80]!r}")
    for f in failures:
        print("FAIL:", f)
    print(f"text printer: {len(text)} bytes, {2 - len(failures)} of 2 runs identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
