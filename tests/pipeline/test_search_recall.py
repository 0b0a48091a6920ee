"""HNSW search states its recall (pipeline/retrievers/search_recall.py): the recall irforge records
against an overlap computed here from a numpy brute force, the width --target-recall picks, and the
refusal when no width reaches the target. Real Qdrant Edge graphs, built small so that they miss."""

from __future__ import annotations

import numpy as np
import pytest

from irforge.cli.main import main
from irforge.corpus.core import CorpusService
from irforge.corpus.vectors.base import HnswSettings
from irforge.corpus.vectors.edge import EdgeVectorBackend
from irforge.pipeline.retrievers.search_recall import (
    EF_LADDER, TargetRecallNotReached, measured_width, recall_lines, search_recall,
)

K = 20
DIM = 16


def collection(tmp_path, distance: str, hnsw: HnswSettings, seed: int = 0):
    """A committed collection of 1,500 vectors and 60 query vectors. With `dot` the documents' lengths
    vary tenfold: an inner-product graph then strands short vectors, and recall stays well below 1."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(1500, DIM)).astype(np.float32)
    if distance == "dot":
        docs *= rng.uniform(0.3, 3.0, size=(len(docs), 1)).astype(np.float32)
    else:
        docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.normal(size=(60, DIM)).astype(np.float32)
    if distance == "cosine":
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    backend = EdgeVectorBackend(tmp_path)
    backend.create("c", DIM, distance, "fp", hnsw)
    ids = [f"doc{i:04d}" for i in range(len(docs))]
    backend.upsert("c", ids, docs)
    backend.commit("c")

    def use_ef(ef: int) -> None:
        backend.create("c", DIM, distance, "fp", HnswSettings(m=hnsw.m, ef_construct=hnsw.ef_construct, ef_search=ef))

    return backend, CorpusService(None, backend), use_ef, ids, docs, queries


def independent_recall(backend, ids, docs, queries, query_rows) -> float:
    """Mean |HNSW top K ∩ numpy's exact top K| / K over the given queries (HNSW at the collection's current ef)."""
    hnsw = backend.search("c", queries[query_rows], K, exact=False)
    scores = queries[query_rows].astype(np.float64) @ docs.astype(np.float64).T
    shares = []
    for ranking, row in zip(hnsw, scores):
        truth = {ids[i] for i in np.argsort(-row, kind="stable")[:K]}
        shares.append(len(truth & set(ranking)) / K)
    return float(np.mean(shares))


def test_the_recorded_recall_equals_an_independent_overlap(tmp_path):
    backend, service, use_ef, ids, docs, queries = collection(tmp_path, "dot", HnswSettings(m=2, ef_construct=4))
    query_ids = [f"q{i}" for i in range(len(queries))]
    record = measured_width(service, "c", query_ids, queries, K, use_ef=use_ef, ef=32, sample=25, target=None)
    rows = [query_ids.index(q) for q in record["query_ids"]]
    assert len(set(rows)) == 25 and record["queries_sampled"] == 25 and record["hnsw_ef"] == 32
    assert record[f"recall@{K}"] == pytest.approx(independent_recall(backend, ids, docs, queries, rows), abs=1e-12)
    assert record[f"recall@{K}"] < 0.9   # the small graph misses: the figure is informative
    # The sample is seeded: the same queries again.
    again = measured_width(service, "c", query_ids, queries, K, use_ef=use_ef, ef=32, sample=25, target=None)
    assert again["query_ids"] == record["query_ids"]
    # eval's table prints it, found inside a hybrid's description too.
    line, = recall_lines({"name": "hybrid", "dense": {"search": {"hnsw": {}, "recall": record}}})
    assert f"HNSW recall@{K} against exact search: {record[f'recall@{K}']:.4f} on 25 sampled queries" in line
    assert search_recall({"name": "dense", "search": {"hnsw": {}, "recall": record}}) is record
    backend.close()


def test_target_recall_picks_the_first_width_that_reaches_it(tmp_path):
    backend, service, use_ef, ids, docs, queries = collection(tmp_path, "cosine", HnswSettings(m=4, ef_construct=8), seed=1)
    query_ids = [f"q{i}" for i in range(len(queries))]
    record = measured_width(service, "c", query_ids, queries, K, use_ef=use_ef, ef=128, sample=40, target=0.97)
    rows = [query_ids.index(q) for q in record["query_ids"]]
    chosen = record["hnsw_ef"]
    ladder = [ef for ef in EF_LADDER if ef >= K]   # narrower widths search as ef = K would (Qdrant: max(ef, limit))
    assert [t["hnsw_ef"] for t in record["tried"]] == ladder[:ladder.index(chosen) + 1]
    use_ef(chosen)
    assert independent_recall(backend, ids, docs, queries, rows) >= 0.97
    if chosen != ladder[0]:   # the width before it did not reach the target
        narrower = ladder[ladder.index(chosen) - 1]
        use_ef(narrower)
        assert independent_recall(backend, ids, docs, queries, rows) < 0.97
    backend.close()


def test_an_unreachable_target_is_refused_with_the_best_recall_found(tmp_path):
    backend, service, use_ef, ids, docs, queries = collection(tmp_path, "dot", HnswSettings(m=2, ef_construct=4))
    query_ids = [f"q{i}" for i in range(len(queries))]
    with pytest.raises(TargetRecallNotReached) as refused:
        measured_width(service, "c", query_ids, queries, K, use_ef=use_ef, ef=128, sample=30, target=0.99)
    message = str(refused.value)
    assert message.startswith(f"--target-recall 0.99: HNSW search reached at most recall@{K} 0.")
    assert "on 30 sampled queries (seed 0)" in message and "--search exact" in message
    best = float(message.split(f"recall@{K} ")[1].split()[0])
    assert best < 0.99
    backend.close()


def test_target_recall_without_hnsw_is_refused_by_the_command_line(tmp_path, capsys, beir_dir):
    code = main(["eval", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / "out"), "--retriever", "dense",
                 "--target-recall", "0.99"])
    assert code == 2
    assert "--target-recall" in capsys.readouterr().err and not (tmp_path / "out").exists()
    code = main(["eval", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / "out"), "--retriever", "dense",
                 "--search", "hnsw", "--target-recall", "1.5"])
    assert code == 2 and "within 0..1" in capsys.readouterr().err
