#!/usr/bin/python3
"""Runs ONNX's backend node tests (Debian's libonnx-testdata) against the CPU kernels directly.

    onnx_node_tests.py DRIVER FIXTURE_FILE [TESTDATA_DIR]

For every test_*/ folder whose model is one node of an op in ir/ops.def, this writes the node's
attributes, inputs and expected outputs into FIXTURE_FILE, in the line format that DRIVER
(onnx_node_driver.c) reads, then runs DRIVER on it; DRIVER's exit status is the result. Each
kernel is checked against ONNX's own expected outputs, before import and the executor exist.

What a kernel sees is what the executor will hand it: f16/bf16 tensors as f32 (expected outputs
are compared after rounding the kernel's f32 result to the storage type); attributes that ONNX
import turns into the catalog's form are converted the same way (ConstantOfShape's tensor `value`
becomes the float `value` plus `dtype`). Tests whose dtypes the catalog lacks (double, string,
16-bit integers, ...) or whose op semantics changed before the catalog's opset are skipped with
the reason. Exit 77 (skipped) when the `onnx` module or the test data is missing.
"""
import glob
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("skipped: the python3 `onnx` module is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
OPS_DEF = os.path.join(HERE, "..", "..", "ir", "ops.def")
TESTDATA = "/usr/share/libonnx-testdata/data/node"

# TensorProto data type -> the fixture's dtype name (the catalog's).
DTYPES = {1: "f32", 2: "u8", 3: "i8", 6: "i32", 7: "i64", 9: "bool", 10: "f16", 16: "bf16"}


class Skip(Exception):
    pass


def catalog_ops():
    with open(OPS_DEF) as f:
        return {l.split("(")[1].split(",")[0] for l in f if l.startswith("IR_OP(")}


def fmt_float(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%.9g" % v


def tensor_line(kind, index, arr, elem_type):
    dt = DTYPES.get(elem_type)
    if dt is None:
        raise Skip("dtype %s is outside the catalog" % onnx.TensorProto.DataType.Name(elem_type))
    if dt == "bf16" and arr.dtype == np.uint16:  # onnx's numpy_helper returns the raw bits
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    flat = arr.reshape(-1)
    if dt in ("f32", "f16", "bf16"):
        vals = [fmt_float(float(v)) for v in flat.astype(np.float32)]
    else:
        vals = [str(int(v)) for v in flat]
    dims = " ".join(str(d) for d in arr.shape)
    return "%s %d %s %d %s %s" % (kind, index, dt, arr.ndim, dims, " ".join(vals))


def attr_lines(node, opset):
    lines = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.INT:
            lines.append("attr %s i %d" % (a.name, a.i))
        elif a.type == onnx.AttributeProto.FLOAT:
            lines.append("attr %s f %s" % (a.name, fmt_float(a.f)))
        elif a.type == onnx.AttributeProto.STRING:
            s = a.s.decode()
            if not s or any(c.isspace() for c in s):
                raise Skip("string attribute with spaces")
            lines.append("attr %s s %s" % (a.name, s))
        elif a.type == onnx.AttributeProto.INTS:
            lines.append("attr %s is %d %s" % (a.name, len(a.ints), " ".join(map(str, a.ints))))
        elif a.type == onnx.AttributeProto.FLOATS:
            lines.append("attr %s fs %d %s" % (a.name, len(a.floats),
                                               " ".join(fmt_float(v) for v in a.floats)))
        elif a.type == onnx.AttributeProto.TENSOR:
            lines.extend(tensor_attr(node.op_type, a))
        else:
            raise Skip("attribute %s of kind %d" % (a.name, a.type))
    return lines


def tensor_attr(op, a):
    """Tensor attributes in the catalog's form (what ONNX import produces)."""
    t = numpy_helper.to_array(a.t)
    if op == "ConstantOfShape" and a.name == "value":
        if a.t.data_type not in DTYPES:
            raise Skip("ConstantOfShape of an outside dtype")
        return ["attr value f %s" % fmt_float(float(t.reshape(-1)[0])),
                "attr dtype i %d" % a.t.data_type]
    if op == "Constant" and a.name == "value":
        flat = t.reshape(-1)
        if t.dtype == np.float32:
            return ["attr value_floats fs %d %s" % (flat.size, " ".join(fmt_float(v) for v in flat))]
        if t.dtype == np.int64:
            return ["attr value_ints is %d %s" % (flat.size, " ".join(map(str, flat)))]
        raise Skip("Constant of dtype %s" % t.dtype)
    raise Skip("tensor attribute %s" % a.name)


def check_opset(op, opset, node):
    if op == "Softmax" and opset < 13:
        raise Skip("Softmax before opset 13 flattens at axis (ONNX import rewrites it)")


def fixture(test_dir, ops):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    if len(model.graph.node) != 1:
        return None
    node = model.graph.node[0]
    if node.op_type not in ops or node.domain not in ("", "ai.onnx"):
        return None
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] + [1])
    name = os.path.basename(test_dir)
    lines = ["test %s" % name, "op %s" % node.op_type]
    try:
        check_opset(node.op_type, opset, node)
        lines += attr_lines(node, opset)
        types = {v.name: v.type.tensor_type.elem_type
                 for v in list(model.graph.input) + list(model.graph.output)}
        for data_set in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
            lines += data_set_lines(node, types, data_set)
    except Skip as why:
        return "test %s\nop %s\nskip %s\n" % (name, node.op_type, why)
    return "\n".join(lines) + "\n"


def load(path):
    try:
        return numpy_helper.to_array(onnx.load_tensor(path))
    except Exception as e:  # sequences and optionals are stored as other protos
        raise Skip("%s is not a plain tensor (%s)" % (os.path.basename(path), type(e).__name__))


def data_set_lines(node, types, data_set):
    inputs = sorted(glob.glob(os.path.join(data_set, "input_*.pb")))
    outputs = sorted(glob.glob(os.path.join(data_set, "output_*.pb")))
    lines = []
    given = iter(inputs)
    for i, name in enumerate(node.input):
        if not name:
            lines.append("in %d none" % i)
            continue
        arr = load(next(given))
        lines.append(tensor_line("in", i, arr, types[name]))
    produced = iter(outputs)  # output_K.pb files are the outputs the node names, in order
    for i, name in enumerate(node.output):
        path = next(produced, None) if name else None
        if path is None:
            continue  # an omitted output keeps its index: the kernel sees it absent
        arr = load(path)
        lines.append(tensor_line("out", i, arr, types[name]))
    lines.append("run")
    return lines


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    driver, out_path = sys.argv[1], sys.argv[2]
    data = sys.argv[3] if len(sys.argv) > 3 else TESTDATA
    if not os.path.isdir(data):
        print("skipped: no ONNX test data at %s (Debian package libonnx-testdata)" % data)
        return 77
    ops = catalog_ops()
    with open(out_path, "w") as out:
        for test_dir in sorted(glob.glob(os.path.join(data, "test_*"))):
            text = fixture(test_dir, ops)
            if text:
                out.write(text)
    os.execv(driver, [driver, out_path])


if __name__ == "__main__":
    sys.exit(main())
