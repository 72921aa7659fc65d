#!/usr/bin/env python3
"""corpus.py FUSERULE DIR: the prover against the wrong-rule corpus (docs/prove.md).

Every rule of DIR/*.rules must be caught on each of seeds 1-5: `fuserule check --prove --seed S`
says FAILED for it, or `fuserule check` rejects its file (exit 2). The look-alikes in
correct*.rules and safe*.rules must be proved on every seed. f64_only*.rules are wrong rules that
need the f64 reference (prove/judge.c); they are run and reported, not required. Prints the catch
rate and the time it took."""
import glob
import os
import re
import subprocess
import sys
import time

fuserule, folder = sys.argv[1], sys.argv[2]
SEEDS = range(1, 6)
VERDICT = re.compile(r"^\S+\.rules:\d+: ([A-Za-z_0-9]+): (proved|FAILED|unproven)")


def rule_names(path):
    return [m.group(1) for m in re.finditer(r"^rule\s+([A-Za-z_0-9]+)", open(path).read(), re.M)]


def verdicts(path, seed):
    out = subprocess.run([fuserule, "check", "--prove", "--seed", str(seed), path],
                         capture_output=True, text=True)
    if out.returncode == 2:
        return None  # rejected by check
    found = {}
    for line in out.stdout.splitlines():
        m = VERDICT.match(line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


problems, caught_by_check, wrong, must_prove, f64 = [], 0, 0, 0, []
start = time.monotonic()
for path in sorted(glob.glob(os.path.join(folder, "*.rules"))):
    base = os.path.basename(path)
    names = rule_names(path)
    expect = ("proved" if base.startswith(("correct", "safe"))
              else "f64" if base.startswith("f64_only") else "FAILED")
    caught = {n: 0 for n in names}
    for seed in SEEDS:
        found = verdicts(path, seed)
        if found is None:
            if expect == "FAILED":
                caught = {n: caught[n] + 1 for n in names}
                continue
            problems.append(f"{base}: `fuserule check` rejects the file")
            break
        for n in names:
            got = found.get(n, "no verdict")
            if expect == "f64":
                caught[n] += got == "FAILED"
            elif got != expect:
                problems.append(f"{base}: {n} is {got} on seed {seed}, expected {expect}")
            else:
                caught[n] += 1
    if expect == "FAILED":
        wrong += len(names)
        if verdicts(path, 1) is None:
            caught_by_check += len(names)
    elif expect == "proved":
        must_prove += len(names)
    else:
        f64 += [f"{n} ({caught[n]} of {len(SEEDS)} seeds)" for n in names]
elapsed = time.monotonic() - start
if problems:
    sys.exit("\n".join(problems))
print(f"{wrong} wrong rules caught on each of seeds 1-5 ({caught_by_check} by `fuserule check`, "
      f"{wrong - caught_by_check} by --prove); {must_prove} correct look-alikes proved on each; "
      f"f64 reference needed: {', '.join(f64) or 'none'}; {elapsed:.1f} s")
