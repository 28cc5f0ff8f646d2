"""The C library through ctypes: finding and loading libdevtrace, the
structures of include/devtrace/devtrace.h mirrored field for field, and the
function prototypes. Nothing here needs a compiler."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from typing import List, Optional

# The version of the C API this binding mirrors (DT_VERSION_STRING).
ABI_VERSION = "0.1.0"

_PACKAGE_DIR = Path(__file__).resolve().parent
_BUNDLED_LIB = _PACKAGE_DIR / "_native" / "lib" / "libdevtrace.so"

# ---- include/devtrace/devtrace.h ---------------------------------------

DT_OK = 0
DT_RANGE_ID_BASE = 1 << 48
DT_TIMESTAMP_UNKNOWN = (1 << 64) - 1
DT_BACKEND_FLAG_KINETO_NATIVE = 1 << 0


class _Kernel(ctypes.Structure):
    _fields_ = [
        ("grid", ctypes.c_int32 * 3),
        ("block", ctypes.c_int32 * 3),
        ("registers_per_thread", ctypes.c_uint32),
        ("static_shared_memory", ctypes.c_uint32),
        ("dynamic_shared_memory", ctypes.c_uint32),
        ("queued_ns", ctypes.c_uint64),
        ("submitted_ns", ctypes.c_uint64),
    ]


class _Memcpy(ctypes.Structure):
    _fields_ = [
        ("bytes", ctypes.c_uint64),
        ("copy_kind", ctypes.c_int),
        ("src_kind", ctypes.c_int),
        ("dst_kind", ctypes.c_int),
        ("src_device", ctypes.c_uint32),
        ("dst_device", ctypes.c_uint32),
    ]


class _Memset(ctypes.Structure):
    _fields_ = [
        ("bytes", ctypes.c_uint64),
        ("value", ctypes.c_uint32),
        ("memory_kind", ctypes.c_int),
    ]


class _Api(ctypes.Structure):
    _fields_ = [("cbid", ctypes.c_uint32), ("return_code", ctypes.c_int32), ("launch", ctypes.c_int)]


class _Range(ctypes.Structure):
    _fields_ = [
        ("range_id", ctypes.c_uint64),
        ("has_parent", ctypes.c_int),
        ("parent_id", ctypes.c_uint64),
    ]


class _Op(ctypes.Structure):
    _fields_ = [("has_parent", ctypes.c_int), ("parent_id", ctypes.c_uint64)]


class _Collective(ctypes.Structure):
    _fields_ = [
        ("count", ctypes.c_uint64),
        ("bytes", ctypes.c_uint64),
        ("data_type", ctypes.c_void_p),  # interned, like names
        ("group", ctypes.c_void_p),
        ("algorithm", ctypes.c_void_p),
        ("bandwidth_gbps", ctypes.c_double),
    ]


class _Memory(ctypes.Structure):
    _fields_ = [
        ("address", ctypes.c_uint64),
        ("bytes", ctypes.c_uint64),
        ("is_free", ctypes.c_int),
        ("memory_kind", ctypes.c_int),
    ]


class _Payload(ctypes.Union):
    _fields_ = [
        ("kernel", _Kernel),
        ("memcpy", _Memcpy),
        ("memset", _Memset),
        ("api", _Api),
        ("range", _Range),
        ("op", _Op),
        ("collective", _Collective),
        ("memory", _Memory),
    ]


class DtEvent(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("start_ns", ctypes.c_uint64),
        ("end_ns", ctypes.c_uint64),
        ("correlation", ctypes.c_uint64),
        ("has_external", ctypes.c_int),
        ("external_id", ctypes.c_uint64),
        ("device", ctypes.c_uint32),
        ("stream", ctypes.c_uint32),
        ("context", ctypes.c_uint32),
        ("process", ctypes.c_uint32),
        ("thread", ctypes.c_uint32),
        ("name", ctypes.c_void_p),  # interned: read with string_at
        ("u", _Payload),
    ]


class DtConfig(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_char_p),
        ("output_path", ctypes.c_char_p),
        ("format", ctypes.c_int),
        ("capture", ctypes.c_uint32),
        ("max_duration_ns", ctypes.c_uint64),
        ("max_events", ctypes.c_uint64),
        ("buffer_size", ctypes.c_size_t),
        ("buffer_count", ctypes.c_uint32),
        ("calibration_period_ms", ctypes.c_uint32),
        ("flight_recorder_bytes", ctypes.c_uint64),
    ]


class DtBackendStatus(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("vendor", ctypes.c_char_p),
        ("available", ctypes.c_int),
        ("library", ctypes.c_char * 512),
        ("version", ctypes.c_char * 64),
        ("reason", ctypes.c_char * 1024),
    ]


_session_p = ctypes.c_void_p
_u64_p = ctypes.POINTER(ctypes.c_uint64)

# name: (restype, argtypes)
class CaptureRequest(ctypes.Structure):
    """dt_capture_request (include/devtrace/devtrace.h)."""
    _fields_ = [
        ("duration_ns", ctypes.c_uint64),
        ("steps", ctypes.c_uint64),
        ("step_multiple", ctypes.c_uint64),
        ("timeout_ns", ctypes.c_uint64),
        ("fd", ctypes.c_int),
        ("format", ctypes.c_char * 16),
    ]


_PROTOTYPES = {
    "dt_version": (ctypes.c_char_p, []),
    "dt_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dt_last_error": (ctypes.c_char_p, []),
    "dt_config_init": (None, [ctypes.POINTER(DtConfig)]),
    "dt_session_create": (ctypes.c_int, [ctypes.POINTER(DtConfig), ctypes.POINTER(_session_p)]),
    "dt_session_start": (ctypes.c_int, [_session_p]),
    "dt_session_stop": (ctypes.c_int, [_session_p]),
    "dt_session_write": (ctypes.c_int, [_session_p, ctypes.c_char_p, ctypes.c_int]),
    "dt_session_dump": (ctypes.c_int, [_session_p, ctypes.c_int, ctypes.c_int]),
    "dt_session_destroy": (None, [_session_p]),
    "dt_session_backend": (ctypes.c_char_p, [_session_p]),
    "dt_external_push": (ctypes.c_int, [ctypes.c_uint64]),
    "dt_external_pop": (ctypes.c_int, [_u64_p]),
    "dt_op_push": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint64]),
    "dt_op_pop": (ctypes.c_int, [_u64_p]),
    "dt_range_push": (ctypes.c_int, [ctypes.c_char_p, _u64_p]),
    "dt_range_pop": (ctypes.c_int, []),
    "dt_step": (ctypes.c_int, []),
    "dt_step_count": (ctypes.c_uint64, []),
    "dt_session_event_count": (ctypes.c_size_t, [_session_p]),
    "dt_session_event": (ctypes.c_int, [_session_p, ctypes.c_size_t, ctypes.POINTER(DtEvent)]),
    "dt_session_events": (ctypes.c_size_t, [_session_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]),
    "dt_session_external_range": (ctypes.c_int, [_session_p, ctypes.c_uint64, _u64_p]),
    "dt_session_thread_name": (ctypes.c_char_p, [_session_p, ctypes.c_uint32]),
    "dt_session_device_properties": (ctypes.c_size_t, [_session_p, ctypes.c_char_p, ctypes.c_size_t]),
    "dt_loss_reason_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dt_session_loss": (ctypes.c_uint64, [_session_p, ctypes.c_int]),
    "dt_session_loss_total": (ctypes.c_uint64, [_session_p]),
    "dt_backend_count": (ctypes.c_size_t, []),
    "dt_backend_name": (ctypes.c_char_p, [ctypes.c_size_t]),
    "dt_backend_probe": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(DtBackendStatus)]),
    "dt_backend_flags": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint)]),
    "dt_prepare": (ctypes.c_int, [ctypes.c_char_p]),
    "dt_format_of_path": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int]),
    "dt_format_by_name": (ctypes.c_int, [ctypes.c_char_p]),
    "dt_format_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dt_control_listen": (ctypes.c_int, [ctypes.POINTER(DtConfig)]),
    "dt_control_stop": (None, []),
    "dt_control_listening": (ctypes.c_int, []),
    "dt_control_listen_external": (ctypes.c_int, []),
    "dt_control_take": (ctypes.c_int, [ctypes.POINTER(CaptureRequest)]),
    "dt_control_done": (ctypes.c_int, [ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_char_p]),
}


def _preloaded() -> Optional[ctypes.CDLL]:
    """The devtrace already in the process: `devtrace record` preloads its
    injection library, whose session Python's ranges must join (a second
    copy of the library would keep a stack of its own)."""
    if "libdevtrace_inject" not in os.environ.get("LD_PRELOAD", ""):
        return None
    process = ctypes.CDLL(None)
    return process if hasattr(process, "dt_version") else None


def _candidates() -> List[str]:
    paths = []
    env = os.environ.get("DEVTRACE_LIBRARY")
    if env:
        paths.append(env)
    paths.append(str(_BUNDLED_LIB))
    found = ctypes.util.find_library("devtrace")
    if found:
        paths.append(found)
    paths.append("libdevtrace.so.0")
    return paths


def _load() -> ctypes.CDLL:
    lib = _preloaded()
    tried = []
    if lib is None:
        for path in _candidates():
            try:
                # RTLD_GLOBAL: the Kineto plugin resolves dt_* against this copy
                lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
        if lib is None:
            raise ImportError(
                "libdevtrace not found; tried: " + "; ".join(tried) +
                ". Install the package with pip (it builds the library), or set "
                "DEVTRACE_LIBRARY to the path of libdevtrace.so")
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError("%s lacks %s: it is older than this Python package (%s); "
                              "rebuild it or point DEVTRACE_LIBRARY at a current one"
                              % (getattr(lib, "_name", "libdevtrace"), name, ABI_VERSION)) from None
        fn.restype = restype
        fn.argtypes = argtypes
    version = lib.dt_version().decode()
    if version.split(".")[:2] != ABI_VERSION.split(".")[:2]:
        raise ImportError("libdevtrace %s at %s does not match the Python package's C API %s"
                          % (version, getattr(lib, "_name", "?"), ABI_VERSION))
    return lib


lib = _load()


def library_path() -> str:
    """Where the loaded libdevtrace lives ("" for the process itself)."""
    return lib._name or ""


def include_dir() -> Optional[Path]:
    """The directory holding devtrace/devtrace.h, for building against the
    library (the Kineto plugin): next to the loaded library in an install or
    a wheel, or the source tree's include/ when run from the repository."""
    env = os.environ.get("DEVTRACE_INCLUDE_DIR")
    candidates = [Path(env)] if env else []
    if lib._name:
        candidates.append(Path(lib._name).resolve().parent.parent / "include")
    candidates += [_PACKAGE_DIR / "_native" / "include", _PACKAGE_DIR.parent.parent / "include"]
    for c in candidates:
        if (c / "devtrace" / "devtrace.h").is_file():
            return c
    return None


def text(ptr) -> str:
    """A C string from the library (names may hold any bytes a vendor gave)."""
    if ptr is None:
        return ""
    if isinstance(ptr, bytes):
        return ptr.decode("utf-8", "replace")
    return ctypes.string_at(ptr).decode("utf-8", "replace")
