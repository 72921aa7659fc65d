#!/usr/bin/env python3
"""Real-size weights: fuserule apply from .onnx to .onnx against ONNX Runtime's session creation
(bench/README.md, "Real-size weights"; issue 20's weights target).

    run.py FUSERULE [--work DIR] [--out DIR] [--repeats N] [--only NAME] [--link-weights]

Makes the models once in DIR (default /tmp/fuserule-weights; they are not committed):
  resnet50  examples/resnet50.graph exported at full size (torchvision ResNet-50 v1.5, every Conv
            followed by its BatchNormalization: 25.6M f32 parameters, about 102 MB)
  qwen2     examples/qwen2.graph exported at full size (a Qwen2-7B-shaped decoder, 2 layers:
            hidden 3584, intermediate 18944, 28 query / 4 key-value heads; about 1.87 GB f32)
Then, N times in alternation, each in a fresh child process (CPU seconds = user + system, peak RSS
from wait4):
  fuse  fuserule apply -r rules/*.rules MODEL.onnx -o OUT.onnx [--link-weights]
        (the whole process; OUT.onnx in
        --out DIR, default the work folder, removed before each run so that no run pays for
        dropping the previous one's pages)
  ORT   InferenceSession with ORT_ENABLE_ALL, one thread, CPU provider (session creation,
        measured inside the child after `import onnxruntime`; peak RSS is the child's)
and reports medians, the speedup (ORT CPU / fuse CPU) and fuserule's peak RSS against the bytes
of the weights that changed (output initializers that are new or differ from the input's) plus
64 MiB. The page cache is warm for both (the model is read once before the first run).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

ORT_WORKER = r"""
import sys, time, json
import onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
so.log_severity_level = 3
cpu = time.process_time()
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
print(json.dumps({"cpu": time.process_time() - cpu}))
"""


def measured(args):
    """(stdout, wall s, CPU s, peak RSS bytes) of a child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=dict(
            os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if status != 0:
            sys.exit(f"{' '.join(args)} failed ({status}):\n{err.read().decode()[-2000:]}")
        return (out.read().decode(), wall, usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss * 1024)


def make_models(fuserule, work):
    models = {}
    for name in ("resnet50", "qwen2"):
        path = os.path.join(work, f"{name}.onnx")
        if not os.path.exists(path):
            print(f"weights: exporting examples/{name}.graph to {path}", file=sys.stderr)
            subprocess.run([fuserule, "export", os.path.join(ROOT, "examples", f"{name}.graph"),
                            "-o", path], check=True)
        models[name] = path
    return models


def initializers(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    return {t.name: t.raw_data if t.HasField("raw_data") else t.SerializeToString()
            for t in m.graph.initializer}


def changed_bytes(before, after):
    """Bytes of the output's initializers that are new or differ from the input's (one linked as
    external data, --link-weights, is the input's bytes: unchanged)."""
    import onnx
    linked = {t.name for t in onnx.load(after, load_external_data=False).graph.initializer
              if t.data_location == onnx.TensorProto.EXTERNAL}
    a, b = initializers(before), initializers(after)
    return (sum(len(v) for k, v in b.items() if k not in linked and a.get(k) != v),
            sum(len(v) for v in a.values()))


def changed_bytes_aside(before, after):
    """changed_bytes in a child: this process stays small, and so do the children it starts
    (Linux keeps a process's peak RSS across exec: a child forked from a parent that held the
    models' initializers reported the parent's size as its own)."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--changed", before, after],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--changed":
        print(*changed_bytes(sys.argv[2], sys.argv[3]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("fuserule")
    ap.add_argument("--work", default="/tmp/fuserule-weights")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="folder of the outputs (default: --work)")
    ap.add_argument("--only")
    ap.add_argument("--link-weights", action="store_true",
                    help="apply --link-weights (--out must be the work folder or above it)")
    args = ap.parse_args()
    out_dir = args.out or args.work
    os.makedirs(out_dir, exist_ok=True)
    fuserule = os.path.realpath(args.fuserule)
    os.makedirs(args.work, exist_ok=True)
    rules = sorted(os.path.join(ROOT, "rules", f) for f in os.listdir(os.path.join(ROOT, "rules"))
                   if f.endswith(".rules"))
    print("| model | weights | fuse CPU s | ORT CPU s | speedup | fuse peak RSS | ORT peak RSS "
          "| changed weights | changed + 64 MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, path in make_models(fuserule, args.work).items():
        if args.only and args.only not in name:
            continue
        with open(path, "rb") as f:  # warm the page cache for both sides
            while f.read(1 << 24):
                pass
        out = os.path.join(out_dir, f"{name}.fused.onnx")
        fuse, ort = [], []
        for _ in range(args.repeats):
            if os.path.exists(out):
                os.remove(out)
            _, _, cpu, rss = measured([fuserule, "apply", "-r", *rules, path, "-o", out] +
                                      (["--link-weights"] if args.link_weights else []))
            fuse.append((cpu, rss))
            stdout, _, _, rss = measured([sys.executable, "-c", ORT_WORKER, path])
            ort.append((float(stdout.strip().split(":")[1].rstrip("}")), rss))
        changed, total = changed_bytes_aside(path, out)
        fcpu = statistics.median(c for c, _ in fuse)
        frss = max(r for _, r in fuse)
        ocpu = statistics.median(c for c, _ in ort)
        orss = max(r for _, r in ort)
        mib = 1 << 20
        print(f"| {name} | {total / mib:.0f} MiB | {fcpu:.2f} | {ocpu:.2f} | {ocpu / fcpu:.1f}x "
              f"| {frss / mib:.0f} MiB | {orss / mib:.0f} MiB | {changed / mib:.0f} MiB "
              f"| {(changed + 64 * mib) / mib:.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
