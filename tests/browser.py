"""Real headless Chromium for the suite's page tests (the report's, the web page's): find it, run it
(--dump-dom, --screenshot) with a throwaway profile, read what it rendered (rows per data-table,
plots, the body's attributes, where the pages' error recorder writes script errors), and count a
screenshot's colours with a small PNG decoder, so a blank page cannot pass."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_TIMEOUT_S = 90


def find_browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no browser: install chromium (apt-get install -y chromium)")


class RenderedPage(HTMLParser):
    """What the tests count in a DOM: rows per data-table (body and foot), plots by kind, body attributes."""

    def __init__(self, text: str):
        super().__init__()
        self.rows: Counter = Counter()
        self.foot_rows: Counter = Counter()
        self.plots: Counter = Counter()
        self.body: dict = {}
        self.sortable_headers = 0
        self._table, self._part = None, None
        self.feed(text)

    def handle_starttag(self, name, attrs):
        attrs = dict(attrs)
        if name == "body":
            self.body = attrs
        elif name == "table":
            self._table = attrs.get("data-table")
        elif name in ("tbody", "tfoot", "thead"):
            self._part = name
        elif name == "tr" and self._table and self._part in ("tbody", "tfoot"):
            (self.rows if self._part == "tbody" else self.foot_rows)[self._table] += 1
        elif name == "svg":
            self.plots[attrs.get("data-plot")] += 1
        elif name == "th" and "aria-sort" in attrs:
            self.sortable_headers += 1

    def handle_endtag(self, name):
        if name == "table":
            self._table, self._part = None, None


def chromium(browser: str, profile: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> str:
    try:
        stdout, stderr = process.communicate(timeout=CHROMIUM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"chromium did not finish within {CHROMIUM_TIMEOUT_S} s: {process.args}")
    assert process.returncode == 0, f"chromium exited {process.returncode}: {stderr[-2000:]}"
    return stdout


def png_top_rows(path: Path, rows: int) -> tuple[int, list[bytes]]:
    """(width, the first `rows` rows as RGB(A) bytes): a small PNG decoder (8-bit RGB/RGBA, no
    interlace, as Chromium writes them), enough to count colours without an imaging library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    position, idat, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        chunk = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG layout {header}"
    step = 3 if colour == 2 else 4
    stride = width * step
    raw = zlib.decompressobj().decompress(b"".join(idat), (stride + 1) * rows)
    previous, decoded = bytearray(stride), []
    for row in range(min(rows, height)):
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        decoded.append(bytes(line))
        previous = line
    return width, decoded


def colours(width: int, lines: list[bytes], step: int) -> Counter:
    counted: Counter = Counter()
    for line in lines:
        counted.update(line[i:i + 3] for i in range(0, width * step, step))
    return counted


class DevTools:
    """One headless Chromium driven over the DevTools protocol (a real browser, as a person uses
    it): navigate, type into a form and submit it (cookies kept), read the rendered DOM, take
    screenshots, and record what the page did: every URL it requested, every uncaught script
    error, every console or security message (a CSP refusal is one)."""

    def __init__(self, profile: Path):
        from websockets.sync.client import connect

        import re
        import time

        profile.mkdir(parents=True, exist_ok=True)
        log = profile / "chromium.log"     # a file, not a pipe: Chromium's chatter can never fill it and stall it
        with open(log, "wb") as output:
            self.process = subprocess.Popen(
                [find_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                 "--hide-scrollbars", "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
                stdout=subprocess.DEVNULL, stderr=output)
        deadline, url = time.monotonic() + CHROMIUM_TIMEOUT_S, None
        while url is None and time.monotonic() < deadline and self.process.poll() is None:
            found = re.search(r"DevTools listening on (ws://\S+)", log.read_text(errors="replace"))
            url = found.group(1) if found else time.sleep(0.1)
        if url is None:
            self.process.kill()
            pytest.fail(f"chromium did not open its DevTools port: {log.read_text(errors='replace')[-2000:]}")
        self._connection = connect(url, max_size=64 * 1024 * 1024, open_timeout=CHROMIUM_TIMEOUT_S)
        self.socket = self._connection.__enter__()
        self._next = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    def call(self, method: str, session: bool = False, timeout: float = CHROMIUM_TIMEOUT_S, **params) -> dict:
        import json

        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(self.socket.recv(timeout=timeout))
            if reply.get("id") == self._next:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, since: int, timeout: float = CHROMIUM_TIMEOUT_S) -> dict:
        import json
        import time

        deadline = time.monotonic() + timeout
        while True:
            for event in self.events[since:]:
                if event["method"] == method:
                    return event
            since = len(self.events)
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"chromium: no {method} within {timeout} s")
            reply = json.loads(self.socket.recv(timeout=left))
            if "method" in reply:
                self.events.append(reply)

    def goto(self, url: str) -> str:
        """Open `url` and wait for its load event; the rendered DOM."""
        mark = len(self.events)
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired", mark)
        return self.dom()

    def submit(self, form_selector: str, fields: dict[str, str]) -> str:
        """Fill a form's fields and submit it as a click would; the DOM of the page it leads to."""
        import json

        mark = len(self.events)
        fill = "".join(f"f.querySelector({json.dumps(f'[name={name}]')}).value={json.dumps(value)};"
                       for name, value in fields.items())
        self.evaluate(f"(function(){{var f=document.querySelector({json.dumps(form_selector)});{fill}f.requestSubmit();}})()")
        self.wait_for("Page.loadEventFired", mark)
        return self.dom()

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def dom(self) -> str:
        return self.evaluate("document.documentElement.outerHTML")

    def screenshot(self, path: Path, width: int = 1280, height: int = 900) -> Path:
        import base64

        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height, deviceScaleFactor=1,
                  mobile=False)
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def requested(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def problems(self) -> list[str]:
        """Uncaught script errors, console errors, and the browser's own error messages (CSP refusals among them)."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("text", "") + " " + str(params["exceptionDetails"].get("exception", {}).get("description", "")))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"{params['entry']['source']}: {params['entry']['text']}")
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] == "error":
                found.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        return found

    def close(self) -> None:
        try:
            self._connection.__exit__(None, None, None)
        finally:
            self.process.kill()
            self.process.wait()
