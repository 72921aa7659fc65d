#!/usr/bin/env python3
"""coverage.py FUSERULE RULES_DIR TESTS_DIR: every rule of the standard library has a positive and
a negative rule test: it fires in some test (`%% fired NAME N` with N > 0), and some test shows a
near miss it must not fuse (`%% fired NAME 0`, `%% refused NAME REASON`, or a file
NAME_refused.test of near misses that asserts NAME's exact count beside one genuine instance).
The rule names are the ones `fuserule check --dump-rules` prints, so each rule of a family
(`for act in [...] rule scale_$act: ...`) counts on its own."""
import glob
import os
import re
import subprocess
import sys

fuserule, rules_dir, tests_dir = sys.argv[1], sys.argv[2], sys.argv[3]
rules = []
for path in sorted(glob.glob(os.path.join(rules_dir, "*.rules"))):
    dump = subprocess.run([fuserule, "check", "--dump-rules", path], capture_output=True,
                          text=True, check=True).stdout
    for line in dump.splitlines():
        m = re.match(r"rule\s+([A-Za-z_][A-Za-z0-9_]*)", line)
        if m:
            rules.append((os.path.basename(path), m.group(1)))

fires, misses = set(), set()
for path in glob.glob(os.path.join(tests_dir, "*.test")):
    refused_file = os.path.basename(path)[:-len("_refused.test")] if path.endswith(
        "_refused.test") else None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"%%\s+(fired|refused)\s+(\S+)\s+(\S+)", line)
        if not m:
            continue
        if m.group(1) == "fired" and m.group(3) != "0":
            fires.add(m.group(2))
        else:
            misses.add(m.group(2))
        if m.group(2) == refused_file:
            misses.add(refused_file)

problems = [f"{f}: {r} never fires in a test" for f, r in rules if r not in fires]
problems += [f"{f}: {r} has no negative test (fired {r} 0, refused {r} REASON, or {r}_refused.test)"
             for f, r in rules if r not in misses]
if problems:
    sys.exit("\n".join(problems))
print(f"{len(rules)} rules, each fired by a test and each kept from a near miss by another")
