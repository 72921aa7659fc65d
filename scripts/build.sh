#!/usr/bin/env bash
# Configures and builds fuserule into build/ (or $BUILD_DIR). Extra arguments go to cmake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
venv=${FUSERULE_VENV:-build/venv}
ort=()
[ -x "$venv/bin/python" ] && ort=(-DFUSERULE_ORT_PYTHON="$(cd "$venv" && pwd)/bin/python")
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ort[@]}" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
