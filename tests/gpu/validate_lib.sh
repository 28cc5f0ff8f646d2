# Shared by the hardware validation scripts (vendor_validate.sh,
# rocm_validate.sh): the report, and the last steps of a run. Sourced; the
# script sets `out` (the output folder) first.
report="$out/report.txt"
: >"$report"
say() { echo "$*" | tee -a "$report"; }
section() { say ""; say "== $* =="; }

# record_and_report DEVTRACE BACKEND PYTHON HERE [EXPECT...] -- WORKLOAD...
# Records WORKLOAD with `devtrace record --backend BACKEND`, runs `devtrace
# check` and `devtrace stats`, and prints the findings and a verdict
# (tests/gpu/trace_findings.py, given the EXPECT arguments). Returns the
# findings' status: 0 for a verdict of OK.
record_and_report() {
  local devtrace=$1 backend=$2 python=$3 here=$4
  shift 4
  local expect=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do expect+=("$1"); shift; done
  shift
  say "command: $*"
  local trace="$out/$backend.json"
  DEVTRACE_LOG=1 "$devtrace" record --backend "$backend" -o "$trace" -- "$@" >"$out/record.log" 2>&1
  say "record exit status: $? (log: $out/record.log)"
  grep -iE "error|$backend|unavailable|refuse|inferred" "$out/record.log" | head -n 20 | tee -a "$report" >/dev/null
  [ -s "$trace" ] || { say "no trace written"; tail -n 30 "$out/record.log" | tee -a "$report"; return 1; }

  section "devtrace check"
  "$devtrace" check "$trace" 2>&1 | tee -a "$report"
  local check_rc=${PIPESTATUS[0]}

  section "devtrace stats"
  "$devtrace" stats "$trace" >"$out/stats.txt" 2>&1
  head -n 60 "$out/stats.txt" | tee -a "$report"

  section "findings"
  "$python" "$here/tests/gpu/trace_findings.py" "$trace" "$check_rc" "${expect[@]}" | tee -a "$report"
  local verdict=${PIPESTATUS[0]}
  say ""
  say "report: $report (trace: $trace)"
  return "$verdict"
}
