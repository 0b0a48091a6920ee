"""Hole filling: which pairs are holes (tie rule, BEIR's identical-id drop), how judge labels join
human ones, and `irforge judge-holes` end to end on SciFact with the real embedded judge and with
an LLM judge spec against the scripted chat server (including one that never answers)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.data import read_beir_qrels
from irforge.runs import read_run_file
from irforge.evaluator.core import EvaluationOptions, Evaluator
from irforge.judge.holes import HolesError, HoleSettings, find_holes, judge_to_dataset_scale, with_holes
from irforge.judge.store import JudgementStore

DEPTH = 5


# --- pure rules ----------------------------------------------------------------------------------


def test_holes_follow_the_tie_rule_and_drop_identical_ids():
    qrels = {"q1": {"d1": 1}, "q3": {"x": 0}}
    run = {"q1": {"q1": 9.0, "d1": 3.0, "d2": 2.0, "d3": 2.0, "d4": 1.0},
           "q2": {"d9": 5.0}}                          # q2 has no qrels: not evaluated, so no holes
    # The query's own id is dropped; d3 and d2 tie, and the higher id ranks first.
    assert find_holes(qrels, run, 3) == [("q1", "d3"), ("q1", "d2")]
    assert find_holes(qrels, run, 2) == [("q1", "d3")]
    assert find_holes(qrels, run, 2, drop_identical=False) == [("q1", "q1")]
    assert find_holes(qrels, run, 10) == [("q1", "d3"), ("q1", "d2"), ("q1", "d4")]


def test_judge_labels_map_onto_the_dataset_scale():
    assert judge_to_dataset_scale(2, 1) == {0: 0, 1: 0, 2: 1, 3: 1}        # SciFact
    assert judge_to_dataset_scale(2, 2) == {0: 0, 1: 0, 2: 1, 3: 2}        # NFCorpus
    assert judge_to_dataset_scale(3, 2) == {0: 0, 1: 0, 2: 0, 3: 2}
    assert judge_to_dataset_scale(1, 1) == {0: 0, 1: 1, 2: 1, 3: 1}


def test_hole_at_k_is_one_minus_judged_at_k():
    assert with_holes({"nDCG@10": 0.5, "Judged@10": 0.75}) == {"nDCG@10": 0.5, "Judged@10": 0.75, "Hole@10": 0.25}


@pytest.mark.parametrize("settings", [{"depth": 0}, {"depth": -3}, {"relevant_from": 0}, {"relevant_from": 4}])
def test_bad_settings_are_refused(settings):
    with pytest.raises(HolesError):
        HoleSettings(**settings)


# --- end to end ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """One embedding cache for the session's judge tests; a private store and thresholds location."""
    root = tmp_path_factory.mktemp("holes-env")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IRFORGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "judge-embedding-cache"))
        patch.setenv("IRFORGE_JUDGE_THRESHOLDS", str(root / "thresholds.json"))
        patch.setenv("IRFORGE_JUDGE_STORE", str(root / "judgements.sqlite3"))
        yield root


@pytest.fixture(scope="module")
def bm25(scifact_subset, env, tmp_path_factory) -> Path:
    """irforge's own BM25 run over the 40-query SciFact subset (out/run.trec, out/results.json)."""
    out = env / "bm25"
    index_dir = tmp_path_factory.getbasetemp() / "judge-bm25-indexes"
    assert main(["eval", "--dataset", str(scifact_subset), "--out", str(out), "--index-dir", str(index_dir)]) == 0
    return out


def independent_hole_count(dataset: Path, run_file: Path, depth: int) -> int:
    """From the files alone: the rank column of run.trec (minus a document named like its query)."""
    judged = set()
    for line in (dataset / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, _ = line.split("\t")
        judged.add((query_id, doc_id))
    queries = {q for q, _ in judged}
    ranked: dict[str, list[tuple[int, str]]] = {}
    for line in run_file.read_text().splitlines():
        query_id, _, doc_id, rank, _, _ = line.split()
        if query_id in queries and doc_id != query_id:
            ranked.setdefault(query_id, []).append((int(rank), doc_id))
    return sum((q, d) not in judged for q, docs in ranked.items() for _, d in sorted(docs)[:depth])


def holes_cli(dataset: Path, run: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = main(["judge-holes", "--dataset", str(dataset), "--run", str(run), "--depth", str(DEPTH), "--out", str(out), *extra])
    return code, json.loads((out / "holes.json").read_text())


def read_layer(out: Path) -> tuple[list[tuple[str, str, int]], list[dict]]:
    lines = [tuple(line.split("\t")) for line in (out / "qrels.judged.tsv").read_text().splitlines()]
    assert lines[0] == ("query-id", "corpus-id", "score")
    provenance = [json.loads(line) for line in (out / "qrels.judged.provenance.jsonl").read_text().splitlines()]
    return [(q, d, int(s)) for q, d, s in lines[1:]], provenance


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def embedded_holes(scifact_subset, bm25, env):
    qrels_hash = sha(scifact_subset / "qrels" / "test.tsv")
    first = holes_cli(scifact_subset, bm25 / "run.trec", env / "first")
    second = holes_cli(scifact_subset, bm25 / "run.trec", env / "second")
    assert sha(scifact_subset / "qrels" / "test.tsv") == qrels_hash      # the original qrels are never touched
    return first, second


def test_embedded_judge_fills_every_hole(embedded_holes, scifact_subset, bm25, env):
    (code, report), _ = embedded_holes
    assert code == 0
    expected = independent_hole_count(scifact_subset, bm25 / "run.trec", DEPTH)
    assert report["holes"] == expected > 50
    assert report["judged"] == report["holes"] and report["unparsed"] == report["failed"] == 0
    assert report["judge_calls"] == 0            # the embedded judge sends no request (see backends/embedded.py)
    assert report["judge"]["backend"] == "embedded" and report["encoding"]["texts_encoded"] + report["encoding"]["texts_from_cache"] > 0
    assert report["metrics_before"][f"Judged@{DEPTH}"] < 1.0 == report["metrics_after"][f"Judged@{DEPTH}"]
    assert report["metrics_after"][f"Hole@{DEPTH}"] == 0.0
    assert report["label_mapping"] == {"0": 0, "1": 0, "2": 1, "3": 1} and report["relevant_from"] == 2
    results = json.loads((bm25 / "results.json").read_text())
    for name, value in results["metrics"].items():            # "before" is exactly what irforge eval reported
        assert report["metrics_before"][name] == pytest.approx(value, abs=1e-12)


def test_judged_layer_is_traceable_and_reproduces_metrics_after(embedded_holes, scifact_subset, bm25, env):
    (_, report), _ = embedded_holes
    lines, provenance = read_layer(env / "first")
    assert len(lines) == len(provenance) == report["judged"]
    with JudgementStore(env / "judgements.sqlite3") as store:
        for number, ((query_id, doc_id, score), record) in enumerate(zip(lines, provenance), start=2):
            assert record["line"] == number and (record["query_id"], record["doc_id"], record["score"]) == (query_id, doc_id, score)
            stored = store.get_record(record["record_id"])
            assert (stored.query_id, stored.doc_id, stored.label) == (query_id, doc_id, record["label"])
            assert score == (1 if stored.label >= 2 else 0)
    assert report["labels"] == {str(label): sum(r["label"] == label for r in provenance) for label in range(4)}
    # Anyone can re-score with the two qrels files: the original plus the judged layer.
    qrels = read_beir_qrels(scifact_subset / "qrels" / "test.tsv")
    for query_id, judged in read_beir_qrels(env / "first" / "qrels.judged.tsv").items():
        assert not set(judged) & set(qrels[query_id])           # the layer only adds
        qrels[query_id].update(judged)
    run = read_run_file(bm25 / "run.trec").run
    after = Evaluator().evaluate(qrels, run, report["evaluation"]["measures"], EvaluationOptions(complete=True))
    assert with_holes(after.aggregate) == pytest.approx(report["metrics_after"], abs=1e-12)


def test_second_run_is_free_and_identical(embedded_holes, env):
    (_, first), (code, second) = embedded_holes
    assert code == 0
    assert second["from_store"] == second["holes"] == first["holes"] and second["judge_calls"] == 0
    assert second["metrics_after"] == first["metrics_after"]
    assert (env / "first" / "qrels.judged.tsv").read_bytes() == (env / "second" / "qrels.judged.tsv").read_bytes()
    assert [r["record_id"] for r in read_layer(env / "first")[1]] == [r["record_id"] for r in read_layer(env / "second")[1]]
    assert all(r["from_store"] for r in read_layer(env / "second")[1])


# --- with an LLM judge spec ----------------------------------------------------------------------


def test_llm_judge_fills_holes_and_a_rerun_sends_nothing(scifact_subset, bm25, scripted_chat, llm_spec_file, fake_key, tmp_path):
    spec = llm_spec_file(max_concurrency=4)
    store = tmp_path / "llm.sqlite3"
    code, report = holes_cli(scifact_subset, bm25 / "run.trec", tmp_path / "first", "--judge", str(spec), "--store", str(store))
    assert code == 0
    holes = independent_hole_count(scifact_subset, bm25 / "run.trec", DEPTH)
    assert report["holes"] == report["judged"] == holes
    assert report["judge_calls"] == len(scripted_chat.chat_requests) >= holes    # every request sent is counted
    assert report["tokens"]["prompt"] > 0 and report["judge"]["backend"] == "openai-chat"
    lines, provenance = read_layer(tmp_path / "first")
    assert len(lines) == holes and {r["backend"] for r in provenance} == {"openai-chat"}
    assert {r["raw_output"].strip() for r in provenance} <= {"0", "1", "2", "3"}
    for written in (tmp_path / "first").iterdir():
        assert fake_key not in written.read_text()                         # the key is never written

    sent = len(scripted_chat.chat_requests)
    code, again = holes_cli(scifact_subset, bm25 / "run.trec", tmp_path / "again", "--judge", str(spec), "--store", str(store))
    assert code == 0 and again["judge_calls"] == 0 and again["from_store"] == holes
    assert len(scripted_chat.chat_requests) == sent
    assert again["metrics_after"] == report["metrics_after"]


def test_a_judge_that_never_answers_leaves_the_dataset_untouched(scifact_subset, bm25, llm_spec_file, fake_key,
                                                                 unused_port, tmp_path, capsys):
    spec = llm_spec_file(url=f"http://127.0.0.1:{unused_port}/v1", max_retries=0, circuit_breaker_failures=1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "qrels.judged.tsv").write_text("query-id\tcorpus-id\tscore\nstale\tstale\t1\n")   # from an earlier run
    code, report = holes_cli(scifact_subset, bm25 / "run.trec", out, "--judge", str(spec), "--store", str(tmp_path / "s.sqlite3"))
    assert code == 1 and "failed" in capsys.readouterr().err
    assert report["failed"] == report["holes"] > 0 and report["judged"] == 0
    assert report["metrics_after"] == report["metrics_before"]
    assert not (out / "qrels.judged.tsv").exists() and not (out / "qrels.judged.provenance.jsonl").exists()
    assert report["files"] == {"judged_qrels": None, "provenance": None, "flagged": None}


def test_unparsed_answers_are_never_written(scifact_subset, bm25, scripted_chat, llm_spec_file, fake_key, tmp_path):
    # Every other prompt gets prose instead of a label, on every re-ask too.
    scripted_chat.responder = lambda prompt: "2" if hashlib.sha256(prompt.encode()).digest()[0] % 2 else "quite relevant, I think"
    spec = llm_spec_file(max_unparsed_retries=1)
    code, report = holes_cli(scifact_subset, bm25 / "run.trec", tmp_path / "out", "--judge", str(spec), "--store", str(tmp_path / "s.sqlite3"))
    assert code == 1
    assert report["unparsed"] > 0 and report["judged"] > 0 and report["judged"] + report["unparsed"] == report["holes"]
    lines, provenance = read_layer(tmp_path / "out")
    assert len(lines) == report["judged"] and all(r["label"] == 2 for r in provenance)
    unparsed = {(p["query_id"], p["doc_id"]) for p in report["not_labelled"]}
    assert unparsed and not unparsed & {(q, d) for q, d, _ in lines}


def test_relevant_from_changes_the_mapping_not_the_judgements(embedded_holes, scifact_subset, bm25, env):
    (_, base), _ = embedded_holes
    code, strict = holes_cli(scifact_subset, bm25 / "run.trec", env / "strict", "--relevant-from", "3")
    assert code == 0 and strict["from_store"] == strict["holes"]          # same judge, same labels: all stored
    assert strict["label_mapping"] == {"0": 0, "1": 0, "2": 0, "3": 1} and strict["labels"] == base["labels"]
    lines, provenance = read_layer(env / "strict")
    assert all(score == (1 if record["label"] == 3 else 0) for (_, _, score), record in zip(lines, provenance))
    assert sum(score for _, _, score in lines) == base["labels"]["3"]
    assert strict["metrics_after"]["P@10"] <= base["metrics_after"]["P@10"]
    assert strict["metrics_before"] == base["metrics_before"]
