#!/usr/bin/env python3
"""fuserule apply against ONNX Runtime's graph optimizer on the same ONNX models, side by side.

    compare.py FUSERULE MODELS_DIR [--bert-transformer]

For every MODELS_DIR/*.onnx, each in a fresh child process (so that peak memory is the child's
own, read from wait4):
  ORT    InferenceSession with ORT_ENABLE_ALL, optimized_model_filepath set, one intra-op thread,
         CPU provider: the time is the session creation (load, optimize, serialize, kernel
         setup), measured inside the child after `import onnxruntime`.
  fuse   fuserule apply -r rules/*.rules MODEL.onnx -o OUT.graph --report json: the wall time
         of the whole process (import, match, rewrite, write).
  trans  (BERT models of up to 10k nodes, with --bert-transformer; stopped after
         TRANSFORMER_LIMIT CPU seconds) onnxruntime.transformers.optimizer.optimize_model
         (model_type="bert", opt_level=0: its own Python fusion passes, attention, skip-LayerNorm,
         bias-GELU and the rest; levels above 0 also run the session optimizer above and need
         torch installed) followed by save_model_to_file.
Counts after optimization: nodes, and kernels as DESIGN.md counts them (every node but Constant
and the views Reshape, Flatten, Squeeze, Unsqueeze, Identity), the same rule for both sides.
Times are given as CPU seconds (user + system; steady on a shared machine) and wall seconds.
Prints a Markdown table; "speedup" is ORT time / fuserule time and "kernels" is fuserule's
kernels / ORT's (at most 1 is the target). `--repeats N` measures models of 1000 nodes or more N
times (ORT and fuserule alternating; medians), instead of once.
"""
import glob
import json
import os
import subprocess
import sys
import resource
import signal
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The transformer optimizer's Python passes grow much faster than the graph (a 10k-node BERT takes
# it minutes); runs past this many CPU seconds are stopped and reported as such.
TRANSFORMER_LIMIT = 120
SMALL_REPEATS = 7
VIEWS = {"Constant", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}

ORT_WORKER = r"""
import sys, time, json
import onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.optimized_model_filepath = sys.argv[2]
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
so.log_severity_level = 3
start, cpu = time.perf_counter(), time.process_time()
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}))
"""

TRANSFORMER_WORKER = r"""
import sys, time, json
from onnxruntime.transformers import optimizer
start, cpu = time.perf_counter(), time.process_time()
m = optimizer.optimize_model(sys.argv[1], model_type="bert", num_heads=2, hidden_size=32,
                             opt_level=0)
m.save_model_to_file(sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}))
"""


def run_measured(args, cpu_limit=None):
    """Runs a child; returns (stdout, wall seconds, CPU seconds, peak RSS in MB from wait4), or
    None when it used more than `cpu_limit` CPU seconds (the kernel stops it with SIGXCPU)."""
    def limit():
        if cpu_limit:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, preexec_fn=limit, env=dict(
            os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = status  # reaped here, not by Popen
        cpu = usage.ru_utime + usage.ru_stime
        if cpu_limit and os.WIFSIGNALED(status) and \
                os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
            return None
        out.seek(0)
        err.seek(0)
        if status != 0:
            raise SystemExit(f"{' '.join(args)} failed ({status}):\n{err.read().decode()[-3000:]}")
        return out.read().decode(), wall, cpu, usage.ru_maxrss / 1024


def counts(path):
    import onnx
    model = onnx.load(path, load_external_data=False)
    ops = [n.op_type for n in model.graph.node]
    return len(ops), sum(op not in VIEWS for op in ops)


def measure(fuserule, model, work, big_repeats=1):
    """One row; models under 1000 nodes take milliseconds, near the clock's resolution, so they
    are measured SMALL_REPEATS times and each time is the median; larger ones big_repeats times."""
    name = os.path.splitext(os.path.basename(model))[0]
    row = {"model": name}
    row["nodes_in"], row["kernels_in"] = counts(model)
    repeats = SMALL_REPEATS if row["nodes_in"] < 1000 else big_repeats
    samples = [measure_once(fuserule, model, work, name) for _ in range(repeats)]
    for key in samples[0]:
        values = sorted(sample[key] for sample in samples)
        row[key] = values[len(values) // 2]
    return row


def measure_once(fuserule, model, work, name):
    row = {}
    ort_out = os.path.join(work, f"{name}.ort.onnx")
    out, _, _, rss = run_measured([sys.executable, "-c", ORT_WORKER, model, ort_out])
    times = json.loads(out)
    row["ort_s"], row["ort_cpu"], row["ort_mb"] = times["seconds"], times["cpu"], rss
    row["ort_nodes"], row["ort_kernels"] = counts(ort_out)

    rules = [a for r in sorted(glob.glob(os.path.join(ROOT, "rules", "*.rules")))
             for a in ("-r", r)]
    out, wall, cpu, rss = run_measured([fuserule, "apply"] + rules +
                                       [model, "-o", os.path.join(work, f"{name}.graph"),
                                        "--report", "json"])
    report = json.loads(out)
    row["fr_s"], row["fr_cpu"], row["fr_mb"] = wall, cpu, rss
    row["fr_nodes"], row["fr_kernels"] = report["nodes_after"], report["kernels_after"]
    return row


def measure_transformer(model, work):
    name = os.path.splitext(os.path.basename(model))[0]
    out_path = os.path.join(work, f"{name}.trans.onnx")
    result = run_measured([sys.executable, "-c", TRANSFORMER_WORKER, model, out_path],
                          cpu_limit=TRANSFORMER_LIMIT)
    if result is None:
        return {"trans_s": None}
    out, _, _, rss = result
    nodes, kernels = counts(out_path)
    times = json.loads(out)
    return {"trans_s": times["seconds"], "trans_cpu": times["cpu"], "trans_mb": rss,
            "trans_nodes": nodes, "trans_kernels": kernels}


def table(rows, transformer):
    head = ("| model | nodes (kernels) in | ORT cpu s | fuserule cpu s | speedup (cpu) "
            "| ORT wall s | fuserule wall s | speedup (wall) | ORT MB | fuserule MB "
            "| ORT nodes / kernels | fuserule nodes / kernels | kernels fuserule/ORT |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['nodes_in']} ({r['kernels_in']}) | {r['ort_cpu']:.3f} "
            f"| {r['fr_cpu']:.3f} | **{r['ort_cpu'] / r['fr_cpu']:.1f}x** | {r['ort_s']:.3f} "
            f"| {r['fr_s']:.3f} | {r['ort_s'] / r['fr_s']:.1f}x | {r['ort_mb']:.0f} "
            f"| {r['fr_mb']:.0f} | {r['ort_nodes']} / {r['ort_kernels']} "
            f"| {r['fr_nodes']} / {r['fr_kernels']} | {r['fr_kernels'] / r['ort_kernels']:.2f} |")
    if transformer:
        lines += ["", "| model | transformer optimizer cpu s | MB | nodes / kernels "
                  "| fuserule cpu s | fuserule nodes / kernels | speedup (cpu) |", "|" + "---|" * 7]
        for r in rows:
            if "trans_s" not in r:
                continue
            if r["trans_s"] is None:
                lines.append(f"| {r['model']} | > {TRANSFORMER_LIMIT} (stopped) | | "
                             f"| {r['fr_cpu']:.3f} | {r['fr_nodes']} / {r['fr_kernels']} | |")
            else:
                lines.append(
                    f"| {r['model']} | {r['trans_cpu']:.3f} | {r['trans_mb']:.0f} "
                    f"| {r['trans_nodes']} / {r['trans_kernels']} | {r['fr_cpu']:.3f} "
                    f"| {r['fr_nodes']} / {r['fr_kernels']} "
                    f"| **{r['trans_cpu'] / r['fr_cpu']:.1f}x** |")
    return "\n".join(lines)


def main():
    """compare.py FUSERULE MODELS_DIR [--bert-transformer] [--rows FILE] [--repeats N]: measure
    (and append each row as a JSON line to FILE); compare.py --table FILE...: print the table of
    saved rows."""
    if len(sys.argv) > 2 and sys.argv[1] == "--table":
        rows = [json.loads(line) for path in sys.argv[2:] for line in open(path)]
        rows.sort(key=lambda r: r["model"])
        report(rows, any("trans_s" in r for r in rows))
        return
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    fuserule, models = os.path.abspath(sys.argv[1]), sys.argv[2]
    transformer = "--bert-transformer" in sys.argv[3:]
    rows_file = sys.argv[sys.argv.index("--rows") + 1] if "--rows" in sys.argv else None
    big_repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ort-") as work:
        for model in sorted(glob.glob(os.path.join(models, "*.onnx"))):
            row = measure(fuserule, model, work, big_repeats)
            print(f"{row['model']}: ORT {row['ort_cpu']:.3f} cpu s, "
                  f"fuserule {row['fr_cpu']:.3f} cpu s",
                  file=sys.stderr, flush=True)
            if transformer and os.path.basename(model).startswith("bert") and \
                    row["nodes_in"] <= 10000:
                row.update(measure_transformer(model, work))
                print(f"{row['model']}: transformer optimizer {row['trans_s']} s",
                      file=sys.stderr, flush=True)
            rows.append(row)
            if rows_file:
                with open(rows_file, "a") as f:
                    f.write(json.dumps(row) + "\n")
    report(rows, transformer)


def report(rows, transformer):
    print(table(rows, transformer))
    worst = min(r["ort_cpu"] / r["fr_cpu"] for r in rows)
    more = [r["model"] for r in rows if r["fr_kernels"] > r["ort_kernels"]]
    print(f"\nslowest ratio {worst:.1f}x; more kernels than ORT on: {more or 'none'}")


if __name__ == "__main__":
    main()
