#!/usr/bin/env python3
"""The static resource check of the CUDA module (docs/cuda.md, "Tests"), run without a device.

    resources.py LIBFR_CUDA_SO SOURCE_DIR [CUDA_BIN_DIR] [VENV_PYTHON]

Reads every kernel's registers and static shared memory from the built module
(`cuobjdump --dump-resource-usage`) and checks them against the launch configuration each kernel
can be given (the LAUNCH table below, whose numbers are read from the kernels' sources):

  - registers x threads per block <= 65,536 (the register file of one SM on sm_90): else the
    launch fails with "too many resources requested";
  - static + dynamic shared memory <= 48 KiB, or, for a kernel that opts in
    (cudaFuncAttributeMaxDynamicSharedMemorySize), <= 227 KiB (sm_90's per-block maximum).

cuobjdump's SHARED includes the 1 KiB that sm_80+ reserves per block for the system once a kernel
uses shared memory; that KiB counts against neither limit and is taken off.

Every kernel of the module must match a row of LAUNCH: a new kernel fails this test until its
launch configuration is written down here. Exit status 0 when every kernel fits, 1 otherwise.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

REGISTERS_PER_SM = 65536
DEFAULT_SHARED = 48 * 1024
OPT_IN_SHARED = 227 * 1024
RESERVED_SHARED = 1024


def constants(source_dir):
    """Integer constants `NAME = a * b` of kernels/cuda/*.cu and *.cuh (enums and constexprs)."""
    found = {}
    for path in glob.glob(os.path.join(source_dir, "kernels", "cuda", "*.cu*")):
        with open(path) as f:
            text = f.read()
        for name, expr in re.findall(r"\b([A-Z][A-Z_0-9]+) = ([0-9](?:[0-9 *]*[0-9])?)\s*[;,}]", text):
            found[name] = eval(expr, {"__builtins__": {}})  # digits, spaces and '*' only
    return found


def launch_table(c):
    """(pattern of the demangled name, most threads per block, most dynamic shared bytes, opted in)
    for every kernel family, from the launch sites in kernels/cuda/."""
    grid = c["KC_THREADS"]  # kc_blocks grid-stride kernels
    row_cache = c["ROW_CACHE_FLOATS"] * 4
    return [
        (r"^bias_act_kernel<", grid, 0, False),
        (r"^broadcast_copy_kernel<", grid, 0, False),
        (r"^qkv_split_kernel<", grid, 0, False),
        (r"^dequant_kernel\(", grid, 0, False),
        (r"^transpose_i8_kernel\(", grid, 0, False),
        (r"^rope_kernel<", grid, 0, False),
        (r"^swiglu_(vec|bcast)_kernel<", grid, 0, False),
        (r"^attention_kernel<", c["ATT_ROWS"] * 32, 0, False),
        # norm.cu: one block per row, up to ROW_MAX_THREADS; the cached variants take the row
        # (up to ROW_CACHE_FLOATS floats) as dynamic shared memory and opt in past 48 KiB.
        (r"^norm_kernel<.*, true>", c["ROW_MAX_THREADS"], row_cache, True),
        (r"^norm_kernel<.*, false>", c["ROW_MAX_THREADS"], 0, False),
        (r"^softmax_kernel<.*, true>", c["ROW_MAX_THREADS"], row_cache, True),
        (r"^softmax_kernel<.*, false>", c["ROW_MAX_THREADS"], 0, False),
        # separable.cu: KC_THREADS threads, the tile sized to SHARED_BYTES of dynamic memory.
        (r"^separable_kernel<", grid, c["SHARED_BYTES"], False),
        # squeeze_excite.cu: one block of KC_THREADS per image, C + R + C floats of dynamic memory.
        (r"^squeeze_excite_kernel<", grid, c["SE_SHARED_BYTES"], False),
        (r"^strided_copy_kernel<", grid, 0, False),
        (r"^reduce_kernel<", grid, 0, False),
        (r"^pool_kernel<", grid, 0, False),
        (r"^cast_kernel\(", grid, 0, False),
        (r"^compare_kernel\(", grid, 0, False),
        (r"^gather_kernel<", grid, 0, False),
        (r"^where_kernel<", grid, 0, False),
        (r"^map_kernel<", grid, 0, False),
        (r"^arg_kernel<", grid, 0, False),
        (r"^cumsum_kernel<", grid, 0, False),
        (r"^gather_elements_kernel<", grid, 0, False),
        (r"^gather_nd_kernel<", grid, 0, False),
        (r"^scatter_nd_kernel<", grid, 0, False),
        (r"^instance_norm_kernel<", grid, 0, False),
        # cuda-b: norm_more.cu and softmax_loss.cu (grid-stride, or one block of NM_THREADS /
        # LS_THREADS per row, group or loss); the others grid-stride (nz_scan_kernel one thread).
        (r"^log_softmax_kernel<", grid, 0, False),
        (r"^log_softmax_row_kernel<", c["LS_THREADS"], 0, False),
        (r"^hardmax_kernel<", grid, 0, False),
        (r"^plane_max_kernel<", grid, 0, False),
        (r"^layer_norm_stats_kernel<", c["NM_THREADS"], 0, False),
        (r"^group_norm_kernel<", c["NM_THREADS"], 0, False),
        (r"^mvn_kernel<", grid, 0, False),
        (r"^lrn_kernel<", grid, 0, False),
        (r"^nll_none_kernel<", grid, 0, False),
        (r"^nll_reduce_kernel<", c["LS_THREADS"], 0, False),
        (r"^convert_kernel<", grid, 0, False),
        (r"^topk_kernel<", grid, 0, False),
        (r"^scatter_plan_kernel<", grid, 0, False),
        (r"^nz_count_kernel<", grid, 0, False),
        (r"^nz_scan_kernel\(", 1, 0, False),
        (r"^nz_write_kernel<", grid, 0, False),
        (r"^resize_pass_kernel<", grid, 0, False),
        (r"^maxpool_indices_kernel<", grid, 0, False),
        (r"^unpool_claim_kernel\(", grid, 0, False),
        (r"^unpool_write_kernel<", grid, 0, False),
        (r"^grid_sample_kernel<", grid, 0, False),
        # cuda-c: quant.cu, linalg.cu and rnn.cu, KC_THREADS per block
        (r"^quantize_kernel\(", grid, 0, False),
        (r"^dequantize_kernel\(", grid, 0, False),
        (r"^range_kernel\(", grid, 0, False),
        (r"^dynamic_quantize_kernel\(", grid, 0, False),
        (r"^int_matmul_kernel<", grid, 0, False),
        (r"^int_conv_kernel<", grid, 0, False),
        (r"^conv_transpose_kernel<", grid, 0, False),
        (r"^det_kernel\(", grid, 0, False),
        (r"^dft_kernel\(", grid, 0, False),
        (r"^einsum_kernel<", grid, 0, False),
        (r"^rnn_kernel\(", grid, 0, False),  # one block of KC_THREADS per (direction, batch)
        # cuda-a: integer.cu and generate.cu, grid-stride loops of KC_THREADS threads
        (r"^int_ew_kernel\(", grid, 0, False),
        (r"^gen_\w+_kernel\(", grid, 0, False),
        # dynq.cu: DynamicQuantizeMatMul's epilogue, a grid-stride loop of KC_THREADS threads
        (r"^dynq_epilogue_kernel\(", grid, 0, False),
        # dropout.cu: BiasDropout, a grid-stride loop of KC_THREADS threads
        (r"^bias_dropout_kernel<", grid, 0, False),
        # qlinear_add.cu: QLinearAdd, a grid-stride loop of KC_THREADS threads
        (r"^qlinear_add_kernel\(", grid, 0, False),
    ]


def find_cuobjdump(cuda_bin, venv_python):
    """The toolkit's cuobjdump, else one on PATH, else the nvidia-cuda-cuobjdump wheel that
    scripts/setup.sh installs into the virtual environment when the toolkit has none."""
    candidates = [os.environ.get("FUSERULE_CUOBJDUMP", "")]
    if cuda_bin:
        candidates.append(os.path.join(cuda_bin, "cuobjdump"))
    candidates.append(shutil.which("cuobjdump") or "")
    if venv_python:
        venv = os.path.dirname(os.path.dirname(venv_python))
        candidates += glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "nvidia",
                                             "*", "bin", "cuobjdump"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None


def kernels(cuobjdump, module):
    """{demangled name: (registers, static shared bytes as cuobjdump reports them)}."""
    out = subprocess.run([cuobjdump, "--dump-resource-usage", module], check=True,
                         capture_output=True, text=True).stdout
    found = {}
    name = None
    for line in out.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+) .*SHARED:(\d+)", line)
        if m and name:
            found[name] = (int(m.group(1)), int(m.group(2)))
            name = None
    names = list(found)
    demangled = subprocess.run(["c++filt"], input="\n".join(names), check=True,
                               capture_output=True, text=True).stdout.splitlines()
    # "void f<...>(args)" -> "f<...>(args)"
    return {re.sub(r"^void ", "", d): found[n] for n, d in zip(names, demangled)}


def main():
    if len(sys.argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    module, source_dir = sys.argv[1], sys.argv[2]
    cuda_bin = sys.argv[3] if len(sys.argv) > 3 else ""
    venv_python = sys.argv[4] if len(sys.argv) > 4 else ""
    tool = find_cuobjdump(cuda_bin, venv_python)
    if not tool:
        print("no cuobjdump: neither the CUDA toolkit nor the virtual environment has one "
              "(scripts/setup.sh installs nvidia-cuda-cuobjdump into it)", file=sys.stderr)
        return 1
    table = launch_table(constants(source_dir))
    found = kernels(tool, module)
    if not found:
        print(f"{module}: cuobjdump lists no kernels", file=sys.stderr)
        return 1
    failures = 0
    for name, (regs, shared) in sorted(found.items()):
        rows = [r for r in table if re.search(r[0], name)]
        if len(rows) != 1:
            print(f"FAIL {name}: {len(rows)} rows of the launch table match it; add one")
            failures += 1
            continue
        _, threads, dynamic, opt_in = rows[0]
        static = shared - RESERVED_SHARED if shared >= RESERVED_SHARED else shared
        limit = OPT_IN_SHARED if opt_in else DEFAULT_SHARED
        problems = []
        if regs * threads > REGISTERS_PER_SM:
            problems.append(f"{regs} registers x {threads} threads = {regs * threads} > "
                            f"{REGISTERS_PER_SM}")
        if static + dynamic > limit:
            problems.append(f"{static} static + {dynamic} dynamic shared bytes > {limit}"
                            + ("" if opt_in else " (no opt-in)"))
        verdict = "FAIL" if problems else "ok  "
        print(f"{verdict} {name}: {regs} regs x {threads} threads, {static} + {dynamic} shared"
              f"{' (opted in)' if opt_in else ''}" + (": " + "; ".join(problems) if problems else ""))
        failures += bool(problems)
    print(f"{len(found)} kernels, {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
