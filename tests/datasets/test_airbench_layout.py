"""AIR-Bench's dataset layout (corpus.jsonl and <split>_queries.jsonl with `id`, <split>_qrels.jsonl
with qid/docid/relevance: air_benchmark/evaluation_utils/data_loader.py's fields) read through
--dataset, detected by its file names and recorded in results.json; BEIR's own checks unchanged.

The folder is SciFact written in AIR-Bench's layout (no AIR-Bench data can be fetched here): its
counts must be BEIR's published ones (5,183 documents, 300 test queries, 339 judgements) and BM25
on it must give the figure bm25s gives on the BEIR folder (0.6762, measured outside irforge:
/work/shared/ENVIRONMENT.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.data import BeirDataset, DataFormatError
from irforge.data.airbench import AIRBENCH, BEIR


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _qrels_rows(tsv: Path):
    lines = tsv.read_text(encoding="utf-8").splitlines()[1:]
    return [dict(zip(("qid", "docid", "relevance"), (f[0], f[1], int(f[2])))) for f in (l.split("\t") for l in lines if l.strip())]


@pytest.fixture(scope="module")
def airbench_scifact(beir_dir, tmp_path_factory) -> Path:
    source = beir_dir / "scifact"
    folder = tmp_path_factory.mktemp("airbench") / "scifact"
    folder.mkdir()
    with open(source / "corpus.jsonl", encoding="utf-8") as lines:
        docs = [json.loads(line) for line in lines]
    _jsonl(folder / "corpus.jsonl", ({"id": d["_id"], "title": d["title"], "text": d["text"]} for d in docs))
    qrels = _qrels_rows(source / "qrels" / "test.tsv")
    test_ids = {row["qid"] for row in qrels}
    with open(source / "queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line) for line in lines]
    _jsonl(folder / "test_queries.jsonl", ({"id": q["_id"], "text": q["text"]} for q in queries if q["_id"] in test_ids))
    dev = [q for q in queries if q["_id"] not in test_ids][:5]
    _jsonl(folder / "dev_queries.jsonl", ({"id": q["_id"], "text": q["text"]} for q in dev))
    _jsonl(folder / "test_qrels.jsonl", qrels)
    return folder


def test_the_layout_is_detected_and_read_with_beirs_published_counts(airbench_scifact):
    dataset = BeirDataset.open(airbench_scifact)
    assert dataset.layout is AIRBENCH
    assert sum(1 for _ in dataset.corpus()) == 5183
    qrels = dataset.qrels("test")
    assert len(qrels) == 300 and sum(len(j) for j in qrels.values()) == 339
    assert sum(1 for _ in dataset.queries()) == 305   # test and dev queries, one stream


def test_bm25_on_the_airbench_folder_gives_the_beir_figure_and_records_the_layout(airbench_scifact, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(airbench_scifact), "--out", str(out), "--index-dir", str(tmp_path / "idx")]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"]["nDCG@10"] == pytest.approx(0.6762, abs=5e-4)
    assert results["data"]["layout"] == "AIR-Bench"
    assert results["evaluation"]["queries_evaluated"] == 300


def test_a_beir_folder_still_refuses_id(tmp_path):
    # BEIR's check is not loosened: `id` in a folder with queries.jsonl is refused, with the hint
    _jsonl(tmp_path / "corpus.jsonl", [{"id": "d1", "text": "x"}])
    _jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "x"}])
    dataset = BeirDataset.open(tmp_path)
    assert dataset.layout is BEIR
    with pytest.raises(DataFormatError, match=r"corpus.jsonl:1: document has no `_id` \(it has `id`: AIR-Bench's field"):
        list(dataset.corpus())


def test_an_airbench_line_without_id_is_refused(tmp_path):
    _jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "x"}])
    _jsonl(tmp_path / "test_queries.jsonl", [{"id": "q1", "text": "x"}])
    with pytest.raises(DataFormatError, match=r"corpus.jsonl:1: document has no `id` \(it has `_id`: BEIR's field"):
        list(BeirDataset.open(tmp_path).corpus())


def test_a_missing_split_names_the_available_ones_and_the_private_test_qrels(airbench_scifact):
    with pytest.raises(DataFormatError, match=r"dev_qrels.jsonl: split 'dev' not found .* available: test .*private"):
        BeirDataset.open(airbench_scifact).qrels("dev")


def test_bad_qrels_lines_and_conflicting_queries_name_file_and_line(tmp_path):
    _jsonl(tmp_path / "corpus.jsonl", [{"id": "d1", "text": "x"}])
    _jsonl(tmp_path / "test_queries.jsonl", [{"id": "q1", "text": "a"}])
    _jsonl(tmp_path / "dev_queries.jsonl", [{"id": "q1", "text": "b"}])
    _jsonl(tmp_path / "test_qrels.jsonl", [{"qid": "q1", "docid": "d1", "relevance": 1}, {"qid": "q1", "relevance": 1}])
    dataset = BeirDataset.open(tmp_path)
    with pytest.raises(DataFormatError, match=r"test_qrels.jsonl:2: expected a JSON object with qid, docid and relevance"):
        dataset.qrels("test")
    with pytest.raises(DataFormatError, match=r"query id 'q1' is also in dev_queries.jsonl with another text"):
        list(dataset.queries())


def test_hard_negatives_count_as_judged_not_relevant(tmp_path):
    # AIR-Bench labels hard negatives 0: judged, not relevant. One query, d2 (relevance 1) ranked
    # second below the hard negative d1: nDCG@10 = (1/log2(3)) / 1 = 0.6309 by hand
    _jsonl(tmp_path / "corpus.jsonl", [{"id": "d1", "text": "apple banana"}, {"id": "d2", "text": "apple cherry"},
                                       {"id": "d3", "text": "plum"}])
    _jsonl(tmp_path / "test_queries.jsonl", [{"id": "q1", "text": "apple banana"}])
    _jsonl(tmp_path / "test_qrels.jsonl", [{"qid": "q1", "docid": "d1", "relevance": 0}, {"qid": "q1", "docid": "d2", "relevance": 1}])
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(tmp_path), "--out", str(out), "--index-dir", str(tmp_path / "idx"),
                 "--language", "en", "-m", "nDCG@10", "-m", "Judged@10"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"]["nDCG@10"] == pytest.approx(1 / __import__("math").log2(3), abs=1e-4)
    # both retrieved documents are judged (the 0 kept as a judgement, not dropped): 2 of 2
    assert results["metrics"]["Judged@10"] == pytest.approx(1.0)
