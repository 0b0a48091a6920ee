"""A published run from another toolkit, scored by `irforge eval --run` as a system, gives the
toolkit's published figures: Pyserini's BM25 (flat) run on BEIR TREC-COVID, nDCG@10 0.5947 and
R@100 0.1091 (tests/runs/data/SOURCE.md names the files and the figures' source)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import pytrec_eval

from irforge.cli.main import main

DATA = Path(__file__).parent / "data"
RUN = DATA / "rank_llm.bm25-flat.trec-covid.top100.trec.gz"
QRELS = DATA / "qrels.beir-v1.0.0-trec-covid.test.txt.gz"
TOPICS = DATA / "topics.beir-v1.0.0-trec-covid.test.tsv.gz"
PUBLISHED = {"nDCG@10": 0.5947, "R@100": 0.1091}   # Anserini/Pyserini BEIR (v1.0.0) TREC-COVID, BM25 flat


def beir_folder(root: Path) -> Path:
    """TREC-COVID in BEIR's layout from the stored qrels and topics. The corpus lists the judged and
    retrieved ids with empty text: a given run reads no document text (171,332 abstracts not stored)."""
    root.mkdir(parents=True, exist_ok=True)
    judgements = [line.split() for line in gzip.open(QRELS, "rt") if line.strip()]
    retrieved = {line.split()[2] for line in gzip.open(RUN, "rt") if line.strip()}
    (root / "qrels").mkdir(exist_ok=True)
    with open(root / "qrels" / "test.tsv", "w") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        handle.writelines(f"{q}\t{d}\t{r}\n" for q, _, d, r in judgements)
    with open(root / "queries.jsonl", "w") as handle:
        for line in gzip.open(TOPICS, "rt"):
            query_id, text = line.rstrip("\n").split("\t", 1)
            handle.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    with open(root / "corpus.jsonl", "w") as handle:
        for doc_id in sorted({d for _, _, d, _ in judgements} | retrieved):
            handle.write(json.dumps({"_id": doc_id, "title": "", "text": ""}) + "\n")
    return root


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("trec-covid")
    dataset = beir_folder(root / "trec-covid")
    out = root / "out"
    code = main(["eval", "--dataset", str(dataset), "--run", str(RUN), "--out", str(out), "-m", "nDCG@10", "-m", "R@100"])
    assert code == 0
    return json.loads((out / "results.json").read_text())


def test_the_published_figures_to_four_digits(scored):
    assert {name: round(value, 4) for name, value in scored["metrics"].items()} == PUBLISHED
    assert scored["evaluation"]["queries_evaluated"] == 50


def test_the_same_as_pytrec_eval_on_the_file_query_by_query(scored):
    """trec_eval's own code (pytrec_eval) on the stored files, no irforge in between."""
    qrels = pytrec_eval.parse_qrel(gzip.open(QRELS, "rt"))
    run = pytrec_eval.parse_run(gzip.open(RUN, "rt"))
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    for query_id, values in expected.items():
        assert scored["per_query"][query_id]["nDCG@10"] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
        assert scored["per_query"][query_id]["R@100"] == pytest.approx(values["recall_100"], abs=1e-12)


def test_results_json_names_the_file_and_says_why_latency_is_absent(scored):
    retriever = scored["retriever"]
    assert retriever["name"] == "given" and retriever["format"] == "trec" and retriever["producer"] == "rank"
    assert retriever["sha256"] == hashlib.sha256(RUN.read_bytes()).hexdigest()
    assert (retriever["queries"], retriever["entries"]) == (50, 5000)
    assert "not retrieved here" in scored["latency"]["absent"]
    assert scored["counts"]["run_queries_not_in_split"] == 0 and scored["counts"]["split_queries_not_in_run"] == 0
    assert scored["data"]["qrels_problems"]["unknown_documents"] == 0
    assert scored["config"]["given"]["runs"] == [str(RUN)]
