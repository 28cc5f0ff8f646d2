"""The flight recorder's memory as a user runs it (the injection library's
ring, DEVTRACE_FLIGHT_RECORDER=SIZE, as `devtrace record --flight-recorder`
sets it): the process's RSS with its ring full, its peak while `devtrace
trigger PID --dump` writes the ring's window, and its peak over a run that
ends well (exit 0: the ring is written by nobody), per ring size, beside the
ring's size and the same program without devtrace, measured in the same run.

  DT_BUILD_DIR=build python3 bench/flight_memory.py [--backend NAME] [SIZE...]

SIZE: bytes with K, M or G (powers of 1024); default 16M 256M 1G. The
program (bench/flight_fill.c) launches 1.5 x SIZE / 64 kernels outside any
user range on the emulated vendor (TOPSPTI by default), which fills the ring
and recycles it (the dump's line says how many records the ring evicted),
then waits. The peak at the dump is VmHWM after the kernel's peak was reset
(/proc/PID/clear_refs) just before the trigger; the dump goes to /dev/null
(the writer formats every event; the file is not kept). The peak at the end
is the run's whole peak (getrusage's ru_maxrss through wait4) of a run
without a dump: above "with the ring full" only by what the end adds.
Linux only; prints figures, asserts nothing.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD = Path(os.environ.get("DT_BUILD_DIR", Path(__file__).resolve().parents[1] / "build"))
SOURCE = Path(__file__).resolve().parents[1]
FILL = BUILD / "bench" / "bench_flight_fill"
DEVTRACE = BUILD / "devtrace"
INJECT = BUILD / "libdevtrace_inject.so"


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    if not m:
        raise SystemExit("a size is bytes with K, M or G, not %r" % text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def mib(kb):
    return "%.1f MB" % (kb * 1024 / 1e6)


def emulator(backend):
    rows = re.findall(r'^DT_VENDOR\((\w+), "(\w+)", "([^"]+)"', (SOURCE / "src/backends/vendors.def").read_text(),
                      re.M)
    for name, var, lib in rows:
        if name == backend:
            return var, BUILD / lib
    raise SystemExit("no backend %s in vendors.def" % backend)


def status(pid, key):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def run(size, launches, backend, runtime, dump):
    """One run of the program: (RSS with the ring full, peak at the dump,
    peak over the run, the dump's seconds and line) in KiB."""
    var, lib = emulator(backend)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, DEVTRACE_OUTPUT=os.path.join(runtime, "unused.json"))
    env.pop("LD_PRELOAD", None)
    if size:
        env.update({var: str(lib), "DEVTRACE_FLIGHT_RECORDER": str(size), "DEVTRACE_BACKEND": backend,
                    "LD_PRELOAD": str(INJECT)})
    p = subprocess.Popen([str(FILL), str(lib), str(launches)], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    if p.stdout.readline() != "filled\n":
        p.kill()
        raise SystemExit("the program did not fill its ring")
    full = status(p.pid, "VmRSS")
    at_dump, seconds, line = 0, 0.0, ""
    if dump:
        with open("/proc/%d/clear_refs" % p.pid, "w") as f:
            f.write("5")  # the peak from now on
        t0 = time.monotonic()
        res = subprocess.run([str(DEVTRACE), "trigger", str(p.pid), "--dump", "-o", "/dev/null"],
                             env=dict(os.environ, XDG_RUNTIME_DIR=runtime), capture_output=True, text=True)
        seconds = time.monotonic() - t0
        at_dump = status(p.pid, "VmHWM")
        line = res.stderr.strip()
        if res.returncode != 0:
            raise SystemExit("the dump failed: " + line)
    p.stdin.close()
    _, code, usage = os.wait4(p.pid, 0)
    if code != 0:
        raise SystemExit("the program ended with status %d" % code)
    return full, at_dump, usage.ru_maxrss, seconds, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="topspti")
    ap.add_argument("sizes", nargs="*", default=["16M", "256M", "1G"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dtfm", dir="/tmp") as runtime:
        os.chmod(runtime, 0o700)
        print("backend %s; RSS and the ring's size in MB (10^6 bytes)" % args.backend)
        print("%-8s %-11s %-12s %-14s %-14s %-13s %-13s %-9s %s" % (
            "ring", "ring (MB)", "no devtrace", "ring full", "peak at dump", "peak at end", "dump/ring",
            "dump (s)", "events dumped, evicted"))
        for text in args.sizes:
            size = parse_size(text)
            launches = int(1.5 * size / 64)
            plain, _, _, _, _ = run(0, launches, args.backend, runtime, False)
            full, at_dump, _, seconds, line = run(size, launches, args.backend, runtime, True)
            full2, _, at_end, _, _ = run(size, launches, args.backend, runtime, False)
            m = re.search(r": (\d+) events; .*ring_evicted (\d+)", line)
            counts = "%s, %s" % (m.group(1), m.group(2)) if m else line
            print("%-8s %-11s %-12s %-14s %-14s %-13s %-13s %-9.2f %s" % (
                text, "%.1f" % (size / 1e6), mib(plain), mib(max(full, full2)), mib(at_dump), mib(at_end),
                "%.2f x" % (at_dump * 1024 / size), seconds, counts))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
