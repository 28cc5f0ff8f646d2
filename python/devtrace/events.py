"""Recorded events: one typed object per event, or numpy columns for all of
them at once (millions of events, no Python object per event)."""

from __future__ import annotations

import ctypes
import enum
import functools
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import _native
from ._native import DT_TIMESTAMP_UNKNOWN, DtEvent

if TYPE_CHECKING:  # numpy is optional
    import numpy


class EventKind(enum.IntEnum):
    """dt_event_kind."""

    KERNEL = 1
    MEMCPY = 2
    MEMSET = 3
    RUNTIME = 4
    DRIVER = 5
    SYNC = 6
    OVERHEAD = 7
    RANGE = 8
    OP = 9
    COLLECTIVE = 10
    MEMORY = 11


class CopyKind(enum.IntEnum):
    """Direction of a memory copy (dt_copy_kind)."""

    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    DTOD = 3
    HTOH = 4
    PTOP = 5


class MemoryKind(enum.IntEnum):
    """Kind of memory a copy or fill touches (dt_memory_kind)."""

    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    DEVICE = 3
    ARRAY = 4
    MANAGED = 5


# The enums as the library declares them, or no import.
_native.refuse(_native._cdll, _native.abi.enum_differences(EventKind, "dt_event_kind", "DT_EVENT_") +
               _native.abi.enum_differences(CopyKind, "dt_copy_kind", "DT_COPY_") +
               _native.abi.enum_differences(MemoryKind, "dt_memory_kind", "DT_MEM_"))


@dataclass(slots=True)
class Event:
    """What every event has. Times are CLOCK_REALTIME nanoseconds since the
    epoch (the clock torch.profiler and Kineto use). `external_id` is None
    when the event has no External id, which is not the same as id 0."""

    kind: EventKind
    name: str
    start_ns: int
    end_ns: int
    correlation: int
    external_id: Optional[int]

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(slots=True)
class DeviceEvent(Event):
    """Work on a device: kernels, copies, fills, synchronisation, overhead."""

    device: int = 0
    stream: int = 0
    context: int = 0


@dataclass(slots=True)
class KernelEvent(DeviceEvent):
    grid: Tuple[int, int, int] = (0, 0, 0)
    block: Tuple[int, int, int] = (0, 0, 0)
    registers_per_thread: int = 0
    static_shared_memory: int = 0
    dynamic_shared_memory: int = 0
    queued_ns: Optional[int] = None
    submitted_ns: Optional[int] = None


@dataclass(slots=True)
class MemcpyEvent(DeviceEvent):
    bytes: int = 0
    copy_kind: CopyKind = CopyKind.UNKNOWN
    src_kind: MemoryKind = MemoryKind.UNKNOWN
    dst_kind: MemoryKind = MemoryKind.UNKNOWN
    src_device: int = 0
    dst_device: int = 0


@dataclass(slots=True)
class MemsetEvent(DeviceEvent):
    bytes: int = 0
    value: int = 0
    memory_kind: MemoryKind = MemoryKind.UNKNOWN


@dataclass(slots=True)
class CollectiveEvent(DeviceEvent):
    """A collective communication (all-reduce, all-gather, ...) as a device
    ran it; fields the vendor does not give are 0 or ""."""

    count: int = 0
    bytes: int = 0
    data_type: str = ""
    group: str = ""
    algorithm: str = ""
    bandwidth_gbps: float = 0.0


@dataclass(slots=True)
class MemoryEvent(DeviceEvent):
    """A device memory allocation or free (an instant: start_ns is when it
    happened); `bytes` is the block's size, 0 when the vendor does not say."""

    address: int = 0
    bytes: int = 0
    is_free: bool = False
    memory_kind: MemoryKind = MemoryKind.UNKNOWN


@dataclass(slots=True)
class HostEvent(Event):
    """Something a host thread did."""

    process: int = 0
    thread: int = 0


@dataclass(slots=True)
class ApiEvent(HostEvent):
    """A runtime or driver API call; `correlation` pairs it with the device
    activity it launched. `launch`: the call launches device work (by the
    vendor's callback id: CUDA 13's <<<>>> is __cudaLaunchKernel)."""

    cbid: int = 0
    return_code: int = 0
    launch: bool = False


@dataclass(slots=True)
class RangeEvent(HostEvent):
    """A user range (devtrace.range); its id is also its `external_id`."""

    range_id: int = 0
    parent_id: Optional[int] = None


@dataclass(slots=True)
class OpEvent(HostEvent):
    """A named host operation (devtrace.external with a name)."""

    parent_id: Optional[int] = None


def _optional_time(ns: int) -> Optional[int]:
    return None if ns == DT_TIMESTAMP_UNKNOWN else ns


_KINDS = {k.value: k for k in EventKind}
# what each kind is, as the library says (dt_event_kind_class)
_HOST_KINDS = frozenset(k for k in EventKind if _native.lib.dt_event_kind_class(k) & _native.DT_EVENT_CLASS_HOST)
_API_KINDS = [k.value for k in EventKind if _native.lib.dt_event_kind_class(k) & _native.DT_EVENT_CLASS_API]


class Converter:
    """dt_event -> typed object. Interned names are decoded once per
    session: the library hands out one pointer per distinct name."""

    def __init__(self) -> None:
        self._names: Dict[int, str] = {}

    def name(self, ptr: Optional[int]) -> str:
        if not ptr:
            return ""
        s = self._names.get(ptr)
        if s is None:
            s = self._names[ptr] = _native.text(ptr)
        return s

    def __call__(self, e: DtEvent) -> Event:
        kind = _KINDS[e.kind]
        name = self.name(e.name)
        ext = e.external_id if e.has_external else None
        if kind in _HOST_KINDS:
            if kind == EventKind.RANGE:
                r = e.u.range
                return RangeEvent(kind, name, e.start_ns, e.end_ns, e.correlation, ext, e.process, e.thread,
                                  r.range_id, r.parent_id if r.has_parent else None)
            if kind == EventKind.OP:
                o = e.u.op
                return OpEvent(kind, name, e.start_ns, e.end_ns, e.correlation, ext, e.process, e.thread,
                               o.parent_id if o.has_parent else None)
            a = e.u.api
            return ApiEvent(kind, name, e.start_ns, e.end_ns, e.correlation, ext, e.process, e.thread,
                            a.cbid, a.return_code, bool(a.launch))
        common = (kind, name, e.start_ns, e.end_ns, e.correlation, ext, e.device, e.stream, e.context)
        if kind == EventKind.KERNEL:
            k = e.u.kernel
            return KernelEvent(*common, tuple(k.grid), tuple(k.block),  # type: ignore[arg-type]
                               k.registers_per_thread, k.static_shared_memory, k.dynamic_shared_memory,
                               _optional_time(k.queued_ns), _optional_time(k.submitted_ns))
        if kind == EventKind.MEMCPY:
            m = e.u.memcpy
            return MemcpyEvent(*common, m.bytes, CopyKind(m.copy_kind), MemoryKind(m.src_kind),
                               MemoryKind(m.dst_kind), m.src_device, m.dst_device)
        if kind == EventKind.MEMSET:
            f = e.u.memset
            return MemsetEvent(*common, f.bytes, f.value, MemoryKind(f.memory_kind))
        if kind == EventKind.COLLECTIVE:
            c = e.u.collective
            return CollectiveEvent(*common, c.count, c.bytes, self.name(c.data_type), self.name(c.group),
                                   self.name(c.algorithm), c.bandwidth_gbps)
        if kind == EventKind.MEMORY:
            m = e.u.memory
            return MemoryEvent(*common, m.address, m.bytes, bool(m.is_free), MemoryKind(m.memory_kind))
        return DeviceEvent(*common)


CHUNK_EVENTS = 1 << 16


def read_events(session: int, count: int) -> List[Event]:
    """All events of a stopped session as typed objects, copied by the
    library a chunk at a time."""
    convert = Converter()
    out: List[Event] = []
    chunk = (DtEvent * min(max(count, 1), CHUNK_EVENTS))()
    first = 0
    while first < count:
        got = _native.lib.dt_session_events(session, first, len(chunk), chunk)
        if got == 0:
            raise RuntimeError("dt_session_events returned nothing at event %d of %d" % (first, count))
        out.extend(convert(chunk[i]) for i in range(got))
        first += got
    return out


# ---- numpy columns -------------------------------------------------------

def _field_offset(path: str) -> int:
    """Byte offset of a (dotted) field of dt_event, from the ctypes mirror."""
    cls: Any = DtEvent
    offset = 0
    for part in path.split("."):
        desc = getattr(cls, part)
        offset += desc.offset
        cls = dict(cls._fields_)[part]
    return offset


def event_dtype() -> "numpy.dtype":
    """A numpy dtype laid over dt_event, so that dt_session_events() fills
    a structured array directly."""
    import numpy as np

    columns = [
        ("kind", "kind", np.int32), ("start_ns", "start_ns", np.uint64), ("end_ns", "end_ns", np.uint64),
        ("correlation", "correlation", np.uint64), ("has_external", "has_external", np.int32),
        ("external_id", "external_id", np.uint64), ("device", "device", np.uint32),
        ("stream", "stream", np.uint32), ("context", "context", np.uint32),
        ("process", "process", np.uint32), ("thread", "thread", np.uint32), ("name", "name", np.uintp),
        ("copy_bytes", "u.memcpy.bytes", np.uint64), ("fill_bytes", "u.memset.bytes", np.uint64),
        ("memory_bytes", "u.memory.bytes", np.uint64),
        ("cbid", "u.api.cbid", np.uint32),
    ]
    return np.dtype({"names": [c[0] for c in columns],
                     "formats": [c[2] for c in columns],
                     "offsets": [_field_offset(c[1]) for c in columns],
                     "itemsize": ctypes.sizeof(DtEvent)})


@dataclass
class EventArrays:
    """Every event of a session as numpy columns, index i being event i.

    `external_id` is 0 where `has_external` is False. `bytes` is the size of
    copies, fills and memory allocations or frees (0 for other kinds); `cbid`
    is set for API calls.
    Names are stored once: `names[name_index[i]]` is event i's name."""

    kind: "numpy.ndarray"
    start_ns: "numpy.ndarray"
    end_ns: "numpy.ndarray"
    correlation: "numpy.ndarray"
    has_external: "numpy.ndarray"
    external_id: "numpy.ndarray"
    device: "numpy.ndarray"
    stream: "numpy.ndarray"
    context: "numpy.ndarray"
    process: "numpy.ndarray"
    thread: "numpy.ndarray"
    bytes: "numpy.ndarray"
    cbid: "numpy.ndarray"
    name_index: "numpy.ndarray"
    names: List[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def duration_ns(self) -> "numpy.ndarray":
        return self.end_ns - self.start_ns

    @property
    def name(self) -> "numpy.ndarray":
        """Event names as a numpy array of str objects."""
        import numpy as np

        return np.asarray(self.names, dtype=object)[self.name_index]


def read_arrays(session: int, count: int) -> EventArrays:
    """All events of a stopped session, copied by the library in chunks."""
    import numpy as np

    dtype = event_dtype()
    chunk = np.empty(min(count, CHUNK_EVENTS) or 1, dtype=dtype)
    cols = {name: np.empty(count, dtype=dtype.fields[name][0])
            for name in ("kind", "start_ns", "end_ns", "correlation", "external_id", "device", "stream",
                         "context", "process", "thread", "cbid", "name")}
    has_external = np.empty(count, dtype=bool)
    nbytes = np.empty(count, dtype=np.uint64)
    first = 0
    while first < count:
        got = _native.lib.dt_session_events(session, first, len(chunk), chunk.ctypes.data)
        if got == 0:
            raise RuntimeError("dt_session_events returned nothing at event %d of %d" % (first, count))
        part = chunk[:got]
        for name, col in cols.items():
            col[first:first + got] = part[name]
        has_external[first:first + got] = part["has_external"] != 0
        kinds = part["kind"]
        nbytes[first:first + got] = np.where(kinds == EventKind.MEMCPY, part["copy_bytes"],
                                             np.where(kinds == EventKind.MEMSET, part["fill_bytes"],
                                                      np.where(kinds == EventKind.MEMORY, part["memory_bytes"], 0)))
        first += got
    # (np.isin is 4 times slower for two kinds)
    is_api = functools.reduce(operator.or_, (cols["kind"] == k for k in _API_KINDS))
    cbid = np.where(is_api, cols["cbid"], 0)
    # interned names: one pointer per distinct string
    pointers, name_index = np.unique(cols.pop("name"), return_inverse=True)
    names = [_native.text(int(p)) if p else "" for p in pointers]
    return EventArrays(has_external=has_external, bytes=nbytes, name_index=name_index.astype(np.int32),
                       names=names, **{k: v for k, v in cols.items() if k != "cbid"},
                       cbid=cbid.astype(np.uint32))
