#!/usr/bin/env bash
# Builds the library, libdevtrace_inject and the CLI as on a machine with
# only a C compiler, CMake and (for CUDA) the CUDA toolkit: zlib and
# pkg-config (and so yajl) are hidden from CMake. Checks that
# the configure step says what each missing package costs, that the build
# links none of them, and that gzip is refused with a message that says
# what to do. Run by .ci/run.
#   scripts/build_minimal.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build-minimal}")
fail() { echo "build_minimal: FAIL: $*" >&2; exit 1; }
rm -rf "$build"
mkdir -p "$build"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$root" -B "$build" "${gen[@]}" -DDEVTRACE_WERROR=ON -DDEVTRACE_BUILD_EMULATORS=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >"$build/configure.log"
for said in "zlib not found" "pkg-config not found" "DEVTRACE_BUILD_TESTS turned off" \
            "DEVTRACE_BUILD_BENCH turned off"; do
    grep -q "$said" "$build/configure.log" || fail "the configure step does not say \"$said\""
done
cmake --build "$build" -j "$(nproc)" --target devtrace_shared devtrace_inject devtrace_cli >"$build/build.log" ||
    { tail -n 30 "$build/build.log"; fail "the build failed"; }
for lib in libdevtrace.so libdevtrace_inject.so; do
    if ldd "$build/$lib" | grep -E "libz\.|libyajl"; then fail "$lib links a hidden package"; fi
done
"$build/devtrace" check "$root/tests/data/good.json" >/dev/null || fail "devtrace check of a JSON trace"
if "$build/devtrace" check "$root/tests/data/good.json.gz" >"$build/gz.txt" 2>&1; then
    fail "devtrace check read a gzip trace without zlib"
fi
grep -q "built without zlib" "$build/gz.txt" || fail "no message about zlib when reading gzip: $(cat "$build/gz.txt")"
for out in trace.json.gz trace.pftrace.gz; do
    if (cd "$build" && ./devtrace record -o "$out" -- true) >"$build/record.txt" 2>&1; then
        fail "record accepted the gzip output $out without zlib"
    fi
    grep -q "built without zlib" "$build/record.txt" ||
        fail "no message about zlib for the gzip output $out: $(cat "$build/record.txt")"
done
echo "build_minimal: the library, libdevtrace_inject and the CLI build without zlib, pkg-config and yajl"
