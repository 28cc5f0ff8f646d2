#!/usr/bin/env bash
# Validate devtrace's PTI backend on an Intel GPU (Data Center GPU Max, Arc,
# or any GPU with oneAPI's Level Zero driver and PTI-SDK), and print a
# report to attach to a bug or to docs/backends/pti.md.
#
#   tests/gpu/xpu_validate.sh [-B BUILD_DIR] [-o OUT_DIR] [-- WORKLOAD...]
#   tests/gpu/xpu_validate.sh --dry-run BUILD_DIR [-o OUT_DIR]   (no GPU: the emulator; a temporary OUT_DIR by default)
#
# What it does, each step under a time limit (the whole run at most about
# 19 minutes, 9 of them the build; with -B BUILD_DIR at most about 10):
#   1. finds PTI-SDK (PTI_ROOT, ONEAPI_ROOT/pti/latest or
#      /opt/intel/oneapi/pti/latest) and its libpti_view.so and
#      pti/pti_view.h, and reports the versions (PTI, driver, torch);
#   2. compiles devtrace's PTI declaration (src/backends/pti_abi.h) against
#      the SDK's headers: every record size, field offset and value devtrace
#      reads must be the SDK's (a static-assert block);
#   3. builds devtrace (unless BUILD_DIR holds a build) and lists the
#      backends (`devtrace backends`);
#   4. records a short workload with `devtrace record --backend pti`
#      (default: torch matmuls, copies both ways and fills on xpu:0 inside
#      devtrace user ranges; or WORKLOAD, any command that uses the GPU);
#   5. runs `devtrace check` and `devtrace stats` on the trace;
#   6. prints what it found: kinds seen, flows paired, External ids,
#      devices (PCI address and UUID), streams (SYCL queues), clock,
#      losses, notes, and a verdict.
# It writes at most four small files into OUT_DIR (default
# ./xpu-validate-<date>): report.txt, pti.json.gz (the trace), record.log
# (its last 200 lines) and, when it builds, build.log (its last 200 lines).
# Exit status 0 when the verdict is OK.
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/tests/gpu/validate_lib.sh"
validate_options xpu 29 "$@"
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-xpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
python=${PYTHON:-python3}
# every step is bounded: a hung driver or workload ends the step, not the run
step() { local limit=$1; shift; timeout --kill-after=10 "$limit" "$@"; }

root=${PTI_ROOT:-${ONEAPI_ROOT:+$ONEAPI_ROOT/pti/latest}}
root=${root:-/opt/intel/oneapi/pti/latest}
report_environment
if [ "$dry" = 1 ]; then
  say "dry run: devtrace's PTI emulator stands in for PTI-SDK ($build/emu/libpti_view.so)"
  export DEVTRACE_PTI_LIBRARY="$build/emu/libpti_view.so"
else
  say "PTI root: $root (PTI_ROOT=${PTI_ROOT:-unset}, ONEAPI_ROOT=${ONEAPI_ROOT:-unset})"
  lib=""
  for l in "$root/lib/libpti_view.so" "$root/lib/libpti_view.so.0" "$root/lib64/libpti_view.so"; do
    [ -e "$l" ] && lib=$l && break
  done
  say "libpti_view.so: ${lib:-NOT FOUND under $root/lib}"
  [ -e "$root/include/pti/pti_version.h" ] && grep -m1 "PTI_VERSION_STRING" "$root/include/pti/pti_version.h" | tee -a "$report"
  say "DEVTRACE_PTI_LIBRARY: ${DEVTRACE_PTI_LIBRARY:-(unset)}"
  say "ZE_ENABLE_TRACING_LAYER: ${ZE_ENABLE_TRACING_LAYER:-(unset)}"
  command -v xpu-smi >/dev/null 2>&1 && step 30 xpu-smi discovery 2>&1 | head -n 25 | tee -a "$report"
  command -v sycl-ls >/dev/null 2>&1 && step 30 sycl-ls 2>&1 | head -n 10 | tee -a "$report"
  step 60 "$python" -c 'import torch; print("torch", torch.__version__, "XPUs",
      torch.xpu.device_count() if hasattr(torch, "xpu") else "none")' 2>&1 | tail -n 1 | tee -a "$report"
fi

section "record layouts against the SDK headers"
layouts_ok=1
if [ "$dry" = 1 ]; then
  say "dry run: no SDK headers (the declaration is PTI 0.17.0's, src/backends/pti_abi.h)"
elif [ ! -e "$root/include/pti/pti_view.h" ]; then
  layouts_ok=0
  say "pti/pti_view.h not found under $root/include: layouts NOT checked"
else
  printf '#include "backends/pti_abi.h"\nint main(void) { return 0; }\n' >"$work/layout.c"
  if step 60 "${CC:-cc}" -std=c11 -DDT_HAVE_PTI_SDK=1 -I"$here/src" -isystem "$root/include" "$work/layout.c" \
       -o "$work/layout" >"$work/layout.log" 2>&1; then
    say "every record size, field offset and value devtrace reads is the SDK's ($root/include/pti/pti_view.h)"
  else
    layouts_ok=0
    say "LAYOUTS DIFFER from the SDK's (or pti_view.h did not compile):"
    grep -m 20 -E "error|assert" "$work/layout.log" | tee -a "$report"
  fi
fi

section "build"
if [ -z "$build" ]; then
  build="$work/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  if ! step 120 cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTRACE_BUILD_TESTS=OFF \
        -DDEVTRACE_BUILD_BENCH=OFF -DPTI_ROOT="$root" >"$work/build.log" 2>&1 ||
     ! step 420 cmake --build "$build" -j "$(nproc)" --target devtrace_cli devtrace_inject >>"$work/build.log" 2>&1; then
    tail -n 200 "$work/build.log" >"$out/build.log"
    say "build failed; see $out/build.log"; grep -m 20 -E 'error' "$work/build.log" | tee -a "$report"; exit 1
  fi
  tail -n 200 "$work/build.log" >"$out/build.log"
fi
devtrace=$(find "$build" -maxdepth 2 -type f -name devtrace -perm -u+x | head -n 1)
[ -n "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"

section "devtrace backends"
step 30 "$devtrace" backends 2>&1 | grep -A1 -E "^(pti|null) " | tee -a "$report"

section "workload"
if [ "$dry" = 1 ]; then
  cat >"$work/workload.scn" <<'SCN'
vendor pti
devices 2
range "step" {
  op 1 {
    memcpy device=0 stream=1 kind=htod bytes=1048576 dur_us=50
    kernel device=0 stream=1 name="_ZN4gemm6kernelEv" grid=64,1,1 block=256,1,1 dur_us=100
    memset device=0 stream=1 bytes=1048576 dur_us=10 async
  }
  op 2 {
    kernel device=1 stream=2 name="relu" grid=8,1,1 block=128,1,1 dur_us=20
  }
  memcpy device=0 stream=1 kind=dtoh bytes=4096 dur_us=5
}
sync
SCN
  cmd=("$build/devtrace-emu-run" --quiet --library "$DEVTRACE_PTI_LIBRARY" "$work/workload.scn")
elif [ ${#workload[@]} -gt 0 ]; then
  cmd=("${workload[@]}")
else
  cat >"$work/workload.py" <<'PY'
# A short workload on xpu:0: matmuls (kernels), copies both ways, fills,
# inside devtrace user ranges (reached through the preloaded library).
import ctypes
import torch
dt = ctypes.CDLL(None)
ranges = hasattr(dt, "dt_range_push")
dev = torch.device("xpu:0")
host = torch.randn(512, 512)
for step in range(20):
    if ranges:
        dt.dt_range_push(b"step", None)
    x = host.to(dev)                          # HtoD copy
    y = x @ x                                 # kernel
    z = torch.zeros(512, 512, device=dev)     # fill
    w = (y + z).relu().sum()                  # kernels
    w.cpu()                                   # DtoH copy
    if ranges:
        dt.dt_range_pop()
torch.xpu.synchronize()
print("workload done; devtrace ranges:", ranges)
PY
  cmd=("$python" "$work/workload.py")
fi
say "command: ${cmd[*]}"
trace="$work/pti.json"
DEVTRACE_LOG=1 step 180 "$devtrace" record --backend pti -o "$trace" -- "${cmd[@]}" >"$work/record.log" 2>&1
rc=$?
tail -n 200 "$work/record.log" >"$out/record.log"
say "record exit status: $rc (log: $out/record.log)"
grep -E "^devtrace: (process|traced)|error|unavailable|refuse" "$work/record.log" | head -n 12 | tee -a "$report"
[ -s "$trace" ] || { say "no trace written"; exit 1; }

section "devtrace check"
step 60 "$devtrace" check "$trace" 2>&1 | tail -n 20 | tee -a "$report"
check_rc=${PIPESTATUS[0]}
section "devtrace stats"
step 60 "$devtrace" stats "$trace" 2>&1 | head -n 60 | tee -a "$report"

section "findings"
step 60 "$python" - "$check_rc" "$layouts_ok" "$dry" "$trace" <<'PY' | tee -a "$report"
import collections, json, sys
check_rc, layouts_ok, dry, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
problems = []
if check_rc: problems.append("devtrace check failed")
if not layouts_ok: problems.append("record layouts not checked against the SDK, or different")
t = json.load(open(path, encoding="utf-8", errors="replace"))
ev, d = t.get("traceEvents", []), t.get("devtrace", {})
x = [e for e in ev if e.get("ph") == "X"]
cats = collections.Counter(e.get("cat", "") for e in x)
print(f"backend {d.get('backend')}, library {d.get('library')}")
for c in ("kernel", "gpu_memcpy", "gpu_memset", "xpu_runtime", "xpu_driver", "user_annotation"):
    print(f"  {c:18s} {cats.get(c, 0)}")
starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
paired = sum(1 for i in starts if starts[i] == 1 and ends.get(i) == 1)
print(f"  flows: {len(starts)} starts, {len(ends)} finishes, {paired} paired")
dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
ext = [e for e in dev if "External id" in e.get("args", {})]
print(f"  device events with an External id: {len(ext)} of {len(dev)}")
devices = t.get("deviceProperties") or []
print("  devices:", [f'{p.get("id")}: {p.get("name")}' for p in devices])
print("  streams (SYCL queues):", sorted({e.get("tid") for e in dev}, key=str))
print("  clock:", json.dumps(d.get("clock")))
print("  loss:", json.dumps(d.get("loss")))
print("  notes:", json.dumps(d.get("notes", {}), indent=3))
if len(starts) != paired: problems.append("unpaired flows")
if (d.get("loss") or {}).get("total"): problems.append("records were lost (see loss)")
if not cats.get("kernel"): problems.append("no kernels recorded")
if not (cats.get("xpu_runtime") or cats.get("xpu_driver")): problems.append("no API calls recorded")
if not cats.get("gpu_memcpy"): problems.append("no memory copies recorded")
if not any("UUID" in (p.get("name") or "") for p in devices): problems.append("no device named by its UUID")
if dry: print("(dry run: the emulator's layouts, not the SDK's, were read)")
print("verdict:", "OK" if not problems else "PROBLEMS: " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
verdict=${PIPESTATUS[0]}
gzip -c "$trace" >"$out/pti.json.gz"
say ""
say "report: $report (trace: $out/pti.json.gz)"
exit "$verdict"
