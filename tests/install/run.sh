#!/usr/bin/env bash
# Install devtrace into a scratch prefix, then build a program against it
# through pkg-config and through find_package(devtrace), and run both.
#   tests/install/run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
prefix="$build/install-test/prefix"
work="$build/install-test/work"
rm -rf "$build/install-test"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name devtrace.pc -printf '%h\n' | head -n 1)
export PKG_CONFIG_PATH="$libdir"
cc -o "$work/consumer_pc" "$src/tests/install/consumer.c" $(pkg-config --cflags --libs devtrace) \
   -Wl,-rpath,"$(pkg-config --variable=libdir devtrace)"
"$work/consumer_pc" "$work/pc.json" | grep -q "^0.1.0 1$"
cmake -S "$src/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$libdir/.." "$work/cmake/consumer_cmake" "$work/cmake.json" | grep -q "^0.1.0 1$"
test -x "$prefix/bin/devtrace"
"$prefix/bin/devtrace" check "$work/pc.json" >/dev/null
echo "install: pkg-config and find_package consumers built and ran"
