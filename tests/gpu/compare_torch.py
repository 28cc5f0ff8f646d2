#!/usr/bin/env python3
"""Compare a devtrace trace with a torch.profiler (Kineto) trace of the same
PyTorch workload: kernel names and counts (must be equal), median kernel
duration per name (must agree within 5%), trace sizes and export times.

  compare_torch.py --devtrace DT.json --torch KINETO.json
                   [--window START_NS END_NS] [--devtrace-export-s S]
                   [--torch-export-s S]
  compare_torch.py --self-test

devtrace records the whole process (warm-up included); --window keeps only
its kernels that started inside [START_NS, END_NS] (CLOCK_REALTIME ns, as
the workload printed them), the span torch.profiler covered. Prints a
markdown section; exit status 1 when names, counts or durations disagree.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile

TOLERANCE = 0.05


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return json.load(f)


def kernels(trace, window=None):
    """name -> list of durations (us) of the kernel events."""
    base_ns = trace.get("baseTimeNanoseconds", 0) or 0
    out = {}
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") != "X" or ev.get("cat") != "kernel":
            continue
        if window is not None:
            start_ns = base_ns + round(float(ev["ts"]) * 1000)
            if not (window[0] <= start_ns <= window[1]):
                continue
        out.setdefault(ev.get("name", ""), []).append(float(ev.get("dur", 0)))
    return out


def compare(dt, kt, tolerance=TOLERANCE):
    """Returns (ok, rows, problems)."""
    rows, problems = [], []
    names = sorted(set(dt) | set(kt))
    for name in names:
        a, b = dt.get(name, []), kt.get(name, [])
        row = {"name": name, "devtrace": len(a), "torch": len(b)}
        if len(a) != len(b):
            problems.append("%s: %d kernels under devtrace, %d under torch.profiler" % (name, len(a), len(b)))
        if a and b:
            ma, mb = statistics.median(a), statistics.median(b)
            row["median_devtrace_us"] = ma
            row["median_torch_us"] = mb
            dev = abs(ma - mb) / mb if mb > 0 else (0.0 if ma == 0 else 1.0)
            row["deviation"] = dev
            if dev > tolerance:
                problems.append("%s: median %.3f us under devtrace, %.3f us under torch.profiler (%.1f%%)"
                                % (name, ma, mb, dev * 100))
        rows.append(row)
    return not problems, rows, problems


def markdown(rows, problems, sizes, exports):
    lines = ["### PyTorch workload: devtrace vs torch.profiler", ""]
    lines.append("| kernel | devtrace | torch.profiler | median devtrace (us) | median torch (us) | deviation |")
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        name = r["name"] if len(r["name"]) <= 80 else r["name"][:77] + "..."
        name = name.replace("|", "\\|")
        if "deviation" in r:
            lines.append("| %s | %d | %d | %.3f | %.3f | %.2f%% |" % (
                name, r["devtrace"], r["torch"], r["median_devtrace_us"], r["median_torch_us"],
                r["deviation"] * 100))
        else:
            lines.append("| %s | %d | %d | | | |" % (name, r["devtrace"], r["torch"]))
    lines.append("")
    lines.append("| | devtrace | torch.profiler |")
    lines.append("|---|---|---|")
    lines.append("| trace size (bytes) | %s | %s |" % (sizes[0], sizes[1]))
    lines.append("| export time (s) | %s | %s |" % (
        "%.3f" % exports[0] if exports[0] is not None else "n/a",
        "%.3f" % exports[1] if exports[1] is not None else "n/a"))
    lines.append("")
    if problems:
        lines.append("**FAIL**: " + "; ".join(problems))
    else:
        lines.append("**PASS**: same kernel names and counts; medians within %d%%." % int(TOLERANCE * 100))
    return "\n".join(lines)


def self_test():
    """The comparison logic on synthetic traces (no GPU needed)."""
    base = 1700000000000000000

    def trace(evs, base_ns=0):
        return {"baseTimeNanoseconds": base_ns, "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": n, "ts": ts, "dur": d} for n, ts, d in evs]}

    dt = trace([("gemm", 10.0, 100.0), ("gemm", 20.0, 102.0), ("relu", 30.0, 5.0),
                ("warmup", -1e6, 1.0)], base)
    kt = trace([("gemm", 1.0, 101.0), ("gemm", 2.0, 100.0), ("relu", 3.0, 5.1)])
    ok, rows, problems = compare(kernels(dt, (base, base + 10**9)), kernels(kt))
    assert ok, problems
    assert [r["name"] for r in rows] == ["gemm", "relu"], rows
    ok, _, problems = compare(kernels(dt), kernels(kt))
    assert not ok and "warmup" in problems[0], problems
    slow = trace([("gemm", 10.0, 120.0), ("gemm", 20.0, 120.0), ("relu", 30.0, 5.0)], base)
    ok, _, problems = compare(kernels(slow), kernels(kt))
    assert not ok and "median" in problems[0], problems
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.json.gz")
        with gzip.open(p, "wt") as f:
            json.dump(dt, f)
        assert sum(len(v) for v in kernels(load(p)).values()) == 4
    text = markdown(rows, [], (1, 2), (0.5, None))
    assert "PASS" in text and "n/a" in text
    print("compare_torch.py self-test: ok")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devtrace")
    p.add_argument("--torch")
    p.add_argument("--window", nargs=2, type=int)
    p.add_argument("--devtrace-export-s", type=float)
    p.add_argument("--torch-export-s", type=float)
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if not a.devtrace or not a.torch:
        p.error("--devtrace and --torch are required")
    dt = kernels(load(a.devtrace), tuple(a.window) if a.window else None)
    kt = kernels(load(a.torch))
    if not dt or not kt:
        print("**FAIL**: no kernels in %s" % ("the devtrace trace" if not dt else "the torch.profiler trace"))
        return 1
    ok, rows, problems = compare(dt, kt)
    sizes = (os.path.getsize(a.devtrace), os.path.getsize(a.torch))
    print(markdown(rows, problems, sizes, (a.devtrace_export_s, a.torch_export_s)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
