#!/usr/bin/python3
"""The hostile-input corpus: broken, lying, huge and adversarial inputs to every command that reads
a file. Each case names the command, the exit status it must end with, a substring of the message
it must print, and the time and memory it may take. A case that must fail (exit 2) must also leave
nothing behind: no output file, no temporary file. A case that succeeds may add a check of its
result.

    hostile.py FUSERULE --list          the case names, one a line (CMake makes one test each)
    hostile.py FUSERULE CASE...         run these cases; exit 0 when all pass

Inputs are the small files in inputs/ (graphs whose bytes say what is wrong with them) or are
made at run time (large, binary or generated inputs) in a fresh temporary folder, where every
command runs. The limits are enforced on the child: `timeout`-style wall clock, and an address
space limit (`ulimit -v`); in sanitizer builds (FUSERULE_SANITIZE=1 in the environment), where
AddressSanitizer reserves terabytes of address space, the memory bound is its hard_rss_limit_mb.
The ONNX importer has its own hostile suite (tests/onnx/test_hostile.py); the cases here are the
ones that cross modules.
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INPUTS = os.path.join(HERE, "inputs")
SANITIZED = os.environ.get("FUSERULE_SANITIZE") == "1"
CNN_RULES = os.path.join(ROOT, "rules", "cnn.rules")


class Case:
    def __init__(self, name, args, exit, message, *, make=None, seconds=20, megabytes=1024,
                 check=None, stream="stderr", heavy=False):
        self.name, self.args, self.exit, self.message = name, args, exit, message
        self.make, self.seconds, self.megabytes = make, seconds, megabytes
        self.check, self.stream = check, stream
        # A heavy case measures speed on a huge input; sanitizer builds, several times slower,
        # skip it (the same input's front end still runs there in a lighter case).
        self.heavy = heavy


# ---- inputs made at run time ------------------------------------------------------------------


class Skip(Exception):
    """The case cannot be made on this machine (exit 77)."""


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy_input(name):
    return lambda d: shutil.copy(os.path.join(INPUTS, name), d)


RELU_GRAPH = "graph g {\n  input x : f32[2]\n  y = Relu(x)\n  output y\n}\n"


def make_deep_attribute(d):
    depth = 100000
    write(f"{d}/deep.graph", "graph g {\n  input x : f32[2]\n  y = Relu(x) {a=" + "[" * depth +
          "]" * depth + "}\n  output y\n}\n")


def make_deep_rule(d):
    depth = 100000
    write(f"{d}/deep.rules", "rule deep: " + "Relu(" * depth + "@x" + ")" * depth + " => @x\n")


def make_many_rules(d):
    """100,000 rules, each a real chain; the text is about 6 MB."""
    acts = ["Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "Gelu", "HardSigmoid", "HardSwish"]
    lines = [f"rule r{i}: Conv > {acts[i % 8]} => FusedConvAct {{act = {acts[i % 8]}}}"
             for i in range(100000)]
    write(f"{d}/many.rules", "\n".join(lines) + "\n")


def make_nul_graph(d):
    write(f"{d}/nul.graph", b"graph g {\n  input x : f32[2]\n  y = Re\0lu(x)\n  output y\n}\n")


def make_truncated_graph(d):
    text = open(os.path.join(ROOT, "examples", "resnet_block.graph"), "rb").read()
    write(f"{d}/truncated.graph", text[: len(text) * 2 // 3])


# A value's out_index is 16 bits: a line naming 65,536 results is refused at the 65,536th.
MANY_RESULTS = [f"o{i}" for i in range(65536)]
MANY_RESULTS_COLUMN = 3 + len(", ".join(MANY_RESULTS[:65535]) + ", ")


def make_many_results(d):
    write(f"{d}/results.graph", "graph g {\n  input x : f32[65536]\n  " +
          ", ".join(MANY_RESULTS) + " = Split(x)\n  output o0\n}\n")


# A node's kernel is a 16-bit index into its graph's table of names: a text may name 64,000
# distinct kernels (the rest of the table is kept for the ones a rewrite binds), and is refused at
# the first name past them.
TEXT_KERNELS = 64000
MANY_KERNELS_COLUMN = 3 + len(f"k{TEXT_KERNELS} = Relu(x) ")


def make_kernels_graph(d, count):
    """count Relu nodes, each bound to a kernel of its own, and a Conv > Relu that cnn.rules fuses
    (binding the registry's kernel on top of the text's)."""
    write(f"{d}/kernels.graph", "\n".join(
        ["graph g {", "  input x : f32[1,4,8,8]", "  const w : f32[4,4,3,3] = random(seed=1)"] +
        [f"  k{i} = Relu(x) @k{i}" for i in range(count)] +
        ["  c = Conv(x, w) {pads=[1,1,1,1]}", "  y = Relu(c)", "  output y", "  output k0", "}"])
        + "\n")


def fused_beside_text_kernels(d, out):
    text = open(os.path.join(d, "out.graph")).read()
    if "@cpu.FusedConvAct" not in text or "@k0" not in text:
        return "the fused node or the text's kernel is missing from out.graph"
    return loads("out.graph")(d, out)


def make_binary_graph(d):
    write(f"{d}/binary.graph", bytes(range(256)) * 64)


def make_long_chain(d):
    """A 100,000-node chain of elementwise ops: the loaders and passes must stay linear."""
    lines = ["graph chain {", "  input  x0 : f32[1,16]"]
    ops = ["Relu", "Sigmoid", "Tanh", "Neg"]
    lines += [f"  x{i + 1} = {ops[i % 4]}(x{i})" for i in range(100000)]
    lines += ["  output x100000", "}"]
    write(f"{d}/chain.graph", "\n".join(lines) + "\n")


def safetensors_bytes(header, data=b"", header_len=None):
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(raw) if header_len is None else header_len) + raw + data


def graph_reading(d, st_bytes, shape="[4]"):
    """A graph whose constant w comes from weights.safetensors (holding `st_bytes`)."""
    write(f"{d}/weights.safetensors", st_bytes)
    write(f"{d}/g.graph", "graph g {\n  input x : f32" + shape + "\n"
          "  const w : f32" + shape + " = file(\"weights.safetensors\", \"w\")\n"
          "  y = Add(x, w)\n  output y\n}\n")


def tensor(begin, end, shape=(4,), dtype="F32"):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}


def make_st_header_lies(d):
    graph_reading(d, safetensors_bytes({"w": tensor(0, 16)}, bytes(16), header_len=1 << 40))


def make_st_header_too_big(d):
    graph_reading(d, safetensors_bytes({"w": tensor(0, 16)}, bytes(16), header_len=200_000_000))


def make_st_overlap(d):
    graph_reading(d, safetensors_bytes({"w": tensor(0, 16), "v": tensor(8, 24)}, bytes(24)))


def make_st_gap(d):
    graph_reading(d, safetensors_bytes({"w": tensor(0, 16), "v": tensor(20, 36)}, bytes(36)))


def make_st_duplicate_key(d):
    raw = b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},' \
          b'"w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}}'
    graph_reading(d, struct.pack("<Q", len(raw)) + raw + bytes(32))


def make_st_shape_overflow(d):
    graph_reading(d, safetensors_bytes(
        {"w": tensor(0, 16, shape=(4294967296, 4294967296, 4))}, bytes(16)))


def make_st_truncated(d):
    whole = safetensors_bytes({"w": tensor(0, 16)}, bytes(16))
    graph_reading(d, whole[:-5])


def make_st_wrong_size(d):
    graph_reading(d, safetensors_bytes({"w": tensor(0, 12)}, bytes(12)))


def make_onnx_external_escape(d):
    """An initializer whose external data lives in ../secret.bin, outside the model's folder."""
    try:
        from onnx import TensorProto, helper
    except ImportError:
        raise Skip("the python onnx module is missing")
    os.makedirs(f"{d}/model")
    write(f"{d}/secret.bin", bytes(16))
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4],
                    data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "../secret.bin"), ("offset", "0"), ("length", "16")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "escape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    write(f"{d}/model/escape.onnx", model.SerializeToString())


def make_onnx_truncated(d):
    subprocess.run([FUSERULE, "export", os.path.join(ROOT, "examples", "resnet_block.graph"),
                    "-o", f"{d}/whole.onnx"], check=True)
    data = open(f"{d}/whole.onnx", "rb").read()
    write(f"{d}/truncated.onnx", data[: len(data) // 2])
    os.unlink(f"{d}/whole.onnx")


def make_same_path(d):
    shutil.copy(os.path.join(ROOT, "examples", "resnet_block.graph"), f"{d}/g.graph")


def make_same_path_onnx(d):
    subprocess.run([FUSERULE, "export", os.path.join(ROOT, "examples", "resnet_block.graph"),
                    "-o", f"{d}/m.onnx"], check=True)


# ---- checks of successful results ----------------------------------------------------------


def loads(path):
    """The file is a valid graph (fuserule fmt accepts it)."""
    def check(d, out):
        r = subprocess.run([FUSERULE, "fmt", os.path.join(d, path)], capture_output=True)
        return r.returncode == 0 or f"{path} does not load: {r.stderr.decode()[:400]}"
    return check


def f16_values(st_path):
    """Every f16 value in a safetensors file."""
    data = open(st_path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8: 8 + n])
    values = []
    for name, t in header.items():
        if name != "__metadata__" and t["dtype"] == "F16":
            begin, end = t["data_offsets"]
            chunk = data[8 + n + begin: 8 + n + end]
            values += struct.unpack(f"<{len(chunk) // 2}e", chunk)
    return values


def finite_f16_weights(d, out):
    ok = loads("out.graph")(d, out)
    if ok is not True:
        return ok
    st = os.path.join(d, "out.safetensors")
    if os.path.exists(st) and any(v != v or abs(v) == float("inf") for v in f16_values(st)):
        return "the fused weights hold inf or NaN"
    return True


def not_fused(op):
    def check(d, out):
        text = open(os.path.join(d, "out.graph")).read()
        return f"= {op}(" not in text or f"{op} was fused although it must not be"
    return check


def in_place(d, out):
    """Applying over the input leaves a complete fused graph that still loads."""
    text = open(f"{d}/g.graph").read()
    if "FusedConvAct" not in text:
        return "g.graph was not replaced by the fused graph"
    return loads("g.graph")(d, out)


def model_intact(d, out):
    data = open(f"{d}/m.onnx", "rb").read()
    return not data.startswith(b"graph") or "the ONNX model was overwritten with text"


# ---- the corpus ------------------------------------------------------------------------------

G = "fuserule"
APPLY_CNN = [G, "apply", "-r", CNN_RULES]
CASES = [
    # graph structure
    Case("cycle", [G, "fmt", "cycle.graph"], 2, "cycle in the graph: a -> b -> a",
         make=copy_input("cycle.graph")),
    Case("dangling_reference", [G, "fmt", "dangling.graph"], 2, "undefined value 'z'",
         make=copy_input("dangling.graph")),
    Case("dangling_output", [G, "fmt", "dangling_output.graph"], 2, "undefined value 'w'",
         make=copy_input("dangling_output.graph")),
    Case("duplicate_name", [G, "fmt", "duplicate.graph"], 2, "duplicate definition of 'x'",
         make=copy_input("duplicate.graph")),
    Case("dims_overflow", [G, "fmt", "dims_overflow.graph"], 2, "too many elements",
         make=copy_input("dims_overflow.graph")),
    Case("dims_negative", [G, "fmt", "dims_negative.graph"], 2, "a dim is a size",
         make=copy_input("dims_negative.graph")),
    Case("dims_huge_constant_run", [G, "run", "dims_huge_const.graph"], 2, "dims_huge_const.graph:",
         make=copy_input("dims_huge_const.graph"), megabytes=512),
    Case("residual_stride2", APPLY_CNN + ["residual_stride2.graph", "-o", "out.graph"], 2,
         "do not broadcast", make=copy_input("residual_stride2.graph")),
    # text that is not a graph
    Case("nul_byte", [G, "fmt", "nul.graph"], 2, "NUL byte", make=make_nul_graph),
    Case("too_many_results", [G, "fmt", "results.graph"], 2,
         f"results.graph:3:{MANY_RESULTS_COLUMN}: error: too many results: a node has at most "
         "65535 outputs, this line names 65536", make=make_many_results),
    Case("too_many_kernels", [G, "fmt", "kernels.graph"], 2,
         f"kernels.graph:{TEXT_KERNELS + 4}:{MANY_KERNELS_COLUMN}: error: too many distinct kernel "
         f"names: a graph's text names at most {TEXT_KERNELS}",
         make=lambda d: make_kernels_graph(d, TEXT_KERNELS + 1)),
    Case("kernels_at_limit_apply", APPLY_CNN + ["kernels.graph", "-o", "out.graph"], 0, "",
         make=lambda d: make_kernels_graph(d, TEXT_KERNELS), check=fused_beside_text_kernels),
    Case("truncated_graph", [G, "fmt", "truncated.graph"], 2, "truncated.graph:",
         make=make_truncated_graph),
    # binary bytes go to the ONNX reader (by their first byte), never echoed as text
    Case("binary_graph", [G, "fmt", "binary.graph"], 2,
         "binary.graph: error: truncated or corrupt protobuf", make=make_binary_graph),
    Case("deep_nesting_graph", [G, "fmt", "deep.graph"], 2, "nesting too deep",
         make=make_deep_attribute),
    # the rules language
    Case("deep_nesting_rules", [G, "check", "deep.rules"], 2, "deep.rules:1:",
         make=make_deep_rule),
    Case("rules_100k", [G, "check", "many.rules"], 0, "many.rules: 100000 rules",
         make=make_many_rules, seconds=60, megabytes=2048, stream="stdout"),
    Case("rules_100k_apply", [G, "apply", "-r", "many.rules", "g.graph", "-o", "out.graph"], 0, "",
         make=lambda d: (make_many_rules(d), make_same_path(d)), seconds=90, megabytes=2048,
         check=loads("out.graph"), heavy=True),
    # numerics that a fusion must respect
    Case("zero_variance_bn", APPLY_CNN + ["zero_variance_bn.graph", "-o", "out.graph",
                                          "--report", "json"], 0, "var + epsilon",
         make=copy_input("zero_variance_bn.graph"), stream="stdout", check=loads("out.graph")),
    Case("nan_weights", APPLY_CNN + ["nan_weights.graph", "-o", "out.graph"], 0, "",
         make=copy_input("nan_weights.graph"), check=loads("out.graph")),
    Case("fp16_fold_overflow", APPLY_CNN + ["fp16_fold_overflow.graph", "-o", "out.graph"], 0, "",
         make=copy_input("fp16_fold_overflow.graph"), check=finite_f16_weights),
    Case("residual_mismatch", APPLY_CNN + ["residual_mismatch.graph", "-o", "out.graph",
                                           "--report", "json"], 0, "",
         make=copy_input("residual_mismatch.graph"), check=not_fused("FusedConvAct")),
    # big graphs stay linear
    Case("chain_100k_stats", [G, "stats", "chain.graph"], 0, "", make=make_long_chain,
         seconds=30),
    Case("chain_100k_apply", APPLY_CNN + ["chain.graph", "-o", "out.graph"], 0, "",
         make=make_long_chain, seconds=60, check=loads("out.graph"), heavy=True),
    # safetensors headers that lie
    Case("st_header_past_end", [G, "run", "g.graph"], 2, "weights.safetensors",
         make=make_st_header_lies),
    Case("st_header_over_100MB", [G, "run", "g.graph"], 2, "weights.safetensors",
         make=make_st_header_too_big),
    Case("st_offsets_overlap", [G, "run", "g.graph"], 2, "weights.safetensors",
         make=make_st_overlap),
    Case("st_offsets_gap", [G, "run", "g.graph"], 2, "weights.safetensors", make=make_st_gap),
    Case("st_duplicate_key", [G, "run", "g.graph"], 2, "weights.safetensors",
         make=make_st_duplicate_key),
    Case("st_shape_overflow", [G, "run", "g.graph"], 2, "weights.safetensors",
         make=make_st_shape_overflow),
    Case("st_truncated", [G, "run", "g.graph"], 2, "weights.safetensors", make=make_st_truncated),
    Case("st_size_disagrees", [G, "run", "g.graph"], 2, "weights.safetensors",
         make=make_st_wrong_size),
    # ONNX (the importer's own corpus is tests/onnx/test_hostile.py)
    Case("onnx_external_data_escape", [G, "import", "model/escape.onnx", "-o", "out.graph"], 2,
         "escape.onnx", make=make_onnx_external_escape),
    Case("onnx_truncated", [G, "import", "truncated.onnx", "-o", "out.graph"], 2, "truncated",
         make=make_onnx_truncated),
    # output paths
    Case("apply_output_is_input", APPLY_CNN + ["g.graph", "-o", "g.graph"], 0, "",
         make=make_same_path, check=in_place),
    Case("import_output_is_input", [G, "import", "m.onnx", "-o", "m.onnx"], 2,
         "writing it would destroy the input",
         make=make_same_path_onnx, check=model_intact),
    Case("export_output_is_input", [G, "export", "g.graph", "-o", "g.graph"], 2,
         "writing it would destroy the input", make=make_same_path, check=loads("g.graph")),
    Case("run_output_is_input", [G, "run", "g.graph", "-o", "g.graph"], 2,
         "writing it would destroy the input", make=make_same_path, check=loads("g.graph")),
    Case("output_in_missing_folder", APPLY_CNN + ["g.graph", "-o", "no/such/dir/out.graph"], 2,
         "no/such/dir/out.graph", make=make_same_path),
]

# ---- running -----------------------------------------------------------------------------------


def limits(megabytes):
    def apply():
        if not SANITIZED:
            size = megabytes << 20
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
    return apply


def run(case):
    """Returns None when the case passes, else what went wrong."""
    if case.heavy and SANITIZED:
        raise Skip("a speed bound on a huge input; sanitizer builds are too slow for it")
    with tempfile.TemporaryDirectory(prefix="hostile-") as d:
        if case.make:
            case.make(d)
        before = set(os.listdir(d))
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        if SANITIZED:
            env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                                   f":hard_rss_limit_mb={case.megabytes}").lstrip(":")
        args = [FUSERULE if a == G else a for a in case.args]
        try:
            r = subprocess.run(args, cwd=d, capture_output=True, timeout=case.seconds, env=env,
                               preexec_fn=limits(case.megabytes))
        except subprocess.TimeoutExpired:
            return f"took more than {case.seconds} s"
        out = r.stdout.decode(errors="replace")
        err = r.stderr.decode(errors="replace")
        shown = f"\n--- stdout ---\n{out[-2000:]}\n--- stderr ---\n{err[-2000:]}"
        if r.returncode != case.exit:
            return f"exit status {r.returncode}, expected {case.exit}{shown}"
        if case.message not in (out if case.stream == "stdout" else err):
            return f"no '{case.message}' in {case.stream}{shown}"
        if case.exit == 2 and "error" not in err:
            return f"exit 2 without an error message{shown}"
        if case.exit != 0:
            left = set(os.listdir(d)) - before
            if left:
                return f"a failed command left files behind: {sorted(left)}"
        if case.check:
            verdict = case.check(d, out)
            if verdict is not True:
                return f"{verdict}{shown}"
    return None


def main():
    global FUSERULE
    FUSERULE = os.path.abspath(sys.argv[1])
    names = sys.argv[2:]
    by_name = {c.name: c for c in CASES}
    if names == ["--list"]:
        print("\n".join(by_name))
        return 0
    failed = skipped = 0
    for name in names:
        try:
            problem = run(by_name[name])
        except Skip as why:
            print(f"{name}: skipped: {why}")
            skipped += 1
            continue
        print(f"{name}: {'ok' if problem is None else 'FAILED: ' + problem}")
        failed += problem is not None
    return 1 if failed else 77 if skipped == len(names) else 0


if __name__ == "__main__":
    sys.exit(main())
