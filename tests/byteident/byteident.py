#!/usr/bin/python3
"""Byte identity: the outputs of fmt, canon, apply, import and export stay the same bytes.

    byteident.py FUSERULE            compare with digests.txt beside this script
    byteident.py FUSERULE --update   rewrite digests.txt from FUSERULE's outputs

Every command below runs once in a fresh folder; its exit status, standard output, standard error
and every file it writes are hashed (SHA-256) and compared with the committed digests. A work
that only makes fuserule faster or leaner (issue 20: the printer, the name maps, the graph's
layout) must leave every digest as it is. A change that means to change output (a rule that
fuses more, a canon rule, a new float spelling) updates the digests with --update in its own
commit and says why; the failure message lists which outputs changed.

Inputs: every example graph (fmt, canon; apply and export where they take under a second), the
ONNX exports of examples/real (import: the float -> text paths; apply to .onnx), every .graph
input of the test suites that fmt is meant to read or refuse (fmt: canonical text and the exact
diagnostics), and a graph of bench/apply/gen.py (fmt, canon, apply with its rules, export).
"""
import glob
import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DIGESTS = os.path.join(HERE, "digests.txt")
RULES = sorted(glob.glob(os.path.join(ROOT, "rules", "*.rules")))
# Examples whose apply or export takes seconds and gigabytes (full-width weights): fmt and canon
# only; the examples suite runs them whole.
HEAVY = {"examples/qwen2.graph", "examples/bert_base.graph"}
# Test inputs that fmt reads; hostile/ and the fuzz pipeline seeds are bounded elsewhere.
TEST_GRAPHS = ["tests/graph/canonical", "tests/graph/format", "tests/graph/errors", "tests/canon",
               "tests/rewrite", "tests/runtime", "tests/onnx", "tests/cli",
               "tests/fuzz/seeds/graph"]


def rel(path):
    return os.path.relpath(path, ROOT)


def commands():
    """Yields (label, argv, output file names); argv paths are relative to ROOT, outputs are
    written in the run's own folder ($OUT)."""
    rules = [a for r in RULES for a in ("-r", rel(r))]
    for g in sorted(glob.glob(os.path.join(ROOT, "examples", "*.graph"))):
        g = rel(g)
        yield f"fmt {g}", ["fmt", g], []
        yield f"canon {g}", ["canon", g], []
        if g in HEAVY:
            continue
        yield f"apply {g}", ["apply"] + rules + [g, "-o", "$OUT/a.graph"], \
            ["a.graph", "a.safetensors"]
        yield f"apply-report {g}", ["apply"] + rules + [g, "--report", "json"], []
        yield f"export {g}", ["export", g, "-o", "$OUT/e.onnx"], ["e.onnx"]
        yield f"export-ort {g}", ["export", g, "-o", "$OUT/e.onnx", "--for", "onnxruntime"], \
            ["e.onnx"]
    for m in sorted(glob.glob(os.path.join(ROOT, "examples", "real", "*.onnx"))):
        m = rel(m)
        yield f"import {m}", ["import", m, "-o", "$OUT/i.graph"], ["i.graph", "i.safetensors"]
        yield f"apply {m}", ["apply"] + rules + [m, "-o", "$OUT/a.onnx"], ["a.onnx"]
    for d in TEST_GRAPHS:
        for g in sorted(glob.glob(os.path.join(ROOT, d, "*.graph"))):
            g = rel(g)
            yield f"fmt {g}", ["fmt", g], []
    gen = "$OUT/../gen"
    yield "gen fmt", ["fmt", f"{gen}/g.graph"], []
    yield "gen canon", ["canon", f"{gen}/g.graph"], []
    yield "gen apply", ["apply", "-r", f"{gen}/r.rules", f"{gen}/g.graph", "-o", "$OUT/a.graph"], \
        ["a.graph", "a.safetensors"]
    yield "gen export", ["export", f"{gen}/g.graph", "-o", "$OUT/e.onnx"], ["e.onnx"]


def digest(data):
    return hashlib.sha256(data).hexdigest()


def run_all(fuserule, work):
    """Returns [(key, digest)] in a fixed order."""
    gen = os.path.join(work, "gen")
    os.makedirs(gen)
    bench = os.path.join(ROOT, "bench", "apply", "gen.py")
    subprocess.run([sys.executable, bench, "graph", "3000", os.path.join(gen, "g.graph")],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, bench, "rules", "100", os.path.join(gen, "r.rules")],
                   check=True, stdout=subprocess.DEVNULL)
    out = []
    for index, (label, argv, files) in enumerate(commands()):
        folder = os.path.join(work, f"run{index}")
        os.makedirs(folder)
        args = [a.replace("$OUT", folder) for a in argv]
        r = subprocess.run([fuserule] + args, cwd=ROOT, capture_output=True)
        # Paths of the temporary folders are not output: spell them the same in every run.
        def clean(b):
            return b.replace(folder.encode(), b"$OUT").replace(gen.encode(), b"$GEN")
        out.append((f"{label} :exit", str(r.returncode)))
        out.append((f"{label} :stdout", digest(clean(r.stdout))))
        out.append((f"{label} :stderr", digest(clean(r.stderr))))
        for name in files:
            path = os.path.join(folder, name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    out.append((f"{label} {name}", digest(clean(f.read()))))
            else:
                out.append((f"{label} {name}", "absent"))
        for name in os.listdir(folder):
            if name not in files:
                out.append((f"{label} {name}", "unexpected file"))
        subprocess.run(["rm", "-rf", folder], check=True)
    return out


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--update"):
        print(__doc__, file=sys.stderr)
        return 2
    fuserule = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="byteident.") as work:
        got = run_all(fuserule, work)
    if len(sys.argv) == 3:
        with open(DIGESTS, "w") as f:
            f.write("# Generated by tests/byteident/byteident.py --update: the SHA-256 of every\n"
                    "# output of the commands it lists. Regenerate only for a deliberate change.\n")
            for key, value in got:
                f.write(f"{value} {key}\n")
        print(f"byteident: wrote {len(got)} digests to {rel(DIGESTS)}")
        return 0
    want = {}
    with open(DIGESTS) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            value, key = line.rstrip("\n").split(" ", 1)
            want[key] = value
    got_map = dict(got)
    changed = [k for k, v in got if want.get(k) != v]
    missing = [k for k in want if k not in got_map]
    for k in changed:
        print(f"changed: {k}: {want.get(k, 'not in digests.txt')} -> {got_map[k]}")
    for k in missing:
        print(f"no longer produced: {k}")
    if changed or missing:
        print(f"byteident: {len(changed) + len(missing)} of {len(want)} outputs differ "
              f"(rerun with --update only if the change is deliberate)")
        return 1
    print(f"byteident: {len(got)} outputs identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
