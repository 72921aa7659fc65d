#!/usr/bin/env python3
"""composition.py FUSERULE RULES_DIR EXAMPLES_DIR: adding a plausible user rule to the standard
library never makes an example fuse to more kernels (docs/matcher.md, "Phases"). Each user rule
below is loaded after the library; the kernel count of every example with it must be at most the
count with the library alone. Mul > Add is among them: on the Conformer's 0.5 * FFN(x) + x it
took the Mul in round 1, before the library's bias GEMM existed to absorb the scale (24 kernels
instead of 22); the scale now folds in phase 0 while the GEMM is still MatMul > Add
(gemm_bias_scale), before any fusing rule runs (docs/matcher.md, "Phases")."""
import json
import os
import subprocess
import sys
import tempfile

USER_RULES = {
    "add_relu": 'rule user_add_relu: Add(@a, @b) > Relu => ElementwiseChain(@a, @b) {expr = "relu(add(x0, x1))"}',
    "mul_sigmoid": 'rule user_mul_sigmoid: Mul(@a, @b) > Sigmoid => ElementwiseChain(@a, @b) {expr = "sigmoid(mul(x0, x1))"}',
    "matmul_add": "rule user_matmul_add: MatMul(@x, @w:const) > Add(@b:const) => GemmEpilogue(@x, @w, @b) where rank(@b) == 1",
    "add_mul": 'rule user_add_mul: Add(@a, @b) > Mul(@c) => ElementwiseChain(@a, @b, @c) {expr = "mul(add(x0, x1), x2)"}',
    "conv_relu": "rule user_conv_relu: Conv > Relu => FusedConvAct {act = Relu}",
    "mul_add": 'rule user_mul_add: Mul(@a, @b) > Add(@c) => ElementwiseChain(@a, @b, @c) {expr = "add(mul(x0, x1), x2)"}',
}
EXAMPLES = ["resnet_block", "resnet50", "bert_layer", "conformer", "bert_base", "qwen2"]


def kernels(binary, rules, graph):
    out = subprocess.run([binary, "apply", "-r", *rules, graph, "--report", "json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"apply failed on {graph} with {rules[-1]}:\n{out.stderr}")
    return json.loads(out.stdout)["kernels_after"]


def main():
    binary, rules_dir, examples = sys.argv[1:4]
    library = [os.path.join(rules_dir, f) for f in
               ("cnn.rules", "transformer.rules", "llm.rules", "quant.rules")]
    worse = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in EXAMPLES:
            graph = os.path.join(examples, model + ".graph")
            base = kernels(binary, library, graph)
            for name, text in USER_RULES.items():
                path = os.path.join(tmp, name + ".rules")
                with open(path, "w") as f:
                    f.write(text + "\n")
                k = kernels(binary, library + [path], graph)
                print(f"{model:13} + {name:12} kernels {k:4} (library alone {base})")
                if k > base:
                    worse.append(f"{model} + {name}: {k} kernels, {base} with the library alone")
    if worse:
        sys.exit("adding a user rule made the result worse:\n  " + "\n  ".join(worse))


main()
