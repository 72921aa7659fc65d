#!/usr/bin/python3
"""com.microsoft ops that import as subgraphs of catalog ops compute what ONNX Runtime's kernels
compute (numpy writes the expected results from those kernels' formulas: the training ops and the
4-D Megatron mask have no kernel in ONNX Runtime's CPU package; test_ort_import.py runs
EmbedLayerNormalization and FusedMatMul in onnxruntime itself).

    test_subgraphs.py FUSERULE

- BiasDropout, BitmaskDropout, DropoutGrad, BitmaskDropoutGrad in inference and with their
  masks; training mode imports as a Dropout that stays (never a no-op) and runs with the seeded
  mask of docs/kernels.md ("Dropout in training mode"), written again here in numpy;
- FusedMatMul with transBatchA/B, transA/B and alpha (GemmEpilogue's flags), and with a 3-D B;
- EmbedLayerNormalization with and without segment, mask and position ids;
- com.microsoft Attention with Megatron's 4-D mask and a KV cache.
"""
import glob
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import testlib  # noqa: E402
from testlib import check, fuserule_ok, read_safetensors, run, write_safetensors  # noqa: E402

onnx = testlib.need_onnx()
import numpy as np  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

RNG = np.random.default_rng(31)
MS = [("com.microsoft", 1)]


def model(nodes, inputs, outputs, inits, opset=13):
    graph = h.make_graph(nodes, "subgraphs", inputs, outputs, inits)
    opsets = [h.make_opsetid("", opset)] + [h.make_opsetid(d, v) for d, v in MS]
    m = h.make_model(graph, opset_imports=opsets, producer_name="fuserule-tests")
    m.ir_version = 8
    return m


def vi(name, shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, shape)


def ms(op, ins, outs, **attrs):
    return h.make_node(op, ins, outs, domain="com.microsoft", **attrs)


def run_model(binary, d, name, m, feeds):
    path = os.path.join(d, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    ins, outs = os.path.join(d, name + ".in.st"), os.path.join(d, name + ".out.st")
    write_safetensors(ins, feeds)
    fuserule_ok(binary, "run", path, "--inputs", ins, "-o", outs)
    return path, read_safetensors(outs)


def same(name, got, want):
    check(got.dtype == want.dtype and got.shape == want.shape and
          np.array_equal(got, want, equal_nan=got.dtype.kind == "f"),
          f"{name}: {got.dtype}{list(got.shape)}\n{got}\n"
          f"want {want.dtype}{list(want.shape)}\n{want}")


def packed_ones(n):
    """ONNX Runtime's inference bitmask: every bit of ceil(n / 32) words set."""
    return np.full((n + 31) // 32, 0xFFFFFFFF, np.uint32)


def bits_of(words, n):
    return ((words.astype(np.uint64)[:, None] >> np.arange(32, dtype=np.uint64)) & 1) \
        .reshape(-1)[:n].astype(bool)


def dropout_inference(binary, tmp):
    d = testlib.tempdir_under(tmp, "dropout")
    m, n = 3, 11  # 33 elements: two words, the second with one element
    a = RNG.standard_normal((m, n)).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    c = RNG.standard_normal((m, n)).astype(np.float32)
    dy = RNG.standard_normal((m, n)).astype(np.float32)
    dy[0, 0] = np.inf  # a kept element: inf * 1 / (1 - r) stays inf
    words = RNG.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32)
    mask = RNG.integers(0, 2, size=(m, n)).astype(bool)
    inits = [nh.from_array(np.array(0.25, np.float32), "ratio"),
             nh.from_array(np.array(False), "off")]
    nodes = [ms("BiasDropout", ["a", "b", "c", "ratio", "off"], ["y1", "m1"]),
             ms("BiasDropout", ["a", "b"], ["y2"]),
             ms("BitmaskDropout", ["a", "ratio"], ["y3", "m3"]),
             ms("DropoutGrad", ["dy", "mask", "ratio", "off"], ["dx1"]),
             ms("DropoutGrad", ["dy", "mask"], ["dx2"]),
             ms("BitmaskDropoutGrad", ["dy", "words", "ratio", "off"], ["dx3"]),
             ms("BitmaskDropoutGrad", ["dy", "words", "ratio", "on"], ["dx4"])]
    inputs = [vi("a", [m, n]), vi("b", [n]), vi("c", [m, n]), vi("dy", [m, n]),
              vi("mask", [m, n], T.BOOL), vi("words", [2], T.UINT32), vi("on", [], T.BOOL)]
    outputs = [vi("y1", [m, n]), vi("m1", [m, n], T.BOOL), vi("y2", [m, n]), vi("y3", [m, n]),
               vi("m3", [2], T.UINT32), vi("dx1", [m, n]), vi("dx2", [m, n]), vi("dx3", [m, n]),
               vi("dx4", [m, n])]
    _, out = run_model(binary, d, "inference", model(nodes, inputs, outputs, inits),
                       {"a": a, "b": b, "c": c, "dy": dy, "mask": mask, "words": words,
                        "on": np.array(True)})
    same("BiasDropout with residual", out["y1"], (a + b) + c)
    same("BiasDropout's mask", out["m1"], np.ones((m, n), bool))
    same("BiasDropout", out["y2"], a + b)
    same("BitmaskDropout", out["y3"], a)
    same("BitmaskDropout's mask", out["m3"], packed_ones(m * n))
    keep = np.float32(1) - np.float32(0.25)
    same("DropoutGrad", out["dx1"], mask.astype(np.float32) * dy / keep)
    same("DropoutGrad without ratio (0.5)", out["dx2"], mask.astype(np.float32) * dy /
         np.float32(0.5))
    bits = bits_of(words, m * n).reshape(m, n).astype(np.float32)
    same("BitmaskDropoutGrad, inference", out["dx3"], dy * bits)
    scale = np.float32(1) / keep
    same("BitmaskDropoutGrad, training", out["dx4"], dy * bits * scale)


def dropout_training(binary, tmp):
    """training_mode true stays a Dropout: imported, not removed, run with the seeded mask."""
    d = testlib.tempdir_under(tmp, "dropout_training")
    inits = [nh.from_array(np.array(0.1, np.float32), "ratio"),
             nh.from_array(np.array(True), "training")]
    nodes = [ms("BitmaskDropout", ["a", "ratio", "training"], ["y", "mask"], seed=5),
             ms("BitmaskDropoutGrad", ["dy", "mask", "ratio", "training"], ["dx"])]
    m = model(nodes, [vi("a", ["M", "N"]), vi("dy", ["M", "N"])],
              [vi("y", ["M", "N"]), vi("dx", ["M", "N"])], inits)
    path = os.path.join(d, "training.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    text = fuserule_ok(binary, "canon", path)
    check("Dropout(a, ratio, training) {seed=5}" in text, f"training Dropout gone:\n{text}")
    rules = sorted(glob.glob(os.path.join(ROOT, "rules", "*.rules")))
    fused = os.path.join(d, "fused.graph")
    fuserule_ok(binary, "apply", "-r", *rules, path, "-o", fused)
    with open(fused) as f:
        text = f.read()
    check("Dropout(a, ratio, training) {seed=5}" in text and "Mul(" in text,
          f"the rules removed the training Dropout or its gradient's scale:\n{text}")
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    ins = os.path.join(d, "in.st")
    write_safetensors(ins, {"a": a, "dy": a})
    fuserule_ok(binary, "run", path, "--inputs", ins, "-o", os.path.join(d, "o.st"))
    out = read_safetensors(os.path.join(d, "o.st"))
    keep = dropout_keep(5, 0.1, a.size).reshape(a.shape)  # the node's seed carries over
    scale = np.float32(1) / (np.float32(1) - np.float32(0.1))
    want = np.where(keep, a * scale, np.float32(0)).astype(np.float32)
    same("training BitmaskDropout: the seeded mask", out["y"], want)
    same("BitmaskDropoutGrad of that mask", out["dx"], want)


def dropout_keep(seed, ratio, n):
    """docs/kernels.md's training-mode mask: element i kept when the top 24 bits of the (i + 1)-th
    number of SplitMix64 seeded with seed are >= ceil(ratio * 2^24)."""
    m = (1 << 64) - 1
    threshold = int(np.ceil(np.float64(np.float32(ratio)) * 2.0 ** 24))
    keep = []
    for i in range(n):
        z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        keep.append(((z ^ (z >> 31)) >> 40) >= threshold)
    return np.array(keep)


def trans_batch(x, batch, trans):
    r = x.ndim
    if batch:
        x = np.transpose(x, list(range(1, r - 1)) + [0, r - 1])
    return np.swapaxes(x, -1, -2) if trans else x


def fused_matmul(binary, tmp):
    d = testlib.tempdir_under(tmp, "fused_matmul")
    cases = [  # (attributes, A's shape, B's shape)
        ({"transBatchA": 1}, (3, 2, 5, 4), (2, 5, 4, 6)),
        ({"transBatchA": 1, "transA": 1, "alpha": 0.5}, (4, 2, 5, 3), (2, 5, 4, 6)),
        ({"transBatchB": 1, "transB": 1}, (2, 5, 3, 4), (6, 2, 5, 4)),
        ({"alpha": 3.0, "transA": 1, "transBatchB": 1}, (2, 3, 7, 4), (7, 2, 3, 5)),
        ({"alpha": 3.0}, (2, 3, 4), (2, 4, 5)),  # a 3-D B
    ]
    for k, (attrs, sa, sb) in enumerate(cases):
        a = RNG.standard_normal(sa).astype(np.float32)
        b = RNG.standard_normal(sb).astype(np.float32)
        want = np.matmul(trans_batch(a, attrs.get("transBatchA"), attrs.get("transA")),
                         trans_batch(b, attrs.get("transBatchB"), attrs.get("transB")))
        want = want * np.float32(attrs.get("alpha", 1.0))
        node = ms("FusedMatMul", ["a", "b"], ["y"], **attrs)
        path, out = run_model(binary, d, f"fmm{k}", model([node], [vi("a", sa), vi("b", sb)],
                                                         [vi("y", want.shape)], []),
                              {"a": a, "b": b})
        testlib.assert_close(f"FusedMatMul {attrs}", out["y"], want, 1e-5, 1e-5)
        text = fuserule_ok(binary, "fmt", path)
        # transBatch over operands of one known rank is GemmEpilogue's; a 3-D B the subgraph
        if "transBatchA" in attrs or "transBatchB" in attrs:
            check("GemmEpilogue(" in text and "MatMul(" not in text, text)
        else:
            check("MatMul(" in text and "GemmEpilogue" not in text, text)
    # different ranks are not what ONNX Runtime takes with transBatch
    node = ms("FusedMatMul", ["a", "b"], ["y"], transBatchB=1)
    path = os.path.join(d, "ranks.onnx")
    with open(path, "wb") as f:
        f.write(model([node], [vi("a", [3, 4]), vi("b", [4, 2, 6])], [vi("y", None)],
                      []).SerializeToString())
    status, _, err = run([binary, "fmt", path])
    check(status == 2 and "need A and B of one rank of at least 3" in err, f"exit {status}: {err}")


def layer_norm(x, g, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def embed_layer_norm(binary, tmp):
    d = testlib.tempdir_under(tmp, "embed")
    B, S, H, V, P = 2, 5, 8, 10, 16
    tables = {"words": (V, H), "positions": (P, H), "segments": (2, H), "gamma": (H,),
              "beta": (H,)}
    w = {k: RNG.standard_normal(s).astype(np.float32) for k, s in tables.items()}
    inits = [nh.from_array(v, k) for k, v in w.items()]
    ids = RNG.integers(0, V, (B, S)).astype(np.int32)
    seg = RNG.integers(0, 2, (B, S)).astype(np.int32)
    mask = np.array([[1, 1, 2, 0, -1], [1, 1, 1, 1, 0]], np.int32)
    pos = RNG.integers(0, P, (B, S)).astype(np.int32)
    full = ms("EmbedLayerNormalization", ["ids", "seg", "words", "positions", "segments",
                                          "gamma", "beta", "mask", "pos"], ["y", "mi", "sum"],
              epsilon=1e-5)
    bare = ms("EmbedLayerNormalization", ["ids", "", "words", "positions", "segments", "gamma",
                                          "beta"],  # a segment table without ids: unread
              ["y2", "mi2"])
    ints = [vi(n, [B, S], T.INT32) for n in ("ids", "seg", "mask", "pos")]
    outs = [vi("y", [B, S, H]), vi("mi", [B], T.INT32), vi("sum", [B, S, H]),
            vi("y2", [B, S, H]), vi("mi2", [B], T.INT32)]
    _, out = run_model(binary, d, "embed", model([full, bare], ints, outs, inits),
                       {"ids": ids, "seg": seg, "mask": mask, "pos": pos})
    total = (w["words"][ids] + w["positions"][pos]) + w["segments"][seg]
    same("embedding_sum", out["sum"], total)
    testlib.assert_close("output", out["y"], layer_norm(total, w["gamma"], w["beta"], 1e-5),
                         1e-5, 1e-5)
    same("mask_index (entries equal to 1)", out["mi"], np.array([2, 4], np.int32))
    bare_sum = w["words"][ids] + w["positions"][:S]
    testlib.assert_close("output without segments or positions", out["y2"],
                         layer_norm(bare_sum, w["gamma"], w["beta"], 1e-12), 1e-5, 1e-5)
    same("mask_index without a mask", out["mi2"], np.zeros(B, np.int32))


def megatron_mask(binary, tmp):
    """Attention's 4-D mask [B, 1, M, M]: query s after P cached tokens reads row P + s."""
    d = testlib.tempdir_under(tmp, "megatron")
    B, S, P, HID, NH, M = 2, 3, 2, 8, 2, 6
    D = HID // NH
    x = RNG.standard_normal((B, S, HID)).astype(np.float32)
    wq = RNG.standard_normal((HID, 3 * HID)).astype(np.float32) * 0.5
    past = RNG.standard_normal((2, B, NH, P, D)).astype(np.float32)
    mask = np.tril(np.ones((M, M), np.int32))[None, None].repeat(B, 0)
    mask[1, 0, P + 1, 0] = 0  # one more masked key in batch 1
    node = ms("Attention", ["x", "w", "", "mask", "past"], ["y", "present"], num_heads=NH)
    m = model([node], [vi("x", [B, S, HID]), vi("mask", [B, 1, M, M], T.INT32),
                       vi("past", [2, B, NH, P, D])],
              [vi("y", [B, S, HID]), vi("present", [2, B, NH, P + S, D])],
              [nh.from_array(wq, "w")])
    _, out = run_model(binary, d, "megatron", m, {"x": x, "mask": mask, "past": past})
    qkv = x.astype(np.float64) @ wq
    q, k, v = (qkv[..., i * HID:(i + 1) * HID].reshape(B, S, NH, D).transpose(0, 2, 1, 3)
               for i in range(3))
    k = np.concatenate([past[0], k], 2)
    v = np.concatenate([past[1], v], 2)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
    rows = mask[:, :, P:P + S, :P + S]
    scores = scores + np.where(rows == 0, -10000.0, 0.0)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    want = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, HID)
    testlib.assert_close("Attention with a 4-D mask", out["y"], want, 1e-5, 1e-5)
    testlib.assert_close("present", out["present"], np.stack([k, v]), 1e-6, 1e-6)


if __name__ == "__main__":
    binary = os.path.abspath(sys.argv[1])
    cases = [dropout_inference, dropout_training, fused_matmul, embed_layer_norm, megatron_mask]
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(testlib.main(cases, (binary, tmp)))
