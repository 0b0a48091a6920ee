"""Every kind of retriever on a real collection built from SciFact: dense and hybrid (the
instructed query encoded, repeated query texts from the embedding cache) and a reranker that
sees the instructed query."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from irforge.cli.main import main

pytestmark = pytest.mark.slow
DOCS_TESTS = Path(__file__).resolve().parents[1] / "docs"


def run(collection: Path, out: Path, stores: Path, *flags: str) -> dict:
    argv = ["eval-instructions", "--dataset", str(collection), "--out", str(out), "--index-dir", str(stores / "idx"),
            "--vector-dir", str(stores / "vec"), "--embedding-cache", str(stores / "cache.sqlite3"), *flags]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("instruction-stores")


def test_dense_then_hybrid_reuse_the_cache_for_repeated_query_texts(scifact_instructions, stores, tmp_path):
    keyword = scifact_instructions / "keyword"
    dense = run(keyword, tmp_path / "dense", stores, "--retriever", "dense", "--model", "all-MiniLM-L6-v2")
    assert dense["retriever"]["name"] == "dense"
    assert dense["retriever"]["encoder"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert set(dense["metrics"]) >= {"nDCG@10[og]", "nDCG@10[changed]", "nDCG@10[reversed]", "WISE", "SICR", "p-MRR"}
    counts = dense["dimensions"]["keyword"]["counts"]
    assert counts["documents_encoded"] > 0
    queries = dense["dimensions"]["keyword"]["queries"]
    assert counts["queries_encoded"] + counts["queries_reused_from_cache"] == 3 * queries  # every mode's texts
    # Hybrid encodes no document and no query again: every text is in the cache.
    hybrid = run(keyword, tmp_path / "hybrid", stores, "--retriever", "hybrid", "--model", "all-MiniLM-L6-v2")
    counts = hybrid["dimensions"]["keyword"]["counts"]
    assert counts["vectors_skipped"] is True
    assert counts["queries_encoded"] == 0 and counts["queries_reused_from_cache"] == 3 * queries
    assert hybrid["retriever"]["name"] == "hybrid"
    # The instructed texts differ from the plain ones, so the modes' runs differ.
    og = (tmp_path / "dense" / "keyword.og.trec").read_text()
    assert og != (tmp_path / "dense" / "keyword.changed.trec").read_text()


def _rerank_server_module():
    spec = importlib.util.spec_from_file_location("irforge_docs_rerank_server", DOCS_TESTS / "rerank_server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_reranker_sees_the_instructed_query(scifact_instructions, stores, tmp_path):
    server = _rerank_server_module().RerankServer()
    try:
        spec = tmp_path / "rerank.yaml"
        spec.write_text(f"kind: rerank-http\nurl: {server.url}\nmodel: bm25-reranker\n")
        results = run(scifact_instructions / "keyword", tmp_path / "out", stores, "--reranker-endpoint", str(spec),
                      "--rerank-depth", "20", "--top-k", "50")
    finally:
        server.close()
    assert results["retriever"]["name"] == "bm25-rerank" and results["retriever"]["rerank_depth"] == 20
    queries = [json.loads(line) for line in (scifact_instructions / "keyword" / "queries.jsonl").read_text().splitlines()]
    expected = {q["text"] for q in queries} | {f"{q['text']} {q['instruction_changed']}" for q in queries} \
        | {f"{q['text']} {q['instruction_reversed']}" for q in queries}
    seen = {request["query"] for request in server.requests}
    assert seen == expected, "the reranker must see query + ' ' + instruction for the instructed modes"
