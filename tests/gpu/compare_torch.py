#!/usr/bin/env python3
"""Compare a devtrace trace with a torch.profiler (Kineto) trace of the same
PyTorch work run twice, once under each: per kernel name, the count (must be
equal), the total and the median duration (medians must agree within 15%;
for a kernel whose median is under 10 us on either side the deviation is
reported, not judged: launch jitter and the profilers' own timestamps weigh
too much there), plus both traces' sizes and export times.

  compare_torch.py --devtrace DT.json --torch KINETO.json
                   [--devtrace-export-s S] [--torch-export-s S]
  compare_torch.py --self-test

Prints a markdown section; exit status 1 when counts or judged medians
disagree, or a trace has no kernel.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile

TOLERANCE = 0.15
JUDGED_FROM_US = 10.0


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return json.load(f)


def kernels(trace):
    """name -> list of durations (us) of the kernel events."""
    out = {}
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") == "X" and ev.get("cat") == "kernel":
            out.setdefault(ev.get("name", ""), []).append(float(ev.get("dur", 0)))
    return out


def compare(dt, kt):
    """Returns (ok, rows, problems)."""
    rows, problems = [], []
    for name in sorted(set(dt) | set(kt)):
        a, b = dt.get(name, []), kt.get(name, [])
        row = {"name": name, "devtrace": len(a), "torch": len(b), "total_devtrace_us": sum(a),
               "total_torch_us": sum(b)}
        if len(a) != len(b):
            problems.append("%s: %d kernels under devtrace, %d under torch.profiler" % (name, len(a), len(b)))
        if a and b:
            ma, mb = statistics.median(a), statistics.median(b)
            row["median_devtrace_us"], row["median_torch_us"] = ma, mb
            row["deviation"] = abs(ma - mb) / mb if mb > 0 else (0.0 if ma == 0 else 1.0)
            row["judged"] = min(ma, mb) >= JUDGED_FROM_US
            if row["judged"] and row["deviation"] > TOLERANCE:
                problems.append("%s: median %.3f us under devtrace, %.3f us under torch.profiler (%.1f%%)"
                                % (name, ma, mb, row["deviation"] * 100))
        rows.append(row)
    return not problems, rows, problems


def markdown(rows, problems, sizes, exports):
    lines = ["### PyTorch workload: devtrace vs torch.profiler (activities=[CUDA]), same steps", ""]
    lines.append("| kernel | count devtrace | count torch | total devtrace (us) | total torch (us) "
                 "| median devtrace (us) | median torch (us) | deviation |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        name = r["name"] if len(r["name"]) <= 80 else r["name"][:77] + "..."
        name = name.replace("|", "\\|")
        if "deviation" in r:
            lines.append("| %s | %d | %d | %.1f | %.1f | %.3f | %.3f | %.1f%%%s |" % (
                name, r["devtrace"], r["torch"], r["total_devtrace_us"], r["total_torch_us"],
                r["median_devtrace_us"], r["median_torch_us"], r["deviation"] * 100,
                "" if r["judged"] else " (under %g us: reported only)" % JUDGED_FROM_US))
        else:
            lines.append("| %s | %d | %d | %.1f | %.1f | | | |" % (
                name, r["devtrace"], r["torch"], r["total_devtrace_us"], r["total_torch_us"]))
    lines.append("")
    lines.append("| | devtrace | torch.profiler |")
    lines.append("|---|---|---|")
    lines.append("| trace size (bytes) | %s | %s |" % (sizes[0], sizes[1]))
    lines.append("| export time (s), in process after stop | %s | %s |" % tuple(
        "%.3f" % e if e is not None else "n/a" for e in exports))
    lines.append("")
    if problems:
        lines.append("**FAIL**: " + "; ".join(problems))
    else:
        lines.append("**PASS**: the same kernels, counted alike; medians of %g us and more within %d%%."
                     % (JUDGED_FROM_US, int(TOLERANCE * 100)))
    return "\n".join(lines)


def self_test():
    """The comparison's rules on synthetic traces (no GPU needed)."""
    def trace(evs):
        return {"traceEvents": [{"ph": "X", "cat": "kernel", "name": n, "ts": 0.0, "dur": d} for n, d in evs]
                + [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0.0, "dur": 3.0}]}

    dt = trace([("gemm", 100.0), ("gemm", 110.0), ("relu", 5.0), ("relu", 5.2)])
    kt = trace([("gemm", 101.0), ("gemm", 112.0), ("relu", 8.0), ("relu", 8.2)])
    ok, rows, problems = compare(kernels(dt), kernels(kt))
    assert ok, problems  # relu is 60% off, but under 10 us: reported, not judged
    assert [r["name"] for r in rows] == ["gemm", "relu"], rows
    assert not rows[1]["judged"] and rows[0]["judged"], rows
    assert rows[0]["total_devtrace_us"] == 210.0 and rows[0]["total_torch_us"] == 213.0, rows
    slow = trace([("gemm", 120.0), ("gemm", 130.0), ("relu", 5.0), ("relu", 5.0)])
    ok, _, problems = compare(kernels(slow), kernels(kt))
    assert not ok and "median" in problems[0], problems
    within = trace([("gemm", 114.0), ("gemm", 115.0), ("relu", 5.0), ("relu", 5.0)])
    assert compare(kernels(within), kernels(kt))[0]  # 8% off: within 15%
    missing = trace([("gemm", 100.0), ("relu", 5.0), ("relu", 5.0)])
    ok, _, problems = compare(kernels(missing), kernels(kt))
    assert not ok and "1 kernels under devtrace, 2" in problems[0], problems
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.json.gz")
        with gzip.open(p, "wt") as f:
            json.dump(dt, f)
        assert sum(len(v) for v in kernels(load(p)).values()) == 4
    text = markdown(rows, [], (1, 2), (0.5, None))
    assert "PASS" in text and "n/a" in text and "reported only" in text
    print("compare_torch.py self-test: ok")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devtrace")
    p.add_argument("--torch")
    p.add_argument("--devtrace-export-s", type=float)
    p.add_argument("--torch-export-s", type=float)
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if not a.devtrace or not a.torch:
        p.error("--devtrace and --torch are required")
    dt, kt = kernels(load(a.devtrace)), kernels(load(a.torch))
    if not dt or not kt:
        print("**FAIL**: no kernels in %s" % ("the devtrace trace" if not dt else "the torch.profiler trace"))
        return 1
    ok, rows, problems = compare(dt, kt)
    sizes = (os.path.getsize(a.devtrace), os.path.getsize(a.torch))
    print(markdown(rows, problems, sizes, (a.devtrace_export_s, a.torch_export_s)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
