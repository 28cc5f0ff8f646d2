#!/usr/bin/env bash
# Validate devtrace's ROCm backends on AMD GPUs (ROCm) or Hygon DCUs (DTK),
# and print a report to attach to a bug or to docs/backends/<backend>.md.
#
#   tests/gpu/rocm_validate.sh [--dtk] [--backend NAME] [-B BUILD_DIR] [-o OUT_DIR]
#                              [--layouts-only] [-- WORKLOAD...]
#   tests/gpu/rocm_validate.sh --emulator BUILD_DIR     (a dry run on devtrace's emulator)
#
#   --dtk       Hygon DTK (DTK_ROOT, default /opt/dtk; roctracer's entry points
#               in libgalaxyhip.so.5) instead of ROCm (ROCM_PATH, default /opt/rocm)
#   --backend   roctracer (the default); each backend has its own section below
#
# What it does:
#   1. says what is installed (ROCm or DTK, the libraries, rocminfo/hy-smi);
#   2. the backend's own checks: for roctracer, devtrace's declaration of the
#      public ABI compiled against the installed roctracer.h and
#      roctracer_ext.h (every record offset, enum value and entry point type
#      devtrace relies on), and the HIP API argument offsets it reads
#      against the installed hip_prof_str.h; --layouts-only stops here;
#   3. builds devtrace (CMake finds the headers), unless BUILD_DIR holds one;
#   4. records a short HIP workload with `devtrace record --backend NAME`:
#      tests/gpu/hip_workload.hip built with hipcc (kernels of known grid and
#      block, copies, fills, ROCTX ranges), else a PyTorch loop on the GPU,
#      or WORKLOAD, any command that uses the GPU;
#   5. runs `devtrace check` and `devtrace stats`;
#   6. prints what it found (tests/gpu/trace_findings.py) and a verdict.
# Everything is also written to OUT_DIR (default ./rocm-validate-<date>).
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
dtk=0; backend=roctracer; build=""; out=""; layouts_only=0; emulator=""
workload=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dtk) dtk=1; shift ;;
    --backend) backend=$2; shift 2 ;;
    -B) build=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    --layouts-only) layouts_only=1; shift ;;
    --emulator) emulator=1; build=$(cd "$2" && pwd); shift 2 ;;
    --) shift; workload=("$@"); break ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$dtk" = 1 ]; then
  platform=DTK; root_var=DTK_ROOT; root_default=/opt/dtk; smi=hy-smi; packages='dtk|galaxy|hygon|hip'
else
  platform=ROCm; root_var=ROCM_PATH; root_default=/opt/rocm; smi=rocm-smi; packages='rocm|roctracer|rocprofiler|hip-runtime'
fi
root=${!root_var:-$root_default}
export "$root_var=$root"
python=${PYTHON:-python3}
[ -n "$out" ] || out="$backend-validate-$(date +%Y%m%d-%H%M%S)"
. "$here/tests/gpu/validate_lib.sh"
report_open
lib_var="DEVTRACE_$(echo "$backend" | tr a-z- A-Z_)_LIBRARY"
expect=()

report_environment "platform: $platform ($root_var=$root)"
say "$lib_var: ${!lib_var:-(unset)}"
if [ -n "$emulator" ]; then
  say "dry run on devtrace's emulator (no GPU): $build"
else
  [ -e "$root/.info/version" ] && say "version: $(cat "$root/.info/version")"
  if command -v dpkg >/dev/null 2>&1; then
    dpkg -l 2>/dev/null | grep -iE "$packages" | head -n 15 | tee -a "$report"
  fi
  command -v "$smi" >/dev/null 2>&1 && "$smi" 2>&1 | head -n 20 | tee -a "$report"
  command -v rocminfo >/dev/null 2>&1 && rocminfo 2>&1 | grep -E "Marketing Name|gfx" | head -n 8 | tee -a "$report"
fi

# ---------------------------------------------------------------------------
# Per backend: what to check before building, and the library to record with.
# A backend's section sets `expect` (what its workload is known to do) where
# it knows it. Add a backend as another case.
# ---------------------------------------------------------------------------
backend_checks_roctracer() {
  section "roctracer: libraries"
  local libs
  if [ "$dtk" = 1 ]; then libs="lib/libgalaxyhip.so.5 roctracer/lib/libroctracer64.so lib/libroctracer64.so"
  else libs="lib/libroctracer64.so lib/libroctx64.so lib/libamdhip64.so"; fi
  for l in $libs; do [ -e "$root/$l" ] && say "found: $root/$l" || say "missing: $root/$l"; done

  section "roctracer: devtrace's declaration against the installed headers"
  local inc=""
  for d in "$root/include/roctracer" "$root/roctracer/include" "$root/include"; do
    [ -e "$d/roctracer.h" ] && [ -e "$d/roctracer_ext.h" ] && inc=$d && break
  done
  if [ -z "$inc" ]; then
    say "no roctracer.h and roctracer_ext.h under $root: not checked"
  else
    say "headers: $inc"
    printf '#define DT_HAVE_ROCTRACER_HEADERS 1\n#include "backends/roctracer_abi.h"\nint main(void) { return 0; }\n' \
      >"$out/roctracer_abi_check.c"
    if ${CC:-cc} -std=c11 -D_GNU_SOURCE -I"$inc" -I"$root/include" -I"$here/src" "$out/roctracer_abi_check.c" \
         -o "$out/roctracer_abi_check" >"$out/roctracer_abi_check.log" 2>&1; then
      say "every record offset, enum value and entry point type devtrace relies on matches the headers"
    else
      say "MISMATCH (or the headers do not compile as C): see $out/roctracer_abi_check.log"
      head -n 20 "$out/roctracer_abi_check.log" | tee -a "$report"
      [ "$layouts_only" = 1 ] && exit 1
    fi
  fi
  local prof=""
  for f in "$root/include/hip/amd_detail/hip_prof_str.h" "$root/hip/include/hip/amd_detail/hip_prof_str.h"; do
    [ -e "$f" ] && prof=$f && break
  done
  if [ -z "$prof" ]; then
    say "no hip/amd_detail/hip_prof_str.h under $root: the HIP API argument offsets are not checked"
  else
    say "HIP API records: $prof"
    # the argument offsets src/backends/roctracer_abi.h reads (DT_RT_HIP_*)
    cat >"$out/hip_args_check.cpp" <<'CPP'
#include <cstddef>
#include <hip/hip_runtime_api.h>
#include <hip/amd_detail/hip_prof_str.h>
#define ARG(f, m) (offsetof(hip_api_data_t, args.f.m) - offsetof(hip_api_data_t, args))
static_assert(offsetof(hip_api_data_t, correlation_id) == 0 && offsetof(hip_api_data_t, phase) == 8 &&
              offsetof(hip_api_data_t, args) == 16, "hip_api_data_t header");
static_assert(ARG(hipLaunchKernel, numBlocks) == 8 && ARG(hipLaunchKernel, dimBlocks) == 20, "hipLaunchKernel");
static_assert(ARG(hipModuleLaunchKernel, gridDimX) == 8 && ARG(hipModuleLaunchKernel, blockDimX) == 20 &&
              ARG(hipModuleLaunchKernel, sharedMemBytes) == 32, "hipModuleLaunchKernel");
static_assert(ARG(hipExtModuleLaunchKernel, globalWorkSizeX) == 8 &&
              ARG(hipExtModuleLaunchKernel, localWorkSizeX) == 20 &&
              ARG(hipExtModuleLaunchKernel, sharedMemBytes) == 32, "hipExtModuleLaunchKernel");
static_assert(ARG(hipMemset, value) == 8 && ARG(hipMemsetD8, value) == 8 && ARG(hipMemsetD16, value) == 8,
              "hipMemset*");
int main() { return 0; }
CPP
    if ${CXX:-c++} -std=c++17 -D__HIP_PLATFORM_AMD__ -I"$root/include" "$out/hip_args_check.cpp" \
         -o "$out/hip_args_check" >"$out/hip_args_check.log" 2>&1; then
      say "the HIP API argument offsets devtrace reads match hip_prof_str.h"
    else
      say "HIP API argument offsets NOT confirmed (a mismatch, or the header does not compile here): see $out/hip_args_check.log"
      grep -m 10 -E "error" "$out/hip_args_check.log" | tee -a "$report"
    fi
  fi
}

case "$backend" in
  roctracer) [ -n "$emulator" ] || backend_checks_roctracer ;;
  *) echo "no section for backend $backend in $0" >&2; exit 2 ;;
esac
[ "$layouts_only" = 1 ] && exit 0

section "build"
if [ -z "$build" ]; then
  build="$out/build"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  if ! cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTRACE_BUILD_TESTS=OFF \
        -DDEVTRACE_BUILD_BENCH=OFF -DDEVTRACE_BUILD_EMULATORS=OFF >"$out/cmake.log" 2>&1; then
    say "cmake failed; see $out/cmake.log"; tail -n 20 "$out/cmake.log" | tee -a "$report"; exit 1
  fi
  if ! cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1; then
    say "build failed; see $out/build.log"; grep -m 20 -E 'error' "$out/build.log" | tee -a "$report"; exit 1
  fi
  grep -E "^(DT_HAVE_ROCTRACER_HEADERS|DT_ROCTRACER_INCLUDE_DIR)" "$build/CMakeCache.txt" 2>/dev/null | tee -a "$report"
fi
devtrace=$(find "$build" -maxdepth 2 -type f -name devtrace -perm -u+x | head -n 1)
[ -n "$devtrace" ] || { say "no devtrace binary in $build"; exit 1; }
say "devtrace: $devtrace ($("$devtrace" version 2>&1))"

section "devtrace backends"
if [ -n "$emulator" ]; then export "$lib_var=$build/emu/libroctracer64.so"; fi
"$devtrace" backends 2>&1 | tee -a "$report"

section "workload"
if [ ${#workload[@]} -eq 0 ] && [ -n "$emulator" ]; then
  sed 's/^vendor [a-z]*/vendor roctracer/' "$here/examples/train_step.scn" >"$out/train_step.scn"
  workload=("$build/devtrace-emu-run" --library "${!lib_var}" "$out/train_step.scn")
elif [ ${#workload[@]} -eq 0 ]; then
  hipcc=$(command -v hipcc || echo "$root/bin/hipcc")
  roctx=(); [ -e "$root/include/roctracer/roctx.h" ] && roctx=(-DHAVE_ROCTX -I"$root/include/roctracer" -L"$root/lib" -lroctx64)
  [ -e "$root/include/roctx.h" ] && [ ${#roctx[@]} -eq 0 ] && roctx=(-DHAVE_ROCTX -L"$root/lib" -lroctx64)
  if [ -x "$hipcc" ] && "$hipcc" -O2 "$here/tests/gpu/hip_workload.hip" -o "$out/hip_workload" "${roctx[@]}" \
       -Wl,-rpath,"$root/lib" >"$out/hipcc.log" 2>&1; then
    workload=("$out/hip_workload")
    expect=(--expect kernels=20 --expect configured=20 --expect copies=30 --expect fills=10)
    [ ${#roctx[@]} -gt 0 ] && expect+=(--expect ranges=10)
    say "HIP workload built with $hipcc${roctx:+ (with ROCTX ranges)}"
  else
    say "hipcc could not build the HIP workload (see $out/hipcc.log); trying PyTorch"
    if ! "$python" -c "import torch; assert torch.version.hip and torch.cuda.is_available()" 2>"$out/torch.log"; then
      say "$python has no PyTorch for $platform with a GPU (see $out/torch.log); give a WORKLOAD after --"
      exit 1
    fi
    cat >"$out/workload.py" <<'PY'
# Kernels, copies both ways and fills on the GPU (torch's "cuda" device is
# HIP's on ROCm and DTK).
import torch
dev = torch.device("cuda")
host = torch.randn(512, 512)
for step in range(20):
    x = host.to(dev)
    y = x @ x
    z = torch.zeros(512, 512, device=dev)
    (y + z).relu().sum().cpu()
torch.cuda.synchronize()
print("workload done")
PY
    workload=("$python" "$out/workload.py")
  fi
fi
record_and_report "$devtrace" "$backend" "$python" "$here" "${expect[@]}" -- "${workload[@]}"
