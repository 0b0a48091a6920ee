"""Elasticsearch sparse vector backend without a server: the request bodies, the term keys, the
reading of responses, the stored precision the docs promise, and the errors before any server
answers. The server leg is in test_vector_congruence.py (IRFORGE_TEST_ELASTICSEARCH_URL)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from irforge.cli.main import main
from irforge.corpus.errors import BackendUnavailable, CorpusError
from irforge.corpus.vectors import make_vector_backend
from irforge.corpus.vectors.elasticsearch import (
    MIN_WEIGHT, WEIGHT_PRECISION, hits_from_response, index_body, positive_terms, search_body,
    stats_as_document_terms, stored_weights, term_key,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "sparse.md"


def test_the_index_maps_a_sparse_vector_the_sort_key_and_the_term_count():
    meta = {"collection_id": "c1", "kind": "sparse", "fingerprint": "fp", "state": "empty"}
    body = index_body(meta, replicas=1)
    assert body["settings"] == {"number_of_shards": 1, "number_of_replicas": 1, "refresh_interval": "-1"}
    mappings = body["mappings"]
    assert mappings["properties"] == {
        "doc_id": {"type": "keyword"}, "terms": {"type": "integer"}, "vector": {"type": "sparse_vector"}}
    assert (mappings["dynamic"], mappings["_meta"]) == ("strict", meta)
    assert mappings["_source"] == {"excludes": ["vector"]}


def test_term_keys_are_vocabulary_ids_as_decimal_strings_and_only_positive_weights_are_sent():
    assert [term_key(i) for i in (0, 7, np.int32(2161), np.int64(30521))] == ["0", "7", "2161", "30521"]
    terms = positive_terms([3, 17, 40, 41], [0.5, 0.0, 1e-40, 2.25], "vectors", 0)
    assert terms == {"3": 0.5, "41": 2.25}   # zero and subnormal weights add nothing to a dot product
    assert MIN_WEIGHT == np.finfo(np.float32).tiny
    with pytest.raises(ValueError, match="vectors 4 has a negative weight.*strictly positive"):
        positive_terms([1, 2], [0.5, -0.1], "vectors", 4)


def test_the_query_is_an_unpruned_sparse_vector_query_sorted_by_the_tie_rule():
    body = search_body({"3": 0.5, "41": 2.25}, 1000)
    assert body["query"] == {"sparse_vector": {"field": "vector", "query_vector": {"3": 0.5, "41": 2.25}, "prune": False}}
    assert body["size"] == 1000
    assert body["sort"] == [{"_score": "desc"}, {"doc_id": "desc"}]
    assert (body["track_scores"], body["track_total_hits"], body["_source"]) == (True, False, False)


def response(*hits: tuple[str, float]) -> dict:
    return {"hits": {"hits": [{"_id": doc_id, "_score": score, "sort": [score, doc_id]} for doc_id, score in hits]},
            "status": 200}


def test_responses_become_rankings_in_tie_rule_order_cut_to_k():
    hits = hits_from_response(response(("b", 2.5), ("c", 1.25), ("a", 1.25), ("z", 0.5)), 3)
    assert hits.pairs() == [("b", 2.5), ("c", 1.25), ("a", 1.25)]
    # Whatever order the hits arrive in, the tie rule decides (score descending, then doc id descending).
    hits = hits_from_response(response(("a", 1.25), ("z", 0.5), ("c", 1.25)), 10)
    assert list(hits) == ["c", "a", "z"]
    assert len(hits_from_response(response(), 10)) == 0
    failed = {"error": {"type": "search_phase_execution_exception", "reason": "all shards failed"}, "status": 400}
    with pytest.raises(CorpusError, match="search_phase_execution_exception: all shards failed"):
        hits_from_response(failed, 10)


def test_term_statistics_come_from_a_stats_aggregation():
    assert stats_as_document_terms({"count": 3, "min": 2, "max": 9, "avg": 5.0, "sum": 16}) == {
        "documents": 3, "mean": 5.33, "max": 9, "total": 16}
    assert stats_as_document_terms({"count": 0, "min": None, "max": None, "avg": None, "sum": 0.0}) == {
        "documents": 0, "mean": 0.0, "max": 0, "total": 0}


def nine_significant_bits(value: float) -> float:
    """Truncation to 9 significant bits, computed from the value rather than its float32 bits."""
    mantissa, exponent = math.frexp(value)   # value = mantissa * 2**exponent, mantissa in [0.5, 1)
    return math.floor(mantissa * 2 ** 9) / 2 ** 9 * 2.0 ** exponent


def test_stored_weights_keep_nine_significant_bits_truncated_as_documented():
    values = np.random.default_rng(0).uniform(1e-3, 30, size=20_000).astype(np.float32)
    stored = stored_weights(values)
    assert stored.dtype == np.float32
    assert stored.tolist() == [nine_significant_bits(float(v)) for v in values]
    error = (values.astype(np.float64) - stored) / values
    assert (error >= 0).all(), "truncation: a stored weight is never above the weight sent"
    assert error.max() < 2 ** -8 and error.max() > 0.95 * 2 ** -8, "the documented bound, and nearly reached"
    # The worst case: just below 1 + 2^-8 (times a power of two) is stored as 1, an error of nearly 1/257.
    worst = np.float32(1 + 2 ** -8) - np.float32(2 ** -23)
    assert stored_weights(np.array([worst * 4], dtype=np.float32))[0] == 4.0
    # Weights that fit 9 bits (the congruence suite's 1/8 grid, powers of two) are stored exactly.
    grid = np.arange(1, 17, dtype=np.float32) / 8
    assert (stored_weights(grid) == grid).all()
    assert stored_weights(np.array([0.1], dtype=np.float32))[0] == np.float32(409 / 4096)


def test_the_precision_is_stated_where_users_read_it():
    for text in (WEIGHT_PRECISION, DOCS.read_text()):
        assert "9 significant bits" in text and "2^-8" in text and "0.39 %" in text


def test_the_backend_needs_a_url_and_names_an_unreachable_one_without_its_secrets(monkeypatch, unused_port):
    monkeypatch.delenv("IRFORGE_ELASTICSEARCH_URL", raising=False)
    with pytest.raises(ValueError, match="--elasticsearch-url or IRFORGE_ELASTICSEARCH_URL"):
        make_vector_backend("elasticsearch")
    monkeypatch.setenv("IRFORGE_ELASTICSEARCH_API_KEY", "secret-key-do-not-print")
    url = f"http://irforge:pw-do-not-print@127.0.0.1:{unused_port}"
    with pytest.raises(BackendUnavailable, match="cannot reach") as raised:
        make_vector_backend("elasticsearch", elasticsearch_url=url)
    message = str(raised.value)
    assert f"http://***@127.0.0.1:{unused_port}" in message
    assert "do-not-print" not in message


def test_eval_refuses_dense_vectors_on_elasticsearch_before_any_work(beir_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(beir_dir / "scifact"), "--retriever", "dense", "--vector-backend",
                 "elasticsearch", "--out", str(out)])
    assert code == 2
    assert "--vector-backend elasticsearch holds learned sparse vectors only" in capsys.readouterr().err
    assert not out.exists()
