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
