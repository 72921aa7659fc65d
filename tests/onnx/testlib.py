"""Helpers shared by the ONNX tests: running fuserule, safetensors files, checks with messages.

The tests run with Debian's /usr/bin/python3 (which has the `onnx` module) or, for the ONNX Runtime
oracle, with any python that has `onnxruntime` and `numpy`; this file needs numpy only.
"""
import json
import os
import subprocess
import sys

import numpy as np

SKIPPED = 77

# safetensors dtype names <-> numpy (bf16 is carried as its uint16 bit pattern)
ST_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I8": np.int8,
             "U8": np.uint8, "I32": np.int32, "I64": np.int64, "BOOL": np.bool_,
             "F64": np.float64, "I16": np.int16, "U32": np.uint32, "U64": np.uint64}


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def run(argv, **kwargs):
    """Runs a command; returns (exit status, stdout, stderr) as text."""
    proc = subprocess.run(argv, capture_output=True, timeout=600, **kwargs)
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"))


def fuserule_ok(binary, *args, cwd=None):
    """Runs `fuserule ARGS...`, which must succeed; returns its stdout."""
    status, out, err = run([binary, *args], cwd=cwd)
    check(status == 0, f"fuserule {' '.join(args)} exited {status}:\n{err}")
    return out


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(body[begin:end], dtype=ST_DTYPES[entry["dtype"]])
        tensors[name] = array.reshape(entry["shape"])
    return tensors


def write_safetensors(path, tensors, bf16=()):
    """tensors by name; those named in bf16 are uint16 arrays of bfloat16 bit patterns."""
    names = {np.dtype(v): k for k, v in ST_DTYPES.items() if k != "BF16"}
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        array = np.require(tensors[name], requirements="C")  # keeps rank 0
        raw = array.tobytes()
        dtype = "BF16" if name in bf16 else names[array.dtype]
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(chunks))


def assert_close(name, got, want, rtol, atol):
    """NaN and infinities first, then |got - want| <= atol + rtol * |want| elementwise."""
    check(got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}")
    got, want = got.astype(np.float64), want.astype(np.float64)
    check(np.array_equal(np.isnan(got), np.isnan(want)), f"{name}: NaNs differ")
    inf = np.isinf(want) | np.isinf(got)
    check(np.array_equal(got[inf], want[inf]), f"{name}: infinities differ")
    finite = ~(inf | np.isnan(want))
    err = np.abs(got - want)[finite]
    bound = (atol + rtol * np.abs(want))[finite]
    if err.size and not np.all(err <= bound):
        i = int(np.argmax(err - bound))
        raise Failure(f"{name}: max error {err.max():.3g} (element {i}: {got[finite][i]:.9g} vs "
                      f"{want[finite][i]:.9g}), allowed {atol} + {rtol} * |expected|")


def main(cases, args):
    """Runs each case(args...) and prints PASS/FAIL lines; exit 1 when any failed."""
    failed = 0
    for case in cases:
        try:
            case(*args)
            print(f"PASS {case.__name__}")
        except Failure as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}")
        except Exception as e:  # a tool or library refusing the case is a failure too
            failed += 1
            print(f"FAIL {case.__name__}: {type(e).__name__}: {e}")
    print(f"{len(cases) - failed} passed, {failed} failed")
    sys.stdout.flush()
    return 1 if failed else 0


# ---- protobuf wire bytes (for files the onnx package would refuse to write) -----------------


def varint(n):
    """n as a protobuf base-128 varint."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def need_onnx():
    """The `onnx` module, or exit 77 (skipped) without it."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("skipped: this python has no `onnx` module (Debian: python3-onnx)")
        sys.exit(SKIPPED)
    return onnx


def tempdir_under(base, name):
    path = os.path.join(base, name)
    os.makedirs(path, exist_ok=True)
    return path


def need_onnxruntime(script):
    """Returns when this python has onnxruntime; otherwise re-runs `script` under
    $FUSERULE_ORT_PYTHON when that is set, and exits 77 (skipped) when it is not."""
    try:
        import onnxruntime  # noqa: F401
        return
    except ImportError:
        pass
    # A venv's python is a link to the system one, so the paths may resolve to the same file: a
    # marker in the environment, not the path, stops a second re-execution.
    other = os.environ.get("FUSERULE_ORT_PYTHON")
    if other and os.path.exists(other) and not os.environ.get("FUSERULE_ORT_REEXEC"):
        os.environ["FUSERULE_ORT_REEXEC"] = "1"
        os.execv(other, [other, os.path.abspath(script), *sys.argv[1:]])
    print("skipped: no python with onnxruntime (pip install onnxruntime numpy, then set "
          "FUSERULE_ORT_PYTHON to that python)")
    sys.exit(SKIPPED)
