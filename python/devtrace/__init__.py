"""devtrace: accelerator activity (kernels, copies, fills, runtime and driver
API calls) recorded through each vendor's profiling interface, on one clock,
linked to the host operations and ranges that launched it, and written as a
trace that Perfetto, chrome://tracing, HTA and torch.profiler users open.

    import devtrace

    with devtrace.profile("step.json.gz", backend="auto") as p:
        with devtrace.range("forward"):
            model(x)
    print(p.losses)

`devtrace.torch` puts the same device activity into torch.profiler.
"""

from ._api import (
    BackendStatus,
    BackendUnavailableError,
    BusyError,
    DevtraceError,
    TraceWriteError,
    UnknownBackendError,
    backend_names,
    backends,
    external,
    listen,
    listening,
    probe,
    profile,
    range,
    step,
    step_count,
    stop_listening,
    version,
)
from ._native import DT_RANGE_ID_BASE as RANGE_ID_BASE
from .events import (
    ApiEvent,
    CollectiveEvent,
    MemoryEvent,
    CopyKind,
    DeviceEvent,
    Event,
    EventArrays,
    EventKind,
    HostEvent,
    KernelEvent,
    MemcpyEvent,
    MemoryKind,
    MemsetEvent,
    OpEvent,
    RangeEvent,
)

# The version is the header's (DT_VERSION_*), as the library loaded was built
# with it: the package's metadata (pyproject.toml) reads the same lines.
__version__ = version()

__all__ = [
    "ApiEvent", "BackendStatus", "BackendUnavailableError", "BusyError", "CollectiveEvent", "CopyKind", "DeviceEvent",
    "DevtraceError", "Event", "EventArrays", "EventKind", "HostEvent", "KernelEvent", "MemcpyEvent",
    "MemoryEvent", "MemoryKind", "MemsetEvent", "OpEvent", "RANGE_ID_BASE", "RangeEvent", "TraceWriteError",
    "UnknownBackendError", "backend_names", "backends", "external", "listen", "listening", "probe", "profile", "range",
    "step", "step_count", "stop_listening", "version",
]
