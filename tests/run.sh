#!/usr/bin/env bash
# The test command: install what the tests need (Debian packages, then the
# Python packages of tests/requirements.txt into the Python the tests run
# with), configure, build (warnings are errors) and run every test (unit,
# emulator, conformance, fuzz-corpus replay, CLI, Python package, torch,
# multi-rank, analysis, documented commands).
#   bash tests/run.sh [BUILD_DIR] [extra cmake arguments...]
# DT_TEST_FILTER=regex runs only the matching ctest names.
#
# The tests' Python is python3 on PATH (an active virtual environment's,
# when there is one); where that is the system's own Python, whose packages
# pip may not change (PEP 668, Debian's python3), it is a virtual environment
# .venv in the checkout, made over it. The command says which, and what it
# installs; with everything there it installs nothing and calls no pip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${1:-build}
shift || true
python=$(command -v python3) || { echo "tests/run.sh: no python3 on PATH" >&2; exit 1; }
python=$("$python" -c 'import sys; print(sys.executable)')
if "$python" tests/python_packages.py --externally-managed; then
  [[ -x .venv/bin/python3 ]] || "$python" -m venv --system-site-packages .venv
  python=$PWD/.venv/bin/python3
fi
"$python" tests/python_packages.py --install --log "$build/python-packages.log"
cmake -S . -B "$build" -G Ninja -DDEVTRACE_WERROR=ON -DDT_TEST_PYTHON="$python" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
# devtrace convert / analyze (Python programs) run with the same Python
export DEVTRACE_PYTHON=$python
args=(--test-dir "$build" --output-on-failure -j "$(nproc)")
if [[ -n "${DT_TEST_FILTER:-}" ]]; then args+=(-R "$DT_TEST_FILTER"); fi
ctest "${args[@]}"
