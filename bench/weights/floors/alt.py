#!/usr/bin/env python3
"""alt.py N MODEL BIN... [-- extra apply args]: alternating runs of `BIN apply -r rules/*.rules MODEL -o OUT`
in fresh children (output removed before each), CPU s = user + sys from wait4, peak RSS; medians."""
import glob, os, statistics, sys
argv = sys.argv[1:]
extra = []
if "--" in argv:
    i = argv.index("--"); extra = argv[i + 1:]; argv = argv[:i]
n, model, bins = int(argv[0]), argv[1], argv[2:]
rules = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "rules", "*.rules")))
out = os.path.join(os.path.dirname(os.path.abspath(model)), "alt.out.onnx")
res = {b: [] for b in bins}; rss = {b: 0 for b in bins}
for _ in range(n):
    for b in bins:
        if os.path.exists(out): os.unlink(out)
        pid = os.fork()
        if pid == 0:
            fd = os.open("/dev/null", os.O_WRONLY); os.dup2(fd, 1); os.dup2(fd, 2)
            os.execv(b, [b, "apply", "-r", *rules, model, "-o", out, *extra])
        _, status, ru = os.wait4(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, b
        res[b].append(ru.ru_utime + ru.ru_stime); rss[b] = max(rss[b], ru.ru_maxrss)
if os.path.exists(out): os.unlink(out)
for b in bins:
    v = res[b]
    print("%-40s median %.3f  min %.3f  (n=%d: %s)  peak %.1f MiB" % (b, statistics.median(v), min(v), len(v), " ".join("%.3f" % x for x in v), rss[b] / 1024))
