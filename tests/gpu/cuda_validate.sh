#!/usr/bin/env bash
# CUDA validation of devtrace's CUPTI backend on a machine with an NVIDIA GPU,
# in one call (budget: 8 minutes on an H200 with 16 cores):
#   0. prerequisites, checked first, with how to install what is missing;
#      the build (library, CLI, injection library); a warm-up of the GPU;
#   1. a CUDA C workload of known content (tests/gpu/workload.cu) records
#      itself through the C API: exact kernel, copy, memset and launch
#      counts, demangled names, paired flows, External ids, device
#      properties, `devtrace check`, the clock fit;
#   2. `devtrace record` of CUDA programs: CUPTI attached when the process
#      initialises CUDA (a launch loop: every kernel kept), never loaded by a
#      process that does not (`sh`);
#   3. a PyTorch model (200 steps) under devtrace and under torch.profiler
#      (activities=[CUDA]), both in process and started after the warm-up:
#      per-kernel counts equal, totals, medians within 15% (reported only
#      under 10 us), trace sizes and export times (tests/gpu/compare_torch.py);
#   4. torch.profiler inside `devtrace record`: refused CUPTI (devtrace's
#      trace has the kernels, record says so), or given it with
#      DEVTRACE_CUPTI_HANDOVER=1;
#   5. overhead on launch-bound loops of 100,000 tiny kernels, like with like
#      (each profiler in process, started after the warm-up, loop time only):
#      CUDA C untraced and under devtrace, PyTorch untraced, under devtrace
#      and under torch.profiler; three runs each, the median.
# Results go to stdout as markdown and to RESULTS (default
# <work>/cuda_validation.md; also $OUT/cuda_validation.md when OUT is set),
# to paste into docs/validation/cuda.md. Exit status 0 only when every check
# passed.
#
#   tests/gpu/cuda_validate.sh [--dry-run] [BUILD_DIR]
#
# python3 is the first on PATH (a venv's, with torch and CUDA), or $PYTHON.
# --dry-run (no GPU needed): checks the prerequisites and the scripts,
# compiles the CUDA sources with nvcc against BUILD_DIR's libdevtrace, runs
# the comparison's self-test and imports devtrace's Python package.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dry=0
if [[ ${1:-} == --dry-run ]]; then dry=1; shift; fi
build=$(realpath -m "${1:-$root/build-gpu}")
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-cuda.XXXXXX")
report=$work/cuda_validation.md
results=${RESULTS:-$report}
launches=${DEVTRACE_GPU_LAUNCHES:-100000}
steps=${DEVTRACE_GPU_STEPS:-200}
repeats=3
status=0
PY=${PYTHON:-python3}
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}

md() { printf '%s\n' "$*" | tee -a "$report"; }
fail() { md "**FAIL**: $*"; status=1; }
finish() {
    [[ $results != "$report" ]] && cp "$report" "$results"
    if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT" && cp "$report" "$OUT/cuda_validation.md"; fi
    [[ $dry == 0 ]] && echo "results: $results (paste into docs/validation/cuda.md)" >&2
    # a GPU run keeps its traces for inspection; a dry run leaves nothing
    if [[ $dry == 1 ]]; then rm -rf "$work"; fi
    exit $status
}
json() { $PY -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$3" 2>/dev/null; }
median() { $PY -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x]; print('%.4f' % statistics.median(v) if len(v) == $repeats else '')" "$@"; }
ratio() { $PY -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%.3f' % (a/b) if b > 0 else 'n/a')" "$1" "$2" 2>/dev/null || echo n/a; }

# ---------------------------------------------------------------- 0. prerequisites
missing=()
need() { # what, present?, how to install
    if ! eval "$2" >/dev/null 2>&1; then missing+=("$1: $3"); fi
}
need "cmake >= 3.20" 'cmake --version | awk "NR==1 {split(\$3,v,\".\"); exit !(v[1]>3 || (v[1]==3 && v[2]>=20))}"' \
    "apt-get install cmake, dnf install cmake, or pip install cmake"
need "a C compiler" 'command -v cc' "apt-get install build-essential, or dnf install gcc"
need "nvcc (the CUDA toolkit)" '[[ -x $NVCC ]]' "install the CUDA toolkit and set CUDA_HOME (or NVCC)"
need "$PY" "command -v $PY" "install python3, or set PYTHON"
need "torch in $PY" "$PY -c 'import torch'" \
    "pip install torch in that python (CUDA build), or point PYTHON at the one that has it"
if [[ $dry == 0 ]]; then
    need "an NVIDIA driver (nvidia-smi)" 'nvidia-smi -L' "install the NVIDIA driver"
    need "torch with CUDA in $PY" "$PY -c 'import torch; assert torch.cuda.is_available()'" \
        "install a CUDA build of torch (pip install torch --index-url https://download.pytorch.org/whl/cu130)"
fi

md "# devtrace CUDA validation"
md ""
md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
md "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[[ $dry == 0 ]] && md "- GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)"
md "- nvcc: $("$NVCC" --version 2>/dev/null | tail -n 1 || echo missing)"
md "- python: $(command -v "$PY") ($($PY --version 2>&1)); torch: $($PY -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo absent)"
[[ $dry == 0 ]] && md "- traces and logs: $work"
md ""
if ((${#missing[@]})); then
    md "## Missing prerequisites"
    for m in "${missing[@]}"; do md "- $m"; done
    fail "prerequisites missing (see above)"
    finish
fi

# ---------------------------------------------------------------- build
if [[ ! -f $build/CMakeCache.txt ]]; then
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDEVTRACE_BUILD_TESTS=OFF \
        -DDEVTRACE_BUILD_BENCH=OFF -DDEVTRACE_BUILD_EMULATORS=OFF >"$work/cmake.log" 2>&1 ||
        { fail "cmake failed (see below)"; tail -n 20 "$work/cmake.log" | tee -a "$report"; finish; }
fi
cmake --build "$build" -j "$(nproc)" --target devtrace_shared devtrace_cli devtrace_inject >"$work/build.log" 2>&1 ||
    { fail "build failed"; tail -n 30 "$work/build.log" | tee -a "$report"; finish; }
devtrace=$build/devtrace
if ! grep -q "DT_HAVE_CUPTI=1" "$build/build.ninja" "$build/CMakeFiles/devtrace_obj.dir/flags.make" 2>/dev/null; then
    fail "devtrace was built without CUPTI headers: set CUDA_HOME and rebuild"
fi
# devtrace's Python package, on this build's library, for the in-process runs
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
export DEVTRACE_LIBRARY=$build/libdevtrace.so

arch=sm_90
[[ $dry == 0 ]] && arch=native
nvcc_flags=(-O2 -std=c++17 -arch="$arch" -I"$root/include" "$build/libdevtrace.so" -Xlinker -rpath -Xlinker "$build")
"$NVCC" "${nvcc_flags[@]}" -o "$work/workload" "$root/tests/gpu/workload.cu" >"$work/nvcc1.log" 2>&1 ||
    { fail "nvcc workload.cu"; tail -n 20 "$work/nvcc1.log" | tee -a "$report"; }
"$NVCC" "${nvcc_flags[@]}" -o "$work/launch_loop" "$root/tests/gpu/launch_loop.cu" >"$work/nvcc2.log" 2>&1 ||
    { fail "nvcc launch_loop.cu"; tail -n 20 "$work/nvcc2.log" | tee -a "$report"; }

if [[ $dry == 1 ]]; then
    md "## Dry run (no GPU)"
    md "- prerequisites: present"
    bash -n "$0" && md "- cuda_validate.sh: syntax ok" || fail "cuda_validate.sh syntax"
    $PY -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
        "$root/tests/gpu/torch_workload.py" "$root/tests/gpu/compare_torch.py" &&
        md "- torch_workload.py, compare_torch.py: compile ok" || fail "python scripts do not compile"
    $PY "$root/tests/gpu/compare_torch.py" --self-test >>"$report" 2>&1 && md "- compare_torch.py self-test: ok" ||
        fail "compare_torch.py self-test"
    if grep -q "^DEVTRACE_SANITIZE:STRING=.\+" "$build/CMakeCache.txt" 2>/dev/null; then
        md "- devtrace's Python package: not imported (a sanitizer build's library needs its runtime preloaded)"
    else
        $PY -c "import devtrace, torch; print(devtrace.version())" >/dev/null 2>&1 &&
            md "- devtrace's Python package imports beside torch, on $build/libdevtrace.so" ||
            fail "devtrace's Python package does not import with DEVTRACE_LIBRARY=$build/libdevtrace.so"
    fi
    [[ -x $work/workload && -x $work/launch_loop ]] && md "- nvcc ($arch): workload.cu and launch_loop.cu built" ||
        fail "CUDA sources did not build"
    "$devtrace" backends >>"$report" 2>&1
    md ""
    md "Dry run: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
    finish
fi

$PY "$root/tests/gpu/torch_workload.py" warmup --seconds 2 >/dev/null 2>&1 || fail "the GPU warm-up failed"

# ---------------------------------------------------------------- 1. CUDA C workload
md "## 1. CUDA C workload (C API, nested ranges, two streams)"
if (cd "$work" && ./workload "$work/workload.json" >"$work/workload.out" 2>"$work/workload.err"); then
    md "- workload checks: PASS \`$(cat "$work/workload.out")\`"
else
    fail "workload checks: \`$(cat "$work/workload.out" 2>/dev/null)\`"
    sed 's/^/    /' "$work/workload.err" | head -n 30 | tee -a "$report"
fi
if [[ -f $work/workload.json ]]; then
    "$devtrace" check "$work/workload.json" >"$work/check1.txt" 2>&1 && md "- devtrace check: PASS" ||
        { fail "devtrace check on the workload's trace"; sed 's/^/    /' "$work/check1.txt" | head -n 30 | tee -a "$report"; }
    md "- trace: $($PY -c "import json,sys; d=json.load(open(sys.argv[1]))['devtrace']; print('counts %s; loss total %s; clock: %s samples, error bound %s ns, slope %s' % (d['counts'], d['loss']['total'], d['clock']['samples'], d['clock']['errorBoundNs'], d['clock']['slope']))" "$work/workload.json" 2>&1)"
    "$devtrace" stats "$work/workload.json" >"$work/stats1.txt" 2>&1 && { md '```'; head -n 40 "$work/stats1.txt" | tee -a "$report"; md '```'; }
fi
md ""

# ---------------------------------------------------------------- 2. devtrace record
md "## 2. devtrace record: CUPTI attached when the process initialises CUDA"
small=$((launches / 5))
"$devtrace" record -o "$work/loop_record.json" -- "$work/launch_loop" "$small" >"$work/loop_record.out" 2>"$work/loop_record.err"
kept=$($PY -c "import json,sys; d=json.load(open(sys.argv[1]))['devtrace']; print(d['counts']['kernel'], d['loss']['total'], d['backend'])" "$work/loop_record.json" 2>/dev/null)
read -r kk kl kb <<<"$kept"
md "- launch loop under record: kernels kept $kk (want $((small + 1000))), records lost $kl, backend $kb"
[[ "$kk" == "$((small + 1000))" && "$kl" == 0 && "$kb" == cupti ]] || { fail "record of the launch loop"; sed 's/^/    /' "$work/loop_record.err" | tail -n 20 | tee -a "$report"; }
maps=$("$devtrace" record -o "$work/sh.json" -- sh -c 'grep -c cupti /proc/self/maps; exit 0' 2>/dev/null | head -n 1)
md "- a process that never initialises CUDA (sh) under record: libcupti mappings $maps (want 0)"
[[ $maps == 0 ]] || fail "a process without CUDA loaded libcupti"
md ""

# ---------------------------------------------------------------- 3. PyTorch comparison
md "## 3. PyTorch model, $steps steps: devtrace vs torch.profiler"
run_model() { $PY "$root/tests/gpu/torch_workload.py" model --steps "$steps" --profiler "$1" --trace-out "$2" 2>"$work/model_$1.err" | tail -n 1; }
m_dt=$(run_model devtrace "$work/model_devtrace.json")
m_tp=$(run_model torch "$work/model_torch.json")
if [[ -n $m_dt && -n $m_tp ]]; then
    $PY "$root/tests/gpu/compare_torch.py" --devtrace "$work/model_devtrace.json" --torch "$work/model_torch.json" \
        --devtrace-export-s "$(json x "d['export_s']" "$m_dt")" --torch-export-s "$(json x "d['export_s']" "$m_tp")" \
        >"$work/compare.md" 2>&1 || status=1
    tee -a "$report" <"$work/compare.md"
    md "- devtrace records lost: $(json x "d['lost']" "$m_dt")"
    "$devtrace" check "$work/model_devtrace.json" >"$work/check3.txt" 2>&1 && md "- devtrace check (PyTorch trace): PASS" ||
        { fail "devtrace check on the PyTorch trace"; head -n 20 "$work/check3.txt" | tee -a "$report"; }
else
    fail "the PyTorch model did not run (devtrace: ${m_dt:-failed}; torch.profiler: ${m_tp:-failed})"
    tail -n 20 "$work/model_devtrace.err" "$work/model_torch.err" | tee -a "$report"
fi
md ""

# ---------------------------------------------------------------- 4. torch.profiler inside devtrace record
md "## 4. torch.profiler inside devtrace record"
for mode in held handover; do
    envs=()
    [[ $mode == handover ]] && envs=(DEVTRACE_CUPTI_HANDOVER=1)
    env "${envs[@]}" "$devtrace" record -o "$work/rec_$mode.json" -- $PY "$root/tests/gpu/torch_workload.py" model \
        --steps 20 --profiler torch --trace-out "$work/rec_${mode}_torch.json" >"$work/rec_$mode.out" 2>"$work/rec_$mode.err"
    counts=$($PY -c "
import json, sys
d = json.load(open(sys.argv[1]))['devtrace']
t = json.load(open(sys.argv[2]))
print(d['counts']['kernel'], sum(1 for e in t['traceEvents'] if e.get('cat') == 'kernel'), 'handover' in d['notes'], 'cupti_clients' in d['notes'])
" "$work/rec_$mode.json" "$work/rec_${mode}_torch.json" 2>/dev/null)
    read -r dk tk handed refused <<<"$counts"
    md "- $mode: kernels in devtrace's trace $dk, in torch.profiler's $tk; notes: handover $handed, refusal $refused"
    grep "devtrace: process" "$work/rec_$mode.err" | sed 's/^/    /' | tee -a "$report" >/dev/null
    if [[ $mode == held ]]; then
        [[ ${dk:-0} -gt 0 && $refused == True ]] || fail "devtrace holding CUPTI against torch.profiler"
    else
        [[ ${tk:-0} -gt 0 && $handed == True ]] || fail "CUPTI handed over to torch.profiler"
    fi
done
md ""

# ---------------------------------------------------------------- 5. overhead
md "## 5. Overhead: $launches tiny kernels, launch-bound (median of $repeats runs; each profiler in process)"
md ""
md "| loop | untraced (s) | devtrace (s) | torch.profiler (s) | devtrace / untraced | torch.profiler / untraced | export devtrace (s) | export torch (s) |"
md "|---|---|---|---|---|---|---|---|"
c0=() c1=() ce=()
for _ in $(seq $repeats); do
    c0+=("$(json x "d['loop_s']" "$("$work/launch_loop" "$launches" 2>/dev/null | tail -n 1)")")
    r=$("$work/launch_loop" "$launches" --devtrace "$work/loop_devtrace.json" 2>/dev/null | tail -n 1)
    c1+=("$(json x "d['loop_s']" "$r")")
    ce+=("$(json x "d['export_s']" "$r")")
    [[ $(json x "d['kernels'] == $launches and d['lost'] == 0" "$r") == True ]] || fail "the C loop under devtrace lost kernels: $r"
done
m0=$(median "${c0[@]}"); m1=$(median "${c1[@]}"); me=$(median "${ce[@]}")
if [[ -n $m0 && -n $m1 ]]; then
    md "| CUDA C (<<<>>>) | $m0 | $m1 | n/a | $(ratio "$m1" "$m0") | n/a | $me | n/a |"
else
    fail "the CUDA C loop did not run"
fi
p=( ) q=( ) r=( ) pe=( ) qe=( )
for _ in $(seq $repeats); do
    for prof in none devtrace torch; do
        out=$($PY "$root/tests/gpu/torch_workload.py" loop --launches "$launches" --profiler "$prof" \
              --trace-out "$work/torch_loop_$prof.json" 2>/dev/null | tail -n 1)
        case $prof in
        none) p+=("$(json x "d['loop_s']" "$out")") ;;
        devtrace) q+=("$(json x "d['loop_s']" "$out")"); pe+=("$(json x "d['export_s']" "$out")") ;;
        torch) r+=("$(json x "d['loop_s']" "$out")"); qe+=("$(json x "d['export_s']" "$out")") ;;
        esac
    done
done
s0=$(median "${p[@]}"); s1=$(median "${q[@]}"); s2=$(median "${r[@]}")
if [[ -n $s0 && -n $s1 && -n $s2 ]]; then
    md "| PyTorch (x.add_(1)) | $s0 | $s1 | $s2 | $(ratio "$s1" "$s0") | $(ratio "$s2" "$s0") | $(median "${pe[@]}") | $(median "${qe[@]}") |"
else
    fail "the PyTorch loops did not all run"
fi
md ""
md "Result: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
finish
