#!/usr/bin/env bash
# Validate devtrace's CNPAPI backend on a Cambricon MLU (an MLU370 or later
# with Neuware's CNToolkit), and print a report to attach to a bug or to
# docs/backends/cnpapi.md.
#
#   tests/gpu/mlu_validate.sh [-B BUILD_DIR] [-o OUT_DIR] [-- WORKLOAD...]
#   tests/gpu/mlu_validate.sh --dry-run BUILD_DIR [-o OUT_DIR]   (no MLU: the emulator; a temporary OUT_DIR by default)
#
# What it does, each step bounded in time (DT_VALIDATE_TIMEOUT seconds a
# step, default 300):
#   1. finds Neuware (NEUWARE_HOME, default /usr/local/neuware), its
#      libcnpapi.so and cnpapi.h, and reports the versions (cnmon, torch,
#      torch_mlu);
#   2. compiles devtrace's declaration of CNPAPI's records (cnpapi_abi.h)
#      and Cambricon's headers side by side: every field devtrace reads must
#      sit at the headers' offset and size, and the inferred CNCL callback
#      domain is printed as the headers number it;
#   3. builds devtrace (unless BUILD_DIR holds a build) and lists the
#      backends;
#   4. records a short workload with `devtrace record --backend cnpapi`
#      (default: torch_mlu matmuls, copies both ways and fills on mlu:0
#      inside devtrace user ranges, and with two or more MLUs an all-reduce
#      over CNCL on two ranks; or WORKLOAD, any command that uses the MLU);
#   5. runs `devtrace check` and `devtrace stats` on every trace;
#   6. prints what it found (kinds, flows paired, External ids, API names,
#      collectives, clock, losses, notes) and a verdict.
# OUT_DIR (default ./mlu-validate-<date>) receives the report, the traces
# and small logs. Exit status 0 when the verdict is OK.
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/tests/gpu/validate_lib.sh"
validate_options mlu 28 "$@"
limit=${DT_VALIDATE_TIMEOUT:-300}
bounded() { timeout --kill-after=10 "$limit" "$@"; }
python=${PYTHON:-python3}
root=${NEUWARE_HOME:-/usr/local/neuware}

report_environment
header=""
if [ "$dry" = 1 ]; then
  say "dry run: devtrace's CNPAPI emulator stands in for Neuware ($build/emu/libcnpapi.so)"
  export DEVTRACE_CNPAPI_LIBRARY="$build/emu/libcnpapi.so"
else
  say "Neuware root: $root (NEUWARE_HOME=${NEUWARE_HOME:-unset})"
  lib=""
  for l in "$root/lib64/libcnpapi.so" "$root/lib/libcnpapi.so"; do [ -e "$l" ] && lib=$l && break; done
  say "libcnpapi.so: ${lib:-NOT FOUND under $root/lib64 or $root/lib}"
  for h in "$root/include/cnpapi.h" "$root/include/cnpapi/cnpapi.h"; do [ -e "$h" ] && header=$h && break; done
  say "cnpapi.h: ${header:-not found}"
  say "DEVTRACE_CNPAPI_LIBRARY: ${DEVTRACE_CNPAPI_LIBRARY:-(unset)}"
  command -v cnmon >/dev/null 2>&1 && bounded cnmon 2>&1 | head -n 25 | tee -a "$report"
  bounded "$python" -c 'import torch, torch_mlu; print("torch", torch.__version__, "torch_mlu",
      getattr(torch_mlu, "__version__", "?"), "MLUs", torch.mlu.device_count())' 2>&1 | tail -n 1 | tee -a "$report"
fi

section "record layouts against Cambricon's headers"
layouts_ok=1
if [ -z "$header" ]; then
  say "no cnpapi.h: layouts not checked (devtrace's are read from a public copy of Cambricon's headers)"
else
  # "record.field offset size" from each side; the lists must be the same.
  gen() { # type tag fields...
    local type=$1 tag=$2; shift 2
    for f in "$@"; do echo "    printf(\"$tag.$f %zu %zu\\n\", offsetof($type, $f), sizeof((($type *)0)->$f));"; done
  }
  k="type correlation_id start end queued submitted device_id name queue_id dimx dimy dimz context_id"
  c="type flags correlation_id bytes copy_type start end device_id queue_id context_id"
  p="$c src_device_id dst_device_id"
  s="type flags correlation_id bytes start end device_id queue_id value context_id"
  a="type correlation_id cbid start end process_id thread_id"
  x="type external_type external_id correlation_id"
  d="callbackSite functionReturnValue correlationId"
  body() {
    gen cnpapiActivityKernel kernel $k; gen cnpapiActivityMemcpy memcpy $c; gen cnpapiActivityMemcpyPtoP ptop $p
    gen cnpapiActivityMemset memset $s; gen cnpapiActivityAPI api $a; gen cnpapiActivityExternalCorrelation ext $x
    gen cnpapi_CallbackData callback $d
  }
  { echo '#include <stddef.h>'; echo '#include <stdio.h>'; echo "#include \"$header\""; echo 'int main(void) {'
    body; echo '    printf("types %d %d %d %d %d %d %d %d\n", CNPAPI_ACTIVITY_TYPE_KERNEL, CNPAPI_ACTIVITY_TYPE_MEMCPY,
      CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP, CNPAPI_ACTIVITY_TYPE_MEMSET, CNPAPI_ACTIVITY_TYPE_CNRT_API,
      CNPAPI_ACTIVITY_TYPE_CNDRV_API, CNPAPI_ACTIVITY_TYPE_CNCL_API, CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION);'
    echo '    return 0; }'; } >"$out/sdk_layout.c"
  { echo '#include <stddef.h>'; echo '#include <stdio.h>'; echo '#include "backends/cnpapi_abi.h"'; echo 'int main(void) {'
    body; echo '    printf("types %d %d %d %d %d %d %d %d\n", CNPAPI_ACTIVITY_TYPE_KERNEL, CNPAPI_ACTIVITY_TYPE_MEMCPY,
      CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP, CNPAPI_ACTIVITY_TYPE_MEMSET, CNPAPI_ACTIVITY_TYPE_CNRT_API,
      CNPAPI_ACTIVITY_TYPE_CNDRV_API, CNPAPI_ACTIVITY_TYPE_CNCL_API, CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION);'
    echo '    return 0; }'; } >"$out/devtrace_layout.c"
  cc=${CC:-cc}
  if bounded "$cc" -I"$(dirname "$header")" "$out/sdk_layout.c" -o "$out/sdk_layout" 2>"$out/layout.log" &&
     bounded "$cc" -I"$here/src" "$out/devtrace_layout.c" -o "$out/devtrace_layout" 2>>"$out/layout.log"; then
    "$out/sdk_layout" >"$out/sdk_layout.txt"; "$out/devtrace_layout" >"$out/devtrace_layout.txt"
    if diff "$out/devtrace_layout.txt" "$out/sdk_layout.txt" >"$out/layout.diff"; then
      say "every field devtrace reads matches Cambricon's offset and size ($(wc -l <"$out/sdk_layout.txt") lines)"
    else
      layouts_ok=0; say "LAYOUT MISMATCH (devtrace < > Cambricon):"; tee -a "$report" <"$out/layout.diff"
    fi
  else
    layouts_ok=0; say "the layout check did not compile; see $out/layout.log"; tail -n 10 "$out/layout.log" | tee -a "$report"
  fi
  rm -f "$out/sdk_layout" "$out/devtrace_layout"
  printf '#include <stdio.h>\n#include "%s"\nint main(void) { printf("%%d\\n", (int)CNPAPI_CB_DOMAIN_CNCL_API); return 0; }\n' \
    "$header" >"$out/cncl_domain.c"
  if bounded "$cc" -I"$(dirname "$header")" "$out/cncl_domain.c" -o "$out/cncl_domain" 2>/dev/null; then
    say "CNPAPI_CB_DOMAIN_CNCL_API is $("$out/cncl_domain") in Cambricon's headers (devtrace infers 6)"
    rm -f "$out/cncl_domain"
  fi
fi

section "build"
if [ -z "$build" ]; then
  build="$out/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  if ! bounded cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTRACE_BUILD_BENCH=OFF \
        -DDEVTRACE_BUILD_TESTS=OFF -DDEVTRACE_BUILD_EMULATORS=OFF >"$out/cmake.log" 2>&1; then
    say "cmake failed; see $out/cmake.log"; tail -n 20 "$out/cmake.log" | tee -a "$report"; exit 1
  fi
  if ! bounded cmake --build "$build" -j "$(nproc)" --target devtrace_cli devtrace_inject >"$out/build.log" 2>&1; then
    say "build failed; see $out/build.log"; grep -m 20 -E 'error' "$out/build.log" | tee -a "$report"; exit 1
  fi
fi
devtrace=$(find "$build" -maxdepth 2 -type f -name devtrace -perm -u+x | head -n 1)
[ -n "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"
section "devtrace backends"
"$devtrace" backends 2>&1 | grep -A1 -E "^(BACKEND|cnpapi)" | tee -a "$report"

section "workloads"
runs=(main)
cncl=0
if [ "$dry" = 1 ]; then
  cat >"$out/workload.scn" <<'SCN'
vendor cnpapi
devices 2
marker "step" {
  op 1 {
    memcpy device=0 stream=1 kind=htod bytes=1048576 dur_us=50
    kernel device=0 stream=1 name="MLUMatMul" dur_us=100
    memset device=0 stream=1 bytes=1048576 dur_us=10 async
    memcpy device=0 stream=1 kind=ptop bytes=65536 dur_us=20
  }
  op 2 {
    collective device=0 stream=2 name="cnclAllReduce" count=262144 dtype=fp32 dur_us=200
  }
  memcpy device=0 stream=1 kind=dtoh bytes=4096 dur_us=5
}
sync
SCN
  main_cmd=("$build/devtrace-emu-run" --quiet --library "$DEVTRACE_CNPAPI_LIBRARY" "$out/workload.scn")
  cncl=1
elif [ ${#workload[@]} -gt 0 ]; then
  main_cmd=("${workload[@]}")
else
  cat >"$out/workload.py" <<'PY'
# A short workload on mlu:0: matmuls (kernels), copies both ways and fills,
# inside devtrace user ranges where the library is preloaded.
import ctypes
import torch
import torch_mlu  # noqa: F401
dt = ctypes.CDLL(None)
ranges = hasattr(dt, "dt_range_push")
dev = torch.device("mlu:0")
host = torch.randn(512, 512)
for step in range(20):
    if ranges:
        dt.dt_range_push(b"step", None)
    x = host.to(dev)
    y = x @ x
    z = torch.zeros(512, 512, device=dev)
    (y + z).relu().sum().cpu()
    if ranges:
        dt.dt_range_pop()
torch.mlu.synchronize()
print("workload done; devtrace ranges:", ranges)
PY
  cat >"$out/allreduce.py" <<'PY'
# Two ranks, one MLU each: all-reduces over CNCL.
import os
import torch
import torch_mlu  # noqa: F401
import torch.distributed as dist
rank = int(os.environ["RANK"])
torch.mlu.set_device(rank)
dist.init_process_group("cncl")
t = torch.ones(1 << 20, device="mlu")
for _ in range(10):
    dist.all_reduce(t)
torch.mlu.synchronize()
dist.destroy_process_group()
print("rank", rank, "done")
PY
  main_cmd=("$python" "$out/workload.py")
  if [ "$(bounded "$python" -c 'import torch, torch_mlu; print(torch.mlu.device_count())' 2>/dev/null)" -ge 2 ] 2>/dev/null; then
    runs+=(allreduce); cncl=1
  fi
fi
allreduce_cmd=("$python" -m torch.distributed.run --nproc_per_node=2 "$out/allreduce.py")

status=0
traces=()
for run in "${runs[@]}"; do
  if [ "$run" = main ]; then cmd=("${main_cmd[@]}"); else cmd=("${allreduce_cmd[@]}"); fi
  say "$run: ${cmd[*]}"
  DEVTRACE_LOG=1 bounded "$devtrace" record --backend cnpapi -o "$out/$run.json" -- "${cmd[@]}" >"$out/$run.log" 2>&1
  rc=$?
  say "$run: record exit status $rc (log: $out/$run.log)"
  grep -E "^devtrace: (process|traced)|error|unavailable" "$out/$run.log" | head -n 12 | tee -a "$report"
  for t in "$out/$run".json "$out/$run".*.json; do [ -s "$t" ] && traces+=("$t"); done
done
[ ${#traces[@]} -gt 0 ] || { say "no trace written"; exit 1; }

for t in "${traces[@]}"; do
  section "devtrace check $(basename "$t")"
  bounded "$devtrace" check "$t" 2>&1 | tee -a "$report"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  bounded "$devtrace" stats "$t" 2>&1 | head -n 60 >>"$report"
done

section "findings"
"$python" - "$status" "$layouts_ok" "$cncl" "${traces[@]}" <<'PY' | tee -a "$report"
import collections, json, sys
check_rc, layouts_ok, cncl, paths = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
problems = []
if check_rc: problems.append("devtrace check failed")
if not layouts_ok: problems.append("record layouts differ from Cambricon's headers")
total = collections.Counter()
for path in paths:
    t = json.load(open(path, encoding="utf-8", errors="replace"))
    ev, d = t.get("traceEvents", []), t.get("devtrace", {})
    x = [e for e in ev if e.get("ph") == "X"]
    cats = collections.Counter("collective" if e.get("cat") == "kernel" and "Collective name" in e.get("args", {})
                               else e.get("cat", "") for e in x)
    total.update(cats)
    print(f"{path}: backend {d.get('backend')}, library {d.get('library')}, version {d.get('libraryVersion')}")
    for c in ("kernel", "collective", "gpu_memcpy", "gpu_memset", "privateuse1_runtime", "privateuse1_driver",
              "user_annotation"):
        print(f"  {c:22s} {cats.get(c, 0)}")
    names = collections.Counter(e.get("name") for e in x if e.get("cat", "").startswith("privateuse1"))
    print("  API names:", ", ".join(f"{n} x{c}" for n, c in names.most_common(8)))
    starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
    ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
    paired = sum(1 for i in starts if starts[i] == 1 and ends.get(i) == 1)
    print(f"  flows: {len(starts)} starts, {len(ends)} finishes, {paired} paired")
    dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    ext = [e for e in dev if "External id" in e.get("args", {})]
    print(f"  device events with an External id: {len(ext)} of {len(dev)}")
    print("  clock:", json.dumps(d.get("clock")))
    print("  loss:", json.dumps(d.get("loss")))
    print("  notes:", json.dumps(d.get("notes", {}), indent=3))
    if len(starts) != paired: problems.append(f"{path}: unpaired flows")
    if (d.get("loss") or {}).get("total"): problems.append(f"{path}: records were lost (see loss)")
    if any("#" in n for n in names): problems.append(f"{path}: API calls without names")
if not total.get("kernel"): problems.append("no kernels recorded")
if not total.get("privateuse1_runtime") and not total.get("privateuse1_driver"): problems.append("no API calls recorded")
if not total.get("gpu_memcpy"): problems.append("no memory copies recorded")
if cncl and not total.get("collective"): problems.append("no collectives recorded")
print("verdict:", "OK" if not problems else "PROBLEMS: " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
verdict=${PIPESTATUS[0]}
say ""
say "report: $report"
[ "$dry" = 1 ] && rm -rf "$out"
exit "$verdict"
