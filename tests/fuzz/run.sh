#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for a bounded time over
# its kept corpus (tests/fuzz/corpus/<name>/).
#
#   bash tests/fuzz/run.sh [--keep] [BUILD_DIR] [SECONDS] [TARGET...]
#
# TARGETs are fuzz_<name> (default: every target the build lists: one per
# tests/fuzz/fuzz_*.c and one engine decoder target per vendor).
#
# Targets run as many at a time as there are cores.
#
# Without --keep (CI runs 60 s per target) the kept corpus is only read: new
# inputs go to a scratch directory, and a crash fails the run and leaves its
# reproducer in BUILD_DIR/fuzz-work/<name>/artifacts.
#
# With --keep, for a longer campaign, e.g. an hour per target:
#   bash tests/fuzz/run.sh --keep build-fuzz 3600
# the inputs that reach code the kept corpus does not are merged into it
# (libFuzzer's -merge=1), and every crash, timeout, leak or out-of-memory
# reproducer is copied into it as well, so that the corpus replay test
# (fuzz.fuzz_<name>.replay, run by tests/run.sh) fails until it is fixed.
# Commit what it adds to tests/fuzz/corpus/.
#
# DT_FUZZ_BIN_DIR: run the fuzz binaries found there instead of building.
# DT_FUZZ_CORPUS: the kept corpus root (default tests/fuzz/corpus).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
keep=0
if [[ ${1:-} == --keep ]]; then keep=1; shift; fi
build=${1:-build-fuzz}
[[ $build = /* ]] || build="$root/$build"
seconds=${2:-60}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
corpus_root=${DT_FUZZ_CORPUS:-$root/tests/fuzz/corpus}
if [[ -z ${DT_FUZZ_BIN_DIR:-} ]]; then
  CC=clang cmake -S . -B "$build" -G Ninja -DDEVTRACE_WERROR=ON -DDEVTRACE_FUZZ=ON \
    -DDEVTRACE_BUILD_BENCH=OFF >/dev/null
fi
if (( ${#targets[@]} == 0 )); then
  # one target per fuzz_*.c, and one engine decoder target per vendor, as
  # the build lists them
  if [[ -f $build/tests/fuzz/targets.txt ]]; then
    while read -r target; do [[ -n $target ]] && targets+=("$target"); done < "$build/tests/fuzz/targets.txt"
  else
    for src in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
  fi
fi
# The targets built in one go, then run $(nproc) at a time (each fuzzer is
# one thread): the same seconds for each, in a fraction of the wall time.
if [[ -z ${DT_FUZZ_BIN_DIR:-} ]]; then
  cmake --build "$build" --target "${targets[@]}" -j "$(nproc)" >/dev/null
fi
run_one() {
  local target=$1 name=${1#fuzz_} bin work corpus failed=0
  if [[ -n ${DT_FUZZ_BIN_DIR:-} ]]; then
    bin=$DT_FUZZ_BIN_DIR/$target
  else
    bin=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
  fi
  work="$build/fuzz-work/$name"
  corpus="$corpus_root/$name"
  rm -rf "$work/new" "$work/artifacts"
  mkdir -p "$work/new" "$work/artifacts" "$corpus"
  echo "--- $target: ${seconds}s"
  if ! (cd "$work" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/new" "$corpus" 2>&1 | tail -n 12); then
    echo "FUZZ FAILURE in $target (reproducer in $work/artifacts)"
    failed=1
  fi
  if (( keep )); then
    local before
    before=$(find "$corpus" -type f | wc -l)
    # only inputs that add coverage join the kept corpus
    if ! (cd "$work" && "$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 "$corpus" "$work/new" \
          >"$work/merge.log" 2>&1); then
      echo "merge into $corpus failed (see $work/merge.log)"
      return 1
    fi
    echo "kept $(( $(find "$corpus" -type f | wc -l) - before )) new inputs in $corpus"
    for artifact in "$work/artifacts"/*; do
      [[ -f $artifact ]] || continue
      cp "$artifact" "$corpus/"
      echo "kept $corpus/$(basename "$artifact"): fuzz.$target.replay fails until it is fixed"
    done
  fi
  return $failed
}
status=0
jobs_at_once=$(nproc)
mkdir -p "$build/fuzz-work"
for ((i = 0; i < ${#targets[@]}; i += jobs_at_once)); do
  pids=()
  for target in "${targets[@]:i:jobs_at_once}"; do
    run_one "$target" >"$build/fuzz-work/$target.log" 2>&1 &
    pids+=($!)
  done
  for j in "${!pids[@]}"; do
    wait "${pids[$j]}" || status=1
    cat "$build/fuzz-work/${targets[i + j]}.log"
  done
done
exit $status
