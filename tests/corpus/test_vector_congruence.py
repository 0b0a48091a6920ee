"""Every VectorBackend operation, run on every backend available, with the same expectations.

The embedded leg (Qdrant Edge) always runs. The Qdrant leg runs when IRFORGE_TEST_QDRANT_URL
points at a server (none can be installed on the development machines; an API key, if the server
needs one, comes from IRFORGE_TEST_QDRANT_API_KEY) and is skipped, with the reason printed,
otherwise. Exact search is checked against numpy brute force; HNSW against exact search.
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from irforge.corpus.errors import CorpusConflict, CorpusNotFound, CorpusNotReady
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.vectors.base import DimensionMismatch, HnswSettings, VectorBackend
from irforge.ranking import Ranking, ranked

QDRANT_URL = os.environ.get("IRFORGE_TEST_QDRANT_URL")
DIM = 16


@pytest.fixture(params=["embedded", "qdrant"])
def backend(request, tmp_path) -> VectorBackend:
    if request.param == "embedded":
        from irforge.corpus.vectors.edge import EdgeVectorBackend

        instance = EdgeVectorBackend(tmp_path / "vectors")
    else:
        if not QDRANT_URL:
            pytest.skip("IRFORGE_TEST_QDRANT_URL is not set: no Qdrant server to test against")
        from irforge.corpus.vectors.qdrant import QdrantServerBackend

        instance = QdrantServerBackend(
            QDRANT_URL, prefix=f"irforge-test-{uuid.uuid4().hex[:8]}-",
            api_key_env="IRFORGE_TEST_QDRANT_API_KEY" if os.environ.get("IRFORGE_TEST_QDRANT_API_KEY") else None,
        )
    created: list[str] = []
    original_create = instance.create

    def tracking_create(collection_id, *args, **kwargs):
        info = original_create(collection_id, *args, **kwargs)
        created.append(collection_id)
        return info

    instance.create = tracking_create
    yield instance
    for collection_id in created:
        instance.delete(collection_id)
    instance.close()


def pairs(rankings: list[Ranking]) -> list[list[tuple[str, float]]]:
    """Rankings as comparable lists, order included (a Mapping's == ignores order)."""
    return [ranking.pairs() for ranking in rankings]


def random_vectors(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)


def clustered_vectors(n: int, dim: int, centres: int, seed: int) -> np.ndarray:
    """Unit vectors around a few centres: closer to real embeddings than isotropic noise."""
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=(centres, dim))
    x = centre[rng.integers(0, centres, n)] + 0.5 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def brute_force(docs: np.ndarray, doc_ids: list[str], queries: np.ndarray, k: int, distance: str):
    """numpy top-k with irforge's tie rule: [(doc_id, score), ...] per query."""
    d, q = docs.astype(np.float64), queries.astype(np.float64)
    if distance == "cosine":
        d = d / np.linalg.norm(d, axis=1, keepdims=True)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ d.T
    return [ranked(dict(zip(doc_ids, row.tolist())))[:k] for row in scores]


def make_ready(backend, collection_id, doc_ids, vectors, distance="cosine", batch=None):
    backend.create(collection_id, vectors.shape[1], distance, "fp-1")
    batch = batch or len(doc_ids)
    for start in range(0, len(doc_ids), batch):
        backend.upsert(collection_id, doc_ids[start:start + batch], vectors[start:start + batch])
    return backend.commit(collection_id)


def test_create_is_idempotent_and_detects_conflicts(backend):
    info = backend.create("v1", DIM, "cosine", "fp-1")
    assert (info.collection_id, info.dimension, info.distance, info.fingerprint) == ("v1", DIM, "cosine", "fp-1")
    assert (info.state, info.point_count, info.backend) == (CorpusState.EMPTY, 0, backend.name)
    assert info.config["hnsw"] == HnswSettings().as_dict()
    assert backend.create("v1", DIM, "cosine", "fp-1") == info
    assert backend.info("v1") == info
    with pytest.raises(DimensionMismatch):
        backend.create("v1", DIM * 2, "cosine", "fp-1")
    with pytest.raises(CorpusConflict):
        backend.create("v1", DIM, "cosine", "fp-2")
    with pytest.raises(CorpusConflict):
        backend.create("v1", DIM, "dot", "fp-1")
    with pytest.raises(CorpusConflict):
        backend.create("v1", DIM, "cosine", "fp-1", HnswSettings(m=32))


def test_create_rejects_bad_arguments(backend):
    for bad in [("has space", DIM, "cosine"), ("../up", DIM, "cosine"), ("v2", 0, "cosine"), ("v2", DIM, "euclid")]:
        with pytest.raises(ValueError):
            backend.create(*bad, "fp-1")
    assert backend.info("v2") is None


def test_missing_and_deleted_collections(backend):
    assert backend.info("absent") is None
    assert backend.delete("absent") is False
    with pytest.raises(CorpusNotFound):
        backend.upsert("absent", ["a"], random_vectors(1))
    with pytest.raises(CorpusNotFound):
        backend.commit("absent")
    with pytest.raises(CorpusNotFound):
        backend.search("absent", random_vectors(1), 10)
    backend.create("v3", DIM, "cosine", "fp-1")
    assert backend.delete("v3") is True
    assert backend.info("v3") is None
    assert backend.delete("v3") is False


def test_upserted_vectors_are_searchable_only_after_commit(backend):
    vectors = random_vectors(20)
    ids = [f"d{i:02d}" for i in range(20)]
    backend.create("v4", DIM, "cosine", "fp-1")
    with pytest.raises(CorpusNotReady):
        backend.search("v4", vectors[:1], 5)
    assert backend.upsert("v4", ids, vectors) == 20
    assert backend.info("v4").state == CorpusState.EMPTY
    with pytest.raises(CorpusNotReady):
        backend.search("v4", vectors[:1], 5)
    info = backend.commit("v4")
    assert (info.state, info.point_count) == (CorpusState.READY, 20)
    assert backend.info("v4") == info
    assert backend.search("v4", vectors[:1], 5)[0].doc_ids[0] == "d00"
    # A further upsert makes the collection uncommitted again until the next commit.
    backend.upsert("v4", ["d99"], random_vectors(1, seed=9))
    with pytest.raises(CorpusNotReady):
        backend.search("v4", vectors[:1], 5)
    assert backend.commit("v4").point_count == 21


def test_empty_committed_collection_returns_no_hits(backend):
    backend.create("v5", DIM, "cosine", "fp-1")
    assert backend.commit("v5").point_count == 0
    assert [len(ranking) for ranking in backend.search("v5", random_vectors(2), 5)] == [0, 0]


def test_upsert_is_idempotent_and_replaces_by_id(backend):
    ids = [f"d{i:02d}" for i in range(30)]
    first, second = random_vectors(30, seed=1), random_vectors(30, seed=2)
    make_ready(backend, "v6", ids, first)
    before = pairs(backend.search("v6", first[:3], 5))
    make_ready(backend, "v6", ids, first)
    assert backend.info("v6").point_count == 30
    assert pairs(backend.search("v6", first[:3], 5)) == before
    make_ready(backend, "v6", ids, second)
    assert backend.info("v6").point_count == 30
    hits = backend.search("v6", second[:3], 1)
    assert [ranking.doc_ids[0] for ranking in hits] == ids[:3]
    assert [ranking.scores[0] for ranking in hits] == pytest.approx([1.0] * 3, abs=1e-5)


@pytest.mark.parametrize("distance", ["cosine", "dot"])
def test_exact_search_equals_numpy_brute_force(backend, distance):
    docs, queries = random_vectors(500, seed=3), random_vectors(25, seed=4)
    ids = [f"doc-{i:04d}" for i in range(500)]
    make_ready(backend, f"v7-{distance}", ids, docs, distance=distance, batch=128)
    results = backend.search(f"v7-{distance}", queries, 10, exact=True)
    expected = brute_force(docs, ids, queries, 10, distance)
    assert len(results) == 25
    for hits, truth in zip(results, expected, strict=True):
        assert isinstance(hits, Ranking) and hits.scores.dtype == np.float64
        assert list(hits) == [doc_id for doc_id, _ in truth]
        assert hits.scores.tolist() == pytest.approx([score for _, score in truth], abs=1e-5)
    # The same answer one query at a time.
    assert pairs([backend.search(f"v7-{distance}", queries[i:i + 1], 10)[0] for i in range(3)]) == pairs(results[:3])


def test_ties_are_broken_by_doc_id_descending(backend):
    twin = random_vectors(1, seed=5)
    others = random_vectors(10, seed=6)
    vectors = np.vstack([twin, twin, others])
    ids = ["a", "b"] + [f"o{i}" for i in range(10)]
    make_ready(backend, "v8", ids, vectors)
    for exact in (True, False):
        hits = backend.search("v8", twin, 2, exact=exact)[0]
        assert list(hits) == ["b", "a"]
        assert hits.scores[0] == hits.scores[1]
    # A tie straddling the cut at k keeps the higher doc id.
    assert list(backend.search("v8", twin, 1)[0]) == ["b"]


def test_k_larger_than_the_collection_returns_everything(backend):
    vectors = random_vectors(7)
    make_ready(backend, "v9", [f"d{i}" for i in range(7)], vectors)
    hits = backend.search("v9", vectors[:1], 100)[0]
    assert len(hits) == 7 and set(hits) == {f"d{i}" for i in range(7)}
    assert hits.pairs() == ranked(dict(hits.pairs()))


def test_bad_input_is_rejected(backend):
    make_ready(backend, "v10", ["a", "b"], random_vectors(2))
    with pytest.raises(DimensionMismatch):
        backend.upsert("v10", ["c"], random_vectors(1, dim=DIM + 1))
    with pytest.raises(DimensionMismatch):
        backend.search("v10", random_vectors(1, dim=DIM - 1), 5)
    nan = random_vectors(1)
    nan[0, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        backend.upsert("v10", ["c"], nan)
    with pytest.raises(ValueError, match="NaN"):
        backend.upsert("v10", ["c"], np.full((1, DIM), np.inf, dtype=np.float32))
    with pytest.raises(ValueError):
        backend.search("v10", nan, 5)
    with pytest.raises(ValueError):
        backend.upsert("v10", ["c", "d"], random_vectors(3))
    with pytest.raises(ValueError, match="duplicate"):
        backend.upsert("v10", ["c", "c"], random_vectors(2))
    with pytest.raises(ValueError):
        backend.upsert("v10", ["has space"], random_vectors(1))
    for k in (0, -1):
        with pytest.raises(ValueError):
            backend.search("v10", random_vectors(1), k)
    # Nothing above reached the collection: it is still committed, with its two points.
    info = backend.info("v10")
    assert (info.state, info.point_count) == (CorpusState.READY, 2)


def test_concurrent_searches_agree(backend):
    vectors = random_vectors(200, seed=10)
    make_ready(backend, "v12", [f"d{i:03d}" for i in range(200)], vectors)
    expected = backend.search("v12", vectors[:20], 10)
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: backend.search("v12", vectors[:20], 10), range(8)))
    assert all(answer == expected for answer in answers)


def test_hnsw_search_recalls_exact_search(backend):
    points = clustered_vectors(2100, 64, centres=40, seed=7)  # queries from the documents' clusters
    docs, queries = points[:2000], points[2000:]
    ids = [f"doc-{i:05d}" for i in range(2000)]
    make_ready(backend, "v11", ids, docs, batch=500)
    exact = backend.search("v11", queries, 10, exact=True)
    approximate = backend.search("v11", queries, 10, exact=False)
    recall = np.mean([
        len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact, strict=True)
    ])
    assert recall >= 0.9
    for hits in approximate:
        assert len(hits) == 10
        assert hits.pairs() == ranked(dict(hits.pairs()))


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_an_unreachable_qdrant_server_is_named_without_its_key(unused_port, monkeypatch):
    """No server needed: nothing listens on the port, so the backend must say so clearly."""
    from irforge.corpus.errors import BackendUnavailable
    from irforge.corpus.vectors import make_vector_backend

    url = f"http://127.0.0.1:{unused_port}"
    monkeypatch.setenv("IRFORGE_QDRANT_API_KEY", "secret-key-do-not-print")
    with pytest.raises(BackendUnavailable) as raised:
        make_vector_backend("qdrant", qdrant_url=url)
    assert url in str(raised.value) and "secret-key-do-not-print" not in str(raised.value)


# -- sparse collections (learned sparse retrieval) ----------------------------------------------
# Four legs: Qdrant Edge (embedded), qdrant-client's local mode (the server backend's own code,
# no server: runs everywhere), a Qdrant server (IRFORGE_TEST_QDRANT_URL) and an Elasticsearch
# server (IRFORGE_TEST_ELASTICSEARCH_URL; sparse vectors only), the server legs skipped when their
# variable is unset. Each is checked against numpy's exact dot product, so all give the same
# rankings. Elasticsearch stores weights with 9 significant bits: on weights that fit them (the
# 1/8 grid) it is exact too; on any others it equals numpy over `stored_weights`, at most 2^-8 below
# the exact dot product (test_sparse_scores_are_the_dot_product_of_the_stored_weights).

VOCABULARY = 200
ES_URL = os.environ.get("IRFORGE_TEST_ELASTICSEARCH_URL")


def elasticsearch_test_backend():
    """The Elasticsearch sparse backend on the test server, in indexes of its own (credentials, if
    the server needs them, from the same IRFORGE_ELASTICSEARCH_* variables as in production)."""
    if not ES_URL:
        pytest.skip("IRFORGE_TEST_ELASTICSEARCH_URL is not set: no Elasticsearch server to test against")
    from irforge.corpus.lexical import elasticsearch_auth_from_env
    from irforge.corpus.vectors.elasticsearch import ElasticsearchSparseBackend

    return ElasticsearchSparseBackend(ES_URL, index_prefix=f"irforge-test-{uuid.uuid4().hex[:8]}-",
                                      **elasticsearch_auth_from_env())


@pytest.fixture(params=["embedded", "local", "qdrant", "elasticsearch"])
def sparse_backend(request, tmp_path) -> VectorBackend:
    from irforge.corpus.vectors.qdrant import QdrantServerBackend

    if request.param == "embedded":
        from irforge.corpus.vectors.edge import EdgeVectorBackend

        instance = EdgeVectorBackend(tmp_path / "vectors")
    elif request.param == "local":
        instance = QdrantServerBackend(":memory:")
    elif request.param == "elasticsearch":
        instance = elasticsearch_test_backend()
    else:
        if not QDRANT_URL:
            pytest.skip("IRFORGE_TEST_QDRANT_URL is not set: no Qdrant server to test against")
        instance = QdrantServerBackend(
            QDRANT_URL, prefix=f"irforge-test-{uuid.uuid4().hex[:8]}-",
            api_key_env="IRFORGE_TEST_QDRANT_API_KEY" if os.environ.get("IRFORGE_TEST_QDRANT_API_KEY") else None,
        )
    yield instance
    for collection_id in ("sparse", "dense"):
        instance.delete(collection_id)
    instance.close()


def random_sparse(n: int, seed: int, terms: tuple[int, int] = (1, 12)):
    from irforge.corpus.vectors.base import SparseVector

    rng = np.random.default_rng(seed)
    vectors = []
    for _ in range(n):
        count = int(rng.integers(*terms))
        indices = np.sort(rng.choice(VOCABULARY, size=count, replace=False)).astype(np.int32)
        # Weights on a 1/8 grid: dot products are exact in float32, so ties are real ties.
        vectors.append(SparseVector(indices, (rng.integers(1, 17, size=count) / 8).astype(np.float32)))
    return vectors


def sparse_brute_force(docs, doc_ids, queries, k):
    dense_docs = np.zeros((len(docs), VOCABULARY), dtype=np.float64)
    for row, vector in enumerate(docs):
        dense_docs[row, vector.indices] = vector.values
    answers = []
    for query in queries:
        scores = dense_docs[:, query.indices] @ query.values.astype(np.float64)
        matched = {doc_id: float(score) for doc_id, score in zip(doc_ids, scores) if score > 0}
        answers.append([(doc_id, score) for doc_id, score in ranked(matched)[:k]])
    return answers


def test_sparse_exact_search_equals_brute_force_with_irforge_tie_rule(sparse_backend):
    docs = random_sparse(300, seed=1)
    doc_ids = [f"d{i:03d}" for i in range(len(docs))]
    queries = random_sparse(25, seed=2, terms=(1, 4))
    info = sparse_backend.create_sparse("sparse", VOCABULARY, "fp")
    assert info.state == CorpusState.EMPTY and info.config["kind"] == "sparse"
    sparse_backend.upsert_sparse("sparse", doc_ids[:150], docs[:150])
    with pytest.raises(CorpusNotReady):
        sparse_backend.search_sparse("sparse", queries, 5)
    sparse_backend.upsert_sparse("sparse", doc_ids[150:], docs[150:])
    info = sparse_backend.commit("sparse")
    assert info.point_count == 300
    assert info.config["document_terms"] == {
        "documents": 300, "mean": round(sum(v.terms for v in docs) / 300, 2), "max": max(v.terms for v in docs),
        "total": sum(v.terms for v in docs)}
    expected = sparse_brute_force(docs, doc_ids, queries, 10)
    got = sparse_backend.search_sparse("sparse", queries, 10)
    assert any(len({s for _, s in answer}) < len(answer) for answer in expected), "the data must hold ties"
    for hits, want in zip(got, expected, strict=True):
        assert list(hits) == [doc_id for doc_id, _ in want]
        assert hits.scores.tolist() == pytest.approx([score for _, score in want], rel=1e-6)


def test_sparse_collections_are_checked(sparse_backend):
    from irforge.corpus.vectors.base import SparseVector

    sparse_backend.create_sparse("sparse", VOCABULARY, "fp")
    assert sparse_backend.create_sparse("sparse", VOCABULARY, "fp").dimension == VOCABULARY  # idempotent
    with pytest.raises(CorpusConflict):
        sparse_backend.create_sparse("sparse", VOCABULARY + 1, "fp")
    with pytest.raises(CorpusConflict):
        sparse_backend.create_sparse("sparse", VOCABULARY, "another model")
    outside = SparseVector(np.array([VOCABULARY], dtype=np.int32), np.array([1.0], dtype=np.float32))
    with pytest.raises(DimensionMismatch):
        sparse_backend.upsert_sparse("sparse", ["a"], [outside])
    repeated = SparseVector(np.array([3, 3], dtype=np.int32), np.array([1.0, 2.0], dtype=np.float32))
    with pytest.raises(ValueError, match="repeats"):
        sparse_backend.upsert_sparse("sparse", ["a"], [repeated])
    with pytest.raises(ValueError, match="NaN"):
        sparse_backend.upsert_sparse("sparse", ["a"], [SparseVector(np.array([3]), np.array([np.nan]))])
    with pytest.raises(ValueError, match="whitespace"):
        sparse_backend.upsert_sparse("sparse", ["a b"], random_sparse(1, seed=3))
    # A document changed by a second upsert is replaced, not added.
    sparse_backend.upsert_sparse("sparse", ["a", "b"], random_sparse(2, seed=4))
    sparse_backend.upsert_sparse("sparse", ["a"], random_sparse(1, seed=5))
    assert sparse_backend.commit("sparse").point_count == 2
    with pytest.raises(ValueError, match="sparse vectors, not dense"):
        sparse_backend.search("sparse", np.ones((1, DIM), dtype=np.float32), 3)
    if sparse_backend.name == "elasticsearch":   # sparse vectors only: a dense collection is refused by name
        with pytest.raises(ValueError, match="sparse vectors only"):
            sparse_backend.create("dense", DIM, "dot", "fp")
        assert sparse_backend.info("dense") is None
    else:
        sparse_backend.create("dense", DIM, "dot", "fp")
        with pytest.raises(ValueError, match="dense vectors, not sparse"):
            sparse_backend.upsert_sparse("dense", ["a"], random_sparse(1, seed=6))
    with pytest.raises(CorpusNotFound):
        sparse_backend.search_sparse("missing", random_sparse(1, seed=7), 3)


def test_sparse_rankings_agree_between_qdrant_edge_and_qdrant_client(tmp_path):
    """The congruence itself: the embedded engine and qdrant-client give the same run."""
    from irforge.corpus.vectors.edge import EdgeVectorBackend
    from irforge.corpus.vectors.qdrant import QdrantServerBackend

    docs, queries = random_sparse(200, seed=8), random_sparse(20, seed=9, terms=(1, 5))
    doc_ids = [f"doc-{i}" for i in range(len(docs))]
    answers = []
    for backend in (EdgeVectorBackend(tmp_path / "edge"), QdrantServerBackend(":memory:")):
        backend.create_sparse("sparse", VOCABULARY, "fp")
        backend.upsert_sparse("sparse", doc_ids, docs)
        backend.commit("sparse")
        answers.append([[(doc_id, round(score, 5)) for doc_id, score in ranking.pairs()]
                        for ranking in backend.search_sparse("sparse", queries, 50)])
        backend.close()
    assert answers[0] == answers[1]
    assert sum(len(hits) for hits in answers[0]) > 100


def float_sparse(n: int, seed: int, terms: tuple[int, int] = (1, 12)):
    """Weights as an encoder gives them (any float32 in [0.05, 3)), not on a grid."""
    from irforge.corpus.vectors.base import SparseVector

    rng = np.random.default_rng(seed)
    vectors = []
    for _ in range(n):
        count = int(rng.integers(*terms))
        indices = np.sort(rng.choice(VOCABULARY, size=count, replace=False)).astype(np.int32)
        vectors.append(SparseVector(indices, rng.uniform(0.05, 3.0, size=count).astype(np.float32)))
    return vectors


def test_sparse_scores_are_the_dot_product_of_the_stored_weights(sparse_backend):
    """Qdrant stores float32 weights: its scores are numpy's exact dot product. Elasticsearch keeps 9
    significant bits of each document weight (irforge.corpus.vectors.elasticsearch): its scores are
    numpy's dot product over those stored weights, each product rounded to float32 as Lucene does,
    and the ranking is that dot product's, under the tie rule; against the float32 weights sent,
    a score is at most 2^-8 below and never above (beyond float32 rounding)."""
    docs, queries = float_sparse(300, seed=11), float_sparse(25, seed=12, terms=(1, 6))
    doc_ids = [f"d{i:03d}" for i in range(len(docs))]
    sparse_backend.create_sparse("sparse", VOCABULARY, "fp")
    sparse_backend.upsert_sparse("sparse", doc_ids, docs)
    sparse_backend.commit("sparse")
    got = sparse_backend.search_sparse("sparse", queries, 20)
    exact = sparse_brute_force(docs, doc_ids, queries, 300)
    if sparse_backend.name == "elasticsearch":
        from irforge.corpus.vectors.base import SparseVector
        from irforge.corpus.vectors.elasticsearch import stored_weights

        stored = [SparseVector(v.indices, stored_weights(v.values)) for v in docs]
        expected = lucene_brute_force(stored, doc_ids, queries, 20)
        assert expected != [answer[:20] for answer in exact], "the data must show the stored precision"
    else:
        expected = [answer[:20] for answer in exact]
    for hits, want, truth in zip(got, expected, exact, strict=True):
        assert list(hits) == [doc_id for doc_id, _ in want]
        assert hits.scores.tolist() == pytest.approx([score for _, score in want], rel=1e-6)
        true_score = dict(truth)
        for doc_id, score in hits.pairs():   # the documented bound, against the exact dot product of what was sent
            assert true_score[doc_id] * (1 - 2 ** -8) <= score <= true_score[doc_id] * (1 + 2 ** -22)


def lucene_brute_force(docs, doc_ids, queries, k):
    """Elasticsearch's arithmetic in numpy: float32 products, summed in float64, returned as float32."""
    answers = []
    for query in queries:
        weights = dict(zip(query.indices.tolist(), query.values.tolist()))
        scores = {}
        for doc_id, vector in zip(doc_ids, docs):
            products = [np.float32(weights[i]) * value for i, value in zip(vector.indices.tolist(), vector.values) if i in weights]
            if products:
                scores[doc_id] = float(np.float32(sum(float(p) for p in products)))
        answers.append(ranked(scores)[:k])
    return answers
