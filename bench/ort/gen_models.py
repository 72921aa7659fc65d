#!/usr/bin/env python3
"""Generates exporter-style ONNX models for the ONNX Runtime comparison (bench/README.md,
"Against ONNX Runtime").

    gen_models.py llama LAYERS OUT.onnx     a LLaMA/Qwen2-style decoder, 54 nodes a layer
    gen_models.py bert LAYERS OUT.onnx      a BERT-style encoder, 34 nodes a layer

The graphs are spelled the way torch.onnx (opset 17) writes them, which is what both optimizers
are built to recognize:
  llama  RMSNorm as Pow > ReduceMean > Add(eps) > Sqrt > Reciprocal > Mul > Mul(weight); Q/K/V
         projections of one input; Reshape + Transpose per head split; RoPE as Slice/Neg/Concat
         (rotate_half) with Mul/Add against cos and sin tables; scaled scores, additive causal
         mask, Softmax; SwiGLU MLP as MatMul > Sigmoid > Mul (SiLU) times the up projection.
  bert   MatMul > Add(bias) projections; Reshape + Transpose per head split; scores, mask,
         Softmax; residual Add > LayerNormalization; GELU in its erf form
         (Div > Erf > Add > Mul > Mul).
Tensors are small (sequence 8, hidden 32, 2 heads) so that the comparison measures the
optimizers, not the weights; every layer has its own weights, seeded, so that no optimizer can
share them.
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

S, HIDDEN, HEADS = 8, 32, 2
HEAD = HIDDEN // HEADS
FFN = 4 * HIDDEN


class Builder:
    def __init__(self, seed):
        self.nodes, self.inits, self.rng, self.count = [], [], np.random.default_rng(seed), 0

    def name(self, stem):
        self.count += 1
        return f"{stem}_{self.count}"

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def weight(self, *shape, scale=0.1):
        name = self.name("w")
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def const(self, name, value, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def model(self, name, x, y):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, S, HIDDEN])],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, S, HIDDEN])], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                 producer_name="fuserule bench/ort/gen_models.py")


def shared_constants(b):
    b.const("split_heads", [1, S, HEADS, HEAD], np.int64)
    b.const("merge_heads", [1, S, HIDDEN], np.int64)
    b.const("scale", np.sqrt(HEAD))
    b.const("mask", np.triu(np.full((S, S), -1e4, dtype=np.float32), 1)[None, None])


def heads(b, x, perm=(0, 2, 1, 3)):
    return b.op("Transpose", [b.op("Reshape", [x, "split_heads"])], perm=list(perm))


def attention(b, q, k, v):
    scores = b.op("Div", [b.op("MatMul", [q, k]), "scale"])
    probs = b.op("Softmax", [b.op("Add", [scores, "mask"])], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    return b.op("Reshape", [ctx, "merge_heads"])


# ---- LLaMA / Qwen2 ------------------------------------------------------------------------------


def rms_norm(b, x):
    var = b.op("ReduceMean", [b.op("Pow", [x, "two"])], axes=[-1], keepdims=1)
    inv = b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [var, "eps"])])])
    return b.op("Mul", [b.op("Mul", [x, inv]), b.weight(HIDDEN, scale=1.0)])


def rope(b, x):
    first = b.op("Slice", [x, "zero", "half", "last_axis"])
    second = b.op("Slice", [x, "half", "head", "last_axis"])
    rotated = b.op("Concat", [b.op("Neg", [second]), first], axis=-1)
    return b.op("Add", [b.op("Mul", [x, "cos"]), b.op("Mul", [rotated, "sin"])])


def llama_layer(b, x):
    h = rms_norm(b, x)
    q = rope(b, heads(b, b.op("MatMul", [h, b.weight(HIDDEN, HIDDEN)])))
    k = rope(b, heads(b, b.op("MatMul", [h, b.weight(HIDDEN, HIDDEN)])))
    v = heads(b, b.op("MatMul", [h, b.weight(HIDDEN, HIDDEN)]))
    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    out = b.op("MatMul", [attention(b, q, kt, v), b.weight(HIDDEN, HIDDEN)])
    x = b.op("Add", [x, out])
    h = rms_norm(b, x)
    gate = b.op("MatMul", [h, b.weight(HIDDEN, FFN)])
    silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
    up = b.op("MatMul", [h, b.weight(HIDDEN, FFN)])
    down = b.op("MatMul", [b.op("Mul", [silu, up]), b.weight(FFN, HIDDEN)])
    return b.op("Add", [x, down])


def llama(layers):
    b = Builder(1)
    shared_constants(b)
    b.const("two", 2.0)
    b.const("eps", 1e-6)
    for name, value in (("zero", [0]), ("half", [HEAD // 2]), ("head", [HEAD]),
                        ("last_axis", [-1])):
        b.const(name, value, np.int64)
    angles = np.arange(S)[:, None] / 10000 ** (np.arange(HEAD) % (HEAD // 2) * 2 / HEAD)
    b.const("cos", np.cos(angles))
    b.const("sin", np.sin(angles))
    x = "x"
    for _ in range(layers):
        x = llama_layer(b, x)
    return b.model("llama", "x", x)


# ---- BERT ---------------------------------------------------------------------------------------


def linear(b, x, n_in, n_out):
    return b.op("Add", [b.op("MatMul", [x, b.weight(n_in, n_out)]), b.weight(n_out)])


def layer_norm(b, x):
    return b.op("LayerNormalization", [x, b.weight(HIDDEN, scale=1.0), b.weight(HIDDEN)],
                axis=-1, epsilon=1e-12)


def gelu_erf(b, x):
    erf = b.op("Erf", [b.op("Div", [x, "sqrt2"])])
    return b.op("Mul", [b.op("Mul", [x, b.op("Add", [erf, "one"])]), "half_f"])


def bert_layer(b, x):
    q = heads(b, linear(b, x, HIDDEN, HIDDEN))
    k = heads(b, linear(b, x, HIDDEN, HIDDEN), perm=(0, 2, 3, 1))
    v = heads(b, linear(b, x, HIDDEN, HIDDEN))
    out = linear(b, attention(b, q, k, v), HIDDEN, HIDDEN)
    x = layer_norm(b, b.op("Add", [out, x]))
    ffn = linear(b, gelu_erf(b, linear(b, x, HIDDEN, FFN)), FFN, HIDDEN)
    return layer_norm(b, b.op("Add", [ffn, x]))


def bert(layers):
    b = Builder(2)
    shared_constants(b)
    b.const("sqrt2", np.sqrt(2.0))
    b.const("one", 1.0)
    b.const("half_f", 0.5)
    x = "x"
    for _ in range(layers):
        x = bert_layer(b, x)
    return b.model("bert", "x", x)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("llama", "bert"):
        raise SystemExit(__doc__)
    model = {"llama": llama, "bert": bert}[sys.argv[1]](int(sys.argv[2]))
    with open(sys.argv[3], "wb") as f:
        f.write(model.SerializeToString())
    print(f"{sys.argv[3]}: {len(model.graph.node)} nodes")


if __name__ == "__main__":
    main()
