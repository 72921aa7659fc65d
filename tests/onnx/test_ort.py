#!/usr/bin/env python3
"""ONNX Runtime as an oracle we did not write: exported graphs (fused ops as com.microsoft contrib
ops) run in onnxruntime and must give what `fuserule run` gives.

    test_ort.py FUSERULE

Needs a python with `onnxruntime` and `numpy` (pip install onnxruntime numpy). This script runs
under whichever python ctest starts; without onnxruntime it re-runs itself under
$FUSERULE_ORT_PYTHON when that is set, and is skipped (77) otherwise. ONNX Runtime runs with its
graph optimizations off, so each exported op runs as written. Models made by models.py (when
Debian's /usr/bin/python3 with `onnx` is there) run too: ONNX Runtime reads their opset-11 forms
itself, an independent check of import's conversions.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import testlib  # noqa: E402

testlib.need_onnxruntime(__file__)
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from testlib import check, fuserule_ok, read_safetensors, write_safetensors  # noqa: E402

# ONNX Runtime's own f32 test tolerances (relative, absolute); the transformer-sized graphs sum
# over hundreds of terms in another order than ONNX Runtime's kernels.
TOLERANCE = (1e-4, 1e-5)
SIZES = {"B": 2, "S": 5, "batch size": 2}

ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32}


def session(path):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def random_inputs(sess, rng):
    feeds = {}
    for i in sess.get_inputs():
        shape = [SIZES[d] if isinstance(d, str) else d for d in i.shape]
        feeds[i.name] = rng.standard_normal(shape).astype(ORT_TYPES[i.type])
    return feeds


def compare_with_ort(binary, model, tmp, name, tolerance=TOLERANCE):
    """Runs `model` (.graph or .onnx) in fuserule and its export in ONNX Runtime."""
    exported = os.path.join(tmp, name + ".onnx")
    fuserule_ok(binary, "export", model, "-o", exported)
    sess = session(exported)
    feeds = random_inputs(sess, np.random.default_rng(len(name)))
    inputs = os.path.join(tmp, name + ".in.safetensors")
    outputs = os.path.join(tmp, name + ".out.safetensors")
    write_safetensors(inputs, feeds)
    fuserule_ok(binary, "run", model, "--inputs", inputs, "-o", outputs)
    ours = read_safetensors(outputs)
    names = [o.name for o in sess.get_outputs()]
    theirs = dict(zip(names, sess.run(names, feeds)))
    check(set(ours) == set(theirs), f"outputs {sorted(ours)} vs {sorted(theirs)}")
    for out in names:
        testlib.assert_close(out, ours[out], theirs[out], *tolerance)
    return exported


def contrib_nodes(path):
    """How many com.microsoft nodes a model has, read from its bytes without the `onnx` module:
    the domain string appears once per such node and once in the model's opset list. (A node of
    the "fuserule" domain would have stopped ONNX Runtime from loading the model.)"""
    with open(path, "rb") as f:
        count = f.read().count(b"com.microsoft")
    return max(count - 1, 0)


def make_cases(binary, tmp):
    def graph_case(path, name, expect_contrib):
        def case():
            exported = compare_with_ort(binary, path, tmp, name)
            count = contrib_nodes(exported)
            check(count == expect_contrib, f"{count} com.microsoft nodes, expected {expect_contrib}")
        case.__name__ = f"ort_{name}"
        return case

    cases = [graph_case(os.path.join(HERE, "fused_cnn.graph"), "fused_cnn", 10),
             graph_case(os.path.join(HERE, "fused_transformer.graph"), "fused_transformer", 7),
             graph_case(os.path.join(HERE, "fused_skip_bias.graph"), "fused_skip_bias", 2)]
    for example in ["resnet_block", "bert_layer"]:
        path = os.path.join(ROOT, "examples", example + ".graph")
        if os.path.exists(path):
            cases.append(graph_case(path, example, 0))

    # models made with the `onnx` module: ONNX Runtime reads them directly
    models_dir = os.path.join(tmp, "models")
    made = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "models.py"), models_dir],
                          capture_output=True)
    if made.returncode == 0:
        # not "names": ONNX Runtime 1.32 crashes running a Split whose middle output is unnamed
        for name in ["conv_bn_relu", "transformer", "legacy11", "gelu20"]:
            def model_case(name=name):
                model = os.path.join(models_dir, name + ".onnx")
                sess = session(model)
                feeds = random_inputs(sess, np.random.default_rng(1))
                inputs = os.path.join(tmp, name + ".in.safetensors")
                outputs = os.path.join(tmp, name + ".out.safetensors")
                write_safetensors(inputs, feeds)
                fuserule_ok(binary, "run", model, "--inputs", inputs, "-o", outputs)
                ours = read_safetensors(outputs)
                names = [o.name for o in sess.get_outputs()]
                for out, want in zip(names, sess.run(names, feeds)):
                    testlib.assert_close(out, ours[out], want, *TOLERANCE)
            model_case.__name__ = f"ort_model_{name}"
            cases.append(model_case)
    else:
        print("note: /usr/bin/python3 cannot make the ONNX models (no `onnx` module); "
              "only the graphs run")
    return cases


if __name__ == "__main__":
    binary = os.path.abspath(sys.argv[1])
    print(f"onnxruntime {ort.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(testlib.main(make_cases(binary, tmp), ()))
