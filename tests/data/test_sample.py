"""`irforge eval --sample N` on the real SciFact: a seeded sample (N queries, every document judged
for them, 5 others per query) evaluated over those queries only, said to be a sample everywhere
its figures show, and refused where it does not apply."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import pytrec_eval

from irforge.cli.main import main
from irforge.config import ConfigError, PipelineConfig, validate
from irforge.data import BeirDataset
from irforge.data.sample import OTHERS_PER_QUERY, write_sample


@pytest.fixture(scope="module")
def scifact(beir_dir) -> Path:
    return beir_dir / "scifact"


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    """The qrels TSV read by hand (csv), not by irforge's reader."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        next(rows)
        for query_id, doc_id, grade in rows:
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["_id"] for line in path.read_text().splitlines() if line.strip()]


def test_the_sample_is_seeded_and_keeps_every_judged_document_of_its_queries(scifact, tmp_path):
    source = BeirDataset.open(scifact)
    first = write_sample(source, "test", 20, 7, tmp_path / "a")
    again = write_sample(source, "test", 20, 7, tmp_path / "b")
    other = write_sample(source, "test", 20, 8, tmp_path / "c")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (first.folder / name).read_bytes() == (again.folder / name).read_bytes(), name
    assert first.record["query_ids"] != other.record["query_ids"]

    full_qrels = _qrels(scifact / "qrels" / "test.tsv")
    chosen = _ids(first.folder / "queries.jsonl")
    assert len(chosen) == 20 == len(set(chosen)) and set(chosen) <= set(full_qrels)
    assert chosen == first.record["query_ids"]
    corpus_ids = set(_ids(scifact / "corpus.jsonl"))
    judged = {doc for q in chosen for doc in full_qrels[q]} & corpus_ids
    kept = _ids(first.folder / "corpus.jsonl")
    assert judged <= set(kept)
    assert len(kept) == len(judged) + 20 * OTHERS_PER_QUERY == first.record["documents"]
    assert _qrels(first.folder / "qrels" / "test.tsv") == {q: full_qrels[q] for q in chosen}
    # Documents are the corpus's own lines, byte for byte (the embedding cache's texts are the same).
    lines = set((scifact / "corpus.jsonl").read_text().splitlines())
    assert set((first.folder / "corpus.jsonl").read_text().splitlines()) <= lines
    assert first.folder.name == "scifact"


def test_metrics_are_those_of_the_sampled_queries_and_the_table_says_it_is_a_sample(scifact, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(scifact), "--sample", "25", "--sample-seed", "3", "--out", str(out),
                 "--index-dir", str(tmp_path / "bm25"), "-m", "nDCG@10", "-m", "R@100"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    results = json.loads((out / "results.json").read_text())
    sample = results["sample"]
    assert (sample["queries"], sample["seed"], sample["queries_in_split"], sample["documents_in_corpus"]) == (25, 3, 300, 5183)
    banner = f"SAMPLE: 25 of 300 queries, {sample['documents']:,} of 5,183 documents (seed 3): these figures are not the dataset's"
    assert printed.out.splitlines()[1] == banner and banner in printed.err
    assert results["data"]["path"] == str(scifact.resolve())

    # pytrec_eval on the dataset's own qrels cut to the sampled queries, and on the run written.
    run: dict[str, dict[str, float]] = {}
    for line in (out / "run.trec").read_text().splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        run.setdefault(query_id, {})[doc_id] = float(score)
    assert set(run) == set(sample["query_ids"])
    assert {doc for ranking in run.values() for doc in ranking} <= set(_ids(scifact / "corpus.jsonl"))
    qrels = {q: judged for q, judged in _qrels(scifact / "qrels" / "test.tsv").items() if q in sample["query_ids"]}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    assert len(per_query) == 25
    ndcg = sum(v["ndcg_cut_10"] for v in per_query.values()) / 25
    recall = sum(v["recall_100"] for v in per_query.values()) / 25
    assert results["metrics"]["nDCG@10"] == pytest.approx(ndcg, abs=1e-9)
    assert results["metrics"]["R@100"] == pytest.approx(recall, abs=1e-9)
    assert results["counts"]["documents_ingested"] == sample["documents"]

    from html import unescape

    from irforge.reports.inputs import load_input
    from irforge.reports.page import build_report
    from irforge.results import Results

    assert banner in Results(results).markdown()
    assert f"{out}: {banner}" in unescape(build_report([load_input(str(out))]))

    # Another seed in the same index folder: its own documents indexed, not the first sample's index reused.
    code = main(["eval", "--dataset", str(scifact), "--sample", "25", "--sample-seed", "4", "--out", str(tmp_path / "o2"),
                 "--index-dir", str(tmp_path / "bm25"), "-m", "nDCG@10"])
    assert code == 0
    second = json.loads((tmp_path / "o2" / "results.json").read_text())
    assert second["counts"]["documents_ingested"] == second["sample"]["documents"]
    assert not second["counts"]["ingest_skipped"]


@pytest.mark.parametrize("extra, expected", [
    (["--sample", "300"], "--sample 300: the test split has 300 queries"),
    (["--sample", "0"], "--sample"),
    (["--sample-seed", "4"], "--sample-seed 4 does not apply here"),
    (["--sample", "5", "--run", "RUN"], "--sample 5 does not apply here: a sample cuts the corpus"),
    (["--sample", "5", "--fill-holes", "10"], "--sample 5 does not apply here"),
    (["--sample", "5", "--retriever", "hybrid", "--fusion-optimize-on", "train"], "--sample 5 does not apply here"),
])
def test_a_sample_that_cannot_apply_is_refused(scifact, tmp_path, capsys, extra, expected):
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 31715818 1 1.0 x\n")
    argv = ["eval", "--dataset", str(scifact), "--out", str(tmp_path / "out"), "--index-dir", str(tmp_path / "bm25"),
            *[str(run) if part == "RUN" else part for part in extra]]
    assert main(argv) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "bm25").exists()


def test_a_sample_is_for_irforge_eval_only(scifact):
    config = PipelineConfig(dataset=str(scifact))
    sampled = PipelineConfig(dataset=str(scifact), evaluation=type(config.evaluation)(sample=10))
    validate(sampled, "eval")
    validate(config, "job")
    for use in ("job", "eval-instructions"):
        with pytest.raises(ConfigError, match="--sample applies to irforge eval only"):
            validate(sampled, use)
