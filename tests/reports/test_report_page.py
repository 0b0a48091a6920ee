"""`irforge report` on real inputs, opened in a real headless Chromium: the page renders, its
script runs without an error, the tables and plots the inputs call for are in the rendered DOM,
the screenshot is a page and not a blank, and nothing in the file points outside it."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.reports.page import hash_source

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


EXTERNAL = [
    re.compile(r"""\b(?:src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(?!#)[^"'\s>]""", re.I),  # any src/href not an anchor
    re.compile(r"url\(", re.I),
    re.compile(r"@import", re.I),
    re.compile(r"<link\b", re.I),
    re.compile(r"<script\b[^>]*\bsrc\b", re.I),
    re.compile(r"<(?:img|iframe|object|embed|video|audio|source)\b", re.I),
]


@pytest.fixture(scope="module")
def report_file(report_inputs, tmp_path_factory) -> Path:
    """The report of every kind of input at once: two eval results, a comparison, a suite folder."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    inputs = [str(report_inputs.bm25_a), str(report_inputs.bm25_b / "results.json"), str(report_inputs.comparison),
              str(report_inputs.suite.parent)]
    assert main(["report", *inputs, "--out", str(out), "--title", "SciFact slices: BM25 k1/b"]) == 0
    return out


def test_the_page_references_nothing_outside_itself(report_file, report_inputs):
    text = report_file.read_text(encoding="utf-8")
    for pattern in EXTERNAL:
        found = pattern.search(text)
        assert found is None, f"external reference {found.group(0)!r} near {text[max(found.start() - 80, 0):found.end() + 80]!r}"
    assert re.findall(r'href="([^"]*)"', text) and all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', text))
    assert "Content-Security-Policy" in text and "default-src 'none'" in text   # and the browser may not fetch anyway
    # A label with markup is shown escaped, never interpreted.
    assert report_inputs.odd_label not in text and "bm25 &quot;k1=1.2&quot; &lt;b=0.75&gt; &amp; co" in text


def test_the_report_renders_in_chromium(report_file, report_inputs, tmp_path):
    browser = find_browser()
    screenshot = tmp_path / "report.png"
    dom_run = chromium(browser, tmp_path / "profile-dom", "--dump-dom", report_file.as_uri())
    shot_run = chromium(browser, tmp_path / "profile-shot", f"--screenshot={screenshot}", "--window-size=1280,2400",
                        report_file.as_uri())
    dom = RenderedPage(finish(dom_run))
    finish(shot_run)

    assert dom.body.get("data-script-errors") == "", f"script errors: {dom.body.get('data-script-errors')!r}"
    assert dom.body.get("data-rendered") == "ok", "the page's script did not run to its end"
    assert dom.sortable_headers > 20, "the sorting script did not reach the tables"
    assert_the_expected_tables_and_plots(dom, report_inputs)

    assert screenshot.is_file() and screenshot.stat().st_size > 40_000, "screenshot missing or too small to hold a page"
    width, lines = png_top_rows(screenshot, 260)
    counted = colours(width, lines, len(lines[0]) // width)
    background = counted.most_common(1)[0][1] / sum(counted.values())
    assert len(counted) > 50 and background < 0.97, f"the top of the page looks blank ({len(counted)} colours)"


def assert_the_expected_tables_and_plots(dom: RenderedPage, report_inputs) -> None:
    compared = len(report_inputs.compared)
    # Comparison: 2 systems; 1 pair per compared measure, each with its per-query difference plot.
    assert dom.rows["comparison-systems"] == 2
    assert dom.rows["comparison-pairs"] == compared
    assert dom.plots["difference"] == compared
    assert dom.rows["comparison-judged"] == 2 and dom.rows["comparison-timings"] == 2
    # Suite: 2 datasets that ran and one that failed, the mean row; one bar chart.
    assert dom.rows["suite-datasets"] == 3 and dom.foot_rows["suite-datasets"] == 1
    assert dom.rows["suite-status"] == 3 and dom.plots["bars"] == 1
    # Results: the two eval runs given directly.
    for name in ("results-metrics", "results-judged", "results-timings", "results-counts"):
        assert dom.rows[name] == 2, name
    # Reproducibility: a row per system of each input (2 results, 2 compared, 2 suite datasets that ran).
    assert dom.rows["configuration"] == dom.rows["data-fingerprints"] == 6
    assert dom.rows["inputs-files"] == 4


def test_without_its_scripts_the_page_is_complete_and_a_script_error_would_show(report_file, report_inputs, tmp_path):
    """The page needs no script: with its two inline scripts cut out, Chromium renders every table
    and plot (Chromium's own switch for scripts would also stop --dump-dom). The error recorder
    the render test relies on does catch an error, else its 'no errors' would prove nothing; the
    same page checks that a header click sorts."""
    browser = find_browser()
    text = report_file.read_text(encoding="utf-8")
    no_scripts, cut = re.subn(r"<script>.*?</script>", "", text, flags=re.S)
    assert cut == 2
    (tmp_path / "no-scripts.html").write_text(no_scripts, encoding="utf-8")
    failing_script = "document.body.no.such.thing = 1;"
    broken = text.replace("</body>", f"<script>{SORT_PROBE}</script><script>{failing_script}</script></body>")
    # The page's CSP runs only the scripts it names by hash: name the two added here too.
    broken = broken.replace("script-src ", f"script-src {hash_source(SORT_PROBE)} {hash_source(failing_script)} ", 1)
    (tmp_path / "broken.html").write_text(broken, encoding="utf-8")
    off_run = chromium(browser, tmp_path / "profile-off", "--dump-dom", (tmp_path / "no-scripts.html").as_uri())
    broken_run = chromium(browser, tmp_path / "profile-broken", "--dump-dom", (tmp_path / "broken.html").as_uri())
    off, failing = RenderedPage(finish(off_run)), RenderedPage(finish(broken_run))

    assert "data-rendered" not in off.body and off.sortable_headers == 0
    assert_the_expected_tables_and_plots(off, report_inputs)
    # "Cannot read properties of undefined (reading 'such')"
    assert "such" in failing.body.get("data-script-errors", ""), failing.body
    # And the sorting works: the suite's datasets by the first measure, up then down; a failed dataset (no value) last.
    assert failing.body.get("data-probe") == ("scifact-subset,scifact-tiny,nfcorpus-missing | scifact-tiny,scifact-subset,"
                                              "nfcorpus-missing | scifact-subset,scifact-tiny,nfcorpus-missing")


# Clicks the suite table's first measure header twice, recording the order of the datasets each time.
SORT_PROBE = """(function(){var t=document.querySelector('table[data-table="suite-datasets"]'),th=t.tHead.rows[0].cells[4];
function order(){return Array.prototype.map.call(t.tBodies[0].rows,function(r){return r.cells[0].textContent;}).join(",");}
var seen=[order()];th.click();seen.push(order());th.click();seen.push(order());
document.body.setAttribute("data-probe",seen.join(" | "));})();"""
