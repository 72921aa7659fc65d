#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build, run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
