"""`devtrace convert`, `devtrace analyze` and `devtrace diff` (the devtrace
command runs `python3 -m devtrace.analysis convert|analyze|diff ...`). Each
imports only what it uses: analyze and diff DuckDB (pyarrow for Dask and
Parquet output; --html and --plot their own), convert pyarrow."""

from __future__ import annotations

import argparse
import re
import sys

INSTALL = "pip install 'devtrace[analysis]'"


class _Parser(argparse.ArgumentParser):
    """A usage error in one line (what is wrong, and --help), exit status 2."""

    def error(self, message):
        self.exit(2, "%s: %s (--help says more)\n" % (self.prog, message))


def _needs(prog: str, *modules: str) -> bool:
    import importlib
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            print("%s needs %s: %s (%s)" % (prog, m, INSTALL, e), file=sys.stderr)
            return False
    return True


def _convert(argv) -> int:
    p = _Parser(prog="devtrace convert",
                description="Convert traces (devtrace's, torch.profiler's, merged; JSON or gzip) "
                            "to a Parquet dataset: one file per rank, a flows table and the traces' "
                            "metadata (docs/analysis.md).")
    p.add_argument("--to", choices=["parquet"], default="parquet", help="the format (parquet)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the dataset's directory (new)")
    p.add_argument("--rows", type=int, default=None, help="rows per row group (default 65536)")
    p.add_argument("--no-steps", action="store_true",
                   help="leave the step column empty: one pass over each trace instead of two")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="traces converted at a time (default: one per CPU, at most 8)")
    p.add_argument("traces", nargs="+", metavar="TRACE")
    a = p.parse_args(argv)
    if not _needs(p.prog, "pyarrow", "pyarrow.parquet", "numpy"):
        return 2
    from ._columns import ROWS, convert
    try:
        res = convert(a.traces, a.output, rows=a.rows or ROWS, steps=not a.no_steps, jobs=a.jobs)
    except (OSError, ValueError) as e:
        print("devtrace convert: %s" % e, file=sys.stderr)
        return 1
    for trace, n, first in res.get("negative", []):
        print("devtrace convert: note: %s: %d event%s with a negative duration (the first: traceEvents[%d]); "
              "the reports leave %s out" % (trace, n, "" if n == 1 else "s", first, "it" if n == 1 else "them"),
              file=sys.stderr)
    print("%s: %d events of %d rank%s" % (a.output, res["events"], len(res["ranks"]),
                                          "" if len(res["ranks"]) == 1 else "s"))
    return 0


def _memory_limit(text: str) -> str:
    from ._engine import limit_mb
    if limit_mb(text) is None:
        raise argparse.ArgumentTypeError("%r is not a size (e.g. 512MB, 2GB)" % text)
    return text


def _analyze(argv) -> int:
    from . import _reports
    p = _Parser(prog="devtrace analyze",
                description="Reports over a dataset written by devtrace convert: " +
                            "; ".join("%s: %s" % (n, _reports.describe(n)) for n in _reports.names()))
    p.add_argument("dataset", metavar="DIR")
    p.add_argument("--report", default="kernels", help="comma-separated: " + ",".join(_reports.names()) + " or all")
    p.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="write there (for parquet: a directory, one file per report) instead of standard output")
    p.add_argument("--plot", metavar="DIR", help="write PNG charts there (needs matplotlib)")
    p.add_argument("--engine", choices=["duckdb", "dask"], default="duckdb")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler (default: a local cluster)")
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="the local Dask cluster's worker processes (default 2)")
    p.add_argument("--memory-limit", metavar="SIZE", type=_memory_limit, help="DuckDB's memory_limit, e.g. 1GB")
    p.add_argument("--hta", action="store_true",
                   help="HTA 0.5's view: whole microseconds, its device events, work launched before the last "
                        "ProfilerStep (docs/analysis.md says where it differs from HTA)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a dataset with events the reports would leave out (negative durations)")
    p.add_argument("--window", metavar="NAME",
                   help="critical path: over each instance of the host range NAME (default: each ProfilerStep)")
    p.add_argument("--op", metavar="NAME",
                   help="sequences: under the shallowest operators whose name holds NAME (default: the top-level "
                        "operators)")
    p.add_argument("--min-len", type=int, default=3, metavar="N",
                   help="sequences: of N device work or more (default 3)")
    p.add_argument("--queue-limit", type=int, default=1024, metavar="N",
                   help="queue: the time a stream had N or more launched works waiting (default 1024)")
    p.add_argument("--html", metavar="FILE",
                   help="write one HTML file with a chart per report (the charting library inside it: it opens "
                        "without a network)")
    p.add_argument("--baseline", metavar="DIR",
                   help="with --html: what changed from the dataset DIR (as devtrace diff)")
    p.add_argument("--overlay", metavar="DIR",
                   help="write each trace again in DIR with the critical path marked (args critical) and counter "
                        "tracks: queue length per stream, memory in use per device, copies' bandwidth, the path")
    a = p.parse_args(argv)
    if a.workers < 1:
        p.error("--workers needs at least 1")
    if a.min_len < 1 or a.queue_limit < 1:
        p.error("--min-len and --queue-limit need at least 1")
    if a.baseline and not a.html:
        p.error("--baseline goes with --html")
    names = _reports.names() if a.report == "all" else a.report.split(",")
    for n in names:
        if n not in _reports.REPORTS or not _reports.REPORTS[n].listed:
            p.error("unknown report %r; the reports: %s" % (n, ", ".join(_reports.names())))
    if a.format == "parquet" and not a.output:
        p.error("--format parquet needs -o DIR")
    needs = ["duckdb"] + (["pyarrow"] if a.engine == "dask" or a.format == "parquet" else []) + \
        (["dask.distributed"] if a.engine == "dask" else [])
    if not _needs(p.prog, *needs):
        return 2
    params = {"window": a.window, "op": a.op, "min_len": a.min_len, "queue_limit": a.queue_limit}
    if a.html:
        from . import _html
        try:
            _html.check_library()
        except ImportError as e:
            print("devtrace analyze: --html: %s" % e, file=sys.stderr)
            return 2
    from . import _engine, _output
    dask = con = None
    try:
        # one DuckDB connection for the notes and every report
        con = _engine._connect(a.memory_limit if a.engine == "duckdb" else None)
        for rank, trace, note in _engine.notes(a.dataset, con):
            n = note.get("negativeDurations")
            if not n:
                continue
            what = "%s (rank %d): %d event%s with a negative duration (the first: traceEvents[%d])" % (
                trace, rank, n, "" if n == 1 else "s", note.get("firstNegativeDuration", 0))
            if a.strict:
                print("devtrace analyze: %s: refused (--strict)" % what, file=sys.stderr)
                return 1
            print("devtrace analyze: note: %s, left out of the reports" % what, file=sys.stderr)
        if a.engine == "dask":
            dask = _engine.Dask(a.scheduler, workers=a.workers)
        results = _engine.run_reports(a.dataset, names, engine=a.engine, hta=a.hta, dask=dask,
                                      memory_limit=a.memory_limit, arrow=a.format == "parquet", con=con,
                                      params=params)
        _output.write(results, a.format, a.output)
        if a.html:
            _html.write_html(a.dataset, a.html, engine=a.engine, hta=a.hta, dask=dask, con=con, params=params,
                             baseline=a.baseline, memory_limit=a.memory_limit)
            print("wrote %s" % a.html, file=sys.stderr)
        if a.overlay:
            from . import _overlay
            for path in _overlay.write_overlay(a.dataset, a.overlay, engine=a.engine, hta=a.hta, dask=dask,
                                               con=con, params=params, memory_limit=a.memory_limit):
                print("wrote %s" % path, file=sys.stderr)
    except (OSError, ValueError) as e:
        print("devtrace analyze: %s" % e, file=sys.stderr)
        return 1
    finally:
        if dask is not None:
            dask.close()
        if con is not None:
            con.close()
    if a.plot:
        try:
            from . import _plot
            written = _plot.plot(a.dataset, a.plot, engine=a.engine, results=results, hta=a.hta,
                                 scheduler=a.scheduler)
        except ImportError as e:
            print("devtrace analyze: --plot needs matplotlib (pip install matplotlib): %s" % e, file=sys.stderr)
            return 2
        except (OSError, ValueError) as e:
            print("devtrace analyze: --plot: %s" % e, file=sys.stderr)
            return 1
        for path in written:
            print("wrote %s" % path, file=sys.stderr)
    return 0


def _step_range(text: str):
    m = re.match(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$", text)
    if not m:
        raise argparse.ArgumentTypeError("%r is not a step or a range of steps (e.g. 5 or 3-7)" % text)
    a, b = int(m.group(1)), int(m.group(2) or m.group(1))
    if b < a:
        raise argparse.ArgumentTypeError("%r: the range ends before it starts" % text)
    return a, b


def _percent(text: str) -> float:
    try:
        v = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a percentage (e.g. 5)" % text) from None
    if not 0 <= v < 1e6:
        raise argparse.ArgumentTypeError("%r is not a percentage (e.g. 5)" % text)
    return v


def _diff(argv) -> int:
    """devtrace diff BASE TEST: exit 0 when nothing grew past the threshold,
    1 when something did, 2 on a usage error or a dataset that cannot be
    read (as diff(1))."""
    p = _Parser(prog="devtrace diff",
                description="What changed from one dataset (devtrace convert's) to another, or between two step "
                            "ranges of one: kernels, collectives, copies, operators, calls and ranges added, "
                            "removed, slower or faster, by count and time, per rank and over the job. Exit status "
                            "1 when a time grew past the threshold, 0 otherwise, 2 on an error.")
    p.add_argument("base", metavar="BASE")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--threshold", type=_percent, default=5.0, metavar="PCT",
                   help="a change counts when it moves its kind's time (kernels, operators, ...) in BASE by more "
                        "than PCT percent (default 5)")
    p.add_argument("--steps", type=_step_range, metavar="A-B", help="compare these steps of both, per step")
    p.add_argument("--base-steps", type=_step_range, metavar="A-B", help="these steps of BASE, per step")
    p.add_argument("--test-steps", type=_step_range, metavar="A-B", help="these steps of TEST, per step")
    p.add_argument("--all", action="store_true", help="every name, not only those past the threshold")
    p.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table")
    p.add_argument("-o", "--output", metavar="PATH", help="write there instead of standard output")
    p.add_argument("--html", metavar="FILE", help="also write the changes as an HTML chart")
    p.add_argument("--engine", choices=["duckdb", "dask"], default="duckdb")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler (default: a local cluster)")
    p.add_argument("--workers", type=int, default=2, metavar="N", help="the local Dask cluster's workers")
    p.add_argument("--memory-limit", metavar="SIZE", type=_memory_limit, help="DuckDB's memory_limit, e.g. 1GB")
    p.add_argument("--hta", action="store_true", help="HTA 0.5's view of the events (docs/analysis.md)")
    a = p.parse_args(argv)
    if a.format == "parquet" and not a.output:
        p.error("--format parquet needs -o DIR")
    if a.workers < 1:
        p.error("--workers needs at least 1")
    if a.html:
        from . import _html
        try:
            _html.check_library()
        except ImportError as e:
            print("devtrace diff: --html: %s" % e, file=sys.stderr)
            return 2
    base_steps = a.base_steps or a.steps
    test_steps = a.test_steps or a.steps
    needs = ["duckdb"] + (["pyarrow"] if a.engine == "dask" or a.format == "parquet" else []) + \
        (["dask.distributed"] if a.engine == "dask" else [])
    if not _needs(p.prog, *needs):
        return 2
    from . import _engine, _output
    dask = con = None
    try:
        con = _engine._connect(a.memory_limit if a.engine == "duckdb" else None)
        if a.engine == "dask":
            dask = _engine.Dask(a.scheduler, workers=a.workers)
        rows = _engine.run_diff(a.base, a.test, engine=a.engine, hta=a.hta, dask=dask, memory_limit=a.memory_limit,
                                base_steps=base_steps, test_steps=test_steps, threshold=a.threshold / 100.0,
                                arrow=a.format == "parquet", con=con)
        cols, all_rows = _output.columns_rows(rows)
        past = cols.index("past_threshold")
        slower = [r for r in all_rows if r[past] and r[cols.index("diff_ns")] > 0]
        shown = rows if a.all else _output.select(rows, lambda r: r[past] or r[cols.index("name")] is None)
        _output.write({"diff": shown}, a.format, a.output)
        if a.html:
            _html.write_diff_html(rows, a.html, a.base, a.test, a.threshold)
            print("wrote %s" % a.html, file=sys.stderr)
    except (OSError, ValueError) as e:
        print("devtrace diff: %s" % e, file=sys.stderr)
        return 2
    finally:
        if dask is not None:
            dask.close()
        if con is not None:
            con.close()
    if slower:
        c = {n: i for i, n in enumerate(cols)}

        def where(r):
            return "the job" if r[c["rank"]] is None else "rank %d" % r[c["rank"]]
        kinds = [r for r in slower if r[c["name"]] is None]
        # the largest change, where it happened (a rank's before the job's)
        names = sorted((r for r in slower if r[c["name"]] is not None),
                       key=lambda r: (-r[c["diff_ns"]], r[c["rank"]] is None))
        parts = ["%s time %+.3f ms on %s" % (r[c["what"]], r[c["diff_ns"]] / 1e6, where(r)) for r in kinds[:1]]
        parts += ["the largest: %s %r on %s, %+.3f ms (%s)" % (r[c["what"]], r[c["name"]], where(r),
                                                              r[c["diff_ns"]] / 1e6, r[c["change"]])
                  for r in names[:1]]
        print("devtrace diff: past the threshold of %g%%: %d change%s; %s"
              % (a.threshold, len(slower), "" if len(slower) == 1 else "s", "; ".join(parts)), file=sys.stderr)
        return 1
    return 0


COMMANDS = {"convert": _convert, "analyze": _analyze, "diff": _diff}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m devtrace.analysis convert|analyze|diff ...", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
