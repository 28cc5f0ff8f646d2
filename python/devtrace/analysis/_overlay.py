"""The analyses written back into the traces they came from, for Perfetto
and chrome://tracing to show: each event on a critical path gets args
critical = 1 (as HTA's overlaid traces mark them), and counter tracks (ph C)
are added: the critical path (which of its bounds it is in, over time), the
queue length of each stream, the memory in use on each device and the
bandwidth of each kind of copy. Every other event is kept as written,
numbers to the last digit."""

from __future__ import annotations

import gzip
import json
import os
import re
import secrets
from collections import defaultdict
from decimal import Decimal
from typing import Dict, List, Optional

from . import _critical, _engine

SERIES = ["critical_events", "queue_series", "memory_series", "bandwidth_series"]


def _load(path: str):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rt", encoding="utf-8") as f:
        # numbers as written: a float would round epoch microseconds with decimals
        return json.load(f, parse_float=Decimal), gz


def _dump(doc, path: str, gz: bool) -> None:
    """doc as JSON, its Decimals as written (the encoder knows no Decimal:
    each is a marked string, unquoted afterwards)."""
    mark = "\0" + secrets.token_hex(8)

    def default(o):
        if isinstance(o, Decimal):
            return mark + str(o)
        raise TypeError("%r is not JSON" % (o,))
    text = json.dumps(doc, default=default, separators=(",", ":"))
    text = re.sub(r'"%s([-+0-9.eE]+)"' % re.escape(json.dumps(mark)[1:-1]), r"\1", text)
    tmp = path + ".tmp"
    opener = gzip.open if gz else open
    with opener(tmp, "wt", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _us(ns: int):
    """ns as the trace's microseconds, exactly (three decimals)."""
    return Decimal(int(ns)).scaleb(-3)


def _counter(name: str, row, ts_ns: int, args: dict) -> dict:
    pid, tid = row
    return {"ph": "C", "name": name, "pid": pid, "tid": tid, "ts": _us(ts_ns), "args": args}


def _rows(con, path: str) -> dict:
    """Where each counter goes, the row (pid, tid) of: each stream's and
    device's first work, each device's first [memory] event, each rank's
    host thread with the most operators."""
    glob = _engine._events_glob(os.path.abspath(path))
    src = "read_parquet('%s', hive_partitioning = true, hive_types = {'rank': INTEGER})" % glob.replace("'", "''")
    row = "arg_min(pid, index), arg_min(coalesce(CAST(tid AS VARCHAR), thread), index), arg_min(tid IS NULL, index)"
    out = {"stream": {}, "device": {}, "memory": {}, "host": {}}

    def fix(pid, tid, text):  # a string tid stays a string
        return pid, (tid if text else int(tid))
    for rank, device, stream, pid, tid, text in con.execute(
            "SELECT rank, coalesce(device, pid), stream, %s FROM %s WHERE kind IN ('kernel', 'memcpy', 'memset') "
            "AND pid IS NOT NULL AND (tid IS NOT NULL OR thread IS NOT NULL) GROUP BY ALL ORDER BY ALL"
            % (row, src)).fetchall():
        out["stream"][(rank, device, stream)] = fix(pid, tid, text)
        out["device"].setdefault((rank, device), fix(pid, tid, text))
    for rank, device, pid, tid, text in con.execute(
            "SELECT rank, coalesce(device, -1), %s FROM %s WHERE kind = 'cpu_instant' AND name = '[memory]' "
            "AND pid IS NOT NULL AND (tid IS NOT NULL OR thread IS NOT NULL) GROUP BY ALL" % (row, src)).fetchall():
        out["memory"][(rank, device)] = fix(pid, tid, text)
    for rank, pid, tid, text in con.execute(
            "SELECT rank, pid, t, text FROM (SELECT rank, pid, coalesce(CAST(tid AS VARCHAR), thread) AS t, "
            "tid IS NULL AS text, count(*) AS n FROM %s WHERE kind IN ('cpu_op', 'runtime', 'driver', "
            "'user_annotation') AND pid IS NOT NULL AND (tid IS NOT NULL OR thread IS NOT NULL) GROUP BY 1, 2, 3, 4) "
            "QUALIFY row_number() OVER (PARTITION BY rank ORDER BY n DESC, pid, t) = 1" % src).fetchall():
        out["host"][rank] = fix(pid, tid, text)
    return out


def counters(results: Dict[str, object], pids: dict) -> Dict[int, List[dict]]:
    """The counter events of each rank."""
    out: Dict[int, List[dict]] = defaultdict(list)

    def rows(name):
        t = results[name]
        return [dict(zip(t.columns, r)) for r in t.rows]

    for r in rows("queue_series"):
        pid = pids["stream"].get((r["rank"], r["device"], r["stream"]))
        if pid is not None:
            out[r["rank"]].append(_counter("Queue length (stream %s)" % r["stream"], pid, r["ts"],
                                           {"queue length": int(r["queue_length"])}))
    for r in rows("memory_series"):
        pid = pids["memory"].get((r["rank"], r["device"]))
        if pid is not None:
            what = "host" if r["device"] == -1 else "device %s" % r["device"]
            out[r["rank"]].append(_counter("Memory in use (%s)" % what, pid, r["ts"], {"bytes": int(r["in_use"])}))
    for r in rows("bandwidth_series"):
        pid = next((p for (rank, _), p in sorted(pids["device"].items()) if rank == r["rank"]), None)
        if pid is not None:
            out[r["rank"]].append(_counter("%s bandwidth" % r["type"], pid, r["ts"], {"GB/s": r["gbps"]}))
    # the critical path: 1 on the bound the path is in, 0 on the others
    zero = {b: 0 for b in _critical.BOUNDS}
    segments = defaultdict(list)
    for r in rows("critical_events"):
        if r["row"] == "segment":
            segments[(r["rank"], r["step"])].append(r)
    for (rank, _), segs in sorted(segments.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None, kv[0][1] or 0)):
        pid = pids["host"].get(rank)
        if pid is None:
            continue
        segs.sort(key=lambda s: (s["start_ns"], s["end_ns"]))
        for i, s in enumerate(segs):
            out[rank].append(_counter("Critical path", pid, s["start_ns"], dict(zero, **{s["bound_by"]: 1})))
            if i + 1 == len(segs) or segs[i + 1]["start_ns"] != s["end_ns"]:
                out[rank].append(_counter("Critical path", pid, s["end_ns"], dict(zero)))
    return out


def on_path(results: Dict[str, object]) -> Dict[int, set]:
    """The traceEvents indexes of each rank's events on a critical path."""
    t = results["critical_events"]
    c = {n: i for i, n in enumerate(t.columns)}
    out: Dict[int, set] = defaultdict(set)
    for r in t.rows:
        if r[c["row"]] == "event" and r[c["on_path"]]:
            out[r[c["rank"]]].add(r[c["index"]])
    return out


def _traces(con, dataset: str):
    """(trace, its ranks, its metadata) of each trace of the dataset."""
    return con.execute("SELECT trace, list(rank ORDER BY rank), first(metadata) FROM read_parquet('%s') "
                       "GROUP BY trace ORDER BY min(rank)"
                       % os.path.join(os.path.abspath(dataset), "traces.parquet").replace("'", "''")).fetchall()


def write_overlay(dataset: str, outdir: str, engine: str = "duckdb", hta: bool = False, dask=None, con=None,
                  params: Optional[dict] = None, memory_limit: Optional[str] = None) -> List[str]:
    """Writes each trace of the dataset again into outdir (same name and
    compression), with its critical path and counter tracks. Returns the
    paths written."""
    import duckdb
    own = con is None
    con = con or _engine._connect(memory_limit if engine == "duckdb" else None)
    try:
        results = _engine.run_reports(dataset, SERIES, engine=engine, hta=hta, dask=dask, memory_limit=memory_limit,
                                      con=con, params=params)
        try:
            pids = _rows(con, dataset)
            traces = _traces(con, dataset)
        except duckdb.Error as e:
            raise _engine._duckdb_error(e, dataset) from None
    finally:
        if own:
            con.close()
    marks, counts = on_path(results), counters(results, pids)
    os.makedirs(outdir, exist_ok=True)
    written = []
    for trace, ranks, meta in traces:
        fmt = json.loads(meta or "{}").get("format", "json")
        if fmt != "json":
            raise ValueError("%s: a %s trace; --overlay writes JSON traces (record or convert it as JSON)"
                             % (trace, fmt))
        dest = os.path.join(outdir, os.path.basename(trace))
        if os.path.abspath(dest) == os.path.abspath(trace):
            raise ValueError("%s: --overlay would write over the trace it reads; give another directory" % trace)
        try:
            doc, gz = _load(trace)
        except (OSError, ValueError) as e:
            raise ValueError("%s: cannot read the trace the dataset was converted from (%s)" % (trace, e)) from None
        events = doc.get("traceEvents") if isinstance(doc, dict) else None
        if not isinstance(events, list):
            raise ValueError("%s: no traceEvents" % trace)
        for rank in ranks:
            for i in marks.get(rank, ()):
                if 0 <= i < len(events) and isinstance(events[i], dict):
                    args = events[i].setdefault("args", {})
                    if isinstance(args, dict):
                        args["critical"] = 1
            events.extend(counts.get(rank, []))
        _dump(doc, dest, gz)
        written.append(dest)
    return written
