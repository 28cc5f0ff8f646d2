#!/bin/sh
# devtrace-emu-run refuses what it cannot run, with the documented exit
# status and a message that says what to do.
# usage: runner_errors.sh RUNNER EMU_DIR WORKDIR
set -u
runner=$1 emu=$2 work=$3
mkdir -p "$work"
fails=0
expect() { # status pattern -- command...
    want=$1 pattern=$2
    shift 3
    out=$("$@" 2>&1)
    got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: '$*' exited $got, expected $want: $out" >&2
        fails=$((fails + 1))
    elif ! printf '%s' "$out" | grep -q -- "$pattern"; then
        echo "FAIL: '$*' said '$out', expected '$pattern'" >&2
        fails=$((fails + 1))
    fi
}
printf 'kernel device=0 stream=0 name=k dur_us=1\n' > "$work/ok.scn"
printf 'vendor cupti\nkernel device=0 stream=0 name=k dur_us=1\n' > "$work/cupti.scn"
printf '\nkernel device=0 stream=0 dur_us=1\n' > "$work/bad.scn"
printf 'kernel device=5 stream=0 name=k dur_us=1\n' > "$work/nodevice.scn"
printf 'repeat 3 {\n  sleep_us 1\n  step\n}\n' > "$work/steps.scn"

expect 2 "usage:" -- "$runner"
expect 2 "bad.scn:2: name= is required" -- "$runner" --library "$emu/libtopspti.so" "$work/bad.scn"
expect 2 "cannot open" -- "$runner" "$work/missing.scn"
expect 3 "cannot load the emulator" -- "$runner" --library "$work/no/libtopspti.so" "$work/ok.scn"
expect 3 "emulates topspti, but" -- "$runner" --library "$emu/libtopspti.so" "$work/cupti.scn"
expect 3 "not a devtrace emulator" -- "$runner" --library "$(dirname "$runner")/libdevtrace.so" "$work/ok.scn"
expect 4 "nodevice.scn:1: kernel failed" -- "$runner" --library "$emu/libtopspti.so" "$work/nodevice.scn"
expect 0 "records.kernel 0" -- "$runner" --library "$emu/libtopspti.so" "$work/ok.scn"
expect 0 "kernel 1" -- "$runner" --check "$work/ok.scn"
expect 0 "steps 3" -- "$runner" --library "$emu/libtopspti.so" "$work/steps.scn"
exit $fails
