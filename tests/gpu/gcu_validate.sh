#!/usr/bin/env bash
# Validate devtrace's TOPSPTI backend on a real Enflame GCU, and print a report
# to attach to a bug or to docs/backends/topspti.md.
#
#   tests/gpu/gcu_validate.sh [-B BUILD_DIR] [-o OUT_DIR] [-- WORKLOAD...]
#
# What it does:
#   1. builds devtrace against the TopsRider SDK headers ($TOPS_HOME, default
#      /opt/tops), unless BUILD_DIR already holds such a build;
#   2. lists the backends (`devtrace backends`);
#   3. records a short workload with `devtrace record --backend topspti`
#      (default: a torch_gcu loop of matmuls, copies and fills inside devtrace
#      user ranges; or WORKLOAD, any command that uses the GCU);
#   4. runs `devtrace check` and `devtrace stats` on the trace;
#   5. prints what it found: activity kinds seen, flows paired, External ids,
#      clock fit, drops, degraded features, and a verdict.
# Everything is also written to OUT_DIR (default ./gcu-validate-<date>).
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=""
out="gcu-validate-$(date +%Y%m%d-%H%M%S)"
workload=()
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    --) shift; workload=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
report="$out/report.txt"
: >"$report"
say() { echo "$*" | tee -a "$report"; }
section() { say ""; say "== $* =="; }

export TOPS_HOME=${TOPS_HOME:-/opt/tops}
section "environment"
say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "host: $(uname -a)"
say "TOPS_HOME: $TOPS_HOME"
say "devtrace source: $here ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
for h in "$TOPS_HOME/extras/TOPSPTI/include/topspti_activity.h" "$TOPS_HOME/extras/TOPSPTI/lib64/libtopspti.so"; do
  if [ -e "$h" ]; then say "found: $h"; else say "missing: $h"; fi
done
say "DEVTRACE_TOPSPTI_LIBRARY: ${DEVTRACE_TOPSPTI_LIBRARY:-(unset)}"
if command -v dpkg >/dev/null 2>&1; then
  dpkg -l 2>/dev/null | grep -iE 'topsrider|tops-|topspti|enflame|torch-gcu' | head -n 15 | tee -a "$report"
fi
command -v efsmi >/dev/null 2>&1 && efsmi 2>&1 | head -n 20 | tee -a "$report" 

section "build"
if [ -z "$build" ]; then
  build="$out/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  if ! cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DTOPS_HOME="$TOPS_HOME" -DDEVTRACE_BUILD_TESTS=OFF -DDEVTRACE_BUILD_BENCH=OFF \
        >"$out/cmake.log" 2>&1; then
    say "cmake failed; see $out/cmake.log"; tail -n 20 "$out/cmake.log" | tee -a "$report"; exit 1
  fi
  if ! cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1; then
    say "build failed; see $out/build.log"; grep -m 20 -E 'error' "$out/build.log" | tee -a "$report"; exit 1
  fi
fi
grep -E 'TOPSPTI' "$out/cmake.log" 2>/dev/null | tee -a "$report" >/dev/null
if grep -q 'DT_HAVE_TOPSPTI_SDK' "$build/CMakeCache.txt" 2>/dev/null; then
  say "SDK headers: used (records decoded through the SDK's own structs)"
else
  say "SDK headers: NOT used: this build can only decode devtrace's emulator; set TOPS_HOME to the SDK root"
fi
devtrace=$(find "$build" -maxdepth 2 -type f -name devtrace -perm -u+x | head -n 1)
[ -n "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"

section "devtrace backends"
"$devtrace" backends 2>&1 | tee -a "$report"

section "workload"
if [ ${#workload[@]} -eq 0 ]; then
  cat >"$out/workload.py" <<'PY'
# A short GCU workload: kernels, copies both ways and fills, inside nested
# devtrace user ranges (reached through the preloaded devtrace library).
import ctypes, sys
import torch
try:
    import torch_gcu  # noqa: F401  (registers the 'gcu' device)
except ImportError:
    pass
dt = ctypes.CDLL(None)
ranges = hasattr(dt, "dt_range_push")
def push(name):
    if ranges:
        dt.dt_range_push(name.encode(), None)
def pop():
    if ranges:
        dt.dt_range_pop()
dev = torch.device("gcu")
host = torch.randn(512, 512)
for step in range(20):
    push("step")
    x = host.to(dev)                      # HtoD copy
    push("matmul")
    y = x @ x                             # kernel
    pop()
    z = torch.zeros(512, 512, device=dev) # fill (memset or kernel)
    w = (y + z).relu().sum()              # kernels
    w.cpu()                               # DtoH copy
    pop()
torch.gcu.synchronize() if hasattr(torch, "gcu") else None
print("workload done; devtrace ranges:", ranges)
PY
  workload=(python3 "$out/workload.py")
fi
say "command: ${workload[*]}"
trace="$out/gcu.json"
DEVTRACE_LOG=1 "$devtrace" record --backend topspti -o "$trace" -- "${workload[@]}" \
  >"$out/record.log" 2>&1
rc=$?
say "record exit status: $rc (log: $out/record.log)"
grep -iE 'error|topspti|unavailable|refuse|rebuild' "$out/record.log" | head -n 20 | tee -a "$report" >/dev/null
[ -s "$trace" ] || { say "no trace written"; tail -n 30 "$out/record.log" | tee -a "$report"; exit 1; }

section "devtrace check"
"$devtrace" check "$trace" 2>&1 | tee -a "$report"
check_rc=${PIPESTATUS[0]}

section "devtrace stats"
"$devtrace" stats "$trace" >"$out/stats.txt" 2>&1
head -n 60 "$out/stats.txt" | tee -a "$report"

section "findings"
python3 - "$trace" "$check_rc" <<'PY' | tee -a "$report"
import json, sys, collections
path, check_rc = sys.argv[1], int(sys.argv[2])
t = json.load(open(path, encoding="utf-8", errors="replace"))
ev = t.get("traceEvents", [])
d = t.get("devtrace", {})
cats = collections.Counter(e.get("cat", "") for e in ev if e.get("ph") == "X")
device_cats = ("kernel", "gpu_memcpy", "gpu_memset")
print("library:", d.get("library"), "version:", d.get("libraryVersion"))
print("activity kinds seen:")
for c in ("kernel", "gpu_memcpy", "gpu_memset", "privateuse1_runtime", "privateuse1_driver",
          "user_annotation", "gpu_user_annotation"):
    print(f"  {c:22s} {cats.get(c, 0)}")
starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
paired = sum(1 for i in starts if starts[i] == 1 and ends.get(i) == 1)
dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in device_cats]
print(f"flows: {len(starts)} starts, {len(ends)} finishes, {paired} paired")
with_corr = sum(1 for e in dev if e.get("args", {}).get("correlation"))
print(f"device events with a correlation id: {with_corr} of {len(dev)}")
ext = [e["args"]["External id"] for e in dev if "External id" in e.get("args", {})]
print(f"device events with an External id: {len(ext)} of {len(dev)} ({len(set(ext))} distinct ids)")
api = [e for e in ev if e.get("ph") == "X" and e.get("cat", "").startswith("privateuse1_")]
generic = sum(1 for e in api if "#" in e.get("name", ""))
print(f"API events with a generic fallback name: {generic} of {len(api)}")
named_tids = {(e.get("pid"), e.get("tid")) for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
api_rows = {(e.get("pid"), e.get("tid")) for e in api}
print(f"API rows named by thread metadata: {len(api_rows & named_tids)} of {len(api_rows)}")
k = sorted(e.get("dur", 0) for e in dev if e.get("cat") == "kernel")
if k:
    print(f"kernel durations (us): min {k[0]}, median {k[len(k)//2]}, max {k[-1]}")
print("clock fit:", json.dumps(d.get("clock")))
print("loss:", json.dumps(d.get("loss")))
print("notes:", json.dumps(d.get("notes"), indent=1))
problems = []
if check_rc != 0: problems.append("devtrace check failed")
if not cats.get("kernel"): problems.append("no kernels recorded")
if not cats.get("privateuse1_runtime"): problems.append("no runtime API calls recorded")
if len(starts) == 0 or paired != len(starts): problems.append("flows missing or unpaired")
if dev and not ext: problems.append("no External ids (API callbacks not delivered?)")
if (d.get("loss") or {}).get("total"): problems.append("records were lost (see loss)")
err = (d.get("clock") or {}).get("errorBoundNs")
if err is not None and err > 1000: problems.append(f"clock error bound {err} ns > 1 us")
print("verdict:", "OK" if not problems else "PROBLEMS: " + "; ".join(problems))
PY
say ""
say "report: $report (trace: $trace)"
