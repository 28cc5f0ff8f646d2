"""Running the reports: DuckDB over the Parquet files (the default), or a
Dask cluster whose workers each run the report's per-rank query over a share
of the ranks' files. Both run the same SQL (_reports.py) and hand their
per-rank rows to the same combining query, so they give the same results.

Only what a caller uses is imported: the command's DuckDB reports print
from DuckDB's rows and never import pyarrow; the Python API returns Arrow
tables."""

from __future__ import annotations

import glob
import json
import os
import re
import tempfile
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from . import _reports

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

ENGINES = ("duckdb", "dask")


class DatasetError(ValueError):
    """A dataset that cannot be read: what is wrong, and where."""


def _events_glob(path: str, rank: Optional[int] = None) -> str:
    part = "*" if rank is None else "rank=%d" % rank
    return os.path.join(path, "events", part, "*.parquet")


# DuckDB's rule of thumb: each thread needs about 125 MB to run any query
# (duckdb.org/docs/guides/performance/how_to_tune_workloads); under a
# smaller limit a sort or join can fail rather than spill.
MB_PER_THREAD = 125
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?)B?\s*$", re.I)


def limit_mb(memory_limit: str) -> Optional[float]:
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
        mb = limit_mb(memory_limit)
        if mb is None:
            raise ValueError("memory limit %r is not a size (e.g. 512MB, 2GB)" % memory_limit)
        con.execute("SET memory_limit = '%s'" % memory_limit.replace("'", ""))
        if not threads:
            threads = max(1, min(os.cpu_count() or 1, int(mb // MB_PER_THREAD)))
    if threads:
        con.execute("SET threads = %d" % int(threads))
    con.execute("SET temp_directory = '%s'" % (temp_dir or tempfile.gettempdir()).replace("'", "''"))
    con.execute("SET preserve_insertion_order = false")
    return con


def _arrow(rel) -> "pa.Table":
    """The result as an Arrow table (DuckDB 1.x names it arrow, 2.x to_arrow_table)."""
    import pyarrow as pa
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    t = fetch()
    # DuckDB sums integers into 128 bits: back to int64 (an error if one does not fit)
    for i, f in enumerate(t.schema):
        if pa.types.is_decimal(f.type) and f.type.scale == 0:
            t = t.set_column(i, f.name, t.column(i).cast(pa.int64()))
    return t


class Rows:
    """A report's result as DuckDB gives it: column names and rows of Python
    values (what the command prints, without pyarrow)."""

    def __init__(self, columns: Sequence[str], rows: List[tuple]):
        self.columns = list(columns)
        self.rows = rows

    @classmethod
    def of(cls, rel) -> "Rows":
        return cls(rel.columns, rel.fetchall())

    def to_pandas(self):
        import pandas as pd
        return pd.DataFrame.from_records(self.rows, columns=self.columns)


def _events_view(con, pattern) -> None:
    """`events`: the dataset's events over the files of pattern (a glob or a
    list of files), with the events whose duration is negative left out
    (the conversion counts them: notes())."""
    if isinstance(pattern, str):
        files = "'%s'" % pattern.replace("'", "''")
    else:
        files = "[%s]" % ", ".join("'%s'" % p.replace("'", "''") for p in pattern)
    con.execute("CREATE OR REPLACE VIEW events AS SELECT * FROM read_parquet(%s, hive_partitioning = true, "
                "hive_types = {'rank': INTEGER}) WHERE dur IS NULL OR dur >= 0" % files)


_DUCKDB_FIRST_LINE = re.compile(r"^[A-Za-z ]*(Error|Exception): ")


def _duckdb_error(e: BaseException, path: str) -> DatasetError:
    """DuckDB's error as one line that says where: a file it names, else the
    dataset."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = _DUCKDB_FIRST_LINE.sub("", text)
    if "Referenced column" in text or "Binder" in type(e).__name__ or "not found in FROM clause" in text:
        return DatasetError("%s: not a dataset devtrace convert wrote (%s)%s"
                            % (path, text, _schema_culprit(path)))
    m = re.search(r"""["']([^"']+\.parquet)["']""", text)
    if m:
        what = text.replace(m.group(0), "").replace("  ", " ").strip(" :")
        return DatasetError("%s: not a Parquet file DuckDB can read (%s)" % (m.group(1), what))
    return DatasetError("%s: %s" % (path, text))


def _schema_culprit(path: str) -> str:
    """The first events file whose columns are not the dataset's, named."""
    try:
        import duckdb
        con = duckdb.connect()
        want = {"kind", "name", "ts", "dur", "stream", "correlation"}
        for f in sorted(glob.glob(_events_glob(path))):
            cols = {r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet('%s')" % f.replace("'", "''"))
                    .fetchall()}
            if not want <= cols:
                return "; %s lacks the columns %s" % (f, ", ".join(sorted(want - cols)))
    except Exception:  # noqa: BLE001 - only to name the file; the error stands without it
        pass
    return ""


class Py:
    """A report's per-rank work done in Python (_reports.Report.py): the
    function "module:function", called with a DuckDB connection over the
    ranks' `events`, the view and the parameters; it returns (columns,
    rows)."""

    def __init__(self, function: str, hta: bool, params: dict):
        self.function, self.hta, self.params = function, hta, params

    def run(self, con):
        import importlib
        module, name = self.function.split(":")
        return getattr(importlib.import_module(module), name)(con, self.hta, self.params)


def _per_rank_work(name: str, hta: bool, params: Optional[dict]):
    rep = _reports.REPORTS[name]
    if rep.py:
        return Py(rep.py, hta, _reports.params_of(params))
    return _reports.per_rank_sql(name, hta, params)


def run_per_rank(pattern, work, memory_limit: Optional[str] = None, threads: Optional[int] = None,
                 path: Optional[str] = None):
    """One report's per-rank work (its query, or Py) over the files of
    pattern (a glob or a list of files): an Arrow table, or Py's (columns,
    rows); a Dask task's work."""
    import duckdb
    where = path or str(pattern)
    con = _connect(memory_limit, threads)
    try:
        _events_view(con, pattern)
        if isinstance(work, Py):
            return work.run(con)
        return _arrow(con.sql(work))
    except duckdb.Error as e:
        raise _duckdb_error(e, where) from None
    finally:
        con.close()


def _task(files: List[str], work, memory_limit: Optional[str], path: str):
    """A Dask task: (the per-rank rows of files, None), or (None, what is
    wrong with them), handed back rather than raised, which a worker would
    log as a failure of its own."""
    try:
        return run_per_rank(files, work, memory_limit, 1, path), None
    except (OSError, ValueError) as e:
        return None, str(e)


def load_rows(con, table: str, columns, rows: List[tuple]) -> None:
    """rows (Python values of columns' (name, DuckDB type)) as DuckDB's
    temporary table, without pyarrow: each column a list, unnested side by
    side."""
    con.execute("CREATE OR REPLACE TEMP TABLE %s (%s)" % (table, ", ".join('"%s" %s' % c for c in columns)))
    if rows:
        values = [list(v) for v in zip(*rows)]
        con.execute("INSERT INTO %s SELECT %s" % (table, ", ".join(
            "unnest($%d::%s[])" % (i + 1, t) for i, (_, t) in enumerate(columns))), values)


def check_dataset(path: str) -> List[int]:
    """The dataset's ranks; an error when path holds none."""
    if not os.path.isdir(os.path.join(path, "events")):
        raise FileNotFoundError("%s holds no dataset (no events/ directory): convert traces into it with "
                                "`devtrace convert --to parquet TRACE... -o %s`" % (path, path))
    ranks = []
    for d in sorted(glob.glob(os.path.join(path, "events", "rank=*"))):
        try:
            rank = int(os.path.basename(d)[5:])
        except ValueError:
            raise DatasetError("%s: not a rank's directory (rank=N)" % d) from None
        if glob.glob(os.path.join(d, "*.parquet")):
            ranks.append(rank)
    if not ranks:
        raise FileNotFoundError("%s/events holds no Parquet files" % path)
    return sorted(ranks)


# ---- Dask: tasks sized by work ------------------------------------------

# A task's share of the dataset, in events (rows): many small ranks go to
# one task (each task pays for a DuckDB connection and a query's planning,
# tens of milliseconds, which a million rows' work dwarfs), and the work is
# cut into enough tasks for every worker (TASKS_PER_WORKER each, so that a
# slow one does not hold the rest back). A rank larger than a task's share
# is a task of its own: the per-rank queries need a rank's rows together
# (covered time, gaps, medians); its reports run side by side instead
# (Dask.per_rank_many).
MIN_TASK_ROWS = 1_000_000
TASKS_PER_WORKER = 2


def plan_tasks(sizes: Dict[int, int], workers: int, least: Optional[int] = None) -> List[List[int]]:
    """The ranks of each task: consecutive ranks whose sizes (events) add up
    to about a task's share, total / (workers x TASKS_PER_WORKER), but at
    least `least` (MIN_TASK_ROWS)."""
    least = MIN_TASK_ROWS if least is None else least
    total = sum(sizes.values())
    share = max(least, total // max(1, workers * TASKS_PER_WORKER))
    tasks: List[List[int]] = []
    cur: List[int] = []
    cur_size = 0
    for rank in sorted(sizes):
        if cur and cur_size + sizes[rank] > share:
            tasks.append(cur)
            cur, cur_size = [], 0
        cur.append(rank)
        cur_size += sizes[rank]
    if cur:
        tasks.append(cur)
    return tasks


def rank_sizes(path: str, ranks: List[int], con=None) -> Dict[int, int]:
    """The events of each rank, from traces.parquet (what the conversion
    wrote); where it does not say, the rank's Parquet bytes stand in, at the
    bytes an event takes in the dataset's files on average."""
    import duckdb
    f = os.path.join(path, "traces.parquet")
    sizes: Dict[int, int] = {}
    if os.path.exists(f):
        own = con is None
        con = con or duckdb.connect()
        try:
            sizes = {int(r): int(n) for r, n in con.execute(
                "SELECT rank, sum(events) FROM read_parquet('%s') GROUP BY rank" % f.replace("'", "''")).fetchall()
                if n is not None}
        except duckdb.Error:
            sizes = {}
        finally:
            if own:
                con.close()
    if all(r in sizes for r in ranks):
        return {r: sizes[r] for r in ranks}
    files = _rank_files(path, ranks)
    return {r: sum(os.path.getsize(f) for f in fs) // 16 for r, fs in files.items()}


def _rank_files(path: str, ranks: List[int]) -> Dict[int, List[str]]:
    return {r: sorted(glob.glob(_events_glob(path, r))) for r in ranks}


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

    def workers(self) -> int:
        """The threads the cluster's workers run tasks on."""
        info = self.client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))

    def per_rank_many(self, path: str, ranks: List[int], works: Dict[str, object],
                      memory_limit: Optional[str]) -> Dict[str, object]:
        """Each report's per-rank rows (works: name -> per-rank query, or
        Py): an Arrow table, or Py's (columns, rows) over every task. Every
        report's tasks are submitted at once: the reports of one large rank
        run side by side on as many workers."""
        files = _rank_files(path, ranks)
        tasks = plan_tasks(rank_sizes(path, ranks), self.workers())
        futures = {n: [self.client.submit(_task, [f for r in task for f in files[r]], work, memory_limit, path,
                                          pure=False) for task in tasks] for n, work in works.items()}
        out = {}
        for n, fs in futures.items():
            results = self.client.gather(fs)
            failed = [err for _, err in results if err]
            if failed:
                self.client.cancel([f for more in futures.values() for f in more])
                raise DatasetError(failed[0])
            if isinstance(works[n], Py):
                out[n] = (results[0][0][0], [row for (_, rows), _ in results for row in rows])
                continue
            import pyarrow as pa
            tables = [t for t, _ in results]
            out[n] = pa.concat_tables([t for t in tables if t.num_rows] or tables[:1])
        return out

    def per_rank(self, path: str, ranks: List[int], sql: str, memory_limit: Optional[str]) -> "pa.Table":
        return self.per_rank_many(path, ranks, {"report": sql}, memory_limit)["report"]

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- the reports -----------------------------------------------------------

def _check_args(name: str, engine: str) -> None:
    if name not in _reports.REPORTS:
        raise ValueError("unknown report %r; the reports: %s" % (name, ", ".join(_reports.names())))
    if engine not in ENGINES:
        raise ValueError("unknown engine %r; the engines: %s" % (engine, ", ".join(ENGINES)))




def _per_rank_rows(con, path: str, ranks: List[int], names: Sequence[str], engine: str, hta: bool,
                   client: Optional[Dask], memory_limit: Optional[str], params: Optional[dict]):
    """Each report's per-rank work, once per distinct work (reports of one
    Python function share its run): name -> the key of its rows in the
    returned dict (work -> rows: None on DuckDB's SQL, whose rows stay in
    DuckDB; an Arrow table or (columns, rows) otherwise)."""
    works = {n: _per_rank_work(n, hta, params) for n in names}
    key_of = {n: (w.function if isinstance(w, Py) else w) for n, w in works.items()}
    distinct = {}
    for n, w in works.items():
        distinct.setdefault(key_of[n], (n, w))
    rows: Dict[str, object] = {}
    if client is not None:
        got = client.per_rank_many(path, ranks, {n: w for n, w in distinct.values()}, memory_limit)
        rows = {key_of[n]: got[n] for n, _ in distinct.values()}
    else:
        for key, (n, w) in distinct.items():
            rows[key] = w.run(con) if isinstance(w, Py) else None
    return works, key_of, rows


def run_reports(path: str, names: Sequence[str], engine: str = "duckdb", hta: bool = False,
                dask: Optional[Dask] = None, scheduler: Optional[str] = None, memory_limit: Optional[str] = None,
                threads: Optional[int] = None, arrow: bool = False, con=None,
                params: Optional[dict] = None) -> Dict[str, object]:
    """Each report of names over the dataset at path: Rows, or Arrow tables
    with arrow. One DuckDB connection (con, else one of its own) runs them
    all, and on DuckDB keeps the per-rank rows for the combining query; on
    Dask it runs the combining query over the workers' rows. params: the
    reports' parameters (_reports.DEFAULTS)."""
    import duckdb
    for n in names:
        _check_args(n, engine)
    path = os.path.abspath(path)
    ranks = check_dataset(path)
    out: Dict[str, object] = {}
    own_con = con is None
    if own_con:
        con = _connect(memory_limit if engine == "duckdb" else None, threads if engine == "duckdb" else None)
    own = engine == "dask" and dask is None
    client = (dask or Dask(scheduler)) if engine == "dask" else None
    try:
        if engine == "duckdb":
            _events_view(con, _events_glob(path))
        works, key_of, per_rank = _per_rank_rows(con, path, ranks, names, engine, hta, client, memory_limit,
                                                 params)
        for n in names:
            got = per_rank[key_of[n]]
            registered = False
            if isinstance(works[n], Py):
                load_rows(con, "r", _reports.REPORTS[n].columns, got[1])
            elif client is None:
                # the per-rank rows stay in DuckDB, as the table the combining query reads
                con.execute("CREATE OR REPLACE TEMP TABLE r AS " + works[n])
            else:
                con.execute("DROP TABLE IF EXISTS r")
                con.register("r", got)
                registered = True
            res = con.sql(_reports.combine_sql(n))
            out[n] = _arrow(res) if arrow else Rows.of(res)
            if registered:
                con.unregister("r")
    except duckdb.Error as e:
        raise _duckdb_error(e, path) from None
    finally:
        if own:
            client.close()
        if own_con:
            con.close()
    return out


def report(path: str, name: str, engine: str = "duckdb", hta: bool = False, dask: Optional[Dask] = None,
           scheduler: Optional[str] = None, memory_limit: Optional[str] = None,
           threads: Optional[int] = None, **params) -> "pa.Table":
    """One report over the dataset at path, as an Arrow table; params: the
    report's parameters (window, op, min_len, queue_limit)."""
    return run_reports(path, [name], engine=engine, hta=hta, dask=dask, scheduler=scheduler,
                       memory_limit=memory_limit, threads=threads, arrow=True, params=params)[name]


def launch_events(path: str, hta: bool = False) -> "pa.Table":
    path = os.path.abspath(path)
    check_dataset(path)
    return run_per_rank(_events_glob(path), _reports.launch_events_sql(hta), path=path)


def notes(path: str, con=None) -> List[Tuple[int, str, dict]]:
    """What the conversion counted that the reports leave out or cannot
    read, per trace: (rank, trace, {negativeDurations, firstNegativeDuration,
    unclassifiedCategories}) for each trace with any. Read from
    traces.parquet's metadata with DuckDB (on con, else a connection of its
    own)."""
    import duckdb
    f = os.path.join(path, "traces.parquet")
    if not os.path.exists(f):
        return []
    own = con is None
    con = con or duckdb.connect()
    try:
        rows = con.execute("SELECT rank, trace, metadata FROM read_parquet('%s') ORDER BY rank"
                           % f.replace("'", "''")).fetchall()
    except duckdb.Error as e:
        raise _duckdb_error(e, f) from None
    finally:
        if own:
            con.close()
    out = []
    seen = set()
    for rank, trace, meta in rows:
        if trace in seen:  # a merged trace: one row per rank, one metadata
            continue
        seen.add(trace)
        m = json.loads(meta or "{}")
        keep = {k: m[k] for k in ("negativeDurations", "firstNegativeDuration", "unclassifiedCategories")
                if m.get(k)}
        if keep:
            out.append((rank, trace, keep))
    return out


def run_diff(base: str, test: str, engine: str = "duckdb", hta: bool = False, dask: Optional[Dask] = None,
             scheduler: Optional[str] = None, memory_limit: Optional[str] = None, threads: Optional[int] = None,
             base_steps: Optional[Tuple[int, int]] = None, test_steps: Optional[Tuple[int, int]] = None,
             threshold: float = 0.05, arrow: bool = False, con=None):
    """What changed from the dataset base to test (they may be one dataset,
    with two step ranges): _reports.DIFF's rows, as Rows or an Arrow table.
    Each dataset's per-rank rows come from DuckDB or Dask, as a report's."""
    import duckdb
    if engine not in ENGINES:
        raise ValueError("unknown engine %r; the engines: %s" % (engine, ", ".join(ENGINES)))
    own_con = con is None
    if own_con:
        con = _connect(memory_limit if engine == "duckdb" else None, threads if engine == "duckdb" else None)
    own = engine == "dask" and dask is None
    client = (dask or Dask(scheduler)) if engine == "dask" else None
    try:
        for table, path, steps in (("rb", base, base_steps), ("rt", test, test_steps)):
            path = os.path.abspath(path)
            ranks = check_dataset(path)
            sql = _reports.per_rank_sql("diff_items", hta, {"steps": steps})
            try:
                if client is None:
                    _events_view(con, _events_glob(path))
                    con.execute("CREATE OR REPLACE TEMP TABLE %s AS %s" % (table, sql))
                else:
                    got = client.per_rank_many(path, ranks, {"diff_items": sql}, memory_limit)["diff_items"]
                    con.register("_" + table, got)
                    con.execute("CREATE OR REPLACE TEMP TABLE %s AS SELECT * FROM _%s" % (table, table))
                    con.unregister("_" + table)
            except duckdb.Error as e:
                raise _duckdb_error(e, path) from None
        res = con.sql(_reports.diff_sql(threshold, base_steps, test_steps))
        return _arrow(res) if arrow else Rows.of(res)
    finally:
        if own:
            client.close()
        if own_con:
            con.close()


def diff(base: str, test: str, **kw) -> "pa.Table":
    """What changed from the dataset base to test, as an Arrow table
    (run_diff's keywords: engine, hta, dask, base_steps, test_steps,
    threshold)."""
    return run_diff(base, test, arrow=True, **kw)
