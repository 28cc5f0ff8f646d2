#!/bin/sh
# Records a scenario with `devtrace record` and checks that the trace holds
# exactly what the emulator says it produced: events per kind, and one loss
# per injected fault under the matching reason, with nothing else lost.
# usage: record_scenario.sh DEVTRACE RUNNER BACKEND LIBRARY_VARIABLE LIBRARY SCENARIO WORKDIR [TAG]
set -eu
devtrace=$1 runner=$2 backend=$3 library_variable=$4 library=$5 scenario=$6 work=$7
name=$(basename "$scenario" .scn)${8:+-$8}
mkdir -p "$work"
trace="$work/$name.json" stats="$work/$name.stats"
rm -f "$trace" "$stats"

env DEVTRACE_BACKEND="$backend" "$library_variable=$library" \
    "$devtrace" record -o "$trace" -- "$runner" --stats-out "$stats" "$scenario"
# A library without its name function cannot name API calls, which
# `devtrace check` rightly reports; such runs skip it.
if [ -z "${EMU_RECORD_SKIP_CHECK:-}" ]; then
    "$devtrace" check "$trace"
fi

# one pass over the (possibly large) trace
summary="$work/$name.summary"
jq -r '.devtrace | (.counts | to_entries[] | "counts.\(.key) \(.value)"),
                   (.loss | to_entries[] | "loss.\(.key) \(.value)")' "$trace" > "$summary"
stat() { awk -v k="$1" '$1 == k { print $2 }' "$stats"; }
trace_value() { awk -v k="$1" '$1 == k { print $2 }' "$summary"; }
fails=0
expect() { # what actual expected
    if [ "$2" != "$3" ]; then
        echo "FAIL: $1: trace has $2, the emulator produced $3" >&2
        fails=$((fails + 1))
    fi
}
for kind in kernel memcpy memset runtime driver collective; do
    expect "events $kind" "$(trace_value counts.$kind)" "$(stat records.$kind)"
done
expect "loss timestamp_zero" "$(trace_value loss.timestamp_zero)" "$(stat faulted.zero_timestamps)"
expect "loss timestamp_reversed" "$(trace_value loss.timestamp_reversed)" "$(stat faulted.reversed_timestamps)"
expect "loss timestamp_too_long" "$(trace_value loss.timestamp_too_long)" "$(stat faulted.long_timestamps)"
expect "loss malformed" "$(trace_value loss.malformed)" "$(stat faulted.malformed)"
expect "loss unknown_kind" "$(trace_value loss.unknown_kind)" "$(stat faulted.unknown_kind)"
# a vendor that keeps no dropped-record count says so, and counts none
dropped=$(stat dropped.reported)
if jq -e '.devtrace.notes.dropped_records // "" | contains("not counted")' "$trace" >/dev/null; then
    dropped=0
fi
expect "loss vendor_dropped" "$(trace_value loss.vendor_dropped)" "$dropped"
for reason in no_buffer outside_window store_full; do
    expect "loss $reason" "$(trace_value loss.$reason)" 0
done
# every device record is linked to its API call
device=$(( $(stat records.kernel) + $(stat records.memcpy) + $(stat records.memset) + $(stat records.collective) ))
expect "flows" "$(trace_value counts.flows)" "$device"
if [ "$fails" -ne 0 ]; then
    exit 1
fi
echo "$name: trace matches the emulator exactly"
