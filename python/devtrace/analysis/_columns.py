"""libdevtrace_columns through ctypes (src/columns/dt_columns.h), and the
conversion of traces to a Parquet dataset one batch of rows at a time."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COL_ABI = 3
ROWS = 65536
DT_COL_STEPS = 1  # dt_columns.h


class _Batch(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_size_t), ("first_index", ctypes.c_uint64),
                ("part_min", ctypes.c_int32), ("part_max", ctypes.c_int32), ("flows", ctypes.c_size_t),
                ("array", ctypes.c_void_p)]


_SINK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Batch))


def _library_candidates() -> List[str]:
    env = os.environ.get("DEVTRACE_COLUMNS_LIBRARY")
    paths = [env] if env else []
    package = Path(__file__).resolve().parent.parent
    paths.append(str(package / "_native" / "lib" / "libdevtrace_columns.so"))
    lib = os.environ.get("DEVTRACE_LIBRARY")
    if lib:
        paths.append(str(Path(lib).resolve().parent / "libdevtrace_columns.so"))
    found = ctypes.util.find_library("devtrace_columns")
    if found:
        paths.append(found)
    return paths


_lib = None


def library() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _library_candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    else:
        raise ImportError("libdevtrace_columns not found; tried: " + "; ".join(tried) +
                          ". Install the package with pip, or set DEVTRACE_COLUMNS_LIBRARY")
    lib.dt_col_abi.restype = ctypes.c_int
    if lib.dt_col_abi() != COL_ABI:
        raise ImportError("libdevtrace_columns at %s has batch layout %d, this package reads %d"
                          % (path, lib.dt_col_abi(), COL_ABI))
    lib.dt_col_read.restype = ctypes.c_int
    lib.dt_col_read.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, _SINK, ctypes.c_void_p,
                                ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.dt_col_free.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


# ---- the dataset's schema ------------------------------------------------

_DICT = pa.dictionary(pa.int32(), pa.string())

# The columns of libdevtrace_columns' batches (dt_columns.h, DT_COL_C_*), in order.
BATCH_SCHEMA = pa.schema([
    ("index", pa.int64(), False), ("ph", _DICT, False), ("cat", _DICT, False), ("kind", _DICT, False),
    ("name", _DICT, False), ("pid", pa.int64()), ("tid", pa.int64()), ("thread", _DICT),
    ("ts", pa.int64()), ("dur", pa.int64()), ("device", pa.int64()), ("stream", pa.int64()),
    ("correlation", pa.int64()), ("external_id", pa.int64()), ("bytes", pa.int64()),
    ("grid_x", pa.int32()), ("grid_y", pa.int32()), ("grid_z", pa.int32()),
    ("block_x", pa.int32()), ("block_y", pa.int32()), ("block_z", pa.int32()),
    ("collective", _DICT), ("process_group", _DICT), ("label", _DICT),
    ("wait_stream", pa.int64()), ("wait_correlation", pa.int64()), ("allocated", pa.int64()), ("step", pa.int64()),
    ("flow_id", pa.int64()), ("part", pa.int32(), False), ("flow", pa.uint8(), False),
])
EVENT_COLUMNS = BATCH_SCHEMA.names[:BATCH_SCHEMA.get_field_index("step") + 1]
FLOW_COLUMNS = ["flow_id", "ph", "cat", "name", "pid", "tid", "ts", "index"]
EVENTS_SCHEMA = pa.schema([BATCH_SCHEMA.field(n) for n in EVENT_COLUMNS])
FLOWS_SCHEMA = pa.schema([BATCH_SCHEMA.field(n) for n in FLOW_COLUMNS])

# How each column is stored: positions, times, ids and sizes delta-encoded
# (near-sorted or unique: a dictionary would only be tried and dropped), the
# others dictionary-encoded (few distinct values).
_DELTA = ("index", "ts", "dur", "correlation", "external_id", "bytes", "flow_id", "wait_correlation", "allocated")


def _writer_options(schema: pa.Schema) -> dict:
    delta = [n for n in schema.names if n in _DELTA]
    return {"compression": "zstd", "use_dictionary": [n for n in schema.names if n not in delta],
            "column_encoding": {n: "DELTA_BINARY_PACKED" for n in delta}}


class _Writers:
    """One Parquet file per rank found in the trace (a merged trace holds
    several), written under temporary names until the ranks are known."""

    def __init__(self, out: Path, stem: str, row_group: int):
        self.out, self.stem, self.row_group = out, stem, row_group
        self.files: Dict[int, Dict[str, object]] = {}

    def _writer(self, part: int, table: str, schema: pa.Schema) -> pq.ParquetWriter:
        entry = self.files.setdefault(part, {})
        if table not in entry:
            path = self.out / (".%s.%s.%d.parquet.tmp" % (self.stem, table, part))
            entry[table] = (pq.ParquetWriter(path, schema, **_writer_options(schema)), path)
        return entry[table][0]

    def write(self, part: int, table: str, data: pa.RecordBatch) -> None:
        if data.num_rows:
            self._writer(part, table, data.schema).write_batch(data, row_group_size=self.row_group)

    def close(self) -> None:
        for entry in self.files.values():
            for writer, _ in entry.values():
                writer.close()

    def discard(self) -> None:
        self.close()
        for entry in self.files.values():
            for _, path in entry.values():
                Path(path).unlink(missing_ok=True)

    def place(self, ranks: Dict[int, int]) -> Dict[int, List[str]]:
        """Moves each part's files to TABLE/rank=R/STEM.parquet."""
        placed: Dict[int, List[str]] = {}
        for part, entry in self.files.items():
            rank = ranks[part]
            for table, (_, path) in entry.items():
                dest = self.out / table / ("rank=%d" % rank) / (self.stem + ".parquet")
                if dest.exists():
                    raise FileExistsError("%s exists: two traces give rank %d the same name" % (dest, rank))
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, dest)
                placed.setdefault(rank, []).append(str(dest))
        return placed


def _values(column: pa.Array, dtype) -> np.ndarray:
    """A column without nulls as a numpy view of its values' buffer (not
    Array.to_numpy, which may import pandas: half a second)."""
    return np.frombuffer(column.buffers()[1], dtype=dtype, count=len(column) + column.offset)[column.offset:]


def _mask(keep: np.ndarray) -> pa.Array:
    """A boolean Arrow array of keep, from its bits (pa.array would import
    pandas)."""
    return pa.Array.from_buffers(pa.bool_(), len(keep), [None, pa.py_buffer(np.packbits(keep, bitorder="little"))])


def _split(batch: pa.RecordBatch, b: _Batch):
    """The batch's events and flows, by part (rank of a merged trace): the
    batch itself, without a copy, in the common case of one part and no
    flows."""
    events, flows = batch.select(EVENT_COLUMNS), batch.select(FLOW_COLUMNS)
    if b.flows == 0 and b.part_min == b.part_max:
        return [(b.part_min, "events", events)]
    out = []
    flow = _values(batch.column("flow"), np.uint8).astype(bool)
    part = _values(batch.column("part"), np.int32)
    for p in ([b.part_min] if b.part_min == b.part_max else np.unique(part)):
        mine = part == p
        for table, data, keep in (("events", events, mine & ~flow), ("flows", flows, mine & flow)):
            if keep.all():
                out.append((int(p), table, data))
            elif keep.any():
                out.append((int(p), table, data.filter(_mask(keep))))
    return out


def convert_one(path: str, out: Path, stem: str, rows: int = ROWS, steps: bool = True) -> dict:
    """Converts one trace: its events and flows under out, rank by rank.
    Returns what it wrote and the trace's metadata. A thread writes each
    batch while the reader fills the next (both outside Python's lock)."""
    lib = library()
    writers = _Writers(out, stem, rows)
    parts_seen: Dict[int, int] = {}
    failure: List[BaseException] = []
    writing = ThreadPoolExecutor(max_workers=1)
    pending: list = []

    def write(items) -> None:
        for p, table, data in items:
            writers.write(p, table, data)

    def sink(_user, batch_ptr):
        try:
            b = batch_ptr.contents
            items = _split(pa.RecordBatch._import_from_c(b.array, BATCH_SCHEMA), b)
            for p, table, data in items:
                if table == "events":
                    parts_seen[p] = parts_seen.get(p, 0) + data.num_rows
            if pending:
                pending.pop().result()
            pending.append(writing.submit(write, items))
            return 0
        except BaseException as e:  # noqa: B902 - handed back after the C call returns
            failure.append(e)
            return 1

    callback = _SINK(sink)
    meta_ptr = ctypes.c_void_p()
    err = ctypes.create_string_buffer(1024)
    try:
        rc = lib.dt_col_read(os.fsencode(path), rows, DT_COL_STEPS if steps else 0, callback, None,
                             ctypes.byref(meta_ptr), err, len(err))
        if pending and not failure:
            pending.pop().result()
    except BaseException:
        writing.shutdown(wait=True)
        writers.discard()
        raise
    finally:
        writing.shutdown(wait=True)
    meta = {}
    if meta_ptr.value:
        meta = json.loads(ctypes.string_at(meta_ptr.value).decode("utf-8", "replace"))
        lib.dt_col_free(meta_ptr)
    if failure:
        writers.discard()
        raise failure[0]
    if rc != 0:
        writers.discard()
        raise ValueError("%s: %s" % (path, err.value.decode("utf-8", "replace")))
    writers.close()
    meta["parts"] = parts_seen
    return {"writers": writers, "meta": meta}


_STEM_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def _stem(path: str, taken: set) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".json", ".pftrace"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    base = _STEM_BAD.sub("_", name) or "trace"
    stem, k = base, 1
    while stem in taken:
        k += 1
        stem = "%s-%d" % (base, k)
    taken.add(stem)
    return stem


TRACES_SCHEMA = pa.schema([
    ("rank", pa.int32()), ("rank_from", pa.string()), ("trace", pa.string()), ("file", pa.string()),
    ("host", pa.string()), ("backend", pa.string()), ("vendor", pa.string()), ("events", pa.int64()),
    ("bytes", pa.int64()), ("lost", pa.int64()), ("loss", pa.string()), ("clock", pa.string()),
    ("window_start", pa.int64()), ("window_end", pa.int64()), ("distributed_info", pa.string()),
    ("metadata", pa.string()),
])


def convert(traces: Sequence[str], out: str, rows: int = ROWS, steps: bool = True,
            jobs: Optional[int] = None) -> dict:
    """Converts traces (devtrace's, torch.profiler's, merged) to a Parquet
    dataset in the directory out (created; it must hold no dataset yet):
    events/rank=R/TRACE.parquet, flows/rank=R/TRACE.parquet and
    traces.parquet (one row per trace and rank: host, backend, losses, clock
    fit, capture window, distributedInfo). steps=False leaves the step
    column null and reads each trace once instead of twice. jobs traces are
    converted at a time (default: one per CPU, at most 8). A trace's rank is its
    distributedInfo's, a merged trace's ranks are those merge gave its
    processes, and traces naming no rank take their place in the list.
    Returns {"ranks": [...], "events": N, "negative": [(trace, events with a
    negative duration, the traceEvents index of the first), ...]}."""
    outdir = Path(out)
    if (outdir / "traces.parquet").exists() or (outdir / "events").exists():
        raise FileExistsError("%s already holds a dataset; convert into a new directory" % out)
    if not traces:
        raise ValueError("no trace to convert")
    outdir.mkdir(parents=True, exist_ok=True)
    for path in traces:
        if not os.path.isfile(path):
            raise FileNotFoundError("%s: no such trace" % path)
    taken: set = set()
    stems = [_stem(path, taken) for path in traces]
    jobs = max(1, min(len(traces), jobs or min(os.cpu_count() or 1, 8)))
    done = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(convert_one, path, outdir, stem, rows, steps) for path, stem in zip(traces, stems)]
        failure = None
        for path, f in zip(traces, futures):
            try:
                done.append((path, f.result()))
            except BaseException as e:  # noqa: B902 - the first failure, once every trace has stopped
                failure = failure or e
                for g in futures:
                    g.cancel()
    try:
        if failure:
            raise failure
        rows_out = _assign_ranks(done)
    except BaseException:
        for _, r in done:
            r["writers"].discard()
        raise
    pq.write_table(_table(rows_out, TRACES_SCHEMA), outdir / "traces.parquet")
    negative = [(path, r["meta"]["negativeDurations"], r["meta"].get("firstNegativeDuration", 0))
                for path, r in done if r["meta"].get("negativeDurations")]
    return {"ranks": sorted({r["rank"] for r in rows_out}), "events": int(sum(r["events"] for r in rows_out)),
            "negative": negative}


def _table(rows: List[dict], schema: pa.Schema) -> pa.Table:
    """rows as a table of schema, through Arrow's JSON reader: pa.array and
    Table.from_pylist import pandas (half a second) to look for its types."""
    import pyarrow.json as pj
    text = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    if not rows:
        return schema.empty_table()
    return pj.read_json(pa.BufferReader(text), parse_options=pj.ParseOptions(explicit_schema=schema))


def _assign_ranks(done) -> List[dict]:
    claimed: Dict[int, str] = {}
    rows_out = []
    unranked = []
    for path, r in done:
        meta = r["meta"]
        parts = meta["parts"] or {0: 0}
        info = meta.get("distributedInfo") or {}
        if max(parts) > 0 or len(parts) > 1:
            mapping, source = {p: p for p in parts}, "merged"
        elif "rank" in info:
            mapping, source = {p: int(info["rank"]) for p in parts}, "distributedInfo"
        else:
            unranked.append((path, r))
            continue
        for p, rank in mapping.items():
            if rank in claimed:
                raise ValueError("%s and %s both hold rank %d" % (claimed[rank], path, rank))
            claimed[rank] = path
        r["mapping"], r["source"] = mapping, source
    nxt = 0
    for path, r in unranked:
        while nxt in claimed:
            nxt += 1
        claimed[nxt] = path
        r["mapping"], r["source"] = {p: nxt for p in (r["meta"]["parts"] or {0: 0})}, "order"
    for path, r in done:
        placed = r["writers"].place(r["mapping"])
        meta = r["meta"]
        loss = meta.get("loss") or {}
        for part, rank in sorted(r["mapping"].items()):
            rows_out.append({
                "rank": rank, "rank_from": r["source"], "trace": os.path.abspath(path),
                "file": ";".join(sorted(placed.get(rank, []))),
                "host": meta.get("host") or (meta.get("distributedInfo") or {}).get("host"),
                "backend": meta.get("backend"), "vendor": meta.get("vendor"),
                "events": meta["parts"].get(part, 0), "bytes": meta.get("bytes"),
                "lost": sum(loss.values()) if r["source"] != "merged" or part == 0 else None,
                "loss": json.dumps(loss), "clock": json.dumps(meta.get("clock")),
                "window_start": meta.get("windowStartNs"), "window_end": meta.get("windowEndNs"),
                "distributed_info": json.dumps(meta.get("distributedInfo")),
                "metadata": json.dumps(meta),
            })
    return rows_out
