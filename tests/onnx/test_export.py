#!/usr/bin/python3
"""ONNX export: what each op becomes, the opset chosen, onnx.checker on every export, and the
export of fused graphs importing back to the same ops computing the same bits.

    test_export.py FUSERULE
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import testlib  # noqa: E402
from testlib import check, fuserule_ok, read_safetensors, run, write_safetensors  # noqa: E402

onnx = testlib.need_onnx()
import numpy as np  # noqa: E402

import models  # noqa: E402

# What each fused graph exports to: (domain.op_type, ...) in node order.
EXPECTED_OPS = {
    "fused_cnn": ["com.microsoft.FusedConv"] * 7 + [
        "GlobalAveragePool", "Flatten", "com.microsoft.FusedGemm", "com.microsoft.FusedGemm",
        "com.microsoft.FusedMatMul", "Gemm"],
    "fused_transformer": [
        "com.microsoft.SkipLayerNormalization", "com.microsoft.SkipSimplifiedLayerNormalization",
        "com.microsoft.SkipLayerNormalization", "MatMul", "com.microsoft.BiasGelu",
        "com.microsoft.Gelu", "com.microsoft.FastGelu", "com.microsoft.FusedMatMul"],
    "fused_skip_bias": ["com.microsoft.SkipLayerNormalization"] * 2,
    "fused_other": [
        "fuserule.RMSNorm", "fuserule.FusedQKV", "fuserule.RoPE", "fuserule.RoPE",
        "fuserule.Attention", "fuserule.Attention", "fuserule.FusedSoftmax", "fuserule.SwiGLU",
        "fuserule.ElementwiseChain", "fuserule.GemmEpilogue", "fuserule.FusedConvAct",
        "fuserule.AddLayerNorm"],
}

# Standard ops a fused op may come back as (GemmEpilogue without activation exports as Gemm).
COMES_BACK_AS = {"Gemm": "GemmEpilogue"}


def node_ops(model):
    return [(n.domain + "." if n.domain else "") + n.op_type for n in model.graph.node]


def opset_of(model, domain=""):
    return {o.domain: o.version for o in model.opset_import}.get(domain)


def ir_ops(binary, graph):
    """The op of every node line of `fuserule fmt`."""
    ops = []
    for line in fuserule_ok(binary, "fmt", graph).splitlines():
        if " = " in line and not line.lstrip().startswith(("const", "input")):
            ops.append(line.split(" = ", 1)[1].split("(", 1)[0])
    return ops


def export(binary, graph, out, *args):
    fuserule_ok(binary, "export", graph, "-o", out, *args)
    m = onnx.load(out)
    if opset_of(m) <= 17:  # the newest opset Debian's checker knows
        onnx.checker.check_model(m, full_check=True)
    return m


def random_inputs(binary, graph, path):
    """Inputs for a graph from its input lines (static shapes only)."""
    rng = np.random.default_rng(3)
    types = {"f32": np.float32, "f16": np.float16}
    tensors = {}
    for line in fuserule_ok(binary, "fmt", graph).splitlines():
        line = line.strip()
        if line.startswith("input"):
            name, ty = [p.strip() for p in line[len("input"):].split(":", 1)]
            dtype, dims = ty.split("[", 1)
            shape = [int(d) for d in dims.split("]")[0].split(",") if d]
            tensors[name.strip('"')] = rng.standard_normal(shape).astype(types[dtype])
    write_safetensors(path, tensors)


def make_cases(binary, tmp):
    models.write_all(os.path.join(tmp, "models"))

    def fused_case(name):
        def case():
            graph = os.path.join(HERE, name + ".graph")
            out = os.path.join(tmp, name + ".onnx")
            m = export(binary, graph, out)
            check(node_ops(m) == EXPECTED_OPS[name], f"exported ops {node_ops(m)}")
            back = [COMES_BACK_AS.get(op, op) for op in ir_ops(binary, out)]
            check(back == ir_ops(binary, graph), f"re-imported ops {back}")
            inputs = os.path.join(tmp, name + ".in.safetensors")
            random_inputs(binary, graph, inputs)
            a, b = (os.path.join(tmp, f"{name}.{k}.safetensors") for k in "ab")
            fuserule_ok(binary, "run", graph, "--inputs", inputs, "-o", a)
            fuserule_ok(binary, "run", out, "--inputs", inputs, "-o", b)
            ra, rb = read_safetensors(a), read_safetensors(b)
            check(ra.keys() == rb.keys(), "different outputs")
            for k in ra:
                check(np.array_equal(ra[k], rb[k]), f"output '{k}' differs after the round trip")
        case.__name__ = f"export_{name}"
        return case

    def opset_default_and_asked():
        model = os.path.join(tmp, "models", "transformer.onnx")
        check(opset_of(export(binary, model, os.path.join(tmp, "t17.onnx"))) == 17,
              "the default opset is not 17")
        check(opset_of(export(binary, model, os.path.join(tmp, "t18.onnx"), "--opset", "18"))
              == 18, "--opset 18 was not written")
        out = os.path.join(tmp, "t13.onnx")
        status, _, err = run([binary, "export", model, "-o", out, "--opset", "13"])
        check(status == 2 and "LayerNormalization): needs opset 17, above the 13 asked for" in err,
              f"exit {status}: {err}")
        check(not os.path.exists(out), "a file was written")
        status, _, err = run([binary, "export", model, "-o", out, "--opset", "12"])
        check(status == 2 and "export writes opsets 13 to 21, not 12" in err,
              f"exit {status}: {err}")

    def reduce_axes_follow_opset():
        model = os.path.join(tmp, "models", "legacy11.onnx")
        m17 = export(binary, model, os.path.join(tmp, "l17.onnx"))
        m18 = export(binary, model, os.path.join(tmp, "l18.onnx"), "--opset", "18")
        mean17 = [n for n in m17.graph.node if n.op_type == "ReduceMean"][0]
        mean18 = [n for n in m18.graph.node if n.op_type == "ReduceMean"][0]
        check(len(mean17.input) == 1 and {a.name for a in mean17.attribute} == {"keepdims", "axes"},
              f"opset 17 ReduceMean: {mean17}")
        check(len(mean18.input) == 2 and "axes" not in {a.name for a in mean18.attribute},
              f"opset 18 ReduceMean: {mean18}")
        names17 = {i.name for i in m17.graph.initializer}
        check("rmean_axes" not in names17 and "rsum_axes" in names17,
              f"opset 17 initializers {sorted(names17)}")

    def reduce_noop_follows_opset():
        # noop_with_empty_axes came with the axes input (opset 18; ReduceSum 13): before it the
        # attribute goes when it says nothing (0, the default, as the dynamo exporter writes it on
        # every Reduce; 1 beside axes), and 1 with no axes (an Identity) needs the newer opset
        graph = os.path.join(tmp, "reduce_noop.graph")
        with open(graph, "w") as f:
            f.write("graph reduce_noop {\n"
                    "  input  x : f32[1,8,4,4]\n"
                    "  const  hw : i64[2] = [-2,-1]\n"
                    "  m = ReduceMean(x, hw) {keepdims=1, noop_with_empty_axes=0}\n"
                    "  s = ReduceSum(x, hw) {keepdims=0, noop_with_empty_axes=1}\n"
                    "  output m\n"
                    "  output s\n"
                    "}\n")
        m = export(binary, graph, os.path.join(tmp, "reduce_noop.onnx"))
        check(opset_of(m) == 17, f"opset {opset_of(m)}")
        for n in m.graph.node:
            check(n.op_type != "ReduceMean" or
                  {a.name for a in n.attribute} == {"keepdims", "axes"}, f"ReduceMean: {n}")
        with open(graph, "w") as f:
            f.write("graph reduce_identity {\n"
                    "  input  x : f32[1,8,4,4]\n"
                    "  m = ReduceMax(x) {keepdims=1, noop_with_empty_axes=1}\n"
                    "  output m\n"
                    "}\n")
        check(opset_of(export(binary, graph, os.path.join(tmp, "reduce_id.onnx"))) == 18,
              "ReduceMax with noop_with_empty_axes=1 and no axes not written at opset 18")
        out = os.path.join(tmp, "reduce_id17.onnx")
        status, _, err = run([binary, "export", graph, "-o", out, "--opset", "17"])
        check(status == 2 and "ReduceMax): needs opset 18, above the 17 asked for" in err and
              not os.path.exists(out), f"exit {status}: {err}")

    def gelu_opsets():
        model = os.path.join(tmp, "models", "gelu20.onnx")
        m = export(binary, model, os.path.join(tmp, "g17.onnx"))
        check(node_ops(m) == ["com.microsoft.Gelu", "com.microsoft.FastGelu"], str(node_ops(m)))
        m = export(binary, model, os.path.join(tmp, "g21.onnx"), "--opset", "21")
        check(node_ops(m) == ["Gelu", "Gelu"] and opset_of(m) == 21 and m.ir_version == 10,
              f"{node_ops(m)} opset {opset_of(m)} ir {m.ir_version}")
        half = os.path.join(tmp, "half.graph")
        with open(half, "w") as f:
            f.write("graph half {\n  input x : f16[4]\n  y = Gelu(x)\n  output y\n}\n")
        m = export(binary, half, os.path.join(tmp, "half.onnx"))
        check(node_ops(m) == ["Gelu"] and opset_of(m) == 20, f"f16 Gelu: opset {opset_of(m)}")

    def attribute_forms_become_inputs():
        graph = os.path.join(tmp, "attrs.graph")
        with open(graph, "w") as f:
            f.write("graph attrs {\n  input x : f32[2,1,3]\n"
                    "  c = Clip(x) {min=-0.5, max=0.5}\n"
                    "  s = Squeeze(c) {axes=[1]}\n"
                    "  u = Unsqueeze(s) {axes=[0]}\n"
                    "  r = ReduceSum(u) {axes=[2], keepdims=0}\n"
                    "  a, b = Split(x) {axis=2, split=[1,2]}\n"
                    "  d = Dropout(x) {ratio=0.1}\n"
                    "  output r\n  output a\n  output b\n  output d\n}\n")
        out = os.path.join(tmp, "attrs.onnx")
        m = export(binary, graph, out)
        for n in m.graph.node:
            check(not n.attribute or n.op_type in ("ReduceSum", "Split"),
                  f"{n.op_type} kept attributes {[a.name for a in n.attribute]}")
        check([len(n.input) for n in m.graph.node] == [3, 2, 2, 2, 2, 2],
              f"inputs {[list(n.input) for n in m.graph.node]}")
        inputs = os.path.join(tmp, "attrs.in.safetensors")
        write_safetensors(inputs, {"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 1, 3)})
        a, b = os.path.join(tmp, "attrs.a.safetensors"), os.path.join(tmp, "attrs.b.safetensors")
        fuserule_ok(binary, "run", graph, "--inputs", inputs, "-o", a)
        fuserule_ok(binary, "run", out, "--inputs", inputs, "-o", b)
        ra, rb = read_safetensors(a), read_safetensors(b)
        for k in ra:
            check(np.array_equal(ra[k], rb[k]), f"output '{k}' differs")

    def layouts_survive():
        graph = os.path.join(tmp, "layout.graph")
        with open(graph, "w") as f:
            f.write("graph layout {\n  input x : f32[N,3,4,4] NCHW\n  input y : f32[2,4,4,3] NHWC\n"
                    "  a = Relu(x)\n  b = Relu(y)\n  output a\n  output b\n}\n")
        out = os.path.join(tmp, "layout.onnx")
        export(binary, graph, out)
        text = fuserule_ok(binary, "fmt", out)
        check("f32[N,3,4,4] NCHW" in text and "f32[2,4,4,3] NHWC" in text, text)

    def failures_write_nothing():
        out = os.path.join(tmp, "none.onnx")
        status, _, err = run([binary, "export", os.path.join(tmp, "missing.graph"), "-o", out])
        check(status == 2 and not os.path.exists(out), f"exit {status}: {err}")
        status, _, err = run([binary, "export", os.path.join(HERE, "fused_cnn.graph"), "-o",
                              os.path.join(tmp, "no", "such", "dir.onnx")])
        check(status == 2 and "cannot write" in err, f"exit {status}: {err}")

    return [fused_case(n) for n in EXPECTED_OPS] + [
        opset_default_and_asked, reduce_axes_follow_opset, reduce_noop_follows_opset, gelu_opsets,
        attribute_forms_become_inputs, layouts_survive, failures_write_nothing]


if __name__ == "__main__":
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(testlib.main(make_cases(binary, tmp), ()))
