"""`irforge bench --airbench-submission DIR`: the runs in AIR-Bench's submission layout, checked
against AIR-Bench's published layout (docs/submit_to_leaderboard.md's tree, evaluator.py's
save_search_results fields, zip_results.py's zip: paths below <model>/<reranker>, *_dev.json left
out) and scored from the written files the way AIR-Bench scores them (pytrec_eval's ndcg_cut over
search_results: air_benchmark/evaluation_utils/utils.py), which must give the bench's nDCG@10.

The dataset is SciFact written in AIR-Bench's layout inside the Hub's folders
(qa_arxiv_en/AIR-Bench_24.05/default): test = half the SciFact test queries, dev = the other half."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import pytrec_eval

from irforge.cli.main import main

TASK_TYPES = ("qa", "long-doc")   # AIR-Bench_24.05's task types (air_benchmark/tasks/v24_05/tasks.py)


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def hub_folder(beir_dir, tmp_path_factory) -> Path:
    source = beir_dir / "scifact"
    folder = tmp_path_factory.mktemp("hub") / "qa_arxiv_en" / "AIR-Bench_24.05" / "default"
    folder.mkdir(parents=True)
    with open(source / "corpus.jsonl", encoding="utf-8") as lines:
        _jsonl(folder / "corpus.jsonl", ({"id": d["_id"], "title": d["title"], "text": d["text"]} for d in map(json.loads, lines)))
    rows = [line.split("\t") for line in (source / "qrels/test.tsv").read_text().splitlines()[1:]]
    ids = sorted({row[0] for row in rows}, key=int)
    halves = {"test": set(ids[::2]), "dev": set(ids[1::2])}
    with open(source / "queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line) for line in lines]
    for split, kept in halves.items():
        _jsonl(folder / f"{split}_queries.jsonl", ({"id": q["_id"], "text": q["text"]} for q in queries if q["_id"] in kept))
        _jsonl(folder / f"{split}_qrels.jsonl",
               ({"qid": r[0], "docid": r[1], "relevance": int(r[2])} for r in rows if r[0] in kept))
    return folder


def _qrels(folder: Path, split: str) -> dict:
    qrels: dict = {}
    for line in (folder / f"{split}_qrels.jsonl").read_text().splitlines():
        row = json.loads(line)
        qrels.setdefault(row["qid"], {})[row["docid"]] = row["relevance"]
    return qrels


def test_the_submission_has_airbenchs_tree_fields_and_zip_and_scores_as_the_bench(hub_folder, tmp_path):
    submission, index = tmp_path / "search_results", tmp_path / "index"
    for split in ("test", "dev"):
        assert main(["bench", "--dataset", str(hub_folder), "--split", split, "--out", str(tmp_path / f"out-{split}"),
                     "--index-dir", str(index), "--airbench-submission", str(submission)]) == 0
    base = submission / "bm25" / "NoReranker"
    files = sorted(p.relative_to(base).as_posix() for p in base.rglob("*.json"))
    assert files == ["qa/arxiv/en_default_dev.json", "qa/arxiv/en_default_test.json"]
    for split in ("test", "dev"):
        record = json.loads((base / f"qa/arxiv/en_default_{split}.json").read_text())
        assert {k: v for k, v in record.items() if k != "search_results"} == {
            "model_name": "bm25", "reranker_name": "NoReranker", "benchmark_version": "AIR-Bench_24.05", "task_type": "qa",
            "domain": "arxiv", "language": "en", "dataset_name": "default", "split": split}
        assert record["task_type"] in TASK_TYPES
        # scored as AIR-Bench scores: pytrec_eval ndcg_cut.10 over its search_results, mean over queries
        per_query = pytrec_eval.RelevanceEvaluator(_qrels(hub_folder, split), {"ndcg_cut.10"}).evaluate(record["search_results"])
        ndcg = sum(q["ndcg_cut_10"] for q in per_query.values()) / len(_qrels(hub_folder, split))
        suite = json.loads((tmp_path / f"out-{split}" / "suite.json").read_text())
        assert ndcg == pytest.approx(suite["datasets"][0]["metrics"]["nDCG@10"], abs=1e-12)
        assert len(record["search_results"]) == suite["datasets"][0]["queries"] == 150
    with zipfile.ZipFile(submission / "bm25_NoReranker.zip") as archive:
        assert archive.namelist() == ["qa/arxiv/en_default_test.json"]   # dev left out, as zip_results.py does


def test_names_can_be_given(hub_folder, tmp_path):
    submission = tmp_path / "search_results"
    assert main(["bench", "--dataset", str(hub_folder), "--out", str(tmp_path / "out"), "--index-dir", str(tmp_path / "index"),
                 "--airbench-submission", str(submission), "--airbench-model", "my-bm25"]) == 0
    assert (submission / "my-bm25" / "NoReranker" / "qa" / "arxiv" / "en_default_test.json").is_file()
    assert (submission / "my-bm25_NoReranker.zip").is_file()


def test_a_beir_dataset_is_refused_before_any_work(beir_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["bench", "--dataset", str(beir_dir / "scifact"), "--out", str(out),
                 "--airbench-submission", str(tmp_path / "sub")]) == 2
    err = capsys.readouterr().err
    assert "is in BEIR's layout, not AIR-Bench's" in err
    assert not out.exists() and not (tmp_path / "sub").exists()


def test_an_airbench_folder_without_its_task_names_says_what_to_add(tmp_path, capsys):
    _jsonl(tmp_path / "corpus.jsonl", [{"id": "d1", "text": "x"}])
    _jsonl(tmp_path / "test_queries.jsonl", [{"id": "q1", "text": "x"}])
    _jsonl(tmp_path / "test_qrels.jsonl", [{"qid": "q1", "docid": "d1", "relevance": 1}])
    assert main(["bench", "--dataset", str(tmp_path), "--out", str(tmp_path / "out"),
                 "--airbench-submission", str(tmp_path / "sub")]) == 2
    err = capsys.readouterr().err
    assert "needs task_type, domain, language, dataset_name, benchmark_version" in err and '"airbench"' in err


def test_a_split_with_private_qrels_is_searched_and_submitted_as_the_leaderboard_would_score_it(hub_folder, tmp_path, capsys):
    # AIR-Bench keeps its test qrels private: a copy of the dataset without test_qrels.jsonl
    private = tmp_path / "qa_arxiv_en" / "AIR-Bench_24.05" / "default"
    private.mkdir(parents=True)
    for name in ("corpus.jsonl", "test_queries.jsonl", "dev_queries.jsonl", "dev_qrels.jsonl"):
        (private / name).symlink_to(hub_folder / name)
    submission = tmp_path / "search_results"
    assert main(["bench", "--dataset", str(private), "--split", "test", "--out", str(tmp_path / "out"),
                 "--index-dir", str(tmp_path / "index"), "--airbench-submission", str(submission)]) == 0
    assert "searched, not evaluated" in capsys.readouterr().out
    record = json.loads((submission / "bm25" / "NoReranker" / "qa" / "arxiv" / "en_default_test.json").read_text())
    assert len(record["search_results"]) == 150 and record["split"] == "test"
    # the leaderboard's scoring (pytrec_eval over search_results, with the qrels irforge never saw)
    # gives what a bench with those qrels gives
    assert main(["bench", "--dataset", str(hub_folder), "--split", "test", "--out", str(tmp_path / "judged"),
                 "--index-dir", str(tmp_path / "index")]) == 0
    per_query = pytrec_eval.RelevanceEvaluator(_qrels(hub_folder, "test"), {"ndcg_cut.10"}).evaluate(record["search_results"])
    suite = json.loads((tmp_path / "judged" / "suite.json").read_text())
    assert sum(q["ndcg_cut_10"] for q in per_query.values()) / 150 == pytest.approx(suite["datasets"][0]["metrics"]["nDCG@10"], abs=1e-12)
    with zipfile.ZipFile(submission / "bm25_NoReranker.zip") as archive:
        assert archive.namelist() == ["qa/arxiv/en_default_test.json"]


def test_a_reranked_system_is_filed_under_its_first_stage_and_its_reranker():
    # as AIR-Bench files bge-m3 reranked by bge-reranker-v2-m3: search_results/bge-m3/bge-reranker-v2-m3/
    from irforge.bench.airbench import system_names

    dense = {"name": "dense", "encoder": {"model": "BAAI/bge-m3"}}
    assert system_names(dense) == ("bge-m3", "NoReranker")
    assert system_names({"name": "rerank", "first_stage": dense, "reranker": {"model": "BAAI/bge-reranker-v2-m3"}}) == \
        ("bge-m3", "bge-reranker-v2-m3")
