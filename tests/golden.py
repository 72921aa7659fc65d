#!/usr/bin/env python3
"""Runs one golden test file: the test and its expectation live in the same file.

Directives are comment lines that start with `#!`; expected output lines start with `#|`:

    #! run: fuserule fmt %s        the command; `fuserule` is the binary under test, %s this file's
                                   name (the command runs in this file's folder), %t a fresh
                                   temporary folder
    #! exit: 2                     expected exit status (default 0)
    #! stdout:                     the exact standard output follows as `#|` lines
    #! stderr:                     the exact standard error follows as `#|` lines
    #! stdout: self                standard output must equal this file without its #! and #| lines
    #! stdout-has: TEXT            standard output contains TEXT (may repeat); likewise stderr-has

A stream with no directive is not checked. Several `#! run:` blocks may follow each other; each
block's directives apply to the run above them.
"""
import os
import shlex
import subprocess
import sys
import tempfile


def parse(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().split("\n")
    body = "\n".join(l for l in lines if not l.startswith("#!") and not l.startswith("#|"))
    runs, current, stream = [], None, None
    for line in lines:
        if line.startswith("#!"):
            key, _, value = line[2:].strip().partition(":")
            key, value = key.strip(), value.strip()
            if key == "run":
                current = {"cmd": value, "exit": 0, "expect": {}, "has": []}
                runs.append(current)
                stream = None
            elif current is None:
                raise SystemExit(f"{path}: directive before '#! run:'")
            elif key == "exit":
                current["exit"] = int(value)
            elif key in ("stdout", "stderr"):
                stream = key
                current["expect"][key] = body if value == "self" else []
            elif key in ("stdout-has", "stderr-has"):
                current["has"].append((key.split("-")[0], value))
            else:
                raise SystemExit(f"{path}: unknown directive '{key}'")
        elif line.startswith("#|"):
            text = line[3:] if line.startswith("#| ") else line[2:]
            if stream is None or isinstance(current["expect"][stream], str):
                raise SystemExit(f"{path}: '#|' line outside a stdout:/stderr: block")
            current["expect"][stream].append(text)
    if not runs:
        raise SystemExit(f"{path}: no '#! run:' directive")
    return runs


def main():
    binary, path = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    folder, name = os.path.dirname(path), os.path.basename(path)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for run in parse(path):
            argv = [binary if a == "fuserule" else a.replace("%s", name).replace("%t", tmp)
                    for a in shlex.split(run["cmd"])]
            proc = subprocess.run(argv, cwd=folder, capture_output=True, timeout=300)
            out = {"stdout": proc.stdout.decode("utf-8", "replace"),
                   "stderr": proc.stderr.decode("utf-8", "replace")}
            problems = []
            if proc.returncode != run["exit"]:
                problems.append(f"exit status {proc.returncode}, expected {run['exit']}")
            for stream, expected in run["expect"].items():
                want = expected if isinstance(expected, str) else "".join(l + "\n" for l in expected)
                if out[stream] != want:
                    problems.append(f"{stream} differs\n--- expected\n{want}--- got\n{out[stream]}---")
            for stream, text in run["has"]:
                if text not in out[stream]:
                    problems.append(f"{stream} lacks '{text}'")
            if problems:
                failures += 1
                print(f"FAIL {name}: {run['cmd']}")
                for p in problems:
                    print("  " + p)
                if "stderr" not in run["expect"] and out["stderr"]:
                    print("--- stderr\n" + out["stderr"])
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
