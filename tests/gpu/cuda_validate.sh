#!/usr/bin/env bash
# CUDA validation of devtrace's CUPTI backend on a machine with an NVIDIA GPU,
# in one call, bounded: the whole run, build included, ends within
# DEVTRACE_GPU_BUDGET_S seconds (default 480) of its start.
#
#   bash tests/gpu/cuda_validate.sh [-B BUILD_DIR] [OUTDIR]
#   bash tests/gpu/cuda_validate.sh --dry-run -B BUILD_DIR [OUTDIR]
#
# Everything a run makes goes to a scratch folder (DEVTRACE_GPU_WORK, or a
# new one under $TMPDIR). OUTDIR (default $OUT, else a new folder under
# $TMPDIR) receives four files, flat, as the run ends: cuda_validation.md
# (the report), summary.txt (one PASS/FAIL/SKIP line per check, then the
# result), steps.txt (each step's exit status, seconds and limit) and
# logs.tar.gz (every step's log cut to its last 256 KiB, and the small traces
# with their truth files; kept under 15 MiB). The last lines on standard
# output are a summary of at most 100 lines. Exit status 0 only when no check
# failed.
#
# Bounded: every command that could take long runs as a step under its own
# time limit, cut to what the run has left (steps in the background too;
# a step with no time left is not run, and said); the others are file
# utilities on the run's own files. Sections run most important first; the
# overhead loops last.
#
#   0. prerequisites (cmake, a C compiler, nvcc, the driver), the build
#      (library, CLI, injection library) when BUILD_DIR has none, the CUDA
#      sources compiled for the GPU present, torch imported, meanwhile;
#   1. tests/gpu/workload.cu records itself through the C API in two
#      sessions, judged by tests/gpu/cuda_findings.py against the truth it
#      wrote (kernels by name, every launch API and its flows, copies,
#      memsets, allocations, External ids, durations against cudaEvent);
#      `devtrace check`, the clock fit, `devtrace stats`;
#   2. tests/gpu/cupti_client.cu: a CUPTI client subscribed before devtrace;
#   3. `devtrace record` of a launch loop and of `sh` (no libcupti loaded);
#   4. torch.profiler inside `devtrace record` (torch): started before the
#      program's first CUDA call and after it, devtrace keeps CUPTI; with
#      DEVTRACE_CUPTI_HANDOVER=1 torch.profiler gets it; devtrace and torch
#      load one libcupti;
#   5. a graph of 1,024 tiny kernels launched for DEVTRACE_GPU_GRAPH_SECONDS
#      (default 32: about 28 M kernels at the 0.88 M a second measured on an
#      H200) under the flight recorder, whose last window's every
#      timestamp is checked (CUPTI was reported to run out of its device
#      buffers after about 25 M graph kernels), device memory sampled;
#   6. on demand: a capture of a running launch loop, and a flight
#      recorder's dump of one;
#   7. a PyTorch model under devtrace and under torch.profiler: kernels
#      compared (tests/gpu/compare_torch.py);
#   8. overhead of a CUDA C launch loop, untraced and under devtrace, and of
#      a PyTorch loop untraced, under devtrace and under torch.profiler
#      (median of three each).
#
# --dry-run (no GPU): the prerequisites but the driver, the scripts' syntax
# and self-tests, CUDA_HOME found from nvcc's own install (nvcc may be a
# wrapper script), the CUDA sources compiled for sm_90 against BUILD_DIR's
# libdevtrace, devtrace's Python package imported, section 1's judging on
# the CUPTI emulator; and the GPU run's plan: every section of the GPU run
# walked with no command run, every step and its limit listed, every
# command checked to be a step or a file utility, every step made to run
# out its time (the worst case) to show the run still ends within its
# budget, and the output folder packed with logs larger than it may hold,
# to show it keeps to at most 8 files under 16 MiB.
#
# python3 is the first on PATH, or $PYTHON. DEVTRACE_GPU_LAUNCHES (default
# 20000) and DEVTRACE_GPU_STEPS (default 200) size the loops.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dry=0 plan=0
build=$root/build-gpu
while (($#)); do
    case $1 in
    --dry-run) dry=1; shift ;;
    --plan) plan=1; shift ;; # the GPU run's plan, walked without running a command (see --dry-run)
    -B) build=$2; shift 2 ;;
    -h|--help) sed -n '2,62p' "$0"; exit 0 ;;
    -*) echo "cuda_validate.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
build=$(realpath -m "$build")
out=${1:-${OUT:-}}
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-cuda.XXXXXX")
out=$(realpath -m "$out")
work=${DEVTRACE_GPU_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/devtrace-cuda-work.XXXXXX")}
logs=$work/logs
keep=$work/keep # small traces and truth files, for the logs archive
mkdir -p "$out" "$logs" "$keep" || exit 2
report=$work/cuda_validation.md
summary=$work/summary.txt
steps=$work/steps.txt
: >"$report"
: >"$summary"
: >"$steps"
: >"$work/plan.txt"
: >"$work/unbounded.txt"
budget=${DEVTRACE_GPU_BUDGET_S:-480}
reserve=30 # the report, the packing and the summary
launches=${DEVTRACE_GPU_LAUNCHES:-20000}
torch_steps=${DEVTRACE_GPU_STEPS:-200}
graph_seconds=${DEVTRACE_GPU_GRAPH_SECONDS:-32}
repeats=3
PY=${PYTHON:-python3}
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
npass=0 nfail=0 nskip=0
SECONDS=0
vclock=0 # the plan's clock: each step takes all of its time

# ---------------------------------------------------------------- time and steps
now() { if ((plan)); then echo "$vclock"; else echo "$SECONDS"; fi; }
# what a step of LIMIT seconds may take now: its limit, cut to what the run
# has left (less the 5 s its kill may take)
clamp() {
    local left=$((budget - reserve - $(now) - 5))
    ((left < $1)) && echo "$left" || echo "$1"
}
# step NAME LIMIT CMD...: CMD in the foreground under its time limit, its
# output in logs/NAME.log; returns its exit status (124: timed out, said so;
# 125: no time left, not run).
step() {
    local name=$1 limit rc t0=$SECONDS
    limit=$(clamp "$2")
    echo "$name fg $2 $limit" >>"$work/plan.txt"
    shift 2
    if ((limit < 1)); then
        echo "$name: not run, no time left" >>"$steps"
        return 125
    fi
    if ((plan)); then
        vclock=$((vclock + limit + 5))
        return 0
    fi
    timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc after $((SECONDS - t0)) s (limit $limit s)" >>"$steps"
    ((rc == 124 || rc == 137)) && md "- step $name timed out after $limit s (log: logs/$name.log)"
    return $rc
}
# bg_start NAME LIMIT CMD...: the same in the background; bg_wait NAME waits
# for it (bounded: its time limit ends it) and returns its exit status.
declare -A bg_pid bg_t0 bg_end
bg_start() {
    local name=$1 limit
    limit=$(clamp "$2")
    echo "$name bg $2 $limit" >>"$work/plan.txt"
    shift 2
    bg_t0[$name]=$SECONDS
    if ((limit < 1)); then
        echo "$name: not run, no time left" >>"$steps"
        bg_pid[$name]=none
        return 125
    fi
    bg_end[$name]=$(($(now) + limit + 5))
    if ((plan)); then
        bg_pid[$name]=plan
        return 0
    fi
    timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1 &
    bg_pid[$name]=$!
}
bg_wait() {
    local name=$1 rc
    case ${bg_pid[$name]:-none} in
    none) return 125 ;;
    plan) ((vclock < bg_end[$name])) && vclock=${bg_end[$name]}; return 0 ;;
    esac
    wait "${bg_pid[$name]}"
    rc=$?
    echo "$name: exit $rc after $((SECONDS - bg_t0[$name])) s (background)" >>"$steps"
    return $rc
}
# The file utilities a run calls outside its steps, on its own files: they
# end by themselves. Every other program runs through `timeout` (a step, or
# the helpers below); the guard below records any that does not.
bounded_utilities=" awk basename cat cp cut date dirname du find grep head ls mkdir mktemp mv nproc readlink realpath rm sed seq sleep sort stat tail tee touch tr uniq wc "
# In the plan (and every run): every simple command is looked at before it
# runs; an external program other than `timeout` and the utilities above is
# recorded in unbounded.txt.
guard() {
    local first=${1%%[[:space:]]*} kind
    # an assignment: what its substitutions run is looked at as it runs
    [[ $first =~ ^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?= ]] && return 0
    [[ $first == *'$('* || $first == *'`'* ]] && { echo "$1" >>"$work/unbounded.txt"; return 0; }
    [[ $first == *'$'* ]] && eval "first=$first" 2>/dev/null
    first=${first//\"/}
    kind=$(type -t -- "$first" 2>/dev/null) || return 0
    [[ $kind != file ]] && return 0
    [[ ${first##*/} == timeout || $bounded_utilities == *" ${first##*/} "* ]] && return 0
    echo "$1" >>"$work/unbounded.txt"
}
set -T
trap 'guard "$BASH_COMMAND"' DEBUG

# ---------------------------------------------------------------- the report
md() { printf '%s\n' "$*" >>"$report"; }
pass() { npass=$((npass + 1)); md "- PASS $1${2:+: $2}"; echo "PASS $1${2:+: $2}" >>"$summary"; }
fail() { nfail=$((nfail + 1)); md "- **FAIL** $1${2:+: $2}"; echo "FAIL $1${2:+: $2}" >>"$summary"; }
skip() { nskip=$((nskip + 1)); md "- SKIP $1${2:+: $2}"; echo "SKIP $1${2:+: $2}" >>"$summary"; }
section() { md ""; md "## $*"; printf '[%4d s] %s\n' "$(now)" "$*" >&2; }
quote() { md '```'; sed 's/`/'"'"'/g' >>"$report"; md '```'; }
log_tail() { tail -n "${2:-20}" "$logs/$1.log" 2>/dev/null | quote; }
py() { ((plan)) && return 1; timeout -k 2 60 "$PY" "$@"; }
json() { py -c "import json,sys; d=json.loads(sys.argv[1]); print($1)" "$2" 2>/dev/null; }
last_json() { grep '^{' "$logs/$1.log" 2>/dev/null | tail -n 1; }
median() { py -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x]; print('%.4f' % statistics.median(v) if len(v) == $repeats else '')" "$@"; }
ratio() { py -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%.3f' % (a/b) if b > 0 else 'n/a')" "$1" "$2" 2>/dev/null || echo n/a; }
# have FILE: a file the run made (the plan has them all)
have() { ((plan)) || [[ -e $1 ]]; }
# judge LABEL TRUTH [TRACE]: cuda_findings.py's checks, one PASS/FAIL each
# (judge_with LABEL SUBCOMMAND ARGS...: another of its judgements)
judge() { judge_with "$1" check "${@:2}"; }
judge_with() {
    local label=$1 line rc
    shift
    step "findings_$label" 60 "$PY" "$root/tests/gpu/cuda_findings.py" "$@"
    rc=$?
    ((plan)) && return 0
    while IFS= read -r line; do
        case $line in
        PASS\ *) pass "$label: ${line#PASS }" ;;
        FAIL\ *) fail "$label: ${line#FAIL }" ;;
        NOTE\ *) md "- $label: ${line#NOTE }" ;;
        esac
    done <"$logs/findings_$label.log"
    ((rc == 0 || rc == 1)) || fail "$label: cuda_findings.py exit status $rc" "$(tail -n 3 "$logs/findings_$label.log")"
}
# trace_facts LABEL TRACE: devtrace check, the clock fit, devtrace stats
trace_facts() {
    local label=$1 trace=$2
    if step "check_$label" 90 "$build/devtrace" check "$trace"; then
        pass "$label: devtrace check"
    else
        fail "$label: devtrace check"
        log_tail "check_$label"
    fi
    ((plan)) || md "- $label: $(py -c "import json,sys; d=json.load(open(sys.argv[1]))['devtrace']; c=d['clock']; print('clock fit: %s samples, error bound %s ns, slope %s; counts %s' % (c['samples'], c['errorBoundNs'], c['slope'], d['counts']))" "$trace" 2>&1)"
    step "stats_$label" 60 "$build/devtrace" stats "$trace" && ((!plan)) && head -n 30 "$logs/stats_$label.log" | quote
}
# keep FILE...: small files (under 2 MiB) into the logs archive
keep() {
    local f
    for f in "$@"; do
        [[ -f $f && $(stat -c %s "$f") -lt 2097152 ]] && cp "$f" "$keep/"
    done
    return 0
}
# The output folder: the report, the summary, the steps' times and one
# archive of the logs (each cut to its last 256 KiB, then 64 KiB, ... until
# the archive is under 15 MiB) and the small traces. Four files, flat.
pack() {
    local cap=262144 size stage=$work/pack
    rm -f "$out/logs.tar.gz"
    while ((cap >= 1024)); do
        rm -rf "$stage"
        mkdir -p "$stage/logs" "$stage/traces"
        local f
        for f in "$logs"/*; do [[ -f $f ]] && tail -c "$cap" "$f" >"$stage/logs/${f##*/}"; done
        ((cap == 262144)) && for f in "$keep"/*; do [[ -f $f ]] && cp "$f" "$stage/traces/"; done
        cp "$work/plan.txt" "$work/unbounded.txt" "$stage/"
        timeout -k 2 120 tar -C "$stage" -czf "$out/logs.tar.gz" . 2>/dev/null
        size=$(stat -c %s "$out/logs.tar.gz" 2>/dev/null || echo 0)
        ((size > 0 && size < 15728640)) && break
        rm -f "$out/logs.tar.gz"
        cap=$((cap / 4))
    done
    rm -rf "$stage"
    for f in cuda_validation.md summary.txt steps.txt; do tail -c 4194304 "$work/$f" >"$out/$f"; done
}
# What comes back from the GPU machine is at most 8 files under 16 MiB
# each, 64 MiB in all, at most 2 folders deep, and the last 12,000
# characters of the output: the summary is printed last, in at most 100
# lines of at most 110 characters.
final_summary() {
    local verdict=$1
    echo "== devtrace CUDA validation$([[ $dry == 1 ]] && echo ' (dry run)'): $verdict ($npass passed, $nfail failed, $nskip skipped) in $SECONDS s"
    grep -m 12 '^- \(GPU\|commit\|nvcc\|python\|torch\|CUDA_HOME\)' "$report" | cut -c1-110
    grep '^FAIL' "$summary" | head -n 40 | cut -c1-110
    local shown=$(($(grep -c '^FAIL' "$summary") < 40 ? $(grep -c '^FAIL' "$summary") : 40))
    grep -v '^FAIL' "$summary" | head -n $((70 - shown)) | cut -c1-110
    grep -m 6 '^| \(CUDA C\|PyTorch\) ' "$report" | cut -c1-110
    echo "output: $(ls "$out" | tr '\n' ' ')($(du -sh "$out" | cut -f1)); steps: $(grep -c . "$steps"), the last $(tail -n 1 "$steps" | cut -c1-60)"
}
finish() {
    local verdict=PASS
    ((nfail)) && verdict=FAIL
    if [[ -s $work/unbounded.txt ]]; then
        fail "every command bounded" "not a step nor a file utility: $(head -n 3 "$work/unbounded.txt" | tr '\n' ';' | cut -c1-200)"
        verdict=FAIL
    fi
    md ""
    md "Result: $verdict ($npass passed, $nfail failed, $nskip skipped) in $SECONDS s (budget $budget s)"
    echo "result: $verdict ($npass passed, $nfail failed, $nskip skipped)" >>"$summary"
    ((plan)) && echo "plan: worst case $vclock s of $((budget - reserve)) s" >>"$summary"
    pack
    trap - DEBUG
    final_summary "$verdict"
    # a dry run's scratch (its plan's logs are large on purpose) goes; a GPU
    # run's stays on the machine
    ((dry || plan)) && [[ -z ${DEVTRACE_GPU_WORK:-} ]] && rm -rf "$work"
    exit $((nfail ? 1 : 0))
}

# ---------------------------------------------------------------- 0. prerequisites
# CUDA_HOME: the toolkit nvcc belongs to, from nvcc's own answer (its TOP),
# not from its path: nvcc may be a wrapper script elsewhere (/usr/local/bin,
# a distribution's /usr/bin). A CUDA_HOME given that has CUPTI's headers
# wins.
cuda_home_of() {
    local top
    if [[ -n ${CUDA_HOME:-} && ( -f $CUDA_HOME/include/cupti.h || -f $CUDA_HOME/extras/CUPTI/include/cupti.h ) ]]; then
        echo "$CUDA_HOME"
        return
    fi
    top=$(timeout -k 2 30 "$1" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1)
    [[ -n $top ]] && realpath -m "$top" && return
    dirname "$(dirname "$(realpath -m "$1")")"
}
cuda_home=$(cuda_home_of "$NVCC")
md "# devtrace CUDA validation$([[ $dry == 1 ]] && echo ' (dry run)')$([[ $plan == 1 ]] && echo ' (plan)')"
md ""
md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
md "- commit: $(timeout -k 2 20 git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
((dry || plan)) || md "- GPU, driver: $(timeout -k 2 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)"
md "- nvcc: $NVCC ($(timeout -k 2 30 "$NVCC" --version 2>/dev/null | tail -n 1))"
md "- CUDA_HOME: $cuda_home"
md "- python: $(command -v "$PY") ($(timeout -k 2 30 "$PY" --version 2>&1))"
md "- budget: $budget s; scratch: $work; output: $out"
section "0. Prerequisites and build"
missing=()
need() { # what, present?, how to install
    ((plan)) && return 0
    if ! eval "$2" >/dev/null 2>&1; then missing+=("$1: $3"); fi
}
need "cmake >= 3.20" 'timeout 20 cmake --version | awk "NR==1 {split(\$3,v,\".\"); exit !(v[1]>3 || (v[1]==3 && v[2]>=20))}"' \
    "apt-get install cmake, or dnf install cmake"
need "a C compiler" 'command -v cc' "apt-get install build-essential, or dnf install gcc"
need "nvcc (the CUDA toolkit)" '[[ -x $NVCC ]]' "install the CUDA toolkit and set CUDA_HOME (or NVCC)"
need "CUPTI's headers" '[[ -f $cuda_home/include/cupti.h || -f $cuda_home/extras/CUPTI/include/cupti.h ]]' \
    "install the toolkit's CUPTI, or set CUDA_HOME to a toolkit that has it"
need "$PY" "command -v $PY" "install python3, or set PYTHON"
need "timeout (coreutils)" 'command -v timeout' "apt-get install coreutils"
((dry)) || need "an NVIDIA driver (nvidia-smi)" 'timeout 30 nvidia-smi -L' "install the NVIDIA driver"
if ((${#missing[@]})); then
    for m in "${missing[@]}"; do md "- missing: $m"; done
    fail "prerequisites" "missing (see the report)"
    finish
fi
pass "prerequisites" "CUDA_HOME $cuda_home"

if [[ ! -f $build/CMakeCache.txt ]]; then
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    step cmake 120 env CUDA_HOME="$cuda_home" cmake -S "$root" -B "$build" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DDEVTRACE_BUILD_TESTS=OFF -DDEVTRACE_BUILD_BENCH=OFF -DDEVTRACE_BUILD_EMULATORS=OFF ||
        { fail "cmake" "see logs/cmake.log"; log_tail cmake; finish; }
fi
step build 240 cmake --build "$build" -j "$(nproc)" --target devtrace_shared devtrace_cli devtrace_inject ||
    { fail "build" "see logs/build.log"; log_tail build 30; finish; }
devtrace=$build/devtrace
if ((plan)) || grep -q "DT_HAVE_CUPTI=1" "$build/build.ninja" "$build/CMakeFiles/devtrace_obj.dir/flags.make" 2>/dev/null; then
    pass "build" "with CUPTI headers ($build, $(grep '^build:' "$steps" | cut -d' ' -f2-))"
else
    fail "build" "devtrace was built without CUPTI headers: set CUDA_HOME and rebuild"
    finish
fi
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
export DEVTRACE_LIBRARY=$build/libdevtrace.so
export CUDA_HOME=$cuda_home

arch=sm_90
((dry)) || arch=native
bin=$work/bin
mkdir -p "$bin"
nvcc_flags=(-O2 -std=c++17 -arch="$arch" -I"$root/include" "$build/libdevtrace.so" -Xlinker -rpath -Xlinker "$build")
cupti_lib=$cuda_home/lib64
[[ -f $cupti_lib/libcupti.so || ! -f $cuda_home/extras/CUPTI/lib64/libcupti.so ]] || cupti_lib=$cuda_home/extras/CUPTI/lib64
cupti_flags=(-I"$cuda_home/extras/CUPTI/include" -L"$cupti_lib" -lcupti -Xlinker -rpath -Xlinker "$cupti_lib")
sources=(workload launch_loop cupti_client graph_flight)
for src in "${sources[@]}"; do
    extra=()
    [[ $src == cupti_client ]] && extra=("${cupti_flags[@]}")
    bg_start "nvcc_$src" 240 "$NVCC" "${nvcc_flags[@]}" -o "$bin/$src" "$root/tests/gpu/$src.cu" "${extra[@]}"
done
bg_start torch_import 120 "$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, torch.cuda.is_available())'
for src in "${sources[@]}"; do
    if bg_wait "nvcc_$src"; then pass "nvcc $src.cu ($arch)"; else fail "nvcc $src.cu ($arch)"; log_tail "nvcc_$src"; fi
done
torch_ok=0
if bg_wait torch_import && { ((plan)) || grep -q "True$" "$logs/torch_import.log"; }; then
    torch_ok=1
    md "- torch: $(tail -n 1 "$logs/torch_import.log" 2>/dev/null)"
elif ((dry)) && grep -q "CUDA" "$logs/torch_import.log" 2>/dev/null; then
    torch_ok=1 # no GPU here: imported is enough
    md "- torch: $(tail -n 1 "$logs/torch_import.log")"
else
    md "- torch: not importable with CUDA in $PY ($(tail -n 1 "$logs/torch_import.log" 2>/dev/null))"
fi

if ((dry)); then
    section "Dry run (no GPU)"
    timeout -k 2 30 bash -n "$0" && pass "cuda_validate.sh syntax" || fail "cuda_validate.sh syntax"
    if step pycompile 60 "$PY" -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
        "$root/tests/gpu/torch_workload.py" "$root/tests/gpu/compare_torch.py" "$root/tests/gpu/cuda_findings.py"; then
        pass "torch_workload.py, compare_torch.py, cuda_findings.py compile"
    else
        fail "python scripts compile"; log_tail pycompile
    fi
    step compare_selftest 120 "$PY" "$root/tests/gpu/compare_torch.py" --self-test &&
        pass "compare_torch.py self-test" || { fail "compare_torch.py self-test"; log_tail compare_selftest; }
    step findings_selftest 60 "$PY" "$root/tests/gpu/cuda_findings.py" self-test &&
        pass "cuda_findings.py self-test (and its graph window's)" || { fail "cuda_findings.py self-test"; log_tail findings_selftest; }
    real_nvcc=$(timeout -k 2 30 "$NVCC" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ _HERE_=//p' | head -n 1)
    if [[ -f $cuda_home/include/cupti.h || -f $cuda_home/extras/CUPTI/include/cupti.h ]]; then
        pass "CUDA_HOME from nvcc's own install" "$cuda_home (nvcc: $NVCC$( [[ $(realpath -m "$NVCC") != "$real_nvcc/nvcc" ]] && echo ", a wrapper of $real_nvcc/nvcc"))"
    else
        fail "CUDA_HOME from nvcc's own install" "$cuda_home has no cupti.h (nvcc: $NVCC)"
    fi
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
    section "1 (emulated). The C workload's judging, on the CUPTI emulator"
    emu=$build/emu/libcupti.so
    if ((sanitized)) || [[ ! -f $emu || ! -x $build/devtrace-emu-run ]]; then
        skip "emulated workload" "needs BUILD_DIR's CUPTI emulator and runner, in a build without sanitizers"
    else
        cp "$root/tests/gpu/cuda_emulated.truth.json" "$work/emulated.truth.json"
        if step emulated 120 env DEVTRACE_CUPTI_LIBRARY="$emu" "$devtrace" record -o "$work/emulated.json" -- \
            "$build/devtrace-emu-run" --quiet "$root/tests/gpu/cuda_emulated.scn"; then
            judge emulated "$work/emulated.truth.json"
            trace_facts emulated "$work/emulated.json"
            keep "$work/emulated.json" "$work/emulated.truth.json"
        else
            fail "emulated workload under devtrace record"; log_tail emulated
        fi
    fi
    section "The GPU run's plan: every step bounded, the output within what comes back"
    pwork=$work/plan
    mkdir -p "$pwork/out"
    # logs bigger than the output may hold (incompressible), to be packed
    mkdir -p "$pwork/logs"
    head -c 41943040 /dev/urandom >"$pwork/logs/huge.log"
    for i in $(seq 60); do head -c 300000 /dev/urandom >"$pwork/logs/big$i.log"; done
    # from a bare checkout: no build folder yet
    step plan 120 env DEVTRACE_GPU_WORK="$pwork" DEVTRACE_GPU_BUDGET_S="$budget" NVCC="$NVCC" PYTHON="$PY" \
        bash "$0" --plan -B "$pwork/build-gpu" "$pwork/out"
    grep -q '^result:' "$pwork/summary.txt" 2>/dev/null || fail "the GPU run's plan ran" "$(tail -n 3 "$logs/plan.log")"
    nfg=$(grep -c ' fg ' "$pwork/plan.txt") nbg=$(grep -c ' bg ' "$pwork/plan.txt")
    # each line: name, fg or bg, the step's own limit, the limit it ran with
    # (cut to the time left; below 1: not run)
    unlimited=$(awk '!($3 >= 1 && $4 <= $3)' "$pwork/plan.txt" | head -n 3 | tr '\n' ';')
    if ((nfg > 20 && nbg >= 6)) && [[ -z $unlimited ]]; then
        pass "every step of the GPU run has a time limit" "$nfg steps in the foreground, $nbg in the background, each at most its own limit and what the run has left (plan.txt in the archive)"
    else
        fail "every step of the GPU run has a time limit" "$nfg fg, $nbg bg steps; without time: ${unlimited:-none}"
    fi
    if [[ -s $pwork/unbounded.txt ]]; then
        fail "every command of the GPU run is a step or a file utility" "$(head -n 3 "$pwork/unbounded.txt" | tr '\n' ';' | cut -c1-200)"
    else
        pass "every command of the GPU run is a step or a file utility" "checked before each ran (bash's DEBUG trap)"
    fi
    worst=$(sed -n 's/^plan: worst case \([0-9]*\) s.*/\1/p' "$pwork/summary.txt")
    cut=$(grep -c 'not run, no time left' "$pwork/steps.txt")
    if [[ -n $worst ]] && ((worst <= budget - reserve && cut > 0)); then
        pass "the GPU run ends within its budget" "every step running out its time: done at $worst s of $((budget - reserve)) s (+$reserve s to pack), $cut later steps not run"
    else
        fail "the GPU run ends within its budget" "worst case ${worst:-unknown} s of $((budget - reserve)) s; steps cut: $cut"
    fi
    files=$(find "$pwork/out" -mindepth 1 | wc -l) big=$(find "$pwork/out" -type f -size +16383k | wc -l)
    deep=$(find "$pwork/out" -mindepth 3 | wc -l) total=$(du -sb "$pwork/out" | cut -f1)
    sizes=$(find "$pwork/out" -type f -printf '%f %s; ' | sort)
    if ((files <= 8 && big == 0 && deep == 0 && total < 67108864)); then
        pass "the GPU run's output: at most 8 files under 16 MiB, 64 MiB in all, flat" "$files files, $total bytes, with a 40 MiB log packed: $sizes"
    else
        fail "the GPU run's output: at most 8 files under 16 MiB, 64 MiB in all, flat" "$files files, $big over 16 MiB, $deep deeper, $total bytes: $sizes"
    fi
    finish
fi

# ---------------------------------------------------------------- 1. CUDA C workload
section "1. CUDA C workload: every launch API, two sessions, cudaEvent timings, memory"
if have "$bin/workload"; then
    if step workload 120 "$bin/workload" "$work"; then
        pass "workload ran" "$(grep -c truth "$logs/workload.log") sessions written"
    else
        fail "workload ran" "exit status $? (2: CUDA error, 3: devtrace error)"
        log_tail workload
    fi
    for s in workload workload2; do
        if have "$work/$s.truth.json" && have "$work/$s.json"; then
            judge "$s" "$work/$s.truth.json"
            trace_facts "$s" "$work/$s.json"
            keep "$work/$s.json" "$work/$s.truth.json"
        else
            fail "$s: no trace or truth written"
        fi
    done
else
    skip "CUDA C workload" "not compiled"
fi

# ---------------------------------------------------------------- 2. another CUPTI client first
section "2. A CUPTI client subscribed before devtrace"
if have "$bin/cupti_client"; then
    step cupti_client 60 "$bin/cupti_client" "$work"
    rc=$?
    r=$(last_json cupti_client)
    md "- result: \`${r:-none}\`"
    if ((plan)) || [[ $(json "d['refused'] and d['cuda_ok']" "$r") == True && ($rc == 0 || $rc == 3) ]]; then
        pass "devtrace refused beside an earlier CUPTI client, CUDA still working" "$(json "d['status']" "$r")"
    else
        fail "devtrace refused beside an earlier CUPTI client, CUDA still working" "exit status $rc"
        log_tail cupti_client
    fi
    [[ $(json "d['names_client']" "$r") == True ]] &&
        pass "the refusal names the other subscriber" "$(json "d['error']" "$r")" ||
        fail "the refusal names the other subscriber" "$(json "d['error']" "$r")"
    if have "$work/client.truth.json" && { ((plan)) || [[ $(json "d['after_unsubscribe']" "$r") == DT_OK ]]; }; then
        judge client "$work/client.truth.json"
    else
        fail "devtrace after the other client unsubscribed" "$(json "d['after_unsubscribe'] + ': ' + d['after_error']" "$r")"
    fi
else
    skip "CUPTI client" "not compiled"
fi

# ---------------------------------------------------------------- 3. devtrace record
section "3. devtrace record: CUPTI attached when the process initialises CUDA"
small=$((launches / 5))
if have "$bin/launch_loop"; then
    step record_loop 120 "$devtrace" record -o "$work/loop_record.json" -- "$bin/launch_loop" "$small"
    read -r kk kl kb <<<"$(py -c "import json,sys; d=json.load(open(sys.argv[1]))['devtrace']; print(d['counts']['kernel'], d['loss']['total'], d['backend'])" "$work/loop_record.json" 2>/dev/null)"
    if [[ ${kk:-} == "$((small + 1000))" && ${kl:-} == 0 && ${kb:-} == cupti ]]; then
        pass "launch loop under record" "kernels kept $kk of $((small + 1000)), none lost, backend cupti"
    else
        fail "launch loop under record" "kernels kept ${kk:-none} (want $((small + 1000))), lost ${kl:-?}, backend ${kb:-?}"
        log_tail record_loop
    fi
    md "- notes: $(py -c "import json,sys; n=json.load(open(sys.argv[1]))['devtrace']['notes']; print('; '.join(k + ': ' + v[:150] for k, v in n.items() if k in ('device_buffers', 'libraries', 'clock_domains', 'quiet_runtime_calls')))" "$work/loop_record.json" 2>/dev/null)"
else
    skip "launch loop under record" "not compiled"
fi
step record_sh 60 "$devtrace" record -o "$work/sh.json" -- sh -c 'grep -c cupti /proc/self/maps; exit 0'
maps=$(grep -m1 -x '[0-9]*' "$logs/record_sh.log" 2>/dev/null)
[[ $maps == 0 ]] && pass "a process without CUDA under record" "no libcupti mapped" ||
    fail "a process without CUDA under record" "libcupti mappings: ${maps:-?}"

# ---------------------------------------------------------------- 4. torch.profiler inside record
section "4. torch.profiler inside devtrace record: both orders, handover, one libcupti"
# devtrace keeps CUPTI (torch.profiler refused: its trace has no kernels,
# devtrace's has them, noted), whether the profile starts before the
# program's first CUDA call (devtrace then attaches inside torch's
# subscribe) or after it; with DEVTRACE_CUPTI_HANDOVER=1 torch.profiler
# gets CUPTI. devtrace and torch load one libcupti.
if ((torch_ok)); then
    for run in held:cuda-first held:profiler-first handover:cuda-first; do
        mode=${run%%:*} order=${run#*:} envs=() first=()
        [[ $mode == handover ]] && envs=(DEVTRACE_CUPTI_HANDOVER=1)
        [[ $order == profiler-first ]] && first=(--profile-first)
        name=rec_${mode}_$order
        step "$name" 150 env "${envs[@]}" "$devtrace" record -o "$work/$name.json" -- \
            "$PY" "$root/tests/gpu/torch_workload.py" model --steps 20 --profiler torch "${first[@]}" \
            --trace-out "$work/${name}_torch.json"
        ((plan)) && continue
        read -r dk tk handed refused attached_first libs <<<"$(py -c "
import json, sys
d = json.load(open(sys.argv[1]))['devtrace']
try:
    t = sum(1 for e in json.load(open(sys.argv[2]))['traceEvents'] if e.get('cat') == 'kernel')
except Exception:
    t = 0
r = [json.loads(l) for l in open(sys.argv[3]) if l.startswith('{')]
libs = r[-1].get('cupti_libraries', []) if r else []
n = d['notes']
print(d['counts']['kernel'], t, 'handover' in n, 'cupti_clients' in n,
      'attached to CUPTI first' in n.get('cupti_clients', ''), len(libs) if r else -1)
" "$work/$name.json" "$work/${name}_torch.json" "$logs/$name.log" 2>/dev/null)"
        detail="kernels: devtrace ${dk:-none}, torch.profiler ${tk:-none}; notes: handover ${handed:-?}, refusal ${refused:-?}, attached first ${attached_first:-?}; libcupti files ${libs:-?}"
        if [[ $mode == held ]]; then
            [[ ${dk:-0} -gt 0 && ${tk:-1} == 0 && ${refused:-} == True ]] &&
                pass "$order: devtrace keeps CUPTI, torch.profiler refused" "$detail" ||
                { fail "$order: devtrace keeps CUPTI, torch.profiler refused" "$detail"; log_tail "$name"; }
        else
            [[ ${tk:-0} -gt 0 && ${handed:-} == True ]] && pass "CUPTI handed over to torch.profiler" "$detail" ||
                { fail "CUPTI handed over to torch.profiler" "$detail"; log_tail "$name"; }
        fi
        [[ ${libs:-} == 1 ]] && pass "$mode $order: devtrace and torch load one libcupti" "$(grep -o '"cupti_libraries": \[[^]]*\]' "$logs/$name.log" | tail -n 1 | cut -c1-150)" ||
            fail "$mode $order: devtrace and torch load one libcupti" "libcupti files mapped: ${libs:-?} ($(grep -o '"cupti_libraries": \[[^]]*\]' "$logs/$name.log" | tail -n 1 | cut -c1-150))"
    done
else
    skip "torch.profiler inside devtrace record" "no torch with CUDA"
fi

# ---------------------------------------------------------------- 5. graphs under the flight recorder
section "5. A graph of 1,024 kernels for ${graph_seconds} s under the flight recorder: every timestamp"
if have "$bin/graph_flight"; then
    bg_start graph_memory $((graph_seconds + 70)) nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500
    rm -f "$work"/graph*.json
    step graph_flight $((graph_seconds + 60)) "$devtrace" record --flight-recorder=16M -o "$work/graph.json" -- \
        "$bin/graph_flight" "$graph_seconds" --status 3
    rc=$?
    ((plan)) || kill "${bg_pid[graph_memory]}" 2>/dev/null
    bg_wait graph_memory
    ((plan)) || md "- device memory in use (nvidia-smi, MiB): $(awk 'NR==1 {min=$1} {if ($1 < min) min = $1; if ($1 > max) max = $1} END {print "from " min " to " max}' "$logs/graph_memory.log" 2>/dev/null)"
    dump=$(ls "$work"/graph*.dump*.json 2>/dev/null | head -n 1)
    if ((plan)) || [[ $rc == 3 && -n $dump ]]; then
        judge_with graph_window graph "$logs/graph_flight.log" "${dump:-$work/graph.dump1.json}"
        step graph_check 120 "$devtrace" check "${dump:-$work/graph.dump1.json}" && pass "graph window: devtrace check" ||
            { fail "graph window: devtrace check"; log_tail graph_check; }
    else
        fail "graph kernels under the flight recorder" "exit status $rc (want 3, the failed end that dumps), dump: ${dump:-none}"
        log_tail graph_flight
    fi
else
    skip "graphs under the flight recorder" "not compiled"
fi

# ---------------------------------------------------------------- 6. on demand
section "6. On demand: CUPTI armed late, in a process whose CUDA context already runs"
# A capture subscribes to CUPTI after the program created its context (the
# emulators cannot say whether real CUPTI then records that context's
# kernels); then the flight recorder's dump of a running loop.
kernels_in() { py -c "import json,sys; n=0
for f in sys.argv[1:]: n+=json.load(open(f))['devtrace']['counts']['kernel']
print(n)" "$@" 2>/dev/null; }
if have "$bin/launch_loop"; then
    rm -f "$work"/ondemand*.json "$work"/fr*.json
    bg_start ondemand_loop 60 "$devtrace" record --on-demand -o /dev/null -- "$bin/launch_loop" 3000000
    ((plan)) || sleep 3
    step ondemand_trigger 60 "$devtrace" trigger --all --duration 0.5 -o "$work/ondemand.json"
    bg_wait ondemand_loop
    got=$(kernels_in "$work"/ondemand*.json)
    if ((plan)) || [[ ${got:-0} -gt 0 ]]; then
        pass "trigger --duration 0.5 of a running CUDA loop" "${got:-?} kernels captured"
    else
        fail "trigger --duration 0.5 of a running CUDA loop" "kernels captured: ${got:-no trace}"
        log_tail ondemand_trigger
    fi
    bg_start fr_loop 60 "$devtrace" record --flight-recorder=64M -o "$work/fr.json" -- "$bin/launch_loop" 3000000
    ((plan)) || sleep 3
    step fr_dump 60 "$devtrace" trigger --all --dump -o "$work/fr_dump.json"
    bg_wait fr_loop
    got=$(kernels_in "$work"/fr_dump*.json)
    if ((plan)) || [[ ${got:-0} -gt 0 ]]; then
        pass "trigger --dump of a running flight recorder" "${got:-?} kernels in the dump"
    else
        fail "trigger --dump of a running flight recorder" "kernels dumped: ${got:-no trace}"
        log_tail fr_dump
    fi
else
    skip "on demand" "not compiled"
fi

# ---------------------------------------------------------------- 7. PyTorch model
if ((torch_ok)); then
    section "7. PyTorch model, $torch_steps steps: devtrace vs torch.profiler"
    step warmup 60 "$PY" "$root/tests/gpu/torch_workload.py" warmup --seconds 2 || fail "GPU warm-up with torch"
    for prof in devtrace torch; do
        step "model_$prof" 120 "$PY" "$root/tests/gpu/torch_workload.py" model --steps "$torch_steps" --profiler "$prof" \
            --trace-out "$work/model_$prof.json"
    done
    m_dt=$(last_json model_devtrace) m_tp=$(last_json model_torch)
    if ((plan)) || [[ -n $m_dt && -n $m_tp ]]; then
        step compare 120 "$PY" "$root/tests/gpu/compare_torch.py" --devtrace "$work/model_devtrace.json" \
            --torch "$work/model_torch.json" --devtrace-export-s "$(json "d['export_s']" "$m_dt")" \
            --torch-export-s "$(json "d['export_s']" "$m_tp")"
        rc=$?
        cat "$logs/compare.log" >>"$report" 2>/dev/null
        ((rc == 0)) && pass "PyTorch kernels: devtrace and torch.profiler agree" || fail "PyTorch kernels: devtrace and torch.profiler disagree"
        [[ $(json "d['lost']" "$m_dt") == 0 ]] && pass "PyTorch model: no records lost" ||
            fail "PyTorch model: records lost" "$(json "d['lost']" "$m_dt")"
        trace_facts model "$work/model_devtrace.json"
    else
        fail "PyTorch model ran" "devtrace: ${m_dt:-failed}; torch.profiler: ${m_tp:-failed}"
        log_tail model_devtrace; log_tail model_torch
    fi
else
    section "7. PyTorch: skipped, no torch with CUDA in $PY"
    skip "PyTorch sections" "no torch with CUDA (logs/torch_import.log)"
fi

# ---------------------------------------------------------------- 8. overhead
section "8. Overhead: launch-bound loops of $launches tiny kernels (median of $repeats; each profiler in process)"
c0=() c1=() ce=()
if have "$bin/launch_loop"; then
    for i in $(seq $repeats); do
        step "cloop_none_$i" 60 "$bin/launch_loop" "$launches" && c0+=("$(json "d['loop_s']" "$(last_json "cloop_none_$i")")")
        step "cloop_devtrace_$i" 60 "$bin/launch_loop" "$launches" --devtrace "$work/loop_devtrace.json"
        r=$(last_json "cloop_devtrace_$i")
        c1+=("$(json "d['loop_s']" "$r")")
        ce+=("$(json "d['export_s']" "$r")")
        ((plan)) || [[ $(json "d['kernels'] == $launches and d['lost'] == 0" "$r") == True ]] ||
            fail "C loop under devtrace, run $i" "every kernel kept: ${r:-no result}"
    done
    cm0=$(median "${c0[@]}"); cm1=$(median "${c1[@]}"); cme=$(median "${ce[@]}")
    if [[ -n $cm0 && -n $cm1 ]]; then
        pass "C loop timed" "untraced $cm0 s, devtrace $cm1 s ($(ratio "$cm1" "$cm0")x), export $cme s"
    elif ((!plan)); then
        fail "C loop timed" "runs with a time: untraced ${#c0[@]}, devtrace ${#c1[@]} of $repeats"
    fi
fi
tm0='' tm1='' tm2='' tpe='' tqe=''
if ((torch_ok)); then
    p=() q=() r=() pe=() qe=()
    for i in $(seq $repeats); do
        for prof in none devtrace torch; do
            step "tloop_${prof}_$i" 90 "$PY" "$root/tests/gpu/torch_workload.py" loop --launches "$launches" \
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
    elif ((!plan)); then
        fail "PyTorch loop timed" "untraced: ${p[*]:-none}; devtrace: ${q[*]:-none}; torch.profiler: ${r[*]:-none} (logs/tloop_*)"
    fi
fi
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
