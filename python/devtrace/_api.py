"""Sessions, ranges, host operations and backends over the C API."""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

from . import _native, events
from ._native import DtBackendStatus, DtConfig, lib

PathLike = Union[str, "os.PathLike[str]"]

# ---- errors ----------------------------------------------------------------


class DevtraceError(RuntimeError):
    """A failed devtrace call. `status` is the C status name
    ("DT_ERR_BUSY"), the message is the library's own, which says what to do."""

    def __init__(self, status: str, message: str):
        super().__init__(message or status)
        self.status = status


class UnknownBackendError(DevtraceError, ValueError):
    """The backend name is not one of devtrace.backends()."""


class BackendUnavailableError(DevtraceError):
    """The vendor library is missing, lacks a symbol, or has no device."""


class BusyError(DevtraceError):
    """Another session runs in this process (vendor interfaces are
    process-wide), or another profiler holds the vendor interface."""


class TraceWriteError(DevtraceError, OSError):
    """The trace could not be written."""


_ERRORS = {
    "DT_ERR_UNKNOWN_BACKEND": UnknownBackendError,
    "DT_ERR_BACKEND_UNAVAILABLE": BackendUnavailableError,
    "DT_ERR_BUSY": BusyError,
    "DT_ERR_IO": TraceWriteError,
}


def _check(status: int) -> None:
    if status != _native.DT_OK:
        name = lib.dt_status_name(status).decode()
        raise _ERRORS.get(name, DevtraceError)(name, _native.text(lib.dt_last_error()))


def version() -> str:
    """The C library's version."""
    return lib.dt_version().decode()


# ---- backends --------------------------------------------------------------


@dataclass(frozen=True)
class BackendStatus:
    """What devtrace.backends() finds: whether the vendor library loads,
    where it is, its version, and why not (or what is degraded)."""

    name: str
    vendor: str
    available: bool
    library: str
    version: str
    reason: str


def backend_names() -> List[str]:
    """Every backend the library knows, in "auto" preference order."""
    return [lib.dt_backend_name(i).decode() for i in builtins.range(lib.dt_backend_count())]


def probe(name: str) -> BackendStatus:
    """Look for one backend's vendor library (loads it to read its version;
    arms nothing)."""
    st = DtBackendStatus()
    _check(lib.dt_backend_probe(name.encode(), ctypes.byref(st)))
    return BackendStatus(name=_native.text(st.name), vendor=_native.text(st.vendor),
                         available=bool(st.available), library=_native.text(st.library),
                         version=_native.text(st.version), reason=_native.text(st.reason))


def kineto_native(name: str) -> bool:
    """Whether PyTorch's profiler (Kineto) records this backend's vendor
    itself, so that devtrace.torch leaves it to it (asks the library's
    backend list; loads nothing)."""
    flags = ctypes.c_uint(0)
    _check(lib.dt_backend_flags(name.encode(), ctypes.byref(flags)))
    return bool(flags.value & _native.DT_BACKEND_FLAG_KINETO_NATIVE)


def backends() -> List[BackendStatus]:
    """Every backend with its status, as `devtrace backends` prints them."""
    return [probe(n) for n in backend_names()]


# ---- correlation: ranges and host operations -------------------------------


class range(contextlib.ContextDecorator):  # noqa: A001 - devtrace.range, like nvtx.range
    """A named user range on the calling thread, like an NVTX range: device
    work launched inside it is attributed to it (`gpu_user_annotation` in
    the trace). A context manager and a decorator; `id` is the range's id
    (also its External id) while it is open."""

    def __init__(self, name: str):
        self.name = name
        self.id: Optional[int] = None

    def _recreate_cm(self) -> "range":
        return range(self.name)

    def __enter__(self) -> "range":
        rid = ctypes.c_uint64()
        _check(lib.dt_range_push(self.name.encode("utf-8", "replace"), ctypes.byref(rid)))
        self.id = rid.value
        return self

    def __exit__(self, *exc: Any) -> None:
        _check(lib.dt_range_pop())


def step() -> None:
    """A training step begins here (and the one before it ends), on any
    thread: call it once per step, e.g. at the top of the training loop.
    Steps are numbered 1, 2, ... in the order of the calls. They are what
    an on-demand capture of N steps counts (`devtrace trigger PID --steps N`)
    and what the flight recorder times to find a slow step. A range named
    "ProfilerStep#<n>" (torch.profiler's) is a step too. Costs a clock read
    and a few atomic stores; nothing is armed by it."""
    _check(lib.dt_step())


def step_count() -> int:
    """The number of the latest step that began in this process, from
    step(), dt_step() or a "ProfilerStep#<n>" range (0: none yet)."""
    return int(lib.dt_step_count())


class external(contextlib.ContextDecorator):  # noqa: N801 - devtrace.external
    """A host operation id (a framework op id) on the calling thread's
    correlation stack: device activity launched inside carries it as its
    "External id". With a name, the operation is also written to the trace
    as a `cpu_op` span with that External id, so the trace resolves its own
    ids."""

    def __init__(self, op_id: int, name: Optional[str] = None):
        if not 0 <= op_id < 1 << 64:
            raise ValueError("op_id must fit in 64 bits, got %r" % (op_id,))
        self.op_id = op_id
        self.name = name

    def _recreate_cm(self) -> "external":
        return external(self.op_id, self.name)

    def __enter__(self) -> "external":
        if self.name is None:
            _check(lib.dt_external_push(self.op_id))
        else:
            _check(lib.dt_op_push(self.name.encode("utf-8", "replace"), self.op_id))
        return self

    def __exit__(self, *exc: Any) -> None:
        _check(lib.dt_external_pop(None))


# ---- sessions --------------------------------------------------------------

_CAPTURE = {"kernel": _native.DT_CAPTURE_KERNEL, "memcpy": _native.DT_CAPTURE_MEMCPY,
            "memset": _native.DT_CAPTURE_MEMSET, "runtime": _native.DT_CAPTURE_RUNTIME,
            "driver": _native.DT_CAPTURE_DRIVER, "sync": _native.DT_CAPTURE_SYNC,
            "overhead": _native.DT_CAPTURE_OVERHEAD, "memory": _native.DT_CAPTURE_MEMORY,
            "queued": _native.DT_CAPTURE_KERNEL_QUEUED}


def _format_names() -> list:
    """The formats' names, from the library's format table (src/format/formats.c)."""
    names: list = []
    while True:
        name = lib.dt_format_name(len(names))
        if name is None:
            return names
        names.append(name.decode())


def _format_code(fmt: Optional[str], path: Optional[PathLike]) -> int:
    """The library's format number: by name, else by the path's suffix
    (the library's own table, as `devtrace record` reads it)."""
    if fmt is None:
        return lib.dt_format_of_path(os.fsencode(path), 0) if path is not None else 0
    code = lib.dt_format_by_name(fmt.encode()) if isinstance(fmt, str) else -1
    if code < 0:
        raise ValueError("format must be one of %s, got %r" % (", ".join(_format_names()), fmt))
    return code


# DEVTRACE_FLIGHT_RECORDER=on's size (src/core/ring.h)
FLIGHT_RECORDER_DEFAULT_BYTES = 256 << 20


def _config(backend: bytes, capture: Optional[List[str]], max_events: int, buffer_size: Optional[int],
            buffer_count: Optional[int], flight_recorder: Union[bool, int, None] = None) -> DtConfig:
    """A dt_config from profile()'s and listen()'s arguments (backend: kept
    alive by the caller)."""
    cfg = DtConfig()
    lib.dt_config_init(ctypes.byref(cfg))
    cfg.backend = backend
    if capture is not None:
        unknown = set(capture) - set(_CAPTURE)
        if unknown:
            raise ValueError("unknown capture kinds %s; known: %s" % (sorted(unknown), ", ".join(_CAPTURE)))
        cfg.capture = sum(_CAPTURE[k] for k in set(capture))
    cfg.max_events = max_events
    if buffer_size:
        cfg.buffer_size = buffer_size
    if buffer_count:
        cfg.buffer_count = buffer_count
    if flight_recorder is True:
        cfg.flight_recorder_bytes = FLIGHT_RECORDER_DEFAULT_BYTES
    elif flight_recorder:
        if isinstance(flight_recorder, bool) or not isinstance(flight_recorder, int) or flight_recorder < 0:
            raise TypeError("flight_recorder is True (256 MiB) or the ring's size in bytes, not %r"
                            % (flight_recorder,))
        cfg.flight_recorder_bytes = flight_recorder
    return cfg


class profile(contextlib.ContextDecorator):  # noqa: N801 - devtrace.profile, like torch.profiler.profile
    """Record accelerator activity while the block (or decorated function)
    runs, and write the trace to `path` when it ends.

        with devtrace.profile("step.json.gz", backend="topspti") as p:
            train_step()
        print(p.losses, len(p.events))

    backend: "auto" (the first backend whose vendor library starts) or a
    name from devtrace.backends(). format: {formats} (the
    library's formats); None takes it from the path's suffix as `devtrace
    record` does, else "json". capture: the kinds to record ("kernel",
    "memcpy", "memset", "runtime", "driver", "sync", "overhead", "memory"; "queued" adds kernels' queued
    and submitted times, off by default for what they cost per launch); None
    records kernels, copies, fills, API calls and memory allocations. The events stay readable after the block until
    close(). One session runs at a time in a process (BusyError otherwise).

    flight_recorder: True (256 MiB) or a size in bytes: the session keeps
    the vendor's records undecoded in a ring of that size (docs/on-demand.md,
    "Flight recorder"): dump(path) writes its window (the last seconds)
    while it goes on recording, the process answers `devtrace trigger PID
    --dump` while it records (unless it listens already, devtrace.listen()),
    and stop() writes the ring's last window to path.
    """

    def __init__(self, path: Optional[PathLike] = None, backend: str = "auto", format: Optional[str] = None,
                 *, capture: Optional[List[str]] = None, max_events: int = 0,
                 buffer_size: Optional[int] = None, buffer_count: Optional[int] = None,
                 flight_recorder: Union[bool, int, None] = None):
        self.path = os.fspath(path) if path is not None else None
        self.requested_backend = backend
        self.format = format
        _format_code(format, path)  # reject a bad format now, not after recording
        self.capture = capture
        self.max_events = max_events
        self.buffer_size = buffer_size
        self.buffer_count = buffer_count
        self.flight_recorder = flight_recorder
        self._listens = False  # this profile made the process listen for dumps
        self._session: Optional[int] = None
        self._running = False
        self._events: Optional[List[events.Event]] = None
        self._backend_bytes = backend.encode()
        self._cfg = _config(self._backend_bytes, capture, max_events, buffer_size, buffer_count, flight_recorder)

    def _recreate_cm(self) -> "profile":
        return profile(self.path, self.requested_backend, self.format, capture=self.capture,
                       max_events=self.max_events, buffer_size=self.buffer_size, buffer_count=self.buffer_count,
                       flight_recorder=self.flight_recorder)

    # -- lifecycle --

    def start(self) -> "profile":
        """Start recording (what entering the with-block does)."""
        if self._session is None:
            handle = ctypes.c_void_p()
            _check(lib.dt_session_create(ctypes.byref(self._cfg), ctypes.byref(handle)))
            self._session = handle.value
        _check(lib.dt_session_start(self._session))
        self._running = True
        self._events = None
        if self._cfg.flight_recorder_bytes and not lib.dt_control_listening():
            # a flight recorder answers `devtrace trigger --dump`; a capture
            # is answered busy while this session records
            self._listens = lib.dt_control_listen(ctypes.byref(self._cfg)) == _native.DT_OK
            if not self._listens:
                warnings.warn("devtrace.profile(flight_recorder=...): not listening for `devtrace trigger --dump`: "
                              + _native.text(lib.dt_last_error()), RuntimeWarning, stacklevel=2)
        return self

    def stop(self) -> None:
        """Stop recording and, with a path, write the trace."""
        if not self._running:
            return
        self._running = False
        if self._listens:
            self._listens = False
            lib.dt_control_stop()  # waits for a trigger's dump under way
        _check(lib.dt_session_stop(self._session))
        if self.path is not None:
            self.write(self.path, self.format)

    def dump(self, path: PathLike, format: Optional[str] = None) -> None:
        """A flight recorder's window (flight_recorder=...), written to path
        while the session goes on recording: from past the newest record
        the ring recycled (or the start, or the previous dump's end) to now.
        BusyError while another dump is being written."""
        if not self._running:
            raise DevtraceError("DT_ERR_STATE", "dump(): this profile is not recording")
        p = os.fspath(path)
        code = _format_code(format, p)
        tmp = "%s.tmp.%d" % (p, os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            status = lib.dt_session_dump(self._session, fd, code)
        finally:
            os.close(fd)
        if status != _native.DT_OK:
            os.unlink(tmp)
            _check(status)
        os.replace(tmp, p)

    def write(self, path: PathLike, format: Optional[str] = None) -> None:
        """Write the trace (again) to path, atomically."""
        p = os.fspath(path)
        _check(lib.dt_session_write(self._require(), p.encode(), _format_code(format, p)))

    def close(self) -> None:
        """Free the session and its events."""
        if self._session is not None:
            if self._running:
                self.stop()
            lib.dt_session_destroy(self._session)
            self._session = None
            self._events = None

    def __enter__(self) -> "profile":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _require(self) -> int:
        if self._session is None:
            raise DevtraceError("DT_ERR_STATE", "this profile has not recorded yet (or was closed)")
        return self._session

    # -- results --

    @property
    def backend(self) -> str:
        """The backend the session used ("" before it started)."""
        return _native.text(lib.dt_session_backend(self._session)) if self._session else ""

    def __len__(self) -> int:
        return lib.dt_session_event_count(self._require())

    @property
    def events(self) -> List[events.Event]:
        """Every kept event as a typed object (KernelEvent, MemcpyEvent, ...)."""
        if self._events is None:
            s = self._require()
            self._events = events.read_events(s, lib.dt_session_event_count(s))
        return self._events

    def arrays(self) -> events.EventArrays:
        """Every kept event as numpy columns (needs numpy); for millions of
        events, where one Python object per event is too slow."""
        s = self._require()
        return events.read_arrays(s, lib.dt_session_event_count(s))

    @property
    def losses(self) -> Dict[str, int]:
        """Records not kept, by reason ("vendor_dropped", "outside_window",
        ...), every reason listed, 0 where nothing was lost."""
        s = self._require()
        out = {}
        for r in builtins.range(64):
            name = _native.text(lib.dt_loss_reason_name(r))
            if name == "unknown":
                break
            out[name] = lib.dt_session_loss(s, r)
        return out

    @property
    def lost(self) -> int:
        """Total records not kept."""
        return lib.dt_session_loss_total(self._require())

    @property
    def devices(self) -> List[Dict[str, Any]]:
        """The devices the backend described, with Kineto's property keys."""
        s = self._require()
        size = lib.dt_session_device_properties(s, None, 0)
        buf = ctypes.create_string_buffer(size + 1)
        lib.dt_session_device_properties(s, buf, size + 1)
        return json.loads("[" + buf.value.decode("utf-8", "replace") + "]")

    def thread_name(self, tid: int) -> Optional[str]:
        """A host thread's name as the session saw it while it lived."""
        name = lib.dt_session_thread_name(self._require(), tid)
        return name.decode("utf-8", "replace") if name is not None else None

    def enclosing_range(self, external_id: int) -> Optional[int]:
        """The id of the user range an operation was pushed in, if any."""
        rid = ctypes.c_uint64()
        found = lib.dt_session_external_range(self._require(), external_id, ctypes.byref(rid))
        return rid.value if found else None


# ---- on demand -------------------------------------------------------------


def listen(backend: str = "auto", *, capture: Optional[List[str]] = None, max_events: int = 0,
           buffer_size: Optional[int] = None, buffer_count: Optional[int] = None) -> None:
    """Listen for `devtrace trigger` on a local socket only this user (or
    root) may use. While idle nothing is armed: no vendor subscription,
    callbacks or activity kinds. Each capture a trigger asks for (a
    duration, or N steps) arms the vendor with this configuration (the
    arguments are profile()'s), writes the trace to the output the trigger
    opened, and disarms. A capture that comes while a profile() runs is
    answered busy. DevtraceError (DT_ERR_STATE) when this process already
    listens; see docs/on-demand.md."""
    cfg = _config(backend.encode(), capture, max_events, buffer_size, buffer_count)
    _check(lib.dt_control_listen(ctypes.byref(cfg)))  # the library keeps its own copy


def stop_listening() -> None:
    """Stop listening (after a capture that runs) and remove the socket;
    nothing when not listening."""
    lib.dt_control_stop()


def listening() -> bool:
    """Whether this process listens for `devtrace trigger`."""
    return bool(lib.dt_control_listening())


# The formats profile() takes, as the library lists them: its docstring
# names them from the one table (src/format/formats.c) rather than by hand.
if profile.__doc__:
    _names = ['"%s"' % n for n in _format_names()]
    profile.__doc__ = profile.__doc__.replace(
        "{formats}", ", ".join(_names[:-1]) + " or " + _names[-1] if len(_names) > 1 else "".join(_names))
    del _names
