"""Latency where a team's endpoint answers (issue 17, item 4): every request is timed on irforge's
side, network included, so a deliberately slow endpoint on 127.0.0.1 must show at least its delay;
a hybrid reranked through endpoints gets each stage, fusion and the rerank apart, and encoding
throughput no faster than the slow embeddings server can answer."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from irforge.common.progress import no_progress
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.settings import Bm25Settings
from irforge.corpus.vectors import make_vector_backend
from irforge.endpoints.embeddings import EndpointEncoder
from irforge.endpoints.rerank import HttpReranker
from irforge.endpoints.search import GrpcSearchRetriever, HttpSearchRetriever
from irforge.endpoints.spec import EndpointSpec
from irforge.evaluator.core import Evaluator
from irforge.models.cache import EmbeddingCache
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec
from irforge.pipeline.retrievers.bm25 import Bm25Retriever
from irforge.pipeline.retrievers.dense import DenseRetriever
from irforge.pipeline.retrievers.hybrid import FusionSettings, HybridRetriever
from irforge.pipeline.retrievers.rerank import RerankingRetriever

_spec = importlib.util.spec_from_file_location("irforge_latency_slow_embeddings", Path(__file__).with_name("slow_embeddings.py"))
slow_embeddings = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = slow_embeddings
_spec.loader.exec_module(slow_embeddings)

SEARCH_DELAY_S = 0.1
RERANK_DELAY_S = 0.03
EMBED_S_PER_TEXT = 0.002


def spec(kind: str, url: str, **fields) -> EndpointSpec:
    return EndpointSpec.from_dict({"kind": kind, "url": url, "backoff_initial_s": 0.05, "backoff_max_s": 0.5,
                                   "timeout_s": 30, **fields}, source="test spec")


@pytest.fixture(scope="module")
def slow_search(servers, scifact_subset, tmp_path_factory):
    """The team's BM25 over HTTP, answering each request SEARCH_DELAY_S late."""

    class SlowSearch(servers.Bm25Search):
        def hits(self, *args):
            time.sleep(SEARCH_DELAY_S)
            return super().hits(*args)

    search = SlowSearch(scifact_subset, tmp_path_factory.mktemp("slow-team-bm25"))
    server = servers.HttpSearchServer(search)
    yield search, server
    server.stop()
    search.close()


def evaluate(retriever, dataset: Path, out: Path) -> dict:
    EvalJob(EvalJobSpec(dataset=dataset, out_dir=out), retriever, Evaluator(), "in-process").run()
    return json.loads((out / "results.json").read_text())


def test_a_slow_search_endpoint_shows_its_delay_per_query(slow_search, scifact_subset, tmp_path):
    search, server = slow_search
    retriever = HttpSearchRetriever(spec("search-http", server.url, max_concurrency=4))
    try:
        results = evaluate(retriever, scifact_subset, tmp_path)
    finally:
        retriever.close()
    queries = results["counts"]["queries_retrieved"]
    stage = results["latency"]["stages"]["search-http requests"]
    assert len(search.requests) == queries + 1          # the probe reached the server ...
    assert stage["count"] == stage["calls"] == queries  # ... but is no query's latency
    assert stage["unit"] == "query" and stage["basis"].startswith("one request per query")
    delay_ms = SEARCH_DELAY_S * 1000
    assert delay_ms <= stage["p50_ms"] <= stage["p95_ms"] <= stage["p99_ms"] <= stage["max_ms"]
    assert results["latency"]["end_to_end"]["p50_ms"] == stage["p50_ms"]
    # Four requests in flight: throughput over the wall time beats one at a time, and no more than four.
    assert 1.5 / SEARCH_DELAY_S < stage["queries_per_s"] <= 4 / SEARCH_DELAY_S


def test_batch_search_streams_are_split_per_query_and_say_so(servers, scifact_subset, tmp_path, tmp_path_factory):
    team = servers.Bm25Search(scifact_subset, tmp_path_factory.mktemp("team-bm25-grpc"))
    running = servers.start_grpc_search(servers.Bm25RetrieverServicer(team))
    retriever = GrpcSearchRetriever(spec("search-grpc", f"127.0.0.1:{running.port}", batch_size=16, max_concurrency=2))
    try:
        results = evaluate(retriever, scifact_subset, tmp_path)
    finally:
        retriever.close()
        running.stop(grace=0)
        team.close()
    stage = results["latency"]["stages"]["search-grpc requests"]
    assert (stage["count"], stage["calls"]) == (40, 3)  # 16 + 16 + 8 queries
    assert "BatchSearch streams of up to 16 queries" in stage["basis"] and stage["queries_per_s"] > 0


class SlowRerank:
    """A Cohere-style rerank API on 127.0.0.1 that scores by shared words, RERANK_DELAY_S a request."""

    def __init__(self):
        self.documents_per_request: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                time.sleep(RERANK_DELAY_S)
                words = set(body["query"].lower().split())
                results = [{"index": i, "relevance_score": float(len(words & set(d.lower().split())))}
                           for i, d in enumerate(body["documents"])]
                outer.documents_per_request.append(len(body["documents"]))
                answer = json.dumps({"results": results}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_hybrid_reranked_through_endpoints_records_every_stage(scifact_tiny, tmp_path):
    embeddings = slow_embeddings.SlowEmbeddings(EMBED_S_PER_TEXT).start()
    rerank = SlowRerank()
    corpus = CorpusService(make_backend("embedded", index_dir=tmp_path / "index"),
                           make_vector_backend("embedded", vector_dir=tmp_path / "vectors"))
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    encoder = EndpointEncoder(spec("openai-embeddings", f"{embeddings.url}/v1", model="slow", batch_size=32))
    reranker = HttpReranker(spec("rerank-http", rerank.url, model="words", batch_size=10, max_concurrency=4))
    try:
        dense = DenseRetriever(corpus, encoder, cache, no_progress, encoder_location="endpoint")
        hybrid = HybridRetriever(Bm25Retriever(corpus, Bm25Settings(), no_progress), dense, FusionSettings())
        results = evaluate(RerankingRetriever(hybrid, reranker, depth=10, queries_per_call=2), scifact_tiny, tmp_path / "out")
    finally:
        reranker.close()
        encoder.close()
        cache.close()
        corpus.close()
        rerank.stop()
        embeddings.stop()
    latency, counts = results["latency"], results["counts"]
    stages = latency["stages"]
    assert set(stages) == {"openai-embeddings requests (passage texts)", "dense query encoding",
                           "openai-embeddings requests (query texts)", "bm25 search", "dense search", "fusion",
                           "rerank document texts", "rerank", "rerank-http requests"}
    for name in ("dense query encoding", "bm25 search", "dense search", "fusion", "rerank document texts", "rerank"):
        assert stages[name]["unit"] == "query" and stages[name]["count"] == 3, name
    # The rerank endpoint: one request per query (10 documents, batch_size 10), each at least its delay.
    requests = stages["rerank-http requests"]
    assert requests["unit"] == "request" and requests["count"] == len(rerank.documents_per_request) == 3
    assert requests["texts"] == sum(rerank.documents_per_request) == 30
    assert requests["p50_ms"] >= RERANK_DELAY_S * 1000
    assert stages["rerank"]["calls"] == 2  # 2 queries per reranker call: 2 + 1
    assert stages["rerank"]["max_ms"] >= RERANK_DELAY_S * 1000 / 2  # a call waits for its requests
    # end to end adds each query's per-query stages (request stages are inside them, not beside).
    per_query_means = sum(s["mean_ms"] for s in stages.values() if s["unit"] == "query")
    assert latency["end_to_end"]["mean_ms"] == pytest.approx(per_query_means, abs=0.01)
    # Encoding throughput: only what the encoder encoded, no faster than 1 / EMBED_S_PER_TEXT.
    encoding = latency["encoding"]
    assert encoding["documents"]["texts"] == counts["documents_encoded"] > 20
    assert encoding["queries"]["texts"] == counts["queries_encoded"] == 3
    for what in ("documents", "queries"):
        assert 0 < encoding[what]["texts_per_s"] <= 1 / EMBED_S_PER_TEXT
    passages = stages["openai-embeddings requests (passage texts)"]
    assert passages["texts"] == encoding["documents"]["texts"]
    assert passages["p50_ms"] >= 8 * EMBED_S_PER_TEXT * 1000  # at least 8 texts a request (the first is 8)
