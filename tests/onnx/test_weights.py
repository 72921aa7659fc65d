#!/usr/bin/python3
"""Weights never copied (docs/onnx.md, "Weights"): import leaves every raw_data of 4 KiB or more in
the mapped .onnx file, and a weight no rule changes is written to the output from there.

    test_weights.py FUSERULE

Each case builds its model here and checks the bytes that come out: through the text form
(`import` writes the weights to a .safetensors file), through ONNX (`export` and `apply` write
them as initializers), next to the weights a rule folds. Files made by hand exercise the marker
the decoder puts where it left a tensor's bytes: a tensor of the file that has a field of the
marker's number, a tensor with two raw_data fields (the last wins, as protobuf says).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import testlib  # noqa: E402
from testlib import check, field, fuserule_ok, varint  # noqa: E402

onnx = testlib.need_onnx()
import numpy as np  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
LAZY_TAG = 0x1FFFFFF0  # the field number the skeleton decoder once used as its marker


def weights(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def matmul_model(w, b=None, extra_tensor_bytes=b""):
    """y = x @ w (+ b): w a large initializer (left in the file), b a small one (decoded)."""
    nodes = [h.make_node("MatMul", ["x", "w"], ["m"])]
    inits = [numpy_helper.from_array(w, "w")]
    out = "m"
    if b is not None:
        nodes.append(h.make_node("Add", ["m", "b"], ["y"]))
        inits.append(numpy_helper.from_array(b, "b"))
        out = "y"
    g = h.make_graph(nodes, "weights", [h.make_tensor_value_info("x", T.FLOAT, [2, w.shape[0]])],
                     [h.make_tensor_value_info(out, T.FLOAT, [2, w.shape[1]])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    if extra_tensor_bytes:  # appended to w's TensorProto on the wire
        m.graph.initializer[0].MergeFromString(extra_tensor_bytes)
    return m


def initializers(path):
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def write(tmp, name, model):
    path = os.path.join(tmp, name + ".onnx")
    data = model if isinstance(model, bytes) else model.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_import_writes_mapped_weights(binary):
    """import: a weight left in the .onnx reaches the .safetensors bytes unchanged."""
    with tempfile.TemporaryDirectory() as tmp:
        w, b = weights(1, 64, 48), weights(2, 48)
        src = write(tmp, "m", matmul_model(w, b))
        fuserule_ok(binary, "import", src, "-o", os.path.join(tmp, "out.graph"))
        st = testlib.read_safetensors(os.path.join(tmp, "out.safetensors"))
        check(np.array_equal(st["w"], w), "w differs after import")
        check(np.array_equal(st["b"], b), "b differs after import")


def test_onnx_passthrough(binary):
    """export .onnx -> .onnx: every initializer's bytes come out as they went in."""
    with tempfile.TemporaryDirectory() as tmp:
        w, b = weights(3, 96, 80), weights(4, 80)
        src = write(tmp, "m", matmul_model(w, b))
        out = os.path.join(tmp, "out.onnx")
        fuserule_ok(binary, "export", src, "-o", out)
        got = initializers(out)
        check(np.array_equal(got["w"], w) and np.array_equal(got["b"], b),
              "initializers differ after export")
        onnx.checker.check_model(onnx.load(out))
        # w is copied from the input file by the kernel into a file; a pipe gets it written
        piped = subprocess.run([binary, "export", src, "-o", "-", "--format", "onnx"],
                               capture_output=True, timeout=600)
        with open(out, "rb") as f:
            check(piped.returncode == 0 and piped.stdout == f.read(),
                  "the model written to a pipe differs from the one written to a file")


def test_apply_keeps_and_folds(binary):
    """apply .onnx -> .onnx: weights a rule folds are computed, the others copied from the file."""
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(5)
        cw = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
        gamma, beta = rng.uniform(0.5, 1.5, 32).astype(np.float32), weights(6, 32)
        mean, var = weights(7, 32), rng.uniform(0.5, 1.5, 32).astype(np.float32)
        fw = weights(8, 32 * 8 * 8, 10)  # stays as it is: no rule changes it
        nodes = [h.make_node("Conv", ["x", "cw"], ["c"], kernel_shape=[3, 3], pads=[1] * 4),
                 h.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
                 h.make_node("Flatten", ["n"], ["f"]),
                 h.make_node("MatMul", ["f", "fw"], ["y"])]
        inits = [numpy_helper.from_array(a, k) for k, a in
                 (("cw", cw), ("g", gamma), ("be", beta), ("mu", mean), ("var", var), ("fw", fw))]
        g = h.make_graph(nodes, "cnn", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 8, 8])],
                         [h.make_tensor_value_info("y", T.FLOAT, [1, 10])], inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        src = write(tmp, "cnn", m)
        out = os.path.join(tmp, "out.onnx")
        rules = [os.path.join(ROOT, "rules", f) for f in sorted(os.listdir(
            os.path.join(ROOT, "rules"))) if f.endswith(".rules")]
        fuserule_ok(binary, "apply", "-r", *rules, src, "-o", out)
        got = initializers(out)
        check(np.array_equal(got["fw"], fw), "the weight no rule changed differs")
        check("cw" not in got and "g" not in got, "the batch norm was not folded")
        scale = gamma / np.sqrt(var + 1e-5)
        folded = [a for k, a in got.items() if a.shape == cw.shape]
        check(len(folded) == 1, f"expected one folded conv weight, got {list(got)}")
        testlib.assert_close("folded conv weight", folded[0], cw * scale[:, None, None, None],
                             1e-5, 1e-6)
        # and the fused model computes what the model did
        fuserule_ok(binary, "verify", "-r", *rules, src)


def test_file_field_of_marker_number(binary):
    """A tensor of the file with a field numbered as the decoder's marker: the field is ignored
    (unknown to ONNX), the tensor's own bytes are read."""
    with tempfile.TemporaryDirectory() as tmp:
        w = weights(10, 64, 32)
        for wire in (varint(LAZY_TAG << 3 | 1) + (3).to_bytes(8, "little"),
                     varint(LAZY_TAG << 3 | 0) + varint(7),
                     varint(LAZY_TAG << 3 | 2) + varint(4) + b"abcd"):
            src = write(tmp, "m", matmul_model(w, extra_tensor_bytes=wire))
            fuserule_ok(binary, "import", src, "-o", os.path.join(tmp, "out.graph"))
            st = testlib.read_safetensors(os.path.join(tmp, "out.safetensors"))
            check(np.array_equal(st["w"], w), "w differs with a field of the marker's number")


def test_two_raw_data_fields(binary):
    """Two raw_data fields in one tensor: protobuf keeps the last, and so does import."""
    with tempfile.TemporaryDirectory() as tmp:
        w, junk = weights(11, 64, 32), weights(12, 64, 32)
        raw = junk.tobytes()
        later = field(9, w.tobytes())
        m = matmul_model(junk)
        m.graph.initializer[0].raw_data = raw
        data = m.SerializeToString()
        # the same model with a second raw_data appended to w's TensorProto: rebuild the message
        t = m.graph.initializer[0].SerializeToString() + later
        m.graph.ClearField("initializer")
        g = m.graph.SerializeToString() + field(5, t)
        m.ClearField("graph")
        data = m.SerializeToString() + field(7, g)
        src = write(tmp, "m", data)
        fuserule_ok(binary, "import", src, "-o", os.path.join(tmp, "out.graph"))
        st = testlib.read_safetensors(os.path.join(tmp, "out.safetensors"))
        check(np.array_equal(st["w"], w), "the last raw_data did not win")


def test_constant_node_left_in_file(binary):
    """A large Constant node's tensor is left in the file as initializers are."""
    with tempfile.TemporaryDirectory() as tmp:
        w = weights(13, 40, 30)
        nodes = [h.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "w")),
                 h.make_node("MatMul", ["x", "w"], ["y"])]
        g = h.make_graph(nodes, "c", [h.make_tensor_value_info("x", T.FLOAT, [2, 40])],
                         [h.make_tensor_value_info("y", T.FLOAT, [2, 30])])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        src = write(tmp, "m", m)
        out = os.path.join(tmp, "out.onnx")
        fuserule_ok(binary, "export", src, "-o", out)
        check(np.array_equal(initializers(out)["w"], w), "the Constant's tensor differs")


def test_external_data_mapped(binary):
    """External data at an offset that is not a page's: the mapped bytes are the tensor's."""
    with tempfile.TemporaryDirectory() as tmp:
        w, v = weights(14, 64, 48), weights(15, 48, 16)
        with open(os.path.join(tmp, "w.bin"), "wb") as f:
            f.write(b"\7" * 1000 + w.tobytes() + b"\7" * 3 + v.tobytes())
        m = matmul_model(w)
        m.graph.node.append(h.make_node("MatMul", ["m", "v"], ["y"]))
        m.graph.ClearField("output")
        m.graph.output.append(h.make_tensor_value_info("y", T.FLOAT, [2, 16]))
        m.graph.ClearField("initializer")
        for name, a, offset in (("w", w, 1000), ("v", v, 1003 + w.nbytes)):
            t = numpy_helper.from_array(a, name)
            t.ClearField("raw_data")
            t.data_location = T.EXTERNAL
            for k, val in (("location", "w.bin"), ("offset", str(offset)),
                           ("length", str(a.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, val
            m.graph.initializer.append(t)
        src = write(tmp, "m", m)
        fuserule_ok(binary, "import", src, "-o", os.path.join(tmp, "out.graph"))
        st = testlib.read_safetensors(os.path.join(tmp, "out.safetensors"))
        check(np.array_equal(st["w"], w) and np.array_equal(st["v"], v),
              "external data differs after import")
        out = os.path.join(tmp, "out.onnx")
        fuserule_ok(binary, "export", src, "-o", out)
        got = initializers(out)
        check(np.array_equal(got["w"], w) and np.array_equal(got["v"], v),
              "external data differs after export")


def projections_model(ws, bs=None):
    """Parallel projections of one input x: y_k = x @ w_k (+ b_k), each an output."""
    nodes, inits, outs = [], [], []
    for k, w in enumerate(ws):
        nodes.append(h.make_node("MatMul", ["x", f"w{k}"], [f"m{k}"]))
        inits.append(numpy_helper.from_array(w, f"w{k}"))
        out = f"m{k}"
        if bs is not None:
            nodes.append(h.make_node("Add", [f"m{k}", f"b{k}"], [f"y{k}"]))
            inits.append(numpy_helper.from_array(bs[k], f"b{k}"))
            out = f"y{k}"
        outs.append(h.make_tensor_value_info(out, T.FLOAT, [2, w.shape[1]]))
    g = h.make_graph(nodes, "proj", [h.make_tensor_value_info("x", T.FLOAT, [2, ws[0].shape[0]])],
                     outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_apply_concatenates(binary):
    """apply .onnx -> .onnx: concatenated weights are written from the parts' rows where they lie
    (rows of 64 KiB or more copied part by part, narrower ones put together a batch at a time);
    the same bytes to a regular file, through a pipe (no kernel copy) and to the text form."""
    rules = [os.path.join(ROOT, "rules", f) for f in sorted(os.listdir(
        os.path.join(ROOT, "rules"))) if f.endswith(".rules")]
    cases = [  # Q/K/V of grouped-query attention (narrow K, V), with biases
        ([weights(20, 24, 16384), weights(21, 24, 512), weights(22, 24, 512)],
         [weights(23, 16384), weights(24, 512), weights(25, 512)]),
        # gate/up: both wide, no bias
        ([weights(26, 6, 20000), weights(27, 6, 20000)], None),
        # small: one part under the 4 KiB that import leaves in the file
        ([weights(28, 40, 24), weights(29, 40, 8), weights(30, 40, 8)], None),
    ]
    for ws, bs in cases:
        with tempfile.TemporaryDirectory() as tmp:
            src = write(tmp, "proj", projections_model(ws, bs))
            out = os.path.join(tmp, "out.onnx")
            fuserule_ok(binary, "apply", "-r", *rules, src, "-o", out)
            got = initializers(out)
            want = np.concatenate(ws, axis=1)
            cat = [a for a in got.values() if a.shape == want.shape]
            check(len(cat) == 1 and np.array_equal(cat[0], want),
                  f"concatenated weights differ ({[a.shape for a in got.values()]})")
            if bs is not None:
                bcat = [a for a in got.values() if a.shape == (want.shape[1],)]
                check(len(bcat) == 1 and np.array_equal(bcat[0], np.concatenate(bs)),
                      "concatenated biases differ")
            with open(out, "rb") as f:
                written = f.read()
            piped = subprocess.run([binary, "apply", "-r", *rules, src, "-o", "-", "--format",
                                    "onnx"], capture_output=True, timeout=600)
            check(piped.returncode == 0 and piped.stdout == written,
                  "the model written to a pipe differs from the one written to a file")
            fuserule_ok(binary, "apply", "-r", *rules, src, "-o", os.path.join(tmp, "t.graph"))
            fuserule_ok(binary, "export", os.path.join(tmp, "t.graph"), "-o",
                        os.path.join(tmp, "t.onnx"))
            with open(os.path.join(tmp, "t.onnx"), "rb") as f:
                check(f.read() == written, "the text form's export differs from apply's output")


def test_apply_links_weights(binary):
    """apply --link-weights: a weight no rule changed becomes external data naming the input
    .onnx (offset and length of its bytes there), and the model reads the same values; an output
    whose folder does not hold the input, or a stream, is refused before anything is written."""
    rules = [os.path.join(ROOT, "rules", f) for f in sorted(os.listdir(
        os.path.join(ROOT, "rules"))) if f.endswith(".rules")]
    with tempfile.TemporaryDirectory() as tmp:
        # w read by canonicalization (a candidate for merging), v not (too large to be one)
        w, b, v = weights(31, 64, 48), weights(32, 48), weights(33, 48, 1400)
        m = matmul_model(w, b)  # y = x @ w + b: fused as a GEMM, w and b unchanged
        m.graph.node.append(h.make_node("MatMul", ["y", "v"], ["z"]))
        m.graph.initializer.append(numpy_helper.from_array(v, "v"))
        m.graph.ClearField("output")
        m.graph.output.append(h.make_tensor_value_info("z", T.FLOAT, [2, 1400]))
        os.mkdir(os.path.join(tmp, "in"))
        src = write(os.path.join(tmp, "in"), "m", m)
        plain, linked = os.path.join(tmp, "plain.onnx"), os.path.join(tmp, "linked.onnx")
        fuserule_ok(binary, "apply", "-r", *rules, src, "-o", plain)
        fuserule_ok(binary, "apply", "-r", *rules, src, "-o", linked, "--link-weights")
        raw = onnx.load(linked, load_external_data=False)
        ext = {t.name: {e.key: e.value for e in t.external_data} for t in raw.graph.initializer
               if t.data_location == T.EXTERNAL}
        check(set(ext) == {"w", "v"}, f"expected w and v linked, got {sorted(ext)}")
        with open(src, "rb") as f:
            data = f.read()
        for name, a in (("w", w), ("v", v)):
            e = ext.get(name, {})
            check(e.get("location") == "in/m.onnx", f"{name}: location {e.get('location')}")
            at = int(e.get("offset", -1))
            check(data[at:at + int(e.get("length", 0))] == a.tobytes(),
                  f"{name}: offset and length do not name its bytes")
        got, want = initializers(linked), initializers(plain)
        check(got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want),
              "the linked model's initializers differ from the plain output's")
        check(os.path.getsize(linked) < os.path.getsize(plain) - w.nbytes, "nothing was linked")
        fuserule_ok(binary, "import", linked, "-o", os.path.join(tmp, "back.graph"))
        st = testlib.read_safetensors(os.path.join(tmp, "back.safetensors"))
        check(np.array_equal(st["w"], w), "import of the linked model reads other bytes")
        # the output's folder must hold the input; a stream has no folder
        other = os.path.join(tmp, "in", "deeper")
        os.mkdir(other)
        status, _, err = testlib.run([binary, "apply", "-r", *rules, src, "-o",
                                      os.path.join(other, "o.onnx"), "--link-weights"])
        check(status == 2 and err.count("must be in the output's folder") == 1,
              f"{status}: {err} (the refusal once, not once per linked weight)")
        check(not os.listdir(other), "a refused output left a file")
        status, out, err = testlib.run([binary, "apply", "-r", *rules, src, "-o", "-",
                                        "--format", "onnx", "--link-weights"])
        check(status == 2 and "not a stream" in err and not out, f"{status}: {err}")


if __name__ == "__main__":
    sys.exit(testlib.main([test_import_writes_mapped_weights, test_onnx_passthrough,
                           test_apply_keeps_and_folds, test_file_field_of_marker_number,
                           test_two_raw_data_fields, test_constant_node_left_in_file,
                           test_external_data_mapped, test_apply_concatenates,
                           test_apply_links_weights],
                          [os.path.abspath(sys.argv[1])]))
