#!/usr/bin/env python3
"""verify_target.py MAX_KERNELS COMMAND...: runs `fuserule verify` (COMMAND) and passes when it
succeeds and the fused graph it reports ("fused: nodes N -> M, kernels K -> L") launches at most
MAX_KERNELS kernels: an example model's fusion target (examples/README.md) as a test."""
import re
import subprocess
import sys

limit = int(sys.argv[1])
run = subprocess.run(sys.argv[2:], capture_output=True, text=True)
sys.stdout.write(run.stdout)
sys.stderr.write(run.stderr)
if run.returncode != 0:
    sys.exit(f"verify exited with status {run.returncode}")
m = re.search(r"kernels (\d+) -> (\d+)", run.stdout)
if not m:
    sys.exit("verify printed no 'kernels K -> L' line")
if int(m.group(2)) > limit:
    sys.exit(f"{m.group(2)} kernels after fusion; the target is at most {limit}")
print(f"{m.group(2)} kernels after fusion, target at most {limit}: met")
