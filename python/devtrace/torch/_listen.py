"""devtrace.torch.listen(): `devtrace trigger PID --steps N` captures N
steps of a running PyTorch program through torch.profiler.

The process listens in devtrace's external mode (dt_control_listen_external):
devtrace's control thread takes the request and holds it; this module polls
for it at each step boundary (an optimizer step, through a global optimizer
step post-hook, or a call of devtrace.torch.step()), runs torch.profiler
over the steps asked for, with devtrace's Kineto plugin feeding it the
device activity, writes torch's Chrome trace to the descriptor the client
passed, and reports with dt_control_done. Nothing here raises into the
training loop: every failure becomes the reply's error.

Steps are numbered 1, 2, ... in the order of the boundaries: step n is the
work that ends with the n-th boundary (the n-th optimizer step), and
torch.profiler names it ProfilerStep#n, so that the ranks of a job, which
step together, name the same steps alike.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import weakref
import zlib
from typing import Any, Optional

from .. import _native
from .._api import DevtraceError

DT_OK = 0
DT_ERR_INVALID_ARGUMENT = 1
DT_ERR_BUSY = 5
DT_ERR_STATE = 6
DT_ERR_IO = 7
DT_ERR_TIMEOUT = 11

# the formats torch.profiler writes (its Chrome JSON), by the names
# dt_format_by_name takes; "" is the listener's choice
_FORMATS = {"": False, "json": False, "json.gz": True}


CaptureRequest = _native.CaptureRequest


def _bind(lib) -> dict:
    """The on-demand entry points, bound with their prototypes by _native."""
    return {name: getattr(lib, name) for name in ("dt_control_listen_external", "dt_control_take",
                                                   "dt_control_done", "dt_control_stop", "dt_control_listening")}


def _say(message: str) -> None:
    """A line on stderr; never an exception (warnings may be errors)."""
    try:
        sys.stderr.write("devtrace.torch.listen: %s\n" % message)
    except Exception:
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _copy_to_fd(path: str, fd: int, compress: bool) -> None:
    """The file at path into fd, from fd's position, gzip-compressed when
    the format asks; fd stays open (it is the client's)."""
    gz = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS) if compress else None
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            _write_all(fd, gz.compress(chunk) if gz else chunk)
    if gz:
        _write_all(fd, gz.flush())


class _Capture:
    """A request taken from the control thread, until dt_control_done."""

    def __init__(self, request: CaptureRequest, taken_ns: int):
        self.steps = request.steps
        self.duration_ns = request.duration_ns
        self.multiple = max(1, request.step_multiple)
        self.deadline_ns = taken_ns + request.timeout_ns if request.timeout_ns else 0
        self.fd = request.fd
        self.format = request.format.decode("ascii", "replace")
        self.prof = None
        self.first = 0       # the first step captured
        self.started_ns = 0


class Listener:
    """The one listener of this process (see listen())."""

    def __init__(self, fns: dict, activities, profile_kwargs: dict, step_hook_optimizer=None):
        self._fns = fns
        self._take = fns["dt_control_take"]
        self._request = CaptureRequest()
        self._request_ref = ctypes.byref(self._request)
        self._activities = activities
        self._profile_kwargs = profile_kwargs
        self.count = 0           # step boundaries seen
        self._capture: Optional[_Capture] = None
        self._handle = None
        self._stepper = None     # weakref of the optimizer whose steps count
        self._unwrap = None      # (optimizer, our wrapper, the step it replaced)
        self.captures = 0
        self._hook_optimizer = step_hook_optimizer

    # ---- step boundaries -------------------------------------------------
    def boundary(self) -> None:
        """Step `count` ended and step count+1 begins here."""
        self.count += 1
        if self._capture is None:
            if not self._take(self._request_ref):
                return
            self._took()
        else:
            self._advance()

    def safe_boundary(self) -> None:
        try:
            self.boundary()
        except Exception as e:  # never into the training loop
            self._abort(DT_ERR_STATE, "the capture failed: %s: %s" % (type(e).__name__, e))

    # The boundary comes after the optimizer's step returns, outside torch's
    # "Optimizer.step#..." scope (a post-hook runs inside it: a step that
    # began there would cut that scope in two): the optimizer's step is
    # wrapped on the instance, as torch's LR schedulers wrap it. The global
    # post-hook only finds the optimizer: with several, the first that steps
    # counts; one collected is replaced by the next that steps.
    def _optimizer_hook(self, optimizer, args, kwargs) -> None:
        stepper = self._stepper() if self._stepper is not None else None
        if stepper is not None:
            return
        try:
            self._wrap(optimizer)
        except Exception as e:
            _say("cannot follow the steps of %s: %s" % (type(optimizer).__name__, e))
            return
        self.safe_boundary()  # this step's end (inside its scope, this once)

    def _wrap(self, optimizer) -> None:
        inner = optimizer.step
        listener = self

        @functools.wraps(inner)
        def step_then_boundary(*args, **kwargs):
            out = inner(*args, **kwargs)
            listener.safe_boundary()
            return out

        had = "step" in vars(optimizer)
        optimizer.step = step_then_boundary
        self._stepper = weakref.ref(optimizer)
        self._unwrap = (self._stepper, step_then_boundary, inner if had else None)

    def install_hook(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        if self._hook_optimizer is not None:
            self._wrap(self._hook_optimizer)
        else:
            self._handle = register_optimizer_step_post_hook(self._optimizer_hook)

    def remove_hook(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if self._unwrap is not None:
            ref, mine, previous = self._unwrap
            optimizer = ref()
            if optimizer is not None and vars(optimizer).get("step") is mine:
                if previous is None:
                    del optimizer.step
                else:
                    optimizer.step = previous
            self._unwrap = None
            self._stepper = None

    # ---- a capture -------------------------------------------------------
    def _took(self) -> None:
        cap = _Capture(self._request, time.monotonic_ns())
        self._capture = cap
        if cap.format not in _FORMATS:
            self._finish_error(DT_ERR_INVALID_ARGUMENT,
                               "torch.profiler writes Chrome JSON: format %r is not one it writes (json, json.gz)"
                               % cap.format)
            return
        if not cap.steps and not cap.duration_ns:
            self._finish_error(DT_ERR_INVALID_ARGUMENT, "the request asks for neither steps nor a duration")
            return
        self._maybe_start()

    def _advance(self) -> None:
        cap = self._capture
        if cap.prof is None:
            self._maybe_start()
            return
        now = time.monotonic_ns()
        done = self.count - cap.first + 1  # steps completed since the start
        if cap.steps and done >= cap.steps:
            self._finish(None)
        elif cap.duration_ns and now - cap.started_ns >= cap.duration_ns:
            self._finish(None)
        elif cap.steps and cap.deadline_ns and now >= cap.deadline_ns:
            self._finish("the capture timed out after %d of %d steps" % (done, cap.steps), DT_ERR_TIMEOUT)
        else:
            cap.prof.step()

    def _maybe_start(self) -> None:
        cap = self._capture
        nxt = self.count + 1
        if nxt % cap.multiple:
            if cap.deadline_ns and time.monotonic_ns() >= cap.deadline_ns:
                self._finish_error(DT_ERR_TIMEOUT, "timed out waiting for a step that is a multiple of %d "
                                   "(at step %d)" % (cap.multiple, self.count))
            return
        import torch

        if torch._C._autograd._profiler_enabled():  # any profiler of torch's, Python's or C++'s
            self._finish_error(DT_ERR_BUSY, "torch.profiler is already running in this process")
            return
        # a schedule that records every step: torch then names each step
        # ProfilerStep#n (without one it names none)
        prof = torch.profiler.profile(activities=self._activities, schedule=_record_every_step,
                                      **self._profile_kwargs)
        prof.step_num = nxt  # ProfilerStep#<n>: the step's number in this process
        try:
            prof.start()
        except Exception as e:
            self._finish_error(DT_ERR_STATE, "torch.profiler did not start: %s: %s" % (type(e).__name__, e))
            return
        cap.prof = prof
        cap.first = nxt
        cap.started_ns = time.monotonic_ns()

    def _finish(self, partial: Optional[str], status: int = DT_OK) -> None:
        """Stops torch.profiler, writes its trace to the client's
        descriptor and replies; a window cut short (partial says why,
        status the error that cut it) is kept, its reply saying so."""
        cap = self._capture
        prof, cap.prof = cap.prof, None
        try:
            prof.stop()
        except Exception as e:
            self._finish_error(DT_ERR_STATE, "torch.profiler did not stop: %s: %s" % (type(e).__name__, e))
            return
        tmpdir = tempfile.mkdtemp(prefix="devtrace-torch-")
        try:
            path = os.path.join(tmpdir, "trace.json")
            prof.export_chrome_trace(path)
            with open(path, "rb") as f:
                events = json.load(f).get("traceEvents", [])
            records = sum(1 for e in events if isinstance(e, dict) and e.get("ph") != "M")
            _copy_to_fd(path, cap.fd, _FORMATS[cap.format])
        except Exception as e:
            self._finish_error(DT_ERR_IO, "torch's trace was not written: %s: %s" % (type(e).__name__, e))
            return
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        said = [partial] if partial else []
        said.append(loss_summary())
        self._done(status if partial else DT_OK, 1, records, "; ".join(said))

    def _finish_error(self, status: int, message: str) -> None:
        self._done(status, 0, 0, message)

    def _done(self, status: int, written: int, records: int, text: str) -> None:
        self._capture = None
        self.captures += 1
        if status != DT_OK and not written:
            _say(text)
        self._fns["dt_control_done"](status, written, records, text.encode("utf-8", "replace"))

    def _abort(self, status: int, message: str) -> None:
        """Ends a capture that failed half-way (torch.profiler stopped if it
        runs); never raises."""
        cap = self._capture
        if cap is None:
            _say(message)
            return
        if cap.prof is not None:
            try:
                cap.prof.stop()
            except Exception:
                pass
            cap.prof = None
        try:
            self._finish_error(status, message)
        except Exception:
            self._capture = None

    def stop(self) -> None:
        self.remove_hook()
        if self._capture is not None:
            if self._capture.prof is not None:
                try:
                    whole = self.count - self._capture.first + 1
                    self._finish("listening stopped during step %d, after %d whole steps" % (self.count + 1, whole),
                                 DT_ERR_STATE)
                except Exception as e:
                    self._abort(DT_ERR_STATE, "the capture failed: %s: %s" % (type(e).__name__, e))
            else:
                self._abort(DT_ERR_STATE, "listening stopped before the capture began")
        self._fns["dt_control_stop"]()


def loss_summary() -> str:
    """What the plugin's last run lost, as `devtrace record` and a capture
    of the library's own say it ("nothing lost" or "LOST N records (reason
    n, ...)"), the device activity outside torch.profiler's window counted
    as outside_window; then the plugin's other errors."""
    from . import enabled_backend, last_session

    report = last_session() if enabled_backend() is not None else {}
    loss = {k: int(v) for k, v in report.get("loss", {}).items() if k != "total"}
    if report.get("outside_window"):
        loss["outside_window"] = loss.get("outside_window", 0) + int(report["outside_window"])
    lost = [(k, v) for k, v in loss.items() if v]
    text = "LOST %d records (%s)" % (sum(v for _, v in lost), ", ".join("%s %d" % kv for kv in lost)) \
        if lost else "nothing lost"
    errors = list(report.get("errors", []))
    if report.get("loss", {}).get("total"):
        errors = errors[:-1]  # the last is the plugin's own line of the same losses
    return "; ".join([text] + errors)


def _record_every_step(step: int):
    from torch.profiler import ProfilerAction

    return ProfilerAction.RECORD


_listener: Optional[Listener] = None
_atexit_registered = False
_lock = threading.Lock()


def default_activities():
    """CPU, and the PrivateUse1 device when a device plugin named it (as
    torch_gcu, torch_npu do): then torch.profiler also attributes device
    time to ops in key_averages."""
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU]
    if torch._C._get_privateuse1_backend_name() != "privateuse1":
        activities.append(ProfilerActivity.PrivateUse1)
    return activities


def listen(backend: Optional[str] = "auto", steps_hook: bool = True, optimizer=None, activities=None,
           **profile_kwargs: Any) -> None:
    from . import enable, enabled_backend

    global _listener, _atexit_registered
    with _lock:
        if _listener is not None:
            raise DevtraceError("DT_ERR_STATE", "devtrace.torch.listen(): this process listens already "
                                "(devtrace.torch.stop_listening() first)")
        taken = sorted({"schedule", "on_trace_ready"} & set(profile_kwargs))
        if taken:
            raise TypeError("devtrace.torch.listen(): %s is the listener's own (the trigger chooses the steps)"
                            % ", ".join(taken))
        fns = _bind(_native.lib)
        if backend is not None and enabled_backend() is None:
            enable(backend)
        listener = Listener(fns, list(activities) if activities is not None else default_activities(),
                            profile_kwargs, optimizer)
        if steps_hook:
            listener.install_hook()
        status = fns["dt_control_listen_external"]()
        if status != DT_OK:
            listener.remove_hook()
            raise DevtraceError(_native.lib.dt_status_name(status).decode(),
                                "devtrace.torch.listen(): %s" % _native.text(_native.lib.dt_last_error()))
        _listener = listener
        if not _atexit_registered:
            atexit.register(stop_listening)
            _atexit_registered = True


def stop_listening() -> None:
    global _listener
    with _lock:
        listener, _listener = _listener, None
    if listener is not None:
        listener.stop()


def step() -> None:
    """A step boundary, for loops that step without torch.optim (or with
    listen(steps_hook=False)): the step that ends here and the next begins."""
    listener = _listener
    if listener is None:
        return
    listener.safe_boundary()


def listener() -> Optional[Listener]:
    return _listener

