#!/usr/bin/env python3
"""A survey beyond the committed corpus: more architectures built from their config classes
(transformers, torchvision; seeded random weights, widths and depths reduced as in generate.py),
exported by both torch exporters into a scratch folder, and each taken through `fuserule verify`
with the whole rule library, then the fused graph run against ONNX Runtime's outputs on the same
inputs. One line per model and exporter: kernels before and after, verify's verdict, and the
largest difference from ONNX Runtime relative to the output's magnitude. Nothing it writes is
committed; a model worth keeping goes into generate.py and the corpus.

Run by hand in generate.py's venv, from the folder to write into:

    cd /tmp/survey && HF_HUB_OFFLINE=1 /work/venv-torch/bin/python \
        /work/main/examples/real/survey.py FUSERULE [MODEL...]

The eighth session's run (2026-12-05, transformers 5.25, torch 2.15): every export imported and
verified and matched ONNX Runtime within 1e-6 relative (torch could not export Swin and the T5
encoder with dynamo); examples/README.md names what it found.
"""
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import generate as G  # noqa: E402
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

F = None  # the fuserule binary (argv[1])
R = [a for r in sorted(glob.glob(os.path.join(ROOT, "rules", "*.rules"))) for a in ("-r", r)]

SMALL = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, max_position_embeddings=64)


def text(model_class, config, impl=None, padding=4):
    """A text model on 16 tokens, the last `padding` of them masked."""
    model = G.hf(model_class(config), impl)
    call = lambda m, ids, mask: m(input_ids=ids, attention_mask=mask, return_dict=True)  # noqa
    outputs = ["last_hidden_state"]
    return G.Outputs(model, call, outputs), G.tokens(padding=padding), outputs


def decoder(name, impl="sdpa", **extra):
    """A transformers decoder (NameConfig, NameModel) of SMALL's size, no padding."""
    import transformers
    config = getattr(transformers, name + "Config")(**SMALL, **extra)
    return text(getattr(transformers, name + "Model"), config, impl, padding=0)


def image(model_class, config, size=64):
    model = model_class(config)
    call = lambda m, px: m(pixel_values=px, return_dict=True)  # noqa: E731
    return G.Outputs(model, call, ["last_hidden_state"]), G.image(size), ["last_hidden_state"]


def tv(make):
    """A torchvision classifier of 10 classes."""
    return G.tv_classifier(make(num_classes=10))[:3]


def models():
    import torchvision.models as tvm
    import transformers as T
    return {
        "gemma": lambda: decoder("Gemma", num_key_value_heads=2, head_dim=16),
        "gemma2": lambda: decoder("Gemma2", "eager", num_key_value_heads=2, head_dim=16),
        "mistral": lambda: decoder("Mistral", num_key_value_heads=2),
        "phi3": lambda: decoder("Phi3", num_key_value_heads=2, pad_token_id=0),
        "phi": lambda: decoder("Phi"),
        "stablelm": lambda: decoder("StableLm", num_key_value_heads=2),
        "gptneox": lambda: decoder("GPTNeoX"),
        "opt": lambda: text(T.OPTModel, T.OPTConfig(
            vocab_size=1000, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64, word_embed_proj_dim=64),
            "sdpa", padding=0),
        "bloom": lambda: text(T.BloomModel, T.BloomConfig(
            vocab_size=1000, hidden_size=64, n_layer=2, n_head=4), padding=0),
        "falcon": lambda: text(T.FalconModel, T.FalconConfig(
            vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4),
            "sdpa", padding=0),
        "roberta": lambda: text(T.RobertaModel, T.RobertaConfig(**SMALL), "sdpa"),
        "distilbert": lambda: text(T.DistilBertModel, T.DistilBertConfig(
            vocab_size=1000, dim=64, hidden_dim=128, n_layers=2, n_heads=4,
            max_position_embeddings=64), "sdpa"),
        "albert": lambda: text(T.AlbertModel, T.AlbertConfig(**SMALL, embedding_size=32)),
        "electra": lambda: text(T.ElectraModel, T.ElectraConfig(**SMALL, embedding_size=64)),
        "deberta_v2": lambda: text(T.DebertaV2Model, T.DebertaV2Config(**SMALL)),
        "t5_encoder": lambda: text(T.T5EncoderModel, T.T5Config(
            vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)),
        "convnext": lambda: image(T.ConvNextModel, T.ConvNextConfig(
            hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 2, 1])),
        "swin": lambda: image(T.SwinModel, T.SwinConfig(
            image_size=64, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
            window_size=4)),
        "segformer": lambda: image(T.SegformerModel, T.SegformerConfig(
            hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 2, 4],
            decoder_hidden_size=64)),
        "clip_vision": lambda: image(T.CLIPVisionModel, T.CLIPVisionConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            image_size=32, patch_size=8), size=32),
        "dinov2": lambda: image(T.Dinov2Model, T.Dinov2Config(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2, image_size=32,
            patch_size=8), size=32),
        "tv_convnext_tiny": lambda: tv(tvm.convnext_tiny),
        "tv_swin_t": lambda: tv(tvm.swin_t),
        "tv_regnet": lambda: tv(tvm.regnet_y_400mf),
        "tv_densenet": lambda: tv(tvm.densenet121),
        "tv_shufflenet": lambda: tv(tvm.shufflenet_v2_x0_5),
        "tv_squeezenet": lambda: tv(tvm.squeezenet1_1),
        "tv_mnasnet": lambda: tv(tvm.mnasnet0_5),
        "tv_googlenet": lambda: tv(lambda num_classes: tvm.googlenet(
            num_classes=num_classes, aux_logits=False, init_weights=True)),
        "tv_vit_b16": lambda: tv(lambda num_classes: tvm.VisionTransformer(
            image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
            num_classes=num_classes)),
    }


def sh(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def largest_difference(want, path):
    """The largest |fused - ORT| over every output, relative to that output's largest magnitude."""
    got = load_file(path)
    worst = 0.0
    for name, v in want.items():
        scale = max(1e-6, float(np.max(np.abs(v))))
        worst = max(worst, float(np.max(np.abs(got[name].astype(np.float64) - v))) / scale)
    return worst


def survey(name, make, exporter):
    torch.manual_seed(0)
    module, inputs, outputs = make()
    G.randomize_parameters(module).eval()
    base = f"{name}.{exporter}"
    G.export(module, inputs, outputs, exporter, base + ".onnx")
    session = G.session(base + ".onnx", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    feed = {i.name: inputs[i.name].numpy() for i in session.get_inputs()}
    save_file(feed, base + ".in.safetensors")
    want = {o.name: r for o, r in zip(session.get_outputs(), session.run(None, feed))}
    rc, out, err = sh([F, "verify", *R, base + ".onnx", "--inputs", base + ".in.safetensors"])
    if rc not in (0, 1):
        return f"verify exit {rc}: {(err.strip() or out).splitlines()[0]}"
    lines = out.splitlines()
    fused = next((line for line in lines if line.startswith("fused:")), "?")
    verdict = next((line for line in lines if line.startswith("verify:")), "?")
    rc, _, err = sh([F, "apply", *R, base + ".onnx", "-o", base + ".graph"])
    if rc == 0:
        rc, _, err = sh([F, "run", base + ".graph", "--inputs", base + ".in.safetensors",
                         "-o", base + ".out.safetensors"])
    if rc != 0:
        return f"apply or run exit {rc}: {err[:300]}"
    worst = largest_difference(want, base + ".out.safetensors")
    return f"{fused} | {verdict[:60]} | vs ORT rel {worst:.2e}"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    F = os.path.abspath(sys.argv[1])
    known = models()
    for name in sys.argv[2:] or list(known):
        for exporter in G.EXPORTERS:
            try:
                result = survey(name, known[name], exporter)
            except Exception as e:  # an exporter's failure is a line of the survey too
                result = "export failed: " + G.reason(e)[:200]
            print(f"{name:18s} {exporter:8s} {result}", flush=True)
