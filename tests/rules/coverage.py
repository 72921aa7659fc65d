#!/usr/bin/env python3
"""coverage.py RULES_DIR TESTS_DIR: every rule of the standard library must fire in some rule
test (`%% fired NAME N` with N > 0)."""
import glob
import os
import re
import sys

rules_dir, tests_dir = sys.argv[1], sys.argv[2]
rules = []
for path in sorted(glob.glob(os.path.join(rules_dir, "*.rules"))):
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*rule\s+([A-Za-z_][A-Za-z0-9_]*)", line)
        if m:
            rules.append((os.path.basename(path), m.group(1)))

fires = set()
for path in glob.glob(os.path.join(tests_dir, "*.test")):
    for line in open(path, encoding="utf-8"):
        m = re.match(r"%%\s+(fired|refused)\s+(\S+)\s+(\S+)", line)
        if not m:
            continue
        if m.group(1) == "fired" and m.group(3) != "0":
            fires.add(m.group(2))

missing = [f"{f}: {r} never fires in a test" for f, r in rules if r not in fires]
if missing:
    sys.exit("\n".join(missing))
print(f"{len(rules)} rules, each fired by a test")
