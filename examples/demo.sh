#!/usr/bin/env bash
# Record a demo trace on an emulated Enflame GCU (no accelerator needed):
# builds devtrace if needed, runs examples/train_step.scn under
# `devtrace record`, checks the trace and prints its summary.
#   bash examples/demo.sh [OUTPUT]     (default: demo.json)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
out=${1:-demo.json}
if [[ ! -x build/devtrace || ! -x build/devtrace-emu-run || ! -f build/emu/libtopspti.so ]]; then
  cmake -S . -B build -G Ninja >/dev/null
  cmake --build build -j "$(nproc)" --target devtrace_cli devtrace_inject devtrace_emu_run emu_topspti
fi
DEVTRACE_TOPSPTI_LIBRARY="$PWD/build/emu/libtopspti.so" \
  build/devtrace record -o "$out" -- build/devtrace-emu-run examples/train_step.scn
build/devtrace check "$out"
build/devtrace stats "$out"
echo "open $out in https://ui.perfetto.dev or chrome://tracing"
