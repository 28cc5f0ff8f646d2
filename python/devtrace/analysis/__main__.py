"""`devtrace convert` and `devtrace analyze` (the devtrace command runs
`python3 -m devtrace.analysis convert|analyze ...`)."""

from __future__ import annotations

import argparse
import sys


def _convert(argv) -> int:
    p = argparse.ArgumentParser(prog="devtrace convert",
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
    from ._columns import ROWS, convert
    try:
        res = convert(a.traces, a.output, rows=a.rows or ROWS, steps=not a.no_steps, jobs=a.jobs)
    except (OSError, ValueError) as e:
        print("devtrace convert: %s" % e, file=sys.stderr)
        return 1
    print("%s: %d events of %d rank%s" % (a.output, res["events"], len(res["ranks"]),
                                          "" if len(res["ranks"]) == 1 else "s"))
    return 0


def _analyze(argv) -> int:
    from . import _reports
    p = argparse.ArgumentParser(prog="devtrace analyze",
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
    p.add_argument("--memory-limit", metavar="SIZE", help="DuckDB's memory_limit, e.g. 1GB")
    p.add_argument("--hta", action="store_true",
                   help="HTA 0.5's view: whole microseconds, work launched before the last ProfilerStep")
    a = p.parse_args(argv)
    names = _reports.names() if a.report == "all" else a.report.split(",")
    for n in names:
        if n not in _reports.REPORTS:
            print("devtrace analyze: unknown report %r; the reports: %s" % (n, ", ".join(_reports.names())),
                  file=sys.stderr)
            return 2
    if a.format == "parquet" and not a.output:
        print("devtrace analyze: --format parquet needs -o DIR", file=sys.stderr)
        return 2
    from . import _engine, _output
    dask = None
    try:
        if a.engine == "dask":
            dask = _engine.Dask(a.scheduler)
        results = {n: _engine.report(a.dataset, n, engine=a.engine, hta=a.hta, dask=dask,
                                     memory_limit=a.memory_limit) for n in names}
    except (OSError, ValueError) as e:
        print("devtrace analyze: %s" % e, file=sys.stderr)
        return 1
    finally:
        if dask is not None:
            dask.close()
    _output.write(results, a.format, a.output)
    if a.plot:
        from . import _plot
        try:
            written = _plot.plot(a.dataset, a.plot, engine=a.engine, results=results, hta=a.hta,
                                 scheduler=a.scheduler)
        except ImportError as e:
            print("devtrace analyze: --plot needs matplotlib (pip install matplotlib): %s" % e, file=sys.stderr)
            return 1
        for path in written:
            print("wrote %s" % path, file=sys.stderr)
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("convert", "analyze"):
        print("usage: python -m devtrace.analysis convert|analyze ...", file=sys.stderr)
        return 2
    try:
        import pyarrow  # noqa: F401
        if argv[0] == "analyze":
            import duckdb  # noqa: F401
    except ImportError as e:
        print("devtrace %s needs pyarrow and duckdb: pip install 'devtrace[analysis]' (%s)" % (argv[0], e),
              file=sys.stderr)
        return 1
    return _convert(argv[1:]) if argv[0] == "convert" else _analyze(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
