#!/usr/bin/env python3
"""How a `devtrace record` trace of a PyTorch program lines up with
torch.profiler's own trace of the same run (activities=[CPU]: Kineto leaves
the device to devtrace). Used by tests/gpu/torch_record_compare.sh.

  torch_record_compare.py workload --device cuda --torch-trace KT [--steps N]
  torch_record_compare.py workload --device emu --emulator LIB --torch-trace KT [--steps N]
      a small model step (matmul, relu, softmax on CUDA; a custom op that
      launches emulated kernels on --device emu) under torch.profiler with
      CPU activity only, exported to KT. Run it under `devtrace record`.
  torch_record_compare.py compare --devtrace DT --torch KT [--expect-ops A,B] [--min-linked F]
      the post-hoc merge: every runtime/driver API call devtrace recorded is
      given to the innermost torch cpu_op on the same thread that contains
      its start (both traces are on CLOCK_REALTIME and name host threads by
      their Linux tid); device activity follows its API call through the
      vendor correlation id. Prints a markdown report: how many launches and
      device events resolve to an op, device time per op, the clock margins
      (how far inside its op each launch starts and ends: a negative margin
      is a clock disagreement), whether devtrace's External ids (Kineto's
      CUPTI external correlation, when both subscribe) name the same ops.
      Exit status 1 when fewer than --min-linked (0.95) of the launches in
      torch's window resolve, or an --expect-ops op got no device activity.
  torch_record_compare.py --self-test
"""
import argparse
import bisect
import collections
import gzip
import json
import statistics
import sys

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return json.load(f)


def absolute(trace, e):
    """(start, end) in CLOCK_REALTIME ns: Kineto's relative microseconds."""
    base = trace.get("baseTimeNanoseconds", 0) or 0
    start = base + round(float(e["ts"]) * 1000)
    return start, start + round(float(e.get("dur", 0)) * 1000)


def is_api(e):
    cat = e.get("cat", "")
    return cat.endswith("_runtime") or cat.endswith("_driver")


class OpIndex:
    """torch's cpu_ops per thread, for 'innermost op containing t'."""

    def __init__(self, torch_trace):
        self.by_tid = collections.defaultdict(list)
        self.window = None
        for e in torch_trace["traceEvents"]:
            if e.get("ph") != "X" or e.get("cat") != "cpu_op":
                continue
            start, end = absolute(torch_trace, e)
            self.by_tid[e["tid"]].append((start, end, e["name"], e.get("args", {}).get("External id")))
            lo, hi = self.window or (start, end)
            self.window = (min(lo, start), max(hi, end))
        for ops in self.by_tid.values():
            ops.sort()
        self.starts = {tid: [o[0] for o in ops] for tid, ops in self.by_tid.items()}

    def innermost(self, tid, t):
        ops = self.by_tid.get(tid)
        if not ops:
            return None
        best = None
        for i in range(bisect.bisect_right(self.starts[tid], t) - 1, -1, -1):
            start, end, name, ext = ops[i]
            if start <= t <= end and (best is None or start > best[0]):
                best = ops[i]
                break  # sorted by start: the first container found from the right is innermost
        return best


def compare(dt, kt, expect_ops=(), min_linked=0.95):
    """Returns (ok, markdown lines)."""
    index = OpIndex(kt)
    lines, ok = [], True
    if index.window is None:
        return False, ["**FAIL**: the torch.profiler trace has no cpu_op events"]
    lo, hi = index.window
    apis, devices = [], collections.defaultdict(list)
    for e in dt["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if is_api(e):
            apis.append(e)
        elif e.get("cat") in DEVICE_CATS:
            devices[e.get("args", {}).get("correlation")].append(e)
    in_window = resolved = 0
    margins_start, margins_end = [], []
    op_of_corr = {}
    for a in apis:
        start, end = absolute(dt, a)
        if not lo <= start <= hi:
            continue
        in_window += 1
        op = index.innermost(a["tid"], start)
        if op is None:
            continue
        resolved += 1
        margins_start.append(start - op[0])
        margins_end.append(op[1] - end)
        op_of_corr[a.get("args", {}).get("correlation")] = op
    device_total = device_linked = 0
    per_op = collections.defaultdict(lambda: [0, 0])
    ext_same = ext_checked = 0
    for corr, evs in devices.items():
        for e in evs:
            start, _ = absolute(dt, e)
            if not lo <= start <= hi + 10**9:  # device work may end after the last op
                continue
            device_total += 1
            op = op_of_corr.get(corr)
            if op is None:
                continue
            device_linked += 1
            per_op[op[2]][0] += 1
            per_op[op[2]][1] += round(float(e.get("dur", 0)) * 1000)
            ext = e.get("args", {}).get("External id")
            if ext is not None and op[3] is not None:
                ext_checked += 1
                ext_same += ext == op[3]
    frac = resolved / in_window if in_window else 0.0
    lines.append("| measure | value |")
    lines.append("|---|---|")
    lines.append("| API calls in torch's window | %d |" % in_window)
    lines.append("| ... inside a torch cpu_op on the same thread | %d (%.1f%%) |" % (resolved, 100 * frac))
    lines.append("| device activities in the window | %d |" % device_total)
    lines.append("| ... linked to a torch op through their launch | %d |" % device_linked)
    if margins_start:
        lines.append("| launch start - op start (us): min / median | %.3f / %.3f |"
                     % (min(margins_start) / 1000, statistics.median(margins_start) / 1000))
        lines.append("| op end - launch end (us): min / median | %.3f / %.3f |"
                     % (min(margins_end) / 1000, statistics.median(margins_end) / 1000))
        negative = sum(1 for m in margins_start + margins_end if m < 0)
        lines.append("| negative margins (clock disagreements) | %d |" % negative)
    lines.append("| devtrace External ids checked against the merge | %d, same op: %d |" % (ext_checked, ext_same))
    tids_dt = {a["tid"] for a in apis}
    tids_kt = set(index.by_tid)
    lines.append("| API threads also in torch's trace | %d of %d |" % (len(tids_dt & tids_kt), len(tids_dt)))
    lines.append("")
    lines.append("| torch op | device activities | device time (us) |")
    lines.append("|---|---|---|")
    for name, (n, ns) in sorted(per_op.items(), key=lambda kv: -kv[1][1])[:15]:
        lines.append("| %s | %d | %.3f |" % (name, n, ns / 1000))
    if in_window == 0 or frac < min_linked:
        ok = False
        lines.append("")
        lines.append("**FAIL**: %.1f%% of the API calls in torch's window resolve to an op (want %.0f%%)"
                     % (100 * frac, 100 * min_linked))
    for op in expect_ops:
        if per_op.get(op, [0])[0] == 0:
            ok = False
            lines.append("**FAIL**: %s got no device activity" % op)
    return ok, lines


# ---------------------------------------------------------------- workloads

def workload(args):
    import torch
    from torch.profiler import ProfilerActivity, profile

    if args.device == "emu":
        import ctypes

        emu = ctypes.CDLL(args.emulator)
        grid = (ctypes.c_int * 3)(8, 1, 1)

        @torch.library.custom_op("devtrace_gpu::emu_mm", mutates_args=())
        def emu_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            assert emu.emu_launch_kernel(0, 1, b"emu_gemm", grid, grid, ctypes.c_uint64(20000)) == 0
            assert emu.emu_synchronize(0, 1) == 0
            return a @ b

        a = b = torch.ones(16, 16)

        def step():
            torch.softmax(torch.relu(emu_mm(a, b)), dim=1)
    else:
        dev = torch.device("cuda")
        a = torch.randn(1024, 1024, device=dev)
        b = torch.randn(1024, 1024, device=dev)

        def step():
            torch.softmax(torch.relu(a @ b), dim=1)
        step()  # warm-up outside the profile: cuBLAS handles, kernel choice
        torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
        if args.device == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(args.torch_trace)


# ---------------------------------------------------------------- self-test

def _trace(base, events):
    return {"baseTimeNanoseconds": base, "traceEvents": events}


def _x(cat, name, tid, ts_us, dur_us, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_us, "dur": dur_us, "args": args}


def self_test():
    base_kt, base_dt = 1_700_000_000_000_000_000, 1_699_999_999_000_000_000  # different bases, same clock
    shift = (base_kt - base_dt) / 1000  # us
    kt = _trace(base_kt, [
        _x("cpu_op", "aten::mm", 7, 10, 20, **{"External id": 3}),
        _x("cpu_op", "aten::addmm", 7, 12, 10, **{"External id": 4}),  # nested: innermost wins
        _x("cpu_op", "aten::relu", 7, 40, 5, **{"External id": 5}),
        _x("cpu_op", "aten::relu", 8, 40, 5, **{"External id": 6}),
    ])
    dt = _trace(base_dt, [
        _x("cuda_runtime", "cudaLaunchKernel", 7, shift + 13, 1, correlation=1),
        _x("kernel", "gemm", 0, shift + 14, 3, correlation=1, **{"External id": 4}),
        _x("cuda_runtime", "cudaLaunchKernel", 7, shift + 41, 1, correlation=2),
        _x("kernel", "relu_kernel", 0, shift + 42, 1, correlation=2),
        _x("cuda_runtime", "cudaLaunchKernel", 8, shift + 41, 1, correlation=3),
        _x("kernel", "relu_kernel", 0, shift + 43, 1, correlation=3),
        _x("cuda_runtime", "cudaMalloc", 9, shift + 41, 1, correlation=4),  # a thread torch did not see
    ])
    ok, lines = compare(dt, kt, expect_ops=["aten::addmm", "aten::relu"], min_linked=0.7)
    text = "\n".join(lines)
    assert ok, text
    assert "| API calls in torch's window | 4 |" in text, text
    assert "| ... inside a torch cpu_op on the same thread | 3 (75.0%) |" in text, text
    assert "| aten::addmm | 1 | 3.000 |" in text, text
    assert "| aten::relu | 2 | 2.000 |" in text, text
    assert "aten::mm |" not in text, text
    assert "| devtrace External ids checked against the merge | 1, same op: 1 |" in text, text
    assert "| negative margins (clock disagreements) | 0 |" in text, text
    ok, lines = compare(dt, kt, expect_ops=["aten::softmax"], min_linked=0.7)
    assert not ok and any("aten::softmax got no device activity" in x for x in lines)
    ok, lines = compare(dt, kt, min_linked=0.9)
    assert not ok
    # a devtrace clock 8.5 us late makes a launch end after its op: a negative margin
    late = _trace(base_dt + 8500, dt["traceEvents"][:2])
    ok, lines = compare(late, kt, min_linked=0.0)
    assert "| negative margins (clock disagreements) | 0 |" not in "\n".join(lines)
    print("self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("workload")
    w.add_argument("--device", choices=["cuda", "emu"], required=True)
    w.add_argument("--emulator")
    w.add_argument("--torch-trace", required=True)
    w.add_argument("--steps", type=int, default=20)
    c = sub.add_parser("compare")
    c.add_argument("--devtrace", required=True)
    c.add_argument("--torch", required=True)
    c.add_argument("--expect-ops", default="")
    c.add_argument("--min-linked", type=float, default=0.95)
    args = parser.parse_args()
    if args.cmd == "workload":
        workload(args)
        return 0
    ok, lines = compare(load(args.devtrace), load(args.torch), [o for o in args.expect_ops.split(",") if o],
                        args.min_linked)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
