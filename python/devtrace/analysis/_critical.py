"""The critical path of each rank's steps: the chain of host operators,
launch calls, device work and synchronisations that decides how long a step
takes (docs/analysis.md, "Critical path").

A step's events make a graph, as HTA's CriticalPathAnalysis builds it: each
operator, launch call and device work is two nodes (its start and end);
edges are the time between them: a host thread's operators in their nesting
order, zero-length dependencies from one top-level operator to the next, a
launch call to its work when the stream was empty (launch delay), work to the
next work on its stream (the gap between them), and zero-length edges for
synchronisations (a stream or context sync: the stream's last work to the
call's end; an event sync: the work recorded before the event to the call's
end; a stream wait: that work to the next work launched on the waiting
stream). The longest path through it is the critical path; each of its
edges is attributed to an event, and classified by what bounds it.

This is Python over one rank's rows at a time (a graph is no SQL): DuckDB
runs it over every rank, a Dask task over its share of the ranks, each with
the rows the same query gives (per_rank), so both give the same rows."""

from __future__ import annotations

import gc
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

from . import _reports

# What bounds an edge of the path (HTA's names)
CPU = "cpu_bound"
COMPUTE = "gpu_compute_bound"
COMMUNICATION = "gpu_communication_bound"
KERNEL_GAP = "gpu_kernel_kernel_overhead"
LAUNCH = "gpu_kernel_launch_overhead"
BOUNDS = (CPU, COMPUTE, COMMUNICATION, KERNEL_GAP, LAUNCH)

# edge types
OPERATOR, DEPENDENCY, LAUNCH_DELAY, KERNEL_KERNEL, SYNC = range(5)

# Calls that block the host until the device is done: their own time is
# waiting, which the synchronisation edge into their end stands for (HTA's
# list, CUDA's runtime). devtrace's view takes every vendor's by its name:
# any call whose name says it synchronises (cuStreamSynchronize,
# hipDeviceSynchronize, topsStreamSynchronize, aclrtSynchronizeStream, ...),
# queries an event, or copies synchronously (a runtime's or the driver's
# Memcpy).
HTA_BLOCKING = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize",
                "cudaMemcpy", "cudaMemcpyAsync")
BLOCKING_RE = re.compile(r"Synchroni[sz]e|EventQuery|^[a-z]+Memcpy(Async)?$")
# A device-wide synchronisation call, which waits for every stream of the
# device: where the trace holds no record of it (a Context Sync), devtrace's
# view ties the end of each stream's last work before it to its end.
DEVICE_SYNC_RE = re.compile(r"(Device|Ctx|Context)Synchroni[sz]e$|SynchronizeDevice$")


def _blocking(name: str, hta: bool) -> bool:
    return name in HTA_BLOCKING if hta else bool(BLOCKING_RE.search(name))


# the calls that record an event and make a stream wait for one
EVENT_RECORD = ("cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord", "cuEventRecordWithFlags",
                "hipEventRecord")
STREAM_WAIT = ("cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent")
# The synchronisation records, by what they wait for: Kineto's names (HTA's),
# and in devtrace's view also CUPTI's, which devtrace's traces carry.
HTA_SYNCS = {"Stream Sync": "stream", "Context Sync": "context", "Event Sync": "event",
             "Stream Wait Event": "wait"}
SYNCS = dict(HTA_SYNCS, **{"Stream Synchronize": "stream", "Context Synchronize": "context",
                           "Event Synchronize": "event"})
# HTA's communication kernels (its NCCL_KERNEL_RE); devtrace's view uses its classes
HTA_COMM = re.compile(r"^ncclDevKernel|^ncclKernel")

WHOLE_TRACE = None

# The rows of one rank, as the per-rank function reads them: its events of
# the kinds the graph uses, with the queue length of each launch call (after
# it) and of each device work (after its start) on the work's stream.
EVENTS = """
WITH {queue}
, ev AS (
  SELECT index, kind, name, pid, tid, thread, {start} AS s, {end} AS e, stream,
         coalesce(device, pid) AS device, correlation, wait_stream, wait_correlation
  FROM events
  WHERE rank = {rank} AND ph = 'X' AND ts IS NOT NULL AND dur IS NOT NULL AND dur >= 0
    AND kind IN ('cpu_op', 'runtime', 'driver', 'user_annotation', 'python_function', 'kernel', 'memcpy',
                 'memset', 'sync'{other}))
SELECT ev.*, q.queue_length FROM ev
LEFT JOIN (SELECT index, min(queue_length) AS queue_length FROM queue WHERE rank = {rank} GROUP BY index) q
  USING (index)
ORDER BY s, index"""


class _Event:
    __slots__ = ("index", "kind", "name", "pid", "tid", "thread", "s", "e", "stream", "device", "correlation",
                 "wait_stream", "wait_correlation", "queue", "call", "work", "host", "is_work", "is_sync", "sync")

    def __init__(self, row):
        (self.index, self.kind, self.name, self.pid, self.tid, self.thread, self.s, self.e, self.stream,
         self.device, self.correlation, self.wait_stream, self.wait_correlation, self.queue) = row
        self.call = None  # device work, sync: its launch call
        self.work = None  # a call: its device work or sync


class _Graph:
    """Nodes (a start and an end per event) and edges, in insertion order
    (which decides between paths of equal length, as in networkx, whose
    DiGraph HTA builds)."""

    def __init__(self):
        self.ts: List[int] = []
        self.ev: List[_Event] = []
        self.is_start: List[bool] = []
        self.start: Dict[int, int] = {}
        self.end: Dict[int, int] = {}
        self.edges: Dict[Tuple[int, int], list] = {}  # (u, v) -> [weight, type, attributed event or None]

    def add_node(self, e: _Event, ts: int, is_start: bool) -> None:
        (self.start if is_start else self.end)[e.index] = len(self.ts)
        self.ts.append(ts)
        self.ev.append(e)
        self.is_start.append(is_start)

    def edge(self, u: int, v: int, kind: int, zero: bool = False, attributed: Optional[_Event] = None) -> None:
        weight = 0 if kind in (DEPENDENCY, SYNC) or zero else self.ts[v] - self.ts[u]
        self.edges[(u, v)] = [weight, kind, attributed]


def _is_comm(name: str, hta: bool) -> bool:
    if hta:
        return HTA_COMM.match(name) is not None
    return re.match(_reports.COMM_NAME_RE, name, re.I) is not None


def _bound(kind: int, e: Optional[_Event], hta: bool) -> Optional[str]:
    if kind == KERNEL_KERNEL:
        return KERNEL_GAP
    if kind == LAUNCH_DELAY:
        return LAUNCH
    if kind != OPERATOR:
        return None
    if e is None or not e.is_work:  # host time (between siblings whose parent the window lacks: no one's)
        return CPU
    return COMMUNICATION if _is_comm(e.name, hta) else COMPUTE


def _natural_bound(e: _Event, hta: bool) -> str:
    return (COMMUNICATION if _is_comm(e.name, hta) else COMPUTE) if e.is_work else CPU


class _Rank:
    """One rank's events, linked: launch calls and their work, the events
    recorded and waited for; indexed for the windows' clipping."""

    def __init__(self, rows: Sequence[tuple], hta: bool):
        self.hta = hta
        self.events = [_Event(r) for r in rows]  # in start order
        by_corr: Dict[int, _Event] = {}
        for e in self.events:
            if hta:
                # HTA's device events: a stream it reads, other than -1 (its syncs are handled by name)
                e.is_work = e.kind != "sync" and e.stream is not None and e.stream != -1 and \
                    e.kind in ("kernel", "memcpy", "memset", "other")
            else:
                e.is_work = e.kind in ("kernel", "memcpy", "memset")
            e.is_sync = e.kind == "sync"
            e.sync = (HTA_SYNCS if hta else SYNCS).get(e.name) if e.is_sync else None
            e.host = not e.is_work and not e.is_sync
            if e.kind in ("runtime", "driver") and e.correlation is not None and e.correlation not in by_corr:
                by_corr[e.correlation] = e
        for e in self.events:
            if (e.is_work or e.is_sync) and e.correlation is not None:
                c = by_corr.get(e.correlation)
                if c is not None:
                    e.call = c
                    if c.work is None:
                        c.work = e
        # launches: calls whose work ran on a stream, in the order they started
        self.launches = [c for c in self.events if c.kind in ("runtime", "driver") and c.work is not None
                         and c.work.is_work and self._is_launch(c)]
        # what a window clips, by the time it is clipped by: host events by
        # their start; work and syncs on a stream by their launch call's
        # start; the syncs on no stream (Event Sync, Context Sync) by theirs
        self.host = [e for e in self.events if e.host]
        self.host_s = [e.s for e in self.host]
        launched = [e for e in self.events if (e.is_work or (e.is_sync and e.stream is not None and e.stream != -1))
                    and e.call is not None]
        launched.sort(key=lambda e: (e.call.s, e.index))
        self.launched, self.launched_s = launched, [e.call.s for e in launched]
        self.unstreamed = [e for e in self.events if e.is_sync and (e.stream is None or e.stream == -1)]
        self.unstreamed_s = [e.s for e in self.unstreamed]
        self.stream_waits = [e for e in self.events if e.sync == "wait"]
        self._records = None
        self._next = None

    def _is_launch(self, c: _Event) -> bool:
        return not self.hta or c.name in _reports.HTA_LAUNCH_NAMES

    @staticmethod
    def _key(e: _Event):
        return (e.device, e.stream)

    def recorded_work(self, corr: int) -> Optional[_Event]:
        """The work an event recorded by the call of correlation corr waits
        for: the last launched on the event's stream before the record."""
        if self._records is None:
            stream_of: Dict[int, tuple] = {}
            for e in self.events:
                if e.is_sync and e.wait_stream is not None and e.wait_stream > -1 and e.wait_correlation is not None:
                    stream_of.setdefault(e.wait_correlation, (e.device, e.wait_stream))
            by_stream: Dict[tuple, List[_Event]] = defaultdict(list)
            for c in self.launches:
                by_stream[self._key(c.work)].append(c)
            starts = {k: [c.s for c in v] for k, v in by_stream.items()}
            self._records = {}
            for r in self.events:
                if r.name in EVENT_RECORD and r.correlation in stream_of:
                    key = stream_of[r.correlation]
                    i = bisect_right(starts.get(key, []), r.s)  # the last launch at or before the record
                    self._records[r.correlation] = by_stream[key][i - 1].work if i else None
        return self._records.get(corr)

    def next_launch(self, wait_call: _Event, stream_key) -> Optional[_Event]:
        """The work of the first launch on the waiting call's thread and the
        stream that waits, at or after the call."""
        if self._next is None:
            self._next = defaultdict(list)
            for c in self.launches:
                self._next[(c.pid, c.tid, c.thread) + self._key(c.work)].append(c)
            self._next_s = {k: [c.s for c in v] for k, v in self._next.items()}
        key = (wait_call.pid, wait_call.tid, wait_call.thread) + stream_key
        i = bisect_left(self._next_s.get(key, []), wait_call.s)
        return self._next[key][i].work if i < len(self._next.get(key, [])) else None

    def clip(self, ws: int, we: int):
        """The window's host events (starting in it and lasting) and device
        items (work and syncs whose launch call does, or syncs on no stream
        that do; every stream wait), as HTA clips a window."""
        host = [e for e in self.host[bisect_left(self.host_s, ws):bisect_right(self.host_s, we)] if e.e > e.s]
        device = [e for e in self.launched[bisect_left(self.launched_s, ws):bisect_right(self.launched_s, we)]
                  if e.call.e > e.call.s]
        device += [e for e in self.unstreamed[bisect_left(self.unstreamed_s, ws):bisect_right(self.unstreamed_s, we)]
                   if e.e > e.s]
        inside = {e.index for e in device}
        device += [e for e in self.stream_waits if e.index not in inside]
        return host, device


def _windows(rank_events: List[_Event], window: Optional[str]) -> List[Tuple[Optional[int], int, int]]:
    """(step, start, end) of each window: the rank's ProfilerStep#N ranges
    (the host's), or the instances of a host range named window (numbered
    from 0 in start order), else the whole trace."""
    out = []
    if window:
        inst = sorted((e.s, e.e, e.index) for e in rank_events if e.host and e.name == window)
        out = [(i, s, e) for i, (s, e, _) in enumerate(inst)]
    else:
        for e in rank_events:
            if e.host and e.kind != "gpu_user_annotation":
                m = _reports.STEP_RE.match(e.name)
                if m:
                    out.append((int(m.group(1)), e.s, e.e))
        out.sort(key=lambda w: (w[1], w[0]))
    if not out and not window and rank_events:
        out = [(WHOLE_TRACE, min(e.s for e in rank_events), max(e.e for e in rank_events))]
    return out


def _nest(thread_events: List[_Event]):
    """The host thread's events as HTA's call stack nests them: children in
    order, by (time, an end before a start at the same time, the longer
    starting first and the shorter ending first)."""
    marks = []
    for e in thread_events:
        d = e.e - e.s
        marks.append((e.s, 1, -d, e.index, e))
        marks.append((e.e, 0, d, -e.index, e))
    marks.sort(key=lambda m: m[:4])
    children: Dict[Optional[int], List[_Event]] = defaultdict(list)
    parent: Dict[int, Optional[int]] = {}
    stack: List[_Event] = []
    for _, start, _, _, e in marks:
        if start:
            p = stack[-1].index if stack else None
            children[p].append(e)
            parent[e.index] = p
            stack.append(e)
        elif stack:
            stack.pop()
    return children, parent


def _host_edges(g: _Graph, thread_events: List[_Event], names: Dict[int, _Event], blocking) -> None:
    """Edges along one host thread: HTA's depth-first walk of its call
    stack, through the operators and calls (the events with nodes)."""
    children, parent = _nest(thread_events)
    state = {"last": None, "high": None, "depth": 0, "parent": None}

    def enter(e: _Event) -> None:
        s = g.start.get(e.index)
        if s is None:
            return
        if state["depth"] == 0 and state["high"] is not None:
            g.edge(state["high"], s, DEPENDENCY)
        state["depth"] += 1
        if state["last"] is not None:
            _attributed_edge(g, state["last"], s, OPERATOR, names, state["parent"])
        state["last"] = s
        state["parent"] = parent.get(e.index)

    def leave(e: _Event) -> None:
        s = g.start.get(e.index)
        if s is None:
            return
        end = g.end[e.index]
        state["depth"] -= 1
        if state["last"] is not None:
            _attributed_edge(g, state["last"], end, OPERATOR, names, state["parent"], zero=blocking(e.name))
        if state["depth"] == 0:
            state["last"] = None
            state["high"] = end
        else:
            state["last"] = end
            state["parent"] = parent.get(e.index)

    # depth first, iteratively: (event, children left)
    todo = [(None, iter(children.get(None, [])))]
    while todo:
        e, it = todo[-1]
        child = next(it, None)
        if child is None:
            todo.pop()
            if e is not None:
                leave(e)
            continue
        enter(child)
        todo.append((child, iter(children.get(child.index, []))))


def _attributed_edge(g: _Graph, u: int, v: int, kind: int, names: Dict[int, _Event], parent: Optional[int],
                     zero: bool = False) -> None:
    """An edge and the event it is attributed to (HTA's rule): from a start,
    that event; from an end to an end, the ending one; from an end to a
    start, the parent of the two (the time between siblings)."""
    if kind == KERNEL_KERNEL or g.is_start[u]:
        ev = g.ev[u]
    elif not g.is_start[v]:
        ev = g.ev[v]
    else:
        ev = names.get(parent) if parent is not None else None
    g.edge(u, v, kind, zero=zero, attributed=ev)


def _device_edges(g: _Graph, rank: _Rank, items: List[_Event]) -> Optional[str]:
    """Edges of the window's device work and synchronisations (records, and
    device-wide synchronisation calls of which the trace has no record), in
    start order (a synchronisation at its end). Returns why the graph cannot
    be trusted, if it cannot."""
    def sort_key(e: _Event):
        return (e.s if e.is_work else e.e, e.index)

    last: Dict[tuple, int] = {}
    kernel_sync: Dict[int, _Event] = {}
    for x in sorted(items, key=sort_key):
        if x.host:  # a device-wide synchronisation call without its record: every stream's last work
            for n in list(last.values()):
                g.edge(n, g.end[x.index], SYNC)
            continue
        if x.is_sync:
            call = x.call
            if x.sync in ("wait", "event"):
                if x.wait_correlation is None or x.wait_correlation < 0:
                    continue
                src = rank.recorded_work(x.wait_correlation)
                if src is None:
                    continue
                if x.sync == "wait":
                    if call is None:
                        continue
                    dest = rank.next_launch(call, (x.device, x.stream))
                    if dest is not None:
                        kernel_sync[dest.index] = src
                else:
                    end = g.end.get(src.index)
                    if end is not None and call is not None and call.index in g.end:
                        g.edge(end, g.end[call.index], SYNC)
                continue
            if call is None or call.index not in g.end:
                continue
            if x.sync is None:
                continue
            if x.sync == "context":
                sources = [n for k, n in last.items() if k[0] == x.device or x.device is None]
            else:
                sources = [last[(x.device, x.stream)]] if (x.device, x.stream) in last else []
            for n in sources:
                g.edge(n, g.end[call.index], SYNC)
            continue
        start, end = g.start[x.index], g.end[x.index]
        g.edge(start, end, OPERATOR, attributed=x)
        key = rank._key(x)
        src = kernel_sync.pop(x.index, None)
        src_end = g.end.get(src.index) if src is not None else None
        if src_end is not None:
            if g.ev[src_end].stream == x.stream and g.ev[src_end].device == x.device:
                return "a synchronisation between work on the same stream"
            g.edge(src_end, start, SYNC)
        call = x.call
        prev = last.get(key)
        if call is not None and call.queue == 1 and x.queue == 0 and \
                (prev is None or g.ts[prev] < call.s) and (src_end is None or g.ts[src_end] < call.s) and \
                call.index in g.start:
            g.edge(g.start[call.index], start, LAUNCH_DELAY, attributed=x)
        elif prev is not None and (src_end is None or g.ts[src_end] < g.ts[prev]):
            g.edge(prev, start, KERNEL_KERNEL, attributed=g.ev[prev])
        last[key] = end
    return None


def _longest(g: _Graph):
    """The longest path (node ids) and each node's longest distance from a
    source and to a sink; None for a graph with a cycle. Ties go as in
    networkx's dag_longest_path over Kahn's topological generations."""
    n = len(g.ts)
    succ: List[List[int]] = [[] for _ in range(n)]
    pred: List[List[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for (u, v) in g.edges:
        succ[u].append(v)
        pred[v].append(u)
        indeg[v] += 1
    order = []
    gen = [v for v in range(n) if indeg[v] == 0]
    while gen:
        order.extend(gen)
        nxt = []
        for u in gen:
            for v in succ[u]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    nxt.append(v)
        gen = nxt
    if len(order) != n:
        return None
    dist = [0] * n
    back = list(range(n))
    for v in order:
        best, arg = None, v
        for u in pred[v]:
            d = dist[u] + g.edges[(u, v)][0]
            if best is None or d > best:
                best, arg = d, u
        if best is not None and best >= 0:
            dist[v], back[v] = best, arg
    to_sink = [0] * n
    for u in reversed(order):
        best = 0
        for v in succ[u]:
            d = to_sink[v] + g.edges[(u, v)][0]
            if d > best:
                best = d
        to_sink[u] = best
    if not n:
        return [], dist, to_sink
    v, best = order[0], dist[order[0]]
    for x in order:  # the first node of the longest distance, in topological order
        if dist[x] > best:
            v, best = x, dist[x]
    path = [v]
    while back[v] != v:
        v = back[v]
        path.append(v)
    path.reverse()
    return path, dist, to_sink


def window_path(rank: _Rank, ws: int, we: int) -> dict:
    """The graph and critical path of the window [ws, we] of a rank."""
    hta = rank.hta
    host, device = rank.clip(ws, we)
    g = _Graph()
    names: Dict[int, _Event] = {e.index: e for e in host}
    node_events = [e for e in host if e.kind in ("cpu_op", "runtime", "driver")]
    node_events += [e for e in device if (e.is_work or (e.is_sync and e.stream is not None and e.stream != -1))
                    and e.call is not None]
    # nodes in time order (a start before an end at one time), as HTA numbers them
    marks = sorted([(e.s, 0, e.index, e) for e in node_events] + [(e.e, 1, e.index, e) for e in node_events],
                   key=lambda m: m[:3])
    for ts, end, _, e in marks:
        g.add_node(e, ts, not end)

    def blocking(name):
        return _blocking(name, hta)

    threads: Dict[tuple, List[_Event]] = defaultdict(list)
    for e in host:
        threads[(e.pid, e.tid, e.thread)].append(e)
    for key in sorted(threads, key=lambda k: tuple((v is None, v if v is not None else 0) for v in k)):
        _host_edges(g, threads[key], names, blocking)
    # device-wide synchronisation calls of which the trace holds no record
    waits = [] if hta else [e for e in host if e.kind in ("runtime", "driver") and DEVICE_SYNC_RE.search(e.name)
                            and not (e.work is not None and e.work.is_sync)]
    failed = _device_edges(g, rank, [e for e in device if e.call is not None or e.is_sync] + waits)
    negative = 0
    for edge in g.edges.values():
        if edge[0] < 0:  # an end rounded before its child's: no time
            edge[0] = 0
            negative += 1
    res = None if failed else _longest(g)
    if res is None:
        return {"graph": g, "failed": failed or "the graph has a cycle"}
    path, dist, to_sink = res
    return {"graph": g, "path": path, "dist": dist, "to_sink": to_sink, "failed": None, "negative": negative}


def _window_rows(rank_no: int, step, ws: int, we: int, r: dict, hta: bool):
    """A window's segments (an edge of the path with time, attributed to an
    event) and events (each operator, call and device work: on the path or
    not, with its slack: how much later it could end without lengthening
    the path)."""
    g = r["graph"]
    path, dist, to_sink = r["path"], r["dist"], r["to_sink"]
    length = dist[path[-1]] if path else 0
    on_path = {g.ev[v].index for v in path}
    segments = []
    for u, v in zip(path, path[1:]):
        weight, kind, ev = g.edges[(u, v)]
        if weight > 0:
            segments.append((ev, _bound(kind, ev, hta), g.ts[u], g.ts[v], weight))
    events = [(e, e.index in on_path, max(0, length - (dist[node] + to_sink[node])))
              for node, e in enumerate(g.ev) if g.is_start[node]]
    return segments, events


def rank_rows(rank_no: int, rows: Sequence[tuple], hta: bool, window: Optional[str]) -> List[tuple]:
    """The rows (_reports.CRITICAL_COLUMNS) of every window of one rank: per
    name and bound, the time on the path and the events, those on the path
    and the least slack of the others; a window whose graph cannot be
    trusted is one row saying why."""
    rank = _Rank(rows, hta)
    out: List[tuple] = []
    for step, ws, we in _windows(rank.events, window):
        r = window_path(rank, ws, we)
        if r["failed"]:
            out.append((rank_no, step, ws, we, None, None, 0, 0, 0, None, r["failed"]))
            continue
        segments, events = _window_rows(rank_no, step, ws, we, r, hta)
        agg: Dict[tuple, list] = {}
        for ev, bound, _, _, weight in segments:
            agg.setdefault((ev.name if ev else None, bound), [0, 0, 0, None])[0] += weight
        for e, on, slack in events:
            a = agg.setdefault((e.name, _natural_bound(e, hta)), [0, 0, 0, None])
            a[1] += 1
            if on:
                a[2] += 1
            elif a[3] is None or slack < a[3]:
                a[3] = slack
        out.extend((rank_no, step, ws, we, name, bound, a[0], a[1], a[2], a[3], None)
                   for (name, bound), a in agg.items())
    return out


def rank_events(rank_no: int, rows: Sequence[tuple], hta: bool, window: Optional[str],
                only: Optional[tuple] = None) -> List[tuple]:
    """The rows (_reports.CRITICAL_EVENT_COLUMNS) of every window of one
    rank (only: the (rank, step) of one), each segment of its path and each
    event."""
    rank = _Rank(rows, hta)
    out: List[tuple] = []
    for step, ws, we in _windows(rank.events, window):
        if only is not None and (only[0] != rank_no or only[1] != step):
            continue
        r = window_path(rank, ws, we)
        if r["failed"]:
            out.append((rank_no, step, "failed", ws, we, None, None, None, None, None, None, None, None,
                        r["failed"]))
            continue
        segments, events = _window_rows(rank_no, step, ws, we, r, hta)
        out.extend((rank_no, step, "segment", ws, we, ev.index if ev else None, ev.name if ev else None, bound, True,
                    s, e, weight, 0, None) for ev, bound, s, e, weight in segments)
        out.extend((rank_no, step, "event", ws, we, e.index, e.name, _natural_bound(e, hta), on, e.s, e.e, 0, slack,
                    None) for e, on, slack in events)
    return out


class _NoCycleCollection:
    """The cyclic garbage collector held off while a rank's graph is built:
    it would scan the millions of objects a large rank makes, over and over
    (three times the work); what is left is collected afterwards."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def _ranks(con, only: Optional[tuple]) -> List[int]:
    ranks = [r for (r,) in con.execute("SELECT DISTINCT rank FROM events ORDER BY rank").fetchall()]
    return [r for r in ranks if only is None or r == only[0]]


def per_rank(con, hta: bool, params: dict) -> Tuple[List[str], List[tuple]]:
    """The critical paths' rows of every rank of `events` (DuckDB's whole
    dataset, or a Dask task's share of it)."""
    out: List[tuple] = []
    for rank in _ranks(con, None):
        rows = con.execute(events_sql(rank, hta)).fetchall()
        with _NoCycleCollection():
            out.extend(rank_rows(rank, rows, hta, params.get("window")))
    return [c for c, _ in _reports.CRITICAL_COLUMNS], out


def per_rank_events(con, hta: bool, params: dict) -> Tuple[List[str], List[tuple]]:
    """The paths' segments and every event's place (on the path, slack) of
    every rank of `events`, or of the one window params["only"] names."""
    only = params.get("only")
    only = tuple(only) if only is not None else None
    out: List[tuple] = []
    for rank in _ranks(con, only):
        rows = con.execute(events_sql(rank, hta)).fetchall()
        with _NoCycleCollection():
            out.extend(rank_events(rank, rows, hta, params.get("window"), only))
    return [c for c, _ in _reports.CRITICAL_EVENT_COLUMNS], out


def events_sql(rank: int, hta: bool) -> str:
    return EVENTS.format(queue=_reports.queue_cte(hta), start=_reports.HTA_START if hta else "ts",
                         end=_reports.HTA_END if hta else "ts + dur", rank=int(rank),
                         other=", 'other'" if hta else "")
