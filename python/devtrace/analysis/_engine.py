"""Running the reports: DuckDB over the Parquet files (the default), or a
Dask cluster whose workers each run the report's per-rank query over one
rank's files. Both run the same SQL (_reports.py) and hand their per-rank
rows to the same combining query, so they give the same results."""

from __future__ import annotations

import glob
import os
import re
import tempfile
from typing import List, Optional

import pyarrow as pa

from . import _reports

ENGINES = ("duckdb", "dask")


def _events_glob(path: str, rank: Optional[int] = None) -> str:
    part = "*" if rank is None else "rank=%d" % rank
    return os.path.join(path, "events", part, "*.parquet")


# DuckDB's rule of thumb: each thread needs about 125 MB to run any query
# (duckdb.org/docs/guides/performance/how_to_tune_workloads); under a
# smaller limit a sort or join can fail rather than spill.
MB_PER_THREAD = 125
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?)B?\s*$", re.I)


def _limit_mb(memory_limit: str) -> Optional[float]:
    """memory_limit ('64MB', '1GiB', '2 GB') in MB; None when not a size."""
    m = _SIZE.match(memory_limit)
    if not m:
        return None
    power = "KMGT".find(m.group(2).upper()) + 1 if m.group(2) else 0
    return float(m.group(1)) * (1024.0 if m.group(3) else 1000.0) ** power / 1e6


def _connect(memory_limit: Optional[str] = None, threads: Optional[int] = None, temp_dir: Optional[str] = None):
    import duckdb
    con = duckdb.connect()
    if memory_limit:
        con.execute("SET memory_limit = '%s'" % memory_limit.replace("'", ""))
        mb = _limit_mb(memory_limit)
        if not threads and mb is not None:
            threads = max(1, min(os.cpu_count() or 1, int(mb // MB_PER_THREAD)))
    if threads:
        con.execute("SET threads = %d" % int(threads))
    con.execute("SET temp_directory = '%s'" % (temp_dir or tempfile.gettempdir()).replace("'", "''"))
    con.execute("SET preserve_insertion_order = false")
    return con


def _arrow(rel) -> pa.Table:
    """The result as an Arrow table (DuckDB 1.x names it arrow, 2.x to_arrow_table)."""
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    t = fetch()
    # DuckDB sums integers into 128 bits: back to int64 (an error if one does not fit)
    for i, f in enumerate(t.schema):
        if pa.types.is_decimal(f.type) and f.type.scale == 0:
            t = t.set_column(i, f.name, t.column(i).cast(pa.int64()))
    return t


def _events_view(con, pattern: str) -> None:
    con.execute("CREATE OR REPLACE VIEW events AS SELECT * FROM read_parquet('%s', hive_partitioning = true, "
                "hive_types = {'rank': INTEGER})" % pattern.replace("'", "''"))


def run_per_rank(pattern: str, sql: str, memory_limit: Optional[str] = None,
                 threads: Optional[int] = None) -> pa.Table:
    """One report's per-rank query over the files matching pattern."""
    con = _connect(memory_limit, threads)
    try:
        _events_view(con, pattern)
        return _arrow(con.sql(sql))
    finally:
        con.close()


def _combine(name: str, rows: pa.Table):
    con = _connect()
    try:
        con.register("r", rows)
        return _arrow(con.sql(_reports.combine_sql(name)))
    finally:
        con.close()


def check_dataset(path: str) -> List[int]:
    """The dataset's ranks; an error when path holds none."""
    if not os.path.isdir(os.path.join(path, "events")):
        raise FileNotFoundError("%s holds no dataset (no events/ directory): convert traces into it with "
                                "`devtrace convert --to parquet TRACE... -o %s`" % (path, path))
    ranks = []
    for d in sorted(glob.glob(os.path.join(path, "events", "rank=*"))):
        if glob.glob(os.path.join(d, "*.parquet")):
            ranks.append(int(os.path.basename(d)[5:]))
    if not ranks:
        raise FileNotFoundError("%s/events holds no Parquet files" % path)
    return sorted(ranks)


class Dask:
    """A Dask client: to the scheduler at address, or to a local cluster of
    `workers` processes that lives as long as this object."""

    def __init__(self, address: Optional[str] = None, workers: int = 2):
        from dask.distributed import Client, LocalCluster
        self.cluster = None
        if address:
            self.client = Client(address)
        else:
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)

    def per_rank(self, path: str, ranks: List[int], sql: str, memory_limit: Optional[str]) -> pa.Table:
        futures = [self.client.submit(run_per_rank, _events_glob(path, r), sql, memory_limit, 1, pure=False)
                   for r in ranks]
        tables = [t for t in self.client.gather(futures) if t.num_rows]
        if not tables:
            return self.client.submit(run_per_rank, _events_glob(path, ranks[0]), sql, memory_limit, 1).result()
        return pa.concat_tables(tables)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def report(path: str, name: str, engine: str = "duckdb", hta: bool = False, dask: Optional[Dask] = None,
           scheduler: Optional[str] = None, memory_limit: Optional[str] = None,
           threads: Optional[int] = None) -> pa.Table:
    if name not in _reports.REPORTS:
        raise ValueError("unknown report %r; the reports: %s" % (name, ", ".join(_reports.names())))
    if engine not in ENGINES:
        raise ValueError("unknown engine %r; the engines: %s" % (engine, ", ".join(ENGINES)))
    ranks = check_dataset(path)
    sql = _reports.per_rank_sql(name, hta)
    if engine == "duckdb":
        rows = run_per_rank(_events_glob(path), sql, memory_limit, threads)
    else:
        own = dask is None
        client = dask or Dask(scheduler)
        try:
            rows = client.per_rank(path, ranks, sql, memory_limit)
        finally:
            if own:
                client.close()
    return _combine(name, rows)


def launch_events(path: str, hta: bool = False) -> pa.Table:
    check_dataset(path)
    return run_per_rank(_events_glob(path), _reports.launch_events_sql(hta))
