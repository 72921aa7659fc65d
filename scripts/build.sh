#!/usr/bin/env bash
# Configures and builds fuserule into build/ (or $BUILD_DIR). Extra arguments go to cmake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
