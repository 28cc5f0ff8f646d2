#!/usr/bin/env bash
# Validate devtrace's rocprofiler-sdk backend on an AMD GPU (ROCm 6.2 or
# later), and print a report to attach to a bug or to
# docs/backends/rocprofiler-sdk.md.
#
#   tests/gpu/rocprofiler_sdk_validate.sh [-B BUILD_DIR] [-o OUT_DIR] [-- WORKLOAD...]
#
# ROCM_PATH: the ROCm installation (default /opt/rocm).
#
# What it does:
#   1. builds devtrace against ROCM_PATH, whose rocprofiler-sdk headers the
#      build checks devtrace's declaration of the ABI against (a moved field
#      fails that build: the report then shows which, and the run goes on
#      with a build that skips the check), unless BUILD_DIR holds a build;
#   2. lists the backends (`devtrace backends`);
#   3. builds tests/gpu/rocprofiler_sdk_workload.hip with hipcc (known
#      kernels, grids, LDS, copies, memsets, ROCTX and devtrace ranges), and
#      runs it three ways:
#        a. under `devtrace record --backend rocprofiler_sdk` (or WORKLOAD,
#           any command that uses the GPU; without hipcc, a PyTorch loop);
#        b. with a C API session started before the first HIP call, checked
#           event by event;
#        c. with a C API session started after HIP initialized without the
#           tool: recorded, or refused with a message, never empty;
#   4. runs `devtrace check` and `devtrace stats` on the trace of (a);
#   5. prints what it found and a verdict.
# Everything is also written to OUT_DIR (default ./rocprofiler-sdk-validate-<date>).
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=""
out="rocprofiler-sdk-validate-$(date +%Y%m%d-%H%M%S)"
workload=()
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    --) shift; workload=("$@"); break ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
. "$here/tests/gpu/validate_lib.sh"
report_open
problems=()
problem() { problems+=("$*"); say "PROBLEM: $*"; }
export ROCM_PATH=${ROCM_PATH:-/opt/rocm}
python=${PYTHON:-python3}

report_environment "ROCM_PATH: $ROCM_PATH"
sdk=""
for f in "$ROCM_PATH"/lib/librocprofiler-sdk.so "$ROCM_PATH"/lib64/librocprofiler-sdk.so; do
  [ -e "$f" ] && sdk=$(readlink -f "$f") && break
done
say "librocprofiler-sdk: ${sdk:-not found under $ROCM_PATH/lib}"
vh="$ROCM_PATH/include/rocprofiler-sdk/version.h"
[ -e "$vh" ] && say "headers: $(grep -m 1 -E 'define ROCPROFILER_VERSION_STRING' "$vh" | sed 's/^#define //')"
say "DEVTRACE_ROCPROFILER_SDK_LIBRARY: ${DEVTRACE_ROCPROFILER_SDK_LIBRARY:-(unset)}"
say "ROCP_TOOL_LIBRARIES: ${ROCP_TOOL_LIBRARIES:-(unset)}"
if command -v dpkg >/dev/null 2>&1; then
  dpkg -l 2>/dev/null | grep -iE 'rocprofiler|hip-runtime|rocm-core' | awk '{print "  " $2 " " $3}' | head -n 12 | tee -a "$report"
fi
rocminfo=$(command -v rocminfo || echo "$ROCM_PATH/bin/rocminfo")
if [ -x "$rocminfo" ]; then
  "$rocminfo" 2>&1 | grep -E 'Marketing Name|^  Name: +gfx|Compute Unit|Wavefront Size|Workgroup Max Size:' |
    sed 's/^ */  /' | head -n 24 | tee -a "$report"
else
  say "rocminfo: not found"
fi

section "build"
if [ -z "$build" ]; then
  build="$out/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  configure() { # dir extra-args...
    local dir=$1; shift
    cmake -S "$here" -B "$dir" ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTRACE_BUILD_TESTS=OFF \
      -DDEVTRACE_BUILD_BENCH=OFF -DROCM_PATH="$ROCM_PATH" "$@" >"$dir.cmake.log" 2>&1 &&
      cmake --build "$dir" -j "$(nproc)" >"$dir.build.log" 2>&1
  }
  if configure "$build"; then
    :
  elif grep -q "static assertion failed" "$build.build.log"; then
    problem "devtrace's declaration of the rocprofiler-sdk ABI differs from these headers"
    grep -E "static assertion failed" "$build.build.log" | sed 's/^.*error: /  /' | sort -u | tee -a "$report"
    say "building again without the check, to record anyway (records may decode wrongly)"
    build="$out/build-unchecked"
    configure "$build" -DDEVTRACE_ROCPROFILER_SDK_HEADERS=OFF ||
      { say "build failed; see $build.build.log"; grep -m 20 error "$build.build.log" | tee -a "$report"; exit 1; }
  else
    say "build failed; see $build.cmake.log and $build.build.log"
    grep -m 20 -E 'error|Error' "$build.cmake.log" "$build.build.log" | tee -a "$report"
    exit 1
  fi
fi
cache="$build/CMakeCache.txt"
if grep -q '^DT_ROCPROFILER_SDK_HEADERS_COMPILE:INTERNAL=1' "$cache" 2>/dev/null &&
   ! grep -q '^DEVTRACE_ROCPROFILER_SDK_HEADERS:BOOL=OFF' "$cache"; then
  say "ABI declaration: checked against $(grep '^DT_ROCPROFILER_SDK_INCLUDE_DIR' "$cache" | cut -d= -f2) at build time"
else
  say "ABI declaration: NOT checked against ROCm's headers (none found, or they did not compile; see $build.cmake.log)"
fi
devtrace="$build/devtrace"
[ -x "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"

section "devtrace backends"
"$devtrace" backends 2>&1 | tee -a "$report"

section "workload"
hipcc=$(command -v hipcc || echo "$ROCM_PATH/bin/hipcc")
bin="$out/rocprofiler_sdk_workload"
if [ -x "$hipcc" ]; then
  roctx=(); [ -e "$ROCM_PATH/include/rocprofiler-sdk-roctx/roctx.h" ] && roctx=(-lrocprofiler-sdk-roctx)
  if "$hipcc" -O2 -std=c++17 -I"$here/include" -I"$ROCM_PATH/include" "$here/tests/gpu/rocprofiler_sdk_workload.hip" \
       -o "$bin" -L"$build" -ldevtrace -Wl,-rpath,"$build" -L"$ROCM_PATH/lib" ${roctx[@]+"${roctx[@]}"} \
       -Wl,-rpath,"$ROCM_PATH/lib" >"$out/hipcc.log" 2>&1; then
    say "built rocprofiler_sdk_workload.hip with $hipcc (ROCTX: ${roctx:+yes}${roctx:-no})"
  else
    say "hipcc failed (see $out/hipcc.log)"; head -n 20 "$out/hipcc.log" | tee -a "$report"; bin=""
  fi
else
  say "no hipcc ($hipcc)"; bin=""
fi
if [ ${#workload[@]} -eq 0 ]; then
  if [ -n "$bin" ]; then
    workload=("$bin" record)
  elif "$python" -c "import torch; assert torch.version.hip" 2>"$out/torch.log"; then
    cat >"$out/workload.py" <<'PY'
# Kernels, copies both ways and fills inside devtrace user ranges.
import ctypes
import torch
dt = ctypes.CDLL(None)
ranges = hasattr(dt, "dt_range_push")
host = torch.randn(512, 512)
for step in range(20):
    if ranges: dt.dt_range_push(b"step", None)
    x = host.to("cuda")
    y = (x @ x).relu()
    z = torch.zeros(512, 512, device="cuda")
    (y + z).sum().cpu()
    if ranges: dt.dt_range_pop()
torch.cuda.synchronize()
print("workload done; devtrace ranges:", ranges)
PY
    workload=("$python" "$out/workload.py")
  else
    say "no workload: neither hipcc nor a ROCm build of torch ($python); give one after --"; exit 1
  fi
fi

section "a. devtrace record"
say "command: ${workload[*]}"
trace="$out/rocprofiler_sdk.json"
DEVTRACE_LOG=1 "$devtrace" record --backend rocprofiler_sdk -o "$trace" -- "${workload[@]}" >"$out/record.log" 2>&1
rc=$?
say "record exit status: $rc (log: $out/record.log)"
grep -iE "error|rocprofiler|unavailable|refuse|late" "$out/record.log" | head -n 20 | tee -a "$report"
[ -s "$trace" ] || { problem "no trace written"; tail -n 30 "$out/record.log" | tee -a "$report"; }

# A C API run of the workload: MODE, its title, what success means.
api_run() {
  local mode=$1 title=$2 ok=$3
  section "$title"
  if (cd "$out" && "$bin" "$mode" "$out/$mode.json" >"$out/$mode.out" 2>"$out/$mode.err"); then
    say "$ok $(tr '\n' ' ' <"$out/$mode.out")"
  else
    problem "$title: $(tr '\n' ' ' <"$out/$mode.out")"
    head -n 30 "$out/$mode.err" | tee -a "$report"
  fi
}
if [ -n "$bin" ]; then
  api_run api "b. C API session started before HIP" "PASS"
  api_run late "c. C API session started after HIP initialized" "OK (recorded, or refused with a message)"
fi

check_rc=1
if [ -s "$trace" ]; then
  section "devtrace check"
  "$devtrace" check "$trace" 2>&1 | tee -a "$report"
  check_rc=${PIPESTATUS[0]}
  section "devtrace stats"
  "$devtrace" stats "$trace" >"$out/stats.txt" 2>&1
  head -n 60 "$out/stats.txt" | tee -a "$report"

  section "findings"
  "$python" - "$trace" "$check_rc" "${bin:+hip}" <<'PY' | tee -a "$report"
import collections, json, sys
path, check_rc, hip = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "hip"
t = json.load(open(path, encoding="utf-8", errors="replace"))
ev = t.get("traceEvents", [])
d = t.get("devtrace", {})
x = [e for e in ev if e.get("ph") == "X"]
cats = collections.Counter(e.get("cat", "") for e in x)
print("backend:", d.get("backend"), "library:", d.get("library"), "version:", d.get("libraryVersion"))
print("activity kinds seen:")
for c in ("kernel", "gpu_memcpy", "gpu_memset", "privateuse1_runtime", "user_annotation", "gpu_user_annotation"):
    print(f"  {c:22s} {cats.get(c, 0)}")
dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
kernels = [e for e in x if e.get("cat") == "kernel"]
starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
paired = sum(1 for i in starts if starts[i] == 1 and ends.get(i) == 1)
print(f"flows: {len(starts)} starts, {len(ends)} finishes, {paired} paired")
ext = [e["args"]["External id"] for e in dev if "External id" in e.get("args", {})]
print(f"device events with an External id: {len(ext)} of {len(dev)} ({len(set(ext))} distinct ids)")
api = [e for e in x if e.get("cat", "").startswith("privateuse1")]
generic = sum(1 for e in api if "#" in e.get("name", ""))
print(f"API events with a generic fallback name: {generic} of {len(api)}")
print("API names:", ", ".join(sorted({e.get("name", "") for e in api})[:30]))
names = collections.Counter(e.get("name", "") for e in kernels)
print("kernels:", json.dumps(names.most_common(12)))
for name in [n for n in names if "scale" in n or "block_sum" in n][:2]:
    e = next(e for e in kernels if e.get("name") == name)
    a = e.get("args", {})
    print(f"  {name}: grid {a.get('grid')} block {a.get('block')} shared memory {a.get('shared memory')} "
          f"registers {a.get('registers per thread')} queue row {a.get('stream')} device {a.get('device')}")
copies = collections.Counter((e.get("name"), e.get("args", {}).get("bytes")) for e in x if e.get("cat") == "gpu_memcpy")
print("copies:", json.dumps([[n, b, c] for (n, b), c in copies.most_common(6)]))
sets = collections.Counter(e.get("args", {}).get("bytes") for e in x if e.get("cat") == "gpu_memset")
print("memsets by size:", json.dumps(sets.most_common(6)))
print("deviceProperties:", json.dumps(t.get("deviceProperties"))[:1500])
print("clock fit:", json.dumps(d.get("clock")))
print("loss:", json.dumps(d.get("loss")))
print("notes:", json.dumps(d.get("notes"), indent=1))
problems = []
if check_rc != 0: problems.append("devtrace check failed")
if not kernels: problems.append("no kernels recorded")
if not api: problems.append("no HIP API calls recorded")
if any(n.endswith(".kd") for n in names): problems.append("kernel names keep the .kd descriptor suffix")
if len(starts) == 0 or paired != len(starts): problems.append("flows missing or unpaired")
if api and generic * 20 > len(api): problems.append("more than 5% generic API names")
if (d.get("loss") or {}).get("total"): problems.append("records were lost (see loss)")
if not t.get("deviceProperties"): problems.append("no device properties")
if hip:
    s = [e for e in kernels if "scale" in e.get("name", "")]
    if not s or s[0].get("args", {}).get("grid") != [256, 2, 1] or s[0].get("args", {}).get("block") != [128, 2, 1]:
        problems.append("scale kernel grid/block are not [256,2,1]/[128,2,1]")
    if cats.get("gpu_memset", 0) < 20: problems.append("fewer memsets than the workload's 20")
    if cats.get("gpu_memcpy", 0) < 40: problems.append("fewer copies than the workload's 40")
err = (d.get("clock") or {}).get("errorBoundNs")
if err is not None and err > 1000: problems.append(f"clock error bound {err} ns > 1 us")
print("trace verdict:", "OK" if not problems else "PROBLEMS: " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
  [ "${PIPESTATUS[0]}" = 0 ] || problem "the trace of (a) has problems (see findings)"
fi

section "verdict"
if [ ${#problems[@]} -eq 0 ]; then say "OK"; else say "PROBLEMS:"; for p in "${problems[@]}"; do say "  - $p"; done; fi
say "report: $report (trace: $trace)"
[ ${#problems[@]} -eq 0 ]
