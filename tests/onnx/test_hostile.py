#!/usr/bin/python3
"""Hostile and broken ONNX files: each is refused by `fuserule import` with exit status 2, a clear
message naming the problem, nothing written, and bounded memory (the child's peak RSS is measured).

    test_hostile.py FUSERULE

The files are made here at test time: with onnx.helper where ONNX can express the lie, by hand
(protobuf wire bytes) where it cannot.
"""
import os
import random
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import testlib  # noqa: E402
from testlib import check, field, varint  # noqa: E402

onnx = testlib.need_onnx()
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

# Peak resident memory a refused import may reach (sanitizer builds included).
MAX_RSS_MB = 400

# ---- protobuf wire bytes ---------------------------------------------------------------------


# ModelProto.graph = 7, GraphProto.node = 1, NodeProto.attribute = 5, AttributeProto.g = 6,
# ModelProto.opset_import = 8 (OperatorSetIdProto.version = 2)
OPSET17 = field(8, varint(2 << 3) + varint(17))


def deep_graph_model(levels):
    """A graph in an attribute of a node of a graph in an attribute ... `levels` deep. Each
    message holds only the next one, so the file is all field headers: their lengths are summed
    from the innermost (empty) graph outwards, then the headers are written outermost first."""
    tags = [7] + [1, 5, 6] * levels  # ModelProto.graph, then GraphProto.node > attribute > g
    headers, size = [], 0
    for tag in reversed(tags):
        header = varint(tag << 3 | 2) + varint(size)
        headers.append(header)
        size += len(header)
    return b"".join(reversed(headers)) + OPSET17


def many_nodes_model(count):
    """A graph of `count` empty nodes: two bytes each on the wire, a struct each in memory."""
    return field(7, b"\x0a\x00" * count) + OPSET17


# ---- models with one lie each ----------------------------------------------------------------


def relu_model(inputs=None, inits=(), opset=17, node_inputs=("x",), extra_nodes=()):
    x = inputs or [h.make_tensor_value_info("x", T.FLOAT, [2, 3])]
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    nodes = [h.make_node("Relu", list(node_inputs), ["y"])] + list(extra_nodes)
    g = h.make_graph(nodes, "hostile", x, [y], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def with_initializer(tensor):
    return relu_model(inputs=[], inits=[tensor], node_inputs=(tensor.name,))


def raw_tensor(name, dtype, dims, raw):
    t = T()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def external_tensor(name, dims, location, offset=None, length=None):
    t = T()
    t.name, t.data_type = name, T.FLOAT
    t.dims.extend(dims)
    t.data_location = T.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def cases(tmp):
    """(name, file bytes, expected message fragment); files that need neighbours make them."""
    valid = relu_model()
    outside = os.path.join(tmp, "outside.bin")
    with open(outside, "wb") as f:
        f.write(b"\0" * 64)
    ext_dir = os.path.join(tmp, "models")
    os.makedirs(ext_dir, exist_ok=True)
    with open(os.path.join(ext_dir, "w.bin"), "wb") as f:
        f.write(b"\0" * 24)
    link = os.path.join(ext_dir, "link.bin")
    if not os.path.lexists(link):
        os.symlink(outside, link)
    deep_type = h.make_tensor_type_proto(T.FLOAT, [1])
    for _ in range(200):
        deep_type = h.make_sequence_type_proto(deep_type)
    nul_attr = h.make_node("Gelu", ["x"], ["z"], approximate="no\0ne")

    yield "empty", b"", "empty file"
    yield "truncated", valid[: len(valid) // 2], "truncated or corrupt protobuf"
    yield "truncated-1", valid[:-1], "truncated or corrupt protobuf"
    yield "random-bytes", random.Random(7).randbytes(4096), "error:"
    yield "group-wire-type", b"\x0b\x0c", "unknown wire type"
    yield "deep-nesting", deep_graph_model(100000), "nested more than 64 levels deep"
    yield "deep-type-nesting", relu_model(
        inputs=[h.make_value_info("x", deep_type)]), "nested more than 64 levels deep"
    yield "decode-budget", many_nodes_model(1_000_000), "decoding needs more than"
    yield "no-graph", OPSET17, "the model has no graph"
    yield "overflowing-input-dims", relu_model(
        inputs=[h.make_tensor_value_info("x", T.FLOAT, [1 << 40, 1 << 40])]), \
        "graph input 'x': its dims hold more than 1099511627776 elements"
    yield "overflowing-initializer-dims", with_initializer(
        raw_tensor("w", T.FLOAT, [1 << 62, 4], b"")), \
        "initializer 'w' declares dims [4611686018427387904,4]"
    yield "negative-dim", with_initializer(raw_tensor("w", T.FLOAT, [-1], b"")), \
        "initializer 'w' has a negative dim -1"
    yield "raw-data-size", with_initializer(raw_tensor("w", T.FLOAT, [10], b"\0" * 12)), \
        "initializer 'w': raw_data holds 12 bytes but its dims need 40"
    huge = raw_tensor("w", T.FLOAT, [1_000_000_000], b"")
    huge.ClearField("raw_data")
    huge.float_data.append(1.0)
    yield "huge-declared-dims", with_initializer(huge), \
        "initializer 'w' holds 1 values in float_data but its dims declare 1000000000"
    yield "rank-9", with_initializer(raw_tensor("w", T.FLOAT, [1] * 9, b"\0" * 4)), \
        "initializer 'w' has rank 9; the IR holds ranks up to 8"
    yield "external-dotdot", with_initializer(external_tensor("w", [2, 3], "../outside.bin")), \
        "external data location '../outside.bin' leaves the model's folder"
    yield "external-absolute", with_initializer(external_tensor("w", [2, 3], outside)), \
        "must be a path relative to the model's folder"
    yield "external-symlink", with_initializer(external_tensor("w", [2, 3], "link.bin")), \
        "external data 'link.bin' resolves outside the model's folder"
    yield "external-offset", with_initializer(external_tensor("w", [2, 3], "w.bin", 100)), \
        "external data 'w.bin' has 24 bytes, fewer than offset 100"
    yield "external-length", with_initializer(external_tensor("w", [2, 3], "w.bin", 0, 20)), \
        "external data holds 20 bytes but its dims need 24"
    yield "external-missing", with_initializer(external_tensor("w", [2, 3], "nope.bin")), \
        "cannot open external data 'nope.bin'"
    yield "undefined-value", relu_model(node_inputs=("nope",)), \
        "node 'y' (Relu) reads 'nope', which nothing defines"
    yield "defined-twice", relu_model(extra_nodes=[h.make_node("Relu", ["x"], ["y"])]), \
        "node 'y' (Relu) defines 'y', which is already defined"
    yield "opset-24", relu_model(opset=24), "opset 24 is newer than import reads (up to 23)"
    yield "nul-in-attribute", relu_model(extra_nodes=[nul_attr], opset=20), \
        "attribute 'approximate' holds a NUL byte"
    mismatch = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"])], "bad",
                            [h.make_tensor_value_info("x", T.FLOAT, [2, 3]),
                             h.make_tensor_value_info("w", T.FLOAT, [4, 5])],
                            [h.make_tensor_value_info("y", T.FLOAT, None)])
    yield "shape-mismatch", h.make_model(mismatch, opset_imports=[h.make_opsetid("", 17)]) \
        .SerializeToString(), "node y: MatMul:"
    named = relu_model(inputs=[h.make_tensor_value_info("x\u00e9", T.FLOAT, [2])],
                       node_inputs=("x\u00e9",))
    yield "nul-in-name", named.replace("x\u00e9".encode(), b"x\0\0"), \
        "NodeProto.input at byte 6 is not UTF-8 or holds a NUL byte"
    yield "invalid-utf8-name", named.replace("x\u00e9".encode(), b"x\xff\xfe"), \
        "NodeProto.input at byte 6 is not UTF-8 or holds a NUL byte"
    yield "not-onnx", b"graph g { input x : f32[1] }\n", "error:"
    # a value's out_index is 16 bits: a node has at most 65535 outputs
    split = h.make_node("Split", ["x"], [f"s{i}" for i in range(65536)], axis=0)
    yield "too-many-outputs", relu_model(
        inputs=[h.make_tensor_value_info("x", T.FLOAT, [65536])], extra_nodes=[split]), \
        "has 65536 outputs; a node has at most 65535"
    # the same lies where raw_data is large enough (4 KiB) to be left in the mapped file
    big = with_initializer(raw_tensor("w", T.FLOAT, [1024], b"\x01" * 4096))
    yield "mapped-truncated", big[: len(big) // 2], "truncated or corrupt protobuf"
    yield "mapped-truncated-1", big[:-1], "truncated or corrupt protobuf"
    yield "mapped-raw-data-size", with_initializer(
        raw_tensor("w", T.FLOAT, [1000], b"\0" * 4096)), \
        "initializer 'w': raw_data holds 4096 bytes but its dims need 4000"
    both = raw_tensor("w", T.FLOAT, [1024], b"\0" * 4096)
    both.float_data.append(1.0)
    yield "mapped-raw-and-typed", with_initializer(both), \
        "initializer 'w' has both raw_data and typed data"
    at = big.index(b"\x01" * 4096)  # raw_data's length says more than the file holds
    yield "mapped-length-past-end", big[: at - 2] + varint(1 << 30) + big[at:], \
        "truncated or corrupt protobuf"


def run_import(binary, model, out):
    """Runs the import; returns (status, stderr, peak RSS in MB)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([binary, "import", model, "-o", out], stdout=subprocess.DEVNULL,
                                stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, err.read().decode("utf-8", "replace"), usage.ru_maxrss / 1024


def main():
    binary = os.path.abspath(sys.argv[1])
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        total = 0
        for name, data, expected in cases(tmp):
            total += 1
            model = os.path.join(tmp, "models", name + ".onnx")
            with open(model, "wb") as f:
                f.write(data)
            out = os.path.join(tmp, name + ".graph")
            status, err, rss = run_import(binary, model, out)
            try:
                check(status == 2, f"exit status {status}, expected 2\n{err}")
                check(expected in err, f"stderr lacks '{expected}':\n{err}")
                check(err.startswith(model + ": error: "), f"not a located error:\n{err}")
                check(not os.path.exists(out) and
                      not os.path.exists(os.path.join(tmp, name + ".safetensors")),
                      "something was written")
                check(rss < MAX_RSS_MB, f"peak RSS {rss:.0f} MB, over {MAX_RSS_MB} MB")
                print(f"PASS {name} ({rss:.0f} MB): {err.strip().splitlines()[0]}")
            except testlib.Failure as e:
                failed += 1
                print(f"FAIL {name}: {e}")
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    # a safety net below the measurement: no refused file may need gigabytes
    if not os.environ.get("FUSERULE_SANITIZE"):
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    sys.exit(main())
