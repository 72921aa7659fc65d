#!/bin/sh
# Builds the fuzz targets (tests/fuzz/fuzz_<name>.c) with clang in their own build folder and runs
# each for SECONDS over its seed corpus (tests/fuzz/seeds/<name>/), keeping what it learns in
# tests/fuzz/corpus-<name>/.
#
#     tests/fuzz/run.sh [SECONDS] [BUILD_DIR] [NAME...]   (defaults: 20, build-fuzz, every target)
#     FUZZ_RUNS=4000 tests/fuzz/run.sh 60 ...             (deterministic: seed 1, 4000 inputs each)
#
# Exit status: 0 when no target crashed, 77 when clang or libFuzzer is not available, else the
# failing target's status (its crashing input is saved in BUILD_DIR as crash-*).
set -eu
seconds=${1:-20}
# FUZZ_RUNS=N (the CI smoke): a fixed seed and N inputs per target instead of a time budget, so
# that the same commit always fuzzes the same inputs and a CI run cannot fail by luck.
runs=""
[ -n "${FUZZ_RUNS:-}" ] && runs="-seed=1 -runs=$FUZZ_RUNS"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-fuzz}
[ $# -gt 2 ] && shift 2 || set --
if [ $# -eq 0 ]; then
    for src in "$root"/tests/fuzz/fuzz_*.c; do
        name=${src##*/fuzz_}
        set -- "$@" "${name%.c}"
    done
fi

command -v clang >/dev/null 2>&1 || { echo "fuzz: clang not found; skipped"; exit 77; }
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    > "$probe/probe.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/probe.c" -o "$probe/probe" 2>/dev/null; then
    echo "fuzz: clang cannot link libFuzzer (install libclang-rt-dev); skipped"
    exit 77
fi

# Every library is instrumented for coverage; only the fuzz targets link libFuzzer's main. The
# targets need no CUDA, so the CUDA backend is left out of this build.
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DFUSERULE_CUDA=OFF \
      -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" \
      >"$build/configure.log" 2>&1 || { tail -n 30 "$build/configure.log"; exit 1; }
for target in "$@"; do
    cmake --build "$build" --target "fuzz_$target" -j2 >"$build/build.log" 2>&1 ||
        { tail -n 30 "$build/build.log"; exit 1; }
    corpus="$root/tests/fuzz/corpus-$target"
    mkdir -p "$corpus" "$root/tests/fuzz/seeds/$target"
    log="$build/fuzz_$target.log"
    echo "fuzz: fuzz_$target for ${seconds}s (log: $log)"
    status=0
    "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" $runs -max_len=8192 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/" \
        "$corpus" "$root/tests/fuzz/seeds/$target" >"$log" 2>&1 || status=$?
    tail -n 12 "$log"
    [ "$status" -eq 0 ] || exit "$status"
done
