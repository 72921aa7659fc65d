#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build, run every test with ctest (the fuzz
# smoke, tests/fuzz/run.sh, is one of them), build Release with -Werror, then the same suite again
# built with AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer, which must report
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"

# Release (-O3) with -Werror, build only: gcc's optimizer finds warnings (maybe-uninitialized,
# format-truncation) that RelWithDebInfo does not, and tests/gpu/run.sh builds Release on a GPU
# machine, where a build failure would waste its minutes.
BUILD_DIR=${RELEASE_BUILD_DIR:-build-release} ./scripts/build.sh -DCMAKE_BUILD_TYPE=Release

# Sanitizers: any report fails its test (-fno-sanitize-recover, leaks included). The fuzz smoke is
# left out here: its targets are built with the sanitizers anyway and it ran above.
asan=${ASAN_BUILD_DIR:-build-asan}
BUILD_DIR=$asan ./scripts/build.sh -DFUSERULE_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$asan" --output-on-failure -j"$(nproc)" -E '^fuzz/'
