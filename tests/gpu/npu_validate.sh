#!/usr/bin/env bash
# Validate devtrace's MSPTI backend on a Huawei Ascend NPU (a 910 or any
# Atlas device with CANN), and print a report to attach to a bug or to
# docs/backends/mspti.md.
#
#   tests/gpu/npu_validate.sh [-B BUILD_DIR] [-o OUT_DIR] [-- WORKLOAD...]
#   tests/gpu/npu_validate.sh --dry-run BUILD_DIR [-o OUT_DIR]   (no NPU: the emulator; a temporary OUT_DIR by default)
#
# What it does:
#   1. finds CANN (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, or
#      /usr/local/Ascend/ascend-toolkit/latest) and its libmspti.so and
#      mspti.h, and reports the versions (CANN, driver, torch, torch_npu);
#   2. builds devtrace against CANN's mspti.h (unless BUILD_DIR holds a
#      build) and runs the layout test compiled against it: every record
#      size and field offset devtrace reads, as CANN declares them;
#   3. lists the backends (`devtrace backends`);
#   4. records a short workload with `devtrace record --backend mspti`, which
#      preloads libmspti.so (default: torch_npu matmuls, copies both ways and
#      fills inside mstx ranges, on npu:0; and, with two or more NPUs, an
#      all-reduce over HCCL on two ranks with torchrun; or WORKLOAD, any
#      command that uses the NPU, e.g. an ACL C program);
#   5. runs `devtrace check` and `devtrace stats` on every trace;
#   6. prints what it found: kinds seen (kernels, API calls, copies, fills,
#      collectives, ranges), flows paired, External ids, the external-
#      correlation stack MSPTI has, clock, losses, notes, and a verdict.
# Everything is also written to OUT_DIR (default ./npu-validate-<date>).
# Exit status 0 when the verdict is OK.
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/tests/gpu/validate_lib.sh"
validate_options npu 26 "$@"
python=${PYTHON:-python3}

root=${ASCEND_HOME_PATH:-${ASCEND_TOOLKIT_HOME:-/usr/local/Ascend/ascend-toolkit/latest}}
report_environment
if [ "$dry" = 1 ]; then
  say "dry run: devtrace's MSPTI emulator stands in for CANN ($build/emu/libmspti.so)"
  export DEVTRACE_MSPTI_LIBRARY="$build/emu/libmspti.so"
else
  say "CANN root: $root (ASCEND_HOME_PATH=${ASCEND_HOME_PATH:-unset}; source set_env.sh of your toolkit if unset)"
  for f in "$root"/*/ascend_toolkit_install.info "$root"/version.cfg "$root"/../version.cfg; do
    [ -f "$f" ] && { say "$f:"; head -n 5 "$f" | tee -a "$report"; }
  done
  lib=""
  for l in "$root/lib64/libmspti.so" "$root/tools/mspti/lib64/libmspti.so"; do [ -e "$l" ] && lib=$l && break; done
  say "libmspti.so: ${lib:-NOT FOUND under $root/lib64 or $root/tools/mspti/lib64}"
  header=""
  for h in "$root/include/mspti/mspti.h" "$root/tools/mspti/include/mspti.h" "$root/include/mspti.h"; do
    [ -e "$h" ] && header=$h && break
  done
  say "mspti.h: ${header:-not found}"
  say "DEVTRACE_MSPTI_LIBRARY: ${DEVTRACE_MSPTI_LIBRARY:-(unset)}"
  command -v npu-smi >/dev/null 2>&1 && npu-smi info 2>&1 | head -n 25 | tee -a "$report"
  "$python" -c 'import torch, torch_npu; print("torch", torch.__version__, "torch_npu", torch_npu.__version__,
      "NPUs", torch.npu.device_count())' 2>&1 | tail -n 1 | tee -a "$report"
fi

section "build and record layouts"
if [ -z "$build" ]; then
  build="$out/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  if ! cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTRACE_BUILD_BENCH=OFF \
        -DDEVTRACE_BUILD_EMULATORS=OFF -DASCEND_HOME_PATH="$root" >"$out/cmake.log" 2>&1; then
    say "cmake failed; see $out/cmake.log"; tail -n 20 "$out/cmake.log" | tee -a "$report"; exit 1
  fi
  if ! cmake --build "$build" -j "$(nproc)" --target devtrace_cli devtrace_inject test_mspti_layout \
        >"$out/build.log" 2>&1; then
    say "build failed; see $out/build.log"; grep -m 20 -E 'error' "$out/build.log" | tee -a "$report"; exit 1
  fi
fi
grep -E "^MSPTI:|DT_MSPTI_H" "$build/CMakeCache.txt" "$out/cmake.log" 2>/dev/null | head -n 3 | tee -a "$report" >/dev/null
if grep -q "DT_HAVE_MSPTI_SDK" "$build/CMakeCache.txt" 2>/dev/null; then
  say "built against CANN's mspti.h ($(grep -m1 '^DT_MSPTI_H' "$build/CMakeCache.txt" | cut -d= -f2))"
else
  say "built against devtrace's declaration of the public MSPTI ABI (mspti.h not found)"
fi
layout=$(find "$build" -type f -name test_mspti_layout -perm -u+x | head -n 1)
layouts_ok=0
if [ -n "$layout" ] && "$layout" >"$out/layout.txt" 2>&1; then
  layouts_ok=1; say "record layouts: every size and offset as devtrace reads them ($(grep -c passed "$out/layout.txt") cases)"
else
  say "RECORD LAYOUTS DIFFER (or the layout test was not built):"; tail -n 20 "$out/layout.txt" 2>/dev/null | tee -a "$report"
fi
devtrace=$(find "$build" -maxdepth 2 -type f -name devtrace -perm -u+x | head -n 1)
[ -n "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"

section "devtrace backends"
"$devtrace" backends 2>&1 | tee -a "$report"

section "workloads"
runs=()
if [ "$dry" = 1 ]; then
  cat >"$out/workload.scn" <<'SCN'
vendor mspti
devices 1
marker "step" {
  op 1 {
    memcpy device=0 stream=1 kind=htod bytes=1048576 dur_us=50
    kernel device=0 stream=1 name="MatMulV2" dur_us=100
    memset device=0 stream=1 bytes=1048576 dur_us=10 async
  }
  op 2 {
    collective device=0 stream=2 name="hcom_allReduce_" group="hccl_world_group" count=262144 dtype=fp32 dur_us=200
  }
  memcpy device=0 stream=1 kind=dtoh bytes=4096 dur_us=5
}
sync
SCN
  runs=(main)
  main_cmd=("$build/devtrace-emu-run" --quiet --library "$DEVTRACE_MSPTI_LIBRARY" "$out/workload.scn")
  hccl=1
elif [ ${#workload[@]} -gt 0 ]; then
  runs=(main); main_cmd=("${workload[@]}"); hccl=0
else
  cat >"$out/workload.py" <<'PY'
# A short workload on npu:0: matmuls (kernels), copies both ways, fills,
# inside mstx ranges (MSPTI's markers) and devtrace user ranges.
import ctypes
import torch
import torch_npu  # noqa: F401
dt = ctypes.CDLL(None)
ranges = hasattr(dt, "dt_range_push")
mstx = getattr(torch_npu.npu, "mstx", None)
dev = torch.device("npu:0")
host = torch.randn(512, 512)
for step in range(20):
    mark = mstx.range_start("step") if mstx else None
    if ranges:
        dt.dt_range_push(b"step", None)
    x = host.to(dev)                          # HtoD copy
    y = x @ x                                 # kernel
    z = torch.zeros(512, 512, device=dev)     # fill
    w = (y + z).relu().sum()                  # kernels
    w.cpu()                                   # DtoH copy
    if ranges:
        dt.dt_range_pop()
    if mstx:
        mstx.range_end(mark)
torch.npu.synchronize()
print("workload done; mstx:", mstx is not None, "devtrace ranges:", ranges)
PY
  cat >"$out/allreduce.py" <<'PY'
# Two ranks, one NPU each: all-reduces over HCCL.
import os
import torch
import torch_npu  # noqa: F401
import torch.distributed as dist
rank = int(os.environ["RANK"])
torch.npu.set_device(rank)
dist.init_process_group("hccl")
t = torch.ones(1 << 20, device="npu")
for _ in range(10):
    dist.all_reduce(t)
torch.npu.synchronize()
dist.destroy_process_group()
print("rank", rank, "done")
PY
  runs=(main); main_cmd=("$python" "$out/workload.py")
  hccl=0
  if [ "$("$python" -c 'import torch, torch_npu; print(torch.npu.device_count())' 2>/dev/null)" -ge 2 ] 2>/dev/null; then
    runs+=(allreduce); hccl=1
  fi
fi
allreduce_cmd=("$python" -m torch.distributed.run --nproc_per_node=2 "$out/allreduce.py")

status=0
traces=()
for run in "${runs[@]}"; do
  if [ "$run" = main ]; then cmd=("${main_cmd[@]}"); else cmd=("${allreduce_cmd[@]}"); fi
  say "$run: ${cmd[*]}"
  DEVTRACE_LOG=1 "$devtrace" record --backend mspti -o "$out/$run.json" -- "${cmd[@]}" >"$out/$run.log" 2>&1
  rc=$?
  say "$run: record exit status $rc (log: $out/$run.log)"
  grep -E "^devtrace: (preloading|process|traced)|error|unavailable" "$out/$run.log" | head -n 12 | tee -a "$report"
  for t in "$out/$run".json "$out/$run".*.json; do [ -s "$t" ] && traces+=("$t"); done
done
[ ${#traces[@]} -gt 0 ] || { say "no trace written"; exit 1; }

for t in "${traces[@]}"; do
  section "devtrace check $(basename "$t")"
  "$devtrace" check "$t" 2>&1 | tee -a "$report"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  "$devtrace" stats "$t" >"$t.stats.txt" 2>&1
  head -n 60 "$t.stats.txt" >>"$report"
done

section "findings"
"$python" - "$status" "$layouts_ok" "$hccl" "${traces[@]}" <<'PY' | tee -a "$report"
import collections, json, sys
check_rc, layouts_ok, hccl, paths = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
problems = []
if check_rc: problems.append("devtrace check failed")
if not layouts_ok: problems.append("record layouts differ from CANN's")
total = collections.Counter()
for path in paths:
    t = json.load(open(path, encoding="utf-8", errors="replace"))
    ev, d = t.get("traceEvents", []), t.get("devtrace", {})
    x = [e for e in ev if e.get("ph") == "X"]
    cats = collections.Counter("collective" if e.get("cat") == "kernel" and "Collective name" in e.get("args", {})
                               else e.get("cat", "") for e in x)
    total.update(cats)
    print(f"{path}: backend {d.get('backend')}, library {d.get('library')}, version {d.get('libraryVersion')}")
    for c in ("kernel", "collective", "gpu_memcpy", "gpu_memset", "privateuse1_runtime", "user_annotation"):
        print(f"  {c:22s} {cats.get(c, 0)}")
    starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
    ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
    paired = sum(1 for i in starts if starts[i] == 1 and ends.get(i) == 1)
    print(f"  flows: {len(starts)} starts, {len(ends)} finishes, {paired} paired")
    dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    ext = [e for e in dev if "External id" in e.get("args", {})]
    print(f"  device events with an External id: {len(ext)} of {len(dev)}")
    coll = [e["args"] for e in x if "Collective name" in e.get("args", {})]
    if coll:
        a = coll[0]
        print("  a collective:", {k: a.get(k) for k in ("Collective name", "In msg nelems", "dtype",
                                                         "Process Group Name", "algorithm", "bytes")})
    notes = d.get("notes", {})
    print("  clock:", json.dumps(d.get("clock")))
    print("  loss:", json.dumps(d.get("loss")))
    print("  notes:", json.dumps(notes, indent=3))
    if "WITHOUT_LD_PRELOAD" in notes.get("kinds", ""): problems.append(f"{path}: libmspti.so was not preloaded")
    if len(starts) != paired: problems.append(f"{path}: unpaired flows")
    if (d.get("loss") or {}).get("total"): problems.append(f"{path}: records were lost (see loss)")
    if "external_stack" in notes: print("  MSPTI's external-correlation stack is process-wide (see docs/backends/mspti.md)")
if not total.get("kernel"): problems.append("no kernels recorded")
if not total.get("privateuse1_runtime"): problems.append("no API calls recorded")
if not total.get("gpu_memcpy"): problems.append("no memory copies recorded")
if hccl and not total.get("collective"): problems.append("no collectives recorded")
print("verdict:", "OK" if not problems else "PROBLEMS: " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
verdict=${PIPESTATUS[0]}
say ""
say "report: $report"
[ "$dry" = 1 ] && rm -rf "$out"
exit "$verdict"
