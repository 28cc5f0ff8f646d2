# Shared by the hardware validation scripts: the output folder and its
# report, the options of the scripts that record one workload, the first
# lines of the report, and the last steps of a run. Sourced; `here` (the
# source tree) is set first.
say() { echo "$*" | tee -a "$report"; }
section() { say ""; say "== $* =="; }

# report_open: the folder $out (set first) made and named absolutely, its
# report.txt empty.
report_open() {
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  report="$out/report.txt"
  : >"$report"
}

# validate_options NAME HELP_END ARGS...: the options of a script that
# records one workload on NAME's device:
#   -B BUILD         devtrace's build to use (else the script builds one)
#   -o OUT           the output folder (default ./NAME-validate-<date>)
#   --dry-run BUILD  devtrace's emulator of the vendor stands in (the output
#                    in a temporary folder unless -o names one)
#   -- WORKLOAD...   the command to record
#   -h, --help       the script's lines 2 to HELP_END
# Sets build, out, dry and workload, and opens the report (report_open).
validate_options() {
  local name=$1 help_end=$2 out_given=0
  shift 2
  build=""
  out="$name-validate-$(date +%Y%m%d-%H%M%S)"
  workload=()
  dry=0
  while [ $# -gt 0 ]; do
    case "$1" in
      -B) build=$2; shift 2 ;;
      -o) out=$2; out_given=1; shift 2 ;;
      --dry-run) dry=1; build=$2; shift 2 ;;
      --) shift; workload=("$@"); break ;;
      -h|--help) sed -n "2,${help_end}p" "$0"; exit 0 ;;
      *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
  done
  if [ "$dry" = 1 ] && [ "$out_given" = 0 ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-$name.XXXXXX")
  fi
  report_open
}

# report_environment [LINE...]: the report's first section: the date, the
# host, the script's own LINEs, and devtrace's source.
report_environment() {
  section "environment"
  say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  say "host: $(uname -a)"
  local line
  for line in "$@"; do say "$line"; done
  say "devtrace source: $here ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
}

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
