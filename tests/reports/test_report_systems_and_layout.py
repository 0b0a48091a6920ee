"""What a newcomer's report got wrong (issue 29), each on real `irforge eval`, `compare` and `bench`
outputs for a SciFact slice: the pairwise table wider than a 1,400 px window, one run listed twice
when it came in through two inputs, a bench's datasets counted and named as systems, run files
compared "on None (None)", and a reused index's opening time shown as its index time."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from irforge.cli.main import main

from ..browser import DevTools

LABELS = ["irforge_bm25_default", "bm25_k1_1.2_b_0.75", "bm25_k1_1.5_b_0.9"]   # underscores: no line break inside
SETTINGS = [("0.9", "0.4"), ("1.2", "0.75"), ("1.5", "0.9")]


class Tables(HTMLParser):
    """Every data-table's body rows as lists of cell texts, and the text of every <p>."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.paragraphs: list[str] = []
        self._table = self._cell = self._paragraph = None
        self._in_body = False
        self.feed(text)

    def handle_starttag(self, name, attrs):
        attrs = dict(attrs)
        if name == "table":
            self._table = attrs.get("data-table")
            self.tables[self._table] = []
        elif name == "tbody":
            self._in_body = True
        elif name == "tr" and self._table and self._in_body:
            self.tables[self._table].append([])
        elif name in ("td", "th") and self._table and self._in_body:
            self._cell = ""
        elif name == "p":
            self._paragraph = ""

    def handle_endtag(self, name):
        if name in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(self._cell.strip())
            self._cell = None
        elif name == "tbody":
            self._in_body = False
        elif name == "table":
            self._table = None
        elif name == "p" and self._paragraph is not None:
            self.paragraphs.append(self._paragraph.strip())
            self._paragraph = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._paragraph is not None:
            self._paragraph += data


@pytest.fixture(scope="module")
def runs(scifact_subset, tmp_path_factory) -> Path:
    """Three BM25 settings on the slice (the first run builds its index, a fourth reuses it), their
    comparison, the same runs compared as TREC files against the qrels, and a bench of one system
    on two datasets."""
    root = tmp_path_factory.mktemp("report-systems")
    index = ["--index-dir", str(root / "indexes")]
    for label, (k1, b) in zip(LABELS, SETTINGS):
        assert main(["eval", "--dataset", str(scifact_subset), "--retriever", "bm25", "--k1", k1, "--b", b,
                     "--out", str(root / label), *index]) == 0
    assert main(["eval", "--dataset", str(scifact_subset), "--retriever", "bm25", "--out", str(root / "reused"), *index]) == 0
    assert main(["compare", *[str(root / label) for label in LABELS], "--out", str(root / "compare")]) == 0
    assert main(["compare", *[str(root / label / "run.trec") for label in LABELS],
                 "--qrels", str(scifact_subset / "qrels" / "test.tsv"), "--out", str(root / "compare-trec")]) == 0
    tiny = root / "tiny"
    tiny.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        (tiny / name).write_bytes((scifact_subset / name).read_bytes())
    (tiny / "qrels").mkdir()
    lines = (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()
    (tiny / "qrels" / "test.tsv").write_text("\n".join(lines[:11]) + "\n")   # the header and 10 judgements
    assert main(["bench", "--dataset", str(scifact_subset), "--dataset", str(tiny), "--name", "bm25-default",
                 "--out", str(root / "bench"), *index]) == 0
    return root


def report(tmp_path: Path, *inputs: Path) -> Tables:
    out = tmp_path / "report.html"
    assert main(["report", *map(str, inputs), "--out", str(out)]) == 0
    return Tables(out.read_text(encoding="utf-8"))


def test_a_run_given_directly_and_inside_a_comparison_is_listed_once(runs, tmp_path):
    page = report(tmp_path, runs / "compare", runs / LABELS[0])
    configuration = page.tables["configuration"]
    # By hand: three evaluated runs, the first of them in both inputs.
    assert [row[0] for row in configuration] == LABELS, configuration
    assert [row[1] for row in configuration] == ["1, 2", "1", "1"]
    assert len(page.tables["data-fingerprints"]) == 3


def test_a_benchs_datasets_are_not_called_systems(runs, tmp_path):
    page = report(tmp_path, runs / "bench")
    suite = json.loads((runs / "bench" / "suite.json").read_text())
    labels = [entry["label"] for entry in suite["datasets"]]
    # The inputs table: one system, two datasets (not "2 systems").
    (number, _, kind, systems, datasets, *_), = page.tables["inputs"]
    assert (kind, systems, datasets) == ("suite", "1", "2")
    # Per-dataset rows name the system on each dataset, not the dataset alone as a system.
    assert [row[0] for row in page.tables["suite-judged"]] == [f"bm25-default · {label}" for label in labels]
    assert [row[0] for row in page.tables["configuration"]] == [f"bm25-default · {label}" for label in labels]


def test_run_files_compared_against_qrels_name_the_qrels_not_none(runs, scifact_subset, tmp_path):
    page = report(tmp_path, runs / "compare-trec")
    summary = next(p for p in page.paragraphs if p.startswith("3 systems"))
    assert "None" not in summary, summary
    assert "run files" in summary and str(scifact_subset / "qrels" / "test.tsv") in summary, summary


def test_a_reused_index_is_not_shown_as_its_build_time(runs, tmp_path):
    built = json.loads((runs / LABELS[0] / "results.json").read_text())
    reused = json.loads((runs / "reused" / "results.json").read_text())
    assert built["counts"]["ingest_skipped"] is False and reused["counts"]["ingest_skipped"] is True
    page = report(tmp_path, runs / LABELS[0], runs / "reused", runs / "compare-trec")
    timings = {row[0]: row[1:] for row in page.tables["results-timings"]}
    assert not any("reused" in cell for cell in timings[LABELS[0]])
    # The index column, found by its reused cell (another column may show the same seconds: a
    # reused index opens in 0.01 s, as fast as an evaluation).
    column = next(i for i, cell in enumerate(timings["reused"]) if cell.startswith("reused index"))
    assert timings["reused"][column] == f"reused index, opened in {reused['timings']['index_s']:.2f} s", timings
    assert timings[LABELS[0]][column] == f"{built['timings']['index_s']:.2f} s", timings
    # Run files compared against qrels indexed nothing (their results record no timings at all).
    assert all(len(row) == 1 for row in page.tables["comparison-timings"])


def test_a_comparisons_reused_index_is_marked_too(runs, tmp_path):
    assert main(["compare", str(runs / LABELS[0]), str(runs / "reused"), "--label", "built", "--label", "reused",
                 "--out", str(tmp_path / "compare")]) == 0
    page = report(tmp_path, tmp_path / "compare")
    timings = {row[0]: row[1] for row in page.tables["comparison-timings"]}
    assert timings["built"].endswith(" s") and not timings["built"].startswith("reused")
    assert timings["reused"].startswith("reused index, opened in"), timings


# Per table: its width, the width its scrolling wrapper shows, the wrapper's right edge, and whether
# the wrapper scrolls; then the page's own width against the window's.
MEASURE = """JSON.stringify({tables: Array.prototype.map.call(document.querySelectorAll("table.data"), function(t){
  var w = t.parentElement, r = w.getBoundingClientRect();
  return {name: t.getAttribute("data-table"), table: t.getBoundingClientRect().width, shown: w.clientWidth,
          right: r.right, overflow: getComputedStyle(w).overflowX};}),
  page: document.documentElement.scrollWidth, window: window.innerWidth})"""


def test_every_table_fits_a_1400px_window_or_scrolls_inside_it(runs, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(runs / "compare"), str(runs / "bench"), "--out", str(out)]) == 0
    browser = DevTools(tmp_path / "chromium")
    try:
        browser.call("Emulation.setDeviceMetricsOverride", session=True, width=1400, height=900, deviceScaleFactor=1,
                     mobile=False)
        browser.goto(out.as_uri())
        found = json.loads(browser.evaluate(MEASURE))
        browser.screenshot(tmp_path / "report-1400.png", width=1400, height=900)
    finally:
        browser.close()
    tables = {t["name"]: t for t in found["tables"]}
    pairs = tables["comparison-pairs"]
    # 3 systems: 18 pairs over 6 measures, 13 columns with the four tests' p-values (bootstrap last).
    assert pairs["table"] <= pairs["shown"] + 1, f"the pairwise table is {pairs['table']} px in {pairs['shown']} px"
    assert found["page"] <= found["window"], f"the page is {found['page']} px wide in a {found['window']} px window"
    for t in found["tables"]:
        assert t["right"] <= found["window"] + 1, f"{t['name']} ends past the window's edge"
        assert t["table"] <= t["shown"] + 1 or t["overflow"] in ("auto", "scroll"), f"{t['name']} is cut: {t}"
