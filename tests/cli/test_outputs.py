#!/usr/bin/env python3
"""The command line's files: outputs that never destroy, the format from the name, inputs told
apart by their bytes, `-` for stdin and stdout, and the option conventions.

Usage: test_outputs.py FUSERULE. Each case runs fuserule in a fresh temporary folder on
small.graph / small.rules (beside this file) and checks the exit status, the files on disk and
the messages. Run as root in CI, so /dev/null really could be replaced if a command renamed over
it; the test checks that it is still the character device afterwards.
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPH = os.path.join(HERE, "small.graph")
RULES = os.path.join(HERE, "small.rules")
failures = []


def run(args, stdin=None, cwd=None):
    proc = subprocess.run([FUSERULE] + args, input=stdin, capture_output=True, cwd=cwd,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def expect(args, status, err_has=None, **kw):
    rc, out, err = run(args, **kw)
    check(rc == status, f"{' '.join(args)}: exit {rc}, expected {status}\n{err}")
    if err_has:
        check(err_has in err, f"{' '.join(args)}: stderr lacks {err_has!r}:\n{err}")
    return out, err


def apply(out, *extra):
    return ["apply", "-r", RULES, GRAPH, "-o", out] + list(extra)


def test_dev_null(tmp):
    before = os.path.exists("/dev/null.safetensors")
    for args in (apply("/dev/null"), ["export", GRAPH, "-o", "/dev/null"],
                 ["dot", GRAPH, "-o", "/dev/null"], ["run", GRAPH, "-o", "/dev/null"],
                 ["canon", GRAPH, "-o", "/dev/null"]):
        expect(args, 0)
        check(stat.S_ISCHR(os.stat("/dev/null").st_mode), f"{args}: /dev/null is no device now")
    check(os.path.exists("/dev/null.safetensors") == before, "/dev/null.safetensors was created")
    _, err = expect(apply("/dev/null"), 0, "are not written")
    check("/dev/null" in err, "the warning names the stream")


def test_dev_full(tmp):
    """A device that refuses the bytes: exit 2, and the message says why (the errno's words)."""
    if not os.path.exists("/dev/full"):
        return
    for args in (apply("/dev/full"), ["export", GRAPH, "-o", "/dev/full"]):
        _, err = expect(args, 2, "/dev/full: error: write failed: No space left on device")


def read_fifo(path, got):
    with open(path, "rb") as f:
        got.append(f.read())


def test_fifo(tmp):
    fifo = os.path.join(tmp, "pipe.graph")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=read_fifo, args=(fifo, got))
    reader.start()
    expect(apply(fifo), 0)
    reader.join(60)
    check(got and got[0].startswith(b"graph small {"), f"the FIFO got {got[:1]!r}")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is no FIFO now")
    check(not os.path.exists(os.path.join(tmp, "pipe.safetensors")), "a companion beside a FIFO")


def test_symlink(tmp):
    real = os.path.join(tmp, "real")
    os.mkdir(real)
    target = os.path.join(real, "fused.graph")
    link = os.path.join(tmp, "link.graph")
    os.symlink("real/fused.graph", link)  # dangling: the target is made through the link
    expect(apply(link), 0)
    check(os.path.islink(link), "the symlink was replaced")
    check(os.path.isfile(target), "the symlink's target was not written")
    check(os.path.isfile(os.path.join(real, "fused.safetensors")),
          "the companion is not beside the real target")
    check(not os.path.exists(os.path.join(tmp, "link.safetensors")), "a companion beside the link")
    expect(["fmt", link], 0)
    with open(target, "w") as f:
        f.write("old")
    expect(apply(link), 0)  # an existing target: replaced through the link, the link kept
    check(os.path.islink(link) and open(target).read().startswith("graph small"),
          "an existing target was not rewritten through the link")
    onnx_link = os.path.join(tmp, "m.onnx")
    os.symlink(os.path.join(real, "m.onnx"), onnx_link)
    expect(["export", GRAPH, "-o", onnx_link], 0)
    check(os.path.islink(onnx_link) and os.path.isfile(os.path.join(real, "m.onnx")),
          "export through a symlink")


def test_directory(tmp):
    d = os.path.join(tmp, "outdir")
    os.mkdir(d)
    for args in (apply(d), ["export", GRAPH, "-o", d], ["dot", GRAPH, "-o", d],
                 ["run", GRAPH, "-o", d]):
        expect(args, 2, "is a directory")
        check(os.path.isdir(d) and not os.listdir(d), f"{args}: the directory changed")


def test_stdout(tmp):
    out, _ = expect(apply("-"), 0)
    check(out.startswith(b"graph small {"), f"apply -o - wrote {out[:40]!r}")
    expect(apply("-", "--report", "json"), 2, "would both write to stdout")
    check(not os.path.exists(os.path.join(tmp, "-")), "a file named '-'")
    out, _ = expect(["dot", GRAPH, "-o", "-"], 0)
    check(out.startswith(b'digraph "small" {'), "dot -o - does not write to stdout")
    out, _ = expect(["export", GRAPH, "-o", "-"], 0)
    check(out[:1] == b"\x08", "export -o - does not write ONNX to stdout")
    # run -o -: stdout is the safetensors stream alone (an 8-byte header length, then its JSON),
    # the per-output summary goes to stderr
    out, err = expect(["run", GRAPH, "-o", "-"], 0, "sum=")
    n = int.from_bytes(out[:8], "little") if len(out) >= 8 else -1
    check(0 < n <= len(out) - 8 and out[8:9] == b"{", f"run -o - wrote {out[:40]!r}")
    check(b"sum=" not in out, "run -o - mixed the summary into the safetensors stream")


def test_format_from_name(tmp):
    onnx = os.path.join(tmp, "direct.onnx")
    expect(apply(onnx), 0)
    data = open(onnx, "rb").read()
    check(data[:1] == b"\x08", "apply -o x.onnx did not write ONNX")
    check(not os.path.exists(onnx + ".safetensors") and
          not os.path.exists(os.path.join(tmp, "direct.safetensors")), "ONNX with a companion")
    out, _ = expect(["fmt", onnx], 0)
    check(b"FusedConvAct" in out, "the ONNX written by apply does not read back")
    text = os.path.join(tmp, "back.graph")
    expect(["export", onnx, "-o", text], 0)
    check(open(text, "rb").read().startswith(b"graph "), "export -o x.graph did not write text")
    expect(["import", onnx, "-o", os.path.join(tmp, "again.onnx")], 0)
    check(open(os.path.join(tmp, "again.onnx"), "rb").read()[:1] == b"\x08",
          "import -o x.onnx did not write ONNX")
    bad = os.path.join(tmp, "out.txt")
    _, err = expect(apply(bad), 2, "use a name ending in .graph")
    check(".onnx" in err, "the format error does not name .onnx")
    check(not os.path.exists(bad), "a file was written for an unknown format")
    expect(apply(bad, "--format", "onnx"), 0)
    check(open(bad, "rb").read()[:1] == b"\x08", "--format onnx")
    expect(apply(bad, "--format=graph"), 0)
    check(open(bad, "rb").read().startswith(b"graph "), "--format=graph")
    expect(apply(bad, "--format", "png"), 2, "unknown format 'png' (graph or onnx)")


def test_input_by_bytes(tmp):
    onnx = os.path.join(tmp, "m.onnx")
    expect(["export", GRAPH, "-o", onnx], 0)
    want, _ = expect(["fmt", onnx], 0)
    for name in ("model.ONNX", "model"):
        path = os.path.join(tmp, name)
        shutil.copy(onnx, path)
        out, err = expect(["fmt", path], 0)
        check(out == want, f"{name} is not read as ONNX:\n{err}")
    text_named_onnx = os.path.join(tmp, "text.onnx")
    shutil.copy(GRAPH, text_named_onnx)
    expect(["fmt", text_named_onnx], 0)
    out, _ = expect(["fmt", "-"], 0, stdin=open(onnx, "rb").read())
    check(out == want, "an ONNX model on stdin")
    out, _ = expect(["fmt", "-"], 0, stdin=open(GRAPH, "rb").read())
    check(out.startswith(b"graph small {"), "a text graph on stdin")
    out, _ = expect(["apply", "-r", "-", GRAPH, "--report=json"], 0, stdin=open(RULES, "rb").read())
    check(b'"conv_bn_act": 1' in out, "rules on stdin")
    out, _ = expect(["check", "-"], 0, stdin=open(RULES, "rb").read())
    check(out.startswith(b"-: 1 rule"), "check - reads stdin")
    expect(["fmt", tmp], 2, "is a directory; GRAPH is a .graph file or an ONNX model")
    # binary that is no model is never echoed as text
    junk = os.path.join(tmp, "junk")
    with open(junk, "wb") as f:
        f.write(b"\x01\x02\x1b[31mred\x00\xff")
    _, err = expect(["fmt", junk], 2)
    check("\x1b" not in err and "red" not in err, f"binary input echoed: {err!r}")
    # a model given as a rules file: one error, no garbled lines
    _, err = expect(["check", onnx], 2, "a binary file (an ONNX model?), not rules text")
    check(err.count("error:") == 1, f"a binary rules file gives more than one error:\n{err}")
    _, err = expect(["apply", "-r", onnx, GRAPH], 2, "not rules text")
    # bytes that are no UTF-8 in a text excerpt print as '?'; valid UTF-8 prints as it is
    bad = os.path.join(tmp, "bad.graph")
    with open(bad, "wb") as f:
        f.write(b"graph g {\n  input x : f32[2] \xff\x1b[31m \xc3\xa9\n}\n")
    rc, _, err_bytes = run(["fmt", bad])
    raw = subprocess.run([FUSERULE, "fmt", bad], capture_output=True).stderr
    check(rc == 2 and b"\xff" not in raw and b"\x1b" not in raw, f"raw bytes echoed: {raw!r}")


def test_conventions(tmp):
    out, _ = expect(["--version"], 0)
    check(out.startswith(b"fuserule "), "--version")
    out, _ = expect(["--help"], 0)
    check(b"--version" in out and b"help COMMAND" in out, "--help names --version and help")
    out, _ = expect(["help", "apply"], 0)
    check(out.startswith(b"usage: fuserule apply"), "help apply")
    expect(["help", "aply"], 2, "unknown command 'aply'")
    out, _ = expect(["apply", "-r", RULES, GRAPH, "--report=json", "--max-rounds=2"], 0)
    check(out.startswith(b"{"), "--report=json")
    expect(["apply", "-r", RULES, GRAPH, "--explain=yes"], 2, "option --explain takes no value")
    expect(["apply", "-r", RULES, GRAPH, "--max-rounds="], 2, "--max-rounds takes 1 to 1000")


def external_data_model(path, n):
    """A model whose n initializers all read the missing file weights.bin."""
    from onnx import TensorProto as T, helper as h
    inits, nodes, prev = [], [], "x"
    for i in range(n):
        t = h.make_tensor(f"w{i}", T.FLOAT, [2], [0.0, 0.0])
        t.ClearField("float_data")
        t.data_location = T.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", str(8 * i)), ("length", "8")):
            e = t.external_data.add()
            e.key, e.value = key, value
        inits.append(t)
        nodes.append(h.make_node("Add", [prev, f"w{i}"], [f"y{i}"]))
        prev = f"y{i}"
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2])],
                     [h.make_tensor_value_info(prev, T.FLOAT, [2])], initializer=inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def test_external_data_once(tmp):
    try:
        import onnx  # noqa: F401  (Debian's python3-onnx; the case is skipped without it)
    except ImportError:
        print("skipped test_external_data_once: no python onnx module")
        return
    model = os.path.join(tmp, "ext.onnx")
    external_data_model(model, 12)
    _, err = expect(["fmt", model], 2)
    check(err.count("cannot open external data 'weights.bin'") == 1,
          f"the missing file is not reported once:\n{err}")
    check("note: 11 more tensors read 'weights.bin' as well" in err, f"no count of the others:\n{err}")


def main():
    global FUSERULE
    FUSERULE = os.path.abspath(sys.argv[1])
    for test in (test_dev_null, test_dev_full, test_fifo, test_symlink, test_directory, test_stdout,
                 test_format_from_name, test_input_by_bytes, test_conventions,
                 test_external_data_once):
        with tempfile.TemporaryDirectory() as tmp:
            test(tmp)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
