#!/usr/bin/env bash
# Validate one of devtrace's CUPTI-family backends on the vendor's hardware,
# and print a report to attach to a bug or to docs/backends/<vendor>.md.
#
#   tests/gpu/vendor_validate.sh VENDOR [-B BUILD_DIR] [-o OUT_DIR] [--layouts-only] [-- WORKLOAD...]
#
#   VENDOR: topspti (Enflame TopsRider), mcpti (MetaX MACA), ppu (the PPU
#   SDK's libcupti), mupti (Moore Threads MUSA).
#
# What it does:
#   1. where the vendor's SDK headers are installed, compiles devtrace's
#      record layouts against them: every field devtrace reads must sit at
#      the offset and size the SDK declares (the layouts are inferred);
#      --layouts-only stops here (exit 1 on a mismatch); for topspti the
#      build itself decodes through the SDK's structs instead;
#   2. builds devtrace (against the SDK where the build can use it), unless
#      BUILD_DIR holds a build;
#   3. lists the backends (`devtrace backends`);
#   4. records a short workload with `devtrace record --backend VENDOR`
#      (default: a PyTorch loop of matmuls, copies and fills inside devtrace
#      user ranges on the vendor's device; or WORKLOAD, any command that uses
#      the device);
#   5. runs `devtrace check` and `devtrace stats` on the trace;
#   6. prints what it found: activity kinds seen, flows paired, External ids,
#      API names, clock fit, drops, notes, and a verdict.
# Everything is also written to OUT_DIR (default ./VENDOR-validate-<date>).
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
vendor=${1:-}
# Per vendor: the SDK root variable and default, the profiling library and
# headers below it, the SDK's record type names, the torch device and plugin,
# what the build is told about the SDK, and the vendor's device tool.
cmake_sdk=(); sdk_macro=""; smi=""; packages=""
case "$vendor" in
  topspti)
    root_var=TOPS_HOME; root_default=/opt/tops; lib=extras/TOPSPTI/lib64/libtopspti.so
    headers=(extras/TOPSPTI/include/topspti_activity.h)
    prefix=""; device=gcu; plugin=torch_gcu
    cmake_sdk=(-DTOPS_HOME); sdk_macro=DT_HAVE_TOPSPTI_SDK; smi=efsmi
    packages='topsrider|tops-|topspti|enflame|torch-gcu' ;;
  mcpti)
    root_var=MACA_PATH; root_default=/opt/maca; lib=lib/libmcpti.so
    headers=(include/mcpti/mcpti_activity.h include/mcpti_activity.h)
    prefix=MCpti_Activity; kernel=Kernel8; memcpy=Memcpy5; memset=Memset4
    device=cuda; plugin=""; smi=mx-smi; packages='maca|mcpti|metax' ;;
  ppu)
    root_var=PPU_SDK; root_default=/opt/ppu; lib=lib/libcupti.so
    headers=(include/cupti_activity.h extras/CUPTI/include/cupti_activity.h)
    prefix=CUpti_Activity; kernel=Kernel9; memcpy=Memcpy5; memset=Memset4
    device=cuda; plugin=""; packages='ppu|cupti' ;;
  mupti)
    root_var=MUSA_HOME; root_default=/usr/local/musa; lib=lib/libmupti.so
    headers=(include/mupti_activity.h include/mupti/mupti_activity.h)
    prefix=MUpti_Activity; kernel=Kernel6; memcpy=Memcpy4; memset=Memset3
    device=musa; plugin=torch_musa; smi=mthreads-gmi; packages='musa|mupti|mthreads|torch-musa' ;;
  -h|--help|"") sed -n '2,26p' "$0"; exit 0 ;;
  *) echo "unknown vendor $vendor (topspti, mcpti, ppu or mupti)" >&2; exit 2 ;;
esac
shift
build=""
out="$vendor-validate-$(date +%Y%m%d-%H%M%S)"
workload=()
layouts_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    --layouts-only) layouts_only=1; shift ;;
    -o) out=$2; shift 2 ;;
    --) shift; workload=("$@"); break ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
. "$here/tests/gpu/validate_lib.sh"
report_open
root=${!root_var:-$root_default}
export "$root_var=$root"
python=${PYTHON:-python3}

report_environment "$root_var: $root"
[ -e "$root/$lib" ] && say "found: $root/$lib" || say "missing: $root/$lib"
lib_var="DEVTRACE_$(echo "$vendor" | tr a-z A-Z)_LIBRARY"
say "$lib_var: ${!lib_var:-(unset)}"
if [ -n "$packages" ] && command -v dpkg >/dev/null 2>&1; then
  dpkg -l 2>/dev/null | grep -iE "$packages" | head -n 15 | tee -a "$report"
fi
[ -n "$smi" ] && command -v "$smi" >/dev/null 2>&1 && "$smi" 2>&1 | head -n 20 | tee -a "$report"

section "record layouts against the SDK headers"
header=""
for h in "${headers[@]}"; do [ -e "$root/$h" ] && header="$root/$h" && break; done
if [ -n "$sdk_macro" ]; then
  say "the build compiles against the SDK's own record structs (${header:-no header found under $root})"
elif [ -z "$header" ]; then
  say "no SDK header found (looked for ${headers[*]} under $root): layouts not checked"
else
  say "header: $header"
  # devtrace's declaration and the SDK's, field by field: each prints
  # "record.field offset size", and the two lists must be the same.
  fields="start end correlationId deviceId contextId streamId gridX gridY gridZ blockX blockY blockZ
          registersPerThread staticSharedMemory dynamicSharedMemory name queued submitted"
  gen() { # struct-prefix record fields...
    local type=$1 tag=$2; shift 2
    for f in "$@"; do
      echo "    printf(\"$tag.$f %zu %zu\\n\", offsetof($type, $f), sizeof((($type *)0)->$f));"
    done
  }
  copy_fields="copyKind srcKind dstKind flags bytes start end deviceId contextId streamId correlationId"
  set_fields="value bytes start end deviceId contextId streamId correlationId flags memoryKind"
  api_fields="cbid start end processId threadId correlationId returnValue"
  ext_fields="externalKind externalId correlationId"
  {
    echo '#include <stddef.h>'; echo '#include <stdio.h>'; echo "#include \"$header\""; echo 'int main(void) {'
    gen "$prefix$kernel" kernel $fields; gen "$prefix$memcpy" memcpy $copy_fields; gen "$prefix$memset" memset $set_fields
    gen "${prefix}API" api $api_fields; gen "${prefix}ExternalCorrelation" external $ext_fields
    echo '    return 0; }'
  } >"$out/sdk_layout.c"
  {
    echo '#include <stddef.h>'; echo '#include <stdio.h>'; echo '#include "backends/cupti_family_abi.h"'; echo 'int main(void) {'
    gen dt_cf_kernel kernel $fields; gen dt_cf_memcpy memcpy $copy_fields; gen dt_cf_memset memset $set_fields
    gen dt_cf_api api $api_fields; gen dt_cf_external external $ext_fields
    echo '    return 0; }'
  } >"$out/devtrace_layout.c"
  cc=${CC:-cc}
  if "$cc" -I"$(dirname "$header")" -I"$root/include" "$out/sdk_layout.c" -o "$out/sdk_layout" 2>"$out/sdk_layout.log" &&
     "$cc" -I"$here/src" "$out/devtrace_layout.c" -o "$out/devtrace_layout" 2>>"$out/sdk_layout.log"; then
    "$out/sdk_layout" >"$out/sdk_layout.txt"; "$out/devtrace_layout" >"$out/devtrace_layout.txt"
    if diff "$out/devtrace_layout.txt" "$out/sdk_layout.txt" >"$out/layout.diff"; then
      say "every field devtrace reads matches the SDK's offset and size ($(wc -l <"$out/sdk_layout.txt") fields)"
    else
      say "LAYOUT MISMATCH (devtrace < > SDK):"; tee -a "$report" <"$out/layout.diff"
      [ "$layouts_only" = 1 ] && exit 1
    fi
  else
    say "the layout check did not compile (the SDK may name its records otherwise); see $out/sdk_layout.log"
    head -n 20 "$out/sdk_layout.log" | tee -a "$report"
    [ "$layouts_only" = 1 ] && exit 1
  fi
fi
[ "$layouts_only" = 1 ] && exit 0

section "build"
if [ -z "$build" ]; then
  build="$out/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  sdk=(); [ ${#cmake_sdk[@]} -gt 0 ] && sdk=("${cmake_sdk[0]}=$root")
  if ! cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTRACE_BUILD_TESTS=OFF \
        -DDEVTRACE_BUILD_BENCH=OFF "${sdk[@]}" >"$out/cmake.log" 2>&1; then
    say "cmake failed; see $out/cmake.log"; tail -n 20 "$out/cmake.log" | tee -a "$report"; exit 1
  fi
  if ! cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1; then
    say "build failed; see $out/build.log"; grep -m 20 -E 'error' "$out/build.log" | tee -a "$report"; exit 1
  fi
fi
if [ -n "$sdk_macro" ]; then
  if grep -q "$sdk_macro" "$build/CMakeCache.txt" 2>/dev/null; then
    say "SDK headers: used (records decoded through the SDK's own structs)"
  else
    say "SDK headers: NOT used: records are decoded through devtrace's declaration; set $root_var to the SDK root"
  fi
fi
devtrace=$(find "$build" -maxdepth 2 -type f -name devtrace -perm -u+x | head -n 1)
[ -n "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"

section "devtrace backends"
"$devtrace" backends 2>&1 | tee -a "$report"

section "workload"
if [ ${#workload[@]} -eq 0 ]; then
  if ! "$python" -c "import torch${plugin:+, $plugin}" 2>"$out/torch.log"; then
    say "$python cannot import torch${plugin:+ and $plugin} (see $out/torch.log); set PYTHON, or give a WORKLOAD after --"
    exit 1
  fi
  cat >"$out/workload.py" <<PY
# A short workload: kernels, copies both ways and fills, inside nested
# devtrace user ranges (reached through the preloaded devtrace library).
import ctypes
import torch
${plugin:+import $plugin  # noqa: F401 (registers the device)}
dt = ctypes.CDLL(None)
ranges = hasattr(dt, "dt_range_push")
def push(name):
    if ranges:
        dt.dt_range_push(name.encode(), None)
def pop():
    if ranges:
        dt.dt_range_pop()
dev = torch.device("$device")
host = torch.randn(512, 512)
for step in range(20):
    push("step")
    x = host.to(dev)                      # HtoD copy
    push("matmul")
    y = x @ x                             # kernel
    pop()
    z = torch.zeros(512, 512, device=dev) # fill
    w = (y + z).relu().sum()              # kernels
    w.cpu()                               # DtoH copy
    pop()
getattr(torch, dev.type).synchronize() if hasattr(getattr(torch, dev.type, None), "synchronize") else None
print("workload done; devtrace ranges:", ranges)
PY
  workload=("$python" "$out/workload.py")
fi
record_and_report "$devtrace" "$vendor" "$python" "$here" -- "${workload[@]}"
