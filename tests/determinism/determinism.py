#!/usr/bin/python3
"""Determinism: the same input gives byte-identical graph and weights files across runs.

    determinism.py FUSERULE

Each command runs three times, each time in a fresh folder (so that address-space layout, the
folder's name and its files differ between runs), and every file it writes, with its standard
output, must be identical byte for byte. Commands: import of an ONNX model with weights, apply
of the standard rules to the examples (graph, folded weights, JSON report), export to ONNX, and
run with its outputs saved.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RULES = [os.path.join(ROOT, "rules", name) for name in ("cnn.rules", "transformer.rules")]
EXAMPLES = [os.path.join(ROOT, "examples", name) for name in ("resnet_block.graph",
                                                                "bert_layer.graph")]
RUNS = 3


def make_model(path):
    """Conv > BN > Relu and MatMul > Add with initializers: import writes weights, and the
    names come from the model (no generated names to drift)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    inits = [init("w", 16, 8, 3, 3), init("g", 16), init("b", 16), init("m", 16),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "v"),
             init("fc", 1024, 10), init("fcb", 10)]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "fc"], ["mm"]),
             helper.make_node("Add", ["mm", "fcb"], ["y"])]
    inits.append(numpy_helper.from_array(np.array([1, 1024], dtype=np.int64), "shape"))
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def outputs(fuserule, args, work, index):
    """Runs the command in a fresh folder; returns {file or <stdout>: bytes}."""
    folder = os.path.join(work, f"run{index}")
    os.makedirs(folder)
    r = subprocess.run([fuserule] + args, cwd=folder, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stderr.decode()}")
    files = {"<stdout>": r.stdout}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return files


def same_every_time(fuserule, label, args):
    """None when every run wrote the same bytes, else what differed."""
    with tempfile.TemporaryDirectory(prefix="determinism-") as work:
        try:
            first = outputs(fuserule, args, work, 0)
            for i in range(1, RUNS):
                again = outputs(fuserule, args, work, i)
                if again.keys() != first.keys():
                    return f"{label}: run {i} wrote {sorted(again)}, run 0 {sorted(first)}"
                for name in first:
                    if again[name] != first[name]:
                        return f"{label}: {name} differs between run 0 and run {i}"
        except RuntimeError as e:
            return f"{label}: {e}"
    print(f"{label}: {RUNS} runs, identical {', '.join(sorted(first))}")
    return None


def main():
    fuserule = os.path.abspath(sys.argv[1])
    checks = []
    with tempfile.TemporaryDirectory(prefix="determinism-in-") as inputs:
        try:
            model = os.path.join(inputs, "small_cnn.onnx")
            make_model(model)
            checks.append(("import", ["import", model, "-o", "out.graph"]))
        except ImportError:
            print("import: skipped (numpy and onnx are needed to make the model)")
        for example in EXAMPLES:
            name = os.path.basename(example)
            rules = [a for path in RULES for a in ("-r", path)]
            checks += [
                (f"apply {name}", ["apply"] + rules + [example, "-o", "out.graph",
                                                         "--report", "json"]),
                (f"export {name}", ["export", example, "-o", "out.onnx"]),
                (f"run {name}", ["run", example, "-o", "out.safetensors"]),
            ]
        failed = [p for label, args in checks if (p := same_every_time(fuserule, label, args))]
    for problem in failed:
        print(f"FAILED: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
