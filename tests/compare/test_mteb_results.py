"""MTEB's per-task results files (TaskResult layout, plain JSON) read and written, and set beside a
team's figures in compare and report (means only: MTEB publishes no per-query values).

The real layout and the published figures are MTEB's own files for all-MiniLM-L6-v2 (SciFact and
NFCorpus, copied unchanged from the public embeddings-benchmark/results repository, CC0: see
data/mteb/SOURCE.md). irforge's own all-MiniLM-L6-v2 run on SciFact must give MTEB's published
nDCG@10 (0.64508) and R@100 (0.925) to MTEB's five digits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.results.mteb import MEANS_ONLY, beside_published, read_mteb_results, read_task_result, task_result_record

MINILM = (Path(__file__).parent / "data" / "mteb" / "results" / "sentence-transformers__all-MiniLM-L6-v2"
          / "8b3219a92973c328a8e22fadcfa821b5dc75636a")


def _published(task: str) -> dict:
    """The published file's test entry, read by hand."""
    return json.loads((MINILM / f"{task}.json").read_text())["scores"]["test"][0]


@pytest.fixture(scope="module")
def bm25_scifact(beir_dir, tmp_path_factory) -> dict:
    """Two BM25 systems (Lucene's and Elasticsearch's k1, b) on SciFact, via irforge eval."""
    root = tmp_path_factory.mktemp("mteb-bm25")
    systems = {}
    for label, k1, b in (("bm25", "0.9", "0.4"), ("bm25-es", "1.2", "0.75")):
        assert main(["eval", "--dataset", str(beir_dir / "scifact"), "--out", str(root / label), "--k1", k1, "--b", b,
                     "--index-dir", str(root / "index")]) == 0
        systems[label] = root / label
    return systems


def test_the_published_files_are_read_with_their_figures_model_and_revision():
    results = {r.task_name: r for r in read_mteb_results(MINILM)}   # model_meta.json is not a task
    assert sorted(results) == ["NFCorpus", "SciFact"]
    scifact = results["SciFact"]
    assert (scifact.model, scifact.revision, scifact.mteb_version) == (
        "sentence-transformers/all-MiniLM-L6-v2", "8b3219a92973c328a8e22fadcfa821b5dc75636a", "1.12.75")
    assert scifact.figure("test", "nDCG@10") == _published("SciFact")["ndcg_at_10"] == 0.64508
    assert scifact.figure("test", "R@100") == _published("SciFact")["recall_at_100"] == 0.925
    assert scifact.figure("test", "AP@100") == _published("SciFact")["map_at_100"]
    assert scifact.figure("test", "RR@10") == _published("SciFact")["mrr_at_10"]
    assert scifact.figure("train", "nDCG@10") == 0.6602
    assert scifact.figure("test", "Judged@10") is None   # MTEB has no such figure
    assert results["NFCorpus"].figure("test", "nDCG@10") == 0.31594


def test_irforges_minilm_on_scifact_gives_mtebs_published_figures(scifact_dense):
    beside = beside_published([{"system": "irforge MiniLM", "dataset": scifact_dense["dataset"], "split": "test",
                                "metrics": scifact_dense["metrics"]}], read_mteb_results(MINILM))
    rows = {r["measure"]: r for r in beside["rows"]}
    assert rows["nDCG@10"]["mteb"] == 0.64508 and rows["nDCG@10"]["team"] == pytest.approx(0.64508, abs=5e-6)
    assert rows["R@100"]["mteb"] == 0.925 and rows["R@100"]["team"] == pytest.approx(0.925, abs=5e-6)
    # MTEB rounds these to five digits; its MRR it writes unrounded
    for measure in ("AP@100", "P@10"):
        assert rows[measure]["team"] == pytest.approx(rows[measure]["mteb"], abs=5e-6)
    assert rows["RR@10"]["team"] == pytest.approx(_published("SciFact")["mrr_at_10"], abs=1e-12)


def test_a_written_file_has_mtebs_layout_and_reads_back(bm25_scifact, tmp_path):
    results = json.loads((bm25_scifact["bm25"] / "results.json").read_text())
    written = task_result_record(results, "SciFact")
    published = json.loads((MINILM / "SciFact.json").read_text())
    assert set(written) - {"irforge"} == set(published)                    # the same top-level keys
    entry = written["scores"]["test"][0]
    assert set(entry) <= set(published["scores"]["test"][0])               # every score key one MTEB writes
    assert entry["main_score"] == entry["ndcg_at_10"] == results["metrics"]["nDCG@10"]
    path = tmp_path / "SciFact.json"
    path.write_text(json.dumps(written))
    back = read_task_result(path)
    assert back.figure("test", "R@100") == results["metrics"]["R@100"] and back.task_name == "SciFact"


def test_compare_sets_the_published_figures_beside_each_system(bm25_scifact, tmp_path, capsys):
    code = main(["compare", str(bm25_scifact["bm25"]), str(bm25_scifact["bm25-es"]), "-m", "nDCG@10", "-m", "R@100",
                 "--mteb", str(MINILM), "--out", str(tmp_path / "cmp")])
    out = capsys.readouterr().out
    assert code == 0
    assert "published MTEB figures (means only: MTEB publishes no per-query values" in out
    comparison = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    rows = {(r["system"], r["measure"]): r for r in comparison["published"]["rows"]}
    team = json.loads((bm25_scifact["bm25"] / "results.json").read_text())["metrics"]["nDCG@10"]
    row = rows[("bm25", "nDCG@10")]
    assert (row["task"], row["team"], row["mteb"]) == ("SciFact", team, 0.64508)
    assert row["difference"] == pytest.approx(team - 0.64508, abs=1e-12)
    assert f"{team:.4f}" in out and "0.6451" in out
    assert comparison["published"]["note"] == MEANS_ONLY


def test_report_has_a_section_of_published_figures(bm25_scifact, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["report", str(bm25_scifact["bm25"]), "--mteb", str(MINILM / "SciFact.json"), "--out", str(page)]) == 0
    html = page.read_text()
    assert 'data-table="mteb-published"' in html and "MTEB publishes no per-query values" in html
    assert "0.6451" in html and "sentence-transformers/all-MiniLM-L6-v2" in html


def test_bench_writes_mteb_files_that_compare_reads(beir_dir, tmp_path):
    folder = tmp_path / "mteb"
    assert main(["bench", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / "out"),
                 "--index-dir", str(tmp_path / "index"), "--mteb-results", str(folder)]) == 0
    written = read_task_result(folder / "SciFact.json")
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert written.figure("test", "nDCG@10") == suite["datasets"][0]["metrics"]["nDCG@10"]


def test_a_file_not_in_mtebs_layout_is_refused_naming_it(bm25_scifact, tmp_path, capsys):
    bad = tmp_path / "SciFact.json"
    bad.write_text(json.dumps({"test": {"ndcg_at_10": 0.6}}))
    assert main(["compare", str(bm25_scifact["bm25"]), str(bm25_scifact["bm25-es"]), "--mteb", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: not an MTEB results file in its TaskResult layout" in err
