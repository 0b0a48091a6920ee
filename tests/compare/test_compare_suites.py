"""`irforge compare` over `irforge bench` folders: every shared dataset compared as `irforge
compare` compares that dataset's results, and the means over datasets beside them."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from irforge.cli.main import main


@pytest.fixture(scope="module")
def two_suites(scifact_subset, nfcorpus_subset, tmp_path_factory):
    root = tmp_path_factory.mktemp("suites")
    suite = root / "suite.yaml"
    suite.write_text(f"name: two\ndatasets:\n  - {{path: {scifact_subset}, label: scifact}}\n  - {{path: {nfcorpus_subset}, label: nfcorpus}}\n")
    folders = {}
    for label, flags in (("bm25", []), ("bm25-flat", ["--k1", "0.3", "--b", "0.1"])):
        folders[label] = root / label
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["bench", "--suite", str(suite), "--out", str(folders[label]), "--index-dir", str(root / "index"),
                         "-m", "nDCG@10", "-m", "R@100", *flags]) == 0
    return folders


def test_each_shared_dataset_is_compared_as_its_results_alone(two_suites, tmp_path, capsys):
    argv = ["--test", "t", "--test", "wilcoxon", "--format", "json"]
    assert main(["compare", *map(str, two_suites.values()), *argv, "--out", str(tmp_path / "cmp")]) == 0
    suite_comparison = json.loads(capsys.readouterr().out)
    assert suite_comparison["kind"] == "suite-comparison" and suite_comparison["datasets"] == ["scifact", "nfcorpus"]
    for dataset in ("scifact", "nfcorpus"):
        assert main(["compare", *(str(f / dataset) for f in two_suites.values()), "--label", "bm25", "--label", "bm25-flat", *argv]) == 0
        alone = json.loads(capsys.readouterr().out)
        inner = suite_comparison["comparisons"][dataset]
        assert [c["tests"] for c in inner["comparisons"]] == [c["tests"] for c in alone["comparisons"]]
        assert inner["table"] == alone["table"]
    for label in two_suites:
        for measure in ("nDCG@10", "R@100"):
            expected = sum(json.loads((two_suites[label] / d / "results.json").read_text())["metrics"][measure]
                           for d in ("scifact", "nfcorpus")) / 2
            assert suite_comparison["mean"][label][measure] == pytest.approx(expected, abs=1e-12)
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["comparison.csv", "comparison.json", "comparison.md",
                                                                     "comparison.tex"]
    latex = (tmp_path / "cmp" / "comparison.tex").read_text()
    assert latex.count(r"\begin{tabular}") == 2 and "scifact & nfcorpus & Mean" in latex
    csv_lines = (tmp_path / "cmp" / "comparison.csv").read_text().splitlines()
    assert csv_lines[0].startswith("dataset,measure,system") and len(csv_lines) == 1 + 2 * 2   # 2 datasets x 2 measures x 1 pair


def test_suites_and_results_are_not_mixed(two_suites, capsys):
    assert main(["compare", str(two_suites["bm25"]), str(two_suites["bm25-flat"] / "scifact")]) == 2
    assert "either irforge bench folders" in capsys.readouterr().err
