"""`irforge report` on inputs it cannot use: a clear message naming the file, exit 2, nothing
written; and what it reads from each kind of input (no browser needed here)."""

from __future__ import annotations

import json
import re

import pytest

from irforge.cli.main import main
from irforge.reports.inputs import load_inputs
from irforge.reports.markup import esc
from irforge.reports.plots import BETTER, NEUTRAL, WORSE, difference_plot, nice_ticks


def report(capsys, *argv) -> tuple[int, str]:
    code = main(["report", *map(str, argv)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not JSON (line 1, column 2"),
    ("[1, 2]", "holds a JSON list, not an object"),
    ('{"kind": "leaderboard"}', "unknown kind 'leaderboard'"),
    ('{"dataset": "scifact"}', "not a complete results file: missing 'metrics', 'retriever' (no \"kind\" key"),
    ('{"kind": "comparison", "measures": [], "systems": []}', "not a complete comparison file: missing 'table', 'comparisons'"),
    ('{"kind": "suite", "measures": ["nDCG@10"]}', "not a complete suite file: missing 'datasets'"),
    ('{"kind": "suite", "measures": ["nDCG@10"], "datasets": ["scifact"]}', "'datasets' must be a list of objects"),
    ('{"metrics": [0.5], "retriever": {}}', "'metrics' must be an object, not [0.5]"),
])
def test_an_input_it_cannot_read_is_named_and_nothing_is_written(content, message, tmp_path, capsys):
    bad = tmp_path / "input.json"
    bad.write_text(content)
    code, err = report(capsys, bad, "--out", tmp_path / "report.html")
    assert code == 2 and f"irforge report: error: {bad}" in err and message in err, err
    assert not (tmp_path / "report.html").exists()


def test_missing_paths_folders_and_a_folder_as_out(report_inputs, tmp_path, capsys):
    code, err = report(capsys, tmp_path / "nowhere", "--out", tmp_path / "r.html")
    assert code == 2 and "nowhere: no such file or folder" in err
    (tmp_path / "empty").mkdir()
    code, err = report(capsys, tmp_path / "empty", "--out", tmp_path / "r.html")
    assert code == 2 and "holds none of comparison.json, suite.json, results.json" in err
    code, err = report(capsys, report_inputs.bm25_a, "--out", tmp_path)
    assert code == 2 and "is a folder; give the HTML file's path" in err
    code, err = report(capsys, report_inputs.bm25_a, "--out", tmp_path / "no" / "such" / "r.html")
    assert code == 2 and "does not exist" in err
    # One good input and one bad: still nothing written (every input is read before writing).
    code, err = report(capsys, report_inputs.bm25_a, tmp_path / "nowhere", "--out", tmp_path / "r.html")
    assert code == 2 and not (tmp_path / "r.html").exists()


def test_an_existing_report_is_replaced_whole(report_inputs, tmp_path, capsys):
    out = tmp_path / "r.html"
    out.write_text("old")
    assert main(["report", str(report_inputs.bm25_a), "--out", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and out.read_text().rstrip().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]   # no temporary left beside it
    assert f"wrote {out}: 1 input, 1 evaluated run (system × dataset), 0 plots" in capsys.readouterr().out


def test_what_each_kind_of_input_yields(report_inputs):
    items = load_inputs([str(report_inputs.bm25_a), str(report_inputs.bm25_b / "results.json"),
                         str(report_inputs.comparison.parent), str(report_inputs.suite.parent)])
    assert [i.kind for i in items] == ["results", "results", "comparison", "suite"]
    assert [s.label for s in items[0].systems + items[1].systems] == ["bm25-a", "bm25-b"]
    assert [s.letter for s in items[2].systems] == ["a", "b"]
    # The suite's failed dataset has no results file: a note, not an error.
    # A suite is one system (its name) on each dataset, not a system per dataset.
    assert [s.label for s in items[3].systems] == ["scifact-slices · scifact-subset", "scifact-slices · scifact-tiny"]
    assert len(items[3].notes) == 1 and "nfcorpus-missing" in items[3].notes[0]
    assert items[1].systems[0].record["holes"]["depth"] == 3 and "per_query" not in items[1].systems[0].record
    assert items[0].systems[0].record["data"]["qrels_sha256"] == items[1].systems[0].record["data"]["qrels_sha256"]


def test_two_results_folders_of_the_same_name_get_distinct_labels(report_inputs, tmp_path):
    for name in ("x", "y"):
        (tmp_path / name / "bm25").mkdir(parents=True)
        (tmp_path / name / "bm25" / "results.json").write_text((report_inputs.bm25_a / "results.json").read_text())
    items = load_inputs([str(tmp_path / "x" / "bm25"), str(tmp_path / "y" / "bm25"), str(tmp_path / "y" / "bm25")])
    assert [i.systems[0].label for i in items] == ["bm25", "y/bm25", "y/bm25 #2"]


def test_escaping_and_ticks():
    assert esc('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;" and esc(None) == "—" and esc(float("nan")) == "—"
    assert nice_ticks(-0.31, 0.72) == [-0.5, -0.25, 0.0, 0.25, 0.5, 0.75]
    assert nice_ticks(0.0, 0.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]     # every query tied: a readable axis still
    assert nice_ticks(0.0, 0.8434) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_a_difference_plot_draws_each_query_on_its_side_of_zero():
    svg = difference_plot([0.5, -0.25, 0.0, 0.1], "nDCG@10", "b", "a<", wins=2, ties=1, losses=1)
    bars = re.findall(r'<rect [^>]*fill="(#[0-9a-f]+)"', svg)
    assert bars == [BETTER, BETTER, NEUTRAL, WORSE]   # sorted from largest to smallest difference
    assert "2 wins" in svg and "1 ties" in svg and "1 losses" in svg and "nDCG@10: b − a&lt;" in svg
    assert "Δ nDCG@10" in svg and "queries, sorted by difference" in svg   # axis labels
    # 10,000 queries: one bar per pixel of the plot at most, the file stays small.
    assert len(re.findall("<rect ", difference_plot([i / 10_000 for i in range(-5000, 5000)], "m", "b", "a", 1, 1, 1))) < 600


def test_instruction_results_show_their_metrics(report_inputs, tmp_path, capsys):
    """eval-instructions' results.json ("kind": "instructions"): the metrics table, no error."""
    record = json.loads((report_inputs.bm25_a / "results.json").read_text())
    record.update(kind="instructions", metrics={"p-MRR": 0.0123, "nDCG@10": 0.5}, dimensions={})
    (tmp_path / "inst").mkdir()
    (tmp_path / "inst" / "results.json").write_text(json.dumps(record))
    assert main(["report", str(tmp_path / "inst"), "--out", str(tmp_path / "r.html")]) == 0
    text = (tmp_path / "r.html").read_text()
    assert "p-MRR" in text and "0.0123" in text and "Instruction-following results" in text
    assert re.search(r'data-table="results-metrics"', text)


def test_a_comparison_of_bench_suites_gets_a_table_per_measure_and_each_dataset(scifact_tiny, nfcorpus_subset, tmp_path, capsys):
    """Real `irforge bench` folders compared by `irforge compare`, then reported: one summary table
    per measure (systems by datasets and the mean) and a comparison section per dataset."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: two\ndatasets:\n  - {{path: {scifact_tiny}, label: scifact}}\n  - {{path: {nfcorpus_subset}, label: nfcorpus}}\n")
    for label, flags in (("bm25", []), ("bm25-flat", ["--k1", "0.3", "--b", "0.1"])):
        assert main(["bench", "--suite", str(suite), "--out", str(tmp_path / label), "--index-dir", str(tmp_path / "index"),
                     "-m", "nDCG@10", "-m", "R@100", *flags]) == 0
    assert main(["compare", str(tmp_path / "bm25"), str(tmp_path / "bm25-flat"), "--out", str(tmp_path / "cmp")]) == 0
    assert main(["report", str(tmp_path / "cmp"), "--out", str(tmp_path / "report.html")]) == 0
    capsys.readouterr()
    html = (tmp_path / "report.html").read_text()
    for anchor in ('id="suites-1"', 'id="suites-1-1"', 'id="suites-1-2"'):
        assert anchor in html
    assert html.count('data-table="suites-1-nDCG@10"') == 1 and html.count('data-table="suites-1-R@100"') == 1
    assert "Comparison: " in html and "cmp · nfcorpus" in html
