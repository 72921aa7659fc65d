#!/usr/bin/env python3
"""`fuserule export --for onnxruntime`: fused graphs that ONNX Runtime runs and that agree with the
original model.

    test_ort_export.py FUSERULE

For every example (examples/*.graph) and, when ../shared/ort-suite exists, every model of ONNX
Runtime's fusion suite that imports and that the rules fuse: `fuserule apply` with every rule
file, `fuserule export --for onnxruntime`, then the export runs in onnxruntime (CPU provider,
optimizations off, so each exported op runs as written) against the original graph run by
`fuserule run`, with verify's tolerances (f32: rtol 1e-4, atol 1e-5; f16: rtol 1e-3, atol
2.5e-3). The export must hold no op of the "fuserule" domain. Suite models are fed as run.py feeds
them (symbolic dims 2, then distinct, then 1, until the unfused graph runs); where the fused graph
already differs from the unfused one beyond that plain tolerance (run.py judges those against the
f64 reference), the export is judged against the fused graph run by fuserule instead;
an output within tolerance only relative to its largest magnitude (LayerNormalization with
epsilon 1e-12 amplifies summation-order noise) is counted as "scaled"; where ONNX Runtime's f16
kernels round otherwise than fuserule's, the unfused graph exported and run in onnxruntime is the
reference (counted apart). A fused graph with a BiasDropout exports com.microsoft BiasDropout,
which ONNX Runtime runs on CUDA only (with its own mask): that export is imported back and run by
fuserule, and must equal the fused graph exactly (the seed survives). bf16 inputs and outputs,
which numpy cannot hold, travel as their bit patterns (uint16) through OrtValues, and are
compared with verify's bf16 tolerance.
Every model of the real-export corpus (examples/real/: torch's two exporters), fused and exported
the same way, runs in onnxruntime on its stored inputs and gives ONNX Runtime's stored outputs for
the original (the corpus test's bounds, tests/real/test_corpus.py).
Also: plain `export` still writes the "fuserule" domain, and `--for` refuses an unknown name;
`apply ... -o OUT.onnx --for onnxruntime` writes in one step what apply then export write (an
example run in onnxruntime against the unfused graph), and refuses `--for` without an ONNX output.

Needs a python with onnxruntime and numpy (FUSERULE_ORT_PYTHON, as test_ort.py); skipped (77)
without. Examples whose weights exceed 600 MB (qwen2: 2 layers at 7B width) are left out unless
FUSERULE_ORT_ALL=1.
"""
import glob
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITE = os.path.join(os.path.dirname(ROOT), "shared", "ort-suite")
sys.path.insert(0, HERE)
import testlib  # noqa: E402

testlib.need_onnxruntime(__file__)
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from testlib import check, fuserule_ok, read_safetensors, run, write_safetensors  # noqa: E402

TOLERANCE = {np.float32: (1e-4, 1e-5), np.float16: (1e-3, 2.5e-3)}
NP = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
      "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(int8)": np.int8,
      "tensor(uint8)": np.uint8}
BF16 = "tensor(bfloat16)"
BF16_TOLERANCE = (0.01, 0.02)  # verify's (rtol, atol) for bf16
BIG_EXAMPLE_BYTES = 600 << 20
REAL_RTOL, REAL_ATOL = 1e-3, 1e-4  # tests/real/test_corpus.py's, the atol relative to the scale
RULES = sorted(glob.glob(os.path.join(ROOT, "rules", "*.rules")))


def session(path):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def feeds_for(sess, rng):
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 2 for d in i.shape]
        dt = NP[i.type]
        if dt in (np.float32, np.float16):
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(dt)
        elif "mask" in i.name.lower():
            feeds[i.name] = np.ones(shape, dt)
        elif dt == np.bool_:
            feeds[i.name] = rng.integers(0, 2, shape).astype(dt)
        else:
            feeds[i.name] = rng.integers(0, 2, shape).astype(dt)
    return feeds


def export_for_ort(binary, graph, tmp, name):
    fused = os.path.join(tmp, name + ".fused.graph")
    fuserule_ok(binary, "apply", "-r", *RULES, graph, "-o", fused)
    out = os.path.join(tmp, name + ".ort.onnx")
    fuserule_ok(binary, "export", fused, "--for", "onnxruntime", "-o", out)
    check(not fuserule_domain(out), f"{name}: the export uses the fuserule domain")
    return out


def fuserule_domain(path):
    """Whether a model imports the "fuserule" domain or has a node in it."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    return any(o.domain == "fuserule" for o in m.opset_import) or \
        any(n.domain == "fuserule" for n in m.graph.node)


def compare(name, got, want):
    check(set(got) == set(want), f"{name}: outputs {sorted(got)} vs {sorted(want)}")
    for k in want:
        w = np.asarray(want[k])
        tol = TOLERANCE.get(w.dtype.type)
        if tol:
            testlib.assert_close(f"{name}: {k}", np.asarray(got[k]), w, *tol)
        else:
            check(np.array_equal(got[k], w), f"{name}: {k} differs")


def example_case(binary, tmp, graph):
    name = os.path.basename(graph)[:-len(".graph")]

    def case():
        exported = export_for_ort(binary, graph, tmp, name)
        sess = session(exported)
        feeds = feeds_for(sess, np.random.default_rng(7))
        ins, outs = os.path.join(tmp, name + ".in.st"), os.path.join(tmp, name + ".out.st")
        write_safetensors(ins, feeds)
        fuserule_ok(binary, "run", graph, "--inputs", ins, "-o", outs)
        names = [o.name for o in sess.get_outputs()]
        compare(name, dict(zip(names, sess.run(names, feeds))), read_safetensors(outs))
    case.__name__ = f"example_{name}"
    return case


def real_case(binary, tmp, model):
    """A torch export of the real corpus (examples/real/), fused and exported: ONNX Runtime runs
    it on the stored inputs and gives the outputs it gave for the original, within the corpus
    test's bounds (tests/real/test_corpus.py: the fused kernels sum in another order through up to
    60 layers)."""
    name = os.path.basename(model)[:-len(".onnx")]

    def case():
        exported = export_for_ort(binary, model, tmp, name)
        sess = session(exported)
        base = model[:-len(".onnx")]
        inputs = read_safetensors(base + ".in.safetensors")
        want = read_safetensors(base + ".ort.safetensors")
        names = [o.name for o in sess.get_outputs()]
        check(sorted(names) == sorted(want), f"{name}: outputs {sorted(names)} vs {sorted(want)}")
        got = dict(zip(names, sess.run(names, {i.name: inputs[i.name]
                                              for i in sess.get_inputs()})))
        for k, w in sorted(want.items()):
            if w.dtype.kind != "f":
                check(np.array_equal(got[k], w), f"{name}: {k} differs")
                continue
            finite = np.abs(w[np.isfinite(w)].astype(np.float64))
            scale = float(finite.max(initial=0)) or 1.0
            testlib.assert_close(f"{name}: {k}", got[k], w, REAL_RTOL, REAL_ATOL * scale)
    case.__name__ = f"real_{name}"
    return case


def cuda_only_roundtrip(binary, fused, exported, d, failures, short):
    """An export holding com.microsoft BiasDropout, which ONNX Runtime implements on CUDA only (its
    CPU provider does not load it) and with its own mask: instead of running it in onnxruntime, the
    export is imported back (as Dropout of an Add) and run by fuserule, and must give the fused
    graph's outputs exactly (the seed, hence the mask, survives). False for any other export."""
    with open(fused) as f:
        text = f.read()
    if not re.search(r"= BiasDropout\(", text):
        return False
    dims = []
    for line in text.splitlines():
        m = re.match(r"\s*input\s+\S+\s*:\s*\w+\[(.*)\]", line)
        for dim in (m.group(1).split(",") if m else []):
            dim = dim.strip()
            if dim and not re.fullmatch(r"-?\d+", dim) and dim not in dims:
                dims.append(dim)
    sizes = [a for dim in dims for a in ("--dim", f"{dim}=2")]
    back = os.path.join(d, "back.graph")
    fuserule_ok(binary, "import", exported, "-o", back)
    fuserule_ok(binary, "run", fused, *sizes, "-o", os.path.join(d, "fused.st"))
    fuserule_ok(binary, "run", back, *sizes, "-o", os.path.join(d, "back.st"))
    want, got = read_safetensors(os.path.join(d, "fused.st")), \
        read_safetensors(os.path.join(d, "back.st"))
    for name, value in want.items():
        if name not in got or got[name].shape != value.shape or \
                not np.array_equal(got[name], value, equal_nan=True):
            failures.append(f"{short}: the export, imported back, disagrees on '{name}' with the "
                            "fused graph (BiasDropout: not run in onnxruntime, CUDA only)")
    return True


def sym_feeds(sess, strategy, rng):
    """Inputs for a session's inputs, symbolic dims given by strategy (as run.py tries them)."""
    seen = {}

    def dim(d):
        if isinstance(d, int) and d > 0:
            return d
        if strategy == "distinct":
            return seen.setdefault(d, 2 + len(seen))
        return 2 if strategy == "two" else 1
    feeds = {}
    for i in sess.get_inputs():
        shape = [dim(d) for d in i.shape]
        if i.type == BF16:  # numpy has no bf16: the bit patterns, as uint16
            bits = rng.uniform(-1, 1, shape).astype(np.float32).view(np.uint32) >> 16
            feeds[i.name] = bits.astype(np.uint16)
            continue
        dt = NP[i.type]
        if dt in (np.float32, np.float16):
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(dt)
        elif "mask" in i.name.lower():
            feeds[i.name] = np.ones(shape, dt)
        else:
            feeds[i.name] = rng.integers(0, 2, shape).astype(dt)
    return feeds


def bf16_as_f32(tensors, names):
    """The bf16 outputs (uint16 bit patterns) among tensors as float32, the others as they are."""
    return {k: (v.astype(np.uint32) << 16).view(np.float32) if k in names else v
            for k, v in tensors.items()}


def run_bf16(sess, feeds, shapes):
    """Runs a session whose inputs or outputs are bf16, which numpy cannot hold: bf16 inputs go in
    and outputs come back as uint16 bit patterns through OrtValues bound over numpy buffers (the
    output shapes, which must be known, are the reference's). None when an output is not bf16."""
    binding = sess.io_binding()
    for i in sess.get_inputs():
        if i.type == BF16:
            value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(feeds[i.name], 16)
            binding.bind_ortvalue_input(i.name, value)
        else:
            binding.bind_cpu_input(i.name, feeds[i.name])
    outs = {}
    for o in sess.get_outputs():
        if o.type != BF16:
            return None
        outs[o.name] = np.zeros(shapes[o.name], np.uint16)
        binding.bind_ortvalue_output(
            o.name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(outs[o.name], 16))
    sess.run_with_iobinding(binding)
    return outs


def agreement(got, want, tol):
    """'exact' within verify's elementwise tolerance; 'scaled' within it relative to the output's
    largest magnitude (LayerNorm with a tiny epsilon amplifies summation-order noise); else None."""
    verdict = "exact"
    for k in want:
        w, g = np.asarray(want[k]), np.asarray(got[k])
        if w.shape != g.shape:
            return None
        if w.dtype.type not in TOLERANCE:
            if not np.array_equal(w, g):
                return None
            continue
        rtol, atol = tol or TOLERANCE[w.dtype.type]
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        if not np.array_equal(np.isnan(w64), np.isnan(g64)):
            return None
        fin = np.isfinite(w64)
        if not np.array_equal(w64[~fin & ~np.isnan(w64)], g64[~fin & ~np.isnan(w64)]):
            return None
        err = np.abs(w64 - g64)[fin]
        if err.size == 0 or np.all(err <= atol + rtol * np.abs(w64[fin])):
            continue
        scale = np.abs(w64[fin]).max()
        if np.all(err <= atol + rtol * scale):
            verdict = "scaled"
            continue
        return None
    return verdict


def suite_case(binary, tmp):
    """Every suite model that imports and that the rules fuse correctly (the fused graph agrees
    with the unfused one in fuserule: run.py's own check), exported for ONNX Runtime: onnxruntime
    must give what the unfused graph gives."""
    def ort_suite():
        import json
        manifest = json.load(open(os.path.join(SUITE, "MANIFEST.json")))
        counts = {"exact": 0, "scaled": 0, "exact against ONNX Runtime's unfused run": 0,
                  "scaled against ONNX Runtime's unfused run": 0,
                  "unfused graph does not run": 0,
                  "exact against the fused graph (which run.py judges)": 0,
                  "loaded, not run (bf16 beside other outputs)": 0,
                  "CUDA-only op: re-imported, exact against the fused graph": 0}
        failures = []
        for i, m in enumerate(manifest["models"]):
            short = m["path"].split("/")[-1]
            d = testlib.tempdir_under(tmp, f"suite{i:03d}")
            graph, fused = os.path.join(d, "in.graph"), os.path.join(d, "fused.graph")
            if run([binary, "import", os.path.join(SUITE, m["path"]), "-o", graph])[0] != 0:
                continue
            status, report, _ = run([binary, "apply", "-r", *RULES, graph, "-o", fused,
                                     "--report", "json"])
            if status != 0 or not any(json.loads(report)["fired"].values()):
                continue
            out = os.path.join(d, "ort.onnx")
            status, _, err = run([binary, "export", fused, "--for", "onnxruntime", "-o", out])
            if status != 0:
                failures.append(f"{short}: export: {err.strip()}")
                continue
            if cuda_only_roundtrip(binary, fused, out, d, failures, short):
                counts["CUDA-only op: re-imported, exact against the fused graph"] += 1
                continue
            try:
                sess = session(out)
            except Exception as e:
                failures.append(f"{short}: onnxruntime does not load the export: "
                                f"{str(e).splitlines()[0][:300]}")
                continue
            # numpy has no bf16: such inputs and outputs travel as uint16 bit patterns
            bf16_in = {v.name for v in sess.get_inputs() if v.type == BF16}
            bf16_out = {v.name for v in sess.get_outputs() if v.type == BF16}
            # computed in f16 upstream of a Cast to f32: the f16 tolerance (the manifest's rule)
            with open(fused) as f:
                text = f.read()
            tol = BF16_TOLERANCE if "bf16[" in text else \
                TOLERANCE[np.float16] if "f16[" in text else None
            verdict = "unfused graph does not run"
            for strategy in ["two", "distinct", "one"]:
                feeds = sym_feeds(sess, strategy, np.random.default_rng(3))
                ins = os.path.join(d, "in.st")
                write_safetensors(ins, feeds, bf16_in)
                if run([binary, "run", graph, "--inputs", ins, "-o",
                        os.path.join(d, "ref.st")])[0] != 0:
                    continue
                ref = bf16_as_f32(read_safetensors(os.path.join(d, "ref.st")), bf16_out)
                fuserule_ok(binary, "run", fused, "--inputs", ins, "-o", os.path.join(d, "f.st"))
                fused_out = bf16_as_f32(read_safetensors(os.path.join(d, "f.st")), bf16_out)
                # a fused graph that differs from the unfused one in a plain comparison is run.py's
                # business (it judges against f64); the export must then give what it gives
                plain_differs = agreement(fused_out, ref, tol) is None
                if plain_differs:
                    ref = fused_out
                names = [o.name for o in sess.get_outputs()]
                try:
                    if bf16_in or bf16_out:
                        got = run_bf16(sess, feeds, {k: v.shape for k, v in ref.items()})
                        if got is None:
                            verdict = "loaded, not run (bf16 beside other outputs)"
                            break
                        got = bf16_as_f32(got, bf16_out)
                    else:
                        got = dict(zip(names, sess.run(names, feeds)))
                except Exception as e:
                    failures.append(f"{short}: onnxruntime fails: {str(e).splitlines()[0][:300]}")
                    verdict = None
                    break
                verdict = agreement(got, ref, tol)
                if verdict is None and not (bf16_in or bf16_out):
                    # ONNX Runtime's own kernels may round differently (f16 arithmetic) from
                    # fuserule's: then the unfused graph exported and run in ONNX Runtime judges
                    plain = os.path.join(d, "plain.onnx")
                    fuserule_ok(binary, "export", graph, "--for", "onnxruntime", "-o", plain)
                    theirs = dict(zip(names, session(plain).run(names, feeds)))
                    verdict = agreement(got, theirs, tol)
                    verdict = verdict and verdict + " against ONNX Runtime's unfused run"
                if verdict == "exact" and plain_differs:
                    verdict = "exact against the fused graph (which run.py judges)"
                if verdict is None:
                    failures.append(f"{short}: the export disagrees with the unfused graph")
                break
            if verdict:
                counts[verdict] += 1
            if verdict == "unfused graph does not run":
                print(f"NOTE {short}: exported and loaded; the unfused graph does not run on "
                      "generated inputs in fuserule, so nothing is compared")
            if verdict and verdict.endswith("(which run.py judges)"):
                print(f"NOTE {short}: the fused graph differs from the unfused one in fuserule "
                      "beyond a plain comparison's tolerance (run.py judges it against f64); the "
                      "export agrees with the fused graph")
        print("ort-suite exported for ONNX Runtime: " +
              ", ".join(f"{v} {k}" for k, v in counts.items()))
        check(not failures, "\n  " + "\n  ".join(failures))
    return ort_suite


def flavours(binary, tmp):
    def lossless_default_and_bad_name():
        graph = os.path.join(HERE, "fused_other.graph")  # its Attention has rotary tables
        out = os.path.join(tmp, "lossless.onnx")
        fuserule_ok(binary, "export", graph, "-o", out)
        check(fuserule_domain(out), "the default export lost the fuserule domain")
        status, _, err = run([binary, "export", graph, "--for", "tensorrt", "-o", out + "2"])
        check(status == 2 and "--for takes lossless or onnxruntime, not 'tensorrt'" in err,
              f"exit {status}: {err}")

    def apply_for_onnxruntime():
        graph = os.path.join(ROOT, "examples", "bert_layer.graph")
        out = os.path.join(tmp, "apply_ort.onnx")
        fuserule_ok(binary, "apply", "-r", *RULES, graph, "-o", out, "--for", "onnxruntime")
        check(not fuserule_domain(out), "apply --for onnxruntime wrote the fuserule domain")
        sess = session(out)
        feeds = feeds_for(sess, np.random.default_rng(11))
        ins, outs = os.path.join(tmp, "apply_ort.in.st"), os.path.join(tmp, "apply_ort.out.st")
        write_safetensors(ins, feeds)
        fuserule_ok(binary, "run", graph, "--inputs", ins, "-o", outs)
        names = [o.name for o in sess.get_outputs()]
        compare("apply --for onnxruntime", dict(zip(names, sess.run(names, feeds))),
                read_safetensors(outs))
        # lossless keeps the fuserule domain, as export's default does
        lossless = os.path.join(tmp, "apply_lossless.onnx")
        fuserule_ok(binary, "apply", "-r", *RULES, graph, "-o", lossless, "--for", "lossless")
        check(fuserule_domain(lossless), "apply --for lossless lost the fuserule domain")

    def apply_for_refusals():
        graph = os.path.join(ROOT, "examples", "bert_layer.graph")
        text = os.path.join(tmp, "refused.graph")
        status, out, err = run([binary, "apply", "-r", *RULES, graph, "-o", text,
                                "--for", "onnxruntime"])
        check(status == 2 and "--for applies to an ONNX output only" in err
              and not os.path.exists(text), f"--for with a .graph output: exit {status}: {err}")
        status, out, err = run([binary, "apply", "-r", *RULES, graph, "-o", text + ".onnx",
                                "--format", "graph", "--for", "lossless"])
        check(status == 2 and "--for applies to an ONNX output only" in err
              and not os.path.exists(text + ".onnx"),
              f"--for with --format graph: exit {status}: {err}")
        status, out, err = run([binary, "apply", "-r", *RULES, graph, "--for", "onnxruntime"])
        check(status == 2 and "--for describes an ONNX output; give -o OUT.onnx" in err
              and out == "", f"--for without -o: exit {status}: {err}")
        status, _, err = run([binary, "apply", "-r", *RULES, graph, "-o", text + "2.onnx",
                              "--for", "tensorrt"])
        check(status == 2 and "--for takes lossless or onnxruntime, not 'tensorrt'" in err,
              f"apply --for tensorrt: exit {status}: {err}")

    return [lossless_default_and_bad_name, apply_for_onnxruntime, apply_for_refusals]


GQA_GRAPH = """graph gqa {
  input  q : f32[2,5,4,8]
  input  k : f32[2,5,2,8]
  input  v : f32[2,5,2,6]
  const  m : f32[5,5] = random(seed=1, lo=-1, hi=0)
  const  pb : f32[1,4,5,5] = random(seed=2, lo=-2, hi=2)
  y = Attention(q, k, v, m) {causal=1, layout="BSHD"}
  z = Attention(q, k, v) {scale=0.3, layout="BSHD"}
  w = Attention(q, k, v, m, _, _, _, pb) {layout="BSHD"}
  u = Attention(q, k, v, m) {causal=2, causal_fill=-3.0, layout="BSHD"}
  output y
  output z
  output w
  output u
}
"""

# Attention over a packed QKV projection (rule attention_packed_qkv): with an i32 key mask, ONNX
# Runtime's com.microsoft Attention (its output reshaped to the heads), and with it a [1, H, S, S]
# bias as its attention_bias; causal with a mask, and with a mask and a bias, which that op does
# not compute so: MatMul, Add, Split and the head views before the attention subgraph; a padding
# mask [B, 1, 1, S], which its attention_bias does not broadcast, the same way.
PACKED_GRAPH = """graph packed {
  input  x : f32[2,5,16]
  input  km : i32[2,5]
  const  s4 : i64[4] = [0,0,2,-1]
  const  m : f32[5,5] = random(seed=3, lo=-1, hi=0)
  const  pb : f32[1,2,5,5] = random(seed=4, lo=-2, hi=2)
  const  pm : f32[2,1,1,5] = random(seed=5, lo=-3, hi=0)
""" + "".join(f"""  const  w{i} : f32[16,40] = random(seed={10 + i})
  const  b{i} : f32[40] = random(seed={20 + i})
  q{i}, k{i}, v{i} = FusedQKV(x, w{i}, b{i}) {{sizes=[16,16,8]}}
  q{i}4 = Reshape(q{i}, s4)
  k{i}4 = Reshape(k{i}, s4)
  v{i}4 = Reshape(v{i}, s4)
  y{i} = Attention(q{i}4, k{i}4, v{i}4{rest}) {{{attrs}layout="BSHD"}}
  output y{i}
""" for i, (rest, attrs) in enumerate([
    (", _, _, _, km", ""), (", m", "causal=1, "), (", m, _, _, _, pb", ""),
    (", _, _, _, km, pb", ""), (", pm", "")])) + "}\n"

# GemmEpilogue's transBatchA/B: alone a com.microsoft FusedMatMul of the same flags, with a bias,
# residual and activation the Transpose (batch move and swap in one perm) + MatMul subgraph.
TRANS_BATCH_GRAPH = """graph trans_batch {
  input  a : f32[5,2,3,4]
  input  b : f32[4,2,3,6]
  input  a2 : f32[2,3,4,5]
  input  b3 : f32[6,2,3,5]
  input  r : f32[5,6]
  const  c : f32[6] = random(seed=1)
  y1 = GemmEpilogue(a, b) {transBatchA=1, transBatchB=1, alpha=0.5}
  y2 = GemmEpilogue(a2, b, c, r) {transA=1, transBatchB=1, act="Relu", beta=2.0}
  y3 = GemmEpilogue(a, b3) {transBatchA=1, transA=1, transBatchB=1, transB=1}
  y4 = GemmEpilogue(a, b3, c) {transBatchA=1, transA=1, transBatchB=1, transB=1, act="Tanh"}
  output y1
  output y2
  output y3
  output y4
}
"""


def make_cases(binary, tmp):
    cases = []
    for graph in sorted(glob.glob(os.path.join(ROOT, "examples", "*.graph"))):
        weights = os.path.getsize(graph)
        text = open(graph).read()
        # random() weights: count the elements the constants declare
        for m in re.finditer(r"const\s+\S+\s*:\s*\w+\[([0-9,]+)\]\s*=\s*random", text):
            weights += 4 * int(np.prod([int(x) for x in m.group(1).split(",")]))
        if weights > BIG_EXAMPLE_BYTES and not os.environ.get("FUSERULE_ORT_ALL"):
            print(f"note: {os.path.basename(graph)} left out ({weights >> 20} MB of weights; "
                  "FUSERULE_ORT_ALL=1 runs it)")
            continue
        cases.append(example_case(binary, tmp, graph))
    for name in ["fused_cnn", "fused_transformer", "fused_other", "fused_skip_bias"]:
        cases.append(example_case(binary, tmp, os.path.join(HERE, name + ".graph")))
    # grouped-query attention (4 query heads over 2 key/value heads), causal with a mask, BSHD;
    # and with a bias (a second additive term) after the mask; and GPT-2's causal fill (causal = 2:
    # hidden scores replaced by -3 before the mask is added)
    gqa = os.path.join(tmp, "gqa.graph")
    with open(gqa, "w") as f:
        f.write(GQA_GRAPH)
    cases.append(example_case(binary, tmp, gqa))
    packed = os.path.join(tmp, "packed.graph")
    with open(packed, "w") as f:
        f.write(PACKED_GRAPH)
    cases.append(example_case(binary, tmp, packed))
    for model in sorted(glob.glob(os.path.join(ROOT, "examples", "real", "*.onnx"))):
        cases.append(real_case(binary, tmp, model))
    trans_batch = os.path.join(tmp, "trans_batch.graph")
    with open(trans_batch, "w") as f:
        f.write(TRANS_BATCH_GRAPH)
    cases.append(example_case(binary, tmp, trans_batch))
    if os.path.isdir(SUITE):
        cases.append(suite_case(binary, tmp))
    return cases + flavours(binary, tmp)


if __name__ == "__main__":
    binary = os.path.abspath(sys.argv[1])
    print(f"onnxruntime {ort.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(testlib.main(make_cases(binary, tmp), ()))
