"""The C library through ctypes: finding and loading libdevtrace, and the
structures, constants and functions of include/devtrace/devtrace.h.

The structures and constants are declared here (and the enums in events.py)
as the header declares them, and checked when the library loads against the
library's own account of the header (dt_abi_entry: each struct's size, each
member's offset, size and type, each constant's and enumerator's value): a
library that does not agree is refused at import, with every difference
named. The functions are bound from that account too, with the header's
own prototypes. Nothing here needs a compiler."""

from __future__ import annotations

import ctypes
import enum
import functools
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

_PACKAGE_DIR = Path(__file__).resolve().parent
_BUNDLED_LIB = _PACKAGE_DIR / "_native" / "lib" / "libdevtrace.so"

# ---- include/devtrace/devtrace.h ---------------------------------------
# Every DT_* integer of this module is checked against the library's value.

DT_OK = 0
DT_RANGE_ID_BASE = 1 << 48
DT_TIMESTAMP_UNKNOWN = (1 << 64) - 1
DT_BACKEND_FLAG_KINETO_NATIVE = 1 << 0
DT_CAPTURE_KERNEL = 1 << 0
DT_CAPTURE_MEMCPY = 1 << 1
DT_CAPTURE_MEMSET = 1 << 2
DT_CAPTURE_RUNTIME = 1 << 3
DT_CAPTURE_DRIVER = 1 << 4
DT_CAPTURE_SYNC = 1 << 5
DT_CAPTURE_OVERHEAD = 1 << 6
DT_CAPTURE_MEMORY = 1 << 7
DT_CAPTURE_KERNEL_QUEUED = 1 << 8
DT_EVENT_CLASS_DEVICE = 1 << 0
DT_EVENT_CLASS_HOST = 1 << 1
DT_EVENT_CLASS_LAUNCHED = 1 << 2
DT_EVENT_CLASS_API = 1 << 3

# Each structure names the C type it mirrors (_c_type_); the nested ones of
# dt_event's union are checked through it.

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
    _c_type_ = "dt_event"
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
    _c_type_ = "dt_config"
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
    _c_type_ = "dt_backend_status"
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("vendor", ctypes.c_char_p),
        ("available", ctypes.c_int),
        ("library", ctypes.c_char * 512),
        ("version", ctypes.c_char * 64),
        ("reason", ctypes.c_char * 1024),
    ]


class CaptureRequest(ctypes.Structure):
    """dt_capture_request (include/devtrace/devtrace.h)."""
    _c_type_ = "dt_capture_request"
    _fields_ = [
        ("duration_ns", ctypes.c_uint64),
        ("steps", ctypes.c_uint64),
        ("step_multiple", ctypes.c_uint64),
        ("timeout_ns", ctypes.c_uint64),
        ("fd", ctypes.c_int),
        ("format", ctypes.c_char * 16),
    ]


# The header's C types in ctypes, for the functions' prototypes and the
# members' types (an enum is an int: its size is checked). Handles are
# void *; a dt_event * takes an array of DtEvent or numpy's buffer.
C_TYPES: Dict[str, Any] = {
    "void": None,
    "int": ctypes.c_int,
    "unsigned": ctypes.c_uint,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "double": ctypes.c_double,
    "char": ctypes.c_char,
    "const char *": ctypes.c_char_p,
    "char *": ctypes.c_char_p,
    "const char **": ctypes.POINTER(ctypes.c_char_p),
    "uint64_t *": ctypes.POINTER(ctypes.c_uint64),
    "unsigned *": ctypes.POINTER(ctypes.c_uint),
    "dt_session *": ctypes.c_void_p,
    "const dt_session *": ctypes.c_void_p,
    "dt_session **": ctypes.POINTER(ctypes.c_void_p),
    "dt_config *": ctypes.POINTER(DtConfig),
    "const dt_config *": ctypes.POINTER(DtConfig),
    "dt_event *": ctypes.c_void_p,
    "dt_backend_status *": ctypes.POINTER(DtBackendStatus),
    "dt_capture_request *": ctypes.POINTER(CaptureRequest),
}


# ---- the library's account of the header (dt_abi_entry) --------------------

class Abi:
    """The header as a library was built from it: its structs and enums
    (name -> size), members (struct -> path -> (C type, offset, size)),
    constants and enumerators (name -> (enum or "", value)) and functions
    (name -> signature)."""

    def __init__(self, entries: Iterable[Tuple[str, str, str, int, int]]):
        self.types: Dict[str, Tuple[str, int]] = {}
        self.members: Dict[str, Dict[str, Tuple[str, int, int]]] = {}
        self.constants: Dict[str, Tuple[str, int]] = {}
        self.functions: Dict[str, str] = {}
        self._ctypes: Dict[str, Any] = {}
        for scope, name, ctype, value, size in entries:
            if not scope and ctype in ("struct", "enum"):
                self.types[name] = (ctype, size)
            elif ctype == "constant":
                self.constants[name] = (scope, value)
            elif not scope and "(" in ctype:
                self.functions[name] = ctype
            else:
                self.members.setdefault(scope, {})[name] = (ctype, value, size)

    @classmethod
    def of(cls, cdll: ctypes.CDLL) -> "Abi":
        # its own prototype is in the table: until the table is read, each
        # argument is passed as a ctypes object of its type, with no argtypes
        # (whose conversions made the import's reading of it 6 times slower)
        entry = ctypes.CFUNCTYPE(ctypes.c_int)(("dt_abi_entry", cdll))
        scope, name, ctype = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
        value, size = ctypes.c_uint64(), ctypes.c_uint64()
        refs = (ctypes.byref(scope), ctypes.byref(name), ctypes.byref(ctype), ctypes.byref(value), ctypes.byref(size))
        entries = []
        while entry(ctypes.c_size_t(len(entries)), *refs):
            entries.append((scope.value.decode(), name.value.decode(), ctype.value.decode(), value.value, size.value))
        return cls(entries)

    def is_enum(self, ctype: str) -> bool:
        return self.types.get(ctype, ("", 0))[0] == "enum"

    def ctypes_of(self, ctype: str) -> Any:
        """The ctypes type of a C type as the header writes it; KeyError
        for one this package does not know."""
        known = self._ctypes.get(ctype, self)  # None is void's
        if known is self:
            spelled = " ".join(ctype.replace("*", " * ").split()).replace("* *", "**")
            if self.is_enum(spelled):
                known = ctypes.c_int
            elif spelled.endswith("]"):  # an array: "char[16]"
                element, length = spelled[:-1].split("[")
                known = self.ctypes_of(element) * int(length)
            else:
                known = C_TYPES[spelled]
            self._ctypes[ctype] = known
        return known

    def prototype(self, name: str) -> Tuple[Any, List[Any]]:
        """A function's (restype, argtypes); KeyError naming a C type this
        package does not know."""
        signature = self.functions[name]
        at = signature.index("(")
        params = [p.strip() for p in signature[at + 1:signature.rindex(")")].split(",")]
        return self.ctypes_of(signature[:at].strip()), [self.ctypes_of(p) for p in params if p != "void"]

    # -- what differs from the Python declarations --

    def struct_differences(self, cls: Any) -> List[str]:
        c_name = cls._c_type_
        if self.types.get(c_name, ("", 0))[0] != "struct":
            return ["%s (%s): declared in Python, not a struct of the library's header" % (c_name, cls.__name__)]
        out = []
        if ctypes.sizeof(cls) != self.types[c_name][1]:
            out.append("sizeof(%s): %d bytes in C, %d in Python (%s)"
                       % (c_name, self.types[c_name][1], ctypes.sizeof(cls), cls.__name__))
        c_members = self.members.get(c_name, {})
        py_members = dict(_flatten(cls))
        for path, (ctype, offset, size) in c_members.items():
            where = "%s.%s" % (c_name, path)
            if path not in py_members:
                out.append("%s: %s at offset %d (%d bytes) in C, not declared in Python (%s)"
                           % (where, ctype, offset, size, cls.__name__))
                continue
            py_type, py_offset, py_size = py_members[path]
            if (py_offset, py_size) != (offset, size):
                out.append("%s: offset %d, %d bytes in C (%s); offset %d, %d bytes in Python (%s)"
                           % (where, offset, size, ctype, py_offset, py_size, py_type.__name__))
            elif not self._same_shape(ctype, py_type):
                out.append("%s: %s in C, %s in Python%s" % (where, ctype, py_type.__name__,
                                                             "" if self._known(ctype) else
                                                             " (a C type this package does not know)"))
        for path in py_members:
            if path not in c_members:
                out.append("%s.%s: declared in Python (%s), not in C" % (c_name, path, cls.__name__))
        return out

    def _known(self, ctype: str) -> bool:
        try:
            self.ctypes_of(ctype)
            return True
        except KeyError:
            return ctype in ("struct", "union")

    def _same_shape(self, ctype: str, py_type: Any) -> bool:
        if ctype in ("struct", "union"):
            return issubclass(py_type, ctypes.Structure if ctype == "struct" else ctypes.Union)
        try:
            return _shape(self.ctypes_of(ctype)) == _shape(py_type)
        except KeyError:
            return False

    def constant_differences(self, names: Dict[str, int], where: str) -> List[str]:
        out = []
        for name, value in names.items():
            if name not in self.constants:
                out.append("%s: declared in Python (%s), not in C" % (name, where))
            elif self.constants[name][1] != value:
                out.append("%s: %d in C, %d in Python (%s)" % (name, self.constants[name][1], value, where))
        return out

    def enum_differences(self, py_enum: Any, c_enum: str, prefix: str) -> List[str]:
        if not self.is_enum(c_enum):
            return ["%s (%s): declared in Python, not an enum of the library's header" % (c_enum, py_enum.__name__)]
        out = []
        if ctypes.sizeof(ctypes.c_int) != self.types[c_enum][1]:
            out.append("sizeof(%s): %d bytes in C, an int (%d) in Python"
                       % (c_enum, self.types[c_enum][1], ctypes.sizeof(ctypes.c_int)))
        c_values = {n[len(prefix):]: v for n, (scope, v) in self.constants.items() if scope == c_enum}
        py_values = {m.name: m.value for m in py_enum}
        for name, value in c_values.items():
            if name not in py_values:
                out.append("%s: %s%s = %d in C, not in Python's %s" % (c_enum, prefix, name, value, py_enum.__name__))
            elif py_values[name] != value:
                out.append("%s: %s%s = %d in C, %s.%s = %d in Python"
                           % (c_enum, prefix, name, value, py_enum.__name__, name, py_values[name]))
        for name, value in py_values.items():
            if name not in c_values:
                out.append("%s: %s.%s = %d in Python, no %s%s in C"
                           % (c_enum, py_enum.__name__, name, value, prefix, name))
        return out


def _flatten(cls: Any, base: int = 0, prefix: str = "") -> Iterable[Tuple[str, Tuple[Any, int, int]]]:
    """Every member of a ctypes structure, nested ones by dotted path:
    (path, (ctypes type, offset, size))."""
    for field in cls._fields_:
        name, ftype = field[0], field[1]
        offset = base + getattr(cls, name).offset
        path = prefix + name
        yield path, (ftype, offset, ctypes.sizeof(ftype))
        if isinstance(ftype, type) and issubclass(ftype, (ctypes.Structure, ctypes.Union)):
            yield from _flatten(ftype, offset, path + ".")


@functools.lru_cache(maxsize=None)
def _shape(t: Any) -> Tuple[Any, ...]:
    """What a member's type is, beyond its size: pointers of any kind are
    alike (a name read as an address is still a pointer)."""
    if isinstance(t, type) and issubclass(t, ctypes.Array):
        return ("array", _shape(t._type_), t._length_)
    if t in (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_wchar_p) or \
            (isinstance(t, type) and issubclass(t, ctypes._Pointer)):
        return ("pointer",)
    if t in (ctypes.c_float, ctypes.c_double, ctypes.c_longdouble):
        return ("float", ctypes.sizeof(t))
    if t is ctypes.c_char:
        return ("char",)
    return ("int", ctypes.sizeof(t), t(-1).value < 0)


class LayoutError(ImportError):
    """The library and this Python package do not agree on the header."""


def refuse(cdll: ctypes.CDLL, differences: List[str]) -> None:
    """Raise LayoutError naming every difference, if any."""
    if differences:
        raise LayoutError(
            "%s (devtrace %s) does not declare the types and constants of devtrace.h as this Python package "
            "(%s) does:\n  %s\nThe library and the package come from different builds of devtrace: reinstall the "
            "package (pip install), or point DEVTRACE_LIBRARY at the libdevtrace built from this package's checkout"
            % (getattr(cdll, "_name", None) or "the libdevtrace in this process", cdll.dt_version().decode(),
               _PACKAGE_DIR, "\n  ".join(differences)))


def differences(abi: Abi, namespace: Dict[str, Any]) -> List[str]:
    """What the structures (with _c_type_) and DT_* constants of a module's
    namespace declare otherwise than the library."""
    out: List[str] = []
    for value in namespace.values():
        if isinstance(value, type) and issubclass(value, ctypes.Structure) and "_c_type_" in value.__dict__:
            out += abi.struct_differences(value)
    constants = {k: v for k, v in namespace.items()
                 if k.startswith("DT_") and k.isupper() and isinstance(v, int) and not isinstance(v, enum.Enum)}
    return out + abi.constant_differences(constants, namespace.get("__name__", "?"))


class Library:
    """libdevtrace's functions, each bound with the header's prototype as
    the library's table gives it."""

    def __init__(self, cdll: ctypes.CDLL, abi: Abi):
        self._name = getattr(cdll, "_name", None)
        self._unbound: Dict[str, str] = {}
        for name in abi.functions:
            try:
                restype, argtypes = abi.prototype(name)
            except KeyError as e:
                self._unbound[name] = "its prototype %s has a C type this package does not know: %s" % (
                    abi.functions[name], e)
                continue
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                raise ImportError("%s lists %s but does not export it" % (self._name or "libdevtrace", name)) from None
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)

    def __getattr__(self, name: str) -> Any:
        why = self.__dict__.get("_unbound", {}).get(name, "the library's header declares no such function")
        raise AttributeError("libdevtrace's %s is not bound: %s" % (name, why))


def _preloaded() -> Optional[ctypes.CDLL]:
    """The devtrace already in the process: `devtrace record` preloads its
    injection library, whose session Python's ranges must join (a second
    copy of the library would keep a stack of its own)."""
    if "libdevtrace_inject" not in os.environ.get("LD_PRELOAD", ""):
        return None
    process = ctypes.CDLL(None)
    return process if hasattr(process, "dt_version") else None


def _candidates() -> Iterator[str]:
    """Where to look, in order; each asked only when the one before did
    not load (find_library runs ldconfig, the C compiler and ld)."""
    env = os.environ.get("DEVTRACE_LIBRARY")
    if env:
        yield env
    yield str(_BUNDLED_LIB)
    import ctypes.util

    found = ctypes.util.find_library("devtrace")
    if found:
        yield found
    yield "libdevtrace.so.0"


def _open() -> ctypes.CDLL:
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
    if not hasattr(lib, "dt_abi_entry"):
        raise ImportError("%s lacks dt_abi_entry: it is older than this Python package (%s); rebuild it or point "
                          "DEVTRACE_LIBRARY at a current one" % (getattr(lib, "_name", None) or "libdevtrace",
                                                                 _PACKAGE_DIR))
    lib.dt_version.restype = ctypes.c_char_p
    return lib


_cdll = _open()
abi = Abi.of(_cdll)
refuse(_cdll, differences(abi, globals()))
lib = Library(_cdll, abi)


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
