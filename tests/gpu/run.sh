#!/usr/bin/env bash
# tests/gpu/run.sh [RESULTS_DIR]
#
# The one GPU check, for a machine with an NVIDIA GPU (sized for one H200: under 8 minutes).
# It builds fuserule with the CUDA backend (Release), then
#   1. runs every GPU test: each CUDA kernel against the CPU reference op by op (odd sizes,
#      broadcasts, f32/f16/bf16/int8, NaN/Inf compared first, a tolerance per case, guard bytes
#      around every device buffer), and the code generator / supports tests;
#   2. verifies every example against every rule file with `fuserule verify --target cuda`
#      (the fused graph on the GPU against the unfused graph on the CPU reference);
#   3. runs the GPU benchmarks (bench/gpu/gpu_bench): memory-bound kernels against the device copy
#      bandwidth, GEMM epilogues against a plain store, fused against unfused end to end.
# Everything is written to RESULTS_DIR (default ./gpu-results); summary.txt says what passed.
# Exit status: 0 when every step passed, 1 otherwise.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-gpu-results}" && cd "${1:-gpu-results}" && pwd)
build=${FUSERULE_GPU_BUILD:-$root/build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
summary=$out/summary.txt
: > "$summary"
: > "$out/gpu_kernels.txt"
status=0

step() { # step NAME SECONDS COMMAND...: runs COMMAND with a time limit, logs to NAME.log
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    local verdict=ok
    [ $rc -eq 0 ] || { verdict="FAILED (exit $rc)"; status=1; }
    [ $rc -eq 124 ] && verdict="TIMED OUT after ${limit}s"
    printf '%-40s %s (%ds)\n' "$name" "$verdict" $((SECONDS - start)) | tee -a "$summary"
    return $rc
}

{ nvidia-smi; nvcc --version; } > "$out/device.txt" 2>&1

step configure 120 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release || { cat "$summary"; exit 1; }
step build 300 cmake --build "$build" -j"$jobs" || { cat "$summary"; exit 1; }
fuserule=$build/cli/fuserule

# 1. op by op. A skipped gpu_kernels (no device found) is a failure here.
step gpu_tests 120 env FUSERULE_GPU_RESULTS="$out" ctest --test-dir "$build" -L gpu --output-on-failure
if grep -q "Skipped" "$out/gpu_tests.log"; then
    echo "gpu_tests                                FAILED: skipped, no CUDA device was found" | tee -a "$summary"
    status=1
fi

# 2. whole examples, fused on the GPU against unfused on the CPU.
for ex in "$root"/examples/*.graph; do
    name=$(basename "$ex" .graph)
    step "verify_$name" 120 "$fuserule" verify -r "$root"/rules/*.rules "$ex" --target cuda --seed 3
    "$fuserule" apply -r "$root"/rules/*.rules "$ex" --target cuda -o "$out/fused_$name.graph" \
        > "$out/apply_$name.log" 2>&1
done

# 3. benchmarks.
step bench_kernels 180 "$build/bench/gpu/gpu_bench" kernels
for ex in "$root"/examples/*.graph; do
    name=$(basename "$ex" .graph)
    [ -f "$out/fused_$name.graph" ] &&
        step "bench_e2e_$name" 120 "$build/bench/gpu/gpu_bench" e2e "$ex" "$out/fused_$name.graph"
done

echo "results in $out" | tee -a "$summary"
exit $status
