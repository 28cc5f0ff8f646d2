"""How long `devtrace trigger --steps N` takes from the command to the trace
in place, as a user runs it: one process and `--steps 1`, and four ranks of
one job and `--job --steps 3`, each run `devtrace record --on-demand` of the
emulator's runner stepping every P ms with a kernel per step; beside the
baseline of the same run: the window the trace holds (N steps of P ms),
and the wait for the first step, which the steps themselves impose.

  DT_BUILD_DIR=build python3 bench/trigger_latency.py [--period-ms P] [--rounds R]

For each round: t0 before the command starts; the window [start, end) the
trace says (devtrace.captureWindow, realtime); t1 when the command has
exited with every trace renamed into place. Printed, as medians over the
rounds: to the window (t0 to its start: the command's start, arming, and
the wait for a step boundary that is a multiple of the step multiple; up
to N x P on its own), the window (N steps), after it (the window's end to
t1: the vendor's flush, the trace written, renamed, the command's exit),
and the whole. With four ranks, their windows are per rank (each starts
at its own next multiple of 3: these processes step alone, not together)
and t1 waits for the last. Prints figures, asserts nothing.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

BUILD = Path(os.environ.get("DT_BUILD_DIR", Path(__file__).resolve().parents[1] / "build"))
DEVTRACE = BUILD / "devtrace"
RUNNER = BUILD / "devtrace-emu-run"
EMULATOR = BUILD / "emu" / "libtopspti.so"

SCENARIO = """vendor topspti
devices 1
thread "train" {
  repeat 1000000 {
    step
    range "step" {
      kernel device=0 stream=1 name="k" grid=1,1,1 block=32,1,1 dur_us=200
    }
    sleep_us %d
  }
}
"""


def listeners(tmp, runtime, n, period_ms):
    scenario = tmp / "steps.scn"
    scenario.write_text(SCENARIO % (period_ms * 1000))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), DEVTRACE_TOPSPTI_LIBRARY=str(EMULATOR),
               SLURM_JOB_ID="latency", WORLD_SIZE=str(n))
    env.pop("LD_PRELOAD", None)
    procs = []
    for rank in range(n):
        procs.append(subprocess.Popen([str(DEVTRACE), "record", "--on-demand", "-o", str(tmp / "unused.json"), "--",
                                       str(RUNNER), "--quiet", str(scenario)], env=dict(env, RANK=str(rank)),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    sockets = runtime / "devtrace"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(list(sockets.glob("*.sock")) if sockets.exists() else []) < n:
        time.sleep(0.05)
    time.sleep(0.5)  # a few steps
    return procs, [int(p.name.split(".")[0]) for p in sockets.glob("*.sock")]


def one(runtime, out, args):
    t0 = time.time_ns()
    res = subprocess.run([str(DEVTRACE), "trigger", *args, "-o", str(out)], env=dict(os.environ,
                         XDG_RUNTIME_DIR=str(runtime)), capture_output=True, text=True)
    t1 = time.time_ns()
    if res.returncode != 0:
        raise SystemExit("trigger failed: " + res.stderr)
    paths = re.findall(r"wrote (\S+): ", res.stderr)
    windows = []
    for p in paths:
        with open(p) as f:
            w = json.load(f)["devtrace"]["captureWindow"]
        windows.append((w["startNs"], w["endNs"]))
    first = min(s for s, _ in windows)
    last = max(e for _, e in windows)
    spans = [e - s for s, e in windows]
    return (first - t0) / 1e6, max(spans) / 1e6, (t1 - last) / 1e6, (t1 - t0) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--period-ms", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    print("steps every %d ms (a kernel of 0.2 ms each); medians of %d rounds, in ms" % (a.period_ms, a.rounds))
    print("%-26s %-12s %-10s %-10s %-10s %s" % ("", "to window", "window", "after it", "whole", "baseline: N x P"))
    for ranks, steps in ((1, 1), (4, 3)):
        tmp = Path(tempfile.mkdtemp(prefix="dtlat", dir="/tmp"))
        runtime = tmp / "run"
        runtime.mkdir(mode=0o700)
        procs, pids = listeners(tmp, runtime, ranks, a.period_ms)
        try:
            target = [str(pids[0])] if ranks == 1 else ["--job", "latency"]
            rows = [one(runtime, tmp / "t.json", [*target, "--steps", str(steps)]) for _ in range(a.rounds)]
        finally:
            for p in procs:  # record and the runner it started
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
        med = [statistics.median(r[i] for r in rows) for i in range(4)]
        label = "%d step%s, %d rank%s" % (steps, "" if steps == 1 else "s", ranks, "" if ranks == 1 else "s")
        print("%-26s %-12.1f %-10.1f %-10.1f %-10.1f %d" % (label, *med, steps * a.period_ms))


if __name__ == "__main__":
    main()
