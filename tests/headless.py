"""A real headless Chromium that loads a page and reports what the page did.

Chromium comes from `scripts/setup-system.sh` (Debian's `chromium`; `CHROMIUM_PATH` names
another). It is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: fd 3
for commands, fd 4 for answers, each message JSON ended by a NUL byte), so no port is opened
and no library is needed. `load_page` records every request the page makes (beside the page
itself), every navigation it schedules, console messages, dialogs and CSP reports, then lets
a caller evaluate expressions in the page (DevTools evaluation is not subject to the page's
policy, so it can check what the page's own script did).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> str | None:
    """The Chromium binary, or None when there is none."""
    env = os.environ.get("CHROMIUM_PATH")
    if env:
        return env if os.access(env, os.X_OK) else None
    for c in CHROMIUM_CANDIDATES:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("chromium")


@dataclass
class PageReport:
    """What a page did while it loaded and settled."""

    url: str
    requests: list[str] = field(default_factory=list)
    """URLs requested besides the page itself (data: URLs included)."""
    navigations: list[str] = field(default_factory=list)
    """Navigations the page asked for or scheduled (meta refresh, location, forms)."""
    console: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    """Browser log entries (CSP violations among them)."""
    values: dict[str, Any] = field(default_factory=dict)
    """The caller's expressions, evaluated in the page after it settled."""

    @property
    def left_the_page(self) -> list[str]:
        """Requests that would leave the machine or the file (anything but data: URLs)."""
        return [u for u in self.requests if not u.startswith("data:")] + self.navigations


class _Pipe:
    def __init__(self, proc: subprocess.Popen[bytes], wfd: int, rfd: int) -> None:
        self.proc, self.wfd, self.rfd = proc, wfd, rfd
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def _read(self, deadline: float) -> dict[str, Any] | None:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.rfd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\0")
        return json.loads(raw)  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        mid = self.send(method, params, session)
        deadline = time.monotonic() + 30
        while True:
            msg = self._read(deadline)
            if msg is None:
                raise TimeoutError(method)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (msg := self._read(deadline)) is not None:
            self.events.append(msg)

    def wait_event(self, method: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        if any(e.get("method") == method for e in self.events):
            return True
        while (msg := self._read(deadline)) is not None:
            self.events.append(msg)
            if msg.get("method") == method:
                return True
        return False


def load_page(
    page: Path,
    home: Path,
    expressions: dict[str, str] | None = None,
    settle: float = 1.5,
    *,
    viewport: tuple[int, int] | None = None,
    screenshot: Path | None = None,
) -> PageReport:
    """Load ``page`` (a file) in headless Chromium with its profile under ``home``; record what
    it does until it has loaded and ``settle`` seconds more (a meta refresh or a timer has its
    chance), then evaluate ``expressions`` in it, in order. ``viewport``: the window's size in
    CSS pixels; ``screenshot``: a PNG of it written there after the expressions."""
    exe = chromium_path()
    assert exe, "no chromium (scripts/setup-system.sh installs it)"
    url = page.resolve().as_uri()
    profile = home / "chromium-profile"
    profile.mkdir(parents=True, exist_ok=True)
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }

    def fds() -> None:
        # out of the way first: the pipe's own descriptors may be 3 or 4
        r, w = os.dup(to_child_r) + 100, os.dup(from_child_w) + 100
        os.dup2(to_child_r, r)
        os.dup2(from_child_w, w)
        os.dup2(r, 3)
        os.dup2(w, 4)

    proc = subprocess.Popen(
        [
            exe,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        preexec_fn=fds,  # fd 3 and 4 are the protocol's pipe ends
        close_fds=False,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "chromium.log", "wb"),  # noqa: SIM115 - the child keeps it
    )
    os.close(to_child_r)
    os.close(from_child_w)
    pipe = _Pipe(proc, to_child_w, from_child_r)
    report = PageReport(url)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            pipe.call(f"{domain}.enable", {}, sid)
        if viewport is not None:
            pipe.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": viewport[0], "height": viewport[1], "deviceScaleFactor": 1, "mobile": False},
                sid,
            )
        pipe.call("Page.navigate", {"url": url}, sid)
        pipe.wait_event("Page.loadEventFired", 30)
        pipe.pump(settle)
        for name, expr in (expressions or {}).items():
            res = pipe.call(
                "Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, sid
            )
            report.values[name] = res.get("result", {}).get("value")
        if screenshot is not None:
            shot = pipe.call("Page.captureScreenshot", {"format": "png"}, sid)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        pipe.pump(0.2)
        for e in pipe.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if u != url:
                    report.requests.append(u)
            elif m in ("Page.frameRequestedNavigation", "Page.frameScheduledNavigation"):
                report.navigations.append(p.get("url", ""))
            elif m == "Page.frameNavigated":
                u = p.get("frame", {}).get("url", "")
                if u not in (url, "about:blank"):
                    report.navigations.append(u)
            elif m == "Runtime.consoleAPICalled":
                report.console.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                )
            elif m == "Page.javascriptDialogOpening":
                report.dialogs.append(p.get("message", ""))
            elif m == "Log.entryAdded":
                report.log.append(p.get("entry", {}).get("text", ""))
        return report
    finally:
        try:
            pipe.send("Browser.close")
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
            proc.wait()
        os.close(to_child_w)
        os.close(from_child_r)
