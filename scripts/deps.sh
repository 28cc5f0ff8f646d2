#!/usr/bin/env bash
# Install the Debian packages devtrace's build, tests and fuzzing need, if any
# are missing. Needs root (or sudo) only when something is missing.
set -euo pipefail
# chromium: the test of devtrace analyze --html opens its page in it, headless
packages=(build-essential cmake ninja-build pkgconf clang libclang-rt-14-dev
          libyajl-dev zlib1g-dev python3 python3-venv python3-pytest jq valgrind chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "installing: ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
