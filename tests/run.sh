#!/usr/bin/env bash
# The test command: configure, build (warnings are errors) and run every test
# (unit, emulator, conformance, fuzz-corpus replay, CLI integration).
#   bash tests/run.sh [BUILD_DIR] [extra cmake arguments...]
# DT_TEST_FILTER=regex runs only the matching ctest names.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${1:-build}
shift || true
cmake -S . -B "$build" -G Ninja -DDEVTRACE_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
args=(--test-dir "$build" --output-on-failure -j "$(nproc)")
if [[ -n "${DT_TEST_FILTER:-}" ]]; then args+=(-R "$DT_TEST_FILTER"); fi
ctest "${args[@]}"
