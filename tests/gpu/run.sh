#!/usr/bin/env bash
# tests/gpu/run.sh [--rehearse] [--build-dir DIR] [RESULTS_DIR]
#
# The one GPU check (docs/cuda.md, "The device run"), sized for one H200: under 8 minutes, every
# step with its own time limit and the whole run with a budget (FUSERULE_GPU_BUDGET seconds, 450
# by default) past which the remaining device steps are skipped and marked so.
#
# Part 1 needs no GPU and runs first, here and in CI (the ctest gpu_rehearsal runs it with
# --rehearse on the build under test), so that a device's minutes are not spent finding a broken
# build or graph:
#   build       configure and build Release (-O3, -Werror) into DIR (default build-gpu), unless
#               --build-dir names a tree that is already built
#   static      gpu_codegen (NVRTC compiles every expression function in every dtype, the
#               supports checks) and gpu_resources (every kernel's registers and shared memory)
#   cases       gpu_kernels without a device: every case is a valid graph the CUDA kernels take,
#               and its CPU half runs
#   apply_*     every example fused for --target cuda with every rule file (the e2e benchmark's
#               input), then `verify --target cuda` up to the device: its only error must be
#               "no CUDA device"
#   bench_check gpu_bench's graphs are valid
# Part 2 needs the device (skipped with --rehearse; a missing device is a failure without it):
#   gpu_kernels every CUDA kernel against the CPU reference op by op, repeated runs and CUDA-graph
#               replay, and whole examples fused on the GPU against unfused on the CPU
#   verify_*    `fuserule verify --target cuda` on every example with every rule file
#   bench_*     memory-bound kernels against the measured copy bandwidth, GEMM epilogues against a
#               plain store, each example unfused against fused end to end
# Everything goes to RESULTS_DIR (default ./gpu-results): one log per step and summary.txt, which
# has the device, every step's verdict and time, the per-case errors and the benchmark tables.
# FUSERULE_GPU_EXAMPLES (names without .graph) limits the examples. Exit status: 0 when every step
# that ran passed, 1 otherwise.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
rehearse=0
build=${FUSERULE_GPU_BUILD:-$root/build-gpu}
prebuilt=0
while [ $# -gt 0 ]; do
    case $1 in
    --rehearse) rehearse=1; shift ;;
    --build-dir) build=$(cd "$2" && pwd); prebuilt=1; shift 2 ;;
    -*) echo "usage: run.sh [--rehearse] [--build-dir DIR] [RESULTS_DIR]" >&2; exit 2 ;;
    *) break ;;
    esac
done
out=$(mkdir -p "${1:-gpu-results}" && cd "${1:-gpu-results}" && pwd)
budget=${FUSERULE_GPU_BUDGET:-450}
jobs=$(nproc 2>/dev/null || echo 4)
summary=$out/summary.txt
: > "$summary"
: > "$out/gpu_kernels.txt"
status=0
examples=()
for ex in "$root"/examples/*.graph; do
    name=$(basename "$ex" .graph)
    if [ -z "${FUSERULE_GPU_EXAMPLES:-}" ] || [[ " $FUSERULE_GPU_EXAMPLES " == *" $name "* ]]; then
        examples+=("$name")
    fi
done

note() { echo "$*" | tee -a "$summary"; }

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit, logs to NAME.log. Device steps
# (device_step) are skipped once the budget is spent.
step() {
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
device_step() {
    if [ $SECONDS -ge "$budget" ]; then
        printf '%-40s SKIPPED (the %ds budget is spent)\n' "$1" "$budget" | tee -a "$summary"
        status=1
        return 1
    fi
    step "$@"
}

# Run by step: `fuserule verify --target cuda` of one example, which in a rehearsal must stop
# exactly at the device (exit 2, "no CUDA device"), or pass where a device is present.
verify_up_to_device='
"$1" verify -r "$2"/rules/*.rules "$2/examples/$3.graph" --target cuda --seed 3 2>&1 | tee "$4"
rc=${PIPESTATUS[0]}
if [ $rc -eq 0 ] && nvidia-smi -L > /dev/null 2>&1; then
    exit 0
fi
if [ $rc -eq 2 ] && grep -q "no CUDA device" "$4"; then
    echo "stopped at the device, as a rehearsal should"
    exit 0
fi
exit $((rc == 0 ? 1 : rc))'

{ nvidia-smi; nvcc --version; } > "$out/device.txt" 2>&1
note "fuserule GPU run, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
note "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo none)"
[ $rehearse -eq 1 ] && note "rehearsal: the steps that need no GPU only"

# ---- part 1: no GPU needed ----
if [ $prebuilt -eq 0 ]; then
    step configure 120 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release || exit 1
    step build 300 cmake --build "$build" -j"$jobs" || exit 1
fi
fuserule=$build/cli/fuserule
# The test programs directly, not through ctest: the rehearsal itself runs inside ctest.
venv_python=$(sed -n 's/^FUSERULE_ORT_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt")
nvcc_dir=$(dirname "$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")")
step static 120 bash -c '"$1/tests/gpu/gpu_codegen" &&
    python3 "$2/tests/gpu/resources.py" "$1/kernels/cuda/libfr_cuda.so" "$2" "$3" "$4"' _ \
    "$build" "$root" "$nvcc_dir" "$venv_python"
# gpu_kernels exits 77 (skipped) without a device once its cases are checked and their CPU halves
# ran; with a device it is run in part 2.
if [ $rehearse -eq 1 ] || ! nvidia-smi -L > /dev/null 2>&1; then
    step cases 300 bash -c '"$1"; rc=$?; [ $rc -eq 77 ] && exit 0; exit $rc' _ \
        "$build/tests/gpu/gpu_kernels"
fi
for name in "${examples[@]}"; do
    step "apply_$name" 120 "$fuserule" apply -r "$root"/rules/*.rules "$root/examples/$name.graph" \
        --target cuda -o "$out/fused_$name.graph"
done
step bench_check 60 bash -c '"$1" kernels; rc=$?; [ $rc -eq 77 ] || [ $rc -eq 0 ] && exit 0; exit $rc' _ \
    "$build/bench/gpu/gpu_bench"

if [ $rehearse -eq 1 ]; then
    for name in "${examples[@]}"; do
        step "verify_$name" 120 bash -c "$verify_up_to_device" _ "$fuserule" "$root" "$name" \
            "$out/verify_$name.out"
    done
    note "rehearsal done: results in $out"
    exit $status
fi

# ---- part 2: the device ----
if ! nvidia-smi -L > /dev/null 2>&1; then
    note "FAILED: no CUDA device (nvidia-smi -L); run with --rehearse to check everything else"
    exit 1
fi
device_step gpu_kernels 240 env FUSERULE_GPU_RESULTS="$out" "$build/tests/gpu/gpu_kernels"
for name in "${examples[@]}"; do
    device_step "verify_$name" 90 "$fuserule" verify -r "$root"/rules/*.rules \
        "$root/examples/$name.graph" --target cuda --seed 3
done
device_step bench_kernels 120 "$build/bench/gpu/gpu_bench" kernels
for name in "${examples[@]}"; do
    [ -f "$out/fused_$name.graph" ] &&
        device_step "bench_e2e_$name" 60 "$build/bench/gpu/gpu_bench" e2e \
            "$root/examples/$name.graph" "$out/fused_$name.graph"
done

{
    echo
    echo "== gpu_kernels: every case, worst errors =="
    cat "$out/gpu_kernels.txt"
    echo
    echo "== benchmarks =="
    cat "$out/bench_kernels.log" 2>/dev/null
    cat "$out"/bench_e2e_*.log 2>/dev/null
} >> "$summary"
note "done in ${SECONDS}s: results in $out"
exit $status
