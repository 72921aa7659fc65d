#!/usr/bin/env bash
# Installs everything fuserule's build and tests need on a fresh Debian 12 machine. Idempotent:
# packages already present are not touched, and apt is only consulted when something is missing.
set -euo pipefail

packages=(
  build-essential cmake re2c lemon            # build
  protobuf-c-compiler libprotobuf-c-dev       # ONNX import/export (C from onnx.proto)
  libonnx-dev libonnx-testdata python3-onnx   # onnx.proto, the ONNX backend node tests, onnx.checker
  libopenblas-dev                             # CPU GEMM and convolution
  python3 python3-venv                        # golden-test runner, model generators
  clang libclang-rt-14-dev                    # libFuzzer and sanitizers
  graphviz                                    # rendering `fuserule dot` output
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime (PyPI) is the oracle of the export tests and the baseline of the benchmarks. It lives
# in a virtual environment that also sees Debian's python3-onnx.
venv=${FUSERULE_VENV:-build/venv}
if ! "$venv/bin/python" -c "import onnxruntime, numpy" 2>/dev/null; then
  echo "setup: installing onnxruntime and numpy into $venv"
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q onnxruntime numpy
fi

# The GPU resource test (tests/gpu/resources.py) reads the CUDA module with cuobjdump. A toolkit
# that ships nvcc without it gets NVIDIA's cuobjdump wheel of the same major version in the venv.
nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ -n "$nvcc" ] && [ ! -x "$(dirname "$nvcc")/cuobjdump" ] && ! command -v cuobjdump >/dev/null &&
   ! compgen -G "$venv/lib/python3*/site-packages/nvidia/*/bin/cuobjdump" >/dev/null; then
  major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  echo "setup: installing nvidia-cuda-cuobjdump $major.x into $venv"
  "$venv/bin/pip" install -q "nvidia-cuda-cuobjdump>=$major,<$((major + 1))"
fi
