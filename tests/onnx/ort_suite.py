#!/usr/bin/python3
"""ONNX Runtime's fusion test models (../shared/ort-suite beside the repository, never copied into
it) through `run.py FUSERULE rules`, its summary line printed, then checked:

    ort_suite.py FUSERULE

- every model that fails to import is either one of the invalid models below, refused with a
  message naming its defect (docs/onnx.md lists them), or valid ONNX outside the catalog or the IR
  (an op, an element type, a form of a contrib op such as a KV cache: "outside the catalog",
  "does not hold", "outside what the catalog's ... expresses"), which is reported and counted,
  not failed: the catalog grows elsewhere;
- every invalid model below is refused, with its message;
- no wrong fusion, other than the known ones below (each with its cause); one that no longer
  happens is reported so that it leaves the list.

Skipped (77) without ../shared/ort-suite or without numpy (run.py needs it).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITE = os.path.join(os.path.dirname(ROOT), "shared", "ort-suite")

# Models outside the ONNX spec: (file name, what the message must say).
INVALID = [
    ("matmul_integer_to_float_large_tensor.onnx", "has no outputs"),
    ("bias_softmax_fusion_allleadingones.onnx", "has rank 9"),
    ("bias_softmax_fusion_middleones.onnx", "has rank 9"),
    ("bias_softmax_fusion_middleones_badaxis.onnx", "has rank 9"),
    ("bias_softmax_fusion_middleones_reversed.onnx", "has rank 9"),
    ("bias_softmax_fusion_noleadingones.onnx", "has rank 9"),
    ("bias_softmax_fusion_someleadingones.onnx", "has rank 9"),
    ("embed_layer_norm_format8.onnx", "has a negative dim -1"),
    ("embed_layer_norm_format8_opset13.onnx", "has a negative dim -1"),
    ("embed_layer_norm_format9.onnx", "has a negative dim -1"),
    ("embed_layer_norm_format9_opset13.onnx", "has a negative dim -1"),
    ("fuse-conv-bn-mul-add-unsqueeze.onnx", "'fused_result' is listed as an output twice"),
    ("fuse-conv-bn-mul-add-unsqueeze.negative_axes.onnx",
     "'fused_result' is listed as an output twice"),
    ("fuse-matmul-bn-directly-dont-fuse.onnx", "scale has 5 values but the input has 1 channels"),
    ("fuse-matmul-bn-only-reshape.onnx", "scale has 5 values but the input has 1 channels"),
    ("fuse-matmul-bn-only-transpose.onnx", "scale has 5 values but the input has 1 channels"),
] + [(name + ".onnx", "attribute 'epsion' is not one of LayerNormalization's (a misspelling "
         "of 'epsilon'?)") for name in [
    "attention_distilbert", "attention_mask_no_cast", "skip_layer_norm_no_beta",
    "skip_layer_norm_no_beta_with_cast", "gpt2_attention_add_opt_no_skiplayernorm",
    "gpt2_attention_opt_no_skiplayernorm", "embed_layer_norm_multiple",
    "embed_layer_norm_multiple_opset13", "embed_layer_norm_format3_no_cast",
    "embed_layer_norm_format3_no_cast_opset13"] + [
    f"embed_layer_norm_format{k}{v}" for k in (3, 5, 6, 7) for v in ("", "_opset13")]] + [
    ("gpt2_past.onnx", "value '284' is defined twice"),
    # com.microsoft Attention with num_heads 12 over a hidden size of 3
    ("embed_layer_norm_format1.onnx", "do not split into 12 heads"),
    ("embed_layer_norm_format2.onnx", "do not split into 12 heads"),
    ("embed_layer_norm_format4.onnx", "do not split into 12 heads"),
]

# Valid models whose refusal names a form the catalog's op cannot express (not an unknown op).
UNEXPRESSED = [
    ("transpose_matmul_trans_batch_fusion3.onnx", "attributes outside what the catalog's"),
    ("transpose_matmul_trans_batch_fusion_invalid_case3.onnx",
     "attributes outside what the catalog's"),
    ("matmul_scale_transposescalematmul_in0_in1_out.onnx", "GemmEpilogue: input"),
]

# Wrong fusions known today, with their cause (not import's): (file name, cause).
KNOWN_WRONG = [
]

OUTSIDE = re.compile(r"outside (what )?the catalog|does not hold|outside the IR")


def main(binary):
    if not os.path.isdir(SUITE):
        print(f"skipped: no ort-suite at {SUITE}")
        return 77
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("skipped: run.py needs numpy")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        proc = subprocess.run([sys.executable, os.path.join(SUITE, "run.py"), binary,
                               os.path.join(ROOT, "rules"), "--work", tmp, "--json", out],
                              capture_output=True, text=True, timeout=1800)
        lines = proc.stdout.strip().splitlines()
        if not lines or not lines[-1].startswith("ort-suite:") or not os.path.exists(out):
            print(proc.stdout + proc.stderr)
            print("FAIL run.py did not finish")
            return 1
        print(lines[-1])
        results = json.load(open(out))
    failures, outside, fixed = [], {}, []
    by_name = {os.path.basename(r["path"]): r for r in results}
    expected = {name: ("invalid", want) for name, want in INVALID}
    expected.update({name: ("unexpressed", want) for name, want in UNEXPRESSED})
    known_wrong = dict(KNOWN_WRONG)
    for name, (kind, want) in expected.items():
        r = by_name.get(name)
        if r is None:
            failures.append(f"{name}: not in the suite's manifest")
        elif r["class"] != "import failure":
            failures.append(f"{name} ({kind}) imports; expected the refusal '{want}'")
        elif want not in r["why"]:
            failures.append(f"{name} ({kind}): refused with '{r['why']}', expected '{want}'")
    for r in results:
        name = os.path.basename(r["path"])
        if r["class"] == "import failure" and name not in expected:
            if OUTSIDE.search(r["why"]):
                outside[name] = r["why"]
            else:
                failures.append(f"{name}: import failed: {r['why']}")
        if r["class"] == "wrong fusion" and name not in known_wrong:
            failures.append(f"{name}: wrong fusion: {r['why']}")
        if name in known_wrong and r["class"] != "wrong fusion":
            fixed.append(name)
    print(f"{len(INVALID)} invalid models refused naming the defect, {len(UNEXPRESSED)} valid "
          f"forms the catalog's ops cannot express, {len(outside)} models outside the catalog "
          f"or the IR:")
    for name, why in sorted(outside.items()):
        print(f"  {name}: {why}")
    for name in fixed:
        print(f"NOTE {name} is no longer a wrong fusion: remove it from KNOWN_WRONG")
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
