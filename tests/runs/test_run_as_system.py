"""A run file goes wherever a system goes, because it is built by the one builder: `bench` (a suite
file's `run:` entries, or --run on one dataset), `compare`, `report`, hole filling (`eval --run
--fill-holes`, `judge-holes` on a JSON run) and orchestrator jobs (the file checked against the
allowed roots like every other path). The runs come from another toolkit (rank_bm25) on a SciFact
slice; each figure is checked against pytrec_eval on the same file, or a hand count."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import yaml
from rank_bm25 import BM25Okapi

from irforge.cli.main import main
from irforge.data import BeirDataset

from ..judge import scripted_chat as scripted
from ..orchestrator.conftest import make_orchestrator, wait_for  # noqa: F401 - the fixture, used by the job test

KEY_ENV = "IRFORGE_TEST_RUNS_JUDGE_KEY"


def quietly(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def rank_bm25_run(dataset: Path, depth: int = 10) -> dict:
    """rank_bm25's Okapi BM25 (lower-cased word tokens), the top `depth` per test query."""
    source = BeirDataset.open(dataset)
    qrels = source.qrels("test")
    documents = list(source.corpus())
    tokens = lambda text: re.findall(r"\w+", text.lower())  # noqa: E731
    bm25 = BM25Okapi([tokens(d.full_text) for d in documents])
    run = {}
    for query in source.queries():
        if query.query_id in qrels:
            scores = bm25.get_scores(tokens(query.text))
            run[query.query_id] = {documents[i].doc_id: float(scores[i]) for i in np.argsort(-scores, kind="stable")[:depth]}
    return run


def pytrec_mean(dataset: Path, run: dict, measure: str = "ndcg_cut_10") -> float:
    qrels = BeirDataset.open(dataset).qrels("test")
    found = pytrec_eval.RelevanceEvaluator(qrels, {measure.rsplit("_", 1)[0] + "." + measure.rsplit("_", 1)[1]}).evaluate(run)
    return sum(found.get(q, {}).get(measure, 0.0) for q in qrels) / len(qrels)


@pytest.fixture(scope="module")
def runs(scifact_tiny, tmp_path_factory) -> dict:
    """Two external runs on the slice: rank_bm25's as TREC and as JSON (top 5, so they differ)."""
    root = tmp_path_factory.mktemp("external-runs")
    deep, shallow = rank_bm25_run(scifact_tiny, 10), rank_bm25_run(scifact_tiny, 5)
    trec = root / "rank_bm25.trec"
    trec.write_text("".join(f"{q} Q0 {d} {n} {s!r} rank_bm25-0.2.2\n" for q, scores in deep.items()
                            for n, (d, s) in enumerate(scores.items(), 1)))
    (root / "rank_bm25.top5.json").write_text(json.dumps(shallow))
    return {"trec": trec, "json": root / "rank_bm25.top5.json", "deep": deep, "shallow": shallow, "root": root}


def test_bench_takes_runs_from_suite_entries_and_redoes_a_changed_file(scifact_tiny, runs, tmp_path, capsys):
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "external", "datasets": [
        {"path": str(scifact_tiny), "label": "deep", "run": str(runs["trec"])},
        {"path": str(scifact_tiny), "label": "shallow", "run": str(runs["json"])}]}))
    out = tmp_path / "bench"
    assert quietly(["bench", "--suite", str(suite), "--out", str(out), "-m", "nDCG@10"]) == 0
    record = json.loads((out / "suite.json").read_text())
    metrics = {d["label"]: d["metrics"]["nDCG@10"] for d in record["datasets"]}
    assert metrics == pytest.approx({"deep": pytrec_mean(scifact_tiny, runs["deep"]),
                                     "shallow": pytrec_mean(scifact_tiny, runs["shallow"])}, abs=1e-12)
    assert json.loads((out / "deep" / "results.json").read_text())["retriever"]["format"] == "trec"
    # The same files: reused. Another file at the same path: redone, the fingerprint named.
    capsys.readouterr()
    assert main(["bench", "--suite", str(suite), "--out", str(out), "-m", "nDCG@10"]) == 0
    assert capsys.readouterr().err.count(": reused") == 2
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps({q: dict(list(s.items())[:3]) for q, s in runs["shallow"].items()}))
    suite.write_text(suite.read_text().replace(str(runs["json"]), str(changed)))
    assert main(["bench", "--suite", str(suite), "--out", str(out), "-m", "nDCG@10"]) == 0
    err = capsys.readouterr().err
    assert "deep: reused" in err and "shallow: redoing: retriever: run_file" in err


def test_bench_refuses_a_run_that_cannot_name_the_system(scifact_tiny, runs, tmp_path, capsys):
    out = str(tmp_path / "bench")
    assert main(["bench", "--dataset", str(scifact_tiny), "--dataset", str(runs["root"]), "--run", str(runs["trec"]),
                 "--out", out]) == 2
    assert "--run names one dataset's run, and the suite has 2 datasets" in capsys.readouterr().err
    suite = tmp_path / "mixed.yaml"
    suite.write_text(yaml.safe_dump({"datasets": [{"path": str(scifact_tiny), "label": "a", "run": str(runs["trec"])},
                                                  {"path": str(scifact_tiny), "label": "b"}]}))
    assert main(["bench", "--suite", str(suite), "--out", out]) == 2
    assert "field 'datasets[1]': has no run" in capsys.readouterr().err
    assert not Path(out).exists()


@pytest.fixture(scope="module")
def three_systems(scifact_tiny, runs, tmp_path_factory) -> dict:
    """irforge's BM25 and the two external runs, each evaluated by `irforge eval` (the bench's own path)."""
    root = tmp_path_factory.mktemp("three")
    folders = {name: root / name for name in ("irforge-bm25", "rank_bm25", "rank_bm25-top5")}
    assert quietly(["eval", "--dataset", str(scifact_tiny), "--out", str(folders["irforge-bm25"]),
                    "--index-dir", str(root / "index")]) == 0
    assert quietly(["eval", "--dataset", str(scifact_tiny), "--run", str(runs["trec"]), "--out", str(folders["rank_bm25"])]) == 0
    assert quietly(["eval", "--dataset", str(scifact_tiny), "--run", str(runs["json"]),
                    "--out", str(folders["rank_bm25-top5"])]) == 0
    return folders


def test_compare_takes_run_systems_like_any_other(three_systems, scifact_tiny, runs, capsys):
    assert main(["compare", *map(str, three_systems.values()), "--format", "json", "-m", "nDCG@10"]) == 0
    table = json.loads(capsys.readouterr().out)["table"]
    means = {row["system"]: row["values"]["nDCG@10"]["mean"] for row in table}
    expected = {"rank_bm25": pytrec_mean(scifact_tiny, runs["deep"]), "rank_bm25-top5": pytrec_mean(scifact_tiny, runs["shallow"])}
    assert {k: means[k] for k in expected} == pytest.approx(expected, abs=1e-12)


def test_compare_scores_a_json_run_against_qrels(scifact_tiny, runs, capsys):
    """`compare --qrels` reads runs through the one reader: a JSON run is a system there too."""
    qrels = scifact_tiny / "qrels" / "test.tsv"
    assert main(["compare", str(runs["trec"]), str(runs["json"]), "--qrels", str(qrels), "--format", "json", "-m", "nDCG@10"]) == 0
    means = [row["values"]["nDCG@10"]["mean"] for row in json.loads(capsys.readouterr().out)["table"]]
    assert means == pytest.approx([pytrec_mean(scifact_tiny, runs["deep"]), pytrec_mean(scifact_tiny, runs["shallow"])],
                                  abs=1e-12)


def test_report_shows_each_run_system(three_systems, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["report", *map(str, three_systems.values()), "--out", str(page)]) == 0
    html = page.read_text()
    assert "run file rank_bm25.trec (trec, rank_bm25-0.2.2)" in html and "run file rank_bm25.top5.json (json)" in html
    assert "3 evaluated runs (system × dataset)" in capsys.readouterr().out


@pytest.fixture()
def judge_spec(tmp_path, monkeypatch):
    server = scripted.ScriptedChat().start()
    server.responder = lambda prompt: "3"
    monkeypatch.setenv(KEY_ENV, "sk-test-runs")
    spec = tmp_path / "judge.yaml"
    spec.write_text(yaml.safe_dump({"kind": "openai-chat", "url": server.url, "model": "scripted-judge",
                                    "api_key_env": KEY_ENV, "timeout_s": 5.0}))
    yield spec
    server.stop()


def holes_by_hand(dataset: Path, run: dict, depth: int) -> int:
    qrels = BeirDataset.open(dataset).qrels("test")
    return sum(1 for q, scores in run.items() for d in sorted(scores, key=lambda d: (-scores[d], d))[:depth]
               if d not in qrels.get(q, {}))


def test_holes_of_a_run_system_are_filled(scifact_tiny, runs, judge_spec, tmp_path):
    out = tmp_path / "filled"
    assert quietly(["eval", "--dataset", str(scifact_tiny), "--run", str(runs["json"]), "--out", str(out),
                    "--fill-holes", "3", "--judge", str(judge_spec), "--store", str(tmp_path / "store.sqlite3")]) == 0
    results = json.loads((out / "results.json").read_text())
    expected = holes_by_hand(scifact_tiny, runs["shallow"], 3)
    assert expected > 0 and results["holes"]["holes"] == expected and results["holes"]["judged"] == expected
    alone = tmp_path / "alone"
    assert quietly(["judge-holes", "--dataset", str(scifact_tiny), "--run", str(runs["json"]), "--out", str(alone),
                    "--depth", "3", "--judge", str(judge_spec), "--store", str(tmp_path / "store.sqlite3")]) == 0
    assert json.loads((alone / "holes.json").read_text())["holes"] == expected


def test_an_orchestrator_job_takes_a_run_inside_its_allowed_roots(make_orchestrator, scifact_tiny, runs, tmp_path):
    from irforge.orchestrator.errors import JobSpecError
    from irforge.orchestrator.spec import JobSpec
    from irforge.orchestrator.store import JobState

    root = tmp_path / "allowed"
    (root / "data").mkdir(parents=True)
    dataset = root / "data" / "tiny"
    dataset.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (dataset / name).parent.mkdir(parents=True, exist_ok=True)
        (dataset / name).write_bytes((scifact_tiny / name).read_bytes())
    inside = root / "data" / "run.trec"
    inside.write_bytes(runs["trec"].read_bytes())
    orchestrator = make_orchestrator(allowed_roots=(root,))
    with pytest.raises(JobSpecError, match=r"'pipeline.given.runs\[0\]'.*outside the orchestrator's allowed roots"):
        orchestrator.submit(JobSpec.of(dataset=str(dataset), runs=(str(runs["trec"]),)))
    job_id = orchestrator.submit(JobSpec.of(dataset=str(dataset), runs=(str(inside),), measures=("nDCG@10",),
                                            output=str(root / "out")))
    record, _ = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED, record.error
    assert [step.name for step in record.steps] == ["retrieve", "evaluate"]
    results = json.loads((root / "out" / "results.json").read_text())
    assert results["metrics"]["nDCG@10"] == pytest.approx(pytrec_mean(dataset, runs["deep"]), abs=1e-12)
    assert results["retriever"]["name"] == "given" and "absent" in results["latency"]
