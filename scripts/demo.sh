#!/usr/bin/env bash
# The main job on a bundled example: install, build, then fuse a BERT-base encoder layer (written
# the way exporters write it) with the standard rule library, show what changed, and prove on real
# numbers that the fused graph computes what the original did.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
fuserule=${BUILD_DIR:-build}/cli/fuserule
rules=(rules/cnn.rules rules/transformer.rules rules/llm.rules rules/quant.rules)
out=${BUILD_DIR:-build}/demo
mkdir -p "$out"
set -x
"$fuserule" check "${rules[@]}"
"$fuserule" apply -r "${rules[@]}" examples/bert_layer.graph -o "$out/bert_layer.fused.graph"
"$fuserule" stats "$out/bert_layer.fused.graph"
"$fuserule" verify -r "${rules[@]}" examples/bert_layer.graph
"$fuserule" apply -r "${rules[@]}" examples/resnet_block.graph -o "$out/resnet_block.fused.graph"
