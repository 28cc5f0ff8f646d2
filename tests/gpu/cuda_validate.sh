#!/usr/bin/env bash
# CUDA validation of devtrace's CUPTI backend on a machine with an NVIDIA GPU,
# in one call (under 6 minutes on one H200 with DEVTRACE_GPU_LAUNCHES=20000):
#
#   bash tests/gpu/cuda_validate.sh [-B BUILD_DIR] [OUTDIR]
#   bash tests/gpu/cuda_validate.sh --dry-run -B BUILD_DIR [OUTDIR]
#
# OUTDIR (default $OUT, else a new folder under $TMPDIR) receives, as each
# step ends: cuda_validation.md (the report, in markdown), summary.txt (one
# PASS/FAIL/SKIP line per check, then the result), logs/ (each step's output)
# and the small traces with their truth files. A step that hangs is killed at
# its own timeout; what ran before it is already there. Exit status 0 only
# when no check failed.
#
# Without torch (run first):
#   0. prerequisites (cmake, a C compiler, nvcc, the driver), the build
#      (library, CLI, injection library) when BUILD_DIR has none, the CUDA
#      sources compiled for the GPU present;
#   1. tests/gpu/workload.cu records itself through the C API in two
#      sessions; tests/gpu/cuda_findings.py judges each trace against the
#      truth the program wrote: exact kernel counts by name, every launch API
#      (<<<>>>, cudaLaunchKernelExC, cuLaunchKernel, cuLaunchKernelEx,
#      cudaLaunchCooperativeKernel, a graph launched twice) counted and each
#      flow paired, copy and memset bytes, allocations and frees (memory
#      events), External ids, durations > 0 and against cudaEvent timings;
#      then `devtrace check`, the clock fit, `devtrace stats`;
#   2. tests/gpu/cupti_client.cu: a CUPTI client subscribed before devtrace:
#      devtrace is refused with the client's name, the process stays clean,
#      and once the client unsubscribes devtrace records;
#   3. `devtrace record` of a launch loop (every kernel kept) and of `sh`
#      (no libcupti loaded);
#   3b. `record --on-demand` of a running launch loop triggered for 0.5 s
#      (CUPTI armed after the context exists), and `trigger --dump` of a
#      `record --flight-recorder` loop;
#   4. overhead of the CUDA C launch loop, untraced and under devtrace
#      (median of three).
# With torch (skipped, with a message, when `import torch` fails):
#   5. a PyTorch model under devtrace and under torch.profiler: kernels
#      compared (tests/gpu/compare_torch.py);
#   6. torch.profiler inside `devtrace record`: refused, or handed over;
#   7. overhead of a PyTorch launch loop untraced, under devtrace and under
#      torch.profiler(activities=[CUDA]) (median of three).
#
# --dry-run (no GPU): the prerequisites but the driver, the scripts' syntax
# and self-tests, the CUDA sources compiled for sm_90 against BUILD_DIR's
# libdevtrace, devtrace's Python package imported, and, where BUILD_DIR has
# the CUPTI emulator, section 1's judging on an emulated workload
# (tests/gpu/cuda_emulated.scn against cuda_emulated.truth.json).
#
# python3 is the first on PATH, or $PYTHON. DEVTRACE_GPU_LAUNCHES (default
# 20000) and DEVTRACE_GPU_STEPS (default 200) size the loops.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dry=0
build=$root/build-gpu
while (($#)); do
    case $1 in
    --dry-run) dry=1; shift ;;
    -B) build=$2; shift 2 ;;
    -h|--help) sed -n '2,48p' "$0"; exit 0 ;;
    -*) echo "cuda_validate.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
build=$(realpath -m "$build")
out=${1:-${OUT:-}}
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-cuda.XXXXXX")
out=$(realpath -m "$out")
mkdir -p "$out/logs" || exit 2
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-cuda-work.XXXXXX") # large traces, removed at the end
report=$out/cuda_validation.md
summary=$out/summary.txt
: >"$report"
: >"$summary"
launches=${DEVTRACE_GPU_LAUNCHES:-20000}
steps=${DEVTRACE_GPU_STEPS:-200}
repeats=3
PY=${PYTHON:-python3}
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
cuda_home=$(dirname "$(dirname "$(realpath -m "$NVCC")")")
npass=0 nfail=0 nskip=0

md() { printf '%s\n' "$*" | tee -a "$report"; }
pass() { npass=$((npass + 1)); md "- PASS $1${2:+: $2}"; echo "PASS $1${2:+: $2}" >>"$summary"; }
fail() { nfail=$((nfail + 1)); md "- **FAIL** $1${2:+: $2}"; echo "FAIL $1${2:+: $2}" >>"$summary"; }
skip() { nskip=$((nskip + 1)); md "- SKIP $1${2:+: $2}"; echo "SKIP $1${2:+: $2}" >>"$summary"; }
quote() { md '```'; sed 's/`/'"'"'/g' | tee -a "$report"; md '```'; }
finish() {
    local verdict=PASS
    ((nfail)) && verdict=FAIL
    md ""
    md "Result: $verdict ($npass passed, $nfail failed, $nskip skipped)"
    echo "result: $verdict ($npass passed, $nfail failed, $nskip skipped)" >>"$summary"
    rm -rf "$work"
    echo "report: $report; summary: $summary" >&2
    exit $((nfail ? 1 : 0))
}
# step NAME SECONDS COMMAND...: runs COMMAND with its own timeout, its output
# in logs/NAME.log; returns its exit status (124: timed out, said so).
step() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    timeout -k 5 "$limit" "$@" >"$out/logs/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc after $((SECONDS - t0)) s" >>"$out/logs/steps.txt"
    if ((rc == 124 || rc == 137)); then
        md "- step $name timed out after ${limit} s (log: logs/$name.log)"
    fi
    return $rc
}
log_tail() { tail -n "${2:-20}" "$out/logs/$1.log" 2>/dev/null | quote; }
json() { $PY -c "import json,sys; d=json.loads(sys.argv[1]); print($1)" "$2" 2>/dev/null; }
last_json() { grep '^{' "$out/logs/$1.log" 2>/dev/null | tail -n 1; }
median() { $PY -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x]; print('%.4f' % statistics.median(v) if len(v) == $repeats else '')" "$@"; }
ratio() { $PY -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%.3f' % (a/b) if b > 0 else 'n/a')" "$1" "$2" 2>/dev/null || echo n/a; }
# judge LABEL TRUTH [TRACE]: cuda_findings.py's checks, one PASS/FAIL each
judge() {
    local label=$1 line
    shift
    step "findings_$label" 60 "$PY" "$root/tests/gpu/cuda_findings.py" check "$@"
    local rc=$?
    while IFS= read -r line; do
        case $line in
        PASS\ *) pass "$label: ${line#PASS }" ;;
        FAIL\ *) fail "$label: ${line#FAIL }" ;;
        esac
    done <"$out/logs/findings_$label.log"
    ((rc == 0 || rc == 1)) || fail "$label: cuda_findings.py exit status $rc" "$(tail -n 3 "$out/logs/findings_$label.log")"
}
# trace_facts TRACE: devtrace check, the clock fit, devtrace stats
trace_facts() {
    local label=$1 trace=$2
    if step "check_$label" 60 "$build/devtrace" check "$trace"; then
        pass "$label: devtrace check"
    else
        fail "$label: devtrace check"
        log_tail "check_$label"
    fi
    md "- $label: $($PY -c "import json,sys; d=json.load(open(sys.argv[1]))['devtrace']; c=d['clock']; print('clock fit: %s samples, error bound %s ns, slope %s; counts %s' % (c['samples'], c['errorBoundNs'], c['slope'], d['counts']))" "$trace" 2>&1)"
    step "stats_$label" 60 "$build/devtrace" stats "$trace" && head -n 30 "$out/logs/stats_$label.log" | quote
}

# ---------------------------------------------------------------- 0. prerequisites
md "# devtrace CUDA validation$([[ $dry == 1 ]] && echo ' (dry run)')"
md ""
md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
md "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[[ $dry == 0 ]] && md "- GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)"
md "- nvcc: $("$NVCC" --version 2>/dev/null | tail -n 1 || echo missing)"
md "- python: $(command -v "$PY") ($($PY --version 2>&1))"
md "- output: $out"
md ""
md "## 0. Prerequisites and build"
missing=()
need() { # what, present?, how to install
    if ! eval "$2" >/dev/null 2>&1; then missing+=("$1: $3"); fi
}
need "cmake >= 3.20" 'cmake --version | awk "NR==1 {split(\$3,v,\".\"); exit !(v[1]>3 || (v[1]==3 && v[2]>=20))}"' \
    "apt-get install cmake, or dnf install cmake"
need "a C compiler" 'command -v cc' "apt-get install build-essential, or dnf install gcc"
need "nvcc (the CUDA toolkit)" '[[ -x $NVCC ]]' "install the CUDA toolkit and set CUDA_HOME (or NVCC)"
need "$PY" "command -v $PY" "install python3, or set PYTHON"
need "timeout (coreutils)" 'command -v timeout' "apt-get install coreutils"
[[ $dry == 0 ]] && need "an NVIDIA driver (nvidia-smi)" 'nvidia-smi -L' "install the NVIDIA driver"
if ((${#missing[@]})); then
    for m in "${missing[@]}"; do md "- missing: $m"; done
    fail "prerequisites" "missing (see above)"
    finish
fi
pass "prerequisites"

if [[ ! -f $build/CMakeCache.txt ]]; then
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    step cmake 120 env CUDA_HOME="${CUDA_HOME:-$cuda_home}" cmake -S "$root" -B "$build" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DDEVTRACE_BUILD_TESTS=OFF -DDEVTRACE_BUILD_BENCH=OFF -DDEVTRACE_BUILD_EMULATORS=OFF ||
        { fail "cmake" "see logs/cmake.log"; log_tail cmake; finish; }
fi
step build 300 cmake --build "$build" -j "$(nproc)" --target devtrace_shared devtrace_cli devtrace_inject ||
    { fail "build" "see logs/build.log"; log_tail build 30; finish; }
devtrace=$build/devtrace
if grep -q "DT_HAVE_CUPTI=1" "$build/build.ninja" "$build/CMakeFiles/devtrace_obj.dir/flags.make" 2>/dev/null; then
    pass "build" "with CUPTI headers ($build)"
else
    fail "build" "devtrace was built without CUPTI headers: set CUDA_HOME and rebuild"
    finish
fi
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
export DEVTRACE_LIBRARY=$build/libdevtrace.so

arch=sm_90
[[ $dry == 0 ]] && arch=native
nvcc_flags=(-O2 -std=c++17 -arch="$arch" -I"$root/include" "$build/libdevtrace.so" -Xlinker -rpath -Xlinker "$build")
cupti_flags=(-L"$cuda_home/lib64" -lcupti -Xlinker -rpath -Xlinker "$cuda_home/lib64")
t0=$SECONDS
pids=()
for src in workload launch_loop cupti_client; do
    extra=()
    [[ $src == cupti_client ]] && extra=("${cupti_flags[@]}")
    step "nvcc_$src" 240 "$NVCC" "${nvcc_flags[@]}" -o "$out/$src" "$root/tests/gpu/$src.cu" "${extra[@]}" &
    pids+=($!)
done
for i in 0 1 2; do
    src=$(echo workload launch_loop cupti_client | cut -d' ' -f$((i + 1)))
    if wait "${pids[$i]}"; then pass "nvcc $src.cu ($arch)"; else fail "nvcc $src.cu ($arch)"; log_tail "nvcc_$src"; fi
done
md "- compiled in $((SECONDS - t0)) s"

torch_ok=0
if step torch_import 120 "$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, torch.cuda.is_available())'; then
    torch_ok=1
    md "- torch: $(tail -n 1 "$out/logs/torch_import.log")"
else
    md "- torch: not importable in $PY ($(tail -n 1 "$out/logs/torch_import.log"))"
fi
md ""

if [[ $dry == 1 ]]; then
    md "## Dry run (no GPU)"
    bash -n "$0" && pass "cuda_validate.sh syntax" || fail "cuda_validate.sh syntax"
    if step pycompile 60 "$PY" -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
        "$root/tests/gpu/torch_workload.py" "$root/tests/gpu/compare_torch.py" "$root/tests/gpu/cuda_findings.py"; then
        pass "torch_workload.py, compare_torch.py, cuda_findings.py compile"
    else
        fail "python scripts compile"; log_tail pycompile
    fi
    step compare_selftest 120 "$PY" "$root/tests/gpu/compare_torch.py" --self-test &&
        pass "compare_torch.py self-test" || { fail "compare_torch.py self-test"; log_tail compare_selftest; }
    step findings_selftest 60 "$PY" "$root/tests/gpu/cuda_findings.py" self-test &&
        pass "cuda_findings.py self-test" || { fail "cuda_findings.py self-test"; log_tail findings_selftest; }
    sanitized=0
    grep -q "^DEVTRACE_SANITIZE:STRING=.\+" "$build/CMakeCache.txt" 2>/dev/null && sanitized=1
    if ((sanitized)); then
        skip "devtrace's Python package" "a sanitizer build's library needs its runtime preloaded"
    elif ((torch_ok)); then
        step pyimport 120 "$PY" -c "import devtrace, torch; print(devtrace.version())" &&
            pass "devtrace's Python package imports beside torch" || { fail "devtrace's Python package import"; log_tail pyimport; }
    else
        skip "devtrace's Python package beside torch" "no torch"
    fi
    md ""
    md "## 1 (emulated). The C workload's judging, on the CUPTI emulator"
    emu=$build/emu/libcupti.so
    if ((sanitized)) || [[ ! -f $emu || ! -x $build/devtrace-emu-run ]]; then
        skip "emulated workload" "needs BUILD_DIR's CUPTI emulator and runner, in a build without sanitizers"
    else
        cp "$root/tests/gpu/cuda_emulated.truth.json" "$out/emulated.truth.json"
        if step emulated 120 env DEVTRACE_CUPTI_LIBRARY="$emu" "$devtrace" record -o "$out/emulated.json" -- \
            "$build/devtrace-emu-run" --quiet "$root/tests/gpu/cuda_emulated.scn"; then
            judge emulated "$out/emulated.truth.json"
            trace_facts emulated "$out/emulated.json"
        else
            fail "emulated workload under devtrace record"; log_tail emulated
        fi
    fi
    finish
fi

# ---------------------------------------------------------------- 1. CUDA C workload
md "## 1. CUDA C workload: every launch API, two sessions, cudaEvent timings, memory"
if [[ -x $out/workload ]]; then
    if step workload 120 "$out/workload" "$out"; then
        pass "workload ran" "$(grep -c truth "$out/logs/workload.log") sessions written"
    else
        fail "workload ran" "exit status $? (2: CUDA error, 3: devtrace error)"
        log_tail workload
    fi
    for s in workload workload2; do
        if [[ -f $out/$s.truth.json && -f $out/$s.json ]]; then
            judge "$s" "$out/$s.truth.json"
            trace_facts "$s" "$out/$s.json"
        else
            fail "$s: no trace or truth written"
        fi
    done
else
    skip "CUDA C workload" "not compiled"
fi
md ""

# ---------------------------------------------------------------- 2. another CUPTI client first
md "## 2. A CUPTI client subscribed before devtrace"
if [[ -x $out/cupti_client ]]; then
    step cupti_client 60 "$out/cupti_client" "$out"
    rc=$?
    r=$(last_json cupti_client)
    md "- result: \`${r:-none}\`"
    if [[ $(json "d['refused'] and d['cuda_ok']" "$r") == True && ($rc == 0 || $rc == 3) ]]; then
        pass "devtrace refused beside an earlier CUPTI client, CUDA still working" "$(json "d['status']" "$r")"
    else
        fail "devtrace refused beside an earlier CUPTI client, CUDA still working" "exit status $rc"
        log_tail cupti_client
    fi
    [[ $(json "d['names_client']" "$r") == True ]] &&
        pass "the refusal names the other subscriber" "$(json "d['error']" "$r")" ||
        fail "the refusal names the other subscriber" "$(json "d['error']" "$r")"
    if [[ -f $out/client.truth.json && $(json "d['after_unsubscribe']" "$r") == DT_OK ]]; then
        judge client "$out/client.truth.json"
    else
        fail "devtrace after the other client unsubscribed" "$(json "d['after_unsubscribe'] + ': ' + d['after_error']" "$r")"
    fi
else
    skip "CUPTI client" "not compiled"
fi
md ""

# ---------------------------------------------------------------- 3. devtrace record
md "## 3. devtrace record: CUPTI attached when the process initialises CUDA"
small=$((launches / 5))
if [[ -x $out/launch_loop ]]; then
    step record_loop 120 "$devtrace" record -o "$out/loop_record.json" -- "$out/launch_loop" "$small"
    read -r kk kl kb <<<"$($PY -c "import json,sys; d=json.load(open(sys.argv[1]))['devtrace']; print(d['counts']['kernel'], d['loss']['total'], d['backend'])" "$out/loop_record.json" 2>/dev/null)"
    if [[ ${kk:-} == "$((small + 1000))" && ${kl:-} == 0 && ${kb:-} == cupti ]]; then
        pass "launch loop under record" "kernels kept $kk of $((small + 1000)), none lost, backend cupti"
    else
        fail "launch loop under record" "kernels kept ${kk:-none} (want $((small + 1000))), lost ${kl:-?}, backend ${kb:-?}"
        log_tail record_loop
    fi
else
    skip "launch loop under record" "not compiled"
fi
step record_sh 60 "$devtrace" record -o "$work/sh.json" -- sh -c 'grep -c cupti /proc/self/maps; exit 0'
maps=$(grep -m1 -x '[0-9]*' "$out/logs/record_sh.log")
[[ $maps == 0 ]] && pass "a process without CUDA under record" "no libcupti mapped" ||
    fail "a process without CUDA under record" "libcupti mappings: ${maps:-?}"
md ""

# ---------------------------------------------------------------- 3b. on demand
md "## 3b. On demand: CUPTI armed late, in a process whose CUDA context already runs"
# A capture subscribes to CUPTI after the program created its context (the
# emulators cannot say whether real CUPTI then records that context's
# kernels); then the flight recorder's dump of a running loop.
kernels_in() { $PY -c "import json,sys; n=0
for f in sys.argv[1:]: n+=json.load(open(f))['devtrace']['counts']['kernel']
print(n)" "$@" 2>/dev/null; }
if [[ -x $out/launch_loop ]]; then
    rm -f "$out"/ondemand*.json "$out"/fr_dump*.json
    "$devtrace" record --on-demand -o /dev/null -- "$out/launch_loop" 3000000 >"$out/logs/ondemand_loop.log" 2>&1 &
    loop_pid=$!
    sleep 3
    step ondemand_trigger 60 "$devtrace" trigger --all --duration 0.5 -o "$out/ondemand.json"
    wait "$loop_pid"
    got=$(kernels_in "$out"/ondemand*.json)
    if [[ ${got:-0} -gt 0 ]]; then
        pass "trigger --duration 0.5 of a running CUDA loop" "$got kernels captured"
    else
        fail "trigger --duration 0.5 of a running CUDA loop" "kernels captured: ${got:-no trace}"
        log_tail ondemand_trigger
    fi
    "$devtrace" record --flight-recorder=64M -o "$out/fr.json" -- "$out/launch_loop" 3000000 >"$out/logs/fr_loop.log" 2>&1 &
    loop_pid=$!
    sleep 3
    step fr_dump 60 "$devtrace" trigger --all --dump -o "$out/fr_dump.json"
    wait "$loop_pid"
    got=$(kernels_in "$out"/fr_dump*.json)
    if [[ ${got:-0} -gt 0 ]]; then
        pass "trigger --dump of a running flight recorder" "$got kernels in the dump"
    else
        fail "trigger --dump of a running flight recorder" "kernels dumped: ${got:-no trace}"
        log_tail fr_dump
    fi
else
    skip "on demand" "not compiled"
fi
md ""

# ---------------------------------------------------------------- 4. C overhead
md "## 4. Overhead, CUDA C loop: $launches tiny kernels (median of $repeats runs; devtrace in process)"
c0=() c1=() ce=()
if [[ -x $out/launch_loop ]]; then
    for i in $(seq $repeats); do
        step "cloop_none_$i" 60 "$out/launch_loop" "$launches" && c0+=("$(json "d['loop_s']" "$(last_json "cloop_none_$i")")")
        step "cloop_devtrace_$i" 60 "$out/launch_loop" "$launches" --devtrace "$work/loop_devtrace.json"
        r=$(last_json "cloop_devtrace_$i")
        c1+=("$(json "d['loop_s']" "$r")")
        ce+=("$(json "d['export_s']" "$r")")
        [[ $(json "d['kernels'] == $launches and d['lost'] == 0" "$r") == True ]] ||
            fail "C loop under devtrace, run $i" "every kernel kept: ${r:-no result}"
    done
    cm0=$(median "${c0[@]}"); cm1=$(median "${c1[@]}"); cme=$(median "${ce[@]}")
    if [[ -n $cm0 && -n $cm1 ]]; then
        pass "C loop timed" "untraced $cm0 s, devtrace $cm1 s ($(ratio "$cm1" "$cm0")x), export $cme s"
    else
        fail "C loop timed" "runs with a time: untraced $(printf '%s ' "${c0[@]}" | wc -w), devtrace $(printf '%s ' "${c1[@]}" | wc -w) of $repeats"
    fi
fi
md ""

# ---------------------------------------------------------------- torch sections
tm0='' tm1='' tm2='' tpe='' tqe=''
if ((torch_ok)) && ! grep -q "True$" "$out/logs/torch_import.log"; then
    md "## 5-7. PyTorch: skipped, torch in $PY has no CUDA"
    skip "PyTorch sections" "torch.cuda.is_available() is False"
    torch_ok=0
elif ((!torch_ok)); then
    md "## 5-7. PyTorch: skipped, \`import torch\` failed in $PY"
    skip "PyTorch sections" "import torch failed (see logs/torch_import.log)"
fi
if ((torch_ok)); then
    step warmup 60 "$PY" "$root/tests/gpu/torch_workload.py" warmup --seconds 2 || fail "GPU warm-up with torch"

    md "## 5. PyTorch model, $steps steps: devtrace vs torch.profiler"
    for prof in devtrace torch; do
        step "model_$prof" 120 "$PY" "$root/tests/gpu/torch_workload.py" model --steps "$steps" --profiler "$prof" \
            --trace-out "$out/model_$prof.json"
    done
    m_dt=$(last_json model_devtrace) m_tp=$(last_json model_torch)
    if [[ -n $m_dt && -n $m_tp ]]; then
        step compare 120 "$PY" "$root/tests/gpu/compare_torch.py" --devtrace "$out/model_devtrace.json" \
            --torch "$out/model_torch.json" --devtrace-export-s "$(json "d['export_s']" "$m_dt")" \
            --torch-export-s "$(json "d['export_s']" "$m_tp")"
        rc=$?
        tee -a "$report" <"$out/logs/compare.log"
        ((rc == 0)) && pass "PyTorch kernels: devtrace and torch.profiler agree" || fail "PyTorch kernels: devtrace and torch.profiler disagree"
        [[ $(json "d['lost']" "$m_dt") == 0 ]] && pass "PyTorch model: no records lost" ||
            fail "PyTorch model: records lost" "$(json "d['lost']" "$m_dt")"
        trace_facts model "$out/model_devtrace.json"
    else
        fail "PyTorch model ran" "devtrace: ${m_dt:-failed}; torch.profiler: ${m_tp:-failed}"
        log_tail model_devtrace; log_tail model_torch
    fi
    md ""

    md "## 6. torch.profiler inside devtrace record"
    for mode in held handover; do
        envs=()
        [[ $mode == handover ]] && envs=(DEVTRACE_CUPTI_HANDOVER=1)
        step "record_torch_$mode" 120 env "${envs[@]}" "$devtrace" record -o "$out/rec_$mode.json" -- \
            "$PY" "$root/tests/gpu/torch_workload.py" model --steps 20 --profiler torch --trace-out "$work/rec_${mode}_torch.json"
        read -r dk tk handed refused <<<"$($PY -c "
import json, sys
d = json.load(open(sys.argv[1]))['devtrace']
try:
    t = sum(1 for e in json.load(open(sys.argv[2]))['traceEvents'] if e.get('cat') == 'kernel')
except Exception:
    t = 0
print(d['counts']['kernel'], t, 'handover' in d['notes'], 'cupti_clients' in d['notes'])
" "$out/rec_$mode.json" "$work/rec_${mode}_torch.json" 2>/dev/null)"
        detail="kernels in devtrace's trace ${dk:-none}, in torch.profiler's ${tk:-none}; notes: handover ${handed:-?}, refusal ${refused:-?}"
        if [[ $mode == held ]]; then
            [[ ${dk:-0} -gt 0 && ${refused:-} == True ]] && pass "devtrace holds CUPTI, torch.profiler refused" "$detail" ||
                { fail "devtrace holds CUPTI, torch.profiler refused" "$detail"; log_tail "record_torch_$mode"; }
        else
            [[ ${tk:-0} -gt 0 && ${handed:-} == True ]] && pass "CUPTI handed over to torch.profiler" "$detail" ||
                { fail "CUPTI handed over to torch.profiler" "$detail"; log_tail "record_torch_$mode"; }
        fi
    done
    md ""

    md "## 7. Overhead, PyTorch loop: $launches x \`x.add_(1)\` (median of $repeats runs; each profiler in process)"
    p=() q=() r=() pe=() qe=()
    for i in $(seq $repeats); do
        for prof in none devtrace torch; do
            step "tloop_${prof}_$i" 120 "$PY" "$root/tests/gpu/torch_workload.py" loop --launches "$launches" \
                --profiler "$prof" --trace-out "$work/torch_loop_$prof.json"
            o=$(last_json "tloop_${prof}_$i")
            case $prof in
            none) p+=("$(json "d['loop_s']" "$o")") ;;
            devtrace) q+=("$(json "d['loop_s']" "$o")"); pe+=("$(json "d['export_s']" "$o")") ;;
            torch) r+=("$(json "d['loop_s']" "$o")"); qe+=("$(json "d['export_s']" "$o")") ;;
            esac
        done
    done
    tm0=$(median "${p[@]}"); tm1=$(median "${q[@]}"); tm2=$(median "${r[@]}")
    tpe=$(median "${pe[@]}"); tqe=$(median "${qe[@]}")
    if [[ -n $tm0 && -n $tm1 && -n $tm2 ]]; then
        pass "PyTorch loop timed" "untraced $tm0 s, devtrace $tm1 s, torch.profiler $tm2 s"
    else
        fail "PyTorch loop timed" "untraced: ${p[*]:-none}; devtrace: ${q[*]:-none}; torch.profiler: ${r[*]:-none} (logs/tloop_*)"
    fi
    md ""
fi

md "## Overhead: launch-bound loops of $launches tiny kernels (median of $repeats)"
md ""
md "| loop | untraced (s) | devtrace (s) | torch.profiler (s) | devtrace / untraced | torch.profiler / untraced | export devtrace (s) | export torch (s) |"
md "|---|---|---|---|---|---|---|---|"
md "| CUDA C (<<<>>>) | ${cm0:-} | ${cm1:-} | n/a | $([[ -n ${cm0:-} && -n ${cm1:-} ]] && ratio "$cm1" "$cm0") | n/a | ${cme:-} | n/a |"
if [[ -n $tm0 && -n $tm1 && -n $tm2 ]]; then
    md "| PyTorch (x.add_(1)) | $tm0 | $tm1 | $tm2 | $(ratio "$tm1" "$tm0") | $(ratio "$tm2" "$tm0") | $tpe | $tqe |"
else
    md "| PyTorch (x.add_(1)) | not run | | | | | | |"
fi
finish
