"""ONNX models for the import/export tests, made with onnx.helper at test time (never committed).

    models.py OUTDIR      writes every model below into OUTDIR (needs the `onnx` module)

Each builder returns a ModelProto; `write_all` saves them (the external-data model with its weights
file beside it).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

RNG = np.random.default_rng(20240601)


def weight(name, shape, scale=1.0):
    return nh.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def ints(name, values):
    return nh.from_array(np.array(values, dtype=np.int64), name)


def model(nodes, name, inputs, outputs, inits, opset, extra_opsets=()):
    graph = h.make_graph(nodes, name, inputs, outputs, inits)
    opsets = [h.make_opsetid("", opset)] + [h.make_opsetid(d, v) for d, v in extra_opsets]
    m = h.make_model(graph, opset_imports=opsets, producer_name="fuserule-tests")
    m.ir_version = 8
    return m


def conv_bn_relu():
    """Conv + BatchNormalization + Relu with a symbolic batch and names that need quoting."""
    x = h.make_tensor_value_info("x:0", T.FLOAT, ["batch size", 3, 8, 8])
    y = h.make_tensor_value_info("/block/Relu_output_0", T.FLOAT, ["batch size", 4, 8, 8])
    nodes = [
        h.make_node("Conv", ["x:0", "conv.weight", "conv.bias"], ["/block/Conv_output_0"],
                    kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="/block/Conv"),
        h.make_node("BatchNormalization", ["/block/Conv_output_0", "bn.weight", "bn.bias",
                                           "bn.running_mean", "bn.running_var"],
                    ["/block/bn_output_0"], epsilon=1e-5),
        h.make_node("Relu", ["/block/bn_output_0"], ["/block/Relu_output_0"]),
    ]
    inits = [weight("conv.weight", (4, 3, 3, 3), 0.3), weight("conv.bias", (4,)),
             weight("bn.weight", (4,)), weight("bn.bias", (4,)), weight("bn.running_mean", (4,)),
             nh.from_array(np.abs(RNG.standard_normal(4)).astype(np.float32) + 0.5,
                           "bn.running_var")]
    return model(nodes, "conv bn relu", [x], [y], inits, 17)


def transformer(opset=17):
    """A small encoder layer as exporters write it: LayerNormalization, Q/K/V MatMuls, heads by
    Reshape/Transpose, Softmax attention, erf GELU written out, two residual Adds."""
    d, heads = 16, 2
    x = h.make_tensor_value_info("x", T.FLOAT, ["B", "S", d])
    y = h.make_tensor_value_info("y", T.FLOAT, ["B", "S", d])
    n = []
    inits = [weight("ln1.g", (d,)), weight("ln1.b", (d,)), weight("ln2.g", (d,)),
             weight("ln2.b", (d,)), ints("heads_shape", [0, 0, heads, d // heads]),
             ints("merge_shape", [0, 0, d]),
             nh.from_array(np.array(1 / np.sqrt(d // heads), np.float32), "scale"),
             nh.from_array(np.array(np.sqrt(2), np.float32), "sqrt2"),
             nh.from_array(np.array(1, np.float32), "one"),
             nh.from_array(np.array(0.5, np.float32), "half")]
    n.append(h.make_node("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["ln1"], epsilon=1e-5))
    for p in "qkv":
        inits += [weight(f"w{p}", (d, d), 0.25), weight(f"b{p}", (d,), 0.1)]
        n.append(h.make_node("MatMul", ["ln1", f"w{p}"], [f"{p}_mm"]))
        n.append(h.make_node("Add", [f"{p}_mm", f"b{p}"], [f"{p}_b"]))
        n.append(h.make_node("Reshape", [f"{p}_b", "heads_shape"], [f"{p}_h"]))
        perm = [0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]
        n.append(h.make_node("Transpose", [f"{p}_h"], [f"{p}_t"], perm=perm))
    n += [h.make_node("MatMul", ["q_t", "k_t"], ["scores"]),
          h.make_node("Mul", ["scores", "scale"], ["scaled"]),
          h.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
          h.make_node("MatMul", ["probs", "v_t"], ["ctx"]),
          h.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
          h.make_node("Reshape", ["ctx_t", "merge_shape"], ["ctx_m"])]
    inits += [weight("wo", (d, d), 0.25), weight("bo", (d,), 0.1),
              weight("w1", (d, 4 * d), 0.25), weight("b1", (4 * d,), 0.1),
              weight("w2", (4 * d, d), 0.12), weight("b2", (d,), 0.1)]
    n += [h.make_node("MatMul", ["ctx_m", "wo"], ["o_mm"]),
          h.make_node("Add", ["o_mm", "bo"], ["o"]),
          h.make_node("Add", ["x", "o"], ["res1"]),
          h.make_node("LayerNormalization", ["res1", "ln2.g", "ln2.b"], ["ln2"], epsilon=1e-5),
          h.make_node("MatMul", ["ln2", "w1"], ["f1_mm"]),
          h.make_node("Add", ["f1_mm", "b1"], ["f1"]),
          h.make_node("Div", ["f1", "sqrt2"], ["g_div"]),
          h.make_node("Erf", ["g_div"], ["g_erf"]),
          h.make_node("Add", ["g_erf", "one"], ["g_add"]),
          h.make_node("Mul", ["f1", "g_add"], ["g_mul"]),
          h.make_node("Mul", ["g_mul", "half"], ["gelu"]),
          h.make_node("MatMul", ["gelu", "w2"], ["f2_mm"]),
          h.make_node("Add", ["f2_mm", "b2"], ["f2"]),
          h.make_node("Add", ["res1", "f2"], ["y"])]
    return model(n, "encoder layer", [x], [y], inits, opset)


def external_data():
    """conv_bn_relu with every initializer in weights/conv.bin beside the model."""
    m = conv_bn_relu()
    m.graph.name = "external"
    onnx.external_data_helper.convert_model_to_external_data(
        m, all_tensors_to_one_file=True, location="weights/conv.bin", size_threshold=0)
    return m


def legacy_pair():
    """The same computation at opset 11 (Reduce/Squeeze/Unsqueeze axes, Split sizes and Dropout
    ratio as attributes, Softmax, LogSoftmax and Hardmax over the input flattened at axis 1) and at
    opset 18 (all of them as inputs, and the flattening written out)."""
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4])
    outs = ["rmean", "rsum", "rmax", "sq", "us", "s0", "s1", "soft", "drop", "lsoft", "hard"]
    vi = [h.make_tensor_value_info(o, T.FLOAT, None) for o in outs]

    old = [h.make_node("ReduceMean", ["x"], ["rmean"], axes=[1], keepdims=1),
           h.make_node("ReduceSum", ["x"], ["rsum"], axes=[0, 2], keepdims=0),
           h.make_node("ReduceMax", ["x"], ["rmax"], axes=[-1], keepdims=1),
           h.make_node("Squeeze", ["rmean"], ["sq"], axes=[1]),
           h.make_node("Unsqueeze", ["sq"], ["us"], axes=[0, 3]),
           h.make_node("Split", ["x"], ["s0", "s1"], axis=2, split=[1, 3]),
           h.make_node("Softmax", ["x"], ["soft"], axis=1),
           h.make_node("Dropout", ["x"], ["drop"], ratio=0.25),
           h.make_node("LogSoftmax", ["x"], ["lsoft"]),  # the old default axis, 1
           h.make_node("Hardmax", ["x"], ["hard"], axis=1)]
    new = [h.make_node("ReduceMean", ["x", "ax1"], ["rmean"], keepdims=1),
           h.make_node("ReduceSum", ["x", "ax02"], ["rsum"], keepdims=0),
           h.make_node("ReduceMax", ["x", "axm1"], ["rmax"], keepdims=1),
           h.make_node("Squeeze", ["rmean", "ax1"], ["sq"]),
           h.make_node("Unsqueeze", ["sq", "ax03"], ["us"]),
           h.make_node("Split", ["x", "sizes"], ["s0", "s1"], axis=2),
           h.make_node("Flatten", ["x"], ["flat"], axis=1),
           h.make_node("Softmax", ["flat"], ["flat_soft"], axis=-1),
           h.make_node("Shape", ["x"], ["x_shape"]),
           h.make_node("Reshape", ["flat_soft", "x_shape"], ["soft"]),
           h.make_node("Dropout", ["x", "ratio"], ["drop"]),
           h.make_node("LogSoftmax", ["flat"], ["flat_lsoft"], axis=-1),
           h.make_node("Reshape", ["flat_lsoft", "x_shape"], ["lsoft"]),
           h.make_node("Hardmax", ["flat"], ["flat_hard"], axis=-1),
           h.make_node("Reshape", ["flat_hard", "x_shape"], ["hard"])]
    new_inits = [ints("ax1", [1]), ints("ax02", [0, 2]), ints("axm1", [-1]), ints("ax03", [0, 3]),
                 ints("sizes", [1, 3]), nh.from_array(np.array(0.25, np.float32), "ratio")]
    return (model(old, "legacy", [x], vi, [], 11),
            model(new, "legacy", [x], vi, new_inits, 18))


def names():
    """Values whose names need quoting, a dim_param with a space, and an unnamed Split output in
    the middle of named ones."""
    x = h.make_tensor_value_info("input:0", T.FLOAT, ["batch size", 6])
    outs = [h.make_tensor_value_info(o, T.FLOAT, None) for o in ["_", "graph", "s/2", "é"]]
    n = [h.make_node("Relu", ["input:0"], ["a b"]),
         h.make_node("Split", ["a b"], ["s.0", "", "s/2"], axis=1),
         h.make_node("Neg", ["s.0"], ["_"]),
         h.make_node("Abs", ["s/2"], ["graph"]),
         h.make_node("Add", ["_", "1"], ["é"])]
    return model(n, "names: quoted!", [x], outs,
                 [nh.from_array(np.array([2.5], np.float32), "1")], 17)


def unsupported():
    """Ops outside the catalog, twice Unique: one error must list them all with counts."""
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
    outs = [h.make_tensor_value_info(o, T.INT64, None) for o in ["a", "b"]]
    n = [h.make_node("Unique", ["x"], ["a"]),
         h.make_node("Relu", ["x"], ["r"]),
         h.make_node("Unique", ["r"], ["b"]),
         h.make_node("StringNormalizer", ["r"], ["hm"]),
         h.make_node("WordConvEmbedding", ["r"], ["att"], domain="com.microsoft")]
    return model(n, "unsupported", [x], outs, [], 17, [("com.microsoft", 1)])


def gelu20():
    """Gelu of opset 20 (both forms): newer than the checker here, read by import."""
    x = h.make_tensor_value_info("x", T.FLOAT, [3, 5])
    outs = [h.make_tensor_value_info(o, T.FLOAT, None) for o in ["g", "t"]]
    n = [h.make_node("Gelu", ["x"], ["g"]),
         h.make_node("Gelu", ["x"], ["t"], approximate="tanh")]
    return model(n, "gelu20", [x], outs, [], 20)


def all_models():
    old, new = legacy_pair()
    return {"conv_bn_relu": conv_bn_relu(), "transformer": transformer(),
            "legacy11": old, "legacy18": new, "names": names(), "unsupported": unsupported(),
            "gelu20": gelu20()}


def write_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    for name, m in all_models().items():
        onnx.save(m, os.path.join(outdir, name + ".onnx"))
    ext = os.path.join(outdir, "external")
    os.makedirs(os.path.join(ext, "weights"), exist_ok=True)
    onnx.save(external_data(), os.path.join(ext, "external.onnx"))


if __name__ == "__main__":
    write_all(sys.argv[1])
