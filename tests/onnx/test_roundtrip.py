#!/usr/bin/python3
"""ONNX import: models made by models.py import, save, export and import again unchanged.

    test_roundtrip.py FUSERULE

For each model: `fuserule import` writes a graph whose canonical text is what `fuserule fmt`
prints for the model; `fuserule export` of that graph passes onnx.checker.check_model with
full_check; importing the export gives the same canonical text and the same weights, byte for
byte; and the model, the graph and the export compute bit-identical outputs. Also: the opset-11
forms (attributes that moved to inputs, Softmax's old flattening) compute exactly what their
opset-18 twins do, external data loads, and unsupported ops are listed in one error.
"""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import testlib  # noqa: E402
from testlib import check, fuserule_ok, read_safetensors, run, write_safetensors  # noqa: E402

onnx = testlib.need_onnx()
import numpy as np  # noqa: E402

import models  # noqa: E402

# Concrete sizes for symbolic dims, and the inputs each model runs on.
RNG = np.random.default_rng(5)
INPUTS = {
    "conv_bn_relu": {"x:0": RNG.standard_normal((2, 3, 8, 8))},
    "transformer": {"x": RNG.standard_normal((2, 5, 16))},
    "legacy11": {"x": RNG.standard_normal((2, 3, 4))},
    "names": {"input:0": RNG.standard_normal((3, 6))},
    "gelu20": {"x": RNG.standard_normal((3, 5)) * 3},
    "external": {"x:0": RNG.standard_normal((1, 3, 8, 8))},
}


def canonical(text):
    """The text without the safetensors file names, which follow the output path."""
    return re.sub(r'file\("[^"]*"', 'file(*', text)


def outputs(binary, graph, inputs_file, out):
    fuserule_ok(binary, "run", graph, "--inputs", inputs_file, "-o", out)
    return read_safetensors(out)


def same_outputs(a, b, what):
    check(a.keys() == b.keys(), f"{what}: outputs {sorted(a)} vs {sorted(b)}")
    for name in a:
        check(a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]),
              f"{what}: output '{name}' differs")


def roundtrip(binary, model, tmp, name):
    d = testlib.tempdir_under(tmp, name)
    inputs = os.path.join(d, "inputs.safetensors")
    write_safetensors(inputs, {k: v.astype(np.float32) for k, v in INPUTS[name].items()})
    # import writes what fmt prints, and the written graph loads back to the same text
    fuserule_ok(binary, "import", model, "-o", os.path.join(d, "a.graph"))
    direct = fuserule_ok(binary, "fmt", model)
    with open(os.path.join(d, "a.graph")) as f:
        written = f.read()
    check(canonical(written) == canonical(direct), f"import wrote\n{written}\nfmt printed\n{direct}")
    check(fuserule_ok(binary, "fmt", os.path.join(d, "a.graph")) == written,
          "the imported graph is not in canonical form")
    # export passes the checker, and imports back to the same graph and weights
    fuserule_ok(binary, "export", os.path.join(d, "a.graph"), "-o", os.path.join(d, "b.onnx"))
    onnx.checker.check_model(onnx.load(os.path.join(d, "b.onnx")), full_check=True)
    fuserule_ok(binary, "import", os.path.join(d, "b.onnx"), "-o", os.path.join(d, "b.graph"))
    with open(os.path.join(d, "b.graph")) as f:
        again = f.read()
    check(canonical(again) == canonical(written), f"round trip changed the graph:\n{again}")
    weights = [os.path.join(d, x + ".safetensors") for x in "ab"]
    check(os.path.exists(weights[0]) == os.path.exists(weights[1]), "one side has no weights")
    if os.path.exists(weights[0]):
        with open(weights[0], "rb") as fa, open(weights[1], "rb") as fb:
            check(fa.read() == fb.read(), "round trip changed the weights")
    # the model, the graph and the export compute the same bits
    ref = outputs(binary, model, inputs, os.path.join(d, "o_model.safetensors"))
    same_outputs(ref, outputs(binary, os.path.join(d, "a.graph"), inputs,
                              os.path.join(d, "o_graph.safetensors")), "graph")
    same_outputs(ref, outputs(binary, os.path.join(d, "b.onnx"), inputs,
                              os.path.join(d, "o_export.safetensors")), "export")
    return ref


def make_cases(binary, tmp):
    models.write_all(tmp)

    def model_case(name, path):
        def case():
            roundtrip(binary, path, tmp, name)
        case.__name__ = f"roundtrip_{name}"
        return case

    cases = [model_case(n, os.path.join(tmp, n + ".onnx"))
             for n in ["conv_bn_relu", "transformer", "legacy11", "names", "gelu20"]]
    cases.append(model_case("external", os.path.join(tmp, "external", "external.onnx")))

    def legacy_opsets_agree():
        d = testlib.tempdir_under(tmp, "legacy_pair")
        inputs = os.path.join(d, "inputs.safetensors")
        write_safetensors(inputs, {"x": INPUTS["legacy11"]["x"].astype(np.float32)})
        old = outputs(binary, os.path.join(tmp, "legacy11.onnx"), inputs,
                      os.path.join(d, "o11.safetensors"))
        new = outputs(binary, os.path.join(tmp, "legacy18.onnx"), inputs,
                      os.path.join(d, "o18.safetensors"))
        same_outputs(old, new, "opset 11 vs 18")
        # Softmax at opset 11 normalizes over dims 1.. together
        x = INPUTS["legacy11"]["x"].astype(np.float32).reshape(2, 12)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        testlib.assert_close("soft", old["soft"], (e / e.sum(axis=1, keepdims=True))
                             .reshape(2, 3, 4), 1e-5, 1e-6)

    def unsupported_ops_listed():
        d = testlib.tempdir_under(tmp, "unsupported")
        out = os.path.join(d, "u.graph")
        model = os.path.join(tmp, "unsupported.onnx")
        status, _, err = run([binary, "import", model, "-o", out])
        check(status == 2, f"exit status {status}")
        want = (f"{model}: error: 3 op types outside the catalog: Unique (2), "
                "StringNormalizer (1), com.microsoft.WordConvEmbedding (1)\n")
        check(err == want, f"stderr:\n{err}expected:\n{want}")
        check(not os.path.exists(out), "a graph was written")

    def names_kept():
        text = fuserule_ok(binary, "fmt", os.path.join(tmp, "names.onnx"))
        for name in ['"input:0"', '"a b"', "s/2", '"_"', '"graph"', '"é"', '"batch size"',
                     "s.0_output1", 'graph "names: quoted!"']:
            check(name in text, f"{name} is not in\n{text}")

    return cases + [legacy_opsets_agree, unsupported_ops_listed, names_kept]


if __name__ == "__main__":
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(testlib.main(make_cases(binary, tmp), ()))
