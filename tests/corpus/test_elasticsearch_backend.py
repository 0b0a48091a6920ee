"""Elasticsearch backend: pure request bodies, an unreachable server, and a live leg.

The live leg runs against a real server only when IRFORGE_TEST_ELASTICSEARCH_URL is set
(e.g. http://127.0.0.1:9200); nothing here fakes a server or mocks the client.
"""

from __future__ import annotations

import itertools
import os
import socket
import uuid
from pathlib import Path

import pytest

from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.lexical.elasticsearch import ElasticsearchBackend, elasticsearch_config, index_body, search_body
from irforge.corpus.lexical.elasticsearch_connection import CLIENT_VERSION, version_mismatch
from irforge.corpus.errors import BackendUnavailable, CorpusConflict, CorpusNotFound, CorpusNotReady
from irforge.corpus.settings import Bm25Settings
from irforge.data import Document, Query, iter_corpus

SCIFACT_CORPUS = Path("/work/shared/data/beir/scifact/corpus.jsonl")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# -- no server ------------------------------------------------------------------------------

def test_unreachable_server_is_backend_unavailable_naming_the_url():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(BackendUnavailable, match="cannot reach") as caught:
        ElasticsearchBackend(url, max_retries=0)
    assert url in str(caught.value)


def test_password_in_the_url_never_reaches_the_message():
    port = _free_port()
    with pytest.raises(BackendUnavailable) as caught:
        ElasticsearchBackend(f"http://irforge:s3cret-pw@127.0.0.1:{port}", max_retries=0)
    assert "s3cret-pw" not in str(caught.value) and "irforge:" not in str(caught.value)
    assert f"http://***@127.0.0.1:{port}" in str(caught.value)   # common/redact.py: credentials masked, host kept


def test_missing_api_key_variable_is_named(monkeypatch):
    monkeypatch.delenv("IRFORGE_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(BackendUnavailable, match="IRFORGE_TEST_NO_SUCH_KEY"):
        ElasticsearchBackend(f"http://127.0.0.1:{_free_port()}", api_key_env="IRFORGE_TEST_NO_SUCH_KEY")


def test_bad_index_prefix_is_rejected_before_connecting():
    with pytest.raises(ValueError, match="lowercase"):
        ElasticsearchBackend(f"http://127.0.0.1:{_free_port()}", index_prefix="IRForge-")


def test_index_body_carries_bm25_settings_and_the_english_analyzer():
    meta = {"corpus_id": "scifact", "fingerprint": "abc", "state": "empty"}
    body = index_body(Bm25Settings(k1=1.2, b=0.75), meta)
    settings, mappings = body["settings"], body["mappings"]
    assert settings["number_of_shards"] == 1
    assert settings["number_of_replicas"] == 0
    assert settings["similarity"]["irforge_bm25"] == {"type": "BM25", "k1": 1.2, "b": 0.75}
    for field in ("title", "text"):
        assert mappings["properties"][field] == {"type": "text", "analyzer": "english", "similarity": "irforge_bm25"}
    assert mappings["properties"]["doc_id"] == {"type": "keyword"}
    assert mappings["_meta"] == meta
    assert index_body(Bm25Settings(), meta, replicas=1)["settings"]["number_of_replicas"] == 1


def test_search_body_is_beirs_multi_match_with_trec_tie_order():
    body = search_body("vitamin D deficiency", 100)
    assert body["query"] == {"multi_match": {
        "query": "vitamin D deficiency", "type": "best_fields", "fields": ["title", "text"], "tie_breaker": 0.5,
    }}
    assert body["size"] == 100
    assert body["sort"] == [{"_score": "desc"}, {"doc_id": "desc"}]
    assert body["track_scores"] is True


def test_version_mismatch_names_both_versions_and_the_fix():
    assert version_mismatch("9.1.3", "9.5.1") is None
    message = version_mismatch("8.14.0", "9.5.1")
    assert "8.14.0" in message and "9.5.1" in message
    assert "elasticsearch>=8,<9" in message


def test_config_records_the_whole_retrieval_setup():
    config = elasticsearch_config(Bm25Settings(k1=0.9, b=0.4), "9.1.0")
    assert config["implementation"] == "elasticsearch"
    assert (config["server_version"], config["client_version"]) == ("9.1.0", CLIENT_VERSION)
    assert (config["k1"], config["b"]) == (0.9, 0.4)
    assert config["analyzer"].startswith("english")
    assert config["query"] == "multi_match best_fields tie_breaker 0.5"


# -- a real server ---------------------------------------------------------------------------

@pytest.fixture
def live_backend():
    url = os.environ.get("IRFORGE_TEST_ELASTICSEARCH_URL")
    if not url:
        pytest.skip("IRFORGE_TEST_ELASTICSEARCH_URL is not set: no Elasticsearch server to test against")
    backend = ElasticsearchBackend(url, index_prefix="irforge-test-")
    yield backend
    backend.close()


def test_create_ingest_search_delete_on_scifact(live_backend):
    backend = live_backend
    corpus_id = f"SciFact-{uuid.uuid4().hex[:8]}"
    documents = list(itertools.islice(iter_corpus(SCIFACT_CORPUS), 50))
    settings = Bm25Settings()
    try:
        info = backend.create(corpus_id, "fp-1", settings)
        assert (info.state, info.document_count, info.backend) == (CorpusState.EMPTY, 0, "elasticsearch")
        assert backend.create(corpus_id, "fp-1", settings) == info
        with pytest.raises(CorpusConflict):
            backend.create(corpus_id, "fp-2", settings)
        with pytest.raises(CorpusNotReady):
            backend.search(corpus_id, [Query("q", "cancer")], 10)

        bad = Document("bad id", "title", "text")
        progress = list(backend.ingest(corpus_id, [documents[:30], documents[30:] + [bad]]))
        assert [p.committed for p in progress] == [False, False, True]
        assert (progress[-1].received, progress[-1].indexed, progress[-1].failed) == (51, 50, 1)
        assert [e.doc_id for e in progress[1].errors] == ["bad id"]
        info = backend.info(corpus_id)
        assert (info.state, info.document_count) == (CorpusState.READY, 50)
        assert info.config["server_version"] == backend.server_version

        # Document id is the key: the same documents again change nothing.
        list(backend.ingest(corpus_id, [documents]))
        assert backend.info(corpus_id).document_count == 50

        target = next(d for d in documents if d.title)
        queries = [Query("by-title", target.title), Query("stopwords-only", "the of and"), Query("empty", "")]
        results = backend.search(corpus_id, queries, 10)
        assert len(results) == 3
        assert results[0].doc_ids[0] == target.doc_id
        assert 0 < len(results[0]) <= 10
        order = [(-score, doc_id) for doc_id, score in results[0].pairs()]
        assert all(a[0] < b[0] or (a[0] == b[0] and a[1] > b[1]) for a, b in zip(order, order[1:]))
        assert len(results[1]) == 0 and len(results[2]) == 0
        with pytest.raises(ValueError):
            backend.search(corpus_id, queries, 0)
        with pytest.raises(ValueError, match="max_result_window"):
            backend.search(corpus_id, queries, 10_001)
    finally:
        deleted = backend.delete(corpus_id)
    assert deleted is True
    assert backend.delete(corpus_id) is False
    assert backend.info(corpus_id) is None
    with pytest.raises(CorpusNotFound):
        backend.search(corpus_id, [Query("q", "cancer")], 10)
    with pytest.raises(CorpusNotFound):
        list(backend.ingest(corpus_id, [documents]))
