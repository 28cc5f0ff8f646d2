#!/usr/bin/env bash
# CUDA validation of devtrace's CUPTI backend on a machine with an NVIDIA GPU,
# in one call (budget: 8 minutes):
#   1. a CUDA C workload of known content (tests/gpu/workload.cu) records
#      itself through the C API; exact kernel/copy/memset counts, demangled
#      names, paired flows, External ids on every device event, and
#      `devtrace check` on its trace;
#   2. a PyTorch workload (matmul, relu, softmax) under `devtrace record` and
#      under torch.profiler: kernel names and counts equal, median durations
#      within 5%, trace sizes and export times (tests/gpu/compare_torch.py);
#   3. overhead on launch-bound loops of 100,000 tiny kernels (CUDA C and
#      PyTorch): untraced, under devtrace, under torch.profiler, as ratios.
# Results go to stdout as markdown, and to $OUT/cuda_validation.md when OUT
# is set. Exit status 0 only when every check passed.
#
#   tests/gpu/cuda_validate.sh [--dry-run] [BUILD_DIR]
#
# --dry-run (no GPU needed): checks the scripts, compiles the CUDA sources
# with nvcc against BUILD_DIR's libdevtrace, and runs the comparison's
# self-test.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dry=0
if [[ ${1:-} == --dry-run ]]; then dry=1; shift; fi
build=$(realpath -m "${1:-$root/build-gpu}")
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-cuda.XXXXXX")
report=$work/cuda_validation.md
launches=${DEVTRACE_GPU_LAUNCHES:-100000}
steps=${DEVTRACE_GPU_STEPS:-50}
status=0

PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}

md() { printf '%s\n' "$*" | tee -a "$report"; }
fail() { md "**FAIL**: $*"; status=1; }
finish() {
    if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT" && cp "$report" "$OUT/cuda_validation.md"; fi
    # a GPU run keeps its traces for inspection; a dry run leaves nothing
    if [[ $dry == 1 ]]; then rm -rf "$work"; fi
    exit $status
}
ratio() { $PY -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%.3f' % (a/b) if b > 0 else 'n/a')" "$1" "$2"; }

md "# devtrace CUDA validation"
md ""
md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
md "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ $dry == 0 ]]; then
    md "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)"
fi
md "- nvcc: $("$NVCC" --version 2>/dev/null | tail -n 1 || echo missing)"
[[ $dry == 0 ]] && md "- traces and logs: $work"
md "- python: $($PY --version 2>&1); torch: $($PY -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null || echo absent)"
md ""

# ---------------------------------------------------------------- build
if [[ ! -f $build/CMakeCache.txt ]]; then
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDEVTRACE_BUILD_TESTS=OFF \
        -DDEVTRACE_BUILD_BENCH=OFF -DDEVTRACE_BUILD_EMULATORS=OFF >"$work/cmake.log" 2>&1 ||
        { fail "cmake failed (see below)"; tail -n 20 "$work/cmake.log" | tee -a "$report"; finish; }
fi
cmake --build "$build" -j "$(nproc)" --target devtrace devtrace_cli devtrace_inject >"$work/build.log" 2>&1 ||
    { fail "build failed"; tail -n 30 "$work/build.log" | tee -a "$report"; finish; }
# With Ninja, "devtrace" names the CLI's file before the library's target.
if [[ ! -e $build/libdevtrace.so && -f $build/build.ninja ]]; then
    ninja -C "$build" libdevtrace.so >>"$work/build.log" 2>&1 || { fail "build of libdevtrace.so failed"; finish; }
fi
devtrace=$build/devtrace
libdir=$build
if ! grep -q "DT_HAVE_CUPTI=1" "$build/build.ninja" "$build/CMakeFiles/devtrace_obj.dir/flags.make" 2>/dev/null; then
    fail "devtrace was built without CUPTI headers: set CUDA_HOME and rebuild"
fi

arch=sm_90
if [[ $dry == 0 ]]; then arch=native; fi
nvcc_flags=(-O2 -std=c++17 -arch="$arch" -I"$root/include")
"$NVCC" "${nvcc_flags[@]}" -o "$work/workload" "$root/tests/gpu/workload.cu" "$libdir/libdevtrace.so" \
    -Xlinker -rpath -Xlinker "$libdir" >"$work/nvcc1.log" 2>&1 ||
    { fail "nvcc workload.cu"; tail -n 20 "$work/nvcc1.log" | tee -a "$report"; }
"$NVCC" "${nvcc_flags[@]}" -o "$work/launch_loop" "$root/tests/gpu/launch_loop.cu" >"$work/nvcc2.log" 2>&1 ||
    { fail "nvcc launch_loop.cu"; tail -n 20 "$work/nvcc2.log" | tee -a "$report"; }

if [[ $dry == 1 ]]; then
    md "## Dry run (no GPU)"
    bash -n "$0" && md "- cuda_validate.sh: syntax ok" || fail "cuda_validate.sh syntax"
    $PY -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
        "$root/tests/gpu/torch_workload.py" "$root/tests/gpu/compare_torch.py" &&
        md "- torch_workload.py, compare_torch.py: compile ok" || fail "python scripts do not compile"
    $PY "$root/tests/gpu/compare_torch.py" --self-test >>"$report" 2>&1 && md "- compare_torch.py self-test: ok" ||
        fail "compare_torch.py self-test"
    [[ -x $work/workload && -x $work/launch_loop ]] && md "- nvcc ($arch): workload.cu and launch_loop.cu built" ||
        fail "CUDA sources did not build"
    "$devtrace" backends >>"$report" 2>&1
    md ""
    md "Dry run: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
    finish
fi

# ---------------------------------------------------------------- 1. CUDA C workload
md "## 1. CUDA C workload (C API, nested ranges, two streams)"
if ( cd "$work" && ./workload "$work/workload.json" >"$work/workload.out" 2>"$work/workload.err" ); then
    md "- workload checks: PASS \`$(cat "$work/workload.out")\`"
else
    fail "workload checks: \`$(cat "$work/workload.out" 2>/dev/null)\`"
    sed 's/^/    /' "$work/workload.err" | head -n 30 | tee -a "$report"
fi
if [[ -f $work/workload.json ]]; then
    if "$devtrace" check "$work/workload.json" >"$work/check1.txt" 2>&1; then
        md "- devtrace check: PASS"
    else
        fail "devtrace check on the workload's trace"
        sed 's/^/    /' "$work/check1.txt" | head -n 30 | tee -a "$report"
    fi
    "$devtrace" stats "$work/workload.json" >"$work/stats1.txt" 2>&1 && { md '```'; head -n 40 "$work/stats1.txt" | tee -a "$report"; md '```'; }
fi
md ""

# PyTorch wheels bring their own libcupti, which torch loads: devtrace must
# use that copy, not a second one from the toolkit.
torch_cupti=$($PY "$root/tests/gpu/torch_cupti.py" 2>/dev/null)
if [[ -n $torch_cupti && -z ${DEVTRACE_CUPTI_LIBRARY:-} ]]; then export DEVTRACE_CUPTI_LIBRARY=$torch_cupti; fi

# ---------------------------------------------------------------- 2. PyTorch
md "## 2. PyTorch workload: devtrace record vs torch.profiler"
md "- CUPTI used by devtrace: ${DEVTRACE_CUPTI_LIBRARY:-the first found in the search order}"
if ! $PY -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    fail "python3 has no CUDA-enabled torch: PyTorch comparison skipped"
else
    if "$devtrace" record -o "$work/torch_devtrace.json" -- $PY "$root/tests/gpu/torch_workload.py" model \
            --steps "$steps" >"$work/torch_dt.out" 2>"$work/torch_dt.err"; then
        t_done=$(date +%s%N)
        line=$(tail -n 1 "$work/torch_dt.out")
        read -r w0 w1 end_ns < <($PY -c "import json,sys; r=json.loads(sys.argv[1]); print(r['run_start_ns'], r['run_end_ns'], r['end_ns'])" "$line")
        # from the script's last statement to `devtrace record` returning:
        # stop, export and process exit
        dt_export=$($PY -c "import sys; print((int(sys.argv[1]) - int(sys.argv[2])) / 1e9)" "$t_done" "$end_ns")
        if $PY "$root/tests/gpu/torch_workload.py" model --steps "$steps" \
                --profile-out "$work/torch_kineto.json" >"$work/torch_k.out" 2>"$work/torch_k.err"; then
            k_export=$($PY -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['export_s'])" "$work/torch_k.out")
            $PY "$root/tests/gpu/compare_torch.py" --devtrace "$work/torch_devtrace.json" \
                --torch "$work/torch_kineto.json" --window "$w0" "$w1" \
                --devtrace-export-s "$dt_export" --torch-export-s "$k_export" >"$work/compare.md" 2>&1 || status=1
            tee -a "$report" <"$work/compare.md"
            md ""
            md "(devtrace's export time is measured from the workload's last statement to \`devtrace record\` returning: stop, trace writing and process exit.)"
        else
            fail "torch.profiler run failed"
            tail -n 20 "$work/torch_k.err" | tee -a "$report"
        fi
        "$devtrace" check "$work/torch_devtrace.json" >"$work/check2.txt" 2>&1 && md "- devtrace check (PyTorch trace): PASS" ||
            { fail "devtrace check on the PyTorch trace"; head -n 20 "$work/check2.txt" | tee -a "$report"; }
    else
        fail "devtrace record of the PyTorch workload failed"
        tail -n 20 "$work/torch_dt.err" | tee -a "$report"
    fi
fi
md ""

# ---------------------------------------------------------------- 3. overhead
md "## 3. Overhead: $launches tiny kernels, launch-bound"
md ""
md "| loop | untraced (s) | devtrace (s) | torch.profiler (s) | devtrace / untraced | torch.profiler / untraced |"
md "|---|---|---|---|---|---|"
if [[ -x $work/launch_loop ]]; then
    c0=$("$work/launch_loop" "$launches" 2>/dev/null | tail -n 1)
    c1=$("$devtrace" record -o "$work/loop.json" -- "$work/launch_loop" "$launches" 2>/dev/null | tail -n 1)
    if [[ -n $c0 && -n $c1 ]]; then
        md "| CUDA C (cudaLaunchKernel) | $c0 | $c1 | n/a | $(ratio "$c1" "$c0") | n/a |"
        kept=$($PY -c "import json,sys; t=json.load(open(sys.argv[1])); print(t['devtrace']['counts']['kernel'], t['devtrace']['loss']['total'])" "$work/loop.json" 2>/dev/null)
        md ""
        md "- CUDA C loop under devtrace: kernels kept, records lost: $kept (expected $((launches + 1000)) and 0)"
        read -r kk kl <<<"$kept"
        [[ "$kk" == "$((launches + 1000))" && "$kl" == 0 ]] || fail "the launch loop's trace does not hold every kernel"
    else
        fail "launch_loop did not run"
    fi
fi
if $PY -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    p0=$($PY "$root/tests/gpu/torch_workload.py" loop --launches "$launches" 2>/dev/null | tail -n 1)
    p1=$("$devtrace" record -o "$work/torch_loop.json" -- $PY "$root/tests/gpu/torch_workload.py" loop --launches "$launches" 2>/dev/null | tail -n 1)
    p2=$($PY "$root/tests/gpu/torch_workload.py" loop --launches "$launches" --profile 2>/dev/null | tail -n 1)
    get() { $PY -c "import json,sys; print('%.4f' % json.loads(sys.argv[1])['loop_s'])" "$1" 2>/dev/null; }
    s0=$(get "$p0"); s1=$(get "$p1"); s2=$(get "$p2")
    if [[ -n $s0 && -n $s1 && -n $s2 ]]; then
        md "| PyTorch (x.add_(1)) | $s0 | $s1 | $s2 | $(ratio "$s1" "$s0") | $(ratio "$s2" "$s0") |"
    else
        fail "PyTorch overhead runs failed"
    fi
fi
md ""
md "Result: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
finish
