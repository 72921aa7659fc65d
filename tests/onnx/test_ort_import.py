#!/usr/bin/env python3
"""ONNX Runtime as the judge of import: models in the forms that ONNX Runtime runs but the catalog
does not have as such (com.microsoft Attention, MultiHeadAttention, SkipLayerNormalization with a
bias, QuickGelu, EmbedLayerNormalization, FusedMatMul with batch transposes or a 3-D B; Clip-6,
Pad-2, Slice-1; ONNX 23's Attention, RMSNormalization and RotaryEmbedding) run in onnxruntime and
in `fuserule run` (which imports them) and must agree within ONNX Runtime's f32 tolerance.

    test_ort_import.py FUSERULE

Needs a python with `onnxruntime`, `onnx` and `numpy` (FUSERULE_ORT_PYTHON, as test_ort.py);
skipped (77) without.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import testlib  # noqa: E402

testlib.need_onnxruntime(__file__)
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from testlib import check, fuserule_ok, read_safetensors, run, write_safetensors  # noqa: E402

try:
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh
except ImportError:
    print("skipped: this python has onnxruntime but not onnx")
    sys.exit(testlib.SKIPPED)

TOLERANCE = (1e-4, 1e-5)
RNG = np.random.default_rng(23)
MS = [("com.microsoft", 1)]


def model(nodes, inputs, outputs, inits, opset=17, extra=MS):
    graph = h.make_graph(nodes, "m", inputs, outputs, inits)
    opsets = [h.make_opsetid("", opset)] + [h.make_opsetid(d, v) for d, v in extra]
    m = h.make_model(graph, opset_imports=opsets)
    m.ir_version = 10 if opset >= 21 else 8
    return m


def f32(name, shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, shape)


def w(name, shape, scale=0.5):
    return nh.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def agree(binary, tmp, name, m, feeds):
    path = os.path.join(tmp, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(names, feeds)))
    ins, outs = os.path.join(tmp, name + ".in.st"), os.path.join(tmp, name + ".out.st")
    write_safetensors(ins, feeds)
    fuserule_ok(binary, "run", path, "--inputs", ins, "-o", outs)
    got = read_safetensors(outs)
    check(set(got) == set(want), f"outputs {sorted(got)} vs {sorted(want)}")
    for k in names:
        testlib.assert_close(k, got[k], want[k], *TOLERANCE)
    return fuserule_ok(binary, "fmt", path)


B, S, HID, H = 2, 5, 8, 2


def raw_mask():
    m = np.ones((B, S), np.int32)
    m[1, 3:] = 0  # the second sequence is padded
    return m


def attention_cases(binary, tmp):
    def attention():
        """Attention with unequal Q/K and V widths, a raw mask, causal, present."""
        x = RNG.standard_normal((B, S, HID)).astype(np.float32)
        node = h.make_node("Attention", ["x", "w", "b", "mask"], ["y", "present"],
                           domain="com.microsoft", num_heads=H, unidirectional=1,
                           qkv_hidden_sizes=[8, 8, 8], mask_filter_value=-1000.0)
        m = model([node], [f32("x", [B, S, HID]), f32("mask", [B, S], T.INT32)],
                  [f32("y", [B, S, 8]), f32("present", [2, B, H, S, 4])],
                  [w("w", (HID, 24)), w("b", (24,))])
        text = agree(binary, tmp, "attention", m, {"x": x, "mask": raw_mask()})
        check("FusedQKV(x, w, b) {sizes=[8,8,8]}" in text, text)
        check('Attention(' in text and 'causal=1' in text and 'layout="BSHD"' in text, text)

    def attention_bias():
        """Attention without a mask, with attention_bias, V narrower than Q and K."""
        x = RNG.standard_normal((B, S, HID)).astype(np.float32)
        bias = RNG.standard_normal((1, H, S, S)).astype(np.float32)
        node = h.make_node("Attention", ["x", "w", "", "", "", "ab"], ["y"],
                           domain="com.microsoft", num_heads=H, qkv_hidden_sizes=[8, 8, 4],
                           scale=0.3)
        m = model([node], [f32("x", [B, S, HID]), f32("ab", [1, H, S, S])],
                  [f32("y", [B, S, 4])], [w("w", (HID, 20))])
        agree(binary, tmp, "attention_bias", m, {"x": x, "ab": bias})

    def mha():
        """MultiHeadAttention over 3-D q, k, v with a packed bias, key_padding_mask, presents."""
        T_ = 7
        q = RNG.standard_normal((B, S, HID)).astype(np.float32)
        k = RNG.standard_normal((B, T_, HID)).astype(np.float32)
        v = RNG.standard_normal((B, T_, HID)).astype(np.float32)
        mask = np.ones((B, T_), np.int32)
        mask[0, 5:] = 0
        node = h.make_node("MultiHeadAttention", ["q", "k", "v", "bias", "mask"],
                           ["y", "pk", "pv"], domain="com.microsoft", num_heads=H)
        m = model([node], [f32("q", [B, S, HID]), f32("k", [B, T_, HID]),
                           f32("v", [B, T_, HID]), f32("mask", [B, T_], T.INT32)],
                  [f32("y", [B, S, HID]), f32("pk", [B, H, T_, 4]), f32("pv", [B, H, T_, 4])],
                  [w("bias", (3 * HID,))])
        agree(binary, tmp, "mha", m, {"q": q, "k": k, "v": v, "mask": mask})

    def mha_heads():
        """MultiHeadAttention with key and value already in heads [B, H, T, D] (a cross cache)."""
        T_ = 6
        q = RNG.standard_normal((B, S, HID)).astype(np.float32)
        k = RNG.standard_normal((B, H, T_, 4)).astype(np.float32)
        v = RNG.standard_normal((B, H, T_, 4)).astype(np.float32)
        node = h.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain="com.microsoft",
                           num_heads=H, scale=0.25)
        m = model([node], [f32("q", [B, S, HID]), f32("k", [B, H, T_, 4]),
                           f32("v", [B, H, T_, 4])], [f32("y", [B, S, HID])], [])
        agree(binary, tmp, "mha_heads", m, {"q": q, "k": k, "v": v})

    def refused():
        """A KV cache, a 1-D mask_index and rotary attributes are refused by name."""
        x = f32("x", [B, S, HID])
        cases = [
            (h.make_node("Attention", ["x", "w", "", "", "past", "", "plen"], ["y"],
                         domain="com.microsoft", num_heads=H),
             [x, f32("past", [2, B, H, 3, 4]), f32("plen", [1], T.INT32)],
             "input 6 (past_sequence_length (a shared KV buffer)) is outside what the catalog's "
             "Attention expresses"),
            (h.make_node("Attention", ["x", "w", "", "lens"], ["y"], domain="com.microsoft",
                         num_heads=H), [x, f32("lens", [B], T.INT32)],
             "mask 'lens' is i32 of rank 1; import converts ONNX Runtime's 2-D [batch, keys] "
             "raw mask and Attention's 4-D Megatron mask (int32) only"),
            (h.make_node("Attention", ["x", "w"], ["y"], domain="com.microsoft", num_heads=H,
                         do_rotary=1), [x],
             "attribute 'do_rotary' (this value) is outside what the catalog's Attention "
             "expresses"),
        ]
        for i, (node, inputs, want) in enumerate(cases):
            path = os.path.join(tmp, f"refused{i}.onnx")
            m = model([node], inputs, [f32("y", [B, S, HID])], [w("w", (HID, 24))])
            with open(path, "wb") as f:
                f.write(m.SerializeToString())
            status, _, err = run([binary, "fmt", path])
            check(status == 2 and want in err, f"exit {status}: {err}")

    def attention_past():
        """Attention with a KV cache past [2, B, H, P, D], causal, a mask over P + S keys."""
        P = 4
        x = RNG.standard_normal((B, S, HID)).astype(np.float32)
        past = RNG.standard_normal((2, B, H, P, 4)).astype(np.float32)
        mask = np.ones((B, P + S), np.int32)
        mask[0, :2] = 0
        node = h.make_node("Attention", ["x", "w", "b", "mask", "past"], ["y", "present"],
                           domain="com.microsoft", num_heads=H, unidirectional=1)
        m = model([node], [f32("x", [B, S, HID]), f32("mask", [B, P + S], T.INT32),
                           f32("past", [2, B, H, P, 4])],
                  [f32("y", [B, S, HID]), f32("present", [2, B, H, P + S, 4])],
                  [w("w", (HID, 24)), w("b", (24,))])
        agree(binary, tmp, "attention_past", m, {"x": x, "mask": mask, "past": past})

    def mha_past():
        """MultiHeadAttention with past_key/past_value (a decoder step) and a causal mask; and a
        cross attention whose keys come in heads with a bias (only the query's third applies)."""
        P = 6
        q = RNG.standard_normal((B, S, HID)).astype(np.float32)
        k = RNG.standard_normal((B, S, HID)).astype(np.float32)
        v = RNG.standard_normal((B, S, HID)).astype(np.float32)
        pk = RNG.standard_normal((B, H, P, 4)).astype(np.float32)
        pv = RNG.standard_normal((B, H, P, 4)).astype(np.float32)
        self_attn = h.make_node("MultiHeadAttention", ["q", "k", "v", "bias", "", "", "pk", "pv"],
                                ["y", "present_k", "present_v"], domain="com.microsoft",
                                num_heads=H, unidirectional=1)
        cross = h.make_node("MultiHeadAttention", ["y", "pk", "pv", "bias"], ["z"],
                            domain="com.microsoft", num_heads=H)
        m = model([self_attn, cross], [f32("q", [B, S, HID]), f32("k", [B, S, HID]),
                                       f32("v", [B, S, HID]), f32("pk", [B, H, P, 4]),
                                       f32("pv", [B, H, P, 4])],
                  [f32("y", [B, S, HID]), f32("present_k", [B, H, P + S, 4]),
                   f32("present_v", [B, H, P + S, 4]), f32("z", [B, S, HID])],
                  [w("bias", (3 * HID,))])
        agree(binary, tmp, "mha_past", m, {"q": q, "k": k, "v": v, "pk": pk, "pv": pv})

    return [attention, attention_bias, mha, mha_heads, attention_past, mha_past, refused]


def other_cases(binary, tmp):
    def skip_layer_norm_bias():
        x = RNG.standard_normal((B, S, HID)).astype(np.float32)
        skip = RNG.standard_normal((B, S, HID)).astype(np.float32)
        node = h.make_node("SkipLayerNormalization", ["x", "skip", "g", "beta", "bias"],
                           ["y", "", "", "sum"], domain="com.microsoft", epsilon=1e-5)
        m = model([node], [f32("x", [B, S, HID]), f32("skip", [B, S, HID])],
                  [f32("y", [B, S, HID]), f32("sum", [B, S, HID])],
                  [w("g", (HID,)), w("beta", (HID,)), w("bias", (HID,))])
        text = agree(binary, tmp, "skip_ln_bias", m, {"x": x, "skip": skip})
        # one node: the bias is AddLayerNorm's skip_bias (input 4), not an Add before it
        check("= AddLayerNorm(x, skip, g, beta, bias)" in text and "Add(" not in text, text)
        # without beta: skip_bias after an empty port
        node = h.make_node("SkipLayerNormalization", ["x", "skip", "g", "", "bias"],
                           ["y", "", "", "sum"], domain="com.microsoft", epsilon=1e-5)
        m = model([node], [f32("x", [B, S, HID]), f32("skip", [B, S, HID])],
                  [f32("y", [B, S, HID]), f32("sum", [B, S, HID])],
                  [w("g", (HID,)), w("bias", (HID,))])
        text = agree(binary, tmp, "skip_ln_bias_nobeta", m, {"x": x, "skip": skip})
        check("AddLayerNorm(x, skip, g, _, bias)" in text and "Add(" not in text, text)

    def quick_gelu():  # (GemmFastGelu has no CPU kernel in ONNX Runtime: test_forms.py)
        x = (RNG.standard_normal((3, 4)) * 3).astype(np.float32)
        nodes = [h.make_node("QuickGelu", ["x"], ["a"], domain="com.microsoft", alpha=1.3),
                 h.make_node("FastGelu", ["x", "b"], ["c"], domain="com.microsoft")]
        text = agree(binary, tmp, "quick_gelu",
                     model(nodes, [f32("x", [3, 4])], [f32("a", [3, 4]), f32("c", [3, 4])],
                           [w("b", (4,))]), {"x": x})
        check('ElementwiseChain(x, b) {expr="gelu_tanh(add(x0, x1))"}' in text, text)

    def legacy9():
        x = (RNG.standard_normal((2, 3, 4)) * 5).astype(np.float32)
        nodes = [h.make_node("Clip", ["x"], ["c"], min=-1.0, max=2.0),
                 h.make_node("Pad", ["x"], ["p"], pads=[0, 1, 0, 0, 0, 2], value=0.5),
                 h.make_node("Slice", ["x"], ["s"], starts=[-2, 1], ends=[100, 3], axes=[2, 1])]
        m = model(nodes, [f32("x", [2, 3, 4])],
                  [f32("c", [2, 3, 4]), f32("p", [2, 4, 6]), f32("s", [2, 2, 2])], [], 9, [])
        agree(binary, tmp, "legacy9", m, {"x": x})

    def embed_layer_norm():
        """EmbedLayerNormalization, with and without its optional inputs (and the default
        epsilon, 1e-12, which a near-constant embedding shows)."""
        V, P = 10, 16
        ids = RNG.integers(0, V, (B, S)).astype(np.int32)
        seg = RNG.integers(0, 2, (B, S)).astype(np.int32)
        pos = RNG.integers(0, P, (B, S)).astype(np.int32)
        mask = np.array([[1, 1, 2, 0, -1], [1, 1, 1, 1, 0]], np.int32)
        flat = (1 + RNG.standard_normal((V, HID)) * 1e-2).astype(np.float32)
        flat = nh.from_array(flat, "fw")
        nodes = [h.make_node("EmbedLayerNormalization", ["ids", "seg", "words", "positions",
                                                         "segments", "g", "beta", "mask", "pos"],
                             ["y", "mi", "sum"], domain="com.microsoft", epsilon=1e-5),
                 h.make_node("EmbedLayerNormalization", ["ids", "", "fw", "zeros", "", "g", "beta"],
                             ["y2", "mi2"], domain="com.microsoft")]
        ints = [f32(n, [B, S], T.INT32) for n in ("ids", "seg", "mask", "pos")]
        outs = [f32("y", [B, S, HID]), f32("mi", [B], T.INT32), f32("sum", [B, S, HID]),
                f32("y2", [B, S, HID]), f32("mi2", [B], T.INT32)]
        inits = [w("words", (V, HID)), w("positions", (P, HID)), w("segments", (2, HID)),
                 w("g", (HID,)), w("beta", (HID,)), flat,
                 nh.from_array(np.zeros((P, HID), np.float32), "zeros")]
        text = agree(binary, tmp, "embed_ln", model(nodes, ints, outs, inits),
                     {"ids": ids, "seg": seg, "mask": mask, "pos": pos})
        check("EmbedLayerNormalization" not in text and "LayerNormalization(" in text, text)

    def fused_matmul_forms():
        """FusedMatMul with transBatchA/B and alpha (GemmEpilogue's flags), and with a 3-D B
        computed by a node: Transpose, MatMul, Mul."""
        a = RNG.standard_normal((2, 3, 7, 4)).astype(np.float32)
        b = RNG.standard_normal((7, 2, 3, 5)).astype(np.float32)
        c = RNG.standard_normal((4, 2, 5, 3)).astype(np.float32)
        nodes = [h.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft",
                             alpha=3.0, transA=1, transBatchB=1),
                 h.make_node("FusedMatMul", ["c", "b2"], ["z"], domain="com.microsoft",
                             transBatchA=1, transA=1, alpha=0.5),
                 h.make_node("Relu", ["b3"], ["b3r"]),
                 h.make_node("FusedMatMul", ["a3", "b3r"], ["u"], domain="com.microsoft",
                             alpha=2.0)]
        b2 = RNG.standard_normal((2, 5, 4, 6)).astype(np.float32)
        a3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        b3 = RNG.standard_normal((2, 4, 5)).astype(np.float32)
        m = model(nodes, [f32("a", [2, 3, 7, 4]), f32("b", [7, 2, 3, 5]), f32("c", [4, 2, 5, 3]),
                          f32("b2", [2, 5, 4, 6]), f32("a3", [2, 3, 4]), f32("b3", [2, 4, 5])],
                  [f32("y", [2, 3, 4, 5]), f32("z", [2, 5, 3, 6]), f32("u", [2, 3, 5])], [])
        text = agree(binary, tmp, "fused_matmul", m,
                     {"a": a, "b": b, "c": c, "b2": b2, "a3": a3, "b3": b3})
        check("transBatchB=1" in text and "transBatchA=1" in text and
              "MatMul(a3, b3r)" in text, text)

    return [skip_layer_norm_bias, quick_gelu, legacy9, embed_layer_norm, fused_matmul_forms]


def onnx23_cases(binary, tmp):
    """ONNX 23's Attention, RMSNormalization and RotaryEmbedding (ONNX Runtime 1.22 and later)."""
    def rms_normalization():
        x = RNG.standard_normal((B, S, HID)).astype(np.float32)
        node = h.make_node("RMSNormalization", ["x", "g"], ["y"], epsilon=1e-3)
        text = agree(binary, tmp, "rmsnorm23", model([node], [f32("x", [B, S, HID])],
                                                     [f32("y", [B, S, HID])], [w("g", (HID,))],
                                                     23, []), {"x": x})
        check("RMSNorm(x, g) {epsilon=0.001}" in text, text)

    def attention23():
        q = RNG.standard_normal((B, 4, S, 6)).astype(np.float32)
        k = RNG.standard_normal((B, 2, S, 6)).astype(np.float32)  # GQA: 4 query heads, 2 kv
        v = RNG.standard_normal((B, 2, S, 3)).astype(np.float32)
        mask = RNG.standard_normal((S, S)).astype(np.float32)
        node = h.make_node("Attention", ["q", "k", "v", "mask"], ["y"], is_causal=1, scale=0.4)
        m = model([node], [f32("q", [B, 4, S, 6]), f32("k", [B, 2, S, 6]),
                           f32("v", [B, 2, S, 3]), f32("mask", [S, S])],
                  [f32("y", [B, 4, S, 3])], [], 23, [])
        text = agree(binary, tmp, "attention23", m, {"q": q, "k": k, "v": v, "mask": mask})
        check('Attention(q, k, v, mask) {scale=0.4, causal=1, layout="BHSD"}' in text, text)
        # causal over a query shorter than the keys: ONNX's triangle is not the catalog's
        node = h.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
        path = os.path.join(tmp, "attention23_causal.onnx")
        with open(path, "wb") as f:
            f.write(model([node], [f32("q", [B, 4, 2, 6]), f32("k", [B, 2, S, 6]),
                                   f32("v", [B, 2, S, 3])], [f32("y", [B, 4, 2, 3])], [], 23,
                          []).SerializeToString())
        status, _, err = run([binary, "fmt", path])
        check(status == 2 and "ONNX aligns the causal mask top left" in err, f"exit {status}: {err}")

    def rotary_embedding():
        x = RNG.standard_normal((B, 2, S, 8)).astype(np.float32)
        cos = RNG.standard_normal((B, S, 4)).astype(np.float32)
        sin = RNG.standard_normal((B, S, 4)).astype(np.float32)
        cache = RNG.standard_normal((10, 4)).astype(np.float32)
        pos = np.array([[0, 3, 2, 9, 1], [4, 4, 5, 6, 7]], np.int64)
        nodes = [h.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["a"]),
                 h.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["b"], interleaved=1),
                 h.make_node("RotaryEmbedding", ["x", "cache", "cache2", "pos"], ["c"])]
        m = model(nodes, [f32("x", [B, 2, S, 8]), f32("cos", [B, S, 4]), f32("sin", [B, S, 4]),
                          f32("cache", [10, 4]), f32("cache2", [10, 4]),
                          h.make_tensor_value_info("pos", T.INT64, [B, S])],
                  [f32(n, [B, 2, S, 8]) for n in "abc"], [], 23, [])
        agree(binary, tmp, "rope23", m, {"x": x, "cos": cos, "sin": sin, "cache": cache,
                                         "cache2": cache[::-1].copy(), "pos": pos})

    return [rms_normalization, attention23, rotary_embedding]


if __name__ == "__main__":
    binary = os.path.abspath(sys.argv[1])
    print(f"onnxruntime {ort.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(testlib.main(attention_cases(binary, tmp) + other_cases(binary, tmp) +
                              onnx23_cases(binary, tmp), ()))
