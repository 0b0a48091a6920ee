"""The embedded backend builds Qdrant Edge's HNSW graph only when HNSW search is asked for.

Evidence of the graph is Qdrant Edge's own count of indexed vectors (ShardInfo.indexed_vectors_count,
read by opening the shard folder with qdrant_edge itself), not timing; results are checked against
a numpy brute force over the same vectors.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import qdrant_edge as qe

from irforge.corpus.vectors.edge import EdgeVectorBackend

DIM, N, K = 16, 300, 10


def vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def committed(root, n: int = N) -> EdgeVectorBackend:
    backend = EdgeVectorBackend(root)
    backend.create("col", DIM, "cosine", "fp")
    backend.upsert("col", [f"d{i:03d}" for i in range(n)], vectors(n))
    backend.commit("col")
    return backend


def indexed_vectors(root) -> int:
    """How many points Qdrant Edge itself says are in an HNSW graph (the shard must be closed)."""
    shard = qe.EdgeShard.load(str(root / "col" / "shard"))
    try:
        return shard.info().indexed_vectors_count
    finally:
        shard.close()


def graph_flag(root):
    return json.loads((root / "col" / "meta.json").read_text()).get("graph")


def brute_force(corpus: np.ndarray, queries: np.ndarray, k: int) -> list[list[str]]:
    unit = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    scores = queries / np.linalg.norm(queries, axis=1, keepdims=True) @ unit.T
    return [[f"d{i:03d}" for i in np.argsort(-row, kind="stable")[:k]] for row in scores]


def test_commit_builds_no_graph_and_exact_search_never_builds_one(tmp_path):
    backend = committed(tmp_path)
    queries = vectors(20, seed=1)
    exact = backend.search("col", queries, K)
    backend.close()
    assert [list(ranking) for ranking in exact] == brute_force(vectors(N), queries, K)
    assert (indexed_vectors(tmp_path), graph_flag(tmp_path)) == (0, False)


def test_the_first_hnsw_search_builds_the_graph_and_finds_the_brute_force_neighbours(tmp_path):
    committed(tmp_path).close()
    backend = EdgeVectorBackend(tmp_path)
    assert backend.info("col").config["hnsw_graph"] == "built by the first HNSW search"
    queries = vectors(20, seed=1)
    approximate = backend.search("col", queries, K, exact=False)
    assert backend.info("col").config["hnsw_graph"] == "built"
    backend.close()
    assert (indexed_vectors(tmp_path), graph_flag(tmp_path)) == (N, True)
    # 300 points and ef_search 128: the graph search finds the true neighbours.
    expected = brute_force(vectors(N), queries, K)
    recall = np.mean([len(set(got) & set(want)) / K for got, want in zip(map(list, approximate), expected)])
    assert recall >= 0.99


def test_points_upserted_after_the_graph_was_built_are_found_by_hnsw_search(tmp_path):
    backend = committed(tmp_path)
    backend.search("col", vectors(1), K, exact=False)                       # builds the graph
    replaced = vectors(N, seed=5)
    backend.upsert("col", [f"d{i:03d}" for i in range(N)], replaced)        # same ids: the new vectors count
    backend.commit("col")
    assert graph_flag(tmp_path) is False
    queries = vectors(20, seed=2)
    approximate = backend.search("col", queries, K, exact=False)
    backend.close()
    assert indexed_vectors(tmp_path) == N and graph_flag(tmp_path) is True
    expected = brute_force(replaced, queries, K)
    recall = np.mean([len(set(got) & set(want)) / K for got, want in zip(map(list, approximate), expected)])
    assert recall >= 0.99


def test_a_crash_after_the_build_before_meta_json_is_repaired_by_the_next_hnsw_search(tmp_path):
    committed(tmp_path).close()
    # A real crash: another process builds the graph and dies before meta.json says so.
    script = textwrap.dedent(f"""
        import os, numpy as np
        from irforge.corpus.vectors.edge import EdgeVectorBackend
        backend = EdgeVectorBackend({str(tmp_path)!r})
        backend._write_meta = lambda meta: os._exit(3)
        backend.search("col", np.ones((1, {DIM}), dtype=np.float32), 5, exact=False)
    """)
    assert subprocess.run([sys.executable, "-c", script], timeout=120).returncode == 3
    assert graph_flag(tmp_path) is False and indexed_vectors(tmp_path) == N

    backend = EdgeVectorBackend(tmp_path)
    queries = vectors(20, seed=3)
    approximate = backend.search("col", queries, K, exact=False)
    backend.close()
    assert graph_flag(tmp_path) is True and indexed_vectors(tmp_path) == N
    expected = brute_force(vectors(N), queries, K)
    assert np.mean([len(set(got) & set(want)) / K for got, want in zip(map(list, approximate), expected)]) >= 0.99


def test_a_collection_committed_with_its_graph_before_this_change_is_searched_as_it_is(tmp_path):
    # What commit() wrote before: the graph built (indexing threshold 1 KB) and no "graph" key.
    backend = committed(tmp_path)
    backend.search("col", vectors(1), K, exact=False)
    backend.close()
    meta_path = tmp_path / "col" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["graph"]
    meta_path.write_text(json.dumps(meta))

    backend = EdgeVectorBackend(tmp_path)
    assert backend.info("col").config["hnsw_graph"] == "built"
    queries = vectors(20, seed=4)
    approximate = backend.search("col", queries, K, exact=False)
    backend.close()
    assert json.loads(meta_path.read_text()) == meta   # nothing rebuilt, nothing rewritten
    expected = brute_force(vectors(N), queries, K)
    assert np.mean([len(set(got) & set(want)) / K for got, want in zip(map(list, approximate), expected)]) >= 0.99
