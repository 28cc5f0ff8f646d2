#!/usr/bin/env python3
"""PyTorch workloads for the CUDA validation (tests/gpu/cuda_validate.sh).

  torch_workload.py model [--steps N] [--profiler none|torch|devtrace] [--trace-out TRACE] [--profile-first]
      matmul -> relu -> softmax, N steps, after a warm-up of about a second
      of matmuls (clocks up, cuBLAS handles made, kernels chosen). With
      --profile-first the profiler starts before the program's first CUDA
      call (before the warm-up), and records it too.
  torch_workload.py loop [--launches N] [--profiler none|torch|devtrace] [--trace-out TRACE]
      a launch-bound loop of N tiny kernels (in-place add on one element),
      after 1,000 of them as a warm-up.
  torch_workload.py warmup [--seconds S]
      only the warm-up (a GPU that has just idled runs slow at first).

Both profilers record the measured span alone, in this process, the same
way: started after the warm-up, stopped after it, their trace exported
after the stop and timed the same way (torch.profiler with
activities=[CUDA]; devtrace's Python API with the cupti backend, which
records kernels, copies, memsets, runtime and driver calls). Prints one
JSON line: the span in seconds ("loop_s"), the export time ("export_s")
and the trace's size ("trace_bytes") when traced, and the libcupti files
mapped in the process ("cupti_libraries": devtrace's and torch's must be
one).
"""
import argparse
import json
import os
import sys
import time


def warm_up(seconds):
    import torch
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            a = torch.mm(a, b).clamp_(-1, 1)
        torch.cuda.synchronize()


class Profiler:
    """One of: nothing, torch.profiler (CUDA activity), devtrace."""

    def __init__(self, which, trace_out):
        self.which, self.trace_out, self.p = which, trace_out, None

    def __enter__(self):
        if self.which == "torch":
            from torch.profiler import ProfilerActivity, profile
            self.p = profile(activities=[ProfilerActivity.CUDA])
            self.p.__enter__()
        elif self.which == "devtrace":
            import devtrace
            self.p = devtrace.profile(backend="cupti")
            self.p.start()
        return self

    def __exit__(self, *exc):
        if self.which == "torch":
            self.p.__exit__(None, None, None)
        elif self.which == "devtrace":
            self.p.stop()

    def export(self, result):
        if self.which == "none" or not self.trace_out:
            return
        t0 = time.perf_counter()
        if self.which == "torch":
            self.p.export_chrome_trace(self.trace_out)
        else:
            self.p.write(self.trace_out)
            result["lost"] = self.p.lost
        result["export_s"] = time.perf_counter() - t0
        result["trace_bytes"] = os.path.getsize(self.trace_out)


def cupti_libraries():
    """The libcupti files mapped in this process, by real path."""
    found = set()
    try:
        for line in open("/proc/self/maps", encoding="utf-8", errors="replace"):
            parts = line.split(None, 5)
            path = parts[5].strip() if len(parts) == 6 else ""
            if "/libcupti" in path:
                found.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(found)


def model(steps, which, trace_out, profile_first=False):
    import torch
    result = {}
    prof = Profiler(which, trace_out)
    if profile_first:
        prof.__enter__()
    torch.manual_seed(0)
    warm_up(1.0)
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    if not profile_first:
        prof.__enter__()
    t0 = time.perf_counter()
    for _ in range(steps):
        c = torch.relu(a @ b)
        torch.softmax(c, dim=1)
    torch.cuda.synchronize()
    result["loop_s"] = time.perf_counter() - t0
    prof.__exit__(None, None, None)
    prof.export(result)
    result["cupti_libraries"] = cupti_libraries()
    return result


def loop(launches, which, trace_out):
    import torch
    x = torch.zeros(1, device="cuda")
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()
    result = {}
    prof = Profiler(which, trace_out)
    with prof:
        t0 = time.perf_counter()
        for _ in range(launches):
            x.add_(1)
        torch.cuda.synchronize()
        result["loop_s"] = time.perf_counter() - t0
    prof.export(result)
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["model", "loop", "warmup"])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--launches", type=int, default=100000)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--profiler", choices=["none", "torch", "devtrace"], default="none")
    p.add_argument("--trace-out")
    p.add_argument("--profile-first", action="store_true")
    a = p.parse_args()
    if a.what == "warmup":
        warm_up(a.seconds)
        r = {}
    elif a.what == "model":
        r = model(a.steps, a.profiler, a.trace_out, a.profile_first)
    else:
        r = loop(a.launches, a.profiler, a.trace_out)
    print(json.dumps(r))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
