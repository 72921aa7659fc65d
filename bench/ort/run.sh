#!/usr/bin/env bash
# fuserule apply against ONNX Runtime's optimizer (bench/README.md, "Against ONNX Runtime").
#
#     bench/ort/run.sh [FUSERULE] [WORK_DIR]      (defaults: build/cli/fuserule, build/bench-ort)
#
# Installs onnxruntime from PyPI into a venv (build/bench-venv, or $FUSERULE_BENCH_VENV; made with
# --system-site-packages so that Debian's python3-onnx and numpy are used), makes the models in
# WORK_DIR (the examples through `fuserule export`, and generated LLaMA- and BERT-style graphs of
# about 50, 10k, 100k and 126k nodes), and prints the comparison table.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fuserule=$(realpath "${1:-$root/build/cli/fuserule}")
work=${2:-$root/build/bench-ort}
venv=${FUSERULE_BENCH_VENV:-$root/build/bench-venv}

if ! "$venv/bin/python" -c "import onnxruntime, sympy" 2>/dev/null; then
    echo "bench: installing onnxruntime into $venv" >&2
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q onnxruntime sympy  # sympy: the transformer optimizer's shape inference
fi
py="$venv/bin/python"
"$py" -c 'import onnxruntime; print("onnxruntime", onnxruntime.__version__)' >&2

mkdir -p "$work/models"
for example in resnet_block bert_layer; do
    "$fuserule" export "$root/examples/$example.graph" -o "$work/models/example_$example.onnx"
done
gen() { [ -f "$work/models/$2.onnx" ] || "$py" "$root/bench/ort/gen_models.py" "$1" "$3" \
                                                 "$work/models/$2.onnx" >&2; }
gen llama llama_0k05 1
gen llama llama_010k 185
gen llama llama_100k 1852
gen llama llama_126k 2333
gen bert bert_0k03 1
gen bert bert_010k 294
gen bert bert_100k 2941
"$py" "$root/bench/ort/compare.py" "$fuserule" "$work/models" --bert-transformer
