"""`irforge report` on real inputs, opened in a real headless Chromium: the page renders, its
script runs without an error, the tables and plots the inputs call for are in the rendered DOM,
the screenshot is a page and not a blank, and nothing in the file points outside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.reports.page import hash_source

from ..browser import RenderedPage, chromium, colours, find_browser, finish, png_top_rows

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
    # Reproducibility: a row per evaluated run, once however many inputs hold it: bm25-a (given, compared,
    # and copied as the suite's scifact-subset), bm25-b (given, compared), the suite's scifact-tiny.
    assert dom.rows["configuration"] == dom.rows["data-fingerprints"] == 3
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
