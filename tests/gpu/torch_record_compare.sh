#!/usr/bin/env bash
# `devtrace record -- python` beside torch.profiler (activities=[CPU]) on a
# machine with an NVIDIA GPU and torch built with CUDA, in one call (budget:
# 5 minutes): a small CUDA model step runs under torch.profiler, which
# exports its trace of the ops, while devtrace records the process's CUDA
# activity. tests/gpu/torch_record_compare.py then reports how the two line
# up: launches resolved to the torch op around them on the same thread,
# device time per op, the clock margins, External ids, thread ids.
# Markdown to stdout (and $OUT/torch_record_compare.md when OUT is set);
# exit status 0 only when the launches resolve and aten::mm, relu and
# softmax each got device activity.
#
#   tests/gpu/torch_record_compare.sh [--dry-run] [BUILD_DIR]
#
# --dry-run (no GPU): checks the scripts, runs the comparison's self-test,
# and, when BUILD_DIR has the TOPSPTI emulator and torch is installed, runs
# the whole pipeline with a custom op on the emulated device instead of CUDA.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dry=0
if [[ ${1:-} == --dry-run ]]; then dry=1; shift; fi
build=$(realpath -m "${1:-$root/build-gpu}")
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-torch-compare.XXXXXX")
report=$work/torch_record_compare.md
steps=${DEVTRACE_GPU_STEPS:-20}
compare=$root/tests/gpu/torch_record_compare.py
PY=${PYTHON:-python3}
status=0

md() { printf '%s\n' "$*" | tee -a "$report"; }
fail() { md "**FAIL**: $*"; status=1; }
finish() {
    if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT" && cp "$report" "$OUT/torch_record_compare.md"; fi
    if [[ $dry == 1 ]]; then rm -rf "$work"; fi
    exit $status
}

md "# devtrace record beside torch.profiler"
md ""
md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
md "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
md "- python: $($PY --version 2>&1); torch: $($PY -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null || echo absent)"
[[ $dry == 0 ]] && md "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)"
[[ $dry == 0 ]] && md "- traces and logs: $work"
md ""

bash -n "$0" || fail "this script does not parse"
$PY "$compare" --self-test >"$work/self-test.log" 2>&1 || { fail "comparison self-test"; cat "$work/self-test.log"; }

if [[ $dry == 0 ]]; then
    if [[ ! -f $build/CMakeCache.txt ]]; then
        gen=()
        command -v ninja >/dev/null && gen=(-G Ninja)
        cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDEVTRACE_BUILD_TESTS=OFF \
            -DDEVTRACE_BUILD_BENCH=OFF -DDEVTRACE_BUILD_EMULATORS=OFF >"$work/cmake.log" 2>&1 ||
            { fail "cmake failed"; tail -n 20 "$work/cmake.log" | tee -a "$report"; finish; }
    fi
    cmake --build "$build" -j "$(nproc)" --target devtrace_cli devtrace_inject >"$work/build.log" 2>&1 ||
        { fail "build failed"; tail -n 30 "$work/build.log" | tee -a "$report"; finish; }
    workload=(workload --device cuda --steps "$steps" --torch-trace "$work/torch.json")
    expect=aten::mm,aten::relu,aten::softmax
    backend=cupti
    env_lib=()
    # the libcupti torch loads: one CUPTI serves the process
    torch_cupti=$($PY "$root/tests/gpu/torch_cupti.py" 2>/dev/null)
    if [[ -n $torch_cupti && -z ${DEVTRACE_CUPTI_LIBRARY:-} ]]; then env_lib=(DEVTRACE_CUPTI_LIBRARY="$torch_cupti"); fi
    md "- CUPTI used by devtrace: ${DEVTRACE_CUPTI_LIBRARY:-${torch_cupti:-the first found in the search order}}"
else
    emu=$build/emu/libtopspti.so
    if [[ ! -x $build/devtrace || ! -f $emu ]]; then
        md "dry run: no devtrace build with the TOPSPTI emulator at $build; self-test only"
        finish
    fi
    if ! $PY -c "import torch" 2>/dev/null; then
        md "dry run: torch is not installed; self-test only"
        finish
    fi
    workload=(workload --device emu --emulator "$emu" --steps "$steps" --torch-trace "$work/torch.json")
    expect=devtrace_gpu::emu_mm
    backend=topspti
    env_lib=(DEVTRACE_TOPSPTI_LIBRARY="$emu")
fi

md "## devtrace record ($backend) -- python, torch.profiler(activities=[CPU]) inside"
md ""
env "${env_lib[@]}" "$build/devtrace" record --backend "$backend" -o "$work/devtrace.json" -- \
    "$PY" "$compare" "${workload[@]}" >"$work/record.log" 2>&1 ||
    { fail "the workload under devtrace record failed"; tail -n 30 "$work/record.log" | tee -a "$report"; finish; }
# the trace of the workload itself (its helper processes write their own)
grep -E "devtrace\.json: |LOST" "$work/record.log" | sed 's/^/    /' | tee -a "$report"
"$build/devtrace" check "$work/devtrace.json" >"$work/check.log" 2>&1 ||
    { fail "devtrace check rejected the trace"; tail -n 20 "$work/check.log" | tee -a "$report"; }
md ""
$PY "$compare" compare --devtrace "$work/devtrace.json" --torch "$work/torch.json" --expect-ops "$expect" \
    >"$work/compare.md" 2>&1 || status=1
tee -a "$report" <"$work/compare.md"
[[ $status == 0 ]] && md "" && md "All checks passed."
finish
