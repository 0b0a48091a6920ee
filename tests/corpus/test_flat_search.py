"""irforge's exact dense search over a flat file (corpus/vectors/flat.py) against numpy computed here
independently: a full argsort of every score with trec_eval's tie rule, on crafted ties that fall
across block boundaries, and float16 against float32."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from irforge.corpus.vectors.edge import EdgeVectorBackend
from irforge.corpus.vectors.flat import FlatVectors, write_flat

DIM = 8


def expected_rankings(docs: np.ndarray, ids: list[str], queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
    """Score every document in float64 and order by score descending, then doc id descending, with
    numpy's own sort (np.argsort of the ids gives their code-point order, trec_eval's strcmp order)."""
    id_rank = np.empty(len(ids), dtype=np.int64)
    id_rank[np.argsort(np.array(ids), kind="stable")] = np.arange(len(ids))
    scores = queries.astype(np.float64) @ docs.astype(np.float64).T
    out = []
    for row in scores:
        order = np.lexsort((-id_rank, -row))[:k]
        out.append([(ids[i], float(row[i])) for i in order])
    return out


def flat(tmp_path, docs, ids, chunk=7, **options) -> FlatVectors:
    write_flat(tmp_path / "flat", [(ids[s:s + chunk], docs[s:s + chunk]) for s in range(0, len(ids), chunk)], docs.shape[1])
    return FlatVectors(tmp_path / "flat", **options)


def tied_corpus(n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """Small-integer vectors (every product exact in float32 and float16), many of them repeated, and ids
    whose order is not the rows' order (mixed lengths, upper/lower case, non-ASCII)."""
    rng = np.random.default_rng(seed)
    distinct = rng.integers(-3, 4, size=(12, DIM)).astype(np.float32)
    docs = distinct[rng.integers(0, len(distinct), n)]
    alphabet = list("aZb9é_-Ωx")
    ids = sorted({"".join(rng.choice(alphabet, size=rng.integers(1, 6))) for _ in range(4 * n)})
    ids = [ids[i] for i in rng.permutation(len(ids))[:n]]
    assert len(ids) == n
    return docs, ids


@pytest.mark.parametrize("block_rows", [1, 5, 64, 10_000])
@pytest.mark.parametrize("k", [1, 10, 37, 500])
def test_top_k_with_ties_equals_a_numpy_argsort(tmp_path, block_rows, k):
    docs, ids = tied_corpus(300, seed=block_rows + k)
    queries = np.random.default_rng(k).integers(-3, 4, size=(9, DIM)).astype(np.float32)
    index = flat(tmp_path, docs, ids, block_bytes=block_rows * 4 * DIM)
    assert index.block_rows == block_rows
    got = [ranking.pairs() for ranking in index.search(queries, k)]
    assert got == expected_rankings(docs, ids, queries, k)
    # Every query's ranking is the same when it is searched alone (the scores do not depend on the batch).
    assert [index.search(queries[i:i + 1], k)[0].pairs() for i in range(3)] == got[:3]


def test_random_vectors_equal_a_float64_brute_force(tmp_path):
    rng = np.random.default_rng(1)
    docs = rng.normal(size=(2_000, 48)).astype(np.float32)
    queries = rng.normal(size=(40, 48)).astype(np.float32)
    ids = [f"doc{i}" for i in range(len(docs))]
    index = flat(tmp_path, docs, ids, chunk=333, block_bytes=300 * 4 * 48)
    got = index.search(queries, 100)
    expected = expected_rankings(docs, ids, queries, 100)
    for ranking, truth in zip(got, expected, strict=True):
        assert list(ranking) == [doc_id for doc_id, _ in truth]
        assert ranking.scores.tolist() == pytest.approx([score for _, score in truth], rel=1e-12)


def test_float16_equals_float32_where_the_vectors_are_exact_in_float16(tmp_path):
    docs, ids = tied_corpus(200, seed=3)
    queries = np.random.default_rng(3).integers(-3, 4, size=(5, DIM)).astype(np.float32)
    half = flat(tmp_path, docs, ids, precision="float16", block_bytes=16 * 4 * DIM)
    assert (tmp_path / "flat" / "vectors.float16").stat().st_size == 200 * DIM * 2
    assert [r.pairs() for r in half.search(queries, 50)] == expected_rankings(docs, ids, queries, 50)


def test_float16_scores_are_the_rounded_vectors_products(tmp_path):
    rng = np.random.default_rng(4)
    docs = rng.normal(size=(500, 32)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.normal(size=(6, 32)).astype(np.float32)
    ids = [f"d{i:03d}" for i in range(500)]
    half = flat(tmp_path, docs, ids, precision="float16").search(queries, 20)
    full = FlatVectors(tmp_path / "flat").search(queries, 20)
    # float16 search is exact search over the float16-rounded vectors (an independent rounding here) ...
    assert [r.pairs() for r in half] == [
        [(d, pytest.approx(s, rel=1e-12)) for d, s in truth]
        for truth in expected_rankings(docs.astype(np.float16).astype(np.float32), ids, queries, 20)]
    # ... whose scores differ from float32's by float16's rounding (unit vectors: < 1e-3 here).
    for h, f in zip(half, full):
        common = set(h) & set(f)
        assert len(common) >= 15
        assert max(abs(h[d] - f[d]) for d in common) < 1e-3


def test_an_empty_collection_and_k_beyond_it(tmp_path):
    empty = flat(tmp_path, np.zeros((0, DIM), np.float32), [])
    assert [len(r) for r in empty.search(np.ones((2, DIM), np.float32), 5)] == [0, 0]
    docs, ids = tied_corpus(6, seed=5)
    (tmp_path / "b").mkdir()
    small = flat(tmp_path / "b", docs, ids)
    queries = np.ones((2, DIM), np.float32)
    assert [r.pairs() for r in small.search(queries, 100)] == expected_rankings(docs, ids, queries, 100)


def test_the_embedded_backend_searches_exactly_through_the_flat_file(tmp_path):
    docs, ids = tied_corpus(120, seed=6)
    queries = np.random.default_rng(6).integers(-3, 4, size=(4, DIM)).astype(np.float32)
    backend = EdgeVectorBackend(tmp_path)
    backend.create("c", DIM, "dot", "fp")
    backend.upsert("c", ids, docs)
    backend.upsert("c", ids[:10], -docs[:10])   # replaced by id: the flat file holds the last vectors
    backend.commit("c")
    stored = docs.copy()
    stored[:10] = -docs[:10]
    assert [r.pairs() for r in backend.search("c", queries, 30)] == expected_rankings(stored, ids, queries, 30)
    # A collection committed before flat files existed gets one on its first exact search.
    backend.close()
    shutil.rmtree(tmp_path / "c" / "flat")
    again = EdgeVectorBackend(tmp_path, exact_precision="float16")
    assert [r.pairs() for r in again.search("c", queries, 30)] == expected_rankings(stored, ids, queries, 30)
    assert (tmp_path / "c" / "flat" / "vectors.float16").is_file()
    again.close()
