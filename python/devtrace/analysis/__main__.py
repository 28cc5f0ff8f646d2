"""`devtrace convert` and `devtrace analyze` (the devtrace command runs
`python3 -m devtrace.analysis convert|analyze ...`). Each imports only what
it uses: analyze DuckDB (pyarrow for Dask and Parquet output), convert
pyarrow."""

from __future__ import annotations

import argparse
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
    a = p.parse_args(argv)
    if a.workers < 1:
        p.error("--workers needs at least 1")
    names = _reports.names() if a.report == "all" else a.report.split(",")
    for n in names:
        if n not in _reports.REPORTS:
            p.error("unknown report %r; the reports: %s" % (n, ", ".join(_reports.names())))
    if a.format == "parquet" and not a.output:
        p.error("--format parquet needs -o DIR")
    needs = ["duckdb"] + (["pyarrow"] if a.engine == "dask" or a.format == "parquet" else []) + \
        (["dask.distributed"] if a.engine == "dask" else [])
    if not _needs(p.prog, *needs):
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
                                      memory_limit=a.memory_limit, arrow=a.format == "parquet", con=con)
    except (OSError, ValueError) as e:
        print("devtrace analyze: %s" % e, file=sys.stderr)
        return 1
    finally:
        if dask is not None:
            dask.close()
        if con is not None:
            con.close()
    try:
        _output.write(results, a.format, a.output)
    except OSError as e:
        print("devtrace analyze: %s" % e, file=sys.stderr)
        return 1
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("convert", "analyze"):
        print("usage: python -m devtrace.analysis convert|analyze ...", file=sys.stderr)
        return 2
    return _convert(argv[1:]) if argv[0] == "convert" else _analyze(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
