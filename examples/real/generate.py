#!/usr/bin/env python3
"""Generates the real-export corpus: models built by torchvision, transformers and torchaudio from
their config classes, exported by torch's two ONNX exporters, with their inputs, ONNX Runtime's
outputs for them and ONNX Runtime's kernel counts.

Run by hand, never in CI, in a venv of its own outside the repository:

    python3 -m venv /work/venv-torch
    /work/venv-torch/bin/pip install torch torchvision torchaudio transformers onnx onnxscript \\
        onnxruntime safetensors sympy
    HF_HUB_OFFLINE=1 /work/venv-torch/bin/python examples/real/generate.py [MODEL...]

Nothing is downloaded: every model is built from its config class with seeded random weights
(torch.manual_seed; BatchNorm statistics, biases and norm weights randomized too), in eval
mode, batch 1. Widths and depths are reduced (2 layers, hidden 64, images 64x64 or smaller) so
that each file stays well under 4 MB; the structure of each block is the library's own.

Per model and exporter (classic: torch.onnx.export(dynamo=False) at opset 17; dynamo: the dynamo
exporter at opset 18) it writes, into examples/real/:
  NAME.EXPORTER.onnx              the exported model, weights inline
  NAME.EXPORTER.in.safetensors    its inputs, by the model's input names
  NAME.EXPORTER.ort.safetensors   ONNX Runtime's outputs (CPU, no graph optimization) for them
and records in ort_counts.json, per model and exporter: nodes and kernels of the export, kernels
after ONNX Runtime's ENABLE_ALL optimizer (the model it saves through optimized_model_filepath),
kernels after onnxruntime.transformers.optimizer (model types bert and gpt2, opt_level 0, as
bench/ort/compare.py runs it) where it applies, the largest difference between ONNX Runtime's and
torch's outputs, or the exporter's error when it could not export the model.

Kernels are counted as DESIGN.md counts them (and bench/ort/compare.py): every node except
Constant and the views Reshape, Flatten, Squeeze, Unsqueeze and Identity.
"""
import json
import os
import re
import sys
import tempfile
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COUNTS = os.path.join(HERE, "ort_counts.json")
VIEWS = {"Constant", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}
EXPORTERS = {"classic": 17, "dynamo": 18}
SEED = 0
MAX_BYTES = 4 << 20


class Outputs(torch.nn.Module):
    """Wraps a model whose forward returns a ModelOutput or a tuple: returns the listed tensors,
    so that both exporters see the same plain outputs."""

    def __init__(self, model, call, names):
        super().__init__()
        self.model, self.call, self.names = model, call, names

    def forward(self, *args):
        out = self.call(self.model, *args)
        return tuple(out[n] for n in self.names)  # ModelOutput keys or tuple indices


def randomize_parameters(model):
    """Default BatchNorm statistics (mean 0, variance 1, weight 1, bias 0) make folding them a
    no-op; random ones make a wrong fold show in the outputs. Biases and norm weights (every 1-D
    parameter) move by up to 0.1 from their initial 0 or 1, as in a trained model: all-zero biases
    are dropped by the dynamo exporter and shared by the classic one (one initializer behind
    Identity nodes), spellings no trained model has."""
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1 and p.is_floating_point():
                p.add_(torch.rand(p.shape, generator=g) * 0.2 - 0.1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(n, generator=g) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=g) * 0.4 + 0.8)
                    m.bias.copy_(torch.rand(n, generator=g) * 0.2 - 0.1)
    return model


# ---------------------------------------------------------------------------------------------
# The models. Each builder returns (module, inputs as a dict name -> tensor, output names,
# transformers-optimizer settings or None).


def image(size=64):
    return {"pixel_values": torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(7))}


def tv_classifier(model):
    wrapped = Outputs(model, lambda m, x: (m(x),), [0])
    return wrapped, image(), ["logits"], None


def resnet50():
    """torchvision's ResNet with Bottleneck blocks [3, 4, 6, 3] (ResNet-50's structure, v1.5),
    every stage's width divided by 8 (planes 8, 16, 32, 64; stem 64 as in the original)."""
    from torchvision.models.resnet import Bottleneck, ResNet

    class NarrowResNet(ResNet):
        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            return super()._make_layer(block, planes // 8, blocks, stride, dilate)

    model = NarrowResNet(Bottleneck, [3, 4, 6, 3], num_classes=100)
    model.fc = torch.nn.Linear(512 * Bottleneck.expansion // 8, 100)
    return tv_classifier(model)


def mobilenet_v2():
    from torchvision.models import mobilenet_v2 as build
    return tv_classifier(build(weights=None, width_mult=0.25, num_classes=100))


def mobilenet_v3_small():
    from torchvision.models import mobilenet_v3_small as build
    return tv_classifier(build(weights=None, width_mult=0.5, num_classes=100))


def efficientnet_b0():
    """EfficientNet-B0's stages (MBConv with squeeze-excite, depth multiplier 1) at width 0.25."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    settings, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=1.0)
    return tv_classifier(EfficientNet(settings, 0.2, last_channel=last, num_classes=100))


def tokens(seq=16, vocab=1000, padding=4):
    g = torch.Generator().manual_seed(11)
    ids = torch.randint(0, vocab, (1, seq), generator=g)
    mask = torch.ones(1, seq, dtype=torch.int64)
    if padding:
        mask[0, seq - padding:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def hf(model, impl=None):
    if impl is not None:
        model.config._attn_implementation = impl
        for m in model.modules():
            if hasattr(m, "config"):
                m.config._attn_implementation = impl
    return model


def text_model(model, outputs, optimizer=None):
    call = lambda m, ids, mask: m(input_ids=ids, attention_mask=mask, return_dict=True)  # noqa: E731
    return Outputs(model, call, outputs), tokens(), outputs, optimizer


def bert(impl):
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=256, max_position_embeddings=64)
    model = hf(BertModel(config), impl)
    return text_model(model, ["last_hidden_state", "pooler_output"],
                      {"model_type": "bert", "num_heads": 4, "hidden_size": 64})


def gpt2():
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                        use_cache=False)
    model = hf(GPT2Model(config), "sdpa")
    return text_model(model, ["last_hidden_state"],
                      {"model_type": "gpt2", "num_heads": 4, "hidden_size": 64})


def decoder(config_class, model_class, config=None):
    config = config or config_class(vocab_size=1000, hidden_size=64, intermediate_size=128,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    num_key_value_heads=2, max_position_embeddings=64,
                                    use_cache=False)
    model = hf(model_class(config), "sdpa")
    call = lambda m, ids, mask: m(input_ids=ids, attention_mask=mask, use_cache=False,  # noqa: E731
                                  return_dict=True)
    return Outputs(model, call, ["last_hidden_state"]), tokens(padding=0), \
        ["last_hidden_state"], None


def qwen2():
    from transformers import Qwen2Config, Qwen2Model
    return decoder(Qwen2Config, Qwen2Model)


def llama():
    from transformers import LlamaConfig, LlamaModel
    return decoder(LlamaConfig, LlamaModel)


def phi3():
    """Q/K/V and gate/up each one projection, sliced apart; the rotary embedding written for a
    partial rotation (Concat(rope(x[..., :r]), x[..., r:])) with r the whole head."""
    from transformers import Phi3Config, Phi3Model
    config = Phi3Config(vocab_size=1000, hidden_size=64, intermediate_size=128,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=64, pad_token_id=0, use_cache=False)
    return decoder(Phi3Config, Phi3Model, config)


def opt():
    """Learned positions, pre-norm LayerNorm, ReLU MLP; q_proj's output carries the scale, so
    SDPA runs with scale 1."""
    from transformers import OPTConfig, OPTModel
    config = OPTConfig(vocab_size=1000, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                       num_attention_heads=4, max_position_embeddings=64, word_embed_proj_dim=64,
                       use_cache=False)
    return decoder(OPTConfig, OPTModel, config)


class DecodeStep(torch.nn.Module):
    """A step of generation with a KV cache, as a deployment runs it: the new tokens' ids, the
    mask over the cached and the new tokens, and each layer's past keys and values as plain
    tensors (the cache transformers builds from them inside forward); returns the hidden state and
    each layer's present keys and values (past and new, appended)."""

    def __init__(self, model, layers):
        super().__init__()
        self.model, self.layers = model, layers

    def forward(self, ids, mask, *past):
        from transformers import DynamicCache
        cache = DynamicCache(config=self.model.config)
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True,
                         return_dict=True)
        present = [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
        return (out.last_hidden_state, *present)


def decode_step(model_class, config, kv_heads, settings=None, past=8, new=1, padding=2):
    """One new token after `past` cached ones, the first `padding` of them masked (a left-padded
    batch row): the graph of every generated token but the first. config: 2 layers, hidden 64,
    4 heads, kv_heads of them for keys and values."""
    layers = 2
    model = hf(model_class(config), "sdpa")
    g = torch.Generator().manual_seed(12)
    mask = torch.ones(1, past + new, dtype=torch.int64)
    mask[0, :padding] = 0
    inputs = {"input_ids": torch.randint(0, 1000, (1, new), generator=g), "attention_mask": mask}
    shape = (1, kv_heads, past, 64 // 4)
    outputs = ["last_hidden_state"]
    for i in range(layers):
        for kind in ("key", "value"):
            inputs[f"past_{kind}_{i}"] = torch.randn(shape, generator=g)
            outputs.append(f"present_{kind}_{i}")
    return DecodeStep(model, layers), inputs, outputs, settings


def gqa_decode_step(config_class, model_class):
    config = config_class(vocab_size=1000, hidden_size=64, intermediate_size=128,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=64, use_cache=True)
    return decode_step(model_class, config, kv_heads=2)


def llama_decode():
    from transformers import LlamaConfig, LlamaModel
    return gqa_decode_step(LlamaConfig, LlamaModel)


def qwen2_decode():
    from transformers import Qwen2Config, Qwen2Model
    return gqa_decode_step(Qwen2Config, Qwen2Model)


def gpt2_decode():
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                        use_cache=True)
    return decode_step(GPT2Model, config, kv_heads=4,
                       settings={"model_type": "gpt2", "num_heads": 4, "hidden_size": 64})


def vit():
    from transformers import ViTConfig, ViTModel
    config = ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=128)
    model = hf(ViTModel(config, add_pooling_layer=True), "sdpa")
    call = lambda m, x: m(pixel_values=x, return_dict=True)  # noqa: E731
    names = ["last_hidden_state", "pooler_output"]
    return Outputs(model, call, names), image(32), names, None


def whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    config = WhisperConfig(d_model=64, encoder_layers=2, encoder_attention_heads=4,
                           encoder_ffn_dim=128, num_mel_bins=80, max_source_positions=32)
    model = hf(WhisperEncoder(config), "sdpa")
    call = lambda m, x: m(input_features=x, return_dict=True)  # noqa: E731
    features = torch.randn(1, 80, 64, generator=torch.Generator().manual_seed(13))
    return Outputs(model, call, ["last_hidden_state"]), {"input_features": features}, \
        ["last_hidden_state"], None


def wav2vec2_conformer():
    from transformers import Wav2Vec2ConformerConfig, Wav2Vec2ConformerModel
    config = Wav2Vec2ConformerConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, conv_dim=(32,) * 7,
                                     conv_depthwise_kernel_size=15, vocab_size=32,
                                     # the dynamo exporter cannot decompose the sdpa path (a .view
                                     # of a transposed [1, T, 4, 16]); eager exports with both
                                     attn_implementation="eager")
    model = hf(Wav2Vec2ConformerModel(config))
    call = lambda m, x: m(input_values=x, return_dict=True)  # noqa: E731
    audio = torch.randn(1, 3200, generator=torch.Generator().manual_seed(17))
    return Outputs(model, call, ["last_hidden_state"]), {"input_values": audio}, \
        ["last_hidden_state"], None


def torchaudio_conformer():
    from torchaudio.models import Conformer
    model = Conformer(input_dim=64, num_heads=4, ffn_dim=128, num_layers=2,
                      depthwise_conv_kernel_size=15)
    g = torch.Generator().manual_seed(19)
    inputs = {"features": torch.randn(1, 32, 64, generator=g),
              "lengths": torch.tensor([32], dtype=torch.int64)}
    wrapped = Outputs(model, lambda m, x, n: m(x, n), [0, 1])
    return wrapped, inputs, ["output", "output_lengths"], None


MODELS = {
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_b0": efficientnet_b0,
    "bert_sdpa": lambda: bert("sdpa"),
    "bert_eager": lambda: bert("eager"),
    "gpt2": gpt2,
    "gpt2_decode": gpt2_decode,
    "qwen2": qwen2,
    "llama": llama,
    "phi3": phi3,
    "opt": opt,
    "llama_decode": llama_decode,
    "qwen2_decode": qwen2_decode,
    "vit": vit,
    "whisper_encoder": whisper_encoder,
    "wav2vec2_conformer": wav2vec2_conformer,
    "torchaudio_conformer": torchaudio_conformer,
}

# ---------------------------------------------------------------------------------------------


def counts(path):
    model = onnx.load(path, load_external_data=False)
    ops = [n.op_type for n in model.graph.node]
    return len(ops), sum(op not in VIEWS for op in ops)


def reason(e):
    """The exception's first line and that of its root cause (the exporters wrap the real error
    in their own), without terminal colour codes."""
    def line(x):
        text = (str(x).strip().splitlines() or [""])[0]
        return f"{type(x).__name__}: " + re.sub(r"\x1b\[[0-9;]*m", "", text)
    root = e
    while root.__cause__ is not None:
        root = root.__cause__
    return (line(e) + (f" (cause: {line(root)})" if root is not e else ""))[:400]


def export(module, inputs, outputs, exporter, path):
    args = tuple(inputs.values())
    kwargs = dict(opset_version=EXPORTERS[exporter], input_names=list(inputs),
                  output_names=outputs)
    if exporter == "classic":
        torch.onnx.export(module, args, path, dynamo=False, do_constant_folding=True, **kwargs)
    else:
        program = torch.onnx.export(module, args, dynamo=True, **kwargs)
        program.save(path, external_data=False)
    onnx.checker.check_model(onnx.load(path), full_check=True)


def session(path, level, optimized=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if optimized:
        so.optimized_model_filepath = optimized
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def transformers_count(path, settings):
    from onnxruntime.transformers import optimizer
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.onnx")
        m = optimizer.optimize_model(path, opt_level=0, **settings)
        m.save_model_to_file(out)
        return counts(out)[1]


def generate(name, exporter, module, inputs, outputs, settings, expected):
    base = os.path.join(HERE, f"{name}.{exporter}")
    row = {"model": name, "exporter": exporter, "opset": EXPORTERS[exporter]}
    try:
        export(module, inputs, outputs, exporter, base + ".onnx")
    except Exception as e:  # the table says why; no file is kept
        for ext in (".onnx", ".onnx.data"):
            if os.path.exists(base + ext):
                os.remove(base + ext)
        row["error"] = reason(e)
        traceback.print_exc(file=sys.stderr)
        return row
    size = os.path.getsize(base + ".onnx")
    if size > MAX_BYTES:
        raise SystemExit(f"{base}.onnx is {size} bytes, over {MAX_BYTES}: reduce the model")
    row["bytes"] = size
    row["nodes"], row["kernels"] = counts(base + ".onnx")

    plain = session(base + ".onnx", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    names = [i.name for i in plain.get_inputs()]
    feed = {n: inputs[n].numpy() for n in names}
    results = plain.run(None, feed)
    out_names = [o.name for o in plain.get_outputs()]
    save_file(feed, base + ".in.safetensors")
    save_file({n: np.ascontiguousarray(r) for n, r in zip(out_names, results)},
              base + ".ort.safetensors")
    row["ort_vs_torch"] = float(max(np.max(np.abs(r.astype(np.float64) - e.astype(np.float64)))
                                    for r, e in zip(results, expected)))

    with tempfile.TemporaryDirectory() as tmp:
        optimized = os.path.join(tmp, "all.onnx")
        session(base + ".onnx", ort.GraphOptimizationLevel.ORT_ENABLE_ALL, optimized)
        row["ort_all_kernels"] = counts(optimized)[1]
    if settings:
        try:
            row["ort_transformers_kernels"] = transformers_count(base + ".onnx", settings)
        except Exception as e:  # its passes crash on some exports: the table says so
            row["ort_transformers_error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc(file=sys.stderr)
    return row


def save_table(table):
    with open(COUNTS + ".tmp", "w") as f:
        json.dump(dict(sorted(table.items())), f, indent=1)
        f.write("\n")
    os.replace(COUNTS + ".tmp", COUNTS)


def main():
    torch.set_num_threads(1)
    wanted = sys.argv[1:] or list(MODELS)
    unknown = [w for w in wanted if w not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    table = json.load(open(COUNTS)) if os.path.exists(COUNTS) else {}
    for name in wanted:
        torch.manual_seed(SEED)
        module, inputs, outputs, settings = MODELS[name]()
        randomize_parameters(module).eval()
        with torch.no_grad():
            expected = [t.numpy() for t in module(*inputs.values())]
        for exporter in EXPORTERS:
            row = generate(name, exporter, module, inputs, outputs, settings, expected)
            table[f"{name}.{exporter}"] = row
            save_table(table)  # after each model: a crash later keeps what was measured
            print(json.dumps(row), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
