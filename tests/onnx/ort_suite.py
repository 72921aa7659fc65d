#!/usr/bin/python3
"""ONNX Runtime's fusion test models (../shared/ort-suite beside the repository, never copied into
it) through `run.py FUSERULE rules`, its summary line printed, then checked:

    ort_suite.py FUSERULE

- the models that fail to import are exactly those of ort_suite_refusals.tsv (beside this script:
  the model's path in the suite, a tab, a fragment of the message naming why), each refused with
  its message: models outside the ONNX spec, named by their defect, and models refused by design
  (a STRING tensor). Any other import failure fails the test, and so does a listed model that
  imports or is refused for another reason (docs/onnx.md lists them all);
- no wrong fusion, other than the known ones below (each with its cause); one that no longer
  happens is reported so that it leaves the list.

Skipped (77) without ../shared/ort-suite or without numpy (run.py needs it).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITE = os.path.join(os.path.dirname(ROOT), "shared", "ort-suite")
REFUSALS = os.path.join(HERE, "ort_suite_refusals.tsv")

# Wrong fusions known today, with their cause (not import's): (file name, cause).
KNOWN_WRONG = [
]


def expected_refusals():
    """{path in the suite: message fragment} from ort_suite_refusals.tsv ('#' starts a comment)."""
    out = {}
    with open(REFUSALS) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            path, sep, want = line.partition("\t")
            if not sep or not want or path in out:
                raise SystemExit(f"{REFUSALS}:{number}: want 'path<TAB>message fragment', once "
                                 f"per path")
            out[path] = want
    return out


def main(binary):
    if not os.path.isdir(SUITE):
        print(f"skipped: no ort-suite at {SUITE}")
        return 77
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("skipped: run.py needs numpy")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        proc = subprocess.run([sys.executable, os.path.join(SUITE, "run.py"), binary,
                               os.path.join(ROOT, "rules"), "--work", tmp, "--json", out],
                              capture_output=True, text=True, timeout=1800)
        lines = proc.stdout.strip().splitlines()
        if not lines or not lines[-1].startswith("ort-suite:") or not os.path.exists(out):
            print(proc.stdout + proc.stderr)
            print("FAIL run.py did not finish")
            return 1
        print(lines[-1])
        results = json.load(open(out))
    failures, fixed = [], []
    by_path = {r["path"]: r for r in results}
    expected = expected_refusals()
    known_wrong = dict(KNOWN_WRONG)
    for path, want in expected.items():
        r = by_path.get(path)
        if r is None:
            failures.append(f"{path}: not in the suite's manifest")
        elif r["class"] != "import failure":
            failures.append(f"{path} imports; expected the refusal '{want}'")
        elif want not in r["why"]:
            failures.append(f"{path}: refused with '{r['why']}', expected '{want}'")
    for r in results:
        name = os.path.basename(r["path"])
        if r["class"] == "import failure" and r["path"] not in expected:
            failures.append(f"{r['path']}: import failed: {r['why']}")
        if r["class"] == "wrong fusion" and name not in known_wrong:
            failures.append(f"{name}: wrong fusion: {r['why']}")
        if name in known_wrong and r["class"] != "wrong fusion":
            fixed.append(name)
    print(f"{len(expected)} models refused as expected (outside the spec, or by design)")
    for name in fixed:
        print(f"NOTE {name} is no longer a wrong fusion: remove it from KNOWN_WRONG")
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
