#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for a bounded time over
# its kept corpus (tests/fuzz/corpus/<name>/). New inputs go to a scratch
# directory; a crash fails the run and leaves the reproducer in it.
#   bash tests/fuzz/run.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${1:-build-fuzz}
[[ $build = /* ]] || build="$root/$build"
seconds=${2:-60}
CC=clang cmake -S . -B "$build" -G Ninja -DDEVTRACE_WERROR=ON -DDEVTRACE_FUZZ=ON \
  -DDEVTRACE_BUILD_BENCH=OFF >/dev/null
status=0
# one target per fuzz_*.c, and one engine decoder target per vendor
while read -r target; do
  [[ -n $target ]] || continue
  name=${target#fuzz_}
  cmake --build "$build" --target "$target" -j "$(nproc)" >/dev/null
  bin=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
  scratch="$build/fuzz-work/$name"
  mkdir -p "$scratch" "tests/fuzz/corpus/$name"
  echo "--- $target: ${seconds}s"
  if ! (cd "$scratch" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 . "$root/tests/fuzz/corpus/$name" 2>&1 | tail -n 12); then
    echo "FUZZ FAILURE in $target (reproducer in $scratch)"
    status=1
  fi
done < "$build/tests/fuzz/targets.txt"
exit $status
