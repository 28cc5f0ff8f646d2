#!/usr/bin/env bash
# The JSON export on 1 to 4 formatting lanes, each beside a plain write of
# the same bytes in the same round (bench_export): how the export scales
# with the cores a machine has. On a 2-core machine lanes 3 and 4 only
# share the two cores; run it where there are four or more.
#
#   bash bench/export_lanes.sh [BUILD_DIR] [events] [rounds] [output-dir]
#
# (defaults: build, 2000000, 5, /dev/shm: tmpfs measures the exporter's CPU
# and the kernel's copy rather than a disk)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
events=${2:-2000000}
rounds=${3:-5}
dir=${4:-/dev/shm}
if [[ ! -x "$build/bench/bench_export" ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target bench_export
fi
echo "processors: $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
for lanes in 1 2 3 4; do
  echo "--- $lanes lane(s)"
  BENCH_EXPORT_LANES=$lanes "$build/bench/bench_export" "$dir/devtrace_bench_lanes.json" "$events" json "$rounds" |
    grep -E '^(rounds|JSON|plain write)'
done
rm -f "$dir/devtrace_bench_lanes.json" "$dir/devtrace_bench_lanes.json.pftrace"
