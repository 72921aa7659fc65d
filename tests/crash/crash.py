#!/usr/bin/python3
"""Crash safety of the written outputs: fuserule is killed (SIGKILL) at random moments while it
writes, and the files at the output paths must each be either the previous content, byte for
byte, or the complete new content, never a torn mix; a temporary file left by the killed process
must never sit at an output path.

    crash.py FUSERULE [ROUNDS] [SEED]       (defaults: 40 rounds, seed 1)

Two models, A and B, with the same tensor names and different weights, are written alternately
to the same output, so that "old" and "new" differ in every byte of the weights. The reference
bytes of each are made by complete runs first. Each round starts the command and kills it after
a random delay between 0.2 and 1.3 times a complete run's duration (some rounds finish, most are
cut somewhere in reading, writing or renaming). Commands: `import MODEL.onnx -o out.graph` (graph
text and a safetensors file of weights) and `apply -o out.graph` on a graph whose BatchNorms fold
into new weights.
"""
import importlib.util
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUTPUTS = ("out.graph", "out.safetensors")


def make_model(path, seed):
    """A chain of MatMuls with about 8 MB of weights: big enough that writing takes a while."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(8):
        w = rng.standard_normal((512, 512)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"]))
        x = f"h{i}"
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, 512])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def make_graph(path, seed):
    """Conv > BN > Relu blocks with 64x64x3x3 weights: fold_bn writes new weights."""
    lines = ["graph bn_chain {", "  input  x : f32[1,64,16,16] NCHW"]
    prev = "x"
    for i in range(8):
        s = seed * 100 + i * 5
        lines += [f"  const  w{i} : f32[64,64,3,3] = random(seed={s}, lo=-0.06, hi=0.06)",
                  f"  const  g{i} : f32[64] = random(seed={s + 1}, lo=0.5, hi=1.5)",
                  f"  const  b{i} : f32[64] = random(seed={s + 2}, lo=-0.1, hi=0.1)",
                  f"  const  m{i} : f32[64] = random(seed={s + 3}, lo=-0.1, hi=0.1)",
                  f"  const  v{i} : f32[64] = random(seed={s + 4}, lo=0.5, hi=1.5)",
                  f"  c{i} = Conv({prev}, w{i}) {{kernel_shape=[3,3], pads=[1,1,1,1]}}",
                  f"  n{i} = BatchNormalization(c{i}, g{i}, b{i}, m{i}, v{i}) {{epsilon=1e-05}}",
                  f"  r{i} = Relu(n{i})"]
        prev = f"r{i}"
    lines += [f"  output {prev}", "}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def snapshot(folder):
    """The bytes at each output path (None when absent)."""
    state = {}
    for name in OUTPUTS:
        path = os.path.join(folder, name)
        state[name] = open(path, "rb").read() if os.path.exists(path) else None
    return state


def reference(fuserule, args, folder):
    """Runs the command to completion in a fresh folder; returns its outputs and duration."""
    os.makedirs(folder)
    start = time.monotonic()
    r = subprocess.run([fuserule] + args, cwd=folder, capture_output=True)
    elapsed = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"reference run {args} failed ({r.returncode}):\n{r.stderr.decode()}")
    return snapshot(folder), elapsed


def check_folder(folder, before, after):
    """Returns None when each output is the old or the new content (and a pair is consistent)."""
    state = snapshot(folder)
    for name in OUTPUTS:
        if state[name] not in (before[name], after[name]):
            size = -1 if state[name] is None else len(state[name])
            return f"{name} is neither the old nor the new content ({size} bytes)"
    for name in os.listdir(folder):
        if name not in OUTPUTS and not is_leftover(name):
            return f"unexpected file {name}"
    return None


def is_leftover(name):
    """A temporary of a killed save: an output's name with a suffix (out.graph.tmp.PID,
    out.safetensors.old.PID), which no reader takes for the output."""
    return any(name.startswith(out + ".") for out in OUTPUTS)


def run_command(fuserule, label, args_for, inputs, rounds, rng, workdir):
    """Alternates inputs A and B into one folder, killing each run at a random moment."""
    refs, durations = {}, []
    for key in inputs:
        refs[key], elapsed = reference(fuserule, args_for(key), os.path.join(workdir, f"ref-{key}"))
        durations.append(elapsed)
    folder = os.path.join(workdir, f"live-{label}")
    os.makedirs(folder)
    subprocess.run([fuserule] + args_for("A"), cwd=folder, check=True, capture_output=True)
    # Reading the input takes the first part of a run; the kills aim at the writing after it.
    span = max(durations)
    finished = killed = torn = 0
    for i in range(rounds):
        key = "B" if i % 2 == 0 else "A"
        before = snapshot(folder)
        proc = subprocess.Popen([fuserule] + args_for(key), cwd=folder,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2 * span, 1.3 * span))
        proc.send_signal(signal.SIGKILL)
        status = proc.wait()
        if status == 0:
            finished += 1
        else:
            killed += 1
        problem = check_folder(folder, before, refs[key])
        if problem:
            return f"{label}, round {i} (killed after writing {key}): {problem}"
        if status == 0 and snapshot(folder) != refs[key]:
            return f"{label}, round {i}: a run that finished left other bytes than the reference"
        current = snapshot(folder)
        torn += current not in (before, refs[key])
    leftovers = [n for n in os.listdir(folder) if is_leftover(n)]
    print(f"{label}: {rounds} rounds, {killed} killed, {finished} finished; "
          f"{len(leftovers)} temporary files left by killed runs; "
          f"{torn} kills fell between the two renames (new weights, old graph)")
    return None


def main():
    fuserule = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    if not all(importlib.util.find_spec(m) for m in ("numpy", "onnx")):
        print("crash: numpy and onnx are needed to make the models; skipped")
        return 77
    with tempfile.TemporaryDirectory(prefix="crash-") as work:
        make_model(os.path.join(work, "input-A.onnx"), 1)
        make_model(os.path.join(work, "input-B.onnx"), 2)
        make_graph(os.path.join(work, "input-A.graph"), 1)
        make_graph(os.path.join(work, "input-B.graph"), 2)
        rules = os.path.join(ROOT, "rules", "cnn.rules")
        commands = [
            ("import", lambda k: ["import", os.path.join(work, f"input-{k}.onnx"), "-o",
                                  "out.graph"]),
            ("apply", lambda k: ["apply", "-r", rules, os.path.join(work, f"input-{k}.graph"),
                                 "-o", "out.graph"]),
        ]
        for label, args_for in commands:
            sub = os.path.join(work, label)
            os.makedirs(sub)
            problem = run_command(fuserule, label, args_for, ("A", "B"), rounds, rng, sub)
            if problem:
                print(f"FAILED: {problem}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
