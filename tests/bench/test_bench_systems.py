"""`irforge bench` with a suite file's `systems:`: several systems (irforge's BM25 and two runs made
elsewhere, one TREC and one JSON) over a suite in one command, each into OUT/<name>/ as its own
bench, then one compare and one report over those folders. Each system's nDCG@10 is checked
against pytrec_eval on that system's run file; bad systems are refused before any dataset runs."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import pytrec_eval

from irforge.cli.main import main

DOCS = {"d1": "solar panels turn sunlight into electricity", "d2": "wind turbines turn wind into electricity",
        "d3": "the cat sat on the mat", "d4": "dogs and cats are common pets",
        "d5": "electricity prices rose this winter", "d6": "a recipe for apple pie with cinnamon"}
QUERIES = {"q1": "sunlight electricity", "q2": "cats pets", "q3": "apple pie recipe"}
QRELS = {"q1": {"d1": 2, "d5": 1}, "q2": {"d4": 2, "d3": 1}, "q3": {"d6": 1}}
# Two hand-made runs, as other toolkits would write them (each differs from BM25 and from the other).
TREC_RUN = {"q1": {"d5": 3.0, "d2": 2.0, "d1": 1.0}, "q2": {"d3": 2.0, "d4": 1.0}, "q3": {"d1": 2.0, "d6": 1.0}}
JSON_RUN = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d1": 3.0, "d2": 2.0, "d4": 1.0}, "q3": {"d6": 5.0}}


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def ndcg10(run: dict) -> float:
    """pytrec_eval's nDCG@10 averaged over the judged queries (a query without results scores 0)."""
    found = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10"}).evaluate(run)
    return sum(found.get(q, {}).get("ndcg_cut_10", 0.0) for q in QRELS) / len(QRELS)


def read_trec(path: Path) -> dict:
    run: dict = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A tiny BEIR folder, the two external runs and a suite file naming three systems, under one root."""
    root = tmp_path_factory.mktemp("systems")
    data = root / "tiny"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in DOCS.items()))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    runs = root / "runs"
    runs.mkdir()
    (runs / "other.trec").write_text("".join(f"{q} Q0 {d} {r} {s} other\n" for q, docs in TREC_RUN.items()
                                             for r, (d, s) in enumerate(docs.items(), 1)))
    (runs / "other.json").write_text(json.dumps(JSON_RUN))
    return root


def write_suite(root: Path, systems: str) -> Path:
    suite = root / "suite.yaml"
    suite.write_text(f"name: tiny-systems\ndatasets:\n  - {{path: tiny, label: tiny}}\nsystems:\n{systems}")
    return suite


THREE = ("  - {name: irforge-bm25}\n  - {name: trec-run, given: {runs: [runs/other.trec]}}\n"
         "  - {name: json-run, given: {runs: [runs/other.json]}}\n")


def test_one_bench_runs_every_system_each_equal_to_pytrec_eval_on_its_run(workspace, tmp_path):
    suite = write_suite(workspace, THREE)
    out = tmp_path / "bench"
    code, printed, progress = run_cli(["bench", "--suite", str(suite), "--out", str(out),
                                       "--index-dir", str(tmp_path / "index"), "-m", "nDCG@10"])
    assert code == 0, progress
    assert sorted(p.name for p in out.iterdir()) == ["irforge-bm25", "json-run", "trec-run"]
    expected = {"irforge-bm25": ndcg10(read_trec(out / "irforge-bm25" / "tiny" / "run.trec")),
                "trec-run": ndcg10(TREC_RUN), "json-run": ndcg10(JSON_RUN)}
    assert len(set(round(v, 6) for v in expected.values())) == 3   # three different systems
    for name, value in expected.items():
        record = json.loads((out / name / "suite.json").read_text())
        assert record["name"] == name
        assert record["datasets"][0]["metrics"]["nDCG@10"] == pytest.approx(value, abs=1e-9)
        assert json.loads((out / name / "tiny" / "results.json").read_text())["metrics"]["nDCG@10"] == pytest.approx(value)
        row = next(line for line in printed.splitlines() if line.startswith(name + " "))
        assert row.split()[1:] == [f"{value:.4f}", f"{value:.4f}"]   # the dataset's cell and the Mean
    # A second run reuses every system's dataset.
    code, _, progress = run_cli(["bench", "--suite", str(suite), "--out", str(out),
                                 "--index-dir", str(tmp_path / "index"), "-m", "nDCG@10"])
    assert code == 0 and progress.count(": reused") == 3, progress
    # One compare and one report over the systems' folders, given one by one or as OUT itself.
    folders = [str(out / name) for name in ("irforge-bm25", "trec-run", "json-run")]
    for inputs in (folders, [str(out)]):
        code, printed, progress = run_cli(["compare", *inputs, "--format", "json"])
        assert code == 0, progress
        means = json.loads(printed)["mean"]
        assert {name: means[name]["nDCG@10"] for name in means} == pytest.approx(expected)
        report = tmp_path / f"report-{len(inputs)}.html"
        code, printed, progress = run_cli(["report", *inputs, "--out", str(report)])
        assert code == 0 and "3 evaluated runs (system × dataset)" in printed, progress
        assert report.is_file()


def test_a_system_gives_its_run_on_each_dataset(workspace, tmp_path):
    """`run: {label: file}`: a system's own run per dataset (here the TREC run on one copy of the
    collection, the JSON run on another), each figure pytrec_eval's on that file."""
    suite = workspace / "two.yaml"
    suite.write_text("datasets:\n  - {path: tiny, label: one}\n  - {path: tiny, label: two}\nsystems:\n"
                     "  - {name: mixed, run: {one: runs/other.trec, two: runs/other.json}}\n")
    out = tmp_path / "bench"
    code, printed, progress = run_cli(["bench", "--suite", str(suite), "--out", str(out), "-m", "nDCG@10"])
    assert code == 0, progress
    record = json.loads((out / "mixed" / "suite.json").read_text())
    assert {d["label"]: d["metrics"]["nDCG@10"] for d in record["datasets"]} == pytest.approx(
        {"one": ndcg10(TREC_RUN), "two": ndcg10(JSON_RUN)})
    assert record["mean"]["nDCG@10"] == pytest.approx((ndcg10(TREC_RUN) + ndcg10(JSON_RUN)) / 2)


@pytest.mark.parametrize("systems, message", [
    ("  - {name: a, run: {nowhere: runs/other.trec}}\n", "systems[0].run.nowhere"),
    ("  - {name: a, run: {tiny: runs/other.trec}, given: {runs: [runs/other.json]}}\n", "systems[0] (a)"),
    ("  - {name: a, dataset: tiny}\n", "systems[0].dataset"),
    ("  - {name: a}\n  - {name: a, given: {runs: [runs/other.trec]}}\n", "systems[1].name"),
    ("  - {name: a}\n  - {name: b, bm25: {k1: -3}}\n", "systems[1] (b)"),
    ("  - {name: a}\n  - {name: b, retriever: dense, given: {runs: [runs/other.trec]}}\n", "systems[1] (b)"),
    ("  - {name: a, colour: blue}\n", "systems[0] (a)"),
    ("  - {name: ../up}\n", "systems[0].name"),
    ("  - {given: {runs: [runs/other.trec]}}\n", "systems[0].name"),
])
def test_bad_systems_are_refused_naming_the_entry_before_any_dataset_runs(workspace, tmp_path, systems, message):
    suite = write_suite(workspace, systems)
    out = tmp_path / "bench"
    code, _, progress = run_cli(["bench", "--suite", str(suite), "--out", str(out), "--index-dir", str(tmp_path / "index")])
    assert code == 2 and message in progress, progress
    assert not out.exists()


def test_a_suite_job_refuses_systems_rather_than_dropping_them(workspace, tmp_path):
    suite = write_suite(workspace, THREE)
    code, _, progress = run_cli(["submit", "--suite", str(suite), "--out", str(tmp_path / "job")])
    assert code == 2 and "a suite job runs one system" in progress, progress
