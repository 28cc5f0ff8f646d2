"""libdevtrace_columns through ctypes (src/columns/dt_columns.h), and the
conversion of traces to a Parquet dataset one batch of rows at a time."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COL_ABI = 1
ROWS = 65536

# dt_columns.h: DT_COL_V_*
V_TS, V_DUR, V_PID, V_TID, V_DEVICE, V_STREAM, V_CORR, V_EXT, V_BYTES, V_FLOW, V_GRID, V_BLOCK = (
    1 << i for i in range(12))
# DT_COL_D_*
D_NAME, D_CAT, D_PH, D_COLLECTIVE, D_GROUP, D_LABEL, D_THREAD, D_COUNT = range(8)
# enum dt_rd_cat (src/reader/dt_reader.h), in order
KINDS = ["other", "kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead",
         "user_annotation", "gpu_user_annotation", "trace", "cpu_op", "python_function", "ac2g",
         "cpu_instant"]
FLOW_PHASES = ("s", "t", "f")


class _Dict(ctypes.Structure):
    _fields_ = [("first_new", ctypes.c_size_t), ("count", ctypes.c_size_t),
                ("keys", ctypes.POINTER(ctypes.c_void_p)), ("lens", ctypes.POINTER(ctypes.c_size_t))]


_I64 = ctypes.POINTER(ctypes.c_int64)
_I32 = ctypes.POINTER(ctypes.c_int32)


class _Batch(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_size_t), ("first_index", ctypes.c_uint64),
                ("valid", ctypes.POINTER(ctypes.c_uint32)), ("kind", _I32), ("part", _I32),
                ("dict", _I32 * D_COUNT),
                ("ts", _I64), ("dur", _I64), ("pid", _I64), ("tid", _I64), ("device", _I64),
                ("stream", _I64), ("correlation", _I64), ("external_id", _I64), ("bytes", _I64),
                ("flow_id", _I64), ("grid", _I32), ("block", _I32),
                ("dicts", _Dict * D_COUNT)]


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
    lib.dt_col_read.argtypes = [ctypes.c_char_p, ctypes.c_size_t, _SINK, ctypes.c_void_p,
                                ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.dt_col_free.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


# ---- the dataset's schema ------------------------------------------------

_DICT = pa.dictionary(pa.int32(), pa.string())
_TRIPLE = pa.list_(pa.int32(), 3)

EVENTS_SCHEMA = pa.schema([
    ("index", pa.int64()), ("ph", _DICT), ("cat", _DICT), ("kind", _DICT), ("name", _DICT),
    ("pid", pa.int64()), ("tid", pa.int64()), ("thread", _DICT),
    ("ts", pa.int64()), ("dur", pa.int64()), ("device", pa.int64()), ("stream", pa.int64()),
    ("correlation", pa.int64()), ("external_id", pa.int64()), ("bytes", pa.int64()),
    ("grid", _TRIPLE), ("block", _TRIPLE), ("collective", _DICT), ("process_group", _DICT),
    ("label", _DICT),
])
FLOWS_SCHEMA = pa.schema([
    ("flow_id", pa.int64()), ("ph", _DICT), ("cat", _DICT), ("name", _DICT), ("pid", pa.int64()),
    ("tid", pa.int64()), ("ts", pa.int64()), ("index", pa.int64()),
])


class _Strings:
    """A dictionary's entries so far, gained batch by batch."""

    def __init__(self):
        self.keys: List[str] = []

    def extend(self, d: _Dict) -> None:
        for i in range(d.first_new, d.count):
            self.keys.append(ctypes.string_at(d.keys[i], d.lens[i]).decode("utf-8", "replace"))

    def column(self, codes: np.ndarray) -> pa.DictionaryArray:
        """The codes as a dictionary column holding only the entries they use."""
        present = codes >= 0
        used, inverse = np.unique(codes[present], return_inverse=True)
        local = np.full(len(codes), -1, dtype=np.int32)
        local[present] = inverse.astype(np.int32)
        values = pa.array([self.keys[i] for i in used], type=pa.string())
        return pa.DictionaryArray.from_arrays(_nullable(local, present), values)


def _nullable(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    """values as an Arrow array, null where valid is false (pa.array's mask
    goes through numpy's masked arrays, a hundred times slower)."""
    values = np.ascontiguousarray(values)
    if valid.all():
        return pa.array(values)
    bitmap = np.packbits(valid, bitorder="little")
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [pa.py_buffer(bitmap), pa.py_buffer(values)])


def _array(ptr, rows: int, dtype) -> np.ndarray:
    return np.ctypeslib.as_array(ptr, shape=(rows,)).astype(dtype, copy=True)


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
            entry[table] = (pq.ParquetWriter(path, schema, compression="zstd"), path)
        return entry[table][0]

    def write(self, part: int, table: str, data: pa.Table) -> None:
        if data.num_rows:
            self._writer(part, table, data.schema).write_table(data, row_group_size=self.row_group)

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


def _batch_tables(b: _Batch, strings: List[_Strings]):
    n = b.rows
    valid = _array(b.valid, n, np.uint32)
    part = _array(b.part, n, np.int32)
    codes = [_array(b.dict[d], n, np.int32) for d in range(D_COUNT)]

    def col(ptr, bit):
        return _nullable(_array(ptr, n, np.int64), (valid & bit) != 0)

    def triple(ptr, bit):
        flat = np.ctypeslib.as_array(ptr, shape=(3 * n,)).astype(np.int32, copy=True)
        mask = pa.array((valid & bit) == 0)
        return pa.FixedSizeListArray.from_arrays(pa.array(flat), 3, mask=mask)

    kinds = _array(b.kind, n, np.int32)
    kind = pa.DictionaryArray.from_arrays(pa.array(kinds), pa.array(KINDS))
    index = pa.array(np.arange(b.first_index, b.first_index + n, dtype=np.int64))
    ph = strings[D_PH].column(codes[D_PH])
    cat = strings[D_CAT].column(codes[D_CAT])
    name = strings[D_NAME].column(codes[D_NAME])
    pid, tid, ts = col(b.pid, V_PID), col(b.tid, V_TID), col(b.ts, V_TS)
    events = pa.Table.from_arrays([
        index, ph, cat, kind, name, pid, tid, strings[D_THREAD].column(codes[D_THREAD]),
        ts, col(b.dur, V_DUR), col(b.device, V_DEVICE), col(b.stream, V_STREAM),
        col(b.correlation, V_CORR), col(b.external_id, V_EXT), col(b.bytes, V_BYTES),
        triple(b.grid, V_GRID), triple(b.block, V_BLOCK),
        strings[D_COLLECTIVE].column(codes[D_COLLECTIVE]), strings[D_GROUP].column(codes[D_GROUP]),
        strings[D_LABEL].column(codes[D_LABEL]),
    ], schema=EVENTS_SCHEMA)
    flow_ids = col(b.flow_id, V_FLOW)
    phs = np.array([strings[D_PH].keys[c] if c >= 0 else "" for c in np.unique(codes[D_PH])])
    flow_codes = np.unique(codes[D_PH])[np.isin(phs, FLOW_PHASES)]
    is_flow = np.isin(codes[D_PH], flow_codes)
    flows = pa.Table.from_arrays([flow_ids, ph, cat, name, pid, tid, ts, index], schema=FLOWS_SCHEMA)
    return part, is_flow, events, flows


def _split(table: pa.Table, part: np.ndarray, keep: np.ndarray):
    """The rows of table where keep holds, by part."""
    if len(part) and keep.all() and (part == part[0]).all():
        return {int(part[0]): table}  # the common case: no copy
    out = {}
    for p in np.unique(part[keep]):
        out[int(p)] = table.filter(pa.array(keep & (part == p)))
    return out


def convert_one(path: str, out: Path, stem: str, rows: int = ROWS) -> dict:
    """Converts one trace: its events and flows under out, rank by rank.
    Returns what it wrote and the trace's metadata."""
    lib = library()
    strings = [_Strings() for _ in range(D_COUNT)]
    writers = _Writers(out, stem, rows)
    parts_seen: Dict[int, int] = {}
    failure: List[BaseException] = []

    def sink(_user, batch_ptr):
        try:
            b = batch_ptr.contents
            for d in range(D_COUNT):
                strings[d].extend(b.dicts[d])
            part, is_flow, events, flows = _batch_tables(b, strings)
            for p, t in _split(events, part, ~is_flow).items():
                writers.write(p, "events", t)
                parts_seen[p] = parts_seen.get(p, 0) + t.num_rows
            for p, t in _split(flows, part, is_flow).items():
                writers.write(p, "flows", t)
            return 0
        except BaseException as e:  # noqa: B902 - handed back after the C call returns
            failure.append(e)
            return 1

    callback = _SINK(sink)
    meta_ptr = ctypes.c_void_p()
    err = ctypes.create_string_buffer(1024)
    try:
        rc = lib.dt_col_read(os.fsencode(path), rows, callback, None, ctypes.byref(meta_ptr), err, len(err))
    except BaseException:
        writers.discard()
        raise
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
    for suffix in (".gz", ".json"):
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


def convert(traces: Sequence[str], out: str, rows: int = ROWS) -> dict:
    """Converts traces (devtrace's, torch.profiler's, merged) to a Parquet
    dataset in the directory out (created; it must hold no dataset yet):
    events/rank=R/TRACE.parquet, flows/rank=R/TRACE.parquet and
    traces.parquet (one row per trace and rank: host, backend, losses, clock
    fit, capture window, distributedInfo). A trace's rank is its
    distributedInfo's, a merged trace's ranks are those merge gave its
    processes, and traces naming no rank take their place in the list.
    Returns {"ranks": [...], "events": N}."""
    outdir = Path(out)
    if (outdir / "traces.parquet").exists() or (outdir / "events").exists():
        raise FileExistsError("%s already holds a dataset; convert into a new directory" % out)
    if not traces:
        raise ValueError("no trace to convert")
    outdir.mkdir(parents=True, exist_ok=True)
    done = []
    taken: set = set()
    try:
        for path in traces:
            if not os.path.isfile(path):
                raise FileNotFoundError("%s: no such trace" % path)
            done.append((path, convert_one(path, outdir, _stem(path, taken), rows)))
        rows_out = _assign_ranks(done)
    except BaseException:
        for _, r in done:
            r["writers"].discard()
        raise
    table = pa.Table.from_pylist(rows_out, schema=TRACES_SCHEMA)
    pq.write_table(table, outdir / "traces.parquet")
    return {"ranks": sorted({r["rank"] for r in rows_out}), "events": int(sum(r["events"] for r in rows_out))}


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
