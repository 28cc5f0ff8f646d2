"""A headless Chromium driven over the DevTools protocol (its pipe: JSON
messages ending in a NUL byte on file descriptors 3 and 4), with nothing
but the standard library: open a page, collect what its console and its
network did, read its DOM, take a screenshot."""

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time


def binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, path=None, timeout=60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="dt-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds():  # the child reads commands on 3 and answers on 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)
            os.set_inheritable(3, True)  # dup2 onto itself keeps close-on-exec
            os.set_inheritable(4, True)
        self.proc = subprocess.Popen(
            [path or binary(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_child_r)
        os.close(from_child_w)
        self._id = 0
        self._answers = {}
        self.events = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session = None

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                self.events.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                m = json.loads(msg)
                if "id" in m:
                    self._answers[m["id"]] = m
                else:
                    self.events.put(m)

    def send(self, method, params=None, session=True):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + self.timeout
        while self._id not in self._answers:
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("Chromium did not answer %s: %s" % (method, self.proc.stderr.read()
                                                                        if self.proc.poll() is not None else ""))
            time.sleep(0.01)
        ans = self._answers.pop(self._id)
        if "error" in ans:
            raise RuntimeError("%s: %s" % (method, ans["error"]))
        return ans.get("result", {})

    def open(self, url):
        """Opens url in a new tab; its console, exceptions, log and network
        are recorded from the start."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.send(domain + ".enable")
        self.send("Page.navigate", {"url": url})

    def drain(self):
        out = []
        while True:
            try:
                m = self.events.get_nowait()
            except queue.Empty:
                return out
            if m is not None:
                out.append(m)

    def evaluate(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return r.get("result", {}).get("value")

    def wait_for(self, expression, timeout=None):
        deadline = time.time() + (timeout or self.timeout)
        while time.time() < deadline:
            v = self.evaluate(expression)
            if v:
                return v
            time.sleep(0.1)
        return None

    def screenshot(self, path, width=1400):
        height = int(self.evaluate("document.documentElement.scrollHeight") or 1000)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": False})
        time.sleep(0.5)  # the charts follow the new width
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return height

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        shutil.rmtree(self.profile, ignore_errors=True)


def problems(events):
    """What went wrong in a page's events: console errors and warnings,
    uncaught exceptions, log errors, and any request that left the machine
    (a self-contained page makes none)."""
    out = []
    for m in events:
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            out.append("console.%s: %s" % (p["type"], " ".join(str(a.get("value", a.get("description")))
                                                               for a in p.get("args", []))))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: %s" % (d.get("exception", {}).get("description") or d.get("text")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            out.append("log %s: %s" % (p["entry"]["level"], p["entry"].get("text")))
        elif method == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:")):
                out.append("a request to %s" % url)
    return out
