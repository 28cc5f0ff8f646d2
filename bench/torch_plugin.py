#!/usr/bin/env python3
"""What devtrace.torch's Kineto plugin adds to torch.profiler's stop and
write: the same run of torch ops, each launching one kernel on an emulated
accelerator (one kernel and one runtime call per op), recorded three ways:

  torch     torch.profiler(activities=[CPU]) alone (the baseline)
  plugin    the same with devtrace.torch.enable(BACKEND): the device
            activity handed to torch.profiler, linked to its ops
  devtrace  devtrace.profile(BACKEND) alone, written as devtrace's own trace

  DEVTRACE_LIBRARY=build/libdevtrace.so PYTHONPATH=python DEVTRACE_TOPSPTI_LIBRARY=build/emu/libtopspti.so \\
      python3 bench/torch_plugin.py [OPS] [ROUNDS]

With BENCH_PLUGIN_BEFORE=DIR (a copy of python/ from another commit, e.g.
`git worktree add` or `git archive` of it), a fourth mode "before" runs the
plugin of DIR (built into DIR's own torch extension folder), so that a change
to the plugin is measured against the old one in the same run.

Each (mode, round) is a fresh process (a plugin cannot be unregistered from
Kineto); rounds are interleaved so that the machine's load falls on every
mode alike. "stop" is the profiler's __exit__ (for torch.profiler: Kineto's
processing, the plugin's hand-over and torch's own collation), "write" is
export_chrome_trace (devtrace: Profile.write). Prints min and median over
the rounds, the plugin's part (plugin - torch, per round), the load average
before and after; it is a benchmark, not a test.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BACKEND = os.environ.get("BENCH_BACKEND", "topspti")
# kernel names of the length torch's own kernels have
NAMES = ["void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, std::array<char*, 3> >"
         "(int, at::native::AddFunctor<float>, std::array<char*, 3>)",
         "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float> > >",
         "ampere_sgemm_128x64_nn", "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>",
         "elementwise_relu_f32", "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, 8>",
         "memset_zero_kernel", "void at::native::unrolled_elementwise_kernel<at::native::MulFunctor<float> >"]


def child(mode, ops, out):
    import ctypes

    import torch

    emu_path = os.environ["DEVTRACE_%s_LIBRARY" % BACKEND.upper()]
    if mode in ("plugin", "before"):
        import devtrace.torch
        devtrace.torch.enable(backend=BACKEND)
    emu = ctypes.CDLL(emu_path)
    grid = (ctypes.c_int * 3)(4, 2, 1)
    block = (ctypes.c_int * 3)(128, 1, 1)
    names = [n.encode() for n in NAMES]
    state = {"i": 0}
    launch_kernel, sync = emu.emu_launch_kernel, emu.emu_synchronize

    def launch(x):
        i = state["i"]
        state["i"] = i + 1
        launch_kernel(0, 1 + (i & 1), names[i & 7], grid, block, ctypes.c_uint64(1000))
        if (i & 1023) == 1023:
            sync(0, 1)
            sync(0, 2)
        return x

    lib = torch.library.Library("dtbench", "DEF")
    lib.define("launch(Tensor x) -> Tensor")
    lib.impl("launch", launch, "CPU")
    op = torch.ops.dtbench.launch
    x = torch.ones(4)

    def run():
        for _ in range(ops):
            op(x)
        sync(0, 1)
        sync(0, 2)

    trace = os.path.join(out, "%s.json" % mode)
    result = {}
    if mode == "devtrace":
        import devtrace
        p = devtrace.profile(backend=BACKEND)
        p.start()
        run()
        t0 = time.perf_counter()
        p.stop()
        t1 = time.perf_counter()
        p.write(trace)
        t2 = time.perf_counter()
        result["events"] = len(p)
    else:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU])
        prof.__enter__()
        run()
        t0 = time.perf_counter()
        prof.__exit__(None, None, None)
        t1 = time.perf_counter()
        prof.export_chrome_trace(trace)
        t2 = time.perf_counter()
        if mode in ("plugin", "before"):
            import devtrace.torch
            result["plugin"] = devtrace.torch.last_session()
    result.update(stop=t1 - t0, write=t2 - t1, bytes=os.path.getsize(trace))
    print(json.dumps(result))


def fmt(values):
    return "min %7.3f  median %7.3f s" % (min(values), statistics.median(values))


def main():
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    before = os.environ.get("BENCH_PLUGIN_BEFORE")
    modes = ("torch", "plugin", "devtrace") + (("before",) if before else ())
    times = {m: {"stop": [], "write": [], "total": []} for m in modes}
    load0 = os.getloadavg()
    info = {}
    with tempfile.TemporaryDirectory() as out:
        for r in range(rounds):
            for m in modes:
                env = dict(os.environ)
                if m == "before":
                    env["PYTHONPATH"] = before
                    env["TORCH_EXTENSIONS_DIR"] = os.path.join(before, ".torch_extensions")
                res = subprocess.run([sys.executable, __file__, "--child", m, str(ops), out],
                                     capture_output=True, text=True, env=env)
                if res.returncode != 0:
                    sys.exit("%s failed:\n%s" % (m, res.stderr[-4000:]))
                got = json.loads(res.stdout.strip().splitlines()[-1])
                for k in ("stop", "write"):
                    times[m][k].append(got[k])
                times[m]["total"].append(got["stop"] + got["write"])
                info[m] = got
    load1 = os.getloadavg()
    kept = info["plugin"]["plugin"]["kept"]
    print("%d ops, each launching one kernel on the emulated %s; %d rounds; load average %.2f before, %.2f after"
          % (ops, BACKEND, rounds, load0[0], load1[0]))
    print("plugin kept %d kernels, %d runtime calls, linked %d; devtrace recorded %d events"
          % (kept["kernel"], kept["runtime"], info["plugin"]["plugin"]["linked"], info["devtrace"]["events"]))
    for m in modes:
        print("%-9s stop  %s   write %s   total %s   (%.0f MB)" % (m, fmt(times[m]["stop"]), fmt(times[m]["write"]),
                                                                  fmt(times[m]["total"]), info[m]["bytes"] / 1e6))
    part = [p - t for p, t in zip(times["plugin"]["total"], times["torch"]["total"])]
    part_stop = [p - t for p, t in zip(times["plugin"]["stop"], times["torch"]["stop"])]
    print("plugin's part (plugin - torch, per round): stop %s   total %s" % (fmt(part_stop), fmt(part)))
    if before:
        old = [p - t for p, t in zip(times["before"]["total"], times["torch"]["total"])]
        old_stop = [p - t for p, t in zip(times["before"]["stop"], times["torch"]["stop"])]
        print("before's part (before - torch, per round): stop %s   total %s" % (fmt(old_stop), fmt(old)))
        print("plugin's part / before's part (medians): stop %.2f   total %.2f"
              % (statistics.median(part_stop) / statistics.median(old_stop),
                 statistics.median(part) / statistics.median(old)))
    print("torch.profiler with the plugin / devtrace's own pipeline (medians of stop + write): %.1fx"
          % (statistics.median(times["plugin"]["total"]) / statistics.median(times["devtrace"]["total"])))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
