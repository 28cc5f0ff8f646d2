"""devtrace inside torch.profiler: a Kineto child profiler that records the
device activity of any backend devtrace knows and hands it to torch.profiler
as kernels, copies, fills and runtime/driver calls, each linked to the op
that launched it.

    import devtrace.torch
    devtrace.torch.enable(backend="topspti")
    with torch.profiler.profile() as prof:
        step()
    prof.export_chrome_trace("trace.json")

The plugin is a small C++ library built once against the installed torch
(torch.utils.cpp_extension, cached like any torch extension; the first
enable() takes a few seconds). NVIDIA GPUs are not its business: Kineto
records them itself through CUPTI (activities=[ProfilerActivity.CUDA]).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import _native
from . import _listen
from .._api import BackendStatus, BackendUnavailableError, DevtraceError, backend_names, kineto_native, probe, version

_SOURCE = Path(__file__).resolve().parent / "kineto_plugin.cpp"

# Backends whose device activity Kineto records on its own (the library's
# backend list says which): a second subscriber to the same vendor interface
# would fail or steal its records.
KINETO_NATIVE_BACKENDS = frozenset(n for n in backend_names() if kineto_native(n))


def _left_to_kineto(backend: str) -> str:
    return ("devtrace.torch does not record the %s backend: torch.profiler records its devices itself through "
            "Kineto: use torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) "
            "without devtrace.torch, or record the whole program with `devtrace record -- python ...`" % backend)


_plugin: Optional[ctypes.CDLL] = None
_backend: Optional[str] = None
_warned: set = set()  # (backend, what was said): each said once per process


def _extension_name() -> str:
    import torch

    tag = re.sub(r"[^0-9A-Za-z]+", "_", "%s_%s" % (torch.__version__, version()))
    return "devtrace_kineto_" + tag


def build(verbose: bool = False) -> str:
    """Build the plugin for the installed torch (if not already built) and
    return the path of the shared library. The build directory is torch's
    extension cache (TORCH_EXTENSIONS_DIR, default ~/.cache/torch_extensions)."""
    import torch
    import torch.utils.cpp_extension as cpp

    if not torch.autograd.kineto_available():
        raise DevtraceError("DT_ERR_BACKEND_UNAVAILABLE",
                            "this torch %s was built without Kineto: torch.profiler has no plugin "
                            "interface to record devices through" % torch.__version__)
    include = _native.include_dir()
    if include is None:
        raise DevtraceError("DT_ERR_BACKEND_UNAVAILABLE",
                            "devtrace/devtrace.h not found next to %s; set DEVTRACE_INCLUDE_DIR"
                            % (_native.library_path() or "the loaded libdevtrace"))
    kineto = [os.path.join(p, "kineto") for p in cpp.include_paths()
              if os.path.isfile(os.path.join(p, "kineto", "libkineto.h"))]
    if not kineto:
        raise DevtraceError("DT_ERR_BACKEND_UNAVAILABLE",
                            "torch %s ships no Kineto headers (torch/include/kineto, in wheels since 2.4)"
                            % torch.__version__)
    return cpp.load(
        name=_extension_name(), sources=[str(_SOURCE)], is_python_module=False, verbose=verbose,
        extra_include_paths=kineto + [str(include)],
        # torch's headers need USE_KINETO for the PrivateUse1 registry; fmt is
        # header-only so that the plugin does not need fmt's symbols from torch
        extra_cflags=["-O2", "-DUSE_KINETO", "-DFMT_HEADER_ONLY", "-Wall"],
    ) or _built_path()


def _built_path() -> str:
    import torch.utils.cpp_extension as cpp

    name = _extension_name()
    return os.path.join(cpp._get_build_directory(name, False), name + ".so")


def _load() -> ctypes.CDLL:
    global _plugin
    if _plugin is None:
        path = build()
        plugin = ctypes.CDLL(path)
        plugin.devtrace_torch_enable.argtypes = [ctypes.c_char_p]
        plugin.devtrace_torch_enable.restype = ctypes.c_int
        plugin.devtrace_torch_disable.argtypes = []
        plugin.devtrace_torch_disable.restype = None
        plugin.devtrace_torch_report.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        plugin.devtrace_torch_report.restype = ctypes.c_size_t
        plugin.devtrace_torch_has_privateuse1_registry.restype = ctypes.c_int
        plugin.devtrace_torch_profiler_active.argtypes = []
        plugin.devtrace_torch_profiler_active.restype = ctypes.c_int
        _plugin = plugin
    return _plugin


def _choose(backend: str) -> Tuple[str, BackendStatus]:
    """The backend to record with, and what its probe said."""
    if not isinstance(backend, str):
        raise TypeError("devtrace.torch.enable(backend): backend is a name, \"auto\" or one of %s; got %r"
                        % (", ".join(n for n in backend_names() if n not in KINETO_NATIVE_BACKENDS), backend))
    if backend in KINETO_NATIVE_BACKENDS:
        raise DevtraceError("DT_ERR_UNKNOWN_BACKEND", _left_to_kineto(backend))
    if backend != "auto":
        status = probe(backend)
        if not status.available:
            raise BackendUnavailableError("DT_ERR_BACKEND_UNAVAILABLE",
                                          "backend %s is not available: %s" % (backend, status.reason))
        return backend, status
    reasons: List[str] = []
    for name in backend_names():
        if name == "null" or name in KINETO_NATIVE_BACKENDS:
            continue
        status = probe(name)
        if status.available:
            return name, status
        reasons.append("%s: %s" % (name, status.reason))
    raise BackendUnavailableError("DT_ERR_BACKEND_UNAVAILABLE",
                                  "no device backend is available for torch.profiler; " + "; ".join(reasons))


def enable(backend: str = "auto") -> str:
    """Record `backend`'s device activity in every torch.profiler run from
    now on; returns the backend chosen ("auto": the first one whose vendor
    library is found, CUPTI excluded). Call it before torch.profiler starts:
    while a run is under way (from a scheduled run's warm-up on) it raises
    DevtraceError (DT_ERR_STATE), since that run would record no device
    activity, unless that backend is enabled already. Raises TypeError for a
    backend that is not a name, DevtraceError (with the library's reason)
    when the backend cannot record, and refuses "cupti": Kineto records
    NVIDIA GPUs itself. Warns (RuntimeWarning, once per process) when the
    backend records in part here, e.g. MSPTI's copies and memsets without
    libmspti.so in LD_PRELOAD: what the trace's "devtrace" notes then say."""
    global _backend
    chosen, status = _choose(backend)
    plugin = _load()
    if plugin.devtrace_torch_profiler_active() and chosen != _backend:
        raise DevtraceError("DT_ERR_STATE",
                            "devtrace.torch.enable(%r) while a torch.profiler run is under way: that run would "
                            "record no device activity through %s; call enable() before torch.profiler starts "
                            "(before the profile() block, or before a scheduled run's warm-up)" % (backend, chosen))
    plugin.devtrace_torch_enable(chosen.encode())
    _backend = chosen
    if status.reason and (chosen, status.reason) not in _warned:
        _warned.add((chosen, status.reason))
        warnings.warn("devtrace.torch (%s): %s" % (chosen, status.reason), RuntimeWarning, stacklevel=2)
    return chosen


def disable() -> None:
    """Record nothing in later torch.profiler runs (Kineto keeps the plugin
    registered: a registration cannot be undone)."""
    global _backend
    if _plugin is not None:
        _plugin.devtrace_torch_disable()
    _backend = None


def enabled_backend() -> Optional[str]:
    """The backend enable() chose, or None."""
    return _backend


def last_session() -> Dict[str, Any]:
    """What the last torch.profiler run recorded through devtrace: activities
    kept by kind, those outside torch.profiler's capture window, how many
    were linked to an op, unresolvable External ids, flows, gpu_user_annotation
    spans, devtrace's losses by reason, any error, and the session's notes
    (what it could not record and why: "kinds" names the record kinds the
    vendor would not enable). {} before the first run."""
    if _plugin is None:
        return {}
    size = _plugin.devtrace_torch_report(None, 0)
    buf = ctypes.create_string_buffer(size + 1)
    _plugin.devtrace_torch_report(buf, size + 1)
    return json.loads(buf.value.decode("utf-8", "replace"))


def has_privateuse1_registry() -> bool:
    """Whether the installed torch has torch's PrivateUse1 profiler registry
    (2.12 and later), which the plugin registers with besides Kineto."""
    return bool(_load().devtrace_torch_has_privateuse1_registry())


def listen(backend: Optional[str] = "auto", steps_hook: bool = True, optimizer: Any = None,
           activities: Optional[List[Any]] = None, **profile_kwargs: Any) -> None:
    """Make `devtrace trigger PID --steps N` (or --duration S) capture this
    program through torch.profiler: at the next step boundary (the first one
    whose step number is a multiple of the request's --step-multiple), a
    torch.profiler run starts, with devtrace's plugin feeding it `backend`'s
    device activity (enable(backend) unless a backend is enabled already;
    None: torch's own activities only); it stops after N steps (or at the
    first boundary after the duration), and torch's Chrome trace goes to
    the file the trigger opened (gzip-compressed for json.gz). Steps are
    numbered 1, 2, ... by the boundaries; torch names them ProfilerStep#n.

    A step boundary is each optimizer step (a global optimizer step
    post-hook; with several optimizers, the first that steps counts; pass
    `optimizer` to count that one's steps only), or each call of
    devtrace.torch.step() with steps_hook=False. While no request waits, a
    boundary costs one ctypes call. `activities` (default: CPU, and
    PrivateUse1 when a device plugin renamed it) and `profile_kwargs`
    (record_shapes, with_stack, ...) go to torch.profiler.profile.

    Nothing is raised into the training loop: a failure during a capture
    (torch.profiler already running, a format torch does not write, the
    trace not written) is the trigger's error, and a line on stderr. Raises
    DevtraceError when the process listens already or cannot listen."""
    _listen.listen(backend, steps_hook, optimizer, activities, **profile_kwargs)


def stop_listening() -> None:
    """Stop listening (and remove the hook); a capture under way ends here
    and its trace is written. Also done at exit."""
    _listen.stop_listening()


# A step boundary for listen(steps_hook=False): the step that ends here, and
# the next begins. Nothing when not listening.
step = _listen.step
