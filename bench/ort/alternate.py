#!/usr/bin/env python3
"""Alternating runs of several fuserule binaries on one ONNX model, as compare.py runs fuserule.

    alternate.py N MODEL.onnx BIN...          apply -r rules/*.rules MODEL -o OUT.graph --report json
    alternate.py N MODEL.onnx BIN... --stats  stats MODEL (import and validation alone)

Each round runs every BIN once, in the order given (base, yours, base, yours...), so that a
shared machine's load falls on all of them alike; prints each BIN's median CPU seconds (user +
system, from wait4), its spread and its median peak RSS. OMP/OpenBLAS threads are 1, as in
compare.py. The outputs go to a temporary folder, removed at the end.
"""
import glob
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    args = [a for a in sys.argv[1:] if a != "--stats"]
    stats = "--stats" in sys.argv[1:]
    if len(args) < 3:
        raise SystemExit(__doc__)
    n, model, bins = int(args[0]), args[1], args[2:]
    rules = sorted(glob.glob(os.path.join(ROOT, "rules", "*.rules")))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cpu = {b: [] for b in bins}
    rss = {b: [] for b in bins}
    with tempfile.TemporaryDirectory(prefix="alternate-") as work:
        for _ in range(n):
            for k, b in enumerate(bins):
                out = os.path.join(work, f"out{k}.graph")
                cmd = [b, "stats", model] if stats else \
                    [b, "apply", "-r", *rules, model, "-o", out, "--report", "json"]
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
                _, status, usage = os.wait4(proc.pid, 0)
                if status != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed ({status})")
                cpu[b].append(usage.ru_utime + usage.ru_stime)
                rss[b].append(usage.ru_maxrss / 1024)
    for b in bins:
        print(f"{statistics.median(cpu[b]):.3f} CPU s (min {min(cpu[b]):.3f}, max "
              f"{max(cpu[b]):.3f}), peak {statistics.median(rss[b]):.0f} MB  {b}")


if __name__ == "__main__":
    main()
