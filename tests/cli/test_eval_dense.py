"""`irforge eval --retriever dense|hybrid` end to end on SciFact with all-MiniLM-L6-v2.

Encoding SciFact's 5,183 abstracts takes about 6.5 minutes on two idle cores, so the corpus is
encoded once per session, in the background from the start of the session (tests/conftest.py:
BackgroundRun, at nice 19), into its own embedding cache and vector store; the tests reading it
(the `scifact_dense` fixture) run last and reuse its stores (`scifact_dense_stores`).
Fidelity: MTEB publishes nDCG@10 0.6451 for this model on SciFact (exact cosine search over
title + " " + text); the suite holds irforge within 0.01 of it.
"""

from __future__ import annotations

import json

import pytest

from irforge.cli.main import main

MTEB_SCIFACT_NDCG10 = 0.6451


@pytest.fixture(scope="session")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense-stores")
    return {"--embedding-cache": root / "embeddings.sqlite3", "--vector-dir": root / "vectors", "--index-dir": root / "bm25"}


def run_eval(dataset, out, stores, *extra) -> dict:
    argv = ["eval", "--dataset", str(dataset), "--out", str(out), *extra]
    for flag, path in stores.items():
        if flag not in extra:
            argv += [flag, str(path)]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="session")
def scifact_bm25(beir_dir, scifact_dense_stores, tmp_path_factory):
    return run_eval(beir_dir / "scifact", tmp_path_factory.mktemp("bm25"), scifact_dense_stores, "--retriever", "bm25")


def test_dense_reproduces_mteb(scifact_dense):
    ndcg = scifact_dense["metrics"]["nDCG@10"]
    assert abs(ndcg - MTEB_SCIFACT_NDCG10) <= 0.01, ndcg
    assert scifact_dense["metrics"]["R@100"] == pytest.approx(0.925, abs=0.01)


def test_dense_results_record_the_encoder_and_the_work(scifact_dense):
    retriever = scifact_dense["retriever"]
    encoder = retriever["encoder"]
    assert encoder["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoder["revision"].startswith("sha256:") and encoder["max_seq_length"] == 256
    assert encoder["normalize"] is True and encoder["dimension"] == 384 and encoder["location"] == "in-process"
    assert retriever["search"] == "exact" and retriever["vector_backend"] == "embedded"
    assert "title + ' ' + text" in retriever["document_text"]
    counts = scifact_dense["counts"]
    assert counts["documents_encoded"] + counts["documents_reused_from_cache"] == 5183  # identical texts count as reused
    assert counts["queries_encoded"] + counts["queries_reused_from_cache"] == 300


def test_second_run_encodes_nothing(scifact_dense, beir_dir, scifact_dense_stores, tmp_path):
    """Same model, same corpus: the vectors are reused and 0 documents are encoded."""
    again = run_eval(beir_dir / "scifact", tmp_path / "again", scifact_dense_stores, "--retriever", "dense", "--model", "all-MiniLM-L6-v2")
    assert again["counts"]["documents_encoded"] == 0 and again["counts"]["queries_encoded"] == 0
    assert again["metrics"] == scifact_dense["metrics"]


def test_a_new_vector_store_is_filled_from_the_embedding_cache(scifact_dense, beir_dir, scifact_dense_stores, tmp_path):
    fresh = {**scifact_dense_stores, "--vector-dir": tmp_path / "other-vectors"}
    again = run_eval(beir_dir / "scifact", tmp_path / "out", fresh, "--retriever", "dense", "--model", "all-MiniLM-L6-v2")
    assert again["counts"]["vectors_skipped"] is False
    assert again["counts"]["documents_encoded"] == 0 and again["counts"]["documents_reused_from_cache"] == 5183
    assert again["metrics"]["nDCG@10"] == pytest.approx(scifact_dense["metrics"]["nDCG@10"], abs=1e-9)


@pytest.mark.parametrize("fusion", ["rrf", "linear"])
def test_hybrid_beats_bm25_and_dense(fusion, scifact_dense, scifact_bm25, beir_dir, scifact_dense_stores, tmp_path):
    hybrid = run_eval(beir_dir / "scifact", tmp_path, scifact_dense_stores, "--retriever", "hybrid", "--model", "all-MiniLM-L6-v2",
                      "--fusion", fusion)
    ndcg = hybrid["metrics"]["nDCG@10"]
    assert ndcg > scifact_bm25["metrics"]["nDCG@10"] and ndcg > scifact_dense["metrics"]["nDCG@10"], (
        fusion, ndcg, scifact_bm25["metrics"]["nDCG@10"], scifact_dense["metrics"]["nDCG@10"])
    assert hybrid["retriever"]["fusion"]["method"] == fusion
    assert hybrid["counts"]["documents_encoded"] == 0  # reuses the dense vectors


def test_hnsw_search_is_recorded_and_close_to_exact(scifact_dense, beir_dir, scifact_dense_stores, tmp_path):
    ann = run_eval(beir_dir / "scifact", tmp_path / "out", {**scifact_dense_stores, "--vector-dir": tmp_path / "hnsw"},  # stores never inside --out
                   "--retriever", "dense", "--model", "all-MiniLM-L6-v2", "--search", "hnsw")
    search = ann["retriever"]["search"]
    assert search["hnsw"] == {"m": 16, "ef_construct": 100, "ef_search": 128}
    # The embedded backend builds its graph on the first HNSW search; the retriever asks for it while indexing.
    assert ann["retriever"]["collection"]["hnsw_graph"] == "built"
    assert ann["metrics"]["nDCG@10"] == pytest.approx(scifact_dense["metrics"]["nDCG@10"], abs=0.01)
    # Its recall against exact search is recorded beside the metrics: the overlap of the two run files'
    # top k on the sampled queries, counted here from the files.
    recall = ann["search_recall"]
    assert recall is search["recall"] or recall == search["recall"]
    k, sampled = recall["k"], recall["query_ids"]
    assert k == ann["retriever"]["top_k"] and recall["queries_sampled"] == len(sampled) == 100 and recall["hnsw_ef"] == 128
    exact = run_eval(beir_dir / "scifact", tmp_path / "exact", {**scifact_dense_stores, "--vector-dir": tmp_path / "hnsw"},
                     "--retriever", "dense", "--model", "all-MiniLM-L6-v2")
    assert "search_recall" not in exact

    def top(folder):
        ranked = {}
        for line in (folder / "run.trec").read_text().splitlines():
            query_id, _, doc_id, rank, _, _ = line.split()
            if int(rank) <= k:
                ranked.setdefault(query_id, set()).add(doc_id)
        return ranked

    approximate, truth = top(tmp_path / "out"), top(tmp_path / "exact")
    shares = [len(approximate.get(q, set()) & truth[q]) / len(truth[q]) for q in sampled if truth.get(q)]
    assert recall[f"recall@{k}"] == pytest.approx(sum(shares) / len(shares), abs=1e-9)


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "/nonexistent/model-folder"], "model path /nonexistent/model-folder does not exist"),
    (["--fusion-weights", "1"], "--fusion-weights needs one weight per fused run"),
])
def test_bad_dense_arguments_get_clear_errors(args, message, scifact_subset, stores, tmp_path, capsys):
    argv = ["eval", "--dataset", str(scifact_subset), "--out", str(tmp_path), "--retriever", "hybrid", *args]
    for flag, path in stores.items():
        argv += [flag, str(path)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


# The other ways to run the encoder (Ray Serve, a running service) must give the in-process numbers,
# query by query; the 23-document slice shows that as well as a bigger one, in seconds.
@pytest.fixture(scope="session")
def tiny_dense(scifact_tiny, stores, tmp_path_factory):
    return run_eval(scifact_tiny, tmp_path_factory.mktemp("tiny-dense"), stores, "--retriever", "dense", "--model", "all-MiniLM-L6-v2")


def assert_same_numbers(got: dict, expected: dict) -> None:
    for name, value in expected["metrics"].items():
        assert got["metrics"][name] == pytest.approx(value, abs=1e-6), name
    assert got["per_query"].keys() == expected["per_query"].keys()
    for query_id, values in expected["per_query"].items():
        assert got["per_query"][query_id] == pytest.approx(values, abs=1e-6), query_id


def test_ray_serve_path_end_to_end(tiny_dense, scifact_tiny, tmp_path, local_ray):
    """The encoder as a Ray Serve deployment on loopback gives the in-process numbers. The session's
    Ray is already up: the command deploys its application, deletes it after, and leaves Ray running."""
    own = {"--embedding-cache": tmp_path / "cache.sqlite3", "--vector-dir": tmp_path / "vectors", "--index-dir": tmp_path / "bm25"}
    ray = run_eval(scifact_tiny, tmp_path / "out", own, "--retriever", "dense", "--model", "all-MiniLM-L6-v2", "--ray")
    assert ray["retriever"]["encoder"]["location"].startswith("ray-serve")
    assert ray["counts"]["documents_encoded"] > 20
    import ray as ray_module

    assert ray_module.is_initialized() and "encoder" not in ray_module.serve.status().applications
    assert_same_numbers(ray, tiny_dense)


def test_dense_through_running_services_matches_in_process(tiny_dense, scifact_tiny, tmp_path):
    """corpus (vectors), evaluator and encoder behind `irforge service all --model ...` over gRPC."""
    import os
    import re
    import subprocess
    import sys

    server = subprocess.Popen(
        [sys.executable, "-m", "irforge.cli.main", "service", "all", "--port", "0", "--model", "all-MiniLM-L6-v2",
         "--index-dir", str(tmp_path / "s-bm25"), "--vector-dir", str(tmp_path / "s-vectors")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        match = re.search(r"listening on (127\.0\.0\.1:\d+)", server.stdout.readline())
        assert match, "server did not start"
        remote = run_eval(scifact_tiny, tmp_path / "out", {"--embedding-cache": tmp_path / "cache.sqlite3"},
                          "--retriever", "dense", "--server", match.group(1))
    finally:
        server.terminate()
        assert server.wait(timeout=60) == 0
    assert remote["retriever"]["encoder"]["location"] == f"grpc {match.group(1)}"
    assert remote["retriever"]["encoder"]["model"] == tiny_dense["retriever"]["encoder"]["model"]
    assert_same_numbers(remote, tiny_dense)


def test_an_empty_document_is_reported_not_encoded(scifact_tiny, tmp_path):
    """A document with neither title nor text gets a per-document error naming it, is never
    encoded (its vector would be noise that scores against every query) and never retrieved;
    every other document is encoded and the run goes on."""
    import shutil

    dataset = tmp_path / "with-empty"
    shutil.copytree(scifact_tiny, dataset)
    with open(dataset / "corpus.jsonl", "a") as corpus:
        corpus.write(json.dumps({"_id": "empty-doc", "title": "", "text": "  "}) + "\n")
    documents = sum(1 for _ in open(dataset / "corpus.jsonl"))
    own = {"--embedding-cache": tmp_path / "cache.sqlite3", "--vector-dir": tmp_path / "vectors", "--index-dir": tmp_path / "bm25"}
    results = run_eval(dataset, tmp_path / "out", own, "--retriever", "dense", "--model", "all-MiniLM-L6-v2")
    counts = results["counts"]
    assert counts["documents_failed"] == 1
    assert counts["document_errors"] == ["empty-doc: document has neither title nor text; not encoded"]
    assert counts["documents_encoded"] == documents - 1
    assert "empty-doc" not in (tmp_path / "out" / "run.trec").read_text()
